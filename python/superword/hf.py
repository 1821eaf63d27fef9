"""superword models inside ``transformers``, with exactly superword's ids.

:class:`SuperwordTokenizer` is a ``transformers`` ``PreTrainedTokenizer`` backed by
:class:`superword.Tokenizer` (the Rust encoder), so that padding, truncation, tensors,
``batch_decode``, ``save_pretrained`` / ``from_pretrained`` and special tokens work as with any
``transformers`` tokenizer, while the ids are those of ``Tokenizer.encode(text,
allowed_special="all")``: supermerges included, which stock ``tokenizer.json`` BPE can only
approximate (see ``superword._export``).  Needs the ``hf`` extra (``pip install
superword[hf]``)::

    from superword.hf import SuperwordTokenizer
    tok = SuperwordTokenizer("tok.model", eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    batch = tok(["It is one of the best.", "Hi"], padding=True, truncation=True, max_length=16,
                return_tensors="np")
    tok.save_pretrained("my-tokenizer"); tok = SuperwordTokenizer.from_pretrained("my-tokenizer")

Special tokens named as ``bos_token``, ``eos_token``, ``pad_token`` or ``unk_token`` are
registered in the model when it lacks them (the next free ids).  ``add_bos_token`` /
``add_eos_token`` put them around every sequence (off by default, as for GPT-2).
"""
from __future__ import annotations

import os
from typing import Any

try:
    from transformers import PreTrainedTokenizer
    from transformers.tokenization_utils_base import PaddingStrategy, TruncationStrategy
except ImportError as exc:  # say which extra provides it
    raise ImportError(f"superword.hf needs transformers 5 or later: pip install 'superword[hf]' ({exc})") from exc

from ._api import Tokenizer
from .reference.tokens import CHAR_TO_BYTE, render

MODEL_FILE = "superword.model"
_ROLES = ("bos_token", "eos_token", "pad_token", "unk_token")


