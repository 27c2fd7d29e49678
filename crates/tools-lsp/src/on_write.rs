//! Diagnostics on write (LSP-6): a dispatch wrapper around every tool that declares it writes
//! files (`Tool::WRITES_FILES`), knowing before the call which files it will write. After
//! the write, each touched file that a usable server covers is synced and saved through that
//! server, the wrapper waits for diagnostics about the written text — never a publish left
//! from before — and appends what the write introduced (LSP-7) to the tool's own result:
//! in the written files, and in files it did not touch but broke (its fallout, found as
//! [`crate::fallout`] says). Every written file a server would cover gets a state: checked
//! and clean, checked with errors still in it, or not checked and why — silence never reads
//! as clean (SPEC section 10).
//!
//! "Fresh" is decided per server, with no fixed sleeps:
//! - a server that answers pulls (basedpyright; typescript-language-server through tsserver)
//!   is asked after the sync; the answer is about the text just sent;
//! - a server that checks on save (rust-analyzer's `cargo check`) is done when a check that
//!   began after our save has ended: until then its publishes still carry the previous
//!   check's findings, even when they name the new document version. rust-analyzer's own
//!   analysis is then pulled for the text just sent: published, it may come after the check
//!   ended, or be skipped for a version a newer one replaced;
//! - any other server is done at the first publish after the sync whose version (when the
//!   server echoes one) is the synced one, followed by a short quiet period, since several
//!   servers publish a quick result first and a full one soon after.
//!
//! Every wait ends at one deadline per call (`[lsp.on_write] timeout_seconds`); a file that
//! did not settle by then is reported as not checked, with the reason.
//!
//! The baseline of LSP-7 — what a file had before the run's first write to it — is taken
//! before the tool runs for the files its arguments name, by the same sync-save-wait on the
//! text still on disk (the first write to each file pays for that check once); files the
//! arguments do not name (a rename's other files, a resolved edit's) get it after the tool
//! ran, from the text the tool says they had, sent unsaved. The files that import a written
//! module get theirs the same way: asked while the server holds the written files' earlier
//! text. Files a checking server published about get theirs from its publishes as they stood
//! before the written files were sent.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_lsp::lsp_types::{Diagnostic, DiagnosticSeverity, Url};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;
use tools_core::{
    CallContext, CheckedFile, Next, ToolCall, ToolResult, ToolSpec, Workspace, Wrapper,
    WriteDiagnostics, Writes, WrittenDiagnostic,
};

use crate::Error;
use crate::client::Published;
use crate::config::OnWriteConfig;
use crate::fallout::{IMPORTERS_CAP, importers, is_header};
use crate::lsp::{DiagnosticItem, render_diagnostic, with_progress};
use crate::position::lines;
use crate::render::{code_text, merge_passes, one_line, plural, quote, severity_name};
use crate::reported::Reported;
use crate::servers::{Pull, ServerSpec};
use crate::session::{Activity, Session};
use crate::supervisor::LspSupervisor;

/// How many diagnostics introduced in files a write did not touch are listed, over all of
/// them; the rest are counted per file.
const FALLOUT_LINES: usize = 10;

/// How many open documents that include a written header are waited for.
const RECHECKED_DOCUMENTS: usize = 30;

/// How long, at most, a server gets to publish again for the open documents that include a
/// written header (clangd rebuilds them within a second or two).
const REBUILD_WAIT: Duration = Duration::from_secs(5);

/// How long a file stays quiet after its server's on-save check ended before it counts as
/// settled: the check's last publish comes before its end, but a server may clear old
/// findings just after it.
const AFTER_CHECK_QUIET: Duration = Duration::from_millis(5);

/// The quiet period after a fresh publish from a server that neither answers pulls nor runs
/// an on-save check (clangd, typescript-language-server publish a quick result, then more).
const PUBLISH_QUIET: Duration = Duration::from_millis(150);

/// The least time a pull of a server's own analysis gets after its check ended, even at the
/// deadline: the check is the slow part, and its findings are in.
const MIN_PULL: Duration = Duration::from_secs(2);

/// How long a server that checks on save gets, once it is ready, to begin its check before
/// the wrapper stops expecting one (the file may be outside every crate, or checking may be
/// off in the server's own config files). A server still loading its workspace defers the
/// check until it has, so the time counts from readiness.
const CHECK_START: Duration = Duration::from_secs(3);

/// rust-analyzer's code for a file no crate's module tree reaches: it is not checked.
const UNLINKED_FILE: &str = "unlinked-file";

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
struct Target {
    path: PathBuf,
    shown: String,
    session: Arc<Session>,
}

/// A written file a server would cover but that was not checked, and why.
struct NotChecked {
    shown: String,
    server: String,
    reason: String,
}

