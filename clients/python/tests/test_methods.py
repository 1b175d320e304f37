"""Every method of docs/protocol.md through the sync client, every result typed and every message
validated against the schema (the ``wire`` fixture)."""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import IDENTITY, SNAPSHOT, REPO, Wire, mcp_config
from prompt_host import (
    PROTOCOL_VERSION,
    Assembly,
    Describe,
    InstructionsCut,
    McpInstructions,
    McpStatus,
    NamedText,
    Notification,
    PluginInfo,
    PromptHost,
    PromptHostError,
    Rendered,
    RequestTokens,
    ServerExited,
    TokenReport,
    ToolSchema,
)

METHODS = [
    "describe",
    "bind_scope",
    "dispose_scope",
    "scopes",
    "load_plugin",
    "reload_plugin",
    "dispose_plugin",
    "plugins",
    "assemble",
    "render",
    "step",
    "retry",
    "append_assistant",
    "append_tool_result",
    "request",
    "compact",
    "close_session",
    "mcp_status",
    "mcp_skill",
    "subscribe",
    "$/cancelRequest",
]
NOTIFICATIONS = ["log", "plugin/skipped", "plugin/quarantined", "registry/changed", "mcp/status", "mcp/instructions_cut"]


def test_describe(host: PromptHost, wire: Wire) -> None:
    d = host.describe()
    assert isinstance(d, Describe)
    assert d.name == "prompt-host"
    assert d.protocol == PROTOCOL_VERSION == "1.1"
    assert d.version
    assert d.methods == METHODS
    assert d.notifications == NOTIFICATIONS
    assert wire.sent == [{"jsonrpc": "2.0", "id": 1, "method": "describe", "params": {}}]


def test_scopes_bind_and_dispose(host: PromptHost, wasm) -> None:
    assert host.scopes() == []
    host.bind_scope("preset:coder")
    host.bind_scope("agent:2", "preset:coder")
    host.bind_scope("agent:1", parent="preset:coder")
    assert host.scopes() == ["agent:1", "agent:2", "preset:coder"]
    host.load_plugin("p", wasm("declare"), scope="preset:coder", config={"sections": [{"name": "p", "order": 5, "text": "From the preset."}]})
    host.load_plugin("a", wasm("declare"), scope="agent:1", config={"sections": [{"name": "a", "order": 6, "text": "From agent 1."}]})
    # A child sees its parent's layer; a sibling does not see agent:1's.
    assert host.render("agent:1").prompt == f"{IDENTITY}\n\nFrom the preset.\n\nFrom agent 1."
    assert host.render("agent:2").prompt == f"{IDENTITY}\n\nFrom the preset."
    host.dispose_scope("preset:coder")
    assert host.render("agent:1").prompt == f"{IDENTITY}\n\nFrom agent 1."
    # The scope stays declared, empty.
    assert host.scopes() == ["agent:1", "agent:2", "preset:coder"]
    assert [p.name for p in host.plugins()] == ["a"]


def test_load_plugins_dispose(host: PromptHost, wasm) -> None:
    host.bind_scope("s")
    first = host.load_plugin("one", wasm("declare"), config={"sections": [{"name": "one", "order": 1, "text": "One."}]})
    second = host.load_plugin(
        "two",
        wasm("declare"),
        scope="s",
        config={"sections": [{"name": "two", "order": 2, "text": "Two."}]},
        limits={"memory_bytes": 33554432, "call_timeout_ms": 200},
        on_error="fail",
        quarantine_after=3,
    )
    assert isinstance(first, int) and isinstance(second, int) and first != second
    plugins = host.plugins()
    assert all(isinstance(p, PluginInfo) for p in plugins)
    assert sorted((p.id, p.name, p.scope) for p in plugins) == sorted([(first, "one", None), (second, "two", "s")])
    assert host.render("s").prompt == f"{IDENTITY}\n\nOne.\n\nTwo."
    assert host.dispose_plugin(second) is True
    assert host.dispose_plugin(second) is False
    assert host.render("s").prompt == f"{IDENTITY}\n\nOne."
    assert [p.id for p in host.plugins()] == [first]


