//! The language-server supervisor: a cheap, cloneable handle and one actor that owns every
//! session, keyed by (server, root). Servers start lazily on the first call that needs them;
//! a crashed one is restarted on the next call while its restart budget lasts; `reload`
//! restarts them on request; `status` reports each server's marker, binary and state.
//!
//! Requests do not pass through the actor: it hands out `Arc<Session>`s, and callers talk to
//! the server directly, so a slow `references` never holds up a `hover`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tools_core::{ToolError, Workspace};

use async_lsp::lsp_types::{Position, TextDocumentIdentifier, TextDocumentPositionParams};

use crate::config::LspConfig;
use crate::discovery::{Binary, VersionCache, resolve_binary, root_for, scan_roots};
use crate::position::{Target, lines, locate};
use crate::servers::ServerSpec;
use crate::session::{Activity, Session, StartOptions, Synced};
use crate::{Error, Result};
use tools_process::SearchPath;
use tools_process::StderrTail;

/// The run's language servers. Clone it freely; the servers stop when the last clone is
/// dropped.
#[derive(Clone)]
pub struct LspSupervisor {
    inner: Arc<Inner>,
}

struct Inner {
    context: Arc<Context>,
    /// The actor, spawned on first use so that a supervisor can be built outside a runtime
    /// (listing tools, generating docs) and only a run that calls it pays for it.
    actor: OnceLock<mpsc::UnboundedSender<Command>>,
    /// How many times `reload` ran: what was learnt about servers that cannot run (by
    /// diagnostics on write) holds until the next one.
    reloads: AtomicU64,
}

/// What the handle and the actor both read.
pub(crate) struct Context {
    pub(crate) workspace_root: PathBuf,
    pub(crate) config: LspConfig,
    pub(crate) servers: Vec<Arc<ServerSpec>>,
    pub(crate) versions: VersionCache,
    server_nanos: Arc<AtomicU64>,
}

impl Context {
    /// A root as the model reads it: `.` or a workspace-relative folder.
    pub(crate) fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.workspace_root) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Ok(relative) => relative.to_string_lossy().into_owned(),
            Err(_) => path.display().to_string(),
        }
    }

    /// Where binaries for a project at `root` are looked for.
    pub(crate) fn search_path(&self, root: Option<&Path>) -> SearchPath {
        SearchPath::new(&self.workspace_root, root, &self.config.path)
    }
}

type Key = (String, PathBuf);

/// The actor's closed set of commands.
enum Command {
    /// A running session for (server, root), started if needed.
    Acquire {
        spec: Arc<ServerSpec>,
        root: PathBuf,
        reply: oneshot::Sender<Result<Arc<Session>>>,
    },
    /// A start finished (from the start task).
    Started {
        key: Key,
        generation: u64,
        result: std::result::Result<Arc<Session>, StartFailure>,
    },
    /// A server's process or connection ended (from its watcher).
    Exited {
        key: Key,
        generation: u64,
        reason: String,
    },
    /// Forget the matching sessions (and their crash counts); hand back the running ones to
    /// be shut down and started again.
    Reload {
        only: Option<Key>,
        reply: oneshot::Sender<Vec<Reloaded>>,
    },
    /// Every session's state, for `status`.
    Snapshot {
        reply: oneshot::Sender<Vec<SessionReport>>,
    },
    /// Stop every server and end the actor (the run is ending).
    Shutdown { reply: oneshot::Sender<()> },
}

enum StartFailure {
    /// The server cannot run here (no binary): not a crash.
    Unusable(String),
    /// It was found but did not come up: counts against the budget.
    Failed(Error),
}

struct Reloaded {
    spec: Arc<ServerSpec>,
    root: PathBuf,
    session: Option<Arc<Session>>,
}

struct Entry {
    generation: u64,
    crashes: u32,
    last_error: Option<String>,
    tail: Arc<StderrTail>,
    state: EntryState,
}

enum EntryState {
    Starting(Vec<oneshot::Sender<Result<Arc<Session>>>>),
    Running(Arc<Session>),
    Down,
}

