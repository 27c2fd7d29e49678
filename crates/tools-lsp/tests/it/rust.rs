//! rust-analyzer on a small Cargo project with no dependencies (so it indexes in seconds).

use std::sync::LazyLock;

use serde_json::json;
use tools_lsp::ServerOverride;

use crate::support::{Fixture, Server, available, config_with, failed, line_of, ok, run};

/// The project: a trait with two impls across modules, a function used 60 times, and a file
/// with a type error.
pub fn project() -> String {
    let mut uses = String::from("pub fn many() -> u32 {\n    let mut sum = 0;\n");
    for i in 0..60 {
        uses.push_str(&format!("    sum += crate::add({i}, 1);\n"));
    }
    uses.push_str("    sum\n}\n");
    format!(
        r#"//- /Cargo.toml
[package]
name = "fixture"
version = "0.1.0"
edition = "2021"

[workspace]

//- /src/lib.rs
//! A small crate for the language-server tests.

pub mod broken;
pub mod shapes;
pub mod uses;

pub use shapes::{{Area, Circle, Square}};

/// Adds two numbers.
pub fn add(left: u32, right: u32) -> u32 {{
    left + right
}}

pub fn total_area(shapes: &[&dyn Area]) -> f64 {{
    shapes.iter().map(|shape| shape.area()).sum()
}}

pub fn first_circle() -> f64 {{
    let circle = shapes::unit_circle();
    circle.area()
}}
//- /src/shapes.rs
/// Something with an area.
pub trait Area {{
    /// The area in square units.
    fn area(&self) -> f64;
}}

/// A circle.
pub struct Circle {{
    pub radius: f64,
}}

pub struct Square {{
    pub side: f64,
}}

impl Area for Circle {{
    fn area(&self) -> f64 {{
        3.14 * self.radius * self.radius
    }}
}}

impl Area for Square {{
    fn area(&self) -> f64 {{
        self.side * self.side
    }}
}}

pub fn unit_circle() -> Circle {{
    Circle {{ radius: 1.0 }}
}}
//- /src/broken.rs
pub fn broken() -> u32 {{
    let unused = 1;
    "text"
}}
//- /src/uses.rs
{uses}"#
    )
}

/// One project and one rust-analyzer for every read-only test in this file.
static SHARED: LazyLock<Fixture> = LazyLock::new(|| Fixture::shared("rust", &project()));

#[test]
fn lsp_5_rust_definition_finds_the_declaration_through_a_trait_call() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let line = line_of(fx, "src/lib.rs", "circle.area()");
        let result = fx
            .lsp(json!({"operation": "definition", "path": "src/lib.rs", "line": line, "symbol": "area"}))
            .await;
        assert_eq!(
            ok(&result),
            "1 definition of `area` (src/lib.rs:20):\nsrc/shapes.rs:17: fn area(&self) -> f64 {"
        );
        let structured = result.structured.unwrap();
        assert_eq!(structured["locations"][0]["path"], "src/shapes.rs");
        assert_eq!(structured["locations"][0]["line"], 17);
    });
}

#[test]
fn lsp_3_rust_qualified_symbol_aims_at_the_last_segment() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "definition", "path": "src/lib.rs", "line": 19, "symbol": "shapes::unit_circle"}))
            .await;
        assert_eq!(
            ok(&result),
            "1 definition of `unit_circle` (src/lib.rs:19):\nsrc/shapes.rs:28: pub fn unit_circle() -> Circle {"
        );
    });
}

#[test]
fn lsp_5_rust_type_definition_finds_the_type_of_a_variable() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "type_definition", "path": "src/lib.rs", "line": 19, "symbol": "circle"}))
            .await;
        assert_eq!(
            ok(&result),
            "1 type definition of `circle` (src/lib.rs:19):\nsrc/shapes.rs:8: pub struct Circle {"
        );
    });
}

#[test]
fn lsp_5_rust_implementation_lists_every_impl_of_a_trait() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "implementation", "path": "src/shapes.rs", "line": 2, "symbol": "Area"}))
            .await;
        assert_eq!(
            ok(&result),
            "2 implementations of `Area` (src/shapes.rs:2):\n\
             src/shapes.rs:16: impl Area for Circle {\n\
             src/shapes.rs:22: impl Area for Square {"
        );
    });
}

