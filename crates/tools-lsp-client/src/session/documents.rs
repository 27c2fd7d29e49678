//! A session's documents: what the server has open, kept equal to the disk (opened, changed,
//! closed, saved), and the disk scan that tells a server which does not watch files what
//! changed under it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_lsp::lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    DidSaveTextDocument,
};
use async_lsp::lsp_types::{
    DidChangeTextDocumentParams, DidChangeWatchedFilesParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DidSaveTextDocumentParams, FileChangeType, FileEvent,
    TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem, Url,
    VersionedTextDocumentIdentifier,
};

use crate::servers::ServerSpec;
use crate::{Error, Result};

use super::{OpenDocument, Session, Synced};

/// Open documents whose disk stamp is older than this are trusted without a read; newer ones
/// are compared byte for byte, since a file system's clock may not tell two quick writes apart.
const TRUST_STAMP_AFTER: Duration = Duration::from_secs(2);

/// A disk scan visits at most this many entries; a root with more source files than the
/// small-scan limit is rescanned at most every [`LARGE_RESCAN`].
const SCAN_ENTRIES: usize = 50_000;
const SMALL_SCAN_FILES: usize = 5_000;
const LARGE_RESCAN: Duration = Duration::from_secs(2);

/// Folders a disk scan never enters.
const UNSCANNED_DIRS: &[&str] = &[
    "node_modules",
    "target",
    "venv",
    "__pycache__",
    "dist",
    "build",
];

/// How many earlier versions of an open document's text are kept (to know what text a
/// server's publish for an older version was about).
const EARLIER_VERSIONS: usize = 8;

impl Session {
    /// The text of every document the server has open, as we last sent it: what its answers
    /// (a rename's edit) are computed against.
    pub async fn open_texts(&self) -> HashMap<PathBuf, Arc<str>> {
        let documents = self.documents.lock().await;
        documents
            .iter()
            .map(|(path, open)| (path.clone(), Arc::clone(&open.text)))
            .collect()
    }

    /// Makes the server's view of `path` equal to the disk: opens it, or sends the new text
    /// when it changed since we last sent it.
    pub async fn sync(&self, path: &Path) -> Result<Synced> {
        let mut documents = self.documents.lock().await;
        self.sync_locked(&mut documents, path)
    }

    /// Sends the server `text` for `path` in place of what the disk holds (the text a file
    /// had before a write, for the LSP-7 baseline). The next [`Session::sync`] sends the disk
    /// again.
    pub async fn sync_text(&self, path: &Path, text: &str) -> Result<Synced> {
        let mut documents = self.documents.lock().await;
        self.send_text(&mut documents, path, text.into(), None)
    }

    fn sync_locked(
        &self,
        documents: &mut HashMap<PathBuf, OpenDocument>,
        path: &Path,
    ) -> Result<Synced> {
        let uri = document_uri(path)?;
        let stamp = stamp(path);
        if let Some(open) = documents.get(path)
            && trusted(open.stamp, stamp)
        {
            return Ok(Synced {
                uri,
                text: Arc::clone(&open.text),
                changed: false,
                version: open.version,
            });
        }
        let text: Arc<str> = match tools_process::read_regular(path) {
            Ok(bytes) => String::from_utf8(bytes)
                .map_err(|_| Error::NotUtf8 {
                    path: path.to_path_buf(),
                })?
                .into(),
            Err(error) => {
                if documents.remove(path).is_some() {
                    self.connection
                        .notify::<DidCloseTextDocument>(DidCloseTextDocumentParams {
                            text_document: TextDocumentIdentifier { uri: uri.clone() },
                        });
                }
                return Err(Error::Read {
                    path: path.to_path_buf(),
                    source: Arc::new(error),
                });
            }
        };
        self.send_text(documents, path, text, stamp)
    }

