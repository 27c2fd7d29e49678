//! The per-run syntax index (issue 23): what a search read and parsed stays for the next one.
//!
//! Each file searched keeps its text, and once a pattern needed its tree, the tree (a large
//! file's pieces' trees, `parse.rs`) and a node-kind index of it (every node's pre-order
//! position, grouped by kind). A later search skips a file whose text lacks a literal of the
//! pattern or whose tree has no node of a kind the pattern can match, and in the rest visits
//! only the nodes of those kinds — never re-reading or re-parsing an unchanged file. Each
//! entry also remembers its matches of the last pattern searched in it, so the same search
//! again costs only the walk.
//!
//! An entry is good only while its file is what it was: every search compares the file's
//! size, modification and change times, inode and device with what they were when it was
//! read (taken before reading, so a write racing the read is caught next time), and the
//! run's own writes drop their entries as they commit ([`SyntaxIndex::attach`]). A file
//! modified less than [`SETTLE`] before it was read is searched but not held: a write in the
//! same clock tick as the one before it could leave every field as it was (git's "racily
//! clean" files). Memory is bounded by `[ast] cache_mb`: the least recently searched entries
//! go first.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use ast_grep_language::SupportLang;

use crate::found::Found;
use crate::parse::Parsed;

/// The default budget, in MiB (`[ast] cache_mb`): Django's 2,821 modules, every one parsed,
/// take about 590 MB resident (`cargo xtask bench ast`), so a tree of that size is held whole.
pub const DEFAULT_CACHE_MB: usize = 1024;

/// What a held tree costs per node beyond its text (tree-sitter's subtrees and child arrays,
/// the allocator's share of what parsing freed between them, the kind index's 4 bytes):
/// chosen so that the estimate is 92–99% of the resident growth `cargo xtask bench ast`
/// measures for Django's modules, the vendored crates and the 14 MB file.
const BYTES_PER_NODE: usize = 115;

/// How long ago a file must have been modified for its entry to be held. File times come from
/// the kernel's coarse clock (a tick, a few ms) and are whole seconds on some file systems.
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

/// A file as it was when it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
    inode: u64,
    device: u64,
}

impl Stamp {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Self {
        Stamp {
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
            device: meta.dev(),
        }
    }

    /// Whether a file with these times, read from `started` on, can be held ([`SETTLE`]).
    pub(crate) fn settled(meta: &std::fs::Metadata, started: SystemTime) -> bool {
        meta.modified()
            .ok()
            .and_then(|modified| started.duration_since(modified).ok())
            .is_some_and(|age| age >= SETTLE)
    }
}

/// One file's entry.
pub(crate) struct Entry {
    pub(crate) stamp: Stamp,
    /// The text, until a search parses it (then it is the tree's).
    text: Option<String>,
    /// The tree, once a search needed it, for the language it was parsed as.
    parsed: OnceLock<(SupportLang, Parsed)>,
    /// When a search last used it (the index's clock), for eviction.
    used: AtomicU64,
    /// The matches of the last pattern searched in it (by [`Compiled::key`]).
    ///
    /// [`Compiled::key`]: crate::compile::Compiled
    memo: Mutex<Option<Memo>>,
}

/// One pattern's matches in one file.
struct Memo {
    key: Arc<str>,
    found: Arc<[Found]>,
    bytes: usize,
}

impl Memo {
    fn new(key: Arc<str>, found: Arc<[Found]>) -> Self {
        let bytes = found
            .iter()
            .map(|f| {
                std::mem::size_of::<Found>()
                    + f.text.len()
                    + f.line_text.len()
                    + f.captures
                        .iter()
                        .map(|(name, text)| name.len() + text.len() + 48)
                        .sum::<usize>()
            })
            .sum();
        Memo { key, found, bytes }
    }
}

impl Entry {
    /// Its text parsed as `lang`, in an entry of its own with the same stamp, not yet held
    /// ([`SyntaxIndex::hold_tree`]); it needs no index, so the prewarm parses without
    /// keeping one alive. None when the parser gives up.
    pub(crate) fn parse_as(&self, lang: SupportLang) -> Option<Arc<Entry>> {
        let tree = Parsed::new(self.text(), lang)?;
        Some(Arc::new(Entry {
            stamp: self.stamp,
            text: None,
            parsed: OnceLock::from((lang, tree)),
            used: AtomicU64::new(0),
            memo: Mutex::new(None),
        }))
    }

    /// The file's text.
    pub(crate) fn text(&self) -> &str {
        match (&self.text, self.parsed.get()) {
            (_, Some((_, parsed))) => parsed.text(),
            (Some(text), None) => text,
            (None, None) => "",
        }
    }

