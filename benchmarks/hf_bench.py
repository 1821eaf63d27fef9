"""Throughput of superword inside transformers: ``SuperwordTokenizer``'s batch call beside
``encode_batch`` and beside native ``tokenizers`` on a stock export of the same model.  Prints a
Markdown table of MB/s (UTF-8 bytes of the texts per second; best of --repeat runs).

    python benchmarks/hf_bench.py [--docs 20000] [--vocab 8000] [--repeat 3] [--threads N]

Model: BoundlessBPE trained on the first --train-docs documents of
../shared/data/gutenberg_en_100M.txt.gz; texts: the --docs documents after them (English prose
paragraphs).  Rows:

* ``encode_batch`` (lists): the Rust core alone, the ceiling of the batch call;
* ``tok(texts)`` plain / padded (``padding=True``) / with offsets (``return_offsets_mapping``):
  the batch call, which builds its BatchEncoding from one ``encode_batch`` call, and the same
  call through transformers' generic per-sequence path (``fast_batch = False``), for the ratio;
* native ``tokenizers`` (``encode_batch_fast``; ``encode_batch`` for offsets) and
  transformers' ``PreTrainedTokenizerFast`` on the stock ``tokenizer.json`` export (approximate
  ids for this model: the speed of the stock path, not of the same ids).
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import superword  # noqa: E402
from helpers import DATA  # noqa: E402


def documents(path: Path, start: int, count: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in itertools.islice(f, start, start + count)]


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    run()  # warm up (caches, pools, first allocations)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--train-docs", type=int, default=20000)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="RAYON_NUM_THREADS for the Rust core and tokenizers")
    parser.add_argument("--batch", type=int, default=None,
                        help="texts per call, as datasets.map(batched=True) makes them (its default is 1000); "
                             "default: all texts in one call (padding then pads to the longest of all)")
    args = parser.parse_args()
    if args.threads is not None:
        os.environ["RAYON_NUM_THREADS"] = str(args.threads)  # (tokenizers reads it too)
    import tokenizers
    import transformers
    from superword.hf import SuperwordTokenizer

    corpus = DATA / "gutenberg_en_100M.txt.gz"
    if not corpus.exists():
        sys.exit(f"{corpus} is not present (the shared data folder is needed)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", superword.TrainingShortfall)
        model = superword.train(documents(corpus, 0, args.train_docs), vocab_size=args.vocab, algorithm="boundless")
    texts = documents(corpus, args.train_docs, args.docs)
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    eot = "<|endoftext|>"
    with tempfile.TemporaryDirectory() as folder:
        model.save(f"{folder}/tok.model")
        tok = SuperwordTokenizer(f"{folder}/tok.model", eos_token=eot, pad_token=eot)
        model.save_hf(f"{folder}/stock", eos_token=eot, pad_token=eot)
        native = tokenizers.Tokenizer.from_file(f"{folder}/stock/tokenizer.json")
        fast = transformers.PreTrainedTokenizerFast(tokenizer_file=f"{folder}/stock/tokenizer.json",
                                                    eos_token=eot, pad_token=eot)
    padded_native = tokenizers.Tokenizer.from_str(native.to_str())
    padded_native.enable_padding(pad_id=native.token_to_id(eot), pad_token=eot)

    size = args.batch or len(texts)
    chunks = [texts[i:i + size] for i in range(0, len(texts), size)]

    def per_batch(call: Callable[[list[str]], object]) -> Callable[[], object]:
        return lambda: [call(chunk) for chunk in chunks]

    def generic(**kwargs: object) -> Callable[[], object]:
        def run() -> object:
            tok.fast_batch = False
            try:
                return [tok(chunk, **kwargs) for chunk in chunks]
            finally:
                tok.fast_batch = True
        return run

    sw = tok.sw
    rows = [
        ("superword encode_batch (lists)", per_batch(lambda t: sw.encode_batch(t, allowed_special="all")), None),
        ("SuperwordTokenizer tok(texts)", per_batch(lambda t: tok(t)), generic()),
        ("SuperwordTokenizer tok(texts, padding=True)", per_batch(lambda t: tok(t, padding=True)), generic(padding=True)),
        ("SuperwordTokenizer tok(texts, return_offsets_mapping=True)",
         per_batch(lambda t: tok(t, return_offsets_mapping=True)), generic(return_offsets_mapping=True)),
        ("SuperwordTokenizer tok(texts, padding=True, return_tensors='np')",
         per_batch(lambda t: tok(t, padding=True, return_tensors="np")), generic(padding=True, return_tensors="np")),
        ("tokenizers encode_batch_fast (stock export)",
         per_batch(lambda t: native.encode_batch_fast(t, add_special_tokens=False)), None),
        ("tokenizers encode_batch_fast, padding (stock export)",
         per_batch(lambda t: padded_native.encode_batch_fast(t, add_special_tokens=False)), None),
        ("tokenizers encode_batch, offsets (stock export)",
         per_batch(lambda t: native.encode_batch(t, add_special_tokens=False)), None),
        ("PreTrainedTokenizerFast tok(texts) (stock export)", per_batch(lambda t: fast(t)), None),
        ("PreTrainedTokenizerFast tok(texts, padding=True) (stock export)", per_batch(lambda t: fast(t, padding=True)), None),
        ("PreTrainedTokenizerFast tok(texts, return_offsets_mapping=True) (stock export)",
         per_batch(lambda t: fast(t, return_offsets_mapping=True)), None),
    ]
    print(f"{len(texts):,} documents, {megabytes:.1f} MB; BoundlessBPE vocab {model.vocab_size:,} "
          f"({model.num_supermerges:,} supermerges); threads: {os.environ.get('RAYON_NUM_THREADS', 'all cores')} "
          f"of {os.cpu_count()}; {len(chunks):,} calls of up to {size:,} texts; best of {args.repeat}")
    print()
    print("| call | MB/s | generic path MB/s | share of encode_batch |")
    print("|---|---:|---:|---:|")
    ceiling = None
    for name, run, slow in rows:
        rate = megabytes / best_seconds(run, args.repeat)
        ceiling = ceiling or rate
        slow_cell = f"{megabytes / best_seconds(slow, args.repeat):.1f}" if slow is not None else ""
        print(f"| {name} | {rate:.1f} | {slow_cell} | {rate / ceiling:.0%} |", flush=True)


if __name__ == "__main__":
    main()
