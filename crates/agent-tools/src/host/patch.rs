//! Unified diffs as `git diff` (or `diff -u`) prints them: parsing a patch into per-file hunks
//! and applying one file's hunks to its text, all in memory.
//!
//! The `apply_patch` tool reads and writes the files; this module only turns text into text, so
//! that every rule about matching, line endings and the final newline can be tested without a
//! file system. Errors are strings meant for a model: they say where the problem is, what is
//! wrong and what to send instead.

/// What to send when the text has no file sections at all.
const NO_FILE_SECTIONS: &str = "the patch has no file sections: send a unified diff as `git diff` prints it, starting with `diff --git` or `---`/`+++` lines";

/// The hint that ends every "does not apply" error, since a stale view of the file is the usual cause.
const REREAD: &str = "re-read the file and make the patch against its current content";

/// The shape every hunk header must have, quoted in errors.
const HEADER_SHAPE: &str = "`@@ -START,COUNT +START,COUNT @@`";

/// Lines longer than this are cut in error messages, so that one huge line does not drown the rest.
const SHOWN_CHARS: usize = 200;

/// One file's part of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FilePatch {
    /// Path before, relative as written in the patch with the `a/` prefix stripped; None for a new file (/dev/null).
    pub(crate) old_path: Option<String>,
    /// Path after, `b/` prefix stripped; None for a deleted file (/dev/null).
    pub(crate) new_path: Option<String>,
    pub(crate) hunks: Vec<Hunk>,
    /// Whether the old file goes away when the paths differ: true for a git rename, false for
    /// a git copy and for a plain `diff -u` patch, whose differing names (`x.orig`, `x`) name
    /// one file.
    pub(crate) moves: bool,
}

/// One `@@` section of a file's patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// 1-based first old line as in the `@@` header; for an empty old side, the line after which
    /// the new lines go (0 for the top of the file).
    pub(crate) old_start: usize,
    pub(crate) old_len: usize,
    /// 1-based first new line as in the `@@` header (0 for an empty new side).
    pub(crate) new_start: usize,
    pub(crate) new_len: usize,
    /// The hunk's lines without their leading ` `, `-` or `+`. A trailing `\r` (from a patch of a
    /// CRLF file) is kept here and dealt with when applying.
    pub(crate) lines: Vec<HunkLine>,
    /// The old side's last line has no newline: `\ No newline at end of file` follows a context or removed line.
    pub(crate) old_missing_newline: bool,
    /// The new side's last line has no newline: `\ No newline at end of file` follows a context or added line.
    pub(crate) new_missing_newline: bool,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HunkLine {
    Context(String),
    Removed(String),
    Added(String),
}

impl HunkLine {
    fn text(&self) -> &str {
        match self {
            HunkLine::Context(text) | HunkLine::Removed(text) | HunkLine::Added(text) => text,
        }
    }
}

impl Hunk {
    /// The header as git writes it (a count of 1 is left out), for error messages.
    fn header(&self) -> String {
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
    fn anchor(&self) -> usize {
        if self.old_len == 0 {
            self.old_start
        } else {
            self.old_start.saturating_sub(1)
        }
    }
}

/// Parses a whole patch (one or more files). Errors are Strings written for an AI model to read:
/// lowercase, no trailing period, saying where (patch line number, 1-based) and what is wrong and what to send instead,
/// e.g. "patch line 7: hunk header `@@ -1,3 +1 @@` is malformed: expected `@@ -START,COUNT +START,COUNT @@`".
pub(crate) fn parse_patch(text: &str) -> Result<Vec<FilePatch>, String> {
    let parser = Parser {
        lines: split_patch_lines(text),
    };
    let mut files = Vec::new();
    let mut at = 0;
    while let Some(line) = parser.line(at) {
        if line.starts_with("diff --git ") {
            let (file, next) = parser.git_section(at)?;
            files.push(file);
            at = next;
        } else if parser.plain_header_at(at) {
            let (file, next) = parser.plain_section(at)?;
            files.push(file);
            at = next;
        } else if line.starts_with("diff --cc ") || line.starts_with("diff --combined ") {
            return Err(format!(
                "patch line {}: `{}` starts a combined diff of a merge, which is not supported: send a plain `git diff` of each file against one version",
                at + 1,
                shorten(line)
            ));
        } else if is_binary_marker(line) {
            return Err(binary_error(at));
        } else if line.starts_with("@@") {
            return Err(format!(
                "patch line {}: hunk header `{}` comes before any file header: put `--- a/PATH` and `+++ b/PATH` lines (or a `diff --git a/PATH b/PATH` line) before it",
                at + 1,
                shorten(line)
            ));
        } else {
            // Text outside file sections (a commit message, `Index:` lines, a mail signature) is
            // skipped, as `git apply` does.
            at += 1;
        }
    }
    if files.is_empty() {
        return Err(NO_FILE_SECTIONS.to_owned());
    }
    Ok(files)
}

/// Applies one file's hunks to `original` (None when the file does not exist) and returns the new content
/// (None when the patch deletes the file). Errors are Strings for a model, naming the hunk (1-based index and its header)
/// and, when context does not match, the first expected line that differs and what the file actually has there
/// (with the file line number), e.g.
/// "hunk 2 (`@@ -10,4 +10,5 @@`) does not apply: line 12 should be `    let x = 1;` but the file has `    let x = 2;`; re-read the file and make the patch against its current content".
pub(crate) fn apply_file_patch(
    patch: &FilePatch,
    original: Option<&str>,
) -> Result<Option<String>, String> {
    let base = match (&patch.old_path, &patch.new_path, original) {
        (None, None, _) => {
            return Err(
                "the patch names no file: its `---` and `+++` paths are both /dev/null".to_owned(),
            );
        }
        (None, Some(new), Some(_)) => {
            return Err(format!(
                "the patch creates {new} but it already exists; re-read it and make the patch against its current content, with `--- a/{new}` instead of `--- /dev/null`"
            ));
        }
        (None, Some(_), None) => "",
        (Some(old), new, None) => {
            return Err(match new {
                None => format!("the patch deletes {old} but it does not exist; check the path"),
                Some(new) if new != old => {
                    format!(
                        "the patch renames {old} to {new} but {old} does not exist; check the path"
                    )
                }
                Some(_) => format!(
                    "the patch modifies {old} but it does not exist; check the path, or create the file with `--- /dev/null` and `+++ b/{old}`"
                ),
            });
        }
        (Some(_), _, Some(text)) => text,
    };
    let creating = patch.old_path.is_none();
    let deleting = patch.new_path.is_none();
    let file = split_file(base);
    let eol = line_ending(&file, patch);
    let mut out: Vec<OutLine<'_>> = Vec::with_capacity(file.len());
    // The final-newline state of the file is kept unless a hunk reaching the end says otherwise.
    let mut missing_final_newline = file.last().is_some_and(|line| line.eol.is_empty());
    let mut cursor = 0;
    let mut offset: i128 = 0;

    for (index, hunk) in patch.hunks.iter().enumerate() {
        let number = index + 1;
        let old: Vec<&str> = hunk
            .lines
            .iter()
            .filter_map(|line| match line {
                HunkLine::Context(text) | HunkLine::Removed(text) => Some(text.as_str()),
                HunkLine::Added(_) => None,
            })
            .collect();
        if creating && !old.is_empty() {
            return Err(format!(
                "hunk {number} (`{}`) has context or removed lines, but the patch creates the file, so every line must be added with `+` and the header must start `@@ -0,0`",
                hunk.header()
            ));
        }
        if deleting
            && hunk
                .lines
                .iter()
                .any(|line| !matches!(line, HunkLine::Removed(_)))
        {
            return Err(format!(
                "hunk {number} (`{}`) keeps or adds lines, but the patch deletes the file, so every line must be removed with `-`",
                hunk.header()
            ));
        }

        let stated = hunk.anchor();
        let wanted = (stated as i128 + offset).max(cursor as i128);
        let expected = usize::try_from(wanted)
            .unwrap_or(usize::MAX)
            .min(file.len());
        let found = if hunk.old_missing_newline || hunk.new_missing_newline {
            // A hunk with a side that has no final newline ends where the file ends, so it can only
            // sit at the very end; this also places pure insertions at the end correctly.
            file.len()
                .checked_sub(old.len())
                .filter(|&at| at >= cursor && matches_at(&file, &old, at))
        } else if old.is_empty() {
            // Pure insertions have nothing to match, so they go where the header (and the offset) says.
            Some(expected)
        } else {
            find(&file, &old, cursor, expected)
        };
        let Some(at) = found else {
            return Err(mismatch_error(number, hunk, &file, &old, cursor, expected));
        };
        let end = at + old.len();
        copy_lines(&file, cursor, at, &mut out);
        let mut next = at;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(_) => {
                    // The file's own line is kept, so that its exact whitespace and line ending survive.
                    if let Some(kept) = file.get(next) {
                        out.push(OutLine {
                            body: kept.body,
                            eol: kept.eol,
                            origin: Some(next),
                        });
                    }
                    next += 1;
                }
                HunkLine::Removed(_) => next += 1,
                HunkLine::Added(text) => {
                    let body = text.strip_suffix('\r').unwrap_or(text);
                    out.push(OutLine {
                        body,
                        eol: "",
                        origin: None,
                    });
                }
            }
        }
        if end == file.len() {
            if hunk.new_missing_newline {
                missing_final_newline = true;
            } else if hunk.old_missing_newline {
                missing_final_newline = false;
            }
        }
        offset = at as i128 - stated as i128;
        cursor = end;
    }
    copy_lines(&file, cursor, file.len(), &mut out);

    if deleting {
        return match out.first() {
            None => Ok(None),
            Some(left) => {
                let line = left
                    .origin
                    .map_or(String::new(), |origin| format!(" at line {}", origin + 1));
                Err(format!(
                    "the patch deletes {} but the file has more than the patch removes: {} is still there{line}; {REREAD}",
                    patch.old_path.as_deref().unwrap_or("the file"),
                    quote(left.body)
                ))
            }
        };
    }

    let mut text = String::with_capacity(base.len() + 64);
    let last = out.len().saturating_sub(1);
    for (index, line) in out.iter().enumerate() {
        text.push_str(line.body);
        let ending = if index == last && missing_final_newline {
            ""
        } else if line.eol.is_empty() {
            eol
        } else {
            line.eol
        };
        text.push_str(ending);
    }
    Ok(Some(text))
}

