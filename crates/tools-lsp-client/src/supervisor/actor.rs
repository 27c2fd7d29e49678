//! The supervisor's actor: the one task that owns every session's entry — starting,
//! counting crashes against the budget, reloading, reporting — fed by a closed command enum.
//! Its state is one struct with a method per command; the loop only receives and dispatches.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tools_process::StderrTail;

use super::{
    Command, Context, Entry, EntryState, Forgotten, Key, SessionState, SessionStatus, StartFailure,
    Waiter,
};
use crate::discovery::{Binary, resolve_binary};
use crate::servers::ServerSpec;
use crate::session::{Session, StartOptions};
use crate::{Error, LastError};

/// Runs the actor until the supervisor shuts it down or every handle is gone.
pub(super) async fn run_actor(
    context: Arc<Context>,
    commands: mpsc::UnboundedReceiver<Command>,
    me: mpsc::WeakUnboundedSender<Command>,
) {
    Actor {
        context,
        me,
        entries: HashMap::new(),
        next_generation: 0,
        stop_reply: None,
    }
    .run(commands)
    .await;
}

/// The actor's state: every session's entry, and what it needs to start more.
struct Actor {
    context: Arc<Context>,
    /// The actor's own queue, for the start tasks and exit watchers to report back on; weak,
    /// so the actor ends when the last handle is dropped.
    me: mpsc::WeakUnboundedSender<Command>,
    entries: HashMap<Key, Entry>,
    /// The generation the last start was given: a report from an older one is stale.
    next_generation: u64,
    /// Who asked the actor to stop, told once every server has.
    stop_reply: Option<oneshot::Sender<()>>,
}

