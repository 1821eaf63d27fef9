"""Training BoundlessBPE and SuperBPE in two passes, shard by shard (the path of
``train(executor="ray")``, run here without Ray): pass 1 counts pretokens and trains the word
model, pass 2 turns each shard into supermerge candidates that are summed.  The model is the
golden one, byte for byte, however the corpus is cut."""
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
@pytest.mark.parametrize("name", ["boundless", "super"])
def test_two_passes_over_shards_give_the_golden_model(many_shards, folder, corpus, vocab, aware, m, tau, blowup,
                                                      greedy, name):
    path = need(GOLDEN / corpus)
    assert len(_ray.plan([str(path)], 16)) >= 12
    if name == "boundless":
        tok = two_pass(path, vocab, "boundless", greedy_split=greedy, tau=tau, blowup=blowup, script_aware=aware)
    else:
        tok = two_pass(path, vocab + m, "superbpe", supermerges=m, greedy_split=greedy, tau=tau, blowup=blowup,
                       script_aware=aware)
    assert tok.model_text().encode("utf-8") == need(GOLDEN / folder / f"{name}.model").read_bytes()
    assert tok.provenance["settings"]["passes"] == 2


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
    assert tok.provenance["settings"]["passes"] == 2
    assert tok.model_text() == superword.train(files, 600, algorithm, **extra).model_text()
