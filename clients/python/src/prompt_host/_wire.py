"""What the sync and the asyncio client share: finding the binary, encoding lines, building
each method's params (only the keys the caller gave are sent), cancel tokens and the stderr
tail."""

from __future__ import annotations

import collections
import json
import os
import shutil
import sys
import threading
from typing import Any, Callable, Deque, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .types import Facts, RouteSpec, ToolCall, Usage

__all__ = ["CancelToken", "command_line", "find_binary", "server_command"]

PathLike = Union[str, "os.PathLike[str]"]


def find_binary(binary: Optional[PathLike] = None) -> str:
    """The ``prompt-host`` executable: ``binary`` when given, else the ``PROMPT_HOST_BIN``
    environment variable, else ``prompt-host`` on ``PATH``."""
    if binary is not None:
        return os.fspath(binary)
    from_env = os.environ.get("PROMPT_HOST_BIN")
    if from_env:
        return from_env
    found = shutil.which("prompt-host")
    if found:
        return found
    raise FileNotFoundError(
        "prompt-host executable not found: pass binary=..., set PROMPT_HOST_BIN, or put prompt-host on PATH"
    )


def command_line(binary: Optional[PathLike] = None) -> List[str]:
    """How to start ``prompt-host``: `find_binary`'s answer, else, in an installation with
    the wheel's native module, this interpreter running the package's own command line
    (``python -m prompt_host``), so a wheel is all the client needs even where its
    ``prompt-host`` script is not on ``PATH``."""
    try:
        return [find_binary(binary)]
    except FileNotFoundError:
        from .inprocess import native_available

        if binary is None and native_available():
            return [sys.executable, "-m", "prompt_host"]
        raise


def server_command(
    binary: Optional[PathLike],
    config: Optional[PathLike],
    max_request_bytes: Optional[int],
    extra_args: Sequence[str] = (),
) -> List[str]:
    cmd = [*command_line(binary), "serve"]
    if config is not None:
        cmd += ["--config", os.fspath(config)]
    if max_request_bytes is not None:
        cmd += ["--max-request-bytes", str(int(max_request_bytes))]
    cmd += list(extra_args)
    return cmd


#: The server's default ``--max-request-bytes``.
DEFAULT_MAX_REQUEST_BYTES = 16 << 20


