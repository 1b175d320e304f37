"""The protocol's types (protocol/prompt-host.schema.json; docs/protocol.md and
docs/routes.md): ``from prompt_host.types import StepResult``. `prompt_host` exports each of
them too.

Wire payloads that go on to a model provider (`Request` — a `ChatRequest`, an
`AnthropicRequest` or a `ResponsesRequest`, by the step's route —, `Message`,
`WireToolCall`, `WireTool`) and what a caller writes (`RouteSpec`) are TypedDicts: plain
``dict`` objects, ready to be sent as they are. `prompt_host.routes` gives a step's request
as the request type of the provider's own SDK. Method results are frozen dataclasses built
from the response; unknown keys a newer server may add are ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, TypedDict, Union, cast

if TYPE_CHECKING:
    from ._native import StepRequest

__all__ = [
    "AnthropicRequest",
    "Assembly",
    "Breakpoint",
    "Cache",
    "CallTiming",
    "Capabilities",
    "ChatRequest",
    "Compacted",
    "Describe",
    "Facts",
    "GrantDir",
    "Grants",
    "InstructionsCut",
    "LogLine",
    "McpInstructions",
    "McpStatus",
    "Message",
    "NamedText",
    "Notification",
    "OriginGrant",
    "PartTokens",
    "PluginGrants",
    "PluginInfo",
    "ReasoningMode",
    "Rendered",
    "Replay",
    "Request",
    "RequestTokens",
    "ResponsesRequest",
    "Route",
    "RouteName",
    "RouteSpec",
    "StepResult",
    "SystemUpdates",
    "TimingReport",
    "TokenReport",
    "ToolCall",
    "ToolSchema",
    "Usage",
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


class Message(_MessageRequired, total=False):
    """A message of a ``chat-completions`` request. ``tool_calls``, ``refusal`` and
    ``reasoning_content`` (with route reasoning ``send`` only) appear on assistant messages,
    ``tool_call_id`` on tool messages."""

    #: A string, a list of content parts, or ``None``/absent (an assistant turn of tool
    #: calls only).
    content: Union[str, List[Dict[str, Any]], None]
    tool_calls: List[WireToolCall]
    tool_call_id: str
    refusal: str
    reasoning_content: str


class WireFunction(TypedDict):
    name: str
    description: str
    parameters: Any


class WireTool(TypedDict):
    type: Literal["function"]
    function: WireFunction


class _ChatRequestRequired(TypedDict):
    messages: List[Message]


class ChatRequest(_ChatRequestRequired, total=False):
    """A ``chat-completions`` request (OpenAI Chat Completions and the servers compatible
    with it): the system prompt is the first message, there is no separate system field.
    ``model`` is absent when no model was given, ``tools`` when there are none; the route's
    generation ``options`` are further top-level keys."""

    model: str
    tools: List[WireTool]


class _AnthropicMessage(TypedDict):
    #: ``system`` for an in-history system update (Claude Opus 4.8 models).
    role: Literal["user", "assistant", "system"]
    #: Content blocks (``text``, ``tool_use``, ``tool_result``, ``thinking``, …), or the
    #: text of an in-history system message.
    content: Union[str, List[Dict[str, Any]]]


class _AnthropicRequestRequired(TypedDict):
    model: str
    max_tokens: int
    messages: List[_AnthropicMessage]


class AnthropicRequest(_AnthropicRequestRequired, total=False):
    """An ``anthropic-messages`` request (Anthropic Messages): the system prompt is the
    top-level ``system`` (text blocks), tools are ``{name, description, input_schema}``;
    the route's generation ``options`` are further top-level keys."""

    system: List[Dict[str, Any]]
    tools: List[Dict[str, Any]]


class _ResponsesRequestRequired(TypedDict):
    model: str
    #: Input items: messages (``user``, ``developer`` for in-history updates,
    #: ``assistant``), ``function_call``, ``function_call_output`` and ``reasoning`` items.
    input: List[Dict[str, Any]]


class ResponsesRequest(_ResponsesRequestRequired, total=False):
    """An ``openai-responses`` request (OpenAI Responses): the system prompt is the
    top-level ``instructions``; the route's generation ``options`` are further top-level
    keys."""

    instructions: str
    tools: List[Dict[str, Any]]


