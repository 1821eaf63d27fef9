"""Training: :func:`train` on text or on counts, and the checks of its arguments.

Python decides argument policy and error messages here; the work is done by a backend (see
:mod:`superword._backend`).  Both backends produce byte-identical models.
"""
from __future__ import annotations

import functools
import math
import os
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from . import _count_table, _counts, _extend, _inputs, _provenance, _ray
from ._backend import Progress, TrainOptions, _check_int, _resolve_backend, core_of, pretokenization, resolve_threads
from ._tokenizer import Tokenizer
from .reference import pretokenize as _pretok
from .reference import train as _ref_train

MIN_VOCAB_SIZE = 243
#: token ids are 32-bit; 2**31 leaves the upper half for special tokens
MAX_VOCAB_SIZE = 2**31

def _warn_if_short(tok: Tokenizer, vocab_size: int, algorithm: str, supermerges: int | None) -> None:
    """Say so when training could not make what was asked: the corpus ran out of pairs."""
    got = tok.vocab_size
    if algorithm == "superbpe":
        assert supermerges is not None
        regular = got - tok.num_supermerges
        if regular < vocab_size - supermerges:
            warnings.warn(f"SuperBPE: phase 1 made {regular:,} of the {vocab_size - supermerges:,} "
                          f"regular tokens requested (vocab_size - supermerges): no pair of tokens "
                          f"within a pretoken is left to merge in this corpus", TrainingShortfall,
                          stacklevel=4)
        if tok.num_supermerges < supermerges:
            warnings.warn(f"SuperBPE: made {tok.num_supermerges:,} of the {supermerges:,} supermerges "
                          f"requested ({got:,} of {vocab_size:,} tokens): no pair of tokens is left to "
                          f"merge across pretokens in this corpus", TrainingShortfall, stacklevel=4)
    elif got < vocab_size:
        warnings.warn(f"{'BPE' if algorithm == 'bpe' else 'BoundlessBPE'}: training stopped at "
                      f"{got:,} of the {vocab_size:,} tokens requested: no pair of tokens is left to "
                      f"merge in this corpus (it is too small for this vocab_size)",
                      TrainingShortfall, stacklevel=4)


class TrainingShortfall(UserWarning):
    """Training could not make as many tokens (or supermerges) as requested: the corpus ran
    out of pairs to merge.  The model is still valid, just smaller."""



F = TypeVar("F", bound=Callable[..., Any])


def _positional_deprecated(*names: str) -> Callable[[F], F]:
    """Let the keyword-only parameters ``names`` still be passed by position, in this order
    after the positional ones, with a ``DeprecationWarning`` that names the keywords to use.

    The decorated function keeps its keyword-only signature (``inspect.signature`` and type
    checkers see it); only calls at run time are translated.
    """
    def decorate(function: F) -> F:
        positional = function.__code__.co_argcount  # (not `inspect`: 7 ms of `import superword`)
        name = function.__name__

        @functools.wraps(function)
        def translated(*args: Any, **kwargs: Any) -> Any:
            if len(args) > positional:
                extra = args[positional:]
                if len(extra) > len(names):
                    raise TypeError(f"{name}() takes from 0 to {positional + len(names)} positional "
                                    f"arguments but {len(args)} were given")
                given = names[:len(extra)]
                for keyword, value in zip(given, extra):
                    if keyword in kwargs:
                        raise TypeError(f"{name}() got multiple values for argument {keyword!r}")
                    kwargs[keyword] = value
                warnings.warn(f"{name}(): passing {', '.join(given)} by position is deprecated and will "
                              f"stop working; pass {' and '.join(f'{k}=...' for k in given)} by keyword",
                              DeprecationWarning, stacklevel=2)
                args = args[:positional]
            return function(*args, **kwargs)
        return translated  # type: ignore[return-value]
    return decorate


