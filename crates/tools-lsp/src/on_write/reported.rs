//! The per-run registry of diagnostics already reported after writes (LSP-7), the piece of
//! diagnostics on write (LSP-6) that decides what is new.
//!
//! A diagnostic is keyed by severity, code and message — deliberately not by position, so one
//! that only moved down four lines is not new. Keys are per file, and each key has a *count*
//! (SPEC section 10): a signature change that breaks 25 calls in one file raises one key's
//! count by 25, and a second error with the message of an existing one raises it by one.
//! Which occurrences are the new ones is a best effort: the lines of the key before the write
//! are carried to the new text through the write's own line diff, and occurrences at lines
//! that did not have the key before are the ones listed.
//!
//! Each fresh publish replaces the file's counts, so a key the publish no longer contains is
//! forgotten, and an error that is fixed and later comes back is reported again — unless it
//! was only hidden (SPEC section 11): a write that introduces errors can stop a checker from
//! reaching others (a library that no longer compiles hides its tests' and benches' errors),
//! so a count that falls in such a write is held, and the errors' return when the break is
//! undone is not news. A count that falls in a write that introduced nothing is a fix.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_lsp::lsp_types::{Diagnostic, NumberOrString};

/// What identifies a diagnostic across writes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    severity: Option<i64>,
    code: Option<String>,
    message: String,
}

impl Key {
    fn of(diagnostic: &Diagnostic) -> Self {
        Key {
            // lsp-types' severity is a newtype without `Hash` and with a private number; its
            // protocol number is what identifies it.
            severity: diagnostic
                .severity
                .and_then(|s| serde_json::to_value(s).ok()?.as_i64()),
            code: diagnostic.code.as_ref().map(|code| match code {
                NumberOrString::Number(n) => n.to_string(),
                NumberOrString::String(s) => s.clone(),
            }),
            message: diagnostic.message.trim().to_owned(),
        }
    }
}

/// One file's diagnostics as last taken: each key with the 0-based lines it occurs on (one
/// entry per occurrence), the text those lines are lines of, and the counts held above them
/// for keys a write may only have hidden.
#[derive(Debug, Default)]
struct FileEntry {
    keys: HashMap<Key, Vec<u32>>,
    text: Option<Arc<str>>,
    held: HashMap<Key, usize>,
}

impl FileEntry {
    fn of(diagnostics: &[Diagnostic], text: Option<Arc<str>>) -> Self {
        let mut keys: HashMap<Key, Vec<u32>> = HashMap::new();
        for diagnostic in diagnostics {
            keys.entry(Key::of(diagnostic))
                .or_default()
                .push(diagnostic.range.start.line);
        }
        FileEntry {
            keys,
            text,
            held: HashMap::new(),
        }
    }

    /// How many of `key` the run knows of: what the file has, or what was held above it.
    fn known(&self, key: &Key) -> usize {
        let now = self.keys.get(key).map_or(0, Vec::len);
        now.max(self.held.get(key).copied().unwrap_or(0))
    }
}

/// Whether the write whose diagnostics are being taken introduced errors anywhere its server
/// checks: then counts that fell may only be hidden, and are held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hiding {
    /// The write introduced no error: a count that fell is a fix.
    Fixes,
    /// The write introduced errors: a count that fell is held.
    MayHide,
}

/// What a fresh publish introduced in one file.
#[derive(Debug)]
pub(crate) struct Introduced<'a> {
    /// The new occurrences, in publish order: for each key whose count rose, as many as it
    /// rose by, those at lines that did not have the key before first.
    pub(crate) diagnostics: Vec<&'a Diagnostic>,
}

/// Diagnostic keys and their counts per file, for one run.
#[derive(Debug, Default)]
pub(crate) struct Reported {
    files: HashMap<PathBuf, FileEntry>,
}

