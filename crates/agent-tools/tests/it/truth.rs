//! The language-server family tells the whole truth (SPEC section 10, LSP-5, LSP-6, LSP-7, LSP-8):
//! every new error counted, fallout in files a write did not touch, no silent "clean", no silent
//! partial rename, caps that keep the point. Each test drives `agent-tools serve` through an MCP
//! client against the real servers (rust-analyzer, basedpyright, clangd).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use tools_test_support::write_files;

use crate::lsp::{basedpyright_available, rust_analyzer_available, rust_project, start};
use crate::on_write::{edit, introduced, listed, on_write_config, write_call};
use crate::support::{Server, is_error, text};

/// `path:LINE` of each fallout diagnostic.
fn fallout(diagnostics: &Value) -> Vec<String> {
    listed(diagnostics, "fallout")
}

/// How many new diagnostics the write introduced in `path`, a file it did not touch.
fn fallout_count(diagnostics: &Value, path: &str) -> u64 {
    diagnostics["fallout"]
        .as_array()
        .and_then(|files| files.iter().find(|f| f["path"] == path))
        .map_or(0, |f| f["introduced"].as_u64().unwrap())
}

async fn call_ok(server: &Server, tool: &str, arguments: Value) -> String {
    let result = server.call(tool, arguments.clone()).await;
    assert!(
        !is_error(&result),
        "{tool} {arguments} failed: {}",
        text(&result)
    );
    text(&result)
}

