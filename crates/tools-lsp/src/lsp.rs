//! `lsp`: read-only questions to the project's language server (LSP-1…5): definitions, types,
//! implementations, references, hover, symbols, code actions, diagnostics, status, reload.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_lsp::lsp_types::request::{
    CodeActionRequest, DocumentSymbolRequest, GotoDefinition, GotoImplementation,
    GotoTypeDefinition, HoverRequest, References, WorkspaceSymbolRequest,
};
use async_lsp::lsp_types::{
    CodeActionContext, CodeActionOrCommand, CodeActionParams, CodeActionTriggerKind, Diagnostic,
    DiagnosticSeverity, DocumentSymbol, DocumentSymbolParams, DocumentSymbolResponse,
    GotoDefinitionParams, GotoDefinitionResponse, HoverParams, OneOf, PartialResultParams,
    ReferenceContext, ReferenceParams, TextDocumentIdentifier, TextDocumentPositionParams, Url,
    WorkDoneProgressParams, WorkspaceSymbolParams, WorkspaceSymbolResponse,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, Tier, Tool, ToolError, ToolOutput, Workspace};

use crate::position::{Target, lines};
use crate::render::read_text;
use crate::render::{
    Place, Quoter, capped_note, code_text, hover_text, kind_name, one_line, plural, severity_name,
};
use crate::select::{
    Page, Rank, outline_indices, outline_ranks, page_indices, page_note, per_file_counts,
};
use crate::servers::Pull;
use crate::supervisor::{LspSupervisor, Opened, ServerReport};

/// Caps of LSP-5.
const REFERENCES_CAP: usize = 50;
const WORKSPACE_SYMBOLS_CAP: usize = 100;
const DOCUMENT_SYMBOLS_CAP: usize = 200;
/// How many findings `diagnostics "*"` lists (the rest are counted per file).
const CHECKER_CAP: usize = 100;
/// How many diagnostics of one file are listed.
const FILE_DIAGNOSTICS_CAP: usize = 100;

/// How long `diagnostics` waits for a publish about a file it just sent, and how long it
/// then waits for a follow-up (servers often publish a quick result, then a full one).
const PUBLISH_WAIT: Duration = Duration::from_secs(20);
const PUBLISH_SETTLE: Duration = Duration::from_millis(400);
/// How long `code_actions` waits for a fresh file's diagnostics (its quick fixes need them).
const ACTIONS_DIAGNOSTICS_WAIT: Duration = Duration::from_secs(5);

/// Ask the project's language server about code: where a symbol is defined, its type, its
/// implementations and uses, its signature and docs, a file's outline, a workspace symbol
/// search, the quick fixes on offer, and errors and warnings.
///
/// Point at code with a 1-based `line` and the `symbol` text on that line (an identifier as it
/// is written there, e.g. `parse_config` or `Config::load`; qualified text aims at its last
/// segment) — never a column. If the symbol occurs several times on the line, the answer says
/// which occurrence was used; pass `occurrence` to pick another.
///
/// Operations:
/// - `definition`, `type_definition`, `implementation`, `references`, `hover`,
///   `code_actions`: need `file`, `line` and `symbol`. A listed code action is applied with
///   the `lsp_code_action` tool.
/// - `symbols`: with `query`, searches the whole workspace (exact name matches first, the
///   workspace's files before dependencies); with `file`, lists that file's outline (its
///   top-level items and their members first); with both, the symbols of that file whose
///   name contains `query`.
/// - `diagnostics`: with a `file`, its errors and warnings now; with `file: "*"`, runs the
///   project checker (cargo check, basedpyright, tsc, go vet, dart analyze) on the project;
///   `file: "src/parser/*"` keeps the findings under that folder, `severity: "error"` keeps
///   errors only.
///
/// Long lists (`references`, `symbols`, `diagnostics "*"`) start with a count per file of
/// everything found, then list a page: `max_results` (up to 1000) and `offset` page through
/// them.
/// - `status`: which servers can run here, for which roots, and why the others cannot.
/// - `reload`: restarts the server of `file` (or every running server) after a project
///   change the server did not pick up.
///
/// Results are `path:LINE: text` lines, paths relative to the workspace root. A server starts
/// on the first call that needs it; that call may wait while the project is indexed.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspInput {
    /// What to ask: definition, type_definition, implementation, references, hover, symbols,
    /// code_actions, diagnostics, status or reload.
    pub operation: Operation,
    /// The source file, relative to the workspace root. With `diagnostics`, `"*"` runs the
    /// project checker, and a folder prefix ending in `*` (`src/parser/*`) runs it and lists
    /// only the findings in files under that prefix.
    #[serde(default)]
    pub file: Option<String>,
    /// The 1-based line of `symbol` in `file`.
    #[serde(default)]
    pub line: Option<u32>,
    /// The identifier on that line to ask about, copied from the line.
    #[serde(default)]
    pub symbol: Option<String>,
    /// Which occurrence of `symbol` on the line, when it occurs more than once (1-based;
    /// default 1).
    #[serde(default)]
    pub occurrence: Option<u32>,
    /// For `symbols`: a name, or part of one, to search the workspace for (with `file`:
    /// to look for in that file's symbols).
    #[serde(default)]
    pub query: Option<String>,
    /// For `references`, `symbols` and `diagnostics` with `"*"`: how many to list (defaults
    /// 50, 100 for a symbol search, 200 for a file's symbols; at most 1000).
    #[serde(default)]
    pub max_results: Option<u32>,
    /// For the same lists: where the listed page starts (0-based), to page through a long
    /// list in path order; the answer says which `offset` shows the next page.
    #[serde(default)]
    pub offset: Option<u32>,
    /// For `diagnostics` with `"*"`: `error` lists errors only, `warning` warnings only.
    #[serde(default)]
    pub severity: Option<SeverityFilter>,
}

/// Which findings of the project checker to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SeverityFilter {
    Error,
    Warning,
}

/// The operations of `lsp` (LSP-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Diagnostics,
    Definition,
    TypeDefinition,
    Implementation,
    References,
    Hover,
    Symbols,
    CodeActions,
    Status,
    Reload,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Diagnostics => "diagnostics",
            Operation::Definition => "definition",
            Operation::TypeDefinition => "type_definition",
            Operation::Implementation => "implementation",
            Operation::References => "references",
            Operation::Hover => "hover",
            Operation::Symbols => "symbols",
            Operation::CodeActions => "code_actions",
            Operation::Status => "status",
            Operation::Reload => "reload",
        }
    }
}