impl Actor {
    /// Receives commands and hands each to its method, then stops every server.
    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        while let Some(command) = commands.recv().await {
            if self.dispatch(command).is_break() {
                break;
            }
        }
        self.stop().await;
    }

    fn dispatch(&mut self, command: Command) -> ControlFlow<()> {
        match command {
            Command::Acquire { spec, root, reply } => self.acquire(spec, root, reply),
            Command::Started {
                key,
                generation,
                result,
            } => self.started(key, generation, result),
            Command::Exited {
                key,
                generation,
                reason,
            } => self.exited(key, generation, reason),
            Command::Reload { only, reply } => {
                let _ = reply.send(self.reload(only.as_ref()));
            }
            Command::Snapshot { reply } => {
                let _ = reply.send(self.snapshot());
            }
            Command::Shutdown { reply } => {
                self.stop_reply = Some(reply);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// Hands out the running session for (server, root), or starts one within the restart
    /// budget; callers that come while it starts wait for the same start.
    fn acquire(&mut self, spec: Arc<ServerSpec>, root: PathBuf, reply: Waiter) {
        let key = (spec.name.clone(), root.clone());
        let entry = self.entries.entry(key.clone()).or_insert_with(|| Entry {
            generation: 0,
            crashes: 0,
            last_error: None,
            tail: Arc::new(StderrTail::default()),
            state: EntryState::Down,
        });
        // A process that died a moment ago, before its watcher said so, is a crash now:
        // restart it within the budget instead of handing out a dead session.
        if let EntryState::Running(session) = &entry.state
            && !session.is_stopping()
            && !session.process_runs()
        {
            session.kill();
            entry.crashes += 1;
            tracing::warn!(server = %key.0, root = %key.1.display(), crashes = entry.crashes, "language server found dead");
            entry.last_error = Some(LastError::Crashed("the process ended".to_owned()));
            entry.state = EntryState::Down;
        }
        match &mut entry.state {
            EntryState::Running(session) => {
                let _ = reply.send(Ok(Arc::clone(session)));
            }
            EntryState::Starting(waiters) => waiters.push(reply),
            EntryState::Down if entry.crashes >= self.context.config.restart_budget => {
                let _ = reply.send(Err(Error::RestartBudget {
                    server: spec.name.clone(),
                    root,
                    crashes: entry.crashes,
                    last_error: entry.last_error.clone().map(Box::new),
                    stderr_tail: entry.tail.last(5),
                }));
            }
            EntryState::Down => {
                self.next_generation += 1;
                entry.generation = self.next_generation;
                entry.state = EntryState::Starting(vec![reply]);
                // A restarted server keeps the tail of the one that crashed until it writes
                // its own lines.
                tokio::spawn(start(
                    Arc::clone(&self.context),
                    spec,
                    root,
                    self.next_generation,
                    Arc::clone(&entry.tail),
                    self.me.clone(),
                ));
            }
        }
    }

    /// A start finished: its waiters get the session, or why there is none.
    fn started(
        &mut self,
        key: Key,
        generation: u64,
        result: std::result::Result<Arc<Session>, StartFailure>,
    ) {
        let Some(entry) = self.current(&key, generation) else {
            // Reloaded while it was starting: nobody wants this one.
            if let Ok(session) = result {
                tokio::spawn(async move { session.shutdown().await });
            }
            return;
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
            Err(StartFailure::Unusable(error)) => {
                entry.last_error = Some(LastError::Unusable(error.clone()));
                Err(error)
            }
            Err(StartFailure::Failed(error)) => {
                entry.crashes += 1;
                entry.last_error = Some(LastError::StartFailed(error.clone()));
                Err(error)
            }
        };
        for waiter in waiters {
            let _ = waiter.send(outcome.clone());
        }
    }

    /// A session's process or connection ended: a crash, unless we asked it to stop.
    fn exited(&mut self, key: Key, generation: u64, reason: String) {
        let Some(entry) = self.current(&key, generation) else {
            return;
        };
        if let EntryState::Running(session) = &entry.state {
            if session.is_stopping() {
                return;
            }
            session.kill();
            entry.crashes += 1;
            tracing::warn!(server = %key.0, root = %key.1.display(), %reason, crashes = entry.crashes, "language server crashed");
            entry.last_error = Some(LastError::Crashed(reason));
            entry.state = EntryState::Down;
        }
    }

    /// The entry of `key` when `generation` is its current start.
    fn current(&mut self, key: &Key, generation: u64) -> Option<&mut Entry> {
        self.entries
            .get_mut(key)
            .filter(|entry| entry.generation == generation)
    }

    /// Forgets the matching sessions and their crash counts, and hands back the running ones
    /// to be shut down and started again; a start under way is told it was reloaded.
    fn reload(&mut self, only: Option<&Key>) -> Vec<Forgotten> {
        let keys: Vec<Key> = self
            .entries
            .keys()
            .filter(|key| only.is_none_or(|only| only == *key))
            .cloned()
            .collect();
        let mut forgotten = Vec::new();
        for key in keys {
            let Some(entry) = self.entries.remove(&key) else {
                continue;
            };
            let Some(spec) = self.context.servers.iter().find(|s| s.name == key.0) else {
                continue;
            };
            let session = match entry.state {
                EntryState::Running(session) => Some(session),
                EntryState::Starting(waiters) => {
                    for waiter in waiters {
                        let _ = waiter.send(Err(Error::Reloaded {
                            server: key.0.clone(),
                        }));
                    }
                    None
                }
                EntryState::Down => None,
            };
            forgotten.push(Forgotten {
                spec: Arc::clone(spec),
                root: key.1,
                session,
            });
        }
        forgotten
    }

    /// Every session's state, by server and root.
    fn snapshot(&self) -> Vec<SessionStatus> {
        let mut sessions: Vec<SessionStatus> = self
            .entries
            .iter()
            .map(|((server, root), entry)| status(server, root, entry))
            .collect();
        sessions.sort_by(|a, b| (&a.server, &a.root).cmp(&(&b.server, &b.root)));
        sessions
    }

    /// Ends every session: nobody waiting for a start gets a session any more (a start still
    /// running ends with its session dropped, which kills its process group), and the
    /// running servers are stopped politely, all at once.
    async fn stop(mut self) {
        for entry in self.entries.values_mut() {
            if let EntryState::Starting(waiters) =
                std::mem::replace(&mut entry.state, EntryState::Down)
            {
                for waiter in waiters {
                    let _ = waiter.send(Err(Error::SupervisorGone));
                }
            }
        }
        let sessions: Vec<Arc<Session>> = self
            .entries
            .into_values()
            .filter_map(|entry| match entry.state {
                EntryState::Running(session) => Some(session),
                _ => None,
            })
            .collect();
        futures::future::join_all(sessions.iter().map(|session| session.shutdown())).await;
        if let Some(reply) = self.stop_reply {
            let _ = reply.send(());
        }
    }
}

fn status(server: &str, root: &Path, entry: &Entry) -> SessionStatus {
    let (state, pid) = match &entry.state {
        EntryState::Starting(_) => (SessionState::Starting, None),
        EntryState::Running(session) => (
            SessionState::Running(session.activity()),
            Some(session.pid()),
        ),
        EntryState::Down => (SessionState::Down, None),
    };
    let mut last_error = entry.last_error.clone();
    if last_error.is_none()
        && let EntryState::Running(session) = &entry.state
    {
        last_error = session
            .shared
            .state()
            .messages
            .back()
            .cloned()
            .map(LastError::Reported);
    }
    SessionStatus {
        server: server.to_owned(),
        root: root.to_path_buf(),
        state,
        pid,
        crashes: entry.crashes,
        last_error,
        stderr_tail: entry.tail.last(8),
    }
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
    let search = context.search_path(Some(&root));
    let sandbox = context.sandbox.as_ref();
    // A sandbox refused as the run began: the server cannot start here, and every call says
    // why in the words of the sandbox check rather than in a probe's or a spawn's.
    let binary = match sandbox.and_then(|sandbox| sandbox.refusal()) {
        Some(refusal) => Err(Error::Sandbox {
            server: spec.name.clone(),
            refusal: Arc::clone(refusal),
        }),
        None => Ok(resolve_binary(&spec, &search, &root, sandbox).await),
    };
    let result = match binary {
        Err(refused) => Err(StartFailure::Unusable(refused)),
        Ok(Binary::Missing(missing)) => Err(StartFailure::Unusable(Error::NoBinary {
            server: spec.name.clone(),
            root: root.clone(),
            missing: Box::new(missing),
        })),
        Ok(Binary::Found { argv, .. }) => {
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
                argv,
                tail,
                request_timeout: context.config.request_timeout,
                start_timeout: context.config.start_timeout,
                index_timeout: context.config.index_timeout,
                server_nanos: Arc::clone(&context.server_nanos),
                on_busy: Arc::clone(&context.on_busy),
                sandbox: context.sandbox.clone(),
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
