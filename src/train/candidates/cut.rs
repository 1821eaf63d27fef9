//! Cutting candidates into segments before phase 2, at the places where a pair too weak to
//! win stands (see `boundless.rs` for why it is exact), written once for both sources of
//! candidates: the letter runs themselves, or a list of candidates.  The strong pairs are
//! found through a filter of counters ([`PairFilter`]) rather than a table of every pair.

use rayon::prelude::*;

use rustc_hash::FxBuildHasher;

use super::{add_up, aggregate, flatten, CutCandidates, ListSource, Source, Table};
use crate::count::Runs;
use crate::error::Result;
use crate::tokens::TokenId;

/// Cut candidates into segments for phase 2 (see [`cut_source`]).
pub fn cut(
    candidates: &[(Box<[TokenId]>, u64)],
    threshold: Threshold,
    n_tokens: usize,
    cutting: Cutting,
) -> Result<CutCandidates> {
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
        cutting,
    )
}

/// Stage 3 for BoundlessBPE without the greedy split: the candidates of the letter runs, cut
/// straight into segments.  The same result as [`supermerge_candidates`] then [`cut`], without
/// building the table of uncut candidates (a large one on big corpora).
pub fn cut_runs(
    runs: Runs,
    token_of: &[Option<TokenId>],
    threshold: Threshold,
    n_tokens: usize,
    cutting: Cutting,
) -> Result<CutCandidates> {
    let flat = flatten(runs, token_of);
    cut_source(&flat[..], threshold, n_tokens, cutting)
}

/// A pair as one hash key.
#[inline]
pub(super) fn pair_key(a: TokenId, b: TokenId) -> u64 {
    (a as u64) << 32 | b as u64
}

/// A [`PairFilter`] has at most 2**`FILTER_BITS` counters per part of the source
/// (4 MB).  More counters let fewer weak pairs through but stay less in cache: at 100 MB of
/// Gutenberg, 32,768 (threshold 44), 2**20 counters let 60,509 pairs through and took
/// 0.37-0.46 s of the pair step, 2**22 let 38,907 through and took 0.83-1.07 s (one thread,
/// three interleaved runs each; 2**19 and 2**21 were no better than 2**20).
pub(super) const FILTER_BITS: u32 = 20;

/// The filter's size for `source`: 2**[`FILTER_BITS`] counters, or fewer for a small source,
/// at least four per token (so per pair occurrence).  (The 4 MB filter was zeroed
/// for the few tens of thousands of pair occurrences of a small training, 4.7 M
/// instructions of `memset` per cut on taylorswift.txt, and as many fresh pages.)
pub(super) fn filter_bits<S: Source + ?Sized>(source: &S) -> u32 {
    let room = (source.tokens().max(1) * 4).next_power_of_two();
    room.trailing_zeros().clamp(FEWEST_BITS, FILTER_BITS)
}

/// A [`PairFilter`] has at least 2**`FEWEST_BITS` counters.  (Few in tests, so that pairs
/// share counters and weak ones pass.)
pub(super) const FEWEST_BITS: u32 = if cfg!(test) { 3 } else { 10 };

/// The two counters of a pair in a filter of 2**`bits` counters.
#[inline]
pub(super) fn filter_slots(key: u64, bits: u32) -> (usize, usize) {
    let shift = 64 - bits;
    let a = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift;
    let b = (key ^ key >> 29).wrapping_mul(0xD6E8_FEB8_6659_FD93) >> shift;
    (a as usize, b as usize)
}

/// A summary of how often each pair of two different tokens occurs in a source, from which
/// most weak pairs (occurring at most `threshold` times) can be told apart without counting
/// them exactly.
///
/// Counting every pair exactly took a hash table of millions of pairs, almost all of them
/// weak (100 MB of Gutenberg, 32,768: ~37,000 strong ones), a cache miss per pair occurrence
/// and the table's growth (0.43-0.57 s of BoundlessBPE's stage 3 on one thread from a count
/// file, and most of its 0.9-1.5 s of system time: fresh pages for the table).  So each pair
/// adds its count to two counters chosen by two hashes, in a fixed array per part of the
/// source (counters only add, saturating, so each one is at least the count of any pair that
/// maps to it).  A pair whose two counters are both above `threshold` may be strong; any other
/// is weak for certain.  What is kept is a bit per counter, set when it is above the
/// threshold: 128 KB for 2**20 counters, which stays in cache where the 4 MB of counters did
/// not.  (Reading the bits instead of the counters made the exact pass of
/// [`strong_pairs`] and the cut's look-ups cheaper; see [`cut_source`].)
pub(super) struct PairFilter {
    bits: u32,
    /// the threshold the bits were set for
    threshold: u64,
    /// a bit per counter, set when it is above the threshold; `None` when the threshold is
    /// beyond what a counter holds (every pair may then be strong)
    above: Option<Vec<u64>>,
}

