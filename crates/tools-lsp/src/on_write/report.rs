//! A write's report (LSP-6) as a value and as text: [`FileReport`]s built from a server's
//! diagnostics and what the LSP-7 registry says they introduced, the caps (per written file,
//! and over all fallout files, spread across them), and the one renderer that turns a
//! [`WriteReport`] into the lines under the tool's own answer. The structured result is the
//! same value, so a client that shows the model only structured content loses nothing.

use std::path::Path;

use async_lsp::lsp_types::{Diagnostic, DiagnosticSeverity};
use tools_core::{FileReport, FileState, IntroducedDiagnostic, UncheckedDependents, WriteReport};

use crate::position::lines;
use crate::render::{code_text, one_line, plural, severity_name};

/// How many diagnostics introduced in files a write did not touch are listed, over all of
/// them; every file's count is given.
pub(crate) const FALLOUT_LINES: usize = 10;

/// One file's diagnostics after a write, and which of them it introduced.
pub(crate) struct Checked<'a> {
    pub(crate) shown: String,
    pub(crate) server: String,
    /// Everything the server reports for the file now.
    pub(crate) diagnostics: &'a [Diagnostic],
    /// The ones the write introduced (LSP-7), already filtered to what the run reports.
    pub(crate) introduced: Vec<&'a Diagnostic>,
    /// The file's text, to quote the lines.
    pub(crate) text: &'a str,
    /// `through 3 files that include it`, for a header judged through its includers.
    pub(crate) through: Option<String>,
}

impl Checked<'_> {
    /// The file's report, listing at most `cap` of what the write introduced (errors
    /// first, then by line).
    pub(crate) fn report(self, root: &Path, cap: usize) -> FileReport {
        let mut file = FileReport::checked(
            self.shown.clone(),
            self.server,
            count(self.diagnostics, DiagnosticSeverity::ERROR),
            count(self.diagnostics, DiagnosticSeverity::WARNING),
        );
        file.checked_through = self.through;
        let mut introduced = self.introduced;
        introduced.sort_by_key(|d| {
            (
                d.severity != Some(DiagnosticSeverity::ERROR),
                d.range.start.line,
            )
        });
        file.introduced = introduced.len();
        let text_lines = lines(self.text);
        file.listed = introduced
            .into_iter()
            .take(cap)
            .map(|d| listed(d, &self.shown, &text_lines, root))
            .collect();
        file
    }
}

fn count(diagnostics: &[Diagnostic], severity: DiagnosticSeverity) -> usize {
    diagnostics
        .iter()
        .filter(|d| d.severity == Some(severity))
        .count()
}

/// One introduced diagnostic in the file `shown` as a report lists it.
fn listed(
    diagnostic: &Diagnostic,
    shown: &str,
    text_lines: &[&str],
    root: &Path,
) -> IntroducedDiagnostic {
    let line = tools_core::Line::from_lsp(diagnostic.range.start.line);
    let line_text = text_lines.get(line.index()).copied().unwrap_or_default();
    // Servers fold related places into the message with absolute paths (clangd's notes).
    let prefix = format!("{}/", root.display());
    IntroducedDiagnostic {
        place: tools_core::Place::named(shown, line, line_text),
        severity: severity_name(diagnostic.severity).to_owned(),
        code: code_text(diagnostic.code.as_ref()),
        message: one_line(&diagnostic.message.replace(&prefix, "")),
    }
}

/// Keeps at most [`FALLOUT_LINES`] listed diagnostics over all fallout files, spread across
/// them (each file's first, then each file's second, …), in path order.
pub(crate) fn spread_fallout(fallout: &mut Vec<FileReport>) {
    fallout.retain(|file| file.introduced > 0);
    fallout.sort_by(|a, b| a.path.cmp(&b.path));
    let mut taken = vec![0usize; fallout.len()];
    let mut room = FALLOUT_LINES;
    let mut round = 0;
    while room > 0 {
        let mut any = false;
        for (index, file) in fallout.iter().enumerate() {
            if room > 0 && round < file.listed.len() {
                taken[index] += 1;
                room -= 1;
                any = true;
            }
        }
        if !any {
            break;
        }
        round += 1;
    }
    for (file, take) in fallout.iter_mut().zip(taken) {
        file.listed.truncate(take);
    }
}

/// Renders one listed diagnostic with its line's text.
fn render_listed(text: &mut String, diagnostic: &IntroducedDiagnostic) {
    let place = &diagnostic.place;
    text.push_str(&format!("\n{}: {}", place.at(), diagnostic.severity));
    if let Some(code) = &diagnostic.code {
        text.push_str(&format!("[{code}]"));
    }
    text.push_str(&format!(": {}", diagnostic.message));
    if !place.text.is_empty() {
        text.push_str(&format!("\n    {}", place.text));
    }
}

