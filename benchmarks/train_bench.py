#!/usr/bin/env python3
"""Training speed: superword (BPE, BoundlessBPE, SuperBPE) next to HF tokenizers, rustbpe and gigabpe.

    python benchmarks/train_bench.py                 # 100 MB Gutenberg, vocab 32,768 and 131,072
    python benchmarks/train_bench.py --repeat 1 --vocab 32768
    python benchmarks/train_bench.py --build before=../old/python --build after=python

Every configuration runs in a fresh subprocess (so peak RSS is its own) on the same corpus,
already on disk (the .gz is decompressed once to a temporary folder), with the same number of
threads; superword BPE also runs on one thread, to show what the second core brings.  The
GPT-4o pre-tokenization pattern is used by every trainer except gigabpe, which only has the
GPT-2 one ("bytelevel").  Repeats are interleaved: each round runs every configuration once,
so that a busy minute on a shared machine slows them all alike.  Prints Markdown tables of
median wall times, user CPU seconds, superword's time per stage, and peak RSS, then the
load average; and, on `taylorswift.txt` at vocab 5,000, each model's time in the Rust core
next to the pure-Python reference (medians on both sides; `--only-small` runs just that).
HF tokenizers, rustbpe and gigabpe are optional (`pip install tokenizers rustbpe gigabpe`);
missing ones are skipped with a note.

`--build LABEL=DIR` (repeatable) runs superword's configurations once per build, with DIR
put first on PYTHONPATH (a folder holding a `superword` package with its compiled core):
before/after comparisons in the same run.
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

# Timed runs of one small training (taylorswift.txt): the reference's, and the Rust core's after
# one untimed warm-up run; each side's median is reported.
SMALL_REFERENCE_RUNS = 3
SMALL_RUST_RUNS = 10

# Each runner prints one JSON line: {"seconds": ..., "stats": {...}, "rss_mb": ..., "user": ...}
RUNNER_HEAD = f"SMALL_REFERENCE_RUNS, SMALL_RUST_RUNS = {SMALL_REFERENCE_RUNS}, {SMALL_RUST_RUNS}\n"
RUNNER = RUNNER_HEAD + r'''
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
elif kind.startswith("small:"):
    # one model on a small corpus: the reference's median of 3 runs, the Rust core's median
    # of 10 runs after one to warm up (a single run of the reference moved by up to 2x)
    import statistics, superword
    backend, algorithm = kind.split(":")[1:]
    extra = {"supermerges": 200} if algorithm == "superbpe" else {}
    docs = open(path, encoding="utf-8").read().split("\n")
    times = []
    timed = SMALL_REFERENCE_RUNS if backend == "reference" else SMALL_RUST_RUNS
    for repeat in range(timed if backend == "reference" else timed + 1):
        start = time.perf_counter()
        superword.train(docs, vocab, algorithm, backend=backend, threads=threads, **extra)
        times.append(time.perf_counter() - start)
    seconds = statistics.median(times[-timed:])
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
elif kind == "gigabpe":
    import gigabpe
    start = time.perf_counter()
    gigabpe.train_bpe([path], vocab, pretokenizer="bytelevel", threads=threads)
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
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "stats": stats, "rss_mb": usage.ru_maxrss / 1024,
                  "user": usage.ru_utime}))
'''


def run(kind: str, path: Path, vocab: int, threads: int, pythonpath: str | None = None) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([pythonpath] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    out = subprocess.run([sys.executable, "-c", RUNNER, kind, str(path), str(vocab), str(threads)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def available(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def summary(runs: list[dict]) -> tuple[float, float, dict, float]:
    """Median wall seconds, median user seconds, the median run's stats, and the peak RSS."""
    middle = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    return (statistics.median(r["seconds"] for r in runs), statistics.median(r["user"] for r in runs),
            middle["stats"], max(r["rss_mb"] for r in runs))


def parallel_share(one: float, many: float, threads: int) -> float:
    """The share p of a stage that runs in parallel, by Amdahl's law, from its time on one thread
    and on `threads`: many = one * ((1 - p) + p / threads); clipped to [0, 1]."""
    if one <= 0 or threads <= 1:
        return 0.0
    return min(1.0, max(0.0, (1 - many / one) / (1 - 1 / threads)))


