"""Conversations through step / append_assistant / append_tool_result / retry / request, each
model request compared with the exact JSON expected."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import IDENTITY, SNAPSHOT, TOOLS_DECLARED, Wire, deploy_rules
from prompt_host import PromptHost, Replay, StepResult, ToolCall

SCOPE = "agent:conv"
WIRE_TOOLS = [{"type": "function", "function": t} for t in TOOLS_DECLARED]


def system(model: str) -> Dict[str, Any]:
    return {"role": "system", "content": f"{IDENTITY}\n\nWork in /repo. You run on {model}."}


def user(text: str) -> Dict[str, Any]:
    return {"role": "user", "content": text}


CONTEXT = {"role": "user", "content": SNAPSHOT + "Sandbox: read-only."}


def deploy(host: PromptHost, wasm) -> None:
    deploy_rules(host, wasm, SCOPE, "conv")


def test_five_turns_three_tool_calls_exact_requests(host: PromptHost, wasm, wire: Wire, tmp_path: Path) -> None:
    deploy(host, wasm)
    log = str(tmp_path / "session.jsonl")
    m1 = {"model": "m1", "cwd": "/repo"}
    m2 = {"model": "m2", "cwd": "/repo"}
    results: List[StepResult] = []

    def step(**kw: Any) -> StepResult:
        r = host.step(log, scope=SCOPE, **kw)
        results.append(r)
        return r

    # Turn 1: one tool call, then the answer.
    r = step(facts=m1, user=["List the files."])
    assert (r.step, r.commits, r.header, r.starts_series) == (0, 1, "initial", False)
    assert r.request == {"messages": [system("m1"), user("List the files."), CONTEXT], "tools": WIRE_TOOLS, "model": "m1"}
    # The route (chat-completions, the default) and the model were logged with the step.
    assert (r.route.name, r.route.model, r.route.system_updates, r.route.reasoning) == (
        "chat-completions",
        "m1",
        "replace",
        "omit",
    )
    assert host.append_assistant(log, tool_calls=[ToolCall("call_1", "ls", {"path": "."})]) == 7
    assert host.append_tool_result(log, "call_1", "README.md\nsrc") == 8
    r = step(facts=m1)
    assert (r.step, r.commits, r.header) == (1, 0, None)
    turn1 = [
        system("m1"),
        user("List the files."),
        CONTEXT,
        {
            # A reply of tool calls only has no content (not null).
            "role": "assistant",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": '{"path":"."}'}}],
        },
        {"role": "tool", "content": "README.md\nsrc", "tool_call_id": "call_1"},
    ]
    assert r.request == {"messages": turn1, "tools": WIRE_TOOLS, "model": "m1"}
    host.append_assistant(log, text="README.md and src.")

    # Turn 2: two tool calls in one reply (one result is an error), then the answer.
    r = step(facts=m1, user=["Read them."])
    assert (r.step, r.commits, r.header) == (2, 0, None)
    turn2_start = turn1 + [{"role": "assistant", "content": "README.md and src."}, user("Read them.")]
    assert r.request == {"messages": turn2_start, "tools": WIRE_TOOLS, "model": "m1"}
    host.append_assistant(
        log,
        text="Reading both.",
        tool_calls=[ToolCall("call_2", "read_file", {"path": "README.md"}), {"id": "call_3", "name": "read_file", "arguments": {"path": "src"}}],
    )
    host.append_tool_result(log, "call_2", "# Demo")
    host.append_tool_result(log, "call_3", "src is a directory", is_error=True)
    r = step(facts=m1)
    turn2 = turn2_start + [
        {
            "role": "assistant",
            "content": "Reading both.",
            "tool_calls": [
                {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"README.md"}'}},
                {"id": "call_3", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"src"}'}},
            ],
        },
        {"role": "tool", "content": "# Demo", "tool_call_id": "call_2"},
        # The API has no error flag: a failed call's result is stated as an error.
        {"role": "tool", "content": "Error: src is a directory", "tool_call_id": "call_3"},
    ]
    assert (r.step, r.commits, r.header) == (3, 0, None)
    assert r.request == {"messages": turn2, "tools": WIRE_TOOLS, "model": "m1"}
    host.append_assistant(log, text="README is a title.", reasoning="src failed to read")

    # Turn 3: a plain answer with reasoning (recorded; chat-completions does not send it back
    # unless the route says `reasoning: "send"`).
    r = step(facts=m1, user=["Thanks."])
    turn3_start = turn2 + [
        {"role": "assistant", "content": "README is a title."},
        user("Thanks."),
    ]
    assert (r.step, r.commits, r.header) == (4, 0, None)
    assert r.request == {"messages": turn3_start, "tools": WIRE_TOOLS, "model": "m1"}
    host.append_assistant(log, text="You're welcome.", reasoning="polite")

    # Turn 4: another model: the prompt is re-rendered and committed; the request's system
    # message is the new one.
    r = step(facts=m2, user=["Which model are you?"])
    turn4_start = [system("m2")] + turn3_start[1:] + [
        {"role": "assistant", "content": "You're welcome."},
        user("Which model are you?"),
    ]
    assert (r.step, r.commits, r.header) == (5, 1, None)
    assert r.request == {"messages": turn4_start, "tools": WIRE_TOOLS, "model": "m2"}
    host.append_assistant(log, text="m2.")

    # Turn 5: two user messages in one step, starting a series.
    r = step(facts=m2, user=["One.", "Two."], starts_series=True)
    turn5 = turn4_start + [{"role": "assistant", "content": "m2."}, user("One."), user("Two.")]
    assert (r.step, r.commits, r.header, r.starts_series) == (6, 0, "series", True)
    assert r.request == {"messages": turn5, "tools": WIRE_TOOLS, "model": "m2"}
    host.append_assistant(log, text="Two messages received.")

    assert len(results) == 7
    assert sum(len(m.get("tool_calls", [])) for m in results[-1].request["messages"]) == 3
    # Replay: every step's request, rebuilt from the log, equals what step returned.
    for r in results:
        assert host.request(log, r.step) == Replay(r.step, r.request)
    # ... and the raw response bytes agree too: the same JSON text.
    step_texts = {m["result"]["step"]: json.dumps(m["result"]["request"]) for m in wire.responses() if wire.methods[m["id"]] == "step"}
    replay_texts = {m["result"]["step"]: json.dumps(m["result"]["request"]) for m in wire.responses() if wire.methods[m["id"]] == "request"}
    assert step_texts == replay_texts


def test_retry_reuses_the_assembly(host: PromptHost, wasm, tmp_path: Path) -> None:
    """A retry re-renders `{{model}}` with the new facts but calls no plugin: the dynamic
    section's `${call}` counter does not move."""
    host.bind_scope("r")
    host.load_plugin(
        "counter",
        wasm("declare"),
        scope="r",
        config={
            "sections": [
                {"name": "model", "order": 10, "text": "You run on {{model}}."},
                {"name": "counter", "order": 20, "text": {"dynamic": "Assembly number ${call}."}},
            ],
            "contexts": [{"name": "ctx", "order": 10, "text": {"dynamic": "Context call ${call}."}}],
            "variables": [{"name": "calls", "dynamic": "${call}"}],
        },
    )
    log = tmp_path / "s.jsonl"
    first = host.step(log, scope="r", facts={"model": "primary"}, user=["hi"])
    prompt1 = f"{IDENTITY}\n\nYou run on primary.\n\nAssembly number 1."
    assert first.request["messages"] == [
        {"role": "system", "content": prompt1},
        user("hi"),
        {"role": "user", "content": SNAPSHOT + "Context call 1."},
    ]
    log_before = log.read_bytes()
    # The provider failed: retry on another model.
    retried = host.retry(log, facts={"model": "fallback"})
    assert (retried.step, retried.commits, retried.header) == (1, 1, None)
    assert retried.request["messages"] == [
        {"role": "system", "content": f"{IDENTITY}\n\nYou run on fallback.\n\nAssembly number 1."},
        user("hi"),
        {"role": "user", "content": SNAPSHOT + "Context call 1."},
    ]
    # The log grew by a retry step only (no new user message, no new snapshot); the new model
    # is logged with the step's request context.
    added = [json.loads(line) for line in log.read_bytes()[len(log_before):].splitlines()]
    assert [e["type"] for e in added] == ["step/start", "system/message", "request/context", "step/end"]
    assert added[0]["data"] == {"step": 1, "retryOf": 0}
    assert added[2]["data"] == {
        "route": "chat-completions",
        "model": "fallback",
        "systemPromptUpdate": "replace",
        "reasoning": "omit",
    }
    assert retried.request["model"] == "fallback"
    # A second retry with the same facts changes nothing in the prompt: no commit.
    again = host.retry(log, facts={"model": "fallback"})
    assert (again.step, again.commits) == (2, 0)
    assert again.request == retried.request
    # Zero plugin calls so far beyond the first step's: the next assembly is number 2.
    assert host.render("r", {"model": "x"}).prompt.endswith("Assembly number 2.")
    assert host.assemble("r").variables["calls"] == "3"
    # The newest request, replayed from the log, is the retry's.
    assert host.request(log) == Replay(2, again.request)
    assert host.request(log, 0) == Replay(0, first.request)
    assert host.request(log, 1) == Replay(1, retried.request)