/// The answer; which fields are filled depends on the operation.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LspOutput {
    /// The operation that ran.
    pub operation: Operation,
    /// The server that answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Places found: definitions, type definitions, implementations or references.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<Place>,
    /// How many there were before capping (references, symbols, diagnostics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    /// Hover text (signature and docs), as markdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hover: Option<String>,
    /// Symbols of a file or of a workspace search.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<SymbolItem>,
    /// Errors and warnings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<DiagnosticItem>,
    /// Code actions on offer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<ActionItem>,
    /// Every server, for `status`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerReport>,
    /// Notes: which occurrence was used, capping, a server still indexing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl LspOutput {
    fn new(operation: Operation) -> Self {
        LspOutput {
            operation,
            server: None,
            locations: Vec::new(),
            total: None,
            hover: None,
            symbols: Vec::new(),
            diagnostics: Vec::new(),
            actions: Vec::new(),
            servers: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// One symbol.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SymbolItem {
    pub name: String,
    /// `function`, `struct`, `class`, `method`, …
    pub kind: String,
    pub path: String,
    /// 1-based line of its name.
    pub line: u32,
    /// Nesting depth in a file's outline (0 at the top).
    pub depth: usize,
    /// Whether it is in the workspace's own code (not a dependency).
    pub in_workspace: bool,
}

/// One diagnostic or checker finding.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DiagnosticItem {
    /// The file, workspace-relative; empty for findings about the whole project.
    pub path: String,
    /// 1-based line, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// `error` or `warning` (checkers may add `info` and `note`).
    pub severity: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub message: String,
}

/// One code action.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ActionItem {
    pub title: String,
    /// `quickfix`, `refactor.extract`, … when the server says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Whether the server marks it as the preferred fix.
    pub preferred: bool,
    /// Why it cannot be applied here, when the server offers it disabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled: Option<String>,
}

/// The `lsp` tool, bound to the run's supervisor.
pub struct Lsp {
    supervisor: LspSupervisor,
}

impl Lsp {
    /// `lsp` over `supervisor`.
    pub fn new(supervisor: LspSupervisor) -> Self {
        Lsp { supervisor }
    }
}

type Answer = Result<ToolOutput<LspOutput>, ToolError>;

impl Tool for Lsp {
    type Input = LspInput;
    type Output = LspOutput;
    const NAME: &'static str = "lsp";
    const TITLE: &'static str = "Ask the language server";
    const TIER: Tier = Tier::Read;

    /// A project check (`diagnostics` over `*` or a folder prefix) runs the whole checker.
    fn may_run_long(&self, input: &LspInput) -> bool {
        input.operation == Operation::Diagnostics
            && input
                .file
                .as_deref()
                .is_some_and(|file| file.trim().ends_with('*'))
    }

    async fn call(&self, context: CallContext, input: LspInput) -> Answer {
        let workspace = context.workspace();
        match input.operation {
            Operation::Definition
            | Operation::TypeDefinition
            | Operation::Implementation
            | Operation::References => self.navigate(workspace, &input).await,
            Operation::Hover => self.hover(workspace, &input).await,
            Operation::CodeActions => self.code_actions(workspace, &input).await,
            Operation::Symbols => match (
                input
                    .query
                    .as_deref()
                    .map(str::trim)
                    .filter(|q| !q.is_empty()),
                input.file.as_deref().filter(|f| !f.trim().is_empty()),
            ) {
                (Some(query), None) => self.workspace_symbols(workspace, &input, query).await,
                (query, Some(file)) => self.document_symbols(workspace, &input, file, query).await,
                _ => Err(ToolError::failed(
                    "`symbols` needs `query` (a name to search the workspace for) or `file` \
                     (to list that file's symbols)",
                )),
            },
            Operation::Diagnostics => match input.file.as_deref().map(str::trim) {
                Some(pattern) if pattern.ends_with('*') => {
                    self.check_project(workspace, &input, pattern.trim_end_matches('*'))
                        .await
                }
                Some(file) if !file.is_empty() => self.file_diagnostics(workspace, file).await,
                _ => Err(ToolError::failed(
                    "`diagnostics` needs `file`: a source file for its errors and warnings, or \
                     \"*\" to run the project checker",
                )),
            },
            Operation::Status => self.status().await,
            Operation::Reload => self.reload(workspace, &input).await,
        }
    }
}

/// A position request: the opened file, the target, and the LSP position.
struct Pointed {
    opened: Opened,
    target: Target,
    symbol: String,
    position: TextDocumentPositionParams,
}

impl Pointed {
    fn here(&self) -> String {
        format!("{}:{}", self.opened.shown, self.target.line + 1)
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = self.opened.notes.clone();
        notes.extend(self.target.note(&self.symbol));
        notes
    }
}

impl Lsp {
    /// Resolves `file` + `line` + `symbol` for a navigation operation (LSP-3/4).
    async fn point(&self, workspace: &Workspace, input: &LspInput) -> Result<Pointed, ToolError> {
        let operation = input.operation.name();
        let file = input
            .file
            .as_deref()
            .filter(|f| !f.trim().is_empty())
            .ok_or_else(|| {
                ToolError::failed(format!(
                    "`{operation}` needs `file`, `line` and `symbol`: the file, the 1-based line, \
                 and the identifier on that line"
                ))
            })?;
        let line = input.line.ok_or_else(|| {
            ToolError::failed(format!(
                "`{operation}` needs `line`: the 1-based line in {file} where `symbol` occurs"
            ))
        })?;
        let symbol = input
            .symbol
            .as_deref()
            .ok_or_else(|| {
                // LSP-4: no guessing a column; quote the line so the model can pick the name.
                let quoted = workspace
                    .resolve(file)
                    .ok()
                    .and_then(|path| tools_core::read_regular(&path).ok())
                    .and_then(|bytes| String::from_utf8(bytes).ok())
                    .and_then(|text| {
                        lines(&text)
                            .get((line as usize).wrapping_sub(1))
                            .map(|l| l.trim().to_owned())
                    });
                let mut message = format!(
                    "`{operation}` needs `symbol`: the identifier on line {line} of {file} to \
                     ask about"
                );
                if let Some(quoted) = quoted {
                    message.push_str(&format!("; the line is `{quoted}`"));
                }
                ToolError::failed(message)
            })?
            .to_owned();
        let (opened, target, position) = self
            .supervisor
            .open_at(workspace, file, line, &symbol, input.occurrence)
            .await?;
        Ok(Pointed {
            opened,
            target,
            symbol,
            position,
        })
    }

