//! The crate's one error type. Every variant's message is written for a model: it names the
//! server, the root and the request, and says what to do next (tools-lsp passes it on as
//! the tool's error result).

use std::sync::Arc;

use tools_core::ToolError;

/// A failure of the language-server machinery (starting, talking to or supervising a server).
// Clone, because one failed start is handed to every call that waited for it; the causes that
// are not `Clone` themselves are shared behind an `Arc`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// `agent-tools.toml` describes a server we cannot use.
    #[error("[lsp.servers.{server}] in the config: {problem}")]
    Config { server: String, problem: String },
    /// The embedded `servers.toml` does not parse: a bug of the build, not of the project.
    #[error(
        "the built-in server table (servers.toml) is invalid, which is a bug of agent-tools; \
         add the servers under [lsp.servers.NAME] in the config meanwhile: {source}"
    )]
    BuiltinTable {
        #[source]
        source: toml::de::Error,
    },
    /// No server can serve this file, and the message says why (LSP-2).
    #[error("{0}")]
    Unusable(String),
    /// The process could not be spawned.
    #[error("cannot start {server} (`{command}`) in {root}: {message}")]
    Spawn {
        server: String,
        command: String,
        root: String,
        /// What went wrong, as the model reads it (the cause's text, when there is one).
        message: String,
        /// The spawn's own error, when the process could not be started.
        #[source]
        source: Option<Arc<tools_process::Error>>,
    },
    /// The server did not answer in time; the request was cancelled.
    #[error(
        "{server} (root {root}) did not answer `{method}` within {seconds}s; the request was \
         cancelled. Try again, or call `lsp` with operation `reload` if it keeps happening"
    )]
    Timeout {
        server: String,
        root: String,
        method: String,
        seconds: u64,
    },
    /// The server process went away while we were talking to it.
    #[error("{server} (root {root}) stopped while answering `{method}`{details}")]
    Stopped {
        server: String,
        root: String,
        method: String,
        details: String,
    },
    /// The server answered with an error.
    #[error("{server} answered `{method}` with an error: {message}")]
    Response {
        server: String,
        method: String,
        /// What the server said, as the model reads it.
        message: String,
        /// The server's error response, or why its answer did not decode.
        #[source]
        source: AnswerError,
    },
    /// The server crashed more often than the restart budget allows.
    #[error(
        "{server} (root {root}) crashed {crashes} times, which uses up its restart budget; \
         call `lsp` with operation `reload` to start it again{details}"
    )]
    RestartBudget {
        server: String,
        root: String,
        crashes: u32,
        details: String,
    },
    /// The supervisor's task is gone (the run is shutting down).
    #[error("the language-server supervisor has shut down; the run is ending")]
    SupervisorGone,
}

/// Why a server's answer was an error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AnswerError {
    /// The server answered with a JSON-RPC error.
    #[error("the server's error response: {0}")]
    Server(#[source] Arc<async_lsp::ResponseError>),
    /// The answer did not decode into the request's result type.
    #[error("the answer did not decode: {0}")]
    Decode(#[source] Arc<serde_json::Error>),
}

/// The result type of the client machinery.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for ToolError {
    fn from(error: Error) -> Self {
        ToolError::failed(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn an_answer_that_did_not_decode_keeps_its_cause_and_says_it() {
        let cause = serde_json::from_str::<u32>("\"x\"").unwrap_err();
        let error = Error::Response {
            server: "clangd".into(),
            method: "textDocument/hover".into(),
            message: format!("its answer did not decode: {cause}"),
            source: AnswerError::Decode(Arc::new(cause)),
        };
        assert_eq!(
            error.to_string(),
            "clangd answered `textDocument/hover` with an error: its answer did not decode: \
             invalid type: string \"x\", expected u32 at line 1 column 3"
        );
        let source = error.source().unwrap();
        assert!(
            source
                .to_string()
                .starts_with("the answer did not decode: invalid type")
        );
        assert!(
            source.source().is_some(),
            "the serde_json error itself is kept"
        );
    }
}
