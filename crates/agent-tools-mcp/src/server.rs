//! The run served over MCP (PROD-2): `tools/list` shows what the surface sees, `tools/call`
//! goes through dispatch, and cards reach the person the way the client's protocol allows.
//!
//! Two protocol eras are served on one connection. A 2025-11-25 client opens a session
//! with `initialize`, and cards go to it as server-initiated `elicitation/create` requests. A
//! 2026-07-28 client sends `server/discover` and then self-contained requests, each with its
//! capabilities in `_meta`; a server may not call it outside a request, so a card answers the
//! call with `resultType: "input_required"` and the client re-sends the call with the answer
//! (see [`flight`]). Either client may declare the `io.modelcontextprotocol/tasks` extension:
//! then a call that may run long (a cell, a debugger `continue`, `vibe_wait`, a project check)
//! becomes a task once it has run [`flight::TASK_GRACE`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
    CreateTaskResult, CustomRequest, CustomResult, GetTaskParams, GetTaskResult, Implementation,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use tokio::sync::OnceCell;
use tools_core::{
    Dispatcher, DispatcherOptions, NoHuman, QuestionPort, ShutdownSummary, ToolCall, ToolResult,
};

use crate::dialect;
use crate::elicit::ElicitationPort;
use crate::flight::{self, Asker, Cards, Flight, Flights, Step};
use crate::wire::{ProgressStream, mcp_result, mcp_tool};

/// An error a [`RunFactory`] gives when it cannot build a run, with its causes.
pub type BuildError = Box<dyn std::error::Error + Send + Sync>;

/// What an MCP server serves: the runs of its connections. The umbrella builds them from its
/// settings and the families it was compiled with; this crate only asks for one.
pub trait RunFactory: Send + Sync + 'static {
    /// The dispatcher of a new run for conversation `conversation`, with `port` as its
    /// question port when a person can be asked (no port: no `ask_user`, and write and exec
    /// calls have no approver). Nothing starts until a call needs it (CORE-2).
    fn dispatcher(
        &self,
        port: Option<Arc<dyn QuestionPort>>,
        conversation: &str,
    ) -> Result<Dispatcher, BuildError>;

    /// The options every dispatcher it builds has (the surface and approval policy the
    /// server's instructions name, even when a run cannot be built).
    fn options(&self) -> DispatcherOptions;
}

/// An MCP server for one run.
///
/// The run is built when a client first lists or calls a tool. Over stdio there is one
/// client, and whether the run has a question port depends on the capabilities it declared
/// (in `initialize`, or in the first request's `_meta`): with form elicitation, cards go to
/// the client; without it, there is no question port, so `ask_user` is not registered and the
/// approval gate has no approver (ASK-5, CORE-5). Over HTTP any number of clients share the
/// run ([`McpServer::shared`]), so no one client decides: every call's cards go back through
/// the request that made it. Each request is held to its own declaration too: one without
/// elicitation does not list `ask_user`, and its cards fail at once.
///
/// A clone is the same server (one run, one conversation): the HTTP transport hands one to
/// each session and to each stateless request.
#[derive(Clone)]
pub struct McpServer {
    runs: Arc<dyn RunFactory>,
    dispatcher: Arc<OnceCell<Arc<Dispatcher>>>,
    pub(crate) flights: Flights,
    conversation: String,
    clients: Clients,
    /// What the server's instructions say, built once: rmcp asks for the server's info on
    /// every `tasks/*` request, and building it builds a run's dispatcher.
    instructions: Arc<std::sync::OnceLock<String>>,
}

/// How many clients a server's run has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clients {
    /// One connection (stdio): its capabilities decide the run's question port.
    One,
    /// Any number (HTTP): the run's own port reaches nobody, and each call's cards go back
    /// through the request that made it.
    Many,
}

/// A handle on the run a server builds, for ending it when the connection ends.
#[derive(Clone)]
pub struct McpRun {
    dispatcher: Arc<OnceCell<Arc<Dispatcher>>>,
    flights: Flights,
}

impl McpRun {
    /// Ends the run within `bound` (calls cancelled, resources stopped); `None` when no run
    /// was built (the client never listed or called a tool).
    pub async fn shutdown(&self, bound: Duration) -> Option<ShutdownSummary> {
        self.flights.clear();
        let dispatcher = self.dispatcher.get()?;
        Some(dispatcher.shutdown(bound).await)
    }
}

