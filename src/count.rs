//! Stage 1: pre-tokenize documents and aggregate, in parallel (SPEC 2.1 and 3.3), as
//! `reference/count.py`:
//!
//! * every distinct pretoken with its count (phase 1's input);
//! * every maximal run of two or more consecutive pretokens containing a letter, with its
//!   count (phase 2's input, once cut at pretokens that are not single tokens).
//!
//! Documents arrive in batches; each batch is cut into one share per worker, and each worker
//! adds its share to its own table.  Counts are sums, so the result does not depend on the
//! number of threads or on the sharing.
//!
//! Phase 2 needs the runs, and the input may be a Python iterator that can be read only once,
//! so the runs are kept (as pretoken ids, aggregated) instead of re-reading the corpus.  They
//! cost memory only for BoundlessBPE and SuperBPE; plain BPE does not collect them.  Measured
//! on 100 MB of Gutenberg text: 2.7 M distinct runs; peak RSS about 150-180 MB for BPE and
//! 375-417 MB for BoundlessBPE at 32,768 (the runs, then the candidates and phase 2's tables;
//! stage 3 frees each table of runs once it is translated, see `train/candidates.rs`, and
//! freed memory goes back to the system between stages, see `release_freed_memory`).  Re-reading
//! files instead would save the runs' share but pay pre-tokenization twice (0.7 s here) and
//! still not work for iterators.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::input::Documents;
use crate::pretokenize::classes::{bits, L};
use crate::pretokenize::Pretokenizer;
use crate::train::Control;

use crate::key::{Key, KeyMap, Lookup};

/// Pretoken and run tables with local pretoken ids.
#[derive(Default)]
struct Table {
    ids: KeyMap,
    counts: Vec<u64>,
    has_letter: Vec<bool>,
    runs: RunCounter,
    pretokens: u64,
}

/// A run's record: `[len, count (low half), count (high half), ids...]`.
const RECORD_HEAD: usize = 3;

/// How many `u32`s a chunk of records holds, as a power of two (4 MB; a longer record gets a
/// chunk of its own).  (Tiny in tests, so that they cross chunks.)
const CHUNK_BITS: u32 = if cfg!(test) { 6 } else { 20 };
const CHUNK: usize = 1 << CHUNK_BITS;

/// At most this many chunks per table (the place of a record is `chunk << CHUNK_BITS |
/// offset` in 32 bits; 16 GB of records, far beyond any one counting table's memory).
const MOST_CHUNKS: usize = (1 << (32 - CHUNK_BITS)) - 1;

/// An empty slot of [`RunCounter::slots`].
const EMPTY: u64 = u64::MAX;

/// The letter runs of one counting table being counted: each distinct run once, as a record
/// in chunks of records in the order first seen, found through a table of slots, each the
/// run's hash and its record's place in one word (open addressing, linear probing, at most
/// half full).
///
/// (Round 11, issue 12.  The runs were a hash map of boxed runs, which does not keep the
/// hashes: each time it grew, every box was read again to rehash it (at 100 MB of
/// Gutenberg, 2.7 M distinct runs, `perf` put 14% of a BoundlessBPE training there).  Here
/// growing moves slots only, a run is copied once to the end of a chunk instead of
/// allocated, chunks are never copied to grow (one vector of records that doubled cost a
/// tenth of the samples, copying and faulting in its pages), and stage 3 reads the records
/// in order instead of chasing a box per run.  Nine runs in ten are new, so most look-ups
/// end at an empty slot: here that is one cache miss, where hashbrown's table (its control
/// bytes, then the slot it writes) took two.)
pub struct RunCounter {
    chunks: Vec<Vec<u32>>,
    /// `EMPTY`, or a run's hash in the low half and its record's place in the high half
    slots: Vec<u64>,
    runs: usize,
    /// the records reached `MOST_CHUNKS`: no run was added since
    full: bool,
    /// the run [`RunCounter::add_soon`] will count next, and its hash
    pending: Vec<u32>,
    pending_hash: u32,
}

