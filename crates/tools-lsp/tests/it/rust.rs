//! rust-analyzer on a small Cargo project with no dependencies (so it indexes in seconds).

use std::sync::LazyLock;

use serde_json::json;
use tools_lsp::{LspConfig, ServerOverride};

use crate::support::{
    Fixture, STDERR, Server, assert_transcript, available, config_with, line_of, only, run,
};

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
        let mut t = fx.scenario();
        let line = line_of(fx, "src/lib.rs", "circle.area()");
        t.lsp(json!({"operation": "definition", "path": "src/lib.rs", "line": line, "symbol": "area"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_3_rust_qualified_symbol_aims_at_the_last_segment() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "definition", "path": "src/lib.rs", "line": 19, "symbol": "shapes::unit_circle"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_rust_type_definition_finds_the_type_of_a_variable() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "type_definition", "path": "src/lib.rs", "line": 19, "symbol": "circle"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_rust_implementation_lists_every_impl_of_a_trait() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "implementation", "path": "src/shapes.rs", "line": 2, "symbol": "Area"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_rust_references_are_capped_at_50_with_the_total() {
    // The cap does not hide the point: every file's count first, then a page that reaches
    // every file; the next page goes on in path order.
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(
            json!({"operation": "references", "path": "src/lib.rs", "line": 10, "symbol": "add"}),
        )
        .await;
        t.lsp(json!({"operation": "references", "path": "src/lib.rs", "line": 10, "symbol": "add", "offset": 50, "max_results": 20}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_rust_hover_shows_the_signature_and_the_doc_comment() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "hover", "path": "src/lib.rs", "line": 10, "symbol": "add"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_rust_symbols_of_a_file_are_an_outline() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "symbols", "path": "src/shapes.rs"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_rust_symbols_with_a_query_search_the_workspace() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "symbols", "query": "unit_circle"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_rust_code_actions_list_what_the_server_offers() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "code_actions", "path": "src/broken.rs", "line": 2, "symbol": "unused"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_rust_diagnostics_of_a_file_are_its_errors() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        // rust-analyzer answers with its own analysis until its first `cargo check` has
        // published, whose words for the error are rustc's (and which adds its hints): wait
        // for those, outside the transcript, so the snapshot does not depend on the order the
        // shared server's tests ran in.
        let arguments = json!({"operation": "diagnostics", "path": "src/broken.rs"});
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !SHARED
            .lsp(arguments.clone())
            .await
            .text
            .contains("mismatched types;")
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        let mut t = SHARED.scenario();
        t.lsp(arguments).await;
        t.lsp(json!({"operation": "diagnostics", "path": "src/shapes.rs"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_rust_diagnostics_star_runs_cargo_check() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "diagnostics", "path": "*"}))
            .await;
        assert_transcript!(t);
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
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "diagnostics", "path": "*", "severity": "error"}))
            .await;

        // `[lsp] all_features` checks the feature-gated code too; the library then fails, so
        // the integration test and the bench that link it are not compiled (cargo's answer).
        let config = tools_lsp::LspConfig {
            all_features: true,
            ..tools_lsp::LspConfig::default()
        };
        let all_features = Fixture::temp_with(files, config);
        let mut t = t.then_on(&all_features);
        t.note("the same project in a workspace whose config sets `[lsp] all_features`");
        t.lsp(json!({"operation": "diagnostics", "path": "*", "severity": "error"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_4_rust_symbol_not_on_line_quotes_the_line() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(
            json!({"operation": "references", "path": "src/lib.rs", "line": 11, "symbol": "add"}),
        )
        .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_4_a_symbol_not_on_the_line_is_refused_without_starting_a_server() {
    run(async {
        let fx = Fixture::temp(&project());
        let mut t = fx.scenario();
        t.lsp(
            json!({"operation": "references", "path": "src/lib.rs", "line": 11, "symbol": "add"}),
        )
        .await;
        assert_transcript!(t);
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
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "definition", "path": "src/lib.rs", "line": 10}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_2_rust_status_with_a_missing_marker_says_so() {
    // No server starts, but `status` says whether its binary is there: the snapshot holds
    // the answer of a machine where it is.
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = Fixture::temp_with(
            "//- /src/lib.rs\npub fn lonely() {}\n",
            only("rust-analyzer", LspConfig::default()),
        );
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "hover", "path": "src/lib.rs", "line": 1, "symbol": "lonely"}))
            .await;
        t.lsp(json!({"operation": "status"})).await;
        assert_transcript!(t);
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
        let fx = Fixture::temp_with(&project(), only("rust-analyzer", config));
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "hover", "path": "src/lib.rs", "line": 10, "symbol": "add"}))
            .await;
        t.lsp(json!({"operation": "status"})).await;
        assert_transcript!(t);
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
        let mut t = fx.scenario();
        t.call(
            "lsp_rename",
            json!({"path": "src/lib.rs", "line": 6, "symbol": "add", "new_name": "plus"}),
        )
        .await;
        assert_transcript!(t);
        // What the transcript cannot show: the files on disk.
        assert_eq!(
            fx.file("src/extra.rs"),
            "pub fn extra() -> u32 {\n    crate::add(3, 3)\n}\n"
        );
        assert!(
            fx.file("src/lib.rs")
                .starts_with("/// Like `add`, twice.\n")
        );
    });
}

