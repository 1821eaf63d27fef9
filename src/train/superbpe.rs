//! Phase 2 of SuperBPE (SPEC section 5): exactly `n` supermerges on top of the word model,
//! as `reference/superbpe.py`.

use super::{Control, MergeState, TokenId, Tokens, TrainMerge};
use crate::error::Result;

pub struct SuperBpe {
    pub supermerges: Vec<TrainMerge>,
    /// word tokens, then superword tokens
    pub tokens: Tokens,
    pub counts: Vec<u64>,
}

pub fn train_superbpe(
    word_tokens: &Tokens,
    candidates: Vec<(Box<[TokenId]>, u64)>,
    n: usize,
    control: &dyn Control,
) -> Result<SuperBpe> {
    let mut tokens = word_tokens.clone();
    let mut state = MergeState::new(candidates.iter().map(|(s, w)| (&s[..], *w)), &tokens);
    drop(candidates);
    let mut supermerges = Vec::new();
    while tokens.len() - word_tokens.len() < n {
        let Some((pair, count)) = state.best(&tokens) else { break };
        let merged: Vec<u8> = [tokens.bytes(pair.0), tokens.bytes(pair.1)].concat();
        let (id, _) = tokens.add(&merged);
        let flag = state.merge(pair, id, &tokens);
        supermerges.push(TrainMerge { pair, count, flag });
        if supermerges.len() % 256 == 0 {
            control.progress("phase2", (tokens.len() - word_tokens.len()) as u64, n as u64)?;
        }
    }
    control.progress("phase2", (tokens.len() - word_tokens.len()) as u64, n as u64)?;
    let counts = state.token_counts(tokens.len());
    Ok(SuperBpe { supermerges, tokens, counts })
}
