//! Count files: stage 1's result ([`Counts`]) on disk, so that one count pass serves many
//! training runs, and counts of parts of a corpus can be summed (`docs/count-format.md`, as
//! `reference/countfile.py`).
//!
//! A [`CountTable`] is the canonical form of the counts: pretokens ordered by count
//! (descending), then bytes; runs as ids into that order, sorted.  The same multiset of
//! counts always gives the same table and the same bytes, whatever the thread count, the
//! order of the inputs or how merges were grouped.  Frequent pretokens get small ids, which
//! keeps the varints of the runs short.
//!
//! Reading treats the file as untrusted: every size is checked against the bytes left before
//! anything is allocated, every count is checked on summing (an overflow is refused, never
//! wrapped), and a problem is an [`Error::Value`] that says what is wrong.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::count::Counts;
use crate::error::{try_vec, Error, Result};
use crate::seqs::SeqList;

/// The most pretoken ids the runs of a count file may hold once written out in full, per byte
/// of the file's body.  A run stores only the ids it does not share with the run before it,
/// so a few bytes can stand for a long run; a real count file shares a few ids per run (runs
/// are sentences' letter runs, sorted), far below this, but a crafted one of 356 KB expanded
/// to about 16 GB.  The same limit in `reference/countfile.py`.
pub const MAX_RUN_IDS_PER_BYTE: u64 = 32;

/// The first 8 bytes of every count file.
pub const MAGIC: &[u8; 8] = b"SWCOUNTS";
/// The format version this code writes and the newest it reads.
pub const VERSION: u32 = 1;
/// magic, version, body length
const PREAMBLE: usize = 8 + 4 + 8;

/// The pre-tokenization settings the counts were made with (the file's header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountSettings {
    pub pattern: String,
    /// the script-specific pattern, `None` in simple mode
    pub script_pattern: Option<String>,
    /// sorted script names, `None` in simple mode
    pub scripts: Option<Vec<String>>,
    /// the pattern that decides which pretokens join letter runs (SPEC 1.3)
    pub merge_pattern: String,
    /// whether the letter runs were counted (BoundlessBPE and SuperBPE need them)
    pub with_runs: bool,
}

impl CountSettings {
    /// How `self` differs from `other`, in words, or `None` when they agree.
    pub fn difference(&self, other: &CountSettings) -> Option<String> {
        fn show<T: std::fmt::Debug>(v: &Option<T>) -> String {
            v.as_ref()
                .map_or("none (simple mode)".into(), |v| format!("{v:?}"))
        }
        if self.pattern != other.pattern {
            Some(format!("pattern {:?} vs {:?}", self.pattern, other.pattern))
        } else if self.script_pattern != other.script_pattern {
            Some(format!(
                "script pattern {} vs {}",
                show(&self.script_pattern),
                show(&other.script_pattern)
            ))
        } else if self.scripts != other.scripts {
            Some(format!(
                "scripts {} vs {}",
                show(&self.scripts),
                show(&other.scripts)
            ))
        } else if self.merge_pattern != other.merge_pattern {
            Some(format!(
                "merge pattern {:?} vs {:?}",
                self.merge_pattern, other.merge_pattern
            ))
        } else if self.with_runs != other.with_runs {
            let says = |r: bool| {
                if r {
                    "with letter runs"
                } else {
                    "without letter runs (runs=False)"
                }
            };
            Some(format!("{} vs {}", says(self.with_runs), says(other.with_runs)))
        } else {
            None
        }
    }
}

/// Counts in canonical order, with their settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountTable {
    pub settings: CountSettings,
    pub documents: u64,
    pub pretokens: u64,
    /// distinct pretokens with counts, by count descending, then bytes
    pub words: Vec<(Box<str>, u64)>,
    /// letter runs as indices into `words`, sorted, with counts
    pub runs: Vec<(Box<[u32]>, u64)>,
}

fn overflow(what: &str) -> Error {
    Error::Value(format!(
        "the {what} overflow 64 bits when summed (over 18,446,744,073,709,551,615); refusing to wrap them"
    ))
}

