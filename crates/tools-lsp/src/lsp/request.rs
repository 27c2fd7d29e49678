//! The `lsp` input decoded once into what to ask (LSP-3, LSP-4, LSP-5). Every argument error is
//! found here, before any server is started or waited for.

use tools_core::{Line, ToolError, Workspace};

use super::{LspInput, Operation, SeverityFilter};
use crate::position::lines;
use crate::select::Page;

/// Caps of LSP-5.
const REFERENCES_CAP: usize = 50;
pub(super) const WORKSPACE_SYMBOLS_CAP: usize = 100;
const DOCUMENT_SYMBOLS_CAP: usize = 200;
/// How many findings `diagnostics "*"` lists (the rest are counted per file).
const CHECKER_CAP: usize = 100;

/// A symbol pointed at the LSP-3 way: a file, a 1-based line and the identifier's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct At {
    pub(crate) path: String,
    pub(crate) line: u32,
    pub(crate) symbol: String,
    pub(crate) occurrence: Option<u32>,
}

/// The position questions whose answer is a list of places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Navigation {
    Definition,
    TypeDefinition,
    Implementation,
    References,
}

impl Navigation {
    /// `definition`, `no definition`: how the answer names what it found, or that it found
    /// nothing.
    pub(crate) fn nouns(self) -> (&'static str, &'static str) {
        match self {
            Navigation::Definition => ("definition", "no definition"),
            Navigation::TypeDefinition => ("type definition", "no type definition"),
            Navigation::Implementation => ("implementation", "no implementation"),
            Navigation::References => ("reference", "no references"),
        }
    }

    pub(crate) fn operation(self) -> Operation {
        match self {
            Navigation::Definition => Operation::Definition,
            Navigation::TypeDefinition => Operation::TypeDefinition,
            Navigation::Implementation => Operation::Implementation,
            Navigation::References => Operation::References,
        }
    }
}

/// One question to the language servers, with everything it needs and nothing optional that
/// it cannot do without.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LspRequest {
    Navigate {
        kind: Navigation,
        at: At,
        page: Page,
    },
    Hover(At),
    CodeActions(At),
    /// A file's outline; with a query, the symbols of that file whose name contains it.
    FileSymbols {
        path: String,
        query: Option<String>,
        page: Page,
    },
    WorkspaceSymbols {
        query: String,
        page: Page,
    },
    FileDiagnostics {
        path: String,
    },
    /// The project checker, its findings kept under `prefix` (empty: all of them).
    CheckProject {
        prefix: String,
        page: Page,
        severity: Option<SeverityFilter>,
    },
    Status,
    Reload {
        path: Option<String>,
    },
}

impl LspRequest {
    /// The request `input` asks for, or the argument error that says what to send instead.
    /// `workspace` is read only to quote a line back when `symbol` is missing (LSP-4).
    pub(crate) fn decode(input: &LspInput, workspace: &Workspace) -> Result<Self, ToolError> {
        let path = input
            .path
            .as_deref()
            .map(str::trim)
            .filter(|path| !path.is_empty());
        let query = input
            .query
            .as_deref()
            .map(str::trim)
            .filter(|query| !query.is_empty());
        let page = |cap| Page::new(input.max_results, input.offset, cap);
        let navigate = |kind| -> Result<Self, ToolError> {
            Ok(LspRequest::Navigate {
                kind,
                at: at(input, workspace)?,
                page: match kind {
                    Navigation::References => page(REFERENCES_CAP)?,
                    _ => Page::new(None, None, WORKSPACE_SYMBOLS_CAP)?,
                },
            })
        };
        Ok(match input.operation {
            Operation::Definition => navigate(Navigation::Definition)?,
            Operation::TypeDefinition => navigate(Navigation::TypeDefinition)?,
            Operation::Implementation => navigate(Navigation::Implementation)?,
            Operation::References => navigate(Navigation::References)?,
            Operation::Hover => LspRequest::Hover(at(input, workspace)?),
            Operation::CodeActions => LspRequest::CodeActions(at(input, workspace)?),
            Operation::Symbols => match (query, path) {
                (Some(query), None) => LspRequest::WorkspaceSymbols {
                    query: query.to_owned(),
                    page: page(WORKSPACE_SYMBOLS_CAP)?,
                },
                (query, Some(path)) => LspRequest::FileSymbols {
                    path: path.to_owned(),
                    query: query.map(str::to_owned),
                    page: page(DOCUMENT_SYMBOLS_CAP)?,
                },
                (None, None) => {
                    return Err(ToolError::failed(
                        "`symbols` needs `query` (a name to search the workspace for) or `path` \
                         (to list that file's symbols)",
                    ));
                }
            },
            Operation::Diagnostics => match path {
                Some(pattern) if pattern.ends_with('*') => LspRequest::CheckProject {
                    prefix: pattern
                        .trim_end_matches('*')
                        .trim_start_matches("./")
                        .to_owned(),
                    page: page(CHECKER_CAP)?,
                    severity: input.severity,
                },
                Some(path) => LspRequest::FileDiagnostics {
                    path: path.to_owned(),
                },
                None => {
                    return Err(ToolError::failed(
                        "`diagnostics` needs `path`: a source file for its errors and warnings, \
                         or \"*\" to run the project checker",
                    ));
                }
            },
            Operation::Status => LspRequest::Status,
            Operation::Reload => LspRequest::Reload {
                path: path.map(str::to_owned),
            },
        })
    }