impl Reported {
    /// Whether the file has an entry (a baseline or a publish taken after a write).
    pub(crate) fn knows(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    /// Forgets a file (it was deleted): if it comes back, its diagnostics are new.
    pub(crate) fn forget(&mut self, path: &Path) {
        self.files.remove(path);
    }

    /// Records what a file had before the first write the run watches (with the text it had
    /// then, when known), so diagnostics that were there already are never reported as
    /// introduced. Does nothing once the file has an entry.
    pub(crate) fn baseline(
        &mut self,
        path: &Path,
        diagnostics: &[Diagnostic],
        text: Option<Arc<str>>,
    ) {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| FileEntry::of(diagnostics, text));
    }

    /// What a fresh publish for `path` about `text` introduced, without taking it: for each
    /// key whose count rose above what the run knows, as many as it rose by.
    pub(crate) fn assess<'a>(
        &self,
        path: &Path,
        diagnostics: &'a [Diagnostic],
        text: Option<&Arc<str>>,
    ) -> Introduced<'a> {
        let empty = FileEntry::default();
        let before = self.files.get(path).unwrap_or(&empty);
        let carried = match (&before.text, text) {
            (Some(old), Some(new)) => Some(line_map(old, new)),
            _ => None,
        };
        // Group this publish's occurrences by key, keeping publish order.
        let mut order: Vec<Key> = Vec::new();
        let mut now: HashMap<Key, Vec<usize>> = HashMap::new();
        for (index, diagnostic) in diagnostics.iter().enumerate() {
            let key = Key::of(diagnostic);
            let occurrences = now.entry(key.clone()).or_default();
            if occurrences.is_empty() {
                order.push(key);
            }
            occurrences.push(index);
        }
        let mut new_indices: Vec<usize> = Vec::new();
        for key in &order {
            let occurrences = &now[key];
            let old_lines = before.keys.get(key).map(Vec::as_slice).unwrap_or_default();
            let rise = occurrences.len().saturating_sub(before.known(key));
            if rise == 0 {
                continue;
            }
            // The key's old lines, carried to the new text where they survived the write.
            let mut expected: Vec<Option<u32>> = old_lines
                .iter()
                .map(|&line| match &carried {
                    Some(map) => map.get(line as usize).copied().flatten(),
                    None => Some(line),
                })
                .collect();
            let mut fresh = Vec::new();
            let mut matched = Vec::new();
            for &index in occurrences {
                let line = diagnostics[index].range.start.line;
                match expected.iter().position(|&old| old == Some(line)) {
                    Some(found) => {
                        expected.swap_remove(found);
                        matched.push(index);
                    }
                    None => fresh.push(index),
                }
            }
            // Occurrences at new lines first; if fewer than the rise (two at one line), the
            // rest from the others, so the number listed is the number introduced.
            fresh.extend(matched);
            fresh.truncate(rise);
            new_indices.extend(fresh);
        }
        new_indices.sort_unstable();
        Introduced {
            diagnostics: new_indices.into_iter().map(|i| &diagnostics[i]).collect(),
        }
    }

    /// Makes a fresh publish the file's state. A key whose count fell below what the run
    /// knows is held at that count when the write may have hidden it, and let go otherwise.
    pub(crate) fn take(
        &mut self,
        path: &Path,
        diagnostics: &[Diagnostic],
        text: Option<Arc<str>>,
        hiding: Hiding,
    ) {
        let before = self.files.remove(path).unwrap_or_default();
        let mut entry = FileEntry::of(diagnostics, text);
        if hiding == Hiding::MayHide {
            let keys = before.keys.keys().chain(before.held.keys());
            for key in keys {
                let known = before.known(key);
                let now = entry.keys.get(key).map_or(0, Vec::len);
                if known > now {
                    entry.held.insert(key.clone(), known);
                }
            }
        }
        self.files.insert(path.to_path_buf(), entry);
    }

    /// [`Reported::assess`] and [`Reported::take`] in one step, for a write that fixes
    /// whatever it no longer shows.
    #[cfg(test)]
    pub(crate) fn introduced<'a>(
        &mut self,
        path: &Path,
        diagnostics: &'a [Diagnostic],
        text: Option<Arc<str>>,
    ) -> Introduced<'a> {
        let found = self.assess(path, diagnostics, text.as_ref());
        self.take(path, diagnostics, text, Hiding::Fixes);
        found
    }
}

