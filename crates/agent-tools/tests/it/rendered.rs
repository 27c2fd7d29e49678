//! What the model reads from every tool: one session through `agent-tools serve` per family,
//! each call's text answer in a snapshot (insta, `tests/it/snapshots/`), with the fixture's
//! folder, temp folders, pids and times replaced. A change to any tool's rendering shows up
//! here as a diff a reviewer reads exactly as the model would. Real servers, adapters and
//! kernels answer; the person behind a card and the workers are scripted.

use std::path::Path;

use serde_json::json;
use tools_test_support::{
    LanguageServer, Transcript, available, python_imports, python_project, snapshot_settings,
};

use crate::lsp::config;
use crate::support::{Client, Person, Server};

/// A Python package small enough to read in a snapshot, using the test venv as its own.
const APP: &str = r#"import sys


def total(prices):
    """Adds the prices up."""
    result = 0
    for price in prices:
        result += price
    return result


def main():
    prices = [3, 4, 5]
    print("total", total(prices))
    return 0


if __name__ == "__main__":
    sys.exit(main())
"#;

fn project(extra: &str) -> tempfile::TempDir {
    let dir = python_project(&[("app.py", APP), ("notes.txt", "alpha\nbeta\ngamma\n")]);
    std::fs::write(
        dir.path().join("agent-tools.toml"),
        format!("{}\n{extra}", config(dir.path())),
    )
    .unwrap();
    dir
}

async fn start(root: &Path, args: &[&str], client: Client) -> Server {
    let mut all = vec!["--approval", "allow"];
    all.extend(args);
    Server::start(root, &all, client).await
}

#[tokio::test]
async fn prod_2_the_file_tools_answer_as_snapshotted() {
    // The writes are checked by basedpyright (LSP-6): its report is part of the answer.
    if !available(LanguageServer::Basedpyright) {
        return;
    }
    let dir = project("");
    let server = start(dir.path(), &[], Client::without_elicitation()).await;
    let mut t = Transcript::new(dir.path());
    t.call(&server, "read", json!({"path": "notes.txt"})).await;
    t.call(
        &server,
        "read",
        json!({"path": "app.py", "offset": 4, "limit": 3}),
    )
    .await;
    t.call(&server, "read", json!({"path": "missing.txt"}))
        .await;
    t.call(
        &server,
        "write",
        json!({"path": "docs/new.md", "content": "# New\n"}),
    )
    .await;
    t.call(
        &server,
        "edit",
        json!({"path": "notes.txt", "old_string": "beta", "new_string": "BETA"}),
    )
    .await;
    t.call(
        &server,
        "edit",
        json!({"path": "notes.txt", "old_string": "delta", "new_string": "x"}),
    )
    .await;
    t.call(&server, "apply_patch",
        json!({"patch": "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n alpha\n-BETA\n+beta\n gamma\n"}),
    )
    .await;
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("file_tools", t.finish());
}

#[tokio::test]
async fn prod_2_the_structural_tools_answer_as_snapshotted() {
    // The writes are checked by basedpyright (LSP-6): its report is part of the answer.
    if !available(LanguageServer::Basedpyright) {
        return;
    }
    let dir = project("");
    let server = start(dir.path(), &[], Client::without_elicitation()).await;
    let mut t = Transcript::new(dir.path());
    t.call(
        &server,
        "ast_grep",
        json!({"pattern": "print($$$A)", "language": "python"}),
    )
    .await;
    t.call(
        &server,
        "ast_grep",
        json!({"pattern": "$X.unwrap()", "language": "rust"}),
    )
    .await;
    let staged = t
        .call(
            &server,
            "ast_edit",
            json!({"pattern": "result += $P", "rewrite": "result = result + $P", "language": "python"}),
        )
        .await;
    let id = staged["edit_id"].as_str().unwrap_or("none").to_owned();
    t.call(
        &server,
        "resolve",
        json!({"edit_id": id, "action": "accept"}),
    )
    .await;
    t.call(
        &server,
        "resolve",
        json!({"edit_id": id, "action": "accept"}),
    )
    .await;
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("structural_tools", t.finish());
}