    /// Sends `text` as the content of `path` unless the server has it already.
    fn send_text(
        &self,
        documents: &mut HashMap<PathBuf, OpenDocument>,
        path: &Path,
        text: Arc<str>,
        stamp: Option<(SystemTime, u64)>,
    ) -> Result<Synced> {
        let uri = document_uri(path)?;
        match documents.get_mut(path) {
            Some(open) if *open.text == *text => {
                open.stamp = stamp;
                Ok(Synced {
                    uri,
                    text,
                    changed: false,
                    version: open.version,
                })
            }
            Some(open) => {
                if open.earlier.len() == EARLIER_VERSIONS {
                    open.earlier.remove(0);
                }
                open.earlier.push((open.version, Arc::clone(&open.text)));
                open.version += 1;
                open.text = Arc::clone(&text);
                open.stamp = stamp;
                self.connection
                    .notify::<DidChangeTextDocument>(DidChangeTextDocumentParams {
                        text_document: VersionedTextDocumentIdentifier {
                            uri: uri.clone(),
                            version: open.version,
                        },
                        content_changes: vec![TextDocumentContentChangeEvent {
                            range: None,
                            range_length: None,
                            text: text.to_string(),
                        }],
                    });
                Ok(Synced {
                    uri,
                    text,
                    changed: true,
                    version: open.version,
                })
            }
            None => {
                let language_id = self.spec.language_id(path).unwrap_or("plaintext");
                self.connection
                    .notify::<DidOpenTextDocument>(DidOpenTextDocumentParams {
                        text_document: TextDocumentItem {
                            uri: uri.clone(),
                            language_id: language_id.to_owned(),
                            version: 0,
                            text: text.to_string(),
                        },
                    });
                documents.insert(
                    path.to_path_buf(),
                    OpenDocument {
                        version: 0,
                        text: Arc::clone(&text),
                        stamp,
                        earlier: Vec::new(),
                    },
                );
                Ok(Synced {
                    uri,
                    text,
                    changed: true,
                    version: 0,
                })
            }
        }
    }

    /// The text an open document had at `version`, when it is recent enough to be known.
    pub async fn text_at(&self, path: &Path, version: i32) -> Option<Arc<str>> {
        let documents = self.documents.lock().await;
        let open = documents.get(path)?;
        if open.version == version {
            return Some(Arc::clone(&open.text));
        }
        open.earlier
            .iter()
            .find(|(v, _)| *v == version)
            .map(|(_, text)| Arc::clone(text))
    }

    /// Whether the server has `path` open.
    pub async fn is_open(&self, path: &Path) -> bool {
        self.documents.lock().await.contains_key(path)
    }

    /// Closes `path` if the server has it open, so the next sync opens it afresh (clangd
    /// rebuilds a reopened file against headers that changed on disk).
    pub async fn close(&self, path: &Path) {
        let mut documents = self.documents.lock().await;
        if documents.remove(path).is_some()
            && let Ok(uri) = Url::from_file_path(path)
        {
            self.connection
                .notify::<DidCloseTextDocument>(DidCloseTextDocumentParams {
                    text_document: TextDocumentIdentifier { uri },
                });
        }
    }

    /// Tells the server the file was saved (rust-analyzer starts its `cargo check` on save).
    pub fn save(&self, uri: &Url) {
        self.connection
            .notify::<DidSaveTextDocument>(DidSaveTextDocumentParams {
                text_document: TextDocumentIdentifier { uri: uri.clone() },
                text: None,
            });
    }

    /// Re-syncs every open document that changed on disk since it was sent (other tools or
    /// the shell may have written it); a deleted one is closed.
    pub async fn resync_open(&self) {
        let mut documents = self.documents.lock().await;
        let paths: Vec<PathBuf> = documents.keys().cloned().collect();
        for path in paths {
            let _ = self.sync_locked(&mut documents, &path);
        }
    }

