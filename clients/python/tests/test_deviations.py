"""Where the server departs from PROTOCOL.md. Each test states what the protocol says and
is marked ``xfail(strict=True)``: it fails today, and the suite reports an unexpected pass
(an error) once the server is fixed, so the marker is then removed."""

from __future__ import annotations

import pytest

from prompt_host import PromptHost, PromptHostError

SPEC = "server deviation from PROTOCOL.md"


@pytest.mark.xfail(strict=True, reason=f"{SPEC}: a root scope can be re-bound as a child")
def test_rebinding_a_root_scope_under_a_parent_is_refused(host: PromptHost, wasm) -> None:
    # PROTOCOL.md, bind_scope: "a child of the bound scope parent (bound once ...)"; Errors:
    # kind `scope` when "bind_scope was refused (re-bind, cycle, unknown parent, empty key)".
    host.bind_scope("a")
    host.load_plugin("pa", wasm("declare"), scope="a", config={"sections": [{"name": "from-a", "order": 5, "text": "A"}]})
    host.bind_scope("x")
    try:
        host.bind_scope("x", "a")
    finally:
        # What the server did instead: x now inherits a's layer.
        print("render(x) after the re-bind:", host.render("x").prompt)
    pytest.fail("bind_scope x (root) then bind_scope x under a was accepted")


@pytest.mark.xfail(strict=True, reason=f"{SPEC}: re-binding a bound scope without a parent is accepted")
def test_rebinding_a_bound_scope_is_refused(host: PromptHost) -> None:
    host.bind_scope("a")
    host.bind_scope("y", "a")
    with pytest.raises(PromptHostError) as e:
        host.bind_scope("y")
    assert (e.value.kind, e.value.scope) == ("scope", "y")


@pytest.mark.xfail(strict=True, reason=f"{SPEC}: a tool provider's failure does not name the entry (tool_provider)")
def test_tool_provider_failure_names_the_entry(host: PromptHost, wasm) -> None:
    # PROTOCOL.md, Errors, kind `plugin`: fields "plugin, export, scope, section / context /
    # variable / tool_provider / listener (the entry)".
    host.load_plugin("trap", wasm("hostile"), config={"mode": "trap", "in": "tools"})
    with pytest.raises(PromptHostError) as e:
        host.assemble()
    assert (e.value.kind, e.value.plugin, e.value.export) == ("plugin", "trap", "tools")
    assert e.value.tool_provider is not None  # the provider's key


@pytest.mark.xfail(strict=True, reason=f"{SPEC}: a listener's failure does not name the entry (listener)")
def test_listener_failure_names_the_entry(host: PromptHost, wasm) -> None:
    host.load_plugin("lst", wasm("declare"), config={"listener": {"key": "L", "steps": [{"fail": "stop"}]}})
    with pytest.raises(PromptHostError) as e:
        host.assemble()
    assert (e.value.kind, e.value.plugin, e.value.export) == ("plugin", "lst", "on-assemble")
    assert e.value.listener == "L"


@pytest.mark.xfail(strict=True, reason=f"{SPEC}: a cancelled first step on a new log leaves the log's header behind")
def test_cancelled_first_step_writes_nothing(host: PromptHost, wasm, tmp_path) -> None:
    # PROTOCOL.md, Cancellation: "a cancelled step writes nothing to its log". The log is
    # opened (created, and its format header written) before the assembly starts, so a
    # cancelled first step leaves a one-line file behind. (On an existing log the bytes are
    # unchanged: test_cancel.py.)
    from prompt_host import RequestCancelled

    host.load_plugin("hostile", wasm("hostile"), config={"mode": "sleep", "in": "section"}, limits={"call_timeout_ms": 10000})
    log = tmp_path / "new.jsonl"
    with pytest.raises(RequestCancelled):
        host.step(log, user="hi", timeout=0.2)
    assert not log.exists() or log.read_bytes() == b""
