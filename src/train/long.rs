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

use crate::error::{try_vec, Error, Result};
use crate::tokens::{Pair, TokenId};

/// What an allocation for a long sequence is for, in a [`Error::Memory`] message.
fn what(len: usize) -> String {
    format!("training on one pretoken of {len} bytes (a text without spaces or line breaks)")
}

/// `count_pairs` over the live tokens of `tokens` (holes skipped), without copying them:
/// `f` gets each counted pair and the position of its left token.
fn count_live_pairs(tokens: &[TokenId], lo: usize, mut f: impl FnMut(Pair, usize)) {
    let mut left: Option<(TokenId, usize)> = None;
    let mut previous: Option<Pair> = None;
    for (offset, &t) in tokens.iter().enumerate() {
        if t == HOLE {
            continue;
        }
        if let Some((a, at)) = left {
            let pair = (a, t);
            if pair.0 == pair.1 && previous == Some(pair) {
                previous = None;
            } else {
                f(pair, at);
                previous = Some(pair);
            }
        }
        left = Some((t, lo + offset));
    }
}

/// Bytes per token that merging one long sequence may come to need at its peak, beyond the
/// tokens it is given: its copy of the tokens (4), the position index (4 at the start, up to 8
/// while merges add positions), the pair table and the heap as they grow.  Measured peaks are
/// 15 (one letter repeated) to 27 (random letters) bytes per byte of the pretoken, with the
/// text and the counting tables in them.
const HEADROOM_PER_TOKEN: usize = 24;

/// Whether the memory that merging a sequence of `len` tokens needs can be had, asked of the
/// allocator up front and given back at once: the later allocations (hash tables growing in
/// the merge loop among them) cannot all report failure, so a sequence too long for the
/// memory available (an address-space limit, a container's) is an [`Error::Memory`] here
/// rather than an abort minutes later.  The pages are never touched, so asking costs nothing.
fn ensure_headroom(len: usize) -> Result<()> {
    let Some(bytes) = len.checked_mul(HEADROOM_PER_TOKEN) else {
        return Err(Error::Memory(format!("{}: out of memory", what(len))));
    };
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).map_err(|_| {
        Error::Memory(format!(
            "{}: out of memory (merging it needs about {} MB, which could not be had)",
            what(len),
            bytes >> 20
        ))
    })?;
    // (an allocation nothing reads may be elided by the optimizer, and with it the question)
    std::hint::black_box(probe.as_mut_ptr());
    Ok(())
}

/// Sequences longer than this many tokens are merged with a position index.
pub const LONG_SEQUENCE: usize = 1 << 16;

/// A position whose token was merged into its left neighbour.
const HOLE: TokenId = TokenId::MAX;

/// How many occurrences ahead a merge asks for the tokens of the next ones.
const PREFETCH_AHEAD: usize = 16;

pub struct LongSequence {
    tokens: Vec<TokenId>,
    live: usize,
    index: FxHashMap<Pair, Vec<u32>>,
    /// an allocation a merge could not make (then the sequence is no longer consistent, and
    /// training stops with this error: see [`LongSequence::take_failure`])
    failed: Option<Error>,
}

impl LongSequence {
    /// The sequence of `tokens`, with its index; [`Error::Memory`] when the tokens or the
    /// index cannot be allocated (their sizes come from one pretoken of the input).
    pub fn new(tokens: &[TokenId]) -> Result<LongSequence> {
        Self::check_length(tokens.len())?;
        ensure_headroom(tokens.len())?;
        let mut copy = try_vec(tokens.len(), &what(tokens.len()))?;
        copy.extend_from_slice(tokens);
        Self::from_vec(copy)
    }

    fn check_length(len: usize) -> Result<()> {
        if len >= u32::MAX as usize {
            return Err(Error::Value(format!(
                "a pretoken of {len} tokens: training takes pretokens of fewer than 2**32 bytes"
            )));
        }
        Ok(())
    }

