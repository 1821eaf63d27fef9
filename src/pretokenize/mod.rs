//! Pre-tokenization (SPEC section 1), the same steps as `reference/pretokenize.py`.
//!
//! * [`gpt4o`]: hand-written matchers for the two built-in patterns (the hot path);
//! * [`cl100k`], [`gpt2`]: hand-written matchers for the GPT-4 (`cl100k_base`, minbpe) and
//!   GPT-2 patterns, chosen when a pattern equals one of their spellings exactly;
//! * [`generic`]: any other pattern, on a memoized lazy DFA (linear in the text);
//! * [`Pretokenizer::for_each`]: simple mode, or script-aware mode that first cuts the text
//!   into single-script runs.

mod blocks;
pub mod cl100k;
pub mod classes;
pub mod dialect;
#[cfg(test)]
mod fuzz;
pub mod generic;
pub mod gpt2;
pub mod gpt4o;

use crate::error::{Error, Result};
use crate::scripts::{ScriptTable, COMMON, INHERITED};
use gpt4o::Builtin;

/// The GPT-4o pattern, exactly as SPEC 1.1 and the model files spell it.
pub const GPT4O: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+(?!\S)",
    r"|\s+",
);

/// The pattern for scripts written without spaces: one letter (with its marks) per pretoken.
pub const SCRIPT_SPECIFIC_GPT4O: &str = concat!(
    r" ?\p{L}\p{M}*",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+(?!\S)",
    r"|\s+",
);

/// Scripts that use the script-specific pattern by default (sorted).
pub const DEFAULT_SCRIPTS: [&str; 7] = ["Han", "Hiragana", "Katakana", "Khmer", "Lao", "Myanmar", "Thai"];

/// Merge eligibility (SPEC 1.3): contains a letter.
pub const MERGE_PATTERN: &str = r"\p{L}";

/// One pattern: a hand-written matcher, or a general regex.
pub enum Matcher {
    Builtin(Builtin),
    Gpt4(cl100k::Gpt4),
    Gpt2,
    Generic(generic::Generic),
}

impl Matcher {
    /// The hand-written matcher when `pattern` is spelled exactly like one it implements.
    pub fn new(pattern: &str, what: &str) -> Result<Matcher> {
        Ok(match pattern {
            GPT4O => Matcher::Builtin(Builtin::Gpt4o),
            SCRIPT_SPECIFIC_GPT4O => Matcher::Builtin(Builtin::ScriptSpecific),
            cl100k::CL100K => Matcher::Gpt4(cl100k::Gpt4::Cl100k),
            cl100k::MINBPE_GPT4 => Matcher::Gpt4(cl100k::Gpt4::Minbpe),
            gpt2::GPT2 | gpt2::MINBPE_GPT2 | gpt2::R50K => Matcher::Gpt2,
            other => Matcher::Generic(generic::Generic::new(other, what)?),
        })
    }

    /// Call `emit` with every piece of `s` (a findall).
    pub fn for_each_piece<'a>(&self, s: &'a str, emit: &mut impl FnMut(&'a str)) -> Result<()> {
        self.for_each(s, emit)
    }

    fn for_each<'a>(&self, s: &'a str, emit: &mut impl FnMut(&'a str)) -> Result<()> {
        match self {
            Matcher::Builtin(b) => {
                gpt4o::for_each_piece(*b, s, &mut *emit);
                Ok(())
            }
            Matcher::Gpt4(p) => {
                cl100k::for_each_piece(*p, s, &mut *emit);
                Ok(())
            }
            Matcher::Gpt2 => {
                gpt2::for_each_piece(s, &mut *emit);
                Ok(())
            }
            Matcher::Generic(g) => g.for_each(s, emit),
        }
    }
}