/// One line of the file being patched, split from its line ending.
struct FileLine<'a> {
    body: &'a str,
    /// `"\r\n"`, `"\n"`, or empty for a last line without a newline.
    eol: &'a str,
}

/// One line of the result: a kept line of the file, or an added line of the patch.
struct OutLine<'a> {
    body: &'a str,
    /// Empty for added lines and for the old last line, which get the file's line ending when written.
    eol: &'a str,
    /// The 0-based line of the original file this line comes from, for error messages.
    origin: Option<usize>,
}

fn split_file(text: &str) -> Vec<FileLine<'_>> {
    text.split_inclusive('\n')
        .map(|piece| {
            if let Some(body) = piece.strip_suffix("\r\n") {
                FileLine { body, eol: "\r\n" }
            } else if let Some(body) = piece.strip_suffix('\n') {
                FileLine { body, eol: "\n" }
            } else {
                FileLine {
                    body: piece,
                    eol: "",
                }
            }
        })
        .collect()
}

/// The line ending for new lines: the one most of the file uses, or, when the file has no line
/// break at all, the one most of the patch's lines use.
fn line_ending(file: &[FileLine<'_>], patch: &FilePatch) -> &'static str {
    let crlf = file.iter().filter(|line| line.eol == "\r\n").count();
    let lf = file.iter().filter(|line| line.eol == "\n").count();
    if crlf + lf > 0 {
        return if crlf > lf { "\r\n" } else { "\n" };
    }
    let lines = patch.hunks.iter().flat_map(|hunk| &hunk.lines);
    let total = lines.clone().count();
    let cr = lines.filter(|line| line.text().ends_with('\r')).count();
    if cr * 2 > total { "\r\n" } else { "\n" }
}

fn copy_lines<'a>(file: &[FileLine<'a>], from: usize, to: usize, out: &mut Vec<OutLine<'a>>) {
    let kept = file.get(from..to).unwrap_or_default();
    out.extend(kept.iter().enumerate().map(|(index, line)| OutLine {
        body: line.body,
        eol: line.eol,
        origin: Some(from + index),
    }));
}

/// Whether a file line and a patch line are the same. Trailing whitespace is ignored because
/// tools and models often lose it, and a CRLF file's `\r` is trailing whitespace too.
fn same(file_line: &str, patch_line: &str) -> bool {
    file_line.trim_end() == patch_line.trim_end()
}

fn matches_at(file: &[FileLine<'_>], old: &[&str], at: usize) -> bool {
    old.iter().enumerate().all(|(index, want)| {
        file.get(at + index)
            .is_some_and(|have| same(have.body, want))
    })
}

/// The nearest position at or after `cursor` where all of `old` matches, looking at `expected`
/// first and then alternately above and below it.
fn find(file: &[FileLine<'_>], old: &[&str], cursor: usize, expected: usize) -> Option<usize> {
    let last = file.len().checked_sub(old.len())?;
    if last < cursor {
        return None;
    }
    let expected = expected.max(cursor).min(last);
    let reach = (expected - cursor).max(last - expected);
    for distance in 0..=reach {
        if let Some(at) = expected.checked_sub(distance).filter(|&at| at >= cursor)
            && matches_at(file, old, at)
        {
            return Some(at);
        }
        if distance > 0
            && let Some(at) = expected.checked_add(distance).filter(|&at| at <= last)
            && matches_at(file, old, at)
        {
            return Some(at);
        }
    }
    None
}

/// Explains why a hunk was found nowhere, comparing it with the file where it was expected.
fn mismatch_error(
    number: usize,
    hunk: &Hunk,
    file: &[FileLine<'_>],
    old: &[&str],
    cursor: usize,
    expected: usize,
) -> String {
    let lead = format!("hunk {number} (`{}`) does not apply", hunk.header());
    if (hunk.old_missing_newline || hunk.new_missing_newline)
        && let Some(at) = find(file, old, cursor, expected)
    {
        return format!(
            "{lead}: it ends with `\\ No newline at end of file`, so it must match the last lines of the file, but its lines are at lines {}-{} of {}; drop the marker or {REREAD}",
            at + 1,
            at + old.len(),
            file.len()
        );
    }
    // A match above the end of the previous hunk means the hunks are out of order or overlap,
    // which re-reading the file alone would not fix, so it is said as well.
    let advice = match (0..cursor)
        .find(|&at| at + old.len() <= file.len() && matches_at(file, old, at))
    {
        Some(at) => format!(
            "its lines are only found at line {}, above the end of hunk {} (line {cursor}); hunks must be in file order and must not overlap",
            at + 1,
            number.saturating_sub(1)
        ),
        None => REREAD.to_owned(),
    };
    for (index, want) in old.iter().enumerate() {
        let line = expected + index + 1;
        match file.get(expected + index) {
            Some(have) if same(have.body, want) => {}
            Some(have) => {
                return format!(
                    "{lead}: line {line} should be {} but the file has {}; {advice}",
                    quote(want),
                    quote(have.body)
                );
            }
            None => {
                return format!(
                    "{lead}: line {line} should be {} but the file has only {} lines; {advice}",
                    quote(want),
                    file.len()
                );
            }
        }
    }
    format!("{lead}: {advice}")
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

fn shorten(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or(text)),
        None => text.to_owned(),
    }
}

/// The patch's lines without their `\n`. A trailing `\r` stays, because in hunks it belongs to
/// the content of a CRLF file; header lines are read through [`Parser::line`], which drops it.
fn split_patch_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if text.is_empty() || text.ends_with('\n') {
        lines.pop();
    }
    lines
}

fn bare(line: &str) -> &str {
    line.strip_suffix('\r').unwrap_or(line)
}

fn is_binary_marker(line: &str) -> bool {
    (line.starts_with("Binary files ") && line.ends_with(" differ")) || line == "GIT binary patch"
}

fn binary_error(at: usize) -> String {
    format!(
        "patch line {}: binary patches are not supported: change text files only, or use write for the whole file",
        at + 1
    )
}

/// Reads a patch by line index (0-based; errors add 1).
struct Parser<'a> {
    lines: Vec<&'a str>,
}

