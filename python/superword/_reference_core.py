"""The reference backend behind the same interface as the Rust core's ``_core.Tokenizer``, so
that :class:`superword.Tokenizer` has one code path for both backends."""
from __future__ import annotations

from typing import Iterable

from .reference import encode as _encode
from .reference import model as _model


class ReferenceCore:
    def __init__(self, model: _model.Model, greedy_split: bool | None = None,
                 training_stats: dict[str, float] | None = None):
        self.model = model
        if greedy_split is None:  # split runs like training did, if it did
            greedy_split = model.ngrams is not None
        self.encoder = _encode.Encoder(model, greedy_split=greedy_split)
        self.training_stats = dict(training_stats or {})

    @staticmethod
    def load(path: str, greedy_split: bool | None = None) -> "ReferenceCore":
        return ReferenceCore(_model.read_model(path), greedy_split)

    def save(self, path: str) -> None:
        _model.write_model(self.model, path)

    def dumps(self) -> str:
        return _model.dumps(self.model)

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
        for t in tokens:
            self.model.special_tokens[t] = self.vocab_size
        self.encoder.special_tokens = dict(self.model.special_tokens)

    def encode_ordinary(self, text: str) -> list[int]:
        return self.encoder.encode_ordinary(text)

    def encode(self, text: str, allowed: Iterable[str]) -> list[int]:
        return self.encoder.encode(text, frozenset(allowed))

    def encode_to_tokens(self, text: str) -> list[bytes]:
        return self.encoder.encode_tokens(text)

    def decode_bytes(self, ids: list[int]) -> bytes:
        return self.encoder.decode_bytes(ids)

