//! The one way to start a child: a [`Command`] names the program, its arguments, its folder
//! (always explicit), its environment, what becomes of its stdio, the sandbox it runs in and
//! how long it gets to stop; [`Command::spawn`] starts it in its own process group with a
//! parent-death signal.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::child::{Child, Leader, ProcessGroup};
use crate::{Error, Result, Sandbox, StderrTail};

/// The environment variable `serve --http` may take its bearer token from; it is removed
/// from every child's environment.
pub const TOKEN_ENV: &str = "AGENT_TOOLS_TOKEN";

/// How long a child gets between SIGTERM and SIGKILL unless its command says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// What the child reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Input {
    /// Nothing: its stdin is `/dev/null`.
    #[default]
    Null,
    /// A pipe, taken with [`Child::take_stdin`].
    Piped,
}

/// Where one of the child's output streams goes. There is deliberately no "inherit": our own
/// stdout is the MCP transport, and a child writing into it would corrupt the protocol.
#[derive(Debug, Clone, Default)]
pub enum Output {
    /// A pipe, taken with [`Child::take_stdout`] / [`Child::take_stderr`]; read it, or the
    /// child blocks once the pipe is full.
    #[default]
    Piped,
    /// Discarded (`/dev/null`).
    Null,
    /// Read to its end by a task of ours; the last lines are kept in the tail and every line
    /// is trace-logged.
    Tail(Arc<StderrTail>),
}

#[derive(Debug, Clone)]
enum EnvChange {
    Set(OsString, OsString),
    Remove(OsString),
    Clear,
}

/// A child to start. Build it, then [`Command::spawn`] it (as often as needed) or hand it to
/// [`crate::run_to_end`]. Defaults: no stdin, stdout and stderr piped, our environment, no
/// sandbox, [`DEFAULT_GRACE`].
#[derive(Debug, Clone)]
pub struct Command {
    program: OsString,
    args: Vec<OsString>,
    cwd: PathBuf,
    env: Vec<EnvChange>,
    stdin: Input,
    stdout: Output,
    stderr: Output,
    sandbox: Option<Sandbox>,
    grace: Duration,
    contained: bool,
}

impl Command {
    /// `program` (a path, or a name looked up in `PATH` at spawn; resolve it with
    /// [`crate::SearchPath`] first where the project's own tools should win), run in `cwd`.
    pub fn new(program: impl AsRef<OsStr>, cwd: impl Into<PathBuf>) -> Self {
        Command {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            stdin: Input::default(),
            stdout: Output::default(),
            stderr: Output::default(),
            sandbox: None,
            grace: DEFAULT_GRACE,
            contained: true,
        }
    }

    /// A whole command line (program first), run in `cwd`.
    pub fn from_argv<S: AsRef<OsStr>>(argv: &[S], cwd: impl Into<PathBuf>) -> Result<Self> {
        let (program, args) = argv.split_first().ok_or(Error::EmptyCommand)?;
        Ok(Command::new(program, cwd).args(args))
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    /// Sets one environment variable.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env.push(EnvChange::Set(
            key.as_ref().to_owned(),
            value.as_ref().to_owned(),
        ));
        self
    }

    /// Sets environment variables.
    pub fn envs<K, V>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (key, value) in vars {
            self = self.env(key, value);
        }
        self
    }

    /// Removes one variable from the child's environment.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push(EnvChange::Remove(key.as_ref().to_owned()));
        self
    }

    /// Starts the child's environment empty; variables set after this are its only ones.
    pub fn env_clear(mut self) -> Self {
        self.env.push(EnvChange::Clear);
        self
    }

    /// What the child reads.
    pub fn stdin(mut self, input: Input) -> Self {
        self.stdin = input;
        self
    }

    /// Where its stdout goes.
    pub fn stdout(mut self, output: Output) -> Self {
        self.stdout = output;
        self
    }

    /// Where its stderr goes.
    pub fn stderr(mut self, output: Output) -> Self {
        self.stderr = output;
        self
    }

    /// Runs it through `sandbox` (EVAL-9); `None`, or an empty prefix, runs it directly. A
    /// refused sandbox ([`Sandbox::refuse`]) makes [`Command::spawn`] fail and start nothing.
    pub fn sandbox(mut self, sandbox: Option<Sandbox>) -> Self {
        self.sandbox = sandbox.filter(|sandbox| !sandbox.argv().is_empty());
        self
    }

    /// How long it gets between SIGTERM and SIGKILL when it is terminated.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Whether what the child starts runs in a PID namespace of its own, ended with the child
    /// (on by default where the system allows it; see [`crate::containment`]). Off, the child
    /// is the program itself, as for a process that must see the machine's pids.
    pub fn contained(mut self, contained: bool) -> Self {
        self.contained = contained;
        self
    }

    /// The folder it runs in.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Its grace period.
    pub fn grace_period(&self) -> Duration {
        self.grace
    }

    /// The whole command line that is executed: the sandbox prefix, the program, its
    /// arguments.
    pub fn argv(&self) -> Vec<OsString> {
        let prefix = self
            .sandbox
            .iter()
            .flat_map(|s| s.argv().iter().map(OsString::from));
        prefix
            .chain(std::iter::once(self.program.clone()))
            .chain(self.args.iter().cloned())
            .collect()
    }

    /// The program and its arguments as a command line for messages (without the sandbox
    /// prefix, which a message shows separately when it matters).
    pub fn shown(&self) -> String {
        shown_argv(std::iter::once(&self.program).chain(&self.args))
    }

    /// The program's file name, for messages and the stderr tail.
    fn program_name(&self) -> String {
        Path::new(&self.program)
            .file_name()
            .unwrap_or(&self.program)
            .to_string_lossy()
            .into_owned()
    }

    /// Starts the child: its own process group (it and everything it starts, unless they
    /// leave it, are signalled together), SIGKILL when we die, `kill_on_drop`. Must be called
    /// inside a tokio runtime, which then drives the child's pipes and exit.
    pub fn spawn(&self) -> Result<Child> {
        let shown = self.shown();
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime {
            command: shown.clone(),
        })?;
        // A sandbox found unusable when the run began: nothing starts, neither through it nor
        // around it, and the caller passes on the one problem found (EVAL-9).
        if let Some(refusal) = self.sandbox.as_ref().and_then(Sandbox::refusal) {
            return Err(Error::SandboxRefused {
                program: self.program_name(),
                refusal: Arc::clone(refusal),
            });
        }
        let argv = self.argv();
        let Some((program, args)) = argv.split_first() else {
            return Err(Error::EmptyCommand);
        };
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(&self.cwd)
            .stdin(match self.stdin {
                Input::Null => std::process::Stdio::null(),
                Input::Piped => std::process::Stdio::piped(),
            })
            .stdout(stdio(&self.stdout))
            .stderr(stdio(&self.stderr))
            .kill_on_drop(true)
            .process_group(0)
            // The server's bearer token is the server's: no child (a kernel's cell, a worker)
            // reads it from its environment.
            .env_remove(TOKEN_ENV);
        for change in &self.env {
            match change {
                EnvChange::Set(key, value) => command.env(key, value),
                EnvChange::Remove(key) => command.env_remove(key),
                EnvChange::Clear => command.env_clear(),
            };
        }
        #[cfg(target_os = "linux")]
        let contained = die_with_parent(&mut command, self.contained);
        #[cfg(not(target_os = "linux"))]
        let contained = false;
        let (mut child, tracked) =
            crate::spawner::spawn(command, runtime).map_err(|source| Error::Spawn {
                command: shown.clone(),
                cwd: self.cwd.clone(),
                sandbox: self.sandbox.as_ref().map(Sandbox::shown),
                source,
            })?;
        let pid = tracked.pid();
        tracing::debug!(pid, command = %shown, cwd = %self.cwd.display(), "spawned");
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let program = self.program_name();
        let stdout = match &self.stdout {
            Output::Tail(tail) => {
                if let Some(stream) = stdout {
                    tail.feed(stream, program.clone());
                }
                None
            }
            _ => stdout,
        };
        let stderr = match &self.stderr {
            Output::Tail(tail) => {
                if let Some(stream) = stderr {
                    tail.feed(stream, program);
                }
                None
            }
            _ => stderr,
        };
        let shown: Arc<str> = Arc::from(shown);
        let leader = Leader::new(child, tracked, Arc::clone(&shown), contained);
        let program = leader.program_pid();
        Ok(Child::new(
            leader,
            ProcessGroup::new(pid, program, shown, self.grace),
            (stdin, stdout, stderr),
        ))
    }
}

