"""A conversation through an official SDK to a recording stand-in for the provider: every
step's request goes to the SDK's ``create(**request)``, and each body the provider received
is kept beside the step it came from, for the checks of `check_bodies`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import anthropic
import openai

from conftest import deploy_rules
from fake_provider import FakeProvider, Recorded  # examples/, on the path by conftest
from prompt_host import PromptHost, Replay, StepResult
from prompt_host.routes import anthropic_messages, openai_chat, openai_responses
from sdk_support import sdk_body, undeclared_in_request, validate_request

SCOPE = "agent:routes"


PATHS = {
    "chat-completions": "/v1/chat/completions",
    "anthropic-messages": "/v1/messages",
    "openai-responses": "/v1/responses",
}


def deploy(host: PromptHost, wasm: Callable[[str], str]) -> None:
    deploy_rules(host, wasm, SCOPE, "routes")


def sdk_call(route: str, provider: FakeProvider) -> Callable[[StepResult], Any]:
    """The route's official SDK client, as a function of a step: ``create(**request)``."""
    if route == "chat-completions":
        chat = openai.OpenAI(base_url=provider.openai_base_url, api_key="test", max_retries=0)
        return lambda step: chat.chat.completions.create(**openai_chat(step))
    if route == "anthropic-messages":
        claude = anthropic.Anthropic(base_url=provider.url, api_key="test", max_retries=0)
        return lambda step: claude.messages.create(**anthropic_messages(step))
    responses = openai.OpenAI(base_url=provider.openai_base_url, api_key="test", max_retries=0)
    return lambda step: responses.responses.create(**openai_responses(step))


@dataclass
class Conversation:
    """One session log, one route, one SDK. ``sent`` pairs each step whose request went to
    the provider with the body the provider received."""

    host: PromptHost
    log: str
    route: str
    provider: FakeProvider
    steps: List[StepResult] = field(default_factory=list)
    sent: List[Tuple[StepResult, Recorded]] = field(default_factory=list)
    _call: Optional[Callable[[StepResult], Any]] = None

    def __post_init__(self) -> None:
        self._call = sdk_call(self.route, self.provider)

    def step(self, **kw: Any) -> StepResult:
        r = self.host.step(self.log, scope=SCOPE, **kw)
        self.steps.append(r)
        return r

    def retry(self, **kw: Any) -> StepResult:
        r = self.host.retry(self.log, **kw)
        self.steps.append(r)
        return r

    def send(self, step: StepResult) -> Any:
        """The SDK's ``create(**request)``; its response object (or its exception)."""
        assert self._call is not None
        n = len(self.provider.requests)
        try:
            return self._call(step)
        finally:
            assert len(self.provider.requests) == n + 1, "the SDK sent no request, or more than one"
            self.sent.append((step, self.provider.requests[n]))

    def lines(self) -> int:
        return len(Path(self.log).read_bytes().splitlines())


def check_bodies(conv: Conversation) -> None:
    """Each body the provider received is the step's request exactly (after the SDK's own
    serialisation: `sdk_support.sdk_body`), validates against the SDK's request TypedDict,
    and has no key those TypedDicts do not declare."""
    assert conv.sent
    for step, recorded in conv.sent:
        assert recorded.path == PATHS[conv.route]
        assert recorded.headers.get("content-type") == "application/json"
        assert recorded.body == sdk_body(conv.route, dict(step.request)), (
            f"step {step.step}: the body the provider received differs from the request\n"
            f"received: {recorded.body.decode()}\nrequest:  {sdk_body(conv.route, dict(step.request)).decode()}"
        )
        body = json.loads(recorded.body)
        assert body == step.request
        validate_request(conv.route, body)
        assert undeclared_in_request(conv.route, body) == [], f"step {step.step}"


def check_replays(conv: Conversation, wire: Any, other: Optional[PromptHost] = None) -> None:
    """``request`` (replay) of every step equals what the step returned: as values, and as
    the JSON text the server wrote; and, from the log alone, in ``other`` (another server
    process, untraced) too."""
    for s in conv.steps:
        assert conv.host.request(conv.log, s.step) == Replay(s.step, s.request)
    if other is not None:
        assert conv.host.close_session(conv.log) is True  # the log is held by one process at a time
        for s in conv.steps:
            assert other.request(conv.log, s.step) == Replay(s.step, s.request)
    texts: Dict[str, Dict[int, str]] = {"step": {}, "retry": {}, "request": {}}
    for m in wire.responses():
        method = wire.methods.get(m["id"])
        if method in texts and "result" in m:
            texts[method][m["result"]["step"]] = json.dumps(m["result"]["request"])
    stepped = {**texts["step"], **texts["retry"]}
    assert {n: stepped[n] for n in texts["request"]} == texts["request"]
    assert set(texts["request"]) == {s.step for s in conv.steps}
