//! A pattern in the Python `regex` module's syntax (SPEC 1.1), rewritten in the syntax of
//! `fancy-regex` (that of `regex-syntax`, plus look-arounds) where the two read the same text
//! differently.  The reference runs a pattern on `regex`; the Rust core runs any pattern
//! without a hand-written matcher on a `regex-automata` DFA (`generic.rs`, which turns the
//! look-aheads and end anchors it accepts into what the DFA reads), and a review found the
//! Python and Rust engines apart on:
//!
//! * Unicode: `regex-syntax`'s tables are Unicode 16.0, ours and `regex`'s 17.0 (4,626 code
//!   points differ for `\p{L}`, 13 for `\p{N}`).  The classes our tables hold (`\p{L}`, its
//!   five parts, `\p{M}`, `\p{N}`, by short or long name, and `\P{..}`) are written out as
//!   their code point ranges; other properties keep the engine's tables.
//! * `$`: the end of the text or before a newline that ends it, in `regex`; only the end in
//!   `fancy-regex` (without multi-line mode).  Written `(?=\n?\z)` where the multi-line flag
//!   is off (flag groups followed by their scope); repeated, the anchor once or not at all.
//! * `\Z`: the very end in `regex`; before a final newline too in `fancy-regex`.  Written `\z`.
//! * In a set, `regex` (its default, version 0 behaviour) reads `[`, `&&`, `--` and `~~` as
//!   characters (a `-` between two characters is a range), where `fancy-regex` nests sets and
//!   combines them.  Sets are written out item by item.
//! * POSIX classes (`[[:alpha:]]`): Unicode in `regex` for some names, ASCII for others
//!   (`[:digit:]`), ASCII in `fancy-regex`.  Refused, in both backends, naming `\p{..}` instead.
//!
//! Comments (`(?#..)`, and `#` to the end of a line in verbose mode) are copied as they are.
//! The built-in patterns never come here (hand-written matchers).  What the rewrite cannot
//! reach: properties other than those above, and the case-insensitive flag with properties
//! (`regex` lets `(?i)\p{Lu}` match every cased letter and folds no other property;
//! `fancy-regex` folds every class).

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
        // (a range may span the surrogates, which are not characters; it may not start or end
        // in them.  Split in two around them, a negated set of both halves also matched
        // U+D7FF and U+E000 in `regex-syntax`.)
        let first = if (0xD800..0xE000).contains(&first) {
            0xE000
        } else {
            first
        };
        let last = if (0xD800..0xE000).contains(&last) {
            0xD7FF
        } else {
            last
        };
        if first <= last {
            out.push_str(&format!("\\x{{{first:X}}}-\\x{{{last:X}}}"));
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

/// Does the pattern hold a POSIX class inside a set?  The walk of the reference's
/// `_has_posix_class`, step for step (escapes skipped, sets not nested, a `]` first in a set is
/// a character; comments are not told apart), so that both refuse the same patterns.
fn has_posix_class(p: &[char]) -> bool {
    let (mut i, mut in_set) = (0, false);
    while i < p.len() {
        let c = p[i];
        if c == '\\' {
            i += 2;
            continue;
        }
        if in_set {
            if c == ']' {
                in_set = false;
            } else if c == '[' && posix_class_at(p, i) {
                return true;
            }
            i += 1;
            continue;
        }
        if c == '[' {
            i += 1;
            if p.get(i) == Some(&'^') {
                i += 1;
            }
            if p.get(i) == Some(&']') {
                i += 1;
            }
            in_set = true;
            continue;
        }
        i += 1;
    }
    false
}

/// The message for a POSIX class, the same in the reference.
pub fn posix_class_error(what: &str) -> Error {
    Error::Value(format!(
        "{what} uses a POSIX class such as [[:alpha:]], which Python's regex and the Rust core \
         read differently (some names are Unicode classes in one, ASCII in the other); write \
         it with \\p{{..}} classes instead"
    ))
}

/// Where a character escape at `p[i]` (a backslash) ends, when it names one character (so
/// it can end a range in a set); `None` for a class (`\w`, `\p{..}`, ...).
fn char_escape_end(p: &[char], i: usize) -> Option<usize> {
    let c = *p.get(i + 1)?;
    let hex = |from: usize, n: usize| (from + n <= p.len()).then_some(from + n);
    match c {
        'w' | 'W' | 'd' | 'D' | 's' | 'S' | 'p' | 'P' | 'h' | 'X' | 'R' => None,
        'x' if p.get(i + 2) == Some(&'{') => p[i + 3..].iter().position(|&c| c == '}').map(|k| i + 4 + k),
        'N' if p.get(i + 2) == Some(&'{') => p[i + 3..].iter().position(|&c| c == '}').map(|k| i + 4 + k),
        'x' => hex(i + 2, 2),
        'u' => hex(i + 2, 4),
        'U' => hex(i + 2, 8),
        _ => Some(i + 2),
    }
}

/// Inline flags at `p[i..]` (just after `(?`): the letters turned on and off, and where they
/// end (at `:` or `)`); `None` if this is not a flag group.
fn flags_at(p: &[char], i: usize) -> Option<(Vec<char>, Vec<char>, usize)> {
    let (mut on, mut off, mut j, mut negative) = (Vec::new(), Vec::new(), i, false);
    while let Some(&c) = p.get(j) {
        match c {
            ':' | ')' if j > i => return Some((on, off, j)),
            '-' if !negative => negative = true,
            c if c.is_ascii_alphabetic() => {
                if negative {
                    off.push(c)
                } else {
                    on.push(c)
                }
            }
            _ => return None,
        }
        j += 1;
    }
    None
}

/// Is `p[i..]` a quantifier (`?`, `*`, `+`, `{m}`, `{m,}`, `{m,n}`, `{,n}`)?  Its end and its
/// smallest count.
fn quantifier_at(p: &[char], i: usize) -> Option<(usize, u64)> {
    let (end, min) = match p.get(i)? {
        '?' | '*' => (i + 1, 0),
        '+' => (i + 1, 1),
        '{' => {
            let close = p[i + 1..].iter().position(|&c| c == '}')? + i + 1;
            let body: String = p[i + 1..close].iter().collect();
            let (low, high) = body.split_once(',').unwrap_or((&body, &body));
            if !(low.chars().all(|c| c.is_ascii_digit()) && high.chars().all(|c| c.is_ascii_digit()))
                || (low.is_empty() && high.is_empty())
            {
                return None;
            }
            (close + 1, low.parse().unwrap_or(0))
        }
        _ => return None,
    };
    // (lazy and possessive forms)
    let end = if matches!(p.get(end), Some('?' | '+')) {
        end + 1
    } else {
        end
    };
    Some((end, min))
}

/// One character of a set as `fancy-regex` reads it literally.
fn set_char(out: &mut String, c: char) {
    if matches!(c, '[' | ']' | '-' | '&' | '~' | '^' | '\\') {
        out.push('\\');
    }
    out.push(c);
}

/// The most a rewritten pattern may hold, in bytes (a thousand classes written out take 14 MB
/// and compile in a third of a second).
const MAX_WRITTEN: usize = 16 << 20;

/// Where the text from `p[i]` through the first `stop` ends (the end of `p` without one).
fn through(p: &[char], i: usize, stop: char) -> usize {
    p[i..]
        .iter()
        .position(|&c| c == stop)
        .map_or(p.len(), |k| i + k + 1)
}

fn too_large(what: &str) -> Error {
    Error::Value(format!(
        "{what} is too large to compile: its Unicode classes written out pass {} MB",
        MAX_WRITTEN >> 20
    ))
}

/// `pattern` (Python `regex` syntax) rewritten for `fancy-regex` (see the module notes).
pub fn to_fancy(pattern: &str, what: &str) -> Result<String> {
    let p: Vec<char> = pattern.chars().collect();
    if has_posix_class(&p) {
        return Err(posix_class_error(what));
    }
    let mut out = String::with_capacity(pattern.len());
    // the multi-line and verbose flags where we are, and as they were outside each open group
    // (`regex` applies a flag group `(?m)` from where it stands to the end of its group)
    let (mut multi, mut verbose) = (false, false);
    let mut outer: Vec<(bool, bool)> = Vec::new();
    let mut i = 0;
    while i < p.len() {
        // (each class written out is up to ~14 KB: a pattern of 100,000 of them, which the size
        // rule lets through, would be a 1.4 GB string before the engine's own limit refused it)
        if out.len() > MAX_WRITTEN {
            return Err(too_large(what));
        }
        let c = p[i];
        match c {
            '\\' => {
                if let Some((mask, negated, end)) = property_at(&p, i) {
                    out.push_str(if negated { "[^" } else { "[" });
                    out.push_str(&ranges(mask, false));
                    out.push(']');
                    i = end;
                    continue;
                }
                match p.get(i + 1) {
                    Some('Z') => out.push_str("\\z"),
                    Some(&next) => {
                        out.push('\\');
                        out.push(next);
                    }
                    None => out.push('\\'),
                }
                i += 2;
            }
            '[' => i = set(&p, i, &mut out, what)?,
            // comments, copied as they are: to the end of the line in verbose mode, and a
            // comment group to its first `)`
            '#' if verbose => {
                let end = through(&p, i, '\n');
                out.extend(&p[i..end]);
                i = end;
            }
            '(' if p.get(i + 1) == Some(&'?') && p.get(i + 2) == Some(&'#') => {
                let end = through(&p, i, ')');
                out.extend(&p[i..end]);
                i = end;
            }
            '(' => {
                let flags = if p.get(i + 1) == Some(&'?') {
                    flags_at(&p, i + 2)
                } else {
                    None
                };
                match flags {
                    Some((on, off, end)) => {
                        let scoped = p[end] == ':';
                        if scoped {
                            outer.push((multi, verbose));
                        }
                        for (letters, value) in [(&on, true), (&off, false)] {
                            multi = if letters.contains(&'m') { value } else { multi };
                            verbose = if letters.contains(&'x') { value } else { verbose };
                        }
                        out.extend(&p[i..=end]);
                        i = end + 1;
                    }
                    None => {
                        outer.push((multi, verbose));
                        out.push('(');
                        i += 1;
                    }
                }
            }
            ')' => {
                (multi, verbose) = outer.pop().unwrap_or((multi, verbose));
                out.push(')');
                i += 1;
            }
            '$' if !multi => {
                // `fancy-regex` does not repeat a look-ahead: a repeated `$` is the anchor
                // once (at least one) or nothing (none needed)
                match quantifier_at(&p, i + 1) {
                    Some((end, min)) => {
                        if min > 0 {
                            out.push_str("(?=\\n?\\z)");
                        }
                        i = end;
                    }
                    None => {
                        out.push_str("(?=\\n?\\z)");
                        i += 1;
                    }
                }
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The set opening at `p[i]`, written to `out` item by item as `regex` (version 0) reads it:
/// characters, ranges of two characters, and classes; `[`, `&&`, `--` and `~~` are
/// characters.  Returns where the set ends.
fn set(p: &[char], i: usize, out: &mut String, what: &str) -> Result<usize> {
    out.push('[');
    let mut j = i + 1;
    if p.get(j) == Some(&'^') {
        out.push('^');
        j += 1;
    }
    let mut first = true;
    while j < p.len() {
        if out.len() > MAX_WRITTEN {
            return Err(too_large(what));
        }
        let c = p[j];
        if c == ']' && !first {
            out.push(']');
            return Ok(j + 1);
        }
        first = false;
        if c == '\\' {
            if let Some((mask, negated, end)) = property_at(p, j) {
                out.push_str(&ranges(mask, negated));
                j = end;
                continue;
            }
        }
        // one character (literal or escaped), or a class escape copied as it is
        let (start, end) = match c {
            '\\' => match char_escape_end(p, j) {
                Some(end) => (j, end),
                None => {
                    out.extend(&p[j..(j + 2).min(p.len())]);
                    j += 2;
                    continue;
                }
            },
            _ => (j, j + 1),
        };
        let item = |out: &mut String, from: usize, to: usize| {
            if to - from == 1 {
                set_char(out, p[from]);
            } else {
                out.extend(&p[from..to]);
            }
        };
        item(out, start, end);
        // a range when a `-` and another character follow (not `]`, not a class)
        if p.get(end) == Some(&'-') && p.get(end + 1).is_some_and(|&n| n != ']') {
            let to = match p[end + 1] {
                '\\' => char_escape_end(p, end + 1),
                _ => Some(end + 2),
            };
            if let Some(to) = to {
                out.push('-');
                item(out, end + 1, to);
                j = to;
                continue;
            }
        }
        j = end;
    }
    // (unclosed: left for the engine to refuse)
    Ok(j)
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
        // (what a fuzzer of both backends found in the first version of the rewrite)
        assert_eq!(t(r"(?#[)[^}]|(?#$)a"), r"(?#[)[^}]|(?#$)a");
        assert_eq!(t(r"a$?|b$*|c${0,3}|d$+?|e${2}"), r"a|b|c|d(?=\n?\z)|e(?=\n?\z)");
        assert_eq!(t(r"a$|(?m)b$|(?-m)c$"), r"a(?=\n?\z)|(?m)b$|(?-m)c(?=\n?\z)");
        assert_eq!(t(r"(?m:a$)b$|[(?m)]c$"), r"(?m:a$)b(?=\n?\z)|[(?m)]c(?=\n?\z)");
        assert_eq!(t(r"[!--][--/][a\-z]"), r"[!-\-][\--/][a\-z]");
        assert!(t(r"[)-\pN]").starts_with(r"[)\-\x{30}-\x{39}"));
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
        for many in [
            [r"\p{L}"; 20_000].join("|"),
            format!("[{}]", [r"\P{N}"; 20_000].concat()),
        ] {
            let e = to_fancy(&many, "pattern").unwrap_err().to_string();
            assert!(
                e.starts_with("pattern is too large to compile: its Unicode classes"),
                "{e}"
            );
        }
        assert!(to_fancy(r"x|[^a[:^digit:]]", "pattern").is_err());
        // (found by the same walk as the reference's, comments included)
        assert!(to_fancy(r"(?#[[:alpha:]])x", "pattern").is_err());
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
                // (and the opposite inside a negated set, where a complement split at the
                // surrogates matched U+D7FF and U+E000)
                let opposite = if negated {
                    format!(r"\p{{{name}}}")
                } else {
                    format!(r"\P{{{name}}}")
                };
                let inner = to_fancy(&format!("^[^{opposite}]$"), "pattern").unwrap();
                let set = fancy_regex::Regex::new(&inner).unwrap();
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
                    let found = set.is_match(&ch.to_string()).unwrap();
                    assert_eq!(found, want, "[^] {name} {negated} U+{cp:04X}");
                }
            }
        }
    }
}
