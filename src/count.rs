//! Stage 1: pre-tokenize documents and aggregate, in parallel (SPEC 2.1 and 3.3), as
//! `reference/count.py`:
//!
//! * every distinct pretoken with its count (phase 1's input);
//! * every maximal run of two or more consecutive pretokens containing a letter, with its
//!   count (phase 2's input, once cut at pretokens that are not single tokens); a run may
//!   come more than once, with counts that add up (see [`TableRuns`]).
//!
//! Documents arrive in batches; each batch is cut into pieces, and each worker adds the
//! pieces it takes to its own table.  Counts are sums, so the result does not depend on the
//! number of threads or on which worker took which piece.
//!
//! Phase 2 needs the runs, and the input may be a Python iterator that can be read only once,
//! so the runs are kept (as pretoken ids, listed per table, see [`TableRuns`]) instead of
//! re-reading the corpus.  They cost memory only for BoundlessBPE and SuperBPE; plain BPE
//! does not collect them.  Measured on 100 MB of Gutenberg text: 2.2 M distinct runs on one
//! thread; peak RSS about 165-180 MB for BPE and 305 MB for BoundlessBPE at 32,768 on one
//! thread (the runs, then the candidates and phase 2's tables; stage 3 frees each table of
//! runs once it is translated, see `train/candidates.rs`, and freed memory goes back to the
//! system between stages, see `release_freed_memory`).  Re-reading files instead would save
//! the runs' share but pay pre-tokenization twice (0.4 s here) and still not work for
//! iterators.
//!
//! Where counting's time went (`perf`, 100 MB, one thread): interning
//! pretokens in a hashbrown map was a third of a BPE training's counting, half of it waiting
//! for the key's slot; they are now looked up a block at a time in a [`ByteMap`] with their
//! slots prefetched ([`BLOCK`]): BPE's counting 0.66 -> 0.41 s.  For BoundlessBPE the runs'
//! map of boxes was most of the rest (see `crate::seqs`); what is left of its counting is
//! mostly the kernel zeroing fresh pages for the runs (a quarter of the samples).
//! The runs are listed rather than added up ([`TableRuns`]), which saves the table that found
//! them.

use rayon::prelude::*;

use crate::control::Control;
use crate::error::{Error, Result};
use crate::input::{Batch, Documents};
use crate::pretokenize::classes::{bits, L};
use crate::pretokenize::Pretokenizer;
use crate::seqs::{SeqCounter, SeqList, FLAG};

use crate::key::{ByteMap, Probe};

/// What the runs are called in an error, with what to do instead (a count table holds any
/// number of runs; each thread counts into a table of its own).
const RUNS: &str = "the letter runs of one counting table (count the corpus in parts with \
                    superword.count, then merge them, or use more threads)";

/// A table's letter runs: listed as they come, not added up (nine runs in ten are new on
/// natural text), until the list holds [`CHECK_RUNS`] ids; then added up once, and added up
/// as they come from then on if that took them to half or fewer (a repetitive corpus, whose
/// list would grow with the text), else listed on, with the next check at twice the size.
/// Stage 3 reads them as sums (`train/candidates.rs`), so a run may come any number of times.
///
/// (They were always added up, in a [`SeqCounter`], whose slots took 64
/// MB of fresh pages at 100 MB of Gutenberg beside the records, and a look-up per run.
/// Listed, counting for BoundlessBPE on one pinned core took 0.80-0.97 -> 0.56-0.60 s, for
/// 11 MB more records; a table of 65,536 recent runs to add repeats to took back 0.1 s of
/// that and kept only 2 MB.)
enum TableRuns {
    Listed {
        list: SeqList,
        /// how many ids `list` holds, and how many it may hold before it is added up
        ids: usize,
        check: usize,
    },
    Added(SeqCounter),
}

/// When a table's listed runs are first added up (in ids: 256 MB of records).  (Few in tests,
/// so that they are.)
const CHECK_RUNS: usize = if cfg!(test) { 64 } else { 1 << 26 };

