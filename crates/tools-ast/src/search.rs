//! Walking the files and matching a compiled pattern in each, in parallel, honouring
//! `.gitignore`. A file is parsed only when it contains every literal the pattern needs, and
//! through the run's [`SyntaxIndex`]: a file it holds unchanged is neither read nor parsed
//! again, and only its nodes of the kinds the pattern can match are tried.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ast_grep_core::language::Language as _;
use ast_grep_core::matcher::MatcherExt as _;
use ast_grep_core::replacer::TemplateFix;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{Matcher as _, NodeMatch};
use ast_grep_language::SupportLang;
use memchr::memmem;
use tools_core::{Line, ToolError};

use crate::compile::Compiled;
use crate::found::Found;
use crate::index::{Admit, Read, Stamp, SyntaxIndex};
use crate::parse::{Parsed, Piece};

/// How a search runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchOptions {
    /// Worker threads for the walk; 0 picks one per core.
    pub threads: usize,
    /// Keep at most this many matches (the first in path order); the rest are counted, not
    /// collected. `None` keeps every one.
    pub keep: Option<usize>,
}

/// The result of walking: what matched, and how much was looked at.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// The matches kept (all, or the first `keep` in path order), file by file; each file's
    /// are shared with the syntax index's memo of them. See [`Walked::found`].
    pub(crate) batches: Vec<Arc<[Found]>>,
    keep: Option<usize>,
    /// Every match, kept or not.
    pub(crate) total: usize,
    /// Files with at least one match.
    pub(crate) files_with: usize,
    /// Files of the language under the path.
    pub(crate) files: usize,
    /// Files whose tree was searched (the rest lacked a literal the pattern needs).
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
type Batches = std::collections::BTreeMap<Arc<Path>, Arc<[Found]>>;