#[tokio::test]
async fn lsp_5_the_language_server_tools_answer_as_snapshotted() {
    if !available(LanguageServer::Basedpyright) {
        return;
    }
    let dir = project("");
    let server = start(dir.path(), &[], Client::without_elicitation()).await;
    let mut t = Transcript::new(dir.path());
    t.call(
        &server,
        "lsp",
        json!({"operation": "symbols", "path": "app.py"}),
    )
    .await;
    t.call(
        &server,
        "lsp",
        json!({"operation": "references", "path": "app.py", "line": 4, "symbol": "total"}),
    )
    .await;
    t.call(
        &server,
        "lsp",
        json!({"operation": "hover", "path": "app.py", "line": 4, "symbol": "total"}),
    )
    .await;
    t.call(
        &server,
        "lsp",
        json!({"operation": "diagnostics", "path": "app.py"}),
    )
    .await;
    t.call(
        &server,
        "lsp_rename",
        json!({"path": "app.py", "line": 4, "symbol": "total", "new_name": "sum_prices"}),
    )
    .await;
    t.call(&server, "edit",
        json!({"path": "app.py", "old_string": "    return 0\n", "new_string": "    return undefined_name\n"}),
    )
    .await;
    t.call(&server, "lsp",
        json!({"operation": "code_actions", "path": "app.py", "line": 15, "symbol": "undefined_name"}),
    )
    .await;
    t.call(
        &server,
        "lsp_code_action",
        json!({"path": "app.py", "line": 15, "symbol": "undefined_name", "title": "Define it"}),
    )
    .await;
    t.call(
        &server,
        "lsp_code_action",
        json!({"path": "app.py", "line": 15, "symbol": "undefined_name",
            "title": "Add `# pyright: ignore[reportUndefinedVariable]`"}),
    )
    .await;
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("lsp_tools", t.finish());
}

#[tokio::test]
async fn eval_1_a_cell_answers_as_snapshotted() {
    if !python_imports("pandas, matplotlib, tabulate") {
        return;
    }
    let dir = project("");
    let server = start(dir.path(), &[], Client::without_elicitation()).await;
    let mut t = Transcript::new(dir.path());
    let description = "a cell of the snapshot test";
    t.call(&server, "eval",
        json!({"language": "python", "code": "x = 6 * 7\nprint('x is', x)\nx", "description": description}),
    )
    .await;
    t.call(
        &server,
        "eval",
        json!({"language": "python", "code": "1 / 0", "description": description}),
    )
    .await;
    t.call(&server, "eval",
        json!({"language": "python", "code": "r = tool('read', {'path': 'notes.txt'})\nprint(r)", "description": description}),
    )
    .await;
    let _guard = snapshot_settings().bind_to_scope();
    // The venv's interpreter is whatever Python the machine has.
    let eval = t.finish_with(&[
        (r"python \d+\.\d+\.\d+", "python [VERSION]"),
        (r#""version": "\d+\.\d+\.\d+""#, r#""version": "[VERSION]""#),
    ]);
    insta::assert_snapshot!("eval", eval);
}

#[tokio::test]
async fn dbg_1_a_debug_session_answers_as_snapshotted() {
    if !python_imports("debugpy") {
        return;
    }
    let dir = project("");
    let server = start(dir.path(), &[], Client::without_elicitation()).await;
    let mut t = Transcript::new(dir.path());
    t.call(
        &server,
        "debug",
        json!({"operation": "breakpoints", "path": "app.py", "lines": [9]}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "launch", "program": "app.py"}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "stack"}))
        .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "evaluate", "expression": "result + 1"}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "step_over"}))
        .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "breakpoints", "path": "app.py", "lines": []}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "continue"}))
        .await;
    t.call(&server, "debug", json!({"operation": "status"}))
        .await;
    let _guard = snapshot_settings().bind_to_scope();
    // Frame ids are the adapter's to choose.
    let debug = t.finish_with(&[(r"frame \d+", "frame [ID]")]);
    insta::assert_snapshot!("debug", debug);
}