/// What a server said about a file once it settled, or why it did not.
struct Outcome {
    diagnostics: Vec<Diagnostic>,
    /// `None` when the server answered for the text; otherwise why it did not.
    unchecked: Option<String>,
    text: Arc<str>,
}

impl Outcome {
    fn unchecked(reason: String, text: Arc<str>) -> Self {
        Outcome {
            diagnostics: Vec::new(),
            unchecked: Some(reason),
            text,
        }
    }
}

/// A file the write did not touch, as its server sees it after the write.
struct OtherFile {
    path: PathBuf,
    server: String,
    diagnostics: Vec<Diagnostic>,
    /// What it had before the write, when the registry has no entry for it yet.
    before: Option<Vec<Diagnostic>>,
}

/// A server's publishes as they stood before the written files were sent to it.
struct Snapshot {
    session: Arc<Session>,
    publishes: HashMap<Url, Published>,
}

impl DiagnosticsOnWrite {
    pub(crate) fn new(supervisor: LspSupervisor) -> Self {
        let config = supervisor.context().config.on_write.clone();
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
        // What the named files held before the call: the baseline text of the files that
        // import them (the tool itself reports it only for files its arguments do not name).
        let mut previous: HashMap<PathBuf, String> = named
            .iter()
            .filter(|path| self.supervisor.covering(path).is_some())
            .filter_map(|path| {
                let bytes = tools_core::read_regular(path).ok()?;
                Some((path.clone(), String::from_utf8(bytes).ok()?))
            })
            .collect();
        // LSP-7: a file's diagnostics before the run's first write to it are not news.
        let unknown_named: Vec<PathBuf> = named
            .into_iter()
            .filter(|path| !self.reported().knows(path))
            .collect();
        if !unknown_named.is_empty() {
            let (targets, _) = self.targets(workspace, &unknown_named, deadline).await;
            let items: Vec<(&Target, Option<&str>)> = targets.iter().map(|t| (t, None)).collect();
            let outcomes = with_progress(
                "checking the files before the write (once per file)",
                settle_all(&items, deadline, self.config.timeout()),
            )
            .await;
            self.take_baselines(&items, outcomes);
        }

        let mut result = next().await;
        if result.is_error || result.touched.is_empty() {
            return result;
        }
        let touched: Vec<PathBuf> = dedup(&result.touched);
        for path in touched.iter().filter(|path| !path.exists()) {
            self.reported().forget(path);
        }
        let existing: Vec<PathBuf> = touched.into_iter().filter(|p| p.is_file()).collect();
        let (targets, not_checked) = self.targets(workspace, &existing, deadline).await;
        if targets.is_empty() && not_checked.is_empty() {
            return result;
        }
        previous.extend(result.previous.iter().cloned());
        let snapshots = snapshot(&targets);
        let importers = self.importers(&targets).await;

        // LSP-7 baselines taken after the call, from the texts the files had before it: the
        // written files the arguments did not name, and the importers the registry does not
        // know yet (asked while the server holds every written file's earlier text).
        let unknown_importers: Vec<(&Arc<Session>, &PathBuf)> = importers
            .iter()
            .flat_map(|(session, paths)| paths.iter().map(move |path| (session, path)))
            .filter(|(_, path)| !self.reported().knows(path))
            .collect();
        let earlier: Vec<(&Target, Option<&str>)> = targets
            .iter()
            .filter(|target| {
                !self.reported().knows(&target.path)
                    || unknown_importers
                        .iter()
                        .any(|(session, _)| Arc::ptr_eq(session, &target.session))
            })
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
                published_for(target, text.unwrap_or_default(), &snapshots).await
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
            let pulled = pull_files(&unknown_importers, deadline).await;
            let mut reported = self.reported();
            for (path, diagnostics, text) in pulled {
                reported.baseline(&path, &diagnostics, Some(text));
            }
        }

        let all: Vec<(&Target, Option<&str>)> = targets.iter().map(|t| (t, None)).collect();
        let outcomes = with_progress(
            "waiting for the language servers to check the written files",
            settle_all(&all, deadline, self.config.timeout()),
        )
        .await;
        let mut report = self.report(workspace, &targets, outcomes);
        for file in not_checked {
            report.files.push(CheckedFile {
                path: file.shown,
                server: file.server,
                settled: false,
                errors: 0,
                warnings: 0,
                introduced: 0,
                omitted: 0,
                unchecked: Some(file.reason),
            });
        }
        let others = self
            .other_files(workspace, &targets, &snapshots, &importers, deadline)
            .await;
        self.report_fallout(workspace, others, &mut report);
        append(&mut result, report);
        result
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

