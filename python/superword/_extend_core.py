"""Extension models as the backends hold them (SPEC 10): the reference's tokenizer class,
the core's, and reading a model file into either.

This module sits below :mod:`superword._tokenizer` (which loads extension files through it);
training and the base's checks are :mod:`superword._extend`, above it.
"""
from __future__ import annotations

import base64
import itertools
import time
from collections.abc import Iterable
from typing import Any

from ._backend import Progress, _core_module
from ._reference_core import _kept_cutter, check_ids, no_id_left
from .reference import encode as _encode
from .reference import extend as _ref
from .reference.ranks import parse_ranks

HEADER = _ref.HEADER
#: what every version's header starts with (another version is named by the reader)
PREFIX = "superword extension "
KIND = "extension"


# -- the reference backend's tokenizer ------------------------------------------------------------

class ReferenceExtensionCore:
    """An extension model in pure Python (the twin of the core's ``ExtensionTokenizer``)."""

    kind = KIND
    greedy_split = False

    def __init__(self, ext: _ref.Extension, stats: dict[str, float] | None = None):
        self.ext = ext
        self.encoder = _ref.ExtensionEncoder(ext)
        self._stats = dict(stats or {})
        self._cutter: Any = None
        self._vocab = dict(self.encoder.bytes_of)
        self._super = {i for i, _, _ in ext.superwords}

    @staticmethod
    def loads(text: str, name: str) -> ReferenceExtensionCore:
        return ReferenceExtensionCore(_ref.loads(text, name))

    @staticmethod
    def train(counts: Any, ranks_text: str, pattern: str, special: list[tuple[str, int]], n: int,
              threads: int | None = None, progress: Progress | None = None) -> ReferenceExtensionCore:
        clock = time.perf_counter()
        ranks = parse_ranks(ranks_text, "the base")
        ext = _ref.train_extension(counts.counts, ranks, pattern, dict(special), n)
        if progress is not None:
            progress("phase2", len(ext.superwords), n)
        return ReferenceExtensionCore(ext, {"phase2": time.perf_counter() - clock})

    pattern = property(lambda self: self.ext.pattern)
    num_supermerges = property(lambda self: len(self.ext.supermerges))
    special_tokens = property(lambda self: dict(self.ext.special))
    training_stats = property(lambda self: dict(self._stats))

    @property
    def vocab_size(self) -> int:
        return max([*self._vocab, *self.ext.special.values()]) + 1

    @property
    def base_vocab_size(self) -> int:
        return self.ext.first_free_id() if not self.ext.superwords else self.ext.superwords[0][0]

    def base_ranks(self) -> str:
        return "".join(f"{base64.b64encode(t).decode('ascii')} {i}\n"
                       for t, i in sorted(self.ext.ranks.items(), key=lambda kv: kv[1]))

    def base_special_tokens(self) -> dict[str, int]:
        first = self.base_vocab_size
        return {s: i for s, i in self.ext.special.items() if i < first}

    def token_bytes(self, token_id: int) -> bytes:
        return self.decode_bytes([token_id])

    def is_superword(self, token_id: int) -> bool:
        self.decode_bytes([token_id])
        return token_id in self._super

    def id_of(self, token: bytes) -> int | None:
        return self.encoder.id_of.get(token)

    def vocab_items(self) -> list[tuple[int, bytes, bool]]:
        return [(i, self._vocab[i], i in self._super) for i in sorted(self._vocab)]

    def register_special_tokens(self, tokens: list[str]) -> None:
        special = dict(self.ext.special)
        top = self.vocab_size - 1
        for t, i in zip(tokens, itertools.count(top + 1)):
            if i >= 2**32:
                raise ValueError(no_id_left(t))
            special[t] = i
        self.ext.special = special
        self._cutter = None

    def encode_ordinary(self, text: str) -> list[int]:
        return self.encoder.encode_ordinary(text)

    def encode(self, text: str, allowed: Iterable[str]) -> list[int]:
        self._cutter = _kept_cutter(self._cutter, self.ext.special, allowed)
        cutter: _encode.SpecialCutter = self._cutter[1]
        return cutter.encode(text, self.encoder.encode_ordinary)

    def encode_batch(self, texts: list[str], allowed: Iterable[str], threads: int | None = None) -> list[list[int]]:
        allowed = list(allowed)
        return [self.encode(t, allowed) for t in texts]

    def encode_to_tokens(self, text: str) -> list[bytes]:
        return self.encoder.encode_tokens(text)

    def decode_bytes(self, ids: list[int]) -> bytes:
        inverse = {i: s.encode("utf-8") for s, i in self.ext.special.items()}
        out = []
        for position, i in enumerate(check_ids(ids)):
            token = self._vocab.get(i, inverse.get(i))
            if token is None:
                raise ValueError(f"token id {i} at position {position} is out of range "
                                 f"(no token has this id)")
            out.append(token)
        return b"".join(out)

    def dumps(self) -> str:
        return _ref.dumps(self.ext)

    def dumps_ngrams(self) -> str | None:
        return None

    def dumps_tiktoken(self) -> str:
        raise ValueError(_NO_RANKS)

    def save_tiktoken(self, path: str) -> None:
        raise ValueError(_NO_RANKS)


_NO_RANKS = ("an extension model has no .tiktoken form: tiktoken cannot apply supermerges across "
             "pretokens (save the model file, or use the base's own files)")


def _rust() -> Any:
    """The compiled core, for its ``ExtensionTokenizer`` (the reference's twin is above)."""
    return _core_module()


# -- files ------------------------------------------------------------------------------------------

def is_extension_file(path: str) -> bool:
    """Whether ``path`` starts with an extension header, of any version (reading one line)."""
    try:
        with open(path, "rb") as f:
            return f.readline(len(HEADER) + 2).startswith(PREFIX.encode())
    except OSError:
        return False


def loads(text: str, name: str, backend: str) -> Any:
    """A backend's extension model from the model file's text (``name`` names it in errors)."""
    if backend == "reference":
        return ReferenceExtensionCore.loads(text, name)
    return _rust().ExtensionTokenizer.loads(text, name)


def load(path: str, backend: str) -> Any:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a superword extension model (invalid UTF-8)") from None
    return loads(text, path, backend)
