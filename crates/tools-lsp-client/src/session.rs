//! One running server for one root: started and initialised, its open documents kept in sync
//! with the disk, readiness (indexing) tracked, requests sent with timeouts and retries, and
//! a graceful shutdown that ends in a kill.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use async_lsp::ErrorCode;
use async_lsp::lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    DidSaveTextDocument, Exit, Initialized,
};
use async_lsp::lsp_types::request::{
    DocumentDiagnosticRequest, ExecuteCommand, Initialize, Request, Shutdown,
};
use async_lsp::lsp_types::{
    ClientCapabilities, ClientInfo, Diagnostic, DiagnosticSeverity, DidChangeTextDocumentParams,
    DidChangeWatchedFilesParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    DidSaveTextDocumentParams, DocumentDiagnosticParams, DocumentDiagnosticReport,
    DocumentDiagnosticReportResult, ExecuteCommandParams, FileChangeType, FileEvent,
    InitializeParams, InitializedParams, NumberOrString, Position, Range, ServerCapabilities,
    TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem, Url,
    VersionedTextDocumentIdentifier, WorkspaceFolder,
};
use serde_json::json;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::client::{Connection, RequestError, Shared};
use crate::encoding::Encoding;
use crate::servers::{Pull, Readiness, ServerSpec};
use crate::{Error, Result};
use tools_process::{Input, Output, ProcessGroup, StderrTail};

/// How long a server that reports progress gets, after `initialized`, to start reporting it
/// before an idle server counts as ready.
const PROGRESS_GRACE: Duration = Duration::from_millis(300);

/// How long a server gets to send its first status (rust-analyzer) or the line that says it
/// is ready (pyright) before progress alone decides.
const STATUS_GRACE: Duration = Duration::from_secs(10);

/// Retries of a request the server cancelled because the content changed under it.
const RETRIES: usize = 4;

/// Open documents whose disk stamp is older than this are trusted without a read; newer ones
/// are compared byte for byte, since a file system's clock may not tell two quick writes apart.
const TRUST_STAMP_AFTER: Duration = Duration::from_secs(2);

/// A disk scan visits at most this many entries; a root with more source files than the
/// small-scan limit is rescanned at most every [`LARGE_RESCAN`].
const SCAN_ENTRIES: usize = 50_000;
const SMALL_SCAN_FILES: usize = 5_000;
const LARGE_RESCAN: Duration = Duration::from_secs(2);

/// Folders a disk scan never enters.
const UNSCANNED_DIRS: &[&str] = &[
    "node_modules",
    "target",
    "venv",
    "__pycache__",
    "dist",
    "build",
];

