"""Pre-tokenization (SPEC section 1): simple and script-aware.

A document is cut into *pretokens* by a regex "findall"; in script-aware mode it is first cut
into single-script runs so that, e.g., Chinese characters become one pretoken each.

>>> p = Pretokenizer(GPT4O, SCRIPT_SPECIFIC_GPT4O, DEFAULT_SCRIPTS)
>>> p.pretokenize("Hello мир 你好 world!")
['Hello', ' мир', ' 你', '好', ' world', '!']
>>> Pretokenizer(GPT4O).pretokenize("Hello мир 你好 world!")
['Hello', ' мир', ' 你好', ' world', '!']
"""
from __future__ import annotations

import json
from collections.abc import Iterable

import regex

from .scripts import COMMON, INHERITED, script_names, script_table

_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"

#: The GPT-4o pre-tokenization pattern (SPEC 1.1), exactly as the paper's implementation has it.
GPT4O = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+" + _CONTRACTIONS,
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*" + _CONTRACTIONS,
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
])

#: The pattern for scripts written without spaces: one letter (plus its marks) per pretoken.
SCRIPT_SPECIFIC_GPT4O = "|".join([
    r" ?\p{L}\p{M}*",
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
])

#: Scripts that get SCRIPT_SPECIFIC_GPT4O by default (stored sorted in model files).
DEFAULT_SCRIPTS = ("Han", "Hiragana", "Katakana", "Khmer", "Lao", "Myanmar", "Thai")

#: Merge eligibility (SPEC 1.3): a token may take part in a supermerge if it contains a letter.
MERGE_PATTERN = r"\p{L}"


class Pretokenizer:
    """Cuts text into pretokens.

    ``script_pattern=None`` is simple mode: one findall of ``main_pattern`` over the text.
    Otherwise the text is first cut into script runs (SPEC 1.2) and runs whose script is in
    ``scripts`` use ``script_pattern``.
    """

    def __init__(self, main_pattern: str = GPT4O, script_pattern: str | None = None,
                 scripts: Iterable[str] | None = None):
        self.main_pattern = main_pattern
        self.script_pattern = script_pattern
        self._main = _Finder(main_pattern, "pattern")
        if script_pattern is None:
            if scripts is not None:
                raise ValueError("scripts were given but no script-specific pattern: "
                                 "script-aware pre-tokenization needs both")
            self.scripts: tuple[str, ...] | None = None
            return
        if scripts is None:
            raise ValueError("a script-specific pattern needs the list of scripts it applies to")
        known = script_names()
        self.scripts = tuple(sorted(set(scripts)))
        unknown = [s for s in self.scripts if s not in known]
        if unknown:
            raise ValueError(f"unknown script name(s) {unknown}; use Unicode long names such as "
                             f"'Han', 'Thai' or 'Old_Italic'")
        self._script = _Finder(script_pattern, "script_pattern")
        self._table = script_table()
        # one flag per script index: does this script use the script-specific pattern?
        self._specific = [name in self.scripts for name in known]
        self._latin_specific = "Latin" in self.scripts

    @property
    def script_aware(self) -> bool:
        return self.script_pattern is not None

    def pretokenize(self, text: str) -> list[str]:
        """Return the pretokens of ``text``; they always concatenate back to ``text``."""
        if not self.script_aware:
            return self._main.findall(text)
        if text.isascii() and not self._latin_specific:
            # only Latin and Common: a single run with the main pattern (unless Latin itself uses
            # the script pattern)
            return self._main.findall(text)
        return [piece for run, specific in self.script_runs(text)
                for piece in (self._script if specific else self._main).findall(run)]

    def script_runs(self, text: str) -> list[tuple[str, bool]]:
        """Cut ``text`` into single-script runs (SPEC 1.2), each with "uses the script pattern".

        Common characters (spaces, punctuation) are held back and join the run that follows:

        >>> p = Pretokenizer(GPT4O, SCRIPT_SPECIFIC_GPT4O, DEFAULT_SCRIPTS)
        >>> p.script_runs("ab, 你好 c")
        [('ab', False), (', 你好', True), (' c', False)]
        """
        table, specific = self._table, self._specific
        runs: list[tuple[str, bool]] = []
        start = 0
        current = -1          # script of the current run; -1 = nothing yet
        last_real = -1        # index of the last character that was not held back
        for i, ch in enumerate(text):
            script = table[ord(ch)]
            if script == current:
                last_real = i
            elif script == INHERITED:
                if current == -1:
                    current = INHERITED
                last_real = i
            elif script == COMMON:
                if current == -1:
                    current = COMMON
            else:  # a different real script
                if current not in (-1, COMMON, INHERITED):
                    cut = last_real + 1
                    runs.append((text[start:cut], specific[current]))
                    start = cut
                current = script
                last_real = i
        if start < len(text):
            runs.append((text[start:], current not in (-1, COMMON, INHERITED) and specific[current]))
        return runs


