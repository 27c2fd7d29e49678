//! Diagnostics on write (LSP-6, LSP-7) through `agent-tools serve`: an MCP client edits a
//! Rust and a Python project with `write`, `edit` and `apply_patch`, and each result carries
//! exactly the diagnostics that call introduced, from real rust-analyzer and basedpyright.
//! Each scenario is one transcript snapshot (`snapshots/lsp_6_*.snap`): every call, and what
//! the model reads back, in text and structure.

use std::path::Path;

use serde_json::{Value, json};

use tools_test_support::{Transcript, snapshot_settings, write_files};

use crate::lsp::{
    basedpyright_available, config, rust_analyzer_available, rust_project, start, status_of,
};
use crate::support::{Server, is_error, text};

/// Calls a writing tool, which must succeed, and records the call and its answer in `t`;
/// returns the answer's `diagnostics` object (null when no server covered the files), for
/// what the snapshot cannot hold.
pub(crate) async fn record_write(
    t: &mut Transcript,
    server: &Server,
    tool: &str,
    arguments: Value,
) -> Value {
    let result = server.call(tool, arguments.clone()).await;
    let structured = t.record_mcp(tool, &arguments, &result);
    assert!(
        !is_error(&result),
        "{tool} {arguments} failed: {}",
        text(&result)
    );
    structured["diagnostics"].clone()
}

/// `edit` replacing `old` with `new` in `path`, recorded in `t`.
pub(crate) async fn record_edit(
    t: &mut Transcript,
    server: &Server,
    path: &str,
    old: &str,
    new: &str,
) -> Value {
    record_write(
        t,
        server,
        "edit",
        json!({"path": path, "old_string": old, "new_string": new}),
    )
    .await
}

/// The fixture config, with a wait long enough for a cold server on a small CI machine.
pub(crate) fn on_write_config(root: &Path) -> String {
    format!("{}\n[lsp.on_write]\ntimeout_seconds = 180\n", config(root))
}

/// Snapshots the transcript `t` as `name`, with this test's own `extra` filters.
fn assert_transcript(name: &str, t: Transcript, extra: &[(&str, &str)]) {
    let transcript = t.finish_with(extra);
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(name, transcript);
}

const RUST_LIB: &str = "mod old;\npub mod a;\npub mod b;\n\npub fn add(left: u32, right: u32) -> u32 {\n    left + right\n}\n";

#[tokio::test]
async fn lsp_6_rust_writes_report_exactly_what_they_introduced() {
    if !rust_analyzer_available() {
        return;
    }
    let (_dir, root) = rust_project();
    write_files(
        &root,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"on_write\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            ),
            ("src/lib.rs", RUST_LIB),
            // A type error that is there before the run writes anything.
            ("src/old.rs", "pub fn old() -> u32 {\n    \"old\"\n}\n"),
            ("src/a.rs", "pub fn a() -> u32 {\n    1\n}\n"),
            ("src/b.rs", "pub fn b() -> u32 {\n    2\n}\n"),
            ("notes.txt", "nothing to check\n"),
        ],
    );
    std::fs::write(root.join("agent-tools.toml"), on_write_config(&root)).unwrap();
    let server = start(&root).await;
    let mut t = Transcript::new(&root);

    // LSP-6: a write that introduces a type error reports it as path:LINE with the line.
    let broken = format!("{RUST_LIB}\npub fn broken() -> u32 {{\n    \"text\"\n}}\n");
    record_write(
        &mut t,
        &server,
        "write",
        json!({"path": "src/lib.rs", "content": broken}),
    )
    .await;
    // LSP-7: an unrelated edit in the same file does not report it again.
    record_edit(
        &mut t,
        &server,
        "src/lib.rs",
        "left + right",
        "right + left",
    )
    .await;
    // LSP-7: four lines inserted above it move it, and a moved error is not new.
    record_edit(
        &mut t,
        &server,
        "src/lib.rs",
        "pub fn broken",
        "// one\n// two\n// three\n// four\npub fn broken",
    )
    .await;
    // A fix settles on the fixed text: rust-analyzer's first publish for it still carries
    // the previous `cargo check` error, and that stale publish must not be the answer.
    record_edit(&mut t, &server, "src/lib.rs", "\"text\"", "7").await;
    // LSP-7: fixed and then reintroduced, it is reported again.
    record_edit(&mut t, &server, "src/lib.rs", "    7\n", "    \"text\"\n").await;
    // An apply_patch touching two files reports each file's new errors.
    let patch = "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@\n pub fn a() -> u32 {\n-    1\n+    \"one\"\n }\n--- a/src/b.rs\n+++ b/src/b.rs\n@@ -1,3 +1,3 @@\n pub fn b() -> u32 {\n-    2\n+    \"two\"\n }\n";
    record_write(&mut t, &server, "apply_patch", json!({"patch": patch})).await;
    // An edit in a file with an error from before the run reports nothing about it.
    record_edit(
        &mut t,
        &server,
        "src/old.rs",
        "pub fn old",
        "/// Old.\npub fn old",
    )
    .await;
    // A file no server covers gets the write's own answer and nothing else.
    record_write(
        &mut t,
        &server,
        "write",
        json!({"path": "notes.txt", "content": "still nothing\n"}),
    )
    .await;
    assert_transcript(
        "lsp_6_rust_writes_report_exactly_what_they_introduced",
        t,
        &[],
    );
}

