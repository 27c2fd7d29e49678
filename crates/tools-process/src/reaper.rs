//! Reaping what outlives its parent. `serve` makes itself a child subreaper, so a grandchild
//! whose parent exits (rustc under a killed `cargo check`, a node worker of a restarted
//! tsserver) is re-parented to us instead of to init; once it exits it is our zombie to reap.
//!
//! The choice: `waitpid(-1, WNOHANG)` would also reap the children tokio is waiting for (their
//! `wait` then fails with ECHILD, and std's spawn panics if it loses an exec-failure child).
//! So the reaper reads `/proc` for zombies whose parent is us and reaps each by its own pid,
//! skipping
//! - pids a handle of ours still owns ([`crate::Leader`]): tokio reaps those;
//! - processes in our own process group: children spawned without this crate (which gives
//!   every child a group of its own) are there, and their owners reap them.
//!
//! What is left are re-parented grandchildren, always in a group that is not ours. A check
//! runs under the spawn lock, so a child forked but not yet tracked is never taken. This
//! relies on the workspace's rule that every child is spawned through this crate: a child
//! spawned elsewhere *with its own group* could be reaped from under its owner.

use std::time::Duration;

use rustix::process::{Pid, WaitOptions};
use tokio::task::JoinHandle;

use crate::registry;
use crate::{Error, Result, procfs};

/// Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER): orphaned descendants are
/// re-parented to it. Reap them with [`spawn_orphan_reaper`].
pub fn become_subreaper() -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid())).map_err(|errno| {
            Error::Os {
                action: "become a child subreaper",
                source: errno.into(),
            }
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(Error::Os {
            action: "become a child subreaper",
            source: std::io::ErrorKind::Unsupported.into(),
        })
    }
}

/// Reaps every exited orphan re-parented to us (see the module docs for which children count
/// as orphans); returns how many were reaped. Reads `/proc`; call it off the async threads or
/// let [`spawn_orphan_reaper`] do it.
pub fn reap_orphans() -> usize {
    let _spawning = registry::spawning();
    let me = std::process::id();
    let our_group = rustix::process::getpgrp().as_raw_nonzero().get() as u32;
    let mut reaped = 0;
    for stat in procfs::stats() {
        if stat.ppid != me
            || !stat.is_zombie()
            || stat.pgid == our_group
            || registry::is_tracked(stat.pid)
        {
            continue;
        }
        let Some(pid) = i32::try_from(stat.pid).ok().and_then(Pid::from_raw) else {
            continue;
        };
        if let Ok(Some(_)) = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG) {
            tracing::trace!(pid = stat.pid, pgid = stat.pgid, "reaped an orphan");
            reaped += 1;
        }
    }
    reaped
}

/// The background task reaping orphans on every SIGCHLD, and every second in case signals
/// coalesced. Like a tokio `JoinHandle`, dropping this leaves the task running (it is meant to
/// run as long as the process); [`OrphanReaper::stop`] ends it.
#[derive(Debug)]
pub struct OrphanReaper {
    task: JoinHandle<()>,
}

impl OrphanReaper {
    /// Stops the task.
    pub fn stop(self) {
        self.task.abort();
    }
}

/// Starts the orphan reaper on the current tokio runtime (call it inside one). Pair it with
/// [`become_subreaper`]; without that, no orphan is ever re-parented to us and it finds none.
pub fn spawn_orphan_reaper() -> OrphanReaper {
    let task = tokio::spawn(async {
        let mut sigchld =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            match sigchld.as_mut() {
                Some(sigchld) => {
                    tokio::select! {
                        _ = sigchld.recv() => {}
                        _ = tick.tick() => {}
                    }
                }
                None => {
                    tick.tick().await;
                }
            }
            let _ = tokio::task::spawn_blocking(reap_orphans).await;
        }
    });
    OrphanReaper { task }
}
