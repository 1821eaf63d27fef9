//! Pieces of ASCII text found 64 bytes at a time with bit masks, for the GPT-4o pattern and
//! the two spellings of the GPT-4 pattern (cl100k, minbpe).
//!
//! The piece-by-piece matchers (`gpt4o.rs`, `cl100k.rs`) spend about 130 instructions per
//! piece (callgrind, 1 MB of Gutenberg: 28 of the 72 million instructions of a 32K BPE
//! model's encoding).  Here a window of up to 64 bytes that starts where a piece starts is
//! classified with vector compares into one bit mask per class (capitals, small letters,
//! digits, line breaks, other whitespace, everything else, non-ASCII), and the positions
//! where pieces start are computed from the masks with shifts and ANDs; the pieces are then
//! cut at the set bits.
//!
//! Why the starts are a function of the masks.  A findall from a position where a piece
//! starts depends only on the text from there on (the patterns look behind nowhere), so the
//! window's first byte is a start and the rest follows from the text after it.  Every rule
//! below looks at most [`AHEAD`] bytes ahead, except three, which are settled by a loop over
//! their (rare) positions: a contraction (the bytes after an apostrophe), a run of spaces
//! after a line break (is the run followed by another break?), and a chain of GPT-4o
//! contractions (`it's's's`, left to the piece-by-piece matcher).  So every start up to bit
//! [`CERTAIN`] of a window is certain, and the pieces between certain starts are emitted; the
//! next window starts at the last of them (and when a window settles nothing, one piece goes
//! through the piece-by-piece matcher).  Non-ASCII characters are that matcher's too (one
//! can be a letter, a digit, a mark or whitespace), except the punctuation of U+2010..U+2027
//! ([`Masks::dash`]): any other one ends what is certain [`AHEAD`] + 1 bytes before it.
//!
//! The rules, for runs of each class (a run is a maximal stretch of one class; S is
//! whitespace other than `\r`/`\n`, B is `\r`/`\n`, O is everything else in ASCII):
//! * Letters: a run starts a piece, unless the byte before it is its one-character prefix
//!   (`[^\r\n\p{L}\p{N}]?`), which then starts it instead.  The prefix is an S byte, or an O
//!   run of one byte that a space before it has not taken (` ?[^\s\p{L}\p{N}]+` takes it).
//!   GPT-4o also starts a piece at a capital after a small letter (`U*W+` and `U+W*` both end
//!   there, see `gpt4o.rs`).
//! * Contractions: GPT-4o attaches `'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d` (any case) to
//!   the letters before them; GPT-4 makes them a piece of their own where an O run starts
//!   with them (its first alternative).  So the contraction's letters start nothing (nor,
//!   for GPT-4o, its apostrophe), and the byte after them starts a piece.
//! * Digits: a run starts a piece every three digits from its start.
//! * O runs: a run starts a piece unless a space before it takes it; the run's piece goes on
//!   over the line breaks right after it (and, for GPT-4o, slashes among them: `[\r\n/]*`),
//!   and the byte after those starts a piece.
//! * Whitespace runs (from their first byte that no O run took): the run's first byte starts
//!   a piece; if it has line breaks, the first piece ends after the last of them
//!   (`\s*[\r\n]+`), so the S run after the last break starts a piece; an S byte right before
//!   a non-whitespace byte starts a piece (`\s+(?!\S)` leaves it for what follows).  At the
//!   end of the text, cl100k's `\s++$` takes the rest of a run whole.

/// Which pattern's pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    Gpt4o,
    Cl100k,
    Minbpe,
}

/// Bytes in a window.
const WIDTH: usize = 64;
/// How many bytes after a position can decide whether a piece starts there (a three-byte
/// prefix's letter, see [`Masks::dash`]).
const AHEAD: usize = 3;
/// The last bit of a window whose start is certain when the text goes on past the window.
const CERTAIN: usize = WIDTH - 1 - AHEAD;

/// One bit per byte of a window, per class.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Masks {
    upper: u64,
    lower: u64,
    digit: u64,
    /// `\r`, `\n`
    newline: u64,
    /// `\t`, `\v`, `\f`, ` `
    space: u64,
    /// ` ` alone
    blank: u64,
    slash: u64,
    apostrophe: u64,
    /// bytes of non-ASCII characters
    wide: u64,
    /// first bytes of U+2010..=U+2027 (dashes, quotation marks, daggers, bullets, ellipsis:
    /// `E2 80 90..A7`), all punctuation, so O characters that need no character path; they
    /// are most of the non-ASCII characters of English text
    dash: u64,
    /// bytes of the text (a short window is padded with zeros)
    valid: u64,
}

