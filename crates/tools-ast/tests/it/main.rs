//! `ast_grep`, `ast_edit` and `resolve` on real files on disk, through dispatch.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::{Value, json};
use tools_core::{
    ApprovalPolicy, Dispatcher, DispatcherOptions, RegistryBuilder, Run, ToolCall, ToolResult,
    Workspace,
};

struct Fixture {
    dir: tempfile::TempDir,
    dispatcher: Dispatcher,
    index: std::sync::Arc<tools_ast::SyntaxIndex>,
}

/// Files from `//- /path` headers.
fn fixture(files: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    tools_test_support::write_fixture(dir.path(), files).unwrap();
    fixture_in(dir)
}

/// The tools over the files already in `dir`.
fn fixture_in(dir: tempfile::TempDir) -> Fixture {
    let mut builder = RegistryBuilder::new(Run::new(Workspace::new(dir.path()).unwrap()));
    let index = tools_ast::SyntaxIndex::new(tools_ast::DEFAULT_CACHE_MB);
    tools_ast::register(
        &mut builder,
        tools_ast::SearchOptions::default(),
        std::sync::Arc::clone(&index),
    );
    let options = DispatcherOptions {
        approval: ApprovalPolicy::Allow,
        ..DispatcherOptions::default()
    };
    Fixture {
        dispatcher: Dispatcher::new(builder.build(), options),
        dir,
        index,
    }
}

impl Fixture {
    async fn call(&self, name: &str, arguments: Value) -> ToolResult {
        self.dispatcher
            .dispatch(ToolCall {
                name: name.into(),
                arguments,
            })
            .await
    }

    async fn grep(&self, arguments: Value) -> ToolResult {
        let result = self.call("ast_grep", arguments).await;
        assert!(!result.is_error, "{}", result.text);
        result
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(path)).unwrap()
    }

    fn write(&self, path: &str, text: &str) {
        std::fs::write(self.dir.path().join(path), text).unwrap();
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }
}

/// `path:LINE` locations of the matches, in result order.
fn locations(result: &ToolResult) -> Vec<String> {
    let structured = result.structured.as_ref().unwrap();
    structured["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}:{}", m["path"].as_str().unwrap(), m["line"]))
        .collect()
}

const DART: &str = r#"
//- /lib/widget.dart
class Widget {
  Controller? controller;
  Controller? other;

  void dispose() {
    if (controller != null) controller.dispose();
    if (controller != null) other.dispose();
    if (other != null) {
      other.dispose();
    }
  }
}
//- /lib/calls.dart
void cleanup(Object x, Object y) {
  dispose(x);
  dispose( x );
  dispose(
    x,
  );
  dispose(/* the thing */ x);
  print("dispose(x)");
  // dispose(x)
  dispose(y);
}
"#;

#[tokio::test]
async fn ast_2_a_repeated_metavariable_must_capture_the_same_code() {
    let fx = fixture(DART);
    let result = fx
        .grep(json!({"pattern": "if ($X != null) $X.dispose()", "language": "dart"}))
        .await;
    // The guard that disposes what it checked matches; the one disposing `other` does not.
    // The braced guard is a block, not the statement the pattern names.
    assert_eq!(locations(&result), ["lib/widget.dart:6"]);
    assert!(
        result.text.starts_with(
            "1 match in 1 file for `if ($X != null) $X.dispose()` (dart, compiled in the statement context: if_statement; 2 dart files searched)."
        ),
        "{}",
        result.text
    );
    assert!(result.text.contains(
        "\nlib/widget.dart:6: if (controller != null) controller.dispose();\n    $X = controller"
    ));
}

#[tokio::test]
async fn ast_4_a_call_is_found_however_it_is_spaced_and_never_in_strings_or_comments() {
    let fx = fixture(DART);
    let result = fx
        .grep(json!({"pattern": "dispose(x)", "path": "lib/calls.dart"}))
        .await;
    assert_eq!(
        locations(&result),
        [
            "lib/calls.dart:2",
            "lib/calls.dart:3",
            "lib/calls.dart:4",
            "lib/calls.dart:7"
        ]
    );
    let wrapped = &result.structured.as_ref().unwrap()["matches"][2];
    assert_eq!(
        (wrapped["line"].as_u64(), wrapped["end_line"].as_u64()),
        (Some(4), Some(6))
    );
    assert!(
        result
            .text
            .contains("lib/calls.dart:4: dispose(  (to line 6)"),
        "{}",
        result.text
    );
}

#[tokio::test]
async fn ast_5_an_unparseable_pattern_is_reported_not_silently_empty() {
    let fx = fixture(DART);
    let result = fx
        .call(
            "ast_grep",
            json!({"pattern": "dispose($X", "language": "dart"}),
        )
        .await;
    assert!(result.is_error);
    assert!(
        result
            .text
            .starts_with("the pattern `dispose($X` does not parse as dart code in any context"),
        "{}",
        result.text
    );
}