#: What a model call sends, shaped for the step's route (`StepResult.route`):
#: `prompt_host.routes` gives it as the request type of the provider's SDK.
Request = Union[ChatRequest, AnthropicRequest, ResponsesRequest]

#: ``chat-completions``, ``anthropic-messages`` or ``openai-responses`` (docs/routes.md).
RouteName = Literal["chat-completions", "anthropic-messages", "openai-responses"]
#: How a changed system prompt reaches the model: appended where the conversation stands,
#: or replacing the first system text.
SystemUpdates = Literal["in-history", "replace"]
#: Whether recorded reasoning is sent back.
ReasoningMode = Literal["send", "omit"]


class _RouteSpecRequired(TypedDict):
    name: RouteName


class RouteSpec(_RouteSpecRequired, total=False):
    """What a step asks of its route (``step``/``retry``'s ``route=``; a bare route name
    works too). Every key but ``name`` is optional; see docs/routes.md."""

    #: The model the request names (else the ``model`` fact).
    model: str
    #: Generation options: top-level keys of the request (``max_tokens``, ``temperature``,
    #: …), passed through and logged. A key the route builds is refused.
    options: Dict[str, Any]
    system_updates: SystemUpdates
    reasoning: ReasoningMode
    #: ``anthropic-messages`` only: place prompt-cache breakpoints (on by default).
    cache: bool


@dataclass(frozen=True)
class ToolCall:
    """A tool call of the model's reply, for ``append_assistant``'s plain form.
    ``arguments`` is a JSON object (a dict) or the JSON text of one: JSON text is parsed
    by the server and sent back exactly as it was written."""

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
    def from_json(cls, v: Mapping[str, Any]) -> Describe:
        return cls(
            name=v["name"],
            version=v["version"],
            protocol=v["protocol"],
            methods=list(v["methods"]),
            notifications=list(v["notifications"]),
        )


class GrantDir(TypedDict):
    """A directory a plugin may read: ``host`` (on the host) seen at ``guest`` (in its
    sandbox)."""

    host: str
    guest: str


class _OriginGrantRequired(TypedDict):
    origin: str


class OriginGrant(_OriginGrantRequired, total=False):
    """An origin a plugin may send HTTP requests to (``https://host[:port]``, ``http://`` on
    loopback, ``https://*.domain``), with the headers the host adds to them: a value's
    ``${env:NAME}`` is read by the host when the plugin loads, and the plugin never sees it.
    ``ca_file``: PEM certificates trusted for this origin besides the platform's."""

    headers: Dict[str, str]
    ca_file: Optional[str]


class Grants(TypedDict, total=False):
    """What a plugin reaches outside its sandbox (docs/host-toml.md, "Grants"): read-only
    directories, environment variables and HTTP origins. Any key may be absent on the wire:
    nothing of that kind."""

    dirs: List[GrantDir]
    env: List[str]
    http: List[OriginGrant]


class PluginGrants(TypedDict):
    """What a loaded plugin was granted, as ``plugins`` lists it: every key, always."""

    dirs: List[GrantDir]
    env: List[str]
    http: List[OriginGrant]


def _no_grants() -> PluginGrants:
    # The server's own spelling of "nothing granted", so that a plugin without grants is equal
    # to one built without them.
    return {"dirs": [], "env": [], "http": []}


@dataclass(frozen=True)
class PluginInfo:
    id: int
    name: str
    #: ``None`` for the global scope.
    scope: Optional[str]
    #: What the plugin was granted (``dirs`` and ``env`` always present here, empty when none).
    grants: PluginGrants = field(default_factory=_no_grants)

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> PluginInfo:
        granted = v.get("grants") or {}
        grants: PluginGrants = {
            "dirs": list(granted.get("dirs") or []),
            "env": list(granted.get("env") or []),
            "http": list(granted.get("http") or []),
        }
        return cls(id=v["id"], name=v["name"], scope=v.get("scope"), grants=grants)


@dataclass(frozen=True)
class NamedText:
    name: str
    text: str

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> NamedText:
        return cls(name=v["name"], text=v["text"])


