//! The supervisor's actor: the one task that owns every session's entry — starting,
//! counting crashes against the budget, reloading, reporting — fed by a closed command enum.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc;
use tools_process::StderrTail;

use super::{
    Command, Context, Entry, EntryState, Forgotten, Key, SessionState, SessionStatus, StartFailure,
};
use crate::discovery::{Binary, resolve_binary};
use crate::servers::ServerSpec;
use crate::session::{Session, StartOptions};
use crate::{Error, LastError};

pub(super) async fn run_actor(
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
                    entry.last_error = Some(LastError::Crashed("the process ended".to_owned()));
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
                            root,
                            crashes: entry.crashes,
                            last_error: entry.last_error.clone().map(Box::new),
                            stderr_tail: entry.tail.last(5),
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
                    entry.last_error = Some(LastError::Crashed(reason));
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
                                let _ = waiter.send(Err(Error::Reloaded {
                                    server: key.0.clone(),
                                }));
                            }
                            None
                        }
                        EntryState::Down => None,
                    };
                    reloaded.push(Forgotten {
                        spec: Arc::clone(spec),
                        root: key.1,
                        session,
                    });
                }
                let _ = reply.send(reloaded);
            }
            Command::Snapshot { reply } => {
                let mut sessions: Vec<SessionStatus> = entries
                    .iter()
                    .map(|((server, root), entry)| status(server, root, entry))
                    .collect();
                sessions.sort_by(|a, b| (&a.server, &a.root).cmp(&(&b.server, &b.root)));
                let _ = reply.send(sessions);
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
    let result = match resolve_binary(&spec, &search, &root).await {
        Binary::Missing(missing) => Err(StartFailure::Unusable(Error::NoBinary {
            server: spec.name.clone(),
            root: root.clone(),
            missing: Box::new(missing),
        })),
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
                argv,
                tail,
                request_timeout: context.config.request_timeout,
                start_timeout: context.config.start_timeout,
                index_timeout: context.config.index_timeout,
                server_nanos: Arc::clone(&context.server_nanos),
                on_busy: Arc::clone(&context.on_busy),
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
