//! How `serve` ends and what it leaves behind: every exit path — SIGTERM, stdin closing, the
//! client cancelling a call — is driven against a real project checker or language server,
//! and the whole process table is then searched for anything the server started (every
//! process it starts inherits the test's environment mark). Requests the transport cannot
//! read are answered, and progress reaches a client that sent a token.

use std::path::Path;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use tools_test_support::write_files;

use crate::lsp::{basedpyright_available, config, rust_analyzer_available, rust_project};
use crate::support::{Client, MARK, Server, marked_processes, unique_mark, until_processes};

/// A Python project whose check takes long enough to be interrupted: many modules.
fn python_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_files(
        root,
        &[(
            "pyproject.toml",
            "[project]\nname = \"slow\"\nversion = \"0\"\n",
        )],
    );
    for n in 0..400 {
        let body: String = (0..40)
            .map(|i| format!("def f{i}(x: int) -> int:\n    return x + {i}\n\n"))
            .collect();
        write_files(root, &[(&format!("pkg/m{n}.py"), &body)]);
    }
    write_files(root, &[("agent-tools.toml", &config(root))]);
    dir
}

async fn start_allowing(root: &Path) -> Server {
    Server::start(
        root,
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await
}

/// SIGKILLs `serve` and checks that every process it started, and every descendant of those,
/// is gone within 2 s (issue 22); prints the time for the note's matrix.
pub(crate) async fn sigkill_and_expect_nothing_left(server: &crate::support::Server, what: &str) {
    signal(server.pid, rustix::process::Signal::KILL);
    let killed = std::time::Instant::now();
    let left = crate::support::until_processes(&server.mark, <[String]>::is_empty).await;
    let took = killed.elapsed();
    assert!(
        left.is_empty(),
        "left behind after SIGKILL of serve ({what}): {left:?}"
    );
    eprintln!(
        "SIGKILL of serve with {what}: nothing left after {} ms ({})",
        took.as_millis(),
        tools_process::containment().describe()
    );
    assert!(
        took < std::time::Duration::from_secs(2),
        "{what}: gone only after {took:?}"
    );
}

pub(crate) fn signal(pid: u32, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

/// Sends `lsp diagnostics "*"` without waiting for the answer.
async fn start_project_check(server: &Server) -> rmcp::service::RequestHandle<rmcp::RoleClient> {
    let params = CallToolRequestParams::new("lsp").with_arguments(
        json!({"operation": "diagnostics", "path": "*"})
            .as_object()
            .cloned()
            .unwrap(),
    );
    server
        .service
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap()
}

/// Whether a marked process is basedpyright's project checker (not its language server).
fn is_checker(process: &str) -> bool {
    process.contains("basedpyright") && !process.contains("langserver")
}

/// Waits until the project checker runs under the server marked `mark`.
async fn checker_started(mark: &str) {
    let running = until_processes(mark, |found| found.iter().any(|p| is_checker(p))).await;
    assert!(
        running.iter().any(|p| is_checker(p)),
        "the checker never started: {running:?}"
    );
}

/// Waits for the server to exit (it must, within a minute) and returns whether it did.
pub(crate) fn exited(pid: u32) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        match tools_process::process_info(pid) {
            None => return true,
            Some(info) if info.is_zombie() => return true,
            Some(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

#[tokio::test]
async fn sigterm_during_a_project_check_leaves_no_process_behind() {
    if !basedpyright_available() {
        return;
    }
    let dir = python_project();
    let server = start_allowing(dir.path()).await;
    let _call = start_project_check(&server).await;
    checker_started(&server.mark).await;
    signal(server.pid, rustix::process::Signal::TERM);
    assert!(exited(server.pid), "serve did not exit after SIGTERM");
    let left = until_processes(&server.mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind after SIGTERM: {left:?}");
}

/// SIGKILL leaves serve no chance to end anything: the checker (a grandchild, through the
/// write tool's project check) ends with its namespace (issue 22).
#[tokio::test]
async fn sigkill_during_a_project_check_leaves_no_process_behind() {
    if !basedpyright_available() {
        return;
    }
    let dir = python_project();
    let server = start_allowing(dir.path()).await;
    let _call = start_project_check(&server).await;
    checker_started(&server.mark).await;
    sigkill_and_expect_nothing_left(&server, "a project checker running").await;
}

#[tokio::test]
async fn closing_stdin_during_a_project_check_leaves_no_process_behind() {
    if !basedpyright_available() {
        return;
    }
    let dir = python_project();
    let server = start_allowing(dir.path()).await;
    let (pid, mark) = (server.pid, server.mark.clone());
    let _call = start_project_check(&server).await;
    checker_started(&mark).await;
    // The client goes away: its end of stdin closes.
    server.service.cancel().await.unwrap();
    assert!(exited(pid), "serve did not exit after stdin closed");
    let left = until_processes(&mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind after stdin closed: {left:?}");
}

#[tokio::test]
async fn sigterm_while_rust_analyzer_runs_a_build_script_leaves_no_process_behind() {
    if !rust_analyzer_available() {
        return;
    }
    let (_dir, root) = rust_project();
    write_files(
        &root,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"slow_build\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            ),
            // A build script that runs for ten minutes: rust-analyzer runs it at start, as
            // a grandchild (rust-analyzer → cargo → build script).
            (
                "build.rs",
                "fn main() { std::thread::sleep(std::time::Duration::from_secs(600)); }\n",
            ),
            ("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n"),
            ("agent-tools.toml", &config(&root)),
        ],
    );
    let server = start_allowing(&root).await;
    let status = server.call("lsp", json!({"operation": "symbols", "path": "src/lib.rs"}));
    tokio::pin!(status);
    let found = tokio::select! {
        found = until_processes(&server.mark, |found| found.iter().any(|p| p.contains("build-script-build"))) => found,
        _ = &mut status => until_processes(&server.mark, |found| found.iter().any(|p| p.contains("build-script-build"))).await,
    };
    assert!(
        found.iter().any(|p| p.contains("build-script-build")),
        "the build script never ran: {found:?}"
    );
    signal(server.pid, rustix::process::Signal::TERM);
    assert!(exited(server.pid), "serve did not exit after SIGTERM");
    let left = until_processes(&server.mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind after SIGTERM: {left:?}");
}

#[tokio::test]
async fn a_cancelled_call_stops_its_checker_and_progress_reached_the_client() {
    if !basedpyright_available() {
        return;
    }
    let dir = python_project();
    let server = start_allowing(dir.path()).await;
    let call = start_project_check(&server).await;
    checker_started(&server.mark).await;
    // The request carried a progress token (rmcp sets one): the check said what it runs.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while server.client.progress.lock().unwrap().is_empty() && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let progress = server.client.progress.lock().unwrap().clone();
    let message = progress
        .first()
        .and_then(|p| p.message.clone())
        .unwrap_or_default();
    assert!(
        message.starts_with("running the project checker of basedpyright in ."),
        "progress: {progress:?}"
    );
    // notifications/cancelled: the checker's process group goes; the server stays up.
    call.cancel(Some("the user changed their mind".into()))
        .await
        .unwrap();
    let left = until_processes(&server.mark, |found| !found.iter().any(|p| is_checker(p))).await;
    assert!(
        !left.iter().any(|p| is_checker(p)),
        "the checker outlived its cancelled call: {left:?}"
    );
    let answer = server.call("read", json!({"path": "pyproject.toml"})).await;
    assert_eq!(answer.is_error, Some(false), "the server still answers");
    let (pid, mark) = (server.pid, server.mark.clone());
    server.service.cancel().await.unwrap();
    assert!(exited(pid));
    let left = until_processes(&mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A `serve` driven by hand, line by line, for requests no MCP client library would send.
struct Raw {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Raw {
    async fn start(root: &Path) -> Raw {
        Raw::start_with(root, &[]).await
    }

    async fn start_with(root: &Path, args: &[&str]) -> Raw {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-tools"))
            .args(["serve", "--root"])
            .arg(root)
            .args(args)
            .env(MARK, unique_mark())
            .env("AGENT_TOOLS_LOG", "warn")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut raw = Raw {
            child,
            stdin,
            lines,
        };
        raw.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        )
        .await;
        raw.answer().await;
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        raw
    }

    async fn send(&mut self, message: Value) {
        self.send_line(&message.to_string()).await;
    }

    async fn send_line(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next line the server writes, or `None` when it wrote nothing for `quiet`.
    async fn line_within(&mut self, quiet: Duration) -> Option<Value> {
        let line = tokio::time::timeout(quiet, self.lines.next_line())
            .await
            .ok()?
            .unwrap()?;
        Some(serde_json::from_str(&line).unwrap())
    }

    /// Closes stdin, as a client that is done does, and checks that the server exits with
    /// success.
    async fn close(self) {
        drop(self.stdin);
        let mut child = self.child;
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("serve did not exit when stdin closed")
            .unwrap();
        assert!(status.success(), "{status}");
    }

    async fn answer(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("no answer within 30s")
            .unwrap()
            .expect("the server closed its output");
        serde_json::from_str(&line).unwrap()
    }
}

#[tokio::test]
async fn a_request_nested_too_deep_to_parse_is_answered_and_the_server_goes_on() {
    // What no method takes is answered as JSON-RPC 2.0 says (issue 39).
    let dir = crate::support::workspace();
    let mut raw = Raw::start(dir.path()).await;
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    raw.send_line(&format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"read","arguments":{{"path":{deep}}}}}}}"#
    ))
    .await;
    let answer = raw.answer().await;
    assert_eq!(answer["id"], json!(7), "{answer}");
    assert_eq!(answer["error"]["code"], json!(-32700), "{answer}");
    // A request nested 125 levels deep parses, and its bad argument is named.
    let nested = format!("{}1{}", "[".repeat(120), "]".repeat(120));
    raw.send_line(&format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"read","arguments":{{"path":{nested}}}}}}}"#
    ))
    .await;
    let answer = raw.answer().await;
    assert_eq!(answer["id"], json!(8), "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.contains("field `path`"), "{answer}");
    // Text that is not JSON, bytes that are not UTF-8 and a batch are answered as JSON-RPC
    // 2.0 says, to `id: null`; arguments that are not an object are named.
    raw.send_line("{not json").await;
    let answer = raw.answer().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (Value::Null, json!(-32700)),
        "{answer}"
    );
    raw.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"\xff\"}\n")
        .await;
    let answer = raw.answer().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (Value::Null, json!(-32700)),
        "{answer}"
    );
    raw.send(json!([{"jsonrpc": "2.0", "id": 11, "method": "ping"}]))
        .await;
    let answer = raw.answer().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (Value::Null, json!(-32600)),
        "{answer}"
    );
    raw.send(json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call",
        "params": {"name": "read", "arguments": [1, 2]}}))
        .await;
    let answer = raw.answer().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(12), json!(-32602)),
        "{answer}"
    );
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("`arguments` must be a JSON object"),
        "{answer}"
    );
    // And the stream goes on.
    raw.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "read", "arguments": {"path": "notes.txt"}}}))
        .await;
    let answer = raw.answer().await;
    assert_eq!(answer["id"], json!(9));
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    raw.close().await;
}

