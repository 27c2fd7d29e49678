//! Diagnostics on write (LSP-6): a dispatch wrapper around every tool that declares it writes
//! files (`Tool::WRITES_FILES`), knowing before the call which files its arguments name. After
//! the write, each touched file that a usable server covers is synced and saved through that
//! server, the wrapper waits for diagnostics about the written text — never a publish left
//! from before — and appends the ones the write introduced (LSP-7) to the tool's own result.
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
//! did not settle by then gets a one-line note, so silence never reads as a clean file.
//!
//! The baseline of LSP-7 — what a file had before the run's first write to it — is taken
//! before the tool runs for the files its arguments name, by the same sync-save-wait on the
//! text still on disk (the first write to each file pays for that check once); files the
//! arguments do not name (a rename's other files, a resolved edit's) get it after the tool
//! ran, from the text the tool says they had, sent unsaved.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
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
use crate::config::OnWriteConfig;
use crate::lsp::{DiagnosticItem, render_diagnostic, with_progress};
use crate::position::lines;
use crate::render::{code_text, one_line, plural, quote, repeats, severity_name};
use crate::reported::Reported;
use crate::servers::{Pull, ServerSpec};
use crate::session::{Activity, Session};
use crate::supervisor::LspSupervisor;

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

/// Diagnostics on write for one run: wraps the writing tools, holds the LSP-7 registry.
pub struct DiagnosticsOnWrite {
    supervisor: LspSupervisor,
    config: OnWriteConfig,
    reported: Mutex<Reported>,
    /// (server, root) pairs that cannot run here, learnt since the reload count noted with
    /// them: their files are skipped at no cost until `lsp reload`.
    unusable: Mutex<(u64, HashSet<(String, PathBuf)>)>,
}

/// A file to check and the server that covers it.
struct Target {
    path: PathBuf,
    shown: String,
    session: Arc<Session>,
}

/// What a server said about a file once it settled, or by the deadline.
struct Outcome {
    diagnostics: Vec<Diagnostic>,
    settled: bool,
    text: Arc<str>,
    /// The server answered the file with an error (it threw on it): not checked, and no
    /// use waiting for a publish that will not come.
    failed: Option<String>,
}