/// What a file's list leaves out, and how to see it, when its list is capped.
fn more_in(file: &FileReport) -> Option<String> {
    let omitted = file.introduced - file.listed.len();
    (omitted > 0).then(|| {
        format!(
            "{omitted} more in {} not listed; call `lsp` with operation `diagnostics` on it for \
             all of them",
            file.path
        )
    })
}

/// How much of the fallout is listed, and how to see the rest, when its list is capped.
fn showing(report: &WriteReport) -> Option<String> {
    let total: usize = report.fallout.iter().map(|f| f.introduced).sum();
    let listed: usize = report.fallout.iter().map(|f| f.listed.len()).sum();
    (listed < total).then(|| {
        format!(
            "showing {listed} of {total}; call `lsp` with operation `diagnostics` on a file for \
             all of its diagnostics"
        )
    })
}

/// The dependents a write could not check, and that the fallout may be incomplete.
fn unchecked_line(unchecked: &UncheckedDependents) -> String {
    let mut line = format!(
        "Not checked: {} that may depend on this write ({}: {})",
        plural(unchecked.count, "file"),
        unchecked.server,
        unchecked.reason
    );
    if !unchecked.sample.is_empty() {
        let more = unchecked.count.saturating_sub(unchecked.sample.len());
        line.push_str(&format!(", e.g. {}", unchecked.sample.join(", ")));
        if more > 0 {
            line.push_str(&format!(" and {more} more"));
        }
    }
    line.push_str("; the fallout above may be incomplete.");
    line
}

/// The sentences of guidance [`render_report`] writes beside the lists (what a capped list
/// leaves out, and what to call for it; the dependents not checked), for the report's
/// `notes`: a client that shows the
/// model only the structure must read them too.
pub(crate) fn guidance(report: &WriteReport) -> Vec<String> {
    let written = report
        .files
        .iter()
        .filter(|file| file.introduced > 0)
        .filter_map(more_in);
    let unchecked = report.unchecked_dependents.iter().map(unchecked_line);
    written.chain(showing(report)).chain(unchecked).collect()
}