/// What the extended header lines after `diff --git` say.
#[derive(Default)]
struct GitHeaders {
    created: bool,
    deleted: bool,
    mode_changed: bool,
    copied: bool,
    from: Option<String>,
    to: Option<String>,
}

impl<'a> Parser<'a> {
    /// Line `at` without a trailing `\r`, for reading headers.
    fn line(&self, at: usize) -> Option<&'a str> {
        self.lines.get(at).map(|line| bare(line))
    }

    fn plain_header_at(&self, at: usize) -> bool {
        self.line(at).is_some_and(|line| line.starts_with("--- "))
            && self
                .line(at + 1)
                .is_some_and(|line| line.starts_with("+++ "))
    }

    fn section_starts_at(&self, at: usize) -> bool {
        self.line(at)
            .is_some_and(|line| line.starts_with("diff --git "))
            || self.plain_header_at(at)
    }

    fn git_section(&self, at: usize) -> Result<(FilePatch, usize), String> {
        let first = self.line(at).unwrap_or_default();
        let names = first.strip_prefix("diff --git ").and_then(parse_git_names);
        let mut headers = GitHeaders::default();
        let mut next = at + 1;
        while let Some(line) = self.line(next) {
            if let Some(path) = line
                .strip_prefix("rename from ")
                .or_else(|| line.strip_prefix("copy from "))
            {
                headers.copied = line.starts_with("copy from ");
                headers.from = Some(header_path(path));
            } else if let Some(path) = line
                .strip_prefix("rename to ")
                .or_else(|| line.strip_prefix("copy to "))
            {
                headers.to = Some(header_path(path));
            } else if line.starts_with("new file mode ") {
                headers.created = true;
            } else if line.starts_with("deleted file mode ") {
                headers.deleted = true;
            } else if line.starts_with("old mode ") || line.starts_with("new mode ") {
                headers.mode_changed = true;
            } else if is_binary_marker(line) {
                return Err(binary_error(next));
            } else if !(line.starts_with("index ")
                || line.starts_with("similarity index ")
                || line.starts_with("dissimilarity index "))
            {
                break;
            }
            next += 1;
        }

        let sides = if self.line(next).is_some_and(|line| line.starts_with("--- ")) {
            let sides = self.side_paths(next)?;
            next += 2;
            Some(sides)
        } else {
            None
        };
        let (old_path, new_path) = match &sides {
            Some(sides) => sides.clone(),
            None => {
                let (old, new) = names.unzip();
                let old = if headers.created {
                    None
                } else {
                    headers.from.clone().or(old)
                };
                let new = if headers.deleted {
                    None
                } else {
                    headers.to.clone().or(new)
                };
                let unnamed =
                    (old.is_none() && !headers.created) || (new.is_none() && !headers.deleted);
                if unnamed || (old.is_none() && new.is_none()) {
                    return Err(format!(
                        "patch line {}: cannot read the file names in `{}`: expected `diff --git a/PATH b/PATH`",
                        at + 1,
                        shorten(first)
                    ));
                }
                (old, new)
            }
        };
        let name = display_name(&old_path, &new_path);
        let (hunks, next) = self.hunks(next, &name)?;
        if hunks.is_empty() {
            if sides.is_some() {
                return Err(no_hunks_error(at, &name));
            }
            let says_something = headers.created
                || headers.deleted
                || headers.mode_changed
                || headers.from.is_some()
                || headers.to.is_some();
            if !says_something {
                return Err(format!(
                    "patch line {}: `{}` is followed by no changes: add `--- a/PATH` and `+++ b/PATH` lines and `@@` hunks",
                    at + 1,
                    shorten(first)
                ));
            }
        }
        let moves = !headers.copied;
        Ok((
            FilePatch {
                old_path,
                new_path,
                hunks,
                moves,
            },
            next,
        ))
    }

    fn plain_section(&self, at: usize) -> Result<(FilePatch, usize), String> {
        let (old_path, new_path) = self.side_paths(at)?;
        let name = display_name(&old_path, &new_path);
        let (hunks, next) = self.hunks(at + 2, &name)?;
        if hunks.is_empty() {
            return Err(no_hunks_error(at, &name));
        }
        Ok((
            FilePatch {
                old_path,
                new_path,
                hunks,
                moves: false,
            },
            next,
        ))
    }

    /// The paths of a `---` line at `at` and the `+++` line after it.
    fn side_paths(&self, at: usize) -> Result<(Option<String>, Option<String>), String> {
        let minus = self.line(at).unwrap_or_default();
        let Some(plus) = self.line(at + 1).filter(|line| line.starts_with("+++ ")) else {
            return Err(format!(
                "patch line {}: `{}` is not followed by a `+++` line: each file needs a `--- OLD` line and then a `+++ NEW` line before its hunks",
                at + 1,
                shorten(minus)
            ));
        };
        let old = side_path(minus.get(4..).unwrap_or_default(), "a/", at)?;
        let new = side_path(plus.get(4..).unwrap_or_default(), "b/", at + 1)?;
        if old.is_none() && new.is_none() {
            return Err(format!(
                "patch line {}: both `---` and `+++` are /dev/null: name the file on at least one side",
                at + 1
            ));
        }
        Ok((old, new))
    }

    /// The hunks starting at `at`, and the index of the first line after them.
    fn hunks(&self, mut at: usize, name: &str) -> Result<(Vec<Hunk>, usize), String> {
        let mut hunks: Vec<Hunk> = Vec::new();
        let mut last_header = at;
        loop {
            // Blank lines between hunks are skipped, since editors and models add them.
            let header = self.skip_blank(at);
            if !self.line(header).is_some_and(|line| line.starts_with("@@")) {
                break;
            }
            let number = hunks.len() + 1;
            let (hunk, next) = self.hunk(header, number, name)?;
            if let Some(previous) = hunks.last() {
                if previous.old_missing_newline || previous.new_missing_newline {
                    return Err(format!(
                        "patch line {}: hunk {} of `{name}` ends with `\\ No newline at end of file`, so it must be the last hunk, but hunk {number} (`{}`) follows it",
                        header + 1,
                        number - 1,
                        hunk.header()
                    ));
                }
                let previous_end = previous.anchor() + previous.old_len;
                if hunk.anchor() < previous_end {
                    return Err(format!(
                        "patch line {}: hunk {number} (`{}`) of `{name}` starts before the end of hunk {} (old line {previous_end}): hunks of one file must be in file order and must not overlap; merge them or fix the line numbers",
                        header + 1,
                        hunk.header(),
                        number - 1
                    ));
                }
            }
            hunks.push(hunk);
            last_header = header;
            at = next;
        }
        // A hunk line right after a hunk whose counts are complete means the header undercounts;
        // without this check the extra lines would be silently dropped.
        if let Some(last) = hunks.last() {
            let after = self.skip_blank(at);
            if let Some(line) = self.line(after)
                && (line.starts_with(['+', '-', ' ']) && line != "-- ")
                && !self.section_starts_at(after)
            {
                return Err(self.count_error(last_header, hunks.len(), name, last));
            }
        }
        Ok((hunks, at))
    }

    fn skip_blank(&self, mut at: usize) -> usize {
        while self.line(at).is_some_and(str::is_empty) {
            at += 1;
        }
        at
    }

    /// One hunk whose header is at `at`, and the index of the first line after it. The header's
    /// counts decide where the hunk ends, as in `git apply`, so that a removed line starting with
    /// `--` is not mistaken for the next file's `---` line.
    fn hunk(&self, at: usize, number: usize, name: &str) -> Result<(Hunk, usize), String> {
        let header = self.line(at).unwrap_or_default();
        let Some((old_start, old_len, new_start, new_len)) = parse_hunk_header(header) else {
            return Err(format!(
                "patch line {}: hunk header `{}` is malformed: expected {HEADER_SHAPE}",
                at + 1,
                shorten(header)
            ));
        };
        for (side, start, len) in [("old", old_start, old_len), ("new", new_start, new_len)] {
            if start == 0 && len > 0 {
                return Err(format!(
                    "patch line {}: hunk header `{}` says the {side} side starts at line 0 but has {len} lines: line numbers start at 1, and 0 is only for an empty side (`-0,0` or `+0,0`)",
                    at + 1,
                    shorten(header)
                ));
            }
        }
        let mut hunk = Hunk {
            old_start,
            old_len,
            new_start,
            new_len,
            lines: Vec::new(),
            old_missing_newline: false,
            new_missing_newline: false,
        };
        let (mut old, mut new) = (0, 0);
        let mut next = at + 1;
        while old < old_len || new < new_len {
            let Some(raw) = self.lines.get(next) else {
                break;
            };
            let line = bare(raw);
            if line.starts_with("@@") || line.starts_with("diff --git ") {
                break;
            }
            let text = || raw.get(1..).unwrap_or_default().to_owned();
            let parsed = match line.as_bytes().first() {
                // Some tools strip the space of an empty context line.
                None => HunkLine::Context(String::new()),
                Some(b' ') => HunkLine::Context(text()),
                Some(b'-') => HunkLine::Removed(text()),
                Some(b'+') => HunkLine::Added(text()),
                Some(b'\\') => {
                    self.mark_missing_newline(&mut hunk, next)?;
                    next += 1;
                    continue;
                }
                // Models often drop the space before context lines; say so instead of counting.
                Some(_) => {
                    return Err(format!(
                        "patch line {}: hunk {number} (`{}`) of `{name}` needs {} more old and {} more new lines by its header, but {} does not start with ` `, `-` or `+`: start every context line with a space, or fix the header counts",
                        next + 1,
                        shorten(header),
                        old_len.saturating_sub(old),
                        new_len.saturating_sub(new),
                        quote(line)
                    ));
                }
            };
            let after_old_end = hunk.old_missing_newline && !matches!(parsed, HunkLine::Added(_));
            let after_new_end = hunk.new_missing_newline && !matches!(parsed, HunkLine::Removed(_));
            if after_old_end || after_new_end {
                return Err(format!(
                    "patch line {}: hunk {number} (`{}`) of `{name}` continues after `\\ No newline at end of file`: that marker may only follow the last line of the file",
                    next + 1,
                    shorten(header)
                ));
            }
            match parsed {
                HunkLine::Context(_) => {
                    old += 1;
                    new += 1;
                }
                HunkLine::Removed(_) => old += 1,
                HunkLine::Added(_) => new += 1,
            }
            hunk.lines.push(parsed);
            next += 1;
        }
        if old == old_len
            && new == new_len
            && self.line(next).is_some_and(|line| line.starts_with('\\'))
        {
            self.mark_missing_newline(&mut hunk, next)?;
            next += 1;
        }
        if old != old_len || new != new_len {
            return Err(self.count_error(at, number, name, &hunk));
        }
        Ok((hunk, next))
    }

    /// Records a `\ No newline at end of file` line at `at` for the side of the line before it.
    /// Any text after the backslash is accepted, since git translates the message.
    fn mark_missing_newline(&self, hunk: &mut Hunk, at: usize) -> Result<(), String> {
        match hunk.lines.last() {
            Some(HunkLine::Context(_)) => {
                hunk.old_missing_newline = true;
                hunk.new_missing_newline = true;
            }
            Some(HunkLine::Removed(_)) => hunk.old_missing_newline = true,
            Some(HunkLine::Added(_)) => hunk.new_missing_newline = true,
            None => {
                return Err(format!(
                    "patch line {}: `\\ No newline at end of file` must follow the line it is about, not start a hunk",
                    at + 1
                ));
            }
        }
        Ok(())
    }

    fn count_error(&self, at: usize, number: usize, name: &str, hunk: &Hunk) -> String {
        let header = shorten(self.line(at).unwrap_or_default());
        let (old, new) = self.count_body(at + 1);
        if (old, new) == (hunk.old_len, hunk.new_len) {
            return format!(
                "patch line {}: hunk {number} (`{header}`) of `{name}` does not match the line counts in its header: every line of a hunk must start with ` `, `-` or `+`",
                at + 1
            );
        }
        format!(
            "patch line {}: hunk {number} (`{header}`) of `{name}` has {old} old and {new} new lines but its header says {} and {}: fix the header counts (old = context + removed lines, new = context + added lines)",
            at + 1,
            hunk.old_len,
            hunk.new_len
        )
    }

    /// Counts the old and new lines of a hunk body starting at `at` as far as it looks like one,
    /// ignoring the header, to tell the model what it actually sent.
    fn count_body(&self, mut at: usize) -> (usize, usize) {
        let (mut old, mut new, mut blank) = (0, 0, 0);
        while let Some(line) = self.line(at) {
            if line.starts_with("@@") || self.section_starts_at(at) {
                break;
            }
            match line.as_bytes().first() {
                // Blank lines count only when more hunk lines follow, since trailing ones are separators.
                None => blank += 1,
                Some(b' ') => {
                    old += blank + 1;
                    new += blank + 1;
                    blank = 0;
                }
                Some(b'-') => {
                    old += blank + 1;
                    new += blank;
                    blank = 0;
                }
                Some(b'+') => {
                    old += blank;
                    new += blank + 1;
                    blank = 0;
                }
                Some(b'\\') => {}
                Some(_) => break,
            }
            at += 1;
        }
        (old, new)
    }
}

