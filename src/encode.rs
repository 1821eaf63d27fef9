//! Encoding and decoding (SPEC section 7), the same steps as `reference/encode.py`:
//!
//! 1. special tokens are split off first (longest match wins);
//! 2. the rest is pre-tokenized with the model's settings;
//! 3. a pretoken whose bytes are a *reachable* token is that token (the vocabulary shortcut);
//!    any other starts from its bytes and applies regular merges, smallest index first and
//!    never going back to a smaller index, all non-overlapping occurrences left to right;
//!    With PickyBPE deletions (SPEC 9) the step applies merges *and* deletions, whichever has
//!    the smallest index above the last one applied (see [`Picky`]);
//! 4. runs of two or more pretokens that became one token occurring in some supermerge get
//!    supermerges, smallest index first (after the optional greedy n-gram cut).

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{Error, Result};
use crate::key::{Block, ByteMap, Prefetched};
use crate::model::{ByteStrings, Merges, Model};
use crate::pretokenize::Pretokenizer;
use crate::tokens::TokenId;
use crate::train::merging::apply_merge;
use crate::train::ngram::{prefix_set, split_one};

pub mod batch;
pub mod cache;
pub mod decode;
pub mod specials;

use cache::{PieceCache, Table, CACHED};
use decode::TokenBytes;
pub use specials::{Allowed, Part, Specials};

/// Pieces longer than this (in bytes) are merged with a heap instead of a scan.
const LONG_PIECE: usize = 48;

/// Supermerge runs up to this many tokens use [`merge_small`].
const SMALL_RUN: usize = 32;

/// Supermerge runs of 4 up to this many tokens use [`merge_tiny`].
const TINY_RUN: usize = 8;

/// A packed rank for "no supermerge" (larger than every real one).
const NO_PAIR: u64 = u64::MAX;

/// The key of the pair `(a, b)` in `Encoder::super_ranks`.
#[inline]
fn pair_key(a: TokenId, b: TokenId) -> u64 {
    (a as u64) << 32 | b as u64
}

/// What `Encoder::encode_piece` carries from one pretoken to the next.
struct Pieces {
    /// the current run of single tokens that occur in supermerges is `out[run..]`
    run: usize,
    /// a pretoken's tokens after the merges
    tokens: Vec<TokenId>,
    failed: Option<Error>,
}

/// The greedy-split n-gram table and the prefixes of its n-grams.
type NgramTables = (FxHashSet<Box<[TokenId]>>, FxHashSet<Box<[TokenId]>>);

pub struct Encoder {
    pub pretokenizer: Pretokenizer,
    vocab: ByteStrings,
    ids: FxHashMap<Vec<u8>, TokenId>,
    byte_ids: [Option<TokenId>; 256],
    /// regular merges: pair -> (index, result)
    ranks: FxHashMap<(TokenId, TokenId), (u32, TokenId)>,
    /// supermerges: `left << 32 | right` -> `index << 32 | result`, so that a pair's key is
    /// hashed once and the smallest packed value is the smallest index (see `supermerge`)
    super_ranks: FxHashMap<u64, u64>,
    /// per token: bit 1 = left part of some supermerge, bit 2 = right part (SPEC 7.4's "occurs
    /// in some supermerge"; the bits also skip most pair lookups in `supermerge`); and a last
    /// entry, 0, for the id `vocab.len()` that pads runs in `flush_run`
    super_part: Vec<u8>,
    reachable: Vec<bool>,
    /// reachable tokens by bytes: the shortcut's table, one cache line per probe (see
    /// [`ByteMap`] for the profile that chose it).  Tried and dropped with the earlier
    /// two-line table: a direct-mapped 128 KB table of the 4,096 smallest-id tokens in front
    /// of it (no gain beyond the noise).
    shortcut: ByteMap,
    ngrams: Option<NgramTables>,
    /// the merges and deletions of a model with PickyBPE deletions (then `ranks` is unused)
    picky: Option<Picky>,
    /// special tokens, and what cutting texts at them needs
    special: Specials,
    /// what pretokens that missed the shortcut became, per thread
    cache: PieceCache,
    /// the tokens' bytes for decoding
    decoder: TokenBytes,
}

/// Step 3 for a model with PickyBPE deletions (SPEC 9 "Inference"), as `reference/encode.py`.
///
/// Ids below the vocabulary size are the model's; deleted tokens that are not in the final
/// vocabulary (they can stand in a pretoken between a merge and a deletion) get the ids
/// after them.  A pair or a token can have several operations, so each keeps its indices.
struct Picky {
    /// pair -> (index, result) of each merge of that pair, indices ascending
    ranks: FxHashMap<(TokenId, TokenId), Vec<(u32, TokenId)>>,
    /// token -> indices of its deletions, ascending
    deleted: FxHashMap<TokenId, Vec<u32>>,
    /// token -> its resolved parts (all in the final vocabulary)
    parts: FxHashMap<TokenId, Vec<TokenId>>,
    /// bytes of the ids after the vocabulary
    extra: Vec<Vec<u8>>,
}

/// What [`Picky::apply`] does next: a merge (the pair and its result), or a deletion.
type Operation = Option<((TokenId, TokenId), TokenId)>;

/// The first of the ascending `indices` above `last`.
fn first_above<T: Copy>(list: &[(u32, T)], last: i64) -> Option<(u32, T)> {
    let k = list.partition_point(|&(i, _)| i as i64 <= last);
    list.get(k).copied()
}

