# The Python kernel of agent-tools' `eval` tool (EVAL-1, EVAL-3, EVAL-4, EVAL-5, EVAL-6, EVAL-7,
# EVAL-8). Embedded in the crate and run as `python -c SOURCE`; it is written nowhere. It
# speaks JSON lines over its own stdin and stdout (EVAL-7): the protocol file descriptors are
# duplicated away first, and fds 0, 1 and 2 are then pointed at /dev/null and at a capture pipe, so
# nothing a cell, a C extension or a child process prints can corrupt the protocol, and all of it is
# captured in the order it was written. Only what the first cell needs is imported up front: start
# time is measured (ast, subprocess, traceback and friends are imported when a cell first needs
# them).
import _json
import builtins
import collections
import fcntl
import importlib
import io
import os
import select
import signal
import sys
import termios
import threading

WORKSPACE = os.path.realpath(os.environ.get("AGENT_TOOLS_EVAL_ROOT") or os.getcwd())
MAX_IMAGES = int(os.environ.get("AGENT_TOOLS_EVAL_MAX_IMAGES", "8"))
MAX_IMAGE_BYTES = int(os.environ.get("AGENT_TOOLS_EVAL_MAX_IMAGE_BYTES", str(1024 * 1024)))
MAX_TABLE_ROWS = 30
MAGICS = ("%pip", "%cd", "!cmd", "x = !cmd", "%%bash", "%timeit", "%%timeit", "%env")

# The protocol's own descriptors, not inherited by children (os.dup makes them
# non-inheritable); the standard ones are then replaced.
_proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
_proto_out_fd = os.dup(1)
_saved_stderr = os.fdopen(os.dup(2), "w")
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
_capture_read, _capture_write = os.pipe()
os.dup2(_capture_write, 1)
os.dup2(_capture_write, 2)
os.close(_capture_write)

try:
    import faulthandler

    faulthandler.enable(file=_saved_stderr)
except Exception:
    pass

_send_lock = threading.Lock()


class _JsonContext:
    """What `_json`'s C scanner reads from `json.JSONDecoder`: the C halves of the json module
    are used directly because `import json` pulls in `re` and `enum`, a quarter of the
    kernel's start."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo = {}

    @staticmethod
    def parse_constant(name):
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


try:
    _scan = _json.make_scanner(_JsonContext())
    _encode = _json.make_encoder(
        None, repr, _json.encode_basestring, None, ": ", ", ", False, False, True
    )

    def _loads(text):
        return _scan(text.decode("utf-8") if isinstance(text, bytes) else text, 0)[0]

    def _dumps(value):
        return "".join(_encode(value, 0))

except Exception:  # another Python without the C halves: the json module then
    import json

    _loads = json.loads

    def _dumps(value):
        return json.dumps(value, ensure_ascii=False)


def send(message):
    line = (_dumps(message) + "\n").encode("utf-8", "replace")
    with _send_lock:
        view = memoryview(line)
        while view:
            written = os.write(_proto_out_fd, view)
            view = view[written:]


class _FdWriter(io.TextIOBase):
    """sys.stdout and sys.stderr: unbuffered writes to the capture pipe, so Python's prints
    and a C library's writes keep their order."""

    def __init__(self, name):
        self._name = name

    @property
    def name(self):
        return self._name

    @property
    def encoding(self):
        return "utf-8"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return 1

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        data = text.encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]
        return len(text)

    def flush(self):
        pass


sys.stdout = sys.__stdout__ = _FdWriter("<stdout>")
sys.stderr = sys.__stderr__ = _FdWriter("<stderr>")
sys.stdin = sys.__stdin__ = open(os.devnull, "r")

# The capture pipe is read by one thread and forwarded as `stream` messages. Before any other
# message the main thread drains the pipe itself (under the same lock), so output always
# arrives before the message that follows it, at the cost of one ioctl when there is none.
_pipe_lock = threading.Lock()
_pending_bytes = bytearray(4)


def _drain():
    fcntl.ioctl(_capture_read, termios.FIONREAD, _pending_bytes)
    size = int.from_bytes(_pending_bytes, sys.byteorder)
    if size:
        _send_stream(os.read(_capture_read, size))


def _forward():
    while True:
        try:
            select.select([_capture_read], [], [])
            with _pipe_lock:
                _drain()
        except InterruptedError:
            continue


_partial = b""


def _send_stream(data):
    global _partial
    data = _partial + data
    # Never split a UTF-8 character between two messages.
    cut = len(data)
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue
        if byte & 0x80:
            need = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4
            if back < need:
                cut = len(data) - back
        break
    _partial = data[cut:]
    if cut:
        send({"type": "stream", "text": data[:cut].decode("utf-8", "replace")})


