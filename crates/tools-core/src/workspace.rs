//! The workspace root every path argument is confined to (PROD-5), and the one way files are
//! written: under the workspace's write lock, each file checked against the content its writer
//! computed from and confined again on its resolved path, then written through a temp file and
//! a rename, several files all or nothing.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use sha2::{Digest, Sha256};

use crate::{Error, Result, ToolError};

mod files;

use self::files::{faults, remove_created, restore, special_kind, stage};
pub use tools_process::{read_regular, read_regular_with_metadata};

/// The root of the run's workspace, canonical, with path confinement and safe writes. Clones
/// (and every `Workspace` opened on the same root in this process) share one write lock.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    shared: Arc<Shared>,
}

/// What every `Workspace` on one root in this process shares: the write lock, and who is
/// told of each commit.
#[derive(Default)]
struct Shared {
    lock: Mutex<()>,
    watchers: Mutex<Vec<std::sync::Weak<CommitWatcher>>>,
}

/// Told the paths of each commit (tools-ast drops what it holds of them).
pub type CommitWatcher = dyn Fn(&[PathBuf]) + Send + Sync;

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

/// One file's change in an all-or-nothing write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// Create or replace the file with these bytes (parents are created).
    Write(Vec<u8>),
    /// Remove the file.
    Delete,
}

/// A digest of a file's bytes: what a writer read, checked again when it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentHash([u8; 32]);

impl ContentHash {
    /// The hash of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        ContentHash(Sha256::digest(bytes).into())
    }
}

/// A file as read: its bytes and their hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The bytes, or `None` when the file does not exist.
    pub bytes: Option<Vec<u8>>,
    /// What [`Workspace::commit`] should expect to find for this read to still hold.
    pub expect: Expect,
}

/// What a file must hold at commit time for a change computed from it to land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Whatever it holds (a whole-file write that does not depend on the old text).
    Anything,
    /// It must not exist (creating a file).
    Absent,
    /// It must hold exactly these bytes.
    Content(ContentHash),
}

impl Expect {
    /// What reading `bytes` (None: no file) implies.
    pub fn of(bytes: Option<&[u8]>) -> Self {
        match bytes {
            None => Expect::Absent,
            Some(bytes) => Expect::Content(ContentHash::of(bytes)),
        }
    }

    fn holds(&self, current: Option<&[u8]>) -> bool {
        match (self, current) {
            (Expect::Anything, _) => true,
            (Expect::Absent, current) => current.is_none(),
            (Expect::Content(_), None) => false,
            (Expect::Content(hash), Some(bytes)) => ContentHash::of(bytes) == *hash,
        }
    }
}

/// One file of a commit: the path (absolute, as [`Workspace::resolve`] or
/// [`Workspace::confine`] gave it), what it must hold, and the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file.
    pub path: PathBuf,
    /// What it must hold for the change to land.
    pub expect: Expect,
    /// The change.
    pub change: FileChange,
}

impl Change {
    /// A change that lands whatever the file holds.
    pub fn anyway(path: PathBuf, change: FileChange) -> Self {
        Change {
            path,
            expect: Expect::Anything,
            change,
        }
    }
}

/// What a file held before a commit changed it (`None`: it did not exist).
pub type Previous = Vec<(PathBuf, Option<Vec<u8>>)>;

