"""Hostile plugins through each transport (in process above all: a plugin that traps,
panics, recurses without end, eats memory or spins shares this Python process with the host).
Each failure is a typed `PromptHostError` naming the plugin, the export and the scope; the
host, the other scopes and this process go on."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict

import pytest

from conftest import REPO
from prompt_host import PromptHost, PromptHostError

#: (mode, limits): each mode's failure in a section's text.
MODES = [
    ("trap", {}),
    ("panic", {}),
    ("recursion", {}),
    ("memory", {"memory_bytes": 16 << 20}),
    ("loop", {"call_timeout_ms": 200}),
]


@pytest.mark.parametrize("mode,limits", MODES, ids=[m for m, _ in MODES])
def test_a_misbehaving_plugin_fails_its_request_only(host: PromptHost, wasm, tmp_path: Path, mode: str, limits) -> None:
    pid = os.getpid()
    host.bind_scope("calm")
    host.load_plugin("calm", wasm("declare"), scope="calm", config={"sections": [{"name": "calm", "order": 1, "text": "Calm."}]})
    host.bind_scope("bad")
    host.load_plugin("bad", wasm("hostile"), scope="bad", config={"mode": mode, "in": "section"}, limits=limits)
    log = tmp_path / "s.jsonl"
    for attempt in range(2):
        with pytest.raises(PromptHostError) as raised:
            host.step(log, scope="bad", user="hi")
        e = raised.value
        assert (e.kind, e.plugin, e.export, e.scope, e.section) == ("plugin", "bad", "section-text", "bad", "hostile"), (
            attempt,
            e.message,
        )
        assert 'plugin "bad"' in e.message and 'scope "bad"' in e.message
    # Nothing of the failed steps reached the log but what a failed step leaves (no request).
    assert host.render("calm").prompt.endswith("Calm.")
    assert host.step(tmp_path / "calm.jsonl", scope="calm", user="hi").request["messages"][-1]["content"] == "hi"
    assert os.getpid() == pid


def test_a_plugin_failing_in_init_is_refused_at_load(host: PromptHost, wasm) -> None:
    with pytest.raises(PromptHostError) as raised:
        host.load_plugin("early", wasm("hostile"), config={"mode": "trap", "in": "init"})
    e = raised.value
    assert (e.kind, e.plugin, e.export) == ("plugin", "early", "init"), e.message
    assert host.plugins() == []


#: The hostile matrix the Rust entry-point tests run (every mode of the guest in `init` and
#: in every export, with the outcome each must have), recorded for the clients.
MATRIX = json.loads((REPO / "tests" / "golden" / "hostile-matrix.json").read_text())


def assert_one_paragraph_naming(e: PromptHostError, case: Dict[str, Any], scope: str) -> None:
    """What the Rust matrix asserts of each failure: one paragraph naming the plugin, the
    export (or, for a budget, the section and variable) and the scope."""
    label = f"{case['mode']}/{case['phase']}"
    message = e.message
    assert "\n" not in message.rstrip() and "\r" not in message, f"{label}: not one paragraph: {message!r}"
    assert "wasm backtrace" not in message, f"{label}: {message}"
    assert '"hostile"' in message, f"{label}: no plugin: {message}"
    assert scope in message, f"{label}: no scope {scope}: {message}"
    assert e.kind is not None, f"{label}: no kind: {message}"
    if case["expect"] == "fails-budget":
        assert "would exceed max_" in message and 'variable "amp" is from plugin "hostile"' in message, f"{label}: {message}"
    else:
        assert f'export "{case["export"]}"' in message, f"{label}: no export: {message}"
        assert (e.plugin, e.export, e.scope) == ("hostile", case["export"], scope), f"{label}: {e.data}"


def test_the_hostile_matrix(host: PromptHost, wasm) -> None:
    """Every case of the matrix on one host, each in a scope of its own, next to a benign
    scope whose prompt must stay byte for byte the same; the host (and, in process, this
    Python process) goes on."""
    pid = os.getpid()
    host.bind_scope("agent:ok")
    host.load_plugin("good", wasm("declare"), scope="agent:ok", config=MATRIX["good_config"])
    baseline = host.render("agent:ok").prompt
    for index, case in enumerate(MATRIX["cases"]):
        label = f"{case['mode']}/{case['phase']}"
        scope = f"agent:h{index}"
        host.bind_scope(scope)
        try:
            host.load_plugin("hostile", wasm("hostile"), scope=scope, config=case["config"], limits=case["limits"])
        except PromptHostError as e:
            assert case["expect"] == "fails-init", f"{label}: load failed: {e.message}"
            assert_one_paragraph_naming(e, case, scope)
        else:
            assert case["expect"] != "fails-init", f"{label}: init should fail"
            try:
                host.render(scope)
            except PromptHostError as e:
                assert case["expect"] != "ok", f"{label}: {e.message}"
                assert_one_paragraph_naming(e, case, scope)
            else:
                assert case["expect"] == "ok", f"{label}: rendering should fail"
        assert host.render("agent:ok").prompt == baseline, label
        host.dispose_scope(scope)
    assert len(MATRIX["cases"]) == 168
    assert os.getpid() == pid
