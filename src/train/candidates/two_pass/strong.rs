//! Pass 2 cut in the tasks, for BoundlessBPE without the greedy split: the shards return the
//! *segments* phase 2 trains on (the candidates cut at weak pairs), not the uncut candidates,
//! so that no process gathers the candidates of the whole corpus.
//!
//! Phase 2 cuts the candidates where two different tokens meet whose pair is counted at most
//! `T` times over all candidates (`T`: the word model's smallest merge count; see `cut.rs` and
//! `boundless.rs` for why that is exact).  A shard cannot tell a weak pair from its own
//! counts, so pass 2 takes two steps:
//!
//! 1. [`shard_pairs`]: each shard counts the pairs of two different tokens adjacent in its
//!    candidates (as the cut counts them), split by hash into partitions ([`PairTable`]).  A
//!    partition's tables are summed over the shards and kept above `T`
//!    ([`PairTable::kept_above`]); the partitions together are the exact set of strong pairs
//!    (small: bounded by what can win, about 37,000 at 100 MB of Gutenberg, 32,768).
//! 2. [`shard_segments`]: each shard cuts its candidates where no strong pair stands and
//!    returns the segments, whether each is a whole candidate, and the counts of the tokens
//!    left alone ([`SegmentTable`]).  The cut of a candidate depends only on its tokens and
//!    the strong set, so the segments of the corpus are the sum of the shards' segments:
//!    [`phase_two_segments`] trains on the sum what [`super::phase_two`] trains on the cut of
//!    the summed candidates, byte for byte.
//!
//! The greedy split needs the frequent n-grams of the uncut candidates, and SuperBPE cuts at
//! a guessed count whose fallback needs the uncut candidates: both keep [`super::phase_two`].

use std::time::Instant;

use rayon::prelude::*;

use super::super::cut::cut_where;
use super::super::{add_up, flatten, pair_key, CutCandidates, Table};
use super::{check_source, eligible, fingerprint, put_varint, Header, PhaseOne, Reader};
use crate::control::Control;
use crate::count::{Counts, Runs};
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::seqs::SeqList;
use crate::tokens::TokenId;
use crate::train::boundless::train_boundless;
use crate::train::{boundless_model, Phase2, Stats};

/// The partition of `partitions` a pair (a [`pair_key`]) goes to.
fn partition_of(key: u64, partitions: usize) -> usize {
    ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % partitions as u64) as usize
}

/// Counts of pairs of two different tokens adjacent in supermerge candidates, over some
/// documents, for one word model: all of them, or those counted more than a threshold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairTable {
    pub fingerprint: u64,
    pub n_tokens: u64,
    pub documents: u64,
    pub pretokens: u64,
    /// `Some(t)`: only the pairs counted more than `t` times are kept
    pub above: Option<u64>,
    /// ([`pair_key`], count), sorted by key
    pub pairs: Vec<(u64, u64)>,
}

const PAIRS_MAGIC: &[u8] = b"superword pairs 1\n";
const SEGMENTS_MAGIC: &[u8] = b"superword segments 1\n";

/// Step 1 of pass 2 in one shard: the pairs of its candidates (its letter runs, `counts`,
/// cut at pretokens that `encoder` does not make one token), in `partitions` tables by hash.
pub fn shard_pairs(
    counts: Counts,
    encoder: &Encoder,
    model_text: &str,
    partitions: usize,
) -> Result<Vec<PairTable>> {
    if partitions == 0 {
        return Err(Error::Value("pairs are split into at least one partition".into()));
    }
    let token_of = eligible(&counts.words, encoder);
    let (documents, pretokens) = (counts.documents, counts.pretokens);
    drop(counts.words);
    let parts = runs_pairs(counts.runs, &token_of, partitions);
    let fingerprint = fingerprint(model_text);
    let n_tokens = encoder.vocab().len() as u64;
    Ok(parts
        .into_par_iter()
        .map(|mut pairs| {
            pairs.sort_unstable();
            PairTable {
                fingerprint,
                n_tokens,
                documents,
                pretokens,
                above: None,
                pairs,
            }
        })
        .collect())
}

