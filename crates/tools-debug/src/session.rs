//! One debug session: an adapter process (or a socket to a listening debuggee), the transport
//! to it, and the state its events keep (in `session/state.rs`), with typed requests to it.
//! Reaching the adapter is `session/connect.rs`, the handshake that works with every adapter
//! `session/handshake.rs`; what the tool makes of the answers lives in `debug.rs`.

mod connect;
mod handshake;
mod state;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tools_process::StderrTail;

use crate::adapters::{AdapterId, Found};
use crate::dap::requests::{
    Disconnect, DisconnectArguments, Request, SetBreakpoints, SetBreakpointsArguments,
};
use crate::dap::types::{Breakpoint, Capabilities, Source, SourceBreakpoint};
use crate::transport::{Incoming, Sink, Transport};
use crate::{Error, Result};
use connect::{ConnectOptions, Connection, connect};
use state::State;

pub(crate) use state::RunState;

/// Timeouts of one session.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// One ordinary request (`stackTrace`, `variables`, `evaluate`).
    pub request: Duration,
    /// The handshake up to `configurationDone`'s answer.
    pub startup: Duration,
}

/// What starts a session.
#[derive(Debug, Clone)]
pub(crate) enum Start {
    /// Launch a program with the adapter found.
    Launch {
        found: Found,
        program: PathBuf,
        args: Vec<String>,
    },
    /// Attach to a debugpy listening on a local port.
    AttachPort { port: u16 },
}

/// The answer to `setBreakpoints` for one file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileBreakpoints {
    pub file: PathBuf,
    pub asked: Vec<u32>,
    pub answered: Vec<Breakpoint>,
}

/// A running session.
pub(crate) struct Session {
    pub adapter: AdapterId,
    /// The program (workspace-relative) or `port N`.
    pub program: String,
    pub root: PathBuf,
    pub started: Instant,
    transport: Transport,
    adapter_process: Mutex<Option<tools_process::Child>>,
    adapter_stderr: Arc<StderrTail>,
    state: Arc<Mutex<State>>,
    changes: watch::Receiver<u64>,
    capabilities: Capabilities,
    timeouts: Timeouts,
    _output_reader: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("adapter", &self.adapter)
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

/// How a wait for the debuggee ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// It stopped, exited or the session ended.
    Settled,
    /// Still running after the timeout.
    StillRunning,
    /// The call was cancelled.
    Cancelled,
}

