"""Converters between superword models and other libraries' formats.

* Hugging Face ``tokenizer.json`` (+ ``tokenizer_config.json``, ``special_tokens_map.json``):
  :func:`save_hf` writes one, :func:`load_hf` reads a byte-level BPE one.
* tiktoken ranks for superword models: :func:`tiktoken_ranks_text`.
* :func:`agreement`: how often another library's ids equal ours on sample documents.

How a model maps onto stock byte-level BPE
------------------------------------------
Ids are ours, unchanged: the 243 byte tokens keep ids 0..242 (SPEC 2.2), every other token its
id, special tokens theirs.  The 13 byte values that never occur in UTF-8 (``0xC0``, ``0xC1``,
``0xF5..0xFF``) get no entry: stock BPE never meets them, because its input is a ``str``.
Tokens are written with the GPT-2 byte-to-unicode map, as in our model files (SPEC 8).  The
merges list is the regular merges in index order, then (superword models) the supermerges in
index order, so every supermerge ranks after every regular merge.

Pre-tokenization is a ``Split`` with a regex (Oniguruma, the dialect of ``tokenizers``) followed
by ``ByteLevel`` with ``use_regex=False``.  The built-in patterns are written with explicit code
point ranges for their Unicode classes (:func:`explicit_classes`), so that the older Unicode
tables of other regex engines do not matter.

* simple mode: the model's own pattern.  Stock BPE then gives our ids exactly: it
  merges each pretoken by lowest merge rank, which is SPEC 7.3 (the shortcut only skips work).
* script-aware mode: a regex cannot see script runs (SPEC 1.2), so we use the closest single
  pattern: letters of the configured scripts are one pretoken each (with an optional leading
  space and their marks), and the word alternatives of the main pattern take every other
  letter.  It differs from script runs where letters of two non-configured scripts touch
  (``"Helloмир"`` is one pretoken here, two in superword), and where a letter that belongs to
  no script (Common, e.g. the Japanese prolonged sound mark ``ー``) or a lone mark stands inside
  a run of a configured script.
* superword models: the first alternative takes two or more consecutive word pretokens as one
  coarse pretoken, so that stock BPE can apply the supermerges, but only words that our
  encoding turns into one token that is part of a supermerge, and only across a seam that some
  supermerge joins (:func:`word_joins`, :func:`_coarse`).  Stock BPE then never applies a
  supermerge to part of a word (``" of theater"`` stays ``" of"`` + ``" theater"``'s tokens),
  and ``tokenizers``, whose merges list ranks every regular merge before every supermerge,
  gives our ids (SPEC 7.3, then 7.4 on the run).  tiktoken merges by rank = id, and a
  BoundlessBPE model interleaves superword and regular ids: a superword made of a word and
  the first tokens of the next word (``" to be"`` in ``" to believe"``) can be made before that
  word is whole.  That residue cannot be removed without other ids; ``docs/exports.md``
  measures it per script.  :func:`agreement` measures the difference.
* the greedy n-gram cut at inference (SPEC 3.1, opt-in) has no stock-BPE form: exports always
  stand for the plain SPEC 7 encoding.
"""
from __future__ import annotations

import base64
import contextlib
import functools
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import Any

import regex

from . import _hf_folder
from ._specials import _check_special_overlaps, _check_special_text, _lone_surrogate
from .reference import extend as _ref_extend
from .reference import model as _model
from .reference.encode import Encoder, pretokenizer_for
from .reference.merging import Merge
from .reference.pretokenize import GPT4O, SCRIPT_SPECIFIC_GPT4O
from .reference.tokens import CHAR_TO_BYTE, render

#: The files :func:`save_hf` writes.
HF_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def hf_files(kind: str) -> tuple[str, ...]:
    """The files :func:`save_hf` writes for a model of ``kind``: superword models also get the
    model file and the code file that ``AutoTokenizer`` loads for exact ids."""
    return HF_FILES if kind in ("word", "tiktoken") else (*HF_FILES, _hf_folder.MODEL_FILE, _hf_folder.CODE_FILE)

#: The regex of ``tokenizers``' ``ByteLevel(use_regex=True)`` pre-tokenizer (GPT-2's pattern).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

_WORD_ALTERNATIVES = 2  # GPT4O begins with two word alternatives (SPEC 1.1)


# -- reading our model ------------------------------------------------------------------------

def model_of(tok: Any) -> _model.Model:
    """The plain data of a superword model (parsed from its model text).  Models with PickyBPE
    deletions are refused: their encoding resolves deleted tokens (SPEC 9), which plain BPE
    files cannot express; extension models have their own exports (below) and no minbpe form."""
    if getattr(tok, "kind", None) == "extension":
        raise ValueError("an extension model (superwords over a base) has no minbpe form: minbpe has no "
                         "supermerges (export it --to hf or --to tiktoken)")
    try:
        text = tok.model_text()
    except (ValueError, NotImplementedError) as exc:
        raise ValueError(f"this tokenizer cannot be exported: {exc}") from None
    model = _model._read(_model._Lines(io.StringIO(text), "<model>"))
    if model.deletions:
        raise ValueError(f"this model has {len(model.deletions)} PickyBPE deletions (tau <= 1); their "
                         f"resolution at inference (SPEC 9) has no form in tokenizer.json, tiktoken or minbpe")
    return model


# -- pre-tokenization patterns ------------------------------------------------------------------

def _split_alternatives(pattern: str) -> list[str]:
    """The top-level ``|`` alternatives of ``pattern`` (no ``|`` inside groups or classes)."""
    parts, depth, in_class, start, i = [], 0, False, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "^":
                i += 1
            if pattern[i + 1:i + 2] == "]":
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return parts


#: Bits of ``_data/classes.txt`` (the GPT-4o classes, Unicode 17.0) by the name used in patterns.
_CLASS_BITS = {"Lu": 0x01, "Ll": 0x02, "Lt": 0x04, "Lm": 0x08, "Lo": 0x10, "M": 0x20, "N": 0x40,
               "L": 0x1F, "s": 0x80}


@functools.cache
def _class_ranges() -> list[tuple[int, int, int]]:
    text = resources.files("superword").joinpath("_data/classes.txt").read_text("ascii")
    return [(int(a, 16), int(b, 16), int(m, 16)) for a, b, m in
            (line.split() for line in text.splitlines() if line and not line.startswith("#"))]


