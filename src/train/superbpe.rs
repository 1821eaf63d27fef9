//! Phase 2 of SuperBPE (SPEC section 5): exactly `n` supermerges on top of the word model,
//! as `reference/superbpe.py`.
//!
//! The same shortcut as BoundlessBPE's (see `boundless.rs`), with a guessed threshold: the
//! candidates are cut where a pair of two different tokens occurs at most `t` times, which
//! cannot change a choice while the best pair counts more than `t`.  If SuperBPE still needs
//! supermerges when the best count has fallen to `t`, the uncut candidates are restored, the
//! supermerges so far replayed on them, and training goes on exactly.

use super::candidates::{cut, Candidates, CutCandidates};
use super::merging::{MergeState, TrainMerge};
use super::Control;
use crate::error::Result;
use crate::tokens::{TokenId, Vocab};

pub struct SuperBpe {
    pub supermerges: Vec<TrainMerge>,
    /// word tokens, then superword tokens
    pub vocab: Vocab,
    pub counts: Vec<u64>,
}

/// `threshold`: where to cut the candidates (0: do not cut).  Any value gives the same model.
pub fn train_superbpe(
    word_vocab: &Vocab,
    candidates: Candidates,
    n: usize,
    threshold: u64,
    control: &dyn Control,
) -> Result<SuperBpe> {
    let mut vocab = word_vocab.clone();
    let uncut = |vocab: &Vocab| MergeState::new(candidates.iter().map(|(s, w)| (&s[..], *w)), vocab);
    let (mut state, mut alone) = if threshold > 0 {
        let CutCandidates { segments, alone } = cut(&candidates, threshold, vocab.len());
        (
            MergeState::with_wholeness(segments.iter().map(|s| (&s.tokens[..], s.count, s.whole)), &vocab),
            alone,
        )
    } else {
        (uncut(&vocab), Vec::new())
    };
    let mut is_cut = threshold > 0;
    let mut supermerges: Vec<TrainMerge> = Vec::new();
    let mut merged_ids: Vec<TokenId> = Vec::new();
    while vocab.len() - word_vocab.len() < n {
        let best = state.best(&vocab);
        if is_cut && best.is_none_or(|(_, count)| count <= threshold) {
            // pairs that were cut away may matter now: continue on the uncut candidates
            state = uncut(&vocab);
            for (m, &id) in supermerges.iter().zip(&merged_ids) {
                state.merge(m.pair, id, &vocab);
            }
            alone.clear();
            is_cut = false;
            continue;
        }
        let Some((pair, count)) = best else { break };
        let (merge, id) = state.merge_pair(&mut vocab, pair, count);
        supermerges.push(merge);
        merged_ids.push(id);
        if supermerges.len() % 256 == 0 {
            control.progress("phase2", (vocab.len() - word_vocab.len()) as u64, n as u64)?;
        }
    }
    control.progress("phase2", (vocab.len() - word_vocab.len()) as u64, n as u64)?;
    let mut counts = state.token_counts(vocab.len());
    for (t, w) in alone.into_iter().enumerate() {
        counts[t] += w;
    }
    Ok(SuperBpe {
        supermerges,
        vocab,
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::Silent;
    use rustc_hash::FxHashMap;

    #[test]
    fn any_threshold_gives_the_same_model() {
        let mut rng = crate::XorShift(0x2545_F491_4F6C_DD1Du64);
        let mut next = |n: u64| rng.below(n);
        for round in 0..200 {
            let vocab = Vocab::base();
            let letters: Vec<TokenId> = (b'a'..=b'h').map(|b| vocab.id(&[b]).unwrap()).collect();
            let mut candidates: FxHashMap<Box<[TokenId]>, u64> = FxHashMap::default();
            for _ in 0..next(50) + 1 {
                let len = 2 + next(6) as usize;
                let seq: Box<[TokenId]> = (0..len).map(|_| letters[next(3 + round % 6) as usize]).collect();
                *candidates.entry(seq).or_insert(0) += 1 + next(12);
            }
            let candidates: Candidates = candidates.into_iter().collect();
            let n = 1 + next(15) as usize;
            let exact = train_superbpe(&vocab, candidates.clone(), n, 0, &Silent).unwrap();
            for t in [1, 3, 8, 1000] {
                let cut = train_superbpe(&vocab, candidates.clone(), n, t, &Silent).unwrap();
                assert_eq!(cut.supermerges, exact.supermerges, "round {round}, threshold {t}");
                assert_eq!(cut.vocab.to_vec(), exact.vocab.to_vec());
                assert_eq!(cut.counts, exact.counts);
            }
        }
    }
}