#[tokio::test]
async fn ask_1_a_question_answers_as_snapshotted() {
    let dir = project("");
    let person = Client::answering(vec![
        Person::Accept(json!({"selected": "Postgres"})),
        Person::Decline,
    ]);
    let server = start(dir.path(), &[], person).await;
    let mut t = Transcript::new(dir.path());
    let question = json!({
        "question": "Which database should the service use?",
        "context": "The schema migration depends on it.",
        "options": [{"label": "Postgres", "description": "what production runs"}, {"label": "SQLite"}],
    });
    t.call(&server, "ask_user", question.clone()).await;
    t.call(&server, "ask_user", question).await;
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("ask_user", t.finish());
}

#[tokio::test]
async fn vibe_1_the_worker_tools_answer_as_snapshotted() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let worker = bin.join("worker");
    std::fs::write(
        &worker,
        "#!/bin/sh\nbrief=$(cat)\ncase \"$brief\" in\n  sleep*) sleep 300 & wait ;;\n  *) echo '{\"type\":\"progress\",\"text\":\"reading the brief\"}'; echo \"done: $brief\" ;;\nesac\n",
    )
    .unwrap();
    std::fs::set_permissions(&worker, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let worker = worker.display().to_string();
    let project = project(&format!(
        "[vibe]\nfast = [{worker:?}]\ngood = [{worker:?}]\nmax_workers = 2\n"
    ));
    let state = dir.path().join("state").display().to_string();
    let server = start(
        project.path(),
        &["--vibe", "--state-dir", &state],
        Client::without_elicitation(),
    )
    .await;
    let mut t = Transcript::new(project.path());
    let done = t
        .call(
            &server,
            "vibe_spawn",
            json!({"brief": "finish the task", "label": "finisher", "tier": "fast"}),
        )
        .await;
    let done = done["worker_id"].as_str().unwrap_or("none").to_owned();
    t.call(
        &server,
        "vibe_wait",
        json!({"worker_id": done, "timeout_seconds": 30}),
    )
    .await;
    let sleeper = t
        .call(
            &server,
            "vibe_spawn",
            json!({"brief": "sleep for a while", "label": "sleeper", "tier": "good"}),
        )
        .await;
    let sleeper = sleeper["worker_id"].as_str().unwrap_or("none").to_owned();
    t.call(&server, "vibe_list", json!({})).await;
    t.call(
        &server,
        "vibe_send",
        json!({"worker_id": done, "message": "one more thing"}),
    )
    .await;
    t.call(&server, "vibe_kill", json!({"worker_id": sleeper}))
        .await;
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("vibe", t.finish());
}

#[tokio::test]
async fn prod_2_the_instructions_read_as_snapshotted() {
    let dir = project("");
    let state = dir.path().join(".state").display().to_string();
    for (name, args) in [
        ("instructions", vec![]),
        (
            "instructions_vibe",
            vec!["--vibe", "--state-dir", state.as_str()],
        ),
    ] {
        let server = start(dir.path(), &args, Client::without_elicitation()).await;
        let instructions = server
            .service
            .peer_info()
            .and_then(|info| info.instructions.clone())
            .unwrap_or_default();
        // Codex makes them the description the model reads on every turn (issue 39): they
        // are for the model, and short.
        let length = instructions.chars().count();
        assert!(length <= 400, "{length} characters: {instructions}");
        // Nothing in them varies between runs: no filters, so the constants show.
        insta::with_settings!({prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(name, instructions);
        });
    }
}
