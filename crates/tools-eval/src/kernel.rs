//! One kernel process and its pipe (EVAL-7): started through tools-process (its own group, a
//! parent-death signal, the run's sandbox prefix), the messages of `protocol.rs` both ways,
//! and the cell loop that hands each event to the cell's run (`cell.rs`), which forwards
//! output, answers `tool()` calls through the bridge (CORE-8), and stops the cell when it goes
//! idle, runs past its cap, prints too much or is cancelled (EVAL-8).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tools_core::CallContext;
use tools_process::{Command, Input, Leader, Output, ProcessGroup, Sandbox, StderrTail};

use crate::{EvalOptions, Language};

mod cell;
mod protocol;

pub(crate) use cell::{Cell, Ending};
// `eval`'s tests build endings; the code only reads the stops they hold.
#[cfg(test)]
pub(crate) use cell::Stop;
use cell::{Event, Run, Step};
use protocol::{HostMessage, KernelMessage};

/// The Python kernel program, sent on its stdin to [`PYTHON_BOOT`].
const PYTHON_KERNEL: &str = include_str!("kernel/python.py");
/// The JavaScript kernel program, sent on its stdin to [`JAVASCRIPT_BOOT`].
const JAVASCRIPT_KERNEL: &str = include_str!("kernel/javascript.js");

/// What `python -c` runs: it reads the kernel's source from stdin (its length in nine bytes,
/// `%08d\n`, then the source) and runs it as `-c` would, under the same file name, so the
/// kernel's frames are still told from a cell's by it. The source is not on the command line,
/// where it filled the process table with 25 KB per kernel (issue 39); exactly its bytes are
/// read, so the protocol that follows on stdin is the kernel's.
const PYTHON_BOOT: &str = "import os\n\
def _boot_read(n):\n    data = b''\n    while len(data) < n:\n        chunk = os.read(0, n - len(data))\n        \
if not chunk:\n            raise SystemExit('agent-tools: the kernel source did not arrive')\n        \
data += chunk\n    return data\n\
exec(compile(_boot_read(int(_boot_read(9))), '<string>', 'exec'))\n";

/// What `node -e` runs: the same for the JavaScript kernel, run in this context under the
/// name `-e` gives (`[eval]`), which the kernel's stack trimming looks for.
const JAVASCRIPT_BOOT: &str = "const fs = require('fs');\
const bootRead = (n) => { const b = Buffer.alloc(n); let got = 0; while (got < n) { let k = 0; \
try { k = fs.readSync(0, b, got, n - got, null); } catch (e) { if (e.code === 'EAGAIN') continue; throw e; } \
if (k === 0) { process.stderr.write('agent-tools: the kernel source did not arrive\\n'); process.exit(1); } \
got += k; } return b; };\
require('vm').runInThisContext(bootRead(Number(bootRead(9).toString())).toString('utf8'), { filename: '[eval]' });";

/// The kernel's source as its boot program reads it from stdin.
fn boot_message(source: &str) -> Vec<u8> {
    let mut message = format!("{:08}\n", source.len()).into_bytes();
    message.extend_from_slice(source.as_bytes());
    message
}

/// How long a kernel may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A kernel that could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error("could not start {command}: {source}")]
    Spawn {
        command: String,
        source: tools_process::Error,
    },
    #[error("{command} exited before it was ready ({how}){stderr}")]
    Exited {
        command: String,
        how: String,
        stderr: String,
    },
    #[error("{command} did not say it was ready within {} s{stderr}", START_TIMEOUT.as_secs())]
    Timeout { command: String, stderr: String },
    #[error("the call was cancelled while the kernel started")]
    Cancelled,
}

/// Where and how a kernel runs.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub(crate) root: PathBuf,
    pub(crate) sandbox: Option<Sandbox>,
}

/// One running kernel.
pub(crate) struct Kernel {
    language: Language,
    /// The interpreter, as the kernel reports it (the path Python runs from, node's version).
    pub(crate) interpreter: String,
    pub(crate) version: String,
    /// The kernel's pid on this machine, which `ps` and `kill` in the agent's shell know
    /// (inside a sandbox's PID namespace the kernel has another number for itself).
    pub(crate) pid: u64,
    /// The kernel's own `getpid()`, when it differs from [`Kernel::pid`]: inside its own PID
    /// namespace.
    pub(crate) pid_inside: Option<u64>,
    pub(crate) group: ProcessGroup,
    leader: Leader,
    stdin: ChildStdin,
    events: mpsc::UnboundedReceiver<KernelMessage>,
    stderr: Arc<StderrTail>,
    sandboxed: bool,
    next_cell: u64,
    /// How long it took from spawn to ready.
    pub(crate) started_in: Duration,
}

