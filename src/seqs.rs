//! Sequences of ids added up with their counts: the letter runs of counting (`count.rs`) and
//! the segments of stage 3 (`train/candidates.rs`).
//!
//! Each distinct sequence is kept once, as a record in chunks of records in the order first
//! seen, and found through a table of slots, each the sequence's hash and its record's place
//! in one word (open addressing, linear probing, at most three quarters full).  A sequence can carry a
//! flag (a segment that is a whole candidate); the same ids with and without it are two
//! sequences.
//!
//! (The runs were a hash map of boxed runs, which does not keep the
//! hashes: each time it grew, every box was read again to rehash it (at 100 MB of Gutenberg,
//! 2.7 M distinct runs, `perf` put 14% of a BoundlessBPE training there).  Here growing moves
//! slots only, a sequence is copied once to the end of a chunk instead of allocated, chunks
//! are never copied to grow (one vector of records that doubled cost a tenth of the samples,
//! copying and faulting in its pages), and stage 3 reads the records in order instead of
//! chasing a box per run.  Nine runs in ten are new, so most look-ups end at an empty slot:
//! here that is one cache miss, where hashbrown's table (its control bytes, then the slot it
//! writes) took two; and each sequence is added only when the next one comes, its slot
//! loaded meanwhile ([`SeqCounter::add_soon`]).  Counting 100 MB for BoundlessBPE, one
//! thread: 1.37 -> 1.09 s of user time, peak RSS of the training 391 -> 330 MB.  Fresh pages
//! are what is left: the kernel zeroing them was a quarter of that stage's samples, so the
//! slots fill to three quarters instead of half, which halves them at 100 MB (whole
//! training, one thread, medians of five: 2.85 -> 2.65 s).)

use crate::error::{Error, Result};

/// A record: `[len | flag << 31, count (low half), count (high half), ids...]`.
const HEAD: usize = 3;

/// The flag's bit in a record's first word.
pub(crate) const FLAG: u32 = 1 << 31;

/// How many `u32`s a chunk of records holds, as a power of two (4 MB; a longer record gets a
/// chunk of its own).  (Tiny in tests, so that they cross chunks.)
const CHUNK_BITS: u32 = if cfg!(test) { 6 } else { 20 };
const CHUNK: usize = 1 << CHUNK_BITS;

/// At most this many chunks per counter (the place of a record is `chunk << CHUNK_BITS |
/// offset` in 32 bits: 16 GB of records, far beyond any one table's memory).
const MOST_CHUNKS: usize = (1 << (32 - CHUNK_BITS)) - 1;

/// An empty slot of [`SeqCounter::slots`].
const EMPTY: u64 = u64::MAX;

/// Sequences being added up (see the module's comment).
pub struct SeqCounter {
    chunks: Vec<Vec<u32>>,
    /// `EMPTY`, or a sequence's hash in the low half and its record's place in the high half
    slots: Vec<u64>,
    seqs: usize,
    /// more than 16 GB of records, or a sequence of 2**31 ids: nothing was added since
    full: bool,
    /// the sequence [`SeqCounter::add_soon`] adds next (empty: none), with its hash, count
    /// and flag
    pending: Vec<u32>,
    pending_hash: u32,
    pending_count: u64,
    pending_flag: bool,
}

impl Default for SeqCounter {
    fn default() -> SeqCounter {
        SeqCounter {
            chunks: Vec::new(),
            slots: vec![EMPTY; 1 << 10],
            seqs: 0,
            full: false,
            pending: Vec::new(),
            pending_hash: 0,
            pending_count: 0,
            pending_flag: false,
        }
    }
}

