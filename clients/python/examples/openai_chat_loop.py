"""An agent loop on the ``chat-completions`` route, through the official OpenAI SDK.

    python examples/openai_chat_loop.py [--bin PATH] [--guests DIR]

Each step's request goes to ``client.chat.completions.create(**openai_chat(step))`` as it
is; the completion goes back to the log with ``append_assistant(reply=...)``, each tool
call's result with ``append_tool_result``, and the next step's request carries them. The
provider is `fake_provider.FakeProvider` on 127.0.0.1, answering with canned completions: a
DeepSeek-style reply with ``reasoning_content`` and a tool call, two tool calls in one reply
(one of them fails), and text. Needs ``pip install 'prompt-host[openai]'`` (the SDK), the
server and the example plugins (see README.md).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, List, Optional

import openai
from openai.types.chat import ChatCompletionMessageFunctionToolCall

from example_tools import arguments_of, command_line, converse, deploy, locate, run_tool, Transcript
from fake_provider import FakeProvider, Reply, chat_completion
from prompt_host import PromptHost, RouteSpec
from prompt_host.routes import openai_chat

SCOPE = "agent:chat"
FACTS = {"model": "deepseek-v4", "cwd": "/srv/project"}
ROUTE: RouteSpec = {"name": "chat-completions", "options": {"max_completion_tokens": 1024, "temperature": 0.2}}

SCRIPT: List[Reply] = [
    chat_completion(
        reasoning_content="The user asks about the README: read it first.",
        tool_calls=[("call_1", "read_file", '{"path": "README.md"}')],
    ),
    chat_completion(content="The README says the project assembles system prompts from plugins."),
    chat_completion(
        content="Listing the project and reading the notes.",
        tool_calls=[("call_2", "list_dir", '{"path": "."}'), ("call_3", "read_file", '{"path": "NOTES.md"}')],
    ),
    chat_completion(content="There are README.md and Cargo.toml; NOTES.md does not exist."),
]


def turn(host: PromptHost, client: openai.OpenAI, log: str, question: str, out: Transcript) -> str:
    """One user turn: step, call the model, run its tools, step again, until it answers."""
    step = host.step(log, scope=SCOPE, facts=FACTS, route=ROUTE, user=[question])
    while True:
        out.steps.append(step)
        completion = client.chat.completions.create(**openai_chat(step))
        # The completion as the provider sent it (`to_dict()`: only the fields it sent).
        host.append_assistant(log, reply=completion.to_dict())
        message = completion.choices[0].message
        calls = [c for c in message.tool_calls or [] if isinstance(c, ChatCompletionMessageFunctionToolCall)]
        if not calls:
            answer = message.content or ""
            out.answers.append(answer)
            return answer
        for call in calls:
            content, is_error = run_tool(call.function.name, arguments_of(call.function.arguments))
            out.tool_calls.append(call.function.name)
            print(f"   tool {call.function.name}({call.function.arguments}) -> {content.splitlines()[0]!r}")
            host.append_tool_result(log, call.id, content, is_error=is_error)
        step = host.step(log, scope=SCOPE, facts=FACTS, route=ROUTE)


def main(binary: Optional[str] = None, guests: Optional[Path] = None, **host_options: Any) -> Transcript:
    binary, plugins = locate(binary, guests)
    out = Transcript()
    with FakeProvider(SCRIPT) as provider, tempfile.TemporaryDirectory() as tmp:
        client = openai.OpenAI(base_url=provider.openai_base_url, api_key="test", max_retries=0)
        log = str(Path(tmp) / "session.jsonl")
        with PromptHost(binary=binary, **host_options) as host:
            deploy(host, plugins, SCOPE)
            converse(host, log, lambda question: turn(host, client, log, question, out), out)
        out.bodies = [r.body for r in provider.requests]
    return out


if __name__ == "__main__":
    command_line(main, __doc__)
