"""The trained model and its file format, "BoundlessBPE v2" (SPEC section 8).

A :class:`Model` is plain data: the vocabulary (bytes, count, is-superword), special tokens,
the regular merges and PickyBPE deletions with their pre-tokenization settings, and, for
BoundlessBPE and SuperBPE models, the supermerges.  :func:`write_model` and :func:`read_model`
convert it to and from the text format the paper's implementation reads and writes, byte for
byte.

The n-gram table of a model trained with ``greedy_split=True`` (SPEC 3.1) is not part of that
format: :func:`write_ngrams` and :func:`read_ngrams` keep it in a sidecar file next to the
model, named :func:`ngrams_path` (``<model file>.ngrams``).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import stat
from dataclasses import dataclass, field
from typing import Any, TextIO

from .._files import write_text_atomic
from .bpe import NO_DELETIONS_TAU
from .merging import Deletion, Merge, merge_indices
from .ngram import MAX_NGRAM
from .pretokenize import Pretokenizer
from .tokens import BYTE_TOKENS, parse, render

KINDS = ("word", "boundless", "superbpe")
NGRAMS_HEADER = "superword ngrams v1"


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
        """The config JSON object, keys in the order SPEC 8 fixes.  Only the words section
        records the deletion settings: phase 2 makes no deletions (SPEC 9), so the superwords
        section always says tau 1.1 and no blowup, as the paper's writer does."""
        return {
            "tau": NO_DELETIONS_TAU if is_super else self.tau, "is_super": is_super,
            "superbpe_mode": superbpe_mode,
            "blowup": False if is_super else self.blowup, "main_regex": self.main_regex,
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
    ngrams: list[tuple[bytes, ...]] | None = None  # greedy-split table (SPEC 3.1); never in the file
    deletions: list[Deletion] = field(default_factory=list)  # PickyBPE (SPEC 9), index order


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
    lines += _section(model.settings.config(False, False), model.merges, model.deletions)
    if model.kind != "word":
        lines.append("superwords")
        lines += _section(model.settings.config(True, model.kind == "superbpe"),
                          model.supermerges, [])
    return "\n".join(lines) + "\n"


def _section(config: dict[str, Any], merges: list[Merge], deletions: list[Deletion]) -> list[str]:
    lines = [json.dumps(config), "merges", str(len(merges))]
    for i, m in zip(merge_indices(merges, deletions), merges):
        lines.append(f"{i} {render(m.left)} {render(m.right)} {m.count} {int(m.flag)}")
    lines += ["deletions", str(len(deletions))]
    return lines + [f"{d.index} {render(d.token)}" for d in deletions]


def write_model(model: Model, path: str | os.PathLike[str]) -> None:
    """Write atomically (see :mod:`superword._files`): a reader never sees half a file."""
    write_text_atomic(path, dumps(model))


def ngrams_path(model_path: str | os.PathLike[str]) -> str:
    """Where the n-gram table of the model file at ``model_path`` is kept."""
    return os.fspath(model_path) + ".ngrams"


def dumps_ngrams(ngrams: list[tuple[bytes, ...]]) -> str:
    """The sidecar's text: a header line, the number of n-grams, then one n-gram per line
    (its pretokens in the printable form, separated by spaces)."""
    lines = [NGRAMS_HEADER, str(len(ngrams))]
    lines += [" ".join(render(t) for t in ngram) for ngram in ngrams]
    return "\n".join(lines) + "\n"


def write_ngrams(ngrams: list[tuple[bytes, ...]], model_path: str | os.PathLike[str]) -> None:
    write_text_atomic(ngrams_path(model_path), dumps_ngrams(ngrams))


def read_ngrams(model_path: str | os.PathLike[str]) -> list[tuple[bytes, ...]]:
    """Read the sidecar of ``model_path``; a missing or malformed one raises ``ValueError``."""
    name = ngrams_path(model_path)
    # opening a FIFO waits for a writer and a device may never end: only a regular file is
    # read (a missing one is named below)
    with contextlib.suppress(OSError):
        if not stat.S_ISREG(os.stat(name).st_mode):
            raise ValueError(f"{name}: not a regular file, so not an n-gram table")
    try:
        with open(name, encoding="utf-8", newline="\n") as f:
            lines = _Lines(f, name)
            lines.expect(NGRAMS_HEADER)
            return _read_ngram_lines(lines)
    except FileNotFoundError:
        raise ValueError(f"{name}: no n-gram table next to the model (greedy_split=True needs "
                         f"the sidecar file that saving a model trained with greedy_split=True "
                         f"writes)") from None
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not an n-gram table (invalid UTF-8)") from None


def _read_ngram_lines(lines: _Lines) -> list[tuple[bytes, ...]]:
    table = []
    for _ in range(lines.count("n-grams")):
        parts = lines.next("an n-gram").split(" ")
        # the greedy split keeps every prefix of every n-gram (``prefix_set``), memory in the
        # square of its length; training never makes one longer than MAX_NGRAM (SPEC 3.1)
        if len(parts) > MAX_NGRAM:
            raise lines.error(f"an n-gram of {len(parts)} pretokens; n-grams have at most "
                              f"{MAX_NGRAM} (SPEC 3.1)")
        table.append(tuple(_parse_token(lines, t) for t in parts))
    return table


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
        if not _fits(line):  # (as the Rust core's 64-bit count)
            raise self.error(f"number of {what} too large")
        return _int(line)

    def fields(self, n: int, what: str) -> list[str]:
        line = self.next(what)
        parts = line.split(" ")
        if len(parts) != n:
            raise self.error(f"expected {what} ({n} fields separated by spaces), found {_show(line)}")
        return parts

    def error(self, message: str) -> ValueError:
        return ValueError(f"{self.name}, line {self.number}: {message}")


def loads(text: str, name: str) -> Model:
    """A model from the text of a BoundlessBPE v2 file; ``name`` names it in errors."""
    return _read(_Lines(io.StringIO(text, newline="\n"), name))


def loads_ngrams(text: str, name: str) -> list[tuple[bytes, ...]]:
    """An n-gram table from the text of a sidecar; ``name`` names it in errors."""
    lines = _Lines(io.StringIO(text, newline="\n"), name)
    lines.expect(NGRAMS_HEADER)
    return _read_ngram_lines(lines)


def read_model(path: str | os.PathLike[str]) -> Model:
    """Read a BoundlessBPE v2 file; malformed input raises ``ValueError`` naming the line."""
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8", newline="\n") as f:
            return _read(_Lines(f, name))
    except UnicodeDecodeError:
        with open(name, "rb") as f:
            data = f.read()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"{name}, line {line}: not a model file (invalid UTF-8)") from None