/// Whether `capabilities` take form elicitation (a bare `elicitation: {}` means form).
fn declares_form_elicitation(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|capabilities| capabilities.elicitation.as_ref())
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// Whether the request speaks the 2026-07-28 protocol (or later), where the server may not
/// send requests of its own.
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

impl McpServer {
    /// A server for a run `runs` builds; each server is one connection and one
    /// conversation.
    pub fn new(runs: Arc<dyn RunFactory>) -> Self {
        Self::with_clients(runs, Clients::One)
    }

    /// A server whose one run any number of clients share, as over HTTP: lanes, staged
    /// edits, the debug session and the kernels are the run's, so every client sees the same
    /// ones; a card goes only to the client whose call raised it.
    pub fn shared(runs: Arc<dyn RunFactory>) -> Self {
        Self::with_clients(runs, Clients::Many)
    }

    fn with_clients(runs: Arc<dyn RunFactory>, clients: Clients) -> Self {
        static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
        let number = CONNECTIONS.fetch_add(1, Ordering::Relaxed) + 1;
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let flights = Flights::new();
        McpServer {
            runs,
            dispatcher: Arc::new(OnceCell::new()),
            flights,
            conversation: format!("conversation-{}-{started}-{number}", std::process::id()),
            clients,
            instructions: Arc::default(),
        }
    }

    /// The run this server builds, to end it after the connection closes.
    pub fn run(&self) -> McpRun {
        McpRun {
            dispatcher: Arc::clone(&self.dispatcher),
            flights: self.flights.clone(),
        }
    }

