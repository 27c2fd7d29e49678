//! `ast_grep`: find code by its shape (AST-1, AST-2, AST-3, AST-4).

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, Line, Place, Tier, Tool, ToolError, ToolOutput};

use crate::compile::{Target, target};
use crate::found::Found;
use crate::index::SyntaxIndex;
use crate::language::id;
use crate::search::{SearchOptions, walk};

/// Find code by its syntactic shape, not its text.
///
/// The pattern is code in the target language with metavariables: `$NAME` matches one
/// node, `$$$NAME` a sequence of siblings (arguments, statements), `$_` any node uncaptured;
/// a metavariable used twice matches the same code both times. `dispose($X)` finds the call
/// however it is spaced or wrapped, never inside strings or comments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AstGrepInput {
    /// The pattern, e.g. `if ($X != null) $X.dispose()`.
    pub pattern: String,
    /// A file or folder (default: the workspace).
    #[serde(default)]
    pub path: Option<String>,
    /// The grammar, e.g. `python`, `rust`, `tsx`; needed for a folder.
    #[serde(default)]
    pub language: Option<String>,
    /// Matches to list: default 50, at most 1000; all are counted.
    #[serde(default)]
    pub max_results: Option<usize>,
    /// Force how the pattern parses, e.g. "class member" for a method.
    #[serde(default)]
    pub context: Option<String>,
}

/// One match; `path`, `line` and `text` are the line it starts on, as printed after
/// `path:LINE`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AstMatch {
    /// Where the match starts: `path`, `line` and that line's `text`, as printed.
    #[serde(flatten)]
    pub place: Place,
    /// 1-based column (in characters) of the match's start.
    #[schemars(range(min = 1))]
    pub column: usize,
    /// 1-based line of the match's end.
    pub end_line: Line,
    /// The matched code, whole.
    pub matched: String,
    /// Metavariable captures: `$X` → its code; `$$$ARGS` → the code the sequence spans.
    pub captures: BTreeMap<String, String>,
}

/// What was searched and found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AstGrepOutput {
    /// The language the pattern and files were parsed as.
    pub language: String,
    /// The context the pattern compiled in.
    pub context: String,
    /// The node kind of the pattern's root.
    pub node_kind: String,
    /// Every match found, before `max_results`.
    pub total: usize,
    /// Whether `matches` lists fewer than `total` (cut at `max_results`, or where the text
    /// would pass the output limit).
    pub truncated: bool,
    /// Files of the language that were searched.
    pub files_searched: usize,
    /// The matches, sorted by path and position.
    pub matches: Vec<AstMatch>,
    /// What was cut or skipped, and how to see the rest, as the text says it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The `ast_grep` tool.
pub struct AstGrep {
    pub(crate) options: SearchOptions,
    pub(crate) index: Arc<SyntaxIndex>,
}

const DEFAULT_MAX_RESULTS: usize = 50;

/// The most matches one answer lists, whatever `max_results` asks for.
const MAX_RESULTS: usize = 1000;

/// How much text the listed matches may take: the dispatcher cuts a result at 100 KiB (its
/// default), so rows past this would be built only to be cut.
const TEXT_BUDGET: usize = 96 * 1024;

impl Tool for AstGrep {
    type Input = AstGrepInput;
    type Output = AstGrepOutput;
    const NAME: &'static str = "ast_grep";
    const TITLE: &'static str = "Find code by its shape";
    const TIER: Tier = Tier::Read;

