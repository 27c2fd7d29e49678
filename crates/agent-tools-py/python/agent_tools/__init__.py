"""agent-tools embedded in Python: a coding agent's built-in tools bound to one workspace.

>>> from agent_tools import Run
>>> with Run("path/to/project", approval="allow") as run:
...     definitions = run.tool_definitions("anthropic")   # hand these to the model
...     result = run.call("read", {"path": "README.md"})  # run the model's calls
...     print(result.text)

A `Run` is built exactly as `agent-tools serve` builds one (the same `agent-tools.toml`, the
same tools). Bad arguments, refusals and tool failures come back as a `Result` with
`is_error` set, as a model sees them; only misuse of this API raises.

A run that lives elsewhere (a container, a sandbox) under `agent-tools serve --http` is driven
the same way through `connect`:

>>> from agent_tools import connect
>>> with connect("http://127.0.0.1:8765/mcp", token=secret) as run:
...     result = run.call("read", {"path": "README.md"})
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Union, overload

if TYPE_CHECKING:
    # The definitions are typed as the SDKs' own parameter types, so a loop that hands them
    # to `client.chat.completions.create(tools=...)` or `client.messages.create(tools=...)`
    # type-checks. Without the SDK installed these resolve to Any.
    from typing import Literal

    from anthropic.types import ToolParam as _AnthropicTool
    from openai.types.chat import ChatCompletionFunctionToolParam as _OpenAITool
    from openai.types.responses import FunctionToolParam as _ResponsesTool

from agent_tools import _native

__all__ = [
    "Answer",
    "AskCallback",
    "Card",
    "Progress",
    "REFUSE",
    "RemoteError",
    "RemoteRun",
    "Result",
    "Run",
    "SKIP",
    "Tool",
    "Unauthorized",
    "Unreachable",
    "__version__",
    "connect",
]

__version__: str = _native.__version__


@dataclass(frozen=True)
class Tool:
    """A tool the run's surface lists."""

    name: str
    """The name the model calls."""
    tier: str
    """What it may do: "read", "write" or "exec"."""
    description: str
    """What the model reads about it."""
    input_schema: dict
    """The JSON schema of its arguments."""
    output_schema: dict
    """The JSON schema of its structured result."""


@dataclass(frozen=True)
class Result:
    """What a call returned: success or failure alike."""

    text: str
    """What the model reads."""
    structured: Optional[Any] = None
    """The structured result (None on errors)."""
    images: list = field(default_factory=list)
    """PNG images, as bytes, in order."""
    is_error: bool = False
    """Whether the call failed (bad arguments, a refusal, the tool's own failure)."""


@dataclass(frozen=True)
class Progress:
    """A report from a running call."""

    message: str
    """What is happening now, one line."""
    done: Optional[float] = None
    """How much is done, in the unit of `total`."""
    total: Optional[float] = None
    """How much there is in all, when known."""


@dataclass(frozen=True)
class Card:
    """A card for a person: a question from `ask_user`, or a permission request."""

    number: int
    """The run-wide number ("card 3")."""
    kind: str
    """"question" or "permission" (allow or deny a write or exec call)."""
    question: str
    """The question, or what permission is asked for."""
    context: Optional[str]
    """Why it is asked."""
    options: list
    """(label, description or None) pairs; empty for a free-text question."""
    allow_free_text: bool
    """Whether an answer of one's own may be typed."""
    multi_select: bool
    """Whether several options may be picked."""
    expires_in: float
    """Seconds the card stays open."""


@dataclass(frozen=True)
class Answer:
    """An answer to a card: options picked by label, and any text typed."""

    selected: Sequence[str] = ()
    text: Optional[str] = None


class _Sentinel:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"agent_tools.{self._name}"


SKIP = _Sentinel("SKIP")
"""Return this from an ask callback to skip a question."""
REFUSE = _Sentinel("REFUSE")
"""Return this from an ask callback to decline a question or deny a permission."""

AskCallback = Callable[[Card], Union[Answer, str, Sequence[str], bool, None, _Sentinel]]


def _answer(card: Card, reply: Any) -> tuple:
    """A callback's reply as the native side's (kind, selected, text) tuple."""
    if card.kind == "permission":
        allowed = reply is True or reply == "allow" or (
            isinstance(reply, Answer) and "allow" in reply.selected
        )
        return ("answered", ["allow" if allowed else "deny"], None)
    if reply is SKIP or reply is None:
        return ("skipped", None, None)
    if reply is REFUSE or reply is False:
        return ("declined", None, None)
    if isinstance(reply, Answer):
        return ("answered", list(reply.selected), reply.text)
    if isinstance(reply, str):
        labels = {label for label, _ in card.options}
        if reply in labels:
            return ("answered", [reply], None)
        return ("answered", [], reply)
    if isinstance(reply, (list, tuple)) and all(isinstance(s, str) for s in reply):
        return ("answered", list(reply), None)
    raise TypeError(
        f"an ask callback returns an Answer, a str, a list of labels, SKIP or REFUSE, "
        f"not {reply!r}"
    )


def _adapter(ask: AskCallback) -> Callable[[dict], tuple]:
    def asked(card: dict) -> tuple:
        card = Card(**card)
        return _answer(card, ask(card))

    return asked


# Runs still open, closed at interpreter exit (garbage collection may never come).
_open_runs: "weakref.WeakSet[Run]" = weakref.WeakSet()


