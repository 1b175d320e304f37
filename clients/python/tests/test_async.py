"""The asyncio client: every method, concurrency, errors, notifications."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from conftest import IDENTITY, SNAPSHOT, Wire, run
from prompt_host import (
    Assembly,
    AsyncPromptHost,
    Compacted,
    Describe,
    McpStatus,
    Notification,
    PluginInfo,
    PromptHostError,
    Rendered,
    Replay,
    ServerExited,
    StepResult,
    ToolCall,
)


def test_every_method(open_async_host, wasm, wire: Wire, tmp_path: Path) -> None:
    async def main() -> None:
        async with open_async_host() as host:
            d = await host.describe()
            assert isinstance(d, Describe) and d.protocol == "1.1"
            await host.bind_scope("preset")
            await host.bind_scope("agent", "preset")
            assert await host.scopes() == ["agent", "preset"]
            pid = await host.load_plugin(
                "d",
                wasm("declare"),
                scope="preset",
                config={
                    "sections": [{"name": "rules", "order": 10, "text": "On {{model}}."}],
                    "contexts": [{"name": "c", "order": 10, "text": "Ctx."}],
                    "tools": [{"schemas": [{"name": "ls", "description": "List.", "parameters": {"type": "object"}}]}],
                },
                limits={"call_timeout_ms": 1000},
                on_error="fail",
            )
            assert await host.plugins() == [PluginInfo(pid, "d", "preset")]
            a = await host.assemble("agent", {"model": "m"})
            assert isinstance(a, Assembly) and [s.name for s in a.sections][-1] == "rules"
            r = await host.render("agent", [("model", "m")])
            assert r == Rendered(f"{IDENTITY}\n\nOn m.", SNAPSHOT + "Ctx.")
            log = tmp_path / "s.jsonl"
            s0 = await host.step(log, scope="agent", facts={"model": "m"}, user=["hi"])
            assert isinstance(s0, StepResult) and (s0.step, s0.header) == (0, "initial")
            seq = await host.append_assistant(log, text="Listing.", tool_calls=[ToolCall("c1", "ls", {"path": "."})])
            assert seq == 7  # step 0 wrote seqs 1-6, its request/context among them
            assert await host.append_tool_result(log, "c1", "a b") == 8
            s1 = await host.step(log, scope="agent", facts={"model": "m"})
            assert s1.request["messages"][-1] == {"role": "tool", "content": "a b", "tool_call_id": "c1"}
            s2 = await host.retry(log, facts={"model": "n"})
            assert s2.request["messages"][0]["content"] == f"{IDENTITY}\n\nOn n."
            assert await host.request(log, 1) == Replay(1, s1.request)
            assert await host.request(log) == Replay(s2.step, s2.request)
            # Everything after the system prompt (keep no turn) becomes the summary; the steps
            # before it replay as they were sent.
            done = await host.compact(log, "They said hi; ls listed a b.", keep_turns=0)
            assert isinstance(done, Compacted) and done.summary_seq == done.start_event + 1
            assert await host.request(log, 1) == Replay(1, s1.request)
            assert await host.close_session(log) is True
            assert await host.mcp_status(wait_ms=0) == []
            await host.subscribe(log="off", plugins=False, registry=False, mcp=False)
            assert await host.dispose_plugin(pid) is True
            await host.dispose_scope("preset")
            assert await host.call("$/cancelRequest", {"id": 424242}) == {}
            assert await host.aclose() == 0

    run(main())
    assert {m["method"] for m in wire.sent if "id" in m} >= {
        "describe", "bind_scope", "dispose_scope", "scopes", "load_plugin", "dispose_plugin", "plugins", "assemble",
        "render", "step", "retry", "append_assistant", "append_tool_result", "request", "compact", "close_session",
        "mcp_status", "subscribe", "$/cancelRequest",
    }


def test_concurrent_requests_matched_by_id(open_async_host, wasm) -> None:
    async def main() -> None:
        async with open_async_host() as host:
            await host.load_plugin("d", wasm("declare"), config={"sections": [{"name": "s", "order": 1, "text": "On {{model}}."}]})
            prompts = await asyncio.gather(*(host.render(facts={"model": f"m{i}"}) for i in range(300)))
            assert [p.prompt for p in prompts] == [f"{IDENTITY}\n\nOn m{i}." for i in range(300)]

    run(main())


def test_a_slow_request_does_not_hold_up_others(open_async_host, wasm) -> None:
    async def main() -> None:
        async with open_async_host() as host:
            await host.bind_scope("slow")
            await host.load_plugin(
                "sleepy", wasm("hostile"), scope="slow", config={"mode": "sleep", "in": "section"}, limits={"call_timeout_ms": 1500}
            )
            slow = asyncio.ensure_future(host.render("slow"))
            for _ in range(20):
                await host.scopes()
            assert not slow.done()
            with pytest.raises(PromptHostError) as e:
                await slow
            assert (e.value.kind, e.value.plugin, e.value.export) == ("plugin", "sleepy", "section-text")

    run(main())


def test_errors(open_async_host, tmp_path: Path) -> None:
    async def main() -> None:
        async with open_async_host() as host:
            await host.bind_scope("agent:1")
            with pytest.raises(PromptHostError) as e:
                await host.render("agnet:1")
            assert (e.value.code, e.value.kind, e.value.scope, e.value.suggestion) == (-32000, "unknown-scope", "agnet:1", "agent:1")
            with pytest.raises(PromptHostError) as e:
                await host.call("nope")
            assert e.value.kind == "method-not-found" and e.value.code == -32601
            with pytest.raises(PromptHostError) as e:
                await host.request(tmp_path / "none.jsonl")
            assert e.value.kind == "replay"

    run(main())


def test_notifications(open_async_host, wasm) -> None:
    async def main() -> None:
        called: list = []

        async def on_notification(n: Notification) -> None:
            await asyncio.sleep(0)
            called.append(n.method)

        async with open_async_host(on_notification=on_notification) as host:
            stream = host.notifications()
            await host.subscribe(log="info", plugins=True, registry=True)
            await host.load_plugin(
                "logger", wasm("declare"), config={"listener": {"key": "k", "steps": [{"record_variables": True}, {"next": True}]}}
            )
            await host.render()
            got = []
            async for n in stream:
                got.append(n)
                if n.method == "log":
                    break
            assert [n.method for n in got] == ["registry/changed", "log"]
            line = got[1].log_line
            assert line is not None and (line.plugin, line.scope, line.stream) == ("logger", None, "info")
            assert json.loads(line.message)["record"] == "variables"
            stream.close()
            assert [n async for n in stream] == []
            await asyncio.sleep(0.05)
            assert called[:2] == ["registry/changed", "log"]
            ended = host.notifications()
        # The server exited: the iterator ends.
        assert [n async for n in ended] == []

    run(main())


def test_mcp_status_notifications(open_async_host, wasm, tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text(
        f"""
