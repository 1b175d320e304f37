"""What only the in-process host has: the server stopping inside this process, its children
dying with the Python process, the GIL released while the host works, a file-size limit that
is an error and not a signal, its compile cache (the user's cache directory unless told
otherwise), and the wheel's own command line. (Everything the two
transports share runs over both in the other files.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from conftest import IDENTITY, REPO, mcp_config
from prompt_host import InProcessHost, PromptHostError, ServerExited, native_available

pytestmark = pytest.mark.skipif(not native_available(), reason="the native module is not installed (build the wheel: README 'Install')")

MCP_SERVER = REPO / "tests" / "fixtures" / "mcp" / "server.py"


def run_python(code: str, *, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, **kwargs)


def test_a_host_toml_that_cannot_load_stops_the_server_with_its_message(tmp_path: Path, cache_dir: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text("[prompt]\nno_such_key = 1\n")
    host = InProcessHost(config, cache_dir=cache_dir)
    with pytest.raises(ServerExited) as e:
        host.describe()
    assert host.close() == 1
    assert e.value.returncode == 1
    assert "no_such_key" in e.value.stderr and str(config) in e.value.stderr
    assert "no_such_key" in host.stderr_tail()


def test_killing_the_server_fails_what_is_in_flight_and_leaves_this_process(wasm, cache_dir: Path) -> None:
    host = InProcessHost(cache_dir=cache_dir)
    host.load_plugin("sleepy", wasm("hostile"), config={"mode": "sleep", "in": "section"}, limits={"call_timeout_ms": 20000})
    pending = host.send("render")
    time.sleep(0.2)
    started = time.monotonic()
    host.kill()
    with pytest.raises(ServerExited) as e:
        pending.result(timeout=10)
    assert time.monotonic() - started < 5
    assert e.value.method == "render" and e.value.returncode == -9
    with pytest.raises(ServerExited):
        host.describe()
    # This process goes on, and so does a new host in it.
    with InProcessHost(cache_dir=cache_dir) as other:
        assert other.render().prompt


def test_the_gil_is_released_while_the_host_works(wasm, cache_dir: Path) -> None:
    with InProcessHost(cache_dir=cache_dir) as host:
        host.load_plugin("sleepy", wasm("hostile"), config={"mode": "sleep", "in": "section"}, limits={"call_timeout_ms": 600})
        busy = {"n": 0}
        done = threading.Event()

        def spin() -> None:
            while not done.is_set():
                busy["n"] += 1

        spinner = threading.Thread(target=spin)
        spinner.start()
        try:
            time.sleep(0.2)
            alone = busy["n"]
            started = time.monotonic()
            with pytest.raises(PromptHostError):
                host.render()  # the plugin sleeps past its deadline
            elapsed = time.monotonic() - started
        finally:
            done.set()
            spinner.join()
        # While this thread waited on the host, the spinner ran (at a rate comparable to
        # when it had the interpreter to itself).
        assert busy["n"] - alone > 0.25 * alone * elapsed / 0.2, (alone, busy["n"], elapsed)


def test_a_file_size_limit_is_an_error_not_a_signal(wasm, cache_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    done = run_python(
        f"""
        import resource
        from prompt_host import InProcessHost, PromptHostError
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))
        with InProcessHost(cache_dir={str(cache_dir)!r}) as host:
            host.step({str(log)!r}, user="small")
            try:
                host.step({str(log)!r}, user="x" * (100 << 10))
            except PromptHostError as e:
                print("refused:", e.kind, e.message)
            print("after:", host.step({str(log)!r}, user="small again").step)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "refused: session" in done.stdout and "File too large" in done.stdout, done.stdout
    assert "after: 1" in done.stdout, done.stdout
    # What was acknowledged reads back.
    with InProcessHost(cache_dir=cache_dir) as host:
        assert host.request(log).step == 1


def _children(pid: int) -> list:
    # A thread that ends during the scan hands its children to another thread, perhaps one
    # already read: the scan is taken again until no thread ended during it.
    while True:
        found = []
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                found += (task / "children").read_text().split()
        except FileNotFoundError:
            continue
        return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")