/// Why a commit did not land, or landed only in part.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// A file no longer holds what the change was computed from; nothing was written.
    #[error("{} changed since it was read (now {found}); nothing was written", path.display())]
    Conflict {
        /// The file.
        path: PathBuf,
        /// What it holds now, in words ("different text", "no file").
        found: &'static str,
    },
    /// A path now resolves somewhere else than when the call resolved it (a folder on the way
    /// was replaced by a symlink); nothing was written.
    #[error("{} now resolves to {} (a symlink on the way changed); nothing was written", path.display(), resolved.display())]
    Redirected {
        /// The path as resolved before.
        path: PathBuf,
        /// Where it leads now.
        resolved: PathBuf,
    },
    /// A path resolves outside the workspace at commit time; nothing was written (PROD-5).
    #[error("{} resolves to {}, outside the workspace root; nothing was written", path.display(), resolved.display())]
    Outside {
        /// The path as given.
        path: PathBuf,
        /// Where it leads.
        resolved: PathBuf,
    },
    /// A path is not a regular file (a folder, a named pipe, a socket, a device).
    #[error("{} is {kind}, not a regular file; nothing was written", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// Writing failed and everything already replaced was restored: nothing changed.
    #[error("cannot {action} {}: {source}; nothing was changed", path.display())]
    Failed {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// Writing failed part way and restoring what was already replaced failed too: the
    /// files are left in a mixed state.
    #[error(
        "cannot {action} {}: {source}; restoring the files already changed failed too, so \
         they are left changed: {} (restored: {})",
        path.display(),
        describe_unrestored(unrestored),
        describe_paths(restored)
    )]
    RollbackFailed {
        /// What was being done when it failed.
        action: &'static str,
        /// The file it failed on.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
        /// Files changed and then restored.
        restored: Vec<PathBuf>,
        /// Files changed that could not be restored, with the error.
        unrestored: Vec<(PathBuf, String)>,
    },
}

fn describe_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "none".to_owned();
    }
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    shown.join(", ")
}

fn describe_unrestored(unrestored: &[(PathBuf, String)]) -> String {
    let shown: Vec<String> = unrestored
        .iter()
        .map(|(path, error)| format!("{} ({error})", path.display()))
        .collect();
    shown.join(", ")
}

impl CommitError {
    /// The failure as the model reads it, paths workspace-relative, with what to do next.
    pub fn to_tool_error(&self, workspace: &Workspace) -> ToolError {
        let shown = |path: &Path| workspace.display(path);
        let message = match self {
            CommitError::Conflict { path, found } => format!(
                "{} changed since this call read it (it now has {found}), so nothing was \
                 written; read it again and redo the change on its current text",
                shown(path)
            ),
            CommitError::Redirected { path, resolved } => format!(
                "{} now leads to {} (a folder on its way was replaced by a symlink), so \
                 nothing was written; check the folder and call again",
                shown(path),
                shown(resolved)
            ),
            CommitError::Outside { path, resolved } => format!(
                "{} resolves to {}, which is outside the workspace root {} (through a \
                 symlink), so nothing was written; only files inside the workspace can be \
                 changed",
                shown(path),
                resolved.display(),
                workspace.root().display()
            ),
            CommitError::NotRegular { path, kind } => format!(
                "{} is {kind}, not a regular file, so nothing was written; give the path of \
                 a regular file",
                shown(path)
            ),
            CommitError::Failed {
                action,
                path,
                source,
            } => format!(
                "cannot {action} {}: {source}; nothing was changed",
                shown(path)
            ),
            CommitError::RollbackFailed {
                action,
                path,
                source,
                restored,
                unrestored,
            } => {
                let left: Vec<String> = unrestored
                    .iter()
                    .map(|(path, error)| format!("{} ({error})", shown(path)))
                    .collect();
                let back: Vec<String> = restored.iter().map(|p| shown(p)).collect();
                format!(
                    "cannot {action} {}: {source}; putting back the files already changed \
                     failed too, so these files are left with the NEW text: {}{} — read them \
                     and repair by hand before anything else",
                    shown(path),
                    left.join(", "),
                    match back.is_empty() {
                        true => String::new(),
                        false => format!(" (restored: {})", back.join(", ")),
                    }
                )
            }
        };
        ToolError::failed(message)
    }
}

/// One write lock (and one list of commit watchers) per workspace root in this process.
fn shared_for(root: &Path) -> Arc<Shared> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Shared>>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(locks.entry(root.to_path_buf()).or_default())
}

