//! The run's sandbox reaches the language servers and the project checkers (EVAL-9; SPEC
//! section 12: "the `[sandbox]` prefix applies to every child, language servers and checkers
//! included"): basedpyright and its checker run under a real bubblewrap, through a wrapper
//! that records every command line it is given; and a sandbox refused as the run began starts
//! neither, each answer saying why in the sandbox check's words.

use serde_json::json;
use std::path::Path;
use tools_process::{Sandbox, SandboxProblem};
use tools_test_support::sandbox::{bwrap_ready, recorder};

use crate::support::{Fixture, Server, assert_transcript, available, only, run};

/// A small project: one file with a type error.
const PROJECT: &str = r#"//- /pyproject.toml
[project]
name = "fixture"
version = "0.1.0"
//- /app/__init__.py
//- /app/broken.py
def broken() -> int:
    return "text"
"#;

/// What the sandboxed processes carry in their environment, set by bubblewrap inside.
const INSIDE: &str = "AGENT_TOOLS_TEST_IN_BWRAP";

/// The recorded command lines.
fn recorded(record: &Path) -> Vec<String> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn eval_9_language_servers_and_checkers_run_inside_the_sandbox() {
    if !available(Server::Basedpyright) || !bwrap_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (script, record) = recorder(dir.path());
    let mut prefix = vec![script.display().to_string()];
    prefix.extend(
        [
            "bwrap",
            "--dev-bind",
            "/",
            "/",
            "--unshare-pid",
            "--proc",
            "/proc",
            "--die-with-parent",
            "--setenv",
            INSIDE,
            "1",
            "--",
        ]
        .map(str::to_owned),
    );
    let shown_prefix = prefix[1..].join(" ");
    let fx = Fixture::temp_in_sandbox(
        PROJECT,
        only("basedpyright", Default::default()),
        Sandbox::new(prefix),
    );
    run(async {
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "diagnostics", "path": "app/broken.py"}))
            .await;
        // The server runs inside bubblewrap: it has bubblewrap's variable in its environment.
        let server = tools_process::list_processes().into_iter().find(|process| {
            process
                .cmdline
                .iter()
                .any(|word| word.ends_with("basedpyright-langserver"))
                && tools_process::process_env_var(process.pid, INSIDE).as_deref() == Some("1")
        });
        assert!(server.is_some(), "no basedpyright-langserver inside bwrap");
        t.lsp(json!({"operation": "diagnostics", "path": "*"}))
            .await;
        assert_transcript!(t);
    });
    // Every command line went through the prefix: the version probe, the server, the checker.
    let lines = recorded(&record);
    let through = |program: &str| {
        lines.iter().any(|line| {
            line.strip_prefix(&shown_prefix)
                .and_then(|rest| rest.trim_start().split(' ').next())
                .is_some_and(|first| first.ends_with(program))
        })
    };
    assert!(through("/basedpyright-langserver"), "{lines:#?}");
    assert!(through("/basedpyright"), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("basedpyright --outputjson")),
        "the checker did not run through the sandbox: {lines:#?}"
    );
    assert!(
        lines.iter().all(|line| line.starts_with(&shown_prefix)),
        "{lines:#?}"
    );
}

#[test]
fn eval_9_a_refused_sandbox_starts_no_server_and_no_checker_and_says_why() {
    if !available(Server::Basedpyright) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (script, record) = recorder(dir.path());
    let problem = SandboxProblem::Fails {
        prefix: "bwrap --unshare-user --dev-bind / / --".into(),
        ran: "true".into(),
        status: "exit status: 1".into(),
        said: "bwrap: setting up uid map: Permission denied".into(),
    };
    let sandbox = Sandbox::new(vec![script.display().to_string(), "bwrap".into()])
        .refuse(problem, "run without [sandbox], then restart the run");
    let fx = Fixture::temp_in_sandbox(PROJECT, only("basedpyright", Default::default()), sandbox);
    run(async {
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "diagnostics", "path": "app/broken.py"}))
            .await;
        t.lsp(json!({"operation": "diagnostics", "path": "*"}))
            .await;
        t.lsp(json!({"operation": "status"})).await;
        assert_transcript!(t);
    });
    assert_eq!(recorded(&record), Vec::<String>::new());
}
