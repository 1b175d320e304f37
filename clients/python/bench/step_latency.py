"""Step latency through the Python client: N steps of one growing conversation on a deployment
of real plugins, each step followed by the model's (scripted) reply, as an agent loop does.

    python bench/step_latency.py [--steps 300] [--bin PATH] [--guests DIR] [--config host.toml]

Without ``--config`` it writes the deployment ``cargo demo`` uses (identity and persona; in
``preset:coder`` the tool-guide plugin and the redactor listener; in ``agent:1`` a persona
pack, the clock and the runtime-policy plugin) to a temporary host.toml pointing at the
example plugins, and steps on ``agent:1``. ``--config target/demo/host.toml`` uses the file
``cargo demo`` wrote instead.

Printed per step (median and p99 of the N steps):

- ``step``: the wall time of ``host.step(...)`` in the client: what an agent waits for;
- ``client JSON``: encoding the request and decoding the response in this process, measured
  on the very payloads of each step;
- ``round trip``: a request that does no work (``scopes``), sent after each step: writing a
  line to the pipe, the server reading, dispatching and answering it, and the reader thread
  handing the answer over: the process I/O and protocol overhead of any request;
- ``server``: what remains, ``step - client JSON - round trip``: the server's assembly,
  rendering, projection, durable log appends (fsync) and its own JSON;
- the server's CPU time per step (user + system, from /proc), for comparison.

The binary is ``--bin``, else ``PROMPT_HOST_BIN``, else this repository's
``target/release/prompt-host`` or ``target/debug/prompt-host``: a debug build is many times
slower than a release build; the figures say which was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from prompt_host import PromptHost

REPO = Path(__file__).resolve().parents[3]


def deployment(guests: Path) -> str:
    """The deployment of `cargo demo` (tests/examples/demo.rs), with these plugin paths."""

    def wasm(name: str) -> str:
        return json.dumps(str(guests / f"{name}.wasm"))

    return f"""
[prompt]
persona = "You are a coding agent running on {{{{model}}}}."

[[scope]]
name = "preset:coder"

[[scope]]
name = "agent:1"
parent = "preset:coder"

[[plugin]]
name = "tool-guide"
wasm = {wasm("tool_guide")}
scope = "preset:coder"

[[plugin]]
name = "redactor"
wasm = {wasm("redactor")}
scope = "preset:coder"
config = {{ words = ["hunter2"] }}

[[plugin]]
name = "persona"
wasm = {wasm("persona")}
scope = "agent:1"
config = {{ text = "You are agent 1, a careful reviewer on {{{{model}}}}. Today is {{{{date}}}}. Never print the password hunter2." }}

[[plugin]]
name = "clock"
wasm = {wasm("clock")}
scope = "agent:1"