impl DiagnosticsOnWrite {
    pub(crate) fn new(supervisor: LspSupervisor) -> Self {
        let config = supervisor.context().config.on_write.clone();
        DiagnosticsOnWrite {
            supervisor,
            config,
            reported: Mutex::new(Reported::default()),
            unusable: Mutex::new((0, HashSet::new())),
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
        // LSP-7: a file's diagnostics before the run's first write to it are not news. The
        // files a call will write are what it declared from its arguments.
        let named: Vec<PathBuf> = dedup(&writes.files)
            .into_iter()
            .filter(|path| path.is_file() && !self.reported().knows(path))
            .collect();
        if !named.is_empty() {
            let (targets, _) = self.targets(workspace, &named, deadline).await;
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
        let (targets, notes) = self.targets(workspace, &existing, deadline).await;
        if targets.is_empty() && notes.is_empty() {
            return result;
        }
        // LSP-7: files the arguments did not name (a rename's other files, a resolved edit's)
        // get their baseline from the text the tool says they had.
        let unknown: Vec<(&Target, Option<&str>)> = targets
            .iter()
            .filter(|target| !self.reported().knows(&target.path))
            .filter_map(|target| {
                let (_, text) = result.previous.iter().find(|(p, _)| *p == target.path)?;
                Some((target, Some(text.as_str())))
            })
            .collect();
        if !unknown.is_empty() {
            let outcomes = settle_all(&unknown, deadline, self.config.timeout()).await;
            self.take_baselines(&unknown, outcomes);
        }
        let all: Vec<(&Target, Option<&str>)> = targets.iter().map(|t| (t, None)).collect();
        let outcomes = with_progress(
            "waiting for the language servers to check the written files",
            settle_all(&all, deadline, self.config.timeout()),
        )
        .await;
        let mut report = self.report(&targets, outcomes);
        report.notes.extend(notes);
        append(&mut result, report);
        result
    }

    /// The one line for a file whose server did not answer in time.
    fn unchecked(&self, server: &str, state: &str, file: &str) -> String {
        format!(
            "{server} {state} after {}s, so this result cannot say whether the write broke \
             {file}; call `lsp` with operation `diagnostics` on it in a while",
            seconds(self.config.timeout())
        )
    }

    /// Records what each file had before the write. A baseline that did not settle is not
    /// taken; the next write tries again.
    fn take_baselines(&self, items: &[(&Target, Option<&str>)], outcomes: Vec<Outcome>) {
        let mut reported = self.reported();
        for ((target, _), outcome) in items.iter().zip(outcomes) {
            if outcome.settled {
                reported.baseline(&target.path, &outcome.diagnostics);
            }
        }
    }

    /// The files among `paths` that a usable server covers, with their sessions (started
    /// now if needed, within the deadline). Files no server covers cost a look at their
    /// folders; servers known not to run here cost nothing.
    async fn targets(
        &self,
        workspace: &Workspace,
        paths: &[PathBuf],
        deadline: Instant,
    ) -> (Vec<Target>, Vec<String>) {
        let mut notes = Vec::new();
        let mut wanted: Vec<(PathBuf, Arc<ServerSpec>, PathBuf)> = Vec::new();
        {
            let generation = self.supervisor.reloads();
            let mut unusable = self.unusable.lock().unwrap_or_else(|p| p.into_inner());
            if unusable.0 != generation {
                *unusable = (generation, HashSet::new());
            }
            for path in paths {
                if let Some((spec, root)) = self.supervisor.covering(path)
                    && !unusable.1.contains(&(spec.name.clone(), root.clone()))
                {
                    wanted.push((path.clone(), spec, root));
                }
            }
        }
        let mut sessions: HashMap<(String, PathBuf), Option<Arc<Session>>> = HashMap::new();
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
                        Some(session)
                    }
                    Ok(Err(error @ (Error::Unusable(_) | Error::RestartBudget { .. }))) => {
                        // `lsp status` says why; a write does not repeat it (LSP-6).
                        tracing::debug!(%error, "diagnostics on write skips a server");
                        let mut unusable = self.unusable.lock().unwrap_or_else(|p| p.into_inner());
                        unusable.1.insert(key.clone());
                        None
                    }
                    Ok(Err(error)) => {
                        tracing::debug!(%error, "diagnostics on write: the server did not start");
                        None
                    }
                    Err(_) => {
                        notes.push(self.unchecked(
                            &key.0,
                            "was still starting",
                            &workspace.display(&path),
                        ));
                        None
                    }
                };
                sessions.insert(key.clone(), session);
            }
            if let Some(Some(session)) = sessions.get(&key) {
                targets.push(Target {
                    shown: workspace.display(&path),
                    path,
                    session: Arc::clone(session),
                });
            }
        }
        (targets, notes)
    }

    /// Takes each settled file's diagnostics into the registry and lists what is new.
    fn report(&self, targets: &[Target], outcomes: Vec<Outcome>) -> WriteDiagnostics {
        let mut report = WriteDiagnostics::default();
        let mut reported = self.reported();
        for (target, outcome) in targets.iter().zip(outcomes) {
            let server = target.session.spec.name.clone();
            let count = |severity| {
                outcome
                    .diagnostics
                    .iter()
                    .filter(|d| d.severity == Some(severity))
                    .count()
            };
            report.files.push(CheckedFile {
                path: target.shown.clone(),
                server: server.clone(),
                settled: outcome.settled,
                errors: count(DiagnosticSeverity::ERROR),
                warnings: count(DiagnosticSeverity::WARNING),
                omitted: 0,
            });
            if let Some(message) = &outcome.failed {
                report.notes.push(format!(
                    "{} was not checked: {server} failed on this file ({}), so this result \
                     cannot say whether the write broke it; `lsp reload` restarts the server",
                    target.shown,
                    one_line(message)
                ));
                continue;
            }
            if !outcome.settled {
                report.notes.push(self.unchecked(
                    &server,
                    &format!("had not finished checking {}", target.shown),
                    &target.shown,
                ));
                // The registry keeps what it knew; what this write introduced is reported
                // by the next write that settles.
                continue;
            }
            let introduced = reported.introduced(&target.path, &outcome.diagnostics);
            let listed = introduced.into_iter().filter(|d| match d.severity {
                Some(DiagnosticSeverity::ERROR) => true,
                Some(DiagnosticSeverity::WARNING) => self.config.warnings,
                _ => false,
            });
            let mut seen = HashSet::new();
            let mut listed: Vec<&Diagnostic> = listed.filter(|d| !repeats(&mut seen, d)).collect();
            listed.sort_by_key(|d| {
                (
                    d.severity != Some(DiagnosticSeverity::ERROR),
                    d.range.start.line,
                )
            });
            let shown = listed.len().min(self.config.per_file);
            report.omitted += listed.len() - shown;
            if let Some(file) = report.files.last_mut() {
                file.omitted = listed.len() - shown;
            }
            let text_lines = lines(&outcome.text);
            for diagnostic in listed.into_iter().take(shown) {
                let line = diagnostic.range.start.line;
                report.introduced.push(WrittenDiagnostic {
                    path: target.shown.clone(),
                    line: line + 1,
                    severity: severity_name(diagnostic.severity).to_owned(),
                    code: code_text(diagnostic.code.as_ref()),
                    message: one_line(&diagnostic.message),
                    text: text_lines
                        .get(line as usize)
                        .map(|l| quote(l))
                        .unwrap_or_default(),
                });
            }
        }
        report
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
    futures::future::join_all(sent.into_iter().map(|sent| async move {
        match sent {
            Some(sent) => settle(sent, deadline, bound).await,
            None => Outcome {
                diagnostics: Vec::new(),
                settled: false,
                text: "".into(),
                failed: None,
            },
        }
    }))
    .await
}