/// One session in `status`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionReport {
    /// The server's name.
    pub server: String,
    /// The project root it serves, workspace-relative.
    pub root: String,
    /// `starting`, `indexing: …`, `ready`, `crashed n times …` or `not running`.
    pub state: String,
    /// The server's process id while it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// How many times it crashed since the last reload.
    pub crashes: u32,
    /// The last error: a crash, a failed start, or an error the server reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The last lines it wrote to stderr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
}

/// One server in `status` (LSP-2).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ServerReport {
    /// The server's name.
    pub server: String,
    /// The file extensions it handles.
    pub extensions: String,
    /// Whether it can run here: a root marker is found and the binary resolves.
    pub usable: bool,
    /// Project roots found by their markers, workspace-relative (`.` is the root itself).
    pub roots: Vec<String>,
    /// The marker files it looks for.
    pub markers: Vec<String>,
    /// The binary that would run, if one resolves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
    /// What the binary says its version is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why it cannot run here, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Its sessions in this run.
    pub sessions: Vec<SessionReport>,
}

/// A file opened on its server, ready for a request.
pub(crate) struct Opened {
    pub(crate) session: Arc<Session>,
    pub(crate) path: PathBuf,
    pub(crate) shown: String,
    pub(crate) synced: Synced,
    /// How many diagnostics publishes the file had before this sync (a wait for fresh
    /// diagnostics waits for more than this).
    pub(crate) publishes_before: u64,
    /// Notes for the answer (the server was still indexing).
    pub(crate) notes: Vec<String>,
}

impl LspSupervisor {
    /// A supervisor for a workspace (its canonical root) with this configuration; fails only
    /// when the configuration's server table is invalid. No server starts until a call needs
    /// one (CORE-2).
    pub fn new(workspace_root: impl Into<PathBuf>, config: LspConfig) -> Result<Self> {
        config.validate()?;
        let servers = crate::servers::table(&config)?
            .into_iter()
            .map(Arc::new)
            .collect();
        Ok(LspSupervisor {
            inner: Arc::new(Inner {
                context: Arc::new(Context {
                    workspace_root: workspace_root.into(),
                    config,
                    servers,
                    versions: VersionCache::default(),
                    server_nanos: Arc::new(AtomicU64::new(0)),
                }),
                actor: OnceLock::new(),
                reloads: AtomicU64::new(0),
            }),
        })
    }

    /// Time spent waiting for servers' answers in this run, summed: what the servers took, as
    /// opposed to what our layer added around them (the benchmark reports both).
    pub fn server_time(&self) -> Duration {
        Duration::from_nanos(self.inner.context.server_nanos.load(Ordering::Relaxed))
    }

    pub(crate) fn context(&self) -> &Context {
        &self.inner.context
    }

