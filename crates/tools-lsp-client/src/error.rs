//! The crate's one error type. Every variant's message is written for a model: it names the
//! server, the root and the request, and says what to do next (tools-lsp passes it on as
//! the tool's error result).

use tools_core::ToolError;

/// A failure of the language-server machinery (starting, talking to or supervising a server).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
        message: String,
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
        message: String,
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

/// The result type of the client machinery.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for ToolError {
    fn from(error: Error) -> Self {
        ToolError::failed(error.to_string())
    }
}
