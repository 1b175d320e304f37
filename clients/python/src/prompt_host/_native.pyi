"""The types of ``prompt_host._native``, the package's native module (host/python, built by
maturin): `InProcessServer` (``prompt-host serve`` inside this process), `StepRequest` (a
step's request kept as the host's value until it is read), the ``prompt-host`` command line
and where the package's plugins are. Every blocking method releases the GIL; a server used
from a process forked from the one that made it raises `RuntimeError`.
"""

import os
from typing import Any, Dict, Literal, Optional, Sequence, Tuple, Union, final, overload

from typing_extensions import TypeAlias

__version__: str
#: Whether ``PROMPT_HOST_INJECT_PANIC`` is honoured (a debug build).
FAULT_INJECTION: bool

_Path: TypeAlias = Union[str, os.PathLike[str]]

#: `InProcessServer.call`'s answer: ``(0, result, lines)`` with the result as objects (a
#: step's ``request`` a `StepRequest`), ``(1, result_json, lines)`` or ``(2, error_json,
#: lines)``; ``lines`` is how many output lines were queued before the answer.
_Answer: TypeAlias = Union[Tuple[Literal[0], Dict[str, Any], int], Tuple[Literal[1, 2], str, int]]

@final
class InProcessServer:
    """``prompt-host serve`` running in this process, on threads of its own. ``config``: a
    host.toml (else an empty default host); ``max_request_bytes``: the longest request line;
    ``cache_dir``: the compile cache (else ``PROMPT_HOST_CACHE_DIR``, else the user's cache
    directory). A host.toml that cannot be loaded stops the server with status 1 and the
    error on its stderr."""

    def __new__(
        cls,
        config: Optional[_Path] = None,
        max_request_bytes: Optional[int] = None,
        cache_dir: Optional[_Path] = None,
    ) -> InProcessServer: ...
    def call(self, line: str) -> Optional[_Answer]:
        """Run one request (a JSON-RPC request object's text) to its answer on this thread;
        `None` when the server is not running. Ctrl-C cancels it."""
    def write(self, data: bytes) -> None:
        """Hand request bytes to the server (whole lines or parts of them); waits while the
        server is that far behind. `BrokenPipeError` once the server stopped or the input was
        closed."""
    def close_input(self) -> None:
        """Close the server's input: it answers what is in flight, then stops (status 0)."""
    def read_line(self) -> Optional[bytes]:
        """The next line the server wrote, without its newline; `None` once the server
        stopped and every line was read."""
    def read_stderr_line(self) -> Optional[str]:
        """The next stderr line; `None` once the server stopped."""
    def poll(self) -> Optional[int]:
        """The exit status if the server stopped: 0 when its input closed, 1 when it could
        not start or failed, -9 when killed."""
    @overload
    def wait(self, timeout: None = None) -> int:
        """Wait for the server to stop, at most ``timeout`` seconds (for ever when `None`);
        the status, or `None` on timeout. Ctrl-C interrupts the wait."""
    @overload
    def wait(self, timeout: Optional[float]) -> Optional[int]: ...
    def kill(self) -> None:
        """Stop the server at once: requests in flight get no answer, and the status is -9."""

@final
class StepRequest:
    """A step's model request, held by the host until it is read (not made from Python)."""

    def to_python(self) -> Dict[str, Any]:
        """The request as Python objects (dicts, lists, strings, numbers): a new copy each
        call."""
    def to_json(self) -> bytes:
        """The request as compact JSON text (UTF-8), as the provider's HTTP request carries
        it."""

def run_command_line(args: Sequence[str]) -> int:
    """Run the ``prompt-host`` command line with ``args`` (the first is the program's name);
    its exit status."""

def set_bundled_plugins(dir: _Path) -> None:
    """Set the directory of the plugins the package ships, searched by name after
    ``PROMPT_HOST_PLUGIN_PATH``."""

__all__ = [
    "FAULT_INJECTION",
    "InProcessServer",
    "StepRequest",
    "__version__",
    "run_command_line",
    "set_bundled_plugins",
]
