//! One debug session: an adapter process (or a socket to a listening debuggee), the transport
//! to it, and the state its events keep — running, stopped where, exited with what — plus the
//! debuggee's output since it was last read. The handshake that works with every adapter
//! lives here; what the tool makes of the answers lives in `debug.rs`.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tools_process::{Command, Input, Output, StderrTail};

use crate::adapters::{AdapterId, Found};
use crate::dap::{self, Breakpoint, Capabilities, OutputEvent, StoppedEvent};
use crate::transport::{Incoming, Sink, Transport};
use crate::{Error, Result};

/// How much of the debuggee's output is held between two calls; the rest is counted.
pub(crate) const OUTPUT_HELD_CHARS: usize = 8_000;

/// How many of its last output lines are kept for the exit report.
const TAIL_LINES: usize = 20;

/// How much of the debuggee's whole output is kept for `output` after it ended (its end,
/// where a traceback or a final result is); what came before is counted (DBG-5).
pub(crate) const RUN_OUTPUT_CHARS: usize = 16_000;

/// Where a session's debuggee is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunState {
    /// The handshake is under way.
    Starting,
    /// Running; `pause` stops it.
    Running,
    /// Stopped, as the adapter said.
    Stopped(StoppedEvent),
    /// The debuggee exited (with its code, when the adapter said).
    Exited(Option<i64>),
    /// The session ended without an exit code: the adapter terminated it or went away.
    Ended(String),
}

impl RunState {
    /// Whether the debuggee can still be controlled.
    pub(crate) fn is_live(&self) -> bool {
        matches!(
            self,
            RunState::Starting | RunState::Running | RunState::Stopped(_)
        )
    }

    /// A few words for `status` and refusals.
    pub(crate) fn describe(&self) -> String {
        match self {
            RunState::Starting => "starting".to_owned(),
            RunState::Running => "running".to_owned(),
            RunState::Stopped(stop) => format!(
                "stopped ({}) on thread {}",
                stop.reason,
                stop.thread_id.map_or("?".to_owned(), |t| t.to_string())
            ),
            RunState::Exited(Some(code)) => format!("exited with code {code}"),
            RunState::Exited(None) => "exited".to_owned(),
            RunState::Ended(why) => format!("ended ({why})"),
        }
    }
}

/// What the events of a session have told so far.
#[derive(Debug)]
struct State {
    run: RunState,
    initialized: bool,
    output: String,
    output_cut: usize,
    /// Everything the debuggee printed, up to its last [`RUN_OUTPUT_CHARS`].
    run_output: String,
    /// How many characters were dropped from the front of `run_output`.
    run_output_cut: usize,
    tail: VecDeque<String>,
    partial_line: String,
    debuggee_pid: Option<u32>,
    /// Grows with every stop, exit or end (never with other events).
    settled: u64,
    /// The connection to the adapter ended.
    closed: bool,
}

impl State {
    fn new() -> Self {
        State {
            run: RunState::Starting,
            initialized: false,
            output: String::new(),
            output_cut: 0,
            run_output: String::new(),
            run_output_cut: 0,
            tail: VecDeque::new(),
            partial_line: String::new(),
            debuggee_pid: None,
            settled: 0,
            closed: false,
        }
    }

    fn add_output(&mut self, text: &str) {
        let room = OUTPUT_HELD_CHARS.saturating_sub(self.output.chars().count());
        let kept: String = text.chars().take(room).collect();
        self.output_cut += text.chars().count() - kept.chars().count();
        self.output.push_str(&kept);
        self.run_output.push_str(text);
        let over = self
            .run_output
            .chars()
            .count()
            .saturating_sub(RUN_OUTPUT_CHARS);
        if over > 0 {
            let cut_at = self
                .run_output
                .char_indices()
                .nth(over)
                .map_or(self.run_output.len(), |(at, _)| at);
            self.run_output.drain(..cut_at);
            self.run_output_cut += over;
        }
        self.partial_line.push_str(text);
        while let Some(end) = self.partial_line.find('\n') {
            let line: String = self.partial_line.drain(..=end).collect();
            let line = line.trim_end().chars().take(400).collect::<String>();
            if self.tail.len() == TAIL_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(line);
        }
    }

    /// Applies one message; whether anything a waiter looks at changed.
    fn apply(&mut self, incoming: Incoming) -> bool {
        let settled = self.settles(&incoming);
        if settled {
            self.settled += 1;
        }
        self.update(incoming) || settled
    }

