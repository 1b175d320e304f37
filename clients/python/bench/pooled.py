"""Figures over several runs of ``step_latency.py --samples-out FILE``: each run's median and
p99 ratios of the in-process Python host (and the ``serve`` client) to ``Host::step``, and
the same over the samples of every run pooled.

    python bench/pooled.py FILE

A p99 of 300 steps is the fourth-slowest step, which one burst of load on a shared machine
moves by half; pooled over runs, the p99 is the host's, not the burst's."""

from __future__ import annotations

import json
import statistics
import sys
from typing import Dict, List


def pct(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def line(label: str, way: List[float], rust: List[float]) -> str:
    return (f"{label:>8}  {len(way):5d} steps  median {statistics.median(way):6.3f} ms"
            f" / {statistics.median(rust):6.3f} = {statistics.median(way) / statistics.median(rust):4.2f}x"
            f"   p99 {pct(way, 0.99):6.3f} ms / {pct(rust, 0.99):6.3f} = {pct(way, 0.99) / pct(rust, 0.99):4.2f}x")


def main() -> None:
    runs: List[Dict[str, List[float]]] = [json.loads(text) for text in open(sys.argv[1]) if text.strip()]
    pooled: Dict[str, List[float]] = {}
    print("InProcessHost.step / Host::step, per run and pooled")
    for n, run in enumerate(runs, 1):
        print(line(f"run {n}", run["python"], run["rust"]))
        for key, values in run.items():
            pooled.setdefault(key, []).extend(values)
    print(line("pooled", pooled["python"], pooled["rust"]))
    if pooled.get("python_body") and pooled.get("rust_body"):
        print("with the HTTP body written, pooled")
        print(line("pooled", pooled["python_body"], pooled["rust_body"]))
    print("serve client / Host::step, pooled")
    print(line("pooled", pooled["serve"], pooled["rust"]))


if __name__ == "__main__":
    main()
