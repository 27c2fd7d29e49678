//! The operations on a live session that run the program — `continue`, the steps, `pause` —
//! and `terminate`; each control operation answers once the program stopped or exited
//! (`settle`), or says it still runs.

use std::sync::Arc;
use std::time::Duration;

use tools_core::{CallContext, ToolError, ToolOutput};

use super::render::{
    OutputHeading, render_ended, render_exited, render_output, render_still_running, render_stopped,
};
use super::{Answer, Debug, DebugInput, DebugOutput, Operation, StopPlace};
use crate::dap::requests::{Continue, Next, Pause, Request, StepIn, StepOut, ThreadArguments};
use crate::session::{RunState, Session, Waited};

/// How long the output must be quiet before a stop is reported with what the program printed.
const OUTPUT_QUIET: Duration = Duration::from_millis(25);
/// The most a stop's answer waits for late output.
const OUTPUT_QUIET_BOUND: Duration = Duration::from_millis(250);

impl Debug {
    /// An operation that needs a live session, on `session`.
    pub(super) async fn in_session(
        &self,
        context: &CallContext,
        conversation: &str,
        session: &Arc<Session>,
        input: DebugInput,
    ) -> Answer {
        let operation = input.operation;
        let output = DebugOutput {
            operation: operation.name().to_owned(),
            adapter: Some(session.adapter),
            ..DebugOutput::default()
        };
        let thread = input.thread_id;
        match operation {
            Operation::Continue => {
                self.control::<Continue>(context, conversation, session, operation, thread)
                    .await
            }
            Operation::StepOver => {
                self.control::<Next>(context, conversation, session, operation, thread)
                    .await
            }
            Operation::StepIn => {
                self.control::<StepIn>(context, conversation, session, operation, thread)
                    .await
            }
            Operation::StepOut => {
                self.control::<StepOut>(context, conversation, session, operation, thread)
                    .await
            }
            Operation::Pause => {
                self.control::<Pause>(context, conversation, session, operation, thread)
                    .await
            }
            Operation::Threads => self.list_threads(session, output).await,
            Operation::Stack => self.stack(context, session, thread, output).await,
            Operation::Scopes => self.scopes(session, input.frame_id, output).await,
            Operation::Variables => self.variables(session, input.reference, output).await,
            Operation::Evaluate => {
                self.evaluate(session, input.expression, input.frame_id, output)
                    .await
            }
            Operation::Output => Ok(self.output(session, output)),
            Operation::Terminate => Ok(self.terminate(conversation, session, output).await),
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

    /// `continue`, a step or `pause` (the request `R`), then the stop or exit it led to.
    async fn control<R>(
        &self,
        context: &CallContext,
        conversation: &str,
        session: &Arc<Session>,
        operation: Operation,
        thread: Option<i64>,
    ) -> Answer
    where
        R: Request<Arguments = ThreadArguments>,
    {
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
        let thread_id = self.thread(session, thread).await?;
        let since = session.epoch();
        session
            .request::<R>(ThreadArguments { thread_id })
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

    /// `terminate`: ends the session, saying what it printed last.
    async fn terminate(
        &self,
        conversation: &str,
        session: &Session,
        mut output: DebugOutput,
    ) -> ToolOutput<DebugOutput> {
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
            text.push_str(&render_output(&printed, cut, OutputHeading::OnTheWay));
        }
        output.state = Some("terminated".to_owned());
        ToolOutput::new(text, output)
    }

    /// Waits for the program to stop or exit after `since`, and renders where it is.
    pub(super) async fn settle(
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
            if let Ok(thread_id) = self.thread(session, None).await {
                let _ = session
                    .request::<Pause>(ThreadArguments { thread_id })
                    .await;
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
                let (printed, cut) = session.take_output();
                text.push_str(&render_still_running(timeout, &printed, cut));
            }
            (RunState::Stopped(stop), _) => {
                let top = self.top_frame(session, stop.thread_id).await.ok().flatten();
                let locals = match &top {
                    Some(frame) => self.locals_line(session, frame.id).await,
                    None => None,
                };
                session.output_quiet(OUTPUT_QUIET, OUTPUT_QUIET_BOUND).await;
                let (printed, cut) = session.take_output();
                text.push_str(&render_stopped(
                    context.workspace(),
                    stop,
                    top.as_ref(),
                    locals.as_deref(),
                    (&printed, cut),
                ));
                output.stopped = Some(StopPlace::new(context.workspace(), stop, top.as_ref()));
            }
            (RunState::Exited(code), _) => {
                output.exit_code = *code;
                let _ = session.take_output();
                text.push_str(&render_exited(*code, &session.last_lines(10)));
                self.supervisor
                    .finish(
                        conversation,
                        format!("{} {}", session.program, state.describe()),
                    )
                    .await;
            }
            (RunState::Ended(why), _) => {
                text.push_str(&render_ended(why, &session.last_lines(10)));
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
}
