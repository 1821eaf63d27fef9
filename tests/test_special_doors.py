"""One rule, every door, for special tokens (docs/algorithm.md 8.1): a special token that
``register_special_tokens`` refuses is refused, with a ``ValueError``, whether it comes from a
v2 model file, a minbpe ``.model``, the special tokens given with a ``.tiktoken`` file, a
``tokenizer.json``'s ``added_tokens``, an extension model file or a pickle, in both
backends.  A file door names the file (and the line, in the formats that list special tokens
one a line).  Count files hold no special tokens, so they are no door here."""
from __future__ import annotations

import base64
import json
import pickle
import re
import time

import pytest
import superword
from superword._specials import MAX_SPECIAL_LENGTH

BACKENDS = ["reference", "rust"]
DOCS = ["the cat sat on the mat", "the dog sat on the log", "a cat, a dog"] * 5
SIMPLE = r" ?\w+| ?[^\w\s]+|\s+"


@pytest.fixture(scope="module")
def v2_text() -> str:
    return superword.train(DOCS, 262, "bpe", backend="reference").model_text()


def ranks_text() -> str:
    return "".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256)) + "dGg= 256\n"


# -- the doors: each takes the special tokens as (text, offset) pairs, the offset counted from
# the first id a special token may take in that format, and builds a tokenizer from them

def door_register(tmp_path, specials, backend, v2_text):
    tok = load_v2(tmp_path, v2_text, backend)
    tok.register_special_tokens([s for s, _ in specials])
    return tok


def load_v2(tmp_path, text, backend):
    path = tmp_path / "m.model"
    path.write_text(text, encoding="utf-8")
    return superword.Tokenizer.load(path, backend=backend)


def door_v2(tmp_path, specials, backend, v2_text):
    lines = v2_text.split("\n")
    first = int(lines[2])
    at = lines.index("special_tokens")
    lines[at + 1:at + 2] = [str(len(specials))] + [f"{first + k} {s}" for s, k in specials]
    path = tmp_path / "m.model"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    return superword.Tokenizer.load(path, backend=backend)


def door_tiktoken(tmp_path, specials, backend, v2_text):
    path = tmp_path / "r.tiktoken"
    path.write_text(ranks_text(), encoding="utf-8")
    return superword.Tokenizer.from_tiktoken(path, SIMPLE, {s: 257 + k for s, k in specials}, backend=backend)


def door_minbpe(tmp_path, specials, backend, v2_text):
    lines = ["minbpe v1", r"\w+", str(len(specials)), *[f"{s} {300 + k}" for s, k in specials], "97 98"]
    path = tmp_path / "t.model"
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))
    return superword.open_tokenizer(path, backend=backend)


def door_hf(tmp_path, specials, backend, v2_text):
    tok = superword.train(DOCS, 262, "bpe", script_aware=False, backend="rust")
    tok.save_hf(tmp_path / "hf", overwrite=True)
    path = tmp_path / "hf" / "tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["added_tokens"] = [{"id": tok.vocab_size + k, "content": s, "special": True} for s, k in specials]
    path.write_text(json.dumps(data), encoding="utf-8")
    return superword.Tokenizer.from_hf(path, backend=backend)


def door_extension(tmp_path, specials, backend, v2_text):
    path = tmp_path / "r.tiktoken"
    path.write_text(ranks_text(), encoding="utf-8")
    base = superword.Tokenizer.from_tiktoken(path, SIMPLE, {}, backend="rust")
    with pytest.warns(superword.TrainingShortfall):
        tok = superword.train(["a cat sat"] * 4, algorithm="superbpe", base=base, supermerges=1, backend="rust")
    text = tok.model_text()
    lines = text.split("\n")
    at = lines.index("special_tokens")
    lines[at + 1:at + 2] = [str(len(specials))] + [f"{257 + k} {json.dumps(s)}" for s, k in specials]
    model = tmp_path / "e.model"
    model.write_text("\n".join(lines), encoding="utf-8")
    return superword.Tokenizer.load(model, backend=backend)


def door_pickle(tmp_path, specials, backend, v2_text):
    path = tmp_path / "r.tiktoken"
    path.write_text(ranks_text(), encoding="utf-8")
    tok = superword.Tokenizer.from_tiktoken(path, SIMPLE, {"<|e|>": 257}, backend=backend)
    restore, (fmt, state) = tok.__reduce__()
    state["special_tokens"] = [(s, 257 + k) for s, k in specials]
    return pickle.loads(pickle.dumps(tok)) if not specials else restore(fmt, state)


DOORS = [door_register, door_v2, door_tiktoken, door_minbpe, door_hf, door_extension, door_pickle]
#: the name each file door must give in its errors, and whether it names the line
NAMES = {door_v2: (r"m\.model", True), door_tiktoken: (None, False), door_minbpe: (r"t\.model", False),
         door_hf: (r"tokenizer\.json", False), door_extension: (r"e\.model", True),
         door_pickle: ("pickled superword.Tokenizer", False)}

