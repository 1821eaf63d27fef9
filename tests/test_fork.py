"""Forked workers: a child made after the parent trained or encoded in parallel gets working
thread pools (the core's fork handlers), whatever the parent's other threads were doing.

Every case runs in a subprocess with a timeout, so a hang fails its test instead of stalling
the suite; each compares the child's ids with the parent's.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

#: seconds a case may take; each needs about one
LIMIT = 120


def run(code: str) -> str:
    """Run ``code`` in a fresh interpreter and return what it printed; fail on a hang."""
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                              text=True, timeout=LIMIT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung for {LIMIT} s; output so far: {exc.stdout!r} {exc.stderr!r}")
    assert done.returncode == 0, done.stderr
    return done.stdout


SETUP = """
    import os, sys, threading, warnings
    warnings.simplefilter("ignore")
    import superword
    docs = ["the cat sat on the mat and the dog sat on the log"] * 2000
    tok = superword.train(docs, vocab_size=300, algorithm="{algorithm}")
    texts = ["the cat sat on the mat %d" % i for i in range(200000)]

    def in_child(work):
        # fork, run work() in the child, and return its result (or None if it failed)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                os.write(write, repr(work()).encode())
            finally:
                os._exit(0)
        os.close(write)
        out = b""
        while chunk := os.read(read, 1 << 16):
            out += chunk
        os.waitpid(pid, 0)
        return out.decode()
"""


@pytest.mark.parametrize("algorithm", ["bpe", "boundless"])
def test_the_issues_snippet_a_fork_pool_after_training_and_encoding(algorithm):
    out = run(SETUP.format(algorithm=algorithm) + """
    import multiprocessing as mp

    def f(chunk):
        return tok.encode_batch(chunk)

    if __name__ == "__main__":
        expected = tok.encode_batch(texts)  # the parent's pool is started and warm
        with mp.get_context("fork").Pool(2) as p:
            parts = p.map(f, [texts[i:i + 50000] for i in range(0, 200000, 50000)])
        print(sum(parts, []) == expected)
    """)
    assert out.strip() == "True"


def test_a_fork_while_another_thread_encodes_in_parallel():
    out = run(SETUP.format(algorithm="boundless") + """
    expected = tok.encode_batch(texts[:20000])
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            tok.encode_batch(texts)

    worker = threading.Thread(target=busy)
    worker.start()
    results = [in_child(lambda: tok.encode_batch(texts[:20000]) == expected) for _ in range(5)]
    stop.set()
    worker.join()
    print(results)
    """)
    assert out.strip() == "['True', 'True', 'True', 'True', 'True']"


def test_a_fork_while_another_thread_trains():
    out = run(SETUP.format(algorithm="bpe") + """
    expected = tok.encode_batch(texts[:20000])
    big = [" ".join(f"w{i * 7 % 1009} x{i % 13}" for i in range(j, j + 200)) for j in range(3000)]
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            superword.train(big, vocab_size=2000, algorithm="boundless")

    worker = threading.Thread(target=busy)
    worker.start()
    results = [in_child(lambda: tok.encode_batch(texts[:20000]) == expected) for _ in range(5)]
    # a training in the child, on a fresh pool, gives the parent's model
    model = superword.train(docs, vocab_size=300, algorithm="bpe").model_text()
    results.append(in_child(lambda: superword.train(docs, vocab_size=300, algorithm="bpe").model_text() == model))
    stop.set()
    worker.join()
    print(results)
    """)
    assert out.strip() == str(["True"] * 6)


def test_a_fork_while_another_thread_registers_special_tokens():
    out = run(SETUP.format(algorithm="superbpe").replace('algorithm="superbpe"',
                                                         'algorithm="superbpe", supermerges=20') + """
    expected = tok.encode_batch(texts[:20000])
    stop = threading.Event()
    batches = iter(range(10**9))

    def busy():
        while not stop.is_set():
            n = next(batches)
            tok.register_special_tokens([f"<|s{n}_{k}|>" for k in range(2000)])
            tok.encode_batch(["a <|s0_0|> b"] * 100, allowed_special="all")

    worker = threading.Thread(target=busy)
    worker.start()

    def child():
        ok = tok.encode_batch(texts[:20000]) == expected
        tok.register_special_tokens(["<|child|>"])
        with_special = tok.encode("x<|child|>", allowed_special="all")
        return ok and with_special[-1] == tok.special_tokens["<|child|>"]

    results = [in_child(child) for _ in range(5)]
    stop.set()
    worker.join()
    print(results)
    """)
    assert out.strip() == str(["True"] * 5)


def test_a_child_of_a_child_and_several_thread_counts():
    out = run(SETUP.format(algorithm="bpe") + """
    expected = tok.encode_batch(texts[:20000])
    tok.encode_batch(texts, threads=1)
    tok.encode_batch(texts, threads=2)

    def grandchild():
        return in_child(lambda: [tok.encode_batch(texts[:20000], threads=t) == expected for t in (None, 1, 2)])

    print(in_child(grandchild))
    """)
    assert out.strip() == repr(repr([True, True, True]))


def test_datasets_map_with_worker_processes_after_training_and_a_large_batch(tmp_path):
    pytest.importorskip("datasets")
    out = run(SETUP.format(algorithm="boundless") + f"""
    import datasets
    datasets.disable_progress_bars()
    expected = tok.encode_batch(texts[:4000])   # the parent's pool is warm
    ds = datasets.Dataset.from_dict({{"text": texts[:4000]}})

    def encode(batch):
        return {{"ids": tok.encode_batch(batch["text"])}}

    if __name__ == "__main__":
        mapped = ds.map(encode, batched=True, num_proc=2, cache_file_name={str(tmp_path / "cache.arrow")!r})
        print(mapped["ids"] == expected)
    """)
    assert out.strip().splitlines()[-1] == "True"


def test_loading_pickles_and_counts_in_a_child(tmp_path):
    # everything that builds an encoder or sorts counts in parallel outside a batch call
    out = run(SETUP.format(algorithm="boundless") + f"""
    import pickle
    folder = {str(tmp_path)!r}
    path = os.path.join(folder, "m.model")
    tok.save(path)
    superword.Tokenizer.load(path)          # the parent builds an encoder in parallel
    counts = superword.count(docs)
    counts.save(os.path.join(folder, "c.counts"))
    model = superword.train(counts=counts, vocab_size=300, algorithm="boundless").model_text()
    expected = tok.encode_batch(texts[:2000])

    def child():
        loaded = superword.Tokenizer.load(path)
        copied = pickle.loads(pickle.dumps(tok))
        again = superword.load_counts(os.path.join(folder, "c.counts"))
        merged = superword.merge_counts([again, again])
        trained = superword.train(counts=again, vocab_size=300, algorithm="boundless")
        return (loaded.encode_batch(texts[:2000]) == expected, copied.encode_batch(texts[:2000]) == expected,
                trained.model_text() == model, merged.documents == 2 * again.documents)

    print(in_child(child))
    """)
    assert out.strip() == repr((True, True, True, True))
