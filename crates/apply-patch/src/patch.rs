//! The parsed form of a patch: files, their hunks and the hunks' lines.

/// One file's part of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// Path before, relative as written in the patch with the `a/` prefix stripped; None for a new file (/dev/null).
    pub old_path: Option<String>,
    /// Path after, `b/` prefix stripped; None for a deleted file (/dev/null).
    pub new_path: Option<String>,
    /// The hunks, in file order.
    pub hunks: Vec<Hunk>,
    /// Whether the old file goes away when the paths differ: true for a git rename, false for
    /// a git copy and for a plain `diff -u` patch, whose differing names (`x.orig`, `x`) name
    /// one file.
    pub moves: bool,
}

/// One `@@` section of a file's patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// 1-based first old line as in the `@@` header; for an empty old side, the line after which
    /// the new lines go (0 for the top of the file).
    pub old_start: usize,
    /// The number of old lines (context and removed) the header announces.
    pub old_len: usize,
    /// 1-based first new line as in the `@@` header (0 for an empty new side).
    pub new_start: usize,
    /// The number of new lines (context and added) the header announces.
    pub new_len: usize,
    /// The hunk's lines without their leading ` `, `-` or `+`. A trailing `\r` (from a patch of a
    /// CRLF file) is kept here and dealt with when applying.
    pub lines: Vec<HunkLine>,
    /// The old side's last line has no newline: `\ No newline at end of file` follows a context or removed line.
    pub old_missing_newline: bool,
    /// The new side's last line has no newline: `\ No newline at end of file` follows a context or added line.
    pub new_missing_newline: bool,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// A line both sides have (` `).
    Context(String),
    /// A line only the old side has (`-`).
    Removed(String),
    /// A line only the new side has (`+`).
    Added(String),
}

impl HunkLine {
    /// The line's text without its leading ` `, `-` or `+`.
    pub fn text(&self) -> &str {
        match self {
            HunkLine::Context(text) | HunkLine::Removed(text) | HunkLine::Added(text) => text,
        }
    }
}

impl Hunk {
    /// The header as git writes it (a count of 1 is left out), for error messages.
    pub fn header(&self) -> String {
        fn side(sign: char, start: usize, len: usize) -> String {
            if len == 1 {
                format!("{sign}{start}")
            } else {
                format!("{sign}{start},{len}")
            }
        }
        format!(
            "@@ {} {} @@",
            side('-', self.old_start, self.old_len),
            side('+', self.new_start, self.new_len)
        )
    }

    /// Where the old lines begin, as a 0-based index into the file's lines. For an empty old side
    /// the header names the line after which to insert, which is the same number as an index.
    pub(crate) fn anchor(&self) -> usize {
        if self.old_len == 0 {
            self.old_start
        } else {
            self.old_start.saturating_sub(1)
        }
    }
}
