//! Tool definitions in the shapes the model APIs take, made from tools as MCP lists them.
//!
//! A local run lists its specs through [`agent_tools::mcp_tool`] first, and a remote run
//! (`agent_tools.connect`) has the server's `tools/list`: both go through [`definitions`], so
//! the two give the same definitions for the same run settings.

use pyo3::PyResult;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use serde_json::{Map, Value, json};

/// The tools `tools` (MCP `Tool` objects, as `tools/list` answers) in the shape `format`
/// takes; `strict` (OpenAI's formats only) gives each schema in strict mode's form and says so.
pub(crate) fn definitions(tools: &[Value], format: &str, strict: bool) -> PyResult<Vec<Value>> {
    if strict && !format.starts_with("openai") {
        return Err(PyValueError::new_err(format!(
            "strict=True is OpenAI's strict mode, for format \"openai\" or \"openai-responses\", \
             not {format:?}; leave strict out for {format:?}"
        )));
    }
    tools
        .iter()
        .map(|tool| definition(tool, format, strict))
        .collect()
}

/// One tool's definition.
fn definition(tool: &Value, format: &str, strict: bool) -> PyResult<Value> {
    let listed = Listed::of(tool)?;
    let parameters = match strict {
        true => Value::Object(tools_core::strict_schema(listed.input_schema)),
        false => Value::Object(listed.input_schema.clone()),
    };
    match format {
        // Chat Completions' `tools` entries; `strict` only when asked for.
        "openai" => {
            let mut function = json!({
                "name": listed.name,
                "description": listed.description,
                "parameters": parameters,
            });
            if strict {
                function["strict"] = json!(true);
            }
            Ok(json!({"type": "function", "function": function}))
        }
        // The Responses API's function tools, where `strict` is a required field.
        "openai-responses" => Ok(json!({
            "type": "function",
            "name": listed.name,
            "description": listed.description,
            "parameters": parameters,
            "strict": strict,
        })),
        // The Messages API's client tools.
        "anthropic" => Ok(json!({
            "name": listed.name,
            "description": listed.description,
            "input_schema": parameters,
        })),
        // What `tools/list` answers over MCP, annotations included.
        "mcp" => Ok(tool.clone()),
        other => Err(PyValueError::new_err(format!(
            "unknown format {other:?}: use \"openai\", \"openai-responses\", \"anthropic\" or \"mcp\""
        ))),
    }
}

/// The fields of a listed tool a definition is made of.
struct Listed<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Map<String, Value>,
}

impl<'a> Listed<'a> {
    fn of(tool: &'a Value) -> PyResult<Self> {
        let name = tool.get("name").and_then(Value::as_str);
        let input_schema = tool.get("inputSchema").and_then(Value::as_object);
        let (Some(name), Some(input_schema)) = (name, input_schema) else {
            return Err(PyRuntimeError::new_err(format!(
                "a listed tool has no `name` or no `inputSchema` object, so it is not an MCP \
                 tool: {tool}"
            )));
        };
        Ok(Listed {
            name,
            // MCP makes the description optional; the APIs take an empty one.
            description: tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            input_schema,
        })
    }
}
