//! One running server for one root: started and initialised, its open documents kept in sync
//! with the disk, readiness (indexing) tracked, requests sent with timeouts and retries, and
//! a graceful shutdown that ends in a kill.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use async_lsp::ErrorCode;
use async_lsp::lsp_types::notification::{Exit, Initialized};
use async_lsp::lsp_types::request::{Initialize, Request, Shutdown};
use async_lsp::lsp_types::{InitializedParams, ServerCapabilities, Url};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::client::{Connection, RequestError, Shared};
use crate::encoding::Encoding;
use crate::error::AnswerError;
use crate::servers::{Readiness, ServerSpec};
use crate::{Error, Result};
use tools_process::{Input, Output, ProcessGroup, Sandbox, StderrTail};

mod documents;
mod initialize;
mod pull;

use initialize::initialize_params;

/// How long a server that reports progress gets, after `initialized`, to start reporting it
/// before an idle server counts as ready.
const PROGRESS_GRACE: Duration = Duration::from_millis(300);

/// How long a server gets to send its first status (rust-analyzer) or the line that says it
/// is ready (pyright) before progress alone decides.
const STATUS_GRACE: Duration = Duration::from_secs(10);

/// Retries of a request the server cancelled because the content changed under it.
const RETRIES: usize = 4;

/// The source files of a root as last seen on disk, for servers that do not watch files.
#[derive(Default)]
struct DiskSnapshot {
    files: HashMap<PathBuf, (SystemTime, u64)>,
    scanned_at: Option<Instant>,
}

/// What starting a session needs.
pub struct StartOptions {
    pub spec: Arc<ServerSpec>,
    pub root: PathBuf,
    pub argv: Vec<String>,
    pub tail: Arc<StderrTail>,
    pub request_timeout: Duration,
    pub start_timeout: Duration,
    pub index_timeout: Duration,
    pub server_nanos: Arc<AtomicU64>,
    pub on_busy: OnBusy,
    /// The run's sandbox (EVAL-9): the server starts through it.
    pub sandbox: Option<Sandbox>,
}

/// What a call that waits for a busy server waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    /// The server's name.
    pub server: String,
    /// The project root it serves.
    pub root: PathBuf,
    /// What it says it is doing (`indexing`, `loading the workspace`, …).
    pub what: String,
    /// How long the call has waited so far; when it gave up waiting, how long it may wait.
    pub waited: Duration,
}

/// Told what a call waits for while a server is busy: when that changes, and every two
/// seconds. tools-lsp turns it into the call's progress; the callback runs in the waiting
/// call's own task.
pub type OnBusy = Arc<dyn Fn(&Busy) + Send + Sync>;

/// How a server's process ended, as far as known: why, and the last lines it wrote to stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ended {
    /// Why it ended, once the watcher knows.
    pub reason: Option<String>,
    /// The last lines it wrote to stderr.
    pub stderr_tail: Vec<String>,
}

/// `: the process ended (signal: 9); its last stderr lines: …`, or nothing when nothing is
/// known.
impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(reason) = &self.reason {
            write!(f, ": {reason}")?;
        }
        if !self.stderr_tail.is_empty() {
            write!(
                f,
                "; its last stderr lines: {}",
                self.stderr_tail.join(" | ")
            )?;
        }
        Ok(())
    }
}

/// A document the server has open, as we last sent it.
struct OpenDocument {
    version: i32,
    text: Arc<str>,
    stamp: Option<(SystemTime, u64)>,
    /// The texts of the last few versions before this one, newest last.
    earlier: Vec<(i32, Arc<str>)>,
}

/// The text of a synced file.
pub struct Synced {
    pub uri: Url,
    pub text: Arc<str>,
    /// Whether this sync sent the server anything (it had an older text, or none).
    pub changed: bool,
    /// The document version the server has for this text.
    pub version: i32,
}

/// Whether a session can take requests now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activity {
    Ready,
    /// Still loading or indexing; what it says it is doing.
    Busy(String),
}

/// A running, initialised server.
pub struct Session {
    pub spec: Arc<ServerSpec>,
    pub root: PathBuf,
    pub encoding: Encoding,
    pub capabilities: ServerCapabilities,
    pub shared: Arc<Shared>,
    pub tail: Arc<StderrTail>,
    pub started: Instant,
    connection: Connection,
    documents: tokio::sync::Mutex<HashMap<PathBuf, OpenDocument>>,
    /// For servers that do not watch files: the disk as last reported to them.
    disk: Option<tokio::sync::Mutex<DiskSnapshot>>,
    group: ProcessGroup,
    initialized_at: Instant,
    idle_seen: AtomicBool,
    stopping: AtomicBool,
    request_timeout: Duration,
    index_timeout: Duration,
    on_busy: OnBusy,
}