@functools.cache
def _script_ranges() -> dict[str, list[tuple[int, int]]]:
    text = resources.files("superword").joinpath("_data/scripts.txt").read_text("ascii")
    out: dict[str, list[tuple[int, int]]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            a, b, name = line.split()
            out.setdefault(name, []).append((int(a, 16), int(b, 16)))
    return out


def _ranges_text(ranges: Iterable[tuple[int, int]]) -> str:
    r"""Class members ``\x{..}-\x{..}`` (both Oniguruma and Rust's regex read them; the
    ``regex`` module does not, so :func:`load_hf` rewrites them on reading)."""
    return "".join(rf"\x{{{lo:X}}}" if lo == hi else rf"\x{{{lo:X}}}-\x{{{hi:X}}}"
                   for lo, hi in _normalized(ranges))


def _ranges(name: str) -> list[tuple[int, int]]:
    """The code point ranges of a class name (``L``, ``s``, ...) or a script name."""
    if name in _CLASS_BITS:
        bits = _CLASS_BITS[name]
        return [(lo, hi) for lo, hi, m in _class_ranges() if m & bits]
    if name not in _script_ranges():
        raise ValueError(f"unknown script {name!r}")
    return _script_ranges()[name]


def _members(name: str) -> str:
    return _ranges_text(_ranges(name))


def _normalized(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint, non-touching ranges covering the same code points."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _minus(a: Iterable[tuple[int, int]], b: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The code points of ``a`` that are not in ``b``.

    >>> _minus([(0, 9)], [(3, 4), (8, 20)])
    [(0, 2), (5, 7)]
    """
    out, cut = [], _normalized(b)
    for lo, hi in _normalized(a):
        for c_lo, c_hi in cut:
            if c_hi < lo or c_lo > hi:
                continue
            if c_lo > lo:
                out.append((lo, c_lo - 1))
            lo = c_hi + 1
            if lo > hi:
                break
        if lo <= hi:
            out.append((lo, hi))
    return out


def _intersection(a: Iterable[tuple[int, int]], b: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    a = _normalized(a)
    return _minus(a, _minus(a, b))


def explicit_classes(pattern: str) -> str:
    r"""``pattern`` with ``\p{..}``, ``\s`` and ``\S`` written as explicit code point ranges of
    our Unicode 17.0 tables.  Other libraries' regex engines carry older Unicode tables (the
    Oniguruma in ``tokenizers`` does not know the 4,671 code points assigned after Unicode
    14.0); with explicit ranges they classify every character as superword does.

    >>> explicit_classes(r"[^\s\p{N}]")[:24]
    '[^\\x{9}-\\x{D}\\x{20}\\x{85'
    """
    out, i, in_class = [], 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and pattern[i + 1:i + 3] == "p{":
            end = pattern.index("}", i)
            members = _members(pattern[i + 3:end])
            out.append(members if in_class else f"[{members}]")
            i = end + 1
            continue
        if c == "\\" and pattern[i + 1:i + 2] in ("s", "S"):
            members = _members("s")
            negated = pattern[i + 1] == "S"
            if in_class and negated:
                raise ValueError(r"\S inside a character class cannot be expanded")
            out.append(members if in_class else f"[{'^' if negated else ''}{members}]")
            i += 2
            continue
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[":
            in_class += 1
        elif c == "]" and in_class:
            in_class -= 1
        out.append(c)
        i += 1
    return "".join(out)


#: GPT-4o's contraction suffixes: a word followed by one of them goes on (SPEC 1.1).
_CONTRACTIONS = "(?i:'s|'t|'re|'ve|'m|'ll|'d)"


def _literal(text: str) -> str:
    r"""``text`` as a regex literal: ASCII letters and digits as themselves, every other
    character as ``\x{..}`` (which Oniguruma and fancy-regex read, and :func:`load_hf`
    rewrites for the ``regex`` module), so no character can be taken for syntax."""
    return "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):X}}}" for c in text)


def _trie(words: dict[str, str]) -> str:
    r"""One regex matching exactly the keys of ``words``, as a trie of shared prefixes (an
    alternation of thousands of words would be tried word by word at every position); where
    a word ends, its value (a lookahead, or ``""``) follows.  A longer word is tried before
    the shorter one that it extends.

    >>> _trie({"ab": "", "a": "(?=x)", "b": ""})
    '(?:a(?:b|(?=x))|b)'
    """
    root: dict[str, Any] = {}
    for word in sorted(words):
        node = root
        for c in word:
            node = node.setdefault(c, {})
        node[""] = words[word]

    def emit(node: dict[str, Any]) -> str:
        options = [_literal(c) + emit(child) for c, child in node.items() if c]
        if "" in node:
            options.append(node[""])
        return options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"

    return emit(root)


def word_joins(model: _model.Model) -> dict[str, set[str]]:
    """Which word pretokens a supermerge can join (SPEC 7.4): for the text of each word
    token, the texts of the words that can follow it inside one supermerge's result.  A
    supermerge ``(A, B)`` joins the last pretoken of ``A`` to the first of ``B``; only
    reachable word tokens count (a pretoken with that text becomes that one token), which
    every part of a trained model's supermerge is.  A seam between two words that no
    supermerge joins is never crossed by our encoding."""
    encoder = Encoder(model)
    pretokens = pretokenizer_for(model).pretokenize
    joins: dict[str, set[str]] = {}
    for m in model.supermerges:
        left, right = pretokens(m.left.decode("utf-8"))[-1], pretokens(m.right.decode("utf-8"))[0]
        if left.encode("utf-8") in encoder.reachable and right.encode("utf-8") in encoder.reachable:
            joins.setdefault(left, set()).add(right)
    return joins


def hf_pattern(settings: _model.Settings, joins: dict[str, set[str]] | None = None) -> str:
    """The ``Split`` regex standing for the model's pre-tokenization (see the module notes).

    ``joins`` (superword models: :func:`word_joins`) adds a first alternative that takes
    two or more consecutive word pretokens as one piece where a supermerge can join them.
    >>> s = _model.Settings(GPT4O, None, None, r"\\p{L}")
    >>> hf_pattern(s) == explicit_classes(GPT4O)
    True
    """
    main = settings.main_regex
    scripts = settings.script_specific_scripts
    script_aware = settings.script_specific_regex is not None
    if script_aware and (main != GPT4O or settings.script_specific_regex != SCRIPT_SPECIFIC_GPT4O):
        raise ValueError("only the built-in GPT-4o patterns can be exported with script-aware "
                         "pre-tokenization (this model has its own patterns)")
    if not script_aware and joins is None:
        return explicit_classes(main) if main == GPT4O else main
    if main != GPT4O:
        raise ValueError("a superword model is exported with a coarse pattern built from the "
                         "GPT-4o pattern; this model has its own pattern")
    alternatives = _split_alternatives(GPT4O)
    words, rest = alternatives[:_WORD_ALTERNATIVES], alternatives[_WORD_ALTERNATIVES:]
    word_letters = _ranges("L") + _ranges("M")  # the letters of the two word alternatives
    lower_letters = [r for n in ("Ll", "Lm", "Lo", "M") for r in _ranges(n)]  # of the second class
    script_letters: list[tuple[int, int]] = []
    if script_aware:
        # The set operations are done here, on explicit ranges, rather than written as
        # Oniguruma's `[a&&[^b]]`: the `regex` module (the reference backend) reads `&&` and a
        # nested class literally, so such a pattern would not survive Tokenizer.from_hf.
        in_scripts = [r for s in scripts or [] for r in _ranges(s)]
        upper, lower = r"\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}", r"\p{Ll}\p{Lm}\p{Lo}\p{M}"
        # word letters: each class minus the configured scripts' code points
        for cls, names in ((upper, ("Lu", "Lt", "Lm", "Lo", "M")), (lower, ("Ll", "Lm", "Lo", "M"))):
            others = _ranges_text(_minus([r for n in names for r in _ranges(n)], in_scripts))
            words = [w.replace(f"[{cls}]", f"[{others}]") for w in words]
        word_letters = _minus(word_letters, in_scripts)
        lower_letters = _minus(lower_letters, in_scripts)
        script_letters = _intersection(_ranges("L"), in_scripts)
        if script_letters:
            words = [rf" ?[{_ranges_text(script_letters)}]\p{{M}}*", *words]
    if joins is not None:
        words = [_coarse(joins, word_letters, lower_letters, script_letters, words), *words]
    return explicit_classes("|".join([*words, *rest]))


def _coarse(joins: dict[str, set[str]], word_letters: list[tuple[int, int]],
            lower_letters: list[tuple[int, int]], script_letters: list[tuple[int, int]],
            words: list[str]) -> str:
    r"""The alternative that matches two or more consecutive word pretokens, as many as
    follow, where each seam is one that some supermerge joins (:func:`word_joins`).

    It is ``L(?:R)+``: ``L`` a word that some word can follow in a supermerge, ``R`` a word
    that can follow the one before it, which a lookbehind on the two words' text checks.
    Each word is followed by a lookahead saying that the pretoken ends there, so that a
    piece holds whole pretokens, cut where the word alternatives cut:

    * a word of the GPT-4o word alternatives that ends in a letter of their second class
      (``Ll Lm Lo M``) goes on over another such letter and over a contraction (``don``
      in ``don't``), and ends before anything else (``Year`` before ``Univ``);
    * any other word of those alternatives (ending in ``Lu``/``Lt``, or in a contraction)
      is taken to go on over any letter or mark and a contraction.  That is stricter than
      the word alternatives for a contraction followed by a letter: such a word is then
      its own piece, which may cost a supermerge but never cuts a pretoken wrongly;
    * a letter of a configured script (script-aware mode) goes on over marks only.

    The lookbehind sees text, not pretokens: ``is`` ``␣it`` also lets ``this`` ``␣it``
    join when both are words of the table.  Joining a seam that no supermerge joins changes
    nothing for ``tokenizers`` and seldom anything for tiktoken (see ``docs/exports.md``).
    A word whose text the word alternatives do not match as one pretoken is left out."""
    first_cut = regex.compile("|".join(_from_oniguruma(explicit_classes(w), "<pattern>") for w in words))
    script_word = None
    if script_letters:
        script_class = _from_oniguruma(_ranges_text(script_letters), "<pattern>")
        script_word = regex.compile(f" ?[{script_class}]\\p{{M}}*")

    lower_last = regex.compile(f"[{_from_oniguruma(_ranges_text(lower_letters), '<pattern>')}]$")

    def kind(word: str) -> str | None:
        first = first_cut.match(word)  # the pretoken the pattern cuts first
        if first is None or first.end() != len(word):
            return None
        if script_word is not None and script_word.fullmatch(word):
            return "script"
        return "lower" if lower_last.search(word) and not regex.search(_CONTRACTIONS + "$", word) else "main"

    kinds = {w: kind(w) for pair in joins.items() for w in (pair[0], *pair[1])}
    ends = {"lower": f"(?![{_ranges_text(lower_letters)}]|{_CONTRACTIONS})",
            "main": f"(?![{_ranges_text(word_letters)}]|{_CONTRACTIONS})", "script": r"(?!\p{M})"}
    left: dict[str, dict[str, str]] = {"lower": {}, "main": {}, "script": {}}
    before: dict[str, set[str]] = {}
    for w, after in sorted(joins.items()):
        k = kinds[w]
        for a in after:
            if k is not None and kinds[a] is not None:
                left[k][w] = ""
                before.setdefault(a, set()).add(w)
    right: dict[str, dict[str, str]] = {"lower": {}, "main": {}, "script": {}}
    for a, ws in before.items():
        checks = [f"(?<={_literal(w + a)})" for w in sorted(ws)]
        right[kinds[a]][a] = checks[0] if len(checks) == 1 else "(?:" + "|".join(checks) + ")"  # type: ignore[index]

    def alternatives(tries: dict[str, dict[str, str]]) -> str:
        found = [f"{_trie(t)}{ends[k]}" for k, t in tries.items() if t]
        return found[0] if len(found) == 1 else "(?:" + "|".join(found) + ")"

    if not before:  # a regex that never matches: nothing joins
        return "(?!)"
    return f"{alternatives(left)}(?:{alternatives(right)})+"


# -- writing tokenizer.json -------------------------------------------------------------------

def _check_specials(model: _model.Model) -> None:
    keys = {render(t): i for i, t in enumerate(model.vocab)}
    for s, i in model.special_tokens.items():
        if s in keys:
            raise ValueError(f"special token {s!r} (id {i}) collides with vocabulary token {keys[s]} "
                             f"(the same string in tokenizer.json); it cannot be exported")
        if i < len(model.vocab):
            raise ValueError(f"special token {s!r} has id {i}, which is the vocabulary token "
                             f"{render(model.vocab[i])!r}")


def hf_json(model: _model.Model) -> dict[str, Any]:
    """The ``tokenizer.json`` of a model, as a dict."""
    _check_specials(model)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                  "use_regex": False}
    pattern = hf_pattern(model.settings, None if model.kind == "word" else word_joins(model))
    merges = [f"{render(m.left)} {render(m.right)}" for m in [*model.merges, *model.supermerges]]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for s, i in sorted(model.special_tokens.items(), key=lambda kv: kv[1])],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
            byte_level]},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": False,
                  "vocab": {render(t): i for i, t in enumerate(model.vocab)}, "merges": merges},
    }


def _roles(model: _model.Model, roles: dict[str, str | None]) -> dict[str, str]:
    """bos / eos / pad / unk token names; a name that is not a special token of the model yet is
    added to the exported file (not to the model) with the next free id."""
    out = {}
    for role, token in roles.items():
        if token is None:
            continue
        if not isinstance(token, str) or not token:
            raise ValueError(f"{role} must be a non-empty str, got {token!r}")
        if token not in model.special_tokens:
            # the next free id: one past every id in use (special ids need not be contiguous)
            model.special_tokens[token] = max([len(model.vocab) - 1, *model.special_tokens.values()]) + 1
        out[role] = token
    _check_special_overlaps(list(model.special_tokens))
    return out


def _check_folder(directory: str | os.PathLike[str], overwrite: bool, what: str) -> str:
    """``directory`` as a path to export into: absent, empty, or (with ``overwrite``) a folder
    whose ``what`` may be replaced."""
    directory = os.fspath(directory)
    if os.path.exists(directory):
        if not os.path.isdir(directory):
            raise ValueError(f"{directory} exists and is not a directory")
        if os.listdir(directory) and not overwrite:
            raise ValueError(f"{directory} is not empty ({len(os.listdir(directory))} entries); pass "
                             f"overwrite=True (--overwrite) to replace {what}")
    return directory


def save_hf(tok: Any, directory: str | os.PathLike[str], overwrite: bool = False,
            roles: dict[str, str | None] | None = None, model_max_length: int | None = None) -> None:
    """Write the three files into ``directory`` (created if needed); for a superword model,
    whose stock ``tokenizer.json`` is approximate, also the model file and the code file that
    ``tokenizer_config.json``'s ``auto_map`` names (see ``superword._hf_folder``), so that
    ``AutoTokenizer.from_pretrained(directory, trust_remote_code=True)`` gives exactly our ids.
    AutoTokenizer then always takes that exact path (without the flag it refuses the folder);
    ``tokenizer.json`` stays for readers that ask for it by name.

    A directory holding other files is refused unless ``overwrite=True`` (then the files
    written are replaced; nothing else is touched).  All files are written to a temporary
    directory first and renamed into place."""
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be True or False, got {type(overwrite).__name__}")
    if model_max_length is not None:
        if isinstance(model_max_length, bool) or not isinstance(model_max_length, int):
            raise TypeError(f"model_max_length must be an int, got {type(model_max_length).__name__}")
        if model_max_length < 1:
            raise ValueError(f"model_max_length must be at least 1, got {model_max_length}")
    if tok.kind == "extension":  # superwords over a base (SPEC 10): the base's merges, then theirs
        texts = extension_hf_texts(tok, roles or {}, model_max_length)
        directory = _check_folder(directory, overwrite, "its tokenizer files")
    else:
        texts = _model_hf_texts(tok, directory, overwrite, roles or {}, model_max_length)
        directory = os.fspath(directory)
    try:
        os.makedirs(directory, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".superword-", dir=directory)
    except OSError as exc:  # name the directory asked for, not a part of its path
        raise OSError(exc.errno, f"cannot create the directory {directory} ({exc.strerror or exc})") from None
    try:
        for name, text in texts.items():
            with open(os.path.join(staging, name), "w", encoding="utf-8", newline="\n") as f:
                f.write(text + "\n")
        for name in texts:
            os.replace(os.path.join(staging, name), os.path.join(directory, name))
    except OSError as exc:
        raise OSError(exc.errno, f"cannot write the tokenizer files into {directory} "
                                 f"({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _model_hf_texts(tok: Any, directory: str | os.PathLike[str], overwrite: bool,
                    roles: dict[str, str | None], model_max_length: int | None) -> dict[str, str]:
    """The files :func:`save_hf` writes for one of our models (``directory`` checked first)."""
    model = model_of(tok)
    _check_folder(directory, overwrite, "its tokenizer files")
    named = _roles(model, roles)
    config = _config(model, named, model_max_length)
    exact = {}
    if model.kind != "word":
        config.update(_hf_folder.config_entries())
        # (save_hf ends every file with one newline)
        exact = {_hf_folder.MODEL_FILE: tok.model_text().removesuffix("\n"),
                 _hf_folder.CODE_FILE: _hf_folder.code_text().removesuffix("\n")}
    return {
        "tokenizer.json": json.dumps(hf_json(model), ensure_ascii=False, indent=1),
        "tokenizer_config.json": json.dumps(config, ensure_ascii=False, indent=1),
        "special_tokens_map.json": json.dumps(named, ensure_ascii=False, indent=1),
        **exact,
    }


def sample_texts(sample: Any) -> list[str]:
    """The documents of ``save_hf``'s ``sample``, checked before any file is written."""
    if isinstance(sample, (str, bytes)) or not isinstance(sample, Iterable):
        raise TypeError(f"sample must be an iterable of documents (str), not {type(sample).__name__}")
    texts = list(sample)
    for n, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"sample document {n} must be a str, not {type(text).__name__}")
        if (found := _lone_surrogate(text)) is not None:
            raise ValueError(f"sample document {n} contains a lone surrogate {found[0]} at index "
                             f"{found[1]}")
    return texts


def _config(model: _model.Model, named: dict[str, str], model_max_length: int | None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": {str(i): {"content": s, "lstrip": False, "normalized": False,
                                          "rstrip": False, "single_word": False, "special": True}
                                 for s, i in sorted(model.special_tokens.items(), key=lambda kv: kv[1])},
    }
    if model_max_length is not None:
        config["model_max_length"] = model_max_length
    config.update(named)
    return config


