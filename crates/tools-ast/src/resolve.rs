//! `resolve`: accept or discard a staged edit, all or nothing (AST-7).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{
    CallContext, Change, CommitError, ContentHash, Expect, FileChange, Tier, Tool, ToolError,
    ToolOutput, Workspace, Writes,
};

use crate::staging::{EditState, EditStore};

/// Accept or discard an edit staged by `ast_edit`.
///
/// `accept` writes every file at once if each still has the content it had when staged;
/// if one changed, nothing is written (stage it again). `discard` drops the edit.
///
/// Reports the errors it introduced.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveInput {
    /// From `ast_edit`, e.g. "edit_1".
    pub edit_id: String,
    pub action: ResolveAction,
}

// What to do with a staged edit (the tool's description says; a doc comment would repeat
// in the schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResolveAction {
    // Write every file of the edit.
    Accept,
    // Drop the edit; nothing is written.
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
}

/// The `resolve` tool.
pub struct Resolve {
    pub(crate) store: Arc<EditStore>,
}

impl Tool for Resolve {
    type Input = ResolveInput;
    type Output = ResolveOutput;
    const NAME: &'static str = "resolve";
    const TITLE: &'static str = "Apply or discard a staged rewrite";
    const TIER: Tier = Tier::Write;
    const WRITES_FILES: bool = true;

    fn writes(&self, input: &ResolveInput, _: &Workspace) -> Writes {
        match input.action {
            ResolveAction::Accept => Writes {
                files: self.store.pending_paths(&input.edit_id),
                more: false,
            },
            ResolveAction::Discard => Writes::default(),
        }
    }

    /// The edit is pending, and for `accept` every file is still what was staged (AST-7): a
    /// stale edit is rejected here, before any server is asked about its files.
    async fn check(&self, input: &ResolveInput, workspace: &Workspace) -> Result<(), ToolError> {
        let id = input.edit_id.trim();
        let (number, files) = self.store.peek(id)?;
        if input.action == ResolveAction::Discard {
            return Ok(());
        }
        let diverged = diverged(workspace, &files).await;
        if diverged.is_empty() {
            return Ok(());
        }
        self.store.finish(number, EditState::Rejected);
        Err(stale(id, &diverged, files.len()))
    }

    async fn call(
        &self,
        context: CallContext,
        input: ResolveInput,
    ) -> Result<ToolOutput<ResolveOutput>, ToolError> {
        let workspace = context.workspace();
        let id = input.edit_id.trim().to_owned();
        let (number, files) = self.store.take(&id)?;
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
                },
            ));
        }
        // AST-7: every file must still be what was staged, or nothing is written. The commit
        // checks each file's hash again under the workspace's write lock, and confines each
        // path again on what it resolves to now, so the check and the write are one step.
        let changes: Vec<Change> = files
            .iter()
            .map(|f| Change {
                path: f.path.clone(),
                expect: Expect::Content(f.hash),
                change: FileChange::Write(f.rewritten.clone().into_bytes()),
            })
            .collect();
        let previous = match workspace.commit_async(changes).await {
            Ok(previous) => previous,
            Err(CommitError::Conflict { .. }) => {
                self.store.finish(number, EditState::Rejected);
                let diverged = diverged(workspace, &files).await;
                return Err(stale(&id, &diverged, files.len()));
            }
            Err(error) => {
                self.store.finish(number, EditState::Rejected);
                return Err(ToolError::failed(format!(
                    "rejected {id}: {}",
                    error.to_tool_error(workspace)
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
            },
        )
        .touching(files.into_iter().map(|f| f.path))
        .previously(previous))
    }
}

/// The refusal of an edit whose files moved on since it was staged.
fn stale(id: &str, diverged: &[String], files: usize) -> ToolError {
    ToolError::failed(format!(
        "rejected {id}: {} of {files} file(s) changed since the edit was staged ({}); no file \
         was written. Run ast_edit again to stage the change against the current files",
        diverged.len(),
        diverged.join(", ")
    ))
}

/// The staged files whose content is no longer what was staged, as the model reads them.
async fn diverged(workspace: &Workspace, files: &[crate::staging::StagedFile]) -> Vec<String> {
    let mut changed = Vec::new();
    for file in files {
        let now = workspace.read_async(file.path.clone()).await.ok();
        let same = now
            .and_then(|snapshot| snapshot.bytes)
            .is_some_and(|bytes| ContentHash::of(&bytes) == file.hash);
        if !same {
            changed.push(workspace.display(&file.path));
        }
    }
    changed
}
