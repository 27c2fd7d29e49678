//! The one path every call takes, a model's or a bridge's (CORE-8): look up → surface check →
//! argument decoding → the tool's own checks (refusals that need no resource) → approval gate
//! → lane (CORE-6) → wrappers → the tool → output limits.
//! Whatever happens inside, the caller gets a [`ToolResult`]; no panic escapes.
//!
//! Each call runs as a task of the dispatcher, not inside the caller's future: when the caller
//! goes away or cancels, the call's token fires and a tool that stops by itself gets the
//! cancel grace to do so before it is dropped and its lane freed. Shutdown cancels every call,
//! waits for them within its bound, then stops the run's resources.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::context::{Origin, Progress, ProgressSink};
use crate::registry::Registered;
use crate::{
    Answer, ApprovalPolicy, CallContext, Lane, QuestionPort, Registry, Surface, ToolError,
    ToolResult, ToolSpec, Writes,
};

/// How deep bridge calls may nest: a cell's `tool()` is 1, a tool that cell called calling
/// another is 2; past this a loop is assumed.
pub const MAX_BRIDGE_DEPTH: u32 = 4;

/// A call by name with JSON arguments, as it arrives from a model or a bridge.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// The arguments object.
    pub arguments: Value,
}

/// The rest of the chain, handed to a [`Wrapper`]: call it to run the tool (and the wrappers
/// inside this one).
pub type Next<'a> = Box<dyn FnOnce() -> BoxFuture<'a, ToolResult> + Send + 'a>;

/// Middleware around tools: runs code before and after them and may add to their result.
/// Diagnostics on write (LSP-6) is one.
pub trait Wrapper: Send + Sync + 'static {
    /// Whether this wrapper applies to the tool `spec` describes (e.g. every tool that
    /// writes files).
    fn wraps(&self, spec: &ToolSpec) -> bool;

    /// Runs around one call, knowing the files it declared it will write; must call `next`
    /// exactly once to run the tool.
    fn around<'a>(
        &'a self,
        context: &'a CallContext,
        call: &'a ToolCall,
        writes: &'a Writes,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult>;
}

/// How a dispatcher treats calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatcherOptions {
    /// Which tiers are listed and callable (CORE-4).
    pub surface: Surface,
    /// What happens to write and exec calls (CORE-5).
    pub approval: ApprovalPolicy,
    /// The most bytes of text a result may carry; the rest is cut with a note saying so.
    pub max_output_bytes: usize,
    /// How long a cancelled tool that stops by itself gets before it is dropped.
    pub cancel_grace: Duration,
    /// How the operator of this host allows write and exec calls, for refusals to say (the
    /// CLI's flag; the Python bindings' `approval="allow"`).
    pub how_to_allow: String,
}

/// How a `serve` operator allows write and exec calls.
pub const ALLOW_WITH_FLAG: &str = "start the server with `--approval allow`";

impl Default for DispatcherOptions {
    fn default() -> Self {
        DispatcherOptions {
            surface: Surface::Full,
            approval: ApprovalPolicy::Ask,
            max_output_bytes: 100 * 1024,
            cancel_grace: Duration::from_secs(5),
            how_to_allow: ALLOW_WITH_FLAG.to_owned(),
        }
    }
}

/// What a caller adds to one call: a token that cancels it, where its progress goes, and
/// where its cards go.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Fires when the caller cancels (MCP `notifications/cancelled`).
    pub cancel: Option<CancellationToken>,
    /// Receives the call's progress reports.
    pub progress: Option<ProgressSink>,
    /// Where cards raised by this call and the calls it bridges go (its approval, an
    /// `ask_user` it makes), instead of the run's port: an MCP server answers them through
    /// the request that made the call. `None`: the run's port. Numbering and expiry stay the
    /// run's (ASK-4).
    pub asker: Option<Arc<dyn QuestionPort>>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("cancel", &self.cancel)
            .field("progress", &self.progress.is_some())
            .field("asker", &self.asker.is_some())
            .finish()
    }
}