def _read(lines: _Lines) -> Model:
    header = lines.next("the header 'BoundlessBPE v2 <kind>'")
    parts = header.split(" ")
    if len(parts) != 3 or parts[:2] != ["BoundlessBPE", "v2"] or parts[2] not in KINDS:
        raise lines.error(f"not a BoundlessBPE v2 model (header {_show(header)})")
    kind = parts[2]
    lines.expect("vocabulary")
    vocab, counts, is_super = [], [], []
    seen: set[bytes] = set()
    n = lines.count("vocabulary entries")
    count_line = lines.number
    for i in range(n):
        ident, token, count, sup = lines.fields(4, "'<id> <token> <count> <is_super>'")
        if ident != str(i) or not _is_uint(count) or sup not in ("0", "1"):
            raise lines.error(f"bad vocabulary entry (expected id {i}, a count and 0 or 1)")
        raw = _parse_token(lines, token)
        if raw in seen:
            raise lines.error(f"token {_show(token)} appears twice in the vocabulary")
        seen.add(raw)
        vocab.append(raw)
        counts.append(_count(lines, count))
        is_super.append(sup == "1")
    # every byte UTF-8 text can hold is a token (SPEC 2.2): the encoder falls back on them
    missing = next((b for b in BYTE_TOKENS if b not in seen), None)
    if missing is not None:
        raise ValueError(f"{lines.name}, line {count_line}: the vocabulary lacks the byte token "
                         f"{_show(render(missing))}; every byte UTF-8 text can hold must be a token "
                         f"(SPEC 2.2)")
    lines.expect("special_tokens")
    # The special tokens take the ids after the vocabulary, one each, as registering gives
    # them (the vocabulary size counts them so, and decoding finds them so): with n tokens
    # and k special ones, the ids n..n+k-1 in some order.  A file that gives one a token's
    # id, an id beyond these or an id or a text twice is refused (SPEC 8).
    k, first = lines.count("special tokens"), len(vocab)
    special: dict[str, int] = {}
    ids: set[int] = set()
    for _ in range(k):
        line = lines.next("'<id> <special token>'")
        ident, _, text = line.partition(" ")
        if not _is_uint(ident) or not text:
            raise lines.error(f"bad special token entry {_show(line)}")
        # (a long string of digits is out of range without being converted: `int` refuses
        # more than 4,300 digits)
        if len(ident) > 20 or not first <= int(ident) < first + k:
            raise lines.error(f"special token {_show(text)} has an id outside {first}..{first + k - 1}: "
                              f"a model's {k} special tokens take the ids after its {first} "
                              f"vocabulary tokens")
        if text in special:
            raise lines.error(f"special token {_show(text)} appears twice")
        if int(ident) in ids:
            raise lines.error(f"special token id {int(ident)} appears twice")
        special[text] = int(ident)
        ids.add(int(ident))
    special = dict(sorted(special.items(), key=lambda item: item[1]))  # in id order, as Rust's
    lines.expect("words")
    settings, _, _, merges, deletions = _read_section(lines, seen)
    supermerges: list[Merge] = []
    if kind != "word":
        lines.expect("superwords")
        _, is_sup, superbpe_mode, supermerges, super_deletions = _read_section(lines, seen, True)
        if not is_sup or superbpe_mode != (kind == "superbpe"):
            raise lines.error(f"superwords config does not match the model kind {_show(kind)}")
        if super_deletions:
            raise lines.error("the superwords section has deletions; only the word model "
                              "(phase 1) can delete tokens (SPEC 9)")
    ngrams = None
    tail = lines.f.readline()
    if tail == "ngrams\n":
        # written by earlier superword versions after everything the paper's reader reads;
        # kept for an explicit greedy_split=True at inference, never written again
        lines.number += 1
        ngrams = _read_ngram_lines(lines)
    return Model(kind, settings, vocab, counts, is_super, merges, supermerges, special, ngrams,
                 deletions)


