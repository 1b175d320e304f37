"""The example loops, one per route: they run (in-process and as scripts), every body their
SDK sent is the step's request exactly, and they type-check under ``mypy --strict`` with
no cast and no ``type: ignore``."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# The SDKs need Python 3.10 or newer: on 3.9 the suite runs without these tests.
pytest.importorskip("openai", minversion="3")
pytest.importorskip("anthropic", minversion="2")

from conftest import EXAMPLES, Wire  # noqa: E402
from sdk_support import sdk_body, undeclared_in_request, validate_request  # noqa: E402

LOOPS = {
    "chat-completions": "openai_chat_loop.py",
    "anthropic-messages": "anthropic_messages_loop.py",
    "openai-responses": "openai_responses_loop.py",
}
SHARED = ["fake_provider.py", "example_tools.py"]
SRC = Path(__file__).resolve().parents[1] / "src"


def load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name[:-3], EXAMPLES / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("route", list(LOOPS))
def test_example_loop(route: str, bin_path: Path, guests: Path, server_env, wire: Wire, capsys) -> None:
    example = load(LOOPS[route])
    out = example.main(str(bin_path), guests, env=server_env, trace=wire)
    printed = capsys.readouterr().out
    assert "tool read_file" in printed and "NOTES.md" in printed
    assert out.answers == [
        "The README says the project assembles system prompts from plugins.",
        "There are README.md and Cargo.toml; NOTES.md does not exist.",
    ]
    assert out.tool_calls == ["read_file", "list_dir", "read_file"]
    assert len(out.steps) == 4 and len(out.bodies) == 4
    for step, body in zip(out.steps, out.bodies):
        assert step.route.name == route
        assert body == sdk_body(route, dict(step.request))
        validate_request(route, json.loads(body))
        assert undeclared_in_request(route, json.loads(body)) == []
    last = out.steps[-1].request
    if route == "chat-completions":
        tool = [m for m in last["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in tool][-1] == "Error: no such file: NOTES.md"
    elif route == "anthropic-messages":
        assert last["messages"][1]["content"][0]["type"] == "thinking"
        assert last["messages"][-1]["content"][-1]["is_error"] is True
        assert out.steps[-1].cache.last_usage is not None
    else:
        assert last["input"][1]["type"] == "reasoning"
        assert last["input"][-1] == {"type": "function_call_output", "call_id": "call_3", "output": "Error: no such file: NOTES.md"}
    assert wire.validated() > 10


@pytest.mark.parametrize("route", list(LOOPS))
def test_example_loop_runs_as_a_script(route: str, bin_path: Path, guests: Path, server_env) -> None:
    env = {**os.environ, **server_env, "PROMPT_HOST_BIN": str(bin_path), "PROMPT_HOST_GUESTS": str(guests)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / LOOPS[route])], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("2 answers, 3 tool calls, 4 steps, 4 provider requests")


def test_example_loops_type_check_strictly(tmp_path: Path) -> None:
    """``mypy --strict`` on the loops, what they import (the fake provider, the shared
    tools) and this client (``prompt_host.routes`` with the SDK types included):
    ``create(**openai_chat(step))`` and the others type-check as they are."""
    for name in LOOPS.values():
        text = (EXAMPLES / name).read_text()
        assert "cast(" not in text and "type: ignore" not in text, name
    done = subprocess.run(
        [
            sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "mypy"),
            *LOOPS.values(), *SHARED, str(SRC / "prompt_host"),
        ],
        cwd=EXAMPLES,
        env={**os.environ, "MYPYPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found in "), done.stdout