    fn send(&self, command: Command) -> Result<()> {
        let sender = self.inner.actor.get_or_init(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            let context = Arc::clone(&self.inner.context);
            tokio::spawn(run_actor(context, receiver, sender.downgrade()));
            sender
        });
        sender.send(command).map_err(|_| Error::SupervisorGone)
    }

    /// Stops every server of the run (politely, then by killing its process group) and ends
    /// the supervisor: later calls answer that the servers were stopped.
    pub async fn shutdown(&self) {
        let Some(sender) = self.inner.actor.get() else {
            return;
        };
        let (reply, done) = oneshot::channel();
        if sender.send(Command::Shutdown { reply }).is_ok() {
            let _ = done.await;
        }
    }

    /// The server for a file, by extension.
    pub(crate) fn route(&self, path: &Path, shown: &str) -> Result<Arc<ServerSpec>> {
        let context = self.context();
        if let Some(spec) = context
            .servers
            .iter()
            .find(|spec| spec.language_id(path).is_some())
        {
            return Ok(Arc::clone(spec));
        }
        let known: Vec<String> = context
            .servers
            .iter()
            .map(|spec| format!("{} ({})", spec.name, spec.extension_list()))
            .collect();
        Err(Error::Unusable(format!(
            "no language server handles {shown}: the servers known here are {}; add one under \
             [lsp.servers.NAME] in agent-tools.toml",
            known.join(", ")
        )))
    }

    /// The project root of `spec` for `path` (LSP-2: no marker, no server).
    pub(crate) fn root(&self, spec: &ServerSpec, path: &Path, shown: &str) -> Result<PathBuf> {
        let context = self.context();
        root_for(spec, &context.workspace_root, path).ok_or_else(|| {
            Error::Unusable(format!(
                "{} is not usable for {shown}: none of its root markers ({}) was found beside \
                 the file or in a folder above it inside the workspace, so it has no project \
                 to work in; call `lsp` with operation `status` to see every server",
                spec.name,
                spec.markers.join(", ")
            ))
        })
    }

    /// How many reloads this run has had.
    pub(crate) fn reloads(&self) -> u64 {
        self.inner.reloads.load(Ordering::Relaxed)
    }

    /// The server and project root that cover `path`, if any: its extension has a server and
    /// a root marker is found above it. Reads nothing but the file system's directory entries.
    pub(crate) fn covering(&self, path: &Path) -> Option<(Arc<ServerSpec>, PathBuf)> {
        let context = self.context();
        let spec = context
            .servers
            .iter()
            .find(|spec| spec.language_id(path).is_some())?;
        let root = root_for(spec, &context.workspace_root, path)?;
        Some((Arc::clone(spec), root))
    }

    /// A running session for (server, root), started now if there is none.
    pub(crate) async fn acquire(
        &self,
        spec: Arc<ServerSpec>,
        root: PathBuf,
    ) -> Result<Arc<Session>> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Acquire { spec, root, reply })?;
        answer.await.map_err(|_| Error::SupervisorGone)?
    }

    /// Resolves a `file` argument, starts its server if needed, waits for it to be ready,
    /// and syncs the file and every other open document with the disk.
    /// Opens `file` and aims at `symbol` on 1-based `line` (LSP-3/4): the position a
    /// navigation or rename request is sent for. A symbol that is not on the line is refused
    /// from the file on disk, before a server is started or waited for (a cold rust-analyzer
    /// takes a minute to index).
    pub(crate) async fn open_at(
        &self,
        workspace: &Workspace,
        file: &str,
        line: u32,
        symbol: &str,
        occurrence: Option<u32>,
    ) -> std::result::Result<(Opened, Target, TextDocumentPositionParams), ToolError> {
        self.check_target(workspace, file, line, symbol, occurrence)
            .await?;
        let opened = self.open(workspace, file).await?;
        let target = locate(&opened.synced.text, line, symbol, occurrence, &opened.shown)
            .map_err(ToolError::failed)?;
        let line_text = lines(&opened.synced.text)
            .get(target.line as usize)
            .copied()
            .unwrap_or_default();
        let position = TextDocumentPositionParams {
            text_document: TextDocumentIdentifier {
                uri: opened.synced.uri.clone(),
            },
            position: Position::new(
                target.line,
                opened.session.encoding.column(line_text, target.start),
            ),
        };
        Ok((opened, target, position))
    }

    /// What can be refused about a position from the disk alone, before any server starts:
    /// the path (PROD-5), the file, a server for its kind of file and a root for it, the
    /// line and the symbol on it (LSP-3/4).
    pub(crate) async fn check_target(
        &self,
        workspace: &Workspace,
        file: &str,
        line: u32,
        symbol: &str,
        occurrence: Option<u32>,
    ) -> std::result::Result<(), ToolError> {
        let path = workspace.resolve(file)?;
        let shown = workspace.display(&path);
        let spec = self.route(&path, &shown)?;
        self.root(&spec, &path, &shown)?;
        let (symbol, read_path) = (symbol.to_owned(), path.clone());
        let text = tokio::task::spawn_blocking(move || tools_core::read_regular(&read_path))
            .await
            .map_err(|error| ToolError::failed(format!("reading {shown} stopped: {error}")))?;
        let text = match text {
            Ok(bytes) => String::from_utf8(bytes)
                .map_err(|_| ToolError::failed(format!("{shown} is not UTF-8 text")))?,
            Err(_) if path.is_dir() => {
                return Err(ToolError::failed(format!(
                    "{shown} is a directory; give a source file"
                )));
            }
            Err(_) if !path.exists() => {
                return Err(ToolError::failed(format!(
                    "{shown} does not exist; check the path (it is relative to the workspace \
                     root)"
                )));
            }
            Err(error) => return Err(ToolError::failed(format!("cannot read {shown}: {error}"))),
        };
        locate(&text, line, &symbol, occurrence, &shown)
            .map(|_| ())
            .map_err(ToolError::failed)
    }

    pub(crate) async fn open(
        &self,
        workspace: &Workspace,
        file: &str,
    ) -> std::result::Result<Opened, ToolError> {
        let path = workspace.resolve(file)?;
        let shown = workspace.display(&path);
        if path.is_dir() {
            return Err(ToolError::failed(format!(
                "{shown} is a directory; give a source file"
            )));
        }
        if !path.exists() {
            return Err(ToolError::failed(format!(
                "{shown} does not exist; check the path (it is relative to the workspace root)"
            )));
        }
        let spec = self.route(&path, &shown)?;
        let root = self.root(&spec, &path, &shown)?;
        let session = self.acquire(spec, root).await?;
        session.rescan_disk().await;
        session.resync_open().await;
        let publishes_before = async_lsp::lsp_types::Url::from_file_path(&path)
            .map(|uri| session.shared.publish_count(&uri))
            .unwrap_or(0);
        let synced = session
            .sync(&path)
            .await
            .map_err(|message| ToolError::failed(format!("{message}; nothing was asked")))?;
        let notes = session.wait_ready().await.into_iter().collect();
        Ok(Opened {
            session,
            path,
            shown,
            synced,
            publishes_before,
            notes,
        })
    }

    /// Every running session's state.
    pub(crate) async fn sessions(&self) -> Result<Vec<SessionReport>> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Snapshot { reply })?;
        answer.await.map_err(|_| Error::SupervisorGone)
    }

    /// Restarts the session for (server, root), or every session when `only` is `None`, and
    /// clears their crash counts. Returns a line per session.
    pub(crate) async fn reload(
        &self,
        only: Option<(Arc<ServerSpec>, PathBuf)>,
    ) -> Result<Vec<String>> {
        self.inner.reloads.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        let key = only
            .as_ref()
            .map(|(spec, root)| (spec.name.clone(), root.clone()));
        self.send(Command::Reload { only: key, reply })?;
        let reloaded = answer.await.map_err(|_| Error::SupervisorGone)?;
        let mut lines = Vec::new();
        let mut restart = Vec::new();
        for item in reloaded {
            let root_shown = self.context().shown(&item.root);
            match item.session {
                Some(session) => {
                    session.shutdown().await;
                    restart.push((item.spec, item.root, root_shown));
                }
                None => lines.push(format!(
                    "{} (root {root_shown}): not running; its crash count is cleared and it \
                     starts on the next call that needs it",
                    item.spec.name
                )),
            }
        }
        // Asked for one server that never ran: start it, so `reload` always leaves it up.
        if restart.is_empty()
            && lines.is_empty()
            && let Some((spec, root)) = only
        {
            let root_shown = self.context().shown(&root);
            restart.push((spec, root, root_shown));
        }
        for (spec, root, root_shown) in restart {
            let name = spec.name.clone();
            match self.acquire(spec, root).await {
                Ok(session) => {
                    let note = session.wait_ready().await;
                    let mut line = format!(
                        "{name} (root {root_shown}): restarted, pid {}, ready after {:.1}s",
                        session.pid(),
                        session.started.elapsed().as_secs_f64()
                    );
                    if let Some(note) = note {
                        line = format!("{name} (root {root_shown}): restarted; {note}");
                    }
                    lines.push(line);
                }
                Err(error) => lines.push(format!(
                    "{name} (root {root_shown}): stopped, but did not start again: {error}"
                )),
            }
        }
        Ok(lines)
    }

    /// Every server of the table, with its marker, binary, version and sessions (LSP-2).
    pub(crate) async fn status(&self) -> Result<Vec<ServerReport>> {
        let sessions = self.sessions().await?;
        let context = self.context();
        let mut reports = Vec::new();
        for spec in &context.servers {
            let roots = scan_roots(spec, &context.workspace_root);
            let probe_root = roots
                .first()
                .cloned()
                .unwrap_or_else(|| context.workspace_root.clone());
            let search = context.search_path(Some(&probe_root));
            let binary = resolve_binary(spec, &search, &probe_root).await;
            let (binary_path, version, binary_problem) = match &binary {
                Binary::Found {
                    path, candidate, ..
                } => (
                    Some(path.display().to_string()),
                    context.versions.version(path, candidate).await,
                    None,
                ),
                Binary::Missing { reason } => (None, None, Some(reason.clone())),
            };
            let marker_problem = roots.is_empty().then(|| {
                format!(
                    "no root marker: none of {} was found in the workspace root or up to {} \
                     levels below it",
                    spec.markers.join(", "),
                    3
                )
            });
            let problem = match (marker_problem, binary_problem) {
                (None, None) => None,
                (Some(marker), None) => Some(format!("{marker} (the binary is there)")),
                (None, Some(binary)) => Some(format!("a project is here, but {binary}")),
                (Some(marker), Some(binary)) => Some(format!("{marker}; and {binary}")),
            };
            reports.push(ServerReport {
                server: spec.name.clone(),
                extensions: spec.extension_list(),
                usable: problem.is_none(),
                roots: roots.iter().map(|root| context.shown(root)).collect(),
                markers: spec.markers.clone(),
                binary: binary_path,
                version,
                problem,
                sessions: sessions
                    .iter()
                    .filter(|session| session.server == spec.name)
                    .cloned()
                    .collect(),
            });
        }
        Ok(reports)
    }
}

