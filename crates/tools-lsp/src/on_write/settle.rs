//! Sending written files to their servers and waiting, without fixed sleeps, for diagnostics
//! about exactly the text sent ("fresh", decided per server):
//! - a server that runs a project-wide check by itself (rust-analyzer's `cargo check` on
//!   save; basedpyright's workspace analysis on every change) is done when a check that began
//!   after the send has ended — or one that was running at the send, which then covers it —
//!   and the server is quiet: until then its publishes carry the previous check's findings;
//!   rust-analyzer's own analysis is then pulled for the text just sent;
//! - a server that answers pulls (tsserver) is asked after the sync;
//! - any other server is done at the first publish after the sync whose version (when the
//!   server echoes one) is the synced one, followed by a short quiet period, since several
//!   servers publish a quick result first and a full one soon after.
//!
//! Every wait ends at the call's one deadline; a file that did not settle by then is not
//! checked, with the reason.

use std::sync::Arc;
use std::time::Duration;

use async_lsp::lsp_types::{Diagnostic, Url};
use tokio::time::Instant;

use super::targets::Target;
use crate::error::explain;
use crate::render::{code_text, merge_passes, one_line};
use tools_lsp_client::Checks;
use tools_lsp_client::Error;
use tools_lsp_client::{Activity, Session};
use tools_lsp_client::{Check, Pull};

/// How long a file stays quiet after its server's check ended before it counts as settled:
/// the check's last publishes can trail its end (basedpyright sends them asynchronously).
const AFTER_CHECK_QUIET: Duration = Duration::from_millis(60);

/// The quiet period after a fresh publish from a server that neither answers pulls nor runs
/// a check of its own (clangd publishes a quick result, then more).
const PUBLISH_QUIET: Duration = Duration::from_millis(150);

/// The least time a pull of a server's own analysis gets after its check ended, even at the
/// deadline: the check is the slow part, and its findings are in.
pub(crate) const MIN_PULL: Duration = Duration::from_secs(2);

/// How long a server that checks by itself gets, once it is ready, to begin its check before
/// the wait stops expecting one (the file may be outside every crate, or checking may be
/// off in the server's own config files). A server still loading its workspace defers the
/// check until it has, so the time counts from readiness.
const CHECK_START: Duration = Duration::from_secs(3);

/// How long a server's CPU time is watched to tell whether it still works, and how much use
/// in that time still counts as idle (a runtime's timers and collector).
const IDLE_WINDOW: Duration = Duration::from_millis(250);
const IDLE_CPU: Duration = Duration::from_millis(25);

/// rust-analyzer's code for a file no crate's module tree reaches: it is not checked.
const UNLINKED_FILE: &str = "unlinked-file";

/// What a server said about a file once it settled, or why it did not.
pub(crate) struct Outcome {
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// `None` when the server answered for the text; otherwise why it did not.
    pub(crate) unchecked: Option<String>,
    pub(crate) text: Arc<str>,
}

impl Outcome {
    pub(crate) fn unchecked(reason: String, text: Arc<str>) -> Self {
        Outcome {
            diagnostics: Vec::new(),
            unchecked: Some(reason),
            text,
        }
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
    checks_before: Checks,
    /// When it was saved; `None` for a text sent only to learn its diagnostics.
    saved_at: Option<Instant>,
}

/// Syncs (and saves) every file, then waits for each one's diagnostics about exactly the text
/// sent. All files are sent before any wait, so a server that checks on save runs one check
/// for the lot rather than restarting it under a file that already counted it as done. A file
/// paired with its earlier text gets that instead, unsaved (the disk has moved on).
pub(crate) async fn settle_all(
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
                    // The errors of a send name the file sent, shown as the report shows it.
                    format!(
                        "it could not be sent to {server}: {}",
                        explain(&problem, &|path| match path == target.path {
                            true => target.shown.clone(),
                            false => path.display().to_string(),
                        })
                    ),
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
async fn send<'a>(target: &'a Target, previous: Option<&str>) -> Result<Sent<'a>, Error> {
    let session = &target.session;
    let uri = Url::from_file_path(&target.path).map_err(|()| Error::NotAbsolute {
        path: target.path.clone(),
    })?;
    let publishes_before = session.shared.publish_count(&uri);
    let checks_before = session.shared.checks();
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

/// Whether a server has stopped working, from its CPU time sampled a window apart.
#[derive(Default)]
struct Idle {
    sample: Option<(Instant, Duration)>,
}

impl Idle {
    /// Takes a sample: true once the server used at most [`IDLE_CPU`] over the last
    /// [`IDLE_WINDOW`].
    fn observe(&mut self, cpu: Duration) -> bool {
        let now = Instant::now();
        match self.sample {
            Some((at, used)) if now.duration_since(at) >= IDLE_WINDOW => {
                self.sample = Some((now, cpu));
                cpu.saturating_sub(used) <= IDLE_CPU
            }
            Some(_) => false,
            None => {
                self.sample = Some((now, cpu));
                false
            }
        }
    }

