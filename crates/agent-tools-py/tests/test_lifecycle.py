"""No child process outlives a run: close, `with`, garbage collection, interpreter exit."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import time

from conftest import marked_processes, wait_gone

from agent_tools import Run

CELL = {"code": "import os\nprint(os.getpid())", "description": "print the process id of the kernel"}


def start_kernel(run: Run) -> None:
    result = run.call("eval", CELL)
    assert not result.is_error, result.text


def test_close_stops_the_kernels_a_run_started(workspace, mark):
    run = Run(workspace, approval="allow")
    start_kernel(run)
    assert marked_processes(mark), "the kernel should carry the environment mark"
    run.close()
    assert wait_gone(mark) == []


def test_garbage_collection_stops_them_too(workspace, mark):
    run = Run(workspace, approval="allow")
    start_kernel(run)
    assert marked_processes(mark)
    del run
    gc.collect()
    assert wait_gone(mark) == []


def test_closing_one_run_leaves_another_runs_processes_alone(workspace, mark):
    with Run(workspace, approval="allow") as kept:
        start_kernel(kept)
        before = set(marked_processes(mark))
        with Run(workspace, approval="allow") as closed:
            closed.call("read", {"path": "README.md"})
        assert before <= set(marked_processes(mark))
        assert not kept.call("eval", CELL).is_error
    assert wait_gone(mark) == []


def test_interpreter_exit_stops_them(workspace, mark):
    script = textwrap.dedent(
        f"""
        from agent_tools import Run
        run = Run({str(workspace)!r}, approval="allow")
        result = run.call("eval", {CELL!r})
        assert not result.is_error, result.text
        print("started", flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert done.returncode == 0 and "started" in done.stdout, done.stderr
    assert wait_gone(mark) == []


def test_sigkill_of_the_interpreter_ends_a_daemon_a_cell_started(workspace, mark):
    """Issue 22: a SIGKILLed Python process runs no cleanup; the kernel's PID namespace still
    ends with it, and so does the daemon the cell started in a session of its own."""
    cell = {
        "code": "import subprocess\nsubprocess.Popen(['setsid', 'sleep', '1008'])\nprint('forked')",
        "description": "start a sleeping daemon in its own session",
    }
    script = textwrap.dedent(
        f"""
        import time
        from agent_tools import Run
        run = Run({str(workspace)!r}, approval="allow")
        result = run.call("eval", {cell!r})
        assert not result.is_error, result.text
        print("started", flush=True)
        time.sleep(120)
        """
    )
    embedding = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    try:
        assert embedding.stdout is not None
        assert embedding.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
            "1008" in cmdline(pid) for pid in marked_processes(mark)
        ):
            time.sleep(0.05)
        assert any("1008" in cmdline(pid) for pid in marked_processes(mark)), "no daemon"
        embedding.kill()
        embedding.wait(timeout=10)
        killed = time.monotonic()
        left = wait_gone(mark, seconds=2.0)
        took = (time.monotonic() - killed) * 1000
        assert left == [], [cmdline(pid) for pid in left]
        print(f"SIGKILL of the embedding interpreter: nothing left after {took:.0f} ms")
    finally:
        embedding.kill()


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return file.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""
