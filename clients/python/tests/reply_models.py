"""Provider replies checked against the official SDKs' own response models before a test
records or serves them, so a reply written for a test is one the provider could have sent.

`check_reply` validates a reply with the model of its form, from the JSON text (as the SDK
receives it) in pydantic's strict mode: a missing required field, a value of the wrong type
(``"created": "1"``) or an unknown literal (``"finish_reason": "done"``) fails. The SDKs'
models take keys they do not declare (``extra="allow"``, for the fields a provider adds
later); here such a key fails too, so a misspelt optional field (``"stop_sequense"``) is
caught. The one key allowed beyond the models is `ALLOWED_EXTRA`'s: DeepSeek's
``reasoning_content`` on a chat completion's message, which the chat-completions route reads.

The forms, by name (the name a fixture file gives, or the one `form_of` finds):

- ``openai.ChatCompletion``, ``anthropic.Message``, ``openai.Response``: a whole reply;
- ``openai.ChatCompletionMessage``: ``choices[0].message`` alone;
- ``anthropic.Message.content``: ``{"role": "assistant", "content": [blocks]}``, or the list
  of blocks alone;
- ``openai.Response.output``: the list of output items alone.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

from anthropic.types import ContentBlock, Message
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.responses import Response, ResponseOutputItem
from pydantic import BaseModel, TypeAdapter, ValidationError

__all__ = ["ALLOWED_EXTRA", "FORMS", "ReplyRejected", "check_reply", "form_of"]

#: Per form: the type a reply of that form validates as.
FORMS: Dict[str, Any] = {
    "openai.ChatCompletion": ChatCompletion,
    "openai.ChatCompletionMessage": ChatCompletionMessage,
    "anthropic.Message": Message,
    "anthropic.Message.content": List[ContentBlock],
    "openai.Response": Response,
    "openai.Response.output": List[ResponseOutputItem],
}

#: Keys a reply may carry beyond what the SDK's model declares, per model class name.
ALLOWED_EXTRA: Dict[str, FrozenSet[str]] = {
    # DeepSeek's thinking mode (docs/routes.md): read by the chat-completions route.
    "ChatCompletionMessage": frozenset({"reasoning_content"}),
}


class ReplyRejected(ValueError):
    """A reply the SDK's response model does not take; the message says where and why."""


@functools.lru_cache(maxsize=None)
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def form_of(reply: Any) -> str:
    """The form of a whole reply, from the markers every provider sends: ``object`` (OpenAI)
    or ``type`` (Anthropic)."""
    if isinstance(reply, Mapping):
        if reply.get("object") == "chat.completion":
            return "openai.ChatCompletion"
        if reply.get("object") == "response":
            return "openai.Response"
        if reply.get("type") == "message":
            return "anthropic.Message"
    raise ReplyRejected(
        "not a whole provider reply (no \"object\": \"chat.completion\" or \"response\", "
        f"no \"type\": \"message\"): {json.dumps(reply)[:200]}"
    )


def check_reply(reply: Any, form: Optional[str] = None) -> None:
    """Raise `ReplyRejected` unless ``reply`` validates, strictly and without undeclared keys,
    as ``form`` (a name of `FORMS`; by default the form `form_of` finds)."""
    form = form or form_of(reply)
    value = reply
    if form == "anthropic.Message.content" and isinstance(reply, Mapping):
        # The message alone: its role, and its blocks.
        if reply.get("role") != "assistant" or set(reply) != {"role", "content"}:
            raise ReplyRejected(f"{form}: a message alone is {{\"role\": \"assistant\", \"content\": [...]}}, not {sorted(reply)}")
        value = reply["content"]
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ReplyRejected(f"{form}: not JSON: {e}") from e
    try:
        parsed = _adapter(FORMS[form]).validate_json(text, strict=True)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}" for err in _relevant(e.errors())[:5])
        raise ReplyRejected(f"{form}: {problems}") from None
    extra = undeclared_keys(parsed)
    if extra:
        raise ReplyRejected(f"{form}: keys the SDK's model does not declare: {', '.join(extra)}")


def _relevant(errors: List[Any]) -> List[Any]:
    """A union's errors for the member the value's ``type`` names. The SDKs' unions of blocks
    and items are validated member by member, and pydantic reports every member's errors
    (``content.0.TextBlock.text``, ``content.0.ThinkingBlock.signature``, ...); the members
    whose ``type`` literal the value does not match are left out. When that leaves nothing
    (the ``type`` itself is unknown), every error is kept."""
    wrong = {tuple(err["loc"][:-1]) for err in errors if _wrong_member(err)}
    if not wrong:
        return errors
    kept = [err for err in errors if not any(tuple(err["loc"][: len(member)]) == member for member in wrong)]
    return kept or errors


def _wrong_member(err: Any) -> bool:
    """A ``type`` literal refused at ``(..., "ThinkingBlock", "type")``: a union's member,
    named by its class (the APIs' own keys are snake_case)."""
    loc = err["loc"]
    return (
        err["type"] == "literal_error"
        and len(loc) >= 2
        and loc[-1] == "type"
        and isinstance(loc[-2], str)
        and loc[-2][:1].isupper()
    )


def undeclared_keys(value: Any, path: str = "$") -> List[str]:
    """Where a validated value holds keys its model does not declare (``model_extra``),
    less `ALLOWED_EXTRA`'s."""
    found: List[str] = []
    if isinstance(value, BaseModel):
        allowed = ALLOWED_EXTRA.get(type(value).__name__, frozenset())
        found += [f"{path}.{key} ({type(value).__name__})" for key in (value.model_extra or {}) if key not in allowed]
        for name in type(value).model_fields:
            found += undeclared_keys(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found += undeclared_keys(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += undeclared_keys(item, f"{path}.{key}")
    return found


def check_fixture(entries: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """Check every ``{"form": ..., "reply": ...}`` of a fixture file's ``replies``; the
    ``(name, problem)`` of each that fails."""
    failed: List[Tuple[str, str]] = []
    for name, entry in entries.items():
        try:
            check_reply(entry["reply"], entry["form"])
        except ReplyRejected as e:
            failed.append((name, str(e)))
    return failed
