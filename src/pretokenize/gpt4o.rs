//! Hand-written matchers for the `GPT4O` and `SCRIPT_SPECIFIC_GPT4O` patterns (SPEC 1.1).
//!
//! They return exactly the pieces of Python `regex`'s `findall`, backtracking included,
//! without running a regex engine.  Each alternative is a function from a start position to
//! the end of its match; the findall loop tries them in the pattern's order.
//!
//! Where the regex backtracks, the result has a closed form:
//! * `U*W+` (U = `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`, W = `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`): `U*` takes
//!   the longest U-run; if a W character follows, `W+` takes the W-run after it; otherwise
//!   `U*` gives back characters until the last W character inside the run, which `W+` takes.
//! * `\s*[\r\n]+`: ends just after the last `\r`/`\n` of the whitespace run.
//! * `\s+(?!\S)`: the whole run at the end of the text, else the run minus its last character.

use super::classes::{bits, ASCII, L, LL, LOWERISH, LU, M, N, UPPERISH, WS};

/// The pattern a matcher implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    Gpt4o,
    ScriptSpecific,
}

#[inline]
pub(super) fn next_char(s: &str, i: usize) -> Option<(char, usize)> {
    let b = *s.as_bytes().get(i)?;
    if b < 0x80 {
        return Some((b as char, i + 1));
    }
    let c = s[i..].chars().next()?;
    Some((c, i + c.len_utf8()))
}

#[inline]
pub(super) fn class_at(s: &str, i: usize) -> Option<(u8, char, usize)> {
    next_char(s, i).map(|(c, n)| (bits(c), c, n))
}

/// End of the run of ASCII bytes from `i` within `lo..=hi` after OR-ing `fold` into them
/// (`0x20` folds capitals to small letters), eight bytes at a time: a word's end is then
/// found with one or two tests rather than a branch per letter whose exit is mispredicted.
/// The run stops at any non-ASCII byte (the caller decides what follows).
#[inline(always)]
fn ascii_run(b: &[u8], mut i: usize, fold: u8, lo: u8, hi: u8) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    loop {
        let x = match b.get(i..i + 8) {
            Some(eight) => u64::from_le_bytes(eight.try_into().unwrap()),
            None => crate::key::load_le(b.get(i..).unwrap_or(&[])), // zeros past the end stop it
        };
        // per byte, with its top bit cleared so that no sum carries into the next byte:
        // top bit of y + (0x80 - lo) is set when y >= lo, of y + (0x7F - hi) when y > hi
        let y = (x & !HIGH) | (ONES * fold as u64);
        let inside = (y + ONES * (0x80 - lo) as u64) & !(y + ONES * (0x7F - hi) as u64) & !x & HIGH;
        if inside == HIGH {
            i += 8;
            continue;
        }
        return i + ((!inside & HIGH).trailing_zeros() / 8) as usize;
    }
}

/// End of the run of characters whose class intersects `mask`, from `i`.
#[inline]
pub(super) fn run(s: &str, mut i: usize, mask: u8) -> usize {
    let bytes = s.as_bytes();
    // the ASCII members of the letter classes the patterns use are letter ranges
    i = match mask {
        L => ascii_run(bytes, i, 0x20, b'a', b'z'),
        LOWERISH => ascii_run(bytes, i, 0, b'a', b'z'),
        UPPERISH => ascii_run(bytes, i, 0, b'A', b'Z'),
        _ => i,
    };
    while let Some(&b) = bytes.get(i) {
        if b >= 0x80 {
            break; // the rest by characters
        }
        if ASCII[b as usize] & mask == 0 {
            return i;
        }
        i += 1;
    }
    while let Some((b, _, n)) = class_at(s, i) {
        if b & mask == 0 {
            break;
        }
        i = n;
    }
    i
}