LONG = "x" * (MAX_SPECIAL_LENGTH + 1)
#: case -> (special tokens, what the rule says)
CASES = {
    "empty": ([("", 0)], "cannot be empty"),
    "twice": ([("<|a|>", 0), ("<|a|>", 1)], "twice|already registered"),
    "same id": ([("<|a|>", 0), ("<|b|>", 0)], "same id|both have id|appears twice|another token has"),
    "overlap": ([("<|ab", 0), ("ab|>", 1)], r"'<\|ab' and 'ab\|>' overlap"),
    "lone surrogate": ([("<\ud800>", 0)], "lone surrogate U\\+D800"),
    "line feed": ([("a\nb", 0)], "contains a line break"),
    "carriage return": ([("a\rb", 0)], "contains a line break"),
    "too long": ([(LONG, 0), ("y" * MAX_SPECIAL_LENGTH, 1)], f"at most {MAX_SPECIAL_LENGTH:,}"),
    "a token's id": ([("<|a|>", -200)], "id|uses|gives to a token|another token has"),
}
#: what a door cannot express (a dict has one value per key; registering picks the ids)
NOT_A_CASE = {(door_tiktoken, "twice"), (door_register, "same id"), (door_register, "a token's id")}
#: a format that cannot hold the token refuses the line that tries (still a ValueError naming
#: the file and the line) rather than saying why the rule would
FORMAT_ERRORS = {
    (door_v2, "empty"): "bad special token entry",
    (door_v2, "lone surrogate"): "invalid UTF-8",
    (door_v2, "line feed"): "expected \"words\"",
    (door_minbpe, "empty"): "expected '<special token> <id>'",
    (door_minbpe, "lone surrogate"): "invalid UTF-8",
    (door_minbpe, "line feed"): "expected '<special token> <id>'",
    (door_minbpe, "carriage return"): "expected '<special token> <id>'",
    (door_extension, "empty"): "expected '<id> <special token as a JSON string>'",
    (door_hf, "empty"): "has no content",
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("door", DOORS)
def test_a_special_token_the_rule_refuses_is_refused_at_every_door(tmp_path, v2_text, backend, door, case):
    if (door, case) in NOT_A_CASE:
        pytest.skip("this door cannot express the case")
    specials, rule = CASES[case]
    if door is door_extension and case == "lone surrogate" and backend == "rust":
        rule = "lone surrogate|expected '<id> <special token as a JSON string>'"  # serde_json refuses it
    start = time.perf_counter()
    with pytest.raises(ValueError) as caught:
        door(tmp_path, specials, backend, v2_text)
    assert time.perf_counter() - start < 5
    message = str(caught.value)
    assert re.search(FORMAT_ERRORS.get((door, case), rule), message), message
    name, names_line = NAMES.get(door, (None, False))
    if name is not None:
        assert re.search(name, message), message
        if names_line:
            assert re.search(name + r", line \d+: ", message), message


@pytest.mark.parametrize("door", DOORS)
def test_a_good_special_token_passes_every_door_and_encodes_alike_in_both_backends(tmp_path, v2_text, door):
    specials = [("<|a|>", 0), ("<|b|>", 1), ("a b", 2)]
    if door is door_minbpe:
        specials = specials[:2]  # minbpe's lines cannot hold a space
    ids = []
    for backend in BACKENDS:
        tok = door(tmp_path, specials, backend, v2_text)
        assert set(tok.special_tokens) == {s for s, _ in specials}
        ids.append(tok.encode("the cat<|a|> sat<|b|>", allowed_special="all"))
    assert ids[0] == ids[1]
    assert ids[0][-1] == tok.special_tokens["<|b|>"]


def test_the_line_named_is_the_special_tokens_line(tmp_path, v2_text):
    lines = v2_text.split("\n")
    first, at = int(lines[2]), lines.index("special_tokens")
    lines[at + 1:at + 2] = ["3", f"{first} <|ok|>", f"{first + 1} <|ab", f"{first + 2} ab|>"]
    path = tmp_path / "m.model"
    path.write_text("\n".join(lines), encoding="utf-8")
    for backend in BACKENDS:
        with pytest.raises(ValueError, match=rf"m\.model, line {at + 5}: special tokens"):
            superword.Tokenizer.load(path, backend=backend)


def test_the_longest_special_token_the_rule_allows_is_quick_to_check(tmp_path):
    # the overlap check costs the square of a token's length: at the limit it stays quick
    tokens = [chr(0x4E00 + k) * (MAX_SPECIAL_LENGTH - 1) + "<" for k in range(50)]
    tok = superword.Tokenizer.from_tiktoken(_ranks(tmp_path), SIMPLE, {}, backend="rust")
    start = time.perf_counter()
    tok.register_special_tokens(tokens)
    assert time.perf_counter() - start < 5
    assert len(tok.special_tokens) == 50


def _ranks(tmp_path):
    path = tmp_path / "r.tiktoken"
    path.write_text(ranks_text(), encoding="utf-8")
    return path