/// What shutting a run down did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownSummary {
    /// Calls still running when shutdown began (each was cancelled).
    pub calls_cancelled: usize,
    /// Whether every call had ended within the bound.
    pub calls_ended: bool,
    /// Resources that stopped within the bound, by name.
    pub stopped: Vec<String>,
    /// Resources that did not, by name: what they own is left for the process-level kill.
    pub timed_out: Vec<String>,
}

/// Serves calls against one registry on one surface. Cloning it is cheap; clones share calls,
/// lanes and shutdown.
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    registry: Arc<Registry>,
    options: DispatcherOptions,
    /// One lock per lane (CORE-6).
    lanes: Mutex<HashMap<Lane, Arc<tokio::sync::Mutex<()>>>>,
    /// Parent of every call's token: shutdown cancels them all.
    root: CancellationToken,
    calls: TaskTracker,
    closing: AtomicBool,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("options", &self.inner.options)
            .field("running", &self.inner.calls.len())
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// A dispatcher over `registry`.
    pub fn new(registry: Registry, options: DispatcherOptions) -> Self {
        Dispatcher {
            inner: Arc::new(Inner {
                registry: Arc::new(registry),
                options,
                lanes: Mutex::new(HashMap::new()),
                root: CancellationToken::new(),
                calls: TaskTracker::new(),
                closing: AtomicBool::new(false),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// The registry behind this dispatcher.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The options it was built with.
    pub fn options(&self) -> &DispatcherOptions {
        &self.inner.options
    }

    /// The tools this surface lists, sorted by name (CORE-4).
    pub fn tools(&self) -> Vec<&ToolSpec> {
        visible(&self.inner.registry, self.inner.options.surface).collect()
    }

    /// Whether `call` can run long (a cell, a debugger `continue`, a wait on a worker), so a
    /// server may answer it as a task; `false` for unknown tools and arguments that do not
    /// decode, which fail at once.
    pub fn may_run_long(&self, call: &ToolCall) -> bool {
        self.inner
            .lookup(&call.name)
            .is_ok_and(|registered| registered.tool.may_run_long(&call.arguments))
    }

    /// Runs one call by the model through every stage and returns its result; never panics.
    pub async fn dispatch(&self, call: ToolCall) -> ToolResult {
        self.dispatch_with(call, CallOptions::default()).await
    }

    /// [`Dispatcher::dispatch`], with the caller's cancellation and progress sink.
    pub async fn dispatch_with(&self, call: ToolCall, options: CallOptions) -> ToolResult {
        let token = self.inner.root.child_token();
        // The caller's token cancels ours; the link ends with the call.
        let _link = options.cancel.map(|theirs| {
            let ours = token.clone();
            let done = CancellationToken::new();
            let ended = done.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = theirs.cancelled() => ours.cancel(),
                    () = ended.cancelled() => {}
                }
            });
            done.drop_guard()
        });
        let caller = Caller {
            origin: Origin::Model,
            held: Vec::new(),
            token,
            progress: options.progress,
            asker: options.asker,
        };
        Inner::dispatch(&self.inner, call, caller).await
    }

    /// Whether shutdown has begun: new calls are refused.
    pub fn is_closing(&self) -> bool {
        self.inner.closing.load(Ordering::SeqCst)
    }

    /// Ends the run within `bound`: refuses new calls, cancels running ones and waits for them
    /// (each gets the cancel grace), then stops the run's registered resources side by side.
    /// What has not stopped by then is reported, for the process-level kill.
    pub async fn shutdown(&self, bound: Duration) -> ShutdownSummary {
        let deadline = Instant::now() + bound;
        let inner = &self.inner;
        inner.closing.store(true, Ordering::SeqCst);
        let calls_cancelled = inner.calls.len();
        inner.root.cancel();
        inner.calls.close();
        let calls_ended = tokio::time::timeout_at(deadline, inner.calls.wait())
            .await
            .is_ok();
        let mut summary = ShutdownSummary {
            calls_cancelled,
            calls_ended,
            ..ShutdownSummary::default()
        };
        // Resources stop side by side, so a slow one does not eat the others' time.
        let stops =
            inner
                .registry
                .run()
                .take_shutdowns()
                .into_iter()
                .map(|(name, resource)| async move {
                    let stopped = tokio::time::timeout_at(deadline, resource.shutdown())
                        .await
                        .is_ok();
                    (name, stopped)
                });
        for (name, stopped) in futures::future::join_all(stops).await {
            match stopped {
                true => summary.stopped.push(name),
                false => summary.timed_out.push(name),
            }
        }
        summary
    }
}