#[tokio::test]
async fn ast_1_sequences_and_wildcards() {
    let fx = fixture(
        r#"
//- /app.py
import logging
print("a", 1, key=2)
print()
log(1, 2)
log(1, 1)
"#,
    );
    let args = fx
        .grep(json!({"pattern": "print($$$ARGS)", "path": "app.py"}))
        .await;
    assert_eq!(locations(&args), ["app.py:2", "app.py:3"]);
    let first = &args.structured.as_ref().unwrap()["matches"][0]["captures"];
    assert_eq!(first, &json!({"$$$ARGS": "\"a\", 1, key=2"}));
    // `$_` binds nothing, so two of them need not be the same code.
    let wild = fx
        .grep(json!({"pattern": "log($_, $_)", "path": "app.py"}))
        .await;
    assert_eq!(locations(&wild), ["app.py:4", "app.py:5"]);
    assert_eq!(
        wild.structured.as_ref().unwrap()["matches"][0]["captures"],
        json!({})
    );
    let same = fx
        .grep(json!({"pattern": "log($A, $A)", "path": "app.py"}))
        .await;
    assert_eq!(locations(&same), ["app.py:5"]);
}

#[tokio::test]
async fn ast_1_rust_c_typescript_and_go() {
    let fx = fixture(
        r#"
//- /src/lib.rs
fn main() {
    let a = parse(x).unwrap();
    let b = parse(y)?;
    let s = "parse(z).unwrap()";
}
//- /native/buf.c
#include <stdlib.h>
void f(void) {
    char *p = malloc(16);
    free(p);
    char *q = malloc(sizeof(int) * 4);
}
//- /web/app.ts
function f(): void {
  console.log("a", b);
  console.error("c");
}
//- /cmd/main.go
package main

import "fmt"

func main() {
	fmt.Println("hi", 1)
	fmt.Printf("%d", 2)
}
"#,
    );
    let rust = fx
        .grep(json!({"pattern": "$E.unwrap()", "language": "rust"}))
        .await;
    assert_eq!(locations(&rust), ["src/lib.rs:2"]);
    assert_eq!(
        rust.structured.as_ref().unwrap()["matches"][0]["captures"]["$E"],
        "parse(x)"
    );
    let c = fx
        .grep(json!({"pattern": "malloc($SIZE)", "language": "c"}))
        .await;
    assert_eq!(locations(&c), ["native/buf.c:3", "native/buf.c:5"]);
    let ts = fx
        .grep(json!({"pattern": "console.log($$$A)", "language": "typescript"}))
        .await;
    assert_eq!(locations(&ts), ["web/app.ts:2"]);
    let go = fx
        .grep(json!({"pattern": "fmt.Println($$$A)", "language": "go"}))
        .await;
    assert_eq!(locations(&go), ["cmd/main.go:6"]);
}

#[tokio::test]
async fn ast_3_matches_are_sorted_and_capped_with_the_total() {
    let mut files = String::new();
    for name in ["b", "a", "c"] {
        files.push_str(&format!("//- /{name}.py\nf(1)\nf(2)\n"));
    }
    let fx = fixture(&files);
    let result = fx
        .grep(json!({"pattern": "f($X)", "language": "python", "max_results": 4}))
        .await;
    assert_eq!(locations(&result), ["a.py:1", "a.py:2", "b.py:1", "b.py:2"]);
    let structured = result.structured.as_ref().unwrap();
    assert_eq!(
        (
            structured["total"].as_u64(),
            structured["truncated"].as_bool()
        ),
        (Some(6), Some(true))
    );
    assert!(result.text.contains("Showing the first 4 of 6, sorted by path and line; narrow `path` or raise `max_results` (up to 1000) for the rest."));
}

#[tokio::test]
async fn ast_3_max_results_is_bounded_and_rows_stop_at_the_output_limit() {
    // 1,500 matches on long lines: at most 1,000 are asked for, and the rows stop where the
    // text would pass the output limit, while every match is still counted.
    let long = "x".repeat(180);
    let mut text = String::new();
    for n in 0..1500 {
        text.push_str(&format!("f({n}, \"{long}\")\n"));
    }
    let fx = fixture(&format!("//- /many.py\n{text}"));
    let result = fx
        .grep(json!({"pattern": "f($X, $Y)", "language": "python", "max_results": 1_000_000}))
        .await;
    let structured = result.structured.as_ref().unwrap();
    assert_eq!(structured["total"].as_u64(), Some(1500));
    let listed = structured["matches"].as_array().unwrap().len();
    assert!(listed < 1000, "{listed} rows listed");
    assert!(
        result
            .text
            .contains("`max_results` is at most 1000; listing up to 1000."),
        "{}",
        &result.text[..300]
    );
    assert!(
        result.text.contains(&format!(
            "Stopped listing after {listed} matches: more would pass the output limit. All 1500 were counted"
        )),
        "{}",
        &result.text[result.text.len() - 300..]
    );
    assert!(!result.text.contains("[output cut"));
}

#[tokio::test]
async fn ast_3_gitignored_files_are_not_searched() {
    let fx = fixture("//- /.gitignore\nbuild/\n//- /src/a.py\nf(1)\n//- /build/gen.py\nf(2)\n");
    let result = fx
        .grep(json!({"pattern": "f($X)", "language": "python"}))
        .await;
    assert_eq!(locations(&result), ["src/a.py:1"]);
}