    async fn navigate(&self, workspace: &Workspace, input: &LspInput) -> Answer {
        let pointed = self.point(workspace, input).await?;
        let session = &pointed.opened.session;
        let goto = GotoDefinitionParams {
            text_document_position_params: pointed.position.clone(),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        };
        let operation = input.operation;
        // A symbol an implementation declares and a stub shadows: its uses resolve to the
        // stub, so references are asked from there too, and the answer says so.
        let stub = match operation {
            Operation::References | Operation::Definition => {
                crate::stubs::stub_declaration(session, &pointed.position).await
            }
            _ => None,
        };
        let mut found: Vec<(Url, u32)> = match operation {
            Operation::Definition => targets(session.request::<GotoDefinition>(goto).await?),
            Operation::TypeDefinition => {
                targets(session.request::<GotoTypeDefinition>(goto).await?)
            }
            Operation::Implementation => {
                targets(session.request::<GotoImplementation>(goto).await?)
            }
            _ => session
                .request::<References>(ReferenceParams {
                    text_document_position: pointed.position.clone(),
                    work_done_progress_params: WorkDoneProgressParams::default(),
                    partial_result_params: PartialResultParams::default(),
                    context: ReferenceContext {
                        include_declaration: true,
                    },
                })
                .await?
                .unwrap_or_default()
                .into_iter()
                .map(|location| (location.uri, location.range.start.line))
                .collect(),
        };
        let mut stub_note = None;
        if let Some(stub) = &stub {
            let shown = workspace.display(&stub.path);
            let line = stub.position.position.line;
            match operation {
                Operation::References => {
                    let through_stub = session
                        .request::<References>(ReferenceParams {
                            text_document_position: stub.position.clone(),
                            work_done_progress_params: WorkDoneProgressParams::default(),
                            partial_result_params: PartialResultParams::default(),
                            context: ReferenceContext {
                                include_declaration: true,
                            },
                        })
                        .await?
                        .unwrap_or_default();
                    found = union_of_uses(
                        std::mem::take(&mut found),
                        through_stub
                            .into_iter()
                            .map(|location| (location.uri, location.range.start.line))
                            .collect(),
                    );
                    stub_note = Some(format!(
                        "a stub declares `{}` ({shown}:{}): uses that resolve to the stub and \
                         to the implementation are both listed",
                        pointed.target.aimed,
                        line + 1
                    ));
                }
                _ => {
                    if let Ok(uri) = Url::from_file_path(&stub.path)
                        && !found.iter().any(|(u, _)| *u == uri)
                    {
                        found.push((uri, line));
                    }
                    stub_note = Some(format!(
                        "a stub declares `{}` too ({shown}:{}): callers outside its module \
                         see the stub's signature",
                        pointed.target.aimed,
                        line + 1
                    ));
                }
            }
        }
        let mut quoter = Quoter::new(workspace);
        quoter.know(
            &pointed.opened.path,
            Arc::clone(&pointed.opened.synced.text),
        );
        let mut places: Vec<Place> = found
            .iter()
            .map(|(uri, line)| quoter.place(uri, *line))
            .collect();
        if operation == Operation::References {
            // Files in path order, lines in order: easier to read than the server's order.
            // Two uses on one line stay two entries: the count is of uses, not lines.
            places.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
        } else {
            // rust-analyzer lists implementations in no fixed order: read them in path and
            // line order, so the same question gets the same answer.
            if operation == Operation::Implementation {
                places.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
            }
            // Some servers report one declaration twice (through a re-export, say).
            places.dedup();
        }
        let total = places.len();
        let page = match operation {
            Operation::References => Page::new(input.max_results, input.offset, REFERENCES_CAP)
                .map_err(ToolError::failed)?,
            _ => Page::new(None, None, WORKSPACE_SYMBOLS_CAP).map_err(ToolError::failed)?,
        };
        let keys: Vec<&str> = places.iter().map(|p| p.path.as_str()).collect();
        let files = keys.iter().collect::<std::collections::BTreeSet<_>>().len();
        let counts = (operation == Operation::References && files > 1 && total > page.max)
            .then(|| per_file_counts(&keys));
        let chosen = page_indices(&keys, page);
        let spread = !page.paging && total > page.max;
        let places: Vec<Place> = chosen.into_iter().map(|i| places[i].clone()).collect();
        let aimed = &pointed.target.aimed;
        let server = session.spec.name.clone();
        let (noun, empty) = match operation {
            Operation::Definition => ("definition", "no definition"),
            Operation::TypeDefinition => ("type definition", "no type definition"),
            Operation::Implementation => ("implementation", "no implementation"),
            _ => ("reference", "no references"),
        };
        let mut text = match total {
            0 => format!(
                "{server} found {empty} for `{aimed}` at {}.",
                pointed.here()
            ),
            n => format!(
                "{} {} `{aimed}` ({}):",
                capitalise(&plural(n, noun)),
                if operation == Operation::References {
                    "to"
                } else {
                    "of"
                },
                pointed.here()
            ),
        };
        if let Some(counts) = counts {
            text.push_str(&format!("\nPer file: {counts}."));
        }
        for place in &places {
            text.push('\n');
            text.push_str(&place.render());
        }
        let mut notes = pointed.notes();
        notes.extend(stub_note);
        notes.extend(page_note(places.len(), total, page, spread && files > 1));
        if operation == Operation::References {
            notes.extend(project_view_note(session));
        }
        append_notes(&mut text, &notes);
        let mut output = LspOutput::new(operation);
        output.server = Some(server);
        output.locations = places;
        output.total = (operation == Operation::References).then_some(total);
        output.notes = notes;
        Ok(ToolOutput::new(text, output))
    }

    async fn hover(&self, workspace: &Workspace, input: &LspInput) -> Answer {
        let pointed = self.point(workspace, input).await?;
        let session = &pointed.opened.session;
        let hover = session
            .request::<HoverRequest>(HoverParams {
                text_document_position_params: pointed.position.clone(),
                work_done_progress_params: WorkDoneProgressParams::default(),
            })
            .await?;
        let contents = hover
            .map(|h| hover_text(h.contents))
            .filter(|t| !t.is_empty());
        let aimed = &pointed.target.aimed;
        let mut text = match &contents {
            Some(contents) => format!("`{aimed}` at {}:\n{contents}", pointed.here()),
            None => format!(
                "{} has no hover information for `{aimed}` at {}.",
                session.spec.name,
                pointed.here()
            ),
        };
        let notes = pointed.notes();
        append_notes(&mut text, &notes);
        let mut output = LspOutput::new(Operation::Hover);
        output.server = Some(session.spec.name.clone());
        output.hover = contents;
        output.notes = notes;
        Ok(ToolOutput::new(text, output))
    }

