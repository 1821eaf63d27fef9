"""Counting on Ray (a local 2-CPU cluster, started once for the module): the same counts and
the same model as counting here, even when a worker dies mid-count."""
from __future__ import annotations

import gzip
import os
import sys
import time

import pytest
import superword
from helpers import GOLDEN, need
from superword import _ray


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def corpus(tmp_path):
    """A text file big enough to be cut into byte ranges, and a compressed one (one task)."""
    lines = need(GOLDEN / "multi_1230.jsonl").read_bytes().splitlines(keepends=True)
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"".join(lines[:1000]))
    small = tmp_path / "small.jsonl.gz"
    small.write_bytes(gzip.compress(b"".join(lines[1000:])))
    return [big, small]


def test_ray_counts_and_trains_byte_identically_to_the_local_run(ray_cluster, corpus, monkeypatch, tmp_path):
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 50_000)
    tasks = _ray.plan([str(p) for p in corpus], 4)
    assert len([t for t in tasks if t[0] == str(corpus[0])]) >= 4  # the big file is spread
    local = superword.count(corpus)
    assert superword.count(corpus, executor="ray").to_bytes() == local.to_bytes()
    assert (superword.train(corpus, 900, "superbpe", supermerges=100, executor="ray").model_text()
            == superword.train(corpus, 900, "superbpe", supermerges=100).model_text())
    from superword.cli import main
    assert main(["count", *map(str, corpus), "--ray", "-o", str(tmp_path / "ray.swc"), "-q"]) == 0
    assert (tmp_path / "ray.swc").read_bytes() == local.to_bytes()
    assert main(["train", *map(str, corpus), "--ray", "--vocab-size", "700", "-o", str(tmp_path / "ray.model"),
                 "-q", "--no-compare"]) == 0
    assert (tmp_path / "ray.model").read_text(encoding="utf-8") == superword.train(corpus, 700).model_text()


def test_a_worker_killed_mid_count_is_retried_and_the_counts_stay_exact(ray_cluster, corpus, monkeypatch, tmp_path):
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 50_000)
    marker = tmp_path / "killed"
    local = superword.count(corpus)
    counts = _ray.count(corpus, pattern=local.pattern, script_pattern=local.script_pattern, scripts=local.scripts,
                        text_field="text", runs=True, address=None, backend="rust", kill_marker=str(marker))
    assert marker.exists()  # the first task's worker did die
    assert counts.to_bytes() == local.to_bytes()


def test_ray_counting_reports_tasks_done_of_tasks_planned(ray_cluster, corpus, monkeypatch, capsys):
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 50_000)
    seen: list[tuple[str, int, int]] = []
    counts = superword.count(corpus, executor="ray", progress=lambda *report: seen.append(report))
    assert counts.to_bytes() == superword.count(corpus).to_bytes()
    maps = len(_ray.plan([str(p) for p in corpus], 2 * 2))
    merges, tables = 0, maps
    while tables > 1:  # the reduce tree, FAN_IN tables per task
        merges += tables // _ray.FAN_IN + (tables % _ray.FAN_IN > 1)
        tables = -(-tables // _ray.FAN_IN)
    assert {stage for stage, _, _ in seen} == {"ray_tasks"}
    assert {total for _, _, total in seen} == {maps + merges}
    assert [done for _, done, _ in seen] == list(range(maps + merges + 1))
    # and the command line shows it as a line of progress
    from superword.cli import main
    assert main(["count", *map(str, corpus), "--ray", "-o", str(corpus[0].parent / "c.swc")]) == 0
    assert "Ray count and merge tasks" in capsys.readouterr().err


def test_an_unreachable_cluster_is_a_clear_error_not_a_hang(corpus):
    pytest.importorskip("ray")
    start = time.perf_counter()
    with pytest.raises(ConnectionError, match=r"cannot reach the Ray cluster at 127\.0\.0\.1:1 "):
        superword.count(corpus, executor="ray", ray_address="127.0.0.1:1")
    assert time.perf_counter() - start < 30


def test_missing_ray_names_the_extra_to_install(corpus, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'superword\[ray\]'"):
        superword.train(corpus, 500, executor="ray")


def test_ray_needs_files_not_documents_in_memory():
    with pytest.raises(TypeError, match="file paths"):
        superword.count(["some text", "more text"], executor="ray")


@pytest.mark.parametrize("suffix", [".txt", ".jsonl"])
def test_byte_ranges_cut_at_line_ends_give_the_documents_of_the_whole_file(tmp_path, monkeypatch, suffix):
    from superword import _inputs
    if suffix == ".txt":
        lines = ["\ufeffthe first line", "crlf\r", "", "a lone \r inside", "  spaces  ", "última"] * 40
        data = "\n".join(lines) + "\nno newline at the end"
    else:
        lines = ['{"text": "doc ' + str(i) + ' \\u00e9"}' if i % 7 else "  " for i in range(300)]
        data = "\r\n".join(lines) + "\r\n"
    path = tmp_path / f"f{suffix}"
    path.write_bytes(data.encode("utf-8"))
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 100)
    ranges = _ray.plan([str(path)], 9)
    assert len(ranges) >= 9 and ranges[0][1] == 0 and ranges[-1][2] == path.stat().st_size
    assert all(a[2] == b[1] for a, b in zip(ranges, ranges[1:]))
    pieces = [doc for p, start, end in ranges for doc in _inputs.read_range(p, start, end)]
    assert pieces == list(_inputs.read_file(str(path)))


def test_a_tokenizer_travels_to_ray_tasks_and_gives_the_same_ids(ray_cluster):
    texts = [f"the cat sat on the mat {i} times, and then the dog" for i in range(3000)]
    tok = superword.train(texts, 400, "superbpe", supermerges=40)
    tok.register_special_tokens(["<|end|>"])
    texts = [t + "<|end|>" for t in texts]

    @ray_cluster.remote
    def encode(tokenizer, chunk):
        return tokenizer.encode_batch(chunk, allowed_special="all")

    shared = ray_cluster.put(tok)  # the tokenizer pickled once, into the object store
    parts = ray_cluster.get([encode.remote(shared, texts[i:i + 1000]) for i in range(0, 3000, 1000)])
    assert sum(parts, []) == tok.encode_batch(texts, allowed_special="all")


def test_boundless_and_superbpe_on_ray_train_in_two_passes_and_give_the_golden_models(ray_cluster, monkeypatch):
    from test_golden import FOLDERS
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 4_000)
    monkeypatch.setattr(_ray, "RANGES_PER_CPU", 4)
    seen: list[tuple[str, int, int]] = []
    for folder, corpus, vocab, aware, m, tau, blowup, greedy in FOLDERS:
        path = need(GOLDEN / corpus)
        kw = dict(script_aware=aware, tau=tau, blowup=blowup, greedy_split=greedy, executor="ray")
        boundless = superword.train(path, vocab, "boundless", progress=lambda *r: seen.append(r), **kw)
        assert boundless.model_text().encode() == need(GOLDEN / folder / "boundless.model").read_bytes(), folder
        assert boundless.provenance["settings"]["passes"] == (2 if greedy else 3)
        sup = superword.train(path, vocab + m, "superbpe", supermerges=m, **kw)
        assert sup.model_text().encode() == need(GOLDEN / folder / "super.model").read_bytes(), folder
    # both passes were spread: count tasks, then candidate tasks
    stages = [stage for stage, _, _ in seen]
    assert stages.index("ray_tasks") < stages.index("ray_candidate_tasks")
    assert max(total for stage, _, total in seen if stage == "ray_candidate_tasks") > 8