#[tokio::test]
async fn no_match_says_how_many_files_were_searched() {
    let fx = fixture(DART);
    let result = fx
        .grep(json!({"pattern": "close($X)", "language": "dart"}))
        .await;
    assert_eq!(
        result.text,
        "No matches for `close($X)` (dart, compiled in the statement context: call_expression) in 2 dart files under `.`."
    );
}

const EDIT: &str = r#"
//- /lib/a.dart
void a(Object x) {
  dispose(x);
}
//- /lib/b.dart
void b(Object y, Object z) {
  dispose(y);
  dispose(z);
}
//- /lib/c.dart
void c() {}
"#;

#[tokio::test]
async fn ast_6_edits_are_staged_not_written() {
    let fx = fixture(EDIT);
    let staged = fx
        .call(
            "ast_edit",
            json!({"pattern": "dispose($X)", "rewrite": "$X.dispose()", "language": "dart"}),
        )
        .await;
    assert!(!staged.is_error, "{}", staged.text);
    assert!(
        staged.text.starts_with(
            "(proposed) 3 replacements in 2 files — nothing is written yet: call resolve with edit_id \"edit_1\""
        ),
        "{}",
        staged.text
    );
    assert!(staged.text.contains("--- a/lib/a.dart\n+++ b/lib/a.dart\n@@ -1,3 +1,3 @@\n void a(Object x) {\n-  dispose(x);\n+  x.dispose();\n }\n"));
    assert_eq!(
        fx.read("lib/a.dart"),
        "void a(Object x) {\n  dispose(x);\n}\n"
    );
    let accepted = fx
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}))
        .await;
    assert!(!accepted.is_error, "{}", accepted.text);
    assert_eq!(
        accepted.text,
        "Accepted edit_1: wrote 3 replacement(s) in 2 file(s):\n  lib/a.dart (1)\n  lib/b.dart (2)"
    );
    assert_eq!(
        fx.read("lib/b.dart"),
        "void b(Object y, Object z) {\n  y.dispose();\n  z.dispose();\n}\n"
    );
    let again = fx
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}))
        .await;
    assert_eq!(
        again.text,
        "`edit_1` was already accepted, so nothing was done; no edit is pending in this run; stage one with ast_edit"
    );
}

#[tokio::test]
async fn ast_7_a_file_changed_behind_the_edits_back_rejects_the_whole_edit() {
    let fx = fixture(EDIT);
    let staged = fx.call("ast_edit", json!({"pattern": "dispose($X)", "rewrite": "$X.dispose()", "path": "lib", "language": "dart"})).await;
    assert!(!staged.is_error, "{}", staged.text);
    fx.write(
        "lib/b.dart",
        "void b(Object y, Object z) {\n  dispose(y);\n  dispose(z);\n  // edited meanwhile\n}\n",
    );
    let rejected = fx
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}))
        .await;
    assert!(rejected.is_error);
    assert_eq!(
        rejected.text,
        "rejected edit_1: 1 of 2 file(s) changed since the edit was staged (lib/b.dart); no file was written. Run ast_edit again to stage the change against the current files"
    );
    // Not even the file that did not change was written.
    assert_eq!(
        fx.read("lib/a.dart"),
        "void a(Object x) {\n  dispose(x);\n}\n"
    );
    let leftovers: Vec<_> = std::fs::read_dir(fx.root().join("lib"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 3, "no temp files are left: {leftovers:?}");
}

#[tokio::test]
async fn resolve_discards_and_refuses_unknown_ids() {
    let fx = fixture(EDIT);
    fx.call(
        "ast_edit",
        json!({"pattern": "dispose($X)", "rewrite": "$X.dispose()", "language": "dart"}),
    )
    .await;
    let unknown = fx
        .call("resolve", json!({"edit_id": "edit_7", "action": "accept"}))
        .await;
    assert_eq!(
        unknown.text,
        "unknown edit_id `edit_7`: the pending edits are edit_1"
    );
    let discarded = fx
        .call("resolve", json!({"edit_id": "edit_1", "action": "discard"}))
        .await;
    assert_eq!(
        discarded.text,
        "Discarded edit_1: nothing was written (2 file(s) left as they are)."
    );
    assert_eq!(
        fx.read("lib/a.dart"),
        "void a(Object x) {\n  dispose(x);\n}\n"
    );
    let bad = fx
        .call("resolve", json!({"edit_id": "edit_1", "action": "apply"}))
        .await;
    assert!(bad.text.starts_with("bad arguments for `resolve`: field `action`: unknown variant `apply`, expected `accept` or `discard`"), "{}", bad.text);
}

#[tokio::test]
async fn ast_6_a_rewrite_using_an_undefined_metavariable_is_an_error() {
    let fx = fixture(EDIT);
    let result = fx
        .call(
            "ast_edit",
            json!({"pattern": "dispose($X)", "rewrite": "$Y.dispose()", "language": "dart"}),
        )
        .await;
    assert_eq!(
        result.text,
        "`rewrite` uses $Y, which the pattern does not define (it defines $X); use only the pattern's metavariables"
    );
}