/// How many earlier versions of an open document's text are kept (to know what text a
/// server's publish for an older version was about).
const EARLIER_VERSIONS: usize = 8;

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
    pub root_shown: String,
    pub argv: Vec<String>,
    pub tail: Arc<StderrTail>,
    pub request_timeout: Duration,
    pub start_timeout: Duration,
    pub index_timeout: Duration,
    pub server_nanos: Arc<AtomicU64>,
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
    pub root_shown: String,
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
            root_shown,
            argv,
            tail,
            request_timeout,
            start_timeout,
            index_timeout,
            server_nanos,
        } = options;
        let started = Instant::now();
        let spawn_error = |message: String| Error::Spawn {
            server: spec.name.clone(),
            command: argv.join(" "),
            root: root_shown.clone(),
            message,
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
            })
            .and_then(|command| command.spawn())
            .map_err(|error| spawn_error(error.to_string()))?;
        let parts = child.into_parts();
        let (Some(stdin), Some(stdout)) = (parts.stdin, parts.stdout) else {
            return Err(spawn_error("its pipes were not set up".to_owned()));
        };
        let root_uri = Url::from_directory_path(&root).map_err(|()| Error::Spawn {
            server: spec.name.clone(),
            command: argv.join(" "),
            root: root_shown.clone(),
            message: "the root is not an absolute path".into(),
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
            root_shown,
            shared,
            tail,
            request_timeout,
            index_timeout,
        };
        let params = initialize_params(&session, root_uri, root_name);
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
            root = %session.root_shown,
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

    /// Waits until the server is ready, at most the index timeout. Returns a note for the
    /// answer when it was still busy then (the request goes ahead anyway).
    pub async fn wait_ready(&self) -> Option<String> {
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
                tools_core::report_progress(format!(
                    "waiting for {} in {}: {busy} ({waited}s)",
                    self.spec.name, self.root_shown
                ));
                reported = Some((busy.clone(), waited));
            }
            if self.shared.state().ended.is_some() {
                return None;
            }
            // Progress grace periods end without a message, so wake up now and then too.
            let tick = tokio::time::Instant::now() + Duration::from_millis(50);
            if tokio::time::Instant::now() >= deadline {
                return Some(format!(
                    "{} was still busy after {}s ({busy}); this answer may be incomplete — ask \
                     again in a while",
                    self.spec.name,
                    self.index_timeout.as_secs()
                ));
            }
            let _ = tokio::time::timeout_at(tick.min(deadline), changes.changed()).await;
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
                root: self.root_shown.clone(),
                method,
                seconds: timeout.as_secs(),
            },
            RequestError::Stopped => Error::Stopped {
                server,
                root: self.root_shown.clone(),
                method,
                details: self.exit_details(),
            },
            RequestError::Response(response) if response.code == ErrorCode::METHOD_NOT_FOUND => {
                Error::Response {
                    server,
                    method,
                    message: "this server does not support it".into(),
                }
            }
            RequestError::Response(response) => Error::Response {
                server,
                method,
                message: response.message,
            },
            RequestError::Decode(message) => Error::Response {
                server,
                method,
                message: format!("its answer did not decode: {message}"),
            },
        }
    }

    /// `: the process ended (signal: 9); its last stderr lines: …` or nothing.
    pub fn exit_details(&self) -> String {
        let mut details = String::new();
        if let Some(reason) = &self.shared.state().ended {
            details.push_str(&format!(": {reason}"));
        }
        let tail = self.tail.last(5);
        if !tail.is_empty() {
            details.push_str(&format!("; its last stderr lines: {}", tail.join(" | ")));
        }
        details
    }

    /// The text of every document the server has open, as we last sent it: what its answers
    /// (a rename's edit) are computed against.
    pub async fn open_texts(&self) -> HashMap<PathBuf, Arc<str>> {
        let documents = self.documents.lock().await;
        documents
            .iter()
            .map(|(path, open)| (path.clone(), Arc::clone(&open.text)))
            .collect()
    }

    /// Makes the server's view of `path` equal to the disk: opens it, or sends the new text
    /// when it changed since we last sent it.
    pub async fn sync(&self, path: &Path) -> std::result::Result<Synced, String> {
        let mut documents = self.documents.lock().await;
        self.sync_locked(&mut documents, path)
    }

    /// Sends the server `text` for `path` in place of what the disk holds (the text a file
    /// had before a write, for the LSP-7 baseline). The next [`Session::sync`] sends the disk
    /// again.
    pub async fn sync_text(&self, path: &Path, text: &str) -> std::result::Result<Synced, String> {
        let mut documents = self.documents.lock().await;
        self.send_text(&mut documents, path, text.into(), None)
    }

    fn sync_locked(
        &self,
        documents: &mut HashMap<PathBuf, OpenDocument>,
        path: &Path,
    ) -> std::result::Result<Synced, String> {
        let uri = Url::from_file_path(path)
            .map_err(|()| format!("{} is not an absolute path", path.display()))?;
        let stamp = stamp(path);
        if let Some(open) = documents.get(path)
            && trusted(open.stamp, stamp)
        {
            return Ok(Synced {
                uri,
                text: Arc::clone(&open.text),
                changed: false,
                version: open.version,
            });
        }
        let text: Arc<str> = match tools_core::read_regular(path) {
            Ok(bytes) => String::from_utf8(bytes)
                .map_err(|_| format!("{} is not UTF-8 text", path.display()))?
                .into(),
            Err(error) => {
                if documents.remove(path).is_some() {
                    self.connection
                        .notify::<DidCloseTextDocument>(DidCloseTextDocumentParams {
                            text_document: TextDocumentIdentifier { uri: uri.clone() },
                        });
                }
                return Err(format!("cannot read {}: {error}", path.display()));
            }
        };
        self.send_text(documents, path, text, stamp)
    }

    /// Sends `text` as the content of `path` unless the server has it already.
    fn send_text(
        &self,
        documents: &mut HashMap<PathBuf, OpenDocument>,
        path: &Path,
        text: Arc<str>,
        stamp: Option<(SystemTime, u64)>,
    ) -> std::result::Result<Synced, String> {
        let uri = Url::from_file_path(path)
            .map_err(|()| format!("{} is not an absolute path", path.display()))?;
        match documents.get_mut(path) {
            Some(open) if *open.text == *text => {
                open.stamp = stamp;
                Ok(Synced {
                    uri,
                    text,
                    changed: false,
                    version: open.version,
                })
            }
            Some(open) => {
                if open.earlier.len() == EARLIER_VERSIONS {
                    open.earlier.remove(0);
                }
                open.earlier.push((open.version, Arc::clone(&open.text)));
                open.version += 1;
                open.text = Arc::clone(&text);
                open.stamp = stamp;
                self.connection
                    .notify::<DidChangeTextDocument>(DidChangeTextDocumentParams {
                        text_document: VersionedTextDocumentIdentifier {
                            uri: uri.clone(),
                            version: open.version,
                        },
                        content_changes: vec![TextDocumentContentChangeEvent {
                            range: None,
                            range_length: None,
                            text: text.to_string(),
                        }],
                    });
                Ok(Synced {
                    uri,
                    text,
                    changed: true,
                    version: open.version,
                })
            }
            None => {
                let language_id = self.spec.language_id(path).unwrap_or("plaintext");
                self.connection
                    .notify::<DidOpenTextDocument>(DidOpenTextDocumentParams {
                        text_document: TextDocumentItem {
                            uri: uri.clone(),
                            language_id: language_id.to_owned(),
                            version: 0,
                            text: text.to_string(),
                        },
                    });
                documents.insert(
                    path.to_path_buf(),
                    OpenDocument {
                        version: 0,
                        text: Arc::clone(&text),
                        stamp,
                        earlier: Vec::new(),
                    },
                );
                Ok(Synced {
                    uri,
                    text,
                    changed: true,
                    version: 0,
                })
            }
        }
    }

    /// The text an open document had at `version`, when it is recent enough to be known.
    pub async fn text_at(&self, path: &Path, version: i32) -> Option<Arc<str>> {
        let documents = self.documents.lock().await;
        let open = documents.get(path)?;
        if open.version == version {
            return Some(Arc::clone(&open.text));
        }
        open.earlier
            .iter()
            .find(|(v, _)| *v == version)
            .map(|(_, text)| Arc::clone(text))
    }

    /// Whether the server has `path` open.
    pub async fn is_open(&self, path: &Path) -> bool {
        self.documents.lock().await.contains_key(path)
    }

    /// Closes `path` if the server has it open, so the next sync opens it afresh (clangd
    /// rebuilds a reopened file against headers that changed on disk).
    pub async fn close(&self, path: &Path) {
        let mut documents = self.documents.lock().await;
        if documents.remove(path).is_some()
            && let Ok(uri) = Url::from_file_path(path)
        {
            self.connection
                .notify::<DidCloseTextDocument>(DidCloseTextDocumentParams {
                    text_document: TextDocumentIdentifier { uri },
                });
        }
    }

    /// The files of `paths` that import each of them, transitively (tsserver's
    /// `fileReferences` followed breadth first), in the order found, at most `cap`; with
    /// whether more were left out. `None` when the server cannot say.
    pub async fn importers(
        &self,
        paths: &[PathBuf],
        cap: usize,
        deadline: tokio::time::Instant,
    ) -> Option<(Vec<PathBuf>, bool)> {
        if self.spec.pull != Pull::TsServer {
            return None;
        }
        let mut seen: std::collections::HashSet<PathBuf> = paths.iter().cloned().collect();
        let mut found = Vec::new();
        let mut frontier: Vec<PathBuf> = paths.to_vec();
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for path in frontier {
                let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
                if remaining.is_zero() {
                    return Some((found, true));
                }
                let answer = self
                    .request_within::<ExecuteCommand>(
                        ExecuteCommandParams {
                            command: "typescript.tsserverRequest".into(),
                            arguments: vec![
                                json!("fileReferences"),
                                json!({ "file": path.display().to_string() }),
                            ],
                            work_done_progress_params: Default::default(),
                        },
                        remaining,
                    )
                    .await
                    .ok()??;
                let refs = answer.pointer("/body/refs")?.as_array()?.clone();
                for reference in refs {
                    let Some(file) = reference.get("file").and_then(|f| f.as_str()) else {
                        continue;
                    };
                    let file = PathBuf::from(file);
                    if file.starts_with(&self.root) && seen.insert(file.clone()) {
                        if found.len() == cap {
                            return Some((found, true));
                        }
                        found.push(file.clone());
                        next.push(file);
                    }
                }
            }
            frontier = next;
        }
        Some((found, false))
    }

    /// Tells the server the file was saved (rust-analyzer starts its `cargo check` on save).
    pub fn save(&self, uri: &Url) {
        self.connection
            .notify::<DidSaveTextDocument>(DidSaveTextDocumentParams {
                text_document: TextDocumentIdentifier { uri: uri.clone() },
                text: None,
            });
    }

    /// Re-syncs every open document that changed on disk since it was sent (other tools or
    /// the shell may have written it); a deleted one is closed.
    pub async fn resync_open(&self) {
        let mut documents = self.documents.lock().await;
        let paths: Vec<PathBuf> = documents.keys().cloned().collect();
        for path in paths {
            let _ = self.sync_locked(&mut documents, &path);
        }
    }

    /// For a server that does not watch files itself: finds source files created, changed or
    /// deleted on disk since the last scan and reports them as watched-file changes, so it
    /// does not answer from a stale view of files it never opened.
    pub async fn rescan_disk(&self) {
        let Some(disk) = &self.disk else {
            return;
        };
        let mut snapshot = disk.lock().await;
        if snapshot.files.len() > SMALL_SCAN_FILES
            && snapshot
                .scanned_at
                .is_some_and(|at| at.elapsed() < LARGE_RESCAN)
        {
            return;
        }
        let root = self.root.clone();
        let spec = Arc::clone(&self.spec);
        let Ok(now) = tokio::task::spawn_blocking(move || scan_sources(&spec, &root)).await else {
            return;
        };
        let first = snapshot.scanned_at.is_none();
        let mut events = Vec::new();
        if !first {
            for (path, stamp) in &now {
                let kind = match snapshot.files.get(path) {
                    None => FileChangeType::CREATED,
                    Some(before) if before != stamp => FileChangeType::CHANGED,
                    Some(_) => continue,
                };
                events.extend(
                    Url::from_file_path(path)
                        .ok()
                        .map(|uri| FileEvent { uri, typ: kind }),
                );
            }
            for path in snapshot.files.keys() {
                if !now.contains_key(path) {
                    events.extend(Url::from_file_path(path).ok().map(|uri| FileEvent {
                        uri,
                        typ: FileChangeType::DELETED,
                    }));
                }
            }
        }
        snapshot.files = now;
        snapshot.scanned_at = Some(Instant::now());
        if !events.is_empty() {
            tracing::debug!(server = %self.spec.name, changes = events.len(), "files changed on disk");
            self.connection
                .notify::<DidChangeWatchedFiles>(DidChangeWatchedFilesParams { changes: events });
        }
    }

    /// Tells the server that files changed on disk (after a rename wrote them): open ones
    /// get their new text, and every one is announced as a watched-file change.
    pub async fn files_changed(&self, changes: &[(PathBuf, FileChangeType)]) {
        let mut documents = self.documents.lock().await;
        let mut events = Vec::new();
        for (path, kind) in changes {
            let Ok(uri) = Url::from_file_path(path) else {
                continue;
            };
            if documents.contains_key(path) {
                let _ = self.sync_locked(&mut documents, path);
            }
            events.push(FileEvent { uri, typ: *kind });
        }
        if !events.is_empty() {
            self.connection
                .notify::<DidChangeWatchedFiles>(DidChangeWatchedFilesParams { changes: events });
        }
    }

    /// The file's diagnostics, asked for, from a server the table says answers such asks
    /// ([`Pull`]); `None` when it does not, or answers with nothing usable (the caller then
    /// reads publishes).
    pub async fn pull_diagnostics(&self, uri: &Url) -> Option<Vec<Diagnostic>> {
        self.pull_within(uri, self.request_timeout).await
    }

    /// [`Session::pull_diagnostics`] with its own timeout.
    pub async fn pull_within(&self, uri: &Url, timeout: Duration) -> Option<Vec<Diagnostic>> {
        match self.pull_answer(uri, timeout).await {
            Ok(diagnostics) => diagnostics,
            Err(error) => {
                tracing::debug!(server = %self.spec.name, %error, "pulling diagnostics failed; using publishes");
                None
            }
        }
    }

    /// The server's diagnostics for `uri` as a pull answers, or its error: `Ok(None)` when it
    /// does not answer pulls (or not with a full report).
    pub async fn pull_answer(
        &self,
        uri: &Url,
        timeout: Duration,
    ) -> Result<Option<Vec<Diagnostic>>> {
        match self.spec.pull {
            Pull::None => Ok(None),
            Pull::Lsp | Pull::Analysis => self.pull_lsp(uri, timeout).await,
            Pull::TsServer => self.pull_tsserver(uri, timeout).await,
        }
    }

    async fn pull_lsp(&self, uri: &Url, timeout: Duration) -> Result<Option<Vec<Diagnostic>>> {
        let answer = self
            .request_within::<DocumentDiagnosticRequest>(
                DocumentDiagnosticParams {
                    text_document: TextDocumentIdentifier { uri: uri.clone() },
                    identifier: None,
                    previous_result_id: None,
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                },
                timeout,
            )
            .await?;
        Ok(match answer {
            DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(full)) => {
                Some(full.full_document_diagnostic_report.items)
            }
            _ => None,
        })
    }

    /// tsserver's syntactic and semantic diagnostics of an open file, through
    /// typescript-language-server's pass-through command.
    async fn pull_tsserver(&self, uri: &Url, timeout: Duration) -> Result<Option<Vec<Diagnostic>>> {
        let mut diagnostics = Vec::new();
        for command in ["syntacticDiagnosticsSync", "semanticDiagnosticsSync"] {
            let answer = self
                .request_within::<ExecuteCommand>(
                    ExecuteCommandParams {
                        command: "typescript.tsserverRequest".into(),
                        arguments: vec![json!(command), json!({ "file": tsserver_file(uri) })],
                        work_done_progress_params: Default::default(),
                    },
                    timeout,
                )
                .await?;
            let Some(body) = answer.as_ref().and_then(|answer| {
                (answer.get("success") == Some(&json!(true)))
                    .then(|| answer.get("body")?.as_array())
                    .flatten()
            }) else {
                return Ok(None);
            };
            diagnostics.extend(body.iter().filter_map(tsserver_diagnostic));
        }
        Ok(Some(diagnostics))
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

/// The stamps of the server's source files under `root` (hidden, vendored and build folders
/// left out), visiting at most [`SCAN_ENTRIES`] entries.
fn scan_sources(spec: &ServerSpec, root: &Path) -> HashMap<PathBuf, (SystemTime, u64)> {
    let mut files = HashMap::new();
    let mut stack = vec![root.to_path_buf()];
    let mut budget = SCAN_ENTRIES;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if budget == 0 {
                return files;
            }
            budget -= 1;
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if !name.starts_with('.') && !UNSCANNED_DIRS.contains(&name.as_ref()) {
                    stack.push(path);
                }
            } else if kind.is_file()
                && spec.language_id(&path).is_some()
                && let Some(stamp) = stamp(&path)
            {
                files.insert(path, stamp);
            }
        }
    }
    files
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.modified().ok()?, metadata.len()))
}

