"""`agent_tools.connect`: a run served by `agent-tools serve --http`, driven as a local `Run`
is (the same tools and definitions, cards through `ask`, progress, `acall`), the errors a
wrong token or a missing server give, and nothing left running after the server's SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import marked_processes, wait_gone

import agent_tools
from agent_tools import REFUSE, Answer, RemoteError, Run, Unauthorized, Unreachable, connect

COMMAND = Path(sys.executable).parent / "agent-tools"
TOKEN = "remote-test-token-0123456789abcdef"
FORMATS = [("openai", False), ("openai", True), ("openai-responses", False), ("openai-responses", True),
           ("anthropic", False), ("mcp", False)]
QUESTION = {
    "question": "Which database?",
    "context": "The migration depends on it.",
    "options": [{"label": "Postgres", "description": "what production runs"}, {"label": "SQLite"}],
    "allow_free_text": True,
}
SLEEPER = {"code": "import time\ntime.sleep(60)", "description": "sleep for a whole minute in the kernel"}
QUICK = {"code": "print(6 * 7)", "description": "print a number from the same kernel"}


@pytest.fixture(autouse=True)
def token_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The token where a container's client finds it; `serve` below takes it from there too."""
    monkeypatch.setenv("AGENT_TOOLS_TOKEN", TOKEN)


