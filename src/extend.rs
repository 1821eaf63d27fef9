//! Superwords on top of an existing byte-level BPE (SPEC section 10), as
//! `reference/extend.py`.
//!
//! The base (a tiktoken ranks model: cl100k_base, a Llama-3 `tokenizer.json` read as ranks,
//! any `.tiktoken` file) keeps its pattern, tokens and ids.  Training is SuperBPE's phase 2
//! on the letter runs counted with the base's pattern, cut at every pretoken the base does not
//! encode as one token; superwords take the ids after the base's largest id (special tokens
//! included).  Encoding is the base's encoding of every pretoken, then the supermerges over
//! each run of single-token pretokens that occur in some supermerge (SPEC 7.4).
//!
//! The model file ("superword extension v1", SPEC 10.5) holds the base whole, so it is all a
//! tokenizer needs; the reader checks every line of it.

use std::fmt::Write as _;

use base64::Engine as _;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::count::Counts;
use crate::encode::decode::TokenBytes;
use crate::encode::{Allowed, Encode, Part, Specials};
use crate::error::{Error, Result};
use crate::key::ByteMap;
use crate::pretokenize::{Matcher, MERGE_PATTERN};
use crate::ranks::byte_pair_parts;
use crate::tokens::{TokenId, Vocab};
use crate::train::candidates::{flat_candidates, Threshold};
use crate::train::superbpe::{train_superbpe, SuperCandidates};
use crate::train::Control;

/// The first line of an extension model file; the number is the format's version.
pub const HEADER: &str = "superword extension v1";
/// The largest id a superword may take: ids are 32-bit, and the upper half is left for
/// special tokens registered later.
pub const MAX_ID: u64 = (1 << 31) - 1;

/// Candidates holding fewer tokens than this are not cut before phase 2 (as for SuperBPE in
/// `train/mod.rs`: the cut pays on large corpora only; any cut gives the same model).
const SMALL_CANDIDATES: usize = 1 << 16;

/// One supermerge, in the model's ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuperMerge {
    pub left: TokenId,
    pub right: TokenId,
    pub count: u64,
    pub flag: bool,
}

/// A base ranks model with supermerges on top.
#[derive(Clone, Debug, PartialEq)]
pub struct Extension {
    /// the base's tokens, ids ascending
    pub base: Vec<(TokenId, Vec<u8>)>,
    pub pattern: String,
    /// special tokens (the base's, and any registered later), ids ascending
    pub special: Vec<(String, TokenId)>,
    /// `(id, bytes, count)` of each superword, ids ascending from the first free one
    pub superwords: Vec<(TokenId, Vec<u8>, u64)>,
    pub supermerges: Vec<SuperMerge>,
}

impl Extension {
    /// One after every base id and special id: where the superwords start.
    pub fn first_free_id(&self) -> u64 {
        let base = self.base.iter().map(|(i, _)| *i);
        let special = self.special.iter().map(|(_, i)| *i);
        base.chain(special).max().map_or(0, |m| u64::from(m) + 1)
    }

    /// The first superword's id, or where it would be.
    pub fn base_end(&self) -> u64 {
        match self.superwords.first() {
            Some((i, _, _)) => u64::from(*i),
            None => self.first_free_id(),
        }
    }
}

// ------------------------------------------------------------------------------------------
// training (SPEC 10.2-10.3)

