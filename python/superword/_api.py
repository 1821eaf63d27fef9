"""The public API: :func:`train` and :class:`Tokenizer`.

Python decides argument policy and error messages here; the work is done by a backend:
``"reference"`` (pure Python, :mod:`superword.reference`) or ``"rust"`` (the compiled core).
"""
from __future__ import annotations

import os
from typing import AbstractSet, Any, Callable, Iterable, Iterator, Literal

from . import _inputs
from .reference import encode as _ref_encode
from .reference import model as _model
from .reference import pretokenize as _pretok
from .reference import train as _ref_train

Backend = Literal["reference", "rust"]
BACKENDS = ("reference", "rust")
DEFAULT_BACKEND: Backend = "reference"
MIN_VOCAB_SIZE = 243


def _resolve_backend(backend: str | None) -> str:
    if backend is None:
        return DEFAULT_BACKEND
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    if backend == "rust":
        # Never fall back silently: the reference is an explicit choice.
        raise NotImplementedError(
            "backend='rust' is not available in this version of superword yet; "
            "pass backend='reference' (the pure-Python implementation)")
    return backend


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def train(inputs: Any, vocab_size: int = 32768, algorithm: str = "boundless",
          supermerges: int | None = None, script_aware: bool = True,
          scripts: Iterable[str] | None = None, greedy_split: bool = False,
          text_field: str = "text", backend: str | None = None,
          progress: Callable[[str, int, int], None] | None = None) -> "Tokenizer":
    """Train a tokenizer.

    ``inputs``: a path, a list of paths (``.txt``: a document per line; ``.jsonl``: a record
    per line with the text in ``text_field``; either may be ``.gz``), or an iterable of
    ``str`` documents.  ``algorithm``: ``"bpe"`` (no superwords), ``"boundless"``
    (BoundlessBPE, which decides how many superwords to make) or ``"superbpe"`` (SuperBPE
    with exactly ``supermerges`` of the ``vocab_size`` tokens being superwords).
    ``script_aware``: cut text into single-script runs and split ``scripts`` (default: Han,
    Hiragana, Katakana, Khmer, Lao, Myanmar, Thai) into one letter per pretoken.
    ``progress(stage, done, total)`` is called as training advances.

    >>> tok = train(["the cat sat on the mat"] * 5, vocab_size=256, algorithm="bpe")
    >>> tok.decode(tok.encode("the cat"))
    'the cat'
    """
    vocab_size = _check_int("vocab_size", vocab_size)
    if vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(f"vocab_size must be at least {MIN_VOCAB_SIZE} (the byte tokens), "
                         f"got {vocab_size}")
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
    if scripts is not None:
        if not script_aware:
            raise ValueError("scripts only applies with script_aware=True")
        if isinstance(scripts, str):
            raise TypeError("scripts must be a list of script names, e.g. ['Han', 'Thai']")
        scripts = list(scripts)
    backend = _resolve_backend(backend)

    stats: dict[str, float] = {}
    documents = _inputs.iter_documents(inputs, text_field)
    model = _ref_train.train(
        documents, vocab_size, algorithm, supermerges,
        script_pattern=_pretok.SCRIPT_SPECIFIC_GPT4O if script_aware else None,
        scripts=(scripts if scripts is not None else _pretok.DEFAULT_SCRIPTS) if script_aware else None,
        greedy_split=greedy_split, progress=progress, stats=stats)
    tok = Tokenizer(model, backend=backend)  # greedy split at inference iff trained with it
    tok.training_stats = stats
    return tok


AllowedSpecial = Literal["all", "none", "none_raise"] | AbstractSet[str]


