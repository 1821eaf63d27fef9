#!/usr/bin/env python3
"""Generate superword's Unicode tables from the PyPI ``regex`` package.

Usage::

    pip install "regex>=2025.10.23,<2026.9"   # the releases that implement Unicode 17.0
    python tools/gen_unicode_tables.py  # rewrites python/superword/_data/{scripts,classes}.txt

Two tables:

* ``scripts.txt``: the ``Script`` property, for script-aware pre-tokenization (SPEC 1.2);
* ``classes.txt``: the character classes the GPT-4o patterns use (``\\p{Lu}``, ``\\p{Ll}``,
  ``\\p{Lt}``, ``\\p{Lm}``, ``\\p{Lo}``, ``\\p{M}``, ``\\p{N}`` and ``\\s``), for the Rust core's
  hand-written matcher, so that it agrees with ``regex`` on every code point.

Why ``regex``: it is the engine the reference pre-tokenizer already depends on, it is
installable from PyPI everywhere, and it carries the Unicode 17.0 Character Database
(``Scripts.txt``) compiled in.  Reading the table back out of it guarantees that the
pre-tokenizer's notion of ``\\p{L}``/``\\s`` and our notion of "script" come from the same
Unicode version.

The output is one compact text file, read by the pure-Python reference and (later) embedded
into the Rust core, so both sides agree on every code point.  Format, one range per line::

    <first> <last> <Script_Name>        (hex code points, inclusive)

Only code points whose script is neither Common nor Unknown are listed; everything absent is
treated as Common (SPEC 1.2).  The script names are the long property-value aliases of
``PropertyValueAliases.txt`` (``Han``, ``Myanmar``, ``Old_Italic``, ...).
"""
from __future__ import annotations

import os
import sys

import regex
import regex._regex as _regex_impl

# Long names of every Script value in Unicode 17.0 (PropertyValueAliases.txt, "sc").
# The generator checks this list against the scripts ``regex`` knows, so a missing or
# misspelt name stops it instead of silently mapping characters to Common.
SCRIPT_NAMES = ["Adlam", "Ahom", "Anatolian_Hieroglyphs", "Arabic", "Armenian", "Avestan", "Balinese", "Bamum", "Bassa_Vah", "Batak", "Bengali", "Beria_Erfe", "Bhaiksuki", "Bopomofo", "Brahmi", "Braille", "Buginese", "Buhid", "Canadian_Aboriginal", "Carian", "Caucasian_Albanian", "Chakma", "Cham", "Cherokee", "Chorasmian", "Common", "Coptic", "Cuneiform", "Cypriot", "Cypro_Minoan", "Cyrillic", "Deseret", "Devanagari", "Dives_Akuru", "Dogra", "Duployan", "Egyptian_Hieroglyphs", "Elbasan", "Elymaic", "Ethiopic", "Garay", "Georgian", "Glagolitic", "Gothic", "Grantha", "Greek", "Gujarati", "Gunjala_Gondi", "Gurmukhi", "Gurung_Khema", "Han", "Hangul", "Hanifi_Rohingya", "Hanunoo", "Hatran", "Hebrew", "Hiragana", "Imperial_Aramaic", "Inherited", "Inscriptional_Pahlavi", "Inscriptional_Parthian", "Javanese", "Kaithi", "Kannada", "Katakana", "Katakana_Or_Hiragana", "Kawi", "Kayah_Li", "Kharoshthi", "Khitan_Small_Script", "Khmer", "Khojki", "Khudawadi", "Kirat_Rai", "Lao", "Latin", "Lepcha", "Limbu", "Linear_A", "Linear_B", "Lisu", "Lycian", "Lydian", "Mahajani", "Makasar", "Malayalam", "Mandaic", "Manichaean", "Marchen", "Masaram_Gondi", "Medefaidrin", "Meetei_Mayek", "Mende_Kikakui", "Meroitic_Cursive", "Meroitic_Hieroglyphs", "Miao", "Modi", "Mongolian", "Mro", "Multani", "Myanmar", "Nabataean", "Nag_Mundari", "Nandinagari", "New_Tai_Lue", "Newa", "Nko", "Nushu", "Nyiakeng_Puachue_Hmong", "Ogham", "Ol_Chiki", "Ol_Onal", "Old_Hungarian", "Old_Italic", "Old_North_Arabian", "Old_Permic", "Old_Persian", "Old_Sogdian", "Old_South_Arabian", "Old_Turkic", "Old_Uyghur", "Oriya", "Osage", "Osmanya", "Pahawh_Hmong", "Palmyrene", "Pau_Cin_Hau", "Phags_Pa", "Phoenician", "Psalter_Pahlavi", "Rejang", "Runic", "Samaritan", "Saurashtra", "Sharada", "Shavian", "Siddham", "Sidetic", "SignWriting", "Sinhala", "Sogdian", "Sora_Sompeng", "Soyombo", "Sundanese", "Sunuwar", "Syloti_Nagri", "Syriac", "Tagalog", "Tagbanwa", "Tai_Le", "Tai_Tham", "Tai_Viet", "Tai_Yo", "Takri", "Tamil", "Tangsa", "Tangut", "Telugu", "Thaana", "Thai", "Tibetan", "Tifinagh", "Tirhuta", "Todhri", "Tolong_Siki", "Toto", "Tulu_Tigalari", "Ugaritic", "Unknown", "Vai", "Vithkuqi", "Wancho", "Warang_Citi", "Yezidi", "Yi", "Zanabazar_Square"]