#[test]
fn lsp_5_rust_references_are_capped_at_50_with_the_total() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "references", "path": "src/lib.rs", "line": 10, "symbol": "add"}))
            .await;
        let text = ok(&result);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "61 references to `add` (src/lib.rs:10):");
        // The cap does not hide the point: every file's count first, then a page that
        // reaches every file.
        assert_eq!(lines[1], "Per file: src/uses.rs: 60, src/lib.rs: 1.");
        assert_eq!(
            lines[2],
            "src/lib.rs:10: pub fn add(left: u32, right: u32) -> u32 {"
        );
        assert_eq!(lines[3], "src/uses.rs:3: sum += crate::add(0, 1);");
        assert_eq!(lines.len(), 2 + 50 + 1);
        assert_eq!(
            lines[52],
            "(showing 50 of 61, spread across files; pass `offset` to page through all of them \
             in path order, `max_results` (up to 1000) for more per page)"
        );
        let structured = result.structured.unwrap();
        assert_eq!(structured["total"], 61);
        assert_eq!(structured["locations"].as_array().unwrap().len(), 50);
        // The next page, in path order.
        let next = fx
            .lsp(json!({"operation": "references", "path": "src/lib.rs", "line": 10, "symbol": "add", "offset": 50, "max_results": 20}))
            .await;
        let next = ok(&next);
        assert!(next.ends_with("(showing 51 to 61 of 61)"), "{next}");
        assert_eq!(
            next.lines().filter(|l| l.starts_with("src/")).count(),
            11,
            "{next}"
        );
    });
}

#[test]
fn lsp_5_rust_hover_shows_the_signature_and_the_doc_comment() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "hover", "path": "src/lib.rs", "line": 10, "symbol": "add"}))
            .await;
        let text = ok(&result);
        assert!(text.starts_with("`add` at src/lib.rs:10:\n"), "{text}");
        assert!(
            text.contains("pub fn add(left: u32, right: u32) -> u32"),
            "{text}"
        );
        assert!(text.contains("Adds two numbers."), "{text}");
    });
}

#[test]
fn lsp_5_rust_symbols_of_a_file_are_an_outline() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "symbols", "path": "src/shapes.rs"}))
            .await;
        assert_eq!(
            ok(&result),
            "11 symbols in src/shapes.rs:\n\
             interface Area (line 2)\n  method area (line 4)\n\
             struct Circle (line 8)\n  field radius (line 9)\n\
             struct Square (line 12)\n  field side (line 13)\n\
             object impl Area for Circle (line 16)\n  method area (line 17)\n\
             object impl Area for Square (line 22)\n  method area (line 23)\n\
             function unit_circle (line 28)"
        );
    });
}

#[test]
fn lsp_5_rust_symbols_with_a_query_search_the_workspace() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "symbols", "query": "unit_circle"}))
            .await;
        assert_eq!(
            ok(&result),
            "1 symbol matching `unit_circle` (1 in the workspace, 0 in dependencies):\n\
             function unit_circle — src/shapes.rs:28"
        );
    });
}

#[test]
fn lsp_5_rust_code_actions_list_what_the_server_offers() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "code_actions", "path": "src/broken.rs", "line": 2, "symbol": "unused"}))
            .await;
        let text = ok(&result);
        assert!(
            text.starts_with("2 code actions at `unused` (src/broken.rs:2):"),
            "{text}"
        );
        assert!(
            text.contains("Insert explicit type `i32` (refactor.rewrite)"),
            "{text}"
        );
        let actions = result.structured.unwrap()["actions"].clone();
        assert_eq!(actions.as_array().unwrap().len(), 2);
    });
}

#[test]
fn lsp_5_rust_diagnostics_of_a_file_are_its_errors() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "diagnostics", "path": "src/broken.rs"}))
            .await;
        let text = ok(&result);
        assert!(
            text.starts_with("src/broken.rs: 1 error and 0 warnings (rust-analyzer):\nsrc/broken.rs:3: error[E0308]: "),
            "{text}"
        );
        assert!(text.contains("\n    \"text\""), "{text}");
        let clean = fx
            .lsp(json!({"operation": "diagnostics", "path": "src/shapes.rs"}))
            .await;
        assert_eq!(
            ok(&clean),
            "src/shapes.rs: no errors or warnings (rust-analyzer)."
        );
    });
}

