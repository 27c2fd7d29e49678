//! The operations that look at a stopped program — `threads`, `stack`, `scopes`,
//! `variables`, `evaluate`, `output` — and the asking they share: which thread a call means,
//! the top frame, the locals line shown at a stop.

use tools_core::{CallContext, ToolError, ToolOutput};

use super::render::{
    OutputHeading, render_evaluation, render_locals, render_output, render_scopes, render_stack,
    render_threads, render_variables,
};
use super::{Answer, Debug, DebugOutput, MAX_FRAMES, Operation, needs};
use crate::adapters::AdapterId;
use crate::dap::requests::{
    Evaluate, EvaluateArguments, NoArguments, Scopes, ScopesArguments, StackTrace,
    StackTraceArguments, Threads, Variables, VariablesArguments,
};
use crate::dap::types::{StackFrame, Thread};
use crate::session::{RunState, Session};

impl Debug {
    pub(super) async fn list_threads(&self, session: &Session, mut output: DebugOutput) -> Answer {
        let threads = self.threads(session).await?;
        output.state = Some(session.run_state().describe());
        Ok(ToolOutput::new(render_threads(&threads), output))
    }

    pub(super) async fn stack(
        &self,
        context: &CallContext,
        session: &Session,
        thread: Option<i64>,
        output: DebugOutput,
    ) -> Answer {
        let thread_id = self.thread(session, thread).await?;
        let trace = session
            .request::<StackTrace>(StackTraceArguments {
                thread_id,
                start_frame: 0,
                // One more than shown, so that a capped stack says so even when the adapter
                // gives no `totalFrames`.
                levels: MAX_FRAMES + 1,
            })
            .await?;
        Ok(ToolOutput::new(
            render_stack(context.workspace(), thread_id, &trace),
            output,
        ))
    }

    pub(super) async fn scopes(
        &self,
        session: &Session,
        frame: Option<i64>,
        output: DebugOutput,
    ) -> Answer {
        let frame_id =
            frame.ok_or_else(|| needs(Operation::Scopes, "frame_id", "a frame id from `stack`"))?;
        let answer = session
            .request::<Scopes>(ScopesArguments { frame_id })
            .await?;
        Ok(ToolOutput::new(
            render_scopes(frame_id, &answer.scopes),
            output,
        ))
    }

    pub(super) async fn variables(
        &self,
        session: &Session,
        reference: Option<i64>,
        output: DebugOutput,
    ) -> Answer {
        let reference = reference.ok_or_else(|| {
            needs(
                Operation::Variables,
                "reference",
                "a reference from `scopes` or from a variable of an earlier `variables`",
            )
        })?;
        let answer = session
            .request::<Variables>(VariablesArguments {
                variables_reference: reference,
            })
            .await?;
        Ok(ToolOutput::new(
            render_variables(reference, &answer.variables),
            output,
        ))
    }

    pub(super) async fn evaluate(
        &self,
        session: &Session,
        expression: Option<String>,
        frame: Option<i64>,
        output: DebugOutput,
    ) -> Answer {
        let expression = expression.ok_or_else(|| {
            needs(
                Operation::Evaluate,
                "expression",
                "the expression to evaluate",
            )
        })?;
        let frame_id = match frame {
            Some(frame) => Some(frame),
            None => self
                .top_frame(session, None)
                .await
                .ok()
                .flatten()
                .map(|f| f.id),
        };
        let context = match session.adapter {
            AdapterId::Debugpy => "repl",
            _ => "watch",
        };
        let answer = session
            .request::<Evaluate>(EvaluateArguments {
                expression: expression.clone(),
                context,
                frame_id,
            })
            .await?;
        Ok(ToolOutput::new(
            render_evaluation(&expression, &answer),
            output,
        ))
    }

    pub(super) fn output(
        &self,
        session: &Session,
        mut output: DebugOutput,
    ) -> ToolOutput<DebugOutput> {
        let (printed, cut) = session.take_output();
        output.state = Some(session.run_state().describe());
        ToolOutput::new(
            render_output(&printed, cut, OutputHeading::SinceTheLastCall),
            output,
        )
    }

    async fn threads(&self, session: &Session) -> Result<Vec<Thread>, ToolError> {
        Ok(session.request::<Threads>(NoArguments {}).await?.threads)
    }

    /// The thread a call means: the one given, the last stopped one, or the first.
    pub(super) async fn thread(
        &self,
        session: &Session,
        given: Option<i64>,
    ) -> Result<i64, ToolError> {
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

    pub(super) async fn top_frame(
        &self,
        session: &Session,
        thread: Option<i64>,
    ) -> Result<Option<StackFrame>, ToolError> {
        let thread_id = self.thread(session, thread).await?;
        let trace = session
            .request::<StackTrace>(StackTraceArguments {
                thread_id,
                start_frame: 0,
                levels: 1,
            })
            .await?;
        Ok(trace.stack_frames.into_iter().next())
    }

    /// The frame's locals in one short line: the first scope that is not expensive.
    pub(super) async fn locals_line(&self, session: &Session, frame_id: i64) -> Option<String> {
        let answer = session
            .request::<Scopes>(ScopesArguments { frame_id })
            .await
            .ok()?;
        let scope = answer.scopes.iter().find(|scope| !scope.expensive)?;
        let answer = session
            .request::<Variables>(VariablesArguments {
                variables_reference: scope.variables_reference,
            })
            .await
            .ok()?;
        Some(render_locals(&answer.variables))
    }
}
