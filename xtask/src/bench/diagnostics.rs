//! `cargo xtask bench diagnostics`: diagnostics on write (LSP-6) against the servers
//! themselves. For rust-analyzer and basedpyright, each round writes the same change twice,
//! in two copies of a small project: once through the `write` tool (write call → result,
//! diagnostics included), and once by a direct client that writes the file, sends
//! `didChange` and `didSave`, and records when the server's last publish for the file
//! arrived (didSave → final publish). Rounds alternate between introducing a type error and
//! fixing it. The target: our result within 50 ms of the server's final publish at the
//! median. Nothing here sleeps for a fixed time: the direct client knows a publish was the
//! last one only after the server has gone quiet, but it times the publish, not the quiet.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use agent_tools::RunBuilder;
use agent_tools::tools_core::{ApprovalPolicy, Dispatcher, DispatcherOptions, ToolCall, Workspace};
use agent_tools::tools_lsp::{LspConfig, LspSupervisor};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{Mutex, mpsc};
use tokio::time::Instant;

/// Rounds per server (half introduce an error, half fix it).
const ROUNDS: usize = 20;
const TARGET: Duration = Duration::from_millis(50);
/// How long the direct client waits, after the server's check ended, for publishes that
/// would come later; only the publish times are measured.
const DIRECT_QUIET: Duration = Duration::from_millis(1500);

pub(crate) fn run() -> anyhow::Result<()> {
    // Our layer's share is tens of milliseconds; measure it as shipped.
    if let Some(outcome) = super::in_release("diagnostics") {
        return outcome;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let repo = crate::project_root();
        println!(
            "diagnostics on write: {ROUNDS} rounds per server, alternating a new type error and \
             its fix; each round is timed through `write` and by a direct client"
        );
        for project in [rust_project(&repo), python_project(&repo)] {
            bench(&project).await?;
        }
        Ok(())
    })
}

/// A project to edit, and how to run its server directly.
struct Project {
    server: &'static str,
    /// The file each round rewrites, relative to the root.
    file: &'static str,
    files: Vec<(&'static str, String)>,
    /// The file's text with an error and without.
    broken: String,
    fixed: String,
    /// The direct client's server command.
    command: Vec<String>,
    /// Whether the server runs a check on save whose progress the direct client waits for.
    check_token: Option<&'static str>,
    config: LspConfig,
}

fn rust_project(repo: &Path) -> Project {
    let module = |n: usize| {
        format!(
            "pub fn value_{n}(input: u32) -> u32 {{\n    input * {n} + 1\n}}\n\npub struct Item{n} {{\n    pub id: u32,\n}}\n"
        )
    };
    let mut files = vec![
        (
            "Cargo.toml",
            "[package]\nname = \"bench_diagnostics\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"
                .to_owned(),
        ),
        (
            "rust-toolchain.toml",
            std::fs::read_to_string(repo.join("rust-toolchain.toml")).unwrap_or_default(),
        ),
        (
            "src/lib.rs",
            "pub mod one;\npub mod two;\npub mod three;\npub mod edited;\n".to_owned(),
        ),
        ("src/one.rs", module(1)),
        ("src/two.rs", module(2)),
        ("src/three.rs", module(3)),
    ];
    let fixed = "use crate::one::value_1;\n\npub fn total(count: u32) -> u32 {\n    let mut sum = 0;\n    for i in 0..count {\n        sum += value_1(i);\n    }\n    sum\n}\n".to_owned();
    let broken = fixed.replace(
        "    sum\n}",
        "    let text: u32 = \"sum\";\n    sum + text\n}",
    );
    files.push(("src/edited.rs", fixed.clone()));
    Project {
        server: "rust-analyzer",
        file: "src/edited.rs",
        files,
        broken,
        fixed,
        command: vec!["rust-analyzer".into()],
        check_token: Some("rust-analyzer/flycheck"),
        config: LspConfig::default(),
    }
}

fn python_project(repo: &Path) -> Project {
    let fixed = "from app.shapes import area\n\n\ndef total(count: int) -> int:\n    result = 0\n    for i in range(count):\n        result += area(i)\n    return result\n".to_owned();
    let broken = fixed.replace(
        "    return result\n",
        "    text: int = \"result\"\n    return result + text\n",
    );
    let bin = repo.join(".venv/bin");
    Project {
        server: "basedpyright",
        file: "app/edited.py",
        files: vec![
            (
                "pyproject.toml",
                "[project]\nname = \"bench\"\nversion = \"0.1.0\"\n".to_owned(),
            ),
            ("app/__init__.py", String::new()),
            (
                "app/shapes.py",
                "def area(side: int) -> int:\n    return side * side\n".to_owned(),
            ),
            ("app/edited.py", fixed.clone()),
        ],
        broken,
        fixed,
        command: vec![
            bin.join("basedpyright-langserver").display().to_string(),
            "--stdio".into(),
        ],
        check_token: None,
        config: LspConfig {
            path: vec![bin],
            ..LspConfig::default()
        },
    }
}

fn lay_out(project: &Project) -> anyhow::Result<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    for (path, text) in &project.files {
        let full = root.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(full, text)?;
    }
    Ok((dir, root))
}

