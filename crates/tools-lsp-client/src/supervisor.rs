//! The language-server supervisor: a cheap, cloneable handle and one actor that owns every
//! session, keyed by (server, root). Servers start lazily on the first call that needs them;
//! a crashed one is restarted on the next call while its restart budget lasts; a reload
//! restarts them on request; a status reports each server's markers, binary and sessions.
//!
//! Requests do not pass through the actor: it hands out `Arc<Session>`s, and callers talk to
//! the server directly, so a slow `references` never holds up a `hover`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tools_process::{Sandbox, SearchPath, StderrTail};

use crate::config::ClientConfig;
use crate::discovery::{Binary, MissingBinary, VersionCache, resolve_binary, root_for, scan_roots};
use crate::servers::ServerSpec;
use crate::session::{Activity, Busy, OnBusy, Session};
use crate::{Error, LastError, Result};

mod actor;

use actor::run_actor;

/// The run's language servers. Clone it freely; the servers stop when the last clone is
/// dropped.
#[derive(Clone)]
pub struct Supervisor {
    inner: Arc<Inner>,
}

struct Inner {
    context: Arc<Context>,
    /// The actor, spawned on first use so that a supervisor can be built outside a runtime
    /// (listing tools, generating docs) and only a run that calls it pays for it.
    actor: OnceLock<mpsc::UnboundedSender<Command>>,
    /// How many reloads ran: what a caller learnt about servers that cannot run may hold
    /// until the next one.
    reloads: AtomicU64,
}

/// What the handle and the actor both read.
pub struct Context {
    pub workspace_root: PathBuf,
    pub config: ClientConfig,
    pub servers: Vec<Arc<ServerSpec>>,
    pub versions: VersionCache,
    /// The run's sandbox (EVAL-9): servers, and the probes that find them, start inside it.
    pub sandbox: Option<Sandbox>,
    server_nanos: Arc<AtomicU64>,
    on_busy: OnBusy,
}

impl Context {
    /// Where binaries for a project at `root` are looked for.
    pub fn search_path(&self, root: Option<&Path>) -> SearchPath {
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
        reply: Waiter,
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
        reply: oneshot::Sender<Vec<Forgotten>>,
    },
    /// Every session's state, for a status.
    Snapshot {
        reply: oneshot::Sender<Vec<SessionStatus>>,
    },
    /// Stop every server and end the actor (the run is ending).
    Shutdown { reply: oneshot::Sender<()> },
}

enum StartFailure {
    /// The server cannot run here (no binary): not a crash.
    Unusable(Error),
    /// It was found but did not come up: counts against the budget.
    Failed(Error),
}

/// A session the actor forgot on a reload, with its process if it was running.
struct Forgotten {
    spec: Arc<ServerSpec>,
    root: PathBuf,
    session: Option<Arc<Session>>,
}

struct Entry {
    generation: u64,
    crashes: u32,
    last_error: Option<LastError>,
    tail: Arc<StderrTail>,
    state: EntryState,
}

/// Who waits for a session.
type Waiter = oneshot::Sender<Result<Arc<Session>>>;

enum EntryState {
    Starting(Vec<Waiter>),
    Running(Arc<Session>),
    Down,
}

/// One session's state.
#[derive(Debug, Clone)]
pub struct SessionStatus {
    /// The server's name.
    pub server: String,
    /// The project root it serves.
    pub root: PathBuf,
    pub state: SessionState,
    /// The server's process id while it runs.
    pub pid: Option<u32>,
    /// How many times it crashed since the last reload.
    pub crashes: u32,
    /// The last error: a crash, a failed start, or an error the server reported.
    pub last_error: Option<LastError>,
    /// The last lines it wrote to stderr.
    pub stderr_tail: Vec<String>,
}

/// Where a session is in its life. A session that is down restarts on the next call that
/// needs it while its crashes stay under the restart budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionState {
    Starting,
    Running(Activity),
    Down,
}

/// One server of the table, as it stands in this workspace (LSP-2).
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub spec: Arc<ServerSpec>,
    /// Project roots found by their markers.
    pub roots: Vec<PathBuf>,
    /// The binary that would run for the first root (or the workspace root), or why none
    /// would.
    pub binary: std::result::Result<PathBuf, MissingBinary>,
    /// What the binary says its version is.
    pub version: Option<String>,
    /// Its sessions in this run.
    pub sessions: Vec<SessionStatus>,
}

/// What a reload did to one session.
#[derive(Debug, Clone)]
pub struct Reloaded {
    pub server: String,
    pub root: PathBuf,
    pub outcome: ReloadOutcome,
}

/// How one session came out of a reload.
#[derive(Debug, Clone)]
pub enum ReloadOutcome {
    /// It was not running: its crash count is cleared, and it starts on the next call that
    /// needs it.
    NotRunning,
    /// It was stopped and started again.
    Restarted {
        pid: u32,
        /// From the start of the new process until it was ready (or until the wait for it
        /// gave up).
        ready_after: Duration,
        /// What it was still busy with when the wait gave up.
        still_busy: Option<Busy>,
    },
    /// It was stopped, but did not start again.
    Failed(Error),
}

