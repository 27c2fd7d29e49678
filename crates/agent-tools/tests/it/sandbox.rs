//! The run's sandbox as `serve` checks it, once, as the run begins (EVAL-9; SPEC section 12:
//! "the `[sandbox]` prefix applies to every child, language servers and checkers included").
//! A prefix that cannot start anything here (bubblewrap that cannot nest) or that maps the
//! workspace to another path is refused: the log says so once at start, every tool that would
//! start a process answers with the same message, the file tools keep working, and nothing
//! is started through the prefix after the check. Each scenario is one transcript snapshot.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::support::{Client, MARK, Server, agent_tools_binary, unique_mark, until_processes};
use tools_test_support::sandbox::{NESTED_BWRAP, bwrap_at_workspace, bwrap_ready, recorder};
use tools_test_support::{Transcript, snapshot_settings, write_files};

/// What bubblewrap says when it cannot make a namespace differs between kernels; the
/// snapshot keeps that it said something, after `bwrap: `.
const BWRAP_WORDS: &[(&str, &str)] = &[(
    r"\(exit status: 1\): bwrap: [^;]*;",
    "(exit status: 1): bwrap: [WHY];",
)];

/// A temp folder for a project, and its canonical path (the run's root).
fn folder() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

/// A Python project in `root` (with a marker basedpyright would start for) whose run has
/// `sandbox` as its `[sandbox] command`, and `more` in its config file.
fn write_project(root: &Path, sandbox: &[String], more: &str) {
    let command = serde_json::to_string(sandbox).unwrap();
    write_files(
        root,
        &[
            (
                "agent-tools.toml",
                &format!("[sandbox]\ncommand = {command}\n{more}"),
            ),
            (
                "pyproject.toml",
                "[project]\nname = \"p\"\nversion = \"0\"\n",
            ),
            ("app.py", "x: int = 1\n"),
        ],
    );
}

/// `agent-tools serve` on `root` with its standard error read to the end by a task: what
/// the operator's log shows.
async fn serve_with_log(root: &Path) -> (Server, tokio::task::JoinHandle<String>) {
    let mut command = tokio::process::Command::new(agent_tools_binary());
    command
        .arg("serve")
        .arg("--root")
        .arg(root)
        .args(["--approval", "allow"])
        .env("AGENT_TOOLS_LOG", "warn");
    let mark = unique_mark();
    command.env(MARK, &mark);
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = transport.id().unwrap();
    let mut stderr = stderr.unwrap();
    let log = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let client = Client::without_elicitation();
    let service = client.clone().serve(transport).await.unwrap();
    let server = Server {
        service,
        client,
        pid,
        mark,
    };
    (server, log)
}

/// Ends `server` and returns its whole log, once nothing it started is left.
async fn end(server: Server, log: tokio::task::JoinHandle<String>) -> String {
    let mark = server.mark.clone();
    server.service.cancel().await.unwrap();
    let log = tokio::time::timeout(Duration::from_secs(60), log)
        .await
        .unwrap()
        .unwrap();
    let left = until_processes(&mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind: {left:?}");
    log
}

fn cell(code: &str) -> Value {
    json!({"code": code, "description": "a cell the sandbox tests run"})
}

fn snapshot(name: &str, t: Transcript) {
    let transcript = t.finish_with(BWRAP_WORDS);
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(name, transcript);
}

#[tokio::test]
async fn eval_9_a_sandbox_that_cannot_nest_is_reported_once_and_starts_nothing() {
    if !bwrap_ready() {
        return;
    }
    let recorder_dir = tempfile::tempdir().unwrap();
    let (script, record) = recorder(recorder_dir.path());
    let mut prefix = vec![script.display().to_string()];
    prefix.extend(NESTED_BWRAP.iter().map(|word| (*word).to_owned()));
    let (_dir, root) = folder();
    // Workers too: `cat` reads the brief and prints it back.
    let vibe = format!(
        "\n[vibe]\nenabled = true\nfast = [\"cat\"]\nstate_dir = {:?}\n",
        recorder_dir.path().join("state").display().to_string()
    );
    write_project(&root, &prefix, &vibe);
    let (server, log) = serve_with_log(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "read", json!({"path": "app.py"})).await;
    t.call(
        &server,
        "lsp",
        json!({"operation": "diagnostics", "path": "app.py"}),
    )
    .await;
    t.call(
        &server,
        "lsp",
        json!({"operation": "diagnostics", "path": "*"}),
    )
    .await;
    t.call(&server, "eval", cell("1 + 1")).await;
    t.call(&server, "debug", json!({"operation": "adapters"}))
        .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "launch", "program": "app.py"}),
    )
    .await;
    t.call(
        &server,
        "vibe_spawn",
        json!({"brief": "say hello", "label": "hello", "tier": "fast"}),
    )
    .await;
    let log = end(server, log).await;
    snapshot(
        "eval_9_a_sandbox_that_cannot_nest_is_reported_once_and_starts_nothing",
        t,
    );
    // The log says it once, at start, however many tools answered with it.
    assert_eq!(
        log.matches("cannot start processes here").count(),
        1,
        "{log}"
    );
    // The check ran `true` through the prefix once; nothing was started through it after.
    let started = std::fs::read_to_string(&record).unwrap();
    let lines: Vec<&str> = started.lines().collect();
    assert_eq!(lines.len(), 1, "{started}");
    assert!(lines[0].ends_with(" -- true"), "{started}");
}

#[tokio::test]
async fn eval_9_a_sandbox_that_maps_the_workspace_elsewhere_is_refused_saying_why() {
    if !bwrap_ready() {
        return;
    }
    let (_dir, root) = folder();
    let prefix = bwrap_at_workspace(&root);
    write_project(&root, &prefix, "");
    let (server, log) = serve_with_log(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "eval", cell("1 + 1")).await;
    t.call(&server, "read", json!({"path": "app.py"})).await;
    let log = end(server, log).await;
    snapshot(
        "eval_9_a_sandbox_that_maps_the_workspace_elsewhere_is_refused_saying_why",
        t,
    );
    assert_eq!(
        log.matches("maps paths differently from the host").count(),
        1,
        "{log}"
    );
}
