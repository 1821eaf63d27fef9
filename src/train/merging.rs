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
use rustc_hash::{FxBuildHasher, FxHashMap};
use smallvec::SmallVec;

use super::long::{LongSequence, LONG_SEQUENCE};
use crate::tokens::{Pair, TokenId, Vocab, BASE_VOCAB};

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

/// A heap entry: the count, the pair, and the prefix keys of its two tokens (see
/// [`crate::tokens::prefix_key`]).
#[derive(Clone, Copy)]
struct Entry {
    count: u64,
    left_key: u64,
    right_key: u64,
    pair: Pair,
}

/// A max-heap of `(count, pair)` whose order is the SPEC tie-break: higher count first, then
/// smaller (left bytes, right bytes).  Written by hand because the order needs the token
/// table; prefix keys settle almost every comparison without touching the bytes.
///
/// Entries counted at most [`HELD_BACK`] times are held back in a plain list until the
/// caller finds nothing better in the heap ([`Self::release`]); a training that stops above
/// that count never orders them.  (Round 9: most entries pushed in a merge loop are pairs
/// made once, which only deepened the heap every other pop and lowering goes through.)
///
/// Round 11, tried and dropped: one heap for the entries counted 64 times or more and one
/// per count below, the top being the first one's or that of the highest count with entries
/// (taylorswift.txt at 5,000, three trainings: choosing the pair 18.7 -> 18.4 M instructions
/// but pushing dearer, phase 1 115.1 -> 115.9 M).  At 5,000 a third of the merges count 2,
/// so the heap of count 2 is about as deep as the one heap was.
///
/// Round 12, measured for whoever looks next (BPE, taylorswift.txt at 5,000): the heap holds
/// 4,600-6,000 entries until the 2,000th token and 2,100-2,700 at the end, 35-60% of them live
/// (the rest are stale: their pair gone or counted less), so compacting it would take about
/// one level off 11-13.  `sift_down` is ~15% of `perf`'s CPU-time samples of a training
/// (LTO build) against ~10% of its instructions: the child chosen at each level is a branch
/// the data decides.
pub struct PairHeap {
    items: Vec<Entry>,
    held: Vec<(u64, Pair)>,
    /// entries counted this often or less go to `held`; 0 once released
    held_max: u64,
    /// is the top entry's pair gone, so that the next push may take its place?  (See
    /// [`Self::retire_top`].)
    top_gone: bool,
}

/// See [`PairHeap`].
const HELD_BACK: u64 = 1;

impl Default for PairHeap {
    fn default() -> PairHeap {
        PairHeap {
            items: Vec::new(),
            held: Vec::new(),
            held_max: HELD_BACK,
            top_gone: false,
        }
    }
}

impl PairHeap {
    #[inline(always)]
    fn before(vocab: &Vocab, a: &Entry, b: &Entry) -> bool {
        if a.count != b.count {
            return a.count > b.count;
        }
        if a.left_key != b.left_key {
            return a.left_key < b.left_key;
        }
        if a.pair.0 != b.pair.0 {
            let left = vocab.bytes(a.pair.0).cmp(vocab.bytes(b.pair.0));
            if left != std::cmp::Ordering::Equal {
                return left.is_lt();
            }
        }
        if a.right_key != b.right_key {
            return a.right_key < b.right_key;
        }
        a.pair.1 != b.pair.1 && vocab.bytes(a.pair.1) < vocab.bytes(b.pair.1)
    }

    #[inline]
    fn entry(vocab: &Vocab, count: u64, pair: Pair) -> Entry {
        Entry {
            count,
            left_key: vocab.key(pair.0),
            right_key: vocab.key(pair.1),
            pair,
        }
    }

    /// Build a heap from unordered items in linear time.
    pub fn from_vec(vocab: &Vocab, items: Vec<(u64, Pair)>) -> PairHeap {
        let mut heap = PairHeap::default();
        let (held, items): (Vec<_>, Vec<_>) = items.into_iter().partition(|&(c, _)| c <= heap.held_max);
        heap.held = held;
        heap.items = items.into_iter().map(|(c, p)| Self::entry(vocab, c, p)).collect();
        heap.heapify(vocab);
        heap
    }

