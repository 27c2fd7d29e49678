//! Positions: the model names a 1-based `line` and a `symbol` on it (LSP-3, LSP-4), never a column;
//! we find the occurrence it means (the server's position encoding is tools-lsp-client's
//! `Encoding`).

use std::path::Path;

use async_lsp::lsp_types::{Position, Range};
use tools_core::{Line, Place, ToolError, Workspace};

// The conversions on the wire are the client's; the tools name them from here.
pub(crate) use tools_lsp_client::{Encoding, lines, offset};

/// Where a `line` + `symbol` pair points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The line as LSP counts it, from 0 ([`Target::number`] is the model's).
    pub(crate) line: u32,
    /// Byte range, within the line, of the identifier aimed at.
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// The identifier aimed at (the last segment of qualified text).
    pub(crate) aimed: String,
    /// Which candidate occurrence was used (1-based) and how many there were.
    pub(crate) occurrence: usize,
    pub(crate) occurrences: usize,
    /// The longer identifier the symbol was found inside, when it never occurs whole.
    pub(crate) inside: Option<String>,
}

impl Target {
    /// The line as the model counts it, from 1.
    pub(crate) fn number(&self) -> Line {
        Line::from_lsp(self.line)
    }

    /// Where the target is, in the file at `path` whose text is `text`.
    pub(crate) fn place(&self, workspace: &Workspace, path: &Path, text: &str) -> Place {
        let line = self.number();
        let line_text = lines(text).get(line.index()).copied().unwrap_or_default();
        Place::new(workspace, path, line, line_text)
    }

    /// The LSP range of the identifier aimed at.
    pub(crate) fn range(&self, line_text: &str, encoding: Encoding) -> Range {
        Range::new(
            Position::new(self.line, encoding.column(line_text, self.start)),
            Position::new(self.line, encoding.column(line_text, self.end)),
        )
    }