/// Walks `path` (a file or a folder) and matches `compiled` in every file of its language;
/// with `rewrite`, also computes each file's rewritten text.
pub(crate) fn walk(
    path: &Path,
    compiled: &Compiled,
    rewrite: Option<&TemplateFix>,
    options: SearchOptions,
    index: &SyntaxIndex,
) -> Walked {
    let state = Mutex::new(Walked::default());
    // Each file's matches come out in position order; files are kept in path order, so no
    // sort ever runs over every match, and with `keep` the files past the first `keep`
    // matches are dropped as soon as they are certain not to be shown.
    let batches: Mutex<(Batches, usize)> = Mutex::new((Batches::new(), 0));
    let finders: Vec<Literal<'_>> = compiled.literals.iter().map(|l| Literal::new(l)).collect();
    index.begin();
    let visit = |file: &Path| {
        let outcome = visit_file(file, compiled, &finders, rewrite, index);
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
    walked.batches = batches.into_values().collect();
    walked.keep = options.keep;
    walked.rewrites.sort_by(|a, b| a.path.cmp(&b.path));
    walked.unreadable.sort();
    walked
}

impl Walked {
    /// The matches kept, in path and position order.
    pub(crate) fn found(&self) -> impl Iterator<Item = &Found> {
        self.batches
            .iter()
            .flat_map(|batch| batch.iter())
            .take(self.keep.unwrap_or(usize::MAX))
    }
}

enum Visit {
    Skipped,
    Unreadable,
    Parsed {
        found: Arc<[Found]>,
        rewrite: Option<Rewrite>,
    },
}

fn visit_file(
    file: &Path,
    compiled: &Compiled,
    finders: &[Literal<'_>],
    rewrite: Option<&TemplateFix>,
    index: &SyntaxIndex,
) -> Visit {
    let held = match index.enabled() {
        true => std::fs::metadata(file)
            .ok()
            .and_then(|meta| index.get(file, Stamp::of(&meta))),
        false => None,
    };
    let entry = match held {
        Some(entry) => entry,
        None => match index.read(file, Admit::Evicting) {
            Read::Text { entry, .. } => entry,
            // Not text: a file that cannot match anyway is only skipped.
            Read::NotText(bytes) if !has_literals(finders, &bytes) => return Visit::Skipped,
            Read::NotText(_) | Read::Unreadable => return Visit::Unreadable,
        },
    };
    // The literal check comes before parsing: most files of a tree lack some literal of a
    // selective pattern, and parsing is most of the cost.
    if !has_literals(finders, entry.text().as_bytes()) {
        return Visit::Skipped;
    }
    let Some(entry) = index.parse(file, &entry, compiled.lang) else {
        return Visit::Unreadable;
    };
    let Some(parsed) = entry.parsed(compiled.lang) else {
        return Visit::Unreadable;
    };
    // A file parsed in pieces has no node for its root: a pattern that may match one is
    // searched in the whole tree, parsed for this search only.
    if parsed.may_match_root(compiled) {
        return match Parsed::whole(parsed.text(), compiled.lang) {
            Some(whole) => matches_in(file, &whole, compiled, rewrite),
            None => Visit::Unreadable,
        };
    }
    if rewrite.is_some() {
        return matches_in(file, parsed, compiled, rewrite);
    }
    // The same search again on an unchanged file: its matches as they were.
    if let Some(found) = entry.remembered(&compiled.key) {
        return Visit::Parsed {
            found,
            rewrite: None,
        };
    }
    let visit = matches_in(file, parsed, compiled, None);
    if let Visit::Parsed { found, .. } = &visit {
        index.remember(file, &entry, &compiled.key, Arc::clone(found));
    }
    visit
}

/// One text every match must contain, as a whole token: an occurrence inside a longer word
/// (`unwrap` in `unwrap_or`) cannot be the pattern's leaf, since a lexer never ends a word
/// token where another word character follows.
pub(crate) struct Literal<'a> {
    finder: memmem::Finder<'a>,
    /// Whether it starts with a letter or `_` (then a letter or `_` may not come before it).
    word_start: bool,
    /// Whether it ends with a word character (then none may come after it).
    word_end: bool,
}

impl<'a> Literal<'a> {
    fn new(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        Literal {
            finder: memmem::Finder::new(bytes),
            word_start: bytes
                .first()
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_'),
            word_end: bytes.last().is_some_and(|b| is_word(*b)),
        }
    }

    /// Whether `bytes` hold it as a token. Only ASCII letters, digits and `_` count as
    /// word characters, and a digit before it does not (`1if` is a number and `if` in
    /// Python): every doubt keeps the file.
    fn is_in(&self, bytes: &[u8]) -> bool {
        let len = self.finder.needle().len();
        self.finder.find_iter(bytes).any(|at| {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(at + len).copied();
            let glued_before =
                self.word_start && before.is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
            let glued_after = self.word_end && after.is_some_and(is_word);
            !glued_before && !glued_after
        })
    }
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn has_literals(finders: &[Literal<'_>], bytes: &[u8]) -> bool {
    finders.iter().all(|literal| literal.is_in(bytes))
}

/// Every match of the pattern in a piece of a parsed file, in pre-order as `find_all` yields
/// them. The first search of a piece walks every node (as `find_all` does) and records each
/// one's kind on the way; later ones try only the nodes of a kind the pattern can match,
/// found through that kind index.
fn candidates<'r>(
    piece: &'r Piece,
    compiled: &Compiled,
) -> Vec<NodeMatch<'r, StrDoc<SupportLang>>> {
    let root = &piece.root;
    let kinds = compiled.pattern.potential_kinds();
    let wanted = |kind: u16| kinds.as_ref().is_none_or(|k| k.contains(usize::from(kind)));
    let mut found = Vec::new();
    let Some(index) = piece.kinds.get() else {
        piece.walk_indexing(wanted, |node| {
            if let Some(matched) = compiled.pattern.match_node(node) {
                found.push(matched);
            }
        });
        return found;
    };
    let mut cursor = root.root().get_inner_node().walk();
    if kinds.is_none() {
        return root.root().find_all(&compiled.pattern).collect();
    }
    for target in index.positions(wanted) {
        let target = target as usize;
        // Forward through the tree: into a subtree holding the target, past one that does
        // not. The positions ascend, so the cursor never goes back.
        loop {
            let at = cursor.descendant_index();
            if at == target {
                break;
            }
            if target < at + cursor.node().descendant_count() {
                cursor.goto_first_child();
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    return found;
                }
            }
        }
        if let Some(matched) = compiled.pattern.match_node(root.adopt(cursor.node())) {
            found.push(matched);
        }
    }
    found
}

