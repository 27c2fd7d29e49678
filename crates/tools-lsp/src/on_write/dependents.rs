//! The files a write did not touch but may have broken, reached per server ([`Reach`]):
//! publishes of a project-wide check, tsserver's importers, or the translation units that
//! include a written header, rebuilt against it.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use async_lsp::lsp_types::{Diagnostic, Url};
use tokio::time::Instant;
use tools_core::{UncheckedDependents, Workspace};

use super::includes::{Database, includers, is_header};
use super::settle::{pull_files, seconds};
use crate::render::merge_passes;
use tools_lsp_client::Reach;
use tools_lsp_client::Session;

use super::{
    DEPENDENTS_CAP, Dependents, DiagnosticsOnWrite, Header, JudgedHeader, OtherFile, Snapshot,
    Target, UNCHECKED_SAMPLE, distinct_sessions,
};

impl DiagnosticsOnWrite {
    /// Takes the written headers that units of a compilation database include out of the
    /// files to settle: each is judged through those units.
    pub(super) fn split_headers(
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

    /// The files the write did not touch whose diagnostics its servers have now, and the
    /// dependents that could not be checked.
    pub(super) async fn dependents(
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
}

/// The translation units of a clangd session's root.
pub(super) fn database_of(session: &Session) -> Database {
    super::includes::database(&session.root)
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
