//! Encoding with an extension model (SPEC 10.4): the base's ids for every pretoken, then the
//! supermerges over runs of single-token pretokens (SPEC 7.4).
//!
//! The loop is the superword encoder's (`Encoder::encode_pieces`), with the base's ranks in
//! place of the word model: pretokens are looked up a block at a time with their slots
//! prefetched, in this thread's table of `encode/cache.rs`, which holds the base's tokens and
//! what the pretokens that are not tokens became, so a pretoken costs one lookup, whether it
//! is a token, one seen before, or new (then merged by rank and remembered).

use rustc_hash::{FxHashMap, FxHashSet};

use super::Extension;
use crate::encode::cache::{default_capacity, PieceCache, Table, CACHED};
use crate::encode::decode::TokenBytes;
use crate::encode::{merge_heap, merge_scan, Allowed, Encode, Part, Specials};
use crate::error::{Error, Result};
use crate::key::{Block, ByteMap, Prefetched};
use crate::pretokenize::Matcher;
use crate::ranks::byte_pair_parts;
use crate::tokens::TokenId;

/// An extension model ready to encode.
pub struct ExtensionEncoder {
    pub ext: Extension,
    matcher: Matcher,
    /// the base's tokens: the shortcut and the byte-pair merge of each pretoken
    base: ByteMap,
    /// every token (base and superwords), for `id_of`
    all: ByteMap,
    decoder: TokenBytes,
    specials: Specials,
    /// (left, right) -> (index of the first supermerge of the pair, the id it makes)
    super_rank: FxHashMap<(TokenId, TokenId), (u32, TokenId)>,
    /// by id: [`LEFT`] when the token is the left part of some supermerge, [`RIGHT`] when the
    /// right; a token with either is a part, and extends a run.  (A flag per id: a hash set's
    /// lookup was paid for every pretoken; a pair is looked up in `super_rank` only when its
    /// tokens can be a supermerge's left and right.)
    parts: Vec<u8>,
    /// per-thread tables: the base's tokens and what the other pretokens became
    cache: PieceCache,
    superword_ids: std::ops::Range<u64>,
    top: u32,
}

impl ExtensionEncoder {
    pub fn new(ext: Extension) -> Result<ExtensionEncoder> {
        let matcher = Matcher::new(&ext.pattern, "pattern")?;
        let base = ByteMap::new(ext.base.iter().map(|(i, t)| (t.as_slice(), *i)))?;
        let supers = ext.superwords.iter().map(|(i, t, _)| (t.as_slice(), *i));
        let all = ByteMap::new(ext.base.iter().map(|(i, t)| (t.as_slice(), *i)).chain(supers))?;
        let decoder = TokenBytes::new(
            ext.base
                .iter()
                .map(|(i, t)| (*i, t.as_slice()))
                .chain(ext.superwords.iter().map(|(i, t, _)| (*i, t.as_slice()))),
        );
        let specials = Specials::new(ext.special.clone());
        let mut super_rank = FxHashMap::default();
        let top_id = (ext.base.iter().map(|(i, _)| *i))
            .chain(ext.superwords.iter().map(|(i, _, _)| *i))
            .max()
            .unwrap_or(0);
        let mut parts = vec![0u8; top_id as usize + 1];
        for (k, m) in ext.supermerges.iter().enumerate() {
            let joined = [decoder_bytes(&ext, m.left), decoder_bytes(&ext, m.right)].concat();
            let made = all
                .get(&joined)
                .ok_or_else(|| Error::internal("a supermerge makes bytes that are no token"))?;
            super_rank.entry((m.left, m.right)).or_insert((k as u32, made));
            parts[m.left as usize] |= LEFT;
            parts[m.right as usize] |= RIGHT;
        }
        let start = ext.base_end();
        let superword_ids = start..start + ext.superwords.len() as u64;
        let top = (ext.base.iter().map(|(i, _)| *i))
            .chain(ext.special.iter().map(|(_, i)| *i))
            .chain(ext.superwords.iter().map(|(i, _, _)| *i))
            .max()
            .unwrap_or(0);
        let cache = PieceCache::seeded(
            ext.base.iter().map(|(i, t)| (t.as_slice(), *i)),
            default_capacity(ext.base.len()),
        )?;
        Ok(ExtensionEncoder {
            ext,
            matcher,
            base,
            all,
            decoder,
            specials,
            super_rank,
            parts,
            cache,
            superword_ids,
            top,
        })
    }

    /// One more than the largest id, special tokens included.
    pub fn vocab_size(&self) -> usize {
        self.top as usize + 1
    }

    pub fn id_of(&self, bytes: &[u8]) -> Option<TokenId> {
        self.all.get(bytes)
    }

    pub fn is_superword(&self, id: i64) -> bool {
        id >= 0 && self.superword_ids.contains(&(id as u64))
    }

    pub fn token_bytes(&self, id: TokenId) -> Option<Vec<u8>> {
        self.decode_bytes(&[i64::from(id)]).ok()
    }

