//! End-to-end tests of the `agent-tools` binary: a real MCP client (rmcp's client side)
//! starts `agent-tools serve` as a child process and drives it over stdio, and `call`/`tools`
//! run as a user would run them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_clis;
mod ast;
mod cli;
mod clients;
#[cfg(feature = "debug")]
mod debug;
mod eval;
mod fuzz;
mod http;
mod lifecycle;
mod lsp;
mod mcp;
mod on_write;
mod protocol;
mod rendered;
mod sandbox;
mod support;
mod tokens;
mod truth;
mod vibe;
mod writes;
