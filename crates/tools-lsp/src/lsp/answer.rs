//! What each `lsp` operation found, as values, and the one place they become the text the
//! model reads and the structured content beside it (LSP-5).

use tools_core::Place;

use super::ServerReport;
use super::request::Navigation;
use super::{ActionItem, DiagnosticItem, LspOutput, Operation, SeverityFilter, SymbolItem};
use crate::render::plural;

/// The answer of one `lsp` call.
#[derive(Debug, Clone)]
pub(crate) enum LspAnswer {
    Places(Places),
    Hover(Hover),
    Actions(Actions),
    FileSymbols(FileSymbols),
    WorkspaceSymbols(WorkspaceSymbols),
    FileDiagnostics(FileDiagnostics),
    Check(Check),
    /// The servers, and how their children are contained (`tools_process::containment`).
    Status(Vec<ServerReport>, tools_process::Containment),
    /// One line per server restarted or stopped.
    Reload(Vec<String>),
}

/// Where a position question was asked: the server, the identifier it aimed at, and its
/// place (an answer names it as `path:LINE`).
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    pub(crate) server: String,
    pub(crate) aimed: String,
    pub(crate) here: Place,
}

/// Definitions, type definitions, implementations or references.
#[derive(Debug, Clone)]
pub(crate) struct Places {
    pub(crate) kind: Navigation,
    pub(crate) asked: Asked,
    /// The page listed.
    pub(crate) places: Vec<Place>,
    /// How many were found in all.
    pub(crate) total: usize,
    /// `a.rs 3, b.rs 1`, when the list is capped across several files.
    pub(crate) per_file: Option<String>,
    pub(crate) notes: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Hover {
    pub(crate) asked: Asked,
    /// Signature and docs, as markdown; `None` when the server has nothing.
    pub(crate) contents: Option<String>,
    pub(crate) notes: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Actions {
    pub(crate) asked: Asked,
    pub(crate) actions: Vec<ActionItem>,
    pub(crate) notes: Vec<String>,
}

/// A file's outline, or the symbols of that file matching `query`.
#[derive(Debug, Clone)]
pub(crate) struct FileSymbols {
    pub(crate) server: String,
    pub(crate) file: String,
    pub(crate) query: Option<String>,
    pub(crate) symbols: Vec<SymbolItem>,
    pub(crate) total: usize,
    pub(crate) notes: Vec<String>,
}

/// A workspace symbol search: the workspace's own symbols first, then dependencies'.
#[derive(Debug, Clone)]
pub(crate) struct WorkspaceSymbols {
    pub(crate) servers: Vec<String>,
    pub(crate) query: String,
    pub(crate) symbols: Vec<SymbolItem>,
    pub(crate) total: usize,
    /// How many of `total` are in the workspace's own code.
    pub(crate) own: usize,
    pub(crate) notes: Vec<String>,
}

/// A file's errors and warnings as its server sees them now.
#[derive(Debug, Clone)]
pub(crate) struct FileDiagnostics {
    pub(crate) server: String,
    pub(crate) file: String,
    /// The listed ones, errors first.
    pub(crate) listed: Vec<DiagnosticItem>,
    pub(crate) errors: usize,
    pub(crate) total: usize,
    pub(crate) notes: Vec<String>,
}

/// One run of a project checker.
#[derive(Debug, Clone)]
pub(crate) struct CheckRun {
    pub(crate) command: String,
    /// Workspace-relative.
    pub(crate) root: String,
    /// What was checked: targets, features.
    pub(crate) scope: Option<String>,
    pub(crate) errors: usize,
    pub(crate) warnings: usize,
}

/// `diagnostics "*"`: each checker's counts, then a page of the findings kept by the filters.
#[derive(Debug, Clone)]
pub(crate) struct Check {
    pub(crate) runs: Vec<CheckRun>,
    /// The findings were narrowed by a folder prefix (`prefix`) or a severity.
    pub(crate) filtered: bool,
    pub(crate) prefix: String,
    pub(crate) severity: Option<SeverityFilter>,
    pub(crate) listed: Vec<DiagnosticItem>,
    /// How many findings the filters kept.
    pub(crate) total: usize,
    pub(crate) per_file: Option<String>,
    pub(crate) notes: Vec<String>,
}

/// How to apply a code action the list offers.
const APPLY_ONE: &str =
    "Apply one with the `lsp_code_action` tool: the same file, line and symbol, and its title.";

/// A reload that found nothing to restart.
const NONE_RUNNING: &str =
    "No language server was running; servers start on the next call that needs them.";

impl LspAnswer {
    /// The text the model reads.
    pub(crate) fn render(&self) -> String {
        let (mut text, notes) = match self {
            LspAnswer::Places(answer) => (render_places(answer), &answer.notes),
            LspAnswer::Hover(answer) => (render_hover(answer), &answer.notes),
            LspAnswer::Actions(answer) => (render_actions(answer), &answer.notes),
            LspAnswer::FileSymbols(answer) => (render_file_symbols(answer), &answer.notes),
            LspAnswer::WorkspaceSymbols(answer) => {
                (render_workspace_symbols(answer), &answer.notes)
            }
            LspAnswer::FileDiagnostics(answer) => (render_file_diagnostics(answer), &answer.notes),
            LspAnswer::Check(answer) => (render_check(answer), &answer.notes),
            LspAnswer::Status(reports, containment) => return render_status(reports, containment),
            LspAnswer::Reload(lines) => {
                return match lines.is_empty() {
                    true => NONE_RUNNING.to_owned(),
                    false => lines.join("\n"),
                };
            }
        };
        for note in notes {
            text.push('\n');
            text.push_str(note);
        }
        text
    }

    /// The structured content: the same answer as fields.
    pub(crate) fn into_output(self) -> LspOutput {
        match self {
            LspAnswer::Places(answer) => {
                // Nothing found is said as a sentence: the structure says it the same way.
                let summary = match answer.total {
                    0 => Some(render_places(&answer)),
                    _ => answer.per_file.as_deref().map(per_file),
                };
                LspOutput {
                    server: Some(answer.asked.server),
                    locations: answer.places,
                    total: (answer.kind == Navigation::References).then_some(answer.total),
                    notes: with_summary(summary, answer.notes),
                    ..LspOutput::new(answer.kind.operation())
                }
            }
            LspAnswer::Hover(answer) => LspOutput {
                notes: with_summary(
                    answer.contents.is_none().then(|| render_hover(&answer)),
                    answer.notes,
                ),
                server: Some(answer.asked.server),
                hover: answer.contents,
                ..LspOutput::new(Operation::Hover)
            },
            LspAnswer::Actions(mut answer) => {
                // The text says how to apply one under the list; the structure keeps it too.
                if answer.actions.iter().any(|a| a.disabled.is_none()) {
                    answer.notes.insert(0, APPLY_ONE.to_owned());
                }
                LspOutput {
                    server: Some(answer.asked.server),
                    actions: answer.actions,
                    notes: answer.notes,
                    ..LspOutput::new(Operation::CodeActions)
                }
            }
            LspAnswer::FileSymbols(answer) => LspOutput {
                notes: with_summary(
                    (answer.total == 0).then(|| render_file_symbols(&answer)),
                    answer.notes,
                ),
                server: Some(answer.server),
                symbols: answer.symbols,
                total: Some(answer.total),
                ..LspOutput::new(Operation::Symbols)
            },
            LspAnswer::WorkspaceSymbols(answer) => LspOutput {
                notes: with_summary(Some(workspace_symbols_summary(&answer)), answer.notes),
                server: Some(answer.servers.join(", ")),
                symbols: answer.symbols,
                total: Some(answer.total),
                ..LspOutput::new(Operation::Symbols)
            },
            LspAnswer::FileDiagnostics(answer) => LspOutput {
                notes: with_summary(Some(file_diagnostics_summary(&answer)), answer.notes),
                server: Some(answer.server),
                total: Some(answer.total),
                diagnostics: answer.listed,
                ..LspOutput::new(Operation::Diagnostics)
            },
            LspAnswer::Check(answer) => LspOutput {
                notes: check_summary(&answer)
                    .into_iter()
                    .chain(answer.notes)
                    .collect(),
                server: Some(
                    answer
                        .runs
                        .iter()
                        .map(|run| run.command.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                total: Some(answer.total),
                diagnostics: answer.listed,
                ..LspOutput::new(Operation::Diagnostics)
            },
            LspAnswer::Status(reports, containment) => LspOutput {
                servers: reports,
                notes: vec![processes_line(&containment)],
                ..LspOutput::new(Operation::Status)
            },
            LspAnswer::Reload(lines) => LspOutput {
                notes: match lines.is_empty() {
                    true => vec![NONE_RUNNING.to_owned()],
                    false => lines,
                },
                ..LspOutput::new(Operation::Reload)
            },
        }
    }
}

fn render_places(answer: &Places) -> String {
    let Asked {
        server,
        aimed,
        here,
    } = &answer.asked;
    let here = here.at();
    let (noun, empty) = answer.kind.nouns();
    let mut text = match answer.total {
        0 => format!("{server} found {empty} for `{aimed}` at {here}."),
        n => format!(
            "{} {} `{aimed}` ({here}):",
            capitalise(&plural(n, noun)),
            match answer.kind {
                Navigation::References => "to",
                _ => "of",
            },
        ),
    };
    if let Some(counts) = &answer.per_file {
        text.push_str(&format!("\n{}", per_file(counts)));
    }
    for place in &answer.places {
        text.push_str(&format!("\n{place}"));
    }
    text
}

fn render_hover(answer: &Hover) -> String {
    let Asked {
        server,
        aimed,
        here,
    } = &answer.asked;
    let here = here.at();
    match &answer.contents {
        Some(contents) => format!("`{aimed}` at {here}:\n{contents}"),
        None => format!("{server} has no hover information for `{aimed}` at {here}."),
    }
}

fn render_actions(answer: &Actions) -> String {
    let Asked {
        server,
        aimed,
        here,
    } = &answer.asked;
    let here = here.at();
    let mut text = match answer.actions.len() {
        0 => format!("{server} offers no code actions at `{aimed}` ({here})."),
        n => format!(
            "{} at `{aimed}` ({here}):",
            capitalise(&plural(n, "code action"))
        ),
    };
    for (index, action) in answer.actions.iter().enumerate() {
        let mut tags = Vec::new();
        tags.extend(action.kind.clone().filter(|k| !k.is_empty()));
        if action.preferred {
            tags.push("preferred".into());
        }
        if let Some(reason) = &action.disabled {
            tags.push(format!("disabled: {reason}"));
        }
        text.push_str(&format!("\n{}. {}", index + 1, action.title));
        if !tags.is_empty() {
            text.push_str(&format!(" ({})", tags.join(", ")));
        }
    }
    if answer.actions.iter().any(|a| a.disabled.is_none()) {
        text.push_str(&format!("\n{APPLY_ONE}"));
    }
    text
}

fn render_file_symbols(answer: &FileSymbols) -> String {
    let FileSymbols {
        server,
        file,
        query,
        total,
        ..
    } = answer;
    let mut text = match (total, query) {
        (0, Some(query)) => format!("{server} lists no symbols matching `{query}` in {file}."),
        (0, None) => format!("{server} lists no symbols in {file}."),
        (&n, Some(query)) => format!(
            "{} matching `{query}` in {file}:",
            capitalise(&plural(n, "symbol"))
        ),
        (&n, None) => format!("{} in {file}:", capitalise(&plural(n, "symbol"))),
    };
    for symbol in &answer.symbols {
        text.push_str(&format!(
            "\n{}{} {} (line {})",
            "  ".repeat(symbol.depth),
            symbol.kind,
            symbol.name,
            symbol.place.line
        ));
    }
    text
}

/// The first line of a workspace symbol search, without its closing `:` or `.`.
fn workspace_symbols_summary(answer: &WorkspaceSymbols) -> String {
    let query = &answer.query;
    match answer.total {
        0 => format!(
            "{} found no symbols matching `{query}`",
            answer.servers.join(", ")
        ),
        n => format!(
            "{} matching `{query}` ({} in the workspace, {} in dependencies)",
            capitalise(&plural(n, "symbol")),
            answer.own,
            n - answer.own
        ),
    }
}

fn render_workspace_symbols(answer: &WorkspaceSymbols) -> String {
    let mut text = format!(
        "{}{}",
        workspace_symbols_summary(answer),
        if answer.total == 0 { "." } else { ":" }
    );
    let mut heading_done = false;
    for symbol in &answer.symbols {
        if !symbol.in_workspace && !heading_done {
            text.push_str("\ndependencies:");
            heading_done = true;
        }
        text.push_str(&format!(
            "\n{} {} — {}",
            symbol.kind,
            symbol.name,
            symbol.place.at()
        ));
    }
    text
}

/// The first line of a file's diagnostics, without its closing `:` or `.`.
fn file_diagnostics_summary(answer: &FileDiagnostics) -> String {
    let FileDiagnostics {
        server,
        file,
        errors,
        total,
        ..
    } = answer;
    match total {
        0 => format!("{file}: no errors or warnings ({server})"),
        _ => format!(
            "{file}: {} and {} ({server})",
            plural(*errors, "error"),
            plural(total - errors, "warning"),
        ),
    }
}

fn render_file_diagnostics(answer: &FileDiagnostics) -> String {
    let mut text = format!(
        "{}{}",
        file_diagnostics_summary(answer),
        if answer.total == 0 { "." } else { ":" }
    );
    render_quoted(&mut text, &answer.listed);
    text
}

/// The lines of a project check above its findings: each checker's counts, what is listed,
/// and the counts per file (the listing line without its closing `:`).
fn check_summary(answer: &Check) -> Vec<String> {
    let mut lines: Vec<String> = answer
        .runs
        .iter()
        .map(|run| {
            let scope = run
                .scope
                .as_ref()
                .map(|scope| format!("; {scope}"))
                .unwrap_or_default();
            format!(
                "`{}` (root {}{scope}): {} and {}",
                run.command,
                run.root,
                plural(run.errors, "error"),
                plural(run.warnings, "warning")
            )
        })
        .collect();
    if answer.filtered {
        let what = match answer.severity {
            Some(SeverityFilter::Error) => "error",
            Some(SeverityFilter::Warning) => "warning",
            None => "finding",
        };
        let place = match answer.prefix.is_empty() {
            true => "in the project".to_owned(),
            false => format!("under {}", answer.prefix),
        };
        lines.push(format!("Listing {} {place}", plural(answer.total, what)));
    }
    if let Some(counts) = &answer.per_file {
        lines.push(per_file(counts));
    }
    lines
}

fn render_check(answer: &Check) -> String {
    let mut lines = check_summary(answer);
    // The listing line, after one line per run, introduces the findings under it.
    if answer.filtered
        && let Some(listing) = lines.get_mut(answer.runs.len())
    {
        listing.push(':');
    }
    let mut text = lines.join("\n");
    render_quoted(&mut text, &answer.listed);
    text
}

/// The counts per file of a capped list.
fn per_file(counts: &str) -> String {
    format!("Per file: {counts}.")
}

/// The summary line first, then the answer's own notes: the structure says what the text's
/// first lines say.
fn with_summary(summary: Option<String>, notes: Vec<String>) -> Vec<String> {
    summary.into_iter().chain(notes).collect()
}

/// Each diagnostic on its line, with the text of the line it is on under it.
fn render_quoted(text: &mut String, listed: &[DiagnosticItem]) {
    for item in listed {
        text.push('\n');
        text.push_str(&render_diagnostic(item));
        if let Some(place) = item.place.as_ref().filter(|place| !place.text.is_empty()) {
            text.push_str(&format!("\n    {}", place.text));
        }
    }
}

/// Whether the servers' own children (checkers, helpers) end with them whatever happens.
fn processes_line(containment: &tools_process::Containment) -> String {
    format!("processes: {}", containment.describe())
}

fn render_status(reports: &[ServerReport], containment: &tools_process::Containment) -> String {
    let mut text = String::from("Language servers for this workspace:");
    for report in reports {
        text.push_str(&format!("\n\n{} ({})", report.server, report.extensions));
        match &report.problem {
            None => text.push_str(&format!(
                ": usable — root{} {}",
                if report.roots.len() == 1 { "" } else { "s" },
                report.roots.join(", ")
            )),
            Some(problem) => text.push_str(&format!(": not usable — {problem}")),
        }
        if let Some(binary) = &report.binary {
            text.push_str(&format!("\n  binary: {binary}"));
            if let Some(version) = &report.version {
                text.push_str(&format!(" ({version})"));
            }
        }
        for session in &report.sessions {
            text.push_str(&format!("\n  root {}: {}", session.root, session.state));
            if let Some(pid) = session.pid {
                text.push_str(&format!(", pid {pid}"));
            }
            if let Some(error) = &session.last_error {
                text.push_str(&format!("\n    last error: {error}"));
            }
            if !session.stderr_tail.is_empty() && session.pid.is_none() {
                text.push_str("\n    stderr:");
                for line in &session.stderr_tail {
                    text.push_str(&format!("\n      {line}"));
                }
            }
        }
    }
    text.push_str("\n\n");
    text.push_str(&processes_line(containment));
    text
}

/// `src/lib.rs:3: error[E0308]: mismatched types`
fn render_diagnostic(item: &DiagnosticItem) -> String {
    let mut text = match (&item.place, &item.whole_file) {
        (Some(place), _) => format!("{}: ", place.at()),
        (None, Some(path)) => format!("{path}: "),
        (None, None) => String::new(),
    };
    text.push_str(&item.severity);
    if let Some(code) = &item.code {
        text.push_str(&format!("[{code}]"));
    }
    text.push_str(": ");
    text.push_str(&item.message);
    text
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use tools_core::Line;

    use super::*;

    fn place(path: &str, line: u32, text: &str) -> Place {
        Place::named(path, Line::new(line).unwrap(), text)
    }

    fn asked() -> Asked {
        Asked {
            server: "rust-analyzer".into(),
            aimed: "parse".into(),
            here: place("src/lib.rs", 12, "pub fn parse(input: &str) -> Config {"),
        }
    }

    fn error(path: &str, line: u32, message: &str) -> DiagnosticItem {
        DiagnosticItem {
            place: Some(place(path, line, "")),
            whole_file: None,
            severity: "error".into(),
            code: Some("E0061".into()),
            message: message.into(),
        }
    }

    #[test]
    fn lsp_5_diagnostics_render_as_path_line_severity_code() {
        let item = DiagnosticItem {
            code: Some("E0308".into()),
            ..error("src/lib.rs", 3, "mismatched types")
        };
        assert_eq!(
            render_diagnostic(&item),
            "src/lib.rs:3: error[E0308]: mismatched types"
        );
        let project = DiagnosticItem {
            place: None,
            code: None,
            ..item
        };
        assert_eq!(render_diagnostic(&project), "error: mismatched types");
        let whole_file = DiagnosticItem {
            whole_file: Some("pkg/mod.py".into()),
            ..project
        };
        assert_eq!(
            render_diagnostic(&whole_file),
            "pkg/mod.py: error: mismatched types"
        );
    }

    #[test]
    fn lsp_5_every_location_in_the_structured_answer_is_a_place() {
        let located = DiagnosticItem {
            place: Some(place("src/a.rs", 3, "parse(input)")),
            ..error("src/a.rs", 3, "wrong")
        };
        let whole_file = DiagnosticItem {
            place: None,
            whole_file: Some("pkg/mod.py".into()),
            ..error("src/a.rs", 3, "import cycle")
        };
        let project = DiagnosticItem {
            place: None,
            ..error("src/a.rs", 3, "`cargo check` failed")
        };
        let json = |item: &DiagnosticItem| serde_json::to_value(item).unwrap();
        assert_eq!(
            json(&located),
            serde_json::json!({
                "path": "src/a.rs", "line": 3, "text": "parse(input)", "severity": "error",
                "code": "E0061", "message": "wrong"
            })
        );
        assert_eq!(
            json(&whole_file),
            serde_json::json!({
                "path": "pkg/mod.py", "severity": "error", "code": "E0061",
                "message": "import cycle"
            })
        );
        assert_eq!(
            json(&project),
            serde_json::json!({
                "severity": "error", "code": "E0061", "message": "`cargo check` failed"
            })
        );
        let symbol = SymbolItem {
            name: "Config".into(),
            kind: "struct".into(),
            place: place("src/config.rs", 4, "pub struct Config {"),
            depth: 0,
            in_workspace: true,
        };
        assert_eq!(
            serde_json::to_value(&symbol).unwrap(),
            serde_json::json!({
                "name": "Config", "kind": "struct", "path": "src/config.rs", "line": 4,
                "text": "pub struct Config {", "depth": 0, "in_workspace": true
            })
        );
    }

    #[test]
    fn counts_read_naturally() {
        assert_eq!(capitalise(&plural(1, "reference")), "1 reference");
        assert_eq!(capitalise(&plural(3, "definition")), "3 definitions");
        assert_eq!(capitalise("symbol"), "Symbol");
    }

    #[test]
    fn lsp_5_a_capped_reference_list_shows_counts_per_file_before_the_page() {
        let answer = LspAnswer::Places(Places {
            kind: Navigation::References,
            asked: asked(),
            places: vec![
                place("src/a.rs", 3, "parse(input)"),
                place("src/b.rs", 9, "let x = parse(&s);"),
            ],
            total: 7,
            per_file: Some("src/a.rs 5, src/b.rs 2".into()),
            notes: vec![
                "(showing 2 of 7, spread across 2 files; `offset: 2` shows the next page)".into(),
            ],
        });
        insta::assert_snapshot!(answer.render(), @r"
        7 references to `parse` (src/lib.rs:12):
        Per file: src/a.rs 5, src/b.rs 2.
        src/a.rs:3: parse(input)
        src/b.rs:9: let x = parse(&s);
        (showing 2 of 7, spread across 2 files; `offset: 2` shows the next page)
        ");
        let output = answer.into_output();
        assert_eq!(output.total, Some(7));
        assert_eq!(output.locations.len(), 2);
        // The structure says what the text says beyond the list, word for word.
        assert_eq!(
            output.notes,
            [
                "Per file: src/a.rs 5, src/b.rs 2.",
                "(showing 2 of 7, spread across 2 files; `offset: 2` shows the next page)"
            ]
        );
    }

    #[test]
    fn lsp_5_an_answer_that_found_nothing_says_so_in_its_structure_too() {
        let nothing = LspAnswer::Places(Places {
            kind: Navigation::Definition,
            asked: asked(),
            places: Vec::new(),
            total: 0,
            per_file: None,
            notes: Vec::new(),
        });
        let text = nothing.render();
        assert_eq!(nothing.into_output().notes, [text]);
        let no_hover = LspAnswer::Hover(Hover {
            asked: asked(),
            contents: None,
            notes: Vec::new(),
        });
        let text = no_hover.render();
        assert_eq!(no_hover.into_output().notes, [text]);
    }

    #[test]
    fn lsp_5_nothing_found_says_which_server_looked_where() {
        let answer = LspAnswer::Places(Places {
            kind: Navigation::Implementation,
            asked: asked(),
            places: Vec::new(),
            total: 0,
            per_file: None,
            notes: vec!["`parse` occurs 2 times on line 12; used occurrence 1".into()],
        });
        insta::assert_snapshot!(answer.render(), @r"
        rust-analyzer found no implementation for `parse` at src/lib.rs:12.
        `parse` occurs 2 times on line 12; used occurrence 1
        ");
        let hover = LspAnswer::Hover(Hover {
            asked: asked(),
            contents: Some("```rust\npub fn parse(input: &str) -> Config\n```".into()),
            notes: Vec::new(),
        });
        insta::assert_snapshot!(hover.render(), @r"
        `parse` at src/lib.rs:12:
        ```rust
        pub fn parse(input: &str) -> Config
        ```
        ");
    }

    #[test]
    fn lsp_5_code_actions_are_numbered_with_their_kind_and_how_to_apply_one() {
        let answer = LspAnswer::Actions(Actions {
            asked: asked(),
            actions: vec![
                ActionItem {
                    title: "Import `std::fmt`".into(),
                    kind: Some("quickfix".into()),
                    preferred: true,
                    disabled: None,
                },
                ActionItem {
                    title: "Extract into function".into(),
                    kind: Some("refactor.extract".into()),
                    preferred: false,
                    disabled: Some("no expression selected".into()),
                },
            ],
            notes: Vec::new(),
        });
        insta::assert_snapshot!(answer.render(), @r"
        2 code actions at `parse` (src/lib.rs:12):
        1. Import `std::fmt` (quickfix, preferred)
        2. Extract into function (refactor.extract, disabled: no expression selected)
        Apply one with the `lsp_code_action` tool: the same file, line and symbol, and its title.
        ");
    }

    #[test]
    fn lsp_5_symbols_render_as_an_outline_and_as_a_search_with_dependencies_apart() {
        let symbol = |name: &str, kind: &str, depth, in_workspace| SymbolItem {
            name: name.into(),
            kind: kind.into(),
            place: match in_workspace {
                true => place("src/config.rs", 4, "pub struct Config {"),
                false => place("~/.cargo/registry/serde/src/de.rs", 4, "pub trait Config {"),
            },
            depth,
            in_workspace,
        };
        let outline = LspAnswer::FileSymbols(FileSymbols {
            server: "rust-analyzer".into(),
            file: "src/config.rs".into(),
            query: None,
            symbols: vec![
                symbol("Config", "struct", 0, true),
                symbol("load", "method", 1, true),
            ],
            total: 2,
            notes: Vec::new(),
        });
        insta::assert_snapshot!(outline.render(), @r"
        2 symbols in src/config.rs:
        struct Config (line 4)
          method load (line 4)
        ");
        let search = LspAnswer::WorkspaceSymbols(WorkspaceSymbols {
            servers: vec!["rust-analyzer".into()],
            query: "Config".into(),
            symbols: vec![
                symbol("Config", "struct", 0, true),
                symbol("Config", "trait", 0, false),
            ],
            total: 2,
            own: 1,
            notes: Vec::new(),
        });
        insta::assert_snapshot!(search.render(), @r"
        2 symbols matching `Config` (1 in the workspace, 1 in dependencies):
        struct Config — src/config.rs:4
        dependencies:
        trait Config — ~/.cargo/registry/serde/src/de.rs:4
        ");
    }

    #[test]
    fn lsp_5_a_project_check_names_its_scope_then_counts_per_file_then_quotes_lines() {
        let answer = LspAnswer::Check(Check {
            runs: vec![CheckRun {
                command: "cargo check --workspace --all-targets --keep-going".into(),
                root: ".".into(),
                scope: Some("every workspace member, every target, the default features".into()),
                errors: 3,
                warnings: 1,
            }],
            filtered: true,
            prefix: "src/".into(),
            severity: Some(SeverityFilter::Error),
            listed: vec![DiagnosticItem {
                place: Some(place("src/a.rs", 3, "parse(input)")),
                ..error(
                    "src/a.rs",
                    3,
                    "this function takes 2 arguments but 1 was supplied",
                )
            }],
            total: 3,
            per_file: Some("src/a.rs 2, src/b.rs 1".into()),
            notes: vec!["(showing 1 of 3; `offset: 1` shows the next page)".into()],
        });
        insta::assert_snapshot!(answer.render(), @r"
        `cargo check --workspace --all-targets --keep-going` (root .; every workspace member, every target, the default features): 3 errors and 1 warning
        Listing 3 errors under src/:
        Per file: src/a.rs 2, src/b.rs 1.
        src/a.rs:3: error[E0061]: this function takes 2 arguments but 1 was supplied
            parse(input)
        (showing 1 of 3; `offset: 1` shows the next page)
        ");
        let file = LspAnswer::FileDiagnostics(FileDiagnostics {
            server: "basedpyright".into(),
            file: "pkg/mod.py".into(),
            listed: Vec::new(),
            errors: 0,
            total: 0,
            notes: vec!["2 hints or infos not shown".into()],
        });
        insta::assert_snapshot!(file.render(), @r"
        pkg/mod.py: no errors or warnings (basedpyright).
        2 hints or infos not shown
        ");
    }

    #[test]
    fn lsp_2_status_says_why_a_server_cannot_run_and_reload_says_when_none_ran() {
        let status = LspAnswer::Status(
            vec![ServerReport {
                server: "clangd".into(),
                extensions: ".c, .h".into(),
                usable: false,
                roots: Vec::new(),
                markers: vec!["compile_commands.json".into()],
                binary: None,
                version: None,
                problem: Some(
                    "no compile_commands.json, compile_flags.txt or .clangd in the workspace"
                        .into(),
                ),
                sessions: Vec::new(),
            }],
            tools_process::Containment::Unavailable("unshare: Operation not permitted".into()),
        );
        insta::assert_snapshot!(status.render(), @r"
        Language servers for this workspace:

        clangd (.c, .h): not usable — no compile_commands.json, compile_flags.txt or .clangd in the workspace

        processes: children cannot be put in PID namespaces here (unshare: Operation not permitted): if this process is SIGKILLed, what a child started and moved out of its process group may outlive it
        ");
        insta::assert_snapshot!(LspAnswer::Reload(Vec::new()).render(), @"No language server was running; servers start on the next call that needs them.");
    }
}
