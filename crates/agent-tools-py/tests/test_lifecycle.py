"""No child process outlives a run: close, `with`, garbage collection, interpreter exit."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

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
