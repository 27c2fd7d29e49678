//! The crate's one error type. Every variant carries data — the server, the root and file
//! paths as they are on disk, the request, the cause as `source` — and its message is a plain
//! technical sentence. What the model reads, and what it should do next, is tools-lsp's to
//! write from that data.

use std::path::PathBuf;
use std::sync::Arc;

use crate::discovery::MissingBinary;
use crate::servers::ServerSpec;
use crate::session::Ended;

/// A failure of the language-server machinery (starting, talking to or supervising a server).
// Clone, because one failed start is handed to every call that waited for it; the causes that
// are not `Clone` themselves are shared behind an `Arc`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// An override of the server table cannot be applied.
    #[error("the override of server {server}: {problem}")]
    Config { server: String, problem: String },
    /// The embedded `servers.toml` does not parse: a bug of the build, not of the project.
    #[error("the built-in server table (servers.toml) is invalid: {source}")]
    BuiltinTable {
        #[source]
        source: toml::de::Error,
    },
    /// No server of the table handles the file's kind (LSP-2).
    #[error("no language server handles {}", path.display())]
    NoServer {
        path: PathBuf,
        /// Every server of the table, in its order.
        known: Vec<Arc<ServerSpec>>,
    },
    /// The server that handles the file's kind has no project root for it (LSP-2: no
    /// marker, no server).
    #[error(
        "{server} has no project root for {}: none of its markers ({}) is beside it or in a \
         folder above it inside the workspace",
        path.display(),
        markers.join(", ")
    )]
    NoRoot {
        server: String,
        path: PathBuf,
        markers: Vec<String>,
    },
    /// The server's binary does not resolve for this root (LSP-2).
    #[error("{server} cannot start for root {}: {missing}", root.display())]
    NoBinary {
        server: String,
        root: PathBuf,
        missing: Box<MissingBinary>,
    },
    /// The run's sandbox was refused when the run began (EVAL-9): no server starts through it
    /// or around it.
    #[error("{server} cannot start: {refusal}")]
    Sandbox {
        server: String,
        #[source]
        refusal: Arc<tools_process::SandboxRefusal>,
    },
    /// A start was under way when the server was reloaded; the caller may ask again.
    #[error("{server} was reloaded while it was starting")]
    Reloaded { server: String },
    /// The process could not be spawned.
    #[error("cannot start {server} (`{command}`) in {}: {message}", root.display())]
    Spawn {
        server: String,
        command: String,
        root: PathBuf,
        /// What went wrong (the cause's text, when there is one).
        message: String,
        /// The spawn's own error, when the process could not be started.
        #[source]
        source: Option<Arc<tools_process::Error>>,
    },
    /// The server did not answer in time; the request was cancelled.
    #[error(
        "{server} (root {}) did not answer `{method}` within {seconds}s; the request was \
         cancelled",
        root.display()
    )]
    Timeout {
        server: String,
        root: PathBuf,
        method: String,
        seconds: u64,
    },
    /// The server process went away while we were talking to it.
    #[error("{server} (root {}) stopped while answering `{method}`{ended}", root.display())]
    Stopped {
        server: String,
        root: PathBuf,
        method: String,
        /// Why it ended and what it last wrote to stderr, as far as known.
        ended: Ended,
    },
    /// The server answered with an error.
    #[error("{server} answered `{method}` with an error: {message}")]
    Response {
        server: String,
        method: String,
        /// What the server said.
        message: String,
        /// The server's error response, or why its answer did not decode.
        #[source]
        source: AnswerError,
    },
    /// The server crashed more often than the restart budget allows; it stays down until a
    /// reload.
    #[error("{server} (root {}) crashed {crashes} times, which uses up its restart budget", root.display())]
    RestartBudget {
        server: String,
        root: PathBuf,
        crashes: u32,
        /// What went wrong the last time.
        last_error: Option<Box<LastError>>,
        /// The last lines it wrote to stderr.
        stderr_tail: Vec<String>,
    },
    /// The supervisor's task is gone (the run is shutting down).
    #[error("the language-server supervisor has shut down; the run is ending")]
    SupervisorGone,
    /// A document cannot be named to a server: its path is not absolute.
    #[error("{} is not an absolute path", path.display())]
    NotAbsolute { path: PathBuf },
    /// A document to sync is not UTF-8 text.
    #[error("{} is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf },
    /// A document to sync cannot be read (it is gone, or not a regular file).
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
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

/// The last thing that went wrong with a session, as its status and its restart budget's
/// error report it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LastError {
    /// Its process ended by itself, with why.
    #[error("crashed: {0}")]
    Crashed(String),
    /// Its binary was found, but it did not come up.
    #[error("start failed: {0}")]
    StartFailed(Error),
    /// It cannot start here (its binary does not resolve).
    #[error("{0}")]
    Unusable(Error),
    /// The last error message the running server showed or logged itself.
    #[error("{0}")]
    Reported(String),
}

/// The result type of the client machinery.
pub type Result<T, E = Error> = std::result::Result<T, E>;

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
