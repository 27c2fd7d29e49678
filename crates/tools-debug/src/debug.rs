//! The `debug` tool (SPEC section 4): one tool with an `operation`, exec tier, on the `debug`
//! lane (DBG-3, CORE-6). It converts between the model's arguments and the session; the
//! answers are rendered by the functions at the end of this file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tools_core::{CallContext, Lane, Tier, Tool, ToolError, ToolOutput, Workspace};

use crate::adapters::{self, AdapterId, AdapterReport};
use crate::dap::{self, EvaluateBody, Scope, StackFrame, StackTraceBody, Thread, Variable};
use crate::session::{FileBreakpoints, RunState, Session, Start, Waited};
use crate::supervisor::DebugSupervisor;

/// How many frames `stack` shows.
pub const MAX_FRAMES: usize = 30;
/// How many children `variables` shows.
pub const MAX_CHILDREN: usize = 50;
/// How many characters of one value are shown.
pub const MAX_VALUE_CHARS: usize = 400;
/// How many source lines are shown on each side of a stop.
const CONTEXT_LINES: u32 = 2;

/// Debug a program over DAP: debugpy (Python), lldb-dap (C, C++, Rust), delve (Go); one
/// session, kept across calls.
///
/// Typical: `breakpoints` (file, lines) → `launch` (program, args) → at a stop it shows
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
    /// `breakpoints`: source file.
    #[serde(default)]
    pub file: Option<String>,
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
    // Sets a file's breakpoints (`file`, `lines`); empty `lines` clears them.
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
    /// The top frame's file (workspace-relative when inside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The top frame's 1-based line.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// The top frame's id, for `scopes` and `evaluate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<i64>,
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
    /// Where the program stopped, when it is stopped.
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
        let root = context.workspace().root().to_path_buf();
        match operation {
            Operation::Adapters => {
                let reports = futures::future::join_all(
                    AdapterId::ALL.iter().map(|a| adapters::report(*a, &root)),
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

    async fn status(&self, context: &CallContext, conversation: &str) -> ToolOutput<DebugOutput> {
        let mut text = String::new();
        let mut output = DebugOutput {
            operation: "status".to_owned(),
            ..DebugOutput::default()
        };
        match self.supervisor.session(conversation) {
            Some(session) => {
                let state = session.run_state();
                let ttl = self.supervisor.config().session_ttl_seconds;
                let age = session.started.elapsed().as_secs();
                let _ = writeln!(
                    text,
                    "session: {} with {}, {} ({}s old, ends at the {}s time limit)",
                    session.program,
                    session.adapter,
                    state.describe(),
                    age,
                    ttl
                );
                if let RunState::Stopped(stop) = &state
                    && let Ok(Some(frame)) = self.top_frame(&session, stop.thread_id).await
                {
                    let _ = writeln!(
                        text,
                        "stopped at {} in {} (frame {})",
                        frame_place(context.workspace(), &frame),
                        frame.name,
                        frame.id
                    );
                }
                output.adapter = Some(session.adapter);
                output.state = Some(state.describe());
            }
            None => {
                text.push_str("no debug session is running");
                if let Some(last) = self.supervisor.last(conversation) {
                    let _ = write!(text, "; the last one: {last}");
                }
                text.push('\n');
            }
        }
        let breakpoints = self.supervisor.breakpoints(conversation);
        if breakpoints.is_empty() {
            text.push_str("breakpoints: none\n");
        } else {
            for (file, lines) in breakpoints {
                let _ = writeln!(
                    text,
                    "breakpoints: {} lines {}",
                    context.workspace().display(&file),
                    join(&lines)
                );
            }
        }
        ToolOutput::new(text.trim_end().to_owned(), output)
    }

    async fn breakpoints(
        &self,
        context: &CallContext,
        conversation: &str,
        input: DebugInput,
    ) -> Answer {
        let operation = input.operation;
        let given = input.file.ok_or_else(|| {
            needs(
                operation,
                "file",
                "the source file, relative to the workspace root",
            )
        })?;
        let lines = input.lines.ok_or_else(|| {
            needs(
                operation,
                "lines",
                "1-based line numbers, or [] to clear the file's breakpoints",
            )
        })?;
        let file = context.workspace().resolve(&given)?;
        if !file.is_file() {
            return Err(ToolError::failed(format!(
                "{given} is not a file in the workspace; give a source file's path relative to the root"
            )));
        }
        if let Some(zero) = lines.iter().find(|line| **line == 0) {
            return Err(ToolError::failed(format!(
                "line {zero} is not a line: lines are 1-based"
            )));
        }
        let mut lines = lines;
        lines.sort_unstable();
        lines.dedup();
        self.supervisor
            .set_breakpoints(conversation, file.clone(), lines.clone());
        let shown = context.workspace().display(&file);
        let mut output = DebugOutput {
            operation: operation.name().to_owned(),
            ..DebugOutput::default()
        };
        let text = match self.supervisor.session(conversation) {
            None if lines.is_empty() => format!("cleared the breakpoints of {shown}"),
            None => format!(
                "breakpoints in {shown} at lines {}: set, and sent to the adapter when a session \
                 launches",
                join(&lines)
            ),
            Some(session) => {
                output.adapter = Some(session.adapter);
                let set = session.set_breakpoints(&file, &lines).await?;
                render_breakpoints(context.workspace(), &[set])
            }
        };
        Ok(ToolOutput::new(text, output))
    }

    async fn start(&self, context: &CallContext, conversation: &str, input: DebugInput) -> Answer {
        let operation = input.operation;
        if let Some(live) = self.supervisor.session(conversation) {
            let state = live.run_state();
            if state.is_live() {
                return Err(ToolError::failed(format!(
                    "a debug session is already running in this conversation: {} with {}, {}; \
                     one session at a time — call `terminate` first, or go on debugging it",
                    live.program,
                    live.adapter,
                    state.describe()
                )));
            }
            self.supervisor
                .finish(
                    conversation,
                    format!("{} {}", live.program, state.describe()),
                )
                .await;
        }
        let workspace = context.workspace();
        let root = workspace.root().to_path_buf();
        let (start, shown, chosen) = match operation {
            Operation::Attach => {
                let port = input.port.ok_or_else(|| {
                    needs(
                        operation,
                        "port",
                        "the local port of a `python -m debugpy --listen PORT` process",
                    )
                })?;
                (
                    Start::AttachPort { port },
                    format!("port {port}"),
                    "debugpy (attach by port)".to_owned(),
                )
            }
            _ => {
                let given = input.program.ok_or_else(|| {
                    needs(operation, "program", "the script, binary or Go package folder to run, relative to the workspace root")
                })?;
                let program = workspace.resolve(&given)?;
                if !program.exists() {
                    return Err(ToolError::failed(format!(
                        "{given} does not exist in the workspace; give the script, binary or Go \
                         package folder to run, relative to the root"
                    )));
                }
                let (adapter, why) = match input.adapter {
                    Some(adapter) => (adapter, "as asked".to_owned()),
                    None => match AdapterId::infer(&program) {
                        Some(adapter) => (adapter, "inferred from the program".to_owned()),
                        None => {
                            return Err(ToolError::failed(format!(
                                "cannot tell which adapter debugs {given}: it is not a .py or .go \
                                 file, a Go package folder or an executable; pass `adapter` \
                                 (debugpy, lldb, delve)"
                            )));
                        }
                    },
                };
                let found = adapters::find(adapter, &root, Some(&program))
                    .await
                    .map_err(ToolError::failed)?;
                (
                    Start::Launch {
                        found,
                        program: program.clone(),
                        args: input.args.unwrap_or_default(),
                    },
                    workspace.display(&program),
                    format!("{adapter} ({why})"),
                )
            }
        };
        context.progress(format!("starting {chosen} for {shown}"));
        let breakpoints = self.supervisor.breakpoints(conversation);
        let config = self.supervisor.config();
        let (session, set) = Session::start(
            start,
            &root,
            shown.clone(),
            context.run.sandbox.clone(),
            &breakpoints,
            config.timeouts(),
        )
        .await
        .map_err(|error| ToolError::failed(format!("{} did not start: {error}", shown)))?;
        let session = self.supervisor.install(conversation, session);
        // The handshake is done: the program runs, unless it already stopped or exited.
        session.mark_running(0);
        let mut head = format!(
            "{} {shown} with {chosen}\n",
            if operation == Operation::Attach {
                "attached to"
            } else {
                "launched"
            }
        );
        if !set.is_empty() {
            head.push_str(&render_breakpoints(context.workspace(), &set));
            head.push('\n');
        }
        if operation == Operation::Attach && breakpoints.is_empty() {
            // An attached program runs on; it stops only at a breakpoint or a `pause`.
            let mut output = DebugOutput {
                operation: operation.name().to_owned(),
                adapter: Some(session.adapter),
                ..DebugOutput::default()
            };
            session.mark_running(0);
            output.state = Some("running".to_owned());
            head.push_str("the program runs; set breakpoints, or call `pause`");
            return Ok(ToolOutput::new(head, output));
        }
        self.settle(context, conversation, &session, operation, 0, head)
            .await
    }

    async fn in_session(
        &self,
        context: &CallContext,
        conversation: &str,
        session: &Arc<Session>,
        input: DebugInput,
    ) -> Answer {
        let operation = input.operation;
        let mut output = DebugOutput {
            operation: operation.name().to_owned(),
            adapter: Some(session.adapter),
            ..DebugOutput::default()
        };
        match operation {
            Operation::Continue
            | Operation::StepOver
            | Operation::StepIn
            | Operation::StepOut
            | Operation::Pause => {
                let state = session.run_state();
                if !state.is_live() {
                    return self
                        .settle(context, conversation, session, operation, 0, String::new())
                        .await;
                }
                let running = matches!(state, RunState::Running | RunState::Starting);
                if running && operation != Operation::Pause {
                    return Err(ToolError::failed(format!(
                        "`{}` needs the program stopped, and it is running: call `pause` first, \
                         or `status` to see where it is",
                        operation.name()
                    )));
                }
                let thread = self.thread(session, input.thread_id).await?;
                let command = match operation {
                    Operation::Continue => "continue",
                    Operation::StepOver => "next",
                    Operation::StepIn => "stepIn",
                    Operation::StepOut => "stepOut",
                    _ => "pause",
                };
                let since = session.epoch();
                session
                    .request(command, json!({"threadId": thread}))
                    .await
                    .map_err(ToolError::from)?;
                if operation != Operation::Pause {
                    session.mark_running(since);
                }
                self.settle(
                    context,
                    conversation,
                    session,
                    operation,
                    since,
                    String::new(),
                )
                .await
            }
            Operation::Threads => {
                let threads = self.threads(session).await?;
                let mut text = String::new();
                for thread in &threads {
                    let _ = writeln!(text, "thread {}: {}", thread.id, thread.name);
                }
                output.state = Some(session.run_state().describe());
                Ok(ToolOutput::new(text.trim_end().to_owned(), output))
            }
            Operation::Stack => {
                let thread = self.thread(session, input.thread_id).await?;
                let body = session
                    .request(
                        "stackTrace",
                        json!({"threadId": thread, "startFrame": 0, "levels": MAX_FRAMES + 1}),
                    )
                    .await?;
                let trace: StackTraceBody = dap::body(body);
                Ok(ToolOutput::new(
                    render_stack(context.workspace(), thread, &trace),
                    output,
                ))
            }
            Operation::Scopes => {
                let frame = input
                    .frame_id
                    .ok_or_else(|| needs(operation, "frame_id", "a frame id from `stack`"))?;
                let body = session.request("scopes", json!({"frameId": frame})).await?;
                let scopes: Vec<Scope> =
                    serde_json::from_value(body["scopes"].clone()).unwrap_or_default();
                let mut text = format!("scopes of frame {frame}:\n");
                for scope in &scopes {
                    let _ = writeln!(
                        text,
                        "{} (reference {}){}",
                        scope.name,
                        scope.variables_reference,
                        if scope.expensive { ", expensive" } else { "" }
                    );
                }
                Ok(ToolOutput::new(text.trim_end().to_owned(), output))
            }
            Operation::Variables => {
                let reference = input.reference.ok_or_else(|| {
                    needs(
                        operation,
                        "reference",
                        "a reference from `scopes` or from a variable of an earlier `variables`",
                    )
                })?;
                let body = session
                    .request("variables", json!({"variablesReference": reference}))
                    .await?;
                let variables: Vec<Variable> =
                    serde_json::from_value(body["variables"].clone()).unwrap_or_default();
                Ok(ToolOutput::new(
                    render_variables(reference, &variables),
                    output,
                ))
            }
            Operation::Evaluate => {
                let expression = input
                    .expression
                    .ok_or_else(|| needs(operation, "expression", "the expression to evaluate"))?;
                let frame = match input.frame_id {
                    Some(frame) => Some(frame),
                    None => self
                        .top_frame(session, None)
                        .await
                        .ok()
                        .flatten()
                        .map(|f| f.id),
                };
                let context_name = match session.adapter {
                    AdapterId::Debugpy => "repl",
                    _ => "watch",
                };
                let mut arguments = json!({"expression": expression, "context": context_name});
                if let Some(frame) = frame {
                    arguments["frameId"] = json!(frame);
                }
                let body: EvaluateBody = dap::body(session.request("evaluate", arguments).await?);
                let mut text = format!("{expression} = {}", cap(&body.result, MAX_VALUE_CHARS));
                if let Some(type_name) = body.type_name.filter(|t| !t.is_empty()) {
                    let _ = write!(text, " ({type_name})");
                }
                if body.variables_reference > 0 {
                    let _ = write!(text, " [reference {}]", body.variables_reference);
                }
                Ok(ToolOutput::new(text, output))
            }
            Operation::Output => {
                let (printed, cut) = session.take_output();
                output.state = Some(session.run_state().describe());
                Ok(ToolOutput::new(render_output(&printed, cut, true), output))
            }
            Operation::Terminate => {
                let state = session.run_state();
                let (printed, cut) = session.take_output();
                self.supervisor
                    .finish(conversation, format!("{} was terminated", session.program))
                    .await;
                let mut text = if session.program.starts_with("port ") {
                    format!(
                        "detached from {} ({} before); the program was not started by us and \
                         runs on",
                        session.program,
                        state.describe()
                    )
                } else {
                    format!(
                        "terminated {} ({} before); the adapter and the program are gone",
                        session.program,
                        state.describe()
                    )
                };
                if !printed.is_empty() {
                    text.push('\n');
                    text.push_str(&render_output(&printed, cut, false));
                }
                output.state = Some("terminated".to_owned());
                Ok(ToolOutput::new(text, output))
            }
            Operation::Adapters
            | Operation::Status
            | Operation::Breakpoints
            | Operation::Launch
            | Operation::Attach => Err(ToolError::failed(format!(
                "`{}` is not a session operation",
                operation.name()
            ))),
        }
    }

    /// Waits for the program to stop or exit after `since`, and renders where it is.
    async fn settle(
        &self,
        context: &CallContext,
        conversation: &str,
        session: &Arc<Session>,
        operation: Operation,
        since: u64,
        mut text: String,
    ) -> Answer {
        let timeout = self.supervisor.config().stop_timeout();
        let progress_context = context.clone();
        let progress = move |message: String| progress_context.progress(message);
        let mut waited = session
            .wait_settled(since, timeout, context.cancellation(), &progress)
            .await;
        if waited == Waited::Cancelled {
            // A cancelled control operation pauses the program, so it is not left running
            // unseen, and returns within the cancel grace.
            let since = session.epoch();
            if let Ok(thread) = self.thread(session, None).await {
                let _ = session.request("pause", json!({"threadId": thread})).await;
            }
            let never = tokio_util::sync::CancellationToken::new();
            waited = session
                .wait_settled(since, Duration::from_secs(2), &never, &|_| {})
                .await;
            text.push_str("cancelled: the program was paused\n");
        }
        let mut output = DebugOutput {
            operation: operation.name().to_owned(),
            adapter: Some(session.adapter),
            ..DebugOutput::default()
        };
        if matches!(
            session.run_state(),
            RunState::Ended(_) | RunState::Exited(None)
        ) {
            // Some adapters (delve) tell the exit code only while the session is being
            // ended: end it now, then read the state.
            let state = session.run_state();
            self.supervisor
                .finish(
                    conversation,
                    format!("{} {}", session.program, state.describe()),
                )
                .await;
            session.wait_exit_code(Duration::from_millis(500)).await;
        }
        let state = session.run_state();
        output.state = Some(state.describe());
        match (&state, waited) {
            (RunState::Running | RunState::Starting, _) => {
                let _ = write!(
                    text,
                    "still running after {}s; the program keeps running: call `pause` to stop it, \
                     or `status` later",
                    timeout.as_secs()
                );
                let (printed, cut) = session.take_output();
                if !printed.is_empty() {
                    text.push('\n');
                    text.push_str(&render_output(&printed, cut, false));
                }
            }
            (RunState::Stopped(stop), _) => {
                let top = self.top_frame(session, stop.thread_id).await.ok().flatten();
                let place = StopPlace {
                    reason: stop.reason.clone(),
                    thread_id: stop.thread_id,
                    file: top
                        .as_ref()
                        .and_then(|f| f.source.as_ref()?.path.as_deref())
                        .map(|p| context.workspace().display(Path::new(p))),
                    line: top.as_ref().map(|f| f.line),
                    frame_id: top.as_ref().map(|f| f.id),
                };
                let _ = write!(
                    text,
                    "stopped: {}{} on thread {}",
                    stop.reason,
                    stop.description
                        .as_ref()
                        .filter(|d| !d.eq_ignore_ascii_case(&stop.reason))
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default(),
                    stop.thread_id.map_or("?".to_owned(), |t| t.to_string())
                );
                if let Some(frame) = &top {
                    text.push('\n');
                    text.push_str(&render_frame(context.workspace(), frame));
                    if let Some(locals) = self.locals_line(session, frame.id).await {
                        let _ = write!(text, "\nlocals: {locals}");
                    }
                }
                let (printed, cut) = session.take_output();
                if !printed.is_empty() {
                    text.push('\n');
                    text.push_str(&render_output(&printed, cut, false));
                }
                output.stopped = Some(place);
            }
            (RunState::Exited(code), _) => {
                output.exit_code = *code;
                let _ = write!(
                    text,
                    "the program exited{}",
                    code.map(|c| format!(" with code {c}")).unwrap_or_default()
                );
                let _ = session.take_output();
                let last = session.last_lines(10);
                if !last.is_empty() {
                    let _ = write!(text, "\nits last output lines:\n{}", last.join("\n"));
                }
                self.supervisor
                    .finish(
                        conversation,
                        format!("{} {}", session.program, state.describe()),
                    )
                    .await;
            }
            (RunState::Ended(why), _) => {
                let _ = write!(text, "the session ended: {why}");
                let last = session.last_lines(10);
                if !last.is_empty() {
                    let _ = write!(
                        text,
                        "\nthe program's last output lines:\n{}",
                        last.join("\n")
                    );
                }
                self.supervisor
                    .finish(
                        conversation,
                        format!("{} {}", session.program, state.describe()),
                    )
                    .await;
            }
        }
        Ok(ToolOutput::new(text.trim_end().to_owned(), output))
    }

    async fn threads(&self, session: &Session) -> Result<Vec<Thread>, ToolError> {
        let body = session.request("threads", json!({})).await?;
        Ok(serde_json::from_value(body["threads"].clone()).unwrap_or_default())
    }

    /// The thread a call means: the one given, the last stopped one, or the first.
    async fn thread(&self, session: &Session, given: Option<i64>) -> Result<i64, ToolError> {
        if let Some(thread) = given {
            return Ok(thread);
        }
        if let RunState::Stopped(stop) = session.run_state()
            && let Some(thread) = stop.thread_id
        {
            return Ok(thread);
        }
        self.threads(session)
            .await?
            .first()
            .map(|thread| thread.id)
            .ok_or_else(|| ToolError::failed("the program has no threads to act on"))
    }

    async fn top_frame(
        &self,
        session: &Session,
        thread: Option<i64>,
    ) -> Result<Option<StackFrame>, ToolError> {
        let thread = self.thread(session, thread).await?;
        let body = session
            .request(
                "stackTrace",
                json!({"threadId": thread, "startFrame": 0, "levels": 1}),
            )
            .await?;
        let trace: StackTraceBody = dap::body(body);
        Ok(trace.stack_frames.into_iter().next())
    }

    /// The frame's locals in one short line: the first scope that is not expensive.
    async fn locals_line(&self, session: &Session, frame: i64) -> Option<String> {
        let body = session
            .request("scopes", json!({"frameId": frame}))
            .await
            .ok()?;
        let scopes: Vec<Scope> = serde_json::from_value(body["scopes"].clone()).ok()?;
        let scope = scopes.iter().find(|scope| !scope.expensive)?;
        let body = session
            .request(
                "variables",
                json!({"variablesReference": scope.variables_reference}),
            )
            .await
            .ok()?;
        let variables: Vec<Variable> = serde_json::from_value(body["variables"].clone()).ok()?;
        Some(render_locals(&variables))
    }
}

fn join(lines: &[u32]) -> String {
    lines
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `text` cut to `max` characters, with a note saying how much was cut.
pub(crate) fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}… ({} more characters cut)", total - max)
}

fn render_adapters(reports: &[AdapterReport]) -> String {
    let mut text = String::new();
    for report in reports {
        let _ = write!(
            text,
            "{}: {}",
            report.adapter,
            if report.usable {
                "usable"
            } else {
                "not usable"
            }
        );
        match &report.marker {
            Some(marker) => {
                let _ = write!(text, "; marker {marker}");
            }
            None => text.push_str("; no marker"),
        }
        match &report.binary {
            Some(binary) => {
                let _ = write!(
                    text,
                    "; binary {} (as {}{})",
                    binary.path.display(),
                    binary.matched,
                    binary
                        .version
                        .as_ref()
                        .map(|v| format!(", {v}"))
                        .unwrap_or_default()
                );
            }
            None => text.push_str("; no binary"),
        }
        if let Some(problem) = &report.problem {
            let _ = write!(text, "\n  why not: {problem}");
        }
        text.push('\n');
    }
    text.trim_end().to_owned()
}

fn render_breakpoints(workspace: &Workspace, set: &[FileBreakpoints]) -> String {
    let mut text = String::new();
    for file in set {
        let shown = workspace.display(&file.file);
        if file.asked.is_empty() {
            let _ = writeln!(text, "cleared the breakpoints of {shown}");
            continue;
        }
        let parts: Vec<String> = file
            .asked
            .iter()
            .enumerate()
            .map(|(index, asked)| match file.answered.get(index) {
                Some(bp) if bp.verified => match bp.line {
                    Some(line) if line != *asked => format!("{asked} verified (moved to {line})"),
                    _ => format!("{asked} verified"),
                },
                Some(bp) => format!(
                    "{asked} not verified{}",
                    bp.message
                        .as_ref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default()
                ),
                None => format!("{asked} not answered"),
            })
            .collect();
        let _ = writeln!(text, "breakpoints in {shown}: {}", parts.join(", "));
    }
    text.trim_end().to_owned()
}

fn frame_place(workspace: &Workspace, frame: &StackFrame) -> String {
    let file = frame
        .source
        .as_ref()
        .and_then(|s| s.path.clone().or_else(|| s.name.clone()))
        .map(|p| workspace.display(Path::new(&p)))
        .unwrap_or_else(|| "<no source>".to_owned());
    format!("{file}:{}", frame.line)
}

/// The top frame as `path:LINE in NAME`, with the source lines around it (the stop line
/// marked).
fn render_frame(workspace: &Workspace, frame: &StackFrame) -> String {
    let mut text = format!(
        "at {} in {} (frame {})",
        frame_place(workspace, frame),
        frame.name,
        frame.id
    );
    let source = frame
        .source
        .as_ref()
        .and_then(|s| s.path.as_ref())
        .map(PathBuf::from)
        .filter(|path| std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() < 4 << 20))
        .and_then(|path| std::fs::read_to_string(path).ok());
    if let Some(source) = source
        && frame.line > 0
    {
        let first = frame.line.saturating_sub(CONTEXT_LINES).max(1);
        let last = frame.line + CONTEXT_LINES;
        for (index, line) in source.lines().enumerate() {
            let number = index as u32 + 1;
            if number < first {
                continue;
            }
            if number > last {
                break;
            }
            let marker = if number == frame.line { ">" } else { " " };
            let _ = write!(text, "\n{marker}{number:>5} | {}", cap(line, 200));
        }
    }
    text
}

