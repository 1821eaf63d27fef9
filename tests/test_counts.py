"""Count files: the same bytes from both backends and any thread count, merging equal to
counting together, and models from counts byte-identical to the golden models trained on text."""
from __future__ import annotations

import struct
import zlib
from functools import cache

import pytest
import superword
from helpers import GOLDEN, need, read_jsonl_texts
from superword.reference import count as ref_count
from superword.reference import countfile
from test_golden import FOLDER_ARGS, FOLDERS, MODELS

BACKENDS = ["reference", "rust"]


@cache
def counted(corpus: str, aware: bool, backend: str = "rust") -> bytes:
    return superword.count(need(GOLDEN / corpus), script_aware=aware, backend=backend).to_bytes()


@pytest.mark.parametrize("corpus", ["taylorswift_400.jsonl", "multi_1230.jsonl"])
@pytest.mark.parametrize("aware", [True, False])
def test_count_file_bytes_are_the_same_from_both_backends_and_any_thread_count(corpus, aware):
    path = need(GOLDEN / corpus)
    rust = [superword.count(path, script_aware=aware, threads=n).to_bytes() for n in (1, 2, 4)]
    reference = superword.count(path, script_aware=aware, backend="reference").to_bytes()
    assert rust[0] == rust[1] == rust[2] == reference
    # documents in memory count as the same files
    texts = read_jsonl_texts(path)
    assert superword.count(texts, script_aware=aware).to_bytes() == reference


def test_count_file_round_trips_through_a_file(tmp_path):
    c = superword.count(need(GOLDEN / "taylorswift_400.jsonl"))
    c.save(tmp_path / "c.swc")
    for backend in BACKENDS:
        again = superword.load_counts(tmp_path / "c.swc", backend=backend)
        assert again.to_bytes() == c.to_bytes()
        assert (again.documents, again.num_words, again.num_runs) == (400, c.num_words, c.num_runs)
        assert again.most_common(3) == c.most_common(3)


def _from_counts(counts, vocab, m, tau, blowup, greedy, name, backend):
    kw = dict(counts=counts, backend=backend, tau=tau, blowup=blowup)
    if name == "word":
        return superword.train(vocab_size=vocab, algorithm="bpe", **kw)
    if name == "boundless":
        return superword.train(vocab_size=vocab, algorithm="boundless", greedy_split=greedy, **kw)
    return superword.train(vocab_size=vocab + m, algorithm="superbpe", supermerges=m, greedy_split=greedy, **kw)


# every golden folder and model from counts with the Rust core; the reference on the smallest
# corpus (plain, and PickyBPE with tau)
CASES = [pytest.param(*f, name, "rust", id=f"{f[0]}-{name}-rust") for f in FOLDERS for name in MODELS]
CASES += [pytest.param(*f, name, "reference", id=f"{f[0]}-{name}-reference")
          for f in FOLDERS if f[0] in ("taylorswift_400_v600", "taylorswift_400_v600_tau0.9") for name in MODELS]


@pytest.mark.parametrize(f"{FOLDER_ARGS},name,backend", CASES)
def test_model_from_a_count_file_is_the_golden_model(tmp_path, folder, corpus, vocab, aware, m, tau, blowup,
                                                     greedy, name, backend):
    expected = need(GOLDEN / folder / f"{name}.model").read_bytes()
    path = tmp_path / "corpus.swc"
    path.write_bytes(counted(corpus, aware))
    tok = _from_counts(path, vocab, m, tau, blowup, greedy, name, backend)
    tok.save(tmp_path / "out.model")
    assert (tmp_path / "out.model").read_bytes() == expected


def test_one_count_serves_many_vocabulary_sizes_and_algorithms():
    corpus = need(GOLDEN / "taylorswift_400.jsonl")
    counts = superword.count(corpus)
    for vocab, algorithm, m in [(300, "bpe", None), (700, "boundless", None), (700, "superbpe", 50)]:
        from_text = superword.train(corpus, vocab, algorithm, supermerges=m)
        assert superword.train(counts=counts, vocab_size=vocab, algorithm=algorithm,
                               supermerges=m).model_text() == from_text.model_text()


def _parts(n: int) -> list[list[str]]:
    texts = read_jsonl_texts(need(GOLDEN / "multi_1230.jsonl"))
    return [texts[i::n] for i in range(n)]