impl Default for TableRuns {
    fn default() -> TableRuns {
        TableRuns::Listed {
            list: SeqList::default(),
            ids: 0,
            check: CHECK_RUNS,
        }
    }
}

impl TableRuns {
    /// One more occurrence of `run`.
    #[inline]
    fn add(&mut self, run: &[u32]) -> Result<()> {
        match self {
            TableRuns::Listed { list, ids, check } => {
                if run.len() >= FLAG as usize {
                    return Err(Error::Runtime(format!(
                        "{RUNS}: a run of 2**31 pretokens or more"
                    )));
                }
                list.push(run, 1, false);
                *ids += run.len();
                if *ids >= *check {
                    self.add_up()?;
                }
            }
            TableRuns::Added(counter) => counter.add_soon(run, 1, false),
        }
        Ok(())
    }

    /// Add the listed runs up; keep adding them up if that halved them.
    #[cold]
    fn add_up(&mut self) -> Result<()> {
        let TableRuns::Listed { list, check, .. } = std::mem::take(self) else {
            return Ok(());
        };
        let listed = list.len();
        let mut counter = SeqCounter::default();
        counter.add_list(list);
        counter.flush();
        *self = if counter.len() * 2 <= listed {
            TableRuns::Added(counter)
        } else {
            let list = counter.into_list(RUNS)?;
            let ids = list.ids();
            TableRuns::Listed {
                list,
                ids,
                check: check.saturating_mul(2).max(ids * 2),
            }
        };
        Ok(())
    }

    fn into_list(self) -> Result<SeqList> {
        match self {
            TableRuns::Listed { list, .. } => Ok(list),
            TableRuns::Added(counter) => counter.into_list(RUNS),
        }
    }
}

/// Pretoken and run tables with local pretoken ids.
struct Table {
    /// pretoken -> id, with room for [`BLOCK`] more keys whenever a block starts
    ids: ByteMap,
    /// the pretokens by id (the words' text as `Counts` hands it over: not copied again)
    keys: Vec<Box<str>>,
    counts: Vec<u64>,
    has_letter: Vec<bool>,
    runs: TableRuns,
    pretokens: u64,
}

impl Default for Table {
    fn default() -> Table {
        Table {
            ids: ByteMap::with_capacity(FIRST_ROOM),
            keys: Vec::new(),
            counts: Vec::new(),
            has_letter: Vec::new(),
            runs: TableRuns::default(),
            pretokens: 0,
        }
    }
}

/// Pretokens looked up at once: each is hashed and its slot loaded as it comes, and looked up
/// when the block is full or the document ends.  (Interning pretokens
/// in a hashbrown map was a third of a BPE training's counting samples at 100 MB, half of
/// that waiting for the key's slot.)
const BLOCK: usize = 16;

/// The keys a table's map has room for at first (it doubles as it fills).  (Tiny in tests, so
/// that they make it again.)
const FIRST_ROOM: usize = if cfg!(test) { 8 } else { 1 << 12 };

/// What the pretokens are called in an error.
const PRETOKENS: &str = "the long pretokens of one counting table";

impl Table {
    /// Room in `ids` for `more` new keys: the map is made again, twice as large, when it has
    /// not.  Only between blocks: the probes of waiting keys are made for the map they see.
    fn make_room(&mut self, more: usize) -> Result<()> {
        if self.ids.len() + more <= self.ids.room() {
            return Ok(());
        }
        let mut ids = ByteMap::with_capacity((self.ids.room() * 2).max(self.ids.len() + more));
        for (id, key) in self.keys.iter().enumerate() {
            if !ids.insert(key.as_bytes(), id as u32) {
                return Err(too_long(PRETOKENS));
            }
        }
        self.ids = ids;
        Ok(())
    }

