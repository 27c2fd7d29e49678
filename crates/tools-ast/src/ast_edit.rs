//! `ast_edit`: stage a structural rewrite; nothing is written until `resolve` (AST-6).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, ContentHash, Tier, Tool, ToolError, ToolOutput};

use crate::compile::{Target, target};
use crate::index::SyntaxIndex;
use crate::language::id;
use crate::search::{SearchOptions, template, template_vars, walk};
use crate::staging::{EditStore, StagedFile};

/// Stage a structural rewrite: each match of `pattern` (as in `ast_grep`) becomes `rewrite`
/// with the captures substituted (`dispose($X)` → `$X.dispose()`).
///
/// Nothing is written: the result shows the diff and an `edit_id` for `resolve` (`accept`
/// writes every file at once, `discard` drops it).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AstEditInput {
    /// The pattern, e.g. `dispose($X)`.
    pub pattern: String,
    /// The replacement, with the pattern's metavariables, e.g. `$X.dispose()`.
    pub rewrite: String,
    /// A file or folder (default: the workspace).
    #[serde(default)]
    pub path: Option<String>,
    /// As in `ast_grep`.
    #[serde(default)]
    pub language: Option<String>,
    /// As in `ast_grep`.
    #[serde(default)]
    pub context: Option<String>,
}

/// One file of the staged edit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EditedFile {
    /// The file, relative to the workspace root.
    pub path: String,
    /// Replacements in it.
    pub replacements: usize,
}

/// The staged edit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AstEditOutput {
    /// Pass this to `resolve`.
    pub edit_id: String,
    /// Replacements across all files.
    pub replacements: usize,
    /// The files that would change.
    pub files: Vec<EditedFile>,
    /// Matches inside another match, left alone because the outer one replaces them whole.
    pub nested_skipped: usize,
    /// The unified diff of the change (possibly cut; see `diff_truncated`).
    pub diff: String,
    /// Whether `diff` was cut.
    pub diff_truncated: bool,
    /// What to do next, and what was left alone, as the text says it.
    pub notes: Vec<String>,
}

/// The `ast_edit` tool.
pub struct AstEdit {
    pub(crate) store: Arc<EditStore>,
    pub(crate) options: SearchOptions,
    pub(crate) index: Arc<SyntaxIndex>,
}

/// Diffs longer than this many lines are cut in the result (the edit itself is whole).
const MAX_DIFF_LINES: usize = 400;

impl Tool for AstEdit {
    type Input = AstEditInput;
    type Output = AstEditOutput;
    const NAME: &'static str = "ast_edit";
    const TITLE: &'static str = "Stage a structural rewrite";
    const TIER: Tier = Tier::Write;

    async fn call(
        &self,
        context: CallContext,
        input: AstEditInput,
    ) -> Result<ToolOutput<AstEditOutput>, ToolError> {
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
        let fix = template(&input.rewrite, lang);
        let undefined: Vec<String> = template_vars(&fix)
            .into_iter()
            .filter(|v| !compiled.vars.contains(v))
            .collect();
        if !undefined.is_empty() {
            let defined: Vec<String> = compiled.vars.iter().map(|v| format!("${v}")).collect();
            let undefined: Vec<String> = undefined.iter().map(|v| format!("${v}")).collect();
            return Err(ToolError::failed(format!(
                "`rewrite` uses {}, which the pattern does not define ({}); use only the pattern's metavariables",
                undefined.join(", "),
                match defined.is_empty() {
                    true => "it defines none".to_owned(),
                    false => format!("it defines {}", defined.join(", ")),
                }
            )));
        }
        let options = self.options;
        self.index.attach(workspace);
        let index = Arc::clone(&self.index);
        let walked = tokio::task::spawn_blocking(move || {
            walk(&path, &compiled, Some(&fix), options, &index)
        })
        .await
        .map_err(|e| ToolError::Internal {
            tool: Self::NAME.into(),
            message: e.to_string(),
        })?;
        let rewrites: Vec<_> = walked
            .rewrites
            .into_iter()
            .filter(|r| r.rewritten != r.original)
            .collect();
        if rewrites.is_empty() {
            return Err(ToolError::failed(format!(
                "nothing to stage: `{}` matched {} time(s) in {} {} file(s) under {shown}, and no file would change",
                input.pattern.trim(),
                walked.total,
                walked.files,
                id(lang)
            )));
        }
        let mut diff = String::new();
        let mut files = Vec::new();
        let mut staged = Vec::new();
        let mut replacements = 0;
        let mut nested_skipped = 0;
        for rewrite in rewrites {
            let relative = workspace.display(&rewrite.path);
            let unified = similar::TextDiff::from_lines(&rewrite.original, &rewrite.rewritten)
                .unified_diff()
                .context_radius(2)
                .header(&format!("a/{relative}"), &format!("b/{relative}"))
                .to_string();
            diff.push_str(&unified);
            replacements += rewrite.replacements;
            nested_skipped += rewrite.nested;
            files.push(EditedFile {
                path: relative,
                replacements: rewrite.replacements,
            });
            staged.push(StagedFile {
                hash: ContentHash::of(rewrite.original.as_bytes()),
                path: rewrite.path,
                rewritten: rewrite.rewritten,
                replacements: rewrite.replacements,
            });
        }
        let edit_id = self.store.stage(staged);
        let total_lines = diff.lines().count();
        let diff_truncated = total_lines > MAX_DIFF_LINES;
        let shown_diff = match diff_truncated {
            true => {
                diff.lines()
                    .take(MAX_DIFF_LINES)
                    .collect::<Vec<_>>()
                    .join("\n")
                    + "\n"
            }
            false => diff.clone(),
        };
        // Each sentence of guidance is said in the text and kept in the structure, which is
        // all that some clients show the model.
        let mut notes = vec![format!(
            "(proposed) {replacements} replacement{} in {} file{} — nothing is written yet: call resolve with \
             edit_id \"{edit_id}\" and action \"accept\" to write every file at once, or \"discard\" to drop it.",
            if replacements == 1 { "" } else { "s" },
            files.len(),
            if files.len() == 1 { "" } else { "s" },
        )];
        if nested_skipped > 0 {
            notes.push(format!(
                "{nested_skipped} match(es) inside another match were left alone: the outer replacement covers them; run ast_edit again after accepting to rewrite them too."
            ));
        }
        let mut text = notes.join("\n");
        text.push_str("\n\n");
        text.push_str(&shown_diff);
        if diff_truncated {
            let cut = format!(
                "[diff cut: showed {MAX_DIFF_LINES} of {total_lines} lines; every replacement is staged all the same]"
            );
            text.push_str(&format!("{cut}\n"));
            notes.push(cut);
        }
        let output = AstEditOutput {
            edit_id,
            replacements,
            files,
            nested_skipped,
            diff: shown_diff,
            diff_truncated,
            notes,
        };
        Ok(ToolOutput::new(text, output))
    }
}