/// A sequence's 32-bit hash (id by id, multiplying the state: its high half is well mixed).
#[inline]
pub fn seq_hash(seq: &[u32], flag: bool) -> u32 {
    let mut h = seq.len() as u64 | (flag as u64) << 40;
    for &id in seq {
        h = (h.rotate_left(5) ^ id as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    }
    (h >> 32) as u32
}

/// Append `seq`'s record to `chunks`; returns its chunk and offset.
fn push_record(chunks: &mut Vec<Vec<u32>>, seq: &[u32], count: u64, flag: bool) -> (usize, usize) {
    let size = HEAD + seq.len();
    match chunks.last() {
        // (a record starts below `CHUNK`, so that its offset fits in `CHUNK_BITS`)
        Some(last) if last.len() < CHUNK && last.capacity() - last.len() >= size => {}
        _ => chunks.push(Vec::with_capacity(size.max(CHUNK))),
    }
    let chunk = chunks.len() - 1;
    let records = &mut chunks[chunk];
    let offset = records.len();
    let first = seq.len() as u32 | if flag { FLAG } else { 0 };
    records.extend_from_slice(&[first, count as u32, (count >> 32) as u32]);
    records.extend_from_slice(seq);
    (chunk, offset)
}

impl SeqCounter {
    /// Add `count` occurrences of `seq` (of at least one id) once the next sequence comes, or
    /// at the end: its slot is loaded meanwhile.
    #[inline]
    pub fn add_soon(&mut self, seq: &[u32], count: u64, flag: bool) {
        let hash = seq_hash(seq, flag);
        crate::prefetch(&self.slots[hash as usize & (self.slots.len() - 1)]);
        self.flush();
        self.pending.extend_from_slice(seq);
        self.pending_hash = hash;
        self.pending_count = count;
        self.pending_flag = flag;
    }

    /// Add the sequence [`SeqCounter::add_soon`] holds back.
    #[inline]
    pub(crate) fn flush(&mut self) {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            self.add(&pending, self.pending_hash, self.pending_count, self.pending_flag);
            self.pending = pending;
            self.pending.clear();
        }
    }

    /// Add `count` occurrences of `seq`, whose hash ([`seq_hash`]) is `hash`.
    #[inline]
    pub fn add(&mut self, seq: &[u32], hash: u32, count: u64, flag: bool) {
        if self.full || seq.len() >= FLAG as usize {
            self.full = true;
            return;
        }
        if (self.seqs + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let first = seq.len() as u32 | if flag { FLAG } else { 0 };
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot == EMPTY {
                break;
            }
            if slot as u32 == hash {
                let at = (slot >> 32) as usize;
                let record = &mut self.chunks[at >> CHUNK_BITS][at & (CHUNK - 1)..];
                if record[0] == first && record[HEAD..HEAD + seq.len()] == *seq {
                    // (saturating: counts from a count file may be anything)
                    let sum = (record[1] as u64 | (record[2] as u64) << 32).saturating_add(count);
                    record[1] = sum as u32;
                    record[2] = (sum >> 32) as u32;
                    return;
                }
            }
            i = (i + 1) & mask;
        }
        let (chunk, offset) = push_record(&mut self.chunks, seq, count, flag);
        if chunk >= MOST_CHUNKS {
            self.full = true;
            return;
        }
        self.slots[i] = hash as u64 | ((chunk << CHUNK_BITS | offset) as u64) << 32;
        self.seqs += 1;
    }

    /// Twice the slots, each moved by the hash it keeps (no record is read).
    #[cold]
    fn grow(&mut self) {
        let mut slots = vec![EMPTY; self.slots.len() * 2];
        let mask = slots.len() - 1;
        for &slot in &self.slots {
            if slot != EMPTY {
                let mut i = slot as u32 as usize & mask;
                while slots[i] != EMPTY {
                    i = (i + 1) & mask;
                }
                slots[i] = slot;
            }
        }
        self.slots = slots;
    }

    /// How many distinct sequences (not counting one held back).
    pub fn len(&self) -> usize {
        self.seqs
    }

    pub fn is_empty(&self) -> bool {
        self.seqs == 0 && self.pending.is_empty()
    }

    /// Add every sequence of `list` (the slots of this counter stay; `list`'s chunks go).
    pub fn add_list(&mut self, list: SeqList) {
        for (seq, count, flag) in list.iter() {
            self.add_soon(seq, count, flag);
        }
    }

    /// The sequences added up, without the table that found them; `what` names them in the
    /// error when there were too many to keep (with advice on what to do instead).
    pub fn into_list(mut self, what: &str) -> Result<SeqList> {
        self.flush();
        if self.full {
            return Err(Error::Runtime(format!(
                "{what} outgrew what one table holds ({} GB of records, or a sequence of 2**31 \
                 ids)",
                (MOST_CHUNKS * CHUNK * 4) >> 30
            )));
        }
        Ok(SeqList {
            seqs: self.seqs,
            chunks: self.chunks,
        })
    }
}

