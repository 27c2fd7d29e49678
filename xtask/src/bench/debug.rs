//! `cargo xtask bench debug`: for debugpy and lldb-dap, the time from `launch` to the first
//! stop at a breakpoint and the round trip of one step, through the `debug` tool (in-process
//! dispatch) against a minimal direct DAP client doing the same requests in the same run: a
//! step is `next`, its `stopped` event, then `stackTrace`, `scopes` and `variables` of the top
//! frame — what the tool asks to render a stop. The difference is our overhead (target:
//! under 5 ms at the median).
//!
//! The direct client is xtask's own (xtask is tooling, not a crate of the runtime): it spawns
//! the adapter with tokio and kills it when done.

use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_tools::RunBuilder;
use agent_tools::tools_core::{ApprovalPolicy, Dispatcher, DispatcherOptions, ToolCall, Workspace};
use agent_tools::tools_debug::{DebugConfig, DebugSupervisor};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

const STEPS: usize = 40;
const ROUNDS: usize = 3;
const TARGET: Duration = Duration::from_millis(5);

const PYTHON: &str = "def main():\n    total = 0\n    for i in range(1000000):\n        total += i\n    print(total)\n\n\nmain()\n";
const PYTHON_LINE: u32 = 4;
const C: &str = "int main(void) {\n    long total = 0;\n    for (long i = 0; i < 1000000; i++) {\n        total += i;\n    }\n    return (int)(total & 0x7f);\n}\n";
const C_LINE: u32 = 4;

