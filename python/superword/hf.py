"""superword models inside ``transformers`` and ``datasets``, with exactly superword's ids.

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
``split_special_tokens=True`` encodes special-token strings as ordinary text.

**AutoTokenizer.**  A folder from ``save_pretrained``, or from ``superword export --to hf`` /
``Tokenizer.save_hf`` of a superword model, carries the model file (``superword.model``), a code
file (``tokenization_superword.py``, which imports the installed ``superword``) and an
``auto_map`` naming it, the way custom tokenizers are published on the Hugging Face Hub:

* ``AutoTokenizer.from_pretrained(folder, trust_remote_code=True)`` gives this class, with
  exactly superword's ids;
* after ``import superword.hf``, ``AutoTokenizer.from_pretrained(folder)`` gives it too: the
  import registers the class with ``AutoTokenizer``, which then prefers the installed code to
  the folder's and needs no flag;
* otherwise ``AutoTokenizer`` refuses the folder with its own ``ValueError`` asking for
  ``trust_remote_code=True`` (nothing of superword runs before that choice).  It never falls
  back to the folder's stock ``tokenizer.json``, whose ids are approximate for superword
  models; that file is there for code that asks for it by name (``tokenizers.Tokenizer.from_file``,
  ``PreTrainedTokenizerFast(tokenizer_file=...)``).

**Worker processes.**  A ``SuperwordTokenizer`` pickles (its ``superword.Tokenizer`` with it; the
vocabulary tables are rebuilt on loading), so it works in ``multiprocessing`` pools of any start
method and in ``datasets.Dataset.map(num_proc=...)``, and ``datasets`` fingerprints it the same way
every time, so a repeated ``map`` is served from its cache.

**Speed.**  The batch call (``tok(texts, ...)``) of plain texts builds the ``BatchEncoding``
itself from one ``encode_batch`` call: truncation, special tokens, padding, masks, lengths,
offsets and tensors, equal to what ``transformers``' generic per-sequence path returns (the
tests compare the two over a grid of options).  Pairs of texts, pre-split words,
``return_overflowing_tokens`` and unknown keyword arguments take the generic path.
"""
from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from typing import Any, Literal

try:
    from transformers import AutoTokenizer, PretrainedConfig, PreTrainedTokenizer
    from transformers.tokenization_python import Trie
    from transformers.tokenization_utils_base import BatchEncoding, PaddingStrategy, TruncationStrategy
except ImportError as exc:  # say which extra provides it
    raise ImportError(f"superword.hf needs transformers 5 or later: pip install 'superword[hf]' ({exc})") from exc

from . import _hf_folder
from ._api import Tokenizer
from ._hf_folder import CODE_FILE, MODEL_FILE
from ._version import __version__
from .reference.tokens import CHAR_TO_BYTE, render

_ROLES = ("bos_token", "eos_token", "pad_token", "unk_token")
#: Attributes rebuilt from the model on unpickling (large, and derived from it).
_DERIVED = ("_tokens", "_ids", "_byte_lengths", "tokens_trie")
#: Version of the pickled state; a pickle of another version is refused by name.
PICKLE_FORMAT = 1
_PICKLE_KEY = "superword_pickle_format"