_fflush = []


def _load_fflush():
    """C stdio buffers (a C extension's printf) are flushed before each message; ctypes is
    loaded off the start path."""
    try:
        import ctypes

        _fflush.append(ctypes.CDLL(None).fflush)
    except Exception:
        pass


def sync_output():
    """Forwards everything written to fds 1 and 2 so far."""
    if _fflush:
        _fflush[0](None)
    with _pipe_lock:
        _drain()


threading.Thread(target=_forward, name="agent-tools-output", daemon=True).start()

# Messages from the host: cells go to the main thread, tool results to the waiting call, and
# an interrupt raises SIGINT here, so it works inside any sandbox.
_cells = collections.deque()
_cell_ready = threading.Condition()
_tool_results = {}
_tool_ready = threading.Condition()
_state = {"executing": False, "shell": None}


def _interrupt():
    shell = _state["shell"]
    if shell is not None and shell.poll() is None:
        try:
            shell.send_signal(signal.SIGINT)
        except Exception:
            pass
    if _state["executing"]:
        os.kill(os.getpid(), signal.SIGINT)


def _read_host():
    for line in _proto_in:
        try:
            message = _loads(line)
        except ValueError:
            continue
        kind = message.get("type")
        if kind == "execute":
            with _cell_ready:
                _cells.append(message)
                _cell_ready.notify()
        elif kind == "interrupt":
            _interrupt()
        elif kind == "tool_result":
            with _tool_ready:
                _tool_results[message.get("id")] = message
                _tool_ready.notify_all()
    # The host has gone: finish what is queued, then exit.
    with _cell_ready:
        _cells.append(None)
        _cell_ready.notify()


def _on_sigint(signum, frame):
    # Outside a cell an interrupt is late: the cell it was meant for has ended.
    if _state["executing"]:
        raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_sigint)
threading.Thread(target=_read_host, name="agent-tools-host", daemon=True).start()


# --- tool() (EVAL-6) ------------------------------------------------------------------------


class ToolError(Exception):
    """A tool called from a cell failed; the message is the tool's error text."""


class ToolResult(str):
    """A tool's result: its text, with `.structured` holding the structured result."""

    structured = None


_next_tool_call = [0]


def tool(name, args=None, **kwargs):
    """Calls one of the run's tools, with every gate a model's call passes; returns its text
    (with `.structured`) or raises ToolError."""
    arguments = dict(args or {})
    arguments.update(kwargs)
    _next_tool_call[0] += 1
    call_id = _next_tool_call[0]
    sync_output()
    send({"type": "tool_call", "id": call_id, "name": name, "args": arguments})
    with _tool_ready:
        while call_id not in _tool_results:
            _tool_ready.wait()
        reply = _tool_results.pop(call_id)
    if not reply.get("ok"):
        raise ToolError(reply.get("text", "the tool failed"))
    result = ToolResult(reply.get("text", ""))
    result.structured = reply.get("structured")
    return result


# --- rich output (EVAL-4) -------------------------------------------------------------------

_cell = {"images": 0, "dropped": 0}


def _emit_png(data):
    import base64

    if _cell["images"] >= MAX_IMAGES or len(data) > MAX_IMAGE_BYTES:
        _cell["dropped"] += 1
        return
    _cell["images"] += 1
    sync_output()
    send({"type": "display", "mime": "image/png", "data": base64.b64encode(data).decode()})


def _emit_text(text, mime="text/plain"):
    sync_output()
    send({"type": "display", "mime": mime, "text": text})


def _figure_png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return buffer.getvalue()


def _table(frame, kind, shape):
    """A markdown table of the first and last rows, with the shape stated."""
    rows, shown = len(frame), frame
    note = ""
    if rows > MAX_TABLE_ROWS:
        half = MAX_TABLE_ROWS // 2
        shown = frame.iloc[list(range(half)) + list(range(rows - half, rows))]
        note = "\n(%d rows in the middle not shown)" % (rows - 2 * half)
    try:
        text = shown.to_markdown()
    except ImportError:
        text = shown.to_string()
    return "%s%s\n[%s %s]" % (text, note, kind, " × ".join(str(n) for n in shape))


