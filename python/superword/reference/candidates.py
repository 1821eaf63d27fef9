"""Supermerge candidates (SPEC section 3): runs of pretokens that are single tokens.

>>> runs = {(" of", " the", " cat"): 2, ("a", " dog"): 1}
>>> supermerge_candidates(runs, eligible={b" of", b" the", b"a", b" dog"})
{(b' of', b' the'): 2, (b'a', b' dog'): 1}
"""
from __future__ import annotations


def supermerge_candidates(runs: dict[tuple[str, ...], int], eligible: set[bytes],
                          ) -> dict[tuple[bytes, ...], int]:
    """Cut each letter run at pretokens that are not ``eligible`` and count the pieces of
    two or more pretokens.  ``eligible`` holds the bytes of reachable word tokens (SPEC 3, rule 1);
    the runs only contain pretokens with a letter, so together they give SPEC 3.2."""
    candidates: dict[tuple[bytes, ...], int] = {}
    for run, count in runs.items():
        piece: list[bytes] = []
        for pretoken in run:
            raw = pretoken.encode("utf-8")
            if raw in eligible:
                piece.append(raw)
                continue
            if len(piece) >= 2:
                key = tuple(piece)
                candidates[key] = candidates.get(key, 0) + count
            piece = []
        if len(piece) >= 2:
            key = tuple(piece)
            candidates[key] = candidates.get(key, 0) + count
    return candidates