    /// [`Self::new`] on tokens the caller gives up (phase 1's arena: no second copy of a
    /// pretoken of hundreds of megabytes).
    pub fn from_vec(tokens: Vec<TokenId>) -> Result<LongSequence> {
        Self::check_length(tokens.len())?;
        ensure_headroom(tokens.len())?;
        let mut s = LongSequence {
            live: tokens.len(),
            tokens,
            index: FxHashMap::default(),
            failed: None,
        };
        s.build_index()?;
        Ok(s)
    }

    /// The index of every adjacent pair, each list allocated at its final size (a first pass
    /// counts): growing the lists by doubling would cost up to twice the memory.
    fn build_index(&mut self) -> Result<()> {
        self.index = FxHashMap::default(); // the old index goes first
        let mut sizes: FxHashMap<Pair, u32> = FxHashMap::default();
        for w in self.tokens.windows(2) {
            *sizes.entry((w[0], w[1])).or_insert(0) += 1;
        }
        let mut index = FxHashMap::default();
        index.reserve(sizes.len());
        for (pair, n) in sizes {
            index.insert(pair, try_vec(n as usize, &what(self.tokens.len()))?);
        }
        self.index = index;
        for (i, w) in self.tokens.windows(2).enumerate() {
            if let Some(list) = self.index.get_mut(&(w[0], w[1])) {
                list.push(i as u32);
            }
        }
        Ok(())
    }