[[plugin]]
name = "runtime-policy"
wasm = {wasm("runtime_policy")}
scope = "agent:1"
"""


def pick_binary(given: Optional[str]) -> str:
    if given:
        return given
    if os.environ.get("PROMPT_HOST_BIN"):
        return os.environ["PROMPT_HOST_BIN"]
    for profile in ("release", "debug"):
        candidate = REPO / "target" / profile / "prompt-host"
        if candidate.exists():
            return str(candidate)
    return "prompt-host"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def pct(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=10, help="steps before the measured ones (same session)")
    parser.add_argument("--bin", help="the prompt-host executable")
    parser.add_argument("--guests", type=Path, help="the example plugins (*.wasm)")
    parser.add_argument("--config", type=Path, help="a host.toml instead of the generated demo deployment")
    parser.add_argument("--scope", default="agent:1")
    parser.add_argument("--log-dir", type=Path, help="where the session log goes (default: a temporary directory); e.g. /dev/shm to take fsync out")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()

    binary = pick_binary(args.bin)
    guests = Path(args.guests or os.environ.get("PROMPT_HOST_GUESTS") or REPO / "target" / "guests" / "wasm32-wasip2" / "release")
    facts = {"model": "deepseek-v4", "cwd": "/work/project", "sandbox": "read-only"}

    sizes: List[int] = []
    last_response: Dict[str, Any] = {}

    def trace(direction: str, message: Any) -> None:
        if direction == "recv" and isinstance(message, dict) and "id" in message:
            last_response["message"] = message

    with tempfile.TemporaryDirectory() as tmp:
        config = args.config
        if config is None:
            config = Path(tmp) / "host.toml"
            config.write_text(deployment(guests))
        log = Path(args.log_dir or tmp) / f"step-latency-{os.getpid()}.jsonl"
        cache = os.environ.get("PROMPT_HOST_CACHE_DIR") or str(Path(tmp) / "cache")
        with PromptHost(config, binary=binary, env={"PROMPT_HOST_CACHE_DIR": cache}, trace=trace) as host:
            describe = host.describe()

            def one_step(i: int) -> Dict[str, float]:
                params = {"session": str(log), "scope": args.scope, "facts": facts, "user": [f"Request number {i}: review the diff."]}
                started = time.perf_counter()
                result = host.call("step", params)
                step_s = time.perf_counter() - started
                # The client's JSON work on these very payloads.
                message = {"jsonrpc": "2.0", "id": 1, "method": "step", "params": params}
                t0 = time.perf_counter()
                json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
                encode_s = time.perf_counter() - t0
                line = json.dumps(last_response["message"], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
                t0 = time.perf_counter()
                json.loads(line)
                decode_s = time.perf_counter() - t0
                sizes.append(len(line))
                # The bare round trip of a request that does no work.
                t0 = time.perf_counter()
                host.scopes()
                rtt_s = time.perf_counter() - t0
                host.append_assistant(log, text=f"Reviewed change {i}: looks good.")
                assert result["step"] == i
                return {"step": step_s, "json": encode_s + decode_s, "rtt": rtt_s}

            for i in range(args.warmup):
                one_step(i)
            sizes.clear()
            samples: List[Dict[str, float]] = []
            cpu_before = cpu_seconds(host.pid)
            wall_before = time.perf_counter()
            for i in range(args.warmup, args.warmup + args.steps):
                samples.append(one_step(i))
            wall = time.perf_counter() - wall_before
            cpu = cpu_seconds(host.pid) - cpu_before
        log.unlink(missing_ok=True)

    step = [s["step"] for s in samples]
    js = [s["json"] for s in samples]
    rtt = [s["rtt"] for s in samples]
    server = [s["step"] - s["json"] - s["rtt"] for s in samples]
    med_step = statistics.median(step)
    figures = {
        "binary": binary,
        "server_version": describe.version,
        "steps": args.steps,
        "step_median_ms": med_step * 1000,
        "step_p99_ms": pct(step, 0.99) * 1000,
        "client_json_median_ms": statistics.median(js) * 1000,
        "client_json_p99_ms": pct(js, 0.99) * 1000,
        "round_trip_median_ms": statistics.median(rtt) * 1000,
        "round_trip_p99_ms": pct(rtt, 0.99) * 1000,
        "server_median_ms": statistics.median(server) * 1000,
        "server_p99_ms": pct(server, 0.99) * 1000,
        "server_cpu_per_step_ms": cpu / args.steps * 1000,
        "response_bytes_first": sizes[0],
        "response_bytes_last": sizes[-1],
        "wall_s": wall,
    }
    print(f"prompt-host {describe.version} ({binary}); {args.steps} steps of one conversation on scope {args.scope}")
    print(f"session log in {args.log_dir or 'a temporary directory'}")
    print(f"response size: {sizes[0]:,} bytes (first measured step) .. {sizes[-1]:,} bytes (last)")
    print(f"{'':24}{'median':>11}  {'p99':>11}  share of the median step")
    for label, values in [("step (client wall time)", step), ("  client JSON", js), ("  round trip (I/O)", rtt), ("  server (the rest)", server)]:
        share = statistics.median(values) / med_step * 100
        print(f"{label:24}{ms(statistics.median(values))}  {ms(pct(values, 0.99))}  {share:5.1f} %")
    print(f"server CPU time per step (user+system, all threads, incl. the round-trip request): {ms(cpu / args.steps)}")
    if args.json:
        print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
