//! The merge loop shared by phase 1 (BPE on words) and phase 2 (supermerges on candidates),
//! the same procedure as `reference/merging.py` (SPEC 2.3-2.6, 3.4):
//!
//! * pair counts: a run of k equal tokens counts ⌊k/2⌋ (SPEC 2.3), see [`count_pairs`];
//! * selection: the highest count, ties to the smallest (left bytes, right bytes): the order
//!   of [`PairHeap`] (SPEC 2.4);
//! * applying: left to right, non-overlapping, only in the sequences that hold the pair (a
//!   pair -> sequences index), updating counts by difference.
//!
//! The heap is lazy.  Within one merge, a pair that does not contain the new token can only
//! lose occurrences (its positions are untouched, and dropping the first token of a run of k
//! equal tokens turns ⌊k/2⌋ into ⌊(k-1)/2⌋), so only pairs whose count *grew* get a new
//! heap entry; an entry popped with a count above the live one is pushed back with the live
//! count.  Every live pair thus always has an entry whose count is at least its own, and the
//! first entry popped whose count is live is the SPEC's choice.

pub mod boundless;
pub mod bpe;
pub mod candidates;
pub mod ngram;
pub mod superbpe;

use crate::error::Result;
use rustc_hash::FxHashMap;

pub type TokenId = u32;
pub type Pair = (TokenId, TokenId);

/// Token bytes by id, and the reverse map.  Byte tokens come first (SPEC 2.2).
#[derive(Clone, Default)]
pub struct Tokens {
    bytes: Vec<Box<[u8]>>,
    index: FxHashMap<Box<[u8]>, TokenId>,
}

/// The 243 bytes that can occur in UTF-8, in id order.
pub fn byte_token_values() -> impl Iterator<Item = u8> {
    (0x00..0xC0u8).chain(0xC2..0xF5u8)
}

/// Id of a byte's token in the base vocabulary (SPEC 2.2); `None` for bytes UTF-8 never uses.
#[inline]
pub fn byte_id(b: u8) -> Option<TokenId> {
    match b {
        0x00..=0xBF => Some(b as TokenId),
        0xC2..=0xF4 => Some(b as TokenId - 2),
        _ => None,
    }
}

impl Tokens {
    /// The base vocabulary of 243 byte tokens.
    pub fn base() -> Tokens {
        let mut t = Tokens::default();
        for b in byte_token_values() {
            t.add(&[b]);
        }
        t
    }

    pub fn from_vocab(vocab: &[Vec<u8>]) -> Tokens {
        let mut t = Tokens::default();
        for v in vocab {
            t.add(v);
        }
        t
    }

    /// The id of `bytes`, adding it if new; `(id, added)`.
    pub fn add(&mut self, bytes: &[u8]) -> (TokenId, bool) {
        if let Some(&id) = self.index.get(bytes) {
            return (id, false);
        }
        let id = self.bytes.len() as TokenId;
        self.bytes.push(bytes.into());
        self.index.insert(bytes.into(), id);
        (id, true)
    }

    pub fn id(&self, bytes: &[u8]) -> Option<TokenId> {
        self.index.get(bytes).copied()
    }

    #[inline]
    pub fn bytes(&self, id: TokenId) -> &[u8] {
        &self.bytes[id as usize]
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn to_vec(&self) -> Vec<Vec<u8>> {
        self.bytes.iter().map(|b| b.to_vec()).collect()
    }
}

/// A merge as training records it, in token ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrainMerge {
    pub pair: Pair,
    pub count: u64,
    pub flag: bool,
}

/// Call `f` for every counted pair occurrence of a sequence (SPEC 2.3): a pair `(x, x)` equal
/// to the previous counted pair is skipped, and resets "previous".
#[inline]
pub fn count_pairs(tokens: &[TokenId], mut f: impl FnMut(Pair)) {
    let mut previous: Option<Pair> = None;
    for w in tokens.windows(2) {
        let pair = (w[0], w[1]);
        if pair.0 == pair.1 && previous == Some(pair) {
            previous = None;
            continue;
        }
        f(pair);
        previous = Some(pair);
    }
}