    fn heapify(&mut self, vocab: &Vocab) {
        self.top_gone = false;
        for i in (0..self.items.len() / 2).rev() {
            self.sift_down(vocab, i);
        }
    }

    /// Are entries held back that might beat a top counted `count` times (or an empty heap,
    /// `None`)?  Then they join the heap, and nothing is held back from now on.
    pub fn release(&mut self, vocab: &Vocab, count: Option<u64>) -> bool {
        if self.held_max == 0 || count.is_some_and(|c| c > self.held_max) {
            return false;
        }
        self.held_max = 0;
        if self.held.is_empty() {
            return false;
        }
        let held = std::mem::take(&mut self.held);
        self.items
            .extend(held.into_iter().map(|(c, p)| Self::entry(vocab, c, p)));
        self.heapify(vocab);
        true
    }

    /// Drop every entry counted `count` times or fewer.  (Round 12: the heap was built again
    /// from the entries kept, though with a floor of 1 those held back are all that go.
    /// Taylorswift.txt at 5,000, a whole training: BPE 49.78 -> 49.48 M instructions,
    /// BoundlessBPE 60.67 -> 60.04 M, SuperBPE 57.52 -> 57.17 M.)
    fn drop_at_most(&mut self, vocab: &Vocab, count: u64) {
        self.held.retain(|&(c, _)| c > count);
        if self.items.iter().any(|e| e.count <= count) {
            self.items.retain(|e| e.count > count);
            self.heapify(vocab);
        }
    }

    /// Move the entry at `i` down to its place.  The hole left by the entry goes down along
    /// the better child to the bottom, one comparison per level, and the entry then goes up
    /// from there: the entries that move down (lowered or stale tops, the last leaf after a
    /// pop) mostly belong near the bottom, so this takes about half the comparisons of the
    /// textbook sift, which compares the entry with the better child at every level too.
    fn sift_down(&mut self, vocab: &Vocab, i: usize) {
        let n = self.items.len();
        let start = i;
        let moving = self.items[i];
        let mut hole = i;
        loop {
            let l = 2 * hole + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let child = if r < n && Self::before(vocab, &self.items[r], &self.items[l]) {
                r
            } else {
                l
            };
            self.items[hole] = self.items[child];
            hole = child;
        }
        while hole > start {
            let parent = (hole - 1) / 2;
            if !Self::before(vocab, &moving, &self.items[parent]) {
                break;
            }
            self.items[hole] = self.items[parent];
            hole = parent;
        }
        self.items[hole] = moving;
    }

