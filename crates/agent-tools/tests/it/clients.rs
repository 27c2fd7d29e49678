//! `agent-tools serve` to the MCP TypeScript SDK and the MCP Inspector's CLI, pinned (issue
//! 21), over stdio and over Streamable HTTP (PROD-2): the SDK's own client in Node runs
//! `tests/clients/typescript_sdk.mjs` against the binary — listing without schema warnings,
//! plain calls, `lsp` diagnostics, a write under an approval card answered through
//! elicitation, and the SDK's 2025-11-25 tasks (`callToolStream`, `getTask`, `listTasks`,
//! `cancelTask`).

use std::path::Path;

use crate::support::{MARK, unique_mark, until_processes};
use tools_test_support::http::{HttpServe, TOKEN};
use tools_test_support::{LanguageServer, available, python_project, repo_root, require};

/// The SDK version `cargo xtask setup` installs under `.tools/node`.
const SDK: &str = "1.32.2";

fn sdk_installed(modules: &Path) -> bool {
    std::fs::read_to_string(modules.join("@modelcontextprotocol/sdk/package.json"))
        .is_ok_and(|package| package.contains(&format!("\"version\": \"{SDK}\"")))
}

/// How the TypeScript check reaches `serve`.
enum Over {
    /// It starts `serve` itself, over stdio.
    Stdio,
    /// It connects to a `serve --http` the test started (PROD-2).
    Http,
}

