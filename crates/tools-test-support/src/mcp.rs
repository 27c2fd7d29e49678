//! The MCP client harness: `agent-tools serve` started as a child process and driven by
//! rmcp's client, with a scripted person behind its elicitation handler, in either protocol
//! era; the processes a server started, found by a mark in their environment; and a small
//! workspace.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProgressNotificationParam,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RoleClient,
    RunningService,
};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData};
use serde_json::Value;

/// What the scripted person does with each card, in order; the last one repeats.
#[derive(Debug, Clone)]
pub enum Person {
    /// Accepts the form with this content.
    Accept(Value),
    /// Declines, after reading the card (longer than [`tools_core::UNSEEN_WITHIN`]).
    Decline,
    /// Dismisses, after reading the card.
    Cancel,
    /// A client that declines every card itself, at once, showing it to no one (`codex
    /// exec`).
    ClientDeclines,
    /// A client that dismisses every card itself, at once (`claude -p`).
    ClientCancels,
    /// Never answers.
    Hang,
    /// Accepts with this content after a while.
    Slow(std::time::Duration, Value),
}

/// How long a person takes to read a card before declining or dismissing it: longer than a
/// client that answers by itself.
const READING: std::time::Duration =
    tools_core::UNSEEN_WITHIN.saturating_add(std::time::Duration::from_millis(50));

/// Which protocol a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25: `initialize`, a session, cards as server-initiated elicitation requests.
    Session,
    /// 2026-07-28: `server/discover`, capabilities in each request's `_meta`, cards as
    /// `input_required` results.
    Discover,
}

/// Both protocols, for tests that must hold in each.
pub const ERAS: [Era; 2] = [Era::Session, Era::Discover];