    async fn code_actions(&self, workspace: &Workspace, input: &LspInput) -> Answer {
        let pointed = self.point(workspace, input).await?;
        let session = &pointed.opened.session;
        let answer = actions_at(&pointed.opened, &pointed.target).await?;
        let actions: Vec<ActionItem> = answer
            .into_iter()
            .map(|action| match action {
                CodeActionOrCommand::Command(command) => ActionItem {
                    title: command.title,
                    kind: None,
                    preferred: false,
                    disabled: None,
                },
                CodeActionOrCommand::CodeAction(action) => ActionItem {
                    title: action.title,
                    kind: action.kind.map(|kind| kind.as_str().to_owned()),
                    preferred: action.is_preferred.unwrap_or(false),
                    disabled: action.disabled.map(|d| d.reason),
                },
            })
            .collect();
        let aimed = &pointed.target.aimed;
        let mut text = match actions.len() {
            0 => format!(
                "{} offers no code actions at `{aimed}` ({}).",
                session.spec.name,
                pointed.here()
            ),
            n => format!(
                "{} at `{aimed}` ({}):",
                capitalise(&plural(n, "code action")),
                pointed.here()
            ),
        };
        for (index, action) in actions.iter().enumerate() {
            let mut tags = Vec::new();
            tags.extend(action.kind.clone().filter(|k| !k.is_empty()));
            if action.preferred {
                tags.push("preferred".into());
            }
            if let Some(reason) = &action.disabled {
                tags.push(format!("disabled: {reason}"));
            }
            text.push_str(&format!("\n{}. {}", index + 1, action.title));
            if !tags.is_empty() {
                text.push_str(&format!(" ({})", tags.join(", ")));
            }
        }
        if actions.iter().any(|a| a.disabled.is_none()) {
            text.push_str(
                "\nApply one with the `lsp_code_action` tool: the same file, line and symbol, \
                 and its title.",
            );
        }
        let notes = pointed.notes();
        append_notes(&mut text, &notes);
        let mut output = LspOutput::new(Operation::CodeActions);
        output.server = Some(session.spec.name.clone());
        output.actions = actions;
        output.notes = notes;
        Ok(ToolOutput::new(text, output))
    }

    async fn document_symbols(
        &self,
        workspace: &Workspace,
        input: &LspInput,
        file: &str,
        query: Option<&str>,
    ) -> Answer {
        let page = Page::new(input.max_results, input.offset, DOCUMENT_SYMBOLS_CAP)
            .map_err(ToolError::failed)?;
        let opened = self.supervisor.open(workspace, file).await?;
        let session = &opened.session;
        let answer = session
            .request::<DocumentSymbolRequest>(DocumentSymbolParams {
                text_document: TextDocumentIdentifier {
                    uri: opened.synced.uri.clone(),
                },
                work_done_progress_params: WorkDoneProgressParams::default(),
                partial_result_params: PartialResultParams::default(),
            })
            .await?;
        let mut symbols = Vec::new();
        match answer {
            Some(DocumentSymbolResponse::Nested(tree)) => {
                flatten(&tree, 0, &opened.shown, &mut symbols);
            }
            Some(DocumentSymbolResponse::Flat(list)) => {
                for symbol in list {
                    symbols.push(SymbolItem {
                        name: symbol.name,
                        kind: kind_name(symbol.kind).to_owned(),
                        path: opened.shown.clone(),
                        line: symbol.location.range.start.line + 1,
                        depth: usize::from(symbol.container_name.is_some_and(|c| !c.is_empty())),
                        in_workspace: true,
                    });
                }
            }
            None => {}
        }
        let ranks = outline_ranks(
            &symbols
                .iter()
                .map(|s| {
                    let function_like =
                        matches!(s.kind.as_str(), "function" | "method" | "constructor");
                    (s.depth, function_like)
                })
                .collect::<Vec<_>>(),
        );
        let mut ranked: Vec<(SymbolItem, Rank)> = symbols.into_iter().zip(ranks).collect();
        if let Some(query) = query {
            // Both given: the symbols of that file whose name contains the query, exact
            // names first, shown flat.
            let lower = query.to_lowercase();
            ranked.retain(|(s, _)| s.name.to_lowercase().contains(&lower));
            ranked.sort_by_key(|(s, _)| (s.name != query, s.name.to_lowercase() != lower, s.line));
            for (symbol, _) in &mut ranked {
                symbol.depth = 0;
            }
        }
        let total = ranked.len();
        let locals = ranked.iter().filter(|(_, r)| *r == Rank::Local).count();
        let chosen: Vec<usize> = match (page.paging, query) {
            (false, None) => outline_indices(
                &ranked.iter().map(|(_, r)| *r).collect::<Vec<_>>(),
                page.max,
            ),
            _ => (page.offset.min(total)..total).take(page.max).collect(),
        };
        let shown_locals = chosen
            .iter()
            .filter(|&&i| ranked[i].1 == Rank::Local)
            .count();
        let symbols: Vec<SymbolItem> = chosen.iter().map(|&i| ranked[i].0.clone()).collect();
        let mut text = match (total, query) {
            (0, Some(query)) => format!(
                "{} lists no symbols matching `{query}` in {}.",
                session.spec.name, opened.shown
            ),
            (0, None) => format!(
                "{} lists no symbols in {}.",
                session.spec.name, opened.shown
            ),
            (n, Some(query)) => format!(
                "{} matching `{query}` in {}:",
                capitalise(&plural(n, "symbol")),
                opened.shown
            ),
            (n, None) => format!("{} in {}:", capitalise(&plural(n, "symbol")), opened.shown),
        };
        for symbol in &symbols {
            text.push_str(&format!(
                "\n{}{} {} (line {})",
                "  ".repeat(symbol.depth),
                symbol.kind,
                symbol.name,
                symbol.line
            ));
        }
        let mut notes = opened.notes.clone();
        if !page.paging && query.is_none() && symbols.len() < total {
            notes.push(format!(
                "(showing {} of {total}: every top-level item and member{}; {} locals and \
                 parameters of functions left out — `offset` pages through all of them in \
                 order)",
                symbols.len(),
                match shown_locals {
                    0 => String::new(),
                    n => format!(" and {n} locals"),
                },
                locals - shown_locals
            ));
        } else {
            notes.extend(page_note(symbols.len(), total, page, false));
        }
        append_notes(&mut text, &notes);
        let mut output = LspOutput::new(Operation::Symbols);
        output.server = Some(session.spec.name.clone());
        output.symbols = symbols;
        output.total = Some(total);
        output.notes = notes;
        Ok(ToolOutput::new(text, output))
    }