async fn typescript_sdk_check(over: Over) {
    let modules = repo_root().join(".tools/node/node_modules");
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !require("node", node, "apt-get install nodejs")
        || !require(
            "the MCP TypeScript SDK",
            sdk_installed(&modules),
            &format!("npm install --prefix .tools/node @modelcontextprotocol/sdk@{SDK}"),
        )
        || !require(
            "basedpyright",
            available(LanguageServer::Basedpyright),
            LanguageServer::Basedpyright.install(),
        )
    {
        return;
    }
    let project = python_project(&[(
        "app.py",
        "class Shape:\n    def area(self) -> float:\n        return 1.0\n",
    )]);
    let root = project.path();
    // Node resolves an ES module's imports from its own folder up: the script runs beside a
    // link to the SDK's node_modules.
    let dir = tempfile::tempdir().unwrap();
    let check = dir.path().join("check");
    std::fs::create_dir(&check).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/typescript_sdk.mjs"),
        check.join("typescript_sdk.mjs"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&modules, check.join("node_modules")).unwrap();
    let mut command = tokio::process::Command::new("node");
    command.arg(check.join("typescript_sdk.mjs"));
    let (served, mark) = match over {
        Over::Stdio => {
            let mark = unique_mark();
            command
                .arg(env!("CARGO_BIN_EXE_agent-tools"))
                .env(MARK, &mark);
            (None, mark)
        }
        Over::Http => {
            let served = HttpServe::start(root, &["--approval", "ask"]).await;
            command
                .args(["--http", &served.url])
                .env("AGENT_TOOLS_TOKEN", TOKEN);
            let mark = served.mark.clone();
            (Some(served), mark)
        }
    };
    let output = command.arg(root).kill_on_drop(true).output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(120), output)
        .await
        .expect("the TypeScript check ran over 120 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failed: Vec<&str> = stdout
        .lines()
        .filter(|line| !line.contains("\"ok\":true"))
        .collect();
    assert!(
        output.status.success() && failed.is_empty() && stdout.lines().count() >= 16,
        "the TypeScript SDK check failed:\n{}\nstderr:\n{}",
        failed.join("\n"),
        String::from_utf8_lossy(&output.stderr)
    );
    if let Some(mut served) = served {
        // Over HTTP the run is the server's: SIGTERM ends it.
        let status = served.terminate(std::time::Duration::from_secs(30)).await;
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(0),
            "{}",
            served.stderr()
        );
    }
    // Nothing the server started is left.
    let left = until_processes(&mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[tokio::test]
async fn the_typescript_sdk_lists_calls_answers_a_card_and_runs_tasks() {
    typescript_sdk_check(Over::Stdio).await;
}

#[tokio::test]
async fn prod_2_the_typescript_sdk_does_the_same_over_streamable_http() {
    typescript_sdk_check(Over::Http).await;
}

/// The MCP Inspector's CLI, pinned; `cargo xtask setup` installs it under `.tools/inspector`.
const INSPECTOR: &str = "2.12.0";

/// Whether the pinned Inspector is installed (said loudly when not; fails under `CI=true`).
fn inspector_installed() -> bool {
    let installed = std::fs::read_to_string(
        repo_root()
            .join(".tools/inspector/node_modules/@modelcontextprotocol/inspector/package.json"),
    )
    .is_ok_and(|package| package.contains(&format!("\"version\": \"{INSPECTOR}\"")));
    require(
        "the MCP Inspector",
        installed,
        &format!(
            "npm install --prefix .tools/inspector @modelcontextprotocol/inspector@{INSPECTOR}"
        ),
    )
}

/// One `mcp-inspector --cli` run against `serve` in `root`: its exit status, stdout (the
/// method's result as JSON) and the stderr lines that are not the server's own log.
async fn inspector(
    bin: &Path,
    root: &Path,
    mark: &str,
    serve: &[&str],
    method: &[&str],
) -> (bool, serde_json::Value, Vec<String>) {
    let mut command = tokio::process::Command::new(bin);
    command
        .arg("--cli")
        .arg(env!("CARGO_BIN_EXE_agent-tools"))
        .args(["serve", "--root"])
        .arg(root)
        .args(serve)
        .args(method)
        .env(MARK, mark)
        .kill_on_drop(true);
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
        .await
        .expect("the Inspector ran over 60 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::String(stdout.into()));
    let stderr = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| !line.contains("agent_tools"))
        .map(str::to_owned)
        .collect();
    (output.status.success(), value, stderr)
}

#[tokio::test]
async fn the_inspector_cli_lists_strictly_and_calls_the_matrix() {
    let bin = repo_root().join(".tools/inspector/node_modules/.bin/mcp-inspector");
    if !inspector_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("workspace");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(
        root.join("app.py"),
        "def area(side):\n    return side * side\n",
    )
    .unwrap();
    // A worker that reads its brief from stdin, as a real one does.
    let worker = dir.path().join("worker.sh");
    std::fs::write(&worker, "#!/bin/sh\necho \"worker read: $(cat)\"\n").unwrap();
    std::fs::set_permissions(&worker, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        root.join("agent-tools.toml"),
        format!("[vibe]\nfast = [{:?}]\n", worker.display().to_string()),
    )
    .unwrap();
    let mark = unique_mark();
    let call = |tool: &'static str| ["--method", "tools/call", "--tool-name", tool];

    // Strict mode: exit 6 on any error-severity portability problem of a schema.
    let (ok, listed, stderr) = inspector(
        &bin,
        &root,
        &mark,
        &["--vibe"],
        &["--method", "tools/list", "--strict"],
    )
    .await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(ok && stderr.is_empty(), "strict listing: {stderr:?}");
    assert!(
        names.contains(&"eval") && names.contains(&"vibe_spawn"),
        "{names:?}"
    );

    let (ok, read, _) = inspector(
        &bin,
        &root,
        &mark,
        &[],
        &[&call("read")[..], &["--tool-arg", "path=app.py"]].concat(),
    )
    .await;
    assert!(ok, "{read}");
    let content = read["structuredContent"]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(content.contains("return side * side"), "{read}");

    let (ok, search, _) = inspector(
        &bin,
        &root,
        &mark,
        &[],
        &[
            &call("ast_grep")[..],
            &["--tool-arg", "pattern=return $X", "language=python"],
        ]
        .concat(),
    )
    .await;
    assert!(ok, "{search}");
    assert_eq!(search["structuredContent"]["total"], 1, "{search}");
    assert!(
        search.to_string().contains("app.py:2: return side * side"),
        "{search}"
    );

    // A cell past the task grace: this 2025-11-25 client names the tasks extension but reads
    // a plain call's answer as a result.
    let (ok, cell, stderr) = inspector(
        &bin,
        &root,
        &mark,
        &["--approval", "allow"],
        &[
            &call("eval")[..],
            &[
                "--tool-arg",
                "code=import time; time.sleep(2.5); print(6 * 7)",
                "description=sleep past the grace, then print a product",
            ],
        ]
        .concat(),
    )
    .await;
    assert!(ok, "{cell} {stderr:?}");
    assert!(cell.to_string().contains("42"), "{cell}");

    let (ok, spawned, _) = inspector(
        &bin,
        &root,
        &mark,
        &["--vibe"],
        &[
            &call("vibe_spawn")[..],
            &["--tool-arg", "brief=say hello", "label=greeter"],
        ]
        .concat(),
    )
    .await;
    assert!(ok, "{spawned}");
    assert_eq!(spawned["structuredContent"]["worker_id"], "w1", "{spawned}");

    // The Inspector takes no elicitation: a write under `ask` has no approver and is refused
    // at once, saying so, and nothing is written.
    let (_, write, _) = inspector(
        &bin,
        &root,
        &mark,
        &["--approval", "ask"],
        &[
            &call("write")[..],
            &["--tool-arg", "path=new.txt", "content=hi"],
        ]
        .concat(),
    )
    .await;
    assert_eq!(write["isError"], true, "{write}");
    assert!(
        write.to_string().contains("no approver is connected"),
        "{write}"
    );
    assert!(!root.join("new.txt").exists());

    // Every server ended with its Inspector, the worker with its run.
    let left = until_processes(&mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[tokio::test]
async fn prod_2_the_inspector_cli_lists_strictly_and_calls_over_streamable_http() {
    let bin = repo_root().join(".tools/inspector/node_modules/.bin/mcp-inspector");
    if !inspector_installed()
        || !require(
            "basedpyright",
            available(LanguageServer::Basedpyright),
            LanguageServer::Basedpyright.install(),
        )
    {
        return;
    }
    let project = python_project(&[("app.py", "def area(side):\n    return side * side\n")]);
    let mut served = HttpServe::start(project.path(), &["--approval", "allow"]).await;
    let authorization = format!("Authorization: Bearer {TOKEN}");
    let inspect = |method: Vec<String>| {
        let mut command = tokio::process::Command::new(&bin);
        command
            .args(["--cli", &served.url, "--transport", "http", "--header"])
            .arg(&authorization)
            .args(method)
            .kill_on_drop(true);
        async move {
            let output = tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
                .await
                .expect("the Inspector ran over 60 s")
                .unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            let value = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::String(
                stdout + &String::from_utf8_lossy(&output.stderr),
            ));
            (output.status.success(), value)
        }
    };
    let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();

    let (ok, listed) = inspect(args(&["--method", "tools/list", "--strict"])).await;
    assert!(ok, "strict listing over HTTP: {listed}");
    assert!(listed.to_string().contains("\"name\":\"lsp\""), "{listed}");
    let (ok, read) = inspect(args(&[
        "--method",
        "tools/call",
        "--tool-name",
        "read",
        "--tool-arg",
        "path=app.py",
    ]))
    .await;
    assert!(
        ok && read.to_string().contains("return side * side"),
        "{read}"
    );
    let (ok, cell) = inspect(args(&[
        "--method",
        "tools/call",
        "--tool-name",
        "eval",
        "--tool-arg",
        "code=import time; time.sleep(2.5); print(6 * 7)",
        "description=sleep past the task grace, then print a product",
    ]))
    .await;
    assert!(ok && cell.to_string().contains("42"), "{cell}");
    let (ok, diagnostics) = inspect(args(&[
        "--method",
        "tools/call",
        "--tool-name",
        "lsp",
        "--tool-arg",
        "operation=diagnostics",
        "path=app.py",
    ]))
    .await;
    assert!(
        ok && diagnostics["structuredContent"].is_object(),
        "{diagnostics}"
    );
    assert!(diagnostics.to_string().contains("app.py"), "{diagnostics}");
    // A wrong token is refused: the CLI reads the 401's `WWW-Authenticate: Bearer` as "sign
    // in first" and says so.
    let mut wrong = tokio::process::Command::new(&bin);
    wrong
        .args(["--cli", &served.url, "--transport", "http", "--header"])
        .arg("Authorization: Bearer wrong-token-wrong-token")
        .args(["--method", "tools/list"]);
    let refused = wrong.output().await.unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("auth_required"),
        "{refused:?}"
    );
    let status = served.terminate(std::time::Duration::from_secs(30)).await;
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        served.stderr()
    );
    let left = until_processes(&served.mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind: {left:?}");
}
