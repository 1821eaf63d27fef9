"""Superwords on top of an existing byte-level BPE (SPEC section 10).

The base (tiktoken's cl100k_base, a Llama-3 ``tokenizer.json``, any ranks model) keeps its
pre-tokenization, its tokens and its ids.  Phase 2 of SuperBPE runs on the letter runs
counted with the base's pattern: a run is cut at every pretoken that the base does not
encode as one token, and ``n`` supermerges are learnt on the pieces.  Superword tokens take
the ids after the base's largest id (special tokens included).

Encoding is the base's encoding of each pretoken, then the supermerges, smallest index
first, over each run of single-token pretokens that occur in some supermerge (SPEC 7.4).

>>> ranks = {bytes([b]): b for b in range(256)}
>>> ranks.update({b" c": 256, b"at": 257, b" cat": 258, b" sat": 259, b" s": 260})
>>> from .count import count_documents
>>> from .pretokenize import Pretokenizer
>>> pattern = r" ?\\p{L}+| ?[^\\s\\p{L}]+|\\s+"
>>> counts = count_documents(["a cat sat"] * 3, Pretokenizer(pattern, None, None), True)
>>> ext = train_extension(counts, ranks, pattern, {}, 1)
>>> [(m.left, m.right, m.count) for m in ext.supermerges], ext.superwords[0][:2]
([(b' cat', b' sat', 3)], (261, b' cat sat'))
>>> enc = ExtensionEncoder(ext)
>>> enc.encode_ordinary("a cat sat, a cat")
[97, 261, 44, 32, 97, 258]
"""
from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from .candidates import supermerge_candidates
from .count import Counts
from .encode import Encoder, eligible_tokens
from .merging import Merge, apply_merge
from .model import Model
from .pretokenize import MERGE_PATTERN, compile_pattern, refuse_empty_matches
from .ranks import byte_pair_merge, id_limit
from .superbpe import train_superbpe

#: The first line of an extension model file; the number is the format's version.
HEADER = "superword extension v1"
#: Token ids are 32-bit, and the upper half is left for special tokens registered later.
MAX_ID = 2**31 - 1


@dataclass
class Extension:
    """A base ranks model with supermerges on top.

    ``ranks``: the base's tokens and their ids; ``special``: the base's special tokens (and
    any registered later); ``supermerges`` in training order; ``superwords``: ``(id, bytes,
    count)`` of each new token, ids ascending from the first free one."""
    ranks: dict[bytes, int]
    pattern: str
    special: dict[str, int]
    supermerges: list[Merge] = field(default_factory=list)
    superwords: list[tuple[int, bytes, int]] = field(default_factory=list)
    merge_pattern: str = MERGE_PATTERN

    def first_free_id(self) -> int:
        """The id the first superword takes: one after every base id, special ids included."""
        return max([*self.ranks.values(), *self.special.values()], default=-1) + 1


# -- training ----------------------------------------------------------------------------------

def extension_candidates(counts: Counts, ranks: dict[bytes, int]) -> dict[tuple[bytes, ...], int]:
    """SPEC 10.2: the letter runs, cut at every pretoken that is not one base token.

    >>> c = Counts(runs={("a", " cat", " sat"): 2, (" dog", " cat"): 1})
    >>> extension_candidates(c, {b"a": 0, b" cat": 1, b" sat": 2})
    {(b'a', b' cat', b' sat'): 2}
    """
    return supermerge_candidates(counts.runs, set(ranks))


def train_extension(counts: Counts, ranks: dict[bytes, int], pattern: str, special: dict[str, int],
                    n: int, progress: Iterable[object] | None = None) -> Extension:
    """Learn ``n`` supermerges on top of the base (SPEC 10.2-10.3).  ``counts`` must have
    been made with the base's ``pattern`` in simple mode, with letter runs."""
    del progress
    ext = Extension(dict(ranks), pattern, dict(special))
    first = ext.first_free_id()
    if first + n - 1 > MAX_ID:
        raise ValueError(f"supermerges={n:,} would give ids up to {first + n - 1:,}, past "
                         f"2**31 - 1 = {MAX_ID:,} (the base's ids end at {first - 1:,})")
    word_vocab = [t for t, _ in sorted(ranks.items(), key=lambda kv: kv[1])]
    candidates = extension_candidates(counts, ranks)
    supers, vocab, _, token_counts = train_superbpe(word_vocab, candidates, n)
    ext.supermerges = supers
    ext.superwords = [(first + k, t, token_counts.get(t, 0))
                      for k, t in enumerate(vocab[len(word_vocab):])]
    return ext


