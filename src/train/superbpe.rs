//! Phase 2 of SuperBPE (SPEC section 5): exactly `n` supermerges on top of the word model,
//! as `reference/superbpe.py`.
//!
//! The same shortcut as BoundlessBPE's (see `boundless.rs`), with a guessed threshold (see
//! `candidates::guess`): the candidates are cut where a pair of two different tokens occurs
//! at most `t` times (there, or at some of those places: see `candidates::Cutting`), which
//! cannot change a choice while the best pair counts more than `t`.  If SuperBPE still needs
//! supermerges when the best count has fallen to `t`, the candidates are cut again at `t / 4`
//! (and so on, then not at all), the supermerges so far replayed on them, and training goes on
//! exactly.  (A quarter: a guess that misses most likely misses by little, see
//! `candidates::guess`; an eighth before 884b958, with a guess half as high.)
//!
//! The candidates usually come as stage 3 flattened them from the letter runs, not added up
//! ([`FlatCandidates`]): the cut adds up its segments anyway, and the fallback merges the
//! flat ones (the same model: counts are sums).  While cut, pairs counted `t` times or fewer
//! get no heap entry and mostly no pair-table entry (`MergeState::with_floor`): the cut state
//! ends before one could win.

use super::candidates::{cut, Candidates, CutCandidates, Cutting, FlatCandidates, Threshold};
use super::merging::{MergeState, TrainMerge};
use crate::control::Control;
use crate::error::Result;
use crate::tokens::{TokenId, Vocab};

/// SuperBPE's candidates: added up (after the greedy n-gram split), or as stage 3 flattened
/// them from the letter runs (see [`FlatCandidates`]).  Either gives the same model.
pub enum SuperCandidates {
    Added(Candidates),
    Flat(FlatCandidates),
}

impl SuperCandidates {
    /// Cut where the pair filter alone shows a pair weak ([`Cutting::Filtered`]).  (
    /// 100 MB of Gutenberg, 32,768, two threads, medians of three interleaved runs:
    /// 710,936 segments instead of 688,551, for a pass over the 16.2 M tokens less; phase 2
    /// 0.43 -> 0.36 s, the cut itself 0.30 -> 0.21 s, together with the filter's bits.)
    fn cut(&self, threshold: Threshold, n_tokens: usize) -> Result<CutCandidates> {
        match self {
            SuperCandidates::Added(list) => cut(list, threshold, n_tokens, Cutting::Filtered),
            SuperCandidates::Flat(flat) => flat.cut(threshold, n_tokens, Cutting::Filtered),
        }
    }

    /// How many tokens the candidates hold (not added up: as many as the text has).
    pub fn tokens(&self) -> usize {
        match self {
            SuperCandidates::Added(list) => list.iter().map(|(s, _)| s.len()).sum(),
            SuperCandidates::Flat(flat) => flat.tokens(),
        }
    }

    /// Merge state on the uncut candidates.
    fn uncut(&self, vocab: &Vocab) -> Result<MergeState> {
        match self {
            SuperCandidates::Added(list) => {
                MergeState::try_new(list.iter().map(|(s, w)| (&s[..], *w)), vocab)
            }
            SuperCandidates::Flat(flat) => MergeState::try_new(flat.iter(), vocab),
        }
    }
}

pub struct SuperBpe {
    pub supermerges: Vec<TrainMerge>,
    /// every token phase 1 or 2 made (ids as in training)
    pub vocab: Vocab,
    /// the final vocabulary in id order: the word model's tokens, then superword tokens
    pub order: Vec<TokenId>,
    /// counts by id of `vocab`
    pub counts: Vec<u64>,
}