#[tokio::test]
async fn ast_6_python_and_rust_rewrites_keep_indentation() {
    let fx = fixture(
        r#"
//- /m.py
def f():
    if x:
        print("a", b)
//- /src/main.rs
fn main() {
    let v = thing.unwrap();
}
"#,
    );
    let py = fx
        .call(
            "ast_edit",
            json!({"pattern": "print($$$A)", "rewrite": "log($$$A)", "path": "m.py"}),
        )
        .await;
    assert!(!py.is_error, "{}", py.text);
    fx.call("resolve", json!({"edit_id": "edit_1", "action": "accept"}))
        .await;
    assert_eq!(
        fx.read("m.py"),
        "def f():\n    if x:\n        log(\"a\", b)\n"
    );
    let rs = fx.call("ast_edit", json!({"pattern": "$E.unwrap()", "rewrite": "$E.expect(\"checked\")", "path": "src/main.rs"})).await;
    assert!(!rs.is_error, "{}", rs.text);
    let done = fx
        .call("resolve", json!({"edit_id": "edit_2", "action": "accept"}))
        .await;
    assert!(!done.is_error, "{}", done.text);
    assert_eq!(
        fx.read("src/main.rs"),
        "fn main() {\n    let v = thing.expect(\"checked\");\n}\n"
    );
}

#[tokio::test]
async fn prod_5_paths_outside_the_workspace_are_refused() {
    let fx = fixture(EDIT);
    let result = fx
        .call(
            "ast_grep",
            json!({"pattern": "f($X)", "path": "..", "language": "dart"}),
        )
        .await;
    assert!(
        result.text.contains("outside the workspace root"),
        "{}",
        result.text
    );
}

/// `path:LINE: text` of the matches, in result order.
fn matched(result: &ToolResult) -> Vec<String> {
    let structured = result.structured.as_ref().unwrap();
    structured["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let path = m["path"].as_str().unwrap();
            format!("{path}:{}: {}", m["line"], m["matched"].as_str().unwrap())
        })
        .collect()
}

/// Sets every file's modification time under `root` to `ago` before now, as files untouched
/// for a while are: the index holds only files modified at least 2 s before it read them.
fn settle(root: &Path, ago: std::time::Duration) {
    let when = std::time::SystemTime::now() - ago;
    for entry in ignore::WalkBuilder::new(root)
        .hidden(false)
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            let file = std::fs::File::options()
                .write(true)
                .open(entry.path())
                .unwrap();
            file.set_modified(when).unwrap();
        }
    }
}

const AGO: std::time::Duration = std::time::Duration::from_secs(60);

#[tokio::test]
async fn index_a_file_changed_behind_the_runs_back_is_never_searched_stale() {
    let f = fixture(
        r#"
//- /a.py
print(alpha)
//- /b.py
print(gamma)
"#,
    );
    settle(f.root(), AGO);
    let pattern = json!({"pattern": "print($X)", "language": "python"});
    let first = f.grep(pattern.clone()).await;
    assert_eq!(
        matched(&first),
        ["a.py:1: print(alpha)", "b.py:1: print(gamma)"]
    );
    assert_eq!(f.index.stats().parsed, 2);
    // Same size, other text; a file grown; a new file: each seen at once.
    f.write("a.py", "print(omega)\n");
    f.write("b.py", "print(gamma)\nprint(delta)\n");
    f.write("c.py", "print(new)\n");
    let again = f.grep(pattern.clone()).await;
    assert_eq!(
        matched(&again),
        [
            "a.py:1: print(omega)",
            "b.py:1: print(gamma)",
            "b.py:2: print(delta)",
            "c.py:1: print(new)"
        ]
    );
    // Files modified this instant are searched but not held: a write in the same clock tick
    // could leave size and times as they were.
    assert_eq!(f.index.stats().files, 0);
    std::fs::remove_file(f.root().join("c.py")).unwrap();
    settle(f.root(), AGO);
    let held = f.grep(pattern.clone()).await;
    assert_eq!(matched(&held).len(), 3);
    assert_eq!(f.index.stats().parsed, 2);
    // A file swapped for another by rename, with the same size and modification time: only
    // its inode and change time tell.
    let old = std::fs::metadata(f.root().join("a.py")).unwrap();
    std::fs::write(f.root().join("swap.tmp"), "print(sigma)\n").unwrap();
    let swap = std::fs::File::options()
        .write(true)
        .open(f.root().join("swap.tmp"))
        .unwrap();
    swap.set_modified(old.modified().unwrap()).unwrap();
    drop(swap);
    std::fs::rename(f.root().join("swap.tmp"), f.root().join("a.py")).unwrap();
    let last = f.grep(pattern).await;
    assert_eq!(
        matched(&last),
        [
            "a.py:1: print(sigma)",
            "b.py:1: print(gamma)",
            "b.py:2: print(delta)"
        ]
    );
}

