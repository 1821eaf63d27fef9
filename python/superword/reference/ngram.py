"""The optional greedy n-gram split of supermerge candidates (SPEC 3.1, paper Appendix B).

Long candidates are cut into frequent n-grams of pretokens so that more of them are shared,
which makes phase 2 faster on text without spaces.

>>> cands = {(b"a", b"b", b"c"): 20, (b"a", b"b"): 1}
>>> table = frequent_ngrams(cands, min_count=15)
>>> sorted(table)
[(b'a', b'b'), (b'a', b'b', b'c'), (b'b', b'c')]
>>> greedy_split({(b"x", b"a", b"b", b"c", b"b"): 1}, table)
{(b'x',): 1, (b'a', b'b', b'c'): 1, (b'b',): 1}
"""
from __future__ import annotations

MIN_COUNT_FLOOR = 15
MAX_NGRAM = 30


def frequent_ngrams(candidates: dict[tuple[bytes, ...], int], min_count: int,
                    max_len: int = MAX_NGRAM) -> dict[tuple[bytes, ...], int]:
    """All n-grams (2 <= n <= max_len) with count >= min_count, Apriori style: an n-gram
    occurrence is counted only when its (n-1)-prefix and (n-1)-suffix are frequent."""
    table: dict[tuple[bytes, ...], int] = {}
    for n in range(1, max_len + 1):
        size_before = len(table)
        for tokens, count in candidates.items():
            for i in range(len(tokens) - n + 1):
                if n > 1 and (table.get(tokens[i:i + n - 1], 0) < min_count
                              or table.get(tokens[i + 1:i + n], 0) < min_count):
                    continue
                gram = tokens[i:i + n]
                table[gram] = table.get(gram, 0) + count
        # unigrams are kept whatever their count: the pruning of size 2 reads them
        table = {g: c for g, c in table.items() if len(g) == 1 or c >= min_count}
        if len(table) == size_before:
            break
    return {g: c for g, c in table.items() if len(g) >= 2 and c >= min_count}


def split_one(tokens: tuple[bytes, ...], table, prefixes) -> list[tuple[bytes, ...]]:
    """Cut one sequence: at each position take the longest n-gram (n >= 2) of ``table``
    starting there, else a single token."""
    pieces = []
    pos = 0
    while pos < len(tokens):
        best = 1
        for end in range(pos + 1, len(tokens) + 1):
            gram = tokens[pos:end]
            if gram not in prefixes:
                break
            if end - pos >= 2 and gram in table:
                best = end - pos
        pieces.append(tokens[pos:pos + best])
        pos += best
    return pieces


def prefix_set(table) -> set[tuple[bytes, ...]]:
    return {gram[:k] for gram in table for k in range(1, len(gram) + 1)}


def greedy_split(candidates: dict[tuple[bytes, ...], int], table: dict[tuple[bytes, ...], int],
                 ) -> dict[tuple[bytes, ...], int]:
    """Cut every candidate and re-aggregate the pieces (single-token pieces included: they
    carry no pairs but count in the vocabulary counts, as in the paper's implementation)."""
    if not table:
        return candidates
    prefixes = prefix_set(table)
    out: dict[tuple[bytes, ...], int] = {}
    for tokens, count in candidates.items():
        for piece in split_one(tokens, table, prefixes):
            out[piece] = out.get(piece, 0) + count
    return out