async fn bench(project: &Project) -> anyhow::Result<()> {
    let (_ours_dir, ours_root) = lay_out(project)?;
    let (_direct_dir, direct_root) = lay_out(project)?;

    let workspace = Workspace::new(&ours_root)?;
    let supervisor = LspSupervisor::new(workspace.root(), project.config.clone())?;
    let dispatcher = Dispatcher::new(
        RunBuilder::new(workspace)
            .bind::<agent_tools::tools_files::FilesFamily>(())
            .bind::<agent_tools::tools_lsp::LspFamily>(supervisor)
            .registry(),
        DispatcherOptions {
            approval: ApprovalPolicy::Allow,
            ..DispatcherOptions::default()
        },
    );
    let write = |content: &str| {
        dispatcher.dispatch(ToolCall {
            name: "write".into(),
            arguments: json!({"path": project.file, "content": content}),
        })
    };
    let mut direct = Direct::start(&project.command, &direct_root, project.check_token).await?;
    let direct_path = direct_root.join(project.file);
    direct.open(&direct_path).await?;

    // Warm both up: the server starts, indexes and checks once, and the file's baseline is
    // taken; neither is timed.
    let started = Instant::now();
    let first = write(&project.fixed).await;
    if first.is_error {
        bail!("the first write failed: {}", first.text);
    }
    let first_call = started.elapsed();
    direct.change(&direct_path, &project.fixed).await?;

    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let mut differences = Vec::new();
    let mut unsettled = 0;
    for round in 0..ROUNDS {
        let text = match round % 2 {
            0 => &project.broken,
            _ => &project.fixed,
        };
        // Whichever goes second may find the other's server still busy after its answer
        // (rust-analyzer primes its caches after a change): take turns going first.
        let direct_first = round % 4 >= 2;
        let mut theirs_took = Duration::ZERO;
        if direct_first {
            theirs_took = direct.change(&direct_path, text).await?;
        }
        let started = Instant::now();
        let result = write(text).await;
        let ours_took = started.elapsed();
        if result.is_error {
            bail!("write failed in round {round}: {}", result.text);
        }
        // The written file's entry of the report: checked (settled in time) or not, and how
        // many diagnostics the write introduced there.
        let structured = result.structured.unwrap_or_default();
        let file = &structured["diagnostics"]["files"][0];
        let settled = file["state"] == json!("checked");
        let introduced = file["introduced"].as_u64().unwrap_or(0);
        if !settled || (round % 2 == 0) != (introduced > 0) {
            unsettled += 1;
            println!(
                "  round {round}: unexpected result ({introduced} introduced, settled: {settled}): {}",
                result.text
            );
        }
        if !direct_first {
            theirs_took = direct.change(&direct_path, text).await?;
        }
        ours.push(ours_took);
        theirs.push(theirs_took);
        differences.push(ours_took.as_secs_f64() - theirs_took.as_secs_f64());
    }
    direct.stop().await;

    println!(
        "{} (first write, server start and baseline included: {:.2} s; {unsettled} of {ROUNDS} \
         rounds unexpected)",
        project.server,
        first_call.as_secs_f64()
    );
    println!("  direct client, didSave → the server's final publish:");
    crate::bench::lsp::print_row("server", &mut theirs);
    println!("  `write` call → its result, diagnostics included:");
    crate::bench::lsp::print_row("write", &mut ours);
    differences.sort_by(f64::total_cmp);
    let median = differences[differences.len() / 2];
    let p90 = differences[((differences.len() - 1) as f64 * 0.9).round() as usize];
    let ratio = median_of(&ours).as_secs_f64() / median_of(&theirs).as_secs_f64().max(1e-9);
    println!(
        "  per round, write − server: median {:+.1} ms, p90 {:+.1} ms; medians' ratio \
         write/server {ratio:.2}×",
        median * 1000.0,
        p90 * 1000.0
    );
    println!(
        "  target: our result within {} ms of the server's final publish at the median — {}",
        TARGET.as_millis(),
        if median * 1000.0 <= TARGET.as_millis() as f64 {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(())
}

fn median_of(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

/// A minimal LSP client: frames JSON-RPC over the server's stdio, answers the server's
/// requests at once (nulls; one null per `workspace/configuration` item), and hands every
/// other message to the bench with its arrival time.
struct Direct {
    child: Child,
    stdin: Arc<Mutex<ChildStdin>>,
    messages: mpsc::UnboundedReceiver<(Instant, Value)>,
    version: i32,
    check_token: Option<&'static str>,
}

impl Direct {
    async fn start(
        command: &[String],
        root: &Path,
        check_token: Option<&'static str>,
    ) -> anyhow::Result<Direct> {
        let (program, args) = command.split_first().context("empty server command")?;
        let mut child = Command::new(program)
            .args(args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        let stdin = Arc::new(Mutex::new(child.stdin.take().context("no stdin")?));
        let stdout = child.stdout.take().context("no stdout")?;
        let (sender, messages) = mpsc::unbounded_channel();
        let answers = Arc::clone(&stdin);
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader).await {
                let arrived = Instant::now();
                if let (Some(method), Some(id)) = (message.get("method"), message.get("id")) {
                    let result = match method.as_str() {
                        Some("workspace/configuration") => Value::Array(vec![
                            Value::Null;
                            message["params"]["items"]
                                .as_array()
                                .map_or(0, Vec::len)
                        ]),
                        _ => Value::Null,
                    };
                    let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
                    if send_message(&answers, &answer).await.is_err() {
                        return;
                    }
                    continue;
                }
                if sender.send((arrived, message)).is_err() {
                    return;
                }
            }
        });
        let mut direct = Direct {
            child,
            stdin,
            messages,
            version: 0,
            check_token,
        };
        let root_uri = format!("file://{}", root.display());
        direct
            .send(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "processId": std::process::id(),
                    "rootUri": root_uri,
                    "workspaceFolders": [{"uri": root_uri, "name": "bench"}],
                    "capabilities": {
                        "window": {"workDoneProgress": true},
                        "textDocument": {
                            "synchronization": {"didSave": true},
                            "publishDiagnostics": {"versionSupport": true}
                        },
                        "workspace": {"configuration": true, "workspaceFolders": true}
                    }
                }}),
            )
            .await?;
        loop {
            let (_, message) = direct.next().await?;
            if message["id"] == json!(1) {
                break;
            }
        }
        direct
            .send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            .await?;
        Ok(direct)
    }

    async fn next(&mut self) -> anyhow::Result<(Instant, Value)> {
        self.messages
            .recv()
            .await
            .context("the server closed its output")
    }

    async fn send(&self, message: Value) -> anyhow::Result<()> {
        send_message(&self.stdin, &message).await
    }

    async fn open(&mut self, path: &Path) -> anyhow::Result<()> {
        let text = std::fs::read_to_string(path)?;
        self.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri(path), "languageId": language(path), "version": 0, "text": text}
        }}))
        .await
    }

    /// Writes `text` to the file, sends didChange and didSave, and returns the time from
    /// didSave to the server's last publish for the file (known once the server's check, if
    /// it runs one, has ended and no publish came for [`DIRECT_QUIET`]).
    async fn change(&mut self, path: &Path, text: &str) -> anyhow::Result<Duration> {
        std::fs::write(path, text)?;
        self.version += 1;
        let uri = uri(path);
        self.send(
            json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": self.version},
                "contentChanges": [{"text": text}]
            }}),
        )
        .await?;
        let saved = Instant::now();
        self.send(
            json!({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {
                "textDocument": {"uri": uri}
            }}),
        )
        .await?;
        let mut last_publish = None;
        let mut check = match self.check_token {
            Some(_) => CheckSeen::Waiting,
            None => CheckSeen::Ended,
        };
        loop {
            let quiet_from = last_publish.unwrap_or(saved).max(saved);
            let wait = match check {
                CheckSeen::Ended if last_publish.is_some() => quiet_from + DIRECT_QUIET,
                // Nothing yet: wait long (the server may still be indexing).
                _ => saved + Duration::from_secs(120),
            };
            let message = match tokio::time::timeout_at(wait, self.next()).await {
                Ok(message) => message?,
                Err(_) => break,
            };
            let (arrived, message) = message;
            match message["method"].as_str() {
                Some("textDocument/publishDiagnostics") if message["params"]["uri"] == uri => {
                    last_publish = Some(arrived);
                }
                Some("$/progress") => {
                    let token = match &message["params"]["token"] {
                        Value::String(token) => token.clone(),
                        other => other.to_string(),
                    };
                    if self
                        .check_token
                        .is_some_and(|prefix| token.starts_with(prefix))
                    {
                        match message["params"]["value"]["kind"].as_str() {
                            Some("begin") => check = CheckSeen::Running,
                            Some("end") if check == CheckSeen::Running => check = CheckSeen::Ended,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        let last = last_publish.context("the server published nothing for the file")?;
        Ok(last.saturating_duration_since(saved))
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CheckSeen {
    Waiting,
    Running,
    Ended,
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn language(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("rs") => "rust",
        _ => "python",
    }
}

async fn read_message(reader: &mut BufReader<ChildStdout>) -> Option<Value> {
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.ok()? == 0 {
                return None;
            }
            let line = line.trim();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("Content-Length:") {
                length = value.trim().parse().ok();
            }
        }
        let mut body = vec![0; length?];
        reader.read_exact(&mut body).await.ok()?;
        if let Ok(message) = serde_json::from_slice(&body) {
            return Some(message);
        }
    }
}

async fn send_message(stdin: &Mutex<ChildStdin>, message: &Value) -> anyhow::Result<()> {
    let body = serde_json::to_vec(message)?;
    let mut stdin = stdin.lock().await;
    stdin
        .write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
        .await?;
    stdin.write_all(&body).await?;
    stdin.flush().await?;
    Ok(())
}
