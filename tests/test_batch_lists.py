"""``encode_batch``'s lists share one Python int per id (built once by the Rust core, for ids
below 2**18): the lists must still be independent, equal to ``encode`` text by text, and ids
past the shared ones must come back right.  (The per-thread pretoken cache is checked against
the golden ids with tiny tables in ``tests/encode_cache.rs``.)"""
from __future__ import annotations

import base64

import pytest
import superword
from helpers import GOLDEN, read_jsonl_texts


def test_lists_equal_encode_and_are_independent():
    tok = superword.Tokenizer.load(GOLDEN / "taylorswift_400_v600" / "boundless.model")
    texts = read_jsonl_texts(GOLDEN / "taylorswift_400.jsonl") * 3  # enough ids to share ints
    batch = tok.encode_batch(texts, allowed_special="none", threads=2)
    assert batch == [tok.encode(t, allowed_special="none") for t in texts]
    first, second = batch[0], batch[len(texts) // 3]  # the same text, two lists
    assert first == second and first is not second
    first.append(-1)
    first[0] = 10**9
    assert second == tok.encode(texts[0], allowed_special="none")
    again = tok.encode_batch(texts[:1], allowed_special="none", threads=1)
    assert again[0] == second


def test_ids_above_the_shared_ints(tmp_path):
    # single bytes at their own value, and "ab" at a rank far above 2**18
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    lines.append(f"{base64.b64encode(b'ab').decode()} 300000")
    ranks = tmp_path / "sparse.tiktoken"
    ranks.write_text("\n".join(lines) + "\n", encoding="ascii")
    tok = superword.Tokenizer.from_tiktoken(ranks, superword.CL100K_PATTERN)
    texts = ["ab", "abc", "cab"] * 100_000  # 300,000 ids at 300000 or below 256
    batch = tok.encode_batch(texts, allowed_special="none", threads=2)
    assert batch[:3] == [[300000], [300000, ord("c")], [ord("c"), 300000]]
    assert all(b == batch[i % 3] for i, b in enumerate(batch))
    # one long text: its list shares the ints too, and ids past them still come back right
    one = tok.encode("ab c" * 100_000, allowed_special="none")
    assert one == [300000, ord(" "), ord("c")] * 100_000
    other = tok.encode("ab c" * 100_000, allowed_special="none")
    one[1] = -1
    assert other[1] == ord(" ")
    pytest.importorskip("numpy")
    ids, bounds = tok.encode_batch(texts[:3], allowed_special="none", return_array=True)
    assert ids.tolist() == [300000, 300000, ord("c"), ord("c"), 300000]
    assert bounds.tolist() == [0, 1, 3, 5]


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_left_as_it_was(enabled):
    # the lists are made with the collector paused; it must come back in the state it had
    import gc
    tok = superword.Tokenizer.load(GOLDEN / "taylorswift_400_v600" / "boundless.model")
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert tok.encode_batch(["one list", "and another"], allowed_special="none") == [
            tok.encode("one list", allowed_special="none"), tok.encode("and another", allowed_special="none")]
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
