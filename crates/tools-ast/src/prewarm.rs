//! Filling the syntax index before the first search (`[ast] prewarm`, issue 23).
//!
//! A run's first search of a pattern that needs every file parses every file, and parsing
//! is most of what the ast-grep CLI does too: on the same engine such a search cannot be much
//! faster than the CLI's. A run that asks for it parses the workspace's source files into the
//! index as it starts instead, in the background: a file and its tree and node kinds, as a
//! search would have held them, so the first search of any pattern finds them held and
//! only walks. The threads run at idle CPU priority (`SCHED_IDLE`: only when nothing else
//! wants the core), never make room (what a search held stays; the prewarm stops when the
//! budget is full) and stop once the index is dropped. A file changed later is caught by its
//! stamp like any other.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime};

use ast_grep_core::language::Language as _;
use ast_grep_language::SupportLang;

use crate::index::{Admit, Kept, Read, SETTLE, Stamp, SyntaxIndex};

/// What a prewarm did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrewarmReport {
    /// Source files of a language the index knows, under the root, that it took up (the
    /// walk stops where their text alone would be more than the budget).
    pub files: usize,
    /// Of those, files whose tree the index now holds (parsed by the prewarm or before it).
    pub held: usize,
    /// Whether it stopped because the budget was full (or would have been).
    pub full: bool,
    /// Whether it stopped because the index was dropped.
    pub abandoned: bool,
    /// How long it took.
    pub elapsed: Duration,
}

/// A running prewarm: dropping it leaves it running; [`Prewarm::wait`] waits for it.
#[derive(Debug)]
pub struct Prewarm {
    /// None when no thread could be started (nothing is prewarmed).
    thread: Option<std::thread::JoinHandle<PrewarmReport>>,
}

impl Prewarm {
    /// Waits for it to end.
    pub fn wait(self) -> PrewarmReport {
        self.thread
            .and_then(|thread| thread.join().ok())
            .unwrap_or_default()
    }
}

impl SyntaxIndex {
    /// Starts parsing the source files under `root` into the index, in the background.
    pub fn prewarm(self: &Arc<Self>, root: &Path) -> Prewarm {
        let index = Arc::downgrade(self);
        let root = root.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("ast-prewarm".into())
            .spawn(move || {
                // Threads started from here inherit the priority, the pieces' ones too.
                let priority = tools_process::idle_priority();
                tracing::debug!(?priority, "ast prewarm started");
                let report = prewarm(&index, &root);
                if report.abandoned && report.held == 0 {
                    tracing::debug!(?report, "ast prewarm abandoned: the index was dropped");
                    return report;
                }
                tracing::info!(
                    files = report.files,
                    held = report.held,
                    full = report.full,
                    abandoned = report.abandoned,
                    ms = report.elapsed.as_millis() as u64,
                    "ast prewarm ended"
                );
                report
            });
        // No thread to be had: nothing is prewarmed, and searches parse as they would.
        Prewarm {
            thread: thread.ok(),
        }
    }
}