#[tokio::test]
async fn a_server_with_no_calls_exits_at_once_when_stdin_closes() {
    let dir = crate::support::workspace();
    let raw = Raw::start(dir.path()).await;
    let Raw {
        mut child, stdin, ..
    } = raw;
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("serve did not exit")
        .unwrap();
    assert!(status.success());
    let _ = marked_processes("none");
}

/// A Rust crate with a helper another module calls (an edit to it breaks the caller, so the
/// edit waits for rust-analyzer's check), a Python script, and vibe workers that echo.
fn every_tool_project() -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, root) = rust_project();
    let worker = root.join("worker.sh");
    write_files(
        &root,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            (
                "src/lib.rs",
                "mod user;\n\npub fn helper(a: i32) -> i32 {\n    a + 1\n}\n",
            ),
            (
                "src/user.rs",
                "pub fn call() -> i32 {\n    crate::helper(1)\n}\n",
            ),
            ("app.py", "total = 1 + 1\nprint(total)\n"),
            (
                "pyproject.toml",
                "[project]\nname = \"demo\"\nversion = \"0\"\n",
            ),
            (
                "worker.sh",
                "#!/bin/sh\ncat >/dev/null; echo \"the worker is done\"\n",
            ),
        ],
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&worker, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        root.join("agent-tools.toml"),
        format!(
            "{}\n[vibe]\nfast = [{:?}]\n",
            config(&root),
            worker.display().to_string()
        ),
    )
    .unwrap();
    (dir, root)
}

