//! The run served over MCP (PROD-2): `tools/list` shows what the surface sees, `tools/call`
//! goes through dispatch, and cards reach the person the way the client's protocol allows.
//!
//! Two protocol eras are served on one stdio connection. A 2025-11-25 client opens a session
//! with `initialize`, and cards go to it as server-initiated `elicitation/create` requests. A
//! 2026-07-28 client sends `server/discover` and then self-contained requests, each with its
//! capabilities in `_meta`; a server may not call it outside a request, so a card answers the
//! call with `resultType: "input_required"` and the client re-sends the call with the answer
//! (see [`flight`]). Either client may declare the `io.modelcontextprotocol/tasks` extension:
//! then a call that may run long (a cell, a debugger `continue`, `vibe_wait`, a project check)
//! becomes a task once it has run [`flight::TASK_GRACE`].

pub(crate) mod dialect;
mod flight;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, CustomRequest, CustomResult, GetTaskParams, GetTaskResult,
    Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, TaskPayload, TaskStatus, Tool, ToolAnnotations, UpdateTaskParams,
};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use tokio::sync::OnceCell;
use tools_core::{
    ApprovalPolicy, Dispatcher, NoHuman, Progress, ProgressSink, QuestionPort, ShutdownSummary,
    Surface, Tier, ToolCall, ToolResult, ToolSpec,
};

use self::flight::{Asker, Flight, Flights, Step};
use crate::{ElicitationPort, Settings};

/// An MCP server for one run.
///
/// The run is built when the client first lists or calls a tool, because whether a question
/// port exists depends on the capabilities the client declared (in `initialize`, or in the
/// first request's `_meta`): with form elicitation, cards go to the client; without it, there
/// is no question port, so `ask_user` is not registered and the approval gate has no
/// approver (ASK-5, CORE-5). Each later request is held to its own declaration too: one
/// without elicitation does not list `ask_user`, and its cards fail at once.
pub struct McpServer {
    settings: Settings,
    dispatcher: Arc<OnceCell<Arc<Dispatcher>>>,
    flights: Flights,
    conversation: String,
    /// What [`McpServer::instructions`] says, built once: rmcp asks for the server's info on
    /// every `tasks/*` request, and building it builds a registry.
    instructions: std::sync::OnceLock<String>,
}

