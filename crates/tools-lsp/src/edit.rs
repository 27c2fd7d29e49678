//! A server's `WorkspaceEdit` turned into whole-file changes, computed in memory before any
//! file is touched, so `lsp_rename` can apply it all or nothing (LSP-8) through
//! `Workspace::commit`: every path the server names is confined through the workspace's own
//! resolution (a symlink inside pointing outside is refused, PROD-5), and every change carries
//! the hash of the text it was computed from, so it cannot land on a file changed since.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use async_lsp::lsp_types::{
    DocumentChangeOperation, DocumentChanges, OneOf, ResourceOp, TextEdit, Url, WorkspaceEdit,
};
use tools_core::{Change, Expect, FileChange, ToolError};

use crate::position::{Encoding, offset};

/// Why a server's edit cannot be applied as a whole; the caller says that nothing was
/// changed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    #[error("the edit names {uri}, which is not a file")]
    NotAFile { uri: Url },
    /// A path the edit names leads outside the workspace.
    #[error(transparent)]
    Outside(ToolError),
    #[error("the edit creates {}, which exists", path.display())]
    CreatesExisting { path: PathBuf },
    #[error("the edit renames {}, which does not exist", path.display())]
    RenamesMissing { path: PathBuf },
    #[error("the edit renames the folder {}; only file renames are supported", path.display())]
    RenamesFolder { path: PathBuf },
    #[error("the edit renames onto {}, which exists", path.display())]
    RenamesOnto { path: PathBuf },
    #[error("the edit deletes the folder {}; only files can be deleted", path.display())]
    DeletesFolder { path: PathBuf },
    #[error("the edit deletes {}, which does not exist", path.display())]
    DeletesMissing { path: PathBuf },
    #[error("the edit changes {}, which does not exist", path.display())]
    ChangesMissing { path: PathBuf },
    #[error("the edit has overlapping changes in {}", path.display())]
    Overlapping { path: PathBuf },
    #[error("the edit has a backwards range in {}", path.display())]
    Backwards { path: PathBuf },
}

/// One file in a planned edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlannedFile {
    pub(crate) path: PathBuf,
    pub(crate) edits: usize,
    /// The path it had before, when the edit renames it.
    pub(crate) renamed_from: Option<PathBuf>,
    pub(crate) deleted: bool,
}

/// Everything an edit changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) changes: Vec<Change>,
    pub(crate) files: Vec<PlannedFile>,
    /// The texts the edits insert, with how often each is inserted (a rename's new name as
    /// the server writes it: `r#fn` for `fn`).
    pub(crate) new_texts: BTreeMap<String, usize>,
}

/// The files as the edit sees them while it is applied in order.
struct Files<'a> {
    read: &'a dyn Fn(&Path) -> Option<String>,
    confine: &'a dyn Fn(&Path) -> Result<PathBuf, ToolError>,
    original: BTreeMap<PathBuf, Option<String>>,
    current: BTreeMap<PathBuf, Option<String>>,
    edits: BTreeMap<PathBuf, usize>,
    renamed_from: BTreeMap<PathBuf, PathBuf>,
    new_texts: BTreeMap<String, usize>,
}

impl Files<'_> {
    fn load(&mut self, path: &Path) -> Option<String> {
        if let Some(text) = self.current.get(path) {
            return text.clone();
        }
        let text = (self.read)(path);
        self.original.insert(path.to_path_buf(), text.clone());
        self.current.insert(path.to_path_buf(), text.clone());
        text
    }

    fn set(&mut self, path: &Path, text: Option<String>) {
        self.load(path);
        self.current.insert(path.to_path_buf(), text);
    }
}

impl Files<'_> {
    /// The file a URI names, resolved and confined to the workspace.
    fn path(&self, uri: &Url) -> Result<PathBuf, PlanError> {
        let path = uri
            .to_file_path()
            .map_err(|()| PlanError::NotAFile { uri: uri.clone() })?;
        (self.confine)(&path).map_err(PlanError::Outside)
    }
}