def test_retry_then_step_continues(host: PromptHost, wasm, tmp_path: Path) -> None:
    host.bind_scope("r")
    host.load_plugin("m", wasm("declare"), scope="r", config={"sections": [{"name": "m", "order": 1, "text": "On {{model}}."}]})
    log = tmp_path / "s.jsonl"
    host.step(log, scope="r", facts={"model": "a"}, user=["q1"])
    host.retry(log, facts={"model": "b"})
    host.append_assistant(log, text="answer from b")
    r = host.step(log, scope="r", facts={"model": "b"}, user=["q2"])
    assert r.request["messages"] == [
        {"role": "system", "content": f"{IDENTITY}\n\nOn b."},
        user("q1"),
        {"role": "assistant", "content": "answer from b"},
        user("q2"),
    ]


def test_replay_from_another_process(open_host, wasm, tmp_path: Path) -> None:
    writer = open_host()
    deploy(writer, wasm)
    log = tmp_path / "s.jsonl"
    steps = [writer.step(log, scope=SCOPE, facts={"model": "m1", "cwd": "/repo"}, user=["hi"])]
    writer.append_assistant(log, tool_calls=[ToolCall("c1", "ls", {"path": "/"})])
    writer.append_tool_result(log, "c1", "bin etc")
    steps.append(writer.step(log, scope=SCOPE, facts={"model": "m1", "cwd": "/repo"}))
    writer.close_session(log)
    reader = open_host()
    for s in steps:
        assert reader.request(log, s.step) == Replay(s.step, s.request)
    assert reader.request(log).step == steps[-1].step
    # Replaying does not hold the log: the writer can go on.
    writer.append_assistant(log, text="done")