def render(value):
    """Shows `value` by its richest form for a model."""
    kind = type(value)
    module = getattr(kind, "__module__", "") or ""
    if module.startswith("pandas"):
        if kind.__name__ == "DataFrame":
            return _emit_text(_table(value, "DataFrame", value.shape), "text/markdown")
        if kind.__name__ == "Series":
            return _emit_text(_table(value.to_frame(), "Series", value.shape), "text/markdown")
    if module.startswith("matplotlib") and hasattr(value, "savefig"):
        _emit_png(_figure_png(value))
        try:
            import matplotlib.pyplot as plt

            plt.close(value)
        except Exception:
            pass
        return
    if module.startswith("matplotlib") and hasattr(value, "get_figure"):
        figure = value.get_figure()
        if figure is not None:
            return render(figure)
    if module.startswith("PIL") and hasattr(value, "save"):
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return _emit_png(buffer.getvalue())
    png = getattr(value, "_repr_png_", None)
    if callable(png) and not isinstance(value, type):
        data = png()
        if isinstance(data, (bytes, bytearray)):
            return _emit_png(bytes(data))
    markdown = getattr(value, "_repr_markdown_", None)
    if callable(markdown) and not isinstance(value, type):
        text = markdown()
        if isinstance(text, str):
            return _emit_text(text, "text/markdown")
    _emit_text(repr(value))


def display(*values):
    """Shows each value in the cell's result (tables, images, text)."""
    for value in values:
        render(value)


def _emit_open_figures():
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    for number in pyplot.get_fignums():
        figure = pyplot.figure(number)
        _emit_png(_figure_png(figure))
        pyplot.close(figure)


# matplotlib needs no setup: a backend of ours draws with Agg and `plt.show()` emits figures.
_BACKEND = "agent_tools_backend"
_BACKEND_SOURCE = """
from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas
from matplotlib.backend_bases import FigureManagerBase as FigureManager


def show(*args, **kwargs):
    import builtins
    builtins.__agent_tools_show__()
"""


class _BackendFinder:
    def find_spec(self, name, path=None, target=None):
        if name == _BACKEND:
            import importlib.util

            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(compile(_BACKEND_SOURCE, "<agent-tools backend>", "exec"), module.__dict__)


sys.meta_path.append(_BackendFinder())
os.environ["MPLBACKEND"] = "module://" + _BACKEND
builtins.__agent_tools_show__ = _emit_open_figures


# --- magics (EVAL-5) ------------------------------------------------------------------------


class MagicError(Exception):
    pass


