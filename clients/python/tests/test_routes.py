"""Conversations on each route through the provider's official SDK to a recording stand-in
for the provider: six user turns, ten steps each, with tool calls (arguments as the
provider's JSON text, as JSON text and as objects in the plain form), a failed tool call,
reasoning replies, a system prompt change, a provider failure and its ``retry``.

Every body the provider received is checked (`route_support.check_bodies`): byte for byte
the step's request as the SDK serialises it, valid for the SDK's request TypedDict, and
without a key those TypedDicts do not declare; and every step's request is replayed from the
log (`route_support.check_replays`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

# The SDKs need Python 3.10 or newer: on 3.9 the suite runs without these tests.
pytest.importorskip("openai", minversion="3")
pytest.importorskip("anthropic", minversion="2")

import anthropic  # noqa: E402
import openai  # noqa: E402
from conftest import IDENTITY, SNAPSHOT, Wire  # noqa: E402
from fake_provider import Failure, FakeProvider, Reply, anthropic_message, chat_completion, responses_response  # noqa: E402
from prompt_host import PromptHost, RouteSpec, ToolCall, Usage  # noqa: E402
from conftest import TOOLS_DECLARED  # noqa: E402
from route_support import Conversation, check_bodies, check_replays, deploy  # noqa: E402

Call = Tuple[str, str, str]  # (id, name, arguments JSON text)


def reply(
    route: str,
    n: int,
    *,
    text: Optional[str] = None,
    reasoning: Optional[str] = None,
    calls: Sequence[Call] = (),
    usage: Tuple[int, int, int] = (100, 20, 0),
) -> Dict[str, Any]:
    """Reply number ``n`` in the route provider's own shape."""
    if route == "chat-completions":
        return chat_completion(content=text, reasoning_content=reasoning, tool_calls=calls, usage=usage)
    if route == "anthropic-messages":
        blocks: List[Dict[str, Any]] = []
        if reasoning is not None:
            blocks.append({"type": "thinking", "thinking": reasoning, "signature": f"c2lnbmF0dXJl-{n}"})
        if text is not None:
            blocks.append({"type": "text", "text": text})
        blocks += [{"type": "tool_use", "id": id, "name": name, "input": json.loads(args)} for id, name, args in calls]
        return anthropic_message(blocks, usage=(usage[0], usage[1], usage[2], 0))
    items: List[Dict[str, Any]] = []
    if reasoning is not None:
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{n}",
                "summary": [{"type": "summary_text", "text": reasoning}],
                "encrypted_content": f"ZW5jcnlwdGVk-{n}",
            }
        )
    if text is not None:
        items.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    items += [
        {"type": "function_call", "id": f"fc_{id}", "call_id": id, "name": name, "arguments": args, "status": "completed"}
        for id, name, args in calls
    ]
    return responses_response(items, usage=usage)


def script(route: str) -> List[Reply]:
    r = lambda n, **kw: reply(route, n, **kw)  # noqa: E731
    return [
        r(1, calls=[("c1", "ls", '{"path": "."}')]),
        r(2, text="README.md and src."),
        r(3, reasoning="Both files matter.", text="Reading both.",
          calls=[("c2", "read_file", '{"path":"README.md"}'), ("c3", "read_file", '{"path":"src"}')]),
        r(4, text="README.md is a title; src is a directory."),
        r(5, text="Working in /srv."),
        Failure(503),
        r(6, text="Checking two files.",
          calls=[("c4", "read_file", '{"path": "config.toml"}'), ("c5", "read_file", '{"path":"app.toml"}')]),
        r(7, text="The port is 8080; app.toml is missing.", usage=(900, 30, 600)),
        r(8, reasoning="Nothing is left to do.", text="You're welcome — de rien."),
        r(9, text="Bye."),
    ]


MODEL = {"chat-completions": "gpt-5.5", "anthropic-messages": "claude-opus-4-8", "openai-responses": "gpt-5.5"}
ROUTES: Dict[str, RouteSpec] = {
    "chat-completions": {"name": "chat-completions", "options": {"temperature": 0.2, "max_completion_tokens": 1024}},
    "anthropic-messages": {"name": "anthropic-messages", "options": {"max_tokens": 1024}},
    "openai-responses": {"name": "openai-responses", "options": {"max_output_tokens": 1024, "store": False}},
}


