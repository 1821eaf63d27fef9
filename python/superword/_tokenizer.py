"""The :class:`Tokenizer`: a trained model in front of its backend.

Python decides argument policy and error messages here; the backend (see
:mod:`superword._backend`) does the work.  Both backends give identical ids.
"""
from __future__ import annotations

import array
import contextlib
import gc
import itertools
import json
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from . import _extend_core, _files, _provenance, _reference_core
from ._backend import TokenizerCore, _check_int, _requested_threads, _resolve_backend, core_of
from ._specials import (
    AllowedSpecial,
    DisallowedSpecial,
    SpecialPolicy,
    _check_text,
    check_loaded_special_tokens,
    check_new_special_tokens,
    check_special_ids,
)
from ._version import __version__
from .reference import model as _ref_model
from .reference import pretokenize as _pretok
from .reference import tokens as _ref_tokens

#: tiktoken's ``cl100k_base`` pre-tokenization pattern and special tokens.
CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                  r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
CL100K_SPECIAL = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                  "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}


class IdArrays(NamedTuple):
    """``encode_batch(..., return_array=True)``: all ids back to back, and where each text's
    ids start and end (text ``i`` is ``ids[bounds[i]:bounds[i + 1]]``)."""
    ids: Any
    bounds: Any



class Tokenizer:
    """A trained BPE, BoundlessBPE or SuperBPE tokenizer.

    Made by :func:`train` or :meth:`Tokenizer.load`; saved by :meth:`save` in the
    "BoundlessBPE v2" format of the paper's implementation.
    """

    def __init__(self, impl: TokenizerCore, backend: str):
        self._impl = impl
        self.backend = backend
        #: which special tokens a call may meet, after its `allowed_special`
        self._specials = SpecialPolicy(lambda: impl.special_tokens)
        #: how the model was made (see :mod:`superword._provenance`): set by :func:`train`,
        #: read by :meth:`load` from the sidecar ``MODEL.json``; ``None`` when unknown
        self.provenance: dict[str, Any] | None = None

    # -- pickling ---------------------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        """A pickle holds the model's text (as :meth:`save` writes it; a ranks model's
        ``.tiktoken`` text, pattern and special tokens), its n-gram table, whether encoding
        uses the greedy split, the backend and the provenance: no path, no retraining.  The
        same tokenizer always pickles to the same bytes, so ``datasets`` can hash it."""
        # the provenance as JSON text (it is what the sidecar holds): its bytes then depend only on
        # its content, not on which of its objects happen to be shared
        provenance = None if self.provenance is None else json.dumps(self.provenance, ensure_ascii=False)
        state: dict[str, Any] = {"backend": self.backend, "provenance": provenance}
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
        return _restore(PICKLE_FORMAT, self.__reduce__()[1][1])

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
        try:
            if _extend_core.is_extension_file(path):  # superwords over a base tokenizer (SPEC 10)
                if greedy_split:
                    raise ValueError(f"{path}: an extension model has no n-gram table; load it "
                                     f"without greedy_split")
                tok = cls(_extend_core.load(path, backend), backend)
            else:
                tok = cls(core_of(backend).Tokenizer.load(path, greedy_split), backend)
        except ValueError as exc:
            # what the model's checks find after reading it (a pattern that does not compile,
            # a model whose deletions cannot be resolved) is still about this file
            if path in str(exc):
                raise
            raise ValueError(f"{path}: {exc}") from None
        check_loaded_special_tokens(tok._impl.special_tokens, path, path)
        if os.path.exists(_provenance.sidecar_path(path)):
            tok.provenance = _provenance.read(path, tok.model_text)
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
        check_special_ids(special)
        _pretok.Pretokenizer(pattern)  # a bad pattern is named here
        path = os.fspath(path)
        return cls(core_of(backend).Tokenizer.from_tiktoken(path, pattern, list(special.items())), backend)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model file atomically, and, when :attr:`provenance` is known, the sidecar
        ``path + ".json"`` describing how it was made.  A model trained with
        ``greedy_split=True`` also gets its n-gram table in ``<path>.ngrams``, which only
        ``Tokenizer.load(path, greedy_split=True)`` reads.

        A reader sees the old file or the new one, never a part, even after a ``kill -9``;
        saves from several threads to one path do not collide (the last one wins).  ``path``
        must be a regular file or absent: a folder, FIFO or device node is refused; a symbolic
        link is written through (the file it points to is replaced)."""
        impl = self._impl
        if isinstance(impl, (_reference_core.ReferenceCore, _reference_core.ReferenceRankCore)):
            impl.save(os.fspath(path))  # the reference's own writer: the model file and its n-gram sidecar
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
        from . import _export  # (the export formats load on first use: they cost `import superword` 8 ms)
        if self.kind == "extension":  # the base's ranks, the superwords, a coarse pattern
            return _export.save_extension_tiktoken(self, os.fspath(path))
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
        if self.kind == "tiktoken":  # an imported ranks model: its ids, merges and special tokens
            named = {"bos_token": bos_token, "eos_token": eos_token, "pad_token": pad_token, "unk_token": unk_token}
            if any(v is not None for v in named.values()) or model_max_length is not None:
                raise ValueError("a ranks model is written as tokenizer.json alone: bos_token, eos_token, "
                                 "pad_token, unk_token and model_max_length do not apply")
            texts = None if sample is None else _export.sample_texts(sample)
            _export.save_ranks_hf(self, directory, overwrite)
            return None if texts is None else _export.hf_agreement(self, os.fspath(directory), texts)
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

        >>> from superword import train
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
        check_new_special_tokens(self._impl.special_tokens, tokens)
        self._impl.register_special_tokens(tokens)
        self._specials.forget()
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

        >>> from superword import train
        >>> tok = train(["the cat sat on the mat"] * 5, vocab_size=250, algorithm="bpe")
        >>> _ = tok.register_special_tokens(["<|endoftext|>"])
        >>> tok.encode("cat<|endoftext|>", allowed_special={"<|endoftext|>"})[-1] == tok.eot_token
        True
        >>> len(tok.encode("<|endoftext|>", disallowed_special=()))  # as text
        13
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        # `allowed_in`'s common case inline (its call was a sixth of a short text's `encode`):
        # a kept policy, and a text without the first character of any token it refuses
        specials = self._specials
        try:
            allowed, checks = specials.kept[allowed_special, disallowed_special]
        except (KeyError, TypeError):
            allowed = specials.allowed_in(text, allowed_special, disallowed_special)
        else:
            for c in checks.first if checks else ():
                if c in text:
                    allowed = specials.allowed_in(text, allowed_special, disallowed_special)
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
        allowed = self._specials.allowed(texts, allowed_special, disallowed_special)
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
        batch = self._impl.encode_batch(texts, allowed, threads)
        ids = array.array("I", (i for seq in batch for i in seq))
        offsets = array.array("Q", [0])
        for seq in batch:
            offsets.append(offsets[-1] + len(seq))
        if sys.byteorder != "little":
            ids.byteswap()
            offsets.byteswap()
        return ids.tobytes(), offsets.tobytes()

    @property
    def _policies(self) -> dict[tuple[object, object], Any]:
        """The special-token policies this tokenizer keeps (see :class:`SpecialPolicy`)."""
        return self._specials.kept

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
    if fmt != PICKLE_FORMAT or not isinstance(state, dict):
        raise ValueError(f"this pickle of a superword.Tokenizer was made by another version of "
                         f"superword (pickle format {fmt!r}; superword {__version__} reads format "
                         f"{PICKLE_FORMAT}): load the model file with Tokenizer.load instead")
    try:
        backend = _resolve_backend(state["backend"])
        maker = core_of(backend).Tokenizer
        if str(state.get("model", "")).startswith(_extend_core.PREFIX):
            impl = _extend_core.loads(state["model"], _PICKLE_NAME, backend)
        elif "ranks" in state:
            special = [(str(s), int(i)) for s, i in state["special_tokens"]]
            try:
                if len(dict(special)) != len(special):
                    raise ValueError("a special token appears twice")
                check_special_ids(dict(special))
                impl = maker.loads_tiktoken(state["ranks"], state["pattern"], special, _PICKLE_NAME)
            except ValueError as exc:
                if _PICKLE_NAME in str(exc):
                    raise
                raise ValueError(f"{_PICKLE_NAME}: {exc}") from None
        else:
            impl = maker.loads(state["model"], state["ngrams"], bool(state["greedy_split"]), _PICKLE_NAME)
        provenance = None if state["provenance"] is None else json.loads(state["provenance"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"this pickle of a superword.Tokenizer lacks what superword {__version__} "
                         f"needs ({exc!r}): it was made by another version of superword") from None
    check_loaded_special_tokens(impl.special_tokens, _PICKLE_NAME)
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

