//! `resolve`: accept or discard a staged edit, all or nothing (AST-7).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, FileChange, Tier, Tool, ToolError, ToolOutput};

use crate::staging::{EditState, EditStore, hash};

/// Accept or discard an edit staged by `ast_edit`.
///
/// `accept` first checks that every file still has the content it had when the edit was
/// staged; if any one changed, the whole edit is rejected and no file is written — stage it
/// again with `ast_edit`. Otherwise every file is written at once. `discard` drops the edit.
///
/// When a language server covers a written file, the result ends with the errors this call
/// introduced there (and says so when the server had not finished checking).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveInput {
    /// The id `ast_edit` returned, e.g. "edit_1".
    pub edit_id: String,
    /// What to do with it.
    pub action: ResolveAction,
}

/// What to do with a staged edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResolveAction {
    /// Write every file of the edit.
    Accept,
    /// Drop the edit; nothing is written.
    Discard,
}

/// How the edit ended.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ResolveOutput {
    /// The edit.
    pub edit_id: String,
    /// The action taken.
    pub action: ResolveAction,
    /// The files written (for accept) or that would have been (for discard).
    pub files: Vec<String>,
    /// Replacements written (0 for discard).
    pub replacements: usize,
    /// What the project's language servers found in the written files (diagnostics on write,
    /// LSP-6); present only when a server covers one of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<tools_core::WriteDiagnostics>,
}

/// The `resolve` tool.
pub struct Resolve {
    pub(crate) store: Arc<EditStore>,
}

impl Tool for Resolve {
    type Input = ResolveInput;
    type Output = ResolveOutput;
    const NAME: &'static str = "resolve";
    const TIER: Tier = Tier::Write;

    async fn call(
        &self,
        context: CallContext,
        input: ResolveInput,
    ) -> Result<ToolOutput<ResolveOutput>, ToolError> {
        let workspace = context.workspace();
        let id = input.edit_id.trim().to_owned();
        let (number, files) = self.store.take(&id).map_err(ToolError::Failed)?;
        let shown: Vec<String> = files.iter().map(|f| workspace.display(&f.path)).collect();
        if input.action == ResolveAction::Discard {
            self.store.finish(number, EditState::Discarded);
            let text = format!(
                "Discarded {id}: nothing was written ({} file(s) left as they are).",
                files.len()
            );
            return Ok(ToolOutput::new(
                text,
                ResolveOutput {
                    edit_id: id,
                    action: input.action,
                    files: shown,
                    replacements: 0,
                    diagnostics: None,
                },
            ));
        }
        // AST-7: every file must still be what was staged, or nothing is written.
        let diverged: Vec<String> = files
            .iter()
            .filter(|file| {
                std::fs::read(&file.path)
                    .map(|bytes| hash(&bytes) != file.hash)
                    .unwrap_or(true)
            })
            .map(|file| workspace.display(&file.path))
            .collect();
        if !diverged.is_empty() {
            self.store.finish(number, EditState::Rejected);
            return Err(ToolError::failed(format!(
                "rejected {id}: {} of {} file(s) changed since the edit was staged ({}); no file was written. \
                 Run ast_edit again to stage the change against the current files",
                diverged.len(),
                files.len(),
                diverged.join(", ")
            )));
        }
        let changes: Vec<_> = files
            .iter()
            .map(|f| {
                (
                    f.path.clone(),
                    FileChange::Write(f.rewritten.clone().into_bytes()),
                )
            })
            .collect();
        let previous = match workspace.commit(&changes) {
            Ok(previous) => previous,
            Err(error) => {
                self.store.finish(number, EditState::Rejected);
                return Err(ToolError::failed(format!(
                    "{error}; every file of {id} was left as it was"
                )));
            }
        };
        self.store.finish(number, EditState::Accepted);
        let replacements: usize = files.iter().map(|f| f.replacements).sum();
        let mut text = format!(
            "Accepted {id}: wrote {replacements} replacement(s) in {} file(s):",
            files.len()
        );
        for (path, file) in shown.iter().zip(&files) {
            text.push_str(&format!("\n  {path} ({})", file.replacements));
        }
        Ok(ToolOutput::new(
            text,
            ResolveOutput {
                edit_id: id,
                action: input.action,
                files: shown,
                replacements,
                diagnostics: None,
            },
        )
        .touching(files.into_iter().map(|f| f.path))
        .previously(previous))
    }
}
