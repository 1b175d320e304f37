"""Errors: a JSON-RPC error response becomes a `PromptHostError` carrying the structured
fields of ``error.data`` (docs/protocol.md, "Errors"); a cancelled request a `RequestCancelled`.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional

__all__ = [
    "CANCELLED",
    "FAILED",
    "INTERNAL",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PromptHostError",
    "RequestCancelled",
    "RouteError",
    "ServerExited",
    "UsedAfterFork",
]

#: The line is not JSON.
PARSE_ERROR = -32700
#: Not a JSON-RPC 2.0 request, or a line over the size limit.
INVALID_REQUEST = -32600
#: No such method.
METHOD_NOT_FOUND = -32601
#: The params do not fit the method.
INVALID_PARAMS = -32602
#: The operation ran and failed (``data.kind`` says how).
FAILED = -32000
#: The request was cancelled.
CANCELLED = -32800
#: The host failed inside while serving the request (``data.kind == "internal"``); the
#: server goes on serving the others.
INTERNAL = -32603


class PromptHostError(Exception):
    """An error the server answered (or, for `ServerExited`, the server's end).

    ``code`` is the JSON-RPC code, ``message`` the server's paragraph and ``data`` the whole
    ``error.data`` object; its keys are also attributes (``None`` when absent): ``kind``,
    ``plugin``, ``export``, ``scope``, ``section``, ``context``, ``variable``,
    ``tool_provider``, ``listener``, ``session``, ``suggestion``, ``methods``, ``bytes``,
    ``limit``, ``budget``, ``tokenizer``, ``tokens`` (a ``token-budget`` error: the budget's
    key, the tokenizer, the rendering's count; ``limit`` is the budget), ``expected``,
    ``actual`` (a ``conflict``: the seq this writer would have written, the session's next
    seq in its store). ``method`` is the method of the request that failed.
    """

    code: Optional[int]
    message: str
    data: Dict[str, Any]
    method: Optional[str]
    kind: Optional[str]
    plugin: Optional[str]
    export: Optional[str]
    scope: Optional[str]
    section: Optional[str]
    context: Optional[str]
    variable: Optional[str]
    tool_provider: Optional[str]
    listener: Optional[str]
    session: Optional[str]
    suggestion: Optional[str]
    methods: Optional[List[str]]
    bytes: Optional[int]
    limit: Optional[int]
    budget: Optional[str]
    tokenizer: Optional[str]
    tokens: Optional[int]
    expected: Optional[int]
    actual: Optional[int]

    FIELDS = (
        "kind",
        "plugin",
        "export",
        "scope",
        "section",
        "context",
        "variable",
        "tool_provider",
        "listener",
        "session",
        "suggestion",
        "methods",
        "bytes",
        "limit",
        "budget",
        "tokenizer",
        "tokens",
        "expected",
        "actual",
    )

    def __init__(
        self,
        code: Optional[int],
        message: str,
        data: Optional[Mapping[str, Any]] = None,
        *,
        method: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = dict(data or {})
        self.method = method
        for key in self.FIELDS:
            setattr(self, key, self.data.get(key))

    @classmethod
    def from_error(cls, error: Mapping[str, Any], *, method: Optional[str] = None) -> PromptHostError:
        """The exception for a response's ``error`` object: `RequestCancelled` for code
        -32800 (or ``data.kind == "cancelled"``), `RouteError` for ``data.kind ==
        "route"``, else `PromptHostError`."""
        code = error.get("code")
        data = error.get("data")
        if not isinstance(data, Mapping):
            data = {}
        message = str(error.get("message", ""))
        if code == CANCELLED or data.get("kind") == "cancelled":
            return RequestCancelled(code, message, data, method=method)
        if data.get("kind") == "route":
            return RouteError(code, message, data, method=method)
        return PromptHostError(code, message, data, method=method)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, kind={self.kind!r}, message={self.message!r})"


class RequestCancelled(PromptHostError):
    """The request was cancelled (code -32800, kind ``cancelled``): through a `CancelToken`
    or because its ``timeout`` passed (then ``timed_out`` is true)."""

    timed_out: bool

    def __init__(self, *args: Any, timed_out: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timed_out = timed_out


class RouteError(PromptHostError):
    """A step's route could not be prepared (kind ``route``): a route without the model
    its API needs, an Anthropic step without ``max_tokens``, an option naming a key the
    route builds, ``cache`` on a route that caches on its own (docs/routes.md). Nothing was
    written to the log."""


class ServerExited(PromptHostError):
    """The server process ended (or its output closed) before answering. ``returncode``
    is its exit status when known, ``stderr`` the last lines it wrote there."""

    def __init__(self, message: str, *, returncode: Optional[int], stderr: str, method: Optional[str] = None) -> None:
        super().__init__(None, message, None, method=method)
        self.returncode = returncode
        self.stderr = stderr

    def __str__(self) -> str:
        if self.stderr:
            return f"{self.message}\n{self.stderr}"
        return self.message


class UsedAfterFork(PromptHostError):
    """A host (or a client of ``serve``) was used in a process forked from the one that
    created it. Its threads — the in-process host's, and the client's own readers and writer
    — exist only in the parent, so a call from the child could never be answered: it is
    refused at once. Create a new host in the child."""

    def __init__(self, created_in: int, method: Optional[str] = None) -> None:
        super().__init__(
            None,
            f"this prompt-host was created in process {created_in} and cannot be used in "
            f"process {os.getpid()}, forked from it (its threads are not in this process); "
            "create a new one in this process",
            None,
            method=method,
        )
        self.created_in = created_in
