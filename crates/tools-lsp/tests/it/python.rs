//! basedpyright on a small Python project.

use std::sync::LazyLock;

use serde_json::json;
use tools_lsp::ServerOverride;

use crate::support::{Fixture, Server, available, config_with, failed, line_of, ok, run};

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
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "definition", "path": "app/main.py", "line": 6, "symbol": "circle.area"}))
            .await;
        assert_eq!(
            ok(&result),
            "1 definition of `area` (app/main.py:6):\napp/shapes.py:17: def area(self) -> float:"
        );
    });
}

#[test]
fn lsp_5_python_type_definition_finds_the_class_of_a_variable() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "type_definition", "path": "app/main.py", "line": 5, "symbol": "circle"}))
            .await;
        assert_eq!(
            ok(&result),
            "1 type definition of `circle` (app/main.py:5):\napp/shapes.py:13: class Circle(Shape):"
        );
    });
}

#[test]
fn lsp_5_python_implementation_finds_the_overrides() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "implementation", "path": "app/main.py", "line": 11, "symbol": "area"}))
            .await;
        assert_eq!(
            ok(&result),
            "2 implementations of `area` (app/main.py:11):\n\
             app/shapes.py:8: def area(self) -> float:\n\
             app/shapes.py:17: def area(self) -> float:"
        );
    });
}

#[test]
fn lsp_5_python_references_are_capped_at_50_with_the_total() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "references", "path": "app/shapes.py", "line": 21, "symbol": "add"}))
            .await;
        let text = ok(&result);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "64 references to `add` (app/shapes.py:21):");
        assert_eq!(
            lines[1],
            "Per file: app/uses.py: 61, app/main.py: 2, app/shapes.py: 1."
        );
        assert_eq!(
            lines[2],
            "app/main.py:1: from app.shapes import Shape, add, unit_circle"
        );
        assert_eq!(lines.len(), 2 + 50 + 1);
        assert!(lines[52].starts_with("(showing 50 of 64, spread across files;"));
        assert_eq!(result.structured.unwrap()["total"], 64);
    });
}

#[test]
fn lsp_5_python_hover_shows_the_signature_and_the_docstring() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "hover", "path": "app/main.py", "line": 7, "symbol": "add"}))
            .await;
        let text = ok(&result);
        assert!(text.starts_with("`add` at app/main.py:7:\n"), "{text}");
        assert!(
            text.contains("def add(\n    left: int,\n    right: int\n) -> int"),
            "{text}"
        );
        assert!(text.contains("Adds two numbers."), "{text}");
    });
}

#[test]
fn lsp_5_python_symbols_of_a_file_are_an_outline() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "symbols", "path": "app/shapes.py"}))
            .await;
        let text = ok(&result);
        assert!(text.starts_with("11 symbols in app/shapes.py:\nclass Shape (line 4)\n  method area (line 8)\nclass Circle (line 13)\n"), "{text}");
        assert!(text.contains("\nfunction add (line 21)\n"), "{text}");
        assert!(text.ends_with("\nfunction unit_circle (line 26)"), "{text}");
    });
}

#[test]
fn lsp_5_python_symbols_with_a_query_search_the_workspace() {
    if !available(Server::Basedpyright) {
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
             function unit_circle — app/shapes.py:26"
        );
    });
}

#[test]
fn lsp_5_python_code_actions_offer_the_quick_fix() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "code_actions", "path": "app/broken.py", "line": 1, "symbol": "os"}))
            .await;
        assert_eq!(
            ok(&result),
            "1 code action at `os` (app/broken.py:1):\n\
             1. Add `# pyright: ignore[reportUnusedImport]` (quickfix)\n\
             Apply one with the `lsp_code_action` tool: the same file, line and symbol, and its \
             title."
        );
    });
}

#[test]
fn lsp_5_python_diagnostics_of_a_file_are_its_errors_and_warnings() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "diagnostics", "path": "app/broken.py"}))
            .await;
        let text = ok(&result);
        assert!(
            text.starts_with("app/broken.py: 2 errors and 2 warnings (basedpyright):\n"),
            "{text}"
        );
        assert!(
            text.contains("app/broken.py:5: error[reportReturnType]: "),
            "{text}"
        );
        assert!(text.contains(
            "app/broken.py:8: error[reportUndefinedVariable]: \"undefined_name\" is not defined\n    print(undefined_name)"
        ), "{text}");
        assert!(
            text.contains(
                "app/broken.py:1: warning[reportUnusedImport]: Import \"os\" is not accessed"
            ),
            "{text}"
        );
    });
}

#[test]
fn lsp_5_python_diagnostics_star_runs_basedpyright() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "diagnostics", "path": "*"}))
            .await;
        let text = ok(&result);
        assert!(
            text.starts_with("`basedpyright --outputjson` (root .): 2 errors and "),
            "{text}"
        );
        assert!(text.contains("\napp/broken.py:8: error[reportUndefinedVariable]: \"undefined_name\" is not defined"), "{text}");
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
        let result = fx
            .lsp(json!({"operation": "diagnostics", "path": "*", "severity": "error"}))
            .await;
        let text = ok(&result);
        assert!(
            text.starts_with(
                "`basedpyright --outputjson` (root .): 3 errors and 0 warnings\n\
                 `basedpyright --outputjson` (root tools): 1 error and 0 warnings"
            ),
            "{text}"
        );
        assert_eq!(text.matches("\napp/main.py:4: error").count(), 2, "{text}");
        assert_eq!(text.matches("\ndocs/conf.py:1: error").count(), 1, "{text}");
        assert_eq!(text.matches("\ntools/run.py:1: error").count(), 1, "{text}");
    });
}

