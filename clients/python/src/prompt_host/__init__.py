"""prompt-host from Python: the system prompt of an LLM agent, assembled from sandboxed
WebAssembly plugins.

`PromptHost` (sync) and `AsyncPromptHost` (asyncio) speak JSON-RPC 2.0 to ``prompt-host
serve`` on a child process's stdio; `InProcessHost` and `AsyncInProcessHost` run the same
server inside this process (the wheel's native module). All four expose every method of
docs/protocol.md with typed results, raise `PromptHostError` (with the structured fields of
the error), `RouteError` and `RequestCancelled`, and deliver notifications. The wheel also
installs the ``prompt-host`` command (``python -m prompt_host`` runs it too).

A step's request is shaped for its route — OpenAI Chat Completions, Anthropic Messages or
OpenAI Responses (docs/routes.md) — and `prompt_host.routes` gives it as the request type of
the provider's official SDK.
"""

from ._wire import CancelToken, Reply, find_binary
from .aio import AsyncNotificationStream, AsyncPromptHost
from .client import NotificationStream, PendingCall, PromptHost
from .errors import (
    CANCELLED,
    FAILED,
    INTERNAL,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PromptHostError,
    RequestCancelled,
    RouteError,
    ServerExited,
    UsedAfterFork,
)
from .inprocess import AsyncInProcessHost, InProcessHost, native_available
from .types import (
    AnthropicRequest,
    Assembly,
    Breakpoint,
    Cache,
    CallTiming,
    Capabilities,
    ChatRequest,
    Compacted,
    Describe,
    Facts,
    GrantDir,
    Grants,
    InstructionsCut,
    LogLine,
    McpInstructions,
    McpSkillBody,
    McpSkillEntry,
    McpStatus,
    Message,
    NamedText,
    Notification,
    OriginGrant,
    PartTokens,
    PluginGrants,
    PluginInfo,
    ReasoningMode,
    Rendered,
    Replay,
    Request,
    RequestTokens,
    ResponsesRequest,
    Route,
    RouteName,
    RouteSpec,
    StepResult,
    SystemUpdates,
    TimingReport,
    TokenReport,
    ToolCall,
    ToolSchema,
    Usage,
    WireFunction,
    WireTool,
    WireToolCall,
)

#: The protocol version this client speaks (``describe().protocol``).
PROTOCOL_VERSION = "1.1"

__version__ = "0.1.0"

__all__ = [
    "CANCELLED",
    "FAILED",
    "INTERNAL",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_VERSION",
    "AnthropicRequest",
    "Assembly",
    "AsyncInProcessHost",
    "AsyncNotificationStream",
    "AsyncPromptHost",
    "Breakpoint",
    "Cache",
    "CallTiming",
    "CancelToken",
    "Capabilities",
    "ChatRequest",
    "Compacted",
    "Describe",
    "Facts",
    "GrantDir",
    "Grants",
    "InProcessHost",
    "InstructionsCut",
    "LogLine",
    "McpInstructions",
    "McpSkillBody",
    "McpSkillEntry",
    "McpStatus",
    "Message",
    "NamedText",
    "Notification",
    "NotificationStream",
    "OriginGrant",
    "PartTokens",
    "PendingCall",
    "PluginGrants",
    "PluginInfo",
    "PromptHost",
    "PromptHostError",
    "ReasoningMode",
    "Rendered",
    "Replay",
    "Reply",
    "Request",
    "RequestCancelled",
    "RequestTokens",
    "ResponsesRequest",
    "Route",
    "RouteError",
    "RouteName",
    "RouteSpec",
    "ServerExited",
    "StepResult",
    "SystemUpdates",
    "TimingReport",
    "TokenReport",
    "ToolCall",
    "ToolSchema",
    "Usage",
    "UsedAfterFork",
    "WireFunction",
    "WireTool",
    "WireToolCall",
    "find_binary",
    "native_available",
]
