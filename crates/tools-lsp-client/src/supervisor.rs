//! The language-server supervisor: a cheap, cloneable handle and one actor that owns every
//! session, keyed by (server, root). Servers start lazily on the first call that needs them;
//! a crashed one is restarted on the next call while its restart budget lasts; `reload`
//! restarts them on request; `status` reports each server's marker, binary and state.
//!
//! Requests do not pass through the actor: it hands out `Arc<Session>`s, and callers talk to
//! the server directly, so a slow `references` never holds up a `hover`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tools_process::{SearchPath, StderrTail};

use crate::config::ClientConfig;
use crate::discovery::{Binary, VersionCache, resolve_binary, root_for, scan_roots};
use crate::servers::ServerSpec;
use crate::session::Session;
use crate::{Error, Result};

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
    /// How many times `reload` ran: what was learnt about servers that cannot run (by
    /// diagnostics on write) holds until the next one.
    reloads: AtomicU64,
}

/// What the handle and the actor both read.
pub struct Context {
    pub workspace_root: PathBuf,
    pub config: ClientConfig,
    pub servers: Vec<Arc<ServerSpec>>,
    pub versions: VersionCache,
    server_nanos: Arc<AtomicU64>,
}

impl Context {
    /// A root as the model reads it: `.` or a workspace-relative folder.
    pub fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.workspace_root) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Ok(relative) => relative.to_string_lossy().into_owned(),
            Err(_) => path.display().to_string(),
        }
    }

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

impl Supervisor {
    /// A supervisor for a workspace (its canonical root) with this configuration; fails only
    /// when the configuration's server table is invalid. No server starts until a call needs
    /// one (CORE-2).
    pub fn new(workspace_root: impl Into<PathBuf>, config: ClientConfig) -> Result<Self> {
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
    pub fn route(&self, path: &Path, shown: &str) -> Result<Arc<ServerSpec>> {
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
    pub fn root(&self, spec: &ServerSpec, path: &Path, shown: &str) -> Result<PathBuf> {
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

    /// Every running session's state.
    pub async fn sessions(&self) -> Result<Vec<SessionReport>> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Snapshot { reply })?;
        answer.await.map_err(|_| Error::SupervisorGone)
    }

    /// Restarts the session for (server, root), or every session when `only` is `None`, and
    /// clears their crash counts. Returns a line per session.
    pub async fn reload(&self, only: Option<(Arc<ServerSpec>, PathBuf)>) -> Result<Vec<String>> {
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
    pub async fn status(&self) -> Result<Vec<ServerReport>> {
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
