"""Every request is answered, even when the host fails inside: a panic while a method runs
is that request's ``internal`` error (code -32603) and the host goes on — over ``serve`` and
in process alike. And a host used from a process forked from its creator refuses at once
instead of waiting for threads that are not there.

The panic is injected by ``PROMPT_HOST_INJECT_PANIC`` (a debug build of the host honours it;
``.ci/run`` builds the wheel and the binary that way): no input is known to cause one."""

from __future__ import annotations

import os
import select
import time
from pathlib import Path
from typing import Any, Callable, Dict

import pytest

from prompt_host import INTERNAL, InProcessHost, PromptHost, PromptHostError, UsedAfterFork, native_available

VARIABLE = "PROMPT_HOST_INJECT_PANIC"
RULES = {"sections": [{"name": "rules", "order": 100, "text": "I am Ada."}]}


def fault_injection_in(transport: str) -> bool:
    """Whether the host of ``transport`` honours the variable (a debug build)."""
    if transport == "in-process":
        from prompt_host import _native

        return bool(getattr(_native, "FAULT_INJECTION", False))
    # The debug binary of the checkout, or the wheel's (built with PROFILE=dev by CI).
    return True


def make_host(transport: str, bin_path: Path, server_env: Dict[str, str], **kwargs: Any) -> PromptHost:
    if transport == "in-process":
        if not native_available():
            pytest.skip("the native module is not installed")
        return InProcessHost(cache_dir=server_env.get("PROMPT_HOST_CACHE_DIR"), **kwargs)
    # The server's environment is this process's (the injected variable included) and
    # server_env's.
    return PromptHost(binary=bin_path, env=server_env, **kwargs)


def require_injection(transport: str) -> None:
    if transport == "in-process" and not native_available():
        pytest.skip("the native module is not installed")
    if not fault_injection_in(transport):
        pytest.fail("the native module is a release build: build the wheel with PROFILE=dev to test the boundary")


@pytest.mark.parametrize("transport", ["serve", "in-process"])
def test_a_panic_in_a_method_is_that_requests_internal_error_and_the_host_goes_on(
    transport: str, bin_path: Path, server_env: Dict[str, str], wasm: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    require_injection(transport)
    monkeypatch.setenv(VARIABLE, "render")
    with make_host(transport, bin_path, server_env) as host:
        host.load_plugin("rules", wasm("declare"), config=RULES)
        with pytest.raises(PromptHostError) as e:
            host.render()
        assert e.value.code == INTERNAL and e.value.kind == "internal", e.value
        assert e.value.method == "render"
        assert str(e.value).startswith(
            "internal error: render failed inside the host (a panic injected at render (PROMPT_HOST_INJECT_PANIC))"
        ), e.value
        # The same host answers the next requests.
        assert host.describe().protocol
        assert "I am Ada." in [s.text for s in host.assemble().sections]


@pytest.mark.parametrize("transport", ["serve", "in-process"])
def test_a_panic_in_a_session_request_names_the_session_and_the_log_reads_back(
    transport: str,
    bin_path: Path,
    server_env: Dict[str, str],
    wasm: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    require_injection(transport)
    monkeypatch.setenv(VARIABLE, "request")
    session = tmp_path / "s.jsonl"
    with make_host(transport, bin_path, server_env) as host:
        host.load_plugin("rules", wasm("declare"), config=RULES)
        first = host.step(session, user=["hi"])
        with pytest.raises(PromptHostError) as e:
            host.request(session)
        assert e.value.code == INTERNAL and e.value.kind == "internal", e.value
        assert e.value.session == str(session), e.value
        assert f"internal error: request on session log {session} failed inside the host" in str(e.value)
        # The session's state was dropped and is read again from its log.
        host.append_assistant(session, text="hello")
        second = host.step(session, user=["again"])
        assert second.step == first.step + 1


def read_within(fd: int, seconds: float) -> bytes:
    """What arrives on ``fd`` until its end, or until ``seconds`` have passed."""
    chunks = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is not available on this platform")
@pytest.mark.parametrize("transport", ["serve", "in-process"])
def test_a_host_used_in_a_forked_child_refuses_at_once(transport: str, bin_path: Path, server_env: Dict[str, str]) -> None:
    with make_host(transport, bin_path, server_env) as host:
        assert host.describe().protocol
        parent = os.getpid()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report what the call did, and leave without cleanup
            os.close(read)
            try:
                host.describe()
                outcome = "answered"
            except UsedAfterFork as e:
                outcome = f"refused {e.created_in}: {e}"
            except BaseException as e:  # noqa: BLE001 (anything else is the failure reported)
                outcome = f"other {type(e).__name__}: {e}"
            os.write(write, outcome.encode())
            os._exit(0)
        os.close(write)
        outcome = read_within(read, 60).decode()
        os.close(read)
        if not outcome:
            os.kill(pid, 9)
        os.waitpid(pid, 0)
        assert outcome.startswith(f"refused {parent}: "), outcome or "the child hung"
        assert outcome.endswith("create a new one in this process"), outcome
        # The parent's host is unaffected.
        assert host.describe().protocol
