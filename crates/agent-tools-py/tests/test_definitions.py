"""`Run.tool_definitions` against the SDKs that take them: OpenAI's strict mode (checked by
the Agents SDK's own strict-schema pass), the Responses shape, and mypy over a loop that
hands the definitions to the real `openai` and `anthropic` clients."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from agent_tools import Run


@pytest.mark.parametrize("format", ["openai", "openai-responses"])
def test_strict_definitions_pass_openai_strict_rules(workspace, format):
    from agents.strict_schema import ensure_strict_json_schema

    with Run(workspace, approval="allow", vibe=True, ask=lambda card: None) as run:
        definitions = run.tool_definitions(format, strict=True)
    assert len(definitions) >= 16
    for definition in definitions:
        function = definition["function"] if format == "openai" else definition
        assert function["strict"] is True, definition
        schema = function["parameters"]
        # The SDK rewrites a schema until strict mode takes it; a strict one comes back as it was.
        assert ensure_strict_json_schema(copy.deepcopy(schema)) == schema, function["name"]


def test_the_responses_shape_always_says_strict(workspace):
    with Run(workspace) as run:
        definitions = run.tool_definitions("openai-responses")
    assert definitions and all(d["strict"] is False for d in definitions)
    with Run(workspace) as run, pytest.raises(ValueError, match="strict=True"):
        run.tool_definitions("anthropic", strict=True)


def test_a_strict_call_with_nulls_runs_as_one_without_them(workspace):
    """Strict mode fills every argument; `null` is taken as absent."""
    with Run(workspace, approval="allow") as run:
        result = run.call("read", {"path": "README.md", "offset": None, "limit": None})
        assert not result.is_error, result.text
        result = run.call(
            "edit",
            {"path": "README.md", "old_string": "hello", "new_string": "hi", "replace_all": None},
        )
        assert not result.is_error, result.text


def test_a_refused_write_tells_python_how_to_allow_it(workspace):
    with Run(workspace) as run:
        result = run.call("write", {"path": "x.txt", "content": "x"})
    assert result.is_error
    assert 'approval="allow"' in result.text, result.text
    assert "--approval" not in result.text, result.text


LOOP = '''
from anthropic import Anthropic
from openai import OpenAI
from agent_tools import Run, connect

with Run(".", approval="allow") as run:
    reply = Anthropic().messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        tools=run.tool_definitions("anthropic"),
        messages=[{"role": "user", "content": "Read README.md"}],
    )
    completion = OpenAI().chat.completions.create(
        model="gpt-5",
        tools=run.tool_definitions("openai", strict=True),
        messages=[{"role": "user", "content": "Read README.md"}],
    )
    response = OpenAI().responses.create(
        model="gpt-5",
        tools=run.tool_definitions("openai-responses"),
        input="Read README.md",
    )

# A run served by `agent-tools serve --http` hands out the same types.
with connect("http://127.0.0.1:8765/mcp") as remote:
    Anthropic().messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        tools=remote.tool_definitions("anthropic"),
        messages=[{"role": "user", "content": "Read README.md"}],
    )
    OpenAI().responses.create(
        model="gpt-5",
        tools=remote.tool_definitions("openai-responses", strict=True),
        input="Read README.md",
    )
'''


def mypy(script: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", *flags, str(script)],
        capture_output=True,
        text=True,
    )


def test_mypy_accepts_the_loops_with_the_real_sdks(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    checked = mypy(script, "--strict")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The package README's own agent loop, as a reader copies it.
    readme = (REPO / "crates/agent-tools-py/README.md").read_text()
    block = re.search(r"```python\n(.*?)```", readme, re.S)
    assert block, "the README has no Python example"
    script.write_text(block.group(1))
    checked = mypy(script)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The check has teeth: definitions as plain dicts are refused.
    script.write_text(LOOP.replace('run.tool_definitions("anthropic")', "[dict(name='x')]"))
    assert mypy(script, "--strict").returncode != 0
