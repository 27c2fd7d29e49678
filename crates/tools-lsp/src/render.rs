//! Turning server answers into what a model reads: the [`Place`]s of a list (each file read
//! once to quote its lines), capped lists that say they were capped, hover text, and names
//! for symbol kinds and severities.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_lsp::lsp_types::{
    Diagnostic, DiagnosticSeverity, HoverContents, MarkedString, NumberOrString, SymbolKind, Url,
};
use tools_core::{Line, Place, Workspace};

/// Folders whose files count as dependencies, not the workspace's own code.
const DEPENDENCY_DIRS: &[&str] = &[
    "node_modules",
    ".venv",
    "venv",
    "site-packages",
    "target",
    ".cargo",
    ".rustup",
    "vendor",
];

/// Reads files once per answer to quote their lines.
pub(crate) struct Quoter<'a> {
    workspace: &'a Workspace,
    files: HashMap<PathBuf, Option<Lines>>,
}

/// A file's text with where each line starts, so quoting many places in one file (a long
/// references list) does not rescan it each time.
struct Lines {
    text: Arc<str>,
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: Arc<str>) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(index, _)| index + 1))
            .collect();
        Lines { text, starts }
    }

    fn line(&self, index: usize) -> Option<&str> {
        let start = *self.starts.get(index)?;
        let end = self
            .starts
            .get(index + 1)
            .map_or(self.text.len(), |next| next - 1);
        Some(&self.text[start..end])
    }
}

impl<'a> Quoter<'a> {
    pub(crate) fn new(workspace: &'a Workspace) -> Self {
        Quoter {
            workspace,
            files: HashMap::new(),
        }
    }

    /// Seeds a file's text (a document we just synced, so we need not read it again).
    pub(crate) fn know(&mut self, path: &Path, text: Arc<str>) {
        self.files
            .insert(path.to_path_buf(), Some(Lines::new(text)));
    }

    /// The place of `line` in the file at `uri`.
    pub(crate) fn place(&mut self, uri: &Url, line: Line) -> Place {
        match uri.to_file_path() {
            Ok(path) => self.place_in(&path, line),
            Err(()) => Place::named(uri.to_string(), line, ""),
        }
    }

    /// The place of `line` in `path`.
    pub(crate) fn place_in(&mut self, path: &Path, line: Line) -> Place {
        let text = self
            .files
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                tools_core::read_regular(path)
                    .ok()
                    .and_then(|bytes| String::from_utf8(bytes).ok())
                    .map(|text| Lines::new(Arc::from(text)))
            })
            .as_ref()
            .and_then(|lines| lines.line(line.index()))
            .unwrap_or_default();
        Place::new(self.workspace, path, line, text)
    }

    /// Whether `uri` is the workspace's own code rather than a dependency or the toolchain.
    pub(crate) fn is_own(&self, uri: &Url) -> bool {
        let Some(relative) = uri
            .to_file_path()
            .ok()
            .and_then(|path| self.workspace.relative(&path))
        else {
            return false;
        };
        !relative.components().any(|component| {
            let name = component.as_os_str().to_string_lossy();
            DEPENDENCY_DIRS.contains(&name.as_ref())
        })
    }
}

/// The note under a capped list.
pub(crate) fn capped_note(shown: usize, total: usize) -> Option<String> {
    (total > shown).then(|| format!("(capped: showing {shown} of {total})"))
}

/// Hover contents as plain markdown.
pub(crate) fn hover_text(contents: HoverContents) -> String {
    fn marked(text: MarkedString) -> String {
        match text {
            MarkedString::String(text) => text,
            MarkedString::LanguageString(code) => {
                format!("```{}\n{}\n```", code.language, code.value)
            }
        }
    }
    let text = match contents {
        HoverContents::Scalar(text) => marked(text),
        HoverContents::Array(items) => items
            .into_iter()
            .map(marked)
            .filter(|text| !text.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        HoverContents::Markup(markup) => markup.value,
    };
    clean_markdown(text.trim())
}

/// `function`, `struct`, `enum member`.
pub(crate) fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::FILE => "file",
        SymbolKind::MODULE => "module",
        SymbolKind::NAMESPACE => "namespace",
        SymbolKind::PACKAGE => "package",
        SymbolKind::CLASS => "class",
        SymbolKind::METHOD => "method",
        SymbolKind::PROPERTY => "property",
        SymbolKind::FIELD => "field",
        SymbolKind::CONSTRUCTOR => "constructor",
        SymbolKind::ENUM => "enum",
        SymbolKind::INTERFACE => "interface",
        SymbolKind::FUNCTION => "function",
        SymbolKind::VARIABLE => "variable",
        SymbolKind::CONSTANT => "constant",
        SymbolKind::STRING => "string",
        SymbolKind::NUMBER => "number",
        SymbolKind::BOOLEAN => "boolean",
        SymbolKind::ARRAY => "array",
        SymbolKind::OBJECT => "object",
        SymbolKind::KEY => "key",
        SymbolKind::NULL => "null",
        SymbolKind::ENUM_MEMBER => "enum member",
        SymbolKind::STRUCT => "struct",
        SymbolKind::EVENT => "event",
        SymbolKind::OPERATOR => "operator",
        SymbolKind::TYPE_PARAMETER => "type parameter",
        _ => "symbol",
    }
}