# -- tiktoken ---------------------------------------------------------------------------------

def tiktoken_ranks_text(model: _model.Model) -> str:
    """``.tiktoken`` ranks (rank = our id) of any model."""
    return "".join(f"{base64.b64encode(t).decode('ascii')} {i}\n" for i, t in enumerate(model.vocab))


def tiktoken_pattern(model: _model.Model) -> str:
    """The pattern to give ``tiktoken.Encoding`` with :func:`tiktoken_ranks_text`'s ranks:
    the model's own in simple mode, else the closest single pattern (see the module notes).
    tiktoken's regex engine (``fancy-regex``) reads the same syntax as ``tokenizers``."""
    return hf_pattern(model.settings, None if model.kind == "word" else word_joins(model))


# -- agreement --------------------------------------------------------------------------------

def agreement(ours: list[list[int]], theirs: list[list[int]]) -> dict[str, float]:
    """Share of documents with identical ids, and the relative token-count difference
    (theirs minus ours, over ours).

    >>> agreement([[1, 2], [3]], [[1, 2], [4, 5]])
    {'documents': 2, 'identical': 0.5, 'tokens': 3, 'token_difference': 0.3333333333333333}
    """
    if len(ours) != len(theirs):
        raise ValueError("agreement needs the same number of documents on both sides")
    same = sum(a == b for a, b in zip(ours, theirs))
    n_ours = sum(map(len, ours))
    n_theirs = sum(map(len, theirs))
    return {"documents": len(ours), "identical": same / len(ours) if ours else 1.0,
            "tokens": n_ours, "token_difference": (n_theirs - n_ours) / n_ours if n_ours else 0.0}


