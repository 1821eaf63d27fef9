"""One rule, every door, for split patterns (docs/algorithm.md 8.1): a pattern that
``train(pattern=...)`` refuses (it matches the empty string, uses a construct the linear
matcher does not run, is not a valid regex, or is too large) is refused with a ``ValueError``
whether it comes from ``count(pattern=...)``, a v2 model file, a count file's header, a minbpe
``.model`` file, the pattern given with a ``.tiktoken`` file, a ``tokenizer.json``'s
pre-tokenizer, an extension model file or a pickle, in both backends, with the same rule in the
message.  A file door names the file (and the line, in the formats written in lines).  A
pattern with a one-character look-ahead ending an alternative passes every door and encodes
alike in both backends."""
from __future__ import annotations

import base64
import json
import pickle
import re

import pytest
import superword
from helpers import set_hf_pattern
from superword.reference.pretokenize import MAX_PATTERN_CLASSES, MAX_PATTERN_SIZE

BACKENDS = ["reference", "rust"]
DOCS = ["the cat sat on the mat", "the dog sat on the log", "a cat, a dog"] * 5
SIMPLE = r" ?\w+| ?[^\w\s]+|\s+"


def ranks_file(tmp_path):
    path = tmp_path / "r.tiktoken"
    path.write_text("".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256))
                    + "dGg= 256\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def v2_text() -> str:
    return superword.train(DOCS, 262, "bpe", pattern=SIMPLE, script_aware=False, backend="reference").model_text()


@pytest.fixture(scope="module")
def extension_text(tmp_path_factory) -> str:
    base = superword.Tokenizer.from_tiktoken(ranks_file(tmp_path_factory.mktemp("r")), SIMPLE, {}, backend="rust")
    with pytest.warns(superword.TrainingShortfall):
        tok = superword.train(["a cat sat"] * 4, algorithm="superbpe", base=base, supermerges=1, backend="rust")
    return tok.model_text()


# -- the doors: each builds a tokenizer (or counts) with `pattern` --------------------------

def door_train(tmp_path, pattern, backend, texts):
    return superword.train(DOCS, 262, "bpe", pattern=pattern, script_aware=False, backend=backend)


def door_count(tmp_path, pattern, backend, texts):
    superword.count(DOCS, pattern=pattern, script_aware=False, backend=backend)
    return None


def door_v2(tmp_path, pattern, backend, texts):
    v2_text, _ = texts
    path = tmp_path / "m.model"
    path.write_text(v2_text.replace(json.dumps(SIMPLE), json.dumps(pattern)), encoding="utf-8")
    return superword.Tokenizer.load(path, backend=backend)


def door_count_file(tmp_path, pattern, backend, texts):
    from superword.reference import countfile
    from superword.reference.count import Counts as RefCounts
    settings = countfile.CountSettings(pattern, None, None, r"\p{L}", True)
    path = tmp_path / "c.counts"
    path.write_bytes(countfile.to_bytes(RefCounts({"the": 3, " cat": 2}, {("the", " cat"): 2}, 2, 5), settings))
    superword.train(counts=path, vocab_size=260, backend=backend)
    return None


def door_minbpe(tmp_path, pattern, backend, texts):
    path = tmp_path / "t.model"
    path.write_text("\n".join(["minbpe v1", pattern, "0", "97 98"]) + "\n", encoding="utf-8")
    return superword.open_tokenizer(path, backend=backend)


def door_tiktoken(tmp_path, pattern, backend, texts):
    return superword.Tokenizer.from_tiktoken(ranks_file(tmp_path), pattern, {}, backend=backend)


def door_hf(tmp_path, pattern, backend, texts):
    tok = superword.train(DOCS, 262, "bpe", script_aware=False, backend="rust")
    tok.save_hf(tmp_path / "hf", overwrite=True)
    path = tmp_path / "hf" / "tokenizer.json"
    set_hf_pattern(path, pattern)
    return superword.Tokenizer.from_hf(path, backend=backend)


def door_extension(tmp_path, pattern, backend, texts):
    _, extension_text = texts
    lines = extension_text.split("\n")
    lines[lines.index("pattern") + 1] = json.dumps(pattern)
    path = tmp_path / "e.model"
    path.write_text("\n".join(lines), encoding="utf-8")
    return superword.Tokenizer.load(path, backend=backend)


def door_pickle(tmp_path, pattern, backend, texts):
    tok = superword.Tokenizer.from_tiktoken(ranks_file(tmp_path), SIMPLE, {}, backend=backend)
    restore, (fmt, state) = tok.__reduce__()
    state["pattern"] = pattern
    return pickle.loads(pickle.dumps(restore(fmt, state)))


