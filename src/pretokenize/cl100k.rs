//! Hand-written matchers for tiktoken's `cl100k_base` pattern (the GPT-4 tokenizer) and the
//! older spelling of it in minbpe (`GPT4_SPLIT_PATTERN`).
//!
//! They return exactly the pieces of Python `regex`'s `findall`, without a regex engine; the
//! differential tests (`tests/test_matchers.py`, and the fancy-regex test below) check it.
//! The two patterns, alternative by alternative:
//!
//! ```text
//! cl100k   '(?i:[sdmt]|ll|ve|re) | [^\r\n\p{L}\p{N}]?+\p{L}++ | \p{N}{1,3}+
//!          | ?[^\s\p{L}\p{N}]++[\r\n]*+ | \s++$ | \s*[\r\n] | \s+(?!\S) | \s
//! minbpe   '(?i:[sdmt]|ll|ve|re) | [^\r\n\p{L}\p{N}]?+\p{L}+  | \p{N}{1,3}
//!          | ?[^\s\p{L}\p{N}]++[\r\n]*  |         \s*[\r\n] | \s+(?!\S) | \s+
//! ```
//!
//! Why each closed form below equals the regex, including its backtracking:
//! * The possessive marks change nothing for a findall of these patterns: the prefix of the
//!   word alternative excludes `\p{L}`, so dropping it could never let `\p{L}` match where it
//!   failed; and the other possessive runs are followed by nothing that could fail.
//! * Case folding: under `regex`'s simple folding only U+017F LATIN SMALL LETTER LONG S joins
//!   the ASCII letters of the contractions (`s`), the fold that `gpt4o::contraction` handles;
//!   a pytest checks this against every code point.
//! * The word alternative: a letter starts a letter run; otherwise any character that is not
//!   `\r`, `\n`, a letter or a number, followed by a letter, starts one.  Marks (`\p{M}`) are
//!   not letters here: they end a word, and can be the prefix of the next one.
//! * ` ?[^\s\p{L}\p{N}]+`: the space is taken only when "other" characters follow it; without
//!   the space the alternative needs an "other" character at the start.
//! * Every character is a letter, a number, whitespace or "other", and the first three
//!   alternatives cover all but whitespace, so the whitespace alternatives see a whitespace
//!   run `i..j`.  `\s++$` takes it all when `j` is the end of the text (cl100k only);
//!   `\s*[\r\n]` ends just after the run's last `\r` or `\n`; `\s+(?!\S)` takes all but the
//!   last character when the run is longer than one; what is left is a single character, which
//!   `\s` and `\s+` both take.  That is [`gpt4o::whitespace`](super::gpt4o::whitespace) (its
//!   `\s*[\r\n]+` ends at the same place, since the run has no `\r`/`\n` after its last one).

use super::classes::{L, N, WS};
use super::gpt4o::{class_at, contraction, numbers, run, whitespace};

/// tiktoken's `cl100k_base` pattern, exactly as `superword.CL100K_PATTERN` spells it.
pub const CL100K: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+",
    r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s",
);

/// minbpe's `GPT4_SPLIT_PATTERN`, exactly as `superword.minbpe` spells it.
pub const MINBPE_GPT4: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}|",
    r" ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+",
);

/// Which of the two spellings; they differ only in the `\s++$` alternative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gpt4 {
    Cl100k,
    Minbpe,
}