#[tokio::test]
async fn lsp_6_python_writes_report_exactly_what_they_introduced() {
    if !basedpyright_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write_files(
        &root,
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"on_write\"\nversion = \"0.1.0\"\n",
            ),
            ("app/__init__.py", ""),
            (
                "app/main.py",
                "def add(left: int, right: int) -> int:\n    return left + right\n",
            ),
            // An error that is there before the run writes anything.
            ("app/old.py", "def old() -> int:\n    return \"old\"\n"),
            ("app/a.py", "def a() -> int:\n    return 1\n"),
            ("app/b.py", "def b() -> int:\n    return 2\n"),
            // An error from before the run, in a file only `resolve` will write.
            (
                "app/c.py",
                "def c() -> int:\n    return 3\n\n\ndef c_old() -> int:\n    return \"old\"\n",
            ),
        ],
    );
    std::fs::write(root.join("agent-tools.toml"), on_write_config(&root)).unwrap();
    let server = start(&root).await;
    let mut t = Transcript::new(&root);

    record_write(&mut t,
        &server,
        "write",
        json!({"path": "app/main.py", "content": "def add(left: int, right: int) -> int:\n    return left + right\n\n\ndef broken() -> int:\n    return \"text\"\n"}),
    )
    .await;
    // Unrelated edit, then four lines above: nothing new.
    record_edit(
        &mut t,
        &server,
        "app/main.py",
        "left + right",
        "right + left",
    )
    .await;
    record_edit(
        &mut t,
        &server,
        "app/main.py",
        "def broken",
        "# one\n# two\n# three\n# four\ndef broken",
    )
    .await;
    // Fixed: nothing, and the file is clean; reintroduced: reported again.
    record_edit(
        &mut t,
        &server,
        "app/main.py",
        "return \"text\"",
        "return 7",
    )
    .await;
    record_edit(
        &mut t,
        &server,
        "app/main.py",
        "return 7",
        "return \"text\"",
    )
    .await;
    let patch = "--- a/app/a.py\n+++ b/app/a.py\n@@ -1,2 +1,2 @@\n def a() -> int:\n-    return 1\n+    return \"one\"\n--- a/app/b.py\n+++ b/app/b.py\n@@ -1,2 +1,2 @@\n def b() -> int:\n-    return 2\n+    return \"two\"\n";
    record_write(&mut t, &server, "apply_patch", json!({"patch": patch})).await;

    // `resolve` names no file: the baseline of a file it writes is the text it had, so
    // the old error in it is not reported and the new one is.
    let staged = t
        .call(
            &server,
            "ast_edit",
            json!({"pattern": "return 3", "rewrite": "return \"three\"", "path": "app/c.py"}),
        )
        .await;
    let edit_id = staged["edit_id"].as_str().unwrap_or("none").to_owned();
    record_write(
        &mut t,
        &server,
        "resolve",
        json!({"edit_id": edit_id, "action": "accept"}),
    )
    .await;

    record_edit(&mut t, &server, "app/old.py", "def old", "# Old.\ndef old").await;

    // At most 10 per file are listed; the rest are counted, per file.
    let many: String = (1..=12).map(|n| format!("v{n}: int = \"{n}\"\n")).collect();
    record_write(
        &mut t,
        &server,
        "write",
        json!({"path": "app/many.py", "content": many}),
    )
    .await;
    assert_transcript(
        "lsp_6_python_writes_report_exactly_what_they_introduced",
        t,
        &[],
    );
}

#[tokio::test]
async fn lsp_6_files_no_usable_server_covers_cost_nothing() {
    // A Python file with no project marker starts no server: it is in no project.
    // A server whose binary does not exist would cover `.fake` files: no server starts and
    // nothing is waited for, but the result says the file was not checked, and why.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write_files(
        &root,
        &[
            ("loose.py", "x = 1\n"),
            ("fake.toml", ""),
            (
                "agent-tools.toml",
                "[lsp.servers.fake]\ncommand = [\"no-such-language-server\"]\nextensions = [\"fake\"]\nmarkers = [\"fake.toml\"]\n",
            ),
        ],
    );
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    // Its state line says why it was not checked (LSP-6: silence never reads as clean),
    // and no server was started for it.
    record_write(
        &mut t,
        &server,
        "write",
        json!({"path": "loose.py", "content": "x: int = \"not an int\"\n"}),
    )
    .await;
    assert!(!any_session(&server).await);
    for content in ["anything\n", "again\n"] {
        let started = std::time::Instant::now();
        record_write(
            &mut t,
            &server,
            "write",
            json!({"path": "code.fake", "content": content}),
        )
        .await;
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
    // Why is for `lsp status` to say, once; the rest of status is the machine's.
    let (paragraph, entry) = status_of(&server, "fake").await;
    assert_eq!(
        paragraph,
        "fake (.fake): not usable — a project is here, but its binary was not found: looked \
         for `no-such-language-server` in .venv/bin, venv/bin, node_modules/.bin and PATH; \
         install it, or fix [lsp.servers.fake] command in the config, or set `command` under \
         [lsp.servers.fake] in agent-tools.toml\n  root .: not running\n    last error: fake \
         cannot start for root .: its binary was not found: looked for \
         `no-such-language-server` in .venv/bin, venv/bin, node_modules/.bin and PATH; install \
         it, or fix [lsp.servers.fake] command in the config, or set `command` under \
         [lsp.servers.fake] in agent-tools.toml"
    );
    assert_eq!(entry["usable"], false, "{entry}");
    assert_transcript("lsp_6_files_no_usable_server_covers_cost_nothing", t, &[]);
}