DOORS = [door_train, door_count, door_v2, door_count_file, door_minbpe, door_tiktoken, door_hf,
         door_extension, door_pickle]
#: the name each file door gives in its errors, and whether it names the line
NAMES = {door_v2: (r"m\.model", True), door_count_file: (r"c\.counts", False),
         door_minbpe: (r"t\.model", True), door_hf: (r"tokenizer\.json", False),
         door_extension: (r"e\.model", True), door_pickle: ("pickled superword.Tokenizer", False)}

COSTLY = "which superword does not accept"
#: case -> (pattern, what the rule says)
CASES = {
    "empty match": (r"\w*|\s", "matches the empty string"),
    "empty match at a character": (r"[a-z]+|(?=\d)|\s|\W|\d|[A-Z]", "matches the empty string"),
    "look-behind": (r"(?<=a)\w+|\w|\s+|[^\w\s]", "a look-behind"),
    "negative look-behind": (r"(?<!a)\w+|\w|\s+|[^\w\s]", "a look-behind"),
    "look-ahead inside": (r"\w+(?=X)\w|\w|\s+|[^\w\s]", "a look-ahead that is not one character"),
    "long look-ahead": (r"\w+(?=ab)|\w|\s+|[^\w\s]", "a look-ahead that is not one character"),
    "backreference": (r"(\w)\1|\w|\s+|[^\w\s]", "a backreference"),
    "atomic group": (r"(?>\w+)|\s+|[^\w\s]", "an atomic group"),
    "possessive": (r"\w++|\s+|[^\w\s]", "a possessive quantifier"),
    "word boundary": (r"\b\w+|\s+|[^\w\s]", "a word boundary"),
    "invalid": (r"(\w+|\s+", "not a valid|invalid|missing \\)|unbalanced|parse|regex"),
    "too large": (f"x{{{MAX_PATTERN_SIZE + 1}}}" + r"|\w+|\s+|[^\w\s]", "too large"),
    # (one alternative repeated: each class is written out as its ranges in the Rust core)
    "too many classes": ("|".join([r"\p{L}+"] * (MAX_PATTERN_CLASSES + 1)) + r"|\s+|[^\w\s]",
                         "too large to compile: it writes 129 Unicode property classes"),
}


@pytest.fixture(scope="module")
def texts(v2_text, extension_text):
    return v2_text, extension_text


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("door", DOORS)
def test_a_pattern_the_rule_refuses_is_refused_at_every_door(tmp_path, texts, backend, door, case):
    pattern, rule = CASES[case]
    with pytest.raises(ValueError) as caught:
        door(tmp_path, pattern, backend, texts)
    message = str(caught.value)
    assert re.search(rule, message), message
    if case not in ("invalid", "too large", "too many classes") and "empty" not in rule:
        assert COSTLY in message, message
    name, names_line = NAMES.get(door, (None, False))
    if name is not None:
        assert re.search(name, message), message
        if names_line:
            assert re.search(name + r", line \d+: ", message), message


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("door", DOORS)
def test_both_backends_refuse_a_pattern_with_the_same_message(tmp_path, texts, door, case):
    pattern, _ = CASES[case]
    messages = []
    for backend in BACKENDS:
        with pytest.raises(ValueError) as caught:
            door(tmp_path, pattern, backend, texts)
        messages.append(str(caught.value))
    if case != "invalid":  # the two regex parsers word their errors their own way
        assert messages[0] == messages[1]


@pytest.mark.parametrize("door", DOORS)
def test_a_one_character_look_ahead_ending_an_alternative_passes_every_door(tmp_path, texts, door):
    pattern = r" ?\w+| ?[^\w\s]+|\s+(?!\S)|\s+"
    ids = []
    for backend in BACKENDS:
        tok = door(tmp_path, pattern, backend, texts)
        if tok is not None:
            ids.append(tok.encode("the cat  sat, on the mat"))
    assert len(ids) in (0, 2)
    if ids:
        assert ids[0] == ids[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pattern_at_the_class_limit_trains_and_one_past_it_is_refused(backend):
    # escaped backslashes and classes inside sets count as the rule says, in both backends
    at_limit = "|".join([r"[\p{Lu}\p{Ll}]+"] * (MAX_PATTERN_CLASSES // 2)) + r"|\\p|\s+|[^\w\s]"
    tok = superword.train(DOCS, 262, "bpe", pattern=at_limit, script_aware=False, backend=backend)
    assert tok.decode(tok.encode(DOCS[0])) == DOCS[0]
    with pytest.raises(ValueError, match=f"writes {MAX_PATTERN_CLASSES + 1} Unicode property classes"):
        superword.train(DOCS, 262, "bpe", pattern=r"\pL|" + at_limit, script_aware=False, backend=backend)
