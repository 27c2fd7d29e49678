"""What real agent frameworks hand the model from `agent-tools serve` (the wire contract).

pydantic-ai's `MCPToolset` gives the model a tool's `structuredContent` instead of its text,
so the structured result must hold the whole answer: `read`'s lines, `eval`'s output,
`ast_grep`'s matches, `lsp`'s locations. A scripted model (pydantic-ai's `FunctionModel`)
makes the calls and records exactly what came back to it; nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from conftest import REPO, require, write_files

COMMAND = Path(sys.executable).parent / "agent-tools"


def scripted(calls, seen):
    """A model that makes `calls` one by one and records each return it was shown."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def model(messages, info):
        returns = [
            part
            for message in messages
            for part in getattr(message, "parts", [])
            if isinstance(part, ToolReturnPart)
        ]
        if len(returns) < len(calls):
            name, arguments = calls[len(returns)]
            return ModelResponse(parts=[ToolCallPart(name, arguments)])
        seen.extend(returns)
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(model)


def test_pydantic_ai_shows_the_model_the_whole_answer(tmp_path):
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset

    bin_dir = REPO / ".venv/bin"
    require(
        "basedpyright",
        (bin_dir / "basedpyright-langserver").is_file(),
        "python3 -m venv .venv && .venv/bin/pip install basedpyright",
    )
    root = (tmp_path / "project").resolve()
    write_files(
        root,
        {
            "pyproject.toml": '[project]\nname = "e2e"\nversion = "0.1.0"\n',
            "pkg/__init__.py": "",
            "pkg/shapes.py": "def add(left: int, right: int) -> int:\n    return left + right\n",
            "pkg/main.py": "from pkg.shapes import add\n\nprint(add(1, 2))\n",
            "agent-tools.toml": f'[lsp]\npath = ["{bin_dir}"]\n',
        },
    )
    calls = [
        ("read", {"path": "pkg/shapes.py"}),
        ("eval", {"code": "print(6 * 7)", "description": "print the product of six and seven"}),
        ("ast_grep", {"pattern": "add($A, $B)", "language": "python"}),
        ("lsp", {"operation": "definition", "file": "pkg/main.py", "line": 3, "symbol": "add"}),
    ]
    seen: list = []
    transport = StdioTransport(
        command=str(COMMAND), args=["serve", "--root", str(root), "--approval", "allow"]
    )
    toolset = MCPToolset(Client(transport))

    async def go():
        async with toolset:
            await Agent(scripted(calls, seen), toolsets=[toolset]).run("go")

    asyncio.run(asyncio.wait_for(go(), 120))
    shown = {part.tool_name: str(part.content) for part in seen}
    assert set(shown) == {"read", "eval", "ast_grep", "lsp"}, shown
    assert "return left + right" in shown["read"], shown["read"]
    assert "42" in shown["eval"], shown["eval"]
    assert "add(1, 2)" in shown["ast_grep"] and "pkg/main.py" in shown["ast_grep"], shown["ast_grep"]
    assert "pkg/shapes.py" in shown["lsp"] and "def add" in shown["lsp"], shown["lsp"]
