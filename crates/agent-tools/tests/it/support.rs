//! The MCP client harness, shared through tools-test-support.

pub use tools_test_support::mcp::*;