def extend_word_model(counts: Counts, word: Model, n: int) -> Model:
    """SPEC 10.6: ``n`` supermerges over one of our word models, which stays as it is.

    Our word models encode by merge order (SPEC 7.3), so the result is not an extension file
    but a SuperBPE model whose phase 1 is ``word``: SuperBPE's stages 3 and 4 with the word
    model fixed.  ``counts`` must have been made with the word model's settings, with letter
    runs.  Word tokens keep their ids; superwords follow them.

    >>> from .count import count_documents
    >>> from .model import Settings
    >>> from .pretokenize import GPT4O, Pretokenizer
    >>> from .train import train_counted
    >>> docs, simple = ["a cat sat"] * 3, Settings(GPT4O, None, None, MERGE_PATTERN)
    >>> counts = count_documents(docs, Pretokenizer(GPT4O, None, None), True)
    >>> word = train_counted(counts, simple, 300, "bpe")   # (stops when every word is one token)
    >>> model = extend_word_model(counts, word, 1)
    >>> n = len(word.vocab); model.vocab[:n] == word.vocab, model.vocab[n:]
    (True, [b' cat sat'])
    >>> model == train_counted(counts, simple, n + 1, "superbpe", 1)
    True
    """
    if word.kind != "word":
        raise ValueError("only a word model (algorithm='bpe') is extended this way")
    if word.special_tokens:
        raise ValueError("a word model with special tokens cannot be a base: in the model file special "
                         "tokens take the ids after every token, so the superwords would move them; "
                         "extend the model without them, then register them on the result")
    # 1-2. eligibility by the word model's own inference (SPEC 3.2, 9), candidates (SPEC 3.3)
    candidates = supermerge_candidates(counts.runs, eligible_tokens(Encoder(word)))
    # 3. phase 2 (SPEC 5)
    supers, vocab, is_super, token_counts = train_superbpe(word.vocab, candidates, n)
    # 4. the SuperBPE model: the word model's merges and deletions, then the superwords
    return Model("superbpe", word.settings, vocab, [token_counts.get(t, 0) for t in vocab], is_super,
                 word.merges, supers, deletions=word.deletions)


# -- encoding ------------------------------------------------------------------------------------

class ExtensionEncoder:
    """SPEC 10.4: the base's ids for each pretoken, then supermerges over runs."""

    def __init__(self, ext: Extension):
        self.ext = ext
        self.matcher = compile_pattern(ext.pattern, "pattern")
        self.ranks = ext.ranks
        self.id_of = dict(ext.ranks)
        for i, t, _ in ext.superwords:
            self.id_of[t] = i
        self.bytes_of = {i: t for t, i in self.id_of.items()}
        self.super_ranks: dict[tuple[bytes, bytes], int] = {}
        self.parts: set[bytes] = set()
        for index, m in enumerate(ext.supermerges):
            self.super_ranks.setdefault((m.left, m.right), index)
            self.parts.update((m.left, m.right))

    def base_tokens(self, raw: bytes) -> list[bytes]:
        """The base's tokens for one pretoken (tiktoken's encoding)."""
        if raw in self.ranks:
            return [raw]
        parts = byte_pair_merge(raw, self.ranks)
        for part in parts:
            if part not in self.ranks:
                raise ValueError(f"the base has no token for the bytes {list(part)}: it lacks single bytes")
        return parts

    def supermerge(self, tokens: list[bytes]) -> list[bytes]:
        """SPEC 7.4 on one run: the smallest-index supermerge at all its places, again and again."""
        ranks = self.super_ranks
        while len(tokens) > 1:
            best = min((ranks[p], p) for p in zip(tokens, tokens[1:]) if p in ranks) if any(
                p in ranks for p in zip(tokens, tokens[1:])) else None
            if best is None:
                break
            tokens = apply_merge(tokens, best[1])
        return tokens

    def encode_tokens(self, text: str) -> list[bytes]:
        out: list[bytes] = []
        run: list[bytes] = []
        for piece in self.matcher.findall(text):
            tokens = self.base_tokens(piece.encode("utf-8"))
            if len(tokens) == 1 and tokens[0] in self.parts:
                run.append(tokens[0])
                continue
            out.extend(self.supermerge(run) if len(run) >= 2 else run)
            run = []
            out.extend(tokens)
        out.extend(self.supermerge(run) if len(run) >= 2 else run)
        return out

    def encode_ordinary(self, text: str) -> list[int]:
        ids = self.id_of
        return [ids[t] for t in self.encode_tokens(text)]


