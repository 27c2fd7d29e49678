//! What can go wrong serving a connection.

/// A connection that could not be served to its end.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The client did not complete the protocol's opening (`initialize`, or a first request).
    #[error("the MCP client did not complete initialisation")]
    Initialize(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The service's task ended with an error.
    #[error("the MCP service stopped with an error")]
    Service(#[source] tokio::task::JoinError),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
