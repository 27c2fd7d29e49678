"""A run embedded in Python: surfaces, calls, the ask callback, concurrency, definitions."""

from __future__ import annotations

import asyncio
import re
import threading
import time

import pytest

import agent_tools
from agent_tools import REFUSE, SKIP, Answer, Run

FULL_ONLY = {"apply_patch", "ast_edit", "debug", "edit", "eval", "lsp_code_action", "lsp_rename", "resolve", "write"}
READ = {"ast_grep", "lsp", "read"}


def names(run: Run) -> set[str]:
    return {tool.name for tool in run.tools()}


def test_surfaces_list_their_tiers_and_ask_user_needs_a_callback(workspace):
    with Run(workspace) as run:
        assert names(run) == READ | FULL_ONLY
    with Run(workspace, ask=lambda card: SKIP) as run:
        assert names(run) == READ | FULL_ONLY | {"ask_user"}
    for surface in ("plan", "readonly"):
        with Run(workspace, surface=surface, ask=lambda card: SKIP) as run:
            assert names(run) == READ | {"ask_user"}
            assert {tool.tier for tool in run.tools()} == {"read"}
    with Run(workspace, vibe=True) as run:
        assert {"vibe_spawn", "vibe_wait"} <= names(run)


def test_read_write_and_ast_grep_return_results_as_a_model_sees_them(workspace):
    with Run(workspace, approval="allow") as run:
        read = run.call("read", {"path": "README.md"})
        assert (read.text, read.is_error) == ("   1\thello\n   2\tworld\n", False)
        assert read.structured["total_lines"] == 2
        wrote = run.call("write", {"path": "notes/todo.txt", "content": "one\n"})
        assert not wrote.is_error, wrote.text
        assert (workspace / "notes/todo.txt").read_text() == "one\n"
        found = run.call("ast_grep", {"pattern": "load($A)", "path": "src", "language": "python"})
        assert not found.is_error, found.text
        assert "src/app.py:5" in found.text
        # Bad arguments and unknown tools are results, not exceptions.
        bad = run.call("read", {"path": 3})
        assert bad.is_error and "path" in bad.text
        unknown = run.call("nope", {})
        assert unknown.is_error and "nope" in unknown.text


def test_misuse_of_the_api_raises(workspace):
    with pytest.raises(ValueError, match="surface"):
        Run(workspace, surface="everything")
    with pytest.raises(RuntimeError, match="does not exist"):
        Run(workspace / "missing")
    run = Run(workspace)
    with pytest.raises(ValueError, match="unknown format"):
        run.tool_definitions("gemini")
    run.close()
    run.close()
    assert run.closed
    with pytest.raises(RuntimeError, match="closed"):
        run.call("read", {"path": "README.md"})


def test_ask_callback_answers_ask_user_with_a_card_of_its_fields(workspace):
    cards = []

    def ask(card):
        cards.append(card)
        return "blue" if card.options else Answer(text="because")

    with Run(workspace, ask=ask) as run:
        picked = run.call(
            "ask_user",
            {"question": "Which colour?", "context": "for the logo",
             "options": [{"label": "red"}, {"label": "blue", "description": "calm"}]},
        )
        typed = run.call("ask_user", {"question": "Why?"})
        skipped = Run(workspace, ask=lambda card: SKIP).call("ask_user", {"question": "Why?"})
    assert not picked.is_error and "blue" in picked.text, picked.text
    assert not typed.is_error and "because" in typed.text, typed.text
    assert "skip" in skipped.text.lower(), skipped.text
    first = cards[0]
    assert (first.number, first.kind, first.question, first.context) == (1, "question", "Which colour?", "for the logo")
    assert first.options == [("red", None), ("blue", "calm")]
    assert (first.allow_free_text, first.multi_select) == (False, False)
    assert cards[1].number == 2 and cards[1].allow_free_text


