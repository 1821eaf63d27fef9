"""Special tokens in front of both backends: which ones a call may meet in its text (the
``allowed_special`` / ``disallowed_special`` policy), and which ones may be registered.

A backend only cuts the text at the special tokens it is given (SPEC 7.1); deciding which
those are, and refusing a text that holds one it must not, happens here, once, for
``encode`` and ``encode_batch`` alike.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Sequence
from collections.abc import Set as AbstractSet
from typing import Literal

from ._backend import _check_int

AllowedSpecial = Literal["all", "none", "none_raise"] | AbstractSet[str]
DisallowedSpecial = Literal["all"] | Collection[str]

#: argument types of a policy whose values cannot change, so can be keys
_FIXED = (str, type(None), frozenset, tuple)
#: the most policies a tokenizer keeps (see `SpecialPolicy.kept`)
_MOST_POLICIES = 64
#: the longest special token, in characters.  Real ones are a few dozen (``<|endoftext|>``,
#: ``<|reserved_special_token_250|>``); the overlap check below costs the square of a token's
#: length, so two special tokens of 200,000 characters took 40 s to register or load.
MAX_SPECIAL_LENGTH = 1024


class _Refused(list[str]):
    """The special tokens that must not occur, longest first, with their first characters:
    a text that holds none of these holds none of the tokens (an empty token's "first
    character" is "", which every text holds)."""

    def __init__(self, tokens: list[str]):
        super().__init__(tokens)
        self.first = tuple(sorted({t[:1] for t in tokens}))


Policy = tuple[list[str], _Refused]


class SpecialPolicy:
    """The ``allowed_special`` policy of one tokenizer, over the special tokens that
    ``special_tokens()`` returns (the backend's, read anew whenever a policy is worked out)."""

    def __init__(self, special_tokens: Callable[[], dict[str, int]]):
        self._special_tokens = special_tokens
        #: (allowed_special, disallowed_special) -> what they mean; replaced by a new dict
        #: when special tokens are registered (working it out anew took two thirds of a short
        #: text's `encode`)
        self.kept: dict[tuple[object, object], Policy] = {}

    def forget(self) -> None:
        """Special tokens were registered: every kept policy is out of date.  (A new dict,
        not `clear()`: a call that read the old tokens stores into the old one.)"""
        self.kept = {}

    def allowed(self, texts: Sequence[str], allowed_special: object,
                disallowed_special: object = None) -> list[str]:
        """The special tokens to recognise, sorted, after the ``allowed_special`` policy (and
        tiktoken's ``disallowed_special``, when given); raises if one of ``texts`` holds a
        special token that must not occur."""
        # the common case first, as cheaply as Python allows (this was a third of a short
        # text's `encode`): a value equal to a kept key means what the key means
        policy = None
        try:  # noqa: SIM105 (`contextlib.suppress` costs more than the lookup)
            policy = self.kept[allowed_special, disallowed_special]
        except (KeyError, TypeError):  # new, or a set or list (which cannot be a key)
            pass
        allowed, checks = policy or self._keep(allowed_special, disallowed_special)
        if checks:
            # a text without any of their first characters holds none of them (cl100k's five
            # all start with "<": one scan instead of five per text)
            first = checks.first
            for text in texts:
                for c in first:
                    if c in text:
                        _refuse(texts, checks)
                        return allowed
        return allowed

    def allowed_in(self, text: str, allowed_special: object, disallowed_special: object = None) -> list[str]:
        """:meth:`allowed` for one text (``encode``: a third of its time on a short text was
        here, so the loop over texts is left out)."""
        policy = None
        try:  # noqa: SIM105
            policy = self.kept[allowed_special, disallowed_special]
        except (KeyError, TypeError):
            pass
        allowed, checks = policy or self._keep(allowed_special, disallowed_special)
        if checks:
            for c in checks.first:
                if c in text:
                    _refuse((text,), checks)
                    break
        return allowed

    def _keep(self, allowed_special: object, disallowed_special: object) -> Policy:
        """`_policy`, kept in `kept` when its arguments are values that cannot change (a `set`
        or a list is worked out every time)."""
        kept = self.kept  # (taken before the tokens are read: see `forget`)
        policy = self._policy(allowed_special, disallowed_special)
        if type(allowed_special) in _FIXED and type(disallowed_special) in _FIXED:
            with contextlib.suppress(TypeError):  # a tuple holding something unhashable
                if len(kept) >= _MOST_POLICIES:  # a new frozenset per call must not pile up
                    kept.clear()
                kept[allowed_special, disallowed_special] = policy
        return policy

    def _policy(self, allowed_special: object, disallowed_special: object) -> Policy:
        """The special tokens to recognise, sorted, and those that must not occur, longest
        first (so that a token that contains another is the one named)."""
        special = self._special_tokens()
        raising: AbstractSet[str] = frozenset()
        if isinstance(allowed_special, str):
            if allowed_special == "all":
                allowed: AbstractSet[str] = frozenset(special)
            elif allowed_special in ("none", "none_raise"):
                allowed = frozenset()
                if allowed_special == "none_raise":
                    raising = frozenset(special)
            else:
                raise ValueError(f"allowed_special must be 'all', 'none', 'none_raise' or a set "
                                 f"of special tokens, got {allowed_special!r}")
        elif isinstance(allowed_special, AbstractSet):
            unknown = sorted(s for s in allowed_special if s not in special)
            if unknown:
                raise ValueError(f"allowed_special names tokens that are not registered: {unknown}")
            allowed = frozenset(allowed_special)
        else:
            raise TypeError(f"allowed_special must be 'all', 'none', 'none_raise' or a set, "
                            f"not {type(allowed_special).__name__}")
        if disallowed_special is not None:
            raising = _disallowed(disallowed_special, special)
        # sorted once per policy (sorted per text, the empty list of allowed_special="none" took
        # a quarter of a large flat encode_batch)
        return sorted(allowed), _Refused(sorted(raising - allowed, key=len, reverse=True))


def _disallowed(disallowed_special: object, special: dict[str, int]) -> AbstractSet[str]:
    if isinstance(disallowed_special, str):
        if disallowed_special != "all":
            raise ValueError(f"disallowed_special must be 'all' or a collection of special "
                             f"tokens, got {disallowed_special!r}")
        return frozenset(special)
    if not isinstance(disallowed_special, Collection):
        raise TypeError(f"disallowed_special must be 'all' or a collection of special tokens, "
                        f"not {type(disallowed_special).__name__}")
    unknown = sorted(str(s) for s in disallowed_special if s not in special)
    if unknown:
        raise ValueError(f"disallowed_special names tokens that are not registered: {unknown}")
    return frozenset(disallowed_special)


def _refuse(texts: Sequence[str], checks: _Refused) -> None:
    """Raise if one of ``texts`` holds one of the special tokens ``checks``."""
    for n, text in enumerate(texts):
        for c in checks.first:
            if c in text:
                break
        else:
            continue
        for s in checks:
            if s in text:
                where = f"text {n}" if len(texts) > 1 else "text"
                raise ValueError(
                    f"{where} contains the special token {s!r} at index {text.index(s)}; "
                    f"pass allowed_special='all' (or a set) to encode it as a special "
                    f"token, or 'none' (disallowed_special=()) to encode it as text")


# -- which special tokens may exist ------------------------------------------------------------

def check_new_special_tokens(special: dict[str, int], tokens: list[str]) -> None:
    """Refuse ``tokens`` as new special tokens next to the registered ``special``, naming the
    first one at fault (see :meth:`superword.Tokenizer.register_special_tokens`)."""
    seen = set(special)
    for i, t in enumerate(tokens):
        if not isinstance(t, str):
            raise TypeError(f"special token {i} is {type(t).__name__}, not str")
        _check_special_text(t)
        if t in seen:
            raise ValueError(f"special token {t!r} is already registered")
        seen.add(t)
    _check_special_overlaps([*special, *tokens])


def check_special_ids(special: dict[str, int]) -> None:
    """Refuse special tokens with the ids a ranks file is to give them (see
    :meth:`superword.Tokenizer.from_tiktoken`), naming the first one at fault."""
    for s, i in special.items():
        if not isinstance(s, str):
            raise ValueError(f"special token {s!r} must be a non-empty str")
        _check_special_text(s)
        _check_int(f"id of special token {s!r}", i)
        if not 0 <= i < 2**32:
            raise ValueError(f"special token {s!r} has id {i}, which is not a token id: token "
                             f"ids are 32-bit, 0 to {2**32 - 1}")
    _check_special_overlaps(list(special))


def _check_special_overlaps(tokens: list[str]) -> None:
    """Reject two special tokens that partly overlap (see `_overlap`)."""
    if (found := _overlap(tokens)) is not None:
        a, b, start = found
        raise ValueError(f"special tokens {a!r} and {b!r} overlap ({start!r} ends one and starts "
                         f"the other)")


def _overlap(tokens: list[str]) -> tuple[str, str, str] | None:
    """Two special tokens that partly overlap (the end of ``a`` is the start of ``b``, and
    neither contains the other), with what they share, or ``None``: where they meet in a
    text, which one is meant would be ambiguous.  One inside another is fine: the longest
    match wins (SPEC 7.1).

    Each token's beginnings are looked up among the other tokens' ends (by hash, so that two
    long tokens do not keep all their ends in memory), instead of comparing every pair of
    tokens: that took 43 s for 3,000 tokens.  An overlap is shorter than both tokens, so
    no end or beginning longer than the longest other token is looked at.  The work still
    grows with the square of a token's length, which `MAX_SPECIAL_LENGTH` bounds."""
    if len(tokens) < 2:
        return None
    longest, second = sorted(map(len, tokens), reverse=True)[:2]
    def reach(t: str) -> int:  # the length of the longest token other than `t`
        return second if len(t) == longest else longest
    ends: dict[int, list[str]] = {}
    for a in tokens:
        for k in range(1, min(len(a), reach(a))):
            ends.setdefault(hash(a[-k:]), []).append(a)
    contained: dict[tuple[str, str], bool] = {}
    for b in tokens:
        for k in range(1, min(len(b), reach(b))):
            start = b[:k]
            for a in ends.get(hash(start), ()):
                if a == b or len(a) <= k or a[-k:] != start:
                    continue
                pair = (a, b)
                if pair not in contained:
                    contained[pair] = a in b or b in a
                if not contained[pair]:
                    return a, b, start
    return None


def check_loaded_special_tokens(special: dict[str, int], name: str, path: str | None = None) -> None:
    """Apply the rule of :func:`check_new_special_tokens` to the special tokens a file (or a
    pickle) gave a tokenizer, naming ``name`` and, when ``path`` is a model file that lists
    them one a line (``special_tokens``, then ``<id> <token>`` lines), the line.  Its reader
    has already refused what the format itself forbids (a bad id, a token given twice)."""
    if not special:
        return
    def fail(token: str, exc: ValueError) -> ValueError:
        line = _special_line(path, special[token]) if path is not None else None
        where = f"{name}, line {line}" if line is not None else name
        return ValueError(f"{where}: {exc}")
    for s in special:
        try:
            _check_special_text(s)
        except ValueError as exc:
            raise fail(s, exc) from None
    if (found := _overlap(list(special))) is not None:
        a, b, start = found
        second = a if special[a] > special[b] else b
        raise fail(second, ValueError(f"special tokens {a!r} and {b!r} overlap ({start!r} ends one "
                                      f"and starts the other)"))


def _special_line(path: str, ident: int) -> int | None:
    """The number of the line of ``path`` that gives the special token of id ``ident`` (the
    line after ``special_tokens`` holds their count), or ``None``.  Only read to word an
    error."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        first = lines.index("special_tokens") + 2
    except (OSError, ValueError):
        return None
    for n in range(first, len(lines)):
        if not lines[n] or not lines[n][0].isdigit():
            break
        if lines[n].startswith(f"{ident} "):
            return n + 1
    return None


# -- text that UTF-8 can hold ------------------------------------------------------------------

def _lone_surrogate(text: str) -> tuple[str, int] | None:
    """The first lone surrogate of ``text`` (which UTF-8 cannot hold), as ``("U+D800", index)``,
    or ``None``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"U+{ord(text[exc.start]):04X}", exc.start
    return None


def _check_special_text(token: str) -> None:
    """The checks of one special token's text, the same at every door (docs/algorithm.md 8.1):
    not empty; at most `MAX_SPECIAL_LENGTH` characters; no line break (a model file gives
    each special token a line of its own); and text UTF-8 can hold (one with a lone surrogate
    was refused by the Rust core with Python's bare UnicodeEncodeError, and taken by the
    reference, whose decode and save then failed)."""
    if not token:
        raise ValueError("a special token cannot be empty")
    if len(token) > MAX_SPECIAL_LENGTH:
        raise ValueError(f"special token {token[:24]!r}... is {len(token):,} characters long; a "
                         f"special token may have at most {MAX_SPECIAL_LENGTH:,}")
    if "\n" in token or "\r" in token:
        raise ValueError(f"special token {token!r} contains a line break")
    if (found := _lone_surrogate(token)) is not None:
        raise ValueError(f"special token {token!r} contains a lone surrogate {found[0]}; it cannot "
                         f"be encoded as UTF-8")


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if (found := _lone_surrogate(text)) is not None:
        raise ValueError(f"text contains a lone surrogate {found[0]} at index {found[1]}; it cannot "
                         f"be encoded as UTF-8")
    return text