impl Workspace {
    /// Opens `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> Result<Self> {
        let path = root.as_ref();
        let root = path.canonicalize().map_err(|source| Error::Root {
            path: path.to_owned(),
            source,
        })?;
        if !root.is_dir() {
            return Err(Error::Root {
                path: path.to_owned(),
                source: std::io::Error::other("not a directory"),
            });
        }
        let shared = shared_for(&root);
        Ok(Workspace { root, shared })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path argument to an absolute path inside the root (PROD-5).
    ///
    /// Relative paths are taken from the root. `..` that stays inside is fine; `..` that
    /// leaves, an absolute path elsewhere, or a symlink whose target is outside are refused,
    /// naming the path it resolved to. The path need not exist yet (a file about to be
    /// written); its deepest existing ancestor is what symlinks are resolved on.
    pub fn resolve(&self, given: &str) -> Result<PathBuf, ToolError> {
        if given.trim().is_empty() {
            return Err(ToolError::failed(
                "the path is empty: give a path relative to the workspace root, e.g. `src/main.rs`",
            ));
        }
        if given.contains('\0') {
            return Err(ToolError::failed(format!(
                "the path {given:?} contains a NUL character; give a plain path relative to \
                 the workspace root"
            )));
        }
        self.confine_as(Path::new(given), given)
    }

    /// [`Workspace::resolve`] for a path that came from elsewhere (a language server's edit,
    /// a staged change): every path a tool writes goes through here or `resolve`.
    pub fn confine(&self, path: &Path) -> Result<PathBuf, ToolError> {
        self.confine_as(path, &path.to_string_lossy())
    }

    fn confine_as(&self, path: &Path, given: &str) -> Result<PathBuf, ToolError> {
        let joined = self.root.join(path);
        let lexical = normalize_lexically(&joined);
        let outside = |resolved: PathBuf| ToolError::OutsideWorkspace {
            given: given.to_owned(),
            resolved,
            root: self.root.clone(),
        };
        if !lexical.starts_with(&self.root) {
            return Err(outside(lexical));
        }
        let resolved = resolve_existing_prefix(&lexical);
        if !resolved.starts_with(&self.root) {
            return Err(outside(resolved));
        }
        Ok(resolved)
    }