#[test]
fn lsp_8_rust_rename_changes_every_file_and_the_server_sees_it() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let mut t = fx.scenario();
        t.call(
            "lsp_rename",
            json!({"path": "src/lib.rs", "line": 10, "symbol": "add", "new_name": "sum_two"}),
        )
        .await;
        // The server got the new text: asking about the new name works at once.
        t.lsp(json!({"operation": "references", "path": "src/uses.rs", "line": 3, "symbol": "sum_two"}))
            .await;
        assert_transcript!(t);
        // What the transcript cannot show: the files on disk.
        assert!(
            fx.file("src/lib.rs")
                .contains("pub fn sum_two(left: u32, right: u32) -> u32 {")
        );
        assert_eq!(
            fx.file("src/uses.rs").matches("crate::sum_two(").count(),
            60
        );
        assert!(!fx.file("src/uses.rs").contains("crate::add("));
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
        let mut t = fx.scenario();
        t.call(
            "lsp_rename",
            json!({"path": "src/lib.rs", "line": 10, "symbol": "u32", "new_name": "u64"}),
        )
        .await;
        assert_transcript!(t);
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
        let mut t = fx.scenario();
        t.lsp(
            json!({"operation": "definition", "path": "src/lib.rs", "line": 20, "symbol": "area"}),
        )
        .await;
        // Another tool rewrites the open file: two lines appear above everything.
        let text = fx.file("src/lib.rs");
        std::fs::write(
            fx.root.join("src/lib.rs"),
            format!("// one\n// two\n{text}pub fn extra() -> u32 {{ add(1, 2) }}\n"),
        )
        .unwrap();
        t.note("src/lib.rs is rewritten on disk: two comment lines above everything, and a function `extra` that calls `add` at the end");
        t.lsp(
            json!({"operation": "references", "path": "src/lib.rs", "line": 12, "symbol": "add"}),
        )
        .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_2_rust_reload_restarts_the_server() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let mut t = fx.scenario();
        let hover =
            json!({"operation": "hover", "path": "src/lib.rs", "line": 10, "symbol": "add"});
        t.lsp(hover.clone()).await;
        let before = fx.pid("rust-analyzer").await.unwrap();
        t.lsp(json!({"operation": "reload"})).await;
        let after = fx.pid("rust-analyzer").await.unwrap();
        t.lsp(hover).await;
        assert_transcript!(t);
        // The transcript hides pids: the server is a new process.
        assert_ne!(before, after);
    });
}

#[test]
fn lsp_2_rust_a_server_killed_mid_run_comes_back() {
    if !available(Server::RustAnalyzer) {
        return;
    }
    run(async {
        let fx = Fixture::temp_with(&project(), only("rust-analyzer", LspConfig::default()));
        let mut t = fx.scenario();
        let args =
            json!({"operation": "definition", "path": "src/lib.rs", "line": 20, "symbol": "area"});
        t.lsp(args.clone()).await;
        let pid = fx.kill_server("rust-analyzer").await;
        t.note("rust-analyzer is killed with SIGKILL");
        // The next call starts a new server and answers from it; `status` tells the crash.
        t.lsp(args).await;
        t.lsp(json!({"operation": "status"})).await;
        assert_transcript!(t, STDERR);
        // The transcript hides pids: the server is a new process.
        assert_ne!(fx.pid("rust-analyzer").await.unwrap(), pid);
    });
}