/// The handle a running call uses to dispatch nested calls on its run (CORE-8): the same
/// surface, decoding, approval, lanes, wrappers and output limit as a model's call.
#[derive(Clone)]
pub struct Bridge {
    inner: Weak<Inner>,
    parent: u64,
    parent_tool: &'static str,
    depth: u32,
    held: Vec<Lane>,
    cancel: CancellationToken,
    progress: Option<ProgressSink>,
    asker: Option<Arc<dyn QuestionPort>>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("parent", &self.parent)
            .field("parent_tool", &self.parent_tool)
            .field("depth", &self.depth)
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

impl Bridge {
    /// Dispatches `call` as a child of the call that owns this bridge. A call into a lane an
    /// ancestor holds, or one nesting deeper than [`MAX_BRIDGE_DEPTH`], is refused at once.
    /// Cancelling the parent cancels it.
    pub async fn call(&self, call: ToolCall) -> ToolResult {
        let Some(inner) = self.inner.upgrade() else {
            return ToolResult::error(&ToolError::failed(
                "the run has ended, so no more tools can be called from here",
            ));
        };
        let depth = self.depth + 1;
        if depth > MAX_BRIDGE_DEPTH {
            return ToolResult::error(&ToolError::failed(format!(
                "`{}` was not run: nested tool calls may go {MAX_BRIDGE_DEPTH} levels deep and \
                 this one, from `{}`, would be level {depth}; this looks like a loop — call the \
                 tool from the outer level instead",
                call.name, self.parent_tool
            )));
        }
        let progress = self.progress.clone().map(|parent| {
            let tool = call.name.clone();
            Arc::new(move |progress: Progress| {
                parent(Progress {
                    message: format!("`{tool}`: {}", progress.message),
                    ..progress
                })
            }) as ProgressSink
        });
        let caller = Caller {
            origin: Origin::Bridge {
                parent: self.parent,
                parent_tool: self.parent_tool,
                depth,
            },
            held: self.held.clone(),
            token: self.cancel.child_token(),
            progress,
            asker: self.asker.clone(),
        };
        Inner::dispatch(&inner, call, caller).await
    }
}

/// Who makes a call and what it inherits from them: its origin, the lanes its ancestors
/// hold, its cancellation, and where its progress and cards go.
struct Caller {
    origin: Origin,
    held: Vec<Lane>,
    token: CancellationToken,
    progress: Option<ProgressSink>,
    asker: Option<Arc<dyn QuestionPort>>,
}

impl Inner {
    /// Runs a call as a task of the dispatcher and waits for it; if this future is dropped
    /// first, the call's token fires and the task winds down on its own.
    async fn dispatch(this: &Arc<Inner>, call: ToolCall, caller: Caller) -> ToolResult {
        let name = call.name.clone();
        if this.closing.load(Ordering::SeqCst) {
            return ToolResult::error(&ToolError::failed(format!(
                "`{name}` was not run: the run is shutting down"
            )));
        }
        let max = this.options.max_output_bytes;
        let id = this.next_id.fetch_add(1, Ordering::Relaxed);
        let guard = caller.token.clone().drop_guard();
        let task = {
            let this = Arc::clone(this);
            this.calls
                .clone()
                .spawn(async move { this.run_call(call, id, caller).await })
        };
        let result = match task.await {
            #[cfg(any(test, feature = "validate-output"))]
            Ok(result) => this.check_output(&name, result),
            #[cfg(not(any(test, feature = "validate-output")))]
            Ok(result) => result,
            Err(error) if error.is_panic() => {
                let message = panic_message(error.into_panic().as_ref());
                tracing::error!(tool = %name, %message, "a tool panicked");
                ToolResult::error(&ToolError::Internal {
                    tool: name,
                    message: format!("the tool panicked: {message}"),
                })
            }
            Err(_) => ToolResult::error(&ToolError::Cancelled { tool: name }),
        };
        guard.disarm();
        limit_output(result, max)
    }

