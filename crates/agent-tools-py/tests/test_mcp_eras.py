"""`agent-tools serve` to the MCP Python SDK client in both protocol eras (PROD-2), over
both transports: every test runs over stdio and over Streamable HTTP (`serve --http`, the
SDK's `streamable_http_client` with the bearer token).

2025-11-25 (`mode="legacy"`): a session, cards as server-initiated elicitation requests.
2026-07-28 (`mode="auto"`, which discovers): self-contained requests, cards as
`input_required` results that the SDK answers through the same callback and re-sends, and
long calls as tasks of the `io.modelcontextprotocol/tasks` extension, which the SDK has no
client for, so the tests claim `resultType: "task"` and poll `tasks/get` themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import pytest

from conftest import CLIENT_CALLS, check_client_answers, client_project, wait_gone

COMMAND = Path(sys.executable).parent / "agent-tools"
ERAS = ["legacy", "auto"]
TOKEN = "pytest-token-0123456789abcdefghij"
# The transport the current test runs over (see the `transport` fixture).
TRANSPORT = "stdio"
TASKS = "io.modelcontextprotocol/tasks"
QUESTION = {
    "question": "Which database?",
    "context": "The migration depends on it.",
    "options": [{"label": "Postgres", "description": "what production runs"}, {"label": "SQLite"}],
    "allow_free_text": True,
}


def run(coroutine, seconds: float = 90):
    return asyncio.run(asyncio.wait_for(coroutine, seconds))


@functools.cache
def sdk():
    """The SDK's pieces, and the tasks extension a test client declares."""
    import mcp_types as types
    from mcp import Client
    from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
    from mcp.client.stdio import StdioServerParameters
    from pydantic import ConfigDict, Field, TypeAdapter

    class CreatedTask(types.Result):
        model_config = ConfigDict(extra="allow", populate_by_name=True)
        result_type: Literal["task"] = Field(alias="resultType")
        task_id: str = Field(alias="taskId")
        status: str

    class Raw(types.Request[dict[str, Any], str]):
        pass

    class Tasks(ClientExtension):
        identifier = TASKS

        def claims(self):
            return (ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve),)

        async def _resolve(self, created: CreatedTask, context: ClaimContext):
            raise AssertionError("the tests drive tasks themselves")

    return types, Client, StdioServerParameters, CreatedTask, Raw, Tasks, TypeAdapter(dict[str, Any])


@pytest.fixture(autouse=True, params=["stdio", "http"])
def transport(request, monkeypatch):
    """Runs each test over stdio and again over Streamable HTTP."""
    monkeypatch.setattr(sys.modules[__name__], "TRANSPORT", request.param)
    return request.param