    /// The tree for `lang`, when one was parsed.
    pub(crate) fn parsed(&self, lang: SupportLang) -> Option<&Parsed> {
        self.parsed
            .get()
            .filter(|(parsed_as, _)| *parsed_as == lang)
            .map(|(_, parsed)| parsed)
    }

    /// Its matches of the pattern with `key`, when that was the last one searched in it.
    pub(crate) fn remembered(&self, key: &str) -> Option<Arc<[Found]>> {
        let memo = self
            .memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        memo.as_ref()
            .filter(|memo| &*memo.key == key)
            .map(|memo| Arc::clone(&memo.found))
    }

    fn memo_bytes(&self) -> usize {
        let memo = self
            .memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        memo.as_ref().map_or(0, |memo| memo.bytes)
    }

    fn bytes(&self) -> usize {
        let text = self.text.as_ref().map_or(0, String::len);
        let tree = self.parsed.get().map_or(0, |(_, parsed)| {
            let pieces: usize = parsed
                .pieces
                .iter()
                .map(|piece| piece.root.get_text().len() + piece.nodes() * BYTES_PER_NODE)
                .sum();
            pieces + parsed.extra_text()
        });
        text + tree + self.memo_bytes() + std::mem::size_of::<Entry>()
    }
}

/// What the index holds, for the benchmark and the run's report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexStats {
    /// Files held.
    pub files: usize,
    /// Of those, files whose tree is held.
    pub parsed: usize,
    /// Bytes held (texts, trees and kind indexes, estimated).
    pub bytes: usize,
    /// Entries dropped to stay in budget, since the run began.
    pub evicted: u64,
    /// Files parsed since the run began (each tree a search or the prewarm built).
    pub parses: u64,
}

/// The run's syntax index: shared by `ast_grep` and `ast_edit`, bounded, safe to use from
/// the walk's threads at once.
pub struct SyntaxIndex {
    budget: usize,
    clock: AtomicU64,
    /// The clock when the latest search began: what it has used is not evicted for it.
    epoch: AtomicU64,
    inner: Mutex<Inner>,
    /// Files parsed so far.
    parses: AtomicU64,
    /// The commit watcher, once attached to the run's workspace (held here so it lives as
    /// long as the index).
    watcher: OnceLock<Arc<tools_core::CommitWatcher>>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<PathBuf, Arc<Entry>>,
    bytes: usize,
    evicted: u64,
    /// The search since whose start nothing more fits: until the next one begins (or
    /// something is dropped), what does not fit is not held, without looking again.
    full_since: Option<u64>,
}

impl std::fmt::Debug for SyntaxIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyntaxIndex")
            .field("budget", &self.budget)
            .field("stats", &self.stats())
            .finish()
    }
}

impl SyntaxIndex {
    /// An index that holds at most `cache_mb` MiB; 0 holds nothing (every search reads and
    /// parses, as without an index).
    pub fn new(cache_mb: usize) -> Arc<Self> {
        Arc::new(SyntaxIndex {
            budget: cache_mb.saturating_mul(1 << 20),
            clock: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            inner: Mutex::new(Inner::default()),
            parses: AtomicU64::new(0),
            watcher: OnceLock::new(),
        })
    }

    /// The most it holds, in bytes.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// Whether it holds anything at all (a budget of 0 holds nothing).
    pub fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// Drops the entries of the files each commit on `workspace` writes, from now on.
    pub fn attach(self: &Arc<Self>, workspace: &tools_core::Workspace) {
        let index = Arc::downgrade(self);
        self.watcher.get_or_init(|| {
            let watcher: Arc<tools_core::CommitWatcher> = Arc::new(move |paths: &[PathBuf]| {
                if let Some(index) = index.upgrade() {
                    index.forget(paths);
                }
            });
            workspace.watch_commits(&watcher);
            watcher
        });
    }

    /// Drops what is held of `paths`.
    pub fn forget(&self, paths: &[PathBuf]) {
        let mut inner = self.lock();
        for path in paths {
            if let Some(entry) = inner.entries.remove(path) {
                inner.bytes = inner.bytes.saturating_sub(entry.bytes());
                inner.full_since = None;
            }
        }
    }

