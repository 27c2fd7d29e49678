//! `lsp` and `lsp_rename` through `agent-tools serve`, driven by an MCP client, against real
//! rust-analyzer and basedpyright (installed by the README's test command). Locally a missing
//! server is reported loudly and the test returns; under `CI=true` it fails. Each scenario is
//! one transcript snapshot (`snapshots/lsp_*.snap`): every call, and what the model reads
//! back, in text and structure.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use tools_test_support::{
    LanguageServer, Transcript, available, repo_root, snapshot_settings, write_files,
};

use crate::support::{Client, Server, is_error, text};

/// Whether rust-analyzer runs here (said loudly when not; fails under `CI=true`).
pub(crate) fn rust_analyzer_available() -> bool {
    available(LanguageServer::RustAnalyzer)
}

/// Whether the test command's basedpyright is installed (as above).
pub(crate) fn basedpyright_available() -> bool {
    available(LanguageServer::Basedpyright)
}

/// An empty temp folder (and its canonical path) with this workspace's toolchain pin, for a
/// Rust fixture.
pub(crate) fn rust_project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::copy(
        repo_root().join("rust-toolchain.toml"),
        root.join("rust-toolchain.toml"),
    )
    .unwrap();
    (dir, root)
}

/// The config every fixture gets: the test command's tool folders, and for Rust a target
/// folder of the fixture's own (so nothing waits for the lock of the build running us).
pub(crate) fn config(root: &Path) -> String {
    let repo = repo_root();
    format!(
        "[lsp]\npath = [{:?}, {:?}]\n\n[lsp.servers.rust-analyzer.env]\nCARGO_TARGET_DIR = {:?}\n",
        repo.join(".venv/bin").display().to_string(),
        repo.join(".tools/node/node_modules/.bin")
            .display()
            .to_string(),
        root.join("target").display().to_string(),
    )
}

