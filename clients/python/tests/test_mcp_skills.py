"""MCP skills over ``serve``: a real server offering the Skills extension (FastMCP's skills
provider on the official Python SDK, ``tests/fixtures/mcp-skills/server.py``), its index in
``mcp_status`` and a body read by name with ``mcp_skill``, checked against its digest; a
tampered body is refused with kind ``mcp-skill``."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest
from conftest import REPO, mcp_config

from prompt_host import McpSkillBody, McpSkillEntry, PromptHostError

FIXTURE = REPO / "tests" / "fixtures" / "mcp-skills"


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_a_skill_s_body_is_read_verified_and_a_tampered_one_refused(open_host, wasm, tmp_path: Path) -> None:
    try:
        import fastmcp.skills.provider  # noqa: F401
    except ImportError as e:
        pytest.fail(f"the skills server needs FastMCP ({e}): pip install -r tests/fixtures/mcp-skills/requirements.txt")
    root = tmp_path / "skills"
    shutil.copytree(FIXTURE / "skills", root)
    config = mcp_config(
        tmp_path,
        wasm,
        f"""
[[mcp]]
name = "docs"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(FIXTURE / "server.py"))}, {json.dumps(str(root))}, "--tamper", "code-review"]
scope = "agent"
timeout_ms = 20000
""",
    )
    host = open_host(config=config)
    status = host.mcp_status(wait_ms=30000)[0]
    assert [s.name for s in status.skills] == ["code-review", "release-notes"]
    notes = (root / "release-notes" / "SKILL.md").read_bytes()
    entry = status.skills[1]
    assert isinstance(entry, McpSkillEntry)
    assert (entry.uri, entry.digest, entry.files, entry.size) == (
        "skill://release-notes/SKILL.md",
        digest(notes),
        1,
        len(notes),
    )

    body = host.mcp_skill("docs", "release-notes", scope="agent")
    assert isinstance(body, McpSkillBody)
    assert body.text.encode() == notes
    assert (body.digest, body.verified, body.skill) == (digest(notes), True, entry)

    with pytest.raises(PromptHostError) as refused:
        host.mcp_skill("docs", "code-review", scope="agent")
    assert refused.value.kind == "mcp-skill"
    review = (root / "code-review" / "SKILL.md").read_bytes()
    assert str(refused.value).startswith(
        'mcp-client(docs): skill "code-review" refused: skill://code-review/SKILL.md has digest sha256:'
    )
    assert str(refused.value).endswith(f"the manifest says {digest(review)}")

    with pytest.raises(PromptHostError) as elsewhere:
        host.mcp_skill("docs", "release-notes")
    assert str(elsewhere.value) == (
        'mcp-client(docs): no such MCP server in the global scope (it is connected in scope "agent")'
    )
