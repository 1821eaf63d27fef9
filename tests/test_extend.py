"""Superwords on top of a base tokenizer (SPEC 10): hand-worked answers, the base's ids kept
(against tiktoken and tokenizers), reference == Rust byte for byte, files, pickles, counts,
the CLI, and bad input."""
from __future__ import annotations

import base64
import json
import pickle
import warnings

import pytest
import superword
from helpers import DATA, GOLDEN, read_jsonl_texts, read_lines
from superword import _extend
from superword.reference import extend as ref_extend
from superword.reference.merging import Merge

BACKENDS = ["reference", "rust"]
SIMPLE = r" ?\p{L}+| ?[^\s\p{L}]+|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def ranks_file(tmp_path, extra: list[str], name: str = "small.tiktoken", bytes_: range = range(256)) -> str:
    """A ranks file: the single bytes, then ``extra`` tokens, ranks in that order."""
    tokens = [bytes([b]) for b in bytes_] + [t.encode() for t in extra]
    path = tmp_path / name
    path.write_text("".join(f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(tokens)))
    return str(path)


@pytest.fixture
def small_base(tmp_path):
    return ranks_file(tmp_path, [" c", "at", " cat", " s", " sat", " t", "he", " the", "the", " m", " mat",
                                 " on"])


@pytest.fixture(scope="module")
def bpe_base(tmp_path_factory):
    """A ranks file of a BPE trained here (GPT-4o's pattern, simple mode), and its pattern."""
    from superword.reference.pretokenize import GPT4O
    path = str(tmp_path_factory.mktemp("base") / "taylor_bpe.tiktoken")
    superword.train(taylor(), 1200, "bpe", script_aware=False).save_tiktoken(path)
    return path, GPT4O


def taylor() -> list[str]:
    return read_jsonl_texts(GOLDEN / "taylorswift_400.jsonl")


def cl100k_tiktoken():
    tiktoken = pytest.importorskip("tiktoken")
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception as exc:  # no offline copy of the ranks: nothing is downloaded
        pytest.skip(f"cl100k_base is not available offline ({exc})")


def expand(tok: superword.Tokenizer, ids: list[int]) -> list[int]:
    """The base's ids of an extension's encoding: each superword replaced by the tokens its
    supermerge joined, again and again."""
    ext = ref_extend.loads(tok.model_text(), "m")
    id_of = dict(ext.ranks)
    id_of.update({t: i for i, t, _ in ext.superwords})
    parts = {}
    for m in ext.supermerges:
        parts.setdefault(id_of[m.left + m.right], (id_of[m.left], id_of[m.right]))
    out: list[int] = []
    stack = list(reversed(ids))
    while stack:
        i = stack.pop()
        if i in parts and i not in ext.ranks.values():
            stack.extend(reversed(parts[i]))
        else:
            out.append(i)
    return out


# -- hand-worked ------------------------------------------------------------------------------------

