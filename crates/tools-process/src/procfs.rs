//! What Linux's `/proc` says about processes: parent, group, state, command line and
//! environment. The reaper and group liveness checks read it, and so do tests that look for
//! "their" processes by an environment mark. Read with std: these files never block.

use std::path::Path;

/// One process as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    pub pid: u32,
    /// Its parent (0 for the kernel's own).
    pub ppid: u32,
    /// Its process group.
    pub pgid: u32,
    /// The state letter of `/proc/<pid>/stat`: `R`, `S`, `D`, `Z` (zombie), …
    pub state: char,
    /// Its arguments; empty for zombies and kernel threads.
    pub cmdline: Vec<String>,
}

impl ProcessInfo {
    /// Whether it has exited and only waits to be reaped (a zombie, or dead).
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// The stat line's fields we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) pid: u32,
    pub(crate) ppid: u32,
    pub(crate) pgid: u32,
    pub(crate) state: char,
    /// User and system CPU time so far, in clock ticks.
    pub(crate) cpu_ticks: u64,
}

impl Stat {
    pub(crate) fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Every process visible in `/proc` (a process that ends while we read is left out).
pub fn list_processes() -> Vec<ProcessInfo> {
    stats().into_iter().map(with_cmdline).collect()
}

/// One process, if it exists.
pub fn process_info(pid: u32) -> Option<ProcessInfo> {
    read_stat(pid).map(with_cmdline)
}

/// The value of `name` in the environment `pid` was started with; `None` when it is not set
/// or the environment cannot be read (another user's process, a zombie).
pub fn process_env_var(pid: u32, name: &str) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    environ
        .split(|&byte| byte == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

fn with_cmdline(stat: Stat) -> ProcessInfo {
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", stat.pid))
        .map(|bytes| {
            bytes
                .split(|&byte| byte == 0)
                .filter(|arg| !arg.is_empty())
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect()
        })
        .unwrap_or_default();
    ProcessInfo {
        pid: stat.pid,
        ppid: stat.ppid,
        pgid: stat.pgid,
        state: stat.state,
        cmdline,
    }
}

/// A contained child's namespace, by the machine pids of its init and its program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Namespace {
    pub(crate) init: u32,
    pub(crate) program: u32,
}

impl Namespace {
    /// Waits until the namespace's init has exited, or `limit`. The kernel ends an init only
    /// once every other process of its namespace has been reaped (pid_namespaces(7)), so then
    /// nothing of the namespace runs.
    pub(crate) async fn ended(self, limit: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        let mut pause = std::time::Duration::from_millis(1);
        while read_stat(self.init).is_some_and(|stat| !stat.is_zombie())
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_millis(50));
        }
    }
}

/// The namespace a keeper made: its children are the namespace's init (pid 1 there, forked
/// first) and the program (pid 2 there).
pub(crate) fn namespace_of_keeper(keeper: u32) -> Option<Namespace> {
    let children = std::fs::read_to_string(format!("/proc/{keeper}/task/{keeper}/children"))
        .map(|text| {
            text.split_whitespace()
                .filter_map(|pid| pid.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .unwrap_or_else(|_| {
            stats()
                .into_iter()
                .filter(|stat| stat.ppid == keeper)
                .map(|stat| stat.pid)
                .collect()
        });
    let inner_pid = |pid: u32| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|line| line.starts_with("NSpid:"))?;
        line.split_whitespace().last()?.parse::<u32>().ok()
    };
    let (mut init, mut program) = (None, None);
    for pid in children {
        match inner_pid(pid) {
            Some(1) => init = Some(pid),
            Some(2) => program = Some(pid),
            _ => {}
        }
    }
    Some(Namespace {
        init: init?,
        program: program?,
    })
}

/// The stat of every process.
pub(crate) fn stats() -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// Whether any process of group `pgid` is still running (zombies do not count: they have
/// ended and only wait for their parent).
pub(crate) fn group_alive(pgid: u32) -> bool {
    stats()
        .iter()
        .any(|stat| stat.pgid == pgid && !stat.is_zombie())
}

/// The CPU time the processes of group `pgid` have used so far (those still alive or not yet
/// reaped).
pub(crate) fn group_cpu_time(pgid: u32) -> std::time::Duration {
    let ticks: u64 = stats()
        .iter()
        .filter(|stat| stat.pgid == pgid)
        .map(|stat| stat.cpu_ticks)
        .sum();
    let per_second = rustix::param::clock_ticks_per_second().max(1);
    std::time::Duration::from_millis(ticks.saturating_mul(1000) / per_second)
}

pub(crate) fn read_stat(pid: u32) -> Option<Stat> {
    let text =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    parse_stat(&text)
}

/// `pid (comm) state ppid pgrp …`; the command name may hold spaces and parentheses, so the
/// fields are read after its last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let (head, tail) = text.rsplit_once(')')?;
    let pid = head.split_whitespace().next()?.parse().ok()?;
    let mut fields = tail.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    // session, tty, tpgid, flags, four fault counters, then utime and stime.
    let utime: u64 = fields.nth(8)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Stat {
        pid,
        ppid,
        pgid,
        state,
        cpu_ticks: utime + stime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_after_the_command_name() {
        let stat = parse_stat(
            "4242 (a (weird) name) S 17 4240 4240 0 -1 4194560 2107 0 3 0 125 31 0 0 20 0 1 0 …",
        );
        assert_eq!(
            stat,
            Some(Stat {
                pid: 4242,
                ppid: 17,
                pgid: 4240,
                state: 'S',
                cpu_ticks: 156,
            })
        );
    }

    #[test]
    fn this_process_is_listed_with_its_environment() {
        let pid = std::process::id();
        let me = process_info(pid).unwrap();
        assert_eq!(me.pid, pid);
        assert!(!me.is_zombie());
        assert!(!me.cmdline.is_empty());
        assert!(list_processes().iter().any(|process| process.pid == pid));
        let path = std::env::var("PATH").unwrap();
        assert_eq!(process_env_var(pid, "PATH"), Some(path));
        assert_eq!(process_env_var(pid, "TOOLS_PROCESS_NOT_SET_ANYWHERE"), None);
    }

    #[test]
    fn a_groups_cpu_time_grows_while_it_works() {
        let pgid = rustix::process::getpgrp().as_raw_pid() as u32;
        let before = group_cpu_time(pgid);
        let started = std::time::Instant::now();
        let mut spin = 0u64;
        while started.elapsed() < std::time::Duration::from_millis(300) {
            spin = std::hint::black_box(spin.wrapping_add(1));
        }
        let after = group_cpu_time(pgid);
        assert!(
            after >= before + std::time::Duration::from_millis(100),
            "{before:?} → {after:?}"
        );
    }
}