#[tokio::test]
async fn index_the_runs_own_writes_drop_their_entries_as_they_commit() {
    let f = fixture(
        r#"
//- /app.py
x = compute(1)
y = compute(2)
"#,
    );
    settle(f.root(), AGO);
    let pattern = json!({"pattern": "compute($N)", "language": "python"});
    assert_eq!(locations(&f.grep(pattern.clone()).await).len(), 2);
    assert_eq!(f.index.stats().files, 1);
    let staged = f
        .call(
            "ast_edit",
            json!({"pattern": "compute($N)", "rewrite": "measure($N)", "language": "python"}),
        )
        .await;
    assert!(!staged.is_error, "{}", staged.text);
    let id = staged.structured.as_ref().unwrap()["edit_id"].clone();
    let applied = f
        .call("resolve", json!({"edit_id": id, "action": "accept"}))
        .await;
    assert!(!applied.is_error, "{}", applied.text);
    // The commit told the index: the file's entry is gone before any search looks, even
    // where the file system's times would not show the change.
    assert_eq!(f.index.stats().files, 0);
    let after = f.call("ast_grep", pattern).await;
    assert!(after.text.starts_with("No matches"), "{}", after.text);
    let measured = f
        .grep(json!({"pattern": "measure($N)", "language": "python"}))
        .await;
    assert_eq!(
        matched(&measured),
        ["app.py:1: measure(1)", "app.py:2: measure(2)"]
    );
}

/// Some of this workspace's own Rust sources, copied: a tree with every common node kind.
fn rust_sources() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut walk = ignore::WalkBuilder::new(crates.join("tools-core"));
    walk.add(crates.join("tools-ast/src"));
    for entry in walk.build().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "rs") {
            let to = dir.path().join(path.strip_prefix(&crates).unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(path, to).unwrap();
        }
    }
    settle(dir.path(), AGO);
    dir
}

const RUST_PATTERNS: &[&str] = &[
    "$X.unwrap()",
    "let $A = $B;",
    "Some($X)",
    "match $X { $$$ARMS }",
    "impl $T for $U { $$$ITEMS }",
    "$F($$$ARGS)",
    "$X",
];

#[test]
fn index_searches_through_it_find_exactly_what_a_fresh_search_finds() {
    let dir = rust_sources();
    let options = tools_ast::SearchOptions::default();
    let index = tools_ast::SyntaxIndex::new(tools_ast::DEFAULT_CACHE_MB);
    for pattern in RUST_PATTERNS {
        let fresh = tools_ast::find_spans(
            pattern,
            "rust",
            dir.path(),
            options,
            &tools_ast::SyntaxIndex::new(0),
        )
        .unwrap();
        assert!(!fresh.is_empty(), "{pattern}");
        // The first search through the shared index (warm from the patterns before) and a
        // repeat of it.
        for round in ["first", "again"] {
            let held = tools_ast::find_spans(pattern, "rust", dir.path(), options, &index).unwrap();
            assert!(
                held == fresh,
                "`{pattern}` {round}: {} vs {} matches",
                held.len(),
                fresh.len()
            );
        }
    }
    let stats = index.stats();
    assert!(stats.parsed >= 20 && stats.evicted == 0, "{stats:?}");
}

#[test]
fn index_stays_within_its_budget_dropping_the_least_recently_used() {
    let dir = rust_sources();
    let options = tools_ast::SearchOptions::default();
    let index = tools_ast::SyntaxIndex::new(1);
    for pattern in &RUST_PATTERNS[..3] {
        let fresh = tools_ast::find_spans(
            pattern,
            "rust",
            dir.path(),
            options,
            &tools_ast::SyntaxIndex::new(0),
        )
        .unwrap();
        let held = tools_ast::find_spans(pattern, "rust", dir.path(), options, &index).unwrap();
        assert!(held == fresh, "`{pattern}`");
    }
    let stats = index.stats();
    assert!(stats.bytes <= 1 << 20, "{stats:?}");
    assert!(stats.evicted > 0 && stats.files > 0, "{stats:?}");
}

/// pandas' modules (the test venv's copy, code nobody here wrote) end to end in `big.py`, at
/// least 3 MiB, and each one alone under `modules/`, with where each begins in `big.py`.
/// None when the test venv lacks pandas.
fn pandas_in_one_file() -> Option<(tempfile::TempDir, Vec<(std::path::PathBuf, usize)>)> {
    if !tools_test_support::python_imports("pandas") {
        return None;
    }
    let lib = tools_test_support::repo_root().join(".venv/lib");
    let python = std::fs::read_dir(&lib).unwrap().flatten().next().unwrap();
    let pandas = python.path().join("site-packages/pandas");
    // The venv ignores itself (`.venv/.gitignore` holds `*`): every filter off.
    let mut sources: Vec<_> = ignore::WalkBuilder::new(&pandas)
        .standard_filters(false)
        .build()
        .flatten()
        .map(|entry| entry.into_path())
        .filter(|path| path.extension().is_some_and(|x| x == "py"))
        .collect();
    sources.sort();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("modules")).unwrap();
    let mut big = String::new();
    let mut starts = Vec::new();
    for source in sources {
        let Ok(mut text) = std::fs::read_to_string(&source) else {
            continue;
        };
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let module = dir.path().join(format!("modules/{:04}.py", starts.len()));
        std::fs::write(&module, &text).unwrap();
        starts.push((module, big.len()));
        big.push_str(&text);
        if big.len() >= 3 << 20 {
            break;
        }
    }
    assert!(
        big.len() >= 3 << 20,
        "pandas holds {} bytes of Python",
        big.len()
    );
    std::fs::write(dir.path().join("big.py"), &big).unwrap();
    settle(dir.path(), AGO);
    Some((dir, starts))
}

