#!/usr/bin/env python3
"""Pre-tokenization time of patterns without a hand-written matcher, as the text grows.

    python benchmarks/pattern_cost.py                 # the Rust core on this checkout
    python benchmarks/pattern_cost.py --max-kb 64     # smaller texts (for an n² engine)

Two kinds of rows: patterns whose every search reads far ahead and fails (`a+b|a` and
`\\w+(?=X)|\\w|\\s+|\\W` over runs of `a`, where a findall that restarts each search costs n²),
at sizes doubling up to --max-kb; and common custom patterns (Llama-3's, cl100k's respelled
without possessive quantifiers) on Gutenberg prose, in MB/s.  Times are CPU seconds of one
thread, best of --repeat.  A linear engine doubles its time when the text doubles; the
"x per doubling" column shows the growth.
"""
from __future__ import annotations

import argparse
import gzip
import time
from pathlib import Path

from superword import _core

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

FAR_AHEAD = [r"a+b|a", r"\w+(?=X)|\w|\s+|\W"]
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
CL100K_GREEDY = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s+$|\s*[\r\n]|\s+(?!\S)|\s")


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-kb", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--prose-mb", type=float, default=4)
    ap.add_argument("--data", type=Path, default=DATA, help="the folder of the shared corpora")
    args = ap.parse_args()
    print("| pattern | text | CPU s | x per doubling |")
    print("|---|---|---:|---:|")
    for pattern in FAR_AHEAD:
        before = None
        kb = 16
        while kb <= args.max_kb:
            text = "a" * (kb * 1024)
            t = best(lambda: _core.pretokenize(text, pattern), args.repeat)
            growth = "" if before is None or before == 0 else f"{t / before:.1f}"
            print(f"| `{pattern}` | {kb} KB of `a` | {t:.4f} | {growth} |", flush=True)
            before, kb = t, kb * 2
    corpus = args.data / "gutenberg_en_100M.txt.gz"
    if not corpus.is_file():
        print("(no Gutenberg corpus: prose rows skipped)")
        return
    with gzip.open(corpus, "rt", encoding="utf-8") as f:
        prose = f.read(int(args.prose_mb * 1e6))
    mb = len(prose.encode("utf-8")) / 1e6
    print("\n| pattern | text | MB/CPU-s |")
    print("|---|---|---:|")
    for name, pattern in (("Llama-3", LLAMA3), ("cl100k, greedy", CL100K_GREEDY)):
        t = best(lambda: _core.pretokenize(prose, pattern), args.repeat)
        print(f"| {name} | {mb:.1f} MB of Gutenberg | {mb / t:.1f} |", flush=True)


if __name__ == "__main__":
    main()
