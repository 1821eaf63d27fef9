"""Run the fuzzer: ``python -m tests.fuzz --minutes N [--seed S] [--keep DIR]``."""
from __future__ import annotations

import argparse
import sys

from .harness import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to run (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the mutations (default 0)")
    parser.add_argument("--keep", default=None, help="folder for the inputs of bad cases")
    parser.add_argument("--memory-mb", type=int, default=1024, help="address-space limit per worker")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds a case may take")
    args = parser.parse_args(argv)
    table = run(args.minutes * 60, args.seed, args.keep, args.memory_mb << 20, args.timeout)
    # (round-trip failures are listed, not fatal: they are encoders' bugs, not readers')
    bad = sum(n for (fmt, cls), n in table.items() if cls in ("crash", "hang", "memory"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