#[tokio::test]
async fn lsp_6_a_write_that_cannot_settle_says_so() {
    // A wait too short for any server: the write still happens, and its result says the
    // file was not checked rather than reading as clean.
    if !basedpyright_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write_files(&root, &[("pyproject.toml", "[project]\nname = \"cold\"\n")]);
    std::fs::write(
        root.join("agent-tools.toml"),
        format!("{}\n[lsp.on_write]\ntimeout_seconds = 0\n", config(&root)),
    )
    .unwrap();
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    let diagnostics = record_write(
        &mut t,
        &server,
        "write",
        json!({"path": "main.py", "content": "x: int = \"text\"\n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(root.join("main.py")).unwrap(),
        "x: int = \"text\"\n"
    );
    // Whether the server had started when the wait ran out is the machine's timing: either
    // reason is true, and the snapshot shows one placeholder for both. The configured wait
    // is checked here, since the snapshot hides every duration.
    let reason = diagnostics["files"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    let then = "; call `lsp` with operation `diagnostics` on it in a while";
    assert!(
        [
            format!("basedpyright was still starting after 0s{then}"),
            format!("basedpyright had not finished checking it after 0s{then}"),
        ]
        .iter()
        .any(|expected| expected == reason),
        "{diagnostics}"
    );
    assert_transcript(
        "lsp_6_a_write_that_cannot_settle_says_so",
        t,
        &[(
            "basedpyright (was still starting|had not finished checking it) after",
            "basedpyright [was still starting, or had not finished checking it] after",
        )],
    );
}

/// Whether any language server has a session in this run, from `lsp status`.
async fn any_session(server: &Server) -> bool {
    let status = server.call("lsp", json!({"operation": "status"})).await;
    let servers = status.structured_content.unwrap()["servers"].clone();
    servers.as_array().unwrap().iter().any(|s| {
        s["sessions"]
            .as_array()
            .is_some_and(|list| !list.is_empty())
    })
}

#[tokio::test]
async fn lsp_6_refusals_that_need_no_server_start_none() {
    if !basedpyright_available() {
        return;
    }
    let (_dir, root) = rust_project();
    write_files(
        &root,
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"refusals\"\nversion = \"0.1.0\"\n",
            ),
            ("app/calls.py", "x = 1\nx = 1\n"),
        ],
    );
    std::fs::write(root.join("agent-tools.toml"), on_write_config(&root)).unwrap();
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    for (tool, arguments) in [
        (
            "edit",
            json!({"path": "app/calls.py", "old_string": "x = 1", "new_string": "x = 2"}),
        ),
        (
            "edit",
            json!({"path": "app/missing.py", "old_string": "a", "new_string": "b"}),
        ),
        (
            "write",
            json!({"path": "../outside.py", "content": "x = 1\n"}),
        ),
        (
            "lsp_rename",
            json!({"path": "app/calls.py", "line": 1, "symbol": "y", "new_name": "z"}),
        ),
    ] {
        t.call(&server, tool, arguments).await;
    }
    // A staged edit whose file changed behind it is rejected before any server is asked.
    t.call(
        &server,
        "ast_edit",
        json!({"pattern": "x = 1", "rewrite": "x = 3", "path": "app/calls.py"}),
    )
    .await;
    std::fs::write(root.join("app/calls.py"), "x = 1\nx = 1\ny = 2\n").unwrap();
    t.note("app/calls.py changes on disk: a third line, `y = 2`");
    t.call(
        &server,
        "resolve",
        json!({"edit_id": "edit_1", "action": "accept"}),
    )
    .await;
    assert!(
        !any_session(&server).await,
        "a refusal started a language server"
    );
    // The path outside resolves next to the fixture's temp folder, wherever that is.
    assert_transcript(
        "lsp_6_refusals_that_need_no_server_start_none",
        t,
        &[(
            r"resolves to \S+/outside\.py",
            "resolves to [ROOT]/../outside.py",
        )],
    );
}