/// `first_cut`: where to cut the candidates first (`None`: do not cut); if the best pair falls
/// to that threshold, the candidates are cut again at a quarter of it (and so on), then not at all.  Any
/// threshold gives the same model.  `word_order`: the word model's final vocabulary (ids of
/// `word_vocab`, which may also hold tokens PickyBPE deleted).  `word_vocab` becomes the
/// result's (cloning it was 1.6 M instructions of a small training, taylorswift.txt at 5,000).
pub fn train_superbpe(
    word_vocab: Vocab,
    word_order: &[TokenId],
    candidates: SuperCandidates,
    n: usize,
    first_cut: Option<Threshold>,
    control: &dyn Control,
) -> Result<SuperBpe> {
    let mut vocab = word_vocab;
    // the merge state on the candidates cut at `at` (with the threshold they were cut at), or
    // uncut (`None`)
    let state_at = |at: Option<Threshold>, vocab: &Vocab| match at {
        Some(at) => {
            let cut = candidates.cut(at, vocab.len())?;
            let t = cut.threshold;
            let state = MergeState::try_with_wholeness(cut.iter(), vocab)?
                // (a pair counted `t` times or fewer would end this state anyway)
                .with_floor(t, vocab);
            Ok((state, cut.alone, Some(t)))
        }
        None => Ok((candidates.uncut(vocab)?, Vec::new(), None)),
    };
    let (mut state, mut alone, mut cut_at) = state_at(first_cut, &vocab)?;
    let mut supermerges: Vec<TrainMerge> = Vec::new();
    let mut merged_ids: Vec<TokenId> = Vec::new();
    let mut order: Vec<TokenId> = word_order.to_vec();
    // (a flag per id: a hash set of the ids was 0.4 M instructions on taylorswift.txt at 5,000)
    let mut known = vec![false; vocab.len()];
    word_order.iter().for_each(|&t| known[t as usize] = true);
    while order.len() - word_order.len() < n {
        let best = state.best(&vocab);
        if let Some(t) = cut_at {
            if best.is_none_or(|(_, count)| count <= t) {
                // pairs that were cut away may matter now: continue on the candidates cut
                // lower, or uncut, with the supermerges so far replayed (none of them
                // straddles a lower cut: each counted more than `t`)
                let lower = (t / 4 > 0).then_some(Threshold::At(t / 4));
                (state, alone, cut_at) = state_at(lower, &vocab)?;
                for (m, &id) in supermerges.iter().zip(&merged_ids) {
                    state.merge(m.pair, id, &vocab);
                }
                continue;
            }
        }
        let Some((pair, count)) = best else { break };
        let (merge, id) = state.merge_pair(&mut vocab, pair, count);
        supermerges.push(merge);
        merged_ids.push(id);
        if id as usize >= known.len() {
            known.resize(id as usize + 1, false);
        }
        if !std::mem::replace(&mut known[id as usize], true) {
            order.push(id);
        }
        if supermerges.len() % 256 == 0 {
            control.progress("phase2", (order.len() - word_order.len()) as u64, n as u64)?;
        }
    }
    control.progress("phase2", (order.len() - word_order.len()) as u64, n as u64)?;
    let mut counts = state.token_counts(vocab.len());
    for (t, w) in alone.into_iter().enumerate() {
        counts[t] += w;
    }
    Ok(SuperBpe {
        supermerges,
        vocab,
        order,
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Silent;
    use crate::train::candidates::{flat_candidates, random_runs, supermerge_candidates};
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
            let order: Vec<TokenId> = (0..vocab.len() as TokenId).collect();
            let added = |c: &Candidates| SuperCandidates::Added(c.clone());
            let exact = train_superbpe(vocab.clone(), &order, added(&candidates), n, None, &Silent).unwrap();
            let cuts = [1, 3, 8, 1000].map(Threshold::At);
            for t in cuts.into_iter().chain([n, 1, 40].map(Threshold::Guess)) {
                let cut =
                    train_superbpe(vocab.clone(), &order, added(&candidates), n, Some(t), &Silent).unwrap();
                assert_eq!(
                    cut.supermerges, exact.supermerges,
                    "round {round}, threshold {t:?}"
                );
                assert_eq!(cut.vocab.to_vec(), exact.vocab.to_vec());
                assert_eq!(cut.counts, exact.counts);
            }
        }
    }

    #[test]
    fn flat_candidates_give_the_added_up_ones_model() {
        // letter runs of two counting tables (own pretoken ids, random eligibility): the
        // candidates not added up give the same model as the added-up ones, cut or not, with
        // or without the fallback to the uncut candidates
        let mut rng = crate::XorShift(0x5DEE_CE66_D1CE_4E5Bu64);
        let mut next = |n: u64| rng.below(n);
        let vocab = Vocab::base();
        let letters: Vec<TokenId> = (b'a'..=b'f').map(|b| vocab.id(&[b]).unwrap()).collect();
        let order: Vec<TokenId> = (0..vocab.len() as TokenId).collect();
        let mut repeated = 0;
        for round in 0..200 {
            let words = 10usize;
            let token_of: Vec<Option<TokenId>> = (0..words)
                .map(|w| (next(6) != 0).then(|| letters[w % (2 + round % 5)]))
                .collect();
            let runs = random_runs(&mut next, words, 40, 7, 9);
            let list = supermerge_candidates(runs.clone(), &token_of).unwrap();
            let flat = flat_candidates(runs, &token_of);
            repeated += (flat.len() > list.len()) as usize;
            let n = 1 + next(12) as usize;
            let cuts = [
                None,
                Some(Threshold::At(1)),
                Some(Threshold::At(4)),
                Some(Threshold::At(1000)),
            ];
            for t in cuts.into_iter().chain([Some(Threshold::Guess(n))]) {
                let a = train_superbpe(
                    vocab.clone(),
                    &order,
                    SuperCandidates::Added(list.clone()),
                    n,
                    t,
                    &Silent,
                )
                .unwrap();
                let b = train_superbpe(
                    vocab.clone(),
                    &order,
                    SuperCandidates::Flat(flat.clone()),
                    n,
                    t,
                    &Silent,
                )
                .unwrap();
                assert_eq!(a.supermerges, b.supermerges, "round {round}, threshold {t:?}");
                assert_eq!(a.order, b.order);
                assert_eq!(a.vocab.to_vec(), b.vocab.to_vec());
                assert_eq!(a.counts, b.counts);
            }
        }
        assert!(repeated > 50, "only {repeated} rounds had a candidate twice");
    }
}
