//! `read`: a file's lines, numbered, a range at a time.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, Tier, Tool, ToolError, ToolOutput};

use super::{blocking, read_text};

/// Read a text file: up to `limit` lines from line `offset`, each as its number, a tab and
/// the text (the numbers are not in the file). When more follow, the result says where.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// Workspace-relative.
    pub path: String,
    /// First line, 1-based (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<usize>,
    /// How many lines (default 2000).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

/// The range that was read.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadOutput {
    /// The file, relative to the workspace root.
    pub path: String,
    /// The first line shown (1-based); 0 when the file is empty.
    pub first_line: usize,
    /// The last line shown.
    pub last_line: usize,
    /// How many lines the file has.
    pub total_lines: usize,
    /// The lines shown, each as its number, a tab and its text (as the text answer has them).
    pub content: String,
    /// Where to continue (`offset` of the next call), when the file has more lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// What the text says beyond the lines: the range shown and how to read on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The `read` tool.
pub struct Read;

const DEFAULT_LIMIT: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;

impl Tool for Read {
    type Input = ReadInput;
    type Output = ReadOutput;
    const NAME: &'static str = "read";
    const TITLE: &'static str = "Read a file";
    const TIER: Tier = Tier::Read;

    async fn call(
        &self,
        context: CallContext,
        input: ReadInput,
    ) -> Result<ToolOutput<ReadOutput>, ToolError> {
        let workspace = context.workspace();
        let path = workspace.resolve(&input.path)?;
        let shown = workspace.display(&path);
        let text = {
            let (workspace, path) = (workspace.clone(), path.clone());
            blocking(move || read_text(&workspace, &path)).await?
        };
        let lines: Vec<&str> = text.lines().collect();
        let total = lines.len();
        let offset = input.offset.unwrap_or(1);
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
        if offset == 0 {
            return Err(ToolError::failed(
                "`offset` is 1-based: the first line is 1",
            ));
        }
        if limit == 0 {
            return Err(ToolError::failed("`limit` is 0: ask for at least one line"));
        }
        if total == 0 {
            let output = ReadOutput {
                path: shown.clone(),
                first_line: 0,
                last_line: 0,
                total_lines: 0,
                content: String::new(),
                next_offset: None,
                notes: vec![format!("{shown} is empty")],
            };
            return Ok(ToolOutput::new(format!("{shown} is empty"), output));
        }
        if offset > total {
            return Err(ToolError::failed(format!(
                "`offset` {offset} is past the end of {shown}, which has {total} lines"
            )));
        }
        // Saturating: a huge `limit` means "to the end", never an overflow.
        let last = (offset - 1).saturating_add(limit).min(total);
        let width = last.to_string().len().max(4);
        let mut out = String::new();
        for (index, line) in lines[offset - 1..last].iter().enumerate() {
            let number = offset + index;
            let line = line.strip_suffix('\r').unwrap_or(line);
            match line.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => out.push_str(&format!(
                    "{number:>width$}\t{}… [line cut at {MAX_LINE_CHARS} characters]\n",
                    &line[..cut]
                )),
                None => out.push_str(&format!("{number:>width$}\t{line}\n")),
            }
        }
        let content = out.clone();
        // The range line is said in the text and kept in the structure as it stands, so a
        // client that shows only the structure still reads how to go on.
        let mut notes = Vec::new();
        if last < total || offset > 1 {
            let mut note = format!("{shown}: lines {offset}–{last} of {total}");
            if last < total {
                note.push_str(&format!("; call read with offset {} for more", last + 1));
            }
            out.push_str(&format!("({note})\n"));
            notes.push(note);
        }
        let output = ReadOutput {
            path: shown,
            first_line: offset,
            last_line: last,
            total_lines: total,
            content,
            next_offset: (last < total).then_some(last + 1),
            notes,
        };
        Ok(ToolOutput::new(out, output))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::test_support::Fixture;

    const FILE: &str = "//- /src/lib.rs\nfn one() {}\nfn two() {}\nfn three() {}\n";

    #[tokio::test]
    async fn a_huge_limit_reads_to_the_end() {
        let fx = Fixture::new(FILE);
        for limit in [json!(9007199254740992u64), json!(u64::MAX)] {
            let result = fx
                .call(
                    "read",
                    json!({"path": "src/lib.rs", "offset": 2, "limit": limit}),
                )
                .await;
            assert!(!result.is_error, "{}", result.text);
            assert_eq!(
                result.text,
                "   2\tfn two() {}\n   3\tfn three() {}\n(src/lib.rs: lines 2–3 of 3)\n"
            );
        }
    }

    #[tokio::test]
    async fn a_named_pipe_is_refused_without_hanging() {
        let fx = Fixture::new(FILE);
        let fifo = fx.dir.path().join("pipe");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        for (tool, arguments) in [
            ("read", json!({"path": "pipe"})),
            (
                "edit",
                json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
            ),
            (
                "apply_patch",
                json!({"patch": "--- a/pipe\n+++ b/pipe\n@@ -1 +1 @@\n-a\n+b\n"}),
            ),
        ] {
            let result = fx.call(tool, arguments).await;
            assert!(
                result
                    .text
                    .starts_with("pipe is a named pipe (FIFO), not a regular file"),
                "{tool}: {}",
                result.text
            );
        }
    }

    #[tokio::test]
    async fn reads_numbered_lines() {
        let fx = Fixture::new(FILE);
        let result = fx.call("read", json!({"path": "src/lib.rs"})).await;
        assert_eq!(
            result.text,
            "   1\tfn one() {}\n   2\tfn two() {}\n   3\tfn three() {}\n"
        );
        assert_eq!(result.structured.unwrap()["total_lines"], 3);
    }

    #[tokio::test]
    async fn reads_a_range_and_says_where_to_continue() {
        let fx = Fixture::new(FILE);
        let result = fx
            .call(
                "read",
                json!({"path": "src/lib.rs", "offset": 2, "limit": 1}),
            )
            .await;
        assert_eq!(
            result.text,
            "   2\tfn two() {}\n(src/lib.rs: lines 2–2 of 3; call read with offset 3 for more)\n"
        );
    }

    #[tokio::test]
    async fn errors_say_what_is_wrong() {
        let fx = Fixture::new(FILE);
        let past = fx
            .call("read", json!({"path": "src/lib.rs", "offset": 9}))
            .await;
        assert_eq!(
            past.text,
            "`offset` 9 is past the end of src/lib.rs, which has 3 lines"
        );
        let missing = fx.call("read", json!({"path": "src/nope.rs"})).await;
        assert_eq!(
            missing.text,
            "src/nope.rs does not exist; check the path, or use write to create it"
        );
        let folder = fx.call("read", json!({"path": "src"})).await;
        assert_eq!(
            folder.text,
            "src is a directory, not a file; give a file path"
        );
    }
}
