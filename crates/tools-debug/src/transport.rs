//! One connection to a debug adapter: Content-Length framing over a pipe or a socket, a
//! reader task that routes responses to their waiting requests, events to the session, and
//! answers the adapter's own requests (`runInTerminal`, `startDebugging`) so none is left
//! hanging. Dropping the transport stops its reader.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::dap::requests;
use crate::dap::{self, ErrorBody, Event, Message, Request, Response};
use crate::{Error, Result};

/// The largest message we accept: a variables answer for a huge object is big, but not this.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// What the reader hands the session.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// An event.
    Event(Event),
    /// The connection ended (the adapter exited or closed it); no more messages will come.
    Closed,
}

/// Where the reader delivers events, on its own task, in order.
pub(crate) type Sink = Arc<dyn Fn(Incoming) + Send + Sync>;

type Writer = Box<dyn AsyncWrite + Send + Unpin>;
type Pending = Arc<Mutex<Option<HashMap<i64, oneshot::Sender<Response>>>>>;

struct Shared {
    adapter: String,
    writer: tokio::sync::Mutex<Writer>,
    seq: AtomicI64,
}

impl Shared {
    async fn write(&self, message: &Message) -> Result<()> {
        let body = serde_json::to_vec(message).map_err(|error| Error::Protocol {
            adapter: self.adapter.clone(),
            problem: error.to_string(),
        })?;
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(&body);
        let mut writer = self.writer.lock().await;
        let io = async {
            writer.write_all(&frame).await?;
            writer.flush().await
        };
        io.await.map_err(|source| Error::Io {
            adapter: self.adapter.clone(),
            source,
        })
    }

    fn next_seq(&self) -> i64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }
}

/// A connection to one adapter.
pub(crate) struct Transport {
    shared: Arc<Shared>,
    pending: Pending,
    reader: JoinHandle<()>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("adapter", &self.shared.adapter)
            .finish_non_exhaustive()
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// A request sent whose answer has not been awaited yet (the handshake sends `launch` and
/// reads its answer only after `configurationDone`).
pub(crate) struct InFlight<R> {
    adapter: String,
    answer: oneshot::Receiver<Response>,
    request: PhantomData<fn() -> R>,
}

impl<R: requests::Request> InFlight<R> {
    /// Waits for the answer, up to `timeout`.
    pub(crate) async fn answer(self, timeout: Duration) -> Result<R::Response> {
        let InFlight {
            adapter, answer, ..
        } = self;
        let command = R::COMMAND.to_owned();
        match tokio::time::timeout(timeout, answer).await {
            Err(_) => Err(Error::Timeout {
                adapter,
                command,
                seconds: timeout.as_secs().max(1),
            }),
            Ok(Err(_)) => Err(Error::Gone {
                adapter,
                command,
                details: String::new(),
            }),
            Ok(Ok(response)) if response.success => Ok(dap::body(response.body)),
            Ok(Ok(response)) => Err(Error::Refused {
                adapter,
                command,
                message: refusal(response),
            }),
        }
    }
}

/// Why an adapter refused a request, in its own words: the error body's text (its `{name}`
/// placeholders filled in) says more than the short `message` ("Failed to launch"), which is
/// kept in front when the text does not already say it.
fn refusal(response: Response) -> String {
    let error: ErrorBody = dap::body(response.body);
    let detail = error.error.and_then(|error| {
        let mut text = error.format?;
        for (name, value) in error.variables.unwrap_or_default() {
            let value = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            text = text.replace(&format!("{{{name}}}"), &value);
        }
        Some(text)
    });
    match (response.message.as_deref(), detail) {
        (Some(message), Some(detail)) if detail.contains(message) => detail,
        (Some(message), Some(detail)) => format!("{message}: {detail}"),
        (Some(message), None) => message.to_owned(),
        (None, Some(detail)) => detail,
        (None, None) => "no reason given".to_owned(),
    }
}

impl Transport {
    /// Starts reading `reader` and writing `writer`, delivering events to `sink`.
    pub(crate) fn new(
        adapter: &str,
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        sink: Sink,
    ) -> Self {
        let shared = Arc::new(Shared {
            adapter: adapter.to_owned(),
            writer: tokio::sync::Mutex::new(Box::new(writer)),
            seq: AtomicI64::new(1),
        });
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        let reader = tokio::spawn(read_loop(
            BufReader::new(reader),
            Arc::clone(&shared),
            Arc::clone(&pending),
            sink,
        ));
        Transport {
            shared,
            pending,
            reader,
        }
    }

    /// Sends a request without waiting for its answer.
    pub(crate) async fn send<R: requests::Request>(
        &self,
        arguments: R::Arguments,
    ) -> Result<InFlight<R>> {
        let arguments = serde_json::to_value(arguments).map_err(|error| Error::Protocol {
            adapter: self.shared.adapter.clone(),
            problem: format!("the arguments of `{}`: {error}", R::COMMAND),
        })?;
        let answer = self.send_raw(R::COMMAND, arguments).await?;
        Ok(InFlight {
            adapter: self.shared.adapter.clone(),
            answer,
            request: PhantomData,
        })
    }

    /// Sends a request and waits for its answer's body, up to `timeout`.
    pub(crate) async fn request<R: requests::Request>(
        &self,
        arguments: R::Arguments,
        timeout: Duration,
    ) -> Result<R::Response> {
        self.send::<R>(arguments).await?.answer(timeout).await
    }

