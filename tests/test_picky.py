"""PickyBPE deletions (SPEC 9) on hand-made corpora, each outcome derived by hand from SPEC 9.

Notation: ``m3 (ab, c) 5`` is the merge at index 3 of the pair with count 5; ``d4 abc`` the
deletion at index 4; ``ios`` is count(a, b) / count(a) taken before the merge.
"""
from __future__ import annotations

import functools

import pytest
import superword
from hypothesis import given, settings
from superword.reference.bpe import train_words
from superword.reference.encode import Encoder
from superword.reference.merging import Deletion, Merge
from superword.reference.model import Model, Settings, dumps, read_model
from superword.reference.pretokenize import GPT4O, MERGE_PATTERN
from superword.reference.tokens import BYTE_TOKENS
from test_pretokenize import text_strategy


def pairs(merges):
    return [(m.left, m.right, m.count, m.flag) for m in merges]


def test_a_deleted_token_made_again_comes_back_with_a_new_id():
    # words: "abc" x5, "ab" x1.  m0 (a, b) 6 -> ab gets id 243 ("ab" is one token: flag 1).
    # m1 (ab, c) 5: ios_ab = 5/6 >= 0.8, so d2 ab: "ab" falls back to a b, ab leaves the
    # vocabulary and abc moves from id 244 to 243.  m3 (a, b) 1 makes ab again: id 244.
    merges, deletions, vocab, counts = train_words({"abc": 5, "ab": 1}, 245, tau=0.8)
    assert pairs(merges) == [(b"a", b"b", 6, True), (b"ab", b"c", 5, True), (b"a", b"b", 1, True)]
    assert deletions == [Deletion(2, b"ab")]
    assert vocab[243:] == [b"abc", b"ab"]
    assert counts == {b"abc": 5, b"ab": 1}
    # without deletions the same corpus stops after m1
    merges, deletions, vocab, _ = train_words({"abc": 5, "ab": 1}, 245)
    assert (len(merges), deletions, vocab[243:]) == (2, [], [b"ab", b"abc"])


def test_the_file_lists_merges_and_deletions_in_one_index_sequence(tmp_path):
    tok = superword.train(["abc"] * 5 + ["ab"], 245, "bpe", tau=0.8, backend="reference")
    text = tok.model_text()
    words = text[text.index("merges\n"):]
    assert words == "merges\n3\n0 a b 6 1\n1 ab c 5 1\n3 a b 1 1\ndeletions\n1\n2 ab\n"
    assert '{"tau": 0.8, "is_super": false, "superbpe_mode": false, "blowup": false' in text
    tok.save(tmp_path / "m.model")
    assert dumps(read_model(tmp_path / "m.model")) == text
    # pretokens "abc", " ab": abc is reachable; " ab": m0 -> [" ", ab], d2 ab -> ab is in the
    # final vocabulary, so it stays (see test_resolution_*), nothing else applies
    assert tok.encode_to_tokens("abc ab") == [b"abc", b" ", b"ab"]


def test_a_pair_of_equal_tokens_deletes_twice():
    # words: "aaaa" x3.  m0 (a, a) 6 (two per word) -> [aa, aa], no word is one token.
    # m1 (aa, aa) 3: ios = 3/6 for a and for b, >= tau 0.5: d2 aa (no occurrence left; aa
    # leaves the vocabulary) and d3 aa (recorded again; aa is no longer in the vocabulary).
    merges, deletions, vocab, counts = train_words({"aaaa": 3}, 250, tau=0.5)
    assert pairs(merges) == [(b"a", b"a", 6, False), (b"aa", b"aa", 3, True)]
    assert deletions == [Deletion(2, b"aa"), Deletion(3, b"aa")]
    assert vocab[243:] == [b"aaaa"]
    assert counts == {b"aaaa": 3}


@pytest.mark.parametrize("blowup", [False, True])
def test_blowup_replaces_by_bytes_and_otherwise_by_the_halves_that_made_the_token(blowup):
    # words: "abcd" x4, "abc" x1.  m0 (a, b) 5.  m1 (ab, c) 5: ios_ab = 1, d2 ab (none left).
    # m3 (abc, d) 4: ios_abc = 4/5 >= 0.8, d4 abc: "abc" becomes
    #   halves: [ab, c] (abc was made by (ab, c)); ab, itself deleted, is back in the words
    #   blowup: [a, b, c]
    merges, deletions, vocab, counts = train_words({"abcd": 4, "abc": 1}, 260, tau=0.8,
                                                   blowup=blowup)
    start = [(b"a", b"b", 5, False), (b"ab", b"c", 5, True), (b"abc", b"d", 4, True)]
    if blowup:
        # m5 (a, b) 1 makes ab (id 244), m6 (ab, c) 1: ios_ab = 1, d7 ab; abc is made again
        assert pairs(merges) == start + [(b"a", b"b", 1, False), (b"ab", b"c", 1, True)]
        assert deletions == [Deletion(2, b"ab"), Deletion(4, b"abc"), Deletion(7, b"ab")]
    else:
        # m5 (ab, c) 1 makes abc again; ios_ab = 1: d6 ab, whose parts were fixed at d2
        assert pairs(merges) == start + [(b"ab", b"c", 1, True)]
        assert deletions == [Deletion(2, b"ab"), Deletion(4, b"abc"), Deletion(6, b"ab")]
    assert vocab[243:] == [b"abcd", b"abc"]
    assert counts == {b"abcd": 4, b"abc": 1}


