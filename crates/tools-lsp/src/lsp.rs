//! `lsp`: read-only questions to the project's language server (LSP-1, LSP-2, LSP-3, LSP-4, LSP-5):
//! definitions, types, implementations, references, hover, symbols, code actions, diagnostics,
//! status, reload.
//!
//! The input is decoded once into an [`LspRequest`](request::LspRequest) (every argument error
//! is found there, before a server starts); each operation's handler returns an answer value
//! ([`LspAnswer`](answer::LspAnswer)), which one renderer turns into the text and the
//! structured content.

mod answer;
mod ask;
mod diagnose;
mod request;
mod status;
mod symbols;
mod view;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, Line, Place, Tier, Tool, ToolError, ToolOutput, Workspace};

use self::answer::LspAnswer;
pub(crate) use self::ask::actions_at;
use self::request::LspRequest;
pub use self::status::{ServerReport, SessionReport};
use crate::supervisor::LspSupervisor;

/// Ask the project's language server: definitions, types, implementations, references,
/// hover (signature, docs), outlines, symbol search, quick fixes, errors.
///
/// Aim with a 1-based `line` and the `symbol` text on it (`Config::load` aims at `load`);
/// `occurrence` picks among repeats on the line.
///
/// - `definition`, `type_definition`, `implementation`, `references`, `hover`,
///   `code_actions` (apply with `lsp_code_action`): `path`, `line`, `symbol`.
/// - `symbols`: `query` searches the workspace, `path` gives a file's outline, both filter it.
/// - `diagnostics`: a file's errors now; `path: "*"` runs the project checker (cargo
///   check, basedpyright, tsc, …), `"src/x/*"` keeps one folder.
/// - `status`: which servers can run, and why not; `reload`: restart a server.
///
/// Long lists give a count per file, then a page (`max_results`, `offset`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspInput {
    pub operation: Operation,
    /// The file, workspace-relative; `diagnostics` also takes `"*"` or `dir/*`.
    // `file` was its name before: clients that send it keep working.
    #[serde(default, alias = "file")]
    pub path: Option<String>,
    /// The 1-based line of `symbol`.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// The identifier as written on that line.
    #[serde(default)]
    pub symbol: Option<String>,
    /// Which one on the line (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub occurrence: Option<u32>,
    /// `symbols`: a name or part of one.
    #[serde(default)]
    pub query: Option<String>,
    /// Page size (at most 1000).
    #[serde(default)]
    pub max_results: Option<u32>,
    /// Page start (0-based); an answer names the next.
    #[serde(default)]
    pub offset: Option<u32>,
    /// With `path: "*"`: errors only, or warnings only.
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

// The operations of `lsp` (LSP-5); the tool's description documents them, so no doc
// comment here (it would repeat in the schema).
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

/// One symbol; `path`, `line` and `text` are the line its name is on.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SymbolItem {
    pub name: String,
    /// `function`, `struct`, `class`, `method`, …
    pub kind: String,
    /// Where its name is: `path`, `line` and that line's `text`.
    #[serde(flatten)]
    pub place: Place,
    /// Nesting depth in a file's outline (0 at the top).
    pub depth: usize,
    /// Whether it is in the workspace's own code (not a dependency).
    pub in_workspace: bool,
}

/// One diagnostic or checker finding; `path`, `line` and `text` are the line it is on. A
/// finding about a whole file has no `line` and `text`, one about the whole project no
/// `path` either.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DiagnosticItem {
    /// Where it is: `path`, `line` and that line's `text`; absent for a finding about the
    /// whole project.
    #[serde(flatten)]
    pub place: Option<Place>,
    /// The file of a finding about a file as a whole (it names no line), where `place` is
    /// absent: it is the `path` then, so every finding that names a file has one.
    #[serde(rename = "path", skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "The file, workspace-relative; absent for a finding about the whole project."
    )]
    pub whole_file: Option<String>,
    /// `error` or `warning` (checkers may add `info` and `note`).
    pub severity: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub message: String,
}

impl DiagnosticItem {
    /// The file it is in, workspace-relative; empty for a finding about the whole project.
    pub(crate) fn path(&self) -> &str {
        match (&self.place, &self.whole_file) {
            (Some(place), _) => &place.path,
            (None, Some(path)) => path,
            (None, None) => "",
        }
    }

