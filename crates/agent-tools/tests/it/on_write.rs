//! Diagnostics on write (LSP-6, LSP-7) through `agent-tools serve`: an MCP client edits a
//! Rust and a Python project with `write`, `edit` and `apply_patch`, and each result carries
//! exactly the diagnostics that call introduced, from real rust-analyzer and basedpyright.

use std::path::Path;

use serde_json::{Value, json};

use tools_test_support::write_files;

use crate::lsp::{basedpyright_available, config, rust_analyzer_available, rust_project, start};
use crate::support::{Server, is_error, text};

/// Calls a writing tool, which must succeed; returns its text and its `diagnostics` object
/// (null when no server covered the files).
pub(crate) async fn write_call(server: &Server, tool: &str, arguments: Value) -> (String, Value) {
    let result = server.call(tool, arguments.clone()).await;
    let shown = text(&result);
    assert!(!is_error(&result), "{tool} {arguments} failed: {shown}");
    let structured = result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{tool} returned no structured content: {shown}"));
    (shown, structured["diagnostics"].clone())
}

/// `edit` replacing `old` with `new` in `path`.
pub(crate) async fn edit(server: &Server, path: &str, old: &str, new: &str) -> (String, Value) {
    write_call(
        server,
        "edit",
        json!({"path": path, "old_string": old, "new_string": new}),
    )
    .await
}

/// The `path:LINE` of each listed diagnostic the write introduced in the files of `key`
/// (`files`, the written ones, or `fallout`).
pub(crate) fn listed(diagnostics: &Value, key: &str) -> Vec<String> {
    diagnostics[key]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|file| {
            let path = file["path"].as_str().unwrap().to_owned();
            file["listed"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |d| format!("{path}:{}", d["line"]))
        })
        .collect()
}

/// The `path:LINE` of each listed diagnostic the write introduced in the written files.
pub(crate) fn introduced(diagnostics: &Value) -> Vec<String> {
    assert!(
        diagnostics["files"].is_array(),
        "no written file was reported: {diagnostics}"
    );
    listed(diagnostics, "files")
}

/// How many introduced diagnostics the written files' lists leave out.
fn omitted(diagnostics: &Value) -> u64 {
    diagnostics["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            f["introduced"].as_u64().unwrap() - f["listed"].as_array().map_or(0, |l| l.len() as u64)
        })
        .sum()
}

/// The checked file's error count after the write, which must have settled.
pub(crate) fn errors_now(diagnostics: &Value, path: &str) -> u64 {
    let file = diagnostics["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} was not checked: {diagnostics}"));
    assert_eq!(
        file["state"], "checked",
        "{path} was not checked: {diagnostics}"
    );
    file["errors"].as_u64().unwrap()
}

