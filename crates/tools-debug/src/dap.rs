//! The small part of the Debug Adapter Protocol we use, written by hand (SPEC section 9: the
//! generated `debugserver-types` lacks what current adapters send). Envelopes are here; each
//! request we send is a type in `requests` (its command, arguments and answer, the helix-dap
//! way), the events we read are typed in `events`, and the things both carry in `types`. Every
//! field an adapter may leave out is optional; launch arguments have one part per adapter.

pub(crate) mod events;
pub(crate) mod requests;
pub(crate) mod types;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

/// The body of a failed response: the adapter's own words, with `{name}` placeholders.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ErrorBody {
    pub error: Option<ErrorMessage>,
}

/// The `error` of a failed response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ErrorMessage {
    pub format: Option<String>,
    pub variables: Option<Map<String, Value>>,
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
            "body": {"reason": "breakpoint", "description": "Breakpoint", "threadId": 1,
                     "hitBreakpointIds": [2]}
        }))
        .unwrap();
        let Message::Event(event) = event else {
            panic!("not an event")
        };
        let stopped: events::Stopped = body(event.body);
        assert_eq!(stopped.reason, "breakpoint");
        assert_eq!(stopped.thread_id, Some(1));
        assert_eq!(stopped.description.as_deref(), Some("Breakpoint"));
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