pub(crate) fn run() -> anyhow::Result<()> {
    // Unlike `bench ast`, this runs in the build it was started from: a release build of the
    // whole umbrella with fat LTO takes longer than the benchmark is worth, and a dev build's
    // overhead is an upper bound of a release build's.
    if cfg!(debug_assertions) {
        println!("(a dev build: our overhead here is an upper bound)");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        bench_adapter(Adapter::Debugpy).await?;
        bench_adapter(Adapter::Lldb).await
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Adapter {
    Debugpy,
    Lldb,
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    source: &'static str,
    program: &'static str,
    line: u32,
    adapter_argv: Vec<String>,
}

fn fixture(adapter: Adapter) -> anyhow::Result<Fixture> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    match adapter {
        Adapter::Debugpy => {
            std::fs::write(
                root.join("pyproject.toml"),
                "[project]\nname = \"b\"\nversion = \"0\"\n",
            )?;
            std::fs::write(root.join("loop.py"), PYTHON)?;
            std::os::unix::fs::symlink(crate::project_root().join(".venv"), root.join(".venv"))?;
            let python = root.join(".venv/bin/python3").display().to_string();
            Ok(Fixture {
                _dir: dir,
                root,
                source: "loop.py",
                program: "loop.py",
                line: PYTHON_LINE,
                adapter_argv: vec![python, "-m".into(), "debugpy.adapter".into()],
            })
        }
        Adapter::Lldb => {
            std::fs::write(root.join("CMakeLists.txt"), "project(b C)\n")?;
            std::fs::write(root.join("loop.c"), C)?;
            let built = std::process::Command::new("gcc")
                .args(["-g", "-O0", "-o", "loop", "loop.c"])
                .current_dir(&root)
                .status()
                .context("cannot run gcc")?;
            if !built.success() {
                bail!("gcc failed on the benchmark's C program");
            }
            let lldb = ["lldb-dap", "lldb-dap-19"]
                .into_iter()
                .find(|name| which(name))
                .context("lldb-dap is not installed (apt-get install lldb-19)")?;
            Ok(Fixture {
                _dir: dir,
                root,
                source: "loop.c",
                program: "loop",
                line: C_LINE,
                adapter_argv: vec![lldb.to_owned()],
            })
        }
    }
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

async fn bench_adapter(adapter: Adapter) -> anyhow::Result<()> {
    let name = match adapter {
        Adapter::Debugpy => "debugpy",
        Adapter::Lldb => "lldb-dap",
    };
    println!("{name}: launch to the first stop, and {STEPS} steps × {ROUNDS} rounds");
    let mut tool_launch = Vec::new();
    let mut direct_launch = Vec::new();
    let mut tool_steps = Vec::new();
    let mut direct_steps = Vec::new();
    for _ in 0..ROUNDS {
        let fixture = fixture(adapter)?;
        let (launch, steps) = through_tool(&fixture).await?;
        tool_launch.push(launch);
        tool_steps.extend(steps);
        let (launch, steps) = direct(&fixture, adapter).await?;
        direct_launch.push(launch);
        direct_steps.extend(steps);
    }
    super::lsp::print_row("tool launch", &mut tool_launch);
    super::lsp::print_row("direct launch", &mut direct_launch);
    let tool = super::lsp::print_row("tool step", &mut tool_steps);
    let direct = super::lsp::print_row("direct step", &mut direct_steps);
    let overhead = tool.saturating_sub(direct);
    println!(
        "  overhead per step at the median: {:.3} ms (target under {} ms — {})",
        overhead.as_secs_f64() * 1000.0,
        TARGET.as_millis(),
        if overhead < TARGET { "met" } else { "NOT met" }
    );
    Ok(())
}

async fn through_tool(fixture: &Fixture) -> anyhow::Result<(Duration, Vec<Duration>)> {
    let workspace = Workspace::new(&fixture.root)?;
    let supervisor = DebugSupervisor::new(DebugConfig::default());
    let registry = RunBuilder::new(workspace)
        .bind::<agent_tools::tools_debug::DebugFamily>(supervisor.clone())
        .registry();
    let dispatcher = Dispatcher::new(
        registry,
        DispatcherOptions {
            approval: ApprovalPolicy::Allow,
            ..DispatcherOptions::default()
        },
    );
    let call = |arguments: Value| {
        dispatcher.dispatch(ToolCall {
            name: "debug".into(),
            arguments,
        })
    };
    let set =
        call(json!({"operation": "breakpoints", "path": fixture.source, "lines": [fixture.line]}))
            .await;
    if set.is_error {
        bail!("breakpoints failed: {}", set.text);
    }
    let started = Instant::now();
    let stop = call(json!({"operation": "launch", "program": fixture.program})).await;
    let launch = started.elapsed();
    if stop.is_error || !stop.text.contains("stopped: breakpoint") {
        bail!("launch did not stop at the breakpoint: {}", stop.text);
    }
    let mut steps = Vec::new();
    for _ in 0..STEPS {
        let started = Instant::now();
        let step = call(json!({"operation": "step_over"})).await;
        steps.push(started.elapsed());
        if step.is_error || !step.text.contains("stopped: ") {
            bail!("a step did not stop: {}", step.text);
        }
    }
    call(json!({"operation": "terminate"})).await;
    supervisor.end_all().await;
    Ok((launch, steps))
}

/// A minimal DAP client: one request at a time, events read as they come.
struct Direct {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    seq: i64,
}

impl Direct {
    async fn send(&mut self, command: &str, arguments: Value) -> anyhow::Result<i64> {
        self.seq += 1;
        let body =
            json!({"seq": self.seq, "type": "request", "command": command, "arguments": arguments})
                .to_string();
        self.stdin
            .write_all(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes())
            .await?;
        self.stdin.flush().await?;
        Ok(self.seq)
    }

    async fn read(&mut self) -> anyhow::Result<Value> {
        tokio::time::timeout(Duration::from_secs(30), self.read_message())
            .await
            .context("the adapter said nothing for 30 s")?
    }

    async fn read_message(&mut self) -> anyhow::Result<Value> {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).await? == 0 {
                bail!("the adapter closed its output");
            }
            let line = line.trim_end();
            if line.is_empty() {
                if length > 0 {
                    break;
                }
                continue;
            }
            if let Some(value) = line.strip_prefix("Content-Length:") {
                length = value.trim().parse()?;
            }
        }
        let mut body = vec![0u8; length];
        self.stdout.read_exact(&mut body).await?;
        Ok(serde_json::from_slice(&body)?)
    }

    /// Reads until the response to `seq` (answering nothing else), returning its body.
    async fn response(&mut self, seq: i64) -> anyhow::Result<Value> {
        loop {
            let message = self.read().await?;
            if message["type"] == "response" && message["request_seq"] == seq {
                if message["success"] != true {
                    bail!("{} failed: {}", message["command"], message["message"]);
                }
                return Ok(message["body"].clone());
            }
        }
    }

    async fn request(&mut self, command: &str, arguments: Value) -> anyhow::Result<Value> {
        let seq = self.send(command, arguments).await?;
        self.response(seq).await
    }

    /// Reads until both the response to `seq` and the event `name` came, in either order.
    async fn response_and_event(&mut self, seq: i64, name: &str) -> anyhow::Result<Value> {
        let (mut answered, mut event) = (false, None);
        while !answered || event.is_none() {
            let message = self.read().await?;
            if message["type"] == "response" && message["request_seq"] == seq {
                answered = true;
            } else if message["type"] == "event" && message["event"] == name {
                event = Some(message["body"].clone());
            }
        }
        Ok(event.unwrap_or_default())
    }
}

