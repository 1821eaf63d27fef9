"""Plain rank-based BPE, as tiktoken defines it (a ``.tiktoken`` file of ``<base64> <rank>``).

A piece that is a token is that token; otherwise start from its bytes and repeatedly join
the two adjacent parts whose concatenation has the lowest rank (the leftmost on ties).

>>> ranks = {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"bc": 4, b"abc": 5}
>>> byte_pair_merge(b"abcab", ranks)
[b'abc', b'ab']
"""
from __future__ import annotations

import base64
import binascii
import os

from .tokens import BYTE_TOKENS


def read_ranks(path: str | os.PathLike[str]) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file; a bad line raises ``ValueError`` naming it."""
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not a ranks file (invalid UTF-8)") from None
    except FileNotFoundError:
        raise FileNotFoundError(f"ranks file not found: {name}") from None
    return parse_ranks(text, name)


def parse_ranks(text: str, name: str) -> dict[bytes, int]:
    """Parse the text of a ``.tiktoken`` file; ``name`` names it in errors."""
    ranks: dict[bytes, int] = {}
    seen: set[int] = set()
    top = (0, 0)  # the largest rank and its line
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line:
            continue
        token, sep, rank = line.partition(" ")
        if not sep:
            raise ValueError(f"{name}, line {number}: expected '<base64 token> <rank>'")
        try:
            raw = base64.b64decode(token, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{name}, line {number}: the token is not valid base64") from None
        digits = rank.lstrip("0") or "0"  # (leading zeros are taken, as the Rust core's parse takes them)
        if not (rank.isascii() and rank.isdigit()) or len(digits) > 10 or int(digits) >= 2**32 - 1:
            raise ValueError(f"{name}, line {number}: the rank is not a non-negative integer "
                             f"below 4294967295")
        if not raw:
            raise ValueError(f"{name}, line {number}: empty token")
        if raw in ranks:
            raise ValueError(f"{name}, line {number}: the token appears twice")
        if int(digits) in seen:
            raise ValueError(f"{name}, line {number}: rank {int(digits)} appears twice")
        ranks[raw] = int(digits)
        seen.add(int(digits))
        if int(digits) >= top[0]:
            top = (int(digits), number)
    if not ranks:
        raise ValueError(f"{name}: no tokens (an empty ranks file)")
    # a text can need any byte UTF-8 uses, and encoding falls back on single bytes: a file
    # without one of them is refused here, not at the first text that needs it
    missing = next((b for b in BYTE_TOKENS if b not in ranks), None)
    if missing is not None:
        raise ValueError(f"{name}: no token is the single byte 0x{missing[0]:02X}; every byte UTF-8 "
                         f"text can hold must be a token, or a text holding it could not be encoded")
    limit = id_limit(len(ranks))
    if top[0] >= limit:
        raise ValueError(f"{name}, line {top[1]}: rank {top[0]} is far beyond the {len(ranks)} tokens "
                         f"of the file (ranks may leave gaps, but must stay below {limit})")
    return ranks


def id_limit(tokens: int) -> int:
    """How far the ids of a ranks model of ``tokens`` tokens (ranks and special tokens) may
    go: they must stay below this.  Ids may leave gaps (cl100k_base's special tokens do), but
    not many: the vocabulary size is the largest id + 1, and Python sizes things by it
    (``list(tokenizer)`` asked for 32 GB for a 3 KB ranks file with the rank 4294967294).
    Small models may use ids up to about a million whatever their size."""
    return max(2 * tokens, 2**20)


def check_special(ranks: dict[bytes, int], special: dict[str, int], name: str) -> None:
    """Refuse special tokens that a ranks model read from ``name`` cannot take: an id beyond
    :func:`id_limit`, the id of a rank, or an id given twice."""
    tokens = len(ranks) + len(special)
    limit = id_limit(tokens)
    used = set(ranks.values())
    seen: dict[int, str] = {}
    for s, i in special.items():
        if i >= limit:
            raise ValueError(f"special token {s!r} has id {i}, far beyond the {tokens} tokens of "
                             f"this model (ids may leave gaps, but must stay below {limit})")
        if i in used:
            raise ValueError(f"special token {s!r} has id {i}, which {name} gives to a token")
        if i in seen:
            raise ValueError(f"special tokens {seen[i]!r} and {s!r} both have id {i}")
        seen[i] = s


def dumps_ranks(vocab: list[bytes]) -> str:
    """The ``.tiktoken`` text of a vocabulary whose ranks are its ids."""
    return "".join(f"{base64.b64encode(t).decode('ascii')} {i}\n" for i, t in enumerate(vocab))


def byte_pair_merge(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """tiktoken's merge of one piece that is not a token itself."""
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, where = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best):
                best, where = rank, i
        if best is None:
            break
        parts[where:where + 2] = [parts[where] + parts[where + 1]]
    return parts
