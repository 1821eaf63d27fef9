//! Training, stage by stage (paper Figure 1), as `reference/train.py`; [`train`] is the
//! whole run, from a stream of documents to a model:
//!
//!   1. pre-tokenize and count (`count.rs`)
//!   2. phase 1, the word model: BPE on the pretokens ([`bpe`], on the merge loop of [`merging`];
//!      sequences of over 65,536 tokens in [`long`])
//!   3. supermerge candidates ([`candidates`]), optionally the greedy n-gram split ([`ngram`])
//!   4. phase 2: BoundlessBPE ([`boundless`]) or SuperBPE ([`superbpe`])
//!
//! Where the time goes (CPU-time samples of `perf`, one thread, vocabulary 32,768, 20 MB of
//! Gutenberg text, after the changes noted in `candidates.rs` and `merging.rs`): for
//! BoundlessBPE, phase 2 30%, counting 20% (about a fifth of it the letter runs), stage 3
//! 18%, phase 1 11%, the kernel zeroing fresh pages ~10% (spread over every stage's tables);
//! phase 2 is three quarters applying merges (rewriting the sequences that hold the pair,
//! then noting new pairs and adding up count changes in the pair tables, all bound by memory
//! latency), the rest building its tables and the heap.  For a small training (185 KB,
//! vocabulary 5,000) half the time is phase 1's merge loop, a tenth counting, 5% building the
//! encoder's reachable set (once for the word model in stage 3, once for the final model:
//! different models, so nothing is built twice), and under 2% the Python side of `train`.
//!
//! Each stage's choices carry the figure that decided them where they are made; the
//! measurements behind them, stage by stage and commit by commit, are in
//! `docs/performance.md`.

pub mod boundless;
pub mod boundless_parts;
pub mod bpe;
pub mod candidates;
pub mod long;
pub mod merging;
pub mod ngram;
pub mod superbpe;

use std::time::Instant;

use rayon::prelude::*;

use crate::control::Control;
use crate::count::{count_documents, Counts, Runs};
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::input::Documents;
use crate::model::{Deletion, Kind, Merge, Merges, Model, Settings};
use crate::pretokenize::{Pretokenizer, MERGE_PATTERN};
use crate::tokens::ngram::MAX_NGRAM;
use crate::tokens::{ByteStrings, TokenId, Vocab};
use boundless::{train_boundless, Boundless};
use bpe::{start_words, train_started, Picky, WordModel};
use candidates::{
    cut, cut_runs, flat_candidates, supermerge_candidates, Candidates, CutCandidates, Cutting, Threshold,
};
use merging::TrainMerge;
use ngram::{frequent_ngrams, greedy_split, MIN_COUNT_FLOOR};
use rustc_hash::FxHashSet;
use superbpe::{train_superbpe, SuperBpe, SuperCandidates};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Bpe,
    Boundless,
    /// SuperBPE with this many supermerges
    SuperBpe(usize),
}

/// The phase 2 that follows phase 1, for BoundlessBPE and SuperBPE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase2 {
    Boundless,
    /// with this many supermerges
    SuperBpe(usize),
}

impl Algorithm {
    /// Which phase 2 follows phase 1 (`None` for BPE: the word model is the result).
    fn phase2(self) -> Option<Phase2> {
        match self {
            Algorithm::Bpe => None,
            Algorithm::Boundless => Some(Phase2::Boundless),
            Algorithm::SuperBpe(n) => Some(Phase2::SuperBpe(n)),
        }
    }
}

/// What to train: the arguments of `superword.train` after checking.
pub struct Config {
    pub vocab_size: usize,
    pub algorithm: Algorithm,
    /// the settings the model file records
    pub settings: Settings,
    pub pretokenizer: Pretokenizer,
    pub greedy_split: bool,
    /// PickyBPE deletions in phase 1 (SPEC 9)
    pub picky: Picky,
}