# -- the model file (SPEC 10.5) ---------------------------------------------------------------------

def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def dumps(ext: Extension) -> str:
    """The model file's text."""
    lines = [HEADER, "pattern", json.dumps(ext.pattern), "merge_pattern", json.dumps(ext.merge_pattern),
             "base", str(len(ext.ranks))]
    lines += [f"{_b64(t)} {i}" for t, i in sorted(ext.ranks.items(), key=lambda kv: kv[1])]
    lines += ["special_tokens", str(len(ext.special))]
    lines += [f"{i} {json.dumps(s)}" for s, i in sorted(ext.special.items(), key=lambda kv: kv[1])]
    lines += ["superwords", str(len(ext.superwords))]
    lines += [f"{i} {_b64(t)} {c}" for i, t, c in ext.superwords]
    ids = dict(ext.ranks)
    ids.update({t: i for i, t, _ in ext.superwords})
    lines += ["supermerges", str(len(ext.supermerges))]
    lines += [f"{k} {ids[m.left]} {ids[m.right]} {m.count} {int(m.flag)}"
              for k, m in enumerate(ext.supermerges)]
    return "\n".join(lines) + "\n"


class _Lines:
    """The file's lines with their numbers, for errors that name the line."""

    def __init__(self, text: str, name: str):
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        else:
            raise ValueError(f"{name}: the file does not end with a newline (cut short?)")
        self.name, self.at = name, 0

    def error(self, why: str, line: int | None = None) -> ValueError:
        return ValueError(f"{self.name}, line {self.at if line is None else line}: {why}")

    def next(self, what: str) -> str:
        if self.at >= len(self.lines):
            raise ValueError(f"{self.name}: the file ends early, where {what} should be (line {self.at + 1})")
        self.at += 1
        return self.lines[self.at - 1]

    def expect(self, word: str) -> None:
        if self.next(repr(word)) != word:
            raise self.error(f"expected {word!r}")

    def uint(self, text: str, what: str) -> int:
        if not (text.isascii() and text.isdigit()) or len(text) > 20:
            raise self.error(f"{what} is not a non-negative integer: {text[:40]!r}")
        return int(text)

    def count(self, what: str) -> int:
        n = self.uint(self.next(f"the number of {what}"), f"the number of {what}")
        if n > len(self.lines) - self.at:
            raise self.error(f"{n} {what} announced, but only {len(self.lines) - self.at} lines follow")
        return n

    def fields(self, n: int, what: str) -> list[str]:
        parts = self.next(what).split(" ")
        if len(parts) != n:
            raise self.error(f"expected {what}")
        return parts

    def json_string(self, what: str) -> str:
        text = self.next(what)
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, str):
            raise self.error(f"{what} is not a JSON string")
        return value

    def token(self, text: str) -> bytes:
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise self.error("the token is not valid base64") from None
        if not raw:
            raise self.error("empty token")
        return raw


