//! The crate's one error type: an unusable `[lsp]` setting, or a failure of the client
//! machinery underneath (starting, talking to or supervising a server), whose message is
//! already written for a model.

use tools_core::ToolError;

/// A failure of the language-server family outside a tool's own answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A setting outside the server table is unusable.
    #[error("{setting} in the config: {problem}")]
    Setting { setting: String, problem: String },
    /// The client machinery failed; its message says what to do next.
    #[error(transparent)]
    Client(#[from] tools_lsp_client::Error),
}

/// The result type of tools-lsp's fallible machinery.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for ToolError {
    fn from(error: Error) -> Self {
        ToolError::failed(error.to_string())
    }
}