/// The run's registry, shared by every write's check: each step takes the lock for as long
/// as it reads and records, never across a wait for a server.
#[derive(Debug, Default)]
pub(crate) struct Registry(Mutex<Reported>);

impl Registry {
    /// The registry, to read and record (a panic while it was held leaves it usable).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Reported> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the file has an entry.
    pub(crate) fn knows(&self, path: &Path) -> bool {
        self.lock().knows(path)
    }
}

/// For each 0-based line of `old`, the line it became in `new`, when it is unchanged there.
fn line_map(old: &str, new: &str) -> Vec<Option<u32>> {
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(std::time::Duration::from_millis(50))
        .diff_lines(old, new);
    let mut map = vec![None; old.lines().count() + 1];
    for op in diff.ops() {
        if let similar::DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = *op
        {
            for offset in 0..len {
                if let Some(slot) = map.get_mut(old_index + offset) {
                    *slot = u32::try_from(new_index + offset).ok();
                }
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use async_lsp::lsp_types::{DiagnosticSeverity, Position, Range};

    use super::*;

    fn error(line: u32, code: &str, message: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 0), Position::new(line, 5)),
            severity: Some(DiagnosticSeverity::ERROR),
            code: Some(NumberOrString::String(code.to_owned())),
            message: message.to_owned(),
            ..Diagnostic::default()
        }
    }

    fn lines_of(found: Introduced<'_>) -> Vec<u32> {
        found
            .diagnostics
            .into_iter()
            .map(|d| tools_core::Line::from_lsp(d.range.start.line).get())
            .collect()
    }

    fn messages(found: Introduced<'_>) -> Vec<&str> {
        found
            .diagnostics
            .into_iter()
            .map(|d| d.message.as_str())
            .collect()
    }

    fn text(lines: usize) -> Option<Arc<str>> {
        Some(
            (0..lines)
                .map(|n| format!("line {n}\n"))
                .collect::<String>()
                .into(),
        )
    }

    #[test]
    fn lsp_7_a_diagnostic_is_reported_once_even_when_it_moves() {
        let mut reported = Reported::default();
        let path = Path::new("src/lib.rs");
        let first = [error(3, "E0308", "mismatched types")];
        assert_eq!(
            messages(reported.introduced(path, &first, None)),
            ["mismatched types"]
        );
        // An unrelated edit: the same error again.
        assert!(
            reported
                .introduced(path, &first, None)
                .diagnostics
                .is_empty()
        );
        // Four lines inserted above it: same key, new position.
        assert!(
            reported
                .introduced(path, &[error(7, "E0308", "mismatched types")], None)
                .diagnostics
                .is_empty()
        );
    }

    #[test]
    fn lsp_7_a_fixed_error_that_comes_back_is_reported_again() {
        let mut reported = Reported::default();
        let path = Path::new("src/lib.rs");
        let broken = [error(3, "E0308", "mismatched types")];
        assert_eq!(
            reported.introduced(path, &broken, None).diagnostics.len(),
            1
        );
        assert!(reported.introduced(path, &[], None).diagnostics.is_empty());
        assert_eq!(
            messages(reported.introduced(path, &broken, None)),
            ["mismatched types"]
        );
    }

    #[test]
    fn lsp_7_the_registry_is_per_file() {
        let mut reported = Reported::default();
        let same = [error(1, "E0425", "cannot find value `x`")];
        assert_eq!(
            reported
                .introduced(Path::new("a.rs"), &same, None)
                .diagnostics
                .len(),
            1
        );
        assert_eq!(
            reported
                .introduced(Path::new("b.rs"), &same, None)
                .diagnostics
                .len(),
            1
        );
    }

    #[test]
    fn lsp_6_what_was_there_before_the_first_write_is_never_new() {
        let mut reported = Reported::default();
        let path = Path::new("app.py");
        let old = error(2, "reportUndefinedVariable", "\"y\" is not defined");
        reported.baseline(path, std::slice::from_ref(&old), None);
        let new = error(
            9,
            "reportAttributeAccessIssue",
            "Cannot access attribute \"z\"",
        );
        let after = [old.clone(), new];
        assert_eq!(
            messages(reported.introduced(path, &after, None)),
            ["Cannot access attribute \"z\""]
        );
        // A baseline after the first write changes nothing.
        reported.baseline(path, &[], None);
        assert!(
            reported
                .introduced(path, &after, None)
                .diagnostics
                .is_empty()
        );
    }

    #[test]
    fn lsp_7_severity_and_code_are_part_of_the_key() {
        let mut reported = Reported::default();
        let path = Path::new("a.rs");
        reported.introduced(path, &[error(1, "E1", "m")], None);
        let mut warning = error(1, "E1", "m");
        warning.severity = Some(DiagnosticSeverity::WARNING);
        assert_eq!(
            reported
                .introduced(path, &[warning, error(1, "E2", "m")], None)
                .diagnostics
                .len(),
            2
        );
    }

    #[test]
    fn lsp_7_counts_every_call_a_signature_change_broke() {
        // 25 calls of one function, all broken by one change: one key, 25 occurrences.
        let mut reported = Reported::default();
        let path = Path::new("src/lib.rs");
        reported.baseline(path, &[], text(40));
        let broken: Vec<Diagnostic> = (10..35)
            .map(|line| {
                error(
                    line,
                    "E0061",
                    "this function takes 2 arguments but 1 argument was supplied",
                )
            })
            .collect();
        assert_eq!(
            reported
                .introduced(path, &broken, text(40))
                .diagnostics
                .len(),
            25
        );
    }

    #[test]
    fn lsp_7_a_second_error_with_an_existing_message_is_new_and_located() {
        let mut reported = Reported::default();
        let path = Path::new("src/lib.rs");
        let old = error(2, "E0308", "mismatched types");
        reported.baseline(path, std::slice::from_ref(&old), text(10));
        // Three lines inserted at the top move the old error to line 6 (1-based); the new one
        // is at line 9.
        let new_text: Arc<str> = format!("a\nb\nc\n{}", &*text(10).unwrap()).into();
        let after = [
            error(5, "E0308", "mismatched types"),
            error(8, "E0308", "mismatched types"),
        ];
        assert_eq!(
            lines_of(reported.introduced(path, &after, Some(new_text))),
            [9]
        );
    }

    #[test]
    fn lsp_7_fixing_one_of_two_reports_nothing_and_bringing_it_back_reports_it() {
        let mut reported = Reported::default();
        let path = Path::new("src/lib.rs");
        let two = [
            error(2, "E0308", "mismatched types"),
            error(6, "E0308", "mismatched types"),
        ];
        reported.baseline(path, &two, text(10));
        let one = [error(2, "E0308", "mismatched types")];
        assert!(
            reported
                .introduced(path, &one, text(10))
                .diagnostics
                .is_empty()
        );
        assert_eq!(lines_of(reported.introduced(path, &two, text(10))), [7]);
    }

    #[test]
    fn lsp_7_errors_a_broken_build_hid_are_not_new_when_it_is_repaired() {
        let mut reported = Reported::default();
        let bench = Path::new("benches/parse.rs");
        let feature = [error(
            0,
            "E0554",
            "`#![feature]` may not be used on the stable channel",
        )];
        reported.baseline(bench, &feature, None);
        // The library breaks, so the bench is not compiled: its error is gone, hidden.
        let hidden = reported.assess(bench, &[], None);
        assert!(hidden.diagnostics.is_empty());
        reported.take(bench, &[], None, Hiding::MayHide);
        // The break is undone: the bench's error is back, and was there before the run.
        assert!(
            reported
                .assess(bench, &feature, None)
                .diagnostics
                .is_empty()
        );
        reported.take(bench, &feature, None, Hiding::Fixes);
        // A real fix (nothing new anywhere), then the error again: that is news.
        reported.take(bench, &[], None, Hiding::Fixes);
        assert_eq!(reported.assess(bench, &feature, None).diagnostics.len(), 1);
    }

    #[test]
    fn lines_unchanged_by_a_write_are_carried_to_their_new_place() {
        let map = line_map("a\nb\nc\n", "x\na\nc\n");
        assert_eq!(map[0], Some(1));
        assert_eq!(map[1], None);
        assert_eq!(map[2], Some(2));
    }
}