    /// What it holds now.
    pub fn stats(&self) -> IndexStats {
        let inner = self.lock();
        IndexStats {
            files: inner.entries.len(),
            parsed: inner
                .entries
                .values()
                .filter(|e| e.parsed.get().is_some())
                .count(),
            bytes: inner.bytes,
            evicted: inner.evicted,
            parses: self.parses.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// The entry of `path` when it is still what the file holds (`stamp`, taken now),
    /// without counting as a use of it (the prewarm's look: recency is the searches').
    pub(crate) fn peek(&self, path: &Path, stamp: Stamp) -> Option<Arc<Entry>> {
        let inner = self.lock();
        inner
            .entries
            .get(path)
            .filter(|entry| entry.stamp == stamp)
            .map(Arc::clone)
    }

    /// The entry of `path` when it is still what the file holds (`stamp`, taken now).
    pub(crate) fn get(&self, path: &Path, stamp: Stamp) -> Option<Arc<Entry>> {
        if self.budget == 0 {
            return None;
        }
        let mut inner = self.lock();
        let entry = inner.entries.get(path)?;
        if entry.stamp != stamp {
            let stale = inner.entries.remove(path)?;
            inner.bytes = inner.bytes.saturating_sub(stale.bytes());
            inner.full_since = None;
            return None;
        }
        entry.used.store(self.tick(), Ordering::Relaxed);
        Some(Arc::clone(entry))
    }

    /// Reads `path` and holds its text when it has settled ([`Stamp::settled`]) and, with
    /// `admit`, there is room: the one way a file gets into the index.
    pub(crate) fn read(&self, path: &Path, admit: Admit) -> Read {
        let started = SystemTime::now();
        let Ok((bytes, meta)) = tools_core::read_regular_with_metadata(path) else {
            return Read::Unreadable;
        };
        match String::from_utf8(bytes) {
            Ok(text) => {
                let settled = Stamp::settled(&meta, started);
                let (entry, kept) = self.admit_text(path, Stamp::of(&meta), settled, text, admit);
                Read::Text { entry, kept }
            }
            Err(error) => Read::NotText(error.into_bytes()),
        }
    }

    /// Holds `text`, read after `stamp` was taken, when `settled` and, with `admit`, there
    /// is room; returns the entry to search in and whether it is held.
    fn admit_text(
        &self,
        path: &Path,
        stamp: Stamp,
        settled: bool,
        text: String,
        admit: Admit,
    ) -> (Arc<Entry>, Kept) {
        let entry = Arc::new(Entry {
            stamp,
            text: Some(text),
            parsed: OnceLock::new(),
            used: AtomicU64::new(self.tick()),
            memo: Mutex::new(None),
        });
        if self.budget == 0 || !settled {
            return (entry, Kept::Other);
        }
        let bytes = entry.bytes();
        let mut inner = self.lock();
        // The prewarm never replaces an entry: one held meanwhile is a search's.
        if admit == Admit::IfRoom
            && let Some(held) = inner.entries.get(path)
        {
            return match held.stamp == stamp {
                true => (Arc::clone(held), Kept::Held),
                false => (entry, Kept::Other),
            };
        }
        if let Some(old) = inner.entries.remove(path) {
            inner.bytes = inner.bytes.saturating_sub(old.bytes());
        }
        if !self.make_room(&mut inner, bytes, admit) {
            return (entry, Kept::NoRoom);
        }
        inner.entries.insert(path.to_owned(), Arc::clone(&entry));
        inner.bytes += bytes;
        (entry, Kept::Held)
    }

    /// Parses `entry` as `lang` and puts an entry that holds the tree instead of the bare
    /// text in its place. None when the parser gives up.
    pub(crate) fn parse(
        &self,
        path: &Path,
        entry: &Arc<Entry>,
        lang: SupportLang,
    ) -> Option<Arc<Entry>> {
        if entry.parsed(lang).is_some() {
            return Some(Arc::clone(entry));
        }
        let parsed = entry.parse_as(lang)?;
        // Held or not, the search has the tree it needs.
        self.hold_tree(path, entry, &parsed, Admit::Evicting);
        Some(parsed)
    }

    /// Holds `parsed`, the tree [`Entry::parse_as`] made of `entry`, in `entry`'s place
    /// while `entry` is what the index holds of `path` (a newer one, the file changed,
    /// stays), `admit` saying whether room may be made.
    pub(crate) fn hold_tree(
        &self,
        path: &Path,
        entry: &Arc<Entry>,
        parsed: &Arc<Entry>,
        admit: Admit,
    ) -> Kept {
        self.parses.fetch_add(1, Ordering::Relaxed);
        parsed.used.store(self.tick(), Ordering::Relaxed);
        if self.budget == 0 {
            return Kept::Other;
        }
        let bytes = parsed.bytes();
        let mut inner = self.lock();
        if !inner
            .entries
            .get(path)
            .is_some_and(|held| Arc::ptr_eq(held, entry))
        {
            return Kept::Other;
        }
        let freed = entry.bytes();
        // The prewarm keeps the text it parsed from when the tree does not fit.
        if admit == Admit::IfRoom && inner.bytes.saturating_sub(freed) + bytes > self.budget {
            return Kept::NoRoom;
        }
        inner.entries.remove(path);
        inner.bytes = inner.bytes.saturating_sub(freed);
        // Only a search gets here without room: it searches the tree it has, and neither
        // the tree nor the text it replaces is held.
        if !self.make_room(&mut inner, bytes, admit) {
            return Kept::NoRoom;
        }
        inner.entries.insert(path.to_owned(), Arc::clone(parsed));
        inner.bytes += bytes;
        Kept::Held
    }

    /// Remembers `found` as `entry`'s matches of the pattern with `key`, in place of the
    /// last pattern's, while `entry` is what the index holds of `path`.
    pub(crate) fn remember(
        &self,
        path: &Path,
        entry: &Arc<Entry>,
        key: &Arc<str>,
        found: Arc<[Found]>,
    ) {
        if self.budget == 0 {
            return;
        }
        let mut inner = self.lock();
        if !inner
            .entries
            .get(path)
            .is_some_and(|held| Arc::ptr_eq(held, entry))
        {
            return;
        }
        let memo = Memo::new(Arc::clone(key), found);
        let added = memo.bytes;
        let mut held = entry
            .memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(old) = held.take() {
            inner.bytes = inner.bytes.saturating_sub(old.bytes);
        }
        // The entry itself was used by this search, so making room never drops it.
        if self.make_room(&mut inner, added, Admit::Evicting) {
            *held = Some(memo);
            inner.bytes += added;
        }
    }

    /// A search begins: from now on, what it uses is kept from eviction for it.
    pub(crate) fn begin(&self) {
        self.epoch.store(self.tick(), Ordering::Relaxed);
    }

    /// Makes room for `bytes` more by dropping the least recently used entries that the
    /// running search has not used; false when there is no such room, and then nothing new
    /// is held until the next search: a search over more than the budget keeps what it
    /// held (hits the next time) rather than evicting its own start before it comes round
    /// again. With [`Admit::IfRoom`] nothing is dropped.
    fn make_room(&self, inner: &mut Inner, bytes: usize, admit: Admit) -> bool {
        if inner.bytes + bytes <= self.budget {
            return true;
        }
        let epoch = self.epoch.load(Ordering::Relaxed);
        if admit == Admit::IfRoom || bytes > self.budget || inner.full_since == Some(epoch) {
            return false;
        }
        let mut old: Vec<(u64, PathBuf, usize)> = inner
            .entries
            .iter()
            .filter_map(|(path, entry)| {
                let used = entry.used.load(Ordering::Relaxed);
                (used < epoch).then(|| (used, path.clone(), entry.bytes()))
            })
            .collect();
        old.sort_unstable_by_key(|(used, _, _)| *used);
        // Down to 90% of the budget, so the next insert does not look again at once.
        let target = (self.budget / 10 * 9).saturating_sub(bytes);
        for (_, path, size) in old {
            if inner.bytes <= target {
                break;
            }
            inner.entries.remove(&path);
            inner.bytes = inner.bytes.saturating_sub(size);
            inner.evicted += 1;
        }
        let fits = inner.bytes + bytes <= self.budget;
        if !fits {
            inner.full_since = Some(epoch);
        }
        fits
    }
}

/// What reading a file for the index gave.
pub(crate) enum Read {
    /// Its text, in an entry, and whether the index holds that entry.
    Text { entry: Arc<Entry>, kept: Kept },
    /// Bytes that are not UTF-8.
    NotText(Vec<u8>),
    /// Not a regular file that could be read.
    Unreadable,
}

/// Whether the index holds what it was offered, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// It holds it.
    Held,
    /// There was no room for it, and none could be made.
    NoRoom,
    /// Not for want of room: the budget is 0, the file was modified just before it was
    /// read ([`Stamp::settled`]), or the index holds another entry of the file, a newer one
    /// or (offered with [`Admit::IfRoom`]) a search's.
    Other,
}

/// Whether something new may push older entries out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// A search's: the least recently used go to make room.
    Evicting,
    /// The prewarm's: held only where there is room, so it never drops what a search used.
    IfRoom,
}

/// The `[ast]` table of `agent-tools.toml`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AstConfig {
    /// MiB the run's syntax index may hold (default 1024; 0 keeps nothing between searches).
    pub cache_mb: usize,
    /// Whether the run parses the workspace's source files into the index in the background
    /// as it starts, at idle CPU priority and never past `cache_mb`, so that even its first
    /// search of a pattern that needs every file parses none (default true: a search's
    /// parse is most of its time, and the prewarm only takes a core nothing else wants; the
    /// price is that a run holds the trees from its start, up to `cache_mb`, whether or
    /// not it searches).
    pub prewarm: bool,
}

impl Default for AstConfig {
    fn default() -> Self {
        AstConfig {
            cache_mb: DEFAULT_CACHE_MB,
            prewarm: true,
        }
    }
}
