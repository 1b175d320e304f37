"""The example agent loop runs (so it keeps working), its every message validated."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from pathlib import Path

from conftest import IDENTITY, Wire

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent_loop.py"


def load_example():
    spec = importlib.util.spec_from_file_location("agent_loop", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_agent_loop_example(bin_path: Path, guests: Path, server_env, wire: Wire, capsys) -> None:
    example = load_example()
    out = asyncio.run(example.main(str(bin_path), guests, env=server_env, trace=wire))
    printed = capsys.readouterr().out
    assert "provider error" in printed and "step cancelled" in printed
    assert len(out.answers) == 4
    assert out.tool_calls == ["read_file", "read_file", "bash"]
    # The retry re-rendered the prompt for the fallback model.
    assert len(out.retries) == 1
    system = out.retries[0].request["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith(f"{IDENTITY}\n\nYou are a careful file assistant on fallback-model.")
    assert "primary-model" not in system["content"]
    assert out.retries[0].commits == 1
    # The cancel: quick, and nothing written.
    assert out.cancelled_after_s is not None and out.cancelled_after_s < 1.0
    assert out.log_unchanged_by_cancel is True
    # The interrupted user message never reached the log; the one after it did.
    last = out.requests[-1]["messages"]
    users = [m["content"] for m in last if m["role"] == "user"]
    assert "Index the whole disk. (No, stop!)" not in users and users[-1] == "Never mind the indexing."
    assert {t["function"]["name"] for t in out.requests[-1]["tools"]} == {"read_file", "write_file", "bash"}
    assert wire.validated() > 20


def test_agent_loop_example_runs_as_a_script(bin_path: Path, guests: Path, server_env) -> None:
    import subprocess

    env = {**os.environ, **server_env, "PROMPT_HOST_BIN": str(bin_path), "PROMPT_HOST_GUESTS": str(guests)}
    done = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("4 answers, 3 tool calls, 1 retry, 6 steps")