    async fn dispatcher(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<Dispatcher>, McpError> {
        self.dispatcher
            .get_or_try_init(|| async {
                let elicitation = declares_form_elicitation(context.client_capabilities().as_ref());
                let decides = self.clients == Clients::One && !is_modern(context);
                let port: Option<Arc<dyn QuestionPort>> = match (decides, elicitation) {
                    (true, false) => None,
                    (true, true) => Some(Arc::new(ElicitationPort::new(context.peer.clone()))),
                    // A 2026-07-28 client declares its capabilities on each request, and a
                    // shared run has many clients, so the first request does not decide for
                    // the run: every call brings its own way to the person (its request or
                    // its task), or none, and `tools/list` leaves `ask_user` out for a
                    // request without elicitation.
                    (false, _) => Some(Arc::new(NoHuman {
                        reason: "a card can only be shown through the call that raised it"
                            .to_owned(),
                    })),
                };
                tracing::info!(elicitation = port.is_some(), "building the run");
                self.runs
                    .dispatcher(port, &self.conversation)
                    .map(Arc::new)
                    .map_err(|error| McpError::internal_error(chain(&*error), None))
            })
            .await
            .cloned()
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::from_build_env();
        implementation.name = "agent-tools".to_owned();
        implementation.title = Some("agent-tools: built-in tools for coding agents".to_owned());
        implementation.version = env!("CARGO_PKG_VERSION").to_owned();
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(implementation)
        .with_instructions(
            self.instructions
                .get_or_init(|| crate::instructions::instructions(&*self.runs, &self.conversation))
                .clone(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let dispatcher = self.dispatcher(&context).await?;
        let elicitation = declares_form_elicitation(context.client_capabilities().as_ref());
        let legacy = !is_modern(&context);
        let tools = dispatcher
            .tools()
            .into_iter()
            // A request that takes no cards is not offered a tool that shows them (ASK-5).
            .filter(|spec| elicitation || !spec.needs_person)
            .map(|spec| {
                let mut tool = mcp_tool(spec);
                // A 2025-11-25 client may ask for these calls to run as tasks; the transport
                // moves the mark to `execution` (see `dialect`).
                if legacy && spec.may_run_long {
                    tool.meta = Some(rmcp::model::MetaObject(serde_json::Map::from_iter([(
                        dialect::EXECUTION_META.to_owned(),
                        serde_json::json!({"taskSupport": "optional"}),
                    )])));
                }
                tool
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let dispatcher = self.dispatcher(&context).await?;
        let capabilities = context.client_capabilities();
        let elicitation = declares_form_elicitation(capabilities.as_ref());
        // The extension is declared per request on the 2026-07-28 protocol it is defined on;
        // a 2025-11-25 client that names it at `initialize` (the MCP Inspector does) reads a
        // plain call's answer as a result, never as a task handle, and asks for a task with
        // `params.task` when it wants one.
        let tasks = is_modern(&context)
            && capabilities
                .as_ref()
                .is_some_and(ClientCapabilities::supports_tasks);
        let legacy_task = context.meta.get(dialect::TASK_META).is_some()
            || request
                .meta
                .as_ref()
                .is_some_and(|meta| meta.get(dialect::TASK_META).is_some());
        let arguments = request
            .arguments
            .map(serde_json::Value::Object)
            .unwrap_or(serde_json::Value::Null);
        if legacy_task && request.request_state.is_none() {
            return self.start_legacy_task(
                &dispatcher,
                &request.name,
                arguments,
                elicitation,
                context.peer.clone(),
            );
        }
        let flight = match request.request_state.as_deref() {
            Some(_) if !is_modern(&context) => {
                return Err(McpError::invalid_params(
                    "`requestState` resumes a call only on the 2026-07-28 protocol; this \
                     request speaks an earlier one, where cards are elicitation requests",
                    None,
                ));
            }
            Some(handle) => match self.flights.resume(
                handle,
                &request.name,
                &arguments,
                request.input_responses.as_ref(),
            )? {
                flight::Resumed::Flight(flight) => flight,
                flight::Resumed::Done(result) => return Ok(mcp_result(result).into()),
            },
            None if request.input_responses.is_some() => {
                return Err(McpError::invalid_params(
                    "`inputResponses` came without `requestState`: answers are only taken \
                     with the `requestState` of the `input_required` result that asked for them",
                    None,
                ));
            }
            None if !elicitation
                && needs_person(&dispatcher, &request.name)
                && is_modern(&context) =>
            {
                // Not listed to this request (ASK-5): say so rather than ask nobody.
                return Ok(
                    mcp_result(ToolResult::error(&tools_core::ToolError::failed(format!(
                        "`{}` is not available: this client declared no elicitation \
                         capability, so no person can be asked; go on with your own best \
                         assumption and say in your reply what you assumed",
                        request.name
                    ))))
                    .into(),
                );
            }
            None => {
                let call = ToolCall {
                    name: request.name.to_string(),
                    arguments,
                };
                let long = dispatcher.may_run_long(&call);
                // Every card goes back through the request (or task) that drives the call:
                // on 2025-11-25 as an `elicitation/create` that rides that request's stream.
                let asker = match elicitation {
                    true => Asker::Driver,
                    false => no_card_asker(),
                };
                Flight::start(Arc::clone(&dispatcher), call, asker, long)
            }
        };
        // The client's `notifications/cancelled` fires `ct`; the call is cancelled and answers
        // once the tool stopped (or its grace ran out).
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| ProgressStream::start(context.peer.clone(), token));
        let cards = match (is_modern(&context), tasks) {
            (false, _) => Cards::Elicit(context.peer.clone()),
            (true, true) => Cards::Task,
            (true, false) => Cards::Park,
        };
        let sink = progress.as_ref().map(ProgressStream::sink);
        let step = flight::drive(flight, context.ct.clone(), sink, cards).await;
        // Whatever the request answers (a result, input_required, a task), its progress
        // token is spent once it does.
        if let Some(progress) = progress {
            progress.close().await;
        }
        match step {
            Step::Done(result) => Ok(mcp_result(result).into()),
            Step::Park(flight, raised) => Ok(self.flights.park(flight, raised)?.into()),
            Step::Task(flight, first) => {
                let task = self.flights.spawn_task(flight, first);
                Ok(CreateTaskResult::new(task).into())
            }
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let task = self.flights.tasks().get_task(&request.task_id)?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.flights
            .tasks()
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.flights.tasks().cancel_task(&request.task_id)
    }

    /// The 2025-11-25 `tasks/*` methods (see [`dialect`]): under their own names from a
    /// client rmcp lets through (`tasks/result`, `tasks/list`), under the private prefix
    /// from a session without the extension.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        self.legacy_task_request(request, context).await
    }
}

/// An error and its causes, outermost first, as one line ("a: b: c").
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Whether the tool `name` exists to show a person a card ([`ToolSpec::needs_person`]).
fn needs_person(dispatcher: &Dispatcher, name: &str) -> bool {
    dispatcher
        .registry()
        .spec(name)
        .is_some_and(|spec| spec.needs_person)
}

/// The asker of a call from a client that declared no elicitation: its cards fail at once.
pub(crate) fn no_card_asker() -> Asker {
    Asker::Nobody(
        "this client declared no elicitation capability, so no card can be shown; the \
         operator can connect a client that answers elicitation requests, or start the server \
         with `--approval allow`"
            .to_owned(),
    )
}
