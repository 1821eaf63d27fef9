"""Training BoundlessBPE and SuperBPE in two passes, shard by shard (the path of
``train(executor="ray")``, run here without Ray): pass 1 counts pretokens and trains the word
model, pass 2 turns each shard into supermerge candidates that are summed (or, for BoundlessBPE
without the greedy split, into the strong pairs and then the segments cut with them, a third
read of the text).  The model is the golden one, byte for byte, however the corpus is cut."""
from __future__ import annotations

import json
import time

import pytest
import superword
from helpers import GOLDEN, need
from superword import _core, _ray, _train
from test_golden import FOLDER_ARGS, FOLDERS


def two_pass(path, vocab_size, algorithm, *, supermerges=None, greedy_split=False, tau=1.1, blowup=False,
             script_aware=True, threads=2):
    """``train(path, ...)`` through the two-pass path, shard by shard in this process."""
    options = dict(vocab_size=vocab_size, algorithm=algorithm, supermerges=supermerges,
                   greedy_split=greedy_split, tau=tau, blowup=blowup, threads=threads, progress=None)
    return _train._train_two_pass(path, options, script_aware, None, None, None, "text", None, None,
                                  time.perf_counter(), local=True)


@pytest.fixture
def many_shards(monkeypatch):
    """Cut every golden corpus into a dozen or more byte ranges (a tree of merges two deep)."""
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 4_000)
    monkeypatch.setattr(_ray, "RANGES_PER_CPU", 8)


@pytest.mark.parametrize(FOLDER_ARGS, [pytest.param(*f, id=f[0]) for f in FOLDERS])
@pytest.mark.parametrize("name,cut", [("boundless", True), ("boundless", False), ("super", True)])
def test_two_passes_over_shards_give_the_golden_model(many_shards, monkeypatch, folder, corpus, vocab, aware, m,
                                                      tau, blowup, greedy, name, cut):
    path = need(GOLDEN / corpus)
    assert len(_ray.plan([str(path)], 16)) >= 12
    monkeypatch.setattr(_ray, "CUT_IN_TASKS", cut)
    if name == "boundless":
        tok = two_pass(path, vocab, "boundless", greedy_split=greedy, tau=tau, blowup=blowup, script_aware=aware)
    else:
        tok = two_pass(path, vocab + m, "superbpe", supermerges=m, greedy_split=greedy, tau=tau, blowup=blowup,
                       script_aware=aware)
    assert tok.model_text().encode("utf-8") == need(GOLDEN / folder / f"{name}.model").read_bytes()
    # the text is read three times when the tasks cut (BoundlessBPE without the greedy split)
    assert tok.provenance["settings"]["passes"] == (3 if cut and name == "boundless" and not greedy else 2)


def test_the_model_does_not_depend_on_the_threads_or_the_cut(monkeypatch):
    path = need(GOLDEN / "taylorswift_all.jsonl")
    expected = superword.train(path, 1200, "superbpe", supermerges=150).model_text()
    for min_bytes, threads in [(3_000, 1), (20_000, 2), (1 << 30, 3)]:
        monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", min_bytes)
        assert two_pass(path, 1200, "superbpe", supermerges=150, threads=threads).model_text() == expected


def shard_tables(path, word_model, pieces):
    """The candidate tables of ``pieces`` byte ranges of ``path``, and of the whole file."""
    size = path.stat().st_size
    ranges = _ray.plan([str(path)], pieces)
    tables = [_core.Candidates.from_bytes(_ray._candidates_part(p, a, b, word_model, "text"), f"part {i}")
              for i, (p, a, b) in enumerate(ranges)]
    whole = _core.candidates_files([str(path)], "text", word_model, threads=2, progress=None)
    assert ranges[-1][2] == size
    return tables, whole


def phase_one(path, vocab=1500, algorithm="boundless", supermerges=None):
    counts = superword.count(path, runs=False)
    return _core.train_phase_one(counts._impl, vocab_size=vocab, algorithm=algorithm, supermerges=supermerges,
                                 greedy_split=False, tau=1.1, blowup=False, threads=2, progress=None)


