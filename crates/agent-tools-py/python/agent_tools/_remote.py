"""A run served by `agent-tools serve --http` elsewhere (a container, a sandbox, another
machine), driven as a local `Run` is: `agent_tools.connect(url, token=...)`.

It speaks MCP's 2026-07-28 revision over Streamable HTTP with the standard library alone:
each request is one self-contained POST (no session), its capabilities in `_meta`; an answer
is one JSON body, or an SSE stream when the server reports progress first. A card comes back
as a result with `resultType: "input_required"` holding an elicitation form; the `ask`
callback answers it, and the call is re-sent with the answer and the server's `requestState`.
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import math
import os
import re
import socket
import ssl
import threading
import traceback
import urllib.parse
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, overload

if TYPE_CHECKING:
    # Typed as `Run.tool_definitions` is: the SDKs' own parameter types (Any without them).
    from typing import Literal

    from anthropic.types import ToolParam as _AnthropicTool
    from openai.types.chat import ChatCompletionFunctionToolParam as _OpenAITool
    from openai.types.responses import FunctionToolParam as _ResponsesTool

from agent_tools import (
    AskCallback,
    Card,
    Progress,
    Result,
    Tool,
    _answer,
    _native,
    __version__,
)

PROTOCOL = "2026-07-28"
"""The MCP revision spoken: self-contained requests, cards as `input_required` results."""

TOKEN_ENV = "AGENT_TOOLS_TOKEN"
"""Where `connect` looks for the token when `token=` is not given, as `serve --http` does."""


class RemoteError(RuntimeError):
    """The server refused a request, or answered something that is not MCP."""


class Unauthorized(RemoteError):
    """The server wants a bearer token other than the one sent (or one, when none was)."""


class Unreachable(RemoteError, ConnectionError):
    """Nothing answers at the URL, or the connection broke before the answer came."""


class _Closed(Exception):
    """The request's connection was shut from another thread (a cancel, or `close()`)."""


