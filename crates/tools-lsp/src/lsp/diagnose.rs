//! `diagnostics` (LSP-5): a file's errors and warnings as its server sees them now, and the
//! project checker's findings over every root (`"*"`, a folder prefix).

use std::path::PathBuf;
use std::time::Duration;

use async_lsp::lsp_types::{Diagnostic, DiagnosticSeverity};
use tools_core::{Line, ToolError, Workspace};

use super::answer::{Check, CheckRun, FileDiagnostics};
use super::{DiagnosticItem, Lsp, SeverityFilter, with_progress};
use crate::render::{Quoter, capped_note, code_text, one_line, plural, severity_name};
use crate::select::{Page, page_indices, page_note, per_file_counts};
use crate::supervisor::Opened;
use tools_lsp_client::Pull;

/// How many diagnostics of one file are listed.
const FILE_DIAGNOSTICS_CAP: usize = 100;
/// How long `diagnostics` waits for a publish about a file it just sent, and how long it
/// then waits for a follow-up (servers often publish a quick result, then a full one).
const PUBLISH_WAIT: Duration = Duration::from_secs(20);
const PUBLISH_SETTLE: Duration = Duration::from_millis(400);
/// How long `code_actions` waits for a fresh file's diagnostics (its quick fixes need them).
pub(super) const ACTIONS_DIAGNOSTICS_WAIT: Duration = Duration::from_secs(5);
/// How many roots of one server a project check runs in.
const ROOTS_CHECKED: usize = 5;

impl Lsp {
    pub(super) async fn file_diagnostics(
        &self,
        workspace: &Workspace,
        file: &str,
    ) -> Result<FileDiagnostics, ToolError> {
        let opened = self.supervisor.open(workspace, file).await?;
        let mut notes = opened.notes.clone();
        let wait = PUBLISH_WAIT.min(self.supervisor.config().request_timeout());
        let (diagnostics, note) = current_diagnostics(&opened, wait).await;
        notes.extend(note);
        let mut quoter = Quoter::new(workspace);
        quoter.know(&opened.path, std::sync::Arc::clone(&opened.synced.text));
        let mut listed = Vec::new();
        let mut quiet = 0;
        for diagnostic in crate::render::merge_passes(diagnostics) {
            let severity = diagnostic.severity;
            if matches!(
                severity,
                Some(DiagnosticSeverity::INFORMATION) | Some(DiagnosticSeverity::HINT)
            ) {
                quiet += 1;
                continue;
            }
            let line = Line::from_lsp(diagnostic.range.start.line);
            listed.push(DiagnosticItem {
                place: Some(quoter.place_in(&opened.path, line)),
                whole_file: None,
                severity: severity_name(severity).to_owned(),
                code: code_text(diagnostic.code.as_ref()),
                message: one_line(&diagnostic.message),
            });
        }
        // Errors before warnings, each in line order.
        listed.sort_by_key(|item| (item.severity != "error", item.line()));
        let total = listed.len();
        let errors = listed
            .iter()
            .filter(|item| item.severity == "error")
            .count();
        listed.truncate(FILE_DIAGNOSTICS_CAP);
        if quiet > 0 {
            notes.push(format!("{} not shown", plural(quiet, "hint or info")));
        }
        notes.extend(capped_note(listed.len(), total));
        Ok(FileDiagnostics {
            server: opened.session.spec.name.clone(),
            file: opened.shown.clone(),
            listed,
            errors,
            total,
            notes,
        })
    }

