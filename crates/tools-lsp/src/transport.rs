//! Server processes: spawned isolated (own process group, killed with us), their stderr kept
//! as a short tail for `status` and error messages, and their whole group killed on the way
//! out, because servers start helpers of their own (tsserver, proc-macro servers, node).

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// How many stderr lines are kept, and how long each may be.
const TAIL_LINES: usize = 20;
const TAIL_LINE_CHARS: usize = 300;

/// Puts a child in its own process group and asks Linux to kill it when we die, so that no
/// server outlives the run even when we are killed without a chance to clean up.
pub(crate) fn isolate(command: &mut Command) {
    command.process_group(0);
    #[cfg(target_os = "linux")]
    set_parent_death_signal(command);
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_parent_death_signal(command: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and only makes one prctl
    // system call, which is async-signal-safe; it touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
}

/// The last lines a process wrote to stderr.
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    fn push(&self, line: &str) {
        let mut line: String = line.trim_end().chars().take(TAIL_LINE_CHARS).collect();
        if line.is_empty() {
            return;
        }
        if line.len() == TAIL_LINE_CHARS {
            line.push('…');
        }
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    /// The kept lines, oldest first.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .map(|lines| lines.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The last `count` lines as an indented block, or nothing.
    pub(crate) fn last(&self, count: usize) -> Vec<String> {
        let lines = self.lines();
        lines[lines.len().saturating_sub(count)..].to_vec()
    }
}

/// A spawned server: the child, its pipes, and the guard that kills its group.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) group: ProcessGroup,
}

/// Spawns `argv` in `cwd`; stderr lines go to `tail`.
pub(crate) fn spawn(
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    tail: Arc<StderrTail>,
) -> std::io::Result<Spawned> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::other("the command is empty"))?;
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    isolate(&mut command);
    let mut child = command.spawn()?;
    let pid = child.id().unwrap_or_default();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the child's pipes were not set up"));
    };
    tokio::spawn(read_stderr(stderr, tail));
    Ok(Spawned {
        child,
        stdin,
        stdout,
        group: ProcessGroup::new(pid),
    })
}

async fn read_stderr(stderr: ChildStderr, tail: Arc<StderrTail>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::trace!(target: "tools_lsp::stderr", "{line}");
        tail.push(&line);
    }
}

/// A process group led by a server; dropping it kills every process in it.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    pid: u32,
}

impl ProcessGroup {
    /// The group led by the process `pid` (spawned with [`isolate`]).
    pub(crate) fn new(pid: u32) -> Self {
        ProcessGroup { pid }
    }

    /// The leader's pid (the server's).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Kills the whole group now.
    pub(crate) fn kill(&self) {
        let Some(pid) = i32::try_from(self.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return;
        };
        // ESRCH (already gone) is the common, harmless case.
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