class _Exchange:
    """One request in flight: its connection, which another thread may shut to end it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection: Optional[http.client.HTTPConnection] = None
        self.cancelled = False

    def attach(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if self.cancelled:
                raise _Closed()
            self._connection = connection

    def detach(self) -> None:
        with self._lock:
            self._connection = None

    def cancel(self) -> None:
        """Shuts the connection: the server cancels a call whose stream closes."""
        with self._lock:
            self.cancelled = True
            connection = self._connection
        if connection is not None and connection.sock is not None:
            try:
                connection.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def connect(
    url: str,
    token: Optional[str] = None,
    *,
    ask: Optional[AskCallback] = None,
    connect_timeout: float = 10.0,
) -> "RemoteRun":
    """Connects to a run served by `agent-tools serve --http` and lists its tools.

    - `url`: the server's MCP endpoint, as `--ready-file` writes it
      (`http://127.0.0.1:8765/mcp`); a URL without a path gets `/mcp`. `https://` works
      behind a proxy that ends TLS (a sandbox's port URL).
    - `token`: the bearer token the server was started with (its `--token-file` or
      `AGENT_TOOLS_TOKEN`); None reads `AGENT_TOOLS_TOKEN` from this environment, and a
      loopback server started without one takes none. It is sent only in the
      `Authorization` header, never shown.
    - `ask`: the callback `Run` takes, called on the calling thread for each card a call
      raises (an `ask_user` question, a write or exec approval under the server's
      `--approval ask`). Without it the server is told no person can be asked: `ask_user` is
      not listed and, under `--approval ask`, writes are refused at once, as with `Run`.
    - `connect_timeout`: seconds to wait for the TCP connection of each request; the answer
      itself is waited for as long as the call runs.

    Raises `Unreachable` when nothing answers at the URL and `Unauthorized` for a missing or
    wrong token, each saying what to change.
    """
    return RemoteRun(url, token, ask=ask, connect_timeout=connect_timeout)


class RemoteRun:
    """A run that lives in an `agent-tools serve --http` process, with `Run`'s methods.

    `tools()`, `tool_definitions()`, `call()`, `acall()`, `close()`, `closed` and the `with`
    block behave as `Run`'s, with these differences:

    - the run, its workspace, settings and processes belong to the server (its `--root`,
      `--surface`, `--approval`, `agent-tools.toml`); every client of the server shares them;
    - `close()` ends nothing on the server: it shuts this object's requests in flight (which
      cancels those calls) and refuses further ones; the server's run goes on until the
      server stops;
    - a `Tool`'s `output_schema` is the one `tools/list` carries, without field descriptions;
    - a `Card`'s `expires_in` is NaN (the form does not say), and its question is the form's
      text up to its first blank line, the rest being its context;
    - a `Progress` always has `done` (the server counts reports when the tool gives none);
    - Ctrl-C during `call` closes the request, which cancels the call on the server, and
      raises KeyboardInterrupt at once.
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        *,
        ask: Optional[AskCallback] = None,
        connect_timeout: float = 10.0,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"{url!r} is not an http:// or https:// URL; give the server's MCP endpoint, "
                f"as `agent-tools serve --http` prints it (http://HOST:PORT/mcp)"
            )
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                "the URL carries credentials; give the bearer token as token=... or in "
                f"{TOKEN_ENV} instead"
            )
        path = parts.path if parts.path not in ("", "/") else "/mcp"
        self._path = path + (f"?{parts.query}" if parts.query else "")
        self._url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        if token is None and os.environ.get(TOKEN_ENV):
            token, self._token_from = os.environ[TOKEN_ENV], TOKEN_ENV
        else:
            self._token_from = "token="
        # Trimmed as the server trims its own (a token file ends with a newline).
        token = (token or "").strip() or None
        if token is not None and not re.fullmatch(r"[\x21-\x7e]+", token):
            raise ValueError(
                f"the token given in {self._token_from} has a character a header cannot carry "
                "(a space, a control character, or one outside ASCII); give it exactly as the "
                "server's --token-file holds it"
            )
        # Name-mangled and never shown: repr() names the URL alone.
        self.__token = token
        self._ask = ask
        self._connect_timeout = connect_timeout
        self._ids = iter(range(1, 2**53))
        self._lock = threading.Lock()
        self._exchanges: "set[_Exchange]" = set()
        self._closed = False
        self._listed = self._list_tools()

    # -- the run's tools --------------------------------------------------------------------

    def _list_tools(self) -> List[Dict[str, Any]]:
        listed: List[Dict[str, Any]] = []
        params: Dict[str, Any] = {}
        while True:
            result = self._request("tools/list", params, None, None)
            listed.extend(result.get("tools", []))
            cursor = result.get("nextCursor")
            if not cursor:
                return listed
            params = {"cursor": cursor}

    def tools(self) -> List[Tool]:
        """The tools the server's run lists to this client, in the server's order."""
        return [
            Tool(
                name=tool["name"],
                tier=_tier(tool.get("annotations") or {}),
                description=tool.get("description", ""),
                input_schema=tool.get("inputSchema", {}),
                output_schema=tool.get("outputSchema", {}),
            )
            for tool in self._listed
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
        """The tools in the shape an API takes, made exactly as `Run.tool_definitions` makes
        them (same formats, same `strict`), from the server's `tools/list`."""
        return json.loads(_native.tool_definitions(json.dumps(self._listed), format, strict))

    # -- calls ------------------------------------------------------------------------------

    def call(
        self,
        name: str,
        arguments: Optional[dict] = None,
        *,
        progress: Optional[Callable[[Progress], None]] = None,
    ) -> Result:
        """Runs one call on the server and returns its result.

        `progress` receives the tool's reports on this thread while the call runs; cards go
        to `ask`, round by round, until the call answers.
        """
        return self._call(name, arguments, None, progress)

    async def acall(
        self,
        name: str,
        arguments: Optional[dict] = None,
        *,
        progress: Optional[Callable[[Progress], None]] = None,
    ) -> Result:
        """`call` from asyncio: several run at once, each on an executor thread.

        Cancelling the awaiting task closes the request, and the server cancels the call.
        `progress` and `ask` are called on the executor thread.
        """
        loop = asyncio.get_running_loop()
        exchange = _Exchange()
        try:
            return await loop.run_in_executor(None, self._call, name, arguments, exchange, progress)
        except asyncio.CancelledError:
            exchange.cancel()
            raise

    def _call(
        self,
        name: str,
        arguments: Optional[dict],
        exchange: Optional[_Exchange],
        progress: Optional[Callable[[Progress], None]],
    ) -> Result:
        params: Dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
        while True:
            result = self._request("tools/call", params, exchange, progress)
            if result.get("resultType") != "input_required":
                return _result(result)
            # A card waits on the server: answer it and re-send the same call with the
            # answer and the handle of the parked call.
            requests = result.get("inputRequests") or {}
            params = {
                "name": name,
                "arguments": params["arguments"],
                "inputResponses": {key: self._answer(key, asked) for key, asked in requests.items()},
                "requestState": result.get("requestState"),
            }

    def _answer(self, key: str, asked: Dict[str, Any]) -> Dict[str, Any]:
        """The elicitation result for one input request, from the ask callback."""
        if asked.get("method") != "elicitation/create" or self._ask is None:
            return {"action": "cancel"}
        card = _card(key, asked.get("params") or {})
        try:
            reply = self._ask(card)
            return _form_answer(card, _answer(card, reply))
        except Exception:
            # As with `Run`: a failing callback is nobody answering, and its traceback goes
            # where Python's go.
            traceback.print_exc()
            return {"action": "cancel"}

    # -- one request ------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        params: Dict[str, Any],
        exchange: Optional[_Exchange],
        progress: Optional[Callable[[Progress], None]],
    ) -> Dict[str, Any]:
        """Posts one request and returns its result; raises for an error or a refusal."""
        if self._closed:
            raise RuntimeError("the connection is closed")
        with self._lock:
            number = next(self._ids)
        meta: Dict[str, Any] = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientCapabilities": (
                {"elicitation": {"form": {}}} if self._ask is not None else {}
            ),
            "io.modelcontextprotocol/clientInfo": {"name": "agent-tools-python", "version": __version__},
        }
        # A call always carries a progress token: the server then reports a long call at least
        # every 10 s, which keeps a proxy's idle timeout (a sandbox's port URL) from cutting it;
        # without a callback the reports are read and dropped.
        if progress is not None or method == "tools/call":
            meta["progressToken"] = f"python-{number}"
        body = json.dumps(
            {"jsonrpc": "2.0", "id": number, "method": method, "params": {**params, "_meta": meta}}
        ).encode()
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
            "Mcp-Method": method,
        }
        if method == "tools/call":
            headers["Mcp-Name"] = params["name"]
        if self.__token is not None:
            headers["Authorization"] = f"Bearer {self.__token}"
        exchange = exchange if exchange is not None else _Exchange()
        with self._lock:
            self._exchanges.add(exchange)
        connection = self._connection()
        try:
            try:
                connection.connect()
            except (OSError, http.client.HTTPException) as error:
                raise Unreachable(
                    f"nothing answers at {self._url} ({error}); check that `agent-tools serve "
                    f"--http` runs there and that this is the URL it printed (or wrote to "
                    f"--ready-file)"
                ) from error
            # Attached once connected, so a cancel from now on shuts this connection (and one
            # that came while connecting stops the request here).
            exchange.attach(connection)
            if connection.sock is not None:
                # The answer takes as long as the call runs.
                connection.sock.settimeout(None)
            try:
                connection.request("POST", self._path, body=body, headers=headers)
                response = connection.getresponse()
                message = self._read(response, number, method, progress)
            except RemoteError:
                # A stream shut by a cancel ends early; that is the cancel, not a server fault.
                if exchange.cancelled:
                    raise _Closed() from None
                raise
            except (OSError, http.client.HTTPException) as error:
                if exchange.cancelled:
                    raise _Closed() from error
                raise Unreachable(
                    f"the connection to {self._url} broke before `{method}` was answered "
                    f"({error}); the server may have stopped"
                ) from error
        except _Closed:
            raise RuntimeError(
                "the request was closed before it was answered (the connection was closed, or "
                "the call cancelled); the server cancels a call whose request closes"
            ) from None
        finally:
            exchange.detach()
            with self._lock:
                self._exchanges.discard(exchange)
            connection.close()
        refused = message.get("error")
        if refused is not None:
            raise RemoteError(
                f"{self._url} refused `{method}`: {refused.get('message', refused)} "
                f"(JSON-RPC error {refused.get('code')})"
            )
        result = message.get("result")
        if not isinstance(result, dict):
            raise RemoteError(f"{self._url} answered `{method}` with no result: {message}")
        return result

    def _connection(self) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(
                self._host,
                self._port,
                timeout=self._connect_timeout,
                context=ssl.create_default_context(),
            )
        return http.client.HTTPConnection(self._host, self._port, timeout=self._connect_timeout)

    def _read(
        self,
        response: http.client.HTTPResponse,
        number: int,
        method: str,
        progress: Optional[Callable[[Progress], None]],
    ) -> Dict[str, Any]:
        """The JSON-RPC answer to request `number`, from a JSON body or an SSE stream."""
        kind = response.getheader("Content-Type", "").split(";")[0].strip().lower()
        if response.status in (401, 403, 413) or (response.status >= 300 and kind != "application/json"):
            raise self._refusal(response, method)
        if kind == "application/json":
            try:
                return json.loads(response.read())
            except ValueError as error:
                raise RemoteError(f"{self._url} answered `{method}` with JSON it could not read: {error}") from error
        if kind == "text/event-stream":
            for message in _events(response):
                if message.get("id") == number and "method" not in message:
                    return message
                if message.get("method") == "notifications/progress" and progress is not None:
                    report = message.get("params") or {}
                    try:
                        progress(Progress(report.get("message", ""), report.get("progress"), report.get("total")))
                    except Exception:
                        # A failing progress callback must not fail the call, as with `Run`.
                        traceback.print_exc()
            raise RemoteError(f"{self._url} ended the stream of `{method}` without answering it")
        raise RemoteError(
            f"{self._url} answered `{method}` with {response.status} and content type "
            f"{kind or 'none'}; is this an MCP endpoint of `agent-tools serve --http`?"
        )

    def _refusal(self, response: http.client.HTTPResponse, method: str) -> RemoteError:
        said = response.read(4096).decode("utf-8", "replace").strip()
        if response.status == 401:
            if self.__token is None:
                return Unauthorized(
                    f"{self._url} needs a bearer token and none was given: pass "
                    f"connect(url, token=...) or set {TOKEN_ENV} to the token the server was "
                    f"started with (the server says: {said})"
                )
            return Unauthorized(
                f"{self._url} refused the token given in {self._token_from}: pass the token the "
                f"server was started with (its --token-file or {TOKEN_ENV}) "
                f"(the server says: {said})"
            )
        if response.status == 403:
            return RemoteError(f"{self._url} refused `{method}` (403): {said}")
        if response.status == 413:
            return RemoteError(f"{self._url} refused `{method}` as too large (413): {said}")
        return RemoteError(f"{self._url} answered `{method}` with HTTP {response.status}: {said}")

    # -- lifetime ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._closed

    def close(self) -> None:
        """Closes this client: requests in flight are shut (the server cancels those calls)
        and later ones are refused. Nothing on the server ends: the run, its kernels and
        servers belong to the `serve --http` process, which ends them when it stops.
        Calling it again does nothing."""
        self._closed = True
        with self._lock:
            exchanges = list(self._exchanges)
        for exchange in exchanges:
            exchange.cancel()

    def __enter__(self) -> "RemoteRun":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<agent_tools.RemoteRun {self._url} {state}>"


