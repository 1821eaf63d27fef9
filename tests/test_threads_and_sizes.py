"""Arguments a user may get wrong (issue 14 items 4 and 5, issue 13 items 4 and 6): sizes that
cannot be met are refused or reported, thread counts are capped and honour RAYON_NUM_THREADS,
pools are reused, and many Python threads sharing one tokenizer get the serial ids."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings

import pytest
import superword
from superword import _api
from superword.cli import main

DOCS = ["the cat sat on the mat", "one of the best of the best"] * 5


@pytest.fixture(params=["reference", "rust"])
def backend(request):
    return request.param


# -- sizes ------------------------------------------------------------------------------------

def test_a_vocab_size_no_id_can_hold_is_refused_up_front(backend):
    with pytest.raises(ValueError, match=r"vocab_size must be at most 2,147,483,648 \(2\*\*31"):
        superword.train(DOCS, 10**12, backend=backend)


def test_a_vocab_size_the_corpus_cannot_reach_is_reported(backend):
    with pytest.warns(superword.TrainingShortfall,
                      match=r"BPE: training stopped at 262 of the 100,000 tokens requested: no pair"):
        tok = superword.train(DOCS, 100_000, "bpe", backend=backend)
    assert tok.vocab_size == 262
    with pytest.warns(superword.TrainingShortfall, match=r"BoundlessBPE: training stopped at 2\d\d of"):
        superword.train(DOCS, 5000, "boundless", backend=backend)


def test_superbpe_says_how_many_supermerges_it_made(backend):
    with pytest.warns(superword.TrainingShortfall) as record:
        tok = superword.train(DOCS, 1000, "superbpe", supermerges=500, backend=backend)
    messages = [str(w.message) for w in record]
    assert f"SuperBPE: made {tok.num_supermerges} of the 500 supermerges requested" in messages[-1]
    assert tok.num_supermerges < 500
    assert any("phase 1 made 262 of the 500 regular tokens" in m for m in messages)


def test_no_warning_when_the_request_is_met(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok = superword.train(DOCS, 260, "bpe", backend=backend)
    assert tok.vocab_size == 260


@pytest.mark.filterwarnings("default::superword.TrainingShortfall")  # the CLI shows what warnings reach it
def test_the_cli_prints_the_shortfall_as_one_line(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(DOCS) + "\n")
    assert main(["train", str(corpus), "--vocab-size", "1000", "-q", "--no-compare",
                 "-o", str(tmp_path / "m.model")]) == 0
    err = capsys.readouterr().err
    assert err.count("superword: warning:") == 1
    assert "training stopped at 2" in err and "UserWarning" not in err


# -- threads ------------------------------------------------------------------------------------

def _threads_alive() -> int:
    return len(os.listdir("/proc/self/task"))


linux_only = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")


def test_threads_above_the_cores_are_capped():
    cores = _api.available_cores()
    assert _api.resolve_threads(10**6) == cores
    assert _api.resolve_threads(1) == 1
    tok = superword.train(DOCS, 260, "bpe", threads=10**6)
    assert tok.encode_batch(DOCS, threads=10**9) == tok.encode_batch(DOCS, threads=1)


@linux_only
def test_thread_pools_are_reused_not_piled_up():
    tok = superword.train(DOCS, 260, "bpe")
    tok.encode_batch(DOCS)  # the default pool
    before = _threads_alive()
    for n in range(1, 41):
        tok.encode_batch(DOCS, threads=n)
        superword.train(DOCS, 260, "bpe", threads=n)
    assert _threads_alive() - before <= 2 * _api.available_cores()


def test_rayon_num_threads_sets_the_default(monkeypatch):
    monkeypatch.setenv("RAYON_NUM_THREADS", "1")
    assert _api.resolve_threads(None) == 1
    monkeypatch.setenv("RAYON_NUM_THREADS", "0")
    assert _api.resolve_threads(None) == _api.available_cores()
    monkeypatch.setenv("RAYON_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="RAYON_NUM_THREADS must be a whole number of threads, got 'many'"):
        superword.train(DOCS, 260)
    monkeypatch.setenv("RAYON_NUM_THREADS", "-2")
    with pytest.raises(ValueError, match="RAYON_NUM_THREADS must be at least 1"):
        superword.train(DOCS, 260)


@linux_only
@pytest.mark.skipif(_api.available_cores() < 2, reason="needs two cores to tell 1 worker from all")
def test_rayon_num_threads_reaches_the_core(tmp_path):
    """In a fresh process, loading a model and encoding a batch start RAYON_NUM_THREADS workers
    (else one per core), in one pool."""
    superword.train(DOCS, 260, "bpe").save(tmp_path / "m.model")
    script = ("import os, sys, superword\n"
              "before = len(os.listdir('/proc/self/task'))\n"
              "tok = superword.Tokenizer.load(sys.argv[1])\n"
              "tok.encode_batch(['the cat'] * 100)\n"
              "print(len(os.listdir('/proc/self/task')) - before)\n")

    def workers_started(**env: str) -> int:
        environ = {k: v for k, v in os.environ.items() if k != "RAYON_NUM_THREADS"}
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.model")],
                             env=dict(environ, **env), capture_output=True, text=True, check=True)
        return int(out.stdout)
    assert workers_started(RAYON_NUM_THREADS="1") == 1
    assert workers_started() == _api.available_cores()


def test_the_cli_has_threads(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(DOCS) + "\n")
    assert main(["train", str(corpus), "--vocab-size", "260", "--threads", "1", "-q", "--no-compare",
                 "-o", str(tmp_path / "m.model")]) == 0
    assert capsys.readouterr().err == ""
    with pytest.raises(SystemExit):
        main(["train", str(corpus), "--threads", "0", "-o", str(tmp_path / "m.model")])
    assert "--threads: must be at least 1, got 0" in capsys.readouterr().err


# -- many Python threads on one tokenizer ---------------------------------------------------------

def test_encode_batch_from_many_python_threads_gives_the_serial_ids(backend):
    docs = [f"document {i}: the cat sat on the mat {i % 7} times, one of the best" for i in range(400)]
    tok = superword.train(docs, 400, "boundless", backend=backend)
    batches = [docs[i::8] for i in range(8)]
    serial = [tok.encode_batch(b, threads=1) for b in batches]
    results: dict[int, list[list[int]]] = {}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(5):
                got = tok.encode_batch(batches[k], threads=2)
                assert results.setdefault(k, got) == got
        except BaseException as exc:
            errors.append(exc)
    workers = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert [results[k] for k in range(8)] == serial