#[tokio::test]
async fn prod_2_no_tool_sends_progress_after_its_response() {
    // MCP allows no progress notification for a request once it has been answered (issue 39
    // item 7): every tool is called with a progress token, over the wire, and each of its
    // notifications must come before its answer, including those sent while it waited for a
    // language server's check.
    if !rust_analyzer_available() {
        eprintln!("skipped: rust-analyzer is not installed");
        return;
    }
    let (_dir, root) = every_tool_project();
    let state = root.join(".state-outside");
    let state = state.display().to_string();
    let mut raw = Raw::start_with(
        &root,
        &["--approval", "allow", "--vibe", "--state-dir", &state],
    )
    .await;
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    let listed = raw.answer().await;
    let listed: Vec<String> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    // `null` ids are filled from the answer of the call that made them.
    let calls: Vec<(&str, Value)> = vec![
        ("read", json!({"path": "src/lib.rs"})),
        ("write", json!({"path": "notes.txt", "content": "notes\n"})),
        (
            "edit",
            json!({"path": "src/lib.rs", "old_string": "pub fn helper(a: i32)",
                   "new_string": "pub fn helper(a: i32, b: i32)"}),
        ),
        (
            "apply_patch",
            json!({"patch": "--- /dev/null\n+++ b/added.txt\n@@ -0,0 +1 @@\n+added\n"}),
        ),
        (
            "ast_grep",
            json!({"pattern": "crate::helper($$$A)", "language": "rust"}),
        ),
        (
            "ast_edit",
            json!({"pattern": "a + 1", "rewrite": "a + 2", "language": "rust"}),
        ),
        ("resolve", json!({"edit_id": null, "action": "discard"})),
        (
            "lsp",
            json!({"operation": "diagnostics", "path": "src/user.rs"}),
        ),
        (
            "lsp_rename",
            json!({"path": "src/lib.rs", "line": 3, "symbol": "helper", "new_name": "helped"}),
        ),
        (
            "lsp_code_action",
            json!({"path": "src/user.rs", "line": 2, "symbol": "helped", "title": "Inline"}),
        ),
        (
            "eval",
            json!({"code": "sum(range(10))", "description": "add up the first ten numbers"}),
        ),
        (
            "debug",
            json!({"operation": "launch", "program": "app.py", "lines": [2]}),
        ),
        ("debug", json!({"operation": "terminate"})),
        ("ask_user", json!({"question": "Which one?"})),
        (
            "vibe_spawn",
            json!({"brief": "finish", "label": "finish", "tier": "fast"}),
        ),
        ("vibe_wait", json!({"worker_id": null})),
        ("vibe_send", json!({"worker_id": null, "message": "more"})),
        ("vibe_list", json!({})),
        ("vibe_kill", json!({"worker_id": null})),
    ];
    let mut answered: Vec<(i64, String, Value)> = Vec::new();
    let mut progress = 0;
    let mut made = serde_json::Map::new();
    for (id, (name, mut arguments)) in (100..).zip(calls.clone()) {
        for (key, value) in arguments.as_object_mut().unwrap() {
            if value.is_null() {
                *value = made.get(key).cloned().unwrap_or(Value::Null);
            }
        }
        let token = format!("progress-{id}");
        raw.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": name, "arguments": arguments, "_meta": {"progressToken": token}}}),
        )
        .await;
        let answer = loop {
            let message = raw
                .line_within(Duration::from_secs(120))
                .await
                .unwrap_or_else(|| panic!("`{name}` got no answer within 120s"));
            if message["method"] == "notifications/progress" {
                let of = message["params"]["progressToken"].as_str().unwrap();
                assert!(
                    !answered.iter().any(|(_, token, _)| token == of),
                    "a progress notification came after its call's response: {message}"
                );
                progress += 1;
                continue;
            }
            if message["id"] == json!(id) {
                break message;
            }
        };
        if let Some(structured) = answer["result"]["structuredContent"].as_object() {
            for key in ["edit_id", "worker_id"] {
                if let Some(value) = structured.get(key) {
                    made.insert(key.to_owned(), value.clone());
                }
            }
        }
        answered.push((id, token, answer));
    }
    // Whatever a call's progress task still had, it would come within its interval.
    while let Some(message) = raw.line_within(Duration::from_millis(1_500)).await {
        assert_ne!(
            message["method"], "notifications/progress",
            "a progress notification came after its call's response: {message}"
        );
    }
    let called: Vec<&str> = calls.iter().map(|(name, _)| *name).collect();
    for name in &listed {
        assert!(called.contains(&name.as_str()), "`{name}` was not called");
    }
    for (id, _, answer) in &answered {
        assert!(answer.get("result").is_some(), "call {id}: {answer}");
    }
    // The test can fail: calls did report progress while they ran.
    assert!(progress > 0, "no call reported progress");
    raw.close().await;
}
