"""The merge loop shared by phase 1 (BPE on words) and phase 2 (supermerges on candidates).

SPEC 2.3-2.6 and 3.4 describe one procedure on weighted token sequences; this module is it.

* pair counts: within one sequence a run of k identical tokens contributes ⌊k/2⌋ (SPEC 2.3);
* selection: highest count, ties to the smallest (left bytes, right bytes) (SPEC 2.4);
* applying: left to right, non-overlapping (SPEC 2.5), touching only the sequences that
  contain the pair (a pair -> sequences index) and updating counts by difference;
* a lazy max-heap whose order *is* the tie-break: Python's heapq on ``(-count, left, right)``.
  Entries go stale when a count changes; :meth:`MergeState.best` drops stale ones;
* token counts (how often each token occurs, weighted) and a token -> sequences index, kept
  up to date for PickyBPE deletions (SPEC 9), which replace a token by its parts.

>>> state = MergeState([[b"a", b"b", b"c"], [b"a", b"b"]], [1, 2])
>>> state.best()
((b'a', b'b'), 3)
>>> state.merge((b"a", b"b"))      # True: the second sequence became one token
True
>>> state.sequences
[[b'ab', b'c'], [b'ab']]
"""
from __future__ import annotations

import heapq
from typing import NamedTuple

Pair = tuple[bytes, bytes]


class Merge(NamedTuple):
    """One recorded merge: the pair, its count when selected, and whether it turned at least
    one whole word (or candidate) into a single token (the model file's ``flag``)."""
    left: bytes
    right: bytes
    count: int  # type: ignore[assignment]  # shadows tuple.count on purpose: the file's name
    flag: bool


class Deletion(NamedTuple):
    """One recorded PickyBPE deletion (SPEC 9): its index in the sequence merges and deletions
    share, and the deleted token."""
    index: int  # type: ignore[assignment]  # shadows tuple.index on purpose: the file's name
    token: bytes


def operations(merges: list[Merge], deletions: list[Deletion]) -> list[Merge | Deletion]:
    """Merges and deletions in index order.  Deletions carry their index; the merges take the
    other indices 0, 1, 2, ... in their order (the two share one gap-free sequence, SPEC 9).

    >>> ops = operations([Merge(b"a", b"b", 5, True), Merge(b"c", b"d", 4, False)],
    ...                  [Deletion(1, b"ab")])
    >>> [type(op).__name__ for op in ops]
    ['Merge', 'Deletion', 'Merge']
    """
    out: list[Merge | Deletion] = []
    pending = iter(merges)
    for d in deletions:
        while len(out) < d.index:
            out.append(next(pending))
        out.append(d)
    out.extend(pending)
    return out


def merge_indices(merges: list[Merge], deletions: list[Deletion]) -> list[int]:
    """The index of each merge in the shared sequence (0, 1, 2, ... without deletions)."""
    taken = {d.index for d in deletions}
    out: list[int] = []
    i = 0
    while len(out) < len(merges):
        if i not in taken:
            out.append(i)
        i += 1
    return out


def first_makers(merges: list[Merge]) -> dict[bytes, Pair]:
    """For each token a merge makes, the pair of the earliest merge that makes it."""
    makers: dict[bytes, Pair] = {}
    for m in merges:
        makers.setdefault(m.left + m.right, (m.left, m.right))
    return makers


def deletion_parts(token: bytes, makers: dict[bytes, Pair], blowup: bool) -> list[bytes]:
    """What a deleted token is replaced by (SPEC 9): its single bytes with ``blowup``, else the
    halves of the earliest merge that makes it (``makers``, from :func:`first_makers`).  Any
    later merge making the same bytes has a larger index, so this is the same whether asked at
    the token's first deletion (training) or from the whole file (loading).

    >>> makers = first_makers([Merge(b"a", b"b", 9, False), Merge(b"ab", b"c", 5, False)])
    >>> deletion_parts(b"abc", makers, False), deletion_parts(b"abc", makers, True)
    ([b'ab', b'c'], [b'a', b'b', b'c'])
    """
    if blowup:
        return [token[i:i + 1] for i in range(len(token))]
    if token not in makers:
        raise ValueError(f"no merge makes the deleted token {token!r}")
    return list(makers[token])


def count_pairs(tokens: list[bytes]) -> dict[Pair, int]:
    """Pair occurrences in one sequence, counting runs of equal tokens as ⌊k/2⌋ (SPEC 2.3).

    >>> count_pairs([b"a"] * 5)
    {(b'a', b'a'): 2}
    >>> count_pairs([b"a", b"b", b"a", b"b"])
    {(b'a', b'b'): 2, (b'b', b'a'): 1}
    """
    counts: dict[Pair, int] = {}
    previous = None
    for pair in zip(tokens, tokens[1:]):
        if pair[0] == pair[1] and pair == previous:
            previous = None  # this (x, x) overlaps the one just counted
            continue
        counts[pair] = counts.get(pair, 0) + 1
        previous = pair
    return counts


def apply_merge(tokens: list[bytes], pair: Pair) -> list[bytes]:
    """Replace each non-overlapping occurrence of ``pair``, left to right.

    >>> apply_merge([b"a", b"a", b"a"], (b"a", b"a"))
    [b'aa', b'a']
    """
    left, right = pair
    merged = left + right
    out: list[bytes] = []
    i, n = 0, len(tokens)
    while i < n:
        if i + 1 < n and tokens[i] == left and tokens[i + 1] == right:
            out.append(merged)
            i += 2
        else:
            out.append(tokens[i])
            i += 1
    return out


