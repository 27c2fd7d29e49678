//! What JSON-RPC 2.0 says to answer when a message cannot be served as sent, shared by the
//! transports: each reads a message its own way, and both answer the same.

use serde_json::{Value, json};

/// Text that is not JSON (or not UTF-8).
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON that is not one request or notification (a batch, a bare value).
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// A method the server does not know.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// Params that do not fit the method.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// The error answer to request `id` (`null` when it could not be read, as JSON-RPC says).
pub(crate) fn error_answer(id: Option<Value>, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null),
        "error": {"code": code, "message": message}})
}

/// What is wrong with a parsed message's shape, before any method sees it: a batch, a value
/// that is not an object, or a `tools/call` whose `arguments` are not an object. `None`: the
/// shape is fine.
pub(crate) fn shape_error(message: &Value) -> Option<(i64, String)> {
    match message {
        Value::Array(_) => Some((
            INVALID_REQUEST,
            "a JSON-RPC batch is not taken (MCP has had none since 2025-06-18); send one \
             message at a time"
                .to_owned(),
        )),
        Value::Object(object) => {
            let calls = object.get("method").and_then(Value::as_str) == Some("tools/call");
            let arguments = object
                .get("params")
                .and_then(|params| params.get("arguments"));
            match arguments {
                Some(Value::Object(_) | Value::Null) | None => None,
                Some(other) if calls => Some((
                    INVALID_PARAMS,
                    format!(
                        "`arguments` must be a JSON object of the tool's named arguments, not \
                         {}; send e.g. {{\"name\": \"read\", \"arguments\": {{\"path\": \"README.md\"}}}}",
                        kind(other)
                    ),
                )),
                Some(_) => None,
            }
        }
        other => Some((
            INVALID_REQUEST,
            format!(
                "a JSON-RPC message is a JSON object, not {}; send e.g. \
                 {{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\"}}",
                kind(other)
            ),
        )),
    }
}

/// A JSON value's kind, as a message names it.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_that_no_method_takes_are_named() {
        let batch = shape_error(&json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]));
        assert_eq!(batch.map(|(code, _)| code), Some(INVALID_REQUEST));
        assert_eq!(
            shape_error(&json!(42)).map(|(code, _)| code),
            Some(INVALID_REQUEST)
        );
        let listed = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "read", "arguments": [1, 2]}});
        let (code, message) = shape_error(&listed).unwrap();
        assert_eq!(code, INVALID_PARAMS);
        assert!(
            message.starts_with("`arguments` must be a JSON object"),
            "{message}"
        );
        assert!(message.contains("not an array"), "{message}");
        let fine = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "read", "arguments": {"path": "a"}}});
        assert_eq!(shape_error(&fine), None);
    }
}
