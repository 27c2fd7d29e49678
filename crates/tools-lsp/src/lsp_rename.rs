//! `lsp_rename` (LSP-8): a write-tier rename through the language server — `prepareRename`
//! first, then the server's whole workspace edit applied all or nothing, the changed files
//! synced back to the server, and each file reported with its number of edits.

use async_lsp::lsp_types::request::{PrepareRenameRequest, Rename};
use async_lsp::lsp_types::{
    FileChangeType, OneOf, PrepareRenameResponse, RenameParams, WorkDoneProgressParams,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{
    CallContext, Change, FileChange, Tier, Tool, ToolError, ToolOutput, Workspace, Writes,
};

use crate::edit::plan;
use crate::render::plural;
use crate::supervisor::LspSupervisor;

/// Rename a symbol everywhere it is used, through the project's language server: every
/// reference in every file is updated (and a module file renamed, where the language ties
/// file names to names), all files or none.
///
/// Point at the symbol with a 1-based `line` and the `symbol` text on that line, as for
/// `lsp`. The result lists each changed file with its number of edits.
///
/// When a language server covers a written file, the result ends with the errors this call
/// introduced there (and says so when the server had not finished checking).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspRenameInput {
    /// The file, relative to the workspace root.
    pub file: String,
    /// The 1-based line of `symbol` in `file`.
    pub line: u32,
    /// The identifier on that line to rename, copied from the line.
    pub symbol: String,
    /// The new name.
    pub new_name: String,
    /// Which occurrence of `symbol` on the line, when it occurs more than once (1-based;
    /// default 1).
    #[serde(default)]
    pub occurrence: Option<u32>,
}

/// What the rename changed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LspRenameOutput {
    /// The name before.
    pub old_name: String,
    /// The name after.
    pub new_name: String,
    /// Every file changed, workspace-relative.
    pub files: Vec<RenamedFile>,
    /// Edits over all files.
    pub total_edits: usize,
    /// What the project's language servers found in the written files (diagnostics on write,
    /// LSP-6); present only when a server covers one of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<tools_core::WriteDiagnostics>,
}

/// One file the rename changed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RenamedFile {
    pub path: String,
    /// How many text edits it got.
    pub edits: usize,
    /// Its old path, when the rename also renamed the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// Whether the rename deleted it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
}

/// The `lsp_rename` tool, bound to the run's supervisor.
pub struct LspRename {
    supervisor: LspSupervisor,
}

impl LspRename {
    /// `lsp_rename` over `supervisor`.
    pub fn new(supervisor: LspSupervisor) -> Self {
        LspRename { supervisor }
    }
}

impl Tool for LspRename {
    type Input = LspRenameInput;
    type Output = LspRenameOutput;
    const NAME: &'static str = "lsp_rename";
    const TIER: Tier = Tier::Write;
    const WRITES_FILES: bool = true;

    fn writes(&self, input: &LspRenameInput, workspace: &Workspace) -> Writes {
        Writes {
            files: workspace.resolve(&input.file).into_iter().collect(),
            more: true,
        }
    }

