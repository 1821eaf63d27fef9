//! Phase 2 of BoundlessBPE (SPEC section 4, the paper's Algorithm 1), as
//! `reference/boundless.py`: replay the word model's merges, letting the best supermerge win
//! a step only with a strictly higher count.
//!
//! A shortcut the reference does not need: a supermerge wins only with a count above the
//! next regular merge's, and no regular merge counts less than the smallest recorded count,
//! `T` (the last merge's without deletions; with PickyBPE deletions counts can rise again, so
//! the minimum over all merges).  Take two
//! neighbouring pretokens `A != B` whose pair occurs at most `T` times in all candidates.  Any
//! pair that would ever straddle that spot (a token ending in `A`, one starting with `B`)
//! occurs at most as often as `A B` does, so it can never win while regular merges remain.
//! The candidates are therefore cut at such spots before phase 2 (repeats of one token are
//! never cut, since ⌊k/2⌋ does not bound them): see [`super::candidates::cut`].  The segments
//! are short and shared, so phase 2 works on far fewer sequences; a segment remembers whether
//! it is a whole candidate, for the merge flag.
//! (The regular merges never run out before the vocabulary is full: the target is the word
//! model's size, and a replayed merge adds no token only when a supermerge already added its
//! bytes.  So "while regular merges remain" covers the whole of phase 2.)
//!
//! A higher cut would be exact for longer than needed, since phase 2 ends when the vocabulary
//! is full, long before the regular merges fall to `T` (100 MB of Gutenberg: the last one
//! replayed counts 84 against `T` = 44 at 32,768, 14 against 3 at 131,072; cut at 84, phase 2
//! took 0.85-0.92 s instead of 1.31-1.43, one thread).  But where it ends is not known in
//! advance (on our corpora the last count was 1.0 to 7 times `T`), the supermerges come all
//! along (at 32,768 only 48% of them count above 2`T`), and cutting again costs as much as
//! the first cut (about 1.6 s with phase 2's set-up at 32,768, one thread), more than a good
//! guess saves: measured with fixed cuts and not built, see `train/mod.rs`.

use super::bpe::WordModel;
use super::candidates::CutCandidates;
use super::merging::{MergeState, TrainMerge};
use crate::control::Control;
use crate::error::Result;
use crate::tokens::{TokenId, Vocab, BASE_VOCAB};

/// The result of phase 2.
pub struct Boundless {
    /// how many of the word model's merges were replayed
    pub used: usize,
    /// how many of its deletions were replayed (those that follow a replayed merge)
    pub deletions_used: usize,
    /// supermerges, in the ids of `phase2_vocab`
    pub supermerges: Vec<TrainMerge>,
    /// the word model's tokens, then the supermerges' new ones (the ids training used)
    pub phase2_vocab: Vocab,
    /// the final vocabulary in id order (ids of `phase2_vocab`), and which of its tokens are
    /// superwords
    pub order: Vec<TokenId>,
    pub is_super: Vec<bool>,
    /// SPEC 8 `count` of each `phase2_vocab` id, over the final candidates
    pub counts: Vec<u64>,
}

/// Phase 2 on the candidates (sequences of `word` token ids), cut into segments where that
/// cannot change a choice (see the module notes; [`CutCandidates::uncut`] for no cutting).
/// The vocabulary grows to the word model's size.  `vocab` is the word model's (`word.vocab`,
/// moved out of it or cloned), which phase 2 extends with its supermerges' tokens.
pub fn train_boundless(
    word: &WordModel,
    vocab: Vocab,
    candidates: CutCandidates,
    control: &dyn Control,
) -> Result<Boundless> {
    // for the same reason, a pair counted `T` times or fewer never wins a step: it needs no
    // heap entry (see `MergeState::with_floor`)
    let floor = word.min_merge_count().unwrap_or(0);
    train_floored(word, vocab, candidates, floor, control)
}

