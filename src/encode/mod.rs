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
use crate::model::{Merges, Model};
use crate::pretokenize::Pretokenizer;
use crate::tokens::ngram::{prefix_set, split_one};
use crate::tokens::TokenId;
use crate::tokens::{ByteStrings, StringIndex};

pub mod batch;
pub mod cache;
pub mod decode;
pub mod specials;

use cache::{PieceCache, Table, CACHED};
use decode::TokenBytes;
pub use specials::{Allowed, Part, Specials};

mod merge;
mod picky;
mod reach;

pub use merge::merge_by_rank;
pub(crate) use merge::{merge_heap, merge_scan};
use merge::{merge_small, merge_tiny, NO_PAIR, SMALL_RUN, TINY_RUN};
use picky::Picky;

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
    /// ids by bytes, over `vocab`
    ids: StringIndex,
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
    /// the merges and deletions of a model with PickyBPE deletions, or with a pair merged
    /// twice (then `ranks` is unused)
    picky: Option<Picky>,
    /// special tokens, and what cutting texts at them needs
    special: Specials,
    /// what pretokens that missed the shortcut became, per thread
    cache: PieceCache,
    /// the tokens' bytes for decoding, made at the first decode (a copy of `vocab`, laid out
    /// for copying blocks; a model whose tokens take hundreds of megabytes and that only
    /// encodes does not hold them twice more)
    decoder: std::sync::OnceLock<TokenBytes>,
}