    pub fn push(&mut self, vocab: &Vocab, (count, pair): (u64, Pair)) {
        if count <= self.held_max {
            self.held.push((count, pair));
            return;
        }
        if self.top_gone {
            // a pop and a push in one sift
            self.top_gone = false;
            self.items[0] = Self::entry(vocab, count, pair);
            self.sift_down(vocab, 0);
            return;
        }
        self.items.push(Self::entry(vocab, count, pair));
        let mut i = self.items.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !Self::before(vocab, &self.items[i], &self.items[parent]) {
                break;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    /// The top entry's pair is gone from the pair table (it was merged everywhere): the next
    /// push into the heap takes its place, sifted down from the top, instead of going in at
    /// the bottom while the top waits to be popped.  Until then the top stays, and the next
    /// pop removes it as before.  (Round 12: the merged pair's entry is the top when the merge
    /// is chosen, and was popped at the next choice, after the merge's pushes went up from
    /// the bottom.  BPE on taylorswift.txt at 5,000, a whole training: 49.99 -> 49.78 M
    /// instructions, the pushes 0.94 -> 0.71 M.)
    pub fn retire_top(&mut self) {
        self.top_gone = !self.items.is_empty();
    }

    pub fn peek(&self) -> Option<(u64, Pair)> {
        self.items.first().map(|e| (e.count, e.pair))
    }

    /// Lower the count of the top entry to `count` and move it down to its place: a pop and
    /// a push in one sift.
    pub fn lower_top(&mut self, vocab: &Vocab, count: u64) {
        debug_assert!(!self.top_gone, "a gone top is popped, not lowered");
        if count <= self.held_max {
            let (_, pair) = self.pop(vocab).expect("a top entry");
            self.held.push((count, pair));
            return;
        }
        let top = &mut self.items[0];
        debug_assert!(count <= top.count, "the top entry's count can only go down");
        top.count = count;
        self.sift_down(vocab, 0);
    }

    pub fn pop(&mut self, vocab: &Vocab) -> Option<(u64, Pair)> {
        self.top_gone = false;
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some((last.count, last.pair));
        }
        let top = std::mem::replace(&mut self.items[0], last);
        self.sift_down(vocab, 0);
        Some((top.count, top.pair))
    }

    pub fn len(&self) -> usize {
        self.items.len() + self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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

/// A shard of the pair table.  (hashbrown's map rather than the standard one: its entries
/// find a pair without reserving room first, and a found entry is removed without a second
/// look-up.  Round 10: a pair whose count fell to zero was looked up twice, to lower its count
/// and to remove it; BPE on taylorswift.txt at 5,000, stages 2-4, 52.1 -> 49.8 M
/// instructions.)
type PairTable = hashbrown::HashMap<Pair, PairInfo, FxBuildHasher>;

/// A live pair: its count and the sequences that may hold it (stale entries are allowed;
/// most pairs of phase 2 live in one sequence, so the list is inline up to 4 entries, in the
/// room the pointer and length of a spilled list take anyway: 24 bytes either way.  Round 10:
/// up to 2, a small training's phase 1 spilled 5,479 lists, 1.0 M instructions.)
#[derive(Default)]
struct PairInfo {
    count: u64,
    seqs: SmallVec<[u32; 4]>,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(
    std::mem::size_of::<PairInfo>() == 32,
    "no larger than with 2 inline"
);

impl PairInfo {
    #[inline]
    fn note(&mut self, index: u32) {
        if self.seqs.last() != Some(&index) {
            self.seqs.push(index);
        }
    }
}

/// Below this many sequences a merge is applied on one thread.
const PARALLEL_MERGE: usize = 4096;

#[inline]
fn shard_of(p: Pair, shards: usize) -> usize {
    if shards == 1 {
        return 0;
    }
    let h = ((p.0 as u64) << 32 | p.1 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 40) as usize % shards
}

/// No note (the end of a list of [`Note`]s).
const NO_NOTE: u32 = u32::MAX;

/// How a pair's count changes in one merge, and the first and last of the sequences it was
/// made in (a list of [`Note`]s; `NO_NOTE` when it was not made).
#[derive(Clone, Copy)]
struct Change {
    delta: i64,
    first: u32,
    last: u32,
}

impl Default for Change {
    fn default() -> Change {
        Change {
            delta: 0,
            first: NO_NOTE,
            last: NO_NOTE,
        }
    }
}

/// A sequence in which a pair was made, and the next note of the same pair.
#[derive(Clone, Copy)]
struct Note {
    seq: u32,
    next: u32,
}

/// What rewriting one group of sequences changed.
///
/// The sequences where a new pair appears are kept with the pair's count change, so that
/// [`MergeState::merge`] finds each changed pair's entry in the pair table once, for both.
/// (They used to be a list of (pair, sequence) noted apart, a second look-up in the big
/// table per occurrence; that was about a fifth of phase 2.)  Round 11, tried and dropped: the
/// changes of pairs of the merged pair's tokens or the merged token with one neighbour token
/// (most changes) kept by the neighbour, found through a table indexed by the token instead
/// of hashed: phase 1 of three trainings of taylorswift.txt at 5,000 went from 130.6 to
/// 135.4 M instructions (telling the pairs apart cost more than the hashing saved).
#[derive(Default)]
struct GroupChanges {
    /// (hashbrown's map, as the pair table's: the standard map's `entry` reserves room
    /// before it looks, an out-of-line call per change.  Round 10, phase 1 of a small
    /// training: 49.8 -> 47.5 M instructions.)
    delta: hashbrown::HashMap<Pair, Change, FxBuildHasher>,
    /// the sequences where new pairs holding the merged token appear, linked per pair
    notes: Vec<Note>,
    /// new lengths of the rewritten sequences
    lengths: Vec<(u32, u32)>,
    became_single: bool,
    /// weighted number of merged tokens made
    made: u64,
    /// [`rewrite_group`]'s working buffers, kept with the changes so that they are reused
    occurrences: Vec<usize>,
    windows: Vec<(usize, usize)>,
}

impl GroupChanges {
    /// `pair`'s count changes by `d`.
    #[inline]
    fn add(&mut self, pair: Pair, d: i64) {
        self.delta.entry(pair).or_default().delta += d;
    }

    /// `pair`'s count changes by `d`, and `pair` appears in sequence `seq`.  (Always inline:
    /// called out of line from [`rewrite_group`], 35,598 times in a small training's phase 1,
    /// taylorswift.txt at 5,000.  Round 11, three such trainings: 111.3 -> 109.5 M
    /// instructions.)
    #[inline(always)]
    fn add_made(&mut self, pair: Pair, d: i64, seq: u32) {
        let change = self.delta.entry(pair).or_default();
        change.delta += d;
        if change.last != NO_NOTE && self.notes[change.last as usize].seq == seq {
            return; // noted already (several occurrences in one sequence)
        }
        let at = self.notes.len() as u32;
        self.notes.push(Note { seq, next: NO_NOTE });
        if change.last == NO_NOTE {
            change.first = at;
        } else {
            self.notes[change.last as usize].next = at;
        }
        change.last = at;
    }

    /// Add another group's changes to these.
    fn absorb(&mut self, other: GroupChanges) {
        self.became_single |= other.became_single;
        self.made += other.made;
        self.lengths.extend(other.lengths);
        if self.delta.is_empty() {
            self.delta = other.delta;
            self.notes = other.notes;
            return;
        }
        let offset = self.notes.len() as u32;
        let moved = |i: u32| if i == NO_NOTE { NO_NOTE } else { i + offset };
        self.notes.extend(other.notes.iter().map(|n| Note {
            seq: n.seq,
            next: moved(n.next),
        }));
        for (p, c) in other.delta {
            let mine = self.delta.entry(p).or_default();
            mine.delta += c.delta;
            if c.first == NO_NOTE {
                continue;
            }
            if mine.last == NO_NOTE {
                mine.first = moved(c.first);
            } else {
                self.notes[mine.last as usize].next = moved(c.first);
            }
            mine.last = moved(c.last);
        }
    }

    /// Empty again for the next merge, keeping the memory unless a large merge grew it (a
    /// table keeps its size when emptied, and walking a big empty one costs every merge).
    fn reset(&mut self) {
        const KEEP: usize = 1 << 12;
        fn trim<T>(v: &mut Vec<T>) {
            v.clear();
            if v.capacity() > KEEP {
                *v = Vec::new();
            }
        }
        if self.delta.capacity() > KEEP {
            self.delta = hashbrown::HashMap::default();
        }
        self.delta.clear();
        trim(&mut self.notes);
        trim(&mut self.lengths);
        trim(&mut self.occurrences);
        trim(&mut self.windows);
        self.became_single = false;
        self.made = 0;
    }
}

/// Replace each occurrence of `pair` in `seq` by `merged`, left to right, in place, from the
/// first occurrence `from`; returns the new length.  (In place, from the first occurrence on:
/// the same left-to-right scan that found the occurrences finds them again from there.
/// Building a copy and copying it back was three calls to `memcpy` per sequence, a twentieth
/// of a small training's phase 1.)
#[inline]
fn merge_in_place(seq: &mut [TokenId], from: usize, pair: Pair, merged: TokenId) -> usize {
    let n = seq.len();
    let (mut read, mut write) = (from, from);
    while read < n {
        if read + 1 < n && seq[read] == pair.0 && seq[read + 1] == pair.1 {
            seq[write] = merged;
            read += 2;
        } else {
            seq[write] = seq[read];
            read += 1;
        }
        write += 1;
    }
    write
}

/// Does each occurrence of `pair` (of two different tokens) at `occurrences` in `seq` change
/// only the pairs it makes with its two neighbours?  So it is when no other occurrence
/// touches it and its left neighbour is not the pair's left token (a repeat of it would lose
/// its last token), its right neighbour not the pair's right token, and neither is
/// `merged` (a repeat of it could form).  Then a repeat beside it keeps its tokens and its
/// count, and a pair of different tokens counts once wherever it is (SPEC 2.3).
#[inline]
fn stand_alone(seq: &[TokenId], occurrences: &[usize], pair: Pair, merged: TokenId) -> bool {
    let n = seq.len();
    let mut end = usize::MAX; // where the previous occurrence ended
    for (k, &i) in occurrences.iter().enumerate() {
        if i > 0 && (end == i || seq[i - 1] == pair.0 || seq[i - 1] == merged) {
            return false;
        }
        if i + 2 < n {
            let y = seq[i + 2];
            if y == pair.1 || y == merged || occurrences.get(k + 1) == Some(&(i + 2)) {
                return false;
            }
        }
        end = i + 2;
    }
    true
}

/// `p` loses `w` occurrences, straight in the pair table `shards` (for a merge rewritten on one
/// thread), and leaves it at `floor` or below (see [`MergeState::with_floor`]).  For the
/// pairs an occurrence that stands alone takes from its neighbours: they hold no merged token,
/// so they only lose in this merge, and once they leave the table nothing brings them back
/// before the merge ends (a window of another sequence that counts them again, see
/// [`rewrite_group`], counts them as many times before and after).  (Round 11: through the
/// merge's table of changes they were a look-up there and another in the pair table; phase 1
/// of three trainings of taylorswift.txt at 5,000, 120.6 -> 115.1 M instructions.)
#[inline(always)]
fn lose_now(shards: &mut [PairTable], floor: u64, p: Pair, w: u64) {
    let n = shards.len();
    match shards[shard_of(p, n)].entry(p) {
        TableEntry::Occupied(mut o) => {
            let info = o.get_mut();
            debug_assert!(info.count >= w, "pair count below zero");
            info.count -= w;
            if info.count <= floor {
                o.remove();
            }
        }
        TableEntry::Vacant(_) => debug_assert!(floor > 0, "pair count below zero"),
    }
}

/// How many sequences ahead [`rewrite_group`] starts loading a sequence's span.
const SPAN_AHEAD: usize = 4;

/// Apply `pair` -> `merged` to the sequences `indices` (sorted), whose tokens lie in `data`,
/// a slice of the arena starting at arena offset `base`.
///
/// Pair counts change only near each occurrence: a repeat of k equal tokens counts ⌊k/2⌋
/// whatever surrounds it, and a pair of two different tokens always counts once.  So each
/// occurrence at `i` gets a window from the start of the repeat holding `i - 1` to the end of the
/// repeat holding `i + 2`: its edges are repeat boundaries with unchanged tokens, and recounting the
/// window before and after the merge gives the exact change.  Long candidates in phase 2 then
/// cost per occurrence, not per token.
#[allow(clippy::too_many_arguments)]
fn rewrite_group(
    data: &mut [TokenId],
    base: usize,
    seqs: &[Seq],
    indices: &[u32],
    pair: Pair,
    merged: TokenId,
    out: &mut GroupChanges,
    mut table: Option<(&mut [PairTable], u64)>,
) {
    let mut occurrences = std::mem::take(&mut out.occurrences);
    let mut windows = std::mem::take(&mut out.windows);
    // the merged pair's own loss, added up here: it changes in every sequence, and a look-up
    // in the changes' table per occurrence was a fifth of them
    let mut merged_lost = 0i64;
    let distinct = pair.0 != pair.1;
    for (k, &index) in indices.iter().enumerate() {
        // the sequences lie scattered over the arena: start loading the span of one a few
        // places ahead, and the tokens of the next (whose span is loaded by now).  (Round 11:
        // without these loads when the arena holds under 2^18 tokens, phase 1 of three small
        // trainings took 1.5% fewer instructions but no less time, 4.63-4.69 ms against
        // 4.58-4.66 for BPE on taylorswift.txt at 5,000; and the scan for occurrences below
        // moved into a function of its own, out of line, cost 1.4% more instructions.)
        if let Some(&ahead) = indices.get(k + SPAN_AHEAD) {
            crate::prefetch(&seqs[ahead as usize]);
        }
        if let Some(&next) = indices.get(k + 1) {
            crate::prefetch(
                data.as_ptr()
                    .wrapping_add(seqs[next as usize].start.wrapping_sub(base)),
            );
        }
        let Seq {
            start,
            len,
            weight,
            whole,
        } = seqs[index as usize];
        let seq = &mut data[start - base..start - base + len as usize];
        // 1. occurrences, left to right, non-overlapping
        occurrences.clear();
        let mut i = 0;
        while i + 1 < seq.len() {
            if seq[i] == pair.0 && seq[i + 1] == pair.1 {
                occurrences.push(i);
                i += 2;
            } else {
                i += 1;
            }
        }
        if occurrences.is_empty() {
            continue; // stale: the pair left this sequence earlier
        }
        let w = weight as i64;
        out.made += occurrences.len() as u64 * w as u64;
        // most occurrences stand alone: no other occurrence beside them, and beside them no
        // token of a repeat the merge changes (the pair's left token before, its right token
        // after) nor the merged token.  Then the pairs with their neighbours are all that
        // changes, with no windows to count.  (Round 11, taylorswift.txt at 5,000, the three
        // trainings: rewriting the words 59.6 -> 49.0 M instructions, phase 1 130.6 -> 120.6 M.)
        if distinct && stand_alone(seq, &occurrences, pair, merged) {
            let n = seq.len();
            for &i in &occurrences {
                let left = (i > 0).then(|| seq[i - 1]);
                let right = (i + 2 < n).then(|| seq[i + 2]);
                match &mut table {
                    Some((shards, floor)) => {
                        if let Some(x) = left {
                            lose_now(shards, *floor, (x, pair.0), weight);
                        }
                        if let Some(y) = right {
                            lose_now(shards, *floor, (pair.1, y), weight);
                        }
                    }
                    None => {
                        if let Some(x) = left {
                            out.add((x, pair.0), -w);
                        }
                        if let Some(y) = right {
                            out.add((pair.1, y), -w);
                        }
                    }
                }
                if let Some(x) = left {
                    out.add_made((x, merged), w, index);
                }
                if let Some(y) = right {
                    out.add_made((merged, y), w, index);
                }
            }
            merged_lost += occurrences.len() as i64 * w;
            let write = merge_in_place(seq, occurrences[0], pair, merged);
            out.lengths.push((index, write as u32));
            out.became_single |= write == 1 && whole;
            continue;
        }
        // 2. windows around the occurrences, merged when they touch
        windows.clear();
        for &i in &occurrences {
            let mut lo = i;
            if i > 0 {
                lo = i - 1;
                while lo > 0 && seq[lo - 1] == seq[lo] {
                    lo -= 1;
                }
            }
            let mut hi = (i + 2).min(seq.len());
            if hi < seq.len() {
                hi += 1;
                while hi < seq.len() && seq[hi] == seq[hi - 1] {
                    hi += 1;
                }
            }
            match windows.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => windows.push((lo, hi)),
            }
        }
        // 3. the old windows' pairs go, the merged sequence is built
        for &(lo, hi) in &windows {
            count_pairs(&seq[lo..hi], |p| {
                if p == pair {
                    merged_lost += w;
                } else {
                    out.add(p, -w);
                }
            });
        }
        let write = merge_in_place(seq, occurrences[0], pair, merged);
        let new_seq = &seq[..write];
        // 4. the new windows' pairs come (positions shift by one per earlier occurrence)
        let mut before = 0; // occurrences left of the current window
        for &(lo, hi) in &windows {
            while before < occurrences.len() && occurrences[before] < lo {
                before += 1;
            }
            let inside = occurrences[before..].iter().take_while(|&&i| i < hi).count();
            let (nlo, nhi) = (lo - before, hi - before - inside);
            count_pairs(&new_seq[nlo..nhi], |p| {
                if p.0 == merged || p.1 == merged {
                    out.add_made(p, w, index);
                } else {
                    out.add(p, w);
                }
            });
            before += inside;
        }
        out.lengths.push((index, write as u32));
        out.became_single |= write == 1 && whole;
    }
    if merged_lost != 0 {
        out.add(pair, -merged_lost);
    }
    out.occurrences = occurrences;
    out.windows = windows;
}

impl MergeState {
    /// `seqs`: the sequences, each with its weight; all whole.
    pub fn new<'s, I>(seqs: I, vocab: &Vocab) -> MergeState
    where
        I: IntoIterator<Item = (&'s [TokenId], u64)>,
        I::IntoIter: Clone,
    {
        Self::with_wholeness(seqs.into_iter().map(|(s, w)| (s, w, true)), vocab)
    }

    /// `seqs`: the sequences, each with its weight and whether it is whole (see `whole`).
    /// (`seqs` is read twice: the arena and the spans are allocated at their final size, not
    /// grown by doubling, which held the old and the new arena at once while phase 2 began,
    /// near the peak memory of a BoundlessBPE training.)
    pub fn with_wholeness<'s, I>(seqs: I, vocab: &Vocab) -> MergeState
    where
        I: IntoIterator<Item = (&'s [TokenId], u64, bool)>,
        I::IntoIter: Clone,
    {
        let seqs = seqs.into_iter();
        let (mut n, mut tokens) = (0, 0);
        for (seq, _, _) in seqs.clone() {
            n += 1;
            if seq.len() <= LONG_SEQUENCE {
                tokens += seq.len();
            }
        }
        let mut data = Vec::with_capacity(tokens);
        let mut spans: Vec<Seq> = Vec::with_capacity(n);
        let mut long = FxHashMap::default();
        for (seq, w, is_whole) in seqs {
            if seq.len() > LONG_SEQUENCE {
                long.insert(spans.len() as u32, LongSequence::new(seq));
            }
            spans.push(Seq {
                start: data.len(),
                weight: w,
                len: seq.len() as u32,
                whole: is_whole,
            });
            if seq.len() <= LONG_SEQUENCE {
                data.extend_from_slice(seq);
            }
        }
        // the pairs, counted by contiguous parts of the sequences in parallel (each part into
        // one table per shard), then each shard's tables added up in parallel.  (Each thread
        // used to read every sequence and keep the pairs of its own shard: two threads were no
        // faster than one, 0.45 s against 0.37 s at 100 MB/32,768 and 1.42 against 1.16 s at
        // 131,072 for BoundlessBPE's 1.6 M and 2.6 M segments.)
        let n_shards = rayon::current_num_threads().max(1);
        let per = spans.len().div_ceil(n_shards).max(1);
        // Pairs of two bytes (phase 1) are counted in a list found through a table indexed by
        // the pair, then put in the hash tables once each, in the order first seen as before.
        // (Round 9: a look-up in the hash table per pair occurrence was half of a small
        // training's set-up.)
        let bytes_only = data
            .iter()
            .chain(long.values().flat_map(|l| l.untouched().expect("no merge yet")))
            .all(|&t| (t as usize) < BASE_VOCAB);
        let parts: Vec<Vec<PairTable>> = spans
            .par_chunks(per)
            .enumerate()
            .map(|(part, chunk)| {
                let mut maps: Vec<PairTable> = (0..n_shards).map(|_| PairTable::default()).collect();
                let mut slot_of: Vec<u32> = if bytes_only {
                    vec![u32::MAX; BASE_VOCAB * BASE_VOCAB]
                } else {
                    Vec::new()
                };
                let mut found: Vec<(Pair, PairInfo)> = Vec::new();
                for (j, span) in chunk.iter().enumerate() {
                    let i = (part * per + j) as u32;
                    let w = span.weight;
                    let seq = match long.get(&i) {
                        Some(l) => l.untouched().expect("no merge yet"),
                        None => &data[span.range()],
                    };
                    if bytes_only {
                        count_pairs(seq, |p| {
                            let slot = &mut slot_of[p.0 as usize * BASE_VOCAB + p.1 as usize];
                            if *slot == u32::MAX {
                                *slot = found.len() as u32;
                                found.push((p, PairInfo::default()));
                            }
                            let info = &mut found[*slot as usize].1;
                            info.count += w;
                            info.note(i);
                        });
                    } else {
                        count_pairs(seq, |p| {
                            let info = maps[shard_of(p, n_shards)].entry(p).or_default();
                            info.count += w;
                            info.note(i);
                        });
                    }
                }
                for (p, info) in found {
                    maps[shard_of(p, n_shards)].insert(p, info);
                }
                maps
            })
            .collect();
        let mut by_shard: Vec<Vec<PairTable>> = (0..n_shards).map(|_| Vec::new()).collect();
        for maps in parts {
            for (k, map) in maps.into_iter().enumerate() {
                by_shard[k].push(map);
            }
        }
        let shards: Vec<PairTable> = by_shard
            .into_par_iter()
            .map(|maps| {
                // in the parts' order, so that each pair's sequences stay in increasing order
                let mut maps = maps.into_iter();
                let mut all = maps.next().unwrap_or_default();
                for map in maps {
                    for (p, info) in map {
                        match all.get_mut(&p) {
                            Some(mine) => {
                                mine.count += info.count;
                                mine.seqs.extend(info.seqs);
                            }
                            None => {
                                all.insert(p, info);
                            }
                        }
                    }
                }
                all
            })
            .collect();
        let initial: Vec<(u64, Pair)> = shards
            .iter()
            .flat_map(|m| m.iter().map(|(&p, info)| (info.count, p)))
            .collect();
        let heap = PairHeap::from_vec(vocab, initial);
        MergeState {
            data,
            seqs: spans,
            shards,
            heap,
            long,
            tokens: None,
            relocated: false,
            changes: None,
            bytes: Vec::new(),
            floor: 0,
            present: Vec::new(),
            #[cfg(test)]
            restores: 0,
        }
    }

    /// Leave out of the heap every pair while it is counted `floor` times or fewer: [`Self::best`]
    /// then only returns pairs counted more often (or `None`).  For a caller that would never
    /// choose such a pair anyway (phase 2, whose supermerges must beat a regular merge, see
    /// `boundless.rs`).  A pair whose count rises above the floor later gets its entry then
    /// (entries are pushed when a count grows), so the choice among the pairs above it is
    /// unchanged.  (100 MB of Gutenberg, 32,768: BoundlessBPE's heap ended with 1.19 M
    /// entries, almost all for pairs made by supermerges that never count enough.)
    ///
    /// Such pairs need no place in the pair table either, most of the time.  A merge only
    /// adds occurrences of pairs that hold its new token; when that token occurs nowhere yet
    /// (almost always: a supermerge whose bytes were made before is rare), those pairs had no
    /// occurrence before, so their count is exactly what the merge made, and a pair made with
    /// `floor` occurrences or fewer can never rise above it unless one of its tokens is made
    /// again.  So the table keeps every pair counted above the floor (exactly, as before) and
    /// drops the others; before a merge whose token may occur already, the pairs holding that
    /// token are counted again over all sequences ([`Self::restore_pairs_of`], exact).
    /// (Round 8, 100 MB of Gutenberg: BoundlessBPE's pair table grew from 37,507 pairs to
    /// 1.12 M at 32,768 and from 0.40 M to 3.65 M at 131,072, almost all of them counted at
    /// most `floor` times; its growth was a tenth of the samples of a training at 131,072,
    /// mostly the kernel zeroing the new tables' pages.)
    pub fn with_floor(mut self, floor: u64, vocab: &Vocab) -> MergeState {
        self.floor = floor;
        self.heap.drop_at_most(vocab, floor);
        if floor > 0 {
            for shard in &mut self.shards {
                shard.retain(|_, info| info.count > floor);
            }
            let mut present = vec![false; vocab.len()];
            let mut mark = |t: TokenId| {
                let t = t as usize;
                if t >= present.len() {
                    present.resize(t + 1, false);
                }
                present[t] = true;
            };
            self.data.iter().for_each(|&t| mark(t));
            self.long.values().for_each(|l| l.tokens().for_each(&mut mark));
            self.present = present;
        }
        self
    }

    /// The floor set by [`Self::with_floor`] (0 without one).
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// The same sequences with every pair counted, exactly, and no floor (see
    /// [`Self::with_floor`]): for a caller that needs the pairs at or below the floor after
    /// all.  Reads every sequence, as the first count did.
    pub fn without_floor(self, vocab: &Vocab) -> MergeState {
        debug_assert!(self.tokens.is_none(), "token tracking keeps no floor");
        let long: FxHashMap<u32, Vec<TokenId>> = self
            .long
            .iter()
            .map(|(&i, l)| (i, l.tokens().collect()))
            .collect();
        let seqs = self.seqs.iter().enumerate().map(|(i, s)| {
            let tokens = match long.get(&(i as u32)) {
                Some(tokens) => &tokens[..],
                None => &self.data[s.range()],
            };
            (tokens, s.weight, s.whole)
        });
        MergeState::with_wholeness(seqs, vocab)
    }

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
        // (Round 11, tried and dropped: counting a new pair's notes first and making room for
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
        // of its tokens again.  Round 11: sorting and removing repeats anyway, and growing the
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