/// [`train_boundless`] with the pairs counted `floor` times or fewer left out of the heap.
///
/// The final vocabulary is kept as token ids, with a flag per id for "in it": a token's
/// bytes have one id (`Vocab::add`), and phase-2 ids start as the word model's.  (
/// It was kept as bytes, with a `HashSet` of byte vectors for "in it", two allocations and a
/// SipHash per token added, and the word model's vocabulary was cloned: 7.5 M of the 12.8 M
/// instructions of phase 2 on taylorswift.txt at 5,000.  A regular merge's token is the one
/// phase 1 made, [`WordModel::made`]: finding it by its bytes was another 0.5 M.)
fn train_floored(
    word: &WordModel,
    vocab: Vocab,
    candidates: CutCandidates,
    floor: u64,
    control: &dyn Control,
) -> Result<Boundless> {
    let target = word.order.len();
    // phase-2 token ids start as the word model's, so candidates need no translation
    let mut phase2_vocab = vocab;
    let mut state =
        MergeState::try_with_wholeness(candidates.iter(), &phase2_vocab)?.with_floor(floor, &phase2_vocab);
    let CutCandidates { segments, alone, .. } = candidates;
    drop(segments);
    let mut order: Vec<TokenId> = (0..BASE_VOCAB as TokenId).collect();
    let mut is_super = vec![false; order.len()];
    let mut known = vec![false; phase2_vocab.len()];
    known[..BASE_VOCAB].fill(true);
    let mut supermerges: Vec<TrainMerge> = Vec::new();
    let mut used = 0; // regular merges replayed so far
    let mut deleted = 0; // deletions replayed so far
    let add = |id: TokenId,
               sup: bool,
               known: &mut Vec<bool>,
               order: &mut Vec<TokenId>,
               is_super: &mut Vec<bool>| {
        let i = id as usize;
        if i >= known.len() {
            known.resize(i + 1, false);
        }
        if !known[i] {
            known[i] = true;
            order.push(id);
            is_super.push(sup);
        }
    };
    // the word model's deletions come right after the merge they followed in phase 1: a
    // deletion's index is the number of operations (merges and deletions) before it
    let replay_deletions = |used: usize,
                            deleted: &mut usize,
                            known: &mut Vec<bool>,
                            order: &mut Vec<TokenId>,
                            is_super: &mut Vec<bool>| {
        while let Some(&(index, t)) = word.deletions.get(*deleted) {
            if index != used + *deleted {
                break;
            }
            if std::mem::replace(&mut known[t as usize], false) {
                let k = order
                    .iter()
                    .position(|&x| x == t)
                    .expect("known tokens are in the vocabulary");
                order.remove(k);
                is_super.remove(k);
            }
            *deleted += 1;
        }
    };
    while order.len() < target {
        replay_deletions(used, &mut deleted, &mut known, &mut order, &mut is_super);
        let regular_count = word.merges.get(used).map_or(-1, |m| m.count as i128);
        match state.best(&phase2_vocab) {
            // strictly: ties go to the regular merge
            Some((pair, count)) if count as i128 > regular_count => {
                let (merge, id) = state.merge_pair(&mut phase2_vocab, pair, count);
                supermerges.push(merge);
                add(id, true, &mut known, &mut order, &mut is_super);
            }
            _ if used < word.merges.len() => {
                add(word.made[used], false, &mut known, &mut order, &mut is_super);
                used += 1;
                replay_deletions(used, &mut deleted, &mut known, &mut order, &mut is_super);
            }
            _ => break, // unreachable with target = the word model's size (see above)
        }
        if order.len() % 256 == 0 {
            control.progress(
                "phase2",
                (order.len() - BASE_VOCAB) as u64,
                (target - BASE_VOCAB) as u64,
            )?;
        }
    }
    control.progress(
        "phase2",
        (order.len() - BASE_VOCAB) as u64,
        (target - BASE_VOCAB) as u64,
    )?;
    let mut counts = state.token_counts(phase2_vocab.len());
    for (t, w) in alone.into_iter().enumerate() {
        counts[t] += w;
    }
    Ok(Boundless {
        used,
        deletions_used: deleted,
        supermerges,
        phase2_vocab,
        order,
        is_super,
        counts,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::control::Silent;
    use crate::train::candidates::CutCandidates;
    use crate::train::candidates::{cut, Candidates, Cutting, Threshold};
    use rustc_hash::FxHashMap;

    fn same(a: &Boundless, b: &Boundless) -> bool {
        a.used == b.used
            && a.supermerges == b.supermerges
            && a.order
                .iter()
                .map(|&t| a.phase2_vocab.bytes(t))
                .eq(b.order.iter().map(|&t| b.phase2_vocab.bytes(t)))
            && a.is_super == b.is_super
            && a.counts == b.counts
    }

    /// A random word model for phase 2's tests: 12 one-letter "words" (their ids are the
    /// second value) and up to 12 merges of two of them, counted downwards; with `picky`,
    /// PickyBPE deletions of tokens made so far, and counts that need not fall.
    pub(crate) fn random_word_model(rng: &mut crate::XorShift, picky: bool) -> (WordModel, Vec<u32>) {
        let mut vocab = Vocab::base();
        let letters: Vec<u32> = (b'a'..=b'l').map(|b| vocab.id(&[b]).unwrap()).collect();
        let (mut merges, mut made) = (Vec::new(), Vec::new());
        let mut order: Vec<u32> = (0..vocab.len() as u32).collect();
        let mut deletions: Vec<(usize, u32)> = Vec::new();
        let mut count = 40 + rng.below(40);
        for _ in 0..rng.below(12) + 1 {
            let (l, r) = (letters[rng.below(12) as usize], letters[rng.below(12) as usize]);
            let bytes = [vocab.bytes(l), vocab.bytes(r)].concat();
            let (id, _) = vocab.add(&bytes);
            made.push(id);
            merges.push(TrainMerge {
                pair: (l, r),
                count,
                flag: false,
            });
            if !order.contains(&id) {
                order.push(id);
            }
            if picky && rng.below(3) == 0 {
                // delete a token made so far
                let made: Vec<u32> = order[BASE_VOCAB..].to_vec();
                let t = made[rng.below(made.len() as u64) as usize];
                deletions.push((merges.len() + deletions.len(), t));
                order.retain(|&x| x != t);
            }
            if picky {
                count = 20 + rng.below(60);
            } else {
                count -= rng.below(count / 3 + 1).min(count - 1);
            }
        }
        let word = WordModel {
            merges,
            made,
            order,
            vocab,
            deletions,
            counts: Vec::new(),
            single: None,
        };
        (word, letters)
    }

    /// Up to `most` random candidates of 2 to `longest + 1` of the first `kinds` letters,
    /// each counted 1 to `weight` times.
    pub(crate) fn random_candidates(
        rng: &mut crate::XorShift,
        letters: &[u32],
        most: u64,
        longest: u64,
        kinds: u64,
        weight: u64,
    ) -> Candidates {
        let mut candidates: FxHashMap<Box<[u32]>, u64> = FxHashMap::default();
        for _ in 0..rng.below(most) + 1 {
            let len = 2 + rng.below(longest) as usize;
            let seq: Box<[u32]> = (0..len).map(|_| letters[rng.below(kinds) as usize]).collect();
            *candidates.entry(seq).or_insert(0) += 1 + rng.below(weight);
        }
        candidates.into_iter().collect()
    }

    #[test]
    fn cutting_never_changes_the_result() {
        let mut rng = crate::XorShift(0x9E37_79B9_7F4A_7C15);
        for round in 0..600 {
            // odd rounds add PickyBPE deletions, whose merge counts need not fall
            let (word, letters) = random_word_model(&mut rng, round % 2 == 1);
            let candidates = random_candidates(&mut rng, &letters, 40, 7, 5 + round % 7, 9);
            let n = word.vocab.len();
            let threshold = word.min_merge_count().unwrap();
            // (tests' filters have few counters, so that `Filtered` leaves many weak pairs uncut)
            let cutting = [Cutting::Exact, Cutting::Filtered][(round % 4 / 2) as usize];
            let with_cut = train_boundless(
                &word,
                word.vocab.clone(),
                cut(&candidates, Threshold::At(threshold), n, cutting).unwrap(),
                &Silent,
            )
            .unwrap();
            // (exact: neither cut nor floored)
            let without = train_floored(
                &word,
                word.vocab.clone(),
                CutCandidates::uncut(candidates),
                0,
                &Silent,
            )
            .unwrap();
            assert!(same(&with_cut, &without), "round {round}");
            assert_eq!(with_cut.deletions_used, without.deletions_used);
        }
    }
}