def test_shard_tables_sum_to_the_whole_corpus_table_in_any_grouping(monkeypatch):
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 10_000)
    path = need(GOLDEN / "multi_1230.jsonl")
    one = phase_one(path)
    tables, whole = shard_tables(path, one.word_model, 7)
    assert len(tables) >= 6 and all(t.num_candidates > 0 for t in tables)
    names = [f"t{i}" for i in range(len(tables))]
    flat = _core.merge_candidates(tables, names)
    assert flat.to_bytes() == whole.to_bytes()
    # grouped otherwise, in another order
    left = _core.merge_candidates(tables[:3][::-1], names[:3])
    right = _core.merge_candidates(tables[3:], names[3:])
    assert _core.merge_candidates([right, left], ["r", "l"]).to_bytes() == whole.to_bytes()
    assert whole.documents == sum(t.documents for t in tables) == 1230
    # fewer distinct candidates than the shards hold together: the same ones recur
    assert whole.num_candidates < sum(t.num_candidates for t in tables)


def test_a_table_round_trips_and_bad_bytes_name_the_table():
    path = need(GOLDEN / "taylorswift_400.jsonl")
    one = phase_one(path, 600)
    table = _core.candidates_files([str(path)], "text", one.word_model, threads=1, progress=None)
    data = table.to_bytes()
    assert _core.Candidates.from_bytes(data, "t").to_bytes() == data
    with pytest.raises(ValueError, match="shard 3: not a candidate table"):
        _core.Candidates.from_bytes(b"superword counts", "shard 3")
    for bad in [data[:-1], data + b"\x00", data[:40]]:
        with pytest.raises(ValueError, match="shard 3: not a valid candidate table"):
            _core.Candidates.from_bytes(bad, "shard 3")


def test_tables_of_another_word_model_are_refused():
    path = need(GOLDEN / "taylorswift_400.jsonl")
    small, large = phase_one(path, 600), phase_one(path, 700)
    a = _core.candidates_files([str(path)], "text", small.word_model, threads=1, progress=None)
    b = _core.candidates_files([str(path)], "text", large.word_model, threads=1, progress=None)
    with pytest.raises(ValueError, match="part b was made with another word model than part a"):
        _core.merge_candidates([a, b], ["part a", "part b"])
    with pytest.raises(ValueError, match="another word model"):
        small.finish(b.to_bytes(), "b", threads=1, progress=None)
    # a word model is needed to cut candidates, not a superword model
    boundless = superword.train(path, 600).model_text()
    with pytest.raises(ValueError, match="the word model is a boundless model"):
        _core.candidates_files([str(path)], "text", boundless, threads=1, progress=None)


