"""Hostile plugins through each transport (in process above all: a plugin that traps,
panics, recurses without end, eats memory or spins shares this Python process with the host).
Each failure is a typed `PromptHostError` naming the plugin, the export and the scope; the
host, the other scopes and this process go on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
