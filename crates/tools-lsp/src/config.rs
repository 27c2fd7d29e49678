//! The `[lsp]` table of `agent-tools.toml`: timeouts, the restart budget, extra folders to find
//! server binaries in, and per-server overrides of the built-in table (or whole new servers).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use tools_lsp_client::{ClientConfig, ServerOverride};

/// How the language-server family behaves; every field has a default.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LspConfig {
    /// How long one request may take before it is cancelled, in seconds.
    pub request_timeout_seconds: u64,
    /// How long starting a server (spawn and `initialize`) may take, in seconds.
    pub start_timeout_seconds: u64,
    /// How long a request waits for a server that is still indexing, in seconds; after that
    /// it is sent anyway and the answer carries a note.
    pub index_timeout_seconds: u64,
    /// How long a project checker (`diagnostics "*"`) may run, in seconds.
    pub checker_timeout_seconds: u64,
    /// How many crashes of one server (per root) are restarted before it stays down until
    /// `reload`.
    pub restart_budget: u32,
    /// Folders searched for server binaries before `PATH`, relative to the workspace root or
    /// absolute. The workspace's own `.venv/bin`, `venv/bin` and `node_modules/.bin` are
    /// always searched first.
    pub path: Vec<PathBuf>,
    /// Rust is checked with every feature of every crate on (`--all-features` for
    /// `diagnostics "*"`, `cargo.features = "all"` for rust-analyzer); by default, the
    /// crates' default features.
    pub all_features: bool,
    /// Overrides of the built-in servers by name, or new servers.
    pub servers: BTreeMap<String, ServerOverride>,
    /// Diagnostics on write: what `write`, `edit`, `apply_patch`, `lsp_rename` and `resolve`
    /// report after they change a file (LSP-6).
    pub on_write: OnWriteConfig,
}

/// `[lsp.on_write]`: how writes are checked through the language servers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OnWriteConfig {
    /// `false` turns diagnostics on write off.
    pub enabled: bool,
    /// How long a write waits for its files' servers to finish checking, in seconds (a cold
    /// server that is still indexing counts against the same bound); after that the result
    /// says which files were not checked.
    pub timeout_seconds: f64,
    /// Report introduced warnings too, not only errors.
    pub warnings: bool,
    /// How many introduced diagnostics are listed per file; the rest are counted.
    pub per_file: usize,
}

impl Default for OnWriteConfig {
    fn default() -> Self {
        OnWriteConfig {
            enabled: true,
            timeout_seconds: 30.0,
            warnings: false,
            per_file: 10,
        }
    }
}

impl OnWriteConfig {
    pub(crate) fn timeout(&self) -> Duration {
        Duration::try_from_secs_f64(self.timeout_seconds).unwrap_or(Duration::ZERO)
    }
}

impl Default for LspConfig {
    fn default() -> Self {
        LspConfig {
            request_timeout_seconds: 30,
            start_timeout_seconds: 60,
            index_timeout_seconds: 120,
            checker_timeout_seconds: 600,
            restart_budget: 3,
            path: Vec::new(),
            all_features: false,
            servers: BTreeMap::new(),
            on_write: OnWriteConfig::default(),
        }
    }
}

impl LspConfig {
    /// Checks the server table this configuration makes (a new server needs a command,
    /// extensions and markers; a command cannot be empty).
    pub fn validate(&self) -> crate::Result<()> {
        let timeout = self.on_write.timeout_seconds;
        if !(timeout.is_finite() && timeout >= 0.0) {
            return Err(crate::Error::Setting {
                setting: "[lsp.on_write] timeout_seconds".into(),
                problem: format!(
                    "{timeout} is not a number of seconds; give 0 or more, e.g. 30 (or set \
                     enabled = false to turn diagnostics on write off)"
                ),
            });
        }
        Ok(self.client().validate()?)
    }

    /// What the client machinery needs of it (the rest is the tools').
    pub(crate) fn client(&self) -> ClientConfig {
        ClientConfig {
            request_timeout: self.request_timeout(),
            start_timeout: self.start_timeout(),
            index_timeout: self.index_timeout(),
            restart_budget: self.restart_budget,
            path: self.path.clone(),
            all_features: self.all_features,
            servers: self.servers.clone(),
        }
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_seconds.max(1))
    }

    pub(crate) fn start_timeout(&self) -> Duration {
        Duration::from_secs(self.start_timeout_seconds.max(1))
    }

    pub(crate) fn index_timeout(&self) -> Duration {
        Duration::from_secs(self.index_timeout_seconds)
    }

    pub(crate) fn checker_timeout(&self) -> Duration {
        Duration::from_secs(self.checker_timeout_seconds.max(1))
    }
}
