"""An agent loop on the ``openai-responses`` route, through the official OpenAI SDK.

    python examples/openai_responses_loop.py [--bin PATH] [--guests DIR]

Each step's request goes to ``client.responses.create(**openai_responses(step))`` as it is:
the system prompt is the top-level ``instructions``, the conversation is the ``input`` items
(sent whole every step: the log is the conversation, no ``previous_response_id``). The
Response goes back to the log with ``append_assistant(reply=...)`` — its ``output`` items,
the ``reasoning`` item included, are sent back exactly as they came — and each tool result
becomes a ``function_call_output`` item. The provider is `fake_provider.FakeProvider` on
127.0.0.1, answering with canned Responses. Needs ``pip install 'prompt-host[openai]'`` (the
SDK), the server and the example plugins (see README.md).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, List, Optional

import openai
from openai.types.responses import ResponseFunctionToolCall

from example_tools import arguments_of, command_line, converse, deploy, locate, run_tool, Transcript
from fake_provider import FakeProvider, Reply, responses_response
from prompt_host import PromptHost, RouteSpec
from prompt_host.routes import openai_responses

SCOPE = "agent:responses"
FACTS = {"model": "gpt-5.5", "cwd": "/srv/project"}
ROUTE: RouteSpec = {
    "name": "openai-responses",
    "options": {"max_output_tokens": 1024, "reasoning": {"effort": "medium", "summary": "auto"}, "store": False},
}

SCRIPT: List[Reply] = [
    responses_response(
        [
            {
                "type": "reasoning",
                "id": "rs_01",
                "summary": [{"type": "summary_text", "text": "The user asks about the README: read it."}],
                "encrypted_content": "ZW5jcnlwdGVkLXJlYXNvbmluZw==",
            },
            {
                "type": "function_call",
                "id": "fc_01",
                "call_id": "call_1",
                "name": "read_file",
                "arguments": '{"path":"README.md"}',
                "status": "completed",
            },
        ]
    ),
    responses_response(
        [
            {
                "type": "message",
                "id": "msg_01",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {
                        "type": "output_text",
                        "text": "The README says the project assembles system prompts from plugins.",
                        "annotations": [],
                    }
                ],
            }
        ]
    ),
    responses_response(
        [
            {
                "type": "function_call",
                "id": "fc_02",
                "call_id": "call_2",
                "name": "list_dir",
                "arguments": '{"path":"."}',
                "status": "completed",
            },
            {
                "type": "function_call",
                "id": "fc_03",
                "call_id": "call_3",
                "name": "read_file",
                "arguments": '{"path":"NOTES.md"}',
                "status": "completed",
            },
        ]
    ),
    responses_response(
        [
            {
                "type": "message",
                "id": "msg_02",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {
                        "type": "output_text",
                        "text": "There are README.md and Cargo.toml; NOTES.md does not exist.",
                        "annotations": [],
                    }
                ],
            }
        ]
    ),
]


def turn(host: PromptHost, client: openai.OpenAI, log: str, question: str, out: Transcript) -> str:
    """One user turn: step, call the model, run its tools, step again, until it answers."""
    step = host.step(log, scope=SCOPE, facts=FACTS, route=ROUTE, user=[question])
    while True:
        out.steps.append(step)
        response = client.responses.create(**openai_responses(step))
        # The Response as the provider sent it (`to_dict()`: only the fields it sent).
        host.append_assistant(log, reply=response.to_dict())
        calls = [item for item in response.output if isinstance(item, ResponseFunctionToolCall)]
        if not calls:
            out.answers.append(response.output_text)
            return response.output_text
        for call in calls:
            content, is_error = run_tool(call.name, arguments_of(call.arguments))
            out.tool_calls.append(call.name)
            print(f"   tool {call.name}({call.arguments}) -> {content.splitlines()[0]!r}")
            host.append_tool_result(log, call.call_id, content, is_error=is_error)
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
