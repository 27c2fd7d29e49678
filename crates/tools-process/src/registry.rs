//! Process-wide bookkeeping: the process groups our handles own (for [`live_groups`] and
//! [`shutdown_all`] at exit), the children whose exit status a handle will collect (which the
//! orphan reaper must leave alone), and the signal helpers both use.
//!
//! Liveness is read from `/proc` (zombies count as ended): `kill(-pgid, 0)` would count a
//! leader that exited but is not reaped yet as alive. Reading `/proc` never blocks, so the
//! polling loops below run on the async threads.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rustix::process::{Pid, Signal};
use tokio::time::Instant;

use crate::procfs;

/// pgid → (the owning handle's ticket, the command that leads it), for every group a
/// [`crate::ProcessGroup`] owns.
static GROUPS: Mutex<BTreeMap<u32, (u64, String)>> = Mutex::new(BTreeMap::new());

/// Tickets tell an old handle from a new one when a pid number is reused: once a group is
/// empty and its leader reaped, the kernel may give its number to a new child of ours, which
/// then leads a group with the same id.
static NEXT_TICKET: AtomicU64 = AtomicU64::new(1);

/// The pids of children whose exit status a handle of ours will collect.
static TRACKED: Mutex<Option<HashSet<u32>>> = Mutex::new(None);

/// Held while a child is forked and tracked, and while the reaper reaps: a child that exits at
/// once must not be reaped between its fork and its tracking (std's spawn then panics).
static SPAWNING: Mutex<()> = Mutex::new(());

pub(crate) fn spawning() -> MutexGuard<'static, ()> {
    SPAWNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records that a handle owns group `pgid`; returns the handle's ticket.
pub(crate) fn register_group(pgid: u32, command: String) -> u64 {
    let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut groups) = GROUPS.lock() {
        groups.insert(pgid, (ticket, command));
    }
    ticket
}

/// Whether the handle holding `ticket` still owns group `pgid` (a newer child of ours has not
/// been given the same number since).
pub(crate) fn owns_group(pgid: u32, ticket: u64) -> bool {
    GROUPS
        .lock()
        .map(|groups| groups.get(&pgid).is_some_and(|(owner, _)| *owner == ticket))
        .unwrap_or(true)
}

pub(crate) fn unregister_group(pgid: u32, ticket: u64) {
    if let Ok(mut groups) = GROUPS.lock()
        && groups.get(&pgid).is_some_and(|(owner, _)| *owner == ticket)
    {
        groups.remove(&pgid);
    }
}

/// Marks a child pid as ours to reap until dropped.
#[derive(Debug)]
pub(crate) struct TrackedPid(u32);

impl TrackedPid {
    pub(crate) fn new(pid: u32) -> Self {
        if let Ok(mut tracked) = TRACKED.lock() {
            tracked.get_or_insert_with(HashSet::new).insert(pid);
        }
        TrackedPid(pid)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.0
    }
}

impl Drop for TrackedPid {
    fn drop(&mut self) {
        if let Ok(mut tracked) = TRACKED.lock()
            && let Some(tracked) = tracked.as_mut()
        {
            tracked.remove(&self.0);
        }
    }
}

pub(crate) fn is_tracked(pid: u32) -> bool {
    TRACKED
        .lock()
        .map(|tracked| tracked.as_ref().is_some_and(|set| set.contains(&pid)))
        .unwrap_or(true)
}

/// Sends `signal` to every process of group `pgid`; a group that is already gone is fine.
pub(crate) fn signal_group(pgid: u32, signal: Signal) {
    let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return;
    };
    // 0 and 1 would mean "our own group" and "init's": never signal those.
    if pgid <= 1 {
        return;
    }
    let _ = rustix::process::kill_process_group(pid, signal);
}

