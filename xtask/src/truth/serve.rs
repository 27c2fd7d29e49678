//! `agent-tools serve` driven as an agent's client drives it: over stdio, through the MCP
//! SDK's client, one connection (one run) per project.

use std::path::Path;

use anyhow::{Context, bail};
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, model::Implementation};
use serde_json::Value;

/// A client with no person behind it: the run is started with `--approval allow`.
#[derive(Clone)]
struct Agent;

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agent-tools-truth", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A running `serve` for one project.
pub(crate) struct Serve {
    service: RunningService<RoleClient, Agent>,
}

/// What one call returned.
pub(crate) struct Answer {
    pub(crate) text: String,
    pub(crate) structured: Value,
    pub(crate) is_error: bool,
}

impl Serve {
    /// Starts `binary serve --root ROOT --config CONFIG --approval allow`.
    pub(crate) async fn start(binary: &Path, root: &Path, config: &Path) -> anyhow::Result<Serve> {
        let mut command = tokio::process::Command::new(binary);
        command
            .arg("serve")
            .arg("--root")
            .arg(root)
            .arg("--config")
            .arg(config)
            .args(["--approval", "allow"])
            .env(
                "AGENT_TOOLS_LOG",
                std::env::var("AGENT_TOOLS_LOG").unwrap_or_else(|_| "warn".into()),
            );
        let transport = TokioChildProcess::new(command)
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let service = Agent
            .serve(transport)
            .await
            .context("agent-tools serve did not initialise")?;
        Ok(Serve { service })
    }

    /// One tool call.
    pub(crate) async fn call(&self, name: &str, arguments: Value) -> anyhow::Result<Answer> {
        let Some(arguments) = arguments.as_object().cloned() else {
            bail!("the arguments of {name} are not an object");
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let result: CallToolResult = self
            .service
            .call_tool(params)
            .await
            .with_context(|| format!("{name} failed at the protocol level"))?;
        let text = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Ok(Answer {
            text,
            structured: result.structured_content.unwrap_or(Value::Null),
            is_error: result.is_error == Some(true),
        })
    }

    /// Ends the connection; `serve` ends its run.
    pub(crate) async fn stop(self) {
        let _ = self.service.cancel().await;
    }
}