/// Whether an unchanged stamp can be trusted without reading the file again.
fn trusted(sent: Option<(SystemTime, u64)>, now: Option<(SystemTime, u64)>) -> bool {
    match (sent, now) {
        (Some(sent), Some(now)) if sent == now => SystemTime::now()
            .duration_since(now.0)
            .is_ok_and(|age| age > TRUST_STAMP_AFTER),
        _ => false,
    }
}

/// The file tsserver is asked about: its path (tsserver keys files by path; a file of the
/// project that is not open is found by it).
fn tsserver_file(uri: &Url) -> String {
    uri.to_file_path()
        .map(|path| path.display().to_string())
        .unwrap_or_else(|()| uri.to_string())
}

/// One tsserver diagnostic (`{start: {line, offset}, end, text, code, category}`, 1-based)
/// as an LSP one; columns count UTF-16 units, which only matters to callers that read them.
fn tsserver_diagnostic(item: &serde_json::Value) -> Option<Diagnostic> {
    let position = |key: &str| {
        let at = item.get(key)?;
        let line = at.get("line")?.as_u64()?.checked_sub(1)?;
        let offset = at.get("offset")?.as_u64()?.saturating_sub(1);
        Some(Position::new(
            u32::try_from(line).ok()?,
            u32::try_from(offset).ok()?,
        ))
    };
    let start = position("start")?;
    Some(Diagnostic {
        range: Range::new(start, position("end").unwrap_or(start)),
        severity: Some(match item.get("category").and_then(|c| c.as_str()) {
            Some("error") => DiagnosticSeverity::ERROR,
            Some("warning") => DiagnosticSeverity::WARNING,
            Some("suggestion") => DiagnosticSeverity::HINT,
            _ => DiagnosticSeverity::INFORMATION,
        }),
        code: item
            .get("code")
            .and_then(|code| code.as_i64())
            .and_then(|code| i32::try_from(code).ok())
            .map(NumberOrString::Number),
        source: Some("ts".into()),
        message: item.get("text")?.as_str()?.to_owned(),
        ..Diagnostic::default()
    })
}

