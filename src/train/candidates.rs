//! Supermerge candidates (SPEC section 3), as `reference/candidates.py`: the letter runs
//! collected while counting, cut at pretokens that are not eligible (not a reachable word
//! token).  Also the cutting of candidates into segments before phase 2 (see
//! `boundless.rs` for why it is safe), written once for both sources of candidates: the
//! letter runs themselves, or a list of candidates (after the greedy n-gram split).

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::count::Runs;
use crate::tokens::{Pair, TokenId};

/// Supermerge candidates: sequences of word tokens with their counts.
pub type Candidates = Vec<(Box<[TokenId]>, u64)>;

/// A part of a candidate that phase 2 works on (see [`cut`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Segment {
    pub tokens: Box<[TokenId]>,
    pub count: u64,
    /// is it the whole candidate?  Only a whole candidate that becomes one token sets a
    /// merge's flag.
    pub whole: bool,
}

/// Candidates cut into segments of two or more tokens (aggregated), and the count of each
/// token standing alone as a one-token segment (it has no pairs, but counts for SPEC 8).
#[derive(Debug, PartialEq, Eq)]
pub struct CutCandidates {
    pub segments: Vec<Segment>,
    pub alone: Vec<u64>,
}

impl CutCandidates {
    /// The candidates as they are: each one whole segment.
    pub fn uncut(candidates: Candidates) -> CutCandidates {
        CutCandidates {
            segments: candidates
                .into_iter()
                .map(|(tokens, count)| Segment {
                    tokens,
                    count,
                    whole: true,
                })
                .collect(),
            alone: Vec::new(),
        }
    }
}

/// Where candidates come from: numbered parts that can be read in parallel, each yielding
/// candidates (not aggregated: the same candidate may come several times).
trait Source: Sync {
    fn parts(&self) -> usize;
    fn for_each(&self, part: usize, f: &mut dyn FnMut(&[TokenId], u64));
}

/// The letter runs of each counting table, cut at pretokens that are not eligible.
struct RunSource<'a> {
    runs: &'a Runs,
    /// the word-model token each pretoken (index into `Counts::words`) is, when eligible
    token_of: &'a [Option<TokenId>],
}

impl Source for RunSource<'_> {
    fn parts(&self) -> usize {
        self.runs.len()
    }

    fn for_each(&self, part: usize, f: &mut dyn FnMut(&[TokenId], u64)) {
        let (remap, table) = &self.runs[part];
        let mut candidate: Vec<TokenId> = Vec::new();
        for (run, &count) in table {
            for &pretoken in run.iter() {
                match self.token_of[remap[pretoken as usize] as usize] {
                    Some(t) => candidate.push(t),
                    None => {
                        if candidate.len() >= 2 {
                            f(&candidate, count);
                        }
                        candidate.clear();
                    }
                }
            }
            if candidate.len() >= 2 {
                f(&candidate, count);
            }
            candidate.clear();
        }
    }
}

/// A list of candidates, in one chunk per thread.
struct ListSource<'a> {
    list: &'a [(Box<[TokenId]>, u64)],
    per: usize,
}

impl Source for ListSource<'_> {
    fn parts(&self) -> usize {
        self.list.len().div_ceil(self.per)
    }

    fn for_each(&self, part: usize, f: &mut dyn FnMut(&[TokenId], u64)) {
        let end = (part * self.per + self.per).min(self.list.len());
        for (tokens, count) in &self.list[part * self.per..end] {
            f(tokens, *count);
        }
    }
}

/// Stage 3: the supermerge candidates of the letter runs (`runs` from counting; `token_of`:
/// the word-model token of each pretoken, when it is eligible), added up.
pub fn supermerge_candidates(runs: &Runs, token_of: &[Option<TokenId>]) -> Candidates {
    let source = RunSource { runs, token_of };
    let tables: Vec<FxHashMap<Box<[TokenId]>, u64>> = (0..source.parts())
        .into_par_iter()
        .map(|part| {
            let mut table: FxHashMap<Box<[TokenId]>, u64> = FxHashMap::default();
            source.for_each(part, &mut |c, count| *table.entry(c.into()).or_insert(0) += count);
            table
        })
        .collect();
    add_up(tables, |a, b| *a += b).into_iter().collect()
}