def prompt(cwd: str, model: str) -> str:
    return f"{IDENTITY}\n\nWork in {cwd}. You run on {model}."


def part_of(route: str, response: Any) -> Any:
    """The part of a response that is a reply too: ``choices[0].message``, the content
    blocks, the output items."""
    if route == "chat-completions":
        return response.choices[0].message.to_dict()
    if route == "anthropic-messages":
        return [block.to_dict() for block in response.content]
    return [item.to_dict() for item in response.output]


PROVIDER_ERRORS = (openai.InternalServerError, anthropic.APIStatusError)


def converse(host: PromptHost, wasm: Any, tmp_path: Path, route: str) -> Tuple[Conversation, Dict[str, Any]]:
    """The conversation; returns it and what the route-specific checks look at."""
    deploy(host, wasm)
    model = MODEL[route]
    seen: Dict[str, Any] = {}
    with FakeProvider(script(route)) as provider:
        conv = Conversation(host, str(tmp_path / "session.jsonl"), route, provider)
        log = conv.log
        facts = {"model": model, "cwd": "/repo"}

        # Turn 1: a tool call (its arguments the provider's JSON text), then the answer. The
        # route is named on the first step only: later steps continue it.
        s = conv.step(facts=facts, route=ROUTES[route], user=["List the files."])
        assert (s.step, s.commits, s.header) == (0, 1, "initial")
        assert s.cache.last_usage is None
        host.append_assistant(log, reply=conv.send(s).to_dict())
        host.append_tool_result(log, "c1", "README.md\nsrc")
        s = conv.step(facts=facts)
        assert s.cache.last_usage == Usage(100, 20, 0, 0 if route == "anthropic-messages" else None)
        # The reply's part (no usage in it): usage given apart.
        host.append_assistant(log, reply=part_of(route, conv.send(s)), usage=Usage(input_tokens=150, output_tokens=9))

        # Turn 2: reasoning, text and two tool calls in one reply; one call fails.
        s = conv.step(facts=facts, user=["Read README.md and src."])
        assert s.cache.last_usage == Usage(input_tokens=150, output_tokens=9)
        host.append_assistant(log, reply=conv.send(s).to_dict())
        host.append_tool_result(log, "c2", "# Demo")
        host.append_tool_result(log, "c3", "src is a directory", is_error=True)
        s = conv.step(facts=facts)
        host.append_assistant(log, reply=conv.send(s).to_dict())

        # Turn 3: the working directory changes: the system prompt changes.
        facts = {**facts, "cwd": "/srv"}
        s = conv.step(facts=facts, user=["Work in /srv now."])
        assert (s.step, s.commits) == (4, 1)
        seen["changed"] = s
        host.append_assistant(log, reply=conv.send(s).to_dict())

        # Turn 4: the provider fails; the step is retried (chat-completions: on another
        # model; the others: with another option), and the reply is recorded in the plain
        # form, one call's arguments as JSON text, the other's as an object.
        s = conv.step(facts=facts, user=["Check the config."])
        lines = conv.lines()
        with pytest.raises(PROVIDER_ERRORS):
            conv.send(s)
        seen["failed"] = s
        if route == "chat-completions":
            facts = {**facts, "model": "gpt-5.5-mini"}
            retried = conv.retry(facts=facts)
        else:
            option = "max_tokens" if route == "anthropic-messages" else "max_output_tokens"
            retried = conv.retry(facts=facts, route={**ROUTES[route], "options": {**ROUTES[route].get("options", {}), option: 2048}})
        assert (retried.step, retried.header) == (s.step + 1, None)
        assert conv.lines() > lines
        seen["retried"] = retried
        conv.send(retried)
        host.append_assistant(
            log,
            text="Checking two files.",
            tool_calls=[
                ToolCall("c4", "read_file", '{"path": "config.toml"}'),
                {"id": "c5", "name": "read_file", "arguments": {"path": "app.toml"}},
            ],
        )
        host.append_tool_result(log, "c4", "[server]\nport = 8080")
        host.append_tool_result(log, "c5", "no such file: app.toml", is_error=True)
        s = conv.step(facts=facts)
        host.append_assistant(log, reply=conv.send(s).to_dict())

        # Turn 5: a reply with reasoning (and text beyond ASCII, sent as UTF-8 by both sides).
        s = conv.step(facts=facts, user=["Thanks — merci, ありがとう."])
        expected_usage = {
            "chat-completions": Usage(900, 30, 600, None),
            "anthropic-messages": Usage(900 + 600, 30, 600, 0),
            "openai-responses": Usage(900, 30, 600, None),
        }[route]
        assert s.cache.last_usage == expected_usage
        host.append_assistant(log, reply=conv.send(s).to_dict())

        # Turn 6: the last request holds the whole conversation.
        s = conv.step(facts=facts, user=["Bye."])
        seen["last"] = s
        host.append_assistant(log, reply=conv.send(s).to_dict())
        assert provider.unused == 0
    assert len(conv.steps) == 10 and len(conv.sent) == 10
    assert all(step.route.name == route for step in conv.steps)
    return conv, seen


