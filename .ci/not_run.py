#!/usr/bin/env python3
"""Every test that did not run, in every runner of .ci/run, and whether a stage that was
expected to run did not.

    not_run.py --cargo LOG... [--cargo-also LOG...] --pytest XML --node XML

- Rust (`cargo test` output, as .ci/run keeps it): `test NAME ... ignored[, WHY]` lines
  (`#[ignore = "why"]`), less those a `--cargo-also` log ran (the polyglot stage runs the
  `polyglot_` ones), and `SKIPPED: NAME: WHY` lines: a test that finds at run time that it
  cannot run writes one past libtest's capture (and fails instead under CI).
- pytest (`--junitxml`) and node's test runner (`--test-reporter=junit`): every test case
  with a `<skipped>` element, and its reason.

It fails (exit 1) when a runner ran no test, when a `polyglot_` test ignored by the main run
did not pass in the polyglot stage, when a Rust test skipped at run time, or when pytest or
node skipped a test for a reason that CI must not have (`EXPECTED_SKIPS`: CI installs every
prerequisite, so a skip there means a stage that did not run — the SDK route tests on a
Python too old for the SDKs, the in-process tests without the native module, the registry
tests without the registry).
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Tuple

#: Per runner, the skip reasons expected in CI (regular expressions, matched in full).
EXPECTED_SKIPS: Dict[str, List[str]] = {
    # A test that stops or kills the server's process runs over `serve` only; its
    # in-process parametrisation is skipped by design.
    "pytest": [r"stops or kills the server's process: over serve only"],
    "node": [],
}

IGNORED = re.compile(r"^test (?P<name>.+?) \.\.\. ignored(?:, (?P<why>.*))?$")
PASSED = re.compile(r"^test (?P<name>.+?) \.\.\. ok$")
SKIPPED_MARKER = re.compile(r"SKIPPED: (?P<name>\S+): (?P<why>.*)$")
RESULT = re.compile(r"^test result: \w+\. (?P<passed>\d+) passed; (?P<failed>\d+) failed; (?P<ignored>\d+) ignored")


def cargo(logs: List[Path], also: List[Path]) -> Tuple[List[str], List[str]]:
    """(lines of tests that did not run, problems)."""
    listed: List[str] = []
    problems: List[str] = []
    ran_elsewhere = set()
    for log in also:
        text = log.read_text(errors="replace")
        ran_elsewhere |= {m["name"] for m in map(PASSED.match, text.splitlines()) if m}
        if not any(int(m["passed"]) for m in map(RESULT.match, text.splitlines()) if m):
            problems.append(f"{log.name}: no test ran")
    for log in logs:
        lines = log.read_text(errors="replace").splitlines()
        if not any(int(m["passed"]) for m in map(RESULT.match, lines) if m):
            problems.append(f"{log.name}: no test ran")
        for line in lines:
            ignored = IGNORED.match(line)
            if ignored:
                name = ignored["name"]
                short = name.rsplit("::", 1)[-1]
                if name in ran_elsewhere:
                    continue
                if short.startswith("polyglot_"):
                    problems.append(f"{name}: ignored here and not passed in the polyglot stage")
                listed.append(f"cargo test: {name}: ignored: {ignored['why'] or '(no reason given)'}")
                continue
            marker = SKIPPED_MARKER.search(line)
            if marker:
                listed.append(f"cargo test: {marker['name']}: skipped at run time: {marker['why']}")
                problems.append(f"{marker['name']} skipped at run time: {marker['why']}")
    return listed, problems


def junit(runner: str, path: Path) -> Tuple[List[str], List[str]]:
    """(lines of tests that did not run, problems) of a JUnit XML report."""
    listed: List[str] = []
    problems: List[str] = []
    root = ET.parse(path).getroot()
    cases = list(root.iter("testcase"))
    ran = 0
    for case in cases:
        name = "::".join(p for p in (case.get("classname"), case.get("name")) if p and p != "test")
        skipped = case.find("skipped")
        if skipped is None:
            ran += 1
            continue
        why = (skipped.get("message") or skipped.text or "(no reason given)").strip()
        kind = "todo" if skipped.get("type") == "todo" else "skipped"
        if kind == "todo":
            ran += 1
        listed.append(f"{runner}: {name}: {kind}: {why}")
        if kind == "skipped" and not any(re.fullmatch(p, why) for p in EXPECTED_SKIPS[runner]):
            problems.append(f"{runner}: {name} was skipped: {why}")
    if ran == 0:
        problems.append(f"{runner}: no test ran ({len(cases)} test cases in {path.name})")
    return listed, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cargo", type=Path, nargs="+", required=True)
    parser.add_argument("--cargo-also", type=Path, nargs="*", default=[])
    parser.add_argument("--pytest", type=Path, required=True)
    parser.add_argument("--node", type=Path, required=True)
    args = parser.parse_args()
    listed, problems = cargo(args.cargo, args.cargo_also)
    for runner, path in (("pytest", args.pytest), ("node", args.node)):
        more, trouble = junit(runner, path)
        listed += more
        problems += trouble
    print("\n".join(listed) if listed else "(none)")
    if problems:
        print(f"\n{len(problems)} stage(s) or test(s) expected to run did not:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
