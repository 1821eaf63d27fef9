//! Phase 2 of BoundlessBPE (SPEC section 4, the paper's Algorithm 1), as
//! `reference/boundless.py`: replay the word model's merges, letting the best supermerge win
//! a step only with a strictly higher count.
//!
//! A shortcut the reference does not need: a supermerge wins only with a count above the
//! next regular merge's, and no regular merge counts less than the last one, `T`.  Take two
//! neighbouring pretokens `A != B` whose pair occurs at most `T` times in all candidates.  Any
//! pair that would ever straddle that spot (a token ending in `A`, one starting with `B`)
//! occurs at most as often as `A B` does, so it can never win while regular merges remain.
//! The candidates are therefore cut at such spots before phase 2 (runs of one token are never
//! cut, since ⌊k/2⌋ does not bound them).  The pieces are short and shared, so phase 2 works on
//! far fewer sequences; a piece remembers whether it is a whole candidate, for the merge flag.
//! (The regular merges never run out before the vocabulary is full: the target is the word
//! model's size, and a replayed merge adds no token only when a supermerge already added its
//! bytes.  So "while regular merges remain" covers the whole of phase 2.)

use super::candidates::cut;
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
    train(word_tokens, word_merges, target, candidates, control, true)
}

fn train(
    word_tokens: &Tokens,
    word_merges: &[TrainMerge],
    target: usize,
    candidates: Vec<(Box<[TokenId]>, u64)>,
    control: &dyn Control,
    allow_cut: bool,
) -> Result<Boundless> {
    let threshold = word_merges.last().map(|m| m.count).filter(|_| allow_cut);
    let (pieces, alone) = match threshold {
        Some(t) => cut(&candidates, t, word_tokens.len()),
        None => (
            candidates.into_iter().map(|(s, w)| (s, w, true)).collect(),
            Vec::new(),
        ),
    };
    train_pieces(word_tokens, word_merges, target, pieces, alone, control)
}

/// Phase 2 on candidates already cut (see the module notes): `pieces` of two or more tokens
/// with their weights and "is a whole candidate", and the weight of each token standing
/// alone as a one-token piece.
pub fn train_pieces(
    word_tokens: &Tokens,
    word_merges: &[TrainMerge],
    target: usize,
    pieces: Vec<(Box<[TokenId]>, u64, bool)>,
    alone: Vec<u64>,
    control: &dyn Control,
) -> Result<Boundless> {
    // phase-2 token ids start as the word model's, so candidates need no translation
    let mut tokens = word_tokens.clone();
    let mut state = MergeState::with_pieces(pieces.iter().map(|(s, w, whole)| (&s[..], *w, *whole)), &tokens);
    drop(pieces);
    let mut vocab: Vec<(Vec<u8>, bool)> = (0..243).map(|id| (tokens.bytes(id).to_vec(), false)).collect();
    let mut known: rustc_hash::FxHashSet<Vec<u8>> = vocab.iter().map(|v| v.0.clone()).collect();
    let mut supermerges: Vec<TrainMerge> = Vec::new();
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
                add(
                    [word_tokens.bytes(l), word_tokens.bytes(r)].concat(),
                    false,
                    &mut vocab,
                );
                used += 1;
            }
            _ => break, // unreachable with target = the word model's size (see above)
        }
        if vocab.len() % 256 == 0 {
            control.progress("phase2", (vocab.len() - 243) as u64, (target - 243) as u64)?;
        }
    }
    control.progress("phase2", (vocab.len() - 243) as u64, (target - 243) as u64)?;
    let mut counts = state.token_counts(tokens.len());
    for (t, w) in alone.into_iter().enumerate() {
        counts[t] += w;
    }
    Ok(Boundless {
        used,
        supermerges,
        phase2_tokens: tokens,
        vocab,
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::Silent;
    use rustc_hash::FxHashMap;

    fn same(a: &Boundless, b: &Boundless) -> bool {
        a.used == b.used && a.supermerges == b.supermerges && a.vocab == b.vocab && a.counts == b.counts
    }

    #[test]
    fn cutting_never_changes_the_result() {
        let mut rng = crate::XorShift(0x9E37_79B9_7F4A_7C15);
        for round in 0..300 {
            // pretoken-level tokens: 12 one-letter "words" plus their pairs as regular tokens
            let mut tokens = Tokens::base();
            let letters: Vec<TokenId> = (b'a'..=b'l').map(|b| tokens.id(&[b]).unwrap()).collect();
            let mut merges = Vec::new();
            let mut count = 40 + rng.below(40);
            for _ in 0..rng.below(12) + 1 {
                let (l, r) = (letters[rng.below(12) as usize], letters[rng.below(12) as usize]);
                let bytes = [tokens.bytes(l), tokens.bytes(r)].concat();
                tokens.add(&bytes);
                merges.push(TrainMerge {
                    pair: (l, r),
                    count,
                    flag: false,
                });
                count -= rng.below(count / 3 + 1).min(count - 1);
            }
            let mut candidates: FxHashMap<Box<[TokenId]>, u64> = FxHashMap::default();
            for _ in 0..rng.below(40) + 1 {
                let len = 2 + rng.below(7) as usize;
                let seq: Box<[TokenId]> = (0..len)
                    .map(|_| letters[rng.below(5 + round % 7) as usize])
                    .collect();
                *candidates.entry(seq).or_insert(0) += 1 + rng.below(9);
            }
            let candidates: Vec<(Box<[TokenId]>, u64)> = candidates.into_iter().collect();
            let target = tokens.len();
            let with_cut = train(&tokens, &merges, target, candidates.clone(), &Silent, true).unwrap();
            let without = train(&tokens, &merges, target, candidates, &Silent, false).unwrap();
            assert!(same(&with_cut, &without), "round {round}");
        }
    }
}
