//! Where a project's root is: the folder holding one of its markers (`Cargo.toml`,
//! `pyproject.toml`, `tsconfig.json`, …), nearest to a file or outermost in the workspace.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Folders never searched for root markers below the workspace root (hidden ones neither).
pub const SKIPPED_DIRS: &[&str] = &["node_modules", "target", "venv", "__pycache__", "dist"];

/// How deep below the workspace root [`scan_roots`] looks.
pub const SCAN_DEPTH: usize = 3;

/// At most this many folders are read by one scan, so it stays quick on huge trees.
pub const SCAN_BUDGET: usize = 2_000;

/// Which ancestor holding a marker is the project root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootRule {
    /// The nearest one above the file.
    Nearest,
    /// The outermost one inside the workspace (a Cargo workspace above its members).
    Outermost,
}

/// The first of `markers` present in `dir`.
pub fn marker_in<'a, S: AsRef<str>>(markers: &'a [S], dir: &Path) -> Option<&'a str> {
    markers
        .iter()
        .map(AsRef::as_ref)
        .find(|marker| dir.join(marker).exists())
}

/// The project root for `file`: by `rule`, the nearest or outermost folder holding a marker,
/// from the file's folder up to `workspace_root` (never above it).
pub fn root_for<S: AsRef<str>>(
    markers: &[S],
    rule: RootRule,
    workspace_root: &Path,
    file: &Path,
) -> Option<PathBuf> {
    let mut found = None;
    let mut dir = file.parent();
    while let Some(current) = dir {
        if !current.starts_with(workspace_root) {
            break;
        }
        if marker_in(markers, current).is_some() {
            found = Some(current.to_path_buf());
            if rule == RootRule::Nearest {
                break;
            }
        }
        if current == workspace_root {
            break;
        }
        dir = current.parent();
    }
    found
}

/// Every project root in the workspace: the root itself and folders up to [`SCAN_DEPTH`]
/// levels down, breadth first in name order, skipping hidden folders and [`SKIPPED_DIRS`]. By
/// the outermost rule, roots inside another root are left out.
pub fn scan_roots<S: AsRef<str>>(
    markers: &[S],
    rule: RootRule,
    workspace_root: &Path,
) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    let mut queue = VecDeque::from([(workspace_root.to_path_buf(), 0usize)]);
    let mut budget = SCAN_BUDGET;
    while let Some((dir, depth)) = queue.pop_front() {
        if budget == 0 {
            break;
        }
        budget -= 1;
        if marker_in(markers, &dir).is_some() {
            roots.push(dir.clone());
            if rule == RootRule::Outermost {
                continue;
            }
        }
        if depth == SCAN_DEPTH {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<PathBuf> = entries
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_ref())
            })
            .map(|entry| entry.path())
            .collect();
        children.sort();
        queue.extend(children.into_iter().map(|child| (child, depth + 1)));
    }
    roots
}