impl Config {
    /// `algorithm` is "bpe", "boundless" or "superbpe" (which needs `supermerges`);
    /// `script_pattern` and `scripts` as for [`Pretokenizer::new`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        vocab_size: usize,
        algorithm: &str,
        supermerges: Option<usize>,
        pattern: &str,
        script_pattern: Option<&str>,
        scripts: Option<&[String]>,
        greedy_split: bool,
        picky: Picky,
    ) -> Result<Config> {
        if !(picky.tau.is_finite() && picky.tau > 0.0) {
            return Err(Error::Value(format!(
                "tau must be a positive number (1.1, the default, turns PickyBPE deletions off), got {}",
                picky.tau
            )));
        }
        let algorithm = match (algorithm, supermerges) {
            ("bpe", _) => Algorithm::Bpe,
            ("boundless", _) => Algorithm::Boundless,
            ("superbpe", Some(n)) => Algorithm::SuperBpe(n),
            _ => return Err(Error::Value(format!("unknown algorithm {algorithm:?}"))),
        };
        let pretokenizer = Pretokenizer::new(pattern, script_pattern, scripts)?;
        let settings = Settings {
            main_regex: pattern.to_string(),
            script_specific_regex: script_pattern.map(str::to_string),
            script_specific_scripts: pretokenizer.scripts.clone(),
            merge_pattern: MERGE_PATTERN.to_string(),
            tau: picky.tau,
            blowup: picky.blowup,
        };
        Ok(Config {
            vocab_size,
            algorithm,
            settings,
            pretokenizer,
            greedy_split,
            picky,
        })
    }
}

