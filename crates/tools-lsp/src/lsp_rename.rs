//! `lsp_rename` (LSP-8): a write-tier rename through the language server — `prepareRename`
//! first, then the server's whole workspace edit applied all or nothing, the changed files
//! synced back to the server, and each file reported with its number of edits.

use std::collections::BTreeMap;
use std::path::PathBuf;

use async_lsp::lsp_types::request::{PrepareRenameRequest, Rename};
use async_lsp::lsp_types::{OneOf, PrepareRenameResponse, RenameParams, WorkDoneProgressParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, Place, Tier, Tool, ToolError, ToolOutput, Workspace, Writes};

pub use crate::apply::RenamedFile;
use crate::apply::apply_edit;
use crate::leftovers::{Found, Leftover, LeftoverKind};
use crate::render::plural;
use crate::select::per_file_counts;
use crate::supervisor::LspSupervisor;
use tools_lsp_client::Session;

/// How many remaining occurrences of the old name a rename lists.
const REMAINING_CAP: usize = 10;

/// Rename a symbol everywhere, through the language server: every reference in every file
/// (and a module file, where file names are names), all or none. Aim with `path`, `line`
/// and `symbol` as for `lsp`.
///
/// Reports the errors it introduced.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspRenameInput {
    /// The file, workspace-relative.
    // `file` was its name before: clients that send it keep working.
    #[serde(alias = "file")]
    pub path: String,
    /// The 1-based line of `symbol`.
    #[schemars(range(min = 1))]
    pub line: u32,
    /// The identifier as written on that line.
    pub symbol: String,
    pub new_name: String,
    /// Which one on the line (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
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
    /// language (headers and stubs included) after the rename, code first, at most 10.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remaining: Vec<Leftover>,
    /// How many there are in all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub remaining_total: usize,
    /// How many of them are in code (compiled or not), not in comments or strings.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub remaining_in_code: usize,
    /// What the rename left and how it was done, as the text says it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
        Writes::path(workspace, &input.path).and_more()
    }

    /// The new name, the file, its server and the symbol on the line, from the disk alone.
    async fn check(&self, input: &LspRenameInput, workspace: &Workspace) -> Result<(), ToolError> {
        check_new_name(input)?;
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
        input: LspRenameInput,
    ) -> Result<ToolOutput<LspRenameOutput>, ToolError> {
        let workspace = context.workspace();
        check_new_name(&input)?;
        let new_name = input.new_name.trim().to_owned();
        let (opened, target, position) = self
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
        if target.aimed == new_name {
            return Err(ToolError::failed(format!(
                "`{new_name}` is already the name; nothing to rename"
            )));
        }
        let aimed_at = target.place(workspace, &opened.path, &opened.synced.text);
        let here = aimed_at.at();
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
        // A declaration a stub shadows: renamed from the stub, which every use resolves to.
        let stub = crate::stubs::stub_declaration(session, &position).await;
        let rename_at = stub.as_ref().map_or(position, |stub| stub.position.clone());
        let edit = session
            .request::<Rename>(RenameParams {
                text_document_position: rename_at,
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
        let mut found =
            tokio::task::spawn_blocking(move || crate::leftovers::find(&spec, &root, &search_name))
                .await
                .unwrap_or_default();
        mark_inactive(session, &mut found).await;
        // Every sentence beyond the lists is said in the text and kept in `notes`, which is
        // all that some clients show the model.
        let mut notes = Vec::new();
        let (remaining, remaining_total, remaining_in_code) =
            render_leftovers(&mut text, &mut notes, &found, &old_name, &server, workspace);
        let mut after = Vec::new();
        if let Some(stub) = &stub {
            after.push(format!(
                "Renamed from the stub's declaration ({}), so the uses that resolve to the \
                 stub are renamed too.",
                Place::new(workspace, &stub.path, stub.line(), "").at()
            ));
        }
        after.extend(opened.notes.iter().cloned());
        after.extend(target.note(&input.symbol));
        for note in &after {
            text.push_str(&format!("\n{note}"));
        }
        notes.extend(after);
        Ok(ToolOutput::new(
            text,
            LspRenameOutput {
                old_name,
                new_name: written,
                files,
                total_edits,
                remaining,
                remaining_total,
                remaining_in_code,
                notes,
            },
        )
        .touching(applied.touched)
        .previously(applied.previous))
    }
}

/// Marks the code occurrences that lie in code the server does not compile (rust-analyzer's
/// `inactive-code` ranges: cfg'd out, features off; a file no `mod` reaches), asking the
/// server about at most 20 files.
async fn mark_inactive(session: &Session, found: &mut [Found]) {
    let mut files: Vec<PathBuf> = found
        .iter()
        .filter(|f| f.kind == LeftoverKind::Code)
        .map(|f| f.path.clone())
        .collect();
    files.dedup();
    for path in files.into_iter().take(20) {
        let Ok(synced) = session.sync(&path).await else {
            continue;
        };
        let Some(diagnostics) = session
            .pull_within(&synced.uri, std::time::Duration::from_secs(5))
            .await
        else {
            continue;
        };
        let inactive: Vec<(u32, u32)> = diagnostics
            .iter()
            .filter(|d| {
                crate::render::code_text(d.code.as_ref()).as_deref() == Some("inactive-code")
            })
            .map(|d| (d.range.start.line, d.range.end.line))
            .collect();
        // A file no module declaration reaches (a `mod` the cfg leaves out) is not compiled
        // at all.
        let unlinked = diagnostics
            .iter()
            .any(|d| crate::render::code_text(d.code.as_ref()).as_deref() == Some("unlinked-file"));
        for item in found.iter_mut().filter(|f| f.path == path) {
            if item.kind == LeftoverKind::Code
                && (unlinked
                    || inactive
                        .iter()
                        .any(|(start, end)| (*start..=*end).contains(&item.line.to_lsp())))
            {
                item.kind = LeftoverKind::InactiveCode;
            }
        }
    }
}

/// Appends what the rename left to `text`: the counts (code apart from comments and strings),
/// the count per file when the list is capped, then code first. Returns the listed items, the
/// total and how many are in code.
fn render_leftovers(
    text: &mut String,
    notes: &mut Vec<String>,
    found: &[Found],
    old_name: &str,
    server: &str,
    workspace: &Workspace,
) -> (Vec<Leftover>, usize, usize) {
    let total = found.len();
    if total == 0 {
        return (Vec::new(), 0, 0);
    }
    let counts = crate::leftovers::counts(found);
    let code = counts.get(&LeftoverKind::Code).copied().unwrap_or(0);
    let inactive = counts
        .get(&LeftoverKind::InactiveCode)
        .copied()
        .unwrap_or(0);
    let prose = counts
        .get(&LeftoverKind::CommentOrString)
        .copied()
        .unwrap_or(0);
    let headline = format!(
        "{} of `{old_name}` {} that {server} did not rename; nothing was changed there",
        plural(total, "occurrence"),
        if total == 1 { "remains" } else { "remain" }
    );
    text.push_str(&format!("\n{headline}:"));
    let mut parts = Vec::new();
    if code > 0 {
        parts.push(format!(
            "{code} in code (uses {server} did not see, e.g. through a stub or in another \
             project, or another symbol of that name)"
        ));
    }
    if inactive > 0 {
        parts.push(format!(
            "{inactive} in code the current cfg/features do not compile"
        ));
    }
    if prose > 0 {
        parts.push(format!("{prose} in comments, strings or docstrings"));
    }
    let parts = format!("{}.", parts.join("; "));
    text.push_str(&format!("\n  {parts}"));
    notes.push(format!("{headline}: {parts}"));
    let mut ordered: Vec<&Found> = found.iter().collect();
    ordered.sort_by_key(|f| f.kind);
    if total > REMAINING_CAP {
        let keys: Vec<String> = found.iter().map(|f| workspace.display(&f.path)).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        text.push_str(&format!("\n  Per file: {}.", per_file_counts(&keys)));
    }
    let listed: Vec<Leftover> = ordered
        .into_iter()
        .take(REMAINING_CAP)
        .map(|f| Leftover {
            place: Place::new(workspace, &f.path, f.line, &f.line_text),
            kind: f.kind,
        })
        .collect();
    for item in &listed {
        text.push_str(&format!("\n  {}", item.place));
        match item.kind {
            LeftoverKind::InactiveCode => text.push_str("  (not compiled: cfg/features)"),
            LeftoverKind::CommentOrString => text.push_str("  (comment or string)"),
            LeftoverKind::Code => {}
        }
    }
    if total > listed.len() {
        let more = format!("{} more not listed", total - listed.len());
        text.push_str(&format!("\n  ({more})"));
        notes.push(more);
    }
    (listed, total, code + inactive)
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
}