impl PairFilter {
    pub(super) fn new<S: Source + ?Sized>(source: &S, threshold: Threshold, bits: u32) -> PairFilter {
        // (a counter cannot exceed u32::MAX: above that threshold, the filter tells nothing)
        if let Threshold::At(t) = threshold {
            if t >= u32::MAX as u64 {
                return PairFilter {
                    bits,
                    threshold: t,
                    above: None,
                };
            }
        }
        let parts: Vec<Vec<u32>> = (0..source.parts())
            .into_par_iter()
            .map(|part| {
                let mut counters = vec![0u32; 1 << bits];
                source.for_each(part, |tokens, count| {
                    let c = count.min(u32::MAX as u64) as u32;
                    for w in tokens.windows(2) {
                        if w[0] != w[1] {
                            let (a, b) = filter_slots(pair_key(w[0], w[1]), bits);
                            counters[a] = counters[a].saturating_add(c);
                            counters[b] = counters[b].saturating_add(c);
                        }
                    }
                });
                counters
            })
            .collect();
        let mut parts = parts.into_iter();
        let mut sum = parts.next().unwrap_or_else(|| vec![0u32; 1 << bits]);
        let rest: Vec<Vec<u32>> = parts.collect();
        if !rest.is_empty() {
            sum.par_chunks_mut(1 << 16).enumerate().for_each(|(k, chunk)| {
                let range = k << 16..(k << 16) + chunk.len();
                for other in &rest {
                    for (x, &y) in chunk.iter_mut().zip(&other[range.clone()]) {
                        *x = x.saturating_add(y);
                    }
                }
            });
        }
        drop(rest);
        let threshold = match threshold {
            Threshold::At(t) => t,
            Threshold::Guess(n) => guess(sum.clone(), n),
        };
        let mut above = vec![0u64; sum.len().div_ceil(64)];
        for (word, counters) in above.iter_mut().zip(sum.chunks(64)) {
            for (i, &c) in counters.iter().enumerate() {
                *word |= ((c as u64 > threshold) as u64) << i;
            }
        }
        PairFilter {
            bits,
            threshold,
            above: Some(above),
        }
    }

    /// Whether the pair `a`, `b` (two different tokens) may occur more than the threshold
    /// times: `false` only for a weak pair.
    #[inline]
    pub(super) fn may_be_strong(&self, a: TokenId, b: TokenId) -> bool {
        let Some(above) = &self.above else { return true };
        let (x, y) = filter_slots(pair_key(a, b), self.bits);
        (above[x >> 6] >> (x & 63)) & (above[y >> 6] >> (y & 63)) & 1 != 0
    }
}

/// The pairs of two different tokens that occur more than the threshold of `filter` times in
/// `source`, as [`pair_key`]s: those that pass the filter, counted exactly in a small table.
/// The result is the exact set whatever the filter's collisions: they only let more pairs
/// into the count.
pub(super) fn strong_pairs<S: Source + ?Sized>(
    source: &S,
    filter: &PairFilter,
) -> hashbrown::HashSet<u64, FxBuildHasher> {
    let tables: Vec<Table<u64, u64>> = (0..source.parts())
        .into_par_iter()
        .map(|part| {
            let mut map: Table<u64, u64> = Table::default();
            source.for_each(part, |tokens, count| {
                for w in tokens.windows(2) {
                    if w[0] != w[1] && filter.may_be_strong(w[0], w[1]) {
                        *map.entry(pair_key(w[0], w[1])).or_insert(0) += count;
                    }
                }
            });
            map
        })
        .collect();
    add_up(tables, |a, b| *a += b)
        .into_iter()
        .filter(|&(_, c)| c > filter.threshold)
        .map(|(key, _)| key)
        .collect()
}

/// The threshold to cut at: given, or guessed for `n` supermerges ([`guess`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    At(u64),
    Guess(usize),
}