impl Kernel {
    /// Starts a kernel of `language` and waits until it is ready.
    pub(crate) async fn start(
        language: Language,
        launch: &Launch,
        context: &CallContext,
    ) -> Result<Kernel, StartError> {
        let started = Instant::now();
        let (program, args, source) = match language {
            Language::Python => (
                python_interpreter(&launch.root),
                vec!["-c".to_owned(), PYTHON_BOOT.to_owned()],
                PYTHON_KERNEL,
            ),
            Language::Javascript => (
                "node".to_owned(),
                vec![
                    "--no-warnings".to_owned(),
                    "-e".to_owned(),
                    JAVASCRIPT_BOOT.to_owned(),
                ],
                JAVASCRIPT_KERNEL,
            ),
        };
        let stderr = Arc::new(StderrTail::new());
        let command = Command::new(&program, &launch.root)
            .args(&args)
            .env("AGENT_TOOLS_EVAL_ROOT", &launch.root)
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Input::Piped)
            .stdout(Output::Piped)
            .stderr(Output::Tail(Arc::clone(&stderr)))
            .sandbox(launch.sandbox.clone())
            .grace(Duration::from_secs(1));
        let shown = format!("the {language} kernel ({program})");
        let child = command.spawn().map_err(|source| StartError::Spawn {
            command: shown.clone(),
            source,
        })?;
        let parts = child.into_parts();
        let (Some(mut stdin), Some(stdout)) = (parts.stdin, parts.stdout) else {
            return Err(StartError::Exited {
                command: shown,
                how: "its pipes were not opened".to_owned(),
                stderr: String::new(),
            });
        };
        // A kernel that died before it read its source is told by its exit below.
        let _ = stdin.write_all(&boot_message(source)).await;
        let _ = stdin.flush().await;
        let (sender, mut events) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if sender.send(KernelMessage::from_line(&line)).is_err() {
                    return;
                }
            }
        });
        let mut leader = parts.leader;
        let ready = tokio::select! {
            ready = tokio::time::timeout(START_TIMEOUT, events.recv()) => ready,
            () = context.cancellation().cancelled() => return Err(StartError::Cancelled),
        };
        let (interpreter, version, own_pid) = match ready {
            Ok(Some(KernelMessage::Ready {
                pid,
                interpreter,
                version,
            })) => {
                tracing::debug!(%language, kernel_pid = pid, "kernel ready");
                (interpreter, version, pid)
            }
            Ok(_) => {
                let how = died(&mut leader).await;
                stderr.closed().await;
                return Err(StartError::Exited {
                    command: shown,
                    how,
                    stderr: shown_stderr(&stderr.last(10)),
                });
            }
            Err(_) => {
                return Err(StartError::Timeout {
                    command: shown,
                    stderr: shown_stderr(&stderr.last(10)),
                });
            }
        };
        // The machine's pid, which `ps` and `kill` in the agent's shell know; the kernel's
        // own `getpid()` is its pid inside its namespace.
        let pid = u64::from(leader.program_pid());
        Ok(Kernel {
            language,
            interpreter: interpreter.unwrap_or(program),
            version: version.unwrap_or_default(),
            pid,
            pid_inside: Some(own_pid).filter(|own| *own != pid),
            group: parts.group,
            leader,
            stdin,
            events,
            stderr,
            sandboxed: launch.sandbox.is_some(),
            next_cell: 0,
            started_in: started.elapsed(),
        })
    }

    /// Writes one message to the kernel; false when its pipe is gone.
    async fn send(&mut self, message: &HostMessage) -> bool {
        let mut line = match serde_json::to_vec(message) {
            Ok(line) => line,
            // Nothing in a message can fail to serialise (its maps have string keys); were it
            // to, the kernel would not hear it, as if its pipe had closed.
            Err(error) => {
                tracing::warn!(%error, "a message to the kernel did not serialise");
                return false;
            }
        };
        line.push(b'\n');
        self.stdin.write_all(&line).await.is_ok() && self.stdin.flush().await.is_ok()
    }

    /// One step of stopping a cell: first an interrupt over the pipe (works in any sandbox),
    /// then SIGINT to the whole group (reaches a blocking call and what the cell started) —
    /// except for Node, which SIGINT would end, and inside a sandbox, where the group may not
    /// reach the kernel: there the pipe again.
    async fn interrupt(&mut self, step: u32) {
        match step {
            0 => {
                self.send(&HostMessage::Interrupt).await;
            }
            _ if !self.sandboxed && self.language == Language::Python => self.group.interrupt(),
            _ => {
                self.send(&HostMessage::Interrupt).await;
            }
        }
    }

    /// Runs one cell to its end: each message of the kernel, each end of a `tool()` call and
    /// each clock that runs out is one event, handled by a method of the cell's [`Run`].
    pub(crate) async fn execute(
        &mut self,
        code: &str,
        context: &CallContext,
        options: &EvalOptions,
    ) -> Cell {
        self.next_cell += 1;
        let id = self.next_cell;
        let code = code.to_owned();
        if !self.send(&HostMessage::Execute { id, code }).await {
            return Cell::new(self.death().await);
        }
        let mut run = Run::new(id, context, options);
        loop {
            let ending = match run.next_event(&mut self.events).await {
                Event::Message(Some(message)) => run.on_message(message),
                // The pipe closed: the kill of a cell being stopped, or a crash.
                Event::Message(None) => Some(match run.stopped_by() {
                    Some(why) => Ending::Killed(why),
                    None => self.death().await,
                }),
                Event::ToolDone(result) => {
                    let reply = run.on_tool_done(result);
                    self.send(&reply).await;
                    None
                }
                Event::Stop(why) => {
                    run.stop(why, Instant::now());
                    None
                }
                Event::Heartbeat => {
                    run.on_heartbeat();
                    None
                }
                Event::Step => self.step(&mut run).await,
            };
            if let Some(ending) = ending {
                return run.end(ending);
            }
        }
    }

    /// Acts out the next step of stopping `run`'s cell; the ending once the kernel is gone.
    async fn step(&mut self, run: &mut Run<'_>) -> Option<Ending> {
        match run.next_step()? {
            Step::Interrupt(step) => self.interrupt(step).await,
            Step::Kill => {
                tracing::debug!(pid = self.group.pgid(), "a cell ignored its interrupts");
                self.group.kill();
                self.leader.start_kill();
            }
            // Killed, but something that left the group still holds the pipe: the kernel is
            // gone all the same.
            Step::Gone(why) => return Some(Ending::Killed(why)),
        }
        None
    }

    /// The kernel's pipe closed: how it died.
    async fn death(&mut self) -> Ending {
        let how = died(&mut self.leader).await;
        let _ = tokio::time::timeout(Duration::from_secs(1), self.stderr.closed()).await;
        Ending::Died {
            how,
            stderr: self.stderr.last(10),
        }
    }

    /// If the kernel died while no cell ran (killed for memory, a thread that called
    /// `os._exit`), how it died.
    pub(crate) async fn died_idle(&mut self) -> Option<String> {
        if self.group.leader_runs() {
            return None;
        }
        match self.death().await {
            Ending::Died { how, .. } => Some(how),
            _ => None,
        }
    }

    /// Ends the kernel and its whole group.
    pub(crate) async fn stop(mut self) {
        self.group.kill();
        self.leader.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.leader.wait()).await;
    }
}