/// [`Masks`] of a window, byte by byte (the reference for the vector version, and the
/// version for other machines).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn classify_bytes(w: &[u8], len: usize) -> Masks {
    let mut m = Masks::default();
    for (k, &b) in w[..len].iter().enumerate() {
        let bit = 1u64 << k;
        m.valid |= bit;
        match b {
            b'A'..=b'Z' => m.upper |= bit,
            b'a'..=b'z' => m.lower |= bit,
            b'0'..=b'9' => m.digit |= bit,
            b'\r' | b'\n' => m.newline |= bit,
            b'\t' | 0x0B | 0x0C | b' ' => m.space |= bit,
            0x80.. => m.wide |= bit,
            _ => {}
        }
        let dash = b == 0xE2
            && w.get(k + 1) == Some(&0x80)
            && w.get(k + 2).is_some_and(|c| (0x90..=0xA7).contains(c));
        m.dash |= ((dash && k + 2 < len) as u64) << k;
        m.blank |= ((b == b' ') as u64) << k;
        m.slash |= ((b == b'/') as u64) << k;
        m.apostrophe |= ((b == b'\'') as u64) << k;
    }
    m
}

/// [`Masks`] of a window, with the widest vector compares this machine has.  AVX2 takes 32
/// bytes per compare, SSE2 (which every x86-64 has) 16; with SSE2, the masks' compares and
/// their collection into 64-bit words were about 170 instructions per window.
#[cfg(target_arch = "x86_64")]
fn classify(w: &[u8], len: usize) -> Masks {
    assert!(w.len() >= WIDTH + 2);
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, and `w` has the 66 bytes the loads read
        unsafe { classify_avx2(w, len) }
    } else {
        // SAFETY: as above, with SSE2
        unsafe { classify_sse2(w, len) }
    }
}

/// The masks that are not compares of single bytes: what the padding is, and which
/// dashes are whole in the window.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn finish(mut m: Masks, len: usize) -> Masks {
    m.valid = if len == WIDTH { u64::MAX } else { (1u64 << len) - 1 };
    m.wide &= m.valid;
    // a dash cut by the window's end is not one (the loads saw the two bytes after it)
    m.dash &= m.valid >> 2;
    m
}

/// One vector's bits of every mask, shifted to `at`.  The dash test reads the vectors one
/// and two bytes on (`v1`, `v2`).
#[cfg(target_arch = "x86_64")]
macro_rules! collect {
    ($m:ident, $at:expr, $v:expr, $v1:expr, $v2:expr,
     $add:ident, $lt:ident, $eq:ident, $or:ident, $andnot:ident, $and:ident, $set1:ident, $bits:ident) => {{
        let (v, v1, v2, at) = ($v, $v1, $v2, $at);
        // (b + (0x80 - lo)) as a signed byte is below -128 + n exactly when lo <= b < lo + n
        let range = |v, lo: u8, n: u8| {
            $lt(
                $add(v, $set1(0x80u8.wrapping_sub(lo) as i8)),
                $set1(0x80u8.wrapping_add(n) as i8),
            )
        };
        let eq = |v, b: u8| $eq(v, $set1(b as i8));
        $m.upper |= $bits(range(v, b'A', 26)) << at;
        $m.lower |= $bits(range(v, b'a', 26)) << at;
        $m.digit |= $bits(range(v, b'0', 10)) << at;
        let newline = $or(eq(v, b'\n'), eq(v, b'\r'));
        $m.newline |= $bits(newline) << at;
        let blank = eq(v, b' ');
        // \t \n \v \f \r are 9..=13
        $m.space |= $bits($or(blank, $andnot(newline, range(v, 9, 5)))) << at;
        $m.blank |= $bits(blank) << at;
        $m.slash |= $bits(eq(v, b'/')) << at;
        $m.apostrophe |= $bits(eq(v, b'\'')) << at;
        $m.wide |= $bits(v) << at;
        $m.dash |= $bits($and($and(eq(v, 0xE2), eq(v1, 0x80)), range(v2, 0x90, 0x18))) << at;
    }};
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn classify_avx2(w: &[u8], len: usize) -> Masks {
    use core::arch::x86_64::*;
    let mut m = Masks::default();
    let lt = |a, b| _mm256_cmpgt_epi8(b, a);
    let bits = |v| _mm256_movemask_epi8(v) as u32 as u64;
    for at in [0, 32] {
        let p = w.as_ptr().add(at);
        let load = |k: usize| _mm256_loadu_si256(p.add(k) as *const __m256i);
        collect!(
            m,
            at,
            load(0),
            load(1),
            load(2),
            _mm256_add_epi8,
            lt,
            _mm256_cmpeq_epi8,
            _mm256_or_si256,
            _mm256_andnot_si256,
            _mm256_and_si256,
            _mm256_set1_epi8,
            bits
        );
    }
    finish(m, len)
}

#[cfg(target_arch = "x86_64")]
unsafe fn classify_sse2(w: &[u8], len: usize) -> Masks {
    use core::arch::x86_64::*;
    let mut m = Masks::default();
    let bits = |v| _mm_movemask_epi8(v) as u16 as u64;
    for at in [0, 16, 32, 48] {
        let p = w.as_ptr().add(at);
        let load = |k: usize| _mm_loadu_si128(p.add(k) as *const __m128i);
        collect!(
            m,
            at,
            load(0),
            load(1),
            load(2),
            _mm_add_epi8,
            _mm_cmplt_epi8,
            _mm_cmpeq_epi8,
            _mm_or_si128,
            _mm_andnot_si128,
            _mm_and_si128,
            _mm_set1_epi8,
            bits
        );
    }
    finish(m, len)
}

#[cfg(not(target_arch = "x86_64"))]
fn classify(w: &[u8], len: usize) -> Masks {
    assert!(w.len() >= WIDTH + 2);
    classify_bytes(w, len)
}

/// The bits of `m` in order, lowest first.
#[inline(always)]
fn bits_of(mut m: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            k
        })
    })
}

