"""Fixtures: the host over each transport, the example plugins, and a wire recorder that
validates every message the server sends against ``protocol/prompt-host.schema.json``.

Every test that takes ``host``, ``open_host`` or ``open_async_host`` runs twice, with the
same expectations: over ``serve`` (a ``prompt-host serve`` child process) and in process
(`InProcessHost`, the wheel's native module). ``PROMPT_HOST_TRANSPORTS`` (``serve``,
``in-process``, comma-separated) narrows the run; the in-process runs are skipped, with the
reason in the summary, when the native module is not installed. A test that stops or kills
the server's process is marked ``serve_only``.

The binary is ``PROMPT_HOST_BIN``, else ``prompt-host`` on ``PATH`` (the wheel's command in
its virtual environment), else ``<repo>/target/debug/prompt-host``
(``cargo build -p prompt-host-cli``); the plugins are in ``PROMPT_HOST_GUESTS`` or
``<repo>/target/guests/wasm32-wasip2/release`` (built by ``cargo test`` or by
``cd guest-examples && CARGO_TARGET_DIR=../target/guests cargo build --release --target
wasm32-wasip2``).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import sys

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from prompt_host import AsyncInProcessHost, AsyncPromptHost, InProcessHost, PromptHost, native_available

REPO = Path(__file__).resolve().parents[3]
#: The examples, importable by the tests (their fake provider, their loops).
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import fake_provider  # noqa: E402 (examples/, on the path from here on)

#: Provider replies checked against the official SDKs' response models (`reply_models`):
#: every one the fake provider's builders return or its script holds, before it is used.
REPLIES_CHECKED = [0]
try:
    from reply_models import check_reply
except ImportError as e:  # the SDKs need Python 3.10 or newer; the route tests skip without them
    REPLIES_UNCHECKED: Optional[str] = f"{e}"
else:
    REPLIES_UNCHECKED = None

    def _count_and_check(reply: Any) -> None:
        check_reply(reply)
        REPLIES_CHECKED[0] += 1

    fake_provider.check_replies_with(_count_and_check)

SCHEMA_PATH = REPO / "protocol" / "prompt-host.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text())
SCHEMA_ID = SCHEMA["$id"]
_REGISTRY = Registry().with_resource(SCHEMA_ID, Resource.from_contents(SCHEMA))
Draft202012Validator.check_schema(SCHEMA)
ROOT_VALIDATOR = Draft202012Validator(SCHEMA, registry=_REGISTRY)


#: The two tools the conversation and route tests' deployment declares.
TOOLS_DECLARED = [
    {"name": "ls", "description": "List a directory.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
]


def deploy_rules(host: PromptHost, wasm: Callable[[str], str], scope: str, name: str) -> None:
    """A rule that names the working directory and the model (a change of either fact
    changes the system prompt), a runtime-context snapshot, and two tools: the `declare`
    plugin loaded as ``name`` into ``scope``."""
    host.bind_scope(scope)
    host.load_plugin(
        name,
        wasm("declare"),
        scope=scope,
        config={
            "sections": [{"name": "rules", "order": 100, "text": "Work in {{cwd}}. You run on {{model}}."}],
            "contexts": [{"name": "sandbox", "order": 10, "text": "Sandbox: read-only."}],
            "tools": [{"schemas": TOOLS_DECLARED}],
        },
    )


def mcp_config(tmp_path: Path, wasm: Callable[[str], str], servers: str) -> Path:
    """A host.toml with the MCP instruction provider, the scope `agent` and ``servers``
    (``[[mcp]]`` tables)."""
    config = tmp_path / "host.toml"
    config.write_text(
        f"""
[host]
mcp_provider = {json.dumps(wasm("mcp-instructions"))}

[[scope]]
name = "agent"

