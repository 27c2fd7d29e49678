//! Reaching an adapter: spawning it (through `tools_process::Command`, in its own group, with
//! the run's sandbox prefix) and speaking DAP over its stdio, or over the socket delve
//! announces, or connecting to a debugpy that listens on a port.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::task::JoinHandle;
use tools_process::{Command, Input, Output, StderrTail};

use super::state::State;
use super::{Start, stderr_details};
use crate::adapters::AdapterId;
use crate::transport::{Sink, Transport};
use crate::{Error, Result};

/// A reached adapter.
pub(super) struct Connection {
    pub transport: Transport,
    /// The adapter's process, unless we attached to a listening debuggee.
    pub process: Option<tools_process::Child>,
    /// delve's stdout after its announcement: the debuggee's output, read into `state`.
    pub output_reader: Option<JoinHandle<()>>,
}

/// What `connect` needs besides the start itself.
pub(super) struct ConnectOptions<'a> {
    pub workspace_root: &'a Path,
    pub sandbox: Option<tools_process::Sandbox>,
    pub sink: Sink,
    pub state: &'a Arc<Mutex<State>>,
    pub adapter_stderr: &'a Arc<StderrTail>,
    /// How long delve may take to announce its socket.
    pub startup: Duration,
}

/// Spawns (or connects to) the adapter of `start`, delivering its events to `sink`.
pub(super) async fn connect(
    start: &Start,
    adapter: AdapterId,
    options: ConnectOptions<'_>,
) -> Result<Connection> {
    let ConnectOptions {
        workspace_root,
        sandbox,
        sink,
        state,
        adapter_stderr,
        startup,
    } = options;
    let name = adapter.name();
    let mut output_reader = None;
    let (transport, process) = match start {
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
                .stderr(Output::Tail(Arc::clone(adapter_stderr)))
                .sandbox(sandbox);
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
                    let announced = tokio::time::timeout(startup, async {
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
                            details: stderr_details(adapter_stderr),
                        });
                    };
                    let stream = tokio::net::TcpStream::connect(address.as_str())
                        .await
                        .map_err(|source| Error::Io {
                            adapter: name.to_owned(),
                            source,
                        })?;
                    let state = Arc::clone(state);
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
    Ok(Connection {
        transport,
        process,
        output_reader,
    })
}
