//! agent-tools: the built-in tools of a coding agent, bound to one run's live resources, as a
//! library for agent runtimes and as the `agent-tools` binary that serves a run over MCP.
//!
//! [`RunBuilder`] binds resources and registers each family only when its resource is bound
//! (CORE-1); every family sits behind its own cargo feature, and this crate is the only one
//! that knows those features. The MCP server is agent-tools-mcp's; this crate hands it runs
//! ([`Settings`] is its [`RunFactory`]) and runs the command line.

// The command line is a module of its own, so callers name it `agent_tools::cli::main`.
pub mod cli;
mod config;
mod families;
mod runtime;
mod sandbox;
mod terminal;

pub use crate::{
    config::{AskConfig, CONFIG_FILE, Config, OutputConfig, RunConfig, SandboxConfig},
    families::FamilyConfigs,
    runtime::{RunBuilder, RunOptions, Settings, catalog},
    terminal::TerminalPort,
};

// The MCP server, for embedders that serve a run over a transport of their own.
pub use agent_tools_mcp::{
    ElicitationPort, LineTransport, McpRun, McpServer, RunFactory, mcp_result, mcp_tool,
    stdio_transport,
};

pub use tools_core;

// The families, once: the cargo feature (in this crate's manifest) and the family type.
// Registration, the config tables, the server's instructions and these crates' re-exports
// are derived from this list.
families::families! {
    "files" => tools_files::FilesFamily,
    "ask" => tools_ask::AskFamily,
    "ast" => tools_ast::AstFamily,
    "lsp" => tools_lsp::LspFamily,
    "eval" => tools_eval::EvalFamily,
    "debug" => tools_debug::DebugFamily,
    "vibe" => tools_vibe::VibeFamily,
}
