//! A running child: its leader process (the one we spawned), the process group it leads, and
//! its pipes. Dropping any of them errs on the side of killing: a dropped [`Leader`] SIGKILLs
//! the leader, a dropped [`ProcessGroup`] SIGKILLs the whole group.

use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use rustix::process::Signal;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::time::Instant;

use crate::registry::{self, TrackedPid};
use crate::{Error, Result, procfs};

/// A spawned child and the group it leads.
#[derive(Debug)]
pub struct Child {
    leader: Leader,
    group: ProcessGroup,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
}

/// A [`Child`] taken apart, so that pipes, the leader and the group can be owned by different
/// tasks (a transport owns the pipes, a watcher waits on the leader, a session holds the group).
#[derive(Debug)]
pub struct ChildParts {
    pub leader: Leader,
    pub group: ProcessGroup,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

/// How [`Child::terminate`] ended a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Termination {
    /// The leader's exit status.
    pub status: ExitStatus,
    /// Whether SIGKILL was needed: something in the group was still running after the grace.
    pub killed: bool,
}

impl Child {
    pub(crate) fn new(
        leader: Leader,
        group: ProcessGroup,
        (stdin, stdout, stderr): (Option<ChildStdin>, Option<ChildStdout>, Option<ChildStderr>),
    ) -> Self {
        Child {
            leader,
            group,
            stdin,
            stdout,
            stderr,
        }
    }

    /// The leader's pid, which is also its group's id.
    pub fn pid(&self) -> u32 {
        self.leader.pid
    }

    /// The pid of the program this child runs, as the machine's process table shows it: the
    /// leader's pid, or for a contained child the process its keeper forked to exec the
    /// program in (see [`crate::containment`]). Say this one to people and models.
    pub fn program_pid(&self) -> u32 {
        self.leader.program_pid()
    }

    /// The command line, as shown in messages.
    pub fn command(&self) -> &str {
        &self.leader.command
    }

    /// The group it leads.
    pub fn group(&self) -> &ProcessGroup {
        &self.group
    }

    /// Its stdin pipe, when [`crate::Input::Piped`] (once).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// Its stdout pipe, when [`crate::Output::Piped`] (once).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// Its stderr pipe, when [`crate::Output::Piped`] (once).
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.stderr.take()
    }

    /// Waits for the leader to exit. What it started stays until the group is terminated or
    /// dropped.
    pub async fn wait(&mut self) -> Result<ExitStatus> {
        self.leader.wait().await
    }

    /// The leader's exit status if it has exited, without waiting.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        self.leader.try_wait()
    }

    /// Ends the child and its whole group: SIGTERM to the group, up to the command's grace for
    /// every process in it to end, then SIGKILL to the group; the leader is reaped.
    pub async fn terminate(&mut self) -> Result<Termination> {
        let mut killed = self.group.terminate().await;
        // A leader that left its group (setsid) got nothing above; it gets the grace too.
        let status = match tokio::time::timeout(self.group.grace, self.leader.wait()).await {
            Ok(status) => status?,
            Err(_) => {
                killed = true;
                self.leader.start_kill();
                self.leader.wait().await?
            }
        };
        Ok(Termination { status, killed })
    }

    /// SIGKILLs the group and the leader now, without waiting.
    pub fn kill(&mut self) {
        self.group.kill();
        self.leader.start_kill();
    }

    /// Takes the child apart.
    pub fn into_parts(self) -> ChildParts {
        ChildParts {
            leader: self.leader,
            group: self.group,
            stdin: self.stdin,
            stdout: self.stdout,
            stderr: self.stderr,
        }
    }
}

/// The process we spawned. Dropping it SIGKILLs the process (its group is the
/// [`ProcessGroup`]'s business); tokio then reaps it in the background.
#[derive(Debug)]
pub struct Leader {
    child: tokio::process::Child,
    pid: u32,
    command: Arc<str>,
    /// For a contained child (its leader is a keeper): the machine pids of its namespace's
    /// init and of the program.
    namespace: Option<procfs::Namespace>,
    /// Keeps the orphan reaper off this pid while we may still wait for it.
    _tracked: TrackedPid,
}