@_positional_deprecated("supermerges", "script_aware", "scripts", "greedy_split", "text_field", "backend")
def train(inputs: Any = None, vocab_size: int | None = None, algorithm: str = "boundless", *,
          supermerges: int | None = None, script_aware: bool = True,
          scripts: Iterable[str] | None = None, greedy_split: bool = False,
          text_field: str = "text", backend: str | None = None,
          threads: int | None = None, pattern: str | None = None,
          script_pattern: str | None = None, progress: Progress | None = None,
          tau: float = 1.1, blowup: bool = False, counts: Any = None,
          min_count: int | None = None, executor: str | None = None,
          ray_address: str | None = None, base: Any = None) -> Tokenizer:
    """Train a tokenizer.

    ``inputs``: a path (a file, a folder, a glob, or ``-`` for standard input), a list of
    paths (``.txt``: a document per line; ``.jsonl``: a record per line with the text in
    ``text_field``; either may be ``.gz`` or ``.zst``; ``.parquet``: the column
    ``text_field``), or an iterable of documents: ``str``, or dict rows such as a Hugging
    Face ``datasets.Dataset`` (the text in ``text_field``).  A list is a list of paths when
    its first item is a path object or a string naming an existing file.
    ``algorithm``: ``"bpe"`` (no superwords), ``"boundless"``
    (BoundlessBPE, which decides how many superwords to make) or ``"superbpe"`` (SuperBPE
    with exactly ``supermerges`` of the ``vocab_size`` tokens being superwords).
    ``script_aware``: cut text into single-script runs and split ``scripts`` (default: Han,
    Hiragana, Katakana, Khmer, Lao, Myanmar, Thai) into one letter per pretoken.
    ``pattern`` / ``script_pattern`` replace the GPT-4o patterns.  ``threads``: worker
    threads of the Rust backend (default: ``RAYON_NUM_THREADS`` if set, else all cores; never
    more than the available cores; results never depend on it).
    ``progress(stage, done, total)`` is called as training advances.
    ``tau``: PickyBPE (SPEC 9): after a merge of ``(a, b)`` the word model deletes ``a``
    (and ``b``) when ``count(a, b) / count(a) >= tau``; the default 1.1 never deletes.
    ``blowup``: a deleted token is replaced by its single bytes instead of the two tokens
    that first made it.  ``greedy_split`` shapes phase 2's training only; the model file and
    the encoding are the paper's (SPEC 3.1).

    ``counts``: train on counts made earlier (:func:`superword.count`, a :class:`Counts` or a
    count file's path) instead of ``inputs``; the model is byte for byte the one trained on
    the text that was counted, and the pre-tokenization is the counts' (a ``pattern``,
    ``script_pattern``, ``scripts`` or ``script_aware=False`` that contradicts it is refused).
    ``min_count``: drop pretokens and letter runs counted fewer times before training (less
    memory; the model is then no longer the exact one).  ``executor="ray"``: count on a Ray
    cluster (``ray_address``, default a local one; needs ``pip install 'superword[ray]'``),
    then train here.

    ``base``: keep an existing tokenizer and add ``supermerges`` superword tokens to it
    (``algorithm="superbpe"``; a tiktoken encoding name such as ``"cl100k_base"``, a
    ``.tiktoken`` file with ``pattern=``, a byte-level ``tokenizer.json``, or one of
    superword's own BPE models, a ``.model`` file or a ``Tokenizer``).  Every base id stays;
    superwords take the ids after the base's largest (``docs/extend.md``).
    ``vocab_size`` (default 32768) does not apply: the size is the base's plus ``supermerges``.

    >>> tok = train(["the cat sat on the mat"] * 5, vocab_size=250, algorithm="bpe")
    >>> tok.decode(tok.encode("the cat"))
    'the cat'
    """
    if base is not None:
        if algorithm != "superbpe":
            raise ValueError(f"base= adds superwords with SuperBPE's phase 2: give algorithm='superbpe' "
                             f"(got {algorithm!r})")
        if vocab_size is not None:
            raise ValueError("vocab_size does not apply with base=: the vocabulary is the base's plus "
                             "supermerges superword tokens")
        if not isinstance(text_field, str):
            raise TypeError(f"text_field must be a str, got {type(text_field).__name__}")
        if min_count is not None:
            _count_table._check_min_count(min_count)
        tok = _extend.train(inputs, base=base, supermerges=supermerges, counts=counts, pattern=pattern,
                             script_aware=script_aware, script_pattern=script_pattern, scripts=scripts,
                             text_field=text_field, threads=resolve_threads(threads),
                             backend=_resolve_backend(backend), progress=progress, min_count=min_count,
                             executor=executor, ray_address=ray_address, greedy_split=greedy_split,
                             tau=tau, blowup=blowup)
        assert supermerges is not None  # (_extend.train refuses None)
        short = _extend.shortfall(tok, supermerges)
        if short is not None:
            warnings.warn(short, TrainingShortfall, stacklevel=3)
        return tok
    vocab_size = _check_int("vocab_size", 32768 if vocab_size is None else vocab_size)
    if vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(f"vocab_size must be at least {MIN_VOCAB_SIZE} (the byte tokens), "
                         f"got {vocab_size}")
    if vocab_size > MAX_VOCAB_SIZE:
        raise ValueError(f"vocab_size must be at most {MAX_VOCAB_SIZE:,} (2**31: token ids are "
                         f"32-bit, with room left for special tokens), got {vocab_size:,}")
    if algorithm not in _ref_train.ALGORITHMS:
        raise ValueError(f"algorithm must be 'bpe', 'boundless' or 'superbpe', got {algorithm!r}")
    if algorithm == "superbpe":
        if supermerges is None:
            raise ValueError("algorithm='superbpe' needs supermerges=M: how many of the "
                             "vocab_size tokens are superwords")
        supermerges = _check_int("supermerges", supermerges)
        limit = vocab_size - MIN_VOCAB_SIZE
        if not 0 < supermerges < limit:
            raise ValueError(f"supermerges must be between 1 and vocab_size - 243 - 1 = "
                             f"{limit - 1}, got {supermerges}")
    elif supermerges is not None:
        raise ValueError(f"supermerges is only for algorithm='superbpe' (got algorithm={algorithm!r})")
    if greedy_split and algorithm == "bpe":
        raise ValueError("greedy_split splits supermerge candidates; it needs algorithm "
                         "'boundless' or 'superbpe'")
    if not isinstance(text_field, str):
        raise TypeError(f"text_field must be a str, got {type(text_field).__name__}")
    threads = resolve_threads(threads)
    if isinstance(tau, bool) or not isinstance(tau, (int, float)):
        raise TypeError(f"tau must be a number, got {type(tau).__name__}")
    if not (math.isfinite(tau) and tau > 0):
        raise ValueError(f"tau must be a positive number (1.1, the default, turns PickyBPE "
                         f"deletions off), got {tau!r}")
    if not isinstance(blowup, bool):
        raise TypeError(f"blowup must be True or False, got {type(blowup).__name__}")
    backend = _resolve_backend(backend)
    if min_count is not None:
        _count_table._check_min_count(min_count)
    if counts is not None or executor is not None or min_count is not None:
        return _train_via_counts(inputs, counts, dict(
            vocab_size=vocab_size, algorithm=algorithm, supermerges=supermerges,
            greedy_split=greedy_split, tau=float(tau), blowup=blowup, threads=threads,
            progress=progress), script_aware, scripts, pattern, script_pattern, text_field, backend,
            min_count, executor, ray_address)
    if ray_address is not None:
        raise ValueError("ray_address only applies with executor='ray'")
    main, script, names = pretokenization(script_aware, scripts, pattern, script_pattern)

    tally = _inputs.Tally()
    start = time.perf_counter()
    # a list of str documents goes to the backend as it is, which counts what the tally would
    # (resolved as inputs, every document passed through the tally's generator)
    listed = _inputs.is_document_list(inputs)
    paths, documents = (None, inputs) if listed else _inputs.resolve_inputs(inputs, text_field, tally)
    core = core_of(backend)
    options = TrainOptions(vocab_size=vocab_size, algorithm=algorithm, supermerges=supermerges,
                           pattern=main, script_pattern=script, scripts=names,
                           greedy_split=greedy_split, tau=float(tau), blowup=blowup, threads=threads,
                           progress=progress)
    if listed:
        impl, docs, size = core.train_docs(inputs, options)
        tally.inputs["<documents>"] = [docs, size]
    elif paths is not None:
        impl = core.train_files(paths, text_field, options)
    else:
        assert documents is not None
        impl = core.train_iter(documents, options)
    tok = Tokenizer(impl, backend)
    _warn_if_short(tok, vocab_size, algorithm, supermerges)
    if paths is not None:
        inputs_record = [{"name": p, "documents": None, "bytes": os.path.getsize(p)} for p in paths]
    else:
        inputs_record = tally.records()
    settings = dict(vocab_size=vocab_size, supermerges=supermerges, script_aware=script_aware,
                    scripts=names, greedy_split=greedy_split, tau=tau, blowup=blowup, text_field=text_field,
                    pattern=None if pattern is None else main,
                    script_pattern=None if script_pattern is None else script, backend=backend)
    tok.provenance = _provenance.make(algorithm, settings, inputs_record, tok.training_stats,
                                      time.perf_counter() - start)
    return tok


