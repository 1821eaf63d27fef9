"""The reference backend: a module with the same entry points as the Rust core
``superword._core`` (``Tokenizer``, ``Counts``, ``train_files``, ``count_iter``, ...), each
made of the pure-Python stages of :mod:`superword.reference`, so that the front
(:class:`superword.Tokenizer`, :func:`superword.train`, :func:`superword.count`) has one code
path for both backends.  ``superword._backend.Core`` is the interface; mypy checks that this
module satisfies it."""
from __future__ import annotations

import base64
import contextlib
import itertools
import operator
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from . import _inputs
from .reference import count as _ref_count
from .reference import countfile as _ref_countfile
from .reference import encode as _encode
from .reference import model as _model
from .reference import pretokenize as _pretok
from .reference import ranks as _ranks
from .reference import train as _ref_train
from .reference.model import write_text_atomic
from .reference.pretokenize import compile_pattern, refuse_empty_matches

if TYPE_CHECKING:  # (the interface's types only: `_backend` imports this module)
    from ._backend import CountOptions, TrainOptions


def no_id_left(token: str) -> str:
    return f"no id is left for the special token {token!r}: token ids are 32-bit"


def _kept_cutter(kept: tuple[frozenset[str], _encode.SpecialCutter] | None,
                 special_tokens: dict[str, int], allowed: Iterable[str],
                 ) -> tuple[frozenset[str], _encode.SpecialCutter]:
    """The cutter for ``allowed``: ``kept`` when it was made for the same tokens (a model
    with many special tokens would build it anew for every text)."""
    names = frozenset(allowed)
    if kept is not None and kept[0] == names:
        return kept
    return names, _encode.SpecialCutter(special_tokens, names)


def check_ids(ids: Iterable[object]) -> list[int]:
    """``decode``'s ids as ints, checked as the Rust core checks them (``ids_of`` in
    ``src/py/tokenizer.rs``): each an ``int`` or an integer with ``__index__`` (numpy's), not a
    ``bool``, within 64 bits; an error names the position."""
    out = []
    for position, i in enumerate(ids):
        try:
            if isinstance(i, bool):
                raise TypeError
            value = operator.index(i)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(f"token id at position {position} is {type(i).__name__}, not int") from None
        if not -2**63 <= value < 2**63:
            raise ValueError(f"token id {value} at position {position} is out of range")
        out.append(value)
    return out


