//! Phase 2's merge loop split in two kinds of state, so that no process holds every segment
//! (docs/large-corpora.md, "Phase 2 partitioned"):
//!
//! * a [`SegmentShard`] holds some of the segments, in an arena as [`MergeState`] does, with
//!   the sequences where each of their pairs stands; told a merge, it rewrites its segments
//!   and returns the changes of its pair counts, and whether one of its whole segments became
//!   one token;
//! * the [`PairCounts`] of the driver hold the count of each distinct pair over all shards
//!   and the heap, and choose each merge as [`MergeState::best`] does.
//!
//! Pair counts are sums over segments, and a merge changes each segment on its own, so the
//! sum of the shards' changes is the change a single state sees, and the driver's counts are
//! the single state's counts after every merge: the choices, tie-breaks included, are the
//! same.  The floor (pairs counted `floor` times or fewer never win) applies to the heap
//! only: the driver's table keeps every pair, exactly, so no pair ever needs restoring.  The
//! shards keep no heap and no floor (a shard's count of a pair is not the corpus's).
//!
//! [`MergeState`]: super::MergeState
//! [`MergeState::best`]: super::MergeState::best

use rustc_hash::FxHashMap;

use super::heap::PairHeap;
use super::rewrite::rewrite_group;
use super::tables::{GroupChanges, PairInfo, PairTable, NO_NOTE};
use super::Seq;
use crate::error::{try_vec, Error, Result};
use crate::tokens::pairs::count_pairs;
use crate::tokens::{Pair, TokenId, Vocab};

/// Which of `parts` parts a segment goes to: a hash of its tokens, the same on every machine
/// and for every run (FNV-1a over the token ids).
pub fn part_of(tokens: &[TokenId], parts: usize) -> usize {
    if parts <= 1 {
        return 0;
    }
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &t in tokens {
        h = (h ^ t as u64).wrapping_mul(0x0000_0100_0000_01B3);
    }
    // (the high bits mix best)
    ((h >> 32) % parts as u64) as usize
}

/// Some of phase 2's segments, with the positions of their pairs (see the module notes).
pub struct SegmentShard {
    data: Vec<TokenId>,
    seqs: Vec<Seq>,
    table: PairTable,
    changes: GroupChanges,
}

