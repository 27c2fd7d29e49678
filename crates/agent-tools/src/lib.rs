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
mod families;
mod host;
mod mcp;
mod runtime;
mod stdio;
mod terminal;

pub use crate::{
    config::{AskConfig, CONFIG_FILE, Config, OutputConfig, RunConfig, SandboxConfig},
    elicit::ElicitationPort,
    families::FamilyConfigs,
    host::{
        ApplyPatch, ApplyPatchInput, ApplyPatchOutput, Edit, EditInput, EditOutput, PatchedFile,
        Read, ReadInput, ReadOutput, Write, WriteInput, WriteOutput,
    },
    mcp::{McpRun, McpServer, mcp_result, mcp_tool},
    runtime::{RunBuilder, RunOptions, Settings, catalog},
    stdio::{LineTransport, stdio_transport},
    terminal::TerminalPort,
};

pub use tools_core;

// The families, once: the cargo feature (in this crate's manifest) and the family type.
// Registration, the config tables, the server's instructions and these crates' re-exports
// are derived from this list.
families::families! {
    "ask" => tools_ask::AskFamily,
    "ast" => tools_ast::AstFamily,
    "lsp" => tools_lsp::LspFamily,
    "eval" => tools_eval::EvalFamily,
    "debug" => tools_debug::DebugFamily,
    "vibe" => tools_vibe::VibeFamily,
}
