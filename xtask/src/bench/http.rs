//! `cargo xtask bench http`: what `serve --http` adds to a call over `serve` on stdio, in one
//! run of the same release binary. Two servers on one workspace, each driven by a bare client
//! (a line per message on stdio; one kept-alive HTTP/1.1 connection, one POST per message),
//! both speaking self-contained 2026-07-28 requests; calls alternate between them so drift
//! falls on both. Measured: a `read` of a small file and an `eval` of `1`, each round trip.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// Timed calls per tool and transport.
const ROUNDS: usize = 300;
/// Calls before timing (the kernel started, the file cached).
const WARMUP: usize = 20;
const TOKEN: &str = "bench-token-0123456789abcdefghij";

pub(crate) fn run() -> anyhow::Result<()> {
    if let Some(done) = super::in_release("http") {
        return done;
    }
    let root = crate::project_root();
    let built = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "agent-tools",
            "--bin",
            "agent-tools",
        ])
        .current_dir(&root)
        .status()
        .context("cannot build the release agent-tools")?;
    if !built.success() {
        bail!("the release build of agent-tools failed");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let binary = target.join("release/agent-tools");
    let workspace = tempfile::tempdir()?;
    std::fs::write(
        workspace.path().join("app.py"),
        "def area(side):\n    return side * side\n",
    )?;
    let mut stdio = Stdio_::start(&binary, workspace.path())?;
    let mut http = Http::start(&binary, workspace.path())?;

    let calls = [
        ("read", json!({"path": "app.py"})),
        (
            "eval",
            json!({"language": "python", "code": "1", "description": "the smallest cell there is"}),
        ),
    ];
    println!(
        "serve over stdio against serve --http, the same release binary, {ROUNDS} round trips each"
    );
    for (tool, arguments) in &calls {
        let mut on_stdio = Vec::with_capacity(ROUNDS);
        let mut on_http = Vec::with_capacity(ROUNDS);
        for round in 0..WARMUP + ROUNDS {
            let stdio_took = stdio.call(tool, arguments)?;
            let http_took = http.call(tool, arguments)?;
            if round >= WARMUP {
                on_stdio.push(stdio_took);
                on_http.push(http_took);
            }
        }
        println!("  `{tool}`");
        let stdio_median = super::lsp::print_row("stdio", &mut on_stdio);
        let http_median = super::lsp::print_row("http", &mut on_http);
        let p90 = |samples: &[Duration]| samples[(samples.len() - 1) * 9 / 10];
        println!(
            "    http − stdio: median {:+.3} ms, p90 {:+.3} ms; medians' ratio http/stdio {:.2}×",
            (http_median.as_secs_f64() - stdio_median.as_secs_f64()) * 1000.0,
            (p90(&on_http).as_secs_f64() - p90(&on_stdio).as_secs_f64()) * 1000.0,
            http_median.as_secs_f64() / stdio_median.as_secs_f64()
        );
    }
    stdio.end();
    http.end();
    Ok(())
}

/// The `_meta` of a self-contained 2026-07-28 request.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    })
}

fn call_message(id: u64, tool: &str, arguments: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta()}})
}

/// Fails unless `answer` is a successful tool result.
fn check(tool: &str, answer: &Value) -> anyhow::Result<()> {
    if answer["result"]["isError"] == json!(true) || answer.get("error").is_some() {
        bail!("`{tool}` failed: {answer}");
    }
    Ok(())
}

/// `serve` on stdio (the `_` keeps the name off `std::process::Stdio`).
struct Stdio_ {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Stdio_ {
    fn start(binary: &Path, root: &Path) -> anyhow::Result<Self> {
        let mut child = Command::new(binary)
            .args(["serve", "--approval", "allow", "--root"])
            .arg(root)
            .env("AGENT_TOOLS_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start serve")?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut stdio = Stdio_ {
            child,
            stdin,
            stdout,
            next: 1,
        };
        stdio.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
            "params": {"_meta": meta()}}),
        )?;
        Ok(stdio)
    }

    fn send(&mut self, message: &Value) -> anyhow::Result<Value> {
        let id = message["id"].clone();
        writeln!(self.stdin, "{message}")?;
        self.stdin.flush()?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("serve closed its output");
            }
            let answer: Value = serde_json::from_str(&line)?;
            if answer["id"] == id {
                return Ok(answer);
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: &Value) -> anyhow::Result<Duration> {
        self.next += 1;
        let message = call_message(self.next, tool, arguments);
        let started = Instant::now();
        let answer = self.send(&message)?;
        let took = started.elapsed();
        check(tool, &answer)?;
        Ok(took)
    }

    fn end(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// `serve --http` on loopback, with one kept-alive connection.
struct Http {
    child: Child,
    stream: BufReader<TcpStream>,
    addr: String,
    next: u64,
    _ready: tempfile::TempDir,
}

impl Http {
    fn start(binary: &Path, root: &Path) -> anyhow::Result<Self> {
        let ready_dir = tempfile::tempdir()?;
        let ready: PathBuf = ready_dir.path().join("ready");
        let mut child = Command::new(binary)
            .args([
                "serve",
                "--approval",
                "allow",
                "--http",
                "127.0.0.1:0",
                "--root",
            ])
            .arg(root)
            .arg("--ready-file")
            .arg(&ready)
            .env("AGENT_TOOLS_LOG", "warn")
            .env("AGENT_TOOLS_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start serve --http")?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let url = loop {
            if let Ok(url) = std::fs::read_to_string(&ready) {
                break url.trim().to_owned();
            }
            if Instant::now() > deadline || child.try_wait()?.is_some() {
                let _ = child.kill();
                bail!("serve --http did not become ready");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        let stream = TcpStream::connect(&addr)?;
        stream.set_nodelay(true)?;
        Ok(Http {
            child,
            stream: BufReader::new(stream),
            addr,
            next: 1,
            _ready: ready_dir,
        })
    }

    fn post(&mut self, message: &Value, tool: &str) -> anyhow::Result<Value> {
        let body = message.to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n\
             Content-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let stream = self.stream.get_mut();
        stream.write_all(head.as_bytes())?;
        stream.write_all(body.as_bytes())?;
        let mut length = None;
        let mut status = String::new();
        self.stream.read_line(&mut status)?;
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let Some(length) = length else {
            bail!("an answer without Content-Length (a stream, not JSON): {status}");
        };
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body)?;
        serde_json::from_slice(&body).context("the answer is not JSON")
    }

    fn call(&mut self, tool: &str, arguments: &Value) -> anyhow::Result<Duration> {
        self.next += 1;
        let message = call_message(self.next, tool, arguments);
        let started = Instant::now();
        let answer = self.post(&message, tool)?;
        let took = started.elapsed();
        check(tool, &answer)?;
        Ok(took)
    }

    fn end(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}
