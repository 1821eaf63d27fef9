//! GPT-2's byte-to-unicode map, used to write tokens in model files (SPEC 8): the printable
//! Latin-1 bytes stand for themselves, the other 68 bytes become U+0100, U+0101, ... in order.

use std::sync::OnceLock;

fn is_printable(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The map (byte -> char), and the bytes that become U+0100, U+0101, ... in that order.
type Tables = ([char; 256], [u8; 68]);

fn tables() -> &'static Tables {
    static CELL: OnceLock<Tables> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut to_char = ['\0'; 256];
        let mut shifted = [0u8; 68];
        let mut n = 0;
        for b in 0..=255u8 {
            to_char[b as usize] = if is_printable(b) {
                b as char
            } else {
                shifted[n] = b;
                n += 1;
                char::from_u32(255 + n as u32).unwrap()
            };
        }
        (to_char, shifted)
    })
}

/// The printable form of a token.
pub fn render(token: &[u8]) -> String {
    let to_char = &tables().0;
    token.iter().map(|&b| to_char[b as usize]).collect()
}

/// Inverse of [`render`]; `Err(c)` names a character outside the map.
///
/// Printable ASCII stands for itself, so runs of it are copied whole; any other character is
/// decoded and looked up.  (A character at a time through a sorted table was most of a 105 MB
/// model's parse: its tokens are megabytes of ASCII.)
pub fn parse(text: &str) -> Result<Vec<u8>, char> {
    let shifted = &tables().1;
    let s = text.as_bytes();
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let run = s[i..].iter().take_while(|b| (b'!'..=b'~').contains(*b)).count();
        out.extend_from_slice(&s[i..i + run]);
        i += run;
        let Some(c) = text[i..].chars().next() else { break };
        let code = c as u32;
        out.push(match code {
            0xA1..=0xAC | 0xAE..=0xFF => code as u8,
            0x100..=0x143 => shifted[(code - 0x100) as usize],
            _ => return Err(c),
        });
        i += c.len_utf8();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        assert_eq!(render(b" the\n"), "ĠtheĊ");
        assert_eq!(parse("ĠtheĊ").unwrap(), b" the\n");
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(parse(&render(&all)).unwrap(), all);
        assert_eq!(parse("a b"), Err(' '));
    }

    #[test]
    fn every_character_near_the_map() {
        let to_byte: std::collections::HashMap<char, u8> = (0..=255u8)
            .map(|b| (render(&[b]).chars().next().unwrap(), b))
            .collect();
        for code in 0..0x800u32 {
            let Some(c) = char::from_u32(code) else { continue };
            let want = to_byte.get(&c).map(|&b| vec![b, b'x', b]).ok_or(c);
            assert_eq!(parse(&format!("{c}x{c}")), want, "U+{code:04X}");
        }
    }
}