/// A threshold for `n` supermerges, from a pair filter's `counters`: three quarters of the
/// `4n`-th largest counter.  A counter holds about one strong pair's count (and the noise of
/// weak pairs), each pair two counters, so that is about three quarters of the count of the
/// `2n`-th most frequent pair: most supermerges count more.  (The guess
/// was four times the smallest regular merge's count, which does not follow the
/// supermerges: 100 MB of Gutenberg cut at
/// 196 for a 2,048th supermerge counting 380 at 32,768, at 12 for 106 at 131,072, and at
/// 1,804 for 1,300 at 8,192, a miss and a second cut.  The `4n`-th counter was 373, 116 and
/// 1,160 there, within a tenth of the `n`-th supermerge's count each time, so half of it
/// leaves a margin of about two.  On the multilingual samples (de, ja, km, lo, my, ru, th, zh
/// at 8,192, 16,384 and 32,768, with 1,024, 512 and 4,096 supermerges) the `n`-th
/// supermerge counted 1.25 to 3 times the `4n`-th counter: no miss there either.  A cut at
/// 100 instead of 58 at 131,072 would save a quarter of phase 2 on Gutenberg, but with too
/// little margin for the next corpus.  A miss costs a second cut, lower, never the model.)
///
/// Three quarters instead of half, from the ratio of the `n`-th supermerge's count
/// to the `4n`-th counter over 62 trainings, 47 of which made a guess (two threads; the others
/// had too few candidates, or phase 1 ran out of pairs): the 11 multilingual samples at
/// 8,192 (512 and 1,024 supermerges), 16,384 (1,024) and 32,768 (2,048 and 4,096), 1.25 to
/// 3.0 wherever a guess was made; Gutenberg, 20 MB at 8,192 to 131,072 (512 to 16,384
/// supermerges) and 100 MB at 8,192 to 262,144, 1.15 falling with the vocabulary to 0.87
/// (100 MB, 262,144, 16,384 supermerges).  A cut at three quarters misses below 0.75, a
/// margin of 1.16 at the lowest.  Phase 2 at 100 MB, two threads, medians of three
/// interleaved runs: 32,768 0.414 -> 0.336 s, 131,072 0.933 -> 0.726 s.  A miss made on
/// purpose (a first cut at four times the counter, 32,768) took phase 2 0.454 -> 0.588 s.
pub(super) fn guess(mut counters: Vec<u32>, n: usize) -> u64 {
    if counters.is_empty() {
        return 0;
    }
    let k = n.saturating_mul(4).min(counters.len() - 1);
    let (_, &mut kth, _) = counters.select_nth_unstable_by(k, |a, b| b.cmp(a));
    kth as u64 * 3 / 4
}

/// Where [`cut_source`] cuts the candidates: at every pair of two different tokens that
/// occurs at most `threshold` times (`Exact`), or only at those that the [`PairFilter`] alone
/// shows to be weak (`Filtered`: a pass over the candidates less, for segments that hold a
/// few more pairs).  Both give the same model: a weak pair never wins while the best pair
/// counts more than the threshold, and no token made meanwhile can span a place where one
/// stands (the pair of such a token and its neighbour occurs only where the weak pair does),
/// so cutting at any of those places is exact, cutting at all of them only the cheapest for
/// phase 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cutting {
    Exact,
    Filtered,
}

/// Cut every candidate of `source` where two different tokens meet whose pair occurs at most
/// `threshold` times in all candidates (all such places, or those the filter finds; see
/// [`Cutting`]).
pub(super) fn cut_source<S: Source + ?Sized>(
    source: &S,
    threshold: Threshold,
    n_tokens: usize,
    cutting: Cutting,
) -> Result<CutCandidates> {
    // 1. which pairs may be strong (few: the filter's bits, or the exact set of strong pairs,
    // stay in cache for step 2)
    let filter = PairFilter::new(source, threshold, filter_bits(source));
    let threshold = filter.threshold;
    match cutting {
        Cutting::Exact => {
            let strong = strong_pairs(source, &filter);
            drop(filter);
            cut_where(source, threshold, n_tokens, |a, b| {
                !strong.contains(&pair_key(a, b))
            })
        }
        Cutting::Filtered => cut_where(source, threshold, n_tokens, |a, b| !filter.may_be_strong(a, b)),
    }
}

/// Step 2 of [`cut_source`]: cut every candidate where two different tokens meet that `weak`
/// says to cut at, part by part in parallel, and add the segments up; a token standing alone
/// only adds to its count.  `threshold` is the one `weak` was made for (recorded in the
/// result).
pub(super) fn cut_where<S: Source + ?Sized>(
    source: &S,
    threshold: u64,
    n_tokens: usize,
    weak: impl Fn(TokenId, TokenId) -> bool + Sync,
) -> Result<CutCandidates> {
    let shards = rayon::current_num_threads().max(1);
    let (lists, alone) = aggregate(
        source,
        shards,
        || vec![0u64; n_tokens],
        |tokens, count, alone, emit| {
            let mut start = 0;
            for i in 1..=tokens.len() {
                if i == tokens.len() || tokens[i - 1] != tokens[i] && weak(tokens[i - 1], tokens[i]) {
                    if i - start == 1 {
                        alone[tokens[start] as usize] += count;
                    } else {
                        emit(&tokens[start..i], i - start == tokens.len(), count);
                    }
                    start = i;
                }
            }
        },
    )?;
    let mut total = vec![0u64; n_tokens];
    for a in alone {
        for (x, y) in total.iter_mut().zip(a) {
            *x += y;
        }
    }
    Ok(CutCandidates {
        segments: lists,
        alone: total,
        threshold,
    })
}
