//! What diagnostics on write (LSP-6) adds to the result of a tool that writes files.
//!
//! Every writing tool (`write`, `edit`, `apply_patch`, `lsp_rename`, `resolve`) carries an
//! optional [`WriteDiagnostics`] in its structured output. The tool itself always leaves it
//! out; the language-server family's wrapper fills it in after the write, so the field is part
//! of each tool's output schema whether or not a server is bound to the run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The language servers' verdict on the files a call wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WriteDiagnostics {
    /// Diagnostics this call introduced (not reported before in this run), errors first;
    /// warnings only when the run is configured to report them.
    pub introduced: Vec<WrittenDiagnostic>,
    /// Introduced diagnostics left out by the per-file cap, over all files.
    pub omitted: usize,
    /// Each written file a server covers, with its state after the write: checked (with
    /// its error count) or not checked (and why). A file no server covers is not listed.
    pub files: Vec<CheckedFile>,
    /// Diagnostics this call introduced in files it did not write (a changed signature
    /// breaks its callers), at most 10 over all files, spread across them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallout: Vec<WrittenDiagnostic>,
    /// Each file the call did not write in which it introduced diagnostics, with how many.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallout_files: Vec<CheckedFile>,
    /// Files whose server did not settle in time, and other things the reader must know.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One diagnostic a write introduced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WrittenDiagnostic {
    /// The file, workspace-relative.
    pub path: String,
    /// 1-based line.
    pub line: u32,
    /// `error` or `warning`.
    pub severity: String,
    /// The server's code for it, e.g. `E0308` or `reportAttributeAccessIssue`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The message, on one line.
    pub message: String,
    /// The line's text as written, trimmed.
    pub text: String,
}

/// A written file as its language server saw it once it settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckedFile {
    /// The file, workspace-relative.
    pub path: String,
    /// The server that checked it.
    pub server: String,
    /// Whether the server finished checking the file within the wait; when false the file
    /// was not checked, the counts are zero, and `unchecked` says why.
    pub settled: bool,
    /// Errors in the file now, old and new.
    pub errors: usize,
    /// Warnings in the file now, old and new.
    pub warnings: usize,
    /// Diagnostics this call introduced in the file, listed or not.
    #[serde(default)]
    pub introduced: usize,
    /// Diagnostics this call introduced in the file beyond the cap, not listed.
    pub omitted: usize,
    /// Why the file was not checked (the server is not installed, the file is in no crate,
    /// the server crashed or did not finish in time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
}
