//! Phase 1: byte-level BPE on aggregated pretokens, the word model (SPEC section 2).

use super::{byte_id, Control, MergeState, Tokens, TrainMerge};
use crate::error::Result;

/// The trained word model, in the training's token ids.
pub struct WordModel {
    pub merges: Vec<TrainMerge>,
    pub tokens: Tokens,
    /// SPEC 8 `count` of each token id, over the final words
    pub counts: Vec<u64>,
}

/// Train on `words` (distinct pretokens with counts, in any order) up to `vocab_size`.
pub fn train_words(words: &[(&str, u64)], vocab_size: usize, control: &dyn Control) -> Result<WordModel> {
    // 1. each distinct pretoken is a word of byte tokens, weighted by its count
    let mut tokens = Tokens::base();
    let seqs: Vec<Vec<u32>> = words
        .iter()
        .map(|(w, _)| {
            w.bytes()
                .map(|b| byte_id(b).expect("UTF-8 text has no 0xC0, 0xC1, 0xF5..0xFF bytes"))
                .collect()
        })
        .collect();
    let mut state = MergeState::new(seqs.iter().zip(words).map(|(s, w)| (s.as_slice(), w.1)), &tokens);
    drop(seqs);
    // 2. merge the best pair until the vocabulary is full or no pair is left
    let mut merges = Vec::new();
    let total = vocab_size.saturating_sub(tokens.len()) as u64;
    while tokens.len() < vocab_size {
        let Some((pair, count)) = state.best(&tokens) else {
            break;
        };
        let merged: Vec<u8> = [tokens.bytes(pair.0), tokens.bytes(pair.1)].concat();
        let (id, _) = tokens.add(&merged); // existing bytes keep their id (SPEC 2.6)
        let flag = state.merge(pair, id, &tokens);
        merges.push(TrainMerge { pair, count, flag });
        if merges.len() % 256 == 0 {
            control.progress("merges", (tokens.len() - 243) as u64, total)?;
        }
    }
    control.progress("merges", (tokens.len() - 243) as u64, total)?;
    let counts = state.token_counts(tokens.len());
    Ok(WordModel {
        merges,
        tokens,
        counts,
    })
}
