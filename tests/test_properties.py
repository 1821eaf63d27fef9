"""Properties that hold for every string (hypothesis)."""
from __future__ import annotations

import functools

import superword
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pretokenize import text_strategy

CORPUS = [
    "The quick brown fox jumps over the lazy dog. It is one of the best in the world.",
    "I'm sure it's the one of the best; we'll see.\r\n\r\n  Numbers: 1234567, 3.14159!",
    "你好世界，这是一个测试。 東京タワーに行きました。 ภาษาไทยง่ายนิดเดียว",
    "ភាសាខ្មែរ ဗမာစာ ພາສາລາວ Привет, мир! Grüße aus Köln. مرحبا بالعالم 안녕하세요",
    "emoji 👍🏽👨‍👩‍👧 and combining e\u0301 a\u0308 in the text of the day",
] * 20


@functools.cache
def tokenizer(algorithm: str, aware: bool, backend: str = "reference") -> superword.Tokenizer:
    if algorithm == "superbpe":
        return superword.train(CORPUS, 700, "superbpe", supermerges=30, script_aware=aware,
                               backend=backend)
    return superword.train(CORPUS, 700, algorithm, script_aware=aware, backend=backend)


def test_the_models_have_superwords():
    assert tokenizer("boundless", True).num_supermerges > 0
    assert tokenizer("superbpe", False).num_supermerges == 30


@settings(max_examples=400, deadline=None)
@given(text_strategy, st.sampled_from(["bpe", "boundless", "superbpe"]), st.booleans())
def test_decode_inverts_encode_and_backends_agree(text, algorithm, aware):
    ref = tokenizer(algorithm, aware, "reference")
    rust = tokenizer(algorithm, aware, "rust")
    ids = ref.encode(text)
    assert rust.encode(text) == ids
    for tok in (ref, rust):
        assert tok.decode(ids) == text
        assert tok.decode_bytes(ids) == text.encode("utf-8")
    assert all(0 <= i < ref.vocab_size for i in ids)


def test_both_backends_train_the_same_property_models():
    for algorithm in ("bpe", "boundless", "superbpe"):
        for aware in (True, False):
            assert tokenizer(algorithm, aware, "rust").model_text() == \
                tokenizer(algorithm, aware, "reference").model_text()


@settings(max_examples=200, deadline=None)
@given(text_strategy)
def test_the_shortcut_never_changes_the_result(text):
    """SPEC 7.3: a reachable pretoken encodes to itself, so skipping the merges is exact."""
    enc = tokenizer("boundless", True)._impl.encoder
    for piece in enc.pretokenizer.pretokenize(text):
        assert enc._pretoken_tokens(piece, shortcut=True) == enc._pretoken_tokens(piece, shortcut=False)