fn stdio(output: &Output) -> std::process::Stdio {
    match output {
        Output::Null => std::process::Stdio::null(),
        Output::Piped | Output::Tail(_) => std::process::Stdio::piped(),
    }
}

/// Words joined by spaces, each quoted when it would not read as one word.
pub(crate) fn shown_argv<S: AsRef<OsStr>>(argv: impl IntoIterator<Item = S>) -> String {
    argv.into_iter()
        .map(|word| {
            let word = word.as_ref().to_string_lossy();
            if word.is_empty()
                || word
                    .chars()
                    .any(|c| c.is_whitespace() || "'\"\\$`".contains(c))
            {
                format!("'{}'", word.replace('\'', r"'\''"))
            } else {
                word.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Asks Linux to SIGKILL the child when the thread that forked it (our spawner thread, which
/// lives as long as the process) ends, and closes the race where we died before the request
/// was made: then the child has already been re-parented, and it exits instead of running on.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
/// Returns whether the child is contained (runs its program under a keeper).
fn die_with_parent(command: &mut tokio::process::Command, contained: bool) -> bool {
    let parent = rustix::process::getpid();
    let contain = contained.then(crate::contain::Plan::current).flatten();
    let is_contained = contain.is_some();
    // SAFETY: the closure runs in the forked child before exec. It makes only the prctl and
    // getppid system calls, which are async-signal-safe, allocates nothing (the errors are
    // plain errno values) and touches no lock or memory shared with the parent's threads;
    // `Plan::enter` keeps to the same rules.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            if rustix::process::getppid() != Some(parent) {
                // std's child reports this to a parent that no longer listens and `_exit`s.
                return Err(rustix::io::Errno::SRCH.into());
            }
            if let Some(plan) = &contain {
                plan.enter()?;
            }
            Ok(())
        });
    }
    is_contained
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_reads_as_typed() {
        let command = Command::new("tsc", "/tmp").args(["--noEmit", "a b", "", "it's"]);
        assert_eq!(command.shown(), r"tsc --noEmit 'a b' '' 'it'\''s'");
    }

    #[test]
    fn the_sandbox_prefix_comes_first() {
        let command = Command::new("python3", "/tmp")
            .arg("-V")
            .sandbox(Some(Sandbox::new(vec!["env".into(), "FOO=1".into()])));
        assert_eq!(command.argv(), ["env", "FOO=1", "python3", "-V"]);
        assert_eq!(command.shown(), "python3 -V");
        let bare = Command::new("python3", "/tmp").sandbox(Some(Sandbox::default()));
        assert_eq!(bare.argv(), ["python3"]);
    }

    #[test]
    fn an_empty_command_line_is_refused() {
        assert!(matches!(
            Command::from_argv::<&str>(&[], "/tmp"),
            Err(Error::EmptyCommand)
        ));
    }
}