/// `[^\r\n\p{L}\p{N}]`: the optional one-character prefix of the word alternatives.
#[inline]
fn prefix_end(s: &str, i: usize) -> Option<usize> {
    let (b, c, n) = class_at(s, i)?;
    (c != '\r' && c != '\n' && b & (L | N) == 0).then_some(n)
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` after a word: its end (or `i` if absent).  Under the
/// `regex` module's simple case folding, `s` also matches U+017F LATIN SMALL LETTER LONG S.
pub(super) fn contraction(s: &str, i: usize) -> usize {
    let bytes = s.as_bytes();
    if bytes.get(i) != Some(&b'\'') {
        return i;
    }
    let Some((c1, n1)) = next_char(s, i + 1) else {
        return i;
    };
    match c1 {
        's' | 'S' | 'ſ' | 't' | 'T' | 'm' | 'M' | 'd' | 'D' => n1,
        'r' | 'R' | 'v' | 'V' => match bytes.get(n1) {
            Some(b'e') | Some(b'E') => n1 + 1,
            _ => i,
        },
        'l' | 'L' => match bytes.get(n1) {
            Some(b'l') | Some(b'L') => n1 + 1,
            _ => i,
        },
        _ => i,
    }
}

/// `U*W+` from `i` (see the module notes for the backtracking).
fn upper_then_lower(s: &str, i: usize) -> Option<usize> {
    let mut j = i;
    let mut after_last_w = None;
    while let Some((b, _, n)) = class_at(s, j) {
        if b & UPPERISH == 0 {
            break;
        }
        if b & LOWERISH != 0 {
            after_last_w = Some(n);
        }
        j = n;
    }
    match class_at(s, j) {
        Some((b, _, _)) if b & LOWERISH != 0 => Some(run(s, j, LOWERISH)),
        _ => after_last_w,
    }
}

/// `U+W*` from `i`.
fn upper_run_then_lower(s: &str, i: usize) -> Option<usize> {
    let j = run(s, i, UPPERISH);
    (j > i).then(|| run(s, j, LOWERISH))
}

/// `P?X(?i:contractions)?` for a word body `X`: try with the prefix, then without.
fn word(s: &str, i: usize, body: fn(&str, usize) -> Option<usize>) -> Option<usize> {
    if let Some(p) = prefix_end(s, i) {
        if let Some(e) = body(s, p) {
            return Some(contraction(s, e));
        }
    }
    body(s, i).map(|e| contraction(s, e))
}

/// `\p{N}{1,3}`.
pub(super) fn numbers(s: &str, i: usize) -> Option<usize> {
    let mut j = i;
    for _ in 0..3 {
        match class_at(s, j) {
            Some((b, _, n)) if b & N != 0 => j = n,
            _ => break,
        }
    }
    (j > i).then_some(j)
}

/// ` ?[^\s\p{L}\p{N}]+[\r\n/]*`.
fn punctuation(s: &str, i: usize) -> Option<usize> {
    let other = |i: usize| match class_at(s, i) {
        Some((b, _, n)) if b & (WS | L | N) == 0 => Some(n),
        _ => None,
    };
    let start = if s.as_bytes().get(i) == Some(&b' ') && other(i + 1).is_some() {
        i + 1
    } else {
        i
    };
    let mut j = other(start)?;
    while let Some(n) = other(j) {
        j = n;
    }
    while matches!(s.as_bytes().get(j), Some(b'\r' | b'\n' | b'/')) {
        j += 1;
    }
    Some(j)
}

/// The three whitespace alternatives `\s*[\r\n]+ | \s+(?!\S) | \s+`, tried in order.
pub(super) fn whitespace(s: &str, i: usize) -> Option<usize> {
    let mut j = i;
    let mut last_start = i; // start of the run's last character
    let mut after_newline = None; // just after the run's last \r or \n
    while let Some((b, c, n)) = class_at(s, j) {
        if b & WS == 0 {
            break;
        }
        if c == '\r' || c == '\n' {
            after_newline = Some(n);
        }
        last_start = j;
        j = n;
    }
    if j == i {
        return None;
    }
    if let Some(e) = after_newline {
        return Some(e); // \s*[\r\n]+
    }
    if j == s.len() || last_start > i {
        // \s+(?!\S): all of it at the end of the text, else all but the last character
        return Some(if j == s.len() { j } else { last_start });
    }
    Some(j) // \s+
}

/// ` ?\p{L}\p{M}*`: one letter with its marks (the script-specific word alternative).
fn letter(s: &str, i: usize) -> Option<usize> {
    let is_letter = |i: usize| match class_at(s, i) {
        Some((b, _, n)) if b & L != 0 => Some(n),
        _ => None,
    };
    let n = if s.as_bytes().get(i) == Some(&b' ') {
        is_letter(i + 1).or_else(|| is_letter(i))?
    } else {
        is_letter(i)?
    };
    Some(run(s, n, M))
}

/// Classes of bytes for [`ascii_piece`]: ASCII letters, digits, line breaks, other
/// whitespace, everything else ASCII, and bytes of non-ASCII characters.
const UP: u8 = 1;
const LOW: u8 = 2;
const DIGIT: u8 = 4;
const BREAK: u8 = 8;
const SPACE: u8 = 16;
const OTHER: u8 = 32;
const WIDE: u8 = 64;
/// What [`class_of`] answers past the end of the text.
const END: u8 = 0;

const BYTE_CLASS: [u8; 256] = {
    let mut t = [WIDE; 256];
    let mut b = 0;
    while b < 128 {
        let c = ASCII[b];
        t[b] = if c & LU != 0 {
            UP
        } else if c & LL != 0 {
            LOW
        } else if c & N != 0 {
            DIGIT
        } else if b == b'\r' as usize || b == b'\n' as usize {
            BREAK
        } else if c & WS != 0 {
            SPACE
        } else {
            OTHER
        };
        b += 1;
    }
    t
};

#[inline(always)]
fn class_of(s: &[u8], i: usize) -> u8 {
    s.get(i).map_or(END, |&b| BYTE_CLASS[b as usize])
}

/// The GPT-4o piece at `i` when ASCII characters alone decide it, else `None` (the
/// character-by-character path then decides).  Most pieces of most text are settled here
/// with a byte table.  For ASCII letters the two word alternatives agree: `U*W+` and `U+W*`
/// both end after the run of capitals and the run of small letters that follows it (with
/// or without the one-character prefix), then the contraction.  Any run that stops at a
/// non-ASCII byte could go on (a non-ASCII letter, mark, digit or symbol), so the answer is
/// `None` there.
#[inline(always)]
fn ascii_piece(s: &str, i: usize) -> Option<usize> {
    let b = s.as_bytes();
    match class_of(b, i) {
        UP | LOW => ascii_word(s, i),
        DIGIT => {
            let mut j = i + 1;
            while j < i + 3 && class_of(b, j) == DIGIT {
                j += 1;
            }
            (j == i + 3 || class_of(b, j) != WIDE).then_some(j)
        }
        // a one-character prefix: a word follows, or else punctuation or whitespace
        c @ (OTHER | SPACE) => match class_of(b, i + 1) {
            UP | LOW => ascii_word(s, i + 1),
            WIDE => None,
            OTHER if b[i] == b' ' => ascii_punctuation(b, i + 1),
            _ if c == OTHER => ascii_punctuation(b, i),
            _ => whitespace(s, i),
        },
        BREAK => whitespace(s, i),
        _ => None,
    }
}

/// [`ascii_piece`]'s word from its first letter at `j`: capitals, small letters, the
/// contraction.
#[inline(always)]
fn ascii_word(s: &str, j: usize) -> Option<usize> {
    let b = s.as_bytes();
    let j = ascii_run(b, ascii_run(b, j, 0, b'A', b'Z'), 0, b'a', b'z');
    if class_of(b, j) == WIDE {
        return None;
    }
    // a contraction starts with an apostrophe; most words end without one
    Some(if b.get(j) == Some(&b'\'') {
        contraction(s, j)
    } else {
        j
    })
}

/// [`ascii_piece`]'s ` ?[^\s\p{L}\p{N}]+[\r\n/]*` from its first "other" character at `j`.
#[inline(always)]
fn ascii_punctuation(b: &[u8], mut j: usize) -> Option<usize> {
    while class_of(b, j) == OTHER {
        j += 1;
    }
    if class_of(b, j) == WIDE {
        return None;
    }
    while matches!(b.get(j), Some(b'\r' | b'\n' | b'/')) {
        j += 1;
    }
    Some(j)
}

/// End of the piece that starts at `i` (`i < s.len()`).
pub fn next_piece(pattern: Builtin, s: &str, i: usize) -> usize {
    if pattern == Builtin::Gpt4o {
        if let Some(e) = ascii_piece(s, i) {
            return e;
        }
    }
    piece_by_chars(pattern, s, i)
}

/// [`next_piece`] character by character, every alternative in the pattern's order.
#[inline(never)]
fn piece_by_chars(pattern: Builtin, s: &str, i: usize) -> usize {
    let end = match pattern {
        Builtin::Gpt4o => word(s, i, upper_then_lower)
            .or_else(|| word(s, i, upper_run_then_lower))
            .or_else(|| numbers(s, i))
            .or_else(|| punctuation(s, i))
            .or_else(|| whitespace(s, i)),
        Builtin::ScriptSpecific => letter(s, i)
            .or_else(|| numbers(s, i))
            .or_else(|| punctuation(s, i))
            .or_else(|| whitespace(s, i)),
    };
    // Every character starts some alternative; the fallback only guards against a gap.
    end.unwrap_or_else(|| next_char(s, i).map_or(s.len(), |(_, n)| n))
}

/// Call `emit` with every piece of `s`, in order.
///
/// The byte-table path is inlined into the loop, the character path stays a call.  As calls
/// (`next_piece`, then `ascii_piece`'s word), the entries and exits of the two functions
/// were over a third of the matcher's instructions (callgrind, 1 MB of Gutenberg).
pub fn for_each_piece<'a>(pattern: Builtin, s: &'a str, emit: impl FnMut(&'a str)) {
    match pattern {
        Builtin::Gpt4o => super::blocks::for_each_piece(
            super::blocks::Flavour::Gpt4o,
            s,
            |s, i| match ascii_piece(s, i) {
                Some(e) => e,
                None => piece_by_chars(pattern, s, i),
            },
            emit,
        ),
        Builtin::ScriptSpecific => pieces_by(s, |s, i| piece_by_chars(pattern, s, i), emit),
    }
}

/// The findall loop every hand-written matcher shares: `next(s, i)` is the end of the piece
/// that starts at `i` (always past `i`).
#[inline]
pub(super) fn pieces_by<'a>(s: &'a str, next: impl Fn(&str, usize) -> usize, mut emit: impl FnMut(&'a str)) {
    let mut i = 0;
    while i < s.len() {
        let e = next(s, i);
        emit(&s[i..e]);
        i = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(p: Builtin, s: &str) -> Vec<&str> {
        let mut v = Vec::new();
        for_each_piece(p, s, |x| v.push(x));
        v
    }

    #[test]
    fn gpt4o_examples() {
        let g = Builtin::Gpt4o;
        assert_eq!(pieces(g, "Hello world!"), ["Hello", " world", "!"]);
        assert_eq!(
            pieces(g, "I'm 12345 ok\r\n\r\n  go"),
            ["I'm", " ", "123", "45", " ok", "\r\n\r\n", " ", " go"]
        );
        assert_eq!(pieces(g, "HTTPServer isn't"), ["HTTPServer", " isn't"]);
        assert_eq!(pieces(g, "camelCase  "), ["camel", "Case", "  "]);
        assert_eq!(pieces(g, "x  \n y"), ["x", "  \n", " y"]);
        assert_eq!(pieces(g, "...\n//x"), ["...\n//", "x"]);
        assert_eq!(pieces(g, "ABC"), ["ABC"]);
        assert_eq!(pieces(g, "he'LL"), ["he'LL"]);
    }

    /// The byte-table path against the character path, on every string of up to 5
    /// characters from an alphabet with a member of each class that decides a piece.
    #[test]
    fn the_ascii_path_equals_the_character_path() {
        let alphabet = [
            "a", "Z", " ", "\t", "\n", "\r", "7", ".", "/", "'", "s", "\u{b}", "é", "É", "\u{3000}", "ſ",
            "\u{663}", "\u{301}", "\u{a0}", "«",
        ];
        let k = alphabet.len();
        let mut text = String::new();
        for len in 1..=5u32 {
            for mut code in 0..k.pow(len) {
                text.clear();
                for _ in 0..len {
                    text.push_str(alphabet[code % k]);
                    code /= k;
                }
                let mut i = 0;
                while i < text.len() {
                    let slow = piece_by_chars(Builtin::Gpt4o, &text, i);
                    if let Some(fast) = ascii_piece(&text, i) {
                        assert_eq!(fast, slow, "{text:?} at {i}");
                    }
                    i = slow;
                }
            }
        }
    }

    #[test]
    fn the_eight_byte_run_equals_a_byte_loop() {
        let alphabet = b"aAzZ@[`{09 \x7f\x80\xc3\xff";
        let mut x = 0x1234_5678_9ABC_DEF1u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            let b: Vec<u8> = (0..len)
                .map(|k| alphabet[(x >> (k * 2 % 60)) as usize % alphabet.len()])
                .collect();
            for (fold, lo, hi) in [(0x20, b'a', b'z'), (0, b'a', b'z'), (0, b'A', b'Z')] {
                for i in 0..=len {
                    let mut want = i;
                    while want < len && b[want] < 0x80 && (lo..=hi).contains(&(b[want] | fold)) {
                        want += 1;
                    }
                    assert_eq!(ascii_run(&b, i, fold, lo, hi), want, "{b:?} from {i}");
                }
            }
        }
    }

    #[test]
    fn script_specific_examples() {
        let s = Builtin::ScriptSpecific;
        assert_eq!(pieces(s, " 你好"), [" 你", "好"]);
        assert_eq!(pieces(s, "ที่นี่"), ["ที่", "นี่"]);
        assert_eq!(pieces(s, "12 3"), ["12", " ", "3"]);
    }
}