/// Refuse counts that training could not add up in 64 bits.  Every count training sums (a
/// pair's, a token's, a candidate's, SPEC 2.3 and 8) is at most the pretokens' bytes and
/// the runs' pretokens, each times its count, all added up: a count file of a real corpus
/// holds its size in bytes there, far below 2^64, but a crafted one (a pretoken of 1,000
/// bytes counted 2^62 times) made pair counts wrap, and phase 1 then merged without end
/// until memory ran out.  Checked wherever counts come from outside the counting of text: a
/// count file read, and a sum of count tables.
fn check_total(words: &[(Box<str>, u64)], runs: &[(Box<[u32]>, u64)]) -> Result<()> {
    let words = words.iter().map(|(w, c)| (w.len() as u64, *c));
    let runs = runs.iter().map(|(r, c)| (r.len() as u64, *c));
    words
        .chain(runs)
        .try_fold(0u64, |total, (len, c)| total.checked_add(len.checked_mul(c)?))
        .map(|_| ())
        .ok_or_else(|| {
            Error::Value(
                "the counts are too large to train on: the pretokens' bytes and the runs' \
                 pretokens, each times its count, add up to over 18,446,744,073,709,551,615, \
                 so pair counts could overflow 64 bits"
                    .into(),
            )
        })
}

/// Refuse runs that hold a pretoken more often than it was counted: every occurrence of a
/// pretoken lies in at most one run, so counting text never makes such a table, but a
/// crafted file did (runs `(" on", " on")` counted 5 times, `" on"` twice), and training on it
/// made a superword whose parts were never tokens (an internal error in the Rust core, a
/// model the reference then refused to load).  Sums of tables and pruned tables keep the
/// rule, so a file read is the only place to check it.
fn check_runs(words: &[(Box<str>, u64)], runs: &[(Box<[u32]>, u64)]) -> Result<()> {
    // (exact: u128 sums of at most 2^32 runs of 64-bit counts cannot overflow here)
    let mut held = vec![0u128; words.len()];
    for (run, count) in runs {
        for &id in run.iter() {
            held[id as usize] += *count as u128;
        }
    }
    for (id, ((word, count), held)) in words.iter().zip(held).enumerate() {
        if held > *count as u128 {
            return Err(Error::Value(format!(
                "corrupted: pretoken {id} ({word:?}) is counted {count} times, but the runs hold it {held} times"
            )));
        }
    }
    Ok(())
}

/// Runs in the ids of one table, with that table's map from its ids to indices into the words.
type Part = (Vec<u32>, Vec<(Box<[u32]>, u64)>);

/// Sort `words` canonically and renumber the runs of `parts` into the new ids (in place: no
/// run is copied), summing equal runs.
fn canonical(
    settings: CountSettings,
    documents: u64,
    pretokens: u64,
    words: Vec<(Box<str>, u64)>,
    parts: Vec<Part>,
) -> Result<CountTable> {
    crate::threads::parallel(|| canonical_in_pool(settings, documents, pretokens, words, parts))?
}

fn canonical_in_pool(
    settings: CountSettings,
    documents: u64,
    pretokens: u64,
    words: Vec<(Box<str>, u64)>,
    parts: Vec<Part>,
) -> Result<CountTable> {
    let mut order: Vec<u32> = (0..words.len() as u32).collect();
    order.par_sort_unstable_by(|&a, &b| {
        let (wa, ca) = &words[a as usize];
        let (wb, cb) = &words[b as usize];
        cb.cmp(ca).then_with(|| wa.as_bytes().cmp(wb.as_bytes()))
    });
    let mut new_id = vec![0u32; words.len()];
    for (rank, &old) in order.iter().enumerate() {
        new_id[old as usize] = rank as u32;
    }
    let mut runs: Vec<(Box<[u32]>, u64)> = Vec::with_capacity(parts.iter().map(|p| p.1.len()).sum());
    for (remap, mut part) in parts {
        part.par_iter_mut().for_each(|(run, _)| {
            for id in run.iter_mut() {
                *id = new_id[remap[*id as usize] as usize];
            }
        });
        runs.append(&mut part);
    }
    runs.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut merged: Vec<(Box<[u32]>, u64)> = Vec::with_capacity(runs.len());
    for (run, count) in runs {
        match merged.last_mut() {
            Some(last) if last.0 == run => {
                last.1 = last.1.checked_add(count).ok_or_else(|| overflow("run counts"))?;
            }
            _ => merged.push((run, count)),
        }
    }
    let mut slots: Vec<Option<(Box<str>, u64)>> = words.into_iter().map(Some).collect();
    let words = order
        .iter()
        .map(|&old| slots[old as usize].take().expect("each pretoken once"))
        .collect();
    Ok(CountTable {
        settings,
        documents,
        pretokens,
        words,
        runs: merged,
    })
}

