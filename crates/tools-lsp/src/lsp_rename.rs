//! `lsp_rename` (LSP-8): a write-tier rename through the language server — `prepareRename`
//! first, then the server's whole workspace edit applied all or nothing, the changed files
//! synced back to the server, and each file reported with its number of edits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use async_lsp::lsp_types::request::{PrepareRenameRequest, Rename};
use async_lsp::lsp_types::{OneOf, PrepareRenameResponse, RenameParams, WorkDoneProgressParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, Tier, Tool, ToolError, ToolOutput, Workspace, Writes};

pub use crate::apply::RenamedFile;
use crate::apply::apply_edit;
use crate::render::{Place, plural, quote};
use crate::servers::ServerSpec;
use crate::supervisor::LspSupervisor;

/// How many remaining occurrences of the old name a rename lists.
const REMAINING_CAP: usize = 10;

/// Folders whose files are not the project's own: a rename does not reach them.
const NOT_SEARCHED: &[&str] = &[
    "node_modules",
    "target",
    "venv",
    ".venv",
    "__pycache__",
    "build",
    "dist",
];

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
    /// The name after, as the server wrote it (`r#fn` for `fn` in Rust).
    pub new_name: String,
    /// Every file changed, workspace-relative.
    pub files: Vec<RenamedFile>,
    /// Edits over all files.
    pub total_edits: usize,
    /// Whole-identifier occurrences of the old name still in the project's files of the
    /// language (headers and stubs included) after the rename, at most 10.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remaining: Vec<Place>,
    /// How many there are in all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub remaining_total: usize,
    /// What the project's language servers found in the written files (diagnostics on write,
    /// LSP-6); present only when a server covers one of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<tools_core::WriteReport>,
}

