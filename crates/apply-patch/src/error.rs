//! Why a patch does not parse or a file's hunks do not apply, as typed values. Their `Display`
//! is the text a model reads: lowercase, no trailing period, saying where (a 1-based patch line,
//! or a hunk by its number and header), what is wrong and what to send instead.
//!
//! STYLE asks for one error enum per crate; this crate has two, because parsing and applying
//! fail at different steps and callers report them differently (a caller names the file an
//! [`ApplyError`] is about, while a [`ParseError`] already names its patch line). No function
//! can fail in both ways, so a union of the two would only widen every signature.

use std::fmt;

/// The hint that ends most "does not apply" errors, since a stale view of the file is the usual
/// cause.
const REREAD: &str = "re-read the file and make the patch against its current content";

/// Lines longer than this are cut in error messages, so that one huge line does not drown the
/// rest.
const SHOWN_CHARS: usize = 200;

/// Why a patch text could not be parsed. Every variant but [`ParseError::NoFileSections`] names
/// the 1-based patch line it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Nothing in the text looks like a file section.
    #[error(
        "the patch has no file sections: send a unified diff as `git diff` prints it, starting with `diff --git` or `---`/`+++` lines"
    )]
    NoFileSections,
    /// A `diff --cc` or `diff --combined` line: a merge's combined diff.
    #[error(
        "patch line {line}: `{}` starts a combined diff of a merge, which is not supported: send a plain `git diff` of each file against one version",
        shorten(.text)
    )]
    CombinedDiff { line: usize, text: String },
    /// `Binary files … differ` or `GIT binary patch`.
    #[error(
        "patch line {line}: binary patches are not supported: change text files only, or use write for the whole file"
    )]
    Binary { line: usize },
    /// An `@@` line before any `---`/`+++` or `diff --git` line.
    #[error(
        "patch line {line}: hunk header `{}` comes before any file header: put `--- a/PATH` and `+++ b/PATH` lines (or a `diff --git a/PATH b/PATH` line) before it",
        shorten(.header)
    )]
    HunkBeforeFileHeader { line: usize, header: String },
    /// A `diff --git` line whose names cannot be split, with no other line naming the files.
    #[error(
        "patch line {line}: cannot read the file names in `{}`: expected `diff --git a/PATH b/PATH`",
        shorten(.text)
    )]
    UnreadableGitNames { line: usize, text: String },
    /// A `diff --git` line followed by neither hunks nor a header that changes something.
    #[error(
        "patch line {line}: `{}` is followed by no changes: add `--- a/PATH` and `+++ b/PATH` lines and `@@` hunks",
        shorten(.text)
    )]
    NoChanges { line: usize, text: String },
    /// `---`/`+++` lines with no `@@` hunk after them.
    #[error(
        "patch line {line}: the section for `{name}` has no hunks: add `@@ -START,COUNT +START,COUNT @@` hunks with the changed lines"
    )]
    NoHunks { line: usize, name: String },
    /// A `---` line of a git section without its `+++` line.
    #[error(
        "patch line {line}: `{}` is not followed by a `+++` line: each file needs a `--- OLD` line and then a `+++ NEW` line before its hunks",
        shorten(.text)
    )]
    MissingPlusLine { line: usize, text: String },
    /// Both `---` and `+++` name /dev/null.
    #[error(
        "patch line {line}: both `---` and `+++` are /dev/null: name the file on at least one side"
    )]
    BothDevNull { line: usize },
    /// A `---` or `+++` line with nothing after the marker.
    #[error("patch line {line}: the line has no file path: write `--- a/PATH` and `+++ b/PATH`")]
    NoPath { line: usize },
    /// A hunk after one that ends with `\ No newline at end of file`.
    #[error(
        "patch line {line}: hunk {previous} of `{name}` ends with `\\ No newline at end of file`, so it must be the last hunk, but hunk {hunk} (`{header}`) follows it"
    )]
    HunkAfterMissingNewline {
        line: usize,
        name: String,
        previous: usize,
        hunk: usize,
        header: String,
    },
    /// A hunk that starts above the end of the hunk before it.
    #[error(
        "patch line {line}: hunk {hunk} (`{header}`) of `{name}` starts before the end of hunk {previous} (old line {previous_end}): hunks of one file must be in file order and must not overlap; merge them or fix the line numbers"
    )]
    HunksOverlap {
        line: usize,
        hunk: usize,
        header: String,
        name: String,
        previous: usize,
        /// The old line the previous hunk ends at.
        previous_end: usize,
    },
    /// An `@@` line that is not `@@ -START[,COUNT] +START[,COUNT] @@`.
    #[error(
        "patch line {line}: hunk header `{}` is malformed: expected `@@ -START,COUNT +START,COUNT @@`",
        shorten(.header)
    )]
    MalformedHunkHeader { line: usize, header: String },
    /// A side that starts at line 0 but has lines.
    #[error(
        "patch line {line}: hunk header `{}` says the {side} side starts at line 0 but has {len} lines: line numbers start at 1, and 0 is only for an empty side (`-0,0` or `+0,0`)",
        shorten(.header)
    )]
    ZeroStart {
        line: usize,
        header: String,
        side: Side,
        len: usize,
    },
    /// A line inside a hunk, by its header's counts, that starts with none of ` `, `-`, `+`.
    #[error(
        "patch line {line}: hunk {hunk} (`{}`) of `{name}` needs {old_left} more old and {new_left} more new lines by its header, but {} does not start with ` `, `-` or `+`: start every context line with a space, or fix the header counts",
        shorten(.header),
        quote(.text)
    )]
    NotAHunkLine {
        line: usize,
        hunk: usize,
        header: String,
        name: String,
        old_left: usize,
        new_left: usize,
        text: String,
    },
    /// A hunk line after `\ No newline at end of file` on the same side.
    #[error(
        "patch line {line}: hunk {hunk} (`{}`) of `{name}` continues after `\\ No newline at end of file`: that marker may only follow the last line of the file",
        shorten(.header)
    )]
    LineAfterMissingNewline {
        line: usize,
        hunk: usize,
        header: String,
        name: String,
    },
    /// `\ No newline at end of file` as a hunk's first line.
    #[error(
        "patch line {line}: `\\ No newline at end of file` must follow the line it is about, not start a hunk"
    )]
    MissingNewlineFirst { line: usize },
    /// A hunk whose body has the header's counts only when lines that are not hunk lines count.
    #[error(
        "patch line {line}: hunk {hunk} (`{}`) of `{name}` does not match the line counts in its header: every line of a hunk must start with ` `, `-` or `+`",
        shorten(.header)
    )]
    UnreadableHunkLines {
        line: usize,
        hunk: usize,
        header: String,
        name: String,
    },
    /// A hunk with more or fewer lines than its header says.
    #[error(
        "patch line {line}: hunk {hunk} (`{}`) of `{name}` has {old} old and {new} new lines but its header says {header_old} and {header_new}: fix the header counts (old = context + removed lines, new = context + added lines)",
        shorten(.header)
    )]
    CountMismatch {
        line: usize,
        hunk: usize,
        header: String,
        name: String,
        /// The old and new lines the hunk's body has.
        old: usize,
        new: usize,
        /// The old and new lines its header says.
        header_old: usize,
        header_new: usize,
    },
}

