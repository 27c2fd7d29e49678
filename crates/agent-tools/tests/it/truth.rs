//! The language-server family tells the whole truth (SPEC section 10, LSP-5, LSP-6, LSP-7,
//! LSP-8): every new error counted, fallout in files a write did not touch, no silent
//! "clean", no silent partial rename, caps that keep the point. Each test drives
//! `agent-tools serve` through an MCP client against the real servers (rust-analyzer,
//! basedpyright, clangd), and each scenario is one transcript snapshot
//! (`snapshots/lsp_*.snap`): every call, and what the model reads back, in text and
//! structure.

use std::time::{Duration, Instant};

use serde_json::json;

use tools_test_support::{Transcript, snapshot_settings, write_files};

use crate::lsp::{basedpyright_available, rust_analyzer_available, rust_project, start};
use crate::on_write::{on_write_config, record_edit, record_write};

/// Whether clangd runs here (said loudly when not; fails under `CI=true`).
fn clangd_available() -> bool {
    let installed = std::process::Command::new("clangd")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    tools_test_support::require("clangd", installed, "apt-get install -y clangd")
}

/// Snapshots the transcript `t` as `name`, with this test's own `extra` filters.
fn assert_transcript(name: &str, t: Transcript, extra: &[(&str, &str)]) {
    let transcript = t.finish_with(extra);
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(name, transcript);
}

const RUST_LIB: &str = "pub mod calls;\n\npub fn add(left: u32, right: u32) -> u32 {\n    left + right\n}\n\npub fn uses() -> u32 {\n    let a = add(1, 1);\n    let b = add(2, 2);\n    let c = add(3, 3);\n    let d = add(4, 4);\n    let e = add(5, 5);\n    a + b + c + d + e\n}\n\npub fn check(value: u32) -> u32 {\n    value\n}\n\npub fn steps() -> u32 {\n    let step = 1;\n    step + 1\n}\n";

const RUST_CALLS: &str = "use crate::add;\n\npub fn more() -> u32 {\n    add(1, 2) + add(3, 4) + add(5, 6)\n}\n\npub fn twice() -> u32 {\n    add(7, 8)\n}\n";

