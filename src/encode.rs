//! Encoding and decoding (SPEC section 7), the same steps as `reference/encode.py`:
//!
//! 1. special tokens are split off first (longest match wins);
//! 2. the rest is pre-tokenized with the model's settings;
//! 3. a pretoken whose bytes are a *reachable* token is that token (the vocabulary shortcut);
//!    any other starts from its bytes and applies regular merges, smallest index first and
//!    never going back to a smaller index, all non-overlapping occurrences left to right;
//! 4. runs of two or more pretokens that became one token occurring in some supermerge get
//!    supermerges, smallest index first (after the optional greedy n-gram cut).

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{Error, Result};
use crate::key::{Key, KeyMap, Lookup};
use crate::model::Model;
use crate::pretokenize::Pretokenizer;
use crate::tokens::TokenId;
use crate::train::merging::apply_merge;
use crate::train::ngram::{prefix_set, split_one};

/// Pieces longer than this (in bytes) are merged with a heap instead of a scan.
const LONG_PIECE: usize = 48;

/// The greedy-split n-gram table and the prefixes of its n-grams.
type NgramTables = (FxHashSet<Box<[TokenId]>>, FxHashSet<Box<[TokenId]>>);

pub struct Encoder {
    pub pretokenizer: Pretokenizer,
    vocab: Vec<Vec<u8>>,
    ids: FxHashMap<Vec<u8>, TokenId>,
    byte_ids: [Option<TokenId>; 256],
    /// regular merges: pair -> (index, result)
    ranks: FxHashMap<(TokenId, TokenId), (u32, TokenId)>,
    super_ranks: FxHashMap<(TokenId, TokenId), (u32, TokenId)>,
    /// per token: bit 1 = left part of some supermerge, bit 2 = right part (SPEC 7.4's "occurs
    /// in some supermerge"; the bits also skip most pair lookups in `supermerge`)
    super_part: Vec<u8>,
    reachable: Vec<bool>,
    /// reachable tokens by bytes: the shortcut's table (inline keys, see `key.rs`)
    shortcut: KeyMap,
    ngrams: Option<NgramTables>,
    /// special tokens by text
    pub special: Vec<(String, TokenId)>,
}