/// Learn `n` supermerges on top of the base.  `counts` must have been made with the base's
/// pattern in simple mode, with letter runs (the Python front checks the count file's header).
pub fn train(
    counts: Counts,
    base: Vec<(TokenId, Vec<u8>)>,
    pattern: String,
    special: Vec<(String, TokenId)>,
    n: usize,
    control: &dyn Control,
) -> Result<Extension> {
    let mut base = base;
    base.sort_unstable_by_key(|(i, _)| *i);
    let mut special = special;
    special.sort_unstable_by_key(|(_, i)| *i);
    let mut ext = Extension {
        base,
        pattern,
        special,
        superwords: Vec::new(),
        supermerges: Vec::new(),
    };
    let first = ext.first_free_id();
    if n == 0 || first + n as u64 - 1 > MAX_ID {
        return Err(Error::Value(format!(
            "supermerges={n} would give ids up to {}, past 2**31 - 1 = {MAX_ID} (the base's ids end at {})",
            first + n as u64 - 1,
            first as i64 - 1
        )));
    }
    // 1. the base as training's vocabulary: its tokens in id order (the merge loop's ids are
    //    positions; ties are broken by bytes, SPEC 2.4, so the ids themselves do not matter)
    let mut vocab = Vocab::default();
    vocab.reserve(ext.base.len() + n);
    for (_, t) in &ext.base {
        vocab.add(t);
    }
    let n_base = vocab.len();
    // 2. candidates: letter runs cut at pretokens that are not one base token (SPEC 10.2)
    let token_of: Vec<Option<TokenId>> = counts
        .words
        .par_iter()
        .map(|(w, _)| vocab.id(w.as_bytes()))
        .collect();
    let flat = flat_candidates(counts.runs, &token_of);
    drop(token_of);
    let candidates = SuperCandidates::Flat(flat);
    control.progress(
        "candidates",
        candidates.tokens() as u64,
        candidates.tokens() as u64,
    )?;
    let first_cut = (candidates.tokens() >= SMALL_CANDIDATES).then_some(Threshold::Guess(n));
    // 3. phase 2 (SPEC 5): exactly as SuperBPE's, the base standing for the word model
    let order: Vec<TokenId> = (0..n_base as TokenId).collect();
    let s = train_superbpe(vocab, &order, candidates, n, first_cut, control)?;
    // 4. the model's ids: the base's own, then the superwords from the first free id
    let mut id_of: Vec<TokenId> = ext.base.iter().map(|(i, _)| *i).collect();
    id_of.resize(s.vocab.len(), TokenId::MAX);
    for (k, &t) in s.order[n_base..].iter().enumerate() {
        let id = (first + k as u64) as TokenId;
        id_of[t as usize] = id;
        ext.superwords
            .push((id, s.vocab.bytes(t).to_vec(), s.counts[t as usize]));
    }
    ext.supermerges = (s.supermerges.iter())
        .map(|m| SuperMerge {
            left: id_of[m.pair.0 as usize],
            right: id_of[m.pair.1 as usize],
            count: m.count,
            flag: m.flag,
        })
        .collect();
    Ok(ext)
}

// ------------------------------------------------------------------------------------------
// the model file (SPEC 10.5)

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

// ------------------------------------------------------------------------------------------
// encoding (SPEC 10.4)

/// An extension model ready to encode.
pub struct ExtensionEncoder {
    pub ext: Extension,
    matcher: Matcher,
    /// the base's tokens: the shortcut and the byte-pair merge of each pretoken
    base: ByteMap,
    /// every token (base and superwords), for `id_of`
    all: ByteMap,
    decoder: TokenBytes,
    specials: Specials,
    /// (left, right) -> (index of the first supermerge of the pair, the id it makes)
    super_rank: FxHashMap<(TokenId, TokenId), (u32, TokenId)>,
    /// the tokens that are a part of some supermerge
    parts: FxHashSet<TokenId>,
    superword_ids: std::ops::Range<u64>,
    top: u32,
}

impl ExtensionEncoder {
    pub fn new(ext: Extension) -> Result<ExtensionEncoder> {
        let matcher = Matcher::new(&ext.pattern, "pattern")?;
        let base = ByteMap::new(ext.base.iter().map(|(i, t)| (t.as_slice(), *i)))?;
        let supers = ext.superwords.iter().map(|(i, t, _)| (t.as_slice(), *i));
        let all = ByteMap::new(ext.base.iter().map(|(i, t)| (t.as_slice(), *i)).chain(supers))?;
        let decoder = TokenBytes::new(
            ext.base
                .iter()
                .map(|(i, t)| (*i, t.as_slice()))
                .chain(ext.superwords.iter().map(|(i, t, _)| (*i, t.as_slice()))),
        );
        let specials = Specials::new(ext.special.clone());
        let mut super_rank = FxHashMap::default();
        let mut parts = FxHashSet::default();
        for (k, m) in ext.supermerges.iter().enumerate() {
            let joined = [decoder_bytes(&ext, m.left), decoder_bytes(&ext, m.right)].concat();
            let made = all
                .get(&joined)
                .ok_or_else(|| Error::internal("a supermerge makes bytes that are no token"))?;
            super_rank.entry((m.left, m.right)).or_insert((k as u32, made));
            parts.insert(m.left);
            parts.insert(m.right);
        }
        let start = ext.base_end();
        let superword_ids = start..start + ext.superwords.len() as u64;
        let top = (ext.base.iter().map(|(i, _)| *i))
            .chain(ext.special.iter().map(|(_, i)| *i))
            .chain(ext.superwords.iter().map(|(i, _, _)| *i))
            .max()
            .unwrap_or(0);
        Ok(ExtensionEncoder {
            ext,
            matcher,
            base,
            all,
            decoder,
            specials,
            super_rank,
            parts,
            superword_ids,
            top,
        })
    }

