"""Cancellation: a step stuck in a plugin (`hostile` in a section: a busy loop, or a WASI sleep)
whose deadline is raised to 10 s, so only the cancel stops it. Measured from the cancel to
the error; the session log must be byte-for-byte unchanged (a new one is not created), and a
request on another scope must be answered while the stuck one runs."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any, Tuple

import pytest

from conftest import IDENTITY, Wire, run
from prompt_host import CANCELLED, AsyncPromptHost, CancelToken, PromptHost, RequestCancelled

#: Generous for a debug build on a loaded 2-core machine; docs/protocol.md says about 1 ms plus
#: one epoch tick. The measured figures are printed at the end of the run.
MAX_CANCEL_S = 1.0
STUCK_FOR_S = 0.3
MODES = ["loop", "sleep"]
#: The first line of a log.
HEADER = b'{"prompt-host":"session-log","version":1}\n'


def setup_host(host: Any, wasm, mode: str) -> Tuple[str, str]:
    """Bind a calm scope and a stuck one; returns their names. Works for both clients
    through a sync shim (the async tests call `asetup_host`)."""
    stuck = f"stuck:{mode}"
    host.bind_scope("calm")
    host.bind_scope(stuck)
    host.load_plugin("calm", wasm("declare"), scope="calm", config={"sections": [{"name": "calm", "order": 1, "text": "Calm."}]})
    host.load_plugin(
        "hostile", wasm("hostile"), scope=stuck, config={"mode": mode, "in": "section"}, limits={"call_timeout_ms": 10000}
    )
    return "calm", stuck


async def asetup_host(host: AsyncPromptHost, wasm, mode: str) -> Tuple[str, str]:
    stuck = f"stuck:{mode}"
    await host.bind_scope("calm")
    await host.bind_scope(stuck)
    await host.load_plugin("calm", wasm("declare"), scope="calm", config={"sections": [{"name": "calm", "order": 1, "text": "Calm."}]})
    await host.load_plugin(
        "hostile", wasm("hostile"), scope=stuck, config={"mode": mode, "in": "section"}, limits={"call_timeout_ms": 10000}
    )
    return "calm", stuck


def check_cancelled(e: RequestCancelled, scope: str) -> None:
    assert e.code == CANCELLED and e.kind == "cancelled"
    assert e.scope == scope
    assert e.method == "step"


@pytest.mark.parametrize("mode", MODES)
def test_sync_cancel_token(host: PromptHost, wasm, tmp_path: Path, cancel_timings, mode: str) -> None:
    calm, stuck = setup_host(host, wasm, mode)
    log = tmp_path / "s.jsonl"
    host.step(log, scope=calm, user="before")
    before = log.read_bytes()
    token = CancelToken()
    pending = host.send("step", {"session": str(log), "scope": stuck, "user": ["stuck"]}, cancel=token)
    time.sleep(STUCK_FOR_S)
    assert not pending.done()
    # Another scope is served meanwhile.
    started = time.monotonic()
    assert host.render(calm).prompt == f"{IDENTITY}\n\nCalm."
    other_s = time.monotonic() - started
    assert not pending.done()
    started = time.monotonic()
    token.cancel()
    with pytest.raises(RequestCancelled) as e:
        pending.result(timeout=30)
    elapsed = time.monotonic() - started
    cancel_timings.append((f"sync token, {mode}", elapsed, other_s))
    check_cancelled(e.value, stuck)
    assert not e.value.timed_out
    assert elapsed < MAX_CANCEL_S
    assert log.read_bytes() == before
    # The session goes on; the cancelled step's user message was never written.
    r = host.step(log, scope=calm, user="after")
    assert [m["content"] for m in r.request["messages"] if m["role"] == "user"] == ["before", "after"]


@pytest.mark.parametrize("mode", MODES)
def test_sync_timeout(host: PromptHost, wasm, tmp_path: Path, cancel_timings, mode: str) -> None:
    calm, stuck = setup_host(host, wasm, mode)
    log = tmp_path / "s.jsonl"
    started = time.monotonic()
    with pytest.raises(RequestCancelled) as e:
        host.step(log, scope=stuck, user="stuck", timeout=STUCK_FOR_S)
    elapsed = time.monotonic() - started
    cancel_timings.append((f"sync timeout {STUCK_FOR_S}s, {mode}", elapsed - STUCK_FOR_S, None))
    check_cancelled(e.value, stuck)
    assert e.value.timed_out
    assert STUCK_FOR_S <= elapsed < STUCK_FOR_S + MAX_CANCEL_S
    assert not log.exists()


def test_sync_cancel_from_another_thread(host: PromptHost, wasm, tmp_path: Path) -> None:
    calm, stuck = setup_host(host, wasm, "loop")
    token = CancelToken()
    threading.Timer(STUCK_FOR_S, token.cancel).start()
    with pytest.raises(RequestCancelled):
        host.render(stuck, cancel=token)
    # A cancelled token cancels whatever it is passed to next, at once.
    with pytest.raises(RequestCancelled):
        host.step(tmp_path / "s.jsonl", scope=stuck, cancel=token)
    assert not (tmp_path / "s.jsonl").exists()
    # One token, several requests.
    shared = CancelToken()
    pending = [host.send("render", {"scope": stuck}, cancel=shared) for _ in range(3)]
    time.sleep(0.1)
    shared.cancel()
    for p in pending:
        with pytest.raises(RequestCancelled):
            p.result(timeout=30)


def test_cancelled_first_step_writes_nothing(host: PromptHost, wasm, tmp_path: Path) -> None:
    # docs/protocol.md, Cancellation: "a cancelled step writes nothing to its log"; a new log is
    # created by the first step that writes to it, and an empty file stays empty.
    calm, stuck = setup_host(host, wasm, "sleep")
    log = tmp_path / "new.jsonl"
    with pytest.raises(RequestCancelled):
        host.step(log, scope=stuck, user="hi", timeout=STUCK_FOR_S)
    assert not log.exists()
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(RequestCancelled):
        host.step(empty, scope=stuck, user="hi", timeout=STUCK_FOR_S)
    assert empty.read_bytes() == b""
    # The session goes on: its first step that is written creates the log.
    r = host.step(log, scope=calm, user="after")
    assert r.step == 0
    assert log.read_bytes().startswith(HEADER)


def test_cancel_queued_session_requests(host: PromptHost, wasm, tmp_path: Path) -> None:
    """The second step waits behind the first on the session; cancelling both leaves the
    log untouched."""
    calm, stuck = setup_host(host, wasm, "sleep")
    log = tmp_path / "s.jsonl"
    host.step(log, scope=calm, user="before")
    before = log.read_bytes()
    first, second = CancelToken(), CancelToken()
    p1 = host.send("step", {"session": str(log), "scope": stuck, "user": ["one"]}, cancel=first)
    p2 = host.send("step", {"session": str(log), "scope": calm, "user": ["two"]}, cancel=second)
    time.sleep(STUCK_FOR_S)
    second.cancel()
    time.sleep(0.1)
    assert not p2.done()  # queued behind the stuck step
    first.cancel()
    for p in (p1, p2):
        with pytest.raises(RequestCancelled):
            p.result(timeout=30)
    assert log.read_bytes() == before


def test_cancelling_a_finished_request_does_nothing(host: PromptHost, wire: Wire, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    token = CancelToken()
    r = host.step(log, user="hi", cancel=token)
    before = log.read_bytes()
    token.cancel()  # nothing in flight: nothing is sent
    assert not any(m.get("method") == "$/cancelRequest" for m in wire.sent)
    host.cancel_request(1)  # sent, for a finished request: no answer, no effect
    assert host.request(log).request == r.request
    assert log.read_bytes() == before


@pytest.mark.parametrize("mode", MODES)
def test_async_task_cancellation(open_async_host, wasm, wire: Wire, tmp_path: Path, cancel_timings, mode: str) -> None:
    async def main() -> None:
        async with open_async_host() as host:
            calm, stuck = await asetup_host(host, wasm, mode)
            log = tmp_path / "s.jsonl"
            await host.step(log, scope=calm, user="before")
            before = log.read_bytes()
            task = asyncio.ensure_future(host.step(log, scope=stuck, user="stuck"))
            await asyncio.sleep(STUCK_FOR_S)
            assert not task.done()
            started = time.monotonic()
            other = await host.render(calm)
            other_s = time.monotonic() - started
            assert other.prompt == f"{IDENTITY}\n\nCalm." and not task.done()
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            elapsed = time.monotonic() - started
            cancel_timings.append((f"asyncio task.cancel(), {mode}", elapsed, other_s))
            assert elapsed < MAX_CANCEL_S
            # The server had answered the request with the cancellation before the task ended.
            step_ids = [m["id"] for m in wire.sent if m.get("method") == "step"]
            answer = next(m for m in wire.responses() if m["id"] == step_ids[-1])
            assert answer["error"]["code"] == CANCELLED and answer["error"]["data"]["kind"] == "cancelled"
            assert {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": step_ids[-1]}} in wire.sent
            assert log.read_bytes() == before
            r = await host.step(log, scope=calm, user="after")
            assert [m["content"] for m in r.request["messages"] if m["role"] == "user"] == ["before", "after"]

    run(main())


@pytest.mark.parametrize("mode", MODES)
def test_async_token_and_timeout(open_async_host, wasm, tmp_path: Path, cancel_timings, mode: str) -> None:
    async def main() -> None:
        async with open_async_host() as host:
            calm, stuck = await asetup_host(host, wasm, mode)
            log = tmp_path / "s.jsonl"
            token = CancelToken()
            loop = asyncio.get_running_loop()
            stamps: dict = {}

            def cancel() -> None:
                stamps["cancel"] = time.monotonic()
                token.cancel()

            loop.call_later(STUCK_FOR_S, cancel)
            with pytest.raises(RequestCancelled) as e:
                await host.step(log, scope=stuck, user="stuck", cancel=token)
            elapsed = time.monotonic() - stamps["cancel"]
            cancel_timings.append((f"asyncio CancelToken, {mode}", elapsed, None))
            check_cancelled(e.value, stuck)
            assert elapsed < MAX_CANCEL_S
            with pytest.raises(RequestCancelled) as e:
                await host.step(log, scope=stuck, user="stuck", timeout=STUCK_FOR_S)
            assert e.value.timed_out
            # asyncio.wait_for cancels the task: $/cancelRequest, then TimeoutError.
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(host.render(stuck), STUCK_FOR_S)
            assert not log.exists()
            assert (await host.render(calm)).prompt.endswith("Calm.")

    run(main())


@pytest.fixture(scope="session")
def _timings() -> list:
    return []


@pytest.fixture
def cancel_timings(_timings: list, request: pytest.FixtureRequest) -> list:
    request.config._prompt_host_cancel_timings = _timings  # type: ignore[attr-defined]
    return _timings
