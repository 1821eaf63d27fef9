//! GPT-2's byte-to-unicode map, used to write tokens in model files (SPEC 8): the printable
//! Latin-1 bytes stand for themselves, the other 68 bytes become U+0100, U+0101, ... in order.

use std::sync::OnceLock;

fn is_printable(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The map (byte -> char) and its inverse, sorted by char.
type Tables = ([char; 256], Vec<(char, u8)>);

fn tables() -> &'static Tables {
    static CELL: OnceLock<Tables> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut to_char = ['\0'; 256];
        let mut shifted = 0u32;
        for b in 0..=255u8 {
            to_char[b as usize] = if is_printable(b) {
                b as char
            } else {
                shifted += 1;
                char::from_u32(255 + shifted).unwrap()
            };
        }
        let mut to_byte: Vec<(char, u8)> = (0..=255u8).map(|b| (to_char[b as usize], b)).collect();
        to_byte.sort_unstable();
        (to_char, to_byte)
    })
}

/// The printable form of a token.
pub fn render(token: &[u8]) -> String {
    let to_char = &tables().0;
    token.iter().map(|&b| to_char[b as usize]).collect()
}

/// Inverse of [`render`]; `Err(c)` names a character outside the map.
pub fn parse(text: &str) -> Result<Vec<u8>, char> {
    let to_byte = &tables().1;
    text.chars()
        .map(|c| {
            to_byte
                .binary_search_by_key(&c, |&(k, _)| k)
                .map(|i| to_byte[i].1)
                .map_err(|_| c)
        })
        .collect()
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
}
