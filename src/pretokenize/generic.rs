//! Any pre-tokenization pattern without a hand-written matcher, through `fancy-regex` (it
//! supports the look-arounds such patterns use).  Its Unicode tables may lag the Python
//! `regex` module's by a version, so the built-in patterns never come here.
//!
//! Per-thread copies.  A compiled fancy-regex keeps its scratch space in `regex-automata`
//! pools: one for its backtracking VM, one in each delegated `meta::Regex`.  A pool serves the
//! first thread that uses it from a fast owner slot, and every other thread through a mutex
//! (`get_slow`/`put_value`), on every match.  With cl100k's pattern spelled so that it reaches
//! this engine, two encoding threads spent 5.8 % of their samples in those pool calls (perf,
//! 3 MB of Gutenberg); with a copy per thread, 0.7 % (the owner's fast path).  Cloning the regex
//! does not help (the VM program, pools included, sits behind an `Arc`), so each thread
//! compiles its own copy on first use and owns all its pools.  Compiling cl100k's pattern takes
//! about 1.6 ms.

use crate::error::{Error, Result};
use thread_local::ThreadLocal;

pub struct Generic {
    /// the pattern as `fancy-regex` reads it (see `dialect.rs`)
    pattern: String,
    /// what the pattern is called in errors ("pattern", "script_pattern")
    what: String,
    /// boxed: the table of threads is about 500 bytes, and `Matcher` holds a `Generic`
    per_thread: Box<ThreadLocal<fancy_regex::Regex>>,
}

/// Compile with limits on top of the size check: compiled size, lazy-DFA cache, and
/// backtracking (a pattern from a file can backtrack catastrophically; matching then fails with
/// an error).
fn compile(pattern: &str, what: &str) -> Result<fancy_regex::Regex> {
    fancy_regex::RegexBuilder::new(pattern)
        .delegate_size_limit(64 << 20)
        .delegate_dfa_size_limit(64 << 20)
        .backtrack_limit(1_000_000)
        .build()
        .map_err(|e| Error::Value(format!("{what} is not a valid regular expression: {e}")))
}

/// The largest [`pattern_size`] a pattern may have (as `reference/pretokenize.py`).
pub const MAX_PATTERN_SIZE: u64 = 100_000;

