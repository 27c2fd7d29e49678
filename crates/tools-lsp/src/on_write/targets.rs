//! The first step of a write's check: which of its files a usable server covers, with their
//! sessions (started now if needed, within the call's deadline), and which covered files
//! cannot be checked, with why. Servers known not to run here cost nothing: they are
//! remembered, per run, until the next reload.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tools_core::{FileReport, Workspace};
use tools_lsp_client::{Error, ServerSpec, Session};

use super::settle::seconds;
use crate::supervisor::LspSupervisor;

/// A file to check and the server that covers it.
pub(super) struct Target {
    pub(super) path: PathBuf,
    pub(super) shown: String,
    pub(super) session: Arc<Session>,
}

/// What the step found: the files to check, and the covered files that cannot be.
pub(super) struct Covered {
    pub(super) targets: Vec<Target>,
    pub(super) not_checked: Vec<FileReport>,
}

/// The servers diagnostics on write can use in this run, and those it learnt cannot run.
pub(super) struct Servers {
    supervisor: LspSupervisor,
    /// How long a server may take to start within a write's check.
    timeout: Duration,
    /// (server, root) pairs that cannot run here, with why, learnt since the reload count
    /// noted with them: their files are not checked, at no cost, until `lsp reload`.
    unusable: Mutex<(u64, Unusable)>,
}

/// Why each (server, root) that cannot run here cannot.
type Unusable = HashMap<(String, PathBuf), String>;

/// A covered file whose server is not known to be unusable: its session is wanted.
struct Wanted {
    path: PathBuf,
    spec: Arc<ServerSpec>,
    root: PathBuf,
}

impl Servers {
    pub(super) fn new(supervisor: LspSupervisor, timeout: Duration) -> Self {
        Servers {
            supervisor,
            timeout,
            unusable: Mutex::new((0, HashMap::new())),
        }
    }

    /// Whether a server would cover `path` (a file of its kind inside one of its roots).
    pub(super) fn cover(&self, path: &std::path::Path) -> bool {
        self.supervisor.client().covering(path).is_some()
    }

    /// The files among `paths` that a usable server covers, with their sessions, and the
    /// reports of the covered files whose server cannot check them, with why — a file of a
    /// kind a server handles but with no project root is one.
    pub(super) async fn targets(
        &self,
        workspace: &Workspace,
        paths: &[PathBuf],
        deadline: Instant,
    ) -> Covered {
        let (wanted, mut not_checked) = self.wanted(workspace, paths);
        let mut sessions: HashMap<(String, PathBuf), Result<Arc<Session>, String>> = HashMap::new();
        let mut targets = Vec::new();
        for Wanted { path, spec, root } in wanted {
            let key = (spec.name.clone(), root.clone());
            if !sessions.contains_key(&key) {
                let session = self.session(spec, root, deadline).await;
                sessions.insert(key.clone(), session);
            }
            match sessions.get(&key) {
                Some(Ok(session)) => targets.push(Target {
                    shown: workspace.display(&path),
                    path,
                    session: Arc::clone(session),
                }),
                Some(Err(reason)) => not_checked.push(FileReport::not_checked(
                    workspace.display(&path),
                    key.0.clone(),
                    reason.clone(),
                )),
                None => {}
            }
        }
        Covered {
            targets,
            not_checked,
        }
    }

    /// The covered files with their server and root, and the reports of the files whose
    /// server is known not to run here or that have no root.
    fn wanted(&self, workspace: &Workspace, paths: &[PathBuf]) -> (Vec<Wanted>, Vec<FileReport>) {
        let client = self.supervisor.client();
        let mut not_checked = Vec::new();
        let mut wanted = Vec::new();
        let generation = client.reloads();
        let mut unusable = self.unusable.lock().unwrap_or_else(|p| p.into_inner());
        if unusable.0 != generation {
            *unusable = (generation, HashMap::new());
        }
        for path in paths {
            let shown = workspace.display(path);
            let Some((spec, root)) = client.covering(path) else {
                // A file of a kind a server handles, outside every project of it.
                if let Ok(spec) = client.route(path)
                    && client.root(&spec, path).is_err()
                {
                    not_checked.push(FileReport::not_checked(
                        shown,
                        spec.name.clone(),
                        no_root(&spec),
                    ));
                }
                continue;
            };
            match unusable.1.get(&(spec.name.clone(), root.clone())) {
                Some(reason) => not_checked.push(FileReport::not_checked(
                    shown,
                    spec.name.clone(),
                    reason.clone(),
                )),
                None => wanted.push(Wanted {
                    path: path.clone(),
                    spec,
                    root,
                }),
            }
        }
        (wanted, not_checked)
    }

    /// The running session for (server, root), started within the deadline, or why the
    /// files it covers are not checked. A server that cannot run here is remembered.
    // The error is a `String` because it is the model-facing result itself: the reason each
    // of the files reads in its report, and what the run remembers for the server.
    async fn session(
        &self,
        spec: Arc<ServerSpec>,
        root: PathBuf,
        deadline: Instant,
    ) -> Result<Arc<Session>, String> {
        let key = (spec.name.clone(), root.clone());
        let acquired =
            tokio::time::timeout_at(deadline, self.supervisor.client().acquire(spec, root)).await;
        match acquired {
            Ok(Ok(session)) => Ok(session),
            Ok(Err(
                error @ (Error::NoBinary { .. }
                | Error::Reloaded { .. }
                | Error::RestartBudget { .. }),
            )) => {
                tracing::debug!(%error, "diagnostics on write skips a server");
                let reason = cannot_run(&key.0, &error);
                let mut unusable = self.unusable.lock().unwrap_or_else(|p| p.into_inner());
                unusable.1.insert(key, reason.clone());
                Err(reason)
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "diagnostics on write: the server did not start");
                Err(format!(
                    "{} did not start; `lsp` with operation `status` says why",
                    key.0
                ))
            }
            Err(_) => Err(format!(
                "{} was still starting after {}s; call `lsp` with operation `diagnostics` on \
                 it in a while",
                key.0,
                seconds(self.timeout)
            )),
        }
    }
}

/// Each session of `targets` once.
pub(super) fn distinct_sessions(targets: &[Target]) -> Vec<Arc<Session>> {
    let mut sessions: Vec<Arc<Session>> = Vec::new();
    for target in targets {
        if !sessions.iter().any(|s| Arc::ptr_eq(s, &target.session)) {
            sessions.push(Arc::clone(&target.session));
        }
    }
    sessions
}

/// Why a server that covers a file cannot check it, in a few words.
fn cannot_run(server: &str, error: &Error) -> String {
    match error {
        Error::RestartBudget { .. } => format!(
            "{server} crashed too often in this run; `lsp` with operation `reload` starts it \
             again"
        ),
        Error::NoBinary { missing, .. } if missing.not_found() => {
            format!(
                "{server} is not installed here; `lsp` with operation `status` says where it was looked for"
            )
        }
        _ => format!("{server} cannot run here; `lsp` with operation `status` says why"),
    }
}

/// Why a file of a server's kind outside every project of that server is not checked.
fn no_root(spec: &ServerSpec) -> String {
    let markers = match spec.markers.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "project marker".to_owned(),
    };
    format!(
        "no {markers} beside it or above it: {} has no project to check it in",
        spec.name
    )
}
