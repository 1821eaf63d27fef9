"""Progress reports, training statistics, and custom pre-tokenization patterns."""
from __future__ import annotations

import pytest
import superword

DOCS = ["It is one of the best in the world.", "One of the best, in the end.",
        "你好世界，这是一个测试。", "the best of the best"] * 40

# GPT-2's pattern: a look-ahead, so the Rust core runs it through fancy-regex
GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


@pytest.mark.parametrize("backend", ["reference", "rust"])
def test_progress_goes_through_the_stages_in_order(backend):
    seen = []
    tok = superword.train(DOCS, 400, "boundless", backend=backend,
                          progress=lambda stage, done, total: seen.append(stage))
    stages = list(dict.fromkeys(seen))  # first appearance order
    assert stages == ["count", "merges", "candidates", "phase2"]
    assert list(tok.training_stats) == ["pretokenize_count", "phase1", "candidates", "phase2"]
    assert all(v >= 0 for v in tok.training_stats.values())


def test_silent_by_default(capsys):
    superword.train(DOCS, 300, "boundless")
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_a_callback_error_stops_training():
    def fail(stage, done, total):
        raise RuntimeError("stop here")
    with pytest.raises(RuntimeError, match="stop here"):
        superword.train(DOCS, 300, "boundless", backend="rust", progress=fail)


@pytest.mark.parametrize("aware", [True, False])
def test_custom_patterns_train_identically(aware):
    kw = dict(pattern=GPT2, script_aware=aware)
    if aware:
        kw["script_pattern"] = r" ?\p{L}| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+"
    ref = superword.train(DOCS, 400, "boundless", backend="reference", **kw)
    rust = superword.train(DOCS, 400, "boundless", backend="rust", **kw)
    assert rust.model_text() == ref.model_text()
    assert GPT2.replace("\\", "\\\\") in rust.model_text()
    text = "It's the best of 2024!"
    assert rust.encode(text) == ref.encode(text)


def test_a_bad_pattern_is_named():
    # (twice each: a checked pre-tokenization is remembered, a refused one must not be)
    for backend in ("reference", "rust", "reference", "rust"):
        with pytest.raises(ValueError, match="pattern is not a valid regular expression"):
            superword.train(DOCS, 300, pattern="(unclosed", backend=backend)
        with pytest.raises(ValueError, match="unknown script name"):
            superword.train(DOCS, 300, scripts=["Han", "Not_A_Script"], backend=backend)
