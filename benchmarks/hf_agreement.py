"""How often stock BPE gives superword's ids for exported BoundlessBPE and SuperBPE models:
Hugging Face ``tokenizers`` loading the ``tokenizer.json`` of ``save_hf`` and ``tiktoken`` with
the ranks and pattern of ``save_tiktoken``.  Prints one Markdown table per format.

    python benchmarks/hf_agreement.py [--train-mb 20] [--test-docs 2000] [--only en,th] [--data DIR]

Corpora (../shared/data): the Gutenberg file (English prose; trained on its first --train-mb MB,
measured on --test-docs documents taken from every 10th line beyond them) with 32K models
(SuperBPE: 28,672 + 4,096 supermerges), and each file of multi/ (one script each; trained on its
lines up to --train-mb MB but the last --test-docs or quarter, measured on those) with 4K models (SuperBPE:
3,584 + 512).  Then the golden models, each on its own corpus.  "identical" is the share of
documents with exactly superword's ids; "tokens" the relative difference in token count
(negative: the export makes fewer tokens).  Needs tokenizers and tiktoken; trains with the Rust
core, a few seconds per model; the measurement itself takes a few minutes on one core.
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import superword  # noqa: E402
from helpers import DATA, GOLDEN, read_jsonl_texts  # noqa: E402
from superword import _export  # noqa: E402

LANGUAGES = ("ar", "de", "hi", "ja", "km", "ko", "lo", "my", "ru", "th", "zh")
GUTENBERG = "gutenberg_en_100M.txt.gz"
HELD_OUT_EVERY = 10  # Gutenberg documents measured: every 10th line past the training part


def split_corpus(path: Path, train_mb: float, test_docs: int) -> tuple[list[str], list[str]]:
    """Training and held-out documents of one shared file (see the module notes)."""
    limit = int(train_mb * 1_000_000)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        lines = (line.rstrip("\n").removesuffix("\r") for line in f)
        if path.name == GUTENBERG:
            train, size = [], 0
            for line in lines:
                train.append(line)
                size += len(line.encode("utf-8")) + 1
                if size >= limit:
                    break
            test = list(itertools.islice(itertools.islice(lines, 0, None, HELD_OUT_EVERY), test_docs))
            return train, test
        docs = list(lines)
    held_out = min(test_docs, len(docs) // 4)  # the small files have about 2,100 lines
    train, test = docs[:-held_out], docs[-held_out:]
    size, cut = 0, 0
    for cut, line in enumerate(train):  # noqa: B007
        size += len(line.encode("utf-8")) + 1
        if size >= limit:
            break
    return train[:cut + 1], test


def measure(tok: superword.Tokenizer, texts: list[str]) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as d:
        tok.save_hf(d, overwrite=True)
        hf = _export.hf_agreement(tok, d, texts)
        pattern = tok.save_tiktoken(f"{d}/t.tiktoken")
        tt = _export.tiktoken_agreement(tok, f"{d}/t.tiktoken", pattern, texts)
    return {"tokenizer.json": hf, "tiktoken": tt}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-mb", type=float, default=20.0)
    parser.add_argument("--test-docs", type=int, default=2000)
    parser.add_argument("--only", default=None, help="comma-separated corpora: en, ar, de, ..., golden")
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder (default: %(default)s)")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    rows: list[tuple[list[str], dict[str, dict[str, float]]]] = []

    def row(corpus: str, algorithm: str, tok: superword.Tokenizer, texts: list[str]) -> None:
        cells = [corpus, algorithm, f"{tok.vocab_size:,}", f"{tok.num_supermerges:,}", f"{len(texts):,}"]
        rows.append((cells, measure(tok, texts)))
        print(f"measured {corpus} {algorithm}", file=sys.stderr, flush=True)

    corpora = [("en", args.data / GUTENBERG, 32768, 4096),
               *((lang, args.data / "multi" / f"{lang}.txt", 4096, 512) for lang in LANGUAGES)]
    for name, path, vocab, supermerges in corpora:
        if only is not None and name not in only:
            continue
        train, test = split_corpus(path, args.train_mb, args.test_docs)
        for algorithm in ("boundless", "superbpe"):
            extra: dict[str, Any] = {"supermerges": supermerges} if algorithm == "superbpe" else {}
            tok = superword.train(train, vocab_size=vocab, algorithm=algorithm, **extra)
            row(name, algorithm, tok, test)
    if only is None or "golden" in only:
        for corpus, folder in [("taylorswift_all.jsonl", "taylorswift_400_v600"),
                               ("multi_1230.jsonl", "multi_1230_v1500")]:
            texts = read_jsonl_texts(GOLDEN / corpus)
            for kind in ("boundless", "super"):
                tok = superword.Tokenizer.load(GOLDEN / folder / f"{kind}.model")
                row(f"golden {folder}", kind, tok, texts)

    for fmt in ("tokenizer.json", "tiktoken"):
        print(f"\n{fmt}\n")
        print("| corpus | algorithm | vocab | supermerges | documents | identical | tokens |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for cells, result in rows:
            a = result[fmt]
            print("| " + " | ".join([*cells, f"{a['identical']:.2%}", f"{a['token_difference']:+.3%}"]) + " |")


if __name__ == "__main__":
    main()