    async fn call(
        &self,
        context: CallContext,
        input: LspRenameInput,
    ) -> Result<ToolOutput<LspRenameOutput>, ToolError> {
        let workspace = context.workspace();
        let new_name = input.new_name.trim().to_owned();
        if new_name.is_empty() {
            return Err(ToolError::failed("`new_name` is empty: give the new name"));
        }
        let (opened, target, position) = self
            .supervisor
            .open_at(
                workspace,
                &input.file,
                input.line,
                &input.symbol,
                input.occurrence,
            )
            .await?;
        let session = &opened.session;
        if target.aimed == new_name {
            return Err(ToolError::failed(format!(
                "`{new_name}` is already the name; nothing to rename"
            )));
        }
        let here = format!("{}:{}", opened.shown, target.line + 1);
        let server = session.spec.name.clone();
        let prepare = match &session.capabilities.rename_provider {
            None | Some(OneOf::Left(false)) => {
                return Err(ToolError::failed(format!(
                    "{server} does not support rename"
                )));
            }
            Some(OneOf::Left(true)) => false,
            Some(OneOf::Right(options)) => options.prepare_provider == Some(true),
        };
        let mut old_name = target.aimed.clone();
        if prepare {
            let answer = session
                .request::<PrepareRenameRequest>(position.clone())
                .await
                .map_err(|error| {
                    ToolError::failed(format!(
                        "`{}` at {here} cannot be renamed: {error}",
                        target.aimed
                    ))
                })?;
            match answer {
                None => {
                    return Err(ToolError::failed(format!(
                        "`{}` at {here} cannot be renamed: {server} says there is no renameable \
                         symbol there (a keyword, a literal, or something from outside the \
                         workspace?)",
                        target.aimed
                    )));
                }
                Some(PrepareRenameResponse::RangeWithPlaceholder { placeholder, .. }) => {
                    if !placeholder.is_empty() {
                        old_name = placeholder;
                    }
                }
                Some(_) => {}
            }
        }
        let edit = session
            .request::<Rename>(RenameParams {
                text_document_position: position,
                new_name: new_name.clone(),
                work_done_progress_params: WorkDoneProgressParams::default(),
            })
            .await
            .map_err(|error| {
                ToolError::failed(format!("renaming `{old_name}` at {here} failed: {error}"))
            })?
            .ok_or_else(|| {
                ToolError::failed(format!(
                    "{server} returned no edit for renaming `{old_name}` at {here}; nothing \
                     was changed"
                ))
            })?;
        let encoding = session.encoding;
        // The edit's positions are in the text the server has open, so that is the text it is
        // applied to, and what each file must still hold when it is written; files the server
        // does not have open are read from disk.
        let open = session.open_texts().await;
        let planned = {
            let workspace = workspace.clone();
            tokio::task::spawn_blocking(move || {
                let confine = |path: &std::path::Path| {
                    workspace.confine(path).map_err(|error| error.to_string())
                };
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
                tool: "lsp_rename".to_owned(),
                message: format!("planning the edit stopped: {error}"),
            })?
        }
        .map_err(|problem| {
            ToolError::failed(format!(
                "renaming `{old_name}`: {problem}; nothing was changed"
            ))
        })?;
        if planned.changes.is_empty() {
            return Err(ToolError::failed(format!(
                "{server} returned an empty edit for renaming `{old_name}` at {here}; nothing \
                 was changed"
            )));
        }
        let previous = workspace
            .commit_async(planned.changes.clone())
            .await
            .map_err(|error| {
                ToolError::failed(format!(
                    "renaming `{old_name}`: {}",
                    error.to_tool_error(workspace)
                ))
            })?;
        let synced: Vec<_> = planned
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
        let total_edits: usize = files.iter().map(|f| f.edits).sum();
        let mut text = format!(
            "Renamed `{old_name}` to `{new_name}`: {} in {}:",
            plural(total_edits, "edit"),
            plural(files.len(), "file")
        );
        for file in &files {
            text.push_str(&format!("\n  {}", file.path));
            if let Some(from) = &file.renamed_from {
                text.push_str(&format!(" (renamed from {from})"));
            }
            if file.deleted {
                text.push_str(" (deleted)");
            } else {
                text.push_str(&format!(": {}", plural(file.edits, "edit")));
            }
        }
        for note in opened
            .notes
            .iter()
            .chain(target.note(&input.symbol).as_ref())
        {
            text.push_str(&format!("\n{note}"));
        }
        let touched = synced.into_iter().map(|(path, _)| path);
        Ok(ToolOutput::new(
            text,
            LspRenameOutput {
                old_name,
                new_name,
                files,
                total_edits,
                diagnostics: None,
            },
        )
        .touching(touched)
        .previously(previous))
    }
}