MAX_PATTERN_SIZE = 100_000  # see pattern_size
MAX_PATTERN_CLASSES = 128  # see property_classes


def property_classes(pattern: str) -> int:
    r"""How many Unicode property escapes (``\p..`` and ``\P..``, any name) ``pattern``
    writes, counted where they stand (a repeat does not multiply them; an escaped backslash
    is skipped).  The Rust core writes each class it holds a table for as its code point
    ranges (up to ~14 KB for ``\p{L}``), so a file's pattern repeating one alternative
    thousands of times compiled for seconds; :func:`compile_pattern` refuses more than
    :data:`MAX_PATTERN_CLASSES` in both backends.

    >>> property_classes(r"\p{L}+|[\p{N}\pM]|\\p")
    3
    """
    count, i = 0, 0
    while i < len(pattern):
        if pattern[i] == "\\":
            count += pattern[i + 1:i + 2] in ("p", "P")
            i += 2
        else:
            i += 1
    return count


def pattern_size(pattern: str) -> int:
    r"""A generous estimate of how many items compiling ``pattern`` makes: every atom (a
    character, an escape, a class) counts 1, a counted repeat ``{m}``, ``{m,}`` or ``{m,n}``
    multiplies what it repeats by its largest number, and the items of a group (alternatives
    included) add up.  ``*``, ``+`` and ``?`` are loops and multiply nothing.  The ``regex``
    module compiles and expands counted repeats before matching anything, so a pattern such
    as ``x{999999999}`` (which a hostile model file can hold) would hang or exhaust memory;
    :func:`compile_pattern` refuses it first.

    >>> pattern_size(r"\p{L}{1,3}"), pattern_size("(ab{10}){1000}")
    (3, 11000)
    """
    totals = [0]  # per open group: the size of its items so far
    last = 0      # the size of the last atom (what a counted repeat applies to)
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            if pattern[i - 1:i] in ("p", "P", "N", "x", "u", "U") and pattern[i:i + 1] == "{":
                end = pattern.find("}", i)
                i = n if end < 0 else end + 1
            atom = 1
        elif c == "[":
            i += 1
            if pattern[i:i + 1] == "^":
                i += 1
            if pattern[i:i + 1] == "]":
                i += 1
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
            i += 1
            atom = 1
        elif c == "(":
            totals.append(0)
            last = 0
            i += 1
            continue
        elif c == ")":
            atom = max(totals.pop() if len(totals) > 1 else 0, 1)
            i += 1
        elif c == "{" and (m := regex.match(r"\{([0-9]*)(?:,([0-9]*))?\}", pattern[i:])) and any(m.groups()):
            digits = [g for g in m.groups() if g]
            times = max(int(g) if len(g) <= 9 else 10**9 for g in digits)
            totals[-1] += last * (times - 1)  # the atom itself was counted once already
            last *= times
            i += m.end()
            if totals[-1] > MAX_PATTERN_SIZE:
                return totals[-1]
            continue
        else:
            atom = 1
            i += 1
        totals[-1] += atom
        last = atom
    return sum(totals)