/// End of the piece that starts at `i` (`i < s.len()`).  Inlined into the findall loop
/// (as a call, its entry and exit were a large share of the matcher's instructions, as for
/// the GPT-4o matcher).
#[inline(always)]
pub fn next_piece(pattern: Gpt4, s: &str, i: usize) -> usize {
    let Some((b, c, n)) = class_at(s, i) else {
        return s.len();
    };
    // '(?i:[sdmt]|ll|ve|re)
    if c == '\'' {
        let e = contraction(s, i);
        if e > i {
            return e;
        }
    }
    // [^\r\n\p{L}\p{N}]?+\p{L}++ starting with a letter, then \p{N}{1,3}
    if b & L != 0 {
        return run(s, n, L);
    }
    if b & N != 0 {
        return numbers(s, i).unwrap_or(n);
    }
    // the word alternative with its one-character prefix
    if c != '\r' && c != '\n' {
        if let Some((b2, _, n2)) = class_at(s, n) {
            if b2 & L != 0 {
                return run(s, n2, L);
            }
        }
    }
    // ` ?[^\s\p{L}\p{N}]++[\r\n]*+`
    if let Some(e) = punctuation(s, b, c, n) {
        return e;
    }
    // whitespace from here on
    if pattern == Gpt4::Cl100k && run(s, i, WS) == s.len() {
        return s.len(); // \s++$
    }
    whitespace(s, i).unwrap_or(n)
}

/// ` ?[^\s\p{L}\p{N}]++[\r\n]*+` at a character `c` (class bits `b`) that ends at `n`.
#[inline]
fn punctuation(s: &str, b: u8, c: char, n: usize) -> Option<usize> {
    let other = |i: usize| match class_at(s, i) {
        Some((b, _, n)) if b & (WS | L | N) == 0 => Some(n),
        _ => None,
    };
    let mut j = if c == ' ' {
        other(n)?
    } else if b & (WS | L | N) == 0 {
        n
    } else {
        return None;
    };
    while let Some(n) = other(j) {
        j = n;
    }
    while matches!(s.as_bytes().get(j), Some(b'\r' | b'\n')) {
        j += 1;
    }
    Some(j)
}

/// Call `emit` with every piece of `s`, in order.
pub fn for_each_piece<'a>(pattern: Gpt4, s: &'a str, emit: impl FnMut(&'a str)) {
    let flavour = match pattern {
        Gpt4::Cl100k => super::blocks::Flavour::Cl100k,
        Gpt4::Minbpe => super::blocks::Flavour::Minbpe,
    };
    super::blocks::for_each_piece(flavour, s, |s, i| next_piece(pattern, s, i), emit)
}

#[cfg(test)]
mod tests {
    use super::super::fuzz;
    use super::*;

    fn pieces(p: Gpt4, s: &str) -> Vec<&str> {
        let mut v = Vec::new();
        for_each_piece(p, s, |x| v.push(x));
        v
    }

    #[test]
    fn examples() {
        let (c, m) = (Gpt4::Cl100k, Gpt4::Minbpe);
        assert_eq!(pieces(c, "Hello world!"), ["Hello", " world", "!"]);
        assert_eq!(pieces(c, "I'm 12345 ok"), ["I", "'m", " ", "123", "45", " ok"]);
        assert_eq!(pieces(c, "he'LL 'ſ"), ["he", "'LL", " '", "ſ"]);
        assert_eq!(pieces(c, "e\u{301}t"), ["e", "\u{301}t"]);
        assert_eq!(pieces(c, "x\u{a0}y \t1"), ["x", "\u{a0}y", " ", "\t", "1"]);
        assert_eq!(pieces(c, "...\n//x"), ["...\n", "//", "x"]);
        // the only difference: whitespace that runs to the end of the text
        assert_eq!(pieces(c, "a\n "), ["a", "\n "]);
        assert_eq!(pieces(m, "a\n "), ["a", "\n", " "]);
        assert_eq!(pieces(m, "a  \n b"), ["a", "  \n", " b"]);
    }

    #[test]
    fn equals_fancy_regex_on_random_text() {
        fuzz::against_fancy_regex(CL100K, |s| pieces(Gpt4::Cl100k, s), 0x5EED_C100);
        fuzz::against_fancy_regex(MINBPE_GPT4, |s| pieces(Gpt4::Minbpe, s), 0x5EED_4B9E);
    }
}