def test_merging_equals_counting_together_whatever_the_order_and_grouping(tmp_path):
    a, b, c = _parts(3)
    whole = superword.count(a + b + c).to_bytes()
    ca, cb = superword.count(a), superword.count(b, backend="reference")
    cc = superword.count(c, threads=1)
    cc.save(tmp_path / "c.swc")
    assert superword.merge_counts([ca, cb, tmp_path / "c.swc"]).to_bytes() == whole
    assert superword.merge_counts([cc, ca, cb], backend="reference").to_bytes() == whole
    assert superword.merge_counts([superword.merge_counts([cb, cc]), ca]).to_bytes() == whole
    # and training on the merged counts is training on all the text
    merged = superword.merge_counts([ca, cb, cc])
    assert (superword.train(counts=merged, vocab_size=900).model_text()
            == superword.train(a + b + c, 900).model_text())


@pytest.mark.parametrize("backend", BACKENDS)
def test_merging_counts_of_different_settings_is_refused_naming_the_difference(tmp_path, backend):
    texts = _parts(2)[0]
    superword.count(texts).save(tmp_path / "aware.swc")
    superword.count(texts, script_aware=False).save(tmp_path / "simple.swc")
    superword.count(texts, runs=False).save(tmp_path / "noruns.swc")
    with pytest.raises(ValueError, match=r"aware\.swc and .*simple\.swc.*script pattern"):
        superword.merge_counts([tmp_path / "aware.swc", tmp_path / "simple.swc"], backend=backend)
    with pytest.raises(ValueError, match=r"noruns\.swc.*without letter runs"):
        superword.merge_counts([tmp_path / "aware.swc", tmp_path / "noruns.swc"], backend=backend)


def _file(words: dict[str, int], runs: dict[tuple[str, ...], int], documents: int = 1) -> bytes:
    settings = countfile.CountSettings(superword.reference.pretokenize.GPT4O, None, None,
                                       superword.reference.pretokenize.MERGE_PATTERN, True)
    return countfile.to_bytes(ref_count.Counts(words, runs, documents, sum(words.values())), settings)


