"""Phase 2 of SuperBPE (SPEC section 5): exactly ``n`` supermerges on top of the word model.

Supermerges are chosen purely by count (the same selection as phase 1 on the candidates);
superword tokens follow all word tokens in the vocabulary.
"""
from __future__ import annotations

from collections.abc import Callable

from .merging import Merge, MergeState


def train_superbpe(word_vocab: list[bytes], candidates: dict[tuple[bytes, ...], int], n: int,
                   progress: Callable[[int, int], None] | None = None,
                   ) -> tuple[list[Merge], list[bytes], list[bool], dict[bytes, int]]:
    """Return (supermerges, vocabulary, is-superword flags, token counts on the candidates)."""
    keys = sorted(candidates)
    state = MergeState([list(k) for k in keys], [candidates[k] for k in keys])
    vocab = list(word_vocab)
    is_super = [False] * len(vocab)
    known = set(vocab)
    supermerges: list[Merge] = []
    while len(vocab) - len(word_vocab) < n:
        best = state.best()
        if best is None:
            break  # every candidate is a single token already
        pair, count = best
        flag = state.merge(pair)
        supermerges.append(Merge(pair[0], pair[1], count, flag))
        token = pair[0] + pair[1]
        if token not in known:
            known.add(token)
            vocab.append(token)
            is_super.append(True)
        if progress is not None:
            progress(len(supermerges), len(vocab))
    return supermerges, vocab, is_super, state.token_counts()