impl Picky {
    fn new(model: &Model, ids: &FxHashMap<Vec<u8>, TokenId>) -> Result<Picky> {
        use crate::model::merge_indices;
        let n = model.vocab.len();
        let mut extended: FxHashMap<Vec<u8>, TokenId> = ids.clone();
        let mut extra: Vec<Vec<u8>> = Vec::new();
        let mut id_of = |t: &[u8]| -> TokenId {
            if let Some(&id) = extended.get(t) {
                return id;
            }
            let id = (n + extra.len()) as TokenId;
            extra.push(t.to_vec());
            extended.insert(t.to_vec(), id);
            id
        };
        let deleted_bytes: FxHashSet<&[u8]> = model.deletions.iter().map(|d| d.token.as_slice()).collect();
        let mut ranks: FxHashMap<(TokenId, TokenId), Vec<(u32, TokenId)>> = FxHashMap::default();
        let mut makers: FxHashMap<Vec<u8>, (Vec<u8>, Vec<u8>)> = FxHashMap::default();
        let indices = merge_indices(model.merges.len(), &model.deletions);
        for (i, m) in indices.into_iter().zip(model.merges.iter()) {
            let merged = [m.left, m.right].concat();
            if !ids.contains_key(&merged) && !deleted_bytes.contains(merged.as_slice()) {
                return Err(Error::Value(format!(
                    "model is inconsistent: merge result {} is neither in the vocabulary nor deleted",
                    py_bytes(&merged)
                )));
            }
            let index = u32::try_from(i).map_err(|_| Error::Value("too many merges".into()))?;
            let (l, r, id) = (id_of(m.left), id_of(m.right), id_of(&merged));
            ranks.entry((l, r)).or_default().push((index, id));
            makers
                .entry(merged)
                .or_insert_with(|| (m.left.to_vec(), m.right.to_vec()));
        }
        let mut deleted: FxHashMap<TokenId, Vec<u32>> = FxHashMap::default();
        for d in &model.deletions {
            let index = u32::try_from(d.index).map_err(|_| Error::Value("too many deletions".into()))?;
            deleted.entry(id_of(&d.token)).or_default().push(index);
        }
        // recorded parts, fixed at a token's first deletion: its bytes with blowup, else the
        // halves of the earliest merge that makes it (both strictly shorter than the token)
        let mut recorded: Vec<(&[u8], Vec<Vec<u8>>)> = Vec::new();
        let mut seen: FxHashSet<&[u8]> = FxHashSet::default();
        for d in &model.deletions {
            if !seen.insert(&d.token) {
                continue;
            }
            let parts = if model.settings.blowup {
                d.token.iter().map(|&b| vec![b]).collect()
            } else {
                let (l, r) = makers.get(&d.token).ok_or_else(|| {
                    Error::Value(format!(
                        "model is inconsistent: no merge makes the deleted token {}",
                        py_bytes(&d.token)
                    ))
                })?;
                vec![l.clone(), r.clone()]
            };
            recorded.push((&d.token, parts));
        }
        // resolution (SPEC 9): a part not in the final vocabulary is replaced by its own
        // resolved parts (a deleted token's) or its bytes.  Parts are shorter than their
        // token, so resolving in order of length needs no recursion.  A deleted token that
        // is in the final vocabulary resolves to itself (what the paper's encoder does).
        recorded.sort_by_key(|(t, _)| t.len());
        let mut resolved: FxHashMap<&[u8], Vec<Vec<u8>>> = FxHashMap::default();
        for (token, parts) in &recorded {
            let mut out: Vec<Vec<u8>> = Vec::new();
            if ids.contains_key(*token) {
                out.push(token.to_vec());
            } else {
                for part in parts {
                    if ids.contains_key(part) {
                        out.push(part.clone());
                    } else if let Some(r) = resolved.get(part.as_slice()) {
                        out.extend(r.iter().cloned());
                    } else {
                        out.extend(part.iter().map(|&b| vec![b]));
                    }
                }
            }
            resolved.insert(token, out);
        }
        let mut parts: FxHashMap<TokenId, Vec<TokenId>> = FxHashMap::default();
        for (token, pieces) in resolved {
            let pieces = pieces
                .iter()
                .map(|p| {
                    ids.get(p).copied().ok_or_else(|| {
                        Error::Value(format!(
                            "model is inconsistent: the byte {} is not in the vocabulary",
                            py_bytes(p)
                        ))
                    })
                })
                .collect::<Result<Vec<TokenId>>>()?;
            parts.insert(id_of(token), pieces);
        }
        Ok(Picky {
            ranks,
            deleted,
            parts,
            extra,
        })
    }

    /// Apply merges and deletions to one pretoken's byte tokens: repeatedly the operation
    /// with the smallest index above the last one applied.
    fn apply(&self, tokens: &mut Vec<TokenId>) {
        let mut last: i64 = -1;
        let mut replaced: Vec<TokenId> = Vec::new();
        loop {
            let mut best: Option<(u32, Operation, TokenId)> = None;
            for w in tokens.windows(2) {
                if let Some(list) = self.ranks.get(&(w[0], w[1])) {
                    if let Some((i, merged)) = first_above(list, last) {
                        if best.is_none_or(|b| i < b.0) {
                            best = Some((i, Some(((w[0], w[1]), merged)), 0));
                        }
                    }
                }
            }
            for &t in tokens.iter() {
                if let Some(list) = self.deleted.get(&t) {
                    let k = list.partition_point(|&i| i as i64 <= last);
                    if let Some(&i) = list.get(k) {
                        if best.is_none_or(|b| i < b.0) {
                            best = Some((i, None, t));
                        }
                    }
                }
            }
            let Some((index, op, token)) = best else { return };
            match op {
                Some((pair, merged)) => {
                    apply_merge(tokens, pair, merged);
                }
                None => {
                    let parts = &self.parts[&token];
                    replaced.clear();
                    for &t in tokens.iter() {
                        if t == token {
                            replaced.extend_from_slice(parts);
                        } else {
                            replaced.push(t);
                        }
                    }
                    std::mem::swap(tokens, &mut replaced);
                }
            }
            last = index as i64;
        }
    }
}

