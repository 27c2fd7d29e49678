//! Judging a write: each settled file's diagnostics taken into the LSP-7 registry, and the
//! [`WriteReport`] built from what is new — in the written files, in the files they broke,
//! and in a header through the units that include it.

use std::collections::HashSet;
use std::sync::Arc;

use async_lsp::lsp_types::{Diagnostic, DiagnosticSeverity};
use tools_core::{FileReport, Workspace, WriteReport};

use super::report::{Checked, spread_fallout};
use super::reported::Hiding;
use super::settle::Outcome;
use tools_lsp_client::Session;

use super::{Dependents, DiagnosticsOnWrite, Header, OtherFile, Target};

impl DiagnosticsOnWrite {
    /// Whether the run reports a diagnostic of this severity.
    pub(super) fn listed(&self, diagnostic: &Diagnostic) -> bool {
        match diagnostic.severity {
            Some(DiagnosticSeverity::ERROR) | None => true,
            Some(DiagnosticSeverity::WARNING) => self.config.warnings,
            _ => false,
        }
    }

    /// Takes each settled file's diagnostics into the registry (written files and the others
    /// alike) and builds the report. A write that introduced errors somewhere a server
    /// checks may have hidden others there (a library that no longer compiles hides its
    /// tests'): the counts that fell under it are held, so their return is not news.
    pub(super) fn report(
        &self,
        workspace: &Workspace,
        targets: &[Target],
        outcomes: Vec<Outcome>,
        dependents: Dependents,
    ) -> WriteReport {
        let root = workspace.root();
        let mut report = WriteReport {
            unchecked_dependents: dependents.unchecked,
            ..WriteReport::default()
        };
        let mut reported = self.reported();
        // Files seen for the first time: what they have now is their baseline.
        let mut others = Vec::new();
        for other in dependents.others {
            if !reported.knows(&other.path) {
                match &other.before {
                    Some(before) => {
                        reported.baseline(&other.path, before, Some(Arc::clone(&other.text)))
                    }
                    None => {
                        reported.baseline(
                            &other.path,
                            &other.diagnostics,
                            Some(Arc::clone(&other.text)),
                        );
                        continue;
                    }
                }
            }
            others.push(other);
        }
        // What each file's publish introduced, before any is taken.
        let written: Vec<(&Target, &Outcome, Vec<&Diagnostic>)> = targets
            .iter()
            .zip(&outcomes)
            .filter(|(_, outcome)| outcome.unchecked.is_none())
            .map(|(target, outcome)| {
                let found = reported
                    .assess(&target.path, &outcome.diagnostics, Some(&outcome.text))
                    .diagnostics
                    .into_iter()
                    .filter(|d| self.listed(d))
                    .collect();
                (target, outcome, found)
            })
            .collect();
        let fallout: Vec<(&OtherFile, Vec<&Diagnostic>)> = others
            .iter()
            .map(|other| {
                let found = reported
                    .assess(&other.path, &other.diagnostics, Some(&other.text))
                    .diagnostics
                    .into_iter()
                    .filter(|d| self.listed(d))
                    .collect();
                (other, found)
            })
            .collect();
        // Sessions in which this write introduced an error.
        let introduced_errors = |session: &Arc<Session>| {
            let is_error = |d: &&Diagnostic| d.severity == Some(DiagnosticSeverity::ERROR);
            written
                .iter()
                .any(|(t, _, found)| Arc::ptr_eq(&t.session, session) && found.iter().any(is_error))
                || fallout.iter().any(|(o, found)| {
                    Arc::ptr_eq(&o.session, session) && found.iter().any(is_error)
                })
        };
        let hiding = |session: &Arc<Session>| match introduced_errors(session) {
            true => Hiding::MayHide,
            false => Hiding::Fixes,
        };
        for (target, outcome) in targets.iter().zip(&outcomes) {
            let server = target.session.spec.name.clone();
            match &outcome.unchecked {
                Some(reason) => {
                    // The registry keeps what it knew; what this write introduced is reported
                    // by the next write that settles.
                    report.files.push(FileReport::not_checked(
                        target.shown.clone(),
                        server,
                        reason.clone(),
                    ));
                }
                None => {
                    let found = written
                        .iter()
                        .find(|(t, _, _)| std::ptr::eq(*t, target))
                        .map(|(_, _, found)| found.clone())
                        .unwrap_or_default();
                    report.files.push(
                        Checked {
                            shown: target.shown.clone(),
                            server,
                            diagnostics: &outcome.diagnostics,
                            introduced: found,
                            text: &outcome.text,
                            through: None,
                        }
                        .report(root, self.config.per_file),
                    );
                }
            }
        }
        for (other, found) in &fallout {
            report.fallout.push(
                Checked {
                    shown: workspace.display(&other.path),
                    server: other.session.spec.name.clone(),
                    diagnostics: &other.diagnostics,
                    introduced: found.clone(),
                    text: &other.text,
                    through: None,
                }
                .report(root, super::report::FALLOUT_LINES),
            );
        }
        let hidings: Vec<(Arc<Session>, Hiding)> = targets
            .iter()
            .map(|t| &t.session)
            .chain(others.iter().map(|o| &o.session))
            .map(|s| (Arc::clone(s), hiding(s)))
            .collect();
        let hiding_of = |session: &Arc<Session>| {
            hidings
                .iter()
                .find(|(s, _)| Arc::ptr_eq(s, session))
                .map_or(Hiding::Fixes, |(_, h)| *h)
        };
        for (target, outcome) in targets.iter().zip(&outcomes) {
            if outcome.unchecked.is_none() {
                reported.take(
                    &target.path,
                    &outcome.diagnostics,
                    Some(Arc::clone(&outcome.text)),
                    hiding_of(&target.session),
                );
            }
        }
        for other in &others {
            reported.take(
                &other.path,
                &other.diagnostics,
                Some(Arc::clone(&other.text)),
                hiding_of(&other.session),
            );
        }
        drop(reported);
        for judged in dependents.headers {
            report
                .files
                .push(header_report(&judged.header, &judged.through));
        }
        spread_fallout(&mut report.fallout);
        report
    }
}