fn render_locals(variables: &[Variable]) -> String {
    const SHOWN: usize = 12;
    let mut parts: Vec<String> = variables
        .iter()
        .filter(|v| {
            !v.name.starts_with("special variables") && !v.name.starts_with("function variables")
        })
        .take(SHOWN)
        .map(|v| format!("{} = {}", v.name, cap(&v.value, 60)))
        .collect();
    if variables.len() > SHOWN {
        parts.push(format!("… {} more", variables.len() - SHOWN));
    }
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(", ")
    }
}

fn render_stack(workspace: &Workspace, thread: i64, trace: &StackTraceBody) -> String {
    let mut text = format!("stack of thread {thread}:");
    for frame in trace.stack_frames.iter().take(MAX_FRAMES) {
        let _ = write!(
            text,
            "\nframe {}: {} at {}",
            frame.id,
            frame.name,
            frame_place(workspace, frame)
        );
    }
    let total = trace
        .total_frames
        .map(|t| t as usize)
        .unwrap_or(trace.stack_frames.len())
        .max(trace.stack_frames.len());
    if total > MAX_FRAMES {
        let _ = write!(
            text,
            "\n({} more frames not shown: the stack is capped at {MAX_FRAMES})",
            total - MAX_FRAMES
        );
    }
    text
}