/// `error`, `warning`, `info`, `hint`; a diagnostic without a severity is an error.
pub(crate) fn severity_name(severity: Option<DiagnosticSeverity>) -> &'static str {
    match severity {
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "info",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "error",
    }
}

/// A diagnostic code as text.
pub(crate) fn code_text(code: Option<&NumberOrString>) -> Option<String> {
    code.map(|code| match code {
        NumberOrString::Number(number) => number.to_string(),
        NumberOrString::String(text) => text.clone(),
    })
}

/// A message on one line: each of its lines trimmed and folded, joined with "; " (a line
/// that ends with a colon runs on with a space), so a multi-part message reads as one
/// sentence instead of running its parts together; cut when very long.
pub(crate) fn one_line(message: &str) -> String {
    let mut folded = String::new();
    for part in message.lines() {
        let part = part.split_whitespace().collect::<Vec<_>>().join(" ");
        if part.is_empty() {
            continue;
        }
        if !folded.is_empty() {
            folded.push_str(match folded.ends_with(':') || folded.ends_with(';') {
                true => " ",
                false => "; ",
            });
        }
        folded.push_str(&part);
    }
    if folded.chars().count() <= 400 {
        return folded;
    }
    let mut cut: String = folded.chars().take(400).collect();
    cut.push('…');
    cut
}

/// One server's two passes over a file merged: rust-analyzer reports an error from its own
/// analysis and again from `cargo check` (E0107 and E0061 for one call with a wrong argument
/// count; "50 errors" for 25 broken calls). Two diagnostics from different sources (passes)
/// are one when they start on the same line with the same severity — preferably a pair that
/// shares its code or message; failing that any pair, since rust-analyzer's own E0107 marks
/// the argument list's end while `cargo check`'s E0061 marks the callee, so neither code,
/// message nor range tells they are one. The richer one stays (the longer message, then the
/// one with related information), where the first of them stood. Within one pass only exact
/// repeats merge: three broken calls on one line are three findings.
pub(crate) fn merge_passes(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut kept: Vec<Diagnostic> = Vec::with_capacity(diagnostics.len());
    // Which kept diagnostics already absorbed one from the other pass.
    let mut paired: Vec<bool> = Vec::with_capacity(diagnostics.len());
    for diagnostic in diagnostics {
        let free =
            |index: usize, other: &Diagnostic| !paired[index] && other_pass(other, &diagnostic);
        let twin = kept
            .iter()
            .position(|other| repeat(other, &diagnostic))
            .or_else(|| {
                kept.iter()
                    .enumerate()
                    .position(|(index, other)| free(index, other) && shares(other, &diagnostic))
            })
            .or_else(|| {
                kept.iter()
                    .enumerate()
                    .position(|(index, other)| free(index, other))
            });
        match twin {
            Some(index) => {
                paired[index] = paired[index] || other_pass(&kept[index], &diagnostic);
                if richness(&diagnostic) > richness(&kept[index]) {
                    kept[index] = diagnostic;
                }
            }
            None => {
                kept.push(diagnostic);
                paired.push(false);
            }
        }
    }
    kept
}

/// The same finding reported twice by one pass.
fn repeat(a: &Diagnostic, b: &Diagnostic) -> bool {
    a.range == b.range && a.code == b.code && a.message.trim() == b.message.trim()
}

fn shares(a: &Diagnostic, b: &Diagnostic) -> bool {
    (a.code.is_some() && a.code == b.code) || a.message.trim() == b.message.trim()
}

fn other_pass(a: &Diagnostic, b: &Diagnostic) -> bool {
    a.range.start.line == b.range.start.line
        && a.severity == b.severity
        && a.source.is_some()
        && b.source.is_some()
        && a.source != b.source
}

fn richness(diagnostic: &Diagnostic) -> (usize, usize) {
    (
        diagnostic.message.trim().len(),
        diagnostic.related_information.as_ref().map_or(0, Vec::len),
    )
}

