"""Long pieces with PickyBPE deletions (SPEC 9): a pretoken of thousands of bytes goes through
the Rust core's position index (src/encode/picky.rs) and must give the reference's ids, on
random words, on repeated patterns and on runs of one letter.  (Speed is measured in
benchmarks/long_pieces.py, not here.)"""
from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
import superword
from test_long_input import random_word


def _copy(tok: superword.Tokenizer, backend: str) -> superword.Tokenizer:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.model"
        tok.save(path)
        return superword.Tokenizer.load(path, backend=backend)


def _corpus() -> list[str]:
    rng = random.Random(5)
    words = [random_word(rng.randint(2, 12), seed) for seed in range(400)]
    docs = [" ".join(rng.choices(words, k=300)) for _ in range(8)]
    return docs + ["ab" * 300, "abcabd" * 100, "aaaa bbbb " * 50]


@pytest.mark.parametrize("blowup", [False, True])
def test_a_picky_model_encodes_long_pieces_like_the_reference(blowup):
    rust = superword.train(_corpus(), 700, "bpe", tau=0.6, blowup=blowup, backend="rust")
    ref = _copy(rust, "reference")
    assert ref._impl.model.deletions
    texts = [random_word(3000, 11), random_word(2500, 12, "abcd"), "ab" * 1500, "a" * 2001,
             "abcabd" * 400 + "abc", "".join(random.Random(6).choices("ab", k=3000)),
             random_word(300, 13)]
    for text in texts:
        assert rust.encode_ordinary(text) == ref.encode_ordinary(text), text[:30]