impl Encoder {
    pub fn new(model: &Model, greedy_split: bool) -> Result<Encoder> {
        let s = &model.settings;
        let pretokenizer = Pretokenizer::new(
            &s.main_regex,
            s.script_specific_regex.as_deref(),
            s.script_specific_scripts.as_deref(),
        )?;
        let ids: FxHashMap<Vec<u8>, TokenId> = model
            .vocab
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as TokenId))
            .collect();
        let mut byte_ids = [None; 256];
        for b in 0..=255u8 {
            byte_ids[b as usize] = ids.get(&[b][..]).copied();
        }
        let table =
            |merges: &[crate::model::Merge]| -> Result<FxHashMap<(TokenId, TokenId), (u32, TokenId)>> {
                let mut out = FxHashMap::default();
                for (i, m) in merges.iter().enumerate() {
                    let merged = [m.left.as_slice(), m.right.as_slice()].concat();
                    let find = |t: &[u8]| {
                        ids.get(t).copied().ok_or_else(|| {
                            Error::Value(format!(
                                "model is inconsistent: merge result {} is not in the vocabulary",
                                py_bytes(t)
                            ))
                        })
                    };
                    let (l, r, m_id) = (find(&m.left)?, find(&m.right)?, find(&merged)?);
                    out.entry((l, r)).or_insert((i as u32, m_id));
                }
                Ok(out)
            };
        let ranks = table(&model.merges)?;
        let super_ranks = table(&model.supermerges)?;
        let mut super_part = vec![0u8; model.vocab.len()];
        for &(l, r) in super_ranks.keys() {
            super_part[l as usize] |= 1;
            super_part[r as usize] |= 2;
        }
        let ngrams = if greedy_split {
            let table = model.ngrams.as_ref().ok_or_else(|| {
                Error::Value(
                    "greedy_split=True needs a model trained with greedy_split=True (this model stores no n-gram table)".into(),
                )
            })?;
            // n-grams of phase-1 tokens that this vocabulary lacks can never match a run
            let set: FxHashSet<Box<[TokenId]>> = table
                .iter()
                .filter_map(|g| {
                    g.iter()
                        .map(|t| ids.get(t).copied())
                        .collect::<Option<Box<[TokenId]>>>()
                })
                .collect();
            let prefixes = prefix_set(&set);
            Some((set, prefixes))
        } else {
            None
        };
        let mut enc = Encoder {
            pretokenizer,
            vocab: model.vocab.clone(),
            ids,
            byte_ids,
            ranks,
            super_ranks,
            super_part,
            reachable: vec![false; model.vocab.len()],
            shortcut: KeyMap::default(),
            ngrams,
            special: model.special_tokens.clone(),
        };
        enc.reachable = enc.find_reachable(&model.is_super)?;
        enc.shortcut = (0..enc.vocab.len())
            .filter(|&i| enc.reachable[i])
            .map(|i| (Key::from_bytes(&enc.vocab[i]), i as TokenId))
            .collect();
        Ok(enc)
    }

    /// Word tokens whose text, encoded alone without the shortcut, is that one token.
    fn find_reachable(&self, is_super: &[bool]) -> Result<Vec<bool>> {
        (0..self.vocab.len())
            .into_par_iter()
            .map(|id| {
                if is_super[id] {
                    return Ok(false);
                }
                let Ok(text) = std::str::from_utf8(&self.vocab[id]) else {
                    return Ok(false);
                };
                let mut out = Vec::new();
                self.encode_into(text, false, &mut out)?;
                Ok(out.len() == 1)
            })
            .collect()
    }

    /// The token a pretoken's bytes are when it is a reachable token (the shortcut's test).
    pub fn single_token(&self, bytes: &[u8]) -> Option<TokenId> {
        self.ids
            .get(bytes)
            .copied()
            .filter(|&id| self.reachable[id as usize])
    }

    pub fn vocab(&self) -> &[Vec<u8>] {
        &self.vocab
    }

    pub fn id_of(&self, bytes: &[u8]) -> Option<TokenId> {
        self.ids.get(bytes).copied()
    }

    /// Apply the regular merges to one pretoken's bytes (step 3, no shortcut).
    fn merge_pretoken(&self, raw: &[u8], out: &mut Vec<TokenId>) {
        let tokens: Vec<TokenId> = raw
            .iter()
            .map(|&b| self.byte_ids[b as usize].expect("every byte of UTF-8 text has a token"))
            .collect();
        merge_by_rank(tokens, |a, b| self.ranks.get(&(a, b)).copied(), out);
    }

    /// Supermerges on one run of single-token pretokens, smallest index first.
    fn supermerge(&self, run: &mut Vec<TokenId>) {
        let part = &self.super_part;
        while run.len() > 1 {
            let mut best: Option<(u32, (TokenId, TokenId), TokenId)> = None;
            for w in run.windows(2) {
                if part[w[0] as usize] & 1 == 0 || part[w[1] as usize] & 2 == 0 {
                    continue; // no supermerge starts with this left or ends with this right
                }
                if let Some(&(rank, merged)) = self.super_ranks.get(&(w[0], w[1])) {
                    if best.is_none_or(|b| rank < b.0) {
                        best = Some((rank, (w[0], w[1]), merged));
                    }
                }
            }
            let Some((_, pair, merged)) = best else { break };
            apply_merge(run, pair, merged);
        }
    }

    fn flush(&self, run: &mut Vec<TokenId>, out: &mut Vec<TokenId>) {
        if run.len() >= 2 {
            match &self.ngrams {
                Some((table, prefixes)) => {
                    let whole = std::mem::take(run);
                    split_one(&whole, table, prefixes, |piece| {
                        let mut p = piece.to_vec();
                        self.supermerge(&mut p);
                        out.extend_from_slice(&p);
                    });
                }
                None => {
                    self.supermerge(run);
                    out.extend_from_slice(run);
                }
            }
        } else {
            out.extend_from_slice(run);
        }
        run.clear();
    }

    fn encode_into(&self, text: &str, shortcut: bool, out: &mut Vec<TokenId>) -> Result<()> {
        let mut run: Vec<TokenId> = Vec::new();
        let mut piece_tokens: Vec<TokenId> = Vec::new();
        self.pretokenizer.for_each(text, |piece| {
            piece_tokens.clear();
            let raw = piece.as_bytes();
            match self.shortcut.get(&Lookup(raw)) {
                Some(&id) if shortcut => piece_tokens.push(id),
                _ => self.merge_pretoken(raw, &mut piece_tokens),
            }
            if piece_tokens.len() == 1 && self.super_part[piece_tokens[0] as usize] != 0 {
                run.push(piece_tokens[0]);
            } else {
                self.flush(&mut run, out);
                out.extend_from_slice(&piece_tokens);
            }
        })?;
        self.flush(&mut run, out);
        Ok(())
    }

    /// Token ids of `text`, special-token strings treated as text.
    pub fn encode_ordinary(&self, text: &str) -> Result<Vec<TokenId>> {
        let mut out = Vec::with_capacity(text.len() / 3);
        self.encode_into(text, true, &mut out)?;
        Ok(out)
    }

    /// Token ids of `text`, recognising the special tokens in `allowed` (longest match first).
    pub fn encode(&self, text: &str, allowed: &[String]) -> Result<Vec<TokenId>> {
        let mut out = Vec::with_capacity(text.len() / 3);
        Encode::encode_append(self, text, allowed, &mut out)?;
        Ok(out)
    }

    /// Concatenated token bytes; an unknown id is an error naming it and its position.
    pub fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for (position, &id) in ids.iter().enumerate() {
            if id >= 0 && (id as usize) < self.vocab.len() {
                out.extend_from_slice(&self.vocab[id as usize]);
            } else if let Some((s, _)) = self.special.iter().find(|(_, sid)| *sid as i64 == id) {
                out.extend_from_slice(s.as_bytes());
            } else {
                let mut specials: Vec<TokenId> = self.special.iter().map(|(_, i)| *i).collect();
                specials.sort_unstable();
                let extra = if specials.is_empty() {
                    ")".to_string()
                } else {
                    format!(" and special ids {specials:?})")
                };
                return Err(Error::Value(format!(
                    "token id {id} at position {position} is out of range (vocabulary has ids 0..{}{extra}",
                    self.vocab.len() as i64 - 1
                )));
            }
        }
        Ok(out)
    }
}