impl CountTable {
    /// The canonical table of stage 1's result.
    pub fn from_counts(counts: Counts, settings: CountSettings) -> Result<CountTable> {
        let parts = counts
            .runs
            .into_iter()
            .map(|(remap, table)| (remap, table.iter().map(|(run, c, _)| (run.into(), c)).collect()))
            .collect();
        canonical(settings, counts.documents, counts.pretokens, counts.words, parts)
    }

    /// Stage 1's result again, for training (`with_runs`: copy the runs too; plain BPE does
    /// not need them).
    pub fn to_counts(&self, with_runs: bool) -> Counts {
        let runs = if with_runs {
            let identity: Vec<u32> = (0..self.words.len() as u32).collect();
            let table = SeqList::from_seqs(self.runs.iter().map(|(run, c)| (&run[..], *c)));
            vec![(identity, table)]
        } else {
            Vec::new()
        };
        Counts {
            words: self.words.clone(),
            runs,
            documents: self.documents,
            pretokens: self.pretokens,
        }
    }

    /// The sum of `tables`, which must share their settings (`names` name them in errors).
    /// The result does not depend on the order of `tables`.
    pub fn merge(tables: &[&CountTable], names: &[String]) -> Result<CountTable> {
        let Some(first) = tables.first() else {
            return Err(Error::Value("merging needs at least one count table".into()));
        };
        let name = |i: usize| names.get(i).cloned().unwrap_or_else(|| format!("counts {i}"));
        for (i, t) in tables.iter().enumerate().skip(1) {
            if let Some(d) = first.settings.difference(&t.settings) {
                return Err(Error::Value(format!(
                    "cannot merge {} and {}: they were counted with different settings ({d})",
                    name(0),
                    name(i)
                )));
            }
        }
        let (mut documents, mut pretokens) = (0u64, 0u64);
        let mut index: FxHashMap<&str, u32> = FxHashMap::default();
        let mut words: Vec<(Box<str>, u64)> = Vec::new();
        let mut parts: Vec<Part> = Vec::new();
        for t in tables {
            documents = documents
                .checked_add(t.documents)
                .ok_or_else(|| overflow("document counts"))?;
            pretokens = pretokens
                .checked_add(t.pretokens)
                .ok_or_else(|| overflow("pretoken counts"))?;
            let mut remap = Vec::with_capacity(t.words.len());
            for (w, c) in &t.words {
                let id = *index.entry(w).or_insert_with(|| {
                    words.push((w.clone(), 0));
                    (words.len() - 1) as u32
                });
                let slot = &mut words[id as usize].1;
                *slot = slot.checked_add(*c).ok_or_else(|| overflow("pretoken counts"))?;
                remap.push(id);
            }
            parts.push((remap, t.runs.clone()));
        }
        drop(index);
        let table = canonical(first.settings.clone(), documents, pretokens, words, parts)?;
        check_total(&table.words, &table.runs)?;
        Ok(table)
    }

    /// Only the pretokens and runs counted at least `min_count` times.  (A run is never
    /// counted more often than any of its pretokens, so a kept run's pretokens are kept.)
    pub fn prune(&self, min_count: u64) -> CountTable {
        let kept = self.words.partition_point(|(_, c)| *c >= min_count);
        CountTable {
            settings: self.settings.clone(),
            documents: self.documents,
            pretokens: self.pretokens,
            words: self.words[..kept].to_vec(),
            runs: self
                .runs
                .iter()
                .filter(|(run, c)| *c >= min_count && run.iter().all(|&i| (i as usize) < kept))
                .cloned()
                .collect(),
        }
    }