    pub(super) async fn check_project(
        &self,
        workspace: &Workspace,
        prefix: &str,
        page: Page,
        severity: Option<SeverityFilter>,
    ) -> Result<Check, ToolError> {
        let context = self.supervisor.client().context();
        // A sandbox refused as the run began: no checker can run, said once in its words
        // (EVAL-9), not once per root nor as a checker that was not found.
        if let Some(refusal) = context.sandbox.as_ref().and_then(|s| s.refusal()) {
            return Err(ToolError::failed(format!(
                "no project checker can run here: {refusal}"
            )));
        }
        let mut runs = Vec::new();
        let mut skipped = Vec::new();
        for spec in &context.servers {
            let roots = tools_lsp_client::scan_roots(spec, &context.workspace_root);
            if roots.is_empty() {
                continue;
            }
            if spec.checker.is_none() {
                skipped.push(format!(
                    "{} has no project checker; ask `diagnostics` per file for its files",
                    spec.name
                ));
                continue;
            }
            for root in roots.iter().take(ROOTS_CHECKED) {
                let search = context.search_path(Some(root));
                let timeout = self.supervisor.config().checker_timeout();
                let what = format!(
                    "running the project checker of {} in {}",
                    spec.name,
                    workspace.display(root)
                );
                let sandbox = context.sandbox.as_ref();
                let checked = crate::checker::run(spec, root, &search, timeout, sandbox);
                match with_progress(&what, checked).await {
                    Ok(run) => runs.push((root.clone(), run)),
                    Err(problem) => skipped.push(problem.to_string()),
                }
            }
        }
        if runs.is_empty() {
            let mut message = "no project checker could run here".to_owned();
            match skipped.is_empty() {
                true => message.push_str(
                    ": no server's root marker was found in the workspace; call `lsp` with \
                     operation `status` to see each server's markers",
                ),
                false => message.push_str(&format!(": {}", skipped.join("; "))),
            }
            return Err(ToolError::failed(message));
        }
        // A file belongs to its innermost root: a run of an outer root does not count the
        // files of a nested root that has its own run (a monorepo's packages).
        let ran: Vec<PathBuf> = runs.iter().map(|(root, _)| root.clone()).collect();
        for (root, run) in &mut runs {
            run.findings.retain(|finding| {
                finding.path.as_ref().is_none_or(|path| {
                    !ran.iter().any(|inner| {
                        inner != root && inner.starts_with(&*root) && path.starts_with(inner)
                    })
                })
            });
        }
        let mut all: Vec<DiagnosticItem> = Vec::new();
        let mut quoter = Quoter::new(workspace);
        let mut summaries = Vec::new();
        for (root, run) in &runs {
            let count = |severity: &str| {
                run.findings
                    .iter()
                    .filter(|f| f.severity == severity)
                    .count()
            };
            summaries.push(CheckRun {
                command: run.command.clone(),
                root: workspace.display(root),
                scope: run.scope.clone(),
                errors: count("error"),
                warnings: count("warning"),
            });
            for finding in &run.findings {
                if !matches!(finding.severity.as_str(), "error" | "warning") {
                    continue;
                }
                // A checker prints lines counted from 1.
                let line = finding.line.and_then(Line::new);
                let (place, whole_file) = match (&finding.path, line) {
                    (Some(path), Some(line)) => (Some(quoter.place_in(path, line)), None),
                    (Some(path), None) => (None, Some(workspace.display(path))),
                    (None, _) => (None, None),
                };
                all.push(DiagnosticItem {
                    place,
                    whole_file,
                    severity: finding.severity.clone(),
                    code: finding.code.clone(),
                    message: one_line(&finding.message),
                });
            }
        }
        // The filters: a path prefix and a severity.
        let before_filters = all.len();
        all.retain(|item| {
            item.path().starts_with(prefix)
                && match severity {
                    Some(SeverityFilter::Error) => item.severity == "error",
                    Some(SeverityFilter::Warning) => item.severity == "warning",
                    None => true,
                }
        });
        let filtered = all.len() < before_filters || !prefix.is_empty();
        all.sort_by(|a, b| {
            (a.severity != "error", a.path(), a.line()).cmp(&(
                b.severity != "error",
                b.path(),
                b.line(),
            ))
        });
        let total = all.len();
        let keys: Vec<&str> = all.iter().map(DiagnosticItem::path).collect();
        let files = keys.iter().collect::<std::collections::BTreeSet<_>>().len();
        let per_file = (total > page.max && files > 1).then(|| per_file_counts(&keys));
        let chosen = page_indices(&keys, page);
        let mut notes = skipped;
        notes.extend(runs.iter().flat_map(|(_, run)| run.notes.iter().cloned()));
        notes.extend(page_note(
            chosen.len(),
            total,
            page,
            page.layout(total, files),
        ));
        Ok(Check {
            runs: summaries,
            filtered,
            prefix: prefix.to_owned(),
            severity,
            listed: chosen.iter().map(|&i| all[i].clone()).collect(),
            total,
            per_file,
            notes,
        })
    }
}

/// A file's diagnostics as the server sees its current text: pulled from servers that answer
/// pulls; otherwise the last publish, after waiting (up to `wait`) for a fresh one when the
/// server had not seen this text before. The note says when no publish came.
pub(super) async fn current_diagnostics(
    opened: &Opened,
    wait: Duration,
) -> (Vec<Diagnostic>, Option<String>) {
    let session = &opened.session;
    let uri = &opened.synced.uri;
    if let Some(mut diagnostics) = session.pull_diagnostics(uri).await {
        if session.spec.pull == Pull::Analysis {
            // What its last on-save check found comes as publishes.
            diagnostics.extend(
                session
                    .shared
                    .published(uri)
                    .map(|published| published.diagnostics)
                    .unwrap_or_default(),
            );
        }
        return (diagnostics, None);
    }
    let mut note = None;
    if opened.synced.changed || session.shared.published(uri).is_none() {
        if session
            .shared
            .wait_publish(uri, opened.publishes_before, wait)
            .await
        {
            // Several servers publish a quick result first and a full one soon after.
            loop {
                let count = session.shared.publish_count(uri);
                if !session
                    .shared
                    .wait_publish(uri, count, PUBLISH_SETTLE)
                    .await
                {
                    break;
                }
            }
        } else {
            note = Some(format!(
                "{} published no diagnostics for {} within {}s; it may still be analysing",
                session.spec.name,
                opened.shown,
                wait.as_secs()
            ));
        }
    }
    let diagnostics = session
        .shared
        .published(uri)
        .map(|published| published.diagnostics)
        .unwrap_or_default();
    (diagnostics, note)
}