impl Default for RunCounter {
    fn default() -> RunCounter {
        RunCounter {
            chunks: Vec::new(),
            slots: vec![EMPTY; 1 << 10],
            runs: 0,
            full: false,
            pending: Vec::new(),
            pending_hash: 0,
        }
    }
}

/// A run's 32-bit hash (id by id, multiplying the state: its high half is well mixed).
#[inline]
fn run_hash(run: &[u32]) -> u32 {
    let mut h = run.len() as u64;
    for &id in run {
        h = (h.rotate_left(5) ^ id as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    }
    (h >> 32) as u32
}

/// Append `run`'s record with `count` to `chunks`; returns its chunk and offset.
fn push_record(chunks: &mut Vec<Vec<u32>>, run: &[u32], count: u64) -> (usize, usize) {
    let size = RECORD_HEAD + run.len();
    match chunks.last() {
        // (a record starts below `CHUNK`, so that its offset fits in `CHUNK_BITS`)
        Some(last) if last.len() < CHUNK && last.capacity() - last.len() >= size => {}
        _ => chunks.push(Vec::with_capacity(size.max(CHUNK))),
    }
    let chunk = chunks.len() - 1;
    let records = &mut chunks[chunk];
    let offset = records.len();
    records.extend_from_slice(&[run.len() as u32, count as u32, (count >> 32) as u32]);
    records.extend_from_slice(run);
    (chunk, offset)
}

impl RunCounter {
    /// Count one more occurrence of `run` (which is left empty), once the next run comes or
    /// at the end: its slot is loaded meanwhile.
    #[inline]
    fn add_soon(&mut self, run: &mut Vec<u32>) {
        let hash = run_hash(run);
        crate::prefetch(&self.slots[hash as usize & (self.slots.len() - 1)]);
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            self.add(&pending, self.pending_hash);
            self.pending = pending;
        }
        std::mem::swap(&mut self.pending, run);
        run.clear();
        self.pending_hash = hash;
    }

    /// Count the run [`RunCounter::add_soon`] holds.
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            self.add(&pending, self.pending_hash);
        }
    }

    /// Count one more occurrence of `run`, whose hash is `hash`.
    #[inline]
    fn add(&mut self, run: &[u32], hash: u32) {
        if self.full {
            return;
        }
        if (self.runs + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot == EMPTY {
                break;
            }
            if slot as u32 == hash {
                let at = (slot >> 32) as usize;
                let offset = at & (CHUNK - 1);
                let record = &mut self.chunks[at >> CHUNK_BITS][offset..];
                if record[0] as usize == run.len() && record[RECORD_HEAD..RECORD_HEAD + run.len()] == *run {
                    let count = (record[1] as u64 | (record[2] as u64) << 32) + 1;
                    record[1] = count as u32;
                    record[2] = (count >> 32) as u32;
                    return;
                }
            }
            i = (i + 1) & mask;
        }
        let (chunk, offset) = push_record(&mut self.chunks, run, 1);
        if chunk >= MOST_CHUNKS {
            self.full = true;
            return;
        }
        self.slots[i] = hash as u64 | ((chunk << CHUNK_BITS | offset) as u64) << 32;
        self.runs += 1;
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

    /// The counted runs, without the table that found them, or an error if there were too
    /// many to keep.
    fn into_list(mut self) -> Result<RunList> {
        self.flush();
        if self.full {
            return Err(Error::Runtime(format!(
                "the letter runs of one counting table outgrew {} GB; count the corpus in parts \
                 (superword.count on each, then merge) or with more threads",
                (MOST_CHUNKS * CHUNK * 4) >> 30
            )));
        }
        Ok(RunList {
            runs: self.runs,
            chunks: self.chunks,
        })
    }
}

/// Letter runs with their counts, as records in chunks (see [`RunCounter`]).
#[derive(Default, Clone)]
pub struct RunList {
    chunks: Vec<Vec<u32>>,
    runs: usize,
}

