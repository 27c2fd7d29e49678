//! The 2025-11-25 tasks as the TypeScript SDK speaks them (see [`crate::dialect`]): a call
//! sent with `params.task` is a task from the start, and `tasks/get`, `tasks/result`,
//! `tasks/list` and `tasks/cancel` answer in that revision's shape.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResponse, CallToolResult, CustomRequest, CustomResult, TaskPayload, TaskStatus,
};
use rmcp::service::{RequestContext, RoleServer};
use tools_core::{Dispatcher, ToolCall};

use crate::dialect;
use crate::elicit::ElicitationPort;
use crate::flight::{Asker, Flight};
use crate::server::{McpServer, no_card_asker};

/// How long `tasks/cancel` waits for the cancelled call to settle before it answers.
const CANCEL_SETTLE: Duration = Duration::from_secs(5);

/// How often a waiting `tasks/result` looks at its task.
const RESULT_POLL: Duration = Duration::from_millis(50);

fn is_terminal(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
    )
}

impl McpServer {
    /// A call sent with the 2025-11-25 `params.task`: a task from the start, whose cards go
    /// to the session as `elicitation/create` (the client answers them while it polls).
    pub(crate) fn start_legacy_task(
        &self,
        dispatcher: &Arc<Dispatcher>,
        name: &str,
        arguments: serde_json::Value,
        elicitation: bool,
        peer: rmcp::Peer<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = ToolCall {
            name: name.to_owned(),
            arguments,
        };
        let long = dispatcher.may_run_long(&call);
        // The task outlives this request, so its cards go to the session as requests of
        // their own (over HTTP, on the session's standalone stream).
        let asker = match elicitation {
            true => Asker::Port(Arc::new(ElicitationPort::new(peer))),
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

    /// The 2025-11-25 `tasks/*` methods: under their own names from a client rmcp lets
    /// through (`tasks/result`, `tasks/list`), under the private prefix from a session
    /// without the extension.
    pub(crate) async fn legacy_task_request(
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
            // rmcp hands on a `tools/call` whose params it could not read as one (`arguments`
            // an array, `name` missing): say what is wrong with the params, not the method.
            "tools/call" => {
                let message = serde_json::json!({"method": "tools/call", "params": request.params});
                let text = match crate::jsonrpc::shape_error(&message) {
                    Some((_, text)) => text,
                    None => "`tools/call` takes `name` (the tool's name, a string) and \
                             `arguments` (a JSON object of its named arguments)"
                        .to_owned(),
                };
                return Err(McpError::invalid_params(text, None));
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