def test_an_mcp_server_dies_with_the_python_process(wasm, cache_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP fixture server needs tests/fixtures/mcp/requirements.txt")
    pid_file = tmp_path / "server.pid"
    config = mcp_config(
        tmp_path,
        wasm,
        f"""
[[mcp]]
name = "fixture"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(MCP_SERVER))}, "--instructions", "Use the echo tool."]
scope = "agent"
timeout_ms = 20000
env = {{ MCP_FIXTURE_PID_FILE = {json.dumps(str(pid_file))} }}
""",
    )
    script = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from prompt_host import InProcessHost
                host = InProcessHost({str(config)!r}, cache_dir={str(cache_dir)!r})
                assert host.mcp_status(wait_ms=30000)[0].state == "up"
                assert "Use the echo tool." in host.render("agent").prompt
                print("up", flush=True)
                time.sleep(600)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert script.stdout is not None
        line = script.stdout.readline()
        assert line.strip() == "up", script.stderr.read() if script.stderr else ""
        server = int(pid_file.read_text())
        assert os.path.exists(f"/proc/{server}")
        script.send_signal(signal.SIGKILL)
        script.wait(10)
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{server}") and time.monotonic() < deadline:
            # A zombie is gone as far as it matters: it runs no more.
            try:
                if Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            except OSError:
                break
            time.sleep(0.05)
        alive = os.path.exists(f"/proc/{server}") and Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        assert not alive, f"the MCP server {server} outlived the Python process that hosted it"
    finally:
        if script.poll() is None:
            script.kill()
            script.wait()


def test_closing_the_host_stops_its_mcp_server(wasm, cache_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP fixture server needs tests/fixtures/mcp/requirements.txt")
    config = mcp_config(
        tmp_path,
        wasm,
        f"""
[[mcp]]
name = "fixture"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(MCP_SERVER))}]
scope = "agent"
timeout_ms = 20000
""",
    )
    before = set(_children(os.getpid()))
    host = InProcessHost(config, cache_dir=cache_dir)
    assert host.mcp_status(wait_ms=30000)[0].state == "up"
    started = set(_children(os.getpid())) - before
    assert started, "the MCP server should be a child of this process"
    assert host.close() == 0
    deadline = time.monotonic() + 10
    while set(_children(os.getpid())) & started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(_children(os.getpid())) & started


def test_the_in_process_host_compiles_into_the_user_cache_directory_by_default(wasm, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PROMPT_HOST_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    config = tmp_path / "host.toml"
    config.write_text(
        f'[[plugin]]\nname = "rules"\nwasm = {json.dumps(wasm("declare"))}\n'
        'config = { sections = [{ name = "rules", order = 100, text = "Be brief." }] }\n'
    )
    with InProcessHost(config) as host:
        assert host.render().prompt == f"{IDENTITY}\n\nBe brief."
    compiled = sorted((tmp_path / "xdg" / "prompt-host").glob("*.cwasm"))
    assert len(compiled) == 1, compiled


def test_the_wheels_command_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "prompt_host", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("prompt-host "), done
    # A usage error exits 2 with clap's message, as the binary does.
    done = subprocess.run([sys.executable, "-m", "prompt_host", "no-such-command"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no-such-command" in done.stderr
    # A reader that stops reading ends the command normally, with nothing on stderr.
    proc = subprocess.Popen([sys.executable, "-m", "prompt_host", "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(1)
    proc.stdout.close()
    assert proc.wait(60) == 0
    assert proc.stderr.read() == b""
    script = shutil.which("prompt-host")
    if script and Path(script).read_bytes()[:2] == b"#!" and b"prompt_host" in Path(script).read_bytes()[:4096]:
        done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.startswith("prompt-host "), done



def test_the_hosts_own_warnings_reach_python_logging(wasm, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = tmp_path / "cache"
    config = {"sections": [{"name": "s", "order": 1, "text": "Hi."}]}
    with InProcessHost(cache_dir=cache) as host:
        host.load_plugin("p", wasm("declare"), config=config)
    compiled = list(cache.rglob("*.cwasm"))
    assert compiled, list(cache.rglob("*"))
    for path in compiled:
        data = bytearray(path.read_bytes())
        data[:16] = b"\0" * 16
        path.write_bytes(bytes(data))
    with caplog.at_level("WARNING", logger="prompt_host"), InProcessHost(cache_dir=cache) as host:
        host.load_plugin("p", wasm("declare"), config=config)
        assert host.render().prompt.endswith("Hi.")
    warned = [r for r in caplog.records if r.name == "prompt_host" and "compiled-code cache: ignoring" in r.getMessage()]
    assert warned and warned[0].levelname == "WARNING", [r.getMessage() for r in caplog.records]


def test_a_call_answered_directly_equals_one_answered_as_a_line(wasm, cache_dir: Path, tmp_path: Path) -> None:
    """Without cancel or timeout a call is answered to the caller directly (a step's result as
    objects built from the host's values); with a timeout it goes as a line. The same
    conversation both ways gives the same results and the same events in the log."""
    from conftest import deploy_rules

    with InProcessHost(cache_dir=cache_dir) as host:
        deploy_rules(host, wasm, "agent", "rules")
        logs = {"direct": tmp_path / "direct.jsonl", "line": tmp_path / "line.jsonl"}
        results = {}
        for way, log in logs.items():
            timeout = None if way == "direct" else 60.0
            facts = {"model": "m1", "cwd": "/repo"}
            got = [host.call("step", {"session": str(log), "scope": "agent", "facts": facts, "user": ["hi"]}, timeout=timeout)]
            host.append_assistant(log, text="hello", timeout=timeout)
            got.append(
                host.call(
                    "step",
                    {"session": str(log), "scope": "agent", "facts": {**facts, "model": "m2"}, "route": {"name": "anthropic-messages", "options": {"max_tokens": 64}}, "user": ["again"]},
                    timeout=timeout,
                )
            )
            got.append(host.call("request", {"session": str(log), "step": 0}, timeout=timeout))
            with pytest.raises(PromptHostError) as e:
                host.call("step", {"session": str(log), "scope": "nowhere"}, timeout=timeout)
            got.append((e.value.code, e.value.data))
            results[way] = got
        assert results["direct"] == results["line"]
        assert json.dumps(results["direct"][1]) == json.dumps(results["line"][1])  # key order too
        # The same events (their times and message ids are their own).
        events = {way: [(e["type"], e["seq"]) for e in map(json.loads, log.read_text().splitlines()[1:])] for way, log in logs.items()}
        assert events["direct"] == events["line"] and len(events["direct"]) > 5


def test_closing_the_host_lets_a_call_in_flight_on_another_thread_end(wasm, cache_dir: Path, tmp_path: Path) -> None:
    """As `serve` answers the requests in flight when its input closes: a step running on
    another thread when the host is closed ends with its own answer (here the plugin's
    deadline), not with the runtime gone from under it; a kill cancels it instead."""
    for end in ("close", "kill"):
        host = InProcessHost(cache_dir=cache_dir)
        host.load_plugin("slow", wasm("hostile"), config={"mode": "sleep", "in": "section"}, limits={"call_timeout_ms": 700})
        outcome: list = []

        def step() -> None:
            try:
                host.step(tmp_path / f"{end}.jsonl", user="hi")
                outcome.append("answered")
            except BaseException as e:  # noqa: BLE001 - the kind of failure is the point
                outcome.append(e)

        worker = threading.Thread(target=step)
        worker.start()
        time.sleep(0.3)
        status = host.close() if end == "close" else (host.kill(), host.returncode)[1]
        worker.join(30)
        assert not worker.is_alive()
        (got,) = outcome
        if end == "close":
            assert status == 0
            assert isinstance(got, PromptHostError) and got.kind == "plugin" and "deadline" in got.message, repr(got)
        else:
            assert status == -9
            assert isinstance(got, (PromptHostError, ServerExited)), repr(got)
            assert not isinstance(got, ServerExited) or got.returncode == -9 or got.returncode is None


def test_a_steps_request_is_converted_only_when_read(wasm, cache_dir: Path, tmp_path: Path) -> None:
    """`step` hands the request over as the host's value: `request_json` writes it without
    converting it, `request` converts it once; `call` (the raw result) converts it at once."""
    from conftest import deploy_rules

    with InProcessHost(cache_dir=cache_dir) as host:
        deploy_rules(host, wasm, "agent", "rules")
        log = tmp_path / "s.jsonl"
        r = host.step(log, scope="agent", facts={"model": "m1", "cwd": "/repo"}, user="hi")
        assert type(r).__name__ == "_DeferredStepResult" and r.__dict__["_request"] is not r.__dict__.get("request")
        unread = r.__dict__["_request"]
        body = r.request_json()
        assert r.__dict__["_request"] is unread  # written from the host's value
        request = r.request
        assert r.__dict__["_request"] is request and json.loads(body) == request
        raw = host.call("step", {"session": str(log), "scope": "agent", "facts": {"model": "m1", "cwd": "/repo"}})
        assert isinstance(raw["request"], dict) and list(raw)[:3] == ["step", "request", "commits"]


def test_one_session_from_several_threads_both_ways(wasm, cache_dir: Path, tmp_path: Path) -> None:
    """Calls answered directly (the session's state taken up on the caller's own thread) and
    calls sent as lines (a timeout makes a call a line), on one session from three threads at
    once: each runs whole and in turn, none sees another half done, and the log holds every
    one of them in order."""
    from conftest import deploy_rules

    with InProcessHost(cache_dir=cache_dir) as host:
        deploy_rules(host, wasm, "agent", "rules")
        log = tmp_path / "s.jsonl"
        facts = {"model": "m1", "cwd": "/repo"}
        host.step(log, scope="agent", facts=facts, user="first")
        host.append_assistant(log, text="ok")
        first = host.call("request", {"session": str(log), "step": 0})
        errors: list = []
        steps: list = []

        def writer() -> None:
            try:
                for i in range(20):
                    # A step directly, its reply as a line.
                    steps.append(host.step(log, scope="agent", facts=facts, user=f"hi {i}").step)
                    host.append_assistant(log, text=f"ok {i}", timeout=60.0)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        def reader(timeout) -> None:
            try:
                for _ in range(40):
                    assert host.call("request", {"session": str(log), "step": 0}, timeout=timeout) == first
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=writer), threading.Thread(target=reader, args=(None,)),
                   threading.Thread(target=reader, args=(60.0,))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
        assert not errors, errors
        assert steps == list(range(1, 21))
        host.close_session(log)
        events = [json.loads(line) for line in log.read_text().splitlines()[1:]]
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        replies = [e for e in events if e["type"] == "assistant/message"]
        assert len(replies) == 21