/// Syncs one file — the disk's text (didOpen or a full didChange, then didSave) or, for a
/// baseline, `previous` unsaved — noting first what the server had said so far: only what
/// comes after counts.
async fn send<'a>(target: &'a Target, previous: Option<&str>) -> Option<Sent<'a>> {
    let session = &target.session;
    let uri = Url::from_file_path(&target.path).ok()?;
    let publishes_before = session.shared.publish_count(&uri);
    let (checks_before, _) = session.shared.checks();
    let synced = match previous {
        Some(text) => session.sync_text(&target.path, text).await.ok()?,
        None => session.sync(&target.path).await.ok()?,
    };
    let saved_at = match previous {
        Some(_) => None,
        None => {
            session.save(&uri);
            Some(Instant::now())
        }
    };
    Some(Sent {
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
    let unsettled = |text: Arc<str>| Outcome {
        diagnostics: Vec::new(),
        settled: false,
        text,
        failed: None,
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
                    diagnostics,
                    settled: true,
                    text: sent.text,
                    failed: None,
                };
            }
            // The server threw on the file (basedpyright's RangeError on a huge file): no
            // publish will come either, so the wait ends here.
            Err(Error::Response { message, .. }) => {
                return Outcome {
                    failed: Some(message),
                    ..unsettled(sent.text)
                };
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
        let fresh = shared.published(uri).is_some_and(|published| {
            published.count > sent.publishes_before
                && published
                    .version
                    .is_none_or(|version| version >= sent.version)
        });
        let ready = session.activity() == Activity::Ready;
        if ready && check_grace_end.is_none() {
            check_grace_end = Some(Instant::now() + grace);
        }
        let done = if expects_check {
            let (begun, running) = shared.checks();
            if begun > sent.checks_before && !running && ready {
                Some(AFTER_CHECK_QUIET)
            } else if begun == sent.checks_before
                && check_grace_end.is_some_and(|end| Instant::now() >= end)
                && (analysis_pulled || fresh || !sent.changed)
            {
                // No check began: the file is outside every crate, or checking is off.
                Some(PUBLISH_QUIET)
            } else {
                None
            }
        } else if analysis_pulled {
            Some(Duration::ZERO)
        } else if fresh || !sent.changed {
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
            Some(analysis) => diagnostics.extend(analysis),
            None => return unsettled(sent.text),
        }
    }
    Outcome {
        diagnostics,
        settled: true,
        text: sent.text,
        failed: None,
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

/// Puts the report under the tool's own text and into its structured result.
fn append(result: &mut ToolResult, report: WriteDiagnostics) {
    let mut text = String::new();
    if !report.introduced.is_empty() {
        let files: HashSet<&str> = report.introduced.iter().map(|d| d.path.as_str()).collect();
        text.push_str(&format!(
            "\n\nThis write introduced {} in {}:",
            plural(report.introduced.len() + report.omitted, "new diagnostic"),
            plural(files.len(), "file")
        ));
        for (index, diagnostic) in report.introduced.iter().enumerate() {
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
    for note in &report.notes {
        text.push_str(&format!("\nNote: {note}"));
    }
    if !report.notes.is_empty() && report.introduced.is_empty() {
        text.insert(0, '\n');
    }
    result.text.push_str(&text);
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
