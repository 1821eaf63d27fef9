//! Stage 1: pre-tokenize documents and aggregate, in parallel (SPEC 2.1 and 3.3), as
//! `reference/count.py`:
//!
//! * every distinct pretoken with its count (phase 1's input);
//! * every maximal run of two or more consecutive pretokens containing a letter, with its
//!   count (phase 2's input, once cut at pretokens that are not single tokens).
//!
//! Documents arrive in batches; each batch is cut into groups of about 64 KB that rayon
//! workers fold into local tables, merged pairwise.  Counts are sums, so the result does not
//! depend on the number of threads or on the grouping.
//!
//! Phase 2 needs the runs, and the input may be a Python iterator that can be read only once,
//! so the runs are kept (as pretoken ids) instead of re-reading the corpus.  They cost memory
//! only for BoundlessBPE and SuperBPE; plain BPE does not collect them.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::Result;
use crate::pretokenize::classes::{bits, L};
use crate::pretokenize::Pretokenizer;

const GROUP_BYTES: usize = 64 * 1024;

/// Pretoken and run tables with local pretoken ids.
#[derive(Default)]
struct Table {
    ids: FxHashMap<Box<str>, u32>,
    counts: Vec<u64>,
    has_letter: Vec<bool>,
    runs: FxHashMap<Box<[u32]>, u64>,
    pretokens: u64,
}

impl Table {
    #[inline]
    fn intern(&mut self, piece: &str) -> u32 {
        if let Some(&id) = self.ids.get(piece) {
            return id;
        }
        let id = self.counts.len() as u32;
        self.ids.insert(piece.into(), id);
        self.counts.push(0);
        self.has_letter.push(piece.chars().any(|c| bits(c) & L != 0));
        id
    }

    fn add_document(&mut self, pre: &Pretokenizer, text: &str, with_runs: bool, run: &mut Vec<u32>) -> Result<()> {
        run.clear();
        pre.for_each(text, |piece| {
            let id = self.intern(piece);
            self.counts[id as usize] += 1;
            self.pretokens += 1;
            if !with_runs {
                return;
            }
            if self.has_letter[id as usize] {
                run.push(id);
            } else {
                if run.len() >= 2 {
                    *self.runs.entry(run.as_slice().into()).or_insert(0) += 1;
                }
                run.clear();
            }
        })?;
        if run.len() >= 2 {
            *self.runs.entry(run.as_slice().into()).or_insert(0) += 1;
        }
        Ok(())
    }

    /// Add `other` into the larger of the two tables.
    fn merge(self, other: Table) -> Table {
        let (mut big, small) = if self.counts.len() >= other.counts.len() { (self, other) } else { (other, self) };
        let mut remap = vec![0u32; small.counts.len()];
        for (piece, id) in small.ids {
            let target = big.intern(&piece);
            big.counts[target as usize] += small.counts[id as usize];
            remap[id as usize] = target;
        }
        for (run, n) in small.runs {
            let mapped: Box<[u32]> = run.iter().map(|&i| remap[i as usize]).collect();
            *big.runs.entry(mapped).or_insert(0) += n;
        }
        big.pretokens += small.pretokens;
        big
    }
}

/// The aggregated corpus.
pub struct Counts {
    /// distinct pretokens with their counts
    pub words: Vec<(Box<str>, u64)>,
    /// letter runs as indices into `words`, with counts
    pub runs: Vec<(Box<[u32]>, u64)>,
    pub documents: u64,
    pub pretokens: u64,
}

pub struct Counter<'a> {
    pre: &'a Pretokenizer,
    with_runs: bool,
    table: Table,
    documents: u64,
}

impl<'a> Counter<'a> {
    pub fn new(pre: &'a Pretokenizer, with_runs: bool) -> Counter<'a> {
        Counter { pre, with_runs, table: Table::default(), documents: 0 }
    }

    /// Count a batch of documents, in parallel on the current rayon pool.
    pub fn add_batch(&mut self, docs: &[&str]) -> Result<()> {
        let mut groups: Vec<&[&str]> = Vec::new();
        let (mut start, mut bytes) = (0, 0);
        for (i, d) in docs.iter().enumerate() {
            bytes += d.len() + 1;
            if bytes >= GROUP_BYTES {
                groups.push(&docs[start..=i]);
                start = i + 1;
                bytes = 0;
            }
        }
        if start < docs.len() {
            groups.push(&docs[start..]);
        }
        let (pre, with_runs) = (self.pre, self.with_runs);
        let batch = groups
            .par_iter()
            .try_fold(
                || (Table::default(), Vec::new()),
                |(mut table, mut run), group| {
                    for d in group.iter() {
                        table.add_document(pre, d, with_runs, &mut run)?;
                    }
                    Ok((table, run))
                },
            )
            .map(|r| r.map(|(t, _)| t))
            .try_reduce(Table::default, |a, b| Ok(a.merge(b)))?;
        self.table = std::mem::take(&mut self.table).merge(batch);
        self.documents += docs.len() as u64;
        Ok(())
    }

    pub fn documents(&self) -> u64 {
        self.documents
    }

    pub fn finish(self) -> Counts {
        let t = self.table;
        let mut words: Vec<(Box<str>, u64)> = vec![(Box::from(""), 0); t.counts.len()];
        for (piece, id) in t.ids {
            words[id as usize] = (piece, t.counts[id as usize]);
        }
        Counts { words, runs: t.runs.into_iter().collect(), documents: self.documents, pretokens: t.pretokens }
    }
}