async fn run_actor(
    context: Arc<Context>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    me: mpsc::WeakUnboundedSender<Command>,
) {
    let mut entries: HashMap<Key, Entry> = HashMap::new();
    let mut next_generation = 0u64;
    let mut stopped_reply = None;
    while let Some(command) = commands.recv().await {
        match command {
            Command::Acquire { spec, root, reply } => {
                let key = (spec.name.clone(), root.clone());
                let entry = entries.entry(key.clone()).or_insert_with(|| Entry {
                    generation: 0,
                    crashes: 0,
                    last_error: None,
                    tail: Arc::new(StderrTail::default()),
                    state: EntryState::Down,
                });
                // A process that died a moment ago, before its watcher said so, is a crash
                // now: restart it within the budget instead of handing out a dead session.
                if let EntryState::Running(session) = &entry.state
                    && !session.is_stopping()
                    && !session.process_runs()
                {
                    session.kill();
                    entry.crashes += 1;
                    tracing::warn!(server = %key.0, root = %key.1.display(), crashes = entry.crashes, "language server found dead");
                    entry.last_error = Some("crashed: the process ended".to_owned());
                    entry.state = EntryState::Down;
                }
                match &mut entry.state {
                    EntryState::Running(session) => {
                        let _ = reply.send(Ok(Arc::clone(session)));
                    }
                    EntryState::Starting(waiters) => waiters.push(reply),
                    EntryState::Down if entry.crashes >= context.config.restart_budget => {
                        let _ = reply.send(Err(Error::RestartBudget {
                            server: spec.name.clone(),
                            root: context.shown(&root),
                            crashes: entry.crashes,
                            details: details(entry.last_error.as_deref(), &entry.tail),
                        }));
                    }
                    EntryState::Down => {
                        next_generation += 1;
                        entry.generation = next_generation;
                        entry.state = EntryState::Starting(vec![reply]);
                        // A restarted server keeps the tail of the one that crashed until it
                        // writes its own lines.
                        tokio::spawn(start(
                            Arc::clone(&context),
                            spec,
                            root,
                            next_generation,
                            Arc::clone(&entry.tail),
                            me.clone(),
                        ));
                    }
                }
            }
            Command::Started {
                key,
                generation,
                result,
            } => {
                let Some(entry) = entries.get_mut(&key).filter(|e| e.generation == generation)
                else {
                    // Reloaded while it was starting: nobody wants this one.
                    if let Ok(session) = result {
                        tokio::spawn(async move { session.shutdown().await });
                    }
                    continue;
                };
                let waiters = match std::mem::replace(&mut entry.state, EntryState::Down) {
                    EntryState::Starting(waiters) => waiters,
                    _ => Vec::new(),
                };
                let outcome = match result {
                    Ok(session) => {
                        entry.state = EntryState::Running(Arc::clone(&session));
                        Ok(session)
                    }
                    Err(StartFailure::Unusable(reason)) => {
                        entry.last_error = Some(reason.clone());
                        Err(Error::Unusable(reason))
                    }
                    Err(StartFailure::Failed(error)) => {
                        entry.crashes += 1;
                        entry.last_error = Some(format!("start failed: {error}"));
                        Err(error)
                    }
                };
                for waiter in waiters {
                    let _ = waiter.send(outcome.clone());
                }
            }
            Command::Exited {
                key,
                generation,
                reason,
            } => {
                let Some(entry) = entries.get_mut(&key).filter(|e| e.generation == generation)
                else {
                    continue;
                };
                if let EntryState::Running(session) = &entry.state {
                    if session.is_stopping() {
                        continue;
                    }
                    session.kill();
                    entry.crashes += 1;
                    tracing::warn!(server = %key.0, root = %key.1.display(), %reason, crashes = entry.crashes, "language server crashed");
                    entry.last_error = Some(format!("crashed: {reason}"));
                    entry.state = EntryState::Down;
                }
            }
            Command::Reload { only, reply } => {
                let keys: Vec<Key> = entries
                    .keys()
                    .filter(|key| only.as_ref().is_none_or(|only| only == *key))
                    .cloned()
                    .collect();
                let mut reloaded = Vec::new();
                for key in keys {
                    let Some(entry) = entries.remove(&key) else {
                        continue;
                    };
                    let Some(spec) = context.servers.iter().find(|s| s.name == key.0) else {
                        continue;
                    };
                    let session = match entry.state {
                        EntryState::Running(session) => Some(session),
                        EntryState::Starting(waiters) => {
                            for waiter in waiters {
                                let _ = waiter.send(Err(Error::Unusable(format!(
                                    "{} was reloaded while it was starting; call again",
                                    key.0
                                ))));
                            }
                            None
                        }
                        EntryState::Down => None,
                    };
                    reloaded.push(Reloaded {
                        spec: Arc::clone(spec),
                        root: key.1,
                        session,
                    });
                }
                let _ = reply.send(reloaded);
            }
            Command::Snapshot { reply } => {
                let mut reports: Vec<SessionReport> = entries
                    .iter()
                    .map(|((server, root), entry)| report(&context, server, root, entry))
                    .collect();
                reports.sort_by(|a, b| (&a.server, &a.root).cmp(&(&b.server, &b.root)));
                let _ = reply.send(reports);
            }
            Command::Shutdown { reply } => {
                stopped_reply = Some(reply);
                break;
            }
        }
    }
    // Nobody waiting for a start gets a session any more; a start still running ends with
    // its session dropped, which kills its process group.
    for entry in entries.values_mut() {
        if let EntryState::Starting(waiters) = std::mem::replace(&mut entry.state, EntryState::Down)
        {
            for waiter in waiters {
                let _ = waiter.send(Err(Error::SupervisorGone));
            }
        }
    }
    // Every handle is gone: stop the servers politely, all at once.
    let sessions: Vec<Arc<Session>> = entries
        .into_values()
        .filter_map(|entry| match entry.state {
            EntryState::Running(session) => Some(session),
            _ => None,
        })
        .collect();
    futures::future::join_all(sessions.iter().map(|session| session.shutdown())).await;
    if let Some(reply) = stopped_reply {
        let _ = reply.send(());
    }
}

