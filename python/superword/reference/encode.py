"""Encoding and decoding (SPEC section 7).

1. special tokens are split off first (longest match wins);
2. the rest is pre-tokenized with the model's settings;
3. each pretoken whose bytes are a *reachable* token becomes that token at once (the paper's
   vocabulary shortcut); any other pretoken starts from its bytes and applies regular merges,
   always the smallest index among adjacent pairs (and never going back to a smaller index:
   BPE replays merges in training order), all non-overlapping occurrences left to right;
   With PickyBPE deletions (SPEC 9) the step applies merges *and* deletions, whichever has
   the smallest index above the last one applied; a deletion replaces a token by its parts,
   resolved beforehand down to tokens of the final vocabulary;
4. runs of two or more pretokens that each became one token occurring in some supermerge are
   merged again, smallest supermerge index first.

>>> from .train import train
>>> model = train(["the cat sat on the mat"] * 3, vocab_size=260)
>>> enc = Encoder(model)
>>> enc.decode(enc.encode_ordinary("the cat"))
'the cat'
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet

import regex

from .merging import Pair, apply_merge, deletion_parts, first_makers, merge_indices, replace_token
from .model import Model
from .ngram import prefix_set, split_one
from .pretokenize import Pretokenizer, can_merge, compile_pattern


def pretokenizer_for(model: Model) -> Pretokenizer:
    s = model.settings
    return Pretokenizer(s.main_regex, s.script_specific_regex, s.script_specific_scripts)


class Encoder:
    def __init__(self, model: Model, greedy_split: bool = False):
        self.model = model
        self.pretokenizer = pretokenizer_for(model)
        self.token_id: dict[bytes, int] = {t: i for i, t in enumerate(model.vocab)}
        # indices (shared by merges and deletions, SPEC 9) of each pair's merges and each
        # token's deletions, ascending: a pair or token can occur more than once
        self.ranks: dict[Pair, list[int]] = {}
        for i, m in zip(merge_indices(model.merges, model.deletions), model.merges):
            self.ranks.setdefault((m.left, m.right), []).append(i)
        self.deleted: dict[bytes, list[int]] = {}
        for d in model.deletions:
            self.deleted.setdefault(d.token, []).append(d.index)
        self.parts = self._resolve_parts()
        self.super_ranks: dict[Pair, int] = {}
        for i, m in enumerate(model.supermerges):
            self.super_ranks.setdefault((m.left, m.right), i)
        for m in (*model.merges, *model.supermerges):
            if m.left + m.right not in self.token_id and m.left + m.right not in self.deleted:
                raise ValueError(f"model is inconsistent: merge result {m.left + m.right!r} "
                                 f"is neither in the vocabulary nor deleted")
        # tokens that can be part of a supermerge at inference (SPEC 7.4)
        self.super_parts: set[bytes] = {t for m in model.supermerges for t in (m.left, m.right)}
        self.ngrams = None
        if greedy_split:
            if model.ngrams is None:
                raise ValueError("greedy_split=True needs the n-gram table of a model trained "
                                 "with greedy_split=True (saved next to the model file as "
                                 "'<model>.ngrams'); this model has none")
            self.ngrams = set(model.ngrams)
            self._prefixes = prefix_set(self.ngrams)
        self.special_tokens: dict[str, int] = dict(model.special_tokens)
        self.reachable: set[bytes] = set()
        self._cache: dict[str, list[bytes]] = {}
        self.reachable = self._find_reachable()

    def _resolve_parts(self) -> dict[bytes, list[bytes]]:
        """SPEC 9 "Inference": what each deleted token is replaced by.  Its recorded parts,
        with every part that is not in the final vocabulary replaced by its own resolved
        parts, recursively (a piece that is neither in the vocabulary nor deleted becomes its
        bytes).  Recorded parts are strictly shorter than the token, so the recursion ends.

        SPEC ambiguity, resolved by the golden ids: the rule is applied to the deleted token
        itself too, so a token that was deleted and made again by a later merge, and is in the
        final vocabulary, resolves to itself: at inference its deletions leave it alone.  The
        paper's encoder does exactly this, and replacing the token by its parts instead changes
        the ids of 4 documents of ``golden/multi_1230_v1500_tau0.8`` (word and super models).
        """
        model = self.model
        makers = first_makers(model.merges)
        recorded = {t: deletion_parts(t, makers, model.settings.blowup) for t in self.deleted}
        resolved: dict[bytes, list[bytes]] = {}

        def expand(piece: bytes) -> list[bytes]:
            if piece in self.token_id:
                return [piece]
            if piece not in resolved:
                if piece in recorded:
                    resolved[piece] = [x for part in recorded[piece] for x in expand(part)]
                else:
                    resolved[piece] = [piece[i:i + 1] for i in range(len(piece))]
            return resolved[piece]

        return {t: expand(t) for t in recorded}

    # -- step 3: one pretoken ---------------------------------------------------------------

    def merge_pretoken(self, raw: bytes) -> list[bytes]:
        """Apply the regular merges (and deletions) to one pretoken's bytes (no shortcut):
        repeatedly the operation with the smallest index above the last one applied."""
        tokens = [raw[i:i + 1] for i in range(len(raw))]
        ranks, deleted = self.ranks, self.deleted
        last = -1
        while True:
            best, best_pair, best_token = None, None, None
            for pair in zip(tokens, tokens[1:]):
                rank = _first_above(ranks.get(pair), last)
                if rank is not None and (best is None or rank < best):
                    best, best_pair = rank, pair
            if deleted:
                for token in tokens:
                    rank = _first_above(deleted.get(token), last)
                    if rank is not None and (best is None or rank < best):
                        best, best_pair, best_token = rank, None, token
            if best is None:
                return tokens
            if best_pair is not None:
                tokens = apply_merge(tokens, best_pair)
            else:
                assert best_token is not None
                tokens = replace_token(tokens, best_token, self.parts[best_token])
            last = best

    def _find_reachable(self) -> set[bytes]:
        """Word tokens whose text, encoded alone without the shortcut, is that one token."""
        reachable = set()
        for token, sup in zip(self.model.vocab, self.model.is_super):
            if sup:
                continue
            try:
                text = token.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(self._encode_tokens(text, shortcut=False)) == 1:
                reachable.add(token)
        return reachable

    def _pretoken_tokens(self, piece: str, shortcut: bool) -> list[bytes]:
        raw = piece.encode("utf-8")
        if shortcut and raw in self.reachable:
            return [raw]
        return self.merge_pretoken(raw)

    # -- step 4: supermerges -------------------------------------------------------------------

    def supermerge(self, tokens: list[bytes]) -> list[bytes]:
        """Apply supermerges to one run of single-token pretokens, smallest index first."""
        ranks = self.super_ranks
        while len(tokens) > 1:
            best_rank, best_pair = None, None
            for pair in zip(tokens, tokens[1:]):
                rank = ranks.get(pair)
                if rank is not None and (best_rank is None or rank < best_rank):
                    best_rank, best_pair = rank, pair
            if best_pair is None:
                break
            tokens = apply_merge(tokens, best_pair)
        return tokens

    def _encode_tokens(self, text: str, shortcut: bool = True) -> list[bytes]:
        out: list[bytes] = []
        run: list[bytes] = []     # current run of single tokens that occur in supermerges
        parts = self.super_parts
        for piece in self.pretokenizer.pretokenize(text):
            if shortcut:
                tokens = self._cache.get(piece)
                if tokens is None:
                    tokens = self._cache[piece] = self._pretoken_tokens(piece, True)
            else:
                tokens = self._pretoken_tokens(piece, False)
            if len(tokens) == 1 and tokens[0] in parts:
                run.append(tokens[0])
                continue
            self._flush(run, out)
            out.extend(tokens)
        self._flush(run, out)
        return out

    def _flush(self, run: list[bytes], out: list[bytes]) -> None:
        if len(run) >= 2:
            if self.ngrams is not None:
                for piece in split_one(tuple(run), self.ngrams, self._prefixes):
                    out.extend(self.supermerge(list(piece)))
            else:
                out.extend(self.supermerge(run))
        else:
            out.extend(run)
        run.clear()

    # -- public --------------------------------------------------------------------------------

    def encode_tokens(self, text: str) -> list[bytes]:
        """The token bytes of ``text`` (no special tokens)."""
        return self._encode_tokens(text)

    def encode_ordinary(self, text: str) -> list[int]:
        ids = self.token_id
        try:
            return [ids[t] for t in self._encode_tokens(text)]
        except KeyError as exc:  # only a hand-made, inconsistent model file gets here
            raise ValueError(f"this model cannot encode {text!r}: its merges and deletions make "
                             f"the token {exc.args[0]!r}, which is not in its vocabulary") from None

    def encode(self, text: str, allowed: AbstractSet[str]) -> list[int]:
        """Encode with the special tokens in ``allowed`` recognised (longest match first)."""
        return encode_with_specials(text, self.special_tokens, allowed, self.encode_ordinary)

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        vocab = self.model.vocab
        inverse = {i: s.encode("utf-8") for s, i in self.special_tokens.items()}
        out = []
        for position, i in enumerate(ids):
            if 0 <= i < len(vocab):
                out.append(vocab[i])
            elif i in inverse:
                out.append(inverse[i])
            else:
                raise ValueError(f"token id {i} at position {position} is out of range "
                                 f"(vocabulary has ids 0..{len(vocab) - 1}"
                                 + (f" and special ids {sorted(inverse)})" if inverse else ")"))
        return b"".join(out)

    def decode(self, ids: Iterable[int]) -> str:
        return self.decode_bytes(ids).decode("utf-8", errors="replace")


def _first_above(indices: list[int] | None, last: int) -> int | None:
    """The smallest of the ascending ``indices`` that is greater than ``last``."""
    if indices is None:
        return None
    k = bisect.bisect_right(indices, last)
    return indices[k] if k < len(indices) else None


def encode_with_specials(text: str, special_tokens: dict[str, int], allowed: Iterable[str],
                         encode_ordinary: Callable[[str], list[int]]) -> list[int]:
    """SPEC 7.1: split ``text`` on the special tokens in ``allowed`` (longest match first),
    each becoming its id, and encode the pieces between them.

    >>> encode_with_specials("a<s>b", {"<s>": 9}, {"<s>"}, lambda t: [ord(c) for c in t])
    [97, 9, 98]
    """
    return SpecialCutter(special_tokens, allowed).encode(text, encode_ordinary)


class SpecialCutter:
    """Cuts texts at the special tokens of ``special_tokens`` that ``allowed`` names (SPEC
    7.1): the earliest occurrence wins, and of those that start at one position the longest.

    Only the positions that hold the first character of some allowed token are looked at,
    and there only the lengths such tokens have, longest first.  (One regular expression
    alternating between the tokens tried each at each position: with 200,000 special tokens
    an ``encode`` took 11 s.)

    >>> SpecialCutter({"<a>": 1, "<a>x": 2, "x": 3}, {"<a>", "<a>x"}).parts("<a><a>xx")
    [1, 2, 'x']
    """

    def __init__(self, special_tokens: dict[str, int], allowed: Iterable[str]):
        self.ids = {s: special_tokens[s] for s in allowed if s and s in special_tokens}
        lengths: dict[str, set[int]] = {}
        for s in self.ids:
            lengths.setdefault(s[0], set()).add(len(s))
        self.lengths = {c: sorted(n, reverse=True) for c, n in lengths.items()}
        self.first = regex.compile("[" + "".join(map(regex.escape, self.lengths)) + "]") if lengths else None

    def parts(self, text: str) -> list[str | int]:
        """The stretches of ``text`` between special tokens (never empty) and the tokens' ids."""
        if self.first is None:
            return [text] if text else []
        out: list[str | int] = []
        start = at = 0
        while (m := self.first.search(text, at)) is not None:
            i = m.start()
            at = i + 1
            for n in self.lengths[text[i]]:
                found = self.ids.get(text[i:i + n]) if i + n <= len(text) else None
                if found is not None:
                    if i > start:
                        out.append(text[start:i])
                    out.append(found)
                    start = at = i + n
                    break
        if start < len(text):
            out.append(text[start:])
        return out

    def encode(self, text: str, encode_ordinary: Callable[[str], list[int]]) -> list[int]:
        ids: list[int] = []
        for part in self.parts(text):
            if isinstance(part, int):
                ids.append(part)
            else:
                ids.extend(encode_ordinary(part))
        return ids


def eligible_tokens(encoder: Encoder) -> set[bytes]:
    """Reachable word tokens that match the merge pattern (SPEC 3.2)."""
    pattern = compile_pattern(encoder.model.settings.merge_pattern, "merge pattern")
    return {t for t in encoder.reachable if can_merge(t, pattern)}
