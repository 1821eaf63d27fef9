//! Training in two passes over the text, for corpora whose letter runs would not fit in one
//! process (the Ray path of `superword.train`, and the same path run shard by shard here).
//!
//! Pass 1 counts the pretokens only, and [`phase_one`] trains the word model on them.  Pass 2
//! reads the text again, shard by shard: [`shard_candidates`] counts one shard's letter runs
//! and cuts them at the pretokens that are not eligible under the word model (SPEC 3.2-3.3),
//! giving the shard's supermerge candidates added up ([`CandidateTable`]).  Eligibility
//! depends only on the word model and the pretoken, so a shard needs nothing else from the
//! rest of the corpus; candidates never cross documents, so a shard's candidates are exactly
//! those of its documents, and the corpus' candidate table is the sum of the shards' tables
//! ([`CandidateTable::merge`]).  [`phase_two`] then runs stage 3 (the cut, the greedy split)
//! and phase 2 on the summed table, as [`super::super::train_counts`] does on the runs: the
//! same model, byte for byte.
//!
//! A table holds the word model's token ids in the model file's order (what an encoder of the
//! word model gives); [`phase_two`] maps them to training's ids.  It names the word model by
//! a fingerprint of its file, so that a table made with another word model is refused.

use std::time::Instant;

use rayon::prelude::*;

mod parts;
mod strong;
pub use parts::{read_part, split_segments, PartsPlan, PartsRun, Source};
pub use strong::{phase_two_segments, shard_pairs, shard_segments, PairTable, SegmentTable};

use super::{cut, supermerge_candidates, Candidates, CutCandidates, Cutting, Threshold};
use crate::control::Control;
use crate::count::Counts;
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::model::{v2, Deletion, Kind, Merges, Model};
use crate::pretokenize::Pretokenizer;
use crate::tokens::ngram::MAX_NGRAM;
use crate::tokens::TokenId;
use crate::train::boundless::train_boundless;
use crate::train::bpe::{train_words, WordModel};
use crate::train::ngram::{frequent_ngrams, greedy_split, MIN_COUNT_FLOOR};
use crate::train::superbpe::{train_superbpe, SuperCandidates};
use crate::train::{
    boundless_model, deletions_to_bytes, superbpe_model, to_bytes, word_model, Config, Phase2, Stats,
    SMALL_CANDIDATES,
};