// Issue 23: a large Python file is parsed in pieces on every core; what it finds is what the
// same code finds as the separate modules it was made of, positions shifted.
#[test]
fn index_a_large_file_parsed_in_pieces_finds_what_its_modules_find() {
    let Some((dir, starts)) = pandas_in_one_file() else {
        return;
    };
    let big = dir.path().join("big.py");
    let options = tools_ast::SearchOptions::default();
    let index = tools_ast::SyntaxIndex::new(tools_ast::DEFAULT_CACHE_MB);
    let patterns = [
        "isinstance($X, $T)",
        "$A = $B",
        "def $F($$$P): $$$B",
        "raise $E($$$A)",
        "self.$A = $B",
    ];
    for pattern in patterns {
        let fresh = tools_ast::SyntaxIndex::new(0);
        let mut apart = Vec::new();
        for (module, start) in &starts {
            for span in tools_ast::find_spans(pattern, "python", module, options, &fresh).unwrap() {
                apart.push((span.start + start, span.end + start));
            }
        }
        for round in ["first", "again"] {
            let whole: Vec<(usize, usize)> =
                tools_ast::find_spans(pattern, "python", &big, options, &index)
                    .unwrap()
                    .into_iter()
                    .map(|span| (span.start, span.end))
                    .collect();
            assert!(!whole.is_empty(), "{pattern}");
            assert!(
                whole == apart,
                "`{pattern}` {round}: {} in the one file, {} in its modules",
                whole.len(),
                apart.len()
            );
        }
    }
    // A pattern that may match any node matches the file's root once, as a whole tree
    // would, not once per piece.
    let any = tools_ast::find_spans("$X", "python", &big, options, &index).unwrap();
    let len = std::fs::metadata(&big).unwrap().len() as usize;
    let roots = any.iter().filter(|span| span.start == 0 && span.end == len);
    assert_eq!(roots.count(), 1);
    let held = index.stats();
    assert!(held.parsed == 1, "{held:?}");
}

// Issue 23: lines and columns of a match deep in a file parsed in pieces are the file's.
#[tokio::test]
async fn index_lines_in_a_large_file_parsed_in_pieces_are_the_files_lines() {
    let Some((dir, starts)) = pandas_in_one_file() else {
        return;
    };
    let big = std::fs::read_to_string(dir.path().join("big.py")).unwrap();
    // The last function the file defines at the top level, well past the first piece.
    let (_, last_start) = starts.last().unwrap();
    let at = big.rfind("\ndef ").unwrap() + 1;
    assert!(at > 2 << 20 && at >= *last_start - (1 << 20));
    let name: String = big[at + 4..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let f = fixture_in(dir);
    let result = f
        .grep(json!({ "pattern": name, "language": "python", "path": "big.py" }))
        .await;
    let line = big[..at].matches('\n').count() + 1;
    let lines: Vec<&str> = big.lines().collect();
    let structured = result.structured.as_ref().unwrap();
    let matches = structured["matches"].as_array().unwrap();
    for found in matches {
        let at_line = found["line"].as_u64().unwrap() as usize;
        let column = found["column"].as_u64().unwrap() as usize;
        let text: String = lines[at_line - 1].chars().skip(column - 1).collect();
        assert_eq!(found["text"], lines[at_line - 1].trim(), "{}", result.text);
        assert!(text.starts_with(&name), "{}", result.text);
        assert_eq!(found["end_line"], at_line);
    }
    // The definition itself is among them, at its line.
    assert!(
        matches
            .iter()
            .any(|m| m["line"] == line && m["column"] == 5),
        "{}",
        result.text
    );
}

// Issue 23: a rewrite of a large file parsed in pieces writes what the same rewrite writes
// in the modules it was made of.
#[tokio::test]
async fn index_a_rewrite_of_a_large_file_parsed_in_pieces_writes_what_its_modules_get() {
    let Some((dir, starts)) = pandas_in_one_file() else {
        return;
    };
    let f = fixture_in(dir);
    for (at, path) in ["modules", "big.py"].into_iter().enumerate() {
        let staged = f
            .call(
                "ast_edit",
                json!({
                    "pattern": "isinstance($X, $T)",
                    "rewrite": "is_instance_of($T, $X)",
                    "language": "python",
                    "path": path,
                }),
            )
            .await;
        assert!(!staged.is_error, "{}", staged.text);
        let id = format!("edit_{}", at + 1);
        let accepted = f
            .call("resolve", json!({"edit_id": id, "action": "accept"}))
            .await;
        assert!(!accepted.is_error, "{}", accepted.text);
    }
    let apart: String = starts
        .iter()
        .map(|(module, _)| std::fs::read_to_string(module).unwrap())
        .collect();
    let whole = f.read("big.py");
    assert!(whole.contains("is_instance_of("));
    assert!(whole == apart, "{} vs {} bytes", whole.len(), apart.len());
}

const PREWARM_PATTERNS: &[&str] = &[
    "$A = $B",
    "isinstance($X, $T)",
    "raise NotImplementedError($$$A)",
    "def $F(self, $$$P): $$$B",
];

fn files_ending(root: &Path, extension: &str) -> usize {
    ignore::WalkBuilder::new(root)
        .build()
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|x| x == extension))
        .count()
}

