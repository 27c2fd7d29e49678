//! What `tools/list` costs a model, counted with a real tokenizer (o200k, OpenAI's current
//! one) on what `serve` sends for the full surface. `cargo xtask bench tokens` prints the
//! per-tool figures.
//!
//! The bounds are the wire contract's budgets: 3,000 tokens model-facing, 8,000 in all.

use serde_json::{Value, json};

use crate::support::{Client, Server, workspace};

/// Name, description and input schema of every tool: what a model reads.
const MODEL_FACING_BOUND: usize = 3_000;
/// The whole `tools/list` result: titles, annotations and output schemas too.
const WHOLE_BOUND: usize = 8_000;

#[tokio::test]
async fn tools_list_fits_its_token_budget() {
    let dir = workspace();
    let server = Server::start(dir.path(), &[], Client::answering(Vec::new())).await;
    let tools = server.service.list_all_tools().await.unwrap();
    server.service.cancel().await.unwrap();
    let tokenizer = tiktoken_rs::o200k_base().unwrap();
    let count = |value: &Value| tokenizer.encode_ordinary(&value.to_string()).len();
    let tools: Vec<Value> = tools
        .iter()
        .map(|tool| serde_json::to_value(tool).unwrap())
        .collect();
    assert!(tools.len() >= 13, "only {} tools listed", tools.len());
    let model_facing: usize = tools
        .iter()
        .map(|tool| {
            count(&json!({
                "name": tool["name"],
                "description": tool["description"],
                "inputSchema": tool["inputSchema"],
            }))
        })
        .sum();
    let whole = count(&json!({ "tools": tools }));
    assert!(
        model_facing <= MODEL_FACING_BOUND,
        "the model-facing list costs {model_facing} tokens, over {MODEL_FACING_BOUND}"
    );
    assert!(
        whole <= WHOLE_BOUND,
        "tools/list costs {whole} tokens, over {WHOLE_BOUND}"
    );
}
