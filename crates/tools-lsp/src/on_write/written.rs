//! The step between the tool and the servers: the written files as their servers stand
//! before the write reaches them. Each server's publishes are noted (the baseline of every
//! file it publishes about while checking the write), servers that do not watch files learn
//! of other changed files, and written headers that units of a compilation database include
//! are set apart: each is judged through those units, not settled alone.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_lsp::lsp_types::Url;
use tools_lsp_client::{Published, Reach, Session};

use super::includes::{Database, database, includers, is_header};
use super::targets::{Target, distinct_sessions};

/// The written files, ready to be sent to their servers.
pub(super) struct Written {
    /// The files settled on their own.
    pub(super) targets: Vec<Target>,
    /// The headers judged through the units that include them.
    pub(super) headers: Vec<Header>,
    /// Each server's publishes before the write reached it.
    pub(super) snapshots: Vec<Snapshot>,
}

/// A server's publishes as they stood before the written files were sent to it.
pub(super) struct Snapshot {
    pub(super) session: Arc<Session>,
    pub(super) publishes: HashMap<Url, Published>,
}

/// A written header judged through the units that include it.
pub(super) struct Header {
    pub(super) path: PathBuf,
    pub(super) shown: String,
    pub(super) session: Arc<Session>,
    pub(super) units: Vec<PathBuf>,
    /// Found without a compilation database (see [`Database::guessed`]).
    pub(super) guessed: bool,
}

impl Written {
    /// Notes every server's publishes, rescans the disks of servers that do not watch
    /// files, and sets the included headers apart.
    pub(super) async fn prepare(targets: Vec<Target>) -> Written {
        let snapshots = distinct_sessions(&targets)
            .into_iter()
            .map(|session| Snapshot {
                publishes: session.shared.publishes(),
                session,
            })
            .collect();
        for session in distinct_sessions(&targets) {
            // Servers that do not watch files learn about other changed files now.
            session.rescan_disk().await;
        }
        let (targets, headers) = split_headers(targets);
        Written {
            targets,
            headers,
            snapshots,
        }
    }
}

/// Takes the written headers that units of a compilation database include out of the files
/// to settle.
fn split_headers(targets: Vec<Target>) -> (Vec<Target>, Vec<Header>) {
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
            .or_insert_with(|| database(&target.session.root));
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
