//! The file work under a commit: staging bytes in a temp file beside their target, putting
//! old bytes back, and the fault injection the rollback tests use. Reading a file that must
//! be a regular one is tools-process's `read_regular`, which every crate may use.

use std::io::Write;
use std::path::{Path, PathBuf};

/// What a path is when it is neither a regular file nor a folder; `None` for those and for
/// paths that do not exist.
pub(super) fn special_kind(path: &Path) -> Option<&'static str> {
    tools_process::special_kind(&std::fs::metadata(path).ok()?.file_type())
}

/// Writes `contents` to a temp file beside `path`, creating missing folders (recorded in
/// `created`, outermost first) and keeping the old file's permissions.
pub(super) fn stage(
    path: &Path,
    contents: &[u8],
    created: &mut Vec<PathBuf>,
) -> std::result::Result<TempFile, (&'static str, std::io::Error)> {
    let parent = path
        .parent()
        .ok_or(("write", std::io::Error::other("the path has no parent")))?;
    let mut missing = Vec::new();
    let mut dir = parent;
    while !dir.exists() {
        missing.push(dir.to_path_buf());
        match dir.parent() {
            Some(up) => dir = up,
            None => break,
        }
    }
    for dir in missing.into_iter().rev() {
        std::fs::create_dir(&dir).map_err(|e| ("create the folder", e))?;
        created.push(dir);
    }
    let mut temp = tempfile_in(parent).map_err(|e| ("create a temp file beside", e))?;
    // Keep the file's permissions: an executable script stays executable after an edit.
    if let Ok(metadata) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&temp.path, metadata.permissions());
    }
    temp.file
        .write_all(contents)
        .and_then(|()| temp.file.sync_all())
        .map_err(|e| ("write", e))?;
    Ok(temp)
}

/// Puts a replaced file's old bytes back, atomically.
pub(super) fn restore(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut ignored = Vec::new();
    let mut temp = stage(path, bytes, &mut ignored).map_err(|(_, e)| e)?;
    faults::rename_back(&temp.path, path)?;
    temp.persisted = true;
    Ok(())
}

/// Removes the folders a failed commit created, innermost first, when they are empty.
pub(super) fn remove_created(created: &[PathBuf]) {
    for dir in created.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// Fault injection for the rollback tests: a rename into place or back can be made to fail.
pub(super) mod faults {
    use std::path::Path;

    #[cfg(test)]
    thread_local! {
        /// Renames into place left before one fails (None: never).
        pub(in crate::workspace) static FAIL_RENAME_AFTER: std::cell::Cell<Option<usize>> =
            const { std::cell::Cell::new(None) };
        /// Whether putting old contents back fails.
        pub(in crate::workspace) static FAIL_RESTORE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    pub(in crate::workspace) fn rename(from: &Path, to: &Path) -> std::io::Result<()> {
        #[cfg(test)]
        {
            let left = FAIL_RENAME_AFTER.get();
            if let Some(left) = left {
                if left == 0 {
                    return Err(std::io::Error::other("injected rename failure"));
                }
                FAIL_RENAME_AFTER.set(Some(left - 1));
            }
        }
        std::fs::rename(from, to)
    }

    pub(in crate::workspace) fn rename_back(from: &Path, to: &Path) -> std::io::Result<()> {
        #[cfg(test)]
        if FAIL_RESTORE.get() {
            return Err(std::io::Error::other("injected restore failure"));
        }
        std::fs::rename(from, to)
    }
}

/// A temp file that removes itself unless it was renamed into place.
pub(super) struct TempFile {
    pub(super) path: PathBuf,
    file: std::fs::File,
    /// Set once it is renamed into place: dropping it then removes nothing.
    pub(super) persisted: bool,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.persisted {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

pub(super) fn tempfile_in(dir: &Path) -> std::io::Result<TempFile> {
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
