"""The check of provider replies against the official SDKs' response models
(`reply_models`): what it refuses, that the fake provider and its builders refuse such a
reply before anything is served, and the replies the Rust route tests feed the routes
(``tests/fixtures/replies/routes.json``)."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict

import pytest

# The SDKs need Python 3.10 or newer: on 3.9 the suite runs without these tests.
pytest.importorskip("openai", minversion="3")
pytest.importorskip("anthropic", minversion="2")

from conftest import REPO  # noqa: E402
from fake_provider import FakeProvider, anthropic_message, chat_completion, responses_response  # noqa: E402
from reply_models import FORMS, ReplyRejected, check_fixture, check_reply  # noqa: E402

RUST_REPLIES = REPO / "tests" / "fixtures" / "replies" / "routes.json"


def chat() -> Dict[str, Any]:
    return chat_completion(content="Hi.", tool_calls=[("c1", "ls", "{}")], reasoning_content="Think.")


def message() -> Dict[str, Any]:
    return anthropic_message([{"type": "text", "text": "Hi."}, {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}])


def response() -> Dict[str, Any]:
    return responses_response(
        [{"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "ls", "arguments": "{}", "status": "completed"}]
    )


def without(key: str) -> Callable[[Dict[str, Any]], None]:
    def change(reply: Dict[str, Any]) -> None:
        *path, last = key.split(".")
        target: Any = reply
        for part in path:
            target = target[int(part)] if part.isdigit() else target[part]
        del target[last]

    return change


def setting(key: str, value: Any) -> Callable[[Dict[str, Any]], None]:
    def change(reply: Dict[str, Any]) -> None:
        *path, last = key.split(".")
        target: Any = reply
        for part in path:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value

    return change


MALFORMED = [
    # A required field missing.
    (chat, without("choices.0.finish_reason"), "openai.ChatCompletion: choices.0.finish_reason: Field required"),
    (chat, without("created"), "openai.ChatCompletion: created: Field required"),
    (message, without("usage"), "anthropic.Message: usage: Field required"),
    (message, without("content.1.input"), "anthropic.Message: content.1.ToolUseBlock.input: Field required"),
    (response, without("created_at"), "openai.Response: created_at: Field required"),
    (response, without("output.0.call_id"), "openai.Response: output.0.ResponseFunctionToolCall.call_id: Field required"),
    # A value of the wrong type (strict: no "1" for 1), an unknown literal.
    (chat, setting("created", "1"), "openai.ChatCompletion: created: Input should be a valid integer"),
    (
        chat,
        setting("choices.0.finish_reason", "done"),
        "openai.ChatCompletion: choices.0.finish_reason: Input should be 'stop', 'length', 'tool_calls', "
        "'content_filter' or 'function_call'",
    ),
    (message, setting("role", "user"), "anthropic.Message: role: Input should be 'assistant'"),
    (response, setting("output.0.arguments", {}), "openai.Response: output.0.ResponseFunctionToolCall.arguments: Input should be a valid string"),
    # A key the model does not declare (a misspelt optional field).
    (message, setting("stop_sequense", None), "anthropic.Message: keys the SDK's model does not declare: $.stop_sequense (Message)"),
    (
        chat,
        setting("choices.0.message.refusl", None),
        "openai.ChatCompletion: keys the SDK's model does not declare: $.choices[0].message.refusl (ChatCompletionMessage)",
    ),
]


@pytest.mark.parametrize("make,change,error", MALFORMED, ids=[e.split(": ", 1)[1][:60] for _, _, e in MALFORMED])
def test_a_malformed_reply_is_refused_with_where_and_why(make: Callable[[], Dict[str, Any]], change: Any, error: str) -> None:
    reply = make()
    check_reply(reply)  # the builder's reply fits
    change(reply)
    with pytest.raises(ReplyRejected) as refused:
        check_reply(reply)
    assert str(refused.value) == error


def test_deepseeks_reasoning_content_is_the_one_undeclared_key_allowed() -> None:
    reply = chat()
    assert reply["choices"][0]["message"]["reasoning_content"] == "Think."
    check_reply(reply)
    reply["choices"][0]["message"]["reasoning"] = "Think."
    with pytest.raises(ReplyRejected, match=r"\$\.choices\[0\]\.message\.reasoning \(ChatCompletionMessage\)$"):
        check_reply(reply)


def test_a_reply_of_no_known_form_is_refused() -> None:
    with pytest.raises(ReplyRejected) as refused:
        check_reply({"role": "assistant", "content": "Hi."})
    assert str(refused.value) == (
        'not a whole provider reply (no "object": "chat.completion" or "response", no "type": "message"): '
        '{"role": "assistant", "content": "Hi."}'
    )


def test_the_fake_provider_and_its_builders_refuse_a_malformed_reply_before_serving_it() -> None:
    """The suite's conftest installs the check: a reply the SDK's model refuses is never
    queued, and a builder given a block that does not fit fails where it is called."""
    bad = response()
    del bad["tools"]
    with pytest.raises(ReplyRejected, match=r"^openai\.Response: tools: Field required$"):
        FakeProvider([bad])
    with FakeProvider([chat()]) as provider:
        with pytest.raises(ReplyRejected, match=r"^openai\.Response: tools: Field required$"):
            provider.add(bad)
        assert provider.unused == 1
    with pytest.raises(ReplyRejected, match=r"^anthropic\.Message: content\.0\.ToolUseBlock\.input: Field required$"):
        anthropic_message([{"type": "tool_use", "id": "t1", "name": "ls"}])


def test_the_replies_the_rust_route_tests_feed_fit_the_sdks_models() -> None:
    """``tests/tests/integration/sessions/routes.rs`` reads its provider replies from this file."""
    replies = json.loads(RUST_REPLIES.read_text())["replies"]
    assert len(replies) == 9
    assert {entry["form"] for entry in replies.values()} <= set(FORMS)
    assert check_fixture(replies) == []


def test_a_fixture_reply_the_sdk_would_refuse_is_reported_by_name() -> None:
    """The Rust tests' replies before they were checked: the Responses API's replies
    lacked four required fields."""
    old = {
        "id": "resp_t", "object": "response", "model": "gpt",
        "output": [{"type": "message", "id": "msg_t", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "Hi.", "annotations": []}]}],
        "usage": {"input_tokens": 20, "output_tokens": 4, "total_tokens": 24,
                  "input_tokens_details": {"cached_tokens": 16, "cache_write_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }
    partial = {"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]}
    assert check_fixture(
        {
            "responses text": {"form": "openai.Response", "reply": old},
            "unsigned thinking": {"form": "anthropic.Message.content", "reply": partial},
            "the message with a stray key": {"form": "anthropic.Message.content", "reply": {**partial, "id": "m"}},
        }
    ) == [
        (
            "responses text",
            "openai.Response: created_at: Field required; parallel_tool_calls: Field required; "
            "tool_choice: Field required; tools: Field required",
        ),
        ("unsigned thinking", "anthropic.Message.content: 0.ThinkingBlock.signature: Field required"),
        (
            "the message with a stray key",
            "anthropic.Message.content: a message alone is {\"role\": \"assistant\", \"content\": [...]}, "
            "not ['content', 'id', 'role']",
        ),
    ]
