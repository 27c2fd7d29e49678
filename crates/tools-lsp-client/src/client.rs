//! The client side of one connection: async-lsp's `MainLoop` with a router that answers every
//! request a server sends us and takes every notification, so the loop never stops on a
//! message it did not expect; the state those messages build (progress, rust-analyzer's
//! status, published diagnostics with a per-file counter); and requests with a named timeout
//! that are cancelled when they time out or are dropped.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_lsp::lsp_types::notification::{Cancel, Notification};
use async_lsp::lsp_types::request::Request;
use async_lsp::lsp_types::{CancelParams, Diagnostic, NumberOrString, Url};
use async_lsp::router::Router;
use async_lsp::{AnyNotification, AnyRequest, ErrorCode, MainLoop, ResponseError, ServerSocket};
use serde_json::{Value, json};

use crate::servers::Check;

/// How many server messages (errors and warnings it showed or logged) are kept.
const MESSAGES_KEPT: usize = 10;

/// What one connection has learnt from its server; shared by the router and the session.
pub struct Shared {
    root_uri: Url,
    root_name: String,
    settings: Option<Value>,
    /// The project-wide check the server runs by itself, if any.
    check: Check,
    /// The log line that says the server is ready (`Readiness::Logged`).
    ready_log: Option<String>,
    state: Mutex<ClientState>,
    changed: tokio::sync::watch::Sender<u64>,
}

/// The state built from the server's messages.
#[derive(Debug, Default)]
pub struct ClientState {
    /// Work-done progress by token: created and not yet ended.
    pub progress: BTreeMap<String, Progress>,
    /// When the last progress ended.
    pub last_progress_end: Option<Instant>,
    /// rust-analyzer's `experimental/serverStatus`, when it sends one.
    pub server_status: Option<ServerStatus>,
    /// The last `publishDiagnostics` per file, with how many there were (LSP-6 waits on
    /// the counter for a publish that is newer than its write).
    pub diagnostics: HashMap<Url, Published>,
    /// How many publishes there have been, for any file.
    pub publishes: u64,
    /// Errors and warnings the server showed or logged, newest last.
    pub messages: VecDeque<String>,
    /// How many on-save checks (rust-analyzer's flycheck) have begun; a write waits for one
    /// that began after its save to end (LSP-6).
    pub checks_begun: u64,
    /// How many of them have ended.
    pub checks_ended: u64,
    /// Why the connection ended, once it has.
    pub ended: Option<String>,
    /// Whether the server logged the line its readiness waits for (`Readiness::Logged`).
    pub ready_logged: bool,
}

/// One running piece of work-done progress.
#[derive(Debug, Default, Clone)]
pub struct Progress {
    pub title: Option<String>,
    pub message: Option<String>,
    pub percentage: Option<u64>,
}

impl Progress {
    /// `Indexing 12/40 (30%)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        parts.extend(self.title.clone());
        parts.extend(self.message.clone());
        let mut text = match parts.is_empty() {
            true => "working".to_owned(),
            false => parts.join(" "),
        };
        if let Some(percentage) = self.percentage {
            text.push_str(&format!(" ({percentage}%)"));
        }
        text
    }
}

/// The server's own checks so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checks {
    pub begun: u64,
    pub ended: u64,
    pub running: bool,
}

/// rust-analyzer's own status report.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub health: String,
    pub quiescent: bool,
    pub message: Option<String>,
}

/// The diagnostics last published for one file.
#[derive(Debug, Default, Clone)]
pub struct Published {
    /// How many publishes this file has had.
    pub count: u64,
    /// The document version the last publish was for, when the server said.
    pub version: Option<i32>,
    pub diagnostics: Vec<Diagnostic>,
    /// How many of the server's own checks had begun when it came.
    pub check: u64,
}

/// Whether every diagnostic of `late` is in `kept`, and `kept` has more: within one run of a
/// check that only adds findings (rust-analyzer's flycheck, after it cleared the previous
/// run's at its first finding), such a publish is an earlier state that arrived late.
fn strict_subset(late: &[Diagnostic], kept: &[Diagnostic]) -> bool {
    late.len() < kept.len() && late.iter().all(|diagnostic| kept.contains(diagnostic))
}

impl Shared {
    pub fn new(
        root_uri: Url,
        root_name: String,
        settings: Option<Value>,
        check: Check,
        ready_log: Option<String>,
    ) -> Arc<Self> {
        Arc::new(Shared {
            root_uri,
            root_name,
            settings,
            check,
            ready_log,
            state: Mutex::new(ClientState::default()),
            changed: tokio::sync::watch::channel(0).0,
        })
    }