    /// The file's bytes (see `docs/count-format.md`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut body = Vec::new();
        let s = &self.settings;
        put_str(&mut body, &s.pattern);
        match (&s.script_pattern, &s.scripts) {
            (Some(p), scripts) => {
                body.push(1);
                put_str(&mut body, p);
                let scripts = scripts.as_deref().unwrap_or(&[]);
                put_varint(&mut body, scripts.len() as u64);
                for name in scripts {
                    put_str(&mut body, name);
                }
            }
            (None, _) => body.push(0),
        }
        put_str(&mut body, &s.merge_pattern);
        body.push(s.with_runs as u8);
        put_varint(&mut body, self.documents);
        put_varint(&mut body, self.pretokens);
        // pretokens: length, bytes, and the count as the drop from the previous count
        put_varint(&mut body, self.words.len() as u64);
        let mut previous = None;
        for (w, c) in &self.words {
            put_str(&mut body, w);
            put_varint(&mut body, previous.map_or(*c, |p: u64| p - c));
            previous = Some(*c);
        }
        // runs: the ids shared with the previous run are not repeated
        put_varint(&mut body, self.runs.len() as u64);
        let mut before: &[u32] = &[];
        for (run, c) in &self.runs {
            let shared = before.iter().zip(run.iter()).take_while(|(a, b)| a == b).count();
            put_varint(&mut body, shared as u64);
            put_varint(&mut body, (run.len() - shared) as u64);
            for &id in &run[shared..] {
                put_varint(&mut body, id as u64);
            }
            put_varint(&mut body, *c);
            before = run;
        }
        let mut out = Vec::with_capacity(PREAMBLE + body.len() + 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        let mut crc = flate2::Crc::new();
        crc.update(&out);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out
    }