/// A client that declares elicitation only when it has a person.
#[derive(Clone)]
pub struct Client {
    people: Option<Arc<Mutex<Vec<Person>>>>,
    /// The protocol it speaks.
    pub era: Era,
    /// Whether it declares the tasks extension.
    pub tasks: bool,
    /// Every elicitation message the server sent, in order.
    pub cards: Arc<Mutex<Vec<(String, Value)>>>,
    /// Every progress notification the server sent, in order.
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl Client {
    /// A client with nobody behind it: it declares no elicitation.
    pub fn without_elicitation() -> Self {
        Client {
            people: None,
            era: Era::Session,
            tasks: false,
            cards: Default::default(),
            progress: Default::default(),
        }
    }

    /// A client whose person answers the cards as `people` says, in order.
    pub fn answering(people: Vec<Person>) -> Self {
        Client {
            people: Some(Arc::new(Mutex::new(people))),
            era: Era::Session,
            tasks: false,
            cards: Default::default(),
            progress: Default::default(),
        }
    }

    /// The same client speaking `era`.
    pub fn in_era(mut self, era: Era) -> Self {
        self.era = era;
        self
    }

    /// The same client declaring the tasks extension.
    pub fn with_tasks(mut self) -> Self {
        self.tasks = true;
        self
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = serde_json::json!({});
        if self.people.is_some() {
            capabilities["elicitation"] = serde_json::json!({"form": {}});
        }
        if self.tasks {
            capabilities["extensions"] = serde_json::json!({"io.modelcontextprotocol/tasks": {}});
        }
        let capabilities: ClientCapabilities = serde_json::from_value(capabilities).unwrap();
        ClientConfig::new(capabilities, Implementation::new("agent-tools-tests", "0"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Err(ErrorData::invalid_params(
                "only form elicitation is expected",
                None,
            ));
        };
        self.cards
            .lock()
            .unwrap()
            .push((message, serde_json::to_value(requested_schema).unwrap()));
        let person = {
            let people = self
                .people
                .as_ref()
                .expect("elicitation sent to a client that did not declare it");
            let mut people = people.lock().unwrap();
            if people.len() > 1 {
                people.remove(0)
            } else {
                people[0].clone()
            }
        };
        match person {
            Person::Accept(content) => {
                Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
            }
            Person::Decline | Person::Cancel => {
                tokio::time::sleep(READING).await;
                Ok(ElicitResult::new(match person {
                    Person::Decline => ElicitationAction::Decline,
                    _ => ElicitationAction::Cancel,
                }))
            }
            Person::ClientDeclines => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Person::ClientCancels => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Person::Slow(delay, content) => {
                tokio::time::sleep(delay).await;
                Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
            }
            Person::Hang => {
                futures::future::pending::<()>().await;
                unreachable!()
            }
        }
    }
}

/// A running `agent-tools serve` with a connected client.
pub struct Server {
    /// The client's side of the connection.
    pub service: RunningService<RoleClient, Client>,
    /// The client (its cards and progress notifications).
    pub client: Client,
    /// The server's pid.
    pub pid: u32,
    /// The value of [`MARK`] in the environment of the server and everything it starts.
    pub mark: String,
}

/// An environment variable set on every `serve` a test starts, with a value unique to that
/// server: every process it starts inherits it, so a test finds all of them, at any depth, in
/// the process table.
pub const MARK: &str = "AGENT_TOOLS_TEST_MARK";

/// A value for [`MARK`] no other server of any test process has.
pub fn unique_mark() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The processes alive (not zombies) whose environment carries `mark`, as `pid cmdline`.
pub fn marked_processes(mark: &str) -> Vec<String> {
    tools_process::list_processes()
        .into_iter()
        .filter(|p| !p.is_zombie())
        .filter(|p| tools_process::process_env_var(p.pid, MARK).as_deref() == Some(mark))
        .map(|p| format!("{} {}", p.pid, p.cmdline.join(" ")))
        .collect()
}

/// Waits (up to a minute, polling) until `check` holds for the processes marked `mark`.
pub async fn until_processes(mark: &str, check: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let found = marked_processes(mark);
        if check(&found) || std::time::Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The `agent-tools` binary cargo built beside the running test (`target/…/agent-tools`):
/// a package's integration tests are built after its binaries.
pub fn agent_tools_binary() -> PathBuf {
    let test = std::env::current_exe().expect("the test knows its own path");
    // target/debug/deps/it-HASH → target/debug/agent-tools
    let binary = test
        .parent()
        .and_then(Path::parent)
        .expect("tests run from target/PROFILE/deps")
        .join("agent-tools");
    assert!(
        binary.is_file(),
        "{} is not built; run the test through `cargo test -p agent-tools`",
        binary.display()
    );
    binary
}

impl Server {
    /// Starts `agent-tools serve --root ROOT ARGS…` and connects `client`.
    pub async fn start(root: &Path, args: &[&str], client: Client) -> Server {
        let mut command = tokio::process::Command::new(agent_tools_binary());
        command.arg("serve").arg("--root").arg(root).args(args);
        // Quiet by default; `AGENT_TOOLS_TEST_LOG=tools_lsp=debug` shows a server's side.
        command.env(
            "AGENT_TOOLS_LOG",
            std::env::var("AGENT_TOOLS_TEST_LOG").unwrap_or_else(|_| "warn".into()),
        );
        let mark = unique_mark();
        command.env(MARK, &mark);
        let transport = TokioChildProcess::new(command).unwrap();
        let pid = transport.id().unwrap();
        let lifecycle = match client.era {
            Era::Session => ClientLifecycleMode::Initialize,
            Era::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        };
        let service = client
            .clone()
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .unwrap();
        Server {
            service,
            client,
            pid,
            mark,
        }
    }

    /// The names of the tools it lists.
    pub async fn tool_names(&self) -> Vec<String> {
        let tools = self.service.list_all_tools().await.unwrap();
        tools.into_iter().map(|t| t.name.to_string()).collect()
    }

    /// One `tools/call`; a protocol error fails the test.
    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        let params = CallToolRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().cloned().unwrap_or_default());
        self.service.call_tool(params).await.unwrap()
    }

    /// Every card the client was shown, in order.
    pub fn cards(&self) -> Vec<(String, Value)> {
        self.client.cards.lock().unwrap().clone()
    }
}

/// The text of a result's first content block.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// Whether the result is an error result.
pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// A temp workspace with a couple of files.
pub fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    41\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    dir
}
