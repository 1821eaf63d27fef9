"""The model file: round trips for every kind, special tokens, and the n-gram table."""
from __future__ import annotations

import pytest
import superword
from superword.reference.model import dumps, read_model

DOCS = ["今日は良い天気です。 今日は良い天気ですね。 今日は雨です。",
        "the best of the best, one of the best",
        "ภาษาไทย ภาษาไทยง่าย ภาษาไทยยาก"] * 30


@pytest.mark.parametrize("backend", ["reference", "rust"])
@pytest.mark.parametrize("algorithm,extra", [("bpe", {}), ("boundless", {}),
                                             ("superbpe", {"supermerges": 10}),
                                             ("boundless", {"greedy_split": True})])
def test_round_trip(tmp_path, algorithm, extra, backend):
    tok = superword.train(DOCS, 330, algorithm, backend=backend, **extra)
    tok.register_special_tokens(["<|endoftext|>", "<pad with space>"])
    path = tmp_path / "m.model"
    tok.save(path)
    again = superword.Tokenizer.load(path, backend=backend)
    assert dumps(read_model(path)) == path.read_text(encoding="utf-8")
    assert again.special_tokens == tok.special_tokens
    text = "<|endoftext|>" + DOCS[0] + "<pad with space>"
    assert again.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
    assert again.decode(again.encode(text, allowed_special="all")) == text


def test_greedy_split_model_stores_its_ngrams_and_needs_them_at_inference(tmp_path):
    tok = superword.train(DOCS, 330, "boundless", greedy_split=True, backend="reference")
    assert tok._impl.model.ngrams, "this corpus has frequent n-grams"
    plain = superword.train(DOCS, 330, "boundless", backend="reference")
    plain.save(tmp_path / "plain.model")
    with pytest.raises(ValueError, match="stores no n-gram table"):
        superword.Tokenizer.load(tmp_path / "plain.model", backend="reference", greedy_split=True)
    # inference cuts runs like training did: no superword token spans two n-gram pieces
    enc = tok._impl.encoder
    assert enc.ngrams is not None
    tok.save(tmp_path / "split.model")
    load = superword.Tokenizer.load
    assert load(tmp_path / "split.model", backend="reference")._impl.encoder.ngrams == enc.ngrams
    assert load(tmp_path / "split.model", backend="reference",
                greedy_split=False)._impl.encoder.ngrams is None
    with pytest.raises(ValueError, match="stores no n-gram table"):
        load(tmp_path / "plain.model", backend="rust", greedy_split=True)
