"""Phase 2 of BoundlessBPE (SPEC section 4, the paper's Algorithm 1).

The word model's merges are replayed in order, each with the count it had when phase 1 chose
it.  At every step the best supermerge of the candidates competes with the next regular merge:
it wins only with a strictly higher count.  The result uses a prefix of the regular merges and
interleaves superword tokens with regular ones in the vocabulary.

Cutting the candidates (what the Rust core does first, and why this reference need not).  A
supermerge wins only with a count above the next regular merge's, and no regular merge counts
less than the last one, T.  Where two different neighbouring tokens A, B meet with a pair count
of at most T over all candidates, any pair that would ever straddle that spot (a token ending
in A, one starting with B) occurs at most as often as A B, so it can never win while regular
merges remain, and they remain until the vocabulary is full (the target is the word model's
size).  The core therefore cuts the candidates at such spots into shorter, shared segments,
remembering which segment is a whole candidate (for the merge flag) and counting one-token
segments for SPEC 8 ``count``; the result is the same, which the golden and parity tests check.
Here the candidates stay whole: the same choices, only slower.
"""
from __future__ import annotations

from collections.abc import Callable

from .merging import Merge, MergeState
from .tokens import BYTE_TOKENS


def train_boundless(word_merges: list[Merge], target_size: int,
                    candidates: dict[tuple[bytes, ...], int],
                    progress: Callable[[int, int], None] | None = None,
                    ) -> tuple[int, list[Merge], list[bytes], list[bool], dict[bytes, int]]:
    """Return (regular merges used, supermerges, vocabulary, is-superword flags, counts)."""
    keys = sorted(candidates)
    state = MergeState([list(k) for k in keys], [candidates[k] for k in keys])
    vocab = list(BYTE_TOKENS)
    is_super = [False] * len(vocab)
    known = set(vocab)
    supermerges: list[Merge] = []
    used = 0  # regular merges replayed so far

    def add(token: bytes, sup: bool) -> None:
        if token not in known:
            known.add(token)
            vocab.append(token)
            is_super.append(sup)

    while len(vocab) < target_size:
        regular_count = word_merges[used].count if used < len(word_merges) else -1
        best = state.best()
        if best is not None and best[1] > regular_count:   # strictly: ties go to the regular merge
            pair, count = best
            flag = state.merge(pair)
            supermerges.append(Merge(pair[0], pair[1], count, flag))
            add(pair[0] + pair[1], True)
        elif used < len(word_merges):
            m = word_merges[used]
            add(m.left + m.right, False)
            used += 1
        else:
            break  # nothing left to add (only on degenerate corpora)
        if progress is not None:
            progress(len(supermerges), len(vocab))
    return used, supermerges, vocab, is_super, state.token_counts()
