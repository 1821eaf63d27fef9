"""SPEC 5: BoundlessBPE with r regular merges and s supermerges equals the "matching" SuperBPE
(phase 1 cut at r merges, then s supermerges) on a real multilingual corpus."""
from __future__ import annotations

import superword
from helpers import DATA, need, read_lines

LANGUAGES = ["zh", "ja", "th", "km", "my", "lo", "de", "ru", "ko", "hi", "ar"]


def multilingual_corpus(lines_per_language: int = 150) -> list[str]:
    docs = []
    for lang in LANGUAGES:
        # skip the UDHR preamble: take news sentences and the larger parts
        docs += read_lines(need(DATA / "multi" / f"{lang}.txt"), 400 + lines_per_language)[400:]
    docs += read_lines(need(DATA / "taylorswift.txt"))[:800]
    return docs


def test_boundless_equals_matching_superbpe():
    docs = multilingual_corpus()
    boundless = superword.train(docs, 2500, "boundless", backend="reference")
    b = boundless._impl.model
    r, s = len(b.merges), len(b.supermerges)
    assert s > 20, "the corpus should give BoundlessBPE a real choice"
    superbpe = superword.train(docs, len(b.vocab), "superbpe", supermerges=s, backend="reference")
    m = superbpe._impl.model
    assert len(m.merges) == r
    assert [(x.left, x.right, x.count) for x in m.merges] == \
        [(x.left, x.right, x.count) for x in b.merges]
    assert [(x.left, x.right, x.count) for x in m.supermerges] == \
        [(x.left, x.right, x.count) for x in b.supermerges]
    assert sorted(b.vocab) == sorted(m.vocab)
    for doc in docs:
        assert boundless.encode_to_tokens(doc) == superbpe.encode_to_tokens(doc)
    # the ids differ only because BoundlessBPE interleaves its superword tokens
    assert b.vocab != m.vocab
