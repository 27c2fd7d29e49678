//! Tools and results as MCP has them: a spec as a listed tool (tiers as annotations), a
//! result as content blocks and structured content, and progress as notifications.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use rmcp::model::{
    CallToolResult, ContentBlock, ProgressNotificationParam, ProgressToken, Tool, ToolAnnotations,
};
use rmcp::service::RoleServer;
use tokio_util::sync::CancellationToken;
use tools_core::{Progress, ProgressSink, Tier, ToolResult, ToolSpec};

/// The least time between two progress notifications of one call.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// How long closing a call's progress waits for a notification already on its way: a
/// client that stopped reading must not hold the call's answer back.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// A call's progress on its way to the client as `notifications/progress`, at most one per
/// [`PROGRESS_INTERVAL`] (the latest report wins), until it is closed.
pub(crate) struct ProgressStream {
    sink: ProgressSink,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl ProgressStream {
    /// Starts sending the reports given to [`ProgressStream::sink`] for `token`.
    pub(crate) fn start(peer: rmcp::Peer<RoleServer>, token: ProgressToken) -> ProgressStream {
        let (sender, mut receiver) = tokio::sync::watch::channel::<Option<Progress>>(None);
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let mut step = 0.0;
            loop {
                tokio::select! {
                    biased;
                    () = stopped.cancelled() => return,
                    changed = receiver.changed() => if changed.is_err() { return },
                }
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
                tokio::select! {
                    () = stopped.cancelled() => return,
                    () = tokio::time::sleep(PROGRESS_INTERVAL) => {}
                }
            }
        });
        let sink = Arc::new(move |progress: Progress| {
            let _ = sender.send(Some(progress));
        });
        ProgressStream { sink, stop, task }
    }

    /// Where the call reports its progress.
    pub(crate) fn sink(&self) -> ProgressSink {
        Arc::clone(&self.sink)
    }

    /// Ends the stream before the request is answered: MCP allows no progress after the
    /// response, so a report not yet sent is dropped, and one being sent is let finish first
    /// (for up to [`CLOSE_WAIT`]) so that it goes out before the answer.
    pub(crate) async fn close(self) {
        self.stop.cancel();
        let mut task = self.task;
        if tokio::time::timeout(CLOSE_WAIT, &mut task).await.is_err() {
            task.abort();
        }
    }
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
            needs_person: false,
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