@dataclass(frozen=True)
class ToolSchema:
    name: str
    description: str
    parameters: Any

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> ToolSchema:
        return cls(name=v["name"], description=v["description"], parameters=v.get("parameters"))


@dataclass(frozen=True)
class Assembly:
    sections: List[NamedText]
    contexts: List[NamedText]
    tools: List[ToolSchema]
    #: Every variable's value; ``None`` = registered without a value.
    variables: Dict[str, Optional[str]]

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> Assembly:
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
    #: Token counts, when ``render(tokens=…)`` asked for them.
    tokens: Optional[TokenReport] = None
    #: Where the time went, when ``render(timings=True)`` asked.
    timings: Optional[TimingReport] = None
    #: The MCP servers the scope sees whose instructions were cut to their budgets.
    mcp_cuts: List[InstructionsCut] = field(default_factory=list)

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> Rendered:
        return cls(
            prompt=v["prompt"],
            context=v["context"],
            tokens=TokenReport.maybe(v.get("tokens")),
            timings=TimingReport.maybe(v.get("timings")),
            mcp_cuts=InstructionsCut.all(v.get("mcp_cuts")),
        )


@dataclass(frozen=True)
class CallTiming:
    """One plugin call of an assembly. A listener's time includes the listeners it ran
    through ``next``."""

    #: ``section``, ``context``, ``variable``, ``tool provider`` or ``listener``.
    kind: str
    #: The entry's name (a keyed provider's or listener's key), or ``None``.
    name: Optional[str]
    plugin: str
    #: The layer: a scope key or ``global``.
    layer: str
    micros: float


@dataclass(frozen=True)
class TimingReport:
    """Where a rendering's (or step's) time went (``render(timings=True)``,
    ``step(timings=True)``): ``phases`` maps ``assemble``, ``render`` (and a step's
    ``commit``) to microseconds; ``calls`` lists each plugin call in call order."""

    phases: Dict[str, float]
    calls: List[CallTiming]

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> TimingReport:
        return cls(
            phases={p["phase"]: p["micros"] for p in v["phases"]},
            calls=[CallTiming(c["kind"], c.get("name"), c["plugin"], c["layer"], c["micros"]) for c in v["calls"]],
        )

    @classmethod
    def maybe(cls, v: Optional[Mapping[str, Any]]) -> Optional[TimingReport]:
        return None if v is None else cls.from_json(v)


@dataclass(frozen=True)
class PartTokens:
    """One section, runtime context or tool schema, counted alone."""

    name: str
    bytes: int
    tokens: int

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> PartTokens:
        return cls(name=v["name"], bytes=v["bytes"], tokens=v["tokens"])


@dataclass(frozen=True)
class TokenReport:
    """What a rendering costs in tokens (``render(tokens=…)``, ``step(tokens=…)``).
    Per-part counts can differ from the whole: a merge can span the blank line between two
    sections, so ``prompt`` (the whole, what a request pays) and ``sections_sum`` are both
    given."""

    #: The tokenizer's name.
    tokenizer: str
    #: The whole system prompt, counted as one text.
    prompt: int
    #: The sections counted alone, added up.
    sections_sum: int
    sections: List[PartTokens]
    #: The runtime-context snapshot, counted as one text.
    context: int
    contexts: List[PartTokens]
    #: Each tool as compact JSON: in the shape ``tools_as`` sends it, else of its name,
    #: description and parameters.
    tools: List[PartTokens]
    #: The route whose request shape the tools were counted in (a step's route); ``None``
    #: when counted as the schema the host holds (``render``).
    tools_as: Optional[str] = None

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> TokenReport:
        def parts(key: str) -> List[PartTokens]:
            return [PartTokens.from_json(p) for p in v[key]]

        return cls(
            tokenizer=v["tokenizer"],
            prompt=v["prompt"],
            sections_sum=v["sections_sum"],
            sections=parts("sections"),
            context=v["context"],
            contexts=parts("contexts"),
            tools=parts("tools"),
            tools_as=v.get("tools_as"),
        )

    @classmethod
    def maybe(cls, v: Optional[Mapping[str, Any]]) -> Optional[TokenReport]:
        return None if v is None else cls.from_json(v)