def _train_via_counts(inputs: Any, counts: Any, options: dict[str, Any], script_aware: bool,
                      scripts: Iterable[str] | None, pattern: str | None, script_pattern: str | None,
                      text_field: str, backend: str, min_count: int | None, executor: str | None,
                      ray_address: str | None) -> Tokenizer:
    """:func:`train` from counts: given, counted here first (``min_count``), or counted on Ray."""
    start = time.perf_counter()
    if counts is not None:
        counts, name = _count_table.counts_argument(inputs, counts, executor, ray_address, backend)
        _check_counts_settings(counts, name, script_aware, scripts, pattern, script_pattern)
        inputs_record = [{"name": name, "documents": counts.documents, "bytes": None}]
    elif executor == "ray" and options["algorithm"] != "bpe" and backend == "rust":
        return _train_two_pass(inputs, options, script_aware, scripts, pattern, script_pattern, text_field,
                               min_count, ray_address, start)
    else:
        if inputs is None:
            raise TypeError("train needs inputs (or counts=)")
        counts = _counts.count(inputs, script_aware=script_aware, scripts=scripts, pattern=pattern,
                               script_pattern=script_pattern, text_field=text_field,
                               runs=options["algorithm"] != "bpe", threads=options["threads"],
                               backend=backend, progress=options["progress"], executor=executor,
                               ray_address=ray_address)
        inputs_record = [{"name": "<counted>", "documents": counts.documents, "bytes": None}]
    if min_count is not None:
        counts = counts.prune(min_count)
    tok = train_counts(counts, backend=backend, **options)
    settings = dict(vocab_size=options["vocab_size"], supermerges=options["supermerges"],
                    script_aware=counts.script_aware, scripts=counts.scripts,
                    greedy_split=options["greedy_split"], tau=options["tau"], blowup=options["blowup"],
                    text_field=text_field, pattern=counts.pattern, script_pattern=counts.script_pattern,
                    backend=backend, min_count=min_count, executor=executor)
    tok.provenance = _provenance.make(options["algorithm"], settings, inputs_record, tok.training_stats,
                                      time.perf_counter() - start)
    return tok