impl RunList {
    /// The list of `runs` (each of two or more ids; a run may come more than once).
    pub fn from_runs<'a>(runs: impl IntoIterator<Item = (&'a [u32], u64)>) -> RunList {
        let mut list = RunList::default();
        for (run, count) in runs {
            push_record(&mut list.chunks, run, count);
            list.runs += 1;
        }
        list
    }

    /// How many runs.
    pub fn len(&self) -> usize {
        self.runs
    }

    pub fn is_empty(&self) -> bool {
        self.runs == 0
    }

    /// The runs with their counts, in order.
    pub fn iter(&self) -> RunIter<'_> {
        RunIter {
            rest: &[],
            more: self.chunks.iter().map(|c| &c[..]).collect(),
            next: 0,
        }
    }

    /// The runs in `parts` pieces (or fewer) of about equal size, in order.
    pub fn split(&self, parts: usize) -> Vec<RunIter<'_>> {
        let total: usize = self.chunks.iter().map(Vec::len).sum();
        let per = total.div_ceil(parts.max(1)).max(1);
        let mut pieces = Vec::with_capacity(parts);
        let mut piece: Vec<&[u32]> = Vec::new();
        let mut size = 0;
        for chunk in &self.chunks {
            let mut start = 0;
            let mut at = 0;
            while at < chunk.len() {
                at += RECORD_HEAD + chunk[at] as usize;
                if size + at - start >= per {
                    piece.push(&chunk[start..at]);
                    pieces.push(RunIter::over(std::mem::take(&mut piece)));
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
            pieces.push(RunIter::over(piece));
        }
        pieces
    }
}

/// Runs with their counts, from a [`RunList`].
#[derive(Clone)]
pub struct RunIter<'a> {
    /// the records of the current slice not read yet
    rest: &'a [u32],
    /// slices of records
    more: Vec<&'a [u32]>,
    /// the next of `more` to read
    next: usize,
}

impl<'a> RunIter<'a> {
    fn over(slices: Vec<&'a [u32]>) -> RunIter<'a> {
        RunIter {
            rest: &[],
            more: slices,
            next: 0,
        }
    }

    /// At least the number of pretokens the runs left hold.
    pub fn room(&self) -> usize {
        self.rest.len() + self.more[self.next..].iter().map(|s| s.len()).sum::<usize>()
    }
}

impl<'a> Iterator for RunIter<'a> {
    type Item = (&'a [u32], u64);

    #[inline]
    fn next(&mut self) -> Option<(&'a [u32], u64)> {
        while self.rest.is_empty() {
            self.rest = self.more.get(self.next)?;
            self.next += 1;
        }
        let (head, tail) = self.rest.split_first_chunk::<RECORD_HEAD>()?;
        let (run, rest) = tail.split_at(head[0] as usize);
        self.rest = rest;
        Some((run, head[1] as u64 | (head[2] as u64) << 32))
    }
}

impl Table {
    #[inline]
    fn intern(&mut self, pretoken: &str) -> u32 {
        if let Some(&id) = self.ids.get(&Lookup(pretoken.as_bytes())) {
            return id;
        }
        let id = self.counts.len() as u32;
        self.ids.insert(Key::new(pretoken), id);
        self.counts.push(0);
        self.has_letter.push(pretoken.chars().any(|c| bits(c) & L != 0));
        id
    }

