"""The hand-written matchers for the GPT-4 (cl100k_base, minbpe) and GPT-2 patterns equal the
`regex` module's findall: on random text, and on every line of every file of ../shared/data.

Each spelling below selects a matcher in the Rust core only when the pattern string is exactly
that spelling; any other pattern goes through a general regex engine."""
from __future__ import annotations

import functools
import gzip
from pathlib import Path

import pytest
import regex
from helpers import need
from hypothesis import given, settings
from hypothesis import strategies as st
from superword import CL100K_PATTERN, _core
from superword.minbpe import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN
from test_parity import corpus_files
from test_pretokenize import text_strategy

#: OpenAI's encoder.py spelling of the GPT-2 pattern.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
#: tiktoken's r50k_base / p50k_base spelling of it.
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

PATTERNS = {
    "cl100k": CL100K_PATTERN,
    "minbpe-gpt4": GPT4_SPLIT_PATTERN,
    "gpt2": GPT2_PATTERN,
    "minbpe-gpt2": GPT2_SPLIT_PATTERN,
    "r50k": R50K_PATTERN,
}


def test_the_patterns_are_the_published_ones():
    """Guard against an edit that would silently send a pattern to the general engine: these
    are the strings tiktoken and minbpe publish."""
    assert CL100K_PATTERN == ("'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+|"
                              " ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s")
    assert GPT4_SPLIT_PATTERN == ("'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,3}|"
                                  " ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+")
    assert GPT2_SPLIT_PATTERN == "'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"


def test_contraction_case_folding_adds_only_long_s():
    """`(?i:[sdmt]|ll|ve|re)` matches the ASCII letters in both cases and, for `s`, U+017F
    LATIN SMALL LETTER LONG S: nothing else among all code points (the matchers rely on it)."""
    every = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000)
    for letter in "sdmtlver":
        folded = {m.group() for m in regex.finditer(f"(?i:{letter})", every)}
        assert folded == {letter, letter.upper()} | ({"\u017f"} if letter == "s" else set())


#: Random text with the characters that decide between the alternatives: contractions in
#: every case (and LONG S), marks, numbers, all kinds of whitespace, lone carriage returns.
matcher_text = st.lists(
    st.one_of(
        text_strategy,
        st.characters(codec="utf-8"),
        st.sampled_from(["'s", "'S", "'\u017f", "'LL", "'lL", "'Re", "'VE", "'d", "'M", "'T", "'x", "'",
                         "\u017f", "\u212a", "\u00a0", "\u3000", "\u0085", "\u2028", "\x0b", "\x0c",
                         "\r", "\r\r\n", " \n ", "\u0301", "e\u0301", "\u0663\u0664", "\u216b", " 1",
                         " !", " .\n", "!/\r\n"]),
    ),
    max_size=30,
).map("".join)


@pytest.mark.parametrize("name", PATTERNS)
@settings(max_examples=1500, deadline=None)
@given(text=matcher_text)
def test_matcher_equals_regex_on_random_text(name, text):
    pattern = PATTERNS[name]
    assert _core.pretokenize(text, pattern) == regex.findall(pattern, text)


@functools.lru_cache(maxsize=1)
def corpus_slices(path: Path) -> list[str]:
    """The file, whole, cut at line ends into slices of about 4 MB (to keep lists small)."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    text = raw.decode("utf-8")
    slices, start, step = [], 0, 4_000_000
    while start < len(text):
        end = text.find("\n", start + step)
        end = len(text) if end == -1 else end + 1
        slices.append(text[start:end])
        start = end
    return slices


#: The 100 MB Gutenberg file is checked with one spelling per matcher (cl100k, gpt2): the other
#: spellings run the same Rust matcher, which the smaller files and the random text already tie
#: to their spelling, and each pass over that file costs about a minute of CI.
CORPUS_CASES = [pytest.param(path, name, id=f"{path.name}-{name}") for path in corpus_files()
                for name in PATTERNS if path.suffix != ".gz" or name in ("cl100k", "gpt2")]


@pytest.mark.parametrize("path,name", CORPUS_CASES)
def test_matcher_equals_regex_on_the_shared_corpora(path, name):
    """Every file of ../shared/data, whole (the Gutenberg file in slices cut at line ends)."""
    pattern = PATTERNS[name]
    for part in corpus_slices(need(path)):
        assert _core.pretokenize(part, pattern) == regex.findall(pattern, part)
