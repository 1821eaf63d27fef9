#!/usr/bin/env python3
"""Count files: counting, training from counts, file sizes, Ray, growth with corpus size.

    python benchmarks/count_bench.py                     # everything, 100 MB Gutenberg
    python benchmarks/count_bench.py --skip-ray --skip-growth --skip-prune
    python benchmarks/count_bench.py --only-two-pass      # memory of training in two passes

The .gz corpus is decompressed once to a temporary folder.  Every timed configuration runs in
a fresh subprocess (its peak RSS is its own), with all cores.  Prints the issue's target
table, the growth of distinct pretokens and letter runs with corpus size (10, 25, 50, 100 MB)
and its power-law fit, what ``min_count`` pruning changes, and the memory of BoundlessBPE
trained in two passes (the Ray path, ``superword._ray.train_two_pass``) at the same sizes: each
task of both passes runs in a fresh process of its own, one after another, so that its peak RSS
is its own, and the driver's is measured apart.
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

# Each runner prints one JSON line.
RUNNER = r'''
import json, resource, sys, time
import superword
kind, path, out, vocab = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
result = {}
start = time.perf_counter()
if kind == "train-text":
    for algorithm in ("bpe", "boundless"):
        t = time.perf_counter()
        tok = superword.train(path, vocab, algorithm)
        result[algorithm] = time.perf_counter() - t
        result[algorithm + "_count_stage"] = tok.training_stats["pretokenize_count"]
        result[algorithm + "_phase1"] = tok.training_stats["phase1"]
elif kind in ("count", "count-noruns"):
    c = superword.count(path, runs=kind == "count")
    result["count"] = time.perf_counter() - start
    t = time.perf_counter()
    c.save(out)
    result["save"] = time.perf_counter() - t
    result["words"], result["runs"] = c.num_words, c.num_runs
    if c.with_runs:
        pruned = c.prune(2)
        result["words2"], result["runs2"] = pruned.num_words, pruned.num_runs
elif kind.startswith("from-counts:"):
    algorithm = kind.split(":")[1]
    c = superword.load_counts(path)
    result["load"] = time.perf_counter() - start
    t = time.perf_counter()
    tok = superword.train(counts=c, vocab_size=vocab, algorithm=algorithm)
    result["train"] = time.perf_counter() - t
    result["stats"] = tok.training_stats
elif kind == "train-boundless":
    import hashlib
    tok = superword.train(path, vocab, "boundless")
    result["model_sha"] = hashlib.sha256(tok.model_text().encode()).hexdigest()
elif kind == "ray":
    import ray
    t = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    result["startup"] = time.perf_counter() - t
    for repeat in range(2):  # the first run also starts the workers and imports superword in them
        t = time.perf_counter()
        c = superword.count(path, executor="ray")
        result[f"count_{repeat}"] = time.perf_counter() - t
    c.save(out)
    local = superword.count(path)
    result["identical"] = local.to_bytes() == c.to_bytes()
result["seconds"] = time.perf_counter() - start
result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(result))
'''


def run(kind: str, path: Path, out: Path, vocab: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", RUNNER, kind, str(path), str(out), str(vocab)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def prefix(src: Path, dst: Path, megabytes: int) -> Path:
    """The first lines of ``src`` up to about ``megabytes`` MB."""
    limit = megabytes * 1_000_000
    with open(src, "rb") as f, open(dst, "wb") as g:
        size = 0
        for line in f:
            if size >= limit:
                break
            g.write(line)
            size += len(line)
    return dst


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(a, b) of y = a * x**b by least squares on logarithms."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    b = sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sum((x - mx) ** 2 for x in lx)
    return math.exp(my - b * mx), b


def _measured(name: str, args: tuple, threads: int | None) -> tuple[object, float]:
    """A task of ``superword._ray`` (``name``) run in this fresh process: its result and the
    process's peak RSS in MB."""

    from superword import _ray
    result = getattr(_ray, name)(*args, **({} if threads is None else {"threads": threads}))
    return result, _ray._peak_bytes() / 2**20