#[tokio::test]
async fn lsp_7_rust_every_broken_call_is_counted_here_and_in_other_files() {
    if !rust_analyzer_available() {
        return;
    }
    let (_dir, root) = rust_project();
    write_files(
        &root,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"truth\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            ),
            ("src/lib.rs", RUST_LIB),
            ("src/calls.rs", RUST_CALLS),
            ("src/orphan.rs", "pub fn orphan() -> u32 {\n    1\n}\n"),
        ],
    );
    std::fs::write(root.join("agent-tools.toml"), on_write_config(&root)).unwrap();
    let server = start(&root).await;
    let mut t = Transcript::new(&root);

    // A signature change breaks five calls in this file and four in another: all nine are
    // counted, each once (rust-analyzer's own E0107 and cargo's E0061 are one finding). On
    // a loaded machine the report has been seen to settle on a partial publish of
    // src/calls.rs and count 2 of its 4: that is the settle's bug, not this test's, so the
    // snapshot holds the true count, as the assertion before it did.
    record_edit(
        &mut t,
        &server,
        "src/lib.rs",
        "pub fn add(left: u32, right: u32) -> u32 {\n    left + right",
        "pub fn add(left: u32, right: u32, carry: u32) -> u32 {\n    left + right + carry",
    )
    .await;
    // Reverted: nothing new anywhere, and the file is said to be clean.
    record_edit(
        &mut t,
        &server,
        "src/lib.rs",
        "pub fn add(left: u32, right: u32, carry: u32) -> u32 {\n    left + right + carry",
        "pub fn add(left: u32, right: u32) -> u32 {\n    left + right",
    )
    .await;
    // A second error with the message of one already there is new, at its own line.
    record_edit(
        &mut t,
        &server,
        "src/lib.rs",
        "    left + right\n",
        "    let x: u32 = \"one\";\n    left + right\n",
    )
    .await;
    record_edit(
        &mut t,
        &server,
        "src/lib.rs",
        "    value\n",
        "    let y: u32 = \"two\";\n    value\n",
    )
    .await;
    // Fixing one of the two reports nothing; bringing it back reports it.
    record_edit(
        &mut t,
        &server,
        "src/lib.rs",
        "    let y: u32 = \"two\";\n",
        "",
    )
    .await;
    record_edit(
        &mut t,
        &server,
        "src/lib.rs",
        "    value\n",
        "    let y: u32 = \"two\";\n    value\n",
    )
    .await;
    // A file in no crate is not checked, and the result says so instead of reading clean.
    record_write(
        &mut t,
        &server,
        "write",
        json!({"path": "src/orphan.rs", "content": "pub fn orphan() -> u32 {\n    \"no\"\n}\n"}),
    )
    .await;
    // A rename names the identifier it wrote.
    t.call(
        &server,
        "lsp_rename",
        json!({"path": "src/lib.rs", "line": 23, "symbol": "step", "new_name": "fn"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        RUST_LIB
            .replace(
                "    left + right\n",
                "    let x: u32 = \"one\";\n    left + right\n"
            )
            .replace("    value\n", "    let y: u32 = \"two\";\n    value\n")
            .replace("let step = 1;\n    step + 1", "let r#fn = 1;\n    r#fn + 1")
    );
    // Each broken call is one finding. Where both passes reported a line of the written
    // file, cargo's richer E0061 ("this function takes 3 arguments but 2 arguments were
    // supplied") is the one kept; when the write settles before cargo's check has published
    // a line (it happens on a loaded machine), rust-analyzer's own E0107 ("expected 3
    // arguments, found 2") stands for it. Which one a line of src/lib.rs gets is the
    // machine's timing, so the snapshot shows one placeholder for either there; the lines,
    // the counts, and cargo's words in src/calls.rs (which only cargo reports) are the same
    // every time.
    let either = "[cargo's or rust-analyzer's words: 3 arguments expected, 2 supplied]";
    assert_transcript(
        "lsp_7_rust_every_broken_call_is_counted_here_and_in_other_files",
        t,
        &[
            (
                r"(src/lib\.rs:\d+: )error\[(?:E0061\]: this function takes 3 arguments but 2 arguments were supplied|E0107\]: expected 3 arguments, found 2)",
                &format!("${{1}}error[E0061 or E0107]: {either}"),
            ),
            (
                r#"("path": "src/lib\.rs",\s+"line": \d+,\s+"text": "[^"]*",\s+"severity": "error",\s+)"code": "(?:E0061|E0107)",(\s+)"message": "(?:this function takes 3 arguments but 2 arguments were supplied|expected 3 arguments, found 2)""#,
                &format!(r#"${{1}}"code": "E0061 or E0107",${{2}}"message": "{either}""#),
            ),
        ],
    );
}

/// A Python project: a module whose function many files call, a module with a stub, a file
/// with more than 200 locals, and nothing but warnings.
fn python_files(root: &std::path::Path) {
    let mut uses =
        String::from("from app.shapes import area\n\n\ndef many() -> int:\n    total = 0\n");
    for n in 0..55 {
        uses.push_str(&format!("    total += area({n})\n"));
    }
    uses.push_str("    return total\n");
    let mut big = String::from(
        "class First:\n    def method(self) -> int:\n        return 1\n\n\ndef many() -> int:\n",
    );
    for n in 0..220 {
        big.push_str(&format!("    local_{n} = {n}\n"));
    }
    big.push_str("    return local_0\n\n\nclass Last:\n    value: int = 1\n");
    write_files(
        root,
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"truth\"\nversion = \"0.1.0\"\n\n[tool.basedpyright]\ninclude = [\"app\"]\n",
            ),
            ("app/__init__.py", ""),
            (
                "app/shapes.py",
                "\"\"\"Shapes.\"\"\"\n\n\ndef area(side: int) -> int:\n    \"\"\"The area of a square.\"\"\"\n    return side * side\n",
            ),
            ("app/uses.py", &uses),
            (
                "app/more.py",
                "import os\nfrom app.shapes import area\n\n\ndef two() -> int:\n    return area(1) + area(2)\n",
            ),
            (
                "app/stubbed.py",
                "def scale(value: int) -> int:\n    \"\"\"Doubles: scale(1) == 2.\"\"\"\n    return value * 2\n",
            ),
            ("app/stubbed.pyi", "def scale(value: int) -> int: ...\n"),
            (
                "app/stub_user.py",
                "from app.stubbed import scale\n\n\ndef go() -> int:\n    return scale(3)\n",
            ),
            ("app/big.py", &big),
        ],
    );
}

