//! Diagnostics on write (LSP-6): a dispatch wrapper around every tool that declares it writes
//! files (`Tool::WRITES_FILES`), knowing before the call which files it will write. After
//! the write, each touched file that a usable server covers is synced and saved through that
//! server, the wrapper waits for diagnostics about the written text — never a publish left
//! from before ([`settle`]) — and reports what the write introduced (LSP-7) as a
//! [`WriteReport`]: in the written files, and in every file it did not touch whose diagnostics
//! it changed, as the project's checker would see them (SPEC section 11). Every written file
//! a server would cover gets a state: checked and clean, checked with errors still in it, or
//! not checked and why — silence never reads as clean.
//!
//! The files a write did not touch are reached per server ([`Reach`]):
//! - a server whose own check covers the project (rust-analyzer's `cargo check`,
//!   basedpyright's workspace analysis) publishes every file it checked: the files whose
//!   publishes changed during the settle are compared with the publishes before;
//! - tsserver is asked which files import a written one, transitively (`fileReferences`),
//!   and each is asked for its diagnostics;
//! - clangd: the translation units that include a written header, from the compilation
//!   database, are rebuilt against it; the header itself is judged through them.
//!
//! One deadline per call (`[lsp.on_write] timeout_seconds`) bounds every wait, server start
//! included; the dependents it leaves unchecked are counted in the report, with why.
//!
//! The baseline of LSP-7 — what a file had before the run's first write reached anything it
//! depends on — is taken before the tool runs for the files its arguments name (the text
//! still on disk) and for their dependents; files the arguments do not name (a rename's other
//! files) get theirs after the tool ran, from the text the tool says they had, sent unsaved.
//! For servers that publish the whole project, a file's first publish is its baseline.

mod baseline;
mod dependents;
mod includes;
mod judge;
mod report;
mod reported;
mod settle;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_lsp::lsp_types::{Diagnostic, Url};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;
use tools_core::{
    CallContext, FileReport, Next, ToolCall, ToolResult, ToolSpec, UncheckedDependents, Workspace,
    Wrapper, WriteReport, Writes,
};

use self::report::render_report;
use self::reported::Reported;
use self::settle::{seconds, settle_all};
use crate::config::OnWriteConfig;
use crate::lsp::with_progress;
use crate::render::merge_passes;
use crate::supervisor::LspSupervisor;
use tools_lsp_client::Error;
use tools_lsp_client::Published;
use tools_lsp_client::Session;
use tools_lsp_client::{Check, Pull, ServerSpec};

/// The most files that import a written one asked about after a write (tsserver), and the
/// most translation units rebuilt for a written header (clangd).
const DEPENDENTS_CAP: usize = 500;

/// How many dependents of one kind a report names as examples when it did not check them.
const UNCHECKED_SAMPLE: usize = 3;

/// Diagnostics on write for one run: wraps the writing tools, holds the LSP-7 registry.
pub struct DiagnosticsOnWrite {
    supervisor: LspSupervisor,
    config: OnWriteConfig,
    reported: Mutex<Reported>,
    /// (server, root) pairs that cannot run here, with why, learnt since the reload count
    /// noted with them: their files are not checked, at no cost, until `lsp reload`.
    unusable: Mutex<(u64, Unusable)>,
}

/// Why each (server, root) that cannot run here cannot.
type Unusable = HashMap<(String, PathBuf), String>;

/// A file to check and the server that covers it.
pub(crate) struct Target {
    pub(crate) path: PathBuf,
    pub(crate) shown: String,
    pub(crate) session: Arc<Session>,
}

/// A file the write did not touch, as its server sees it after the write.
struct OtherFile {
    path: PathBuf,
    session: Arc<Session>,
    diagnostics: Vec<Diagnostic>,
    /// What it had before the write, when the registry has no entry for it yet.
    before: Option<Vec<Diagnostic>>,
    text: Arc<str>,
}

/// A server's publishes as they stood before the written files were sent to it.
struct Snapshot {
    session: Arc<Session>,
    publishes: HashMap<Url, Published>,
}

/// A written header judged through the units that include it.
struct Header {
    path: PathBuf,
    shown: String,
    session: Arc<Session>,
    units: Vec<PathBuf>,
    /// Found without a compilation database (see [`Database::guessed`]).
    guessed: bool,
}