    /// The state, even if a panic poisoned the lock (it holds plain data).
    pub fn state(&self) -> MutexGuard<'_, ClientState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A receiver that wakes whenever the state changes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn update(&self, change: impl FnOnce(&mut ClientState)) {
        change(&mut self.state());
        self.changed.send_modify(|generation| *generation += 1);
    }

    /// Records why the connection ended and wakes every waiter.
    pub fn end(&self, reason: String) {
        self.update(|state| {
            state.ended.get_or_insert(reason);
        });
    }

    /// How many publishes `uri` has had so far.
    pub fn publish_count(&self, uri: &Url) -> u64 {
        self.state().diagnostics.get(uri).map_or(0, |p| p.count)
    }

    /// How many of the server's own checks have begun and ended, and whether one runs now.
    pub fn checks(&self) -> Checks {
        let state = self.state();
        let running = state
            .progress
            .keys()
            .any(|token| self.check.is_check_token(token));
        Checks {
            begun: state.checks_begun,
            ended: state.checks_ended,
            running,
        }
    }

    /// Every file's last publish, as things stand now.
    pub fn publishes(&self) -> HashMap<Url, Published> {
        self.state().diagnostics.clone()
    }

    /// The last publish for `uri`.
    pub fn published(&self, uri: &Url) -> Option<Published> {
        self.state().diagnostics.get(uri).cloned()
    }

    /// Waits until `uri` has had more than `after` publishes; false on timeout or when the
    /// connection ended.
    pub async fn wait_publish(&self, uri: &Url, after: u64, timeout: Duration) -> bool {
        self.wait_publish_until(uri, after, tokio::time::Instant::now() + timeout)
            .await
    }

    /// [`Shared::wait_publish`] with a deadline.
    pub async fn wait_publish_until(
        &self,
        uri: &Url,
        after: u64,
        deadline: tokio::time::Instant,
    ) -> bool {
        self.wait_publish_where(uri, deadline, |p| p.count > after)
            .await
    }

    /// Waits until `deadline` for a publish for `uri` after the `after`th that is for
    /// document `version`: a publish without a version (clangd's empty one when a document
    /// is closed) is not the answer for the text just opened.
    pub async fn wait_version_until(
        &self,
        uri: &Url,
        after: u64,
        version: i32,
        deadline: tokio::time::Instant,
    ) -> bool {
        self.wait_publish_where(uri, deadline, |p| {
            p.count > after && p.version == Some(version)
        })
        .await
    }

    /// Waits until `deadline` for `uri`'s last publish to satisfy `done`; false at the
    /// deadline or when the connection ended.
    async fn wait_publish_where(
        &self,
        uri: &Url,
        deadline: tokio::time::Instant,
        done: impl Fn(&Published) -> bool,
    ) -> bool {
        let mut changes = self.subscribe();
        loop {
            {
                let state = self.state();
                if state.diagnostics.get(uri).is_some_and(&done) {
                    return true;
                }
                if state.ended.is_some() {
                    return false;
                }
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => return false,
            }
        }
    }

    /// How many publishes the server has sent, for any file.
    pub fn total_publishes(&self) -> u64 {
        self.state().publishes
    }

    /// Waits until the server has published more than `after` times in all (any file), or
    /// `deadline`; whether it did.
    pub async fn wait_any_publish_until(&self, after: u64, deadline: tokio::time::Instant) -> bool {
        let mut changes = self.subscribe();
        loop {
            {
                let state = self.state();
                if state.publishes > after {
                    return true;
                }
                if state.ended.is_some() {
                    return false;
                }
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => return false,
            }
        }
    }

    fn answer(&self, request: &AnyRequest) -> Result<Value, ResponseError> {
        match request.method.as_str() {
            "workspace/configuration" => Ok(self.configuration(&request.params)),
            "window/workDoneProgress/create" => {
                if let Some(token) = request.params.get("token").map(token_key) {
                    self.update(|state| {
                        state.progress.entry(token).or_default();
                    });
                }
                Ok(Value::Null)
            }
            "workspace/workspaceFolders" => {
                Ok(json!([{ "uri": self.root_uri, "name": self.root_name }]))
            }
            "window/showDocument" => Ok(json!({ "success": false })),
            "workspace/applyEdit" => Ok(json!({
                "applied": false,
                "failureReason": "this client applies only the edits its own requests return"
            })),
            // Registrations are accepted (nothing we declared is dynamic, so there is nothing
            // to do); a message request gets no choice; refresh requests need no answer.
            "client/registerCapability"
            | "client/unregisterCapability"
            | "window/showMessageRequest" => Ok(Value::Null),
            method if method.starts_with("workspace/") && method.ends_with("/refresh") => {
                Ok(Value::Null)
            }
            method => Err(ResponseError::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("this client does not handle {method}"),
            )),
        }
    }

    /// One value per requested section, looked up in the server's settings (dotted sections
    /// walk nested objects); null where nothing is configured.
    fn configuration(&self, params: &Value) -> Value {
        let items = params
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let answers: Vec<Value> = items
            .iter()
            .map(|item| {
                let Some(settings) = &self.settings else {
                    return Value::Null;
                };
                match item.get("section").and_then(Value::as_str) {
                    None | Some("") => settings.clone(),
                    Some(section) => section
                        .split('.')
                        .try_fold(settings, |value, key| value.get(key))
                        .cloned()
                        .unwrap_or(Value::Null),
                }
            })
            .collect();
        Value::Array(answers)
    }

    fn take(&self, notification: &AnyNotification) {
        let params = &notification.params;
        match notification.method.as_str() {
            "$/progress" => {
                let Some(token) = params.get("token").map(token_key) else {
                    return;
                };
                let value = params.get("value").cloned().unwrap_or_default();
                let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
                let is_check = self.check.is_check_token(&token);
                match value.get("kind").and_then(Value::as_str) {
                    Some("begin") | Some("report") => self.update(|state| {
                        if is_check && value.get("kind").and_then(Value::as_str) == Some("begin") {
                            state.checks_begun += 1;
                            tracing::debug!(%token, begun = state.checks_begun, "check began");
                        }
                        let entry = state.progress.entry(token).or_default();
                        if let Some(title) = text("title") {
                            entry.title = Some(title);
                        }
                        if let Some(message) = text("message") {
                            entry.message = Some(message);
                        }
                        if let Some(percentage) = value.get("percentage").and_then(Value::as_u64) {
                            entry.percentage = Some(percentage);
                        }
                    }),
                    Some("end") => self.update(|state| {
                        if is_check && state.progress.contains_key(&token) {
                            state.checks_ended += 1;
                            tracing::debug!(%token, "check ended");
                        }
                        state.progress.remove(&token);
                        state.last_progress_end = Some(Instant::now());
                    }),
                    // Partial results and unknown kinds carry no state we keep.
                    _ => {}
                }
            }
            "experimental/serverStatus" => {
                let status = ServerStatus {
                    health: params
                        .get("health")
                        .and_then(Value::as_str)
                        .unwrap_or("ok")
                        .to_owned(),
                    quiescent: params
                        .get("quiescent")
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                    message: params
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                };
                if status.health != "ok"
                    && let Some(message) = &status.message
                {
                    let line = format!("{}: {message}", status.health);
                    self.update(|state| remember(state, line));
                }
                self.update(|state| state.server_status = Some(status));
            }
            "textDocument/publishDiagnostics" => {
                let Some(uri) = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .and_then(|uri| Url::parse(uri).ok())
                else {
                    return;
                };
                // A diagnostic that does not decode is dropped, not the whole publish.
                let diagnostics: Vec<Diagnostic> = params
                    .get("diagnostics")
                    .and_then(Value::as_array)
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(|item| serde_json::from_value(item.clone()).ok())
                            .collect()
                    })
                    .unwrap_or_default();
                let version = params
                    .get("version")
                    .and_then(Value::as_i64)
                    .and_then(|v| i32::try_from(v).ok());
                tracing::debug!(%uri, ?version, count = diagnostics.len(), "diagnostics published");
                tracing::trace!(%uri, diagnostics = ?diagnostics.iter().map(|d| (d.range.start.line, d.severity, &d.message)).collect::<Vec<_>>(), "published");
                let reorders = self.check.publishes_reorder();
                self.update(|state| {
                    let check = state.checks_begun;
                    let entry = state.diagnostics.entry(uri).or_default();
                    if reorders
                        && entry.count > 0
                        && entry.check == check
                        && entry.version == version
                        && strict_subset(&diagnostics, &entry.diagnostics)
                    {
                        tracing::debug!(
                            count = diagnostics.len(),
                            kept = entry.diagnostics.len(),
                            "an earlier state of the check arrived late; ignored"
                        );
                        return;
                    }
                    entry.count += 1;
                    entry.version = version;
                    entry.diagnostics = diagnostics;
                    entry.check = check;
                    state.publishes += 1;
                });
            }
            "window/showMessage" | "window/logMessage" => {
                let kind = params.get("type").and_then(Value::as_u64).unwrap_or(4);
                let message = params
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                tracing::debug!(method = %notification.method, kind, "{message}");
                if self
                    .ready_log
                    .as_deref()
                    .is_some_and(|needle| message.contains(needle))
                {
                    self.update(|state| state.ready_logged = true);
                }
                // Errors (1) and warnings (2) are kept for status and error messages.
                if kind <= 2 && !message.trim().is_empty() {
                    let label = if kind == 1 { "error" } else { "warning" };
                    let first: String = message
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .chars()
                        .take(300)
                        .collect();
                    self.update(|state| remember(state, format!("{label}: {first}")));
                }
            }
            // telemetry/event, $/logTrace, $/setTrace and anything a server invents: nothing
            // to keep, and never a reason to stop the loop.
            other => tracing::trace!(method = other, "notification ignored"),
        }
    }
}