/// What we tell the server about ourselves: UTF-8 positions first, progress, rust-analyzer's
/// status notification, hierarchical symbols, link locations, code-action literals, rename
/// with prepare, and workspace edits with resource operations. File watching is left to the
/// servers that can do it themselves.
fn client_capabilities(pull_diagnostics: bool) -> serde_json::Result<ClientCapabilities> {
    let symbol_kinds: Vec<u32> = (1..=26).collect();
    let mut capabilities = json!({
        "general": { "positionEncodings": ["utf-8", "utf-16"] },
        "window": { "workDoneProgress": true, "showMessage": {} },
        "workspace": {
            "configuration": true,
            "workspaceFolders": true,
            "applyEdit": false,
            "workspaceEdit": {
                "documentChanges": true,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "abort"
            },
            "symbol": { "symbolKind": { "valueSet": symbol_kinds } },
            "didChangeConfiguration": { "dynamicRegistration": false },
            "didChangeWatchedFiles": { "dynamicRegistration": false }
        },
        "textDocument": {
            "synchronization": { "didSave": true, "dynamicRegistration": false },
            "hover": { "contentFormat": ["markdown", "plaintext"] },
            "definition": { "linkSupport": true },
            "typeDefinition": { "linkSupport": true },
            "implementation": { "linkSupport": true },
            "references": {},
            "documentSymbol": {
                "hierarchicalDocumentSymbolSupport": true,
                "symbolKind": { "valueSet": symbol_kinds }
            },
            "codeAction": {
                "codeActionLiteralSupport": { "codeActionKind": { "valueSet": [
                    "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                    "refactor.rewrite", "source", "source.organizeImports", "source.fixAll"
                ] } },
                "isPreferredSupport": true,
                "dataSupport": true,
                "resolveSupport": { "properties": ["edit"] }
            },
            "rename": { "prepareSupport": true },
            "publishDiagnostics": { "versionSupport": true }
        },
        "experimental": { "serverStatusNotification": true }
    });
    // Offered only to servers we pull from: a server told that the client pulls may stop
    // publishing, and publishes are what the other servers are read by.
    if pull_diagnostics {
        capabilities["textDocument"]["diagnostic"] = json!({ "dynamicRegistration": false });
    }
    serde_json::from_value(capabilities)
}

