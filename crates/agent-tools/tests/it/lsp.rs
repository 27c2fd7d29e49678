//! `lsp` and `lsp_rename` through `agent-tools serve`, driven by an MCP client, against real
//! rust-analyzer and basedpyright (installed by the README's test command). Locally a missing
//! server is reported loudly and the test returns; under `CI=true` it fails.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use tools_test_support::{LanguageServer, available, repo_root, write_files};

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

async fn lsp(server: &Server, arguments: Value) -> String {
    let result = server.call("lsp", arguments.clone()).await;
    assert!(!is_error(&result), "{arguments} failed: {}", text(&result));
    text(&result)
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
    // CORE-2: with no project here, status says why nothing can run.
    let status = lsp(&server, json!({"operation": "status"})).await;
    assert!(
        status.contains("rust-analyzer (.rs): not usable — no root marker"),
        "{status}"
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
    let definition = lsp(
        &server,
        json!({"operation": "definition", "path": "src/lib.rs", "line": 10, "symbol": "add"}),
    )
    .await;
    assert_eq!(
        definition,
        "1 definition of `add` (src/lib.rs:10):\nsrc/lib.rs:4: pub fn add(left: u32, right: u32) -> u32 {\n`add` occurs 2 times on line 10; used occurrence 1 (pass `occurrence` to pick another)"
    );
    let type_definition = lsp(
        &server,
        json!({"operation": "type_definition", "path": "src/lib.rs", "line": 10, "symbol": "circle"}),
    )
    .await;
    assert!(
        type_definition.ends_with("\nsrc/shapes.rs:5: pub struct Circle {"),
        "{type_definition}"
    );
    let implementation = lsp(
        &server,
        json!({"operation": "implementation", "path": "src/shapes.rs", "line": 1, "symbol": "Area"}),
    )
    .await;
    assert!(
        implementation.ends_with("\nsrc/shapes.rs:9: impl Area for Circle {"),
        "{implementation}"
    );
    let references = lsp(
        &server,
        json!({"operation": "references", "path": "src/lib.rs", "line": 4, "symbol": "add"}),
    )
    .await;
    assert!(
        references.starts_with("3 references to `add` (src/lib.rs:4):"),
        "{references}"
    );
    let hover = lsp(
        &server,
        json!({"operation": "hover", "path": "src/lib.rs", "line": 4, "symbol": "add"}),
    )
    .await;
    assert!(hover.contains("Adds two numbers."), "{hover}");
    let outline = lsp(
        &server,
        json!({"operation": "symbols", "path": "src/shapes.rs"}),
    )
    .await;
    assert!(outline.contains("struct Circle (line 5)"), "{outline}");
    let search = lsp(&server, json!({"operation": "symbols", "query": "twice"})).await;
    assert!(search.contains("function twice — src/lib.rs:8"), "{search}");
    let actions = lsp(
        &server,
        json!({"operation": "code_actions", "path": "src/lib.rs", "line": 9, "symbol": "circle"}),
    )
    .await;
    assert!(actions.contains("code action"), "{actions}");
    let diagnostics = lsp(
        &server,
        json!({"operation": "diagnostics", "path": "src/shapes.rs"}),
    )
    .await;
    assert!(
        diagnostics.contains("src/shapes.rs:16: error[E0308]"),
        "{diagnostics}"
    );
    let checked = lsp(&server, json!({"operation": "diagnostics", "path": "*"})).await;
    assert!(
        checked.contains("src/shapes.rs:16: error[E0308]: mismatched types"),
        "{checked}"
    );
    let renamed = server
        .call(
            "lsp_rename",
            json!({"path": "src/lib.rs", "line": 4, "symbol": "add", "new_name": "plus"}),
        )
        .await;
    assert_eq!(
        text(&renamed),
        "Renamed `add` to `plus`: 3 edits in 1 file:\n  src/lib.rs: 3 edits\n\n\
         rust-analyzer checked src/lib.rs: no errors."
    );
    assert!(
        std::fs::read_to_string(root.join("src/lib.rs"))
            .unwrap()
            .contains("plus(circle.radius, plus(1, 2))")
    );
    let reload = lsp(&server, json!({"operation": "reload"})).await;
    assert!(
        reload.starts_with("rust-analyzer (root .): restarted, pid "),
        "{reload}"
    );
    let status = lsp(&server, json!({"operation": "status"})).await;
    assert!(
        status.contains("rust-analyzer (.rs): usable — root ."),
        "{status}"
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
    let definition = lsp(
        &server,
        json!({"operation": "definition", "path": "pkg/main.py", "line": 8, "symbol": "add"}),
    )
    .await;
    assert_eq!(
        definition,
        "1 definition of `add` (pkg/main.py:8):\npkg/shapes.py:11: def add(left: int, right: int) -> int:"
    );
    let type_definition = lsp(
        &server,
        json!({"operation": "type_definition", "path": "pkg/main.py", "line": 7, "symbol": "circle"}),
    )
    .await;
    assert!(
        type_definition.ends_with("\npkg/shapes.py:6: class Circle(Shape):"),
        "{type_definition}"
    );
    let implementation = lsp(
        &server,
        json!({"operation": "implementation", "path": "pkg/main.py", "line": 8, "symbol": "shape.area"}),
    )
    .await;
    assert!(
        implementation.contains("pkg/shapes.py:7: def area(self) -> float:"),
        "{implementation}"
    );
    let references = lsp(
        &server,
        json!({"operation": "references", "path": "pkg/shapes.py", "line": 11, "symbol": "add"}),
    )
    .await;
    assert!(
        references.starts_with("3 references to `add` (pkg/shapes.py:11):"),
        "{references}"
    );
    let hover = lsp(
        &server,
        json!({"operation": "hover", "path": "pkg/shapes.py", "line": 11, "symbol": "add"}),
    )
    .await;
    assert!(hover.contains("Adds two numbers."), "{hover}");
    let outline = lsp(
        &server,
        json!({"operation": "symbols", "path": "pkg/shapes.py"}),
    )
    .await;
    assert!(outline.contains("class Circle (line 6)"), "{outline}");
    let search = lsp(&server, json!({"operation": "symbols", "query": "Circle"})).await;
    assert!(
        search.contains("class Circle — pkg/shapes.py:6"),
        "{search}"
    );
    let actions = lsp(
        &server,
        json!({"operation": "code_actions", "path": "pkg/main.py", "line": 1, "symbol": "os"}),
    )
    .await;
    assert!(
        actions.contains("# pyright: ignore[reportUnusedImport]"),
        "{actions}"
    );
    let diagnostics = lsp(
        &server,
        json!({"operation": "diagnostics", "path": "pkg/main.py"}),
    )
    .await;
    assert!(
        diagnostics.contains("pkg/main.py:12: error[reportReturnType]"),
        "{diagnostics}"
    );
    let checked = lsp(&server, json!({"operation": "diagnostics", "path": "*"})).await;
    assert!(
        checked.contains("pkg/main.py:12: error[reportReturnType]"),
        "{checked}"
    );
    let renamed = server
        .call(
            "lsp_rename",
            json!({"path": "pkg/shapes.py", "line": 11, "symbol": "add", "new_name": "plus"}),
        )
        .await;
    assert_eq!(
        text(&renamed),
        "Renamed `add` to `plus`: 3 edits in 2 files:\n  pkg/main.py: 2 edits\n  pkg/shapes.py: 1 edit\n\n\
         pkg/main.py still has 1 error, none new.\n\
         basedpyright checked pkg/shapes.py: no errors."
    );
    let reload = lsp(&server, json!({"operation": "reload"})).await;
    assert!(
        reload.starts_with("basedpyright (root .): restarted, pid "),
        "{reload}"
    );
    let status = lsp(&server, json!({"operation": "status"})).await;
    assert!(
        status.contains("basedpyright (.py, .pyi): usable — root ."),
        "{status}"
    );
}