    async fn workspace_symbols(
        &self,
        workspace: &Workspace,
        input: &LspInput,
        query: &str,
    ) -> Answer {
        let page = Page::new(input.max_results, input.offset, WORKSPACE_SYMBOLS_CAP)
            .map_err(ToolError::failed)?;
        // The servers to ask: every usable one in the workspace.
        let mut sessions = Vec::new();
        let mut notes = Vec::new();
        let mut problems = Vec::new();
        {
            {
                let context = self.supervisor.context();
                for spec in &context.servers {
                    let roots = crate::discovery::scan_roots(spec, &context.workspace_root);
                    let Some(root) = roots.first() else {
                        continue;
                    };
                    // Some servers (tsserver) have no project until a file of it is open.
                    let Some(file) = any_source(spec, root) else {
                        continue;
                    };
                    let shown = workspace.display(&file);
                    match self.supervisor.open(workspace, &shown).await {
                        Ok(opened) => {
                            notes.extend(opened.notes.clone());
                            sessions.push(opened.session);
                        }
                        Err(error) => problems.push(format!("{}: {error}", spec.name)),
                    }
                }
                if sessions.is_empty() {
                    let mut message = "no language server can run in this workspace to search \
                                       symbols"
                        .to_owned();
                    if !problems.is_empty() {
                        message.push_str(&format!(" ({})", problems.join("; ")));
                    }
                    message.push_str("; call `lsp` with operation `status` to see why");
                    return Err(ToolError::failed(message));
                }
            }
        }
        let mut quoter = Quoter::new(workspace);
        let mut own = Vec::new();
        let mut dependencies = Vec::new();
        let mut servers = Vec::new();
        for session in &sessions {
            servers.push(session.spec.name.clone());
            let answer = session
                .request::<WorkspaceSymbolRequest>(WorkspaceSymbolParams {
                    query: query.to_owned(),
                    work_done_progress_params: WorkDoneProgressParams::default(),
                    partial_result_params: PartialResultParams::default(),
                })
                .await?;
            let found: Vec<(String, String, Url, u32)> = match answer {
                Some(WorkspaceSymbolResponse::Flat(list)) => list
                    .into_iter()
                    .map(|s| {
                        (
                            s.name,
                            kind_name(s.kind).to_owned(),
                            s.location.uri,
                            s.location.range.start.line,
                        )
                    })
                    .collect(),
                Some(WorkspaceSymbolResponse::Nested(list)) => list
                    .into_iter()
                    .map(|s| {
                        let (uri, line) = match s.location {
                            OneOf::Left(location) => (location.uri, location.range.start.line),
                            OneOf::Right(location) => (location.uri, 0),
                        };
                        (s.name, kind_name(s.kind).to_owned(), uri, line)
                    })
                    .collect(),
                None => Vec::new(),
            };
            for (name, kind, uri, line) in found {
                let in_workspace = quoter.is_own(&uri);
                let place = quoter.place(&uri, line);
                let item = SymbolItem {
                    name,
                    kind,
                    path: place.path,
                    line: place.line,
                    depth: 0,
                    in_workspace,
                };
                match in_workspace {
                    true => own.push(item),
                    false => dependencies.push(item),
                }
            }
        }
        // An exact name first, then the same name in another case, then the server's order.
        let rank = |item: &SymbolItem| (item.name != query, !item.name.eq_ignore_ascii_case(query));
        own.sort_by_key(rank);
        dependencies.sort_by_key(rank);
        let own_count = own.len();
        let mut symbols = own;
        symbols.extend(dependencies);
        let total = symbols.len();
        let start = page.offset.min(total);
        let symbols: Vec<SymbolItem> = symbols.into_iter().skip(start).take(page.max).collect();
        let mut text = match total {
            0 => format!(
                "{} found no symbols matching `{query}`.",
                servers.join(", ")
            ),
            n => format!(
                "{} matching `{query}` ({own_count} in the workspace, {} in dependencies):",
                capitalise(&plural(n, "symbol")),
                n - own_count
            ),
        };
        let mut heading_done = false;
        for symbol in &symbols {
            if !symbol.in_workspace && !heading_done {
                text.push_str("\ndependencies:");
                heading_done = true;
            }
            text.push_str(&format!(
                "\n{} {} — {}:{}",
                symbol.kind, symbol.name, symbol.path, symbol.line
            ));
        }
        notes.extend(page_note(symbols.len(), total, page, false));
        for session in &sessions {
            notes.extend(project_view_note(session));
        }
        append_notes(&mut text, &notes);
        let mut output = LspOutput::new(Operation::Symbols);
        output.server = Some(servers.join(", "));
        output.symbols = symbols;
        output.total = Some(total);
        output.notes = notes;
        Ok(ToolOutput::new(text, output))
    }