/// SIGKILLs a process one of our children started and told us about by pid (a debuggee a
/// debug adapter launched), and the group it leads if it leads one: such a process may have
/// left its parent's group, so killing that group does not reach it. Refuses init, this
/// process and its own group.
pub fn kill_reported(pid: u32) {
    // A contained child reports pids of its own namespace, which name other processes here;
    // what it started ends with its namespace anyway.
    if pid <= 1 || pid == std::process::id() || crate::containment().is_active() {
        return;
    }
    let Some(raw) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return;
    };
    if rustix::process::getpgrp() != raw {
        signal_group(pid, Signal::KILL);
    }
    let _ = rustix::process::kill_process(raw, Signal::KILL);
}

/// Waits until no group in `pgids` has a running process, or `deadline`; returns the groups
/// still running then.
pub(crate) async fn wait_ended(mut pgids: Vec<u32>, deadline: Instant) -> Vec<u32> {
    let mut pause = Duration::from_millis(5);
    loop {
        let stats = procfs::stats();
        pgids.retain(|pgid| {
            stats
                .iter()
                .any(|stat| stat.pgid == *pgid && !stat.is_zombie())
        });
        if pgids.is_empty() || Instant::now() >= deadline {
            return pgids;
        }
        tokio::time::sleep_until((Instant::now() + pause).min(deadline)).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// A process group a handle owns, with a process still running in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveGroup {
    pub pgid: u32,
    /// The command that leads it, as shown in messages.
    pub command: String,
}

/// Every process group a handle of this crate owns and in which a process still runs.
pub fn live_groups() -> Vec<LiveGroup> {
    let registered: Vec<(u32, String)> = GROUPS
        .lock()
        .map(|groups| {
            groups
                .iter()
                .map(|(pgid, (_, command))| (*pgid, command.clone()))
                .collect()
        })
        .unwrap_or_default();
    if registered.is_empty() {
        return Vec::new();
    }
    let stats = procfs::stats();
    registered
        .into_iter()
        .filter(|(pgid, _)| {
            stats
                .iter()
                .any(|stat| stat.pgid == *pgid && !stat.is_zombie())
        })
        .map(|(pgid, command)| LiveGroup { pgid, command })
        .collect()
}

/// What [`shutdown_all`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Groups with a running process when it began.
    pub groups: usize,
    /// Of those, how many ended within the grace after SIGTERM.
    pub ended_after_term: usize,
    /// How many were still running after the grace and got SIGKILL.
    pub killed: usize,
}

/// Ends every live group at exit: SIGTERM to each, up to `grace` for them to end, then SIGKILL
/// to the rest. The handles stay valid (dropping them later is harmless). The binary calls
/// this last, after the run's owners have had their own, gentler shutdown.
pub async fn shutdown_all(grace: Duration) -> ShutdownReport {
    let groups: Vec<u32> = live_groups().into_iter().map(|group| group.pgid).collect();
    if groups.is_empty() {
        return ShutdownReport::default();
    }
    for pgid in &groups {
        signal_group(*pgid, Signal::TERM);
    }
    let left = wait_ended(groups.clone(), Instant::now() + grace).await;
    for pgid in &left {
        tracing::debug!(pgid, "process group did not end after SIGTERM; killing it");
        signal_group(*pgid, Signal::KILL);
    }
    ShutdownReport {
        groups: groups.len(),
        ended_after_term: groups.len() - left.len(),
        killed: left.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_group_number_belongs_to_its_newest_handle() {
        // A number no real process has (above any pid_max), so nothing is signalled.
        let pgid = u32::MAX - 7;
        let old = register_group(pgid, "old".into());
        let new = register_group(pgid, "new".into());
        assert!(!owns_group(pgid, old));
        assert!(owns_group(pgid, new));
        unregister_group(pgid, old);
        assert!(
            owns_group(pgid, new),
            "the old handle's drop leaves the new entry"
        );
        unregister_group(pgid, new);
        assert!(!owns_group(pgid, new));
    }
}
