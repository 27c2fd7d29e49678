//! A request body read as one JSON-RPC message, and the 2025-11-25 task dialect rewritten in
//! it and in its answer (see [`crate::dialect`]), as the stdio transport does per line.
//!
//! The answer comes back as one JSON body or as an SSE stream; in a stream, each event's
//! `data` is rewritten until the answer the dialect waits for has passed, and the rest of the
//! stream flows through untouched.

use std::convert::Infallible;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderMap, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use serde_json::{Value, json};

use crate::dialect::{self, Dialect};

pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// JSON-RPC's code for text that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for a message that is not a valid request.
const INVALID_REQUEST: i64 = -32600;

/// The body to hand on, and the dialect its answer is rewritten with (none: pass it as is);
/// a body that is not one JSON-RPC message is answered here with the JSON-RPC error for it.
pub(crate) fn inbound(
    headers: &HeaderMap,
    body: Bytes,
) -> Result<(Bytes, Option<Dialect>), Response<Body>> {
    let first = body.iter().find(|byte| !byte.is_ascii_whitespace());
    match first {
        Some(b'{') => {}
        Some(b'[') => {
            return Err(jsonrpc_error(
                INVALID_REQUEST,
                "a JSON-RPC batch is not taken (MCP has had none since 2025-06-18); send one \
                 message per request"
                    .to_owned(),
            ));
        }
        _ => {
            return Err(jsonrpc_error(
                PARSE_ERROR,
                "the body is not a JSON-RPC message; send one JSON object such as \
                 {\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\"}"
                    .to_owned(),
            ));
        }
    }
    let Ok(text) = std::str::from_utf8(&body) else {
        return Err(jsonrpc_error(
            PARSE_ERROR,
            "the body is not UTF-8 text; JSON is sent as UTF-8".to_owned(),
        ));
    };
    // Syntax only: most messages need no rewriting, and rmcp parses them itself.
    if let Err(error) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        return Err(jsonrpc_error(
            PARSE_ERROR,
            format!("the body could not be read as JSON ({error}); send one JSON-RPC message"),
        ));
    }
    if !dialect::may_rewrite_inbound(text) {
        return Ok((body, None));
    }
    let Ok(mut message) = serde_json::from_slice::<Value>(&body) else {
        return Ok((body, None));
    };
    let session = headers.contains_key("mcp-session-id")
        || message.get("method").and_then(Value::as_str) == Some("initialize");
    let mut dialect = Dialect::for_request(session);
    dialect.inbound(&mut message);
    let rewritten = serde_json::to_vec(&message)
        .map(Bytes::from)
        .unwrap_or(body);
    Ok((rewritten, Some(dialect)))
}

/// `response`, with the answer `dialect` waits for rewritten.
pub(crate) async fn outbound(response: Response<Body>, dialect: Dialect) -> Response<Body> {
    if !dialect.is_waiting() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    parts.headers.remove(header::CONTENT_LENGTH);
    if content_type.starts_with("text/event-stream") {
        let mut events = Events {
            dialect,
            pending: BytesMut::new(),
        };
        let stream = body
            .into_data_stream()
            .map(move |chunk| chunk.map(|bytes| Frame::data(events.feed(bytes))));
        return Response::from_parts(parts, BodyExt::boxed(StreamBody::new(stream)));
    }
    if content_type.starts_with("application/json") {
        let Ok(collected) = body.collect().await;
        let bytes = collected.to_bytes();
        let mut dialect = dialect;
        let rewritten = match serde_json::from_slice::<Value>(&bytes) {
            Ok(mut message) => {
                dialect.outbound(&mut message);
                serde_json::to_vec(&message)
                    .map(Bytes::from)
                    .unwrap_or(bytes)
            }
            Err(_) => bytes,
        };
        return Response::from_parts(parts, Full::new(rewritten).boxed());
    }
    Response::from_parts(parts, body)
}

/// An SSE stream being rewritten: the events' bytes not yet complete.
struct Events {
    dialect: Dialect,
    pending: BytesMut,
}