def test_reload_plugin(host: PromptHost, wasm) -> None:
    pid = host.load_plugin("one", wasm("declare"), config={"sections": [{"name": "one", "order": 1, "text": "One."}]})
    assert host.reload_plugin(pid, wasm("declare")) == 1
    assert host.render().prompt == f"{IDENTITY}\n\nOne."
    # A component whose init refuses the config: the old plugin stays and keeps serving.
    with pytest.raises(PromptHostError) as e:
        host.reload_plugin(pid, wasm("tool_guide"))
    assert (e.value.kind, e.value.plugin) == ("plugin", "one")
    assert host.render().prompt == f"{IDENTITY}\n\nOne."
    assert [p.id for p in host.plugins()] == [pid]
    with pytest.raises(PromptHostError) as e:
        host.reload_plugin(pid + 100, wasm("declare"))
    assert e.value.kind == "unknown-plugin"


def test_load_plugin_sha256_pin(host: PromptHost, wasm) -> None:
    import hashlib

    path = wasm("declare")
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    host.load_plugin("pinned", path, config={"sections": [{"name": "s", "order": 1, "text": "Pinned."}]}, sha256=digest)
    assert host.render().prompt == f"{IDENTITY}\n\nPinned."
    with pytest.raises(PromptHostError) as e:
        host.load_plugin("mismatch", path, sha256="0" * 64)
    assert e.value.kind == "plugin" and e.value.plugin == "mismatch"


def test_assemble_typed(host: PromptHost, wasm) -> None:
    host.bind_scope("a")
    host.load_plugin(
        "d",
        wasm("declare"),
        scope="a",
        config={
            "sections": [{"name": "rules", "order": 10, "text": "Model {{model}}."}],
            "contexts": [{"name": "ctx", "order": 10, "text": "Sandbox."}],
            "variables": [{"name": "team", "value": "core"}, {"name": "empty", "value": None}],
            "tools": [{"schemas": [{"name": "ls", "description": "List.", "parameters": {"type": "object"}}]}],
        },
    )
    a = host.assemble("a", {"model": "m1"})
    assert isinstance(a, Assembly)
    assert a.sections == [
        NamedText("harness:identity", IDENTITY),
        NamedText("deployment:persona", ""),
        NamedText("rules", "Model {{model}}."),
    ]
    assert a.contexts == [NamedText("ctx", "Sandbox.")]
    assert a.tools == [ToolSchema("ls", "List.", {"type": "object"})]
    assert a.variables == {"provider": None, "model": "m1", "cwd": None, "team": "core", "empty": None}


def test_render_facts_object_and_pairs(host: PromptHost, wasm, wire: Wire) -> None:
    host.bind_scope("a")
    host.load_plugin("persona", wasm("persona"), scope="a", config={"text": "On {{model}} in {{cwd}} via {{provider}}."})
    r = host.render("a", facts={"model": "m1", "cwd": "/w", "provider": "p"})
    assert isinstance(r, Rendered)
    assert r.prompt == f"{IDENTITY}\n\nOn m1 in /w via p."
    assert r.context == ""
    # Pairs keep their order; a later key wins.
    r = host.render("a", facts=[("model", "m1"), ("cwd", "/w"), ("provider", "p"), ("model", "m2")])
    assert r.prompt == f"{IDENTITY}\n\nOn m2 in /w via p."
    assert wire.sent[-1]["params"]["facts"] == [["model", "m1"], ["cwd", "/w"], ["provider", "p"], ["model", "m2"]]


def test_render_context(host: PromptHost, wasm) -> None:
    host.load_plugin("policy", wasm("runtime-policy"))
    assert host.render(facts={"sandbox": "read-only"}) == Rendered(IDENTITY, SNAPSHOT + "Sandbox: read-only.")
    assert host.render() == Rendered(IDENTITY, "")


