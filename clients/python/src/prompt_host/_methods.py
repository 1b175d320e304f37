"""The protocol's methods, each defined once for both clients: its parameters, its
docstring, the params it sends (`_wire`: only the keys the caller gave) and how its result is
read. A definition does no I/O: it returns the `Call` to make. `sync` turns it into a method
of `PromptHost` that waits for the answer, `asynchronous` into one of `AsyncPromptHost` to
await; the in-process hosts inherit them. What differs between the clients (threads or
asyncio, a pipe or memory) is in `client.py`, `aio.py` and `inprocess.py`, never here."""

from __future__ import annotations

import functools
import inspect
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Coroutine,
    Dict,
    Generic,
    Iterable,
    List,
    Mapping,
    Optional,
    TypeVar,
    Union,
)

from . import _wire
from ._wire import CancelToken, PathLike, Reply
from .types import (
    Assembly,
    Compacted,
    Describe,
    Facts,
    McpSkillBody,
    McpStatus,
    PluginInfo,
    Rendered,
    Replay,
    RouteSpec,
    StepResult,
    ToolCall,
    Usage,
)

if TYPE_CHECKING:
    from typing_extensions import Concatenate, ParamSpec

    from .aio import AsyncPromptHost
    from .client import PromptHost

    P = ParamSpec("P")

T = TypeVar("T")


class Call(Generic[T]):
    """One request of a method: what to send, how to read its result, and the caller's
    ``cancel`` and ``timeout``."""

    __slots__ = ("cancel", "method", "params", "read", "step", "timeout")

    def __init__(
        self,
        method: str,
        params: Mapping[str, Any],
        read: Callable[[Any], T],
        cancel: Optional[CancelToken],
        timeout: Optional[float],
        *,
        step: bool = False,
    ) -> None:
        self.method = method
        self.params = params
        self.read = read
        self.cancel = cancel
        self.timeout = timeout
        #: A ``step`` or ``retry``, whose request the in-process host hands over unconverted.
        self.step = step


def _nothing(result: Any) -> None:
    return None


def _seq(result: Any) -> int:
    return int(result["seq"])


def _as_method_of(owner: str, spec: Callable[..., Any], method: Callable[..., Any]) -> None:
    """Make ``method`` look, to `inspect` and `help`, like ``spec`` written as a method of
    ``owner`` (``module.Class``): its name, docstring and parameters, with ``self`` first
    and the result's type (``T`` of ``spec``'s ``Call[T]``)."""
    functools.update_wrapper(method, spec)
    method.__module__, cls = owner.rsplit(".", 1)
    method.__qualname__ = f"{cls}.{spec.__name__}"
    signature = inspect.signature(spec)
    returns = str(signature.return_annotation).removeprefix("Call[").removesuffix("]")
    receiver = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[receiver, *signature.parameters.values()], return_annotation=returns
    )
    method.__annotations__ = {**spec.__annotations__, "return": returns}


