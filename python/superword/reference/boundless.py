"""Phase 2 of BoundlessBPE (SPEC section 4, the paper's Algorithm 1).

The word model's merges are replayed in order, each with the count it had when phase 1 chose
it.  At every step the best supermerge of the candidates competes with the next regular merge:
it wins only with a strictly higher count.  The result uses a prefix of the regular merges and
interleaves superword tokens with regular ones in the vocabulary.

A word model with PickyBPE deletions (SPEC 9) is replayed with its deletions: each deletion
that follows a replayed merge in the shared index order is replayed at once (the token leaves
the vocabulary, later ids shift down) and becomes part of the prefix; phase 2 makes none.

Cutting the candidates (what the Rust core does first, and why this reference need not).  A
supermerge wins only with a count above the next regular merge's, and no regular merge counts
less than the last one, T (without deletions).  Where two different neighbouring tokens A, B meet with a pair count
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

from .merging import Deletion, Merge, MergeState, operations
from .tokens import BYTE_TOKENS


def train_boundless(word_merges: list[Merge], word_deletions: list[Deletion], target_size: int,
                    candidates: dict[tuple[bytes, ...], int],
                    progress: Callable[[int, int], None] | None = None,
                    ) -> tuple[int, list[Merge], list[bytes], list[bool], dict[bytes, int]]:
    """Return (word-model operations replayed: merges and deletions, a prefix in index
    order; supermerges; vocabulary; is-superword flags; token counts)."""
    keys = sorted(candidates)
    state = MergeState([list(k) for k in keys], [candidates[k] for k in keys])
    vocab = list(BYTE_TOKENS)
    is_super = [False] * len(vocab)
    known = set(vocab)
    supermerges: list[Merge] = []
    ops = operations(word_merges, word_deletions)
    used = 0  # word-model operations replayed so far

    def add(token: bytes, sup: bool) -> None:
        if token not in known:
            known.add(token)
            vocab.append(token)
            is_super.append(sup)

    def replay_deletions() -> int:
        """Replay the deletions that come next; return the new number of operations used."""
        n = used
        while n < len(ops) and isinstance(ops[n], Deletion):
            token = ops[n].token  # type: ignore[union-attr]
            if token in known:
                known.remove(token)
                k = vocab.index(token)
                del vocab[k], is_super[k]
            n += 1
        return n

    while len(vocab) < target_size:
        used = replay_deletions()
        regular = ops[used] if used < len(ops) else None
        assert regular is None or isinstance(regular, Merge)
        regular_count = regular.count if regular is not None else -1
        best = state.best()
        if best is not None and best[1] > regular_count:   # strictly: ties go to the regular merge
            pair, count = best
            flag = state.merge(pair)
            supermerges.append(Merge(pair[0], pair[1], count, flag))
            add(pair[0] + pair[1], True)
        elif regular is not None:
            add(regular.left + regular.right, False)
            used += 1
            used = replay_deletions()  # the deletions that followed this merge in phase 1
        else:
            break  # nothing left to add (only on degenerate corpora)
        if progress is not None:
            progress(len(supermerges), len(vocab))
    return used, supermerges, vocab, is_super, state.token_counts()
