"""Replies in their other forms: ``model_dump()``, reasoning alone, reasoning sent back on
``chat-completions``, a log that changes route, and the asyncio client with the SDKs' async
clients."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List

import pytest

# The SDKs need Python 3.10 or newer: on 3.9 the suite runs without these tests.
pytest.importorskip("openai", minversion="3")
pytest.importorskip("anthropic", minversion="2")

import anthropic  # noqa: E402
import openai  # noqa: E402
from conftest import IDENTITY, Wire, run  # noqa: E402
from fake_provider import FakeProvider, anthropic_message, chat_completion, responses_response  # noqa: E402
from prompt_host import PromptHost, StepResult, Usage  # noqa: E402
from prompt_host.routes import anthropic_messages, openai_chat, openai_responses  # noqa: E402
from route_support import PATHS, SCOPE, Conversation, check_bodies, check_replays, deploy  # noqa: E402
from sdk_support import sdk_body, undeclared_in_request, validate_request  # noqa: E402

TOOL_REPLY = {
    "chat-completions": chat_completion(content=None, tool_calls=[("c1", "ls", '{"path":"."}')]),
    "anthropic-messages": anthropic_message(
        [
            {"type": "thinking", "thinking": "List first.", "signature": "c2ln"},
            {"type": "text", "text": "Listing."},
            {"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "."}},
        ]
    ),
    "openai-responses": responses_response(
        [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "List first."}]},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "ls", "arguments": '{"path":"."}', "status": "completed"},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Listing.", "annotations": []}],
            },
        ]
    ),
}
ROUTE = {
    "chat-completions": {"name": "chat-completions"},
    "anthropic-messages": {"name": "anthropic-messages", "options": {"max_tokens": 512}},
    "openai-responses": {"name": "openai-responses"},
}
MODEL = {"chat-completions": "gpt-5.5", "anthropic-messages": "claude-opus-4-8", "openai-responses": "gpt-5.5"}


def dumped_turn(host: PromptHost, wasm: Any, tmp_path: Path, route: str) -> Conversation:
    """A tool call whose reply is recorded with ``model_dump()``, then the next step."""
    deploy(host, wasm)
    provider = FakeProvider([TOOL_REPLY[route], TOOL_REPLY[route]]).start()
    try:
        conv = Conversation(host, str(tmp_path / "s.jsonl"), route, provider)
        facts = {"model": MODEL[route], "cwd": "/repo"}
        first = conv.step(facts=facts, route=ROUTE[route], user=["List the files."])
        host.append_assistant(conv.log, reply=conv.send(first).model_dump())
        host.append_tool_result(conv.log, "c1", "README.md")
        conv.send(conv.step(facts=facts))
        return conv
    finally:
        provider.close()


def test_model_dump_replies_on_chat_completions(host: PromptHost, wasm, wire: Wire, tmp_path: Path) -> None:
    """``model_dump()`` fills every field the SDK knows (``annotations``, ``audio``,
    ``function_call``, ``refusal``: ``None``); the route takes back only the message's
    content, refusal, tool calls and reasoning, so the next request is still clean."""
    conv = dumped_turn(host, wasm, tmp_path, "chat-completions")
    check_bodies(conv)
    check_replays(conv, wire)
    (assistant,) = [m for m in conv.steps[-1].request["messages"] if m["role"] == "assistant"]
    assert assistant == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path":"."}'}}],
    }


@pytest.mark.parametrize("route", ["anthropic-messages", "openai-responses"])
def test_model_dump_replies_come_back_as_valid_requests(host: PromptHost, wasm, tmp_path: Path, route: str) -> None:
    """A reply given as ``model_dump()`` carries ``null`` for every field the provider did
    not send (``caller`` on tool_use blocks, ``content``/``status`` on reasoning items,
    ``namespace`` on function_call items); the route sends recorded blocks and items back
    without their null members, so the next request is one the SDK's types take."""
    conv = dumped_turn(host, wasm, tmp_path, route)
    body = json.loads(conv.sent[-1][1].body)
    assert undeclared_in_request(route, body) == []
    validate_request(route, body)