fn report(context: &Context, server: &str, root: &Path, entry: &Entry) -> SessionReport {
    let budget = context.config.restart_budget;
    let (state, pid, mut last_error) = match &entry.state {
        EntryState::Starting(_) => ("starting".to_owned(), None, entry.last_error.clone()),
        EntryState::Running(session) => {
            let state = match session.activity() {
                Activity::Ready => "ready".to_owned(),
                Activity::Busy(what) => format!("indexing: {what}"),
            };
            let state = match entry.crashes {
                0 => state,
                n => format!("{state} (restarted after {n} crash{})", plural_es(n)),
            };
            (state, Some(session.pid()), entry.last_error.clone())
        }
        EntryState::Down if entry.crashes >= budget => (
            format!(
                "crashed {} time{}; stays down until `reload` (restart budget {budget})",
                entry.crashes,
                if entry.crashes == 1 { "" } else { "s" }
            ),
            None,
            entry.last_error.clone(),
        ),
        EntryState::Down if entry.crashes > 0 => (
            format!(
                "crashed {} time{}; restarts on the next call (restart budget {budget})",
                entry.crashes,
                if entry.crashes == 1 { "" } else { "s" }
            ),
            None,
            entry.last_error.clone(),
        ),
        EntryState::Down => ("not running".to_owned(), None, entry.last_error.clone()),
    };
    if last_error.is_none()
        && let EntryState::Running(session) = &entry.state
    {
        last_error = session.shared.state().messages.back().cloned();
    }
    SessionReport {
        server: server.to_owned(),
        root: context.shown(root),
        state,
        pid,
        crashes: entry.crashes,
        last_error,
        stderr_tail: entry.tail.last(8),
    }
}

