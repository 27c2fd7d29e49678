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