def _config_fields(config: object) -> tuple[Settings, bool, bool]:
    """The settings of a config JSON object, every field's type checked (in the Rust core's
    order, with its messages): a wrong type is a ``ValueError`` naming the key.

    >>> _config_fields({"script_specific_scripts": None, "main_regex": 1})
    Traceback (most recent call last):
    ValueError: 'main_regex' is not a string
    """
    def get(key: str) -> Any:
        if not isinstance(config, dict) or key not in config:
            raise ValueError(f"missing key '{key}'")
        return config[key]

    def string(key: str, optional: bool = False) -> Any:
        v = get(key)
        if not (isinstance(v, str) or (optional and v is None)):
            raise ValueError(f"'{key}' is not a string")
        return v

    def boolean(key: str) -> bool:
        v = get(key)
        if not isinstance(v, bool):
            raise ValueError(f"'{key}' is not a boolean")
        return v

    scripts = get("script_specific_scripts")
    if scripts is not None:
        if not isinstance(scripts, list):
            raise ValueError("'script_specific_scripts' is not a list")
        if not all(isinstance(x, str) for x in scripts):
            raise ValueError("script names must be strings")
    main, script, merge = string("main_regex"), string("script_specific_regex", True), string("merge_pattern")
    tau = get("tau")
    if isinstance(tau, bool) or not isinstance(tau, (int, float)):
        raise ValueError("'tau' is not a number")
    settings = Settings(main_regex=main, script_specific_regex=script, script_specific_scripts=scripts,
                        merge_pattern=merge, tau=tau, blowup=boolean("blowup"))
    return settings, boolean("is_super"), boolean("superbpe_mode")