    /// A sentence about which occurrence was used, when the line holds several.
    pub(crate) fn note(&self, symbol: &str) -> Option<String> {
        let symbol = symbol.trim();
        let mut notes = Vec::new();
        if let Some(inside) = &self.inside {
            notes.push(format!(
                "`{symbol}` is not a whole name on line {}; it was found inside `{inside}`",
                self.number()
            ));
        }
        if self.occurrences > 1 {
            notes.push(format!(
                "`{symbol}` occurs {} times on line {}; used occurrence {} (pass `occurrence` \
                 to pick another)",
                self.occurrences,
                self.number(),
                self.occurrence
            ));
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}

fn is_identifier_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_' || ch == '$'
}

/// Finds `symbol` on 1-based `line` of `text` (LSP-3, LSP-4). `shown` names the file in errors.
///
/// Whole-identifier occurrences are preferred over ones inside a longer name; qualified text
/// (`a.b`, `A::b`, `a->b`) aims at its last segment; `occurrence` (1-based) picks among
/// several. Every refusal quotes the line.
pub(crate) fn locate(
    text: &str,
    line: u32,
    symbol: &str,
    occurrence: Option<u32>,
    shown: &str,
) -> Result<Target, ToolError> {
    let all = lines(text);
    let count = if text.ends_with('\n') {
        all.len() - 1
    } else {
        all.len()
    };
    let Some(number) = Line::new(line).filter(|number| number.index() < count) else {
        return Err(ToolError::failed(format!(
            "line {line} is outside {shown}, which has {count} lines; lines are 1-based"
        )));
    };
    let line_text = all[number.index()];
    let symbol_trimmed = symbol.trim();
    if symbol_trimmed.is_empty() {
        return Err(ToolError::failed(format!(
            "`symbol` is empty: give the identifier on line {line} of {shown} to ask about; \
             the line is `{}`",
            line_text.trim()
        )));
    }
    let starts: Vec<usize> = line_text
        .match_indices(symbol_trimmed)
        .map(|(start, _)| start)
        .collect();
    if starts.is_empty() {
        let elsewhere: Vec<String> = all
            .iter()
            .enumerate()
            .filter(|(_, other)| other.contains(symbol_trimmed))
            .map(|(index, _)| Line::from_index(index).to_string())
            .take(8)
            .collect();
        let mut message = format!(
            "line {line} of {shown} has no `{symbol_trimmed}`: the line is `{}`",
            line_text.trim()
        );
        if !elsewhere.is_empty() {
            message.push_str(&format!(
                "; `{symbol_trimmed}` occurs on line{} {}",
                if elsewhere.len() == 1 { "" } else { "s" },
                elsewhere.join(", ")
            ));
        }
        return Err(ToolError::failed(message));
    }
    let (aim_start, aim_end) = aim(symbol_trimmed).ok_or_else(|| {
        ToolError::failed(format!(
            "`{symbol_trimmed}` holds no identifier to ask about; give a name that occurs on \
             line {line} of {shown}: `{}`",
            line_text.trim()
        ))
    })?;
    let whole: Vec<usize> = starts
        .iter()
        .copied()
        .filter(|&start| {
            let end = start + symbol_trimmed.len();
            let before_ok = !symbol_trimmed.starts_with(is_identifier_char)
                || !line_text[..start].ends_with(is_identifier_char);
            let after_ok = !symbol_trimmed.ends_with(is_identifier_char)
                || !line_text[end..].starts_with(is_identifier_char);
            before_ok && after_ok
        })
        .collect();
    let partial = whole.is_empty();
    let candidates = if partial { starts } else { whole };
    let chosen = occurrence.unwrap_or(1);
    if chosen == 0 || chosen as usize > candidates.len() {
        return Err(ToolError::failed(format!(
            "`occurrence` is {chosen}, but `{symbol_trimmed}` occurs {} time{} on line {line} of \
             {shown}: `{}`; occurrences are numbered from 1",
            candidates.len(),
            if candidates.len() == 1 { "" } else { "s" },
            line_text.trim()
        )));
    }
    let start = candidates[chosen as usize - 1];
    let inside = partial.then(|| {
        let from = line_text[..start]
            .char_indices()
            .rev()
            .take_while(|(_, ch)| is_identifier_char(*ch))
            .last()
            .map_or(start, |(index, _)| index);
        let end = start + symbol_trimmed.len();
        let to = end
            + line_text[end..]
                .char_indices()
                .take_while(|(_, ch)| is_identifier_char(*ch))
                .last()
                .map_or(0, |(index, ch)| index + ch.len_utf8());
        line_text[from..to].to_owned()
    });
    Ok(Target {
        line: number.to_lsp(),
        start: start + aim_start,
        end: start + aim_end,
        aimed: symbol_trimmed[aim_start..aim_end].to_owned(),
        occurrence: chosen as usize,
        occurrences: candidates.len(),
        inside,
    })
}

/// The byte range inside `symbol` to aim at: the last segment of qualified text, otherwise
/// the first identifier in it.
fn aim(symbol: &str) -> Option<(usize, usize)> {
    let runs: Vec<(usize, usize)> = {
        let mut runs = Vec::new();
        let mut current: Option<usize> = None;
        for (index, ch) in symbol.char_indices() {
            match (is_identifier_char(ch), current) {
                (true, None) => current = Some(index),
                (false, Some(start)) => {
                    runs.push((start, index));
                    current = None;
                }
                _ => {}
            }
        }
        if let Some(start) = current {
            runs.push((start, symbol.len()));
        }
        runs
    };
    let qualified = runs.windows(2).rev().find(|pair| {
        let between = &symbol[pair[0].1..pair[1].0];
        matches!(between, "." | "::" | "->" | "?.")
    });
    match qualified {
        Some(pair) => Some(pair[1]),
        None => runs.first().copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "fn main() {\n    let total = sum(values.len(), total_len);\n    std::mem::drop(total);\n}\n";

    fn check(
        line: u32,
        symbol: &str,
        occurrence: Option<u32>,
    ) -> Result<(u32, usize, String, Option<String>), String> {
        locate(FILE, line, symbol, occurrence, "src/main.rs")
            .map(|t| (t.line, t.start, t.aimed.clone(), t.note(symbol)))
            .map_err(|error| error.to_string())
    }

    #[test]
    fn lsp_3_a_symbol_on_the_line_is_found() {
        assert_eq!(check(2, "sum", None), Ok((1, 16, "sum".into(), None)));
    }

    #[test]
    fn lsp_3_whole_identifiers_win_over_substrings() {
        // `total` occurs inside `total_len` too; the whole word is the only candidate.
        assert_eq!(check(2, "total", None), Ok((1, 8, "total".into(), None)));
    }

    #[test]
    fn lsp_3_a_symbol_found_only_inside_a_longer_name_says_so() {
        let target = locate(
            "pub fn first_circle() -> f64 {\n",
            1,
            "circle",
            None,
            "a.rs",
        )
        .unwrap();
        assert_eq!(target.start, 13);
        assert_eq!(
            target.note("circle").unwrap(),
            "`circle` is not a whole name on line 1; it was found inside `first_circle`"
        );
    }

    #[test]
    fn lsp_3_qualified_text_aims_at_the_last_segment() {
        assert_eq!(
            check(3, "std::mem::drop", None),
            Ok((2, 14, "drop".into(), None))
        );
        assert_eq!(
            check(2, "values.len", None),
            Ok((1, 27, "len".into(), None))
        );
        assert_eq!(check(2, "len()", None).unwrap().2, "len");
    }

    #[test]
    fn lsp_3_several_occurrences_are_numbered_and_noted() {
        let text = "let a = f(x) + f(y);\n";
        let first = locate(text, 1, "f", None, "a.rs").unwrap();
        assert_eq!((first.start, first.occurrences), (8, 2));
        assert_eq!(
            first.note("f").unwrap(),
            "`f` occurs 2 times on line 1; used occurrence 1 (pass `occurrence` to pick another)"
        );
        let second = locate(text, 1, "f", Some(2), "a.rs").unwrap();
        assert_eq!(second.start, 15);
        assert_eq!(
            locate(text, 1, "f", Some(3), "a.rs")
                .unwrap_err()
                .to_string(),
            "`occurrence` is 3, but `f` occurs 2 times on line 1 of a.rs: `let a = f(x) + f(y);`; occurrences are numbered from 1"
        );
    }

    #[test]
    fn lsp_4_symbol_not_on_line_quotes_the_line() {
        assert_eq!(
            check(2, "drop", None).unwrap_err(),
            "line 2 of src/main.rs has no `drop`: the line is `let total = sum(values.len(), total_len);`; `drop` occurs on line 3"
        );
    }

    #[test]
    fn lsp_4_empty_symbol_and_bad_lines_are_errors() {
        assert_eq!(
            check(1, " ", None).unwrap_err(),
            "`symbol` is empty: give the identifier on line 1 of src/main.rs to ask about; the line is `fn main() {`"
        );
        assert_eq!(
            check(9, "x", None).unwrap_err(),
            "line 9 is outside src/main.rs, which has 4 lines; lines are 1-based"
        );
        assert!(check(0, "x", None).is_err());
    }
}
