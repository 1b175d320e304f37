"""The protocol's types (docs/protocol.md, "Types" and each method's result).

Wire payloads that go on to a model provider (`Request`, `Message`, `WireToolCall`,
`WireTool`) are TypedDicts: plain ``dict`` objects, ready to be sent as they are. Method
results are frozen dataclasses built from the response; unknown keys a newer server may add
are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from typing import Literal, TypedDict

__all__ = [
    "Assembly",
    "Describe",
    "Facts",
    "LogLine",
    "McpStatus",
    "Message",
    "NamedText",
    "Notification",
    "PluginInfo",
    "Rendered",
    "Replay",
    "Request",
    "StepResult",
    "ToolCall",
    "ToolSchema",
    "WireFunction",
    "WireTool",
    "WireToolCall",
]

#: Caller facts: a mapping of strings, or a sequence of ``(key, value)`` pairs (order kept; a
#: later key wins). ``model``, ``cwd`` and ``provider`` feed the host's variables.
Facts = Union[Mapping[str, str], Sequence[Tuple[str, str]]]

Role = Literal["system", "user", "assistant", "tool"]
Header = Literal["initial", "resume", "change", "series"]


class WireFunctionCall(TypedDict):
    name: str
    #: The arguments as JSON text.
    arguments: str


class WireToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: WireFunctionCall


class _MessageRequired(TypedDict):
    role: Role
    #: A string, a list of content parts, or ``None`` (an assistant turn of tool calls only).
    content: Union[str, List[Dict[str, Any]], None]


class Message(_MessageRequired, total=False):
    """A message of a request. ``tool_calls`` and ``reasoning_content`` appear on assistant
    messages, ``tool_call_id`` on tool messages."""

    tool_calls: List[WireToolCall]
    tool_call_id: str
    reasoning_content: str


class WireFunction(TypedDict):
    name: str
    description: str
    parameters: Any


class WireTool(TypedDict):
    type: Literal["function"]
    function: WireFunction


class _RequestRequired(TypedDict):
    messages: List[Message]


class Request(_RequestRequired, total=False):
    """What a model call sends. There is no separate system field: the system prompt is
    the first message(s). ``tools`` is absent when there are none."""

    tools: List[WireTool]


@dataclass(frozen=True)
class ToolCall:
    """A tool call of the model's reply, for ``append_assistant``. ``arguments`` is any
    JSON value (it is serialised into the request's ``arguments`` text)."""

    id: str
    name: str
    arguments: Any = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"id": self.id, "name": self.name}
        if self.arguments is not None:
            out["arguments"] = self.arguments
        return out


@dataclass(frozen=True)
class Describe:
    name: str
    version: str
    protocol: str
    methods: List[str]
    notifications: List[str]

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> "Describe":
        return cls(
            name=v["name"],
            version=v["version"],
            protocol=v["protocol"],
            methods=list(v["methods"]),
            notifications=list(v["notifications"]),
        )


@dataclass(frozen=True)
class PluginInfo:
    id: int
    name: str
    #: ``None`` for the global scope.
    scope: Optional[str]

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> "PluginInfo":
        return cls(id=v["id"], name=v["name"], scope=v.get("scope"))


@dataclass(frozen=True)
class NamedText:
    name: str
    text: str

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> "NamedText":
        return cls(name=v["name"], text=v["text"])


@dataclass(frozen=True)
class ToolSchema:
    name: str
    description: str
    parameters: Any

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> "ToolSchema":
        return cls(name=v["name"], description=v["description"], parameters=v.get("parameters"))


@dataclass(frozen=True)
class Assembly:
    sections: List[NamedText]
    contexts: List[NamedText]
    tools: List[ToolSchema]
    #: Every variable's value; ``None`` = registered without a value.
    variables: Dict[str, Optional[str]]

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> "Assembly":
        return cls(
            sections=[NamedText.from_json(s) for s in v["sections"]],
            contexts=[NamedText.from_json(c) for c in v["contexts"]],
            tools=[ToolSchema.from_json(t) for t in v["tools"]],
            variables=dict(v["variables"]),
        )


@dataclass(frozen=True)
class Rendered:
    #: The system prompt.
    prompt: str
    #: The runtime-context snapshot (``""`` when none applies).
    context: str

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> "Rendered":
        return cls(prompt=v["prompt"], context=v["context"])


@dataclass(frozen=True)
class StepResult:
    """The result of ``step`` and ``retry``."""

    #: The step's number in the log, from 0.
    step: int
    #: The model request, derived from the log: send it as it is.
    request: Request
    #: How many system messages this step wrote to the log.
    commits: int
    starts_series: bool
    #: Why a ``request/header`` was logged, or ``None``.
    header: Optional[Header]

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> "StepResult":
        return cls(
            step=v["step"],
            request=v["request"],
            commits=v["commits"],
            starts_series=v["starts_series"],
            header=v.get("header"),
        )


@dataclass(frozen=True)
class Replay:
    """The result of ``request``: a step's request rebuilt from the log."""

    step: int
    request: Request

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> "Replay":
        return cls(step=v["step"], request=v["request"])


@dataclass(frozen=True)
class McpStatus:
    id: int
    server: str
    scope: Optional[str]
    plugin: str
    state: Literal["starting", "up", "down"]
    generations: int
    published: int
    rejected: int
    failures: int
    live_generation: Optional[int]
    last_error: Optional[str]

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> "McpStatus":
        return cls(
            id=v["id"],
            server=v["server"],
            scope=v.get("scope"),
            plugin=v["plugin"],
            state=v["state"],
            generations=v["generations"],
            published=v["published"],
            rejected=v["rejected"],
            failures=v["failures"],
            live_generation=v.get("live_generation"),
            last_error=v.get("last_error"),
        )


@dataclass(frozen=True)
class LogLine:
    """The params of ``log``, ``plugin/skipped`` and ``plugin/quarantined``."""

    plugin: str
    scope: Optional[str]
    #: ``error`` … ``trace``, ``stdout``, ``stderr``, ``skipped`` or ``quarantined``.
    stream: str
    message: str

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> "LogLine":
        return cls(plugin=v["plugin"], scope=v.get("scope"), stream=v["stream"], message=v["message"])


@dataclass(frozen=True)
class Notification:
    """A notification the server sent (after ``subscribe``)."""

    #: ``log``, ``plugin/skipped``, ``plugin/quarantined``, ``registry/changed`` or
    #: ``mcp/status``.
    method: str
    params: Dict[str, Any] = field(default_factory=dict)

    @property
    def log_line(self) -> Optional[LogLine]:
        """The params as a `LogLine` (``log`` and ``plugin/*``), else ``None``."""
        if self.method in ("log", "plugin/skipped", "plugin/quarantined"):
            return LogLine.from_json(self.params)
        return None

    @property
    def mcp_status(self) -> Optional[McpStatus]:
        """The params as an `McpStatus` (``mcp/status``), else ``None``."""
        if self.method == "mcp/status":
            return McpStatus.from_json(self.params)
        return None