/// Seconds spent in each stage, in order (the paper's Table 1 breakdown).
pub type Stats = Vec<(&'static str, f64)>;

fn to_bytes(vocab: &Vocab, merges: &[TrainMerge]) -> Merges {
    let mut out = Merges::with_capacity(merges.len());
    for m in merges {
        out.push(Merge {
            left: vocab.bytes(m.pair.0),
            right: vocab.bytes(m.pair.1),
            count: m.count,
            flag: m.flag,
        });
    }
    out
}

/// The bytes of the tokens `order` lists, in that order (the final vocabulary): most often
/// all of `vocab`'s in id order (no deletions), then copied whole.
fn ordered_bytes(vocab: &Vocab, order: &[TokenId]) -> ByteStrings {
    if order.len() == vocab.len() && order.iter().enumerate().all(|(i, &t)| i == t as usize) {
        return vocab.strings();
    }
    let mut out = ByteStrings::with_capacity(order.len());
    for &t in order {
        out.push(vocab.bytes(t));
    }
    out
}

fn deletions_to_bytes(vocab: &Vocab, deletions: &[(usize, TokenId)]) -> Vec<Deletion> {
    deletions
        .iter()
        .map(|&(index, t)| Deletion {
            index,
            token: vocab.bytes(t).to_vec(),
        })
        .collect()
}

fn word_model(settings: &Settings, w: &WordModel) -> Model {
    Model {
        kind: Kind::Word,
        settings: settings.clone(),
        vocab: ordered_bytes(&w.vocab, &w.order),
        counts: w.order.iter().map(|&t| w.counts[t as usize]).collect(),
        is_super: vec![false; w.order.len()],
        merges: to_bytes(&w.vocab, &w.merges),
        supermerges: Merges::default(),
        special_tokens: Vec::new(),
        ngrams: None,
        deletions: deletions_to_bytes(&w.vocab, &w.deletions),
    }
}

/// The BoundlessBPE model from phase 2's result; `merges` and `deletions` are the word
/// model's, moved and cut to what phase 2 used.  (Cloning the word model's merges, two
/// vectors of bytes each, was a tenth of BoundlessBPE's and SuperBPE's work after phase 1
/// on a small training.)
fn boundless_model(
    config: &Config,
    (mut merges, mut deletions): (Merges, Vec<Deletion>),
    b: Boundless,
    ngrams: Option<Vec<Vec<Vec<u8>>>>,
) -> Model {
    merges.truncate(b.used);
    deletions.truncate(b.deletions_used);
    Model {
        kind: Kind::Boundless,
        settings: config.settings.clone(),
        vocab: ordered_bytes(&b.phase2_vocab, &b.order),
        counts: b.order.iter().map(|&t| b.counts[t as usize]).collect(),
        is_super: b.is_super,
        merges,
        supermerges: to_bytes(&b.phase2_vocab, &b.supermerges),
        special_tokens: Vec::new(),
        ngrams,
        deletions,
    }
}

/// The SuperBPE model from phase 2's result; `merges` and `deletions` are the word model's
/// (all of them: SuperBPE's phase 2 replays none), `order_len` the word model's vocabulary size.
fn superbpe_model(
    config: &Config,
    (merges, deletions): (Merges, Vec<Deletion>),
    s: SuperBpe,
    order_len: usize,
    ngrams: Option<Vec<Vec<Vec<u8>>>>,
) -> Model {
    Model {
        kind: Kind::SuperBpe,
        settings: config.settings.clone(),
        vocab: ordered_bytes(&s.vocab, &s.order),
        counts: s.order.iter().map(|&t| s.counts[t as usize]).collect(),
        is_super: (0..s.order.len()).map(|i| i >= order_len).collect(),
        merges,
        supermerges: to_bytes(&s.vocab, &s.supermerges),
        special_tokens: Vec::new(),
        ngrams,
        deletions,
    }
}

/// The whole training run: stage 1 reads `documents` on the calling thread (so that a Python
/// iterator is read, and Ctrl-C seen, on Python's thread); all parallel work runs on `pool`.
/// `stats` receives the seconds spent in each stage.
pub fn train(
    documents: &mut dyn Documents,
    config: &Config,
    pool: &rayon::ThreadPool,
    control: &dyn Control,
    stats: &mut Stats,
) -> Result<Model> {
    // 1. pre-tokenize and count pretokens (and letter runs, for phase 2)
    let clock = Instant::now();
    let with_runs = config.algorithm != Algorithm::Bpe;
    let counts = count_documents(documents, &config.pretokenizer, with_runs, pool, control)?;
    stats.push(("pretokenize_count", clock.elapsed().as_secs_f64()));
    pool.install(|| train_counted(counts, config, control, stats))
}

/// Stages 2 to 4 on counts made earlier (a count file), on `pool`: the same model as
/// [`train`] on the text that was counted.
pub fn train_counts(
    counts: Counts,
    config: &Config,
    pool: &rayon::ThreadPool,
    control: &dyn Control,
    stats: &mut Stats,
) -> Result<Model> {
    pool.install(|| train_counted(counts, config, control, stats))
}

/// Stages 2 to 4, on the current rayon pool.
fn train_counted(counts: Counts, config: &Config, control: &dyn Control, stats: &mut Stats) -> Result<Model> {
    let (words, runs) = (counts.words, counts.runs);
    let words_len = words.len();
    let phase2 = config.algorithm.phase2();
    // (before each stage, the tables the last one freed go back to the system: see
    // `release_freed_memory`.  Before phase 1 only when a phase 2 follows: pages given back
    // cost the kernel's zeroing again when touched, 0.3-0.4 s of phase 1 at 100 MB in about
    // half the runs, while BoundlessBPE's peak RSS at 100 MB/32,768 needs the release to stay
    // under 450 MB: 455 MB without it, 398 MB with it.)
    if phase2.is_some() {
        crate::release_freed_memory(words_len);
    }
    if words.iter().all(|(w, c)| w.is_empty() || *c == 0) {
        return Err(Error::Value(
            "the corpus is empty: no document contains any text".into(),
        ));
    }

    // 2. phase 1: BPE on the aggregated pretokens
    let clock = Instant::now();
    let phase1_size = match phase2 {
        Some(Phase2::SuperBpe(n)) => config.vocab_size - n,
        _ => config.vocab_size,
    };
    let start = start_words(&words)?;
    let Some(phase2) = phase2 else {
        // (the words are not needed again: their memory goes before the merges, with the
        // counting tables' that other threads freed.  100 MB of Gutenberg at 32,768 on two
        // threads: peak RSS 125-144 MB, the merges' first tables in fresh pages beside the
        // counting's freed ones.)
        drop(words);
        crate::release_freed_memory(words_len);
        let word = train_started(start, phase1_size, config.picky, false, control)?;
        let model = word_model(&config.settings, &word);
        stats.push(("phase1", clock.elapsed().as_secs_f64()));
        return Ok(model);
    };
    let mut word = train_started(start, phase1_size, config.picky, true, control)?;
    // the final models keep the word model's merges and deletions; its vocabulary and counts
    // are made only for an encoder (in stage 3), when phase 1 cannot tell the words' tokens
    let word_parts = (
        to_bytes(&word.vocab, &word.merges),
        deletions_to_bytes(&word.vocab, &word.deletions),
    );
    stats.push(("phase1", clock.elapsed().as_secs_f64()));

    // 3. supermerge candidates: letter runs cut at pretokens that are not single tokens
    //    (reachable with the word model's own inference, deletions included: SPEC 3.1, 9)
    let clock = Instant::now();
    crate::release_freed_memory(words_len);
    let token_of = eligible_tokens(config, &mut word, &words)?;
    drop(words);
    let stage3 = supermerge_candidates_for(phase2, config.greedy_split, runs, &token_of, &word)?;
    drop(token_of);
    control.progress("candidates", stage3.reported as u64, stage3.reported as u64)?;
    stats.push(("candidates", clock.elapsed().as_secs_f64()));

    // 4. phase 2
    let clock = Instant::now();
    crate::release_freed_memory(words_len);
    let model = match stage3.input {
        Phase2Input::Boundless(candidates) => {
            // (the word model's vocabulary moves: cloning it was 1.6 M instructions of a small
            // training, taylorswift.txt at 5,000)
            let vocab = std::mem::take(&mut word.vocab);
            let b = train_boundless(&word, vocab, candidates, control)?;
            boundless_model(config, word_parts, b, stage3.ngrams)
        }
        Phase2Input::SuperBpe {
            candidates,
            supermerges,
            first_cut,
        } => {
            let order_len = word.order.len();
            let s = train_superbpe(
                word.vocab,
                &word.order,
                candidates,
                supermerges,
                first_cut,
                control,
            )?;
            superbpe_model(config, word_parts, s, order_len, stage3.ngrams)
        }
    };
    stats.push(("phase2", clock.elapsed().as_secs_f64()));
    Ok(model)
}

/// Each word's token when it is eligible (a single reachable token of the word model): phase
/// 1's final words when they are the word model's encoding (see `train_words`), else encoded.
/// (Building the encoder and its reachable set was about a sixth of a small training, 185 KB
/// at 5,000.)
fn eligible_tokens(
    config: &Config,
    word: &mut WordModel,
    words: &[(Box<str>, u64)],
) -> Result<Vec<Option<TokenId>>> {
    if let Some(single) = word.single.take() {
        return Ok(single);
    }
    let encoder = Encoder::new(&word_model(&config.settings, word), false)?;
    // (the encoder's ids are the final vocabulary's; training's are `word.order`'s)
    Ok(words
        .par_iter()
        .map(|(w, _)| {
            encoder
                .single_token(w.as_bytes())
                .map(|id| word.order[id as usize])
        })
        .collect())
}

/// Stage 3: the supermerge candidates in the form `phase2` takes, after the optional greedy
/// n-gram split.
fn supermerge_candidates_for(
    phase2: Phase2,
    with_split: bool,
    runs: Runs,
    token_of: &[Option<TokenId>],
    word: &WordModel,
) -> Result<Stage3> {
    // phase 2 of BoundlessBPE cuts the candidates at pairs that count no more than any
    // regular merge (see boundless.rs); without deletions the smallest count is the last
    // merge's, which also bounds the greedy split's n-grams from below
    let threshold = word.min_merge_count();
    let min_ngram_count = word.merges.last().map_or(0, |m| m.count).max(MIN_COUNT_FLOOR);
    let n_tokens = word.vocab.len();
    // the split candidates and the n-gram table the model file records
    let split = |candidates: Candidates| {
        let table: FxHashSet<Box<[TokenId]>> = frequent_ngrams(&candidates, min_ngram_count, MAX_NGRAM)
            .into_keys()
            .collect();
        let candidates = greedy_split(candidates, &table);
        let mut rendered: Vec<Vec<Vec<u8>>> = table
            .iter()
            .map(|g| g.iter().map(|&t| word.vocab.bytes(t).to_vec()).collect())
            .collect();
        rendered.sort();
        (candidates, Some(rendered))
    };
    // (progress reports the number of candidates, or of segments when cut straight from the
    // runs, or for SuperBPE without the greedy split the number before adding up)
    Ok(match phase2 {
        Phase2::Boundless => match threshold {
            Some(t) if !with_split => {
                // (exact: the filter's cut was cheaper, stage 3 0.45 -> 0.41 s at 100 MB/32,768
                // on two threads, but left 1.73 M segments that phase 2 paid more for, 0.54 ->
                // 0.63 s)
                let cut = cut_runs(runs, token_of, Threshold::At(t), n_tokens, Cutting::Exact)?;
                Stage3::new(cut.len(), Phase2Input::Boundless(cut), None)
            }
            _ => {
                let mut candidates = supermerge_candidates(runs, token_of)?;
                let mut ngrams = None;
                if with_split {
                    (candidates, ngrams) = split(candidates);
                }
                let reported = candidates.len();
                let cut = match threshold {
                    Some(t) => cut(&candidates, Threshold::At(t), n_tokens, Cutting::Exact)?,
                    None => CutCandidates::uncut(candidates),
                };
                Stage3::new(reported, Phase2Input::Boundless(cut), ngrams)
            }
        },
        Phase2::SuperBpe(supermerges) => {
            let (candidates, ngrams, reported) = if with_split {
                let (candidates, ngrams) = split(supermerge_candidates(runs, token_of)?);
                let n = candidates.len();
                (SuperCandidates::Added(candidates), ngrams, n)
            } else {
                // phase 2 cuts them, added up as segments (see `FlatCandidates`)
                let flat = flat_candidates(runs, token_of);
                let n = flat.len();
                (SuperCandidates::Flat(flat), None, n)
            };
            // the first cut is at a guess of the supermerges' counts (see `candidates::guess`):
            // if they fall that low, the candidates are cut again at a quarter of it, and so
            // on, then not at all (any threshold gives the same model).  Few candidates are
            // not cut at all (see `SMALL_CANDIDATES`).
            let first_cut = match threshold {
                Some(_) if candidates.tokens() >= SMALL_CANDIDATES => Some(Threshold::Guess(supermerges)),
                _ => None,
            };
            let input = Phase2Input::SuperBpe {
                candidates,
                supermerges,
                first_cut,
            };
            Stage3::new(reported, input, ngrams)
        }
    })
}

/// SuperBPE's candidates holding fewer tokens than this are not cut before phase 2: the
/// guessed cut (see `train_counted`) pays on large corpora, but on a small one its set-up
/// costs more than the merges it saves, and when it misses the candidates are cut twice.
/// (Stages 3 and 4 at 8,192 with 512 supermerges: on 1 MB of Gutenberg, 160,000 tokens,
/// 17-40 ms cut, 13-15 ms uncut; on 5 MB, 756,000 tokens, 27-43 ms cut and 58-62 ms uncut.)
const SMALL_CANDIDATES: usize = 1 << 16;

/// What stage 3 hands phase 2: the candidates in the form its algorithm takes.
enum Phase2Input {
    /// BoundlessBPE's candidates, cut into segments at pairs that cannot win (see
    /// `boundless.rs`)
    Boundless(CutCandidates),
    /// SuperBPE's candidates, which phase 2 cuts itself (first at `first_cut`, with a fallback)
    SuperBpe {
        candidates: SuperCandidates,
        supermerges: usize,
        first_cut: Option<Threshold>,
    },
}

/// Stage 3's result: phase 2's input, the greedy split's n-grams (in bytes, sorted) when it
/// ran, and the number progress reports.
struct Stage3 {
    input: Phase2Input,
    ngrams: Option<Vec<Vec<Vec<u8>>>>,
    reported: usize,
}

impl Stage3 {
    fn new(reported: usize, input: Phase2Input, ngrams: Option<Vec<Vec<Vec<u8>>>>) -> Stage3 {
        Stage3 {
            input,
            ngrams,
            reported,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Silent;
    use crate::pretokenize::GPT4O;
    use crate::tokens::BASE_VOCAB;
    use crate::train::bpe::train_words;

    #[test]
    fn phase_one_singles_are_the_encoders_eligible_words() {
        // short words over a few letters, trained until the pairs run out; with PickyBPE
        // deletions phase 1 leaves the words to the encoder
        let picky = Picky {
            tau: 1.1,
            blowup: false,
        };
        let config = Config::new(600, "boundless", None, GPT4O, None, None, false, picky).unwrap();
        let mut rng = crate::XorShift(0x0DDB_1A5E_5BAD_5EED);
        let (mut given, mut refused) = (0, 0);
        for round in 0..300 {
            let letters = &b"abcdef"[..2 + round % 5];
            let mut words: Vec<(Box<str>, u64)> = (0..150)
                .map(|_| {
                    let len = 1 + rng.below(10) as usize;
                    let w: String = (0..len)
                        .map(|_| letters[rng.below(letters.len() as u64) as usize] as char)
                        .collect();
                    (w.into(), 1 + rng.below(6))
                })
                .collect();
            words.sort();
            words.dedup_by(|a, b| a.0 == b.0);
            let size = 250 + rng.below(1000) as usize;
            let picky = Picky {
                tau: if round % 3 == 0 { 0.5 } else { 1.1 },
                blowup: false,
            };
            let mut word = train_words(&words, size, picky, true, &Silent).unwrap();
            let Some(single) = word.single.take() else {
                assert!(!word.deletions.is_empty() || word.vocab.len() < BASE_VOCAB + word.merges.len());
                refused += 1;
                continue;
            };
            given += 1;
            let mut settings = config.settings.clone();
            settings.tau = picky.tau;
            let encoder = Encoder::new(&word_model(&settings, &word), false).unwrap();
            for ((w, _), got) in words.iter().zip(single) {
                let expected = encoder
                    .single_token(w.as_bytes())
                    .map(|id| word.order[id as usize]);
                assert_eq!(got, expected, "round {round}, word {w:?}");
            }
        }
        assert!(given > 150 && refused > 50, "{given} given, {refused} refused");
    }
}
