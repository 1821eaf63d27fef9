//! The whole training run after counting, stage by stage (paper Figure 1), as
//! `reference/train.py`:
//!
//!   counts -> phase 1 (word model) -> candidates -> [greedy split] -> phase 2 -> Model

use std::time::Instant;

use rayon::prelude::*;

use crate::count::Counts;
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::model::{Kind, Merge, Model, Settings};
use crate::train::boundless::{train_boundless, train_pieces, Boundless};
use crate::train::bpe::{train_words, WordModel};
use crate::train::candidates::{cut_runs, supermerge_candidates};
use crate::train::ngram::{frequent_ngrams, greedy_split, MAX_NGRAM, MIN_COUNT_FLOOR};
use crate::train::superbpe::train_superbpe;
use crate::train::{Control, TokenId, Tokens, TrainMerge};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Bpe,
    Boundless,
    /// SuperBPE with this many supermerges
    SuperBpe(usize),
}

pub struct Config {
    pub vocab_size: usize,
    pub algorithm: Algorithm,
    pub settings: Settings,
    pub greedy_split: bool,
}

/// Seconds spent in each stage, in order (the paper's Table 1 breakdown).
pub type Stats = Vec<(&'static str, f64)>;

fn to_bytes(tokens: &Tokens, merges: &[TrainMerge]) -> Vec<Merge> {
    merges
        .iter()
        .map(|m| Merge {
            left: tokens.bytes(m.pair.0).to_vec(),
            right: tokens.bytes(m.pair.1).to_vec(),
            count: m.count,
            flag: m.flag,
        })
        .collect()
}

fn word_model(settings: &Settings, w: &WordModel) -> Model {
    Model {
        kind: Kind::Word,
        settings: settings.clone(),
        vocab: w.tokens.to_vec(),
        counts: w.counts.clone(),
        is_super: vec![false; w.tokens.len()],
        merges: to_bytes(&w.tokens, &w.merges),
        supermerges: Vec::new(),
        special_tokens: Vec::new(),
        ngrams: None,
    }
}

/// The BoundlessBPE model from phase 2's result.
fn boundless_model(
    config: &Config,
    word_model: &Model,
    b: Boundless,
    ngrams: Option<Vec<Vec<Vec<u8>>>>,
) -> Model {
    let counts = b
        .vocab
        .iter()
        .map(|(t, _)| b.phase2_tokens.id(t).map_or(0, |i| b.counts[i as usize]))
        .collect();
    Model {
        kind: Kind::Boundless,
        settings: config.settings.clone(),
        vocab: b.vocab.iter().map(|(t, _)| t.clone()).collect(),
        counts,
        is_super: b.vocab.iter().map(|(_, s)| *s).collect(),
        merges: word_model.merges[..b.used].to_vec(),
        supermerges: to_bytes(&b.phase2_tokens, &b.supermerges),
        special_tokens: Vec::new(),
        ngrams,
    }
}

pub fn train(counts: Counts, config: &Config, control: &dyn Control, stats: &mut Stats) -> Result<Model> {
    let Counts { words, runs, .. } = counts;
    if words.iter().all(|(w, c)| w.is_empty() || *c == 0) {
        return Err(Error::Value(
            "the corpus is empty: no document contains any text".into(),
        ));
    }

    // 2. phase 1: BPE on the aggregated pretokens
    let clock = Instant::now();
    let phase1_size = match config.algorithm {
        Algorithm::SuperBpe(n) => config.vocab_size - n,
        _ => config.vocab_size,
    };
    let word_list: Vec<(&str, u64)> = words.iter().map(|(w, c)| (&**w, *c)).collect();
    let word = train_words(&word_list, phase1_size, control)?;
    drop(word_list);
    let word_model = word_model(&config.settings, &word);
    stats.push(("phase1", clock.elapsed().as_secs_f64()));
    if config.algorithm == Algorithm::Bpe {
        return Ok(word_model);
    }

    // 3. supermerge candidates: letter runs cut at pretokens that are not single tokens
    let clock = Instant::now();
    let encoder = Encoder::new(&word_model, false)?;
    let token_of: Vec<Option<TokenId>> = words
        .par_iter()
        .map(|(w, _)| encoder.single_token(w.as_bytes()))
        .collect();
    drop(words);
    let threshold = word.merges.last().map(|m| m.count);
    if let (Algorithm::Boundless, false, Some(t)) = (config.algorithm, config.greedy_split, threshold) {
        // the common case: cut the runs straight into phase 2's pieces
        let (pieces, alone) = cut_runs(&runs, &token_of, t, word.tokens.len());
        drop(runs);
        control.progress("candidates", pieces.len() as u64, pieces.len() as u64)?;
        stats.push(("candidates", clock.elapsed().as_secs_f64()));
        let clock = Instant::now();
        let b = train_pieces(
            &word.tokens,
            &word.merges,
            word.tokens.len(),
            pieces,
            alone,
            control,
        )?;
        let model = boundless_model(config, &word_model, b, None);
        stats.push(("phase2", clock.elapsed().as_secs_f64()));
        return Ok(model);
    }
    let mut candidates: Vec<(Box<[TokenId]>, u64)> =
        supermerge_candidates(&runs, &token_of).into_iter().collect();
    drop(runs);
    let mut ngrams = None;
    if config.greedy_split {
        let min_count = word.merges.last().map_or(0, |m| m.count).max(MIN_COUNT_FLOOR);
        let table: rustc_hash::FxHashSet<Box<[TokenId]>> = frequent_ngrams(&candidates, min_count, MAX_NGRAM)
            .into_keys()
            .collect();
        candidates = greedy_split(candidates, &table);
        let mut rendered: Vec<Vec<Vec<u8>>> = table
            .iter()
            .map(|g| g.iter().map(|&t| word.tokens.bytes(t).to_vec()).collect())
            .collect();
        rendered.sort();
        ngrams = Some(rendered);
    }
    control.progress("candidates", candidates.len() as u64, candidates.len() as u64)?;
    stats.push(("candidates", clock.elapsed().as_secs_f64()));

    // 4. phase 2
    let clock = Instant::now();
    let model = match config.algorithm {
        Algorithm::Boundless => {
            let b = train_boundless(&word.tokens, &word.merges, word.tokens.len(), candidates, control)?;
            boundless_model(config, &word_model, b, ngrams)
        }
        Algorithm::SuperBpe(n) => {
            // cutting at half the last regular merge's count is a guess that rarely needs
            // the exact fallback (any threshold gives the same model)
            let threshold = word.merges.last().map_or(0, |m| m.count / 2);
            let s = train_superbpe(&word.tokens, candidates, n, threshold, control)?;
            Model {
                kind: Kind::SuperBpe,
                settings: config.settings.clone(),
                vocab: s.tokens.to_vec(),
                counts: s.counts.clone(),
                is_super: (0..s.tokens.len()).map(|i| i >= word.tokens.len()).collect(),
                merges: word_model.merges.clone(),
                supermerges: to_bytes(&s.tokens, &s.supermerges),
                special_tokens: Vec::new(),
                ngrams,
            }
        }
        Algorithm::Bpe => unreachable!("returned above"),
    };
    stats.push(("phase2", clock.elapsed().as_secs_f64()));
    Ok(model)
}