/// [`shard_pairs`] on letter runs: (key, count) lists, one a partition, not sorted.
fn runs_pairs(runs: Runs, token_of: &[Option<TokenId>], partitions: usize) -> Vec<Vec<(u64, u64)>> {
    let flat = flatten(runs, token_of);
    let tables: Vec<Table<u64, u64>> = flat
        .par_iter()
        .map(|list| {
            let mut map: Table<u64, u64> = Table::default();
            for (tokens, count, _) in list.iter() {
                for w in tokens.windows(2) {
                    if w[0] != w[1] {
                        // (no overflow: a shard's counts add up to at most its pretokens)
                        *map.entry(pair_key(w[0], w[1])).or_insert(0) += count;
                    }
                }
            }
            map
        })
        .collect();
    drop(flat);
    let mut parts: Vec<Vec<(u64, u64)>> = vec![Vec::new(); partitions];
    for (key, count) in add_up(tables, |a, b| *a += b) {
        parts[partition_of(key, partitions)].push((key, count));
    }
    parts
}

fn overflow(what: &str) -> Error {
    Error::Value(format!("the sum of these tables counts {what} over 2**64 - 1"))
}

/// Refuse tables of different word models (`kind` names them: "pair tables").
fn same_model(headers: &[Header], names: &[String], kind: &str) -> Result<()> {
    let Some(first) = headers.first() else {
        return Err(Error::Value(format!("merging {kind} needs at least one")));
    };
    for (i, t) in headers.iter().enumerate() {
        if (t.fingerprint, t.n_tokens) != (first.fingerprint, first.n_tokens) {
            let name = names.get(i).map_or("a table", String::as_str);
            let other = names.first().map_or("the first table", String::as_str);
            return Err(Error::Value(format!(
                "{name} was made with another word model than {other} (model fingerprints {:016x} and {:016x})",
                t.fingerprint, first.fingerprint
            )));
        }
    }
    Ok(())
}

/// The documents and pretokens of tables over disjoint documents, added up.
fn sum_read(headers: &[Header]) -> Result<(u64, u64)> {
    let mut documents = 0u64;
    let mut pretokens = 0u64;
    for t in headers {
        documents = documents
            .checked_add(t.documents)
            .ok_or_else(|| overflow("documents"))?;
        pretokens = pretokens
            .checked_add(t.pretokens)
            .ok_or_else(|| overflow("pretokens"))?;
    }
    Ok((documents, pretokens))
}