class ReferenceCore:
    def __init__(self, model: _model.Model, greedy_split: bool = False,
                 training_stats: dict[str, float] | None = None):
        self.model = model
        self.encoder = _encode.Encoder(model, greedy_split=greedy_split)
        self.training_stats = dict(training_stats or {})
        self._cutter: tuple[frozenset[str], _encode.SpecialCutter] | None = None

    @staticmethod
    def load(path: str, greedy_split: bool = False) -> ReferenceCore:
        model = _model.read_model(path)
        if greedy_split and os.path.exists(_model.ngrams_path(path)):
            model.ngrams = _model.read_ngrams(path)
        # else: a table in the file itself (older superword files), if any; without either,
        # the Encoder names the problem
        return ReferenceCore(model, greedy_split)

    @staticmethod
    def loads(text: str, ngrams: str | None = None, greedy_split: bool = False,
              name: str = "<model text>") -> ReferenceCore:
        """A model from a model file's text and its n-gram sidecar's (``dumps``, ``dumps_ngrams``)."""
        model = _model.loads(text, name)
        if ngrams is not None:
            model.ngrams = _model.loads_ngrams(ngrams, name)
        return ReferenceCore(model, greedy_split)

    @property
    def greedy_split(self) -> bool:
        return self.encoder.ngrams is not None

    def save(self, path: str) -> None:
        """The v2 file, plus the n-gram sidecar when the model has an n-gram table (SPEC 3.1);
        a sidecar left from an earlier model at the same path is removed."""
        _model.write_model(self.model, path)
        if self.model.ngrams is not None:
            _model.write_ngrams(self.model.ngrams, path)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(_model.ngrams_path(path))

    @staticmethod
    def from_tiktoken(path: str, pattern: str, special_tokens: list[tuple[str, int]]) -> ReferenceRankCore:
        return ReferenceRankCore.load(path, pattern, special_tokens)

    @staticmethod
    def loads_tiktoken(text: str, pattern: str, special_tokens: list[tuple[str, int]],
                       name: str = "<ranks text>") -> ReferenceRankCore:
        return ReferenceRankCore.loads_tiktoken(text, pattern, special_tokens, name)

    def dumps(self) -> str:
        return _model.dumps(self.model)

    def dumps_ngrams(self) -> str | None:
        return None if self.model.ngrams is None else _model.dumps_ngrams(self.model.ngrams)

    kind = property(lambda self: self.model.kind)
    vocab_size = property(lambda self: len(self.model.vocab) + len(self.model.special_tokens))
    num_supermerges = property(lambda self: len(self.model.supermerges))
    num_merges = property(lambda self: len(self.model.merges))
    special_tokens = property(lambda self: dict(self.model.special_tokens))

    def token_bytes(self, token_id: int) -> bytes:
        return self.encoder.decode_bytes([token_id])

    def is_superword(self, token_id: int) -> bool:
        if not 0 <= token_id < len(self.model.vocab):
            raise ValueError(f"token id {token_id} is out of range 0..{len(self.model.vocab) - 1}")
        return self.model.is_super[token_id]

    def vocab_items(self) -> list[tuple[int, bytes, bool]]:
        return list(zip(range(len(self.model.vocab)), self.model.vocab, self.model.is_super))

    def register_special_tokens(self, tokens: list[str]) -> None:
        special = dict(self.model.special_tokens)
        for t, i in zip(tokens, itertools.count(self.vocab_size)):
            if i >= 2**32:
                raise ValueError(no_id_left(t))
            special[t] = i
        self.model.special_tokens = special
        self.encoder.special_tokens = dict(special)
        self._cutter = None

    def encode_ordinary(self, text: str) -> list[int]:
        return self.encoder.encode_ordinary(text)

    def encode(self, text: str, allowed: Iterable[str]) -> list[int]:
        return self._cut(allowed).encode(text, self.encoder.encode_ordinary)

    def encode_batch(self, texts: list[str], allowed: Iterable[str], threads: int | None = None) -> list[list[int]]:
        cutter = self._cut(allowed)
        return [cutter.encode(t, self.encoder.encode_ordinary) for t in texts]

    def _cut(self, allowed: Iterable[str]) -> _encode.SpecialCutter:
        self._cutter = _kept_cutter(self._cutter, self.model.special_tokens, allowed)
        return self._cutter[1]

    def id_of(self, token: bytes) -> int | None:
        return self.encoder.token_id.get(token)

    @property
    def pattern(self) -> str:
        return self.model.settings.main_regex

    def dumps_tiktoken(self) -> str:
        if self.model.kind != "word" or self.model.settings.script_specific_regex is not None:
            raise ValueError("only plain BPE models with simple pre-tokenization (algorithm='bpe', "
                             "script_aware=False) can be written as tiktoken ranks: tiktoken has "
                             "no supermerges and no script runs")
        return _ranks.dumps_ranks(self.model.vocab)

    def save_tiktoken(self, path: str) -> None:
        write_text_atomic(path, self.dumps_tiktoken())

    def encode_to_tokens(self, text: str) -> list[bytes]:
        return self.encoder.encode_tokens(text)

    def decode_bytes(self, ids: list[int]) -> bytes:
        return self.encoder.decode_bytes(check_ids(ids))



