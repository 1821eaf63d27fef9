//! The merge loop shared by phase 1 (BPE on words) and phase 2 (supermerges on candidates),
//! the same procedure as `reference/merging.py` (SPEC 2.3-2.6, 3.4):
//!
//! * pair counts: a repeat of k equal tokens counts ⌊k/2⌋ (SPEC 2.3), see [`count_pairs`];
//! * selection: the highest count, ties to the smallest (left bytes, right bytes): the order
//!   of [`PairHeap`] (SPEC 2.4);
//! * applying: left to right, non-overlapping, only in the sequences that hold the pair (a
//!   pair -> sequences index), updating counts by difference.
//!
//! The heap is lazy.  Within one merge, a pair that does not contain the new token can only
//! lose occurrences (its positions are untouched, and dropping the first token of a repeat of k
//! equal tokens turns ⌊k/2⌋ into ⌊(k-1)/2⌋), so only pairs whose count *grew* get a new
//! heap entry; an entry popped with a count above the live one is pushed back with the live
//! count.  Every live pair thus always has an entry whose count is at least its own, and the
//! first entry popped whose count is live is the SPEC's choice.

use hashbrown::hash_map::Entry as TableEntry;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

mod heap;
pub mod partitioned;
mod rewrite;
mod setup;
mod tables;

use heap::PairHeap;
use rewrite::rewrite_group;
use tables::{shard_of, GroupChanges, PairInfo, PairTable, NO_NOTE, PARALLEL_MERGE};

use super::long::LongSequence;
use crate::tokens::pairs::count_pairs;
use crate::tokens::{Pair, TokenId, Vocab};

/// A merge as training records it, in token ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrainMerge {
    pub pair: Pair,
    pub count: u64,
    pub flag: bool,
}

/// Weighted token sequences with live pair counts, a pair -> sequences index and the heap.
///
/// Two kinds of parallel work, on the current rayon pool, neither of which changes a result:
/// the pair table is split into one shard per thread (a pair's shard comes from its hash), so
/// the initial count builds the shards side by side; and a merge that touches many sequences
/// splits them into contiguous groups whose tokens (disjoint parts of the arena) are rewritten
/// in parallel, each group returning its count changes.
pub struct MergeState {
    /// all sequences back to back; merges only shorten them, in place
    data: Vec<TokenId>,
    /// start and current length of each sequence in `data`
    seqs: Vec<Seq>,
    shards: Vec<PairTable>,
    heap: PairHeap,
    /// sequences longer than [`LONG_SEQUENCE`] tokens, by index: kept out of `data` (their
    /// span there is empty) and merged through a position index, see `long.rs`
    long: FxHashMap<u32, LongSequence>,
    /// token counts and holders, kept only for PickyBPE deletions (see [`Self::track_tokens`])
    tokens: Option<TokenTracking>,
    /// has a deletion moved a sequence to the end of the arena?  Then sequence order is no
    /// longer arena order.
    relocated: bool,
    /// the changes of the current merge, kept empty between merges: most merges touch a few
    /// sequences, and allocating and growing these afresh each time was a tenth of a small
    /// training's merge loop.  (Boxed: moving the whole struct out and back was two calls
    /// to `memcpy` per merge.)
    changes: Option<Box<GroupChanges>>,
    /// the bytes of the token a merge makes (see [`Self::merge_pair`])
    bytes: Vec<u8>,
    /// pairs counted at most this often get no heap entry, and may have no table entry (see
    /// [`Self::with_floor`])
    floor: u64,
    /// with a floor: which token ids may occur in the sequences (every id that did at the
    /// start or was merged since; see [`Self::with_floor`])
    present: Vec<bool>,
    /// how many merges made a token that was present already (for tests that force it)
    #[cfg(test)]
    restores: usize,
}

