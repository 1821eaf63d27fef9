//! Supermerge candidates (SPEC section 3): the letter runs collected while counting, cut at
//! pretokens that are not eligible (not a reachable word token), as `reference/candidates.py`.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::TokenId;

/// `runs`: per counting table, its pretoken id -> word index map and its runs with counts;
/// `token_of[word index]`: the word-model token the pretoken is, when it is eligible.
/// Returns candidates as token sequences.
pub fn supermerge_candidates(
    runs: &[(Vec<u32>, FxHashMap<Box<[u32]>, u64>)],
    token_of: &[Option<TokenId>],
) -> FxHashMap<Box<[TokenId]>, u64> {
    // each counting table's runs are cut in parallel; the tables' candidates are then added up
    runs.par_iter()
        .map(|(remap, table)| {
            let mut out: FxHashMap<Box<[TokenId]>, u64> = FxHashMap::default();
            let mut piece: Vec<TokenId> = Vec::new();
            let mut flush = |piece: &mut Vec<TokenId>, count: u64| {
                if piece.len() >= 2 {
                    *out.entry(piece.as_slice().into()).or_insert(0) += count;
                }
                piece.clear();
            };
            for (run, count) in table {
                for &pretoken in run.iter() {
                    match token_of[remap[pretoken as usize] as usize] {
                        Some(t) => piece.push(t),
                        None => flush(&mut piece, *count),
                    }
                }
                flush(&mut piece, *count);
            }
            out
        })
        .reduce(FxHashMap::default, |a, b| {
            let (mut big, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
            for (k, w) in small {
                *big.entry(k).or_insert(0) += w;
            }
            big
        })
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
pub fn cut(
    candidates: &[(Box<[TokenId]>, u64)],
    threshold: u64,
    n_tokens: usize,
) -> (Vec<(Box<[TokenId]>, u64, bool)>, Vec<u64>) {
    let counts = distinct_pair_counts(candidates);
    let shards = counts.len();
    let weak = |a: TokenId, b: TokenId| {
        a != b
            && counts[(a as usize ^ b as usize) % shards]
                .get(&(a, b))
                .is_none_or(|&c| c <= threshold)
    };
    let cut_part = |part: &[(Box<[TokenId]>, u64)]| {
        let mut pieces: FxHashMap<(Box<[TokenId]>, bool), u64> = FxHashMap::default();
        let mut alone = vec![0u64; n_tokens];
        for (seq, w) in part {
            cut_one(seq, *w, &weak, &mut pieces, &mut alone);
        }
        (pieces, alone)
    };
    let per = candidates.len().div_ceil(shards).max(1);
    let (pieces, alone) = candidates.par_chunks(per).map(cut_part).reduce(
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
    (
        pieces.into_iter().map(|((s, whole), w)| (s, w, whole)).collect(),
        alone,
    )
}

type Pieces = FxHashMap<(Box<[TokenId]>, bool), u64>;

fn merge_into(
    mut big: Pieces,
    mut big_alone: Vec<u64>,
    small: Pieces,
    small_alone: Vec<u64>,
) -> (Pieces, Vec<u64>) {
    for (k, w) in small {
        *big.entry(k).or_insert(0) += w;
    }
    for (x, y) in big_alone.iter_mut().zip(small_alone) {
        *x += y;
    }
    (big, big_alone)
}

/// Cut one candidate where `weak` says so: pieces of two or more tokens are added to `pieces`
/// (with "is the whole candidate"), single tokens to `alone`.
fn cut_one(
    seq: &[TokenId],
    w: u64,
    weak: &impl Fn(TokenId, TokenId) -> bool,
    pieces: &mut FxHashMap<(Box<[TokenId]>, bool), u64>,
    alone: &mut [u64],
) {
    let mut start = 0;
    for i in 1..=seq.len() {
        if i == seq.len() || weak(seq[i - 1], seq[i]) {
            let piece = &seq[start..i];
            if piece.len() == 1 {
                alone[piece[0] as usize] += w;
            } else {
                *pieces
                    .entry((piece.into(), piece.len() == seq.len()))
                    .or_insert(0) += w;
            }
            start = i;
        }
    }
}

/// Candidates straight from the letter runs, already cut for BoundlessBPE's phase 2: the same
/// result as [`supermerge_candidates`] followed by [`cut`], without building the uncut
/// candidates (a large table on big corpora).  A run is cut at pretokens that are not
/// eligible (which makes the candidates) and where two different tokens meet whose pair
/// occurs at most `threshold` times in all candidates.
#[allow(clippy::type_complexity)]
pub fn cut_runs(
    runs: &[(Vec<u32>, FxHashMap<Box<[u32]>, u64>)],
    token_of: &[Option<TokenId>],
    threshold: u64,
    n_tokens: usize,
) -> (Vec<(Box<[TokenId]>, u64, bool)>, Vec<u64>) {
    // 1. pair counts over the candidates, one shard of pairs per thread
    let shards = rayon::current_num_threads().max(1);
    let counts: Vec<FxHashMap<(TokenId, TokenId), u64>> = (0..shards)
        .into_par_iter()
        .map(|k| {
            let mut map: FxHashMap<(TokenId, TokenId), u64> = FxHashMap::default();
            for (remap, table) in runs {
                for (run, w) in table {
                    let mut prev: Option<TokenId> = None;
                    for &p in run.iter() {
                        let t = token_of[remap[p as usize] as usize];
                        if let (Some(a), Some(b)) = (prev, t) {
                            if a != b && (a as usize ^ b as usize) % shards == k {
                                *map.entry((a, b)).or_insert(0) += w;
                            }
                        }
                        prev = t;
                    }
                }
            }
            map
        })
        .collect();
    let weak = |a: TokenId, b: TokenId| {
        a != b
            && counts[(a as usize ^ b as usize) % shards]
                .get(&(a, b))
                .is_none_or(|&c| c <= threshold)
    };
    // 2. cut every run, per counting table in parallel, and add the pieces up
    type Pieces = FxHashMap<(Box<[TokenId]>, bool), u64>;
    let parts: Vec<(Pieces, Vec<u64>)> = runs
        .par_iter()
        .map(|(remap, table)| {
            let mut pieces: Pieces = FxHashMap::default();
            let mut alone = vec![0u64; n_tokens];
            let mut segment: Vec<TokenId> = Vec::new();
            let emit = |segment: &mut Vec<TokenId>, w: u64, pieces: &mut Pieces, alone: &mut [u64]| {
                if segment.len() >= 2 {
                    cut_one(segment, w, &weak, pieces, alone);
                }
                segment.clear();
            };
            for (run, w) in table {
                for &p in run.iter() {
                    match token_of[remap[p as usize] as usize] {
                        Some(t) => segment.push(t),
                        None => emit(&mut segment, *w, &mut pieces, &mut alone),
                    }
                }
                emit(&mut segment, *w, &mut pieces, &mut alone);
            }
            (pieces, alone)
        })
        .collect();
    let mut all: Pieces = FxHashMap::default();
    let mut alone = vec![0u64; n_tokens];
    for (pieces, a) in parts {
        if all.is_empty() {
            all = pieces;
        } else {
            for (k, w) in pieces {
                *all.entry(k).or_insert(0) += w;
            }
        }
        for (x, y) in alone.iter_mut().zip(a) {
            *x += y;
        }
    }
    (
        all.into_iter().map(|((s, whole), w)| (s, w, whole)).collect(),
        alone,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_runs_directly_equals_building_then_cutting_candidates() {
        let mut rng = crate::XorShift(0x0DDB_1A5E_5BAD_5EEDu64);
        let mut next = |n: u64| rng.below(n);
        for round in 0..100 {
            // two counting tables with their own pretoken ids, and random eligibility
            let words = 12usize;
            let token_of: Vec<Option<TokenId>> = (0..words)
                .map(|w| {
                    if next(5) == 0 {
                        None
                    } else {
                        Some(300 + (w % 7) as TokenId)
                    }
                })
                .collect();
            let runs: Vec<(Vec<u32>, FxHashMap<Box<[u32]>, u64>)> = (0..2)
                .map(|_| {
                    let remap: Vec<u32> = (0..words as u32).map(|_| next(words as u64) as u32).collect();
                    let mut table: FxHashMap<Box<[u32]>, u64> = FxHashMap::default();
                    for _ in 0..next(30) + 1 {
                        let run: Box<[u32]> = (0..2 + next(8)).map(|_| next(words as u64) as u32).collect();
                        *table.entry(run).or_insert(0) += 1 + next(5);
                    }
                    (remap, table)
                })
                .collect();
            let threshold = next(6) + round % 3;
            let candidates: Vec<(Box<[TokenId]>, u64)> =
                supermerge_candidates(&runs, &token_of).into_iter().collect();
            let sorted = |(mut p, a): (Vec<(Box<[TokenId]>, u64, bool)>, Vec<u64>)| {
                p.sort();
                (p, a)
            };
            assert_eq!(
                sorted(cut(&candidates, threshold, 400)),
                sorted(cut_runs(&runs, &token_of, threshold, 400)),
                "round {round}"
            );
        }
    }
}
