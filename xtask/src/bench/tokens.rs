//! `cargo xtask bench tokens`: what the tool list costs a model, per tool, in o200k tokens
//! (the tokenizer of OpenAI's current models, a fair stand-in for the others): the
//! model-facing part (name, description, input schema) and the whole `tools/list` entry
//! (with title, annotations and output schema), on the full surface with vibe mode's tools.
//! The budgets the test `tools_list_fits_its_token_budget` enforces are printed beside.

use serde_json::{Value, json};

/// The budgets of the full surface (issue: the wire contract).
const MODEL_FACING_BUDGET: usize = 3_000;
const WHOLE_BUDGET: usize = 8_000;

pub(crate) fn run() -> anyhow::Result<()> {
    let tokenizer = tiktoken_rs::o200k_base()?;
    let count = |value: &Value| tokenizer.encode_ordinary(&value.to_string()).len();
    let registry = agent_tools::catalog()?;
    println!(
        "{:<16} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "tool", "desc", "input", "output", "wire out", "whole"
    );
    let (mut model_total, mut whole_total) = (0, 0);
    let (mut model_full, mut whole_full) = (0, 0);
    for spec in registry.specs() {
        let tool = serde_json::to_value(agent_tools::mcp_tool(spec))?;
        let description = count(&json!(spec.description));
        let input = count(&Value::Object(spec.input_schema.clone()));
        let output = count(&Value::Object(spec.output_schema.clone()));
        let wire = count(&tool["outputSchema"]);
        let model = count(&json!({
            "name": spec.name,
            "description": spec.description,
            "inputSchema": spec.input_schema,
        }));
        let whole = count(&tool);
        model_total += model;
        whole_total += whole;
        if !spec.name.starts_with("vibe_") {
            model_full += model;
            whole_full += whole;
        }
        println!(
            "{:<16} {description:>8} {input:>8} {output:>8} {wire:>8} {whole:>8}",
            spec.name
        );
    }
    println!(
        "\n(output: the schema with its field documentation, as docs/schemas has it; wire out: \
         as tools/list sends it)"
    );
    println!(
        "full surface:     model-facing {model_full} tokens (budget {MODEL_FACING_BUDGET}), \
         tools/list {whole_full} (budget {WHOLE_BUDGET})"
    );
    println!("with vibe's tools: model-facing {model_total}, tools/list {whole_total}");
    Ok(())
}