impl Leader {
    pub(crate) fn new(
        child: tokio::process::Child,
        tracked: TrackedPid,
        command: Arc<str>,
        contained: bool,
    ) -> Self {
        let pid = tracked.pid();
        Leader {
            child,
            pid,
            command,
            // std returns from spawn once the program has exec'ed: both are forked by now.
            namespace: contained
                .then(|| procfs::namespace_of_keeper(pid))
                .flatten(),
            _tracked: tracked,
        }
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The program's pid on the machine: see [`Child::program_pid`].
    pub fn program_pid(&self) -> u32 {
        self.namespace
            .map_or(self.pid, |namespace| namespace.program)
    }

    /// Waits for it to exit and reaps it. For a contained child, also until its namespace is
    /// gone (up to 2 s): a SIGKILL to the group ends the keeper at once, while the program and
    /// what it started take a moment more to exit, and a caller that waited expects them gone.
    pub async fn wait(&mut self) -> Result<ExitStatus> {
        let status = self.child.wait().await.map_err(|source| Error::Io {
            action: "waiting for",
            command: self.command.to_string(),
            source,
        })?;
        if let Some(namespace) = self.namespace {
            namespace.ended(Duration::from_secs(2)).await;
        }
        Ok(status)
    }

    /// Its exit status if it has exited, without waiting.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        self.child.try_wait().map_err(|source| Error::Io {
            action: "waiting for",
            command: self.command.to_string(),
            source,
        })
    }

    /// SIGKILLs it (not its group) without waiting; a process that has already exited is fine.
    pub fn start_kill(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The process group a spawned child leads (its id is the leader's pid). Dropping it SIGKILLs
/// every process still in the group: servers start helpers of their own (tsserver,
/// proc-macro servers, rustc under `cargo check`), and they go with it.
///
/// A process that moves itself to another group or session (a daemon) escapes the group; the
/// subreaper still reaps it once it exits, but nothing here kills it.
///
/// The kernel keeps a group's number from being reused while any process is in the group.
/// Once it is empty, the number may go to a new child of ours, which leads a group of the same
/// id; the handle then stops signalling it (the registry knows the newer owner).
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: u32,
    /// The leader's program (the leader itself unless contained).
    program: u32,
    grace: Duration,
    ticket: u64,
}

impl ProcessGroup {
    pub(crate) fn new(pgid: u32, program: u32, command: Arc<str>, grace: Duration) -> Self {
        let ticket = registry::register_group(pgid, command.to_string());
        ProcessGroup {
            pgid,
            program,
            grace,
            ticket,
        }
    }

    /// The group's id (the leader's pid).
    pub fn pgid(&self) -> u32 {
        self.pgid
    }

    /// The leader's program's pid on the machine: see [`Child::program_pid`].
    pub fn program_pid(&self) -> u32 {
        self.program
    }

    /// How long [`ProcessGroup::terminate`] waits between SIGTERM and SIGKILL.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// Whether the leader's program is still running (not exited, not a zombie waiting to be
    /// reaped): for a contained child, the program its keeper runs, which ends a moment
    /// before the keeper does.
    pub fn leader_runs(&self) -> bool {
        procfs::read_stat(self.program)
            .is_some_and(|stat| stat.pgid == self.pgid && !stat.is_zombie())
    }

    /// Whether any process of the group is still running (the leader, or what it started).
    pub fn is_alive(&self) -> bool {
        procfs::group_alive(self.pgid)
    }

    /// The CPU time its processes have used so far: a server that is still working (an
    /// analysis that reports no progress) keeps adding to it.
    pub fn cpu_time(&self) -> Duration {
        procfs::group_cpu_time(self.pgid)
    }

    /// SIGINTs every process in the group: a kernel's cell stops with `KeyboardInterrupt` and
    /// the kernel lives on, and what the cell started (`!cmd`) is interrupted with it.
    pub fn interrupt(&self) {
        self.signal(Signal::INT);
    }

    /// SIGKILLs every process in the group now.
    pub fn kill(&self) {
        self.signal(Signal::KILL);
    }

    /// SIGTERMs every process in the group, without waiting (see [`ProcessGroup::terminate`]
    /// for TERM, grace, KILL).
    pub fn term(&self) {
        self.signal(Signal::TERM);
    }

    fn signal(&self, signal: Signal) {
        if registry::owns_group(self.pgid, self.ticket) {
            registry::signal_group(self.pgid, signal);
        }
    }

    /// SIGTERM to the group, up to the grace for every process in it to end, then SIGKILL to
    /// whatever still runs. Returns whether SIGKILL was needed.
    pub async fn terminate(&self) -> bool {
        if !self.is_alive() {
            return false;
        }
        self.signal(Signal::TERM);
        let left = registry::wait_ended(vec![self.pgid], Instant::now() + self.grace).await;
        if left.is_empty() {
            return false;
        }
        self.kill();
        true
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
        registry::unregister_group(self.pgid, self.ticket);
    }
}