@dataclass(frozen=True)
class RequestTokens:
    """A step's request counted as its route sends it (`StepResult.request_tokens`): the
    system prompt's text, the tool list as JSON, and each message or input item as JSON."""

    #: The tokenizer that counted.
    tokenizer: str
    #: The system prompt's text.
    system: int
    #: The tool list, as JSON.
    tools: int
    #: The messages (or input items), each as JSON.
    messages: int
    #: The sum.
    total: int

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> RequestTokens:
        return cls(
            tokenizer=v["tokenizer"],
            system=v["system"],
            tools=v["tools"],
            messages=v["messages"],
            total=v["total"],
        )

    @classmethod
    def maybe(cls, v: Optional[Mapping[str, Any]]) -> Optional[RequestTokens]:
        return None if v is None else cls.from_json(v)


@dataclass(frozen=True)
class Usage:
    """Token figures of a reply (``append_assistant``'s ``usage=``, `Cache.last_usage`).
    ``input_tokens`` counts cached input too; a figure not known is ``None``."""

    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    #: Input tokens read from the provider's prompt cache.
    cached_input_tokens: Optional[int] = None
    #: Input tokens written to the prompt cache (Anthropic).
    cache_creation_input_tokens: Optional[int] = None

    def to_json(self) -> Dict[str, int]:
        figures = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }
        return {k: v for k, v in figures.items() if v is not None}

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> Usage:
        return cls(
            input_tokens=v.get("input_tokens"),
            output_tokens=v.get("output_tokens"),
            cached_input_tokens=v.get("cached_input_tokens"),
            cache_creation_input_tokens=v.get("cache_creation_input_tokens"),
        )


@dataclass(frozen=True)
class Capabilities:
    """What a route takes, for the step's model (docs/routes.md, "What each route takes")."""

    #: Whether a changed system prompt can be appended in history.
    in_history: bool
    #: Where the system prompt goes: the first message, the top-level ``system``, or
    #: ``instructions``.
    system: Literal["first-message", "system", "instructions"]
    #: How reasoning is sent back.
    reasoning: Literal["reasoning-content", "thinking-blocks", "reasoning-items"]
    #: How a failed tool call is marked: ``Error: …`` in the content, or ``is_error``.
    tool_error: Literal["stated-in-content", "is-error"]
    #: How many prompt-cache breakpoints a request may carry (0: cached automatically).
    cache_breakpoints: int

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> Capabilities:
        return cls(
            in_history=v["in_history"],
            system=v["system"],
            reasoning=v["reasoning"],
            tool_error=v["tool_error"],
            cache_breakpoints=v["cache_breakpoints"],
        )


@dataclass(frozen=True)
class Route:
    """The route a step resolved: what its request was prepared for."""

    name: RouteName
    #: The model the request names (``chat-completions`` may have none).
    model: Optional[str]
    system_updates: SystemUpdates
    reasoning: ReasoningMode
    #: The generation options, top-level keys of the request.
    options: Dict[str, Any]
    capabilities: Capabilities

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> Route:
        return cls(
            name=v["name"],
            model=v.get("model"),
            system_updates=v["system_updates"],
            reasoning=v["reasoning"],
            options=dict(v.get("options") or {}),
            capabilities=Capabilities.from_json(v["capabilities"]),
        )


#: What a protocol 1.0 server's steps were prepared with (no route in its answer).
_LEGACY_ROUTE = {
    "name": "chat-completions",
    "model": None,
    "system_updates": "replace",
    "reasoning": "omit",
    "options": {},
    "capabilities": {
        "in_history": False,
        "system": "first-message",
        "reasoning": "reasoning-content",
        "tool_error": "stated-in-content",
        "cache_breakpoints": 0,
    },
}


@dataclass(frozen=True)
class Breakpoint:
    """A prompt-cache breakpoint of the request (``cache_control`` on a block)."""

    #: ``system`` (the last block of ``system``), ``tools`` (the last tool, when there is
    #: no system text) or ``message`` (the last block of the latest user turn).
    at: Literal["system", "tools", "message"]
    #: The index of the block (``system``), tool (``tools``) or message (``message``).
    index: int

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> Breakpoint:
        return cls(at=v["at"], index=v["index"])


