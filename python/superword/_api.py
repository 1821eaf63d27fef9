"""The public API: :func:`train` and :class:`Tokenizer`.

Python decides argument policy and error messages here; the work is done by a backend:
``"rust"`` (the compiled core ``superword._core``, the default) or ``"reference"`` (pure
Python, :mod:`superword.reference`).  Both produce byte-identical models and identical ids.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Literal, NamedTuple

from . import _counts, _files, _inputs, _provenance
from ._reference_core import ReferenceCore, ReferenceRankCore
from .reference import model as _ref_model
from .reference import pretokenize as _pretok
from .reference import tokens as _ref_tokens
from .reference import train as _ref_train

BACKENDS = ("rust", "reference")
DEFAULT_BACKEND = "rust"
MIN_VOCAB_SIZE = 243
#: token ids are 32-bit; 2**31 leaves the upper half for special tokens
MAX_VOCAB_SIZE = 2**31
#: the environment variable that sets the default number of threads (as for rayon itself)
THREADS_VARIABLE = "RAYON_NUM_THREADS"

Progress = Callable[[str, int, int], None]

#: tiktoken's ``cl100k_base`` pre-tokenization pattern and special tokens.
CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                  r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
CL100K_SPECIAL = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                  "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}


def _core_module():
    """The compiled core.  Never replaced silently by the reference: if it is missing, say so."""
    try:
        from . import _core
    except ImportError as exc:
        raise ImportError(
            "superword's compiled Rust core (superword._core) is not available: "
            f"{exc}. Install superword with `pip install .` (it builds the core with maturin), "
            "or pass backend='reference' to use the pure-Python implementation explicitly."
        ) from exc
    return _core


def _resolve_backend(backend: str | None) -> str:
    if backend is None:
        backend = DEFAULT_BACKEND
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    if backend == "rust":
        _core_module()
    return backend


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def resolve_threads(threads: int | None) -> int:
    """The number of worker threads for ``threads``.

    ``None`` means the environment variable ``RAYON_NUM_THREADS`` when it is set to a positive
    number, else all available cores.  A number above the available cores is reduced to them:
    more workers than cores only add overhead, and results never depend on the count.  So a
    process never starts more workers than it has cores, whatever it is asked.

    >>> resolve_threads(1)
    1
    """
    requested = _requested_threads(threads)
    cores = available_cores()
    return cores if requested is None else min(requested, cores)


def _requested_threads(threads: int | None) -> int | None:
    """:func:`resolve_threads` for ``encode_batch``: ``None`` for all cores, which the core
    counts once (counting them here on every call was half of the Python time of
    ``encode_batch`` on a few short texts).  A count given as an argument is still
    reduced to the cores here, so that asking for many different counts reuses one pool."""
    if threads is None:
        text = os.environ.get(THREADS_VARIABLE, "").strip()
        if not text or text == "0":  # rayon's own rule: unset or 0 means all cores
            return None
        try:
            threads = int(text)
        except ValueError:
            raise ValueError(f"the environment variable {THREADS_VARIABLE} must be a whole number "
                             f"of threads, got {text!r}") from None
        if threads < 1:
            raise ValueError(f"the environment variable {THREADS_VARIABLE} must be at least 1 "
                             f"(or 0 for all cores), got {threads}")
        return threads
    threads = _check_int("threads", threads)
    if threads < 1:
        raise ValueError(f"threads must be at least 1 (or None for all cores), got {threads}")
    return min(threads, available_cores())


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
                          stacklevel=3)
        if tok.num_supermerges < supermerges:
            warnings.warn(f"SuperBPE: made {tok.num_supermerges:,} of the {supermerges:,} supermerges "
                          f"requested ({got:,} of {vocab_size:,} tokens): no pair of tokens is left to "
                          f"merge across pretokens in this corpus", TrainingShortfall, stacklevel=3)
    elif got < vocab_size:
        warnings.warn(f"{'BPE' if algorithm == 'bpe' else 'BoundlessBPE'}: training stopped at "
                      f"{got:,} of the {vocab_size:,} tokens requested: no pair of tokens is left to "
                      f"merge in this corpus (it is too small for this vocab_size)",
                      TrainingShortfall, stacklevel=3)


class TrainingShortfall(UserWarning):
    """Training could not make as many tokens (or supermerges) as requested: the corpus ran
    out of pairs to merge.  The model is still valid, just smaller."""


def pretokenization(script_aware: bool, scripts: Iterable[str] | None, pattern: str | None,
                    script_pattern: str | None) -> tuple[str, str | None, list[str] | None]:
    """Checked pre-tokenization arguments of :func:`train` and :func:`superword.count`:
    (main pattern, script pattern or ``None``, sorted script names or ``None``)."""
    if not isinstance(script_aware, bool):
        raise TypeError(f"script_aware must be True or False, got {type(script_aware).__name__}")
    if scripts is not None:
        if not script_aware:
            raise ValueError("scripts only applies with script_aware=True")
        if isinstance(scripts, str):
            raise TypeError("scripts must be a list of script names, e.g. ['Han', 'Thai']")
        scripts = list(scripts)
    for name, value in (("pattern", pattern), ("script_pattern", script_pattern)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str (a regular expression), got {type(value).__name__}")
    if script_pattern is not None and not script_aware:
        raise ValueError("script_pattern only applies with script_aware=True")
    main = _pretok.GPT4O if pattern is None else pattern
    if script_aware:
        script = _pretok.SCRIPT_SPECIFIC_GPT4O if script_pattern is None else script_pattern
        names = sorted(set(scripts if scripts is not None else _pretok.DEFAULT_SCRIPTS))
    else:
        script, names = None, None
    _check_pretokenization(main, script, None if names is None else tuple(names))
    return main, script, names


@functools.lru_cache(maxsize=16)
def _check_pretokenization(main: str, script: str | None, names: tuple[str, ...] | None) -> None:
    """One place for pattern and script checks (a valid combination is remembered: building the
    reference pre-tokenizer to check it was 0.4 ms of a 25 ms training on taylorswift.txt)."""
    _pretok.Pretokenizer(main, script, names)


def train(inputs: Any = None, vocab_size: int = 32768, algorithm: str = "boundless",
          supermerges: int | None = None, script_aware: bool = True,
          scripts: Iterable[str] | None = None, greedy_split: bool = False,
          text_field: str = "text", backend: str | None = None, *,
          threads: int | None = None, pattern: str | None = None,
          script_pattern: str | None = None, progress: Progress | None = None,
          tau: float = 1.1, blowup: bool = False, counts: Any = None,
          min_count: int | None = None, executor: str | None = None,
          ray_address: str | None = None) -> Tokenizer:
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

    >>> tok = train(["the cat sat on the mat"] * 5, vocab_size=250, algorithm="bpe")
    >>> tok.decode(tok.encode("the cat"))
    'the cat'
    """
    vocab_size = _check_int("vocab_size", vocab_size)
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
        _counts._check_min_count(min_count)
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
    # a list of str documents goes to the core as it is, which counts what the tally would (see
    # train_docs; resolved as inputs, every document passed through the tally's generator)
    listed = backend == "rust" and _inputs.is_document_list(inputs)
    paths, documents = (None, inputs) if listed else _inputs.resolve_inputs(inputs, text_field, tally)
    if backend == "rust":
        core = _core_module()
        options = dict(vocab_size=vocab_size, algorithm=algorithm, supermerges=supermerges,
                       pattern=main, script_pattern=script, scripts=names,
                       greedy_split=greedy_split, tau=float(tau), blowup=blowup, threads=threads,
                       progress=progress)
        if listed:
            impl, docs, size = core.train_docs(inputs, options)
            tally.inputs["<documents>"] = [docs, size]
        elif paths is not None:
            impl = core.train_files(paths, text_field, options)
        else:
            impl = core.train_iter(documents, options)
        tok = Tokenizer(impl, backend)
    else:
        stats: dict[str, float] = {}
        model = _ref_train.train(
            _inputs.documents_of(paths, documents, text_field), vocab_size, algorithm, supermerges,
            pattern=main, script_pattern=script, scripts=names, greedy_split=greedy_split,
            tau=tau, blowup=blowup, progress=progress, stats=stats)
        tok = Tokenizer(ReferenceCore(model, training_stats=stats), backend)
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
        if inputs is not None:
            raise ValueError("give inputs or counts, not both")
        if executor is not None or ray_address is not None:
            raise ValueError("executor and ray_address are for counting inputs; counts are already counted")
        name = "<counts>"
        if isinstance(counts, (str, os.PathLike)):
            name = os.fspath(counts)
            counts = _counts.Counts.load(counts, backend)
        elif not isinstance(counts, _counts.Counts):
            raise TypeError(f"counts must be a superword.Counts or a count file's path, not "
                            f"{type(counts).__name__}")
        _check_counts_settings(counts, name, script_aware, scripts, pattern, script_pattern)
        inputs_record = [{"name": name, "documents": counts.documents, "bytes": None}]
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


