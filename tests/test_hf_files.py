"""tokenizer.json files in and out: superword reads back what save_hf writes, and a malformed
tokenizer.json is refused with a ValueError naming it, whatever is wrong in it."""
from __future__ import annotations

import json
import os

import pytest
import superword
from helpers import GOLDEN, read_jsonl_texts

os.environ["HF_HUB_OFFLINE"] = "1"
tokenizers = pytest.importorskip("tokenizers")

SIMPLE = GOLDEN / "taylorswift_400_v600_simple" / "word.model"
MULTI = GOLDEN / "multi_1230_v1500"
VARIED = ["héllo wörld, naïve café", "Привет, мир! 123456", "你好世界 東京タワー ラーメン", "ภาษาไทย ខ្មែរ",
          "Helloмир don't WE'LL\n\n  x\t y", "emoji 😀👍🏽 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "a\u0301\u0302 \u00a0\u2003end", ""]


def texts():
    return read_jsonl_texts(MULTI.parent / "multi_1230.jsonl")[:150] + VARIED


def hf_ids(path, docs):
    hf = tokenizers.Tokenizer.from_file(str(path))
    return [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]


# -- save_hf -> from_hf --------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["rust", "reference"])
@pytest.mark.parametrize("model", [SIMPLE, MULTI / "word.model"], ids=["simple", "script-aware"])
def test_a_word_model_export_reads_back_with_our_ids(model, backend, tmp_path):
    """The export writes \\x{..} code points (Oniguruma), which the regex module cannot read, and
    the script-aware one used to write class intersections, which it reads as literal '&&'."""
    tok = superword.Tokenizer.load(model)
    tok.register_special_tokens(["<|endoftext|>"])
    tok.save_hf(tmp_path)
    back = superword.Tokenizer.from_hf(tmp_path / "tokenizer.json", backend=backend)
    docs = texts()
    ours = tok.encode_batch(docs)
    assert back.encode_batch(docs) == ours == hf_ids(tmp_path / "tokenizer.json", docs)
    assert back.special_tokens == tok.special_tokens
    assert back.encode("a<|endoftext|>b", allowed_special="all") == tok.encode("a<|endoftext|>b",
                                                                               allowed_special="all")


@pytest.mark.parametrize("backend", ["rust", "reference"])
def test_a_superbpe_export_is_refused_on_reading_back_for_its_look_behinds(backend, tmp_path):
    # its coarse first alternative checks each seam with a look-behind, which the linear
    # matcher of superword does not run (docs/algorithm.md, section 8.1); its .model file loads
    tok = superword.Tokenizer.load(MULTI / "super.model")
    tok.save_hf(tmp_path)
    with pytest.raises(ValueError, match=r"tokenizer\.json: pattern uses a look-"):
        superword.Tokenizer.from_hf(tmp_path / "tokenizer.json", backend=backend)


def test_a_boundless_export_is_refused_with_the_reason(tmp_path):
    """Its supermerges follow every regular merge in the file, not in id order: a ranks model
    cannot apply them as tokenizers does."""
    superword.Tokenizer.load(MULTI / "boundless.model").save_hf(tmp_path)
    with pytest.raises(ValueError, match=r"tokenizer\.json: the merges do not create tokens in increasing "
                                         r"id order.*load its \.model file"):
        superword.Tokenizer.from_hf(tmp_path / "tokenizer.json")


def test_the_script_aware_export_pattern_has_explicit_classes_only(tmp_path):
    superword.Tokenizer.load(MULTI / "word.model").save_hf(tmp_path)
    data = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    pattern = data["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    assert "&&" not in pattern and r"\p{" not in pattern


# -- malformed tokenizer.json --------------------------------------------------------------------

@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hf")
    superword.Tokenizer.load(SIMPLE).save_hf(directory)
    return json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))


def split(data):
    return data["pre_tokenizer"]["pretokenizers"][0]


def set_vocab_id(data, token, value):
    data["model"]["vocab"][token] = value


MALFORMED = {
    "deep nesting": ('{"model": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    "huge integer": ('{"model": {"vocab": {"a": 1' + "0" * 5000 + "}}}", "cannot be read as JSON"),
    "decoder list": (lambda d: d.update(decoder=[1]), r"decoder a list, expected ByteLevel"),
    "decoder str": (lambda d: d.update(decoder="ByteLevel"), r"decoder the string 'ByteLevel'"),
    "pre_tokenizer parts": (lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [1, 2]}),
                            "unsupported pre_tokenizer"),
    "regex not a string": (lambda d: split(d)["pattern"].update(Regex=5), "Regex is the number 5, not a string"),
    "regex matches nothing": (lambda d: split(d)["pattern"].update(Regex=""), "matches the empty string"),
    "regex invalid": (lambda d: split(d)["pattern"].update(Regex="("), "regex is not a valid regular expression"),
    "regex bad escape": (lambda d: split(d)["pattern"].update(Regex=r"\x{110000}"), "escape that is not a code point"),
    "regex intersection": (lambda d: split(d)["pattern"].update(Regex=r"[\p{L}&&[^a]]+|\s+"), "intersects"),
    "merges not a list": (lambda d: d["model"].update(merges={"a": "b"}), "merges are an object, not a list"),
    "merge of ints": (lambda d: d["model"].update(merges=[[1, 2]]), "merge 0 is not a pair of tokens: a list"),
    "vocab id str": (lambda d: set_vocab_id(d, "a", "x"), "vocab token 'a' has id the string 'x'"),
    "vocab id float": (lambda d: set_vocab_id(d, "a", 97.5), "vocab token 'a' has id the number 97.5"),
    "vocab id bool": (lambda d: set_vocab_id(d, "a", True), "vocab token 'a' has id the boolean true"),
    "vocab id negative": (lambda d: set_vocab_id(d, "a", -5), "vocab token 'a' has id -5; ids go from 0"),
    "vocab id huge": (lambda d: set_vocab_id(d, "a", 10**30), "vocab token 'a' has id out of range"),
    "vocab id 2**32-1": (lambda d: set_vocab_id(d, "a", 2**32 - 1), "has id 4294967295; ids go from 0 to 4294967294"),
    "vocab id twice": (lambda d: set_vocab_id(d, "a", d["model"]["vocab"]["b"]),
                       "vocab tokens '[ab]' and '[ab]' have the same id"),
    "vocab empty token": (lambda d: set_vocab_id(d, "", 5000), "the vocab has an empty token"),
    "added not a list": (lambda d: d.update(added_tokens="abc"), "added_tokens is the string 'abc', not a list"),
    "added not objects": (lambda d: d.update(added_tokens=[1]), "added token 0 has no content"),
    "added without id": (lambda d: d.update(added_tokens=[{"content": "<x>"}]), "added token '<x>' has no id"),
    "added id str": (lambda d: d.update(added_tokens=[{"content": "<x>", "id": "zz"}]), "has id the string 'zz'"),
    "added id huge": (lambda d: d.update(added_tokens=[{"content": "<x>", "id": 10**20}]), "out of range"),
    "added id negative": (lambda d: d.update(added_tokens=[{"content": "<x>", "id": -1}]), "has id -1"),
    "added content int": (lambda d: d.update(added_tokens=[{"content": 5, "id": 700}]), "added token 0 has no content"),
    "added twice": (lambda d: d.update(added_tokens=[{"content": "<x>", "id": 700}, {"content": "<x>", "id": 701}]),
                    r"'<x>' appears twice \(ids 700 and 701\)"),
    "added same id": (lambda d: d.update(added_tokens=[{"content": "<x>", "id": 700}, {"content": "<y>", "id": 700}]),
                      "'<x>' and '<y>' have the same id 700"),
    "added overlap": (lambda d: d.update(added_tokens=[{"content": "<ab>", "id": 700}, {"content": "b>c", "id": 701}]),
                      "overlap"),
    "model type missing": (lambda d: d["model"].pop("type"), "model type null cannot be represented"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_tokenizer_json_is_a_value_error_naming_it(case, exported, tmp_path):
    change, message = MALFORMED[case]
    if isinstance(change, str):
        text = change
    else:
        data = json.loads(json.dumps(exported))
        change(data)
        text = json.dumps(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    for backend in ("rust", "reference"):
        with pytest.raises(ValueError, match=r"^tokenizer\.json[: ]") as caught:
            superword.Tokenizer.from_hf(path, backend=backend)
        assert caught.match(message), case
        assert ".tiktoken" not in str(caught.value)


def test_special_ids_may_leave_gaps_but_not_reach_far(exported, tmp_path):
    # (ranks models keep ids below max(2 x tokens, 2**20): a vocab_size of 4 billion made
    # list(tokenizer) exhaust memory)
    data = json.loads(json.dumps(exported))
    path = tmp_path / "tokenizer.json"
    data["added_tokens"] = [{"content": "<x>", "id": 2**20 - 1}]
    path.write_text(json.dumps(data), encoding="utf-8")
    tok = superword.Tokenizer.from_hf(path)
    assert tok.vocab_size == 2**20
    assert tok.encode("a<x>", allowed_special="all")[-1] == 2**20 - 1
    data["added_tokens"] = [{"content": "<x>", "id": 4_000_000_000}]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer\.json: special token '<x>' has id 4000000000, far beyond"):
        superword.Tokenizer.from_hf(path)


# -- save_hf arguments and directories -------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, message", [
    ({"overwrite": "no"}, TypeError, "overwrite must be True or False"),
    ({"model_max_length": "64"}, TypeError, "model_max_length must be an int"),
    ({"model_max_length": 0}, ValueError, "model_max_length must be at least 1"),
    ({"sample": 5}, TypeError, "sample must be an iterable of documents"),
    ({"sample": "one document"}, TypeError, "sample must be an iterable of documents"),
    ({"sample": ["a", 5]}, TypeError, "sample document 1 must be a str, not int"),
    ({"sample": ["a\ud800"]}, ValueError, "sample document 0 contains a lone surrogate U\\+D800"),
    ({"eos_token": "<ab>", "pad_token": "b>c"}, ValueError, "overlap"),
])
def test_save_hf_checks_its_arguments_before_writing(kwargs, error, message, tmp_path):
    tok = superword.Tokenizer.load(SIMPLE)
    with pytest.raises(error, match=message):
        tok.save_hf(tmp_path / "out", **kwargs)
    assert not (tmp_path / "out").exists()


def test_save_hf_names_the_directory_it_cannot_create(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match=r"cannot create the directory .*file[/\\]out"):
        superword.Tokenizer.load(SIMPLE).save_hf(tmp_path / "file" / "out")


def test_superword_tokenizer_names_an_unknown_id(tmp_path):
    pytest.importorskip("transformers")
    from superword.hf import SuperwordTokenizer
    hf = SuperwordTokenizer(SIMPLE)
    with pytest.raises(ValueError, match="token id 99999 is out of range"):
        hf.convert_ids_to_tokens([1, 99999])