def _events(response: http.client.HTTPResponse) -> Iterator[Dict[str, Any]]:
    """The JSON messages of an SSE stream, one per event's `data`."""
    data: List[str] = []
    while True:
        raw = response.readline()
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                text = "\n".join(data)
                data = []
                try:
                    yield json.loads(text)
                except ValueError:
                    # A priming event or a comment carries no message.
                    continue
            continue
        if line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)


def _tier(annotations: Dict[str, Any]) -> str:
    """A tool's tier from its MCP annotations, the inverse of the server's mapping (read:
    read-only; exec: open world; write: the rest)."""
    if annotations.get("readOnlyHint"):
        return "read"
    if annotations.get("openWorldHint"):
        return "exec"
    return "write"


def _result(result: Dict[str, Any]) -> Result:
    """A `tools/call` result as `Run.call` returns it."""
    text = []
    images = []
    for block in result.get("content") or []:
        if block.get("type") == "text":
            text.append(block.get("text", ""))
        elif block.get("type") == "image":
            images.append(base64.b64decode(block.get("data", "")))
    return Result(
        text="\n".join(text),
        structured=result.get("structuredContent"),
        images=images,
        is_error=bool(result.get("isError", False)),
    )


_HEADER = re.compile(r"^Card (\d+) · (question from the agent|permission request)$")