impl Encoder {
    pub fn new(model: &Model, greedy_split: bool) -> Result<Encoder> {
        let s = &model.settings;
        let pretokenizer = Pretokenizer::new(
            &s.main_regex,
            s.script_specific_regex.as_deref(),
            s.script_specific_scripts.as_deref(),
        )?;
        let ids: FxHashMap<Vec<u8>, TokenId> = model
            .vocab
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_vec(), i as TokenId))
            .collect();
        let mut byte_ids = [None; 256];
        for b in 0..=255u8 {
            byte_ids[b as usize] = ids.get(&[b][..]).copied();
        }
        let table = |merges: &Merges| -> Result<FxHashMap<(TokenId, TokenId), (u32, TokenId)>> {
            let mut out = FxHashMap::default();
            for (i, m) in merges.iter().enumerate() {
                let merged = [m.left, m.right].concat();
                let find = |t: &[u8]| {
                    ids.get(t).copied().ok_or_else(|| {
                        Error::Value(format!(
                            "model is inconsistent: merge result {} is not in the vocabulary",
                            py_bytes(t)
                        ))
                    })
                };
                let (l, r, m_id) = (find(m.left)?, find(m.right)?, find(&merged)?);
                out.entry((l, r)).or_insert((i as u32, m_id));
            }
            Ok(out)
        };
        // every byte UTF-8 text can hold must be a token (a hostile file may lack some)
        if let Some(b) = crate::tokens::byte_token_values().find(|&b| byte_ids[b as usize].is_none()) {
            return Err(Error::Value(format!(
                "model is inconsistent: the byte token {} is missing from the vocabulary",
                py_bytes(&[b])
            )));
        }
        let picky = if model.deletions.is_empty() {
            None
        } else {
            Some(Picky::new(model, &ids)?)
        };
        let ranks = if picky.is_some() {
            FxHashMap::default()
        } else {
            table(&model.merges)?
        };
        // one more entry, 0, for the padding id (`vocab.len()`, see `flush_run`)
        let mut super_part = vec![0u8; model.vocab.len() + 1];
        let super_ranks: FxHashMap<u64, u64> = table(&model.supermerges)?
            .into_iter()
            .map(|((l, r), (index, merged))| {
                super_part[l as usize] |= 1;
                super_part[r as usize] |= 2;
                (pair_key(l, r), (index as u64) << 32 | merged as u64)
            })
            .collect();
        let ngrams = if greedy_split {
            let table = model.ngrams.as_ref().ok_or_else(|| {
                Error::Value(
                    "greedy_split=True needs a model trained with greedy_split=True (this model stores no n-gram table)".into(),
                )
            })?;
            // n-grams of phase-1 tokens that this vocabulary lacks can never match a run
            let set: FxHashSet<Box<[TokenId]>> = table
                .iter()
                .filter_map(|g| {
                    g.iter()
                        .map(|t| ids.get(t).copied())
                        .collect::<Option<Box<[TokenId]>>>()
                })
                .collect();
            let prefixes = prefix_set(&set);
            Some((set, prefixes))
        } else {
            None
        };
        let mut enc = Encoder {
            pretokenizer,
            vocab: model.vocab.clone(),
            ids,
            byte_ids,
            ranks,
            super_ranks,
            super_part,
            reachable: vec![false; model.vocab.len()],
            shortcut: ByteMap::new([])?,
            ngrams,
            picky,
            special: Specials::new(model.special_tokens.clone()),
            cache: PieceCache::new(0), // off while `find_reachable` encodes the vocabulary
            decoder: TokenBytes::new(model.vocab.iter().enumerate().map(|(i, t)| (i as TokenId, t))),
        };
        enc.reachable = enc.find_reachable(&model.is_super)?;
        enc.shortcut = ByteMap::new(
            (0..enc.vocab.len())
                .filter(|&i| enc.reachable[i])
                .map(|i| (&enc.vocab[i], i as TokenId)),
        )?;
        enc.cache = enc.seeded_cache(cache::default_capacity(enc.shortcut.len()))?;
        Ok(enc)
    }

    /// A cache whose tables start with the shortcut's tokens (in id order, as the shortcut).
    fn seeded_cache(&self, capacity: usize) -> Result<PieceCache> {
        PieceCache::seeded(
            (0..self.vocab.len())
                .filter(|&i| self.reachable[i])
                .map(|i| (&self.vocab[i], i as TokenId)),
            capacity,
        )
    }

    /// The same encoder with `capacity` cache entries per thread (0: no cache); for tests
    /// that force tiny tables.
    pub fn with_cache_capacity(mut self, capacity: usize) -> Result<Encoder> {
        self.cache = self.seeded_cache(capacity)?.at_once();
        Ok(self)
    }

    /// Word tokens whose text, encoded alone without the shortcut, is that one token.
    fn find_reachable(&self, is_super: &[bool]) -> Result<Vec<bool>> {
        crate::threads::parallel(|| self.reachable_in_pool(is_super))?
    }

    fn reachable_in_pool(&self, is_super: &[bool]) -> Result<Vec<bool>> {
        (0..self.vocab.len())
            .into_par_iter()
            .map(|id| {
                if is_super[id] {
                    return Ok(false);
                }
                let Ok(text) = std::str::from_utf8(&self.vocab[id]) else {
                    return Ok(false);
                };
                let mut out = Vec::new();
                self.encode_into(text, false, &mut out)?;
                Ok(out.len() == 1)
            })
            .collect()
    }

    /// The token a pretoken's bytes are when it is a reachable token (the shortcut's test).
    pub fn single_token(&self, bytes: &[u8]) -> Option<TokenId> {
        self.ids
            .get(bytes)
            .copied()
            .filter(|&id| self.reachable[id as usize])
    }

    pub fn vocab(&self) -> &ByteStrings {
        &self.vocab
    }

    pub fn id_of(&self, bytes: &[u8]) -> Option<TokenId> {
        self.ids.get(bytes).copied()
    }

    /// Apply the regular merges (and deletions) to one pretoken's bytes (step 3, no
    /// shortcut).
    fn merge_pretoken(&self, raw: &[u8], out: &mut Vec<TokenId>) -> Result<()> {
        let mut tokens: Vec<TokenId> = raw
            .iter()
            .map(|&b| self.byte_ids[b as usize].expect("every byte of UTF-8 text has a token (checked)"))
            .collect();
        let Some(picky) = &self.picky else {
            merge_by_rank(tokens, |a, b| self.ranks.get(&(a, b)).copied(), out);
            return Ok(());
        };
        picky.apply(&mut tokens);
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= self.vocab.len()) {
            // only a hand-made, inconsistent model file gets here
            return Err(Error::Value(format!(
                "this model cannot encode the piece {}: its merges and deletions make the token {}, which is not in its vocabulary",
                py_bytes(raw),
                py_bytes(&picky.extra[t as usize - self.vocab.len()])
            )));
        }
        out.extend_from_slice(&tokens);
        Ok(())
    }

    /// The packed `index << 32 | result` of the supermerge of `(a, b)`, or [`NO_PAIR`].
    #[inline(always)]
    fn super_rank(&self, a: TokenId, b: TokenId) -> u64 {
        let part = &self.super_part;
        // one branch for both bits (two were 7 % of a BoundlessBPE model's mispredicted
        // branches, callgrind)
        if (part[a as usize] << 1) & part[b as usize] & 2 == 0 {
            return NO_PAIR; // no supermerge starts with this left or ends with this right
        }
        self.super_ranks.get(&pair_key(a, b)).copied().unwrap_or(NO_PAIR)
    }

    /// Supermerges on the run of single-token pretokens `out[start..]`, smallest index first,
    /// in place (`out` ends where the run now ends).
    ///
    /// Profile (perf, 32K BoundlessBPE trained on 20 MB of Gutenberg, 4 MB encoded): runs
    /// average about 3 tokens, 84 % of them get at least one supermerge and the bits of
    /// `super_part` let 91 % of pairs through to the table, so skipping runs without a pair
    /// saves little; the cost was the general scan's overhead around the lookups (its kept
    /// ranks built by an iterator, a second vector of flags, the run copied out).  Runs of
    /// up to [`SMALL_RUN`] tokens therefore use a scan of their own: packed ranks on the
    /// stack (the minimum is a plain `u64` minimum), the new tokens as a bit mask, runs of
    /// two and three without loops, and runs of 4 to [`TINY_RUN`] fixed-width steps
    /// ([`merge_tiny`]; the run is padded in `out` with an id that is in no supermerge).
    /// Longer runs (rare in prose) take the heap ([`merge_heap`]), so that a long run costs
    /// O(n log n), not a pass over it per distinct supermerge.
    fn supermerge(&self, out: &mut Vec<TokenId>, start: usize) {
        let n = out.len() - start;
        let rank = |a, b| self.super_rank(a, b);
        let len = if (4..=TINY_RUN).contains(&n) {
            let pad = (self.super_part.len() - 1) as TokenId;
            out.extend_from_slice(&[pad; TINY_RUN + 1]);
            let window = (&mut out[start..start + TINY_RUN + 1]).try_into().unwrap();
            merge_tiny(window, n, rank)
        } else if n <= SMALL_RUN {
            merge_small(&mut out[start..], rank)
        } else {
            let mut tokens = out.split_off(start);
            merge_heap(
                &mut tokens,
                |a, b| {
                    let r = rank(a, b);
                    (r != NO_PAIR).then_some(((r >> 32) as u32, r as TokenId))
                },
                false,
            );
            out.extend_from_slice(&tokens);
            tokens.len()
        };
        out.truncate(start + len);
    }

    /// Step 4 on the run `out[start..]`, in place.  Tried and dropped: a per-thread cache of
    /// what runs became, keyed by their ids (as the pretoken cache): on a 32K BoundlessBPE
    /// model and 4 MB of Gutenberg its insertions and lookups took 9 % of samples and CPU
    /// time did not move (runs of common words between punctuation rarely repeat exactly);
    /// `supermerge` itself is about 15 % of samples there.
    ///
    /// What step 4 costs, and what it would have to cost (issue 12 asks for a BoundlessBPE
    /// model at 0.8x the speed of its word model).  The 32K BoundlessBPE model above, on
    /// 1 MB of its text: 30,581 runs of two or more, 4.05 tokens long on average, with 1.4
    /// supermerges per run; 93,290 adjacent pairs, of which 85,030 pass `super_part`'s bits
    /// and 54,377 are supermerges.  A build that skipped step 4 (wrong output, for timing
    /// only) encoded 4 MB at 153.7 MB per CPU-second, against 101.9 with it and 195.3 for the
    /// word model (one pinned core, one process, 11 interleaved rounds): so step 4 is about
    /// 108 ns a run, and without it the model is at 0.79x already (more pretokens miss its
    /// smaller word vocabulary, 9.0 % against 6.9 %, and it has more tokens to write).  0.8x
    /// cannot be reached by making step 4 cheaper.
    #[inline(always)]
    fn flush(&self, out: &mut Vec<TokenId>, start: usize) {
        // called after every pretoken; a run of two or more tokens is the rare case
        if out.len() - start >= 2 {
            self.flush_run(out, start);
        }
    }

    fn flush_run(&self, out: &mut Vec<TokenId>, start: usize) {
        match &self.ngrams {
            Some((table, prefixes)) => {
                let whole = out.split_off(start);
                split_one(&whole, table, prefixes, |piece| {
                    let at = out.len();
                    out.extend_from_slice(piece);
                    self.supermerge(out, at);
                });
            }
            None => self.supermerge(out, start),
        }
    }

    fn encode_into(&self, text: &str, shortcut: bool, out: &mut Vec<TokenId>) -> Result<()> {
        if shortcut {
            self.cache
                .with(text.len(), |table| self.encode_pieces(text, true, table, out))
        } else {
            self.encode_pieces(text, false, None, out)
        }
    }

    /// Steps 2-4 on `text` (no special tokens in it), with this thread's cache `table` if any.
    ///
    /// Pretokens go through in blocks ([`Prefetched`]): first every pretoken's shortcut slot
    /// is prefetched, then they are looked up and handled in order.  A lookup is one cache line
    /// that is often not in L2 (the 32K table is 1 MB); looked up one at a time, each
    /// pretoken waited for its line (perf, 32K BPE model, 4 MB of Gutenberg: 12 % of all
    /// samples on the slot's first load), while a block's loads overlap (1.1x faster than the
    /// same blocks without the prefetch, interleaved in one process).  Tried and dropped: a ring
    /// that prefetched each pretoken's slot as the matcher found it and looked it up 16
    /// pretokens later (no faster than blocks, interleaved in one process).
    fn encode_pieces(
        &self,
        text: &str,
        shortcut: bool,
        table: Option<&mut Table>,
        out: &mut Vec<TokenId>,
    ) -> Result<()> {
        let mut state = Pieces {
            run: out.len(),
            tokens: Vec::new(),
            failed: None,
        };
        if shortcut {
            let mut block = Block::default();
            match table {
                // one table holds the shortcut's tokens and what this thread's pretokens became
                Some(table) => {
                    let mut blocks = Prefetched::new(
                        table,
                        text.as_bytes(),
                        &mut block,
                        |t, piece, value| match value {
                            Some(id) if id & CACHED == 0 => {
                                self.encode_piece(piece, Some(id), out, &mut state)
                            }
                            _ => self.encode_missed(piece, value, Some(t), out, &mut state),
                        },
                    );
                    self.pretokenizer
                        .for_each(text, |piece| blocks.push(piece.as_bytes()))?;
                    blocks.finish();
                }
                None => {
                    let mut blocks =
                        Prefetched::new(&self.shortcut, text.as_bytes(), &mut block, |_, piece, id| {
                            self.encode_piece(piece, id, out, &mut state)
                        });
                    self.pretokenizer
                        .for_each(text, |piece| blocks.push(piece.as_bytes()))?;
                    blocks.finish();
                }
            }
        } else {
            self.pretokenizer.for_each(text, |piece| {
                self.encode_piece(piece.as_bytes(), None, out, &mut state)
            })?;
        }
        if let Some(e) = state.failed {
            return Err(e);
        }
        if !self.super_ranks.is_empty() {
            self.flush(out, state.run);
        }
        Ok(())
    }

    /// Steps 3-4 on one pretoken, `raw`, which is the token `single` when the shortcut found it.
    ///
    /// The shortcut's hit is inlined into the lookup loop, the rest is a call of its own (as
    /// one function, the call and its register saves were paid by every pretoken); a model
    /// without supermerges only appends the id.
    #[inline(always)]
    fn encode_piece(&self, raw: &[u8], single: Option<TokenId>, out: &mut Vec<TokenId>, state: &mut Pieces) {
        let Some(id) = single else {
            return self.encode_missed(raw, None, None, out, state);
        };
        if self.super_ranks.is_empty() {
            out.push(id);
            return;
        }
        // the common case, without the buffer.  Whether a token is part of some
        // supermerge is as good as random to the branch predictor, so the only branch is
        // the one taken where a run of two or more ends (with a branch of its own, the
        // test was 11 % of a BoundlessBPE model's mispredicted branches, callgrind)
        let word = (self.super_part[id as usize] == 0) as usize;
        if word & ((out.len() - state.run >= 2) as usize) != 0 {
            self.flush_run(out, state.run);
        }
        out.push(id);
        let m = word.wrapping_neg(); // a word ends the run, a part extends it
        state.run = (out.len() & m) | (state.run & !m);
    }

    /// [`Encoder::encode_piece`] for a pretoken that is not a token: from this thread's
    /// table, where its cached entry is `value` if it has one, or merged (after a failure,
    /// nothing more is done: the call returns the error).
    #[inline(never)]
    fn encode_missed(
        &self,
        raw: &[u8],
        value: Option<u32>,
        table: Option<&mut Table>,
        out: &mut Vec<TokenId>,
        state: &mut Pieces,
    ) {
        if state.failed.is_some() {
            return;
        }
        if let (Some(value), Some(t), true) = (value, table.as_deref(), self.super_ranks.is_empty()) {
            t.extend(value, out); // the common case, without the buffer
            return;
        }
        let tokens = &mut state.tokens;
        tokens.clear();
        let made = match table {
            Some(t) => t.ids_or_merge(raw, value, tokens, |buffer| self.merge_pretoken(raw, buffer)),
            None => self.merge_pretoken(raw, tokens),
        };
        if let Err(e) = made {
            state.failed = Some(e);
            return;
        }
        if self.super_ranks.is_empty() {
            out.extend_from_slice(tokens);
        } else if tokens.len() == 1 && self.super_part[tokens[0] as usize] != 0 {
            out.push(tokens[0]);
        } else {
            self.flush(out, state.run);
            out.extend_from_slice(tokens);
            state.run = out.len();
        }
    }

    /// Token ids of `text`, special-token strings treated as text.
    pub fn encode_ordinary(&self, text: &str) -> Result<Vec<TokenId>> {
        let mut out = Vec::with_capacity(text.len() / 3);
        self.encode_into(text, true, &mut out)?;
        Ok(out)
    }

    /// Token ids of `text`, recognising the special tokens in `allowed` (longest match first).
    pub fn encode(&self, text: &str, allowed: &[String]) -> Result<Vec<TokenId>> {
        Encode::encode(self, text, allowed)
    }

    /// Concatenated token bytes; an unknown id is an error naming it and its position.
    pub fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>> {
        self.decoder.decode(
            ids,
            |id| self.special.text(id),
            |id, position| {
                let specials = self.special.ids();
                let extra = if specials.is_empty() {
                    ")".to_string()
                } else {
                    format!(" and special ids {specials:?})")
                };
                Error::Value(format!(
                    "token id {id} at position {position} is out of range (vocabulary has ids 0..{}{extra}",
                    self.vocab.len() as i64 - 1
                ))
            },
        )
    }
}