/// Sequences with their counts and flags, as records in chunks (see [`SeqCounter`]).
#[derive(Default, Clone)]
pub struct SeqList {
    chunks: Vec<Vec<u32>>,
    seqs: usize,
}

impl SeqList {
    /// The list of `seqs` (a sequence may come more than once), without flags.
    pub fn from_seqs<'a>(seqs: impl IntoIterator<Item = (&'a [u32], u64)>) -> SeqList {
        let mut list = SeqList::default();
        for (seq, count) in seqs {
            list.push(seq, count, false);
        }
        list
    }

    /// Append `seq` with its count and flag (a sequence may come more than once).
    pub fn push(&mut self, seq: &[u32], count: u64, flag: bool) {
        push_record(&mut self.chunks, seq, count, flag);
        self.seqs += 1;
    }

    /// How many sequences.
    pub fn len(&self) -> usize {
        self.seqs
    }

    pub fn is_empty(&self) -> bool {
        self.seqs == 0
    }

    /// How many ids the sequences hold.
    pub fn ids(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum::<usize>() - HEAD * self.seqs
    }

    /// The sequences with their counts and flags, in order.
    pub fn iter(&self) -> SeqIter<'_> {
        SeqIter::over(self.chunks.iter().map(|c| &c[..]).collect())
    }

    /// The sequences in `parts` pieces (or fewer) of about equal size, in order.
    pub fn split(&self, parts: usize) -> Vec<SeqIter<'_>> {
        let total: usize = self.chunks.iter().map(Vec::len).sum();
        let per = total.div_ceil(parts.max(1)).max(1);
        let mut pieces = Vec::with_capacity(parts);
        let mut piece: Vec<&[u32]> = Vec::new();
        let mut size = 0;
        for chunk in &self.chunks {
            let mut start = 0;
            let mut at = 0;
            while at < chunk.len() {
                at += HEAD + (chunk[at] & !FLAG) as usize;
                if size + at - start >= per {
                    piece.push(&chunk[start..at]);
                    pieces.push(SeqIter::over(std::mem::take(&mut piece)));
                    start = at;
                    size = 0;
                }
            }
            if start < chunk.len() {
                piece.push(&chunk[start..]);
                size += chunk.len() - start;
            }
        }
        if !piece.is_empty() {
            pieces.push(SeqIter::over(piece));
        }
        pieces
    }
}

/// Sequences with their counts and flags, from a [`SeqList`].
#[derive(Clone)]
pub struct SeqIter<'a> {
    /// the records of the current slice not read yet
    rest: &'a [u32],
    /// slices of records
    more: Vec<&'a [u32]>,
    /// the next of `more` to read
    next: usize,
}

