//! Fixture projects written into folders, a dispatcher over the two tools with a supervisor
//! that finds the servers the README's test command installs, one shared runtime (so a
//! server started by one test serves the next), the rule for missing servers (locally a loud
//! message and an early return, under `CI=true` a failure), and the transcript of a scenario
//! that a test snapshots whole.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use serde_json::Value;
use tools_core::{
    ApprovalPolicy, Dispatcher, DispatcherOptions, RegistryBuilder, Run, ToolCall, ToolResult,
    Workspace,
};
use tools_lsp::{LspConfig, LspSupervisor, ServerOverride};
use tools_process::Sandbox;
use tools_test_support::Transcript;

/// Every test runs on this runtime, so sessions outlive the test that started them.
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
});

/// Runs a test body on the shared runtime.
pub fn run<F: Future>(body: F) -> F::Output {
    RUNTIME.block_on(body)
}

pub use tools_test_support::{LanguageServer as Server, available, repo_root, tool_dirs};

/// A project folder, a supervisor on it, and a dispatcher over `lsp` and `lsp_rename`.
pub struct Fixture {
    /// Kept so a temp folder lives as long as the fixture.
    _temp: Option<tempfile::TempDir>,
    pub root: PathBuf,
    pub dispatcher: Arc<Dispatcher>,
}

/// Writes `//- /path` fixture text into `root`.
pub fn write_files(root: &Path, files: &str) {
    tools_test_support::write_fixture(root, files).unwrap();
}

impl Fixture {
    /// A fixture in a fresh temp folder, removed when the fixture drops.
    pub fn temp(files: &str) -> Fixture {
        Fixture::temp_with(files, LspConfig::default())
    }

    /// [`Fixture::temp`] with a config to start from.
    pub fn temp_with(files: &str, config: LspConfig) -> Fixture {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        write_files(&root, files);
        Fixture::build(Some(temp), root, config, None)
    }

    /// [`Fixture::temp_with`] whose servers, their probes and the project checkers start
    /// inside `sandbox` (EVAL-9).
    pub fn temp_in_sandbox(files: &str, config: LspConfig, sandbox: Sandbox) -> Fixture {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        write_files(&root, files);
        Fixture::build(Some(temp), root, config, Some(sandbox))
    }