/// The FNV-1a hash of a word model's file: what a candidate table records of the model it was
/// made with.
pub fn fingerprint(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Phase 1 done, waiting for the candidates: the word model, and what phase 2 takes from it.
pub struct PhaseOne {
    config: Config,
    phase2: Phase2,
    word: WordModel,
    /// the word model's merges and deletions, in bytes (the final models keep them)
    parts: (Merges, Vec<Deletion>),
    /// the word model's file, for the shards' encoders
    text: String,
    /// seconds of phase 1
    pub stats: Stats,
    /// the documents and pretokens pass 1 counted (pass 2 must read the same)
    pub documents: u64,
    pub pretokens: u64,
}

impl PhaseOne {
    /// The word model's file (a `BoundlessBPE v2 word` model).
    pub fn word_model_text(&self) -> &str {
        &self.text
    }

    /// The count of the word model's last (smallest) merge, `T`: a pair of candidates counted
    /// no more than that never wins a supermerge (`None`: no merges).
    pub fn threshold(&self) -> Option<u64> {
        self.word.min_merge_count()
    }

    /// Whether pass 2 can cut the candidates into segments in the tasks
    /// ([`shard_segments`]): BoundlessBPE without the greedy split, with a threshold.
    /// Otherwise phase 2 needs the uncut candidates (the greedy split their frequent n-grams,
    /// SuperBPE its fallback below a guessed threshold).
    pub fn cuts_in_tasks(&self) -> bool {
        self.phase2 == Phase2::Boundless && !self.config.greedy_split && self.threshold().is_some()
    }
}

/// Phase 1 of a BoundlessBPE or SuperBPE training on counted pretokens (the runs, if any, are
/// not used).
pub fn phase_one(counts: Counts, config: Config, control: &dyn Control) -> Result<PhaseOne> {
    let Some(phase2) = config.algorithm.phase2() else {
        return Err(Error::Value(
            "training in two passes is for BoundlessBPE and SuperBPE (plain BPE needs one pass)".into(),
        ));
    };
    let words = counts.words;
    if words.iter().all(|(w, c)| w.is_empty() || *c == 0) {
        return Err(Error::Value(
            "the corpus is empty: no document contains any text".into(),
        ));
    }
    let clock = Instant::now();
    let size = match phase2 {
        Phase2::SuperBpe(n) => config.vocab_size - n,
        Phase2::Boundless => config.vocab_size,
    };
    // (no singles: the shards find the eligible pretokens with the word model's encoder)
    let word = train_words(&words, size, config.picky, false, control)?;
    drop(words);
    let parts = (
        to_bytes(&word.vocab, &word.merges),
        deletions_to_bytes(&word.vocab, &word.deletions),
    );
    let text = v2::dumps(&word_model(&config.settings, &word));
    Ok(PhaseOne {
        config,
        phase2,
        word,
        parts,
        text,
        stats: vec![("phase1", clock.elapsed().as_secs_f64())],
        documents: counts.documents,
        pretokens: counts.pretokens,
    })
}

/// The word model of a `BoundlessBPE v2 word` file, as what a shard needs of it: the
/// encoder that tells eligible pretokens, and the pre-tokenization to count with (`name`
/// names the text in errors).
pub fn word_model_for_shards(text: &str, name: &str) -> Result<(Encoder, Pretokenizer)> {
    let model = v2::loads(text, name)?;
    if model.kind != Kind::Word {
        return Err(Error::Value(format!(
            "{name} is a {} model; the candidates of pass 2 are cut with a word model",
            model.kind.name()
        )));
    }
    let s = &model.settings;
    let pretokenizer = Pretokenizer::new(
        &s.main_regex,
        s.script_specific_regex.as_deref(),
        s.script_specific_scripts.as_deref(),
    )?;
    Ok((Encoder::new(&model, false)?, pretokenizer))
}

/// The word-model token of each pretoken of `words`, when it is eligible (one token).
fn eligible(words: &[(Box<str>, u64)], encoder: &Encoder) -> Vec<Option<TokenId>> {
    words
        .par_iter()
        .map(|(w, _)| encoder.single_token(w.as_bytes()))
        .collect()
}

/// One shard's supermerge candidates: its letter runs (`counts`, counted with runs) cut at
/// the pretokens that `encoder` (the word model's) does not make one reachable token, added
/// up, in the word model file's ids.  Runs on the current rayon pool.
pub fn shard_candidates(counts: Counts, encoder: &Encoder, model_text: &str) -> Result<CandidateTable> {
    let token_of = eligible(&counts.words, encoder);
    let (documents, pretokens) = (counts.documents, counts.pretokens);
    drop(counts.words);
    let candidates = supermerge_candidates(counts.runs, &token_of)?;
    Ok(CandidateTable::new(
        fingerprint(model_text),
        encoder.vocab().len() as u64,
        documents,
        pretokens,
        candidates,
    ))
}

/// Supermerge candidates added up over some documents, for one word model: the unit pass 2
/// ships and sums.  Its bytes are canonical (candidates sorted by their tokens), so a sum has
/// the same bytes however the tables were grouped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CandidateTable {
    /// [`fingerprint`] of the word model's file
    pub fingerprint: u64,
    /// the word model's vocabulary size (every id is below it)
    pub n_tokens: u64,
    pub documents: u64,
    pub pretokens: u64,
    /// distinct candidates (two or more tokens each) with their counts, sorted by tokens
    pub candidates: Candidates,
}

const MAGIC: &[u8] = b"superword candidates 1\n";

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a candidate table's bytes, naming `name` and the place in errors.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    name: &'a str,
    /// what the data is ("candidate table")
    kind: &'a str,
}