@dataclass(frozen=True)
class Cache:
    """Prompt caching of a step's request."""

    #: Where prompt-host placed breakpoints (``anthropic-messages``; empty elsewhere).
    breakpoints: List[Breakpoint]
    #: The usage recorded with the previous reply, or ``None``.
    last_usage: Optional[Usage]

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> Cache:
        last = v.get("last_usage")
        return cls(
            breakpoints=[Breakpoint.from_json(b) for b in v.get("breakpoints") or []],
            last_usage=Usage.from_json(last) if last is not None else None,
        )


@dataclass(frozen=True)
class InstructionsCut:
    """How an MCP server's instructions were cut to its instruction budget
    (``[[mcp]] max_instruction_tokens``): in ``StepResult.mcp_cuts``, ``Rendered.mcp_cuts``,
    ``McpStatus.instructions_cut`` and the ``mcp/instructions_cut`` notification. The
    section the server's instructions make begins with `note`, so the prompt says so too."""

    server: str
    #: The server's instruction generation that was cut.
    generation: int
    #: The budget, in tokens.
    budget: int
    #: The tokenizer that counted them.
    tokenizer: str
    #: The whole text's tokens; ``None`` when it was too long to count in full (over 1 MiB).
    tokens: Optional[int]
    bytes: int
    kept_tokens: int
    kept_bytes: int
    dropped_bytes: int

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> InstructionsCut:
        return cls(
            server=v["server"],
            generation=v["generation"],
            budget=v["budget"],
            tokenizer=v["tokenizer"],
            tokens=v.get("tokens"),
            bytes=v["bytes"],
            kept_tokens=v["kept_tokens"],
            kept_bytes=v["kept_bytes"],
            dropped_bytes=v["dropped_bytes"],
        )

    @classmethod
    def maybe(cls, v: Optional[Mapping[str, Any]]) -> Optional[InstructionsCut]:
        return None if v is None else cls.from_json(v)

    @classmethod
    def all(cls, v: Optional[Sequence[Mapping[str, Any]]]) -> List[InstructionsCut]:
        return [cls.from_json(c) for c in v or []]

    @property
    def note(self) -> str:
        """The note the host puts before the kept text, as the prompt has it."""
        whole = f"{self.bytes} bytes" if self.tokens is None else f"{self.tokens} tokens"
        return (
            f'[prompt-host: the instructions of MCP server "{self.server}" were cut to their '
            f"first {self.kept_tokens} of {whole} ({self.budget} tokens at most, counted with "
            f"{self.tokenizer}); {self.dropped_bytes} bytes were dropped]"
        )