/// Plans `edit`. `read` gives a file's current text (`None` when it does not exist);
/// positions are in `encoding`; `confine` resolves each path the edit names, refusing what
/// leads outside the workspace.
pub(crate) fn plan(
    edit: WorkspaceEdit,
    encoding: Encoding,
    confine: &dyn Fn(&Path) -> Result<PathBuf, ToolError>,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Result<Plan, PlanError> {
    let mut files = Files {
        read,
        confine,
        original: BTreeMap::new(),
        current: BTreeMap::new(),
        edits: BTreeMap::new(),
        renamed_from: BTreeMap::new(),
        new_texts: BTreeMap::new(),
    };
    match edit.document_changes {
        Some(DocumentChanges::Edits(edits)) => {
            for document in edits {
                let path = files.path(&document.text_document.uri)?;
                apply_text_edits(
                    &mut files,
                    &path,
                    document.edits.into_iter().map(plain),
                    encoding,
                )?;
            }
        }
        Some(DocumentChanges::Operations(operations)) => {
            for operation in operations {
                match operation {
                    DocumentChangeOperation::Edit(document) => {
                        let path = files.path(&document.text_document.uri)?;
                        apply_text_edits(
                            &mut files,
                            &path,
                            document.edits.into_iter().map(plain),
                            encoding,
                        )?;
                    }
                    DocumentChangeOperation::Op(ResourceOp::Create(create)) => {
                        let path = files.path(&create.uri)?;
                        let (overwrite, ignore_if_exists) = create
                            .options
                            .map(|o| (o.overwrite, o.ignore_if_exists))
                            .unwrap_or_default();
                        if files.load(&path).is_some() {
                            if ignore_if_exists == Some(true) && overwrite != Some(true) {
                                continue;
                            }
                            if overwrite != Some(true) {
                                return Err(PlanError::CreatesExisting { path });
                            }
                        }
                        files.set(&path, Some(String::new()));
                    }
                    DocumentChangeOperation::Op(ResourceOp::Rename(rename)) => {
                        let old = files.path(&rename.old_uri)?;
                        let new = files.path(&rename.new_uri)?;
                        let Some(text) = files.load(&old) else {
                            return Err(PlanError::RenamesMissing { path: old });
                        };
                        if old.is_dir() {
                            return Err(PlanError::RenamesFolder { path: old });
                        }
                        let (overwrite, ignore_if_exists) = rename
                            .options
                            .map(|o| (o.overwrite, o.ignore_if_exists))
                            .unwrap_or_default();
                        if files.load(&new).is_some() && overwrite != Some(true) {
                            if ignore_if_exists == Some(true) {
                                continue;
                            }
                            return Err(PlanError::RenamesOnto { path: new });
                        }
                        files.set(&old, None);
                        files.set(&new, Some(text));
                        let count = files.edits.remove(&old).unwrap_or(0);
                        files.edits.insert(new.clone(), count);
                        let first = files.renamed_from.remove(&old).unwrap_or(old);
                        files.renamed_from.insert(new, first);
                    }
                    DocumentChangeOperation::Op(ResourceOp::Delete(delete)) => {
                        let path = files.path(&delete.uri)?;
                        if path.is_dir() {
                            return Err(PlanError::DeletesFolder { path });
                        }
                        if files.load(&path).is_none() {
                            if delete.options.and_then(|o| o.ignore_if_not_exists) == Some(true) {
                                continue;
                            }
                            return Err(PlanError::DeletesMissing { path });
                        }
                        files.set(&path, None);
                    }
                }
            }
        }
        None => {}
    }
    if let Some(changes) = edit.changes {
        let mut sorted: Vec<(Url, Vec<TextEdit>)> = changes.into_iter().collect();
        sorted.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        for (uri, edits) in sorted {
            let path = files.path(&uri)?;
            apply_text_edits(&mut files, &path, edits.into_iter(), encoding)?;
        }
    }
    let mut changes = Vec::new();
    let mut planned = Vec::new();
    for (path, text) in &files.current {
        let before = files.original.get(path).cloned().flatten();
        let expect = Expect::of(before.as_deref().map(str::as_bytes));
        match (before, text) {
            (Some(_), None) => {
                changes.push(Change {
                    path: path.clone(),
                    expect,
                    change: FileChange::Delete,
                });
                // A file renamed away shows up under its new name, not as a deletion.
                if !files.renamed_from.values().any(|old| old == path) {
                    planned.push(PlannedFile {
                        path: path.clone(),
                        edits: 0,
                        renamed_from: None,
                        deleted: true,
                    });
                }
            }
            (before, Some(text))
                if before.as_deref() != Some(text.as_str())
                    || files.renamed_from.contains_key(path) =>
            {
                if before.as_deref() != Some(text.as_str()) {
                    changes.push(Change {
                        path: path.clone(),
                        expect,
                        change: FileChange::Write(text.clone().into_bytes()),
                    });
                }
                planned.push(PlannedFile {
                    path: path.clone(),
                    edits: files.edits.get(path).copied().unwrap_or(0),
                    renamed_from: files.renamed_from.get(path).cloned(),
                    deleted: false,
                });
            }
            _ => {}
        }
    }
    Ok(Plan {
        changes,
        files: planned,
        new_texts: files.new_texts,
    })
}

fn plain(edit: OneOf<TextEdit, async_lsp::lsp_types::AnnotatedTextEdit>) -> TextEdit {
    match edit {
        OneOf::Left(edit) => edit,
        OneOf::Right(annotated) => annotated.text_edit,
    }
}

/// Applies one batch of edits to a file; the ranges all refer to the text before the batch.
fn apply_text_edits(
    files: &mut Files<'_>,
    path: &Path,
    edits: impl Iterator<Item = TextEdit>,
    encoding: Encoding,
) -> Result<(), PlanError> {
    let Some(mut text) = files.load(path) else {
        return Err(PlanError::ChangesMissing {
            path: path.to_path_buf(),
        });
    };
    let mut spans: Vec<(usize, usize, usize, String)> = edits
        .enumerate()
        .map(|(index, edit)| {
            (
                offset(&text, edit.range.start, encoding),
                offset(&text, edit.range.end, encoding),
                index,
                edit.new_text,
            )
        })
        .collect();
    // Later edits first, so earlier offsets stay valid. Of inserts at one position, the one
    // listed last goes in first: each next one lands before it, so they read in list order.
    spans.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)));
    for pair in spans.windows(2) {
        if pair[1].1 > pair[0].0 {
            return Err(PlanError::Overlapping {
                path: path.to_path_buf(),
            });
        }
    }
    let count = spans.len();
    for (_, _, _, new_text) in &spans {
        *files.new_texts.entry(new_text.clone()).or_insert(0) += 1;
    }
    for (start, end, _, new_text) in spans {
        if start > end {
            return Err(PlanError::Backwards {
                path: path.to_path_buf(),
            });
        }
        text.replace_range(start..end, &new_text);
    }
    files.set(path, Some(text));
    *files.edits.entry(path.to_path_buf()).or_insert(0) += count;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use async_lsp::lsp_types::{
        OptionalVersionedTextDocumentIdentifier, Position, Range, RenameFile, TextDocumentEdit,
    };

    use super::*;

    fn edit(line: u32, start: u32, end: u32, text: &str) -> TextEdit {
        TextEdit {
            range: Range::new(Position::new(line, start), Position::new(line, end)),
            new_text: text.to_owned(),
        }
    }

    fn disk() -> impl Fn(&Path) -> Option<String> {
        let files: HashMap<PathBuf, String> = [
            ("/ws/a.rs", "fn old() {}\nfn x() { old(); old(); }\n"),
            ("/ws/b.rs", "use crate::old;\n"),
            ("/ws/m.rs", "pub fn f() {}\n"),
        ]
        .into_iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_owned()))
        .collect();
        move |path| files.get(path).cloned()
    }

    fn uri(path: &str) -> Url {
        Url::from_file_path(path).unwrap()
    }

    fn confine(path: &Path) -> Result<PathBuf, ToolError> {
        match path.starts_with("/ws") {
            true => Ok(path.to_path_buf()),
            false => Err(ToolError::failed(format!(
                "{} is outside the workspace",
                path.display()
            ))),
        }
    }

    fn pairs(plan: &Plan) -> Vec<(PathBuf, FileChange)> {
        plan.changes
            .iter()
            .map(|change| (change.path.clone(), change.change.clone()))
            .collect()
    }

    #[test]
    fn inserts_at_one_position_keep_the_order_the_server_listed_them_in() {
        let mut changes = HashMap::new();
        changes.insert(
            uri("/ws/m.rs"),
            vec![
                edit(0, 0, 0, "use a;\n"),
                edit(0, 0, 0, "use b;\n"),
                edit(0, 7, 8, "g"),
            ],
        );
        let read = disk();
        let plan = plan(WorkspaceEdit::new(changes), Encoding::Utf8, &confine, &read).unwrap();
        assert_eq!(
            pairs(&plan),
            vec![(
                PathBuf::from("/ws/m.rs"),
                FileChange::Write(b"use a;\nuse b;\npub fn g() {}\n".to_vec())
            )]
        );
        // Each change expects the text it was computed from.
        assert_eq!(plan.changes[0].expect, Expect::of(Some(b"pub fn f() {}\n")));
    }

    #[test]
    fn lsp_8_changes_apply_in_memory_with_counts_per_file() {
        let mut changes = HashMap::new();
        changes.insert(
            uri("/ws/a.rs"),
            vec![
                edit(0, 3, 6, "new"),
                edit(1, 9, 12, "new"),
                edit(1, 16, 19, "new"),
            ],
        );
        changes.insert(uri("/ws/b.rs"), vec![edit(0, 11, 14, "new")]);
        let read = disk();
        let plan = plan(WorkspaceEdit::new(changes), Encoding::Utf8, &confine, &read).unwrap();
        assert_eq!(
            pairs(&plan),
            vec![
                (
                    PathBuf::from("/ws/a.rs"),
                    FileChange::Write(b"fn new() {}\nfn x() { new(); new(); }\n".to_vec())
                ),
                (
                    PathBuf::from("/ws/b.rs"),
                    FileChange::Write(b"use crate::new;\n".to_vec())
                ),
            ]
        );
        let counts: Vec<(PathBuf, usize)> = plan
            .files
            .iter()
            .map(|f| (f.path.clone(), f.edits))
            .collect();
        assert_eq!(
            counts,
            vec![
                (PathBuf::from("/ws/a.rs"), 3),
                (PathBuf::from("/ws/b.rs"), 1)
            ]
        );
    }

    #[test]
    fn lsp_8_a_file_rename_with_edits_becomes_delete_plus_write() {
        let operations = vec![
            DocumentChangeOperation::Edit(TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier {
                    uri: uri("/ws/m.rs"),
                    version: None,
                },
                edits: vec![OneOf::Left(edit(0, 7, 8, "g"))],
            }),
            DocumentChangeOperation::Op(ResourceOp::Rename(RenameFile {
                old_uri: uri("/ws/m.rs"),
                new_uri: uri("/ws/n.rs"),
                options: None,
                annotation_id: None,
            })),
        ];
        let read = disk();
        let plan = plan(
            WorkspaceEdit {
                document_changes: Some(DocumentChanges::Operations(operations)),
                ..WorkspaceEdit::default()
            },
            Encoding::Utf16,
            &confine,
            &read,
        )
        .unwrap();
        assert_eq!(
            pairs(&plan),
            vec![
                (PathBuf::from("/ws/m.rs"), FileChange::Delete),
                (
                    PathBuf::from("/ws/n.rs"),
                    FileChange::Write(b"pub fn g() {}\n".to_vec())
                ),
            ]
        );
        assert_eq!(
            plan.files,
            vec![PlannedFile {
                path: PathBuf::from("/ws/n.rs"),
                edits: 1,
                renamed_from: Some(PathBuf::from("/ws/m.rs")),
                deleted: false,
            }]
        );
    }

    #[test]
    fn lsp_8_edits_outside_the_workspace_or_overlapping_are_refused() {
        let read = |_: &Path| Some("abcdef\n".to_owned());
        let mut outside = HashMap::new();
        outside.insert(uri("/elsewhere/x.rs"), vec![edit(0, 0, 1, "z")]);
        assert_eq!(
            plan(WorkspaceEdit::new(outside), Encoding::Utf8, &confine, &read)
                .unwrap_err()
                .to_string(),
            "/elsewhere/x.rs is outside the workspace"
        );
        let mut overlapping = HashMap::new();
        overlapping.insert(
            uri("/ws/x.rs"),
            vec![edit(0, 0, 3, "z"), edit(0, 2, 4, "y")],
        );
        assert!(
            plan(
                WorkspaceEdit::new(overlapping),
                Encoding::Utf8,
                &confine,
                &read
            )
            .unwrap_err()
            .to_string()
            .starts_with("the edit has overlapping changes")
        );
    }
}
