//! basedpyright on a small Python project.

use std::sync::LazyLock;

use serde_json::json;
use tools_lsp::{LspConfig, ServerOverride};

use crate::support::{
    Fixture, STDERR, Server, assert_transcript, available, config_with, line_of, only, run,
};

/// The project: an abstract class with a subclass, a function used 60 times, and a file with
/// a type error and an unused import.
pub fn project() -> String {
    let mut uses =
        String::from("from app.shapes import add\n\n\ndef many() -> int:\n    total = 0\n");
    for i in 0..60 {
        uses.push_str(&format!("    total += add({i}, 1)\n"));
    }
    uses.push_str("    return total\n");
    format!(
        r#"//- /pyproject.toml
[project]
name = "fixture"
version = "0.1.0"
//- /app/__init__.py
//- /app/shapes.py
from abc import ABC, abstractmethod


class Shape(ABC):
    """Something with an area."""

    @abstractmethod
    def area(self) -> float:
        """The area in square units."""
        ...


class Circle(Shape):
    def __init__(self, radius: float) -> None:
        self.radius = radius

    def area(self) -> float:
        return 3.14 * self.radius * self.radius


def add(left: int, right: int) -> int:
    """Adds two numbers."""
    return left + right


def unit_circle() -> Circle:
    return Circle(1.0)
//- /app/main.py
from app.shapes import Shape, add, unit_circle


def main() -> None:
    circle = unit_circle()
    print(circle.area())
    print(add(1, 2))


def measure(shape: Shape) -> float:
    return shape.area()
//- /app/broken.py
import os


def broken() -> int:
    return "text"


print(undefined_name)
//- /app/uses.py
{uses}"#
    )
}

/// One project and one basedpyright for every read-only test in this file.
static SHARED: LazyLock<Fixture> = LazyLock::new(|| Fixture::shared("python", &project()));

#[test]
fn lsp_5_python_definition_finds_the_method() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "definition", "path": "app/main.py", "line": 6, "symbol": "circle.area"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_python_type_definition_finds_the_class_of_a_variable() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "type_definition", "path": "app/main.py", "line": 5, "symbol": "circle"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_python_implementation_finds_the_overrides() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "implementation", "path": "app/main.py", "line": 11, "symbol": "area"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_python_references_are_capped_at_50_with_the_total() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "references", "path": "app/shapes.py", "line": 21, "symbol": "add"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_python_hover_shows_the_signature_and_the_docstring() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "hover", "path": "app/main.py", "line": 7, "symbol": "add"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_python_symbols_of_a_file_are_an_outline() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "symbols", "path": "app/shapes.py"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_python_symbols_with_a_query_search_the_workspace() {
    if !available(Server::Basedpyright) {
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
fn lsp_5_python_code_actions_offer_the_quick_fix() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "code_actions", "path": "app/broken.py", "line": 1, "symbol": "os"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_python_diagnostics_of_a_file_are_its_errors_and_warnings() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "diagnostics", "path": "app/broken.py"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_python_diagnostics_star_runs_basedpyright() {
    if !available(Server::Basedpyright) {
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
fn lsp_5_python_diagnostics_star_counts_each_file_once_under_nested_roots() {
    // `docs/requirements.txt` is part of the project above it; `tools/pyproject.toml` is a
    // project of its own, whose files the outer run does not count again. Two errors on one
    // line are two.
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp(
            "//- /pyproject.toml\n[project]\nname = \"outer\"\n\
             //- /app/main.py\ndef area(side: int) -> int:\n    return side\n\n\
             total = area(\"1\") + area(\"2\")\n\
             //- /docs/requirements.txt\nsphinx\n\
             //- /docs/conf.py\nproject: int = \"docs\"\n\
             //- /tools/pyproject.toml\n[project]\nname = \"tools\"\n\
             //- /tools/run.py\nstep: int = \"tools\"\n",
        );
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "diagnostics", "path": "*", "severity": "error"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_2_python_status_with_a_missing_marker_says_so() {
    // No server starts, but `status` says whether its binary is there: the snapshot holds
    // the answer of a machine where it is.
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp_with(
            "//- /script.py\nprint('hi')\n",
            only("basedpyright", LspConfig::default()),
        );
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "hover", "path": "script.py", "line": 1, "symbol": "print"}))
            .await;
        t.lsp(json!({"operation": "status"})).await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_2_python_status_with_a_missing_binary_says_where_it_looked() {
    run(async {
        // With no override, a machine without basedpyright or pyright reports both names;
        // here an override makes the binary missing on any machine.
        let config = config_with(&[(
            "basedpyright",
            ServerOverride {
                command: Some(vec![
                    "pyright-langserver-not-installed".into(),
                    "--stdio".into(),
                ]),
                ..ServerOverride::default()
            },
        )]);
        let fx = Fixture::temp_with(&project(), only("basedpyright", config));
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "status"})).await;
        t.lsp(
            json!({"operation": "definition", "path": "app/main.py", "line": 7, "symbol": "add"}),
        )
        .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_8_python_rename_changes_every_file_and_the_server_sees_it() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let mut t = fx.scenario();
        t.call(
            "lsp_rename",
            json!({"path": "app/shapes.py", "line": 21, "symbol": "add", "new_name": "plus"}),
        )
        .await;
        t.lsp(
            json!({"operation": "references", "path": "app/main.py", "line": 7, "symbol": "plus"}),
        )
        .await;
        assert_transcript!(t);
        // What the transcript cannot show: the files on disk.
        assert!(
            fx.file("app/main.py")
                .contains("from app.shapes import Shape, plus, unit_circle")
        );
        assert!(
            fx.file("app/shapes.py")
                .contains("def plus(left: int, right: int) -> int:")
        );
        assert_eq!(fx.file("app/uses.py").matches("plus(").count(), 60);
    });
}

