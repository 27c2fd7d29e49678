//! What the client machinery is configured with: timeouts, the restart budget, where server
//! binaries are looked for, and the overrides of the built-in table. tools-lsp reads these
//! from its configuration and fills them in.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// How the supervisor starts and talks to servers.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// How long one request may take before it is cancelled.
    pub request_timeout: Duration,
    /// How long starting a server (spawn and `initialize`) may take.
    pub start_timeout: Duration,
    /// How long a request waits for a server that is still indexing; after that it is sent
    /// anyway and the answer carries a note.
    pub index_timeout: Duration,
    /// How many crashes of one server (per root) are restarted before it stays down until a
    /// reload.
    pub restart_budget: u32,
    /// Folders searched for server binaries before `PATH`, relative to the workspace root or
    /// absolute.
    pub path: Vec<PathBuf>,
    /// Rust is checked with every feature of every crate on.
    pub all_features: bool,
    /// Overrides of the built-in servers by name, or new servers.
    pub servers: BTreeMap<String, ServerOverride>,
}

impl ClientConfig {
    /// Checks the server table this configuration makes (a new server needs a command,
    /// extensions and markers; a command cannot be empty).
    pub fn validate(&self) -> crate::Result<()> {
        crate::servers::table(self).map(|_| ())
    }
}

/// One server's override, by the server's name: any field left out keeps the built-in value. A name that is not
/// built in defines a new server and then needs `command`, `extensions` and `markers`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerOverride {
    /// `false` takes the server out of the table.
    pub enabled: Option<bool>,
    /// The command line that starts the server, e.g. `["clangd-17", "--background-index"]`.
    pub command: Option<Vec<String>>,
    /// File name extensions (without the dot) this server handles.
    pub extensions: Option<Vec<String>>,
    /// The LSP language id sent for its files (default: the extension).
    pub language_id: Option<String>,
    /// Files or folders whose presence marks a project root, e.g. `["go.mod"]`.
    pub markers: Option<Vec<String>>,
    /// The project's own checker, run in the root; an empty list removes it.
    pub checker: Option<Vec<String>>,
    /// How to read the checker's output.
    pub checker_format: Option<CheckerFormat>,
    /// Extra environment variables for the server and its checker.
    pub env: BTreeMap<String, String>,
    /// `initializationOptions` sent in `initialize`.
    pub initialization_options: Option<serde_json::Value>,
    /// What the server gets when it asks `workspace/configuration`, as one object whose
    /// top-level keys are sections (e.g. `{"rust-analyzer": {...}}`).
    pub settings: Option<serde_json::Value>,
}

/// How a project checker's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckerFormat {
    /// `cargo check --message-format=json`.
    CargoJson,
    /// `pyright --outputjson` / `basedpyright --outputjson`.
    PyrightJson,
    /// `tsc --pretty false`: `file(line,col): error TS1234: message`.
    Tsc,
    /// `dart analyze --format=machine`: `SEVERITY|TYPE|CODE|FILE|LINE|COL|LENGTH|MESSAGE`.
    DartMachine,
    /// Compiler-style lines, `file:line[:col]: message`, as most linters print; a line
    /// without an `error:`/`warning:`/`note:` label is an error.
    Lines,
    /// `go vet`'s lines: its analyzers' findings (`./x.go:6:2: fmt.Printf format %d has arg
    /// …`) are warnings, as gopls reports the same analyzers; what failed to type-check
    /// (`vet: ./x.go:3:23: undeclared name: …`) is an error.
    GoVet,
}