fn no_hunks_error(at: usize, name: &str) -> String {
    format!(
        "patch line {}: the section for `{name}` has no hunks: add `@@ -START,COUNT +START,COUNT @@` hunks with the changed lines",
        at + 1
    )
}

fn display_name(old: &Option<String>, new: &Option<String>) -> String {
    new.as_deref()
        .or(old.as_deref())
        .unwrap_or("the file")
        .to_owned()
}

/// Parses `@@ -START[,COUNT] +START[,COUNT] @@ anything`.
fn parse_hunk_header(line: &str) -> Option<(usize, usize, usize, usize)> {
    fn number(text: &str) -> Option<usize> {
        if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
        text.parse().ok()
    }
    fn range(text: &str) -> Option<(usize, usize)> {
        match text.split_once(',') {
            Some((start, len)) => Some((number(start)?, number(len)?)),
            None => Some((number(text)?, 1)),
        }
    }
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _section) = rest.split_once(" @@")?;
    let (old_start, old_len) = range(old)?;
    let (new_start, new_len) = range(new)?;
    Some((old_start, old_len, new_start, new_len))
}

/// The path on a `---` or `+++` line (after the marker): unquoted, without a `diff -u` timestamp
/// or git's trailing tab, and without `prefix`; None for /dev/null.
fn side_path(text: &str, prefix: &str, at: usize) -> Result<Option<String>, String> {
    let path = match text.strip_prefix('"').and(unquote(text)) {
        Some((path, _)) => path,
        None => text
            .split_once('\t')
            .map_or(text, |(path, _)| path)
            .trim_end()
            .to_owned(),
    };
    if path.is_empty() {
        return Err(format!(
            "patch line {}: the line has no file path: write `--- a/PATH` and `+++ b/PATH`",
            at + 1
        ));
    }
    if path == "/dev/null" {
        return Ok(None);
    }
    Ok(Some(strip_prefix(path, prefix)))
}