/// One sequence: where it lies in the arena, its weight, and whether it is a whole word or
/// candidate (not a segment of one; only a whole sequence that becomes one token sets a
/// merge's flag).  Kept together because phase 2 is bound by memory latency: a merge
/// touches a few sequences scattered over millions, and this reads one cache line per
/// sequence where three arrays (start and length, weight, wholeness) read three.  (On a
/// shared 2-core machine the gain was within the noise of CPU-time samples, about 3% of
/// phase 2 of BoundlessBPE on 20 MB.)
#[derive(Clone, Copy)]
struct Seq {
    start: usize,
    weight: u64,
    len: u32,
    whole: bool,
}

impl Seq {
    /// Where the sequence's tokens are in the arena.
    #[inline]
    fn range(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.len as usize
    }
}

/// What PickyBPE deletions need (SPEC 9): how often each token occurs, weighted, and which
/// sequences may hold it (stale entries are allowed).
struct TokenTracking {
    counts: Vec<u64>,
    holders: Vec<Vec<u32>>,
}

impl MergeState {
    /// Put back into the pair table, with their exact counts and sequences, the pairs holding
    /// `token` that it left out (see [`Self::with_floor`]): before a merge that makes `token`
    /// while it may occur already.  Reads every sequence; rare.
    fn restore_pairs_of(&mut self, token: TokenId) {
        let mut found: FxHashMap<Pair, PairInfo> = FxHashMap::default();
        let mut count_in = |seq: &[TokenId], w: u64, index: u32| {
            if seq.contains(&token) {
                count_pairs(seq, |p| {
                    if p.0 == token || p.1 == token {
                        let info = found.entry(p).or_default();
                        info.count += w;
                        info.note(index);
                    }
                });
            }
        };
        for (i, span) in self.seqs.iter().enumerate() {
            match self.long.get(&(i as u32)) {
                Some(long) => count_in(&long.tokens().collect::<Vec<_>>(), span.weight, i as u32),
                None => count_in(&self.data[span.range()], span.weight, i as u32),
            }
        }
        let n = self.shards.len();
        for (p, info) in found {
            if let TableEntry::Vacant(e) = self.shards[shard_of(p, n)].entry(p) {
                debug_assert!(info.count <= self.floor, "a pair above the floor was left out");
                e.insert(info);
            }
        }
    }

    /// Start keeping token counts and holders, which [`Self::token_count`] and
    /// [`Self::delete`] need; plain BPE never pays for them.
    pub fn track_tokens(&mut self, n_tokens: usize) {
        // Deletions rewrite sequences in the arena, which the position index of a very long
        // sequence does not support: such sequences go back into the arena (at the plain cost
        // per merge; PickyBPE on a pretoken of megabytes is slow, never wrong).
        let mut long: Vec<(u32, LongSequence)> = std::mem::take(&mut self.long).into_iter().collect();
        long.sort_unstable_by_key(|(index, _)| *index);
        for (index, seq) in long {
            let start = self.data.len();
            self.data.extend(seq.tokens());
            let seq = &mut self.seqs[index as usize];
            seq.start = start;
            seq.len = (self.data.len() - start) as u32;
            self.relocated = true;
        }
        let mut counts = vec![0u64; n_tokens];
        let mut holders: Vec<Vec<u32>> = vec![Vec::new(); n_tokens];
        for (i, seq) in self.seqs.iter().enumerate() {
            let w = seq.weight;
            for &t in &self.data[seq.range()] {
                counts[t as usize] += w;
                let h = &mut holders[t as usize];
                if h.last() != Some(&(i as u32)) {
                    h.push(i as u32);
                }
            }
        }
        self.tokens = Some(TokenTracking { counts, holders });
    }

    /// How often `token` occurs, weighted (SPEC 9 `count(t)`); needs [`Self::track_tokens`].
    pub fn token_count(&self, token: TokenId) -> u64 {
        let tracking = self.tokens.as_ref().expect("token counts are tracked");
        tracking.counts.get(token as usize).copied().unwrap_or(0)
    }