def _read_section(lines: _Lines, vocab: set[bytes], superwords: bool = False,
                  ) -> tuple[Settings, bool, bool, list[Merge], list[Deletion]]:
    raw = lines.next("the config JSON")
    try:
        config = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        # RecursionError: arrays nested deeper than Python's stack (serde_json refuses them too)
        raise lines.error(f"bad config JSON ({exc})") from None
    try:
        settings, is_sup, superbpe_mode = _config_fields(config)
    except ValueError as exc:
        raise lines.error(f"bad config JSON ({exc})") from None
    try:  # the patterns pass the checks of `train(pattern=...)` here, where the error can name this line
        Pretokenizer(settings.main_regex, settings.script_specific_regex, settings.script_specific_scripts)
    except ValueError as exc:
        raise lines.error(str(exc)) from None
    # merges and deletions share one index sequence 0, 1, 2, ... (SPEC 9); each section
    # lists its entries in index order
    lines.expect("merges")
    merges: list[Merge] = []
    merge_at: list[int] = []
    merge_lines: list[int] = []
    for _ in range(lines.count("merges")):
        ident, left, right, count, flag = lines.fields(5, "'<index> <left> <right> <count> <flag>'")
        if not _is_uint(ident) or not _is_uint(count) or flag not in ("0", "1"):
            raise lines.error("bad merge entry (expected an index, two tokens, a count and 0 or 1)")
        if not _fits(ident):
            raise lines.error("merge index too large")
        if merge_at and _int(ident) <= merge_at[-1]:
            raise lines.error(f"merge index {ident} does not follow {merge_at[-1]}")
        merge_at.append(_int(ident))
        merge_lines.append(lines.number)
        merges.append(Merge(_parse_token(lines, left), _parse_token(lines, right),
                            _count(lines, count), flag == "1"))
    lines.expect("deletions")
    deletions: list[Deletion] = []
    for _ in range(lines.count("deletions")):
        ident, token = lines.fields(2, "'<index> <token>'")
        if not _is_uint(ident) or not _fits(ident) or (deletions and _int(ident) <= deletions[-1].index):
            raise lines.error(f"bad deletion index {_show(ident)} (indices must increase)")
        deletions.append(Deletion(_int(ident), _parse_token(lines, token)))
    if merge_at != merge_indices(merges, deletions) or any(
            d.index >= len(merges) + len(deletions) for d in deletions):
        raise lines.error(f"the {len(merges)} merges and {len(deletions)} deletions above do not "
                          f"use each index 0..{len(merges) + len(deletions) - 1} exactly once")
    _check_merges(lines.name, merges, merge_lines, vocab,
                  {d.token for d in deletions} if deletions and not superwords else None)
    return settings, is_sup, superbpe_mode, merges, deletions


def _check_merges(name: str, merges: list[Merge], at: list[int], vocab: set[bytes],
                  deleted: set[bytes] | None) -> None:
    """Refuse merges the encoder could not use, naming the merge's line: each makes a
    vocabulary token (or, in a section with deletions, one of ``deleted``, deleted later), and
    without deletions its two halves are vocabulary tokens too."""
    for m, line in zip(merges, at):
        made = m.left + m.right
        if deleted is None:
            for half in (m.left, m.right):
                if half not in vocab:
                    raise ValueError(f"{name}, line {line}: the merge's half {_show(render(half))} "
                                     f"is not in the vocabulary")
            if made not in vocab:
                raise ValueError(f"{name}, line {line}: the merge makes {_show(render(made))}, which "
                                 f"is not in the vocabulary")
        elif made not in vocab and made not in deleted:
            raise ValueError(f"{name}, line {line}: the merge makes {_show(render(made))}, which is "
                             f"neither in the vocabulary nor deleted")


def _int(digits: str) -> int:
    """A field of digits as a number, leading zeros and all (`int` refuses a string of more
    than 4,300 digits, zeros included)."""
    return int(digits.lstrip("0") or "0")


def _fits(digits: str) -> bool:
    """Whether a field of digits fits the Rust core's 64 bits."""
    return len(digits.lstrip("0")) <= 20 and _int(digits) < 2**64


def _count(lines: _Lines, text: str) -> int:
    """A count field (digits, checked by the caller) as the Rust core holds it, in 64 bits."""
    if not _fits(text):
        raise lines.error("count too large")
    return _int(text)


def _parse_token(lines: _Lines, text: str) -> bytes:
    try:
        token = parse(text)
    except KeyError as exc:
        raise lines.error(f"token {_show(text)} has a character outside the byte map: "
                          f"{_show(exc.args[0])}") from None
    if not token:
        raise lines.error("empty token")
    return token
