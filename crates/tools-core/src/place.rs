//! A place in a file as every tool shows it: the workspace-relative path, the 1-based line and
//! that line's text, written `path:LINE: text`; and [`Line`], the one conversion between the
//! protocols' line numbers and the ones a model reads.
//!
//! rust-analyzer keeps its own positions inside and converts them once, in `to_proto`; here the
//! language servers (0-based lines), the debug adapters (1-based, as they are told with
//! `linesStartAt1`) and the syntax trees (0-based rows) are converted once, by [`Line`], and a
//! location becomes a [`Place`] once, so no family writes `line + 1` or `path:LINE` by hand and
//! a location has one JSON shape in every tool's structured content.

use std::fmt;
use std::path::Path;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize};

use crate::Workspace;

/// The most characters of a line a place quotes; a longer line is cut and ends with `…`.
const LINE_CHARS: usize = 200;

/// A 1-based line number: line 1 is a file's first line. Built only from a protocol's number
/// through the constructor that names the protocol, so the off-by-one lives here alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Line(u32);

impl Line {
    /// A file's first line.
    pub const FIRST: Line = Line(1);

    /// A line already counted from 1 (what a model gives, what a checker prints); `None` for
    /// 0, which is no line.
    pub fn new(one_based: u32) -> Option<Line> {
        (one_based > 0).then_some(Line(one_based))
    }

    /// The line of an LSP `Position` or `Range`, which counts from 0.
    pub fn from_lsp(line: u32) -> Line {
        Line(line.saturating_add(1))
    }

    /// The line of a DAP frame or breakpoint. Our adapters are told `linesStartAt1`, so it
    /// counts from 1; an adapter sends 0 for a frame it has no line for, which is `None`.
    pub fn from_dap(line: u32) -> Option<Line> {
        Line::new(line)
    }

    /// The line at a 0-based index into a file's lines (a syntax tree's row, an enumerated
    /// line).
    pub fn from_index(index: usize) -> Line {
        Line(u32::try_from(index).map_or(u32::MAX, |index| index.saturating_add(1)))
    }

    /// The number as a model reads it.
    pub fn get(self) -> u32 {
        self.0
    }

    /// The line as an LSP `Position` counts it, from 0.
    pub fn to_lsp(self) -> u32 {
        self.0 - 1
    }

    /// The 0-based index of the line in a file's lines.
    pub fn index(self) -> usize {
        self.0 as usize - 1
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> Deserialize<'de> for Line {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let number = u32::deserialize(deserializer)?;
        Line::new(number)
            .ok_or_else(|| serde::de::Error::custom("line 0 is not a line: lines are 1-based"))
    }
}

impl JsonSchema for Line {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Line".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "minimum": 1 })
    }
}

/// A place in a file, as results show it: `path:LINE: text`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Place {
    /// The file, relative to the workspace root (absolute when outside it).
    pub path: String,
    /// 1-based line.
    pub line: Line,
    /// That line's text, trimmed (cut at 200 characters).
    pub text: String,
}

impl Place {
    /// `line` of the file at `path`, which the workspace shows relative to its root
    /// ([`Workspace::display`]); `line_text` is the line as the file has it, quoted here
    /// (trimmed, and cut when very long). Give `""` when the line's text is not at hand.
    pub fn new(workspace: &Workspace, path: &Path, line: Line, line_text: &str) -> Place {
        Place::named(workspace.display(path), line, line_text)
    }

    /// A place in the file called `name` as answers show it: a path already made
    /// workspace-relative by [`Workspace::display`], or a name that is not a path on this
    /// machine (a URI of another scheme, a debug adapter's name for a source it has no path
    /// for).
    pub fn named(name: impl Into<String>, line: Line, line_text: &str) -> Place {
        Place {
            path: name.into(),
            line,
            text: quote(line_text),
        }
    }

    /// `path:LINE`, without the text: how an answer names where it asked or what it lists
    /// on a line of its own.
    pub fn at(&self) -> impl fmt::Display + '_ {
        At(self)
    }
}

/// `src/lib.rs:12: pub fn answer() -> u32 {`; `src/lib.rs:12` when the text is empty.
impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.at())?;
        if !self.text.is_empty() {
            write!(f, ": {}", self.text)?;
        }
        Ok(())
    }
}

/// A place written without its text.
struct At<'a>(&'a Place);

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.0.path, self.0.line)
    }
}