impl PairTable {
    pub(super) fn header(&self) -> Header {
        Header {
            fingerprint: self.fingerprint,
            n_tokens: self.n_tokens,
            documents: self.documents,
            pretokens: self.pretokens,
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(PAIRS_MAGIC.len() + 48 + self.pairs.len() * 5);
        out.extend_from_slice(PAIRS_MAGIC);
        // (`above` as t + 1, 0 for none: a threshold is a count, below 2**64 - 1)
        let above = self.above.map_or(0, |t| t.saturating_add(1));
        for v in [
            self.fingerprint,
            self.n_tokens,
            self.documents,
            self.pretokens,
            above,
            self.pairs.len() as u64,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let mut last = 0u64;
        for &(key, count) in &self.pairs {
            put_varint(&mut out, key - last);
            put_varint(&mut out, count);
            last = key;
        }
        out
    }

    /// Parse [`Self::to_bytes`]'s bytes; anything else is an error naming `name`.
    pub fn parse(data: &[u8], name: &str) -> Result<PairTable> {
        let mut r = Reader::open(data, PAIRS_MAGIC, name, "pair table")?;
        let (fingerprint, n_tokens, documents, pretokens, above, n) =
            (r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?);
        let above = above.checked_sub(1);
        // (each pair takes at least two bytes)
        if n > (data.len() / 2) as u64 {
            return Err(r.bad("more pairs than the bytes can hold"));
        }
        let mut pairs = Vec::with_capacity(n as usize);
        let mut key = 0u64;
        for i in 0..n {
            let delta = r.varint()?;
            if i > 0 && delta == 0 {
                return Err(r.bad("pairs out of order or repeated"));
            }
            key = key
                .checked_add(delta)
                .ok_or_else(|| r.bad("a pair beyond 64 bits"))?;
            let (a, b) = (key >> 32, key & 0xffff_ffff);
            if a >= n_tokens || b >= n_tokens || a == b {
                return Err(r.bad(&format!(
                    "the pair ({a}, {b}), not two different tokens of the word model's {n_tokens}"
                )));
            }
            let count = r.varint()?;
            if count == 0 || above.is_some_and(|t| count <= t) {
                return Err(r.bad("a pair counted 0 times, or not above the table's threshold"));
            }
            pairs.push((key, count));
        }
        if r.at != data.len() {
            return Err(r.bad("bytes after the last pair"));
        }
        Ok(PairTable {
            fingerprint,
            n_tokens,
            documents,
            pretokens,
            above,
            pairs,
        })
    }

    /// The sum of tables of all pairs over disjoint documents, made with one word model
    /// (`names` name them in errors).
    pub fn merge(tables: &[&PairTable], names: &[String]) -> Result<PairTable> {
        let headers: Vec<Header> = tables.iter().map(|t| t.header()).collect();
        same_model(&headers, names, "pair tables")?;
        if let Some(i) = tables.iter().position(|t| t.above.is_some()) {
            let name = names.get(i).map_or("a table", String::as_str);
            return Err(Error::Value(format!(
                "{name} keeps only the pairs above a threshold: such tables are not summed"
            )));
        }
        let (documents, pretokens) = sum_read(&headers)?;
        let mut all: Vec<(u64, u64)> = tables.iter().flat_map(|t| t.pairs.iter().copied()).collect();
        all.par_sort_unstable_by_key(|&(key, _)| key);
        let mut pairs: Vec<(u64, u64)> = Vec::with_capacity(all.len());
        for (key, count) in all {
            match pairs.last_mut() {
                Some((last, sum)) if *last == key => {
                    *sum = sum.checked_add(count).ok_or_else(|| overflow("a pair"))?;
                }
                _ => pairs.push((key, count)),
            }
        }
        Ok(PairTable {
            fingerprint: tables[0].fingerprint,
            n_tokens: tables[0].n_tokens,
            documents,
            pretokens,
            above: None,
            pairs,
        })
    }

    /// The pairs counted more than `threshold` times (of a table of all pairs).
    pub fn kept_above(&self, threshold: u64) -> Result<PairTable> {
        if self.above.is_some() {
            return Err(Error::Value(
                "this pair table already keeps only pairs above a threshold".into(),
            ));
        }
        Ok(PairTable {
            above: Some(threshold),
            pairs: self
                .pairs
                .iter()
                .copied()
                .filter(|&(_, c)| c > threshold)
                .collect(),
            ..*self
        })
    }

    /// The strong pairs of the corpus from its partitions' strong pairs (`tables`, each the
    /// sum over every shard of one partition, kept above the same threshold; `names` name them
    /// in errors): their union.
    pub fn union(tables: &[&PairTable], names: &[String]) -> Result<PairTable> {
        let headers: Vec<Header> = tables.iter().map(|t| t.header()).collect();
        same_model(&headers, names, "pair tables")?;
        let first = tables[0];
        for (i, t) in tables.iter().enumerate() {
            if t.above.is_none() || t.above != first.above {
                let name = names.get(i).map_or("a table", String::as_str);
                return Err(Error::Value(format!(
                    "{name} is not kept above the threshold of the first table ({:?}, {:?}): the union \
                     is of strong pairs",
                    t.above, first.above
                )));
            }
            if (t.documents, t.pretokens) != (first.documents, first.pretokens) {
                let name = names.get(i).map_or("a table", String::as_str);
                return Err(Error::Value(format!(
                    "{name} counted {} documents, the first table {}: each partition must be summed \
                     over the whole corpus",
                    t.documents, first.documents
                )));
            }
        }
        let mut pairs: Vec<(u64, u64)> = tables.iter().flat_map(|t| t.pairs.iter().copied()).collect();
        pairs.sort_unstable();
        if pairs.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(Error::Value(
                "the same pair is in two of these partitions: they are not partitions of one corpus".into(),
            ));
        }
        Ok(PairTable { pairs, ..*first })
    }
}

/// Segments added up over some documents, for one word model and one set of strong pairs:
/// the unit of step 2 of pass 2 (see the module).  Its bytes are canonical.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentTable {
    pub fingerprint: u64,
    pub n_tokens: u64,
    pub documents: u64,
    pub pretokens: u64,
    /// the threshold of the strong pairs the segments were cut with
    pub threshold: u64,
    /// distinct (tokens, whole candidate) of two or more tokens with their counts, sorted
    pub segments: Vec<Segment>,
    /// the count of each token standing alone (`n_tokens` of them)
    pub alone: Vec<u64>,
}