def print_scaling(vocab: int, label: str, one: tuple, many: tuple, threads: int) -> None:
    """Stage by stage: the speed-up `threads` gave BPE training, the parallel share it implies,
    and what Amdahl's law projects for 16 and 64 cores (an upper bound: memory bandwidth and
    reading the corpus do not scale that far)."""
    stages = [("pretokenize_count", "pretokenize + count"), ("phase1", "phase 1 (merges)")]
    rows = [(name, one[2].get(key, 0.0), many[2].get(key, 0.0)) for key, name in stages]
    staged = sum(r[1] for r in rows)
    rows.append(("rest (reading, setup, writing)", max(0.0, one[0] - staged),
                 max(0.0, many[0] - sum(r[2] for r in rows))))
    title = f"BPE training, vocab {vocab:,}" + (f" ({label})" if label else "")
    print(f"\n{title}: 1 thread against {threads}, stage by stage, with Amdahl projections\n")
    print(f"| stage | 1 thread s | {threads} threads s | speed-up | parallel share | 16 cores s | 64 cores s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    totals = [0.0, 0.0, 0.0, 0.0]
    for name, t1, tn in rows:
        p = parallel_share(t1, tn, threads)
        t16, t64 = t1 * ((1 - p) + p / 16), t1 * ((1 - p) + p / 64)
        for k, v in enumerate((t1, tn, t16, t64)):
            totals[k] += v
        speedup = f"{t1 / tn:.2f}x" if tn > 0 else ""
        print(f"| {name} | {t1:.2f} | {tn:.2f} | {speedup} | {p:.0%} | {t16:.2f} | {t64:.2f} |")
    t1, tn, t16, t64 = totals
    print(f"| whole run | {t1:.2f} | {tn:.2f} | {t1 / tn:.2f}x | {parallel_share(t1, tn, threads):.0%} "
          f"| {t16:.2f} ({t1 / t16:.1f}x) | {t64:.2f} ({t1 / t64:.1f}x) |")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DATA / "gutenberg_en_100M.txt.gz")
    ap.add_argument("--vocab", type=int, nargs="+", default=[32768, 131072])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-others", action="store_true", help="only superword")
    ap.add_argument("--skip-small", action="store_true", help="no taylorswift.txt comparison")
    ap.add_argument("--only-small", action="store_true", help="only the taylorswift.txt comparison")
    ap.add_argument("--build", action="append", default=[], metavar="LABEL=DIR",
                    help="run superword from DIR (first on PYTHONPATH); repeatable")
    args = ap.parse_args()
    builds: list[tuple[str, str | None]] = [(b.split("=", 1)[0], str(Path(b.split("=", 1)[1]).resolve()))
                                            for b in args.build] or [("", None)]

    tmp = Path(tempfile.mkdtemp(prefix="superword-bench-"))
    try:
        if not args.only_small:
            corpus = args.corpus
            if corpus.suffix == ".gz":
                plain = tmp / corpus.name[:-3]
                with gzip.open(corpus, "rb") as f, open(plain, "wb") as g:
                    shutil.copyfileobj(f, g)
                corpus = plain
            size = corpus.stat().st_size / 1e6
            print(f"corpus: {args.corpus.name} ({size:.0f} MB on disk), {args.threads} threads, "
                  f"median of {args.repeat}, load average at start {load()}\n")
            # (kind, threads, build label, PYTHONPATH)
            configs: list[tuple[str, int, str, str | None]] = []
            for label, pythonpath in builds:
                for kind, threads in [("superword:bpe", 1), ("superword:bpe", args.threads),
                                      ("superword:boundless", args.threads),
                                      ("superword:superbpe", args.threads)]:
                    configs.append((kind, threads, label, pythonpath))
            if not args.skip_others:
                for kind, module in (("hf", "tokenizers"), ("rustbpe", "rustbpe"), ("gigabpe", "gigabpe")):
                    if available(module):
                        configs.append((kind, args.threads, "", None))
                    else:
                        print(f"(skipping {kind}: `pip install {module}` to include it)")
            names = {"hf": "HF tokenizers BPE", "rustbpe": "rustbpe BPE", "gigabpe": "gigabpe BPE (GPT-2 pattern)"}
            print("| trainer | threads | vocab | wall s | user s | pretokenize+count s | phase 1 s | candidates s "
                  "| phase 2 s | supermerges | peak RSS MB |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            scaling: dict[int, dict[tuple[str, int, str], tuple[float, float, dict, float]]] = {}
            for vocab in args.vocab:
                runs: dict[int, list[dict]] = {i: [] for i in range(len(configs))}
                for _ in range(args.repeat):
                    for i, (kind, threads, _, pythonpath) in enumerate(configs):
                        runs[i].append(run(kind, corpus, vocab, threads, pythonpath))
                for i, (kind, threads, label, _) in enumerate(configs):
                    seconds, user, s, rss = summary(runs[i])
                    cell = lambda k: f"{s[k]:.2f}" if k in s else ""
                    name = names.get(kind, "superword " + kind.split(":")[-1])
                    if label:
                        name += f" ({label})"
                    print(f"| {name} | {threads} | {vocab:,} | {seconds:.2f} | {user:.2f} | "
                          f"{cell('pretokenize_count')} | {cell('phase1')} | {cell('candidates')} | "
                          f"{cell('phase2')} | {s.get('supermerges', '')} | {rss:.0f} |", flush=True)
                scaling[vocab] = {(kind, threads, label): summary(runs[i])
                                  for i, (kind, threads, label, _) in enumerate(configs)}
            for vocab, results in scaling.items():
                for label, _ in builds:
                    one = results.get(("superword:bpe", 1, label))
                    many = results.get(("superword:bpe", args.threads, label))
                    if one is not None and many is not None and args.threads > 1:
                        print_scaling(vocab, label, one, many, args.threads)
            print(f"\nload average at the end: {load()}")
        small = DATA / "taylorswift.txt"
        if small.exists() and not args.skip_small:
            print(f"\n{small.name}, vocab 5,000 (SuperBPE: 200 supermerges), one thread, medians on "
                  f"both sides: the reference's of {SMALL_REFERENCE_RUNS} runs in one process, the Rust "
                  f"core's of {SMALL_RUST_RUNS} runs in one process after a warm-up\n")
            print(f"| model | build | reference s (median of {SMALL_REFERENCE_RUNS}) "
                  f"| Rust core s (median of {SMALL_RUST_RUNS}) | ratio |")
            print("|---|---|---:|---:|---:|")
            for algorithm in ("bpe", "boundless", "superbpe"):
                ref = run(f"small:reference:{algorithm}", small, 5000, 1)["seconds"]
                for label, pythonpath in builds:
                    rust = run(f"small:rust:{algorithm}", small, 5000, 1, pythonpath)["seconds"]
                    print(f"| {algorithm} | {label} | {ref:.2f} | {rust:.4f} | {ref / rust:.0f}x |",
                          flush=True)
            print(f"\nload average at the end: {load()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
