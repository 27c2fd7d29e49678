//! What requests and events carry: capabilities, sources, breakpoints, threads, frames,
//! scopes and variables (the fields we look at).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an adapter can do (the fields we look at).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Capabilities {
    pub supports_configuration_done_request: bool,
    /// Offered filters mean the adapter takes `setExceptionBreakpoints`.
    pub exception_breakpoint_filters: Option<Vec<Value>>,
}

/// A source file as the adapter names it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Source {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A breakpoint as we ask for it in `setBreakpoints`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SourceBreakpoint {
    pub line: u32,
}

/// A breakpoint as the adapter reports it after `setBreakpoints`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Breakpoint {
    pub verified: bool,
    pub line: Option<u32>,
    pub message: Option<String>,
}

/// A thread.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Thread {
    pub id: i64,
    pub name: String,
}

/// A frame of a stack trace.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct StackFrame {
    pub id: i64,
    pub name: String,
    pub source: Option<Source>,
    pub line: u32,
}

/// A scope of a frame.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Scope {
    pub name: String,
    pub variables_reference: i64,
    pub expensive: bool,
}

/// A variable (a child of a scope or of another variable).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Variable {
    pub name: String,
    pub value: String,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    pub variables_reference: i64,
}