def test_a_worked_example_learns_the_pairs_of_whole_base_tokens(small_base):
    # pretokens (SIMPLE): "the", " cat", " sat", " on", " the", " mat"; every one is a base
    # token and holds a letter, so each document is one candidate of six tokens
    docs = ["the cat sat on the mat"] * 3 + ["the cat sat"] * 2
    tok = superword.train(docs, algorithm="superbpe", base=small_base, pattern=SIMPLE, supermerges=3,
                          backend="reference")
    ext = ref_extend.loads(tok.model_text(), "m")
    # pair counts: (the, cat) 5, (cat, sat) 5, (sat, on) 3, (on, the) 3, (the, mat) 3; the tie
    # at 5 goes to the smaller bytes: b" cat" < b"the" (a space sorts first)
    assert [(m.left, m.right, m.count) for m in ext.supermerges] == [
        (b" cat", b" sat", 5), (b"the", b" cat sat", 5), (b" on", b" the", 3)]
    # the base ends at id 255 + 12 = 267: superwords take 268, 269, 270
    assert [(i, t) for i, t, _ in ext.superwords] == [
        (268, b" cat sat"), (269, b"the cat sat"), (270, b" on the")]
    assert tok.encode("the cat sat on the mat") == [269, 270, tok.id_of(b" mat")]
    # (the, cat) is no supermerge, and the comma ends the run before " sat"
    assert tok.encode("the cat, sat") == [tok.id_of(b"the"), tok.id_of(b" cat"), ord(","),
                                          tok.id_of(b" sat")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_superword_ids_start_after_the_base_and_its_special_tokens(backend, tmp_path):
    path = ranks_file(tmp_path, [" c", "at", " cat", " s", " sat"])
    special = {"<|end|>": 400}
    base = superword.Tokenizer.from_tiktoken(path, SIMPLE, special, backend=backend)
    tok = superword.train(["a cat sat"] * 4, algorithm="superbpe", base=base, supermerges=1, backend=backend)
    assert tok.special_tokens == special
    assert [i for i, _, sup in tok if sup] == [401]
    assert tok.encode(" cat sat<|end|>", allowed_special="all") == [401, 400]
    assert tok.register_special_tokens(["<|pad|>"])["<|pad|>"] == 402
    again = superword.Tokenizer.load(_saved(tok, tmp_path), backend=backend)
    assert again.special_tokens == {"<|end|>": 400, "<|pad|>": 402}
    assert again.model_text() == tok.model_text()


def _saved(tok: superword.Tokenizer, tmp_path, name: str = "ext.model") -> str:
    path = str(tmp_path / name)
    tok.save(path)
    return path


# -- the base's ids stay -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cl100k_extension():
    enc = cl100k_tiktoken()
    docs = taylor()
    held, train_docs = docs[::10], [d for i, d in enumerate(docs) if i % 10]
    tok = superword.train(train_docs, algorithm="superbpe", base="cl100k_base", supermerges=200)
    return enc, tok, held


def test_cl100k_ids_stay_and_superwords_expand_to_exactly_tiktokens_ids(cl100k_extension):
    enc, tok, held = cl100k_extension
    assert tok.special_tokens == superword.CL100K_SPECIAL
    assert min(i for i, _, sup in tok if sup) == 100277
    plain = ["1234 + 5678 = ?", "日本語のテキスト", "def f(x):\n    return x\n", ""]
    saved = 0
    for text in held + plain:
        ours, theirs = tok.encode_ordinary(text), enc.encode_ordinary(text)
        assert expand(tok, ours) == theirs, text[:80]
        if not any(tok.is_superword(i) for i in ours):
            assert ours == theirs
        saved += len(theirs) - len(ours)
    assert saved > 0  # superwords applied on held-apart text of the domain
    for text in plain:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
    text = "the<|endoftext|>end"
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")


def test_a_llama3_style_tokenizer_json_keeps_its_ids(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, decoders, models, pre_tokenizers, trainers
    docs = taylor()
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    hf.train_from_iterator(docs, trainer)
    hf.add_special_tokens(["<|begin_of_text|>", "<|end_of_text|>"])
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    top = hf.get_vocab_size()
    for backend in BACKENDS:
        tok = superword.train(docs[::2], algorithm="superbpe", base=str(path), supermerges=50, backend=backend)
        assert tok.special_tokens == {"<|begin_of_text|>": top - 2, "<|end_of_text|>": top - 1}
        assert min(i for i, _, sup in tok if sup) == top
        for text in docs[1::2][:60]:
            ours = tok.encode_ordinary(text)
            assert expand(tok, ours) == hf.encode(text, add_special_tokens=False).ids


def test_an_o200k_style_ranks_file_keeps_tiktokens_ids(tmp_path):
    """o200k_base's ranks are not shipped offline, so its pattern is tested on ranks made here."""
    tiktoken = pytest.importorskip("tiktoken")
    from superword.reference.pretokenize import GPT4O
    docs = taylor()
    bpe = superword.train(docs, 1200, "bpe", script_aware=False)
    path = str(tmp_path / "o200k_style.tiktoken")
    bpe.save_tiktoken(path)
    with open(path) as f:
        ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in f)}
    enc = tiktoken.Encoding("o200k_style", pat_str=GPT4O, mergeable_ranks=ranks, special_tokens={})
    tok = superword.train(docs[::2], algorithm="superbpe", base=path, pattern=GPT4O, supermerges=40)
    for text in docs[1::2][:80]:
        assert expand(tok, tok.encode_ordinary(text)) == enc.encode_ordinary(text)