    /// One more than the largest id, special tokens included.
    pub fn vocab_size(&self) -> usize {
        self.top as usize + 1
    }

    pub fn id_of(&self, bytes: &[u8]) -> Option<TokenId> {
        self.all.get(bytes)
    }

    pub fn is_superword(&self, id: i64) -> bool {
        id >= 0 && self.superword_ids.contains(&(id as u64))
    }

    pub fn token_bytes(&self, id: TokenId) -> Option<Vec<u8>> {
        self.decode_bytes(&[i64::from(id)]).ok()
    }

    /// This encoder with `tokens` added as special tokens with the next free ids.
    pub fn with_special_tokens(&self, tokens: Vec<String>) -> Result<ExtensionEncoder> {
        let mut ext = self.ext.clone();
        let mut next = Some(self.top + 1).filter(|_| self.top < u32::MAX);
        let mut seen: FxHashSet<String> = ext.special.iter().map(|(s, _)| s.clone()).collect();
        for t in tokens {
            if !seen.insert(t.clone()) {
                return Err(Error::Value(format!("special token {t:?} is already registered")));
            }
            let id = next.ok_or_else(|| crate::tokenizer::no_id_left(&t))?;
            ext.special.push((t, id));
            next = id.checked_add(1);
        }
        ExtensionEncoder::new(ext)
    }

    /// The base's ids of one pretoken that is not a base token (tiktoken's merge).
    fn merge_piece(&self, raw: &[u8], out: &mut Vec<TokenId>) -> Result<()> {
        let bounds = byte_pair_parts(raw, |b| self.base.get(b));
        for w in bounds.windows(2) {
            let part = &raw[w[0]..w[1]];
            let id = self.base.get(part).ok_or_else(|| {
                Error::Value(format!(
                    "the base has no token for the bytes {part:?}: it lacks single bytes"
                ))
            })?;
            out.push(id);
        }
        Ok(())
    }

    /// SPEC 7.4 on the run `out[start..]`: the smallest-index supermerge at all its places,
    /// left to right, again and again.  Runs of up to [`SCAN_RUN`] tokens (nearly all of them
    /// in prose) take a plain scan, a pass per supermerge applied; longer ones a heap, so that
    /// a run of a million repeated words costs O(n log n), not a pass per supermerge.
    fn supermerge(&self, out: &mut Vec<TokenId>, start: usize) {
        let rank = |a: TokenId, b: TokenId| self.super_rank.get(&(a, b)).copied();
        if out.len() - start <= SCAN_RUN {
            merge_scan(out, start, rank);
        } else {
            let mut run = out.split_off(start);
            merge_heap(&mut run, rank);
            out.extend_from_slice(&run);
        }
    }

    fn flush(&self, out: &mut Vec<TokenId>, run: &mut Option<usize>) {
        if let Some(start) = run.take() {
            if out.len() - start >= 2 {
                self.supermerge(out, start);
            }
        }
    }