/// The least time between two progress notifications of one call.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

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
    /// A server for a run with these settings; each server is one connection and one
    /// conversation.
    pub fn new(settings: Settings) -> Self {
        static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
        let number = CONNECTIONS.fetch_add(1, Ordering::Relaxed) + 1;
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let flights = Flights::new();
        McpServer {
            settings,
            dispatcher: Arc::new(OnceCell::new()),
            flights,
            conversation: format!("conversation-{}-{started}-{number}", std::process::id()),
            instructions: std::sync::OnceLock::new(),
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
                let port: Option<Arc<dyn QuestionPort>> = match (is_modern(context), elicitation) {
                    (false, false) => None,
                    (false, true) => Some(Arc::new(ElicitationPort::new(context.peer.clone()))),
                    // A 2026-07-28 client declares its capabilities on each request, so the
                    // first one does not decide for the run: every call brings its own way to
                    // the person (its request or its task), or none, and `tools/list` leaves
                    // `ask_user` out for a request without elicitation.
                    (true, _) => Some(Arc::new(NoHuman {
                        reason: "a card can only be shown through the call that raised it"
                            .to_owned(),
                    })),
                };
                tracing::info!(elicitation = port.is_some(), "building the run");
                self.settings
                    .dispatcher_for(port, &self.conversation)
                    .map(Arc::new)
                    .map_err(|error| McpError::internal_error(format!("{error:#}"), None))
            })
            .await
            .cloned()
    }

    /// What the server tells every client up front: the surface, the approval policy and how
    /// cards and long calls appear.
    fn instructions(&self) -> String {
        let settings = &self.settings;
        // The families and long calls of the run these settings build, from each tool's
        // spec: a family the config leaves off (vibe) is not named.
        let port = Arc::new(tools_core::NoHuman {
            reason: "listing the families only".to_owned(),
        });
        let registry = settings.registry(Some(port), &self.conversation);
        let (families, long) = match &registry {
            Ok(registry) => (
                registry
                    .families()
                    .map(|family| format!("{} ({})", family.tools.join(", "), family.about))
                    .collect(),
                registry
                    .specs()
                    .filter(|spec| spec.may_run_long)
                    .map(|spec| spec.name)
                    .collect(),
            ),
            Err(error) => (vec![format!("none: {error:#}")], Vec::new()),
        };
        let surface = match settings.surface {
            Surface::Full => "full: read, write and exec tools are listed",
            Surface::Plan => "plan: only read tools are listed",
            Surface::Readonly => "readonly: only read tools are listed",
        };
        let approval = match settings.approval {
            ApprovalPolicy::Ask => {
                "ask: each write or exec call first shows the person a permission card (an \
                 elicitation form); a client that takes no elicitation has no approver, so \
                 those calls are refused at once"
            }
            ApprovalPolicy::Allow => "allow: write and exec calls run without a card",
            ApprovalPolicy::Deny => "deny: every write and exec call is refused",
        };
        let long = match long.is_empty() {
            true => String::new(),
            false => format!(
                "\nCalls of {} may run long: they report progress to a call that sent a \
                 progress token, at least every {} s, and become tasks (io.modelcontextprotocol/tasks) when a \
                 2026-07-28 request declares that extension: after {} s, or at once when they \
                 raise a card; a 2025-11-25 client gets them as tasks when it sends params.task \
                 (tools with execution.taskSupport), else as results when they end.",
                long.join(", "),
                flight::HEARTBEAT.as_secs(),
                flight::TASK_GRACE.as_secs()
            ),
        };
        format!(
            "Built-in tools bound to one workspace; paths are relative to its root, and \
             locations print as path:LINE.\n\
             Surface {surface}.\nApproval {approval}.\n\
             Families: {}.\n\
             Cards: a 2025-11-25 client gets elicitation/create requests; a 2026-07-28 client \
             gets the call answered with resultType \"input_required\" and re-sends it with \
             inputResponses and the same requestState.{long}",
            families.join("; "),
        )
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
                .get_or_init(|| self.instructions())
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
            // A request that takes no cards is not offered the tool that shows them (ASK-5).
            .filter(|spec| elicitation || spec.name != "ask_user")
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
            return self.start_legacy_task(&dispatcher, &request.name, arguments, elicitation);
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
            None if !elicitation && request.name == "ask_user" && is_modern(&context) => {
                // Not listed to this request (ASK-5): say so rather than ask nobody.
                return Ok(mcp_result(ToolResult::error(&tools_core::ToolError::failed(
                    "`ask_user` is not available: this client declared no elicitation \
                     capability, so no person can be asked; go on with your own best \
                     assumption and say in your reply what you assumed",
                )))
                .into());
            }
            None => {
                let call = ToolCall {
                    name: request.name.to_string(),
                    arguments,
                };
                let long = dispatcher.may_run_long(&call);
                let asker = if !elicitation {
                    no_card_asker()
                } else if is_modern(&context) || (tasks && long) {
                    Asker::Driver
                } else {
                    Asker::Run
                };
                Flight::start(Arc::clone(&dispatcher), call, asker, long)
            }
        };
        // The client's `notifications/cancelled` fires `ct`; the call is cancelled and answers
        // once the tool stopped (or its grace ran out).
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| progress_sink(context.peer.clone(), token));
        match flight::drive(flight, context.ct.clone(), progress, tasks).await {
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
        let method = request
            .method
            .strip_prefix(dialect::PRIVATE_PREFIX)
            .unwrap_or(&request.method);
        let task_id = || {
            request
                .params
                .as_ref()
                .and_then(|params| params.get("taskId"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    McpError::invalid_params(
                        format!("`{method}` needs `taskId`: the id a task-augmented call returned"),
                        None,
                    )
                })
        };
        let tasks = self.flights.tasks();
        let answer = match method {
            "tasks/get" => dialect::legacy_task(&tasks.get_task(&task_id()?)?.task),
            "tasks/list" => serde_json::json!({
                "tasks": self
                    .flights
                    .task_ids()
                    .iter()
                    .filter_map(|id| tasks.get_task(id).ok())
                    .map(|task| dialect::legacy_task(&task.task))
                    .collect::<Vec<_>>(),
            }),
            "tasks/result" => self.task_result(&task_id()?, &context).await?,
            "tasks/cancel" => {
                let id = task_id()?;
                let before = tasks.get_task(&id)?;
                if is_terminal(before.status()) {
                    return Err(McpError::invalid_params(
                        format!(
                            "task {id} already ended ({}); there is nothing to cancel",
                            serde_json::to_value(before.status()).unwrap_or_default()
                        ),
                        None,
                    ));
                }
                tasks.cancel_task(&id)?;
                // The call stops cooperatively (a cell is interrupted): a moment, then the
                // status the client reads is the one it ended with.
                let settled = self.settled(&id, &context, Some(CANCEL_SETTLE)).await?;
                dialect::legacy_task(&settled.task)
            }
            _ => {
                return Err(McpError::new(
                    rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                    format!("`{}` is not a method this server knows", request.method),
                    None,
                ));
            }
        };
        Ok(CustomResult::new(answer))
    }
}

