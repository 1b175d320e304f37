"""Checks of a request body against the official SDKs: how each SDK serialises a ``create``
call's body, its request TypedDict (pydantic validation), and a walk of that TypedDict that
finds every key it does not declare.

How the SDKs serialise (openai 3.x and anthropic 2.x, ``_utils/_json.py``: ``openapi_dumps``):
``json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``, where
``body`` is the dict ``create`` builds from its keyword arguments, in the order its source
lists them (``body={"model": model, "stream": stream, ...}``), omitted arguments dropped.
Nested values pass through unchanged (``maybe_transform`` walks the TypedDict but keeps each
dict's key order). So the bytes an SDK sends for ``create(**request)`` are ``request`` with
its top-level keys in the SDK's order; `sdk_body` reproduces exactly that.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import json
import re
import typing
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import anthropic
import openai
from anthropic.resources.messages.messages import Messages
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.resources.chat.completions.completions import Completions
from openai.resources.responses.responses import Responses
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import is_typeddict  # the SDKs' TypedDicts are typing_extensions ones

#: Per route: the SDK's request TypedDict and its ``create``.
SDK: Dict[str, Tuple[Any, Callable[..., Any]]] = {
    "chat-completions": (CompletionCreateParamsNonStreaming, Completions.create),
    "anthropic-messages": (MessageCreateParamsNonStreaming, Messages.create),
    "openai-responses": (ResponseCreateParamsNonStreaming, Responses.create),
}

SDK_VERSIONS = f"openai {openai.__version__}, anthropic {anthropic.__version__}"


@functools.lru_cache(maxsize=None)
def body_key_order(create: Callable[..., Any]) -> Tuple[str, ...]:
    """The order in which ``create`` puts its arguments in the body it sends, read from its
    source (``body=maybe_transform({"model": model, ...})`` or ``body={...}``)."""
    source = inspect.getsource(create)
    found = re.search(r"body=(?:(?:async_)?maybe_transform\()?\s*\{(.*?)\n\s*\}", source, re.S)
    assert found is not None, f"no body dict in the source of {create.__qualname__}"
    keys = tuple(re.findall(r'^\s*"([A-Za-z_]+)":', found.group(1), re.M))
    assert "model" in keys, keys
    return keys


def sdk_body(route: str, request: Dict[str, Any]) -> bytes:
    """The bytes the route's SDK sends for ``create(**request)``."""
    order = body_key_order(SDK[route][1])
    unknown = [k for k in request if k not in order]
    assert not unknown, f"{route}: keys {unknown} are no argument of {SDK[route][1].__qualname__}"
    body = {k: request[k] for k in order if k in request}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


# -- pydantic validation ------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def _drain(value: Any) -> None:
    """Consume what pydantic validates lazily: an ``Iterable[...]`` field validates to an
    iterator whose items are checked only as they are read."""
    if isinstance(value, dict):
        for v in value.values():
            _drain(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _drain(v)
    elif isinstance(value, Iterator):
        for v in value:
            _drain(v)


def validate(tp: Any, value: Any) -> None:
    """``TypeAdapter(tp).validate_python(value)``, lazily validated iterables included;
    raises `ValidationError`."""
    _drain(adapter(tp).validate_python(value))


def validate_request(route: str, body: Any) -> None:
    validate(SDK[route][0], body)


# -- the walk for undeclared keys ---------------------------------------------------------------

_WRAPPERS = {"Required", "NotRequired", "ReadOnly", "Annotated"}
_LISTS = (list, collections.abc.Iterable, collections.abc.Sequence, collections.abc.Collection)


def _unwrap(tp: Any) -> Any:
    while True:
        origin = typing.get_origin(tp)
        name = getattr(origin, "_name", None) or getattr(origin, "__name__", None) or ""
        if origin is typing.Annotated or name in _WRAPPERS or str(origin).rsplit(".", 1)[-1] in _WRAPPERS:
            tp = typing.get_args(tp)[0]
            continue
        return tp


@functools.lru_cache(maxsize=None)
def _hints(tp: Any) -> Dict[str, Any]:
    return typing.get_type_hints(tp, include_extras=True)


def _is_list_type(origin: Any) -> bool:
    if origin in _LISTS:
        return True
    return getattr(origin, "__name__", "") == "SequenceNotStr"


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp)


