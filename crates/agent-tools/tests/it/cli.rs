//! `agent-tools call` and `agent-tools tools`, as a user runs them.

use std::process::{Command, Stdio};

use crate::support::{Client, Server, workspace};

fn agent_tools(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn prod_3_call_prints_the_result_and_exits_zero() {
    let dir = workspace();
    let root = dir.path().to_str().unwrap();
    let out = agent_tools(&["call", "read", r#"{"path": "notes.txt"}"#, "--root", root]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "   1\talpha\n   2\tbeta\n\n"
    );
}

#[test]
fn prod_3_a_tool_error_goes_to_stderr_with_a_non_zero_status() {
    let dir = workspace();
    let root = dir.path().to_str().unwrap();
    let out = agent_tools(&["call", "read", r#"{"path": "../outside"}"#, "--root", root]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("outside the workspace root")
    );
}

#[test]
fn ask_5_call_without_a_terminal_has_no_human_and_fails_at_once() {
    let dir = workspace();
    let root = dir.path().to_str().unwrap();
    let asked = agent_tools(&[
        "call",
        "ask_user",
        r#"{"question": "Which?"}"#,
        "--root",
        root,
    ]);
    assert_eq!(asked.status.code(), Some(1));
    assert!(String::from_utf8(asked.stderr).unwrap().starts_with(
        "no person is connected to answer questions (standard input is not a terminal)"
    ));
    let write = agent_tools(&[
        "call",
        "write",
        r#"{"path": "notes.txt", "content": "x"}"#,
        "--root",
        root,
    ]);
    assert_eq!(write.status.code(), Some(1));
    let stderr = String::from_utf8(write.stderr).unwrap();
    assert!(
        stderr.contains("no approver is connected (standard input is not a terminal)"),
        "{stderr}"
    );
    // A person at a shell is told the flag that lets the write through.
    assert!(
        stderr.ends_with(
            "agent-tools: nobody can approve this call here (standard input is not a terminal). \
             To run write and exec tools without asking, add `--approval allow` (or set \
             `approval = \"allow\"` in agent-tools.toml).\n"
        ),
        "{stderr}"
    );
    let allowed = agent_tools(&[
        "call",
        "write",
        r#"{"path": "notes.txt", "content": "x"}"#,
        "--root",
        root,
        "--approval",
        "allow",
    ]);
    assert!(allowed.status.success());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "x"
    );
}

#[test]
fn prod_3_tools_lists_names_tiers_and_schemas() {
    let out = agent_tools(&["tools", "--surface", "plan", "--vibe"]);
    let listing = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = listing
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    // The plan surface's tools, vibe mode's among them since `--vibe` asks for them.
    assert_eq!(
        names,
        [
            "ask_user",
            "ast_grep",
            "lsp",
            "read",
            "vibe_kill",
            "vibe_list",
            "vibe_send",
            "vibe_spawn",
            "vibe_wait"
        ]
    );
    // Each line is a whole first sentence, never cut where the doc comment wraps.
    for line in listing.lines() {
        assert!(line.ends_with('.'), "{line}");
    }
    assert!(
        listing.contains(
            "Ask the project's language server: definitions, types, implementations, \
             references, hover (signature, docs), outlines, symbol search, quick fixes, errors."
        ),
        "{listing}"
    );
    let json = agent_tools(&["tools", "--json"]);
    let specs: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let write = specs
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "write")
        .unwrap();
    assert_eq!(write["tier"], "write");
    assert_eq!(
        write["input_schema"]["required"],
        serde_json::json!(["path", "content"])
    );
}

#[test]
fn ast_3_call_runs_a_structural_search() {
    let dir = workspace();
    let root = dir.path().to_str().unwrap();
    let out = agent_tools(&[
        "call",
        "ast_grep",
        r#"{"pattern": "pub fn $F() -> u32 { $$$B }", "path": "src/lib.rs"}"#,
        "--root",
        root,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("1 match in 1 file for `pub fn $F() -> u32 { $$$B }` (rust, compiled in the statement context: function_item"), "{stdout}");
    assert!(
        stdout.contains(
            "src/lib.rs:1: pub fn answer() -> u32 {  (to line 3)\n    $$$B = 41, $F = answer"
        ),
        "{stdout}"
    );
}

#[test]
fn bad_json_arguments_say_what_to_send() {
    let dir = workspace();
    let out = agent_tools(&[
        "call",
        "read",
        "{path:",
        "--root",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .starts_with("error: the arguments are not JSON: {path:; pass an object like")
    );
}

/// `tools` lists exactly what `serve` lists to a client that shows cards, for each of the
/// settings that change the list.
#[tokio::test]
async fn prod_3_tools_lists_what_serve_lists_with_the_same_settings() {
    let dir = workspace();
    let root = dir.path().to_str().unwrap();
    for settings in [
        &[][..],
        &["--surface", "plan"][..],
        &["--vibe"][..],
        &["--surface", "readonly", "--vibe"][..],
    ] {
        let mut args = vec!["tools", "--root", root];
        args.extend_from_slice(settings);
        let out = agent_tools(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.split_whitespace().next().unwrap().to_owned())
            .collect();
        let server = Server::start(dir.path(), settings, Client::answering(Vec::new())).await;
        let mut served = server.tool_names().await;
        served.sort();
        server.service.cancel().await.unwrap();
        assert_eq!(listed, served, "with {settings:?}");
    }
}

/// A reader that goes away (`agent-tools tools | head -1`) ends the output quietly.
#[test]
fn prod_3_a_closed_pipe_ends_the_listing_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .args(["tools", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    use std::os::unix::process::ExitStatusExt;
    assert!(
        out.status.success() || out.status.signal() == Some(13),
        "{:?}: {stderr}",
        out.status
    );
}