def encode(message: Mapping[str, Any]) -> bytes:
    """One JSON text, UTF-8, newline-terminated."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def too_large(line: bytes, limit: int, method: Optional[str]) -> Optional[Exception]:
    """The error for a request line over the server's limit, which the server would answer
    with id null (so that the request could not be told apart): refused before sending."""
    from .errors import INVALID_REQUEST, PromptHostError

    size = len(line) - 1
    if size <= limit:
        return None
    return PromptHostError(
        INVALID_REQUEST,
        f"invalid request: the request line has {size} bytes, more than the limit of {limit} "
        "(serve --max-request-bytes); not sent",
        {"kind": "request-too-large", "bytes": size, "limit": limit},
        method=method,
    )


def request_message(id: int, method: str, params: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification_message(method: str, params: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def cancel_message(id: Union[int, str]) -> Dict[str, Any]:
    return notification_message("$/cancelRequest", {"id": id})


# -- params ----------------------------------------------------------------------------------


def _put(params: Dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        params[key] = value


def facts_param(facts: Optional[Facts]) -> Any:
    if facts is None:
        return None
    if isinstance(facts, Mapping):
        return {str(k): str(v) for k, v in facts.items()}
    return [[str(k), str(v)] for k, v in facts]


def path_param(path: PathLike) -> str:
    return os.fspath(path)


def target(
    scope: Optional[str],
    facts: Optional[Facts],
    tokens: Union[bool, str, None] = None,
    timings: Optional[bool] = None,
) -> Dict[str, Any]:
    p: Dict[str, Any] = {}
    _put(p, "scope", scope)
    _put(p, "facts", facts_param(facts))
    _put(p, "tokens", tokens)
    _put(p, "timings", timings)
    return p


def bind_scope(scope: str, parent: Optional[str]) -> Dict[str, Any]:
    p: Dict[str, Any] = {"scope": scope}
    _put(p, "parent", parent)
    return p


def load_plugin(
    name: str,
    wasm: PathLike,
    scope: Optional[str],
    config: Any,
    limits: Optional[Mapping[str, int]],
    on_error: Optional[str],
    quarantine_after: Optional[int],
    sha256: Optional[str],
) -> Dict[str, Any]:
    p: Dict[str, Any] = {"name": name, "wasm": path_param(wasm)}
    _put(p, "scope", scope)
    _put(p, "config", config)
    _put(p, "limits", dict(limits) if limits is not None else None)
    _put(p, "on_error", on_error)
    _put(p, "quarantine_after", quarantine_after)
    _put(p, "sha256", sha256)
    return p


#: A route: its name, or a `RouteSpec`.
RouteParam = Union[str, RouteSpec]


def route_param(route: Optional[RouteParam]) -> Any:
    if route is None or isinstance(route, str):
        return route
    return dict(route)


def step(
    session: PathLike,
    scope: Optional[str],
    facts: Optional[Facts],
    user: Union[str, Iterable[str], None],
    in_history: Optional[bool],
    starts_series: Optional[bool],
    route: Optional[RouteParam] = None,
    tokens: Union[bool, str, None] = None,
    timings: Optional[bool] = None,
) -> Dict[str, Any]:
    p: Dict[str, Any] = {"session": path_param(session)}
    _put(p, "scope", scope)
    _put(p, "facts", facts_param(facts))
    _put(p, "in_history", in_history)
    _put(p, "starts_series", starts_series)
    if user is not None:
        p["user"] = [user] if isinstance(user, str) else list(user)
    _put(p, "route", route_param(route))
    _put(p, "tokens", tokens)
    _put(p, "timings", timings)
    return p


def retry(
    session: PathLike,
    facts: Optional[Facts],
    in_history: Optional[bool],
    starts_series: Optional[bool],
    route: Optional[RouteParam] = None,
    tokens: Union[bool, str, None] = None,
    timings: Optional[bool] = None,
) -> Dict[str, Any]:
    p: Dict[str, Any] = {"session": path_param(session)}
    _put(p, "facts", facts_param(facts))
    _put(p, "in_history", in_history)
    _put(p, "starts_series", starts_series)
    _put(p, "route", route_param(route))
    _put(p, "tokens", tokens)
    _put(p, "timings", timings)
    return p


def tool_call_param(call: Union[ToolCall, Mapping[str, Any]]) -> Dict[str, Any]:
    if isinstance(call, ToolCall):
        return call.to_json()
    return dict(call)


#: A provider's reply as its SDK gives it in plain form (``.to_dict()``, ``.model_dump()``):
#: a chat completion or its ``choices[0].message``; an Anthropic ``Message`` or its content
#: blocks; a Responses response or its ``output`` items.
Reply = Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]


def reply_param(reply: Reply) -> Any:
    if isinstance(reply, Mapping):
        return dict(reply)
    # What a caller without a type checker may pass: text (a sequence too), items that are
    # not objects (the server says which).
    items: Sequence[object] = reply
    if isinstance(items, (str, bytes)):
        raise TypeError("reply= is the provider's reply as an object or a list (e.g. `message.to_dict()`), not text")
    return [dict(item) if isinstance(item, Mapping) else item for item in items]


def usage_param(usage: Union[Usage, Mapping[str, int]]) -> Dict[str, int]:
    if isinstance(usage, Usage):
        return usage.to_json()
    return dict(usage)


def append_assistant(
    session: PathLike,
    text: Optional[str],
    reasoning: Optional[str],
    tool_calls: Optional[Iterable[Union[ToolCall, Mapping[str, Any]]]],
    reply: Optional[Reply] = None,
    route: Optional[str] = None,
    usage: Union[Usage, Mapping[str, int], None] = None,
) -> Dict[str, Any]:
    p: Dict[str, Any] = {"session": path_param(session)}
    _put(p, "text", text)
    _put(p, "reasoning", reasoning)
    if tool_calls is not None:
        p["tool_calls"] = [tool_call_param(c) for c in tool_calls]
    if reply is not None:
        p["reply"] = reply_param(reply)
    _put(p, "route", route)
    if usage is not None:
        p["usage"] = usage_param(usage)
    return p


def append_tool_result(session: PathLike, call_id: str, content: str, is_error: Optional[bool]) -> Dict[str, Any]:
    p: Dict[str, Any] = {"session": path_param(session), "call_id": call_id, "content": content}
    _put(p, "is_error", is_error)
    return p


def request(session: PathLike, step: Optional[int]) -> Dict[str, Any]:
    p: Dict[str, Any] = {"session": path_param(session)}
    _put(p, "step", step)
    return p


def compact(
    session: PathLike,
    summary: str,
    start_seq: Optional[int],
    end_seq: Optional[int],
    keep_turns: Optional[int],
) -> Dict[str, Any]:
    p: Dict[str, Any] = {"session": path_param(session), "summary": summary}
    _put(p, "start_seq", start_seq)
    _put(p, "end_seq", end_seq)
    _put(p, "keep_turns", keep_turns)
    return p


def subscribe(
    log: Optional[str], plugins: Optional[bool], registry: Optional[bool], mcp: Optional[bool]
) -> Dict[str, Any]:
    p: Dict[str, Any] = {}
    _put(p, "log", log)
    _put(p, "plugins", plugins)
    _put(p, "registry", registry)
    _put(p, "mcp", mcp)
    return p


# -- cancellation ----------------------------------------------------------------------------


class CancelToken:
    """Cancels the requests it was passed to (``cancel=token``), from any thread: each one
    still in flight gets a ``$/cancelRequest`` and fails with `RequestCancelled`. A request
    started with a token that is already cancelled is cancelled at once. Like an
    ``AbortSignal``, a token stays cancelled."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: Dict[int, Callable[[], None]] = {}
        self._next = 0

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            callback()

    def _register(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on cancel (at once when cancelled already); returns the
        unregister function."""
        with self._lock:
            if not self._cancelled:
                key = self._next
                self._next += 1
                self._callbacks[key] = callback

                def unregister() -> None:
                    with self._lock:
                        self._callbacks.pop(key, None)

                return unregister
        callback()
        return lambda: None


class StderrTail:
    """The last lines the server wrote to stderr (bounded)."""

    def __init__(self, max_lines: int = 200) -> None:
        self._lines: Deque[str] = collections.deque(maxlen=max_lines)
        self._lock = threading.Lock()

    def add(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)

    def text(self) -> str:
        with self._lock:
            return "\n".join(self._lines)