def hand_model(merges, deletions, extra_vocab, blowup=False):
    vocab = list(BYTE_TOKENS) + extra_vocab
    settings = Settings(GPT4O, None, None, MERGE_PATTERN, 0.5, blowup)
    return Model("word", settings, vocab, [0] * len(vocab), [False] * len(vocab),
                 [Merge(left, right, 1, False) for left, right in merges], deletions=deletions)


def test_resolution_of_a_part_that_names_a_deleted_token(tmp_path):
    # m0 (c, r), m1 (cr, y), d2 cr, d3 cry: cry's recorded parts are [cr, y], but cr is not
    # in the final vocabulary; resolved, cry falls apart into c r y.
    model = hand_model([(b"c", b"r"), (b"cr", b"y")], [Deletion(2, b"cr"), Deletion(3, b"cry")], [])
    path = tmp_path / "m.model"
    path.write_text(dumps(model), encoding="utf-8")
    enc = Encoder(read_model(path))
    assert enc.parts == {b"cr": [b"c", b"r"], b"cry": [b"c", b"r", b"y"]}
    assert enc.encode_tokens("cry") == [b"c", b"r", b"y"]
    assert enc.encode_tokens("cr") == [b"c", b"r"]
    assert enc.decode(enc.encode_ordinary("cry cr")) == "cry cr"
    rust = superword.Tokenizer.load(path, backend="rust")
    for text in ("cry", "cr", "cry cr crycry"):
        assert rust.encode_ordinary(text) == enc.encode_ordinary(text)


def test_resolution_keeps_a_deleted_token_that_is_in_the_final_vocabulary(tmp_path):
    # m0 (a, b), m1 (ab, c), d2 ab, m3 (a, b): ab was made again and is in the vocabulary, so
    # its deletion resolves to ab itself (the paper's encoder; golden multi_1230_v1500_tau0.8)
    model = hand_model([(b"a", b"b"), (b"ab", b"c"), (b"a", b"b")], [Deletion(2, b"ab")],
                       [b"abc", b"ab"])
    enc = Encoder(model)
    assert enc.parts == {b"ab": [b"ab"]}
    assert enc.encode_tokens("ab") == [b"ab"]
    assert enc.reachable >= {b"ab", b"abc"}
    path = tmp_path / "m.model"
    path.write_text(dumps(model), encoding="utf-8")
    rust = superword.Tokenizer.load(path, backend="rust")
    for text in ("ab", "abc", "abcab abab"):
        assert rust.encode_ordinary(text) == enc.encode_ordinary(text)


def test_phase_two_replays_deletions_and_makes_none():
    docs = CORPUS
    word = superword.train(docs, 300, "bpe", tau=0.7, backend="reference")._impl.model
    assert word.deletions, "this corpus makes deletions at tau 0.7"
    assert len(word.vocab) == 300 and len(word.merges) > 300 - 243  # deletions free room
    for algorithm, extra in [("boundless", {}), ("superbpe", {"supermerges": 5})]:
        size = 300 + extra.get("supermerges", 0)
        model = superword.train(docs, size, algorithm, tau=0.7, backend="reference",
                                **extra)._impl.model
        text = dumps(model)
        assert '"tau": 1.1, "is_super": true' in text  # the superwords config
        n = len(model.merges) + len(model.deletions)  # a prefix of the word model's operations
        assert model.deletions and [d for d in word.deletions if d.index < n] == model.deletions
        assert model.merges == word.merges[:len(model.merges)]
        assert text.endswith("deletions\n0\n")
        assert len(model.vocab) == size


def test_tau_and_blowup_are_checked():
    for bad, error in [(0, ValueError), (-1.0, ValueError), (float("nan"), ValueError),
                       ("0.9", TypeError), (True, TypeError)]:
        with pytest.raises(error, match="tau"):
            superword.train(["a b"], 250, "bpe", tau=bad, backend="reference")
    with pytest.raises(TypeError, match="blowup"):
        superword.train(["a b"], 250, "bpe", tau=0.9, blowup=1, backend="reference")
    for backend in ("reference", "rust"):
        with pytest.raises(ValueError, match="tau"):
            superword.train(["a b"], 250, "bpe", tau=0.0, backend=backend)


