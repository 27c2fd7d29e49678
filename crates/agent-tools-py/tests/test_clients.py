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

from conftest import CLIENT_CALLS, REPO, check_client_answers, client_project, require, write_files

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
        ("lsp", {"operation": "definition", "path": "pkg/main.py", "line": 3, "symbol": "add"}),
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


def test_pydantic_ai_runs_the_client_matrix_with_an_approval_card(tmp_path):
    """pydantic-ai's toolset over FastMCP's client with an elicitation handler: a worker, a
    write under `--approval ask` answered on its card, and a cell that runs past the task
    grace; the model is shown each answer."""
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset

    root = client_project(tmp_path)
    cards: list[str] = []

    async def approve(message, response_type, params, context):
        cards.append(message)
        return {"decision": "allow"}

    seen: list = []
    transport = StdioTransport(
        command=str(COMMAND), args=["serve", "--root", str(root), "--approval", "ask", "--vibe"]
    )
    toolset = MCPToolset(Client(transport, elicitation_handler=approve))

    async def go():
        async with toolset:
            await Agent(scripted(CLIENT_CALLS, seen), toolsets=[toolset]).run("go")

    asyncio.run(asyncio.wait_for(go(), 120))
    check_client_answers([str(part.content) for part in seen], root)
    assert any("`write`" in card for card in cards), cards


def test_fastmcp_client_runs_the_client_matrix(tmp_path):
    """FastMCP's own client (4.2.3): it builds types from each output schema and validates
    structured results against them; a write under `--approval ask` goes out as a card that
    its elicitation handler answers."""
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport

    root = client_project(tmp_path)
    cards: list[str] = []

    async def approve(message, response_type, params, context):
        cards.append(message)
        return {"decision": "allow"}

    transport = StdioTransport(
        command=str(COMMAND), args=["serve", "--root", str(root), "--approval", "ask", "--vibe"]
    )
    shown: list[str] = []

    async def go():
        async with Client(transport, elicitation_handler=approve) as client:
            names = {tool.name for tool in await client.list_tools()}
            assert {"read", "eval", "ast_grep", "write", "ask_user", "vibe_spawn"} <= names, names
            for name, arguments in CLIENT_CALLS:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, result.content)
                # The structured result holds the answer too (what some frameworks show).
                shown.append(result.content[0].text + json.dumps(result.structured_content))

    asyncio.run(asyncio.wait_for(go(), 120))
    check_client_answers(shown, root)
    assert any("`write`" in card for card in cards), cards


def agents_sdk_run(root: Path, serve: list[str], calls) -> tuple[list[str], list[str]]:
    """Runs the OpenAI Agents SDK (0.24) over `MCPServerStdio(use_structured_content=True)`
    with a scripted model (no network) that makes `calls`; returns the tools it was given and
    each tool output it was shown."""
    from agents import Agent, ModelSettings, Runner
    from agents.items import ModelResponse
    from agents.mcp import MCPServerStdio
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage
    from openai.types.responses import ResponseOutputText

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
            params={"command": str(COMMAND), "args": ["serve", "--root", str(root), *serve]},
            use_structured_content=True,
            client_session_timeout_seconds=60,
        ) as server:
            agent = Agent(name="check", model=Scripted(), mcp_servers=[server],
                          model_settings=ModelSettings())
            result = await Runner.run(agent, "go", max_turns=len(calls) + 2)
            assert result.final_output == "done"

    asyncio.run(asyncio.wait_for(go(), 120))
    return listed, outputs


def test_openai_agents_sdk_runs_the_client_matrix_through_mcp_server_stdio(tmp_path):
    """The Agents SDK's `MCPServerStdio`: each of the matrix's answers reaches the model."""
    root = client_project(tmp_path)
    listed, outputs = agents_sdk_run(root, ["--approval", "allow", "--vibe"], CLIENT_CALLS)
    assert {"read", "eval", "ast_grep", "vibe_spawn", "write"} <= set(listed), listed
    check_client_answers(outputs, root)


def test_openai_agents_sdk_without_elicitation_is_told_a_write_has_no_approver(tmp_path):
    """The Agents SDK takes no elicitation, so under `--approval ask` a write has nobody to
    show its card to: the model is told so (and not to retry), and nothing is written."""
    root = client_project(tmp_path)
    _, outputs = agents_sdk_run(
        root, ["--approval", "ask"], [("write", {"path": "new.txt", "content": "hi\n"})]
    )
    assert len(outputs) == 1 and "no approver is connected" in outputs[0], outputs
    assert "do not retry" in outputs[0], outputs
    assert not (root / "new.txt").exists()
