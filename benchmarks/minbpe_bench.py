#!/usr/bin/env python3
"""minbpe API: superword.minbpe next to turboBPE (`pip install turbobpe`), training and encoding.

    python benchmarks/minbpe_bench.py

RegexTokenizer.train at vocab 10,000 on taylorswift.txt and on 4 MB of Gutenberg text, exact
(batch_size=1) and batched (10), then encoding the same text; medians of 3 runs, each on a
fresh tokenizer.  Also reports whether turboBPE's merges equal ours (they can differ in tie
order even at batch_size=1).
"""
from __future__ import annotations

import argparse
import gzip
import io
import statistics
import time
from contextlib import redirect_stdout
from pathlib import Path

from superword.minbpe import RegexTokenizer

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def timed(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    try:
        with redirect_stdout(io.StringIO()):  # turbobpe prints a banner on import
            import turbobpe
    except ImportError:
        turbobpe = None
    taylor = (DATA / "taylorswift.txt").read_text(encoding="utf-8")
    with gzip.open(DATA / "gutenberg_en_100M.txt.gz", "rt", encoding="utf-8") as f:
        gutenberg = f.read(4_000_000)
    print("| text | trainer | batch_size | train s | encode MB/s | merges equal superword's exact |")
    print("|---|---|---:|---:|---:|---|")
    for name, text in (("taylorswift.txt (185 KB)", taylor), ("Gutenberg 4 MB", gutenberg)):
        mb = len(text.encode("utf-8")) / 1e6
        exact = None
        for trainer in ("superword", "turbobpe"):
            if trainer == "turbobpe" and turbobpe is None:
                print(f"| {name} | turbobpe | | not installed | | |")
                continue
            for batch in (1, 10):
                def train():
                    tok = RegexTokenizer() if trainer == "superword" else turbobpe.RegexTokenizer()
                    with redirect_stdout(io.StringIO()):
                        tok.train(text, 10000, batch_size=batch)
                    return tok
                seconds, tok = timed(train, args.repeat)
                enc_s, _ = timed(lambda: tok.encode(text), args.repeat)
                merges = list(tok.merges.items())
                if trainer == "superword" and batch == 1:
                    exact = merges
                same = "yes" if merges == exact else "no"
                print(f"| {name} | {trainer} | {batch} | {seconds:.3f} | {mb / enc_s:.1f} | {same} |",
                      flush=True)


if __name__ == "__main__":
    main()
