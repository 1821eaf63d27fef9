//! Merging inside one very long sequence (a pretoken of megabytes: text without spaces) in
//! time proportional to the occurrences merged, not to the sequence's length.
//!
//! [`MergeState`](super::merging::MergeState) rewrites every sequence that holds the chosen pair
//! from end to end, which is right for words and candidates (a few tokens) but quadratic for
//! one sequence of n tokens: each of the vocab-size merges would cost n.  A sequence longer
//! than [`LONG_SEQUENCE`] tokens is kept here instead:
//!
//! * its tokens stay where they are; a token merged into its left neighbour becomes a hole
//!   ([`HOLE`]), and when holes outnumber tokens the sequence is compacted (amortised linear);
//! * a pair -> positions index lists where each adjacent pair may start (entries can be
//!   stale; they are checked when used), so a merge visits only its own occurrences;
//! * count changes come from the same windows as `rewrite_group`: from the start of the repeat
//!   holding the token before an occurrence to the end of the repeat holding the token after
//!   it, recounted before and after.  A window's walk stops where the previous window ends or
//!   the next occurrence starts (the windows are joined anyway), so a long repeat of one token
//!   is walked once per merge, not once per occurrence.
//!
//! Memory: 4 bytes per token for the tokens, plus 4 bytes per index entry (about one per token
//! at the start, and at most two more per occurrence merged; a compaction drops the stale
//! ones).  The result is the same as rewriting the sequence (tested against it).

use rustc_hash::FxHashMap;

use crate::tokens::pairs::count_pairs;
use crate::tokens::{Pair, TokenId};

/// Sequences longer than this many tokens are merged with a position index.
pub const LONG_SEQUENCE: usize = 1 << 16;

/// A position whose token was merged into its left neighbour.
const HOLE: TokenId = TokenId::MAX;

pub struct LongSequence {
    tokens: Vec<TokenId>,
    live: usize,
    index: FxHashMap<Pair, Vec<u32>>,
}

impl LongSequence {
    pub fn new(tokens: &[TokenId]) -> LongSequence {
        assert!(
            tokens.len() < u32::MAX as usize,
            "a sequence of 2**32 tokens or more"
        );
        let mut s = LongSequence {
            tokens: tokens.to_vec(),
            live: tokens.len(),
            index: FxHashMap::default(),
        };
        s.build_index();
        s
    }

    /// The index of every adjacent pair, each list allocated at its final size (a first pass
    /// counts): growing the lists by doubling would cost up to twice the memory.
    fn build_index(&mut self) {
        self.index = FxHashMap::default(); // the old index goes first
        let mut sizes: FxHashMap<Pair, u32> = FxHashMap::default();
        for w in self.tokens.windows(2) {
            *sizes.entry((w[0], w[1])).or_insert(0) += 1;
        }
        self.index = sizes
            .into_iter()
            .map(|(pair, n)| (pair, Vec::with_capacity(n as usize)))
            .collect();
        for (i, w) in self.tokens.windows(2).enumerate() {
            if let Some(list) = self.index.get_mut(&(w[0], w[1])) {
                list.push(i as u32);
            }
        }
    }