/// A byte string as Python writes it (`b'...'`), for messages shared with the reference.
pub fn py_bytes(t: &[u8]) -> String {
    let mut s = String::from("b'");
    for &b in t {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'\'' => s.push_str("\\'"),
            b'\t' => s.push_str("\\t"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s.push('\'');
    s
}

/// Merge `tokens` by rank: repeatedly take the adjacent pair with the smallest rank (never
/// going back to a smaller rank than the last one applied) and apply it at all its
/// non-overlapping positions, left to right.  `rank(a, b)` gives `(rank, merged id)`.
///
/// Short sequences use a plain scan; long ones a heap, which keeps a megabyte-long pretoken
/// (a run of letters with no space) from taking quadratic time.  Vocab then form a linked
/// list and a min-heap holds `(rank, position)` of adjacent pairs: the smallest rank is applied
/// at all its positions, left to right (a position whose tokens changed is skipped, which is
/// the non-overlap rule), and new neighbours enter the heap only with a larger rank (a smaller
/// one can never apply any more).
pub fn merge_by_rank(
    mut tokens: Vec<TokenId>,
    rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>,
    out: &mut Vec<TokenId>,
) {
    if tokens.len() <= LONG_PIECE {
        let mut last: i64 = -1;
        while tokens.len() > 1 {
            let mut best: Option<(u32, (TokenId, TokenId), TokenId)> = None;
            for w in tokens.windows(2) {
                if let Some((r, merged)) = rank(w[0], w[1]) {
                    if r as i64 > last && best.is_none_or(|b| r < b.0) {
                        best = Some((r, (w[0], w[1]), merged));
                    }
                }
            }
            let Some((r, pair, merged)) = best else { break };
            apply_merge(&mut tokens, pair, merged);
            last = r as i64;
        }
        out.extend_from_slice(&tokens);
        return;
    }
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let n = tokens.len();
    let token = &mut tokens;
    let mut next: Vec<usize> = (1..=n).collect(); // n = end
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect(); // usize::MAX = none
    let mut alive = vec![true; n];
    let mut heap: BinaryHeap<Reverse<(u32, usize, TokenId, TokenId)>> = BinaryHeap::new();
    for i in 0..n - 1 {
        if let Some((r, _)) = rank(token[i], token[i + 1]) {
            heap.push(Reverse((r, i, token[i], token[i + 1])));
        }
    }
    while let Some(Reverse((current, _, _, _))) = heap.peek().copied() {
        // every live occurrence of this merge, left to right
        while let Some(&Reverse((r, i, a, b))) = heap.peek() {
            if r != current {
                break;
            }
            heap.pop();
            let j = next[i];
            if !alive[i] || j >= n || token[i] != a || token[j] != b {
                continue; // stale, or overlapping an occurrence just merged
            }
            let merged = rank(a, b).expect("a pair in the heap has a rank").1;
            token[i] = merged;
            alive[j] = false;
            next[i] = next[j];
            if next[i] < n {
                prev[next[i]] = i;
            }
            // new pairs with the merged token, if they can still apply
            if prev[i] != usize::MAX {
                let p = prev[i];
                if let Some((r2, _)) = rank(token[p], merged) {
                    if r2 > current {
                        heap.push(Reverse((r2, p, token[p], merged)));
                    }
                }
            }
            if next[i] < n {
                let q = next[i];
                if let Some((r2, _)) = rank(merged, token[q]) {
                    if r2 > current {
                        heap.push(Reverse((r2, i, merged, token[q])));
                    }
                }
            }
        }
    }
    let mut i = 0;
    while i < n {
        out.push(token[i]);
        i = next[i];
    }
}

/// What the Python seam needs of an encoder (superword models and tiktoken ranks models).
pub trait Encode: Sync {
    /// Token ids of `text`, special tokens read as text.
    fn encode_ordinary(&self, text: &str) -> Result<Vec<TokenId>>;

    /// The bytes of `ids`; an id that is not a token is an error naming its position.
    fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>>;

    /// The bytes of a token id that encoding produced.
    fn token(&self, id: TokenId) -> &[u8];

    /// Token ids of `text`, recognising the special tokens in `allowed`.
    fn encode(&self, text: &str, allowed: &[String]) -> Result<Vec<TokenId>> {
        let mut out = Vec::with_capacity(text.len() / 3);
        self.encode_append(text, allowed, &mut out)?;
        Ok(out)
    }

    /// Append the ids of `text` to `out`, with the special tokens in `allowed` recognised.
    fn encode_append(&self, text: &str, allowed: &[String], out: &mut Vec<TokenId>) -> Result<()>;

    /// Many texts in parallel on the current rayon pool; results keep their order.
    fn encode_batch(&self, texts: &[&str], allowed: &[String]) -> Result<Vec<Vec<TokenId>>> {
        texts
            .par_iter()
            .map(|t| {
                let mut out = Vec::with_capacity(t.len() / 3);
                self.encode_append(t, allowed, &mut out).map(|_| out)
            })
            .collect()
    }

    /// [`Encode::encode_batch`] into one buffer: all ids, and `texts.len() + 1` offsets.
    /// Groups of texts fill their own buffers, so there is no allocation per text.
    fn encode_batch_flat(&self, texts: &[&str], allowed: &[String]) -> Result<(Vec<TokenId>, Vec<u64>)> {
        let group = (texts.len() / (rayon::current_num_threads() * 8)).max(64);
        let parts: Vec<(Vec<TokenId>, Vec<u64>)> = texts
            .par_chunks(group)
            .map(|chunk| {
                let bytes: usize = chunk.iter().map(|t| t.len()).sum();
                let (mut ids, mut ends) = (Vec::with_capacity(bytes / 3), Vec::with_capacity(chunk.len()));
                for t in chunk {
                    self.encode_append(t, allowed, &mut ids)?;
                    ends.push(ids.len() as u64);
                }
                Ok((ids, ends))
            })
            .collect::<Result<_>>()?;
        let total: usize = parts.iter().map(|p| p.0.len()).sum();
        let mut ids = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(texts.len() + 1);
        offsets.push(0);
        for (part, ends) in parts {
            let base = ids.len() as u64;
            offsets.extend(ends.into_iter().map(|e| base + e));
            ids.extend_from_slice(&part);
        }
        Ok((ids, offsets))
    }
}

impl Encode for Encoder {
    fn encode_ordinary(&self, text: &str) -> Result<Vec<TokenId>> {
        Encoder::encode_ordinary(self, text)
    }

    fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>> {
        Encoder::decode_bytes(self, ids)
    }

    fn token(&self, id: TokenId) -> &[u8] {
        &self.vocab[id as usize]
    }

    fn encode_append(&self, text: &str, allowed: &[String], out: &mut Vec<TokenId>) -> Result<()> {
        split_specials(text, &self.special, allowed, |part| match part {
            Part::Text(t) => self.encode_into(t, true, out),
            Part::Special(id) => {
                out.push(id);
                Ok(())
            }
        })
    }
}

/// A stretch of text between special tokens, or a special token's id.
pub enum Part<'a> {
    Text(&'a str),
    Special(TokenId),
}

/// Cut `text` at the special tokens of `special` that `allowed` names (SPEC 7.1): at each
/// point the earliest occurrence wins, and at one position the longest.
pub fn split_specials<'a>(
    text: &'a str,
    special: &[(String, TokenId)],
    allowed: &[String],
    mut emit: impl FnMut(Part<'a>) -> Result<()>,
) -> Result<()> {
    let mut specials: Vec<(&str, TokenId)> = special
        .iter()
        .filter(|(s, _)| allowed.iter().any(|a| a == s))
        .map(|(s, id)| (s.as_str(), *id))
        .collect();
    if specials.is_empty() {
        return if text.is_empty() {
            Ok(())
        } else {
            emit(Part::Text(text))
        };
    }
    specials.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
    let mut start = 0;
    while start < text.len() {
        let next = specials
            .iter()
            .filter_map(|(s, id)| text[start..].find(s).map(|i| (start + i, *s, *id)))
            .min_by_key(|&(i, s, _)| (i, std::cmp::Reverse(s.len())));
        match next {
            Some((i, s, id)) => {
                if i > start {
                    emit(Part::Text(&text[start..i]))?;
                }
                emit(Part::Special(id))?;
                start = i + s.len();
            }
            None => {
                emit(Part::Text(&text[start..]))?;
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Kind, Merge, Settings};

    /// A model whose merges make tokens from a few letters, in a fixed order.
    fn model() -> Model {
        let mut vocab: Vec<Vec<u8>> = crate::tokens::byte_token_values().map(|b| vec![b]).collect();
        let mut merges = Vec::new();
        for (l, r) in [
            ("a", "b"),
            ("b", "a"),
            ("a", "a"),
            ("ab", "a"),
            ("ba", "b"),
            ("aa", "aa"),
            ("ab", "ab"),
            ("b", "b"),
            ("aba", "bb"),
            ("bb", "a"),
        ] {
            merges.push(Merge {
                left: l.into(),
                right: r.into(),
                count: 1,
                flag: false,
            });
            let t = [l.as_bytes(), r.as_bytes()].concat();
            if !vocab.contains(&t) {
                vocab.push(t);
            }
        }
        let n = vocab.len();
        Model {
            kind: Kind::Word,
            settings: Settings {
                main_regex: crate::pretokenize::GPT4O.into(),
                script_specific_regex: None,
                script_specific_scripts: None,
                merge_pattern: crate::pretokenize::MERGE_PATTERN.into(),
                tau: 1.1,
                blowup: false,
            },
            vocab,
            counts: vec![0; n],
            is_super: vec![false; n],
            merges,
            supermerges: Vec::new(),
            special_tokens: Vec::new(),
            ngrams: None,
        }
    }

    #[test]
    fn the_heap_merges_long_pieces_like_the_scan() {
        let enc = Encoder::new(&model(), false).unwrap();
        let mut rng = crate::XorShift(0x1234_5678_9ABC_DEF1);
        for len in [49, 50, 64, 100, 257, 1000] {
            for _ in 0..50 {
                let piece: Vec<u8> = (0..len)
                    .map(|_| [b'a', b'b', b'a', b'c'][rng.below(4) as usize])
                    .collect();
                let (mut scan, mut heap) = (Vec::new(), Vec::new());
                // the scan, forced by calling the short path's loop on the long piece
                let mut tokens: Vec<TokenId> =
                    piece.iter().map(|&b| enc.byte_ids[b as usize].unwrap()).collect();
                let mut last: i64 = -1;
                while tokens.len() > 1 {
                    let mut best: Option<(u32, (TokenId, TokenId), TokenId)> = None;
                    for w in tokens.windows(2) {
                        if let Some(&(rank, merged)) = enc.ranks.get(&(w[0], w[1])) {
                            if rank as i64 > last && best.is_none_or(|b| rank < b.0) {
                                best = Some((rank, (w[0], w[1]), merged));
                            }
                        }
                    }
                    let Some((rank, pair, merged)) = best else { break };
                    apply_merge(&mut tokens, pair, merged);
                    last = rank as i64;
                }
                scan.extend(tokens);
                let bytes: Vec<TokenId> = piece.iter().map(|&b| enc.byte_ids[b as usize].unwrap()).collect();
                merge_by_rank(bytes, |a, b| enc.ranks.get(&(a, b)).copied(), &mut heap);
                assert_eq!(scan, heap, "{}", String::from_utf8_lossy(&piece));
            }
        }
    }
}