    /// Read the count file at `path`; errors name it.
    pub fn load(path: &str) -> Result<CountTable> {
        let data = std::fs::read(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound(format!("count file not found: {path}")),
            _ => Error::Io(format!("{path}: cannot be read ({e})")),
        })?;
        CountTable::parse(&data, path)
    }

    /// [`CountTable::from_bytes`] with errors naming `name` (the file's).
    pub fn parse(data: &[u8], name: &str) -> Result<CountTable> {
        CountTable::from_bytes(data).map_err(|e| match e {
            Error::Memory(m) => Error::Memory(format!("{name}: {m}")),
            e => Error::Value(format!("{name}: {e}")),
        })
    }

    /// Parse a count file.  Errors say what is wrong; the caller adds the file's name.
    pub fn from_bytes(data: &[u8]) -> Result<CountTable> {
        if data.len() < 8 || &data[..8] != MAGIC {
            return Err(Error::Value(
                "not a superword count file (it does not start with SWCOUNTS)".into(),
            ));
        }
        if data.len() < PREAMBLE + 4 {
            return Err(Error::Value(format!(
                "truncated: {} bytes, shorter than a count file's fixed header",
                data.len()
            )));
        }
        let version = u32::from_le_bytes(data[8..12].try_into().unwrap());
        if version > VERSION {
            return Err(Error::Value(format!(
                "written in count-file format version {version}, newer than this superword \
                 reads (version {VERSION}); upgrade superword"
            )));
        }
        if version == 0 {
            return Err(Error::Value("corrupted: format version 0 does not exist".into()));
        }
        let body_len = u64::from_le_bytes(data[12..20].try_into().unwrap());
        let expected = (PREAMBLE as u64 + 4).checked_add(body_len);
        if expected != Some(data.len() as u64) {
            let what = if expected.is_some_and(|e| e > data.len() as u64) {
                "truncated"
            } else {
                "corrupted"
            };
            return Err(Error::Value(format!(
                "{what}: the file is {} bytes, its header says {}",
                data.len(),
                expected.map_or("more than 2^64".into(), |e| e.to_string())
            )));
        }
        let (content, stored) = data.split_at(data.len() - 4);
        let mut crc = flate2::Crc::new();
        crc.update(content);
        let stored = u32::from_le_bytes(stored.try_into().unwrap());
        if crc.sum() != stored {
            return Err(Error::Value(format!(
                "corrupted: checksum mismatch (CRC-32 {:08x}, the file says {stored:08x})",
                crc.sum()
            )));
        }
        Reader {
            data: &content[PREAMBLE..],
            at: 0,
        }
        .table()
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// A cursor over the body that never reads past its end.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn bad(&self, what: &str) -> Error {
        Error::Value(format!("corrupted: {what} (body byte {})", self.at))
    }

    fn left(&self) -> usize {
        self.data.len() - self.at
    }

    fn varint(&mut self, what: &str) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.data.get(self.at) else {
                return Err(self.bad(&format!("the body ends inside {what}")));
            };
            self.at += 1;
            let bits = (b & 0x7f) as u64;
            if shift == 63 && bits > 1 {
                return Err(self.bad(&format!("{what} does not fit in 64 bits")));
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.bad(&format!("{what} does not fit in 64 bits")))
    }

    fn byte(&mut self, what: &str) -> Result<u8> {
        match self.data.get(self.at) {
            Some(&b) => {
                self.at += 1;
                Ok(b)
            }
            None => Err(self.bad(&format!("the body ends inside {what}"))),
        }
    }

    fn flag(&mut self, what: &str) -> Result<bool> {
        match self.byte(what)? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.bad(&format!("{what} is {b}, not 0 or 1"))),
        }
    }

    /// A count of items of at least `min_bytes` each, checked against the bytes left.
    fn len(&mut self, what: &str, min_bytes: usize) -> Result<usize> {
        let n = self.varint(what)?;
        if n > (self.left() / min_bytes) as u64 {
            return Err(self.bad(&format!("{what} ({n}) is more than the bytes left can hold")));
        }
        Ok(n as usize)
    }

    fn str(&mut self, what: &str) -> Result<&'a str> {
        let n = self.len(&format!("the length of {what}"), 1)?;
        let data: &'a [u8] = self.data;
        let raw = &data[self.at..self.at + n];
        let s = std::str::from_utf8(raw).map_err(|_| self.bad(&format!("{what} is not UTF-8")))?;
        self.at += n;
        Ok(s)
    }

    fn table(mut self) -> Result<CountTable> {
        let pattern = self.str("the pattern")?.to_string();
        let (script_pattern, scripts) = if self.flag("the script-aware flag")? {
            let p = self.str("the script pattern")?.to_string();
            let n = self.len("the number of scripts", 1)?;
            let mut names = Vec::with_capacity(n);
            for _ in 0..n {
                names.push(self.str("a script name")?.to_string());
            }
            (Some(p), Some(names))
        } else {
            (None, None)
        };
        let merge_pattern = self.str("the merge pattern")?.to_string();
        let with_runs = self.flag("the runs flag")?;
        let documents = self.varint("the document count")?;
        let pretokens = self.varint("the pretoken count")?;
        // the patterns pass the checks of every other door (`train(pattern=...)`, model files),
        // although training on counts never pre-tokenizes with them
        crate::pretokenize::Pretokenizer::new(&pattern, script_pattern.as_deref(), scripts.as_deref())?;
        let settings = CountSettings {
            pattern,
            script_pattern,
            scripts,
            merge_pattern,
            with_runs,
        };

        // pretokens: at least a length, a byte and a count each
        let n = self.len("the number of pretokens", 3)?;
        if n > u32::MAX as usize {
            return Err(self.bad("more pretokens than 32-bit ids can number"));
        }
        let mut words: Vec<(Box<str>, u64)> = Vec::with_capacity(n);
        for i in 0..n {
            let w = self.str("a pretoken")?;
            if w.is_empty() {
                return Err(self.bad("an empty pretoken"));
            }
            let drop = self.varint("a pretoken count")?;
            let c = match words.last() {
                None => drop,
                Some((prev, p)) => {
                    let c = p
                        .checked_sub(drop)
                        .ok_or_else(|| self.bad("a pretoken count below zero"))?;
                    if c == *p && prev.as_bytes() >= w.as_bytes() {
                        return Err(self.bad(&format!("pretoken {i} is out of order or repeated")));
                    }
                    c
                }
            };
            if c == 0 {
                return Err(self.bad("a pretoken counted 0 times"));
            }
            words.push((w.into(), c));
        }

        // runs: at least shared, length, an id and a count each
        let n = self.len("the number of runs", 4)?;
        if n > 0 && !with_runs {
            return Err(self.bad("runs in a file whose header says it has none"));
        }
        let mut runs: Vec<(Box<[u32]>, u64)> = try_vec(n, "the runs")?;
        let mut run: Vec<u32> = Vec::new();
        let most = MAX_RUN_IDS_PER_BYTE.saturating_mul(self.data.len() as u64);
        let mut expanded = 0u64;
        for i in 0..n {
            let shared = self.varint("a run's shared length")?;
            if shared > run.len() as u64 {
                return Err(self.bad(&format!("run {i} shares more than the previous run has")));
            }
            let rest = self.len("a run's length", 1)?;
            // (checked before the run is written out: the shared ids cost no bytes here)
            expanded = expanded.saturating_add(shared + rest as u64);
            if expanded > most {
                return Err(self.bad(&format!(
                    "the runs, written out in full, hold more than {MAX_RUN_IDS_PER_BYTE} pretoken \
                     ids per byte of the file (at run {i}); runs never share that much"
                )));
            }
            run.truncate(shared as usize);
            for _ in 0..rest {
                let id = self.varint("a run's pretoken id")?;
                if id >= words.len() as u64 {
                    return Err(self.bad(&format!("run {i} names pretoken {id} of {}", words.len())));
                }
                run.push(id as u32);
            }
            if run.len() < 2 {
                return Err(self.bad(&format!("run {i} has fewer than 2 pretokens")));
            }
            if runs.last().is_some_and(|(prev, _)| **prev >= *run) {
                return Err(self.bad(&format!("run {i} is out of order or repeated")));
            }
            let c = self.varint("a run count")?;
            if c == 0 {
                return Err(self.bad("a run counted 0 times"));
            }
            let mut boxed: Vec<u32> = try_vec(run.len(), "a run")?;
            boxed.extend_from_slice(&run);
            runs.push((boxed.into_boxed_slice(), c));
        }
        if self.left() != 0 {
            return Err(self.bad("bytes after the last section"));
        }
        check_runs(&words, &runs)?;
        check_total(&words, &runs)?;
        Ok(CountTable {
            settings,
            documents,
            pretokens,
            words,
            runs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Silent;
    use crate::count::count_documents;
    use crate::input::{Batch, Documents};
    use crate::pretokenize::{Pretokenizer, GPT4O, MERGE_PATTERN};

    struct Docs(Vec<String>);

    impl Documents for Docs {
        fn for_each_batch(&mut self, f: &mut dyn FnMut(Batch<'_>) -> Result<()>) -> Result<()> {
            let docs: Vec<&str> = self.0.iter().map(String::as_str).collect();
            for chunk in docs.chunks(3) {
                f(Batch::Texts(chunk))?;
            }
            Ok(())
        }
    }

    fn settings() -> CountSettings {
        CountSettings {
            pattern: GPT4O.into(),
            script_pattern: None,
            scripts: None,
            merge_pattern: MERGE_PATTERN.into(),
            with_runs: true,
        }
    }

    fn table(docs: &[&str], threads: usize) -> CountTable {
        let pre = Pretokenizer::new(GPT4O, None, None).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut d = Docs(docs.iter().map(|s| s.to_string()).collect());
        let counts = count_documents(&mut d, &pre, true, &pool, &Silent).unwrap();
        CountTable::from_counts(counts, settings()).unwrap()
    }

    const DOCS: [&str; 6] = [
        "the cat sat on the mat",
        "the cat, the dog",
        "a dog sat",
        "the cat sat",
        "x, y z",
        "the cat sat on the mat",
    ];

    #[test]
    fn bytes_round_trip_and_do_not_depend_on_threads() {
        let one = table(&DOCS, 1);
        let four = table(&DOCS, 4);
        assert_eq!(one.to_bytes(), four.to_bytes());
        assert_eq!(CountTable::from_bytes(&one.to_bytes()).unwrap(), one);
        let top: Vec<(Box<str>, u64)> = vec![(" cat".into(), 4), (" sat".into(), 4), ("the".into(), 4)];
        assert_eq!(one.words[..3], top);
    }

    #[test]
    fn merging_parts_equals_counting_the_whole() {
        let whole = table(&DOCS, 2);
        let a = table(&DOCS[..2], 1);
        let b = table(&DOCS[2..], 3);
        let names = ["a".to_string(), "b".to_string()];
        assert_eq!(CountTable::merge(&[&a, &b], &names).unwrap(), whole);
        assert_eq!(CountTable::merge(&[&b, &a], &names).unwrap(), whole);
    }

    #[test]
    fn merging_refuses_overflow_and_other_settings() {
        let mut a = table(&DOCS, 1);
        a.words[0].1 = u64::MAX;
        let names = ["a".to_string(), "b".to_string()];
        let e = CountTable::merge(&[&a, &a], &names).unwrap_err().to_string();
        assert!(e.contains("overflow"), "{e}");
        let mut b = table(&DOCS, 1);
        b.settings.with_runs = false;
        let e = CountTable::merge(&[&a, &b], &names).unwrap_err().to_string();
        assert!(e.contains("cannot merge a and b") && e.contains("runs"), "{e}");
    }

    #[test]
    fn every_cut_and_every_flipped_byte_is_an_error_not_a_panic() {
        let data = table(&DOCS, 1).to_bytes();
        for n in 0..data.len() {
            assert!(CountTable::from_bytes(&data[..n]).is_err(), "cut at {n}");
        }
        for i in 0..data.len() {
            for bit in [0x01, 0x80] {
                let mut bad = data.clone();
                bad[i] ^= bit;
                assert!(CountTable::from_bytes(&bad).is_err(), "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn a_hostile_body_with_a_good_checksum_is_refused() {
        // a body that claims 2^40 pretokens: refused before allocating
        let mut body = Vec::new();
        put_str(&mut body, "p");
        body.push(0);
        put_str(&mut body, "m");
        body.push(1);
        put_varint(&mut body, 1);
        put_varint(&mut body, 1);
        put_varint(&mut body, 1 << 40);
        let mut data = MAGIC.to_vec();
        data.extend_from_slice(&VERSION.to_le_bytes());
        data.extend_from_slice(&(body.len() as u64).to_le_bytes());
        data.extend_from_slice(&body);
        let mut crc = flate2::Crc::new();
        crc.update(&data);
        data.extend_from_slice(&crc.sum().to_le_bytes());
        let e = CountTable::from_bytes(&data).unwrap_err().to_string();
        assert!(e.contains("more than the bytes left"), "{e}");
    }

    fn with_body(body: &[u8]) -> Vec<u8> {
        let mut data = MAGIC.to_vec();
        data.extend_from_slice(&VERSION.to_le_bytes());
        data.extend_from_slice(&(body.len() as u64).to_le_bytes());
        data.extend_from_slice(body);
        let mut crc = flate2::Crc::new();
        crc.update(&data);
        data.extend_from_slice(&crc.sum().to_le_bytes());
        data
    }

    #[test]
    fn runs_that_share_too_much_are_refused_before_they_are_written_out() {
        // one long run, then runs that each keep all but its last id and add one: a few bytes
        // per run, a whole long run each once expanded
        let (long, many) = (2000u64, 2000u64);
        let mut body = Vec::new();
        put_str(&mut body, "p");
        body.push(0);
        put_str(&mut body, "m");
        body.push(1);
        put_varint(&mut body, 1);
        put_varint(&mut body, 1);
        put_varint(&mut body, 2);
        put_str(&mut body, "a");
        put_varint(&mut body, u64::MAX / 2);
        put_str(&mut body, "b");
        put_varint(&mut body, 1);
        put_varint(&mut body, many + 1);
        put_varint(&mut body, 0);
        put_varint(&mut body, long);
        for _ in 0..long {
            put_varint(&mut body, 0);
        }
        put_varint(&mut body, 1);
        for k in 0..many {
            put_varint(&mut body, long - 1 - k);
            put_varint(&mut body, 1);
            put_varint(&mut body, 1);
            put_varint(&mut body, 1);
        }
        let e = CountTable::from_bytes(&with_body(&body)).unwrap_err().to_string();
        assert!(e.contains("pretoken ids per byte of the file"), "{e}");
    }

    #[test]
    fn a_newer_version_is_named() {
        let mut data = table(&DOCS, 1).to_bytes();
        data[8] = 2;
        let e = CountTable::from_bytes(&data).unwrap_err().to_string();
        assert!(e.contains("version 2"), "{e}");
    }
}
