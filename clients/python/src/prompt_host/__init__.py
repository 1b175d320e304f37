"""A client for ``prompt-host serve``: the system prompt of an LLM agent, assembled from
sandboxed WebAssembly plugins, over JSON-RPC 2.0 on a child process's stdio.

`PromptHost` is the synchronous client, `AsyncPromptHost` the asyncio one; both expose every
method of docs/protocol.md with typed results, raise `PromptHostError` (with the structured
fields of the error) and `RequestCancelled`, and deliver notifications.
"""

from ._types import (
    Assembly,
    Describe,
    Facts,
    LogLine,
    McpStatus,
    Message,
    NamedText,
    Notification,
    PluginInfo,
    Rendered,
    Replay,
    Request,
    StepResult,
    ToolCall,
    ToolSchema,
    WireFunction,
    WireTool,
    WireToolCall,
)
from ._wire import CancelToken, find_binary
from .aio import AsyncNotificationStream, AsyncPromptHost
from .client import NotificationStream, PendingCall, PromptHost
from .errors import (
    CANCELLED,
    FAILED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PromptHostError,
    RequestCancelled,
    ServerExited,
)

#: The protocol version this client speaks (``describe().protocol``).
PROTOCOL_VERSION = "1.0"

__version__ = "0.1.0"

__all__ = [
    "PROTOCOL_VERSION",
    "Assembly",
    "AsyncNotificationStream",
    "AsyncPromptHost",
    "CANCELLED",
    "CancelToken",
    "Describe",
    "FAILED",
    "Facts",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LogLine",
    "METHOD_NOT_FOUND",
    "McpStatus",
    "Message",
    "NamedText",
    "Notification",
    "NotificationStream",
    "PARSE_ERROR",
    "PendingCall",
    "PluginInfo",
    "PromptHost",
    "PromptHostError",
    "Rendered",
    "Replay",
    "Request",
    "RequestCancelled",
    "ServerExited",
    "StepResult",
    "ToolCall",
    "ToolSchema",
    "WireFunction",
    "WireTool",
    "WireToolCall",
    "find_binary",
]