/// How a process that closed its pipe ended.
async fn died(leader: &mut Leader) -> String {
    match tokio::time::timeout(Duration::from_secs(2), leader.wait()).await {
        Ok(Ok(status)) => match (status.signal(), status.code()) {
            (Some(signal), _) => format!("killed by signal {signal}{}", signal_name(signal)),
            // A sandbox (bwrap) reports its child's signal as 128 + the signal.
            (None, Some(code)) if code > 128 && code < 160 => {
                format!("exited with status {code}{}", signal_name(code - 128))
            }
            (None, Some(code)) => format!("exited with status {code}"),
            (None, None) => "ended".to_owned(),
        },
        Ok(Err(error)) => format!("ended ({error})"),
        Err(_) => {
            leader.start_kill();
            "closed its pipe but did not exit, so it was killed".to_owned()
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        2 => " (SIGINT)",
        6 => " (SIGABRT)",
        9 => " (SIGKILL: killed from outside, often for memory)",
        11 => " (SIGSEGV: a segmentation fault)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

fn shown_stderr(lines: &[String]) -> String {
    match lines {
        [] => String::new(),
        lines => format!("; its last words:\n{}", lines.join("\n")),
    }
}

/// The project's own Python: `.venv` or `venv` in the workspace, else `python3` on `PATH`.
pub(crate) fn python_interpreter(root: &Path) -> String {
    for venv in [".venv", "venv"] {
        let python = root.join(venv).join("bin/python");
        if python.is_file() {
            return python.display().to_string();
        }
    }
    "python3".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_1_the_project_venv_wins_over_path() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(python_interpreter(dir.path()), "python3");
        let venv = dir.path().join("venv/bin");
        std::fs::create_dir_all(&venv).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(venv.join("python"), "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            python_interpreter(dir.path()),
            venv.join("python").display().to_string()
        );
    }
}