class ReferenceRankCore:
    """A tiktoken ranks model in pure Python (the reference of ``_core.Tokenizer.from_tiktoken``)."""

    kind = "tiktoken"
    num_supermerges = 0
    greedy_split = False

    def __init__(self, ranks: dict[bytes, int], pattern: str, special_tokens: dict[str, int]):
        self.ranks = ranks
        self.vocab = {rank: token for token, rank in ranks.items()}
        self.pattern = pattern
        self._pattern = compile_pattern(pattern, "pattern")
        refuse_empty_matches(self._pattern, "pattern")  # (the rule of every door)
        self._special = dict(special_tokens)
        self._top = max([*self.vocab, *self._special.values()], default=0)  # the largest id
        self._cutter: tuple[frozenset[str], _encode.SpecialCutter] | None = None

    @staticmethod
    def load(path: str, pattern: str, special_tokens: list[tuple[str, int]]) -> ReferenceRankCore:
        ranks = _ranks.read_ranks(path)
        _ranks.check_special(ranks, dict(special_tokens), path)
        return ReferenceRankCore(ranks, pattern, dict(special_tokens))

    @staticmethod
    def loads_tiktoken(text: str, pattern: str, special_tokens: list[tuple[str, int]],
                       name: str = "<ranks text>") -> ReferenceRankCore:
        """A ranks model from a ``.tiktoken`` file's text (``dumps_tiktoken``)."""
        ranks = _ranks.parse_ranks(text, name)
        _ranks.check_special(ranks, dict(special_tokens), name)
        return ReferenceRankCore(ranks, pattern, dict(special_tokens))

    def dumps_tiktoken(self) -> str:
        return "".join(f"{base64.b64encode(self.vocab[i]).decode('ascii')} {i}\n" for i in sorted(self.vocab))

    vocab_size = property(lambda self: self._top + 1)
    special_tokens = property(lambda self: dict(self._special))
    training_stats = property(lambda self: {})

    def token_bytes(self, token_id: int) -> bytes:
        return self.decode_bytes([token_id])

    def is_superword(self, token_id: int) -> bool:
        self.decode_bytes([token_id])
        return False

    def id_of(self, token: bytes) -> int | None:
        return self.ranks.get(token)

    def vocab_items(self) -> list[tuple[int, bytes, bool]]:
        return [(i, self.vocab[i], False) for i in sorted(self.vocab)]

    def register_special_tokens(self, tokens: list[str]) -> None:
        special = dict(self._special)
        for t, i in zip(tokens, itertools.count(self._top + 1)):
            if i >= 2**32:
                raise ValueError(no_id_left(t))
            special[t] = i
        self._special = special
        self._top = max([self._top, *special.values()])
        self._cutter = None

    def _encode_text(self, text: str) -> list[int]:
        out: list[int] = []
        for piece in self._pattern.findall(text):
            raw = piece.encode("utf-8")
            rank = self.ranks.get(raw)
            if rank is not None:
                out.append(rank)
                continue
            for part in _ranks.byte_pair_merge(raw, self.ranks):
                if part not in self.ranks:
                    raise ValueError(f"the ranks file has no token for the bytes {list(part)}: "
                                     f"it lacks single bytes")
                out.append(self.ranks[part])
        return out

    def encode_ordinary(self, text: str) -> list[int]:
        return self._encode_text(text)

    def encode(self, text: str, allowed: Iterable[str]) -> list[int]:
        return self._cut(allowed).encode(text, self._encode_text)

    def encode_batch(self, texts: list[str], allowed: Iterable[str], threads: int | None = None) -> list[list[int]]:
        cutter = self._cut(allowed)
        return [cutter.encode(t, self._encode_text) for t in texts]

    def _cut(self, allowed: Iterable[str]) -> _encode.SpecialCutter:
        self._cutter = _kept_cutter(self._cutter, self._special, allowed)
        return self._cutter[1]

    def encode_to_tokens(self, text: str) -> list[bytes]:
        return [self.vocab[i] for i in self._encode_text(text)]

    def decode_bytes(self, ids: list[int]) -> bytes:
        inverse = {i: s.encode("utf-8") for s, i in self._special.items()}
        out = []
        for position, i in enumerate(check_ids(ids)):
            token = self.vocab.get(i, inverse.get(i))
            if token is None:
                raise ValueError(f"token id {i} at position {position} is out of range "
                                 f"(no token has this id)")
            out.append(token)
        return b"".join(out)

    def save(self, path: str) -> None:
        raise ValueError("a tiktoken ranks model has no BoundlessBPE v2 form; use save_tiktoken")

    def save_tiktoken(self, path: str) -> None:
        write_text_atomic(path, self.dumps_tiktoken())

    def dumps(self) -> str:
        raise ValueError("a tiktoken ranks model has no BoundlessBPE v2 form")

    def dumps_ngrams(self) -> str | None:
        return None


class ReferenceCounts:
    """The pure-Python twin of the core's ``Counts`` (the same methods)."""

    def __init__(self, settings: _ref_countfile.CountSettings, counts: _ref_count.Counts):
        self.settings, self.counts = settings, counts

    @staticmethod
    def load(path: str) -> ReferenceCounts:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"count file not found: {path}") from None
        except OSError as exc:
            raise OSError(f"{path}: cannot be read ({exc})") from None
        return ReferenceCounts.from_bytes(data, path)

    @staticmethod
    def from_bytes(data: bytes, name: str) -> ReferenceCounts:
        try:
            return ReferenceCounts(*_ref_countfile.from_bytes(data))
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None

    def to_bytes(self) -> bytes:
        return _ref_countfile.to_bytes(self.counts, self.settings)

    @property
    def pattern(self) -> str:
        return self.settings.pattern

    @property
    def script_pattern(self) -> str | None:
        return self.settings.script_pattern

    @property
    def scripts(self) -> list[str] | None:
        return None if self.settings.scripts is None else list(self.settings.scripts)

    @property
    def merge_pattern(self) -> str:
        return self.settings.merge_pattern

    @property
    def with_runs(self) -> bool:
        return self.settings.with_runs

    @property
    def documents(self) -> int:
        return self.counts.documents

    @property
    def pretokens(self) -> int:
        return self.counts.pretokens

    @property
    def num_words(self) -> int:
        return len(self.counts.words)

    @property
    def num_runs(self) -> int:
        return len(self.counts.runs)

    def most_common(self, n: int | None = None) -> list[tuple[str, int]]:
        order = _ref_countfile.canonical_words(self.counts.words)[:n]
        return [(w, self.counts.words[w]) for w in order]

    def prune(self, min_count: int) -> ReferenceCounts:
        return ReferenceCounts(self.settings, _ref_countfile.prune(self.counts, min_count))