fn initialize_params(session: &Session, root_uri: Url, root_name: String) -> InitializeParams {
    // A unit test proves the capabilities decode; the default is never reached.
    let capabilities = client_capabilities(matches!(session.spec.pull, Pull::Lsp | Pull::Analysis))
        .unwrap_or_default();
    #[allow(deprecated)]
    InitializeParams {
        // A contained server lives in a PID namespace of its own, where our pid names nothing
        // (or another process): a server watching it (vscode-languageserver polls it every few
        // seconds) would exit at once. There it ends with its namespace instead.
        process_id: (!tools_process::containment().is_active()).then(std::process::id),
        root_path: Some(session.root.display().to_string()),
        root_uri: Some(root_uri.clone()),
        initialization_options: session.spec.initialization_options.clone(),
        capabilities,
        workspace_folders: Some(vec![WorkspaceFolder {
            uri: root_uri,
            name: root_name,
        }]),
        client_info: Some(ClientInfo {
            name: "agent-tools".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        ..InitializeParams::default()
    }
}

#[cfg(test)]
mod tests {
    use async_lsp::lsp_types::PositionEncodingKind;

    use super::*;

    #[test]
    fn client_capabilities_decode_and_offer_utf8_first() {
        let capabilities = client_capabilities(false).unwrap();
        assert!(
            client_capabilities(true)
                .unwrap()
                .text_document
                .unwrap()
                .diagnostic
                .is_some()
        );
        let encodings = capabilities.general.unwrap().position_encodings.unwrap();
        assert_eq!(
            encodings,
            [PositionEncodingKind::UTF8, PositionEncodingKind::UTF16]
        );
        let text = capabilities.text_document.unwrap();
        assert_eq!(text.rename.unwrap().prepare_support, Some(true));
        assert_eq!(
            text.document_symbol
                .unwrap()
                .hierarchical_document_symbol_support,
            Some(true)
        );
        let workspace = capabilities.workspace.unwrap();
        assert_eq!(
            workspace.workspace_edit.unwrap().document_changes,
            Some(true)
        );
        // No watcher is offered: servers that can watch do so themselves.
        assert_eq!(
            workspace
                .did_change_watched_files
                .unwrap()
                .dynamic_registration,
            Some(false)
        );
    }

    #[test]
    fn lsp_5_tsserver_diagnostics_become_lsp_ones() {
        let item = json!({
            "start": {"line": 1, "offset": 14}, "end": {"line": 1, "offset": 20},
            "text": "Type 'string' is not assignable to type 'number'.",
            "code": 2322, "category": "error"
        });
        let diagnostic = tsserver_diagnostic(&item).unwrap();
        assert_eq!(diagnostic.range.start, Position::new(0, 13));
        assert_eq!(diagnostic.range.end, Position::new(0, 19));
        assert_eq!(diagnostic.severity, Some(DiagnosticSeverity::ERROR));
        assert_eq!(diagnostic.code, Some(NumberOrString::Number(2322)));
        let suggestion =
            json!({"start": {"line": 3, "offset": 1}, "text": "unused", "category": "suggestion"});
        assert_eq!(
            tsserver_diagnostic(&suggestion).unwrap().severity,
            Some(DiagnosticSeverity::HINT)
        );
        assert!(tsserver_diagnostic(&json!({"text": "no position"})).is_none());
    }

    #[test]
    fn a_stamp_is_trusted_only_when_unchanged_and_old() {
        let old = SystemTime::now() - Duration::from_secs(60);
        assert!(trusted(Some((old, 10)), Some((old, 10))));
        assert!(!trusted(Some((old, 10)), Some((old, 11))));
        let fresh = SystemTime::now();
        assert!(!trusted(Some((fresh, 10)), Some((fresh, 10))));
        assert!(!trusted(None, Some((old, 10))));
    }
}
