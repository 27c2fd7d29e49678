//! Staged edits between `ast_edit` and `resolve`: each file's content hash at staging and its
//! rewritten text, so `resolve` can refuse the whole edit when any file moved on (AST-7).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use tools_core::{ContentHash, ToolError};

/// One file of a staged edit.
#[derive(Debug, Clone)]
pub(crate) struct StagedFile {
    pub(crate) path: PathBuf,
    /// The hash of the file's bytes when the edit was staged.
    pub(crate) hash: ContentHash,
    pub(crate) rewritten: String,
    pub(crate) replacements: usize,
}

/// Where an edit stands.
#[derive(Debug, Clone)]
pub(crate) enum EditState {
    Pending(Vec<StagedFile>),
    Accepted,
    Discarded,
    Rejected,
}

/// Every edit staged in this run, by number.
#[derive(Debug, Default)]
pub(crate) struct EditStore {
    edits: Mutex<BTreeMap<u64, EditState>>,
}

impl EditStore {
    /// Stages `files` and returns the new edit's id, `edit_N`.
    pub(crate) fn stage(&self, files: Vec<StagedFile>) -> String {
        let mut edits = self.lock();
        let number = edits.keys().next_back().map_or(1, |last| last + 1);
        edits.insert(number, EditState::Pending(files));
        format!("edit_{number}")
    }

    /// Takes a pending edit out for resolving, or says why it cannot be.
    pub(crate) fn take(&self, id: &str) -> Result<(u64, Vec<StagedFile>), ToolError> {
        let mut edits = self.lock();
        let (number, files) = pending(&edits, id)?;
        edits.insert(number, EditState::Rejected);
        Ok((number, files))
    }

    /// A pending edit, left pending, or why it cannot be resolved.
    pub(crate) fn peek(&self, id: &str) -> Result<(u64, Vec<StagedFile>), ToolError> {
        pending(&self.lock(), id)
    }

    /// The files of a pending edit, without taking it (empty when it is not pending).
    pub(crate) fn pending_paths(&self, id: &str) -> Vec<PathBuf> {
        let number = id
            .trim()
            .strip_prefix("edit_")
            .and_then(|n| n.parse::<u64>().ok());
        match number.and_then(|n| self.lock().get(&n).cloned()) {
            Some(EditState::Pending(files)) => files.into_iter().map(|f| f.path).collect(),
            _ => Vec::new(),
        }
    }

    /// Records how a taken edit ended.
    pub(crate) fn finish(&self, number: u64, state: EditState) {
        self.lock().insert(number, state);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, EditState>> {
        self.edits
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The pending edit `id` names, or why there is none: `resolve`'s answer to the model.
fn pending(
    edits: &BTreeMap<u64, EditState>,
    id: &str,
) -> Result<(u64, Vec<StagedFile>), ToolError> {
    let number = id.strip_prefix("edit_").and_then(|n| n.parse::<u64>().ok());
    let known = || {
        let pending: Vec<String> = edits_with(edits, |s| matches!(s, EditState::Pending(_)));
        match pending.is_empty() {
            true => "no edit is pending in this run; stage one with ast_edit".to_owned(),
            false => format!("the pending edits are {}", pending.join(", ")),
        }
    };
    let Some(number) = number.filter(|n| edits.contains_key(n)) else {
        return Err(ToolError::failed(format!(
            "unknown edit_id `{id}`: {}",
            known()
        )));
    };
    match edits.get(&number) {
        Some(EditState::Pending(files)) => Ok((number, files.clone())),
        Some(previous) => {
            let how = match previous {
                EditState::Accepted => "accepted",
                EditState::Discarded => "discarded",
                _ => "rejected",
            };
            Err(ToolError::failed(format!(
                "`{id}` was already {how}, so nothing was done; {}",
                known()
            )))
        }
        None => Err(ToolError::failed(format!(
            "unknown edit_id `{id}`: {}",
            known()
        ))),
    }
}

fn edits_with(edits: &BTreeMap<u64, EditState>, keep: impl Fn(&EditState) -> bool) -> Vec<String> {
    edits
        .iter()
        .filter(|(_, s)| keep(s))
        .map(|(n, _)| format!("edit_{n}"))
        .collect()
}