def _train_two_pass(inputs: Any, options: dict[str, Any], script_aware: bool, scripts: Iterable[str] | None,
                    pattern: str | None, script_pattern: str | None, text_field: str, min_count: int | None,
                    ray_address: str | None, start: float, local: bool = False) -> Tokenizer:
    """BoundlessBPE or SuperBPE on Ray in two passes (:func:`superword._ray.train_two_pass`):
    no process holds the letter runs of the whole corpus, and the model is the one trained
    here.  ``min_count`` is refused: pruning the runs needs their counts over the whole
    corpus, which this path never gathers, and pruning them shard by shard would make the model
    depend on how the corpus was cut."""
    if min_count is not None:
        raise ValueError(f"min_count does not apply to {_ALGORITHM_NAMES[options['algorithm']]} on Ray: its "
                         f"two passes never gather the letter runs of the whole corpus (so there is nothing "
                         f"to prune, and the memory min_count would save is not needed), and pruning "
                         f"them shard by shard would make the model depend on the sharding; leave min_count "
                         f"out, or count first (superword.count(..., executor='ray', min_count=...)) and "
                         f"train on those counts")
    if inputs is None:
        raise TypeError("train needs inputs (or counts=)")
    main, script, names = pretokenization(script_aware, scripts, pattern, script_pattern)
    impl, counts, passes, parts = _ray.train_two_pass(
        inputs, pattern=main, script_pattern=script, scripts=names, text_field=text_field,
        vocab_size=options["vocab_size"], algorithm=options["algorithm"], supermerges=options["supermerges"],
        greedy_split=options["greedy_split"], tau=options["tau"], blowup=options["blowup"],
        threads=options["threads"], progress=options["progress"], address=ray_address, local=local)
    tok = Tokenizer(impl, "rust")
    _warn_if_short(tok, options["vocab_size"], options["algorithm"], options["supermerges"])
    settings = dict(vocab_size=options["vocab_size"], supermerges=options["supermerges"],
                    script_aware=counts.script_aware, scripts=counts.scripts,
                    greedy_split=options["greedy_split"], tau=options["tau"], blowup=options["blowup"],
                    text_field=text_field, pattern=counts.pattern, script_pattern=counts.script_pattern,
                    backend="rust", min_count=None, executor="local" if local else "ray", passes=passes,
                    phase2_parts=parts)
    inputs_record = [{"name": "<counted>", "documents": counts.documents, "bytes": None}]
    tok.provenance = _provenance.make(options["algorithm"], settings, inputs_record, tok.training_stats,
                                      time.perf_counter() - start)
    return tok