pub(crate) async fn start(root: &Path) -> Server {
    Server::start(
        root,
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await
}

/// Snapshots the transcript `t` as `name`, with this test's own `extra` filters.
fn assert_transcript(name: &str, t: Transcript, extra: &[(&str, &str)]) {
    let transcript = t.finish_with(extra);
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(name, transcript);
}

/// `server`'s paragraph of `lsp status`'s text and its entry of the structure, called
/// outside the transcript. Status lists every server this machine has or lacks, with its
/// binary, its version and how this kernel contains processes: the whole answer is the
/// machine's rather than the scenario's, so a test checks the one server it is about.
pub(crate) async fn status_of(server: &Server, name: &str) -> (String, Value) {
    let result = server.call("lsp", json!({"operation": "status"})).await;
    let shown = text(&result);
    assert!(!is_error(&result), "status failed: {shown}");
    let paragraph = shown
        .split("\n\n")
        .find(|paragraph| paragraph.starts_with(&format!("{name} (")))
        .unwrap_or_else(|| panic!("status does not list {name}: {shown}"))
        .to_owned();
    let entry = result.structured_content.unwrap()["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["server"] == name)
        .unwrap_or_else(|| panic!("status's structure does not list {name}: {shown}"))
        .clone();
    (paragraph, entry)
}

/// Asks for `path`'s diagnostics, outside the transcript, until they say `words`.
/// rust-analyzer answers from its own analysis at once and adds what its first `cargo check`
/// found (the same error in cargo's words, and a note) when that check ends, which on a
/// loaded machine can be after the question: a snapshot must not race that check.
async fn until_diagnostics_say(server: &Server, path: &str, words: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let result = server
            .call("lsp", json!({"operation": "diagnostics", "path": path}))
            .await;
        let shown = text(&result);
        if shown.contains(words) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{path}'s diagnostics never said {words:?}: {shown}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn lsp_1_the_tools_are_listed_with_their_tiers() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let tools = server.service.list_all_tools().await.unwrap();
    let query = tools.iter().find(|t| t.name == "lsp").unwrap();
    assert_eq!(
        query.annotations.clone().unwrap().read_only_hint,
        Some(true)
    );
    assert!(
        query
            .description
            .as_deref()
            .unwrap()
            .starts_with("Ask the project's language server:")
    );
    let rename = tools.iter().find(|t| t.name == "lsp_rename").unwrap();
    let annotations = rename.annotations.clone().unwrap();
    assert_eq!(
        (annotations.read_only_hint, annotations.destructive_hint),
        (Some(false), Some(true))
    );
    // CORE-2: with no project here, status says why nothing can run. Whether the binary is
    // there too is the machine's (this test needs no server), so the check stops before it.
    let (paragraph, entry) = status_of(&server, "rust-analyzer").await;
    assert!(
        paragraph.starts_with(
            "rust-analyzer (.rs): not usable — no root marker: none of Cargo.toml, \
             rust-project.json was found in the workspace root or up to 3 levels below it"
        ),
        "{paragraph}"
    );
    assert_eq!(
        (&entry["usable"], &entry["roots"], &entry["sessions"]),
        (&json!(false), &json!([]), &json!([])),
        "{entry}"
    );
}

#[tokio::test]
async fn lsp_5_an_mcp_client_gets_every_operation_from_rust_analyzer() {
    if !rust_analyzer_available() {
        return;
    }
    let (_dir, root) = rust_project();
    write_files(
        &root,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"e2e\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            ),
            (
                "src/lib.rs",
                "pub mod shapes;\n\n/// Adds two numbers.\npub fn add(left: u32, right: u32) -> u32 {\n    left + right\n}\n\npub fn twice() -> u32 {\n    let circle = shapes::Circle { radius: 1 };\n    add(circle.radius, add(1, 2))\n}\n",
            ),
            (
                "src/shapes.rs",
                "pub trait Area {\n    fn area(&self) -> u32;\n}\n\npub struct Circle {\n    pub radius: u32,\n}\n\nimpl Area for Circle {\n    fn area(&self) -> u32 {\n        3 * self.radius * self.radius\n    }\n}\n\npub fn broken() -> u32 {\n    \"text\"\n}\n",
            ),
        ],
    );
    std::fs::write(root.join("agent-tools.toml"), config(&root)).unwrap();
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    for arguments in [
        json!({"operation": "definition", "path": "src/lib.rs", "line": 10, "symbol": "add"}),
        json!({"operation": "type_definition", "path": "src/lib.rs", "line": 10, "symbol": "circle"}),
        json!({"operation": "implementation", "path": "src/shapes.rs", "line": 1, "symbol": "Area"}),
        json!({"operation": "references", "path": "src/lib.rs", "line": 4, "symbol": "add"}),
        json!({"operation": "hover", "path": "src/lib.rs", "line": 4, "symbol": "add"}),
        json!({"operation": "symbols", "path": "src/shapes.rs"}),
        json!({"operation": "symbols", "query": "twice"}),
        json!({"operation": "code_actions", "path": "src/lib.rs", "line": 9, "symbol": "circle"}),
    ] {
        t.call(&server, "lsp", arguments).await;
    }
    until_diagnostics_say(&server, "src/shapes.rs", "error[E0308]: mismatched types").await;
    for arguments in [
        json!({"operation": "diagnostics", "path": "src/shapes.rs"}),
        json!({"operation": "diagnostics", "path": "*"}),
    ] {
        t.call(&server, "lsp", arguments).await;
    }
    t.call(
        &server,
        "lsp_rename",
        json!({"path": "src/lib.rs", "line": 4, "symbol": "add", "new_name": "plus"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        "pub mod shapes;\n\n/// Adds two numbers.\npub fn plus(left: u32, right: u32) -> u32 {\n    left + right\n}\n\npub fn twice() -> u32 {\n    let circle = shapes::Circle { radius: 1 };\n    plus(circle.radius, plus(1, 2))\n}\n"
    );
    t.call(&server, "lsp", json!({"operation": "reload"})).await;
    // The restarted server is usable, with a session at the root.
    let (paragraph, entry) = status_of(&server, "rust-analyzer").await;
    assert_eq!(
        paragraph.lines().next(),
        Some("rust-analyzer (.rs): usable — root ."),
        "{paragraph}"
    );
    assert!(
        paragraph
            .lines()
            .any(|line| line.starts_with("  root .: ready, pid ")),
        "{paragraph}"
    );
    assert_eq!(
        (&entry["usable"], &entry["roots"]),
        (&json!(true), &json!(["."])),
        "{entry}"
    );
    assert_transcript(
        "lsp_5_an_mcp_client_gets_every_operation_from_rust_analyzer",
        t,
        &[],
    );
}

#[tokio::test]
async fn lsp_5_an_mcp_client_gets_every_operation_from_basedpyright() {
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
                "[project]\nname = \"e2e\"\nversion = \"0.1.0\"\n",
            ),
            ("pkg/__init__.py", ""),
            (
                "pkg/shapes.py",
                "class Shape:\n    def area(self) -> float:\n        return 0.0\n\n\nclass Circle(Shape):\n    def area(self) -> float:\n        return 3.0\n\n\ndef add(left: int, right: int) -> int:\n    \"\"\"Adds two numbers.\"\"\"\n    return left + right\n",
            ),
            (
                "pkg/main.py",
                "import os\n\nfrom pkg.shapes import Circle, Shape, add\n\n\ndef run(shape: Shape) -> float:\n    circle = Circle()\n    return shape.area() + circle.area() + add(1, 2)\n\n\ndef broken() -> int:\n    return \"text\"\n",
            ),
        ],
    );
    std::fs::write(root.join("agent-tools.toml"), config(&root)).unwrap();
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    for arguments in [
        json!({"operation": "definition", "path": "pkg/main.py", "line": 8, "symbol": "add"}),
        json!({"operation": "type_definition", "path": "pkg/main.py", "line": 7, "symbol": "circle"}),
        json!({"operation": "implementation", "path": "pkg/main.py", "line": 8, "symbol": "shape.area"}),
        json!({"operation": "references", "path": "pkg/shapes.py", "line": 11, "symbol": "add"}),
        json!({"operation": "hover", "path": "pkg/shapes.py", "line": 11, "symbol": "add"}),
        json!({"operation": "symbols", "path": "pkg/shapes.py"}),
        json!({"operation": "symbols", "query": "Circle"}),
        json!({"operation": "code_actions", "path": "pkg/main.py", "line": 1, "symbol": "os"}),
        json!({"operation": "diagnostics", "path": "pkg/main.py"}),
        json!({"operation": "diagnostics", "path": "*"}),
    ] {
        t.call(&server, "lsp", arguments).await;
    }
    t.call(
        &server,
        "lsp_rename",
        json!({"path": "pkg/shapes.py", "line": 11, "symbol": "add", "new_name": "plus"}),
    )
    .await;
    t.call(&server, "lsp", json!({"operation": "reload"})).await;
    // The restarted server is usable, with a session at the root.
    let (paragraph, entry) = status_of(&server, "basedpyright").await;
    assert_eq!(
        paragraph.lines().next(),
        Some("basedpyright (.py, .pyi): usable — root ."),
        "{paragraph}"
    );
    assert!(
        paragraph
            .lines()
            .any(|line| line.starts_with("  root .: ready, pid ")),
        "{paragraph}"
    );
    assert_eq!(
        (&entry["usable"], &entry["roots"]),
        (&json!(true), &json!(["."])),
        "{entry}"
    );
    assert_transcript(
        "lsp_5_an_mcp_client_gets_every_operation_from_basedpyright",
        t,
        &[],
    );
}
