//! Applying one file's hunks to its text: each hunk is looked for near where its header says,
//! after the previous one, with trailing whitespace ignored; the file's line endings and final
//! newline are kept unless the patch says otherwise.

use crate::error::{Advice, ApplyError, Mismatch};
use crate::patch::{FilePatch, Hunk, HunkLine};

/// Applies one file's hunks to `original` (None when the file does not exist) and returns the
/// new content (None when the patch deletes the file). An error names the hunk (its 1-based
/// number and its header) and, when context does not match, the first expected line that
/// differs and what the file has there (with the file line number), e.g. "hunk 2 (`@@ -10,4
/// +10,5 @@`) does not apply: line 12 should be `    let x = 1;` but the file has
/// `    let x = 2;`; re-read the file and make the patch against its current content".
pub fn apply_file_patch(
    patch: &FilePatch,
    original: Option<&str>,
) -> Result<Option<String>, ApplyError> {
    let base = match (&patch.old_path, &patch.new_path, original) {
        (None, None, _) => return Err(ApplyError::NoFile),
        (None, Some(new), Some(_)) => {
            return Err(ApplyError::CreatesExisting { path: new.clone() });
        }
        (None, Some(_), None) => "",
        (Some(old), new, None) => {
            return Err(match new {
                None => ApplyError::DeletesMissing { path: old.clone() },
                Some(new) if new != old => ApplyError::RenamesMissing {
                    from: old.clone(),
                    to: new.clone(),
                },
                Some(_) => ApplyError::ModifiesMissing { path: old.clone() },
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
            return Err(ApplyError::OldLinesInCreation {
                hunk: number,
                header: hunk.header(),
            });
        }
        if deleting
            && hunk
                .lines
                .iter()
                .any(|line| !matches!(line, HunkLine::Removed(_)))
        {
            return Err(ApplyError::KeptLinesInDeletion {
                hunk: number,
                header: hunk.header(),
            });
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
            Some(left) => Err(ApplyError::DeletionLeavesLines {
                path: patch.old_path.as_deref().unwrap_or("the file").to_owned(),
                text: left.body.to_owned(),
                line: left.origin.map(|origin| origin + 1),
            }),
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
) -> ApplyError {
    let does_not_apply = |mismatch| ApplyError::DoesNotApply {
        hunk: number,
        header: hunk.header(),
        mismatch,
    };
    if (hunk.old_missing_newline || hunk.new_missing_newline)
        && let Some(at) = find(file, old, cursor, expected)
    {
        return does_not_apply(Mismatch::NotAtEnd {
            first: at + 1,
            last: at + old.len(),
            file_lines: file.len(),
        });
    }
    // A match above the end of the previous hunk means the hunks are out of order or overlap,
    // which re-reading the file alone would not fix, so it is said as well.
    let advice =
        match (0..cursor).find(|&at| at + old.len() <= file.len() && matches_at(file, old, at)) {
            Some(at) => Advice::OutOfOrder {
                found: at + 1,
                previous: number.saturating_sub(1),
                previous_end: cursor,
            },
            None => Advice::Reread,
        };
    for (index, want) in old.iter().enumerate() {
        let line = expected + index + 1;
        match file.get(expected + index) {
            Some(have) if same(have.body, want) => {}
            Some(have) => {
                return does_not_apply(Mismatch::LineDiffers {
                    line,
                    expected: (*want).to_owned(),
                    found: have.body.to_owned(),
                    advice,
                });
            }
            None => {
                return does_not_apply(Mismatch::PastEnd {
                    line,
                    expected: (*want).to_owned(),
                    file_lines: file.len(),
                    advice,
                });
            }
        }
    }
    does_not_apply(Mismatch::Unplaced { advice })
}

#[cfg(test)]
mod tests {
    use crate::fixtures::*;
    use crate::*;

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
    fn creates_a_new_file() {
        let files = parse_patch(MULTI).unwrap();
        let new = file(&files, "new.txt");
        assert_eq!(
            apply_file_patch(new, None).unwrap().as_deref(),
            Some("hello\nworld\n")
        );
        assert_eq!(
            apply_file_patch(new, Some("old\n"))
                .unwrap_err()
                .to_string(),
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
            apply_file_patch(gone, Some(&format!("{content}// more\n")))
                .unwrap_err()
                .to_string(),
            "the patch deletes gone.rs but the file has more than the patch removes: `// more` is still there at line 4; re-read the file and make the patch against its current content"
        );
        assert_eq!(
            apply_file_patch(gone, None).unwrap_err().to_string(),
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
            apply_file_patch(pure, None).unwrap_err().to_string(),
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
            apply(NO_NEWLINE_BOTH, Some("first\nsecond\nthird"))
                .unwrap_err()
                .to_string(),
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
            apply(TWO_HUNKS, Some(&original)).unwrap_err().to_string(),
            "hunk 2 (`@@ -22,7 +22,8 @@`) does not apply: line 24 should be `line 24` but the file has `line 24 changed`; re-read the file and make the patch against its current content"
        );
        let original = numbered(1, 30).replace("line 2\n", "\n");
        assert_eq!(
            apply(TWO_HUNKS, Some(&original)).unwrap_err().to_string(),
            "hunk 1 (`@@ -1,6 +1,6 @@`) does not apply: line 2 should be `line 2` but the file has an empty line; re-read the file and make the patch against its current content"
        );
    }

    #[test]
    fn a_mismatch_is_a_value_that_names_the_hunk_and_the_line() {
        let original = numbered(1, 30).replace("line 24\n", "line 24 changed\n");
        let error = apply(TWO_HUNKS, Some(&original)).unwrap_err();
        assert_eq!(error.hunk(), Some(2));
        assert_eq!(
            error,
            ApplyError::DoesNotApply {
                hunk: 2,
                header: "@@ -22,7 +22,8 @@".into(),
                mismatch: Mismatch::LineDiffers {
                    line: 24,
                    expected: "line 24".into(),
                    found: "line 24 changed".into(),
                    advice: Advice::Reread,
                },
            }
        );
    }

    #[test]
    fn long_lines_are_cut_in_messages() {
        let long = "x".repeat(300);
        let patch = format!("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-{long}\n+y\n");
        assert_eq!(
            apply(&patch, Some("z\n")).unwrap_err().to_string(),
            format!(
                "hunk 1 (`@@ -1 +1 @@`) does not apply: line 1 should be `{}…` but the file has `z`; re-read the file and make the patch against its current content",
                "x".repeat(200)
            )
        );
    }

    #[test]
    fn hunk_found_nowhere_in_a_short_file() {
        assert_eq!(
            apply(TWO_HUNKS, Some(&numbered(1, 10)))
                .unwrap_err()
                .to_string(),
            "hunk 2 (`@@ -22,7 +22,8 @@`) does not apply: line 11 should be `line 22` but the file has only 10 lines; re-read the file and make the patch against its current content"
        );
    }

    #[test]
    fn hunk_found_only_above_the_previous_one() {
        let patch = "--- a/f\n+++ b/f\n@@ -10,3 +10,3 @@\n line 10\n-line 11\n+eleven\n line 12\n@@ -20,3 +20,3 @@\n line 2\n-line 3\n+three\n line 4\n";
        assert_eq!(
            apply(patch, Some(&numbered(1, 30)))
                .unwrap_err()
                .to_string(),
            "hunk 2 (`@@ -20,3 +20,3 @@`) does not apply: line 20 should be `line 2` but the file has `line 20`; its lines are only found at line 2, above the end of hunk 1 (line 12); hunks must be in file order and must not overlap"
        );
    }

    #[test]
    fn modifying_a_missing_file_is_an_error() {
        assert_eq!(
            apply(TWO_HUNKS, None).unwrap_err().to_string(),
            "the patch modifies two.txt but it does not exist; check the path, or create the file with `--- /dev/null` and `+++ b/two.txt`"
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
