"""What real agent frameworks hand the model from `agent-tools serve` (the wire contract).

pydantic-ai's `MCPToolset` gives the model a tool's `structuredContent` instead of its text,
so the structured result must hold the whole answer: `read`'s lines, `eval`'s output,
`ast_grep`'s matches, `lsp`'s locations. A scripted model (pydantic-ai's `FunctionModel`)
makes the calls and records exactly what came back to it; nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import json
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


def test_fastmcp_client_lists_calls_and_answers_an_approval_card(tmp_path):
    """FastMCP's own client (4.2.3): it builds types from each output schema and validates
    structured results against them; a write under `--approval ask` goes out as a card that
    its elicitation handler answers."""
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport

    root = (tmp_path / "project").resolve()
    write_files(root, {"app.py": "def area(side: float) -> float:\n    return side * side\n"})
    cards: list[str] = []

    async def approve(message, response_type, params, context):
        cards.append(message)
        return {"decision": "allow"}

    transport = StdioTransport(
        command=str(COMMAND), args=["serve", "--root", str(root), "--approval", "ask"]
    )

    async def go():
        async with Client(transport, elicitation_handler=approve) as client:
            names = {tool.name for tool in await client.list_tools()}
            assert {"read", "eval", "ast_grep", "write", "ask_user"} <= names, names
            read = await client.call_tool("read", {"path": "app.py"})
            assert "return side * side" in read.content[0].text
            assert "return side * side" in read.structured_content["content"], read.structured_content
            search = await client.call_tool(
                "ast_grep", {"pattern": "return $X", "language": "python"}
            )
            assert "app.py:2:" in search.content[0].text, search.content[0].text
            cell = await client.call_tool(
                "eval", {"code": "print(6 * 7)", "description": "print the product of six and seven"}
            )
            assert "42" in cell.content[0].text, cell.content[0].text
            write = await client.call_tool("write", {"path": "new.txt", "content": "hi\n"})
            assert not write.is_error, write.content[0].text
            assert any("`write`" in card for card in cards), cards
            assert (root / "new.txt").read_text() == "hi\n"

    asyncio.run(asyncio.wait_for(go(), 120))


def test_openai_agents_sdk_runs_the_tools_through_mcp_server_stdio(tmp_path):
    """The OpenAI Agents SDK (0.24) with `MCPServerStdio(use_structured_content=True)`: a
    scripted model (no network) calls `read`, `eval` and `ast_grep`, and each tool output the
    model is shown carries the answer."""
    from agents import Agent, ModelSettings, Runner
    from agents.items import ModelResponse
    from agents.mcp import MCPServerStdio
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage
    from openai.types.responses import ResponseOutputText

    root = (tmp_path / "project").resolve()
    write_files(root, {"app.py": "def area(side: float) -> float:\n    return side * side\n"})
    calls = [
        ("read", {"path": "app.py"}),
        ("eval", {"code": "print(6 * 7)", "description": "print the product of six and seven"}),
        ("ast_grep", {"pattern": "return $X", "language": "python"}),
    ]
    outputs: list[str] = []
    listed: list[str] = []

    class Scripted(Model):
        async def get_response(self, system_instructions, input, model_settings, tools,
                               output_schema, handoffs, tracing, **_):
            listed[:] = [tool.name for tool in tools]
            items = input if isinstance(input, list) else []
            outputs[:] = [
                str(item.get("output")) for item in items
                if isinstance(item, dict) and item.get("type") == "function_call_output"
            ]
            if len(outputs) < len(calls):
                name, arguments = calls[len(outputs)]
                output = [ResponseFunctionToolCall(
                    type="function_call", call_id=f"call_{len(outputs)}", name=name,
                    arguments=json.dumps(arguments), id=f"fc_{len(outputs)}", status="completed",
                )]
            else:
                output = [ResponseOutputMessage(
                    type="message", id="msg", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
                )]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    async def go():
        async with MCPServerStdio(
            params={"command": str(COMMAND),
                    "args": ["serve", "--root", str(root), "--approval", "allow"]},
            use_structured_content=True,
            client_session_timeout_seconds=60,
        ) as server:
            agent = Agent(name="check", model=Scripted(), mcp_servers=[server],
                          model_settings=ModelSettings())
            result = await Runner.run(agent, "go", max_turns=len(calls) + 2)
            assert result.final_output == "done"

    asyncio.run(asyncio.wait_for(go(), 120))
    assert {"read", "eval", "ast_grep"} <= set(listed), listed
    assert len(outputs) == len(calls), outputs
    assert "return side * side" in outputs[0], outputs[0]
    assert "42" in outputs[1], outputs[1]
    assert "app.py" in outputs[2] and "side * side" in outputs[2], outputs[2]