fn matches_in(
    file: &Path,
    parsed: &Parsed,
    compiled: &Compiled,
    rewrite: Option<&TemplateFix>,
) -> Visit {
    let path: Arc<Path> = Arc::from(file);
    let keys: Vec<(String, String)> = compiled
        .vars
        .iter()
        .map(|name| (format!("${name}"), format!("$$${name}")))
        .collect();
    let in_piece = |piece: &Piece| matches_in_piece(&path, piece, compiled, &keys, rewrite);
    // A file cut in pieces is large: its pieces are searched on every core.
    let per_piece = match &parsed.pieces[..] {
        [piece] => vec![in_piece(piece)],
        pieces => crate::parse::on_every_core(pieces, in_piece),
    };
    let mut found = Vec::new();
    let mut edits = Vec::new();
    for (piece_found, piece_edits) in per_piece {
        found.extend(piece_found);
        edits.extend(piece_edits);
    }
    let rewrite = match rewrite {
        Some(_) if !edits.is_empty() => Some(apply_edits(file, parsed.text(), edits)),
        _ => None,
    };
    Visit::Parsed {
        found: found.into(),
        rewrite,
    }
}

/// A replacement: where it starts, how many bytes it deletes, what it inserts.
type Edit = (usize, usize, Vec<u8>);

/// The matches in one piece of a file, in the file's positions, and with `rewrite` the
/// edits that make it.
fn matches_in_piece(
    path: &Arc<Path>,
    piece: &Piece,
    compiled: &Compiled,
    keys: &[(String, String)],
    rewrite: Option<&TemplateFix>,
) -> (Vec<Found>, Vec<Edit>) {
    // Positions in a piece are the piece's; the file's are `start` bytes and `row` rows
    // further on. A piece begins at a line's start, so columns are the same.
    let (source, start, row_start) = (piece.root.get_text(), piece.start, piece.row);
    let mut found = Vec::new();
    let mut edits = Vec::new();
    for matched in candidates(piece, compiled) {
        let range = matched.range();
        let env = matched.get_env();
        let mut captures = Vec::new();
        for (name, (single, multi)) in compiled.vars.iter().zip(keys) {
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
        // Rows come from the tree, not from counting newlines from the top of the file
        // for every match (which is quadratic in files with many matches).
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
            path: Arc::clone(path),
            range: range.start + start..range.end + start,
            line: Line::from_index(row_start + row),
            column: source[line_start..range.start].chars().count() + 1,
            end_line: Line::from_index(row_start + end_row),
            text: matched.text().into_owned(),
            line_text: source[line_start..line_end]
                .trim_end_matches('\r')
                .to_owned(),
            captures,
        });
        if let Some(template) = rewrite {
            let edit = matched.replace_by(template);
            edits.push((
                edit.position + start,
                edit.deleted_length,
                edit.inserted_text,
            ));
        }
    }
    (found, edits)
}

/// Applies non-overlapping edits in order; an edit inside one already applied is left out
/// (the outer match's text, including the inner one, was replaced whole).
fn apply_edits(file: &Path, source: &str, mut edits: Vec<Edit>) -> Rewrite {
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
/// sorted by path and position, through `index` (one made with [`SyntaxIndex::new`]`(0)`
/// holds nothing: every file is read and parsed). Errors are what `ast_grep` would answer.
pub fn find_spans(
    pattern: &str,
    language: &str,
    path: &Path,
    options: SearchOptions,
    index: &SyntaxIndex,
) -> Result<Vec<Span>, ToolError> {
    let lang = language
        .parse::<SupportLang>()
        .map_err(|_| ToolError::failed(format!("unknown language `{language}`")))?;
    let compiled = crate::compile::compile(pattern, lang, None)?;
    let walked = walk(path, &compiled, None, options, index);
    Ok(walked
        .found()
        .map(|f| Span {
            path: f.path.to_path_buf(),
            start: f.range.start,
            end: f.range.end,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::Literal;

    #[test]
    fn a_literal_counts_only_as_a_whole_token_and_every_doubt_keeps_the_file() {
        let unwrap = Literal::new("unwrap");
        assert!(!unwrap.is_in(b"x.unwrap_or(1); y.try_unwrap(); unwrapped"));
        assert!(unwrap.is_in(b"x.unwrap_or(1); y.unwrap()"));
        assert!(unwrap.is_in(b"unwrap"));
        // A digit before a word can end a number token (`1if` is `1` `if` in Python), and
        // anything outside ASCII word characters may delimit a token: the file is kept.
        assert!(Literal::new("if").is_in(b"x = 1if y else 2"));
        assert!(Literal::new("foo").is_in("$foo é".as_bytes()));
        assert!(Literal::new("foo").is_in("éfoo".as_bytes()));
        // Ends that are not word characters are not checked.
        assert!(Literal::new("+=").is_in(b"a+=1"));
        assert!(Literal::new("\"a\"").is_in(b"x\"a\"y"));
    }
}