/// Cuts documents into pretokens.
pub struct Pretokenizer {
    pub main_pattern: String,
    pub script_pattern: Option<String>,
    /// sorted script names that use the script pattern
    pub scripts: Option<Vec<String>>,
    main: Matcher,
    script: Option<Matcher>,
    /// per script index of the [`ScriptTable`]: uses the script pattern?
    specific: Vec<bool>,
    /// does Latin use the script pattern?  (then ASCII text is not a single main-pattern run)
    latin_specific: bool,
    /// the [`ScriptTable`] index of Latin
    latin: Option<u8>,
}

impl Pretokenizer {
    pub fn new(
        main_pattern: &str,
        script_pattern: Option<&str>,
        scripts: Option<&[String]>,
    ) -> Result<Pretokenizer> {
        let main = Matcher::new(main_pattern, "pattern")?;
        let table = ScriptTable::get();
        let (script, scripts, specific) = match (script_pattern, scripts) {
            (None, None) => (None, None, Vec::new()),
            (None, Some(_)) => return Err(Error::Value(
                "scripts were given but no script-specific pattern: script-aware pre-tokenization needs both"
                    .into(),
            )),
            (Some(_), None) => {
                return Err(Error::Value(
                    "a script-specific pattern needs the list of scripts it applies to".into(),
                ))
            }
            (Some(p), Some(names)) => {
                let mut sorted: Vec<String> = names.to_vec();
                sorted.sort();
                sorted.dedup();
                let unknown: Vec<&String> = sorted.iter().filter(|n| table.index_of(n).is_none()).collect();
                if !unknown.is_empty() {
                    return Err(Error::Value(format!(
                        "unknown script name(s) {unknown:?}; use Unicode long names such as 'Han', 'Thai' or 'Old_Italic'"
                    )));
                }
                let mut specific = vec![false; table.names().len()];
                for n in &sorted {
                    specific[table.index_of(n).unwrap() as usize] = true;
                }
                (Some(Matcher::new(p, "script_pattern")?), Some(sorted), specific)
            }
        };
        let latin = table.index_of("Latin");
        let latin_specific = latin.is_some_and(|i| specific.get(i as usize) == Some(&true));
        Ok(Pretokenizer {
            latin_specific,
            latin,
            main_pattern: main_pattern.to_string(),
            script_pattern: script_pattern.map(str::to_string),
            scripts,
            main,
            script,
            specific,
        })
    }

    /// Call `emit` with every pretoken of `text` in order; they concatenate back to `text`.
    pub fn for_each<'a>(&self, text: &'a str, mut emit: impl FnMut(&'a str)) -> Result<()> {
        let Some(script) = &self.script else {
            return self.main.for_each(text, &mut emit);
        };
        if text.is_ascii() && !self.latin_specific {
            // only Latin and Common: a single run with the main pattern (unless Latin itself is
            // configured to use the script pattern)
            return self.main.for_each(text, &mut emit);
        }
        let table = ScriptTable::get();
        let bytes = text.as_bytes();
        let mut start = 0;
        let mut current: Option<u8> = None; // None: nothing yet
        let mut last_real_end = 0; // byte just after the last character that was not held back
        let mut i = 0;
        while i < bytes.len() {
            if current.is_some() && current == self.latin && bytes[i] < 0x80 {
                // ASCII inside a Latin run (most of Latin-script text): ASCII letters are Latin
                // and extend the run, the rest of ASCII is Common and is held back.  So the
                // stretch of ASCII up to the next non-ASCII byte is skipped whole, and the run
                // ends after its last letter (byte by byte, this loop cost a BoundlessBPE or
                // word model a fifth of its encoding on lines with a curly quote)
                let end = next_non_ascii(bytes, i);
                if let Some(k) = bytes[i..end].iter().rposition(u8::is_ascii_alphabetic) {
                    last_real_end = i + k + 1;
                }
                i = end;
                continue;
            }
            let c = text[i..].chars().next().expect("i is at a character boundary");
            let sc = table.script(c);
            i += c.len_utf8();
            if Some(sc) == current {
                last_real_end = i;
            } else if sc == INHERITED {
                current.get_or_insert(INHERITED);
                last_real_end = i;
            } else if sc == COMMON {
                current.get_or_insert(COMMON);
            } else {
                if let Some(cur) = current.filter(|&s| s != COMMON && s != INHERITED) {
                    let m = if self.specific[cur as usize] {
                        script
                    } else {
                        &self.main
                    };
                    m.for_each(&text[start..last_real_end], &mut emit)?;
                    start = last_real_end;
                }
                current = Some(sc);
                last_real_end = i;
            }
        }
        if start < text.len() {
            let m = match current {
                Some(s) if s != COMMON && s != INHERITED && self.specific[s as usize] => script,
                _ => &self.main,
            };
            m.for_each(&text[start..], &mut emit)?;
        }
        Ok(())
    }