def test_inputs_that_changed_between_the_passes_are_refused(tmp_path):
    lines = need(GOLDEN / "taylorswift_400.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(lines))
    one = phase_one(path, 600)
    path.write_bytes(b"".join(lines[:-1]))  # a document less in pass 2
    table = _core.candidates_files([str(path)], "text", one.word_model, threads=1, progress=None)
    with pytest.raises(ValueError, match="pass 2 read 399 documents .* pass 1 400 .* the inputs changed"):
        one.finish(table.to_bytes(), "pass 2", threads=1, progress=None)


def test_phase_one_is_finished_once_and_only_for_superword_algorithms():
    path = need(GOLDEN / "taylorswift_400.jsonl")
    one = phase_one(path, 600)
    table = _core.candidates_files([str(path)], "text", one.word_model, threads=1, progress=None)
    tok = superword.Tokenizer(one.finish(table.to_bytes(), "pass 2", threads=1, progress=None), "rust")
    assert tok.model_text() == superword.train(path, 600).model_text()
    with pytest.raises(ValueError, match="already finished"):
        one.finish(table.to_bytes(), "pass 2", threads=1, progress=None)
    with pytest.raises(ValueError, match="two passes is for BoundlessBPE and SuperBPE"):
        phase_one(path, 600, "bpe")


def test_min_count_is_refused_on_the_two_pass_path():
    path = need(GOLDEN / "taylorswift_400.jsonl")
    options = dict(vocab_size=600, algorithm="boundless", supermerges=None, greedy_split=False, tau=1.1,
                   blowup=False, threads=1, progress=None)
    with pytest.raises(ValueError, match="min_count does not apply to BoundlessBPE on Ray"):
        _train._train_two_pass(path, options, True, None, None, None, "text", 2, None, 0.0, local=True)


@pytest.mark.parametrize("algorithm", ["boundless", "superbpe"])
def test_a_streaming_dataset_trains_in_two_passes_shard_by_shard(tmp_path, algorithm):
    """A ``datasets.IterableDataset`` is read twice, a task per shard in each pass: the model of
    training on the same documents in one process."""
    datasets = pytest.importorskip("datasets")
    lines = [json.loads(row)["text"] for row in need(GOLDEN / "taylorswift_400.jsonl").open(encoding="utf-8")]
    files = []
    for i in range(3):
        path = tmp_path / f"part{i}.jsonl"
        path.write_text("".join(json.dumps({"text": t}) + "\n" for t in lines[i::3]), encoding="utf-8")
        files.append(str(path))
    stream = datasets.load_dataset("json", data_files=files, split="train", streaming=True)
    assert stream.num_shards == 3
    extra = {"supermerges": 60} if algorithm == "superbpe" else {}
    tok = two_pass(stream, 600, algorithm, **extra)
    assert tok.provenance["settings"]["passes"] == (3 if algorithm == "boundless" else 2)
    assert tok.model_text() == superword.train(files, 600, algorithm, **extra).model_text()


def segment_tables(path, one, pieces):
    """The strong pairs of ``path`` from the pair tables of ``pieces`` byte ranges (summed by
    partition), and the segment tables of the ranges cut with them."""
    ranges = _ray.plan([str(path)], pieces)
    parts = [[_core.Pairs.from_bytes(b, f"part {i}") for b in _ray._pairs_part(p, a, e, one.word_model, "text", 3)]
             for i, (p, a, e) in enumerate(ranges)]
    names = [f"part {i}" for i in range(len(parts))]
    sums = [_core.merge_pairs([t[k] for t in parts], names).kept_above(one.threshold) for k in range(3)]
    strong = one.strong_pairs(sums, ["p0", "p1", "p2"])
    tables = [_core.Segments.from_bytes(_ray._segments_part(p, a, e, one.word_model, "text", strong.to_bytes()),
                                        f"part {i}") for i, (p, a, e) in enumerate(ranges)]
    return strong, tables


def test_strong_pairs_are_those_of_the_whole_corpus_and_segments_sum_in_any_grouping(monkeypatch):
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 10_000)
    path = need(GOLDEN / "multi_1230.jsonl")
    one = phase_one(path)
    assert one.cuts_in_tasks and one.threshold > 0
    strong, tables = segment_tables(path, one, 7)
    assert len(tables) >= 6
    # the strong pairs of the shards summed = those of the whole file, in one partition
    whole_pairs = _core.pairs_files([str(path)], "text", one.word_model, 1, threads=2, progress=None)[0]
    assert whole_pairs.num_pairs > strong.num_pairs > 0
    assert one.strong_pairs([whole_pairs.kept_above(one.threshold)], ["w"]).to_bytes() == strong.to_bytes()
    whole = _core.segments_files([str(path)], "text", one.word_model, strong, threads=2, progress=None)
    names = [f"t{i}" for i in range(len(tables))]
    assert _core.merge_segments(tables, names).to_bytes() == whole.to_bytes()
    left = _core.merge_segments(tables[:3][::-1], names[:3])
    right = _core.merge_segments(tables[3:], names[3:])
    assert _core.merge_segments([right, left], ["r", "l"]).to_bytes() == whole.to_bytes()
    assert whole.documents == 1230
    # fewer segments than uncut candidates
    candidates = _core.candidates_files([str(path)], "text", one.word_model, threads=2, progress=None)
    assert 0 < whole.num_segments < candidates.num_candidates
    tok = superword.Tokenizer(one.finish_segments(whole.to_bytes(), "s", threads=2, progress=None), "rust")
    assert tok.model_text() == superword.train(path, 1500).model_text()


