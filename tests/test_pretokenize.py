"""Pre-tokenization: the SPEC's examples, script runs, and properties."""
from __future__ import annotations

import re

import pytest
import regex
import superword
from hypothesis import given, settings
from hypothesis import strategies as st
from superword.reference.pretokenize import DEFAULT_SCRIPTS, GPT4O, SCRIPT_SPECIFIC_GPT4O, Pretokenizer
from superword.reference.scripts import script_name, script_names, script_table

AWARE = Pretokenizer(GPT4O, SCRIPT_SPECIFIC_GPT4O, DEFAULT_SCRIPTS)
SIMPLE = Pretokenizer(GPT4O)


def test_spec_examples():
    assert AWARE.pretokenize("Hello мир 你好 world!") == ["Hello", " мир", " 你", "好", " world", "!"]
    assert AWARE.pretokenize("Helloмир你好world!") == ["Hello", "мир", "你", "好", "world", "!"]
    assert AWARE.pretokenize("漢字カタカナ ABC") == ["漢", "字", "カ", "タ", "カ", "ナ", " ABC"]


def test_simple_mode_keeps_cjk_together():
    assert SIMPLE.pretokenize("Hello мир 你好 world!") == ["Hello", " мир", " 你好", " world", "!"]


def test_held_back_common_characters_move_to_the_next_run():
    # ", " is Common: held back after "ab" and cut off with the Han run that follows
    assert AWARE.script_runs("ab, 你好 c") == [("ab", False), (", 你好", True), (" c", False)]
    # Common at the very start joins the first real script
    assert AWARE.script_runs("12 ไทย") == [("12 ไทย", True)]
    # only Common: one run with the main pattern
    assert AWARE.script_runs("  !? ") == [("  !? ", False)]


def test_inherited_marks_stay_with_their_letter():
    # U+0301 (combining acute, Inherited) extends the Latin run and counts as real, so the
    # space after it is the only held-back character
    runs = AWARE.script_runs("e\u0301 漢")
    assert runs == [("e\u0301", False), (" 漢", True)]
    # a leading mark makes an Inherited run that the next script absorbs without a cut
    assert AWARE.script_runs("\u0301ab") == [("\u0301ab", False)]


def test_thai_is_one_letter_per_pretoken_with_marks():
    # ที่ = THO THAHAN + SARA II (Mn) + MAI EK (Mn): one letter with its marks
    assert AWARE.pretokenize("ที่นี่") == ["ที่", "นี่"]


def test_contractions_and_numbers_and_spaces():
    assert SIMPLE.pretokenize("I'm 12345 ok\r\n\r\n  go") == \
        ["I'm", " ", "123", "45", " ok", "\r\n\r\n", " ", " go"]


def test_script_table_matches_regex_on_every_code_point():
    """The committed table equals the Script property of the installed `regex` (the source
    it was generated from), for all 0x110000 code points."""
    names = script_names()
    table = script_table()
    every = "".join(map(chr, range(0x110000)))
    expected = bytearray(0x110000)  # Common
    for index, name in enumerate(names):
        if name == "Common":
            continue
        for m in regex.finditer(r"\p{Script=" + name + r"}+", every):
            expected[m.start():m.end()] = bytes([index]) * (m.end() - m.start())
    assert table == expected
    assert script_name(ord("ក")) == "Khmer"


#: Text built from arbitrary characters and pieces that stress the patterns: emoji with
#: modifiers, combining marks, CJK, Thai, Khmer, Arabic digits, contractions, CRLF runs.
text_strategy = st.lists(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list("  \t\r\n'sSdD0123.,!?/-") + [
            "\r\n", "👍🏽", "e\u0301", "你", "ไทย", "ក្ញុំ", "カ", "мир", "١٢", "'ll", "   "]),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text_strategy)
def test_pretokens_concatenate_back(text):
    for p in (AWARE, SIMPLE):
        pieces = p.pretokenize(text)
        assert "".join(pieces) == text
        assert all(pieces)


