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


def read_ranks(path: str | os.PathLike[str]) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file; a bad line raises ``ValueError`` naming it."""
    name = os.fspath(path)
    ranks: dict[bytes, int] = {}
    seen: set[int] = set()
    try:
        with open(name, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not a ranks file (invalid UTF-8)") from None
    except FileNotFoundError:
        raise FileNotFoundError(f"ranks file not found: {name}") from None
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
        if not (rank.isascii() and rank.isdigit()) or len(rank) > 10 or int(rank) >= 2**32 - 1:
            raise ValueError(f"{name}, line {number}: the rank is not a non-negative integer "
                             f"below 4294967295")
        if not raw:
            raise ValueError(f"{name}, line {number}: empty token")
        if raw in ranks:
            raise ValueError(f"{name}, line {number}: the token appears twice")
        if int(rank) in seen:
            raise ValueError(f"{name}, line {number}: rank {rank} appears twice")
        ranks[raw] = int(rank)
        seen.add(int(rank))
    if not ranks:
        raise ValueError(f"{name}: no tokens (an empty ranks file)")
    return ranks


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
