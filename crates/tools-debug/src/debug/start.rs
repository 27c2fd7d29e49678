//! The operations around a session: `status`, `breakpoints` (kept by the supervisor, sent
//! to a live session) and `launch`/`attach`, which start one (DBG-4: never a second).

use std::fmt::Write as _;

use tools_core::{CallContext, ToolError, ToolOutput};

use super::render::{frame_at, join, render_breakpoints, render_breakpoints_set};
use super::{Answer, Debug, DebugInput, DebugOutput, Operation, StopPlace, needs};
use crate::adapters::{self, AdapterId};
use crate::session::{RunState, Session, Start};

impl Debug {
    pub(super) async fn status(
        &self,
        context: &CallContext,
        conversation: &str,
    ) -> ToolOutput<DebugOutput> {
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
                        frame_at(context.workspace(), &frame),
                        frame.name,
                        frame.id
                    );
                    output.stopped = Some(StopPlace::new(context.workspace(), stop, Some(&frame)));
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
        text.push_str(&render_breakpoints_set(context.workspace(), &breakpoints));
        ToolOutput::new(text.trim_end().to_owned(), output)
    }

    pub(super) async fn breakpoints(
        &self,
        context: &CallContext,
        conversation: &str,
        input: DebugInput,
    ) -> Answer {
        let operation = input.operation;
        let given = input.path.ok_or_else(|| {
            needs(
                operation,
                "path",
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

    pub(super) async fn start(
        &self,
        context: &CallContext,
        conversation: &str,
        input: DebugInput,
    ) -> Answer {
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
                let sandbox = context.run.sandbox.as_ref();
                let found = adapters::find(adapter, &root, Some(&program), sandbox).await?;
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
}
