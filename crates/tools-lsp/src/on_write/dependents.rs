//! The step after the settle: the files a write did not touch but may have broken, reached
//! per server ([`Reach`]) — the publishes of a project-wide check, tsserver's importers, or
//! the translation units that include a written header, rebuilt against it — and the
//! dependents that could not be checked in time.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_lsp::lsp_types::{Diagnostic, Url};
use tokio::time::Instant;
use tools_core::{UncheckedDependents, Workspace};
use tools_lsp_client::{Reach, Session};

use super::settle::{pull_files, seconds};
use super::targets::{Target, distinct_sessions};
use super::written::{Header, Snapshot};
use crate::render::merge_passes;

/// The most files that import a written one asked about after a write (tsserver), and the
/// most translation units rebuilt for a written header (clangd).
pub(super) const DEPENDENTS_CAP: usize = 500;

/// How many dependents of one kind a report names as examples when it did not check them.
const UNCHECKED_SAMPLE: usize = 3;

/// What the dependents of the written files came to.
#[derive(Default)]
pub(super) struct Dependents {
    pub(super) others: Vec<OtherFile>,
    pub(super) unchecked: Vec<UncheckedDependents>,
    pub(super) headers: Vec<JudgedHeader>,
}

/// A file the write did not touch, as its server sees it after the write.
pub(super) struct OtherFile {
    pub(super) path: PathBuf,
    pub(super) session: Arc<Session>,
    pub(super) diagnostics: Vec<Diagnostic>,
    /// What it had before the write, when the registry has no entry for it yet.
    pub(super) before: Option<Vec<Diagnostic>>,
    pub(super) text: Arc<str>,
}

/// A written header and the diagnostics of each unit that was rebuilt with it.
pub(super) struct JudgedHeader {
    pub(super) header: Header,
    pub(super) through: Vec<Vec<Diagnostic>>,
}

/// The files the write did not touch whose diagnostics its servers have now, and the
/// dependents that could not be checked within `bound`.
pub(super) async fn dependents(
    workspace: &Workspace,
    targets: &[Target],
    headers: Vec<Header>,
    snapshots: &[Snapshot],
    deadline: Instant,
    bound: Duration,
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
                if let Some(snapshot) = snapshots.iter().find(|s| Arc::ptr_eq(&s.session, &session))
                {
                    published(workspace, &session, snapshot, &written, &mut found);
                }
            }
            Reach::Importers => {
                let paths: Vec<PathBuf> = targets
                    .iter()
                    .filter(|t| Arc::ptr_eq(&t.session, &session))
                    .map(|t| t.path.clone())
                    .collect();
                importers(workspace, &session, &paths, deadline, bound, &mut found).await;
            }
            Reach::Includers => {}
        }
    }
    for header in headers {
        through_units(workspace, header, &written, deadline, bound, &mut found).await;
    }
    found
}

/// The files in the workspace whose publishes changed since `snapshot`: a server that
/// checks the project by itself published them while checking the write.
fn published(
    workspace: &Workspace,
    session: &Arc<Session>,
    snapshot: &Snapshot,
    written: &HashSet<PathBuf>,
    found: &mut Dependents,
) {
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
            session: Arc::clone(session),
            diagnostics: merge_passes(published.diagnostics),
            before: Some(before.map(|b| b.diagnostics.clone()).unwrap_or_default()),
            text,
        });
    }
}

/// The files that import the written `paths`, transitively, each pulled for its
/// diagnostics; those not answered in time, and a search that was capped, are counted.
async fn importers(
    workspace: &Workspace,
    session: &Arc<Session>,
    paths: &[PathBuf],
    deadline: Instant,
    bound: Duration,
    found: &mut Dependents,
) {
    let Some((importers, capped)) = session.importers(paths, DEPENDENTS_CAP, deadline).await else {
        return;
    };
    let asked: Vec<(&Arc<Session>, &PathBuf)> =
        importers.iter().map(|path| (session, path)).collect();
    let pulled = pull_files(&asked, deadline).await;
    let answered: HashSet<PathBuf> = pulled.iter().map(|(path, _, _)| path.clone()).collect();
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
                "they import a written file, and were not checked within the write's {}s",
                seconds(bound)
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
                "more files import the written ones than the {DEPENDENTS_CAP} asked about (or \
                 the search ran out of time); run `lsp` with operation `diagnostics` and file \
                 `*` for the whole project"
            ),
            sample: Vec::new(),
        });
    }
    for (path, diagnostics, text) in pulled {
        found.others.push(OtherFile {
            path,
            session: Arc::clone(session),
            diagnostics,
            before: None,
            text,
        });
    }
}

/// The units that include a written header, rebuilt against it: their new errors are
/// fallout, and what they say of the header is its state.
async fn through_units(
    workspace: &Workspace,
    header: Header,
    written: &HashSet<PathBuf>,
    deadline: Instant,
    bound: Duration,
    found: &mut Dependents,
) {
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
                seconds(bound)
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

/// Rebuilds each unit on its server (closed and opened again, so it is built against the
/// headers on disk now) and waits, until `deadline`, for its publish.
pub(super) async fn rebuild_units(
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