/// Step 2 of pass 2 in one shard: its candidates (as in [`shard_pairs`]) cut wherever two
/// different tokens meet whose pair is not in `strong` (the corpus' strong pairs, from
/// [`PairTable::union`]).
pub fn shard_segments(
    counts: Counts,
    encoder: &Encoder,
    model_text: &str,
    strong: &PairTable,
) -> Result<SegmentTable> {
    let n_tokens = encoder.vocab().len();
    let Some(threshold) = strong.above else {
        return Err(Error::Value(
            "the candidates are cut with the strong pairs (a pair table kept above a threshold)".into(),
        ));
    };
    if strong.fingerprint != fingerprint(model_text) || strong.n_tokens != n_tokens as u64 {
        return Err(Error::Value(format!(
            "these strong pairs were made with another word model (fingerprint {:016x}) than this one ({:016x})",
            strong.fingerprint,
            fingerprint(model_text)
        )));
    }
    let token_of = eligible(&counts.words, encoder);
    let (documents, pretokens) = (counts.documents, counts.pretokens);
    drop(counts.words);
    let (segments, alone) = runs_segments(counts.runs, &token_of, strong, threshold, n_tokens)?;
    Ok(SegmentTable {
        fingerprint: fingerprint(model_text),
        n_tokens: n_tokens as u64,
        documents,
        pretokens,
        threshold,
        segments,
        alone,
    })
}

/// Write the counts of the tokens alone (those above 0: the gap to the previous one, and the
/// count); returns how many.
fn put_alone(out: &mut Vec<u8>, alone: &[u64]) -> usize {
    let mut next = 0usize;
    let mut n = 0;
    for (t, &c) in alone.iter().enumerate().filter(|&(_, &c)| c > 0) {
        put_varint(out, (t - next) as u64);
        put_varint(out, c);
        next = t + 1;
        n += 1;
    }
    n
}

/// Reads a segment table's bytes one segment at a time, checking them (errors name the table).
pub(super) struct SegmentReader<'a> {
    r: Reader<'a>,
    fingerprint: u64,
    n_tokens: u64,
    documents: u64,
    pretokens: u64,
    pub(super) threshold: u64,
    /// segments not yet read, then the tokens alone
    left: u64,
    n_alone: u64,
    /// the last segment read (they must come in order)
    last: Option<(Vec<TokenId>, bool)>,
}

impl<'a> SegmentReader<'a> {
    pub(super) fn open(data: &'a [u8], name: &'a str) -> Result<SegmentReader<'a>> {
        let mut r = Reader::open(data, SEGMENTS_MAGIC, name, "segment table")?;
        let (fingerprint, n_tokens, documents, pretokens, threshold, left, n_alone) = (
            r.u64()?,
            r.u64()?,
            r.u64()?,
            r.u64()?,
            r.u64()?,
            r.u64()?,
            r.u64()?,
        );
        // (each segment takes at least four bytes, each token alone two; the word model's
        // tokens are as many as its file holds bytes at most)
        if left > (data.len() / 4) as u64 || n_alone > n_tokens || n_tokens > data.len().max(1 << 24) as u64 {
            return Err(r.bad("more segments or tokens than the bytes can hold"));
        }
        Ok(SegmentReader {
            r,
            fingerprint,
            n_tokens,
            documents,
            pretokens,
            threshold,
            left,
            n_alone,
            last: None,
        })
    }

    pub(super) fn header(&self) -> Header {
        Header {
            fingerprint: self.fingerprint,
            n_tokens: self.n_tokens,
            documents: self.documents,
            pretokens: self.pretokens,
        }
    }

    /// The next segment's tokens into `tokens`, and its wholeness and count; `None` after the
    /// last.
    pub(super) fn next(&mut self, tokens: &mut Vec<TokenId>) -> Result<Option<(bool, u64)>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let r = &mut self.r;
        let head = r.varint()?;
        let (len, whole) = (head >> 1, head & 1 == 1);
        if len < 2 || len > (r.data.len() - r.at) as u64 {
            return Err(r.bad("a segment of fewer than two tokens, or longer than the data"));
        }
        tokens.clear();
        for _ in 0..len {
            let t = r.varint()?;
            if t >= self.n_tokens {
                return Err(r.bad(&format!(
                    "token id {t}, beyond the word model's {} tokens",
                    self.n_tokens
                )));
            }
            tokens.push(t as TokenId);
        }
        let count = r.varint()?;
        if count == 0 {
            return Err(r.bad("a segment counted 0 times"));
        }
        match &mut self.last {
            Some((last, last_whole)) => {
                if (&last[..], *last_whole) >= (&tokens[..], whole) {
                    return Err(r.bad("segments out of order or repeated"));
                }
                last.clear();
                last.extend_from_slice(tokens);
                *last_whole = whole;
            }
            None => self.last = Some((tokens.clone(), whole)),
        }
        Ok(Some((whole, count)))
    }

    /// The counts of the tokens alone, once every segment is read; the data must end there.
    pub(super) fn alone(mut self) -> Result<Vec<u64>> {
        let mut tokens = Vec::new();
        while self.next(&mut tokens)?.is_some() {}
        let r = &mut self.r;
        let mut alone = vec![0u64; self.n_tokens as usize];
        let mut next = 0u64;
        for _ in 0..self.n_alone {
            let t = next
                .checked_add(r.varint()?)
                .filter(|&t| t < self.n_tokens)
                .ok_or_else(|| r.bad("a token alone beyond the word model's tokens"))?;
            let count = r.varint()?;
            if count == 0 {
                return Err(r.bad("a token alone counted 0 times"));
            }
            alone[t as usize] = count;
            next = t + 1;
        }
        if r.at != r.data.len() {
            return Err(r.bad("bytes after the last token alone"));
        }
        Ok(alone)
    }
}