/// How long `tasks/cancel` waits for the cancelled call to settle before it answers.
const CANCEL_SETTLE: Duration = Duration::from_secs(5);

/// How often a waiting `tasks/result` looks at its task.
const RESULT_POLL: Duration = Duration::from_millis(50);

/// The asker of a call from a client that declared no elicitation: its cards fail at once.
fn no_card_asker() -> Asker {
    Asker::Nobody(
        "this client declared no elicitation capability, so no card can be shown; the \
         operator can connect a client that answers elicitation requests, or start the server \
         with `--approval allow`"
            .to_owned(),
    )
}

fn is_terminal(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
    )
}

impl McpServer {
    /// A call sent with the 2025-11-25 `params.task`: a task from the start, whose cards go
    /// to the session as `elicitation/create` (the client answers them while it polls).
    fn start_legacy_task(
        &self,
        dispatcher: &Arc<Dispatcher>,
        name: &str,
        arguments: serde_json::Value,
        elicitation: bool,
    ) -> Result<CallToolResponse, McpError> {
        let call = ToolCall {
            name: name.to_owned(),
            arguments,
        };
        let long = dispatcher.may_run_long(&call);
        let asker = match elicitation {
            true => Asker::Run,
            false => no_card_asker(),
        };
        let flight = Flight::start(Arc::clone(dispatcher), call, asker, long);
        let task = self.flights.spawn_task(flight, None);
        let mut result = CallToolResult::success(Vec::new());
        result.meta = Some(rmcp::model::MetaObject(serde_json::Map::from_iter([(
            dialect::TASK_META.to_owned(),
            dialect::legacy_task(&task),
        )])));
        Ok(result.into())
    }

    /// Waits until task `id` ended, or `bound` (none: no bound), or the request is
    /// cancelled; its state then.
    async fn settled(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
        bound: Option<Duration>,
    ) -> Result<rmcp::model::DetailedTask, McpError> {
        let deadline = bound.map(|bound| tokio::time::Instant::now() + bound);
        loop {
            let task = self.flights.tasks().get_task(id)?;
            let late = deadline.is_some_and(|deadline| tokio::time::Instant::now() >= deadline);
            if is_terminal(task.status()) || late {
                return Ok(task);
            }
            tokio::select! {
                () = tokio::time::sleep(RESULT_POLL) => {}
                () = context.ct.cancelled() => return Ok(task),
            }
        }
    }

    /// The 2025-11-25 `tasks/result`: waits for the task to end, then its call's result (with
    /// the related-task mark), or the error it failed or was cancelled with.
    async fn task_result(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<serde_json::Value, McpError> {
        let task = self.settled(id, context, None).await?;
        let message = task.task.status_message.clone().unwrap_or_default();
        match task.payload {
            TaskPayload::Completed { result } => {
                let mut result = result;
                result.remove("resultType");
                let meta = result
                    .entry("_meta")
                    .or_insert_with(|| serde_json::Value::Object(Default::default()));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(
                        "io.modelcontextprotocol/related-task".to_owned(),
                        serde_json::json!({"taskId": id}),
                    );
                }
                Ok(serde_json::Value::Object(result))
            }
            TaskPayload::Failed { error } => Err(McpError::internal_error(
                format!(
                    "task {id} failed: {}",
                    error
                        .get("message")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or(&message)
                ),
                None,
            )),
            TaskPayload::Cancelled => Err(McpError::invalid_request(
                format!("task {id} was cancelled, so it has no result: {message}"),
                None,
            )),
            _ => Err(McpError::invalid_request(
                format!("task {id} has not ended ({message}); the request was cancelled first"),
                None,
            )),
        }
    }
}