def test_token_counts_on_request(host: PromptHost, wasm, wire: Wire, tmp_path: Path) -> None:
    host.bind_scope("a")
    host.load_plugin("persona", wasm("persona"), scope="a", config={"text": "Persona on {{model}}: 日本語 👩‍👩‍👧‍👦."})
    plain = host.render("a", facts={"model": "m1"})
    assert plain.tokens is None and "tokens" not in wire.sent[-1]["params"]
    r = host.render("a", facts={"model": "m1"}, tokens="cl100k_base")
    assert wire.sent[-1]["params"]["tokens"] == "cl100k_base"
    assert r.prompt == plain.prompt and isinstance(r.tokens, TokenReport)
    t = r.tokens
    assert t.tokenizer == "cl100k_base"
    assert [p.name for p in t.sections] == ["harness:identity", "deployment:persona"]
    assert [p.bytes for p in t.sections] == [len(IDENTITY.encode()), len("Persona on m1: 日本語 👩‍👩‍👧‍👦.".encode())]
    assert t.sections_sum == sum(p.tokens for p in t.sections) and t.prompt > 0
    assert t.context == 0 and t.contexts == [] and t.tools == []
    assert t.tools_as is None
    # A step counts the rendering it committed, with the same figures; its tools (none
    # here) are counted as its route sends them.
    step = host.step(tmp_path / "s.jsonl", scope="a", facts={"model": "m1"}, user=["Hi."], tokens="cl100k_base")
    assert step.tokens is not None and step.tokens.tools_as == "chat-completions"
    assert dataclasses.replace(step.tokens, tools_as=None) == t
    # And its request as the route sends it: the system message's text is the prompt.
    counted = step.request_tokens
    assert isinstance(counted, RequestTokens) and counted.tokenizer == "cl100k_base"
    assert counted.system == t.prompt and counted.tools == 0 and counted.messages > 0
    assert counted.total == counted.system + counted.tools + counted.messages
    assert host.step(tmp_path / "plain.jsonl", scope="a", facts={"model": "m1"}).request_tokens is None
    # No [prompt] tokenizer: `True` says how to get one; an unknown name is named.
    with pytest.raises(PromptHostError) as e:
        host.render(tokens=True)
    assert e.value.kind == "tokenizer" and "set [prompt] tokenizer in host.toml" in e.value.message
    with pytest.raises(PromptHostError) as e:
        host.render(tokens="gpt2")
    assert e.value.kind == "tokenizer" and e.value.message.startswith('unknown tokenizer "gpt2"')


