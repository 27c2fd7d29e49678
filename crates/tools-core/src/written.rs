//! What diagnostics on write (LSP-6) adds to the result of a tool that writes files.
//!
//! Every tool that writes files ([`Tool::WRITES_FILES`](crate::Tool::WRITES_FILES)) carries an
//! optional [`WriteReport`] in its structured output, under `diagnostics`: its output schema
//! is [`Written`] around the tool's own output, derived in one place from that flag, so no
//! tool declares the field. The tool itself never fills it; the language-server family's
//! wrapper does after the write, so the field is part of each writing tool's output schema
//! whether or not a server is bound to the run. The report is a value: the text under the tool's own answer is rendered from it, so
//! a client that shows the model only the structured content shows the same thing.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Place;

/// The structured result of a tool that writes files: its own fields, and what diagnostics
/// on write found (LSP-6). Only its schema is used: the tool serialises its own output, and
/// the wrapper adds `diagnostics` to that object.
#[derive(JsonSchema)]
#[schemars(rename = "{O}")]
#[allow(dead_code)]
pub(crate) struct Written<O> {
    #[serde(flatten)]
    output: O,
    /// What the project's language servers found in the written files (diagnostics on write,
    /// LSP-6); present only when a server covers one of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    diagnostics: Option<WriteReport>,
}

/// The language servers' verdict on a write: every written file a server covers with its
/// state, the files the write did not touch in which it introduced diagnostics, and the
/// files that may depend on it but were not checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WriteReport {
    /// Each written file a server covers: checked (with what the write introduced there)
    /// or not checked (and why). A file no server covers is not listed.
    pub files: Vec<FileReport>,
    /// Each file the write did not touch in which it introduced diagnostics (a changed
    /// signature breaks its callers), in path order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallout: Vec<FileReport>,
    /// Files that may depend on a written one but were not checked (a time budget ran out,
    /// no compilation database), per server and reason: the fallout may be incomplete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchecked_dependents: Vec<UncheckedDependents>,
    /// Other things the reader must know, and what a capped list leaves out and how to see it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One file as its language server saw it after the write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileReport {
    /// The file, workspace-relative.
    pub path: String,
    /// The server that checked it (or would have).
    pub server: String,
    /// Whether it was checked.
    pub state: FileState,
    /// Why it was not checked (the server is not installed, the file is in no crate, the
    /// server crashed or did not finish in time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How it was checked when not on its own: a header is judged through the files that
    /// include it (`through 3 files that include it`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_through: Option<String>,
    /// Errors in the file now, old and new (0 when not checked).
    pub errors: usize,
    /// Warnings in the file now, old and new.
    pub warnings: usize,
    /// Diagnostics this write introduced in the file (errors; warnings too when the run
    /// reports them), listed or not.
    pub introduced: usize,
    /// The introduced diagnostics that are listed, errors first; the rest are counted in
    /// `introduced`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listed: Vec<IntroducedDiagnostic>,
}

/// Whether a file's server answered for the text the write left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileState {
    /// The server answered for the written text.
    Checked,
    /// It did not; `reason` says why.
    NotChecked,
}

/// One diagnostic a write introduced: where it is (the file, the line and the line's text
/// as written, like every place in every answer), and what it says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IntroducedDiagnostic {
    /// Where it is: `path`, `line` and the line's `text` as written.
    #[serde(flatten)]
    pub place: Place,
    /// `error` or `warning`.
    pub severity: String,
    /// The server's code for it, e.g. `E0308` or `reportAttributeAccessIssue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The message, on one line.
    pub message: String,
}

/// Files that may depend on what a write changed but were not checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UncheckedDependents {
    /// The server that would have checked them.
    pub server: String,
    /// How many.
    pub count: usize,
    /// Why not.
    pub reason: String,
    /// A few of them, workspace-relative.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sample: Vec<String>,
}

impl FileReport {
    /// A file that was checked, with nothing introduced yet.
    pub fn checked(path: String, server: String, errors: usize, warnings: usize) -> Self {
        FileReport {
            path,
            server,
            state: FileState::Checked,
            reason: None,
            checked_through: None,
            errors,
            warnings,
            introduced: 0,
            listed: Vec::new(),
        }
    }

    /// A file that was not checked, and why.
    pub fn not_checked(path: String, server: String, reason: String) -> Self {
        FileReport {
            path,
            server,
            state: FileState::NotChecked,
            reason: Some(reason),
            checked_through: None,
            errors: 0,
            warnings: 0,
            introduced: 0,
            listed: Vec::new(),
        }
    }
}
