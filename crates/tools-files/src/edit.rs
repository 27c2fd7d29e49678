//! `edit`: replace an exact piece of a file.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{
    CallContext, Change, FileChange, Line, Tier, Tool, ToolError, ToolOutput, Workspace, Writes,
};

use super::{blocking, line_of, plural, read_snapshot, update_failed};

/// Replace an exact piece of text in a file.
///
/// `old_string` must occur exactly as given (indentation and line breaks included) and,
/// unless `replace_all`, once: include enough lines to make it unique. Read the file first.
///
/// Reports the errors it introduced.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// Workspace-relative.
    pub path: String,
    /// The exact text to replace.
    pub old_string: String,
    /// Its replacement.
    pub new_string: String,
    /// Replace every occurrence, not exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// What was replaced.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EditOutput {
    /// The file, relative to the workspace root.
    pub path: String,
    /// How many occurrences were replaced.
    pub replacements: usize,
    /// The lines (1-based, in the new file) where the replacements start.
    pub lines: Vec<Line>,
}

/// The `edit` tool.
pub struct Edit;

impl Tool for Edit {
    type Input = EditInput;
    type Output = EditOutput;
    const NAME: &'static str = "edit";
    const TITLE: &'static str = "Edit a file";
    const TIER: Tier = Tier::Write;
    const WRITES_FILES: bool = true;

    fn writes(&self, input: &EditInput, workspace: &Workspace) -> Writes {
        Writes::path(workspace, &input.path)
    }

    /// The path, the file and the match, as the call will find them.
    async fn check(&self, input: &EditInput, workspace: &Workspace) -> Result<(), ToolError> {
        check_strings(input)?;
        let path = workspace.resolve(&input.path)?;
        let shown = workspace.display(&path);
        let workspace = workspace.clone();
        let input = EditInput {
            path: input.path.clone(),
            old_string: input.old_string.clone(),
            new_string: input.new_string.clone(),
            replace_all: input.replace_all,
        };
        blocking(move || {
            let (text, _) = read_snapshot(&workspace, &path)?;
            replace_in(&text, &input, &shown).map(|_| ())
        })
        .await
    }

    async fn call(
        &self,
        context: CallContext,
        input: EditInput,
    ) -> Result<ToolOutput<EditOutput>, ToolError> {
        let workspace = context.workspace();
        let path = workspace.resolve(&input.path)?;
        let shown = workspace.display(&path);
        check_strings(&input)?;
        // Read, match and write as one step under the workspace's write lock, so a concurrent
        // writer either lands before this read or after this write — never in between.
        let (previous, (updated, starts, old, new)) = {
            let path = path.clone();
            let shown = shown.clone();
            workspace
                .update_async(move |workspace| {
                    let (text, expect) = read_snapshot(workspace, &path)?;
                    let (old, new) = replace_in(&text, &input, &shown)?;
                    let starts: Vec<usize> = text
                        .match_indices(old.as_str())
                        .map(|(start, _)| start)
                        .collect();
                    let updated = text.replace(old.as_str(), &new);
                    let change = Change {
                        path,
                        expect,
                        change: FileChange::Write(updated.clone().into_bytes()),
                    };
                    Ok((vec![change], (updated, starts, old, new)))
                })
                .await
                .map_err(|error| update_failed(workspace, error))?
        };
        // Where each replacement starts in the new text: earlier replacements shift later ones.
        let shift = new.len() as isize - old.len() as isize;
        let lines: Vec<Line> = starts
            .iter()
            .enumerate()
            .map(|(index, start)| {
                line_of(
                    &updated,
                    (*start as isize + shift * index as isize) as usize,
                )
            })
            .collect();
        let at: Vec<String> = lines.iter().map(Line::to_string).collect();
        let text = format!(
            "Edited {shown}: {} at line{} {}",
            plural(starts.len(), "replacement"),
            if lines.len() == 1 { "" } else { "s" },
            at.join(", ")
        );
        Ok(ToolOutput::new(
            text,
            EditOutput {
                path: shown,
                replacements: starts.len(),
                lines,
            },
        )
        .touching([path])
        .previously(previous))
    }
}

/// What can be refused from the arguments alone.
fn check_strings(input: &EditInput) -> Result<(), ToolError> {
    if input.old_string.is_empty() {
        return Err(ToolError::failed(
            "`old_string` is empty: give the exact text to replace; to create or overwrite a whole file use write",
        ));
    }
    if input.old_string == input.new_string {
        return Err(ToolError::failed(
            "`old_string` and `new_string` are the same, so the edit would change nothing",
        ));
    }
    Ok(())
}

/// The text to replace and its replacement, in the file's own line endings, once `old_string`
/// was found the number of times the call allows.
fn replace_in(text: &str, input: &EditInput, shown: &str) -> Result<(String, String), ToolError> {
    let (old, new) = match_line_endings(text, &input.old_string, &input.new_string);
    let starts: Vec<usize> = text
        .match_indices(old.as_str())
        .map(|(start, _)| start)
        .collect();
    if starts.is_empty() {
        return Err(ToolError::failed(not_found(text, &old, shown)));
    }
    if starts.len() > 1 && !input.replace_all {
        let lines: Vec<String> = starts
            .iter()
            .map(|s| line_of(text, *s).to_string())
            .collect();
        return Err(ToolError::failed(format!(
            "`old_string` occurs {} times in {shown} (lines {}): include more surrounding lines to make it unique, or set replace_all to true",
            starts.len(),
            lines.join(", ")
        )));
    }
    Ok((old, new))
}