#[test]
fn lsp_5_python_files_changed_on_disk_are_resynced_before_a_request() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "hover", "path": "app/main.py", "line": 7, "symbol": "add"}))
            .await;
        // The shell adds a function to a file the server never opened, and a call to it in
        // the open one.
        let shapes = fx.file("app/shapes.py");
        std::fs::write(
            fx.root.join("app/shapes.py"),
            format!("{shapes}\n\ndef triple(x: int) -> int:\n    return 3 * x\n"),
        )
        .unwrap();
        let main = fx.file("app/main.py").replace(
            "from app.shapes import Shape, add, unit_circle",
            "from app.shapes import Shape, add, triple, unit_circle",
        );
        std::fs::write(
            fx.root.join("app/main.py"),
            format!("{main}\n\nprint(triple(2))\n"),
        )
        .unwrap();
        t.note(
            "on disk, app/shapes.py gains a function `triple` at its end, and app/main.py \
             imports it and calls it on its last line",
        );
        let line = line_of(&fx, "app/main.py", "print(triple(2))");
        t.lsp(json!({"operation": "definition", "path": "app/main.py", "line": line, "symbol": "triple"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_2_python_reload_restarts_the_server() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let mut t = fx.scenario();
        let hover =
            json!({"operation": "hover", "path": "app/main.py", "line": 7, "symbol": "add"});
        t.lsp(hover.clone()).await;
        let before = fx.pid("basedpyright").await.unwrap();
        t.lsp(json!({"operation": "reload", "path": "app/main.py"}))
            .await;
        let after = fx.pid("basedpyright").await.unwrap();
        t.lsp(hover).await;
        assert_transcript!(t);
        // The transcript hides pids: the server is a new process.
        assert_ne!(before, after);
    });
}

#[test]
fn lsp_2_python_a_server_killed_mid_run_comes_back() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp_with(&project(), only("basedpyright", LspConfig::default()));
        let mut t = fx.scenario();
        let args =
            json!({"operation": "definition", "path": "app/main.py", "line": 6, "symbol": "area"});
        t.lsp(args.clone()).await;
        let pid = fx.kill_server("basedpyright").await;
        t.note("basedpyright is killed with SIGKILL");
        // The next call starts a new server and answers from it; `status` tells the crash.
        t.lsp(args).await;
        t.lsp(json!({"operation": "status"})).await;
        assert_transcript!(t, STDERR);
        // The transcript hides pids: the server is a new process.
        assert_ne!(fx.pid("basedpyright").await.unwrap(), pid);
    });
}

#[test]
fn lsp_2_python_a_call_right_after_the_server_died_restarts_it() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let mut t = fx.scenario();
        let args =
            json!({"operation": "definition", "path": "app/main.py", "line": 6, "symbol": "area"});
        t.lsp(args.clone()).await;
        let pid = fx.pid("basedpyright").await.unwrap();
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        // The call goes as soon as the process is dead, without waiting for the supervisor to
        // have heard of it.
        while tools_process::process_info(pid as u32).is_some_and(|p| !p.is_zombie()) {
            std::thread::yield_now();
        }
        t.note("basedpyright is killed with SIGKILL, and the next call goes at once");
        t.lsp(args).await;
        assert_transcript!(t);
        // Whether the supervisor heard of the death before the call or during it is a race,
        // so `status` (which says how it ended) is not in the transcript; either way it is
        // one crash.
        assert_eq!(fx.session("basedpyright").await["crashes"], 1);
    });
}
