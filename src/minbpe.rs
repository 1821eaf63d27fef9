//! minbpe-compatible training and encoding (SPEC section 6).
//!
//! Training follows Karpathy's minbpe exactly: 256 byte tokens (ids = byte values), pair
//! counts *with* overlap, the highest count wins and ties go to the pair that occurs first in
//! the text; merge `i` makes id `256 + i`.  `batch_size = k > 1` is turboBPE's batch merging:
//! each round takes the `k` best pairs, drops any that shares a token with one already taken,
//! and applies the rest together (they share no token, so one after the other is the same).
//!
//! Instead of recounting the whole text per merge, the distinct chunks (in order of first
//! appearance, each with its count) are laid out as linked lists of tokens, and each pair keeps
//! the positions where it occurs, in text order.  Positions never move (a merged token keeps
//! its left position), so "occurs first" is the smallest live position of the pair, and since
//! an old pair never gains an occurrence (new adjacencies always involve the new token), its
//! first position can only move later: a lazy heap ordered by (count, first position) works.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::control::Control;
use crate::encode::cache::{self, PieceCache};
use crate::encode::merge_by_rank;
use crate::error::Result;
use crate::pretokenize::Matcher;

const NONE: u32 = u32::MAX;

struct PairInfo {
    count: u64,
    /// positions of the left token, ascending; stale ones are skipped from `head`
    positions: Vec<u32>,
    head: usize,
}

/// One recorded merge: the pair, the new id and its count when chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinMerge {
    pub pair: (u32, u32),
    pub id: u32,
    pub count: u64,
    /// the batch-merging round that chose it (one merge per round with `batch_size = 1`)
    pub round: u32,
}

/// A merge as a flat row: `(left, right, id, count, round)`.
pub type MergeRow = (u32, u32, u32, u64, u32);

impl MinMerge {
    pub fn row(&self) -> MergeRow {
        (self.pair.0, self.pair.1, self.id, self.count, self.round)
    }
}

struct State {
    token: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// weight (chunk count) of each position
    weight: Vec<u64>,
    pairs: FxHashMap<(u32, u32), PairInfo>,
    heap: BinaryHeap<(u64, Reverse<u32>, (u32, u32))>,
}

impl State {
    fn new(chunks: &[(&[u8], u64)]) -> State {
        let total: usize = chunks.iter().map(|c| c.0.len()).sum();
        let (mut token, mut next, mut prev, mut weight) = (
            Vec::with_capacity(total),
            Vec::with_capacity(total),
            Vec::with_capacity(total),
            Vec::with_capacity(total),
        );
        for (bytes, w) in chunks {
            let start = token.len() as u32;
            for (k, &b) in bytes.iter().enumerate() {
                let pos = start + k as u32;
                token.push(b as u32);
                prev.push(if k == 0 { NONE } else { pos - 1 });
                next.push(if k + 1 == bytes.len() { NONE } else { pos + 1 });
                weight.push(*w);
            }
        }
        let mut pairs: FxHashMap<(u32, u32), PairInfo> = FxHashMap::default();
        for p in 0..token.len() {
            let n = next[p];
            if n != NONE {
                let info = pairs.entry((token[p], token[n as usize])).or_insert(PairInfo {
                    count: 0,
                    positions: Vec::new(),
                    head: 0,
                });
                info.count += weight[p];
                info.positions.push(p as u32);
            }
        }
        let heap = pairs
            .iter()
            .map(|(&pair, info)| (info.count, Reverse(info.positions[0]), pair))
            .collect();
        State {
            token,
            next,
            prev,
            weight,
            pairs,
            heap,
        }
    }

    /// Does `pair` still start at `p`?  (A position merged away holds the token `NONE`.)
    #[inline]
    fn live_at(&self, p: u32, pair: (u32, u32)) -> bool {
        let n = self.next[p as usize];
        self.token[p as usize] == pair.0 && n != NONE && self.token[n as usize] == pair.1
    }

    /// The first live position of `pair`, dropping stale ones from the front.
    fn first(&mut self, pair: (u32, u32)) -> Option<u32> {
        let mut info = self.pairs.remove(&pair)?;
        while info.head < info.positions.len() && !self.live_at(info.positions[info.head], pair) {
            info.head += 1;
        }
        let first = info.positions.get(info.head).copied();
        self.pairs.insert(pair, info);
        first
    }

    /// The best pair now (highest count, then first occurrence), fixing stale heap entries.
    fn pop_best(&mut self) -> Option<((u32, u32), u64)> {
        while let Some((count, Reverse(pos), pair)) = self.heap.pop() {
            let Some(live) = self.pairs.get(&pair).map(|i| i.count) else {
                continue;
            };
            if live == 0 {
                continue;
            }
            let Some(first) = self.first(pair) else { continue };
            if live == count && first == pos {
                return Some((pair, count));
            }
            self.heap.push((live, Reverse(first), pair));
        }
        None
    }