    /// The id of `pretoken`, which the map does not hold: a new one.
    #[cold]
    fn new_id(&mut self, pretoken: &str) -> Result<u32> {
        let id = self.counts.len() as u32;
        // the key first, fallibly: one pretoken can be hundreds of megabytes (a text without
        // spaces), and running out should be a MemoryError, not an abort
        let mut key = String::new();
        key.try_reserve_exact(pretoken.len()).map_err(|_| {
            Error::Memory(format!(
                "counting a pretoken of {} bytes (a text without spaces or line breaks): out of memory",
                pretoken.len()
            ))
        })?;
        key.push_str(pretoken);
        if !self.ids.insert(pretoken.as_bytes(), id) {
            return Err(too_long(PRETOKENS));
        }
        self.keys.push(key.into_boxed_str());
        self.counts.push(0);
        self.has_letter.push(pretoken.chars().any(|c| bits(c) & L != 0));
        Ok(id)
    }

    /// Count the pretokens waiting in `block`, in order.
    #[inline]
    fn count_block(&mut self, block: &[(&str, Probe)], with_runs: bool, run: &mut Vec<u32>) -> Result<()> {
        for &(pretoken, probe) in block {
            let id = match self.ids.find(pretoken.as_bytes(), probe) {
                Some(id) => id,
                None => self.new_id(pretoken)?,
            };
            self.counts[id as usize] += 1;
            if !with_runs {
                continue;
            }
            if self.has_letter[id as usize] {
                run.push(id);
            } else {
                if run.len() >= 2 {
                    self.runs.add(run)?;
                }
                run.clear();
            }
        }
        self.pretokens += block.len() as u64;
        Ok(())
    }

    fn add_document(
        &mut self,
        pre: &Pretokenizer,
        text: &str,
        with_runs: bool,
        run: &mut Vec<u32>,
    ) -> Result<()> {
        run.clear();
        let bytes = text.as_bytes();
        let mut block: [(&str, Probe); BLOCK] = [("", Probe::default()); BLOCK];
        let mut n = 0;
        let mut failed = Ok(());
        pre.for_each(text, |pretoken| {
            if failed.is_err() {
                return;
            }
            if n == 0 {
                if let Err(e) = self.make_room(BLOCK) {
                    failed = Err(e);
                    return;
                }
            }
            let key = pretoken.as_bytes();
            // (a pretoken is a slice of `text`: hashed from the 12 bytes where it starts when
            // the text has them, without a branch on its length; as `key::Prefetched` does)
            let at = (key.as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize);
            let probe = match bytes.get(at..at.wrapping_add(12)) {
                Some(window) if at + key.len() <= bytes.len() => {
                    self.ids.probe_in(window.try_into().unwrap(), key.len())
                }
                _ => self.ids.probe(key),
            };
            self.ids.prefetch(&probe);
            block[n] = (pretoken, probe);
            n += 1;
            if n == BLOCK {
                n = 0;
                failed = self.count_block(&block, with_runs, run);
            }
        })?;
        failed?;
        self.count_block(&block[..n], with_runs, run)?;
        if run.len() >= 2 {
            self.runs.add(run)?;
        }
        Ok(())
    }
}

/// The error when the long pretokens of one table take more than a map holds.
fn too_long(what: &str) -> Error {
    Error::Runtime(format!(
        "{what} take more than {} GB (count the corpus in parts with superword.count, then \
         merge them, or use more threads)",
        ByteMap::MOST_LONG >> 30
    ))
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
    documents.for_each_batch(&mut |batch| {
        pool.install(|| counter.add_batch(batch))?;
        control.progress("count", counter.documents(), 0)
    })?;
    let n = counter.documents();
    control.progress("count", n, n)?;
    pool.install(|| counter.finish())
}

/// How many pieces per table [`Counter::add_batch`] cuts a batch into (pieces of 256 KB for a
/// block of 8 MB on two threads).
const PIECES_PER_TABLE: usize = 16;

