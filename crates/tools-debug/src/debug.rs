//! The `debug` tool (SPEC section 4): one tool with an `operation`, exec tier, on the `debug`
//! lane (DBG-3, CORE-6). This file holds its input, its output and the dispatch; the handlers
//! only convert between the model's arguments and the session's typed requests —
//! `debug/start.rs` (status, breakpoints, launch, attach), `debug/control.rs` (continue,
//! steps, pause, terminate, and waiting for the stop), `debug/inspect.rs` (threads, stack,
//! scopes, variables, evaluate, output) — and `debug/render.rs` writes every answer.

mod control;
mod inspect;
mod render;
mod start;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, Lane, Place, Tier, Tool, ToolError, ToolOutput, Workspace};

use crate::adapters::{self, AdapterId, AdapterReport};
use crate::dap::events::Stopped;
use crate::dap::types::StackFrame;
use crate::supervisor::DebugSupervisor;
use render::{ended_output, frame_place, render_adapters};

/// How many frames `stack` shows.
pub const MAX_FRAMES: usize = 30;
/// How many children `variables` shows.
pub const MAX_CHILDREN: usize = 50;
/// How many characters of one value are shown.
pub const MAX_VALUE_CHARS: usize = 400;
/// How many source lines are shown on each side of a stop.
const CONTEXT_LINES: usize = 2;

/// Debug a program over DAP: debugpy (Python), lldb-dap (C, C++, Rust), delve (Go); one
/// session, kept across calls.
///
/// Typical: `breakpoints` (path, lines) → `launch` (program, args) → at a stop it shows
/// source and locals → `stack`, `scopes` (frame_id), `variables` (reference), `evaluate`
/// (expression, frame_id) → `step_over`, `step_in`, `step_out`, `continue` → `terminate`.
///
/// Also `adapters`, `status`, `attach` (`port` of `debugpy --listen`), `pause`, `threads`,
/// `output` (what the program printed). Empty `lines` clears a file's breakpoints. Control
/// operations wait for a stop or exit.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DebugInput {
    pub operation: Operation,
    /// `breakpoints`: the source file.
    // `file` was its name before: clients that send it keep working.
    #[serde(default, alias = "file")]
    pub path: Option<String>,
    /// `breakpoints`: 1-based lines.
    #[serde(default)]
    #[schemars(inner(range(min = 1)))]
    pub lines: Option<Vec<u32>>,
    /// `launch`: script, binary or Go package folder.
    #[serde(default)]
    pub program: Option<String>,
    /// `launch`: program arguments.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// `launch`: default from the program.
    #[serde(default)]
    pub adapter: Option<AdapterId>,
    /// `attach`: a local port.
    #[serde(default)]
    pub port: Option<u16>,
    /// Default: the stopped thread.
    #[serde(default)]
    pub thread_id: Option<i64>,
    /// `scopes`, `evaluate`: from `stack`.
    #[serde(default)]
    pub frame_id: Option<i64>,
    /// `variables`: from `scopes` or `variables`.
    #[serde(default)]
    pub reference: Option<i64>,
    /// `evaluate`: the expression.
    #[serde(default)]
    pub expression: Option<String>,
}

// A `debug` operation (DBG-5). The tool's description documents each, so neither the type
// nor its variants carry doc comments: they would repeat it in the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    // Which adapters can run here, and why not.
    Adapters,
    // Whether a session runs, and where it stopped.
    Status,
    // Sets a file's breakpoints (`path`, `lines`); empty `lines` clears them.
    Breakpoints,
    // Starts `program` with `args`, stopping at its breakpoints.
    Launch,
    // Attaches to a debugpy listening on `port`.
    Attach,
    // Runs to the next stop.
    Continue,
    // Stops the program where it is.
    Pause,
    // One step, over calls.
    StepOver,
    // One step, into a call.
    StepIn,
    // Runs until the current function returns.
    StepOut,
    // Thread ids and names.
    Threads,
    // The frames of a thread (30 at most).
    Stack,
    // The scopes of `frame_id`, each with a reference.
    Scopes,
    // The children of `reference` (50 at most, values cut at 400 characters).
    Variables,
    // Evaluates `expression` in `frame_id` (the top frame when absent).
    Evaluate,
    // What the program printed since the last call.
    Output,
    // Ends the program and the adapter.
    Terminate,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Adapters => "adapters",
            Operation::Status => "status",
            Operation::Breakpoints => "breakpoints",
            Operation::Launch => "launch",
            Operation::Attach => "attach",
            Operation::Continue => "continue",
            Operation::Pause => "pause",
            Operation::StepOver => "step_over",
            Operation::StepIn => "step_in",
            Operation::StepOut => "step_out",
            Operation::Threads => "threads",
            Operation::Stack => "stack",
            Operation::Scopes => "scopes",
            Operation::Variables => "variables",
            Operation::Evaluate => "evaluate",
            Operation::Output => "output",
            Operation::Terminate => "terminate",
        }
    }
}

/// Where a program stopped.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StopPlace {
    /// Why (`breakpoint`, `step`, `pause`, `exception`, …).
    pub reason: String,
    /// The thread that stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<i64>,
    /// The top frame's place: `path`, `line` and that line's `text`; absent when the
    /// adapter names no source file or line for it.
    #[serde(flatten)]
    pub place: Option<Place>,
    /// The top frame's id, for `scopes` and `evaluate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<i64>,
}

impl StopPlace {
    /// Where the program stopped (`stop`), at its top frame when the adapter gave one.
    fn new(workspace: &Workspace, stop: &Stopped, top: Option<&StackFrame>) -> Self {
        StopPlace {
            reason: stop.reason.clone(),
            thread_id: stop.thread_id,
            place: top.and_then(|frame| frame_place(workspace, frame)),
            frame_id: top.map(|frame| frame.id),
        }
    }
}