@dataclass(frozen=True)
class StepResult:
    """The result of ``step`` and ``retry``."""

    #: The step's number in the log, from 0.
    step: int
    #: The model request, derived from the log and shaped for ``route``: send it as it is
    #: (`prompt_host.routes` types it for the provider's SDK).
    request: Request
    #: How many system messages this step wrote to the log.
    commits: int
    starts_series: bool
    #: Why a ``request/header`` was logged, or ``None``.
    header: Optional[Header]
    #: The route the request was prepared for, as resolved.
    route: Route = field(default_factory=lambda: Route.from_json(_LEGACY_ROUTE))
    #: Prompt-cache breakpoints and the previous reply's usage.
    cache: Cache = field(default_factory=lambda: Cache([], None))
    #: Token counts of the step's rendering, when ``step(tokens=…)`` asked for them.
    tokens: Optional[TokenReport] = None
    #: Where the step's time went, when ``step(timings=True)`` asked.
    timings: Optional[TimingReport] = None
    #: Why a count asked for (``tokens``, ``request_tokens``) is missing: the step was
    #: written, and a count that failed afterwards does not make it an error.
    tokens_error: Optional[str] = None
    #: The MCP servers the step's scope sees whose instructions were cut to their budgets.
    mcp_cuts: List[InstructionsCut] = field(default_factory=list)
    #: The request's tokens as its route sends it (system prompt, tools, messages), counted
    #: with the tokenizer ``step(tokens=…)`` asked for.
    request_tokens: Optional[RequestTokens] = None

    def request_json(self) -> bytes:
        """`request` as compact UTF-8 JSON text: the body of the provider's HTTP request.
        The in-process host (`InProcessHost`) writes it from its own value without building
        the request as Python objects first, unless ``request`` was read before (then this is
        the JSON of that dict, with whatever the caller changed in it)."""
        return json.dumps(self.request, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> StepResult:
        values: Dict[str, Any] = {
            "step": v["step"],
            "commits": v["commits"],
            "starts_series": v["starts_series"],
            "header": v.get("header"),
            "route": Route.from_json(v.get("route") or _LEGACY_ROUTE),
            "cache": Cache.from_json(v.get("cache") or {}),
            "tokens": TokenReport.maybe(v.get("tokens")),
            "timings": TimingReport.maybe(v.get("timings")),
            "tokens_error": v.get("tokens_error"),
            "mcp_cuts": InstructionsCut.all(v.get("mcp_cuts")),
            "request_tokens": RequestTokens.maybe(v.get("request_tokens")),
        }
        request = v["request"]
        if isinstance(request, dict):
            return cls(request=cast(Request, request), **values)
        return _DeferredStepResult._of(request, values)


_UNREAD = object()


class _DeferredStepResult(StepResult):
    """A `StepResult` of the in-process host whose ``request`` is still the host's value
    (the native module's ``StepRequest``): it becomes Python objects when ``request`` is first
    read (then it is that same dict on every read), and `request_json` writes it without
    them. In every other respect it is a `StepResult`: equal to one with the same fields,
    copied and pickled as one."""

    @classmethod
    def _of(cls, native: StepRequest, values: Dict[str, Any]) -> StepResult:
        result = object.__new__(cls)
        for name, value in values.items():
            object.__setattr__(result, name, value)
        result.__dict__["_native_request"] = native
        result.__dict__["_request"] = _UNREAD
        return result

    @property
    def request(self) -> Request:
        value = self.__dict__.get("_request", _UNREAD)
        if value is _UNREAD:
            value = self._host_request().to_python()
            self.__dict__["_request"] = value
        return cast(Request, value)

    @request.setter
    def request(self, value: Request) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
        # Only the dataclass's own __init__ gets here (dataclasses.replace); the frozen
        # __setattr__ refuses an assignment before that.
        self.__dict__["_request"] = value

    def request_json(self) -> bytes:
        if self.__dict__.get("_request", _UNREAD) is _UNREAD:
            return self._host_request().to_json()
        return super().request_json()

    def _host_request(self) -> StepRequest:
        native: StepRequest = self.__dict__["_native_request"]
        return native

    def _values(self) -> Tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in fields(StepResult))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StepResult):
            return self._values() == tuple(getattr(other, f.name) for f in fields(StepResult))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(StepResult))
        return f"StepResult({shown})"

    def __reduce__(self) -> Tuple[Any, ...]:
        return (StepResult, self._values())


@dataclass(frozen=True)
class Replay:
    """The result of ``request``: a step's request rebuilt from the log."""

    step: int
    request: Request

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> Replay:
        return cls(step=v["step"], request=v["request"])


@dataclass(frozen=True)
class Compacted:
    """The result of ``compact``: the events it wrote, the nodes the summary replaced, and
    what it left of the request's cached prefix."""

    #: The seq of the ``compaction/start`` event.
    start_event: int
    #: The seq of the summary message, which now stands where the range was.
    summary_seq: int
    #: The seq of the ``compaction/end`` event.
    end_event: int
    #: The surface nodes replaced (seqs), in surface order.
    replaced: List[int]
    #: How many of the request's messages before the range are sent as they were: a
    #: provider's prompt cache keeps at most the tools, the system prompt and these.
    prefix_messages_kept: int

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> Compacted:
        return cls(
            start_event=v["start_event"],
            summary_seq=v["summary_seq"],
            end_event=v["end_event"],
            replaced=list(v["replaced"]),
            prefix_messages_kept=v["prefix_messages_kept"],
        )


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
    #: How the live generation's instructions were cut to the server's budget, if they were.
    instructions_cut: Optional[InstructionsCut] = None
    #: ``"stdio"`` or ``"http"``.
    transport: Literal["stdio", "http"] = "stdio"
    #: The lifecycle the last connection used (``"discover"`` or ``"initialize"``).
    lifecycle: Optional[Literal["discover", "initialize"]] = None
    #: The protocol revision the last connection agreed.
    protocol_version: Optional[str] = None
    #: What the server injects: whether its instructions are on, and the text handed to the
    #: provider plugin (after any cut) with its size.
    instructions: Optional[McpInstructions] = None
    #: The live generation's skills index (the MCP Skills extension), in server order; empty
    #: when the server offers no skills.
    skills: List[McpSkillEntry] = field(default_factory=list)

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> McpStatus:
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
            instructions_cut=InstructionsCut.maybe(v.get("instructions_cut")),
            transport=v.get("transport", "stdio"),
            lifecycle=v.get("lifecycle"),
            protocol_version=v.get("protocol_version"),
            instructions=McpInstructions.maybe(v.get("instructions")),
            skills=[McpSkillEntry.from_json(s) for s in v.get("skills", [])],
        )