/// `batch` cut into at most `n` runs of lines or texts of about equal bytes (none empty), as
/// ranges of their indices.
fn cut_into_pieces(batch: &Batch<'_>, n: usize) -> Vec<std::ops::Range<usize>> {
    let total: usize = (0..batch.len()).map(|i| batch.bytes_of(i) + 1).sum();
    let per = total / n.max(1) + 1;
    let mut pieces = Vec::with_capacity(n);
    let (mut start, mut bytes) = (0, 0);
    for i in 0..batch.len() {
        bytes += batch.bytes_of(i) + 1;
        if bytes >= per {
            pieces.push(start..i + 1);
            start = i + 1;
            bytes = 0;
        }
    }
    if start < batch.len() {
        pieces.push(start..batch.len());
    }
    pieces
}

/// Counts documents batch by batch, into one table per worker that lasts over all batches, so
/// that tables are merged only once, at the end.
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

    /// Count a batch of documents, in parallel on the current rayon pool: the batch is cut
    /// into [`PIECES_PER_TABLE`] pieces per table, of about equal bytes, and each table's
    /// worker takes the next piece left until none is (which table counts which piece
    /// changes nothing: counts are sums).  The records of a `.jsonl` batch are parsed there
    /// too.  An error is the batch's first in order (of its pieces, the first one's; pieces
    /// are taken in order, so every piece before it is counted to its end), whichever thread
    /// met it.
    ///
    /// (The batch was cut into one share per table: at 100 MB of
    /// Gutenberg on two threads one share of a 32 MB batch took up to 40% longer than the
    /// other (0.061 against 0.085 s), the same bytes holding more new pretokens, and the
    /// other thread waited.  Pieces taken as they come keep both threads busy to the end.)
    pub fn add_batch(&mut self, batch: Batch<'_>) -> Result<()> {
        use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
        let pieces = cut_into_pieces(&batch, self.tables.len() * PIECES_PER_TABLE);
        let next = AtomicUsize::new(0);
        let documents = AtomicU64::new(0);
        let failed = AtomicBool::new(false);
        // (the piece of the first error found, and that error)
        let first_error: std::sync::Mutex<Option<(usize, Error)>> = std::sync::Mutex::new(None);
        let (pre, with_runs) = (self.pre, self.with_runs);
        self.tables.par_iter_mut().for_each(|table| {
            let mut run = Vec::new();
            loop {
                // (after an error, no more pieces: those not taken yet all come after its
                // piece, and a piece taken is always counted to its end or to its own error)
                if failed.load(Relaxed) {
                    return;
                }
                let i = next.fetch_add(1, Relaxed);
                let Some(piece) = pieces.get(i) else {
                    return;
                };
                let mut found = 0;
                let counted = piece.clone().try_for_each(|j| {
                    found += batch.document(j, |d| table.add_document(pre, d, with_runs, &mut run))? as u64;
                    Ok::<(), Error>(())
                });
                documents.fetch_add(found, Relaxed);
                if let Err(e) = counted {
                    failed.store(true, Relaxed);
                    let mut first = first_error.lock().unwrap_or_else(|p| p.into_inner());
                    if first.as_ref().is_none_or(|(k, _)| i < *k) {
                        *first = Some((i, e));
                    }
                    return;
                }
            }
        });
        if let Some((_, e)) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        self.documents += documents.into_inner();
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
            keys,
            counts,
            pretokens: mut total,
            runs: first_runs,
            ..
        } = first;
        let mut runs: Runs = vec![((0..counts.len() as u32).collect(), first_runs.into_list()?)];
        let mut words: Vec<(Box<str>, u64)> = keys.into_iter().zip(counts).collect();
        let mut rest = tables.peekable();
        while let Some(t) = rest.next() {
            // the ids the keys have so far (`u32::MAX`: not seen yet), found in parallel
            let found: Vec<u32> = t
                .keys
                .par_iter()
                .with_min_len(4096)
                .map(|key| index.get(key.as_bytes()).unwrap_or(u32::MAX))
                .collect();
            let last = rest.peek().is_none();
            if !last {
                // room for every key of this table (made again from the words when it has not)
                let more = found.iter().filter(|&&g| g == u32::MAX).count();
                if index.len() + more > index.room() {
                    index = ByteMap::with_capacity(index.len() + more);
                    for (g, (w, _)) in words.iter().enumerate() {
                        if !index.insert(w.as_bytes(), g as u32) {
                            return Err(too_long(PRETOKENS));
                        }
                    }
                }
            }
            let mut remap = vec![0u32; t.counts.len()];
            for ((id, key), g) in t.keys.into_iter().enumerate().zip(found) {
                let count = t.counts[id];
                let g = if g != u32::MAX {
                    words[g as usize].1 += count;
                    g
                } else {
                    let g = words.len() as u32;
                    if !last && !index.insert(key.as_bytes(), g) {
                        return Err(too_long(PRETOKENS));
                    }
                    words.push((key, count));
                    g
                };
                remap[id] = g;
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
    use crate::pretokenize::GPT4O;
    use std::collections::HashMap;

    /// Pretokens and runs (as text) with their counts, from `counts`.
    fn readable(counts: &Counts) -> (HashMap<String, u64>, HashMap<Vec<String>, u64>) {
        let words = counts.words.iter().map(|(w, c)| (w.to_string(), *c)).collect();
        let mut runs: HashMap<Vec<String>, u64> = HashMap::new();
        for (remap, list) in &counts.runs {
            for (run, count, _) in list.iter() {
                let text = run
                    .iter()
                    .map(|&id| counts.words[remap[id as usize] as usize].0.to_string())
                    .collect();
                *runs.entry(text).or_insert(0) += count;
            }
        }
        (words, runs)
    }

    #[test]
    fn a_repetitive_corpus_has_its_runs_added_up_as_they_come() {
        // (the runs are listed until they hold `CHECK_RUNS` ids; added up, these halve)
        let pre = Pretokenizer::new(GPT4O, None, None).unwrap();
        let lines = [
            "the cat sat on the mat, and then it slept",
            "a dog ran home; it was late",
        ];
        let docs: Vec<&str> = (0..300).map(|i| lines[i % 2]).collect();
        for workers in [1, 2] {
            let mut counter = Counter::new(&pre, true, workers);
            counter.add_batch(Batch::Texts(&docs)).unwrap();
            let counts = counter.finish().unwrap();
            let records: usize = counts.runs.iter().map(|(_, list)| list.len()).sum();
            assert!(records <= 4 * workers, "{records} records, {workers} workers");
            let (_, runs) = readable(&counts);
            let expected: HashMap<Vec<String>, u64> = [
                (&["the", " cat", " sat", " on", " the", " mat"][..], 150),
                (&[" and", " then", " it", " slept"], 150),
                (&["a", " dog", " ran", " home"], 150),
                (&[" it", " was", " late"], 150),
            ]
            .into_iter()
            .map(|(run, c)| (run.iter().map(|p| p.to_string()).collect(), c))
            .collect();
            assert_eq!(runs, expected, "{workers} workers");
        }
    }

    #[test]
    fn jsonl_records_count_as_their_texts_and_the_first_bad_one_is_the_error() {
        let pre = Pretokenizer::new(GPT4O, None, None).unwrap();
        let words = [
            "the", " cat", " sat", " on", " a", " mat", ",", " über", " 42", " dog",
        ];
        let texts: Vec<String> = (0..600)
            .map(|i| {
                (0..1 + i % 13)
                    .map(|j| words[(i * 7 + j * 3) % words.len()])
                    .collect()
            })
            .collect();
        // a blank line after every seventh record (blank lines hold no document)
        let mut lines: Vec<String> = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            lines.push(serde_json::json!({ "text": t, "n": i }).to_string());
            if i % 7 == 6 {
                lines.push("  ".into());
            }
        }
        let records = |lines: &[String], workers: usize| {
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            let mut counter = Counter::new(&pre, true, workers);
            let batch = Batch::Records {
                lines: &lines,
                field: "text",
                path: "f.jsonl",
                first_line: 1000,
            };
            counter.add_batch(batch).map(|()| counter)
        };
        let docs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut plain = Counter::new(&pre, true, 1);
        plain.add_batch(Batch::Texts(&docs)).unwrap();
        let expected = readable(&plain.finish().unwrap());
        for workers in [1, 2, 3, 8] {
            let counter = records(&lines, workers).unwrap();
            assert_eq!(counter.documents(), texts.len() as u64);
            assert_eq!(
                readable(&counter.finish().unwrap()),
                expected,
                "{workers} workers"
            );
        }
        // two bad records far apart: the error names the first, however the pieces fall
        let mut bad = lines.clone();
        bad[123] = "{oops".into();
        bad[590] = "[1, 2]".into();
        for workers in [1, 2, 3, 8] {
            for _ in 0..5 {
                let Err(e) = records(&bad, workers) else {
                    panic!("bad records counted")
                };
                let message = e.to_string();
                assert!(
                    message.contains("f.jsonl, line 1124: not valid JSON"),
                    "{message}"
                );
            }
        }
    }

    #[test]
    fn counts_do_not_depend_on_the_tables_or_batches() {
        // words short and long (inline keys, long keys, keys over 22 bytes), letters and not
        let pre = Pretokenizer::new(GPT4O, None, None).unwrap();
        let mut rng = crate::XorShift(0x2545_F491_4F6C_DD1D);
        let pieces = [
            "a",
            "bc",
            "the",
            "über",
            "longerwordthan",
            "averyveryverylongwordindeed",
            "7",
            ", ",
            "!\n",
            "  ",
        ];
        for round in 0..40 {
            let docs: Vec<String> = (0..1 + rng.below(60))
                .map(|_| {
                    (0..rng.below(40))
                        .map(|_| {
                            let p = pieces[rng.below(pieces.len() as u64) as usize];
                            // (a number suffix makes many distinct words)
                            format!(
                                " {p}{}",
                                if rng.below(3) == 0 {
                                    rng.below(50).to_string()
                                } else {
                                    String::new()
                                }
                            )
                        })
                        .collect()
                })
                .collect();
            let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
            let mut results = Vec::new();
            for workers in [1, 2, 3] {
                let mut counter = Counter::new(&pre, true, workers);
                let cut = rng.below(docs.len() as u64 + 1) as usize;
                counter.add_batch(Batch::Texts(&docs[..cut])).unwrap();
                counter.add_batch(Batch::Texts(&docs[cut..])).unwrap();
                results.push(readable(&counter.finish().unwrap()));
            }
            // what the pretokenizer gives, counted plainly
            let mut words: HashMap<String, u64> = HashMap::new();
            let mut runs: HashMap<Vec<String>, u64> = HashMap::new();
            for d in &docs {
                let mut run: Vec<String> = Vec::new();
                let mut end = |run: &mut Vec<String>| {
                    if run.len() >= 2 {
                        *runs.entry(run.clone()).or_insert(0) += 1;
                    }
                    run.clear();
                };
                pre.for_each(d, |p| {
                    *words.entry(p.to_string()).or_insert(0) += 1;
                    if p.chars().any(|c| bits(c) & L != 0) {
                        run.push(p.to_string());
                    } else {
                        end(&mut run);
                    }
                })
                .unwrap();
                end(&mut run);
            }
            assert!(runs.len() > 1 || docs.len() < 5, "round {round}");
            for r in &results {
                assert_eq!(r.0, words, "round {round}");
                assert_eq!(r.1, runs, "round {round}");
            }
        }
    }
}
