"""The ``superword`` command line.

    superword train [INPUTS ...] --vocab-size N [--algorithm boundless] -o OUT.model
    superword encode MODEL TEXT
    superword export MODEL --to hf|tiktoken|minbpe OUT [--sample FILE ...]

With no INPUTS, ``train`` uses a corpus every Python installation has: the ``.py`` sources
of the running interpreter's standard library, one document per file.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from . import _api, _inputs
from .reference.tokens import render


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="superword", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a tokenizer and write its model file")
    t.add_argument("inputs", nargs="*", metavar="INPUT",
                   help=".txt / .jsonl files (optionally .gz); default: the Python standard library")
    t.add_argument("--algorithm", choices=["bpe", "boundless", "superbpe"], default="boundless")
    t.add_argument("--vocab-size", type=int, default=8192, metavar="N",
                   help="total number of tokens, the 243 byte tokens included (default 8192)")
    t.add_argument("--supermerges", type=int, metavar="M",
                   help="SuperBPE: how many of the N tokens are superwords")
    t.add_argument("--simple", action="store_true",
                   help="simple pre-tokenization (GPT-4o pattern only, no script runs)")
    t.add_argument("--scripts", metavar="A,B,...",
                   help="scripts split into one letter per pretoken "
                        "(default Han,Hiragana,Katakana,Khmer,Lao,Myanmar,Thai)")
    t.add_argument("--greedy-split", action="store_true",
                   help="cut supermerge candidates into frequent n-grams (paper, Appendix B)")
    t.add_argument("--text-field", default="text", help="JSONL field holding the text")
    t.add_argument("--backend", choices=list(_api.BACKENDS), default=None)
    t.add_argument("-o", "--output", required=True, metavar="OUT.model")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress output")

    e = sub.add_parser("encode", help="encode a text with a model; print ids and tokens")
    e.add_argument("model")
    e.add_argument("text", help="the text to encode ('-' reads standard input)")
    e.add_argument("--backend", choices=list(_api.BACKENDS), default=None)
    _export_parser(sub)
    return parser


def _export_parser(sub: argparse._SubParsersAction) -> None:
    x = sub.add_parser("export", help="write a model for transformers/tokenizers, tiktoken or minbpe")
    x.add_argument("model")
    x.add_argument("--to", required=True, choices=["hf", "tiktoken", "minbpe"],
                   help="hf: a directory with tokenizer.json; tiktoken: a .tiktoken ranks file; "
                        "minbpe: a file prefix (PREFIX.model, PREFIX.vocab)")
    x.add_argument("output", metavar="OUT")
    x.add_argument("--overwrite", action="store_true", help="hf: replace the files in a non-empty directory")
    for role in ("bos", "eos", "pad", "unk"):
        x.add_argument(f"--{role}-token", metavar="TOKEN", help=f"hf: the {role} token (a registered special token)")
    x.add_argument("--sample", nargs="*", default=[], metavar="FILE",
                   help="hf / tiktoken: measure on these .txt / .jsonl files how often the "
                        "exported tokenizer gives superword's ids")
    x.add_argument("--sample-lines", type=int, default=2000, metavar="N",
                   help="documents read from each sample file (default 2000)")


def _export(args: argparse.Namespace) -> None:
    import itertools

    from . import _export as ex
    from . import minbpe
    tok = _api.Tokenizer.load(args.model)
    if args.to == "hf":
        tok.save_hf(args.output, overwrite=args.overwrite, bos_token=args.bos_token,
                    eos_token=args.eos_token, pad_token=args.pad_token, unk_token=args.unk_token)
        print(f"wrote {args.output}/: " + ", ".join(ex.HF_FILES))
    elif args.to == "tiktoken":
        pattern = tok.save_tiktoken(args.output)
        print(f"wrote {args.output}; give tiktoken.Encoding this pat_str:\n{pattern}")
    else:
        minbpe.from_superword(tok).save(args.output)
        print(f"wrote {args.output}.model and {args.output}.vocab")
        return
    for path in args.sample:
        _inputs.resolve_inputs([path])
        texts = list(itertools.islice(_inputs.documents_of([path], None, "text"), args.sample_lines))
        if args.to == "hf":
            a = ex.hf_agreement(tok, args.output, texts)
        else:
            a = ex.tiktoken_agreement(tok, args.output, pattern, texts)
        print(f"{path}: {a['documents']:,} documents, {a['identical']:.2%} with identical ids, "
              f"token count {a['token_difference']:+.3%} ({a['tokens']:,} superword tokens)")


class _Progress:
    """One status line per stage on stderr, rewritten in place."""

    def __init__(self, quiet: bool):
        self.quiet, self.last = quiet, 0.0
        self.stage: str | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        if stage == self.stage and now - self.last < 0.2 and done != total:
            return
        if stage != self.stage and self.stage is not None:
            sys.stderr.write("\n")
        self.stage, self.last = stage, now
        label = {"count": "pre-tokenize + count documents", "merges": "phase 1 merges",
                 "candidates": "supermerge candidates", "phase2": "phase 2 tokens"}.get(stage, stage)
        sys.stderr.write(f"\r{label}: {done:,}" + (f" / {total:,}" if total else ""))
        sys.stderr.flush()

    def close(self) -> None:
        if not self.quiet and self.stage is not None:
            sys.stderr.write("\n")


def _train(args: argparse.Namespace) -> None:
    if args.inputs:
        inputs: object = args.inputs
        _inputs.resolve_inputs(inputs)  # fail on a missing file before anything else
        source = ", ".join(args.inputs)
    else:
        files = _inputs.stdlib_sources()
        inputs = _inputs.stdlib_documents(files)
        source = _inputs.describe_stdlib(files)
    scripts = args.scripts.split(",") if args.scripts else None
    if not args.quiet:
        print(f"training {args.algorithm} (vocab_size={args.vocab_size}) on {source}", file=sys.stderr)
    progress = _Progress(args.quiet)
    start = time.perf_counter()
    try:
        tok = _api.train(list(inputs) if isinstance(inputs, list) else inputs,
                         vocab_size=args.vocab_size, algorithm=args.algorithm,
                         supermerges=args.supermerges, script_aware=not args.simple,
                         scripts=scripts, greedy_split=args.greedy_split,
                         text_field=args.text_field, backend=args.backend, progress=progress)
    finally:
        progress.close()
    seconds = time.perf_counter() - start
    tok.save(args.output)
    stages = ", ".join(f"{k} {v:.2f}s" for k, v in tok.training_stats.items())
    print(f"wrote {args.output}: {tok.kind} model, {tok.vocab_size} tokens, "
          f"{tok.num_supermerges} supermerges, {seconds:.1f}s ({stages})")
    supers = [raw for _, raw, sup in tok if sup][:12]
    if supers:
        print("first superword tokens: " + "  ".join(repr(s.decode("utf-8", "replace")) for s in supers))


def _encode(args: argparse.Namespace) -> None:
    text = sys.stdin.read() if args.text == "-" else args.text
    tok = _api.Tokenizer.load(args.model, backend=args.backend)
    ids = tok.encode(text, allowed_special="all")
    print(" ".join(map(str, ids)))
    print(" ".join(render(tok.token_bytes(i)) for i in ids))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        {"train": _train, "encode": _encode, "export": _export}[args.command](args)
    except (ValueError, TypeError, OSError, NotImplementedError) as exc:
        print(f"superword: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("superword: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
