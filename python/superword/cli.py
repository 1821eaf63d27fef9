"""The ``superword`` command line.

    superword train [INPUTS ...] --vocab-size N [--algorithm boundless] -o OUT.model
    superword encode MODEL TEXT

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
    t.add_argument("--tau", type=float, default=1.1, metavar="T",
                   help="PickyBPE: delete a merged token when the merge used at least this share "
                        "of it (default 1.1: never; needs --backend reference for now)")
    t.add_argument("--blowup", action="store_true",
                   help="PickyBPE: a deleted token falls apart into bytes, not its two halves")
    t.add_argument("--text-field", default="text", help="JSONL field holding the text")
    t.add_argument("--backend", choices=list(_api.BACKENDS), default=None)
    t.add_argument("-o", "--output", required=True, metavar="OUT.model")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress output")

    e = sub.add_parser("encode", help="encode a text with a model; print ids and tokens")
    e.add_argument("model")
    e.add_argument("text", help="the text to encode ('-' reads standard input)")
    e.add_argument("--backend", choices=list(_api.BACKENDS), default=None)
    return parser


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
                         text_field=args.text_field, backend=args.backend, progress=progress,
                         tau=args.tau, blowup=args.blowup)
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
        {"train": _train, "encode": _encode}[args.command](args)
    except (ValueError, TypeError, OSError, NotImplementedError) as exc:
        print(f"superword: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("superword: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
