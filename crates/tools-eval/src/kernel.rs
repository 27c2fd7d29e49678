//! One kernel process and its pipe (EVAL-7): started through tools-process (its own group, a
//! parent-death signal, the run's sandbox prefix), JSON lines both ways, and the cell loop
//! that forwards output, answers `tool()` calls through the bridge (CORE-8), and interrupts
//! the cell when it goes idle, runs past its cap, prints too much or is cancelled (EVAL-8).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tools_core::{CallContext, Image, ToolCall, ToolResult};
use tools_process::{Command, Input, Leader, Output, ProcessGroup, Sandbox, StderrTail};

use crate::{EvalOptions, Language, transcript::Transcript};

/// The Python kernel program, run with `python -c`.
const PYTHON_KERNEL: &str = include_str!("kernel/python.py");
/// The JavaScript kernel program, run with `node -e`.
const JAVASCRIPT_KERNEL: &str = include_str!("kernel/javascript.js");

/// How long a kernel may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long each interrupt gets to land before the next step.
const INTERRUPT_STEP: Duration = Duration::from_millis(1500);
/// How often a cell that prints nothing still reports that it runs.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// The least time between two progress reports of output.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

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
    pub(crate) sandbox: Option<Vec<String>>,
}

/// One running kernel.
pub(crate) struct Kernel {
    language: Language,
    /// The interpreter, as the kernel reports it (the path Python runs from, node's version).
    pub(crate) interpreter: String,
    pub(crate) version: String,
    /// The kernel's pid as it sees itself (inside a sandbox's PID namespace, its number there).
    pub(crate) pid: u64,
    pub(crate) group: ProcessGroup,
    leader: Leader,
    stdin: ChildStdin,
    events: mpsc::UnboundedReceiver<Value>,
    stderr: Arc<StderrTail>,
    sandboxed: bool,
    next_cell: u64,
    /// How long it took from spawn to ready.
    pub(crate) started_in: Duration,
}

/// How a cell ended.
#[derive(Debug)]
pub(crate) enum Ending {
    /// It ran to its end; `error` is the exception it raised, if any.
    Done {
        error: Option<String>,
        images_dropped: u64,
    },
    /// It was interrupted and the kernel lives on with its state.
    Interrupted(Stop),
    /// It did not stop on interrupt: the kernel was killed, its state is lost.
    Killed(Stop),
    /// The kernel died during the cell; `how` says how.
    Died { how: String, stderr: Vec<String> },
}

/// Why a cell was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Idle(Duration),
    Cap(Duration),
    Output(u64),
    Cancelled,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Idle(window) => write!(
                f,
                "it printed nothing for {} s (the idle timeout)",
                window.as_secs_f64()
            ),
            Stop::Cap(cap) => write!(
                f,
                "it ran for {} s (the cap on one cell)",
                cap.as_secs_f64()
            ),
            Stop::Output(bytes) => write!(
                f,
                "it printed more than {bytes} bytes (the output cap); is it an endless loop?"
            ),
            Stop::Cancelled => f.write_str("the client cancelled the call"),
        }
    }
}

/// What a cell produced.
#[derive(Debug)]
pub(crate) struct Cell {
    pub(crate) transcript: Transcript,
    pub(crate) images: Vec<Image>,
    pub(crate) ending: Ending,
}

