//! The last step of a write's check: each settled file's diagnostics taken into the LSP-7
//! registry, and the [`WriteReport`] built from what is new — in the written files, in the
//! files they broke, and in a header through the units that include it.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use async_lsp::lsp_types::{Diagnostic, DiagnosticSeverity};
use tools_core::{FileReport, Workspace, WriteReport};
use tools_lsp_client::Session;

use super::dependents::{Dependents, OtherFile};
use super::report::{Checked, FALLOUT_LINES, spread_fallout};
use super::reported::{Hiding, Registry, Reported};
use super::settle::Outcome;
use super::targets::Target;
use super::written::Header;
use crate::config::OnWriteConfig;

/// What a file's fresh diagnostics introduced, as the registry assesses them before any is
/// taken.
struct Assessed<'a> {
    session: &'a Arc<Session>,
    /// Filtered to what the run reports.
    introduced: Vec<&'a Diagnostic>,
}

/// Takes each settled file's diagnostics into the registry (written files and the others
/// alike) and builds the report. A write that introduced errors somewhere a server checks
/// may have hidden others there (a library that no longer compiles hides its tests'): the
/// counts that fell under it are held, so their return is not news.
pub(super) fn judge(
    registry: &Registry,
    config: &OnWriteConfig,
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
    let mut reported = registry.lock();
    let others = first_seen(&mut reported, dependents.others);
    // What each file's publish introduced, before any is taken; for a written file that did
    // not settle, why.
    let written: Vec<Result<Assessed<'_>, &str>> = targets
        .iter()
        .zip(&outcomes)
        .map(|(target, outcome)| match &outcome.unchecked {
            Some(reason) => Err(reason.as_str()),
            None => Ok(assess(
                &reported,
                config,
                &target.path,
                &target.session,
                &outcome.diagnostics,
                &outcome.text,
            )),
        })
        .collect();
    let fallout: Vec<Assessed<'_>> = others
        .iter()
        .map(|other| {
            assess(
                &reported,
                config,
                &other.path,
                &other.session,
                &other.diagnostics,
                &other.text,
            )
        })
        .collect();
    for ((target, outcome), assessed) in targets.iter().zip(&outcomes).zip(&written) {
        let server = target.session.spec.name.clone();
        match assessed {
            Ok(assessed) => report.files.push(
                Checked {
                    shown: target.shown.clone(),
                    server,
                    diagnostics: &outcome.diagnostics,
                    introduced: assessed.introduced.clone(),
                    text: &outcome.text,
                    through: None,
                }
                .report(root, config.per_file),
            ),
            // The registry keeps what it knew; what this write introduced is reported by the
            // next write that settles.
            Err(reason) => report.files.push(FileReport::not_checked(
                target.shown.clone(),
                server,
                (*reason).to_owned(),
            )),
        }
    }
    for (other, assessed) in others.iter().zip(&fallout) {
        report.fallout.push(
            Checked {
                shown: workspace.display(&other.path),
                server: other.session.spec.name.clone(),
                diagnostics: &other.diagnostics,
                introduced: assessed.introduced.clone(),
                text: &other.text,
                through: None,
            }
            .report(root, FALLOUT_LINES),
        );
    }
    let assessed: Vec<&Assessed<'_>> = written.iter().flatten().chain(&fallout).collect();
    for ((target, outcome), settled) in targets.iter().zip(&outcomes).zip(&written) {
        if settled.is_ok() {
            reported.take(
                &target.path,
                &outcome.diagnostics,
                Some(Arc::clone(&outcome.text)),
                hiding(&target.session, &assessed),
            );
        }
    }
    for other in &others {
        reported.take(
            &other.path,
            &other.diagnostics,
            Some(Arc::clone(&other.text)),
            hiding(&other.session, &assessed),
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

/// Files seen for the first time: what they had before the write is their baseline, or, when
/// that is not known, what they have now — and then they are not judged.
fn first_seen(reported: &mut Reported, others: Vec<OtherFile>) -> Vec<OtherFile> {
    let mut judged = Vec::new();
    for other in others {
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
        judged.push(other);
    }
    judged
}

fn assess<'a>(
    reported: &Reported,
    config: &OnWriteConfig,
    path: &Path,
    session: &'a Arc<Session>,
    diagnostics: &'a [Diagnostic],
    text: &Arc<str>,
) -> Assessed<'a> {
    Assessed {
        session,
        introduced: reported
            .assess(path, diagnostics, Some(text))
            .diagnostics
            .into_iter()
            .filter(|d| listed(config, d))
            .collect(),
    }
}

/// Whether the run reports a diagnostic of this severity.
fn listed(config: &OnWriteConfig, diagnostic: &Diagnostic) -> bool {
    match diagnostic.severity {
        Some(DiagnosticSeverity::ERROR) | None => true,
        Some(DiagnosticSeverity::WARNING) => config.warnings,
        _ => false,
    }
}

/// Whether this write may have hidden counts on `session`'s files: it introduced an error
/// in a file the session checks.
fn hiding(session: &Arc<Session>, assessed: &[&Assessed<'_>]) -> Hiding {
    let is_error = |d: &&Diagnostic| d.severity == Some(DiagnosticSeverity::ERROR);
    match assessed
        .iter()
        .any(|a| Arc::ptr_eq(a.session, session) && a.introduced.iter().any(is_error))
    {
        true => Hiding::MayHide,
        false => Hiding::Fixes,
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