/// A line as a place quotes it: trimmed, and cut when very long.
fn quote(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "fn main() {}\n").unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        (dir, workspace)
    }

    /// The place of `line` in `path` (relative to the workspace root unless absolute), as
    /// text.
    fn check(path: &str, line: Line, line_text: &str, expect: &str) {
        let (_dir, workspace) = workspace();
        let path = workspace.root().join(path);
        let place = Place::new(&workspace, &path, line, line_text);
        assert_eq!(place.to_string(), expect);
    }

    #[test]
    fn lsp_5_a_place_reads_path_line_text() {
        check(
            "src/lib.rs",
            Line::from_lsp(11),
            "    pub fn answer() -> u32 {\n",
            "src/lib.rs:12: pub fn answer() -> u32 {",
        );
        check("src/lib.rs", Line::FIRST, "   ", "src/lib.rs:1");
        check("/usr/lib/x.rs", Line::FIRST, "x", "/usr/lib/x.rs:1: x");
    }

    #[test]
    fn lsp_5_a_very_long_line_is_cut_and_says_so() {
        let long = "x".repeat(250);
        let place = Place::named("a.py", Line::FIRST, &long);
        assert_eq!(place.text.chars().count(), LINE_CHARS + 1);
        assert!(place.text.ends_with('…'));
        let exact = "y".repeat(LINE_CHARS);
        assert_eq!(Place::named("a.py", Line::FIRST, &exact).text, exact);
    }

    #[test]
    fn a_place_without_its_text_is_path_and_line() {
        let place = Place::named("src/lib.rs", Line::from_lsp(3), "let x = 1;");
        assert_eq!(place.at().to_string(), "src/lib.rs:4");
    }

    #[test]
    fn lsp_3_lines_convert_to_and_from_the_protocols() {
        // LSP counts from 0, DAP (told `linesStartAt1`) and a model from 1.
        assert_eq!(Line::from_lsp(0), Line::FIRST);
        assert_eq!(Line::from_lsp(41).get(), 42);
        assert_eq!(Line::from_lsp(41).to_lsp(), 41);
        assert_eq!(Line::from_lsp(41).index(), 41);
        assert_eq!(Line::from_dap(42), Line::new(42));
        assert_eq!(Line::from_dap(0), None);
        assert_eq!(Line::new(0), None);
        assert_eq!(Line::from_index(0), Line::FIRST);
        assert_eq!(Line::from_lsp(u32::MAX).get(), u32::MAX);
        assert_eq!(Line::from_index(usize::MAX).get(), u32::MAX);
    }

    #[test]
    fn a_place_has_one_json_shape_and_line_0_is_refused() {
        let place = Place::named("src/lib.rs", Line::from_lsp(2), "fn f() {}");
        let json = serde_json::to_value(&place).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"path": "src/lib.rs", "line": 3, "text": "fn f() {}"})
        );
        assert_eq!(serde_json::from_value::<Place>(json).unwrap(), place);
        let error = serde_json::from_value::<Place>(
            serde_json::json!({"path": "a", "line": 0, "text": ""}),
        )
        .unwrap_err();
        assert!(error.to_string().contains("lines are 1-based"), "{error}");
        let schema = crate::output_schema_for::<Place>();
        assert_eq!(
            schema["required"],
            serde_json::json!(["path", "line", "text"])
        );
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            schema["properties"]["line"],
            serde_json::json!({"description": "1-based line.", "type": "integer", "minimum": 1})
        );
    }

    #[test]
    fn relative_paths_inside_outside_and_through_a_symlinked_root() {
        let (dir, workspace) = workspace();
        let display = |path: &Path| workspace.display(path);
        assert_eq!(display(&workspace.root().join("src/lib.rs")), "src/lib.rs");
        assert_eq!(display(workspace.root()), ".");
        // Not yet on disk: still the workspace's.
        assert_eq!(display(&workspace.root().join("src/new.rs")), "src/new.rs");
        // Outside: whole, as given.
        let outside = tempfile::tempdir().unwrap();
        let elsewhere = outside.path().join("x.rs");
        assert_eq!(display(&elsewhere), elsewhere.to_string_lossy());
        // A relative path is not resolved against the process's folder.
        assert_eq!(display(Path::new("<string>")), "<string>");
        // The root reached through a link: the same relative path.
        let link = outside.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        assert_eq!(display(&link.join("src/lib.rs")), "src/lib.rs");
        let through_link = Workspace::new(&link).unwrap();
        assert_eq!(through_link.display(&link.join("src/lib.rs")), "src/lib.rs");
        assert_eq!(
            Place::new(
                &through_link,
                &link.join("src/lib.rs"),
                Line::FIRST,
                "fn main() {}"
            )
            .to_string(),
            "src/lib.rs:1: fn main() {}"
        );
    }
}