    /// The pretokens of `text` as a vector (tests and small inputs).
    pub fn pieces<'a>(&self, text: &'a str) -> Result<Vec<&'a str>> {
        let mut v = Vec::new();
        self.for_each(text, |p| v.push(p))?;
        Ok(v)
    }
}

/// The position of the first byte of `bytes` from `i` on that is not ASCII (or the end),
/// eight bytes at a time.
#[inline]
fn next_non_ascii(bytes: &[u8], mut i: usize) -> usize {
    while let Some(eight) = bytes.get(i..i + 8) {
        let high = u64::from_le_bytes(eight.try_into().unwrap()) & 0x8080_8080_8080_8080;
        if high != 0 {
            return i + (high.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + bytes[i..]
        .iter()
        .position(|&b| b >= 0x80)
        .unwrap_or(bytes.len() - i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_non_ascii_byte() {
        let text = "abcdefghij\u{e9}klmnopqrstuvwxyz\u{2019}".as_bytes();
        for i in 0..=text.len() {
            let want = i + text[i..]
                .iter()
                .position(|&b| b >= 0x80)
                .unwrap_or(text.len() - i);
            assert_eq!(next_non_ascii(text, i), want, "from {i}");
        }
    }

    fn aware() -> Pretokenizer {
        let scripts: Vec<String> = DEFAULT_SCRIPTS.iter().map(|s| s.to_string()).collect();
        Pretokenizer::new(GPT4O, Some(SCRIPT_SPECIFIC_GPT4O), Some(&scripts)).unwrap()
    }

    #[test]
    fn spec_examples() {
        let p = aware();
        assert_eq!(
            p.pieces("Hello мир 你好 world!").unwrap(),
            ["Hello", " мир", " 你", "好", " world", "!"]
        );
        assert_eq!(
            p.pieces("Helloмир你好world!").unwrap(),
            ["Hello", "мир", "你", "好", "world", "!"]
        );
        assert_eq!(
            p.pieces("漢字カタカナ ABC").unwrap(),
            ["漢", "字", "カ", "タ", "カ", "ナ", " ABC"]
        );
        let simple = Pretokenizer::new(GPT4O, None, None).unwrap();
        assert_eq!(
            simple.pieces("Hello мир 你好 world!").unwrap(),
            ["Hello", " мир", " 你好", " world", "!"]
        );
    }

    #[test]
    fn ascii_letters_are_latin_and_the_rest_of_ascii_common() {
        // what the ASCII shortcut inside Latin runs of `for_each` relies on
        let table = ScriptTable::get();
        let latin = table.index_of("Latin").unwrap();
        for b in 0..0x80u8 {
            let want = if b.is_ascii_alphabetic() { latin } else { COMMON };
            assert_eq!(table.script(b as char), want, "{b:#04x}");
        }
        let p = aware();
        assert_eq!(
            p.pieces("naïve café, 東京 x\u{301}y").unwrap(),
            ["naïve", " café", ",", " 東", "京", " x\u{301}y"]
        );
    }

    #[test]
    fn unknown_script_is_an_error() {
        let err = Pretokenizer::new(GPT4O, Some(SCRIPT_SPECIFIC_GPT4O), Some(&["Klingon".to_string()]));
        assert!(matches!(err, Err(Error::Value(m)) if m.contains("Klingon")));
    }
}
