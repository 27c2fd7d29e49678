//! The crate's one error type. Messages are written for a model: they name the adapter and
//! the request, and say what to do next.

use tools_core::ToolError;

/// A failure of the debugger machinery: starting, talking to or supervising an adapter.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The adapter process could not be started or reached.
    #[error("cannot start {adapter}: {source}")]
    Spawn {
        adapter: String,
        #[source]
        source: tools_process::Error,
    },
    /// Reading from or writing to the adapter failed.
    #[error("talking to {adapter} failed: {source}")]
    Io {
        adapter: String,
        #[source]
        source: std::io::Error,
    },
    /// The adapter answered a request with a failure.
    #[error("{adapter} refused `{command}`: {message}")]
    Refused {
        adapter: String,
        command: String,
        message: String,
    },
    /// The adapter did not answer in time.
    #[error("{adapter} did not answer `{command}` within {seconds}s")]
    Timeout {
        adapter: String,
        command: String,
        seconds: u64,
    },
    /// The adapter went away while a request was waiting for its answer.
    #[error("{adapter} stopped while answering `{command}`{details}")]
    Gone {
        adapter: String,
        command: String,
        details: String,
    },
    /// The adapter sent something that is not the protocol.
    #[error("{adapter} sent a message that is not DAP: {problem}")]
    Protocol { adapter: String, problem: String },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for ToolError {
    fn from(error: Error) -> Self {
        ToolError::Failed(error.to_string())
    }
}