DATA = os.path.join(os.path.dirname(__file__), "..", "python", "superword", "_data")
OUT = os.path.join(DATA, "scripts.txt")
CLASSES_OUT = os.path.join(DATA, "classes.txt")

# bit of each class in classes.txt; the Rust core (src/pretokenize/classes.rs) uses the same bits
CLASSES = [("Lu", r"\p{Lu}"), ("Ll", r"\p{Ll}"), ("Lt", r"\p{Lt}"), ("Lm", r"\p{Lm}"),
           ("Lo", r"\p{Lo}"), ("M", r"\p{M}"), ("N", r"\p{N}"), ("WS", r"\s")]


def _check_names_complete() -> None:
    """Every Script value ``regex`` knows must have exactly one name in SCRIPT_NAMES."""
    values = _regex_impl.get_properties()["SCRIPT"][1]
    known_ids = set(values.values())
    ours = {}
    for name in SCRIPT_NAMES:
        key = name.replace("_", "").upper()
        if key not in values:
            sys.exit(f"regex does not know the script {name!r}: is it older than Unicode 17.0?")
        ours[values[key]] = name
    missing = sorted(min(k for k, v in values.items() if v == i) for i in known_ids - ours.keys())
    if missing:
        sys.exit(f"scripts known to regex but missing from SCRIPT_NAMES: {missing}")


def script_ranges() -> list[tuple[int, int, str]]:
    """Return sorted, non-overlapping ``(first, last, name)`` ranges for every non-Common script."""
    every_code_point = "".join(map(chr, range(0x110000)))
    ranges = []
    for name in SCRIPT_NAMES:
        if name in ("Common", "Unknown"):
            continue
        for m in regex.finditer(r"\p{Script=" + name + r"}+", every_code_point):
            ranges.append((m.start(), m.end() - 1, name))
    ranges.sort()
    for (_a0, a1, an), (b0, _, bn) in zip(ranges, ranges[1:]):
        if b0 <= a1:
            sys.exit(f"overlapping scripts {an} and {bn} at U+{b0:04X}")
    return ranges


def class_ranges() -> list[tuple[int, int, int]]:
    """Sorted ``(first, last, bits)`` ranges of code points with the same non-zero class bits."""
    every_code_point = "".join(map(chr, range(0x110000)))
    bits = bytearray(0x110000)
    for bit, (_, pattern) in enumerate(CLASSES):
        for m in regex.finditer(pattern + "+", every_code_point):
            for cp in range(m.start(), m.end()):
                bits[cp] |= 1 << bit
    ranges = []
    cp = 0
    while cp < 0x110000:
        end = cp
        while end + 1 < 0x110000 and bits[end + 1] == bits[cp]:
            end += 1
        if bits[cp]:
            ranges.append((cp, end, bits[cp]))
        cp = end + 1
    return ranges


def write_classes() -> None:
    ranges = class_ranges()
    with open(CLASSES_OUT + ".tmp", "w", encoding="ascii", newline="\n") as f:
        f.write("# Unicode 17.0 character classes of the GPT-4o patterns: inclusive hex ranges and a\n")
        f.write("# bit mask (hex) of " + ", ".join(f"{1 << i:#04x} {n}" for i, (n, _) in enumerate(CLASSES)) + ".\n")
        f.write(f"# Generated by tools/gen_unicode_tables.py from the PyPI package regex {regex.__version__}.\n")
        for first, last, bits in ranges:
            f.write(f"{first:04X} {last:04X} {bits:02X}\n")
    os.replace(CLASSES_OUT + ".tmp", CLASSES_OUT)
    print(f"wrote {len(ranges)} ranges to {os.path.normpath(CLASSES_OUT)}")


def main() -> None:
    _check_names_complete()
    write_classes()
    ranges = script_ranges()
    with open(OUT + ".tmp", "w", encoding="ascii", newline="\n") as f:
        f.write("# Unicode 17.0 Script property, one inclusive range of hex code points per line.\n")
        f.write(f"# Generated by tools/gen_unicode_tables.py from the PyPI package regex {regex.__version__}.\n")
        f.write("# Code points not listed are Common (this includes Unknown).\n")
        for first, last, name in ranges:
            f.write(f"{first:04X} {last:04X} {name}\n")
    os.replace(OUT + ".tmp", OUT)
    print(f"wrote {len(ranges)} ranges to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