    /// For a server that does not watch files itself: finds source files created, changed or
    /// deleted on disk since the last scan and reports them as watched-file changes, so it
    /// does not answer from a stale view of files it never opened.
    pub async fn rescan_disk(&self) {
        let Some(disk) = &self.disk else {
            return;
        };
        let mut snapshot = disk.lock().await;
        if snapshot.files.len() > SMALL_SCAN_FILES
            && snapshot
                .scanned_at
                .is_some_and(|at| at.elapsed() < LARGE_RESCAN)
        {
            return;
        }
        let root = self.root.clone();
        let spec = Arc::clone(&self.spec);
        let Ok(now) = tokio::task::spawn_blocking(move || scan_sources(&spec, &root)).await else {
            return;
        };
        let first = snapshot.scanned_at.is_none();
        let mut events = Vec::new();
        if !first {
            for (path, stamp) in &now {
                let kind = match snapshot.files.get(path) {
                    None => FileChangeType::CREATED,
                    Some(before) if before != stamp => FileChangeType::CHANGED,
                    Some(_) => continue,
                };
                events.extend(
                    Url::from_file_path(path)
                        .ok()
                        .map(|uri| FileEvent { uri, typ: kind }),
                );
            }
            for path in snapshot.files.keys() {
                if !now.contains_key(path) {
                    events.extend(Url::from_file_path(path).ok().map(|uri| FileEvent {
                        uri,
                        typ: FileChangeType::DELETED,
                    }));
                }
            }
        }
        snapshot.files = now;
        snapshot.scanned_at = Some(Instant::now());
        if !events.is_empty() {
            tracing::debug!(server = %self.spec.name, changes = events.len(), "files changed on disk");
            self.connection
                .notify::<DidChangeWatchedFiles>(DidChangeWatchedFilesParams { changes: events });
        }
    }

    /// Tells the server that files changed on disk (after a rename wrote them): open ones
    /// get their new text, and every one is announced as a watched-file change.
    pub async fn files_changed(&self, changes: &[(PathBuf, FileChangeType)]) {
        let mut documents = self.documents.lock().await;
        let mut events = Vec::new();
        for (path, kind) in changes {
            let Ok(uri) = Url::from_file_path(path) else {
                continue;
            };
            if documents.contains_key(path) {
                let _ = self.sync_locked(&mut documents, path);
            }
            events.push(FileEvent { uri, typ: *kind });
        }
        if !events.is_empty() {
            self.connection
                .notify::<DidChangeWatchedFiles>(DidChangeWatchedFilesParams { changes: events });
        }
    }
}

/// The URI a server knows `path` by.
pub(crate) fn document_uri(path: &Path) -> Result<Url> {
    Url::from_file_path(path).map_err(|()| Error::NotAbsolute {
        path: path.to_path_buf(),
    })
}

/// The stamps of the server's source files under `root` (hidden, vendored and build folders
/// left out), visiting at most [`SCAN_ENTRIES`] entries.
fn scan_sources(spec: &ServerSpec, root: &Path) -> HashMap<PathBuf, (SystemTime, u64)> {
    let mut files = HashMap::new();
    let mut stack = vec![root.to_path_buf()];
    let mut budget = SCAN_ENTRIES;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if budget == 0 {
                return files;
            }
            budget -= 1;
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if !name.starts_with('.') && !UNSCANNED_DIRS.contains(&name.as_ref()) {
                    stack.push(path);
                }
            } else if kind.is_file()
                && spec.language_id(&path).is_some()
                && let Some(stamp) = stamp(&path)
            {
                files.insert(path, stamp);
            }
        }
    }
    files
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.modified().ok()?, metadata.len()))
}

/// Whether an unchanged stamp can be trusted without reading the file again.
fn trusted(sent: Option<(SystemTime, u64)>, now: Option<(SystemTime, u64)>) -> bool {
    match (sent, now) {
        (Some(sent), Some(now)) if sent == now => SystemTime::now()
            .duration_since(now.0)
            .is_ok_and(|age| age > TRUST_STAMP_AFTER),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_trusted_only_when_unchanged_and_old() {
        let old = SystemTime::now() - Duration::from_secs(60);
        assert!(trusted(Some((old, 10)), Some((old, 10))));
        assert!(!trusted(Some((old, 10)), Some((old, 11))));
        let fresh = SystemTime::now();
        assert!(!trusted(Some((fresh, 10)), Some((fresh, 10))));
        assert!(!trusted(None, Some((old, 10))));
    }
}