/// A written header's state, from the units that include it: clangd reports an error in an
/// included file once per including unit, at the `#include` line, as "In included file: …"
/// with the header's own line in a note.
fn header_report(header: &Header, through: &[Vec<Diagnostic>]) -> FileReport {
    let server = header.session.spec.name.clone();
    if through.is_empty() {
        return FileReport::not_checked(
            header.shown.clone(),
            server,
            format!(
                "none of the {} that include it was rebuilt in time",
                crate::render::plural(header.units.len(), "file")
            ),
        );
    }
    let name = header
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut places: HashSet<String> = HashSet::new();
    for diagnostics in through {
        for diagnostic in diagnostics {
            if diagnostic.severity != Some(DiagnosticSeverity::ERROR)
                || !diagnostic.message.starts_with("In included file:")
            {
                continue;
            }
            // "In included file: expected expression\n\nlib/x.h:354:9:\nnote: error occurred here"
            let place = diagnostic
                .message
                .lines()
                .find(|line| line.contains(&name) && line.contains(':'))
                .map(str::to_owned)
                .unwrap_or_else(|| diagnostic.message.clone());
            places.insert(place);
        }
    }
    let mut file = FileReport::checked(header.shown.clone(), server, places.len(), 0);
    let mut through_text = format!(
        "through the {} that include it",
        crate::render::plural(through.len(), "file")
    );
    if header.guessed {
        through_text.push_str(
            ", found without a compile database: files that reach it through `-I` may be \
             missing",
        );
    }
    if !places.is_empty() {
        through_text.push_str(
            "; clangd names only the first error of a header in each, so there may be more \
             — the errors above show where",
        );
    }
    file.checked_through = Some(through_text);
    file
}
