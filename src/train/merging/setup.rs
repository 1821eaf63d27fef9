//! Building the merge loop's state: the sequences in one arena, the pairs counted in parallel
//! into the shards, the heap; and the floor below which pairs are left out.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::heap::PairHeap;
use super::tables::{shard_of, PairInfo, PairTable};
use super::{MergeState, Seq};
use crate::error::{try_vec, Error, Result};
use crate::tokens::pairs::count_pairs;
use crate::tokens::{Pair, TokenId, Vocab, BASE_VOCAB};
use crate::train::long::{LongSequence, LONG_SEQUENCE};

impl MergeState {
    /// `seqs`: the sequences, each with its weight; all whole.  (Infallible, for tests: a
    /// training builds its states with [`Self::try_new`] or [`Self::try_with_wholeness`].)
    pub fn new<'s, I>(seqs: I, vocab: &Vocab) -> MergeState
    where
        I: IntoIterator<Item = (&'s [TokenId], u64)>,
        I::IntoIter: Clone,
    {
        Self::try_new(seqs, vocab).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::new`], with [`Error::Memory`] when the tables cannot be had: every allocation
    /// sized by the input is asked for fallibly (phase 1 on a pretoken of hundreds of
    /// megabytes, phase 2 on a run of millions of pretokens).
    pub fn try_new<'s, I>(seqs: I, vocab: &Vocab) -> Result<MergeState>
    where
        I: IntoIterator<Item = (&'s [TokenId], u64)>,
        I::IntoIter: Clone,
    {
        Self::try_with_wholeness(seqs.into_iter().map(|(s, w)| (s, w, true)), vocab)
    }

    /// `seqs`: the sequences, each with its weight and whether it is whole (see `whole`).
    /// (`seqs` is read twice: the arena and the spans are allocated at their final size, not
    /// grown by doubling, which held the old and the new arena at once while phase 2 began,
    /// near the peak memory of a BoundlessBPE training.)
    pub fn try_with_wholeness<'s, I>(seqs: I, vocab: &Vocab) -> Result<MergeState>
    where
        I: IntoIterator<Item = (&'s [TokenId], u64, bool)>,
        I::IntoIter: Clone,
    {
        let seqs = seqs.into_iter();
        let (mut n, mut tokens, mut longest) = (0, 0, 0);
        for (seq, _, _) in seqs.clone() {
            n += 1;
            longest = longest.max(seq.len());
            if seq.len() <= LONG_SEQUENCE {
                tokens += seq.len();
            }
        }
        let what = what(n, tokens, longest);
        let mut data = try_vec(tokens, &what)?;
        let mut spans: Vec<Seq> = try_vec(n, &what)?;
        let mut long = FxHashMap::default();
        for (seq, w, is_whole) in seqs {
            if seq.len() > LONG_SEQUENCE {
                long.insert(spans.len() as u32, LongSequence::new(seq)?);
            }
            spans.push(Seq {
                start: data.len(),
                weight: w,
                len: seq.len() as u32,
                whole: is_whole,
            });
            if seq.len() <= LONG_SEQUENCE {
                data.extend_from_slice(seq);
            }
        }
        Self::try_counted(data, spans, long, vocab, &what)
    }

    /// Sequences already back to back in `data`, sequence `i` ending at `ends[i]` with weight
    /// `weights[i]`, all whole: `data` becomes the arena, without a copy (phase 1, whose
    /// words would otherwise be held twice while the pairs are counted).
    pub fn try_from_arena(
        data: Vec<TokenId>,
        ends: &[usize],
        weights: &[u64],
        vocab: &Vocab,
    ) -> Result<MergeState> {
        let mut start = 0;
        let mut longest = 0;
        for &end in ends {
            longest = longest.max(end - start);
            start = end;
        }
        if longest > LONG_SEQUENCE {
            return Self::try_from_arena_with_long(data, ends, weights, vocab);
        }
        let what = what(ends.len(), data.len(), longest);
        let mut spans: Vec<Seq> = try_vec(ends.len(), &what)?;
        let mut start = 0;
        for (&end, &w) in ends.iter().zip(weights) {
            spans.push(Seq {
                start,
                weight: w,
                len: (end - start) as u32,
                whole: true,
            });
            start = end;
        }
        Self::try_counted(data, spans, FxHashMap::default(), vocab, &what)
    }

    /// [`Self::try_from_arena`] when some sequences are long (rare): they leave the arena, as
    /// in [`Self::try_with_wholeness`].  The longest takes the arena's own buffer (moved to its
    /// front) after the short sequences and the other long ones are copied out, so one pretoken
    /// of hundreds of megabytes is not held twice (4 bytes per byte of text, a quarter of the
    /// peak of such a training).
    fn try_from_arena_with_long(
        mut data: Vec<TokenId>,
        ends: &[usize],
        weights: &[u64],
        vocab: &Vocab,
    ) -> Result<MergeState> {
        let mut start = 0;
        let bounds: Vec<(usize, usize)> = ends
            .iter()
            .map(|&end| {
                let b = (start, end);
                start = end;
                b
            })
            .collect();
        let len = |&(s, e): &(usize, usize)| e - s;
        let keep = (0..bounds.len())
            .max_by_key(|&i| (len(&bounds[i]), std::cmp::Reverse(i)))
            .expect("a long sequence is there");
        let short: usize = bounds.iter().map(len).filter(|&l| l <= LONG_SEQUENCE).sum();
        let what = what(ends.len(), short, len(&bounds[keep]));
        let mut arena = try_vec(short, &what)?;
        let mut spans: Vec<Seq> = try_vec(ends.len(), &what)?;
        let mut long = FxHashMap::default();
        for (i, (&(s, e), &w)) in bounds.iter().zip(weights).enumerate() {
            spans.push(Seq {
                start: arena.len(),
                weight: w,
                len: (e - s) as u32,
                whole: true,
            });
            if e - s <= LONG_SEQUENCE {
                arena.extend_from_slice(&data[s..e]);
            } else if i != keep {
                let mut copy = try_vec(e - s, &what)?;
                copy.extend_from_slice(&data[s..e]);
                long.insert(i as u32, LongSequence::from_vec(copy)?);
            }
        }
        let (s, e) = bounds[keep];
        data.copy_within(s..e, 0);
        data.truncate(e - s);
        data.shrink_to_fit();
        long.insert(keep as u32, LongSequence::from_vec(data)?);
        Self::try_counted(arena, spans, long, vocab, &what)
    }

    /// The state on the arena `data` with its `spans` and `long` sequences: the pairs counted,
    /// the heap built.  `what` names the input for a [`Error::Memory`].
    fn try_counted(
        data: Vec<TokenId>,
        spans: Vec<Seq>,
        long: FxHashMap<u32, LongSequence>,
        vocab: &Vocab,
        what: &str,
    ) -> Result<MergeState> {
        let out_of_memory = || Error::Memory(format!("{what}: out of memory"));
        // the pairs, counted by contiguous parts of the sequences in parallel (each part into
        // one table per shard), then each shard's tables added up in parallel.  (Each thread
        // used to read every sequence and keep the pairs of its own shard: two threads were no
        // faster than one, 0.45 s against 0.37 s at 100 MB/32,768 and 1.42 against 1.16 s at
        // 131,072 for BoundlessBPE's 1.6 M and 2.6 M segments.)
        let n_shards = rayon::current_num_threads().max(1);
        let per = spans.len().div_ceil(n_shards).max(1);
        // Pairs of two bytes (phase 1) are counted in a list found through a table indexed by
        // the pair, then put in the hash tables once each, in the order first seen as before.
        // (A look-up in the hash table per pair occurrence was half of a small
        // training's set-up.)
        // (Fallibly throughout: a table's growth, or a pair's list of sequences, that cannot
        // be had stops the count, and the state is not built.)
        let bytes_only = data
            .iter()
            .chain(long.values().flat_map(|l| l.untouched().expect("no merge yet")))
            .all(|&t| (t as usize) < BASE_VOCAB);
        let parts: Vec<Vec<PairTable>> = spans
            .par_chunks(per)
            .enumerate()
            .map(|(part, chunk)| {
                let mut maps: Vec<PairTable> = (0..n_shards).map(|_| PairTable::default()).collect();
                let mut slot_of: Vec<u32> = if bytes_only {
                    vec![u32::MAX; BASE_VOCAB * BASE_VOCAB]
                } else {
                    Vec::new()
                };
                let mut found: Vec<(Pair, PairInfo)> = Vec::new();
                let mut ok = true;
                for (j, span) in chunk.iter().enumerate() {
                    let i = (part * per + j) as u32;
                    let w = span.weight;
                    let seq = match long.get(&i) {
                        Some(l) => l.untouched().expect("no merge yet"),
                        None => &data[span.range()],
                    };
                    if bytes_only {
                        count_pairs(seq, |p| {
                            let slot = &mut slot_of[p.0 as usize * BASE_VOCAB + p.1 as usize];
                            if *slot == u32::MAX {
                                *slot = found.len() as u32;
                                found.push((p, PairInfo::default()));
                            }
                            let info = &mut found[*slot as usize].1;
                            info.count += w;
                            ok &= info.try_note(i);
                        });
                    } else {
                        count_pairs(seq, |p| {
                            let map = &mut maps[shard_of(p, n_shards)];
                            if map.try_reserve(1).is_err() {
                                ok = false;
                                return;
                            }
                            let info = map.entry(p).or_default();
                            info.count += w;
                            ok &= info.try_note(i);
                        });
                    }
                    if !ok {
                        return Err(out_of_memory());
                    }
                }
                for (p, info) in found {
                    let map = &mut maps[shard_of(p, n_shards)];
                    map.try_reserve(1).map_err(|_| out_of_memory())?;
                    map.insert(p, info);
                }
                Ok(maps)
            })
            .collect::<Result<_>>()?;
        let mut by_shard: Vec<Vec<PairTable>> = (0..n_shards).map(|_| Vec::new()).collect();
        for maps in parts {
            for (k, map) in maps.into_iter().enumerate() {
                by_shard[k].push(map);
            }
        }
        let shards: Vec<PairTable> = by_shard
            .into_par_iter()
            .map(|maps| {
                // in the parts' order, so that each pair's sequences stay in increasing order
                let mut maps = maps.into_iter();
                let mut all = maps.next().unwrap_or_default();
                for map in maps {
                    for (p, info) in map {
                        match all.get_mut(&p) {
                            Some(mine) => {
                                mine.count += info.count;
                                mine.seqs
                                    .try_reserve(info.seqs.len())
                                    .map_err(|_| out_of_memory())?;
                                mine.seqs.extend(info.seqs);
                            }
                            None => {
                                all.try_reserve(1).map_err(|_| out_of_memory())?;
                                all.insert(p, info);
                            }
                        }
                    }
                }
                Ok(all)
            })
            .collect::<Result<_>>()?;
        let mut initial: Vec<(u64, Pair)> = try_vec(shards.iter().map(|m| m.len()).sum(), what)?;
        initial.extend(
            shards
                .iter()
                .flat_map(|m| m.iter().map(|(&p, info)| (info.count, p))),
        );
        let heap = PairHeap::try_from_vec(vocab, initial, what)?;
        Ok(MergeState {
            data,
            seqs: spans,
            shards,
            heap,
            long,
            tokens: None,
            relocated: false,
            changes: None,
            bytes: Vec::new(),
            floor: 0,
            present: Vec::new(),
            #[cfg(test)]
            restores: 0,
        })
    }

    /// Leave out of the heap every pair while it is counted `floor` times or fewer: [`Self::best`]
    /// then only returns pairs counted more often (or `None`).  For a caller that would never
    /// choose such a pair anyway (phase 2, whose supermerges must beat a regular merge, see
    /// `boundless.rs`).  A pair whose count rises above the floor later gets its entry then
    /// (entries are pushed when a count grows), so the choice among the pairs above it is
    /// unchanged.  (100 MB of Gutenberg, 32,768: BoundlessBPE's heap ended with 1.19 M
    /// entries, almost all for pairs made by supermerges that never count enough.)
    ///
    /// Such pairs need no place in the pair table either, most of the time.  A merge only
    /// adds occurrences of pairs that hold its new token; when that token occurs nowhere yet
    /// (almost always: a supermerge whose bytes were made before is rare), those pairs had no
    /// occurrence before, so their count is exactly what the merge made, and a pair made with
    /// `floor` occurrences or fewer can never rise above it unless one of its tokens is made
    /// again.  So the table keeps every pair counted above the floor (exactly, as before) and
    /// drops the others; before a merge whose token may occur already, the pairs holding that
    /// token are counted again over all sequences ([`Self::restore_pairs_of`], exact).
    /// (100 MB of Gutenberg: BoundlessBPE's pair table grew from 37,507 pairs to
    /// 1.12 M at 32,768 and from 0.40 M to 3.65 M at 131,072, almost all of them counted at
    /// most `floor` times; its growth was a tenth of the samples of a training at 131,072,
    /// mostly the kernel zeroing the new tables' pages.)
    pub fn with_floor(mut self, floor: u64, vocab: &Vocab) -> MergeState {
        self.floor = floor;
        self.heap.drop_at_most(vocab, floor);
        if floor > 0 {
            for shard in &mut self.shards {
                shard.retain(|_, info| info.count > floor);
            }
            let mut present = vec![false; vocab.len()];
            let mut mark = |t: TokenId| {
                let t = t as usize;
                if t >= present.len() {
                    present.resize(t + 1, false);
                }
                present[t] = true;
            };
            self.data.iter().for_each(|&t| mark(t));
            self.long.values().for_each(|l| l.tokens().for_each(&mut mark));
            self.present = present;
        }
        self
    }

    /// The floor set by [`Self::with_floor`] (0 without one).
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// The same sequences with every pair counted, exactly, and no floor (see
    /// [`Self::with_floor`]): for a caller that needs the pairs at or below the floor after
    /// all.  Reads every sequence, as the first count did.
    pub fn without_floor(self, vocab: &Vocab) -> Result<MergeState> {
        debug_assert!(self.tokens.is_none(), "token tracking keeps no floor");
        let long: FxHashMap<u32, Vec<TokenId>> = self
            .long
            .iter()
            .map(|(&i, l)| (i, l.tokens().collect()))
            .collect();
        let seqs = self.seqs.iter().enumerate().map(|(i, s)| {
            let tokens = match long.get(&(i as u32)) {
                Some(tokens) => &tokens[..],
                None => &self.data[s.range()],
            };
            (tokens, s.weight, s.whole)
        });
        MergeState::try_with_wholeness(seqs, vocab)
    }
}

/// What a merge state is built on, for an out-of-memory error.
fn what(seqs: usize, tokens: usize, longest: usize) -> String {
    format!("merging pairs in {seqs} sequences of {tokens} tokens (the longest has {longest})")
}