    /// The files among `paths` that a usable server covers, with their sessions (started
    /// now if needed, within the deadline), and the covered files whose server cannot check
    /// them, with why. Files no server covers cost a look at their folders; servers known not
    /// to run here cost nothing.
    async fn targets(
        &self,
        workspace: &Workspace,
        paths: &[PathBuf],
        deadline: Instant,
    ) -> (Vec<Target>, Vec<NotChecked>) {
        let mut not_checked = Vec::new();
        let mut wanted: Vec<(PathBuf, Arc<ServerSpec>, PathBuf)> = Vec::new();
        {
            let generation = self.supervisor.reloads();
            let mut unusable = self.unusable.lock().unwrap_or_else(|p| p.into_inner());
            if unusable.0 != generation {
                *unusable = (generation, HashMap::new());
            }
            for path in paths {
                let Some((spec, root)) = self.supervisor.covering(path) else {
                    continue;
                };
                match unusable.1.get(&(spec.name.clone(), root.clone())) {
                    Some(reason) => not_checked.push(NotChecked {
                        shown: workspace.display(path),
                        server: spec.name.clone(),
                        reason: reason.clone(),
                    }),
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
                    tokio::time::timeout_at(deadline, self.supervisor.acquire(spec, root)).await;
                let session = match acquired {
                    Ok(Ok(session)) => {
                        // Servers that do not watch files learn about other changed files.
                        session.rescan_disk().await;
                        Ok(session)
                    }
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
                Some(Err(reason)) => not_checked.push(NotChecked {
                    shown: workspace.display(&path),
                    server: key.0.clone(),
                    reason: reason.clone(),
                }),
                None => {}
            }
        }
        (targets, not_checked)
    }

    /// For each server that answers pulls, the files that import one of its written files.
    async fn importers(&self, targets: &[Target]) -> Vec<(Arc<Session>, Vec<PathBuf>)> {
        let mut found = Vec::new();
        for session in distinct_sessions(targets) {
            if !matches!(session.spec.pull, Pull::Lsp | Pull::TsServer) {
                continue;
            }
            let written: Vec<PathBuf> = targets
                .iter()
                .filter(|t| Arc::ptr_eq(&t.session, &session))
                .map(|t| t.path.clone())
                .collect();
            let spec = Arc::clone(&session.spec);
            let root = session.root.clone();
            let paths = tokio::task::spawn_blocking(move || {
                importers(&spec, &root, &written, IMPORTERS_CAP)
            })
            .await
            .unwrap_or_default();
            if !paths.is_empty() {
                found.push((session, paths));
            }
        }
        found
    }

    /// The files the write did not touch whose diagnostics its servers have now: the
    /// importers of written modules (pulled), and the files a server published about while it
    /// checked the write (after rebuilding its open documents, when a header was written).
    async fn other_files(
        &self,
        workspace: &Workspace,
        targets: &[Target],
        snapshots: &[Snapshot],
        importers: &[(Arc<Session>, Vec<PathBuf>)],
        deadline: Instant,
    ) -> Vec<OtherFile> {
        let written: HashSet<&Path> = targets.iter().map(|t| t.path.as_path()).collect();
        let mut others = Vec::new();
        let asked: Vec<(&Arc<Session>, &PathBuf)> = importers
            .iter()
            .flat_map(|(session, paths)| paths.iter().map(move |path| (session, path)))
            .collect();
        for (path, diagnostics, _) in pull_files(&asked, deadline).await {
            let server = asked
                .iter()
                .find(|(_, p)| **p == path)
                .map(|(session, _)| session.spec.name.clone())
                .unwrap_or_default();
            others.push(OtherFile {
                path,
                server,
                diagnostics,
                before: None,
            });
        }
        for snapshot in snapshots {
            let session = &snapshot.session;
            if matches!(session.spec.pull, Pull::Lsp | Pull::TsServer) {
                continue;
            }
            let header_written = targets
                .iter()
                .any(|t| Arc::ptr_eq(&t.session, session) && is_header(&t.path));
            if header_written {
                rebuild_open(session, &written, &snapshot.publishes, deadline).await;
            }
            for (uri, published) in session.shared.publishes() {
                let before = snapshot.publishes.get(&uri);
                if before.is_some_and(|b| b.count == published.count) {
                    continue;
                }
                let Ok(path) = uri.to_file_path() else {
                    continue;
                };
                if written.contains(path.as_path()) || !path.starts_with(workspace.root()) {
                    continue;
                }
                others.push(OtherFile {
                    path,
                    server: session.spec.name.clone(),
                    diagnostics: merge_passes(published.diagnostics),
                    before: Some(before.map(|b| b.diagnostics.clone()).unwrap_or_default()),
                });
            }
        }
        others
    }

    /// Whether the run reports a diagnostic of this severity.
    fn listed(&self, diagnostic: &Diagnostic) -> bool {
        match diagnostic.severity {
            Some(DiagnosticSeverity::ERROR) | None => true,
            Some(DiagnosticSeverity::WARNING) => self.config.warnings,
            _ => false,
        }
    }

    /// Takes each settled file's diagnostics into the registry and lists what is new.
    fn report(
        &self,
        workspace: &Workspace,
        targets: &[Target],
        outcomes: Vec<Outcome>,
    ) -> WriteDiagnostics {
        let mut report = WriteDiagnostics::default();
        let mut reported = self.reported();
        for (target, outcome) in targets.iter().zip(outcomes) {
            let server = target.session.spec.name.clone();
            let mut file = CheckedFile {
                path: target.shown.clone(),
                server: server.clone(),
                settled: outcome.unchecked.is_none(),
                errors: count(&outcome.diagnostics, DiagnosticSeverity::ERROR),
                warnings: count(&outcome.diagnostics, DiagnosticSeverity::WARNING),
                introduced: 0,
                omitted: 0,
                unchecked: outcome.unchecked.clone(),
            };
            if outcome.unchecked.is_some() {
                // The registry keeps what it knew; what this write introduced is reported
                // by the next write that settles.
                report.files.push(file);
                continue;
            }
            let introduced = reported.introduced(
                &target.path,
                &outcome.diagnostics,
                Some(Arc::clone(&outcome.text)),
            );
            let mut listed: Vec<&Diagnostic> = introduced
                .diagnostics
                .into_iter()
                .filter(|d| self.listed(d))
                .collect();
            listed.sort_by_key(|d| {
                (
                    d.severity != Some(DiagnosticSeverity::ERROR),
                    d.range.start.line,
                )
            });
            let shown = listed.len().min(self.config.per_file);
            file.introduced = listed.len();
            file.omitted = listed.len() - shown;
            report.omitted += file.omitted;
            report.files.push(file);
            let text_lines = lines(&outcome.text);
            for diagnostic in listed.into_iter().take(shown) {
                report.introduced.push(written(
                    &target.shown,
                    diagnostic,
                    &text_lines,
                    workspace.root(),
                ));
            }
        }
        report
    }

    /// Takes the other files' diagnostics into the registry (LSP-7 holds for them as for
    /// written files) and lists what is new there, at most [`FALLOUT_LINES`] over all files.
    fn report_fallout(
        &self,
        workspace: &Workspace,
        others: Vec<OtherFile>,
        report: &mut WriteDiagnostics,
    ) {
        let mut per_file: Vec<(String, CheckedFile, Vec<WrittenDiagnostic>)> = Vec::new();
        let mut reported = self.reported();
        for other in others {
            let text: Option<Arc<str>> = crate::render::read_text(&other.path).ok().map(Into::into);
            if let Some(before) = &other.before
                && !reported.knows(&other.path)
            {
                reported.baseline(&other.path, before, text.clone());
            }
            if !reported.knows(&other.path) {
                // Nothing to compare with: what it has now is its baseline, and nothing in it
                // is counted as this write's doing.
                reported.baseline(&other.path, &other.diagnostics, text);
                continue;
            }
            let introduced = reported.introduced(&other.path, &other.diagnostics, text.clone());
            let mut listed: Vec<&Diagnostic> = introduced
                .diagnostics
                .into_iter()
                .filter(|d| self.listed(d))
                .collect();
            if listed.is_empty() {
                continue;
            }
            listed.sort_by_key(|d| {
                (
                    d.severity != Some(DiagnosticSeverity::ERROR),
                    d.range.start.line,
                )
            });
            let shown = workspace.display(&other.path);
            let text = text.unwrap_or_else(|| "".into());
            let text_lines = lines(&text);
            let items: Vec<WrittenDiagnostic> = listed
                .iter()
                .map(|d| written(&shown, d, &text_lines, workspace.root()))
                .collect();
            let file = CheckedFile {
                path: shown.clone(),
                server: other.server,
                settled: true,
                errors: count(&other.diagnostics, DiagnosticSeverity::ERROR),
                warnings: count(&other.diagnostics, DiagnosticSeverity::WARNING),
                introduced: items.len(),
                omitted: 0,
                unchecked: None,
            };
            per_file.push((shown, file, items));
        }
        per_file.sort_by(|a, b| a.0.cmp(&b.0));
        // Spread the lines across files: each file's first, then each file's second, …
        let mut taken = vec![0usize; per_file.len()];
        let mut room = FALLOUT_LINES;
        let mut round = 0;
        while room > 0 {
            let mut any = false;
            for (index, (_, _, items)) in per_file.iter().enumerate() {
                if room > 0 && round < items.len() {
                    taken[index] += 1;
                    room -= 1;
                    any = true;
                }
            }
            if !any {
                break;
            }
            round += 1;
        }
        for ((_, mut file, items), take) in per_file.into_iter().zip(taken) {
            file.omitted = items.len() - take;
            report.fallout.extend(items.into_iter().take(take));
            report.fallout_files.push(file);
        }
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
        Error::Unusable(message) if message.contains("not found") => {
            format!(
                "{server} is not installed here; `lsp` with operation `status` says where it was looked for"
            )
        }
        _ => format!("{server} cannot run here; `lsp` with operation `status` says why"),
    }
}

fn count(diagnostics: &[Diagnostic], severity: DiagnosticSeverity) -> usize {
    diagnostics
        .iter()
        .filter(|d| d.severity == Some(severity))
        .count()
}

/// One introduced diagnostic as a result lists it.
fn written(
    shown: &str,
    diagnostic: &Diagnostic,
    text_lines: &[&str],
    root: &Path,
) -> WrittenDiagnostic {
    let line = diagnostic.range.start.line;
    // Servers fold related places into the message with absolute paths (clangd's notes).
    let prefix = format!("{}/", root.display());
    WrittenDiagnostic {
        path: shown.to_owned(),
        line: line + 1,
        severity: severity_name(diagnostic.severity).to_owned(),
        code: code_text(diagnostic.code.as_ref()),
        message: one_line(&diagnostic.message.replace(&prefix, "")),
        text: text_lines
            .get(line as usize)
            .map(|l| quote(l))
            .unwrap_or_default(),
    }
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
    if session.spec.pull != Pull::None || session.spec.check_progress.is_some() {
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

/// Opens (or re-syncs) each file on its server and pulls its diagnostics, all at once, until
/// `deadline` (at least [`MIN_PULL`]); a file whose pull fails is left out.
async fn pull_files(
    files: &[(&Arc<Session>, &PathBuf)],
    deadline: Instant,
) -> Vec<(PathBuf, Vec<Diagnostic>, Arc<str>)> {
    let pulls = files.iter().map(|(session, path)| async move {
        let synced = session.sync(path).await.ok()?;
        let remaining = deadline.saturating_duration_since(Instant::now());
        let diagnostics = session
            .pull_within(&synced.uri, remaining.max(MIN_PULL))
            .await?;
        Some(((*path).clone(), merge_passes(diagnostics), synced.text))
    });
    futures::future::join_all(pulls)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// Waits (until `deadline`, at most [`REBUILD_WAIT`]) for the other open documents of
/// `session` that include a written header to be published again: clangd rebuilds them on
/// its own once it has the header's new text. Sending them again would not help — clangd
/// ignores a change that changes nothing, and waiting for its publish would last to the
/// deadline.
async fn rebuild_open(
    session: &Arc<Session>,
    written: &HashSet<&Path>,
    snapshot: &HashMap<Url, Published>,
    deadline: Instant,
) {
    let headers: Vec<String> = written
        .iter()
        .filter(|path| is_header(path))
        .filter_map(|path| Some(path.file_name()?.to_str()?.to_owned()))
        .collect();
    let mut waits = Vec::new();
    for path in session.open_paths().await {
        if written.contains(path.as_path()) || waits.len() == RECHECKED_DOCUMENTS {
            continue;
        }
        let Ok(text) = crate::render::read_text(&path) else {
            continue;
        };
        let includes = text.lines().any(|line| {
            let line = line.trim_start();
            line.starts_with('#')
                && line.contains("include")
                && headers.iter().any(|header| line.contains(header.as_str()))
        });
        if let (true, Ok(uri)) = (includes, Url::from_file_path(&path)) {
            let before = snapshot.get(&uri).map_or(0, |p| p.count);
            waits.push((uri, before));
        }
    }
    let until = deadline.min(Instant::now() + REBUILD_WAIT);
    let shared = &session.shared;
    futures::future::join_all(
        waits
            .iter()
            .map(|(uri, before)| shared.wait_publish_until(uri, *before, until)),
    )
    .await;
}

/// A file sent to its server, waiting for the answer.
struct Sent<'a> {
    target: &'a Target,
    uri: Url,
    text: Arc<str>,
    version: i32,
    changed: bool,
    publishes_before: u64,
    checks_before: u64,
    /// When it was saved; `None` for a text sent only to learn its diagnostics.
    saved_at: Option<Instant>,
}

/// Syncs and saves every file, then waits for each one's diagnostics about exactly the text
/// sent. All files are sent before any wait, so a server that checks on save runs one check
/// for the lot rather than restarting it under a file that already counted it as done. A file
/// paired with its earlier text gets that instead, unsaved (the disk has moved on).
async fn settle_all(
    items: &[(&Target, Option<&str>)],
    deadline: Instant,
    bound: Duration,
) -> Vec<Outcome> {
    let mut sent = Vec::new();
    for (target, previous) in items {
        sent.push(send(target, *previous).await);
    }
    // Then the servers' other open documents that changed on disk: after the files' own
    // sync, which must be the one to send their new text, or it would find nothing to send
    // and take the old publish for an answer. Not when earlier texts were sent: that would
    // replace them with the disk's before they are checked.
    let mut sessions: Vec<&Arc<Session>> = Vec::new();
    for (target, previous) in items {
        if previous.is_none() && !sessions.iter().any(|s| Arc::ptr_eq(s, &target.session)) {
            sessions.push(&target.session);
            target.session.resync_open().await;
        }
    }
    futures::future::join_all(sent.into_iter().zip(items).map(|(sent, (target, _))| {
        let server = target.session.spec.name.clone();
        async move {
            match sent {
                Ok(sent) => settle(sent, deadline, bound).await,
                Err(problem) => Outcome::unchecked(
                    format!("it could not be sent to {server}: {problem}"),
                    "".into(),
                ),
            }
        }
    }))
    .await
}

/// Syncs one file — the disk's text (didOpen or a full didChange, then didSave) or, for a
/// baseline, `previous` unsaved — noting first what the server had said so far: only what
/// comes after counts.
async fn send<'a>(target: &'a Target, previous: Option<&str>) -> Result<Sent<'a>, String> {
    let session = &target.session;
    let uri = Url::from_file_path(&target.path)
        .map_err(|()| format!("{} is not an absolute path", target.path.display()))?;
    let publishes_before = session.shared.publish_count(&uri);
    let (checks_before, _) = session.shared.checks();
    let synced = match previous {
        Some(text) => session.sync_text(&target.path, text).await?,
        None => session.sync(&target.path).await?,
    };
    let saved_at = match previous {
        Some(_) => None,
        None => {
            session.save(&uri);
            Some(Instant::now())
        }
    };
    Ok(Sent {
        target,
        uri,
        text: synced.text,
        version: synced.version,
        changed: synced.changed,
        publishes_before,
        checks_before,
        saved_at,
    })
}

/// Waits, until `deadline`, for the server to settle on the sent text.
async fn settle(sent: Sent<'_>, deadline: Instant, bound: Duration) -> Outcome {
    let session = &sent.target.session;
    let shared = &session.shared;
    let uri = &sent.uri;
    let server = &session.spec.name;
    let unsettled = |text: Arc<str>| {
        let reason = match shared.state().ended.is_some() {
            true => format!(
                "{server} stopped while checking it{}",
                session.exit_details()
            ),
            false => format!(
                "{server} had not finished checking it after {}s; call `lsp` with operation \
                 `diagnostics` on it in a while",
                seconds(bound)
            ),
        };
        Outcome::unchecked(reason, text)
    };
    let pull = session.spec.pull;
    if matches!(pull, Pull::Lsp | Pull::TsServer) {
        let _ = tokio::time::timeout_at(deadline, session.wait_ready()).await;
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return unsettled(sent.text);
        }
        match session.pull_answer(uri, remaining).await {
            Ok(Some(diagnostics)) => {
                return Outcome {
                    diagnostics: merge_passes(diagnostics),
                    unchecked: None,
                    text: sent.text,
                };
            }
            // The server threw on the file (basedpyright's RangeError on a huge file): no
            // publish will come either, so the wait ends here.
            Err(Error::Response { message, .. }) => {
                return Outcome::unchecked(
                    format!(
                        "{server} failed on this file ({}); `lsp` with operation `reload` \
                         restarts it",
                        one_line(&message)
                    ),
                    sent.text,
                );
            }
            Ok(None) | Err(_) => {}
        }
    }
    // The server's own analysis is pulled below; publishes carry only its checks'.
    let analysis_pulled = pull == Pull::Analysis;
    // An unsaved text gets no check; the findings of the last one stand beside it.
    let expects_check = session.spec.check_progress.is_some() && sent.saved_at.is_some();
    let grace = CHECK_START.min(bound);
    let mut check_grace_end: Option<Instant> = None;
    let mut changes = shared.subscribe();
    // The server has answered for this text.
    let quiet = loop {
        let published = shared.published(uri);
        let fresh = published.as_ref().is_some_and(|published| {
            published.count > sent.publishes_before
                && published
                    .version
                    .is_none_or(|version| version >= sent.version)
        });
        // A server that did not have the document open before may publish for it without a
        // version (clangd does for a header it opened to answer): any publish after the
        // sync is about the text just sent, since nothing else was sent since.
        let fresh = fresh
            || (sent.version == 0
                && published
                    .as_ref()
                    .is_some_and(|published| published.count > sent.publishes_before));
        let ready = session.activity() == Activity::Ready;
        if ready && check_grace_end.is_none() {
            check_grace_end = Some(Instant::now() + grace);
        }
        // The server had this text already (another tool sent it): its publish counts once it
        // is about this version, or when the server does not say which version it is about.
        let covered = !sent.changed
            && published
                .as_ref()
                .is_none_or(|published| published.version.is_none_or(|v| v >= sent.version));
        let done = if expects_check {
            let (begun, running) = shared.checks();
            if begun > sent.checks_before && !running && ready {
                Some(AFTER_CHECK_QUIET)
            } else if begun == sent.checks_before
                && check_grace_end.is_some_and(|end| Instant::now() >= end)
                && (analysis_pulled || fresh || covered)
            {
                // No check began: the file is outside every crate, or checking is off.
                Some(PUBLISH_QUIET)
            } else {
                None
            }
        } else if analysis_pulled {
            Some(Duration::ZERO)
        } else if fresh || covered {
            Some(PUBLISH_QUIET)
        } else {
            None
        };
        if let Some(quiet) = done {
            tracing::debug!(file = %sent.target.shown, ?quiet, fresh, ready, "the server answered for the written text");
            break quiet;
        }
        let now = Instant::now();
        if now >= deadline || shared.state().ended.is_some() {
            return unsettled(sent.text);
        }
        // Wake for every message the server sends, and when the check-start grace ends.
        let wake = match check_grace_end {
            Some(end) if expects_check && now < end => end.min(deadline),
            _ => deadline,
        };
        let _ = tokio::time::timeout_at(wake, changes.changed()).await;
    };
    // Then quiet for a moment, for a trailing publish, still within the deadline.
    loop {
        let count = shared.publish_count(uri);
        let until = (Instant::now() + quiet).min(deadline);
        if !shared.wait_publish_until(uri, count, until).await {
            break;
        }
    }
    let mut diagnostics = shared
        .published(uri)
        .map(|published| published.diagnostics)
        .unwrap_or_default();
    if analysis_pulled {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match session.pull_within(uri, remaining.max(MIN_PULL)).await {
            Some(analysis) => {
                if analysis
                    .iter()
                    .any(|d| code_text(d.code.as_ref()).as_deref() == Some(UNLINKED_FILE))
                {
                    return Outcome::unchecked(
                        "it is in no crate: no `mod` declaration reaches it, so \
                         rust-analyzer does not check it"
                            .to_owned(),
                        sent.text,
                    );
                }
                diagnostics.extend(analysis);
            }
            None => return unsettled(sent.text),
        }
    }
    Outcome {
        diagnostics: merge_passes(diagnostics),
        unchecked: None,
        text: sent.text,
    }
}

fn dedup(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    paths
        .iter()
        .filter(|path| seen.insert(path.as_path()))
        .cloned()
        .collect()
}

/// Renders one listed diagnostic with its line's text.
fn render_written(text: &mut String, diagnostic: &WrittenDiagnostic) {
    text.push('\n');
    text.push_str(&render_diagnostic(&DiagnosticItem {
        path: diagnostic.path.clone(),
        line: Some(diagnostic.line),
        severity: diagnostic.severity.clone(),
        code: diagnostic.code.clone(),
        message: diagnostic.message.clone(),
    }));
    if !diagnostic.text.is_empty() {
        text.push_str(&format!("\n    {}", diagnostic.text));
    }
}

/// The report as text: what the write introduced in the written files (capped per file),
/// then in other files (capped over all of them, with counts per file), then each written
/// file's state.
pub(crate) fn render_report(report: &WriteDiagnostics) -> String {
    let mut text = String::new();
    if !report.introduced.is_empty() {
        let files: HashSet<&str> = report.introduced.iter().map(|d| d.path.as_str()).collect();
        text.push_str(&format!(
            "\n\nThis write introduced {} in {}:",
            plural(report.introduced.len() + report.omitted, "new diagnostic"),
            plural(files.len(), "file")
        ));
        for (index, diagnostic) in report.introduced.iter().enumerate() {
            render_written(&mut text, diagnostic);
            // After a file's last listed diagnostic, what its cap left out.
            let last_of_file = report
                .introduced
                .get(index + 1)
                .is_none_or(|next| next.path != diagnostic.path);
            let omitted = report
                .files
                .iter()
                .find(|file| file.path == diagnostic.path)
                .map_or(0, |file| file.omitted);
            if last_of_file && omitted > 0 {
                text.push_str(&format!(
                    "\n({omitted} more in {} not listed; call `lsp` with operation \
                     `diagnostics` on it for all of them)",
                    diagnostic.path
                ));
            }
        }
    }
    if !report.fallout_files.is_empty() {
        let total: usize = report.fallout_files.iter().map(|f| f.introduced).sum();
        text.push_str(&format!(
            "\n\nIn files it did not touch, this write introduced {} in {}:",
            plural(total, "new diagnostic"),
            plural(report.fallout_files.len(), "file")
        ));
        for diagnostic in &report.fallout {
            render_written(&mut text, diagnostic);
        }
        if total > report.fallout.len() {
            let counts: Vec<String> = report
                .fallout_files
                .iter()
                .map(|file| format!("{}: {}", file.path, file.introduced))
                .collect();
            text.push_str(&format!(
                "\n(showing {} of {total}; new per file: {}; call `lsp` with operation \
                 `diagnostics` on a file for all of its diagnostics)",
                report.fallout.len(),
                counts.join(", ")
            ));
        }
    }
    let mut states = Vec::new();
    let mut clean: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for file in &report.files {
        if let Some(reason) = &file.unchecked {
            states.push(format!("Not checked: {} ({reason}).", file.path));
            continue;
        }
        let new_errors = report
            .introduced
            .iter()
            .filter(|d| d.path == file.path && d.severity == "error")
            .count()
            + file.omitted;
        let new_errors = new_errors.min(file.errors);
        match (file.errors, new_errors) {
            (0, _) => clean
                .entry(file.server.as_str())
                .or_default()
                .push(file.path.as_str()),
            (errors, 0) => states.push(format!(
                "{} still has {}, none new.",
                file.path,
                plural(errors, "error")
            )),
            (errors, new) if new == errors => states.push(format!(
                "{} now has {}, all new.",
                file.path,
                plural(errors, "error")
            )),
            (errors, new) => states.push(format!(
                "{} now has {}, {new} of them new.",
                file.path,
                plural(errors, "error")
            )),
        }
    }
    for (server, paths) in clean {
        states.insert(
            0,
            format!("{server} checked {}: no errors.", paths.join(", ")),
        );
    }
    if !states.is_empty() {
        text.push_str(match text.is_empty() {
            true => "\n\n",
            false => "\n",
        });
        text.push_str(&states.join("\n"));
    }
    for note in &report.notes {
        text.push_str(&format!("\nNote: {note}"));
    }
    text
}

/// Puts the report under the tool's own text and into its structured result.
fn append(result: &mut ToolResult, report: WriteDiagnostics) {
    result.text.push_str(&render_report(&report));
    if let Some(Value::Object(structured)) = &mut result.structured
        && let Ok(value) = serde_json::to_value(&report)
    {
        structured.insert("diagnostics".to_owned(), value);
    }
}

fn seconds(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    match seconds.fract() == 0.0 {
        true => format!("{seconds:.0}"),
        false => format!("{seconds:.1}"),
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn file(path: &str, errors: usize, introduced: usize, omitted: usize) -> CheckedFile {
        CheckedFile {
            path: path.into(),
            server: "rust-analyzer".into(),
            settled: true,
            errors,
            warnings: 0,
            introduced,
            omitted,
            unchecked: None,
        }
    }

    fn diagnostic(path: &str, line: u32, message: &str) -> WrittenDiagnostic {
        WrittenDiagnostic {
            path: path.into(),
            line,
            severity: "error".into(),
            code: Some("E0061".into()),
            message: message.into(),
            text: "add(1)".into(),
        }
    }

    #[test]
    fn lsp_6_silence_never_reads_as_clean() {
        let report = WriteDiagnostics {
            files: vec![
                file("src/a.rs", 0, 0, 0),
                file("src/b.rs", 0, 0, 0),
                file("src/old.rs", 3, 0, 0),
                CheckedFile {
                    unchecked: Some("rust-analyzer is not installed here".into()),
                    settled: false,
                    ..file("src/c.rs", 0, 0, 0)
                },
            ],
            ..WriteDiagnostics::default()
        };
        assert_eq!(
            render_report(&report),
            "\n\nrust-analyzer checked src/a.rs, src/b.rs: no errors.\n\
             src/old.rs still has 3 errors, none new.\n\
             Not checked: src/c.rs (rust-analyzer is not installed here)."
        );
    }

    #[test]
    fn lsp_7_fallout_is_listed_under_its_own_heading_with_counts_per_file() {
        let message = "this function takes 2 arguments but 1 argument was supplied";
        let report = WriteDiagnostics {
            introduced: vec![diagnostic("src/lib.rs", 3, message)],
            omitted: 0,
            files: vec![file("src/lib.rs", 1, 1, 0)],
            fallout: vec![
                diagnostic("src/a.rs", 2, message),
                diagnostic("src/b.rs", 5, message),
            ],
            fallout_files: vec![file("src/a.rs", 4, 4, 3), file("src/b.rs", 1, 1, 0)],
            notes: Vec::new(),
        };
        assert_eq!(
            render_report(&report),
            "\n\nThis write introduced 1 new diagnostic in 1 file:\n\
             src/lib.rs:3: error[E0061]: this function takes 2 arguments but 1 argument was supplied\n    add(1)\n\n\
             In files it did not touch, this write introduced 5 new diagnostics in 2 files:\n\
             src/a.rs:2: error[E0061]: this function takes 2 arguments but 1 argument was supplied\n    add(1)\n\
             src/b.rs:5: error[E0061]: this function takes 2 arguments but 1 argument was supplied\n    add(1)\n\
             (showing 2 of 5; new per file: src/a.rs: 4, src/b.rs: 1; call `lsp` with operation `diagnostics` on a file for all of its diagnostics)\n\
             src/lib.rs now has 1 error, all new."
        );
    }
}
