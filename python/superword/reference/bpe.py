"""Phase 1: byte-level BPE on aggregated pretokens (SPEC section 2), the "word model", with
optional PickyBPE deletions (SPEC 9).

>>> merges, deletions, vocab, counts = train_words({"aaab": 2, "ab": 1}, vocab_size=245)
>>> [(m.left, m.right, m.count, m.flag) for m in merges], deletions
([(b'a', b'b', 3, True), (b'a', b'a', 2, False)], [])
>>> vocab[243:]
[b'ab', b'aa']

With ``tau <= 1`` a merge of ``(a, b)`` is followed by the deletion of ``a`` (then ``b``) when
most of its occurrences were used by the merge (``count(a, b) / count(a) >= tau``):

>>> merges, deletions, vocab, counts = train_words({"abc": 3}, 245, tau=0.9)
>>> [(m.left, m.right) for m in merges], deletions
([(b'a', b'b'), (b'ab', b'c')], [Deletion(index=2, token=b'ab')])
>>> vocab[243:]
[b'abc']
"""
from __future__ import annotations

from collections.abc import Callable

from .merging import Deletion, Merge, MergeState, Pair, deletion_parts
from .tokens import BYTE_TOKENS

NO_DELETIONS_TAU = 1.1  # a ratio never exceeds 1, so tau > 1 turns deletions off (SPEC 9)


def train_words(word_counts: dict[str, int], vocab_size: int, tau: float = NO_DELETIONS_TAU,
                blowup: bool = False, progress: Callable[[int, int], None] | None = None,
                ) -> tuple[list[Merge], list[Deletion], list[bytes], dict[bytes, int]]:
    """Return the merges, the deletions, the vocabulary (bytes by id) and the final token
    counts."""
    # 1. each distinct pretoken is a word: its byte tokens, weighted by its count
    words = sorted(word_counts)
    state = MergeState([[bytes([b]) for b in w.encode("utf-8")] for w in words],
                       [word_counts[w] for w in words])
    vocab = list(BYTE_TOKENS)
    present = set(vocab)
    merges: list[Merge] = []
    deletions: list[Deletion] = []
    parts: dict[bytes, list[bytes]] = {}  # fixed at a token's first deletion
    makers: dict[bytes, Pair] = {}        # token -> the pair of the earliest merge making it
    # 2. merge the best pair until the vocabulary is full or no pair is left
    while len(vocab) < vocab_size:
        best = state.best()
        if best is None:
            break
        (left, right), count = best
        # SPEC 9.1: "intersection over self", before the merge changes the counts
        ios = [(left, count / state.counts[left]), (right, count / state.counts[right])]
        flag = state.merge((left, right))
        merges.append(Merge(left, right, count, flag))
        token = left + right
        makers.setdefault(token, (left, right))
        if token not in present:  # the same bytes can come from two different merges
            present.add(token)
            vocab.append(token)
        # SPEC 9.3: delete a (then b; twice when a == b) when the merge used most of it
        for t, ratio in ios:
            if len(t) == 1 or ratio < tau:
                continue
            if t not in parts:
                parts[t] = deletion_parts(t, makers, blowup)
            state.delete(t, parts[t])
            deletions.append(Deletion(len(merges) + len(deletions), t))
            if t in present:  # not when a == b and the first deletion removed it
                present.remove(t)
                vocab.remove(t)  # later ids shift down by one
        if progress is not None:
            progress(len(merges), len(vocab))
    return merges, deletions, vocab, state.token_counts()
