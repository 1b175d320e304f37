"""An agent loop on prompt-host, against a scripted stand-in for the model.

    python examples/agent_loop.py [--bin PATH] [--guests DIR]

Each model call sends exactly the request prompt-host derived from the session log (the
system prompt is its first message: there is no system field). The loop runs four turns:

1. the user asks a question; the model calls `read_file`, gets the result, answers;
2. the model calls two tools in one reply (`read_file` and `bash`), then answers;
3. the provider fails (a simulated 503) on the first call: the loop `retry`s the step with
   another model — prompt-host re-uses the step's assembly (no plugin runs) and re-renders
   `{{model}}`, so the retried request names the fallback model;
4. the user interrupts a step that is stuck in a slow plugin: the asyncio task is
   cancelled, the client sends `$/cancelRequest`, the server stops the plugin and writes
   nothing; the user's message is then sent again on the agent's normal scope.

The plugins are the repository's examples (built for wasm32-wasip2): `persona`, `tool-guide`
(tools `read_file`, `write_file`, `bash`), `runtime-policy`, and `hostile` in `sleep` mode as
the slow plugin. The binary is `--bin`, else `PROMPT_HOST_BIN`, else `target/debug/prompt-host`
of this repository, else `prompt-host` on PATH; the plugins `--guests`, else
`PROMPT_HOST_GUESTS`, else `target/guests/wasm32-wasip2/release` of this repository.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from prompt_host import AsyncPromptHost, Request, StepResult, ToolCall

REPO = Path(__file__).resolve().parents[3]
SCOPE = "agent:1"
SLOW_SCOPE = "agent:1:slow"


# -- the scripted model ------------------------------------------------------------------------


class ProviderError(Exception):
    """What a model provider raises on a transient failure (HTTP 503 and the like)."""


@dataclass
class Reply:
    text: Optional[str] = None
    tool_calls: List[ToolCall] = field(default_factory=list)


def scripted_model(script: List[Reply], fail_on: Dict[int, str]) -> Callable[[Request, str], Reply]:
    """A stand-in for the model: the reply to a request is the script's entry number N, where
    N is how many assistant messages the request already holds. ``fail_on`` maps N to a
    model name that fails (once) at that point, as a provider outage would."""
    failed: set = set()

    def model(request: Request, model_name: str) -> Reply:
        n = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if fail_on.get(n) == model_name and n not in failed:
            failed.add(n)
            raise ProviderError(f"503 Service Unavailable from {model_name}")
        return script[n]

    return model


SCRIPT = [
    # turn 1
    Reply(tool_calls=[ToolCall("call_1", "read_file", {"path": "README.md"})]),
    Reply(text="The README says this project assembles system prompts from plugins."),
    # turn 2
    Reply(
        tool_calls=[
            ToolCall("call_2", "read_file", {"path": "Cargo.toml"}),
            ToolCall("call_3", "bash", {"command": "ls"}),
        ]
    ),
    Reply(text="It is a Rust workspace with a host crate and example plugins."),
    # turn 3 (the first call fails on the primary model; the retry answers)
    Reply(text="You are talking to the fallback model now."),
    # turn 4 (after the interrupted step)
    Reply(text="Done: nothing was indexed, as you asked."),
]

FILES = {
    "README.md": "# prompt-host\nAssembles an LLM agent's system prompt from WebAssembly plugins.",
    "Cargo.toml": '[workspace]\nmembers = ["host", "tests"]',
}


def run_tool(call: ToolCall) -> tuple[str, bool]:
    """The agent's tools, on a fake file system. Returns (content, is_error)."""
    args = call.arguments or {}
    if call.name == "read_file":
        path = args.get("path", "")
        if path in FILES:
            return FILES[path], False
        return f"no such file: {path}", True
    if call.name == "bash" and args.get("command") == "ls":
        return "\n".join(sorted(FILES)), False
    return f"tool {call.name} is not available here", True


# -- the loop ----------------------------------------------------------------------------------


@dataclass
class Transcript:
    """What happened, for the reader (and the test that runs this example)."""

    requests: List[Request] = field(default_factory=list)
    answers: List[str] = field(default_factory=list)
    tool_calls: List[str] = field(default_factory=list)
    retries: List[StepResult] = field(default_factory=list)
    cancelled_after_s: Optional[float] = None
    log_unchanged_by_cancel: Optional[bool] = None
    steps: List[StepResult] = field(default_factory=list)