/// The path of a `rename from` / `copy to` line, which git writes without an `a/` or `b/` prefix.
fn header_path(text: &str) -> String {
    match unquote(text) {
        Some((path, _)) => path,
        None => text.to_owned(),
    }
}

fn strip_prefix(path: String, prefix: &str) -> String {
    match path.strip_prefix(prefix) {
        Some(rest) => rest.to_owned(),
        None => path,
    }
}

/// The two paths of a `diff --git` line (after `diff --git `), prefixes stripped.
fn parse_git_names(text: &str) -> Option<(String, String)> {
    let (old, new) = if text.starts_with('"') {
        let (old, after) = unquote(text)?;
        let after = after.strip_prefix(' ')?;
        let new = match unquote(after) {
            Some((new, _)) => new,
            None => after.to_owned(),
        };
        (old, new)
    } else if text.ends_with('"') {
        // Only the new name is quoted: it is the quoted string that runs to the end of the line.
        text.match_indices(" \"").find_map(|(space, _)| {
            let (new, after) = unquote(text.get(space + 1..)?)?;
            let old = text.get(..space)?;
            after.is_empty().then(|| (old.to_owned(), new))
        })?
    } else {
        split_plain_names(text)?
    };
    Some((strip_prefix(old, "a/"), strip_prefix(new, "b/")))
}

/// Splits `a/NAME b/NAME` when neither name is quoted. Git writes the same name twice unless the
/// file is renamed, so a middle space with equal halves is the separator even when names contain
/// spaces; renames have `rename from`/`rename to` lines that give the names anyway.
fn split_plain_names(text: &str) -> Option<(String, String)> {
    let middle = text.len() / 2;
    if text.len() % 2 == 1
        && text.as_bytes().get(middle) == Some(&b' ')
        && let (Some(old), Some(new)) = (text.get(..middle), text.get(middle + 1..))
        && old.strip_prefix("a/").unwrap_or(old) == new.strip_prefix("b/").unwrap_or(new)
    {
        return Some((old.to_owned(), new.to_owned()));
    }
    let space = text.find(" b/").or_else(|| text.find(' '))?;
    Some((
        text.get(..space)?.to_owned(),
        text.get(space + 1..)?.to_owned(),
    ))
}