# -- reading tokenizer.json -------------------------------------------------------------------

#: The largest id a tokenizer.json may give: ids are 32-bit in the Rust core, and there
#: 2**32 - 1 means "no rank" (the ranks reader refuses it too).
MAX_HF_ID = 2**32 - 2


def _kind(value: Any) -> str:
    """What a JSON value is, for error messages (never its text: it may be huge or deep)."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the string {value[:40]!r}" + ("..." if len(value) > 40 else "")
    if isinstance(value, (int, float)):
        return f"the number {value!r}" if len(repr(value)) <= 40 else "a number too large"
    return "a list" if isinstance(value, list) else "an object"


def _hf_id(value: Any, name: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}: {what} has id {_kind(value)}; ids are integers")
    if not 0 <= value <= MAX_HF_ID:
        raise ValueError(f"{name}: {what} has id {value if abs(value) < 10**20 else 'out of range'}; "
                         f"ids go from 0 to {MAX_HF_ID}")
    return value


def _from_oniguruma(pattern: str, name: str) -> str:
    r"""A ``tokenizer.json`` regex (Oniguruma syntax) in the syntax that both of our engines
    read the same way: ``\x{HHHH}`` (which superword's own exports use, see
    :func:`explicit_classes`) becomes ``\uHHHH`` or ``\UHHHHHHHH``, since the ``regex`` module
    has no ``\x{..}``.  A class intersection ``&&`` is refused: ``regex`` (the reference
    backend) would read it as two ampersands, the Rust core as an intersection.

    >>> print(_from_oniguruma(r"[\x{41}-\x{1F600}]+\\x{41}", "t"))
    [\u0041-\U0001F600]+\\x{41}
    """
    out, i, depth = [], 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and pattern.startswith("x{", i + 1):
            end = pattern.find("}", i)
            digits = pattern[i + 3:end] if end > 0 else ""
            if not 0 < len(digits) <= 8 or any(d not in "0123456789abcdefABCDEF" for d in digits) \
                    or int(digits, 16) > 0x10FFFF:
                raise ValueError(f"{name}: the pre_tokenizer regex has an escape that is not a code "
                                 f"point at position {i}: {pattern[i:i + 14]!r}")
            point = int(digits, 16)
            out.append(f"\\u{point:04X}" if point <= 0xFFFF else f"\\U{point:08X}")
            i = end + 1
            continue
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[":
            depth += 1
        elif c == "]" and depth:
            depth -= 1
        elif c == "&" and depth and pattern.startswith("&&", i):
            raise ValueError(f"{name}: the pre_tokenizer regex intersects character classes (&& at "
                             f"position {i}); superword's reference regex engine does not read that, "
                             f"so it is not supported")
        out.append(c)
        i += 1
    return "".join(out)


def _hf_pretokenizer_pattern(pre: Any, name: str) -> str:
    """The findall pattern equal to a byte-level ``pre_tokenizer`` section."""
    if not isinstance(pre, dict):
        raise ValueError(f"{name}: a byte-level BPE needs a ByteLevel pre_tokenizer (found {_kind(pre)})")
    if pre.get("type") == "ByteLevel":
        if pre.get("add_prefix_space"):
            raise ValueError(f"{name}: ByteLevel with add_prefix_space=true is not supported "
                             f"(it changes the text before encoding)")
        if not pre.get("use_regex", True):
            raise ValueError(f"{name}: ByteLevel without a regex splits nothing; not supported")
        return GPT2_PATTERN
    if pre.get("type") == "Sequence":
        parts = pre.get("pretokenizers")
        if (isinstance(parts, list) and len(parts) == 2 and all(isinstance(p, dict) for p in parts)
                and parts[0].get("type") == "Split" and parts[1].get("type") == "ByteLevel"
                and not parts[1].get("use_regex", True) and not parts[1].get("add_prefix_space")
                and parts[0].get("behavior") == "Isolated" and not parts[0].get("invert")
                and isinstance(parts[0].get("pattern"), dict) and "Regex" in parts[0]["pattern"]):
            regex_text = parts[0]["pattern"]["Regex"]
            if not isinstance(regex_text, str):
                raise ValueError(f"{name}: the Split pre_tokenizer's Regex is {_kind(regex_text)}, "
                                 f"not a string")
            return regex_text
    try:
        shown = json.dumps(pre)[:200]
    except (RecursionError, ValueError):
        shown = _kind(pre)
    raise ValueError(f"{name}: unsupported pre_tokenizer {shown}; superword reads "
                     f"ByteLevel (GPT-2) or Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)] "
                     f"(Llama-3 style)")


def _parse_hf(path: str) -> tuple[dict[bytes, int], list[tuple[bytes, bytes]], dict[str, int], str]:
    """The vocab, merges, added tokens and pattern of a ``tokenizer.json``, each checked for
    type and range here, so that a bad file is named as such (and nothing is built from it)."""
    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except UnicodeDecodeError:  # before ValueError, of which it is one
        raise ValueError(f"{name} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name} is not valid JSON (truncated?): {exc}") from None
    except RecursionError:
        raise ValueError(f"{name}: its JSON is nested too deeply to be a tokenizer.json") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise ValueError(f"{name} cannot be read as JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise ValueError(f"{name}: no 'model' section; not a tokenizers tokenizer.json")
    model = data["model"]
    kind = model.get("type")
    if kind != "BPE":
        shown = repr(kind) if isinstance(kind, str) else _kind(kind)
        raise ValueError(f"{name}: model type {shown} cannot be "
                         f"represented by superword; only byte-level BPE (GPT-2 / Llama-3 style) is supported")
    if data.get("normalizer") is not None:
        raise ValueError(f"{name}: a normalizer changes the text before BPE; not supported")
    for key in ("continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(key):
            raise ValueError(f"{name}: BPE option {key}={_kind(model[key])} is not supported")
    decoder = data.get("decoder")
    decoder_type = decoder.get("type") if isinstance(decoder, dict) else None
    if decoder_type != "ByteLevel":
        found = _kind(decoder_type) if isinstance(decoder, dict) else _kind(decoder)
        raise ValueError(f"{name}: not a byte-level BPE (decoder {found}, expected ByteLevel)")
    pattern = _hf_pretokenizer_pattern(data.get("pre_tokenizer"), name)

    def parse(token: str) -> bytes:
        try:
            return bytes(CHAR_TO_BYTE[c] for c in token)
        except KeyError:
            raise ValueError(f"{name}: token {token!r} is not in the byte-level alphabet") from None

    vocab_section = model.get("vocab")
    if not isinstance(vocab_section, dict):
        raise ValueError(f"{name}: the BPE model has no vocab (found {_kind(vocab_section)})")
    vocab: dict[bytes, int] = {}
    token_of: dict[int, str] = {}
    for t, i in vocab_section.items():
        i = _hf_id(i, name, f"vocab token {t!r}")
        if not t:
            raise ValueError(f"{name}: the vocab has an empty token (id {i})")
        if i in token_of:
            raise ValueError(f"{name}: vocab tokens {token_of[i]!r} and {t!r} have the same id {i}")
        vocab[parse(t)] = i
        token_of[i] = t
    merges_section = model.get("merges", [])
    if not isinstance(merges_section, list):
        raise ValueError(f"{name}: the BPE merges are {_kind(merges_section)}, not a list")
    merges = []
    for n, m in enumerate(merges_section):
        pair = m.split(" ") if isinstance(m, str) else m
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(p, str) for p in pair):
            shown = repr(m) if isinstance(m, str) else _kind(m)
            raise ValueError(f"{name}: merge {n} is not a pair of tokens: {shown}")
        merges.append((parse(pair[0]), parse(pair[1])))
    added = data.get("added_tokens")
    if added is None:
        added = []
    if not isinstance(added, list):
        raise ValueError(f"{name}: added_tokens is {_kind(added)}, not a list")
    special: dict[str, int] = {}
    content_of: dict[int, str] = {}
    for n, t in enumerate(added):
        content = t.get("content") if isinstance(t, dict) else None
        if not isinstance(content, str) or not content:
            raise ValueError(f"{name}: added token {n} has no content (a non-empty string)")
        try:
            _check_special_text(content)
        except ValueError as exc:
            raise ValueError(f"{name}: added token {n}: {exc}") from None
        if "id" not in t:
            raise ValueError(f"{name}: added token {content!r} has no id")
        i = _hf_id(t["id"], name, f"added token {content!r}")
        if content in special:
            raise ValueError(f"{name}: added token {content!r} appears twice (ids {special[content]} and {i})")
        if i in content_of:
            raise ValueError(f"{name}: added tokens {content_of[i]!r} and {content!r} have the same id {i}")
        special[content] = i
        content_of[i] = content
    return vocab, merges, special, pattern


def load_hf(path: str) -> tuple[str, str, dict[str, int]]:
    """Check a byte-level BPE ``tokenizer.json`` and return ``(tiktoken ranks text, pattern,
    special tokens)``: the model as a rank-based BPE, with the pattern in the syntax of our
    regex engines (:func:`_from_oniguruma`).  Everything the ranks reader would refuse is
    refused here, naming the file, not the temporary ranks file.

    Stock BPE merges the pair with the lowest *merge* rank; a ranks model joins the two parts
    whose *concatenation* has the lowest rank.  The two agree when merge ``k`` makes the token
    of the ``k``-th smallest id among merged tokens and no two tokens share a merge result,
    which is what ``tokenizers``' trainer (and GPT-2, Llama-3) produce; other files are refused.
    So are superword's own exports of BoundlessBPE and SuperBPE models, whose supermerges come
    after every regular merge in the file whatever their ids (see the module notes).
    """
    from .reference.pretokenize import HAND_WRITTEN, compile_pattern
    vocab, merges, special, pattern = _parse_hf(path)
    name = os.path.basename(path)
    made = []
    for n, (a, b) in enumerate(merges):
        if a not in vocab or b not in vocab or a + b not in vocab:
            raise ValueError(f"{name}: merge {n} ({render(a)} {render(b)}) uses or makes a token "
                             f"that is not in the vocab")
        made.append(vocab[a + b])
    if made != sorted(made) or len(set(made)) != len(made):
        raise ValueError(f"{name}: the merges do not create tokens in increasing id order; such a "
                         f"BPE cannot be represented as ranks exactly (for a superword BoundlessBPE or "
                         f"SuperBPE export, load its .model file instead)")
    made_ids, special_ids = set(made), set(special.values())
    single = [t for t, i in vocab.items() if len(t) > 1 and i not in made_ids and i not in special_ids]
    if single:
        raise ValueError(f"{name}: {len(single)} multi-byte tokens (e.g. {render(single[0])!r}) are "
                         f"made by no merge; not supported")
    ids = {i for i in vocab.values()}
    for s, i in special.items():
        if i in ids and vocab.get(s.encode("utf-8")) != i:
            raise ValueError(f"{name}: special token {s!r} has id {i}, which a vocab token uses")
    if not any(i not in special_ids for i in ids):
        raise ValueError(f"{name}: the vocab has no tokens besides the added ones")
    try:
        _check_special_overlaps(list(special))
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    # (a pattern with a hand-written matcher, as superword writes it for tokenizers, is read
    # back in its own spelling: cl100k's `\p{N}{1,3}+` is written `(?>\p{N}{1,3})`)
    pattern = next((known for known in HAND_WRITTEN if oniguruma_pattern(known) == pattern),
                   _from_oniguruma(pattern, name))
    if compile_pattern(pattern, f"{name}: the pre_tokenizer regex").match(""):
        raise ValueError(f"{name}: the pre_tokenizer regex matches the empty string; superword "
                         f"cannot split text with it as tokenizers does")
    text = "".join(f"{base64.b64encode(t).decode('ascii')} {i}\n" for t, i in vocab.items()
                   if i not in special_ids)
    return text, pattern, special


@contextlib.contextmanager
def temporary_file(text: str, suffix: str) -> Iterator[str]:
    fd, path = tempfile.mkstemp(suffix=suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        yield path
    finally:
        os.unlink(path)


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    _model.write_text_atomic(path, text)


# -- minbpe -----------------------------------------------------------------------------------
#
# minbpe has 256 byte tokens (id = byte value) and merge i makes id 256 + i; superword has 243
# byte tokens (SPEC 2.2) and a merge whose bytes are already a token adds no id (SPEC 2.6).  Both
# encode a chunk the same way (the adjacent pair of smallest merge index, all its occurrences,
# left to right), so a word model in simple mode and a minbpe model with the same merges cut
# every text into the same tokens; only the ids are numbered differently.  Two merges with the
# same bytes (e.g. (ab, c) and (a, bc)) make one token in superword but two in minbpe, where
# later merges can only use one of them: such models are refused both ways.

#: minbpe's BasicTokenizer has no pattern: the whole text is one chunk.
WHOLE_TEXT_PATTERN = r"[\s\S]+"


def minbpe_from_model(model: _model.Model) -> tuple[dict[tuple[int, int], int], str]:
    """minbpe ``merges`` and ``pattern`` equal to a word model in simple mode."""
    if model.kind != "word" or model.settings.script_specific_regex is not None:
        raise ValueError("only plain BPE models with simple pre-tokenization (algorithm='bpe', "
                         "script_aware=False) have a minbpe equivalent: minbpe has no supermerges "
                         "and no script runs")
    ids = {bytes([b]): b for b in range(256)}
    merges = {}
    for n, m in enumerate(model.merges):
        made = m.left + m.right
        if made in ids:
            raise ValueError(f"merge {n} ({render(m.left)} {render(m.right)}) makes a token that an "
                             f"earlier merge made; minbpe would give it a second id")
        merges[(ids[m.left], ids[m.right])] = ids[made] = 256 + n
    return merges, model.settings.main_regex


def model_from_minbpe(merges: dict[tuple[int, int], int], pattern: str) -> _model.Model:
    """The superword word model equal to minbpe ``merges`` (minbpe's id order) and ``pattern``."""
    from .reference.tokens import BYTE_TOKENS
    vocab = {i: bytes([i]) for i in range(256)}
    out = []
    known = set(BYTE_TOKENS)
    for (a, b), idx in sorted(merges.items(), key=lambda kv: kv[1]):
        if a not in vocab or b not in vocab:
            raise ValueError(f"minbpe merge ({a}, {b}) -> {idx} uses an id that no earlier merge made")
        left, right = vocab[a], vocab[b]
        for raw in (left, right):
            if len(raw) == 1 and raw not in known:
                raise ValueError(f"minbpe merge ({a}, {b}) uses byte 0x{raw[0]:02X}, which never occurs "
                                 f"in UTF-8 text and has no superword token")
        vocab[idx] = left + right
        if vocab[idx] in known:
            raise ValueError(f"minbpe merge ({a}, {b}) -> {idx} makes bytes {vocab[idx]!r} that another "
                             f"token already has; superword would merge them into one token")
        known.add(vocab[idx])
        out.append(Merge(left, right, 0, False))
    tokens = [*BYTE_TOKENS, *(m.left + m.right for m in out)]
    settings = _model.Settings(pattern or WHOLE_TEXT_PATTERN, None, None, r"\p{L}")
    return _model.Model("word", settings, tokens, [0] * len(tokens), [False] * len(tokens), out)


# -- measured agreement -------------------------------------------------------------------------

def hf_agreement(tok: Any, directory: str, texts: list[str]) -> dict[str, float]:
    """:func:`agreement` of ``tokenizers`` loading ``directory/tokenizer.json`` with ``tok``."""
    try:
        from tokenizers import Tokenizer as HFTokenizer
    except ImportError:
        raise ImportError("measuring the export needs tokenizers: pip install superword[hf]") from None
    hf = HFTokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    theirs = [e.ids for e in hf.encode_batch_fast(texts, add_special_tokens=False)]
    return agreement(tok.encode_batch(texts, allowed_special="none"), theirs)


def tiktoken_agreement(tok: Any, path: str, pattern: str, texts: list[str]) -> dict[str, float]:
    """:func:`agreement` of ``tiktoken`` with the ranks at ``path`` and ``pattern``.  The file
    is read here, not with ``tiktoken.load.load_tiktoken_bpe``: that keeps a copy of every file
    it reads in a cache named after the path, and returns the copy when the same path is read
    again, so a second export to one path would have been measured with the first's ranks."""
    try:
        import tiktoken
    except ImportError:
        raise ImportError("measuring the export needs tiktoken: pip install tiktoken") from None
    with open(path, "rb") as f:
        ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in f if line.strip())}
    enc = tiktoken.Encoding(name="superword-export", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    return agreement(tok.encode_batch(texts, allowed_special="none"),
                     enc.encode_ordinary_batch(texts))


# -- ranks models (tiktoken, tokenizer.json imports) as tokenizer.json --------------------------

def recover_merges(tok: Any) -> list[tuple[bytes, bytes]]:
    """The merges of a ranks model, in rank order: each token's two parts are what rank BPE
    makes of its bytes with only the lower ranks allowed.  A token that does not come out as
    exactly two parts cannot be made by a merge, and is refused."""
    rank = {raw: i for i, raw, _ in tok}
    merges = []
    for raw, r in sorted(rank.items(), key=lambda kv: kv[1]):
        if len(raw) == 1:
            continue
        parts = [raw[i:i + 1] for i in range(len(raw))]
        while len(parts) > 2:
            best, at = None, -1
            for i in range(len(parts) - 1):
                q = rank.get(parts[i] + parts[i + 1])
                if q is not None and q < r and (best is None or q < best):
                    best, at = q, i
            if best is None:
                break
            parts[at:at + 2] = [parts[at] + parts[at + 1]]
        if len(parts) != 2 or any(p not in rank for p in parts):
            raise ValueError(f"token {r} ({render(raw)}) is made by no merge of lower-ranked tokens; "
                             f"this ranks model has no merges form")
        merges.append((parts[0], parts[1]))
    return merges


def oniguruma_pattern(pattern: str) -> str:
    r"""``pattern`` for ``tokenizers`` (Oniguruma, Ruby syntax), where ``X{n,m}+`` is not a
    possessive repeat, as in our engines and tiktoken's, but ``(X{n,m})+``: it is written
    ``(?>X{n,m})``, the atomic group that means the same.  ``?+``, ``*+`` and ``++`` are
    possessive in both dialects and stay.

    >>> print(oniguruma_pattern(r"\p{N}{1,3}+|[a-z]{2}+|(ab){1,2}+|x{3}"))
    (?>\p{N}{1,3})|(?>[a-z]{2})|(?>(ab){1,2})|x{3}
    """
    out: list[str] = []
    opens: list[int] = []  # where the groups still open start in `out`
    last = -1  # where the last atom starts in `out`
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            end = i + 2
            if pattern[i + 1:i + 2] in ("p", "P", "x") and pattern[i + 2:i + 3] == "{":
                end = pattern.index("}", i) + 1
            last = len(out)
            out.append(pattern[i:end])
            i = end
        elif c == "[":
            j, depth = i + 1, 1
            if pattern[j:j + 1] == "^":
                j += 1
            if pattern[j:j + 1] == "]":
                j += 1
            while depth:
                if pattern[j] == "\\":
                    j += 1
                elif pattern[j] == "[":
                    depth += 1
                elif pattern[j] == "]":
                    depth -= 1
                j += 1
            last = len(out)
            out.append(pattern[i:j])
            i = j
        elif c == "(":
            opens.append(len(out))
            out.append(c)
            i += 1
        elif c == ")":
            last = opens.pop() if opens else len(out)
            out.append(c)
            i += 1
        elif c == "{" and last >= 0 and "}" in pattern[i:]:
            end = pattern.index("}", i) + 1
            body = pattern[i + 1:end - 1]
            if body.replace(",", "", 1).isdigit() and pattern[end:end + 1] == "+":
                atom = "".join(out[last:])
                del out[last:]
                out.append(f"(?>{atom}{pattern[i:end]})")
                i = end + 1
            else:
                out.append(pattern[i:end])
                i = end
            last = -1
        else:
            last = -1 if c in "|?*+" else len(out)
            out.append(c)
            i += 1
    return "".join(out)


def ranks_hf_json(tok: Any) -> dict[str, Any]:
    """A ``tokenizer.json`` of a ranks model: its ids, merges, pattern and special tokens."""
    missing = [b for b in range(256) if tok.id_of(bytes([b])) is None]
    if missing:
        raise ValueError(f"this ranks model has no token for {len(missing)} byte values (e.g. "
                         f"0x{missing[0]:02X}); tokenizers' byte-level BPE needs all 256")
    merges = recover_merges(tok)
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for s, i in sorted(tok.special_tokens.items(), key=lambda kv: kv[1])]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": oniguruma_pattern(tok.pattern)}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False,
                  "vocab": {render(raw): i for i, raw, _ in tok},
                  "merges": [[render(a), render(b)] for a, b in merges]},
    }