    /// This encoder with `tokens` added as special tokens with the next free ids.
    pub fn with_special_tokens(&self, tokens: Vec<String>) -> Result<ExtensionEncoder> {
        let mut ext = self.ext.clone();
        let mut next = Some(self.top + 1).filter(|_| self.top < u32::MAX);
        let mut seen: FxHashSet<String> = ext.special.iter().map(|(s, _)| s.clone()).collect();
        for t in tokens {
            if !seen.insert(t.clone()) {
                return Err(Error::Value(format!("special token {t:?} is already registered")));
            }
            let id = next.ok_or_else(|| crate::model::no_id_left(&t))?;
            ext.special.push((t, id));
            next = id.checked_add(1);
        }
        ExtensionEncoder::new(ext)
    }

    /// The base's ids of one pretoken that is not a base token (tiktoken's merge).
    fn merge_piece(&self, raw: &[u8], out: &mut Vec<TokenId>) -> Result<()> {
        let bounds = byte_pair_parts(raw, |b| self.base.get(b));
        for w in bounds.windows(2) {
            let part = &raw[w[0]..w[1]];
            let id = self.base.get(part).ok_or_else(|| {
                Error::Value(format!(
                    "the base has no token for the bytes {part:?}: it lacks single bytes"
                ))
            })?;
            out.push(id);
        }
        Ok(())
    }

    /// SPEC 7.4 on the run `out[start..]`: the smallest-index supermerge at all its places,
    /// left to right, again and again.  Runs of up to [`SCAN_RUN`] tokens (nearly all of them
    /// in prose) take a plain scan, a pass per supermerge applied; longer ones a heap, so that
    /// a run of a million repeated words costs O(n log n), not a pass per supermerge.
    fn supermerge(&self, out: &mut Vec<TokenId>, start: usize) {
        let parts = &self.parts;
        let rank = |a: TokenId, b: TokenId| {
            if parts[a as usize] & LEFT != 0 && parts[b as usize] & RIGHT != 0 {
                self.super_rank.get(&(a, b)).copied()
            } else {
                None
            }
        };
        // (the superword encoder's kernels: a pair has one supermerge index, so the smallest
        // index stands for one pair, as they need)
        if out.len() - start <= SCAN_RUN {
            let len = merge_scan(&mut out[start..], rank, false);
            out.truncate(start + len);
        } else {
            let mut run = out.split_off(start);
            merge_heap(&mut run, rank, false);
            out.extend_from_slice(&run);
        }
    }

    /// The run `out[run..]` is over: its supermerges, if it holds two tokens or more.
    #[inline(always)]
    fn flush(&self, out: &mut Vec<TokenId>, run: usize) {
        if out.len() - run >= 2 {
            self.supermerge(out, run);
        }
    }

    /// Append the ids of `text` (no special tokens) to `out`.
    fn encode_into(&self, text: &str, out: &mut Vec<TokenId>) -> Result<()> {
        self.cache
            .with(text.len(), |table| self.encode_pieces(text, table, out))
    }

    /// [`ExtensionEncoder::encode_into`] with this thread's table, if it has one yet.
    fn encode_pieces(&self, text: &str, table: Option<&mut Table>, out: &mut Vec<TokenId>) -> Result<()> {
        // where the current run of supermerge parts starts in `out`
        let mut run = out.len();
        let mut failed: Option<Error> = None;
        let mut block = Block::default();
        match table {
            Some(table) => {
                let mut blocks =
                    Prefetched::new(
                        table,
                        text.as_bytes(),
                        &mut block,
                        |t, piece, value| match value {
                            Some(id) if id & CACHED == 0 => self.token(id, out, &mut run),
                            _ => {
                                self.flush(out, run);
                                let made = t.ids_or_merge(piece, value, out, |o| self.merge_piece(piece, o));
                                if let Err(e) = made {
                                    failed.get_or_insert(e);
                                }
                                run = out.len();
                            }
                        },
                    );
                self.matcher
                    .for_each_piece(text, &mut |piece| blocks.push(piece.as_bytes()))?;
                blocks.finish();
            }
            None => {
                let mut blocks =
                    Prefetched::new(&self.base, text.as_bytes(), &mut block, |_, piece, id| match id {
                        Some(id) => self.token(id, out, &mut run),
                        None => {
                            self.flush(out, run);
                            if let Err(e) = self.merge_piece(piece, out) {
                                failed.get_or_insert(e);
                            }
                            run = out.len();
                        }
                    });
                self.matcher
                    .for_each_piece(text, &mut |piece| blocks.push(piece.as_bytes()))?;
                blocks.finish();
            }
        }
        self.flush(out, run);
        failed.map_or(Ok(()), Err)
    }

    /// A pretoken that is the base token `id`: a part extends the run, any other token ends it.
    #[inline(always)]
    fn token(&self, id: TokenId, out: &mut Vec<TokenId>, run: &mut usize) {
        if self.parts[id as usize] == 0 {
            self.flush(out, *run);
            out.push(id);
            *run = out.len();
        } else {
            out.push(id);
        }
    }
}

/// [`ExtensionEncoder::parts`]: the token is a supermerge's left part.
const LEFT: u8 = 1;
/// [`ExtensionEncoder::parts`]: the token is a supermerge's right part.
const RIGHT: u8 = 2;