def _check_counts_settings(counts: _counts.Counts, name: str, script_aware: bool,
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


def train_counts(counts: _counts.Counts, *, vocab_size: int, algorithm: str, supermerges: int | None,
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
    if backend == "rust":
        impl = _core_module().train_counts(
            counts._impl, vocab_size=vocab_size, algorithm=algorithm, supermerges=supermerges,
            greedy_split=greedy_split, tau=tau, blowup=blowup, threads=threads, progress=progress)
        tok = Tokenizer(impl, backend)
    else:
        ref = counts._impl
        settings = _ref_model.Settings(ref.pattern, ref.script_pattern, ref.scripts,
                                       _pretok.MERGE_PATTERN, float(tau), blowup)
        stats: dict[str, float] = {}
        model = _ref_train.train_counted(ref.counts, settings, vocab_size, algorithm, supermerges,
                                         greedy_split=greedy_split, progress=progress, stats=stats)
        tok = Tokenizer(ReferenceCore(model, training_stats=stats), backend)
    _warn_if_short(tok, vocab_size, algorithm, supermerges)
    return tok


AllowedSpecial = Literal["all", "none", "none_raise"] | AbstractSet[str]
DisallowedSpecial = Literal["all"] | Collection[str]


class IdArrays(NamedTuple):
    """``encode_batch(..., return_array=True)``: all ids back to back, and where each text's
    ids start and end (text ``i`` is ``ids[bounds[i]:bounds[i + 1]]``)."""
    ids: Any
    bounds: Any


def _disallowed(disallowed_special: object, special: dict[str, int]) -> AbstractSet[str]:
    if isinstance(disallowed_special, str):
        if disallowed_special != "all":
            raise ValueError(f"disallowed_special must be 'all' or a collection of special "
                             f"tokens, got {disallowed_special!r}")
        return frozenset(special)
    if not isinstance(disallowed_special, Collection):
        raise TypeError(f"disallowed_special must be 'all' or a collection of special tokens, "
                        f"not {type(disallowed_special).__name__}")
    unknown = sorted(str(s) for s in disallowed_special if s not in special)
    if unknown:
        raise ValueError(f"disallowed_special names tokens that are not registered: {unknown}")
    return frozenset(disallowed_special)


#: argument types of `Tokenizer._allowed` whose values cannot change, so can be keys
_FIXED = (str, type(None), frozenset, tuple)


class _Refused(list[str]):
    """The special tokens that must not occur, longest first, with their first characters:
    a text that holds none of these holds none of the tokens (an empty token's "first
    character" is "", which every text holds)."""

    def __init__(self, tokens: list[str]):
        super().__init__(tokens)
        self.first = tuple(sorted({t[:1] for t in tokens}))


#: the most policies a tokenizer keeps (see `Tokenizer._policies`)
_MOST_POLICIES = 64


class Tokenizer:
    """A trained BPE, BoundlessBPE or SuperBPE tokenizer.

    Made by :func:`train` or :meth:`Tokenizer.load`; saved by :meth:`save` in the
    "BoundlessBPE v2" format of the paper's implementation.
    """

    def __init__(self, impl: Any, backend: str):
        self._impl = impl
        self.backend = backend
        # (allowed_special, disallowed_special) -> what `_allowed` makes of them; emptied
        # when special tokens are registered (working it out anew took two thirds of a
        # short text's `encode`)
        self._policies: dict[tuple[object, object], tuple[list[str], _Refused]] = {}
        #: how the model was made (see :mod:`superword._provenance`): set by :func:`train`,
        #: read by :meth:`load` from the sidecar ``MODEL.json``; ``None`` when unknown
        self.provenance: dict[str, Any] | None = None

    # -- pickling ---------------------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        """A pickle holds the model's text (as :meth:`save` writes it; a ranks model's
        ``.tiktoken`` text, pattern and special tokens), its n-gram table, whether encoding
        uses the greedy split, the backend and the provenance: no path, no retraining.  The
        same tokenizer always pickles to the same bytes, so ``datasets`` can hash it."""
        state: dict[str, Any] = {"backend": self.backend, "provenance": self.provenance}
        if self.kind == "tiktoken":
            state["ranks"] = self._impl.dumps_tiktoken()
            state["pattern"] = self.pattern
            state["special_tokens"] = sorted(self.special_tokens.items(), key=lambda item: item[1])
        else:
            state["model"] = self.model_text()
            state["ngrams"] = self._impl.dumps_ngrams()
            state["greedy_split"] = bool(self._impl.greedy_split)
        return (_restore, (PICKLE_FORMAT, state))

    def __copy__(self) -> Tokenizer:
        return _restore(*self.__reduce__()[1])

    def __deepcopy__(self, memo: dict[int, Any]) -> Tokenizer:
        return self.__copy__()

    # -- files -----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str], backend: str | None = None,
             greedy_split: bool = False) -> Tokenizer:
        """Load a "BoundlessBPE v2" model file (ours or the paper implementation's).

        Encoding is the paper's (SPEC 7, and SPEC 9 for models with deletions).
        ``greedy_split=True`` is an opt-in extension: cut runs of pretokens into the frequent
        n-grams of training before supermerges (SPEC 3.1).  It needs the n-gram table that
        :meth:`save` writes next to a model trained with ``greedy_split=True``, as
        ``<path>.ngrams`` (a table inside a model file of an earlier superword version is used
        when there is no sidecar)."""
        backend = _resolve_backend(backend)
        if not isinstance(greedy_split, bool):
            raise TypeError(f"greedy_split must be True or False, got {type(greedy_split).__name__}")
        path = os.fspath(path)
        if backend == "rust":
            tok = cls(_core_module().Tokenizer.load(path, greedy_split), backend)
        else:
            tok = cls(ReferenceCore.load(path, greedy_split), backend)
        if os.path.exists(_provenance.sidecar_path(path)):
            tok.provenance = _provenance.read(path, tok.model_text())
        return tok

    @classmethod
    def from_tiktoken(cls, path: str | os.PathLike[str], pattern: str,
                      special_tokens: dict[str, int] | None = None,
                      backend: str | None = None) -> Tokenizer:
        """A plain rank-based BPE model from a ``.tiktoken`` ranks file, encoding exactly as
        tiktoken does with the same ranks, ``pattern`` and ``special_tokens``.  For
        ``cl100k_base``: ``Tokenizer.from_tiktoken(path, CL100K_PATTERN, CL100K_SPECIAL)``.

        Ids may leave gaps, but stay near the number of tokens: every rank and special id must
        be below twice the number of tokens (ranks and special tokens), or below 2**20 when
        that is more; a special token's id must be no rank's and no other special token's.
        """
        backend = _resolve_backend(backend)
        if not isinstance(pattern, str):
            raise TypeError("pattern must be the pre-tokenization regex (a str), e.g. "
                            "superword.CL100K_PATTERN")
        special = dict(special_tokens or {})
        for s, i in special.items():
            if not isinstance(s, str) or not s:
                raise ValueError(f"special token {s!r} must be a non-empty str")
            _check_special_text(s)
            _check_int(f"id of special token {s!r}", i)
            if not 0 <= i < 2**32:
                raise ValueError(f"special token {s!r} has id {i}, which is not a token id: token "
                                 f"ids are 32-bit, 0 to {2**32 - 1}")
        _check_special_overlaps(list(special))
        _pretok.Pretokenizer(pattern)  # a bad pattern is named here
        path = os.fspath(path)
        if backend == "rust":
            impl = _core_module().Tokenizer.from_tiktoken(path, pattern, list(special.items()))
        else:
            impl = ReferenceRankCore.load(path, pattern, list(special.items()))
        return cls(impl, backend)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model file atomically, and, when :attr:`provenance` is known, the sidecar
        ``path + ".json"`` describing how it was made.  A model trained with
        ``greedy_split=True`` also gets its n-gram table in ``<path>.ngrams``, which only
        ``Tokenizer.load(path, greedy_split=True)`` reads.

        A reader sees the old file or the new one, never a part, even after a ``kill -9``;
        saves from several threads to one path do not collide (the last one wins).  ``path``
        must be a regular file or absent: a folder, FIFO or device node is refused; a symbolic
        link is written through (the file it points to is replaced)."""
        if self.backend == "reference":
            self._impl.save(os.fspath(path))  # the model file and its n-gram sidecar
        else:
            _files.write_text_atomic(path, self.model_text())
            ngrams = self._impl.dumps_ngrams()
            sidecar = _ref_model.ngrams_path(path)
            if ngrams is not None:
                _files.write_text_atomic(sidecar, ngrams)
            else:  # a sidecar left from an earlier model at the same path
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(sidecar)
        if self.provenance is not None:
            _provenance.write(path, self.provenance, self.model_text())

    def save_tiktoken(self, path: str | os.PathLike[str]) -> str:
        """Write a ``.tiktoken`` ranks file (rank = our id) for ``tiktoken.Encoding`` and
        return the pattern to give it as ``pat_str``.

        Plain BPE models with simple pre-tokenization encode to exactly our ids (the pattern
        is :attr:`pattern`).  Script-aware and superword models get the closest single
        pattern (see ``superword._export``): tiktoken has no script runs and no supermerges,
        so its ids can differ on some texts; ``benchmarks/hf_agreement.py`` measures how often."""
        from . import _export
        if self.kind == "tiktoken" or (self.kind == "word" and not self._script_aware()):
            self._impl.save_tiktoken(os.fspath(path))
            return self.pattern
        model = _export.model_of(self)
        pattern = _export.tiktoken_pattern(model)
        _export.write_atomic(os.fspath(path), _export.tiktoken_ranks_text(model))
        return pattern

    def save_hf(self, directory: str | os.PathLike[str], overwrite: bool = False, *,
                bos_token: str | None = None, eos_token: str | None = None,
                pad_token: str | None = None, unk_token: str | None = None,
                model_max_length: int | None = None,
                sample: Iterable[str] | None = None) -> dict[str, float] | None:
        """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``
        into ``directory`` for ``tokenizers.Tokenizer.from_file`` and
        ``transformers.AutoTokenizer.from_pretrained``.  Ids are ours; plain BPE models give
        our ids exactly, superword models approximately (see ``superword._export``; for exact
        ids in ``transformers`` use ``superword.hf.SuperwordTokenizer``).  A directory that
        holds other files is refused unless ``overwrite=True``.  ``bos_token`` etc. name
        special tokens; one the model lacks is added to the exported files (next free id).

        ``sample``: documents on which to measure the export with ``tokenizers``; returns
        ``{"documents", "identical" (share with our ids), "tokens", "token_difference"}``."""
        from . import _export
        roles = {"bos_token": bos_token, "eos_token": eos_token, "pad_token": pad_token,
                 "unk_token": unk_token}
        texts = None if sample is None else _export.sample_texts(sample)  # checked before writing
        _export.save_hf(self, directory, overwrite, roles, model_max_length)
        if texts is None:
            return None
        return _export.hf_agreement(self, os.fspath(directory), texts)

    @classmethod
    def from_hf(cls, path: str | os.PathLike[str], backend: str | None = None) -> Tokenizer:
        """A byte-level BPE ``tokenizer.json`` (GPT-2 / Llama-3 style) as a rank-based model
        with the file's ids, pattern and special tokens.  Other model types (WordPiece,
        Unigram, ...) raise ``ValueError``."""
        from . import _export
        name = os.fspath(path)
        ranks, pattern, special = _export.load_hf(name)
        with _export.temporary_file(ranks, ".tiktoken") as ranks_path:
            try:
                return cls.from_tiktoken(ranks_path, pattern, special, backend=backend)
            except ValueError as exc:
                # (what from_tiktoken checks beyond load_hf, such as how far special ids may
                # reach, named after the file the user gave, never the temporary ranks file)
                raise ValueError(f"{name}: {str(exc).replace(os.fspath(ranks_path), name)}") from None

    def _script_aware(self) -> bool:
        from . import _export
        return _export.model_of(self).settings.script_specific_regex is not None

    @property
    def pattern(self) -> str:
        """The main pre-tokenization pattern."""
        return self._impl.pattern

    # -- facts -----------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        """``"word"`` (plain BPE), ``"boundless"`` or ``"superbpe"``."""
        return self._impl.kind

    @property
    def vocab_size(self) -> int:
        """Number of ids: regular and superword tokens plus special tokens."""
        return self._impl.vocab_size

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._impl.special_tokens)

    @property
    def num_supermerges(self) -> int:
        return self._impl.num_supermerges

    @property
    def training_stats(self) -> dict[str, float]:
        """Seconds spent per training stage (``pretokenize_count``, ``phase1``,
        ``candidates``, ``phase2``), when made by :func:`train`."""
        return dict(self._impl.training_stats)

    def token_bytes(self, token_id: int) -> bytes:
        return self._impl.token_bytes(self._check_id(token_id))

    def id_of(self, token: bytes) -> int | None:
        """The id of the token with these bytes (special tokens excluded), or ``None``."""
        if not isinstance(token, (bytes, bytearray)):
            raise TypeError(f"token must be bytes, not {type(token).__name__}")
        return self._impl.id_of(bytes(token))

    def is_superword(self, token_id: int) -> bool:
        return self._impl.is_superword(self._check_id(token_id))

    def _check_id(self, token_id: object) -> int:
        """``token_id`` as an int that both backends take (the Rust core takes 64 bits)."""
        token_id = _check_int("token id", token_id)
        if not -2**63 <= token_id < 2**63:
            raise ValueError(f"token id {token_id} is out of range: no token has this id "
                             f"(ids are below {self.vocab_size})")
        return token_id

    # -- names other libraries use (tiktoken, Hugging Face tokenizers) ---------------------------

    @property
    def n_vocab(self) -> int:
        """tiktoken's name for :attr:`vocab_size` (the largest id + 1)."""
        return self.vocab_size

    def __len__(self) -> int:
        """Hugging Face's ``len(tokenizer)``: :attr:`vocab_size`, special tokens included."""
        return self.vocab_size

    @property
    def eot_token(self) -> int:
        """tiktoken's end-of-text id: the id of the special token ``<|endoftext|>``."""
        eot = self._impl.special_tokens.get("<|endoftext|>")
        if eot is None:
            raise ValueError("this model has no special token '<|endoftext|>'; add it with "
                             "tok.register_special_tokens(['<|endoftext|>'])")
        return eot

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """tiktoken's ``encode_single_token``: the id of the one token that is exactly this
        text (a special token's text included) or these bytes; ``KeyError`` if none is."""
        if isinstance(text_or_bytes, str):
            special = self._impl.special_tokens.get(text_or_bytes)
            if special is not None:
                return special
            raw = text_or_bytes.encode("utf-8", errors="surrogatepass")
        elif isinstance(text_or_bytes, (bytes, bytearray)):
            raw = bytes(text_or_bytes)
        else:
            raise TypeError(f"encode_single_token takes str or bytes, not {type(text_or_bytes).__name__}")
        found = self._impl.id_of(raw)
        if found is None:
            raise KeyError(f"{text_or_bytes!r} is not a single token of this model")
        return found

    def decode_single_token_bytes(self, token_id: int) -> bytes:
        """tiktoken's name for :meth:`token_bytes`."""
        return self.token_bytes(token_id)

    def decode_with_offsets(self, ids: Iterable[int]) -> tuple[str, list[int]]:
        """tiktoken's ``decode_with_offsets``: the decoded text and, per token, the index of
        the character where it starts (a token that begins inside a character gets the index
        of that character).

        >>> tok = train(["the cat sat on the mat"] * 5, vocab_size=250, algorithm="bpe")
        >>> text, starts = tok.decode_with_offsets(tok.encode("the cat"))
        >>> [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])] == [
        ...     raw.decode() for raw in map(tok.token_bytes, tok.encode("the cat"))]
        True
        """
        ids = list(ids)
        text = self.decode(ids)
        starts, chars = [], 0
        for i in ids:
            raw = self.token_bytes(i)
            continues = bool(raw) and 0x80 <= raw[0] < 0xC0  # a UTF-8 continuation byte
            starts.append(max(chars - continues, 0))
            chars += sum(1 for b in raw if not 0x80 <= b < 0xC0)
        return text, starts

    def get_vocab(self) -> dict[str, int]:
        """Hugging Face's ``get_vocab()``: every token as a string in the byte-level alphabet
        of GPT-2 and Hugging Face byte-level BPE (a space is ``Ġ``, a newline ``Ċ``, every byte
        one character), special tokens as themselves.  :meth:`token_bytes` gives raw bytes."""
        vocab = {_to_byte_level(raw): i for i, raw, _ in self._impl.vocab_items()}
        vocab.update(self._impl.special_tokens)
        return vocab

    def token_to_id(self, token: str) -> int | None:
        """Hugging Face's ``token_to_id``: the id of a token written as in :meth:`get_vocab`
        (byte-level alphabet, or a special token's text), or ``None``."""
        if not isinstance(token, str):
            raise TypeError(f"token must be a str, not {type(token).__name__}")
        special = self._impl.special_tokens.get(token)
        if special is not None:
            return special
        raw = _from_byte_level(token)
        return None if raw is None else self._impl.id_of(raw)

    def id_to_token(self, token_id: int) -> str | None:
        """Hugging Face's ``id_to_token``: the token as in :meth:`get_vocab`, or ``None`` for
        an id that is not in the model."""
        token_id = _check_int("token id", token_id)
        for text, i in self._impl.special_tokens.items():
            if i == token_id:
                return text
        if not 0 <= token_id < self.vocab_size:
            return None
        try:
            return _to_byte_level(self._impl.token_bytes(token_id))
        except ValueError:
            return None

    def __iter__(self) -> Iterator[tuple[int, bytes, bool]]:
        """(id, bytes, is_superword) for every regular and superword token."""
        return iter(self._impl.vocab_items())

    def __repr__(self) -> str:
        return (f"<superword.Tokenizer {self.kind}: {self.vocab_size} ids, "
                f"{self.num_supermerges} supermerges, backend={self.backend!r}>")

    def model_text(self) -> str:
        """The model file's text (what :meth:`save` writes)."""
        return self._impl.dumps()

    # -- special tokens ------------------------------------------------------------------------

    def register_special_tokens(self, tokens: Iterable[str]) -> dict[str, int]:
        """Give each new special token the next free id; return the full mapping."""
        if isinstance(tokens, str):
            raise TypeError("register_special_tokens takes a list of strings, not one string")
        tokens = list(tokens)
        special = self._impl.special_tokens
        seen = set(special)
        for i, t in enumerate(tokens):
            if not isinstance(t, str):
                raise TypeError(f"special token {i} is {type(t).__name__}, not str")
            if not t:
                raise ValueError("a special token cannot be empty")
            if "\n" in t or "\r" in t:
                raise ValueError(f"special token {t!r} contains a line break")
            _check_special_text(t)
            if t in seen:
                raise ValueError(f"special token {t!r} is already registered")
            seen.add(t)
        _check_special_overlaps([*special, *tokens])
        self._impl.register_special_tokens(tokens)
        # a new dict, not `clear()`: a call that read the old tokens stores into the old one
        self._policies = {}
        return self.special_tokens

    # -- encoding --------------------------------------------------------------------------------

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text``, treating special-token strings as ordinary text."""
        try:
            return self._impl.encode_ordinary(text)
        except (UnicodeEncodeError, TypeError):
            _check_text(text)  # names the problem
            raise

    def encode(self, text: str, allowed_special: AllowedSpecial = "none_raise",
               disallowed_special: DisallowedSpecial | None = None) -> list[int]:
        """Encode ``text``.  ``allowed_special``: ``"all"``, ``"none"`` (specials are ordinary
        text), ``"none_raise"`` (raise if one occurs; the default) or a set of specials.

        ``disallowed_special`` is tiktoken's argument, for code written against it: the
        special tokens that raise when they occur (``"all"``: every one not allowed; ``()``:
        none, so they are encoded as text).  When given, it replaces the raising part of
        ``allowed_special``.

        >>> tok = train(["the cat sat on the mat"] * 5, vocab_size=250, algorithm="bpe")
        >>> _ = tok.register_special_tokens(["<|endoftext|>"])
        >>> tok.encode("cat<|endoftext|>", allowed_special={"<|endoftext|>"})[-1] == tok.eot_token
        True
        >>> len(tok.encode("<|endoftext|>", disallowed_special=()))  # as text
        13
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        # (`_allowed` inlined: its call was a tenth of a short text's `encode`)
        policy = None
        try:  # noqa: SIM105 (`contextlib.suppress` costs more than the lookup)
            policy = self._policies[allowed_special, disallowed_special]
        except (KeyError, TypeError):
            pass
        allowed, checks = policy or self._kept_policy(allowed_special, disallowed_special)
        if checks:
            # (the gate of `_refuse_specials`, inlined: its call was half of a short text's check)
            for c in checks.first:
                if c in text:
                    self._refuse_specials((text,), checks)
                    break
        try:
            # (no special token to recognise is `encode_ordinary`, without converting the list)
            return self._impl.encode(text, allowed) if allowed else self._impl.encode_ordinary(text)
        except UnicodeEncodeError:
            _check_text(text)  # names the lone surrogate
            raise

    def encode_batch(self, texts: Iterable[str], allowed_special: AllowedSpecial = "none_raise",
                     threads: int | None = None, return_array: bool = False,
                     disallowed_special: DisallowedSpecial | None = None) -> Any:
        """Encode many texts, in parallel with the GIL released.  ``threads=None``: the
        environment variable ``RAYON_NUM_THREADS`` if set, else all cores; more threads than
        cores are never started.  The ids never depend on ``threads``.  Safe to call from
        many Python threads on one tokenizer.

        ``return_array=True`` returns ``IdArrays(ids, bounds)`` of numpy arrays instead of
        lists: all ids (``uint32``) back to back, and ``len(texts) + 1`` bounds (``uint64``),
        text ``i`` being ``ids[bounds[i]:bounds[i + 1]]``; no Python object per token.  (The
        bounds are positions in ``ids``, one pair per *text*, not character offsets per token:
        for those, see :meth:`decode_with_offsets`.)"""
        if isinstance(texts, str):
            raise TypeError("encode_batch takes a list of texts; use encode for one text")
        texts = list(texts)
        # (the test at C speed first: a Python loop over a large batch cost a few percent)
        if not all(map(isinstance, texts, itertools.repeat(str))):
            for i, t in enumerate(texts):
                if not isinstance(t, str):
                    raise TypeError(f"text {i} of encode_batch is {type(t).__name__}, not str")
        requested = _requested_threads(threads)
        allowed = self._allowed(allowed_special, texts, disallowed_special)
        try:
            if return_array:
                return _as_arrays(*self._flat(texts, allowed, requested))
            # Python's cyclic garbage collector is paused while millions of id lists are made:
            # lists of ints cannot form cycles, and its passes over them took a fifth of a large
            # call (perf).  (Inline: as a context manager it cost 1.3 us a call.)
            collecting = gc.isenabled()
            gc.disable()
            try:
                return self._impl.encode_batch(texts, allowed, requested)
            finally:
                if collecting:
                    gc.enable()
        except UnicodeEncodeError:
            for i, t in enumerate(texts):  # only on failure: find and name the text
                try:
                    _check_text(t)
                except ValueError as exc:
                    raise ValueError(f"text {i} of encode_batch: {exc}") from None
            raise

    def _flat(self, texts: list[str], allowed: list[str], threads: int | None) -> tuple[bytes, bytes]:
        flat = getattr(self._impl, "encode_batch_flat", None)
        if flat is not None:
            return flat(texts, allowed, threads)
        import array
        batch = self._impl.encode_batch(texts, allowed, threads)
        ids = array.array("I", (i for seq in batch for i in seq))
        offsets = array.array("Q", [0])
        for seq in batch:
            offsets.append(offsets[-1] + len(seq))
        if sys.byteorder != "little":
            ids.byteswap()
            offsets.byteswap()
        return ids.tobytes(), offsets.tobytes()

    def _allowed(self, allowed_special: object, texts: Sequence[str],
                 disallowed_special: object = None) -> list[str]:
        """The special tokens to recognise, after the ``allowed_special`` policy (and
        tiktoken's ``disallowed_special``, when given); raises if one of ``texts`` holds a
        special token that must not occur."""
        # the common case first, as cheaply as Python allows (this function was a third of a
        # short text's `encode`): a value equal to a kept key means what the key means
        policy = None
        try:  # noqa: SIM105 (`contextlib.suppress` costs more than the lookup)
            policy = self._policies[allowed_special, disallowed_special]
        except (KeyError, TypeError):  # new, or a set or list (which cannot be a key)
            pass
        allowed, checks = policy or self._kept_policy(allowed_special, disallowed_special)
        if checks:
            self._refuse_specials(texts, checks)
        return allowed

    def _kept_policy(self, allowed_special: object,
                     disallowed_special: object) -> tuple[list[str], _Refused]:
        """`_policy`, kept in `_policies` when its arguments are values that cannot change
        (a `set` or a list is worked out every time)."""
        policies = self._policies  # (taken before the tokens are read: see register_special_tokens)
        policy = self._policy(allowed_special, disallowed_special)
        if type(allowed_special) in _FIXED and type(disallowed_special) in _FIXED:
            with contextlib.suppress(TypeError):  # a tuple holding something unhashable
                if len(policies) >= _MOST_POLICIES:  # a new frozenset per call must not pile up
                    policies.clear()
                policies[allowed_special, disallowed_special] = policy
        return policy

    @staticmethod
    def _refuse_specials(texts: Sequence[str], checks: _Refused) -> None:
        """Raise if one of ``texts`` holds one of the special tokens ``checks``."""
        for n, text in enumerate(texts):
            # a text without any of their first characters holds none of them (cl100k's five
            # all start with "<": one scan instead of five)
            for c in checks.first:
                if c in text:
                    break
            else:
                continue
            for s in checks:
                if s in text:
                    where = f"text {n}" if len(texts) > 1 else "text"
                    raise ValueError(
                        f"{where} contains the special token {s!r} at index {text.index(s)}; "
                        f"pass allowed_special='all' (or a set) to encode it as a special "
                        f"token, or 'none' (disallowed_special=()) to encode it as text")

    def _policy(self, allowed_special: object,
                disallowed_special: object) -> tuple[list[str], _Refused]:
        """The special tokens to recognise, sorted, and those that must not occur, longest
        first (so that a token that contains another is the one named)."""
        special = self._impl.special_tokens
        raising: AbstractSet[str] = frozenset()
        if isinstance(allowed_special, str):
            if allowed_special == "all":
                allowed: AbstractSet[str] = frozenset(special)
            elif allowed_special in ("none", "none_raise"):
                allowed = frozenset()
                if allowed_special == "none_raise":
                    raising = frozenset(special)
            else:
                raise ValueError(f"allowed_special must be 'all', 'none', 'none_raise' or a set "
                                 f"of special tokens, got {allowed_special!r}")
        elif isinstance(allowed_special, AbstractSet):
            unknown = sorted(s for s in allowed_special if s not in special)
            if unknown:
                raise ValueError(f"allowed_special names tokens that are not registered: {unknown}")
            allowed = frozenset(allowed_special)
        else:
            raise TypeError(f"allowed_special must be 'all', 'none', 'none_raise' or a set, "
                            f"not {type(allowed_special).__name__}")
        if disallowed_special is not None:
            raising = _disallowed(disallowed_special, special)
        # sorted once per call (sorted per text, the empty list of allowed_special="none" took a
        # quarter of a large flat encode_batch), and kept per policy (see `_policies`)
        return sorted(allowed), _Refused(sorted(raising - allowed, key=len, reverse=True))

    def encode_with_tokens(self, text: str) -> list[tuple[int, bytes]]:
        """``(id, token bytes)`` for each token of ``text`` (no special tokens): how the
        text was split."""
        ids = self.encode_ordinary(text)
        return [(i, self._impl.token_bytes(i)) for i in ids]

    def encode_to_tokens(self, text: str) -> list[bytes]:
        """The token bytes of ``text`` (no special tokens), to show how it was split."""
        try:
            return self._impl.encode_to_tokens(text)
        except (UnicodeEncodeError, TypeError):
            _check_text(text)
            raise

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """Concatenated token bytes, lossless.  Ids are ints (numpy's integers too, not bools)."""
        if type(ids) is not list:
            # (numpy arrays and `array.array` make their ints at C speed; `list` would give
            # one numpy scalar per id)
            tolist = getattr(ids, "tolist", None)
            ids = tolist() if tolist is not None else list(ids)
        return self._impl.decode_bytes(ids)

    def decode(self, ids: Iterable[int]) -> str:
        """Decoded text; invalid UTF-8 (from a partial sequence of ids) becomes U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def decode_batch(self, batch: Iterable[Iterable[int]]) -> list[str]:
        """:meth:`decode` of each list of ids."""
        return [self.decode(ids) for ids in batch]


#: The layout of a pickled :class:`Tokenizer` (see ``Tokenizer.__reduce__``); a pickle of
#: another layout was made by another superword version and is refused, not guessed at.
PICKLE_FORMAT = 1
_PICKLE_NAME = "<pickled superword.Tokenizer>"


def _restore(fmt: object, state: object) -> Tokenizer:
    """The tokenizer a pickle holds (the other half of ``Tokenizer.__reduce__``)."""
    from . import __version__
    if fmt != PICKLE_FORMAT or not isinstance(state, dict):
        raise ValueError(f"this pickle of a superword.Tokenizer was made by another version of "
                         f"superword (pickle format {fmt!r}; superword {__version__} reads format "
                         f"{PICKLE_FORMAT}): load the model file with Tokenizer.load instead")
    try:
        backend = _resolve_backend(state["backend"])
        if "ranks" in state:
            special = [(str(s), int(i)) for s, i in state["special_tokens"]]
            if backend == "rust":
                impl: Any = _core_module().Tokenizer.loads_tiktoken(state["ranks"], state["pattern"], special,
                                                                   _PICKLE_NAME)
            else:
                impl = ReferenceRankCore.loads_tiktoken(state["ranks"], state["pattern"], special, _PICKLE_NAME)
        else:
            core = _core_module().Tokenizer if backend == "rust" else ReferenceCore
            impl = core.loads(state["model"], state["ngrams"], bool(state["greedy_split"]), _PICKLE_NAME)
        provenance = state["provenance"]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"this pickle of a superword.Tokenizer lacks what superword {__version__} "
                         f"needs ({exc!r}): it was made by another version of superword") from None
    tok = Tokenizer(impl, backend)
    tok.provenance = provenance
    return tok


def _to_byte_level(raw: bytes) -> str:
    """GPT-2's byte-level alphabet, as model files write tokens (SPEC 8): a space is 'Ġ'."""
    return _ref_tokens.render(raw)


def _from_byte_level(text: str) -> bytes | None:
    try:
        return _ref_tokens.parse(text)
    except KeyError:
        return None


def _as_arrays(ids: bytes, bounds: bytes) -> IdArrays:
    try:
        import numpy as np
    except ImportError:
        raise ImportError("encode_batch(return_array=True) needs numpy: pip install numpy") from None
    return IdArrays(np.frombuffer(ids, dtype="<u4"), np.frombuffer(bounds, dtype="<u8"))


def _check_special_overlaps(tokens: list[str]) -> None:
    """Reject two special tokens that partly overlap (the end of one is the start of the
    other, and neither contains the other): where they meet in a text, which one is meant
    would be ambiguous.  One inside another is fine: the longest match wins (SPEC 7.1).

    Each token's beginnings are looked up among the other tokens' ends (by hash, so that two
    long tokens do not keep all their ends in memory), instead of comparing every pair of
    tokens: that took 43 s for 3,000 tokens.  An overlap is shorter than both tokens, so
    no end or beginning longer than the longest other token is looked at."""
    if len(tokens) < 2:
        return
    longest, second = sorted(map(len, tokens), reverse=True)[:2]
    def reach(t: str) -> int:  # the length of the longest token other than `t`
        return second if len(t) == longest else longest
    ends: dict[int, list[str]] = {}
    for a in tokens:
        for k in range(1, min(len(a), reach(a))):
            ends.setdefault(hash(a[-k:]), []).append(a)
    contained: dict[tuple[str, str], bool] = {}
    for b in tokens:
        for k in range(1, min(len(b), reach(b))):
            start = b[:k]
            for a in ends.get(hash(start), ()):
                if a == b or len(a) <= k or a[-k:] != start:
                    continue
                pair = (a, b)
                if pair not in contained:
                    contained[pair] = a in b or b in a
                if not contained[pair]:
                    raise ValueError(f"special tokens {a!r} and {b!r} overlap ({start!r} ends one "
                                     f"and starts the other)")


def _lone_surrogate(text: str) -> tuple[str, int] | None:
    """The first lone surrogate of ``text`` (which UTF-8 cannot hold), as ``("U+D800", index)``,
    or ``None``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"U+{ord(text[exc.start]):04X}", exc.start
    return None


def _check_special_text(token: str) -> None:
    """A special token must be text UTF-8 can hold: one with a lone surrogate was refused by the
    Rust core with Python's bare UnicodeEncodeError, and taken by the reference, whose decode
    and save then failed."""
    if (found := _lone_surrogate(token)) is not None:
        raise ValueError(f"special token {token!r} contains a lone surrogate {found[0]}; it cannot "
                         f"be encoded as UTF-8")


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if (found := _lone_surrogate(text)) is not None:
        raise ValueError(f"text contains a lone surrogate {found[0]} at index {found[1]}; it cannot "
                         f"be encoded as UTF-8")
    return text