def save_ranks_hf(tok: Any, directory: str | os.PathLike[str], overwrite: bool = False) -> None:
    """Write a ranks model as ``directory/tokenizer.json``, which ``tokenizers`` and
    :func:`open_tokenizer` read with the same ids.  Written to a temporary file, then renamed;
    a directory holding other files is refused unless ``overwrite``."""
    directory = _check_folder(directory, overwrite, "its tokenizer.json")
    text = json.dumps(ranks_hf_json(tok), ensure_ascii=False, indent=1) + "\n"
    os.makedirs(directory, exist_ok=True)
    write_atomic(os.path.join(directory, "tokenizer.json"), text)


# -- extension models (superwords over a base, SPEC 10) ---------------------------------------
#
# An extension encodes each pretoken of the base's pattern with the base's ranks, then applies
# the supermerges over runs of single-token pretokens (SPEC 10.4).  Its exports are the base's
# (the recovered merges for tokenizer.json, the ranks for tiktoken) with the superwords after
# them, and a pattern whose first alternative takes two or more word pretokens as one piece
# where some supermerge joins them (as for our superword models, above).  The base's pattern is
# any pattern, so the end of a word is not read from its alternatives, as `_coarse` does for
# GPT-4o's: each word of the table is tried with what may follow it (`_WORD_ENDS`), and a word
# is joined only where the next character is neither a letter nor a mark (nor, for a pattern
# that keeps a contraction with the word before it, a contraction).  That is never laxer than
# the base's pattern on the words it keeps, so a piece always holds whole pretokens; where it is
# stricter a join is lost, which the measured agreement counts.