class SuperwordTokenizer(PreTrainedTokenizer):
    """A ``transformers`` tokenizer over a superword model file (see the module notes)."""

    vocab_files_names = {"model_file": MODEL_FILE}
    model_input_names = ["input_ids", "attention_mask"]
    # written by save_pretrained as tokenizer_config.json's auto_map
    _auto_map = _hf_folder.AUTO_MAP
    #: ``False`` sends batch calls through transformers' generic per-sequence path (the tests
    #: compare the two; the benchmark times both)
    fast_batch = True

    def __init__(self, model_file: str | os.PathLike[str] | None = None, add_bos_token: bool = False,
                 add_eos_token: bool = False, **kwargs: Any):
        if model_file is None:
            raise TypeError(f"SuperwordTokenizer needs model_file, the path of a superword model "
                            f"(a folder's {MODEL_FILE})")
        _hf_folder.check_format(kwargs.pop(_hf_folder.FORMAT_KEY, None), "SuperwordTokenizer")
        kwargs.pop("auto_map", None)  # ours is the class attribute
        self.sw = Tokenizer.load(model_file)
        named = [str(kwargs[r]) for r in _ROLES if kwargs.get(r) is not None]
        missing = [t for t in dict.fromkeys(named) if t not in self.sw.special_tokens]
        if missing:
            self.sw.register_special_tokens(missing)
        self._build_tables()
        self.add_bos_token, self.add_eos_token = add_bos_token, add_eos_token
        from transformers import AddedToken
        kwargs.pop("added_tokens_decoder", None)  # ours come from the model file
        self._added_tokens_decoder = {i: AddedToken(s, special=True, normalized=False)
                                      for s, i in self.sw.special_tokens.items()}
        kwargs.setdefault("clean_up_tokenization_spaces", False)
        super().__init__(add_bos_token=add_bos_token, add_eos_token=add_eos_token, **kwargs)
        self.init_kwargs[_hf_folder.FORMAT_KEY] = _hf_folder.FORMAT  # saved in tokenizer_config.json

    def _build_tables(self) -> None:
        self._tokens = {i: render(raw) for i, raw, _ in self.sw}
        self._ids = {t: i for i, t in self._tokens.items()}
        self._byte_lengths: Any = None  # made by the first call with offsets

    # -- pickling: the model and transformers' state; the derived tables are rebuilt ---------------

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in _DERIVED}
        state[_PICKLE_KEY] = PICKLE_FORMAT
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        found = state.get(_PICKLE_KEY)
        if found != PICKLE_FORMAT:
            raise ValueError(f"this pickle of a SuperwordTokenizer has state format {found!r}; superword "
                             f"{__version__} reads format {PICKLE_FORMAT} (pickles do not travel between "
                             f"superword versions: save_pretrained a folder instead)")
        state = dict(state)
        del state[_PICKLE_KEY]
        self.__dict__.update(state)
        self._build_tables()
        self.tokens_trie = Trie()
        self._update_trie()

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

    def _around(self) -> tuple[list[int], list[int]]:
        """The ids put before and after every sequence (``add_bos_token`` / ``add_eos_token``)."""
        bos = [self.bos_token_id] if self.add_bos_token and self.bos_token_id is not None else []
        eos = [self.eos_token_id] if self.add_eos_token and self.eos_token_id is not None else []
        return bos, eos

    def build_inputs_with_special_tokens(self, ids: list[int], pair: list[int] | None = None) -> list[int]:
        bos, eos = self._around()
        out = bos + ids + eos
        return out if pair is None else out + bos + pair + eos

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return len(self.build_inputs_with_special_tokens([], [] if pair else None))

    def get_special_tokens_mask(self, ids: list[int], pair: list[int] | None = None,
                                already_has_special_tokens: bool = False) -> list[int]:
        if already_has_special_tokens:
            special = set(self.sw.special_tokens.values())
            return [int(i in special) for i in ids]
        bos, eos = ([1] * len(side) for side in self._around())
        mask = bos + [0] * len(ids) + eos
        return mask if pair is None else mask + bos + [0] * len(pair) + eos

    def create_token_type_ids_from_sequences(self, ids: list[int], pair: list[int] | None = None) -> list[int]:
        return [0] * len(self.build_inputs_with_special_tokens(ids, pair))

    # -- encoding --------------------------------------------------------------------------------

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
        texts = [text] if isinstance(text, str) else text
        plain = (isinstance(texts, (list, tuple)) and bool(texts) and text_pair is None
                 and not is_split_into_words and not return_overflowing_tokens and not more
                 and all(map(isinstance, texts, itertools.repeat(str))))
        if plain and self.fast_batch:
            return self._encode_texts(
                list(texts), isinstance(text, str), add_special_tokens, padding_strategy,
                truncation_strategy, max_length, pad_to_multiple_of, padding_side, return_tensors,
                return_token_type_ids, return_attention_mask, return_special_tokens_mask, return_length,
                verbose, return_offsets_mapping, split_special_tokens)
        kwargs = dict(add_special_tokens=add_special_tokens, padding_strategy=padding_strategy,
                      truncation_strategy=truncation_strategy, max_length=max_length, stride=stride,
                      is_split_into_words=is_split_into_words, pad_to_multiple_of=pad_to_multiple_of,
                      padding_side=padding_side, return_tensors=return_tensors,
                      return_token_type_ids=return_token_type_ids,
                      return_attention_mask=return_attention_mask,
                      return_overflowing_tokens=return_overflowing_tokens,
                      return_special_tokens_mask=return_special_tokens_mask, return_length=return_length,
                      verbose=verbose, split_special_tokens=split_special_tokens, **more)
        return self._encode_generic(text, text_pair, return_offsets_mapping, kwargs)

    def _encode_generic(self, text: Any, text_pair: Any, want_offsets: bool, kwargs: dict[str, Any]) -> Any:
        """Our ids, then transformers' per-sequence truncation, padding and tensors."""
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
        allowed: Literal["none", "all"] = "none" if kwargs.get("split_special_tokens") else "all"
        ids = self.sw.encode_batch(texts, allowed_special=allowed)
        pair_ids = (self.sw.encode_batch(pairs, allowed_special=allowed)
                    if text_pair is not None else None)
        # transformers reads a list of ints as ids; an empty text stays "" (it has no ids)
        first: Any = [seq if seq else "" for seq in ids]
        second: Any = [seq if seq else "" for seq in pair_ids] if pair_ids is not None else None
        asked_mask = kwargs.get("return_attention_mask")
        if want_offsets:  # (the mask says which positions hold tokens)
            kwargs["return_attention_mask"] = True
        out = super()._encode_plus(first if batched else first[0],
                                   (second if batched else second[0]) if second is not None else None,
                                   **kwargs)
        if want_offsets:
            self._add_offsets(out, texts, ids, batched, kwargs.get("add_special_tokens", True),
                              kwargs.get("return_tensors"))
            if asked_mask is False or (asked_mask is None and "attention_mask" not in self.model_input_names):
                del out["attention_mask"]
        return out

    def _encode_texts(self, texts: list[str], single: bool, add_special_tokens: bool,
                      padding_strategy: PaddingStrategy, truncation_strategy: TruncationStrategy,
                      max_length: int | None, pad_to_multiple_of: int | None, padding_side: str | None,
                      return_tensors: Any, return_token_type_ids: bool | None,
                      return_attention_mask: bool | None, return_special_tokens_mask: bool,
                      return_length: bool, verbose: bool, return_offsets_mapping: bool,
                      split_special_tokens: bool) -> BatchEncoding:
        """The ``BatchEncoding`` of plain texts from one ``encode_batch`` call, built as
        ``prepare_for_model`` and ``pad`` build it text by text (the same keys in the same order,
        the same values), with a few list operations over the whole batch.

        As in transformers, one text (not a list) gets its padded length as ``length`` (a batch:
        each text's unpadded length), and one empty text is never padded."""
        bos, eos = self._around() if add_special_tokens else ([], [])
        if (not single and not return_offsets_mapping and not bos and not eos
                and str(getattr(return_tensors, "value", return_tensors)) == "np"):
            arrays = self._numpy_batch(texts, split_special_tokens, padding_strategy, truncation_strategy,
                                       max_length, pad_to_multiple_of, padding_side, return_token_type_ids,
                                       return_attention_mask, return_special_tokens_mask, return_length,
                                       verbose)
            if arrays is not None:
                return arrays
        full = self.sw.encode_batch(texts, allowed_special="none" if split_special_tokens else "all")
        # 1. truncation: for one sequence, "longest_first" and "only_first" cut alike, and
        #    "only_second" has nothing to cut
        ids, kept = full, None  # kept: per text, the slice of its tokens that stays
        if (truncation_strategy in (TruncationStrategy.LONGEST_FIRST, TruncationStrategy.ONLY_FIRST)
                and max_length):
            room = max(max_length - len(bos) - len(eos), 0)
            if any(len(s) > room for s in full):
                left = self.truncation_side == "left"
                kept = [(slice(len(s) - room, None) if left else slice(0, room)) if len(s) > room
                        else slice(None) for s in full]
                ids = [s[k] for s, k in zip(full, kept)]
        # 2. special tokens, and the keys prepare_for_model adds
        seqs = [bos + s + eos for s in ids] if bos or eos else ids
        lengths = [len(s) for s in seqs]
        self._eventual_warn_about_too_long_sequence(seqs[lengths.index(max(lengths))], max_length, verbose)
        if return_token_type_ids is None:
            return_token_type_ids = "token_type_ids" in self.model_input_names
        if return_attention_mask is None:
            return_attention_mask = "attention_mask" in self.model_input_names
        data: dict[str, Any] = {"input_ids": seqs}
        if return_token_type_ids:
            data["token_type_ids"] = [[0] * n for n in lengths]
        if return_special_tokens_mask:
            head, tail = [1] * len(bos), [1] * len(eos)
            data["special_tokens_mask"] = [head + [0] * len(s) + tail for s in ids]
        if return_length and not single:
            data["length"] = lengths
        if return_attention_mask:
            data["attention_mask"] = [[1] * n for n in lengths]
        offsets = self._offsets(texts, full, kept, bos, eos) if return_offsets_mapping else None
        # 3. padding
        target = None
        if padding_strategy == PaddingStrategy.LONGEST:
            target = max(lengths)
        elif padding_strategy == PaddingStrategy.MAX_LENGTH:
            target = max_length
        if target is not None and pad_to_multiple_of is not None and target % pad_to_multiple_of:
            target = (target // pad_to_multiple_of + 1) * pad_to_multiple_of
        if single and not lengths[0]:
            target = None  # transformers' pad returns a single empty sequence as it is
        if target is not None and any(n < target for n in lengths):
            side = padding_side if padding_side is not None else self.padding_side
            if side not in ("left", "right"):
                raise ValueError(f"Invalid padding strategy:{side}")  # transformers' words
            fills = {"input_ids": self.pad_token_id, "token_type_ids": self.pad_token_type_id,
                     "special_tokens_mask": 1, "attention_mask": 0}
            for key, fill in fills.items():
                if key in data:
                    data[key] = _pad_rows(data[key], lengths, target, fill, side)
            if offsets is not None:
                offsets = _pad_rows(offsets, lengths, target, (0, 0), side)
        # 4. the BatchEncoding (one text: no batch axis in lists; tensors get one, as in transformers)
        if single:
            if return_length:
                data["length"] = len(data["input_ids"][0])
            out = BatchEncoding({k: v if k == "length" else v[0] for k, v in data.items()},
                                tensor_type=return_tensors, prepend_batch_axis=True)
        else:
            out = BatchEncoding(data, tensor_type=return_tensors)
        if offsets is not None:
            out["offset_mapping"] = (_offsets_as(offsets, return_tensors) if return_tensors is not None
                                     else offsets[0] if single else offsets)
        return out

    def _numpy_batch(self, texts: list[str], split_special_tokens: bool, padding_strategy: PaddingStrategy,
                     truncation_strategy: TruncationStrategy, max_length: int | None,
                     pad_to_multiple_of: int | None, padding_side: str | None,
                     return_token_type_ids: bool | None, return_attention_mask: bool | None,
                     return_special_tokens_mask: bool, return_length: bool,
                     verbose: bool) -> BatchEncoding | None:
        """The numpy ``BatchEncoding`` of a batch, built from ``encode_batch``'s id buffer
        without a Python int per id; ``None`` when the list path must decide (a text to cut, a
        batch whose rows would not all have one length: transformers' own error then)."""
        import numpy as np
        flat = self.sw.encode_batch(texts, allowed_special="none" if split_special_tokens else "all",
                                    return_array=True)
        lengths = np.diff(flat.bounds).astype(np.int64)
        longest = int(lengths.max()) if len(lengths) else 0
        if (truncation_strategy in (TruncationStrategy.LONGEST_FIRST, TruncationStrategy.ONLY_FIRST)
                and max_length and longest > max_length):
            return None
        target = longest if padding_strategy == PaddingStrategy.LONGEST else (
            max_length if padding_strategy == PaddingStrategy.MAX_LENGTH else None)
        if target is not None and pad_to_multiple_of is not None and target % pad_to_multiple_of:
            target = (target // pad_to_multiple_of + 1) * pad_to_multiple_of
        if target is None:
            target = longest
        ragged = bool((lengths != target).any())
        if len(lengths) == 0 or ragged and (padding_strategy == PaddingStrategy.DO_NOT_PAD or target < longest
                                            or self.pad_token_id is None):
            return None
        side = padding_side if padding_side is not None else self.padding_side
        if side not in ("left", "right"):
            raise ValueError(f"Invalid padding strategy:{side}")  # transformers' words
        columns = np.arange(target)
        filled = (columns < lengths[:, None]) if side == "right" else (columns >= (target - lengths)[:, None])
        self._eventual_warn_about_too_long_sequence([0] * longest, max_length, verbose)
        ids = np.full((len(texts), target), self.pad_token_id or 0, dtype=np.int64)
        ids[filled] = flat.ids
        if return_token_type_ids is None:
            return_token_type_ids = "token_type_ids" in self.model_input_names
        if return_attention_mask is None:
            return_attention_mask = "attention_mask" in self.model_input_names
        data: dict[str, Any] = {"input_ids": ids}
        if return_token_type_ids:
            data["token_type_ids"] = np.full(ids.shape, self.pad_token_type_id, dtype=np.int64) * ~filled
        if return_special_tokens_mask:
            data["special_tokens_mask"] = (~filled).astype(np.int64)
        if return_length:
            data["length"] = lengths
        if return_attention_mask:
            data["attention_mask"] = filled.astype(np.int64)
        return BatchEncoding(data, tensor_type="np")

    # -- offsets ----------------------------------------------------------------------------

    def _offsets(self, texts: list[str], full: list[list[int]], kept: list[slice] | None,
                 bos: list[int], eos: list[int]) -> list[list[tuple[int, int]]]:
        """Per text, (start, end) character offsets of its kept tokens between (0, 0) for bos
        and eos.  All texts at once with numpy: token byte spans from the tokens' byte
        lengths, then each byte's character index.  A token that ends or starts inside a
        character covers that character, as in :meth:`_spans`."""
        import numpy as np
        if self._byte_lengths is None:
            table = np.zeros(max([*self._tokens, *self.sw.special_tokens.values()]) + 1, dtype=np.int64)
            for i, token in self._tokens.items():
                table[i] = len(token)  # one character per byte (SPEC 8)
            for s, i in self.sw.special_tokens.items():
                table[i] = len(s.encode("utf-8"))
            self._byte_lengths = table
        counts = [len(s) for s in full]
        total = sum(counts)
        spans: list[tuple[int, int]] = []
        if total:
            sizes = self._byte_lengths[np.fromiter(itertools.chain.from_iterable(full), np.int64, total)]
            ends = np.cumsum(sizes)  # in the UTF-8 of all texts back to back
            joined = "".join(texts)
            base = np.repeat(np.cumsum([0, *map(len, texts[:-1])]), counts)  # each text's first char
            if joined.isascii():  # a byte is a character
                starts, stops = ends - sizes - base, ends - base
            else:
                raw = np.frombuffer(joined.encode("utf-8"), dtype=np.uint8)
                char_of_byte = np.cumsum((raw & 0xC0) != 0x80) - 1
                starts = char_of_byte[ends - sizes] - base
                stops = char_of_byte[ends - 1] + 1 - base
            spans = list(zip(starts.tolist(), stops.tolist()))
        head, tail = [(0, 0)] * len(bos), [(0, 0)] * len(eos)
        rows, at = [], 0
        for n, k in zip(counts, kept or itertools.repeat(slice(None))):
            rows.append(head + spans[at:at + n][k] + tail)
            at += n
        return rows

    def _add_offsets(self, out: Any, texts: list[str], ids: list[list[int]], batched: bool,
                     with_specials: bool, tensor_type: Any) -> None:
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
            out["offset_mapping"] = _offsets_as(result, tensor_type)
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

    def save_pretrained(self, save_directory: str | os.PathLike[str], legacy_format: bool | None = None,
                        filename_prefix: str | None = None, push_to_hub: bool = False,
                        **kwargs: Any) -> tuple[str, ...]:
        """transformers' files, the model file and the code file that ``auto_map`` names
        (``tokenization_superword.py``), written to a temporary folder inside
        ``save_directory`` and renamed into place: a reader never sees half a folder.
        Returns the paths written."""
        if push_to_hub:
            raise NotImplementedError("SuperwordTokenizer.save_pretrained does not push to the Hub: save the "
                                      "folder, then upload it (huggingface_hub.upload_folder)")
        directory = os.fspath(save_directory)
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise ValueError(f"{directory} exists and is not a directory")
        os.makedirs(directory, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".superword-", dir=directory)
        try:
            super().save_pretrained(staging, legacy_format=legacy_format, filename_prefix=filename_prefix,
                                    **kwargs)
            with open(os.path.join(staging, CODE_FILE), "w", encoding="utf-8", newline="\n") as f:
                f.write(_hf_folder.code_text())
            written = []
            for root, _, files in os.walk(staging):
                for name in sorted(files):
                    inner = os.path.relpath(os.path.join(root, name), staging)
                    target = os.path.join(directory, inner)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    os.replace(os.path.join(root, name), target)
                    written.append(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return tuple(written)

    @classmethod
    def register_for_auto_class(cls, auto_class: str = "AutoTokenizer") -> None:
        """Nothing to record.  transformers calls this on a class it loaded as a folder's code,
        so that ``save_pretrained`` copies the module file that defines the class; ours
        (``superword/hf.py``) cannot run alone, and :meth:`save_pretrained` writes the folder's
        code file itself."""

    @classmethod
    def _from_pretrained(cls, resolved_vocab_files: dict[str, Any], pretrained_model_name_or_path: Any,
                         *args: Any, **kwargs: Any) -> Any:
        # (checked before transformers builds the tokenizer: it turns any OSError raised there
        # into "Unable to load vocabulary from file", which names no file)
        config = resolved_vocab_files.get("tokenizer_config_file")
        if config is not None:
            _hf_folder.check_config_file(config)
        if resolved_vocab_files.get("model_file") is None:
            where = os.path.join(os.fspath(pretrained_model_name_or_path), MODEL_FILE)
            raise FileNotFoundError(f"{where} is missing: a superword tokenizer folder holds its model file "
                                    f"(save_pretrained and Tokenizer.save_hf write it)")
        return super()._from_pretrained(resolved_vocab_files, pretrained_model_name_or_path, *args, **kwargs)


class _SuperwordTokenizerConfig(PretrainedConfig):
    """Only a key of AutoTokenizer's registry: no model uses it."""

    model_type = "superword-tokenizer"


# AutoTokenizer finds the class by the name in a folder's tokenizer_config.json once it is
# registered, and prefers it to the folder's code file (no trust_remote_code needed)
AutoTokenizer.register(_SuperwordTokenizerConfig, tokenizer_class=SuperwordTokenizer, exist_ok=True)


def _pad_rows(rows: list[Any], lengths: list[int], target: int, fill: Any, side: str) -> list[Any]:
    """``rows`` (of ``lengths``) padded with ``fill`` to ``target`` on ``side``; longer rows stay.
    The rows are the batch call's own new lists: on the right they are padded in place."""
    if side == "right":
        for row, n in zip(rows, lengths):
            if n < target:
                row.extend(itertools.repeat(fill, target - n))
        return rows
    pad = [fill]
    return [pad * (target - n) + row if n < target else row for row, n in zip(rows, lengths)]


def _offsets_as(rows: list[list[tuple[int, int]]], tensor_type: Any) -> Any:
    """Offset rows as one (texts, positions, 2) tensor of ``tensor_type`` (a batch axis even
    for one text, and a last axis of 2 even when there are no positions)."""
    import numpy as np
    array = np.array(rows, dtype=np.int64).reshape(len(rows), -1, 2)
    return BatchEncoding({"offset_mapping": array}, tensor_type=tensor_type)["offset_mapping"]
