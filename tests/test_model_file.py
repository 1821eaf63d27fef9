"""The model file: round trips for every kind, special tokens, and the n-gram table."""
from __future__ import annotations

import random
import re

import pytest
import superword
from helpers import GOLDEN
from superword.reference.model import dumps, read_model
from superword.reference.tokens import render

DOCS = ["今日は良い天気です。 今日は良い天気ですね。 今日は雨です。",
        "the best of the best, one of the best",
        "ภาษาไทย ภาษาไทยง่าย ภาษาไทยยาก"] * 30


SETTINGS = [("bpe", {}), ("boundless", {}), ("superbpe", {"supermerges": 10}),
            ("boundless", {"greedy_split": True}), ("bpe", {"tau": 0.6}),
            ("superbpe", {"supermerges": 10, "tau": 0.6, "blowup": True})]


@pytest.mark.parametrize("algorithm,extra,backend", [
    pytest.param(algorithm, extra, backend, id=f"{algorithm}-{'-'.join(extra)}-{backend}")
    for algorithm, extra in SETTINGS for backend in ["reference", "rust"]])
def test_round_trip(tmp_path, algorithm, extra, backend):
    tok = superword.train(DOCS, 330, algorithm, backend=backend, **extra)
    tok.register_special_tokens(["<|endoftext|>", "<pad with space>"])
    path = tmp_path / "m.model"
    tok.save(path)
    again = superword.Tokenizer.load(path, backend=backend)
    assert dumps(read_model(path)) == path.read_text(encoding="utf-8")
    assert again.special_tokens == tok.special_tokens
    text = "<|endoftext|>" + DOCS[0] + "<pad with space>"
    assert again.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
    assert again.decode(again.encode(text, allowed_special="all")) == text


def test_greedy_split_table_lives_in_a_sidecar_and_is_used_only_on_request(tmp_path):
    """SPEC 3.1: the v2 file is the paper's (no n-gram section) and encoding is plain SPEC 7
    unless ``greedy_split=True`` asks for the table saved next to the model."""
    tok = superword.train(DOCS, 330, "boundless", greedy_split=True, backend="reference")
    table = tok._impl.model.ngrams
    assert table, "this corpus has frequent n-grams"
    assert tok._impl.encoder.ngrams is None  # the trained tokenizer encodes like the paper
    path = tmp_path / "split.model"
    tok.save(path)
    assert "\nngrams\n" not in path.read_text(encoding="utf-8")
    assert (tmp_path / "split.model.ngrams").is_file()
    load = superword.Tokenizer.load
    assert load(path, backend="reference")._impl.encoder.ngrams is None
    assert load(path, backend="reference", greedy_split=True)._impl.encoder.ngrams == set(table)
    # a model without a table: asking for the split is an error that names the sidecar
    plain = superword.train(DOCS, 330, "boundless", backend="reference")
    plain.save(tmp_path / "plain.model")
    with pytest.raises(ValueError, match=r"n-gram table.*\.ngrams"):
        load(tmp_path / "plain.model", backend="reference", greedy_split=True)
    # saving a model without a table over one with a table removes the stale sidecar
    plain.save(path)
    assert not (tmp_path / "split.model.ngrams").exists()


def test_rust_writes_the_greedy_table_beside_the_model_as_the_reference_does(tmp_path):
    text = DOCS[0] + " " + DOCS[2] + " 今日は良い天気 ภาษาไทย"
    files = {}
    for backend in ("reference", "rust"):
        tok = superword.train(DOCS, 330, "boundless", greedy_split=True, backend=backend)
        path = tmp_path / f"{backend}.model"
        tok.save(path)
        sidecar = tmp_path / f"{backend}.model.ngrams"
        files[backend] = (path.read_bytes(), sidecar.read_bytes())
        assert b"\nngrams\n" not in files[backend][0]
        files[backend + "-ids"] = (
            superword.Tokenizer.load(path, backend=backend).encode_ordinary(text),
            superword.Tokenizer.load(path, backend=backend, greedy_split=True).encode_ordinary(text))
        assert files[backend + "-ids"][0] == tok.encode_ordinary(text)  # the paper's encoding
    assert files["rust"] == files["reference"]
    assert files["rust-ids"] == files["reference-ids"]
    # a plain model saved over it removes the stale sidecar
    superword.train(DOCS, 330, "boundless", backend="rust").save(tmp_path / "rust.model")
    assert not (tmp_path / "rust.model.ngrams").exists()
    with pytest.raises(ValueError, match=r"n-gram table.*\.ngrams"):
        superword.Tokenizer.load(tmp_path / "rust.model", backend="rust", greedy_split=True)