/// A byte string as Python writes it (`b'...'`), for messages shared with the reference.
pub fn py_bytes(t: &[u8]) -> String {
    let mut s = String::from("b'");
    for &b in t {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'\'' => s.push_str("\\'"),
            b'\t' => s.push_str("\\t"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s.push('\'');
    s
}

/// Merge `tokens` by rank: repeatedly take the adjacent pair with the smallest rank (never
/// going back to a smaller rank than the last one applied) and apply it at all its
/// non-overlapping positions, left to right.  `rank(a, b)` gives `(rank, merged id)`.
///
/// Short sequences use a plain scan; long ones a heap, which keeps a megabyte-long pretoken
/// (a run of letters with no space) from taking quadratic time.  Vocab then form a linked
/// list and a min-heap holds `(rank, position)` of adjacent pairs: the smallest rank is applied
/// at all its positions, left to right (a position whose tokens changed is skipped, which is
/// the non-overlap rule), and new neighbours enter the heap only with a larger rank (a smaller
/// one can never apply any more).
pub fn merge_by_rank(
    mut tokens: Vec<TokenId>,
    rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>,
    out: &mut Vec<TokenId>,
) {
    if tokens.len() <= LONG_PIECE {
        merge_scan(&mut tokens, rank, true);
        out.extend_from_slice(&tokens);
        return;
    }
    merge_heap(&mut tokens, rank, true);
    out.extend_from_slice(&tokens);
}

/// [`merge_scan`] for long sequences, in O(n log n): a min-heap of `(rank, position, left,
/// right)` stands for the scan's search for the smallest rank.  Entries are popped rank by
/// rank; those of one rank, leftmost first, are one pass of the scan.  An entry whose tokens
/// have changed since it was pushed is stale and skipped.  The pairs a merge makes are held
/// back until its pass ends and then pushed, as the scan looks at them only in its next
/// pass; with `ascending` (regular merges) those at or below the current rank are dropped,
/// as the scan's floor would.  Tokens form a linked list by position.  Checked against the
/// scan by `the_heap_merges_long_pieces_like_the_scan` (merges) and
/// `tests/test_supermerge_runs.py` (supermerge runs of up to 300 tokens against the
/// reference).
fn merge_heap(
    tokens: &mut Vec<TokenId>,
    rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>,
    ascending: bool,
) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let n = tokens.len();
    if n < 2 {
        return;
    }
    const NONE: usize = usize::MAX;
    let token = tokens;
    let mut next: Vec<usize> = (1..=n).collect(); // n = end
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect(); // NONE = start
    let mut alive = vec![true; n];
    let mut heap: BinaryHeap<Reverse<(u32, usize, TokenId, TokenId)>> = (0..n - 1)
        .filter_map(|i| rank(token[i], token[i + 1]).map(|(r, _)| Reverse((r, i, token[i], token[i + 1]))))
        .collect();
    let mut made = Vec::new();
    while let Some(&Reverse((current, _, _, _))) = heap.peek() {
        while let Some(&Reverse((r, i, a, b))) = heap.peek() {
            if r != current {
                break;
            }
            heap.pop();
            let j = next[i];
            if !alive[i] || j >= n || token[i] != a || token[j] != b {
                continue; // stale, or overlapping an occurrence just merged
            }
            let merged = rank(a, b).expect("a pair in the heap has a rank").1;
            token[i] = merged;
            alive[j] = false;
            next[i] = next[j];
            if next[i] < n {
                prev[next[i]] = i;
            }
            if prev[i] != NONE {
                made.push((prev[i], i));
            }
            if next[i] < n {
                made.push((i, next[i]));
            }
        }
        for (p, q) in made.drain(..) {
            // a pair noted by a merge may have changed since, by a later merge of the pass
            if !alive[p] || !alive[q] || next[p] != q {
                continue;
            }
            if let Some((r, _)) = rank(token[p], token[q]) {
                if !ascending || r > current {
                    heap.push(Reverse((r, p, token[p], token[q])));
                }
            }
        }
    }
    let mut w = 0;
    let mut i = 0;
    while i < n {
        token[w] = token[i];
        w += 1;
        i = next[i];
    }
    token.truncate(w);
}

/// [`merge_small`] for a run of `n` tokens (4 to [`TINY_RUN`]) at the start of `w`, whose
/// other entries are an id that is in no supermerge; returns the run's new length.
///
/// Every step works on the whole fixed width, with selects instead of loops whose length is
/// the run's: where the smallest rank is, whether it occurs again, closing the gap.  With
/// `merge_small`'s loops, their exits were about 40 % of a BoundlessBPE model's mispredicted
/// branches in supermerges (callgrind, 32K model, 1 MB of Gutenberg).  The padding makes the
/// pairs past the run's end look up as "no supermerge", so no step needs the length.
fn merge_tiny(w: &mut [TokenId; TINY_RUN + 1], n: usize, rank: impl Fn(TokenId, TokenId) -> u64) -> usize {
    debug_assert!((2..=TINY_RUN).contains(&n));
    // r[i]: the pair (w[i], w[i + 1]); NO_PAIR from the run's last token on
    let mut r = [NO_PAIR; TINY_RUN + 1];
    for i in 0..n - 1 {
        r[i] = rank(w[i], w[i + 1]);
    }
    let mut len = n;
    loop {
        let (mut best, mut at) = (r[0], 0);
        for (i, &x) in r.iter().enumerate().take(TINY_RUN).skip(1) {
            let smaller = x < best;
            best = if smaller { x } else { best };
            at = if smaller { i } else { at };
        }
        if best == NO_PAIR {
            return len;
        }
        let mut again = false; // a second occurrence that does not overlap the first
        for (i, &x) in r.iter().enumerate().take(TINY_RUN) {
            again |= (i >= at + 2) & (x == best);
        }
        if again {
            // rare: the general pass, then the padding put back
            let mut run = w[..len].to_vec();
            len = merge_small(&mut run, &rank);
            let pad = w[TINY_RUN];
            w[..len].copy_from_slice(&run[..len]);
            w[len..].fill(pad);
            return len;
        }
        w[at] = best as TokenId; // the low half
        for i in 0..TINY_RUN {
            // masks, not `if`: the compiler made the selects branches
            let keep = ((i <= at) as u64).wrapping_neg();
            w[i] = (w[i] & keep as u32) | (w[i + 1] & !keep as u32);
            r[i] = (r[i] & keep) | (r[i + 1] & !keep);
        }
        len -= 1;
        // the new token's two pairs (at the start, the right one twice)
        let left = at.saturating_sub(1);
        r[left] = rank(w[left], w[left + 1]);
        r[at] = rank(w[at], w[at + 1]);
    }
}

/// Supermerges on a run of at most [`SMALL_RUN`] tokens, in place; returns its new length.
/// `rank(a, b)` is the packed `index << 32 | result` of the pair or [`NO_PAIR`].  The same
/// steps as [`merge_scan`] without a floor: repeatedly the smallest index, at all its
/// non-overlapping positions left to right, and only pairs next to a new token looked up
/// again.
fn merge_small(run: &mut [TokenId], rank: impl Fn(TokenId, TokenId) -> u64) -> usize {
    let n = run.len();
    debug_assert!(n <= SMALL_RUN);
    if n < 2 {
        return n;
    }
    if n == 2 {
        // the most common run: one lookup
        let r = rank(run[0], run[1]);
        if r == NO_PAIR {
            return 2;
        }
        run[0] = r as TokenId;
        return 1;
    }
    if n == 3 {
        // the next most common run, without the scan's loops (same steps)
        let (r0, r1) = (rank(run[0], run[1]), rank(run[1], run[2]));
        if r0 == NO_PAIR && r1 == NO_PAIR {
            return 3;
        }
        // a tie is the pair twice, `(t, t), (t, t)`: the leftmost goes first
        let (left, right) = if r0 <= r1 {
            (r0 as TokenId, run[2])
        } else {
            (run[0], r1 as TokenId)
        };
        let r = rank(left, right);
        if r == NO_PAIR {
            run[0] = left;
            run[1] = right;
            return 2;
        }
        run[0] = r as TokenId;
        return 1;
    }
    // ranks[i]: the pair (run[i], run[i + 1])
    let mut ranks = [NO_PAIR; SMALL_RUN];
    for i in 0..n - 1 {
        ranks[i] = rank(run[i], run[i + 1]);
    }
    let mut len = n;
    loop {
        // the smallest rank and where it first occurs
        let (mut best, mut at) = (ranks[0], 0);
        for (i, &r) in ranks[..len - 1].iter().enumerate().skip(1) {
            if r < best {
                (best, at) = (r, i);
            }
        }
        if best == NO_PAIR {
            return len;
        }
        let merged = best as TokenId; // the low half
        if !ranks[(at + 2).min(len - 1)..len - 1].contains(&best) {
            // the pair occurs once (apart from an overlapping `(t, t)` that this merge uses
            // up): merge it, close the gap, look up its two new neighbours
            run[at] = merged;
            for i in at + 1..len - 1 {
                run[i] = run[i + 1];
            }
            for i in at + 1..len - 2 {
                ranks[i] = ranks[i + 1];
            }
            len -= 1;
            if len < 2 {
                return len;
            }
            if at > 0 {
                ranks[at - 1] = rank(run[at - 1], merged);
            }
            if at + 1 < len {
                ranks[at] = rank(merged, run[at + 1]);
            }
            continue;
        }
        // several occurrences: all of them, left to right, before any new pair counts
        let mut fresh: u64 = 0; // bit j: run[j] was just made
        let (mut read, mut write) = (0, 0);
        while read < len {
            if read + 1 < len && ranks[read] == best {
                run[write] = merged;
                fresh |= 1 << write;
                read += 2;
            } else {
                run[write] = run[read];
                if read + 1 < len {
                    ranks[write] = ranks[read]; // still right unless the next token is new
                }
                read += 1;
            }
            write += 1;
        }
        len = write;
        if len < 2 {
            return len;
        }
        for j in 0..len - 1 {
            if fresh >> j & 3 != 0 {
                ranks[j] = rank(run[j], run[j + 1]);
            }
        }
    }
}

/// The scan for short sequences: repeatedly apply the pair with the smallest rank at all its
/// non-overlapping positions, left to right (as [`apply_merge`]); with `ascending`, only ranks
/// above the last one applied count (regular merges), else any (supermerges).
///
/// Each adjacent pair's `(rank, merged)` is looked up once and kept; after a merge, only the
/// pairs next to a new token are looked up again.  The plain scan looked up every pair after
/// every merge: on a BoundlessBPE model that was 16 % of encoding (perf, 4 MB of Gutenberg,
/// mostly supermerge runs of common words).  A rank is one merge, so the positions holding
/// the smallest rank are exactly the occurrences of its pair.
fn merge_scan(
    tokens: &mut Vec<TokenId>,
    rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>,
    ascending: bool,
) {
    const NONE: (u32, TokenId) = (u32::MAX, 0);
    let n = tokens.len();
    if n < 2 {
        return;
    }
    // ranks[i]: the pair (tokens[i], tokens[i + 1]); fresh[i]: tokens[i] was just made
    let mut ranks: smallvec::SmallVec<[(u32, TokenId); 32]> = tokens
        .windows(2)
        .map(|w| rank(w[0], w[1]).unwrap_or(NONE))
        .collect();
    let mut fresh: smallvec::SmallVec<[bool; 32]> = smallvec::smallvec![false; n];
    let mut floor = 0u32; // ranks below this can no longer apply
    loop {
        let len = tokens.len();
        let mut best = NONE;
        for &r in &ranks[..len - 1] {
            if r.0 >= floor && r.0 < best.0 {
                best = r;
            }
        }
        if best.0 == u32::MAX {
            return;
        }
        let (mut read, mut write) = (0, 0);
        while read < len {
            if read + 1 < len && ranks[read].0 == best.0 {
                tokens[write] = best.1;
                fresh[write] = true;
                read += 2;
            } else {
                tokens[write] = tokens[read];
                fresh[write] = false;
                if read + 1 < len {
                    ranks[write] = ranks[read]; // still right unless the next token is new
                }
                read += 1;
            }
            write += 1;
        }
        tokens.truncate(write);
        if write < 2 {
            return;
        }
        for j in 0..write - 1 {
            if fresh[j] || fresh[j + 1] {
                ranks[j] = rank(tokens[j], tokens[j + 1]).unwrap_or(NONE);
            }
        }
        if ascending {
            floor = best.0 + 1;
        }
    }
}

/// What the Python seam needs of an encoder (superword models and tiktoken ranks models).
pub trait Encode: Sync {
    /// Token ids of `text`, special tokens read as text.
    fn encode_ordinary(&self, text: &str) -> Result<Vec<TokenId>>;

    /// The bytes of `ids`; an id that is not a token is an error naming its position.
    fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>>;

    /// The bytes of a token id that encoding produced.
    fn token(&self, id: TokenId) -> &[u8];

    /// The special tokens among `names` that this encoder has, ready to cut texts at.
    fn allowed(&self, names: &[String]) -> Result<Allowed>;

    /// Token ids of `text`, recognising the special tokens in `allowed`.
    fn encode(&self, text: &str, allowed: &[String]) -> Result<Vec<TokenId>> {
        let allowed = self.allowed(allowed)?;
        let mut out = Vec::with_capacity(text.len() / 3);
        self.encode_append(text, &allowed, &mut out)?;
        Ok(out)
    }

    /// Append the ids of `text` to `out`, with the `allowed` special tokens recognised.
    fn encode_append(&self, text: &str, allowed: &Allowed, out: &mut Vec<TokenId>) -> Result<()>;

    /// Many texts in parallel on the current rayon pool, kept by group (see [`batch`]).
    fn encode_batch_groups(&self, texts: &[&str], allowed: &[String]) -> Result<batch::Batch> {
        batch::encode(self, texts, &self.allowed(allowed)?)
    }

    /// Many texts in parallel on the current rayon pool; results keep their order.
    fn encode_batch(&self, texts: &[&str], allowed: &[String]) -> Result<Vec<Vec<TokenId>>> {
        Ok(self
            .encode_batch_groups(texts, allowed)?
            .texts()
            .map(<[TokenId]>::to_vec)
            .collect())
    }

    /// [`Encode::encode_batch`] into one buffer: all ids, and `texts.len() + 1` offsets.
    fn encode_batch_flat(&self, texts: &[&str], allowed: &[String]) -> Result<(Vec<TokenId>, Vec<u64>)> {
        Ok(self.encode_batch_groups(texts, allowed)?.into_flat())
    }
}

impl Encode for Encoder {
    fn encode_ordinary(&self, text: &str) -> Result<Vec<TokenId>> {
        Encoder::encode_ordinary(self, text)
    }

    fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>> {
        Encoder::decode_bytes(self, ids)
    }

    fn token(&self, id: TokenId) -> &[u8] {
        &self.vocab[id as usize]
    }

    fn allowed(&self, names: &[String]) -> Result<Allowed> {
        self.special.allowed(names)
    }

    fn encode_append(&self, text: &str, allowed: &Allowed, out: &mut Vec<TokenId>) -> Result<()> {
        allowed.split(text, |part| match part {
            Part::Text(t) => self.encode_into(t, true, out),
            Part::Special(id) => {
                out.push(id);
                Ok(())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Kind, Merge, Merges, Settings};

    /// A model whose merges make tokens from a few letters, in a fixed order.
    fn model() -> Model {
        let mut vocab: Vec<Vec<u8>> = crate::tokens::byte_token_values().map(|b| vec![b]).collect();
        let mut merges = Merges::default();
        for (l, r) in [
            ("a", "b"),
            ("b", "a"),
            ("a", "a"),
            ("ab", "a"),
            ("ba", "b"),
            ("aa", "aa"),
            ("ab", "ab"),
            ("b", "b"),
            ("aba", "bb"),
            ("bb", "a"),
        ] {
            merges.push(Merge {
                left: l.as_bytes(),
                right: r.as_bytes(),
                count: 1,
                flag: false,
            });
            let t = [l.as_bytes(), r.as_bytes()].concat();
            if !vocab.contains(&t) {
                vocab.push(t);
            }
        }
        let n = vocab.len();
        Model {
            kind: Kind::Word,
            settings: Settings {
                main_regex: crate::pretokenize::GPT4O.into(),
                script_specific_regex: None,
                script_specific_scripts: None,
                merge_pattern: crate::pretokenize::MERGE_PATTERN.into(),
                tau: 1.1,
                blowup: false,
            },
            vocab: vocab.into(),
            counts: vec![0; n],
            is_super: vec![false; n],
            merges,
            supermerges: Merges::default(),
            special_tokens: Vec::new(),
            ngrams: None,
            deletions: Vec::new(),
        }
    }

    type Pairs = FxHashMap<(TokenId, TokenId), (u32, TokenId)>;

    /// The plain scan: every pair looked up after every merge, the smallest rank applied (with
    /// `ascending`, only ranks above the last one applied).
    fn plain_scan(start: &[TokenId], table: &Pairs, ascending: bool) -> Vec<TokenId> {
        let mut plain = start.to_vec();
        let mut last: i64 = -1;
        loop {
            let mut best: Option<(u32, (TokenId, TokenId), TokenId)> = None;
            for w in plain.windows(2) {
                if let Some(&(r, merged)) = table.get(&(w[0], w[1])) {
                    if (!ascending || r as i64 > last) && best.is_none_or(|b| r < b.0) {
                        best = Some((r, (w[0], w[1]), merged));
                    }
                }
            }
            let Some((r, pair, merged)) = best else { break };
            apply_merge(&mut plain, pair, merged);
            last = r as i64;
        }
        plain
    }

    /// `table` as the packed ranks of the supermerge scans.
    fn packed(table: &Pairs) -> impl Fn(TokenId, TokenId) -> u64 + Copy + '_ {
        |a, b| {
            table
                .get(&(a, b))
                .map_or(NO_PAIR, |&(r, m)| (r as u64) << 32 | m as u64)
        }
    }

    /// [`merge_tiny`] on `start` padded with an id in no pair (as `supermerge` pads), the
    /// padding checked to be left as it was.
    fn tiny_merged(start: &[TokenId], table: &Pairs) -> Vec<TokenId> {
        let mut w = [TokenId::MAX; TINY_RUN + 1];
        w[..start.len()].copy_from_slice(start);
        let n = merge_tiny(&mut w, start.len(), packed(table));
        assert!(w[n..].iter().all(|&t| t == TokenId::MAX), "{w:?}");
        w[..n].to_vec()
    }

    /// [`merge_scan`], [`merge_heap`] and [`merge_small`] (the supermerges' scan) against the
    /// plain scan (every pair looked up after every merge).
    #[test]
    fn the_kept_ranks_scan_merges_like_the_plain_scan() {
        let mut rng = crate::XorShift(0x0BAD_5EED_1234_5678);
        for round in 0..6000 {
            let alphabet = 2 + rng.below(3) as TokenId;
            // random pairs with distinct ranks; results above the alphabet
            let mut table = Pairs::default();
            let tokens_made = 2 + rng.below(12) as TokenId;
            for k in 0..tokens_made {
                // half of the tables use made tokens in pairs of smaller ranks than their own
                // (as a hand-made model file may), which the ascending order never meets
                let top = alphabet + if round % 3 == 0 { tokens_made } else { k };
                let pair = (rng.below(top as u64) as TokenId, rng.below(top as u64) as TokenId);
                let r = table.len() as u32 * 3 + rng.below(3) as u32;
                table.entry(pair).or_insert((r, alphabet + k));
            }
            let len = 1 + rng.below(if round % 4 < 2 { 40 } else { 200 }) as usize;
            let start: Vec<TokenId> = (0..len).map(|_| rng.below(alphabet as u64) as TokenId).collect();
            let ascending = round % 2 == 0;
            let plain = plain_scan(&start, &table, ascending);
            let mut kept = start.clone();
            merge_scan(&mut kept, |a, b| table.get(&(a, b)).copied(), ascending);
            assert_eq!(plain, kept, "{start:?} {table:?}");
            let mut heaped = start.clone();
            merge_heap(&mut heaped, |a, b| table.get(&(a, b)).copied(), ascending);
            assert_eq!(plain, heaped, "heap: {start:?} {table:?}");
            if !ascending && len <= SMALL_RUN {
                let mut small = start.clone();
                let n = merge_small(&mut small, packed(&table));
                assert_eq!(plain, small[..n], "{start:?} {table:?}");
                if (2..=TINY_RUN).contains(&len) {
                    assert_eq!(plain, tiny_merged(&start, &table), "tiny: {start:?} {table:?}");
                }
            }
        }
    }

    /// [`merge_tiny`] on every short run over a tiny alphabet, against the plain scan, with
    /// tables where made tokens form pairs of smaller index (so that merging a pair's
    /// occurrences one at a time, instead of all of them before any new pair counts, fails).
    #[test]
    fn the_tiny_merge_merges_like_the_plain_scan() {
        let mut rng = crate::XorShift(0x7777_1234_0BAD_F00D);
        for _ in 0..250 {
            let alphabet = 2 + rng.below(2) as TokenId;
            let mut table = Pairs::default();
            let tokens_made = 1 + rng.below(8) as TokenId;
            for k in 0..tokens_made {
                let top = (alphabet + tokens_made) as u64;
                let pair = (rng.below(top) as TokenId, rng.below(top) as TokenId);
                let r = table.len() as u32;
                table.entry(pair).or_insert((r, alphabet + k));
            }
            for len in 2..=TINY_RUN {
                // every run of this length over the alphabet
                for code in 0..(alphabet as u64).pow(len as u32) {
                    let start: Vec<TokenId> = (0..len)
                        .map(|i| (code / (alphabet as u64).pow(i as u32) % alphabet as u64) as TokenId)
                        .collect();
                    let plain = plain_scan(&start, &table, false);
                    assert_eq!(plain, tiny_merged(&start, &table), "{start:?} {table:?}");
                }
            }
        }
    }

    #[test]
    fn the_heap_merges_long_pieces_like_the_scan() {
        let enc = Encoder::new(&model(), false).unwrap();
        let mut rng = crate::XorShift(0x1234_5678_9ABC_DEF1);
        for len in [49, 50, 64, 100, 257, 1000] {
            for _ in 0..50 {
                let piece: Vec<u8> = (0..len)
                    .map(|_| [b'a', b'b', b'a', b'c'][rng.below(4) as usize])
                    .collect();
                let (mut scan, mut heap) = (Vec::new(), Vec::new());
                // the scan, forced by calling the short path's loop on the long piece
                let mut tokens: Vec<TokenId> =
                    piece.iter().map(|&b| enc.byte_ids[b as usize].unwrap()).collect();
                let mut last: i64 = -1;
                while tokens.len() > 1 {
                    let mut best: Option<(u32, (TokenId, TokenId), TokenId)> = None;
                    for w in tokens.windows(2) {
                        if let Some(&(rank, merged)) = enc.ranks.get(&(w[0], w[1])) {
                            if rank as i64 > last && best.is_none_or(|b| rank < b.0) {
                                best = Some((rank, (w[0], w[1]), merged));
                            }
                        }
                    }
                    let Some((rank, pair, merged)) = best else { break };
                    apply_merge(&mut tokens, pair, merged);
                    last = rank as i64;
                }
                scan.extend(tokens);
                let bytes: Vec<TokenId> = piece.iter().map(|&b| enc.byte_ids[b as usize].unwrap()).collect();
                merge_by_rank(bytes, |a, b| enc.ranks.get(&(a, b)).copied(), &mut heap);
                assert_eq!(scan, heap, "{}", String::from_utf8_lossy(&piece));
            }
        }
    }

    #[test]
    fn pipelined_batches_hand_over_every_text_in_order_and_stop_at_an_error() {
        let encoder = Encoder::new(&model(), false).unwrap();
        // several groups of `batch::MIN_GROUP_BYTES`, texts of uneven lengths
        let mut seed = 7u64;
        let texts: Vec<String> = (0..3000)
            .map(|i| {
                let n = 1 + (i * 37) % 300;
                (0..n)
                    .map(|_| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        [b'a', b'b', b' ', b'.'][(seed >> 62) as usize] as char
                    })
                    .collect()
            })
            .collect();
        let texts: Vec<&str> = texts.iter().map(|t| t.as_str()).collect();
        let want = encoder.encode_batch(&texts, &[]).unwrap();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let mut got: Vec<Vec<TokenId>> = Vec::new();
        let take = |ids: &[TokenId]| {
            got.push(ids.to_vec());
            Ok::<(), Error>(())
        };
        batch::encode_pipelined(&pool, &encoder, &texts, &Allowed::none(), take, |f| f()).unwrap();
        assert_eq!(got, want);
        // an error of `take` ends the call with it, after exactly the texts before it
        let mut seen = 0;
        let failing = |_: &[TokenId]| {
            seen += 1;
            if seen == 1234 {
                Err(Error::Value("stop here".into()))
            } else {
                Ok(())
            }
        };
        let e =
            batch::encode_pipelined(&pool, &encoder, &texts, &Allowed::none(), failing, |f| f()).unwrap_err();
        assert_eq!((e.to_string(), seen), ("stop here".to_string(), 1234));
    }
}
