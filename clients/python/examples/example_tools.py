"""What the example loops share: finding the server and the plugins, the prompt they
assemble, and the agent's tools on a fake file system."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from prompt_host import PromptHost, StepResult

REPO = Path(__file__).resolve().parents[3]

#: The tools the `declare` plugin registers, as prompt-host passes them to every route.
TOOLS: List[Dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file of the project.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "list_dir",
        "description": "List a directory of the project.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
]

FILES = {
    "README.md": "# prompt-host\nAssembles an LLM agent's system prompt from WebAssembly plugins.",
    "Cargo.toml": '[workspace]\nmembers = ["host", "tests"]',
}


def locate(binary: Optional[str], guests: Optional[Path]) -> Tuple[Optional[str], Path]:
    """The server (``binary``, else ``PROMPT_HOST_BIN``, else this repository's debug
    build, else ``prompt-host`` on PATH) and the plugin directory (``guests``, else
    ``PROMPT_HOST_GUESTS``, else this repository's build of the example plugins)."""
    if binary is None and not os.environ.get("PROMPT_HOST_BIN"):
        built = REPO / "target" / "debug" / "prompt-host"
        binary = str(built) if built.exists() else None
    found = guests or os.environ.get("PROMPT_HOST_GUESTS") or REPO / "target" / "guests" / "wasm32-wasip2" / "release"
    return binary, Path(found)


def deploy(host: PromptHost, guests: Path, scope: str) -> None:
    """The agent's prompt: a rule naming the working directory and the model, and the
    tools."""
    host.bind_scope(scope)
    host.load_plugin(
        "project",
        guests / "declare.wasm",
        scope=scope,
        config={
            "sections": [{"name": "rules", "order": 100, "text": "Work in {{cwd}}. You run on {{model}}."}],
            "tools": [{"schemas": TOOLS}],
        },
    )


def arguments_of(text: str) -> Dict[str, Any]:
    """A tool call's arguments, from the JSON text the model wrote."""
    value = json.loads(text or "{}")
    return value if isinstance(value, dict) else {}


def run_tool(name: str, arguments: Mapping[str, Any]) -> Tuple[str, bool]:
    """Run one of the agent's tools on the fake file system: ``(content, is_error)``."""
    path = str(arguments.get("path", ""))
    if name == "read_file":
        if path in FILES:
            return FILES[path], False
        return f"no such file: {path}", True
    if name == "list_dir":
        return "\n".join(sorted(FILES)), False
    return f"no tool {name}", True


#: The user turns every route's loop takes.
QUESTIONS = ["What does the README say?", "What else is in the project?"]


@dataclass
class Transcript:
    """What happened, for the reader (and the tests that run the examples)."""

    steps: List[StepResult] = field(default_factory=list)
    answers: List[str] = field(default_factory=list)
    tool_calls: List[str] = field(default_factory=list)
    #: The bodies the provider received, byte for byte.
    bodies: List[bytes] = field(default_factory=list)


def converse(host: PromptHost, log: str, turn: Callable[[str], str], out: Transcript) -> None:
    """Put each of `QUESTIONS` to ``turn`` (one user turn through a route's SDK), then
    check that the last request can be rebuilt from the log alone."""
    for question in QUESTIONS:
        print(f"user: {question}")
        print(f"assistant: {turn(question)}")
    assert host.request(log).request == out.steps[-1].request


def command_line(main: Callable[[Optional[str], Optional[Path]], Transcript], doc: Optional[str]) -> None:
    """Run an example loop's ``main`` from the command line (``--bin``, ``--guests``) and
    sum up what happened."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--bin", help="the prompt-host executable")
    parser.add_argument("--guests", type=Path, help="the directory of the example plugins (*.wasm)")
    args = parser.parse_args()
    transcript = main(args.bin, args.guests)
    print(
        f"\n{len(transcript.answers)} answers, {len(transcript.tool_calls)} tool calls, "
        f"{len(transcript.steps)} steps, {len(transcript.bodies)} provider requests"
    )