{servers}
"""
    )
    return config


def validator_for(pointer: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"{SCHEMA_ID}#{pointer}"}, registry=_REGISTRY)


def _escape(token: str) -> str:
    """A JSON Pointer reference token (RFC 6901): ``$/cancelRequest`` -> ``$~1cancelRequest``."""
    return token.replace("~", "~0").replace("/", "~1")


RESULT_VALIDATORS = {
    m: validator_for(f"/$defs/results/properties/{_escape(m)}") for m in SCHEMA["$defs"]["results"]["properties"]
}
PARAMS_VALIDATORS = {
    m: validator_for(f"/$defs/params/properties/{_escape(m)}") for m in SCHEMA["$defs"]["params"]["properties"]
}


def binary_path() -> Path:
    found = os.environ.get("PROMPT_HOST_BIN") or shutil.which("prompt-host")
    path = Path(found) if found else REPO / "target" / "debug" / "prompt-host"
    if not path.exists():
        pytest.fail(f"prompt-host binary not found at {path}: run `cargo build -p prompt-host-cli` or set PROMPT_HOST_BIN")
    return path


def guests_dir() -> Path:
    path = Path(os.environ.get("PROMPT_HOST_GUESTS") or REPO / "target" / "guests" / "wasm32-wasip2" / "release")
    if not (path / "declare.wasm").exists():
        pytest.fail(
            f"example plugins not found in {path}: run `cd guest-examples && CARGO_TARGET_DIR=../target/guests "
            "cargo build --release --target wasm32-wasip2` or set PROMPT_HOST_GUESTS"
        )
    return path


def _errors(validator: Draft202012Validator, instance: Any) -> List[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(instance)]


#: Messages received and validated in this run, over every Wire.
VALIDATED = [0]


class Wire:
    """A ``trace`` hook: records every message both ways and validates each received one
    against the schema (the root, and the result of a response against its method's result
    schema); sent params are checked against their method's params schema."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: List[Any] = []
        self.received: List[Any] = []
        self.methods: Dict[Any, str] = {}
        self.errors: List[str] = []
        self.send_violations: List[str] = []
        self._arrivals: "queue.Queue[Any]" = queue.Queue()

    def __call__(self, direction: str, message: Any) -> None:
        with self.lock:
            if direction == "send":
                self.sent.append(message)
                method = message.get("method")
                if "id" in message:
                    self.methods[message["id"]] = method
                validator = PARAMS_VALIDATORS.get(method)
                if validator is not None:
                    problems = _errors(validator, message.get("params", {}))
                    if problems:
                        self.send_violations.append(f"{method}: {problems}")
                return
            if direction == "recv-invalid":
                self.errors.append(f"a line that is not JSON: {message!r}")
                return
            self.received.append(message)
            VALIDATED[0] += 1
            self._check(message)
        self._arrivals.put(message)

    def _check(self, message: Any) -> None:
        problems = _errors(ROOT_VALIDATOR, message)
        if problems:
            self.errors.append(f"schema: {json.dumps(message)[:2000]}: {problems}")
            return
        for item in message if isinstance(message, list) else [message]:
            if "result" in item:
                method = self.methods.get(item["id"])
                validator = RESULT_VALIDATORS.get(method) if method else None
                if validator is not None:
                    problems = _errors(validator, item["result"])
                    if problems:
                        self.errors.append(f"result of {method}: {json.dumps(item)[:2000]}: {problems}")

    def validated(self) -> int:
        with self.lock:
            return len(self.received)

    def wait_for(self, predicate: Callable[[Any], bool], timeout: float = 30.0) -> Any:
        """The first message received from now on (or already queued) that matches."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no matching message within the timeout")
            try:
                message = self._arrivals.get(timeout=left)
            except queue.Empty:
                continue
            if predicate(message):
                return message

    def responses(self) -> List[Dict[str, Any]]:
        with self.lock:
            out = []
            for m in self.received:
                for item in m if isinstance(m, list) else [m]:
                    if "id" in item:
                        out.append(item)
            return out

    def notifications(self) -> List[Dict[str, Any]]:
        with self.lock:
            return [m for m in self.received if isinstance(m, dict) and "id" not in m]

    def assert_clean(self, allow_invalid_params: bool = False) -> None:
        assert not self.errors, "messages that fail protocol/prompt-host.schema.json:\n" + "\n".join(self.errors)
        if not allow_invalid_params:
            assert not self.send_violations, "requests this suite sent that fail the params schema:\n" + "\n".join(
                self.send_violations
            )


@pytest.fixture(scope="session")
def bin_path() -> Path:
    return binary_path()


@pytest.fixture(scope="session")
def guests() -> Path:
    return guests_dir()


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for every server of the run, so each plugin compiles once."""
    return tmp_path_factory.mktemp("compile-cache")


