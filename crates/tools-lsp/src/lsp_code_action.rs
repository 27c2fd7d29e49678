//! `lsp_code_action`: applies one of the code actions `lsp` lists (`code_actions`), by its
//! title — write tier, like `lsp_rename`, with the same all-or-nothing apply
//! ([`crate::apply::apply_edit`]) and diagnostics on write around it.

use async_lsp::lsp_types::request::CodeActionResolveRequest;
use async_lsp::lsp_types::{CodeAction, CodeActionOrCommand, CodeActionProviderCapability};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, Tier, Tool, ToolError, ToolOutput, Workspace, Writes};

use crate::apply::{RenamedFile, apply_edit};
use crate::error::ForModel;
use crate::lsp::actions_at;
use crate::render::plural;
use crate::supervisor::LspSupervisor;

/// Apply a language-server code action (a quick fix, a refactoring) by its `title`, as `lsp`
/// `code_actions` lists them at that `path`, `line` and `symbol`. Writes every file it
/// changes, or none.
///
/// Reports the errors it introduced.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspCodeActionInput {
    /// The file, workspace-relative.
    // `file` was its name before: clients that send it keep working.
    #[serde(alias = "file")]
    pub path: String,
    /// The 1-based line of `symbol`.
    #[schemars(range(min = 1))]
    pub line: u32,
    /// The identifier as written on that line.
    pub symbol: String,
    /// As `code_actions` lists it, or a part only one title contains.
    pub title: String,
    /// Which one on the line (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub occurrence: Option<u32>,
}

/// What the action changed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LspCodeActionOutput {
    /// The title of the action applied.
    pub title: String,
    /// Every file changed, workspace-relative.
    pub files: Vec<RenamedFile>,
    /// Edits over all files.
    pub total_edits: usize,
    /// What the text says beyond the files: a server command not run, how the symbol was
    /// found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The `lsp_code_action` tool, bound to the run's supervisor.
pub struct LspCodeAction {
    supervisor: LspSupervisor,
}

/// An empty title names no action.
fn check_title(input: &LspCodeActionInput) -> Result<(), ToolError> {
    match input.title.trim().is_empty() {
        true => Err(ToolError::failed(
            "`title` is empty: give the title of an action `lsp` with operation \
             `code_actions` lists",
        )),
        false => Ok(()),
    }
}

impl LspCodeAction {
    /// `lsp_code_action` over `supervisor`.
    pub fn new(supervisor: LspSupervisor) -> Self {
        LspCodeAction { supervisor }
    }
}

impl Tool for LspCodeAction {
    type Input = LspCodeActionInput;
    type Output = LspCodeActionOutput;
    const NAME: &'static str = "lsp_code_action";
    const TITLE: &'static str = "Apply a language server code action";
    const TIER: Tier = Tier::Write;
    const WRITES_FILES: bool = true;

    /// The file it is asked about; an action may change others too (an import added).
    fn writes(&self, input: &LspCodeActionInput, workspace: &Workspace) -> Writes {
        Writes::path(workspace, &input.path).and_more()
    }

    /// The title, the file, its server and the symbol on the line, from the disk alone.
    async fn check(
        &self,
        input: &LspCodeActionInput,
        workspace: &Workspace,
    ) -> Result<(), ToolError> {
        check_title(input)?;
        self.supervisor
            .check_target(
                workspace,
                &input.path,
                input.line,
                &input.symbol,
                input.occurrence,
            )
            .await
    }