#[test]
fn lsp_5_rust_diagnostics_star_runs_cargo_check() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "diagnostics", "path": "*"}))
            .await;
        assert_eq!(
            ok(&result),
            "`cargo check --workspace --all-targets --keep-going --message-format=json` (root \
             .; every workspace member, every target (lib, bins, tests, benches, examples), \
             the default features): 1 error and 0 warnings\n\
             src/broken.rs:3: error[E0308]: mismatched types\n    \"text\""
        );
    });
}

#[test]
fn lsp_5_rust_diagnostics_star_checks_tests_benches_and_features_as_configured() {
    // Errors in a unit-test module, an integration test and a bench count, two on one line
    // stay two, and a broken library does not hide its tests' errors (`--keep-going`).
    if !available(Server::RustAnalyzer) {
        return;
    }
    let files = r#"//- /Cargo.toml
[package]
name = "targets"
version = "0.1.0"
edition = "2021"

[features]
extra = []

[workspace]

//- /src/lib.rs
pub fn add(left: u32, right: u32) -> u32 {
    left + right
}

#[cfg(feature = "extra")]
pub fn extra() -> u32 {
    "extra"
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        let _: u32 = super::add(1) + super::add(2);
    }
}
//- /tests/it.rs
#[test]
fn it() {
    let _: u32 = "it";
}
//- /benches/b.rs
fn main() {
    let _: u32 = "bench";
}
"#;
    run(async {
        let fx = Fixture::temp(files);
        let result = fx
            .lsp(json!({"operation": "diagnostics", "path": "*", "severity": "error"}))
            .await;
        let text = ok(&result);
        assert!(
            text.starts_with(
                "`cargo check --workspace --all-targets --keep-going --message-format=json` \
                 (root .; every workspace member, every target (lib, bins, tests, benches, \
                 examples), the default features): 4 errors and 0 warnings"
            ),
            "{text}"
        );
        for place in ["benches/b.rs:2:", "src/lib.rs:14:", "tests/it.rs:3:"] {
            assert!(text.contains(place), "{place}: {text}");
        }
        assert_eq!(
            text.matches("src/lib.rs:14: error[E0061]").count(),
            2,
            "{text}"
        );

        // `[lsp] all_features` checks the feature-gated code too; the library then fails, so
        // the integration test and the bench that link it are not compiled (cargo's answer).
        let config = tools_lsp::LspConfig {
            all_features: true,
            ..tools_lsp::LspConfig::default()
        };
        let fx = Fixture::temp_with(files, config);
        let result = fx
            .lsp(json!({"operation": "diagnostics", "path": "*", "severity": "error"}))
            .await;
        let text = ok(&result);
        assert!(text.contains("all features): 3 errors"), "{text}");
        assert!(text.contains("src/lib.rs:7: error[E0308]"), "{text}");
    });
}

#[test]
fn lsp_4_rust_symbol_not_on_line_quotes_the_line() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "references", "path": "src/lib.rs", "line": 11, "symbol": "add"}))
            .await;
        assert_eq!(
            failed(&result),
            "line 11 of src/lib.rs has no `add`: the line is `left + right`; `add` occurs on line 10"
        );
    });
}

#[test]
fn lsp_4_a_symbol_not_on_the_line_is_refused_without_starting_a_server() {
    run(async {
        let fx = Fixture::temp(&project());
        let result = fx
            .lsp(json!({"operation": "references", "path": "src/lib.rs", "line": 11, "symbol": "add"}))
            .await;
        assert_eq!(
            failed(&result),
            "line 11 of src/lib.rs has no `add`: the line is `left + right`; `add` occurs on line 10"
        );
        assert_eq!(
            fx.pid("rust-analyzer").await,
            None,
            "no server was started to refuse it"
        );
    });
}

#[test]
fn lsp_4_navigation_without_symbol_is_an_error_that_quotes_the_line() {
    // No server is needed to refuse this, so it runs everywhere.
    run(async {
        let fx = Fixture::temp(&project());
        let result = fx
            .lsp(json!({"operation": "definition", "path": "src/lib.rs", "line": 10}))
            .await;
        assert_eq!(
            failed(&result),
            "`definition` needs `symbol`: the identifier on line 10 of src/lib.rs to ask about; \
             the line is `pub fn add(left: u32, right: u32) -> u32 {`"
        );
    });
}

