"""The native half of agent_tools (Rust, pyo3); use `agent_tools.Run` instead."""

from typing import Callable, Optional

__version__: str

class Cancel:
    """Cancels the call it is given to, from any thread."""

    def __init__(self) -> None: ...
    def cancel(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...

class NativeRun:
    """A run built as `agent-tools serve` builds one; JSON crosses as text."""

    def __init__(
        self,
        root: str,
        surface: str,
        approval: Optional[str],
        config: Optional[str],
        ask: Optional[Callable[[dict], tuple]],
        vibe: bool,
        state_dir: Optional[str],
    ) -> None: ...
    def tools(self) -> str:
        """The listed tools' specs, a JSON array."""
    def tool_definitions(self, format: str, strict: bool = False) -> str:
        """The listed tools in an API's shape, a JSON array."""
    def call(
        self,
        name: str,
        arguments: str,
        cancel: Optional[Cancel] = None,
        progress: Optional[Callable[[str, Optional[float], Optional[float]], None]] = None,
    ) -> tuple[str, Optional[str], list[bytes], bool]:
        """(text, structured JSON or None, PNG images, is_error); the GIL is released."""
    @property
    def closed(self) -> bool: ...
    def close(self) -> None:
        """Ends the run and every process it started; idempotent."""

def main() -> int:
    """The `agent-tools` command line over `sys.argv`; returns the exit status."""

def tool_definitions(tools: str, format: str, strict: bool = False) -> str:
    """Tools as an MCP `tools/list` lists them (a JSON array), in an API's shape, a JSON array."""