[host]
mcp_provider = {json.dumps(wasm("mcp-instructions"))}

[[mcp]]
name = "gone"
command = "/nonexistent/mcp-server"
timeout_ms = 200
"""
    )

    async def main() -> None:
        async with open_async_host(config=config) as host:
            stream = host.notifications()
            await host.subscribe(mcp=True)
            status = (await host.mcp_status(wait_ms=5000))[0]
            assert isinstance(status, McpStatus) and (status.server, status.state) == ("gone", "down")
            note = await asyncio.wait_for(stream.__anext__(), 10)
            assert note.method == "mcp/status" and note.mcp_status is not None
            assert note.mcp_status.server == "gone" and note.mcp_status.state == "down"
            assert "cannot start" in (note.mcp_status.last_error or "")

    run(main())


def test_server_exit(open_async_host, bin_path: Path, server_env, wire: Wire, wasm, tmp_path: Path) -> None:
    async def main() -> None:
        host = await AsyncPromptHost(binary=bin_path, env=server_env, trace=wire).start()
        await host.load_plugin("sleepy", wasm("hostile"), config={"mode": "sleep", "in": "section"}, limits={"call_timeout_ms": 20000})
        pending = asyncio.ensure_future(host.render())
        await asyncio.sleep(0.1)
        await host.kill()
        with pytest.raises(ServerExited) as e:
            await pending
        assert e.value.method == "render"
        with pytest.raises(ServerExited):
            await host.describe()

        config = tmp_path / "bad.toml"
        config.write_text("[[scope]]\n")
        bad = await AsyncPromptHost(config, binary=bin_path, env=server_env, trace=wire).start()
        with pytest.raises(ServerExited) as e:
            await bad.describe()
        assert await bad.aclose() == 1
        assert "bad.toml" in e.value.stderr or "bad.toml" in bad.stderr_tail()

    run(main())
