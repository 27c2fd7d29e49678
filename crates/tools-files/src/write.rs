//! `write`: create or replace a whole file.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{
    CallContext, Change, FileChange, Tier, Tool, ToolError, ToolOutput, Workspace, Writes,
};

use super::{count_lines, plural};

/// Create a file or replace its whole content; missing folders are created. Atomic: the
/// file is the old or the new one, never half written. To change part of a file prefer
/// `edit`.
///
/// Reports the errors it introduced.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// Workspace-relative.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// What was written.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteOutput {
    /// The file, relative to the workspace root.
    pub path: String,
    /// Whether the file is new.
    pub created: bool,
    /// Its size in bytes.
    pub bytes: usize,
    /// Its number of lines.
    pub lines: usize,
}

/// The `write` tool.
pub struct Write;

impl Tool for Write {
    type Input = WriteInput;
    type Output = WriteOutput;
    const NAME: &'static str = "write";
    const TITLE: &'static str = "Write a file";
    const TIER: Tier = Tier::Write;
    const WRITES_FILES: bool = true;

    fn writes(&self, input: &WriteInput, workspace: &Workspace) -> Writes {
        Writes::path(workspace, &input.path)
    }

    /// The path stays inside the workspace (PROD-5).
    async fn check(&self, input: &WriteInput, workspace: &Workspace) -> Result<(), ToolError> {
        workspace.resolve(&input.path).map(|_| ())
    }

    async fn call(
        &self,
        context: CallContext,
        input: WriteInput,
    ) -> Result<ToolOutput<WriteOutput>, ToolError> {
        let workspace = context.workspace();
        let path = workspace.resolve(&input.path)?;
        let shown = workspace.display(&path);
        // The whole file is replaced whatever it held, so no content is expected; the commit
        // still confines the path again and refuses a folder or a named pipe.
        let previous = workspace
            .commit_async(vec![Change::anyway(
                path.clone(),
                FileChange::Write(input.content.clone().into_bytes()),
            )])
            .await
            .map_err(|error| error.to_tool_error(workspace))?;
        let created = previous.first().is_none_or(|(_, before)| before.is_none());
        let lines = count_lines(&input.content);
        let bytes = input.content.len();
        let verb = if created { "Created" } else { "Replaced" };
        let text = format!(
            "{verb} {shown} ({}, {})",
            plural(lines, "line"),
            plural(bytes, "byte")
        );
        Ok(ToolOutput::new(
            text,
            WriteOutput {
                path: shown,
                created,
                bytes,
                lines,
            },
        )
        .touching([path])
        .previously(previous))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::test_support::Fixture;

    #[tokio::test]
    async fn creates_folders_and_replaces_files() {
        let fx = Fixture::new("//- /a.txt\nold\n");
        let created = fx
            .call(
                "write",
                json!({"path": "new/dir/b.txt", "content": "x\ny\n"}),
            )
            .await;
        assert_eq!(created.text, "Created new/dir/b.txt (2 lines, 4 bytes)");
        assert_eq!(fx.file("new/dir/b.txt"), "x\ny\n");
        let replaced = fx
            .call("write", json!({"path": "a.txt", "content": "new"}))
            .await;
        assert_eq!(replaced.text, "Replaced a.txt (1 line, 3 bytes)");
        assert_eq!(fx.file("a.txt"), "new");
    }

    #[tokio::test]
    async fn prod_5_refuses_paths_outside_the_workspace() {
        let fx = Fixture::new("//- /a.txt\nold\n");
        let result = fx
            .call("write", json!({"path": "../escape.txt", "content": "x"}))
            .await;
        assert!(result.is_error);
        assert!(
            result.text.contains("outside the workspace root"),
            "{}",
            result.text
        );
        assert!(!fx.dir.path().parent().unwrap().join("escape.txt").exists());
    }

    #[tokio::test]
    async fn a_failed_write_leaves_no_folders_behind() {
        let fx = Fixture::new("//- /a.txt\nold\n");
        let long = "n".repeat(300);
        let result = fx
            .call(
                "write",
                json!({"path": format!("made/here/{long}.txt"), "content": "x"}),
            )
            .await;
        assert!(result.is_error);
        assert!(
            result.text.contains("nothing was changed"),
            "{}",
            result.text
        );
        assert!(!fx.dir.path().join("made").exists());
    }

    #[tokio::test]
    async fn writing_onto_a_folder_or_a_named_pipe_is_refused() {
        let fx = Fixture::new("//- /dir/a.txt\nold\n");
        let result = fx
            .call("write", json!({"path": "dir", "content": "x"}))
            .await;
        assert_eq!(
            result.text,
            "dir is a folder, not a regular file, so nothing was written; give the path of a \
             regular file"
        );
        let fifo = fx.dir.path().join("pipe");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let result = fx
            .call("write", json!({"path": "pipe", "content": "x"}))
            .await;
        assert!(
            result.text.starts_with("pipe is a named pipe (FIFO)"),
            "{}",
            result.text
        );
    }
}
