//! `status` and `reload` (LSP-2): which servers can run here and why not, and restarting
//! them. tools-lsp-client reports each server and session as data; here they become the
//! reports and lines the model reads, with roots shown relative to the workspace.

use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;
use tools_core::{ToolError, Workspace};
use tools_lsp_client::{
    Activity, ReloadOutcome, Reloaded, ServerStatus, SessionState, SessionStatus,
};

use super::Lsp;
use crate::error::{ForModel, explain, last_error, missing_binary};
use crate::supervisor::still_busy;

/// One session in `status`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionReport {
    /// The server's name.
    pub server: String,
    /// The project root it serves, workspace-relative.
    pub root: String,
    /// `starting`, `indexing: …`, `ready`, `crashed n times …` or `not running`.
    pub state: String,
    /// The server's process id while it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// How many times it crashed since the last reload.
    pub crashes: u32,
    /// The last error: a crash, a failed start, or an error the server reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The last lines it wrote to stderr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
}

/// One server in `status` (LSP-2).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ServerReport {
    /// The server's name.
    pub server: String,
    /// The file extensions it handles.
    pub extensions: String,
    /// Whether it can run here: a root marker is found and the binary resolves.
    pub usable: bool,
    /// Project roots found by their markers, workspace-relative (`.` is the root itself).
    pub roots: Vec<String>,
    /// The marker files it looks for.
    pub markers: Vec<String>,
    /// The binary that would run, if one resolves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
    /// What the binary says its version is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why it cannot run here, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Its sessions in this run.
    pub sessions: Vec<SessionReport>,
}

impl Lsp {
    /// Every server of the table, with its marker, binary, version and sessions.
    pub(super) async fn status(
        &self,
        workspace: &Workspace,
    ) -> Result<Vec<ServerReport>, ToolError> {
        let client = self.supervisor.client();
        // The status probes each server's binary, which would start processes: with the
        // sandbox refused as the run began, its words are the status (EVAL-9).
        if let Some(refusal) = client.context().sandbox.as_ref().and_then(|s| s.refusal()) {
            return Err(ToolError::failed(format!(
                "no language server can start here: {refusal}"
            )));
        }
        let statuses = client.status().await.for_model(workspace)?;
        let budget = client.context().config.restart_budget;
        Ok(statuses
            .iter()
            .map(|status| server_report(status, budget, workspace))
            .collect())
    }

    /// Restarts the server of the file at `path`, or every server; a line per session.
    pub(super) async fn reload(
        &self,
        workspace: &Workspace,
        path: Option<&str>,
    ) -> Result<Vec<String>, ToolError> {
        let client = self.supervisor.client();
        let only = match path {
            Some(given) => {
                let path = workspace.resolve(given)?;
                let spec = client.route(&path).for_model(workspace)?;
                let root = client.root(&spec, &path).for_model(workspace)?;
                Some((spec, root))
            }
            None => None,
        };
        let reloaded = client.reload(only).await.for_model(workspace)?;
        Ok(reloaded
            .iter()
            .map(|item| reload_line(item, workspace))
            .collect())
    }
}

fn server_report(status: &ServerStatus, budget: u32, workspace: &Workspace) -> ServerReport {
    let spec = &status.spec;
    let marker_problem = status.roots.is_empty().then(|| {
        format!(
            "no root marker: none of {} was found in the workspace root or up to {} levels \
             below it",
            spec.markers.join(", "),
            tools_process::SCAN_DEPTH
        )
    });
    let binary_problem = status
        .binary
        .as_ref()
        .err()
        .map(|missing| missing_binary(&spec.name, missing));
    let problem = match (marker_problem, binary_problem) {
        (None, None) => None,
        (Some(marker), None) => Some(format!("{marker} (the binary is there)")),
        (None, Some(binary)) => Some(format!("a project is here, but {binary}")),
        (Some(marker), Some(binary)) => Some(format!("{marker}; and {binary}")),
    };
    let mut sessions: Vec<SessionReport> = status
        .sessions
        .iter()
        .map(|session| session_report(session, budget, workspace))
        .collect();
    sessions.sort_by(|a, b| a.root.cmp(&b.root));
    ServerReport {
        server: spec.name.clone(),
        extensions: spec.extension_list(),
        usable: problem.is_none(),
        roots: status
            .roots
            .iter()
            .map(|root| workspace.display(root))
            .collect(),
        markers: spec.markers.clone(),
        binary: status
            .binary
            .as_ref()
            .ok()
            .map(|path| path.display().to_string()),
        version: status.version.clone(),
        problem,
        sessions,
    }
}

fn session_report(session: &SessionStatus, budget: u32, workspace: &Workspace) -> SessionReport {
    let times = |count: u32| match count {
        1 => "1 time".to_owned(),
        n => format!("{n} times"),
    };
    let state = match &session.state {
        SessionState::Starting => "starting".to_owned(),
        SessionState::Running(activity) => {
            let state = match activity {
                Activity::Ready => "ready".to_owned(),
                Activity::Busy(what) => format!("indexing: {what}"),
            };
            match session.crashes {
                0 => state,
                1 => format!("{state} (restarted after 1 crash)"),
                n => format!("{state} (restarted after {n} crashes)"),
            }
        }
        SessionState::Down if session.crashes >= budget => format!(
            "crashed {}; stays down until `reload` (restart budget {budget})",
            times(session.crashes)
        ),
        SessionState::Down if session.crashes > 0 => format!(
            "crashed {}; restarts on the next call (restart budget {budget})",
            times(session.crashes)
        ),
        SessionState::Down => "not running".to_owned(),
    };
    let shown = |path: &Path| workspace.display(path);
    SessionReport {
        server: session.server.clone(),
        root: workspace.display(&session.root),
        state,
        pid: session.pid,
        crashes: session.crashes,
        last_error: session
            .last_error
            .as_ref()
            .map(|error| last_error(error, &shown)),
        stderr_tail: session.stderr_tail.clone(),
    }
}

fn reload_line(item: &Reloaded, workspace: &Workspace) -> String {
    let Reloaded {
        server,
        root,
        outcome,
    } = item;
    let root = workspace.display(root);
    match outcome {
        ReloadOutcome::NotRunning => format!(
            "{server} (root {root}): not running; its crash count is cleared and it starts on \
             the next call that needs it"
        ),
        ReloadOutcome::Restarted {
            still_busy: Some(busy),
            ..
        } => format!("{server} (root {root}): restarted; {}", still_busy(busy)),
        ReloadOutcome::Restarted {
            pid, ready_after, ..
        } => format!(
            "{server} (root {root}): restarted, pid {pid}, ready after {:.1}s",
            ready_after.as_secs_f64()
        ),
        ReloadOutcome::Failed(error) => format!(
            "{server} (root {root}): stopped, but did not start again: {}",
            explain(error, &|path| workspace.display(path))
        ),
    }
}