async fn direct(fixture: &Fixture, adapter: Adapter) -> anyhow::Result<(Duration, Vec<Duration>)> {
    let started = Instant::now();
    let mut child = tokio::process::Command::new(&fixture.adapter_argv[0])
        .args(&fixture.adapter_argv[1..])
        .current_dir(&fixture.root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start the adapter")?;
    let stdin = child.stdin.take().context("no stdin")?;
    let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
    let mut dap = Direct {
        child,
        stdin,
        stdout,
        seq: 0,
    };
    dap.request("initialize", json!({"adapterID": "bench", "linesStartAt1": true, "columnsStartAt1": true, "pathFormat": "path"})).await?;
    let program = fixture.root.join(fixture.program).display().to_string();
    let cwd = fixture.root.display().to_string();
    let arguments = match adapter {
        Adapter::Debugpy => {
            json!({"program": program, "cwd": cwd, "console": "internalConsole", "justMyCode": true})
        }
        Adapter::Lldb => json!({"program": program, "cwd": cwd}),
    };
    let launch = dap.send("launch", arguments).await?;
    // lldb-dap answers `launch` before `initialized`, debugpy after `configurationDone`.
    let mut launch_answered = false;
    loop {
        let message = dap.read().await?;
        if message["type"] == "response" && message["request_seq"] == launch {
            launch_answered = true;
        } else if message["type"] == "event" && message["event"] == "initialized" {
            break;
        }
    }
    let source = fixture.root.join(fixture.source).display().to_string();
    dap.request(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": [{"line": fixture.line}]}),
    )
    .await?;
    let done = dap.send("configurationDone", json!({})).await?;
    let mut answered = (launch_answered, false);
    let mut stopped = None;
    while !(answered.0 && answered.1) || stopped.is_none() {
        let message = dap.read().await?;
        if message["type"] == "response" && message["request_seq"] == launch {
            answered.0 = true;
        } else if message["type"] == "response" && message["request_seq"] == done {
            answered.1 = true;
        } else if message["type"] == "event" && message["event"] == "stopped" {
            stopped = Some(message["body"].clone());
        }
    }
    let first_stop = started.elapsed();
    let thread = stopped
        .as_ref()
        .and_then(|s| s["threadId"].as_i64())
        .unwrap_or(1);
    let mut steps = Vec::new();
    for _ in 0..STEPS {
        let started = Instant::now();
        let seq = dap.send("next", json!({"threadId": thread})).await?;
        dap.response_and_event(seq, "stopped").await?;
        let trace = dap
            .request(
                "stackTrace",
                json!({"threadId": thread, "startFrame": 0, "levels": 1}),
            )
            .await?;
        let frame = trace["stackFrames"][0]["id"].as_i64().unwrap_or(0);
        let scopes = dap.request("scopes", json!({"frameId": frame})).await?;
        let reference = scopes["scopes"][0]["variablesReference"]
            .as_i64()
            .unwrap_or(0);
        dap.request("variables", json!({"variablesReference": reference}))
            .await?;
        steps.push(started.elapsed());
    }
    let _ = dap
        .request("disconnect", json!({"terminateDebuggee": true}))
        .await;
    let _ = dap.child.kill().await;
    Ok((first_stop, steps))
}