impl Supervisor {
    /// A supervisor for a workspace (its canonical root) with this configuration, starting
    /// every process inside `sandbox` when there is one (EVAL-9); fails only when the
    /// configuration's server table is invalid. No server starts until a call needs one
    /// (CORE-2). `on_busy` is told what a call waits for while its server is busy.
    pub fn new(
        workspace_root: impl Into<PathBuf>,
        config: ClientConfig,
        sandbox: Option<Sandbox>,
        on_busy: OnBusy,
    ) -> Result<Self> {
        let servers = crate::servers::table(&config)?
            .into_iter()
            .map(Arc::new)
            .collect();
        Ok(Supervisor {
            inner: Arc::new(Inner {
                context: Arc::new(Context {
                    workspace_root: workspace_root.into(),
                    config,
                    servers,
                    versions: VersionCache::default(),
                    sandbox,
                    server_nanos: Arc::new(AtomicU64::new(0)),
                    on_busy,
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

    pub fn context(&self) -> &Context {
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
    pub fn route(&self, path: &Path) -> Result<Arc<ServerSpec>> {
        let context = self.context();
        match context
            .servers
            .iter()
            .find(|spec| spec.language_id(path).is_some())
        {
            Some(spec) => Ok(Arc::clone(spec)),
            None => Err(Error::NoServer {
                path: path.to_path_buf(),
                known: context.servers.clone(),
            }),
        }
    }

    /// The project root of `spec` for `path` (LSP-2: no marker, no server).
    pub fn root(&self, spec: &ServerSpec, path: &Path) -> Result<PathBuf> {
        let context = self.context();
        root_for(spec, &context.workspace_root, path).ok_or_else(|| Error::NoRoot {
            server: spec.name.clone(),
            path: path.to_path_buf(),
            markers: spec.markers.clone(),
        })
    }

    /// How many reloads this run has had.
    pub fn reloads(&self) -> u64 {
        self.inner.reloads.load(Ordering::Relaxed)
    }

    /// The server and project root that cover `path`, if any: its extension has a server and
    /// a root marker is found above it. Reads nothing but the file system's directory entries.
    pub fn covering(&self, path: &Path) -> Option<(Arc<ServerSpec>, PathBuf)> {
        let context = self.context();
        let spec = context
            .servers
            .iter()
            .find(|spec| spec.language_id(path).is_some())?;
        let root = root_for(spec, &context.workspace_root, path)?;
        Some((Arc::clone(spec), root))
    }

    /// A running session for (server, root), started now if there is none.
    pub async fn acquire(&self, spec: Arc<ServerSpec>, root: PathBuf) -> Result<Arc<Session>> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Acquire { spec, root, reply })?;
        answer.await.map_err(|_| Error::SupervisorGone)?
    }

    /// Every session's state.
    pub async fn sessions(&self) -> Result<Vec<SessionStatus>> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Snapshot { reply })?;
        answer.await.map_err(|_| Error::SupervisorGone)
    }

    /// Restarts the session for (server, root), or every session when `only` is `None`, and
    /// clears their crash counts. Says what became of each.
    pub async fn reload(&self, only: Option<(Arc<ServerSpec>, PathBuf)>) -> Result<Vec<Reloaded>> {
        self.inner.reloads.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        let key = only
            .as_ref()
            .map(|(spec, root)| (spec.name.clone(), root.clone()));
        self.send(Command::Reload { only: key, reply })?;
        let forgotten = answer.await.map_err(|_| Error::SupervisorGone)?;
        let mut reloaded = Vec::new();
        let mut restart = Vec::new();
        for item in forgotten {
            match item.session {
                Some(session) => {
                    session.shutdown().await;
                    restart.push((item.spec, item.root));
                }
                None => reloaded.push(Reloaded {
                    server: item.spec.name.clone(),
                    root: item.root,
                    outcome: ReloadOutcome::NotRunning,
                }),
            }
        }
        // Asked for one server that never ran: start it, so a reload always leaves it up.
        if restart.is_empty()
            && reloaded.is_empty()
            && let Some((spec, root)) = only
        {
            restart.push((spec, root));
        }
        for (spec, root) in restart {
            let server = spec.name.clone();
            let outcome = match self.acquire(spec, root.clone()).await {
                Ok(session) => {
                    let still_busy = session.wait_ready().await;
                    ReloadOutcome::Restarted {
                        pid: session.pid(),
                        ready_after: session.started.elapsed(),
                        still_busy,
                    }
                }
                Err(error) => ReloadOutcome::Failed(error),
            };
            reloaded.push(Reloaded {
                server,
                root,
                outcome,
            });
        }
        Ok(reloaded)
    }

    /// Every server of the table, with its roots, binary, version and sessions (LSP-2).
    pub async fn status(&self) -> Result<Vec<ServerStatus>> {
        let sessions = self.sessions().await?;
        let context = self.context();
        let mut servers = Vec::new();
        for spec in &context.servers {
            let roots = scan_roots(spec, &context.workspace_root);
            let probe_root = roots
                .first()
                .cloned()
                .unwrap_or_else(|| context.workspace_root.clone());
            let search = context.search_path(Some(&probe_root));
            let sandbox = context.sandbox.as_ref();
            let (binary, version) = match resolve_binary(spec, &search, &probe_root, sandbox).await
            {
                Binary::Found {
                    path, candidate, ..
                } => {
                    let version = context.versions.version(&path, &candidate, sandbox).await;
                    (Ok(path), version)
                }
                Binary::Missing(missing) => (Err(missing), None),
            };
            servers.push(ServerStatus {
                spec: Arc::clone(spec),
                roots,
                binary,
                version,
                sessions: sessions
                    .iter()
                    .filter(|session| session.server == spec.name)
                    .cloned()
                    .collect(),
            });
        }
        Ok(servers)
    }
}