    /// Its line, when it has one.
    pub(crate) fn line(&self) -> Option<Line> {
        self.place.as_ref().map(|place| place.line)
    }
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

    /// Asks what `request` asks, from the servers it needs.
    async fn answer(
        &self,
        workspace: &Workspace,
        request: LspRequest,
    ) -> Result<LspAnswer, ToolError> {
        Ok(match request {
            LspRequest::Navigate { kind, at, page } => {
                LspAnswer::Places(self.navigate(workspace, kind, &at, page).await?)
            }
            LspRequest::Hover(at) => LspAnswer::Hover(self.hover(workspace, &at).await?),
            LspRequest::CodeActions(at) => {
                LspAnswer::Actions(self.code_actions(workspace, &at).await?)
            }
            LspRequest::FileSymbols { path, query, page } => LspAnswer::FileSymbols(
                self.file_symbols(workspace, &path, query.as_deref(), page)
                    .await?,
            ),
            LspRequest::WorkspaceSymbols { query, page } => {
                LspAnswer::WorkspaceSymbols(self.workspace_symbols(workspace, &query, page).await?)
            }
            LspRequest::FileDiagnostics { path } => {
                LspAnswer::FileDiagnostics(self.file_diagnostics(workspace, &path).await?)
            }
            LspRequest::CheckProject {
                prefix,
                page,
                severity,
            } => LspAnswer::Check(
                self.check_project(workspace, &prefix, page, severity)
                    .await?,
            ),
            LspRequest::Status => {
                LspAnswer::Status(self.status(workspace).await?, tools_process::containment())
            }
            LspRequest::Reload { path } => {
                LspAnswer::Reload(self.reload(workspace, path.as_deref()).await?)
            }
        })
    }
}

impl Tool for Lsp {
    type Input = LspInput;
    type Output = LspOutput;
    const NAME: &'static str = "lsp";
    const TITLE: &'static str = "Ask the language server";
    const TIER: Tier = Tier::Read;

    const MAY_RUN_LONG: bool = true;

    /// A project check (`diagnostics` over `*` or a folder prefix) runs the whole checker.
    fn may_run_long(&self, input: &LspInput) -> bool {
        LspRequest::may_run_long(input)
    }

    async fn call(
        &self,
        context: CallContext,
        input: LspInput,
    ) -> Result<ToolOutput<LspOutput>, ToolError> {
        let workspace = context.workspace();
        let request = LspRequest::decode(&input, workspace)?;
        let answer = self.answer(workspace, request).await?;
        Ok(ToolOutput::new(answer.render(), answer.into_output()))
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
    use serde::de::DeserializeOwned;
    use serde_json::json;

    use super::*;
    use crate::{LspCodeActionInput, LspRenameInput};

    fn decode<T: DeserializeOwned>(arguments: serde_json::Value) -> Result<T, String> {
        serde_json::from_value(arguments).map_err(|error| error.to_string())
    }

    #[test]
    fn lsp_3_inputs_name_the_file_path_and_still_take_file() {
        // `file` was the argument's name before: a client that sends it keeps working.
        for name in ["path", "file"] {
            let lsp: LspInput =
                decode(json!({"operation": "hover", name: "lib.rs", "line": 2, "symbol": "run"}))
                    .unwrap();
            assert_eq!(lsp.path.as_deref(), Some("lib.rs"));
            let rename: LspRenameInput =
                decode(json!({name: "lib.rs", "line": 2, "symbol": "run", "new_name": "go"}))
                    .unwrap();
            assert_eq!(rename.path, "lib.rs");
            let action: LspCodeActionInput =
                decode(json!({name: "lib.rs", "line": 2, "symbol": "run", "title": "Fix"}))
                    .unwrap();
            assert_eq!(action.path, "lib.rs");
        }
        // Both names at once give the one field twice.
        let error = decode::<LspInput>(
            json!({"operation": "hover", "path": "lib.rs", "file": "main.rs", "line": 2}),
        )
        .unwrap_err();
        assert!(error.contains("duplicate field `path`"), "{error}");
        let error = decode::<LspRenameInput>(json!({
            "path": "lib.rs", "file": "main.rs", "line": 2, "symbol": "run", "new_name": "go"
        }))
        .unwrap_err();
        assert!(error.contains("duplicate field `path`"), "{error}");
    }
}