def test_ask_callback_approves_a_write_and_refuses_another(workspace):
    asked = []

    def ask(card):
        asked.append(card)
        assert card.kind == "permission"
        return "allowed.txt" in card.question + (card.context or "")

    with Run(workspace, approval="ask", ask=ask) as run:
        allowed = run.call("write", {"path": "allowed.txt", "content": "yes\n"})
        refused = run.call("write", {"path": "refused.txt", "content": "no\n"})
    assert not allowed.is_error, allowed.text
    assert (workspace / "allowed.txt").read_text() == "yes\n"
    assert refused.is_error and not (workspace / "refused.txt").exists()
    assert len(asked) == 2
    with Run(workspace, approval="ask", ask=lambda card: REFUSE) as run:
        assert run.call("write", {"path": "r.txt", "content": ""}).is_error


def test_without_a_callback_a_write_is_refused_at_once(workspace):
    with Run(workspace, approval="ask") as run:
        started = time.monotonic()
        result = run.call("write", {"path": "x.txt", "content": "x"})
        elapsed = time.monotonic() - started
    assert result.is_error and "no approver is connected" in result.text
    assert elapsed < 2, elapsed
    assert not (workspace / "x.txt").exists()


def test_a_raising_callback_is_nobody_answering(workspace):
    def ask(card):
        raise KeyError("boom")

    with Run(workspace, ask=ask) as run:
        result = run.call("ask_user", {"question": "Why?"})
    assert result.is_error and "boom" in result.text, result.text


def test_acall_runs_several_calls_at_once(workspace):
    # Each callback waits until all three are in flight: only concurrent calls get through.
    barrier = threading.Barrier(3, timeout=20)

    def ask(card):
        barrier.wait()
        time.sleep(0.2)
        return Answer(text=f"answer {card.number}")

    async def main():
        with Run(workspace, ask=ask) as run:
            ticks = 0

            async def tick():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            ticker = asyncio.create_task(tick())
            results = await asyncio.gather(
                *(run.acall("ask_user", {"question": f"q{i}?"}) for i in range(3))
            )
            ticker.cancel()
            return results, ticks

    results, ticks = asyncio.run(main())
    assert [r.is_error for r in results] == [False] * 3, [r.text for r in results]
    assert sorted(re.search(r"answer \d", r.text).group() for r in results) == ["answer 1", "answer 2", "answer 3"]
    # The event loop kept running while the calls waited.
    assert ticks > 0


NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_tool_definitions_have_the_shape_each_api_documents(workspace):
    with Run(workspace, ask=lambda card: SKIP) as run:
        tools = run.tools()
        openai = run.tool_definitions("openai")
        responses = run.tool_definitions("openai-responses")
        anthropic = run.tool_definitions("anthropic")
        mcp_tools = run.tool_definitions("mcp")
    assert len(openai) == len(responses) == len(anthropic) == len(mcp_tools) == len(tools)
    for tool, chat, response, claude in zip(tools, openai, responses, anthropic):
        # Chat Completions: {"type": "function", "function": {name, description, parameters}}.
        assert chat.keys() == {"type", "function"} and chat["type"] == "function"
        assert chat["function"].keys() == {"name", "description", "parameters"}
        assert NAME.match(chat["function"]["name"]) and chat["function"]["name"] == tool.name
        assert chat["function"]["parameters"]["type"] == "object"
        # Responses API: the function's fields beside "type".
        assert response == {"type": "function", **chat["function"], "strict": False}
        # Messages API: {name, description, input_schema} with an object schema.
        assert claude.keys() == {"name", "description", "input_schema"}
        assert claude["input_schema"] == tool.input_schema and claude["input_schema"]["type"] == "object"
    # MCP: what the SDK's own model accepts, with the tier as annotations.
    from mcp.types import Tool

    for tool, definition in zip(tools, mcp_tools):
        parsed = Tool.model_validate(definition)
        assert parsed.name == tool.name and parsed.input_schema == tool.input_schema
        assert parsed.annotations.read_only_hint == (tool.tier == "read")


def test_version_and_stubs_ship_with_the_package():
    from pathlib import Path

    package = Path(agent_tools.__file__).parent
    assert (package / "_native.pyi").is_file() and (package / "py.typed").is_file()
    assert re.match(r"^\d+\.\d+\.\d+", agent_tools.__version__)