def _quoted(text: str) -> str:
    """``text`` in double quotes with ``\\`` and ``"`` escaped, as the Rust core quotes it."""
    return json.dumps(text, ensure_ascii=False)


def compile_pattern(pattern: str, what: str) -> regex.Pattern[str]:
    """Compile a pattern that may come from an untrusted file: one that :func:`pattern_size`
    finds too large is refused, and an invalid one named, both with ``ValueError``."""
    size = pattern_size(pattern)
    if size > MAX_PATTERN_SIZE:
        raise ValueError(f"{what} is too large to compile: its counted repeats expand to about "
                         f"{size} items (at most {MAX_PATTERN_SIZE}): {_quoted(pattern[:80])}")
    classes = property_classes(pattern)
    if classes > MAX_PATTERN_CLASSES:
        raise ValueError(f"{what} is too large to compile: it writes {classes} Unicode property classes "
                         f"(\\p{{..}}, at most {MAX_PATTERN_CLASSES}): {_quoted(pattern[:80])}")
    if _has_posix_class(pattern):
        raise ValueError(f"{what} uses a POSIX class such as [[:alpha:]], which Python's regex and the "
                         f"Rust core read differently (some names are Unicode classes in one, ASCII in "
                         f"the other); write it with \\p{{..}} classes instead")
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"{what} is not a valid regular expression: {exc}") from None
    except Exception as exc:  # (regex's own bugs: "(?i)[^\\s\\S]" raised AttributeError)
        raise ValueError(f"{what} is not a valid regular expression: the regex module failed "
                         f"on it ({type(exc).__name__}: {exc})") from None


_POSIX_CLASS = regex.compile(r"\[:\^?[A-Za-z]+:\]")


def _has_posix_class(pattern: str) -> bool:
    """Does ``pattern`` hold a POSIX class (``[:alpha:]`` inside a set)?  The Rust core
    refuses them (``src/pretokenize/dialect.rs``), and so does the reference: ``regex`` reads
    some names as Unicode classes and others (``[:digit:]``) as ASCII, the Rust engine all as
    ASCII.  Walks the pattern as the Rust core does: escapes skipped, sets not nested."""
    i, in_set = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_set:
            if c == "]":
                in_set = False
            elif c == "[" and _POSIX_CLASS.match(pattern, i):
                return True
            i += 1
            continue
        if c == "[":
            i += 1
            if pattern[i:i + 1] == "^":
                i += 1
            if pattern[i:i + 1] == "]":
                i += 1
            in_set = True
            continue
        i += 1
    return False


#: The text on which every pattern is tried for empty matches before it is used (the same in
#: ``src/pretokenize/generic.rs``).
PROBE = "Ab c1\n\t'x, \u6771\u0301."

_NOTHING = ("every match must hold at least one character; change the alternatives that can "
            "match nothing (such as \\w* or a look-ahead alone)")


#: The patterns with hand-written matchers in the Rust core (``src/pretokenize/``), which run in
#: linear time whatever constructs they use: the two built-in patterns, ``cl100k_base`` and
#: minbpe's GPT-4 split pattern, GPT-2's (as OpenAI, minbpe and ``r50k_base`` spell it).
HAND_WRITTEN = frozenset([
    GPT4O,
    SCRIPT_SPECIFIC_GPT4O,
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}|"""
    r""" ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
])

_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


def _one_character_end(p: str, i: int) -> int:
    """Where the atom at ``p[i]`` ends when it matches exactly one character (a character, an
    escaped character, a class escape such as ``\\s`` or ``\\p{L}``, or a set), else -1.  The
    same walk as ``one_character_end`` in ``src/pretokenize/generic.rs``."""
    n = len(p)
    if i >= n:
        return -1
    c = p[i]
    if c == "\\":
        if i + 1 >= n:
            return -1
        e = p[i + 1]
        if e in "pPxN" and p[i + 2:i + 3] == "{":
            close = p.find("}", i + 3)
            return -1 if close < 0 else close + 1
        if e in "pP":
            return i + 3 if i + 2 < n else -1
        if e in _HEX_DIGITS:
            end = i + 2 + _HEX_DIGITS[e]
            return end if end <= n else -1
        if e in "wWdDsSntrfv" or not (e.isascii() and e.isalnum()):
            return i + 2
        return -1
    if c == "[":
        j = i + 1
        if p[j:j + 1] == "^":
            j += 1
        if p[j:j + 1] == "]":
            j += 1
        while j < n and p[j] != "]":
            j += 2 if p[j] == "\\" else 1
        return j + 1 if j < n else -1
    if c in "\\^$.|?*+()[]{}":
        return -1
    return i + 1