fn remember(state: &mut ClientState, line: String) {
    if state.messages.len() == MESSAGES_KEPT {
        state.messages.pop_front();
    }
    state.messages.push_back(line);
}

fn token_key(token: &Value) -> String {
    match token {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Ends the main loop.
struct Stop;

/// What the router holds: the shared state, and a socket of its own.
pub(crate) struct RouterState {
    shared: Arc<Shared>,
    /// async-lsp's loop treats "every socket dropped" as a bug and panics; holding one here
    /// keeps the loop alive until the server's output ends (its process is killed) or we
    /// send `Stop`, whichever comes first.
    _socket: ServerSocket,
}

/// Builds the client main loop; the router's state is the shared state.
pub(crate) fn main_loop(shared: Arc<Shared>) -> (MainLoop<Router<RouterState>>, ServerSocket) {
    MainLoop::new_client(move |socket| {
        let mut router = Router::new(RouterState {
            shared,
            _socket: socket,
        });
        router
            .unhandled_request(|state, request| {
                let answer = state.shared.answer(&request);
                async move { answer }
            })
            .unhandled_notification(|state, notification| {
                state.shared.take(&notification);
                ControlFlow::Continue(())
            })
            .event(|_, _: Stop| ControlFlow::Break(Ok(())));
        router
    })
}

/// Why a request did not produce a result.
#[derive(Debug)]
pub(crate) enum RequestError {
    /// No answer in time; a `$/cancelRequest` was sent.
    Timeout,
    /// The connection is gone.
    Stopped,
    /// The server answered with an error.
    Response(ResponseError),
    /// The answer did not decode.
    Decode(serde_json::Error),
}

/// The sending half of a connection: requests with ids we know, so they can be cancelled.
pub(crate) struct Connection {
    socket: ServerSocket,
    next_id: Mutex<i32>,
    /// Nanoseconds spent waiting for this server's answers, summed over the run (the
    /// benchmark subtracts it from whole calls to measure our own overhead).
    server_nanos: Arc<AtomicU64>,
}

impl Connection {
    pub(crate) fn new(socket: ServerSocket, server_nanos: Arc<AtomicU64>) -> Self {
        Connection {
            socket,
            next_id: Mutex::new(0),
            server_nanos,
        }
    }

    /// Sends a request and waits up to `timeout` for its answer.
    pub(crate) async fn request<R: Request>(
        &self,
        params: R::Params,
        timeout: Duration,
    ) -> Result<R::Result, RequestError> {
        let started = Instant::now();
        let mut answer = Box::pin(self.socket.request::<R>(params));
        // async-lsp numbers outgoing requests 0, 1, 2, … in the order they reach its channel,
        // and the first poll is what puts a request there. Polling once under our own counter
        // therefore tells us the id, which `$/cancelRequest` needs.
        let id = {
            let mut next = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
            let mut context = Context::from_waker(std::task::Waker::noop());
            if let Poll::Ready(result) = answer.as_mut().poll(&mut context) {
                return result.map_err(classify);
            }
            let id = *next;
            *next += 1;
            id
        };
        let mut cancel = CancelOnDrop {
            socket: &self.socket,
            id,
            armed: true,
        };
        let outcome = tokio::time::timeout(timeout, answer).await;
        let elapsed = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.server_nanos.fetch_add(elapsed, Ordering::Relaxed);
        match outcome {
            Ok(result) => {
                cancel.armed = false;
                result.map_err(classify)
            }
            Err(_) => Err(RequestError::Timeout),
        }
    }

    /// Sends a notification; false when the connection is gone.
    pub(crate) fn notify<N: Notification>(&self, params: N::Params) -> bool {
        self.socket.notify::<N>(params).is_ok()
    }

    /// Ends the main loop after the messages already queued.
    pub(crate) fn stop(&self) {
        let _ = self.socket.emit(Stop);
    }
}

fn classify(error: async_lsp::Error) -> RequestError {
    match error {
        async_lsp::Error::Response(response) => RequestError::Response(response),
        async_lsp::Error::Deserialize(error) => RequestError::Decode(error),
        _ => RequestError::Stopped,
    }
}

/// Cancels a request the server is still working on when its caller stops waiting.
struct CancelOnDrop<'a> {
    socket: &'a ServerSocket,
    id: i32,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.socket.notify::<Cancel>(CancelParams {
                id: NumberOrString::Number(self.id),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(settings: Option<Value>) -> Arc<Shared> {
        Shared::new(
            Url::parse("file:///project").unwrap(),
            "project".into(),
            settings,
            Check::OnSave {
                token_prefix: "rust-analyzer/flycheck".into(),
            },
            None,
        )
    }

    fn request(method: &str, params: Value) -> AnyRequest {
        serde_json::from_value(json!({"id": 1, "method": method, "params": params})).unwrap()
    }

    fn notification(method: &str, params: Value) -> AnyNotification {
        serde_json::from_value(json!({"method": method, "params": params})).unwrap()
    }

    #[test]
    fn lsp_5_the_ready_line_is_noticed_only_when_it_comes() {
        let shared = Shared::new(
            Url::parse("file:///project").unwrap(),
            "project".into(),
            None,
            Check::None,
            Some("source file".to_owned()),
        );
        shared.take(&notification(
            "window/logMessage",
            json!({"type": 3, "message": "Loading pyproject.toml file at /project/pyproject.toml"}),
        ));
        assert!(!shared.state().ready_logged);
        shared.take(&notification(
            "window/logMessage",
            json!({"type": 3, "message": "Found 8 source files"}),
        ));
        assert!(shared.state().ready_logged);
    }

    /// A publish of `file:///project/tests/a.rs` with `lines` errors (one per line).
    fn publish(lines: std::ops::Range<u32>) -> AnyNotification {
        let diagnostics: Vec<Value> = lines
            .map(|line| {
                json!({
                    "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 1}},
                    "severity": 1,
                    "message": "this function takes 2 arguments but 1 argument was supplied"
                })
            })
            .collect();
        notification(
            "textDocument/publishDiagnostics",
            json!({"uri": "file:///project/tests/a.rs", "diagnostics": diagnostics}),
        )
    }

    fn kept(shared: &Shared) -> usize {
        let uri = Url::parse("file:///project/tests/a.rs").unwrap();
        shared.published(&uri).unwrap().diagnostics.len()
    }

    #[test]
    fn lsp_6_a_late_earlier_state_of_a_check_does_not_replace_the_later_one() {
        let shared = shared(None);
        let begin = json!({"token": "rust-analyzer/flycheck/0", "value": {"kind": "begin", "title": "cargo check"}});
        shared.take(&notification("$/progress", begin.clone()));
        // rust-analyzer's worker pool delivered the 6-finding state before the 3-finding one.
        shared.take(&publish(0..6));
        shared.take(&publish(0..3));
        assert_eq!(kept(&shared), 6);
        // A later state of the same check still replaces it.
        shared.take(&publish(0..8));
        assert_eq!(kept(&shared), 8);
        // The next check starts from what it finds: fewer findings are the truth then.
        let end = json!({"token": "rust-analyzer/flycheck/0", "value": {"kind": "end"}});
        shared.take(&notification("$/progress", end));
        shared.take(&notification("$/progress", begin));
        shared.take(&publish(0..2));
        assert_eq!(kept(&shared), 2);
        // A publish that is not a subset (a finding it did not have) is never taken for late.
        shared.take(&publish(5..6));
        assert_eq!(kept(&shared), 1);
    }

    #[test]
    fn lsp_2_configuration_answers_each_section_from_the_settings() {
        let shared = shared(Some(json!({
            "rust-analyzer": {"cargo": {"features": "all"}},
            "python": {"analysis": {"typeCheckingMode": "strict"}}
        })));
        let answer = shared
            .answer(&request(
                "workspace/configuration",
                json!({"items": [
                    {"section": "rust-analyzer"},
                    {"section": "python.analysis"},
                    {"section": "missing"},
                    {}
                ]}),
            ))
            .unwrap();
        assert_eq!(answer[0], json!({"cargo": {"features": "all"}}));
        assert_eq!(answer[1], json!({"typeCheckingMode": "strict"}));
        assert_eq!(answer[2], Value::Null);
        assert!(answer[3].get("python").is_some());
    }

    #[test]
    fn server_requests_get_answers_and_unknown_ones_an_error_not_a_stop() {
        let shared = shared(None);
        for method in [
            "client/registerCapability",
            "client/unregisterCapability",
            "window/showMessageRequest",
            "workspace/semanticTokens/refresh",
            "workspace/diagnostic/refresh",
        ] {
            assert_eq!(
                shared.answer(&request(method, json!({}))).unwrap(),
                Value::Null
            );
        }
        assert_eq!(
            shared
                .answer(&request("workspace/workspaceFolders", Value::Null))
                .unwrap(),
            json!([{"uri": "file:///project", "name": "project"}])
        );
        assert_eq!(
            shared
                .answer(&request("workspace/applyEdit", json!({})))
                .unwrap()["applied"],
            json!(false)
        );
        let error = shared
            .answer(&request("custom/somethingNew", json!({})))
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
    }

    #[test]
    fn progress_is_tracked_from_create_to_end() {
        let shared = shared(None);
        shared
            .answer(&request(
                "window/workDoneProgress/create",
                json!({"token": "rustAnalyzer/Indexing"}),
            ))
            .unwrap();
        assert_eq!(shared.state().progress.len(), 1);
        shared.take(&notification(
            "$/progress",
            json!({"token": "rustAnalyzer/Indexing", "value": {"kind": "begin", "title": "Indexing", "percentage": 0}}),
        ));
        shared.take(&notification(
            "$/progress",
            json!({"token": "rustAnalyzer/Indexing", "value": {"kind": "report", "message": "3/10", "percentage": 30}}),
        ));
        assert_eq!(
            shared.state().progress["rustAnalyzer/Indexing"].describe(),
            "Indexing 3/10 (30%)"
        );
        shared.take(&notification(
            "$/progress",
            json!({"token": "rustAnalyzer/Indexing", "value": {"kind": "end"}}),
        ));
        assert!(shared.state().progress.is_empty());
        // A number token is fine too, and odd values are ignored rather than fatal.
        shared.take(&notification("$/progress", json!({"token": 7, "value": 3})));
    }

    #[test]
    fn lsp_6_publishes_are_counted_per_file_and_bad_items_dropped() {
        let shared = shared(None);
        let uri = Url::parse("file:///project/a.rs").unwrap();
        assert_eq!(shared.publish_count(&uri), 0);
        let diagnostic = json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "message": "bad"});
        shared.take(&notification(
            "textDocument/publishDiagnostics",
            json!({"uri": uri, "diagnostics": [diagnostic, {"nonsense": true}]}),
        ));
        shared.take(&notification(
            "textDocument/publishDiagnostics",
            json!({"uri": uri, "diagnostics": [diagnostic]}),
        ));
        let published = shared.published(&uri).unwrap();
        assert_eq!(published.count, 2);
        assert_eq!(published.diagnostics.len(), 1);
    }

    #[test]
    fn errors_the_server_shows_are_kept_for_status() {
        let shared = shared(None);
        shared.take(&notification(
            "window/showMessage",
            json!({"type": 1, "message": "failed to load workspace\ndetails"}),
        ));
        shared.take(&notification(
            "window/logMessage",
            json!({"type": 4, "message": "chatter"}),
        ));
        shared.take(&notification(
            "experimental/serverStatus",
            json!({"health": "warning", "quiescent": true, "message": "no sysroot"}),
        ));
        let state = shared.state();
        assert_eq!(
            state.messages.iter().cloned().collect::<Vec<_>>(),
            ["error: failed to load workspace", "warning: no sysroot"]
        );
        assert!(state.server_status.as_ref().unwrap().quiescent);
    }
}
