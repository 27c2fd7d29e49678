//! What the workspace's tests share, so each is written once: the `//- /path` fixture
//! writer, where the test command installs servers and the rule for a missing one, the MCP
//! client harness that drives `agent-tools serve`, fake tools and question ports for what
//! cannot exist here (a person), and the filters that make rendered answers snapshot-stable.
//!
//! A dev-dependency only: no crate's library depends on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod available;
pub mod carried;
mod fake;
mod fixture;
pub mod http;
pub mod mcp;
pub mod sandbox;
mod snapshot;
mod transcript;

use std::path::{Path, PathBuf};

pub use crate::{
    available::{LanguageServer, SKIP_LOG, available, program_available, python_imports, require},
    fake::{Hello, HelloInput, HelloOutput, Scripted},
    fixture::{link_test_venv, python_project, write_files, write_fixture},
    snapshot::{redact, redact_with, snapshot_settings},
    transcript::Transcript,
};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

/// Where the README's test command installs what is not on `PATH`: basedpyright, debugpy
/// and the test venv's Python in `.venv/bin`, typescript-language-server and typescript
/// under `.tools/node`.
pub fn tool_dirs() -> Vec<PathBuf> {
    let root = repo_root();
    vec![
        root.join(".venv/bin"),
        root.join(".tools/node/node_modules/.bin"),
    ]
}
