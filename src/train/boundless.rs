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

use rayon::prelude::*;
use rustc_hash::FxHashMap;

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

/// Counts of pairs of two different tokens over the candidates.
fn distinct_pair_counts(candidates: &[(Box<[TokenId]>, u64)]) -> Vec<FxHashMap<(TokenId, TokenId), u64>> {
    let shards = rayon::current_num_threads().max(1);
    (0..shards)
        .into_par_iter()
        .map(|k| {
            let mut map: FxHashMap<(TokenId, TokenId), u64> = FxHashMap::default();
            for (seq, w) in candidates {
                for p in seq.windows(2) {
                    if p[0] != p[1] && (p[0] as usize ^ p[1] as usize) % shards == k {
                        *map.entry((p[0], p[1])).or_insert(0) += w;
                    }
                }
            }
            map
        })
        .collect()
}

/// The candidates cut where a pair of different tokens occurs at most `threshold` times:
/// pieces of two or more tokens (aggregated, with "is a whole candidate"), and the weight of
/// each token standing alone as a one-token piece.
#[allow(clippy::type_complexity)]
fn cut(
    candidates: &[(Box<[TokenId]>, u64)],
    threshold: u64,
    n_tokens: usize,
) -> (Vec<(Box<[TokenId]>, u64, bool)>, Vec<u64>) {
    let counts = distinct_pair_counts(candidates);
    let shards = counts.len();
    let weak = |a: TokenId, b: TokenId| {
        a != b && counts[(a as usize ^ b as usize) % shards].get(&(a, b)).is_none_or(|&c| c <= threshold)
    };
    let cut_part = |part: &[(Box<[TokenId]>, u64)]| {
        let mut pieces: FxHashMap<(Box<[TokenId]>, bool), u64> = FxHashMap::default();
        let mut alone = vec![0u64; n_tokens];
        for (seq, w) in part {
            let mut start = 0;
            for i in 1..=seq.len() {
                if i == seq.len() || weak(seq[i - 1], seq[i]) {
                    let piece = &seq[start..i];
                    if piece.len() == 1 {
                        alone[piece[0] as usize] += w;
                    } else {
                        let whole = piece.len() == seq.len();
                        *pieces.entry((piece.into(), whole)).or_insert(0) += w;
                    }
                    start = i;
                }
            }
        }
        (pieces, alone)
    };
    let per = candidates.len().div_ceil(shards).max(1);
    let (pieces, alone) = candidates
        .par_chunks(per)
        .map(cut_part)
        .reduce(
            || (FxHashMap::default(), vec![0u64; n_tokens]),
            |(mut a, mut a_alone), (b, b_alone)| {
                if a.len() < b.len() {
                    return merge_into(b, b_alone, a, a_alone);
                }
                for (k, w) in b {
                    *a.entry(k).or_insert(0) += w;
                }
                for (x, y) in a_alone.iter_mut().zip(b_alone) {
                    *x += y;
                }
                (a, a_alone)
            },
        );
    (pieces.into_iter().map(|((s, whole), w)| (s, w, whole)).collect(), alone)
}

type Pieces = FxHashMap<(Box<[TokenId]>, bool), u64>;

fn merge_into(mut big: Pieces, mut big_alone: Vec<u64>, small: Pieces, small_alone: Vec<u64>) -> (Pieces, Vec<u64>) {
    for (k, w) in small {
        *big.entry(k).or_insert(0) += w;
    }
    for (x, y) in big_alone.iter_mut().zip(small_alone) {
        *x += y;
    }
    (big, big_alone)
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
    // phase-2 token ids start as the word model's, so candidates need no translation
    let mut tokens = word_tokens.clone();
    let threshold = word_merges.last().map(|m| m.count).filter(|_| allow_cut);
    let (mut state, alone) = match threshold {
        Some(t) => {
            let (pieces, alone) = cut(&candidates, t, tokens.len());
            (MergeState::with_pieces(pieces.iter().map(|(s, w, whole)| (&s[..], *w, *whole)), &tokens), alone)
        }
        None => (MergeState::new(candidates.iter().map(|(s, w)| (&s[..], *w)), &tokens), Vec::new()),
    };
    drop(candidates);
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
                add([word_tokens.bytes(l), word_tokens.bytes(r)].concat(), false, &mut vocab);
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
    Ok(Boundless { used, supermerges, phase2_tokens: tokens, vocab, counts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::Silent;

    /// A small deterministic generator (xorshift), so the test needs no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn same(a: &Boundless, b: &Boundless) -> bool {
        a.used == b.used && a.supermerges == b.supermerges && a.vocab == b.vocab && a.counts == b.counts
    }

    #[test]
    fn cutting_never_changes_the_result() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..300 {
            // pretoken-level tokens: 12 one-letter "words" plus their pairs as regular tokens
            let mut tokens = Tokens::base();
            let letters: Vec<TokenId> = (b'a'..=b'l').map(|b| tokens.id(&[b]).unwrap()).collect();
            let mut merges = Vec::new();
            let mut count = 40 + rng.next(40);
            for _ in 0..rng.next(12) + 1 {
                let (l, r) = (letters[rng.next(12) as usize], letters[rng.next(12) as usize]);
                let bytes = [tokens.bytes(l), tokens.bytes(r)].concat();
                tokens.add(&bytes);
                merges.push(TrainMerge { pair: (l, r), count, flag: false });
                count -= rng.next(count / 3 + 1).min(count - 1);
            }
            let mut candidates: FxHashMap<Box<[TokenId]>, u64> = FxHashMap::default();
            for _ in 0..rng.next(40) + 1 {
                let len = 2 + rng.next(7) as usize;
                let seq: Box<[TokenId]> = (0..len).map(|_| letters[rng.next(5 + round % 7) as usize]).collect();
                *candidates.entry(seq).or_insert(0) += 1 + rng.next(9);
            }
            let candidates: Vec<(Box<[TokenId]>, u64)> = candidates.into_iter().collect();
            let target = tokens.len();
            let with_cut = train(&tokens, &merges, target, candidates.clone(), &Silent, true).unwrap();
            let without = train(&tokens, &merges, target, candidates, &Silent, false).unwrap();
            assert!(same(&with_cut, &without), "round {round}");
        }
    }
}