def _at_alternative_end(p: str, i: int, depth: int) -> bool:
    """Does a top-level alternative end at ``p[i]`` (a ``|`` or the end of the pattern)?"""
    return depth == 0 and p[i:i + 1] in ("|", "")


def costly_construct(pattern: str) -> str | None:
    r"""The first construct of ``pattern`` that the linear matcher does not run (its description),
    or None.  The same walk as ``costly_construct`` in ``src/pretokenize/generic.rs``.

    Refused: look-behind; a look-ahead other than ``(?=C)`` or ``(?!C)`` with ``C`` one
    character (a character, a class escape, a ``\p{..}`` class or a set) standing at the end of a
    top-level alternative; ``$``, ``\Z`` and ``\z`` elsewhere than there; backreferences;
    atomic groups, possessive quantifiers, conditionals and recursion; ``\b``, ``\B`` and
    ``\G``; verbose mode (``(?x)``) together with such an ending look-ahead or end anchor.
    Escapes and sets are skipped; comments are not told apart, except ``(?#..)``.

    >>> costly_construct(r"\w+(?=X)|\w|\s+|\W") is None, costly_construct(r"\w+(?=X)\w|\w")
    (True, 'a look-ahead that is not one character at the end of a top-level alternative')
    """
    p, n = pattern, len(pattern)
    i, depth = 0, 0
    after_repeat = False   # the last item was a quantifier (a "+" after it is possessive)
    ending, verbose = False, False
    while i < n:
        c = p[i]
        if c == "\\":
            e = p[i + 1:i + 2]
            if e and e in "123456789g":
                return "a backreference"
            if e and e in "bBG":
                return r"a word boundary or search anchor (\b, \B, \G)"
            if e and e in "Zz":
                if not _at_alternative_end(p, i + 2, depth):
                    return r"an end anchor ($, \Z, \z) that is not at the end of a top-level alternative"
                ending = True
            i += 2
            if e and e in "pPxN" and p[i:i + 1] == "{":
                close = p.find("}", i)
                i = n if close < 0 else close + 1
            after_repeat = False
            continue
        if c == "[":
            end = _one_character_end(p, i)
            i = n if end < 0 else end
            after_repeat = False
            continue
        if c == "(":
            after_repeat = False
            if p.startswith("(?#", i):
                close = p.find(")", i)
                i = n if close < 0 else close + 1
                continue
            if p.startswith("(?=", i) or p.startswith("(?!", i):
                end = _one_character_end(p, i + 3)
                if end > 0 and p[end:end + 1] == ")" and _at_alternative_end(p, end + 1, depth):
                    ending = True
                    i = end + 1
                    continue
                return "a look-ahead that is not one character at the end of a top-level alternative"
            if p.startswith("(?<=", i) or p.startswith("(?<!", i):
                return "a look-behind"
            if p.startswith("(?", i):
                k = p[i + 2:i + 3]
                if k == ">":
                    return "an atomic group"
                if k == "(":
                    return "a conditional group"
                after = p[i + 3:i + 4]
                if (p.startswith("(?P=", i) or p.startswith("(?P>", i) or k in ("&", "R", "+")
                        or (k.isascii() and k.isdigit()) or (k == "-" and after.isascii() and after.isdigit())):
                    return "a backreference or recursion"
                j = i + 2
                while j < n and (p[j].isascii() and p[j].isalpha() or p[j] == "-"):
                    j += 1
                if j < n and p[j] in ":)" and "x" in p[i + 2:j].split("-")[0]:
                    verbose = True
                i += 2
            else:
                i += 1
            depth += 1
            continue
        if c == ")":
            depth = max(depth - 1, 0)
            i += 1
            after_repeat = False
            continue
        if c == "$":
            if not _at_alternative_end(p, i + 1, depth):
                return r"an end anchor ($, \Z, \z) that is not at the end of a top-level alternative"
            ending = True
            i += 1
            after_repeat = False
            continue
        if c in "*+?":
            if after_repeat and c == "+":
                return "a possessive quantifier"
            after_repeat = not after_repeat
            i += 1
            continue
        if c == "{" and (m := regex.match(r"\{([0-9]*)(?:,([0-9]*))?\}", p[i:])) and any(m.groups()):
            after_repeat = True
            i += m.end()
            continue
        after_repeat = False
        i += 1
    if verbose and ending:
        return r"verbose mode (?x) with a look-ahead or an end anchor ending an alternative"
    return None


