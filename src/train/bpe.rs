//! Phase 1: byte-level BPE on aggregated pretokens, the word model (SPEC section 2), as
//! `reference/bpe.py`.

use super::merging::{MergeState, TrainMerge};
use super::Control;
use crate::error::Result;
use crate::tokens::{byte_id, Vocab, BASE_VOCAB};

/// The trained word model, in the training's token ids.
pub struct WordModel {
    pub merges: Vec<TrainMerge>,
    pub vocab: Vocab,
    /// SPEC 8 `count` of each token id, over the final words
    pub counts: Vec<u64>,
}

/// Train on `words` (distinct pretokens with counts, in any order) up to `vocab_size`.
pub fn train_words(words: &[(Box<str>, u64)], vocab_size: usize, control: &dyn Control) -> Result<WordModel> {
    // 1. each distinct pretoken is a word of byte tokens, weighted by its count
    let mut vocab = Vocab::base();
    let seqs: Vec<Vec<u32>> = words
        .iter()
        .map(|(w, _)| {
            w.bytes()
                .map(|b| byte_id(b).expect("UTF-8 text has no 0xC0, 0xC1, 0xF5..0xFF bytes"))
                .collect()
        })
        .collect();
    let mut state = MergeState::new(seqs.iter().zip(words).map(|(s, w)| (s.as_slice(), w.1)), &vocab);
    drop(seqs);
    // 2. merge the best pair until the vocabulary is full or no pair is left
    let mut merges = Vec::new();
    let total = vocab_size.saturating_sub(BASE_VOCAB) as u64;
    while vocab.len() < vocab_size {
        let Some((pair, count)) = state.best(&vocab) else {
            break;
        };
        merges.push(state.merge_pair(&mut vocab, pair, count).0);
        if merges.len() % 256 == 0 {
            control.progress("merges", (vocab.len() - BASE_VOCAB) as u64, total)?;
        }
    }
    control.progress("merges", (vocab.len() - BASE_VOCAB) as u64, total)?;
    let counts = state.token_counts(vocab.len());
    Ok(WordModel {
        merges,
        vocab,
        counts,
    })
}