def sync(spec: Callable[P, Call[T]]) -> Callable[Concatenate[PromptHost, P], T]:
    """The method of `PromptHost` made from ``spec``: it sends the call and waits for its
    result."""

    def method(self: PromptHost, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._request(spec(*args, **kwargs))

    _as_method_of("prompt_host.client.PromptHost", spec, method)
    return method


def asynchronous(spec: Callable[P, Call[T]]) -> Callable[Concatenate[AsyncPromptHost, P], Coroutine[Any, Any, T]]:
    """The method of `AsyncPromptHost` made from ``spec``: a coroutine that sends the call and
    awaits its result."""

    async def method(self: AsyncPromptHost, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._request(spec(*args, **kwargs))

    _as_method_of("prompt_host.aio.AsyncPromptHost", spec, method)
    return method


# -- the methods -----------------------------------------------------------------------------


def describe(*, cancel: Optional[CancelToken] = None, timeout: Optional[float] = None) -> Call[Describe]:
    return Call("describe", {}, Describe.from_json, cancel, timeout)


def bind_scope(
    scope: str,
    parent: Optional[str] = None,
    *,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[None]:
    return Call("bind_scope", _wire.bind_scope(scope, parent), _nothing, cancel, timeout)


def dispose_scope(scope: str, *, cancel: Optional[CancelToken] = None, timeout: Optional[float] = None) -> Call[None]:
    return Call("dispose_scope", {"scope": scope}, _nothing, cancel, timeout)


def scopes(*, cancel: Optional[CancelToken] = None, timeout: Optional[float] = None) -> Call[List[str]]:
    return Call("scopes", {}, lambda result: list(result), cancel, timeout)


def load_plugin(
    name: str,
    wasm: PathLike,
    *,
    scope: Optional[str] = None,
    config: Any = None,
    limits: Optional[Mapping[str, int]] = None,
    on_error: Optional[str] = None,
    quarantine_after: Optional[int] = None,
    sha256: Optional[str] = None,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[int]:
    """Load a plugin; its id (for `dispose_plugin`). `wasm` is a component file, or the
    name of a plugin the package ships (``"persona"``, ``"project-instructions"``: the
    README's "Plugins found by name")."""
    params = _wire.load_plugin(name, wasm, scope, config, limits, on_error, quarantine_after, sha256)
    return Call("load_plugin", params, lambda result: int(result["id"]), cancel, timeout)


def reload_plugin(
    id: int, wasm: PathLike, *, cancel: Optional[CancelToken] = None, timeout: Optional[float] = None
) -> Call[int]:
    """Replace loaded plugin `id` by the component at `wasm` (a rebuilt plugin), with the same
    name, scope, config and limits; how many entries the new instance declared. If the new
    one fails to load, the old one stays and the error says why."""
    params = {"id": id, "wasm": str(wasm)}
    return Call("reload_plugin", params, lambda result: int(result["declarations"]), cancel, timeout)


def dispose_plugin(id: int, *, cancel: Optional[CancelToken] = None, timeout: Optional[float] = None) -> Call[bool]:
    return Call("dispose_plugin", {"id": id}, lambda result: bool(result["disposed"]), cancel, timeout)


def plugins(*, cancel: Optional[CancelToken] = None, timeout: Optional[float] = None) -> Call[List[PluginInfo]]:
    return Call("plugins", {}, lambda result: [PluginInfo.from_json(p) for p in result], cancel, timeout)


def assemble(
    scope: Optional[str] = None,
    facts: Optional[Facts] = None,
    *,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[Assembly]:
    return Call("assemble", _wire.target(scope, facts), Assembly.from_json, cancel, timeout)


def render(
    scope: Optional[str] = None,
    facts: Optional[Facts] = None,
    *,
    tokens: Union[bool, str, None] = None,
    timings: Optional[bool] = None,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[Rendered]:
    """The system prompt and the runtime-context snapshot. ``tokens=True`` adds their
    token counts (`TokenReport`) with host.toml's ``[prompt] tokenizer``; a tokenizer's
    name (``"o200k_base"``, ``"cl100k_base"`` or a ``tokenizer.json`` path) counts with
    that one. ``timings=True`` adds where the time went (`TimingReport`): each plugin
    call and the assemble and render phases."""
    return Call("render", _wire.target(scope, facts, tokens, timings), Rendered.from_json, cancel, timeout)


def step(
    session: PathLike,
    *,
    scope: Optional[str] = None,
    facts: Optional[Facts] = None,
    user: Union[str, Iterable[str], None] = None,
    in_history: Optional[bool] = None,
    starts_series: Optional[bool] = None,
    route: Union[str, RouteSpec, None] = None,
    tokens: Union[bool, str, None] = None,
    timings: Optional[bool] = None,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[StepResult]:
    """Take a step: the prompt is assembled and committed to the log, ``user`` messages
    are appended, and the request is derived for ``route`` (a route name or a
    `RouteSpec`; without one, the route of the log's newest step, ``chat-completions``
    for a new log). A route that cannot be prepared raises `RouteError`; nothing is
    written then. ``tokens`` adds the rendering's token counts, and ``timings`` where the
    time went (with the ``commit`` phase), as `render`'s do."""
    params = _wire.step(session, scope, facts, user, in_history, starts_series, route, tokens, timings)
    return Call("step", params, StepResult.from_json, cancel, timeout, step=True)


def retry(
    session: PathLike,
    *,
    facts: Optional[Facts] = None,
    in_history: Optional[bool] = None,
    starts_series: Optional[bool] = None,
    route: Union[str, RouteSpec, None] = None,
    tokens: Union[bool, str, None] = None,
    timings: Optional[bool] = None,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[StepResult]:
    """Take the newest step again (after a provider failure), with the same assembly
    (no plugin runs) re-rendered for ``facts``, and its request derived for ``route``
    (the step's route when ``None``). ``tokens`` and ``timings`` as for `step`."""
    params = _wire.retry(session, facts, in_history, starts_series, route, tokens, timings)
    return Call("retry", params, StepResult.from_json, cancel, timeout, step=True)


def append_assistant(
    session: PathLike,
    *,
    text: Optional[str] = None,
    reasoning: Optional[str] = None,
    tool_calls: Optional[Iterable[Union[ToolCall, Mapping[str, Any]]]] = None,
    reply: Optional[Reply] = None,
    route: Optional[str] = None,
    usage: Union[Usage, Mapping[str, int], None] = None,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[int]:
    """Append the model's reply; its ``seq`` in the log.

    Either the provider's own ``reply`` — a chat completion or its
    ``choices[0].message``, an Anthropic ``Message`` or its content blocks, a Responses
    response or its ``output`` items, as plain JSON (the SDK's ``.to_dict()``) — read
    for ``route`` (the route of the log's newest step when ``None``) and sent back as
    the provider sent it; or the plain form: ``text``, ``reasoning`` and
    ``tool_calls`` (`ToolCall`, arguments an object or the JSON text of one). ``usage``
    gives the reply's token figures (else they are read from the reply). A reply the
    route cannot read, tool-call arguments that are not a JSON object and a tool-call id
    used before are refused (`PromptHostError`, kind ``conversation``), and nothing is
    appended."""
    params = _wire.append_assistant(session, text, reasoning, tool_calls, reply, route, usage)
    return Call("append_assistant", params, _seq, cancel, timeout)


def append_tool_result(
    session: PathLike,
    call_id: str,
    content: str,
    *,
    is_error: Optional[bool] = None,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[int]:
    """Append a tool's result; its ``seq`` in the log."""
    params = _wire.append_tool_result(session, call_id, content, is_error)
    return Call("append_tool_result", params, _seq, cancel, timeout)


def request(
    session: PathLike,
    step: Optional[int] = None,
    *,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[Replay]:
    """The request step ``step`` returned (the newest when ``None``), from the log."""
    return Call("request", _wire.request(session, step), Replay.from_json, cancel, timeout)


def compact(
    session: PathLike,
    summary: str,
    *,
    start_seq: Optional[int] = None,
    end_seq: Optional[int] = None,
    keep_turns: Optional[int] = None,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[Compacted]:
    """Replace a range of the session's surface by ``summary`` (text the caller's model
    wrote, at most 1 MiB): the surface nodes from ``start_seq`` to ``end_seq`` (both
    given), or, with ``keep_turns``, everything after the system prompt but the newest
    ``keep_turns`` turns. One durable write; the log keeps what was replaced, so `request`
    rebuilds every earlier step as it was sent, and the next `step` sends the summary in
    the range's place. `Compacted` says what was written and how many of the request's
    messages before the range are sent unchanged (what a provider's prompt cache can
    keep). A range that is not on the surface, is reversed, starts at the system prompt,
    holds system prompt nodes only, separates a tool call from its result or covers a call
    of the current turn with no result yet, and an empty summary or one over 1 MiB, are
    refused (`PromptHostError`, kind ``compaction``; the message says which and where the
    range could end instead), and nothing is written. A range and ``keep_turns`` together,
    or neither, is invalid params (code -32602)."""
    params = _wire.compact(session, summary, start_seq, end_seq, keep_turns)
    return Call("compact", params, Compacted.from_json, cancel, timeout)


def close_session(
    session: PathLike, *, cancel: Optional[CancelToken] = None, timeout: Optional[float] = None
) -> Call[bool]:
    params = {"session": _wire.path_param(session)}
    return Call("close_session", params, lambda result: bool(result["closed"]), cancel, timeout)


def mcp_status(
    wait_ms: Optional[int] = None, *, cancel: Optional[CancelToken] = None, timeout: Optional[float] = None
) -> Call[List[McpStatus]]:
    params: Dict[str, Any] = {} if wait_ms is None else {"wait_ms": wait_ms}
    return Call("mcp_status", params, lambda result: [McpStatus.from_json(s) for s in result], cancel, timeout)


def mcp_skill(
    server: str,
    skill: str,
    scope: Optional[str] = None,
    *,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[McpSkillBody]:
    """The ``SKILL.md`` of ``server``'s skill ``skill`` (the server connected into ``scope``;
    ``None``: the global one), read now and checked against the server's skills index: a body
    whose size, digest or frontmatter name differ is refused (`PromptHostError`, kind
    ``mcp-skill``). Nothing is put in the prompt."""
    params: Dict[str, Any] = {"server": server, "skill": skill}
    if scope is not None:
        params["scope"] = scope
    return Call("mcp_skill", params, McpSkillBody.from_json, cancel, timeout)


def subscribe(
    *,
    log: Optional[str] = None,
    plugins: Optional[bool] = None,
    registry: Optional[bool] = None,
    mcp: Optional[bool] = None,
    cancel: Optional[CancelToken] = None,
    timeout: Optional[float] = None,
) -> Call[None]:
    """Choose the notifications to receive (replaces the previous choice)."""
    return Call("subscribe", _wire.subscribe(log, plugins, registry, mcp), _nothing, cancel, timeout)


#: Every method, in the order of docs/protocol.md: what both clients define from here.
METHODS = (
    describe,
    bind_scope,
    dispose_scope,
    scopes,
    load_plugin,
    reload_plugin,
    dispose_plugin,
    plugins,
    assemble,
    render,
    step,
    retry,
    append_assistant,
    append_tool_result,
    request,
    compact,
    close_session,
    mcp_status,
    mcp_skill,
    subscribe,
)