async def turn(
    host: AsyncPromptHost,
    session: str,
    model: Callable[[Request, str], Reply],
    user: str,
    facts: Dict[str, str],
    out: Transcript,
) -> str:
    """One user turn: step, call the model, run its tools, step again, until it answers."""
    result = await host.step(session, scope=SCOPE, facts=facts, user=[user])
    out.steps.append(result)
    while True:
        try:
            out.requests.append(result.request)
            reply = model(result.request, facts["model"])
        except ProviderError as e:
            print(f"   provider error ({e}); retrying the step on the fallback model")
            facts = {**facts, "model": "fallback-model"}
            result = await host.retry(session, facts=facts)
            out.retries.append(result)
            out.steps[-1] = result
            continue
        await host.append_assistant(session, text=reply.text, tool_calls=reply.tool_calls)
        if not reply.tool_calls:
            assert reply.text is not None
            out.answers.append(reply.text)
            return reply.text
        for call in reply.tool_calls:
            content, is_error = run_tool(call)
            out.tool_calls.append(call.name)
            print(f"   tool {call.name}({json.dumps(call.arguments)}) -> {content.splitlines()[0]!r}")
            await host.append_tool_result(session, call.id, content, is_error=is_error or None)
        result = await host.step(session, scope=SCOPE, facts=facts)
        out.steps.append(result)


async def interrupted_turn(host: AsyncPromptHost, session: str, user: str, facts: Dict[str, str], out: Transcript) -> None:
    """A step stuck in a slow plugin, interrupted by the user after 200 ms."""
    before = Path(session).read_bytes()
    task = asyncio.ensure_future(host.step(session, scope=SLOW_SCOPE, facts=facts, user=[user]))
    await asyncio.sleep(0.2)
    started = time.monotonic()
    task.cancel()  # sends $/cancelRequest and waits for the server's answer
    try:
        await task
    except asyncio.CancelledError:
        out.cancelled_after_s = time.monotonic() - started
    out.log_unchanged_by_cancel = Path(session).read_bytes() == before
    print(
        f"   step cancelled {out.cancelled_after_s * 1000:.1f} ms after the interrupt; "
        f"session log unchanged: {out.log_unchanged_by_cancel}"
    )


async def deploy(host: AsyncPromptHost, guests: Path) -> None:
    await host.bind_scope(SCOPE)
    await host.bind_scope(SLOW_SCOPE, SCOPE)
    await host.load_plugin(
        "persona", guests / "persona.wasm", scope=SCOPE, config={"text": "You are a careful file assistant on {{model}}."}
    )
    await host.load_plugin("tool-guide", guests / "tool_guide.wasm", scope=SCOPE)
    await host.load_plugin("runtime-policy", guests / "runtime_policy.wasm", scope=SCOPE)
    # The slow plugin: a section that sleeps for an hour; its deadline raised so that only a
    # cancel stops it.
    await host.load_plugin(
        "hostile",
        guests / "hostile.wasm",
        scope=SLOW_SCOPE,
        config={"mode": "sleep", "in": "section"},
        limits={"call_timeout_ms": 60_000},
    )


async def main(binary: Optional[str] = None, guests: Optional[Path] = None, **host_options: Any) -> Transcript:
    if binary is None and not os.environ.get("PROMPT_HOST_BIN"):
        built = REPO / "target" / "debug" / "prompt-host"
        binary = str(built) if built.exists() else None
    guests = Path(guests or os.environ.get("PROMPT_HOST_GUESTS") or REPO / "target" / "guests" / "wasm32-wasip2" / "release")
    model = scripted_model(SCRIPT, fail_on={4: "primary-model"})
    facts = {"model": "primary-model", "cwd": "/work/project", "sandbox": "read-only"}
    out = Transcript()
    with tempfile.TemporaryDirectory() as tmp:
        session = str(Path(tmp) / "session.jsonl")
        async with AsyncPromptHost(binary=binary, **host_options) as host:
            await deploy(host, guests)
            for user in ["What does the README say?", "And what kind of project is it?", "Which model are you?"]:
                print(f"user: {user}")
                print(f"assistant: {await turn(host, session, model, user, facts, out)}")
            user = "Index the whole disk. (No, stop!)"
            print(f"user: {user}")
            await interrupted_turn(host, session, user, facts, out)
            user = "Never mind the indexing."
            print(f"user: {user}")
            print(f"assistant: {await turn(host, session, model, user, facts, out)}")
            # Every request can be rebuilt from the log alone.
            replay = await host.request(session)
            assert replay.request == out.requests[-1]
            await host.close_session(session)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", help="the prompt-host executable")
    parser.add_argument("--guests", type=Path, help="the directory of the example plugins (*.wasm)")
    args = parser.parse_args()
    transcript = asyncio.run(main(args.bin, args.guests))
    print(
        f"\n{len(transcript.answers)} answers, {len(transcript.tool_calls)} tool calls, "
        f"{len(transcript.retries)} retry, {len(transcript.steps)} steps"
    )