fn plural_es(count: u32) -> &'static str {
    if count == 1 { "" } else { "es" }
}

fn details(last_error: Option<&str>, tail: &StderrTail) -> String {
    let mut details = String::new();
    if let Some(error) = last_error {
        details.push_str(&format!("; the last error: {error}"));
    }
    let lines = tail.last(5);
    // A failed start's error already quotes the tail.
    let quoted = last_error.is_some_and(|error| error.contains("its last stderr lines"));
    if !lines.is_empty() && !quoted {
        details.push_str(&format!("; its last stderr lines: {}", lines.join(" | ")));
    }
    details
}

/// Resolves the binary and starts a session, then tells the actor.
async fn start(
    context: Arc<Context>,
    spec: Arc<ServerSpec>,
    root: PathBuf,
    generation: u64,
    tail: Arc<StderrTail>,
    actor: mpsc::WeakUnboundedSender<Command>,
) {
    let key = (spec.name.clone(), root.clone());
    let root_shown = context.shown(&root);
    let search = context.search_path(Some(&root));
    let result = match resolve_binary(&spec, &search, &root).await {
        Binary::Missing { reason } => Err(StartFailure::Unusable(format!(
            "{} cannot start for root {root_shown}: {reason}",
            spec.name
        ))),
        Binary::Found { argv, .. } => {
            let exit_actor = actor.clone();
            let exit_key = key.clone();
            let on_exit = Box::new(move |reason: String| {
                if let Some(actor) = exit_actor.upgrade() {
                    let _ = actor.send(Command::Exited {
                        key: exit_key,
                        generation,
                        reason,
                    });
                }
            });
            let options = StartOptions {
                spec: Arc::clone(&spec),
                root: root.clone(),
                root_shown,
                argv,
                tail,
                request_timeout: context.config.request_timeout(),
                start_timeout: context.config.start_timeout(),
                index_timeout: context.config.index_timeout(),
                server_nanos: Arc::clone(&context.server_nanos),
            };
            Session::start(options, on_exit)
                .await
                .map_err(StartFailure::Failed)
        }
    };
    if let Some(actor) = actor.upgrade() {
        let _ = actor.send(Command::Started {
            key,
            generation,
            result,
        });
    }
}

impl tools_core::Shutdown for LspSupervisor {
    fn shutdown(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(LspSupervisor::shutdown(self))
    }
}
