//! Any pre-tokenization pattern other than the two built-in ones, through `fancy-regex`
//! (it supports the look-arounds such patterns use).  Its Unicode tables may lag the Python
//! `regex` module's by a version, so the built-in patterns never come here.

use crate::error::{Error, Result};

pub struct Generic {
    regex: fancy_regex::Regex,
}

impl Generic {
    pub fn new(pattern: &str, what: &str) -> Result<Generic> {
        fancy_regex::Regex::new(pattern)
            .map(|regex| Generic { regex })
            .map_err(|e| Error::Value(format!("{what} is not a valid regular expression: {e}")))
    }

    /// Every non-empty match, in order (like the reference's `finditer`).
    pub fn for_each<'a>(&self, s: &'a str, emit: &mut impl FnMut(&'a str)) -> Result<()> {
        for m in self.regex.find_iter(s) {
            let m = m.map_err(|e| Error::Value(format!("pre-tokenization pattern failed: {e}")))?;
            if !m.as_str().is_empty() {
                emit(m.as_str());
            }
        }
        Ok(())
    }
}
