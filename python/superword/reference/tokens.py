"""Byte tokens and their printable form.

* SPEC 2.2: the base vocabulary is the 243 bytes that can occur in UTF-8.
* SPEC 8: model files write tokens with the GPT-2 byte-to-unicode map (space is ``Ġ``).

>>> len(BYTE_TOKENS), BYTE_TOKENS[0xC2 - 2]
(243, b'\\xc2')
>>> render(b" the\\n"), parse(render(b" the\\n"))
('ĠtheĊ', b' the\\n')
"""
from __future__ import annotations

#: The 243 byte tokens in id order: 0x00..0xBF, then 0xC2..0xF4.
BYTE_TOKENS: tuple[bytes, ...] = tuple(bytes([b]) for b in [*range(0x00, 0xC0), *range(0xC2, 0xF5)])


def _gpt2_byte_map() -> list[str]:
    """GPT-2's map: printable Latin-1 bytes stand for themselves, the other 68 bytes are
    shifted to U+0100, U+0101, ... in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    chars = [""] * 256
    shifted = 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + shifted)
            shifted += 1
    return chars


BYTE_TO_CHAR: list[str] = _gpt2_byte_map()
CHAR_TO_BYTE: dict[str, int] = {c: b for b, c in enumerate(BYTE_TO_CHAR)}


def render(token: bytes) -> str:
    """The printable (GPT-2) form of a token, as written in model files."""
    return "".join(BYTE_TO_CHAR[b] for b in token)


def parse(text: str) -> bytes:
    """Inverse of :func:`render`; raises ``KeyError`` on a character outside the map."""
    return bytes(CHAR_TO_BYTE[c] for c in text)
