"""Phase 1: byte-level BPE on aggregated pretokens (SPEC section 2), the "word model".

>>> merges, vocab, counts = train_words({"aaab": 2, "ab": 1}, vocab_size=245)
>>> [(m.left, m.right, m.count, m.flag) for m in merges]
[(b'a', b'b', 3, True), (b'a', b'a', 2, False)]
>>> vocab[243:]
[b'ab', b'aa']
"""
from __future__ import annotations

from collections.abc import Callable

from .merging import Merge, MergeState
from .tokens import BYTE_TOKENS


def train_words(word_counts: dict[str, int], vocab_size: int,
                progress: Callable[[int, int], None] | None = None,
                ) -> tuple[list[Merge], list[bytes], dict[bytes, int]]:
    """Return the merges, the vocabulary (bytes by id) and the final token counts."""
    # 1. each distinct pretoken is a word: its byte tokens, weighted by its count
    words = sorted(word_counts)
    state = MergeState([[bytes([b]) for b in w.encode("utf-8")] for w in words],
                       [word_counts[w] for w in words])
    vocab = list(BYTE_TOKENS)
    known = set(vocab)
    merges: list[Merge] = []
    # 2. merge the best pair until the vocabulary is full or no pair is left
    while len(vocab) < vocab_size:
        best = state.best()
        if best is None:
            break
        pair, count = best
        flag = state.merge(pair)
        merges.append(Merge(pair[0], pair[1], count, flag))
        token = pair[0] + pair[1]
        if token not in known:  # the same bytes can come from two different merges
            known.add(token)
            vocab.append(token)
        if progress is not None:
            progress(len(merges), len(vocab))
    return merges, vocab, state.token_counts()