#[test]
fn lsp_2_rust_status_with_a_missing_marker_says_so() {
    run(async {
        let fx = Fixture::temp("//- /src/lib.rs\npub fn lonely() {}\n");
        let result = fx
            .lsp(json!({"operation": "hover", "path": "src/lib.rs", "line": 1, "symbol": "lonely"}))
            .await;
        assert_eq!(
            failed(&result),
            "rust-analyzer is not usable for src/lib.rs: none of its root markers (Cargo.toml, \
             rust-project.json) was found beside the file or in a folder above it inside the \
             workspace, so it has no project to work in; call `lsp` with operation `status` to \
             see every server"
        );
        let status = fx.lsp(json!({"operation": "status"})).await;
        let rust = &status.structured.unwrap()["servers"][0];
        assert_eq!(rust["server"], "rust-analyzer");
        assert_eq!(rust["usable"], false);
        assert!(
            rust["problem"]
                .as_str()
                .unwrap()
                .starts_with("no root marker: none of Cargo.toml, rust-project.json was found"),
            "{rust}"
        );
    });
}

#[test]
fn lsp_2_rust_status_with_a_missing_binary_says_where_it_looked() {
    run(async {
        let config = config_with(&[(
            "rust-analyzer",
            ServerOverride {
                command: Some(vec!["rust-analyzer-not-installed".into()]),
                ..ServerOverride::default()
            },
        )]);
        let fx = Fixture::temp_with(&project(), config);
        let result = fx
            .lsp(json!({"operation": "hover", "path": "src/lib.rs", "line": 10, "symbol": "add"}))
            .await;
        let text = failed(&result);
        assert!(
            text.starts_with(
                "rust-analyzer cannot start for root .: its binary was not found: looked for \
                 `rust-analyzer-not-installed` in .venv/bin, venv/bin, node_modules/.bin"
            ),
            "{text}"
        );
        assert!(text.ends_with("install it with `rustup component add rust-analyzer`, or set `command` under [lsp.servers.rust-analyzer] in agent-tools.toml"), "{text}");
        let status = fx.lsp(json!({"operation": "status"})).await;
        let status_text = ok(&status).to_owned();
        assert!(
            status_text.contains(
                "rust-analyzer (.rs): not usable — a project is here, but its binary was not found"
            ),
            "{status_text}"
        );
        let rust = &status.structured.unwrap()["servers"][0];
        assert_eq!(rust["roots"], json!(["."]));
        assert_eq!(rust["usable"], false);
    });
}

#[test]
fn lsp_8_rust_rename_lists_feature_gated_calls_first_and_apart_from_comments() {
    // rust-analyzer does not analyse code a feature leaves out, so it cannot rename the call
    // there: the leftover list puts it first, flagged, before the doc comment's mention.
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = Fixture::temp(
            "//- /Cargo.toml\n[package]\nname = \"gated\"\nversion = \"0.1.0\"\n\
             edition = \"2021\"\n\n[features]\nextra = []\n\n[workspace]\n\
             //- /src/lib.rs\n/// Like `add`, twice.\npub fn twice() -> u32 {\n    add(1, 1) + \
             add(2, 2)\n}\n\npub fn add(left: u32, right: u32) -> u32 {\n    left + right\n}\n\n\
             #[cfg(feature = \"extra\")]\nmod extra;\n\
             //- /src/extra.rs\npub fn extra() -> u32 {\n    crate::add(3, 3)\n}\n",
        );
        let result = fx
            .call(
                "lsp_rename",
                json!({"path": "src/lib.rs", "line": 6, "symbol": "add", "new_name": "plus"}),
            )
            .await;
        let text = ok(&result);
        assert!(
            text.contains(
                "\n2 occurrences of `add` remain that rust-analyzer did not rename; nothing was \
                 changed there:\n  1 in code the current cfg/features do not compile; 1 in \
                 comments, strings or docstrings.\n  \
                 src/extra.rs:2: crate::add(3, 3)  (not compiled: cfg/features)\n  \
                 src/lib.rs:1: /// Like `add`, twice.  (comment or string)"
            ),
            "{text}"
        );
        let structured = result.structured.unwrap();
        assert_eq!(structured["remaining_total"], 2);
        assert_eq!(structured["remaining_in_code"], 1);
        assert_eq!(structured["remaining"][0]["kind"], "inactive_code");
    });
}

