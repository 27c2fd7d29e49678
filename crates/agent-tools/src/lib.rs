//! agent-tools: the built-in tools of a coding agent, bound to one run's live resources, as a
//! library for agent runtimes and as the `agent-tools` binary that serves a run over MCP.
//!
//! [`RunBuilder`] binds resources and registers each family only when its resource is bound
//! (CORE-1); every family sits behind its own cargo feature, and this crate is the only one
//! that knows those features.

// The command line is a module of its own, so callers name it `agent_tools::cli::main`.
pub mod cli;
mod config;
mod elicit;
mod host;
mod mcp;
mod runtime;
mod stdio;
mod terminal;

pub use crate::{
    config::{AskConfig, CONFIG_FILE, Config, OutputConfig, RunConfig, SandboxConfig},
    elicit::ElicitationPort,
    host::{
        ApplyPatch, ApplyPatchInput, ApplyPatchOutput, Edit, EditInput, EditOutput, PatchedFile,
        Read, ReadInput, ReadOutput, Write, WriteInput, WriteOutput,
    },
    mcp::{McpRun, McpServer, mcp_result, mcp_tool},
    runtime::{RunBuilder, RunOptions, Settings, catalog},
    stdio::{LineTransport, stdio_transport},
    terminal::TerminalPort,
};

#[cfg(feature = "ask")]
pub use tools_ask;
#[cfg(feature = "ast")]
pub use tools_ast;
pub use tools_core;
#[cfg(feature = "debug")]
pub use tools_debug;
#[cfg(feature = "eval")]
pub use tools_eval;
#[cfg(feature = "lsp")]
pub use tools_lsp;
#[cfg(feature = "vibe")]
pub use tools_vibe;