impl<'a> Reader<'a> {
    /// A reader just past `magic`, the first bytes every `kind` of table starts with (errors
    /// name `name`).
    fn open(data: &'a [u8], magic: &[u8], name: &'a str, kind: &'a str) -> Result<Reader<'a>> {
        if !data.starts_with(magic) {
            return Err(Error::Value(format!(
                "{name}: not a {kind} (it does not start with {:?})",
                std::str::from_utf8(magic).unwrap_or("").trim_end()
            )));
        }
        Ok(Reader {
            data,
            at: magic.len(),
            name,
            kind,
        })
    }

    fn bad(&self, what: &str) -> Error {
        Error::Value(format!(
            "{}: not a valid {} ({what} at byte {})",
            self.name, self.kind, self.at
        ))
    }

    fn u64(&mut self) -> Result<u64> {
        let bytes = self
            .data
            .get(self.at..self.at + 8)
            .ok_or_else(|| self.bad("truncated header"))?;
        self.at += 8;
        Ok(u64::from_le_bytes(bytes.try_into().expect("eight bytes")))
    }

    fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let &b = self.data.get(self.at).ok_or_else(|| self.bad("truncated"))?;
            self.at += 1;
            if shift == 63 && b > 1 {
                return Err(self.bad("a number over 64 bits"));
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(self.bad("a number over 64 bits"))
    }
}

/// What a table of pass 2 says of where it comes from: the word model's fingerprint and size,
/// the documents and pretokens it read.
pub(crate) struct Header {
    pub fingerprint: u64,
    pub n_tokens: u64,
    pub documents: u64,
    pub pretokens: u64,
}

/// Refuse a table of pass 2 (`what`: "candidates", ...) made with another word model than
/// `text` (of `n_tokens` tokens), or over other documents than pass 1 read (`pass_one`).
fn check_source(text: &str, n_tokens: usize, pass_one: (u64, u64), table: &Header, what: &str) -> Result<()> {
    if table.fingerprint != fingerprint(text) || table.n_tokens != n_tokens as u64 {
        return Err(Error::Value(format!(
            "these {what} were made with another word model (fingerprint {:016x}, {} tokens) than \
             this phase 1's ({:016x}, {n_tokens} tokens)",
            table.fingerprint,
            table.n_tokens,
            fingerprint(text),
        )));
    }
    let (documents, pretokens) = pass_one;
    if (table.documents, table.pretokens) != (documents, pretokens) {
        return Err(Error::Value(format!(
            "pass 2 read {} documents and {} pretokens, pass 1 {documents} and {pretokens}: the inputs \
             changed between the two passes",
            table.documents, table.pretokens
        )));
    }
    Ok(())
}

impl CandidateTable {
    fn header(&self) -> Header {
        Header {
            fingerprint: self.fingerprint,
            n_tokens: self.n_tokens,
            documents: self.documents,
            pretokens: self.pretokens,
        }
    }

    /// A table of `candidates` (added up: each distinct once), put in canonical order.
    pub fn new(
        fingerprint: u64,
        n_tokens: u64,
        documents: u64,
        pretokens: u64,
        mut candidates: Candidates,
    ) -> CandidateTable {
        candidates.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
        CandidateTable {
            fingerprint,
            n_tokens,
            documents,
            pretokens,
            candidates,
        }
    }

    /// How many tokens the candidates hold.
    pub fn tokens(&self) -> usize {
        self.candidates.iter().map(|(t, _)| t.len()).sum()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAGIC.len() + 40 + self.tokens() * 2 + self.candidates.len() * 3);
        out.extend_from_slice(MAGIC);
        for v in [
            self.fingerprint,
            self.n_tokens,
            self.documents,
            self.pretokens,
            self.candidates.len() as u64,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for (tokens, count) in &self.candidates {
            put_varint(&mut out, tokens.len() as u64);
            for &t in tokens.iter() {
                put_varint(&mut out, t as u64);
            }
            put_varint(&mut out, *count);
        }
        out
    }

    /// Parse [`Self::to_bytes`]'s bytes; anything else is an error naming `name`.
    pub fn parse(data: &[u8], name: &str) -> Result<CandidateTable> {
        let mut r = Reader::open(data, MAGIC, name, "candidate table")?;
        let (fingerprint, n_tokens, documents, pretokens, n) =
            (r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?);
        // (each candidate takes at least four bytes: a bound on `n` before reserving)
        if n > (data.len() / 4) as u64 {
            return Err(r.bad("more candidates than the bytes can hold"));
        }
        let mut candidates: Candidates = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let len = r.varint()?;
            if len < 2 || len > (data.len() - r.at) as u64 {
                return Err(r.bad("a candidate of fewer than two tokens, or longer than the data"));
            }
            let mut tokens = Vec::with_capacity(len as usize);
            for _ in 0..len {
                let t = r.varint()?;
                if t >= n_tokens {
                    return Err(r.bad(&format!(
                        "token id {t}, beyond the word model's {n_tokens} tokens"
                    )));
                }
                tokens.push(t as TokenId);
            }
            let count = r.varint()?;
            if count == 0 {
                return Err(r.bad("a candidate counted 0 times"));
            }
            if let Some((last, _)) = candidates.last() {
                if **last >= tokens[..] {
                    return Err(r.bad("candidates out of order or repeated"));
                }
            }
            candidates.push((tokens.into(), count));
        }
        if r.at != data.len() {
            return Err(r.bad("bytes after the last candidate"));
        }
        Ok(CandidateTable {
            fingerprint,
            n_tokens,
            documents,
            pretokens,
            candidates,
        })
    }