// Issue 23, `[ast] prewarm`: the index parses every source file before any search, so the
// first search of a broad pattern parses nothing and finds what a fresh search finds.
#[test]
fn index_prewarm_holds_every_file_so_a_first_search_parses_none() {
    let Some((dir, _)) = pandas_in_one_file() else {
        return;
    };
    let files = files_ending(dir.path(), "py");
    let index = tools_ast::SyntaxIndex::new(tools_ast::DEFAULT_CACHE_MB);
    let report = index.prewarm(dir.path()).wait();
    assert_eq!((report.files, report.held), (files, files), "{report:?}");
    assert!(!report.full && !report.abandoned, "{report:?}");
    let warmed = index.stats();
    assert_eq!(
        (warmed.parsed as u64, warmed.parses),
        (files as u64, files as u64)
    );
    let options = tools_ast::SearchOptions::default();
    for pattern in PREWARM_PATTERNS {
        let fresh = tools_ast::SyntaxIndex::new(0);
        let expected =
            tools_ast::find_spans(pattern, "python", dir.path(), options, &fresh).unwrap();
        let found = tools_ast::find_spans(pattern, "python", dir.path(), options, &index).unwrap();
        assert!(!expected.is_empty(), "{pattern}");
        assert!(
            found == expected,
            "`{pattern}`: {} vs {}",
            found.len(),
            expected.len()
        );
    }
    // Every search found its trees held: none was parsed again.
    assert_eq!(index.stats().parses, warmed.parses);
}

// Issue 23: the prewarm fills only free room: it stops at the budget and drops nothing a
// search held.
#[test]
fn index_prewarm_stops_at_the_budget_and_drops_nothing_a_search_held() {
    let Some((dir, starts)) = pandas_in_one_file() else {
        return;
    };
    let pattern = "raise NotImplementedError($$$A)";
    // One module with a match, searched first: its tree is held.
    let (module, _) = starts
        .iter()
        .find(|(module, _)| {
            std::fs::read_to_string(module)
                .unwrap()
                .contains("raise NotImplementedError(")
        })
        .unwrap();
    let options = tools_ast::SearchOptions::default();
    let index = tools_ast::SyntaxIndex::new(2);
    let first = tools_ast::find_spans(pattern, "python", module, options, &index).unwrap();
    // Then another, so the first one's entry is no longer the latest search's.
    let (other, _) = starts.iter().find(|(other, _)| other != module).unwrap();
    tools_ast::find_spans("$A = $B", "python", other, options, &index).unwrap();
    let searched = index.stats();
    assert!(!first.is_empty() && searched.parsed == 2, "{searched:?}");
    let report = index.prewarm(dir.path()).wait();
    assert!(report.full && report.held < report.files, "{report:?}");
    // The walk itself stopped where the files' text alone outgrew the budget.
    assert!(report.files < files_ending(dir.path(), "py"), "{report:?}");
    let warmed = index.stats();
    assert!(warmed.bytes <= 2 << 20, "{warmed:?}");
    assert_eq!(warmed.evicted, 0, "{warmed:?}");
    // What the search held is still held: searching again parses nothing.
    let again = tools_ast::find_spans(pattern, "python", module, options, &index).unwrap();
    assert!(again == first);
    assert_eq!(index.stats().parses, warmed.parses);
}

// Issue 23: a file changed outside the run after the prewarm held it is searched as it is.
#[test]
fn index_a_file_changed_after_the_prewarm_is_searched_as_it_is_now() {
    let dir = rust_sources();
    let index = tools_ast::SyntaxIndex::new(tools_ast::DEFAULT_CACHE_MB);
    let report = index.prewarm(dir.path()).wait();
    assert!(
        report.held > 20 && report.held == report.files,
        "{report:?}"
    );
    let file = dir.path().join("tools-ast/src/lib.rs");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\nfn added() { prewarmed_and_changed().unwrap(); }\n");
    std::fs::write(&file, &text).unwrap();
    let options = tools_ast::SearchOptions::default();
    let spans = tools_ast::find_spans(
        "prewarmed_and_changed().unwrap()",
        "rust",
        dir.path(),
        options,
        &index,
    )
    .unwrap();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].path, file);
}

// Issue 23: a file a search held and that changed behind the index's back is passed over
// by the prewarm (the next search reads it afresh); the prewarm does not take it for a full
// budget and goes on with the others.
#[test]
fn index_a_prewarm_passes_over_a_file_that_changed_after_a_search_held_it() {
    let dir = rust_sources();
    let index = tools_ast::SyntaxIndex::new(tools_ast::DEFAULT_CACHE_MB);
    let file = dir.path().join("tools-ast/src/lib.rs");
    let options = tools_ast::SearchOptions::default();
    let pattern = "pub fn register($$$A) { $$$B }";
    let spans = tools_ast::find_spans(pattern, "rust", &file, options, &index).unwrap();
    assert_eq!(spans.len(), 1);
    assert_eq!(index.stats().files, 1);
    // Changed, and settled (its time a minute back, unlike the one the search saw).
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\nfn changed_behind_its_back() {}\n");
    std::fs::write(&file, &text).unwrap();
    settle(dir.path(), AGO * 2);
    let report = index.prewarm(dir.path()).wait();
    let files = files_ending(dir.path(), "rs");
    assert!(!report.full, "{report:?}");
    assert_eq!(
        (report.files, report.held),
        (files, files - 1),
        "{report:?}"
    );
    let spans = tools_ast::find_spans(
        "fn changed_behind_its_back() {}",
        "rust",
        dir.path(),
        options,
        &index,
    )
    .unwrap();
    assert_eq!(spans.len(), 1);
}

