"""Compaction (``compact``) on each route, over both transports.

A 200-turn conversation — a user question each turn, every fourth turn a tool call (the
plain form, its result and a continuation step), then an answer — is compacted three times
with ``keep_turns``; the step after each compaction goes through the route's official SDK to
the recording stand-in for the provider (`route_support`, as the route tests send theirs),
and its request holds the summary first after the system prompt, the kept turns and nothing
older. At the end every step's request is rebuilt from the log (``request``), by this server
and by another one that reads the log afresh, equal to what the step returned.

A range that would separate a tool call from its result and a 10 MB summary are refused
(`PromptHostError`, kind ``compaction``) with the log's bytes unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Set, Tuple

import pytest

# The SDKs need Python 3.10 or newer: on 3.9 the suite runs without these tests.
pytest.importorskip("openai", minversion="3")
pytest.importorskip("anthropic", minversion="2")

from conftest import IDENTITY, ROOT_VALIDATOR, SNAPSHOT, Wire  # noqa: E402
from fake_provider import FakeProvider, anthropic_message, chat_completion, responses_response  # noqa: E402
from prompt_host import (  # noqa: E402
    FAILED,
    INVALID_PARAMS,
    Compacted,
    PromptHost,
    PromptHostError,
    Replay,
    RouteSpec,
    ToolCall,
)
from route_support import SCOPE, Conversation, check_bodies, check_replays, deploy  # noqa: E402

TURNS = 200
#: The turns after which the conversation is compacted, keeping the newest `KEEP` turns.
COMPACT_AFTER = (50, 100, 150)
KEEP = 3
MODEL = {"chat-completions": "gpt-5.5", "anthropic-messages": "claude-opus-4-8", "openai-responses": "gpt-5.5"}
ROUTES: Dict[str, RouteSpec] = {
    "chat-completions": {"name": "chat-completions"},
    "anthropic-messages": {"name": "anthropic-messages", "options": {"max_tokens": 1024}},
    "openai-responses": {"name": "openai-responses"},
}
CONTEXT = SNAPSHOT + "Sandbox: read-only."


def question(turn: int) -> str:
    return f"question {turn}"


def answer(turn: int) -> str:
    return f"answer {turn}"


def tool_turn(turn: int) -> bool:
    """Whether the model calls a tool in this turn (every fourth turn)."""
    return turn % 4 == 2


def sent_turn(turn: int) -> bool:
    """Whether this turn's first step goes to the provider: the first, the last, and the one
    after each compaction (a text reply each: none of them calls a tool)."""
    return turn in (0, TURNS - 1) or turn - 1 in COMPACT_AFTER


assert not any(tool_turn(t) for t in range(TURNS) if sent_turn(t))


def summary_text(n: int, turn: int) -> str:
    return f"Summary {n}: turns 0 to {turn - KEEP} asked {turn - KEEP + 1} questions; the tools listed directories."


def prompt(model: str) -> str:
    return f"{IDENTITY}\n\nWork in /repo. You run on {model}."


def text_reply(route: str, turn: int, text: str) -> Dict[str, Any]:
    """A text reply in the route provider's own shape."""
    if route == "chat-completions":
        return chat_completion(content=text)
    if route == "anthropic-messages":
        return anthropic_message([{"type": "text", "text": text}])
    message = {
        "type": "message",
        "id": f"msg_{turn}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return responses_response([message])


def system_prompt(route: str, request: Mapping[str, Any]) -> str:
    if route == "chat-completions":
        first = request["messages"][0]
        assert first["role"] == "system"
        return str(first["content"])
    if route == "anthropic-messages":
        return str(request["system"][0]["text"])
    return str(request["instructions"])


def first_after_system(route: str, request: Mapping[str, Any]) -> Tuple[str, str]:
    """The role and the (first) text of the first message after the system prompt, which
    chat-completions sends as its first message and the other routes apart."""
    if route == "chat-completions":
        message = request["messages"][1]
    elif route == "anthropic-messages":
        message = request["messages"][0]
    else:
        message = request["input"][0]
    content = message["content"]
    return message["role"], content if isinstance(content, str) else content[0]["text"]


def texts(request: Mapping[str, Any]) -> List[str]:
    """Every text the request's messages (or input items) carry, in order, whatever the
    route's shape."""
    out: List[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            for item in value:
                collect(item)
        elif isinstance(value, dict):
            for key in ("content", "text", "output"):
                collect(value.get(key))

    collect(request["messages"] if "messages" in request else request["input"])
    return out


class SampledWire(Wire):
    """A `Wire` that validates a ``step``'s or a ``request``'s result against its method's
    schema for every tenth step and those in ``full`` (the ones sent to the provider) only;
    every message is still validated against the root schema, and every other result in
    full. The conversation's 250 steps and as many replays, of up to ~150 messages each,
    would otherwise spend most of the test in jsonschema."""

    def __init__(self) -> None:
        super().__init__()
        self.full: Set[int] = set()

    def _check(self, message: Any) -> None:
        if isinstance(message, dict) and "result" in message and self.methods.get(message["id"]) in ("step", "request"):
            step = message["result"].get("step")
            if isinstance(step, int) and step % 10 != 0 and step not in self.full:
                for e in ROOT_VALIDATOR.iter_errors(message):
                    self.errors.append(f"schema: {json.dumps(message)[:2000]}: {e.message}")
                return
        super()._check(message)


@pytest.fixture
def sampled_wire() -> Iterator[SampledWire]:
    w = SampledWire()
    yield w
    w.assert_clean()


def converse(
    host: PromptHost, wasm: Any, tmp_path: Path, route: str, wire: SampledWire
) -> Tuple[Conversation, List[Compacted]]:
    """The conversation, compacted after each turn of `COMPACT_AFTER`; returns it and what
    each compaction answered."""
    deploy(host, wasm)
    model = MODEL[route]
    facts = {"model": model, "cwd": "/repo"}
    compactions: List[Compacted] = []
    summaries: List[str] = []
    with FakeProvider() as provider:
        conv = Conversation(host, str(tmp_path / "session.jsonl"), route, provider)
        log = conv.log
        for turn in range(TURNS):
            if sent_turn(turn):
                wire.full.add(len(conv.steps))
            # The route is named on the first step only: later steps continue it.
            s = conv.step(facts=facts, user=[question(turn)], **({"route": ROUTES[route]} if turn == 0 else {}))
            assert system_prompt(route, s.request) == prompt(model)
            if turn - 1 in COMPACT_AFTER:
                # The summary stands first after the system prompt, then the kept turns, the
                # runtime-context snapshot sent again (it was in the range), the new input.
                summary = summaries[-1]
                assert first_after_system(route, s.request) == ("user", summary), f"turn {turn}"
                sent = texts(s.request)
                assert sent.count(summary) == 1
                assert not any(t in sent for t in summaries[:-1])
                assert question(turn - KEEP - 1) not in sent and question(0) not in sent
                assert all(question(t) in sent for t in range(turn - KEEP, turn + 1)), f"turn {turn}: {sent}"
                assert sum(CONTEXT in t for t in sent) == 1, f"turn {turn}: {sent}"
            if sent_turn(turn):
                provider.add(text_reply(route, turn, answer(turn)))
                host.append_assistant(log, reply=conv.send(s).to_dict())
            elif tool_turn(turn):
                call_id = f"call_{turn}"
                host.append_assistant(log, tool_calls=[ToolCall(call_id, "ls", {"path": f"dir{turn}"})])
                host.append_tool_result(log, call_id, f"files of turn {turn}")
                conv.step(facts=facts)
                host.append_assistant(log, text=answer(turn))
            else:
                host.append_assistant(log, text=answer(turn))

            if turn in COMPACT_AFTER:
                summaries.append(summary_text(len(summaries) + 1, turn))
                lines = conv.lines()
                done = host.compact(log, summaries[-1], keep_turns=KEEP)
                assert isinstance(done, Compacted)
                # compaction/start, the summary, compaction/end: one write of three events.
                assert conv.lines() == lines + 3
                assert (done.summary_seq, done.end_event) == (done.start_event + 1, done.start_event + 2)
                # Everything after the system prompt was in the range: only it is kept.
                assert done.prefix_messages_kept == 1, done
                # The range: every turn not kept since the previous compaction (a question
                # and an answer at least), after the previous summary, its first node.
                first = COMPACT_AFTER[len(compactions) - 1] - KEEP + 1 if compactions else 0
                assert len(done.replaced) >= 2 * (turn - KEEP + 1 - first) + int(bool(compactions)), done
                if compactions:
                    assert done.replaced[0] == compactions[-1].summary_seq, done
                compactions.append(done)
        assert provider.unused == 0
    assert len(compactions) == len(COMPACT_AFTER)
    assert len(conv.steps) == TURNS + sum(tool_turn(t) for t in range(TURNS))
    assert len(conv.sent) == 2 + len(COMPACT_AFTER)
    assert all(step.route.name == route for step in conv.steps)
    # The log keeps every turn: a compaction shadows, never deletes.
    text = Path(conv.log).read_text()
    assert json.dumps(question(0)) in text
    assert text.count('"compaction/start"') == len(COMPACT_AFTER)
    return conv, compactions


@pytest.mark.parametrize("route", list(ROUTES))
def test_a_long_conversation_compacted_three_times_replays_every_step(
    route: str, open_host, wasm, sampled_wire: SampledWire, tmp_path: Path
) -> None:
    host = open_host(trace=sampled_wire)
    conv, _ = converse(host, wasm, tmp_path, route, sampled_wire)
    # What the provider received: the step's request exactly, valid for the SDK's types.
    check_bodies(conv)
    # Every step, before and after each compaction, rebuilt from the log as it was returned,
    # here and by a server that reads the log afresh.
    check_replays(conv, sampled_wire, open_host(trace=None))


def user_message_seq(log: Path, text: str) -> int:
    """The seq of the user's message ``text``, from the log on disk."""
    for line in log.read_text().splitlines()[1:]:
        event = json.loads(line)
        if event["type"] == "user/message" and json.dumps(text) in json.dumps(event["data"]):
            return int(event["seq"])
    raise AssertionError(f"no user message {text!r} in {log}")


def refused(host: PromptHost, log: Path, summary: str, **kw: Any) -> PromptHostError:
    with pytest.raises(PromptHostError) as caught:
        host.compact(log, summary, **kw)
    e = caught.value
    assert (e.code, e.kind, e.session, e.method) == (FAILED, "compaction", str(log), "compact"), repr(e)
    assert e.message.startswith(f"session log {log}: compaction refused: "), e.message
    return e


def test_a_range_that_splits_a_tool_call_or_a_10_mb_summary_is_refused_with_nothing_written(
    host: PromptHost, wasm, tmp_path: Path
) -> None:
    deploy(host, wasm)
    log = tmp_path / "s.jsonl"
    facts = {"model": "m1", "cwd": "/repo"}
    host.step(log, scope=SCOPE, facts=facts, user=["List the files."])
    call = host.append_assistant(log, tool_calls=[ToolCall("c1", "ls", {"path": "."})])
    result = host.append_tool_result(log, "c1", "README.md")
    host.step(log, scope=SCOPE, facts=facts)
    host.append_assistant(log, text="There is README.md.")
    third = host.step(log, scope=SCOPE, facts=facts, user=["Thanks."])
    user = user_message_seq(log, "List the files.")
    assert user < call < result
    before = log.read_bytes()

    # From the user's message to the call, leaving its result out.
    e = refused(host, log, "They listed the files.", start_seq=user, end_seq=call)
    assert (
        f"the range would separate tool call c1 (seq {call}) from its result (seq {result}); "
        f"end the range at seq {result} or later"
    ) in e.message
    assert log.read_bytes() == before

    e = refused(host, log, "x" * (10 << 20), start_seq=user, end_seq=result)
    assert "the summary is 10485760 bytes; a compaction summary may be at most 1048576 bytes (1 MiB)" in e.message
    assert log.read_bytes() == before

    # A range and keep_turns, or neither: the params do not say what to compact.
    for kw in ({"start_seq": user, "end_seq": result, "keep_turns": 1}, {}):
        with pytest.raises(PromptHostError) as caught:
            host.compact(log, "s", **kw)
        assert caught.value.code == INVALID_PARAMS, repr(caught.value)
    assert log.read_bytes() == before

    # The range the refusal pointed to goes through; the next request sends the summary
    # after the system prompt, and the steps before it replay as they were sent.
    done = host.compact(log, "They listed the files: README.md.", start_seq=user, end_seq=result)
    assert (done.replaced[0], done.replaced[-1]) == (user, result)
    assert call in done.replaced
    assert done.prefix_messages_kept == 1
    after = host.step(log, scope=SCOPE, facts=facts, user=["Again."])
    assert after.request["messages"][1] == {"role": "user", "content": "They listed the files: README.md."}
    assert "List the files." not in texts(after.request)
    assert host.request(log, third.step) == Replay(third.step, third.request)