def test_the_real_o200k_base_keeps_tiktokens_ids():
    """Run where an offline copy of o200k_base's ranks is installed (a tiktoken plugin that
    registers ``o200k_base_offline``); superword never downloads them."""
    tiktoken = pytest.importorskip("tiktoken")
    from superword import _open
    if "o200k_base" not in _open.offline_encodings():
        pytest.skip("no offline copy of o200k_base's ranks here (superword never downloads)")
    constructors = _open._constructors()
    enc_dict = (constructors.get("o200k_base_offline") or constructors["o200k_base"])()
    enc = tiktoken.Encoding("o200k_base", pat_str=enc_dict["pat_str"],
                            mergeable_ranks=enc_dict["mergeable_ranks"],
                            special_tokens=enc_dict.get("special_tokens") or {})
    docs = taylor() + read_jsonl_texts(GOLDEN / "multi_1230.jsonl")
    tok = superword.train(docs[::2], algorithm="superbpe", base="o200k_base", supermerges=50)
    assert tok.special_tokens == dict(enc_dict.get("special_tokens") or {})
    assert min(i for i, _, sup in tok if sup) == max(enc.n_vocab, max(tok.special_tokens.values()) + 1)
    for text in docs[1::2][:120]:
        assert expand(tok, tok.encode_ordinary(text)) == enc.encode_ordinary(text)


# -- reference == Rust ---------------------------------------------------------------------------------

def _corpora():
    yield "taylorswift_400", taylor()
    yield "multi_1230", read_jsonl_texts(GOLDEN / "multi_1230.jsonl")
    if (DATA / "taylorswift.txt").exists():
        yield "taylorswift.txt", read_lines(DATA / "taylorswift.txt")


@pytest.mark.parametrize("base", ["small", "bpe", "cl100k_base"])
def test_the_reference_and_the_core_write_the_same_model_and_ids(base, small_base, bpe_base):
    if base == "cl100k_base":
        cl100k_tiktoken()
    spec, pattern = {"small": (small_base, SIMPLE), "bpe": bpe_base, "cl100k_base": (base, None)}[base]
    for name, docs in _corpora():
        models = [superword.train(docs, algorithm="superbpe", base=spec, pattern=pattern, supermerges=120,
                                  backend=b) for b in BACKENDS]
        assert models[0].model_text() == models[1].model_text(), name
        sample = docs[::7][:100]
        assert models[0].encode_batch(sample) == models[1].encode_batch(sample), name
        assert models[1].encode_batch(sample, threads=1) == models[1].encode_batch(sample, threads=2)


def test_counts_give_the_model_of_the_text(tmp_path):
    cl100k_tiktoken()
    docs = taylor()
    direct = superword.train(docs, algorithm="superbpe", base="cl100k_base", supermerges=60)
    counts = superword.count(docs, pattern=superword.CL100K_PATTERN, script_aware=False)
    counts.save(tmp_path / "c.swc")
    for b in BACKENDS:
        tok = superword.train(counts=str(tmp_path / "c.swc"), algorithm="superbpe", base="cl100k_base",
                              supermerges=60, backend=b)
        assert tok.model_text() == direct.model_text()
    wrong = superword.count(docs)
    with pytest.raises(ValueError, match="counted with the pattern.*own pattern in simple mode"):
        superword.train(counts=wrong, algorithm="superbpe", base="cl100k_base", supermerges=60)


# -- files, pickles, wrappers -----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_save_load_and_pickle_keep_the_model(backend, bpe_base, tmp_path):
    tok = superword.train(taylor(), algorithm="superbpe", base=bpe_base[0], pattern=bpe_base[1], supermerges=30,
                          backend=backend)
    assert tok.num_supermerges == 30
    path = _saved(tok, tmp_path)
    for other in BACKENDS:
        again = superword.Tokenizer.load(path, backend=other)
        assert again.kind == "extension" and again.model_text() == tok.model_text()
        assert superword.open_tokenizer(path, backend=other).model_text() == tok.model_text()
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.model_text() == tok.model_text() and copy.backend == backend
    assert pickle.dumps(tok) == pickle.dumps(copy)
    text = taylor()[3]
    assert copy.encode(text) == tok.encode(text) and tok.decode(tok.encode(text)) == text
    pattern = tok.save_tiktoken(tmp_path / "x.tiktoken")  # (measured in test_extend_export.py)
    assert pattern.endswith(tok.pattern) and len(pattern) > len(tok.pattern)
    base = _extend.base_of(tok)
    assert base.kind == "tiktoken" and base.encode(text) == expand(tok, tok.encode(text))


def test_the_transformers_wrapper_gives_our_ids(bpe_base, tmp_path):
    pytest.importorskip("transformers")
    from superword.hf import SuperwordTokenizer
    tok = superword.train(taylor(), algorithm="superbpe", base=bpe_base[0], pattern=bpe_base[1], supermerges=30)
    path = _saved(tok, tmp_path)
    wrapped = SuperwordTokenizer(path)
    text = taylor()[5]
    assert wrapped(text)["input_ids"] == tok.encode(text)
    assert wrapped.decode(wrapped(text)["input_ids"]) == text