    /// Replace every occurrence of `token` by `parts` (a PickyBPE deletion, SPEC 9), updating
    /// pair and token counts; needs [`Self::track_tokens`].  A sequence grows, so it moves to
    /// the end of the arena.
    pub fn delete(&mut self, token: TokenId, parts: &[TokenId], vocab: &Vocab) {
        debug_assert_eq!(self.floor, 0, "deletions keep every pair in the table");
        let mut tracking = self.tokens.take().expect("token counts are tracked");
        let top = parts.iter().copied().chain([token]).max().unwrap_or(0) as usize + 1;
        if tracking.counts.len() < top {
            tracking.counts.resize(top, 0);
            tracking.holders.resize_with(top, Vec::new);
        }
        let mut indices = std::mem::take(&mut tracking.holders[token as usize]);
        indices.sort_unstable();
        indices.dedup();
        let mut delta: FxHashMap<Pair, i64> = FxHashMap::default();
        let mut removed = 0u64;
        let mut after: Vec<TokenId> = Vec::new();
        for index in indices {
            let seq = &self.seqs[index as usize];
            let (w, before) = (seq.weight, &self.data[seq.range()]);
            let n = before.iter().filter(|&&t| t == token).count();
            if n == 0 {
                continue; // stale holder entry
            }
            after.clear();
            for &t in before {
                if t == token {
                    after.extend_from_slice(parts);
                } else {
                    after.push(t);
                }
            }
            count_pairs(before, |p| *delta.entry(p).or_insert(0) -= w as i64);
            let mut noted: Vec<Pair> = Vec::new();
            count_pairs(&after, |p| {
                *delta.entry(p).or_insert(0) += w as i64;
                noted.push(p);
            });
            for p in noted {
                self.info_mut(p).note(index);
            }
            removed += n as u64 * w;
            for &part in parts {
                let h = &mut tracking.holders[part as usize];
                if h.last() != Some(&index) {
                    h.push(index);
                }
            }
            let seq = &mut self.seqs[index as usize];
            seq.start = self.data.len();
            seq.len = after.len() as u32;
            self.data.extend_from_slice(&after);
            self.relocated = true;
        }
        tracking.counts[token as usize] -= removed;
        for &part in parts {
            tracking.counts[part as usize] += removed;
        }
        self.tokens = Some(tracking);
        self.apply_delta(&mut delta, vocab);
    }

    /// Add summed pair-count changes to the live counts; a pair whose count grew gets a new
    /// heap entry (see the module notes).
    fn apply_delta(&mut self, delta: &mut FxHashMap<Pair, i64>, vocab: &Vocab) {
        // (the heap's order is total, so the order of these updates does not matter)
        let n = self.shards.len();
        for (p, d) in delta.drain() {
            if d == 0 {
                continue;
            }
            let shard = &mut self.shards[shard_of(p, n)];
            let info = shard.entry(p).or_default();
            let live = info.count as i64 + d;
            debug_assert!(live >= 0, "pair count below zero");
            if live <= 0 {
                shard.remove(&p);
            } else {
                info.count = live as u64;
                if d > 0 && live as u64 > self.floor {
                    self.heap.push(vocab, (live as u64, p));
                }
            }
        }
    }