    /// In builds with `validate-output` (every crate's tests): a structured result that does
    /// not match the tool's output schema becomes an error naming the mismatch, so a result
    /// the official MCP SDKs would reject fails the test that produced it.
    #[cfg(any(test, feature = "validate-output"))]
    fn check_output(&self, name: &str, result: ToolResult) -> ToolResult {
        let (Some(registered), Some(structured)) =
            (self.registry.tools.get(name), result.structured.as_ref())
        else {
            return result;
        };
        let problems: Vec<String> = registered
            .output_validator
            .iter_errors(structured)
            .map(|error| format!("{error} at `{}`", error.instance_path()))
            .collect();
        if problems.is_empty() {
            return result;
        }
        let message = format!(
            "the structured result does not match the output schema: {}; the result was {structured}",
            problems.join("; ")
        );
        tracing::error!(tool = %name, %message, "invalid structured result");
        eprintln!("`{name}`: {message}");
        ToolResult::error(&ToolError::Internal {
            tool: name.to_owned(),
            message,
        })
    }

    async fn run_call(self: Arc<Self>, call: ToolCall, id: u64, caller: Caller) -> ToolResult {
        let Caller {
            origin,
            mut held,
            token,
            progress,
            asker,
        } = caller;
        let registered = match self.lookup(&call.name) {
            Ok(registered) => registered,
            Err(error) => return ToolResult::error(&error),
        };
        let run = Arc::clone(self.registry.run());
        let prepared =
            match Arc::clone(&registered.tool).prepare(call.arguments.clone(), &run.workspace) {
                Ok(prepared) => prepared,
                Err(error) => return ToolResult::error(&ToolError::Arguments(error)),
            };
        let spec = &registered.spec;
        let writes = prepared.writes;
        // Refusals that need no resource come before the card and every wrapper.
        let run_call = match (prepared.check)(run.workspace.clone()).await {
            Ok(run_call) => run_call,
            Err(error) => return ToolResult::error(&error),
        };
        if let Err(error) = self.approve(spec, &call, &origin, asker.as_ref()).await {
            return ToolResult::error(&error);
        }
        let _lane = match spec.lane {
            None => None,
            Some(lane) if held.contains(&lane) => {
                let parent = match &origin {
                    Origin::Bridge { parent_tool, .. } => *parent_tool,
                    Origin::Model => "calling",
                };
                return ToolResult::error(&ToolError::failed(format!(
                    "`{}` was not run: it runs on the `{lane}` lane, which the `{parent}` call \
                     that made this nested call already holds, so it would wait on itself; \
                     make this call after that one returns",
                    spec.name
                )));
            }
            Some(lane) => {
                let lock = self.lane(lane);
                if let (Err(_), Some(sink)) = (lock.clone().try_lock_owned(), &progress) {
                    // Say why nothing happens yet: another call on the lane runs (a cell, or
                    // one waiting on a person's card).
                    sink(Progress {
                        message: format!(
                            "waiting for the `{lane}` lane: another `{lane}` call is still \
                             running, and calls on one lane take turns"
                        ),
                        done: None,
                        total: None,
                    });
                }
                tokio::select! {
                    guard = lock.lock_owned() => {
                        held.push(lane);
                        Some(guard)
                    }
                    () = token.cancelled() => {
                        return ToolResult::error(&ToolError::Cancelled {
                            tool: call.name.clone(),
                        });
                    }
                }
            }
        };
        let depth = origin.depth();
        let context = CallContext {
            run,
            id,
            tool: spec.name,
            origin,
            cancel: token.clone(),
            progress: progress.clone(),
            asker: asker.clone(),
            held: held.clone(),
            bridge: Some(Bridge {
                inner: Arc::downgrade(&self),
                parent: id,
                parent_tool: spec.name,
                depth,
                held,
                cancel: token.clone(),
                progress,
                asker,
            }),
        };
        let wrappers: Vec<&dyn Wrapper> = self
            .registry
            .wrappers
            .iter()
            .filter(|wrapper| wrapper.wraps(spec))
            .map(|wrapper| wrapper.as_ref())
            .collect();
        let innermost: Next<'_> = {
            let context = context.clone();
            Box::new(move || {
                Box::pin(async move {
                    match run_call(context).await {
                        Ok(result) => result,
                        Err(error) => ToolResult::error(&error),
                    }
                })
            })
        };
        let chain = context
            .clone()
            .scope(run_chain(&wrappers, &context, &call, &writes, innermost));
        tokio::pin!(chain);
        let cancelled = || {
            ToolResult::error(&ToolError::Cancelled {
                tool: call.name.clone(),
            })
        };
        tokio::select! {
            result = &mut chain => result,
            () = token.cancelled() => {
                if !registered.tool.graceful_cancel() {
                    return cancelled();
                }
                // The tool stops by itself: give it the grace, then drop it.
                match tokio::time::timeout(self.options.cancel_grace, &mut chain).await {
                    Ok(result) => result,
                    Err(_) => cancelled(),
                }
            }
        }
    }