    /// When the next sample is due, once sampling began.
    fn next_look(&self) -> Option<Instant> {
        self.sample.map(|(at, _)| at + IDLE_WINDOW)
    }
}

/// Waits until `session`'s own project-wide check is not running and has run at least once
/// since the server started (or none began within the grace after readiness), so its
/// publishes are the whole project's state: the baseline a write is compared with. Returns
/// whether it got there before `deadline`.
pub(crate) async fn project_settled(session: &Session, deadline: Instant) -> bool {
    if session.spec.check == Check::None {
        return true;
    }
    let _ = tokio::time::timeout_at(deadline, session.wait_ready()).await;
    let grace_end = Instant::now() + CHECK_START;
    let mut changes = session.shared.subscribe();
    loop {
        let checks = session.shared.checks();
        if !checks.running && (checks.ended > 0 || Instant::now() >= grace_end) {
            return true;
        }
        if Instant::now() >= deadline || session.shared.state().ended.is_some() {
            return false;
        }
        let wake = match checks.running {
            true => deadline,
            false => grace_end.min(deadline),
        };
        let _ = tokio::time::timeout_at(wake, changes.changed()).await;
    }
}

/// Waits, until `deadline`, for the server to settle on the sent text: its pull answer when
/// it answers pulls and runs no check for this text, otherwise its fresh publish (or its
/// check's end) and a quiet moment, with its own analysis pulled on top when the table says
/// so.
async fn settle(sent: Sent<'_>, deadline: Instant, bound: Duration) -> Outcome {
    let session = &sent.target.session;
    let pull = session.spec.pull;
    // A check of the server's own covers the text once it ran after the send: an on-save
    // check only for a saved file, analysis on change for any text it did not have.
    let expects_check = match &session.spec.check {
        Check::None => false,
        Check::OnSave { .. } => sent.saved_at.is_some(),
        Check::OnChange => sent.changed,
    };
    if !expects_check
        && matches!(pull, Pull::Lsp | Pull::TsServer)
        && let Some(outcome) = pulled(&sent, deadline, bound).await
    {
        return outcome;
    }
    let Some(quiet) = answered(&sent, expects_check, deadline, bound).await else {
        return unsettled(&sent, bound);
    };
    // Then quiet for a moment, for trailing publishes (of any file), still within the
    // deadline.
    let shared = &session.shared;
    loop {
        let count = shared.total_publishes();
        let until = (Instant::now() + quiet).min(deadline);
        if !shared.wait_any_publish_until(count, until).await {
            break;
        }
    }
    let published = || {
        shared
            .published(&sent.uri)
            .map(|published| published.diagnostics)
            .unwrap_or_default()
    };
    // The server's own analysis is pulled on top; its publishes carry only its checks'. They
    // are read after the pull: rust-analyzer serializes publishes on the worker pool that
    // answers the pull, so the check's last publishes, queued before it, have landed by then.
    if pull == Pull::Analysis {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match session
            .pull_within(&sent.uri, remaining.max(MIN_PULL))
            .await
        {
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
                let mut diagnostics = published();
                diagnostics.extend(analysis);
                return Outcome {
                    diagnostics: merge_passes(diagnostics),
                    unchecked: None,
                    text: sent.text,
                };
            }
            None => return unsettled(&sent, bound),
        }
    }
    Outcome {
        diagnostics: merge_passes(published()),
        unchecked: None,
        text: sent.text,
    }
}

/// The answer of a server that answers pulls, asked once it is ready; `None` when it gave
/// none, so the wait goes on for its publishes.
async fn pulled(sent: &Sent<'_>, deadline: Instant, bound: Duration) -> Option<Outcome> {
    let session = &sent.target.session;
    let _ = tokio::time::timeout_at(deadline, session.wait_ready()).await;
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Some(unsettled(sent, bound));
    }
    match session.pull_answer(&sent.uri, remaining).await {
        Ok(Some(diagnostics)) => Some(Outcome {
            diagnostics: merge_passes(diagnostics),
            unchecked: None,
            text: Arc::clone(&sent.text),
        }),
        // The server threw on the file (basedpyright's RangeError on a huge file): no publish
        // will come either, so the wait ends here.
        Err(Error::Response { message, .. }) => Some(Outcome::unchecked(
            format!(
                "{} failed on this file ({}); `lsp` with operation `reload` restarts it",
                session.spec.name,
                one_line(&message)
            ),
            Arc::clone(&sent.text),
        )),
        Ok(None) | Err(_) => None,
    }
}

/// Waits, waking for every message the server sends, until it has answered for the sent
/// text; returns how long to stay quiet after, or `None` when the deadline came first or the
/// server stopped.
async fn answered(
    sent: &Sent<'_>,
    expects_check: bool,
    deadline: Instant,
    bound: Duration,
) -> Option<Duration> {
    let shared = &sent.target.session.shared;
    let mut wait = Wait {
        sent,
        expects_check,
        grace: CHECK_START.min(bound),
        check_grace_end: None,
        idle: Idle::default(),
    };
    let mut changes = shared.subscribe();
    loop {
        if let Some(quiet) = wait.answered() {
            return Some(quiet);
        }
        let now = Instant::now();
        if now >= deadline || shared.state().ended.is_some() {
            return None;
        }
        let _ = tokio::time::timeout_at(wait.wake(now, deadline), changes.changed()).await;
    }
}