/// A segment of a [`SegmentTable`]: tokens, whole candidate, count.
type Segment = (Box<[TokenId]>, bool, u64);

/// [`shard_segments`] on letter runs: the segments, sorted, and the counts of tokens alone.
fn runs_segments(
    runs: Runs,
    token_of: &[Option<TokenId>],
    strong: &PairTable,
    threshold: u64,
    n_tokens: usize,
) -> Result<(Vec<Segment>, Vec<u64>)> {
    let flat = flatten(runs, token_of);
    let set: hashbrown::HashSet<u64, rustc_hash::FxBuildHasher> =
        strong.pairs.iter().map(|&(k, _)| k).collect();
    let cut = cut_where(&flat[..], threshold, n_tokens, |a, b| {
        !set.contains(&pair_key(a, b))
    })?;
    drop(flat);
    let CutCandidates { segments, alone, .. } = cut;
    let mut all: Vec<Segment> = Vec::with_capacity(segments.iter().map(SeqList::len).sum());
    for list in segments {
        all.extend(
            list.iter()
                .map(|(tokens, count, whole)| (tokens.into(), whole, count)),
        );
    }
    all.par_sort_unstable_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    Ok((all, alone))
}

impl SegmentTable {
    fn header(&self) -> Header {
        Header {
            fingerprint: self.fingerprint,
            n_tokens: self.n_tokens,
            documents: self.documents,
            pretokens: self.pretokens,
        }
    }