    fn add(&mut self, pair: (u32, u32), delta: i64, pos: Option<u32>) {
        let info = self.pairs.entry(pair).or_insert(PairInfo {
            count: 0,
            positions: Vec::new(),
            head: 0,
        });
        info.count = (info.count as i64 + delta) as u64;
        if let Some(p) = pos {
            info.positions.push(p);
        }
    }

    /// Apply `pair` -> `id` at every live position, left to right.
    fn merge(&mut self, pair: (u32, u32), id: u32) {
        let Some(info) = self.pairs.get_mut(&pair) else {
            return;
        };
        let positions = std::mem::take(&mut info.positions);
        let head = info.head;
        let mut new_pairs: Vec<(u32, u32)> = Vec::new();
        for &p in &positions[head..] {
            if !self.live_at(p, pair) {
                continue; // stale, or overlapping the occurrence just merged
            }
            let (pu, q) = (p as usize, self.next[p as usize]);
            let qu = q as usize;
            let w = self.weight[pu] as i64;
            let before = self.prev[pu];
            let after = self.next[qu];
            if before != NONE {
                self.add((self.token[before as usize], pair.0), -w, None);
            }
            self.add(pair, -w, None);
            if after != NONE {
                self.add((pair.1, self.token[after as usize]), -w, None);
            }
            // merge: p takes the new token, q leaves the list
            self.token[pu] = id;
            self.token[qu] = NONE;
            self.next[pu] = after;
            if after != NONE {
                self.prev[after as usize] = p;
            }
            if before != NONE {
                let np = (self.token[before as usize], id);
                self.add(np, w, Some(before));
                new_pairs.push(np);
            }
            if after != NONE {
                let np = (id, self.token[after as usize]);
                self.add(np, w, Some(p));
                new_pairs.push(np);
            }
        }
        if let Some(info) = self.pairs.get_mut(&pair) {
            info.positions.clear();
            info.head = 0;
        }
        new_pairs.sort_unstable();
        new_pairs.dedup();
        for np in new_pairs {
            if let Some(first) = self.first(np) {
                let count = self.pairs[&np].count;
                if count > 0 {
                    self.heap.push((count, Reverse(first), np));
                }
            }
        }
    }
}

/// Train on `chunks` (distinct chunks in order of first appearance, with counts).  Stops early
/// when no pair is left.  `on_merge` sees each merge as it is made (minbpe's verbose lines).
pub fn train(
    chunks: &[(&[u8], u64)],
    num_merges: usize,
    batch_size: usize,
    control: &dyn Control,
    mut on_merge: impl FnMut(&MinMerge) -> Result<()>,
) -> Result<Vec<MinMerge>> {
    let mut state = State::new(chunks);
    let mut merges: Vec<MinMerge> = Vec::new();
    let mut round = 0;
    while merges.len() < num_merges {
        // 1. the round's k best pairs; any that shares a token with one taken before it waits
        let want = batch_size.min(num_merges - merges.len());
        let mut candidates = Vec::with_capacity(want);
        while candidates.len() < want {
            match state.pop_best() {
                Some(best) => candidates.push(best),
                None => break,
            }
        }
        if candidates.is_empty() {
            break;
        }
        let mut taken: Vec<((u32, u32), u64)> = Vec::with_capacity(candidates.len());
        for (pair, count) in candidates {
            let shares = taken
                .iter()
                .any(|&((a, b), _)| pair.0 == a || pair.0 == b || pair.1 == a || pair.1 == b);
            if shares {
                let first = state.first(pair).expect("a candidate has a live position");
                state.heap.push((count, Reverse(first), pair));
            } else {
                taken.push((pair, count));
            }
        }
        // 2. apply them in order
        for (pair, count) in taken {
            let m = MinMerge {
                pair,
                id: 256 + merges.len() as u32,
                count,
                round,
            };
            state.merge(pair, m.id);
            on_merge(&m)?;
            merges.push(m);
        }
        round += 1;
        control.progress("merges", merges.len() as u64, num_merges as u64)?;
    }
    control.progress("merges", merges.len() as u64, num_merges as u64)?;
    Ok(merges)
}
/// Train on `text`: its chunks by `pattern` (minbpe's RegexTokenizer), or the whole text as
/// one chunk without a pattern (its BasicTokenizer).  As [`train`] otherwise.
pub fn train_text(
    text: &str,
    num_merges: usize,
    pattern: Option<&str>,
    batch_size: usize,
    control: &dyn Control,
    on_merge: impl FnMut(&MinMerge) -> Result<()>,
) -> Result<Vec<MinMerge>> {
    let matcher = pattern.map(|p| Matcher::new(p, "pattern")).transpose()?;
    let chunks = distinct_chunks(text, matcher.as_ref())?;
    train(&chunks, num_merges, batch_size, control, on_merge)
}