@contextlib.contextmanager
def serve(root: Path, *args: str) -> Iterator[str]:
    """`agent-tools serve --http` on a free loopback port with TOKEN in its environment; its
    URL. The server gets SIGTERM at the end, as a container's stop sends."""
    ready = root.parent / f"ready-{time.monotonic_ns()}"
    server = subprocess.Popen(
        [COMMAND, "serve", "--http", "127.0.0.1:0", "--root", root, "--ready-file", ready, *args],
        env={**os.environ, "AGENT_TOOLS_TOKEN": TOKEN},
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not (ready.exists() and ready.read_text().strip()):
            assert server.poll() is None, server.stderr.read().decode()
            assert time.monotonic() < deadline, "serve --http did not write its ready file in 30 s"
            time.sleep(0.05)
        yield ready.read_text().strip()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        finally:
            server.kill()
            stderr = server.stderr.read().decode()
            server.stderr.close()
        assert TOKEN not in stderr, "the token reached the server's log"


def test_tools_and_definitions_equal_a_local_runs(workspace, mark):
    for ask in (None, lambda card: REFUSE):
        with serve(workspace) as url, connect(url, ask=ask) as remote, Run(workspace, ask=ask) as local:
            listed, expected = remote.tools(), local.tools()
            assert [tool.name for tool in listed] == [tool.name for tool in expected]
            assert ("ask_user" in {tool.name for tool in listed}) == (ask is not None)
            # The wire carries output schemas without their field descriptions (in docs/tools).
            wire = {tool["name"]: tool["outputSchema"] for tool in local.tool_definitions("mcp")}
            for got, want in zip(listed, expected):
                assert (got.name, got.tier, got.description, got.input_schema) == (
                    want.name, want.tier, want.description, want.input_schema)
                assert got.output_schema == wire[got.name]
            for format, strict in FORMATS:
                assert remote.tool_definitions(format, strict) == local.tool_definitions(format, strict), format
            with pytest.raises(ValueError, match="unknown format"):
                remote.tool_definitions("gemini")
            with pytest.raises(ValueError, match="strict"):
                remote.tool_definitions("anthropic", strict=True)
    with serve(workspace, "--surface", "readonly") as url, connect(url) as remote:
        with Run(workspace, surface="readonly") as local:
            assert remote.tool_definitions("anthropic") == local.tool_definitions("anthropic")
    assert wait_gone(mark) == []


def test_read_eval_and_ast_grep_answer_as_a_local_run_does(workspace, mark):
    calls = [
        ("read", {"path": "README.md"}),
        ("ast_grep", {"pattern": "load($A)", "path": "src", "language": "python"}),
        ("read", {"path": 3}),
    ]
    with serve(workspace, "--approval", "allow") as url, connect(url) as remote:
        with Run(workspace, approval="allow") as local:
            for name, arguments in calls:
                assert remote.call(name, arguments) == local.call(name, arguments), name
        unknown = remote.call("nope", {})
        assert unknown.is_error and "unknown tool `nope`" in unknown.text, unknown.text
        cell = remote.call("eval", QUICK)
        assert not cell.is_error and "42" in cell.text, cell.text
        assert cell.structured["output"] == "42"
        assert repr(remote) == f"<agent_tools.RemoteRun {url} open>"
    assert remote.closed and repr(remote).endswith("closed>")
    with pytest.raises(RuntimeError, match="closed"):
        remote.call("read", {"path": "README.md"})
    assert wait_gone(mark) == []


def test_a_write_under_approval_ask_is_answered_through_ask(workspace, mark):
    asked = []

    def ask(card):
        asked.append(card)
        return "allowed.txt" in (card.context or "")

    with serve(workspace, "--approval", "ask") as url, connect(url, ask=ask) as remote:
        allowed = remote.call("write", {"path": "allowed.txt", "content": "yes\n"})
        refused = remote.call("write", {"path": "refused.txt", "content": "no\n"})
        assert not allowed.is_error, allowed.text
        assert refused.is_error and "denied" in refused.text, refused.text
    assert (workspace / "allowed.txt").read_text() == "yes\n"
    assert not (workspace / "refused.txt").exists()
    first, second = asked
    assert (first.number, first.kind, first.question) == (1, "permission", "Allow the agent to run `write` (write tier)?")
    assert '"path": "allowed.txt"' in first.context and first.options == []
    assert second.number == 2 and '"path": "refused.txt"' in second.context
    assert wait_gone(mark) == []


def test_ask_user_gives_the_card_a_local_run_gives(workspace, mark):
    remote_cards, local_cards = [], []

    def answering(cards):
        def ask(card):
            cards.append(card)
            if card.multi_select:
                return ["a", "b"]
            return Answer(selected=["SQLite"], text="it is small") if card.options else "because"
        return ask

    calls = [
        QUESTION,
        {"question": "Why?"},
        {"question": "Which ones?", "multi_select": True, "options": [{"label": "a"}, {"label": "b"}]},
    ]
    with serve(workspace) as url, connect(url, ask=answering(remote_cards)) as remote:
        with Run(workspace, ask=answering(local_cards)) as local:
            for arguments in calls:
                got, want = remote.call("ask_user", arguments), local.call("ask_user", arguments)
                assert not got.is_error, got.text
                assert got == want
    for got, want in zip(remote_cards, local_cards):
        assert got.expires_in != got.expires_in  # NaN: the form does not say
        assert got.__dict__ | {"expires_in": 0} == want.__dict__ | {"expires_in": 0}
    assert len(remote_cards) == len(local_cards) == 3
    assert wait_gone(mark) == []


def test_without_ask_a_write_is_refused_at_once_and_ask_user_is_absent(workspace, mark):
    with serve(workspace, "--approval", "ask") as url, connect(url) as remote:
        assert "ask_user" not in {tool.name for tool in remote.tools()}
        started = time.monotonic()
        result = remote.call("write", {"path": "x.txt", "content": "x"})
        assert time.monotonic() - started < 5
        assert result.is_error and "elicitation" in result.text, result.text
        assert remote.call("ask_user", {"question": "Anyone?"}).is_error
    assert not (workspace / "x.txt").exists()
    assert wait_gone(mark) == []


def test_progress_reaches_the_callback_for_a_long_cell(workspace, mark):
    reports = []
    cell = {"code": "import time\nfor i in range(3):\n    print(f'line {i}', flush=True)\n    time.sleep(0.6)",
            "description": "print three lines with pauses between"}
    with serve(workspace, "--approval", "allow") as url, connect(url) as remote:
        result = remote.call("eval", cell, progress=reports.append)
        assert not result.is_error, result.text
        later = asyncio.run(remote.acall("eval", cell, progress=reports.append))
        assert not later.is_error, later.text
    messages = [report.message for report in reports]
    assert any("starting the python kernel" in message.lower() for message in messages), messages
    assert any("line 2" in message for message in messages), messages
    assert all(isinstance(report, agent_tools.Progress) for report in reports)
    assert wait_gone(mark) == []


def test_acall_runs_calls_at_once_and_cancelling_one_cancels_it_on_the_server(workspace, mark):
    # Each callback waits until both calls have a card: only concurrent calls get through.
    barrier = threading.Barrier(2, timeout=20)

    def ask(card):
        barrier.wait()
        return Answer(text=f"answer {card.number}")

    async def both(remote):
        return await asyncio.gather(*(remote.acall("ask_user", {"question": f"q{i}?"}) for i in range(2)))

    async def cancelled_then_quick(remote):
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(remote.acall("eval", SLEEPER), 3.0)
        # The eval lane is free again only if the server interrupted the sleeping cell.
        return await asyncio.wait_for(remote.acall("eval", QUICK), 30)

    with serve(workspace, "--approval", "allow") as url, connect(url, ask=ask) as remote:
        answers = asyncio.run(asyncio.wait_for(both(remote), 60))
        assert all(not answer.is_error for answer in answers), answers
        assert {answer.text.count("answer ") for answer in answers} == {1}
        started = time.monotonic()
        quick = asyncio.run(cancelled_then_quick(remote))
        assert not quick.is_error and "42" in quick.text, quick.text
        assert time.monotonic() - started < 30
    assert wait_gone(mark) == []


def test_ctrl_c_closes_the_request_and_the_server_cancels_the_call(workspace, mark):
    with serve(workspace, "--approval", "allow") as url, connect(url) as remote:
        timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            remote.call("eval", SLEEPER)
        assert time.monotonic() - started < 20
        # The kernel's lane is free only if the server interrupted the sleeping cell.
        result = remote.call("eval", QUICK)
        assert not result.is_error and "42" in result.text, result.text
        assert time.monotonic() - started < 30
    assert wait_gone(mark) == []


def test_a_wrong_or_missing_token_and_no_server_say_what_to_do(workspace, monkeypatch):
    with serve(workspace, "--max-body-bytes", "4096") as url:
        monkeypatch.delenv("AGENT_TOOLS_TOKEN")
        with pytest.raises(Unauthorized, match=r"none was given: pass connect\(url, token=\.\.\.\) or set AGENT_TOOLS_TOKEN"):
            connect(url)
        with pytest.raises(Unauthorized, match="refused the token given in token=") as refused:
            connect(url, token="not-the-right-token-at-all")
        assert "not-the-right-token" not in str(refused.value)
        monkeypatch.setenv("AGENT_TOOLS_TOKEN", "also-not-the-right-token")
        with pytest.raises(Unauthorized, match="refused the token given in AGENT_TOOLS_TOKEN"):
            connect(url)
        # As a token file holds it, with its newline.
        monkeypatch.setenv("AGENT_TOOLS_TOKEN", TOKEN + "\n")
        with connect(url) as remote:
            assert TOKEN not in repr(remote)
            with pytest.raises(RemoteError, match="413.*--max-body-bytes"):
                remote.call("write", {"path": "big.txt", "content": "x" * 5000})
        # A URL without a path is the server's /mcp.
        with connect(url.removesuffix("/mcp")) as remote:
            assert remote.call("read", {"path": "README.md"}).text.endswith("world\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    with pytest.raises(Unreachable, match=rf"nothing answers at http://127\.0\.0\.1:{free}/mcp .*serve --http"):
        connect(f"http://127.0.0.1:{free}/mcp")
    assert issubclass(Unreachable, ConnectionError)
    with pytest.raises(ValueError, match="http://"):
        connect("127.0.0.1:8765")
    with pytest.raises(ValueError, match="a header cannot carry") as unsendable:
        connect(f"http://127.0.0.1:{free}/mcp", token="two words")
    assert "two words" not in str(unsendable.value)


def test_sigterm_to_the_server_leaves_nothing_running(workspace, mark):
    with serve(workspace, "--approval", "allow") as url, connect(url) as remote:
        cell = remote.call("eval", {"code": "import subprocess\nsubprocess.Popen(['sleep', '3011'])\nprint('started')",
                                    "description": "start a sleeping child of the kernel"})
        assert not cell.is_error and "started" in cell.text, cell.text
        assert marked_processes(mark), "the server and its kernel should carry the mark"
    assert wait_gone(mark, 15) == []
