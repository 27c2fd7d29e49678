//! Walking the files and matching a compiled pattern in each, in parallel, honouring
//! `.gitignore`. A file is parsed only when it contains every literal the pattern needs.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ast_grep_core::AstGrep;
use ast_grep_core::language::Language as _;
use ast_grep_core::replacer::TemplateFix;
use ast_grep_language::SupportLang;
use memchr::memmem;

use crate::compile::Compiled;

/// How a search runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchOptions {
    /// Worker threads for the walk; 0 picks one per core.
    pub threads: usize,
    /// Keep at most this many matches (the first in path order); the rest are counted, not
    /// collected. `None` keeps every one.
    pub keep: Option<usize>,
}

/// One match in one file.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// Shared by every match of the file.
    pub(crate) path: Arc<Path>,
    /// Byte range in the file.
    pub(crate) range: std::ops::Range<usize>,
    /// 1-based line and column (in characters) of the start, and the end line.
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) end_line: usize,
    pub(crate) text: String,
    /// The text of the line the match starts on.
    pub(crate) line_text: String,
    /// `$NAME` captures, and `$$$NAME` captures as the text they span.
    pub(crate) captures: Vec<(String, String)>,
}

/// The result of walking: what matched, and how much was looked at.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// The matches kept (all, or the first `keep` in path order).
    pub(crate) found: Vec<Found>,
    /// Every match, kept or not.
    pub(crate) total: usize,
    /// Files with at least one match.
    pub(crate) files_with: usize,
    /// Files of the language under the path.
    pub(crate) files: usize,
    /// Files that were parsed (the rest lacked a literal the pattern needs).
    pub(crate) parsed: usize,
    /// Files skipped because they are not UTF-8 text.
    pub(crate) unreadable: Vec<PathBuf>,
    /// For edits: each file's original text and its rewritten text.
    pub(crate) rewrites: Vec<Rewrite>,
}

/// One file's staged rewrite.
#[derive(Debug, Clone)]
pub(crate) struct Rewrite {
    pub(crate) path: PathBuf,
    pub(crate) original: String,
    pub(crate) rewritten: String,
    pub(crate) replacements: usize,
    /// Matches inside another match that were left alone (their text was replaced whole).
    pub(crate) nested: usize,
}

/// Each file's matches, by path.
type Batches = std::collections::BTreeMap<Arc<Path>, Vec<Found>>;

/// Walks `path` (a file or a folder) and matches `compiled` in every file of its language;
/// with `rewrite`, also computes each file's rewritten text.
pub(crate) fn walk(
    path: &Path,
    compiled: &Compiled,
    rewrite: Option<&TemplateFix>,
    options: SearchOptions,
) -> Walked {
    let state = Mutex::new(Walked::default());
    // Each file's matches come out in position order; files are kept in path order, so no
    // sort ever runs over every match, and with `keep` the files past the first `keep`
    // matches are dropped as soon as they are certain not to be shown.
    let batches: Mutex<(Batches, usize)> = Mutex::new((Batches::new(), 0));
    let finders: Vec<memmem::Finder<'_>> = compiled
        .literals
        .iter()
        .map(|l| memmem::Finder::new(l.as_bytes()))
        .collect();
    let visit = |file: &Path| {
        let outcome = visit_file(file, compiled, &finders, rewrite);
        let Ok(mut state) = state.lock() else { return };
        state.files += 1;
        match outcome {
            Visit::Skipped => {}
            Visit::Unreadable => state.unreadable.push(file.to_path_buf()),
            Visit::Parsed { found, rewrite } => {
                state.parsed += 1;
                state.rewrites.extend(rewrite);
                state.total += found.len();
                state.files_with += usize::from(!found.is_empty());
                drop(state);
                if let Some(first) = found.first()
                    && let Ok(mut batches) = batches.lock()
                {
                    let (kept, count) = &mut *batches;
                    *count += found.len();
                    kept.insert(Arc::clone(&first.path), found);
                    if let Some(keep) = options.keep {
                        while let Some(entry) = kept.last_entry()
                            && *count - entry.get().len() >= keep
                        {
                            *count -= entry.remove().len();
                        }
                    }
                }
            }
        }
    };
    if path.is_file() {
        visit(path);
    } else {
        let lang = compiled.lang;
        ignore::WalkBuilder::new(path)
            .require_git(false)
            .threads(options.threads)
            .build_parallel()
            .run(|| {
                Box::new(|entry| {
                    if let Ok(entry) = entry
                        && entry.file_type().is_some_and(|t| t.is_file())
                        && SupportLang::from_path(entry.path()) == Some(lang)
                    {
                        visit(entry.path());
                    }
                    ignore::WalkState::Continue
                })
            });
    }
    let mut walked = state
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (batches, _) = batches
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    walked.found = batches.into_values().flatten().collect();
    if let Some(keep) = options.keep {
        walked.found.truncate(keep);
    }
    walked.rewrites.sort_by(|a, b| a.path.cmp(&b.path));
    walked.unreadable.sort();
    walked
}

enum Visit {
    Skipped,
    Unreadable,
    Parsed {
        found: Vec<Found>,
        rewrite: Option<Rewrite>,
    },
}

