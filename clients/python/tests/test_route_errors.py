"""Bad input on routes gets the server's clear error and appends nothing: the log has as many
lines (the same bytes) after the refused request as before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

from fake_provider import anthropic_message, chat_completion, responses_response
from prompt_host import FAILED, INVALID_PARAMS, PromptHost, PromptHostError, RouteError, RouteSpec, StepResult, ToolCall
from prompt_host.routes import RouteMismatch, anthropic_messages, openai_chat, openai_responses

ROUTES: Dict[str, RouteSpec] = {
    "chat-completions": {"name": "chat-completions"},
    "anthropic-messages": {"name": "anthropic-messages", "options": {"max_tokens": 256}},
    "openai-responses": {"name": "openai-responses"},
}
MODEL = {"chat-completions": "gpt-5.5", "anthropic-messages": "claude-opus-4-8", "openai-responses": "gpt-5.5"}


def started(host: PromptHost, tmp_path: Path, route: str) -> str:
    """A log whose newest step is on ``route``."""
    log = str(tmp_path / f"{route}.jsonl")
    host.step(log, facts={"model": MODEL[route]}, route=ROUTES[route], user=["hi"])
    return log


def refused(log: str, attempt: Callable[[], Any]) -> PromptHostError:
    """Run ``attempt``, which must fail; the log must not have changed."""
    path = Path(log)
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(PromptHostError) as info:
        attempt()
    after = path.read_bytes() if path.exists() else None
    assert after == before, "a refused request changed the log"
    if before is not None:
        assert after is not None and len(after.splitlines()) == len(before.splitlines())
    return info.value


def conversation_error(log: str, text: str) -> str:
    return f"session log {log}: {text}"


# -- tool-call arguments -----------------------------------------------------------------------


ARRAY_TEXT = 'its arguments are JSON text of an array, not of an object'


def with_input(reply: Dict[str, Any], value: Any) -> Dict[str, Any]:
    """``reply`` with its tool_use block's input replaced by ``value``: no reply the Messages
    API sends (its input is an object, and the SDK's model refuses anything else), fed on
    purpose, past the check of `reply_models`, to see the server refuse it."""
    (block,) = reply["content"]
    block["input"] = value
    return reply


def array_arguments_replies() -> List[Any]:
    return [
        pytest.param("chat-completions", lambda: {"tool_calls": [ToolCall("c1", "bash", "[1, 2]")]}, ARRAY_TEXT, id="plain-form"),
        pytest.param(
            "chat-completions",
            lambda: {"reply": chat_completion(tool_calls=[("c1", "bash", "[1, 2]")])},
            ARRAY_TEXT,
            id="chat-completion",
        ),
        pytest.param(
            "openai-responses",
            lambda: {"reply": [{"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "[1, 2]"}]},
            ARRAY_TEXT,
            id="responses-output",
        ),
        pytest.param(
            "anthropic-messages",
            lambda: {"reply": with_input(anthropic_message([{"type": "tool_use", "id": "c1", "name": "bash", "input": {}}]), "[1, 2]")},
            ARRAY_TEXT,
            id="anthropic-input-text",
        ),
        pytest.param(
            "anthropic-messages",
            lambda: {"reply": with_input(anthropic_message([{"type": "tool_use", "id": "c1", "name": "bash", "input": {}}]), [1, 2])["content"]},
            "its arguments are an array; they must be a JSON object or the JSON text of one",
            id="anthropic-input-array",
        ),
    ]


@pytest.mark.parametrize("route,params,message", array_arguments_replies())
def test_arguments_that_are_not_an_object_are_refused(
    host: PromptHost, tmp_path: Path, route: str, params: Callable[[], Dict[str, Any]], message: str
) -> None:
    log = started(host, tmp_path, route)
    e = refused(log, lambda: host.append_assistant(log, **params()))
    assert (e.code, e.kind, e.session) == (FAILED, "conversation", log)
    assert e.message == conversation_error(log, f'tool call 0 ("bash"): {message}')


def test_arguments_that_are_not_json_are_refused(host: PromptHost, tmp_path: Path) -> None:
    log = started(host, tmp_path, "chat-completions")
    e = refused(log, lambda: host.append_assistant(log, tool_calls=[ToolCall("c1", "bash", "nope")]))
    assert e.message == conversation_error(
        log, 'tool call 0 ("bash"): its arguments are not valid JSON text (expected ident at line 1 column 2)'
    )


# -- a reply of another route's shape ----------------------------------------------------------


@pytest.mark.parametrize(
    "route,reply,given,shaped_like",
    [
        ("chat-completions", anthropic_message([{"type": "text", "text": "Hi."}]), None, "anthropic-messages"),
        ("chat-completions", responses_response([]), None, "openai-responses"),
        ("anthropic-messages", chat_completion(content="Hi."), None, "chat-completions"),
        ("anthropic-messages", responses_response([]), None, "openai-responses"),
        ("openai-responses", anthropic_message([{"type": "text", "text": "Hi."}, {"type": "thinking", "thinking": "x", "signature": "s"}])["content"], None, "anthropic-messages"),
        ("openai-responses", chat_completion(content="Hi.")["choices"][0]["message"], None, "chat-completions"),
        # The route named with the reply wins over the log's.
        ("chat-completions", chat_completion(content="Hi."), "openai-responses", "chat-completions"),
    ],
    ids=["anthropic-to-chat", "responses-to-chat", "chat-to-anthropic", "responses-to-anthropic",
         "anthropic-blocks-to-responses", "chat-message-to-responses", "chat-to-named-responses"],
)
def test_a_reply_of_another_routes_shape_is_refused(
    host: PromptHost, tmp_path: Path, route: str, reply: Any, given: Optional[str], shaped_like: str
) -> None:
    log = started(host, tmp_path, route)
    e = refused(log, lambda: host.append_assistant(log, reply=reply, route=given))
    assert (e.code, e.kind) == (FAILED, "conversation")
    assert e.message == conversation_error(
        log, f"route {given or route} cannot read this reply: it is shaped like a reply of the {shaped_like} route"
    )


def test_a_reply_with_nothing_in_it_is_refused(host: PromptHost, tmp_path: Path) -> None:
    log = started(host, tmp_path, "anthropic-messages")
    e = refused(log, lambda: host.append_assistant(log, reply=[]))
    assert e.message == conversation_error(log, "an assistant message needs text, reasoning or at least one tool call")


def test_a_reply_and_the_plain_form_together_are_refused(host: PromptHost, tmp_path: Path) -> None:
    log = started(host, tmp_path, "chat-completions")
    e = refused(log, lambda: host.append_assistant(log, reply=chat_completion(content="Hi."), text="Hi."))
    assert (e.code, e.kind) == (INVALID_PARAMS, "invalid-params")
    assert e.message == "invalid params: give the provider's reply or text/reasoning/tool_calls, not both"


# -- unknown routes ----------------------------------------------------------------------------

UNKNOWN = (
    'unknown route "anthropic-message" (did you mean "anthropic-messages"?); '
    "routes: chat-completions, anthropic-messages, openai-responses"
)


@pytest.mark.invalid_params  # the schema names the routes: an unknown one does not fit it
@pytest.mark.parametrize(
    "method",
    ["step-name", "step-object", "retry", "append_assistant"],
)
def test_an_unknown_route_is_refused(host: PromptHost, tmp_path: Path, method: str) -> None:
    log = started(host, tmp_path, "chat-completions")
    attempts: Dict[str, Callable[[], Any]] = {
        "step-name": lambda: host.step(log, route="anthropic-message", user=["again"]),
        "step-object": lambda: host.step(log, route={"name": "anthropic-message"}, user=["again"]),
        "retry": lambda: host.retry(log, route="anthropic-message"),
        "append_assistant": lambda: host.append_assistant(log, reply=chat_completion(content="Hi."), route="anthropic-message"),
    }
    e = refused(log, attempts[method])
    assert isinstance(e, RouteError)
    assert (e.code, e.kind) == (FAILED, "route")
    assert e.message == UNKNOWN


@pytest.mark.invalid_params
def test_an_unknown_route_without_a_close_one(host: PromptHost, tmp_path: Path) -> None:
    log = str(tmp_path / "s.jsonl")
    e = refused(log, lambda: host.step(log, route="grpc", user=["hi"]))
    assert isinstance(e, RouteError)
    assert e.message == 'unknown route "grpc"; routes: chat-completions, anthropic-messages, openai-responses'


# -- routes that cannot be prepared -------------------------------------------------------------


@pytest.mark.parametrize(
    "route,facts,message",
    [
        (
            {"name": "anthropic-messages", "options": {"max_tokens": 64}},
            {},
            'route anthropic-messages needs a model: give the "model" fact or the route\'s "model"',
        ),
        (
            {"name": "openai-responses"},
            {},
            'route openai-responses needs a model: give the "model" fact or the route\'s "model"',
        ),
        (
            {"name": "anthropic-messages"},
            {"model": "claude-opus-4-8"},
            'route anthropic-messages needs the option "max_tokens" (the Messages API requires it: a positive integer)',
        ),
        (
            {"name": "anthropic-messages", "model": "claude-opus-4-8", "options": {"max_tokens": 0}},
            {},
            'route anthropic-messages needs the option "max_tokens" (the Messages API requires it: a positive integer)',
        ),
        (
            {"name": "openai-responses", "model": "gpt-5.5", "options": {"input": "hi"}},
            {},
            'route openai-responses: the option "input" is built from the log and cannot be given; options are the '
            "request's other keys (max_tokens, temperature, …)",
        ),
        (
            {"name": "chat-completions", "options": {"messages": []}},
            {},
            'route chat-completions: the option "messages" is built from the log and cannot be given; options are the '
            "request's other keys (max_tokens, temperature, …)",
        ),
        (
            {"name": "chat-completions", "cache": True},
            {},
            'route chat-completions: "cache" places prompt-cache breakpoints, which only anthropic-messages takes '
            "(the others cache on their own)",
        ),
    ],
    ids=["anthropic-no-model", "responses-no-model", "anthropic-no-max-tokens", "anthropic-max-tokens-0",
         "built-input", "built-messages", "cache-on-chat"],
)
def test_a_route_that_cannot_be_prepared_writes_nothing(
    host: PromptHost, tmp_path: Path, route: RouteSpec, facts: Dict[str, str], message: str
) -> None:
    log = str(tmp_path / "s.jsonl")
    # On a new log, and on one with steps.
    e = refused(log, lambda: host.step(log, facts=facts, route=route, user=["hi"]))
    assert isinstance(e, RouteError) and (e.code, e.kind, e.message) == (FAILED, "route", message)
    host.step(log, user=["hi"])
    host.append_assistant(log, text="Hello.")
    e = refused(log, lambda: host.step(log, facts=facts, route=route, user=["again"]))
    assert isinstance(e, RouteError) and e.message == message
    e = refused(log, lambda: host.retry(log, facts=facts, route=route))
    assert isinstance(e, RouteError) and e.message == message


# -- tool call ids -----------------------------------------------------------------------------


def repeated_id_replies() -> List[Any]:
    return [
        pytest.param("chat-completions", lambda: {"tool_calls": [ToolCall("c1", "ls", {})]}, id="chat-plain-form"),
        pytest.param("chat-completions", lambda: {"reply": chat_completion(tool_calls=[("c1", "ls", "{}")])}, id="chat-completion"),
        pytest.param(
            "anthropic-messages",
            lambda: {"reply": anthropic_message([{"type": "tool_use", "id": "c1", "name": "ls", "input": {}}])},
            id="anthropic-message",
        ),
        pytest.param(
            "openai-responses",
            lambda: {"reply": [{"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}]},
            id="responses-output",
        ),
    ]


@pytest.mark.parametrize("route,second", repeated_id_replies())
def test_a_tool_call_id_used_before_is_refused(
    host: PromptHost, tmp_path: Path, route: str, second: Callable[[], Dict[str, Any]]
) -> None:
    log = started(host, tmp_path, route)
    seq = host.append_assistant(log, **second())
    host.append_tool_result(log, "c1", "a b")
    host.step(log, facts={"model": MODEL[route]})
    e = refused(log, lambda: host.append_assistant(log, **second()))
    assert (e.code, e.kind) == (FAILED, "conversation")
    assert e.message == conversation_error(log, f'tool call id "c1" is already used (by the assistant message at seq {seq})')
    # Also within one reply.
    e = refused(log, lambda: host.append_assistant(log, tool_calls=[ToolCall("c9", "ls", {}), ToolCall("c9", "ls", {})]))
    assert e.kind == "conversation" and 'tool call id "c9" is already used' in e.message


# -- the typed accessors -----------------------------------------------------------------------


def test_an_accessor_checks_the_route(host: PromptHost, tmp_path: Path) -> None:
    steps: Dict[str, StepResult] = {}
    for route in ROUTES:
        steps[route] = host.step(tmp_path / f"{route}.jsonl", facts={"model": MODEL[route]}, route=ROUTES[route], user=["hi"])
    assert openai_chat(steps["chat-completions"]) is steps["chat-completions"].request
    assert anthropic_messages(steps["anthropic-messages"]) is steps["anthropic-messages"].request
    assert openai_responses(steps["openai-responses"]) is steps["openai-responses"].request
    with pytest.raises(RouteMismatch) as info:
        openai_chat(steps["anthropic-messages"])
    assert str(info.value) == (
        "step 0 was prepared for route anthropic-messages, not chat-completions: take its request with "
        'prompt_host.routes.anthropic_messages(step), or take the step with route="chat-completions"'
    )
    assert (info.value.expected, info.value.actual) == ("chat-completions", "anthropic-messages")
    with pytest.raises(RouteMismatch, match="prepared for route chat-completions, not openai-responses"):
        openai_responses(steps["chat-completions"])
    with pytest.raises(RouteMismatch, match="prepared for route openai-responses, not anthropic-messages"):
        anthropic_messages(steps["openai-responses"])
    assert isinstance(RouteMismatch(steps["openai-responses"], "chat-completions"), ValueError)


def test_the_chat_accessor_wants_a_model(host: PromptHost, tmp_path: Path) -> None:
    step = host.step(tmp_path / "s.jsonl", user=["hi"])
    assert step.route.name == "chat-completions" and "model" not in step.request
    with pytest.raises(ValueError, match='step 0\'s request names no model: give the "model" fact'):
        openai_chat(step)


# -- a reply nested around the log's depth limit ---------------------------------------------


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def test_a_reply_nested_around_the_depth_limit_is_refused_or_reads_back(open_host, tmp_path: Path) -> None:
    """The client sends a deep provider reply as it is; the server refuses what the log
    could not read back (naming the log once and the event's path), and what it
    acknowledges, a second client opens and derives the next request from. A value too deep
    for Python's own encoder fails in the client, before anything is sent."""
    accepted, refused_at = [], []
    for levels in [100, 118, 121, 124, 2000]:
        host = open_host()
        log = str(tmp_path / f"deep-{levels}.jsonl")
        host.step(log, facts={"model": MODEL["anthropic-messages"]}, route=ROUTES["anthropic-messages"], user=["hi"])
        reply = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "n", "input": {"a": nested(levels)}}]}
        before = Path(log).read_bytes()
        try:
            host.append_assistant(log, reply=reply)
        except RecursionError:
            assert levels >= 1000, f"{levels}: Python's encoder refused a value the server could take"
            refused_at.append(levels)
        except PromptHostError as error:
            text = str(error)
            # Too deep for the log (refused before the append; the log named once), or for
            # the request line itself (refused as JSON the server cannot parse).
            deep = f'session log {log}: event at seq 6 refused: session event "assistant/message" nests more than 127 levels deep at /data/message/'
            assert (text.startswith(deep) and text.count(log) == 1) or "recursion limit exceeded" in text, text
            refused_at.append(levels)
        else:
            accepted.append(levels)
        if levels in refused_at:
            assert Path(log).read_bytes() == before, f"{levels}: refused, yet the log changed"
        host.close_session(log)
        host.close()
        # Another client opens what was acknowledged and derives the next request from it.
        with open_host() as other:
            if levels in accepted:
                other.append_tool_result(log, "toolu_1", "ok")
            step = other.step(log, facts={"model": MODEL["anthropic-messages"]}, route=ROUTES["anthropic-messages"])
            if levels in accepted:
                sent = step.request["messages"][-2]["content"][0]
                assert sent["type"] == "tool_use" and sent["input"] == {"a": nested(levels)}
    # 121 levels under the reply are past the log's 127 with the event's own; 124 past the
    # request line's; 2000 past Python's encoder.
    assert (accepted, refused_at) == ([100, 118], [121, 124, 2000])