# -- the module's entry points, named as the Rust core names them ------------------------------

Tokenizer = ReferenceCore
Counts = ReferenceCounts


def pretokenize(text: str, pattern: str, script_pattern: str | None = None,
                scripts: list[str] | None = None) -> list[str]:
    return list(_pretok.Pretokenizer(pattern, script_pattern, scripts).pretokenize(text))


def _trained(documents: Iterable[str], options: TrainOptions) -> ReferenceCore:
    stats: dict[str, float] = {}
    model = _ref_train.train(
        documents, options["vocab_size"], options["algorithm"], options["supermerges"],
        pattern=options["pattern"], script_pattern=options["script_pattern"], scripts=options["scripts"],
        greedy_split=options["greedy_split"], tau=options["tau"], blowup=options["blowup"],
        progress=options["progress"], stats=stats)  # type: ignore[arg-type]
    return ReferenceCore(model, training_stats=stats)


def train_files(paths: list[str], text_field: str, options: TrainOptions) -> ReferenceCore:
    return _trained(_inputs.documents_of(paths, None, text_field), options)


def train_iter(documents: Iterable[str], options: TrainOptions) -> ReferenceCore:
    return _trained(documents, options)


def train_docs(documents: list[str] | tuple[str, ...], options: TrainOptions) -> tuple[ReferenceCore, int, int]:
    """:func:`train_iter` on a list of str, with the documents and UTF-8 bytes it read."""
    tally = _inputs.Tally()
    impl = train_iter(tally.count("<documents>", documents), options)
    read, size = tally.inputs["<documents>"]
    return impl, read, size


def train_counts(counts: ReferenceCounts, *, vocab_size: int, algorithm: str, supermerges: int | None,
                 greedy_split: bool, tau: float, blowup: bool, threads: int | None,
                 progress: Callable[[str, int, int], object] | None) -> ReferenceCore:
    settings = _model.Settings(counts.pattern, counts.script_pattern, counts.scripts,
                               _pretok.MERGE_PATTERN, float(tau), blowup)
    stats: dict[str, float] = {}
    model = _ref_train.train_counted(counts.counts, settings, vocab_size, algorithm, supermerges,
                                     greedy_split=greedy_split, progress=progress,  # type: ignore[arg-type]
                                     stats=stats)
    return ReferenceCore(model, training_stats=stats)


def _counted(documents: Iterable[str], options: CountOptions) -> ReferenceCounts:
    pattern, script_pattern, scripts = options["pattern"], options["script_pattern"], options["scripts"]
    pretokenizer = _pretok.Pretokenizer(pattern, script_pattern, scripts)
    report = options["progress"] or (lambda stage, done, total: None)

    def counted(n: int) -> None:
        report("count", n, 0)
    counts = _ref_count.count_documents(documents, pretokenizer, with_runs=options["runs"], progress=counted)
    report("count", counts.documents, counts.documents)
    settings = _ref_countfile.CountSettings(pattern, script_pattern,
                                            None if scripts is None else tuple(scripts),
                                            _pretok.MERGE_PATTERN, options["runs"])
    return ReferenceCounts(settings, counts)


def count_files(paths: list[str], text_field: str, options: CountOptions) -> ReferenceCounts:
    return _counted(_inputs.documents_of(paths, None, text_field), options)


def count_iter(documents: Iterable[str], options: CountOptions) -> ReferenceCounts:
    return _counted(documents, options)


def merge_counts(tables: list[ReferenceCounts], names: list[str]) -> ReferenceCounts:
    return ReferenceCounts(*_ref_countfile.merge([(t.settings, t.counts) for t in tables], names))
