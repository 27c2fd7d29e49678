//! Reading a patch: file sections (`diff --git` with its extended headers, or plain `---`/`+++`
//! lines) and their `@@` hunks, leniently where models and tools commonly differ from git.

use crate::error::{ParseError, Side};
use crate::patch::{FilePatch, Hunk, HunkLine};

/// Parses a whole patch (one or more files). An error names the 1-based patch line and says
/// what is wrong and what to send instead, e.g. "patch line 7: hunk header `@@ -1,3 +1 @@` is
/// malformed: expected `@@ -START,COUNT +START,COUNT @@`".
pub fn parse_patch(text: &str) -> Result<Vec<FilePatch>, ParseError> {
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
            return Err(ParseError::CombinedDiff {
                line: at + 1,
                text: line.to_owned(),
            });
        } else if is_binary_marker(line) {
            return Err(ParseError::Binary { line: at + 1 });
        } else if line.starts_with("@@") {
            return Err(ParseError::HunkBeforeFileHeader {
                line: at + 1,
                header: line.to_owned(),
            });
        } else {
            // Text outside file sections (a commit message, `Index:` lines, a mail signature) is
            // skipped, as `git apply` does.
            at += 1;
        }
    }
    if files.is_empty() {
        return Err(ParseError::NoFileSections);
    }
    Ok(files)
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

    fn git_section(&self, at: usize) -> Result<(FilePatch, usize), ParseError> {
        let first = self.line(at).unwrap_or_default();
        let raw_names = first.strip_prefix("diff --git ").and_then(parse_git_names);
        // Prefixes other than `a/` and `b/` (`git diff --src-prefix=x/ --dst-prefix=y/`) are
        // read from the header, whose two names differ only in them, as `git apply` strips
        // the first component of each path.
        let custom = raw_names
            .as_ref()
            .and_then(|(old, new)| custom_prefixes(old, new));
        let unprefix = |path: String| match &custom {
            Some((old, new)) => match path
                .strip_prefix(old.as_str())
                .or_else(|| path.strip_prefix(new.as_str()))
            {
                Some(rest) => rest.to_owned(),
                None => path,
            },
            None => strip_side(path),
        };
        let names = raw_names.map(|(old, new)| (unprefix(old), unprefix(new)));
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
                return Err(ParseError::Binary { line: next + 1 });
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
            let sides = match &custom {
                Some(_) => (sides.0.map(&unprefix), sides.1.map(&unprefix)),
                None => sides,
            };
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
                    return Err(ParseError::UnreadableGitNames {
                        line: at + 1,
                        text: first.to_owned(),
                    });
                }
                (old, new)
            }
        };
        let name = display_name(&old_path, &new_path);
        let (hunks, next) = self.hunks(next, &name)?;
        if hunks.is_empty() {
            if sides.is_some() {
                return Err(ParseError::NoHunks { line: at + 1, name });
            }
            let says_something = headers.created
                || headers.deleted
                || headers.mode_changed
                || headers.from.is_some()
                || headers.to.is_some();
            if !says_something {
                return Err(ParseError::NoChanges {
                    line: at + 1,
                    text: first.to_owned(),
                });
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

    fn plain_section(&self, at: usize) -> Result<(FilePatch, usize), ParseError> {
        let (old_path, new_path) = self.side_paths(at)?;
        let name = display_name(&old_path, &new_path);
        let (hunks, next) = self.hunks(at + 2, &name)?;
        if hunks.is_empty() {
            return Err(ParseError::NoHunks { line: at + 1, name });
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
    fn side_paths(&self, at: usize) -> Result<(Option<String>, Option<String>), ParseError> {
        let minus = self.line(at).unwrap_or_default();
        let Some(plus) = self.line(at + 1).filter(|line| line.starts_with("+++ ")) else {
            return Err(ParseError::MissingPlusLine {
                line: at + 1,
                text: minus.to_owned(),
            });
        };
        let old = side_path(minus.get(4..).unwrap_or_default(), at)?;
        let new = side_path(plus.get(4..).unwrap_or_default(), at + 1)?;
        if old.is_none() && new.is_none() {
            return Err(ParseError::BothDevNull { line: at + 1 });
        }
        Ok((old, new))
    }

    /// The hunks starting at `at`, and the index of the first line after them.
    fn hunks(&self, mut at: usize, name: &str) -> Result<(Vec<Hunk>, usize), ParseError> {
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
                    return Err(ParseError::HunkAfterMissingNewline {
                        line: header + 1,
                        name: name.to_owned(),
                        previous: number - 1,
                        hunk: number,
                        header: hunk.header(),
                    });
                }
                let previous_end = previous.anchor() + previous.old_len;
                if hunk.anchor() < previous_end {
                    return Err(ParseError::HunksOverlap {
                        line: header + 1,
                        hunk: number,
                        header: hunk.header(),
                        name: name.to_owned(),
                        previous: number - 1,
                        previous_end,
                    });
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
    fn hunk(&self, at: usize, number: usize, name: &str) -> Result<(Hunk, usize), ParseError> {
        let header = self.line(at).unwrap_or_default();
        let Some((old_start, old_len, new_start, new_len)) = parse_hunk_header(header) else {
            return Err(ParseError::MalformedHunkHeader {
                line: at + 1,
                header: header.to_owned(),
            });
        };
        for (side, start, len) in [
            (Side::Old, old_start, old_len),
            (Side::New, new_start, new_len),
        ] {
            if start == 0 && len > 0 {
                return Err(ParseError::ZeroStart {
                    line: at + 1,
                    header: header.to_owned(),
                    side,
                    len,
                });
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
                    return Err(ParseError::NotAHunkLine {
                        line: next + 1,
                        hunk: number,
                        header: header.to_owned(),
                        name: name.to_owned(),
                        old_left: old_len.saturating_sub(old),
                        new_left: new_len.saturating_sub(new),
                        text: line.to_owned(),
                    });
                }
            };
            let after_old_end = hunk.old_missing_newline && !matches!(parsed, HunkLine::Added(_));
            let after_new_end = hunk.new_missing_newline && !matches!(parsed, HunkLine::Removed(_));
            if after_old_end || after_new_end {
                return Err(ParseError::LineAfterMissingNewline {
                    line: next + 1,
                    hunk: number,
                    header: header.to_owned(),
                    name: name.to_owned(),
                });
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
    fn mark_missing_newline(&self, hunk: &mut Hunk, at: usize) -> Result<(), ParseError> {
        match hunk.lines.last() {
            Some(HunkLine::Context(_)) => {
                hunk.old_missing_newline = true;
                hunk.new_missing_newline = true;
            }
            Some(HunkLine::Removed(_)) => hunk.old_missing_newline = true,
            Some(HunkLine::Added(_)) => hunk.new_missing_newline = true,
            None => {
                return Err(ParseError::MissingNewlineFirst { line: at + 1 });
            }
        }
        Ok(())
    }

    fn count_error(&self, at: usize, number: usize, name: &str, hunk: &Hunk) -> ParseError {
        let header = self.line(at).unwrap_or_default().to_owned();
        let (old, new) = self.count_body(at + 1);
        if (old, new) == (hunk.old_len, hunk.new_len) {
            return ParseError::UnreadableHunkLines {
                line: at + 1,
                hunk: number,
                header,
                name: name.to_owned(),
            };
        }
        ParseError::CountMismatch {
            line: at + 1,
            hunk: number,
            header,
            name: name.to_owned(),
            old,
            new,
            header_old: hunk.old_len,
            header_new: hunk.new_len,
        }
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
fn side_path(text: &str, at: usize) -> Result<Option<String>, ParseError> {
    let path = match text.strip_prefix('"').and(unquote(text)) {
        Some((path, _)) => path,
        None => text
            .split_once('\t')
            .map_or(text, |(path, _)| path)
            .trim_end()
            .to_owned(),
    };
    if path.is_empty() {
        return Err(ParseError::NoPath { line: at + 1 });
    }
    if path == "/dev/null" {
        return Ok(None);
    }
    Ok(Some(strip_side(path)))
}

/// The path of a `rename from` / `copy to` line, which git writes without an `a/` or `b/` prefix.
fn header_path(text: &str) -> String {
    match unquote(text) {
        Some((path, _)) => path,
        None => text.to_owned(),
    }
}

/// A path without git's side prefix. Either side may carry either prefix: `git diff -R`
/// swaps them (`--- b/f`, `+++ a/f`), and `git apply` takes that as it takes the usual order.
fn strip_side(path: String) -> String {
    match side_name(&path) {
        Some(rest) => rest.to_owned(),
        None => path,
    }
}

/// The name after an `a/` or `b/` prefix, if the path has one.
fn side_name(path: &str) -> Option<&str> {
    path.strip_prefix("a/").or_else(|| path.strip_prefix("b/"))
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
    Some((old, new))
}

/// The two prefixes of a `diff --git` header written with prefixes other than `a/` and `b/`:
/// both names have a first component, those differ, and the rest is the same name. `None`
/// for git's usual prefixes, for `--no-prefix` (`src/x src/x`), and for a rename.
fn custom_prefixes(old: &str, new: &str) -> Option<(String, String)> {
    if side_name(old).is_some() || side_name(new).is_some() {
        return None;
    }
    let (old_first, old_rest) = old.split_once('/')?;
    let (new_first, new_rest) = new.split_once('/')?;
    (old_first != new_first && old_rest == new_rest && !old_rest.is_empty())
        .then(|| (format!("{old_first}/"), format!("{new_first}/")))
}

/// Splits `a/NAME b/NAME` when neither name is quoted. Git writes the same name twice unless the
/// file is renamed, so a middle space with equal halves is the separator even when names contain
/// spaces; renames have `rename from`/`rename to` lines that give the names anyway.
fn split_plain_names(text: &str) -> Option<(String, String)> {
    let middle = text.len() / 2;
    if text.len() % 2 == 1
        && text.as_bytes().get(middle) == Some(&b' ')
        && let (Some(old), Some(new)) = (text.get(..middle), text.get(middle + 1..))
        && side_name(old).unwrap_or(old) == side_name(new).unwrap_or(new)
    {
        return Some((old.to_owned(), new.to_owned()));
    }
    let space = text
        .find(" b/")
        .or_else(|| text.find(" a/"))
        .or_else(|| text.find(' '))?;
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
    use crate::fixtures::*;
    use crate::*;

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
    fn errors_are_values_that_name_their_patch_line() {
        let error = parse_patch("--- a/f\n+++ b/f\n@@ -1,3 +1,x @@\n a\n").unwrap_err();
        assert_eq!(
            error,
            ParseError::MalformedHunkHeader {
                line: 3,
                header: "@@ -1,3 +1,x @@".into()
            }
        );
        assert_eq!(error.line(), Some(3));
        assert_eq!(parse_patch("").unwrap_err().line(), None);
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
    fn marker_must_follow_the_last_line() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n\\ No newline at end of file\n-b\n+c\n";
        assert_eq!(
            parse_patch(patch).unwrap_err().to_string(),
            "patch line 6: hunk 1 (`@@ -1,2 +1,2 @@`) of `f` continues after `\\ No newline at end of file`: that marker may only follow the last line of the file"
        );
    }

    #[test]
    fn overlapping_hunk_headers_are_rejected() {
        let patch =
            "--- a/f\n+++ b/f\n@@ -10,3 +10,3 @@\n a\n-b\n+c\n d\n@@ -11,1 +11,1 @@\n-x\n+y\n";
        assert_eq!(
            parse_patch(patch).unwrap_err().to_string(),
            "patch line 8: hunk 2 (`@@ -11 +11 @@`) of `f` starts before the end of hunk 1 (old line 12): hunks of one file must be in file order and must not overlap; merge them or fix the line numbers"
        );
    }

    #[test]
    fn malformed_hunk_header() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,x @@\n a\n";
        assert_eq!(
            parse_patch(patch).unwrap_err().to_string(),
            "patch line 3: hunk header `@@ -1,3 +1,x @@` is malformed: expected `@@ -START,COUNT +START,COUNT @@`"
        );
        let bare = "--- a/f\n+++ b/f\n@@\n-a\n+b\n";
        assert_eq!(
            parse_patch(bare).unwrap_err().to_string(),
            "patch line 3: hunk header `@@` is malformed: expected `@@ -START,COUNT +START,COUNT @@`"
        );
        let zero = "--- a/f\n+++ b/f\n@@ -0,1 +1 @@\n-a\n+b\n";
        assert_eq!(
            parse_patch(zero).unwrap_err().to_string(),
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
    fn context_line_without_its_space_is_named() {
        let patch =
            "--- a/f.rs\n+++ b/f.rs\n@@ -1,3 +1,3 @@\nfn main() {\n-    old();\n+    new();\n}\n";
        assert_eq!(
            parse_patch(patch).unwrap_err().to_string(),
            "patch line 4: hunk 1 (`@@ -1,3 +1,3 @@`) of `f.rs` needs 3 more old and 3 more new lines by its header, but `fn main() {` does not start with ` `, `-` or `+`: start every context line with a space, or fix the header counts"
        );
    }

    #[test]
    fn count_mismatch_names_the_hunk() {
        let too_few = "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\ndiff --git a/g b/g\n";
        assert_eq!(
            parse_patch(too_few).unwrap_err().to_string(),
            "patch line 3: hunk 1 (`@@ -1,4 +1,4 @@`) of `f` has 3 old and 3 new lines but its header says 4 and 4: fix the header counts (old = context + removed lines, new = context + added lines)"
        );
        let too_many = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n+C\n c\n";
        assert_eq!(
            parse_patch(too_many).unwrap_err().to_string(),
            "patch line 3: hunk 1 (`@@ -1,3 +1,3 @@`) of `f` has 3 old and 4 new lines but its header says 3 and 3: fix the header counts (old = context + removed lines, new = context + added lines)"
        );
        let extra_after = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n c\n";
        assert_eq!(
            parse_patch(extra_after).unwrap_err().to_string(),
            "patch line 3: hunk 1 (`@@ -1,2 +1,2 @@`) of `f` has 3 old and 3 new lines but its header says 2 and 2: fix the header counts (old = context + removed lines, new = context + added lines)"
        );
    }

    #[test]
    fn empty_patch_and_patch_without_files() {
        let expected = "the patch has no file sections: send a unified diff as `git diff` prints it, starting with `diff --git` or `---`/`+++` lines";
        assert_eq!(parse_patch("").unwrap_err().to_string(), expected);
        assert_eq!(parse_patch("\n\n").unwrap_err().to_string(), expected);
        assert_eq!(
            parse_patch("please change line 3 to say hello\n")
                .unwrap_err()
                .to_string(),
            expected
        );
    }

    #[test]
    fn hunk_without_file_header_is_an_error() {
        assert_eq!(
            parse_patch("@@ -1 +1 @@\n-a\n+b\n")
                .unwrap_err()
                .to_string(),
            "patch line 1: hunk header `@@ -1 +1 @@` comes before any file header: put `--- a/PATH` and `+++ b/PATH` lines (or a `diff --git a/PATH b/PATH` line) before it"
        );
        assert_eq!(
            parse_patch("--- a/f\n@@ -1 +1 @@\n-a\n+b\n")
                .unwrap_err()
                .to_string(),
            "patch line 2: hunk header `@@ -1 +1 @@` comes before any file header: put `--- a/PATH` and `+++ b/PATH` lines (or a `diff --git a/PATH b/PATH` line) before it"
        );
    }

    #[test]
    fn file_header_without_hunks_is_an_error() {
        assert_eq!(
            parse_patch("--- a/f\n+++ b/f\n").unwrap_err().to_string(),
            "patch line 1: the section for `f` has no hunks: add `@@ -START,COUNT +START,COUNT @@` hunks with the changed lines"
        );
        assert_eq!(
            parse_patch("diff --git a/f b/f\n--- a/f\n")
                .unwrap_err()
                .to_string(),
            "patch line 2: `--- a/f` is not followed by a `+++` line: each file needs a `--- OLD` line and then a `+++ NEW` line before its hunks"
        );
    }

    #[test]
    fn binary_patches_are_rejected() {
        let patch = "diff --git a/img.png b/img.png\nindex 1234567..89abcde 100644\nBinary files a/img.png and b/img.png differ\n";
        assert_eq!(
            parse_patch(patch).unwrap_err().to_string(),
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
    fn a_git_header_without_prefixes_keeps_its_first_folder() {
        // `git diff --no-prefix`: the names are equal, so no first component is a prefix.
        let patch =
            "diff --git src/x.rs src/x.rs\n--- src/x.rs\n+++ src/x.rs\n@@ -1 +1 @@\n-a\n+b\n";
        let parsed = parse_one(patch);
        assert_eq!(parsed.old_path.as_deref(), Some("src/x.rs"));
        assert_eq!(parsed.new_path.as_deref(), Some("src/x.rs"));
        // Prefixes of the user's own differ and are followed by the same name.
        let patch = "diff --git old/src/x.rs new/src/x.rs\n--- old/src/x.rs\n+++ new/src/x.rs\n@@ -1 +1 @@\n-a\n+b\n";
        let parsed = parse_one(patch);
        assert_eq!(parsed.old_path.as_deref(), Some("src/x.rs"));
        assert_eq!(parsed.new_path.as_deref(), Some("src/x.rs"));
    }
}