/// Bits `0..=k`.
#[inline(always)]
fn through(k: usize) -> u64 {
    if k >= 63 {
        u64::MAX
    } else {
        (2u64 << k) - 1
    }
}

/// The end of the contraction whose apostrophe is at `q` of `w`, if one is there (`'s`,
/// `'t`, `'m`, `'d`, `'re`, `'ve`, `'ll`, any case; the long s is not ASCII, so a window
/// never reaches it).
#[inline]
fn contraction_end(w: &[u8; WIDTH + 2], q: usize) -> Option<usize> {
    match w[q + 1] | 0x20 {
        b's' | b't' | b'm' | b'd' => Some(q + 2),
        b'r' | b'v' if w[q + 2] | 0x20 == b'e' => Some(q + 3),
        b'l' if w[q + 2] | 0x20 == b'l' => Some(q + 3),
        _ => None,
    }
}

/// Where pieces start in the window `w` (its first `len` bytes are text, the rest zeros; the
/// text ends with the window when `at_end`), and the last bit that is certain.  Bit 0 is the
/// window's first byte, which starts a piece.  `None`: nothing after bit 0 is certain.
#[inline(always)]
fn starts(flavour: Flavour, w: &[u8; WIDTH + 2], len: usize, at_end: bool) -> (u64, usize) {
    let m = classify(w, len);
    let letter = m.upper | m.lower;
    let ws = m.space | m.newline;
    // the bytes of U+2010..=U+2027, and those of other non-ASCII characters
    let dashes = m.dash | m.dash << 1 | m.dash << 2;
    let unknown = m.wide & !dashes;
    let mut last = if at_end && unknown == 0 {
        WIDTH - 1
    } else {
        CERTAIN
    };
    if unknown != 0 {
        match (unknown.trailing_zeros() as usize).checked_sub(AHEAD + 1) {
            Some(k) => last = last.min(k),
            None => return (1, 0),
        }
    }
    let other_all = m.valid & !(letter | m.digit | ws | unknown);

    // line breaks (and GPT-4o's slashes) that an O run's piece takes: from a break right
    // after an O byte, over the breaks (and slashes) that follow
    let trailing = if flavour == Flavour::Gpt4o {
        m.newline | m.slash
    } else {
        m.newline
    };
    let mut taken = m.newline & (other_all << 1);
    if taken != 0 {
        loop {
            let more = taken | ((taken << 1) & trailing);
            if more == taken {
                break;
            }
            taken = more;
        }
    }
    let other = other_all & !taken;
    let o_run = other & !(other << 1);
    // O runs that the space before them takes (` ?[^\s\p{L}\p{N}]+`)
    let o_taken = o_run & (m.blank << 1);

    // contractions: their apostrophes, their letters, the bytes after them
    let candidates = match flavour {
        Flavour::Gpt4o => m.apostrophe & (letter << 1),
        _ => m.apostrophe & o_run & !o_taken,
    };
    let (mut c_apostrophe, mut c_inside, mut c_after) = (0u64, 0u64, 0u64);
    for q in bits_of(candidates & through(WIDTH - 2)) {
        if let Some(e) = contraction_end(w, q) {
            if flavour == Flavour::Gpt4o && c_after >> q & 1 != 0 {
                // `it's's`: whether the second one attaches depends on the first (q >= 1:
                // a letter is before it)
                last = last.min(q - 1);
                break;
            }
            c_apostrophe |= 1 << q;
            c_inside |= through(e - 1) & !through(q);
            if e < WIDTH {
                c_after |= 1 << e;
            }
        }
    }

    // letters, with their one-character prefixes: an S byte, or an O run (that no space
    // took) of one character, which a letter right after it makes sure of
    let l_run = letter & !(letter << 1);
    let lone_o = o_run & !o_taken & !c_apostrophe;
    let prefix1 = (l_run >> 1) & (m.space | (lone_o & !m.dash));
    let prefix3 = (l_run >> 3) & lone_o & m.dash;
    let mut s = (l_run & !(prefix1 << 1) & !(prefix3 << 3)) | prefix1 | prefix3;
    if flavour == Flavour::Gpt4o {
        s |= m.upper & (m.lower << 1);
    }

    // digits, three at a time
    let d_run = m.digit & !(m.digit << 1);
    s |= d_run;
    let three = m.digit & (m.digit << 1) & (m.digit << 2);
    let mut group = d_run;
    while group != 0 {
        group = (group << 3) & three;
        s |= group;
    }

    // O runs, and whatever follows the breaks they take
    s |= o_run & !o_taken;
    s |= (taken << 1) & !taken;

    // whitespace: the run's first byte, the S run after its last break, the S byte before
    // a non-whitespace byte
    s |= ws & !(ws << 1) & !taken;
    s |= m.space & ((m.valid & !ws) >> 1);
    for p in bits_of(m.space & (m.newline << 1) & through(last)) {
        // (p >= 1: a break is before it)
        let r = p + (!m.space >> p).trailing_zeros() as usize;
        let follows = if r < len {
            match w[r] {
                b'\r' | b'\n' => false,
                0x80.. if m.dash >> r & 1 == 0 => {
                    // an S run that a non-ASCII character ends: it may go on as whitespace
                    last = last.min(p - 1);
                    break;
                }
                _ => true,
            }
        } else if at_end {
            // the end of the text: `\s+(?!\S)` takes the rest, cl100k's `\s++$` all the run
            flavour != Flavour::Cl100k
        } else {
            last = last.min(p - 1);
            break;
        };
        if follows {
            s |= 1 << p;
        }
    }

    // GPT-4o's contraction goes on the word before it; GPT-4's starts a piece of its own
    let inside = if flavour == Flavour::Gpt4o {
        c_apostrophe | c_inside
    } else {
        c_inside
    };
    s = (s & !inside) | c_after;
    ((s | 1) & m.valid, last)
}

