#!/usr/bin/env python3
"""Training speed: superword (BPE, BoundlessBPE, SuperBPE) next to HF tokenizers and rustbpe.

    python benchmarks/train_bench.py                 # 100 MB Gutenberg, vocab 32,768 and 131,072
    python benchmarks/train_bench.py --repeat 1 --vocab 32768

Every configuration runs in a fresh subprocess (so peak RSS is its own) on the same corpus,
already on disk (the .gz is decompressed once to a temporary folder), with the GPT-4o
pre-tokenization pattern and the same number of threads.  Prints a Markdown table of median
wall times, superword's time per stage, and peak RSS.  HF tokenizers and rustbpe are optional
(`pip install tokenizers rustbpe`); missing ones are skipped with a note.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

# Each runner prints one JSON line: {"seconds": ..., "stats": {...}, "rss_mb": ...}
RUNNER = r'''
import json, os, resource, sys, time
kind, path, vocab, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
stats = {}
if kind.startswith("superword"):
    import superword
    algorithm = kind.split(":")[1]
    extra = {"supermerges": vocab // 16} if algorithm == "superbpe" else {}
    start = time.perf_counter()
    tok = superword.train(path, vocab, algorithm, threads=threads, **extra)
    seconds = time.perf_counter() - start
    stats = tok.training_stats
    stats["supermerges"] = tok.num_supermerges
elif kind == "reference":
    import superword
    docs = open(path, encoding="utf-8").read().split("\n")
    start = time.perf_counter()
    for algorithm, extra in [("bpe", {}), ("boundless", {}), ("superbpe", {"supermerges": 200})]:
        superword.train(docs, vocab, algorithm, backend="reference", **extra)
    seconds = time.perf_counter() - start
elif kind == "rust-3models":
    import statistics, superword
    docs = open(path, encoding="utf-8").read().split("\n")
    times = []
    for repeat in range(6):  # the first run warms up; the median of the other five counts
        start = time.perf_counter()
        for algorithm, extra in [("bpe", {}), ("boundless", {}), ("superbpe", {"supermerges": 200})]:
            superword.train(docs, vocab, algorithm, threads=threads, **extra)
        times.append(time.perf_counter() - start)
    seconds = statistics.median(times[1:])
elif kind == "hf":
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
    from superword.reference.pretokenize import GPT4O
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(GPT4O), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=vocab, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    start = time.perf_counter()
    tok.train([path], trainer)
    seconds = time.perf_counter() - start
elif kind == "rustbpe":
    import rustbpe
    from superword.reference.pretokenize import GPT4O
    def lines():
        with open(path, encoding="utf-8") as f:
            for line in f:
                yield line.rstrip("\n")
    tok = rustbpe.Tokenizer()
    start = time.perf_counter()
    tok.train_from_iterator(lines(), vocab, pattern=GPT4O)
    seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "stats": stats,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''


def run(kind: str, path: Path, vocab: int, threads: int) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, "-c", RUNNER, kind, str(path), str(vocab), str(threads)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def available(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def median_run(kind, path, vocab, threads, repeat):
    runs = [run(kind, path, vocab, threads) for _ in range(repeat)]
    best = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    return statistics.median(r["seconds"] for r in runs), best, max(r["rss_mb"] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DATA / "gutenberg_en_100M.txt.gz")
    ap.add_argument("--vocab", type=int, nargs="+", default=[32768, 131072])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-others", action="store_true", help="only superword")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="superword-bench-"))
    try:
        corpus = args.corpus
        if corpus.suffix == ".gz":
            plain = tmp / corpus.name[:-3]
            with gzip.open(corpus, "rb") as f, open(plain, "wb") as g:
                shutil.copyfileobj(f, g)
            corpus = plain
        size = corpus.stat().st_size / 1e6
        print(f"corpus: {args.corpus.name} ({size:.0f} MB on disk), {args.threads} threads, "
              f"median of {args.repeat}\n")
        kinds = ["superword:bpe", "superword:boundless", "superword:superbpe"]
        if not args.skip_others:
            for kind, module in (("hf", "tokenizers"), ("rustbpe", "rustbpe")):
                if available(module):
                    kinds.append(kind)
                else:
                    print(f"(skipping {kind}: `pip install {module}` to include it)")
        print("| trainer | vocab | wall s | pretokenize+count s | phase 1 s | candidates s | phase 2 s | supermerges | peak RSS MB |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for vocab in args.vocab:
            for kind in kinds:
                seconds, best, rss = median_run(kind, corpus, vocab, args.threads, args.repeat)
                s = best["stats"]
                cell = lambda k: f"{s[k]:.2f}" if k in s else ""
                name = {"hf": "HF tokenizers BPE", "rustbpe": "rustbpe BPE"}.get(
                    kind, "superword " + kind.split(":")[-1])
                print(f"| {name} | {vocab:,} | {seconds:.2f} | {cell('pretokenize_count')} | "
                      f"{cell('phase1')} | {cell('candidates')} | {cell('phase2')} | "
                      f"{s.get('supermerges', '')} | {rss:.0f} |", flush=True)
        small = DATA / "taylorswift.txt"
        if small.exists():
            ref = run("reference", small, 5000, 1)["seconds"]
            rust = run("rust-3models", small, 5000, args.threads)["seconds"]
            print(f"\ntaylorswift.txt, vocab 5,000, word + BoundlessBPE + SuperBPE (200 supermerges): "
                  f"reference {ref:.2f} s, rust {rust:.3f} s ({ref / rust:.0f}x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