impl SegmentShard {
    /// A shard of `segments`, each (tokens, count, whole).
    pub fn new<'s, I>(segments: I) -> Result<SegmentShard>
    where
        I: IntoIterator<Item = (&'s [TokenId], u64, bool)>,
        I::IntoIter: Clone,
    {
        let segments = segments.into_iter();
        let (mut n, mut tokens) = (0usize, 0usize);
        for (seq, _, _) in segments.clone() {
            n += 1;
            tokens += seq.len();
        }
        let what = format!("a phase-2 shard of {n} segments of {tokens} tokens");
        let mut data: Vec<TokenId> = try_vec(tokens, &what)?;
        let mut seqs: Vec<Seq> = try_vec(n, &what)?;
        let mut table = PairTable::default();
        let out_of_memory = || Error::Memory(format!("{what}: out of memory"));
        for (seq, weight, whole) in segments {
            let index = seqs.len() as u32;
            let len = u32::try_from(seq.len()).map_err(|_| out_of_memory())?;
            seqs.push(Seq {
                start: data.len(),
                weight,
                len,
                whole,
            });
            data.extend_from_slice(seq);
            let mut ok = true;
            count_pairs(seq, |p| {
                if table.try_reserve(1).is_err() {
                    ok = false;
                    return;
                }
                let info = table.entry(p).or_default();
                info.count += weight;
                ok &= info.try_note(index);
            });
            if !ok {
                return Err(out_of_memory());
            }
        }
        Ok(SegmentShard {
            data,
            seqs,
            table,
            changes: GroupChanges::default(),
        })
    }

    /// How many segments the shard holds.
    pub fn len(&self) -> usize {
        self.seqs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    /// How many distinct pairs its segments hold now.
    pub fn distinct_pairs(&self) -> usize {
        self.table.len()
    }

    /// The shard's count of each pair of its segments, sorted by pair.
    pub fn pair_counts(&self) -> Vec<(Pair, u64)> {
        let mut counts: Vec<(Pair, u64)> = self.table.iter().map(|(&p, info)| (p, info.count)).collect();
        counts.sort_unstable();
        counts
    }

    /// Apply `pair` (its result has id `merged`) to every segment of the shard that holds it.
    /// Returns whether a whole segment became one token, and the changes of the shard's pair
    /// counts (sorted by pair, none zero).
    pub fn merge(&mut self, pair: Pair, merged: TokenId) -> (bool, Vec<(Pair, i64)>) {
        let Some(info) = self.table.get_mut(&pair) else {
            return (false, Vec::new());
        };
        let mut indices = std::mem::take(&mut info.seqs);
        if !indices.windows(2).all(|w| w[0] < w[1]) {
            indices.sort_unstable();
            indices.dedup();
        }
        let mut changes = std::mem::take(&mut self.changes);
        // (one group, the table left alone: every change goes through `changes`)
        rewrite_group(
            &mut self.data,
            0,
            &self.seqs,
            &indices[..],
            pair,
            merged,
            &mut changes,
            None,
        );
        for &(index, len) in &changes.lengths {
            self.seqs[index as usize].len = len;
        }
        let became_single = changes.became_single;
        let notes = &changes.notes;
        let mut out: Vec<(Pair, i64)> = Vec::with_capacity(changes.delta.len());
        for (p, c) in changes.delta.drain() {
            if c.delta != 0 {
                out.push((p, c.delta));
            }
            let info = self.table.entry(p).or_insert_with(PairInfo::default);
            let live = info.count as i64 + c.delta;
            debug_assert!(live >= 0, "pair count below zero");
            if live <= 0 {
                self.table.remove(&p);
                continue;
            }
            info.count = live as u64;
            let mut at = c.first;
            while at != NO_NOTE {
                info.note(notes[at as usize].seq);
                at = notes[at as usize].next;
            }
        }
        changes.reset();
        self.changes = changes;
        out.sort_unstable();
        (became_single, out)
    }

    /// Add how often each token id occurs in the shard's segments, weighted, to `counts`
    /// (SPEC 8 `count`), growing it as needed.
    pub fn add_token_counts(&self, counts: &mut Vec<u64>) {
        for seq in &self.seqs {
            for &t in &self.data[seq.range()] {
                let t = t as usize;
                if t >= counts.len() {
                    counts.resize(t + 1, 0);
                }
                counts[t] += seq.weight;
            }
        }
    }
}

/// The driver's side: the count of each distinct pair over all shards, and the heap.
pub struct PairCounts {
    counts: FxHashMap<Pair, u64>,
    heap: PairHeap,
    floor: u64,
}

impl PairCounts {
    /// From the summed counts of every pair; pairs counted `floor` times or fewer get no heap
    /// entry (see [`super::MergeState::with_floor`]).
    pub fn new(counts: FxHashMap<Pair, u64>, floor: u64, vocab: &Vocab) -> Result<PairCounts> {
        let items: Vec<(u64, Pair)> = counts
            .iter()
            .filter(|&(_, &c)| c > floor)
            .map(|(&p, &c)| (c, p))
            .collect();
        let heap = PairHeap::try_from_vec(vocab, items, "phase 2's pair heap")?;
        Ok(PairCounts { counts, heap, floor })
    }

    /// How many distinct pairs are counted.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The pair to merge next and its count (above the floor), or `None`: as
    /// [`super::MergeState::best`].
    pub fn best(&mut self, vocab: &Vocab) -> Option<(Pair, u64)> {
        loop {
            let Some((count, pair)) = self.heap.peek() else {
                if self.heap.release(vocab, None) {
                    continue;
                }
                return None;
            };
            match self.counts.get(&pair).copied() {
                Some(live) if live == count => {
                    if self.heap.release(vocab, Some(count)) {
                        continue;
                    }
                    return Some((pair, count));
                }
                Some(live) if live > self.floor => self.heap.lower_top(vocab, live),
                _ => {
                    self.heap.pop(vocab);
                }
            }
        }
    }

    /// `pair` was merged everywhere: add the shards' summed count changes `delta`.
    pub fn apply(&mut self, pair: Pair, delta: &FxHashMap<Pair, i64>, vocab: &Vocab) {
        if self.heap.peek().is_some_and(|(_, p)| p == pair) {
            self.heap.retire_top();
        }
        for (&p, &d) in delta {
            if d == 0 {
                continue;
            }
            let count = self.counts.entry(p).or_insert(0);
            let live = *count as i64 + d;
            debug_assert!(live >= 0, "pair count below zero");
            if live <= 0 {
                self.counts.remove(&p);
            } else {
                *count = live as u64;
                if d > 0 && live as u64 > self.floor {
                    self.heap.push(vocab, (live as u64, p));
                }
            }
        }
        debug_assert!(
            !self.counts.contains_key(&pair),
            "the merged pair is left somewhere"
        );
    }
}