/// The result of `debug`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct DebugOutput {
    /// The operation that ran.
    pub operation: String,
    /// The adapter of the session, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter: Option<AdapterId>,
    /// The session's state after the call (`stopped`, `running`, `exited with code 0`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Where the program stopped, when it is stopped: why, and the top frame's `path`,
    /// `line` and `text` (absent when the adapter has no source file for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StopPlace>,
    /// The exit code, when the program exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// `adapters`: one report per adapter.
    pub adapters: Vec<AdapterReport>,
    /// The whole answer as the text shows it: the stack, the variables, a value, the
    /// program's output, the breakpoints set.
    pub answer: String,
}

/// The `debug` tool over a [`DebugSupervisor`].
#[derive(Debug, Clone)]
pub struct Debug {
    supervisor: DebugSupervisor,
}

impl Debug {
    /// The tool over `supervisor`.
    pub fn new(supervisor: DebugSupervisor) -> Self {
        Debug { supervisor }
    }
}

type Answer = Result<ToolOutput<DebugOutput>, ToolError>;

fn needs(operation: Operation, field: &str, what: &str) -> ToolError {
    ToolError::failed(format!("`{}` needs `{field}`: {what}", operation.name()))
}

impl Tool for Debug {
    type Input = DebugInput;
    type Output = DebugOutput;
    const NAME: &'static str = "debug";
    const TITLE: &'static str = "Debug a program";
    const TIER: Tier = Tier::Exec;
    const LANE: Option<Lane> = Some(Lane::DEBUG);
    const GRACEFUL_CANCEL: bool = true;

    const MAY_RUN_LONG: bool = true;

    /// Starting a program or running it to its next stop takes as long as the program does.
    fn may_run_long(&self, input: &DebugInput) -> bool {
        matches!(
            input.operation,
            Operation::Launch
                | Operation::Attach
                | Operation::Continue
                | Operation::StepOver
                | Operation::StepIn
                | Operation::StepOut
        )
    }

    async fn call(&self, context: CallContext, input: DebugInput) -> Answer {
        let conversation = context.run.conversation.clone();
        // An expired session is told once, by the next call, whatever it is (DBG-4).
        let notice = self.supervisor.take_notice(&conversation);
        let answer = self.run(&context, &conversation, input).await;
        let answer = answer.map(|mut output| {
            output.structured.answer = output.text.clone();
            output
        });
        match (notice, answer) {
            (Some(notice), Ok(mut output)) => {
                output.text = format!("note: {notice}\n\n{}", output.text);
                output.structured.answer = output.text.clone();
                Ok(output)
            }
            (Some(notice), Err(ToolError::Failed(message))) => {
                Err(ToolError::Failed(format!("{message}\nnote: {notice}")))
            }
            (_, answer) => answer,
        }
    }
}

impl Debug {
    async fn run(&self, context: &CallContext, conversation: &str, input: DebugInput) -> Answer {
        let operation = input.operation;
        match operation {
            Operation::Adapters => {
                let workspace = context.workspace();
                let sandbox = context.run.sandbox.as_ref();
                // The probes would start processes: with the sandbox refused as the run
                // began, its own words are the answer (EVAL-9), not four unknown versions.
                if let Some(refusal) = sandbox.and_then(|sandbox| sandbox.refusal()) {
                    return Err(ToolError::failed(format!(
                        "cannot probe the debug adapters: {refusal}"
                    )));
                }
                let reports = futures::future::join_all(
                    AdapterId::ALL
                        .iter()
                        .map(|adapter| adapters::report(*adapter, workspace, sandbox)),
                )
                .await;
                let text = render_adapters(&reports);
                Ok(ToolOutput::new(
                    text,
                    DebugOutput {
                        operation: operation.name().to_owned(),
                        adapters: reports,
                        ..DebugOutput::default()
                    },
                ))
            }
            Operation::Status => Ok(self.status(context, conversation).await),
            Operation::Breakpoints => self.breakpoints(context, conversation, input).await,
            Operation::Launch | Operation::Attach => self.start(context, conversation, input).await,
            _ => {
                let Some(session) = self.supervisor.session(conversation) else {
                    if operation == Operation::Output
                        && let Some(ended) = self.supervisor.ended(conversation)
                    {
                        return Ok(ended_output(&ended));
                    }
                    let last = self
                        .supervisor
                        .last(conversation)
                        .map(|last| format!(" (the last one: {last})"))
                        .unwrap_or_default();
                    return Err(ToolError::failed(format!(
                        "`{}` needs a debug session and none is running{last}: start one with \
                         operation `launch` (program) or `attach` (port)",
                        operation.name()
                    )));
                };
                self.in_session(context, conversation, &session, input)
                    .await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decode(arguments: serde_json::Value) -> Result<DebugInput, String> {
        serde_json::from_value(arguments).map_err(|error| error.to_string())
    }

    #[test]
    fn dbg_5_breakpoints_name_their_file_path_and_still_take_file() {
        // `file` was the argument's name before: a client that sends it keeps working.
        for name in ["path", "file"] {
            let input = decode(json!({"operation": "breakpoints", name: "app.py", "lines": [3]}));
            assert_eq!(input.unwrap().path.as_deref(), Some("app.py"));
        }
        let error = decode(json!({
            "operation": "breakpoints", "path": "app.py", "file": "app.py", "lines": [3]
        }))
        .unwrap_err();
        assert!(error.contains("duplicate field `path`"), "{error}");
    }
}