/// Runs longer than this many tokens are merged with a heap (see `ExtensionEncoder::supermerge`).
const SCAN_RUN: usize = 64;

fn decoder_bytes(ext: &Extension, id: TokenId) -> &[u8] {
    // (only while building the encoder: the model's ids were checked by the reader or made by
    // training, so every part is found)
    if let Ok(k) = ext.base.binary_search_by_key(&id, |(i, _)| *i) {
        return &ext.base[k].1;
    }
    match ext.superwords.binary_search_by_key(&id, |(i, _, _)| *i) {
        Ok(k) => &ext.superwords[k].1,
        Err(_) => &[],
    }
}

impl Encode for ExtensionEncoder {
    fn encode_ordinary(&self, text: &str) -> Result<Vec<TokenId>> {
        let mut out = Vec::with_capacity(text.len() / 3);
        self.encode_into(text, &mut out)?;
        Ok(out)
    }

    fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>> {
        self.decoder.decode(
            ids,
            |id| self.specials.text(id),
            |id, position| {
                Error::Value(format!(
                    "token id {id} at position {position} is out of range (no token has this id)"
                ))
            },
        )
    }

    fn token(&self, id: TokenId) -> &[u8] {
        decoder_bytes(&self.ext, id)
    }

    fn allowed(&self, names: &[String]) -> Result<Allowed> {
        self.specials.allowed(names)
    }

    fn encode_append(&self, text: &str, allowed: &Allowed, out: &mut Vec<TokenId>) -> Result<()> {
        allowed.split(text, |part| match part {
            Part::Text(t) => self.encode_into(t, out),
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
    use crate::extend::tests::small;

    #[test]
    fn encoding_applies_supermerges_over_single_token_runs_only() {
        let enc = ExtensionEncoder::new(small()).unwrap();
        assert_eq!(
            enc.encode_ordinary(" cat sat, a cat").unwrap(),
            vec![301, 44, 32, 97, 258]
        );
        let allowed = enc.allowed(&["<|end|>".to_string()]).unwrap();
        let mut out = Vec::new();
        enc.encode_append(" cat<|end|> sat", &allowed, &mut out).unwrap();
        assert_eq!(out, vec![258, 300, 259]);
        assert_eq!(enc.decode_bytes(&[301, 300]).unwrap(), b" cat sat<|end|>");
    }

    #[test]
    fn the_per_thread_table_gives_the_ids_of_the_merge() {
        // one encoder whose thread makes its table at once (tiny: it fills and starts again),
        // one without: every text alike, the pieces that are not tokens included
        let mut cached = ExtensionEncoder::new(small()).unwrap();
        cached.cache = PieceCache::seeded(cached.ext.base.iter().map(|(i, t)| (t.as_slice(), *i)), 3)
            .unwrap()
            .at_once();
        let mut plain = ExtensionEncoder::new(small()).unwrap();
        plain.cache = PieceCache::new(0);
        let words = [
            " cat", " sat", " cats", " scat", " mat", "a", " at", ",", " catsat", " s",
        ];
        let mut rng = crate::XorShift(7);
        for _ in 0..300 {
            let text: String = (0..1 + rng.below(12))
                .map(|_| words[rng.below(words.len() as u64) as usize])
                .collect();
            let (a, b) = (cached.encode_ordinary(&text), plain.encode_ordinary(&text));
            assert_eq!(a.unwrap(), b.unwrap(), "{text:?}");
        }
        assert_eq!(
            cached.encode_ordinary(" cat sat cats").unwrap(),
            vec![301, 258, 115]
        );
    }

    #[test]
    fn the_heap_merges_runs_as_the_scan_does() {
        // random supermerge tables over a few tokens (merged ids that may be parts of other
        // pairs), random runs: the heap's result is the scan's
        let mut rng = crate::XorShift(0x9E37_79B9_7F4A_7C15);
        for round in 0..400 {
            let alphabet = 2 + rng.below(5) as u32;
            let mut table: FxHashMap<(TokenId, TokenId), (u32, TokenId)> = FxHashMap::default();
            for k in 0..rng.below(12) as u32 {
                let (a, b) = (
                    rng.below(alphabet as u64 + 4) as u32,
                    rng.below(alphabet as u64 + 4) as u32,
                );
                let made = alphabet + rng.below(6) as u32;
                table.entry((a, b)).or_insert((k, made)); // (an index per pair, as in a model)
            }
            let len = 1 + rng.below(if round % 4 == 0 { 300 } else { 12 }) as usize;
            let run: Vec<TokenId> = (0..len).map(|_| rng.below(alphabet as u64) as u32).collect();
            let rank = |a, b| table.get(&(a, b)).copied();
            let mut scanned = run.clone();
            let left = merge_scan(&mut scanned, rank, false);
            scanned.truncate(left);
            let mut heaped = run.clone();
            merge_heap(&mut heaped, rank, false);
            assert_eq!(heaped, scanned, "round {round}, run {run:?}, table {table:?}");
        }
    }
}