/// Hover markdown as a model should read it: no HTML entities for spaces and no backslash
/// escapes of punctuation (servers escape `_` and `*` for renderers), outside code.
pub(crate) fn clean_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fenced = false;
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push_str(line);
            continue;
        }
        if fenced {
            out.push_str(line);
            continue;
        }
        let line = line.replace("&nbsp;", " ").replace("&#160;", " ");
        let mut in_code = false;
        let mut chars = line.chars().peekable();
        while let Some(ch) = chars.next() {
            match ch {
                '`' => {
                    in_code = !in_code;
                    out.push(ch);
                }
                '\\' if !in_code
                    && chars.peek().is_some_and(|next| next.is_ascii_punctuation()) =>
                {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                _ => out.push(ch),
            }
        }
    }
    out
}

/// "1 edit", "3 edits".
pub(crate) fn plural(count: usize, noun: &str) -> String {
    match count {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_quote_the_line_workspace_relative() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/lib.rs"),
            "mod a;\n    pub fn answer() {}\n",
        )
        .unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let mut quoter = Quoter::new(&workspace);
        let uri = Url::from_file_path(workspace.root().join("src/lib.rs")).unwrap();
        assert_eq!(
            quoter.place(&uri, Line::from_lsp(1)).to_string(),
            "src/lib.rs:2: pub fn answer() {}"
        );
        assert!(quoter.is_own(&uri));
        let dependency =
            Url::from_file_path(workspace.root().join(".venv/lib/site-packages/x.py")).unwrap();
        assert!(!quoter.is_own(&dependency));
        assert!(!quoter.is_own(&Url::parse("file:///usr/lib/x.rs").unwrap()));
    }

    #[test]
    fn lsp_5_capped_lists_say_so() {
        assert_eq!(capped_note(50, 50), None);
        assert_eq!(
            capped_note(50, 73).as_deref(),
            Some("(capped: showing 50 of 73)")
        );
    }
}

#[cfg(test)]
mod prose_tests {
    use async_lsp::lsp_types::{Position, Range};

    use super::*;

    #[test]
    fn multi_part_messages_read_as_one_sentence() {
        assert_eq!(
            one_line("mismatched types\nexpected `usize`, found `Span`"),
            "mismatched types; expected `usize`, found `Span`"
        );
        assert_eq!(
            one_line("Argument of type \"str\" cannot be assigned:\n  \"str\" is not \"int\"\n"),
            "Argument of type \"str\" cannot be assigned: \"str\" is not \"int\""
        );
        assert_eq!(one_line("  spaced   out  "), "spaced out");
    }

    fn diagnostic(line: u32, code: &str, source: &str, message: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 4), Position::new(line, 10)),
            severity: Some(DiagnosticSeverity::ERROR),
            code: Some(NumberOrString::String(code.to_owned())),
            source: Some(source.to_owned()),
            message: message.to_owned(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn one_servers_two_passes_become_one_finding_the_richer() {
        let merged = merge_passes(vec![
            diagnostic(3, "E0107", "rust-analyzer", "expected 2 arguments, found 1"),
            diagnostic(
                3,
                "E0061",
                "rustc",
                "this function takes 2 arguments but 1 argument was supplied",
            ),
            diagnostic(5, "E0308", "rust-analyzer", "mismatched types"),
            diagnostic(
                5,
                "E0308",
                "rustc",
                "mismatched types\nexpected `u32`, found `&str`",
            ),
            // Another error on another line stays.
            diagnostic(6, "E0308", "rustc", "mismatched types"),
            // Three broken calls on one line, from one pass, are three.
            diagnostic(7, "E0061", "rustc", "this function takes 3 arguments"),
            Diagnostic {
                range: Range::new(Position::new(7, 20), Position::new(7, 23)),
                ..diagnostic(7, "E0061", "rustc", "this function takes 3 arguments")
            },
        ]);
        let codes: Vec<(u32, String)> = merged
            .iter()
            .map(|d| (d.range.start.line, code_text(d.code.as_ref()).unwrap()))
            .collect();
        assert_eq!(
            codes,
            [
                (3, "E0061".to_owned()),
                (5, "E0308".to_owned()),
                (6, "E0308".to_owned()),
                (7, "E0061".to_owned()),
                (7, "E0061".to_owned())
            ]
        );
        assert!(merged[1].message.contains("expected `u32`"));
    }

    #[test]
    fn hover_markdown_loses_entities_and_escapes_but_not_code() {
        assert_eq!(
            clean_markdown("fn&nbsp;x\\_y \\*bold\\* `a\\_b`\n```rust\nlet a = \"\\_\";\n```"),
            "fn x_y *bold* `a\\_b`\n```rust\nlet a = \"\\_\";\n```"
        );
    }
}

/// A text file's content, read without ever blocking on a special file (a named pipe).
pub(crate) fn read_text(path: &Path) -> std::io::Result<String> {
    let bytes = tools_core::read_regular(path)?;
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not UTF-8 text"))
}