    /// Append the ids of `text` (no special tokens) to `out`.
    fn encode_into(&self, text: &str, out: &mut Vec<TokenId>) -> Result<()> {
        let mut run: Option<usize> = None;
        let mut error = None;
        self.matcher.for_each_piece(text, &mut |piece| {
            let raw = piece.as_bytes();
            match self.base.get(raw) {
                Some(id) if self.parts.contains(&id) => {
                    run.get_or_insert(out.len());
                    out.push(id);
                }
                Some(id) => {
                    self.flush(out, &mut run);
                    out.push(id);
                }
                None => {
                    self.flush(out, &mut run);
                    if let Err(e) = self.merge_piece(raw, out) {
                        error.get_or_insert(e);
                    }
                }
            }
        })?;
        self.flush(out, &mut run);
        error.map_or(Ok(()), Err)
    }
}

/// Runs longer than this many tokens are merged with a heap (see `ExtensionEncoder::supermerge`).
const SCAN_RUN: usize = 64;

/// The scan of SPEC 7.4 on `out[start..]`, in place; `rank(a, b)` is `(index, merged id)` of
/// the pair's supermerge, if any.
fn merge_scan(
    out: &mut Vec<TokenId>,
    start: usize,
    rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>,
) {
    loop {
        let mut best: Option<(u32, TokenId, (TokenId, TokenId))> = None;
        for w in out[start..].windows(2) {
            if let Some((k, made)) = rank(w[0], w[1]) {
                if best.is_none_or(|(b, _, _)| k < b) {
                    best = Some((k, made, (w[0], w[1])));
                }
            }
        }
        let Some((_, made, pair)) = best else { return };
        let (mut read, mut write) = (start, start);
        while read < out.len() {
            if read + 1 < out.len() && (out[read], out[read + 1]) == pair {
                out[write] = made;
                read += 2;
            } else {
                out[write] = out[read];
                read += 1;
            }
            write += 1;
        }
        out.truncate(write);
    }
}

/// The same steps as [`merge_scan`] in O(n log n): a min-heap of `(index, position, left,
/// right)` stands for the scan's search.  Entries of one index, leftmost first, are one pass
/// of the scan; an entry whose tokens have changed since it was pushed is skipped (it was
/// merged away, or overlaps an occurrence just merged).  Pairs a merge makes are pushed when
/// its pass ends, as the scan sees them only in its next pass.  Tokens form a linked list by
/// position.  Checked against the scan by `the_heap_merges_runs_as_the_scan_does`.
fn merge_heap(tokens: &mut Vec<TokenId>, rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let n = tokens.len();
    if n < 2 {
        return;
    }
    const NONE: usize = usize::MAX;
    let mut next: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    let mut alive = vec![true; n];
    let mut heap: BinaryHeap<Reverse<(u32, usize, TokenId, TokenId)>> = (0..n - 1)
        .filter_map(|i| {
            rank(tokens[i], tokens[i + 1]).map(|(r, _)| Reverse((r, i, tokens[i], tokens[i + 1])))
        })
        .collect();
    let mut made = Vec::new();
    while let Some(&Reverse((current, _, _, _))) = heap.peek() {
        while let Some(&Reverse((r, i, a, b))) = heap.peek() {
            if r != current {
                break;
            }
            heap.pop();
            let j = next[i];
            if !alive[i] || j >= n || tokens[i] != a || tokens[j] != b {
                continue;
            }
            let Some((_, merged)) = rank(a, b) else { continue };
            tokens[i] = merged;
            alive[j] = false;
            next[i] = next[j];
            if next[i] < n {
                prev[next[i]] = i;
            }
            if prev[i] != NONE {
                made.push((prev[i], i));
            }
            if next[i] < n {
                made.push((i, next[i]));
            }
        }
        for (p, q) in made.drain(..) {
            if !alive[p] || !alive[q] || next[p] != q {
                continue;
            }
            if let Some((r, _)) = rank(tokens[p], tokens[q]) {
                heap.push(Reverse((r, p, tokens[p], tokens[q])));
            }
        }
    }
    let mut write = 0;
    for read in 0..n {
        if alive[read] {
            tokens[write] = tokens[read];
            write += 1;
        }
    }
    tokens.truncate(write);
}

fn decoder_bytes(ext: &Extension, id: TokenId) -> &[u8] {
    // (only while building the encoder: the model's ids were checked by the reader or made by
    // training, so every part is found)
    if let Ok(k) = ext.base.binary_search_by_key(&id, |(i, _)| *i) {
        return &ext.base[k].1;
    }
    match ext.superwords.binary_search_by_key(&id, |(i, _, _)| *i) {
        Ok(k) => &ext.superwords[k].1,
        Err(_) => &[],
    }
}

