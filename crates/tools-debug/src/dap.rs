//! The small part of the Debug Adapter Protocol we use, written by hand (SPEC section 9: the
//! generated `debugserver-types` lacks what current adapters send). Envelopes are typed; the
//! bodies we read are typed with every field optional that an adapter may leave out; launch
//! and attach arguments stay raw JSON, because each adapter has its own.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message in either direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum Message {
    Request(Request),
    Response(Response),
    Event(Event),
}

/// A request, from us or (a reverse request such as `runInTerminal`) from the adapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Request {
    pub seq: i64,
    pub command: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub arguments: Value,
}

/// The answer to a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Response {
    #[serde(default)]
    pub seq: i64,
    pub request_seq: i64,
    pub success: bool,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub body: Value,
}

/// Something the adapter tells us unasked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Event {
    #[serde(default)]
    pub seq: i64,
    pub event: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub body: Value,
}

/// What an adapter can do (the fields we look at).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Capabilities {
    pub supports_configuration_done_request: bool,
    pub exception_breakpoint_filters: Option<Vec<Value>>,
    pub supports_terminate_request: bool,
}

/// A source file as the adapter names it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Source {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A breakpoint as the adapter reports it after `setBreakpoints`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Breakpoint {
    pub verified: bool,
    pub line: Option<u32>,
    pub message: Option<String>,
}

/// The body of `stopped`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct StoppedEvent {
    pub reason: String,
    pub description: Option<String>,
    pub thread_id: Option<i64>,
    pub text: Option<String>,
    pub all_threads_stopped: Option<bool>,
    pub hit_breakpoint_ids: Option<Vec<i64>>,
}

/// The body of `output`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct OutputEvent {
    pub category: Option<String>,
    pub output: String,
}

/// A thread.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Thread {
    pub id: i64,
    pub name: String,
}

/// A frame of a stack trace.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct StackFrame {
    pub id: i64,
    pub name: String,
    pub source: Option<Source>,
    pub line: u32,
}

/// The body of a `stackTrace` response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct StackTraceBody {
    pub stack_frames: Vec<StackFrame>,
    pub total_frames: Option<u64>,
}

/// A scope of a frame.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Scope {
    pub name: String,
    pub variables_reference: i64,
    pub presentation_hint: Option<String>,
    pub expensive: bool,
}

/// A variable (a child of a scope or of another variable).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Variable {
    pub name: String,
    pub value: String,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    pub variables_reference: i64,
}

/// The body of an `evaluate` response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct EvaluateBody {
    pub result: String,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    pub variables_reference: i64,
}

/// Reads a typed body; a body that does not fit reads as the empty one (every field we read
/// is optional), so an adapter's extension never fails a request.
pub(crate) fn body<T: serde::de::DeserializeOwned + Default>(value: Value) -> T {
    if value.is_null() {
        return T::default();
    }
    serde_json::from_value(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_read_by_their_type() {
        let event: Message = serde_json::from_value(json!({
            "seq": 4, "type": "event", "event": "stopped",
            "body": {"reason": "breakpoint", "threadId": 1, "hitBreakpointIds": [2]}
        }))
        .unwrap();
        let Message::Event(event) = event else {
            panic!("not an event")
        };
        let stopped: StoppedEvent = body(event.body);
        assert_eq!(stopped.reason, "breakpoint");
        assert_eq!(stopped.thread_id, Some(1));
        assert_eq!(stopped.hit_breakpoint_ids, Some(vec![2]));
        let request = serde_json::to_value(Message::Request(Request {
            seq: 1,
            command: "threads".into(),
            arguments: Value::Null,
        }))
        .unwrap();
        assert_eq!(
            request,
            json!({"type": "request", "seq": 1, "command": "threads"})
        );
    }
}
