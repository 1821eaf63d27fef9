//! The randomized differential test of the hand-written matchers against `fancy-regex`
//! (compiled for `cargo test` only).
//!
//! The matchers follow the Python `regex` module's Unicode tables (`classes.txt`), which can be
//! a version ahead of fancy-regex's; so the random characters are drawn from code points on
//! which both engines put the same classes, plus a list of characters that stress the patterns.

use super::classes::bits;
use crate::XorShift;

/// Pieces that exercise every alternative: contractions in all cases (and U+017F LONG S, which
/// folds to `s`), marks, numbers of several scripts, every kind of whitespace, CRLF runs.
const STRESS: &[&str] = &[
    " ",
    " ",
    "  ",
    "\t",
    "\r",
    "\n",
    "\r\n",
    "\u{a0}",
    "\u{3000}",
    "\u{85}",
    "\u{2028}",
    "\u{b}",
    "'",
    "'",
    "'s",
    "'S",
    "'\u{17f}",
    "'t",
    "'T",
    "'m",
    "'d",
    "'D",
    "'ll",
    "'LL",
    "'lL",
    "'re",
    "'RE",
    "'ve",
    "'Ve",
    "'l",
    "'r",
    "'v",
    "a",
    "Z",
    "\u{e9}",
    "e\u{301}",
    "\u{301}",
    "\u{1c5}",
    "\u{2b0}",
    "\u{4f60}",
    "\u{e44}\u{e17}\u{e22}",
    "1",
    "\u{663}",
    "\u{216b}",
    "12345",
    ".",
    "!",
    "/",
    "-",
    "\u{1f44d}\u{1f3fd}",
    "\u{17f}",
    "\u{212a}",
    "Hello",
    " world",
    "\u{43c}\u{438}\u{440}",
];

/// Code points on which fancy-regex and `classes.txt` agree, drawn at random.
fn agreeing_code_points(rng: &mut XorShift, count: usize) -> Vec<char> {
    // in the bit order of classes.rs: Lu Ll Lt Lm Lo M N \s
    let classes: Vec<fancy_regex::Regex> = [
        r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}", r"\p{N}", r"\s",
    ]
    .iter()
    .map(|c| fancy_regex::Regex::new(&format!(r"\A{c}\z")).unwrap())
    .collect();
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        // mostly the planes in use (BMP, SMP, SIP), sometimes anywhere
        let range = if rng.below(8) == 0 { 0x11_0000 } else { 0x3_0000 };
        let Some(c) = char::from_u32(rng.below(range) as u32) else {
            continue;
        };
        let text = c.to_string();
        let theirs = classes.iter().enumerate().fold(0u8, |acc, (k, re)| {
            acc | (u8::from(re.is_match(&text).unwrap()) << k)
        });
        if theirs == bits(c) {
            out.push(c);
        }
    }
    out
}

/// Check `ours` against fancy-regex's findall of `pattern` on a few thousand random texts.
pub fn against_fancy_regex(pattern: &str, ours: impl for<'a> Fn(&'a str) -> Vec<&'a str>, seed: u64) {
    let mut rng = XorShift(seed);
    let pool = agreeing_code_points(&mut rng, 2000);
    let regex = fancy_regex::Regex::new(pattern).unwrap();
    for _ in 0..4000 {
        let mut text = String::new();
        for _ in 0..rng.below(40) {
            if rng.below(2) == 0 {
                text.push_str(STRESS[rng.below(STRESS.len() as u64) as usize]);
            } else {
                text.push(pool[rng.below(pool.len() as u64) as usize]);
            }
        }
        let expected: Vec<&str> = regex.find_iter(&text).map(|m| m.unwrap().as_str()).collect();
        assert_eq!(ours(&text), expected, "{pattern} on {text:?}");
    }
}