    fn lane(&self, lane: Lane) -> Arc<tokio::sync::Mutex<()>> {
        let mut lanes = self
            .lanes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(lanes.entry(lane).or_default())
    }

    fn lookup(&self, name: &str) -> Result<&Registered, ToolError> {
        let surface = self.options.surface;
        match self.registry.tools.get(name) {
            Some(registered) if surface.allows(registered.spec.tier) => Ok(registered),
            Some(registered) => Err(ToolError::NotOnSurface {
                tool: name.to_owned(),
                tier: registered.spec.tier,
                surface,
            }),
            None => {
                let names: Vec<&str> = visible(&self.registry, surface).map(|s| s.name).collect();
                Err(ToolError::UnknownTool {
                    name: name.to_owned(),
                    available: names.join(", "),
                })
            }
        }
    }

    /// The approval gate (CORE-5): the only place a write or exec call is allowed or refused.
    async fn approve(
        &self,
        spec: &ToolSpec,
        call: &ToolCall,
        origin: &Origin,
        asker: Option<&Arc<dyn QuestionPort>>,
    ) -> Result<(), ToolError> {
        if !spec.tier.needs_approval() {
            return Ok(());
        }
        let denied = |reason: String| ToolError::Denied {
            tool: spec.name.to_owned(),
            reason,
        };
        match self.options.approval {
            ApprovalPolicy::Allow => Ok(()),
            ApprovalPolicy::Deny => Err(denied(format!(
                "this run's approval policy is `deny`, which refuses every {} call; do not \
                 retry it — tell the user what you wanted to change and why",
                spec.tier
            ))),
            ApprovalPolicy::Ask => {
                let Some(questions) = self.registry.run().questions.as_ref() else {
                    return Err(denied(format!(
                        "the approval policy is `ask` and no approver is connected, so write and \
                         exec calls are refused; do not retry — the operator can connect a client \
                         that answers elicitation requests, or {}",
                        self.options.how_to_allow
                    )));
                };
                let question = format!(
                    "Allow the agent to run `{}` ({} tier)?",
                    spec.name, spec.tier
                );
                let mut details = describe_arguments(&call.arguments);
                if let Origin::Bridge {
                    parent_tool, depth, ..
                } = origin
                {
                    details = format!(
                        "Requested by a running `{parent_tool}` call, not by the model directly \
                         (nesting level {depth}).\n{details}"
                    );
                }
                let asked = Instant::now();
                let (number, answer) = questions
                    .ask_permission_through(asker, question, Some(details))
                    .await;
                if answer.allows() {
                    return Ok(());
                }
                let took = asked.elapsed();
                if answer.unseen(took) {
                    let how = match answer {
                        Answer::Cancelled => "cancelled",
                        _ => "declined",
                    };
                    return Err(denied(format!(
                        "the client {how} permission card {number} {} ms after it was sent, \
                         without showing it to a person (nobody answers that fast); do not \
                         retry — this client refuses every write and exec call the same way, so \
                         tell the user the change needs approval. If this client runs \
                         unattended, the operator can {}",
                        took.as_millis(),
                        self.options.how_to_allow
                    )));
                }
                let why = match answer {
                    Answer::Answered { .. } => {
                        format!("the person denied permission (card {number})")
                    }
                    Answer::Skipped | Answer::Declined => {
                        format!("the person declined permission (card {number})")
                    }
                    Answer::Cancelled => {
                        format!("the person dismissed the permission card {number}")
                    }
                    Answer::Expired => {
                        let expiry = questions.expiry();
                        let within = match expiry.as_secs() {
                            0 => format!("{} ms", expiry.as_millis()),
                            seconds => format!("{seconds} s"),
                        };
                        format!("permission card {number} got no answer within {within}")
                    }
                    Answer::NoHuman(reason) => format!("no approver is connected ({reason})"),
                };
                Err(denied(format!(
                    "{why}; do not retry the same call — ask the user what to do, or take another way"
                )))
            }
        }
    }
}