#: What a word pretoken is tried with: after each of these the base's pattern must end it.
_WORD_ENDS = (" ", ".", ",", "1", "'", "\n", "-", "!", "?", ")", '"', "\t", "\u00a0")
#: A contraction after a word: some patterns (GPT-4o's) keep it with the word.
_CONTRACTION_PROBES = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S")


def extension_of(tok: Any) -> Any:
    """The plain data of an extension model (``superword.reference.extend.Extension``)."""
    return _ref_extend.loads(tok.model_text(), "<extension model>")


def extension_joins(ext: Any) -> dict[str, set[str]]:
    """For the text of each word pretoken, the words that can follow it inside one
    supermerge's result: a supermerge ``(A, B)`` joins the last pretoken of ``A`` to the first
    of ``B`` (both single base tokens, as phase 2's candidates are)."""
    cut = regex.compile(ext.pattern)
    joins: dict[str, set[str]] = {}
    for m in ext.supermerges:
        left = cut.findall(m.left.decode("utf-8"))[-1]
        right = cut.findall(m.right.decode("utf-8"))[0]
        joins.setdefault(left, set()).add(right)
    return joins


def extension_pattern(ext: Any, dialect: str) -> str:
    """The ``Split`` regex (``dialect`` ``"hf"``: Oniguruma) or tiktoken ``pat_str``
    (``"tiktoken"``) of an extension model: a coarse first alternative, then the base's own
    pattern (see the notes above)."""
    base = oniguruma_pattern(ext.pattern) if dialect == "hf" else ext.pattern
    cut = regex.compile(ext.pattern)

    def first(text: str) -> str:
        found = cut.match(text)
        return found.group() if found else ""

    def kind(word: str) -> str | None:
        if first(word) != word or any(first(word + after) != word for after in _WORD_ENDS):
            return None  # not one pretoken, or one that goes on past what the lookahead allows
        return "joined" if any(first(word + c) != word for c in _CONTRACTION_PROBES) else "plain"

    joins = extension_joins(ext)
    kinds = {w: kind(w) for pair in joins.items() for w in (pair[0], *pair[1])}
    ends = {"plain": r"(?![\p{L}\p{M}])", "joined": rf"(?![\p{{L}}\p{{M}}]|{_CONTRACTIONS})"}
    left: dict[str, dict[str, str]] = {"plain": {}, "joined": {}}
    before: dict[str, set[str]] = {}
    for w, after in sorted(joins.items()):
        k = kinds[w]
        for a in after:
            if k is not None and kinds[a] is not None:
                left[k][w] = ""
                before.setdefault(a, set()).add(w)
    if not before:
        return base
    right: dict[str, dict[str, str]] = {"plain": {}, "joined": {}}
    for a, ws in before.items():
        checks = [f"(?<={_literal(w + a)})" for w in sorted(ws)]
        right[kinds[a]][a] = checks[0] if len(checks) == 1 else "(?:" + "|".join(checks) + ")"  # type: ignore[index]

    def alternatives(tries: dict[str, dict[str, str]]) -> str:
        found = [f"{_trie(t)}{ends[k]}" for k, t in tries.items() if t]
        return found[0] if len(found) == 1 else "(?:" + "|".join(found) + ")"

    return f"{alternatives(left)}(?:{alternatives(right)})+|{base}"