/// The fixture config, with a wait long enough for a cold server on a small CI machine.
pub(crate) fn on_write_config(root: &Path) -> String {
    format!("{}\n[lsp.on_write]\ntimeout_seconds = 180\n", config(root))
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

    // LSP-6: a write that introduces a type error reports it as path:LINE with the line.
    let broken = format!("{RUST_LIB}\npub fn broken() -> u32 {{\n    \"text\"\n}}\n");
    let (shown, diagnostics) = write_call(
        &server,
        "write",
        json!({"path": "src/lib.rs", "content": broken}),
    )
    .await;
    assert_eq!(introduced(&diagnostics), ["src/lib.rs:10"], "{shown}");
    assert!(shown.starts_with("Replaced src/lib.rs"), "{shown}");
    assert!(
        shown.contains("src/lib.rs:10: error[E0308]: ") && shown.contains("\n    \"text\""),
        "{shown}"
    );

    // LSP-7: an unrelated edit in the same file does not report it again.
    let (shown, diagnostics) = edit(&server, "src/lib.rs", "left + right", "right + left").await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");
    assert!(!shown.contains("E0308"), "{shown}");
    assert!(errors_now(&diagnostics, "src/lib.rs") >= 1, "{diagnostics}");

    // LSP-7: four lines inserted above it move it, and a moved error is not new.
    let (shown, diagnostics) = edit(
        &server,
        "src/lib.rs",
        "pub fn broken",
        "// one\n// two\n// three\n// four\npub fn broken",
    )
    .await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");

    // A fix settles on the fixed text: rust-analyzer's first publish for it still carries
    // the previous `cargo check` error, and that stale publish must not be the answer.
    let (shown, diagnostics) = edit(&server, "src/lib.rs", "\"text\"", "7").await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");
    assert_eq!(errors_now(&diagnostics, "src/lib.rs"), 0, "{diagnostics}");

    // LSP-7: fixed and then reintroduced, it is reported again.
    let (shown, diagnostics) = edit(&server, "src/lib.rs", "    7\n", "    \"text\"\n").await;
    assert_eq!(introduced(&diagnostics), ["src/lib.rs:14"], "{shown}");

    // An apply_patch touching two files reports each file's new errors.
    let patch = "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@\n pub fn a() -> u32 {\n-    1\n+    \"one\"\n }\n--- a/src/b.rs\n+++ b/src/b.rs\n@@ -1,3 +1,3 @@\n pub fn b() -> u32 {\n-    2\n+    \"two\"\n }\n";
    let (shown, diagnostics) = write_call(&server, "apply_patch", json!({"patch": patch})).await;
    assert_eq!(
        introduced(&diagnostics),
        ["src/a.rs:2", "src/b.rs:2"],
        "{shown}"
    );
    assert!(shown.contains("in 2 files"), "{shown}");

    // An edit in a file with an error from before the run reports nothing about it.
    let (shown, diagnostics) =
        edit(&server, "src/old.rs", "pub fn old", "/// Old.\npub fn old").await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");
    assert!(errors_now(&diagnostics, "src/old.rs") >= 1, "{diagnostics}");

    // A file no server covers gets the write's own answer and nothing else.
    let (shown, diagnostics) = write_call(
        &server,
        "write",
        json!({"path": "notes.txt", "content": "still nothing\n"}),
    )
    .await;
    assert_eq!(diagnostics, Value::Null, "{shown}");
    assert_eq!(shown.lines().count(), 1, "{shown}");
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

    let (shown, diagnostics) = write_call(
        &server,
        "write",
        json!({"path": "app/main.py", "content": "def add(left: int, right: int) -> int:\n    return left + right\n\n\ndef broken() -> int:\n    return \"text\"\n"}),
    )
    .await;
    assert_eq!(introduced(&diagnostics), ["app/main.py:6"], "{shown}");
    assert!(
        shown.contains("app/main.py:6: error[reportReturnType]: "),
        "{shown}"
    );

    // Unrelated edit, then four lines above: nothing new.
    let (shown, diagnostics) = edit(&server, "app/main.py", "left + right", "right + left").await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");
    let (shown, diagnostics) = edit(
        &server,
        "app/main.py",
        "def broken",
        "# one\n# two\n# three\n# four\ndef broken",
    )
    .await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");

    // Fixed: nothing, and the file is clean; reintroduced: reported again.
    let (shown, diagnostics) = edit(&server, "app/main.py", "return \"text\"", "return 7").await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");
    assert_eq!(errors_now(&diagnostics, "app/main.py"), 0, "{diagnostics}");
    let (shown, diagnostics) = edit(&server, "app/main.py", "return 7", "return \"text\"").await;
    assert_eq!(introduced(&diagnostics), ["app/main.py:10"], "{shown}");

    let patch = "--- a/app/a.py\n+++ b/app/a.py\n@@ -1,2 +1,2 @@\n def a() -> int:\n-    return 1\n+    return \"one\"\n--- a/app/b.py\n+++ b/app/b.py\n@@ -1,2 +1,2 @@\n def b() -> int:\n-    return 2\n+    return \"two\"\n";
    let (shown, diagnostics) = write_call(&server, "apply_patch", json!({"patch": patch})).await;
    assert_eq!(
        introduced(&diagnostics),
        ["app/a.py:2", "app/b.py:2"],
        "{shown}"
    );

    // `resolve` names no file: the baseline of a file it writes is the text it had, so
    // the old error in it is not reported and the new one is.
    let staged = server
        .call(
            "ast_edit",
            json!({"pattern": "return 3", "rewrite": "return \"three\"", "path": "app/c.py"}),
        )
        .await;
    assert!(!is_error(&staged), "{}", text(&staged));
    let edit_id = staged.structured_content.as_ref().unwrap()["edit_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (shown, diagnostics) = write_call(
        &server,
        "resolve",
        json!({"edit_id": edit_id, "action": "accept"}),
    )
    .await;
    assert_eq!(introduced(&diagnostics), ["app/c.py:2"], "{shown}");

    let (shown, diagnostics) = edit(&server, "app/old.py", "def old", "# Old.\ndef old").await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");
    assert_eq!(errors_now(&diagnostics, "app/old.py"), 1, "{diagnostics}");

    // At most 10 per file are listed; the rest are counted, per file.
    let many: String = (1..=12).map(|n| format!("v{n}: int = \"{n}\"\n")).collect();
    let (shown, diagnostics) = write_call(
        &server,
        "write",
        json!({"path": "app/many.py", "content": many}),
    )
    .await;
    assert_eq!(introduced(&diagnostics).len(), 10, "{shown}");
    assert_eq!(omitted(&diagnostics), 2, "{diagnostics}");
    assert!(
        shown.contains("This write introduced 12 new diagnostics in 1 file:"),
        "{shown}"
    );
    assert!(
        shown.contains("\n(2 more in app/many.py not listed;"),
        "{shown}"
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
    let (shown, diagnostics) = write_call(
        &server,
        "write",
        json!({"path": "loose.py", "content": "x: int = \"not an int\"\n"}),
    )
    .await;
    // Its state line says why it was not checked (LSP-6: silence never reads as clean),
    // and no server was started for it.
    assert_eq!(
        diagnostics["files"][0]["state"], "not_checked",
        "{diagnostics}"
    );
    assert!(
        shown.ends_with(
            "\n\nNot checked: loose.py (no pyproject.toml, setup.py, setup.cfg, requirements.txt \
             or pyrightconfig.json beside it or above it: basedpyright has no project to \
             check it in)."
        ),
        "{shown}"
    );
    assert!(!any_session(&server).await);
    for content in ["anything\n", "again\n"] {
        let started = std::time::Instant::now();
        let (shown, diagnostics) = write_call(
            &server,
            "write",
            json!({"path": "code.fake", "content": content}),
        )
        .await;
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(
            shown.ends_with(
                "\n\nNot checked: code.fake (fake is not installed here; `lsp` with operation \
                 `status` says where it was looked for)."
            ),
            "{shown}"
        );
        assert_eq!(
            diagnostics["files"][0]["state"], "not_checked",
            "{diagnostics}"
        );
    }
    // Why is for `lsp status` to say, once.
    let status = server.call("lsp", json!({"operation": "status"})).await;
    let status = text(&status);
    assert!(status.contains("no-such-language-server"), "{status}");
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
    let (shown, diagnostics) = write_call(
        &server,
        "write",
        json!({"path": "main.py", "content": "x: int = \"text\"\n"}),
    )
    .await;
    assert!(shown.starts_with("Created main.py"), "{shown}");
    assert!(
        shown.contains("\n\nNot checked: main.py (basedpyright was still starting after 0s;")
            || shown.contains(
                "\n\nNot checked: main.py (basedpyright had not finished checking it after 0s;"
            ),
        "{shown}"
    );
    let file = &diagnostics["files"][0];
    assert_eq!(file["state"], "not_checked", "{diagnostics}");
    assert!(file["reason"].is_string(), "{diagnostics}");
    assert!(
        std::fs::read_to_string(root.join("main.py"))
            .unwrap()
            .contains("text")
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
    let refused = [
        (
            "edit",
            json!({"path": "app/calls.py", "old_string": "x = 1", "new_string": "x = 2"}),
            "`old_string` occurs 2 times in app/calls.py (lines 1, 2)",
        ),
        (
            "edit",
            json!({"path": "app/missing.py", "old_string": "a", "new_string": "b"}),
            "app/missing.py does not exist",
        ),
        (
            "write",
            json!({"path": "../outside.py", "content": "x = 1\n"}),
            "outside",
        ),
        (
            "lsp_rename",
            json!({"path": "app/calls.py", "line": 1, "symbol": "y", "new_name": "z"}),
            "line 1 of app/calls.py has no `y`",
        ),
    ];
    for (tool, arguments, expected) in refused {
        let result = server.call(tool, arguments.clone()).await;
        let shown = text(&result);
        assert!(is_error(&result), "{tool} {arguments} ran: {shown}");
        assert!(shown.contains(expected), "{tool} {arguments}: {shown}");
    }
    // A staged edit whose file changed behind it is rejected before any server is asked.
    let staged = server
        .call(
            "ast_edit",
            json!({"pattern": "x = 1", "rewrite": "x = 3", "path": "app/calls.py"}),
        )
        .await;
    assert!(!is_error(&staged), "{}", text(&staged));
    std::fs::write(root.join("app/calls.py"), "x = 1\nx = 1\ny = 2\n").unwrap();
    let stale = server
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}))
        .await;
    assert!(is_error(&stale), "{}", text(&stale));
    assert!(
        text(&stale)
            .starts_with("rejected edit_1: 1 of 1 file(s) changed since the edit was staged"),
        "{}",
        text(&stale)
    );
    assert!(
        !any_session(&server).await,
        "a refusal started a language server"
    );
}