def _vm(field: str) -> int:
    """A ``Vm...`` line of ``/proc/self/status``, in bytes."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _serve_part(conn, data: bytes, name: str) -> None:
    """A part of phase 2 in a process of its own (what a Ray actor is): answers the driver's
    calls ``(method, args)`` until ``None``."""
    from superword import _ray
    part = _ray._Part(data, name)
    del data
    while (message := conn.recv()) is not None:
        method, args = message
        conn.send(getattr(part, method)(*args))


def two_pass_driver(path: Path, vocab: int, shard_mb: int, uncut: bool) -> None:
    """Train BoundlessBPE in two passes over ``path`` with shards of ``shard_mb`` MB, each task in
    a fresh process; print one JSON line: the driver's and the tasks' peak RSS, the candidates
    (or segments, when the tasks cut: not ``uncut``)."""
    import multiprocessing
    import time
    from concurrent.futures import ProcessPoolExecutor

    from superword import _ray, _train

    spawn = multiprocessing.get_context("spawn")
    tasks: list[dict] = []

    class InFreshProcesses(_ray._Local):
        def task(self, function, threads, returns=1):
            def run_one(*args):
                with ProcessPoolExecutor(1, mp_context=spawn, max_tasks_per_child=1) as pool:
                    result, rss = pool.submit(_measured, function.__name__, args, 1 if threads else None).result()
                size = sum(map(len, result)) if isinstance(result, list) else len(result)
                tasks.append({"task": function.__name__, "rss_mb": rss, "bytes": size})
                return result
            return run_one

        def actor(self, cls, *args):
            mine, theirs = spawn.Pipe()
            process = spawn.Process(target=_serve_part, args=(theirs, *args), daemon=True)
            process.start()
            return process, mine

        def call(self, holders, method, *args):
            for _, conn in holders:
                conn.send((method, args))
            return [conn.recv() for _, conn in holders]

        def release(self, holders):
            for process, conn in holders:
                conn.send(None)
                process.join()
            holders.clear()

    _ray.MIN_RANGE_BYTES, _ray.RANGES_PER_CPU = shard_mb << 20, 1 << 20
    _ray.CUT_IN_TASKS = not uncut
    in_parts = _ray._phase_two_in_parts
    phase2 = {}

    def measured_phase_two(*args):
        # the driver's peak during phase 2 alone: VmHWM reset to the current RSS (clear_refs 5)
        phase2["rss_before_mb"] = _vm("VmRSS") / 2**20
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        tok = in_parts(*args)
        phase2["peak_mb"] = _vm("VmHWM") / 2**20
        return tok
    _ray._phase_two_in_parts = measured_phase_two
    original = _ray._Local
    _ray._Local = InFreshProcesses  # (train_two_pass(local=True) makes its runner from this name)
    start = time.perf_counter()
    options = dict(vocab_size=vocab, algorithm="boundless", supermerges=None, greedy_split=False, tau=1.1,
                   blowup=False, threads=1, progress=None)
    seen = {}

    def keep(stage: str, done: int, total: int) -> None:
        if stage == "candidates":
            seen["candidates"] = total
    options["progress"] = keep
    tok = _train._train_two_pass(str(path), options, True, None, None, None, "text", None, None, start, local=True)
    _ray._Local = original
    strong = [t["bytes"] for t in tasks if t["task"] == "_strong_part"]
    parts = _ray.LAST_PHASE2 if tok.provenance["settings"]["phase2_parts"] else {}
    result = {"seconds": time.perf_counter() - start, "driver_rss_mb": _ray._peak_bytes() / 2**20,
              "phase2_parts": tok.provenance["settings"]["phase2_parts"],
              "driver_phase2_mb": phase2.get("peak_mb", 0.0), "driver_before_phase2_mb": phase2.get("rss_before_mb"),
              "driver_pairs": parts.get("driver_pairs"), "round_trips": parts.get("round_trips"),
              "part_rss_mb": max((peak / 2**20 for _, _, _, peak in parts.get("parts_sizes", [])), default=0.0),
              "part_segments": max((n for n, _, _, _ in parts.get("parts_sizes", [])), default=0),
              "tasks": tasks, "stats": tok.training_stats, "model_sha": __import__("hashlib").sha256(
                  tok.model_text().encode()).hexdigest(), "candidates": seen.get("candidates"),
              "final_table_bytes": tasks[-1]["bytes"], "strong_bytes": sum(strong),
              "passes": tok.provenance["settings"]["passes"],
              "shipped_bytes": sum(t["bytes"] for t in tasks)}
    print(json.dumps(result))


#: the map and merge tasks of pass 2, by path
_PASS2_MAPS = ("_candidates_part", "_pairs_part", "_segments_part")
_MERGES = ("_merge_parts", "_merge_candidate_parts", "_merge_pair_parts", "_strong_part", "_merge_segment_parts")


def two_pass_growth(text: Path, tmp: Path, mb: float, vocab: int, shard_mb: int, check: bool,
                    uncut: bool) -> None:
    """The two-pass memory table at 10, 25, 50 and 100 MB, and its fits: pass 2 cut in the tasks
    (segments), or not (``uncut``: the candidates)."""
    what = "uncut candidates (two passes)" if uncut else "segments cut in the tasks (three passes)"
    print(f"\nBoundlessBPE {vocab:,}, pass 2 returns {what}, shards of {shard_mb} MB, every task in a fresh "
          f"process (peak RSS of a fresh `import superword`: about 40 MB); load average "
          f"{os.getloadavg()[0]:.2f}\n")
    print("(peak memory: VmHWM of each process; phase 2 in parts: each part in a process of its own, as "
          "a Ray actor, the driver holding the pair counts)\n")
    print("| text | shards | largest pass-1 task | largest pass-2 map task | largest merge task | driver | "
          "driver's growth in phase 2 | phase-2 parts | largest part | segments of the largest part | distinct pairs on the driver | "
          "distinct candidates or segments | per MB | strong pairs shipped | final table | all bytes shipped | "
          "seconds | same model as one pass |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    sizes, cands, merge_rss, driver_rss, map_rss, part_rss, pairs = [], [], [], [], [], [], []
    part_segments: list[int] = []
    for megabytes in (10, 25, 50, 100):
        part = text if megabytes >= mb else prefix(text, tmp / f"t{megabytes}.txt", megabytes)
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
        done = subprocess.run([sys.executable, __file__, "--two-pass-driver", str(part), "--vocab", str(vocab),
                               "--shard-mb", str(shard_mb)] + (["--uncut"] if uncut else []),
                              capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(f"two-pass driver failed:\n{done.stderr[-3000:]}")
        r = json.loads(done.stdout.strip().splitlines()[-1])
        by = lambda names: max((t["rss_mb"] for t in r["tasks"] if t["task"] in names), default=0.0)
        shards = sum(t["task"] == "_count_part" for t in r["tasks"])
        same = "-"
        if check:
            one = run("train-boundless", part, tmp / "x", vocab)
            same = "yes" if one["model_sha"] == r["model_sha"] else "NO"
        sizes.append(part.stat().st_size / 1e6)
        cands.append(r["candidates"])
        merge_rss.append(by(_MERGES))
        driver_rss.append(r["driver_rss_mb"])
        map_rss.append(by(_PASS2_MAPS))
        part_rss.append(r["part_rss_mb"])
        part_segments.append(r["part_segments"])
        pairs.append(r["driver_pairs"] or 0)
        print(f"| {sizes[-1]:.0f} MB | {shards} | {by(('_count_part',)):.0f} MB | {map_rss[-1]:.0f} MB | "
              f"{merge_rss[-1]:.0f} MB | {driver_rss[-1]:.0f} MB | {r['driver_phase2_mb'] - r['driver_before_phase2_mb']:.0f} MB | {r['phase2_parts']} | {part_rss[-1]:.0f} MB | "
              f"{r['part_segments']:,} | {pairs[-1]:,} | {cands[-1]:,} | {cands[-1] / sizes[-1]:,.0f} | "
              f"{r['strong_bytes'] / 1e6:.2f} MB | {r['final_table_bytes'] / 1e6:.1f} MB | "
              f"{r['shipped_bytes'] / 1e6:.0f} MB | {r['seconds']:.0f} | {same} |", flush=True)
    a, b = fit(sizes, cands)
    print(f"fit distinct {'candidates' if uncut else 'segments'}: {a:.4g} × MB^{b:.3f}; at 100 GB: "
          f"{a * 102_400 ** b:.4g}; at 1 TB: {a * 1_048_576 ** b:.4g}")
    # memory is a fixed part (the interpreter, the word model) plus a part that grows with the
    # table: a straight line in the table's size, fitted on the sizes where the task exists,
    # projected with the table's fit
    if all(pairs):
        pa, pb = fit(sizes, pairs)
        print(f"fit distinct pairs on the driver: {pa:.4g} × MB^{pb:.3f}; at 100 GB: {pa * 102_400 ** pb:.4g}; "
              f"at 1 TB: {pa * 1_048_576 ** pb:.4g}")
    if all(pairs) and all(part_rss):
        # phase 2 in parts: a part's memory against its own segments, the driver's against its pairs
        per, fixed = line([float(n) for n in part_segments], part_rss)
        at = [a * x ** b for x in (102_400, 1_048_576)]
        need = [math.ceil(n * per / (32 * 1024 - fixed)) for n in at]
        print(f"fit largest phase-2 part: {fixed:.0f} MB + {per * 1e6:.0f} bytes per segment it holds; parts of "
              f"at most 32 GB: {need[0]:,} at 100 GB, {need[1]:,} at 1 TB")
    # the driver's peak follows phase 1 (the pass-1 counts it holds, the word model it trains), not the
    # segments: a power law in the text, with and without the interpreter's fixed 40 MB
    da, db = fit(sizes, driver_rss)
    ea, eb = fit(sizes, [y - 40 for y in driver_rss])
    print(f"fit driver peak: {da:.4g} × MB^{db:.3f} MB (at 100 GB: {da * 102_400 ** db / 1024:,.1f} GB; at 1 TB: "
          f"{da * 1_048_576 ** db / 1024:,.1f} GB); 40 MB + {ea:.4g} × MB^{eb:.3f} MB (at 100 GB: "
          f"{(40 + ea * 102_400 ** eb) / 1024:,.1f} GB; at 1 TB: {(40 + ea * 1_048_576 ** eb) / 1024:,.1f} GB)")
    for name, ys in (("largest merge task", merge_rss),):
        xs = [c for c, y in zip(cands, ys) if y > 0]
        ys = [y for y in ys if y > 0]
        per, fixed = line(xs, ys)
        at = [a * x ** b for x in (102_400, 1_048_576)]
        print(f"fit {name}: {fixed:.0f} MB + {per * 1e6:.0f} bytes per distinct entry; at 100 GB: "
              f"{(fixed + per * at[0]) / 1024:,.0f} GB; at 1 TB: {(fixed + per * at[1]) / 1024:,.0f} GB")


def line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(slope, intercept) of y = slope * x + intercept by least squares."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DATA / "gutenberg_en_100M.txt.gz")
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--skip-growth", action="store_true")
    ap.add_argument("--skip-prune", action="store_true")
    ap.add_argument("--skip-table", action="store_true", help="only the growth and pruning measurements")
    ap.add_argument("--skip-two-pass", action="store_true")
    ap.add_argument("--only-two-pass", action="store_true", help="only the two-pass memory measurements")
    ap.add_argument("--shard-mb", type=int, default=10, help="shard size of the two-pass measurements")
    ap.add_argument("--no-check", action="store_true", help="two-pass: skip training in one pass to compare")
    ap.add_argument("--uncut", action="store_true",
                    help="two-pass: also measure pass 2 returning the uncut candidates (the path before the cut)")
    ap.add_argument("--two-pass-driver", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.two_pass_driver is not None:
        return two_pass_driver(args.two_pass_driver, args.vocab, args.shard_mb, args.uncut)
    if args.only_two_pass:
        args.skip_table = args.skip_growth = args.skip_prune = args.skip_ray = True
    if not args.corpus.exists():
        raise SystemExit(f"{args.corpus} is not present")
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    tmp = Path(tempfile.mkdtemp(prefix="count_bench-"))
    try:
        text = tmp / "corpus.txt"
        with gzip.open(args.corpus, "rb") as f, open(text, "wb") as g:
            shutil.copyfileobj(f, g, 1 << 24)
        size = text.stat().st_size
        swc, bpe_swc = tmp / "corpus.swc", tmp / "bpe.swc"

        mb = size / 1e6
        if not args.skip_table:
            today = run("train-text", text, tmp / "x", args.vocab)
            counted = run("count", text, swc, args.vocab)
            counted_bpe = run("count-noruns", text, bpe_swc, args.vocab)
            from_bpe = run("from-counts:bpe", bpe_swc, tmp / "x", args.vocab)
            from_full_bpe = run("from-counts:bpe", swc, tmp / "x", args.vocab)
            from_boundless = run("from-counts:boundless", swc, tmp / "x", args.vocab)
            ray = None if args.skip_ray else run("ray", text, tmp / "ray.swc", args.vocab)

            print(f"\n{mb:.0f} MB of text ({args.corpus.name}), vocab {args.vocab:,}\n")
            print("| measure | target | measured |")
            print("|---|---|---|")
            print(f"| counting to a count file, BPE (no runs) | ≤ train's count stage ({today['bpe_count_stage']:.2f} s) "
                  f"| {counted_bpe['count']:.2f} s + {counted_bpe['save']:.2f} s write |")
            print(f"| counting to a count file, with runs | ≤ train's count stage for BoundlessBPE "
                  f"({today['boundless_count_stage']:.2f} s) | {counted['count']:.2f} s + {counted['save']:.2f} s write |")
            print(f"| training BPE {args.vocab:,} from the count file (BPE-only file) | ≤ 0.5 s | "
                  f"{from_bpe['load']:.2f} s load + {from_bpe['train']:.2f} s train (train's phase 1 from text "
                  f"in the same run: {today['bpe_phase1']:.2f} s) |")
            print(f"| training BPE {args.vocab:,} from the count file with runs | ≤ 0.5 s | "
                  f"{from_full_bpe['load']:.2f} s load + {from_full_bpe['train']:.2f} s train |")
            print(f"| training BoundlessBPE {args.vocab:,}: from text / from counts | - | {today['boundless']:.2f} s / "
                  f"{from_boundless['load']:.2f} s load + {from_boundless['train']:.2f} s train |")
            print(f"| count file size, BPE only | ≤ 15 % of the text | {bpe_swc.stat().st_size / 1e6:.1f} MB "
                  f"({100 * bpe_swc.stat().st_size / size:.1f} %) |")
            print(f"| count file size, with runs | ≤ 15 % of the text | {swc.stat().st_size / 1e6:.1f} MB "
                  f"({100 * swc.stat().st_size / size:.1f} %) |")
            print(f"| peak RSS: BPE from counts (BPE-only file) / BoundlessBPE from counts / from text | - | "
                  f"{from_bpe['rss_mb']:.0f} MB / {from_boundless['rss_mb']:.0f} MB / {today['rss_mb']:.0f} MB "
                  f"(BPE then BoundlessBPE in one process) |")
            print(f"| peak RSS: counting with runs / without | - | {counted['rss_mb']:.0f} MB / "
                  f"{counted_bpe['rss_mb']:.0f} MB |")
            if ray is not None:
                print(f"| Ray, local 2-CPU cluster: counting (second run) | ≤ 2 × local ({counted['count']:.2f} s) | "
                      f"{ray['count_1']:.2f} s (first run {ray['count_0']:.2f} s; Ray start-up {ray['startup']:.1f} s, "
                      f"excluded; identical bytes: {ray['identical']}) |")
            print(f"\ndistinct pretokens {counted['words']:,}, distinct letter runs {counted['runs']:,}")

        if not args.skip_growth:
            print("\n| text | distinct pretokens | distinct letter runs | count file | pretokens / runs counted ≥ 2 times |")
            print("|---|---|---|---|---|")
            sizes, words, runs, files, runs2 = [], [], [], [], []
            for megabytes in (10, 25, 50, 100):
                part = text if megabytes >= mb else prefix(text, tmp / f"p{megabytes}.txt", megabytes)
                out = run("count", part, tmp / f"p{megabytes}.swc", args.vocab)
                sizes.append(part.stat().st_size / 1e6)
                words.append(out["words"])
                runs.append(out["runs"])
                files.append((tmp / f"p{megabytes}.swc").stat().st_size / 1e6)
                runs2.append(out["runs2"])
                print(f"| {sizes[-1]:.0f} MB | {words[-1]:,} | {runs[-1]:,} | {files[-1]:.1f} MB | "
                      f"{out['words2']:,} / {out['runs2']:,} |")
            for name, ys in (("pretokens", words), ("runs", runs), ("file MB", files), ("runs counted ≥ 2", runs2)):
                a, b = fit(sizes, ys)
                print(f"fit {name}: {a:.4g} × MB^{b:.3f}; at 100 GB: {a * 102_400 ** b:.4g}")

        if not args.skip_prune:
            import superword
            from superword import stats
            if not swc.exists():
                superword.count(text).save(swc)
            exact_counts = superword.load_counts(swc)
            sample = text.read_bytes()[-2_000_000:].decode("utf-8", "ignore").split("\n")[1:]
            print("\n| algorithm | min_count | count file | pretokens | runs | tokens shared with the exact model | "
                  "bytes/token (last 2 MB of the training text) |")
            print("|---|---|---|---|---|---|---|")
            for algorithm in ("bpe", "boundless"):
                exact = superword.train(counts=exact_counts, vocab_size=args.vocab, algorithm=algorithm)
                base = stats.evaluate([exact], sample)[0]["bytes_per_token"]
                print(f"| {algorithm} | off | {swc.stat().st_size / 1e6:.1f} MB | {exact_counts.num_words:,} | "
                      f"{exact_counts.num_runs:,} | 100 % | {base:.4f} |")
                exact_tokens = {raw for _, raw, _ in exact}
                for m in (2, 5):
                    pruned = exact_counts.prune(m)
                    tok = superword.train(counts=pruned, vocab_size=args.vocab, algorithm=algorithm)
                    shared = len(exact_tokens & {raw for _, raw, _ in tok}) / len(exact_tokens)
                    bpt = stats.evaluate([tok], sample)[0]["bytes_per_token"]
                    print(f"| {algorithm} | {m} | {len(pruned.to_bytes()) / 1e6:.1f} MB | {pruned.num_words:,} | "
                          f"{pruned.num_runs:,} | {100 * shared:.2f} % | {bpt:.4f} |")
        if not args.skip_two_pass:
            two_pass_growth(text, tmp, mb, args.vocab, args.shard_mb, not args.no_check, False)
            if args.uncut:
                two_pass_growth(text, tmp, mb, args.vocab, args.shard_mb, False, True)  # (checked before)
        print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