impl Session {
    /// Starts a session: spawns (or connects to) the adapter and runs the handshake —
    /// initialize → launch/attach sent without waiting → `initialized` (or a failed launch or
    /// the adapter's exit, bounded) → breakpoints → exception breakpoints where offered →
    /// configurationDone → the launch's answer. The first stop is waited for by the caller.
    pub(crate) async fn start(
        start: Start,
        workspace_root: &Path,
        shown: String,
        sandbox: Option<tools_process::Sandbox>,
        breakpoints: &BTreeMap<PathBuf, Vec<u32>>,
        timeouts: Timeouts,
    ) -> Result<(Session, Vec<FileBreakpoints>)> {
        let state = Arc::new(Mutex::new(State::new()));
        let (changed, changes) = watch::channel(0u64);
        let sink: Sink = {
            let state = Arc::clone(&state);
            Arc::new(move |incoming: Incoming| {
                if let Incoming::Event(event) = &incoming {
                    tracing::debug!(event = %event.event, body = %event.body, "adapter event");
                }
                let bump = state.lock().map(|mut s| s.apply(incoming)).unwrap_or(true);
                if bump {
                    changed.send_modify(|epoch| *epoch += 1);
                }
            })
        };
        let adapter_stderr = Arc::new(StderrTail::new());
        let adapter = match &start {
            Start::Launch { found, .. } => found.adapter,
            Start::AttachPort { .. } => AdapterId::Debugpy,
        };
        let Connection {
            transport,
            process,
            output_reader,
        } = connect(
            &start,
            adapter,
            ConnectOptions {
                workspace_root,
                sandbox,
                sink,
                state: &state,
                adapter_stderr: &adapter_stderr,
                startup: timeouts.startup,
            },
        )
        .await?;
        let mut session = Session {
            adapter,
            program: shown,
            root: workspace_root.to_path_buf(),
            started: Instant::now(),
            transport,
            adapter_process: Mutex::new(process),
            adapter_stderr,
            state,
            changes,
            capabilities: Capabilities::default(),
            timeouts,
            _output_reader: output_reader,
        };
        match session.handshake(&start, breakpoints).await {
            Ok(set) => Ok((session, set)),
            Err(error) => {
                let error = session.with_stderr(error);
                session.end().await;
                Err(error)
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Sets the breakpoints of one file (replacing its earlier ones).
    pub(crate) async fn set_breakpoints(
        &self,
        file: &Path,
        lines: &[u32],
    ) -> Result<FileBreakpoints> {
        let arguments = SetBreakpointsArguments {
            source: Source {
                name: None,
                path: Some(file.display().to_string()),
            },
            breakpoints: lines
                .iter()
                .map(|&line| SourceBreakpoint { line })
                .collect(),
            lines: lines.to_vec(),
            source_modified: false,
        };
        let answer = self
            .transport
            .request::<SetBreakpoints>(arguments, self.timeouts.request)
            .await?;
        Ok(FileBreakpoints {
            file: file.to_path_buf(),
            asked: lines.to_vec(),
            answered: answer.breakpoints,
        })
    }

    /// One request, with the ordinary timeout: `session.request::<StackTrace>(arguments)`
    /// answers a `StackTraceResponse`.
    pub(crate) async fn request<R: Request>(&self, arguments: R::Arguments) -> Result<R::Response> {
        self.transport
            .request::<R>(arguments, self.timeouts.request)
            .await
            .map_err(|error| self.with_stderr(error))
    }

    /// Adds the adapter's last words to an error that says it went away.
    fn with_stderr(&self, error: Error) -> Error {
        match error {
            Error::Gone {
                adapter,
                command,
                details,
            } if details.is_empty() => Error::Gone {
                adapter,
                command,
                details: stderr_details(&self.adapter_stderr),
            },
            // The reason a launch failed is often only in what the adapter printed first
            // (delve's compiler output before its "Failed to launch").
            Error::Refused {
                adapter,
                command,
                message,
            } if matches!(command.as_str(), "launch" | "attach") => {
                let printed = self.lock().tail.iter().cloned().collect::<Vec<_>>();
                let printed: Vec<String> = printed
                    .into_iter()
                    .filter(|line| !line.trim().is_empty())
                    .collect();
                let mut message = message;
                if !printed.is_empty() {
                    message.push_str(&format!("; it printed: {}", printed.join(" | ")));
                }
                message.push_str(&stderr_details(&self.adapter_stderr));
                Error::Refused {
                    adapter,
                    command,
                    message,
                }
            }
            other => other,
        }
    }

    /// Where the debuggee is now.
    pub(crate) fn run_state(&self) -> RunState {
        self.lock().run.clone()
    }

    /// Marks it running (a control request was answered), unless it already stopped or
    /// exited again since `since`: the stop event can overtake the request's answer.
    pub(crate) fn mark_running(&self, since: u64) {
        let mut state = self.lock();
        if state.run.is_live() && state.settled == since {
            state.run = RunState::Running;
        }
    }

    /// A counter that grows with every stop, exit or end.
    pub(crate) fn epoch(&self) -> u64 {
        self.lock().settled
    }

    /// Waits until the debuggee stops, exits or the session ends after `since`, up to
    /// `timeout`, reporting `progress` every two seconds.
    pub(crate) async fn wait_settled(
        &self,
        since: u64,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: &(dyn Fn(String) + Send + Sync),
    ) -> Waited {
        let mut changes = self.changes.clone();
        let started = Instant::now();
        let deadline = started + timeout;
        let mut tick =
            tokio::time::interval_at(started + Duration::from_secs(2), Duration::from_secs(2));
        loop {
            changes.borrow_and_update();
            if self.epoch() > since {
                return Waited::Settled;
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Waited::Settled;
                    }
                }
                _ = tick.tick() => progress(format!(
                    "{} is running; waiting for it to stop ({}s of {}s)",
                    self.program,
                    started.elapsed().as_secs(),
                    timeout.as_secs()
                )),
                () = tokio::time::sleep_until(deadline) => return Waited::StillRunning,
                () = cancel.cancelled() => return Waited::Cancelled,
            }
        }
    }

    /// After the session ended without an exit code: waits up to `grace` for one (delve sends
    /// it after `terminated`).
    pub(crate) async fn wait_exit_code(&self, grace: Duration) {
        let mut changes = self.changes.clone();
        let deadline = Instant::now() + grace;
        loop {
            if matches!(self.run_state(), RunState::Exited(Some(_))) {
                return;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => return,
            }
        }
    }

    /// How many characters the debuggee has printed in all.
    fn printed_chars(&self) -> usize {
        let state = self.lock();
        state.run_output_cut + state.run_output.chars().count()
    }

    /// Waits until no output has come for `quiet`, at most `bound`: an adapter may send what
    /// the program printed just before a stop after the stop itself (debugpy does, under
    /// load), and the stop's answer should carry it rather than the next call's.
    pub(crate) async fn output_quiet(&self, quiet: Duration, bound: Duration) {
        let deadline = Instant::now() + bound;
        let mut seen = self.printed_chars();
        loop {
            tokio::time::sleep(quiet).await;
            let now = self.printed_chars();
            if now == seen || Instant::now() >= deadline {
                return;
            }
            seen = now;
        }
    }

    /// The output since it was last taken, and how many characters were cut from it.
    pub(crate) fn take_output(&self) -> (String, usize) {
        let mut state = self.lock();
        let cut = std::mem::take(&mut state.output_cut);
        (std::mem::take(&mut state.output), cut)
    }

    /// Everything the debuggee printed, up to its last [`state::RUN_OUTPUT_CHARS`], and how many
    /// characters came before those.
    pub(crate) fn run_output(&self) -> (String, usize) {
        let state = self.lock();
        (state.run_output.clone(), state.run_output_cut)
    }

    /// The debuggee's last output lines.
    pub(crate) fn last_lines(&self, count: usize) -> Vec<String> {
        let state = self.lock();
        let mut lines: Vec<String> = state.tail.iter().cloned().collect();
        if !state.partial_line.trim().is_empty() {
            lines.push(state.partial_line.trim_end().to_owned());
        }
        lines[lines.len().saturating_sub(count)..].to_vec()
    }

    /// Ends the session: asks the adapter to end the debuggee (briefly), then terminates the
    /// adapter's process group and the debuggee's, which may have left it (debugpy starts its
    /// debuggee in a group of its own). Leaves no process behind.
    pub(crate) async fn end(&self) {
        let attached = self.program.starts_with("port ");
        // Even after `terminated`, the adapter is told: delve reports the exit code and
        // cleans up its build only when disconnected.
        let open = !self.lock().closed;
        if open {
            let _ = self
                .transport
                .request::<Disconnect>(
                    DisconnectArguments {
                        terminate_debuggee: !attached,
                    },
                    Duration::from_secs(2),
                )
                .await;
        }
        let process = self
            .adapter_process
            .lock()
            .map(|mut p| p.take())
            .unwrap_or_else(|mut poisoned| poisoned.get_mut().take());
        if let Some(mut process) = process {
            let _ = process.terminate().await;
        }
        let pid = self.lock().debuggee_pid;
        if let Some(pid) = pid.filter(|_| !attached) {
            // It may have left the adapter's group: killed by pid, and its own group.
            tools_process::kill_reported(pid);
        }
        let mut state = self.lock();
        if state.run.is_live() {
            state.run = RunState::Ended("terminated".to_owned());
        }
    }
}

fn stderr_details(tail: &StderrTail) -> String {
    let lines = tail.last(5);
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its last words: {}", lines.join(" | "))
    }
}

/// The answer of a request awaited on its own task; a task that did not finish means the
/// adapter went away.
fn flatten<T>(
    joined: std::result::Result<Result<T>, tokio::task::JoinError>,
    adapter: AdapterId,
    command: &str,
) -> Result<T> {
    joined.unwrap_or_else(|_| {
        Err(Error::Gone {
            adapter: adapter.name().to_owned(),
            command: command.to_owned(),
            details: String::new(),
        })
    })
}
