"""An agent loop on the ``anthropic-messages`` route, through the official Anthropic SDK.

    python examples/anthropic_messages_loop.py [--bin PATH] [--guests DIR]

Each step's request goes to ``client.messages.create(**anthropic_messages(step))`` as it
is: the system prompt is the top-level ``system``, prompt-cache breakpoints are placed on it
and on the latest user turn (``step.cache.breakpoints``). The Message goes back to the log
with ``append_assistant(reply=...)`` — its content blocks are sent back exactly as they came,
the ``thinking`` block with its signature — and each tool result becomes a ``tool_result``
block (``is_error`` when the tool failed). The provider is `fake_provider.FakeProvider` on
127.0.0.1, answering with canned Messages. Needs ``pip install 'prompt-host[anthropic]'``
(the SDK), the server and the example plugins (see README.md).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, List, Optional

import anthropic
from anthropic.types import TextBlock, ToolUseBlock

from example_tools import command_line, converse, deploy, locate, run_tool, Transcript
from fake_provider import FakeProvider, Reply, anthropic_message
from prompt_host import PromptHost, RouteSpec
from prompt_host.routes import anthropic_messages

SCOPE = "agent:claude"
FACTS = {"model": "claude-opus-4-8", "cwd": "/srv/project"}
ROUTE: RouteSpec = {
    "name": "anthropic-messages",
    "options": {"max_tokens": 2048, "thinking": {"type": "adaptive"}},
}

SCRIPT: List[Reply] = [
    anthropic_message(
        [
            {"type": "thinking", "thinking": "The user asks about the README: read it.", "signature": "c2lnbmF0dXJlLTE="},
            {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "README.md"}},
        ],
        usage=(1200, 40, 0, 1150),
    ),
    anthropic_message(
        [{"type": "text", "text": "The README says the project assembles system prompts from plugins."}],
        usage=(1300, 20, 1150, 100),
    ),
    anthropic_message(
        [
            {"type": "text", "text": "Listing the project and reading the notes."},
            {"type": "tool_use", "id": "toolu_02", "name": "list_dir", "input": {"path": "."}},
            {"type": "tool_use", "id": "toolu_03", "name": "read_file", "input": {"path": "NOTES.md"}},
        ],
        usage=(1400, 60, 1250, 120),
    ),
    anthropic_message(
        [{"type": "text", "text": "There are README.md and Cargo.toml; NOTES.md does not exist."}],
        usage=(1500, 25, 1370, 90),
    ),
]


def turn(host: PromptHost, client: anthropic.Anthropic, log: str, question: str, out: Transcript) -> str:
    """One user turn: step, call the model, run its tools, step again, until it answers."""
    step = host.step(log, scope=SCOPE, facts=FACTS, route=ROUTE, user=[question])
    while True:
        out.steps.append(step)
        usage = step.cache.last_usage
        if usage is not None:
            print(f"   cache: {usage.cached_input_tokens} of {usage.input_tokens} input tokens read last time")
        message = client.messages.create(**anthropic_messages(step))
        # The Message as the provider sent it (`to_dict()`: only the fields it sent).
        host.append_assistant(log, reply=message.to_dict())
        calls = [b for b in message.content if isinstance(b, ToolUseBlock)]
        if not calls:
            answer = "\n\n".join(b.text for b in message.content if isinstance(b, TextBlock))
            out.answers.append(answer)
            return answer
        for call in calls:
            content, is_error = run_tool(call.name, call.input)
            out.tool_calls.append(call.name)
            print(f"   tool {call.name}({call.input}) -> {content.splitlines()[0]!r}")
            host.append_tool_result(log, call.id, content, is_error=is_error)
        step = host.step(log, scope=SCOPE, facts=FACTS, route=ROUTE)


def main(binary: Optional[str] = None, guests: Optional[Path] = None, **host_options: Any) -> Transcript:
    binary, plugins = locate(binary, guests)
    out = Transcript()
    with FakeProvider(SCRIPT) as provider, tempfile.TemporaryDirectory() as tmp:
        client = anthropic.Anthropic(base_url=provider.url, api_key="test", max_retries=0)
        log = str(Path(tmp) / "session.jsonl")
        with PromptHost(binary=binary, **host_options) as host:
            deploy(host, plugins, SCOPE)
            converse(host, log, lambda question: turn(host, client, log, question, out), out)
        out.bodies = [r.body for r in provider.requests]
    return out


if __name__ == "__main__":
    command_line(main, __doc__)