@contextlib.contextmanager
def served_over_http(workspace, mark, *args, log: Path | None = None, env: dict[str, str] | None = None):
    """`agent-tools serve --http 127.0.0.1:0 …` with the token in its environment: its URL,
    until the block ends and SIGTERM ends the run."""
    with tempfile.TemporaryDirectory() as scratch:
        ready = Path(scratch) / "ready"
        stderr = open(log or Path(scratch) / "stderr", "w")
        server = subprocess.Popen(
            [str(COMMAND), "serve", "--http", "127.0.0.1:0", "--root", str(workspace), "--ready-file", str(ready), *args],
            env={"PATH": "/usr/bin:/bin", "AGENT_TOOLS_TEST_MARK": mark, "AGENT_TOOLS_TOKEN": TOKEN, **(env or {})},
            stdin=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            deadline = time.monotonic() + 30
            while not ready.exists():
                assert server.poll() is None, f"serve --http exited with {server.returncode}"
                assert time.monotonic() < deadline, "serve --http was not ready in 30 s"
                time.sleep(0.02)
            yield ready.read_text().strip()
        finally:
            server.terminate()
            server.wait(30)
            stderr.close()


@contextlib.asynccontextmanager
async def connect(era, workspace, mark, *args, elicit=None, tasks=False, **client_options):
    types, Client, StdioServerParameters, _, _, Tasks, _ = sdk()
    options: dict[str, Any] = {"mode": era, "cache": None, "read_timeout_seconds": 60}
    if elicit is not None:
        options["elicitation_callback"] = elicit
    if tasks:
        options["extensions"] = [Tasks()]
    options.update(client_options)
    expected = "2025-11-25" if era == "legacy" else "2026-07-28"
    if TRANSPORT == "http":
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async def name_the_task(request):
            # The SDK has no tasks client: the tests send `tasks/*` as raw requests, and on
            # 2026-07-28 a request names its target in `Mcp-Name`, as a tasks client would.
            if request.method == "POST" and "mcp-name" not in request.headers:
                body = json.loads(request.content or b"{}")
                task = (body.get("params") or {}).get("taskId")
                if str(body.get("method", "")).startswith("tasks/") and task:
                    request.headers["Mcp-Name"] = task

        with served_over_http(workspace, mark, *args) as url:
            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60, event_hooks={"request": [name_the_task]}
            )
            async with Client(streamable_http_client(url, http_client=http), **options) as client:
                assert client.protocol_version == expected, client.protocol_version
                yield client
        return
    server = StdioServerParameters(
        command=str(COMMAND),
        args=["serve", "--root", str(workspace), *args],
        env={"PATH": "/usr/bin:/bin", "AGENT_TOOLS_TEST_MARK": mark},
    )
    async with Client(server, **options) as client:
        assert client.protocol_version == expected, client.protocol_version
        yield client


def person(*answers):
    """An elicitation callback answering each card in turn (the last answer repeats), and the
    messages of the cards it saw."""
    types = sdk()[0]
    seen: list[str] = []
    queue = list(answers)

    async def answer(context, params):
        seen.append(params.message)
        what = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(what, (int, float)):
            await asyncio.sleep(what)
            return types.ElicitResult(action="accept", content={"skip": True})
        if what in ("decline", "cancel"):
            return types.ElicitResult(action=what)
        return types.ElicitResult(action="accept", content=what)

    return answer, seen


def text(result) -> str:
    return result.content[0].text


async def task_get(client, task_id: str) -> dict[str, Any]:
    _, _, _, _, Raw, _, RAW = sdk()
    return await client.session.send_request(Raw(method="tasks/get", params={"taskId": task_id}), RAW)


async def settled(client, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        task = await task_get(client, task_id)
        if task["status"] != "working" or time.monotonic() > deadline:
            return task
        await asyncio.sleep(0.1)


async def start_task(client, name: str, arguments: dict[str, Any]):
    CreatedTask = sdk()[3]
    created = await client.session.call_tool(name, arguments, allow_claimed=True, allow_input_required=True)
    assert isinstance(created, CreatedTask), created
    return created.task_id


def cell(code: str) -> dict[str, str]:
    return {"code": code, "description": "a cell the protocol tests run here"}


@pytest.mark.parametrize("era", ERAS)
def test_tools_list_per_surface_with_titles(era, workspace, mark):
    answer, _ = person("decline")

    async def listed(*args):
        async with connect(era, workspace, mark, *args, elicit=answer) as client:
            return (await client.list_tools()).tools

    full = run(listed())
    names = {tool.name for tool in full}
    assert {"read", "write", "ask_user", "eval", "lsp", "debug"} <= names
    read = next(tool for tool in full if tool.name == "read")
    assert read.title == "Read a file" and read.annotations.read_only_hint is True
    plan = {tool.name for tool in run(listed("--surface", "readonly"))}
    assert plan == {"ask_user", "ast_grep", "lsp", "read"}
    assert wait_gone(mark) == []


@pytest.mark.parametrize("era", ERAS)
def test_read_and_ast_grep_answer_in_text_and_in_structured_content(era, workspace, mark):
    """The SDK validates each structured result against the tool's output schema."""

    async def go():
        async with connect(era, workspace, mark) as client:
            read = await client.call_tool("read", {"path": "src/app.py"})
            assert not read.is_error and "return open(path).read()" in text(read), text(read)
            assert "return open(path).read()" in read.structured_content["content"]
            found = await client.call_tool("ast_grep", {"pattern": "open($P)", "language": "python"})
            assert "src/app.py:2:" in text(found), text(found)
            assert found.structured_content["matches"], found.structured_content

    run(go())
    assert wait_gone(mark) == []


@pytest.mark.parametrize("era", ERAS)
def test_the_client_matrix_answers_in_both_eras(era, tmp_path, mark):
    """The matrix's calls (issue 21), each result validated by the SDK against its tool's
    output schema: a cell, a worker spawned and waited for, a write whose card the person
    answers, and a cell past the task grace, answered as a result to a client without tasks."""
    root = client_project(tmp_path)
    answer, cards = person({"decision": "allow"})

    async def go():
        shown = []
        async with connect(era, root, mark, "--approval", "ask", "--vibe", elicit=answer) as client:
            for name, arguments in CLIENT_CALLS:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, text(result))
                shown.append(text(result) + json.dumps(result.structured_content))
        return shown

    check_client_answers(run(go()), root)
    assert any("`write`" in card for card in cards), cards
    assert wait_gone(mark) == []