impl Events {
    /// The complete events of what has come so far, rewritten; a part event waits for the
    /// rest of it.
    fn feed(&mut self, bytes: Bytes) -> Bytes {
        if !self.dialect.is_waiting() && self.pending.is_empty() {
            return bytes;
        }
        self.pending.extend_from_slice(&bytes);
        let mut out = BytesMut::new();
        while let Some(end) = find(&self.pending, b"\n\n") {
            let event = self.pending.split_to(end + 2);
            match self.dialect.is_waiting() {
                true => out.extend_from_slice(&self.rewrite(&event)),
                false => out.extend_from_slice(&event),
            }
        }
        if !self.dialect.is_waiting() {
            out.extend_from_slice(&self.pending.split());
        }
        out.freeze()
    }

    /// One event (ending in its blank line) with its `data` rewritten.
    fn rewrite(&mut self, event: &[u8]) -> Vec<u8> {
        let Ok(text) = std::str::from_utf8(event) else {
            return event.to_vec();
        };
        let data: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| data.strip_prefix(' ').unwrap_or(data))
            .collect();
        let Ok(mut message) = serde_json::from_str::<Value>(&data.join("\n")) else {
            return event.to_vec();
        };
        self.dialect.outbound(&mut message);
        let mut rewritten = String::new();
        let mut written = false;
        for line in text.lines() {
            if line.starts_with("data:") {
                if !written {
                    rewritten.push_str("data: ");
                    rewritten.push_str(&message.to_string());
                    rewritten.push('\n');
                    written = true;
                }
            } else if !line.is_empty() {
                rewritten.push_str(line);
                rewritten.push('\n');
            }
        }
        rewritten.push('\n');
        rewritten.into_bytes()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// A JSON-RPC error answer with no id (the message's id could not be read), status 400.
fn jsonrpc_error(code: i64, message: String) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    Response::builder()
        .status(StatusCode::BAD_REQUEST)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_task_call_keeps_its_task_and_its_answer_becomes_one() {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-session-id", "s1".parse().unwrap());
        let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "eval", "arguments": {}, "task": {"ttl": 1000}}});
        let (body, dialect) = inbound(&headers, Bytes::from(call.to_string())).unwrap();
        let sent: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(sent["params"].get("task"), None);
        let mut events = Events {
            dialect: dialect.unwrap(),
            pending: BytesMut::new(),
        };
        let task = json!({"taskId": "t1", "status": "working"});
        let answer = json!({"jsonrpc": "2.0", "id": 4, "result": {"content": [],
            "_meta": {dialect::TASK_META: task.clone()}}});
        let stream = format!("id: 0\nretry: 3000\ndata:\n\nid: 1\ndata: {answer}\n\n");
        // Split inside the answer: the part waits for its rest.
        let (head, tail) = stream.split_at(stream.len() - 7);
        let mut out = events.feed(Bytes::from(head.to_owned())).to_vec();
        out.extend_from_slice(&events.feed(Bytes::from(tail.to_owned())));
        let out = String::from_utf8(out).unwrap();
        let data = out
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .next_back()
            .unwrap();
        let rewritten: Value = serde_json::from_str(data).unwrap();
        assert_eq!(rewritten["result"], json!({"task": task}), "{out}");
        assert!(out.starts_with("id: 0\nretry: 3000\n"), "{out}");
        // After the answer, bytes pass as they are.
        assert_eq!(
            &events.feed(Bytes::from_static(b": ping\n\n"))[..],
            b": ping\n\n"
        );
    }

    #[tokio::test]
    async fn what_is_not_one_message_is_answered_with_its_jsonrpc_error() {
        for (body, code) in [
            (&b"{not json"[..], PARSE_ERROR),
            (
                &b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]"[..],
                INVALID_REQUEST,
            ),
            (
                &b"{\"jsonrpc\": \"2.0\", \"method\": \"\xff\"}"[..],
                PARSE_ERROR,
            ),
            (&b"42"[..], PARSE_ERROR),
        ] {
            let refused = inbound(&HeaderMap::new(), Bytes::copy_from_slice(body)).unwrap_err();
            assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
            let Ok(collected) = refused.into_body().collect().await;
            let answer: Value = serde_json::from_slice(&collected.to_bytes()).unwrap();
            assert_eq!(answer["id"], Value::Null, "{answer}");
            assert_eq!(answer["error"]["code"], code, "{answer}");
        }
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
        let (body, dialect) = inbound(&HeaderMap::new(), Bytes::from(ping.clone())).unwrap();
        assert_eq!(body, ping.as_bytes());
        assert!(dialect.is_none());
    }
}
