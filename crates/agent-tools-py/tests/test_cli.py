"""The wheel's `agent-tools` command: the Rust binary's command line, serving MCP to the SDK."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from conftest import wait_gone

COMMAND = Path(sys.executable).parent / "agent-tools"


def test_the_command_is_installed_with_the_cli_of_the_binary(workspace):
    assert COMMAND.is_file(), "the wheel's console script is missing"
    tools = subprocess.run([COMMAND, "tools", "--json", "--surface", "readonly"], capture_output=True, text=True, check=True)
    assert {"read", "ast_grep", "lsp"} <= {spec["name"] for spec in json.loads(tools.stdout)}
    read = subprocess.run(
        [COMMAND, "call", "read", '{"path": "README.md"}', "--root", workspace], capture_output=True, text=True
    )
    assert (read.returncode, read.stdout) == (0, "   1\thello\n   2\tworld\n\n"), read.stderr
    refused = subprocess.run(
        [COMMAND, "call", "write", '{"path": "x", "content": ""}', "--root", workspace],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )
    assert refused.returncode == 1 and "--approval allow" in refused.stderr
    usage = subprocess.run([COMMAND, "serve", "--surface", "bogus"], capture_output=True, text=True)
    assert usage.returncode == 2 and "bogus" in usage.stderr


def test_serve_talks_mcp_to_the_python_sdk_client(workspace, mark):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def session():
        server = StdioServerParameters(
            command=str(COMMAND),
            args=["serve", "--root", str(workspace), "--approval", "allow"],
            env={"PATH": "/usr/bin:/bin", "AGENT_TOOLS_TEST_MARK": mark},
        )
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                listed = await client.list_tools()
                names = {tool.name for tool in listed.tools}
                wrote = await client.call_tool("write", {"path": "new.txt", "content": "made over MCP\n"})
                read_back = await client.call_tool("read", {"path": "new.txt"})
                bad = await client.call_tool("read", {"path": 1})
                return names, wrote, read_back, bad

    names, wrote, read_back, bad = asyncio.run(asyncio.wait_for(session(), 60))
    assert {"read", "write", "ast_grep", "lsp", "eval"} <= names
    assert not wrote.is_error, wrote.content
    assert read_back.content[0].text == "   1\tmade over MCP\n"
    assert read_back.structured_content["total_lines"] == 1
    assert bad.is_error
    assert (workspace / "new.txt").read_text() == "made over MCP\n"
    assert wait_gone(mark) == []


def test_serve_ends_cleanly_on_ctrl_c(workspace):
    import signal

    server = subprocess.Popen(
        [COMMAND, "serve", "--root", workspace],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        # An answered initialize means the signal handlers are in place (they come first).
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "pytest", "version": "0"}}}
        server.stdin.write(json.dumps(initialize) + "\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 1
        # Standard input stays open: its end would end the run by itself.
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        stderr = server.stderr.read()
    finally:
        server.kill()
    assert server.returncode == 0, stderr
    assert "ending the run" in stderr and "KeyboardInterrupt" not in stderr, stderr
