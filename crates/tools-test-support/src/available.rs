//! Whether what a test drives is installed here, and the one rule for when it is not:
//! locally a loud message and an early return, under `CI=true` a failure, so CI never passes
//! by skipping.

use std::io::Write as _;

use crate::{repo_root, tool_dirs};

/// The environment variable naming a file every skip is appended to, one line each
/// (`cargo xtask ci` sets it, and counts and prints the lines at its end).
pub const SKIP_LOG: &str = "AGENT_TOOLS_SKIP_LOG";

/// Whether `name` is there (`installed`). When it is not: under `CI=true` this panics (the
/// test fails) with what to run; locally it prints that and returns `false`, and the test
/// returns early. Either way the skip goes to [`SKIP_LOG`]'s file when it is set.
///
/// The message is written to the process's standard error directly, not through
/// `eprintln!`: the test harness captures the print macros of a passing test and never shows
/// them, which is how a local run once passed 74 end-to-end tests that had not run.
pub fn require(name: &str, installed: bool, install: &str) -> bool {
    if installed {
        return true;
    }
    let message =
        format!("{name} is not installed; `cargo xtask ci` installs it, or run: {install}");
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    log_skip(&test, &message);
    if std::env::var("CI").is_ok_and(|value| value == "true") {
        panic!("{message}");
    }
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n!!!!!!!! SKIPPED {test}: {message} !!!!!!!!\n"
    );
    false
}

/// Appends `test: message` to the skip log, when [`SKIP_LOG`] names one: one `write` of one
/// line on a file opened for appending, so the tests of parallel processes never interleave.
fn log_skip(test: &str, message: &str) {
    let Some(path) = std::env::var_os(SKIP_LOG) else {
        return;
    };
    let line = format!("{test}: {message}\n");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(error) = written {
        panic!("cannot append to the skip log {}: {error}", path.display());
    }
}

/// The language servers the tests drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanguageServer {
    RustAnalyzer,
    Basedpyright,
    Clangd,
    TypeScript,
}

impl LanguageServer {
    /// Whether it is installed where the test command puts it (or on `PATH`).
    pub fn installed(self) -> bool {
        let in_dirs = |name: &str| tool_dirs().iter().any(|dir| dir.join(name).is_file());
        match self {
            // The rustup proxy is always there; ask rustup whether the component is.
            LanguageServer::RustAnalyzer => std::process::Command::new("rustup")
                .args(["which", "rust-analyzer"])
                .current_dir(repo_root())
                .output()
                .is_ok_and(|out| out.status.success()),
            LanguageServer::Basedpyright => in_dirs("basedpyright-langserver"),
            LanguageServer::Clangd => on_path("clangd") || in_dirs("clangd"),
            LanguageServer::TypeScript => in_dirs("typescript-language-server") && in_dirs("tsc"),
        }
    }

    /// What installs it.
    pub fn install(self) -> &'static str {
        match self {
            LanguageServer::RustAnalyzer => "rustup component add rust-analyzer rust-src",
            LanguageServer::Basedpyright => {
                "python3 -m venv .venv && .venv/bin/pip install basedpyright"
            }
            LanguageServer::Clangd => "apt-get install -y clangd",
            LanguageServer::TypeScript => {
                "npm install --prefix .tools/node typescript-language-server@5 typescript@5"
            }
        }
    }
}

/// Whether `server` is installed, by [`require`]'s rule.
pub fn available(server: LanguageServer) -> bool {
    require(&format!("{server:?}"), server.installed(), server.install())
}

/// Whether `program --version` runs, by [`require`]'s rule.
pub fn program_available(program: &str, install: &str) -> bool {
    let runs = std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    require(program, runs, install)
}

/// Whether the test venv's Python imports `modules` (comma-separated, as in `import`), by
/// [`require`]'s rule.
pub fn python_imports(modules: &str) -> bool {
    let python = repo_root().join(".venv/bin/python");
    let imports = std::process::Command::new(python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|out| out.status.success());
    require(
        &format!("the test venv's {modules}"),
        imports,
        &format!(".venv/bin/pip install {}", modules.replace(',', " ")),
    )
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
}
