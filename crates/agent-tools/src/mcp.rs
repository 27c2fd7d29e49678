//! The run served over MCP (PROD-2): `tools/list` shows what the surface sees, `tools/call`
//! goes through dispatch, and cards go out as elicitation requests when the client can take
//! them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use tokio::sync::OnceCell;
use tools_core::{
    CallOptions, Dispatcher, Progress, ProgressSink, QuestionPort, ShutdownSummary, Tier, ToolCall,
    ToolResult, ToolSpec,
};

use crate::{ElicitationPort, Settings};

/// An MCP server for one run.
///
/// The run is built when the client first lists or calls a tool, because whether a question
/// port exists depends on the capabilities the client declared in `initialize`: with form
/// elicitation, cards go to the client; without it, there is no question port, so
/// `ask_user` is not registered and the approval gate has no approver (ASK-5, CORE-5).
pub struct McpServer {
    settings: Settings,
    dispatcher: Arc<OnceCell<Arc<Dispatcher>>>,
    conversation: String,
}

/// The least time between two progress notifications of one call.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// A handle on the run a server builds, for ending it when the connection ends.
#[derive(Clone)]
pub struct McpRun {
    dispatcher: Arc<OnceCell<Arc<Dispatcher>>>,
}

impl McpRun {
    /// Ends the run within `bound` (calls cancelled, resources stopped); `None` when no run
    /// was built (the client never listed or called a tool).
    pub async fn shutdown(&self, bound: Duration) -> Option<ShutdownSummary> {
        let dispatcher = self.dispatcher.get()?;
        Some(dispatcher.shutdown(bound).await)
    }
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
        McpServer {
            settings,
            dispatcher: Arc::new(OnceCell::new()),
            conversation: format!("conversation-{}-{started}-{number}", std::process::id()),
        }
    }

    /// The run this server builds, to end it after the connection closes.
    pub fn run(&self) -> McpRun {
        McpRun {
            dispatcher: Arc::clone(&self.dispatcher),
        }
    }

    async fn dispatcher(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<Dispatcher>, McpError> {
        self.dispatcher
            .get_or_try_init(|| async {
                let modes = context.peer.supported_elicitation_modes();
                let port: Option<Arc<dyn QuestionPort>> =
                    match modes.contains(&rmcp::service::ElicitationMode::Form) {
                        true => Some(Arc::new(ElicitationPort::new(context.peer.clone()))),
                        false => None,
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
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::from_build_env();
        implementation.name = "agent-tools".to_owned();
        implementation.version = env!("CARGO_PKG_VERSION").to_owned();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation)
            .with_instructions(
                "Built-in tools bound to this workspace. Paths are relative to the workspace root. \
                 Write and exec tools pass an approval gate.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let dispatcher = self.dispatcher(&context).await?;
        let tools = dispatcher.tools().into_iter().map(mcp_tool).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let dispatcher = self.dispatcher(&context).await?;
        let call = ToolCall {
            name: request.name.to_string(),
            arguments: request
                .arguments
                .map(serde_json::Value::Object)
                .unwrap_or(serde_json::Value::Null),
        };
        // The client's `notifications/cancelled` fires `ct`; dispatch hands it to the tool as
        // its cancellation and answers once the tool stopped (or its grace ran out).
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| progress_sink(context.peer.clone(), token));
        let options = CallOptions {
            cancel: Some(context.ct.clone()),
            progress,
        };
        Ok(mcp_result(dispatcher.dispatch_with(call, options).await).into())
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
    let annotations = match spec.tier {
        Tier::Read => ToolAnnotations::new().read_only(true),
        Tier::Write => ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .open_world(false),
        Tier::Exec => ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .open_world(true),
    };
    Tool::new(
        spec.name,
        spec.description.clone(),
        Arc::new(spec.input_schema.clone()),
    )
    .with_raw_output_schema(Arc::new(spec.output_schema.clone()))
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
            tier,
            lane: None,
            writes_files: false,
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
