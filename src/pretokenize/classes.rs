//! Character classes of the GPT-4o patterns (Unicode 17.0), from the committed table.
//!
//! `python/superword/_data/classes.txt` is generated from the Python `regex` package (the
//! engine the reference uses) by `tools/gen_unicode_tables.py`, so the hand-written matcher
//! and `regex` agree on every code point; a pytest checks all 1,114,112 of them.

use std::sync::OnceLock;

pub const LU: u8 = 0x01;
pub const LL: u8 = 0x02;
pub const LT: u8 = 0x04;
pub const LM: u8 = 0x08;
pub const LO: u8 = 0x10;
pub const M: u8 = 0x20;
pub const N: u8 = 0x40;
/// `\s` of the `regex` module (Unicode White_Space).
pub const WS: u8 = 0x80;

/// `\p{L}`.
pub const L: u8 = LU | LL | LT | LM | LO;
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`: the first letter class of the GPT-4o word alternatives.
pub const UPPERISH: u8 = LU | LT | LM | LO | M;
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`: the second one.
pub const LOWERISH: u8 = LL | LM | LO | M;

const TABLE: &str = include_str!("../../python/superword/_data/classes.txt");

struct Classes {
    /// class bits of every code point of the Basic Multilingual Plane
    bmp: Vec<u8>,
    /// sorted `(first, last, bits)` ranges above U+FFFF
    astral: Vec<(u32, u32, u8)>,
}

fn classes() -> &'static Classes {
    static CELL: OnceLock<Classes> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut bmp = vec![0u8; 0x10000];
        let mut astral = Vec::new();
        for (first, last, bits) in ranges() {
            for cp in first..=last.min(0xFFFF) {
                bmp[cp as usize] = bits;
            }
            if last > 0xFFFF {
                astral.push((first.max(0x10000), last, bits));
            }
        }
        Classes { bmp, astral }
    })
}

/// ASCII classes, fixed at compile time (the hot path never touches the table).
pub const ASCII: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        let b = i as u8;
        t[i] = if b.is_ascii_uppercase() {
            LU
        } else if b.is_ascii_lowercase() {
            LL
        } else if b.is_ascii_digit() {
            N
        } else if matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ') {
            WS
        } else {
            0
        };
        i += 1;
    }
    t
};

/// The table's ranges in order: `(first, last, bits)`, inclusive, code points without bits
/// left out.
pub fn ranges() -> impl Iterator<Item = (u32, u32, u8)> {
    TABLE
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let mut f = line.split(' ');
            let mut hex = || u32::from_str_radix(f.next().expect("3 fields"), 16).expect("hex");
            (hex(), hex(), hex() as u8)
        })
}

/// The class bits of a character.
#[inline]
pub fn bits(c: char) -> u8 {
    let cp = c as u32;
    if cp < 0x80 {
        return ASCII[cp as usize];
    }
    if cp < 0x10000 {
        return classes().bmp[cp as usize];
    }
    let astral = &classes().astral;
    match astral.partition_point(|r| r.0 <= cp) {
        0 => 0,
        i => {
            let (_, last, b) = astral[i - 1];
            if cp <= last {
                b
            } else {
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ascii_shortcut_agrees_with_the_table() {
        for cp in 0..0x80u32 {
            assert_eq!(
                bits(char::from_u32(cp).unwrap()),
                classes().bmp[cp as usize],
                "U+{cp:04X}"
            );
        }
    }

    #[test]
    fn examples() {
        assert_eq!(bits('a'), LL);
        assert_eq!(bits('A'), LU);
        assert_eq!(bits('ǅ'), LT);
        assert_eq!(bits('ʰ'), LM);
        assert_eq!(bits('你'), LO);
        assert_eq!(bits('\u{301}'), M);
        assert_eq!(bits('7'), N);
        assert_eq!(bits('Ⅻ'), N);
        assert_eq!(bits(' '), WS);
        assert_eq!(bits('\u{3000}'), WS);
        assert_eq!(bits('!'), 0);
        assert_eq!(bits('𝐀'), LU); // U+1D400, astral
        assert_eq!(bits('\u{10FFFF}'), 0);
    }
}