    /// [`Self::apply_delta`] for a merge's changes, which also note where new pairs are.
    fn apply_changes(&mut self, changes: &mut GroupChanges, vocab: &Vocab) {
        let n = self.shards.len();
        let notes = &changes.notes;
        // (Tried and dropped: counting a new pair's notes first and making room for
        // them when they spill, instead of the list growing by doubling: phase 1 of three
        // small trainings 111.3 -> 111.6 M instructions.)
        let note_all = |info: &mut PairInfo, mut at: u32| {
            while at != NO_NOTE {
                info.note(notes[at as usize].seq);
                at = notes[at as usize].next;
            }
        };
        for (p, c) in changes.delta.drain() {
            let shard = &mut self.shards[shard_of(p, n)];
            if c.delta == 0 {
                // (a pair that is not live has no occurrence to note)
                if c.first != NO_NOTE {
                    if let Some(info) = shard.get_mut(&p) {
                        note_all(info, c.first);
                    }
                }
                continue;
            }
            // (a pair left out of the table is counted at most `floor` times, and this
            // merge made all of its occurrences if it gains any: see `with_floor`)
            let floor = i64::try_from(self.floor).unwrap_or(i64::MAX);
            if c.delta > floor {
                // (it may be new: one look-up for finding or inserting it, not two)
                let info = shard.entry(p).or_default();
                info.count += c.delta as u64;
                note_all(info, c.first);
                let live = info.count;
                self.heap.push(vocab, (live, p));
                continue;
            }
            // (one look-up: a found entry is lowered or removed in place)
            let live = match shard.entry(p) {
                TableEntry::Occupied(mut o) => {
                    let info = o.get_mut();
                    let live = info.count as i64 + c.delta;
                    debug_assert!(live >= 0, "pair count below zero");
                    if live <= floor {
                        o.remove();
                        continue;
                    }
                    info.count = live as u64;
                    note_all(info, c.first);
                    live
                }
                TableEntry::Vacant(v) => {
                    debug_assert!(c.delta >= 0 || floor > 0, "pair count below zero");
                    if c.delta <= floor {
                        continue;
                    }
                    let info = v.insert(PairInfo::default());
                    info.count = c.delta as u64;
                    note_all(info, c.first);
                    c.delta
                }
            };
            if c.delta > 0 && live > floor {
                self.heap.push(vocab, (live as u64, p));
            }
        }
    }

    #[inline]
    fn info(&self, p: &Pair) -> Option<&PairInfo> {
        self.shards[shard_of(*p, self.shards.len())].get(p)
    }

    #[inline]
    fn info_mut(&mut self, p: Pair) -> &mut PairInfo {
        let n = self.shards.len();
        self.shards[shard_of(p, n)].entry(p).or_default()
    }

    /// The pair to merge next and its count, or `None` when no pair is left.
    pub fn best(&mut self, vocab: &Vocab) -> Option<(Pair, u64)> {
        loop {
            let Some((count, pair)) = self.heap.peek() else {
                if self.heap.release(vocab, None) {
                    continue;
                }
                return None;
            };
            match self.info(&pair).map(|info| info.count) {
                Some(live) if live == count => {
                    // (entries held back count no more than they may beat)
                    if self.heap.release(vocab, Some(count)) {
                        continue;
                    }
                    return Some((pair, count));
                }
                Some(live) if live > self.floor => {
                    // the count went down since this entry was pushed: the entry takes the
                    // live count (lower than it had, so it moves down)
                    self.heap.lower_top(vocab, live);
                }
                _ => {
                    // gone, or at the floor: out of the heap until its count rises again
                    self.heap.pop(vocab);
                }
            }
        }
    }