// Issue 23: files written just before the prewarm (a checkout made as the run starts) are
// held too, once they have settled, not left for the first search to parse.
#[test]
fn index_a_prewarm_holds_files_written_just_before_it_once_they_settle() {
    let dir = rust_sources();
    settle(dir.path(), std::time::Duration::ZERO);
    let index = tools_ast::SyntaxIndex::new(tools_ast::DEFAULT_CACHE_MB);
    let report = index.prewarm(dir.path()).wait();
    let files = files_ending(dir.path(), "rs");
    assert!(files > 20);
    assert_eq!((report.files, report.held), (files, files), "{report:?}");
    assert!(!report.full && !report.abandoned, "{report:?}");
    let parses = index.stats().parses;
    let options = tools_ast::SearchOptions::default();
    let spans = tools_ast::find_spans("$X.unwrap()", "rust", dir.path(), options, &index).unwrap();
    assert!(!spans.is_empty());
    assert_eq!(index.stats().parses, parses, "{:?}", index.stats());
}

// Issue 23: a run fills its index by itself, as the default config has it, and with
// `prewarm = false` holds nothing until a search.
#[test]
fn index_a_run_fills_its_index_by_itself_unless_prewarm_is_off() {
    use tools_core::Family as _;
    let dir = rust_sources();
    let binding = tools_core::Binding {
        root: dir.path(),
        surface: tools_core::Surface::Full,
        sandbox: None,
        listing: false,
    };
    let bind = |config: &tools_ast::AstConfig| {
        tools_ast::AstFamily::bind(config, &binding)
            .unwrap()
            .unwrap()
            .1
    };
    let off = bind(&tools_ast::AstConfig {
        prewarm: false,
        ..Default::default()
    });
    // The default is on.
    let index = bind(&tools_ast::AstConfig::default());
    let files = files_ending(dir.path(), "rs");
    assert!(files > 20);
    // No search runs: every tree held is the prewarm's. Its threads are idle-priority, so
    // the tests running beside this one on every core come first: the wait is long.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while index.stats().parsed < files {
        assert!(std::time::Instant::now() < deadline, "{:?}", index.stats());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Meanwhile the run without it has held nothing.
    assert_eq!(off.stats().files, 0, "{:?}", off.stats());
    assert_eq!(off.stats().parses, 0, "{:?}", off.stats());
}

// Issue 23: dropping the index stops its prewarm, and nothing of it is left held.
#[test]
fn index_a_prewarm_stops_once_its_index_is_dropped() {
    let Some((dir, _)) = pandas_in_one_file() else {
        return;
    };
    let index = tools_ast::SyntaxIndex::new(tools_ast::DEFAULT_CACHE_MB);
    let weak = std::sync::Arc::downgrade(&index);
    let prewarm = index.prewarm(dir.path());
    drop(index);
    let report = prewarm.wait();
    assert!(report.abandoned && !report.full, "{report:?}");
    assert!(report.held < files_ending(dir.path(), "py"), "{report:?}");
    assert_eq!(weak.strong_count(), 0);
}

// Issue 23: where a file's tree does not fit, the prewarm leaves the text a search held.
#[test]
fn index_a_prewarm_keeps_the_text_a_search_held_when_the_tree_does_not_fit() {
    let Some((dir, starts)) = pandas_in_one_file() else {
        return;
    };
    // A module whose text fits in 1 MiB and whose tree does not.
    let (module, _) = starts
        .iter()
        .find(|(module, _)| {
            let len = std::fs::metadata(module).unwrap().len();
            (200_000..900_000).contains(&len)
        })
        .unwrap();
    let alone = tempfile::tempdir().unwrap();
    std::fs::copy(module, alone.path().join("module.py")).unwrap();
    settle(alone.path(), AGO);
    drop(dir);
    let index = tools_ast::SyntaxIndex::new(1);
    let options = tools_ast::SearchOptions::default();
    // Its text lacks the literal: the search holds the text and parses nothing.
    let none = tools_ast::find_spans(
        "not_in_this_module_at_all($X)",
        "python",
        alone.path(),
        options,
        &index,
    )
    .unwrap();
    assert!(none.is_empty());
    let searched = index.stats();
    assert_eq!((searched.files, searched.parsed), (1, 0), "{searched:?}");
    let report = index.prewarm(alone.path()).wait();
    assert!(report.full && report.held == 0, "{report:?}");
    let after = index.stats();
    assert_eq!((after.files, after.bytes), (1, searched.bytes), "{after:?}");
}