fn visit_file(
    file: &Path,
    compiled: &Compiled,
    finders: &[memmem::Finder<'_>],
    rewrite: Option<&TemplateFix>,
) -> Visit {
    let Ok(bytes) = tools_core::read_regular(file) else {
        return Visit::Unreadable;
    };
    // The literal check comes before parsing: most files of a tree lack some literal of a
    // selective pattern, and parsing is most of the cost.
    if !finders.iter().all(|finder| finder.find(&bytes).is_some()) {
        return Visit::Skipped;
    }
    let Ok(source) = String::from_utf8(bytes) else {
        return Visit::Unreadable;
    };
    let Ok(root) = AstGrep::try_new(&source, compiled.lang) else {
        return Visit::Unreadable;
    };
    let top = root.root();
    let path: Arc<Path> = Arc::from(file);
    let keys: Vec<(String, String)> = compiled
        .vars
        .iter()
        .map(|name| (format!("${name}"), format!("$$${name}")))
        .collect();
    let mut found = Vec::new();
    let mut edits = Vec::new();
    for matched in top.find_all(&compiled.pattern) {
        let range = matched.range();
        let env = matched.get_env();
        let mut captures = Vec::new();
        for (name, (single, multi)) in compiled.vars.iter().zip(&keys) {
            if let Some(node) = env.get_match(name) {
                captures.push((single.clone(), node.text().into_owned()));
            } else {
                let nodes = env.get_multiple_matches(name);
                let text = match (nodes.first(), nodes.last()) {
                    (Some(first), Some(last)) => {
                        source[first.range().start..last.range().end].to_owned()
                    }
                    _ => String::new(),
                };
                captures.push((multi.clone(), text));
            }
        }
        // Rows come from the tree, not from counting newlines from the top of the file for
        // every match (which is quadratic in files with many matches).
        let (row, byte_column) = matched.start_pos().byte_point();
        let line_start = range.start - byte_column;
        let line_end = source[range.start..]
            .find('\n')
            .map_or(source.len(), |i| range.start + i);
        let end_row = match matched.end_pos().byte_point() {
            // A match ending at a line's start ends on the line before.
            (end_row, 0) if end_row > row => end_row - 1,
            (end_row, _) => end_row,
        };
        found.push(Found {
            path: Arc::clone(&path),
            range: range.clone(),
            line: row + 1,
            column: source[line_start..range.start].chars().count() + 1,
            end_line: end_row + 1,
            text: matched.text().into_owned(),
            line_text: source[line_start..line_end]
                .trim_end_matches('\r')
                .to_owned(),
            captures,
        });
        if let Some(template) = rewrite {
            let edit = matched.replace_by(template);
            edits.push((edit.position, edit.deleted_length, edit.inserted_text));
        }
    }
    let rewrite = match rewrite {
        Some(_) if !edits.is_empty() => Some(apply_edits(file, &source, edits)),
        _ => None,
    };
    Visit::Parsed { found, rewrite }
}

/// Applies non-overlapping edits in order; an edit inside one already applied is left out
/// (the outer match's text, including the inner one, was replaced whole).
fn apply_edits(file: &Path, source: &str, mut edits: Vec<(usize, usize, Vec<u8>)>) -> Rewrite {
    edits.sort_by_key(|(position, _, _)| *position);
    let mut out = String::with_capacity(source.len());
    let mut cursor = 0;
    let mut replacements = 0;
    let mut nested = 0;
    for (position, deleted, inserted) in edits {
        if position < cursor {
            nested += 1;
            continue;
        }
        out.push_str(&source[cursor..position]);
        out.push_str(&String::from_utf8_lossy(&inserted));
        cursor = position + deleted;
        replacements += 1;
    }
    out.push_str(&source[cursor..]);
    Rewrite {
        path: file.to_path_buf(),
        original: source.to_owned(),
        rewritten: out,
        replacements,
        nested,
    }
}

/// The metavariables a rewrite template uses.
pub(crate) fn template_vars(template: &TemplateFix) -> Vec<String> {
    let mut vars: Vec<String> = template
        .used_vars()
        .into_iter()
        .map(str::to_owned)
        .collect();
    vars.sort();
    vars
}

/// A template for `rewrite` in `lang`.
pub(crate) fn template(rewrite: &str, lang: SupportLang) -> TemplateFix {
    match TemplateFix::try_new(rewrite, &lang) {
        Ok(template) => template,
        // The error type has no variants: building a template cannot fail.
        Err(never) => match never {},
    }
}

/// Where one match is: the file and the byte range in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// The file.
    pub path: PathBuf,
    /// Byte offset of the match's start.
    pub start: usize,
    /// Byte offset just past the match's end.
    pub end: usize,
}

/// Structural search as a library call: every match of `pattern` in `language` under `path`,
/// sorted by path and position. Errors are the messages `ast_grep` would show.
pub fn find_spans(
    pattern: &str,
    language: &str,
    path: &Path,
    options: SearchOptions,
) -> Result<Vec<Span>, String> {
    let lang = language
        .parse::<SupportLang>()
        .map_err(|_| format!("unknown language `{language}`"))?;
    let compiled = crate::compile::compile(pattern, lang, None).map_err(|e| e.to_string())?;
    let walked = walk(path, &compiled, None, options);
    Ok(walked
        .found
        .into_iter()
        .map(|f| Span {
            path: f.path.to_path_buf(),
            start: f.range.start,
            end: f.range.end,
        })
        .collect())
}
