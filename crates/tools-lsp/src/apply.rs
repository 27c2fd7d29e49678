//! Applying a server's `WorkspaceEdit` — the one place a language server's edit reaches the
//! disk, for `lsp_rename` (LSP-8) and `lsp_code_action`: planned in memory, committed all or
//! nothing through the workspace, then told to the server (changed open documents re-sent,
//! every file announced as a watched-file change).

use std::collections::BTreeMap;
use std::path::PathBuf;

use async_lsp::lsp_types::{FileChangeType, WorkspaceEdit};
use schemars::JsonSchema;
use serde::Serialize;
use tools_core::{Change, FileChange, ToolError, Workspace};

use crate::edit::plan;
use tools_lsp_client::Session;

/// One file an applied edit changed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RenamedFile {
    pub path: String,
    /// How many text edits it got.
    pub edits: usize,
    /// Its old path, when the edit also renamed the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// Whether the edit deleted it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
}

/// What an applied edit did.
pub(crate) struct Applied {
    /// Every file changed, workspace-relative, in path order.
    pub(crate) files: Vec<RenamedFile>,
    /// Edits over all files.
    pub(crate) total_edits: usize,
    /// The texts edits inserted, with how often each was inserted.
    pub(crate) new_texts: BTreeMap<String, usize>,
    /// The absolute paths written or removed.
    pub(crate) touched: Vec<PathBuf>,
    /// What each of them held before (`None`: it was new).
    pub(crate) previous: Vec<(PathBuf, Option<Vec<u8>>)>,
}

/// Plans `edit`, writes it all or nothing, and tells `session` what changed. `what` names
/// the operation in errors (`renaming \`x\``); an edit that changes nothing is an error.
pub(crate) async fn apply_edit(
    session: &Session,
    workspace: &Workspace,
    edit: WorkspaceEdit,
    what: &str,
) -> Result<Applied, ToolError> {
    // The edit's positions are in the text the server has open, so that is the text it is
    // applied to, and what each file must still hold when it is written (a writer that
    // changed it meanwhile makes the commit refuse); files the server does not have open are
    // read from disk. Every path the server names is confined through the workspace's own
    // resolution, so a symlink out of the workspace refuses the whole edit (PROD-5).
    let open = session.open_texts().await;
    let encoding = session.encoding;
    let planned = {
        let workspace = workspace.clone();
        tokio::task::spawn_blocking(move || {
            let confine = |path: &std::path::Path| workspace.confine(path);
            let read = |path: &std::path::Path| {
                if let Some(text) = open.get(path) {
                    return Some(text.to_string());
                }
                let bytes = workspace.read(path).ok()?.bytes?;
                String::from_utf8(bytes).ok()
            };
            plan(edit, encoding, &confine, &read)
        })
        .await
        .map_err(|error| ToolError::Internal {
            tool: "lsp".to_owned(),
            message: format!("planning the edit stopped: {error}"),
        })?
    }
    .map_err(|problem| ToolError::failed(format!("{what}: {problem}; nothing was changed")))?;
    if planned.changes.is_empty() {
        return Err(ToolError::failed(format!(
            "{what}: {} returned an edit that changes nothing; nothing was changed",
            session.spec.name
        )));
    }
    let previous = workspace
        .commit_async(planned.changes.clone())
        .await
        .map_err(|error| {
            ToolError::failed(format!("{what}: {}", error.to_tool_error(workspace)))
        })?;
    let synced: Vec<(PathBuf, FileChangeType)> = planned
        .changes
        .iter()
        .map(|Change { path, change, .. }| {
            let kind = match change {
                FileChange::Delete => FileChangeType::DELETED,
                FileChange::Write(_)
                    if planned
                        .files
                        .iter()
                        .any(|f| &f.path == path && f.renamed_from.is_some()) =>
                {
                    FileChangeType::CREATED
                }
                FileChange::Write(_) => FileChangeType::CHANGED,
            };
            (path.clone(), kind)
        })
        .collect();
    session.files_changed(&synced).await;
    let files: Vec<RenamedFile> = planned
        .files
        .iter()
        .map(|file| RenamedFile {
            path: workspace.display(&file.path),
            edits: file.edits,
            renamed_from: file.renamed_from.as_ref().map(|p| workspace.display(p)),
            deleted: file.deleted,
        })
        .collect();
    let total_edits = files.iter().map(|f| f.edits).sum();
    Ok(Applied {
        files,
        total_edits,
        new_texts: planned.new_texts,
        touched: synced.into_iter().map(|(path, _)| path).collect(),
        previous,
    })
}