    /// Apply `pair` (its result has id `merged`) everywhere; see [`rewrite_group`].  Returns
    /// whether some sequence became a single token (the merge's flag).
    pub fn merge(&mut self, pair: Pair, merged: TokenId, vocab: &Vocab) -> bool {
        if self.floor > 0 {
            // pairs left out of the table must have no occurrence this merge adds to (see
            // `with_floor`)
            let m = merged as usize;
            if m >= self.present.len() {
                self.present.resize((m + 1).max(2 * self.present.len()), false);
            }
            if self.present[m] {
                #[cfg(test)]
                {
                    self.restores += 1;
                }
                self.restore_pairs_of(merged);
            }
            self.present[m] = true;
            if self.info(&pair).is_none() {
                // (a pair at or below the floor, merged all the same: a caller's replay)
                self.restore_pairs_of(pair.0);
            }
        }
        // the pair's count stays until its delta takes it to zero
        // (kept as the small vector it is: a vector made of it was an allocation per merge)
        let mut indices = std::mem::take(&mut self.info_mut(pair).seqs);
        // (almost always in order already: the first count notes sequences in order, and so
        // does one merge; a pair gains sequences in a later merge only when that merge makes one
        // of its tokens again.  Sorting and removing repeats anyway, and growing the
        // present flags by one id per merge, were 1% of a small training's phase 1; three
        // trainings of taylorswift.txt at 5,000, 112.5 -> 111.3 M instructions.)
        if !indices.windows(2).all(|w| w[0] < w[1]) {
            indices.sort_unstable();
            indices.dedup();
        }
        // long sequences first, through their position index.  (Only when there are any:
        // adding up an empty set of changes and dropping it was 2% of a small training's
        // phase 1.)
        let mut long_changes = None;
        if !self.long.is_empty() {
            let out = long_changes.insert(GroupChanges::default());
            let (mut delta, mut made) = (FxHashMap::default(), Vec::new());
            indices.retain(|index| {
                let index = *index;
                let Some(seq) = self.long.get_mut(&index) else {
                    return true;
                };
                let Seq { weight, whole, .. } = self.seqs[index as usize];
                let w = weight as i64;
                if seq.merge(pair, merged, w, &mut delta, |p| made.push((p, index))) {
                    out.lengths.push((index, seq.len() as u32));
                    out.became_single |= seq.len() == 1 && whole;
                }
                false
            });
            for (p, d) in delta {
                out.add(p, d);
            }
            for (p, index) in made {
                out.add_made(p, 0, index);
            }
        }
        if self.relocated {
            // the groups below need sequences in arena order
            let seqs = &self.seqs;
            indices.sort_unstable_by_key(|&i| seqs[i as usize].start);
        }
        let groups = if indices.len() >= PARALLEL_MERGE {
            rayon::current_num_threads()
        } else {
            1
        };
        let mut changes = self.changes.take().unwrap_or_default();
        if groups <= 1 {
            rewrite_group(
                &mut self.data,
                0,
                &self.seqs,
                &indices[..],
                pair,
                merged,
                &mut changes,
                Some((&mut self.shards, self.floor)),
            );
        } else {
            // contiguous groups of sequences own disjoint, increasing parts of the arena
            let per = indices.len().div_ceil(groups);
            let mut parts: Vec<(&mut [TokenId], usize, &[u32])> = Vec::with_capacity(groups);
            let mut rest: &mut [TokenId] = &mut self.data;
            let mut rest_base = 0;
            for chunk in indices.chunks(per) {
                let first = self.seqs[chunk[0] as usize].start;
                let Seq { start: last, len, .. } = self.seqs[*chunk.last().unwrap() as usize];
                let (_, tail) = std::mem::take(&mut rest).split_at_mut(first - rest_base);
                let (mine, tail) = tail.split_at_mut(last + len as usize - first);
                parts.push((mine, first, chunk));
                rest = tail;
                rest_base = last + len as usize;
            }
            let seqs = &self.seqs;
            let groups: Vec<GroupChanges> = parts
                .into_par_iter()
                .map(|(data, base, chunk)| {
                    let mut out = GroupChanges::default();
                    rewrite_group(data, base, seqs, chunk, pair, merged, &mut out, None);
                    out
                })
                .collect();
            for g in groups {
                changes.absorb(g);
            }
        }
        if let Some(long_changes) = long_changes {
            changes.absorb(long_changes);
        }
        if let Some(tracking) = &mut self.tokens {
            let top = merged.max(pair.0).max(pair.1) as usize + 1;
            if tracking.holders.len() < top {
                tracking.holders.resize_with(top, Vec::new);
                tracking.counts.resize(top, 0);
            }
            let h = &mut tracking.holders[merged as usize];
            h.extend(changes.lengths.iter().map(|&(index, _)| index));
        }
        for &(index, len) in &changes.lengths {
            self.seqs[index as usize].len = len;
        }
        let (became_single, made) = (changes.became_single, changes.made);
        if let Some(tracking) = &mut self.tokens {
            if made > 0 {
                tracking.counts[merged as usize] += made;
                tracking.counts[pair.0 as usize] -= made;
                tracking.counts[pair.1 as usize] -= made;
            }
        }
        // the merged pair leaves every sequence: the top entry is its own when it was chosen
        // from the heap (not when the caller replays a merge), and goes
        if self.heap.peek().is_some_and(|(_, p)| p == pair) {
            self.heap.retire_top();
        }
        self.apply_changes(&mut changes, vocab);
        debug_assert!(self.info(&pair).is_none(), "the merged pair is left somewhere");
        changes.reset();
        self.changes = Some(changes);
        became_single
    }

