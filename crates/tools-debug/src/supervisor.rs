//! The debug-session supervisor: one session per conversation (DBG-4), the breakpoints a
//! conversation set (before or during a session), the hard TTL, and the run's shutdown.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use tokio::task::JoinHandle;
use tools_core::Shutdown;

use crate::session::{Session, Timeouts};

/// `[debug]` in `agent-tools.toml`; every field has a default.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebugConfig {
    /// The hard lifetime of a session, in seconds (DBG-4: 30 minutes); then the adapter and
    /// the debuggee are killed.
    pub session_ttl_seconds: u64,
    /// How long a control operation (`launch`, `continue`, a step, `pause`) waits for the
    /// program to stop or exit before answering "still running", in seconds.
    pub stop_timeout_seconds: u64,
    /// How long one request to the adapter may take, in seconds.
    pub request_timeout_seconds: u64,
    /// How long starting an adapter and its handshake may take, in seconds.
    pub start_timeout_seconds: u64,
}

impl Default for DebugConfig {
    fn default() -> Self {
        DebugConfig {
            session_ttl_seconds: 30 * 60,
            stop_timeout_seconds: 30,
            request_timeout_seconds: 30,
            start_timeout_seconds: 30,
        }
    }
}

impl DebugConfig {
    pub(crate) fn timeouts(&self) -> Timeouts {
        Timeouts {
            request: Duration::from_secs(self.request_timeout_seconds.max(1)),
            startup: Duration::from_secs(self.start_timeout_seconds.max(1)),
        }
    }

    pub(crate) fn stop_timeout(&self) -> Duration {
        Duration::from_secs(self.stop_timeout_seconds.max(1))
    }
}

/// Keeps the debug sessions of a run, one per conversation. Cheap to clone.
#[derive(Clone)]
pub struct DebugSupervisor {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for DebugSupervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DebugSupervisor")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: DebugConfig,
    conversations: Mutex<HashMap<String, Conversation>>,
}

#[derive(Default)]
struct Conversation {
    live: Option<Live>,
    breakpoints: BTreeMap<PathBuf, Vec<u32>>,
    /// What became of the last session, told once by the next call (an expiry).
    notice: Option<String>,
    /// What became of the last session, for `status`.
    last: Option<String>,
    /// The last session once it ended, kept until the next launch so that `output` can still
    /// read what its program printed (its processes are gone; only its record stays).
    ended: Option<Arc<Session>>,
    generation: u64,
}

struct Live {
    session: Arc<Session>,
    generation: u64,
    ttl: JoinHandle<()>,
}

impl DebugSupervisor {
    /// A supervisor with no sessions.
    pub fn new(config: DebugConfig) -> Self {
        DebugSupervisor {
            inner: Arc::new(Inner {
                config,
                conversations: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &DebugConfig {
        &self.inner.config
    }

    fn with<T>(&self, conversation: &str, f: impl FnOnce(&mut Conversation) -> T) -> T {
        let mut all = match self.inner.conversations.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(all.entry(conversation.to_owned()).or_default())
    }

    /// The conversation's live session.
    pub(crate) fn session(&self, conversation: &str) -> Option<Arc<Session>> {
        self.with(conversation, |c| {
            c.live.as_ref().map(|l| Arc::clone(&l.session))
        })
    }

    /// A notice about the last session the conversation has not heard yet (it expired).
    pub(crate) fn take_notice(&self, conversation: &str) -> Option<String> {
        self.with(conversation, |c| c.notice.take())
    }

    /// What became of the last session.
    pub(crate) fn last(&self, conversation: &str) -> Option<String> {
        self.with(conversation, |c| c.last.clone())
    }

    /// The last session once it ended, until the next one is installed.
    pub(crate) fn ended(&self, conversation: &str) -> Option<Arc<Session>> {
        self.with(conversation, |c| c.ended.clone())
    }

    /// The breakpoints set, by file.
    pub(crate) fn breakpoints(&self, conversation: &str) -> BTreeMap<PathBuf, Vec<u32>> {
        self.with(conversation, |c| c.breakpoints.clone())
    }

    /// Remembers one file's breakpoints (empty clears it).
    pub(crate) fn set_breakpoints(&self, conversation: &str, file: PathBuf, lines: Vec<u32>) {
        self.with(conversation, |c| {
            if lines.is_empty() {
                c.breakpoints.remove(&file);
            } else {
                c.breakpoints.insert(file, lines);
            }
        });
    }

    /// Makes `session` the conversation's live one and starts its TTL.
    pub(crate) fn install(&self, conversation: &str, session: Session) -> Arc<Session> {
        let session = Arc::new(session);
        let ttl = Duration::from_secs(self.inner.config.session_ttl_seconds);
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let key = conversation.to_owned();
        self.with(conversation, |c| {
            c.ended = None;
            c.generation += 1;
            let generation = c.generation;
            let timer = tokio::spawn(async move {
                tokio::time::sleep(ttl).await;
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let supervisor = DebugSupervisor { inner };
                let expired = supervisor.with(&key, |c| {
                    if c.live.as_ref().is_some_and(|l| l.generation == generation) {
                        let live = c.live.take()?;
                        let note = format!(
                            "the debug session of {} expired: it reached its time limit of {} \
                             (`[debug] session_ttl_seconds`), and its adapter and program were \
                             killed; launch again to go on",
                            live.session.program,
                            describe_seconds(ttl.as_secs())
                        );
                        c.notice = Some(note.clone());
                        c.last = Some(note);
                        c.ended = Some(Arc::clone(&live.session));
                        Some(live.session)
                    } else {
                        None
                    }
                });
                if let Some(session) = expired {
                    session.end().await;
                }
            });
            c.live = Some(Live {
                session: Arc::clone(&session),
                generation,
                ttl: timer,
            });
        });
        session
    }

    /// Ends the conversation's session (if any), remembering `last` for `status`.
    pub(crate) async fn finish(&self, conversation: &str, last: String) -> bool {
        let live = self.with(conversation, |c| {
            c.last = Some(last);
            let live = c.live.take();
            if let Some(live) = &live {
                c.ended = Some(Arc::clone(&live.session));
            }
            live
        });
        match live {
            Some(live) => {
                live.ttl.abort();
                live.session.end().await;
                true
            }
            None => false,
        }
    }

    /// Ends every session now, side by side.
    pub async fn end_all(&self) {
        let sessions: Vec<Live> = {
            let mut all = match self.inner.conversations.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            all.values_mut().filter_map(|c| c.live.take()).collect()
        };
        futures::future::join_all(sessions.into_iter().map(|live| async move {
            live.ttl.abort();
            live.session.end().await;
        }))
        .await;
    }
}

impl Shutdown for DebugSupervisor {
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.end_all())
    }
}

fn describe_seconds(seconds: u64) -> String {
    if seconds >= 60 && seconds.is_multiple_of(60) {
        format!("{} minutes", seconds / 60)
    } else {
        format!("{seconds} s")
    }
}
