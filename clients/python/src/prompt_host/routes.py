"""A step's request as the request type of the provider's official SDK.

A step's request is shaped for its route (docs/routes.md) and goes to the provider as it
is. These accessors give it the type the SDK's ``create`` takes, so that

    completion = openai_client.chat.completions.create(**openai_chat(step))
    message = anthropic_client.messages.create(**anthropic_messages(step))
    response = openai_client.responses.create(**openai_responses(step))

type-check (``mypy --strict``) with no cast in the caller's code. The SDK types are imported
only while type checking: this module, like the rest of the client, needs neither SDK at
run time (install ``prompt-host[openai]`` or ``prompt-host[anthropic]`` for them). Each
accessor checks that the step was prepared for its route and raises `RouteMismatch` if not.
The request is returned as it is, not copied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, cast

from .types import RouteName, StepResult

if TYPE_CHECKING:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

__all__ = ["RouteMismatch", "anthropic_messages", "openai_chat", "openai_responses"]

_ACCESSOR: Dict[str, str] = {
    "chat-completions": "openai_chat",
    "anthropic-messages": "anthropic_messages",
    "openai-responses": "openai_responses",
}


class RouteMismatch(ValueError):
    """The step's request was prepared for another route than the accessor's."""

    def __init__(self, step: StepResult, expected: RouteName) -> None:
        self.step = step.step
        self.expected = expected
        self.actual = step.route.name
        super().__init__(
            f"step {step.step} was prepared for route {self.actual}, not {expected}: take its request with "
            f"prompt_host.routes.{_ACCESSOR.get(self.actual, '?')}(step), or take the step with "
            f'route="{expected}"'
        )


def _request(step: StepResult, route: RouteName) -> Dict[str, Any]:
    if step.route.name != route:
        raise RouteMismatch(step, route)
    request: Dict[str, Any] = cast(Dict[str, Any], step.request)
    if "model" not in request:
        # Only chat-completions may go without: the SDK's create requires one.
        raise ValueError(f'step {step.step}\'s request names no model: give the "model" fact or the route\'s "model"')
    return request


def openai_chat(step: StepResult) -> CompletionCreateParamsNonStreaming:
    """The request of a ``chat-completions`` step, for
    ``openai.OpenAI().chat.completions.create(**openai_chat(step))`` (and ``AsyncOpenAI``).
    Raises `RouteMismatch` for a step of another route, `ValueError` when the request names
    no model (the SDK requires one)."""
    return cast("CompletionCreateParamsNonStreaming", _request(step, "chat-completions"))


def anthropic_messages(step: StepResult) -> MessageCreateParamsNonStreaming:
    """The request of an ``anthropic-messages`` step, for
    ``anthropic.Anthropic().messages.create(**anthropic_messages(step))`` (and
    ``AsyncAnthropic``). Raises `RouteMismatch` for a step of another route."""
    return cast("MessageCreateParamsNonStreaming", _request(step, "anthropic-messages"))


def openai_responses(step: StepResult) -> ResponseCreateParamsNonStreaming:
    """The request of an ``openai-responses`` step, for
    ``openai.OpenAI().responses.create(**openai_responses(step))`` (and ``AsyncOpenAI``).
    Raises `RouteMismatch` for a step of another route."""
    return cast("ResponseCreateParamsNonStreaming", _request(step, "openai-responses"))