impl ParseError {
    /// The 1-based patch line the error is about; None when the patch has no file sections.
    pub fn line(&self) -> Option<usize> {
        match self {
            ParseError::NoFileSections => None,
            ParseError::CombinedDiff { line, .. }
            | ParseError::Binary { line }
            | ParseError::HunkBeforeFileHeader { line, .. }
            | ParseError::UnreadableGitNames { line, .. }
            | ParseError::NoChanges { line, .. }
            | ParseError::NoHunks { line, .. }
            | ParseError::MissingPlusLine { line, .. }
            | ParseError::BothDevNull { line }
            | ParseError::NoPath { line }
            | ParseError::HunkAfterMissingNewline { line, .. }
            | ParseError::HunksOverlap { line, .. }
            | ParseError::MalformedHunkHeader { line, .. }
            | ParseError::ZeroStart { line, .. }
            | ParseError::NotAHunkLine { line, .. }
            | ParseError::LineAfterMissingNewline { line, .. }
            | ParseError::MissingNewlineFirst { line }
            | ParseError::UnreadableHunkLines { line, .. }
            | ParseError::CountMismatch { line, .. } => Some(*line),
        }
    }
}

/// A side of a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The file before the patch (`-`).
    Old,
    /// The file after the patch (`+`).
    New,
}

impl fmt::Display for Side {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Side::Old => "old",
            Side::New => "new",
        })
    }
}

