//! The MCP stream over stdio, one JSON-RPC message per line, that answers every request: a
//! line that cannot be read as a message gets the JSON-RPC error naming what was wrong
//! instead of being dropped with the client left waiting forever. Text that is not JSON (or
//! not UTF-8) gets -32700, a batch -32600, a `tools/call` whose `arguments` are not an object
//! -32602, each to the request's id when it can be found and to `id: null` when not, as
//! JSON-RPC 2.0 says; the stream goes on.

use std::sync::{Arc, Mutex};

use rmcp::ServiceExt;
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::McpServer;
use crate::dialect::{self, Dialect};
use crate::jsonrpc::{INVALID_PARAMS, METHOD_NOT_FOUND, PARSE_ERROR, error_answer, shape_error};

/// A line-delimited JSON-RPC transport over a reader and a writer.
pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    /// The line read so far. rmcp drops a `receive` in flight whenever it has something to
    /// send, so what a partly read line already took from the reader is kept here, not in
    /// the dropped future (issue 39: a request written in two pieces was lost when a
    /// progress notification went out between them).
    pending: Vec<u8>,
    writer: Arc<tokio::sync::Mutex<W>>,
    /// The 2025-11-25 task dialect, rewritten at this boundary (see [`dialect`]).
    dialect: Arc<Mutex<Dialect>>,
}

/// The transport `serve` uses: standard input and output.
pub fn stdio_transport() -> LineTransport<tokio::io::Stdin, tokio::io::Stdout> {
    LineTransport::new(tokio::io::stdin(), tokio::io::stdout())
}

/// Serves `server` over standard input and output until the client closes the connection or
/// standard input ends. Ending the run is the caller's (see [`crate::McpRun`]).
pub async fn serve_stdio(server: McpServer) -> crate::Result<()> {
    let service = server
        .serve(stdio_transport())
        .await
        .map_err(|error| crate::Error::Initialize(Box::new(error)))?;
    service.waiting().await.map_err(crate::Error::Service)?;
    Ok(())
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineTransport<R, W> {
    /// A transport reading messages from `reader` and writing them to `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        LineTransport {
            reader: BufReader::new(reader),
            pending: Vec::new(),
            writer: Arc::new(tokio::sync::Mutex::new(writer)),
            dialect: Arc::default(),
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &tokio::sync::Mutex<W>,
    mut line: Vec<u8>,
) -> std::io::Result<()> {
    line.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&line).await?;
    writer.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        let line = outbound(&self.dialect, &item);
        async move { write_line(&writer, line?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // Cancel-safe: what `read_until` took is in `self.pending` even if this future
            // is dropped before the line ends.
            match self.reader.read_until(b'\n', &mut self.pending).await {
                Ok(0) if self.pending.is_empty() => return None,
                // The stream ended inside a line: it is read as the last line.
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "cannot read the MCP stream; ending the connection");
                    return None;
                }
            }
            let bytes = std::mem::take(&mut self.pending);
            let answer = match String::from_utf8(bytes) {
                Err(_) => Some(error_answer(
                    None,
                    PARSE_ERROR,
                    "the line is not UTF-8 text; JSON-RPC messages are sent as UTF-8".to_owned(),
                )),
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => {
                    let line = inbound(&self.dialect, line);
                    match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(&line) {
                        Ok(message) => return Some(message),
                        Err(error) => unreadable(&line, &error),
                    }
                }
            };
            let Some(answer) = answer else {
                tracing::warn!("dropped an unreadable notification");
                continue;
            };
            // Written from a task of its own: a write cut short when this future is dropped
            // would leave half a line in the stream.
            if let Ok(bytes) = serde_json::to_vec(&answer) {
                let writer = Arc::clone(&self.writer);
                tokio::spawn(async move {
                    if let Err(error) = write_line(&writer, bytes).await {
                        tracing::warn!(%error, "cannot answer an unreadable request");
                    }
                });
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.shutdown().await
    }
}

/// A line from the client, in the dialect rmcp reads.
fn inbound(dialect: &Mutex<Dialect>, line: String) -> String {
    if !dialect::may_rewrite_inbound(&line) {
        return line;
    }
    let Ok(mut message) = serde_json::from_str::<Value>(&line) else {
        return line;
    };
    let Ok(mut dialect) = dialect.lock() else {
        return line;
    };
    dialect.inbound(&mut message);
    serde_json::to_string(&message).unwrap_or(line)
}

/// A message to the client, in the dialect the request that it answers speaks.
fn outbound(
    dialect: &Mutex<Dialect>,
    item: &TxJsonRpcMessage<RoleServer>,
) -> std::io::Result<Vec<u8>> {
    let mut dialect = dialect
        .lock()
        .map_err(|_| std::io::Error::other("poisoned"))?;
    if !dialect.is_waiting() {
        return serde_json::to_vec(item).map_err(std::io::Error::other);
    }
    let mut message = serde_json::to_value(item).map_err(std::io::Error::other)?;
    dialect.outbound(&mut message);
    serde_json::to_vec(&message).map_err(std::io::Error::other)
}