    /// The error of a merge that ran out of memory, if one did.
    pub fn take_failure(&mut self) -> Option<Error> {
        self.failed.take()
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

    /// Every adjacent pair of live tokens in `windows` that holds `merged`, with the position
    /// of its left token (overlapping `(t, t)` pairs included: the index lists every place
    /// a pair may start).
    fn each_new_pair_in(
        tokens: &[TokenId],
        windows: &[(u32, u32)],
        merged: TokenId,
        mut f: impl FnMut(Pair, usize),
    ) {
        for &(lo, hi) in windows {
            let (lo, hi) = (lo as usize, hi as usize);
            let mut left: Option<(TokenId, usize)> = None;
            for (offset, &t) in tokens[lo..=hi].iter().enumerate() {
                if t == HOLE {
                    continue;
                }
                if let Some((a, at)) = left {
                    if a == merged || t == merged {
                        f((a, t), at);
                    }
                }
                left = Some((t, lo + offset));
            }
        }
    }

    /// Replace each non-overlapping occurrence of `pair` by `merged`, left to right.  For every
    /// pair whose count changes, `delta` gets the change times `weight`; `new_pair` is called
    /// with each new pair that holds `merged`.  Returns whether anything changed.
    ///
    /// The occurrences are taken left to right, each checked when it comes (the next one
    /// bounds the window of the one before), and each group of windows that meet is
    /// recounted, merged and indexed at once, while its tokens are in the cache.  (Checking
    /// all occurrences, then making all windows, then counting, merging and counting again
    /// walked a sequence larger than the caches six times, each occurrence a cache miss every
    /// time: most of the time of a training on one long word.)
    pub fn merge(
        &mut self,
        pair: Pair,
        merged: TokenId,
        weight: i64,
        delta: &mut FxHashMap<Pair, i64>,
        mut new_pair: impl FnMut(Pair),
    ) -> bool {
        let mut list = self.index.remove(&pair).unwrap_or_default();
        list.sort_unstable();
        list.dedup();
        let mut cursor = 0;
        let mut next = self.occurrence(&list, &mut cursor, pair, None);
        if next.is_none() {
            return false;
        }
        // the positions of the new pairs, gathered here (a small table, in the cache) and
        // added to the index's lists at the end, each grown once
        let mut added: FxHashMap<Pair, Vec<u32>> = FxHashMap::default();
        // the group being gathered: its occurrences (their left positions: when the group is
        // merged, each one's right token is still the next live one) and its span
        let mut group: Vec<u32> = Vec::new();
        let mut span: Option<(usize, usize)> = None;
        while let Some((i, j)) = next {
            next = self.occurrence(&list, &mut cursor, pair, Some(j));
            // the window: from the start of the repeat holding the token before the
            // occurrence to the end of the repeat holding the token after it
            let stop_left = span.map(|s| s.1);
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
            let stop_right = next.map(|(i, _)| i);
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
            match &mut span {
                Some(s) if lo <= s.1 => s.1 = s.1.max(hi),
                _ => {
                    if let Some((a, b)) = span {
                        if let Err(e) =
                            self.merge_window(a, b, &group, merged, weight, delta, &mut new_pair, &mut added)
                        {
                            self.failed = Some(e);
                            return true;
                        }
                        group.clear();
                    }
                    span = Some((lo, hi));
                }
            }
            group.push(i as u32);
        }
        if let Some((a, b)) = span {
            if let Err(e) = self.merge_window(a, b, &group, merged, weight, delta, &mut new_pair, &mut added)
            {
                self.failed = Some(e);
                return true;
            }
        }
        drop((list, group));
        for (p, positions) in added {
            let list = self.index.entry(p).or_default();
            if list.is_empty() {
                // (a new pair takes its positions as they are: no second copy of what may be
                // half the sequence, as when one letter repeats)
                *list = positions;
                continue;
            }
            if list.try_reserve_exact(positions.len()).is_err() {
                self.failed = Some(Error::Memory(format!(
                    "{}: out of memory (the positions of {} new pairs could not be allocated)",
                    what(self.tokens.len()),
                    positions.len()
                )));
                return true;
            }
            list.extend_from_slice(&positions);
        }
        // compact when holes outnumber tokens (each compaction at least halves the length)
        if self.live * 2 < self.tokens.len() {
            if let Err(e) = self.compact() {
                self.failed = Some(e);
            }
        }
        true
    }

    /// Drop the holes, and move the index's positions with their tokens, dropping the stale
    /// ones.  (Rebuilding the index instead, two look-ups in a table of all pairs for every
    /// position and every list allocated afresh, was a sixth of a training on one long word.)
    fn compact(&mut self) -> Result<()> {
        // the new position of a live token: the live tokens before its block of 32 (kept per
        // block: a number per position would be as large as the tokens) and in it
        const BLOCK: usize = 32;
        let blocks = self.tokens.len().div_ceil(BLOCK);
        let mut before: Vec<u32> = try_vec(blocks, &what(self.tokens.len()))?;
        let mut k = 0;
        for block in self.tokens.chunks(BLOCK) {
            before.push(k);
            k += block.iter().filter(|&&t| t != HOLE).count() as u32;
        }
        let tokens = &self.tokens;
        let moved = |i: usize| {
            let start = i & !(BLOCK - 1);
            before[i / BLOCK] + tokens[start..i].iter().filter(|&&t| t != HOLE).count() as u32
        };
        for (pair, list) in self.index.iter_mut() {
            let mut kept = 0;
            for k in 0..list.len() {
                if let Some(&ahead) = list.get(k + PREFETCH_AHEAD) {
                    crate::prefetch(tokens.as_ptr().wrapping_add(ahead as usize));
                    crate::prefetch(before.as_ptr().wrapping_add(ahead as usize / BLOCK));
                }
                let i = list[k] as usize;
                if tokens[i] != pair.0 {
                    continue;
                }
                if tokens[i + 1..].iter().find(|&&t| t != HOLE) == Some(&pair.1) {
                    list[kept] = moved(i);
                    kept += 1;
                }
            }
            list.truncate(kept);
            if list.len() < list.capacity() / 2 {
                list.shrink_to_fit();
            }
        }
        self.index.retain(|_, list| !list.is_empty());
        drop(before);
        self.tokens.retain(|&t| t != HOLE);
        self.tokens.shrink_to_fit();
        Ok(())
    }

    /// The next live occurrence of `pair` at or after `list[*cursor]` (the index's sorted
    /// positions, some stale) that starts after `last_right`: its left and right positions.
    fn occurrence(
        &self,
        list: &[u32],
        cursor: &mut usize,
        pair: Pair,
        last_right: Option<usize>,
    ) -> Option<(usize, usize)> {
        while let Some(&i) = list.get(*cursor) {
            // (the occurrences lie far apart in a sequence larger than the caches: loading the
            // tokens of one some way ahead overlaps the waits)
            if let Some(&ahead) = list.get(*cursor + PREFETCH_AHEAD) {
                crate::prefetch(self.tokens.as_ptr().wrapping_add(ahead as usize));
            }
            *cursor += 1;
            let i = i as usize;
            if self.tokens[i] != pair.0 || last_right.is_some_and(|j| j >= i) {
                continue;
            }
            if let Some(j) = self.next(i) {
                if self.tokens[j] == pair.1 {
                    return Some((i, j));
                }
            }
        }
        None
    }

    /// Merge the `occurrences` inside the window `lo..=hi` (a group of windows that meet):
    /// the window's pairs are counted out, the occurrences merged, the pairs counted in, and
    /// the new pairs holding `merged` enter the index.
    #[allow(clippy::too_many_arguments)]
    fn merge_window(
        &mut self,
        lo: usize,
        hi: usize,
        occurrences: &[u32],
        merged: TokenId,
        weight: i64,
        delta: &mut FxHashMap<Pair, i64>,
        new_pair: &mut impl FnMut(Pair),
        added: &mut FxHashMap<Pair, Vec<u32>>,
    ) -> Result<()> {
        count_live_pairs(&self.tokens[lo..=hi], lo, |p, _| {
            *delta.entry(p).or_insert(0) -= weight
        });
        for &i in occurrences {
            // (the occurrences do not overlap and go left to right: nothing between `i` and
            // its right token has changed since it was found)
            let j = self.next(i as usize).expect("an occurrence has a right token");
            self.tokens[i as usize] = merged;
            self.tokens[j] = HOLE;
        }
        self.live -= occurrences.len();
        // (all adjacent pairs holding `merged` enter the index, which `count_live_pairs` may
        // skip as overlapping)
        count_live_pairs(&self.tokens[lo..=hi], lo, |p, _| {
            *delta.entry(p).or_insert(0) += weight;
            if p.0 == merged || p.1 == merged {
                new_pair(p);
            }
        });
        let tokens = &self.tokens;
        let mut failed = None;
        Self::each_new_pair_in(tokens, &[(lo as u32, hi as u32)], merged, |p, at| {
            let list = added.entry(p).or_default();
            // (grown fallibly: an allocation that fails must be an error, not an abort)
            if list.len() == list.capacity() && list.try_reserve(1).is_err() {
                failed.get_or_insert(p);
                return;
            }
            list.push(at as u32);
        });
        match failed {
            Some(_) => Err(Error::Memory(format!(
                "{}: out of memory (the positions of new pairs could not be allocated)",
                what(tokens.len())
            ))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::pairs::{apply_merge, count_pairs};

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
    fn a_sequence_too_long_for_the_memory_is_a_memory_error_before_anything_is_built() {
        assert!(ensure_headroom(1 << 20).is_ok());
        for len in [(1usize << 62) / HEADROOM_PER_TOKEN, 1 << 58] {
            match ensure_headroom(len) {
                Err(Error::Memory(m)) => assert!(m.contains("out of memory"), "{m}"),
                other => panic!("{len} tokens: {:?}", other.err()),
            }
        }
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
            let mut long = LongSequence::new(&start).unwrap();
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
        let mut long = LongSequence::new(&vec![7; 1 << 20]).unwrap();
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