def test_the_cli_trains_over_a_base_and_stats_shows_the_base_beside_it(bpe_base, tmp_path, capsys):
    from superword import cli
    small_base, pattern = bpe_base
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(taylor()) + "\n")
    out = tmp_path / "ext.model"
    cli.main(["train", str(corpus), "--algorithm", "superbpe", "--base", small_base, "--base-pattern", pattern,
              "--supermerges", "25", "--hold-back", "10", "-q", "-o", str(out)])
    printed = capsys.readouterr().out
    assert "SuperBPE over a base" in printed and "than its base" in printed
    tok = superword.Tokenizer.load(out)
    assert tok.num_supermerges >= 25
    with open(str(out) + ".json") as f:
        assert json.load(f)["algorithm"]
    cli.main(["stats", str(out), "--on", str(corpus)])
    printed = capsys.readouterr().out
    assert "ext.model (base)" in printed and "ranks BPE" in printed and "SuperBPE over a base" in printed
    code = cli.main(["train", str(corpus), "--algorithm", "superbpe", "--base", small_base, "--base-pattern",
                     pattern, "--vocab-size", "9000", "--supermerges", "5", "-q", "-o", str(out)])
    assert code != 0 and "--vocab-size does not apply with --base" in capsys.readouterr().err


# -- bad input --------------------------------------------------------------------------------------------

def test_a_base_that_is_not_byte_level_bpe_is_refused(tmp_path):
    path = ranks_file(tmp_path, ["ab"], bytes_=range(0x20, 0x7F))
    with pytest.raises(ValueError, match=r"small\.tiktoken: no token is the single byte 0x00"):
        superword.train(["ab ab"], algorithm="superbpe", base=path, pattern=SIMPLE, supermerges=1)
    boundless = superword.train(taylor(), 600, "boundless")
    with pytest.raises(ValueError, match="has supermerges already"):
        superword.train(["ab ab"], algorithm="superbpe", base=boundless, supermerges=1)
    # (our word models are bases of their own kind: tests/test_extend_word.py)


def test_a_pattern_that_does_not_match_the_base_is_refused(tmp_path):
    cl100k_tiktoken()
    from superword.reference.pretokenize import GPT4O
    tok = superword.open_tokenizer("cl100k_base")
    path = str(tmp_path / "cl100k.tiktoken")
    tok.save_tiktoken(path)
    with pytest.raises(ValueError, match="its pattern does not match its tokens"):
        superword.train(["a b"], algorithm="superbpe", base=path, pattern=r"\S|\s", supermerges=1)
    _extend.check_pattern(superword.open_tokenizer(path, pattern="cl100k_base"), "cl100k")
    del GPT4O