fn prewarm(index: &Weak<SyntaxIndex>, root: &Path) -> PrewarmReport {
    let started = Instant::now();
    let Some(budget) = index.upgrade().map(|index| index.budget()) else {
        return PrewarmReport {
            abandoned: true,
            elapsed: started.elapsed(),
            ..PrewarmReport::default()
        };
    };
    // The walk ends once the source files' text alone is more than the budget holds
    // (nothing past that could be kept), and when the index is dropped: a run built only
    // to be described (the server's instructions) drops it at once.
    let mut text_bytes = 0u64;
    let mut files: Vec<(PathBuf, SupportLang)> = Vec::new();
    let mut over_budget = false;
    for entry in ignore::WalkBuilder::new(root).require_git(false).build() {
        if index.strong_count() == 0 {
            break;
        }
        let Ok(entry) = entry else { continue };
        let Some(lang) = SupportLang::from_path(entry.path()) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        text_bytes += meta.len();
        if text_bytes > budget as u64 {
            over_budget = true;
            break;
        }
        files.push((entry.into_path(), lang));
    }
    let held = AtomicUsize::new(0);
    let filled = AtomicBool::new(false);
    let abandoned = AtomicBool::new(index.strong_count() == 0);
    let unsettled = Mutex::new(Vec::new());
    let pass = |files: &[(PathBuf, SupportLang)]| {
        crate::parse::on_every_core(files, |(path, lang)| {
            if abandoned.load(Ordering::Relaxed) || filled.load(Ordering::Relaxed) {
                return;
            }
            match warm(index, path, *lang) {
                Warmed::Held => {
                    held.fetch_add(1, Ordering::Relaxed);
                }
                Warmed::Full => filled.store(true, Ordering::Relaxed),
                Warmed::Gone => abandoned.store(true, Ordering::Relaxed),
                Warmed::Unsettled => unsettled
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((path.clone(), *lang)),
                Warmed::Not => {}
            }
        });
    };
    pass(&files);
    // Files written just before (a checkout made as the run starts) are not held until they
    // have settled: once more when they have, or an agent started on a fresh clone would
    // find nothing prewarmed. A file still being written then is left to the searches.
    let again = std::mem::take(&mut *unsettled.lock().unwrap_or_else(PoisonError::into_inner));
    let stopped = || abandoned.load(Ordering::Relaxed) || filled.load(Ordering::Relaxed);
    if !again.is_empty() && !stopped() {
        std::thread::sleep(SETTLE);
        if index.strong_count() == 0 {
            abandoned.store(true, Ordering::Relaxed);
        }
        pass(&again);
    }
    PrewarmReport {
        files: files.len(),
        held: held.into_inner(),
        full: over_budget || filled.into_inner(),
        abandoned: abandoned.into_inner(),
        elapsed: started.elapsed(),
    }
}

enum Warmed {
    /// Its tree is held.
    Held,
    /// It did not fit.
    Full,
    /// The index was dropped.
    Gone,
    /// Modified too recently to be held ([`SETTLE`]).
    Unsettled,
    /// Not held, for a reason of its own (not text, changed or held anew by a search
    /// meanwhile, a parser that gave up).
    Not,
}

/// Reads, parses and holds one file as a search would, where there is room. The index is
/// kept alive only for its map's steps, not through the parse: a run that ends frees it
/// while a prewarm thread is still parsing, however long an idle thread takes to.
fn warm(index: &Weak<SyntaxIndex>, path: &Path, lang: SupportLang) -> Warmed {
    let Ok(meta) = std::fs::metadata(path) else {
        return Warmed::Not;
    };
    if !Stamp::settled(&meta, SystemTime::now()) {
        return Warmed::Unsettled;
    }
    let entry = {
        let Some(index) = index.upgrade() else {
            return Warmed::Gone;
        };
        match index.peek(path, Stamp::of(&meta)) {
            Some(entry) if entry.parsed(lang).is_some() => return Warmed::Held,
            Some(entry) => entry,
            None => match index.read(path, Admit::IfRoom) {
                Read::Text {
                    entry,
                    kept: Kept::Held,
                } => entry,
                Read::Text {
                    kept: Kept::NoRoom, ..
                } => return Warmed::Full,
                // Modified just now, or a search's entry: a search reads it afresh anyway.
                Read::Text {
                    kept: Kept::Other, ..
                }
                | Read::NotText(_)
                | Read::Unreadable => return Warmed::Not,
            },
        }
    };
    let Some(parsed) = entry.parse_as(lang) else {
        return Warmed::Not;
    };
    for piece in parsed.parsed(lang).map_or(&[][..], |p| &p.pieces) {
        piece.index_kinds();
    }
    let Some(index) = index.upgrade() else {
        return Warmed::Gone;
    };
    match index.hold_tree(path, &entry, &parsed, Admit::IfRoom) {
        Kept::Held => Warmed::Held,
        Kept::NoRoom => Warmed::Full,
        // A search may have held its own tree of it meanwhile.
        Kept::Other => match index.peek(path, entry.stamp) {
            Some(held) if held.parsed(lang).is_some() => Warmed::Held,
            _ => Warmed::Not,
        },
    }
}
