//! The language-server client machinery under tools-lsp: the table of known servers (built
//! in as data, changed by the configuration's overrides), deciding where a server's project
//! root is and which binary runs it, one JSON-RPC session per (server, root) that keeps
//! documents in sync with the disk and tracks readiness, and the supervisor that starts,
//! restarts and stops them for one run. It knows nothing of tools, of what the model reads,
//! or of diagnostics on write: it returns data and typed errors (paths as they are on disk),
//! and tools-lsp writes every sentence the model reads on top.

mod client;
mod config;
mod discovery;
mod encoding;
mod error;
mod servers;
mod session;
mod supervisor;

pub use crate::{
    client::{Checks, Published},
    config::{CheckerFormat, ClientConfig, ServerOverride},
    discovery::{MissingBinary, scan_roots},
    encoding::{Encoding, lines, offset},
    error::{AnswerError, Error, LastError, Result},
    servers::{Check, CheckerSpec, Pull, Reach, ServerSpec, builtin as builtin_servers},
    session::{Activity, Busy, Ended, OnBusy, Session, Synced},
    supervisor::{
        Context, ReloadOutcome, Reloaded, ServerStatus, SessionState, SessionStatus, Supervisor,
    },
};
