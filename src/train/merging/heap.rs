//! The merge loop's lazy heap of pairs, in the SPEC's order of choice (SPEC 2.4).

use crate::error::{try_vec, Result};
use crate::tokens::{Pair, Vocab};

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
/// that count never orders them.  (Most entries pushed in a merge loop are pairs
/// made once, which only deepened the heap every other pop and lowering goes through.)
///
/// Tried and dropped: one heap for the entries counted 64 times or more and one
/// per count below, the top being the first one's or that of the highest count with entries
/// (taylorswift.txt at 5,000, three trainings: choosing the pair 18.7 -> 18.4 M instructions
/// but pushing dearer, phase 1 115.1 -> 115.9 M).  At 5,000 a third of the merges count 2,
/// so the heap of count 2 is about as deep as the one heap was.
///
/// Measured for whoever looks next (BPE, taylorswift.txt at 5,000): the heap holds
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

    /// Build a heap from unordered items in linear time; [`Error::Memory`] when its entries
    /// cannot be had (`what` names the input).
    pub fn try_from_vec(vocab: &Vocab, items: Vec<(u64, Pair)>, what: &str) -> Result<PairHeap> {
        let mut heap = PairHeap::default();
        let n_held = items.iter().filter(|&&(c, _)| c <= heap.held_max).count();
        heap.held = try_vec(n_held, what)?;
        heap.items = try_vec(items.len() - n_held, what)?;
        for (c, p) in items {
            if c <= heap.held_max {
                heap.held.push((c, p));
            } else {
                heap.items.push(Self::entry(vocab, c, p));
            }
        }
        heap.heapify(vocab);
        Ok(heap)
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

    /// Drop every entry counted `count` times or fewer.  (The heap was built again
    /// from the entries kept, though with a floor of 1 those held back are all that go.
    /// Taylorswift.txt at 5,000, a whole training: BPE 49.78 -> 49.48 M instructions,
    /// BoundlessBPE 60.67 -> 60.04 M, SuperBPE 57.52 -> 57.17 M.)
    pub(super) fn drop_at_most(&mut self, vocab: &Vocab, count: u64) {
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
    /// pop removes it as before.  (The merged pair's entry is the top when the merge
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
}