/// Replace each non-overlapping occurrence of `pair` by `merged`, left to right, in place;
/// returns whether anything changed.
pub fn apply_merge(tokens: &mut Vec<TokenId>, pair: Pair, merged: TokenId) -> bool {
    let n = tokens.len();
    let (mut read, mut write) = (0, 0);
    let mut changed = false;
    while read < n {
        if read + 1 < n && tokens[read] == pair.0 && tokens[read + 1] == pair.1 {
            tokens[write] = merged;
            read += 2;
            changed = true;
        } else {
            tokens[write] = tokens[read];
            read += 1;
        }
        write += 1;
    }
    tokens.truncate(write);
    changed
}

/// A max-heap of `(count, pair)` whose order is the SPEC tie-break: higher count first, then
/// smaller (left bytes, right bytes).  Written by hand because the order needs the token table.
#[derive(Default)]
pub struct PairHeap {
    items: Vec<(u64, Pair)>,
}

impl PairHeap {
    #[inline]
    fn before(tokens: &Tokens, a: &(u64, Pair), b: &(u64, Pair)) -> bool {
        if a.0 != b.0 {
            return a.0 > b.0;
        }
        (tokens.bytes(a.1 .0), tokens.bytes(a.1 .1)) < (tokens.bytes(b.1 .0), tokens.bytes(b.1 .1))
    }

    pub fn push(&mut self, tokens: &Tokens, item: (u64, Pair)) {
        self.items.push(item);
        let mut i = self.items.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !Self::before(tokens, &self.items[i], &self.items[parent]) {
                break;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    pub fn peek(&self) -> Option<(u64, Pair)> {
        self.items.first().copied()
    }

    pub fn pop(&mut self, tokens: &Tokens) -> Option<(u64, Pair)> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.items[0], last);
        let n = self.items.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if l < n && Self::before(tokens, &self.items[l], &self.items[best]) {
                best = l;
            }
            if r < n && Self::before(tokens, &self.items[r], &self.items[best]) {
                best = r;
            }
            if best == i {
                break;
            }
            self.items.swap(i, best);
            i = best;
        }
        Some(top)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// Weighted token sequences with live pair counts, a pair -> sequences index and the heap.
pub struct MergeState {
    pub seqs: Vec<Vec<TokenId>>,
    pub weights: Vec<u64>,
    counts: FxHashMap<Pair, u64>,
    where_: FxHashMap<Pair, Vec<u32>>,
    heap: PairHeap,
    delta: FxHashMap<Pair, i64>,
}

impl MergeState {
    pub fn new(seqs: Vec<Vec<TokenId>>, weights: Vec<u64>, tokens: &Tokens) -> MergeState {
        let mut counts: FxHashMap<Pair, u64> = FxHashMap::default();
        let mut where_: FxHashMap<Pair, Vec<u32>> = FxHashMap::default();
        for (i, (seq, &w)) in seqs.iter().zip(&weights).enumerate() {
            count_pairs(seq, |p| {
                *counts.entry(p).or_insert(0) += w;
                let list = where_.entry(p).or_default();
                if list.last() != Some(&(i as u32)) {
                    list.push(i as u32);
                }
            });
        }
        let mut heap = PairHeap::default();
        for (&p, &c) in &counts {
            heap.push(tokens, (c, p));
        }
        MergeState { seqs, weights, counts, where_, heap, delta: FxHashMap::default() }
    }

    /// The pair to merge next and its count, or `None` when no pair is left.
    pub fn best(&mut self, tokens: &Tokens) -> Option<(Pair, u64)> {
        while let Some((count, pair)) = self.heap.peek() {
            match self.counts.get(&pair) {
                Some(&live) if live == count => return Some((pair, count)),
                Some(&live) => {
                    // the count went down since this entry was pushed: push the live count
                    self.heap.pop(tokens);
                    self.heap.push(tokens, (live, pair));
                }
                None => {
                    self.heap.pop(tokens);
                }
            }
        }
        None
    }