    /// The sum of tables made with the same word model (`names` name them in errors); a count
    /// over 2**64 - 1 is refused, not wrapped.
    pub fn merge(tables: &[&CandidateTable], names: &[String]) -> Result<CandidateTable> {
        let Some(first) = tables.first() else {
            return Err(Error::Value("merging candidate tables needs at least one".into()));
        };
        let mut documents = 0u64;
        let mut pretokens = 0u64;
        let overflow = |what: &str| {
            Error::Value(format!(
                "the sum of these candidate tables counts {what} over 2**64 - 1"
            ))
        };
        for (i, t) in tables.iter().enumerate() {
            if (t.fingerprint, t.n_tokens) != (first.fingerprint, first.n_tokens) {
                let name = names.get(i).map_or("a table", String::as_str);
                let other = names.first().map_or("the first table", String::as_str);
                return Err(Error::Value(format!(
                    "{name} was made with another word model than {other} (model fingerprints {:016x} and {:016x})",
                    t.fingerprint, first.fingerprint
                )));
            }
            documents = documents
                .checked_add(t.documents)
                .ok_or_else(|| overflow("documents"))?;
            pretokens = pretokens
                .checked_add(t.pretokens)
                .ok_or_else(|| overflow("pretokens"))?;
        }
        let mut all: Vec<&(Box<[TokenId]>, u64)> = tables.iter().flat_map(|t| t.candidates.iter()).collect();
        all.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut candidates: Candidates = Vec::with_capacity(all.len());
        for (tokens, count) in all {
            match candidates.last_mut() {
                Some((last, sum)) if last == tokens => {
                    *sum = sum.checked_add(*count).ok_or_else(|| overflow("a candidate"))?;
                }
                _ => candidates.push((tokens.clone(), *count)),
            }
        }
        Ok(CandidateTable {
            fingerprint: first.fingerprint,
            n_tokens: first.n_tokens,
            documents,
            pretokens,
            candidates,
        })
    }
}

/// Stage 3 and phase 2 on the candidates of the whole corpus (`table`, the sum of the shards'
/// tables), on the current rayon pool: the model [`super::super::train_counts`] makes from the
/// counts with runs.  `stats` receives the seconds of each stage (phase 1's first).
pub fn phase_two(
    one: PhaseOne,
    table: CandidateTable,
    control: &dyn Control,
    stats: &mut Stats,
) -> Result<Model> {
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
    stats.extend(phase1);
    check_source(
        &text,
        word.order.len(),
        (documents, pretokens),
        &table.header(),
        "candidates",
    )?;
    let clock = Instant::now();
    // the model file's ids -> training's ids
    let order = &word.order;
    let mut candidates = table.candidates;
    candidates.par_iter_mut().for_each(|(tokens, _)| {
        for t in tokens.iter_mut() {
            *t = order[*t as usize];
        }
    });
    let threshold = word.min_merge_count();
    let min_ngram_count = word.merges.last().map_or(0, |m| m.count).max(MIN_COUNT_FLOOR);
    let n_tokens = word.vocab.len();
    let mut ngrams = None;
    if config.greedy_split {
        // (as `supermerge_candidates_for`: the frequent n-grams of the candidates, their cut,
        // and the table in bytes, sorted)
        let found: rustc_hash::FxHashSet<Box<[TokenId]>> =
            frequent_ngrams(&candidates, min_ngram_count, MAX_NGRAM)
                .into_keys()
                .collect();
        candidates = greedy_split(candidates, &found);
        let mut rendered: Vec<Vec<Vec<u8>>> = found
            .iter()
            .map(|g| g.iter().map(|&t| word.vocab.bytes(t).to_vec()).collect())
            .collect();
        rendered.sort();
        ngrams = Some(rendered);
    }
    let reported = candidates.len() as u64;
    control.progress("candidates", reported, reported)?;
    stats.push(("candidates", clock.elapsed().as_secs_f64()));

    let clock = Instant::now();
    let model = match phase2 {
        Phase2::Boundless => {
            let cut = match threshold {
                Some(t) => {
                    let segments = cut(&candidates, Threshold::At(t), n_tokens, Cutting::Exact)?;
                    drop(candidates); // (before phase 2's tables)
                    segments
                }
                None => CutCandidates::uncut(candidates),
            };
            let vocab = std::mem::take(&mut word.vocab);
            let b = train_boundless(&word, vocab, cut, control)?;
            boundless_model(&config, parts, b, ngrams)
        }
        Phase2::SuperBpe(supermerges) => {
            let candidates = SuperCandidates::Added(candidates);
            let first_cut = match threshold {
                Some(_) if candidates.tokens() >= SMALL_CANDIDATES => Some(Threshold::Guess(supermerges)),
                _ => None,
            };
            let order_len = word.order.len();
            let s = train_superbpe(
                word.vocab,
                &word.order,
                candidates,
                supermerges,
                first_cut,
                control,
            )?;
            superbpe_model(&config, parts, s, order_len, ngrams)
        }
    };
    stats.push(("phase2", clock.elapsed().as_secs_f64()));
    Ok(model)
}
