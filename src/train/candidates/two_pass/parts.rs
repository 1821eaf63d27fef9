//! Phase 2 over the segments of pass 2 split into parts (docs/large-corpora.md, "Phase 2
//! partitioned"): the corpus' segment table is split by a hash of each segment's tokens
//! ([`split_segments`], a task), each part is held by its own process ([`read_part`], a Ray
//! actor's [`SegmentShard`]), and the driver ([`PartsPlan`], then [`PartsRun`]) holds the word
//! model, the vocabulary and the count of each distinct pair, and asks the parts to apply each
//! supermerge it chooses.

use std::time::Instant;

use rustc_hash::FxHashMap;

use super::strong::SegmentReader;
use super::{fingerprint, put_varint, PhaseOne, Reader};
use crate::control::Control;
use crate::error::{Error, Result};
use crate::model::{Deletion, Merges, Model};
use crate::tokens::{Pair, TokenId};
use crate::train::boundless_parts::{add_delta, Phase2Steps};
use crate::train::bpe::WordModel;
use crate::train::merging::partitioned::{part_of, SegmentShard};
use crate::train::{boundless_model, Config, Stats};

const PART_MAGIC: &[u8] = b"superword phase-2 part 1\n";

/// What a segment table must say of where it comes from (see `check_source`), and the ids of
/// training for the word model's file ids: what the task that splits it needs of phase 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub fingerprint: u64,
    pub n_tokens: u64,
    pub documents: u64,
    pub pretokens: u64,
    pub threshold: u64,
    /// training's id of each of the word model file's ids
    pub order: Vec<TokenId>,
}

/// Split a segment table's bytes (`data`, errors name `name`) into `parts` parts, each in
/// training's ids: a segment goes to the part [`part_of`] its tokens says; the tokens alone
/// go with part 0.  The table must come from the phase 1 `source` describes.
pub fn split_segments(data: &[u8], name: &str, source: &Source, parts: usize) -> Result<Vec<Vec<u8>>> {
    if parts == 0 || parts > 1 << 16 {
        return Err(Error::Value(format!(
            "phase 2 in {parts} parts: between 1 and 65,536"
        )));
    }
    let mut r = SegmentReader::open(data, name)?;
    let h = r.header();
    if (h.fingerprint, h.n_tokens) != (source.fingerprint, source.n_tokens) {
        return Err(Error::Value(format!(
            "{name}: these segments were made with another word model (fingerprint {:016x}, {} tokens) \
             than this phase 1's ({:016x}, {} tokens)",
            h.fingerprint, h.n_tokens, source.fingerprint, source.n_tokens
        )));
    }
    if (h.documents, h.pretokens) != (source.documents, source.pretokens) {
        return Err(Error::Value(format!(
            "{name}: these segments were made from {} documents and {} pretokens, pass 1 read {} and {}",
            h.documents, h.pretokens, source.documents, source.pretokens
        )));
    }
    if r.threshold != source.threshold {
        return Err(Error::Value(format!(
            "{name}: these segments were cut at {}, this phase 1's threshold is {}",
            r.threshold, source.threshold
        )));
    }
    if source.order.len() as u64 != h.n_tokens {
        return Err(Error::Value("the word model's ids do not match its size".into()));
    }
    let order = &source.order;
    let mut bodies: Vec<Vec<u8>> = vec![Vec::new(); parts];
    let mut counts = vec![0u64; parts];
    let mut tokens: Vec<TokenId> = Vec::new();
    while let Some((whole, count)) = r.next(&mut tokens)? {
        for t in tokens.iter_mut() {
            *t = order[*t as usize];
        }
        let k = part_of(&tokens, parts);
        let out = &mut bodies[k];
        put_varint(out, (tokens.len() as u64) << 1 | whole as u64);
        put_varint(out, count);
        for &t in &tokens {
            put_varint(out, t as u64);
        }
        counts[k] += 1;
    }
    let mut alone: Vec<(u64, u64)> = r
        .alone()?
        .into_iter()
        .enumerate()
        .filter(|&(_, c)| c > 0)
        .map(|(t, c)| (order[t] as u64, c))
        .collect();
    alone.sort_unstable();
    Ok(bodies
        .into_iter()
        .zip(counts)
        .enumerate()
        .map(|(k, (body, n))| {
            let mut out = Vec::with_capacity(PART_MAGIC.len() + 16 + body.len());
            out.extend_from_slice(PART_MAGIC);
            out.extend_from_slice(&n.to_le_bytes());
            let mine: &[(u64, u64)] = if k == 0 { &alone } else { &[] };
            out.extend_from_slice(&(mine.len() as u64).to_le_bytes());
            out.extend_from_slice(&body);
            for &(t, c) in mine {
                put_varint(&mut out, t);
                put_varint(&mut out, c);
            }
            out
        })
        .collect())
}