@pytest.mark.parametrize("era", ERAS)
def test_ask_user_answered_and_skipped(era, workspace, mark):
    answer, seen = person({"selected": "Postgres", "answer": "version 16"}, {"skip": True})

    async def session():
        async with connect(era, workspace, mark, elicit=answer) as client:
            return await client.call_tool("ask_user", QUESTION), await client.call_tool("ask_user", QUESTION)

    answered, skipped = run(session())
    assert text(answered) == 'Card 1 answered.\nSelected: "Postgres"\nThey wrote: version 16'
    assert answered.structured_content["outcome"] == "answered"
    assert skipped.structured_content["outcome"] == "skipped"
    assert seen[0].startswith("Card 1 · question from the agent\n\nWhich database?")
    assert wait_gone(mark) == []


@pytest.mark.parametrize("era", ERAS)
def test_ask_user_expired(era, workspace, mark):
    from mcp.shared.exceptions import MCPError

    (workspace / "agent-tools.toml").write_text("[ask]\nexpiry_seconds = 1\n")
    answer, _ = person(2.5)

    async def session():
        async with connect(era, workspace, mark, elicit=answer) as client:
            try:
                return await client.call_tool("ask_user", QUESTION)
            except MCPError as error:
                return error

    outcome = run(session())
    # In both eras the call gets the tool's own expiry result (ASK-3): the legacy era while its
    # elicitation request is open, the 2026 era when the late answer comes back and finds the
    # card's result kept under its handle.
    assert not isinstance(outcome, MCPError), outcome
    assert outcome.is_error and text(outcome).startswith("card 1 expired after 1s without an answer")
    assert wait_gone(mark) == []


@pytest.mark.parametrize("era", ERAS)
def test_an_approval_card_denies_then_allows_a_write(era, workspace, mark):
    answer, seen = person({"decision": "deny"}, {"decision": "allow"})

    async def session():
        async with connect(era, workspace, mark, "--approval", "ask", elicit=answer) as client:
            denied = await client.call_tool("write", {"path": "README.md", "content": "first\n"})
            after_deny = (workspace / "README.md").read_text()
            allowed = await client.call_tool("write", {"path": "README.md", "content": "second\n"})
            return denied, after_deny, allowed

    denied, after_deny, allowed = run(session())
    assert denied.is_error and text(denied).startswith("`write` was not run: the person denied permission (card 1)")
    assert after_deny == "hello\nworld\n"
    assert not allowed.is_error, text(allowed)
    assert (workspace / "README.md").read_text() == "second\n"
    assert seen[1].startswith("Card 2 · permission request\n\nAllow the agent to run `write` (write tier)?")
    assert wait_gone(mark) == []


