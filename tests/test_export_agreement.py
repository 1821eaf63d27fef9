"""The tokenizer.json and tiktoken exports of superword models, checked with the real
libraries: the causes of difference that the export removes (docs/exports.md) stay removed, and
the one that remains (tiktoken merges by id) is the documented one."""
from __future__ import annotations

import itertools
import os
import warnings

import pytest
import regex
import superword
from helpers import GOLDEN, read_jsonl_texts
from superword import _export
from superword.reference.encode import pretokenizer_for

os.environ["HF_HUB_OFFLINE"] = "1"
tokenizers = pytest.importorskip("tokenizers")
tiktoken = pytest.importorskip("tiktoken")
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

ALGORITHMS = [("boundless", {}), ("superbpe", {"supermerges": 1})]
VARIED = ["don't they'LL it's x", "Hello World HelloWorld ‘Is it’ “Of course”", "Grüße aus 東京, Tokyo!",
          "你好世界 ภาษาไทย", "a\u0301\u0302 b\u0301 \u00a0end", "  of the  of\tthe\n\nof the", ""]


def train(docs, vocab_size, algorithm="boundless", **extra):
    with warnings.catch_warnings():  # tiny corpora: a shortfall warning is expected
        warnings.simplefilter("ignore")
        return superword.train(docs, vocab_size=vocab_size, algorithm=algorithm, **extra)


class Exported:
    """Our ids, tokenizers' and tiktoken's for one model, and the export's pieces."""

    def __init__(self, tok, directory):
        self.tok = tok
        tok.save_hf(directory, overwrite=True)
        self.hf = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.pattern = tok.save_tiktoken(directory / "t.tiktoken")
        self.ranks = load_tiktoken_bpe(str(directory / "t.tiktoken"))
        self.tt = tiktoken.Encoding(name="export", pat_str=self.pattern, mergeable_ranks=self.ranks,
                                    special_tokens={})
        self.cut = regex.compile(_export._from_oniguruma(self.pattern, "pattern"))

    def ours(self, text):
        return self.tok.encode(text, allowed_special="none")

    def hf_ids(self, text):
        return self.hf.encode(text, add_special_tokens=False).ids

    def tiktoken_ids(self, text):
        return self.tt.encode_ordinary(text)

    def one_piece(self, text):
        """tiktoken over the whole text as one piece: what a pattern joining every word gives."""
        whole = tiktoken.Encoding(name="whole", pat_str=r"[^\n]+", mergeable_ranks=self.ranks, special_tokens={})
        return whole.encode_ordinary(text)

    def pieces(self, text):
        return self.cut.findall(text)


def tokens(tok, ids):
    return [tok.token_bytes(i) for i in ids]


@pytest.mark.parametrize("algorithm,extra", ALGORITHMS, ids=[a for a, _ in ALGORITHMS])
def test_a_word_that_is_not_one_token_is_not_joined_by_a_supermerge(algorithm, extra, tmp_path):
    """'‘Is' stays two tokens, so 'Is it' must not be made from its 'Is' (both formats did)."""
    tok = train(["Is it"] * 40 + ["‘Is"], 247, algorithm, **extra)
    assert tok.id_of(b"Is it") is not None and tok.id_of("‘Is".encode()) is None
    ex = Exported(tok, tmp_path)
    text = "‘Is it"
    assert tok.id_of(b"Is it") not in ex.ours(text)
    assert tok.id_of(b"Is it") in ex.one_piece(text)  # the cause, with a pattern joining every word
    assert ex.hf_ids(text) == ex.tiktoken_ids(text) == ex.ours(text)
    assert ex.pieces(text) == ["‘Is", " it"]


def test_words_that_no_supermerge_joins_are_separate_tiktoken_pieces(tmp_path):
    """tiktoken merges by id: ' in a' (an early superword) would take the ' a' of ' age'."""
    tok = train([" in a"] * 50 + [" age"] * 5, 252)
    ex = Exported(tok, tmp_path)
    text = " in age"
    assert tokens(tok, ex.ours(text)) == [b" in", b" ag", b"e"]
    assert tok.id_of(b" in a") in ex.one_piece(text)
    assert ex.tiktoken_ids(text) == ex.hf_ids(text) == ex.ours(text)
    assert ex.pieces(text) == [" in", " age"]


def test_words_that_a_supermerge_joins_are_one_piece(tmp_path):
    tok = train([" to be"] * 50 + [" to believe"] * 20 + [" easy to"] * 10 + ["qwertyuiopasdfgh"], 262)
    ex = Exported(tok, tmp_path)
    assert ex.pieces(" easy to believe it") == [" easy to believe", " it"]
    assert ex.pieces(" easy tobe") == [" easy", " tobe"]  # ' to' is not a whole pretoken there


def test_tiktoken_keeps_the_documented_residue_of_ids_out_of_merge_order(tmp_path):
    """docs/exports.md: ' to be' has a smaller id than ' believe', so tiktoken makes it before
    ' believe' is whole; tokenizers ranks the regular merges first and agrees."""
    tok = train([" to be"] * 50 + [" to believe"] * 20 + [" easy to"] * 10 + ["qwertyuiopasdfgh"], 262)
    ex = Exported(tok, tmp_path)
    text = " easy to believe"
    assert tokens(tok, ex.ours(text)) == [b" easy", b" to believe"]
    assert ex.hf_ids(text) == ex.ours(text)
    assert tokens(tok, ex.tiktoken_ids(text))[:2] == [b" easy", b" to be"]
    assert tok.id_of(b" to be") < tok.id_of(b" believe")


@pytest.mark.parametrize("kind", ["boundless", "super"])
@pytest.mark.parametrize("folder,corpus", [("taylorswift_400_v600", "taylorswift_all.jsonl"),
                                           ("multi_1230_v1500", "multi_1230.jsonl")])
def test_golden_superword_models_export_to_tokenizers_exactly(kind, folder, corpus, tmp_path):
    """Every piece of the export's pattern is whole pretokens of ours, and tokenizers gives our
    ids on every document of the golden corpus (script-aware models: where the single pattern
    cuts as the script runs do, which these corpora's documents all do)."""
    tok = superword.Tokenizer.load(GOLDEN / folder / f"{kind}.model")
    ex = Exported(tok, tmp_path)
    pretokenize = pretokenizer_for(_export.model_of(tok)).pretokenize
    docs = read_jsonl_texts(GOLDEN / corpus) + VARIED
    for doc in docs:
        ends = set(itertools.accumulate(map(len, pretokenize(doc))))
        assert set(itertools.accumulate(map(len, ex.pieces(doc)))) <= ends, doc[:60]
    ours = tok.encode_batch(docs, allowed_special="none")
    theirs = [e.ids for e in ex.hf.encode_batch(docs, add_special_tokens=False)]
    assert ours == theirs
    if kind == "super":  # superword ids all follow the word ids: tiktoken has no residue either
        assert ex.tt.encode_ordinary_batch(docs) == ours

