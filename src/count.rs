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

use crate::error::Result;
use crate::input::Documents;
use crate::pretokenize::classes::{bits, L};
use crate::pretokenize::Pretokenizer;
use crate::seqs::{SeqCounter, SeqList};
use crate::train::Control;

use crate::key::{Key, KeyMap, Lookup};

/// What the runs are called in an error.
const RUNS: &str = "the letter runs of one counting table";

/// Pretoken and run tables with local pretoken ids.
#[derive(Default)]
struct Table {
    ids: KeyMap,
    counts: Vec<u64>,
    has_letter: Vec<bool>,
    runs: SeqCounter,
    pretokens: u64,
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
                    self.runs.add_soon(run, 1, false);
                }
                run.clear();
            }
        })?;
        if run.len() >= 2 {
            self.runs.add_soon(run, 1, false);
        }
        Ok(())
    }
}

/// Letter runs with counts, per counting table: (the table's pretoken id -> index into
/// `Counts::words`, runs in the table's pretoken ids).
pub type Runs = Vec<(Vec<u32>, SeqList)>;

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
        let mut runs: Runs = vec![((0..counts.len() as u32).collect(), first_runs.into_list(RUNS)?)];
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
            runs.push((remap, t.runs.into_list(RUNS)?));
        }
        Ok(Counts {
            words,
            runs,
            documents: self.documents,
            pretokens: total,
        })
    }
}
