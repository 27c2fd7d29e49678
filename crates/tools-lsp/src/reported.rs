//! The per-run registry of diagnostics already reported after writes (LSP-7), the piece of
//! diagnostics on write (LSP-6) that decides what is new.
//!
//! A diagnostic is keyed by severity, code and message — deliberately not by position, so one
//! that only moved down four lines is not new. Keys are per file. Each fresh publish replaces
//! the file's set, so a key the publish no longer contains is forgotten, and an error that is
//! fixed and later comes back is reported again.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

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

/// Diagnostic keys per file, for one run.
#[derive(Debug, Default)]
pub(crate) struct Reported {
    files: HashMap<PathBuf, HashSet<Key>>,
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

    /// Records what a file had before the first write the run watches, so diagnostics that
    /// were there already are never reported as introduced. Does nothing once the file has an
    /// entry.
    pub(crate) fn baseline(&mut self, path: &Path, diagnostics: &[Diagnostic]) {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| diagnostics.iter().map(Key::of).collect());
    }

    /// Takes a fresh publish for `path`: returns the diagnostics whose key was not there
    /// before (one per key, in publish order) and makes this publish the file's new set.
    pub(crate) fn introduced<'a>(
        &mut self,
        path: &Path,
        diagnostics: &'a [Diagnostic],
    ) -> Vec<&'a Diagnostic> {
        let before = self.files.remove(path).unwrap_or_default();
        let mut now = HashSet::new();
        let mut new = Vec::new();
        for diagnostic in diagnostics {
            let key = Key::of(diagnostic);
            if !before.contains(&key) && !now.contains(&key) {
                new.push(diagnostic);
            }
            now.insert(key);
        }
        self.files.insert(path.to_path_buf(), now);
        new
    }
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

    fn messages(found: Vec<&Diagnostic>) -> Vec<&str> {
        found.into_iter().map(|d| d.message.as_str()).collect()
    }

    #[test]
    fn lsp_7_a_diagnostic_is_reported_once_even_when_it_moves() {
        let mut reported = Reported::default();
        let path = Path::new("src/lib.rs");
        let first = [error(3, "E0308", "mismatched types")];
        assert_eq!(
            messages(reported.introduced(path, &first)),
            ["mismatched types"]
        );
        // An unrelated edit: the same error again.
        assert!(reported.introduced(path, &first).is_empty());
        // Four lines inserted above it: same key, new position.
        assert!(
            reported
                .introduced(path, &[error(7, "E0308", "mismatched types")])
                .is_empty()
        );
    }

    #[test]
    fn lsp_7_a_fixed_error_that_comes_back_is_reported_again() {
        let mut reported = Reported::default();
        let path = Path::new("src/lib.rs");
        let broken = [error(3, "E0308", "mismatched types")];
        assert_eq!(reported.introduced(path, &broken).len(), 1);
        assert!(reported.introduced(path, &[]).is_empty());
        assert_eq!(
            messages(reported.introduced(path, &broken)),
            ["mismatched types"]
        );
    }

    #[test]
    fn lsp_7_the_registry_is_per_file() {
        let mut reported = Reported::default();
        let same = [error(1, "E0425", "cannot find value `x`")];
        assert_eq!(reported.introduced(Path::new("a.rs"), &same).len(), 1);
        assert_eq!(reported.introduced(Path::new("b.rs"), &same).len(), 1);
    }

    #[test]
    fn lsp_6_what_was_there_before_the_first_write_is_never_new() {
        let mut reported = Reported::default();
        let path = Path::new("app.py");
        let old = error(2, "reportUndefinedVariable", "\"y\" is not defined");
        reported.baseline(path, std::slice::from_ref(&old));
        let new = error(
            9,
            "reportAttributeAccessIssue",
            "Cannot access attribute \"z\"",
        );
        let after = [old.clone(), new];
        assert_eq!(
            messages(reported.introduced(path, &after)),
            ["Cannot access attribute \"z\""]
        );
        // A baseline after the first write changes nothing.
        reported.baseline(path, &[]);
        assert!(reported.introduced(path, &after).is_empty());
    }

    #[test]
    fn lsp_7_severity_and_code_are_part_of_the_key() {
        let mut reported = Reported::default();
        let path = Path::new("a.rs");
        reported.introduced(path, &[error(1, "E1", "m")]);
        let mut warning = error(1, "E1", "m");
        warning.severity = Some(DiagnosticSeverity::WARNING);
        assert_eq!(
            reported
                .introduced(path, &[warning, error(1, "E2", "m")])
                .len(),
            2
        );
    }
}