    /// Whether the request runs a whole project checker (minutes on a large tree).
    pub(crate) fn may_run_long(input: &LspInput) -> bool {
        input.operation == Operation::Diagnostics
            && input
                .path
                .as_deref()
                .is_some_and(|path| path.trim().ends_with('*'))
    }
}

/// `path` + `line` + `symbol` of a position question, each named when missing.
fn at(input: &LspInput, workspace: &Workspace) -> Result<At, ToolError> {
    let operation = input.operation.name();
    let file = input
        .path
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .ok_or_else(|| {
            ToolError::failed(format!(
                "`{operation}` needs `path`, `line` and `symbol`: the file, the 1-based line, \
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
        .filter(|symbol| !symbol.trim().is_empty())
        .ok_or_else(|| {
            // LSP-4: no guessing a column; quote the line so the model can pick the name.
            let quoted = workspace
                .resolve(file)
                .ok()
                .and_then(|path| tools_core::read_regular(&path).ok())
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .and_then(|text| {
                    let line = Line::new(line)?;
                    lines(&text).get(line.index()).map(|l| l.trim().to_owned())
                });
            let mut message = format!(
                "`{operation}` needs `symbol`: the identifier on line {line} of {file} to ask \
                 about"
            );
            if let Some(quoted) = quoted {
                message.push_str(&format!("; the line is `{quoted}`"));
            }
            ToolError::failed(message)
        })?;
    Ok(At {
        path: file.to_owned(),
        line,
        symbol: symbol.to_owned(),
        occurrence: input.occurrence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: serde_json::Value) -> LspInput {
        serde_json::from_value(json).unwrap()
    }

    fn decode(json: serde_json::Value) -> Result<LspRequest, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("lib.rs"), "fn main() {\n    run(1);\n}\n").unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        LspRequest::decode(&input(json), &workspace).map_err(|e| e.to_string())
    }

    #[test]
    fn lsp_3_a_position_question_names_each_missing_argument() {
        let error = decode(serde_json::json!({"operation": "references"})).unwrap_err();
        assert!(
            error.contains("needs `path`, `line` and `symbol`"),
            "{error}"
        );
        let error =
            decode(serde_json::json!({"operation": "hover", "path": "lib.rs"})).unwrap_err();
        assert!(error.contains("needs `line`"), "{error}");
        // LSP-4: the line is quoted back so the model can copy the identifier.
        let error =
            decode(serde_json::json!({"operation": "definition", "path": "lib.rs", "line": 2}))
                .unwrap_err();
        assert!(error.contains("the line is `run(1);`"), "{error}");
    }

    #[test]
    fn lsp_5_operations_decode_into_what_they_ask() {
        assert_eq!(
            decode(serde_json::json!({
                "operation": "references", "path": " lib.rs ", "line": 2, "symbol": "run",
                "max_results": 10
            })),
            Ok(LspRequest::Navigate {
                kind: Navigation::References,
                at: At {
                    path: "lib.rs".into(),
                    line: 2,
                    symbol: "run".into(),
                    occurrence: None
                },
                page: Page::new(Some(10), None, REFERENCES_CAP).unwrap(),
            })
        );
        assert!(matches!(
            decode(serde_json::json!({"operation": "diagnostics", "path": "./src/parser/*"})),
            Ok(LspRequest::CheckProject { prefix, .. }) if prefix == "src/parser/"
        ));
        assert!(matches!(
            decode(serde_json::json!({"operation": "symbols", "query": "Config", "path": "lib.rs"})),
            Ok(LspRequest::FileSymbols { query: Some(query), .. }) if query == "Config"
        ));
        let error = decode(serde_json::json!({"operation": "symbols", "query": "  "})).unwrap_err();
        assert!(error.contains("needs `query`"), "{error}");
        let error = decode(serde_json::json!({"operation": "diagnostics"})).unwrap_err();
        assert!(
            error.contains("\"*\" to run the project checker"),
            "{error}"
        );
        let error = decode(serde_json::json!({
            "operation": "references", "path": "lib.rs", "line": 2, "symbol": "run",
            "max_results": 5000
        }))
        .unwrap_err();
        assert!(error.contains("max_results"), "{error}");
    }
}