/// Why one file's hunks could not be applied to its text. The file is named as the patch names
/// it, so a caller that shows the file itself can put its own name in front.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// A section whose `---` and `+++` paths are both /dev/null (only hand-built patches have one).
    #[error("the patch names no file: its `---` and `+++` paths are both /dev/null")]
    NoFile,
    /// A creation (`--- /dev/null`) of a file that exists.
    #[error(
        "the patch creates {path} but it already exists; re-read it and make the patch against its current content, with `--- a/{path}` instead of `--- /dev/null`"
    )]
    CreatesExisting { path: String },
    /// A deletion of a file that does not exist.
    #[error("the patch deletes {path} but it does not exist; check the path")]
    DeletesMissing { path: String },
    /// A rename of a file that does not exist.
    #[error("the patch renames {from} to {to} but {from} does not exist; check the path")]
    RenamesMissing { from: String, to: String },
    /// A change to a file that does not exist.
    #[error(
        "the patch modifies {path} but it does not exist; check the path, or create the file with `--- /dev/null` and `+++ b/{path}`"
    )]
    ModifiesMissing { path: String },
    /// A hunk of a creation with context or removed lines.
    #[error(
        "hunk {hunk} (`{header}`) has context or removed lines, but the patch creates the file, so every line must be added with `+` and the header must start `@@ -0,0`"
    )]
    OldLinesInCreation { hunk: usize, header: String },
    /// A hunk of a deletion with context or added lines.
    #[error(
        "hunk {hunk} (`{header}`) keeps or adds lines, but the patch deletes the file, so every line must be removed with `-`"
    )]
    KeptLinesInDeletion { hunk: usize, header: String },
    /// A hunk whose old lines are not in the file where they may be.
    #[error("hunk {hunk} (`{header}`) does not apply: {mismatch}")]
    DoesNotApply {
        /// The hunk's 1-based number in its file's section.
        hunk: usize,
        header: String,
        mismatch: Mismatch,
    },
    /// A deletion that leaves lines of the file over.
    #[error(
        "the patch deletes {path} but the file has more than the patch removes: {} is still there{}; {}",
        quote(.text),
        at_line(*.line),
        REREAD
    )]
    DeletionLeavesLines {
        path: String,
        /// The first line that would be left.
        text: String,
        /// Its 1-based line number in the file.
        line: Option<usize>,
    },
}

impl ApplyError {
    /// The 1-based number of the hunk the error is about, when it is about one.
    pub fn hunk(&self) -> Option<usize> {
        match self {
            ApplyError::OldLinesInCreation { hunk, .. }
            | ApplyError::KeptLinesInDeletion { hunk, .. }
            | ApplyError::DoesNotApply { hunk, .. } => Some(*hunk),
            _ => None,
        }
    }
}

/// How a hunk's old lines differ from the file where the hunk was looked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// A hunk that ends with `\ No newline at end of file` matches, but not at the end of the file.
    #[error(
        "it ends with `\\ No newline at end of file`, so it must match the last lines of the file, but its lines are at lines {first}-{last} of {file_lines}; drop the marker or {}",
        REREAD
    )]
    NotAtEnd {
        /// The 1-based file lines where the hunk's old lines are.
        first: usize,
        last: usize,
        file_lines: usize,
    },
    /// The first old line that differs from the file where the hunk was expected.
    #[error("line {line} should be {} but the file has {}; {advice}", quote(.expected), quote(.found))]
    LineDiffers {
        /// The 1-based file line.
        line: usize,
        expected: String,
        found: String,
        advice: Advice,
    },
    /// The hunk was expected to reach past the file's end.
    #[error(
        "line {line} should be {} but the file has only {file_lines} lines; {advice}",
        quote(.expected)
    )]
    PastEnd {
        /// The 1-based file line.
        line: usize,
        expected: String,
        file_lines: usize,
        advice: Advice,
    },
    /// The hunk matches where it was expected, but not at a place it may go.
    #[error("{advice}")]
    Unplaced { advice: Advice },
}

/// What to do about a hunk that does not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Advice {
    /// The file has changed since the patch was made.
    #[error("{}", REREAD)]
    Reread,
    /// The hunk's lines are in the file, but only above where the previous hunk ended, which
    /// re-reading the file alone would not fix.
    #[error(
        "its lines are only found at line {found}, above the end of hunk {previous} (line {previous_end}); hunks must be in file order and must not overlap"
    )]
    OutOfOrder {
        /// The 1-based file line where the hunk's lines are.
        found: usize,
        previous: usize,
        /// The file line the previous hunk ends at.
        previous_end: usize,
    },
}

/// " at line N", or nothing.
fn at_line(line: Option<usize>) -> String {
    line.map_or(String::new(), |line| format!(" at line {line}"))
}

/// A line for an error message: in backticks, cut when long, and named when empty.
fn quote(line: &str) -> String {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.is_empty() {
        "an empty line".to_owned()
    } else {
        format!("`{}`", shorten(line))
    }
}

/// `text` cut after [`SHOWN_CHARS`] characters, with an ellipsis.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or(text)),
        None => text.to_owned(),
    }
}