# The magics are compiled only when a cell first needs one: compiling this file is a large
# part of the kernel's start, and most cells are plain Python.
_MAGICS_SOURCE = r'''
def _magic_shell(command, capture=False):
    import subprocess

    process = subprocess.Popen(
        command,
        shell=True,
        cwd=os.getcwd(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else None,
    )
    _state["shell"] = process
    try:
        out, _ = process.communicate()
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        _state["shell"] = None
    if capture:
        return out.decode("utf-8", "replace").splitlines()
    if process.returncode:
        print("[exit status %d]" % process.returncode)
    return None


def _magic_bash(script):
    import subprocess

    process = subprocess.Popen(
        ["bash", "-c", script], cwd=os.getcwd(), stdin=subprocess.DEVNULL
    )
    _state["shell"] = process
    try:
        process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        _state["shell"] = None
    if process.returncode:
        print("[exit status %d]" % process.returncode)


def _magic_cd(target):
    target = os.path.expanduser(target.strip().strip("'\"")) or WORKSPACE
    resolved = os.path.realpath(os.path.join(os.getcwd(), target))
    if resolved != WORKSPACE and not resolved.startswith(WORKSPACE + os.sep):
        raise MagicError(
            "%%cd %s: %s is outside the workspace %s; only folders inside it can be used"
            % (target, resolved, WORKSPACE)
        )
    os.chdir(resolved)
    print(resolved)


def _magic_env(text):
    text = text.strip()
    if not text:
        for key in sorted(os.environ):
            print("%s=%s" % (key, os.environ[key]))
        return None
    if "=" in text or " " in text:
        key, _, value = text.replace(" ", "=", 1).partition("=")
        os.environ[key.strip()] = value.strip()
        return None
    return os.environ.get(text)


def _distributions():
    """Every installed distribution by name, with its version and its top-level modules."""
    import importlib.metadata as metadata

    found = {}
    for distribution in metadata.distributions():
        name = (distribution.metadata["Name"] or "").lower()
        found[name] = (distribution.version, distribution)
    return found


def _top_level(distribution):
    names = set()
    for path in distribution.files or []:
        parts = path.parts
        if not parts or parts[0] == ".." or parts[0].endswith((".dist-info", ".egg-info")):
            continue
        top = parts[0]
        for suffix in (".py",):
            if top.endswith(suffix):
                top = top[: -len(suffix)]
        names.add(top.split(".")[0])
    return names


def _magic_pip(text):
    import shlex
    import subprocess

    words = shlex.split(text)
    before = _distributions()
    extra = ["--disable-pip-version-check"] if words and words[0] in ("install", "uninstall") else []
    code = subprocess.call(
        [sys.executable, "-m", "pip"] + words + extra, cwd=os.getcwd(), stdin=subprocess.DEVNULL
    )
    importlib.invalidate_caches()
    after = _distributions()
    # What pip installed, upgraded or removed: their modules leave sys.modules, so the next
    # import sees what is on disk now (EVAL-5).
    touched = set()
    for name in set(before) | set(after):
        old, new = before.get(name), after.get(name)
        if (old and old[0]) != (new and new[0]):
            for version in (old, new):
                if version:
                    touched |= _top_level(version[1])
    compiled = []
    for module in list(sys.modules):
        if module.split(".")[0] in touched:
            path = getattr(sys.modules[module], "__file__", "") or ""
            if path.endswith((".so", ".pyd")):
                compiled.append(module)
            del sys.modules[module]
    if compiled:
        print(
            "note: %s is compiled and was already loaded; it cannot be reloaded in this kernel, "
            "so call eval with reset: true to use the new version" % ", ".join(sorted(compiled))
        )
    if code:
        print("[pip exit status %d]" % code)


def _magic_timeit(statement, setup="pass"):
    import timeit

    timer = timeit.Timer(statement, setup, globals=_namespace)
    number, _ = timer.autorange()
    runs = [timer.timeit(number) / number for _ in range(5)]
    best, mean = min(runs), sum(runs) / len(runs)

    def shown(seconds):
        for unit, scale in (("s", 1), ("ms", 1e3), ("µs", 1e6), ("ns", 1e9)):
            if seconds * scale >= 1:
                return "%.3g %s" % (seconds * scale, unit)
        return "%.3g ns" % (seconds * 1e9)

    print("%s per loop (best of 5 runs, %d loops each; mean %s)" % (shown(best), number, shown(mean)))


def _rewrite_magics(code):
    """Rewrites IPython idioms to plain Python; only called when the cell does not parse."""
    lines = code.split("\n")
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        name, _, rest = first[2:].partition(" ")
        body = "\n".join(lines[1:])
        if name == "bash":
            return "_magic_bash(%r)" % body
        if name == "timeit":
            return "_magic_timeit(%r, %r)" % (body, rest.strip() or "pass")
        raise MagicError(
            "unknown cell magic %%%%%s; the supported magics are %s" % (name, ", ".join(MAGICS))
        )
    out = []
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith("!"):
            out.append("%s_magic_shell(%r)" % (indent, stripped[1:]))
            continue
        target, equals, command = stripped.partition("=")
        if equals and command.lstrip().startswith("!") and target.strip().isidentifier():
            out.append(
                "%s%s = _magic_shell(%r, capture=True)"
                % (indent, target.strip(), command.lstrip()[1:])
            )
            continue
        if stripped.startswith("%") and not stripped.startswith("%%"):
            name, _, rest = stripped[1:].partition(" ")
            if name in ("pip", "cd", "env", "timeit"):
                out.append("%s_magic_%s(%r)" % (indent, name, rest))
                continue
            raise MagicError(
                "unknown magic %%%s; the supported magics are %s" % (name, ", ".join(MAGICS))
            )
        out.append(line)
    return "\n".join(out)
'''


def _load_magics():
    if "_rewrite_magics" not in globals():
        exec(compile(_MAGICS_SOURCE, "<agent-tools magics>", "exec"), globals())
        for name in ("_magic_shell", "_magic_bash", "_magic_cd", "_magic_env", "_magic_pip", "_magic_timeit"):
            _namespace[name] = globals()[name]
    return _rewrite_magics


# --- cells ----------------------------------------------------------------------------------

_namespace = {"__name__": "__main__", "__builtins__": builtins}
_namespace.update(
    tool=tool,
    ToolError=ToolError,
    display=display,
)
builtins.display = display
sys.modules["__main__"] = type(sys)("__main__")
sys.modules["__main__"].__dict__.update(_namespace)
_namespace = sys.modules["__main__"].__dict__


def _suppressed(code, last):
    """Whether the source after the last expression holds a `;` (IPython's echo switch)."""
    lines = code.split("\n")
    rest = lines[last.end_lineno - 1][last.end_col_offset:]
    rest += "\n" + "\n".join(lines[last.end_lineno:])
    for line in rest.split("\n"):
        text = line.split("#", 1)[0].strip()
        if text.startswith(";"):
            return True
        if text:
            return False
    return False


