//! Supermerge candidates (SPEC section 3), as `reference/candidates.py`: the letter runs
//! collected while counting, cut at pretokens that are not eligible (not a reachable word
//! token).  Also the cutting of candidates into segments before phase 2 (see
//! `boundless.rs` for why it is safe), written once for both sources of candidates: the
//! letter runs themselves, or a list of candidates (after the greedy n-gram split).
//!
//! Performance (20 MB of Gutenberg text, vocabulary 32,768, one thread; CPU-time samples of
//! `perf`): this stage was a quarter of BoundlessBPE's CPU time, and is 40% cheaper now.  It read the runs' hash tables twice (one pointer
//! and two random table lookups per pretoken, each time), boxed every candidate and segment
//! occurrence before looking it up, and tested each pair of the cut in a table of all pairs.
//! Now the runs are translated once into lists of candidates ([`flatten`], freeing each
//! counting table as it goes), the cut tests pairs in a table of the few pairs that count
//! more than the threshold, occurrences are looked up by slices of the flat arrays (only
//! distinct ones are copied), and the per-thread tables are split by hash and added up
//! shard by shard in parallel instead of into one table at the end.  At 100 MB, 32,768, the
//! pairs for the cut are no longer all counted exactly ([`strong_pairs`]: a filter of
//! counters first), and SuperBPE cuts the flat candidates instead of adding them up here
//! first ([`FlatCandidates`]).  The runs come as records back to back
//! (`crate::seqs`), read in order instead of one box each, and the segments are added up in
//! the same structure (see [`aggregate`]).

use rayon::prelude::*;
use rustc_hash::FxBuildHasher;

use crate::count::Runs;
use crate::error::Result;
use crate::seqs::{SeqCounter, SeqList, FLAG};
use crate::tokens::TokenId;

mod cut;
pub mod two_pass;

pub use cut::{cut, cut_runs, Cutting, Threshold};
use cut::{cut_source, pair_key};

/// Supermerge candidates: sequences of word tokens with their counts.
pub type Candidates = Vec<(Box<[TokenId]>, u64)>;

/// A segment as [`CutCandidates::sorted`] gives it: tokens, count, whole.
#[cfg(test)]
pub type SortedSegment = (Vec<TokenId>, u64, bool);

/// Candidates cut into segments of two or more tokens (aggregated), and the count of each
/// token standing alone as a one-token segment (it has no pairs, but counts for SPEC 8).
/// A segment is its tokens, its count, and whether it is the whole candidate (only a whole
/// candidate that becomes one token sets a merge's flag): the flag of [`SeqList`]'s records.
/// (A segment was a box of its own, made only for phase 2 to copy its tokens into
/// its own arrays; 1.6 M boxes at 100 MB/32,768, 2.6 M at 131,072.)
pub struct CutCandidates {
    /// the segments, in lists read one after the other
    pub segments: Vec<SeqList>,
    pub alone: Vec<u64>,
    /// the threshold they were cut at (see [`Threshold`]; 0: not cut)
    pub threshold: u64,
}

impl CutCandidates {
    /// The candidates as they are: each one whole segment.
    pub fn uncut(candidates: Candidates) -> CutCandidates {
        let mut list = SeqList::default();
        for (tokens, count) in &candidates {
            list.push(tokens, *count, true);
        }
        CutCandidates {
            segments: vec![list],
            alone: Vec::new(),
            threshold: 0,
        }
    }

    /// Every segment: (tokens, count, whole).
    pub fn iter(&self) -> impl Iterator<Item = (&[TokenId], u64, bool)> + Clone {
        self.segments.iter().flat_map(SeqList::iter)
    }

