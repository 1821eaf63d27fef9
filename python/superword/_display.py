"""Tokens as people read them: real text with visible whitespace, not GPT-2 byte symbols.

>>> readable(b" of the\\n")
'␣of␣the↵'
>>> readable(b"\\xe4\\xbd")
'\\\\xe4\\\\xbd'
"""
from __future__ import annotations

import os
import sys
from typing import TextIO

_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


def readable(token: bytes) -> str:
    """The token's text with spaces as ``␣``, newlines as ``↵``, tabs as ``⇥``, other control
    characters as ``\\uXXXX`` and bytes that are not whole UTF-8 characters as ``\\xNN``."""
    out = []
    text = token.decode("utf-8", "surrogateescape")
    for ch in text:
        if ch in _VISIBLE:
            out.append(_VISIBLE[ch])
        elif 0xDC80 <= ord(ch) <= 0xDCFF:  # an undecodable byte
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def use_color(stream: TextIO) -> bool:
    """Colour only in a terminal, and never when ``NO_COLOR`` is set (no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


# ANSI: two alternating backgrounds show the boundaries; superwords are bold yellow on blue
_BACKGROUNDS = ("\x1b[48;5;236m", "\x1b[48;5;239m")
_SUPER = "\x1b[1;33;44m"
_RESET = "\x1b[0m"


def show_tokens(tokens: list[tuple[bytes, bool]], color: bool) -> str:
    """One line of tokens with visible boundaries: coloured blocks in a terminal, ``|``
    between tokens otherwise; superwords are highlighted (``[...]`` without colour)."""
    parts = []
    for n, (raw, sup) in enumerate(tokens):
        text = readable(raw)
        if color:
            parts.append(f"{_SUPER if sup else _BACKGROUNDS[n % 2]}{text}{_RESET}")
        else:
            parts.append(f"[{text}]" if sup else text)
    return "".join(parts) if color else "|".join(parts)


def table(header: list[str], rows: list[list[str]], stream: TextIO = sys.stdout) -> None:
    """Columns separated by at least two spaces (so a row splits back on two spaces);
    the first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        stream.write("  ".join(cells).rstrip() + "\n")