def test_pair_and_segment_tables_round_trip_and_bad_ones_are_refused(monkeypatch):
    path = need(GOLDEN / "taylorswift_400.jsonl")
    one, other = phase_one(path, 600), phase_one(path, 700)
    pairs = _core.pairs_files([str(path)], "text", one.word_model, 2, threads=1, progress=None)
    data = pairs[0].to_bytes()
    assert _core.Pairs.from_bytes(data, "p").to_bytes() == data and pairs[0].threshold is None
    for bad in [data[:-1], data + b"\x00", data[:40]]:
        with pytest.raises(ValueError, match="pairs 3: not a valid pair table"):
            _core.Pairs.from_bytes(bad, "pairs 3")
    with pytest.raises(ValueError, match="pairs 3: not a pair table"):
        _core.Pairs.from_bytes(b"superword candidates 1\n", "pairs 3")
    kept = [p.kept_above(one.threshold) for p in pairs]
    with pytest.raises(ValueError, match="b keeps only the pairs above a threshold"):
        _core.merge_pairs([pairs[0], kept[1]], ["a", "b"])
    with pytest.raises(ValueError, match="already keeps only pairs above"):
        kept[0].kept_above(3)
    # a partition twice, a partition not summed over the whole corpus, another threshold
    with pytest.raises(ValueError, match="the same pair is in two of these partitions"):
        one.strong_pairs([kept[0], kept[0]], ["a", "b"])
    lines = path.read_bytes().splitlines(keepends=True)
    with pytest.raises(ValueError, match="another word model"):
        other.strong_pairs(kept, ["a", "b"])
    with pytest.raises(ValueError, match="kept above"):
        one.strong_pairs([p.kept_above(one.threshold + 1) for p in pairs], ["a", "b"])
    strong = one.strong_pairs(kept, ["a", "b"])
    with pytest.raises(ValueError, match="strong pairs were made with another word model"):
        _core.segments_files([str(path)], "text", other.word_model, strong, threads=1, progress=None)
    with pytest.raises(ValueError, match="a pair table kept above a threshold"):
        _core.segments_files([str(path)], "text", one.word_model, pairs[0], threads=1, progress=None)
    table = _core.segments_files([str(path)], "text", one.word_model, strong, threads=1, progress=None)
    data = table.to_bytes()
    assert _core.Segments.from_bytes(data, "s").to_bytes() == data
    for bad in [data[:-1], data + b"\x00", data[:40]]:
        with pytest.raises(ValueError, match="segs: not a valid segment table"):
            _core.Segments.from_bytes(bad, "segs")
    with pytest.raises(ValueError, match="another word model"):
        other.finish_segments(data, "s", threads=1, progress=None)
    assert len(lines) == 400


