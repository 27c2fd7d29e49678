//! The one path every call takes, a model's or a bridge's (CORE-8): look up → surface check →
//! argument decoding → approval gate → per-run serialisation → wrappers → the tool → output
//! limits. Whatever happens inside, the caller gets a [`ToolResult`]; no panic escapes.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::registry::Registered;
use crate::{
    Answer, ApprovalPolicy, CallContext, Registry, Surface, ToolError, ToolResult, ToolSpec,
};

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

/// Middleware around named tools: runs code before and after them and may add to their
/// result. Diagnostics on write (LSP-6) is one.
pub trait Wrapper: Send + Sync + 'static {
    /// Whether this wrapper applies to the tool named `tool`.
    fn wraps(&self, tool: &str) -> bool;

    /// Runs around one call; must call `next` exactly once to run the tool.
    fn around<'a>(
        &'a self,
        context: &'a CallContext,
        call: &'a ToolCall,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult>;
}

/// How a dispatcher treats calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatcherOptions {
    /// Which tiers are listed and callable (CORE-4).
    pub surface: Surface,
    /// What happens to write and exec calls (CORE-5).
    pub approval: ApprovalPolicy,
    /// The most bytes of text a result may carry; the rest is cut with a note saying so.
    pub max_output_bytes: usize,
}

impl Default for DispatcherOptions {
    fn default() -> Self {
        DispatcherOptions {
            surface: Surface::Full,
            approval: ApprovalPolicy::Ask,
            max_output_bytes: 100 * 1024,
        }
    }
}

/// Serves calls against one registry on one surface.
pub struct Dispatcher {
    registry: Arc<Registry>,
    options: DispatcherOptions,
    /// Held while a tool that is not parallel-safe runs (CORE-6).
    serial: tokio::sync::Mutex<()>,
}

impl Dispatcher {
    /// A dispatcher over `registry`.
    pub fn new(registry: Registry, options: DispatcherOptions) -> Self {
        Dispatcher {
            registry: Arc::new(registry),
            options,
            serial: tokio::sync::Mutex::new(()),
        }
    }

    /// The registry behind this dispatcher.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The options it was built with.
    pub fn options(&self) -> DispatcherOptions {
        self.options
    }

    /// The tools this surface lists, sorted by name (CORE-4).
    pub fn tools(&self) -> Vec<&ToolSpec> {
        visible(&self.registry, self.options.surface).collect()
    }

    /// Runs one call through every stage and returns its result; never panics.
    pub async fn dispatch(&self, call: ToolCall) -> ToolResult {
        let name = call.name.clone();
        let outcome = AssertUnwindSafe(self.dispatch_inner(call))
            .catch_unwind()
            .await;
        let result = match outcome {
            Ok(result) => result,
            Err(panic) => {
                let message = panic_message(panic.as_ref());
                tracing::error!(tool = %name, %message, "a tool panicked");
                ToolResult::error(&ToolError::Internal {
                    tool: name,
                    message: format!("the tool panicked: {message}"),
                })
            }
        };
        limit_output(result, self.options.max_output_bytes)
    }

    async fn dispatch_inner(&self, call: ToolCall) -> ToolResult {
        let registered = match self.lookup(&call.name) {
            Ok(registered) => registered,
            Err(error) => return ToolResult::error(&error),
        };
        let prepared = match Arc::clone(&registered.tool).prepare(call.arguments.clone()) {
            Ok(prepared) => prepared,
            Err(error) => return ToolResult::error(&ToolError::Arguments(error)),
        };
        if let Err(error) = self.approve(&registered.spec, &call).await {
            return ToolResult::error(&error);
        }
        let _serial = match registered.spec.parallel_safe {
            true => None,
            false => Some(self.serial.lock().await),
        };
        let context = CallContext {
            run: Arc::clone(self.registry.run()),
        };
        let wrappers: Vec<&dyn Wrapper> = self
            .registry
            .wrappers
            .iter()
            .filter(|wrapper| wrapper.wraps(&call.name))
            .map(|wrapper| wrapper.as_ref())
            .collect();
        let innermost: Next<'_> = {
            let context = context.clone();
            Box::new(move || {
                Box::pin(async move {
                    match prepared(context).await {
                        Ok(result) => result,
                        Err(error) => ToolResult::error(&error),
                    }
                })
            })
        };
        run_chain(&wrappers, &context, &call, innermost).await
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
    async fn approve(&self, spec: &ToolSpec, call: &ToolCall) -> Result<(), ToolError> {
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
                    return Err(denied(
                        "the approval policy is `ask` and no approver is connected, so write and \
                         exec calls are refused; do not retry — the operator can connect a client \
                         that answers elicitation requests, or start the server with \
                         `--approval allow`"
                            .to_owned(),
                    ));
                };
                let question = format!(
                    "Allow the agent to run `{}` ({} tier)?",
                    spec.name, spec.tier
                );
                let (number, answer) = questions
                    .ask_permission(question, Some(describe_arguments(&call.arguments)))
                    .await;
                if answer.allows() {
                    return Ok(());
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
                        format!("permission card {number} expired without an answer")
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
    innermost: Next<'a>,
) -> BoxFuture<'a, ToolResult> {
    match wrappers.split_first() {
        None => innermost(),
        Some((outer, inner)) => {
            let next: Next<'a> = Box::new(move || run_chain(inner, context, call, innermost));
            outer.around(context, call, next)
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