def test_chat_completions_through_the_openai_sdk(host: PromptHost, open_host, wasm, wire: Wire, tmp_path: Path) -> None:
    conv, seen = converse(host, wasm, tmp_path, "chat-completions")
    check_bodies(conv)
    check_replays(conv, wire, open_host(trace=None))

    route = conv.steps[0].route
    assert (route.model, route.system_updates, route.reasoning) == ("gpt-5.5", "replace", "omit")
    assert route.options == {"temperature": 0.2, "max_completion_tokens": 1024}
    assert (route.capabilities.in_history, route.capabilities.system, route.capabilities.tool_error) == (
        False,
        "first-message",
        "stated-in-content",
    )
    assert all(s.cache.breakpoints == [] for s in conv.steps)

    # The system prompt change replaces the first message (the route's default), nothing is
    # added in history.
    changed = seen["changed"].request["messages"]
    assert changed[0] == {"role": "system", "content": prompt("/srv", "gpt-5.5")}
    assert [m["role"] for m in changed].count("system") == 1
    # The retry names the fallback model and re-renders the prompt for it.
    failed, retried = seen["failed"].request, seen["retried"].request
    assert (failed["model"], retried["model"]) == ("gpt-5.5", "gpt-5.5-mini")
    assert retried["messages"][0] == {"role": "system", "content": prompt("/srv", "gpt-5.5-mini")}
    assert retried["messages"][1:] == failed["messages"][1:]
    assert seen["retried"].commits == 1

    last = seen["last"].request
    assert list(last) == ["messages", "tools", "model", "temperature", "max_completion_tokens"]
    assert last["model"] == "gpt-5.5-mini"
    messages = last["messages"]
    assert messages[0] == {"role": "system", "content": prompt("/srv", "gpt-5.5-mini")}
    assert [m["role"] for m in messages].count("system") == 1
    assert messages[1:3] == [
        {"role": "user", "content": "List the files."},
        {"role": "user", "content": SNAPSHOT + "Sandbox: read-only."},
    ]
    calls = {c["id"]: c for m in messages for c in m.get("tool_calls", [])}
    # Arguments exactly as written: the provider's text (with its space), the plain form's
    # text, and the plain form's object serialised.
    assert {k: c["function"]["arguments"] for k, c in calls.items()} == {
        "c1": '{"path": "."}',
        "c2": '{"path":"README.md"}',
        "c3": '{"path":"src"}',
        "c4": '{"path": "config.toml"}',
        "c5": '{"path":"app.toml"}',
    }
    assert messages[3] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}}
    ]}
    tool = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert tool == {
        "c1": "README.md\nsrc",
        "c2": "# Demo",
        "c3": "Error: src is a directory",
        "c4": "[server]\nport = 8080",
        "c5": "Error: no such file: app.toml",
    }
    # Reasoning is recorded but not sent back on this route by default.
    assert not any("reasoning_content" in m for m in messages)
    assert {"role": "assistant", "content": "You're welcome — de rien."} in messages
    assert {"role": "user", "content": "Thanks — merci, ありがとう."} in messages
    assert messages[-1] == {"role": "user", "content": "Bye."}


