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
//! shard by shard in parallel instead of into one table at the end.  Round 7 (100 MB, 32,768): the
//! pairs for the cut are no longer all counted exactly ([`strong_pairs`]: a filter of
//! counters first), and SuperBPE cuts the flat candidates instead of adding them up here
//! first ([`FlatCandidates`]).  Round 11: the runs come as records back to back
//! (`crate::seqs`), read in order instead of one box each, and the segments are added up in
//! the same structure (see [`aggregate`]).

use rayon::prelude::*;
use rustc_hash::FxBuildHasher;

use crate::count::Runs;
use crate::error::Result;
use crate::seqs::{SeqCounter, SeqList, FLAG};
use crate::tokens::TokenId;

/// Supermerge candidates: sequences of word tokens with their counts.
pub type Candidates = Vec<(Box<[TokenId]>, u64)>;

/// A segment as [`CutCandidates::sorted`] gives it: tokens, count, whole.
#[cfg(test)]
pub type SortedSegment = (Vec<TokenId>, u64, bool);

/// Candidates cut into segments of two or more tokens (aggregated), and the count of each
/// token standing alone as a one-token segment (it has no pairs, but counts for SPEC 8).
/// A segment is its tokens, its count, and whether it is the whole candidate (only a whole
/// candidate that becomes one token sets a merge's flag): the flag of [`SeqList`]'s records.
/// (Round 11: a segment was a box of its own, made only for phase 2 to copy its tokens into
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
/// (Round 10, taylorswift.txt at 5,000: BoundlessBPE's stage 3 4.2 -> 3.9 M instructions.)
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
/// (Round 11: the tables were hashbrown maps keyed by slices of the source, three cache
/// misses an occurrence (control bytes, slot, the key's tokens in the source); now
/// [`SeqCounter`]s, which keep the tokens in their records and load each slot ahead.
/// BoundlessBPE at 100 MB/32,768, one thread, medians of four interleaved runs: stage 3
/// 1.03 -> 0.87 s, of which adding up the segments was 0.42-0.45 s; peak RSS 330 -> 305 MB.)
/// Round 13: a key of two tokens is added up in a hash table of pairs instead, its tokens
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
fn pair_key(a: TokenId, b: TokenId) -> u64 {
    (a as u64) << 32 | b as u64
}

/// A [`PairFilter`] has at most 2**`FILTER_BITS` counters per part of the source
/// (4 MB).  More counters let fewer weak pairs through but stay less in cache: at 100 MB of
/// Gutenberg, 32,768 (threshold 44), 2**20 counters let 60,509 pairs through and took
/// 0.37-0.46 s of the pair step, 2**22 let 38,907 through and took 0.83-1.07 s (one thread,
/// three interleaved runs each; 2**19 and 2**21 were no better than 2**20).
const FILTER_BITS: u32 = 20;

/// The filter's size for `source`: 2**[`FILTER_BITS`] counters, or fewer for a small source,
/// at least four per token (so per pair occurrence).  (Round 10: the 4 MB filter was zeroed
/// for the few tens of thousands of pair occurrences of a small training, 4.7 M
/// instructions of `memset` per cut on taylorswift.txt, and as many fresh pages.)
fn filter_bits<S: Source + ?Sized>(source: &S) -> u32 {
    let room = (source.tokens().max(1) * 4).next_power_of_two();
    room.trailing_zeros().clamp(FEWEST_BITS, FILTER_BITS)
}

/// A [`PairFilter`] has at least 2**`FEWEST_BITS` counters.  (Few in tests, so that pairs
/// share counters and weak ones pass.)
const FEWEST_BITS: u32 = if cfg!(test) { 3 } else { 10 };

/// The two counters of a pair in a filter of 2**`bits` counters.
#[inline]
fn filter_slots(key: u64, bits: u32) -> (usize, usize) {
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
/// not.  (Round 12, issue 12: reading the bits instead of the counters made the exact pass of
/// [`strong_pairs`] and the cut's look-ups cheaper; see [`cut_source`].)
struct PairFilter {
    bits: u32,
    /// the threshold the bits were set for
    threshold: u64,
    /// a bit per counter, set when it is above the threshold; `None` when the threshold is
    /// beyond what a counter holds (every pair may then be strong)
    above: Option<Vec<u64>>,
}

impl PairFilter {
    fn new<S: Source + ?Sized>(source: &S, threshold: Threshold, bits: u32) -> PairFilter {
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
    fn may_be_strong(&self, a: TokenId, b: TokenId) -> bool {
        let Some(above) = &self.above else { return true };
        let (x, y) = filter_slots(pair_key(a, b), self.bits);
        (above[x >> 6] >> (x & 63)) & (above[y >> 6] >> (y & 63)) & 1 != 0
    }
}

/// The pairs of two different tokens that occur more than the threshold of `filter` times in
/// `source`, as [`pair_key`]s: those that pass the filter, counted exactly in a small table.
/// The result is the exact set whatever the filter's collisions: they only let more pairs
/// into the count.
fn strong_pairs<S: Source + ?Sized>(
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
/// `2n`-th most frequent pair: most supermerges count more.  (Round 12, issue 12.  The guess
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
/// Round 13: three quarters instead of half, from the ratio of the `n`-th supermerge's count
/// to the `4n`-th counter over 62 trainings, 47 of which made a guess (two threads; the others
/// had too few candidates, or phase 1 ran out of pairs): the 11 multilingual samples at
/// 8,192 (512 and 1,024 supermerges), 16,384 (1,024) and 32,768 (2,048 and 4,096), 1.25 to
/// 3.0 wherever a guess was made; Gutenberg, 20 MB at 8,192 to 131,072 (512 to 16,384
/// supermerges) and 100 MB at 8,192 to 262,144, 1.15 falling with the vocabulary to 0.87
/// (100 MB, 262,144, 16,384 supermerges).  A cut at three quarters misses below 0.75, a
/// margin of 1.16 at the lowest.  Phase 2 at 100 MB, two threads, medians of three
/// interleaved runs: 32,768 0.414 -> 0.336 s, 131,072 0.933 -> 0.726 s.  A miss made on
/// purpose (a first cut at four times the counter, 32,768) took phase 2 0.454 -> 0.588 s.
fn guess(mut counters: Vec<u32>, n: usize) -> u64 {
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
fn cut_source<S: Source + ?Sized>(
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
fn cut_where<S: Source + ?Sized>(
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