    /// How many tokens the segments hold.
    pub fn tokens(&self) -> usize {
        self.segments.iter().map(|(t, _, _)| t.len()).sum()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(SEGMENTS_MAGIC.len() + 56 + self.tokens() * 2 + self.segments.len() * 3);
        out.extend_from_slice(SEGMENTS_MAGIC);
        let alone = self.alone.iter().filter(|&&c| c > 0).count();
        for v in [
            self.fingerprint,
            self.n_tokens,
            self.documents,
            self.pretokens,
            self.threshold,
            self.segments.len() as u64,
            alone as u64,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for (tokens, whole, count) in &self.segments {
            put_varint(&mut out, (tokens.len() as u64) << 1 | *whole as u64);
            for &t in tokens.iter() {
                put_varint(&mut out, t as u64);
            }
            put_varint(&mut out, *count);
        }
        put_alone(&mut out, &self.alone);
        out
    }

    /// Parse [`Self::to_bytes`]'s bytes; anything else is an error naming `name`.
    pub fn parse(data: &[u8], name: &str) -> Result<SegmentTable> {
        let mut r = SegmentReader::open(data, name)?;
        let mut segments: Vec<Segment> = Vec::with_capacity(r.left as usize);
        let mut tokens = Vec::new();
        while let Some((whole, count)) = r.next(&mut tokens)? {
            segments.push((tokens[..].into(), whole, count));
        }
        let header = r.header();
        let threshold = r.threshold;
        let alone = r.alone()?;
        Ok(SegmentTable {
            fingerprint: header.fingerprint,
            n_tokens: header.n_tokens,
            documents: header.documents,
            pretokens: header.pretokens,
            threshold,
            segments,
            alone,
        })
    }

    /// [`Self::merge`] on tables' bytes, into bytes, reading the tables side by side (they are
    /// sorted): a merge task holds its tables' bytes and the sum's, not the parsed tables.
    pub fn merge_bytes(tables: &[&[u8]], names: &[String]) -> Result<Vec<u8>> {
        let name = |i: usize| names.get(i).map_or("a table", String::as_str);
        let mut readers = tables
            .iter()
            .enumerate()
            .map(|(i, data)| SegmentReader::open(data, name(i)))
            .collect::<Result<Vec<_>>>()?;
        let headers: Vec<Header> = readers.iter().map(SegmentReader::header).collect();
        same_model(&headers, names, "segment tables")?;
        let threshold = readers[0].threshold;
        if let Some(i) = readers.iter().position(|r| r.threshold != threshold) {
            return Err(Error::Value(format!(
                "{} was cut at another threshold ({}) than the first table ({threshold})",
                name(i),
                readers[i].threshold
            )));
        }
        let (documents, pretokens) = sum_read(&headers)?;
        let first = &headers[0];
        let mut out = Vec::with_capacity(tables.iter().map(|t| t.len()).sum());
        out.extend_from_slice(SEGMENTS_MAGIC);
        for v in [
            first.fingerprint,
            first.n_tokens,
            documents,
            pretokens,
            threshold,
            0,
            0,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        // the current segment of each table (tokens, whole, count), `None` once read
        let mut current: Vec<Option<(Vec<TokenId>, bool, u64)>> = Vec::with_capacity(readers.len());
        for r in &mut readers {
            let mut tokens = Vec::new();
            current.push(r.next(&mut tokens)?.map(|(w, c)| (tokens, w, c)));
        }
        let mut n = 0u64;
        while let Some(least) = current
            .iter()
            .flatten()
            .map(|(t, w, _)| (&t[..], *w))
            .min()
            .map(|(t, w)| (t.to_vec(), w))
        {
            let mut sum = 0u64;
            for (r, slot) in readers.iter_mut().zip(current.iter_mut()) {
                if let Some((tokens, whole, count)) = slot {
                    if (&tokens[..], *whole) == (&least.0[..], least.1) {
                        sum = sum.checked_add(*count).ok_or_else(|| overflow("a segment"))?;
                        let mut tokens = std::mem::take(tokens);
                        *slot = r.next(&mut tokens)?.map(|(w, c)| (tokens, w, c));
                    }
                }
            }
            put_varint(&mut out, (least.0.len() as u64) << 1 | least.1 as u64);
            for &t in &least.0 {
                put_varint(&mut out, t as u64);
            }
            put_varint(&mut out, sum);
            n += 1;
        }
        let mut alone = vec![0u64; first.n_tokens as usize];
        for r in readers {
            for (x, y) in alone.iter_mut().zip(r.alone()?) {
                *x = x.checked_add(y).ok_or_else(|| overflow("a token alone"))?;
            }
        }
        let n_alone = put_alone(&mut out, &alone);
        let at = SEGMENTS_MAGIC.len() + 40;
        out[at..at + 8].copy_from_slice(&n.to_le_bytes());
        out[at + 8..at + 16].copy_from_slice(&(n_alone as u64).to_le_bytes());
        Ok(out)
    }

    /// The sum of tables made with one word model and one set of strong pairs (`names` name
    /// them in errors); a count over 2**64 - 1 is refused, not wrapped.
    pub fn merge(tables: &[&SegmentTable], names: &[String]) -> Result<SegmentTable> {
        let headers: Vec<Header> = tables.iter().map(|t| t.header()).collect();
        same_model(&headers, names, "segment tables")?;
        let first = tables[0];
        if let Some(i) = tables.iter().position(|t| t.threshold != first.threshold) {
            let name = names.get(i).map_or("a table", String::as_str);
            return Err(Error::Value(format!(
                "{name} was cut at another threshold ({}) than the first table ({})",
                tables[i].threshold, first.threshold
            )));
        }
        let (documents, pretokens) = sum_read(&headers)?;
        let mut all: Vec<&(Box<[TokenId]>, bool, u64)> =
            tables.iter().flat_map(|t| t.segments.iter()).collect();
        all.par_sort_unstable_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut segments: Vec<Segment> = Vec::with_capacity(all.len());
        for (tokens, whole, count) in all {
            match segments.last_mut() {
                Some((last, last_whole, sum)) if last == tokens && last_whole == whole => {
                    *sum = sum.checked_add(*count).ok_or_else(|| overflow("a segment"))?;
                }
                _ => segments.push((tokens.clone(), *whole, *count)),
            }
        }
        let mut alone = vec![0u64; first.n_tokens as usize];
        for t in tables {
            for (x, &y) in alone.iter_mut().zip(&t.alone) {
                *x = x.checked_add(y).ok_or_else(|| overflow("a token alone"))?;
            }
        }
        Ok(SegmentTable {
            fingerprint: first.fingerprint,
            n_tokens: first.n_tokens,
            documents,
            pretokens,
            threshold: first.threshold,
            segments,
            alone,
        })
    }
}

impl PhaseOne {
    /// The strong pairs of the corpus from its partitions' (see [`PairTable::union`]), checked
    /// against this phase 1: its word model, the documents of pass 1, its threshold.
    pub fn strong_pairs(&self, tables: &[&PairTable], names: &[String]) -> Result<PairTable> {
        let strong = PairTable::union(tables, names)?;
        check_source(
            &self.text,
            self.word.order.len(),
            (self.documents, self.pretokens),
            &strong.header(),
            "pairs",
        )?;
        if strong.above != self.threshold() {
            return Err(Error::Value(format!(
                "these pairs are kept above {:?}, this phase 1's threshold is {:?}",
                strong.above,
                self.threshold()
            )));
        }
        Ok(strong)
    }
}

/// Phase 2 of BoundlessBPE without the greedy split on the segments of the whole corpus
/// (`data`, a [`SegmentTable`]'s bytes, the sum of the shards' [`shard_segments`]; errors name
/// `name`), on the current rayon pool: the model [`super::phase_two`] makes from the summed
/// candidates.  The segments are read straight into phase 2's list, not parsed first.
pub fn phase_two_segments(
    one: PhaseOne,
    data: Vec<u8>,
    name: &str,
    control: &dyn Control,
    stats: &mut Stats,
) -> Result<Model> {
    if !one.cuts_in_tasks() {
        return Err(Error::Value(
            "segments cut in the tasks are for BoundlessBPE without the greedy split (with at least \
             one merge); finish this phase 1 with the uncut candidates"
                .into(),
        ));
    }
    let PhaseOne {
        config,
        phase2,
        mut word,
        parts,
        text,
        stats: phase1,
        documents,
        pretokens,
    } = one;
    debug_assert!(phase2 == Phase2::Boundless);
    stats.extend(phase1);
    let clock = Instant::now();
    let mut r = SegmentReader::open(&data, name)?;
    check_source(
        &text,
        word.order.len(),
        (documents, pretokens),
        &r.header(),
        "segments",
    )?;
    let threshold = word.min_merge_count();
    if threshold != Some(r.threshold) {
        return Err(Error::Value(format!(
            "these segments were cut at {}, this phase 1's threshold is {threshold:?}",
            r.threshold
        )));
    }
    // the model file's ids -> training's ids
    let order = &word.order;
    let mut segments = SeqList::default();
    let mut tokens: Vec<TokenId> = Vec::new();
    while let Some((whole, count)) = r.next(&mut tokens)? {
        for t in tokens.iter_mut() {
            *t = order[*t as usize];
        }
        segments.push(&tokens, count, whole);
    }
    let mut alone = vec![0u64; word.vocab.len()];
    for (t, c) in r.alone()?.into_iter().enumerate() {
        alone[order[t] as usize] += c;
    }
    drop(data);
    let reported = segments.len() as u64;
    control.progress("candidates", reported, reported)?;
    stats.push(("candidates", clock.elapsed().as_secs_f64()));

    let clock = Instant::now();
    let cut = CutCandidates {
        segments: vec![segments],
        alone,
        threshold: threshold.unwrap_or(0),
    };
    let vocab = std::mem::take(&mut word.vocab);
    let b = train_boundless(&word, vocab, cut, control)?;
    let model = boundless_model(&config, parts, b, None);
    stats.push(("phase2", clock.elapsed().as_secs_f64()));
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::super::super::{cut, random_runs, supermerge_candidates, Cutting, Threshold};
    use super::*;

    #[test]
    fn shards_cut_with_the_strong_pairs_sum_to_the_cut_of_the_summed_candidates() {
        let mut rng = crate::XorShift(0x5EED_0F5E_C710_A5EDu64);
        let mut next = |n: u64| rng.below(n);
        let n_tokens = 400usize;
        for round in 0..100 {
            let words = 12usize;
            let token_of: Vec<Option<TokenId>> = (0..words)
                .map(|w| (next(5) != 0).then_some(300 + (w % 7) as TokenId))
                .collect();
            // shards of two counting tables each
            let shards: Vec<Runs> = (0..1 + next(4))
                .map(|_| random_runs(&mut next, words, 20, 8, 5))
                .collect();
            let threshold = next(8) + round % 3;
            let partitions = 1 + next(4) as usize;
            let all: Runs = shards.iter().flatten().cloned().collect();
            let candidates = supermerge_candidates(all, &token_of).unwrap();
            let expected = cut(&candidates, Threshold::At(threshold), n_tokens, Cutting::Exact)
                .unwrap()
                .sorted();
            let table = |pairs, documents| PairTable {
                fingerprint: 7,
                n_tokens: n_tokens as u64,
                documents,
                pretokens: 0,
                above: None,
                pairs,
            };
            // step 1: each partition summed over the shards, kept above the threshold
            let per_shard: Vec<Vec<PairTable>> = shards
                .iter()
                .map(|runs| {
                    runs_pairs(runs.clone(), &token_of, partitions)
                        .into_iter()
                        .map(|mut p| {
                            p.sort_unstable();
                            table(p, 1)
                        })
                        .collect()
                })
                .collect();
            let names: Vec<String> = (0..shards.len()).map(|i| format!("shard {i}")).collect();
            let strong: Vec<PairTable> = (0..partitions)
                .map(|k| {
                    let refs: Vec<&PairTable> = per_shard.iter().map(|s| &s[k]).collect();
                    PairTable::merge(&refs, &names)
                        .unwrap()
                        .kept_above(threshold)
                        .unwrap()
                })
                .collect();
            let strong = PairTable::union(&strong.iter().collect::<Vec<_>>(), &names).unwrap();
            assert!(strong.pairs.iter().all(|&(_, c)| c > threshold));
            // step 2: the shards' segments, summed
            let tables: Vec<SegmentTable> = shards
                .iter()
                .map(|runs| {
                    let (segments, alone) =
                        runs_segments(runs.clone(), &token_of, &strong, threshold, n_tokens).unwrap();
                    let t = SegmentTable {
                        fingerprint: 7,
                        n_tokens: n_tokens as u64,
                        documents: 1,
                        pretokens: 0,
                        threshold,
                        segments,
                        alone,
                    };
                    let again = SegmentTable::parse(&t.to_bytes(), "t").unwrap();
                    assert_eq!(again, t);
                    again
                })
                .collect();
            let sum = SegmentTable::merge(&tables.iter().collect::<Vec<_>>(), &names).unwrap();
            let bytes: Vec<Vec<u8>> = tables.iter().map(SegmentTable::to_bytes).collect();
            let refs: Vec<&[u8]> = bytes.iter().map(|b| &b[..]).collect();
            assert_eq!(SegmentTable::merge_bytes(&refs, &names).unwrap(), sum.to_bytes());
            let mut got: Vec<(Vec<TokenId>, u64, bool)> = sum
                .segments
                .iter()
                .map(|(t, w, c)| (t.to_vec(), *c, *w))
                .collect();
            got.sort();
            assert_eq!((got, sum.alone), expected, "round {round}");
        }
    }

    #[test]
    fn pair_tables_read_back_and_refuse_bad_bytes() {
        let t = PairTable {
            fingerprint: 1,
            n_tokens: 10,
            documents: 2,
            pretokens: 3,
            above: Some(4),
            pairs: vec![(pair_key(1, 2), 5), (pair_key(3, 1), 9)],
        };
        let bytes = t.to_bytes();
        assert_eq!(PairTable::parse(&bytes, "t").unwrap(), t);
        for cut in [PAIRS_MAGIC.len() + 3, bytes.len() - 1] {
            assert!(PairTable::parse(&bytes[..cut], "t").is_err());
        }
        let low = PairTable {
            pairs: vec![(pair_key(1, 2), 4)],
            ..t.clone()
        };
        assert!(PairTable::parse(&low.to_bytes(), "t").is_err());
        let same = PairTable {
            pairs: vec![(pair_key(2, 2), 5)],
            ..t
        };
        assert!(PairTable::parse(&same.to_bytes(), "t").is_err());
    }
}