    /// Whether a message ends a wait for the program to stop or exit.
    fn settles(&self, incoming: &Incoming) -> bool {
        match incoming {
            Incoming::Closed => true,
            Incoming::Event(event) => {
                matches!(event.event.as_str(), "stopped" | "exited" | "terminated")
            }
        }
    }

    fn update(&mut self, incoming: Incoming) -> bool {
        match incoming {
            Incoming::Closed => {
                self.closed = true;
                if self.run.is_live() {
                    self.run = RunState::Ended("the adapter closed the connection".to_owned());
                }
                true
            }
            Incoming::Event(event) => match event.event.as_str() {
                "initialized" => {
                    self.initialized = true;
                    true
                }
                "stopped" => {
                    self.run = RunState::Stopped(dap::body(event.body));
                    true
                }
                "continued" => {
                    if self.run.is_live() {
                        self.run = RunState::Running;
                    }
                    false
                }
                "exited" => {
                    self.run = RunState::Exited(event.body["exitCode"].as_i64());
                    true
                }
                "terminated" => {
                    if self.run.is_live() {
                        self.run = RunState::Ended("the adapter ended the session".to_owned());
                    }
                    true
                }
                "process" => {
                    self.debuggee_pid = event.body["systemProcessId"]
                        .as_u64()
                        .and_then(|pid| u32::try_from(pid).ok());
                    false
                }
                "output" => {
                    let output: OutputEvent = dap::body(event.body);
                    match output.category.as_deref() {
                        // The adapter's own messages are not the program's output (DBG-5
                        // `output` is its stdout and stderr), but delve tells the exit code
                        // only there, after `terminated`.
                        Some("console") => match console_exit_code(&output.output) {
                            Some(code) if !matches!(self.run, RunState::Exited(Some(_))) => {
                                self.run = RunState::Exited(Some(code));
                                true
                            }
                            _ => false,
                        },
                        Some("telemetry") | Some("important") => false,
                        _ => {
                            self.add_output(&output.output);
                            false
                        }
                    }
                }
                _ => false,
            },
        }
    }
}

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
        sandbox: Option<Vec<String>>,
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
        let name = adapter.name();
        let mut output_reader = None;
        let (transport, process) = match &start {
            Start::AttachPort { port } => {
                let stream = tokio::net::TcpStream::connect(("127.0.0.1", *port))
                    .await
                    .map_err(|source| Error::Io {
                        adapter: format!("the debuggee listening on port {port}"),
                        source,
                    })?;
                let (read, write) = stream.into_split();
                (Transport::new(name, read, write, sink), None)
            }
            Start::Launch { found, .. } => {
                let argv: Vec<String> = match adapter {
                    AdapterId::Debugpy => vec!["-m".into(), "debugpy.adapter".into()],
                    AdapterId::Delve => vec!["dap".into(), "--listen=127.0.0.1:0".into()],
                    AdapterId::Lldb | AdapterId::Dart => Vec::new(),
                };
                let command = Command::new(&found.binary, workspace_root)
                    .args(argv)
                    .stdin(Input::Piped)
                    .stdout(Output::Piped)
                    .stderr(Output::Tail(Arc::clone(&adapter_stderr)))
                    .sandbox(sandbox.map(|argv| tools_process::Sandbox { argv }));
                let mut child = command.spawn().map_err(|source| Error::Spawn {
                    adapter: name.to_owned(),
                    source,
                })?;
                let stdout = child.take_stdout();
                let stdin = child.take_stdin();
                let transport = match (adapter, stdout, stdin) {
                    (AdapterId::Delve, Some(stdout), _) => {
                        // dlv speaks DAP on a socket it announces on stdout; what it prints
                        // after that is the debuggee's output.
                        let mut lines = BufReader::new(stdout).lines();
                        let announced = tokio::time::timeout(timeouts.startup, async {
                            while let Ok(Some(line)) = lines.next_line().await {
                                if let Some((_, address)) = line.split_once("listening at:") {
                                    return Some(address.trim().to_owned());
                                }
                            }
                            None
                        })
                        .await
                        .ok()
                        .flatten();
                        let Some(address) = announced else {
                            return Err(Error::Gone {
                                adapter: name.to_owned(),
                                command: "dap --listen".to_owned(),
                                details: stderr_details(&adapter_stderr),
                            });
                        };
                        let stream = tokio::net::TcpStream::connect(address.as_str())
                            .await
                            .map_err(|source| Error::Io {
                                adapter: name.to_owned(),
                                source,
                            })?;
                        let state = Arc::clone(&state);
                        output_reader = Some(tokio::spawn(async move {
                            while let Ok(Some(line)) = lines.next_line().await {
                                if let Ok(mut state) = state.lock() {
                                    state.add_output(&format!("{line}\n"));
                                }
                            }
                        }));
                        let (read, write) = stream.into_split();
                        Transport::new(name, read, write, sink)
                    }
                    (_, Some(stdout), Some(stdin)) => Transport::new(name, stdout, stdin, sink),
                    _ => {
                        return Err(Error::Gone {
                            adapter: name.to_owned(),
                            command: "spawn".to_owned(),
                            details: " (its pipes were not available)".to_owned(),
                        });
                    }
                };
                (transport, Some(child))
            }
        };
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

    async fn handshake(
        &mut self,
        start: &Start,
        breakpoints: &BTreeMap<PathBuf, Vec<u32>>,
    ) -> Result<Vec<FileBreakpoints>> {
        let adapter_id = match self.adapter {
            AdapterId::Debugpy => "debugpy",
            AdapterId::Lldb => "lldb-dap",
            AdapterId::Delve => "go",
            AdapterId::Dart => "dart",
        };
        let capabilities = self
            .transport
            .request(
                "initialize",
                json!({
                    "clientID": "agent-tools",
                    "clientName": "agent-tools",
                    "adapterID": adapter_id,
                    "locale": "en",
                    "linesStartAt1": true,
                    "columnsStartAt1": true,
                    "pathFormat": "path",
                    "supportsVariableType": true,
                    "supportsRunInTerminalRequest": false,
                    "supportsStartDebuggingRequest": false,
                }),
                self.timeouts.startup,
            )
            .await?;
        self.capabilities = dap::body(capabilities);
        let (command, arguments) = self.start_arguments(start);
        let in_flight = self.transport.send(command, arguments).await?;
        let startup = self.timeouts.startup;
        let mut answer = tokio::spawn(in_flight.answer(startup));
        let deadline = Instant::now() + startup;
        let mut answered: Option<Value> = None;
        let mut changes = self.changes.clone();
        loop {
            let (initialized, live) = {
                let state = self.lock();
                (state.initialized, state.run.is_live())
            };
            if initialized {
                break;
            }
            if !live {
                return Err(Error::Gone {
                    adapter: self.adapter.name().to_owned(),
                    command: command.to_owned(),
                    details: String::new(),
                });
            }
            tokio::select! {
                result = &mut answer, if answered.is_none() => {
                    answered = Some(flatten(result, self.adapter, command)?);
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    return Err(Error::Timeout {
                        adapter: self.adapter.name().to_owned(),
                        command: format!("{command} (waiting for `initialized`)"),
                        seconds: startup.as_secs(),
                    });
                }
            }
        }
        let mut set = Vec::new();
        for (file, lines) in breakpoints {
            set.push(self.set_breakpoints(file, lines).await?);
        }
        if self.capabilities.exception_breakpoint_filters.is_some() {
            // No filter: only breakpoints stop the program, never a caught exception.
            self.transport
                .request(
                    "setExceptionBreakpoints",
                    json!({"filters": []}),
                    self.timeouts.request,
                )
                .await?;
        }
        if self.capabilities.supports_configuration_done_request {
            self.transport
                .request("configurationDone", json!({}), self.timeouts.request)
                .await?;
        }
        if answered.is_none() {
            flatten(answer.await, self.adapter, command)?;
        }
        Ok(set)
    }

    fn start_arguments(&self, start: &Start) -> (&'static str, Value) {
        let root = self.root.display().to_string();
        match start {
            Start::AttachPort { port } => (
                "attach",
                json!({
                    "request": "attach",
                    "connect": {"host": "127.0.0.1", "port": port},
                    "justMyCode": true,
                }),
            ),
            Start::Launch {
                found,
                program,
                args,
            } => {
                let program = program.display().to_string();
                let arguments = match found.adapter {
                    AdapterId::Debugpy => json!({
                        "request": "launch",
                        "type": "python",
                        "program": program,
                        "args": args,
                        "cwd": root,
                        "console": "internalConsole",
                        "justMyCode": true,
                        "stopOnEntry": false,
                        // Child processes are not debugged (we run one session, and refuse
                        // `startDebugging`): without this they would wait for a debugger.
                        "subProcess": false,
                        "python": [found.binary.display().to_string()],
                    }),
                    AdapterId::Delve => json!({
                        "request": "launch",
                        // A package folder or a `.go` file is built by delve; anything else
                        // is taken for a binary built already.
                        "mode": if Path::new(&program).is_dir() || program.ends_with(".go") {
                            "debug"
                        } else {
                            "exec"
                        },
                        "program": program,
                        "args": args,
                        "cwd": root,
                        "stopOnEntry": false,
                    }),
                    AdapterId::Lldb | AdapterId::Dart => json!({
                        "request": "launch",
                        "program": program,
                        "args": args,
                        "cwd": root,
                        "stopOnEntry": false,
                    }),
                };
                ("launch", arguments)
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
        let body = self
            .transport
            .request(
                "setBreakpoints",
                json!({
                    "source": {"path": file.display().to_string()},
                    "breakpoints": lines.iter().map(|line| json!({"line": line})).collect::<Vec<_>>(),
                    "lines": lines,
                    "sourceModified": false,
                }),
                self.timeouts.request,
            )
            .await?;
        let answered: Vec<Breakpoint> =
            serde_json::from_value(body["breakpoints"].clone()).unwrap_or_default();
        Ok(FileBreakpoints {
            file: file.to_path_buf(),
            asked: lines.to_vec(),
            answered,
        })
    }

    /// One request, with the ordinary timeout.
    pub(crate) async fn request(&self, command: &str, arguments: Value) -> Result<Value> {
        self.transport
            .request(command, arguments, self.timeouts.request)
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

    /// The output since it was last taken, and how many characters were cut from it.
    pub(crate) fn take_output(&self) -> (String, usize) {
        let mut state = self.lock();
        let cut = std::mem::take(&mut state.output_cut);
        (std::mem::take(&mut state.output), cut)
    }

    /// Everything the debuggee printed, up to its last [`RUN_OUTPUT_CHARS`], and how many
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
                .request(
                    "disconnect",
                    json!({"terminateDebuggee": !attached}),
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

/// The exit code in an adapter's console message "Process 1234 has exited with status 7"
/// (delve) or "Process 1234 exited with status = 7" (lldb).
fn console_exit_code(message: &str) -> Option<i64> {
    let rest = message.trim().strip_prefix("Process ")?;
    let (_, status) = rest.split_once("exited with status")?;
    status
        .trim_start_matches([' ', '='])
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn stderr_details(tail: &StderrTail) -> String {
    let lines = tail.last(5);
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its last words: {}", lines.join(" | "))
    }
}

fn flatten(
    joined: std::result::Result<Result<Value>, tokio::task::JoinError>,
    adapter: AdapterId,
    command: &str,
) -> Result<Value> {
    joined.unwrap_or_else(|_| {
        Err(Error::Gone {
            adapter: adapter.name().to_owned(),
            command: command.to_owned(),
            details: String::new(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dap::Event;

    fn event(name: &str, body: Value) -> Incoming {
        Incoming::Event(Event {
            seq: 0,
            event: name.into(),
            body,
        })
    }

    #[test]
    fn output_is_held_up_to_its_cap_and_the_rest_counted() {
        let mut state = State::new();
        state.apply(event(
            "output",
            json!({"category": "stdout", "output": "a\nb"}),
        ));
        state.apply(event(
            "output",
            json!({"category": "stdout", "output": "x".repeat(OUTPUT_HELD_CHARS)}),
        ));
        assert_eq!(state.output.chars().count(), OUTPUT_HELD_CHARS);
        assert_eq!(state.output_cut, 3);
        assert_eq!(state.tail, ["a"]);
        // The whole run's record keeps its end and counts what it dropped from the front.
        state.apply(event(
            "output",
            json!({"category": "stderr", "output": format!("{}Traceback\n", "é".repeat(RUN_OUTPUT_CHARS))}),
        ));
        assert_eq!(state.run_output.chars().count(), RUN_OUTPUT_CHARS);
        assert!(state.run_output.ends_with("éTraceback\n"));
        assert_eq!(state.run_output_cut, 3 + OUTPUT_HELD_CHARS + 10);
    }

    #[test]
    fn delve_and_lldb_say_the_exit_code_on_the_console() {
        assert_eq!(
            console_exit_code("Process 12812 has exited with status 7\n"),
            Some(7)
        );
        assert_eq!(
            console_exit_code("Process 9 exited with status = 1 (0x00000001)"),
            Some(1)
        );
        assert_eq!(console_exit_code("Detaching"), None);
    }

    #[test]
    fn an_exit_code_survives_the_terminated_event() {
        let mut state = State::new();
        assert!(state.apply(event("exited", json!({"exitCode": 3}))));
        assert!(state.apply(event("terminated", json!({}))));
        assert!(state.apply(Incoming::Closed));
        assert_eq!(state.run, RunState::Exited(Some(3)));
    }
}