def test_ids_past_2_31_and_bad_arguments_are_refused(small_base):
    kwargs = dict(algorithm="superbpe", base=small_base, pattern=SIMPLE)
    with pytest.raises(ValueError, match=r"past 2\*\*31 - 1"):
        superword.train(["a cat"], supermerges=2**31, **kwargs)
    with pytest.raises(ValueError, match="needs supermerges"):
        superword.train(["a cat"], **kwargs)
    with pytest.raises(ValueError, match="vocab_size does not apply"):
        superword.train(["a cat"], 5000, supermerges=3, **kwargs)
    with pytest.raises(ValueError, match="algorithm='superbpe'"):
        superword.train(["a cat"], base=small_base, supermerges=3)
    with pytest.raises(ValueError, match="tau and blowup"):
        superword.train(["a cat"], supermerges=3, tau=0.9, **kwargs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_corpus_too_small_warns_of_the_shortfall(backend, small_base):
    with pytest.warns(superword.TrainingShortfall, match="made 2 of the 10 superwords"):
        tok = superword.train(["a cat sat"], algorithm="superbpe", base=small_base, pattern=SIMPLE,
                              supermerges=10, backend=backend)
    assert tok.num_supermerges == 2  # ("a", " cat", " sat"): two merges make it one token


def _damaged(text: str) -> list[tuple[str, str]]:
    lines = text.split("\n")
    at = {line: i for i, line in enumerate(lines)}
    merges = at["supermerges"]
    supers = at["superwords"]
    first = lines[merges + 2].split(" ")

    def edit(i: int, new: str) -> str:
        return "\n".join(lines[:i] + [new] + lines[i + 1:])
    return [
        (text.replace("superword extension v1", "superword extension v7", 1),
         "line 1: not a superword extension model of this version"),
        (text[:-1], "does not end with a newline"),
        (edit(supers + 1, "99999"), f"line {supers + 2}: 99999 superwords announced"),
        (edit(merges + 2, " ".join([first[0], "999999", *first[2:]])), f"line {merges + 3}: the left part"),
        (edit(merges + 2, " ".join([*first[:3], "5", "7"])), f"line {merges + 3}: the flag"),
        (edit(at["base"] + 2, "!!! 0"), f"line {at['base'] + 3}: the token is not valid base64"),
        (edit(at["base"] + 3, lines[at["base"] + 2]), f"line {at['base'] + 4}: id 0 does not follow"),
        (edit(at["pattern"] + 1, "not json"), f"line {at['pattern'] + 2}: the pattern is not a JSON string"),
        (text + "extra\n", "unexpected text after the supermerges"),
        (edit(at["base"] + 2, lines[at["base"] + 2].split(" ")[0] + " 2000000000"),
         f"line {at['base'] + 3}: id 2000000000 is far beyond"),
        (edit(supers + 2, lines[supers + 2].replace(lines[supers + 2].split(" ")[0], "1", 1)),
         f"line {supers + 3}: the superwords' ids"),
    ]


def test_damaged_model_files_are_refused_naming_the_line_in_both_backends(small_base, tmp_path):
    tok = superword.train(["the cat sat on the mat"] * 3, algorithm="superbpe", base=small_base,
                          pattern=SIMPLE, supermerges=2)
    for bad, why in _damaged(tok.model_text()):
        path = tmp_path / "bad.model"
        path.write_text(bad)
        messages = []
        for backend in BACKENDS:
            with pytest.raises(ValueError) as info:
                superword.Tokenizer.load(path, backend=backend)
            messages.append(str(info.value))
            assert str(path) in messages[-1] and why in messages[-1], messages[-1]
        assert messages[0] == messages[1]


def test_the_reference_model_round_trips_through_its_text():
    ext = ref_extend.Extension({bytes([b]): b for b in range(256)}, SIMPLE, {"<s>": 300})
    ext.ranks[b"ab"] = 256
    ext.superwords = [(301, b"ab ab", 4)]
    ext.supermerges = [Merge(b"ab", b" ", 4, False)]
    with pytest.raises(ValueError, match=r"line \d+: this supermerge makes new bytes"):
        ref_extend.loads(ref_extend.dumps(ext), "m")  # b"ab " is not the superword b"ab ab"
    ext.ranks[b" ab"] = 257
    ext.superwords = [(301, b"ab ab", 4)]
    ext.supermerges = [Merge(b"ab", b" ab", 4, True)]
    assert ref_extend.loads(ref_extend.dumps(ext), "m") == ext
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ref_extend.loads(ref_extend.dumps(ext), "m").first_free_id() == 301


def test_any_thread_count_gives_the_same_model(bpe_base):
    docs = taylor()
    one, two = (superword.train(docs, algorithm="superbpe", base=bpe_base[0], pattern=bpe_base[1],
                                supermerges=80, threads=t) for t in (1, 2))
    assert one.model_text() == two.model_text()


def test_ray_counts_for_an_extension_as_for_the_other_algorithms(bpe_base, tmp_path):
    ray = pytest.importorskip("ray")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(taylor()) + "\n")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = superword.train([corpus], algorithm="superbpe", base=bpe_base[0], pattern=bpe_base[1],
                                 supermerges=50, executor="ray")
    finally:
        ray.shutdown()
    here = superword.train([corpus], algorithm="superbpe", base=bpe_base[0], pattern=bpe_base[1], supermerges=50)
    assert on_ray.model_text() == here.model_text()


def test_long_runs_encode_alike_in_both_backends(bpe_base):
    """Runs of thousands of single-token words (the core's heap, past 64 tokens) give the
    reference's ids."""
    docs = taylor()
    models = [superword.train(docs, algorithm="superbpe", base=bpe_base[0], pattern=bpe_base[1],
                              supermerges=200, backend=b) for b in BACKENDS]
    supers = [raw.decode() for _, raw, sup in models[1] if sup][:20]
    texts = ["".join(supers) * 50, supers[0] * 2000, " ".join(docs[3].split()[:40]) * 60, "the the the " * 700]
    for text in texts:
        ref, rust = (m.encode_ordinary(text) for m in models)
        assert ref == rust
        assert models[1].decode(rust) == text
    # a run of 4,000 pretokens: the superword applies throughout
    assert models[1].encode_ordinary(texts[1]) == [models[1].id_of(supers[0].encode())] * 2000