class Tokenizer:
    """A trained BPE, BoundlessBPE or SuperBPE tokenizer.

    Made by :func:`train` or :meth:`Tokenizer.load`; saved by :meth:`save` in the
    "BoundlessBPE v2" format of the paper's implementation.
    """

    def __init__(self, model: _model.Model, backend: str | None = None,
                 greedy_split: bool | None = None):
        self.backend = _resolve_backend(backend)
        self._model = model
        if greedy_split is None:  # default: split runs like training did, if it did
            greedy_split = model.ngrams is not None
        self._encoder = _ref_encode.Encoder(model, greedy_split=greedy_split)
        #: seconds per training stage, when made by :func:`train`
        self.training_stats: dict[str, float] = {}

    # -- files -----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str], backend: str | None = None,
             greedy_split: bool | None = None) -> "Tokenizer":
        """Load a "BoundlessBPE v2" model file (ours or the paper implementation's).

        ``greedy_split``: cut runs of pretokens into the model's frequent n-grams before
        supermerges (SPEC 3.1).  The default does so exactly when the model was trained with
        ``greedy_split=True`` (it then stores its n-gram table)."""
        return cls(_model.read_model(path), backend=backend, greedy_split=greedy_split)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model file atomically (a temporary file, then a rename)."""
        _model.write_model(self._model, path)

    # -- facts -----------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        """``"word"`` (plain BPE), ``"boundless"`` or ``"superbpe"``."""
        return self._model.kind

    @property
    def vocab_size(self) -> int:
        """Number of ids: regular and superword tokens plus special tokens."""
        return len(self._model.vocab) + len(self._model.special_tokens)

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._model.special_tokens)

    @property
    def num_supermerges(self) -> int:
        return len(self._model.supermerges)

    def token_bytes(self, token_id: int) -> bytes:
        return self._encoder.decode_bytes([token_id])

    def is_superword(self, token_id: int) -> bool:
        _check_id(token_id, len(self._model.vocab))
        return self._model.is_super[token_id]

    def __iter__(self) -> Iterator[tuple[int, bytes, bool]]:
        """(id, bytes, is_superword) for every regular and superword token."""
        return iter(zip(range(len(self._model.vocab)), self._model.vocab, self._model.is_super))

    def __repr__(self) -> str:
        return (f"<superword.Tokenizer {self.kind}: {self.vocab_size} ids, "
                f"{self.num_supermerges} supermerges, backend={self.backend!r}>")

    # -- special tokens ------------------------------------------------------------------------

    def register_special_tokens(self, tokens: Iterable[str]) -> dict[str, int]:
        """Give each new special token the next free id; return the full mapping."""
        if isinstance(tokens, str):
            raise TypeError("register_special_tokens takes a list of strings, not one string")
        tokens = list(tokens)
        special = self._model.special_tokens
        for i, t in enumerate(tokens):
            if not isinstance(t, str):
                raise TypeError(f"special token {i} is {type(t).__name__}, not str")
            if not t:
                raise ValueError("a special token cannot be empty")
            if "\n" in t or "\r" in t:
                raise ValueError(f"special token {t!r} contains a line break")
            if t in special or tokens.index(t) != i:
                raise ValueError(f"special token {t!r} is already registered")
        for t in tokens:
            special[t] = self.vocab_size
        self._encoder.special_tokens = dict(special)
        return dict(special)

    # -- encoding --------------------------------------------------------------------------------

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text``, treating special-token strings as ordinary text."""
        return self._encoder.encode_ordinary(_check_text(text))

    def encode(self, text: str, allowed_special: AllowedSpecial = "none_raise") -> list[int]:
        """Encode ``text``.  ``allowed_special``: ``"all"``, ``"none"`` (specials are ordinary
        text), ``"none_raise"`` (raise if one occurs; the default) or a set of specials."""
        text = _check_text(text)
        special = self._model.special_tokens
        if isinstance(allowed_special, str):
            if allowed_special == "all":
                allowed: AbstractSet[str] = special.keys()
            elif allowed_special == "none":
                allowed = frozenset()
            elif allowed_special == "none_raise":
                for s in sorted(special, key=len, reverse=True):
                    if s in text:
                        raise ValueError(
                            f"text contains the special token {s!r} at index {text.index(s)}; "
                            f"pass allowed_special='all' (or a set) to encode it as a special "
                            f"token, or 'none' to encode it as text")
                allowed = frozenset()
            else:
                raise ValueError(f"allowed_special must be 'all', 'none', 'none_raise' or a set "
                                 f"of special tokens, got {allowed_special!r}")
        elif isinstance(allowed_special, AbstractSet):
            unknown = [s for s in allowed_special if s not in special]
            if unknown:
                raise ValueError(f"allowed_special names tokens that are not registered: {unknown}")
            allowed = allowed_special
        else:
            raise TypeError(f"allowed_special must be 'all', 'none', 'none_raise' or a set, "
                            f"not {type(allowed_special).__name__}")
        return self._encoder.encode(text, allowed)

    def encode_to_tokens(self, text: str) -> list[bytes]:
        """The token bytes of ``text`` (no special tokens), to show how it was split."""
        return self._encoder.encode_tokens(_check_text(text))

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """Concatenated token bytes, lossless."""
        return self._encoder.decode_bytes(ids)

    def decode(self, ids: Iterable[int]) -> str:
        """Decoded text; invalid UTF-8 (from a partial sequence of ids) becomes U+FFFD."""
        return self._encoder.decode(ids)


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"text contains a lone surrogate U+{ord(text[exc.start]):04X} at index "
                         f"{exc.start}; it cannot be encoded as UTF-8") from None
    return text


def _check_id(token_id: object, size: int) -> int:
    if isinstance(token_id, bool) or not isinstance(token_id, int):
        raise TypeError(f"token id must be an int, not {type(token_id).__name__}")
    if not 0 <= token_id < size:
        raise ValueError(f"token id {token_id} is out of range 0..{size - 1}")
    return token_id
