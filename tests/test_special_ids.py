"""Special tokens: their ids in model files and ranks models, cutting texts at many of them,
and the overlap rule of registration.  Both backends give the same ids and, for what they
refuse, the same message."""
from __future__ import annotations

import base64
import random
import re

import pytest
import superword
from superword import _api
from superword._reference_core import ReferenceRankCore
from superword._specials import MAX_SPECIAL_LENGTH
from superword.reference.encode import encode_with_specials

BACKENDS = ["reference", "rust"]
DOCS = ["the cat sat on the mat", "the dog sat on the log"] * 10
PATTERN = r"\w+|\s+|[^\w\s]+"


@pytest.fixture(scope="module")
def model_text() -> str:
    """A small model's file text; its vocabulary has ids 0..n-1, no special tokens."""
    return superword.train(DOCS, 270, "bpe", backend="reference").model_text()


def with_specials(text: str, lines: list[str]) -> str:
    section = "special_tokens\n" + "".join(f"{len(lines)}\n" + "".join(f"{x}\n" for x in lines))
    assert "special_tokens\n0\n" in text
    return text.replace("special_tokens\n0\n", section)


def vocab_size(text: str) -> int:
    return int(text.split("\n")[2])


def refusals(call, backends=BACKENDS) -> list[str]:
    """The message each backend refuses ``call(backend)`` with (they must both refuse)."""
    out = []
    for backend in backends:
        with pytest.raises(ValueError) as info:
            call(backend)
        out.append(str(info.value))
    return out


# -- special token ids in model files (SPEC 8) ----------------------------------------------

@pytest.mark.parametrize("ids,message", [
    (["5"], r"line \d+: special token \"<x>\" has an id outside {n}\.\.{n}"),  # a vocabulary id
    (["{n+1}"], r"has an id outside {n}\.\.{n}"),  # a gap after the vocabulary
    (["4294967295"], r"has an id outside {n}\.\.{n}"),
    (["9" * 5000], r"has an id outside {n}\.\.{n}"),
    (["{n}", "{n}"], r"line \d+: special token id {n} appears twice"),
])
def test_special_ids_of_a_model_file_follow_the_vocabulary(tmp_path, model_text, ids, message):
    n = vocab_size(model_text)
    ids = [i.replace("{n+1}", str(n + 1)).replace("{n}", str(n)) for i in ids]
    names = ["<x>", "<y>"][:len(ids)]
    path = tmp_path / "s.model"
    path.write_text(with_specials(model_text, [f"{i} {s}" for i, s in zip(ids, names)]), encoding="utf-8")
    got = refusals(lambda b: superword.Tokenizer.load(path, backend=b))
    assert got[0] == got[1]
    assert got[0].startswith(f"{path}, line ")
    assert re.search(message.replace("{n}", str(n)), got[0]), got[0]


def test_a_special_string_given_twice_is_refused_not_renumbered(tmp_path, model_text):
    # (it used to load with the last id, and the next registered token then took an id the
    # file had already used: the backends decoded that id differently)
    n = vocab_size(model_text)
    path = tmp_path / "s.model"
    path.write_text(with_specials(model_text, [f"{n} <x>", f"{n + 1} <x>"]), encoding="utf-8")
    got = refusals(lambda b: superword.Tokenizer.load(path, backend=b))
    assert got[0] == got[1]
    assert got[0].endswith("special token \"<x>\" appears twice")


def test_special_ids_after_the_vocabulary_load_in_any_order(tmp_path, model_text):
    n = vocab_size(model_text)
    path = tmp_path / "s.model"
    path.write_text(with_specials(model_text, [f"{n + 1} <b>", f"{n} <a>"]), encoding="utf-8")
    loaded = [superword.Tokenizer.load(path, backend=b) for b in BACKENDS]
    for tok in loaded:
        assert list(tok.special_tokens.items()) == [("<a>", n), ("<b>", n + 1)]
        assert tok.vocab_size == n + 2
        tok.register_special_tokens(["<c>"])
        assert tok.special_tokens["<c>"] == n + 2
        ids = tok.encode("x<b><c><a>", allowed_special="all")
        assert ids[-3:] == [n + 1, n + 2, n]
        assert tok.decode(ids) == "x<b><c><a>"
    assert loaded[0].model_text() == loaded[1].model_text()


# -- many special tokens ---------------------------------------------------------------------