    async fn call(
        &self,
        context: CallContext,
        input: AstGrepInput,
    ) -> Result<ToolOutput<AstGrepOutput>, ToolError> {
        let workspace = context.workspace();
        let Target {
            path,
            shown,
            compiled,
        } = target(
            workspace,
            input.path.as_deref(),
            input.language.as_deref(),
            &input.pattern,
            input.context.as_deref(),
        )?;
        let lang = compiled.lang;
        let asked = input.max_results.unwrap_or(DEFAULT_MAX_RESULTS);
        if asked == 0 {
            return Err(ToolError::failed(
                "`max_results` is 0: ask for at least one match",
            ));
        }
        let max = asked.min(MAX_RESULTS);
        let options = tools_ast_options(self.options, max);
        self.index.attach(workspace);
        let index = Arc::clone(&self.index);
        let (compiled, walked) = tokio::task::spawn_blocking(move || {
            let walked = walk(&path, &compiled, None, options, &index);
            (compiled, walked)
        })
        .await
        .map_err(|e| ToolError::Internal {
            tool: Self::NAME.into(),
            message: e.to_string(),
        })?;

        let total = walked.total;
        let files_with = walked.files_with;
        let described = format!(
            "{}, compiled in the {} context: {}",
            id(lang),
            compiled.context,
            compiled.kind
        );
        let pattern = input.pattern.trim();
        let mut text = match total {
            0 => format!(
                "No matches for `{pattern}` ({described}) in {} {} file{} under `{shown}`.",
                walked.files,
                id(lang),
                if walked.files == 1 { "" } else { "s" }
            ),
            _ => format!(
                "{total} match{} in {} file{} for `{pattern}` ({described}; {} {} file{} searched).",
                if total == 1 { "" } else { "es" },
                files_with,
                if files_with == 1 { "" } else { "s" },
                walked.files,
                id(lang),
                if walked.files == 1 { "" } else { "s" }
            ),
        };
        // Each note is said in the text and kept in the structure, which is all that some
        // clients show the model.
        let mut notes = Vec::new();
        if asked > MAX_RESULTS {
            notes.push(format!(
                "`max_results` is at most {MAX_RESULTS}; listing up to {MAX_RESULTS}."
            ));
        }
        if total > max {
            notes.push(format!(
                "Showing the first {max} of {total}, sorted by path and line; narrow `path` or raise `max_results` (up to {MAX_RESULTS}) for the rest."
            ));
        }
        if !walked.unreadable.is_empty() {
            notes.push(format!(
                "{} file(s) were skipped as unreadable or not UTF-8.",
                walked.unreadable.len()
            ));
        }
        for note in &notes {
            text.push_str(&format!("\n{note}"));
        }
        let mut matches: Vec<AstMatch> = Vec::new();
        let mut stopped = false;
        for found in walked.found().take(max) {
            if text.len() > TEXT_BUDGET {
                stopped = true;
                break;
            }
            let m = to_match(workspace, found);
            text.push_str(&format!("\n{}", m.place));
            if m.end_line > m.place.line {
                text.push_str(&format!("  (to line {})", m.end_line));
            }
            if !m.captures.is_empty() {
                let captures: Vec<String> = m
                    .captures
                    .iter()
                    .map(|(k, v)| format!("{k} = {}", one_line(v)))
                    .collect();
                text.push_str(&format!("\n    {}", captures.join(", ")));
            }
            matches.push(m);
        }
        if stopped {
            let note = format!(
                "Stopped listing after {} matches: more would pass the output limit. All \
                 {total} were counted; narrow `path` or the pattern, or lower `max_results`.",
                matches.len()
            );
            text.push_str(&format!("\n{note}"));
            notes.push(note);
        }
        let output = AstGrepOutput {
            language: id(lang).to_owned(),
            context: compiled.context.to_owned(),
            node_kind: compiled.kind.clone(),
            total,
            truncated: matches.len() < total,
            files_searched: walked.files,
            matches,
            notes,
        };
        Ok(ToolOutput::new(text, output))
    }
}

/// The search options of one call: the tool's own, keeping only the matches it can list.
fn tools_ast_options(options: SearchOptions, max: usize) -> SearchOptions {
    SearchOptions {
        keep: Some(max),
        ..options
    }
}

fn to_match(workspace: &tools_core::Workspace, found: &Found) -> AstMatch {
    AstMatch {
        place: Place::new(workspace, &found.path, found.line, &found.line_text),
        column: found.column,
        end_line: found.end_line,
        matched: found.text.clone(),
        captures: found.captures.iter().cloned().collect(),
    }
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    cap(&joined, 120)
}

fn cap(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