def test_segments_of_changed_inputs_or_for_the_wrong_phase_one_are_refused(tmp_path):
    lines = need(GOLDEN / "taylorswift_400.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(lines))
    one = phase_one(path, 600)
    path.write_bytes(b"".join(lines[:-1]))  # a document less in pass 2
    pairs = _core.pairs_files([str(path)], "text", one.word_model, 1, threads=1, progress=None)
    with pytest.raises(ValueError, match="pass 2 read 399 documents .* pass 1 400 .* the inputs changed"):
        one.strong_pairs([pairs[0].kept_above(one.threshold)], ["p"])
    # SuperBPE and the greedy split need the uncut candidates
    sup = phase_one(path, 660, "superbpe", 60)
    assert not sup.cuts_in_tasks
    counts = superword.count(path, runs=False)
    greedy = _core.train_phase_one(counts._impl, vocab_size=600, algorithm="boundless", supermerges=None,
                                   greedy_split=True, tau=1.1, blowup=False, threads=1, progress=None)
    assert not greedy.cuts_in_tasks
    table = _core.segments_files([str(path)], "text", one.word_model,
                                 _core.Pairs.from_bytes(pairs[0].kept_above(one.threshold).to_bytes(), "p"),
                                 threads=1, progress=None)
    with pytest.raises(ValueError, match="segments cut in the tasks are for BoundlessBPE without the greedy"):
        greedy.finish_segments(table.to_bytes(), "s", threads=1, progress=None)


NO_SPLIT = [pytest.param(*f, id=f[0]) for f in FOLDERS if not f[-1]]


@pytest.mark.parametrize(FOLDER_ARGS, NO_SPLIT)
@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_phase_two_in_parts_gives_the_golden_model(many_shards, monkeypatch, folder, corpus, vocab, aware, m, tau,
                                                   blowup, greedy, parts):
    """The segments split by hash over ``parts`` holders, the driver holding only the pair
    counts: the golden BoundlessBPE model, byte for byte (PickyBPE included)."""
    monkeypatch.setattr(_ray, "PHASE2_PARTS", parts)
    tok = two_pass(need(GOLDEN / corpus), vocab, "boundless", tau=tau, blowup=blowup, script_aware=aware)
    assert tok.model_text().encode("utf-8") == need(GOLDEN / folder / "boundless.model").read_bytes()
    assert tok.provenance["settings"]["phase2_parts"] == parts
    recorded = _ray.LAST_PHASE2
    assert recorded["parts"] == parts and len(recorded["parts_sizes"]) == parts


def test_phase_two_on_the_driver_is_still_there_and_recorded(monkeypatch):
    path = need(GOLDEN / "multi_1230.jsonl")
    monkeypatch.setattr(_ray, "PHASE2_PARTS", 0)
    tok = two_pass(path, 1500, "boundless")
    assert tok.model_text().encode("utf-8") == need(GOLDEN / "multi_1230_v1500" / "boundless.model").read_bytes()
    assert tok.provenance["settings"]["phase2_parts"] == 0
    # by default, as many parts as the map tasks of pass 2, at least 2
    monkeypatch.setattr(_ray, "PHASE2_PARTS", None)
    assert two_pass(path, 1500, "boundless").provenance["settings"]["phase2_parts"] >= 2
    # the other paths have none
    assert two_pass(path, 1500 + 107, "superbpe", supermerges=107).provenance["settings"]["phase2_parts"] == 0


def test_phase_two_parts_refuse_bad_bytes_and_misuse():
    path = need(GOLDEN / "taylorswift_400.jsonl")
    one = phase_one(path, 600)
    driver = _core.Phase2Driver(one)
    with pytest.raises(ValueError, match="already finished"):
        _core.Phase2Driver(one)
    whole = segment_tables(path, phase_one(path, 600), 1)[1][0]
    table = bytes(whole.to_bytes())
    source = driver.source
    with pytest.raises(ValueError, match="not a segment table"):
        _core.split_segments(b"nonsense", "t", source, 2)
    with pytest.raises(ValueError, match="between 1 and"):
        _core.split_segments(table, "t", source, 0)
    with pytest.raises(ValueError, match="source of a phase 1"):
        _core.split_segments(table, "t", b"x", 2)
    other = _core.Phase2Driver(phase_one(path, 500)).source
    with pytest.raises(ValueError, match="another word model"):
        _core.split_segments(table, "t", other, 2)
    parts = _core.split_segments(table, "t", source, 3)
    with pytest.raises(ValueError, match="not a phase-2 part"):
        _core.Phase2Part(table, "p")
    with pytest.raises(ValueError, match="not a valid phase-2 part"):
        _core.Phase2Part(parts[0][:-1], "p")
    held = [_core.Phase2Part(p, f"p{k}") for k, p in enumerate(parts)]
    # every segment is in one part
    assert sum(h.num_segments for h in held) == whole.num_segments
    with pytest.raises(ValueError, match="not running"):
        driver.next()
    with pytest.raises(ValueError, match="multiple of 16"):
        driver.start([b"123"])
    driver.start([h.pair_counts() for h in held])
    with pytest.raises(ValueError, match="started already"):
        driver.start([])
    with pytest.raises(ValueError, match="multiple of 16"):
        driver.merged([(False, b"1")])