/// Call `emit` with every piece of `s`, in order: windows of ASCII through [`starts`], the
/// rest (and any piece a window cannot settle) through `piece`, the piece-by-piece matcher.
#[inline(always)]
pub fn for_each_piece<'a>(
    flavour: Flavour,
    s: &'a str,
    piece: impl Fn(&str, usize) -> usize,
    mut emit: impl FnMut(&'a str),
) {
    let b = s.as_bytes();
    let n = b.len();
    let mut i = 0;
    let mut w = [0u8; WIDTH + 2];
    while i < n {
        if b[i] < 0x80 {
            let len = (n - i).min(WIDTH);
            let at_end = i + len == n;
            let window: &[u8; WIDTH + 2] = match b.get(i..i + WIDTH + 2) {
                Some(bytes) => bytes.try_into().unwrap(),
                None => {
                    // near the end of the text: a copy padded with zeros
                    w.fill(0);
                    w[..n - i].copy_from_slice(&b[i..]);
                    &w
                }
            };
            let (found, last) = starts(flavour, window, len, at_end);
            let mut rest = found & through(last) & !1;
            let mut from = 0;
            while rest != 0 {
                let to = rest.trailing_zeros() as usize;
                // SAFETY: `i + from` and `i + to` are positions of ASCII bytes or of the
                // first bytes of dashes (`starts` certifies nothing at or after the bytes of
                // other non-ASCII characters, and puts no start inside a dash), so both are
                // character boundaries of `s`
                emit(unsafe { s.get_unchecked(i + from..i + to) });
                from = to;
                rest &= rest - 1;
            }
            if at_end && last == WIDTH - 1 {
                // SAFETY: as above; `n` is the end of `s`
                emit(unsafe { s.get_unchecked(i + from..n) });
                return;
            }
            if from > 0 {
                i += from;
                continue;
            }
        }
        let e = piece(s, i);
        emit(&s[i..e]);
        i = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::{cl100k, gpt4o};

    /// The three flavours' piece-by-piece matchers, which the pytest and fuzz tests check
    /// against the regex engines.
    fn one_by_one(flavour: Flavour, s: &str) -> Vec<&str> {
        let mut v = Vec::new();
        match flavour {
            Flavour::Gpt4o => gpt4o::pieces_by(
                s,
                |s, i| gpt4o::next_piece(gpt4o::Builtin::Gpt4o, s, i),
                |p| v.push(p),
            ),
            Flavour::Cl100k => gpt4o::pieces_by(
                s,
                |s, i| cl100k::next_piece(cl100k::Gpt4::Cl100k, s, i),
                |p| v.push(p),
            ),
            Flavour::Minbpe => gpt4o::pieces_by(
                s,
                |s, i| cl100k::next_piece(cl100k::Gpt4::Minbpe, s, i),
                |p| v.push(p),
            ),
        }
        v
    }

    fn by_windows(flavour: Flavour, s: &str) -> Vec<&str> {
        let mut v = Vec::new();
        let piece = |s: &str, i: usize| match flavour {
            Flavour::Gpt4o => gpt4o::next_piece(gpt4o::Builtin::Gpt4o, s, i),
            Flavour::Cl100k => cl100k::next_piece(cl100k::Gpt4::Cl100k, s, i),
            Flavour::Minbpe => cl100k::next_piece(cl100k::Gpt4::Minbpe, s, i),
        };
        for_each_piece(flavour, s, piece, |p| v.push(p));
        v
    }

    const FLAVOURS: [Flavour; 3] = [Flavour::Gpt4o, Flavour::Cl100k, Flavour::Minbpe];

    /// Every string of up to 4 characters from an alphabet with a member of every class the
    /// rules tell apart (and of the contractions' letters), alone and behind 61 or 62 bytes
    /// of filler, so that each string also meets a window's last certain bytes.
    #[test]
    fn windows_equal_the_piece_by_piece_matcher_on_every_short_string() {
        let alphabet = [
            "a", "S", "l", "e", "M", " ", "\t", "\n", "\r", "7", ".", "/", "'", "\u{b}", "\0", "é", "\u{a0}",
            "\u{2019}", "\u{2010}", "\u{2028}",
        ];
        let k = alphabet.len();
        let mut text = String::new();
        for lead in [
            "",
            &"ab ".repeat(22)[..61],
            &"ab ".repeat(22)[..59],
            &"ab ".repeat(22)[..62],
        ] {
            for len in 1..=4u32 {
                for mut code in 0..k.pow(len) {
                    text.clear();
                    text.push_str(lead);
                    for _ in 0..len {
                        text.push_str(alphabet[code % k]);
                        code /= k;
                    }
                    for f in FLAVOURS {
                        assert_eq!(by_windows(f, &text), one_by_one(f, &text), "{f:?} on {text:?}");
                    }
                }
            }
        }
    }

    /// Long random texts, mostly ASCII words, spaces and punctuation, with runs of each class
    /// of every length, so that pieces and runs cross windows anywhere.
    #[test]
    fn windows_equal_the_piece_by_piece_matcher_on_random_text() {
        let parts = [
            " the",
            " The",
            "HTTPServer",
            "camelCase",
            "don't",
            " it's's's",
            "O'Neil",
            " they'RE",
            "x'll",
            "'s",
            "12345678",
            " 9",
            "...",
            " --",
            "/",
            "\n",
            "\r\n",
            "\n\n",
            "  ",
            "   \n  ",
            " \n ",
            "\t",
            ".\n/",
            "!\n\n/x",
            "\u{b}",
            "\u{c}",
            "é",
            " ü",
            "\u{a0}",
            "\u{3000}",
            "ſ",
            "\u{301}",
            "«",
            "中文",
            "a",
            "B",
            ",",
            "\"",
            "(",
            " '",
            "''",
            "\0",
            "\u{7f}",
            "“",
            "”",
            "’",
            "—",
            "\u{2027}",
            "\u{2028}",
            "\u{2029}",
            "\u{2030}",
            "\u{200b}",
            " “",
            "’s",
            "\u{2026}\n",
        ];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..4000 {
            let mut text = String::new();
            let pieces = (next() % 80) as usize;
            // a quarter of the texts are ASCII only
            let ascii = round % 4 == 0;
            while text.len() < pieces * 3 {
                let p = parts[(next() % parts.len() as u64) as usize];
                if !ascii || p.is_ascii() {
                    text.push_str(p);
                }
            }
            for f in FLAVOURS {
                assert_eq!(by_windows(f, &text), one_by_one(f, &text), "{f:?} on {text:?}");
            }
        }
    }

    /// Every byte value at every place, and random windows dense in dashes, through each
    /// vector version this machine has.
    #[test]
    fn the_vector_classes_equal_the_byte_classes() {
        let mut windows = Vec::new();
        for start in 0..256 {
            let mut w = [0u8; WIDTH + 2];
            for (k, b) in w.iter_mut().enumerate() {
                *b = (start + k * 7) as u8;
            }
            windows.push(w);
        }
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            let mut w = [0u8; WIDTH + 2];
            for b in w.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b =
                    [0xE2, 0x80, 0x90, 0xA7, 0xA8, 0x8F, b'a', b' ', b'\n', x as u8][(x >> 32) as usize % 10];
            }
            windows.push(w);
        }
        for w in &windows {
            for len in [0, 1, 15, 16, 17, 33, 40, 62, 63, 64] {
                let mut v = *w;
                if len < WIDTH {
                    v[len..].fill(0);
                }
                let want = classify_bytes(&v, len);
                assert_eq!(classify(&v, len), want, "{v:?}, {len} long");
                #[cfg(target_arch = "x86_64")]
                {
                    // SAFETY: every x86-64 has SSE2; AVX2 only when detected
                    assert_eq!(unsafe { classify_sse2(&v, len) }, want, "{v:?}, {len} long");
                    if std::is_x86_feature_detected!("avx2") {
                        assert_eq!(unsafe { classify_avx2(&v, len) }, want, "{v:?}, {len} long");
                    }
                }
            }
        }
    }

    #[test]
    fn the_dashes_are_punctuation_and_found_whole() {
        use super::super::classes::{bits, L, M, N, WS};
        let mut w = [0u8; WIDTH + 2];
        for cp in 0x2000..0x2040u32 {
            let c = char::from_u32(cp).unwrap();
            let in_range = (0x2010..=0x2027).contains(&cp);
            if in_range {
                assert_eq!(bits(c) & (L | M | N | WS), 0, "{c:?}");
            }
            // at every place, including where the window's end cuts it
            for at in 0..WIDTH {
                w.fill(b'a');
                let mut b = [0u8; 4];
                for (k, &x) in c.encode_utf8(&mut b).as_bytes().iter().enumerate() {
                    w[at + k] = x;
                }
                let want = ((in_range && at + 3 <= WIDTH) as u64) << at;
                assert_eq!(classify(&w, WIDTH).dash, want, "{c:?} at {at}");
                assert_eq!(classify_bytes(&w, WIDTH).dash, want, "{c:?} at {at}");
            }
        }
    }

    #[test]
    fn the_byte_classes_agree_with_the_class_table() {
        use super::super::classes::{ASCII, L, LL, LU, N, WS};
        let mut w = [0u8; WIDTH + 2];
        for start in (0..128).step_by(WIDTH) {
            for (k, b) in w.iter_mut().enumerate() {
                *b = (start + k) as u8;
            }
            let m = classify_bytes(&w, WIDTH);
            for (k, &b) in w[..WIDTH].iter().enumerate() {
                let c = ASCII[b as usize];
                let bit = |mask: u64| mask >> k & 1 != 0;
                assert_eq!(bit(m.upper), c & LU != 0, "{b}");
                assert_eq!(bit(m.lower), c & LL != 0, "{b}");
                assert_eq!(bit(m.upper | m.lower), c & L != 0, "{b}");
                assert_eq!(bit(m.digit), c & N != 0, "{b}");
                assert_eq!(bit(m.space | m.newline), c & WS != 0, "{b}");
                assert_eq!(bit(m.newline), b == b'\r' || b == b'\n', "{b}");
            }
        }
    }
}
