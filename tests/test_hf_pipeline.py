"""superword models first-class inside ``transformers`` and ``datasets``, offline, with the real
libraries: AutoTokenizer on saved and exported folders (in a fresh interpreter, so the folder's
own code file is what runs), worker processes (a spawn pool, ``Dataset.map(num_proc=2)`` and its
cache), the batch call's own BatchEncoding against transformers' generic path, bad folders."""
from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import random
import subprocess
import sys
import warnings

import pytest
import superword
from helpers import DATA, need, read_lines

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")
np = pytest.importorskip("numpy")
from superword import _hf_folder  # noqa: E402
from superword.hf import SuperwordTokenizer  # noqa: E402

EOT, PAD, BOS = "<|endoftext|>", "<|pad|>", "<|bos|>"

#: Texts every run has: several scripts, special-token strings, empty and blank texts, long words.
BUILTIN = [
    "It is one of the best in the world, and one of the most visited.",
    "The cat sat on the mat; the dog sat on the log.",
    "In the end, it was one of the best of the year.",
    "Grüße aus 東京, Tokyo! Mixed:ไทยtext 年2024年",
    "Привет, мир! Это один из лучших.",
    "héllo wörld — naïve café",
    "Hi<|endoftext|>there<|pad|>",
    "<|endoftext|>",
    "",
    " ",
    "\n\n  now",
    "antidisestablishmentarianism " * 3,
    "🙂 emoji 🙂🙂 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
]
#: The corpus the test model is trained on (no shared data needed).
CORPUS = [line for _ in range(20) for line in BUILTIN[:6]] + [
    "one of the best " * 5, "of the world " * 4, "in the end " * 4, "it is one of the " * 3]


def real_texts(n_per_file=40):
    """A few hundred real documents: Taylor Swift's article and the start of every language file."""
    texts = read_lines(need(DATA / "taylorswift.txt"))[:120]
    for lang in ("ar", "de", "hi", "ja", "km", "ko", "lo", "my", "ru", "th", "zh"):
        texts += read_lines(DATA / "multi" / f"{lang}.txt", 200)[-n_per_file:]
    return texts


@pytest.fixture(params=["builtin", "shared"])
def texts(request):
    return BUILTIN if request.param == "builtin" else BUILTIN + real_texts()


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    tok = superword.train(CORPUS, vocab_size=420, algorithm="boundless")
    assert tok.num_supermerges > 0
    path = tmp_path_factory.mktemp("model") / "tok.model"
    tok.save(path)
    return path


@pytest.fixture(scope="module")
def sw(model_file):
    tok = superword.Tokenizer.load(model_file)
    tok.register_special_tokens([EOT, PAD])
    return tok


@pytest.fixture
def hf(model_file):
    return SuperwordTokenizer(model_file, eos_token=EOT, pad_token=PAD)