    async fn file_diagnostics(&self, workspace: &Workspace, file: &str) -> Answer {
        let opened = self.supervisor.open(workspace, file).await?;
        let session = &opened.session;
        let mut notes = opened.notes.clone();
        let wait = PUBLISH_WAIT.min(self.supervisor.context().config.request_timeout());
        let (diagnostics, note) = current_diagnostics(&opened, wait).await;
        notes.extend(note);
        let diagnostics = crate::render::merge_passes(diagnostics);
        let mut items = Vec::new();
        let mut quiet = 0;
        let line_texts = lines(&opened.synced.text);
        let mut quoted = Vec::new();
        for diagnostic in diagnostics {
            let severity = diagnostic.severity;
            if matches!(
                severity,
                Some(DiagnosticSeverity::INFORMATION) | Some(DiagnosticSeverity::HINT)
            ) {
                quiet += 1;
                continue;
            }
            let line = diagnostic.range.start.line;
            quoted.push(
                line_texts
                    .get(line as usize)
                    .map(|l| crate::render::quote(l))
                    .unwrap_or_default(),
            );
            items.push(DiagnosticItem {
                path: opened.shown.clone(),
                line: Some(line + 1),
                severity: severity_name(severity).to_owned(),
                code: code_text(diagnostic.code.as_ref()),
                message: one_line(&diagnostic.message),
            });
        }
        // Errors before warnings, each in line order.
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| (items[i].severity != "error", items[i].line));
        let items: Vec<DiagnosticItem> = order.iter().map(|&i| items[i].clone()).collect();
        let quoted: Vec<String> = order.iter().map(|&i| quoted[i].clone()).collect();
        let total = items.len();
        let errors = items.iter().filter(|i| i.severity == "error").count();
        let mut text = match total {
            0 => format!(
                "{}: no errors or warnings ({}).",
                opened.shown, session.spec.name
            ),
            _ => format!(
                "{}: {} and {} ({}):",
                opened.shown,
                plural(errors, "error"),
                plural(total - errors, "warning"),
                session.spec.name
            ),
        };
        for (item, line) in items.iter().zip(&quoted).take(FILE_DIAGNOSTICS_CAP) {
            text.push('\n');
            text.push_str(&render_diagnostic(item));
            if !line.is_empty() {
                text.push_str(&format!("\n    {line}"));
            }
        }
        if quiet > 0 {
            notes.push(format!("{} not shown", plural(quiet, "hint or info")));
        }
        notes.extend(capped_note(total.min(FILE_DIAGNOSTICS_CAP), total));
        append_notes(&mut text, &notes);
        let mut output = LspOutput::new(Operation::Diagnostics);
        output.server = Some(session.spec.name.clone());
        output.total = Some(total);
        output.diagnostics = items.into_iter().take(FILE_DIAGNOSTICS_CAP).collect();
        output.notes = notes;
        Ok(ToolOutput::new(text, output))
    }

    async fn check_project(&self, workspace: &Workspace, input: &LspInput, prefix: &str) -> Answer {
        let page =
            Page::new(input.max_results, input.offset, CHECKER_CAP).map_err(ToolError::failed)?;
        let prefix = prefix.trim_start_matches("./");
        let context = self.supervisor.context();
        let mut runs = Vec::new();
        let mut skipped = Vec::new();
        for spec in &context.servers {
            let roots = crate::discovery::scan_roots(spec, &context.workspace_root);
            if roots.is_empty() {
                continue;
            }
            if spec.checker.is_none() {
                skipped.push(format!(
                    "{} has no project checker; ask `diagnostics` per file for its files",
                    spec.name
                ));
                continue;
            }
            for root in roots.iter().take(5) {
                let search = context.search_path(Some(root));
                let timeout = context.config.checker_timeout();
                let what = format!(
                    "running the project checker of {} in {}",
                    spec.name,
                    context.shown(root)
                );
                match with_progress(&what, crate::checker::run(spec, root, &search, timeout)).await
                {
                    Ok(run) => runs.push((root.clone(), run)),
                    Err(problem) => skipped.push(problem),
                }
            }
        }
        if runs.is_empty() {
            let mut message = "no project checker could run here".to_owned();
            match skipped.is_empty() {
                true => message.push_str(
                    ": no server's root marker was found in the workspace; call `lsp` with \
                     operation `status` to see each server's markers",
                ),
                false => message.push_str(&format!(": {}", skipped.join("; "))),
            }
            return Err(ToolError::failed(message));
        }
        // A file belongs to its innermost root: a run of an outer root does not count the
        // files of a nested root that has its own run (a monorepo's packages).
        let ran: Vec<PathBuf> = runs.iter().map(|(root, _)| root.clone()).collect();
        for (root, run) in &mut runs {
            run.findings.retain(|finding| {
                finding.path.as_ref().is_none_or(|path| {
                    !ran.iter().any(|inner| {
                        inner != root && inner.starts_with(&*root) && path.starts_with(inner)
                    })
                })
            });
        }
        let mut all: Vec<(String, DiagnosticItem, String)> = Vec::new();
        let mut quoter = Quoter::new(workspace);
        let mut headers = Vec::new();
        for (root, run) in &runs {
            let root = context.shown(root);
            let errors = run
                .findings
                .iter()
                .filter(|f| f.severity == "error")
                .count();
            let warnings = run
                .findings
                .iter()
                .filter(|f| f.severity == "warning")
                .count();
            let scope = run
                .scope
                .as_ref()
                .map(|scope| format!("; {scope}"))
                .unwrap_or_default();
            headers.push(format!(
                "`{}` (root {root}{scope}): {} and {}",
                run.command,
                plural(errors, "error"),
                plural(warnings, "warning")
            ));
            for finding in &run.findings {
                if !matches!(finding.severity.as_str(), "error" | "warning") {
                    continue;
                }
                let (path, quoted) = match (&finding.path, finding.line) {
                    (Some(path), Some(line)) => {
                        let place = quoter.place_in(path, line.saturating_sub(1));
                        (place.path, place.text)
                    }
                    (Some(path), None) => (workspace.display(path), String::new()),
                    (None, _) => (String::new(), String::new()),
                };
                all.push((
                    root.clone(),
                    DiagnosticItem {
                        path,
                        line: finding.line,
                        severity: finding.severity.clone(),
                        code: finding.code.clone(),
                        message: one_line(&finding.message),
                    },
                    quoted,
                ));
            }
        }
        // The filters: a path prefix and a severity.
        let before_filters = all.len();
        all.retain(|(_, item, _)| {
            item.path.starts_with(prefix)
                && match input.severity {
                    Some(SeverityFilter::Error) => item.severity == "error",
                    Some(SeverityFilter::Warning) => item.severity == "warning",
                    None => true,
                }
        });
        let filtered = all.len() < before_filters || !prefix.is_empty();
        all.sort_by(|a, b| {
            (a.1.severity != "error", &a.1.path, a.1.line).cmp(&(
                b.1.severity != "error",
                &b.1.path,
                b.1.line,
            ))
        });
        let total = all.len();
        let mut text = headers.join("\n");
        if filtered {
            let what = match input.severity {
                Some(SeverityFilter::Error) => "error",
                Some(SeverityFilter::Warning) => "warning",
                None => "finding",
            };
            let place = match prefix.is_empty() {
                true => "in the project".to_owned(),
                false => format!("under {prefix}"),
            };
            text.push_str(&format!("\nListing {} {place}:", plural(total, what)));
        }
        let keys: Vec<&str> = all.iter().map(|(_, item, _)| item.path.as_str()).collect();
        let files = keys.iter().collect::<std::collections::BTreeSet<_>>().len();
        if total > page.max && files > 1 {
            text.push_str(&format!("\nPer file: {}.", per_file_counts(&keys)));
        }
        let chosen = page_indices(&keys, page);
        let spread = !page.paging && total > page.max && files > 1;
        for &index in &chosen {
            let (_, item, quoted) = &all[index];
            text.push('\n');
            text.push_str(&render_diagnostic(item));
            if !quoted.is_empty() {
                text.push_str(&format!("\n    {quoted}"));
            }
        }
        let mut notes = skipped;
        notes.extend(runs.iter().flat_map(|(_, run)| run.notes.iter().cloned()));
        notes.extend(page_note(chosen.len(), total, page, spread));
        append_notes(&mut text, &notes);
        let mut output = LspOutput::new(Operation::Diagnostics);
        output.server = Some(
            runs.iter()
                .map(|(_, run)| run.command.clone())
                .collect::<Vec<_>>()
                .join(", "),
        );
        output.total = Some(total);
        output.diagnostics = chosen.iter().map(|&i| all[i].1.clone()).collect();
        output.notes = notes;
        Ok(ToolOutput::new(text, output))
    }

    async fn status(&self) -> Answer {
        let reports = self.supervisor.status().await?;
        let mut text = String::from("Language servers for this workspace:");
        for report in &reports {
            text.push_str(&format!("\n\n{} ({})", report.server, report.extensions));
            match &report.problem {
                None => text.push_str(&format!(
                    ": usable — root{} {}",
                    if report.roots.len() == 1 { "" } else { "s" },
                    report.roots.join(", ")
                )),
                Some(problem) => text.push_str(&format!(": not usable — {problem}")),
            }
            if let Some(binary) = &report.binary {
                text.push_str(&format!("\n  binary: {binary}"));
                if let Some(version) = &report.version {
                    text.push_str(&format!(" ({version})"));
                }
            }
            for session in &report.sessions {
                text.push_str(&format!("\n  root {}: {}", session.root, session.state));
                if let Some(pid) = session.pid {
                    text.push_str(&format!(", pid {pid}"));
                }
                if let Some(error) = &session.last_error {
                    text.push_str(&format!("\n    last error: {error}"));
                }
                if !session.stderr_tail.is_empty() && session.pid.is_none() {
                    text.push_str("\n    stderr:");
                    for line in &session.stderr_tail {
                        text.push_str(&format!("\n      {line}"));
                    }
                }
            }
        }
        let mut output = LspOutput::new(Operation::Status);
        output.servers = reports;
        Ok(ToolOutput::new(text, output))
    }

    async fn reload(&self, workspace: &Workspace, input: &LspInput) -> Answer {
        let only = match input.file.as_deref().filter(|f| !f.trim().is_empty()) {
            Some(file) => {
                let path = workspace.resolve(file)?;
                let shown = workspace.display(&path);
                let spec = self.supervisor.route(&path, &shown)?;
                let root = self.supervisor.root(&spec, &path, &shown)?;
                Some((spec, root))
            }
            None => None,
        };
        let lines = self.supervisor.reload(only).await?;
        let text = match lines.is_empty() {
            true => "No language server was running; servers start on the next call that needs \
                     them."
                .to_owned(),
            false => lines.join("\n"),
        };
        let mut output = LspOutput::new(Operation::Reload);
        output.notes = lines;
        Ok(ToolOutput::new(text, output))
    }
}