    /// A path as the model should read it: relative to the root, `/`-separated (`.` for the
    /// root itself); paths outside the root are shown whole. Every family shows paths through
    /// here (a [`Place`](crate::Place) too), so one file reads the same in every answer.
    pub fn display(&self, path: &Path) -> String {
        match self.relative(path) {
            Some(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Some(relative) => relative.to_string_lossy().replace('\\', "/"),
            None => path.to_string_lossy().into_owned(),
        }
    }

    /// `path` relative to the root, or `None` when it is outside. The root is canonical, so
    /// a path that reaches the workspace through a symlink (the root opened by a link's name,
    /// a debug adapter that reports the path the program was started by) is resolved once
    /// before it is called outside.
    pub fn relative(&self, path: &Path) -> Option<PathBuf> {
        if let Ok(relative) = path.strip_prefix(&self.root) {
            return Some(relative.to_path_buf());
        }
        // A relative path would resolve against the process's folder, which is not ours to
        // guess from: only an absolute one is resolved.
        if !path.is_absolute() {
            return None;
        }
        let resolved = path.canonicalize().ok()?;
        resolved
            .strip_prefix(&self.root)
            .ok()
            .map(Path::to_path_buf)
    }

    /// Refuses what is not a regular file or a folder — a named pipe, a socket, a device —
    /// before anything opens it: opening a FIFO blocks until a writer comes. A path that does
    /// not exist passes.
    pub fn check_regular(&self, path: &Path) -> Result<(), ToolError> {
        match special_kind(path) {
            None => Ok(()),
            Some(kind) => Err(ToolError::failed(format!(
                "{} is {kind}, not a regular file; these tools read and write regular files \
                 only — give another path",
                self.display(path)
            ))),
        }
    }

    /// Reads a file as a writer will depend on it: its bytes (None when it does not exist)
    /// and what a commit must expect. Special files are refused unopened.
    pub fn read(&self, path: &Path) -> Result<Snapshot, ToolError> {
        self.check_regular(path)?;
        match read_regular(path) {
            Ok(bytes) => Ok(Snapshot {
                expect: Expect::of(Some(&bytes)),
                bytes: Some(bytes),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Snapshot {
                bytes: None,
                expect: Expect::Absent,
            }),
            Err(_) if path.is_dir() => Err(ToolError::failed(format!(
                "{} is a directory, not a file; give a file path",
                self.display(path)
            ))),
            Err(e) => Err(ToolError::failed(format!(
                "cannot read {}: {e}",
                self.display(path)
            ))),
        }
    }

    /// [`Workspace::read`] off the async threads.
    pub async fn read_async(&self, path: PathBuf) -> Result<Snapshot, ToolError> {
        let workspace = self.clone();
        blocking(move || workspace.read(&path)).await?
    }

    /// Applies several changes all or nothing, under the workspace's write lock: each path is
    /// confined again on what it resolves to now, checked to be a regular file (or absent),
    /// and checked to hold what its change expects; only then are the new contents written to
    /// temp files beside their targets and renamed into place one by one. If a step fails,
    /// files already replaced get their old contents back and folders the commit created are
    /// removed. On success, returns each path with the contents it had before.
    pub fn commit(&self, changes: &[Change]) -> Result<Previous, CommitError> {
        let _guard = self.write_lock();
        self.commit_locked(changes)
    }

    /// [`Workspace::commit`] off the async threads.
    pub async fn commit_async(&self, changes: Vec<Change>) -> Result<Previous, CommitError> {
        let workspace = self.clone();
        blocking(move || workspace.commit(&changes))
            .await
            .unwrap_or_else(|error| {
                Err(CommitError::Failed {
                    action: "write",
                    path: self.root.clone(),
                    source: std::io::Error::other(error.to_string()),
                })
            })
    }

    /// Reads, computes and writes as one step under the write lock, so no other writer of
    /// this process lands between the read and the write: `compute` reads what it needs
    /// (through [`Workspace::read`]) and returns the changes and a value for the caller.
    pub fn update<T, E>(
        &self,
        compute: impl FnOnce(&Workspace) -> std::result::Result<(Vec<Change>, T), E>,
    ) -> std::result::Result<(Previous, T), UpdateError<E>> {
        let _guard = self.write_lock();
        let (changes, value) = compute(self).map_err(UpdateError::Compute)?;
        let previous = self.commit_locked(&changes).map_err(UpdateError::Commit)?;
        Ok((previous, value))
    }

    /// [`Workspace::update`] off the async threads.
    pub async fn update_async<T, E>(
        &self,
        compute: impl FnOnce(&Workspace) -> std::result::Result<(Vec<Change>, T), E> + Send + 'static,
    ) -> std::result::Result<(Previous, T), UpdateError<E>>
    where
        T: Send + 'static,
        E: Send + 'static,
    {
        let workspace = self.clone();
        match tokio::task::spawn_blocking(move || workspace.update(compute)).await {
            Ok(outcome) => outcome,
            Err(error) => Err(UpdateError::Commit(CommitError::Failed {
                action: "write",
                path: self.root.clone(),
                source: std::io::Error::other(error.to_string()),
            })),
        }
    }

    fn write_lock(&self) -> MutexGuard<'_, ()> {
        self.shared
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Has `watcher` told the paths of every later commit on this root, succeeded or rolled
    /// back (either may have touched the files), until the `Arc` is dropped.
    pub fn watch_commits(&self, watcher: &Arc<CommitWatcher>) {
        let mut watchers = self
            .shared
            .watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        watchers.retain(|w| w.strong_count() > 0);
        watchers.push(Arc::downgrade(watcher));
    }

    fn commit_locked(&self, changes: &[Change]) -> Result<Previous, CommitError> {
        let outcome = self.commit_unwatched(changes);
        let watchers: Vec<Arc<CommitWatcher>> = self
            .shared
            .watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect();
        if !watchers.is_empty() {
            let paths: Vec<PathBuf> = changes.iter().map(|c| c.path.clone()).collect();
            for watcher in watchers {
                watcher(&paths);
            }
        }
        outcome
    }

    fn commit_unwatched(&self, changes: &[Change]) -> Result<Previous, CommitError> {
        // Everything is checked before anything is written.
        let mut originals = Vec::with_capacity(changes.len());
        for change in changes {
            let path = &change.path;
            let resolved = resolve_existing_prefix(&normalize_lexically(path));
            if !resolved.starts_with(&self.root) {
                return Err(CommitError::Outside {
                    path: path.clone(),
                    resolved,
                });
            }
            if resolved != *path {
                return Err(CommitError::Redirected {
                    path: path.clone(),
                    resolved,
                });
            }
            if let Some(kind) = special_kind(path).or_else(|| path.is_dir().then_some("a folder")) {
                return Err(CommitError::NotRegular {
                    path: path.clone(),
                    kind,
                });
            }
            let original = match read_regular(path) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(source) => {
                    return Err(CommitError::Failed {
                        action: "read",
                        path: path.clone(),
                        source,
                    });
                }
            };
            if !change.expect.holds(original.as_deref()) {
                return Err(CommitError::Conflict {
                    path: path.clone(),
                    found: match original {
                        None => "no file",
                        Some(_) => "different text",
                    },
                });
            }
            originals.push(original);
        }
        let mut created_dirs: Vec<PathBuf> = Vec::new();
        let mut staged = Vec::with_capacity(changes.len());
        for (change, original) in changes.iter().zip(originals) {
            let path = &change.path;
            let temp = match &change.change {
                FileChange::Write(contents) => match stage(path, contents, &mut created_dirs) {
                    Ok(temp) => Some(temp),
                    Err((action, source)) => {
                        drop(staged);
                        remove_created(&created_dirs);
                        return Err(CommitError::Failed {
                            action,
                            path: path.clone(),
                            source,
                        });
                    }
                },
                FileChange::Delete => None,
            };
            staged.push((path, original, temp));
        }
        let mut done: Vec<(&PathBuf, Option<Vec<u8>>)> = Vec::new();
        for (path, original, temp) in staged.iter_mut() {
            let path: &PathBuf = path;
            let outcome = match temp {
                Some(temp) => faults::rename(&temp.path, path).map(|()| temp.persisted = true),
                None => std::fs::remove_file(path),
            };
            if let Err(source) = outcome {
                let action = match temp {
                    Some(_) => "replace",
                    None => "remove",
                };
                let mut restored = Vec::new();
                let mut unrestored = Vec::new();
                for (replaced, original) in done.into_iter().rev() {
                    let outcome = match original {
                        Some(bytes) => restore(replaced, &bytes),
                        None => std::fs::remove_file(replaced),
                    };
                    match outcome {
                        Ok(()) => restored.push(replaced.clone()),
                        Err(error) => unrestored.push((replaced.clone(), error.to_string())),
                    }
                }
                drop(staged);
                if !unrestored.is_empty() {
                    return Err(CommitError::RollbackFailed {
                        action,
                        path: path.clone(),
                        source,
                        restored,
                        unrestored,
                    });
                }
                remove_created(&created_dirs);
                return Err(CommitError::Failed {
                    action,
                    path: path.clone(),
                    source,
                });
            }
            done.push((path, original.take()));
        }
        Ok(done
            .into_iter()
            .map(|(path, original)| (path.clone(), original))
            .collect())
    }
}

/// Why [`Workspace::update`] did not land: the computation refused, or the commit failed.
#[derive(Debug)]
pub enum UpdateError<E> {
    /// The caller's computation failed; nothing was written.
    Compute(E),
    /// The commit failed.
    Commit(CommitError),
}

/// Runs blocking file work on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> std::result::Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ToolError::Internal {
            tool: "workspace".to_owned(),
            message: format!("file work stopped: {error}"),
        })
}

