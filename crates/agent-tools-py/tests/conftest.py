"""Shared fixtures: a workspace per test, the repository's test tools, and a scan of /proc."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
MARK = "AGENT_TOOLS_TEST_MARK"


def require(name: str, installed: bool, install: str) -> None:
    """Locally a missing tool is reported loudly and the test skipped; under CI=true it fails."""
    if installed:
        return
    message = f"{name} is not installed; `cargo xtask ci` installs it, or run: {install}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    print(f"\n!!!!!!!! SKIPPED: {message} !!!!!!!!\n", file=sys.stderr)
    pytest.skip(message)


def write_files(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_files(
        root,
        {
            "README.md": "hello\nworld\n",
            "src/app.py": "def load(path):\n    return open(path).read()\n\n\nprint(load('x'))\n",
        },
    )
    return root.resolve()


@pytest.fixture
def mark(monkeypatch: pytest.MonkeyPatch) -> str:
    """A unique value in this process's environment, so every child a run starts carries it."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(MARK, value)
    return value


def marked_processes(value: str) -> list[int]:
    """Pids other than ours whose environment has MARK=value."""
    needle = f"{MARK}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if needle in environ.read().split(b"\0"):
                    # A zombie has ended: only its parent's wait is missing.
                    with open(f"/proc/{entry}/stat", "rb") as stat:
                        if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                            continue
                    found.append(int(entry))
        except OSError:
            continue
    return found


def wait_gone(value: str, seconds: float = 5.0) -> list[int]:
    """Marked processes still alive after `seconds` (a killed group takes a moment to go)."""
    deadline = time.monotonic() + seconds
    while (left := marked_processes(value)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


# What every client of the matrix (issue 21) calls, in order: the read-only tools, a worker
# (with `--vibe`), a write under an approval card, and one long call (a cell that sleeps past
# the server's task grace, so a client that declared tasks gets it as a task).
CLIENT_CALLS = [
    ("read", {"path": "app.py"}),
    ("eval", {"code": "print(6 * 7)", "description": "print the product of six and seven"}),
    ("ast_grep", {"pattern": "return $X", "language": "python"}),
    ("vibe_spawn", {"brief": "say hello", "label": "greeter"}),
    ("vibe_wait", {"worker_id": "w1", "timeout_seconds": 30}),
    ("write", {"path": "new.txt", "content": "hi\n"}),
    (
        "eval",
        {
            "code": "import time\ntime.sleep(2.5)\nprint('slept')",
            "description": "sleep two and a half seconds, then print",
        },
    ),
]


def client_project(tmp_path: Path) -> Path:
    """A small project whose `agent-tools.toml` names a worker command: a script that reads
    its brief from stdin (as a real worker does) and answers with a line."""
    root = (tmp_path / "project").resolve()
    worker = tmp_path / "worker.py"
    worker.write_text(
        f"#!{sys.executable}\nimport sys\nbrief = sys.stdin.read().strip()\n"
        "print(f'worker read: {brief}')\n"
    )
    worker.chmod(0o755)
    write_files(
        root,
        {
            "app.py": "def area(side: float) -> float:\n    return side * side\n",
            "agent-tools.toml": f'[vibe]\nfast = ["{worker}"]\n',
        },
    )
    return root


def check_client_answers(shown: list[str], root: Path) -> None:
    """What the model was shown for each of CLIENT_CALLS holds that call's answer."""
    assert len(shown) == len(CLIENT_CALLS), shown
    read, cell, search, spawn, wait, write, long = shown
    assert "return side * side" in read, read
    assert "42" in cell, cell
    assert "app.py" in search and "side * side" in search, search
    assert "w1" in spawn, spawn
    assert "worker read:" in wait and "say hello" in wait, wait
    assert "new.txt" in write and (root / "new.txt").read_text() == "hi\n", write
    assert "slept" in long, long
