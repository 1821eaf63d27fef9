"""The Rust encoder finds the reachable tokens (SPEC 3, rule 1) from the merges' structure,
the reference by encoding each token alone (docs/algorithm.md, section 3).  Were a token
taken for reachable that is not, the shortcut would make its text that one token where the
reference makes several: on models of generated merge lists, the text of every token, and
texts made of tokens, encode alike in both backends.  (The converse, a reachable token
missed, changes no ids; `tests/reachable.rs` and `src/encode/reach.rs` compare the sets
themselves.)"""
from __future__ import annotations

import contextlib

import superword
from hypothesis import given, settings
from hypothesis import strategies as st
from superword.reference.tokens import render

CONFIG = None


def config_line() -> str:
    global CONFIG
    if CONFIG is None:
        lines = superword.train(["the cat sat"] * 3, 260, "bpe", backend="reference").model_text().split("\n")
        CONFIG = lines[lines.index("words") + 1]
    return CONFIG


@st.composite
def merge_lists(draw) -> list[tuple[bytes, bytes]]:
    """Merges over a few bytes: parts often equal (runs of one token), some merges before the
    ones that make their parts, some results made twice."""
    pool = [bytes([b]) for b in draw(st.sampled_from([b"a", b"ab", b"ab ", b"a\xc3\xa9"]))]
    merges = []
    for _ in range(draw(st.integers(1, 40))):
        left = draw(st.sampled_from(pool))
        right = left if draw(st.booleans()) else draw(st.sampled_from(pool))
        if len(left) + len(right) > 40:
            continue
        merges.append((left, right))
        pool.append(left + right)
    if merges and draw(st.booleans()):
        i, j = draw(st.integers(0, len(merges) - 1)), draw(st.integers(0, len(merges) - 1))
        merges[i], merges[j] = merges[j], merges[i]
    return merges


def model_text(merges: list[tuple[bytes, bytes]]) -> str:
    vocab = [bytes([b]) for b in range(256)]
    for left, right in merges:
        if left + right not in vocab:
            vocab.append(left + right)
    out = ["BoundlessBPE v2 word", "vocabulary", str(len(vocab))]
    out += [f"{i} {render(t)} 0 0" for i, t in enumerate(vocab)]
    out += ["special_tokens", "0", "words", config_line(), "merges", str(len(merges))]
    out += [f"{k} {render(a)} {render(b)} 1 0" for k, (a, b) in enumerate(merges)]
    return "\n".join([*out, "deletions", "0", ""])


@settings(max_examples=300, deadline=None)
@given(merges=merge_lists(), picks=st.lists(st.integers(0, 10**6), max_size=8))
def test_every_token_encodes_alike_in_both_backends(tmp_path_factory, merges, picks):
    path = tmp_path_factory.mktemp("m") / "m.model"
    path.write_text(model_text(merges), encoding="utf-8")
    rust = superword.Tokenizer.load(path, backend="rust")
    ref = superword.Tokenizer.load(path, backend="reference")
    texts = []
    for i in range(rust.vocab_size):
        with contextlib.suppress(UnicodeDecodeError):
            texts.append(rust.token_bytes(i).decode("utf-8"))
    texts.append("".join(texts[p % len(texts)] for p in picks))
    for text in texts:
        assert rust.encode(text) == ref.encode(text), text