    /// A fixture shared by the tests of one binary: a folder under cargo's temp dir named for
    /// this test process, written afresh when the first test needs it. Folders of processes
    /// that have ended are removed; a test process running beside this one keeps its own.
    pub fn shared(name: &str, files: &str) -> Fixture {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lsp-fixtures");
        if let Ok(entries) = std::fs::read_dir(&base) {
            for entry in entries.flatten() {
                let file_name = entry.file_name();
                let pid = file_name
                    .to_str()
                    .and_then(|n| n.rsplit('-').next())
                    .and_then(|pid| pid.parse::<u32>().ok());
                if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let root = base.join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        write_files(&root, files);
        Fixture::build(None, root, LspConfig::default(), None)
    }

    fn build(
        temp: Option<tempfile::TempDir>,
        root: PathBuf,
        mut config: LspConfig,
        sandbox: Option<Sandbox>,
    ) -> Fixture {
        config.path.extend(tool_dirs());
        // A Rust fixture uses the repository's toolchain (where the README's command put
        // rust-analyzer and rust-src) and a target folder of its own, so rust-analyzer and
        // cargo never wait for the lock of the build that runs these tests.
        if root.join("Cargo.toml").exists() {
            std::fs::copy(
                repo_root().join("rust-toolchain.toml"),
                root.join("rust-toolchain.toml"),
            )
            .unwrap();
            let rust = config.servers.entry("rust-analyzer".into()).or_default();
            rust.env.insert(
                "CARGO_TARGET_DIR".into(),
                root.join("target").display().to_string(),
            );
        }
        let workspace = Workspace::new(&root).unwrap();
        let supervisor =
            LspSupervisor::new_in_sandbox(workspace.root(), config, sandbox.clone()).unwrap();
        let mut builder = RegistryBuilder::new(Run::new(workspace).with_sandbox(sandbox));
        tools_lsp::register(&mut builder, &supervisor);
        let options = DispatcherOptions {
            approval: ApprovalPolicy::Allow,
            ..DispatcherOptions::default()
        };
        Fixture {
            _temp: temp,
            root,
            dispatcher: Arc::new(Dispatcher::new(builder.build(), options)),
        }
    }

    /// One `lsp` call.
    pub async fn lsp(&self, arguments: Value) -> ToolResult {
        self.call("lsp", arguments).await
    }

    /// One call of any tool.
    pub async fn call(&self, name: &str, arguments: Value) -> ToolResult {
        self.dispatcher
            .dispatch(ToolCall {
                name: name.into(),
                arguments,
            })
            .await
    }

    /// A file's text.
    pub fn file(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).unwrap()
    }

    /// Kills the running session of `server` with SIGKILL and waits until the supervisor
    /// has noticed (its status shows the crash); returns the pid it had.
    pub async fn kill_server(&self, server: &str) -> u64 {
        let pid = self.pid(server).await.expect("the server is not running");
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        for _ in 0..100 {
            if self.session(server).await["crashes"] == 1 {
                return pid;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("the supervisor did not notice that {server} was killed");
    }

    /// The first session of `server` in `status`.
    pub async fn session(&self, server: &str) -> Value {
        let status = self.lsp(serde_json::json!({"operation": "status"})).await;
        let servers = status.structured.unwrap()["servers"].clone();
        servers
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["server"] == server)
            .unwrap()["sessions"][0]
            .clone()
    }

    /// The pid of the running session of `server`, from `status`.
    pub async fn pid(&self, server: &str) -> Option<u64> {
        let status = self.lsp(serde_json::json!({"operation": "status"})).await;
        let servers = status.structured?["servers"].as_array()?.clone();
        servers
            .iter()
            .find(|s| s["server"] == server)?
            .get("sessions")?
            .as_array()?
            .iter()
            .find_map(|session| session.get("pid")?.as_u64())
    }
}

/// A config whose servers are overridden as given.
pub fn config_with(servers: &[(&str, ServerOverride)]) -> LspConfig {
    LspConfig {
        servers: servers
            .iter()
            .map(|(name, change)| ((*name).to_owned(), change.clone()))
            .collect::<BTreeMap<_, _>>(),
        ..LspConfig::default()
    }
}

/// The 1-based line of the first line of `path` in `fixture` that contains `needle`.
pub fn line_of(fixture: &Fixture, path: &str, needle: &str) -> u32 {
    let text = fixture.file(path);
    let index = text
        .lines()
        .position(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("{path} has no line with {needle}"));
    u32::try_from(index + 1).unwrap()
}

/// One scenario's calls and the whole answer of each, in text and structure, as the model
/// reads them: the test snapshots it with [`assert_transcript!`].
pub struct Scenario<'a> {
    fixture: &'a Fixture,
    transcript: Transcript,
}

/// What varies between machines in an answer beyond what [`tools_test_support::redact`]
/// replaces: the repository's folder (where a missing binary was looked for), where each
/// server's binary is and its version, and whether this machine can contain processes (the
/// note `status` ends with).
fn machine_filters() -> Vec<(String, String)> {
    let mut filters = vec![(
        regex::escape(&repo_root().display().to_string()),
        "[REPO]".to_owned(),
    )];
    for (pattern, replacement) in [
        (r"(?m)^(\s*binary: ).*$", "${1}[BINARY] ([VERSION])"),
        (r#""binary": "[^"]*""#, r#""binary": "[BINARY]""#),
        (r#""version": "[^"]*""#, r#""version": "[VERSION]""#),
        (r#"processes: [^\n"]*"#, "processes: [CONTAINMENT]"),
    ] {
        filters.push((pattern.to_owned(), replacement.to_owned()));
    }
    filters
}

/// A filter for what a live server wrote to its standard error (`status` shows the last
/// lines): log lines with timestamps, as many as it happened to write.
pub const STDERR: &[(&str, &str)] = &[(r#"(?s),\n\s*"stderr_tail": \[\n.*?\n\s*\]"#, "")];

/// The servers `status` lists by default, so a test can keep only the one it is about.
const BUILTIN_SERVERS: &[&str] = &[
    "rust-analyzer",
    "basedpyright",
    "typescript-language-server",
    "clangd",
    "gopls",
    "dart",
];

/// `config` with every built-in server but `server` turned off: a `status` answer then lists
/// only the server a test is about, not what else this machine has installed.
pub fn only(server: &str, mut config: LspConfig) -> LspConfig {
    for other in BUILTIN_SERVERS.iter().filter(|other| **other != server) {
        config
            .servers
            .entry((*other).to_owned())
            .or_default()
            .enabled = Some(false);
    }
    config
}

impl Fixture {
    /// A transcript of calls to this fixture's tools; the fixture's folder shows as `[ROOT]`.
    pub fn scenario(&self) -> Scenario<'_> {
        Scenario {
            fixture: self,
            transcript: Transcript::new(&self.root),
        }
    }
}

impl<'a> Scenario<'a> {
    /// One `lsp` call, recorded.
    pub async fn lsp(&mut self, arguments: Value) -> ToolResult {
        self.call("lsp", arguments).await
    }

    /// One call of any tool, recorded.
    pub async fn call(&mut self, name: &str, arguments: Value) -> ToolResult {
        let result = self.fixture.call(name, arguments.clone()).await;
        self.transcript.record_result(name, &arguments, &result);
        result
    }

    /// A line of the test's own between calls: what happened outside the tools.
    pub fn note(&mut self, note: &str) {
        self.transcript.note(note);
    }

    /// The same transcript, going on with calls to `fixture` (whose folder, a temp folder,
    /// shows as `[TMP]`).
    pub fn then_on<'b>(self, fixture: &'b Fixture) -> Scenario<'b> {
        Scenario {
            fixture,
            transcript: self.transcript,
        }
    }

    /// The transcript, redacted: temp folders, pids, times, what varies between machines,
    /// then `extra` (this test's own filters: regular expressions and their replacements).
    pub fn finish(self, extra: &[(&str, &str)]) -> String {
        let machine = machine_filters();
        let filters: Vec<(&str, &str)> = machine
            .iter()
            .map(|(pattern, replacement)| (pattern.as_str(), replacement.as_str()))
            .chain(extra.iter().copied())
            .collect();
        self.transcript.finish_with(&filters)
    }
}

/// Snapshots a [`Scenario`] whole, named after the test that runs it; a second argument
/// adds the test's own filters.
macro_rules! assert_transcript {
    ($scenario:expr) => {
        $crate::support::assert_transcript!($scenario, &[])
    };
    ($scenario:expr, $extra:expr) => {{
        let transcript = $scenario.finish($extra);
        let _guard = tools_test_support::snapshot_settings().bind_to_scope();
        insta::assert_snapshot!(transcript);
    }};
}
pub(crate) use assert_transcript;