@atexit.register
def _close_open_runs() -> None:
    for run in list(_open_runs):
        run.close()


class Run:
    """One run of the tools over a workspace.

    Arguments are those of `agent-tools serve`:

    - `root`: the workspace; every path is confined to it.
    - `surface`: "full", "plan" or "readonly" (read-tier tools only).
    - `approval`: "ask" (a person approves each write and exec call through `ask`; with no
      `ask` they are refused at once), "allow" or "deny"; None takes `agent-tools.toml`'s
      choice, "ask" by default.
    - `config`: a config file instead of `agent-tools.toml` in the root.
    - `ask`: a callable receiving a `Card` and returning an `Answer`, a str (an option's label
      or free text), a list of labels, `SKIP` or `REFUSE`; for a permission card, True or
      "allow" allows and anything else denies. It is called from a worker thread. Without
      it, `ask_user` is absent and approval fails closed.
    - `vibe`: background workers (the `vibe_*` tools).

    `close()`, leaving a `with` block, garbage collection and interpreter exit each stop
    every server, kernel, adapter and worker the run started.
    """

    def __init__(
        self,
        root: Union[str, os.PathLike] = ".",
        surface: str = "full",
        approval: Optional[str] = None,
        config: Union[str, os.PathLike, None] = None,
        ask: Optional[AskCallback] = None,
        vibe: bool = False,
        state_dir: Union[str, os.PathLike, None] = None,
    ) -> None:
        self._native = _native.NativeRun(
            os.fspath(root),
            surface,
            approval,
            None if config is None else os.fspath(config),
            None if ask is None else _adapter(ask),
            vibe,
            None if state_dir is None else os.fspath(state_dir),
        )
        _open_runs.add(self)

    def tools(self) -> list[Tool]:
        """The tools this run's surface lists, sorted by name."""
        return [
            Tool(
                name=spec["name"],
                tier=spec["tier"],
                description=spec["description"],
                input_schema=spec["input_schema"],
                output_schema=spec["output_schema"],
            )
            for spec in json.loads(self._native.tools())
        ]

    @overload
    def tool_definitions(
        self, format: Literal["openai"] = ..., strict: bool = ...
    ) -> List[_OpenAITool]: ...
    @overload
    def tool_definitions(
        self, format: Literal["openai-responses"], strict: bool = ...
    ) -> List[_ResponsesTool]: ...
    @overload
    def tool_definitions(
        self, format: Literal["anthropic"], strict: Literal[False] = ...
    ) -> List[_AnthropicTool]: ...
    @overload
    def tool_definitions(self, format: str, strict: bool = ...) -> List[Dict[str, Any]]: ...

    def tool_definitions(self, format: str = "openai", strict: bool = False) -> List[Any]:
        """The tools in the shape an API takes, to hand to a model as they are.

        `format`: "openai" (Chat Completions `tools`), "openai-responses" (Responses API
        function tools), "anthropic" (Messages API `tools`) or "mcp" (`tools/list`).
        `strict=True` (the OpenAI formats) gives each schema in strict mode's form, every
        optional argument nullable and required, and marks the tool `strict`; the run takes
        `null` for an argument as absent. The Responses shape always carries `strict`.
        """
        return json.loads(self._native.tool_definitions(format, strict))

    def call(
        self,
        name: str,
        arguments: Optional[dict] = None,
        *,
        progress: Optional[Callable[[Progress], None]] = None,
    ) -> Result:
        """Runs one call and returns its result; the GIL is released while the tool runs.

        `progress` receives the tool's reports (a kernel starting, a cell's output lines) on
        this thread while the call runs. Ctrl-C cancels the call (the tool is told, as over
        MCP) and raises KeyboardInterrupt once it has ended.
        """
        return self._call(name, arguments, None, progress)

    def _call(
        self,
        name: str,
        arguments: Optional[dict],
        cancel: Optional[_native.Cancel],
        progress: Optional[Callable[[Progress], None]],
    ) -> Result:
        report = None
        if progress is not None:

            def report(message: str, done: Optional[float], total: Optional[float]) -> None:
                progress(Progress(message, done, total))

        text, structured, images, is_error = self._native.call(
            name, json.dumps({} if arguments is None else arguments), cancel, report
        )
        return Result(
            text=text,
            structured=None if structured is None else json.loads(structured),
            images=list(images),
            is_error=is_error,
        )

    async def acall(
        self,
        name: str,
        arguments: Optional[dict] = None,
        *,
        progress: Optional[Callable[[Progress], None]] = None,
    ) -> Result:
        """`call` from asyncio: several run at once, each on an executor thread.

        Cancelling the awaiting task (`wait_for`'s timeout, `task.cancel()`) cancels the call.
        `progress` is called on the executor thread.
        """
        loop = asyncio.get_running_loop()
        cancel = _native.Cancel()
        try:
            return await loop.run_in_executor(
                None, self._call, name, arguments, cancel, progress
            )
        except asyncio.CancelledError:
            cancel.cancel()
            raise

    @property
    def closed(self) -> bool:
        """Whether the run has been closed."""
        return self._native.closed

    def close(self) -> None:
        """Ends the run and every process it started. Calling it again does nothing."""
        self._native.close()
        _open_runs.discard(self)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<agent_tools.Run {state}>"


# The remote client uses the types above, so it is imported once they exist.
from agent_tools._remote import (  # noqa: E402
    RemoteError,
    RemoteRun,
    Unauthorized,
    Unreachable,
    connect,
)
