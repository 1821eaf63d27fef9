//! Phase 2 of BoundlessBPE (SPEC section 4, the paper's Algorithm 1), as
//! `reference/boundless.py`: replay the word model's merges, letting the best supermerge win
//! a step only with a strictly higher count.

use super::{Control, MergeState, TokenId, Tokens, TrainMerge};
use crate::error::Result;

pub struct Boundless {
    /// how many of the word model's merges were replayed
    pub used: usize,
    /// supermerges, in the ids of `phase2_tokens`
    pub supermerges: Vec<TrainMerge>,
    pub phase2_tokens: Tokens,
    /// the final vocabulary in id order: (bytes, is superword)
    pub vocab: Vec<(Vec<u8>, bool)>,
    /// SPEC 8 `count` of each phase-2 token id, over the final candidates
    pub counts: Vec<u64>,
}

/// `candidates` are sequences of word-model token ids (`word_tokens`); the word model's merges
/// are `word_merges` (in `word_tokens` ids) and its size `target`.
pub fn train_boundless(
    word_tokens: &Tokens,
    word_merges: &[TrainMerge],
    target: usize,
    candidates: Vec<(Box<[TokenId]>, u64)>,
    control: &dyn Control,
) -> Result<Boundless> {
    // phase-2 token ids start as the word model's, so candidates need no translation
    let mut tokens = word_tokens.clone();
    let mut state = MergeState::new(candidates.iter().map(|(s, w)| (&s[..], *w)), &tokens);
    drop(candidates);
    let mut vocab: Vec<(Vec<u8>, bool)> = (0..243).map(|id| (tokens.bytes(id).to_vec(), false)).collect();
    let mut known: rustc_hash::FxHashSet<Vec<u8>> = vocab.iter().map(|v| v.0.clone()).collect();
    let mut supermerges = Vec::new();
    let mut used = 0;
    let mut add = |bytes: Vec<u8>, sup: bool, vocab: &mut Vec<(Vec<u8>, bool)>| {
        if known.insert(bytes.clone()) {
            vocab.push((bytes, sup));
        }
    };
    while vocab.len() < target {
        let regular = word_merges.get(used).map_or(-1, |m| m.count as i128);
        match state.best(&tokens) {
            Some((pair, count)) if count as i128 > regular => {
                let merged: Vec<u8> = [tokens.bytes(pair.0), tokens.bytes(pair.1)].concat();
                let (id, _) = tokens.add(&merged);
                let flag = state.merge(pair, id, &tokens);
                supermerges.push(TrainMerge { pair, count, flag });
                add(merged, true, &mut vocab);
            }
            _ if used < word_merges.len() => {
                let (l, r) = word_merges[used].pair;
                add([word_tokens.bytes(l), word_tokens.bytes(r)].concat(), false, &mut vocab);
                used += 1;
            }
            _ => break, // nothing left to add (degenerate corpora only)
        }
        if vocab.len() % 256 == 0 {
            control.progress("phase2", (vocab.len() - 243) as u64, (target - 243) as u64)?;
        }
    }
    control.progress("phase2", (vocab.len() - 243) as u64, (target - 243) as u64)?;
    let counts = state.token_counts(tokens.len());
    Ok(Boundless { used, supermerges, phase2_tokens: tokens, vocab, counts })
}