impl Encode for ExtensionEncoder {
    fn encode_ordinary(&self, text: &str) -> Result<Vec<TokenId>> {
        let mut out = Vec::with_capacity(text.len() / 3);
        self.encode_into(text, &mut out)?;
        Ok(out)
    }

    fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>> {
        self.decoder.decode(
            ids,
            |id| self.specials.text(id),
            |id, position| {
                Error::Value(format!(
                    "token id {id} at position {position} is out of range (no token has this id)"
                ))
            },
        )
    }

    fn token(&self, id: TokenId) -> &[u8] {
        decoder_bytes(&self.ext, id)
    }

    fn allowed(&self, names: &[String]) -> Result<Allowed> {
        self.specials.allowed(names)
    }

    fn encode_append(&self, text: &str, allowed: &Allowed, out: &mut Vec<TokenId>) -> Result<()> {
        allowed.split(text, |part| match part {
            Part::Text(t) => self.encode_into(t, out),
            Part::Special(id) => {
                out.push(id);
                Ok(())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Extension {
        let mut base: Vec<(TokenId, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        for (i, t) in [
            (256, " c"),
            (257, "at"),
            (258, " cat"),
            (259, " sat"),
            (260, " s"),
        ] {
            base.push((i, t.as_bytes().to_vec()));
        }
        Extension {
            base,
            pattern: r" ?\p{L}+| ?[^\s\p{L}]+|\s+".into(),
            special: vec![("<|end|>".into(), 300)],
            superwords: vec![(301, b" cat sat".to_vec(), 3)],
            supermerges: vec![SuperMerge {
                left: 258,
                right: 259,
                count: 3,
                flag: true,
            }],
        }
    }

    #[test]
    fn the_model_file_reads_back_as_written() {
        let ext = small();
        let text = dumps(&ext);
        assert!(text.starts_with("superword extension v1\npattern\n"));
        assert_eq!(loads(&text, "m").unwrap(), ext);
    }

    #[test]
    fn encoding_applies_supermerges_over_single_token_runs_only() {
        let enc = ExtensionEncoder::new(small()).unwrap();
        assert_eq!(
            enc.encode_ordinary(" cat sat, a cat").unwrap(),
            vec![301, 44, 32, 97, 258]
        );
        let allowed = enc.allowed(&["<|end|>".to_string()]).unwrap();
        let mut out = Vec::new();
        enc.encode_append(" cat<|end|> sat", &allowed, &mut out).unwrap();
        assert_eq!(out, vec![258, 300, 259]);
        assert_eq!(enc.decode_bytes(&[301, 300]).unwrap(), b" cat sat<|end|>");
    }

    #[test]
    fn the_heap_merges_runs_as_the_scan_does() {
        // random supermerge tables over a few tokens (merged ids that may be parts of other
        // pairs), random runs: the heap's result is the scan's
        let mut rng = crate::XorShift(0x9E37_79B9_7F4A_7C15);
        for round in 0..400 {
            let alphabet = 2 + rng.below(5) as u32;
            let mut table: FxHashMap<(TokenId, TokenId), (u32, TokenId)> = FxHashMap::default();
            for k in 0..rng.below(12) as u32 {
                let (a, b) = (
                    rng.below(alphabet as u64 + 4) as u32,
                    rng.below(alphabet as u64 + 4) as u32,
                );
                let made = alphabet + rng.below(6) as u32;
                table.entry((a, b)).or_insert((k, made)); // (an index per pair, as in a model)
            }
            let len = 1 + rng.below(if round % 4 == 0 { 300 } else { 12 }) as usize;
            let run: Vec<TokenId> = (0..len).map(|_| rng.below(alphabet as u64) as u32).collect();
            let rank = |a, b| table.get(&(a, b)).copied();
            let mut scanned = run.clone();
            merge_scan(&mut scanned, 0, rank);
            let mut heaped = run.clone();
            merge_heap(&mut heaped, rank);
            assert_eq!(heaped, scanned, "round {round}, run {run:?}, table {table:?}");
        }
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