/// Add up tables into the largest one; `add` merges a value into another.
fn add_up<K: std::hash::Hash + Eq, V>(
    tables: Vec<FxHashMap<K, V>>,
    add: impl Fn(&mut V, V),
) -> FxHashMap<K, V> {
    let mut tables = tables;
    let Some(biggest) = (0..tables.len()).max_by_key(|&i| tables[i].len()) else {
        return FxHashMap::default();
    };
    let mut all = tables.swap_remove(biggest);
    for table in tables {
        for (k, v) in table {
            match all.get_mut(&k) {
                Some(x) => add(x, v),
                None => {
                    all.insert(k, v);
                }
            }
        }
    }
    all
}

/// Cut candidates into segments for phase 2 (see [`cut_source`]).
pub fn cut(candidates: &[(Box<[TokenId]>, u64)], threshold: u64, n_tokens: usize) -> CutCandidates {
    let per = candidates
        .len()
        .div_ceil(rayon::current_num_threads().max(1))
        .max(1);
    cut_source(
        &ListSource {
            list: candidates,
            per,
        },
        threshold,
        n_tokens,
    )
}

/// Stage 3 for BoundlessBPE without the greedy split: the candidates of the letter runs, cut
/// straight into segments.  The same result as [`supermerge_candidates`] then [`cut`], without
/// building the table of uncut candidates (a large one on big corpora).
pub fn cut_runs(runs: &Runs, token_of: &[Option<TokenId>], threshold: u64, n_tokens: usize) -> CutCandidates {
    cut_source(&RunSource { runs, token_of }, threshold, n_tokens)
}

/// Cut every candidate of `source` where two different tokens meet whose pair occurs at most
/// `threshold` times in all candidates.
fn cut_source(source: &dyn Source, threshold: u64, n_tokens: usize) -> CutCandidates {
    // 1. counts of pairs of two different tokens, one shard of pairs per thread
    let shards = rayon::current_num_threads().max(1);
    let shard_of = |(a, b): Pair| (a as usize ^ b as usize) % shards;
    let counts: Vec<FxHashMap<Pair, u64>> = (0..shards)
        .into_par_iter()
        .map(|k| {
            let mut map: FxHashMap<Pair, u64> = FxHashMap::default();
            for part in 0..source.parts() {
                source.for_each(part, &mut |tokens, count| {
                    for w in tokens.windows(2) {
                        if w[0] != w[1] && shard_of((w[0], w[1])) == k {
                            *map.entry((w[0], w[1])).or_insert(0) += count;
                        }
                    }
                });
            }
            map
        })
        .collect();
    let weak = |a: TokenId, b: TokenId| {
        a != b
            && counts[shard_of((a, b))]
                .get(&(a, b))
                .is_none_or(|&c| c <= threshold)
    };
    // 2. cut every candidate, part by part in parallel, and add the segments up
    type Segments = FxHashMap<(Box<[TokenId]>, bool), u64>;
    let parts: Vec<(Segments, Vec<u64>)> = (0..source.parts())
        .into_par_iter()
        .map(|part| {
            let mut segments: Segments = FxHashMap::default();
            let mut alone = vec![0u64; n_tokens];
            source.for_each(part, &mut |tokens, count| {
                let mut start = 0;
                for i in 1..=tokens.len() {
                    if i == tokens.len() || weak(tokens[i - 1], tokens[i]) {
                        let segment = &tokens[start..i];
                        if segment.len() == 1 {
                            alone[segment[0] as usize] += count;
                        } else {
                            let whole = segment.len() == tokens.len();
                            *segments.entry((segment.into(), whole)).or_insert(0) += count;
                        }
                        start = i;
                    }
                }
            });
            (segments, alone)
        })
        .collect();
    let mut alone = vec![0u64; n_tokens];
    let mut tables = Vec::with_capacity(parts.len());
    for (segments, a) in parts {
        for (x, y) in alone.iter_mut().zip(a) {
            *x += y;
        }
        tables.push(segments);
    }
    let segments = add_up(tables, |a, b| *a += b)
        .into_iter()
        .map(|((tokens, whole), count)| Segment { tokens, count, whole })
        .collect();
    CutCandidates { segments, alone }
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
            let runs: Runs = (0..2)
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
            let sorted = |mut c: CutCandidates| {
                c.segments.sort();
                c
            };
            let candidates = supermerge_candidates(&runs, &token_of);
            assert_eq!(
                sorted(cut(&candidates, threshold, 400)),
                sorted(cut_runs(&runs, &token_of, threshold, 400)),
                "round {round}"
            );
        }
    }
}
