//! What a running call can reach besides its arguments: the run, its identity and origin, its
//! cancellation token, a progress reporter, and the bridge that dispatches nested calls
//! (CORE-8).

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::dispatch::Bridge;
use crate::{Lane, QuestionPort, Run, Workspace};

/// Who made a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The model (or the client serving it) called the tool directly.
    Model,
    /// A running call dispatched it through its bridge (`eval`'s `tool()`).
    Bridge {
        /// The id of the call that made it.
        parent: u64,
        /// The tool of that call.
        parent_tool: &'static str,
        /// How many bridge hops lead here: 1 for a call made by a model's call.
        depth: u32,
    },
}

impl Origin {
    /// How many bridge hops lead to the call (0 for the model's own calls).
    pub fn depth(&self) -> u32 {
        match self {
            Origin::Model => 0,
            Origin::Bridge { depth, .. } => *depth,
        }
    }
}

/// One progress report of a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// What is happening now, one line for a person or a model.
    pub message: String,
    /// How much is done, in the unit of `total`.
    pub done: Option<f64>,
    /// How much there is in all, when known.
    pub total: Option<f64>,
}

/// Where a call's progress goes: MCP `notifications/progress`, the terminal, a parent call.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// What every call can reach.
#[derive(Clone)]
pub struct CallContext {
    /// The run the call belongs to.
    pub run: Arc<Run>,
    pub(crate) id: u64,
    pub(crate) tool: &'static str,
    pub(crate) origin: Origin,
    pub(crate) cancel: CancellationToken,
    pub(crate) progress: Option<ProgressSink>,
    /// Where this call's cards go instead of the run's port (see `CallOptions::asker`).
    pub(crate) asker: Option<Arc<dyn QuestionPort>>,
    /// Lanes held by this call and every call it was bridged from.
    pub(crate) held: Vec<Lane>,
    pub(crate) bridge: Option<Bridge>,
}

tokio::task_local! {
    static CURRENT: CallContext;
}

impl CallContext {
    /// A context for calling a tool directly, outside any dispatcher (tests, embedding): never
    /// cancelled, progress dropped, no bridge.
    pub fn detached(run: Arc<Run>) -> Self {
        CallContext {
            run,
            id: 0,
            tool: "",
            origin: Origin::Model,
            cancel: CancellationToken::new(),
            progress: None,
            asker: None,
            held: Vec::new(),
            bridge: None,
        }
    }

    /// The workspace every path argument is confined to.
    pub fn workspace(&self) -> &Workspace {
        &self.run.workspace
    }

    /// This call's number in the run, unique among its calls.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Who made the call.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Fires when the client cancels the call, its caller goes away, or the run shuts down. A
    /// tool that declares `GRACEFUL_CANCEL` stops when it fires (within the cancel grace);
    /// others are simply dropped.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Reports what the call is doing now.
    pub fn progress(&self, message: impl Into<String>) {
        self.send(Progress {
            message: message.into(),
            done: None,
            total: None,
        });
    }

    /// Reports progress with a count: `done` of `total`.
    pub fn progress_of(&self, message: impl Into<String>, done: f64, total: Option<f64>) {
        self.send(Progress {
            message: message.into(),
            done: Some(done),
            total,
        });
    }

    fn send(&self, progress: Progress) {
        if let Some(sink) = &self.progress {
            sink(progress);
        }
    }

    /// The handle that dispatches nested calls on this run through the same path as a
    /// model's (CORE-8); `None` outside a dispatcher.
    pub fn bridge(&self) -> Option<&Bridge> {
        self.bridge.as_ref()
    }

    /// The context of the call running on this task, if any: lets code deep inside a tool
    /// (a language server's indexing wait) report progress without threading the context.
    pub fn current() -> Option<CallContext> {
        CURRENT.try_with(Clone::clone).ok()
    }

    /// Runs `future` with this context as [`CallContext::current`].
    pub(crate) async fn scope<F: Future>(self, future: F) -> F::Output {
        CURRENT.scope(self, future).await
    }
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("id", &self.id)
            .field("tool", &self.tool)
            .field("origin", &self.origin)
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

/// Reports progress for the call running on this task; nothing happens outside a call.
pub fn report_progress(message: impl Into<String>) {
    if let Some(context) = CallContext::current() {
        context.progress(message);
    }
}