/// Sends a call's progress to the client as `notifications/progress`, at most one per
/// [`PROGRESS_INTERVAL`] (the latest report wins), until the call ends.
fn progress_sink(peer: rmcp::Peer<RoleServer>, token: ProgressToken) -> ProgressSink {
    let (sender, mut receiver) = tokio::sync::watch::channel::<Option<Progress>>(None);
    tokio::spawn(async move {
        let mut step = 0.0;
        while receiver.changed().await.is_ok() {
            let Some(progress) = receiver.borrow_and_update().clone() else {
                continue;
            };
            step += 1.0;
            let mut param =
                ProgressNotificationParam::new(token.clone(), progress.done.unwrap_or(step))
                    .with_message(progress.message);
            if let Some(total) = progress.total {
                param = param.with_total(total);
            }
            if peer.notify_progress(param).await.is_err() {
                return;
            }
            tokio::time::sleep(PROGRESS_INTERVAL).await;
        }
    });
    Arc::new(move |progress: Progress| {
        let _ = sender.send(Some(progress));
    })
}

/// A tool as MCP lists it, with the tier mapped onto annotations.
pub fn mcp_tool(spec: &ToolSpec) -> Tool {
    let annotations = ToolAnnotations::with_title(spec.title);
    let annotations = match spec.tier {
        Tier::Read => annotations.read_only(true),
        Tier::Write => annotations
            .read_only(false)
            .destructive(true)
            .open_world(false),
        Tier::Exec => annotations
            .read_only(false)
            .destructive(true)
            .open_world(true),
    };
    Tool::new(
        spec.name,
        spec.description.clone(),
        Arc::new(spec.input_schema.clone()),
    )
    .with_title(spec.title)
    // The output schema as a contract, without its field documentation (in docs/tools):
    // it is most of a tool's bytes in `tools/list`, and clients only validate against it.
    .with_raw_output_schema(Arc::new(tools_core::without_descriptions(
        &spec.output_schema,
    )))
    .with_annotations(annotations)
}

/// A dispatch result as MCP content: the text, any images, and the structured result.
pub fn mcp_result(result: ToolResult) -> CallToolResult {
    let mut content = vec![ContentBlock::text(result.text)];
    for image in result.images {
        let data = base64::engine::general_purpose::STANDARD.encode(&image.data);
        content.push(ContentBlock::image(data, image.mime_type));
    }
    let mut call_result = match result.is_error {
        true => CallToolResult::error(content),
        false => CallToolResult::success(content),
    };
    call_result.structured_content = result.structured;
    call_result
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tools_core::Image;

    use super::*;

    #[test]
    fn prod_2_images_travel_as_mcp_image_content_beside_the_text() {
        let result = ToolResult {
            text: "a plot".into(),
            structured: Some(json!({"ok": true})),
            images: vec![Image::png(vec![0x89, b'P', b'N', b'G'])],
            is_error: false,
            touched: vec![],
            previous: vec![],
        };
        let value = serde_json::to_value(mcp_result(result)).unwrap();
        assert_eq!(
            value["content"][0],
            json!({"type": "text", "text": "a plot"})
        );
        assert_eq!(
            value["content"][1],
            json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"})
        );
        assert_eq!(value["structuredContent"], json!({"ok": true}));
        assert_eq!(value["isError"], json!(false));
    }

    #[test]
    fn prod_2_tiers_map_onto_annotations() {
        let spec = |tier| ToolSpec {
            name: "t",
            title: "T",
            tier,
            lane: None,
            writes_files: false,
            may_run_long: false,
            description: String::new(),
            input_schema: Default::default(),
            output_schema: Default::default(),
        };
        let hints = |tier| {
            let value = serde_json::to_value(mcp_tool(&spec(tier)).annotations.unwrap()).unwrap();
            (
                value["readOnlyHint"].clone(),
                value["destructiveHint"].clone(),
                value["openWorldHint"].clone(),
            )
        };
        assert_eq!(hints(Tier::Read), (json!(true), json!(null), json!(null)));
        assert_eq!(
            hints(Tier::Write),
            (json!(false), json!(true), json!(false))
        );
        assert_eq!(hints(Tier::Exec), (json!(false), json!(true), json!(true)));
    }
}
