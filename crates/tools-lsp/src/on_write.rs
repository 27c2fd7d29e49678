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

mod settle;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_lsp::lsp_types::{Diagnostic, DiagnosticSeverity, Url};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;
use tools_core::{
    CallContext, FileReport, Next, ToolCall, ToolResult, ToolSpec, UncheckedDependents, Workspace,
    Wrapper, WriteReport, Writes,
};

use self::settle::{Outcome, project_settled, pull_files, seconds, settle_all};
use crate::config::OnWriteConfig;
use crate::includes::{Database, includers, is_header};
use crate::lsp::with_progress;
use crate::render::merge_passes;
use crate::report::{Checked, render_report, spread_fallout};
use crate::reported::{Hiding, Reported};
use crate::supervisor::LspSupervisor;
use tools_lsp_client::Error;
use tools_lsp_client::Published;
use tools_lsp_client::Session;
use tools_lsp_client::{Check, Pull, Reach, ServerSpec};

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
        self.earlier_baselines(&targets, &headers, &previous, &snapshots, deadline)
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

    /// Before the tool runs: the baselines of the named files the registry does not know
    /// (their text on disk, synced, saved and settled), of the files that depend on them,
    /// and, for a server that publishes the whole project, its settled publishes.
    async fn before_write(&self, targets: &[Target], deadline: Instant) {
        for session in distinct_sessions(targets) {
            session.rescan_disk().await;
        }
        let unknown: Vec<(&Target, Option<&str>)> = targets
            .iter()
            .filter(|target| !self.knows(&target.path))
            .map(|target| (target, None))
            .collect();
        if !unknown.is_empty() {
            let outcomes = settle_all(&unknown, deadline, self.config.timeout()).await;
            self.take_baselines(&unknown, outcomes);
        }
        for session in distinct_sessions(targets) {
            let written: Vec<PathBuf> = targets
                .iter()
                .filter(|t| Arc::ptr_eq(&t.session, &session))
                .map(|t| t.path.clone())
                .collect();
            match session.spec.reach {
                Reach::Publishes => {
                    // The first write waits for the project's first check: until it ends,
                    // a file's first publish is not its state before the write.
                    if project_settled(&session, deadline).await {
                        self.baseline_publishes(&session);
                    }
                }
                Reach::Importers => {
                    if let Some((importers, _)) =
                        session.importers(&written, DEPENDENTS_CAP, deadline).await
                    {
                        self.pull_baselines(&session, &importers, deadline).await;
                    }
                }
                Reach::Includers => {
                    let headers: Vec<PathBuf> =
                        written.into_iter().filter(|p| is_header(p)).collect();
                    if headers.is_empty() {
                        continue;
                    }
                    let database = database_of(&session);
                    let units = includers(&database, &session.root, &headers);
                    let unknown: Vec<PathBuf> =
                        units.into_iter().filter(|u| !self.knows(u)).collect();
                    let built = rebuild_units(&session, &unknown, deadline).await;
                    let mut reported = self.reported();
                    for (path, diagnostics, text) in built {
                        reported.baseline(&path, &diagnostics, Some(text));
                    }
                }
            }
        }
    }

    /// Takes what a server that checks the whole project by itself published, once its
    /// check settled before a write, as the baseline of every file the registry does not know
    /// yet (LSP-7: new means new since the run began, whichever file a later write breaks).
    /// Not for rust-analyzer, whose publishes carry only `cargo check`'s half of a file's
    /// diagnostics: its files' baselines are taken when they are settled.
    fn baseline_publishes(&self, session: &Session) {
        if session.spec.check == Check::None || session.spec.pull == Pull::Analysis {
            return;
        }
        let publishes = session.shared.publishes();
        let mut reported = self.reported();
        for (uri, published) in publishes {
            // Known files keep what they have (and cost nothing on every later write).
            if let Ok(path) = uri.to_file_path()
                && !reported.knows(&path)
            {
                reported.baseline(&path, &merge_passes(published.diagnostics), None);
            }
        }
    }

    /// Pulls the diagnostics of the files the registry does not know yet as their baseline.
    async fn pull_baselines(&self, session: &Arc<Session>, paths: &[PathBuf], deadline: Instant) {
        let unknown: Vec<(&Arc<Session>, &PathBuf)> = paths
            .iter()
            .filter(|path| !self.knows(path))
            .map(|path| (session, path))
            .collect();
        let pulled = pull_files(&unknown, deadline).await;
        let mut reported = self.reported();
        for (path, diagnostics, text) in pulled {
            reported.baseline(&path, &diagnostics, Some(text));
        }
    }

    /// After the tool ran, for the written files the registry does not know (the arguments
    /// did not name them): their baselines from the text the tool says they had, sent unsaved,
    /// and those of their dependents, asked while the server holds that text.
    async fn earlier_baselines(
        &self,
        targets: &[Target],
        headers: &[Header],
        previous: &HashMap<PathBuf, String>,
        snapshots: &[Snapshot],
        deadline: Instant,
    ) {
        let earlier: Vec<(&Target, Option<&str>)> = targets
            .iter()
            .filter(|target| !self.knows(&target.path))
            .filter_map(|target| {
                let text = previous.get(&target.path)?;
                Some((target, Some(text.as_str())))
            })
            .collect();
        // A server that only publishes may already have answered for the earlier text (it
        // was open before the call): its publish is the baseline. Sending that text again
        // would get no answer from clangd, which does not publish for a text it last built.
        let mut answered = Vec::new();
        for (target, text) in &earlier {
            if let Some(diagnostics) =
                published_for(target, text.unwrap_or_default(), snapshots).await
            {
                answered.push((*target, diagnostics));
            }
        }
        {
            let mut reported = self.reported();
            for (target, diagnostics) in &answered {
                let text = previous.get(&target.path).map(|t| Arc::from(t.as_str()));
                reported.baseline(&target.path, diagnostics, text);
            }
        }
        let earlier: Vec<(&Target, Option<&str>)> = earlier
            .into_iter()
            .filter(|(target, _)| !answered.iter().any(|(t, _)| std::ptr::eq(*t, *target)))
            .collect();
        if !earlier.is_empty() {
            let outcomes = settle_all(&earlier, deadline, self.config.timeout()).await;
            self.take_baselines(&earlier, outcomes);
            // tsserver now holds the earlier texts: their importers' baselines.
            for session in distinct_sessions(targets) {
                if session.spec.reach != Reach::Importers {
                    continue;
                }
                let written: Vec<PathBuf> = earlier
                    .iter()
                    .filter(|(t, _)| Arc::ptr_eq(&t.session, &session))
                    .map(|(t, _)| t.path.clone())
                    .collect();
                if let Some((importers, _)) =
                    session.importers(&written, DEPENDENTS_CAP, deadline).await
                {
                    self.pull_baselines(&session, &importers, deadline).await;
                }
            }
        }
        // A header clangd reads from the disk, which holds the new text already: units not
        // known yet have no earlier state to compare with, and are reported as such.
        let _ = headers;
    }

    /// Records what each file had before the write. A baseline that did not settle is not
    /// taken; the next write tries again.
    fn take_baselines(&self, items: &[(&Target, Option<&str>)], outcomes: Vec<Outcome>) {
        let mut reported = self.reported();
        for ((target, _), outcome) in items.iter().zip(outcomes) {
            if outcome.unchecked.is_none() {
                reported.baseline(&target.path, &outcome.diagnostics, Some(outcome.text));
            }
        }
    }

    /// Takes the written headers that units of a compilation database include out of the
    /// files to settle: each is judged through those units.
    fn split_headers(
        &self,
        targets: Vec<Target>,
        _deadline: Instant,
    ) -> (Vec<Target>, Vec<Header>) {
        let mut kept = Vec::new();
        let mut headers = Vec::new();
        let mut databases: HashMap<PathBuf, Database> = HashMap::new();
        for target in targets {
            if target.session.spec.reach != Reach::Includers || !is_header(&target.path) {
                kept.push(target);
                continue;
            }
            let database = databases
                .entry(target.session.root.clone())
                .or_insert_with(|| database_of(&target.session));
            let units = includers(
                database,
                &target.session.root,
                std::slice::from_ref(&target.path),
            );
            match units.is_empty() {
                true => kept.push(target),
                false => headers.push(Header {
                    path: target.path,
                    shown: target.shown,
                    session: target.session,
                    units,
                    guessed: database.guessed,
                }),
            }
        }
        (kept, headers)
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
                    if let Ok(spec) = self.supervisor.client().route(path, &shown)
                        && let Err(error) = self.supervisor.client().root(&spec, path, &shown)
                    {
                        not_checked.push(FileReport::not_checked(
                            shown,
                            spec.name.clone(),
                            no_root(&spec, &error),
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
                    Ok(Err(error @ (Error::Unusable(_) | Error::RestartBudget { .. }))) => {
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

    /// The files the write did not touch whose diagnostics its servers have now, and the
    /// dependents that could not be checked.
    async fn dependents(
        &self,
        workspace: &Workspace,
        targets: &[Target],
        headers: Vec<Header>,
        snapshots: &[Snapshot],
        deadline: Instant,
    ) -> Dependents {
        let written: HashSet<PathBuf> = targets
            .iter()
            .map(|t| t.path.clone())
            .chain(headers.iter().map(|h| h.path.clone()))
            .collect();
        let mut found = Dependents::default();
        let mut sessions = distinct_sessions(targets);
        for header in &headers {
            if !sessions.iter().any(|s| Arc::ptr_eq(s, &header.session)) {
                sessions.push(Arc::clone(&header.session));
            }
        }
        for session in sessions {
            match session.spec.reach {
                Reach::Publishes => {
                    let Some(snapshot) =
                        snapshots.iter().find(|s| Arc::ptr_eq(&s.session, &session))
                    else {
                        continue;
                    };
                    for (uri, published) in session.shared.publishes() {
                        let before = snapshot.publishes.get(&uri);
                        if before.is_some_and(|b| b.count == published.count) {
                            continue;
                        }
                        let Ok(path) = uri.to_file_path() else {
                            continue;
                        };
                        if written.contains(&path) || !path.starts_with(workspace.root()) {
                            continue;
                        }
                        let text = crate::render::read_text(&path)
                            .map(Arc::from)
                            .unwrap_or_else(|_| Arc::from(""));
                        found.others.push(OtherFile {
                            path,
                            session: Arc::clone(&session),
                            diagnostics: merge_passes(published.diagnostics),
                            before: Some(before.map(|b| b.diagnostics.clone()).unwrap_or_default()),
                            text,
                        });
                    }
                }
                Reach::Importers => {
                    let paths: Vec<PathBuf> = targets
                        .iter()
                        .filter(|t| Arc::ptr_eq(&t.session, &session))
                        .map(|t| t.path.clone())
                        .collect();
                    let Some((importers, capped)) =
                        session.importers(&paths, DEPENDENTS_CAP, deadline).await
                    else {
                        continue;
                    };
                    let asked: Vec<(&Arc<Session>, &PathBuf)> =
                        importers.iter().map(|path| (&session, path)).collect();
                    let pulled = pull_files(&asked, deadline).await;
                    let answered: HashSet<PathBuf> =
                        pulled.iter().map(|(path, _, _)| path.clone()).collect();
                    let mut missing: Vec<&PathBuf> = importers
                        .iter()
                        .filter(|p| !answered.contains(*p))
                        .collect();
                    missing.sort();
                    if !missing.is_empty() {
                        found.unchecked.push(UncheckedDependents {
                            server: session.spec.name.clone(),
                            count: missing.len(),
                            reason: format!(
                                "they import a written file, and were not checked within the \
                                 write's {}s",
                                seconds(self.config.timeout())
                            ),
                            sample: missing
                                .iter()
                                .take(UNCHECKED_SAMPLE)
                                .map(|p| workspace.display(p))
                                .collect(),
                        });
                    }
                    if capped {
                        found.unchecked.push(UncheckedDependents {
                            server: session.spec.name.clone(),
                            count: 0,
                            reason: format!(
                                "more files import the written ones than the {DEPENDENTS_CAP} \
                                 asked about (or the search ran out of time); run `lsp` with \
                                 operation `diagnostics` and file `*` for the whole project"
                            ),
                            sample: Vec::new(),
                        });
                    }
                    for (path, diagnostics, text) in pulled {
                        found.others.push(OtherFile {
                            path,
                            session: Arc::clone(&session),
                            diagnostics,
                            before: None,
                            text,
                        });
                    }
                }
                Reach::Includers => {}
            }
        }
        for header in headers {
            let units: Vec<PathBuf> = header.units.iter().take(DEPENDENTS_CAP).cloned().collect();
            let built = rebuild_units(&header.session, &units, deadline).await;
            let answered: HashSet<&PathBuf> = built.iter().map(|(p, _, _)| p).collect();
            let missing: Vec<&PathBuf> = header
                .units
                .iter()
                .filter(|unit| !answered.contains(unit))
                .collect();
            if !missing.is_empty() {
                found.unchecked.push(UncheckedDependents {
                    server: header.session.spec.name.clone(),
                    count: missing.len(),
                    reason: format!(
                        "they include {}, and were not rebuilt within the write's {}s",
                        header.shown,
                        seconds(self.config.timeout())
                    ),
                    sample: missing
                        .iter()
                        .take(UNCHECKED_SAMPLE)
                        .map(|p| workspace.display(p))
                        .collect(),
                });
            }
            let mut through = Vec::new();
            for (path, diagnostics, text) in built {
                if !written.contains(&path) {
                    through.push(diagnostics.clone());
                    found.others.push(OtherFile {
                        path,
                        session: Arc::clone(&header.session),
                        diagnostics,
                        before: None,
                        text,
                    });
                }
            }
            found.headers.push(JudgedHeader { header, through });
        }
        found
    }

    /// Whether the run reports a diagnostic of this severity.
    fn listed(&self, diagnostic: &Diagnostic) -> bool {
        match diagnostic.severity {
            Some(DiagnosticSeverity::ERROR) | None => true,
            Some(DiagnosticSeverity::WARNING) => self.config.warnings,
            _ => false,
        }
    }

    /// Takes each settled file's diagnostics into the registry (written files and the others
    /// alike) and builds the report. A write that introduced errors somewhere a server
    /// checks may have hidden others there (a library that no longer compiles hides its
    /// tests'): the counts that fell under it are held, so their return is not news.
    fn report(
        &self,
        workspace: &Workspace,
        targets: &[Target],
        outcomes: Vec<Outcome>,
        dependents: Dependents,
    ) -> WriteReport {
        let root = workspace.root();
        let mut report = WriteReport {
            unchecked_dependents: dependents.unchecked,
            ..WriteReport::default()
        };
        let mut reported = self.reported();
        // Files seen for the first time: what they have now is their baseline.
        let mut others = Vec::new();
        for other in dependents.others {
            if !reported.knows(&other.path) {
                match &other.before {
                    Some(before) => {
                        reported.baseline(&other.path, before, Some(Arc::clone(&other.text)))
                    }
                    None => {
                        reported.baseline(
                            &other.path,
                            &other.diagnostics,
                            Some(Arc::clone(&other.text)),
                        );
                        continue;
                    }
                }
            }
            others.push(other);
        }
        // What each file's publish introduced, before any is taken.
        let written: Vec<(&Target, &Outcome, Vec<&Diagnostic>)> = targets
            .iter()
            .zip(&outcomes)
            .filter(|(_, outcome)| outcome.unchecked.is_none())
            .map(|(target, outcome)| {
                let found = reported
                    .assess(&target.path, &outcome.diagnostics, Some(&outcome.text))
                    .diagnostics
                    .into_iter()
                    .filter(|d| self.listed(d))
                    .collect();
                (target, outcome, found)
            })
            .collect();
        let fallout: Vec<(&OtherFile, Vec<&Diagnostic>)> = others
            .iter()
            .map(|other| {
                let found = reported
                    .assess(&other.path, &other.diagnostics, Some(&other.text))
                    .diagnostics
                    .into_iter()
                    .filter(|d| self.listed(d))
                    .collect();
                (other, found)
            })
            .collect();
        // Sessions in which this write introduced an error.
        let introduced_errors = |session: &Arc<Session>| {
            let is_error = |d: &&Diagnostic| d.severity == Some(DiagnosticSeverity::ERROR);
            written
                .iter()
                .any(|(t, _, found)| Arc::ptr_eq(&t.session, session) && found.iter().any(is_error))
                || fallout.iter().any(|(o, found)| {
                    Arc::ptr_eq(&o.session, session) && found.iter().any(is_error)
                })
        };
        let hiding = |session: &Arc<Session>| match introduced_errors(session) {
            true => Hiding::MayHide,
            false => Hiding::Fixes,
        };
        for (target, outcome) in targets.iter().zip(&outcomes) {
            let server = target.session.spec.name.clone();
            match &outcome.unchecked {
                Some(reason) => {
                    // The registry keeps what it knew; what this write introduced is reported
                    // by the next write that settles.
                    report.files.push(FileReport::not_checked(
                        target.shown.clone(),
                        server,
                        reason.clone(),
                    ));
                }
                None => {
                    let found = written
                        .iter()
                        .find(|(t, _, _)| std::ptr::eq(*t, target))
                        .map(|(_, _, found)| found.clone())
                        .unwrap_or_default();
                    report.files.push(
                        Checked {
                            shown: target.shown.clone(),
                            server,
                            diagnostics: &outcome.diagnostics,
                            introduced: found,
                            text: &outcome.text,
                            through: None,
                        }
                        .report(root, self.config.per_file),
                    );
                }
            }
        }
        for (other, found) in &fallout {
            report.fallout.push(
                Checked {
                    shown: workspace.display(&other.path),
                    server: other.session.spec.name.clone(),
                    diagnostics: &other.diagnostics,
                    introduced: found.clone(),
                    text: &other.text,
                    through: None,
                }
                .report(root, crate::report::FALLOUT_LINES),
            );
        }
        let hidings: Vec<(Arc<Session>, Hiding)> = targets
            .iter()
            .map(|t| &t.session)
            .chain(others.iter().map(|o| &o.session))
            .map(|s| (Arc::clone(s), hiding(s)))
            .collect();
        let hiding_of = |session: &Arc<Session>| {
            hidings
                .iter()
                .find(|(s, _)| Arc::ptr_eq(s, session))
                .map_or(Hiding::Fixes, |(_, h)| *h)
        };
        for (target, outcome) in targets.iter().zip(&outcomes) {
            if outcome.unchecked.is_none() {
                reported.take(
                    &target.path,
                    &outcome.diagnostics,
                    Some(Arc::clone(&outcome.text)),
                    hiding_of(&target.session),
                );
            }
        }
        for other in &others {
            reported.take(
                &other.path,
                &other.diagnostics,
                Some(Arc::clone(&other.text)),
                hiding_of(&other.session),
            );
        }
        drop(reported);
        for judged in dependents.headers {
            report
                .files
                .push(header_report(&judged.header, &judged.through));
        }
        spread_fallout(&mut report.fallout);
        report
    }
}

/// A written header's state, from the units that include it: clangd reports an error in an
/// included file once per including unit, at the `#include` line, as "In included file: …"
/// with the header's own line in a note.
fn header_report(header: &Header, through: &[Vec<Diagnostic>]) -> FileReport {
    let server = header.session.spec.name.clone();
    if through.is_empty() {
        return FileReport::not_checked(
            header.shown.clone(),
            server,
            format!(
                "none of the {} that include it was rebuilt in time",
                crate::render::plural(header.units.len(), "file")
            ),
        );
    }
    let name = header
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut places: HashSet<String> = HashSet::new();
    for diagnostics in through {
        for diagnostic in diagnostics {
            if diagnostic.severity != Some(DiagnosticSeverity::ERROR)
                || !diagnostic.message.starts_with("In included file:")
            {
                continue;
            }
            // "In included file: expected expression\n\nlib/x.h:354:9:\nnote: error occurred here"
            let place = diagnostic
                .message
                .lines()
                .find(|line| line.contains(&name) && line.contains(':'))
                .map(str::to_owned)
                .unwrap_or_else(|| diagnostic.message.clone());
            places.insert(place);
        }
    }
    let mut file = FileReport::checked(header.shown.clone(), server, places.len(), 0);
    let mut through_text = format!(
        "through the {} that include it",
        crate::render::plural(through.len(), "file")
    );
    if header.guessed {
        through_text.push_str(
            ", found without a compile database: files that reach it through `-I` may be \
             missing",
        );
    }
    if !places.is_empty() {
        through_text.push_str(
            "; clangd names only the first error of a header in each, so there may be more \
             — the errors above show where",
        );
    }
    file.checked_through = Some(through_text);
    file
}

/// The translation units of a clangd session's root.
fn database_of(session: &Session) -> Database {
    crate::includes::database(&session.root)
}

/// Rebuilds each unit on its server (closed and opened again, so it is built against the
/// headers on disk now) and waits, until `deadline`, for its publish.
async fn rebuild_units(
    session: &Arc<Session>,
    units: &[PathBuf],
    deadline: Instant,
) -> Vec<(PathBuf, Vec<Diagnostic>, Arc<str>)> {
    let mut waits = Vec::new();
    for unit in units {
        let Ok(uri) = Url::from_file_path(unit) else {
            continue;
        };
        session.close(unit).await;
        let before = session.shared.publish_count(&uri);
        let Ok(synced) = session.sync(unit).await else {
            continue;
        };
        waits.push((unit.clone(), uri, before, synced));
    }
    let shared = &session.shared;
    let answers = futures::future::join_all(waits.into_iter().map(
        |(path, uri, before, synced)| async move {
            let text = synced.text;
            shared
                .wait_version_until(&uri, before, synced.version, deadline)
                .await
                .then(|| {
                    let diagnostics = shared
                        .published(&uri)
                        .map(|p| p.diagnostics)
                        .unwrap_or_default();
                    (path, merge_passes(diagnostics), text)
                })
        },
    ))
    .await;
    answers.into_iter().flatten().collect()
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
        Error::Unusable(message) if message.contains("not found") => {
            format!(
                "{server} is not installed here; `lsp` with operation `status` says where it was looked for"
            )
        }
        _ => format!("{server} cannot run here; `lsp` with operation `status` says why"),
    }
}

/// Why a file of a server's kind outside every project of that server is not checked.
fn no_root(spec: &ServerSpec, _error: &Error) -> String {
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