/// The code actions the server offers at `target` in an opened file, asked with the
/// diagnostics on that line (quick fixes hang off them).
pub(crate) async fn actions_at(
    opened: &Opened,
    target: &Target,
) -> crate::Result<Vec<CodeActionOrCommand>> {
    let session = &opened.session;
    let uri = &opened.synced.uri;
    let line = target.line;
    let (diagnostics, _) = current_diagnostics(opened, ACTIONS_DIAGNOSTICS_WAIT).await;
    let diagnostics: Vec<_> = diagnostics
        .into_iter()
        .filter(|d| d.range.start.line <= line && d.range.end.line >= line)
        .collect();
    let line_text = lines(&opened.synced.text)
        .get(line as usize)
        .copied()
        .unwrap_or_default();
    let range = target.range(line_text, session.encoding);
    Ok(session
        .request::<CodeActionRequest>(CodeActionParams {
            text_document: TextDocumentIdentifier { uri: uri.clone() },
            range,
            context: CodeActionContext {
                diagnostics,
                only: None,
                trigger_kind: Some(CodeActionTriggerKind::INVOKED),
            },
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .await?
        .unwrap_or_default())
}

/// A file's diagnostics as the server sees its current text: pulled from servers that answer
/// pulls; otherwise the last publish, after waiting (up to `wait`) for a fresh one when the
/// server had not seen this text before. The note says when no publish came.
async fn current_diagnostics(opened: &Opened, wait: Duration) -> (Vec<Diagnostic>, Option<String>) {
    let session = &opened.session;
    let uri = &opened.synced.uri;
    if let Some(mut diagnostics) = session.pull_diagnostics(uri).await {
        if session.spec.pull == Pull::Analysis {
            // What its last on-save check found comes as publishes.
            diagnostics.extend(
                session
                    .shared
                    .published(uri)
                    .map(|published| published.diagnostics)
                    .unwrap_or_default(),
            );
        }
        return (diagnostics, None);
    }
    let mut note = None;
    if opened.synced.changed || session.shared.published(uri).is_none() {
        if session
            .shared
            .wait_publish(uri, opened.publishes_before, wait)
            .await
        {
            // Several servers publish a quick result first and a full one soon after.
            loop {
                let count = session.shared.publish_count(uri);
                if !session
                    .shared
                    .wait_publish(uri, count, PUBLISH_SETTLE)
                    .await
                {
                    break;
                }
            }
        } else {
            note = Some(format!(
                "{} published no diagnostics for {} within {}s; it may still be analysing",
                session.spec.name,
                opened.shown,
                wait.as_secs()
            ));
        }
    }
    let diagnostics = session
        .shared
        .published(uri)
        .map(|published| published.diagnostics)
        .unwrap_or_default();
    (diagnostics, note)
}

/// One line for an answer that may be incomplete because of how the server sees the project:
/// clangd without a compilation database knows only the files opened in this run; a pyright
/// `include` narrows the project to some folders.
fn project_view_note(session: &crate::session::Session) -> Option<String> {
    let root = &session.root;
    match session.spec.name.as_str() {
        "clangd" => {
            let database = ["compile_commands.json", "build/compile_commands.json"]
                .iter()
                .any(|name| root.join(name).is_file());
            (!database).then(|| {
                "clangd has no compile_commands.json here, so it knows only the files opened \
                 in this run: uses in other files may be missing (generate one, e.g. with \
                 `cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON` or `bear -- make`)"
                    .to_owned()
            })
        }
        "basedpyright" => pyright_include(root).map(|include| {
            format!(
                "basedpyright's `include` ({}) limits the project, so files outside it are \
                 not searched",
                include.join(", ")
            )
        }),
        _ => None,
    }
}

/// The `include` list of a pyright configuration at `root` (pyrightconfig.json, or the
/// `[tool.pyright]`/`[tool.basedpyright]` table of pyproject.toml), when it has one.
fn pyright_include(root: &std::path::Path) -> Option<Vec<String>> {
    let strings = |value: &serde_json::Value| -> Option<Vec<String>> {
        let list: Vec<String> = value
            .as_array()?
            .iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect();
        (!list.is_empty()).then_some(list)
    };
    if let Ok(text) = read_text(&root.join("pyrightconfig.json"))
        && let Ok(config) = serde_json::from_str::<serde_json::Value>(&text)
    {
        return config.get("include").and_then(strings);
    }
    let text = read_text(&root.join("pyproject.toml")).ok()?;
    let mut in_table = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_table = matches!(line, "[tool.pyright]" | "[tool.basedpyright]");
            continue;
        }
        if in_table
            && let Some(value) = line.strip_prefix("include")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            let list: Vec<String> = value
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(',')
                .map(|item| {
                    item.trim()
                        .trim_matches(|c| c == '"' || c == '\'')
                        .to_owned()
                })
                .filter(|item| !item.is_empty())
                .collect();
            return (!list.is_empty()).then_some(list);
        }
    }
    None
}