def test_a_rendering_over_its_token_budget(open_host, wasm, tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text(
        '[prompt]\ninclude_harness_identity = false\ntokenizer = "cl100k_base"\nmax_prompt_tokens = 5\n\n'
        f'[[plugin]]\nname = "guide"\nwasm = {json.dumps(wasm("declare"))}\n'
        'config = { sections = [{ name = "a", order = 150, text = "one two three four five six seven eight" }] }\n'
    )
    host = open_host(config=config)
    with pytest.raises(PromptHostError) as e:
        host.render()
    assert e.value.kind == "token-budget"
    assert (e.value.budget, e.value.tokenizer, e.value.tokens, e.value.limit, e.value.section, e.value.plugin) == (
        "max_prompt_tokens",
        "cl100k_base",
        8,
        5,
        "a",
        "guide",
    )
    assert e.value.message == (
        'rendering for scope "global" failed: the rendered system prompt has 8 tokens (cl100k_base), '
        'over max_prompt_tokens = 5; the largest: section "a" 8 tokens from plugin "guide" (global)'
    )
    log = tmp_path / "s.jsonl"
    with pytest.raises(PromptHostError):
        host.step(log)
    assert not log.exists()


def test_timings_on_request(host: PromptHost, wasm, wire: Wire, tmp_path: Path) -> None:
    host.load_plugin("dyn", wasm("declare"), config={"sections": [{"name": "live", "order": 150, "text": {"dynamic": "Live."}}]})
    assert host.render().timings is None
    r = host.render(timings=True)
    assert wire.sent[-1]["params"]["timings"] is True
    assert r.timings is not None and sorted(r.timings.phases) == ["assemble", "render"]
    live = [c for c in r.timings.calls if c.name == "live"]
    assert len(live) == 1 and (live[0].kind, live[0].plugin, live[0].layer) == ("section", "dyn", "global")
    assert all(c.micros >= 0 for c in r.timings.calls)
    step = host.step(tmp_path / "s.jsonl", timings=True)
    assert step.timings is not None and sorted(step.timings.phases) == ["assemble", "commit", "render"]


def test_close_session(host: PromptHost, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    assert host.close_session(log) is False
    host.step(log, user="hello")
    assert host.close_session(log) is True
    assert host.close_session(log) is False


def test_only_given_params_are_sent(host: PromptHost, wire: Wire, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    host.step(log)
    host.step(log, scope=None, facts=None, user=None)
    assert wire.sent[0]["params"] == {"session": str(log)}
    assert wire.sent[1]["params"] == {"session": str(log)}


def test_mcp_status_without_servers(host: PromptHost) -> None:
    assert host.mcp_status() == []
    assert host.mcp_status(wait_ms=10) == []


def test_mcp_status_and_notifications(open_host, wasm, tmp_path: Path) -> None:
    hang = REPO / "tests" / "fixtures" / "mcp" / "hang.py"
    config = mcp_config(
        tmp_path,
        wasm,
        f"""
[[mcp]]
name = "silent"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(hang))}]
scope = "agent"
timeout_ms = 300
""",
    )
    seen: "queue.Queue[Notification]" = queue.Queue()
    host = open_host(config=config, on_notification=seen.put)
    host.subscribe(mcp=True)
    first = host.mcp_status()
    assert len(first) == 1 and isinstance(first[0], McpStatus)
    assert (first[0].server, first[0].scope, first[0].plugin) == ("silent", "agent", "mcp:silent")
    assert first[0].state in ("starting", "down")
    status = host.mcp_status(wait_ms=5000)[0]
    assert status.state == "down"
    assert status.failures >= 1 and status.live_generation is None
    assert "no answer to server/discover or initialize within 300 ms" in (status.last_error or "")
    note = seen.get(timeout=10)
    assert note.method == "mcp/status"
    assert note.mcp_status is not None and note.mcp_status.server == "silent"


def test_mcp_server_up(open_host, wasm, tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP fixture server needs tests/fixtures/mcp/requirements.txt")
    server = REPO / "tests" / "fixtures" / "mcp" / "server.py"
    config = mcp_config(
        tmp_path,
        wasm,
        f"""
[[mcp]]
name = "fixture"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(server))}, "--instructions", "Use the echo tool."]
scope = "agent"
timeout_ms = 20000
""",
    )
    host = open_host(config=config)
    status = host.mcp_status(wait_ms=30000)[0]
    assert status.state == "up", status
    assert status.generations >= 1 and status.published >= 1 and status.live_generation is not None
    assert status.last_error is None
    # The 2026-07-28 lifecycle (the SDK server speaks it), and what the server injects.
    assert (status.transport, status.lifecycle, status.protocol_version) == ("stdio", "discover", "2026-07-28")
    assert status.instructions == McpInstructions(enabled=True, bytes=len("Use the echo tool."), text="Use the echo tool.")
    prompt = host.render("agent").prompt
    assert 'Instructions from MCP server "fixture"' in prompt and "Use the echo tool." in prompt
    assert any(t.name.startswith("mcp__fixture__") for t in host.assemble("agent").tools)


def test_subscribe_log_plugins_registry(host: PromptHost, wasm) -> None:
    seen: list = []
    stream = host.notifications()
    host2_events: "queue.Queue[Notification]" = queue.Queue()
    host._on_notification = host2_events.put  # the callback may also be set at construction
    host.subscribe(log="info", plugins=True, registry=True)
    host.bind_scope("n")
    host.load_plugin(
        "logger", wasm("declare"), scope="n", config={"listener": {"key": "k", "steps": [{"record_context": True}, {"next": True}]}}
    )
    host.load_plugin(
        "skipper",
        wasm("declare"),
        scope="n",
        on_error="skip",
        quarantine_after=2,
        config={"sections": [{"name": "sk", "order": 5, "text": {"fail": "nope"}}]},
    )
    for _ in range(2):
        host.render("n", [("model", "m")])
    # Everything the two renders caused was sent before their responses.
    while True:
        try:
            seen.append(stream.get(timeout=0.5))
        except queue.Empty:
            break
    methods = [n.method for n in seen]
    assert methods.count("registry/changed") >= 2
    assert methods.count("plugin/skipped") == 2
    assert methods.count("plugin/quarantined") == 1
    logs = [n.log_line for n in seen if n.method == "log"]
    assert logs and logs[0] is not None
    assert logs[0].plugin == "logger" and logs[0].scope == "n" and logs[0].stream == "info"
    assert json.loads(logs[0].message) == {
        "listener": "k",
        "record": "context",
        "value": {"facts": [["model", "m"]], "scope_chain": ["n"]},
    }
    quarantined = next(n for n in seen if n.method == "plugin/quarantined").log_line
    assert quarantined is not None and quarantined.plugin == "skipper" and quarantined.stream == "quarantined"
    assert "quarantined after 2 consecutive failures" in quarantined.message
    # The callback saw the same notifications, in the same order.
    callback_seen = []
    while not host2_events.empty():
        callback_seen.append(host2_events.get())
    assert callback_seen == seen
    # A new choice replaces the old one: nothing is sent any more.
    host.subscribe(log="off")
    host.render("n", [("model", "m")])
    host.load_plugin("quiet", wasm("declare"))
    with pytest.raises(queue.Empty):
        stream.get(timeout=0.3)
    stream.close()


def test_log_levels_filter_and_escape(host: PromptHost, wasm) -> None:
    host.load_plugin("say", wasm("hostile"), on_error="skip", config={"mode": "say", "in": "section", "text": "hi\u001b[31m"})
    stream = host.notifications()
    host.subscribe(log="warn")
    host.render()
    host.subscribe()
    notes = []
    while True:
        try:
            notes.append(stream.get(timeout=0.3))
        except queue.Empty:
            break
    # warn and error pass; stdout and stderr count as info; plugin/skipped was not chosen.
    assert [(n.method, n.params["stream"]) for n in notes] == [("log", "warn"), ("log", "error")]
    # Control characters are escaped.
    assert notes[0].params["message"] == "hi\\u{1b}[31m"


def test_notifications_iterator_ends_when_server_exits(open_host) -> None:
    host = open_host()
    stream = host.notifications()
    host.close()
    assert list(stream) == []


def test_request_without_id_is_not_answered(host: PromptHost, wire: Wire) -> None:
    host.notify("bind_scope", {"scope": "by-notification"})
    host.notify("no_such_method")
    # It runs (concurrently with what follows: a notification cannot be waited for), and
    # nothing is answered: every response belongs to a request of ours.
    deadline = time.monotonic() + 10
    while host.scopes() != ["by-notification"]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    sent_ids = {m["id"] for m in wire.sent if "id" in m}
    assert [m["id"] for m in wire.received] == sorted(sent_ids)


def test_any_number_is_an_id(host: PromptHost, wire: Wire) -> None:
    # docs/protocol.md: "id is a string or a number"; the answer echoes it (and fits the schema).
    host.send_raw(b'{"jsonrpc": "2.0", "id": 1.5, "method": "scopes"}')
    assert wire.wait_for(lambda m: isinstance(m, dict) and m.get("id") == 1.5)["result"] == []


def test_cancel_request_with_id_is_answered(host: PromptHost) -> None:
    assert host.call("$/cancelRequest", {"id": 9999}) == {}


def test_batch_answered_in_order(host: PromptHost, wire: Wire) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "b1", "method": "bind_scope", "params": {"scope": "x"}},
        {"jsonrpc": "2.0", "id": "b2", "method": "scopes"},
        {"jsonrpc": "2.0", "method": "bind_scope", "params": {"scope": "y"}},
        {"jsonrpc": "2.0", "id": "b3", "method": "render", "params": {"scope": "nope"}},
        {"jsonrpc": "2.0", "id": "b4", "method": "scopes"},
    ]
    host.send_raw(json.dumps(batch).encode())
    answer = wire.wait_for(lambda m: isinstance(m, list))
    assert [a["id"] for a in answer] == ["b1", "b2", "b3", "b4"]
    assert answer[0]["result"] == {}
    assert answer[1]["result"] == ["x"]
    assert answer[2]["error"]["data"] == {"kind": "unknown-scope", "scope": "nope"}
    assert answer[3]["result"] == ["x", "y"]


def test_pipelined_requests_matched_by_id(host: PromptHost, wasm) -> None:
    host.load_plugin("d", wasm("declare"), config={"sections": [{"name": "s", "order": 1, "text": "On {{model}}."}]})
    pending = [host.send("render", {"facts": {"model": f"m{i}"}}) for i in range(200)]
    for i, p in enumerate(pending):
        assert p.result(timeout=60)["prompt"] == f"{IDENTITY}\n\nOn m{i}."


def test_threads_share_one_client(host: PromptHost, wasm) -> None:
    host.load_plugin("d", wasm("declare"), config={"sections": [{"name": "s", "order": 1, "text": "On {{model}}."}]})
    failures: list = []

    def worker(n: int) -> None:
        for i in range(25):
            model = f"t{n}-{i}"
            if host.render(facts={"model": model}).prompt != f"{IDENTITY}\n\nOn {model}.":
                failures.append(model)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_input_closed_answers_in_flight(open_host, wasm) -> None:
    host = open_host()
    host.load_plugin(
        "slow", wasm("hostile"), config={"mode": "sleep", "in": "section"}, limits={"call_timeout_ms": 500}
    )
    pending = host.send("render")
    time.sleep(0.05)
    started = time.monotonic()
    assert host.close() == 0
    # The request in flight was answered (its plugin hit the 500 ms deadline) before the exit.
    with pytest.raises(PromptHostError) as e:
        pending.result(timeout=0)
    assert e.value.kind == "plugin" and e.value.plugin == "slow" and e.value.export == "section-text"
    assert time.monotonic() - started < 10


def test_server_ends_when_its_output_is_closed(bin_path: Path, server_env) -> None:
    # docs/protocol.md, Transport: the server ends "when its output is closed": the answer it
    # cannot write stops it, without waiting for more input (its input stays open here).
    proc = subprocess.Popen(
        [str(bin_path), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **server_env},
    )
    try:
        proc.stdout.close()
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "scopes"}\n')
        proc.stdin.flush()
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()


def test_requests_after_exit_raise_server_exited(open_host) -> None:
    host = open_host()
    host.close()
    with pytest.raises(ServerExited) as e:
        host.describe()
    assert e.value.returncode == 0


def test_killed_server_fails_pending_requests(bin_path: Path, server_env, wire: Wire, wasm) -> None:
    host = PromptHost(binary=bin_path, env=server_env, trace=wire)
    host.load_plugin("sleepy", wasm("hostile"), config={"mode": "sleep", "in": "section"}, limits={"call_timeout_ms": 20000})
    pending = host.send("render")
    time.sleep(0.1)
    host._proc.kill()
    with pytest.raises(ServerExited) as e:
        pending.result(timeout=10)
    assert e.value.method == "render"
    assert e.value.returncode is not None and e.value.returncode < 0


def test_bad_config_exits_with_its_message(bin_path: Path, server_env, wire: Wire, tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text("[prompt]\nno_such_key = 1\n")
    host = PromptHost(config, binary=bin_path, env=server_env, trace=wire)
    with pytest.raises(ServerExited) as e:
        host.describe()
    assert host.close() == 1
    assert e.value.returncode == 1
    assert "no_such_key" in e.value.stderr and str(config) in e.value.stderr


def test_config_scopes_and_plugins(open_host, wasm, tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text(
        f"""
[prompt]
persona = "You run on {{{{model}}}}."

[[scope]]
name = "preset"

[[scope]]
name = "agent:1"
parent = "preset"

[[plugin]]
name = "guide"
wasm = {json.dumps(wasm("tool-guide"))}
scope = "preset"
"""
    )
    host = open_host(config=config)
    assert host.scopes() == ["agent:1", "preset"]
    assert [(p.name, p.scope) for p in host.plugins()] == [("guide", "preset")]
    assembly = host.assemble("agent:1", {"model": "m1", "cwd": "/w"})
    assert sorted(t.name for t in assembly.tools) == ["bash", "read_file", "write_file"]
    assert host.render(facts={"model": "m1"}).prompt == f"{IDENTITY}\n\nYou run on m1."


def test_a_notification_is_delivered_before_the_answer_after_it(host: PromptHost, wasm) -> None:
    """docs/protocol.md: the callback runs before any response that follows the notification
    is delivered (in process too, where the answer does not come as a line)."""
    seen: list = []
    host._on_notification = lambda note: seen.append(note.method)
    host.subscribe(plugins=True)
    host.load_plugin("skipper", wasm("declare"), on_error="skip", config={"sections": [{"name": "sk", "order": 5, "text": {"fail": "nope"}}]})
    for n in range(1, 4):
        host.render()
        assert seen.count("plugin/skipped") == n, seen


def test_mcp_instructions_cut_to_their_token_budget(open_host, wasm, tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP fixture server needs tests/fixtures/mcp/requirements.txt")
    server = REPO / "tests" / "fixtures" / "mcp" / "server.py"
    line = "Always cite the file you read before you change it."
    config = tmp_path / "host.toml"
    config.write_text(
        f"""
[prompt]
tokenizer = "cl100k_base"

[host]
mcp_provider = {json.dumps(wasm("mcp-instructions"))}

[[scope]]
name = "agent"

[[mcp]]
name = "fixture"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(server))}, "--instructions", {json.dumps(line)}, "--instructions-repeat", "200"]
scope = "agent"
timeout_ms = 20000
max_instruction_tokens = 60
config = {{ max_bytes = 1048576 }}
"""
    )
    seen: "queue.Queue[Notification]" = queue.Queue()
    host = open_host(config=config, on_notification=seen.put)
    host.subscribe(mcp=True)
    status = host.mcp_status(wait_ms=30000)[0]
    assert status.state == "up" and status.live_generation is not None, status
    cut = status.instructions_cut
    assert isinstance(cut, InstructionsCut), status
    whole = "\n".join([line] * 200)
    assert (cut.server, cut.generation, cut.budget, cut.tokenizer) == ("fixture", status.live_generation, 60, "cl100k_base")
    assert cut.bytes == len(whole) and cut.tokens is not None and cut.tokens > 60
    assert 0 < cut.kept_tokens <= 60 and cut.kept_bytes + cut.dropped_bytes == cut.bytes
    # The prompt says so: the note, then the kept lines, whole.
    kept = whole[: cut.kept_bytes]
    assert kept.endswith(line), "the cut ends at a line break"
    prompt = host.render("agent").prompt
    assert f"{cut.note}\n\n{kept}\n>>>" in prompt, prompt
    assert cut.note.startswith('[prompt-host: the instructions of MCP server "fixture" were cut to their first ')
    # The step result and render name it; the notification came once.
    step = host.step(tmp_path / "s.jsonl", scope="agent", user="hi")
    assert step.mcp_cuts == [cut] and step.tokens_error is None
    assert host.render("agent").mcp_cuts == [cut] and host.render().mcp_cuts == []
    notes = []
    while True:
        try:
            note = seen.get(timeout=0 if notes else 10)
        except queue.Empty:
            break
        if note.method == "mcp/instructions_cut":
            notes.append(note.instructions_cut)
    assert notes == [cut]
    # Retry measures as step does.
    again = host.retry(tmp_path / "s.jsonl", tokens=True, timings=True)
    assert again.mcp_cuts == [cut] and again.tokens is not None and again.timings is not None
