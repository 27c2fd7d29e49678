"""The host's side of `cargo xtask container`: drives `agent-tools serve --http` running in a
container with the official MCP Python SDK's streamable-HTTP client, as a remote agent would.

One JSON line per check on stdout: {"check", "server", "ok", "detail", "seconds"}. Once every
call is made it prints {"hold": true} and keeps the session (and what the run started for it:
the language server, the kernel, the debugged program) open until a line arrives on stdin,
so the container can be inspected, stopped or killed under a connected client. Then it
leaves without a goodbye: the server is gone by then.

    python drive.py URL TOKEN_FILE PROJECT SCENARIO EDIT_JSON

PROJECT is the project's folder on the host (lines are looked up in it); SCENARIO is `full`
(diagnostics, an edit with fallout, a cell, a breakpoint), `brief` (a diagnostics call, a
cell and a breakpoint: the processes a kill must end) or `ping` (a cell); EDIT_JSON holds the
edit's `file`, `old` and `new`.
"""

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

# The script the debugger launches, and the line of the library it stops at.
SCRIPT = "try_chunked.py"
SCRIPT_TEXT = "from more_itertools import chunked\n\nprint(list(chunked([1, 2, 3, 4, 5], 2)))\n"
BREAK_FILE = "more_itertools/more.py"
BREAK_TEXT = "    iterator = iter(partial(take, n, iter(iterable)), [])"


def report(check, server, ok, detail, started):
    line = {
        "check": check,
        "server": server,
        "ok": bool(ok),
        "detail": detail,
        "seconds": round(time.monotonic() - started, 2),
    }
    print(json.dumps(line), flush=True)


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def call(client, tool, arguments, timeout=240):
    return await client.call_tool(tool, arguments, read_timeout_seconds=timeout)


async def diagnostics(client):
    started = time.monotonic()
    result = await call(client, "lsp", {"operation": "diagnostics", "path": BREAK_FILE})
    data = result.structured_content or {}
    server = data.get("server", "?")
    ok = not result.is_error and server == "basedpyright"
    detail = f"{BREAK_FILE}: {data.get('total', len(data.get('diagnostics', [])))} diagnostics"
    if not ok:
        detail = text_of(result)[:400]
    report("lsp diagnostics", server, ok, detail, started)


async def edit_with_fallout(client, edit):
    started = time.monotonic()
    result = await call(
        client,
        "edit",
        {"path": edit["file"], "old_string": edit["old"], "new_string": edit["new"]},
    )
    report_ = (result.structured_content or {}).get("diagnostics") or {}
    fallout = [
        entry
        for entry in report_.get("fallout", [])
        if entry.get("path") != edit["file"] and entry.get("introduced", 0) > 0
    ]
    ok = not result.is_error and bool(fallout)
    detail = ", ".join(f"{entry['path']}: {entry['introduced']} new" for entry in fallout)
    if not ok:
        detail = text_of(result)[:600]
    report(f"edit {edit['file']}: fallout in another file", "basedpyright", ok, detail, started)
    # Put the stub back, so the project is as it came for what follows.
    revert = await call(
        client,
        "edit",
        {"path": edit["file"], "old_string": edit["new"], "new_string": edit["old"]},
    )
    if revert.is_error:
        report("edit reverted", "basedpyright", False, text_of(revert)[:400], started)


async def cell(client):
    started = time.monotonic()
    code = (
        "import os, sys, more_itertools\n"
        # A grandchild whose parent exits at once: an orphan for PID 1 to reap.
        "os.system('sleep 0.2 &')\n"
        "print(more_itertools.__file__, sys.executable, os.getuid())\n"
    )
    result = await call(
        client,
        "eval",
        {"code": code, "description": "where the kernel runs, and leave an orphan"},
    )
    data = result.structured_content or {}
    output = data.get("output", "")
    ok = not result.is_error and "/workspace/more_itertools/__init__.py" in output
    server = f"{data.get('interpreter', '?')} {data.get('version', '')}".strip()
    report("eval python cell", server, ok, output.strip()[:300], started)


async def breakpoint(client, project):
    started = time.monotonic()
    lines = (project / BREAK_FILE).read_text().splitlines()
    line = lines.index(BREAK_TEXT) + 1
    written = await call(client, "write", {"path": SCRIPT, "content": SCRIPT_TEXT})
    placed = await call(client, "debug", {"operation": "breakpoints", "path": BREAK_FILE, "lines": [line]})
    launched = await call(client, "debug", {"operation": "launch", "program": SCRIPT})
    data = launched.structured_content or {}
    stopped = data.get("stopped") or {}
    ok = (
        not written.is_error
        and not placed.is_error
        and not launched.is_error
        and stopped.get("path") == BREAK_FILE
        and stopped.get("line") == line
    )
    detail = f"stopped at {stopped.get('path')}:{stopped.get('line')} ({stopped.get('reason')})"
    if not ok:
        detail = (text_of(placed) + "\n" + text_of(launched))[:600]
    adapter = data.get("adapter")
    server = adapter if isinstance(adapter, str) else json.dumps(adapter)
    report("debug launch to a breakpoint", server, ok, detail, started)


async def drive(url, token, project, scenario, edit):
    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(30, read=300)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as client:
                started = time.monotonic()
                await client.initialize()
                listed = await client.list_tools()
                names = sorted(tool.name for tool in listed.tools)
                wanted = {"lsp", "edit", "eval", "debug", "write"}
                report(
                    "initialize and list tools",
                    "",
                    wanted <= set(names),
                    f"{len(names)} tools",
                    started,
                )
                if scenario != "ping":
                    await diagnostics(client)
                if scenario == "full":
                    await edit_with_fallout(client, edit)
                await cell(client)
                if scenario != "ping":
                    await breakpoint(client, project)
                print(json.dumps({"hold": True}), flush=True)
                # Held open until the host has looked, and stopped or killed the container.
                await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
                os._exit(0)


def main():
    url, token_file, project, scenario, edit = sys.argv[1:6]
    token = Path(token_file).read_text().strip()
    asyncio.run(asyncio.wait_for(drive(url, token, Path(project), scenario, json.loads(edit)), 900))


if __name__ == "__main__":
    main()