SLEEPER = {"code": "import time\ntime.sleep(60)", "description": "sleep for a whole minute in the kernel"}
QUICK = {"code": "print(6 * 7)", "description": "print a number from the same kernel"}


def test_cancelling_an_acall_cancels_the_tool(workspace):
    async def main(run):
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(run.acall("eval", SLEEPER), 1.0)
        # The eval lane is free again only if the sleeping cell was interrupted.
        return await asyncio.wait_for(run.acall("eval", QUICK), 20)

    with Run(workspace, approval="allow") as run:
        started = time.monotonic()
        result = asyncio.run(main(run))
        assert not result.is_error and "42" in result.text, result.text
        assert time.monotonic() - started < 20


def test_ctrl_c_cancels_a_blocking_call_and_raises(workspace):
    import os
    import signal

    with Run(workspace, approval="allow") as run:
        timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            run.call("eval", SLEEPER)
        assert time.monotonic() - started < 20
        result = run.call("eval", QUICK)
        assert not result.is_error and "42" in result.text, result.text


def test_the_run_reads_agent_tools_toml_as_serve_does(workspace, tmp_path):
    (workspace / "agent-tools.toml").write_text('approval = "allow"\n')
    with Run(workspace) as run:
        assert not run.call("write", {"path": "from-config.txt", "content": "x"}).is_error
    # The caller's choice wins over the file's, and another file can be named.
    with Run(workspace, approval="deny") as run:
        assert run.call("write", {"path": "denied.txt", "content": "x"}).is_error
    other = tmp_path / "other.toml"
    other.write_text('approval = "deny"\n')
    with Run(workspace, config=other) as run:
        assert run.call("write", {"path": "denied.txt", "content": "x"}).is_error
    assert not (workspace / "denied.txt").exists()
    (workspace / "agent-tools.toml").write_text("[output]\nmax_bytes = 'lots'\n")
    with pytest.raises(RuntimeError, match="max_bytes"):
        Run(workspace)


def test_progress_reports_reach_the_callback_while_the_call_runs(workspace):
    reports = []
    cell = {"code": "import time\nfor i in range(3):\n    print(f'line {i}', flush=True)\n    time.sleep(0.3)",
            "description": "print three lines with pauses between"}
    with Run(workspace, approval="allow") as run:
        result = run.call("eval", cell, progress=reports.append)
        assert not result.is_error, result.text
        later = asyncio.run(run.acall("eval", cell, progress=reports.append))
        assert not later.is_error, later.text
    messages = [report.message for report in reports]
    assert any("starting the python kernel" in message.lower() for message in messages), messages
    assert any("line 2" in message for message in messages), messages
    assert all(isinstance(report, agent_tools.Progress) for report in reports)


def test_a_figure_comes_back_as_png_bytes(workspace):
    from conftest import REPO, require

    venv = REPO / ".venv"
    require(
        "matplotlib in .venv",
        any((venv / "lib").glob("python3*/site-packages/matplotlib")),
        ".venv/bin/pip install matplotlib",
    )
    # The kernel runs the workspace's own .venv, as it would in a real project.
    (workspace / ".venv").symlink_to(venv)
    cell = {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
            "description": "plot a small line chart of three points"}
    with Run(workspace, approval="allow") as run:
        result = run.call("eval", cell)
    assert not result.is_error, result.text
    assert len(result.images) == 1 and isinstance(result.images[0], bytes)
    assert result.images[0].startswith(b"\x89PNG\r\n\x1a\n")


def test_a_call_from_inside_the_ask_callback_raises_there(workspace):
    errors = []

    def ask(card):
        try:
            run.call("read", {"path": "README.md"})
        except RuntimeError as error:
            errors.append(str(error))
        return "fine"

    with Run(workspace, ask=ask) as run:
        result = run.call("ask_user", {"question": "How are you?"})
    assert not result.is_error and "fine" in result.text, result.text
    assert errors and "inside an ask callback" in errors[0]