def _leaf_fits(value: Any, tp: Any) -> bool:
    if tp is Any or tp is object:
        return True
    if tp is type(None):
        return value is None
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return value in typing.get_args(tp)
    if tp is str:
        return isinstance(value, str)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return True


def undeclared(value: Any, tp: Any, path: str = "$") -> List[str]:
    """Where ``value`` has keys that ``tp`` (a TypedDict, or a type built of TypedDicts,
    lists, dicts and unions) does not declare; ``[]`` when none. In a union, a dict must
    fit one TypedDict member — no undeclared key, and valid for that member alone
    (pydantic) — so a block that only the SDK's response models would accept does not
    pass. Response models (pydantic classes) in a union are not taken as members."""
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if origin is typing.Union or (origin is not None and _name(origin) == "UnionType"):
        return _undeclared_in_union(value, typing.get_args(tp), path)
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: {_name(tp)} takes an object, not {type(value).__name__}"]
        hints = _hints(tp)
        problems = [f"{path}.{key}: not a key of {_name(tp)}" for key in value if key not in hints]
        for key, item in value.items():
            if key in hints:
                problems += undeclared(item, hints[key], f"{path}.{key}")
        return problems
    if origin is not None and _is_list_type(origin):
        if not isinstance(value, list):
            return [f"{path}: a list expected, not {type(value).__name__}"] if isinstance(value, dict) else []
        (item_type,) = typing.get_args(tp) or (Any,)
        problems: List[str] = []
        for i, item in enumerate(value):
            problems += undeclared(item, item_type, f"{path}[{i}]")
        return problems
    if origin in (dict, collections.abc.Mapping):
        args = typing.get_args(tp)
        if isinstance(value, dict) and len(args) == 2:
            problems = []
            for key, item in value.items():
                problems += undeclared(item, args[1], f"{path}.{key}")
            return problems
        return []
    if not _leaf_fits(value, tp):
        return [f"{path}: {json.dumps(value)[:80]} is not a {_name(tp)}"]
    return []


def _undeclared_in_union(value: Any, members: Tuple[Any, ...], path: str) -> List[str]:
    if value is None:
        return [] if type(None) in members else [f"{path}: null is not allowed here"]
    best: Optional[List[str]] = None
    best_name = ""
    for member in members:
        member = _unwrap(member)
        if member is type(None):
            continue
        if isinstance(member, type) and issubclass(member, BaseModel):
            continue  # a response model, not a request type
        origin = typing.get_origin(member)
        if isinstance(value, dict):
            if not (is_typeddict(member) or origin in (dict, collections.abc.Mapping) or member in (Any, object)):
                continue
        elif isinstance(value, list):
            if origin is None or not _is_list_type(origin):
                continue
        else:
            if is_typeddict(member) or (origin is not None and _is_list_type(origin)):
                continue
            if not _leaf_fits(value, member):
                continue
        problems = undeclared(value, member, path)
        if not problems and is_typeddict(member):
            try:
                validate(member, value)
            except ValidationError as e:
                problems = [f"{path}: not a valid {_name(member)}: " + "; ".join(
                    f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()[:3]
                )]
        if not problems:
            return []
        if best is None or len(problems) < len(best):
            best, best_name = problems, _name(member)
    if best is None:
        return [f"{path}: no member of the union takes a {type(value).__name__}"]
    return [f"{path}: fits no member of the union; nearest {best_name}: {p}" for p in best]


def undeclared_in_request(route: str, body: Any) -> List[str]:
    return undeclared(body, SDK[route][0])