def loads(text: str, name: str) -> Extension:
    """Parse and check a model file's text; every error names ``name`` and the line."""
    lines = _Lines(text, name)
    header = lines.next("the header")
    if header != HEADER:
        raise lines.error(f"not a superword extension model of this version ({header[:60]!r}; this "
                          f"superword reads {HEADER!r})")
    lines.expect("pattern")
    pattern = lines.json_string("the pattern")
    refuse_empty_matches(compile_pattern(pattern, f"{name}, line {lines.at}: the pattern"),
                         f"{name}, line {lines.at}: the pattern")
    lines.expect("merge_pattern")
    merge_pattern = lines.json_string("the merge pattern")
    if merge_pattern != MERGE_PATTERN:
        raise lines.error(f"merge pattern {merge_pattern!r}; this superword reads {MERGE_PATTERN!r} only")
    lines.expect("base")
    ranks: dict[bytes, int] = {}
    previous = -1
    n = lines.count("base tokens")
    limit = id_limit(n)  # (as for ranks files: the encoder sizes tables by the largest id)
    for _ in range(n):
        token, rank = lines.fields(2, "'<base64 token> <id>'")
        raw, i = lines.token(token), lines.uint(rank, "the id")
        if i <= previous:
            raise lines.error(f"id {i} does not follow {previous}: base ids ascend")
        if i > MAX_ID:
            raise lines.error(f"id {i} is past 2**31 - 1")
        if i >= limit:
            raise lines.error(f"id {i} is far beyond the {n} tokens of the base (ids may leave gaps, but "
                              f"must stay below {limit})")
        if raw in ranks:
            raise lines.error("the token appears twice")
        ranks[raw] = previous = i
    if not ranks:
        raise lines.error("the base has no tokens")
    lines.expect("special_tokens")
    special: dict[str, int] = {}
    used = set(ranks.values())
    for _ in range(lines.count("special tokens")):
        raw_line = lines.next("'<id> <JSON string>'")
        head, sep, rest = raw_line.partition(" ")
        i = lines.uint(head, "the special token's id")
        try:
            s = json.loads(rest) if sep else None
        except ValueError:
            s = None
        if not isinstance(s, str) or not s:
            raise lines.error("expected '<id> <special token as a JSON string>'")
        if i in used:
            raise lines.error(f"special token {s!r} has id {i}, which another token has")
        if s in special:
            raise lines.error(f"special token {s!r} appears twice")
        if i >= 2**32 - 1:
            raise lines.error(f"special token id {i} is not below 2**32 - 1")
        special[s] = i
        used.add(i)
    ext = Extension(ranks, pattern, special, merge_pattern=merge_pattern)
    lines.expect("superwords")
    superwords: list[tuple[int, bytes, int]] = []
    known = set(ranks)
    n_super = lines.count("superwords")
    first = 0
    for k in range(n_super):
        i_text, token, c_text = lines.fields(3, "'<id> <base64 token> <count>'")
        i, raw, c = lines.uint(i_text, "the id"), lines.token(token), lines.uint(c_text, "the count")
        if k == 0:
            # the first free id after the base: every base id and special id below it, + 1
            first = max(j for j in used if j < i) + 1 if any(j < i for j in used) else 0
            clash = [j for j in special.values() if i <= j < i + n_super]
            if i != first or clash or i in used:
                raise lines.error(f"the superwords' ids {i}..{i + n_super - 1} must start right after "
                                  f"the base's ids and special ids ({first}) and hold no special id")
        if i != first + k:
            raise lines.error(f"superword id {i} should be {first + k} (ids follow one another)")
        if i > MAX_ID:
            raise lines.error(f"id {i} is past 2**31 - 1")
        if raw in known:
            raise lines.error("the superword's bytes are a token already")
        if c >= 2**64:
            raise lines.error("the count does not fit 64 bits")
        known.add(raw)
        superwords.append((i, raw, c))
    ext.superwords = superwords
    by_id = {i: t for t, i in ranks.items()}
    by_id.update({i: t for i, t, _ in superwords})
    lines.expect("supermerges")
    made: set[bytes] = set(ranks)
    pending = 0  # the next superword a supermerge must make
    supers: list[Merge] = []
    for k in range(lines.count("supermerges")):
        fields = lines.fields(5, "'<index> <left id> <right id> <count> <flag>'")
        index, left, right, c, flag = (lines.uint(f, w) for f, w in zip(
            fields, ("the index", "the left id", "the right id", "the count", "the flag")))
        if index != k:
            raise lines.error(f"supermerge index {index} should be {k}")
        parts = []
        for side, i in (("left", left), ("right", right)):
            t = by_id.get(i)
            if t is None or t not in made:
                raise lines.error(f"the {side} part {i} is no token made before this supermerge")
            parts.append(t)
        if flag > 1:
            raise lines.error("the flag is not 0 or 1")
        if c >= 2**64:
            raise lines.error("the count does not fit 64 bits")
        result = parts[0] + parts[1]
        if result not in made:
            if pending >= len(superwords) or superwords[pending][1] != result:
                raise lines.error("this supermerge makes new bytes that are not the next superword listed")
            pending += 1
            made.add(result)
        supers.append(Merge(parts[0], parts[1], c, bool(flag)))
    if pending != len(superwords):
        raise lines.error(f"superword {superwords[pending][0]} is made by no supermerge")
    if lines.at != len(lines.lines):
        raise lines.error("unexpected text after the supermerges", lines.at + 1)
    ext.supermerges = supers
    return ext