@pytest.mark.parametrize("era", ERAS)
def test_without_elicitation_ask_user_is_absent_and_a_write_is_refused_at_once(era, workspace, mark):
    async def session():
        async with connect(era, workspace, mark, "--approval", "ask") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            started = time.monotonic()
            refused = await client.call_tool("write", {"path": "README.md", "content": "gone\n"})
            return names, refused, time.monotonic() - started

    names, refused, took = run(session())
    assert "ask_user" not in names and "write" in names
    assert refused.is_error
    assert text(refused).startswith("`write` was not run:") and "no approver is connected" in text(refused)
    assert took < 10, took
    assert (workspace / "README.md").read_text() == "hello\nworld\n"
    assert wait_gone(mark) == []


def test_a_forged_or_replayed_resume_handle_is_refused(workspace, mark):
    from mcp.shared.exceptions import MCPError
    types = sdk()[0]
    answer, _ = person({"decision": "allow"})

    async def session():
        async with connect("auto", workspace, mark, "--approval", "ask", elicit=answer) as client:
            arguments = {"path": "README.md", "content": "approved\n"}
            first = await client.session.call_tool("write", arguments, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult), first
            (key, request), = first.input_requests.items()
            assert key == "card-1" and request.params.requested_schema["required"] == ["decision"]
            allow = {key: types.ElicitResult(action="accept", content={"decision": "allow"})}
            refusals = []
            forged = "f" * len(first.request_state)
            for state in (forged, first.request_state, first.request_state):
                try:
                    result = await client.session.call_tool(
                        "write", arguments, input_responses=allow, request_state=state, allow_input_required=True
                    )
                    refusals.append(result)
                    (workspace / "README.md").write_text("after\n")
                except MCPError as error:
                    refusals.append(error.error.message)
            return refusals

    forged, answered, replayed = run(session())
    assert forged.startswith("`requestState` does not name a call waiting on a card")
    assert not answered.is_error and text(answered) == "Replaced README.md (1 line, 9 bytes)"
    assert "it was already answered" in replayed
    assert (workspace / "README.md").read_text() == "after\n"
    assert wait_gone(mark) == []


# The SDK advertises client extensions only to 2026-07-28 servers, so tasks are tried there;
# the Rust tests cover a 2025-11-25 session that declares them.
@pytest.mark.parametrize("era", ["auto"])
def test_a_long_cell_is_a_task_polled_to_completion_and_cancelling_one_keeps_the_kernel(era, workspace, mark):
    _, _, _, _, Raw, _, RAW = sdk()

    async def session():
        async with connect(era, workspace, mark, "--approval", "allow", tasks=True) as client:
            quick = await client.session.call_tool("eval", cell("kept = 'state'\n1 + 1"), allow_claimed=True)
            slow = await start_task(
                client, "eval", cell("import time\nfor i in range(3):\n    print('step', i, flush=True)\n    time.sleep(1)\n6 * 7")
            )
            done = await settled(client, slow)
            endless = await start_task(client, "eval", cell("import time\nwhile True:\n    time.sleep(0.1)"))
            await client.session.send_request(Raw(method="tasks/cancel", params={"taskId": endless}), RAW)
            cancelled = await settled(client, endless)
            after = await client.call_tool("eval", cell("kept"))
            return quick, done, cancelled, after

    quick, done, cancelled, after = run(session())
    assert text(quick).endswith("2"), quick
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"].endswith("step 2\n42")
    assert cancelled["status"] == "cancelled", cancelled
    assert "interrupted" in cancelled["statusMessage"]
    assert text(after).endswith("'state'")
    assert wait_gone(mark) == []


