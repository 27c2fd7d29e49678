//! The workspace root every path argument is confined to (PROD-5), and the one way files are
//! written: atomically, each through a temp file and a rename, and several files all or nothing.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use crate::{Error, Result, ToolError};

/// The root of the run's workspace, canonical, with path confinement and atomic writes.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// One file's change in an all-or-nothing write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// Create or replace the file with these bytes (parents are created).
    Write(Vec<u8>),
    /// Remove the file.
    Delete,
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
        Ok(Workspace { root })
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
        let joined = self.root.join(given);
        let lexical = normalize(&joined);
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

    /// A path as the model should read it: relative to the root, `/`-separated; paths outside
    /// the root are shown whole.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Ok(relative) => relative.to_string_lossy().replace('\\', "/"),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// Writes one file atomically: a temp file beside it, then a rename. Parents are created.
    pub fn write_atomic(&self, path: &Path, contents: &[u8]) -> Result<()> {
        let io = |action: &'static str, source| Error::Io {
            action,
            path: path.to_owned(),
            source,
        };
        let parent = path
            .parent()
            .ok_or_else(|| io("write", std::io::Error::other("the path has no parent")))?;
        std::fs::create_dir_all(parent).map_err(|e| io("create the folder of", e))?;
        let mut temp = tempfile_in(parent).map_err(|e| io("create a temp file beside", e))?;
        // Keep the file's permissions: an executable script stays executable after an edit.
        if let Ok(metadata) = std::fs::metadata(path) {
            let _ = std::fs::set_permissions(&temp.path, metadata.permissions());
        }
        temp.file
            .write_all(contents)
            .and_then(|()| temp.file.sync_all())
            .map_err(|e| io("write", e))?;
        std::fs::rename(&temp.path, path).map_err(|e| io("replace", e))?;
        temp.persisted = true;
        Ok(())
    }

    /// Applies several changes all or nothing: the new contents are first written to temp
    /// files beside their targets, then renamed into place one by one; if a rename fails,
    /// the files already replaced get their old contents back and the error is returned.
    /// On success, returns each path with the contents it had before (`None`: it was new).
    pub fn commit(
        &self,
        changes: &[(PathBuf, FileChange)],
    ) -> Result<Vec<(PathBuf, Option<Vec<u8>>)>> {
        let mut staged = Vec::with_capacity(changes.len());
        for (path, change) in changes {
            let io = |action: &'static str, source| Error::Io {
                action,
                path: path.clone(),
                source,
            };
            let original = match std::fs::read(path) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(io("read", e)),
            };
            let temp = match change {
                FileChange::Write(contents) => {
                    let parent = path
                        .parent()
                        .ok_or_else(|| io("write", std::io::Error::other("no parent")))?;
                    std::fs::create_dir_all(parent).map_err(|e| io("create the folder of", e))?;
                    let mut temp =
                        tempfile_in(parent).map_err(|e| io("create a temp file beside", e))?;
                    if let Ok(metadata) = std::fs::metadata(path) {
                        let _ = std::fs::set_permissions(&temp.path, metadata.permissions());
                    }
                    temp.file
                        .write_all(contents)
                        .and_then(|()| temp.file.sync_all())
                        .map_err(|e| io("write", e))?;
                    Some(temp)
                }
                FileChange::Delete => None,
            };
            staged.push((path, original, temp));
        }
        let mut done: Vec<(&PathBuf, Option<Vec<u8>>)> = Vec::new();
        for (path, original, temp) in staged.iter_mut() {
            let path: &PathBuf = path;
            let outcome = match temp {
                Some(temp) => std::fs::rename(&temp.path, path).map(|()| temp.persisted = true),
                None => std::fs::remove_file(path),
            };
            if let Err(source) = outcome {
                for (replaced, original) in done.into_iter().rev() {
                    let restored = match original {
                        Some(bytes) => self.write_atomic(replaced, &bytes),
                        None => std::fs::remove_file(replaced).map_err(|source| Error::Io {
                            action: "remove",
                            path: replaced.clone(),
                            source,
                        }),
                    };
                    if let Err(error) = restored {
                        tracing::error!(%error, "rolling back a partly applied change failed");
                    }
                }
                return Err(Error::Io {
                    action: "replace",
                    path: path.to_path_buf(),
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

/// A temp file that removes itself unless it was renamed into place.
struct TempFile {
    path: PathBuf,
    file: std::fs::File,
    persisted: bool,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.persisted {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn tempfile_in(dir: &Path) -> std::io::Result<TempFile> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".agent-tools-{}-{n}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                return Ok(TempFile {
                    path,
                    file,
                    persisted: false,
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Removes `.` and folds `..` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
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
            let mut resolved = normalize(&base.join(target));
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
            (
                ws.root().join("src/lib.rs"),
                FileChange::Write(b"// new\n".to_vec()),
            ),
            (
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
        ws.commit(&[(ws.root().join("new/dir/file.txt"), FileChange::Delete)])
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
            (
                ws.root().join("src/lib.rs"),
                FileChange::Write(b"changed".to_vec()),
            ),
            (ws.root().join("missing.txt"), FileChange::Delete),
        ];
        assert!(ws.commit(&changes).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
            "fn main() {}\n"
        );
    }
}
