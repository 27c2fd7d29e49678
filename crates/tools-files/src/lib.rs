//! The host's own file tools (PROD-4): `read`, `write`, `edit` and `apply_patch`. They are the
//! contract other tools and tests use, and what diagnostics on write (LSP-6) wraps.
//!
//! A family like the others (`FilesFamily`): an embedder whose agent has file tools of its
//! own builds the umbrella without the `files` feature and registers its own.

mod apply_patch;
mod edit;
mod family;
mod read;
mod write;

pub use crate::{
    apply_patch::{ApplyPatch, ApplyPatchInput, ApplyPatchOutput, PatchedFile},
    edit::{Edit, EditInput, EditOutput},
    family::{FilesConfig, FilesFamily},
    read::{Read, ReadInput, ReadOutput},
    write::{Write, WriteInput, WriteOutput},
};

use std::path::Path;

use tools_core::{Expect, Line, RegistryBuilder, ToolError, UpdateError, Workspace};

/// Registers the four host tools; they need nothing but the workspace.
pub fn register(builder: &mut RegistryBuilder) {
    builder
        .register(Read)
        .register(Write)
        .register(Edit)
        .register(ApplyPatch);
}

/// Reads a text file for a tool, with errors that say what to do; a named pipe or other
/// special file is refused before it is opened.
pub(crate) fn read_text(workspace: &Workspace, path: &Path) -> Result<String, ToolError> {
    read_snapshot(workspace, path).map(|(text, _)| text)
}

/// [`read_text`], with what a commit of a change computed from it must expect.
pub(crate) fn read_snapshot(
    workspace: &Workspace,
    path: &Path,
) -> Result<(String, Expect), ToolError> {
    let shown = workspace.display(path);
    let snapshot = workspace.read(path)?;
    let Some(bytes) = snapshot.bytes else {
        return Err(ToolError::failed(format!(
            "{shown} does not exist; check the path, or use write to create it"
        )));
    };
    let text = String::from_utf8(bytes).map_err(|_| {
        ToolError::failed(format!(
            "{shown} is not UTF-8 text (a binary file?); these tools edit text files only"
        ))
    })?;
    Ok((text, snapshot.expect))
}

/// Runs `work` on the blocking pool: file IO stays off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ToolError::failed(format!("the file work stopped: {error}")))?
}

/// A failed read-compute-write as the model reads it.
pub(crate) fn update_failed(workspace: &Workspace, error: UpdateError<ToolError>) -> ToolError {
    match error {
        UpdateError::Compute(error) => error,
        UpdateError::Commit(error) => error.to_tool_error(workspace),
    }
}

/// The number of lines a text has, counting a last line without a newline.
pub(crate) fn count_lines(text: &str) -> usize {
    text.lines().count()
}

/// The line byte `offset` of `text` is on.
pub(crate) fn line_of(text: &str, offset: usize) -> Line {
    Line::from_index(text[..offset.min(text.len())].matches('\n').count())
}

/// "1 line", "2 lines".
pub(crate) fn plural(count: usize, noun: &str) -> String {
    match count {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! A workspace in a temp folder and a dispatcher over the host tools.

    use std::sync::Arc;

    use serde_json::Value;
    use tools_core::{
        ApprovalPolicy, Dispatcher, DispatcherOptions, RegistryBuilder, Run, ToolCall, ToolResult,
        Workspace,
    };

    pub(crate) struct Fixture {
        pub(crate) dir: tempfile::TempDir,
        pub(crate) dispatcher: Arc<Dispatcher>,
    }

    impl Fixture {
        /// Files from `//- /path` headers, as in rust-analyzer's fixtures.
        pub(crate) fn new(files: &str) -> Fixture {
            let dir = tempfile::tempdir().unwrap();
            tools_test_support::write_fixture(dir.path(), files).unwrap();
            let workspace = Workspace::new(dir.path()).unwrap();
            let mut builder = RegistryBuilder::new(Run::new(workspace));
            super::register(&mut builder);
            let options = DispatcherOptions {
                approval: ApprovalPolicy::Allow,
                ..DispatcherOptions::default()
            };
            Fixture {
                dir,
                dispatcher: Arc::new(Dispatcher::new(builder.build(), options)),
            }
        }

        pub(crate) async fn call(&self, name: &str, arguments: Value) -> ToolResult {
            self.dispatcher
                .dispatch(ToolCall {
                    name: name.into(),
                    arguments,
                })
                .await
        }

        pub(crate) fn file(&self, path: &str) -> String {
            std::fs::read_to_string(self.dir.path().join(path)).unwrap()
        }
    }
}
