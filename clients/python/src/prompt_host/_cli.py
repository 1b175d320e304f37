"""The ``prompt-host`` command line, from the wheel: the console script ``prompt-host`` and
``python -m prompt_host`` run the same command line as the binary, in this process."""

from __future__ import annotations

import signal
import sys
from typing import Optional, Sequence


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``prompt-host`` with ``argv`` (else this process's arguments); its exit status."""
    from .inprocess import _load_native

    _load_native()
    from ._native import run_command_line

    # The binary leaves Ctrl-C to its default (the command ends at once, or `dev` stops
    # cleanly with its own handler); Python's handler would only set a flag nobody reads.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    args = ["prompt-host", *(sys.argv[1:] if argv is None else argv)]
    return run_command_line(args)
