//! The host's own file tools (PROD-4): `read`, `write`, `edit` and `apply_patch`. They are the
//! contract other tools and tests use, and what diagnostics on write (LSP-6) wraps.

mod apply_patch;
mod edit;
mod patch;
mod read;
mod write;

pub use self::{
    apply_patch::{ApplyPatch, ApplyPatchInput, ApplyPatchOutput, PatchedFile},
    edit::{Edit, EditInput, EditOutput},
    read::{Read, ReadInput, ReadOutput},
    write::{Write, WriteInput, WriteOutput},
};

use std::path::Path;

use tools_core::{RegistryBuilder, ToolError, Workspace};

/// Registers the four host tools; they need nothing but the workspace.
pub fn register(builder: &mut RegistryBuilder) {
    builder
        .register(Read)
        .register(Write)
        .register(Edit)
        .register(ApplyPatch);
}

/// Reads a text file for a tool, with errors that say what to do.
pub(crate) fn read_text(workspace: &Workspace, path: &Path) -> Result<String, ToolError> {
    let shown = workspace.display(path);
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ToolError::failed(format!(
                "{shown} does not exist; check the path, or use write to create it"
            )));
        }
        Err(_) if path.is_dir() => {
            return Err(ToolError::failed(format!(
                "{shown} is a directory, not a file"
            )));
        }
        Err(e) => return Err(ToolError::failed(format!("cannot read {shown}: {e}"))),
    };
    String::from_utf8(bytes).map_err(|_| {
        ToolError::failed(format!(
            "{shown} is not UTF-8 text (a binary file?); these tools edit text files only"
        ))
    })
}

/// Writes one file atomically, turning an IO failure into a message for the model.
pub(crate) fn write_text(
    workspace: &Workspace,
    path: &Path,
    content: &str,
) -> Result<(), ToolError> {
    if path.is_dir() {
        return Err(ToolError::failed(format!(
            "{} is a directory; give a file path",
            workspace.display(path)
        )));
    }
    workspace
        .write_atomic(path, content.as_bytes())
        .map_err(|e| ToolError::failed(format!("{e}; nothing was written")))
}

/// The number of lines a text has, counting a last line without a newline.
pub(crate) fn count_lines(text: &str) -> usize {
    text.lines().count()
}

/// 1-based line number of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
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
            tools_core::testing::write_fixture(dir.path(), files).unwrap();
            let workspace = Workspace::new(dir.path()).unwrap();
            let mut builder = RegistryBuilder::new(Run {
                workspace,
                questions: None,
            });
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
