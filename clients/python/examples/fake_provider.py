"""A stand-in for a model provider's HTTP API, for the example loops and the tests.

`FakeProvider` serves on 127.0.0.1 (a free port) from a thread, records every request it
receives — the path and the body exactly as the bytes arrived — and answers each with the
next canned reply of its script. A reply is a provider-shaped JSON body (see the builders
below: `chat_completion`, `anthropic_message`, `responses_response`) or a `Failure` (an HTTP
error status, as a provider outage answers). The official SDKs talk to it like to the real
API:

    with FakeProvider([chat_completion(content="Hello.")]) as provider:
        client = openai.OpenAI(base_url=provider.openai_base_url, api_key="test", max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])
        provider.requests[0].body  # the bytes the SDK sent

A reply is served as it was written, and the SDKs parse replies leniently; `check_replies_with`
installs a check that every reply built here or queued must pass first (the test suite's
validates each against the SDK's own response model).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

__all__ = [
    "Failure",
    "FakeProvider",
    "Recorded",
    "Reply",
    "anthropic_message",
    "chat_completion",
    "check_replies_with",
    "responses_response",
]


@dataclass(frozen=True)
class Failure:
    """An HTTP error answer (503 by default), once."""

    status: int = 503
    message: str = "the service is unavailable"


#: One canned answer: a JSON body (status 200) or a `Failure`.
Reply = Union[Mapping[str, Any], Failure]

#: A check of a JSON reply (raises to refuse it); see `check_replies_with`.
ReplyCheck = Callable[[Mapping[str, Any]], None]

_reply_check: List[Optional[ReplyCheck]] = [None]


def check_replies_with(check: Optional[ReplyCheck]) -> None:
    """Run ``check`` on every JSON reply the builders below return and on every one queued in
    a `FakeProvider`, before it is used: a reply it refuses (it raises) is never served. The
    test suite checks them against the official SDKs' response models; ``None`` turns the
    check off (the default)."""
    _reply_check[0] = check


_R = TypeVar("_R", Dict[str, Any], Reply)


def _checked(reply: _R) -> _R:
    check = _reply_check[0]
    if check is not None and not isinstance(reply, Failure):
        check(reply)
    return reply


@dataclass(frozen=True)
class Recorded:
    """One request the provider received."""

    method: str
    path: str
    #: The body, byte for byte as it arrived.
    body: bytes
    headers: Dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body)


class FakeProvider:
    """An HTTP server on 127.0.0.1 answering POSTs with the replies of ``script`` in order
    (any path: ``/v1/chat/completions``, ``/v1/messages``, ``/v1/responses``). Past the end
    of the script it answers 500. Use it as a context manager, or `start` and `close` it."""

    def __init__(self, script: Iterable[Reply] = ()) -> None:
        self._lock = threading.Lock()
        self._script: List[Reply] = [_checked(reply) for reply in script]
        self.requests: List[Recorded] = []
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> "FakeProvider":
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                status, answer = provider._record(
                    Recorded("POST", self.path, body, {k.lower(): v for k, v in self.headers.items()})
                )
                data = json.dumps(answer).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-provider", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> "FakeProvider":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- where the SDKs reach it ---------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: Anthropic's ``base_url`` (its SDK adds ``/v1/messages``)."""
        assert self._server is not None, "the provider is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: OpenAI's ``base_url``."""
        return self.url + "/v1"

    # -- the script ----------------------------------------------------------------------------

    def add(self, *replies: Reply) -> None:
        """Queue more replies."""
        checked = [_checked(reply) for reply in replies]
        with self._lock:
            self._script.extend(checked)

    @property
    def unused(self) -> int:
        """How many replies of the script are left."""
        with self._lock:
            return len(self._script)

    def _record(self, request: Recorded) -> Tuple[int, Any]:
        with self._lock:
            self.requests.append(request)
            if not self._script:
                return 500, {"error": {"type": "server_error", "message": "the fake provider's script has ended"}}
            reply = self._script.pop(0)
        if isinstance(reply, Failure):
            return reply.status, {"error": {"type": "overloaded_error", "message": reply.message}}
        return 200, dict(reply)


# -- provider-shaped replies ---------------------------------------------------------------------

_counter = [0]


def _next_id(prefix: str) -> str:
    _counter[0] += 1
    return f"{prefix}_{_counter[0]:04d}"


def chat_completion(
    *,
    content: Optional[str] = None,
    tool_calls: Sequence[Tuple[str, str, str]] = (),
    reasoning_content: Optional[str] = None,
    model: str = "fake-model",
    usage: Tuple[int, int, int] = (100, 20, 0),
) -> Dict[str, Any]:
    """An OpenAI chat completion (``POST /v1/chat/completions``): ``tool_calls`` are
    ``(id, name, arguments JSON text)``; ``reasoning_content`` as DeepSeek's thinking mode
    sends it; ``usage`` is ``(prompt, completion, cached prompt tokens)``."""
    message: Dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for id, name, arguments in tool_calls
        ]
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    prompt, completion, cached = usage
    return _checked({
        "id": _next_id("chatcmpl"),
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    })


def anthropic_message(
    content: Sequence[Mapping[str, Any]],
    *,
    model: str = "claude-opus-4-8",
    usage: Tuple[int, int, int, int] = (100, 20, 0, 0),
) -> Dict[str, Any]:
    """An Anthropic Message (``POST /v1/messages``) of content blocks (``text``,
    ``thinking`` with its ``signature``, ``tool_use``); ``usage`` is ``(input, output,
    cache read, cache creation tokens)``."""
    input_tokens, output_tokens, cache_read, cache_creation = usage
    stop = "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
    return _checked({
        "id": _next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [dict(b) for b in content],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_creation,
        },
    })


def responses_response(
    output: Sequence[Mapping[str, Any]],
    *,
    model: str = "fake-model",
    usage: Tuple[int, int, int] = (100, 20, 0),
) -> Dict[str, Any]:
    """An OpenAI Responses response (``POST /v1/responses``) of output items
    (``message``, ``function_call``, ``reasoning``); ``usage`` is ``(input, output, cached
    input tokens)``."""
    input_tokens, output_tokens, cached = usage
    return _checked({
        "id": _next_id("resp"),
        "object": "response",
        "created_at": 1700000000,
        "status": "completed",
        "model": model,
        "output": [dict(item) for item in output],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    })
