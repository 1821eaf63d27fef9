//! The extension model file, "superword extension v1" (SPEC 10.5), as `dumps` and `loads` of
//! `reference/extend.py`: the writer, and a reader that checks every line before trusting it.

use std::fmt::Write as _;

use base64::Engine as _;
use rustc_hash::{FxHashMap, FxHashSet};

use super::{Extension, SuperMerge, HEADER, MAX_ID};
use crate::error::{Error, Result};
use crate::pretokenize::{Matcher, MERGE_PATTERN};
use crate::tokens::TokenId;

fn b64(raw: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(raw)
}

/// The model file's text.
pub fn dumps(ext: &Extension) -> String {
    let mut out = String::with_capacity(ext.base.len() * 16 + ext.superwords.len() * 48);
    out.push_str(HEADER);
    out.push_str("\npattern\n");
    crate::model::v2::json_string(&ext.pattern, &mut out);
    out.push_str("\nmerge_pattern\n");
    crate::model::v2::json_string(MERGE_PATTERN, &mut out);
    let _ = write!(out, "\nbase\n{}\n", ext.base.len());
    for (i, t) in &ext.base {
        let _ = writeln!(out, "{} {i}", b64(t));
    }
    let _ = writeln!(out, "special_tokens\n{}", ext.special.len());
    for (s, i) in &ext.special {
        let _ = write!(out, "{i} ");
        crate::model::v2::json_string(s, &mut out);
        out.push('\n');
    }
    let _ = writeln!(out, "superwords\n{}", ext.superwords.len());
    for (i, t, c) in &ext.superwords {
        let _ = writeln!(out, "{i} {} {c}", b64(t));
    }
    let _ = writeln!(out, "supermerges\n{}", ext.supermerges.len());
    for (k, m) in ext.supermerges.iter().enumerate() {
        let _ = writeln!(out, "{k} {} {} {} {}", m.left, m.right, m.count, m.flag as u8);
    }
    out
}

/// The file's lines with their numbers, for errors that name the line.
struct Lines<'a> {
    lines: Vec<&'a str>,
    name: &'a str,
    at: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str, name: &'a str) -> Result<Lines<'a>> {
        let mut lines: Vec<&str> = text.split('\n').collect();
        if lines.last() != Some(&"") {
            return Err(Error::Value(format!(
                "{name}: the file does not end with a newline (cut short?)"
            )));
        }
        lines.pop();
        Ok(Lines { lines, name, at: 0 })
    }

    fn error(&self, why: &str) -> Error {
        Error::Value(format!("{}, line {}: {why}", self.name, self.at))
    }

    fn next(&mut self, what: &str) -> Result<&'a str> {
        if self.at >= self.lines.len() {
            return Err(Error::Value(format!(
                "{}: the file ends early, where {what} should be (line {})",
                self.name,
                self.at + 1
            )));
        }
        self.at += 1;
        Ok(self.lines[self.at - 1])
    }

    fn expect(&mut self, word: &str) -> Result<()> {
        if self.next(&format!("'{word}'"))? != word {
            return Err(self.error(&format!("expected '{word}'")));
        }
        Ok(())
    }

    /// A non-negative decimal integer of at most 20 digits.
    fn uint(&self, text: &str, what: &str) -> Result<u128> {
        if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
            let shown: String = text.chars().take(40).collect();
            return Err(self.error(&format!(
                "{what} is not a non-negative integer: {}",
                crate::input::py_repr(&shown)
            )));
        }
        Ok(text.parse().expect("at most 20 digits fit 128 bits"))
    }

    fn count(&mut self, what: &str) -> Result<usize> {
        let label = format!("the number of {what}");
        let line = self.next(&label)?;
        let n = self.uint(line, &label)?;
        let left = self.lines.len() - self.at;
        if n > left as u128 {
            return Err(self.error(&format!("{n} {what} announced, but only {left} lines follow")));
        }
        Ok(n as usize)
    }

    fn fields(&mut self, n: usize, what: &str) -> Result<Vec<&'a str>> {
        let parts: Vec<&str> = self.next(what)?.split(' ').collect();
        if parts.len() != n {
            return Err(self.error(&format!("expected {what}")));
        }
        Ok(parts)
    }

    fn json_string(&mut self, what: &str) -> Result<String> {
        let line = self.next(what)?;
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(serde_json::Value::String(s)) => Ok(s),
            _ => Err(self.error(&format!("{what} is not a JSON string"))),
        }
    }

    fn token(&self, text: &str) -> Result<Vec<u8>> {
        let raw = (base64::engine::general_purpose::STANDARD.decode(text))
            .map_err(|_| self.error("the token is not valid base64"))?;
        if raw.is_empty() {
            return Err(self.error("empty token"));
        }
        Ok(raw)
    }
}