    /// Apply `pair` (its result has id `merged`) everywhere.  Returns whether some sequence
    /// became a single token (the merge's flag).
    pub fn merge(&mut self, pair: Pair, merged: TokenId, tokens: &Tokens) -> bool {
        let mut indices = self.where_.remove(&pair).unwrap_or_default();
        indices.sort_unstable();
        indices.dedup();
        let mut became_single = false;
        let delta = &mut self.delta;
        for &index in &indices {
            let seq = &mut self.seqs[index as usize];
            if !seq.windows(2).any(|w| (w[0], w[1]) == pair) {
                continue; // stale: the pair left this sequence earlier
            }
            let w = self.weights[index as usize] as i64;
            count_pairs(seq, |p| *delta.entry(p).or_insert(0) -= w);
            apply_merge(seq, pair, merged);
            let where_ = &mut self.where_;
            count_pairs(seq, |p| {
                *delta.entry(p).or_insert(0) += w;
                if p.0 == merged || p.1 == merged {
                    let list = where_.entry(p).or_default();
                    if list.last() != Some(&index) {
                        list.push(index);
                    }
                }
            });
            became_single |= seq.len() == 1;
        }
        // (the heap's order is total, so the order of these updates does not matter)
        for (p, d) in delta.drain() {
            if d == 0 {
                continue;
            }
            let live = self.counts.get(&p).copied().unwrap_or(0) as i64 + d;
            debug_assert!(live >= 0, "pair count below zero");
            if live <= 0 {
                self.counts.remove(&p);
                self.where_.remove(&p);
            } else {
                self.counts.insert(p, live as u64);
                if d > 0 {
                    self.heap.push(tokens, (live as u64, p));
                }
            }
        }
        became_single
    }

    /// How often each token id occurs in the sequences, weighted (SPEC 8 `count`).
    pub fn token_counts(&self, n_tokens: usize) -> Vec<u64> {
        let mut counts = vec![0u64; n_tokens];
        for (seq, &w) in self.seqs.iter().zip(&self.weights) {
            for &t in seq {
                counts[t as usize] += w;
            }
        }
        counts
    }
}

/// Progress and interruption: called between units of work.  `Err` stops the work (Ctrl-C).
pub trait Control: Sync {
    fn progress(&self, stage: &str, done: u64, total: u64) -> Result<()>;
}

/// No progress output, never interrupted.
pub struct Silent;

impl Control for Silent {
    fn progress(&self, _: &str, _: u64, _: u64) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(s: &[u8]) -> Vec<TokenId> {
        s.iter().map(|&b| byte_id(b).unwrap()).collect()
    }

    #[test]
    fn pair_counting_rule() {
        let mut c = FxHashMap::default();
        count_pairs(&ids(b"aaaaa"), |p| *c.entry(p).or_insert(0) += 1);
        assert_eq!(c.len(), 1);
        assert_eq!(c[&(97, 97)], 2);
    }

    #[test]
    fn merge_is_left_to_right_non_overlapping() {
        let mut t = ids(b"aaa");
        assert!(apply_merge(&mut t, (97, 97), 300));
        assert_eq!(t, vec![300, 97]);
    }

    #[test]
    fn ties_break_by_bytes() {
        // after (z,z) and (a,a), (aa,q) and (zz,q) tie at 2; b"aa" < b"zz"
        let mut tokens = Tokens::base();
        let words: Vec<(&[u8], u64)> = vec![(b"zz", 5), (b"aa", 4), (b"zzq", 2), (b"aaq", 2)];
        let mut state = MergeState::new(words.iter().map(|w| ids(w.0)).collect(), words.iter().map(|w| w.1).collect(), &tokens);
        let mut chosen = Vec::new();
        while let Some((pair, count)) = state.best(&tokens) {
            let merged: Vec<u8> = [tokens.bytes(pair.0), tokens.bytes(pair.1)].concat();
            let (id, _) = tokens.add(&merged);
            state.merge(pair, id, &tokens);
            chosen.push((String::from_utf8(merged).unwrap(), count));
        }
        let expect: Vec<(String, u64)> = vec![("zz".into(), 7), ("aa".into(), 6), ("aaq".into(), 2), ("zzq".into(), 2)];
        assert_eq!(chosen, expect);
    }
}