#[tokio::test]
async fn lsp_5_python_answers_keep_the_point_and_writes_report_their_fallout() {
    if !basedpyright_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    python_files(&root);
    std::fs::write(root.join("agent-tools.toml"), on_write_config(&root)).unwrap();
    let server = start(&root).await;
    let mut t = Transcript::new(&root);

    // Warnings only: the checker's exit status is not an error when its report was read.
    t.call(
        &server,
        "lsp",
        json!({"operation": "diagnostics", "path": "*"}),
    )
    .await;
    t.call(
        &server,
        "lsp",
        json!({"operation": "diagnostics", "path": "app/more*", "severity": "warning"}),
    )
    .await;
    // A file's outline keeps its top-level classes and their members over 220 locals.
    t.call(
        &server,
        "lsp",
        json!({"operation": "symbols", "path": "app/big.py"}),
    )
    .await;
    // A query with a file searches that file; a workspace search puts the exact name first
    // and says what the project's `include` leaves out.
    t.call(
        &server,
        "lsp",
        json!({"operation": "symbols", "path": "app/big.py", "query": "Last"}),
    )
    .await;
    t.call(
        &server,
        "lsp",
        json!({"operation": "symbols", "query": "area"}),
    )
    .await;
    // 58 uses in three files: counts per file first, then a page that reaches every file.
    t.call(
        &server,
        "lsp",
        json!({"operation": "references", "path": "app/shapes.py", "line": 4, "symbol": "area", "max_results": 10}),
    )
    .await;
    // Hover text is clean markdown.
    t.call(
        &server,
        "lsp",
        json!({"operation": "hover", "path": "app/more.py", "line": 6, "symbol": "area"}),
    )
    .await;
    // A signature change: the importers' broken calls are reported, counted per file.
    record_edit(
        &mut t,
        &server,
        "app/shapes.py",
        "def area(side: int) -> int:",
        "def area(side: int, unit: str) -> int:",
    )
    .await;
    // Reverted: nothing new anywhere.
    record_edit(
        &mut t,
        &server,
        "app/shapes.py",
        "def area(side: int, unit: str) -> int:",
        "def area(side: int) -> int:",
    )
    .await;

    // A definition a stub shadows (LSP-5, SPEC section 10): its uses resolve to the stub,
    // and references from the implementation find them too, saying a stub declares it.
    t.call(
        &server,
        "lsp",
        json!({"operation": "references", "path": "app/stubbed.py", "line": 1, "symbol": "scale"}),
    )
    .await;
    // A rename from there goes through the stub: every use is renamed, and what is left is
    // text in a docstring, listed as such.
    t.call(
        &server,
        "lsp_rename",
        json!({"path": "app/stubbed.py", "line": 1, "symbol": "scale", "new_name": "double"}),
    )
    .await;
    for (file, expected) in [
        ("app/stubbed.pyi", "def double(value: int) -> int: ...\n"),
        (
            "app/stub_user.py",
            "from app.stubbed import double\n\n\ndef go() -> int:\n    return double(3)\n",
        ),
    ] {
        assert_eq!(std::fs::read_to_string(root.join(file)).unwrap(), expected);
    }

    // A listed quick fix can be applied, with diagnostics on write after it.
    t.call(
        &server,
        "lsp",
        json!({"operation": "code_actions", "path": "app/more.py", "line": 1, "symbol": "os"}),
    )
    .await;
    record_write(
        &mut t,
        &server,
        "lsp_code_action",
        json!({"path": "app/more.py", "line": 1, "symbol": "os", "title": "pyright: ignore"}),
    )
    .await;
    assert!(
        std::fs::read_to_string(root.join("app/more.py"))
            .unwrap()
            .starts_with("import os  # pyright: ignore[reportUnusedImport]\n")
    );
    t.call(
        &server,
        "lsp_code_action",
        json!({"path": "app/more.py", "line": 1, "symbol": "os", "title": "Inline"}),
    )
    .await;
    assert_transcript(
        "lsp_5_python_answers_keep_the_point_and_writes_report_their_fallout",
        t,
        &[],
    );
}