def test_to_dict_replies_come_back_as_the_provider_sent_them(host: PromptHost, wasm, tmp_path: Path) -> None:
    """The same turns recorded with ``to_dict()`` (what the provider sent, nothing more)."""
    deploy(host, wasm)
    for route in ("anthropic-messages", "openai-responses"):
        with FakeProvider([TOOL_REPLY[route], TOOL_REPLY[route]]) as provider:
            conv = Conversation(host, str(tmp_path / f"{route}.jsonl"), route, provider)
            facts = {"model": MODEL[route], "cwd": "/repo"}
            first = conv.step(facts=facts, route=ROUTE[route], user=["List the files."])
            host.append_assistant(conv.log, reply=conv.send(first).to_dict())
            host.append_tool_result(conv.log, "c1", "README.md")
            second = conv.step(facts=facts)
            conv.send(second)
            check_bodies(conv)
        sent = TOOL_REPLY[route]["content" if route == "anthropic-messages" else "output"]
        history = second.request["messages" if route == "anthropic-messages" else "input"]
        if route == "anthropic-messages":
            assert history[1] == {"role": "assistant", "content": sent}
        else:
            assert history[2:5] == sent


def test_reasoning_alone_on_chat_completions(host: PromptHost, tmp_path: Path) -> None:
    """A reply with reasoning and neither text nor tool calls is sent back as ``content:
    ""`` (never ``null`` without tool calls, which the API's types refuse)."""
    log = tmp_path / "s.jsonl"
    host.step(log, facts={"model": "deepseek-v4"}, route="chat-completions", user=["Think."])
    host.append_assistant(log, reply=chat_completion(content=None, reasoning_content="Hmm."))
    step = host.step(log, facts={"model": "deepseek-v4"}, user=["And?"])
    assert step.request["messages"][2] == {"role": "assistant", "content": ""}
    assert undeclared_in_request("chat-completions", step.request) == []
    validate_request("chat-completions", step.request)