fn visible(registry: &Registry, surface: Surface) -> impl Iterator<Item = &ToolSpec> {
    registry
        .specs()
        .filter(move |spec| surface.allows(spec.tier))
}

fn run_chain<'a>(
    wrappers: &'a [&'a dyn Wrapper],
    context: &'a CallContext,
    call: &'a ToolCall,
    writes: &'a Writes,
    innermost: Next<'a>,
) -> BoxFuture<'a, ToolResult> {
    match wrappers.split_first() {
        None => innermost(),
        Some((outer, inner)) => {
            let next: Next<'a> =
                Box::new(move || run_chain(inner, context, call, writes, innermost));
            outer.around(context, call, writes, next)
        }
    }
}

/// The arguments as a person reads them on a permission card: pretty JSON, long strings cut.
fn describe_arguments(arguments: &Value) -> String {
    const MAX: usize = 2_000;
    let text = serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string());
    if text.len() <= MAX {
        return format!("Arguments:\n{text}");
    }
    let cut = floor_char_boundary(&text, MAX);
    format!(
        "Arguments (first {cut} of {} bytes):\n{}…",
        text.len(),
        &text[..cut]
    )
}

/// Caps the text at `max` bytes, on a line boundary where one is near, and says what was cut.
fn limit_output(mut result: ToolResult, max: usize) -> ToolResult {
    let total = result.text.len();
    if total <= max {
        return result;
    }
    let mut cut = floor_char_boundary(&result.text, max);
    if let Some(newline) = result.text[..cut].rfind('\n')
        && newline > cut / 2
    {
        cut = newline + 1;
    }
    result.text.truncate(cut);
    result.text.push_str(&format!(
        "\n[output cut: showed the first {cut} of {total} bytes; narrow the request \
         (a smaller range, a more specific path or pattern) to see the rest]"
    ));
    result
}

fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "no message".to_owned()
    }
}

#[cfg(test)]
mod tests;