/// The report as text, appended under a tool's own answer: what the write introduced in the
/// written files (capped per file, the rest counted), then in other files (counts per file
/// first when the list is capped, then the sample), then the dependents not checked, then
/// each written file's state. Silence is never "clean": every written file a server covers
/// has a state line.
pub(crate) fn render_report(report: &WriteReport) -> String {
    let mut text = String::new();
    let written: Vec<&FileReport> = report.files.iter().filter(|f| f.introduced > 0).collect();
    if !written.is_empty() {
        let total: usize = written.iter().map(|f| f.introduced).sum();
        text.push_str(&format!(
            "\n\nThis write introduced {} in {}:",
            plural(total, "new diagnostic"),
            plural(written.len(), "file")
        ));
        for file in &written {
            for diagnostic in &file.listed {
                render_listed(&mut text, diagnostic);
            }
            if let Some(more) = more_in(file) {
                text.push_str(&format!("\n({more})"));
            }
        }
    }
    if !report.fallout.is_empty() {
        let total: usize = report.fallout.iter().map(|f| f.introduced).sum();
        let listed: usize = report.fallout.iter().map(|f| f.listed.len()).sum();
        text.push_str(&format!(
            "\n\nIn files it did not touch, this write introduced {} in {}:",
            plural(total, "new diagnostic"),
            plural(report.fallout.len(), "file")
        ));
        if listed < total {
            let counts: Vec<String> = report
                .fallout
                .iter()
                .map(|file| format!("{}: {}", file.path, file.introduced))
                .collect();
            text.push_str(&format!("\nNew per file: {}.", counts.join(", ")));
        }
        for file in &report.fallout {
            for diagnostic in &file.listed {
                render_listed(&mut text, diagnostic);
            }
        }
        if let Some(showing) = showing(report) {
            text.push_str(&format!("\n({showing})"));
        }
    }
    let mut states = Vec::new();
    states.extend(report.unchecked_dependents.iter().map(unchecked_line));
    // The clean files, per server in the order they came.
    let mut clean: Vec<(&str, Vec<String>)> = Vec::new();
    let mut clean_at = None;
    for file in &report.files {
        let shown = match &file.checked_through {
            Some(through) => format!("{} ({through})", file.path),
            None => file.path.clone(),
        };
        if file.state == FileState::NotChecked {
            let reason = file.reason.as_deref().unwrap_or("no reason given");
            states.push(format!("Not checked: {shown} ({reason})."));
            continue;
        }
        let new_errors = file.listed.iter().filter(|d| d.severity == "error").count()
            + (file.introduced - file.listed.len());
        let new_errors = new_errors.min(file.errors);
        match (file.errors, new_errors) {
            (0, _) => {
                clean_at.get_or_insert(states.len());
                match clean.iter_mut().find(|(server, _)| *server == file.server) {
                    Some((_, paths)) => paths.push(shown),
                    None => clean.push((file.server.as_str(), vec![shown])),
                }
            }
            (errors, 0) => states.push(format!(
                "{shown} still has {}, none new.",
                plural(errors, "error")
            )),
            (errors, new) if new == errors => states.push(format!(
                "{shown} now has {}, all new.",
                plural(errors, "error")
            )),
            (errors, new) => states.push(format!(
                "{shown} now has {}, {new} of them new.",
                plural(errors, "error")
            )),
        }
    }
    // The clean files, one line per server, where the first of them stood.
    let clean_lines: Vec<String> = clean
        .into_iter()
        .map(|(server, paths)| format!("{server} checked {}: no errors.", paths.join(", ")))
        .collect();
    if let Some(at) = clean_at {
        let at = at.min(states.len());
        states.splice(at..at, clean_lines);
    }
    if !states.is_empty() {
        text.push_str(match text.is_empty() {
            true => "\n\n",
            false => "\n",
        });
        text.push_str(&states.join("\n"));
    }
    for note in &report.notes {
        text.push_str(&format!("\nNote: {note}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(path: &str, errors: usize) -> FileReport {
        FileReport::checked(path.into(), "rust-analyzer".into(), errors, 0)
    }

    fn introduced(path: &str, errors: usize, lines: &[u32]) -> FileReport {
        let mut file = checked(path, errors);
        file.introduced = lines.len();
        file.listed = lines
            .iter()
            .map(|&line| IntroducedDiagnostic {
                place: tools_core::Place::named(
                    path,
                    tools_core::Line::new(line).unwrap(),
                    "add(1)",
                ),
                severity: "error".into(),
                code: Some("E0061".into()),
                message: "this function takes 2 arguments but 1 argument was supplied".into(),
            })
            .collect();
        file
    }

    #[test]
    fn lsp_6_silence_never_reads_as_clean() {
        let mut header = checked("src/api.h", 0);
        header.server = "clangd".into();
        header.checked_through = Some("through 3 files that include it".into());
        let report = WriteReport {
            files: vec![
                checked("src/a.rs", 0),
                checked("src/b.rs", 0),
                checked("src/old.rs", 3),
                FileReport::not_checked(
                    "src/c.rs".into(),
                    "rust-analyzer".into(),
                    "rust-analyzer is not installed here".into(),
                ),
                header,
            ],
            ..WriteReport::default()
        };
        insta::assert_snapshot!(render_report(&report).trim_start(), @r"
        rust-analyzer checked src/a.rs, src/b.rs: no errors.
        clangd checked src/api.h (through 3 files that include it): no errors.
        src/old.rs still has 3 errors, none new.
        Not checked: src/c.rs (rust-analyzer is not installed here).
        ");
    }

    #[test]
    fn lsp_7_a_capped_fallout_list_gives_every_files_count_before_the_sample() {
        let mut written = introduced("src/lib.rs", 12, &[3]);
        written.introduced = 12;
        let mut fallout = vec![
            introduced("src/b.rs", 1, &[5]),
            introduced("src/a.rs", 14, &(1..=14).collect::<Vec<_>>()),
            checked("src/untouched.rs", 0),
        ];
        spread_fallout(&mut fallout);
        let report = WriteReport {
            files: vec![written],
            fallout,
            unchecked_dependents: vec![UncheckedDependents {
                server: "basedpyright".into(),
                count: 12,
                reason: "the write's 30 s budget ran out".into(),
                sample: vec!["app/x.py".into(), "app/y.py".into()],
            }],
            notes: Vec::new(),
        };
        insta::assert_snapshot!(render_report(&report).trim_start(), @r"
        This write introduced 12 new diagnostics in 1 file:
        src/lib.rs:3: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        (11 more in src/lib.rs not listed; call `lsp` with operation `diagnostics` on it for all of them)

        In files it did not touch, this write introduced 15 new diagnostics in 2 files:
        New per file: src/a.rs: 14, src/b.rs: 1.
        src/a.rs:1: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        src/a.rs:2: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        src/a.rs:3: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        src/a.rs:4: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        src/a.rs:5: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        src/a.rs:6: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        src/a.rs:7: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        src/a.rs:8: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        src/a.rs:9: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        src/b.rs:5: error[E0061]: this function takes 2 arguments but 1 argument was supplied
            add(1)
        (showing 10 of 15; call `lsp` with operation `diagnostics` on a file for all of its diagnostics)
        Not checked: 12 files that may depend on this write (basedpyright: the write's 30 s budget ran out), e.g. app/x.py, app/y.py and 10 more; the fallout above may be incomplete.
        src/lib.rs now has 12 errors, all new.
        ");
        // The guidance beside the lists, word for word, for the structure's `notes`.
        let text = render_report(&report);
        let guidance = guidance(&report);
        assert_eq!(guidance.len(), 3, "{guidance:?}");
        for sentence in &guidance {
            assert!(
                text.contains(sentence.as_str()),
                "{sentence:?} is not in the text"
            );
        }
    }
}
