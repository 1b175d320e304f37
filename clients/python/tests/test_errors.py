"""Every error code and ``data.kind`` of docs/protocol.md that a request can cause, raised as
`PromptHostError` with the structured fields (``cancelled`` is in test_cancel.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import IDENTITY, Wire
from prompt_host import (
    FAILED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PromptHost,
    PromptHostError,
    RequestCancelled,
    ToolCall,
)


def raised(fn, *args, **kwargs) -> PromptHostError:
    with pytest.raises(PromptHostError) as e:
        fn(*args, **kwargs)
    assert not isinstance(e.value, RequestCancelled)
    return e.value


def test_parse_error(host: PromptHost, wire: Wire) -> None:
    host.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    answer = wire.wait_for(lambda m: "error" in m)
    assert answer["id"] is None
    assert answer["error"]["code"] == PARSE_ERROR
    assert "data" not in answer["error"]
    # The server keeps serving.
    assert host.describe().protocol == "1.1"


def test_invalid_requests(host: PromptHost, wire: Wire) -> None:
    # No "jsonrpc": answered with the request's id.
    host.send_raw(b'{"id": "raw-1", "method": "describe"}')
    answer = wire.wait_for(lambda m: "error" in m)
    assert answer["id"] == "raw-1" and answer["error"]["code"] == INVALID_REQUEST
    # An id that is neither string nor number: answered with id null.
    host.send_raw(b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "describe"}')
    answer = wire.wait_for(lambda m: "error" in m)
    assert answer["id"] is None and answer["error"]["code"] == INVALID_REQUEST
    # A null id is not an id (JSON-RPC 2.0 reserves it): refused, and the request does not run.
    host.send_raw(b'{"jsonrpc": "2.0", "id": null, "method": "bind_scope", "params": {"scope": "ghost"}}')
    answer = wire.wait_for(lambda m: "error" in m)
    assert answer["id"] is None and answer["error"]["code"] == INVALID_REQUEST
    assert host.scopes() == []
    # Not an object; an empty batch.
    host.send_raw(b"42")
    assert wire.wait_for(lambda m: "error" in m)["error"]["code"] == INVALID_REQUEST
    host.send_raw(b"[]")
    assert wire.wait_for(lambda m: "error" in m)["error"]["code"] == INVALID_REQUEST
    # A method that is not a string.
    host.send_raw(b'{"jsonrpc": "2.0", "id": "raw-2", "method": 7}')
    answer = wire.wait_for(lambda m: "error" in m)
    assert answer["id"] == "raw-2" and answer["error"]["code"] == INVALID_REQUEST


def test_request_too_large(open_host, wire: Wire) -> None:
    host = open_host(max_request_bytes=4096)
    line = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "render", "params": {"facts": {"x": "a" * 5000}}})
    host.send_raw(line.encode())
    answer = wire.wait_for(lambda m: "error" in m)
    assert answer["id"] is None
    assert answer["error"]["code"] == INVALID_REQUEST
    assert answer["error"]["data"] == {"kind": "request-too-large", "bytes": len(line), "limit": 4096}
    # A line within the limit right after it is served.
    assert host.scopes() == []


def test_request_too_large_refused_before_sending(open_host, wire: Wire, open_async_host) -> None:
    """The server answers an oversized line with id null, so the clients refuse such a
    request themselves (the same error data) instead of waiting for an answer forever."""
    host = open_host(max_request_bytes=4096)
    e = raised(host.render, facts={"x": "a" * 5000})
    assert (e.code, e.kind, e.limit, e.method) == (INVALID_REQUEST, "request-too-large", 4096, "render")
    assert e.bytes is not None and e.bytes > 5000
    assert not any(m.get("method") == "render" for m in wire.sent)
    assert host.scopes() == []

    async def main() -> None:
        async with open_async_host(max_request_bytes=4096) as ahost:
            with pytest.raises(PromptHostError) as ae:
                await ahost.render(facts={"x": "a" * 5000})
            assert ae.value.kind == "request-too-large"
            assert await ahost.scopes() == []

    import asyncio

    asyncio.run(main())


def test_method_not_found(host: PromptHost) -> None:
    e = raised(host.call, "no_such_method", {})
    assert e.code == METHOD_NOT_FOUND and e.kind == "method-not-found"
    assert e.method == "no_such_method"
    assert e.methods is not None and "step" in e.methods and "$/cancelRequest" in e.methods
    assert "no_such_method" in e.message


@pytest.mark.invalid_params
@pytest.mark.parametrize(
    "method,params,needle",
    [
        ("render", {"bogus": 1}, "bogus"),
        ("render", {"scope": 5}, "invalid"),
        ("render", {"facts": {"model": 1}}, "model"),
        ("render", {"facts": [["model"]]}, "pair"),
        ("step", {}, "session"),
        ("load_plugin", {"name": "x", "wasm": "x.wasm", "limits": {"call_timeout_ms": 0}}, "call_timeout_ms"),
        ("load_plugin", {"name": "x", "wasm": "x.wasm", "quarantine_after": 0}, "quarantine_after"),
        ("load_plugin", {"name": "x", "wasm": "x.wasm", "on_error": "ignore"}, "ignore"),
        ("subscribe", {"log": "loud"}, "loud"),
        ("append_assistant", {"session": "s.jsonl", "tool_calls": [{"id": "c1"}]}, "name"),
        ("describe", {"extra": True}, "extra"),
        ("request", {"session": "s.jsonl", "step": -1}, "invalid"),
    ],
)
def test_invalid_params(host: PromptHost, method: str, params: dict, needle: str) -> None:
    e = raised(host.call, method, params)
    assert e.code == INVALID_PARAMS and e.kind == "invalid-params"
    assert needle in e.message


@pytest.mark.invalid_params
def test_params_not_an_object(host: PromptHost) -> None:
    e = raised(host.call, "render", [1])
    assert e.code == INVALID_PARAMS and e.kind == "invalid-params"


def test_plugin_load_errors(host: PromptHost, wasm, tmp_path: Path) -> None:
    e = raised(host.load_plugin, "missing", tmp_path / "missing.wasm")
    assert (e.code, e.kind, e.plugin, e.export) == (FAILED, "plugin", "missing", None)
    not_wasm = tmp_path / "not.wasm"
    not_wasm.write_bytes(b"\0asm but not really")
    e = raised(host.load_plugin, "garbage", not_wasm)
    assert (e.kind, e.plugin) == ("plugin", "garbage")
    e = raised(host.load_plugin, "bad-config", wasm("declare"), config={"bogus": 1})
    assert (e.kind, e.plugin, e.export) == ("plugin", "bad-config", "init")
    assert "bogus" in e.message
    # A failed load leaves nothing behind.
    assert host.plugins() == []


def test_plugin_call_errors(host: PromptHost, wasm) -> None:
    host.bind_scope("f")
    host.load_plugin("sec", wasm("declare"), scope="f", config={"sections": [{"name": "broken", "order": 1, "text": {"fail": "boom"}}]})
    e = raised(host.render, "f")
    assert (e.kind, e.plugin, e.export, e.scope, e.section) == ("plugin", "sec", "section-text", "f", "broken")
    assert "boom" in e.message
    host.dispose_scope("f")
    host.load_plugin("ctx", wasm("declare"), scope="f", config={"contexts": [{"name": "c", "order": 1, "text": {"fail": "no"}}]})
    e = raised(host.render, "f")
    assert (e.kind, e.plugin, e.export, e.context) == ("plugin", "ctx", "context-text", "c")
    host.dispose_scope("f")
    host.load_plugin("var", wasm("declare"), scope="f", config={"variables": [{"name": "v", "fail": "nope"}]})
    e = raised(host.assemble, "f")
    assert (e.kind, e.plugin, e.export, e.variable) == ("plugin", "var", "variable", "v")
    host.dispose_scope("f")
    host.load_plugin("lst", wasm("declare"), scope="f", config={"listener": {"key": "L", "steps": [{"fail": "stop"}]}})
    e = raised(host.render, "f")
    assert (e.kind, e.plugin, e.export, e.listener) == ("plugin", "lst", "on-assemble", "L")
    assert 'listener "L" (plugin "lst", scope "f") failed' in e.message
    host.dispose_scope("f")
    host.load_plugin("trap", wasm("hostile"), scope="f", config={"mode": "trap", "in": "tools"})
    e = raised(host.assemble, "f")
    # The provider's key names the entry (`hostile` declares its dynamic tools under its name).
    assert (e.kind, e.plugin, e.export, e.scope, e.tool_provider) == ("plugin", "trap", "tools", "f", "hostile")
    assert 'tool provider "hostile" (plugin "trap", scope "f") failed' in e.message


def test_plugin_deadline(host: PromptHost, wasm) -> None:
    host.bind_scope("slow")
    host.load_plugin("spin", wasm("hostile"), scope="slow", config={"mode": "loop", "in": "section"}, limits={"call_timeout_ms": 50})
    e = raised(host.render, "slow")
    assert (e.kind, e.plugin, e.export, e.section) == ("plugin", "spin", "section-text", "hostile")


def test_render_errors(host: PromptHost, wasm) -> None:
    host.bind_scope("r")
    host.load_plugin("rr", wasm("declare"), scope="r", config={"sections": [{"name": "s1", "order": 1, "text": "x {{nope}}"}]})
    e = raised(host.render, "r")
    assert (e.code, e.kind, e.scope, e.section, e.variable, e.plugin) == (FAILED, "render", "r", "s1", "nope", "rr")
    # A host variable without its fact has no value: the same kind.
    host.dispose_scope("r")
    host.load_plugin("rm", wasm("declare"), scope="r", config={"contexts": [{"name": "c1", "order": 1, "text": "on {{model}}"}]})
    e = raised(host.render, "r")
    assert (e.kind, e.context, e.variable, e.plugin) == ("render", "c1", "model", "rm")
    assert host.render("r", {"model": "m"}).context.endswith("on m")


def test_render_over_budget(open_host, wasm, tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text("[prompt]\nmax_prompt_bytes = 1000\n")
    host = open_host(config=config)
    host.load_plugin("big", wasm("declare"), config={"sections": [{"name": "big", "order": 1, "text": "x" * 2000}]})
    e = raised(host.render)
    assert (e.kind, e.section, e.plugin) == ("render", "big", "big")


def test_invariant_error(host: PromptHost, wasm) -> None:
    host.bind_scope("inv")
    host.load_plugin(
        "dup",
        wasm("declare"),
        scope="inv",
        config={
            "sections": [{"name": "s", "order": 1, "text": "x"}],
            "listener": {"key": "k", "steps": [{"next": True}, {"push_section": {"name": "s", "text": "again"}}]},
        },
    )
    e = raised(host.render, "inv")
    assert (e.kind, e.plugin, e.scope) == ("invariant", "dup", "inv")
    assert 'section name "s" is duplicated' in e.message


def test_assembly_error(host: PromptHost, wasm) -> None:
    host.bind_scope("asm")
    host.load_plugin(
        "two",
        wasm("declare"),
        scope="asm",
        config={
            "sections": [
                {"name": "a", "order": 1, "text": "A", "complete": True},
                {"name": "b", "order": 2, "text": "B", "complete": True},
            ]
        },
    )
    e = raised(host.render, "asm")
    assert (e.kind, e.scope) == ("assembly", "asm")


def test_assembly_error_tool_order(open_host, wasm, tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text('[prompt]\ntool_order = ["no_such_tool", "<unlisted-tools>"]\n')
    host = open_host(config=config)
    host.load_plugin("tools", wasm("declare"), config={"tools": [{"schemas": [{"name": "t", "description": "", "parameters": {}}]}]})
    e = raised(host.assemble)
    assert e.kind == "assembly"
    assert "no_such_tool" in e.message


def test_scope_errors(host: PromptHost) -> None:
    host.bind_scope("a")
    host.bind_scope("b", "a")
    e = raised(host.bind_scope, "a", "b")
    assert (e.kind, e.scope) == ("scope", "a")
    assert "cycle" in e.message
    e = raised(host.bind_scope, "b", "a")
    assert (e.kind, e.scope) == ("scope", "b")
    e = raised(host.bind_scope, "c", "nowhere")
    assert (e.kind, e.scope) == ("scope", "c")
    e = raised(host.bind_scope, "")
    assert (e.kind, e.scope) == ("scope", "")


def test_a_root_scope_is_not_rebound_under_a_parent(host: PromptHost, wasm) -> None:
    # docs/protocol.md, bind_scope: a scope is bound once; a re-bind is refused with kind `scope`.
    host.bind_scope("a")
    host.load_plugin("pa", wasm("declare"), scope="a", config={"sections": [{"name": "from-a", "order": 5, "text": "A"}]})
    host.bind_scope("x")
    e = raised(host.bind_scope, "x", "a")
    assert (e.kind, e.scope) == ("scope", "x")
    assert '"x" is a root scope' in e.message
    # x did not become a child of a: it sees none of a's sections.
    assert host.render("a").prompt == f"{IDENTITY}\n\nA"
    assert host.render("x").prompt == IDENTITY
    e = raised(host.bind_scope, "x")
    assert (e.kind, e.scope) == ("scope", "x")


def test_a_child_scope_is_not_rebound(host: PromptHost) -> None:
    host.bind_scope("a")
    host.bind_scope("y", "a")
    for parent in (None, "a"):
        e = raised(host.bind_scope, "y", parent)
        assert (e.kind, e.scope) == ("scope", "y")
        assert '"y" is a child of "a"' in e.message


def test_unknown_scope(host: PromptHost, tmp_path: Path) -> None:
    host.bind_scope("agent:1")
    e = raised(host.render, "agnet:1")
    assert (e.code, e.kind, e.scope, e.suggestion) == (FAILED, "unknown-scope", "agnet:1", "agent:1")
    e = raised(host.render, "zzzzzzzz")
    assert (e.kind, e.scope, e.suggestion) == ("unknown-scope", "zzzzzzzz", None)
    for fn, args in [
        (host.assemble, ("agnet:1",)),
        (host.dispose_scope, ("agnet:1",)),
        (host.load_plugin, ("p", tmp_path / "p.wasm")),
    ]:
        kwargs = {"scope": "agnet:1"} if fn == host.load_plugin else {}
        e = raised(fn, *args, **kwargs)
        assert e.kind == "unknown-scope" and e.suggestion == "agent:1"
    e = raised(host.step, tmp_path / "s.jsonl", scope="agnet:1")
    assert e.kind == "unknown-scope"
    # A step that failed wrote nothing, so a new log was not created.
    assert not (tmp_path / "s.jsonl").exists()


def test_session_errors(open_host, host: PromptHost, tmp_path: Path) -> None:
    e = raised(host.step, tmp_path)
    assert (e.kind, e.session) == ("session", str(tmp_path))
    not_a_log = tmp_path / "notes.txt"
    not_a_log.write_text("these are my notes\n")
    e = raised(host.step, not_a_log)
    assert (e.kind, e.session) == ("session", str(not_a_log))
    assert not_a_log.read_text() == "these are my notes\n"
    # retry needs a step of this server on the session.
    log = tmp_path / "s.jsonl"
    e = raised(host.retry, log)
    assert (e.kind, e.session) == ("session", str(log))
    # A log is held locked by the server that stepped on it.
    host.step(log, user="hi")
    other = open_host()
    e = raised(other.step, log, user="me too")
    assert (e.kind, e.session) == ("session", str(log))
    host.close_session(log)
    assert other.step(log, user="me too").header == "resume"


def test_conversation_errors(host: PromptHost, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    host.step(log, user="hi")
    e = raised(host.append_assistant, log)
    assert (e.kind, e.session) == ("conversation", str(log))
    e = raised(host.append_tool_result, log, "call_9", "result")
    assert (e.kind, e.session) == ("conversation", str(log))
    host.append_assistant(log, tool_calls=[ToolCall("call_1", "ls", {"path": "."}), ToolCall("call_2", "ls")])
    e = raised(host.append_assistant, log, tool_calls=[ToolCall("call_1", "again")])
    assert e.kind == "conversation" and "call_1" in e.message
    host.append_tool_result(log, "call_1", "a b")
    e = raised(host.append_tool_result, log, "call_1", "twice")
    assert e.kind == "conversation"
    e = raised(host.step, log)
    assert e.kind == "conversation" and "call_2" in e.message
    host.append_tool_result(log, "call_2", "c d", is_error=True)
    assert host.step(log).step == 1


def test_replay_errors(host: PromptHost, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    e = raised(host.request, log)
    assert e.kind == "replay"
    host.step(log, user="hi")
    e = raised(host.request, log, 5)
    assert (e.code, e.kind) == (FAILED, "replay")
    assert "completed steps: 0" in e.message
    assert host.request(log, 0).step == 0


def test_errors_keep_the_server_serving(host: PromptHost) -> None:
    for _ in range(20):
        raised(host.render, "nope")
    assert host.scopes() == []
    assert os.path.exists  # nothing leaked between tests