/// The error answer to a line that did not decode: to its id when one can be found, else
/// to `id: null` for text that is not JSON or not one message; a notification (an object
/// without an id) that does not fit gets none, as JSON-RPC says.
fn unreadable(line: &str, error: &serde_json::Error) -> Option<Value> {
    let message = match serde_json::from_str::<Value>(line) {
        Err(json_error) => {
            return Some(error_answer(
                request_id(line),
                PARSE_ERROR,
                format!(
                    "the line could not be read as JSON ({json_error}); send one JSON-RPC \
                     message per line (JSON nested deeper than 128 levels is refused: send the \
                     arguments flatter)"
                ),
            ));
        }
        Ok(message) => message,
    };
    let id = message.get("id").cloned();
    if let Some((code, text)) = shape_error(&message) {
        return match (&message, id) {
            (Value::Object(_), None) => None,
            (_, id) => Some(error_answer(id, code, text)),
        };
    }
    let id = id?;
    let (code, text) = match error.to_string().contains("unknown variant") {
        true => (
            METHOD_NOT_FOUND,
            format!("the method is not one this server knows ({error})"),
        ),
        false => (
            INVALID_PARAMS,
            format!("the request's params do not fit its method: {error}"),
        ),
    };
    Some(error_answer(Some(id), code, text))
}

/// The `id` of a JSON-RPC request, found without parsing the whole line (which may be too deep
/// to parse): the value of the top-level key `id`, when it is a number or a string.
fn request_id(line: &str) -> Option<Value> {
    let bytes = line.as_bytes();
    let mut depth = 0usize;
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'"' => {
                let end = string_end(bytes, index)?;
                if depth == 1 && &line[index..=end] == "\"id\"" {
                    let rest = line[end + 1..].trim_start().strip_prefix(':')?.trim_start();
                    return scalar(rest);
                }
                index = end;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        index += 1;
    }
    None
}

/// The index of the quote closing the string that opens at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut index = start + 1;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 2,
            b'"' => return Some(index),
            _ => index += 1,
        }
    }
    None
}

/// A number or string at the start of `text`.
fn scalar(text: &str) -> Option<Value> {
    let end = match text.as_bytes().first()? {
        b'"' => string_end(text.as_bytes(), 0)? + 1,
        _ => text
            .find(|c: char| c == ',' || c == '}' || c.is_whitespace())
            .unwrap_or(text.len()),
    };
    match serde_json::from_str::<Value>(&text[..end]).ok()? {
        value @ (Value::Number(_) | Value::String(_)) => Some(value),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn the_id_is_found_however_deep_the_rest_is() {
        let line = format!(
            r#"{{"jsonrpc":"2.0","params":{{"arguments":{{"x":{}}},"id":"inner"}},"id":7,"method":"tools/call"}}"#,
            nested(500)
        );
        assert_eq!(request_id(&line), Some(json!(7)));
        assert_eq!(
            request_id(r#"{"id": "a\"b", "method": "x"}"#),
            Some(json!("a\"b"))
        );
        assert_eq!(request_id(r#"{"method": "notifications/x"}"#), None);
    }

    #[test]
    fn a_request_too_deep_to_parse_gets_a_parse_error_with_its_id() {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"read","arguments":{{"x":{}}}}}}}"#,
            nested(200)
        );
        let error = serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(&line).unwrap_err();
        let answer = unreadable(&line, &error).unwrap();
        assert_eq!(answer["id"], json!(3));
        assert_eq!(answer["error"]["code"], json!(PARSE_ERROR));
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("recursion limit exceeded"),
            "{answer}"
        );
    }

    #[tokio::test]
    async fn unreadable_requests_are_answered_and_the_stream_goes_on() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"read","arguments":{{"x":{}}}}}}}"#,
            nested(130)
        );
        let wrong = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"#;
        let ping = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
        let batch = format!("[{ping}]");
        let not_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"\xff\"}";
        let mut input = format!("{deep}\n{wrong}\n\n{{not json\n{batch}\n").into_bytes();
        input.extend_from_slice(not_utf8);
        input.extend_from_slice(format!("\n{ping}\n").as_bytes());
        let (client, server_out) = tokio::io::duplex(1 << 16);
        let mut transport = LineTransport::new(std::io::Cursor::new(input), server_out);
        let message = transport.receive().await.unwrap();
        assert!(format!("{message:?}").contains("Ping"), "{message:?}");
        assert!(
            transport.receive().await.is_none(),
            "the end of input ends the stream"
        );
        drop(transport);
        let mut written = String::new();
        let mut reader = BufReader::new(client);
        tokio::io::AsyncReadExt::read_to_string(&mut reader, &mut written)
            .await
            .unwrap();
        let answers: Vec<Value> = written
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let shown: Vec<(Value, Value)> = answers
            .iter()
            .map(|answer| (answer["id"].clone(), answer["error"]["code"].clone()))
            .collect();
        // JSON-RPC 2.0: the request's id when it can be read, else null.
        assert_eq!(
            shown,
            vec![
                (json!(1), json!(PARSE_ERROR)),
                (json!(2), json!(PARSE_ERROR)),
                (Value::Null, json!(PARSE_ERROR)),
                (Value::Null, json!(crate::jsonrpc::INVALID_REQUEST)),
                (Value::Null, json!(PARSE_ERROR)),
            ],
            "{written}"
        );
    }
}