/// When the file uses CRLF and the model wrote LF, edit in the file's own line endings.
fn match_line_endings(text: &str, old: &str, new: &str) -> (String, String) {
    if text.contains("\r\n") && !old.contains("\r\n") && old.contains('\n') && !text.contains(old) {
        (old.replace('\n', "\r\n"), new.replace('\n', "\r\n"))
    } else {
        (old.to_owned(), new.to_owned())
    }
}

/// Explains a miss, pointing at a near match that differs only in whitespace when there is one.
fn not_found(text: &str, old: &str, shown: &str) -> String {
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let wanted = squeeze(old);
    let first = old
        .lines()
        .find(|l| !l.trim().is_empty())
        .map(str::trim)
        .unwrap_or_default();
    let mut message = format!("`old_string` was not found in {shown}");
    if !first.is_empty() {
        let candidates: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, line)| line.trim() == first)
            .map(|(index, _)| index)
            .collect();
        let lines: Vec<&str> = text.lines().collect();
        let span = old.lines().count().max(1);
        for start in candidates {
            let window = lines[start..(start + span).min(lines.len())].join("\n");
            if squeeze(&window) == wanted {
                message.push_str(&format!(
                    "; lines {}–{} match it except for whitespace (indentation or line breaks differ)",
                    Line::from_index(start),
                    Line::from_index((start + span).min(lines.len()) - 1)
                ));
                break;
            }
        }
    }
    message.push_str("; read the file again and copy the text exactly as it is now");
    message
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::test_support::Fixture;

    const FILE: &str =
        "//- /src/lib.rs\nfn a() {\n    let x = 1;\n}\nfn b() {\n    let x = 1;\n}\n";

    #[tokio::test]
    async fn replaces_a_unique_string() {
        let fx = Fixture::new(FILE);
        let result = fx.call("edit", json!({"path": "src/lib.rs", "old_string": "fn b() {\n    let x = 1;", "new_string": "fn b() {\n    let x = 2;"})).await;
        assert_eq!(result.text, "Edited src/lib.rs: 1 replacement at line 4");
        let root = fx.dir.path().canonicalize().unwrap();
        assert_eq!(result.touched, [root.join("src/lib.rs")]);
        assert_eq!(
            fx.file("src/lib.rs"),
            "fn a() {\n    let x = 1;\n}\nfn b() {\n    let x = 2;\n}\n"
        );
    }

    #[tokio::test]
    async fn an_ambiguous_string_is_refused_with_its_lines_and_nothing_changes() {
        let fx = Fixture::new(FILE);
        let result = fx.call("edit", json!({"path": "src/lib.rs", "old_string": "let x = 1;", "new_string": "let x = 3;"})).await;
        assert!(result.is_error);
        assert_eq!(
            result.text,
            "`old_string` occurs 2 times in src/lib.rs (lines 2, 5): include more surrounding lines to make it unique, or set replace_all to true"
        );
        assert_eq!(
            fx.file("src/lib.rs"),
            FILE.trim_start_matches("//- /src/lib.rs\n")
        );
    }

    #[tokio::test]
    async fn replace_all_replaces_every_occurrence() {
        let fx = Fixture::new(FILE);
        let result = fx
            .call("edit", json!({"path": "src/lib.rs", "old_string": "let x = 1;", "new_string": "let y = 1;\n    let x = 1;", "replace_all": true}))
            .await;
        assert_eq!(
            result.text,
            "Edited src/lib.rs: 2 replacements at lines 2, 6"
        );
        assert_eq!(fx.file("src/lib.rs").matches("let y = 1;").count(), 2);
    }

    #[tokio::test]
    async fn a_missing_string_points_at_a_whitespace_near_miss() {
        let fx = Fixture::new(FILE);
        let result = fx.call("edit", json!({"path": "src/lib.rs", "old_string": "fn b() {\nlet x = 1;", "new_string": "x"})).await;
        assert_eq!(
            result.text,
            "`old_string` was not found in src/lib.rs; lines 4–5 match it except for whitespace (indentation or line breaks differ); read the file again and copy the text exactly as it is now"
        );
        let absent = fx
            .call(
                "edit",
                json!({"path": "src/lib.rs", "old_string": "nothing like it", "new_string": "x"}),
            )
            .await;
        assert_eq!(
            absent.text,
            "`old_string` was not found in src/lib.rs; read the file again and copy the text exactly as it is now"
        );
    }

    #[tokio::test]
    async fn crlf_files_are_edited_in_their_own_line_endings() {
        let fx = Fixture::new("//- /w.txt\nplaceholder\n");
        std::fs::write(fx.dir.path().join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
        let result = fx
            .call(
                "edit",
                json!({"path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}),
            )
            .await;
        assert!(!result.is_error, "{}", result.text);
        assert_eq!(fx.file("w.txt"), "1\r\n2\r\nthree\r\n");
    }

    #[tokio::test]
    async fn pointless_edits_are_refused() {
        let fx = Fixture::new(FILE);
        let empty = fx
            .call(
                "edit",
                json!({"path": "src/lib.rs", "old_string": "", "new_string": "x"}),
            )
            .await;
        assert!(empty.text.starts_with("`old_string` is empty"));
        let same = fx
            .call(
                "edit",
                json!({"path": "src/lib.rs", "old_string": "fn a", "new_string": "fn a"}),
            )
            .await;
        assert!(same.text.contains("are the same"));
        let missing = fx
            .call(
                "edit",
                json!({"path": "src/none.rs", "old_string": "a", "new_string": "b"}),
            )
            .await;
        assert_eq!(
            missing.text,
            "src/none.rs does not exist; check the path, or use write to create it"
        );
    }
}