    /// How many segments.
    pub fn len(&self) -> usize {
        self.segments.iter().map(SeqList::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The segments sorted, and the counts alone (for tests that compare cuts).
    #[cfg(test)]
    pub fn sorted(&self) -> (Vec<SortedSegment>, Vec<u64>) {
        let mut segments: Vec<SortedSegment> = self.iter().map(|(t, c, w)| (t.to_vec(), c, w)).collect();
        segments.sort();
        (segments, self.alone.clone())
    }
}

/// Where candidates come from: numbered parts that can be read in parallel, each yielding
/// candidates (not aggregated: the same candidate may come several times) as slices that
/// live as long as the source.
trait Source: Sync {
    fn parts(&self) -> usize;
    fn for_each<'s>(&'s self, part: usize, f: impl FnMut(&'s [TokenId], u64));
    /// How many tokens all parts hold (at least the number of pair occurrences).
    fn tokens(&self) -> usize;
}

/// Marks a pretoken that is not eligible in [`flatten`]'s table (token ids are below 2**31).
const NOT_ELIGIBLE: TokenId = TokenId::MAX;

/// The letter runs of every counting table cut at pretokens that are not eligible, as
/// candidates of two or more tokens, not added up (one list per thread).  The tables are
/// read one after the other, each by all threads at once, and each is freed as a whole once
/// read: reading them side by side held every table and every flat at once, the peak memory
/// of a BoundlessBPE training (100 MB of Gutenberg, 32,768, two threads: 441-464 MB, then
/// 396-423), and the boxed runs of a table freed one by one while another was read left its
/// pages mostly in use.  A table's pages go back to the system before the next is read (see
/// `release_freed_memory`).  Each thread reads a piece of the table's records, in order.
fn flatten(runs: Runs, token_of: &[Option<TokenId>]) -> Vec<SeqList> {
    let threads = rayon::current_num_threads().max(1);
    let mut flats: Vec<SeqList> = (0..threads).map(|_| SeqList::default()).collect();
    for (remap, table) in runs {
        // one lookup per pretoken: the table's pretoken id -> eligible token
        let local: Vec<TokenId> = remap
            .par_iter()
            .with_min_len(1 << 14)
            .map(|&g| token_of[g as usize].unwrap_or(NOT_ELIGIBLE))
            .collect();
        drop(remap);
        let pieces = table.split(threads);
        flats
            .par_iter_mut()
            .zip(pieces.into_par_iter())
            .for_each(|(flat, piece)| {
                // the candidate being read, kept when it has two or more tokens
                let mut candidate: Vec<TokenId> = Vec::new();
                let mut close = |candidate: &mut Vec<TokenId>, count: u64| {
                    if candidate.len() >= 2 {
                        flat.push(candidate, count, false);
                    }
                    candidate.clear();
                };
                for (run, count, _) in piece {
                    for &pretoken in run {
                        let t = local[pretoken as usize];
                        if t != NOT_ELIGIBLE {
                            candidate.push(t);
                        } else {
                            close(&mut candidate, count);
                        }
                    }
                    close(&mut candidate, count);
                }
            });
        let n = table.len();
        drop(table);
        crate::release_freed_memory(n); // (the table's pages, before the next one's flats)
    }
    flats
}

impl Source for [SeqList] {
    fn parts(&self) -> usize {
        self.len()
    }

    fn for_each<'s>(&'s self, part: usize, mut f: impl FnMut(&'s [TokenId], u64)) {
        for (tokens, count, _) in self[part].iter() {
            f(tokens, count);
        }
    }

    fn tokens(&self) -> usize {
        self.iter().map(SeqList::ids).sum()
    }
}

/// Supermerge candidates as [`flatten`] leaves them, not added up (the same candidate may
/// come several times, from different runs or tables): what SuperBPE's phase 2 keeps for its
/// exact fallback (see `superbpe.rs`).  Pair counts and token counts are sums, so merging
/// these sequences gives the same model as merging the added-up candidates; adding them up
/// in stage 3 only to cut them again in phase 2 was a third of SuperBPE's time after
/// counting (100 MB of Gutenberg, 32,768, one thread: 1.35 s of the table and its boxes).
#[derive(Clone)]
pub struct FlatCandidates(Vec<SeqList>);

impl FlatCandidates {
    /// How many candidates (not distinct).
    pub fn len(&self) -> usize {
        self.0.iter().map(SeqList::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many tokens the candidates hold.
    pub fn tokens(&self) -> usize {
        self.0.tokens()
    }

    /// Every candidate with its count, in a fixed order.
    pub fn iter(&self) -> impl Iterator<Item = (&[TokenId], u64)> + Clone {
        self.0
            .iter()
            .flat_map(SeqList::iter)
            .map(|(tokens, count, _)| (tokens, count))
    }

    /// Cut into segments for phase 2 (see [`cut_source`]).
    pub fn cut(&self, threshold: Threshold, n_tokens: usize, cutting: Cutting) -> Result<CutCandidates> {
        cut_source(&self.0[..], threshold, n_tokens, cutting)
    }
}

/// Stage 3 for SuperBPE without the greedy split: the candidates of the letter runs, not
/// added up.
pub fn flat_candidates(runs: Runs, token_of: &[Option<TokenId>]) -> FlatCandidates {
    FlatCandidates(flatten(runs, token_of))
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

    fn for_each<'s>(&'s self, part: usize, mut f: impl FnMut(&'s [TokenId], u64)) {
        let end = (part * self.per + self.per).min(self.list.len());
        for (tokens, count) in &self.list[part * self.per..end] {
            f(tokens, *count);
        }
    }

    fn tokens(&self) -> usize {
        self.list.iter().map(|(tokens, _)| tokens.len()).sum()
    }
}

/// Which of `shards` tables a sequence of two or more tokens goes to.
#[inline]
fn shard_of_seq(tokens: &[TokenId], shards: usize) -> usize {
    if shards == 1 {
        return 0;
    }
    let h = ((tokens[0] as u64) << 32 | tokens[1] as u64 ^ (tokens.len() as u64) << 20)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 40) as usize % shards
}

/// The hash tables of this stage: hashbrown's, whose `entry` looks before it reserves room
/// (the standard map's reserves first, an out-of-line call per occurrence added up).
/// (taylorswift.txt at 5,000: BoundlessBPE's stage 3 4.2 -> 3.9 M instructions.)
type Table<K, V> = hashbrown::HashMap<K, V, FxBuildHasher>;

/// What the added-up candidates or segments are called in an error, with what to do
/// instead (each thread adds up a share of them).
const SEGMENTS: &str = "the supermerge candidates of one thread (use more threads)";

/// A shard of [`aggregate`]'s sums: keys of three or more tokens, and pairs ([`pair_key`]
/// with the flag in the top bit).
type Shard = (SeqCounter, Table<u64, u64>);

/// Aggregate what every part of `source` yields into `shards` tables (parts in parallel, each
/// with its own `init()` state), then add them up shard by shard (in parallel).  `each` calls
/// `emit(key, flag, count)` for each thing to count in one candidate.  Returns the sums, one
/// list per shard (a key with its flag once, in one of them), and the parts' states.
///
/// (The tables were hashbrown maps keyed by slices of the source, three cache
/// misses an occurrence (control bytes, slot, the key's tokens in the source); now
/// [`SeqCounter`]s, which keep the tokens in their records and load each slot ahead.
/// BoundlessBPE at 100 MB/32,768, one thread, medians of four interleaved runs: stage 3
/// 1.03 -> 0.87 s, of which adding up the segments was 0.42-0.45 s; peak RSS 330 -> 305 MB.)
/// A key of two tokens is added up in a hash table of pairs instead, its tokens
/// and flag in one word with its count beside them (a slot, no record to compare): half the
/// segments of SuperBPE's first cut are pairs (1.71 M of 3.44 M at 100 MB/32,768, cut at 186), but only
/// 16,475 distinct ones, a table that stays in cache.  SuperBPE's phase 2 at 100 MB/32,768,
/// two threads, medians of five interleaved runs: 0.380 -> 0.369 s; BoundlessBPE's peak RSS
/// 306 -> 290 MB.
fn aggregate<'s, S: Source + ?Sized, A: Send>(
    source: &'s S,
    shards: usize,
    init: impl Fn() -> A + Sync,
    each: impl Fn(&'s [TokenId], u64, &mut A, &mut dyn FnMut(&'s [TokenId], bool, u64)) + Sync,
) -> Result<(Vec<SeqList>, Vec<A>)> {
    let per_part: Vec<(Vec<Shard>, A)> = (0..source.parts())
        .into_par_iter()
        .map(|part| {
            let mut counters: Vec<Shard> = (0..shards).map(|_| Default::default()).collect();
            let mut state = init();
            source.for_each(part, |tokens, count| {
                each(tokens, count, &mut state, &mut |key, flag, c| {
                    let (seqs, pairs) = &mut counters[shard_of_seq(key, shards)];
                    if let [a, b] = *key {
                        let sum = pairs.entry(pair_key(a, b) | (flag as u64) << 63).or_insert(0);
                        // (saturating, as `SeqCounter`: counts from a count file may be anything)
                        *sum = sum.saturating_add(c);
                    } else {
                        seqs.add_soon(key, c, flag);
                    }
                });
            });
            (counters, state)
        })
        .collect();
    // transpose: shard k of every part together
    let mut by_shard: Vec<Vec<Shard>> = (0..shards).map(|_| Vec::new()).collect();
    let mut states = Vec::with_capacity(per_part.len());
    for (counters, state) in per_part {
        for (k, c) in counters.into_iter().enumerate() {
            by_shard[k].push(c);
        }
        states.push(state);
    }
    let lists = by_shard
        .into_par_iter()
        .map(|counters| {
            let (mut counters, pairs): (Vec<SeqCounter>, Vec<Table<u64, u64>>) = counters.into_iter().unzip();
            // into the largest
            let Some(biggest) = (0..counters.len()).max_by_key(|&i| counters[i].len()) else {
                return Ok(SeqList::default());
            };
            let mut all = counters.swap_remove(biggest);
            for c in counters {
                all.add_list(c.into_list(SEGMENTS)?);
            }
            let mut list = all.into_list(SEGMENTS)?;
            for (key, count) in add_up(pairs, |a, b| *a = a.saturating_add(b)) {
                let (a, b) = ((key >> 32) as u32 & !FLAG, key as u32);
                list.push(&[a, b], count, key >> 63 != 0);
            }
            Ok(list)
        })
        .collect::<Result<Vec<SeqList>>>()?;
    Ok((lists, states))
}

/// Stage 3: the supermerge candidates of the letter runs (`runs` from counting; `token_of`:
/// the word-model token of each pretoken, when it is eligible), added up.
pub fn supermerge_candidates(runs: Runs, token_of: &[Option<TokenId>]) -> Result<Candidates> {
    let flat = flatten(runs, token_of);
    let shards = rayon::current_num_threads().max(1);
    let (lists, _) = aggregate(
        &flat[..],
        shards,
        || (),
        |tokens, count, _, emit| emit(tokens, true, count),
    )?;
    let mut out = Vec::with_capacity(lists.iter().map(SeqList::len).sum());
    for list in lists {
        out.extend(list.iter().map(|(tokens, count, _)| (tokens.into(), count)));
    }
    Ok(out)
}

/// Add up tables into the largest one; `add` merges a value into another.
fn add_up<K: std::hash::Hash + Eq, V>(tables: Vec<Table<K, V>>, add: impl Fn(&mut V, V)) -> Table<K, V> {
    let mut tables = tables;
    let Some(biggest) = (0..tables.len()).max_by_key(|&i| tables[i].len()) else {
        return Table::default();
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

/// Two counting tables of random runs over `words` pretoken ids, each table with its own
/// remapping of the ids (for tests): 1 to `most_runs` runs of 2 to `most_len + 1` ids each,
/// counts 1 to `most_count` added per run.
#[cfg(test)]
pub(crate) fn random_runs(
    next: &mut impl FnMut(u64) -> u64,
    words: usize,
    most_runs: u64,
    most_len: u64,
    most_count: u64,
) -> Runs {
    (0..2)
        .map(|_| {
            let remap: Vec<u32> = (0..words as u32).map(|_| next(words as u64) as u32).collect();
            // (a run may come twice, as runs of different tables do)
            let runs: Vec<(Vec<u32>, u64)> = (0..next(most_runs) + 1)
                .map(|_| {
                    let run = (0..2 + next(most_len))
                        .map(|_| next(words as u64) as u32)
                        .collect();
                    (run, 1 + next(most_count))
                })
                .collect();
            (remap, SeqList::from_seqs(runs.iter().map(|(r, c)| (&r[..], *c))))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::cut::{strong_pairs, PairFilter};
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
            let runs = random_runs(&mut next, words, 30, 8, 5);
            let threshold = next(6) + round % 3;
            let candidates = supermerge_candidates(runs.clone(), &token_of).unwrap();
            // (exact cuts only: a filtered one depends on the filter's size, so on the source)
            assert_eq!(
                cut(&candidates, Threshold::At(threshold), 400, Cutting::Exact)
                    .unwrap()
                    .sorted(),
                cut_runs(runs, &token_of, Threshold::At(threshold), 400, Cutting::Exact)
                    .unwrap()
                    .sorted(),
                "round {round}"
            );
        }
    }

    #[test]
    fn filtered_pairs_are_the_exactly_counted_strong_ones() {
        // tiny filters (many pairs share each counter) and counts near u32::MAX (saturated
        // counters): the strong pairs are still exactly those counted more than the threshold
        let mut rng = crate::XorShift(0xA076_1D64_78BD_642Fu64);
        let mut next = |n: u64| rng.below(n);
        for round in 0..300 {
            let big = round % 4 == 0;
            let list: Candidates = (0..1 + next(60))
                .map(|_| {
                    let seq: Box<[TokenId]> = (0..2 + next(6)).map(|_| 256 + next(9) as TokenId).collect();
                    let count = if big {
                        u32::MAX as u64 - 5 + next(10)
                    } else {
                        1 + next(20)
                    };
                    (seq, count)
                })
                .collect();
            let mut exact: rustc_hash::FxHashMap<u64, u64> = Default::default();
            for (seq, count) in &list {
                for w in seq.windows(2).filter(|w| w[0] != w[1]) {
                    *exact.entry(pair_key(w[0], w[1])).or_insert(0) += count;
                }
            }
            let threshold = match round % 4 {
                0 => [u32::MAX as u64 - 1, u32::MAX as u64, 3 * u32::MAX as u64][next(3) as usize],
                _ => next(60),
            };
            let mut expected: Vec<u64> = exact
                .iter()
                .filter(|&(_, &c)| c > threshold)
                .map(|(&k, _)| k)
                .collect();
            expected.sort_unstable();
            for bits in [1, 3, 6, 12] {
                let source = ListSource {
                    list: &list,
                    per: 1 + next(20) as usize,
                };
                let filter = PairFilter::new(&source, Threshold::At(threshold), bits);
                let mut got: Vec<u64> = strong_pairs(&source, &filter).into_iter().collect();
                // the filter never calls a strong pair weak
                assert!(expected
                    .iter()
                    .all(|&k| filter.may_be_strong((k >> 32) as TokenId, k as TokenId)));
                got.sort_unstable();
                assert_eq!(got, expected, "round {round}, {bits} bits, threshold {threshold}");
            }
        }
    }
}
