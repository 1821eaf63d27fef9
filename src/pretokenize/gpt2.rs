//! A hand-written matcher for the GPT-2 pattern, in its three common spellings: OpenAI's
//! `encoder.py`, minbpe's `GPT2_SPLIT_PATTERN`, and tiktoken's `r50k_base`/`p50k_base`.
//!
//! It returns exactly the pieces of Python `regex`'s `findall`, without a regex engine; the
//! differential tests (`tests/test_matchers.py`, and the fancy-regex test below) check it.
//!
//! ```text
//! GPT-2    's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+  | ?\p{N}+  | ?[^\s\p{L}\p{N}]+  |        \s+(?!\S) | \s+
//! minbpe   '(?:[sdmt]|ll|ve|re)    | ?\p{L}+  | ?\p{N}+  | ?[^\s\p{L}\p{N}]+  |        \s+(?!\S) | \s+
//! r50k     '(?:[sdmt]|ll|ve|re)    | ?\p{L}++ | ?\p{N}++ | ?[^\s\p{L}\p{N}]++ | \s++$ | \s+(?!\S) | \s
//! ```
//!
//! Why one closed form equals all three:
//! * The contractions are the same seven, case-sensitive (no `(?i)` here).
//! * Every character is exactly one of letter, number, whitespace or "other" (neither), and
//!   each of the middle three alternatives is "an optional space, then a run of one kind".  The
//!   space is taken only when a character of that kind follows it (without the space, the run
//!   would have to start at the space, which is whitespace).  So a space followed by a
//!   non-whitespace character starts that character's run; a non-whitespace character starts
//!   its own run; the possessive `++` changes nothing, as nothing follows the runs.
//! * What is left is a whitespace run `i..j` (not a single space before a non-space).
//!   `\s++$` and `\s+(?!\S)` both take all of it when `j` is the end of the text; otherwise
//!   `\s+(?!\S)` backtracks to all but the last character when the run is longer than one.  A
//!   single character is left for `\s` and `\s+` alike.  `\r` and `\n` are not special.

use super::classes::{L, N, WS};
use super::gpt4o::{class_at, run};

/// The GPT-2 pattern as OpenAI's `encoder.py` spells it.
pub const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// minbpe's `GPT2_SPLIT_PATTERN`.
pub const MINBPE_GPT2: &str = r"'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// tiktoken's `r50k_base` (and `p50k_base`) pattern.
pub const R50K: &str = r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";

/// `'s|'t|'re|'ve|'m|'ll|'d` at `i` (an apostrophe): its end, if one matches.
fn contraction(s: &str, i: usize) -> Option<usize> {
    let b = s.as_bytes();
    match (b.get(i + 1), b.get(i + 2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => Some(i + 2),
        (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => Some(i + 3),
        _ => None,
    }
}

/// The run of characters of `kind` (L, N, or 0 for "other") from `i`.
#[inline]
fn kind_run(s: &str, mut i: usize, kind: u8) -> usize {
    if kind != 0 {
        return run(s, i, kind);
    }
    while let Some((b, _, n)) = class_at(s, i) {
        if b & (WS | L | N) != 0 {
            break;
        }
        i = n;
    }
    i
}

/// The kind of a character's class bits: L, N, WS or 0 ("other").
#[inline]
fn kind(b: u8) -> u8 {
    if b & L != 0 {
        L
    } else {
        b & (N | WS)
    }
}

/// End of the piece that starts at `i` (`i < s.len()`).  Inlined into the findall loop
/// (as a call, its entry and exit were a large share of the matcher's instructions, as for
/// the GPT-4o matcher).
#[inline(always)]
pub fn next_piece(s: &str, i: usize) -> usize {
    let Some((b, c, n)) = class_at(s, i) else {
        return s.len();
    };
    if c == '\'' {
        if let Some(e) = contraction(s, i) {
            return e;
        }
    }
    let k = kind(b);
    if k != WS {
        return kind_run(s, n, k);
    }
    if c == ' ' {
        if let Some((b2, _, n2)) = class_at(s, n) {
            let k2 = kind(b2);
            if k2 != WS {
                return kind_run(s, n2, k2);
            }
        }
    }
    // a whitespace run: \s+(?!\S), then \s+
    let mut j = n;
    let mut last_start = i;
    while let Some((b, _, n)) = class_at(s, j) {
        if b & WS == 0 {
            break;
        }
        last_start = j;
        j = n;
    }
    if j == s.len() || last_start == i {
        j
    } else {
        last_start
    }
}

/// Call `emit` with every piece of `s`, in order.
pub fn for_each_piece<'a>(s: &'a str, emit: impl FnMut(&'a str)) {
    super::gpt4o::pieces_by(s, next_piece, emit)
}

#[cfg(test)]
mod tests {
    use super::super::fuzz;
    use super::*;

    fn pieces(s: &str) -> Vec<&str> {
        let mut v = Vec::new();
        for_each_piece(s, |x| v.push(x));
        v
    }

    #[test]
    fn examples() {
        assert_eq!(pieces("Hello world!"), ["Hello", " world", "!"]);
        assert_eq!(pieces("I'm 12345 ok'S"), ["I", "'m", " 12345", " ok", "'", "S"]);
        assert_eq!(pieces("\n\nabc  "), ["\n", "\n", "abc", "  "]);
        assert_eq!(pieces("x\u{a0}y 1"), ["x", "\u{a0}", "y", " 1"]);
        assert_eq!(pieces("it's"), ["it", "'s"]);
    }

    #[test]
    fn equals_fancy_regex_on_random_text() {
        for (pattern, seed) in [
            (GPT2, 0x5EED_0002),
            (MINBPE_GPT2, 0x5EED_0B9E),
            (R50K, 0x5EED_050C),
        ] {
            fuzz::against_fancy_regex(pattern, pieces, seed);
        }
    }
}