/// A generous estimate of how many items compiling `pattern` makes, the same rule as the
/// reference's `pattern_size`: an atom counts 1, a counted repeat multiplies what it repeats
/// by its largest number, the items of a group add up.  Patterns come from files people
/// download, and `x{999999999}` must be refused before anything expands it.
pub fn pattern_size(pattern: &str) -> u64 {
    let p: Vec<char> = pattern.chars().collect();
    let n = p.len();
    let mut totals: Vec<u64> = vec![0];
    let mut last: u64 = 0;
    let mut i = 0;
    while i < n {
        let atom;
        match p[i] {
            '\\' => {
                i += 2;
                if i <= n && matches!(p[i - 1], 'p' | 'P' | 'N' | 'x' | 'u' | 'U') && p.get(i) == Some(&'{') {
                    i = p[i..].iter().position(|&c| c == '}').map_or(n, |k| i + k + 1);
                }
                atom = 1;
            }
            '[' => {
                i += 1;
                if p.get(i) == Some(&'^') {
                    i += 1;
                }
                if p.get(i) == Some(&']') {
                    i += 1;
                }
                while i < n && p[i] != ']' {
                    i += if p[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                atom = 1;
            }
            '(' => {
                totals.push(0);
                last = 0;
                i += 1;
                continue;
            }
            ')' => {
                let inner = if totals.len() > 1 {
                    totals.pop().unwrap_or(0)
                } else {
                    0
                };
                atom = inner.max(1);
                i += 1;
            }
            '{' => {
                if let Some((times, end)) = counted_repeat(&p[i..]) {
                    let top = totals.last_mut().expect("the outermost total stays");
                    *top = top.saturating_add(last.saturating_mul(times.saturating_sub(1)));
                    last = last.saturating_mul(times);
                    i += end;
                    if *top > MAX_PATTERN_SIZE {
                        return *top;
                    }
                    continue;
                }
                atom = 1;
                i += 1;
            }
            _ => {
                atom = 1;
                i += 1;
            }
        }
        let top = totals.last_mut().expect("the outermost total stays");
        *top = top.saturating_add(atom);
        last = atom;
    }
    totals.iter().fold(0u64, |a, &b| a.saturating_add(b))
}

/// `{m}`, `{m,}`, `{,n}` or `{m,n}` (at least one number) at the start of `p`: the largest
/// number and the length.
fn counted_repeat(p: &[char]) -> Option<(u64, usize)> {
    let digits = |from: usize| from + p[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let value = |d: &[char]| -> u64 {
        if d.len() > 9 {
            1_000_000_000
        } else {
            d.iter().collect::<String>().parse().unwrap_or(0)
        }
    };
    let end1 = digits(1);
    let (first, mut j) = (&p[1..end1], end1);
    let mut second: &[char] = &[];
    if p.get(j) == Some(&',') {
        let end2 = digits(j + 1);
        second = &p[j + 1..end2];
        j = end2;
    }
    if p.get(j) != Some(&'}') || (first.is_empty() && second.is_empty()) {
        return None;
    }
    Some((value(first).max(value(second)), j + 1))
}

impl Generic {
    pub fn new(pattern: &str, what: &str) -> Result<Generic> {
        let size = pattern_size(pattern);
        if size > MAX_PATTERN_SIZE {
            let shown: String = pattern.chars().take(80).collect();
            return Err(Error::Value(format!(
                "{what} is too large to compile: its counted repeats expand to about {size} items (at most {MAX_PATTERN_SIZE}): {shown:?}"
            )));
        }
        // (in `fancy-regex`'s reading of the Python `regex` syntax the pattern is written in)
        let pattern = super::dialect::to_fancy(pattern, what)?;
        let per_thread = Box::new(ThreadLocal::new());
        // compiled here once so that a bad pattern fails at construction, in the caller's thread
        let regex = per_thread.get_or_try(|| compile(&pattern, what))?;
        refuse_empty_matches(regex, what)?;
        Ok(Generic {
            pattern,
            what: what.to_string(),
            per_thread,
        })
    }

    /// Every match, in order (like the reference's `finditer`); an empty match before the end
    /// of `s` is an error ([`empty_match`]).  (Not `find_iter`: it passes over an empty match
    /// right after the last match without a word, and the character there was lost: `\w*|\s+`
    /// read "ab cd" as "ab", "cd".)
    pub fn for_each<'a>(&self, s: &'a str, emit: &mut impl FnMut(&'a str)) -> Result<()> {
        let regex = self
            .per_thread
            .get_or_try(|| compile(&self.pattern, &self.what))?;
        let mut at = 0;
        while at < s.len() {
            let found = regex
                .find_from_pos(s, at)
                .map_err(|e| Error::Value(format!("pre-tokenization pattern failed: {e}")))?;
            let Some(m) = found else { break };
            if m.start() == m.end() {
                if m.start() < s.len() {
                    return Err(empty_match(&self.what, s[..m.start()].chars().count()));
                }
                break;
            }
            emit(m.as_str());
            at = m.end();
        }
        Ok(())
    }
}

/// The text on which every pattern is tried for empty matches before it is used (the same in
/// `reference/pretokenize.py`): a letter of each case, a space, a digit, a newline, a tab, an
/// apostrophe, punctuation, a Han character with a combining mark.
pub const PROBE: &str = "Ab c1\n\t'x, \u{6771}\u{301}.";

/// Refuse a pattern that matches the empty string in an empty text, or at a character of
/// [`PROBE`].  Such a pattern cuts nothing there, and findall then goes on differently in the
/// two engines ([`empty_match`]); this check runs wherever a pattern comes in (`pattern=`,
/// model files, count files, minbpe and `.tiktoken` patterns, `tokenizer.json`), so that a
/// door that never pre-tokenizes (training on a count file) refuses it too.  A pattern can
/// still match nothing only after some other text (a look-ahead alone); pre-tokenization then
/// raises [`empty_match`].
fn refuse_empty_matches(regex: &fancy_regex::Regex, what: &str) -> Result<()> {
    let failed = |e: fancy_regex::Error| Error::Value(format!("pre-tokenization pattern failed: {e}"));
    if regex.find("").map_err(failed)?.is_some() {
        return Err(Error::Value(format!(
            "{what} matches the empty string (it does in an empty text): every match must hold \
             at least one character; change the alternatives that can match nothing (such as \\w* \
             or a look-ahead alone)"
        )));
    }
    for (n, (at, _)) in PROBE.char_indices().enumerate() {
        if let Some(m) = regex.find_from_pos(PROBE, at).map_err(failed)? {
            if m.start() == at && m.end() == at {
                return Err(Error::Value(format!(
                    "{what} matches the empty string (it does at character {n} of superword's \
                     probe text): every match must hold at least one character; change the \
                     alternatives that can match nothing (such as \\w* or a look-ahead alone)"
                )));
            }
        }
    }
    Ok(())
}

/// The error for a pattern that matched the empty string at character `at` of a text (not at
/// its end), the same in the reference.  Python's `regex` then tries again at the same place
/// for a match that is not empty; `fancy-regex` instead searches on from the next character,
/// so the character there would be lost (`(?=a)|\w|\W` cut "xaab" into "x", "b").  Neither
/// backend guesses: an empty match cuts nothing, and a pattern that makes one (an alternative
/// such as `\w*` or a lone look-ahead) is refused where it happens, in both.  (At the end of a
/// text an empty match loses nothing: `\w*` matches there after the last word.)
pub fn empty_match(what: &str, at: usize) -> Error {
    Error::Value(format!(
        "{what} matched the empty string (at character {at} of a text): every match must hold at \
         least one character; change the alternatives that can match nothing (such as \\w* or \
         a look-ahead alone)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces<'a>(g: &Generic, s: &'a str) -> Vec<&'a str> {
        let mut v = Vec::new();
        g.for_each(s, &mut |p| v.push(p)).unwrap();
        v
    }

    #[test]
    fn every_thread_gets_the_same_pieces_from_its_own_copy() {
        let g = Generic::new(r"\p{L}+(?=\s)|\S+|\s+", "pattern").unwrap();
        let text = "one two, three  four\nfive ";
        let here = pieces(&g, text);
        assert_eq!(
            here,
            ["one", " ", "two,", " ", "three", "  ", "four", "\n", "five", " "]
        );
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| pieces(&g, text))).collect();
            for h in handles {
                assert_eq!(h.join().unwrap(), here);
            }
        });
        assert!(g.per_thread.iter().count() >= 2);
    }

    #[test]
    fn an_empty_match_is_an_error_unless_at_the_end() {
        // ((?=x) alone: no empty match in the probe text, so only pre-tokenization sees it)
        let g = Generic::new(r"(?=q)|\w|\W", "script_pattern").unwrap();
        let mut v = Vec::new();
        let err = g.for_each("xqqb", &mut |p| v.push(p)).unwrap_err();
        assert_eq!(v, ["x"]); // (the pieces before it were given out)
        assert!(
            err.to_string()
                .starts_with("script_pattern matched the empty string (at character 1 "),
            "{err}"
        );
        // (right after a match too: the iterator of `fancy-regex` passed over that one)
        let g = Generic::new(r"\w+|(?<=\w)(?=@)|\W", "pattern").unwrap();
        assert_eq!(pieces(&g, "ab "), ["ab", " "]);
        let err = g.for_each("é@", &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("at character 1 "), "{err}");
    }

    #[test]
    fn a_pattern_that_matches_the_empty_string_is_refused_where_it_comes_in() {
        for (p, says) in [
            (r"\w*|\s+", "in an empty text"),
            (r"\w+|\s*", "in an empty text"),
            (r"(?=\s)|\S+|\s", "at character 2 of superword's probe text"),
            (r"[A-Za-z]+|(?=\d)|\s|\W|\d", "at character 4 "),
        ] {
            let e = Generic::new(p, "pattern").err().expect(p).to_string();
            assert!(
                e.starts_with("pattern matches the empty string") && e.contains(says),
                "{p}: {e}"
            );
        }
    }

    #[test]
    fn a_bad_pattern_fails_at_construction() {
        let err = Generic::new(r"(unclosed", "script_pattern").err().unwrap();
        assert!(matches!(err, Error::Value(m) if m.starts_with("script_pattern is not a valid")));
    }

    #[test]
    fn pattern_sizes_as_the_reference_counts_them() {
        // the same values as reference/pretokenize.py's pattern_size (its doctest and
        // tests/test_hostile_files.py)
        assert_eq!(pattern_size(r"\p{L}{1,3}"), 3);
        assert_eq!(pattern_size("(ab{10}){1000}"), 11000);
        assert_eq!(pattern_size("[{]{5}"), 5);
        assert!(pattern_size("x{999999999}") > MAX_PATTERN_SIZE);
        assert!(pattern_size(&format!("x{{{}}}", "9".repeat(5000))) > MAX_PATTERN_SIZE);
        assert!(pattern_size("((x{1000}){1000})") > MAX_PATTERN_SIZE);
        assert_eq!(pattern_size("x{,}"), 4); // not a repeat: four literal characters
    }

    #[test]
    fn huge_repeats_are_refused_quickly() {
        for p in ["x{999999999}", "(?=x)x{99999}{2}", "(?:(?:a{1000}){1000})"] {
            let e = Generic::new(p, "pattern").err().expect("refused");
            assert!(e.to_string().contains("pattern is"), "{e}");
        }
    }
}
