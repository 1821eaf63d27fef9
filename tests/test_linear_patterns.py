"""Patterns without a hand-written matcher run in time linear in the text (docs/algorithm.md,
section 8.1): the same pieces as Python's `regex`, the same refusals in both backends, and
no n² findall on the patterns that made one."""
from __future__ import annotations

import json
import random
import time

import pytest
import regex
import superword
from helpers import DATA
from superword import _core
from superword.reference.pretokenize import HAND_WRITTEN, Pretokenizer, costly_construct

# (look-around-free ones, and ones whose alternatives end in a one-character look-ahead or an
# end anchor, the only look-arounds the rule accepts)
PATTERNS = [
    r"a+b|a|\s+|[^a\s]+",
    r"\w+(?=X)|\w|\s+|\W",
    r"\w+(?=\s)|\S+|\s+",
    r"\s+(?!\S)|\s+|\S+",
    r" ?\p{L}+(?![\p{N}])| ?\p{L}|\p{N}{1,3}|\s+(?!\S)|\s+|[^\s\p{L}\p{N}]+",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+",  # Llama-3's
    r"[\p{Lu}\p{Lt}]?[\p{Ll}\p{M}]+|\p{Lu}+(?=\p{Ll})|\p{Lu}+|\p{N}|\s+|.",
    r"\w+$|\w|\s",
    r"\s+$|\S+|\s",
    r"(?m)\w+$|\w|\s",
    r"\w+\Z|\w+|\s|\W",
    r"^\w+|\w|\s|\W",
    r"(?m)^\s+|\S+|\s+",
    r"(?i)[a-z]+(?=[0-9])|[a-z]|\d+|\s+|.",
    r"(?:ab|a)+c|a|b|\w|\s+|\W",
    r"\w{2,5}?(?!x)|\w|\s+|\W",
    r"x*y|x|y|[^xy]+",
    r"[.]+(?=\n)|\.|[^.]+",
]

ALPHABET = "aaaabbXxy  \n\t1234.,'AZésΩ東\u0301-_ "


def random_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    texts = ["", "a", "\n", "aaaa" * 40, "aaab", " " * 30, "ab\n", "XX", "AbCDef"]
    for _ in range(count):
        texts.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 80))))
    return texts


def findall(pattern: str, text: str) -> list[str]:
    return [m.group() for m in regex.finditer(pattern, text)]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_pieces_equal_python_regex_on_random_text(pattern):
    assert costly_construct(pattern) is None, pattern
    reference = Pretokenizer(pattern)
    for text in random_texts(hash(pattern) % 1000, 300):
        want = findall(pattern, text)
        assert _core.pretokenize(text, pattern) == want, (pattern, text)
        assert reference.pretokenize(text) == want, (pattern, text)


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared corpora are not here")
def test_pieces_equal_python_regex_on_real_text():
    files = [DATA / "taylorswift.txt", *sorted((DATA / "multi").glob("*.txt"))[:2]]
    for path in (f for f in files if f.is_file()):
        text = path.read_bytes()[:200_000].decode("utf-8", "ignore")
        for pattern in PATTERNS[1:7]:
            assert _core.pretokenize(text, pattern) == findall(pattern, text), (path.name, pattern)


REFUSED = [
    (r"\w+|(?<=\w)x", "a look-behind"),
    (r"(?:a(?!b))|c", "a look-ahead that is not one character"),
    (r"\w+(?=ab)|\w", "a look-ahead that is not one character"),
    (r"(?=a)b|c", "a look-ahead that is not one character"),
    (r"(?:\s+(?!\S)|\s+)", "a look-ahead that is not one character"),
    (r"(a)\1|b", "a backreference"),
    (r"(?P<x>a)(?P=x)", "a backreference or recursion"),
    (r"a++|b", "a possessive quantifier"),
    (r"(?>a+)|b", "an atomic group"),
    (r"\bx|.", "a word boundary"),
    (r"a$b|c", "an end anchor"),
    (r"(?x)a(?=b)|c", "verbose mode"),
]


@pytest.mark.parametrize("pattern,says", REFUSED)
def test_both_backends_refuse_the_same_patterns_with_the_same_words(pattern, says):
    assert costly_construct(pattern).startswith(says)
    message = regex.escape(f"pattern uses {costly_construct(pattern)}, which superword does not accept")
    for backend in ("reference", "rust"):
        with pytest.raises(ValueError, match=message):
            superword.train(["ab ab cd"] * 5, 300, "bpe", backend=backend, script_aware=False,
                            pattern=pattern)
    with pytest.raises(ValueError, match=message):
        _core.pretokenize("x", pattern)
    with pytest.raises(ValueError, match=message):
        Pretokenizer(pattern)


def test_the_hand_written_spellings_are_accepted_although_the_rule_refuses_them_respelled():
    # (they use possessive quantifiers and "$" inside alternatives, which the linear matcher
    # does not run, but they never reach it)
    assert {superword.CL100K_PATTERN} <= HAND_WRITTEN
    for pattern in HAND_WRITTEN:
        Pretokenizer(pattern)
        _core.pretokenize("x", pattern)
    assert costly_construct(superword.CL100K_PATTERN) == "a possessive quantifier"
    with pytest.raises(ValueError, match="a possessive quantifier"):
        _core.pretokenize("x", f"(?:{superword.CL100K_PATTERN})")


def test_a_model_file_carrying_a_refused_pattern_is_refused_by_both_backends(tmp_path):
    tok = superword.train(["ab ab cd ef"] * 5, 260, "bpe", script_aware=False)
    path = tmp_path / "m.model"
    tok.save(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    words = lines.index("words") + 1
    config = json.loads(lines[words])
    config["main_regex"] = r"\w+|(?<=\w)x|\s"
    lines[words] = json.dumps(config)
    bad = tmp_path / "bad.model"
    bad.write_text("\n".join(lines), encoding="utf-8")
    for backend in ("reference", "rust"):
        with pytest.raises(ValueError, match="uses a look-behind"):
            superword.Tokenizer.load(bad, backend=backend)


def cpu_seconds(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


@pytest.mark.parametrize("pattern", [r"a+b|a", r"\w+(?=X)|\w|\s+|\W"])
def test_a_pattern_that_scans_far_ahead_encodes_1_mb_in_linear_time(pattern):
    # each search from a position reads on to the end of the run of "a" before it knows that
    # only the short alternative matches: a findall that restarts every search costs n², so
    # 8 times the text would cost 64 times the time; the memoized walk costs about 8 times.
    # (Before, 80,000 "a" took 30 s; 1 MB would take hours.)
    big, small = "a" * (1 << 20), "a" * (1 << 17)
    assert len(_core.pretokenize(small, pattern)) == len(small)
    t_small = min(cpu_seconds(lambda: _core.pretokenize(small, pattern)) for _ in range(3))
    t_big = min(cpu_seconds(lambda: _core.pretokenize(big, pattern)) for _ in range(2))
    assert t_big < 30 * max(t_small, 0.002), (t_small, t_big)
    # and through a tokenizer trained with it, on a text with the far-away "b" too
    tok = superword.train(["aaaa aab ab"] * 5, 260, "bpe", script_aware=False, pattern=pattern)
    text = "a" * (1 << 20) + "b"
    assert tok.decode(tok.encode(text)) == text