/// What the dependents of the written files came to.
#[derive(Default)]
struct Dependents {
    others: Vec<OtherFile>,
    unchecked: Vec<UncheckedDependents>,
    headers: Vec<JudgedHeader>,
}

/// A written header and the diagnostics of each unit that was rebuilt with it.
struct JudgedHeader {
    header: Header,
    through: Vec<Vec<Diagnostic>>,
}

impl DiagnosticsOnWrite {
    pub(crate) fn new(supervisor: LspSupervisor) -> Self {
        let config = supervisor.config().on_write.clone();
        DiagnosticsOnWrite {
            supervisor,
            config,
            reported: Mutex::new(Reported::default()),
            unusable: Mutex::new((0, HashMap::new())),
        }
    }

    fn reported(&self) -> MutexGuard<'_, Reported> {
        self.reported.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn knows(&self, path: &Path) -> bool {
        self.reported().knows(path)
    }

    async fn around_call(
        &self,
        context: &CallContext,
        writes: &Writes,
        next: Next<'_>,
    ) -> ToolResult {
        let workspace = &context.run.workspace;
        let deadline = Instant::now() + self.config.timeout();
        // The files the call will write, as it declared them from its arguments.
        let named: Vec<PathBuf> = dedup(&writes.files)
            .into_iter()
            .filter(|path| path.is_file())
            .collect();
        // What the named files held before the call: the text their dependents' baselines
        // are taken against when the tool does not report it.
        let mut previous: HashMap<PathBuf, String> = named
            .iter()
            .filter(|path| self.supervisor.client().covering(path).is_some())
            .filter_map(|path| {
                let bytes = tools_core::read_regular(path).ok()?;
                Some((path.clone(), String::from_utf8(bytes).ok()?))
            })
            .collect();
        tracing::debug!(files = named.len(), "diagnostics on write: before the tool");
        let (before, _) = self.targets(workspace, &named, deadline).await;
        if !before.is_empty() {
            with_progress(
                "checking the files before the write (once per file)",
                self.before_write(&before, deadline),
            )
            .await;
        }

        tracing::debug!("baselines taken; the tool runs");
        let mut result = next().await;
        tracing::debug!("the tool ran");
        if result.is_error || result.touched.is_empty() {
            return result;
        }
        let touched: Vec<PathBuf> = dedup(&result.touched);
        for path in touched.iter().filter(|path| !path.exists()) {
            self.reported().forget(path);
        }
        let existing: Vec<PathBuf> = touched.into_iter().filter(|p| p.is_file()).collect();
        let (targets, mut not_checked) = self.targets(workspace, &existing, deadline).await;
        if targets.is_empty() && not_checked.is_empty() {
            return result;
        }
        previous.extend(result.previous.iter().cloned());
        // The servers' publishes before anything written reaches them: the baseline of every
        // file they publish about while checking the write.
        let snapshots = snapshot(&targets);
        for session in distinct_sessions(&targets) {
            // Servers that do not watch files learn about other changed files now.
            session.rescan_disk().await;
        }
        // Written headers that units include are judged through those units.
        let (targets, headers) = self.split_headers(targets, deadline);
        self.earlier_baselines(&targets, &previous, &snapshots, deadline)
            .await;

        let all: Vec<(&Target, Option<&str>)> = targets.iter().map(|t| (t, None)).collect();
        let outcomes = with_progress(
            "waiting for the language servers to check the written files",
            settle_all(&all, deadline, self.config.timeout()),
        )
        .await;
        let dependents = with_progress(
            "checking the files that depend on the written ones",
            self.dependents(workspace, &targets, headers, &snapshots, deadline),
        )
        .await;
        let mut report = self.report(workspace, &targets, outcomes, dependents);
        report.files.append(&mut not_checked);
        append(&mut result, report);
        result
    }