def test_a_cells_write_under_ask_goes_out_as_elicitation_in_a_session(workspace, mark):
    answer, seen = person({"decision": "allow"})

    async def session():
        async with connect("legacy", workspace, mark, "--approval", "ask", elicit=answer, tasks=True) as client:
            return await client.call_tool(
                "eval", cell("r = tool('write', {'path': 'made.txt', 'content': 'by the cell'})\nstr(r)")
            )

    result = run(session())
    assert not result.is_error, text(result)
    assert [message.split("\n")[2] for message in seen] == [
        "Allow the agent to run `eval` (exec tier)?",
        "Allow the agent to run `write` (write tier)?",
    ]
    assert (workspace / "made.txt").read_text() == "by the cell"
    assert wait_gone(mark) == []


@pytest.mark.parametrize("era", ["auto"])
def test_a_cells_write_under_ask_puts_its_task_in_input_required(era, workspace, mark):
    _, _, _, _, Raw, _, RAW = sdk()
    answer, _ = person({"decision": "allow"})

    async def session():
        async with connect(era, workspace, mark, "--approval", "ask", elicit=answer, tasks=True) as client:
            task_id = await start_task(
                client, "eval", cell("r = tool('write', {'path': 'made.txt', 'content': 'by the cell'})\nstr(r)")
            )
            asked = []
            while (task := await settled(client, task_id))["status"] == "input_required":
                (key, request), = task["inputRequests"].items()
                asked.append(request["params"]["message"])
                allow = {key: {"action": "accept", "content": {"decision": "allow"}}}
                await client.session.send_request(
                    Raw(method="tasks/update", params={"taskId": task_id, "inputResponses": allow}), RAW
                )
                await asyncio.sleep(0.2)
            return asked, task

    asked, task = run(session())
    assert [message.split("\n")[2] for message in asked] == [
        "Allow the agent to run `eval` (exec tier)?",
        "Allow the agent to run `write` (write tier)?",
    ]
    assert "Requested by a running `eval` call" in asked[1]
    assert task["status"] == "completed", task
    assert (workspace / "made.txt").read_text() == "by the cell"
    assert wait_gone(mark) == []


@pytest.mark.parametrize("era", ERAS)
def test_progress_reaches_a_client_that_gave_a_token(era, workspace, mark):
    messages: list[str] = []

    async def progress(done, total, message):
        messages.append(message or "")

    async def session():
        async with connect(era, workspace, mark, "--approval", "allow") as client:
            return await client.call_tool(
                "eval",
                cell("import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.8)"),
                progress_callback=progress,
            )

    result = run(session())
    assert not result.is_error, text(result)
    assert any("tick" in message for message in messages), messages
    assert wait_gone(mark) == []


# The token and the log under test are those of `serve --http`: this test names its transport
# (a direct parameter takes the place of the autouse fixture's two).
@pytest.mark.parametrize("transport", ["http"])
@pytest.mark.parametrize("era", ERAS)
def test_no_token_or_card_answer_reaches_the_log_even_at_trace(era, workspace, mark, tmp_path, transport):
    """Over HTTP the log is the operator's: at the most verbose level it still holds neither
    the bearer token nor what the person answered on a card."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    types, Client = sdk()[0], sdk()[1]
    secret = "answer-" + os.urandom(8).hex()
    answer, _ = person({"selected": "Postgres", "answer": secret}, {"decision": "allow"})
    log = tmp_path / "serve.log"

    async def session(url):
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        async with Client(
            streamable_http_client(url, http_client=http), mode=era, elicitation_callback=answer, read_timeout_seconds=60
        ) as client:
            answered = await client.call_tool("ask_user", QUESTION)
            written = await client.call_tool("write", {"path": "notes.txt", "content": secret})
            return answered, written

    with served_over_http(workspace, mark, log=log, env={"AGENT_TOOLS_LOG": "trace"}) as url:
        answered, written = run(session(url))
    assert secret in text(answered)
    assert not written.is_error, text(written)
    logged = log.read_text()
    # The log is at its most verbose (the write's report logs at debug).
    assert " DEBUG " in logged, logged
    assert TOKEN not in logged
    assert secret not in logged
    assert wait_gone(mark) == []