/// `src/lib.rs:3: error[E0308]: mismatched types`
pub(crate) fn render_diagnostic(item: &DiagnosticItem) -> String {
    let mut text = String::new();
    if !item.path.is_empty() {
        text.push_str(&item.path);
        if let Some(line) = item.line {
            text.push_str(&format!(":{line}"));
        }
        text.push_str(": ");
    }
    text.push_str(&item.severity);
    if let Some(code) = &item.code {
        text.push_str(&format!("[{code}]"));
    }
    text.push_str(": ");
    text.push_str(&item.message);
    text
}

/// Two answers to `references` as one: each use once, where a line has as many uses as the
/// answer with more of them there (two calls on one line stay two), in order of appearance.
fn union_of_uses(first: Vec<(Url, u32)>, second: Vec<(Url, u32)>) -> Vec<(Url, u32)> {
    let mut order: Vec<(Url, u32)> = Vec::new();
    let mut counts: std::collections::HashMap<(Url, u32), [usize; 2]> =
        std::collections::HashMap::new();
    for (index, list) in [first, second].into_iter().enumerate() {
        for key in list {
            let count = counts.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                [0, 0]
            });
            count[index] += 1;
        }
    }
    order
        .into_iter()
        .flat_map(|key| {
            let [a, b] = counts[&key];
            std::iter::repeat_n(key, a.max(b))
        })
        .collect()
}

/// Definition-like answers as (file, line of the name).
fn targets(answer: Option<GotoDefinitionResponse>) -> Vec<(Url, u32)> {
    match answer {
        None => Vec::new(),
        Some(GotoDefinitionResponse::Scalar(location)) => {
            vec![(location.uri, location.range.start.line)]
        }
        Some(GotoDefinitionResponse::Array(locations)) => locations
            .into_iter()
            .map(|location| (location.uri, location.range.start.line))
            .collect(),
        // A link's selection range is the name, not the whole item (its doc comment and
        // attributes would otherwise put the line on `#[derive]`).
        Some(GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .map(|link| (link.target_uri, link.target_selection_range.start.line))
            .collect(),
    }
}

fn flatten(tree: &[DocumentSymbol], depth: usize, shown: &str, out: &mut Vec<SymbolItem>) {
    for symbol in tree {
        out.push(SymbolItem {
            name: symbol.name.clone(),
            kind: kind_name(symbol.kind).to_owned(),
            path: shown.to_owned(),
            line: symbol.selection_range.start.line + 1,
            depth,
            in_workspace: true,
        });
        if let Some(children) = &symbol.children {
            flatten(children, depth + 1, shown, out);
        }
    }
}

/// A source file of `spec` under `root` (breadth first, shallow), to open before a workspace
/// symbol search.
fn any_source(spec: &crate::servers::ServerSpec, root: &std::path::Path) -> Option<PathBuf> {
    let mut queue = std::collections::VecDeque::from([(root.to_path_buf(), 0)]);
    let mut budget = 500;
    while let Some((dir, depth)) = queue.pop_front() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .ok()?
            .flatten()
            .map(|entry| entry.path())
            .collect();
        entries.sort();
        for path in entries {
            budget -= 1;
            if budget == 0 {
                return None;
            }
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.is_file() && spec.language_id(&path).is_some() {
                return Some(path);
            }
            if path.is_dir()
                && depth < 4
                && !name.starts_with('.')
                && !matches!(
                    name.as_str(),
                    "node_modules" | "target" | "venv" | "__pycache__"
                )
            {
                queue.push_back((path, depth + 1));
            }
        }
    }
    None
}

fn append_notes(text: &mut String, notes: &[String]) {
    for note in notes {
        text.push('\n');
        text.push_str(note);
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Runs `work`, reporting `what` as the call's progress when it starts and every few seconds
/// while it runs, with the time so far (a project check takes minutes on a large tree).
pub(crate) async fn with_progress<T>(what: &str, work: impl Future<Output = T>) -> T {
    tools_core::report_progress(what);
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = ticks.tick() => {
                tools_core::report_progress(format!(
                    "{what} ({}s)",
                    started.elapsed().as_secs()
                ));
            }
        }
    }
}

/// How often a long wait reports that it is still waiting.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsp_5_diagnostics_render_as_path_line_severity_code() {
        let item = DiagnosticItem {
            path: "src/lib.rs".into(),
            line: Some(3),
            severity: "error".into(),
            code: Some("E0308".into()),
            message: "mismatched types".into(),
        };
        assert_eq!(
            render_diagnostic(&item),
            "src/lib.rs:3: error[E0308]: mismatched types"
        );
        let project = DiagnosticItem {
            path: String::new(),
            line: None,
            code: None,
            ..item
        };
        assert_eq!(render_diagnostic(&project), "error: mismatched types");
    }

    #[test]
    fn lsp_5_uses_found_from_a_stub_and_its_implementation_are_each_listed_once() {
        let url = |name: &str| Url::parse(&format!("file:///p/{name}")).unwrap();
        let from_implementation = vec![(url("more.py"), 10), (url("more.py"), 40)];
        let from_stub = vec![
            (url("more.pyi"), 3),
            (url("more.py"), 10),
            (url("use.py"), 7),
            (url("use.py"), 7),
        ];
        assert_eq!(
            union_of_uses(from_implementation, from_stub),
            [
                (url("more.py"), 10),
                (url("more.py"), 40),
                (url("more.pyi"), 3),
                (url("use.py"), 7),
                (url("use.py"), 7),
            ]
        );
    }

    #[test]
    fn counts_read_naturally() {
        assert_eq!(capitalise(&plural(1, "reference")), "1 reference");
        assert_eq!(capitalise(&plural(3, "definition")), "3 definitions");
        assert_eq!(capitalise("symbol"), "Symbol");
    }
}
