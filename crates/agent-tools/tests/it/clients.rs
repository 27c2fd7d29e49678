//! `agent-tools serve` to the MCP TypeScript SDK, pinned (issue 21): the SDK's own client in
//! Node runs `tests/clients/typescript_sdk.mjs` against the binary — listing without schema
//! warnings, plain calls, a write under an approval card answered through elicitation, and
//! the SDK's 2025-11-25 tasks (`callToolStream`, `getTask`, `listTasks`, `cancelTask`).

use std::path::Path;

use crate::lsp::{available, repo_root};
use crate::support::{MARK, unique_mark, until_processes};

/// The SDK version `cargo xtask setup` installs under `.tools/node`.
const SDK: &str = "1.32.2";

fn sdk_installed(modules: &Path) -> bool {
    std::fs::read_to_string(modules.join("@modelcontextprotocol/sdk/package.json"))
        .is_ok_and(|package| package.contains(&format!("\"version\": \"{SDK}\"")))
}

#[tokio::test]
async fn the_typescript_sdk_lists_calls_answers_a_card_and_runs_tasks() {
    let modules = repo_root().join(".tools/node/node_modules");
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !available("node", node, "apt-get install nodejs")
        || !available(
            "the MCP TypeScript SDK",
            sdk_installed(&modules),
            &format!("npm install --prefix .tools/node @modelcontextprotocol/sdk@{SDK}"),
        )
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("workspace");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(
        root.join("app.py"),
        "class Shape:\n    def area(self) -> float:\n        return 1.0\n",
    )
    .unwrap();
    // Node resolves an ES module's imports from its own folder up: the script runs beside a
    // link to the SDK's node_modules.
    let check = dir.path().join("check");
    std::fs::create_dir(&check).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/typescript_sdk.mjs"),
        check.join("typescript_sdk.mjs"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&modules, check.join("node_modules")).unwrap();
    let mark = unique_mark();
    let output = tokio::process::Command::new("node")
        .arg(check.join("typescript_sdk.mjs"))
        .arg(env!("CARGO_BIN_EXE_agent-tools"))
        .arg(&root)
        .env(MARK, &mark)
        .kill_on_drop(true)
        .output();
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
        output.status.success() && failed.is_empty() && stdout.lines().count() >= 15,
        "the TypeScript SDK check failed:\n{}\nstderr:\n{}",
        failed.join("\n"),
        String::from_utf8_lossy(&output.stderr)
    );
    // The client closed the server: nothing it started is left.
    let left = until_processes(&mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind: {left:?}");
}