def test_a_model_with_many_special_tokens_loads_and_encodes(tmp_path, model_text):
    # 30,000 special tokens: loading compared each with all before it, and every encode
    # looked for each of them from each position (half a second per call, 44 s with 200,000)
    n, k = vocab_size(model_text), 30_000
    path = tmp_path / "s.model"
    path.write_text(with_specials(model_text, [f"{n + i} <s{i}>" for i in range(k)]), encoding="utf-8")
    text = "the cat <s1> sat<s29999><s12>on<s1 <s7>" * 50
    expected = None
    for backend in BACKENDS:
        tok = superword.Tokenizer.load(path, backend=backend)
        assert tok.vocab_size == n + k
        ids = tok.encode(text, allowed_special="all")
        assert ids == tok.encode(text, allowed_special="all")  # (the kept matcher)
        assert [i for i in ids if i >= n][:5] == [n + 1, n + 29999, n + 12, n + 7, n + 1]
        assert tok.decode(ids) == text
        batch = tok.encode_batch([text, "<s5>", ""] * 4, allowed_special="all")
        assert batch[:3] == [ids, [n + 5], []]
        assert tok.encode("<s5><s6>", allowed_special={"<s6>"})[-1] == n + 6
        assert expected is None or ids == expected
        expected = ids


def spec_cut(text: str, special: dict[str, int], allowed: set[str]) -> list[str | int]:
    """SPEC 7.1 written out: at each point the earliest occurrence, the longest at one place."""
    out: list[str | int] = []
    start = 0
    while True:
        hits = [(text.find(s, start), -len(s), s) for s in allowed if text.find(s, start) >= 0]
        if not hits:
            break
        at, _, s = min(hits)
        if at > start:
            out.append(text[start:at])
        out.append(special[s])
        start = at + len(s)
    if start < len(text):
        out.append(text[start:])
    return out


def test_cutting_at_special_tokens_follows_the_spec_on_random_texts(model_text, tmp_path):
    rng = random.Random(7)
    path = tmp_path / "m.model"
    path.write_text(model_text, encoding="utf-8")
    toks = {b: superword.Tokenizer.load(path, backend=b) for b in BACKENDS}
    # tokens inside others ("ab" in "abc", "<" in "<abc") but no partial overlaps
    names = ["ab", "abc", "<", "<abc", "é", "éé", "x<abc>"]
    for tok in toks.values():
        tok.register_special_tokens(names)
    special = toks["rust"].special_tokens
    for _ in range(300):
        text = "".join(rng.choice(["a", "b", "c", "<", ">", "é", "x", " "]) for _ in range(rng.randrange(30)))
        allowed = set(rng.sample(names, rng.randrange(1, len(names) + 1)))
        parts = spec_cut(text, special, allowed)
        assert encode_with_specials(text, special, allowed, lambda t: [t]) == parts  # type: ignore
        want = [p for part in parts
                for p in ([part] if isinstance(part, int) else toks["reference"].encode_ordinary(part))]
        for tok in toks.values():
            assert tok.encode(text, allowed_special=frozenset(allowed)) == want, (text, allowed)


# -- the overlap rule of registration --------------------------------------------------------

def pairwise_overlap(tokens: list[str]) -> bool:
    """The rule, checked pair by pair."""
    for a in tokens:
        for b in tokens:
            if a == b or a in b or b in a:
                continue
            if any(a[-k:] == b[:k] for k in range(1, min(len(a), len(b)))):
                return True
    return False


def test_the_overlap_check_refuses_exactly_what_the_pairwise_rule_refuses():
    rng = random.Random(3)
    for _ in range(2000):
        tokens = list({"".join(rng.choice("ab<") for _ in range(rng.randrange(1, 6)))
                       for _ in range(rng.randrange(1, 6))})
        try:
            _api._check_special_overlaps(tokens)
            refused = False
        except ValueError as exc:
            refused = True
            # the pair named does overlap in the way the message says
            named = re.match(r"special tokens '(.*)' and '(.*)' overlap \('(.*)' ends", str(exc))
            assert named is not None, exc
            a, b, end = named.groups()
            assert a.endswith(end) and b.startswith(end) and a not in b and b not in a
        assert refused == pairwise_overlap(tokens), tokens


def test_registering_thousands_of_special_tokens(model_text, tmp_path):
    # (comparing every pair took 43 s for 3,000 tokens, and as long again for one more)
    path = tmp_path / "m.model"
    path.write_text(model_text, encoding="utf-8")
    n = vocab_size(model_text)
    for backend in BACKENDS:
        tok = superword.Tokenizer.load(path, backend=backend)
        tok.register_special_tokens([f"<|t{i}|>" for i in range(20_000)])
        tok.register_special_tokens(["<|one more|>"])
        assert tok.special_tokens["<|one more|>"] == n + 20_000
        with pytest.raises(ValueError, match=r"'<\|t0\|>' and '\|>x' overlap"):
            tok.register_special_tokens(["|>x"])
        with pytest.raises(ValueError, match="already registered"):
            tok.register_special_tokens(["<new>", "<new>"])
    # a long token next to short ones costs little: overlaps are shorter than both tokens;
    # longer than MAX_SPECIAL_LENGTH, it is refused (two long ones cost the square of it)
    tok.register_special_tokens(["y" * MAX_SPECIAL_LENGTH])
    with pytest.raises(ValueError, match="characters long"):
        tok.register_special_tokens(["z" * 1_000_000])