/// A new name that cannot be one.
fn check_new_name(input: &LspRenameInput) -> Result<(), ToolError> {
    let new_name = input.new_name.trim();
    if new_name.is_empty() {
        return Err(ToolError::failed("`new_name` is empty: give the new name"));
    }
    if new_name == input.symbol.trim() {
        return Err(ToolError::failed(format!(
            "`{new_name}` is already the name; nothing to rename"
        )));
    }
    Ok(())
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
    const TITLE: &'static str = "Rename a symbol";
    const TIER: Tier = Tier::Write;
    const WRITES_FILES: bool = true;

    fn writes(&self, input: &LspRenameInput, workspace: &Workspace) -> Writes {
        Writes::path(workspace, &input.file).and_more()
    }

    /// The new name, the file, its server and the symbol on the line, from the disk alone.
    async fn check(&self, input: &LspRenameInput, workspace: &Workspace) -> Result<(), ToolError> {
        check_new_name(input)?;
        self.supervisor
            .check_target(
                workspace,
                &input.file,
                input.line,
                &input.symbol,
                input.occurrence,
            )
            .await
    }

    async fn call(
        &self,
        context: CallContext,
        input: LspRenameInput,
    ) -> Result<ToolOutput<LspRenameOutput>, ToolError> {
        let workspace = context.workspace();
        check_new_name(&input)?;
        let new_name = input.new_name.trim().to_owned();
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
        let applied = apply_edit(
            session,
            workspace,
            edit,
            &format!("renaming `{old_name}` at {here}"),
        )
        .await?;
        let written = written_name(&new_name, &applied.new_texts);
        let files = applied.files;
        let total_edits = applied.total_edits;
        let mut text = format!(
            "Renamed `{old_name}` to `{written}`: {} in {}:",
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
        // What the server left behind: uses it did not see (disabled code, stubs, files
        // outside its project view), and same-named text the agent must judge.
        let search_name = old_name.trim_start_matches("r#").to_owned();
        let spec = std::sync::Arc::clone(&session.spec);
        let root = session.root.clone();
        let (remaining, remaining_total) = tokio::task::spawn_blocking(move || {
            remaining_uses(&spec, &root, &search_name, REMAINING_CAP)
        })
        .await
        .unwrap_or_default();
        let remaining: Vec<Place> = remaining
            .into_iter()
            .map(|(path, line, line_text)| Place {
                path: workspace.display(&path),
                line,
                text: quote(&line_text),
            })
            .collect();
        if remaining_total > 0 {
            text.push_str(&format!(
                "\n{} of `{old_name}` {} that {server} did not rename (they may be in \
                 disabled code, stubs, comments or strings, or be another symbol of that \
                 name); nothing was changed there:",
                plural(remaining_total, "occurrence"),
                if remaining_total == 1 {
                    "remains"
                } else {
                    "remain"
                }
            ));
            for place in &remaining {
                text.push_str(&format!("\n  {}", place.render()));
            }
            if remaining_total > remaining.len() {
                text.push_str(&format!(
                    "\n  ({} more not listed)",
                    remaining_total - remaining.len()
                ));
            }
        }
        for note in opened
            .notes
            .iter()
            .chain(target.note(&input.symbol).as_ref())
        {
            text.push_str(&format!("\n{note}"));
        }
        Ok(ToolOutput::new(
            text,
            LspRenameOutput {
                old_name,
                new_name: written,
                files,
                total_edits,
                remaining,
                remaining_total,
                diagnostics: None,
            },
        )
        .touching(applied.touched)
        .previously(applied.previous))
    }
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// The name the server's edit wrote for `new_name`: `new_name` itself when an edit inserted
/// exactly it, else the text most edits inserted that contains it (`r#fn` for `fn`).
fn written_name(new_name: &str, new_texts: &BTreeMap<String, usize>) -> String {
    if new_texts.contains_key(new_name) {
        return new_name.to_owned();
    }
    new_texts
        .iter()
        .filter(|(text, _)| text.contains(new_name) && !text.contains(char::is_whitespace))
        .max_by_key(|(_, count)| **count)
        .map_or_else(|| new_name.to_owned(), |(text, _)| text.clone())
}

/// Where `name` still occurs as a whole identifier in the files of `spec`'s languages under
/// `root` (`.gitignore` respected, dependency folders left out): the first `cap` as (path,
/// 1-based line, line text) in path and line order, and how many there are in all.
fn remaining_uses(
    spec: &ServerSpec,
    root: &Path,
    name: &str,
    cap: usize,
) -> (Vec<(PathBuf, u32, String)>, usize) {
    let mut listed = Vec::new();
    let mut total = 0;
    if name.is_empty() {
        return (listed, total);
    }
    let finder = memchr::memmem::Finder::new(name.as_bytes());
    let walk = ignore::WalkBuilder::new(root)
        .require_git(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .filter_entry(|entry| !NOT_SEARCHED.contains(&entry.file_name().to_string_lossy().as_ref()))
        .build();
    for entry in walk.flatten() {
        let path = entry.path();
        if !entry.file_type().is_some_and(|kind| kind.is_file()) || spec.language_id(path).is_none()
        {
            continue;
        }
        let Ok(bytes) = tools_core::read_regular(path) else {
            continue;
        };
        if finder.find(&bytes).is_none() {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        for (index, line) in text.lines().enumerate() {
            let found = word_positions(line, name).count();
            if found == 0 {
                continue;
            }
            total += found;
            if listed.len() < cap {
                listed.push((
                    path.to_path_buf(),
                    u32::try_from(index + 1).unwrap_or(u32::MAX),
                    line.to_owned(),
                ));
            }
        }
    }
    (listed, total)
}

/// The byte offsets in `text` where `word` occurs as a whole identifier.
fn word_positions<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_' || ch == '$';
    text.match_indices(word).filter_map(move |(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + word.len()..].chars().next();
        (!before.is_some_and(ident) && !after.is_some_and(ident)).then_some(start)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsp_8_the_result_names_the_identifier_written() {
        let texts = |items: &[(&str, usize)]| -> BTreeMap<String, usize> {
            items.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect()
        };
        assert_eq!(written_name("fn", &texts(&[("r#fn", 3)])), "r#fn");
        assert_eq!(written_name("total", &texts(&[("total", 2)])), "total");
        assert_eq!(written_name("x", &texts(&[])), "x");
    }

    #[test]
    fn lsp_8_uses_the_server_left_are_found_as_whole_identifiers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("stack.h"),
            "void ts_stack_halt(Stack *);\nvoid ts_stack_halted(void);\n",
        )
        .unwrap();
        std::fs::write(root.join("stack.c"), "void renamed(Stack *s) {}\n").unwrap();
        std::fs::write(root.join("notes.md"), "ts_stack_halt\n").unwrap();
        let spec = crate::servers::builtin()
            .into_iter()
            .find(|s| s.name == "clangd")
            .unwrap();
        let (listed, total) = remaining_uses(&spec, root, "ts_stack_halt", 10);
        assert_eq!(total, 1);
        assert_eq!(listed[0].0, root.join("stack.h"));
        assert_eq!(listed[0].1, 1);
    }
}