impl Session {
    /// Spawns the server, runs its main loop, and initialises it. `on_exit` is called once
    /// when the process or its connection ends, with the reason.
    pub async fn start(
        options: StartOptions,
        on_exit: Box<dyn FnOnce(String) + Send>,
    ) -> Result<Arc<Session>> {
        let StartOptions {
            spec,
            root,
            argv,
            tail,
            request_timeout,
            start_timeout,
            index_timeout,
            server_nanos,
            on_busy,
            sandbox,
        } = options;
        // A contained or sandboxed server may live in a PID namespace of its own, where our
        // pid names nothing (or another process): a server watching it (vscode-languageserver
        // polls it every few seconds) would exit at once. There it ends with its group or its
        // namespace instead.
        let process_id =
            (sandbox.is_none() && !tools_process::containment().is_active()).then(std::process::id);
        let started = Instant::now();
        let spawn_error = |message: String, source: Option<tools_process::Error>| Error::Spawn {
            server: spec.name.clone(),
            command: argv.join(" "),
            root: root.clone(),
            message,
            source: source.map(Arc::new),
        };
        // Through the one process path: its own group (servers start helpers of their own —
        // tsserver, proc-macro servers, node), killed with the session or the run.
        let child = tools_process::Command::from_argv(&argv, &root)
            .map(|command| {
                command
                    .envs(&spec.env)
                    .stdin(Input::Piped)
                    .stdout(Output::Piped)
                    .stderr(Output::Tail(Arc::clone(&tail)))
                    .sandbox(sandbox)
            })
            .and_then(|command| command.spawn())
            .map_err(|error| spawn_error(error.to_string(), Some(error)))?;
        let parts = child.into_parts();
        let (Some(stdin), Some(stdout)) = (parts.stdin, parts.stdout) else {
            return Err(spawn_error("its pipes were not set up".to_owned(), None));
        };
        let root_uri = Url::from_directory_path(&root).map_err(|()| Error::Spawn {
            server: spec.name.clone(),
            command: argv.join(" "),
            root: root.clone(),
            message: "the root is not an absolute path".into(),
            source: None,
        })?;
        let root_name = root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into());
        let shared = Shared::new(
            root_uri.clone(),
            root_name.clone(),
            spec.settings.clone(),
            spec.check.clone(),
            match &spec.readiness {
                Readiness::Logged(needle) => Some(needle.clone()),
                _ => None,
            },
        );
        let (main_loop, socket) = crate::client::main_loop(Arc::clone(&shared));
        let (loop_done_tx, loop_done) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let result = main_loop
                .run_buffered(stdout.compat(), stdin.compat_write())
                .await;
            let _ = loop_done_tx.send(result);
        });
        let mut child = parts.leader;
        let watcher_shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let exited = |status: tools_process::Result<std::process::ExitStatus>| match status {
                Ok(status) => format!("the process ended ({status})"),
                Err(error) => format!("waiting for the process failed: {error}"),
            };
            let reason = tokio::select! {
                status = child.wait() => exited(status),
                ended = loop_done => {
                    // The pipe usually closes a moment before the exit is reaped; the exit
                    // status says more than "EOF", so give it a moment to arrive.
                    match tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
                        Ok(status) => exited(status),
                        Err(_) => match ended {
                            Ok(Ok(())) => "the connection was closed".to_owned(),
                            Ok(Err(error)) => format!("the connection broke: {error}"),
                            Err(_) => "the connection task ended".to_owned(),
                        },
                    }
                }
            };
            child.start_kill();
            watcher_shared.end(reason.clone());
            on_exit(reason);
        });
        let session = Session {
            encoding: Encoding::Utf16,
            capabilities: ServerCapabilities::default(),
            connection: Connection::new(socket, server_nanos),
            documents: tokio::sync::Mutex::new(HashMap::new()),
            disk: (!spec.watches_files).then(Default::default),
            group: parts.group,
            initialized_at: Instant::now(),
            idle_seen: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            started,
            spec,
            root,
            shared,
            tail,
            request_timeout,
            index_timeout,
            on_busy,
        };
        let params = initialize_params(&session, root_uri, root_name, process_id);
        let result = match session
            .connection
            .request::<Initialize>(params, start_timeout)
            .await
        {
            Ok(result) => result,
            Err(error) => {
                if matches!(error, RequestError::Stopped) {
                    session.wait_ended().await;
                }
                session.group.kill();
                return Err(session.error::<Initialize>(error, start_timeout));
            }
        };
        let mut session = session;
        session.encoding = Encoding::negotiated(result.capabilities.position_encoding.as_ref());
        session.capabilities = result.capabilities;
        session
            .connection
            .notify::<Initialized>(InitializedParams {});
        session.initialized_at = Instant::now();
        // The baseline that later scans compare against.
        session.rescan_disk().await;
        tracing::info!(
            server = %session.spec.name,
            root = %session.root.display(),
            pid = session.group.pgid(),
            encoding = ?session.encoding,
            "language server initialised"
        );
        Ok(Arc::new(session))
    }

    /// The server's process id on the machine (not its group's keeper).
    pub fn pid(&self) -> u32 {
        self.group.program_pid()
    }

    /// The CPU time the server's processes have used so far.
    pub fn cpu_time(&self) -> std::time::Duration {
        self.group.cpu_time()
    }

    /// Whether the server can take requests now, or what it is busy with.
    pub fn activity(&self) -> Activity {
        let state = self.shared.state();
        let busy = || {
            let descriptions: Vec<String> = state
                .progress
                .values()
                .filter(|p| p.title.is_some() || p.message.is_some())
                .map(|p| p.describe())
                .collect();
            match descriptions.is_empty() {
                true => None,
                false => Some(descriptions.join("; ")),
            }
        };
        let since_init = self.initialized_at.elapsed();
        match &self.spec.readiness {
            Readiness::Immediate => Activity::Ready,
            Readiness::ServerStatus => match &state.server_status {
                Some(status) if status.quiescent => Activity::Ready,
                Some(status) => Activity::Busy(
                    busy()
                        .or_else(|| status.message.clone())
                        .unwrap_or_else(|| "loading the workspace".into()),
                ),
                // A rust-analyzer too old to report status: fall back on progress.
                None if since_init >= STATUS_GRACE && state.progress.is_empty() => Activity::Ready,
                None => Activity::Busy(busy().unwrap_or_else(|| "starting".into())),
            },
            Readiness::Logged(_) => {
                if state.ready_logged || (since_init >= STATUS_GRACE && state.progress.is_empty()) {
                    return Activity::Ready;
                }
                Activity::Busy(busy().unwrap_or_else(|| "finding the project's files".into()))
            }
            Readiness::FirstIdle => {
                if self.idle_seen.load(Ordering::Relaxed) {
                    return Activity::Ready;
                }
                if state.progress.is_empty() && since_init >= PROGRESS_GRACE {
                    self.idle_seen.store(true, Ordering::Relaxed);
                    return Activity::Ready;
                }
                Activity::Busy(busy().unwrap_or_else(|| "starting".into()))
            }
        }
    }

    /// Waits until the server is ready, at most the index timeout. Returns what it was still
    /// busy with then (the request goes ahead anyway, and its answer may be incomplete).
    pub async fn wait_ready(&self) -> Option<Busy> {
        let started = tokio::time::Instant::now();
        let deadline = started + self.index_timeout;
        let mut changes = self.shared.subscribe();
        let mut reported: Option<(String, u64)> = None;
        loop {
            let activity = self.activity();
            let busy = match activity {
                Activity::Ready => return None,
                Activity::Busy(what) => what,
            };
            // The call reports what it waits for, when that changes and every two seconds.
            let waited = started.elapsed().as_secs();
            if reported
                .as_ref()
                .is_none_or(|(what, at)| *what != busy || waited >= at + 2)
            {
                (self.on_busy)(&self.busy(busy.clone(), Duration::from_secs(waited)));
                reported = Some((busy.clone(), waited));
            }
            if self.shared.state().ended.is_some() {
                return None;
            }
            // Progress grace periods end without a message, so wake up now and then too.
            let tick = tokio::time::Instant::now() + Duration::from_millis(50);
            if tokio::time::Instant::now() >= deadline {
                return Some(self.busy(busy, self.index_timeout));
            }
            let _ = tokio::time::timeout_at(tick.min(deadline), changes.changed()).await;
        }
    }

    fn busy(&self, what: String, waited: Duration) -> Busy {
        Busy {
            server: self.spec.name.clone(),
            root: self.root.clone(),
            what,
            waited,
        }
    }

    /// Sends a request, retrying when the server says the content changed under it.
    pub async fn request<R: Request>(&self, params: R::Params) -> Result<R::Result>
    where
        R::Params: Clone,
    {
        self.request_within::<R>(params, self.request_timeout).await
    }

    /// [`Session::request`] with its own timeout.
    pub async fn request_within<R: Request>(
        &self,
        params: R::Params,
        timeout: Duration,
    ) -> Result<R::Result>
    where
        R::Params: Clone,
    {
        // One deadline for every attempt: a server that keeps answering "content modified"
        // (busy with a huge file) must not stretch a call past its timeout.
        let deadline = tokio::time::Instant::now() + timeout;
        let mut attempt = 0;
        loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            if remaining.is_zero() {
                return Err(self.error::<R>(RequestError::Timeout, timeout));
            }
            match self
                .connection
                .request::<R>(params.clone(), remaining)
                .await
            {
                Ok(result) => return Ok(result),
                Err(RequestError::Response(response))
                    if attempt < RETRIES
                        && (response.code == ErrorCode::CONTENT_MODIFIED
                            || response.code == ErrorCode::SERVER_CANCELLED
                            || response.code == ErrorCode::REQUEST_CANCELLED) =>
                {
                    attempt += 1;
                    let pause = Duration::from_millis(100 * attempt as u64);
                    let _ = tokio::time::timeout_at(deadline, async {
                        tokio::time::sleep(pause).await;
                        self.wait_ready().await;
                    })
                    .await;
                }
                Err(RequestError::Stopped) => {
                    self.wait_ended().await;
                    return Err(self.error::<R>(RequestError::Stopped, timeout));
                }
                Err(error) => return Err(self.error::<R>(error, timeout)),
            }
        }
    }

    /// Waits a moment for the watcher to learn why the connection ended (the pipe closes a
    /// little before the exit status can be read), so the error can say why.
    async fn wait_ended(&self) {
        let mut changes = self.shared.subscribe();
        let wait = async {
            while self.shared.state().ended.is_none() {
                if changes.changed().await.is_err() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_millis(1500), wait).await;
    }

    fn error<R: Request>(&self, error: RequestError, timeout: Duration) -> Error {
        let server = self.spec.name.clone();
        let method = R::METHOD.to_owned();
        match error {
            RequestError::Timeout => Error::Timeout {
                server,
                root: self.root.clone(),
                method,
                seconds: timeout.as_secs(),
            },
            RequestError::Stopped => Error::Stopped {
                server,
                root: self.root.clone(),
                method,
                ended: self.ended(),
            },
            RequestError::Response(response) if response.code == ErrorCode::METHOD_NOT_FOUND => {
                Error::Response {
                    server,
                    method,
                    message: "this server does not support it".into(),
                    source: AnswerError::Server(Arc::new(response)),
                }
            }
            RequestError::Response(response) => Error::Response {
                server,
                method,
                message: response.message.clone(),
                source: AnswerError::Server(Arc::new(response)),
            },
            RequestError::Decode(error) => Error::Response {
                server,
                method,
                message: format!("its answer did not decode: {error}"),
                source: AnswerError::Decode(Arc::new(error)),
            },
        }
    }

    /// How its process ended, as far as known now: why, and its last five stderr lines.
    pub fn ended(&self) -> Ended {
        Ended {
            reason: self.shared.state().ended.clone(),
            stderr_tail: self.tail.last(5),
        }
    }

    /// Stops the server politely (`shutdown`, `exit`), then kills its process group.
    pub async fn shutdown(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        let polite = async {
            if self
                .connection
                .request::<Shutdown>((), Duration::from_secs(2))
                .await
                .is_ok()
            {
                self.connection.notify::<Exit>(());
            }
            self.connection.stop();
            let mut changes = self.shared.subscribe();
            while self.shared.state().ended.is_none() {
                if changes.changed().await.is_err() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(3), polite).await;
        self.group.kill();
    }

    /// Whether its process still runs: false as soon as it exited, even before the watcher
    /// reported the exit (a call a few milliseconds after a crash restarts it).
    pub fn process_runs(&self) -> bool {
        self.shared.state().ended.is_none() && self.group.leader_runs()
    }

    /// Whether we asked it to stop (so its exit is no crash).
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// Kills the process group at once.
    pub fn kill(&self) {
        self.group.kill();
    }
}