@pytest.mark.parametrize("backend", BACKENDS)
def test_counts_that_would_overflow_are_refused_not_wrapped(tmp_path, backend):
    (tmp_path / "big.swc").write_bytes(_file({"a": 2**64 - 1}, {}, documents=0))
    (tmp_path / "one.swc").write_bytes(_file({"a": 1}, {}, documents=0))
    big = superword.load_counts(tmp_path / "big.swc", backend=backend)
    assert big.most_common() == [("a", 2**64 - 1)]
    with pytest.raises(ValueError, match="overflow"):
        superword.merge_counts([tmp_path / "big.swc", tmp_path / "one.swc"], backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_counts_whose_pair_counts_could_overflow_are_refused(tmp_path, backend):
    # each count fits in 64 bits, but a pair's count is a sum of counts times occurrences: a
    # pretoken of 1,000 bytes counted 2^62 times made the Rust core's pair counts wrap, and
    # phase 1 merged without end until memory ran out
    too_large = "the counts are too large to train on"
    cases = {
        "long.swc": _file({"a" * 1000: 2**62}, {}),
        "runs.swc": _file({"a": 2**62, "b": 2**62}, {("a", "b"): 2**62}),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=rf"{name}: {too_large}"):
            superword.load_counts(tmp_path / name, backend=backend)
        with pytest.raises(ValueError, match=rf"{name}: {too_large}"):
            superword.train(counts=str(tmp_path / name), vocab_size=300, algorithm="bpe", backend=backend)
    # two files that are fine alone, but not summed: 2 bytes x 3 * 2^61, twice
    (tmp_path / "half.swc").write_bytes(_file({"ab": 3 * 2**61}, {}))
    half = superword.load_counts(tmp_path / "half.swc", backend=backend)
    assert half.most_common() == [("ab", 3 * 2**61)]
    with pytest.raises(ValueError, match=too_large):
        superword.merge_counts([tmp_path / "half.swc", tmp_path / "half.swc"], backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_runs_that_hold_a_pretoken_more_often_than_it_is_counted_are_refused(tmp_path, backend):
    # every occurrence of a pretoken lies in at most one run; a crafted file broke the rule
    # and training made a superword of parts that were never tokens
    (tmp_path / "runs.swc").write_bytes(_file({" on": 2, " of": 9}, {(" on", " on"): 1, (" of", " on"): 1}))
    with pytest.raises(ValueError, match=r'runs\.swc: corrupted: pretoken 1 \(" on"\) is counted 2 times, '
                                         r"but the runs hold it 3 times"):
        superword.train(counts=str(tmp_path / "runs.swc"), vocab_size=300, backend=backend)
    # at the limit it is fine: both occurrences in runs
    (tmp_path / "ok.swc").write_bytes(_file({" on": 2, " of": 9}, {(" on", " on"): 1}))
    assert superword.load_counts(tmp_path / "ok.swc", backend=backend).most_common() == [(" of", 9), (" on", 2)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_count_file_whose_pattern_does_not_compile_is_named_when_read(tmp_path, backend):
    # (found only by training before, in words that did not name the file)
    cases = {"open.swc": ("(unclosed", "pattern is not a valid regular expression"),
             "huge.swc": ("x{999999999}", "pattern is too large to compile"),
             "posix.swc": ("[[:alpha:]]+|.", "pattern uses a POSIX class")}
    for name, (pattern, message) in cases.items():
        settings = countfile.CountSettings(pattern, None, None, superword.reference.pretokenize.MERGE_PATTERN, True)
        (tmp_path / name).write_bytes(countfile.to_bytes(ref_count.Counts({"ab": 3}, {}, 1, 3), settings))
        with pytest.raises(ValueError, match=rf"{name}: {message}"):
            superword.load_counts(tmp_path / name, backend=backend)
        with pytest.raises(ValueError, match=rf"{name}: {message}"):
            superword.train(counts=str(tmp_path / name), vocab_size=300, backend=backend)


def _with_crc(data: bytes) -> bytes:
    return data[:-4] + struct.pack("<I", zlib.crc32(data[:-4]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_bad_count_file_gets_an_error_naming_it_and_what_is_wrong(tmp_path, backend):
    good = counted("taylorswift_400.jsonl", True)
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x10
    newer = bytearray(good)
    newer[8] = 2
    # a body whose checksum is right but that claims more pretokens than it has bytes
    hostile = bytearray(_file({"a": 1, "b": 1}, {}))
    at = hostile.index(b"\x02\x01a")  # the number of pretokens, then the first one
    hostile[at:at + 1] = b"\xff\xff\xff\xff\x0f"
    hostile[12:20] = struct.pack("<Q", len(hostile) - 24)
    cases = {
        "cut.swc": (good[:len(good) // 3], "truncated"),
        "flipped.swc": (bytes(flipped), "checksum mismatch"),
        "newer.swc": (_with_crc(bytes(newer)), "version 2, newer than this superword reads"),
        "model.swc": (b"# BoundlessBPE v2\n" * 3, "not a superword count file"),
        "hostile.swc": (_with_crc(bytes(hostile)), "more than the bytes left can hold"),
        "trailing.swc": (_with_crc(good[:12] + struct.pack("<Q", len(good) - 23) + good[20:-4] + b"\0\0\0\0\0"),
                         "bytes after the last section"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=rf"{name}: .*{message}"):
            superword.load_counts(tmp_path / name, backend=backend)
    with pytest.raises(FileNotFoundError, match="absent.swc"):
        superword.load_counts(tmp_path / "absent.swc", backend=backend)


def test_every_truncation_and_byte_flip_of_a_small_file_is_refused_by_both_backends(tmp_path):
    data = _file({"the": 3, " cat": 2, ",": 1}, {("the", " cat"): 2})
    for n in range(len(data)):
        for backend in BACKENDS:
            (tmp_path / "x.swc").write_bytes(data[:n])
            with pytest.raises(ValueError, match="x.swc"):
                superword.load_counts(tmp_path / "x.swc", backend=backend)
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x01
        for backend in BACKENDS:
            (tmp_path / "x.swc").write_bytes(bytes(bad))
            with pytest.raises(ValueError, match="x.swc"):
                superword.load_counts(tmp_path / "x.swc", backend=backend)


def test_training_refuses_settings_that_contradict_the_counts():
    counts = superword.count(_parts(4)[0], script_aware=False)
    with pytest.raises(ValueError, match="counted with pattern"):
        superword.train(counts=counts, vocab_size=400, pattern=r"\w+|\s+|[^\w\s]+")
    aware = superword.count(_parts(4)[0])
    with pytest.raises(ValueError, match="script_aware True, but train was given False"):
        superword.train(counts=aware, vocab_size=400, script_aware=False)
    with pytest.raises(ValueError, match="counted with scripts"):
        superword.train(counts=aware, vocab_size=400, scripts=["Han"])
    with pytest.raises(ValueError, match="inputs or counts, not both"):
        superword.train(["text"], vocab_size=400, counts=aware)
    # the counts' own settings go into the model
    tok = superword.train(counts=counts, vocab_size=400, algorithm="bpe")
    assert tok.pattern == counts.pattern and not tok._script_aware()


@pytest.mark.parametrize("backend", BACKENDS)
def test_counts_without_runs_train_bpe_and_say_why_not_the_others(backend):
    texts = _parts(4)[0]
    counts = superword.count(texts, runs=False, backend=backend)
    assert counts.num_runs == 0 and not counts.with_runs
    assert (superword.train(counts=counts, vocab_size=500, algorithm="bpe", backend=backend).model_text()
            == superword.train(texts, 500, "bpe", backend=backend).model_text())
    with pytest.raises(ValueError, match="BoundlessBPE needs the letter runs.*runs=False"):
        superword.train(counts=counts, vocab_size=500, backend=backend)


def test_min_count_drops_rare_pretokens_and_runs_the_same_in_both_backends():
    texts = _parts(2)[0]
    exact = superword.count(texts)
    pruned = {b: superword.count(texts, min_count=3, backend=b) for b in BACKENDS}
    assert pruned["rust"].to_bytes() == pruned["reference"].to_bytes()
    kept = pruned["rust"]
    assert 0 < kept.num_words < exact.num_words and kept.num_runs < exact.num_runs
    assert min(c for _, c in kept.most_common()) >= 3
    assert kept.most_common() == [(w, c) for w, c in exact.most_common() if c >= 3]
    # train(min_count=) is training on the pruned counts
    assert (superword.train(texts, 800, min_count=3).model_text()
            == superword.train(counts=kept, vocab_size=800).model_text())
    with pytest.raises(ValueError, match="min_count must be at least 1"):
        superword.count(texts, min_count=0)


def test_the_command_line_counts_merges_and_trains_from_counts(tmp_path):
    from superword.cli import main
    a, b = (tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    lines = (GOLDEN / "multi_1230.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    a.write_text("".join(lines[:600]), encoding="utf-8")
    b.write_text("".join(lines[600:]), encoding="utf-8")
    assert main(["count", str(a), "-o", str(tmp_path / "a.swc"), "-q"]) == 0
    assert main(["count", str(b), "-o", str(tmp_path / "b.swc"), "-q", "--threads", "1"]) == 0
    assert main(["merge-counts", str(tmp_path / "a.swc"), str(tmp_path / "b.swc"), "-o", str(tmp_path / "c.swc")]) == 0
    assert main(["train", "--from-counts", str(tmp_path / "c.swc"), "--vocab-size", "900", "--algorithm",
                 "superbpe", "--supermerges", "100", "-o", str(tmp_path / "m.model"), "-q"]) == 0
    assert main(["train", str(a), str(b), "--vocab-size", "900", "--algorithm", "superbpe", "--supermerges",
                 "100", "-o", str(tmp_path / "n.model"), "-q", "--no-compare"]) == 0
    assert (tmp_path / "m.model").read_bytes() == (tmp_path / "n.model").read_bytes()
    (tmp_path / "c.swc").write_bytes((tmp_path / "c.swc").read_bytes()[:-1])
    assert main(["train", "--from-counts", str(tmp_path / "c.swc"), "-o", str(tmp_path / "m.model")]) == 2


@pytest.mark.parametrize("backend", ["rust", "reference"])
def test_rows_of_dicts_count_as_their_text_field_in_both_backends(backend):
    """Rows as a `datasets` dataset yields them (dicts): the text of `text_field` is counted."""
    texts = ["hello world", "the cat sat", "hello the cat"]
    rows = [{"body": t, "id": i} for i, t in enumerate(texts)]
    counted = superword.count(rows, text_field="body", backend=backend)
    assert counted.to_bytes() == superword.count(texts, backend=backend).to_bytes()
    with pytest.raises(ValueError, match="row 0 of inputs has no 'text' field"):
        superword.count(rows, backend=backend)