#[test]
fn lsp_8_rust_rename_changes_every_file_and_the_server_sees_it() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let result = fx
            .call(
                "lsp_rename",
                json!({"path": "src/lib.rs", "line": 10, "symbol": "add", "new_name": "sum_two"}),
            )
            .await;
        assert_eq!(
            ok(&result),
            "Renamed `add` to `sum_two`: 61 edits in 2 files:\n  src/lib.rs: 1 edit\n  src/uses.rs: 60 edits\n\n\
             rust-analyzer checked src/lib.rs, src/uses.rs: no errors."
        );
        assert!(
            fx.file("src/lib.rs")
                .contains("pub fn sum_two(left: u32, right: u32) -> u32 {")
        );
        assert_eq!(
            fx.file("src/uses.rs").matches("crate::sum_two(").count(),
            60
        );
        assert!(!fx.file("src/uses.rs").contains("crate::add("));
        let structured = result.structured.unwrap();
        assert_eq!(structured["total_edits"], 61);
        // The server got the new text: asking about the new name works at once.
        let references = fx
            .lsp(json!({"operation": "references", "path": "src/uses.rs", "line": 3, "symbol": "sum_two"}))
            .await;
        assert!(
            ok(&references).starts_with("61 references to `sum_two` (src/uses.rs:3):"),
            "{}",
            references.text
        );
    });
}

#[test]
fn lsp_8_rust_rename_refuses_what_cannot_be_renamed() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let before = fx.file("src/lib.rs");
        let result = fx
            .call(
                "lsp_rename",
                json!({"path": "src/lib.rs", "line": 10, "symbol": "u32", "new_name": "u64"}),
            )
            .await;
        assert!(
            failed(&result).starts_with("`u32` at src/lib.rs:10 cannot be renamed"),
            "{}",
            result.text
        );
        assert_eq!(fx.file("src/lib.rs"), before);
    });
}

#[test]
fn lsp_5_rust_files_changed_on_disk_are_resynced_before_a_request() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let first = fx
            .lsp(json!({"operation": "definition", "path": "src/lib.rs", "line": 20, "symbol": "area"}))
            .await;
        ok(&first);
        // Another tool rewrites the open file: two lines appear above everything.
        let text = fx.file("src/lib.rs");
        std::fs::write(
            fx.root.join("src/lib.rs"),
            format!("// one\n// two\n{text}pub fn extra() -> u32 {{ add(1, 2) }}\n"),
        )
        .unwrap();
        let moved = fx
            .lsp(json!({"operation": "references", "path": "src/lib.rs", "line": 12, "symbol": "add"}))
            .await;
        let moved_text = ok(&moved);
        assert!(
            moved_text
                .starts_with("62 references to `add` (src/lib.rs:12):\nPer file: src/uses.rs: 60, src/lib.rs: 2.\nsrc/lib.rs:12: pub fn add("),
            "{moved_text}"
        );
        assert!(
            moved_text.contains("src/lib.rs:24: pub fn extra() -> u32 { add(1, 2) }"),
            "{moved_text}"
        );
    });
}

#[test]
fn lsp_2_rust_reload_restarts_the_server() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        ok(&fx
            .lsp(json!({"operation": "hover", "path": "src/lib.rs", "line": 10, "symbol": "add"}))
            .await);
        let before = fx.pid("rust-analyzer").await.unwrap();
        let reload = fx.lsp(json!({"operation": "reload"})).await;
        let text = ok(&reload);
        assert!(
            text.starts_with("rust-analyzer (root .): restarted, pid "),
            "{text}"
        );
        let after = fx.pid("rust-analyzer").await.unwrap();
        assert_ne!(before, after);
        let hover = fx
            .lsp(json!({"operation": "hover", "path": "src/lib.rs", "line": 10, "symbol": "add"}))
            .await;
        assert!(ok(&hover).contains("pub fn add(left: u32, right: u32) -> u32"));
    });
}

#[test]
fn lsp_2_rust_a_server_killed_mid_run_comes_back() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let args =
            json!({"operation": "definition", "path": "src/lib.rs", "line": 20, "symbol": "area"});
        ok(&fx.lsp(args.clone()).await);
        let pid = fx.kill_server("rust-analyzer").await;
        // The next call starts a new server and answers from it.
        let answer = fx.lsp(args.clone()).await;
        assert!(ok(&answer).contains("src/shapes.rs:17: fn area(&self) -> f64 {"));
        let session = fx.session("rust-analyzer").await;
        assert_eq!(session["crashes"], 1);
        assert_eq!(session["state"], "ready (restarted after 1 crash)");
        assert!(
            session["last_error"]
                .as_str()
                .unwrap()
                .starts_with("crashed: the process ended (signal: 9"),
            "{session}"
        );
        assert_ne!(session["pid"].as_u64().unwrap(), pid);
    });
}