# -- ranks models ----------------------------------------------------------------------------

def ranks_file(tmp_path, extra=()) -> str:
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    path = tmp_path / "r.tiktoken"
    path.write_text("\n".join([*lines, *extra]) + "\n", encoding="utf-8")
    return str(path)


def test_a_rank_far_beyond_the_tokens_of_the_file_is_refused(tmp_path):
    # rank 4294967294 was accepted: the vocabulary size was then 2**32 - 1 (`list(tok)` asked
    # for 32 GB), and the special token registered after it got the id 0 in Rust
    path = ranks_file(tmp_path, ["dGg= 4294967294"])
    got = refusals(lambda b: superword.Tokenizer.from_tiktoken(path, PATTERN, backend=b))
    assert got[0] == got[1] == (f"{path}, line 257: rank 4294967294 is far beyond the 257 tokens of "
                                f"the file (ranks may leave gaps, but must stay below 1048576)")
    # gaps as such are fine
    path = ranks_file(tmp_path, ["dGg= 1000"])
    for backend in BACKENDS:
        tok = superword.Tokenizer.from_tiktoken(path, PATTERN, {"<|e|>": 100257}, backend=backend)
        assert tok.vocab_size == 100258 and len(list(tok)) == 257
        assert tok.register_special_tokens(["<x>", "<y>"]) == {"<|e|>": 100257, "<x>": 100258, "<y>": 100259}
        assert tok.decode(tok.encode("th<y>", allowed_special="all")) == "th<y>"


@pytest.mark.parametrize("special,message", [
    ({"a": 300, "b": 300}, "special tokens 'a' and 'b' both have id 300"),
    ({"<z>": 5}, "special token '<z>' has id 5, which {path} gives to a token"),
    ({"x": -1}, "special token 'x' has id -1, which is not a token id: token ids are 32-bit, 0 to 4294967295"),
    ({"x": 2**40}, "special token 'x' has id 1099511627776, which is not a token id"),
    ({"x": 2**32 - 1}, "special token 'x' has id 4294967295, far beyond the 258 tokens of this model "
                       "(ids may leave gaps, but must stay below 1048576)"),
])
def test_special_ids_of_a_ranks_model_are_checked(tmp_path, special, message):
    path = ranks_file(tmp_path, ["dGg= 300"] if "a" not in special else [])
    got = refusals(lambda b: superword.Tokenizer.from_tiktoken(path, PATTERN, special, backend=b))
    assert got[0] == got[1]
    assert got[0].startswith(message.format(path=path))


def test_no_special_token_gets_an_id_beyond_32_bits():
    ref = ReferenceRankCore({b"a": 2**32 - 2}, r"\w+", {})
    ref.register_special_tokens(["<x>"])
    assert ref.special_tokens == {"<x>": 2**32 - 1}
    with pytest.raises(ValueError, match=r"no id is left for the special token '<y>': token ids are 32-bit"):
        ref.register_special_tokens(["<y>"])
    assert ref.special_tokens == {"<x>": 2**32 - 1}  # nothing half-registered


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["token_bytes", "is_superword", "decode_single_token_bytes"])
def test_ids_beyond_64_bits_are_value_errors_naming_them(model_text, tmp_path, backend, method):
    path = tmp_path / "m.model"
    path.write_text(model_text, encoding="utf-8")
    tok = superword.Tokenizer.load(path, backend=backend)
    for big in (2**64, 10**30, -2**63 - 1):
        with pytest.raises(ValueError, match=rf"token id {big} is out of range"):
            getattr(tok, method)(big)


@pytest.mark.parametrize("backend", ["reference", "rust"])
def test_a_special_token_with_a_lone_surrogate_is_refused_alike(backend, tmp_path):
    # (Rust raised a bare UnicodeEncodeError; the reference took it, then failed in decode and save)
    tok = superword.train(["the cat sat on the mat"] * 5, 270, "bpe", backend=backend)
    with pytest.raises(ValueError, match=r"special token '\\ud800' contains a lone surrogate U\+D800"):
        tok.register_special_tokens(["<a>", "\ud800"])
    assert tok.special_tokens == {}
    ranks = tmp_path / "r.tiktoken"
    tok.save_tiktoken(ranks)
    with pytest.raises(ValueError, match=r"contains a lone surrogate U\+DFFF"):
        superword.Tokenizer.from_tiktoken(ranks, r"\w+|\s+|[^\w\s]+", {"x\udfff": 400}, backend=backend)
