"""The trained model and its file format, "BoundlessBPE v2" (SPEC section 8).

A :class:`Model` is plain data: the vocabulary (bytes, count, is-superword), special tokens,
the regular merges with their pre-tokenization settings, and, for BoundlessBPE and SuperBPE
models, the supermerges.  :func:`write_model` and :func:`read_model` convert it to and from
the text format the paper's implementation reads and writes, byte for byte.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, TextIO

from .._files import write_text_atomic
from .merging import Merge
from .tokens import parse, render

KINDS = ("word", "boundless", "superbpe")
NO_DELETIONS_TAU = 1.1  # tau > 1 means PickyBPE deletions are off (SPEC 9)


@dataclass
class Settings:
    """Pre-tokenization and training settings stored with a section of the model file."""
    main_regex: str
    script_specific_regex: str | None
    script_specific_scripts: list[str] | None
    merge_pattern: str
    tau: float = NO_DELETIONS_TAU
    blowup: bool = False

    def config(self, is_super: bool, superbpe_mode: bool) -> dict[str, Any]:
        """The config JSON object, keys in the order SPEC 8 fixes."""
        return {
            "tau": self.tau, "is_super": is_super, "superbpe_mode": superbpe_mode,
            "blowup": self.blowup, "main_regex": self.main_regex,
            "script_specific_regex": self.script_specific_regex,
            "script_specific_scripts": self.script_specific_scripts,
            "merge_pattern": self.merge_pattern,
        }


@dataclass
class Model:
    kind: str                                   # "word" | "boundless" | "superbpe"
    settings: Settings
    vocab: list[bytes]                          # token bytes by id
    counts: list[int]                           # SPEC 8 count, by id
    is_super: list[bool]                        # superword token?, by id
    merges: list[Merge]                         # regular merges, index order
    supermerges: list[Merge] = field(default_factory=list)
    special_tokens: dict[str, int] = field(default_factory=dict)
    ngrams: list[tuple[bytes, ...]] | None = None  # greedy-split table (SPEC 3.1), if trained with it


# ----------------------------------------------------------------------------------------
# writing

def dumps(model: Model) -> str:
    """The model file's text."""
    lines = [f"BoundlessBPE v2 {model.kind}", "vocabulary", str(len(model.vocab))]
    for i, (token, count, sup) in enumerate(zip(model.vocab, model.counts, model.is_super)):
        lines.append(f"{i} {render(token)} {count} {int(sup)}")
    lines += ["special_tokens", str(len(model.special_tokens))]
    for text, i in sorted(model.special_tokens.items(), key=lambda item: item[1]):
        lines.append(f"{i} {text}")
    lines.append("words")
    lines += _section(model.settings.config(False, False), model.merges)
    if model.kind != "word":
        lines.append("superwords")
        lines += _section(model.settings.config(True, model.kind == "superbpe"), model.supermerges)
    if model.ngrams is not None:
        # superword's own addition, after everything the paper's reader looks at
        lines += ["ngrams", str(len(model.ngrams))]
        lines += [" ".join(render(t) for t in ngram) for ngram in model.ngrams]
    return "\n".join(lines) + "\n"


def _section(config: dict[str, Any], merges: list[Merge]) -> list[str]:
    lines = [json.dumps(config), "merges", str(len(merges))]
    for i, m in enumerate(merges):
        lines.append(f"{i} {render(m.left)} {render(m.right)} {m.count} {int(m.flag)}")
    return lines + ["deletions", "0"]


def write_model(model: Model, path: str | os.PathLike[str]) -> None:
    """Write atomically (see :mod:`superword._files`): a reader never sees half a file."""
    write_text_atomic(path, dumps(model))


# ----------------------------------------------------------------------------------------
# reading

def _show(text: str) -> str:
    """A line (or part of one) quoted for an error message, at most 60 characters."""
    return json.dumps(text[:60], ensure_ascii=False)


def _is_uint(text: str) -> bool:
    return text.isascii() and text.isdigit()


class _Lines:
    """A model file's lines with the current line number, for error messages."""

    def __init__(self, f: TextIO, name: str):
        self.f, self.name, self.number = f, name, 0

    def next(self, what: str) -> str:
        line = self.f.readline()
        self.number += 1
        if not line:
            raise self.error(f"file ends early; expected {what}")
        if not line.endswith("\n"):
            # the writer always ends lines with \n: a missing one means a cut-off file
            raise self.error(f"file ends in the middle of a line; expected {what}")
        return line[:-1]

    def expect(self, word: str) -> None:
        line = self.next(_show(word))
        if line != word:
            raise self.error(f"expected {_show(word)}, found {_show(line)}")

    def count(self, what: str) -> int:
        line = self.next(f"the number of {what}")
        if not _is_uint(line):
            raise self.error(f"expected the number of {what}, found {_show(line)}")
        return int(line)

    def fields(self, n: int, what: str) -> list[str]:
        line = self.next(what)
        parts = line.split(" ")
        if len(parts) != n:
            raise self.error(f"expected {what} ({n} fields separated by spaces), found {_show(line)}")
        return parts

    def error(self, message: str) -> ValueError:
        return ValueError(f"{self.name}, line {self.number}: {message}")