const C_FILES: &[(&str, &str)] = &[
    (
        "CMakeLists.txt",
        "cmake_minimum_required(VERSION 3.10)\nproject(truth C)\nadd_library(truth src/stack.c src/parser.c)\n",
    ),
    (
        "src/stack.h",
        "#ifndef STACK_H\n#define STACK_H\n\ntypedef struct Stack Stack;\n\nvoid ts_stack_halt(Stack *self);\nint ts_stack_size(Stack *self);\n\n#endif\n",
    ),
    (
        "src/stack.c",
        "#include \"stack.h\"\n\nstruct Stack { int size; };\n\nvoid ts_stack_halt(Stack *self) { self->size = 0; }\nint ts_stack_size(Stack *self) { return self->size; }\n",
    ),
    (
        "src/parser.c",
        "#include \"stack.h\"\n\nint parse(Stack *stack) {\n  ts_stack_halt(stack);\n  return ts_stack_size(stack);\n}\n",
    ),
];

#[tokio::test]
async fn lsp_8_c_a_rename_without_a_compile_database_says_what_it_left_and_does_not_wait() {
    if !clangd_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write_files(&root, C_FILES);
    std::fs::write(root.join("agent-tools.toml"), on_write_config(&root)).unwrap();
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    // clangd without a compile database knows the files opened in this run.
    for (file, line) in [("src/stack.h", 6), ("src/stack.c", 5)] {
        t.call(
            &server,
            "lsp",
            json!({"operation": "hover", "path": file, "line": line, "symbol": "ts_stack_halt"}),
        )
        .await;
    }
    let started = Instant::now();
    record_write(
        &mut t,
        &server,
        "lsp_rename",
        json!({"path": "src/parser.c", "line": 4, "symbol": "ts_stack_halt", "new_name": "ts_stack_stop"}),
    )
    .await;
    // Every renamed file settles at once: nothing waits for a publish clangd never sends.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the rename took {:?}",
        started.elapsed()
    );

    // A header change: the open files that include it are rebuilt and their new errors
    // reported, without waiting out the deadline.
    let started = Instant::now();
    record_edit(
        &mut t,
        &server,
        "src/stack.h",
        "int ts_stack_size(Stack *self);",
        "int ts_stack_size(Stack *self, int depth);",
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the edit took {:?}",
        started.elapsed()
    );
    // `references` says why its answer may be short.
    t.call(
        &server,
        "lsp",
        json!({"operation": "references", "path": "src/stack.h", "line": 7, "symbol": "ts_stack_size"}),
    )
    .await;
    assert_transcript(
        "lsp_8_c_a_rename_without_a_compile_database_says_what_it_left_and_does_not_wait",
        t,
        &[],
    );
}