def _extension_roles(ext: Any, roles: dict[str, str | None]) -> tuple[dict[str, int], dict[str, str]]:
    """The special tokens of the exported files and the bos/eos/pad/unk names: a name the
    model lacks is added to the files (not to the model) with the next free id."""
    special = dict(ext.special)
    top = max([*ext.ranks.values(), *special.values(), *(i for i, _, _ in ext.superwords)])
    named = {}
    for role, token in roles.items():
        if token is None:
            continue
        if not isinstance(token, str) or not token:
            raise ValueError(f"{role} must be a non-empty str, got {token!r}")
        if token not in special:
            top += 1
            special[token] = top
        named[role] = token
    _check_special_overlaps(list(special))
    return special, named


def extension_hf_json(ext: Any, special: dict[str, int]) -> dict[str, Any]:
    """The ``tokenizer.json`` of an extension model: the base's merges (recovered from its
    ranks, in rank order), then the supermerges in index order, so that every supermerge ranks
    after every merge of the base.  A base may lack the 13 bytes that UTF-8 never holds (ours
    do, SPEC 2.2): ``tokenizers`` is given a ``str``, so it never meets them."""
    vocab = {render(t): i for t, i in ext.ranks.items()}
    vocab.update({render(t): i for i, t, _ in ext.superwords})
    for s, i in special.items():
        if s in vocab:
            raise ValueError(f"special token {s!r} (id {i}) collides with vocabulary token {vocab[s]} "
                             f"(the same string in tokenizer.json); it cannot be exported")
    merges = [[render(a), render(b)] for a, b in recover_merges([(i, t, False) for t, i in ext.ranks.items()])]
    merges += [[render(m.left), render(m.right)] for m in ext.supermerges]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}
                         for s, i in sorted(special.items(), key=lambda kv: kv[1])],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": extension_pattern(ext, "hf")}, "behavior": "Isolated",
             "invert": False},
            byte_level]},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }


def extension_hf_texts(tok: Any, roles: dict[str, str | None],
                       model_max_length: int | None) -> dict[str, str]:
    """The files :func:`save_hf` writes for an extension model: the stock three (whose
    ``tokenizer.json`` is approximate, see the notes above), and the model file and code file
    of the exact path for ``transformers`` (``superword._hf_folder``)."""
    ext = extension_of(tok)
    special, named = _extension_roles(ext, roles)
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": {str(i): {"content": s, "lstrip": False, "normalized": False,
                                          "rstrip": False, "single_word": False, "special": True}
                                 for s, i in sorted(special.items(), key=lambda kv: kv[1])},
    }
    if model_max_length is not None:
        config["model_max_length"] = model_max_length
    config.update(named)
    config.update(_hf_folder.config_entries())
    return {
        "tokenizer.json": json.dumps(extension_hf_json(ext, special), ensure_ascii=False, indent=1),
        "tokenizer_config.json": json.dumps(config, ensure_ascii=False, indent=1),
        "special_tokens_map.json": json.dumps(named, ensure_ascii=False, indent=1),
        _hf_folder.MODEL_FILE: tok.model_text().removesuffix("\n"),
        _hf_folder.CODE_FILE: _hf_folder.code_text().removesuffix("\n"),
    }


def save_extension_tiktoken(tok: Any, path: str) -> str:
    """Write an extension model's ``.tiktoken`` ranks (rank = our id: the base's, then the
    superwords) and return the pattern to give ``tiktoken.Encoding``.  tiktoken merges a
    coarse piece by rank, so the base's merges come first there too, then the superwords by
    id, which is training's order; it differs from our ids where a superword can be made
    from two tokens that are not its supermerge's parts (measured by
    :func:`tiktoken_agreement`)."""
    ext = extension_of(tok)
    tokens = sorted([*((i, t) for t, i in ext.ranks.items()), *((i, t) for i, t, _ in ext.superwords)])
    write_atomic(path, "".join(f"{base64.b64encode(t).decode('ascii')} {i}\n" for i, t in tokens))
    return extension_pattern(ext, "tiktoken")