def test_ascii_text_uses_the_script_pattern_when_latin_is_configured():
    """ASCII is Latin and Common only, but that is one main-pattern run only while Latin is not
    among the scripts that use the script-specific pattern (SPEC 1.2)."""
    from superword import _core

    latin = Pretokenizer(GPT4O, SCRIPT_SPECIFIC_GPT4O, ["Latin"])
    expected = ["h", "e", "l", "l", "o", " w", "o", "r", "l", "d", "!"]
    assert latin.pretokenize("hello world!") == expected
    assert latin.pretokenize("hello world!") == [
        p for run, specific in latin.script_runs("hello world!")
        for p in regex.findall(SCRIPT_SPECIFIC_GPT4O if specific else GPT4O, run)]
    assert _core.pretokenize("hello world!", GPT4O, SCRIPT_SPECIFIC_GPT4O, ["Latin"]) == expected
    # without Latin configured, ASCII text stays one run with the main pattern
    assert AWARE.pretokenize("hello world!") == ["hello", " world", "!"]


def test_a_custom_pattern_that_matches_the_empty_string_is_refused_by_both_backends():
    # after an empty match Python's regex tries the same place again and the Rust core's
    # engine moves on a character: "(?=a)|\w|\W" gave "x", "b" for "xaab" in Rust (the "a"s
    # lost) and "x", "a", "a", "b" in the reference.  Both refuse it, in the same words: where
    # the pattern comes in when it matches the empty string in an empty text or in the probe
    # text (tests/test_hostile_files.py tries every door), else where it happens
    nothing = (r"every match must hold at least one character; change the alternatives that "
               r"can match nothing (such as \w* or a look-ahead alone)")
    for backend in ("reference", "rust"):
        for pattern, says in ((r"(?=a)|\w|\W", "matched the empty string (at character 1 of a text)"),
                              (r"\w*|\s+|[^\w\s]+", "matches the empty string (it does in an empty text)")):
            with pytest.raises(ValueError, match=re.escape(f"pattern {says}: {nothing}")):
                superword.train(["xaab caab"] * 5, 300, "bpe", backend=backend,
                                script_aware=False, pattern=pattern)
    from superword import _core
    for make in (Pretokenizer, lambda p: _core.pretokenize("", p)):
        with pytest.raises(ValueError, match=r"pattern matches the empty string \(it does in an empty text\)"):
            make(r"\w*")
    with pytest.raises(ValueError, match="script_pattern matches the empty string"):
        superword.train(["漢字 abc"] * 3, 300, "bpe", script_pattern=r"(?=\p{Han})|\p{L}|\s")


def test_custom_patterns_read_the_same_in_both_backends():
    # the Rust core runs a pattern without a hand-written matcher on fancy-regex, which read
    # some of the Python regex syntax differently (src/pretokenize/dialect.rs): Unicode 16
    # tables (U+088F, a letter of Unicode 17), "$" and "\Z", and "[", "--", "&&", "~~" in sets
    from superword import _core
    patterns = [r" ?\p{L}+| ?[^\s\p{L}]+|\s+", r" ?\pL+|\P{L}", r"[\p{Lu}\p{Lo}]+|[^\p{Lu}\p{Lo}]+",
                r"\p{N}{1,3}|\p{Letter}+|[^\p{^L}]|.|\n", r"\w+$|\w|\s", r"\w+\Z|\w|\s",
                r"(?m)\w+$|\w|\s", r"[\w--\d]+|.|\n", r"[a&&b~~c]+|.|\n", r"[a[bc]]+|.|\n",
                r"[]a]+|.|\n", r"\$\w+|.|\n"]
    texts = ["ab\n", "ab\ncd\n", "a1b-c", "a&b~~c", "a[bc]]x", "]]a]", "$ab cd$",
             "\U00031350x\u1c89y", "é\u0301 Ωμέγα 123 ٣٤"]
    for k, pattern in enumerate(patterns):
        reference = Pretokenizer(pattern)
        # (\w and \d keep the engines' own tables: letters new in Unicode 17 only for \p{..})
        for text in texts + ["ab\u088fcd ef"] * (k < 4):
            assert _core.pretokenize(text, pattern) == reference.pretokenize(text), (pattern, text)
    for backend_pretokenize in (lambda p: Pretokenizer(p).pretokenize("x"), lambda p: _core.pretokenize("x", p)):
        with pytest.raises(ValueError, match=r"pattern uses a POSIX class such as \[\[:alpha:\]\]"):
            backend_pretokenize(r"[[:digit:]]+|.")