    /// One training step, the same in every phase: the pair chosen with `count` becomes a
    /// token (added to `vocab` unless its bytes are there already, SPEC 2.6), is applied
    /// everywhere, and is recorded.  Returns the record and the new token's id.
    /// The error of a merge inside a very long sequence that ran out of memory, if one did
    /// (the state is then inconsistent: training must stop with it).
    pub fn take_failure(&mut self) -> Option<crate::error::Error> {
        self.long.values_mut().find_map(|l| l.take_failure())
    }

    pub fn merge_pair(&mut self, vocab: &mut Vocab, pair: Pair, count: u64) -> (TrainMerge, TokenId) {
        // (in a buffer kept for it: a new vector per merge was an allocation and a growth)
        let mut merged = std::mem::take(&mut self.bytes);
        merged.clear();
        merged.extend_from_slice(vocab.bytes(pair.0));
        merged.extend_from_slice(vocab.bytes(pair.1));
        let (id, _) = vocab.add(&merged);
        self.bytes = merged;
        let flag = self.merge(pair, id, vocab);
        (TrainMerge { pair, count, flag }, id)
    }

    /// Each sequence's token when it is one token now, by sequence index.
    pub fn single_tokens(&self) -> Vec<Option<TokenId>> {
        (0..self.seqs.len())
            .map(|i| match self.long.get(&(i as u32)) {
                Some(long) => {
                    let mut tokens = long.tokens();
                    match (tokens.next(), tokens.next()) {
                        (Some(t), None) => Some(t),
                        _ => None,
                    }
                }
                None => match &self.data[self.seqs[i].range()] {
                    &[t] => Some(t),
                    _ => None,
                },
            })
            .collect()
    }

