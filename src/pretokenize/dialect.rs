//! A pattern in the Python `regex` module's syntax (SPEC 1.1), rewritten for `fancy-regex`
//! where the two read the same text differently.  The reference runs a pattern on `regex`;
//! the Rust core runs any pattern without a hand-written matcher on `fancy-regex`, and a
//! review found them apart on:
//!
//! * Unicode: `regex-syntax`'s tables are Unicode 16.0, ours and `regex`'s 17.0 (4,626 code
//!   points differ for `\p{L}`, 13 for `\p{N}`).  The classes our tables hold (`\p{L}`, its
//!   five parts, `\p{M}`, `\p{N}`, by short or long name, and `\P{..}`) are written out as
//!   their code point ranges; other properties keep the engine's tables.
//! * `$`: the end of the text or before a newline that ends it, in `regex`; only the end in
//!   `fancy-regex` (without multi-line mode).  Written `(?=\n?\z)`.
//! * `\Z`: the very end in `regex`; before a final newline too in `fancy-regex`.  Written `\z`.
//! * In a set, `regex` (its default, version 0 behaviour) reads `[`, `&&`, `--` and `~~` as
//!   characters, where `fancy-regex` nests sets and combines them.  They are escaped.
//! * POSIX classes (`[[:alpha:]]`): Unicode in `regex` for some names, ASCII for others
//!   (`[:digit:]`), ASCII in `fancy-regex`.  Refused, in both backends, naming `\p{..}` instead.
//!
//! The built-in patterns never come here (hand-written matchers).  What the rewrite cannot
//! reach: a multi-line flag set only for part of a pattern (`(?m:..)`: then `$` is left as it
//! is everywhere; verbose mode likewise, whose comments are then skipped everywhere), and
//! properties other than those above.

use super::classes::{LL, LM, LO, LT, LU, M, N};
use crate::error::{Error, Result};

/// The class mask of a property name we hold a table for, compared as `regex` compares
/// names (case, spaces, hyphens and underscores ignored).
fn property(name: &str) -> Option<u8> {
    let loose: String = name
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect();
    Some(match loose.as_str() {
        "l" | "letter" => LU | LL | LT | LM | LO,
        "lu" | "uppercaseletter" => LU,
        "ll" | "lowercaseletter" => LL,
        "lt" | "titlecaseletter" => LT,
        "lm" | "modifierletter" => LM,
        "lo" | "otherletter" => LO,
        "m" | "mark" | "combiningmark" => M,
        "n" | "number" => N,
        _ => return None,
    })
}

/// The code point ranges of a class mask (or of its complement), as the inside of a set.
fn ranges(mask: u8, negated: bool) -> String {
    let mut out = String::new();
    let mut push = |first: u32, last: u32| {
        // (surrogates are not characters: a range never spans them)
        for (a, b) in [(first, last.min(0xD7FF)), (first.max(0xE000), last)] {
            if a <= b {
                out.push_str(&format!("\\x{{{a:X}}}-\\x{{{b:X}}}"));
            }
        }
    };
    let mut next = 0u32; // the first code point not yet given out (for the complement)
    let mut open: Option<(u32, u32)> = None;
    for (first, last, bits) in super::classes::ranges() {
        if bits & mask == 0 {
            continue;
        }
        if negated {
            if first > next {
                push(next, first - 1);
            }
            next = last + 1;
        } else {
            match open {
                Some((a, b)) if b + 1 == first => open = Some((a, last)),
                Some((a, b)) => {
                    push(a, b);
                    open = Some((first, last));
                }
                None => open = Some((first, last)),
            }
        }
    }
    if negated {
        if next <= 0x10FFFF {
            push(next, 0x10FFFF);
        }
    } else if let Some((a, b)) = open {
        push(a, b);
    }
    out
}