    /// Writes one request; its answer comes on the receiver.
    async fn send_raw(
        &self,
        command: &'static str,
        arguments: Value,
    ) -> Result<oneshot::Receiver<Response>> {
        let seq = self.shared.next_seq();
        let (tx, rx) = oneshot::channel();
        let open = match self.pending.lock() {
            Ok(mut pending) => match pending.as_mut() {
                Some(map) => {
                    map.insert(seq, tx);
                    true
                }
                None => false,
            },
            Err(_) => false,
        };
        if !open {
            return Err(Error::Gone {
                adapter: self.shared.adapter.clone(),
                command: command.to_owned(),
                details: " (it had already stopped)".to_owned(),
            });
        }
        let message = Message::Request(Request {
            seq,
            command: command.to_owned(),
            arguments,
        });
        if let Err(error) = self.shared.write(&message).await {
            if let Ok(mut pending) = self.pending.lock()
                && let Some(map) = pending.as_mut()
            {
                map.remove(&seq);
            }
            return Err(error);
        }
        Ok(rx)
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: BufReader<R>,
    shared: Arc<Shared>,
    pending: Pending,
    sink: Sink,
) {
    while let Ok(Some(bytes)) = read_message(&mut reader).await {
        {
            match serde_json::from_slice::<Message>(&bytes) {
                Ok(Message::Response(response)) => {
                    let waiting = pending
                        .lock()
                        .ok()
                        .and_then(|mut p| p.as_mut()?.remove(&response.request_seq));
                    if let Some(waiting) = waiting {
                        let _ = waiting.send(response);
                    }
                }
                Ok(Message::Event(event)) => sink(Incoming::Event(event)),
                Ok(Message::Request(request)) => {
                    let shared = Arc::clone(&shared);
                    tokio::spawn(async move { answer_reverse(&shared, request).await });
                }
                Err(error) => {
                    tracing::debug!(adapter = %shared.adapter, %error, "unreadable message");
                }
            }
        }
    }
    // Whoever still waits learns the adapter is gone; later requests are refused at once.
    if let Ok(mut pending) = pending.lock() {
        pending.take();
    }
    sink(Incoming::Closed);
}

/// The adapter's own requests. We run no terminal and start no child sessions, so both are
/// refused with a reason; anything else is acknowledged, so the adapter never waits on us.
async fn answer_reverse(shared: &Shared, request: Request) {
    let (success, message) = match request.command.as_str() {
        "runInTerminal" => (
            false,
            Some("agent-tools runs no terminal; use console internalConsole".to_owned()),
        ),
        "startDebugging" => (
            false,
            Some("agent-tools debugs one process per session; child processes run free".to_owned()),
        ),
        _ => (true, None),
    };
    let response = Message::Response(Response {
        seq: shared.next_seq(),
        request_seq: request.seq,
        success,
        command: request.command,
        message,
        body: json!({}),
    });
    let _ = shared.write(&response).await;
}

/// One framed message; `None` at a clean end of stream.
async fn read_message<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let header = line.trim_end();
        if header.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_MESSAGE_BYTES {
        return Err(std::io::Error::other("message too large"));
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).await?;
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_are_read_by_their_length() {
        let input =
            b"Content-Length: 2\r\n\r\n{}Content-Length: 12\r\nX: y\r\n\r\n{\"a\": \"b\\r\"}"
                .to_vec();
        let mut reader = BufReader::new(&input[..]);
        assert_eq!(read_message(&mut reader).await.unwrap().unwrap(), b"{}");
        assert_eq!(
            read_message(&mut reader).await.unwrap().unwrap(),
            b"{\"a\": \"b\\r\"}"
        );
        assert!(read_message(&mut reader).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_request_gets_its_own_answer_and_reverse_requests_are_answered() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (our_read, our_write) = tokio::io::split(ours);
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&events);
        let transport = Transport::new(
            "fake",
            our_read,
            our_write,
            Arc::new(move |incoming| seen.lock().unwrap().push(format!("{incoming:?}"))),
        );
        let (their_read, mut their_write) = tokio::io::split(theirs);
        let mut their_read = BufReader::new(their_read);
        let asked = transport
            .send::<requests::Threads>(requests::NoArguments {})
            .await
            .unwrap();
        let request: Request =
            serde_json::from_slice(&read_message(&mut their_read).await.unwrap().unwrap()).unwrap();
        assert_eq!(
            (request.command.as_str(), &request.arguments),
            ("threads", &json!({}))
        );
        let write = |message: Value| {
            let body = message.to_string();
            format!("Content-Length: {}\r\n\r\n{body}", body.len())
        };
        let frames = write(
            json!({"type": "request", "seq": 7, "command": "runInTerminal", "arguments": {}}),
        ) + &write(json!({"type": "event", "seq": 8, "event": "initialized"}))
            + &write(
                json!({"type": "response", "seq": 9, "request_seq": request.seq, "success": true, "command": "threads", "body": {"threads": [{"id": 1, "name": "main"}]}}),
            );
        their_write.write_all(frames.as_bytes()).await.unwrap();
        let answered = asked.answer(Duration::from_secs(5)).await.unwrap();
        assert_eq!(
            answered.threads,
            [crate::dap::types::Thread {
                id: 1,
                name: "main".into()
            }]
        );
        let answer: Response =
            serde_json::from_slice(&read_message(&mut their_read).await.unwrap().unwrap()).unwrap();
        assert_eq!((answer.request_seq, answer.success), (7, false));
        drop(their_write);
        drop(their_read);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let events = events.lock().unwrap().clone();
        assert!(events[0].contains("initialized"), "{events:?}");
    }
}
