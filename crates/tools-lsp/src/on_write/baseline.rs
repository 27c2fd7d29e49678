//! The LSP-7 baselines of a write: what the files it will touch, and the files that depend
//! on them, had before it, taken into the registry before the tool runs (or, for files its
//! arguments do not name, after it, from the text the tool says they had).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_lsp::lsp_types::{Diagnostic, Url};
use tokio::time::Instant;
use tools_lsp_client::{Check, Pull, Reach, Session};

use super::dependents::{DEPENDENTS_CAP, rebuild_units};
use super::includes::{database, includers, is_header};
use super::reported::Registry;
use super::settle::{Outcome, project_settled, pull_files, settle_all};
use super::targets::{Target, distinct_sessions};
use super::written::Snapshot;
use crate::render::merge_passes;

/// Before the tool runs: the baselines of the named files the registry does not know (their
/// text on disk, synced, saved and settled), of the files that depend on them, and, for a
/// server that publishes the whole project, its settled publishes.
pub(super) async fn before_write(
    registry: &Registry,
    targets: &[Target],
    deadline: Instant,
    bound: Duration,
) {
    for session in distinct_sessions(targets) {
        session.rescan_disk().await;
    }
    let unknown: Vec<(&Target, Option<&str>)> = targets
        .iter()
        .filter(|target| !registry.knows(&target.path))
        .map(|target| (target, None))
        .collect();
    if !unknown.is_empty() {
        let outcomes = settle_all(&unknown, deadline, bound).await;
        take_baselines(registry, &unknown, outcomes);
    }
    for session in distinct_sessions(targets) {
        let written: Vec<PathBuf> = targets
            .iter()
            .filter(|t| Arc::ptr_eq(&t.session, &session))
            .map(|t| t.path.clone())
            .collect();
        match session.spec.reach {
            Reach::Publishes => {
                // The first write waits for the project's first check: until it ends, a
                // file's first publish is not its state before the write.
                if project_settled(&session, deadline).await {
                    baseline_publishes(registry, &session);
                }
            }
            Reach::Importers => {
                if let Some((importers, _)) =
                    session.importers(&written, DEPENDENTS_CAP, deadline).await
                {
                    pull_baselines(registry, &session, &importers, deadline).await;
                }
            }
            Reach::Includers => {
                let headers: Vec<PathBuf> = written.into_iter().filter(|p| is_header(p)).collect();
                if headers.is_empty() {
                    continue;
                }
                let units = includers(&database(&session.root), &session.root, &headers);
                let unknown: Vec<PathBuf> =
                    units.into_iter().filter(|u| !registry.knows(u)).collect();
                let built = rebuild_units(&session, &unknown, deadline).await;
                let mut reported = registry.lock();
                for (path, diagnostics, text) in built {
                    reported.baseline(&path, &diagnostics, Some(text));
                }
            }
        }
    }
}

/// After the tool ran, for the written files the registry does not know (the arguments did
/// not name them): their baselines from the text the tool says they had, sent unsaved, and
/// those of their dependents, asked while the server holds that text. Not for a written
/// header judged through its units: clangd reads it from the disk, which holds the new text
/// already, so units not known yet have no earlier state to compare with and are reported as
/// such.
pub(super) async fn after_write(
    registry: &Registry,
    targets: &[Target],
    previous: &HashMap<PathBuf, String>,
    snapshots: &[Snapshot],
    deadline: Instant,
    bound: Duration,
) {
    let earlier: Vec<(&Target, Option<&str>)> = targets
        .iter()
        .filter(|target| !registry.knows(&target.path))
        .filter_map(|target| {
            let text = previous.get(&target.path)?;
            Some((target, Some(text.as_str())))
        })
        .collect();
    // A server that only publishes may already have answered for the earlier text (it was
    // open before the call): its publish is the baseline. Sending that text again would get
    // no answer from clangd, which does not publish for a text it last built.
    let mut answered = Vec::new();
    for (target, text) in &earlier {
        if let Some(diagnostics) = published_for(target, text.unwrap_or_default(), snapshots).await
        {
            answered.push((*target, diagnostics));
        }
    }
    {
        let mut reported = registry.lock();
        for (target, diagnostics) in &answered {
            let text = previous.get(&target.path).map(|t| Arc::from(t.as_str()));
            reported.baseline(&target.path, diagnostics, text);
        }
    }
    let earlier: Vec<(&Target, Option<&str>)> = earlier
        .into_iter()
        .filter(|(target, _)| !answered.iter().any(|(t, _)| std::ptr::eq(*t, *target)))
        .collect();
    if earlier.is_empty() {
        return;
    }
    let outcomes = settle_all(&earlier, deadline, bound).await;
    take_baselines(registry, &earlier, outcomes);
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
        if let Some((importers, _)) = session.importers(&written, DEPENDENTS_CAP, deadline).await {
            pull_baselines(registry, &session, &importers, deadline).await;
        }
    }
}

/// Takes what a server that checks the whole project by itself published, once its check
/// settled before a write, as the baseline of every file the registry does not know yet
/// (LSP-7: new means new since the run began, whichever file a later write breaks). Not for
/// rust-analyzer, whose publishes carry only `cargo check`'s half of a file's diagnostics:
/// its files' baselines are taken when they are settled.
fn baseline_publishes(registry: &Registry, session: &Session) {
    if session.spec.check == Check::None || session.spec.pull == Pull::Analysis {
        return;
    }
    let publishes = session.shared.publishes();
    let mut reported = registry.lock();
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
async fn pull_baselines(
    registry: &Registry,
    session: &Arc<Session>,
    paths: &[PathBuf],
    deadline: Instant,
) {
    let unknown: Vec<(&Arc<Session>, &PathBuf)> = paths
        .iter()
        .filter(|path| !registry.knows(path))
        .map(|path| (session, path))
        .collect();
    let pulled = pull_files(&unknown, deadline).await;
    let mut reported = registry.lock();
    for (path, diagnostics, text) in pulled {
        reported.baseline(&path, &diagnostics, Some(text));
    }
}

/// Records what each file had before the write. A baseline that did not settle is not
/// taken; the next write tries again.
fn take_baselines(registry: &Registry, items: &[(&Target, Option<&str>)], outcomes: Vec<Outcome>) {
    let mut reported = registry.lock();
    for ((target, _), outcome) in items.iter().zip(outcomes) {
        if outcome.unchecked.is_none() {
            reported.baseline(&target.path, &outcome.diagnostics, Some(outcome.text));
        }
    }
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