fn render_variables(reference: i64, variables: &[Variable]) -> String {
    let mut text = format!("variables of reference {reference}:");
    for variable in variables.iter().take(MAX_CHILDREN) {
        let _ = write!(text, "\n{}", variable.name);
        if let Some(type_name) = variable.type_name.as_ref().filter(|t| !t.is_empty()) {
            let _ = write!(text, " ({type_name})");
        }
        let _ = write!(text, " = {}", cap(&variable.value, MAX_VALUE_CHARS));
        if variable.variables_reference > 0 {
            let _ = write!(text, " [reference {}]", variable.variables_reference);
        }
    }
    if variables.is_empty() {
        text.push_str("\n(none)");
    }
    if variables.len() > MAX_CHILDREN {
        let _ = write!(
            text,
            "\n({} more children not shown: variables are capped at {MAX_CHILDREN}; evaluate an \
             expression such as a slice to see others)",
            variables.len() - MAX_CHILDREN
        );
    }
    text
}

/// `output` after the session ended: everything its program printed, up to its end (DBG-5),
/// until the next launch.
fn ended_output(session: &Session) -> ToolOutput<DebugOutput> {
    let state = session.run_state();
    let (printed, cut) = session.run_output();
    let mut text = format!(
        "no debug session is running; the last one: {} {}",
        session.program,
        state.describe()
    );
    if printed.trim().is_empty() {
        text.push_str("; it printed nothing");
    } else {
        match cut {
            0 => text.push_str("; all it printed:\n"),
            cut => {
                let _ = writeln!(
                    text,
                    "; the last {} characters it printed ({cut} before them were cut):",
                    printed.chars().count()
                );
            }
        }
        text.push_str(printed.trim_end());
    }
    ToolOutput::new(
        text,
        DebugOutput {
            operation: "output".to_owned(),
            adapter: Some(session.adapter),
            state: Some(state.describe()),
            ..DebugOutput::default()
        },
    )
}