def test_reasoning_sent_back_on_chat_completions(host: PromptHost, wasm, tmp_path: Path) -> None:
    """With ``reasoning: "send"`` (DeepSeek's thinking mode) every assistant message that made
    tool calls carries ``reasoning_content``: a key OpenAI's request types do not declare
    (pydantic ignores it; the walk finds it), as docs/routes.md says. The SDK passes it on."""
    deploy(host, wasm)
    replies = [
        chat_completion(reasoning_content="Read it.", tool_calls=[("c1", "read_file", '{"path":"a"}')]),
        chat_completion(content=None, tool_calls=[("c2", "read_file", '{"path":"b"}')]),
        chat_completion(content="Done."),
    ]
    with FakeProvider(replies) as provider:
        conv = Conversation(host, str(tmp_path / "s.jsonl"), "chat-completions", provider)
        facts = {"model": "deepseek-v4", "cwd": "/repo"}
        step = conv.step(facts=facts, route={"name": "chat-completions", "reasoning": "send"}, user=["Go."])
        assert step.route.reasoning == "send"
        for call in ("c1", "c2"):
            host.append_assistant(conv.log, reply=conv.send(step).to_dict())
            host.append_tool_result(conv.log, call, "x")
            step = conv.step(facts=facts)
        conv.send(step)
    assistants = [m for m in step.request["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in assistants] == ["Read it.", ""]
    for s, recorded in conv.sent:
        assert recorded.body == sdk_body("chat-completions", dict(s.request))
        validate_request("chat-completions", json.loads(recorded.body))
    problems = undeclared_in_request("chat-completions", step.request)
    assert len(problems) == 2
    assert all(p.endswith(".reasoning_content: not a key of ChatCompletionAssistantMessageParam") for p in problems)


def test_a_log_that_changes_route(host: PromptHost, wasm, tmp_path: Path) -> None:
    """A reply recorded from one provider, sent on to another: its text and tool calls (the
    arguments an object, serialised for the routes that take text); its thinking, signed for
    Anthropic only, is not sent elsewhere."""
    deploy(host, wasm)
    log = str(tmp_path / "s.jsonl")
    facts = {"model": "claude-opus-4-8", "cwd": "/repo"}
    host.step(log, scope=SCOPE, facts=facts, route=ROUTE["anthropic-messages"], user=["List the files."])
    host.append_assistant(log, reply=TOOL_REPLY["anthropic-messages"])
    host.append_tool_result(log, "c1", "README.md", is_error=True)
    chat = host.step(log, scope=SCOPE, facts={**facts, "model": "gpt-5.5"}, route="chat-completions")
    assert chat.request["messages"][3:] == [
        {
            "role": "assistant",
            "content": "Listing.",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path":"."}'}}],
        },
        {"role": "tool", "content": "Error: README.md", "tool_call_id": "c1"},
    ]
    responses = host.step(log, scope=SCOPE, facts={**facts, "model": "gpt-5.5"}, route="openai-responses")
    assert responses.request["input"][2:] == [
        {"role": "assistant", "content": "Listing."},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": '{"path":"."}'},
        {"type": "function_call_output", "call_id": "c1", "output": "Error: README.md"},
    ]
    back = host.step(log, scope=SCOPE, facts=facts, route=ROUTE["anthropic-messages"])
    assert back.request["messages"][1] == {"role": "assistant", "content": TOOL_REPLY["anthropic-messages"]["content"]}
    for step in (chat, responses, back):
        assert undeclared_in_request(step.route.name, step.request) == []
        validate_request(step.route.name, step.request)


def test_a_providers_compaction_goes_back_in_place(host: PromptHost, wasm, tmp_path: Path) -> None:
    """Compaction on the provider's side (docs/routes.md): OpenAI's ``compaction`` output item,
    served by the stand-in through the SDK, and Anthropic's ``compaction`` block with the
    context edits it reports. Each goes back where it was, as sent, in a request the SDK's
    types take (Anthropic's beta types: the block is a beta feature); the runtime-context
    snapshot, now behind the provider's summary, is sent again after it."""
    deploy(host, wasm)
    snapshot = "Sandbox: read-only."
    compaction = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAB"}
    said = {"type": "message", "id": "m1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Built.", "annotations": []}]}
    options = {"context_management": [{"type": "compaction", "compact_threshold": 200000}]}
    with FakeProvider([responses_response([compaction, said]), responses_response([said])]) as provider:
        conv = Conversation(host, str(tmp_path / "responses.jsonl"), "openai-responses", provider)
        facts = {"model": MODEL["openai-responses"], "cwd": "/repo"}
        first = conv.step(facts=facts, route={"name": "openai-responses", "options": options}, user=["Build it."])
        host.append_assistant(conv.log, reply=conv.send(first).to_dict())
        second = conv.step(facts=facts, user=["Now test it."])
        conv.send(second)
        check_bodies(conv)
    items = second.request["input"]
    at = items.index(compaction)
    assert items[at + 1] == said
    # After the compacted turn: the user's message and the snapshot, sent again.
    rest = json.dumps(items[at + 2:])
    assert "Now test it." in rest and snapshot in rest, rest
    assert snapshot in json.dumps(items[:at])
    body = json.loads(conv.sent[-1][1].body)
    assert undeclared_in_request("openai-responses", body) == []
    validate_request("openai-responses", body)

    from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming as BetaParams
    from sdk_support import validate

    block = {"type": "compaction", "content": "The user asked for a site; it is built.", "signature": "c2ln"}
    report = {"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 2, "cleared_input_tokens": 900}]}
    log = tmp_path / "anthropic.jsonl"
    facts = {"model": MODEL["anthropic-messages"], "cwd": "/repo"}
    route = {"name": "anthropic-messages", "options": {"max_tokens": 512, "context_management": {"edits": [{"type": "compact_20260112"}]}}}
    host.step(log, scope=SCOPE, facts=facts, route=route, user=["Build it."])
    host.append_assistant(
        log,
        reply={"type": "message", "role": "assistant", "content": [block, {"type": "text", "text": "Built."}], "context_management": report},
    )
    step = host.step(log, scope=SCOPE, facts=facts, user=["Now test it."])
    messages = step.request["messages"]
    (turn,) = [m for m in messages if m["role"] == "assistant"]
    assert turn["content"][0] == block and turn["content"][1]["text"] == "Built."
    after = messages[messages.index(turn) + 1:]
    assert snapshot in json.dumps(after), after
    assert "applied_edits" not in json.dumps(step.request)
    recorded = [json.loads(line) for line in log.read_text().splitlines()]
    (reply,) = [e for e in recorded if e.get("type") == "assistant/message"]
    assert reply["data"]["message"]["provider"]["context_management"] == report
    validate(BetaParams, step.request)


def test_usage_given_as_a_mapping(host: PromptHost, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    host.step(log, facts={"model": "gpt-5.5"}, route="openai-responses", user=["Hi."])
    host.append_assistant(
        log,
        reply=TOOL_REPLY["openai-responses"]["output"],
        usage={"input_tokens": 10, "output_tokens": 2, "cached_input_tokens": 4},
    )
    host.append_tool_result(log, "c1", "x")
    step = host.step(log, facts={"model": "gpt-5.5"})
    assert step.cache.last_usage == Usage(input_tokens=10, output_tokens=2, cached_input_tokens=4)


@pytest.mark.parametrize("route", ["chat-completions", "anthropic-messages", "openai-responses"])
def test_the_asyncio_client_with_the_sdks_async_clients(open_async_host, wasm, tmp_path: Path, route: str) -> None:
    second = {
        "chat-completions": chat_completion(content="README.md."),
        "anthropic-messages": anthropic_message([{"type": "text", "text": "README.md."}]),
        "openai-responses": responses_response(
            [{"type": "message", "id": "m2", "role": "assistant", "status": "completed",
              "content": [{"type": "output_text", "text": "README.md.", "annotations": []}]}]
        ),
    }[route]

    async def main() -> List[StepResult]:
        steps: List[StepResult] = []
        with FakeProvider([TOOL_REPLY[route], second]) as provider:
            async with open_async_host() as host:
                await host.bind_scope(SCOPE)
                await host.load_plugin(
                    "rules", wasm("declare"), scope=SCOPE,
                    config={"sections": [{"name": "rules", "order": 1, "text": "You run on {{model}}."}]},
                )
                log = str(tmp_path / "s.jsonl")
                facts = {"model": MODEL[route]}

                async def create(step: StepResult) -> Any:
                    if route == "chat-completions":
                        c = openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="test", max_retries=0)
                        return await c.chat.completions.create(**openai_chat(step))
                    if route == "anthropic-messages":
                        a = anthropic.AsyncAnthropic(base_url=provider.url, api_key="test", max_retries=0)
                        return await a.messages.create(**anthropic_messages(step))
                    r = openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="test", max_retries=0)
                    return await r.responses.create(**openai_responses(step))

                step = await host.step(log, scope=SCOPE, facts=facts, route=ROUTE[route], user=["List."])
                steps.append(step)
                await host.append_assistant(log, reply=(await create(step)).to_dict())
                await host.append_tool_result(log, "c1", "README.md")
                step = await host.step(log, scope=SCOPE, facts=facts)
                # As after a provider failure: the same request again, as a new step.
                retried = await host.retry(log, facts=facts, route=ROUTE[route])
                assert retried.request == step.request and retried.step == step.step + 1
                steps.append(retried)
                await host.append_assistant(log, reply=(await create(retried)).to_dict(), usage=Usage(output_tokens=3))
                for s in steps:
                    assert (await host.request(log, s.step)).request == s.request
            bodies = [(r.path, r.body) for r in provider.requests]
        assert bodies == [(PATHS[route], sdk_body(route, dict(s.request))) for s in steps]
        return steps

    steps = run(main())
    assert steps[0].request[{"chat-completions": "messages", "anthropic-messages": "messages",
                             "openai-responses": "input"}[route]]
    assert steps[1].route.name == route
    if route == "anthropic-messages":
        assert steps[0].request["system"][0]["text"] == f"{IDENTITY}\n\nYou run on claude-opus-4-8."
        assert [(b.at, b.index) for b in steps[1].cache.breakpoints] == [("system", 0), ("message", 2)]