impl<'a> SeqIter<'a> {
    fn over(slices: Vec<&'a [u32]>) -> SeqIter<'a> {
        SeqIter {
            rest: &[],
            more: slices,
            next: 0,
        }
    }

    /// At least the number of ids the sequences left hold.
    pub fn room(&self) -> usize {
        self.rest.len() + self.more[self.next..].iter().map(|s| s.len()).sum::<usize>()
    }
}

impl<'a> Iterator for SeqIter<'a> {
    type Item = (&'a [u32], u64, bool);

    #[inline]
    fn next(&mut self) -> Option<(&'a [u32], u64, bool)> {
        while self.rest.is_empty() {
            self.rest = self.more.get(self.next)?;
            self.next += 1;
        }
        let (head, tail) = self.rest.split_first_chunk::<HEAD>()?;
        let (seq, rest) = tail.split_at((head[0] & !FLAG) as usize);
        self.rest = rest;
        Some((seq, head[1] as u64 | (head[2] as u64) << 32, head[0] & FLAG != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Expected = Vec<(Vec<u32>, u64, bool)>;

    #[test]
    fn sequences_add_up_as_a_map_would_and_read_back_in_any_pieces() {
        let mut rng = crate::XorShift(0x9E37_79B9_7F4A_7C15);
        for round in 0..200 {
            // few distinct ids, so that sequences repeat; some longer than a chunk
            let ids = 2 + rng.below(5);
            let mut counter = SeqCounter::default();
            let mut sums: std::collections::HashMap<(Vec<u32>, bool), u64> = Default::default();
            let mut order: Vec<(Vec<u32>, bool)> = Vec::new();
            for _ in 0..rng.below(300) {
                let len = if rng.below(20) == 0 {
                    50 + rng.below(150)
                } else {
                    1 + rng.below(4)
                };
                let seq: Vec<u32> = (0..len).map(|_| rng.below(ids) as u32).collect();
                let flag = rng.below(4) == 0;
                let count = 1 + rng.below(3) + if rng.below(9) == 0 { 1 << 33 } else { 0 };
                if rng.below(2) == 0 {
                    // (in the order given: the one held back first)
                    counter.flush();
                    counter.add(&seq, seq_hash(&seq, flag), count, flag);
                } else {
                    counter.add_soon(&seq, count, flag);
                }
                let sum = sums.entry((seq.clone(), flag)).or_insert(0);
                if *sum == 0 {
                    order.push((seq, flag));
                }
                *sum += count;
            }
            let list = counter.into_list("test").unwrap();
            assert_eq!(list.len(), sums.len(), "round {round}");
            assert_eq!(
                list.ids(),
                sums.keys().map(|(s, _)| s.len()).sum::<usize>(),
                "round {round}"
            );
            // in the order first seen, each once, with its sum
            let got: Expected = list.iter().map(|(s, c, f)| (s.to_vec(), c, f)).collect();
            let want: Expected = order
                .iter()
                .map(|(s, f)| (s.clone(), sums[&(s.clone(), *f)], *f))
                .collect();
            assert_eq!(got, want, "round {round}");
            // the pieces of a split, one after the other, are the same sequences
            for parts in [1, 2, 3, 7] {
                let pieces = list.split(parts);
                assert!(pieces.len() <= parts, "round {round}, {parts} parts");
                let joined: Expected = pieces
                    .into_iter()
                    .flat_map(|p| {
                        let room = p.room();
                        let seqs: Expected = p.map(|(s, c, f)| (s.to_vec(), c, f)).collect();
                        assert!(room >= seqs.iter().map(|(s, _, _)| s.len()).sum::<usize>());
                        seqs
                    })
                    .collect();
                assert_eq!(joined, want, "round {round}, {parts} parts");
            }
            // a list added to another counter: every sum twice
            let mut again = SeqCounter::default();
            again.add_list(list.clone());
            again.add_list(list);
            let twice: Expected = again
                .into_list("test")
                .unwrap()
                .iter()
                .map(|(s, c, f)| (s.to_vec(), c, f))
                .collect();
            let want2: Expected = want.iter().map(|(s, c, f)| (s.clone(), 2 * c, *f)).collect();
            assert_eq!(twice, want2, "round {round}");
            // a list made of sequences and counts reads them back, without flags
            let plain: Vec<(Vec<u32>, u64)> = want.iter().map(|(s, c, _)| (s.clone(), c << 20 | c)).collect();
            let made = SeqList::from_seqs(plain.iter().map(|(s, c)| (&s[..], *c)));
            let back: Vec<(Vec<u32>, u64)> = made
                .iter()
                .map(|(s, c, f)| {
                    assert!(!f);
                    (s.to_vec(), c)
                })
                .collect();
            assert_eq!(back, plain, "round {round}");
        }
    }
}