def test_anthropic_messages_through_the_anthropic_sdk(host: PromptHost, open_host, wasm, wire: Wire, tmp_path: Path) -> None:
    conv, seen = converse(host, wasm, tmp_path, "anthropic-messages")
    check_bodies(conv)
    check_replays(conv, wire, open_host(trace=None))

    route = conv.steps[0].route
    assert (route.model, route.system_updates, route.reasoning) == ("claude-opus-4-8", "in-history", "send")
    caps = route.capabilities
    assert (caps.in_history, caps.system, caps.reasoning, caps.tool_error, caps.cache_breakpoints) == (
        True,
        "system",
        "thinking-blocks",
        "is-error",
        4,
    )
    # The retry's option, and the steps after it continue with it.
    assert seen["failed"].request["max_tokens"] == 1024
    assert [s.request["max_tokens"] for s in conv.steps[6:]] == [2048] * 4
    assert seen["retried"].commits == 0

    ephemeral = {"type": "ephemeral"}
    first_system = [{"type": "text", "text": prompt("/repo", "claude-opus-4-8"), "cache_control": ephemeral}]
    for s in conv.steps:
        # The first system text stays (the stable prefix, cached); a breakpoint on it and on
        # the last block of the latest user turn, and nowhere else.
        assert s.request["system"] == first_system
        users = [i for i, m in enumerate(s.request["messages"]) if m["role"] == "user"]
        assert [(b.at, b.index) for b in s.cache.breakpoints] == [("system", 0), ("message", users[-1])]
        marked = [
            (i, j)
            for i, m in enumerate(s.request["messages"])
            if isinstance(m["content"], list)
            for j, block in enumerate(m["content"])
            if "cache_control" in block
        ]
        assert marked == [(users[-1], len(s.request["messages"][users[-1]]["content"]) - 1)]
        assert s.request["messages"][users[-1]]["content"][-1]["cache_control"] == ephemeral

    # The system prompt change goes in history, after the user input that follows it.
    changed = seen["changed"].request["messages"]
    assert changed[-2:] == [
        {"role": "user", "content": [{"type": "text", "text": "Work in /srv now.", "cache_control": ephemeral}]},
        {"role": "system", "content": prompt("/srv", "claude-opus-4-8")},
    ]

    last = seen["last"].request
    assert list(last) == ["system", "messages", "tools", "model", "max_tokens"]
    assert last["tools"] == [
        {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in TOOLS_DECLARED
    ]
    messages = last["messages"]
    assert [m["role"] for m in messages] == [
        "user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant",
        "user", "system", "assistant", "user", "assistant", "user", "assistant", "user", "assistant", "user",
    ]
    system_index = [m["role"] for m in messages].index("system")
    assert messages[system_index - 1]["content"][0]["text"] == "Work in /srv now."
    # The replies' blocks exactly as the provider sent them: the thinking blocks with their
    # signatures.
    assert messages[5]["content"] == [
        {"signature": "c2lnbmF0dXJl-3", "thinking": "Both files matter.", "type": "thinking"},
        {"text": "Reading both.", "type": "text"},
        {"id": "c2", "input": {"path": "README.md"}, "name": "read_file", "type": "tool_use"},
        {"id": "c3", "input": {"path": "src"}, "name": "read_file", "type": "tool_use"},
    ]
    assert {"signature": "c2lnbmF0dXJl-8", "thinking": "Nothing is left to do.", "type": "thinking"} in messages[-2]["content"]
    # Tool results lead their user turn; a failed call is marked is_error.
    assert messages[6]["content"][:2] == [
        {"type": "tool_result", "tool_use_id": "c2", "content": "# Demo"},
        {"type": "tool_result", "tool_use_id": "c3", "content": "src is a directory", "is_error": True},
    ]
    # The plain-form reply: text and tool_use blocks, the JSON text parsed to input.
    plain = [m for m in messages if m["role"] == "assistant" and any(b.get("id") == "c4" for b in m["content"])]
    assert plain == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking two files."},
                {"type": "tool_use", "id": "c4", "name": "read_file", "input": {"path": "config.toml"}},
                {"type": "tool_use", "id": "c5", "name": "read_file", "input": {"path": "app.toml"}},
            ],
        }
    ]
    results = [b for m in messages if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"]
    assert [(b["tool_use_id"], b.get("is_error", False)) for b in results] == [
        ("c1", False), ("c2", False), ("c3", True), ("c4", False), ("c5", True)
    ]


def test_openai_responses_through_the_openai_sdk(host: PromptHost, open_host, wasm, wire: Wire, tmp_path: Path) -> None:
    conv, seen = converse(host, wasm, tmp_path, "openai-responses")
    check_bodies(conv)
    check_replays(conv, wire, open_host(trace=None))

    route = conv.steps[0].route
    assert (route.model, route.system_updates, route.reasoning) == ("gpt-5.5", "in-history", "send")
    caps = route.capabilities
    assert (caps.in_history, caps.system, caps.reasoning, caps.tool_error, caps.cache_breakpoints) == (
        True,
        "instructions",
        "reasoning-items",
        "stated-in-content",
        0,
    )
    assert [s.request["max_output_tokens"] for s in conv.steps] == [1024] * 6 + [2048] * 4
    assert all(s.request["store"] is False for s in conv.steps)

    # The instructions stay; the change is a developer message where the conversation stood.
    for s in conv.steps:
        assert s.request["instructions"] == prompt("/repo", "gpt-5.5")
    changed = seen["changed"].request["input"]
    assert changed[-2:] == [
        {"role": "developer", "content": prompt("/srv", "gpt-5.5")},
        {"role": "user", "content": "Work in /srv now."},
    ]
    assert seen["retried"].request["input"] == seen["failed"].request["input"]

    last = seen["last"].request
    assert list(last) == ["instructions", "input", "tools", "model", "max_output_tokens", "store"]
    assert last["tools"][0] == {
        "type": "function",
        "name": "ls",
        "description": "List a directory.",
        "parameters": {"properties": {"path": {"type": "string"}}, "type": "object"},
        "strict": False,
    }
    items = last["input"]
    # The replies' output items exactly as the provider sent them, reasoning items included.
    reasoning = [i for i in items if i.get("type") == "reasoning"]
    assert reasoning == [
        {"id": "rs_3", "summary": [{"text": "Both files matter.", "type": "summary_text"}], "type": "reasoning",
         "encrypted_content": "ZW5jcnlwdGVk-3"},
        {"id": "rs_8", "summary": [{"text": "Nothing is left to do.", "type": "summary_text"}], "type": "reasoning",
         "encrypted_content": "ZW5jcnlwdGVk-8"},
    ]
    calls = {i["call_id"]: i for i in items if i.get("type") == "function_call"}
    assert calls["c1"] == {"arguments": '{"path": "."}', "call_id": "c1", "name": "ls", "type": "function_call",
                           "id": "fc_c1", "status": "completed"}
    # The plain-form reply: an assistant message and function_call items, arguments as
    # written (the object serialised).
    assert calls["c4"] == {"type": "function_call", "call_id": "c4", "name": "read_file", "arguments": '{"path": "config.toml"}'}
    assert calls["c5"] == {"type": "function_call", "call_id": "c5", "name": "read_file", "arguments": '{"path":"app.toml"}'}
    assert {"role": "assistant", "content": "Checking two files."} in items
    outputs = {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}
    assert outputs == {
        "c1": "README.md\nsrc",
        "c2": "# Demo",
        "c3": "Error: src is a directory",
        "c4": "[server]\nport = 8080",
        "c5": "Error: no such file: app.toml",
    }
    assert [i for i in items if i.get("role") == "developer"] == [{"role": "developer", "content": prompt("/srv", "gpt-5.5")}]
    assert items[-1] == {"role": "user", "content": "Bye."}