/// One wait for a server's answer about a sent text.
struct Wait<'s, 'a> {
    sent: &'s Sent<'a>,
    /// Whether a check of the server's own covers the text once it ran.
    expects_check: bool,
    /// How long a ready server gets to begin its check.
    grace: Duration,
    /// When that grace ends, once the server is ready.
    check_grace_end: Option<Instant>,
    idle: Idle,
}

impl Wait<'_, '_> {
    /// How long to stay quiet once the server has answered for the sent text; `None` while
    /// it has not.
    fn answered(&mut self) -> Option<Duration> {
        let sent = self.sent;
        let session = &sent.target.session;
        let shared = &session.shared;
        let published = shared.published(&sent.uri);
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
        if ready && self.check_grace_end.is_none() {
            self.check_grace_end = Some(Instant::now() + self.grace);
        }
        // The server had this text already (another tool sent it): its publish counts once it
        // is about this version, or when the server does not say which version it is about.
        let covered = !sent.changed
            && published
                .as_ref()
                .is_none_or(|published| published.version.is_none_or(|v| v >= sent.version));
        let analysis_pulled = session.spec.pull == Pull::Analysis;
        let done = if self.expects_check {
            let checks = shared.checks();
            let before = sent.checks_before;
            // A check that began after the send and ended; or the one that ran at the send
            // (analysis on change takes the new text into the run under way) and ended.
            let ran = checks.begun > before.begun
                || (before.running && session.spec.check == Check::OnChange);
            // Analysis on change publishes every open file it checked, so its answer for the
            // text is that publish: a check can begin and end before it took the file in
            // (basedpyright runs an empty one for the watched-files change that precedes the
            // open), and its end alone would read as "no errors". An on-save check publishes
            // only the files it found something in, so there its end is the answer.
            let answered = session.spec.check != Check::OnChange || fresh;
            if ran && !checks.running && checks.ended > before.ended && ready && answered {
                Some(AFTER_CHECK_QUIET)
            } else if checks.begun == before.begun
                && !before.running
                && self.check_grace_end.is_some_and(|end| Instant::now() >= end)
                && (analysis_pulled || fresh || covered)
                // Analysis on change reports progress only after its first slice of work, and
                // only when files remain: a pass that checks the importers in one slice shows
                // none, and under load that slice outlasts the grace. Its publishes come at
                // the slice's end; until then the server is busy, which its CPU time shows.
                && (session.spec.check != Check::OnChange
                    || self.idle.observe(session.cpu_time()))
            {
                // No check began: the file is outside every crate, checking is off, or the
                // pass was too short to report progress.
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
        }
        done
    }

    /// When to look again at the latest: when the check-start grace ends, or the next CPU
    /// sample is due (every message the server sends wakes the wait earlier).
    fn wake(&self, now: Instant, deadline: Instant) -> Instant {
        match self.check_grace_end {
            Some(end) if self.expects_check && now < end => end.min(deadline),
            _ => self
                .idle
                .next_look()
                .map_or(deadline, |at| at.min(deadline)),
        }
    }
}

/// Why a file did not settle: its server stopped, or had not finished by the deadline.
fn unsettled(sent: &Sent<'_>, bound: Duration) -> Outcome {
    let session = &sent.target.session;
    let server = &session.spec.name;
    let reason = match session.shared.state().ended.is_some() {
        true => format!("{server} stopped while checking it{}", session.ended()),
        false => format!(
            "{server} had not finished checking it after {}s; call `lsp` with operation \
             `diagnostics` on it in a while",
            seconds(bound)
        ),
    };
    Outcome::unchecked(reason, Arc::clone(&sent.text))
}

/// Opens (or re-syncs) each file on its server and pulls its diagnostics, all at once, until
/// `deadline` (at least [`MIN_PULL`]); a file whose pull fails is left out. tsserver answers
/// for files of its project that are not open, so they are asked without opening them.
pub(crate) async fn pull_files(
    files: &[(&Arc<Session>, &std::path::PathBuf)],
    deadline: Instant,
) -> Vec<(std::path::PathBuf, Vec<Diagnostic>, Arc<str>)> {
    let pulls = files.iter().map(|(session, path)| async move {
        let (uri, text) = match session.spec.pull {
            Pull::TsServer if !session.is_open(path).await => {
                let text: Arc<str> = crate::render::read_text(path).ok()?.into();
                (Url::from_file_path(path).ok()?, text)
            }
            _ => {
                let synced = session.sync(path).await.ok()?;
                (synced.uri, synced.text)
            }
        };
        let remaining = deadline.saturating_duration_since(Instant::now());
        let diagnostics = session.pull_within(&uri, remaining.max(MIN_PULL)).await?;
        Some(((*path).clone(), merge_passes(diagnostics), text))
    });
    futures::future::join_all(pulls)
        .await
        .into_iter()
        .flatten()
        .collect()
}

pub(crate) fn seconds(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    match seconds.fract() == 0.0 {
        true => format!("{seconds:.0}"),
        false => format!("{seconds:.1}"),
    }
}