def test_a_worker_killed_in_the_second_pass_is_retried_and_the_model_stays_exact(ray_cluster, monkeypatch,
                                                                                   tmp_path):
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 20_000)
    path = need(GOLDEN / "multi_1230.jsonl")
    marker = tmp_path / "killed"
    local = superword.count(path)
    impl, _, passes, _ = _ray.train_two_pass(path, pattern=local.pattern, script_pattern=local.script_pattern,
                                  scripts=local.scripts, text_field="text", vocab_size=1500, algorithm="boundless",
                                  supermerges=None, greedy_split=False, tau=1.1, blowup=False, threads=1,
                                  progress=None, address=None, kill_marker=str(marker))
    assert marker.exists() and passes == 3  # a segment task's worker did die
    # and so did the actor of phase 2's first part, at its fifth supermerge: started again, it
    # replayed the four before
    assert (tmp_path / "killed.part").exists()
    assert (superword.Tokenizer(impl, "rust").model_text().encode()
            == need(GOLDEN / "multi_1230_v1500" / "boundless.model").read_bytes())


def test_min_count_on_ray_prunes_bpe_counts_but_is_refused_for_the_two_pass_path(ray_cluster, corpus):
    with pytest.raises(ValueError, match="min_count does not apply to SuperBPE on Ray"):
        superword.train(corpus, 900, "superbpe", supermerges=100, executor="ray", min_count=2)
    tok = superword.train(corpus, 700, "bpe", executor="ray", min_count=2)
    assert tok.model_text() == superword.train(corpus, 700, "bpe", min_count=2).model_text()
    assert tok.provenance["settings"]["min_count"] == 2


def test_phase_two_in_parts_on_ray_actors_gives_the_golden_model(ray_cluster, monkeypatch):
    """BoundlessBPE's segments split over Ray actors (PickyBPE included): the golden models."""
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 20_000)
    cases = [("multi_1230.jsonl", "multi_1230_v1500", 1500, 1.1, 3),
             ("taylorswift_400.jsonl", "taylorswift_400_v600_tau0.9_blowup", 600, 0.9, 2)]
    for corpus, folder, vocab, tau, parts in cases:
        monkeypatch.setattr(_ray, "PHASE2_PARTS", parts)
        tok = superword.train(need(GOLDEN / corpus), vocab, "boundless", tau=tau, blowup=tau < 1, executor="ray")
        assert tok.model_text().encode() == need(GOLDEN / folder / "boundless.model").read_bytes()
        assert tok.provenance["settings"]["phase2_parts"] == parts
        # each part in an actor of its own, none in the driver
        pids = {pid for _, _, pid, _ in _ray.LAST_PHASE2["parts_sizes"]}
        assert len(pids) == parts and os.getpid() not in pids