    /// The number of tokens.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The tokens, in order.
    pub fn tokens(&self) -> impl Iterator<Item = TokenId> + '_ {
        self.tokens.iter().copied().filter(|&t| t != HOLE)
    }

    /// The tokens before any merge (for the initial count), `None` once merged.
    pub fn untouched(&self) -> Option<&[TokenId]> {
        (self.live == self.tokens.len()).then_some(&self.tokens[..])
    }

    #[inline]
    fn next(&self, mut i: usize) -> Option<usize> {
        i += 1;
        while i < self.tokens.len() {
            if self.tokens[i] != HOLE {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    #[inline]
    fn prev(&self, mut i: usize) -> Option<usize> {
        while i > 0 {
            i -= 1;
            if self.tokens[i] != HOLE {
                return Some(i);
            }
        }
        None
    }

    /// Replace each non-overlapping occurrence of `pair` by `merged`, left to right.  For every
    /// pair whose count changes, `delta` gets the change times `weight`; `new_pair` is called
    /// with each new pair that holds `merged`.  Returns whether anything changed.
    pub fn merge(
        &mut self,
        pair: Pair,
        merged: TokenId,
        weight: i64,
        delta: &mut FxHashMap<Pair, i64>,
        mut new_pair: impl FnMut(Pair),
    ) -> bool {
        // 1. the live occurrences, left to right, non-overlapping
        let mut candidates = self.index.remove(&pair).unwrap_or_default();
        candidates.sort_unstable();
        candidates.dedup();
        let mut occurrences: Vec<(usize, usize)> = Vec::new();
        for &i in &candidates {
            let i = i as usize;
            if self.tokens[i] != pair.0 || occurrences.last().is_some_and(|&(_, j)| j >= i) {
                continue;
            }
            if let Some(j) = self.next(i) {
                if self.tokens[j] == pair.1 {
                    occurrences.push((i, j));
                }
            }
        }
        if occurrences.is_empty() {
            return false;
        }
        // 2. windows around them (first and last position, both live now), joined when they meet
        let mut windows: Vec<(usize, usize)> = Vec::new();
        for (k, &(i, j)) in occurrences.iter().enumerate() {
            let stop_left = windows.last().map(|w| w.1);
            let mut lo = i;
            if let Some(p) = self.prev(i) {
                lo = p;
                while let Some(q) = self.prev(lo) {
                    if stop_left.is_some_and(|s| q <= s) || self.tokens[q] != self.tokens[lo] {
                        break;
                    }
                    lo = q;
                }
            }
            let stop_right = occurrences.get(k + 1).map(|o| o.0);
            let mut hi = j;
            if let Some(n) = self.next(j) {
                hi = n;
                while let Some(q) = self.next(hi) {
                    if stop_right.is_some_and(|s| q >= s) || self.tokens[q] != self.tokens[hi] {
                        break;
                    }
                    hi = q;
                }
            }
            match windows.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => windows.push((lo, hi)),
            }
        }
        // 3. the old windows' pairs go
        let mut buffer: Vec<TokenId> = Vec::new();
        for &(lo, hi) in &windows {
            buffer.clear();
            buffer.extend(self.tokens[lo..=hi].iter().copied().filter(|&t| t != HOLE));
            count_pairs(&buffer, |p| *delta.entry(p).or_insert(0) -= weight);
        }
        // 4. merge
        for &(i, j) in &occurrences {
            self.tokens[i] = merged;
            self.tokens[j] = HOLE;
        }
        self.live -= occurrences.len();
        // 5. the new windows' pairs come; new adjacent pairs enter the index
        let mut positions: Vec<u32> = Vec::new();
        for &(lo, hi) in &windows {
            buffer.clear();
            positions.clear();
            for (offset, &t) in self.tokens[lo..=hi].iter().enumerate() {
                if t != HOLE {
                    buffer.push(t);
                    positions.push((lo + offset) as u32);
                }
            }
            count_pairs(&buffer, |p| {
                *delta.entry(p).or_insert(0) += weight;
                if p.0 == merged || p.1 == merged {
                    new_pair(p);
                }
            });
            for (w, at) in buffer.windows(2).zip(&positions) {
                if w[0] == merged || w[1] == merged {
                    self.index.entry((w[0], w[1])).or_default().push(*at);
                }
            }
        }
        // 6. compact when holes outnumber tokens (each compaction at least halves the length)
        if self.live * 2 < self.tokens.len() {
            self.tokens.retain(|&t| t != HOLE);
            self.build_index();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::pairs::apply_merge;

    fn counts(tokens: &[TokenId]) -> FxHashMap<Pair, i64> {
        let mut c = FxHashMap::default();
        count_pairs(tokens, |p| *c.entry(p).or_insert(0) += 1);
        c
    }

    /// A small xorshift generator: the test needs no dependency.
    fn random(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn merges_like_a_rewrite_of_the_whole_sequence() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..400 {
            let alphabet = 1 + (round % 4) as u64;
            let n = 1 + (random(&mut seed) % 300) as usize;
            let start: Vec<TokenId> = (0..n)
                .map(|_| (random(&mut seed) % alphabet) as TokenId)
                .collect();
            let mut plain = start.clone();
            let mut long = LongSequence::new(&start);
            for next_id in 100..160 {
                let live = counts(&plain);
                if live.is_empty() {
                    break;
                }
                // the most frequent pair, ties to the smallest; sometimes any present pair
                let mut pairs: Vec<(&Pair, &i64)> = live.iter().collect();
                pairs.sort_by_key(|(p, c)| (-**c, **p));
                let pair = *pairs[(random(&mut seed) % 3) as usize % pairs.len()].0;
                let mut delta = FxHashMap::default();
                let mut noted = Vec::new();
                assert!(long.merge(pair, next_id, 1, &mut delta, |p| noted.push(p)));
                assert!(apply_merge(&mut plain, pair, next_id));
                let after = counts(&plain);
                let mut expected: FxHashMap<Pair, i64> = FxHashMap::default();
                for (p, c) in &after {
                    *expected.entry(*p).or_insert(0) += c;
                }
                for (p, c) in &live {
                    *expected.entry(*p).or_insert(0) -= c;
                }
                expected.retain(|_, d| *d != 0);
                delta.retain(|_, d| *d != 0);
                assert_eq!(delta, expected, "round {round}, pair {pair:?}");
                for p in after.keys() {
                    if p.0 == next_id || p.1 == next_id {
                        assert!(noted.contains(p), "new pair {p:?} not reported");
                    }
                }
                assert_eq!(long.tokens().collect::<Vec<_>>(), plain, "round {round}");
                assert_eq!(long.len(), plain.len());
            }
        }
    }

    #[test]
    fn a_long_repeat_costs_linear_time() {
        let mut long = LongSequence::new(&vec![7; 1 << 20]);
        let mut delta = FxHashMap::default();
        let mut id = 100;
        let mut pair = (7, 7);
        while long.len() > 1 {
            delta.clear();
            assert!(long.merge(pair, id, 1, &mut delta, |_| {}));
            pair = (id, id);
            id += 1;
        }
        assert_eq!(id, 120);
    }
}