_ALGORITHM_NAMES = {"boundless": "BoundlessBPE", "superbpe": "SuperBPE"}


def _check_counts_settings(counts: _count_table.Counts, name: str, script_aware: bool,
                           scripts: Iterable[str] | None, pattern: str | None,
                           script_pattern: str | None) -> None:
    """Refuse pre-tokenization arguments that contradict the counts' header, naming the
    difference (arguments left at their defaults take the counts' settings)."""
    def refuse(what: str, asked: object, found: object) -> None:
        raise ValueError(f"{name} was counted with {what} {found!r}, but train was given {asked!r}; "
                         f"leave the argument out to use the counts' setting, or count again")
    if pattern is not None and pattern != counts.pattern:
        refuse("pattern", pattern, counts.pattern)
    if not script_aware and counts.script_aware:
        refuse("script_aware", False, True)
    if script_pattern is not None and script_pattern != counts.script_pattern:
        refuse("script_pattern", script_pattern, counts.script_pattern)
    if scripts is not None:
        if isinstance(scripts, str):
            raise TypeError("scripts must be a list of script names, e.g. ['Han', 'Thai']")
        if sorted(set(scripts)) != counts.scripts:
            refuse("scripts", sorted(set(scripts)), counts.scripts)


def train_counts(counts: _count_table.Counts, *, vocab_size: int, algorithm: str, supermerges: int | None,
                 greedy_split: bool, tau: float, blowup: bool, threads: int,
                 progress: Progress | None, backend: str) -> Tokenizer:
    """Stages 2 to 4 on checked arguments (see :func:`train`)."""
    if algorithm != "bpe" and not counts.with_runs:
        raise ValueError(f"{'BoundlessBPE' if algorithm == 'boundless' else 'SuperBPE'} needs the "
                         f"letter runs, and these counts were made without them (runs=False, --no-runs); "
                         f"count again with runs=True, or train algorithm='bpe'")
    if counts._impl.merge_pattern != _pretok.MERGE_PATTERN:
        raise ValueError(f"these counts cut letter runs with the merge pattern {counts._impl.merge_pattern!r}; "
                         f"this superword trains with {_pretok.MERGE_PATTERN!r}")
    counts = counts.to_backend(backend)
    tok = Tokenizer(core_of(backend).train_counts(
        counts._impl, vocab_size=vocab_size, algorithm=algorithm, supermerges=supermerges,
        greedy_split=greedy_split, tau=tau, blowup=blowup, threads=threads, progress=progress), backend)
    _warn_if_short(tok, vocab_size, algorithm, supermerges)
    return tok
