//! When a 2025-11-25 session is abandoned. rmcp's own rule ends a session after 5 minutes
//! without a message either way, which also ends a long call that is silent for that long (a
//! cell, a project check, `vibe_wait`) while its client waits on the stream. Here a session
//! is idle only when none of its streams is open and its client has sent nothing for
//! [`IDLE`]: a client that waits on a call, or listens on the session's stream, keeps it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio_util::sync::CancellationToken;

/// How long a session may go with no open stream and no request before it is ended, and
/// its calls with it.
pub(crate) const IDLE: Duration = Duration::from_secs(5 * 60);

/// How often idle sessions are looked for.
const SWEEP: Duration = Duration::from_secs(15);

/// A session's open streams and its last request.
struct Activity {
    open: usize,
    last: Instant,
}

/// The sessions the server has seen, and what keeps each alive.
#[derive(Clone, Default)]
pub(crate) struct Sessions {
    seen: Arc<Mutex<HashMap<String, Activity>>>,
}

/// An open stream of a session; the session counts it until this is dropped.
pub(crate) struct Open {
    sessions: Sessions,
    id: String,
}

impl Drop for Open {
    fn drop(&mut self) {
        if let Ok(mut seen) = self.sessions.seen.lock()
            && let Some(activity) = seen.get_mut(&self.id)
        {
            activity.open = activity.open.saturating_sub(1);
            activity.last = Instant::now();
        }
    }
}

impl Sessions {
    /// A request of session `id` came, and its answer's stream stays open while the
    /// returned guard lives.
    pub(crate) fn open(&self, id: &str) -> Open {
        if let Ok(mut seen) = self.seen.lock() {
            let activity = seen.entry(id.to_owned()).or_insert(Activity {
                open: 0,
                last: Instant::now(),
            });
            activity.open += 1;
            activity.last = Instant::now();
        }
        Open {
            sessions: self.clone(),
            id: id.to_owned(),
        }
    }

    /// Session `id` ended (its client deleted it).
    pub(crate) fn ended(&self, id: &str) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.remove(id);
        }
    }

    /// The sessions idle for `idle` or longer, taken off the list.
    fn take_idle(&self, idle: Duration) -> Vec<String> {
        let Ok(mut seen) = self.seen.lock() else {
            return Vec::new();
        };
        let ids: Vec<String> = seen
            .iter()
            .filter(|(_, activity)| activity.open == 0 && activity.last.elapsed() >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            seen.remove(id);
        }
        ids
    }

    /// Ends idle sessions in `manager` until `stop`.
    pub(crate) async fn sweep(self, manager: Arc<LocalSessionManager>, stop: CancellationToken) {
        let mut every = tokio::time::interval(SWEEP);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = stop.cancelled() => return,
            }
            for id in self.take_idle(IDLE) {
                tracing::info!(session = %id, "ending a session idle for {} min", IDLE.as_secs() / 60);
                if let Err(error) = manager.close_session(&id.into()).await {
                    tracing::warn!(%error, "cannot end an idle session");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_with_an_open_stream_is_never_idle() {
        let sessions = Sessions::default();
        let waiting = sessions.open("a");
        drop(sessions.open("b"));
        assert_eq!(sessions.take_idle(Duration::ZERO), vec!["b".to_owned()]);
        assert!(sessions.take_idle(Duration::ZERO).is_empty());
        drop(waiting);
        assert_eq!(sessions.take_idle(Duration::ZERO), vec!["a".to_owned()]);
        let late = sessions.open("c");
        drop(late);
        assert!(sessions.take_idle(Duration::from_secs(60)).is_empty());
    }
}
