"""Step latency through the Python client: N steps of one growing conversation on a deployment
of real plugins, each step followed by the model's (scripted) reply, as an agent loop does.

    python bench/step_latency.py [--steps 300] [--bin PATH] [--guests DIR] [--config host.toml]
                                 [--in-process PATH] [--python-in-process]

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

``--in-process PATH`` (the ``step-inprocess`` binary of the tests package: ``cargo build
--release -p prompt-host-tests --bin step-inprocess``) also runs the same conversation on the
same deployment through the Rust library in one process, right before the client's, and
prints both medians and p99s side by side with their ratio.

``--python-in-process`` also runs the same conversation through `InProcessHost` (the wheel's
host in this Python process) with ``step`` as an agent calls it, in rounds alternating with
the others, and prints its figures beside the ``serve`` client's and the library's, with the
ratios: the step alone (its request still the host's value), the step with its request then
written as the HTTP body (``request_json()``, against ``Host::step`` plus ``serde_json::to_vec``
in Rust), and with ``--request-as dicts`` the step with its request then also read as Python
objects (``request``).

With more than one way, the steps are split into ``--rounds`` rounds; in each, every way
takes ``--round-warmup`` untimed steps and then its timed ones, the ways taking turns at
going first. ``--samples-out FILE`` appends the run's step times per way to FILE, one JSON
line per run, for ``bench/pooled.py``.

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

from prompt_host import InProcessHost, PromptHost

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
    parser.add_argument("--request-as", choices=("body", "dicts"), default="body",
                        help="what the in-process Python agent makes of each step's request between steps: its HTTP "
                             "body only (request_json(), as the library's side writes the body with to_vec), or also "
                             "Python dicts (request), which the library's side has no counterpart for")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds the steps are split into, the ways alternating round by round (with --in-process, "
                             "--python-in-process or --compare-bin)")
    parser.add_argument("--round-warmup", type=int, default=3,
                        help="steps at the start of each round that are not timed, for every way alike (a host that sat "
                             "idle while the other ways ran, or a fresh step-inprocess process, is slower on its first "
                             "steps: timed, they would be each way's p99)")
    parser.add_argument("--bin", help="the prompt-host executable")
    parser.add_argument("--guests", type=Path, help="the example plugins (*.wasm)")
    parser.add_argument("--config", type=Path, help="a host.toml instead of the generated demo deployment")
    parser.add_argument("--scope", default="agent:1")
    parser.add_argument("--log-dir", type=Path, help="where the session log goes (default: a temporary directory); e.g. /dev/shm to take fsync out")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--samples-out", type=Path,
                        help="append this run's step times (ms) per way as one JSON line to this file, for figures "
                             "over several runs (bench/pooled.py)")
    parser.add_argument("--in-process", help="the step-inprocess binary: also measure the same steps in process")
    parser.add_argument("--python-in-process", action="store_true", help="also measure the same steps through InProcessHost")
    parser.add_argument("--compare-bin", help="another prompt-host executable (an earlier build): the same steps through it too")
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
        in_log = Path(args.log_dir or tmp) / f"step-latency-{os.getpid()}-in-process.jsonl"
        in_process: List[float] = []
        in_process_body: List[float] = []

        def in_process_round(first: int, steps: int, warmup: int) -> None:
            """`warmup` untimed and then `steps` timed steps more of the in-process
            conversation (its own log, continued), numbered from `first`."""
            import subprocess

            command = [args.in_process, "--config", str(config), "--log", str(in_log), "--scope", args.scope,
                       "--steps", str(steps), "--warmup", str(warmup), "--first", str(first)]
            for key, value in facts.items():
                command += ["--fact", f"{key}={value}"]
            out = subprocess.run(command, check=True, capture_output=True, text=True,
                                 env={**os.environ, "PROMPT_HOST_CACHE_DIR": cache})
            figures_in = json.loads(out.stdout.strip().splitlines()[-1])
            in_process.extend(figures_in["step_ms"])
            in_process_body.extend(figures_in.get("step_and_body_ms", []))

        py_log = Path(args.log_dir or tmp) / f"step-latency-{os.getpid()}-python-in-process.jsonl"
        python_in: List[float] = []
        python_in_body: List[float] = []
        python_in_dict: List[float] = []
        python_host = InProcessHost(config, cache_dir=cache) if args.python_in_process else None
        cmp_log = Path(args.log_dir or tmp) / f"step-latency-{os.getpid()}-compare.jsonl"
        compared: List[float] = []
        compare_host = PromptHost(config, binary=args.compare_bin, env={"PROMPT_HOST_CACHE_DIR": cache}) if args.compare_bin else None

        def timed_round(client: Any, session: Path, samples: List[float], first: int, steps: int, warmup: int = 0) -> None:
            """`warmup` untimed and then `steps` timed steps more of the conversation through
            `client`'s raw `call` (its own log)."""
            for i in range(first, first + warmup + steps):
                params = {"session": str(session), "scope": args.scope, "facts": facts, "user": [f"Request number {i}: review the diff."]}
                started = time.perf_counter()
                result = client.call("step", params)
                if i >= first + warmup:
                    samples.append(time.perf_counter() - started)
                client.append_assistant(session, text=f"Reviewed change {i}: looks good.")
                assert result["step"] == i
                # Freed here, out of the next step's timing: the library side drops its
                # outcome after its timer too (rebinding `result` would free this one
                # inside the next step's measurement).
                del result

        def agent_round(client: Any, session: Path, first: int, steps: int, warmup: int = 0) -> None:
            """`warmup` untimed and then `steps` timed steps more through `client.step` as an
            agent takes them: the step alone, then its request written as the HTTP body
            (`request_json`), then (`--request-as dicts`) read as Python objects (`request`)."""
            for i in range(first, first + warmup):
                result = client.step(session, scope=args.scope, facts=facts, user=[f"Request number {i}: review the diff."])
                client.append_assistant(session, text=f"Reviewed change {i}: looks good.")
                assert result.step == i
                del result
            for i in range(first + warmup, first + warmup + steps):
                started = time.perf_counter()
                result = client.step(session, scope=args.scope, facts=facts, user=[f"Request number {i}: review the diff."])
                stepped = time.perf_counter()
                body = result.request_json()
                written = time.perf_counter()
                request = result.request if args.request_as == "dicts" else True
                read = time.perf_counter()
                python_in.append(stepped - started)
                python_in_body.append(written - started)
                if args.request_as == "dicts":
                    python_in_dict.append(stepped - started + read - written)
                client.append_assistant(session, text=f"Reviewed change {i}: looks good.")
                assert result.step == i and body and request
                del result, body, request

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
            if python_host is not None:
                agent_round(python_host, py_log, 0, args.warmup)
                for samples_of in (python_in, python_in_body, python_in_dict):
                    samples_of.clear()
            if compare_host is not None:
                timed_round(compare_host, cmp_log, compared, 0, args.warmup)
                compared.clear()
            sizes.clear()
            samples: List[Dict[str, float]] = []
            # With --in-process or --python-in-process, rounds alternate between the
            # library, the in-process Python host and the client, so load on a shared
            # machine (and the disk's fsync latency) hits all alike.
            # Every way's conversation has the same steps: the library's first round also
            # takes the warm-up steps the others took above (it runs in a process of its own).
            rounds = max(1, args.rounds) if args.in_process or python_host is not None or compare_host is not None else 1
            per_round = max(1, args.steps // rounds)
            warm = max(0, args.round_warmup) if rounds > 1 else 0
            cpu = 0.0
            wall = 0.0
            def serve_round(first: int) -> None:
                nonlocal cpu, wall
                for i in range(first, first + warm):
                    one_step(i)
                cpu_before = cpu_seconds(host.pid)
                wall_before = time.perf_counter()
                for i in range(first + warm, first + warm + per_round):
                    samples.append(one_step(i))
                wall += time.perf_counter() - wall_before
                cpu += cpu_seconds(host.pid) - cpu_before

            def library_round(r: int, first: int) -> None:
                if r == 0:
                    in_process_round(0, per_round, args.warmup + warm)
                else:
                    in_process_round(first, per_round, warm)

            ways: List[Any] = [lambda r, first: serve_round(first)]
            if args.in_process:
                ways.append(library_round)
            if python_host is not None:
                ways.append(lambda r, first: agent_round(python_host, py_log, first, per_round, warm))
            if compare_host is not None:
                ways.append(lambda r, first: timed_round(compare_host, cmp_log, compared, first, per_round, warm))
            for r in range(rounds):
                first = args.warmup + r * (warm + per_round)
                # The ways take turns at going first: what one leaves behind (the disk's
                # writeback, a process's exit) falls on each of the others alike.
                for k in range(len(ways)):
                    ways[(r + k) % len(ways)](r, first)
        for client in (python_host, compare_host):
            if client is not None:
                client.close()
        py_log.unlink(missing_ok=True)
        cmp_log.unlink(missing_ok=True)
        log.unlink(missing_ok=True)
        in_log.unlink(missing_ok=True)

    step = [s["step"] for s in samples]
    js = [s["json"] for s in samples]
    rtt = [s["rtt"] for s in samples]
    server = [s["step"] - s["json"] - s["rtt"] for s in samples]
    med_step = statistics.median(step)
    figures = {
        "binary": binary,
        "server_version": describe.version,
        "steps": len(samples),
        "step_median_ms": med_step * 1000,
        "step_p99_ms": pct(step, 0.99) * 1000,
        "client_json_median_ms": statistics.median(js) * 1000,
        "client_json_p99_ms": pct(js, 0.99) * 1000,
        "round_trip_median_ms": statistics.median(rtt) * 1000,
        "round_trip_p99_ms": pct(rtt, 0.99) * 1000,
        "server_median_ms": statistics.median(server) * 1000,
        "server_p99_ms": pct(server, 0.99) * 1000,
        "server_cpu_per_step_ms": cpu / len(samples) * 1000,
        "response_bytes_first": sizes[0],
        "response_bytes_last": sizes[-1],
        "wall_s": wall,
    }
    print(f"prompt-host {describe.version} ({binary}); {len(samples)} steps of one conversation on scope {args.scope}")
    print(f"session log in {args.log_dir or 'a temporary directory'}")
    print(f"response size: {sizes[0]:,} bytes (first measured step) .. {sizes[-1]:,} bytes (last)")
    print(f"{'':24}{'median':>11}  {'p99':>11}  share of the median step")
    for label, values in [("step (client wall time)", step), ("  client JSON", js), ("  round trip (I/O)", rtt), ("  server (the rest)", server)]:
        share = statistics.median(values) / med_step * 100
        print(f"{label:24}{ms(statistics.median(values))}  {ms(pct(values, 0.99))}  {share:5.1f} %")
    print(f"server CPU time per step (user+system, all threads, incl. the round-trip request): {ms(cpu / len(samples))}")
    if in_process:
        median_in = statistics.median(in_process)
        p99_in = pct(in_process, 0.99)
        figures["in_process_median_ms"] = median_in
        figures["in_process_p99_ms"] = p99_in
        print(f"{'in process (Rust library)':24}{median_in:8.3f} ms  {p99_in:8.3f} ms  ({len(in_process)} steps, rounds alternating with the client's)")
        print(f"through the client / in process: median {med_step * 1000 / median_in:.2f}x, "
              f"p99 {pct(step, 0.99) * 1000 / p99_in:.2f}x; the client adds {med_step * 1000 - median_in:.3f} ms at the median")
    def side(key: str, label: str, samples: List[float], note: str) -> float:
        """Print one more way of taking the step beside the client's; its median (s)."""
        median, p99 = statistics.median(samples), pct(samples, 0.99)
        figures[f"{key}_median_ms"] = median * 1000
        figures[f"{key}_p99_ms"] = p99 * 1000
        print(f"{label:24}{ms(median)}  {ms(p99)}  ({note}; rounds alternating)")
        return median

    def ratio(label: str, python: List[float], rust_ms: List[float]) -> None:
        print(f"{label}: median {statistics.median(python) * 1000 / statistics.median(rust_ms):.2f}x, "
              f"p99 {pct(python, 0.99) * 1000 / pct(rust_ms, 0.99):.2f}x")

    if python_in:
        median_py = side("python_in_process", "InProcessHost.step", python_in, f"{len(python_in)} steps")
        side("python_in_process_body", "  + request_json()", python_in_body, "the HTTP body")
        if python_in_dict:
            side("python_in_process_dict", "  + request (objects)", python_in_dict, "the request as dicts")
        print(f"serve client / InProcessHost: median {med_step / median_py:.2f}x, p99 {pct(step, 0.99) / pct(python_in, 0.99):.2f}x")
        if in_process:
            ratio("InProcessHost.step / Host::step", python_in, in_process)
            if in_process_body:
                side("in_process_body", "Host::step + to_vec", [ms_ / 1000 for ms_ in in_process_body], "the HTTP body")
                ratio("  with the HTTP body written, Python / Rust", python_in_body, in_process_body)
            if python_in_dict:
                ratio("  with the request as dicts / Host::step", python_in_dict, in_process)
    if compared:
        median_cmp = side("compare", "serve client, --compare-bin", compared, str(args.compare_bin))
        print(f"--compare-bin / --bin: median {median_cmp / med_step:.2f}x, p99 {pct(compared, 0.99) / pct(step, 0.99):.2f}x; "
              f"{(median_cmp - med_step) * 1000:.3f} ms less per step at the median")
    if args.json:
        print(json.dumps(figures, indent=2))
    if args.samples_out:
        run = {"serve": [v * 1000 for v in step], "rust": list(in_process), "python": [v * 1000 for v in python_in],
               "python_body": [v * 1000 for v in python_in_body], "rust_body": list(in_process_body)}
        with args.samples_out.open("a") as out:
            out.write(json.dumps(run) + "\n")


if __name__ == "__main__":
    main()
