"""MCP servers while the host starts, over both transports: the first step waits for a
server that is still starting, so request 0 has its tools and its section and step 1 commits
nothing (with no ``mcp_status(wait_ms=…)`` call first); a server that is down is left out
with one warning saying the connection was refused, or fails every step when it is
``required``."""

from __future__ import annotations

import json
import logging
import socket
import sys
from pathlib import Path

import pytest

from conftest import IDENTITY, REPO, mcp_config
from prompt_host import InProcessHost, PromptHostError, native_available

MCP_SERVER = REPO / "tests" / "fixtures" / "mcp" / "server.py"


def refused(port: int) -> str:
    """Why the server ``down`` at ``port`` has nothing: rmcp's words for the request that
    failed, and the cause they leave out."""
    url = f"http://127.0.0.1:{port}/mcp"
    return (
        f"mcp-client(down): {url}: Client error: error sending request for url ({url}), "
        "when send discover request: connection refused"
    )


def fenced(server: str) -> str:
    return (
        f'Instructions from MCP server "{server}" (third-party text, not from the operator):\n'
        f"<<<\n{server} rules.\n>>>"
    )


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def down(port: int, rest: str = "") -> str:
    return f'[[mcp]]\nname = "down"\nurl = "http://127.0.0.1:{port}/mcp"\ntimeout_ms = 5000\n{rest}\n'


def test_the_first_step_has_every_tool_and_section_of_a_server_still_starting(open_host, wasm, tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP fixture server needs tests/fixtures/mcp/requirements.txt")
    config = mcp_config(
        tmp_path,
        wasm,
        f"""
[[mcp]]
name = "fx"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(MCP_SERVER))}, "--instructions", "fx rules.", "--start-delay", "1"]
scope = "agent"
timeout_ms = 20000
""",
    )
    host = open_host(config=config)
    log = tmp_path / "s.jsonl"
    first = host.step(log, scope="agent", facts={"model": "m1"}, user="hi")
    assert (first.step, first.commits) == (0, 1)
    assert [t["function"]["name"] for t in first.request["tools"]] == ["mcp__fx__add", "mcp__fx__echo"]
    assert first.request["messages"][0] == {"role": "system", "content": f"{IDENTITY}\n\n{fenced('fx')}"}
    second = host.step(log, scope="agent", facts={"model": "m1"}, user="again")
    assert (second.step, second.commits) == (1, 0)


def test_a_required_server_that_is_down_fails_every_step(open_host, wasm, tmp_path: Path) -> None:
    port = closed_port()
    host = open_host(config=mcp_config(tmp_path, wasm, down(port, "required = true\nstart_wait_ms = 1000")))
    log = tmp_path / "s.jsonl"
    for _ in range(2):
        with pytest.raises(PromptHostError) as e:
            host.step(log, facts={"model": "m1"}, user="hi")
        assert e.value.kind == "mcp"
        assert e.value.message == (
            'MCP server "down" (global) is required (required = true) and published nothing within 1000 ms of '
            f"its start: {refused(port)}"
        )
    assert not log.exists()


@pytest.mark.skipif(not native_available(), reason="the native module is not installed (build the wheel: README 'Install')")
def test_a_server_down_at_start_is_left_out_with_one_warning_in_process(wasm, cache_dir: Path, tmp_path: Path, caplog) -> None:
    port = closed_port()
    config = mcp_config(tmp_path, wasm, down(port))
    caplog.set_level(logging.WARNING, logger="prompt_host")
    with InProcessHost(config, cache_dir=cache_dir) as host:
        for _ in range(3):
            assert host.render().prompt == IDENTITY
    warnings = [r.getMessage() for r in caplog.records if r.name == "prompt_host"]
    assert warnings == [
        f'MCP server "down" (global): {refused(port)}; assembling without it'
    ]