/// Does the pattern set inline flag `flag` anywhere (`(?m)`, `(?im:..)`)?
fn sets_flag(p: &[char], flag: char) -> bool {
    let mut i = 0;
    while i + 2 < p.len() {
        if p[i] == '\\' {
            i += 2;
            continue;
        }
        if p[i] == '(' && p[i + 1] == '?' {
            let flags = p[i + 2..].iter().take_while(|c| c.is_ascii_alphabetic());
            if flags.clone().any(|&c| c == flag) {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// `\p{Name}`, `\pL` or `\P{..}` at `p[i..]` (`p[i]` is the backslash): the mask, whether
/// negated, and where it ends; `None` for anything else.
fn property_at(p: &[char], i: usize) -> Option<(u8, bool, usize)> {
    let negated = match p.get(i + 1) {
        Some('p') => false,
        Some('P') => true,
        _ => return None,
    };
    let (name, end): (String, usize) = match p.get(i + 2) {
        Some('{') => {
            let close = p[i + 3..].iter().position(|&c| c == '}')? + i + 3;
            (p[i + 3..close].iter().collect(), close + 1)
        }
        Some(&c) => (c.to_string(), i + 3),
        None => return None,
    };
    // (`\p{^L}` is `\P{L}` in `regex`)
    let (name, negated) = match name.strip_prefix('^') {
        Some(rest) => (rest.to_string(), !negated),
        None => (name, negated),
    };
    property(&name).map(|mask| (mask, negated, end))
}

/// Is `p[i..]` a POSIX class (`[:name:]` or `[:^name:]`, inside a set)?
fn posix_class_at(p: &[char], i: usize) -> bool {
    if p.get(i + 1) != Some(&':') {
        return false;
    }
    let mut j = i + 2;
    if p.get(j) == Some(&'^') {
        j += 1;
    }
    let letters = p[j.min(p.len())..]
        .iter()
        .take_while(|c| c.is_ascii_alphabetic())
        .count();
    letters > 0 && p.get(j + letters) == Some(&':') && p.get(j + letters + 1) == Some(&']')
}

/// The message for a POSIX class, the same in the reference.
pub fn posix_class_error(what: &str) -> Error {
    Error::Value(format!(
        "{what} uses a POSIX class such as [[:alpha:]], which Python's regex and the Rust core \
         read differently (some names are Unicode classes in one, ASCII in the other); write \
         it with \\p{{..}} classes instead"
    ))
}

/// `pattern` (Python `regex` syntax) rewritten for `fancy-regex` (see the module notes).
pub fn to_fancy(pattern: &str, what: &str) -> Result<String> {
    let p: Vec<char> = pattern.chars().collect();
    let multi = sets_flag(&p, 'm');
    // (in verbose mode a `#` outside a set starts a comment to the end of the line: copied as
    // it is, so that a `[` or `$` there is not read as pattern)
    let verbose = sets_flag(&p, 'x');
    let mut out = String::with_capacity(pattern.len());
    let mut i = 0;
    let mut in_set = false;
    while i < p.len() {
        let c = p[i];
        if c == '\\' {
            if let Some((mask, negated, end)) = property_at(&p, i) {
                if in_set && negated {
                    // (inside a set, the complement as ranges)
                    out.push_str(&ranges(mask, true));
                } else if in_set {
                    out.push_str(&ranges(mask, false));
                } else {
                    out.push_str(if negated { "[^" } else { "[" });
                    out.push_str(&ranges(mask, false));
                    out.push(']');
                }
                i = end;
                continue;
            }
            match p.get(i + 1) {
                Some('Z') if !in_set => out.push_str("\\z"),
                Some(&next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            }
            i += 2;
            continue;
        }
        if in_set {
            match c {
                ']' => {
                    in_set = false;
                    out.push(']');
                }
                '[' if posix_class_at(&p, i) => return Err(posix_class_error(what)),
                '[' => out.push_str("\\["),
                '&' | '-' | '~' if p.get(i + 1) == Some(&c) => {
                    out.push('\\');
                    out.push(c);
                    out.push('\\');
                    out.push(c);
                    i += 2;
                    continue;
                }
                _ => out.push(c),
            }
            i += 1;
            continue;
        }
        match c {
            '#' if verbose => {
                let end = p[i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(p.len(), |k| i + k + 1);
                out.extend(&p[i..end]);
                i = end;
                continue;
            }
            '[' => {
                out.push('[');
                i += 1;
                if p.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                // a `]` first in a set is a character in both engines; a POSIX class first is
                // checked above on the next round
                if p.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
                in_set = true;
                continue;
            }
            '$' if !multi => out.push_str("(?=\\n?\\z)"),
            _ => out.push(c),
        }
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_rewritten() {
        let t = |p: &str| to_fancy(p, "pattern").unwrap();
        assert_eq!(t(r"\w+$|\s"), r"\w+(?=\n?\z)|\s");
        assert_eq!(t(r"(?m)\w+$"), r"(?m)\w+$");
        assert_eq!(
            t("(?x) a$ # [not a set, nor $\n | b$"),
            "(?x) a(?=\\n?\\z) # [not a set, nor $\n | b(?=\\n?\\z)"
        );
        assert_eq!(t("a#[b]"), r"a#[b]");
        assert_eq!(t(r"a\Z|[\Z]"), r"a\z|[\Z]");
        assert_eq!(t(r"[\w--\d&&x~~y-z]"), r"[\w\-\-\d\&\&x\~\~y-z]");
        assert_eq!(t(r"[a[bc]]"), r"[a\[bc]]");
        assert_eq!(t(r"[]a]|[^]a]"), r"[\]a]|[^\]a]");
        assert_eq!(t(r"\$\\$"), r"\$\\(?=\n?\z)");
        // properties we hold a table for become ranges, others stay
        let l = t(r"\p{L}");
        assert!(
            l.starts_with(r"[\x{41}-\x{5A}\x{61}-\x{7A}") && l.ends_with(']'),
            "{l}"
        );
        assert_eq!(t(r"\pL"), l);
        assert_eq!(t(r"\p{Letter}"), l);
        assert_eq!(t(r"\P{L}"), format!("[^{}", &l[1..]));
        assert_eq!(t(r"\p{^L}"), t(r"\P{L}"));
        assert_eq!(t(r"\p{Greek}\p{Nd}"), r"\p{Greek}\p{Nd}");
        let set = t(r"[^\s\P{N}]");
        assert!(set.starts_with(r"[^\s\x{0}-\x{2F}\x{3A}-"), "{set}");
        assert!(to_fancy(r"[[:alpha:]]", "script_pattern")
            .unwrap_err()
            .to_string()
            .starts_with("script_pattern uses a POSIX class"));
        // (a set that only starts like one is not a POSIX class)
        assert_eq!(t(r"[[:]"), r"[\[:]");
        assert_eq!(t(r"[[:a]|b:]"), r"[\[:a]|b:]");
        assert!(to_fancy(r"x|[^a[:^digit:]]", "pattern").is_err());
    }

    #[test]
    fn the_rewritten_classes_match_the_table_on_every_code_point() {
        for (name, mask) in [("L", LU | LL | LT | LM | LO), ("N", N), ("Mark", M), ("Lo", LO)] {
            for negated in [false, true] {
                let pattern = format!(
                    "^{}$",
                    if negated {
                        format!(r"\P{{{name}}}")
                    } else {
                        format!(r"\p{{{name}}}")
                    }
                );
                let re = fancy_regex::Regex::new(&to_fancy(&pattern, "pattern").unwrap()).unwrap();
                for cp in (0..0x110000u32)
                    .step_by(7)
                    .chain([0x88F, 0x10FFFF, 0xD7FF, 0xE000])
                {
                    let Some(ch) = char::from_u32(cp) else { continue };
                    let want = (super::super::classes::bits(ch) & mask != 0) != negated;
                    assert_eq!(
                        re.is_match(&ch.to_string()).unwrap(),
                        want,
                        "{name} {negated} U+{cp:04X}"
                    );
                }
            }
        }
    }
}