/// A part's bytes (from [`split_segments`]; errors name `name`): its segments, held with the
/// positions of their pairs, and the counts of the tokens alone it carries (by training id).
pub fn read_part(data: &[u8], name: &str) -> Result<(SegmentShard, Vec<(TokenId, u64)>)> {
    let mut r = Reader::open(data, PART_MAGIC, name, "phase-2 part")?;
    let (n, n_alone) = (r.u64()?, r.u64()?);
    if n > (data.len() / 3) as u64 || n_alone > (data.len() / 2) as u64 {
        return Err(r.bad("more segments or tokens than the bytes can hold"));
    }
    // (read twice: once for the sizes, so that the shard's arena is allocated once)
    let mut segments: Vec<(Vec<TokenId>, u64, bool)> = Vec::new();
    for _ in 0..n {
        let head = r.varint()?;
        let (len, whole) = (head >> 1, head & 1 == 1);
        if len < 2 || len > (r.data.len() - r.at) as u64 {
            return Err(r.bad("a segment of fewer than two tokens, or longer than the data"));
        }
        let count = r.varint()?;
        if count == 0 {
            return Err(r.bad("a segment counted 0 times"));
        }
        let mut tokens = Vec::with_capacity(len as usize);
        for _ in 0..len {
            let t = r.varint()?;
            tokens.push(TokenId::try_from(t).map_err(|_| r.bad("a token id over 32 bits"))?);
        }
        segments.push((tokens, count, whole));
    }
    let mut alone = Vec::with_capacity(n_alone as usize);
    for _ in 0..n_alone {
        let t = r.varint()?;
        let t = TokenId::try_from(t).map_err(|_| r.bad("a token id over 32 bits"))?;
        alone.push((t, r.varint()?));
    }
    if r.at != r.data.len() {
        return Err(r.bad("bytes after the last token alone"));
    }
    let shard = SegmentShard::new(segments.iter().map(|(t, c, w)| (&t[..], *c, *w)))?;
    Ok((shard, alone))
}

/// Phase 1 done, for a partitioned phase 2: what the split needs ([`Self::source`]), waiting
/// for the parts' pair counts ([`Self::start`]).
pub struct PartsPlan {
    config: Config,
    word: WordModel,
    parts: (Merges, Vec<Deletion>),
    source: Source,
    stats: Stats,
}

impl PhaseOne {
    /// This phase 1, for phase 2 in parts (BoundlessBPE without the greedy split only).
    pub fn into_parts(self) -> Result<PartsPlan> {
        if !self.cuts_in_tasks() {
            return Err(Error::Value(
                "phase 2 in parts is for BoundlessBPE without the greedy split (with at least one \
                 merge), on segments cut in the tasks"
                    .into(),
            ));
        }
        let source = Source {
            fingerprint: fingerprint(&self.text),
            n_tokens: self.word.order.len() as u64,
            documents: self.documents,
            pretokens: self.pretokens,
            threshold: self.threshold().unwrap_or(0),
            order: self.word.order.clone(),
        };
        Ok(PartsPlan {
            config: self.config,
            word: self.word,
            parts: self.parts,
            source,
            stats: self.stats,
        })
    }
}

impl PartsPlan {
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Phase 2 begins, on the parts' pair counts (each sorted by pair, as
    /// [`SegmentShard::pair_counts`] gives them).
    pub fn start(self, parts: &[Vec<(Pair, u64)>]) -> Result<PartsRun> {
        let clock = Instant::now();
        let mut pairs: FxHashMap<Pair, u64> = FxHashMap::default();
        for part in parts {
            for &(p, c) in part {
                *pairs.entry(p).or_insert(0) += c;
            }
        }
        let PartsPlan {
            config,
            mut word,
            parts,
            stats,
            ..
        } = self;
        let vocab = std::mem::take(&mut word.vocab);
        let steps = Phase2Steps::new(&word, vocab, pairs)?;
        Ok(PartsRun {
            config,
            parts,
            steps,
            stats,
            clock,
            delta: FxHashMap::default(),
        })
    }
}

/// A partitioned phase 2 under way, on the driver (see [`Phase2Steps`]).
pub struct PartsRun {
    config: Config,
    parts: (Merges, Vec<Deletion>),
    steps: Phase2Steps,
    stats: Stats,
    clock: Instant,
    delta: FxHashMap<Pair, i64>,
}

impl PartsRun {
    /// The next supermerge for the parts, `None` when phase 2 is done.
    pub fn next(&mut self, control: &dyn Control) -> Result<Option<(Pair, TokenId)>> {
        self.steps.next(control)
    }

    /// The parts' answers to the supermerge: each one's flag and pair-count changes.
    pub fn merged<'a>(
        &mut self,
        answers: impl IntoIterator<Item = (bool, &'a [(Pair, i64)])>,
        control: &dyn Control,
    ) -> Result<()> {
        self.delta.clear();
        let mut flag = false;
        for (f, d) in answers {
            flag |= f;
            add_delta(&mut self.delta, d);
        }
        self.steps.merged(flag, &self.delta, control)
    }

    pub fn distinct_pairs(&self) -> usize {
        self.steps.distinct_pairs()
    }

    /// The model, from the parts' token counts (by training id, tokens alone included).
    pub fn finish(self, counts: &[Vec<u64>]) -> Result<(Model, Stats)> {
        let mut total: Vec<u64> = Vec::new();
        for c in counts {
            if total.len() < c.len() {
                total.resize(c.len(), 0);
            }
            for (t, &w) in c.iter().enumerate() {
                total[t] += w;
            }
        }
        let b = self.steps.finish(total, &[]);
        let model = boundless_model(&self.config, self.parts, b, None);
        let mut stats = self.stats;
        stats.push(("phase2", self.clock.elapsed().as_secs_f64()));
        Ok((model, stats))
    }
}