fn render_output(printed: &str, cut: usize, whole: bool) -> String {
    if printed.is_empty() {
        return "no output since the last call".to_owned();
    }
    let mut text = if whole {
        String::from("output since the last call:\n")
    } else {
        String::from("output:\n")
    };
    text.push_str(printed.trim_end());
    if cut > 0 {
        let _ = write!(text, "\n({cut} more characters of output were cut)");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dap::{Breakpoint, Source};

    /// A workspace holding `app.py` with ten numbered lines.
    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        std::fs::write(dir.path().join("app.py"), text).unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        (dir, workspace)
    }

    fn frame(workspace: &Workspace, id: i64, name: &str, line: u32) -> StackFrame {
        StackFrame {
            id,
            name: name.into(),
            source: Some(Source {
                name: Some("app.py".into()),
                path: Some(workspace.root().join("app.py").display().to_string()),
            }),
            line,
        }
    }

    #[test]
    fn dbg_5_a_stop_shows_its_line_marked_among_its_neighbours() {
        let (_dir, workspace) = workspace();
        assert_eq!(
            render_frame(&workspace, &frame(&workspace, 4, "main", 5)),
            "at app.py:5 in main (frame 4)\n     3 | line 3\n     4 | line 4\n>    5 | line 5\n     6 | line 6\n     7 | line 7"
        );
        // Near the top of the file there is less above.
        assert_eq!(
            render_frame(&workspace, &frame(&workspace, 1, "f", 1)),
            "at app.py:1 in f (frame 1)\n>    1 | line 1\n     2 | line 2\n     3 | line 3"
        );
    }

    #[test]
    fn dbg_5_the_stack_is_capped_at_thirty_frames() {
        let (_dir, workspace) = workspace();
        let trace = StackTraceBody {
            stack_frames: (0..31).map(|i| frame(&workspace, i, "f", 2)).collect(),
            total_frames: Some(45),
        };
        let text = render_stack(&workspace, 1, &trace);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "stack of thread 1:");
        assert_eq!(lines[1], "frame 0: f at app.py:2");
        assert_eq!(lines.len(), 1 + 30 + 1);
        assert_eq!(
            lines[31],
            "(15 more frames not shown: the stack is capped at 30)"
        );
    }

    #[test]
    fn dbg_5_breakpoints_say_which_the_adapter_verified() {
        let (_dir, workspace) = workspace();
        let file = workspace.root().join("app.py");
        let set = [FileBreakpoints {
            file: file.clone(),
            asked: vec![2, 4, 9],
            answered: vec![
                Breakpoint {
                    verified: true,
                    line: Some(2),
                    message: None,
                },
                Breakpoint {
                    verified: true,
                    line: Some(5),
                    message: None,
                },
                Breakpoint {
                    verified: false,
                    line: None,
                    message: Some("no code here".into()),
                },
            ],
        }];
        assert_eq!(
            render_breakpoints(&workspace, &set),
            "breakpoints in app.py: 2 verified, 4 verified (moved to 5), 9 not verified (no code here)"
        );
        let cleared = [FileBreakpoints {
            file,
            asked: Vec::new(),
            answered: Vec::new(),
        }];
        assert_eq!(
            render_breakpoints(&workspace, &cleared),
            "cleared the breakpoints of app.py"
        );
    }

    #[test]
    fn dbg_5_locals_fit_one_line() {
        let variables: Vec<Variable> = ["special variables", "a", "b"]
            .iter()
            .chain(std::iter::repeat_n(&"x", 12))
            .map(|name| Variable {
                name: (*name).into(),
                value: "1".repeat(if *name == "b" { 100 } else { 1 }),
                ..Variable::default()
            })
            .collect();
        let line = render_locals(&variables);
        assert!(line.starts_with("a = 1, b = 111"), "{line}");
        assert!(line.contains("… (40 more characters cut)"), "{line}");
        assert!(line.ends_with("… 3 more"), "{line}");
        assert_eq!(render_locals(&[]), "none");
    }

    #[test]
    fn dbg_5_output_says_what_was_cut() {
        assert_eq!(render_output("", 0, true), "no output since the last call");
        assert_eq!(
            render_output("a\nb\n", 12, true),
            "output since the last call:\na\nb\n(12 more characters of output were cut)"
        );
    }

    #[test]
    fn dbg_5_values_are_capped_with_a_note() {
        let long = "x".repeat(2_000);
        let capped = cap(&long, MAX_VALUE_CHARS);
        assert!(capped.starts_with(&"x".repeat(400)));
        assert!(capped.ends_with("… (1600 more characters cut)"), "{capped}");
        assert_eq!(cap("short", MAX_VALUE_CHARS), "short");
    }

    #[test]
    fn dbg_5_children_are_capped_at_fifty() {
        let variables: Vec<Variable> = (0..120)
            .map(|i| Variable {
                name: i.to_string(),
                value: i.to_string(),
                ..Variable::default()
            })
            .collect();
        let text = render_variables(7, &variables);
        assert_eq!(text.lines().count(), 1 + 50 + 1);
        assert!(
            text.ends_with("capped at 50; evaluate an expression such as a slice to see others)")
        );
    }
}