/// Reads a C-style quoted string as git writes unusual paths (`"a/caf\303\251.txt"`), returning
/// it and the text after the closing quote; None when `text` is not a complete quoted string.
fn unquote(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let bytes = body.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                let rest = body.get(at + 1..)?;
                return Some((String::from_utf8_lossy(&out).into_owned(), rest));
            }
            b'\\' => {
                let escaped = *bytes.get(at + 1)?;
                at += 2;
                match escaped {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(0x07),
                    b'b' => out.push(0x08),
                    b'f' => out.push(0x0c),
                    b'v' => out.push(0x0b),
                    b'0'..=b'7' => {
                        let mut value = u32::from(escaped - b'0');
                        for _ in 0..2 {
                            match bytes.get(at) {
                                Some(&digit @ b'0'..=b'7') => {
                                    value = value * 8 + u32::from(digit - b'0');
                                    at += 1;
                                }
                                _ => break,
                            }
                        }
                        out.push(u8::try_from(value).unwrap_or(b'?'));
                    }
                    // `\\`, `\"` and anything unknown stand for the character itself.
                    other => out.push(other),
                }
            }
            _ => {
                out.push(byte);
                at += 1;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `git diff` of a 30-line file (`line 1` to `line 30`): line 3 changed, line 25 replaced by two lines.
    const TWO_HUNKS: &str = r"diff --git a/two.txt b/two.txt
index ac9837c..eed5a54 100644
--- a/two.txt
+++ b/two.txt
@@ -1,6 +1,6 @@
 line 1
 line 2
-line 3
+line three
 line 4
 line 5
 line 6
@@ -22,7 +22,8 @@ line 21
 line 22
 line 23
 line 24
-line 25
+line twenty-five
+line 25.5
 line 26
 line 27
 line 28
";

    /// `git diff --cached -M` of several changes at once: a final newline removed, a file deleted,
    /// a rename with a change, a new file, a final newline added and a pure rename.
    const MULTI: &str = r#"diff --git a/addnonl.txt b/addnonl.txt
index 66a52ee..0bfc124 100644
--- a/addnonl.txt
+++ b/addnonl.txt
@@ -1,2 +1,2 @@
 first
-second
+second
\ No newline at end of file
diff --git a/gone.rs b/gone.rs
deleted file mode 100644
index 1b7c1e7..0000000
--- a/gone.rs
+++ /dev/null
@@ -1,3 +0,0 @@
-fn main() {
-    println!("hi");
-}
diff --git a/movedit.txt b/movedit2.txt
similarity index 50%
rename from movedit.txt
rename to movedit2.txt
index 0fdf397..e5e1aed 100644
--- a/movedit.txt
+++ b/movedit2.txt
@@ -1,6 +1,6 @@
 a
 b
-c
+C changed
 d
 e
 f
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..94954ab
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
diff --git a/nonl.txt b/nonl.txt
index 0bfc124..ff6e6b1 100644
--- a/nonl.txt
+++ b/nonl.txt
@@ -1,2 +1,3 @@
 first
-second
\ No newline at end of file
+second
+third
diff --git a/moved.txt b/renamed.txt
similarity index 100%
rename from moved.txt
rename to renamed.txt
"#;

    /// `git diff` of a file without a final newline whose first line changed, so the marker
    /// follows a context line and covers both sides.
    const NO_NEWLINE_BOTH: &str = r"diff --git a/addnonl.txt b/addnonl.txt
index 0bfc124..cbd764b 100644
--- a/addnonl.txt
+++ b/addnonl.txt
@@ -1,2 +1,2 @@
-first
+FIRST
 second
\ No newline at end of file
";

    /// `git diff` of a CRLF file (with `core.autocrlf` off): every hunk line keeps its `\r`.
    const CRLF: &str = "diff --git a/crlf.txt b/crlf.txt\nindex 7fbf4d8..abc81d9 100644\n--- a/crlf.txt\n+++ b/crlf.txt\n@@ -1,4 +1,4 @@\n one\r\n-two\r\n+TWO\r\n three\r\n four\r\n";

    /// `git diff` of a new empty file and of a mode change: sections without hunks.
    const NO_HUNKS: &str = r"diff --git a/empty.txt b/empty.txt
new file mode 100644
index 0000000..e69de29
diff --git a/keep.txt b/keep.txt
old mode 100644
new mode 100755
";

    /// `diff -u old.txt new.txt` and `diff -u /dev/null new.txt`, with their timestamps.
    const DIFF_U: &str = "--- old.txt\t2024-01-02 03:04:05.000000000 +0000\n+++ new.txt\t2024-01-02 03:04:05.000000000 +0000\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n--- /dev/null\t2026-12-01 05:09:09.991597397 +0000\n+++ new.txt\t2024-01-02 03:04:05.000000000 +0000\n@@ -0,0 +1,3 @@\n+a\n+B\n+c\n";

    /// `git diff` of files whose names git quotes (non-ASCII, a tab) or ends with a tab (a space).
    const ODD_NAMES: &str = concat!(
        r#"diff --git "a/caf\303\251.txt" "b/caf\303\251.txt"
new file mode 100644
index 0000000..bca70f3
--- /dev/null
+++ "b/caf\303\251.txt"
@@ -0,0 +1 @@
+q
diff --git "a/tab\tname.txt" "b/tab\tname.txt"
new file mode 100644
index 0000000..1a9cc2b
--- /dev/null
+++ "b/tab\tname.txt"
@@ -0,0 +1 @@
+p
diff --git a/with space.txt b/with space.txt
index 587be6b..b77b4eb 100644
"#,
        "--- a/with space.txt\t\n+++ b/with space.txt\t\n@@ -1 +1,2 @@\n x\n+y\n",
    );

    /// Lines `line FROM` to `line TO`, each with a newline.
    fn numbered(from: usize, to: usize) -> String {
        (from..=to).map(|n| format!("line {n}\n")).collect()
    }

    fn parse_one(text: &str) -> FilePatch {
        let mut files = parse_patch(text).unwrap();
        assert_eq!(files.len(), 1, "{files:#?}");
        files.remove(0)
    }

    fn apply(text: &str, original: Option<&str>) -> Result<Option<String>, String> {
        apply_file_patch(&parse_one(text), original)
    }

    fn file<'a>(files: &'a [FilePatch], new_path: &str) -> &'a FilePatch {
        files
            .iter()
            .find(|file| file.new_path.as_deref().or(file.old_path.as_deref()) == Some(new_path))
            .unwrap()
    }

    fn two_hunks_result() -> String {
        numbered(1, 30)
            .replace("line 3\n", "line three\n")
            .replace("line 25\n", "line twenty-five\nline 25.5\n")
    }

    #[test]
    fn parses_a_modification_with_two_hunks() {
        let patch = parse_one(TWO_HUNKS);
        assert_eq!(patch.old_path.as_deref(), Some("two.txt"));
        assert_eq!(patch.new_path.as_deref(), Some("two.txt"));
        assert_eq!(patch.hunks.len(), 2);
        let second = &patch.hunks[1];
        assert_eq!(
            (
                second.old_start,
                second.old_len,
                second.new_start,
                second.new_len
            ),
            (22, 7, 22, 8)
        );
        assert_eq!(second.lines[3], HunkLine::Removed("line 25".into()));
        assert_eq!(second.lines[5], HunkLine::Added("line 25.5".into()));
        assert_eq!(second.header(), "@@ -22,7 +22,8 @@");
    }

    #[test]
    fn applies_a_modification_with_two_hunks() {
        let result = apply(TWO_HUNKS, Some(&numbered(1, 30))).unwrap();
        assert_eq!(result.as_deref(), Some(two_hunks_result().as_str()));
    }

    #[test]
    fn applies_hunks_moved_by_lines_added_above_and_between() {
        let original = format!(
            "{}{}extra a\nextra b\n{}",
            "top\n".repeat(5),
            numbered(1, 15),
            numbered(16, 30)
        );
        let expected = format!("{}{}", "top\n".repeat(5), two_hunks_result())
            .replace("line 15\n", "line 15\nextra a\nextra b\n");
        let result = apply(TWO_HUNKS, Some(&original)).unwrap();
        assert_eq!(result.as_deref(), Some(expected.as_str()));
    }

    #[test]
    fn applies_hunks_moved_up_by_lines_removed_above() {
        // Lines 10 to 19 are gone, so the second hunk sits ten lines above where its header says.
        let original = format!("{}{}", numbered(1, 9), numbered(20, 30));
        let expected = format!("{}{}", numbered(1, 9), numbered(20, 30))
            .replace("line 3\n", "line three\n")
            .replace("line 25\n", "line twenty-five\nline 25.5\n");
        let result = apply(TWO_HUNKS, Some(&original)).unwrap();
        assert_eq!(result.as_deref(), Some(expected.as_str()));
    }

    #[test]
    fn parses_several_files_with_renames_new_and_deleted_files() {
        let files = parse_patch(MULTI).unwrap();
        let summary: Vec<(Option<&str>, Option<&str>, usize)> = files
            .iter()
            .map(|file| {
                (
                    file.old_path.as_deref(),
                    file.new_path.as_deref(),
                    file.hunks.len(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (Some("addnonl.txt"), Some("addnonl.txt"), 1),
                (Some("gone.rs"), None, 1),
                (Some("movedit.txt"), Some("movedit2.txt"), 1),
                (None, Some("new.txt"), 1),
                (Some("nonl.txt"), Some("nonl.txt"), 1),
                (Some("moved.txt"), Some("renamed.txt"), 0),
            ]
        );
        let addnonl = &file(&files, "addnonl.txt").hunks[0];
        assert!(!addnonl.old_missing_newline && addnonl.new_missing_newline);
        let nonl = &file(&files, "nonl.txt").hunks[0];
        assert!(nonl.old_missing_newline && !nonl.new_missing_newline);
    }

    #[test]
    fn creates_a_new_file() {
        let files = parse_patch(MULTI).unwrap();
        let new = file(&files, "new.txt");
        assert_eq!(
            apply_file_patch(new, None).unwrap().as_deref(),
            Some("hello\nworld\n")
        );
        assert_eq!(
            apply_file_patch(new, Some("old\n")).unwrap_err(),
            "the patch creates new.txt but it already exists; re-read it and make the patch against its current content, with `--- a/new.txt` instead of `--- /dev/null`"
        );
    }

    #[test]
    fn deletes_a_file_only_when_the_patch_removes_all_of_it() {
        let files = parse_patch(MULTI).unwrap();
        let gone = file(&files, "gone.rs");
        let content = "fn main() {\n    println!(\"hi\");\n}\n";
        assert_eq!(apply_file_patch(gone, Some(content)).unwrap(), None);
        assert_eq!(
            apply_file_patch(gone, Some(&format!("{content}// more\n"))).unwrap_err(),
            "the patch deletes gone.rs but the file has more than the patch removes: `// more` is still there at line 4; re-read the file and make the patch against its current content"
        );
        assert_eq!(
            apply_file_patch(gone, None).unwrap_err(),
            "the patch deletes gone.rs but it does not exist; check the path"
        );
    }

    #[test]
    fn renames_with_and_without_changes() {
        let files = parse_patch(MULTI).unwrap();
        let pure = file(&files, "renamed.txt");
        let content = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";
        assert_eq!(
            apply_file_patch(pure, Some(content)).unwrap().as_deref(),
            Some(content)
        );
        assert_eq!(
            apply_file_patch(pure, None).unwrap_err(),
            "the patch renames moved.txt to renamed.txt but moved.txt does not exist; check the path"
        );
        let changed = file(&files, "movedit2.txt");
        let result = apply_file_patch(changed, Some("a\nb\nc\nd\ne\nf\n")).unwrap();
        assert_eq!(result.as_deref(), Some("a\nb\nC changed\nd\ne\nf\n"));
    }

    #[test]
    fn no_newline_marker_on_either_side() {
        let files = parse_patch(MULTI).unwrap();
        // The old side lacked the final newline and the new side has one.
        let added = apply_file_patch(file(&files, "nonl.txt"), Some("first\nsecond")).unwrap();
        assert_eq!(added.as_deref(), Some("first\nsecond\nthird\n"));
        // The new side drops the final newline.
        let dropped =
            apply_file_patch(file(&files, "addnonl.txt"), Some("first\nsecond\n")).unwrap();
        assert_eq!(dropped.as_deref(), Some("first\nsecond"));
        // Neither side has it.
        let both = apply(NO_NEWLINE_BOTH, Some("first\nsecond")).unwrap();
        assert_eq!(both.as_deref(), Some("FIRST\nsecond"));
        assert_eq!(
            apply(NO_NEWLINE_BOTH, Some("first\nsecond\nthird")).unwrap_err(),
            "hunk 1 (`@@ -1,2 +1,2 @@`) does not apply: it ends with `\\ No newline at end of file`, so it must match the last lines of the file, but its lines are at lines 1-2 of 3; drop the marker or re-read the file and make the patch against its current content"
        );
    }

    #[test]
    fn keeps_a_missing_final_newline_the_patch_does_not_mention() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n b\n+c\n";
        assert_eq!(
            apply(patch, Some("a\nb")).unwrap().as_deref(),
            Some("a\nb\nc")
        );
    }

    #[test]
    fn marker_must_follow_the_last_line() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n\\ No newline at end of file\n-b\n+c\n";
        assert_eq!(
            parse_patch(patch).unwrap_err(),
            "patch line 6: hunk 1 (`@@ -1,2 +1,2 @@`) of `f` continues after `\\ No newline at end of file`: that marker may only follow the last line of the file"
        );
    }

    #[test]
    fn crlf_file_patched_by_a_git_diff_keeps_crlf() {
        let patch = parse_one(CRLF);
        assert_eq!(patch.hunks[0].lines[1], HunkLine::Removed("two\r".into()));
        let result = apply_file_patch(&patch, Some("one\r\ntwo\r\nthree\r\nfour\r\n")).unwrap();
        assert_eq!(result.as_deref(), Some("one\r\nTWO\r\nthree\r\nfour\r\n"));
        // A new file has no line endings of its own, so it takes the patch's.
        let created = apply(
            "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\r\n+b\r\n",
            None,
        )
        .unwrap();
        assert_eq!(created.as_deref(), Some("a\r\nb\r\n"));
    }

    #[test]
    fn crlf_file_patched_by_an_lf_patch_gets_crlf_lines() {
        let patch =
            "--- a/crlf.txt\n+++ b/crlf.txt\n@@ -2,2 +2,3 @@\n two\n+two and a half\n three\n";
        let result = apply(patch, Some("one\r\ntwo\r\nthree\r\nfour\r\n")).unwrap();
        assert_eq!(
            result.as_deref(),
            Some("one\r\ntwo\r\ntwo and a half\r\nthree\r\nfour\r\n")
        );
        // A whole patch sent with CRLF line breaks reads the same.
        let result = apply(
            &patch.replace('\n', "\r\n"),
            Some("one\ntwo\nthree\nfour\n"),
        )
        .unwrap();
        assert_eq!(
            result.as_deref(),
            Some("one\ntwo\ntwo and a half\nthree\nfour\n")
        );
    }

    #[test]
    fn trailing_whitespace_differences_still_match() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n";
        let result = apply(patch, Some("a  \nb\t\nc \n")).unwrap();
        assert_eq!(result.as_deref(), Some("a  \nB\nc \n"));
    }

    #[test]
    fn context_mismatch_names_the_first_differing_line() {
        let original = numbered(1, 30).replace("line 24\n", "line 24 changed\n");
        assert_eq!(
            apply(TWO_HUNKS, Some(&original)).unwrap_err(),
            "hunk 2 (`@@ -22,7 +22,8 @@`) does not apply: line 24 should be `line 24` but the file has `line 24 changed`; re-read the file and make the patch against its current content"
        );
        let original = numbered(1, 30).replace("line 2\n", "\n");
        assert_eq!(
            apply(TWO_HUNKS, Some(&original)).unwrap_err(),
            "hunk 1 (`@@ -1,6 +1,6 @@`) does not apply: line 2 should be `line 2` but the file has an empty line; re-read the file and make the patch against its current content"
        );
    }

    #[test]
    fn hunk_found_nowhere_in_a_short_file() {
        assert_eq!(
            apply(TWO_HUNKS, Some(&numbered(1, 10))).unwrap_err(),
            "hunk 2 (`@@ -22,7 +22,8 @@`) does not apply: line 11 should be `line 22` but the file has only 10 lines; re-read the file and make the patch against its current content"
        );
    }

    #[test]
    fn hunk_found_only_above_the_previous_one() {
        let patch = "--- a/f\n+++ b/f\n@@ -10,3 +10,3 @@\n line 10\n-line 11\n+eleven\n line 12\n@@ -20,3 +20,3 @@\n line 2\n-line 3\n+three\n line 4\n";
        assert_eq!(
            apply(patch, Some(&numbered(1, 30))).unwrap_err(),
            "hunk 2 (`@@ -20,3 +20,3 @@`) does not apply: line 20 should be `line 2` but the file has `line 20`; its lines are only found at line 2, above the end of hunk 1 (line 12); hunks must be in file order and must not overlap"
        );
    }

    #[test]
    fn overlapping_hunk_headers_are_rejected() {
        let patch =
            "--- a/f\n+++ b/f\n@@ -10,3 +10,3 @@\n a\n-b\n+c\n d\n@@ -11,1 +11,1 @@\n-x\n+y\n";
        assert_eq!(
            parse_patch(patch).unwrap_err(),
            "patch line 8: hunk 2 (`@@ -11 +11 @@`) of `f` starts before the end of hunk 1 (old line 12): hunks of one file must be in file order and must not overlap; merge them or fix the line numbers"
        );
    }

    #[test]
    fn modifying_a_missing_file_is_an_error() {
        assert_eq!(
            apply(TWO_HUNKS, None).unwrap_err(),
            "the patch modifies two.txt but it does not exist; check the path, or create the file with `--- /dev/null` and `+++ b/two.txt`"
        );
    }

    #[test]
    fn malformed_hunk_header() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,x @@\n a\n";
        assert_eq!(
            parse_patch(patch).unwrap_err(),
            "patch line 3: hunk header `@@ -1,3 +1,x @@` is malformed: expected `@@ -START,COUNT +START,COUNT @@`"
        );
        let bare = "--- a/f\n+++ b/f\n@@\n-a\n+b\n";
        assert_eq!(
            parse_patch(bare).unwrap_err(),
            "patch line 3: hunk header `@@` is malformed: expected `@@ -START,COUNT +START,COUNT @@`"
        );
        let zero = "--- a/f\n+++ b/f\n@@ -0,1 +1 @@\n-a\n+b\n";
        assert_eq!(
            parse_patch(zero).unwrap_err(),
            "patch line 3: hunk header `@@ -0,1 +1 @@` says the old side starts at line 0 but has 1 lines: line numbers start at 1, and 0 is only for an empty side (`-0,0` or `+0,0`)"
        );
    }

    #[test]
    fn a_count_of_one_may_be_left_out() {
        let patch = parse_one("--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n+B\n");
        assert_eq!((patch.hunks[0].old_start, patch.hunks[0].old_len), (2, 1));
        assert_eq!(
            apply_file_patch(&patch, Some("a\nb\nc\n"))
                .unwrap()
                .as_deref(),
            Some("a\nB\nc\n")
        );
    }

    #[test]
    fn applies_a_diff_without_context() {
        // `git diff -U0`: line 5 removed, a line inserted after line 8.
        let patch = r"diff --git a/u0.txt b/u0.txt
index fa2da6e..3dfde07 100644
--- a/u0.txt
+++ b/u0.txt
@@ -5 +4,0 @@ line 4
-line 5
@@ -8,0 +8 @@ line 8
+line 8.5
";
        let expected = numbered(1, 10)
            .replace("line 5\n", "")
            .replace("line 8\n", "line 8\nline 8.5\n");
        assert_eq!(
            apply(patch, Some(&numbered(1, 10))).unwrap().as_deref(),
            Some(expected.as_str())
        );
    }

    #[test]
    fn context_line_without_its_space_is_named() {
        let patch =
            "--- a/f.rs\n+++ b/f.rs\n@@ -1,3 +1,3 @@\nfn main() {\n-    old();\n+    new();\n}\n";
        assert_eq!(
            parse_patch(patch).unwrap_err(),
            "patch line 4: hunk 1 (`@@ -1,3 +1,3 @@`) of `f.rs` needs 3 more old and 3 more new lines by its header, but `fn main() {` does not start with ` `, `-` or `+`: start every context line with a space, or fix the header counts"
        );
    }

    #[test]
    fn count_mismatch_names_the_hunk() {
        let too_few = "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\ndiff --git a/g b/g\n";
        assert_eq!(
            parse_patch(too_few).unwrap_err(),
            "patch line 3: hunk 1 (`@@ -1,4 +1,4 @@`) of `f` has 3 old and 3 new lines but its header says 4 and 4: fix the header counts (old = context + removed lines, new = context + added lines)"
        );
        let too_many = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n+C\n c\n";
        assert_eq!(
            parse_patch(too_many).unwrap_err(),
            "patch line 3: hunk 1 (`@@ -1,3 +1,3 @@`) of `f` has 3 old and 4 new lines but its header says 3 and 3: fix the header counts (old = context + removed lines, new = context + added lines)"
        );
        let extra_after = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n c\n";
        assert_eq!(
            parse_patch(extra_after).unwrap_err(),
            "patch line 3: hunk 1 (`@@ -1,2 +1,2 @@`) of `f` has 3 old and 3 new lines but its header says 2 and 2: fix the header counts (old = context + removed lines, new = context + added lines)"
        );
    }

    #[test]
    fn empty_patch_and_patch_without_files() {
        let expected = "the patch has no file sections: send a unified diff as `git diff` prints it, starting with `diff --git` or `---`/`+++` lines";
        assert_eq!(parse_patch("").unwrap_err(), expected);
        assert_eq!(parse_patch("\n\n").unwrap_err(), expected);
        assert_eq!(
            parse_patch("please change line 3 to say hello\n").unwrap_err(),
            expected
        );
    }

    #[test]
    fn hunk_without_file_header_is_an_error() {
        assert_eq!(
            parse_patch("@@ -1 +1 @@\n-a\n+b\n").unwrap_err(),
            "patch line 1: hunk header `@@ -1 +1 @@` comes before any file header: put `--- a/PATH` and `+++ b/PATH` lines (or a `diff --git a/PATH b/PATH` line) before it"
        );
        assert_eq!(
            parse_patch("--- a/f\n@@ -1 +1 @@\n-a\n+b\n").unwrap_err(),
            "patch line 2: hunk header `@@ -1 +1 @@` comes before any file header: put `--- a/PATH` and `+++ b/PATH` lines (or a `diff --git a/PATH b/PATH` line) before it"
        );
    }

    #[test]
    fn file_header_without_hunks_is_an_error() {
        assert_eq!(
            parse_patch("--- a/f\n+++ b/f\n").unwrap_err(),
            "patch line 1: the section for `f` has no hunks: add `@@ -START,COUNT +START,COUNT @@` hunks with the changed lines"
        );
        assert_eq!(
            parse_patch("diff --git a/f b/f\n--- a/f\n").unwrap_err(),
            "patch line 2: `--- a/f` is not followed by a `+++` line: each file needs a `--- OLD` line and then a `+++ NEW` line before its hunks"
        );
    }

    #[test]
    fn binary_patches_are_rejected() {
        let patch = "diff --git a/img.png b/img.png\nindex 1234567..89abcde 100644\nBinary files a/img.png and b/img.png differ\n";
        assert_eq!(
            parse_patch(patch).unwrap_err(),
            "patch line 3: binary patches are not supported: change text files only, or use write for the whole file"
        );
    }

    #[test]
    fn plain_diff_u_with_timestamps() {
        let files = parse_patch(DIFF_U).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].old_path.as_deref(), Some("old.txt"));
        assert_eq!(files[0].new_path.as_deref(), Some("new.txt"));
        assert_eq!(
            apply_file_patch(&files[0], Some("a\nb\nc\n"))
                .unwrap()
                .as_deref(),
            Some("a\nB\nc\n")
        );
        assert_eq!(files[1].old_path, None);
        assert_eq!(
            apply_file_patch(&files[1], None).unwrap().as_deref(),
            Some("a\nB\nc\n")
        );
    }

    #[test]
    fn quoted_and_spaced_paths() {
        let files = parse_patch(ODD_NAMES).unwrap();
        let paths: Vec<Option<&str>> = files.iter().map(|file| file.new_path.as_deref()).collect();
        assert_eq!(
            paths,
            [
                Some("café.txt"),
                Some("tab\tname.txt"),
                Some("with space.txt")
            ]
        );
        assert_eq!(files[2].old_path.as_deref(), Some("with space.txt"));
        assert_eq!(
            apply_file_patch(&files[2], Some("x\n")).unwrap().as_deref(),
            Some("x\ny\n")
        );
    }

    #[test]
    fn sections_without_hunks() {
        let files = parse_patch(NO_HUNKS).unwrap();
        assert_eq!(
            files,
            [
                FilePatch {
                    old_path: None,
                    new_path: Some("empty.txt".into()),
                    hunks: vec![],
                    moves: true,
                },
                FilePatch {
                    old_path: Some("keep.txt".into()),
                    new_path: Some("keep.txt".into()),
                    hunks: vec![],
                    moves: true,
                },
            ]
        );
        assert_eq!(
            apply_file_patch(&files[0], None).unwrap().as_deref(),
            Some("")
        );
        assert_eq!(
            apply_file_patch(&files[1], Some("x\n")).unwrap().as_deref(),
            Some("x\n")
        );
    }

    #[test]
    fn empty_line_in_a_hunk_is_empty_context() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n";
        let parsed = parse_one(patch);
        assert_eq!(parsed.hunks[0].lines[1], HunkLine::Context(String::new()));
        assert_eq!(
            apply_file_patch(&parsed, Some("a\n\nb\n"))
                .unwrap()
                .as_deref(),
            Some("a\n\nB\n")
        );
    }

    #[test]
    fn blank_lines_between_hunks_and_text_around_files_are_skipped() {
        let patch = format!(
            "From 1234 Mon Sep 17 00:00:00 2001\nSubject: change\n\n---\n two.txt | 3 ++-\n\n{}\n\n-- \n2.47.3\n",
            TWO_HUNKS.replace("@@ -22,7", "\n@@ -22,7")
        );
        let result = apply(&patch, Some(&numbered(1, 30))).unwrap();
        assert_eq!(result.as_deref(), Some(two_hunks_result().as_str()));
    }

    #[test]
    fn removed_lines_that_look_like_file_headers_are_hunk_lines() {
        let patch = "--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,3 @@\n title\n--- x\n+++ y\n end\n";
        let result = apply(patch, Some("title\n-- x\nend\n")).unwrap();
        assert_eq!(result.as_deref(), Some("title\n++ y\nend\n"));
    }

    #[test]
    fn never_panics_on_cut_or_mangled_patches() {
        let fixtures = [
            TWO_HUNKS,
            MULTI,
            NO_NEWLINE_BOTH,
            CRLF,
            NO_HUNKS,
            DIFF_U,
            ODD_NAMES,
        ];
        let content = numbered(1, 30);
        let originals = [
            None,
            Some(""),
            Some("x"),
            Some(content.as_str()),
            Some("a\r\nb\r\n"),
        ];
        let try_all = |text: &str| {
            if let Ok(files) = parse_patch(text) {
                for file in &files {
                    for original in originals {
                        let _ = apply_file_patch(file, original);
                    }
                }
            }
        };
        for fixture in fixtures {
            for (cut, _) in fixture.char_indices() {
                try_all(&fixture[..cut]);
                try_all(&fixture[cut..]);
            }
            let lines: Vec<&str> = fixture.split('\n').collect();
            for index in 0..lines.len() {
                let mut without = lines.clone();
                without.remove(index);
                try_all(&without.join("\n"));
                for first in [" ", "-", "+", "\\", "@", "x", "\"", ""] {
                    let mut changed: Vec<String> =
                        lines.iter().map(|line| (*line).to_owned()).collect();
                    let rest = lines[index].get(1..).unwrap_or_default();
                    changed[index] = format!("{first}{rest}");
                    try_all(&changed.join("\n"));
                }
            }
        }
        for odd in [
            "@@ -99999999999999999999,1 +1 @@",
            "diff --git \"a/x",
            "diff --git \"a/\\",
            "--- \"\n+++ \"",
        ] {
            try_all(&format!("--- a/f\n+++ b/f\n{odd}\n-a\n+b\n"));
            try_all(odd);
        }
        // Hunks built by hand may disagree with their own headers.
        let odd = FilePatch {
            old_path: Some("f".into()),
            new_path: Some("f".into()),
            moves: true,
            hunks: vec![Hunk {
                old_start: usize::MAX,
                old_len: 0,
                new_start: 0,
                new_len: usize::MAX,
                lines: vec![
                    HunkLine::Removed("line 30".into()),
                    HunkLine::Added("x".into()),
                ],
                old_missing_newline: true,
                new_missing_newline: true,
            }],
        };
        for original in originals {
            let _ = apply_file_patch(&odd, original);
        }
    }
}
