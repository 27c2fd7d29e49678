//! The MCP server of agent-tools (PROD-2): a [`Dispatcher`](tools_core::Dispatcher) served
//! over the Model Context Protocol, with rmcp underneath.
//!
//! What lives here is everything about the protocol and nothing about tools: the two protocol
//! revisions one connection may speak (2025-11-25 sessions, 2026-07-28 discover), cards as
//! elicitation requests or `input_required` results, calls that outlive a request (tasks, in
//! both dialects), progress and cancellation, and the transports. The run itself comes from
//! a [`RunFactory`] the umbrella implements; no tool is special-cased by name (a tool that
//! exists to ask a person says so in its spec, `ToolSpec::needs_person`).

mod dialect;
mod elicit;
mod error;
mod flight;
mod http;
mod instructions;
mod jsonrpc;
mod legacy;
mod server;
mod stdio;
mod wire;

pub use crate::{
    elicit::ElicitationPort,
    error::{Error, Result},
    http::{DEFAULT_MAX_BODY_BYTES, HttpError, HttpOptions, HttpServer, Token, TokenError},
    server::{BuildError, McpRun, McpServer, RunFactory},
    stdio::{LineTransport, serve_stdio, stdio_transport},
    wire::{mcp_result, mcp_tool},
};