class SuperwordTokenizer(PreTrainedTokenizer):
    """A ``transformers`` tokenizer over a superword model file (see the module notes)."""

    vocab_files_names = {"model_file": MODEL_FILE}
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, model_file: str | os.PathLike[str], add_bos_token: bool = False,
                 add_eos_token: bool = False, **kwargs: Any):
        self.sw = Tokenizer.load(model_file)
        named = [str(kwargs[r]) for r in _ROLES if kwargs.get(r) is not None]
        missing = [t for t in dict.fromkeys(named) if t not in self.sw.special_tokens]
        if missing:
            self.sw.register_special_tokens(missing)
        self._tokens = {i: render(raw) for i, raw, _ in self.sw}
        self._ids = {t: i for i, t in self._tokens.items()}
        self.add_bos_token, self.add_eos_token = add_bos_token, add_eos_token
        from transformers import AddedToken
        kwargs.pop("added_tokens_decoder", None)  # ours come from the model file
        self._added_tokens_decoder = {i: AddedToken(s, special=True, normalized=False)
                                      for s, i in self.sw.special_tokens.items()}
        kwargs.setdefault("clean_up_tokenization_spaces", False)
        super().__init__(add_bos_token=add_bos_token, add_eos_token=add_eos_token, **kwargs)

    # -- vocabulary ------------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return len(self._tokens)

    def get_vocab(self) -> dict[str, int]:
        return {**self._ids, **self.sw.special_tokens}

    def _convert_token_to_id(self, token: str) -> int:
        i = self._ids.get(token)
        if i is None:
            raise KeyError(f"{token!r} is not a token of this superword model")
        return i

    def _convert_id_to_token(self, index: int) -> str:
        token = self._tokens.get(index)
        if token is None:  # named as Tokenizer.decode names it, not as a bare KeyError
            raise ValueError(f"token id {index!r} is out of range (no token of this superword model "
                             f"has this id)")
        return token

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        return [self._tokens[i] for i in self.sw.encode_ordinary(text)]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        special = self.sw.special_tokens
        raw = b"".join(t.encode("utf-8") if t in special else bytes(CHAR_TO_BYTE[c] for c in t)
                       for t in tokens)
        return raw.decode("utf-8", errors="replace")

    # -- special tokens around a sequence ----------------------------------------------------

    def build_inputs_with_special_tokens(self, ids: list[int], pair: list[int] | None = None) -> list[int]:
        bos = [self.bos_token_id] if self.add_bos_token and self.bos_token_id is not None else []
        eos = [self.eos_token_id] if self.add_eos_token and self.eos_token_id is not None else []
        out = bos + ids + eos
        return out if pair is None else out + bos + pair + eos

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return len(self.build_inputs_with_special_tokens([], [] if pair else None))

    def get_special_tokens_mask(self, ids: list[int], pair: list[int] | None = None,
                                already_has_special_tokens: bool = False) -> list[int]:
        if already_has_special_tokens:
            special = set(self.sw.special_tokens.values())
            return [int(i in special) for i in ids]
        bos = [1] if self.add_bos_token and self.bos_token_id is not None else []
        eos = [1] if self.add_eos_token and self.eos_token_id is not None else []
        mask = bos + [0] * len(ids) + eos
        return mask if pair is None else mask + bos + [0] * len(pair) + eos

    def create_token_type_ids_from_sequences(self, ids: list[int], pair: list[int] | None = None) -> list[int]:
        return [0] * len(self.build_inputs_with_special_tokens(ids, pair))

    # -- encoding: our ids, then transformers' truncation and padding ----------------------------

    # transformers' PythonBackend._encode_plus and PreTrainedTokenizerBase._encode_plus order
    # their parameters differently; this follows PythonBackend (the parent) plus the two extras
    def _encode_plus(  # type: ignore[override]
        self, text: Any, text_pair: Any = None, add_special_tokens: bool = True,
        padding_strategy: PaddingStrategy = PaddingStrategy.DO_NOT_PAD,
        truncation_strategy: TruncationStrategy = TruncationStrategy.DO_NOT_TRUNCATE,
        max_length: int | None = None, stride: int = 0, is_split_into_words: bool = False,
        pad_to_multiple_of: int | None = None, padding_side: str | None = None,
        return_tensors: Any = None, return_token_type_ids: bool | None = None,
        return_attention_mask: bool | None = None, return_overflowing_tokens: bool = False,
        return_special_tokens_mask: bool = False, return_length: bool = False, verbose: bool = True,
        return_offsets_mapping: bool = False, split_special_tokens: bool = False,
        **more: Any,
    ) -> Any:
        kwargs = dict(add_special_tokens=add_special_tokens, padding_strategy=padding_strategy,
                      truncation_strategy=truncation_strategy, max_length=max_length, stride=stride,
                      is_split_into_words=is_split_into_words, pad_to_multiple_of=pad_to_multiple_of,
                      padding_side=padding_side, return_tensors=return_tensors,
                      return_token_type_ids=return_token_type_ids,
                      return_attention_mask=return_attention_mask,
                      return_overflowing_tokens=return_overflowing_tokens,
                      return_special_tokens_mask=return_special_tokens_mask, return_length=return_length,
                      verbose=verbose, split_special_tokens=split_special_tokens, **more)
        want_offsets = return_offsets_mapping
        if kwargs.get("is_split_into_words"):
            if want_offsets:
                raise NotImplementedError("return_offsets_mapping with is_split_into_words")
            return super()._encode_plus(text, text_pair, **kwargs)
        batched = isinstance(text, (list, tuple)) and bool(text) and isinstance(text[0], str)
        texts = list(text) if batched else [text]
        pairs = list(text_pair) if batched and text_pair is not None else [text_pair]
        if want_offsets and text_pair is not None:
            raise NotImplementedError("return_offsets_mapping for pairs of sequences")
        if not all(isinstance(t, str) for t in texts):
            if want_offsets:
                raise NotImplementedError("return_offsets_mapping needs text input")
            return super()._encode_plus(text, text_pair, **kwargs)
        ids = self.sw.encode_batch(texts, allowed_special="all")
        pair_ids = (self.sw.encode_batch(pairs, allowed_special="all")
                    if text_pair is not None else None)
        # transformers reads a list of ints as ids; an empty text stays "" (it has no ids)
        first: Any = [seq if seq else "" for seq in ids]
        second: Any = [seq if seq else "" for seq in pair_ids] if pair_ids is not None else None
        if want_offsets:
            kwargs["return_attention_mask"] = True
        out = super()._encode_plus(first if batched else first[0],
                                   (second if batched else second[0]) if second is not None else None,
                                   **kwargs)
        if want_offsets:
            self._add_offsets(out, texts, ids, batched, kwargs.get("add_special_tokens", True))
        return out

    def _add_offsets(self, out: Any, texts: list[str], ids: list[list[int]], batched: bool,
                     with_specials: bool) -> None:
        """(start, end) character offsets per position; (0, 0) for special and padding
        positions.  A token that ends or starts inside a character covers that character."""
        tensor = not isinstance(out["input_ids"], list)
        rows_ids, rows_mask = out["input_ids"], out["attention_mask"]
        if not batched and not tensor:  # one text, lists: make it a batch of one
            rows_ids, rows_mask = [rows_ids], [rows_mask]
        result = []
        for text, seq, row, mask in zip(texts, ids, rows_ids, rows_mask):
            spans = self._spans(text, seq)
            live = [k for k, m in enumerate(mask) if m]
            if with_specials and self.add_bos_token and self.bos_token_id is not None:
                live = live[1:]
            if with_specials and self.add_eos_token and self.eos_token_id is not None:
                live = live[:-1]
            start = 0 if self.truncation_side == "right" else len(spans) - len(live)
            offsets = [(0, 0)] * len(row)
            for k, position in enumerate(live):
                offsets[position] = spans[start + k]
            result.append(offsets)
        if tensor:  # a batch axis is there even for one text
            import numpy as np
            out["offset_mapping"] = np.array(result, dtype=np.int64).reshape(len(result), -1, 2)
        else:
            out["offset_mapping"] = result if batched else result[0]

    def _spans(self, text: str, ids: list[int]) -> list[tuple[int, int]]:
        char_of_byte: list[int] = []
        for n, ch in enumerate(text):
            char_of_byte.extend([n] * len(ch.encode("utf-8")))
        special = {i: s for s, i in self.sw.special_tokens.items()}
        spans, at = [], 0
        for i in ids:
            size = len(special[i].encode("utf-8")) if i in special else len(self.sw.token_bytes(i))
            spans.append((char_of_byte[at], char_of_byte[at + size - 1] + 1))
            at += size
        return spans

    # -- decoding and files ----------------------------------------------------------------------

    def _decode(self, token_ids: int | list[int], skip_special_tokens: bool = False,
                clean_up_tokenization_spaces: bool | None = None, **kwargs: Any) -> str:
        ids = [int(token_ids)] if isinstance(token_ids, int) else [int(i) for i in token_ids]
        if skip_special_tokens:
            special = set(self.sw.special_tokens.values())
            ids = [i for i in ids if i not in special]
        return self.sw.decode(ids)

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str]:
        name = (filename_prefix + "-" if filename_prefix else "") + MODEL_FILE
        path = os.path.join(save_directory, name)
        self.sw.save(path)
        return (path,)