def _card(key: str, params: Dict[str, Any]) -> Card:
    """The card an elicitation form was made from (the server's `form_for`/`message_for`)."""
    message = params.get("message", "")
    properties = (params.get("requestedSchema") or {}).get("properties") or {}
    header, _, body = message.partition("\n\n")
    matched = _HEADER.match(header)
    if matched is None:
        # Not a form of agent-tools': all of it is the question.
        body = message
    numbered = re.fullmatch(r"card-(\d+)", key)
    number = int(numbered.group(1)) if numbered else int(matched.group(1)) if matched else 0
    question, _, context = body.partition("\n\n")
    selected = properties.get("selected") or {}
    multi = selected.get("type") == "array"
    choices = (selected.get("items") or {}).get("anyOf", []) if multi else selected.get("oneOf", [])
    options = []
    for choice in choices:
        label = str(choice.get("const", ""))
        title = choice.get("title", label)
        described = title.startswith(f"{label} — ")
        options.append((label, title[len(label) + 3 :] if described else None))
    return Card(
        number=number,
        kind="permission" if "decision" in properties else "question",
        question=question,
        context=context or None,
        options=options,
        allow_free_text="answer" in properties,
        multi_select=multi,
        expires_in=math.nan,
    )


def _form_answer(card: Card, answer: tuple) -> Dict[str, Any]:
    """The elicitation result the server's `read_form` reads back as `answer`, the native
    side's (kind, selected, text) tuple that `_answer` makes."""
    kind, selected, text = answer
    if card.kind == "permission":
        return {"action": "accept", "content": {"decision": selected[0]}}
    if kind == "skipped":
        return {"action": "accept", "content": {"skip": True}}
    if kind == "declined":
        return {"action": "decline"}
    content: Dict[str, Any] = {}
    if selected:
        content["selected"] = list(selected) if card.multi_select or len(selected) > 1 else selected[0]
    if text is not None:
        content["answer"] = text
    return {"action": "accept", "content": content}