    /// How often each token id occurs in the sequences, weighted (SPEC 8 `count`).
    pub fn token_counts(&self, n_tokens: usize) -> Vec<u64> {
        let mut counts = vec![0u64; n_tokens];
        for (i, seq) in self.seqs.iter().enumerate() {
            let w = seq.weight;
            match self.long.get(&(i as u32)) {
                Some(long) => long.tokens().for_each(|t| counts[t as usize] += w),
                None => self.data[seq.range()]
                    .iter()
                    .for_each(|&t| counts[t as usize] += w),
            }
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::byte_id;
    use crate::tokens::pairs::apply_merge;
    use crate::train::long::LONG_SEQUENCE;

    fn ids(s: &[u8]) -> Vec<TokenId> {
        s.iter().map(|&b| byte_id(b).unwrap()).collect()
    }

    #[test]
    fn ties_break_by_bytes() {
        // after (z,z) and (a,a), (aa,q) and (zz,q) tie at 2; b"aa" < b"zz"
        let mut vocab = Vocab::base();
        let words: Vec<(&[u8], u64)> = vec![(b"zz", 5), (b"aa", 4), (b"zzq", 2), (b"aaq", 2)];
        let seqs: Vec<(Vec<TokenId>, u64)> = words.iter().map(|w| (ids(w.0), w.1)).collect();
        let mut state = MergeState::new(seqs.iter().map(|(s, w)| (s.as_slice(), *w)), &vocab);
        let mut chosen = Vec::new();
        while let Some((pair, count)) = state.best(&vocab) {
            let (_, id) = state.merge_pair(&mut vocab, pair, count);
            chosen.push((String::from_utf8(vocab.bytes(id).to_vec()).unwrap(), count));
        }
        let expect: Vec<(String, u64)> = vec![
            ("zz".into(), 7),
            ("aa".into(), 6),
            ("aaq".into(), 2),
            ("zzq".into(), 2),
        ];
        assert_eq!(chosen, expect);
    }

    #[test]
    fn an_arena_with_long_sequences_merges_as_the_same_sequences_given_apart() {
        // two long sequences (the longer one takes the arena's buffer) between short ones: the
        // same merges, counts and tokens as the state built from the sequences one by one
        let mut rng = crate::XorShift(0x2545_F491_4F6C_DD1D);
        let mut word = |len: usize| -> Vec<TokenId> {
            ids(&(0..len)
                .map(|_| b"abcab"[rng.below(5) as usize])
                .collect::<Vec<u8>>())
        };
        let seqs: Vec<(Vec<TokenId>, u64)> = vec![
            (word(5), 3),
            (word(LONG_SEQUENCE + 7), 1),
            (word(3), 2),
            (word(LONG_SEQUENCE + 900), 2),
            (word(8), 1),
        ];
        let (mut data, mut ends) = (Vec::new(), Vec::new());
        for (s, _) in &seqs {
            data.extend_from_slice(s);
            ends.push(data.len());
        }
        let weights: Vec<u64> = seqs.iter().map(|s| s.1).collect();
        let mut vocabs = [Vocab::base(), Vocab::base()];
        let mut states = [
            MergeState::try_from_arena(data, &ends, &weights, &vocabs[0]).unwrap(),
            MergeState::new(seqs.iter().map(|(s, w)| (s.as_slice(), *w)), &vocabs[1]),
        ];
        for merge in 0..200 {
            let chosen = [states[0].best(&vocabs[0]), states[1].best(&vocabs[1])];
            assert_eq!(chosen[0], chosen[1], "merge {merge}");
            let Some((pair, count)) = chosen[0] else { break };
            for k in 0..2 {
                states[k].merge_pair(&mut vocabs[k], pair, count);
            }
        }
        let n = vocabs[0].len();
        assert_eq!(states[0].token_counts(n), states[1].token_counts(n));
    }

    #[test]
    fn merging_to_the_end_matches_recounting_every_step() {
        // many pairs counted once and some repeats: every merge, down to the last pair, must
        // be the one a full recount picks
        let mut rng = crate::XorShift(0x9E37_79B9_7F4A_7C15);
        let mut words: Vec<(Vec<TokenId>, u64)> = (0..300)
            .map(|_| {
                let len = 1 + rng.below(9) as usize;
                let w: Vec<u8> = (0..len).map(|_| b"aabcdefgh"[rng.below(9) as usize]).collect();
                (ids(&w), if rng.below(4) == 0 { 1 + rng.below(5) } else { 1 })
            })
            .collect();
        let mut vocab = Vocab::base();
        let mut state = MergeState::new(words.iter().map(|(s, w)| (s.as_slice(), *w)), &vocab);
        let mut merges = 0;
        loop {
            let mut counts: FxHashMap<Pair, u64> = FxHashMap::default();
            for (w, c) in &words {
                count_pairs(w, |p| *counts.entry(p).or_insert(0) += c);
            }
            let expected = counts.iter().map(|(&p, &c)| (c, p)).min_by(|a, b| {
                b.0.cmp(&a.0)
                    .then_with(|| vocab.bytes(a.1 .0).cmp(vocab.bytes(b.1 .0)))
                    .then_with(|| vocab.bytes(a.1 .1).cmp(vocab.bytes(b.1 .1)))
            });
            let chosen = state.best(&vocab);
            assert_eq!(chosen, expected.map(|(c, p)| (p, c)), "merge {merges}");
            let Some((pair, count)) = chosen else { break };
            let (_, id) = state.merge_pair(&mut vocab, pair, count);
            for (w, _) in &mut words {
                apply_merge(w, pair, id);
            }
            merges += 1;
        }
        assert!(merges > 100, "{merges} merges");
    }

    #[test]
    fn a_floor_changes_no_choice_above_it() {
        // a floored state (pairs at or below the floor out of the heap and mostly out of the
        // table) picks what an unfloored one picks for as long as the best pair counts more
        // than the floor, including after merges that make a token again ("ab" + "c" after
        // "a" + "bc": its pairs are counted again) and merges of a pair at or below the floor
        // (as a replay may ask); a few rounds hold one sequence longer than `LONG_SEQUENCE`
        let mut rng = crate::XorShift(0xC2B2_AE3D_27D4_EB4F);
        let (mut restores, mut long_rounds) = (0, 0);
        for round in 0..1000 {
            // tokens whose bytes overlap, as pretoken-level tokens of phase 2 may ("ab" + "c"
            // and "a" + "bc" both make "abc")
            let mut vocab = Vocab::base();
            let tokens: Vec<TokenId> = [&b"a"[..], b"b", b"c", b"ab", b"bc", b"abc", b"ca"]
                .iter()
                .take(3 + round % 5)
                .map(|t| vocab.add(t).0)
                .collect();
            let mut seqs: Vec<(Vec<TokenId>, u64)> = (0..5 + rng.below(200))
                .map(|_| {
                    let len = 2 + rng.below(8) as usize;
                    let s: Vec<TokenId> = (0..len)
                        .map(|_| tokens[rng.below(tokens.len() as u64) as usize])
                        .collect();
                    (s, 1 + rng.below(3))
                })
                .collect();
            if round % 250 == 0 {
                let s: Vec<TokenId> = (0..LONG_SEQUENCE + 50)
                    .map(|_| tokens[rng.below(tokens.len() as u64) as usize])
                    .collect();
                seqs.push((s, 1));
                long_rounds += 1;
            }
            let floor = 1 + rng.below(6);
            let view = || seqs.iter().map(|(s, w)| (s.as_slice(), *w));
            let mut exact = MergeState::new(view(), &vocab);
            let mut floored = MergeState::new(view(), &vocab).with_floor(floor, &vocab);
            let mut steps = 0;
            while let Some((pair, count)) = exact.best(&vocab) {
                let low = count <= floor;
                if low {
                    // merged all the same, once, as a replay may ask
                    if rng.below(2) == 0 {
                        break;
                    }
                } else {
                    assert_eq!(
                        floored.best(&vocab),
                        Some((pair, count)),
                        "round {round}, step {steps}"
                    );
                }
                let (merge, id) = exact.merge_pair(&mut vocab, pair, count);
                let flag = floored.merge(pair, id, &vocab);
                assert_eq!(flag, merge.flag, "round {round}, step {steps}");
                steps += 1;
                // the table holds every pair counted above the floor, exactly
                for shard in &exact.shards {
                    for (p, info) in shard.iter().filter(|(_, i)| i.count > floor) {
                        let got = floored.info(p).map(|i| i.count);
                        assert_eq!(got, Some(info.count), "round {round}, step {steps}");
                    }
                }
                if low {
                    break;
                }
            }
            if exact.best(&vocab).is_none_or(|(_, c)| c <= floor) {
                assert!(floored.best(&vocab).is_none(), "round {round}");
            }
            let n = vocab.len();
            assert_eq!(floored.token_counts(n), exact.token_counts(n), "round {round}");
            assert_eq!(floored.single_tokens(), exact.single_tokens(), "round {round}");
            restores += floored.restores;
        }
        assert!(restores > 20 && long_rounds > 0, "{restores} restores");
    }
}