impl Encoder {
    pub fn new(model: &Model, greedy_split: bool) -> Result<Encoder> {
        let s = &model.settings;
        let pretokenizer = Pretokenizer::new(
            &s.main_regex,
            s.script_specific_regex.as_deref(),
            s.script_specific_scripts.as_deref(),
        )?;
        let vocab = model.vocab.clone();
        let index = StringIndex::new(&vocab);
        let ids = |t: &[u8]| index.get(&vocab, t);
        let mut byte_ids = [None; 256];
        for b in 0..=255u8 {
            byte_ids[b as usize] = ids(&[b]);
        }
        let table = |merges: &Merges| -> Result<FxHashMap<(TokenId, TokenId), (u32, TokenId)>> {
            let mut out = FxHashMap::default();
            // one buffer for every merge's bytes rather than a new vector each (with tokens of
            // megabytes, every new vector was fresh pages for the kernel to zero)
            let mut merged = Vec::new();
            for (i, m) in merges.iter().enumerate() {
                merged.clear();
                merged.extend_from_slice(m.left);
                merged.extend_from_slice(m.right);
                let find = |t: &[u8]| {
                    ids(t).ok_or_else(|| {
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
        let ranks = if model.deletions.is_empty() {
            table(&model.merges)?
        } else {
            FxHashMap::default()
        };
        // a pair merged twice applies again at its later index once the first is past (SPEC
        // 7.3); the table holds one index per pair, the replay of `Picky` all of them.  Only
        // a model with deletions or a hand-made file repeats a pair.
        let picky = if model.deletions.is_empty() && ranks.len() == model.merges.len() {
            None
        } else {
            Some(Picky::new(model, &ids)?)
        };
        let ranks = if picky.is_some() {
            FxHashMap::default()
        } else {
            ranks
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
                .filter_map(|g| g.iter().map(|t| ids(t)).collect::<Option<Box<[TokenId]>>>())
                .collect();
            let prefixes = prefix_set(&set);
            Some((set, prefixes))
        } else {
            None
        };
        let mut enc = Encoder {
            pretokenizer,
            vocab,
            ids: index,
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
            decoder: std::sync::OnceLock::new(),
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

    /// Word tokens whose text, encoded alone without the shortcut, is that one token (SPEC
    /// 3, rule 1).  Which tokens step 3 makes from their own bytes comes from the merges'
    /// structure ([`reach`]); the text is still pre-tokenized, once.  A model that step 3
    /// replays with [`Picky`] (deletions, or a pair merged twice) has every token encoded
    /// alone ([`Encoder::reachable_by_encoding`]).
    fn find_reachable(&self, is_super: &[bool]) -> Result<Vec<bool>> {
        if self.picky.is_some() {
            return self.reachable_by_encoding(is_super);
        }
        let single = reach::single_by_merges(self.vocab.len(), &self.byte_ids, &self.ranks);
        crate::threads::parallel(|| self.reachable_in_pool(is_super, &single))?
    }

    fn reachable_in_pool(&self, is_super: &[bool], single: &[bool]) -> Result<Vec<bool>> {
        // step 3 on a piece's bytes is one token when they are a token `single` holds
        let one = |piece: &[u8]| self.ids.get(&self.vocab, piece).filter(|&t| single[t as usize]);
        self.each_word_token(is_super, |text| {
            // each pretoken's tokens; a pretoken of several ends the test (`None`)
            let mut tokens: Option<Vec<TokenId>> = Some(Vec::new());
            self.pretokenizer.for_each(text, |piece| {
                let next = tokens.as_ref().and(one(piece.as_bytes()));
                match (tokens.as_mut(), next) {
                    (Some(t), Some(x)) => t.push(x),
                    _ => tokens = None,
                }
            })?;
            let Some(mut tokens) = tokens else {
                return Ok(false);
            };
            if tokens.len() >= 2 {
                // one token in the end only when all are in supermerges and step 4 joins
                // them (a word token stays apart from the rest)
                if self.super_ranks.is_empty() || tokens.iter().any(|&t| self.super_part[t as usize] == 0) {
                    return Ok(false);
                }
                self.flush(&mut tokens, 0);
            }
            Ok(tokens.len() == 1)
        })
    }

    /// `test` of each word token's text, in parallel; super tokens and tokens that are not
    /// UTF-8 (no text encodes to them alone) are false.
    fn each_word_token(
        &self,
        is_super: &[bool],
        test: impl Fn(&str) -> Result<bool> + Sync,
    ) -> Result<Vec<bool>> {
        (0..self.vocab.len())
            .into_par_iter()
            .map(|id| match std::str::from_utf8(&self.vocab[id]) {
                Ok(text) if !is_super[id] => test(text),
                _ => Ok(false),
            })
            .collect()
    }

    /// The definition of the reachable tokens: each non-super token's text encoded alone,
    /// without the shortcut.  Used for the models [`Picky`] replays, and by the tests as the oracle
    /// of [`Encoder::find_reachable`].
    #[doc(hidden)]
    pub fn reachable_by_encoding(&self, is_super: &[bool]) -> Result<Vec<bool>> {
        crate::threads::parallel(|| {
            self.each_word_token(is_super, |text| {
                let mut out = Vec::new();
                self.encode_into(text, false, &mut out)?;
                Ok(out.len() == 1)
            })
        })?
    }

    /// Which token ids are reachable (the shortcut's tokens), for tests.
    #[doc(hidden)]
    pub fn reachable(&self) -> &[bool] {
        &self.reachable
    }

    /// The token a pretoken's bytes are when it is a reachable token (the shortcut's test).
    pub fn single_token(&self, bytes: &[u8]) -> Option<TokenId> {
        self.ids
            .get(&self.vocab, bytes)
            .filter(|&id| self.reachable[id as usize])
    }

    pub fn vocab(&self) -> &ByteStrings {
        &self.vocab
    }

    pub fn id_of(&self, bytes: &[u8]) -> Option<TokenId> {
        self.ids.get(&self.vocab, bytes)
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
    /// What step 4 costs, and what it would have to cost (the target is a BoundlessBPE
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
        let decoder = self
            .decoder
            .get_or_init(|| TokenBytes::new(self.vocab.iter().enumerate().map(|(i, t)| (i as TokenId, t))));
        decoder.decode(
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
    use crate::tokens::pairs::apply_merge;

    /// A model whose merges make tokens from a few letters, in a fixed order.
    pub(super) fn model() -> Model {
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