def replace_token(tokens: list[bytes], token: bytes, parts: list[bytes]) -> list[bytes]:
    """Replace every occurrence of ``token`` by ``parts`` (a PickyBPE deletion, SPEC 9).

    >>> replace_token([b"ab", b"c", b"ab"], b"ab", [b"a", b"b"])
    [b'a', b'b', b'c', b'a', b'b']
    """
    out: list[bytes] = []
    for t in tokens:
        if t == token:
            out.extend(parts)
        else:
            out.append(t)
    return out


class MergeState:
    """Weighted token sequences plus everything needed to pick and apply merges quickly."""

    def __init__(self, sequences: list[list[bytes]], weights: list[int]):
        self.sequences = sequences
        self.weights = weights
        self.pair_counts: dict[Pair, int] = {}
        self.where: dict[Pair, set[int]] = {}   # pair -> indices of sequences that may hold it
        self.counts: dict[bytes, int] = {}      # token -> weighted occurrences (SPEC 9 count(t))
        self.holders: dict[bytes, set[int]] = {}  # token -> indices of sequences that may hold it
        for index, (tokens, weight) in enumerate(zip(sequences, weights)):
            for pair, n in count_pairs(tokens).items():
                self.pair_counts[pair] = self.pair_counts.get(pair, 0) + n * weight
                self.where.setdefault(pair, set()).add(index)
            for token in tokens:
                self.counts[token] = self.counts.get(token, 0) + weight
                self.holders.setdefault(token, set()).add(index)
        self._heap = [(-count, left, right) for (left, right), count in self.pair_counts.items()]
        heapq.heapify(self._heap)

    def best(self) -> tuple[Pair, int] | None:
        """The pair to merge next and its count, or ``None`` when no pair is left."""
        heap = self._heap
        while heap:
            negative, left, right = heap[0]
            if self.pair_counts.get((left, right)) == -negative:
                return (left, right), -negative
            heapq.heappop(heap)  # stale: the count changed since this entry was pushed
        return None

    def merge(self, pair: Pair) -> bool:
        """Apply ``pair`` everywhere; return True if some sequence became a single token."""
        delta: dict[Pair, int] = {}
        became_single = False
        made = 0  # weighted number of merged tokens made
        holders = self.holders.setdefault(pair[0] + pair[1], set())
        for index in sorted(self.where.pop(pair, ())):
            tokens = self.sequences[index]
            merged = apply_merge(tokens, pair)
            if len(merged) == len(tokens):
                continue  # stale index entry: the pair left this sequence earlier
            weight = self.weights[index]
            self._replace(index, tokens, merged, delta)
            made += (len(tokens) - len(merged)) * weight
            holders.add(index)
            became_single |= len(merged) == 1
        self._change_counts(pair[0] + pair[1], made)
        self._change_counts(pair[0], -made)
        self._change_counts(pair[1], -made)
        self._apply(delta)
        return became_single

    def delete(self, token: bytes, parts: list[bytes]) -> None:
        """Replace every occurrence of ``token`` by ``parts`` (SPEC 9), updating counts."""
        delta: dict[Pair, int] = {}
        removed = 0  # weighted occurrences replaced
        for index in sorted(self.holders.pop(token, ())):
            tokens = self.sequences[index]
            n = tokens.count(token)
            if n == 0:
                continue  # stale index entry
            self._replace(index, tokens, replace_token(tokens, token, parts), delta)
            removed += n * self.weights[index]
            for part in parts:
                self.holders.setdefault(part, set()).add(index)
        self._change_counts(token, -removed)
        for part in parts:
            self._change_counts(part, removed)
        self._apply(delta)

    def _replace(self, index: int, before: list[bytes], after: list[bytes],
                 delta: dict[Pair, int]) -> None:
        """Store ``after`` as sequence ``index``, collecting the pair-count changes."""
        weight = self.weights[index]
        for p, n in count_pairs(before).items():
            delta[p] = delta.get(p, 0) - n * weight
        for p, n in count_pairs(after).items():
            delta[p] = delta.get(p, 0) + n * weight
            self.where.setdefault(p, set()).add(index)
        self.sequences[index] = after

    def _change_counts(self, token: bytes, change: int) -> None:
        count = self.counts.get(token, 0) + change
        if count:
            self.counts[token] = count
        else:
            self.counts.pop(token, None)

    def _apply(self, delta: dict[Pair, int]) -> None:
        for p, change in delta.items():
            if change == 0:
                continue
            count = self.pair_counts.get(p, 0) + change
            if count:
                self.pair_counts[p] = count
                heapq.heappush(self._heap, (-count, p[0], p[1]))
            else:
                del self.pair_counts[p]

    def token_counts(self) -> dict[bytes, int]:
        """How often each token occurs in the current sequences, weighted (SPEC 8 ``count``)."""
        counts: dict[bytes, int] = {}
        for tokens, weight in zip(self.sequences, self.weights):
            for token in tokens:
                counts[token] = counts.get(token, 0) + weight
        return counts