_sources = {}


def _compile(code, filename):
    _sources[filename] = code
    # A cell that is one expression needs no syntax tree (and no `ast` import): the common
    # quick look at a value stays cheap.
    try:
        return None, compile(code, filename, "eval", flags=_TOP_LEVEL_AWAIT)
    except SyntaxError:
        pass
    import ast

    try:
        tree = ast.parse(code, filename, "exec")
    except SyntaxError:
        rewritten = _load_magics()(code)
        tree = ast.parse(rewritten, filename, "exec")
        code = rewritten
    _sources[filename] = code
    echo = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not _suppressed(code, tree.body[-1]):
        echo = ast.Expression(tree.body.pop().value)
    flags = _TOP_LEVEL_AWAIT
    body = compile(tree, filename, "exec", flags=flags)
    last = compile(echo, filename, "eval", flags=flags) if echo is not None else None
    return body, last


def _run(compiled):
    result = eval(compiled, _namespace)
    if type(result).__name__ == "coroutine":
        import asyncio

        if "loop" not in _state:
            _state["loop"] = asyncio.new_event_loop()
        result = _state["loop"].run_until_complete(result)
    return result


_TOP_LEVEL_AWAIT = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, without importing ast


def _error(exc, filename):
    import linecache
    import traceback

    for name, code in _sources.items():
        linecache.cache[name] = (len(code), None, [l + "\n" for l in code.split("\n")], name)
    if isinstance(exc, (MagicError, ToolError)):
        return {"ename": type(exc).__name__, "evalue": str(exc), "traceback": "%s: %s" % (type(exc).__name__, exc)}
    frames = traceback.extract_tb(exc.__traceback__)
    # Drop the kernel's own frames above the cell, and the kernel's frames under it (`tool()`).
    while frames and frames[0].filename != filename:
        frames.pop(0)
    frames = [frame for frame in frames if frame.filename != "<string>"]
    lines = traceback.format_list(frames) if frames else []
    text = "".join(lines) + "".join(traceback.format_exception_only(type(exc), exc))
    if lines:
        text = "Traceback (most recent call last):\n" + text
    return {"ename": type(exc).__name__, "evalue": str(exc), "traceback": text.rstrip("\n")}


def _execute(message):
    filename = "<cell %s>" % message.get("id")
    _cell["images"] = 0
    _cell["dropped"] = 0
    reply = {"type": "done", "id": message.get("id"), "ok": True}
    try:
        body, last = _compile(message.get("code", ""), filename)
    except MagicError as exc:
        reply.update(ok=False, error={"ename": "MagicError", "evalue": str(exc), "traceback": str(exc)})
        return reply
    except SyntaxError as exc:
        import traceback

        text = "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")
        reply.update(ok=False, error={"ename": "SyntaxError", "evalue": str(exc), "traceback": text})
        return reply
    _state["executing"] = True
    try:
        if body is not None:
            _run(body)
        if last is not None:
            value = _run(last)
            if value is not None:
                builtins._ = value
                render(value)
        _emit_open_figures()
    except KeyboardInterrupt:
        _state["executing"] = False
        reply.update(ok=False, interrupted=True)
    except BaseException as exc:
        _state["executing"] = False
        if isinstance(exc, SystemExit):
            reply.update(ok=False, error={"ename": "SystemExit", "evalue": str(exc.code), "traceback": "SystemExit: %s (the kernel keeps running)" % (exc.code,)})
        else:
            reply.update(ok=False, error=_error(exc, filename))
        try:
            _emit_open_figures()
        except BaseException:
            pass
    finally:
        _state["executing"] = False
    if _cell["dropped"]:
        reply["images_dropped"] = _cell["dropped"]
    return reply


def main():
    os.chdir(WORKSPACE)
    send({
        "type": "ready",
        "pid": os.getpid(),
        "interpreter": sys.executable,
        "version": sys.version.split()[0],
    })
    threading.Thread(target=_load_fflush, name="agent-tools-ctypes", daemon=True).start()
    while True:
        try:
            with _cell_ready:
                while not _cells:
                    _cell_ready.wait()
                message = _cells.popleft()
            if message is None:
                sync_output()
                os._exit(0)
            reply = _execute(message)
            sync_output()
            send(reply)
        except KeyboardInterrupt:
            # A late interrupt between cells; the host waits for the next `done` only.
            continue


main()
