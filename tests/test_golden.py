"""Identity with the paper's implementation: ../shared/golden/ models and ids, byte for byte."""
from __future__ import annotations

import json

import pytest
import superword
from helpers import GOLDEN, need, read_jsonl_texts

# folder, corpus, vocab_size, script_aware, supermerges chosen by its boundless.model
FOLDERS = [
    ("taylorswift_400_v600", "taylorswift_400.jsonl", 600, True, 12),
    ("taylorswift_400_v600_simple", "taylorswift_400.jsonl", 600, False, 12),
    ("multi_1230_v1500", "multi_1230.jsonl", 1500, True, 107),
]
MODELS = ["word", "boundless", "super"]


def train_like_golden(folder, corpus, vocab, aware, m, name, backend):
    path = need(GOLDEN / corpus)
    if name == "word":
        return superword.train(path, vocab, "bpe", script_aware=aware, backend=backend)
    if name == "boundless":
        return superword.train(path, vocab, "boundless", script_aware=aware, backend=backend)
    return superword.train(path, vocab + m, "superbpe", supermerges=m, script_aware=aware,
                           backend=backend)


def golden_ids(folder, name):
    with open(need(GOLDEN / folder / f"{name}.ids.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


BACKENDS = ["reference", "rust"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("folder,corpus,vocab,aware,m", FOLDERS)
def test_trained_model_is_byte_identical(tmp_path, folder, corpus, vocab, aware, m, name, backend):
    expected = need(GOLDEN / folder / f"{name}.model").read_bytes()
    tok = train_like_golden(folder, corpus, vocab, aware, m, name, backend)
    out = tmp_path / "out.model"
    tok.save(out)
    assert out.read_bytes() == expected
    texts = read_jsonl_texts(GOLDEN / corpus)
    assert [tok.encode_ordinary(t) for t in texts] == golden_ids(folder, name)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("folder,corpus,vocab,aware,m", FOLDERS)
def test_golden_model_loads_encodes_and_saves_identically(tmp_path, folder, corpus, vocab, aware,
                                                          m, name, backend):
    path = need(GOLDEN / folder / f"{name}.model")
    tok = superword.Tokenizer.load(path, backend=backend)
    texts = read_jsonl_texts(need(GOLDEN / corpus))
    ids = [tok.encode_ordinary(t) for t in texts]
    assert ids == golden_ids(folder, name)
    assert [tok.decode(i) for i in ids] == texts
    tok.save(tmp_path / "again.model")
    assert (tmp_path / "again.model").read_bytes() == path.read_bytes()