/// The distinct chunks of `text` in order of first appearance, with their counts: the
/// matches of `matcher`, or the whole text without one (minbpe's BasicTokenizer).
pub fn distinct_chunks<'t>(text: &'t str, matcher: Option<&Matcher>) -> Result<Vec<(&'t [u8], u64)>> {
    let mut index: FxHashMap<&'t str, usize> = FxHashMap::default();
    let mut chunks: Vec<(&'t [u8], u64)> = Vec::new();
    let mut add = |piece: &'t str| match index.get(piece) {
        Some(&i) => chunks[i].1 += 1,
        None => {
            index.insert(piece, chunks.len());
            chunks.push((piece.as_bytes(), 1));
        }
    };
    match matcher {
        Some(m) => m.for_each_piece(text, &mut add)?,
        None => add(text),
    }
    Ok(chunks)
}

/// minbpe's encoder: merges by smallest id within each chunk (the whole text without a pattern).
pub struct MinbpeEncoder {
    ranks: FxHashMap<(u32, u32), (u32, u32)>,
    matcher: Option<Matcher>,
    /// what chunks became, per thread: minbpe has no vocabulary shortcut, so every chunk
    /// would go through the merges (see `encode/cache.rs`)
    cache: PieceCache,
}

impl MinbpeEncoder {
    /// `merges`: each pair with the id it makes; `pattern`: the chunking regex, if any.
    pub fn new(merges: Vec<((u32, u32), u32)>, pattern: Option<&str>) -> Result<MinbpeEncoder> {
        let matcher = pattern.map(|p| Matcher::new(p, "pattern")).transpose()?;
        let ranks = merges.into_iter().map(|(pair, id)| (pair, (id, id))).collect();
        Ok(MinbpeEncoder {
            ranks,
            matcher,
            cache: PieceCache::new(cache::DEFAULT_CAPACITY),
        })
    }

    /// The same encoder with `capacity` cache entries per thread (0: no cache); for tests.
    pub fn with_cache_capacity(mut self, capacity: usize) -> MinbpeEncoder {
        self.cache = PieceCache::new(capacity);
        self
    }

    pub fn encode_ordinary(&self, text: &str) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(text.len() / 3);
        let rank = |a: u32, b: u32| self.ranks.get(&(a, b)).copied();
        self.cache.with(text.len(), |mut table| {
            let mut one = |chunk: &str| {
                let raw = chunk.as_bytes();
                if let Some(ids) = table.as_deref().and_then(|t| t.get(raw)) {
                    out.extend_from_slice(ids);
                    return;
                }
                let start = out.len();
                merge_by_rank(raw.iter().map(|&b| u32::from(b)).collect(), rank, &mut out);
                if let Some(t) = table.as_deref_mut() {
                    t.insert(raw, &out[start..]);
                }
            };
            match &self.matcher {
                Some(m) => m.for_each_piece(text, &mut |c| one(c)),
                None => {
                    one(text);
                    Ok(())
                }
            }
        })?;
        Ok(out)
    }
}

#[cfg(test)]
mod encoder_tests {
    use super::*;

    /// The chunk cache changes nothing, however small (tables emptied every few chunks).
    #[test]
    fn the_chunk_cache_changes_no_id() {
        let text = "the cat sat on the mat; the mat sat on the cat, 123 456 the the cat's hat!\n".repeat(20);
        let gpt4 = Matcher::new(crate::pretokenize::cl100k::MINBPE_GPT4, "pattern").unwrap();
        let chunks = distinct_chunks(&text, Some(&gpt4)).unwrap();
        let merges = train(&chunks, 40, 1, &crate::control::Silent, |_| Ok(())).unwrap();
        let merges: Vec<((u32, u32), u32)> = merges.iter().map(|m| (m.pair, m.id)).collect();
        let pattern = crate::pretokenize::cl100k::MINBPE_GPT4;
        let plain = MinbpeEncoder::new(merges.clone(), Some(pattern))
            .unwrap()
            .with_cache_capacity(0)
            .encode_ordinary(&text)
            .unwrap();
        for capacity in [1, 2, 5, cache::DEFAULT_CAPACITY] {
            let enc = MinbpeEncoder::new(merges.clone(), Some(pattern))
                .unwrap()
                .with_cache_capacity(capacity);
            assert_eq!(enc.encode_ordinary(&text).unwrap(), plain, "cache {capacity}");
            assert_eq!(
                enc.encode_ordinary(&text).unwrap(),
                plain,
                "cache {capacity}, again"
            );
        }
    }
}