def test_an_ngrams_section_of_older_files_loads_and_is_dropped(tmp_path):
    tok = superword.train(DOCS, 330, "boundless", greedy_split=True, backend="reference")
    table = tok._impl.model.ngrams
    text = tok.model_text()
    old = tmp_path / "old.model"  # what superword wrote before the sidecar
    old.write_text(text + f"ngrams\n{len(table)}\n"
                   + "".join(" ".join(render(t) for t in g) + "\n" for g in table),
                   encoding="utf-8")
    plain = superword.Tokenizer.load(old, backend="reference")
    assert plain._impl.encoder.ngrams is None
    assert plain.model_text() == text
    split = superword.Tokenizer.load(old, backend="reference", greedy_split=True)
    assert split._impl.encoder.ngrams == set(table)
    rust = superword.Tokenizer.load(old, backend="rust")  # the Rust reader accepts it too
    assert rust.encode(DOCS[1]) == plain.encode(DOCS[1])


# -- corrupted files: every error names the file and the line, the same way in both backends --

GOLDEN_MODELS = ["taylorswift_400_v600/word.model", "taylorswift_400_v600/boundless.model",
                 "taylorswift_400_v600/super.model", "taylorswift_400_v600_tau0.9/word.model"]
_ENTRY = re.compile(r"^\d+ ")
_BAD_NUMBERS = ["-1", "1e3", "99999999999999999999", "x", "", "0x10", "\u0663", "0" * 30 + "1"]


def mutants(lines: list[str], rng: random.Random):
    """Copies of a model file's lines, each broken once: every line that is not an entry
    (headers, counts, section names, configs) and a sample of the entries is dropped,
    doubled, cut short, given a field too many or too few, its first two fields swapped, one
    of its numbers made hostile, an invalid UTF-8 byte or a carriage return appended."""
    entries = [i for i, line in enumerate(lines) if _ENTRY.match(line)]
    picks = sorted({i for i, line in enumerate(lines) if not _ENTRY.match(line)} | set(rng.sample(entries, 12)))
    for i in picks:
        line, fields = lines[i], lines[i].split(" ")
        def put(*new: str, i: int = i) -> list[str]:
            return lines[:i] + list(new) + lines[i + 1:]
        yield f"line {i + 1} dropped", put()
        yield f"line {i + 1} doubled", put(line, line)
        yield f"line {i + 1} cut short, and the file after it", lines[:i] + [line[:len(line) // 2]]
        yield f"line {i + 1} with invalid UTF-8", put(line + "\udcff")
        yield f"line {i + 1} with a carriage return", put(line + "\r")
        if len(fields) > 1:
            yield f"line {i + 1} with fields swapped", put(" ".join([fields[1], fields[0], *fields[2:]]))
            yield f"line {i + 1} with a field more", put(line + " 0")
            yield f"line {i + 1} with a field less", put(" ".join(fields[:-1]))
        numbers = [k for k, f in enumerate(fields) if f.isdigit()]
        for bad in _BAD_NUMBERS if numbers else ():
            changed = list(fields)
            changed[rng.choice(numbers)] = bad
            yield f"line {i + 1} with the number {bad!r}", put(" ".join(changed))


@pytest.mark.parametrize("golden", GOLDEN_MODELS)
def test_every_corrupted_model_file_is_refused_naming_the_file_and_line_in_both_backends(tmp_path, golden):
    lines = (GOLDEN / golden).read_text(encoding="utf-8").split("\n")
    path = tmp_path / "corrupt.model"
    tried = refused = 0
    problems = []
    for what, broken in mutants(lines, random.Random(golden)):
        path.write_bytes("\n".join(broken).encode("utf-8", "surrogateescape"))
        outcome = []
        for backend in ("reference", "rust"):
            try:
                superword.Tokenizer.load(path, backend=backend)
                outcome.append(None)
            except Exception as exc:  # (the checks below say which are allowed)
                outcome.append(exc)
        tried += 1
        if outcome == [None, None]:
            continue  # e.g. a doubled count line that happens to be a valid vocabulary entry
        for backend, exc in zip(("reference", "rust"), outcome):
            if not isinstance(exc, ValueError):
                problems.append(f"{what}: {backend} gave {exc!r}")
            elif not re.match(rf"{re.escape(str(path))}, line \d+: ", str(exc)):
                problems.append(f"{what}: {backend}: {exc}")
        if all(isinstance(e, ValueError) for e in outcome) and not _same_line(outcome):
            problems.append(f"{what}: the backends name different lines: {outcome}")
        refused += 1
    assert problems == [], "\n".join(problems)
    assert refused > 0.9 * tried > 250


def _same_line(outcome: list[Exception]) -> bool:
    """Both errors name the same line (their wording may differ)."""
    return len({str(e).split(":", 1)[0] for e in outcome}) == 1