def read_model(path: str | os.PathLike[str]) -> Model:
    """Read a BoundlessBPE v2 file; malformed input raises ``ValueError`` naming the line."""
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8", newline="\n") as f:
            return _read(_Lines(f, name))
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not a model file (invalid UTF-8)") from None


def _read(lines: _Lines) -> Model:
    header = lines.next("the header 'BoundlessBPE v2 <kind>'")
    parts = header.split(" ")
    if len(parts) != 3 or parts[:2] != ["BoundlessBPE", "v2"] or parts[2] not in KINDS:
        raise lines.error(f"not a BoundlessBPE v2 model (header {_show(header)})")
    kind = parts[2]
    lines.expect("vocabulary")
    vocab, counts, is_super = [], [], []
    seen: set[bytes] = set()
    for i in range(lines.count("vocabulary entries")):
        ident, token, count, sup = lines.fields(4, "'<id> <token> <count> <is_super>'")
        if ident != str(i) or not _is_uint(count) or sup not in ("0", "1"):
            raise lines.error(f"bad vocabulary entry (expected id {i}, a count and 0 or 1)")
        raw = _parse_token(lines, token)
        if raw in seen:
            raise lines.error(f"token {_show(token)} appears twice in the vocabulary")
        seen.add(raw)
        vocab.append(raw)
        counts.append(int(count))
        is_super.append(sup == "1")
    lines.expect("special_tokens")
    special: dict[str, int] = {}
    for _ in range(lines.count("special tokens")):
        line = lines.next("'<id> <special token>'")
        ident, _, text = line.partition(" ")
        if not _is_uint(ident) or not text:
            raise lines.error(f"bad special token entry {_show(line)}")
        special[text] = int(ident)
    lines.expect("words")
    settings, _, _, merges = _read_section(lines, vocab)
    supermerges: list[Merge] = []
    if kind != "word":
        lines.expect("superwords")
        _, is_sup, superbpe_mode, supermerges = _read_section(lines, vocab)
        if not is_sup or superbpe_mode != (kind == "superbpe"):
            raise lines.error(f"superwords config does not match the model kind {_show(kind)}")
    ngrams = None
    tail = lines.f.readline()
    if tail == "ngrams\n":
        lines.number += 1
        ngrams = [tuple(_parse_token(lines, t) for t in lines.next("an n-gram").split(" "))
                  for _ in range(lines.count("n-grams"))]
    return Model(kind, settings, vocab, counts, is_super, merges, supermerges, special, ngrams)


def _read_section(lines: _Lines, vocab: list[bytes]) -> tuple[Settings, bool, bool, list[Merge]]:
    raw = lines.next("the config JSON")
    try:
        config = json.loads(raw)
        settings = Settings(main_regex=config["main_regex"],
                            script_specific_regex=config["script_specific_regex"],
                            script_specific_scripts=config["script_specific_scripts"],
                            merge_pattern=config["merge_pattern"],
                            tau=config["tau"], blowup=config["blowup"])
        is_sup, superbpe_mode = bool(config["is_super"]), bool(config["superbpe_mode"])
    except (ValueError, KeyError, TypeError) as exc:
        raise lines.error(f"bad config JSON ({exc})") from None
    lines.expect("merges")
    merges = []
    for i in range(lines.count("merges")):
        ident, left, right, count, flag = lines.fields(5, "'<index> <left> <right> <count> <flag>'")
        if ident != str(i) or not _is_uint(count) or flag not in ("0", "1"):
            raise lines.error(f"bad merge entry (expected index {i}, a count and 0 or 1)")
        merges.append(Merge(_parse_token(lines, left), _parse_token(lines, right),
                            int(count), flag == "1"))
    lines.expect("deletions")
    if lines.count("deletions") != 0:
        raise lines.error("PickyBPE deletions (tau <= 1) are not supported by superword")
    return settings, is_sup, superbpe_mode, merges


def _parse_token(lines: _Lines, text: str) -> bytes:
    try:
        token = parse(text)
    except KeyError as exc:
        raise lines.error(f"token {_show(text)} has a character outside the byte map: "
                          f"{_show(exc.args[0])}") from None
    if not token:
        raise lines.error("empty token")
    return token