/// `path` with `.` removed and `..` folded into the folder before it, without touching the
/// file system (so a symlink is not followed: `a/link/..` is `a`).
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Canonicalizes the deepest existing ancestor of `path` (resolving symlinks) and appends the
/// rest, so a symlink anywhere along an existing prefix is followed before the check.
fn resolve_existing_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut resolved = canonical;
            for part in rest.iter().rev() {
                resolved.push(part);
            }
            return resolved;
        }
        // A dangling symlink: read where it points, so one aimed outside is still caught.
        if let Ok(target) = std::fs::read_link(&existing) {
            let base = existing.parent().map(Path::to_path_buf).unwrap_or_default();
            let mut resolved = normalize_lexically(&base.join(target));
            for part in rest.iter().rev() {
                resolved.push(part);
            }
            return resolved;
        }
        match (
            existing.file_name().map(|n| n.to_owned()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "fn main() {}\n").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn prod_5_relative_paths_resolve_inside_the_root() {
        let (_dir, ws) = workspace();
        assert_eq!(
            ws.resolve("src/lib.rs").unwrap(),
            ws.root().join("src/lib.rs")
        );
        assert_eq!(
            ws.resolve("src/../src/new.rs").unwrap(),
            ws.root().join("src/new.rs")
        );
        assert_eq!(
            ws.resolve("./a/b/c.txt").unwrap(),
            ws.root().join("a/b/c.txt")
        );
        let absolute = ws.root().join("src/lib.rs");
        assert_eq!(ws.resolve(absolute.to_str().unwrap()).unwrap(), absolute);
    }

    #[test]
    fn prod_5_dot_dot_that_leaves_the_root_is_refused_with_the_resolved_path() {
        let (_dir, ws) = workspace();
        let err = ws.resolve("../secret.txt").unwrap_err();
        let outside = ws.root().parent().unwrap().join("secret.txt");
        assert_eq!(
            err.to_string(),
            format!(
                "`../secret.txt` resolves to {}, which is outside the workspace root {}: \
                 only paths inside the workspace can be used",
                outside.display(),
                ws.root().display()
            )
        );
    }

    #[test]
    fn prod_5_absolute_paths_outside_are_refused() {
        let (_dir, ws) = workspace();
        let err = ws.resolve("/etc/passwd").unwrap_err();
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn prod_5_symlinks_that_escape_are_refused_even_when_dangling() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
        let err = ws.resolve("escape/file.txt").unwrap_err();
        match err {
            ToolError::OutsideWorkspace { resolved, .. } => {
                assert_eq!(
                    resolved,
                    outside.path().canonicalize().unwrap().join("file.txt")
                )
            }
            other => panic!("expected OutsideWorkspace, got {other}"),
        }
        std::os::unix::fs::symlink("/nonexistent/target", dir.path().join("dangling")).unwrap();
        assert!(ws.resolve("dangling").is_err());
        // A symlink that stays inside is fine.
        std::os::unix::fs::symlink(dir.path().join("src"), dir.path().join("inside")).unwrap();
        assert_eq!(
            ws.resolve("inside/lib.rs").unwrap(),
            ws.root().join("src/lib.rs")
        );
    }

    #[test]
    fn display_is_workspace_relative() {
        let (_dir, ws) = workspace();
        assert_eq!(ws.display(&ws.root().join("src/lib.rs")), "src/lib.rs");
        assert_eq!(ws.display(ws.root()), ".");
    }

    #[test]
    fn commit_writes_every_file_and_leaves_no_temp_files() {
        let (dir, ws) = workspace();
        let changes = vec![
            Change::anyway(
                ws.root().join("src/lib.rs"),
                FileChange::Write(b"// new\n".to_vec()),
            ),
            Change::anyway(
                ws.root().join("new/dir/file.txt"),
                FileChange::Write(b"hello".to_vec()),
            ),
        ];
        let before = std::fs::read(dir.path().join("src/lib.rs")).unwrap();
        let previous = ws.commit(&changes).unwrap();
        // What each file held before, for diagnostics on write's baseline (LSP-7).
        assert_eq!(
            previous,
            [
                (ws.root().join("src/lib.rs"), Some(before)),
                (ws.root().join("new/dir/file.txt"), None),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
            "// new\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("new/dir/file.txt")).unwrap(),
            "hello"
        );
        ws.commit(&[Change::anyway(
            ws.root().join("new/dir/file.txt"),
            FileChange::Delete,
        )])
        .unwrap();
        assert!(!dir.path().join("new/dir/file.txt").exists());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("src"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from("lib.rs")]);
    }

    #[test]
    fn commit_rolls_back_files_already_replaced_when_a_later_one_fails() {
        let (dir, ws) = workspace();
        // Deleting a file that does not exist fails after the first file was replaced.
        let changes = vec![
            Change::anyway(
                ws.root().join("src/lib.rs"),
                FileChange::Write(b"changed".to_vec()),
            ),
            Change::anyway(ws.root().join("missing.txt"), FileChange::Delete),
        ];
        assert!(ws.commit(&changes).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
            "fn main() {}\n"
        );
    }

    #[test]
    fn every_commit_tells_its_watchers_its_paths_until_they_are_dropped() {
        let (_dir, ws) = workspace();
        let told: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
        let sink = Arc::clone(&told);
        let watcher: Arc<CommitWatcher> = Arc::new(move |paths: &[PathBuf]| {
            sink.lock().unwrap().extend_from_slice(paths);
        });
        // Another handle on the same root shares the watchers.
        Workspace::new(ws.root()).unwrap().watch_commits(&watcher);
        let lib = ws.root().join("src/lib.rs");
        ws.commit(&[write(lib.clone(), "changed")]).unwrap();
        // A commit rolled back is told too: it may have touched the files.
        let missing = ws.root().join("missing.txt");
        let failed = [
            write(lib.clone(), "again"),
            Change::anyway(missing.clone(), FileChange::Delete),
        ];
        assert!(ws.commit(&failed).is_err());
        assert_eq!(*told.lock().unwrap(), [lib.clone(), lib.clone(), missing]);
        drop(watcher);
        ws.commit(&[write(lib, "last")]).unwrap();
        assert_eq!(told.lock().unwrap().len(), 3);
    }

    fn write(path: PathBuf, text: &str) -> Change {
        Change::anyway(path, FileChange::Write(text.as_bytes().to_vec()))
    }

    #[test]
    fn a_change_computed_from_old_text_is_a_conflict_and_writes_nothing() {
        let (dir, ws) = workspace();
        let path = ws.root().join("src/lib.rs");
        let read = ws.read(&path).unwrap();
        std::fs::write(&path, "// someone else\n").unwrap();
        let other = ws.root().join("src/other.rs");
        let err = ws
            .commit(&[
                write(other.clone(), "first\n"),
                Change {
                    path: path.clone(),
                    expect: read.expect,
                    change: FileChange::Write(b"mine".to_vec()),
                },
            ])
            .unwrap_err();
        assert!(matches!(err, CommitError::Conflict { .. }), "{err}");
        let message = err.to_tool_error(&ws).to_string();
        assert!(
            message.starts_with("src/lib.rs changed since this call read it"),
            "{message}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
            "// someone else\n"
        );
        assert!(!other.exists(), "nothing lands when one file conflicts");
        // Creating a file that appeared meanwhile is a conflict too.
        let err = ws
            .commit(&[Change {
                path,
                expect: Expect::Absent,
                change: FileChange::Write(b"new".to_vec()),
            }])
            .unwrap_err();
        assert!(matches!(
            err,
            CommitError::Conflict {
                found: "different text",
                ..
            }
        ));
    }

    #[cfg(unix)]
    #[test]
    fn prod_5_a_folder_replaced_by_a_symlink_after_resolving_is_caught_at_commit() {
        let (dir, ws) = workspace();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/mod.py"), "x = 1\n").unwrap();
        let path = ws.resolve("pkg/mod.py").unwrap();
        let read = ws.read(&path).unwrap();
        // The folder becomes a symlink to an outside folder holding an identical file.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("mod.py"), "x = 1\n").unwrap();
        std::fs::remove_dir_all(dir.path().join("pkg")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("pkg")).unwrap();
        let err = ws
            .commit(&[Change {
                path: path.clone(),
                expect: read.expect,
                change: FileChange::Write(b"x = 2\n".to_vec()),
            }])
            .unwrap_err();
        assert!(matches!(err, CommitError::Outside { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("mod.py")).unwrap(),
            "x = 1\n"
        );
        // A symlink to a folder inside is a redirect: also refused, nothing written.
        std::fs::remove_file(dir.path().join("pkg")).unwrap();
        std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
        std::fs::write(dir.path().join("elsewhere/mod.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), dir.path().join("pkg")).unwrap();
        let err = ws
            .commit(&[Change {
                path,
                expect: read.expect,
                change: FileChange::Write(b"x = 2\n".to_vec()),
            }])
            .unwrap_err();
        assert!(matches!(err, CommitError::Redirected { .. }), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_is_refused_before_it_is_opened() {
        let (dir, ws) = workspace();
        let fifo = dir.path().join("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let path = ws.resolve("pipe").unwrap();
        let err = ws.read(&path).unwrap_err().to_string();
        assert_eq!(
            err,
            "pipe is a named pipe (FIFO), not a regular file; these tools read and write \
             regular files only — give another path"
        );
        let err = ws.commit(&[write(path, "x")]).unwrap_err();
        assert!(matches!(err, CommitError::NotRegular { .. }), "{err}");
    }

    #[test]
    fn a_failed_commit_removes_the_folders_it_created() {
        let (dir, ws) = workspace();
        let long = "x".repeat(300);
        let path = ws.root().join("a/b").join(long);
        let err = ws.commit(&[write(path, "text")]).unwrap_err();
        assert!(matches!(err, CommitError::Failed { .. }), "{err}");
        assert!(
            !dir.path().join("a").exists(),
            "the created folders are gone"
        );
    }

    #[test]
    fn a_rollback_that_fails_is_reported_with_what_was_left_changed() {
        let (dir, ws) = workspace();
        let a = ws.root().join("src/lib.rs");
        let b = ws.root().join("src/b.rs");
        let c = ws.root().join("src/c.rs");
        std::fs::write(&b, "b\n").unwrap();
        faults::FAIL_RENAME_AFTER.set(Some(2));
        faults::FAIL_RESTORE.set(true);
        let err = ws
            .commit(&[
                write(a, "new a\n"),
                write(b, "new b\n"),
                write(c, "new c\n"),
            ])
            .unwrap_err();
        faults::FAIL_RENAME_AFTER.set(None);
        faults::FAIL_RESTORE.set(false);
        match &err {
            CommitError::RollbackFailed {
                unrestored,
                restored,
                ..
            } => {
                assert_eq!(unrestored.len(), 2, "{err}");
                assert!(restored.is_empty());
            }
            other => panic!("expected RollbackFailed, got {other}"),
        }
        let message = err.to_tool_error(&ws).to_string();
        assert!(
            message.contains("these files are left with the NEW text: src/b.rs (injected restore failure), src/lib.rs"),
            "{message}"
        );
        assert!(!message.contains("nothing was"), "{message}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/b.rs")).unwrap(),
            "new b\n"
        );
        // Without the restore failure, the same fault rolls back cleanly.
        std::fs::write(dir.path().join("src/b.rs"), "b\n").unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "a\n").unwrap();
        faults::FAIL_RENAME_AFTER.set(Some(1));
        let err = ws
            .commit(&[
                write(ws.root().join("src/lib.rs"), "new a\n"),
                write(ws.root().join("src/b.rs"), "new b\n"),
            ])
            .unwrap_err();
        faults::FAIL_RENAME_AFTER.set(None);
        assert!(matches!(err, CommitError::Failed { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
            "a\n"
        );
    }

    #[test]
    fn update_reads_and_writes_as_one_step_so_concurrent_edits_all_land() {
        let (dir, ws) = workspace();
        let path = ws.root().join("count.txt");
        std::fs::write(&path, "").unwrap();
        let threads: Vec<_> = (0..20)
            .map(|n| {
                let ws = ws.clone();
                let path = path.clone();
                std::thread::spawn(move || {
                    ws.update(|ws| {
                        let read = ws.read(&path)?;
                        let mut text = read.bytes.unwrap_or_default();
                        text.extend_from_slice(format!("{n}\n").as_bytes());
                        Ok::<_, ToolError>((
                            vec![Change {
                                path: path.clone(),
                                expect: read.expect,
                                change: FileChange::Write(text),
                            }],
                            (),
                        ))
                    })
                    .unwrap();
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let text = std::fs::read_to_string(dir.path().join("count.txt")).unwrap();
        assert_eq!(text.lines().count(), 20, "{text}");
    }

    #[test]
    fn a_nul_in_a_path_is_refused() {
        let (_dir, ws) = workspace();
        let err = ws.resolve("a\0b").unwrap_err().to_string();
        assert!(err.contains("NUL"), "{err}");
    }
}