def refuse_costly_patterns(pattern: str, what: str) -> None:
    """Refuse a pattern the Rust core cannot match in time linear in the text (see
    :func:`costly_construct`; the patterns of :data:`HAND_WRITTEN` are exempt), with the same
    message as the Rust core."""
    if pattern in HAND_WRITTEN:
        return
    found = costly_construct(pattern)
    if found is not None:
        raise ValueError(f"{what} uses {found}, which superword does not accept: encoding with it "
                         f"could take time quadratic in the text (docs/algorithm.md, section 8.1)")


def refuse_empty_matches(compiled: regex.Pattern[str], what: str) -> None:
    r"""Refuse a pattern that matches the empty string in an empty text or at a character of
    :data:`PROBE`, wherever the pattern comes in (``pattern=``, model, count, minbpe,
    ``.tiktoken`` and ``tokenizer.json`` files): a door that never pre-tokenizes (training on
    a count file) must refuse it too.

    >>> refuse_empty_matches(regex.compile(r"\w*|\s"), "pattern")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: pattern matches the empty string (it does in an empty text): every match must ...
    """
    refuse_costly_patterns(compiled.pattern, what)
    if compiled.match("") is not None:
        raise ValueError(f"{what} matches the empty string (it does in an empty text): {_NOTHING}")
    for n in range(len(PROBE)):
        m = compiled.match(PROBE, n)
        if m is not None and m.end() == n:
            raise ValueError(f"{what} matches the empty string (it does at character {n} of "
                             f"superword's probe text): {_NOTHING}")


class _Finder:
    """All matches of a pattern, in order; an empty match before the end of the text is an
    error (see ``src/pretokenize/generic.rs``, ``empty_match``: after one, Python's ``regex``
    and the Rust core's engine go on differently, and neither may guess).  ``findall`` is the
    fast path; a pattern with capturing groups (whose ``findall`` would return the groups) or
    one that can match the empty string goes through ``finditer``."""

    def __init__(self, pattern: str, what: str):
        self.what = what
        self.compiled = compile_pattern(pattern, what)
        refuse_empty_matches(self.compiled, what)
        self._plain = self.compiled.groups == 0 and self.compiled.match("") is None

    def findall(self, text: str) -> list[str]:
        if self._plain:
            pieces: list[str] = self.compiled.findall(text)
            if "" not in pieces:
                return pieces
        pieces = []
        for m in self.compiled.finditer(text):
            if m.end() > m.start():
                pieces.append(m.group())
            elif m.start() < len(text):
                raise ValueError(f"{self.what} matched the empty string (at character {m.start()} of a "
                                 f"text): every match must hold at least one character; change the "
                                 f"alternatives that can match nothing (such as \\w* or a look-ahead alone)")
        return pieces


def can_merge(token: bytes, merge_pattern: regex.Pattern[str]) -> bool:
    """SPEC 1.3: valid UTF-8 and contains a match of the merge pattern (a letter)."""
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return merge_pattern.search(text) is not None