def fresh_python(code, tmp_path, *args, timeout=300):
    """Run ``code`` in a new interpreter (superword.hf not imported), offline, with transformers'
    module cache under ``tmp_path``; return its stdout parsed as JSON."""
    env = {**os.environ, "HF_MODULES_CACHE": str(tmp_path / "hf-modules"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                         env=env, stdin=subprocess.DEVNULL, timeout=timeout)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


#: In a fresh interpreter: AutoTokenizer with and without trust_remote_code on the folder argv[1],
#: the texts of the JSON file argv[2]; prints where the class came from, the ids and the refusal.
AUTO = """
import json, sys
import transformers
folder, texts = sys.argv[1], json.load(open(sys.argv[2], encoding="utf-8"))
try:
    transformers.AutoTokenizer.from_pretrained(folder)
    refusal = None
except ValueError as exc:
    refusal = str(exc)
before = "superword.hf" in sys.modules
tok = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
code = [m for m in sys.modules if m.startswith("transformers_modules") and m.endswith("tokenization_superword")]
print()  # (the refusal's prompt has no newline)
print(json.dumps({"class": type(tok).__module__ + "." + type(tok).__name__, "imported_before": before,
                  "code_module": code, "refusal": refusal, "ids": tok(texts)["input_ids"],
                  "decoded": tok.batch_decode(tok(texts)["input_ids"]),
                  "special": [tok.eos_token_id, tok.pad_token_id]}))
"""


def check_auto_tokenizer(folder, texts, expected, tmp_path):
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    got = fresh_python(AUTO, tmp_path, folder, tmp_path / "texts.json")
    assert got["class"] == "superword.hf.SuperwordTokenizer"
    assert not got["imported_before"] and got["code_module"]  # the folder's code file ran
    assert got["ids"] == expected
    assert got["decoded"] == texts
    assert "trust_remote_code=True" in got["refusal"]
    return got


# -- AutoTokenizer ---------------------------------------------------------------------------

def test_auto_tokenizer_with_trust_remote_code_loads_a_saved_folder_with_superword_ids(
        model_file, sw, texts, tmp_path):
    SuperwordTokenizer(model_file, eos_token=EOT, pad_token=PAD).save_pretrained(tmp_path / "tok")
    config = json.loads((tmp_path / "tok" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["auto_map"] == _hf_folder.AUTO_MAP and config["tokenizer_class"] == "SuperwordTokenizer"
    assert (tmp_path / "tok" / _hf_folder.CODE_FILE).read_text(encoding="utf-8") == _hf_folder.code_text()
    got = check_auto_tokenizer(tmp_path / "tok", texts, sw.encode_batch(texts, allowed_special="all"), tmp_path)
    assert got["special"] == [sw.special_tokens[EOT], sw.special_tokens[PAD]]


def test_auto_tokenizer_loads_a_cli_export_of_a_boundless_model_exactly(model_file, texts, tmp_path):
    from superword.cli import main
    out = tmp_path / "export"
    args = ["export", str(model_file), "--to", "hf", str(out), "--eos-token", EOT, "--pad-token", PAD]
    assert main(args) in (0, None)
    assert {"tokenizer.json", _hf_folder.MODEL_FILE, _hf_folder.CODE_FILE} <= set(os.listdir(out))
    both = superword.Tokenizer.load(model_file)
    both.register_special_tokens([EOT, PAD])  # what the export adds to the model's special tokens
    got = check_auto_tokenizer(out, texts, both.encode_batch(texts, allowed_special="all"), tmp_path)
    # they have the same ids in the stock tokenizer.json, which stays readable by name
    tokenizers = pytest.importorskip("tokenizers")
    stock = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    assert got["special"] == [stock.token_to_id(EOT), stock.token_to_id(PAD)]
    theirs = [e.ids for e in stock.encode_batch(texts, add_special_tokens=False)]
    assert [both.decode(ids) for ids in theirs] == texts


def test_a_word_model_export_stays_a_stock_folder(tmp_path):
    tok = superword.train(CORPUS, vocab_size=300, algorithm="bpe", script_aware=False)
    tok.save_hf(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert "auto_map" not in config and config["tokenizer_class"] == "PreTrainedTokenizerFast"


def test_after_importing_superword_hf_auto_tokenizer_needs_no_flag(model_file, sw, tmp_path):
    tok = superword.train(CORPUS, vocab_size=420, algorithm="superbpe", supermerges=40)
    tok.save_hf(tmp_path / "export")
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "export"))
    assert type(auto) is SuperwordTokenizer
    assert auto(BUILTIN, split_special_tokens=True)["input_ids"] == tok.encode_batch(BUILTIN, allowed_special="none")


def test_save_pretrained_writes_through_a_temporary_folder(hf, tmp_path):
    written = hf.save_pretrained(tmp_path / "tok")
    assert sorted(os.listdir(tmp_path / "tok")) == sorted(os.path.basename(p) for p in written)
    assert not [n for n in os.listdir(tmp_path / "tok") if n.startswith(".superword-")]
    again = hf.save_pretrained(tmp_path / "tok")  # over an earlier save
    assert sorted(again) == sorted(written)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="file exists and is not a directory"):
        hf.save_pretrained(tmp_path / "file")


# -- bad folders and pickles -------------------------------------------------------------------

def test_a_folder_without_its_model_file_is_named(hf, tmp_path):
    hf.save_pretrained(tmp_path / "tok")
    os.remove(tmp_path / "tok" / _hf_folder.MODEL_FILE)
    where = str(tmp_path / "tok" / _hf_folder.MODEL_FILE)
    with pytest.raises(FileNotFoundError, match=f"{where} is missing"):
        SuperwordTokenizer.from_pretrained(str(tmp_path / "tok"))
    with pytest.raises(FileNotFoundError, match=f"{where} is missing"):
        transformers.AutoTokenizer.from_pretrained(str(tmp_path / "tok"), trust_remote_code=True)


def test_a_folder_of_a_later_format_names_its_config_file(hf, tmp_path):
    hf.save_pretrained(tmp_path / "tok")
    config_path = tmp_path / "tok" / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    assert config[_hf_folder.FORMAT_KEY] == _hf_folder.FORMAT
    for value, message in [(_hf_folder.FORMAT + 1, "written by a later superword"), ("1", "must be the integer")]:
        config_path.write_text(json.dumps({**config, _hf_folder.FORMAT_KEY: value}), encoding="utf-8")
        with pytest.raises(ValueError, match=f"{config_path}: superword_format .*{message}"):
            SuperwordTokenizer.from_pretrained(str(tmp_path / "tok"))
    del config[_hf_folder.FORMAT_KEY]  # a folder from before the key existed: the same files
    config_path.write_text(json.dumps(config), encoding="utf-8")
    assert SuperwordTokenizer.from_pretrained(str(tmp_path / "tok"))("one of the")["input_ids"] == \
        hf("one of the")["input_ids"]


def test_a_model_file_of_another_version_is_named(hf, tmp_path):
    hf.save_pretrained(tmp_path / "tok")
    path = tmp_path / "tok" / _hf_folder.MODEL_FILE
    path.write_text(path.read_text(encoding="utf-8").replace("BoundlessBPE v2", "BoundlessBPE v3", 1),
                    encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}, line 1: not a BoundlessBPE v2 model"):
        SuperwordTokenizer.from_pretrained(str(tmp_path / "tok"))


def test_a_pickle_of_another_state_format_is_refused_by_name(hf):
    state = hf.__getstate__()
    state["superword_pickle_format"] = 99
    other = SuperwordTokenizer.__new__(SuperwordTokenizer)
    with pytest.raises(ValueError, match="pickle of a SuperwordTokenizer has state format 99"):
        other.__setstate__(state)


# -- pickling and worker processes ------------------------------------------------------------

def test_superword_tokenizer_pickles_with_its_changed_settings(hf):
    hf.padding_side, hf.model_max_length, hf.add_eos_token = "left", 12, True
    again = pickle.loads(pickle.dumps(hf))
    assert type(again) is SuperwordTokenizer
    assert (again.padding_side, again.model_max_length, again.add_eos_token) == ("left", 12, True)
    assert again.get_vocab() == hf.get_vocab()
    for kwargs in ({}, {"padding": True, "truncation": True}, {"return_offsets_mapping": True}):
        assert again(BUILTIN, **kwargs) == hf(BUILTIN, **kwargs)
    assert again.tokenize("Hi<|endoftext|>") == hf.tokenize("Hi<|endoftext|>")


PICKLE_BYTES = """
import hashlib, json, pickle, sys
from superword.hf import SuperwordTokenizer
from datasets.fingerprint import Hasher
tok = SuperwordTokenizer(sys.argv[1], eos_token="<|endoftext|>", pad_token="<|pad|>")
tok(["one of the best"], padding=True, return_offsets_mapping=True)  # state a call may leave
print(json.dumps([hashlib.sha256(pickle.dumps(tok)).hexdigest(), Hasher.hash(tok)]))
"""


def test_pickle_and_datasets_fingerprint_do_not_depend_on_the_hash_seed(model_file, tmp_path):
    pytest.importorskip("datasets")
    seen = set()
    for seed in ("0", "1", "12345"):
        os.environ["PYTHONHASHSEED"] = seed
        try:
            seen.add(tuple(fresh_python(PICKLE_BYTES, tmp_path, model_file)))
        finally:
            del os.environ["PYTHONHASHSEED"]
    assert len(seen) == 1


def test_a_spawn_pool_gives_encode_batch_ids(hf, sw):
    texts = BUILTIN * 8
    chunks = [texts[i:i + 13] for i in range(0, len(texts), 13)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        got = pool.map(hf, chunks)
    assert [ids for batch in got for ids in batch["input_ids"]] == sw.encode_batch(texts, allowed_special="all")


#: In a fresh interpreter: Dataset.map(batched=True, num_proc=2) of SuperwordTokenizer on the texts
#: of argv[2] saved under argv[3], twice, with two tokenizer objects built alike, then with one that
#: encodes differently; workers started with the method argv[4].  Prints ids, fingerprints, files.
DATASETS_MAP = """
import json, sys
import datasets, multiprocess
from superword.hf import SuperwordTokenizer
model, texts, where, method = sys.argv[1], json.load(open(sys.argv[2], encoding="utf-8")), sys.argv[3], sys.argv[4]
multiprocess.set_start_method(method, force=True)
datasets.Dataset.from_dict({"text": texts}).save_to_disk(where)
ds = datasets.load_from_disk(where)

def run(tokenizer):
    out = ds.map(lambda batch: tokenizer(batch["text"]), batched=True, batch_size=16, num_proc=2,
                 remove_columns=["text"])
    columns = out.to_dict()
    return {"ids": columns["input_ids"], "mask": columns["attention_mask"], "fingerprint": out._fingerprint,
            "files": [f["filename"] for f in out.cache_files]}

def tokenizer(**more):
    return SuperwordTokenizer(model, eos_token="<|endoftext|>", pad_token="<|pad|>", **more)

print(json.dumps([run(tokenizer()), run(tokenizer()), run(tokenizer(add_eos_token=True))]))
"""


def check_datasets_map(model_file, sw, texts, method, tmp_path, timeout):
    pytest.importorskip("datasets")
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    try:
        first, second, other = fresh_python(DATASETS_MAP, tmp_path, model_file, tmp_path / "texts.json",
                                            tmp_path / "ds", method, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"Dataset.map(num_proc=2) with {method} workers did not finish in {timeout} s")
    assert first["ids"] == sw.encode_batch(texts, allowed_special="all")
    assert first["mask"] == [[1] * len(ids) for ids in first["ids"]]
    # the same map with another tokenizer object built alike: the same fingerprint, so datasets
    # reads the files of the first map instead of tokenizing again
    assert second["fingerprint"] == first["fingerprint"] and second["files"] == first["files"]
    assert all(os.path.dirname(f) == str(tmp_path / "ds") for f in first["files"])
    # a tokenizer that encodes differently is another fingerprint
    assert other["fingerprint"] != first["fingerprint"]
    assert other["ids"] == [ids + [sw.special_tokens[EOT]] for ids in first["ids"]]


@pytest.mark.parametrize("method", ["fork", "spawn"])  # fork: datasets' own default on Linux
def test_datasets_map_with_two_processes_gives_encode_batch_ids_and_is_cached(model_file, sw, texts, method,
                                                                               tmp_path):
    check_datasets_map(model_file, sw, texts, method, tmp_path, timeout=240)


# -- the batch call's own BatchEncoding equals transformers' generic path ------------------------

def same_encoding(fast, generic):
    assert type(fast) is type(generic)
    assert list(fast.keys()) == list(generic.keys())
    for key in generic:
        a, b = fast[key], generic[key]
        if isinstance(b, np.ndarray):
            assert isinstance(a, np.ndarray) and (a.dtype, a.shape) == (b.dtype, b.shape), key
            if b.dtype == object:  # a ragged batch: one array per text
                assert [list(x) for x in a] == [list(x) for x in b], key
            else:
                assert (a == b).all(), key
        else:
            assert a == b, key


def outcome(tok, fast, inputs, kwargs):
    tok.fast_batch = fast
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tok(inputs, **kwargs)
    except Exception as exc:  # the same refusal on both paths
        return type(exc), str(exc)
    finally:
        tok.fast_batch = True


OPTIONS = {
    "padding": [False, True, "longest", "max_length"],
    "truncation": [None, False, True, "only_first", "only_second", "longest_first"],
    "max_length": [None, 0, 1, 3, 12, 40],
    "pad_to_multiple_of": [None, 8],
    "padding_side": [None, "left", "right"],
    "return_tensors": [None, "np"],
    "return_attention_mask": [None, False, True],
    "return_token_type_ids": [None, True, False],
    "return_special_tokens_mask": [False, True],
    "return_length": [False, True],
    "return_offsets_mapping": [False, True],
    "add_special_tokens": [True, False],
    "split_special_tokens": [False, True],
}
#: The tokenizer's own settings that the batch call reads.
SETTINGS = {"add_bos_token": [False, True], "add_eos_token": [False, True],
            "truncation_side": ["right", "left"], "padding_side": ["right", "left"],
            "model_max_length": [None, 16]}


def option_grid(n, seed=7):
    """``n`` combinations drawn with a fixed seed, after every value of every option once."""
    rng = random.Random(seed)
    base = {k: v[0] for k, v in OPTIONS.items()}
    combos = [{**base, k: value} for k, values in OPTIONS.items() for value in values[1:]]
    combos += [{k: rng.choice(v) for k, v in OPTIONS.items()} for _ in range(n)]
    settings = [{k: rng.choice(v) for k, v in SETTINGS.items()} for _ in combos]
    return list(zip(combos, settings))


@pytest.fixture(scope="module")
def grid_tokenizer(model_file):
    return SuperwordTokenizer(model_file, eos_token=EOT, pad_token=PAD, bos_token=BOS)


@pytest.mark.parametrize("inputs", ["batch", "one text", "one empty text"])
def test_the_batch_encoding_equals_the_generic_path_over_a_grid_of_options(grid_tokenizer, inputs):
    tok = grid_tokenizer
    texts = {"batch": BUILTIN, "one text": BUILTIN[3], "one empty text": ""}[inputs]
    default_max = tok.model_max_length
    refused = 0
    for kwargs, settings in option_grid(300):
        for key, value in settings.items():
            setattr(tok, key, default_max if key == "model_max_length" and value is None else value)
        fast, generic = outcome(tok, True, texts, kwargs), outcome(tok, False, texts, kwargs)
        if isinstance(generic, tuple):
            refused += 1
            assert fast == generic, (kwargs, settings)
        else:
            same_encoding(fast, generic)
    tok.model_max_length = default_max
    assert refused < 250  # most combinations encode (the refusals are real ones, e.g. ragged tensors)


def test_the_batch_encoding_equals_the_generic_path_on_real_texts(grid_tokenizer, texts):
    tok = grid_tokenizer
    for kwargs in ({}, {"padding": True}, {"return_offsets_mapping": True}, {"padding": True, "return_tensors": "np"},
                   {"padding": "max_length", "max_length": 4000, "return_tensors": "np", "return_length": True,
                    "return_special_tokens_mask": True, "return_token_type_ids": True},
                   {"padding": True, "truncation": True, "max_length": 24, "return_tensors": "np",
                    "return_offsets_mapping": True, "return_special_tokens_mask": True}):
        same_encoding(outcome(tok, True, texts, kwargs), outcome(tok, False, texts, kwargs))


@pytest.mark.parametrize("texts", [[*BUILTIN, "a" * 1000 + "é" * 300], [t for t in BUILTIN if t.isascii()]],
                         ids=["any text", "ascii only"])
def test_offsets_cover_each_text_token_by_token(hf, sw, texts):
    special = {i: s for s, i in sw.special_tokens.items()}
    rows = hf(texts, return_offsets_mapping=True)["offset_mapping"]
    hf.fast_batch = False
    assert hf(texts, return_offsets_mapping=True)["offset_mapping"] == rows
    hf.fast_batch = True
    for text, ids, row in zip(texts, sw.encode_batch(texts, allowed_special="all"), rows):
        assert len(row) == len(ids)
        if not ids:
            continue
        assert row[0][0] == 0 and row[-1][1] == len(text)
        for (a, b), i in zip(row, ids):
            if i in special:
                assert text[a:b] == special[i]
            else:  # a token that starts or ends inside a character covers that character
                assert sw.token_bytes(i) in text[a:b].encode("utf-8")
        for (_, b), (a, _) in zip(row, row[1:]):
            assert a in (b, b - 1)  # the next token starts here, or inside the last character


def test_pairs_and_split_words_still_take_the_generic_path(hf, sw):
    pair = hf(["one of the"], ["best"], padding=True)
    assert pair["input_ids"] == [sw.encode("one of the") + sw.encode("best")]
    words = hf(["one", " of"], is_split_into_words=True)
    assert words["input_ids"] == sw.encode("one") + sw.encode(" of")