impl Kernel {
    /// Starts a kernel of `language` and waits until it is ready.
    pub(crate) async fn start(
        language: Language,
        launch: &Launch,
        context: &CallContext,
    ) -> Result<Kernel, StartError> {
        let started = Instant::now();
        let (program, args) = match language {
            Language::Python => (
                python_interpreter(&launch.root),
                vec!["-c".to_owned(), PYTHON_KERNEL.to_owned()],
            ),
            Language::Javascript => (
                "node".to_owned(),
                vec![
                    "--no-warnings".to_owned(),
                    "-e".to_owned(),
                    JAVASCRIPT_KERNEL.to_owned(),
                ],
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
            .sandbox(launch.sandbox.clone().map(|argv| Sandbox { argv }))
            .grace(Duration::from_secs(1));
        let shown = format!("the {language} kernel ({program})");
        let child = command.spawn().map_err(|source| StartError::Spawn {
            command: shown.clone(),
            source,
        })?;
        let parts = child.into_parts();
        let (Some(stdin), Some(stdout)) = (parts.stdin, parts.stdout) else {
            return Err(StartError::Exited {
                command: shown,
                how: "its pipes were not opened".to_owned(),
                stderr: String::new(),
            });
        };
        let (sender, mut events) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                // A line that is not a protocol message is output that reached the pipe
                // around the kernel's capture (a child of the Node kernel writing to fd 1).
                let message = match serde_json::from_str::<Value>(&line) {
                    Ok(message) if message["type"].is_string() => message,
                    _ => json!({"type": "stream", "text": format!("{line}\n")}),
                };
                if sender.send(message).is_err() {
                    return;
                }
            }
        });
        let mut leader = parts.leader;
        let ready = tokio::select! {
            ready = tokio::time::timeout(START_TIMEOUT, events.recv()) => ready,
            () = context.cancellation().cancelled() => return Err(StartError::Cancelled),
        };
        let ready = match ready {
            Ok(Some(ready)) if ready["type"] == "ready" => ready,
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
        Ok(Kernel {
            language,
            interpreter: ready["interpreter"].as_str().unwrap_or(&program).to_owned(),
            version: ready["version"].as_str().unwrap_or_default().to_owned(),
            // The machine's pid, which `ps` and `kill` in the agent's shell know; the kernel's
            // own `getpid()` is its pid inside its namespace.
            pid: u64::from(leader.program_pid()),
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

    async fn send(&mut self, message: Value) -> bool {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.is_ok() && self.stdin.flush().await.is_ok()
    }

    /// One step of stopping a cell: first an interrupt over the pipe (works in any sandbox),
    /// then SIGINT to the whole group (reaches a blocking call and what the cell started) —
    /// except for Node, which SIGINT would end, and inside a sandbox, where the group may not
    /// reach the kernel: there the pipe again.
    async fn interrupt(&mut self, step: u32) {
        match step {
            0 => {
                self.send(json!({"type": "interrupt"})).await;
            }
            _ if !self.sandboxed && self.language == Language::Python => self.group.interrupt(),
            _ => {
                self.send(json!({"type": "interrupt"})).await;
            }
        }
    }

    /// Runs one cell to its end.
    pub(crate) async fn execute(
        &mut self,
        code: &str,
        context: &CallContext,
        options: &EvalOptions,
    ) -> Cell {
        self.next_cell += 1;
        let id = self.next_cell;
        let mut cell = Cell {
            transcript: Transcript::default(),
            images: Vec::new(),
            ending: Ending::Done {
                error: None,
                images_dropped: 0,
            },
        };
        if !self
            .send(json!({"type": "execute", "id": id, "code": code}))
            .await
        {
            cell.ending = self.death().await;
            return cell;
        }
        let started = Instant::now();
        let cap = started + options.max_cell;
        let mut idle = started + options.idle_timeout;
        let mut heartbeat = started + HEARTBEAT;
        let mut last_progress = started - PROGRESS_EVERY;
        let mut pending: Option<(u64, BoxFuture<'static, ToolResult>)> = None;
        // Once set: why the cell is being stopped, how many steps were taken, when the next is.
        let mut stopping: Option<(Stop, u32, Instant)> = None;
        loop {
            let next_step = stopping.map(|(_, _, at)| at);
            let waiting_on_tool = pending.is_some();
            let tool_done = async {
                match &mut pending {
                    Some((_, call)) => call.await,
                    None => futures::future::pending().await,
                }
            };
            tokio::select! {
                message = self.events.recv() => {
                    let Some(message) = message else {
                        cell.ending = match stopping {
                            Some((stop, _, _)) => Ending::Killed(stop),
                            None => self.death().await,
                        };
                        return cell;
                    };
                    let now = Instant::now();
                    idle = now + options.idle_timeout;
                    match message["type"].as_str() {
                        Some("stream") => {
                            cell.transcript.push(message["text"].as_str().unwrap_or_default());
                            if now >= last_progress + PROGRESS_EVERY {
                                last_progress = now;
                                heartbeat = now + HEARTBEAT;
                                if let Some(line) = cell.transcript.last_line() {
                                    context.progress(cut(line, 200));
                                }
                            }
                            if stopping.is_none()
                                && cell.transcript.received > options.max_output_bytes
                            {
                                stopping = Some((
                                    Stop::Output(options.max_output_bytes),
                                    0,
                                    now,
                                ));
                            }
                        }
                        Some("display") => display(&mut cell, &message),
                        Some("tool_call") => {
                            let call_id = message["id"].as_u64().unwrap_or_default();
                            let call = ToolCall {
                                name: message["name"].as_str().unwrap_or_default().to_owned(),
                                arguments: message["args"].clone(),
                            };
                            context.progress(format!("calling `{}` from the cell", call.name));
                            let bridge = context.bridge().cloned();
                            pending = Some((call_id, Box::pin(async move {
                                match bridge {
                                    Some(bridge) => bridge.call(call).await,
                                    None => ToolResult::error(&tools_core::ToolError::failed(
                                        "tool() is not available here: this call was not made \
                                         through a dispatcher",
                                    )),
                                }
                            })));
                        }
                        Some("done") if message["id"] == id => {
                            cell.ending = match (message["interrupted"] == true, stopping) {
                                (true, Some((stop, _, _))) => Ending::Interrupted(stop),
                                _ => Ending::Done {
                                    error: message["error"]["traceback"]
                                        .as_str()
                                        .map(str::to_owned)
                                        .or_else(|| {
                                            (message["interrupted"] == true).then(|| {
                                                "KeyboardInterrupt".to_owned()
                                            })
                                        }),
                                    images_dropped: message["images_dropped"]
                                        .as_u64()
                                        .unwrap_or_default(),
                                },
                            };
                            return cell;
                        }
                        _ => {}
                    }
                }
                result = tool_done => {
                    let call_id = pending.take().map(|(id, _)| id).unwrap_or_default();
                    idle = Instant::now() + options.idle_timeout;
                    let reply = json!({
                        "type": "tool_result",
                        "id": call_id,
                        "ok": !result.is_error,
                        "text": result.text,
                        "structured": result.structured,
                    });
                    self.send(reply).await;
                }
                // EVAL-8: the idle window does not run while a `tool()` call is pending.
                () = tokio::time::sleep_until(idle), if !waiting_on_tool && stopping.is_none() => {
                    stopping = Some((Stop::Idle(options.idle_timeout), 0, Instant::now()));
                }
                () = tokio::time::sleep_until(cap), if stopping.is_none() => {
                    stopping = Some((Stop::Cap(options.max_cell), 0, Instant::now()));
                }
                () = context.cancellation().cancelled(), if stopping.is_none() => {
                    stopping = Some((Stop::Cancelled, 0, Instant::now()));
                }
                () = tokio::time::sleep_until(heartbeat), if stopping.is_none() => {
                    heartbeat = Instant::now() + HEARTBEAT;
                    context.progress(format!(
                        "the cell has run for {} s",
                        started.elapsed().as_secs()
                    ));
                }
                () = sleep_until_some(next_step) => {
                    let Some((stop, step, _)) = stopping else { continue };
                    // A pending bridged call is dropped, which cancels it.
                    pending = None;
                    if step < 2 {
                        self.interrupt(step).await;
                        stopping = Some((stop, step + 1, Instant::now() + INTERRUPT_STEP));
                    } else if step == 2 {
                        tracing::debug!(pid = self.group.pgid(), "a cell ignored its interrupts");
                        self.group.kill();
                        self.leader.start_kill();
                        stopping = Some((stop, step + 1, Instant::now() + INTERRUPT_STEP));
                    } else {
                        // Killed, but something that left the group still holds the pipe:
                        // the kernel is gone all the same.
                        cell.ending = Ending::Killed(stop);
                        return cell;
                    }
                }
            }
        }
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

fn display(cell: &mut Cell, message: &Value) {
    match message["mime"].as_str() {
        Some("image/png") => {
            let data = message["data"].as_str().unwrap_or_default();
            match base64::engine::general_purpose::STANDARD.decode(data) {
                Ok(bytes) => {
                    let size = png_size(&bytes)
                        .map(|(w, h)| format!(" {w}×{h}"))
                        .unwrap_or_default();
                    cell.images.push(Image::png(bytes));
                    cell.transcript
                        .push(&format!("\n[image {}: PNG{size}]\n", cell.images.len()));
                }
                Err(error) => cell
                    .transcript
                    .push(&format!("\n[an image that did not decode: {error}]\n")),
            }
        }
        _ => {
            let text = message["text"].as_str().unwrap_or_default();
            let mut shown = String::new();
            if !cell.transcript.ends_with_newline() {
                shown.push('\n');
            }
            shown.push_str(text);
            shown.push('\n');
            cell.transcript.push(&shown);
        }
    }
}

/// The width and height of a PNG, from its header.
pub(crate) fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" {
        return None;
    }
    let width = u32::from_be_bytes(bytes[16..20].try_into().ok()?);
    let height = u32::from_be_bytes(bytes[20..24].try_into().ok()?);
    Some((width, height))
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => futures::future::pending().await,
    }
}

fn cut(line: &str, chars: usize) -> String {
    let mut kept: String = line.chars().take(chars).collect();
    if kept.len() < line.len() {
        kept.push('…');
    }
    kept
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
    fn a_png_header_gives_its_size() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend(640u32.to_be_bytes());
        png.extend(480u32.to_be_bytes());
        assert_eq!(png_size(&png), Some((640, 480)));
        assert_eq!(png_size(b"GIF89a"), None);
    }

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
