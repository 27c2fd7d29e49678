//! The events we read, typed: one variant per event the session acts on, with its body (the
//! fields we look at); any other event is `Other`.

use serde::Deserialize;

use super::{Event, body};

/// An event from the adapter, read by its name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AdapterEvent {
    /// The adapter is ready for its configuration (breakpoints, `configurationDone`).
    Initialized,
    Stopped(Stopped),
    /// The debuggee runs again.
    Continued,
    Exited(Exited),
    /// The session is over (an exit code may still follow on delve's console).
    Terminated,
    Process(Process),
    Output(Output),
    /// Any other event: nothing we keep.
    Other,
}

impl AdapterEvent {
    /// Reads an event; a body that does not fit reads as the empty one.
    pub(crate) fn read(event: Event) -> Self {
        match event.event.as_str() {
            "initialized" => AdapterEvent::Initialized,
            "stopped" => AdapterEvent::Stopped(body(event.body)),
            "continued" => AdapterEvent::Continued,
            "exited" => AdapterEvent::Exited(body(event.body)),
            "terminated" => AdapterEvent::Terminated,
            "process" => AdapterEvent::Process(body(event.body)),
            "output" => AdapterEvent::Output(body(event.body)),
            _ => AdapterEvent::Other,
        }
    }

    /// Whether it ends a wait for the program to stop or exit.
    pub(crate) fn settles(&self) -> bool {
        matches!(
            self,
            AdapterEvent::Stopped(_) | AdapterEvent::Exited(_) | AdapterEvent::Terminated
        )
    }
}

/// The body of `stopped`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Stopped {
    pub reason: String,
    pub description: Option<String>,
    pub thread_id: Option<i64>,
}

/// The body of `exited`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Exited {
    pub exit_code: Option<i64>,
}

/// The body of `process`: the debuggee's pid, which `end` kills should it outlive the
/// adapter.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Process {
    pub system_process_id: Option<u64>,
}

/// The body of `output`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Output {
    pub category: Option<String>,
    pub output: String,
}
