"""Hand-worked training examples: small corpora whose merges can be computed on paper."""
from __future__ import annotations

from superword.reference.boundless import train_boundless
from superword.reference.bpe import train_words
from superword.reference.candidates import supermerge_candidates
from superword.reference.merging import Merge, count_pairs
from superword.reference.ngram import frequent_ngrams, greedy_split
from superword.reference.superbpe import train_superbpe


def merges_of(words, vocab_size):
    merges, _, vocab, counts = train_words(words, vocab_size)
    return [(m.left, m.right, m.count, m.flag) for m in merges], vocab, counts


def test_ties_break_by_bytes_not_by_id():
    # (z,z)=7 and (a,a)=6 come first; then (zz,q) and (aa,q) tie at 2.  "zz" got the smaller
    # id, but b"aa" < b"zz", so (aa,q) wins.
    merges, vocab, _ = merges_of({"zz": 5, "aa": 4, "zzq": 2, "aaq": 2}, 247)
    assert merges == [(b"z", b"z", 7, True), (b"a", b"a", 6, True),
                      (b"aa", b"q", 2, True), (b"zz", b"q", 2, True)]
    assert vocab[243:] == [b"zz", b"aa", b"aaq", b"zzq"]


def test_a_proper_prefix_sorts_first():
    # after (a,b): (a,c)=3 and (ab,c)=3 tie; b"a" is a prefix of b"ab" so (a,c) is first
    merges, _, _ = merges_of({"ab": 10, "ac": 3, "abc": 3}, 246)
    assert merges == [(b"a", b"b", 13, True), (b"a", b"c", 3, True), (b"ab", b"c", 3, True)]


def test_runs_of_equal_tokens_count_floor_half():
    assert count_pairs([b"a"] * 5) == {(b"a", b"a"): 2}
    assert count_pairs([b"a"] * 4) == {(b"a", b"a"): 2}
    assert count_pairs([b"x", b"a", b"a", b"a", b"y"]) == {
        (b"x", b"a"): 1, (b"a", b"a"): 1, (b"a", b"y"): 1}
    # "aaaaa": (a,a)=2 -> [aa,aa,a]; (aa,a)=1 ties (aa,aa)=1 and b"a" < b"aa" -> [aa,aaa];
    # then (aa,aaa) makes the whole word one token (flag 1)
    merges, _, counts = merges_of({"aaaaa": 1}, 246)
    assert merges == [(b"a", b"a", 2, False), (b"aa", b"a", 1, False), (b"aa", b"aaa", 1, True)]
    assert counts == {b"aaaaa": 1}


def test_weights_multiply_counts_and_training_stops_when_no_pair_is_left():
    merges, vocab, counts = merges_of({"ab": 3, "b": 7}, 300)
    assert merges == [(b"a", b"b", 3, True)]
    assert len(vocab) == 244
    assert counts == {b"ab": 3, b"b": 7}


def test_candidates_cut_at_tokens_that_are_not_single_tokens():
    runs = {("a", " big", " cat", " sat"): 2, ("x", " y"): 5}
    eligible = {b"a", b" big", b" sat", b"x", b" y"}
    assert supermerge_candidates(runs, eligible) == {(b"a", b" big"): 2, (b"x", b" y"): 5}


def word_merges(*counts):
    """Fake phase-1 merges (a,b), (c,d), (e,f), ... with the given counts."""
    letters = "abcdefghijklmnop"
    return [Merge(letters[2 * i].encode(), letters[2 * i + 1].encode(), c, False)
            for i, c in enumerate(counts)]


def test_boundless_ties_go_to_the_regular_merge():
    # R=4 > S=3: replay; R=3 == S=3: tie, replay; R=2 < S=3: the supermerge wins
    used, supers, vocab, is_super, counts = train_boundless(
        word_merges(4, 3, 2, 1), [], 246, {(b"x", b" y"): 3})
    assert used == 2
    assert supers == [Merge(b"x", b" y", 3, True)]
    assert vocab[243:] == [b"ab", b"cd", b"x y"]
    assert is_super[243:] == [False, False, True]
    assert counts == {b"x y": 3}


def test_boundless_keeps_replaying_after_the_last_supermerge():
    # SPEC 4, departure: with no supermerge pair left, regular merges fill the vocabulary
    used, supers, vocab, _, _ = train_boundless(word_merges(9, 8, 7), [], 246, {(b"x", b" y"): 10})
    assert [m.count for m in supers] == [10]
    assert used == 2 and len(vocab) == 246


def test_a_merge_whose_bytes_already_exist_is_recorded_but_adds_no_token():
    # (x,y) ties (y,z) at 5 and wins by bytes; (xy,z) makes "xyz"; then (x,yz) makes the
    # same bytes: recorded as a supermerge, but the vocabulary does not grow (so 3 asked
    # supermerges stop at 2 new tokens, when no pair is left)
    word_vocab = [b"x", b"y", b"z", b"yz"]
    supers, vocab, is_super, counts = train_superbpe(
        word_vocab, {(b"x", b"y", b"z"): 5, (b"x", b"yz"): 4}, 3)
    assert [(m.left, m.right, m.count) for m in supers] == [
        (b"x", b"y", 5), (b"xy", b"z", 5), (b"x", b"yz", 4)]
    assert vocab == word_vocab + [b"xy", b"xyz"]
    assert is_super == [False] * 4 + [True, True]
    assert counts == {b"xyz": 9}


def test_frequent_ngrams_and_greedy_split():
    cands = {(b"a", b"b", b"c"): 20, (b"a", b"b"): 1, (b"c", b"a"): 3}
    table = frequent_ngrams(cands, min_count=15)
    assert table == {(b"a", b"b"): 21, (b"b", b"c"): 20, (b"a", b"b", b"c"): 20}
    # longest n-gram first, left to right; positions that start none stay single
    assert greedy_split({(b"c", b"a", b"b", b"c", b"b", b"c"): 2}, table) == {
        (b"c",): 2, (b"a", b"b", b"c"): 2, (b"b", b"c"): 2}
