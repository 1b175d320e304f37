"""A server that stops reading its input (stopped with SIGSTOP): a call's timeout covers
sending the request too, so the caller gets its `TimeoutError` in time instead of blocking
in a write to a full pipe."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from prompt_host import PromptHost

#: SIGSTOP stops the server's process: in process, that would be the test's own.
pytestmark = pytest.mark.serve_only

# Larger than a pipe's buffer (64 KiB): the write cannot complete while the server sleeps.
BIG = {"big": "x" * 400_000}


def test_sync_timeout_covers_a_request_the_server_does_not_read(open_host) -> None:
    host: PromptHost = open_host(trace=None)
    host.describe(timeout=30)
    os.kill(host.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="not .*sent within 2s: the server is not reading its input"):
            host.render(facts=BIG, timeout=2)
        assert time.monotonic() - started < 10
        # A call queued behind it times out too, without ever being written.
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="was not sent within 1s"):
            host.describe(timeout=1)
        assert time.monotonic() - started < 10
    finally:
        os.kill(host.pid, signal.SIGCONT)
    # Once the server reads again, the client still works.
    assert host.describe(timeout=30).name == "prompt-host"


def test_async_timeout_covers_a_request_the_server_does_not_read(open_async_host) -> None:
    async def scenario() -> None:
        async with open_async_host(trace=None) as host:
            await host.describe(timeout=30)
            os.kill(host.pid, signal.SIGSTOP)
            try:
                started = time.monotonic()
                with pytest.raises(TimeoutError, match="not fully sent within 2s"):
                    await host.render(facts=BIG, timeout=2)
                assert time.monotonic() - started < 10
            finally:
                os.kill(host.pid, signal.SIGCONT)
            assert (await host.describe(timeout=30)).name == "prompt-host"

    asyncio.run(scenario())