/// Parse and check a model file's text; every error names `name` and the line.
pub fn loads(text: &str, name: &str) -> Result<Extension> {
    let mut lines = Lines::new(text, name)?;
    let header = lines.next("the header")?;
    if header != HEADER {
        let shown: String = header.chars().take(60).collect();
        return Err(lines.error(&format!(
            "not a superword extension model of this version ({}; this superword reads '{HEADER}')",
            crate::input::py_repr(&shown)
        )));
    }
    lines.expect("pattern")?;
    let pattern = lines.json_string("the pattern")?;
    Matcher::new(&pattern, &format!("{name}, line {}: the pattern", lines.at))?;
    lines.expect("merge_pattern")?;
    let merge_pattern = lines.json_string("the merge pattern")?;
    if merge_pattern != MERGE_PATTERN {
        return Err(lines.error(&format!(
            "merge pattern {}; this superword reads {} only",
            crate::input::py_repr(&merge_pattern),
            crate::input::py_repr(MERGE_PATTERN)
        )));
    }

    // the base
    lines.expect("base")?;
    let n = lines.count("base tokens")?;
    let mut base: Vec<(TokenId, Vec<u8>)> = Vec::with_capacity(n);
    let mut known: FxHashSet<Vec<u8>> = FxHashSet::default();
    let mut previous: i128 = -1;
    // (as for ranks files: the encoder sizes tables by the largest id)
    let limit = crate::ranks::id_limit(n);
    for _ in 0..n {
        let f = lines.fields(2, "'<base64 token> <id>'")?;
        let raw = lines.token(f[0])?;
        let i = lines.uint(f[1], "the id")?;
        if i as i128 <= previous {
            return Err(lines.error(&format!("id {i} does not follow {previous}: base ids ascend")));
        }
        if i > u128::from(MAX_ID) {
            return Err(lines.error(&format!("id {i} is past 2**31 - 1")));
        }
        if i >= u128::from(limit) {
            return Err(lines.error(&format!(
                "id {i} is far beyond the {n} tokens of the base (ids may leave gaps, but must stay below {limit})"
            )));
        }
        if !known.insert(raw.clone()) {
            return Err(lines.error("the token appears twice"));
        }
        previous = i as i128;
        base.push((i as TokenId, raw));
    }
    if base.is_empty() {
        return Err(lines.error("the base has no tokens"));
    }

    // special tokens
    lines.expect("special_tokens")?;
    let k = lines.count("special tokens")?;
    let mut used: FxHashSet<u64> = base.iter().map(|(i, _)| u64::from(*i)).collect();
    let mut special: Vec<(String, TokenId)> = Vec::with_capacity(k);
    let mut names: FxHashSet<String> = FxHashSet::default();
    for _ in 0..k {
        let line = lines.next("'<id> <JSON string>'")?;
        let (head, rest) = line.split_once(' ').unwrap_or((line, ""));
        let i = lines.uint(head, "the special token's id")?;
        let s = match serde_json::from_str::<serde_json::Value>(rest) {
            Ok(serde_json::Value::String(s)) if !s.is_empty() => s,
            _ => return Err(lines.error("expected '<id> <special token as a JSON string>'")),
        };
        let shown = crate::input::py_repr(&s);
        if i < u128::from(u64::MAX) && used.contains(&(i as u64)) {
            return Err(lines.error(&format!(
                "special token {shown} has id {i}, which another token has"
            )));
        }
        if names.contains(&s) {
            return Err(lines.error(&format!("special token {shown} appears twice")));
        }
        if i >= u128::from(u32::MAX) {
            return Err(lines.error(&format!("special token id {i} is not below 2**32 - 1")));
        }
        used.insert(i as u64);
        names.insert(s.clone());
        special.push((s, i as TokenId));
    }
    special.sort_unstable_by_key(|(_, i)| *i);

    // superwords
    lines.expect("superwords")?;
    let s_count = lines.count("superwords")?;
    let mut superwords: Vec<(TokenId, Vec<u8>, u64)> = Vec::with_capacity(s_count);
    let mut first: u128 = 0;
    for k in 0..s_count {
        let f = lines.fields(3, "'<id> <base64 token> <count>'")?;
        let i = lines.uint(f[0], "the id")?;
        let raw = lines.token(f[1])?;
        let c = lines.uint(f[2], "the count")?;
        if k == 0 {
            // the first free id after the base: every base id and special id below it, + 1
            first = (used.iter().map(|&j| u128::from(j)).filter(|&j| j < i).max()).map_or(0, |m| m + 1);
            let end = i + s_count as u128;
            let clash = special.iter().any(|(_, j)| (i..end).contains(&u128::from(*j)));
            if i != first || clash || (i < u128::from(u64::MAX) && used.contains(&(i as u64))) {
                return Err(lines.error(&format!(
                    "the superwords' ids {i}..{} must start right after the base's ids and special ids ({first}) and hold no special id",
                    end - 1
                )));
            }
        }
        if i != first + k as u128 {
            return Err(lines.error(&format!(
                "superword id {i} should be {} (ids follow one another)",
                first + k as u128
            )));
        }
        if i > u128::from(MAX_ID) {
            return Err(lines.error(&format!("id {i} is past 2**31 - 1")));
        }
        if known.contains(&raw) {
            return Err(lines.error("the superword's bytes are a token already"));
        }
        if c > u128::from(u64::MAX) {
            return Err(lines.error("the count does not fit 64 bits"));
        }
        known.insert(raw.clone());
        superwords.push((i as TokenId, raw, c as u64));
    }

    // supermerges: each part a token made before it; new bytes are the next superword
    let mut by_id: FxHashMap<u64, &[u8]> = base.iter().map(|(i, t)| (u64::from(*i), t.as_slice())).collect();
    by_id.extend(superwords.iter().map(|(i, t, _)| (u64::from(*i), t.as_slice())));
    let mut made: FxHashSet<&[u8]> = base.iter().map(|(_, t)| t.as_slice()).collect();
    lines.expect("supermerges")?;
    let m_count = lines.count("supermerges")?;
    let mut supermerges = Vec::with_capacity(m_count);
    let mut pending = 0;
    let what = [
        "the index",
        "the left id",
        "the right id",
        "the count",
        "the flag",
    ];
    for k in 0..m_count {
        let f = lines.fields(5, "'<index> <left id> <right id> <count> <flag>'")?;
        let mut v = [0u128; 5];
        for (j, (field, w)) in f.iter().zip(what).enumerate() {
            v[j] = lines.uint(field, w)?;
        }
        let [index, left, right, c, flag] = v;
        if index != k as u128 {
            return Err(lines.error(&format!("supermerge index {index} should be {k}")));
        }
        let mut parts: [&[u8]; 2] = [&[], &[]];
        for (j, (side, i)) in [("left", left), ("right", right)].into_iter().enumerate() {
            match (i < u128::from(u64::MAX))
                .then(|| by_id.get(&(i as u64)))
                .flatten()
            {
                Some(t) if made.contains(t) => parts[j] = t,
                _ => {
                    return Err(lines.error(&format!(
                        "the {side} part {i} is no token made before this supermerge"
                    )))
                }
            }
        }
        if flag > 1 {
            return Err(lines.error("the flag is not 0 or 1"));
        }
        if c > u128::from(u64::MAX) {
            return Err(lines.error("the count does not fit 64 bits"));
        }
        let result = [parts[0], parts[1]].concat();
        if !made.contains(result.as_slice()) {
            if pending >= superwords.len() || superwords[pending].1 != result {
                return Err(
                    lines.error("this supermerge makes new bytes that are not the next superword listed")
                );
            }
            made.insert(superwords[pending].1.as_slice());
            pending += 1;
        }
        supermerges.push(SuperMerge {
            left: left as TokenId,
            right: right as TokenId,
            count: c as u64,
            flag: flag == 1,
        });
    }
    if pending != superwords.len() {
        return Err(lines.error(&format!(
            "superword {} is made by no supermerge",
            superwords[pending].0
        )));
    }
    if lines.at != lines.lines.len() {
        lines.at += 1;
        return Err(lines.error("unexpected text after the supermerges"));
    }
    Ok(Extension {
        base,
        pattern,
        special,
        superwords,
        supermerges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extend::tests::small;

    #[test]
    fn the_model_file_reads_back_as_written() {
        let ext = small();
        let text = dumps(&ext);
        assert!(text.starts_with("superword extension v1\npattern\n"));
        assert_eq!(loads(&text, "m").unwrap(), ext);
    }

    #[test]
    fn a_damaged_file_is_refused_with_its_line() {
        let text = dumps(&small());
        let cases = [
            (
                text.replacen("superword extension v1", "superword extension v9", 1),
                "line 1: not a superword",
            ),
            (
                text.replace("0 258 259 3 1", "0 258 301 3 1"),
                "no token made before",
            ),
            (
                text.replace("\nsuperwords\n1\n", "\nsuperwords\n9\n"),
                "announced",
            ),
            (text[..text.len() - 1].to_string(), "newline"),
        ];
        for (bad, why) in cases {
            let err = loads(&bad, "m.model").unwrap_err().to_string();
            assert!(err.contains("m.model") && err.contains(why), "{err}");
        }
    }
}