#[test]
fn lsp_2_python_status_with_a_missing_marker_says_so() {
    run(async {
        let fx = Fixture::temp("//- /script.py\nprint('hi')\n");
        let result = fx
            .lsp(json!({"operation": "hover", "path": "script.py", "line": 1, "symbol": "print"}))
            .await;
        assert!(
            failed(&result).starts_with(
                "basedpyright is not usable for script.py: none of its root markers \
                 (pyproject.toml, setup.py, setup.cfg, requirements.txt, pyrightconfig.json) was found"
            ),
            "{}",
            result.text
        );
        let status = fx.lsp(json!({"operation": "status"})).await;
        assert!(
            ok(&status).contains(
                "basedpyright (.py, .pyi): not usable — no root marker: none of pyproject.toml"
            ),
            "{}",
            status.text
        );
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
        let fx = Fixture::temp_with(&project(), config);
        let status = fx.lsp(json!({"operation": "status"})).await;
        let text = ok(&status);
        assert!(
            text.contains(
                "basedpyright (.py, .pyi): not usable — a project is here, but its binary was not \
                 found: looked for `pyright-langserver-not-installed` in"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "install it into the project's virtualenv with `pip install basedpyright`"
            ),
            "{text}"
        );
        let call = fx
            .lsp(json!({"operation": "definition", "path": "app/main.py", "line": 7, "symbol": "add"}))
            .await;
        assert!(
            failed(&call)
                .starts_with("basedpyright cannot start for root .: its binary was not found"),
            "{}",
            call.text
        );
    });
}

#[test]
fn lsp_8_python_rename_changes_every_file_and_the_server_sees_it() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let result = fx
            .call(
                "lsp_rename",
                json!({"path": "app/shapes.py", "line": 21, "symbol": "add", "new_name": "plus"}),
            )
            .await;
        assert_eq!(
            ok(&result),
            "Renamed `add` to `plus`: 64 edits in 3 files:\n  app/main.py: 2 edits\n  app/shapes.py: 1 edit\n  app/uses.py: 61 edits\n\n\
             basedpyright checked app/main.py, app/shapes.py, app/uses.py: no errors."
        );
        assert!(
            fx.file("app/main.py")
                .contains("from app.shapes import Shape, plus, unit_circle")
        );
        assert!(
            fx.file("app/shapes.py")
                .contains("def plus(left: int, right: int) -> int:")
        );
        assert_eq!(fx.file("app/uses.py").matches("plus(").count(), 60);
        let references = fx
            .lsp(json!({"operation": "references", "path": "app/main.py", "line": 7, "symbol": "plus"}))
            .await;
        assert!(
            ok(&references).starts_with("64 references to `plus`"),
            "{}",
            references.text
        );
    });
}

#[test]
fn lsp_5_python_files_changed_on_disk_are_resynced_before_a_request() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        ok(&fx
            .lsp(json!({"operation": "hover", "path": "app/main.py", "line": 7, "symbol": "add"}))
            .await);
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
        let line = line_of(&fx, "app/main.py", "print(triple(2))");
        let result = fx
            .lsp(json!({"operation": "definition", "path": "app/main.py", "line": line, "symbol": "triple"}))
            .await;
        assert_eq!(
            ok(&result),
            format!(
                "1 definition of `triple` (app/main.py:{line}):\napp/shapes.py:30: def triple(x: int) -> int:"
            )
        );
    });
}

#[test]
fn lsp_2_python_reload_restarts_the_server() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        ok(&fx
            .lsp(json!({"operation": "hover", "path": "app/main.py", "line": 7, "symbol": "add"}))
            .await);
        let before = fx.pid("basedpyright").await.unwrap();
        let reload = fx
            .lsp(json!({"operation": "reload", "path": "app/main.py"}))
            .await;
        assert!(
            ok(&reload).starts_with("basedpyright (root .): restarted, pid "),
            "{}",
            reload.text
        );
        let after = fx.pid("basedpyright").await.unwrap();
        assert_ne!(before, after);
        let hover = fx
            .lsp(json!({"operation": "hover", "path": "app/main.py", "line": 7, "symbol": "add"}))
            .await;
        assert!(ok(&hover).contains("Adds two numbers."), "{}", hover.text);
    });
}

#[test]
fn lsp_2_python_a_server_killed_mid_run_comes_back() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let args =
            json!({"operation": "definition", "path": "app/main.py", "line": 6, "symbol": "area"});
        ok(&fx.lsp(args.clone()).await);
        let pid = fx.kill_server("basedpyright").await;
        // The next call starts a new server and answers from it.
        let answer = fx.lsp(args.clone()).await;
        assert!(ok(&answer).contains("app/shapes.py:17: def area(self) -> float:"));
        let session = fx.session("basedpyright").await;
        assert_eq!(session["crashes"], 1);
        assert_eq!(session["state"], "ready (restarted after 1 crash)");
        assert_ne!(session["pid"].as_u64().unwrap(), pid);
    });
}

#[test]
fn lsp_2_python_a_call_right_after_the_server_died_restarts_it() {
    if !available(Server::Basedpyright) {
        return;
    }
    run(async {
        let fx = Fixture::temp(&project());
        let args =
            json!({"operation": "definition", "path": "app/main.py", "line": 6, "symbol": "area"});
        ok(&fx.lsp(args.clone()).await);
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
        let answer = fx.lsp(args).await;
        assert!(
            ok(&answer).contains("app/shapes.py:17: def area(self) -> float:"),
            "{}",
            answer.text
        );
        assert_eq!(fx.session("basedpyright").await["crashes"], 1);
    });
}