@pytest.fixture
def wire(request: pytest.FixtureRequest) -> Any:
    w = Wire()
    yield w
    w.assert_clean(allow_invalid_params=request.node.get_closest_marker("invalid_params") is not None)


@pytest.fixture
def server_env(cache_dir: Path) -> Dict[str, str]:
    return {"PROMPT_HOST_CACHE_DIR": str(cache_dir)}


SERVE, IN_PROCESS = "serve", "in-process"
TRANSPORTS = [t.strip() for t in os.environ.get("PROMPT_HOST_TRANSPORTS", f"{SERVE},{IN_PROCESS}").split(",") if t.strip()]


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    """How the test reaches the host: ``serve`` or ``in-process``."""
    if request.param == IN_PROCESS:
        if request.node.get_closest_marker("serve_only") is not None:
            pytest.skip("stops or kills the server's process: over serve only")
        if not native_available():
            pytest.skip("the native module is not installed (build the wheel: README 'Install')")
    return str(request.param)


def _client_args(transport: str, bin_path: Path, server_env: Dict[str, str], wire: Wire, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """One test's options for either client: the binary and the environment for a server
    process; the compile cache for the in-process host."""
    kwargs.setdefault("trace", wire)
    env = {**server_env, **kwargs.pop("env", {})}
    if transport == IN_PROCESS:
        kwargs.pop("binary", None)
        kwargs.setdefault("cache_dir", env.get("PROMPT_HOST_CACHE_DIR"))
    else:
        kwargs.setdefault("binary", bin_path)
        kwargs["env"] = env
    return kwargs


@pytest.fixture
def open_host(transport: str, bin_path: Path, server_env: Dict[str, str], wire: Wire):
    """A factory of sync clients over the test's transport (traced by ``wire``), all closed
    after the test."""
    hosts: List[PromptHost] = []

    def start(**kwargs: Any) -> PromptHost:
        kwargs = _client_args(transport, bin_path, server_env, wire, kwargs)
        h = InProcessHost(**kwargs) if transport == IN_PROCESS else PromptHost(**kwargs)
        hosts.append(h)
        return h

    yield start
    for h in hosts:
        status = h.close()
        assert status == 0, f"prompt-host serve exited with {status}; stderr:\n{h.stderr_tail()}"


@pytest.fixture
def host(open_host) -> PromptHost:
    return open_host()


@pytest.fixture
def open_async_host(transport: str, bin_path: Path, server_env: Dict[str, str], wire: Wire):
    """A factory of (unstarted) async clients over the test's transport, traced by
    ``wire``; start them with ``async with``."""

    def make(**kwargs: Any) -> AsyncPromptHost:
        kwargs = _client_args(transport, bin_path, server_env, wire, kwargs)
        return AsyncInProcessHost(**kwargs) if transport == IN_PROCESS else AsyncPromptHost(**kwargs)

    return make


def run(coro: Any) -> Any:
    """Run a coroutine to completion (the async tests need no plugin)."""
    return asyncio.run(coro)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "invalid_params: the test sends params that do not fit the schema on purpose")
    config.addinivalue_line("markers", "serve_only: the test stops or kills the server's process (not run in process)")


IDENTITY = "You are an AI agent powered by the DeepSeek Harness SDK."
SNAPSHOT = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n"


@pytest.fixture
def wasm(guests: Path) -> Callable[[str], str]:
    """The path of an example plugin: ``wasm("declare")``."""

    def path(name: str) -> str:
        p = guests / f"{name.replace('-', '_')}.wasm"
        assert p.exists(), p
        return str(p)

    return path


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    terminalreporter.write_line(f"messages from the server validated against {SCHEMA_PATH.name}: {VALIDATED[0]}")
    if REPLIES_UNCHECKED is None:
        terminalreporter.write_line(f"provider replies validated by the SDKs' response models: {REPLIES_CHECKED[0]}")
    else:
        terminalreporter.write_line(f"provider replies NOT validated (the SDKs cannot be imported: {REPLIES_UNCHECKED})")
    timings = getattr(config, "_prompt_host_cancel_timings", None)
    if not timings:
        return
    terminalreporter.section("cancellation: from the cancel to the error")
    for label, elapsed, other in timings:
        extra = f"; a request on another scope meanwhile: {other * 1000:.1f} ms" if other is not None else ""
        terminalreporter.write_line(f"{label}: {elapsed * 1000:.1f} ms{extra}")
