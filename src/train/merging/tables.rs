//! The live pair table, split into one shard per thread, and the changes one merge makes to it
//! (counts by difference, and the sequences where new pairs appear).

use hashbrown::hash_map::Entry as TableEntry;
use rustc_hash::FxBuildHasher;
use smallvec::SmallVec;

use crate::tokens::Pair;

/// A shard of the pair table.  (hashbrown's map rather than the standard one: its entries
/// find a pair without reserving room first, and a found entry is removed without a second
/// look-up.  A pair whose count fell to zero was looked up twice, to lower its count
/// and to remove it; BPE on taylorswift.txt at 5,000, stages 2-4, 52.1 -> 49.8 M
/// instructions.)
pub(super) type PairTable = hashbrown::HashMap<Pair, PairInfo, FxBuildHasher>;

/// A live pair: its count and the sequences that may hold it (stale entries are allowed;
/// most pairs of phase 2 live in one sequence, so the list is inline up to 4 entries, in the
/// room the pointer and length of a spilled list take anyway: 24 bytes either way.
/// Up to 2, a small training's phase 1 spilled 5,479 lists, 1.0 M instructions.)
#[derive(Default)]
pub(super) struct PairInfo {
    pub(super) count: u64,
    pub(super) seqs: SmallVec<[u32; 4]>,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(
    std::mem::size_of::<PairInfo>() == 32,
    "no larger than with 2 inline"
);

impl PairInfo {
    #[inline]
    pub(super) fn note(&mut self, index: u32) {
        if self.seqs.last() != Some(&index) {
            self.seqs.push(index);
        }
    }

    /// [`Self::note`], or `false` when the list cannot grow (out of memory).
    #[inline]
    pub(super) fn try_note(&mut self, index: u32) -> bool {
        if self.seqs.last() == Some(&index) {
            return true;
        }
        if self.seqs.try_reserve(1).is_err() {
            return false;
        }
        self.seqs.push(index);
        true
    }
}

/// Below this many sequences a merge is applied on one thread.
pub(super) const PARALLEL_MERGE: usize = 4096;

#[inline]
pub(super) fn shard_of(p: Pair, shards: usize) -> usize {
    if shards == 1 {
        return 0;
    }
    let h = ((p.0 as u64) << 32 | p.1 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 40) as usize % shards
}

/// No note (the end of a list of [`Note`]s).
pub(super) const NO_NOTE: u32 = u32::MAX;

/// How a pair's count changes in one merge, and the first and last of the sequences it was
/// made in (a list of [`Note`]s; `NO_NOTE` when it was not made).
#[derive(Clone, Copy)]
pub(super) struct Change {
    pub(super) delta: i64,
    pub(super) first: u32,
    pub(super) last: u32,
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
pub(super) struct Note {
    pub(super) seq: u32,
    pub(super) next: u32,
}

/// What rewriting one group of sequences changed.
///
/// The sequences where a new pair appears are kept with the pair's count change, so that
/// [`MergeState::merge`] finds each changed pair's entry in the pair table once, for both.
/// (They used to be a list of (pair, sequence) noted apart, a second look-up in the big
/// table per occurrence; that was about a fifth of phase 2.)  Tried and dropped: the
/// changes of pairs of the merged pair's tokens or the merged token with one neighbour token
/// (most changes) kept by the neighbour, found through a table indexed by the token instead
/// of hashed: phase 1 of three trainings of taylorswift.txt at 5,000 went from 130.6 to
/// 135.4 M instructions (telling the pairs apart cost more than the hashing saved).
#[derive(Default)]
pub(super) struct GroupChanges {
    /// (hashbrown's map, as the pair table's: the standard map's `entry` reserves room
    /// before it looks, an out-of-line call per change.  Phase 1 of a small
    /// training: 49.8 -> 47.5 M instructions.)
    pub(super) delta: hashbrown::HashMap<Pair, Change, FxBuildHasher>,
    /// the sequences where new pairs holding the merged token appear, linked per pair
    pub(super) notes: Vec<Note>,
    /// new lengths of the rewritten sequences
    pub(super) lengths: Vec<(u32, u32)>,
    pub(super) became_single: bool,
    /// weighted number of merged tokens made
    pub(super) made: u64,
    /// [`rewrite_group`]'s working buffers, kept with the changes so that they are reused
    pub(super) occurrences: Vec<usize>,
    pub(super) windows: Vec<(usize, usize)>,
}

impl GroupChanges {
    /// `pair`'s count changes by `d`.
    #[inline]
    pub(super) fn add(&mut self, pair: Pair, d: i64) {
        self.delta.entry(pair).or_default().delta += d;
    }

    /// `pair`'s count changes by `d`, and `pair` appears in sequence `seq`.  (Always inline:
    /// called out of line from [`rewrite_group`], 35,598 times in a small training's phase 1,
    /// taylorswift.txt at 5,000.  Three such trainings: 111.3 -> 109.5 M
    /// instructions.)
    #[inline(always)]
    pub(super) fn add_made(&mut self, pair: Pair, d: i64, seq: u32) {
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
    pub(super) fn absorb(&mut self, other: GroupChanges) {
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
    pub(super) fn reset(&mut self) {
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

/// `p` loses `w` occurrences, straight in the pair table `shards` (for a merge rewritten on one
/// thread), and leaves it at `floor` or below (see [`MergeState::with_floor`]).  For the
/// pairs an occurrence that stands alone takes from its neighbours: they hold no merged token,
/// so they only lose in this merge, and once they leave the table nothing brings them back
/// before the merge ends (a window of another sequence that counts them again, see
/// [`rewrite_group`], counts them as many times before and after).  (Through the
/// merge's table of changes they were a look-up there and another in the pair table; phase 1
/// of three trainings of taylorswift.txt at 5,000, 120.6 -> 115.1 M instructions.)
#[inline(always)]
pub(super) fn lose_now(shards: &mut [PairTable], floor: u64, p: Pair, w: u64) {
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