    /// The files among `paths` that a usable server covers, with their sessions (started
    /// now if needed, within the deadline), and the reports of the covered files whose
    /// server cannot check them, with why — a file of a kind a server handles but with no
    /// project root is one. Servers known not to run here cost nothing.
    async fn targets(
        &self,
        workspace: &Workspace,
        paths: &[PathBuf],
        deadline: Instant,
    ) -> (Vec<Target>, Vec<FileReport>) {
        let mut not_checked = Vec::new();
        let mut wanted: Vec<(PathBuf, Arc<ServerSpec>, PathBuf)> = Vec::new();
        {
            let generation = self.supervisor.client().reloads();
            let mut unusable = self.unusable.lock().unwrap_or_else(|p| p.into_inner());
            if unusable.0 != generation {
                *unusable = (generation, HashMap::new());
            }
            for path in paths {
                let shown = workspace.display(path);
                let Some((spec, root)) = self.supervisor.client().covering(path) else {
                    // A file of a kind a server handles, outside every project of it.
                    if let Ok(spec) = self.supervisor.client().route(path)
                        && self.supervisor.client().root(&spec, path).is_err()
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
                    None => wanted.push((path.clone(), spec, root)),
                }
            }
        }
        let mut sessions: HashMap<(String, PathBuf), Result<Arc<Session>, String>> = HashMap::new();
        let mut targets = Vec::new();
        for (path, spec, root) in wanted {
            let key = (spec.name.clone(), root.clone());
            if !sessions.contains_key(&key) {
                let acquired =
                    tokio::time::timeout_at(deadline, self.supervisor.client().acquire(spec, root))
                        .await;
                let session = match acquired {
                    Ok(Ok(session)) => Ok(session),
                    Ok(Err(
                        error @ (Error::NoBinary { .. }
                        | Error::Reloaded { .. }
                        | Error::RestartBudget { .. }),
                    )) => {
                        tracing::debug!(%error, "diagnostics on write skips a server");
                        let reason = cannot_run(&key.0, &error);
                        let mut unusable = self.unusable.lock().unwrap_or_else(|p| p.into_inner());
                        unusable.1.insert(key.clone(), reason.clone());
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
                        "{} was still starting after {}s; call `lsp` with operation \
                         `diagnostics` on it in a while",
                        key.0,
                        seconds(self.config.timeout())
                    )),
                };
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
        (targets, not_checked)
    }
}

impl Wrapper for DiagnosticsOnWrite {
    /// Every tool that declares it writes files.
    fn wraps(&self, spec: &ToolSpec) -> bool {
        self.config.enabled && spec.writes_files
    }

    fn around<'a>(
        &'a self,
        context: &'a CallContext,
        _call: &'a ToolCall,
        writes: &'a Writes,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.around_call(context, writes, next))
    }
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

fn dedup(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    paths
        .iter()
        .filter(|path| seen.insert(path.as_path()))
        .cloned()
        .collect()
}

/// Each session of `targets` once.
fn distinct_sessions(targets: &[Target]) -> Vec<Arc<Session>> {
    let mut sessions: Vec<Arc<Session>> = Vec::new();
    for target in targets {
        if !sessions.iter().any(|s| Arc::ptr_eq(s, &target.session)) {
            sessions.push(Arc::clone(&target.session));
        }
    }
    sessions
}

/// What a server that only publishes said about `target` when its document held `text`, if
/// its last publish before the call was about exactly that text.
async fn published_for(
    target: &Target,
    text: &str,
    snapshots: &[Snapshot],
) -> Option<Vec<Diagnostic>> {
    let session = &target.session;
    if session.spec.pull != Pull::None || session.spec.check != Check::None {
        return None;
    }
    let uri = Url::from_file_path(&target.path).ok()?;
    let snapshot = snapshots
        .iter()
        .find(|s| Arc::ptr_eq(&s.session, session))?;
    let published = snapshot.publishes.get(&uri)?;
    let version = published.version?;
    let had = session.text_at(&target.path, version).await?;
    (*had == *text).then(|| merge_passes(published.diagnostics.clone()))
}

/// Each server's publishes before the written files are sent to it.
fn snapshot(targets: &[Target]) -> Vec<Snapshot> {
    distinct_sessions(targets)
        .into_iter()
        .map(|session| Snapshot {
            publishes: session.shared.publishes(),
            session,
        })
        .collect()
}

/// Puts the report under the tool's own text and into its structured result.
fn append(result: &mut ToolResult, report: WriteReport) {
    result.text.push_str(&render_report(&report));
    if let Some(Value::Object(structured)) = &mut result.structured
        && let Ok(value) = serde_json::to_value(&report)
    {
        structured.insert("diagnostics".to_owned(), value);
    }
}