def test_resume_header_for_a_new_server(open_host, wasm, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    first = open_host()
    assert first.step(log, user="hi").header == "initial"
    first.append_assistant(log, text="hello")
    first.close()
    second = open_host()
    r = second.step(log, user="again")
    assert r.header == "resume"
    assert r.request["messages"] == [
        {"role": "system", "content": IDENTITY},
        user("hi"),
        {"role": "assistant", "content": "hello"},
        user("again"),
    ]


def test_tool_change_header(host: PromptHost, wasm, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    assert host.step(log, user="hi").header == "initial"
    host.append_assistant(log, text="hello")
    host.load_plugin("t", wasm("declare"), config={"tools": [{"schemas": [{"name": "t", "description": "T.", "parameters": {}}]}]})
    r = host.step(log, user="now with a tool")
    assert r.header == "change"
    assert r.request["tools"] == [{"type": "function", "function": {"name": "t", "description": "T.", "parameters": {}}}]


def test_in_history(host: PromptHost, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    r = host.step(log, user="hi", in_history=True)
    assert r.step == 0 and r.request["messages"][-1] == user("hi")


def test_session_requests_run_in_arrival_order(host: PromptHost, wasm, tmp_path: Path) -> None:
    """Pipelined without waiting: the session's requests run one at a time, in order."""
    deploy(host, wasm)
    log = str(tmp_path / "s.jsonl")
    facts = {"model": "m1", "cwd": "/repo"}
    pending = [
        host.send("step", {"session": log, "scope": SCOPE, "facts": facts, "user": ["List."]}),
        host.send("append_assistant", {"session": log, "tool_calls": [{"id": "c1", "name": "ls", "arguments": {}}]}),
        host.send("append_tool_result", {"session": log, "call_id": "c1", "content": "x"}),
        host.send("step", {"session": log, "scope": SCOPE, "facts": facts}),
        host.send("append_assistant", {"session": log, "text": "Done."}),
        host.send("step", {"session": log, "scope": SCOPE, "facts": facts, "user": ["Again."]}),
        host.send("request", {"session": log, "step": 1}),
        host.send("close_session", {"session": log}),
    ]
    results = [p.result(timeout=60) for p in pending]
    assert [results[0]["step"], results[3]["step"], results[5]["step"]] == [0, 1, 2]
    # Step 0 wrote seqs 1-6, its request/context among them.
    assert results[1] == {"seq": 7} and results[2] == {"seq": 8} and results[4] == {"seq": 11}
    assert results[6] == {"step": 1, "request": results[3]["request"]}
    assert results[7] == {"closed": True}
    assert [m["role"] for m in results[5]["request"]["messages"]] == ["system", "user", "user", "assistant", "tool", "assistant", "user"]


def test_sessions_are_independent(host: PromptHost, tmp_path: Path) -> None:
    logs = [tmp_path / f"s{i}.jsonl" for i in range(10)]
    pending = [host.send("step", {"session": str(log), "user": [f"hello {i}"]}) for i, log in enumerate(logs)]
    for i, p in enumerate(pending):
        assert p.result(timeout=60)["request"]["messages"][-1] == user(f"hello {i}")
    requests = [host.request(log) for log in logs]
    assert [r.request["messages"][-1]["content"] for r in requests] == [f"hello {i}" for i in range(10)]


def test_step_results_are_plain_json(host: PromptHost, tmp_path: Path) -> None:
    """A StepResult's request is a plain dict: ready to be sent to a provider as it is."""
    r = host.step(tmp_path / "s.jsonl", user="hi")
    assert json.loads(json.dumps(r.request)) == r.request
    assert copy.deepcopy(r.request) == r.request


def test_request_json_is_the_request_as_the_http_body(host: PromptHost, wasm, tmp_path: Path) -> None:
    """`request_json` is the request as compact UTF-8 JSON, on every transport: before the
    request was read (the in-process host writes it from its own value), after, and for a
    retry; non-ASCII text is kept as it is."""
    deploy(host, wasm)
    log = tmp_path / "s.jsonl"
    first = host.step(log, scope=SCOPE, facts={"model": "m1", "cwd": "/repo"}, user="Grüße — 你好")
    body = first.request_json()
    assert isinstance(body, bytes)
    assert "Grüße — 你好".encode("utf-8") in body
    assert b'": ' not in body and b'", ' not in body  # compact, as the line carries it
    assert json.loads(body) == first.request
    assert first.request_json() == body  # the same text once the request was read
    again = host.retry(log, facts={"model": "m1", "cwd": "/repo"})
    assert json.loads(again.request_json()) == again.request == first.request


def test_a_step_result_behaves_as_one_dataclass_whatever_the_transport(host: PromptHost, wasm, tmp_path: Path) -> None:
    """The in-process host's result converts its request when it is read; nothing about the
    result shows it: the request is one dict on every read, changes to it show in
    `request_json`, the result is frozen, equal to a plain `StepResult` with the same
    fields, and copied, replaced and pickled as one."""
    import dataclasses
    import pickle

    deploy(host, wasm)
    r = host.step(tmp_path / "s.jsonl", scope=SCOPE, facts={"model": "m1", "cwd": "/repo"}, user="hi")
    plain = StepResult(**{f.name: getattr(r, f.name) for f in dataclasses.fields(StepResult)})
    assert type(plain) is StepResult
    assert r == plain and plain == r
    assert r.request is r.request
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.request = {}  # type: ignore[misc]
    for other in (pickle.loads(pickle.dumps(r)), copy.deepcopy(r), copy.copy(r)):
        assert other == r
    replaced = dataclasses.replace(r, commits=9)
    assert (replaced.commits, replaced.request) == (9, r.request)
    assert json.loads(replaced.request_json()) == r.request
    r.request["model"] = "changed"
    assert json.loads(r.request_json())["model"] == "changed"
    assert repr(r) == repr(plain) and repr(r).startswith("StepResult(step=0, request={")


def test_each_in_process_step_request_is_its_own(host: PromptHost, wasm, tmp_path: Path) -> None:
    """Reading one step's request after the next step was taken gives that step's request
    (the host keeps each step's value with its result), and two results never share a
    dict."""
    deploy(host, wasm)
    log = tmp_path / "s.jsonl"
    a = host.step(log, scope=SCOPE, facts={"model": "m1", "cwd": "/repo"}, user="one")
    host.append_assistant(log, text="ok")
    b = host.step(log, scope=SCOPE, facts={"model": "m1", "cwd": "/repo"}, user="two")
    assert user("one") in a.request["messages"] and user("two") not in a.request["messages"]
    assert user("two") in b.request["messages"]
    assert len(b.request["messages"]) == len(a.request["messages"]) + 2
    assert a.request["tools"] is not b.request["tools"]
    raw = host.call("step", {"session": str(log), "scope": SCOPE, "facts": {"model": "m1", "cwd": "/repo"}})
    assert isinstance(raw["request"], dict)  # `call` gives the raw result: plain JSON values