    async fn call(
        &self,
        context: CallContext,
        input: LspCodeActionInput,
    ) -> Result<ToolOutput<LspCodeActionOutput>, ToolError> {
        let workspace = context.workspace();
        check_title(&input)?;
        let wanted = input.title.trim();
        let (opened, target, _) = self
            .supervisor
            .open_at(
                workspace,
                &input.path,
                input.line,
                &input.symbol,
                input.occurrence,
            )
            .await?;
        let session = &opened.session;
        let server = session.spec.name.clone();
        let aimed_at = target.place(workspace, &opened.path, &opened.synced.text);
        let here = aimed_at.at();
        let offered = actions_at(&opened, &target).await.for_model(workspace)?;
        let titles: Vec<&str> = offered.iter().map(title).collect();
        let chosen = choose(&titles, wanted).map_err(|problem| {
            let listed = match titles.is_empty() {
                true => format!(
                    "{server} offers no code actions at `{}` ({here})",
                    target.aimed
                ),
                false => format!(
                    "the actions at `{}` ({here}) are: {}",
                    target.aimed,
                    titles
                        .iter()
                        .map(|t| format!("\"{t}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            ToolError::failed(format!("{problem}; {listed}"))
        })?;
        let mut action = match offered.into_iter().nth(chosen) {
            Some(CodeActionOrCommand::CodeAction(action)) => action,
            Some(CodeActionOrCommand::Command(command)) => {
                return Err(ToolError::failed(format!(
                    "\"{}\" is a server command (`{}`), not an edit; this tool applies only \
                     actions that come with their changes, so nothing was changed",
                    command.title, command.command
                )));
            }
            None => return Err(ToolError::failed("the chosen action vanished")),
        };
        if let Some(disabled) = &action.disabled {
            return Err(ToolError::failed(format!(
                "{server} offers \"{}\" disabled here: {}; nothing was changed",
                action.title, disabled.reason
            )));
        }
        if action.edit.is_none() && resolves(session.capabilities.code_action_provider.as_ref()) {
            action = session
                .request::<CodeActionResolveRequest>(action)
                .await
                .map_err(|error| {
                    ToolError::failed(format!(
                        "{server} could not work out the changes of the action: {error}"
                    ))
                })?;
        }
        let CodeAction {
            title,
            edit,
            command,
            ..
        } = action;
        let Some(edit) = edit else {
            return Err(ToolError::failed(format!(
                "\"{title}\" carries no changes{}; this tool applies only actions that come \
                 with their edit, so nothing was changed",
                command
                    .map(|c| format!(" (it runs the server command `{}`)", c.command))
                    .unwrap_or_default()
            )));
        };
        let applied =
            apply_edit(session, workspace, edit, &format!("applying \"{title}\"")).await?;
        let mut text = format!(
            "Applied \"{title}\" ({server}, at {here}): {} in {}:",
            plural(applied.total_edits, "edit"),
            plural(applied.files.len(), "file")
        );
        for file in &applied.files {
            text.push_str(&format!("\n  {}", file.path));
            if let Some(from) = &file.renamed_from {
                text.push_str(&format!(" (renamed from {from})"));
            }
            match file.deleted {
                true => text.push_str(" (deleted)"),
                false => text.push_str(&format!(": {}", plural(file.edits, "edit"))),
            }
        }
        // Every sentence beyond the files is said in the text and kept in `notes`, which is
        // all that some clients show the model.
        let mut notes = Vec::new();
        if let Some(command) = command {
            notes.push(format!(
                "The action also names the server command `{}`, which this tool does not run.",
                command.command
            ));
        }
        notes.extend(opened.notes.iter().cloned());
        notes.extend(target.note(&input.symbol));
        for note in &notes {
            text.push_str(&format!("\n{note}"));
        }
        Ok(ToolOutput::new(
            text,
            LspCodeActionOutput {
                title,
                files: applied.files,
                total_edits: applied.total_edits,
                notes,
            },
        )
        .touching(applied.touched)
        .previously(applied.previous))
    }
}

fn title(action: &CodeActionOrCommand) -> &str {
    match action {
        CodeActionOrCommand::Command(command) => &command.title,
        CodeActionOrCommand::CodeAction(action) => &action.title,
    }
}

/// Whether the server fills in an action's edit when asked (`codeAction/resolve`).
fn resolves(provider: Option<&CodeActionProviderCapability>) -> bool {
    matches!(
        provider,
        Some(CodeActionProviderCapability::Options(options)) if options.resolve_provider == Some(true)
    )
}

/// Why `wanted` names no one action; the caller adds the titles on offer.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum Unchosen {
    #[error("no code action is titled \"{wanted}\"")]
    NoTitle { wanted: String },
    #[error("\"{wanted}\" is part of {count} titles; give one whole")]
    Several { wanted: String, count: usize },
}

/// The index of the action `wanted` names: the title itself, then ignoring case, then the
/// one title that contains it.
fn choose(titles: &[&str], wanted: &str) -> Result<usize, Unchosen> {
    if let Some(index) = titles.iter().position(|t| t.trim() == wanted) {
        return Ok(index);
    }
    let lower = wanted.to_lowercase();
    if let Some(index) = titles.iter().position(|t| t.trim().to_lowercase() == lower) {
        return Ok(index);
    }
    let containing: Vec<usize> = titles
        .iter()
        .enumerate()
        .filter(|(_, t)| t.to_lowercase().contains(&lower))
        .map(|(index, _)| index)
        .collect();
    match containing.as_slice() {
        [index] => Ok(*index),
        [] => Err(Unchosen::NoTitle {
            wanted: wanted.to_owned(),
        }),
        several => Err(Unchosen::Several {
            wanted: wanted.to_owned(),
            count: several.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_is_chosen_by_its_title_or_a_unique_part() {
        let titles = [
            "Import `HashMap`",
            "Import `BTreeMap`",
            "Remove unused variable",
        ];
        assert_eq!(choose(&titles, "Import `HashMap`"), Ok(0));
        assert_eq!(choose(&titles, "remove unused variable"), Ok(2));
        assert_eq!(choose(&titles, "BTree"), Ok(1));
        assert_eq!(
            choose(&titles, "Import").unwrap_err().to_string(),
            "\"Import\" is part of 2 titles; give one whole"
        );
        assert_eq!(
            choose(&titles, "Inline").unwrap_err().to_string(),
            "no code action is titled \"Inline\""
        );
    }
}