def test_cli_trains_with_tau_and_blowup(tmp_path):
    from superword.cli import main
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat\n" * 20, encoding="utf-8")
    out = tmp_path / "m.model"
    assert main(["train", str(corpus), "--algorithm", "bpe", "--vocab-size", "260", "--tau",
                 "0.7", "--blowup", "--backend", "reference", "-q", "-o", str(out)]) == 0
    model = read_model(out)
    assert (model.settings.tau, model.settings.blowup) == (0.7, True) and model.deletions
    assert main(["train", str(corpus), "--algorithm", "bpe", "--vocab-size", "260", "--tau",
                 "0.7", "--blowup", "--backend", "rust", "-q", "-o", str(tmp_path / "r.model")]) == 0
    assert (tmp_path / "r.model").read_bytes() == out.read_bytes()


CORPUS = ["The quick brown fox jumps over the lazy dog. It is one of the best in the world.",
          "I'm sure it's the one of the best; we'll see.\r\n\r\n  Numbers: 1234567, 3.14159!",
          "你好世界，这是一个测试。 東京タワーに行きました。 ภาษาไทยง่ายนิดเดียว",
          "emoji 👍🏽👨‍👩‍👧 and combining e\u0301 a\u0308 in the text of the day"] * 20


@functools.cache
def picky(algorithm: str, blowup: bool, backend: str = "reference") -> superword.Tokenizer:
    extra = {"supermerges": 20} if algorithm == "superbpe" else {}
    return superword.train(CORPUS, 600, algorithm, tau=0.6, blowup=blowup, backend=backend,
                           **extra)


@pytest.mark.parametrize("algorithm", ["bpe", "boundless", "superbpe"])
@pytest.mark.parametrize("blowup", [False, True])
def test_rust_trains_and_encodes_deletions_like_the_reference(algorithm, blowup, tmp_path):
    ref, rust = picky(algorithm, blowup), picky(algorithm, blowup, "rust")
    assert ref._impl.model.deletions
    assert rust.model_text() == ref.model_text()
    rust.save(tmp_path / "m.model")
    loaded = superword.Tokenizer.load(tmp_path / "m.model", backend="rust")
    for doc in CORPUS[:4] + ["abracadabra the the the ofofof", "x" * 200]:
        assert rust.encode_ordinary(doc) == ref.encode_ordinary(doc) == loaded.encode_ordinary(doc)


@pytest.mark.parametrize("tau", [1e-05, 0.3, 0.5, 0.75, 0.95, 1.0])  # 1e-05: written as Python writes it
@pytest.mark.parametrize("algorithm", ["bpe", "boundless", "superbpe"])
def test_rust_equals_reference_over_taus(tau, algorithm):
    # many deletions (small tau) make recorded merge counts rise and fall: the Rust core's
    # candidate cut uses the smallest recorded count, which this compares with the uncut
    # reference
    docs = CORPUS[:4] * 3 + [f"item{i} of the list{i % 7} and more{i % 3}" for i in range(60)]
    extra = {"supermerges": 15} if algorithm == "superbpe" else {}
    size = 420 + extra.get("supermerges", 0)
    ref = superword.train(docs, size, algorithm, tau=tau, backend="reference", **extra)
    for threads in (1, 2):
        rust = superword.train(docs, size, algorithm, tau=tau, backend="rust", threads=threads,
                               **extra)
        assert rust.model_text() == ref.model_text()
    assert [rust.encode_ordinary(d) for d in docs] == [ref.encode_ordinary(d) for d in docs]


@pytest.mark.parametrize("algorithm", ["bpe", "boundless", "superbpe"])
@pytest.mark.parametrize("blowup", [False, True])
@settings(max_examples=60, deadline=None)
@given(text=text_strategy)
def test_decode_encode_round_trip_with_deletions(algorithm, blowup, text):
    tok = picky(algorithm, blowup)
    assert tok._impl.model.deletions
    assert tok.decode(tok.encode_ordinary(text)) == text
    rust = picky(algorithm, blowup, "rust")
    assert rust.encode_ordinary(text) == tok.encode_ordinary(text)


def test_models_with_deletions_do_not_depend_on_the_hash_seed(tmp_path):
    import os
    import subprocess
    import sys
    script = ("import superword, sys\n"
              "docs = [l for l in open(sys.argv[1], encoding='utf-8').read().split('\\n') if l]\n"
              "tok = superword.train(docs, 450, 'boundless', tau=0.6, backend='reference')\n"
              "sys.stdout.write(tok.model_text())\n")
    (tmp_path / "docs.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    outputs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        run = subprocess.run([sys.executable, "-c", script, str(tmp_path / "docs.txt")],
                             capture_output=True, text=True, env=env, check=True)
        outputs.add(run.stdout)
    assert len(outputs) == 1 and "deletions\n0\n" not in next(iter(outputs)).split("superwords")[0]
