"""How often stock byte-level BPE (Hugging Face tokenizers) and tiktoken give superword's ids
for exported BoundlessBPE and SuperBPE models.  Prints a Markdown table.

    python benchmarks/hf_agreement.py [--train-lines 3000] [--test-lines 2000]

Models: the golden BoundlessBPE / SuperBPE models (tests/data/golden), each measured on the
documents of its corpus, and models trained here on the first --train-lines lines of each file of
../shared/data (vocab 4,000; SuperBPE with 400 supermerges), measured on the next --test-lines
lines.  "identical" is the share of documents with exactly superword's ids; "tokens" the
relative difference in token count (negative: the export makes fewer tokens).
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import superword  # noqa: E402
from helpers import DATA, GOLDEN, read_jsonl_texts  # noqa: E402
from superword import _export  # noqa: E402

LANGUAGES = ("ar", "de", "hi", "ja", "km", "ko", "lo", "my", "ru", "th", "zh")


def lines_of(path: Path, start: int, count: int) -> list[str]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in itertools.islice(f, start, start + count)]


def measure(tok: superword.Tokenizer, texts: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as d:
        tok.save_hf(d, overwrite=True)
        hf = _export.hf_agreement(tok, d, texts)
        pattern = tok.save_tiktoken(f"{d}/t.tiktoken")
        tt = _export.tiktoken_agreement(tok, f"{d}/t.tiktoken", pattern, texts)
    return [f"{hf['identical']:.2%}", f"{hf['token_difference']:+.3%}",
            f"{tt['identical']:.2%}", f"{tt['token_difference']:+.3%}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-lines", type=int, default=3000)
    parser.add_argument("--test-lines", type=int, default=2000)
    args = parser.parse_args()
    print("| model | measured on | documents | supermerges | HF identical | HF tokens | tiktoken identical "
          "| tiktoken tokens |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")

    def row(name: str, where: str, tok: superword.Tokenizer, texts: list[str]) -> None:
        cells = [name, where, f"{len(texts):,}", f"{tok.num_supermerges:,}", *measure(tok, texts)]
        print("| " + " | ".join(cells) + " |", flush=True)

    for corpus, folder in [("taylorswift_all.jsonl", "taylorswift_400_v600"),
                           ("multi_1230.jsonl", "multi_1230_v1500")]:
        texts = read_jsonl_texts(GOLDEN / corpus)
        for kind in ("boundless", "super"):
            tok = superword.Tokenizer.load(GOLDEN / folder / f"{kind}.model")
            row(f"golden {folder} {kind}", corpus, tok, texts)

    files = [DATA / "taylorswift.txt", *(DATA / "multi" / f"{lang}.txt" for lang in LANGUAGES),
             DATA / "gutenberg_en_100M.txt.gz"]
    for path in files:
        train = lines_of(path, 0, args.train_lines)
        test = lines_of(path, args.train_lines, args.test_lines) or train
        for algorithm in ("boundless", "superbpe"):
            extra = {"supermerges": 400} if algorithm == "superbpe" else {}
            tok = superword.train(train, vocab_size=4000, algorithm=algorithm, **extra)
            row(f"{algorithm} 4K", path.name, tok, test)


if __name__ == "__main__":
    main()