    fn add_document(
        &mut self,
        pre: &Pretokenizer,
        text: &str,
        with_runs: bool,
        run: &mut Vec<u32>,
    ) -> Result<()> {
        run.clear();
        pre.for_each(text, |pretoken| {
            let id = self.intern(pretoken);
            self.counts[id as usize] += 1;
            self.pretokens += 1;
            if !with_runs {
                return;
            }
            if self.has_letter[id as usize] {
                run.push(id);
            } else {
                if run.len() >= 2 {
                    self.runs.add_soon(run);
                }
                run.clear();
            }
        })?;
        if run.len() >= 2 {
            self.runs.add_soon(run);
        }
        Ok(())
    }
}

/// Letter runs with counts, per counting table: (the table's pretoken id -> index into
/// `Counts::words`, runs in the table's pretoken ids).
pub type Runs = Vec<(Vec<u32>, RunList)>;

/// The aggregated corpus.
pub struct Counts {
    /// distinct pretokens with their counts
    pub words: Vec<(Box<str>, u64)>,
    /// letter runs with counts, per worker table: (table's pretoken id -> index into `words`,
    /// runs in the table's ids).  Kept apart so that no run is hashed twice.
    pub runs: Runs,
    pub documents: u64,
    pub pretokens: u64,
}

/// Stage 1 over a whole stream of documents: read on the calling thread, count every batch on
/// `pool` (one table per thread), report progress as stage "count".
pub fn count_documents(
    documents: &mut dyn Documents,
    pretokenizer: &Pretokenizer,
    with_runs: bool,
    pool: &rayon::ThreadPool,
    control: &dyn Control,
) -> Result<Counts> {
    let mut counter = Counter::new(pretokenizer, with_runs, pool.current_num_threads());
    documents.read_ahead(pool.current_num_threads() > 1);
    documents.for_each_batch(&mut |docs| {
        pool.install(|| counter.add_batch(docs))?;
        control.progress("count", counter.documents(), 0)
    })?;
    let n = counter.documents();
    control.progress("count", n, n)?;
    pool.install(|| counter.finish())
}

/// Counts documents batch by batch.  Each of the `workers` tables always takes the same share
/// of every batch, so tables are merged only once, at the end.
pub struct Counter<'a> {
    pre: &'a Pretokenizer,
    with_runs: bool,
    tables: Vec<Table>,
    documents: u64,
}

impl<'a> Counter<'a> {
    /// `workers`: the number of tables, normally the rayon pool's thread count.
    pub fn new(pre: &'a Pretokenizer, with_runs: bool, workers: usize) -> Counter<'a> {
        let workers = workers.max(1);
        Counter {
            pre,
            with_runs,
            tables: (0..workers).map(|_| Table::default()).collect(),
            documents: 0,
        }
    }

    /// Count a batch of documents, in parallel on the current rayon pool.
    pub fn add_batch(&mut self, docs: &[&str]) -> Result<()> {
        // cut the batch into one share per table, of about equal bytes
        let total: usize = docs.iter().map(|d| d.len() + 1).sum();
        let per = total / self.tables.len() + 1;
        let mut shares: Vec<&[&str]> = Vec::with_capacity(self.tables.len());
        let (mut start, mut bytes) = (0, 0);
        for (i, d) in docs.iter().enumerate() {
            bytes += d.len() + 1;
            if bytes >= per && shares.len() + 1 < self.tables.len() {
                shares.push(&docs[start..=i]);
                start = i + 1;
                bytes = 0;
            }
        }
        shares.push(&docs[start..]);
        let (pre, with_runs) = (self.pre, self.with_runs);
        self.tables
            .par_iter_mut()
            .zip(shares.par_iter())
            .try_for_each(|(table, share)| {
                let mut run = Vec::new();
                for d in share.iter() {
                    table.add_document(pre, d, with_runs, &mut run)?;
                }
                Ok(())
            })?;
        self.documents += docs.len() as u64;
        Ok(())
    }

    pub fn documents(&self) -> u64 {
        self.documents
    }

    /// Merge the tables into one list of words.  The first table's ids stay (its keys
    /// become the first words, in id order, without rehashing); every later table's keys are
    /// looked up in it in parallel, and only the keys it lacks get new ids (added to the table
    /// for the next one, except after the last).  With two threads the final merge was a
    /// serial tail of 0.15-0.2 s on 100 MB of Gutenberg text (4-5% of a BPE training).
    pub fn finish(self) -> Result<Counts> {
        let mut tables = self.tables.into_iter();
        let first = tables.next().expect("a counter has at least one table");
        let Table {
            ids: mut index,
            counts,
            pretokens: mut total,
            runs: first_runs,
            ..
        } = first;
        let mut words: Vec<(Box<str>, u64)> = vec![(Box::from(""), 0); counts.len()];
        for (key, &id) in index.iter() {
            words[id as usize] = (key.to_boxed_str(), counts[id as usize]);
        }
        let mut runs: Runs = vec![((0..counts.len() as u32).collect(), first_runs.into_list()?)];
        drop(counts);
        let mut rest = tables.peekable();
        while let Some(t) = rest.next() {
            let keys: Vec<(Key, u32)> = t.ids.into_iter().collect();
            // the ids the keys have so far (`u32::MAX`: not seen yet), found in parallel
            let found: Vec<u32> = keys
                .par_iter()
                .with_min_len(4096)
                .map(|(key, _)| index.get(&Lookup(key.as_bytes())).copied().unwrap_or(u32::MAX))
                .collect();
            let last = rest.peek().is_none();
            let mut remap = vec![0u32; t.counts.len()];
            for ((key, id), g) in keys.into_iter().zip(found) {
                let count = t.counts[id as usize];
                let g = if g != u32::MAX {
                    words[g as usize].1 += count;
                    g
                } else {
                    let g = words.len() as u32;
                    words.push((key.to_boxed_str(), count));
                    if !last {
                        index.insert(key, g);
                    }
                    g
                };
                remap[id as usize] = g;
            }
            total += t.pretokens;
            runs.push((remap, t.runs.into_list()?));
        }
        Ok(Counts {
            words,
            runs,
            documents: self.documents,
            pretokens: total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_counted_as_a_map_would_and_read_back_in_any_pieces() {
        let mut rng = crate::XorShift(0x9E37_79B9_7F4A_7C15);
        for round in 0..200 {
            // few distinct ids, so that runs repeat; some runs longer than a chunk
            let ids = 2 + rng.below(5);
            let mut counter = RunCounter::default();
            let mut expected: std::collections::HashMap<Vec<u32>, u64> = Default::default();
            let mut order: Vec<Vec<u32>> = Vec::new();
            for _ in 0..rng.below(300) {
                let len = if rng.below(20) == 0 {
                    50 + rng.below(150)
                } else {
                    2 + rng.below(4)
                };
                let run: Vec<u32> = (0..len).map(|_| rng.below(ids) as u32).collect();
                if rng.below(2) == 0 {
                    // (in the order given: the run held back first)
                    counter.flush();
                    counter.add(&run, run_hash(&run));
                } else {
                    counter.add_soon(&mut run.clone());
                }
                let count = expected.entry(run.clone()).or_insert(0);
                if *count == 0 {
                    order.push(run);
                }
                *count += 1;
            }
            let list = counter.into_list().unwrap();
            assert_eq!(list.len(), expected.len(), "round {round}");
            // in the order first seen, each once, with its count
            let got: Vec<(Vec<u32>, u64)> = list.iter().map(|(r, c)| (r.to_vec(), c)).collect();
            let want: Vec<(Vec<u32>, u64)> = order.iter().map(|r| (r.clone(), expected[r])).collect();
            assert_eq!(got, want, "round {round}");
            // the pieces of a split, one after the other, are the same runs
            for parts in [1, 2, 3, 7] {
                let pieces = list.split(parts);
                assert!(pieces.len() <= parts, "round {round}, {parts} parts");
                let joined: Vec<(Vec<u32>, u64)> = pieces
                    .into_iter()
                    .flat_map(|p| {
                        let room = p.room();
                        let runs: Vec<(Vec<u32>, u64)> = p.map(|(r, c)| (r.to_vec(), c)).collect();
                        assert!(room >= runs.iter().map(|(r, _)| r.len()).sum::<usize>());
                        runs
                    })
                    .collect();
                assert_eq!(joined, want, "round {round}, {parts} parts");
            }
            // a list made of runs and counts reads them back, counts of 64 bits too
            let big: Vec<(Vec<u32>, u64)> = want.iter().map(|(r, c)| (r.clone(), c << 40 | c)).collect();
            let again = RunList::from_runs(big.iter().map(|(r, c)| (&r[..], *c)));
            let back: Vec<(Vec<u32>, u64)> = again.iter().map(|(r, c)| (r.to_vec(), c)).collect();
            assert_eq!(back, big, "round {round}");
        }
    }
}