@dataclass(frozen=True)
class McpSkillEntry:
    """One skill of an MCP server's index (`McpStatus.skills`, `McpSkillBody.skill`)."""

    #: Its name: what `mcp_skill` asks for.
    name: str
    #: The URI of its ``SKILL.md``.
    uri: str
    #: Its description, as the server gave it (third-party text).
    description: str
    #: The digest of its ``SKILL.md`` (``sha256:…``), or ``"dynamic"``.
    digest: str
    #: How many files it lists (0 for a dynamic skill).
    files: int
    #: The bytes of all its files (0 for a dynamic skill).
    size: int

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> McpSkillEntry:
        return cls(
            name=v["name"],
            uri=v["uri"],
            description=v["description"],
            digest=v["digest"],
            files=v["files"],
            size=v["size"],
        )


@dataclass(frozen=True)
class McpSkillBody:
    """A skill's ``SKILL.md`` (`mcp_skill`), read from its server and checked against the index."""

    #: The server's name.
    server: str
    #: The skill, as the live index lists it.
    skill: McpSkillEntry
    #: The text of its ``SKILL.md``.
    text: str
    #: The digest of the bytes read.
    digest: str
    #: Whether the bytes were checked against the index's digest (``False`` only for a
    #: dynamic skill, which lists none).
    verified: bool

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> McpSkillBody:
        return cls(
            server=v["server"],
            skill=McpSkillEntry.from_json(v["skill"]),
            text=v["text"],
            digest=v["digest"],
            verified=v["verified"],
        )


@dataclass(frozen=True)
class McpInstructions:
    """What an MCP server injects (`McpStatus.instructions`)."""

    #: Whether its instructions reach the prompt (``[[mcp]] instructions``).
    enabled: bool
    #: The size of ``text`` in bytes.
    bytes: int
    #: The instructions the live generation handed to the provider plugin.
    text: str

    @classmethod
    def maybe(cls, v: Optional[Mapping[str, Any]]) -> Optional[McpInstructions]:
        return None if v is None else cls(enabled=v["enabled"], bytes=v["bytes"], text=v["text"])


@dataclass(frozen=True)
class LogLine:
    """The params of ``log``, ``plugin/skipped`` and ``plugin/quarantined``."""

    plugin: str
    scope: Optional[str]
    #: ``error`` … ``trace``, ``stdout``, ``stderr``, ``skipped`` or ``quarantined``.
    stream: str
    message: str

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> LogLine:
        return cls(plugin=v["plugin"], scope=v.get("scope"), stream=v["stream"], message=v["message"])


@dataclass(frozen=True)
class Notification:
    """A notification the server sent (after ``subscribe``)."""

    #: ``log``, ``plugin/skipped``, ``plugin/quarantined``, ``registry/changed``,
    #: ``mcp/status`` or ``mcp/instructions_cut``.
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

    @property
    def instructions_cut(self) -> Optional[InstructionsCut]:
        """The params as an `InstructionsCut` (``mcp/instructions_cut``), else ``None``."""
        if self.method == "mcp/instructions_cut":
            return InstructionsCut.from_json(self.params)
        return None