fn clangd_available() -> bool {
    let installed = std::process::Command::new("clangd")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    tools_test_support::require("clangd", installed, "apt-get install -y clangd")
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

    // A signature change breaks five calls in this file and four in another: all nine are
    // counted, each once (rust-analyzer's own E0107 and cargo's E0061 are one finding).
    let (shown, diagnostics) = edit(
        &server,
        "src/lib.rs",
        "pub fn add(left: u32, right: u32) -> u32 {\n    left + right",
        "pub fn add(left: u32, right: u32, carry: u32) -> u32 {\n    left + right + carry",
    )
    .await;
    assert_eq!(
        introduced(&diagnostics),
        [
            "src/lib.rs:8",
            "src/lib.rs:9",
            "src/lib.rs:10",
            "src/lib.rs:11",
            "src/lib.rs:12"
        ],
        "{shown}"
    );
    // Each broken call is one finding. Where both passes reported a line, cargo's richer
    // E0061 is the one kept; when the write settles before cargo's check has published a
    // line (it happens on a loaded machine), rust-analyzer's own E0107 stands for it — the
    // count is the same either way.
    let line_8_cargo = "\nsrc/lib.rs:8: error[E0061]: this function takes 3 arguments but 2 \
                        arguments were supplied\n    let a = add(1, 1);";
    let line_8_native =
        "\nsrc/lib.rs:8: error[E0107]: expected 3 arguments, found 2\n    let a = add(1, 1);";
    assert!(
        shown.contains(line_8_cargo) || shown.contains(line_8_native),
        "{shown}"
    );
    assert_eq!(
        shown.matches("\nsrc/lib.rs:8: ").count(),
        1,
        "two passes on one line were not merged: {shown}"
    );
    assert_eq!(
        fallout_count(&diagnostics, "src/calls.rs"),
        4,
        "{diagnostics}"
    );
    assert_eq!(
        fallout(&diagnostics),
        [
            "src/calls.rs:4",
            "src/calls.rs:4",
            "src/calls.rs:4",
            "src/calls.rs:8"
        ],
        "{shown}"
    );
    assert!(
        shown.contains("\n\nIn files it did not touch, this write introduced 4 new diagnostics in 1 file:\nsrc/calls.rs:4: error[E0061]"),
        "{shown}"
    );
    assert!(
        shown.ends_with("\nsrc/lib.rs now has 5 errors, all new."),
        "{shown}"
    );

    // Reverted: nothing new anywhere, and the file is said to be clean.
    let (shown, diagnostics) = edit(
        &server,
        "src/lib.rs",
        "pub fn add(left: u32, right: u32, carry: u32) -> u32 {\n    left + right + carry",
        "pub fn add(left: u32, right: u32) -> u32 {\n    left + right",
    )
    .await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");
    assert!(fallout(&diagnostics).is_empty(), "{shown}");
    assert!(
        shown.ends_with("\n\nrust-analyzer checked src/lib.rs: no errors."),
        "{shown}"
    );

    // A second error with the message of one already there is new, at its own line.
    let (_, diagnostics) = edit(
        &server,
        "src/lib.rs",
        "    left + right\n",
        "    let x: u32 = \"one\";\n    left + right\n",
    )
    .await;
    assert_eq!(introduced(&diagnostics), ["src/lib.rs:4"]);
    let (shown, diagnostics) = edit(
        &server,
        "src/lib.rs",
        "    value\n",
        "    let y: u32 = \"two\";\n    value\n",
    )
    .await;
    assert_eq!(introduced(&diagnostics), ["src/lib.rs:18"], "{shown}");
    assert!(
        shown.contains(
            "src/lib.rs:18: error[E0308]: mismatched types; expected `u32`, found `&str`"
        ),
        "{shown}"
    );
    assert!(
        shown.ends_with("\nsrc/lib.rs now has 2 errors, 1 of them new."),
        "{shown}"
    );
    // Fixing one of the two reports nothing; bringing it back reports it.
    let (shown, diagnostics) = edit(&server, "src/lib.rs", "    let y: u32 = \"two\";\n", "").await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");
    assert!(
        shown.ends_with("\n\nsrc/lib.rs still has 1 error, none new."),
        "{shown}"
    );
    let (_, diagnostics) = edit(
        &server,
        "src/lib.rs",
        "    value\n",
        "    let y: u32 = \"two\";\n    value\n",
    )
    .await;
    assert_eq!(introduced(&diagnostics), ["src/lib.rs:18"]);

    // A file in no crate is not checked, and the result says so instead of reading clean.
    let (shown, diagnostics) = write_call(
        &server,
        "write",
        json!({"path": "src/orphan.rs", "content": "pub fn orphan() -> u32 {\n    \"no\"\n}\n"}),
    )
    .await;
    assert!(
        shown.ends_with(
            "\n\nNot checked: src/orphan.rs (it is in no crate: no `mod` declaration reaches it, \
             so rust-analyzer does not check it)."
        ),
        "{shown}"
    );
    assert_eq!(
        diagnostics["files"][0]["state"], "not_checked",
        "{diagnostics}"
    );

    // A rename names the identifier it wrote.
    let renamed = call_ok(
        &server,
        "lsp_rename",
        json!({"path": "src/lib.rs", "line": 23, "symbol": "step", "new_name": "fn"}),
    )
    .await;
    assert!(
        renamed.starts_with("Renamed `step` to `r#fn`: 2 edits in 1 file:"),
        "{renamed}"
    );
    assert!(
        std::fs::read_to_string(root.join("src/lib.rs"))
            .unwrap()
            .contains("let r#fn = 1;")
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

    // Warnings only: the checker's exit status is not an error when its report was read.
    let checked = call_ok(
        &server,
        "lsp",
        json!({"operation": "diagnostics", "path": "*"}),
    )
    .await;
    assert!(
        checked.starts_with("`basedpyright --outputjson` (root .): 0 errors and "),
        "{checked}"
    );
    assert!(!checked.contains("failed"), "{checked}");
    let errors = call_ok(
        &server,
        "lsp",
        json!({"operation": "diagnostics", "path": "app/more*", "severity": "warning"}),
    )
    .await;
    assert!(
        errors.contains(
            "\nListing 1 warning under app/more:\napp/more.py:1: warning[reportUnusedImport]"
        ),
        "{errors}"
    );

    // A file's outline keeps its top-level classes and their members over 220 locals.
    let outline = call_ok(
        &server,
        "lsp",
        json!({"operation": "symbols", "path": "app/big.py"}),
    )
    .await;
    assert!(outline.starts_with("225 symbols in app/big.py:\nclass First (line 1)\n  method method (line 2)\nfunction many (line 6)"), "{outline}");
    assert!(
        outline.contains("\nclass Last (line 230)\n  variable value (line 231)\n"),
        "{outline}"
    );
    assert!(
        outline.ends_with("25 locals and parameters of functions left out — `offset` pages through all of them in order)"),
        "{outline}"
    );

    // A query with a file searches that file; a workspace search puts the exact name first
    // and says what the project's `include` leaves out.
    let in_file = call_ok(
        &server,
        "lsp",
        json!({"operation": "symbols", "path": "app/big.py", "query": "Last"}),
    )
    .await;
    assert_eq!(
        in_file,
        "1 symbol matching `Last` in app/big.py:\nclass Last (line 230)"
    );
    let searched = call_ok(
        &server,
        "lsp",
        json!({"operation": "symbols", "query": "area"}),
    )
    .await;
    let first = searched.lines().nth(1).unwrap_or_default();
    assert!(
        first.starts_with("function area — app/shapes.py:4"),
        "{searched}"
    );
    assert!(
        searched.ends_with(
            "basedpyright's `include` (app) limits the project, so files outside it are not \
             searched"
        ),
        "{searched}"
    );

    // 58 uses in three files: counts per file first, then a page that reaches every file.
    let references = call_ok(
        &server,
        "lsp",
        json!({"operation": "references", "path": "app/shapes.py", "line": 4, "symbol": "area", "max_results": 10}),
    )
    .await;
    let lines: Vec<&str> = references.lines().collect();
    assert_eq!(
        lines[0], "60 references to `area` (app/shapes.py:4):",
        "{references}"
    );
    assert_eq!(
        lines[1], "Per file: app/uses.py: 56, app/more.py: 3, app/shapes.py: 1.",
        "{references}"
    );
    for file in ["app/more.py:", "app/shapes.py:4:", "app/uses.py:"] {
        assert!(
            lines[2..12].iter().any(|line| line.starts_with(file)),
            "{file} missing: {references}"
        );
    }

    // Hover text is clean markdown.
    let hover = call_ok(
        &server,
        "lsp",
        json!({"operation": "hover", "path": "app/more.py", "line": 6, "symbol": "area"}),
    )
    .await;
    assert!(hover.contains("The area of a square."), "{hover}");
    assert!(
        !hover.contains("&nbsp;") && !hover.contains("\\_"),
        "{hover}"
    );

    // A signature change: the importers' broken calls are reported, counted per file.
    let (shown, diagnostics) = edit(
        &server,
        "app/shapes.py",
        "def area(side: int) -> int:",
        "def area(side: int, unit: str) -> int:",
    )
    .await;
    assert!(introduced(&diagnostics).is_empty(), "{shown}");
    assert_eq!(
        fallout_count(&diagnostics, "app/uses.py"),
        55,
        "{diagnostics}"
    );
    assert_eq!(
        fallout_count(&diagnostics, "app/more.py"),
        2,
        "{diagnostics}"
    );
    assert_eq!(fallout(&diagnostics).len(), 10, "{shown}");
    assert!(
        shown.contains(
            "\n\nIn files it did not touch, this write introduced 57 new diagnostics in 2 files:\n\
             New per file: app/more.py: 2, app/uses.py: 55.\n\
             app/more.py:6: error[reportCallIssue]: Argument missing for parameter \"unit\""
        ),
        "{shown}"
    );
    assert!(
        shown.contains("\n(showing 10 of 57; call `lsp` with operation `diagnostics` on a file"),
        "{shown}"
    );
    assert!(
        shown.ends_with("\nbasedpyright checked app/shapes.py: no errors."),
        "{shown}"
    );
    // Reverted: nothing new anywhere.
    let (shown, diagnostics) = edit(
        &server,
        "app/shapes.py",
        "def area(side: int, unit: str) -> int:",
        "def area(side: int) -> int:",
    )
    .await;
    assert!(fallout(&diagnostics).is_empty(), "{shown}");

    // A definition a stub shadows (LSP-5, SPEC section 10): its uses resolve to the stub,
    // and references from the implementation find them too, saying a stub declares it.
    let references = call_ok(
        &server,
        "lsp",
        json!({"operation": "references", "path": "app/stubbed.py", "line": 1, "symbol": "scale"}),
    )
    .await;
    for place in [
        "\napp/stub_user.py:1: from app.stubbed import scale",
        "\napp/stub_user.py:5: return scale(3)",
        "\napp/stubbed.py:1: def scale(value: int) -> int:",
        "\napp/stubbed.pyi:1: def scale(value: int) -> int: ...",
    ] {
        assert!(references.contains(place), "{place}: {references}");
    }
    assert!(
        references.contains(
            "a stub declares `scale` (app/stubbed.pyi:1): uses that resolve to the stub and to \
             the implementation are both listed"
        ),
        "{references}"
    );

    // A rename from there goes through the stub: every use is renamed, and what is left is
    // text in a docstring, listed as such.
    let renamed = call_ok(
        &server,
        "lsp_rename",
        json!({"path": "app/stubbed.py", "line": 1, "symbol": "scale", "new_name": "double"}),
    )
    .await;
    assert!(
        renamed.contains(
            "\n1 occurrence of `scale` remains that basedpyright did not rename; nothing was \
             changed there:\n  1 in comments, strings or docstrings.\n  \
             app/stubbed.py:2: \"\"\"Doubles: scale(1) == 2.\"\"\"  (comment or string)"
        ),
        "{renamed}"
    );
    assert!(
        renamed.contains("Renamed from the stub's declaration (app/stubbed.pyi:1)"),
        "{renamed}"
    );
    for (file, expected) in [
        ("app/stubbed.pyi", "def double(value: int) -> int: ...\n"),
        (
            "app/stub_user.py",
            "from app.stubbed import double\n\n\ndef go() -> int:\n    return double(3)\n",
        ),
    ] {
        assert_eq!(
            std::fs::read_to_string(root.join(file)).unwrap(),
            expected,
            "{renamed}"
        );
    }

    // A listed quick fix can be applied, with diagnostics on write after it.
    let actions = call_ok(
        &server,
        "lsp",
        json!({"operation": "code_actions", "path": "app/more.py", "line": 1, "symbol": "os"}),
    )
    .await;
    assert!(
        actions.contains("1. Add `# pyright: ignore[reportUnusedImport]` (quickfix)"),
        "{actions}"
    );
    let (shown, diagnostics) = write_call(
        &server,
        "lsp_code_action",
        json!({"path": "app/more.py", "line": 1, "symbol": "os", "title": "pyright: ignore"}),
    )
    .await;
    assert!(
        shown.starts_with(
            "Applied \"Add `# pyright: ignore[reportUnusedImport]`\" (basedpyright, at \
             app/more.py:1): 1 edit in 1 file:\n  app/more.py: 1 edit"
        ),
        "{shown}"
    );
    assert_eq!(
        diagnostics["files"][0]["path"], "app/more.py",
        "{diagnostics}"
    );
    assert!(
        std::fs::read_to_string(root.join("app/more.py"))
            .unwrap()
            .starts_with("import os  # pyright: ignore[reportUnusedImport]\n")
    );
    let unknown = server
        .call(
            "lsp_code_action",
            json!({"path": "app/more.py", "line": 1, "symbol": "os", "title": "Inline"}),
        )
        .await;
    assert!(is_error(&unknown));
    assert!(
        text(&unknown).starts_with("no code action is titled \"Inline\";"),
        "{}",
        text(&unknown)
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
    // clangd without a compile database knows the files opened in this run.
    for (file, line) in [("src/stack.h", 6), ("src/stack.c", 5)] {
        call_ok(
            &server,
            "lsp",
            json!({"operation": "hover", "path": file, "line": line, "symbol": "ts_stack_halt"}),
        )
        .await;
    }
    let started = Instant::now();
    let (renamed, diagnostics) = write_call(
        &server,
        "lsp_rename",
        json!({"path": "src/parser.c", "line": 4, "symbol": "ts_stack_halt", "new_name": "ts_stack_stop"}),
    )
    .await;
    // Every renamed file settles at once: nothing waits for a publish clangd never sends.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}: {renamed}",
        started.elapsed()
    );
    assert!(
        renamed.contains(
            "\n1 occurrence of `ts_stack_halt` remains that clangd did not rename; nothing was \
             changed there:\n  1 in code (uses clangd did not see, e.g. through a stub or in \
             another project, or another symbol of that name).\n  \
             src/stack.h:6: void ts_stack_halt(Stack *self);"
        ),
        "{renamed}"
    );
    let files = diagnostics["files"].as_array().unwrap();
    assert!(
        files.iter().all(|f| f["state"] == "checked"),
        "{diagnostics}"
    );
    assert_eq!(files.len(), 2, "{diagnostics}");

    // A header change: the open files that include it are rebuilt and their new errors
    // reported, without waiting out the deadline.
    let started = Instant::now();
    let (shown, diagnostics) = edit(
        &server,
        "src/stack.h",
        "int ts_stack_size(Stack *self);",
        "int ts_stack_size(Stack *self, int depth);",
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}: {shown}",
        started.elapsed()
    );
    assert_eq!(
        fallout(&diagnostics),
        ["src/parser.c:5", "src/stack.c:6"],
        "{shown}"
    );
    assert!(
        shown.contains(
            "src/parser.c:5: error[typecheck_call_too_few_args]: Too few arguments to function \
             call, expected 2, have 1; src/stack.h:7:5: note: 'ts_stack_size' declared here"
        ),
        "{shown}"
    );
    assert!(
        shown.ends_with(
            "\nclangd checked src/stack.h (through the 2 files that include it, found without \
             a compile database: files that reach it through `-I` may be missing): no errors."
        ),
        "{shown}"
    );
    // `references` says why its answer may be short.
    let references = call_ok(
        &server,
        "lsp",
        json!({"operation": "references", "path": "src/stack.h", "line": 7, "symbol": "ts_stack_size"}),
    )
    .await;
    assert!(
        references.ends_with(
            "clangd has no compile_commands.json here, so it knows only the files opened in \
             this run: uses in other files may be missing (generate one, e.g. with \
             `cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON` or `bear -- make`)"
        ),
        "{references}"
    );
}
