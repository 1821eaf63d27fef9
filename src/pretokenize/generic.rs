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
    pattern: String,
    /// boxed: the table of threads is about 500 bytes, and `Matcher` holds a `Generic`
    per_thread: Box<ThreadLocal<fancy_regex::Regex>>,
}

fn compile(pattern: &str, what: &str) -> Result<fancy_regex::Regex> {
    fancy_regex::Regex::new(pattern)
        .map_err(|e| Error::Value(format!("{what} is not a valid regular expression: {e}")))
}

impl Generic {
    pub fn new(pattern: &str, what: &str) -> Result<Generic> {
        let per_thread = Box::new(ThreadLocal::new());
        // compiled here once so that a bad pattern fails at construction, in the caller's thread
        let _ = per_thread.get_or_try(|| compile(pattern, what))?;
        Ok(Generic {
            pattern: pattern.to_string(),
            per_thread,
        })
    }

    /// Every non-empty match, in order (like the reference's `finditer`).
    pub fn for_each<'a>(&self, s: &'a str, emit: &mut impl FnMut(&'a str)) -> Result<()> {
        let regex = self.per_thread.get_or_try(|| compile(&self.pattern, "pattern"))?;
        for m in regex.find_iter(s) {
            let m = m.map_err(|e| Error::Value(format!("pre-tokenization pattern failed: {e}")))?;
            if !m.as_str().is_empty() {
                emit(m.as_str());
            }
        }
        Ok(())
    }
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
    fn a_bad_pattern_fails_at_construction() {
        let err = Generic::new(r"(unclosed", "script_pattern").err().unwrap();
        assert!(matches!(err, Error::Value(m) if m.starts_with("script_pattern is not a valid")));
    }
}
