"""The plugins the wheel ships, found by name over both transports: a deployment that writes
``wasm = "persona"`` and ``mcp_provider = "mcp-instructions"``, and ``load_plugin`` with a
name, need no path and no Rust toolchain (.ci/run runs this suite from a virtual environment
whose PATH holds no cargo or rustc).

They run from an installed wheel, which carries ``prompt_host/plugins``; from a checkout the
package holds none, and they are skipped saying so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List

import pytest

from conftest import IN_PROCESS, REPO, mcp_config
from prompt_host import PromptHostError
from prompt_host.inprocess import PLUGINS_DIR

#: What scripts/package ships (SHIPPED_PLUGINS there).
SHIPPED = [
    "clock",
    "declare",
    "git-context",
    "mcp-instructions",
    "persona",
    "project-instructions",
    "redactor",
    "runtime-policy",
]


def shipped_names() -> List[str]:
    return sorted(p.name[: -len(".wasm")] for p in Path(PLUGINS_DIR).glob("*.wasm"))


@pytest.fixture
def shipped(transport: str, bin_path: Path) -> None:
    """Skips unless this installation ships plugins and the transport's host is this
    package's: in process, or over serve through the wheel's own ``prompt-host`` command."""
    if not shipped_names():
        pytest.skip(f"this installation ships no plugins ({PLUGINS_DIR} is empty: a checkout; scripts/package wheel builds the wheel)")
    if transport != IN_PROCESS:
        script = bin_path.read_bytes()[:4096]
        if b"prompt_host._cli" not in script:
            pytest.skip(f"the serve binary {bin_path} is not this wheel's prompt-host command")


def test_the_wheel_ships_the_plugins_any_deployment_can_use() -> None:
    if not shipped_names():
        pytest.skip(f"this installation ships no plugins ({PLUGINS_DIR} is empty: a checkout; scripts/package wheel builds the wheel)")
    assert shipped_names() == SHIPPED


def test_a_deployment_names_its_plugins_and_a_step_renders_them(shipped: None, open_host, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "AGENTS.md").write_text("Run the tests before a commit.\n")
    config = tmp_path / "host.toml"
    config.write_text(
        f"""
[[scope]]
name = "agent:1"

[[plugin]]
name = "persona"
wasm = "persona"
scope = "agent:1"
config = {{ text = "You review the code in {{{{cwd}}}}." }}

[[plugin]]
name = "project-instructions"
wasm = "project-instructions"
scope = "agent:1"
grants = {{ dirs = [{{ host = {json.dumps(str(repo))}, guest = "/project" }}] }}
config = {{ root = "/project", host_root = {json.dumps(str(repo))} }}
"""
    )
    host = open_host(config=config)
    host.load_plugin(
        "rules",
        "declare",
        scope="agent:1",
        config={"sections": [{"name": "rules", "order": 100, "text": "Work in {{cwd}}."}]},
    )
    prompt = host.render("agent:1", facts={"cwd": str(repo)}).prompt
    assert prompt == (
        "You are an AI agent powered by the DeepSeek Harness SDK.\n\n"
        f"You review the code in {repo}.\n\n"
        "Work in " + str(repo) + ".\n\n"
        "Instructions from the project's instruction files, outermost directory first; where "
        "they conflict, the later (nearer) file takes precedence.\n\n"
        "# From AGENTS.md\n"
        "Run the tests before a commit."
    )


def test_an_mcp_server_gets_the_shipped_instruction_provider_by_name(shipped: None, open_host, tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP fixture server needs tests/fixtures/mcp/requirements.txt")
    server = REPO / "tests" / "fixtures" / "mcp" / "server.py"
    config = mcp_config(
        tmp_path,
        lambda name: name,
        f"""
[[mcp]]
name = "fixture"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(server))}, "--instructions", "Use the echo tool."]
scope = "agent"
timeout_ms = 20000
""",
    )
    assert 'mcp_provider = "mcp-instructions"' in config.read_text()
    host = open_host(config=config)
    status = host.mcp_status(wait_ms=30000)[0]
    assert (status.state, status.plugin) == ("up", "mcp:fixture"), status
    prompt = host.render("agent").prompt
    assert 'Instructions from MCP server "fixture"' in prompt and "Use the echo tool." in prompt


def test_a_name_the_package_does_not_ship_says_where_it_looked(shipped: None, open_host) -> None:
    host = open_host()
    with pytest.raises(PromptHostError) as e:
        host.load_plugin("p", "persna")
    assert str(e.value) == (
        f'invalid params: wasm: no plugin named "persna": looked for persna.wasm in {PLUGINS_DIR} '
        f"(holds {', '.join(SHIPPED)}); a file is written as a path, e.g. ./persna"
    )
