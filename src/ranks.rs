//! Plain rank-based BPE models, as tiktoken's `.tiktoken` files define them.
//!
//! A ranks file lists every token (base64) with its rank, which is also its id.  Encoding
//! follows tiktoken exactly: pre-tokenize with the model's pattern; a piece that is a token is
//! that token; otherwise start from its bytes and repeatedly join the adjacent two parts whose
//! concatenation has the lowest rank (the leftmost on ties), until no concatenation is a token.

use base64::Engine as _;
use rustc_hash::FxHashMap;

use crate::encode::cache::{self, PieceCache, Table, CACHED};
use crate::encode::decode::TokenBytes;
use crate::encode::{Allowed, Specials};
use crate::error::{Error, Result};
use crate::key::{Block, ByteMap, Prefetched};
use crate::pretokenize::Matcher;

#[derive(Clone)]
pub struct RankModel {
    /// token bytes by rank (id); ranks need not be contiguous
    pub vocab: FxHashMap<u32, Vec<u8>>,
    pub ranks: FxHashMap<Vec<u8>, u32>,
    pub pattern: String,
    pub special: Vec<(String, u32)>,
}

/// A parsed ranks file: rank (id) by token bytes, and the reverse.
pub struct Ranks {
    pub ranks: FxHashMap<Vec<u8>, u32>,
    pub vocab: FxHashMap<u32, Vec<u8>>,
}

/// Parse a `.tiktoken` file's text: one `<base64 token> <rank>` per line.
pub fn parse(text: &str, name: &str) -> Result<Ranks> {
    let mut ranks = FxHashMap::default();
    let mut vocab = FxHashMap::default();
    // the largest rank and its line
    let mut top = (0, 0);
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let bad = |why: &str| Error::Value(format!("{name}, line {}: {why}", i + 1));
        let (token, rank) = line
            .split_once(' ')
            .ok_or_else(|| bad("expected '<base64 token> <rank>'"))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(token)
            .map_err(|_| bad("the token is not valid base64"))?;
        // digits only (Rust would also take "+5"), and below u32::MAX, which the merge uses
        // for "no rank"
        let rank: u32 = match rank.parse() {
            Ok(r) if r < u32::MAX && rank.bytes().all(|b| b.is_ascii_digit()) => r,
            _ => return Err(bad("the rank is not a non-negative integer below 4294967295")),
        };
        if bytes.is_empty() {
            return Err(bad("empty token"));
        }
        if ranks.insert(bytes.clone(), rank).is_some() {
            return Err(bad("the token appears twice"));
        }
        if vocab.insert(rank, bytes).is_some() {
            return Err(bad(&format!("rank {rank} appears twice")));
        }
        if rank >= top.0 {
            top = (rank, i + 1);
        }
    }
    if ranks.is_empty() {
        return Err(Error::Value(format!("{name}: no tokens (an empty ranks file)")));
    }
    // a text can need any byte UTF-8 uses, and encoding falls back on single bytes: a file
    // without one of them is refused here, not at the first text that needs it
    if let Some(b) = crate::tokens::byte_token_values().find(|&b| !ranks.contains_key(&[b][..])) {
        return Err(Error::Value(format!(
            "{name}: no token is the single byte 0x{b:02X}; every byte UTF-8 text can hold must \
             be a token, or a text holding it could not be encoded"
        )));
    }
    let limit = id_limit(ranks.len());
    if u64::from(top.0) >= limit {
        return Err(Error::Value(format!(
            "{name}, line {}: rank {} is far beyond the {} tokens of the file (ranks may leave gaps, \
             but must stay below {limit})",
            top.1,
            top.0,
            ranks.len()
        )));
    }
    Ok(Ranks { ranks, vocab })
}

/// How far the ids of a ranks model of `tokens` tokens (ranks and special tokens) may go: they
/// must stay below this.  Ids may leave gaps (cl100k_base's special tokens do), but not many:
/// the vocabulary size is the largest id + 1, and Python sizes things by it (`list(tokenizer)`
/// asked for 32 GB for a 3 KB ranks file with the rank 4294967294).  Small models may use ids
/// up to about a million whatever their size, as hand-made test files do.
pub fn id_limit(tokens: usize) -> u64 {
    (2 * tokens as u64).max(1 << 20)
}

/// Refuse special tokens that a ranks model read from `name` cannot take: an id beyond
/// [`id_limit`], the id of a rank, or an id given twice.
pub fn check_special(ranks: &Ranks, special: &[(String, u32)], name: &str) -> Result<()> {
    use crate::input::py_repr;
    let tokens = ranks.ranks.len() + special.len();
    let limit = id_limit(tokens);
    let mut seen: FxHashMap<u32, &str> = FxHashMap::default();
    for (s, id) in special {
        if u64::from(*id) >= limit {
            return Err(Error::Value(format!(
                "special token {} has id {id}, far beyond the {tokens} tokens of this model (ids may \
                 leave gaps, but must stay below {limit})",
                py_repr(s)
            )));
        }
        if ranks.vocab.contains_key(id) {
            return Err(Error::Value(format!(
                "special token {} has id {id}, which {name} gives to a token",
                py_repr(s)
            )));
        }
        if let Some(other) = seen.insert(*id, s) {
            return Err(Error::Value(format!(
                "special tokens {} and {} both have id {id}",
                py_repr(other),
                py_repr(s)
            )));
        }
    }
    Ok(())
}

/// Read a `.tiktoken` file.
pub fn read(path: &str) -> Result<Ranks> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound(format!("ranks file not found: {path}")),
        std::io::ErrorKind::InvalidData => Error::Value(format!("{path}: not a ranks file (invalid UTF-8)")),
        _ => Error::Io(format!("cannot read {path}: {e}")),
    })?;
    parse(&text, path)
}

/// The `.tiktoken` text of tokens with their ranks, in the given order.
pub fn dumps<'a>(tokens: impl IntoIterator<Item = (u32, &'a [u8])>) -> String {
    let mut out = String::new();
    for (rank, t) in tokens {
        out.push_str(&base64::engine::general_purpose::STANDARD.encode(t));
        out.push(' ');
        out.push_str(&rank.to_string());
        out.push('\n');
    }
    out
}

/// The `.tiktoken` text of a model: only plain BPE models with simple pre-tokenization have
/// one (tiktoken has no supermerges and no script runs).
pub fn dumps_model(model: &crate::model::Model) -> Result<String> {
    if model.kind != crate::model::Kind::Word || model.settings.script_specific_regex.is_some() {
        return Err(Error::Value(
            "only plain BPE models with simple pre-tokenization (algorithm='bpe', script_aware=False) \
             can be written as tiktoken ranks: tiktoken has no supermerges and no script runs"
                .into(),
        ));
    }
    Ok(dumps(model.vocab.iter().enumerate().map(|(i, t)| (i as u32, t))))
}

/// Pieces up to this many bytes are merged by [`RankEncoder::merge_short`] (it keeps the
/// parts' starts in bytes).
const SHORT_PIECE: usize = 64;

/// The error for a part of a piece that has no token (a single byte the ranks file lacks).
fn no_byte(bytes: &[u8]) -> Error {
    Error::Value(format!(
        "the ranks file has no token for the bytes {bytes:?}: it lacks single bytes"
    ))
}

/// The tokens of `model` by rank, in the order they go into lookup tables (see
/// `RankEncoder::new`).
fn by_rank(model: &RankModel) -> Vec<(&[u8], u32)> {
    let mut by_rank: Vec<(&[u8], u32)> = model.ranks.iter().map(|(t, &r)| (t.as_slice(), r)).collect();
    by_rank.sort_unstable_by_key(|&(_, r)| r);
    by_rank
}

pub struct RankEncoder {
    pub model: RankModel,
    matcher: Matcher,
    /// `model.ranks` as a [`ByteMap`]: every lookup while encoding goes here.  With
    /// `Vec<u8>` keys, comparing a probe with a key followed a pointer and called `memcmp`:
    /// 37 % of cl100k's encoding samples were in that comparison (perf, 4 MB of Gutenberg).
    lookup: ByteMap,
    /// what pieces that are not a token became, per thread (see `encode/cache.rs`)
    cache: PieceCache,
    /// the tokens' bytes for decoding
    decoder: TokenBytes,
    /// the special tokens, and what cutting texts at them needs
    specials: Specials,
    /// the largest id, special tokens included
    top: u32,
    /// the id of each single byte (`u32::MAX`: none)
    byte_ids: [u32; 256],
}

impl RankEncoder {
    pub fn new(model: RankModel) -> Result<RankEncoder> {
        let matcher = Matcher::new(&model.pattern, "pattern")?;
        // Tokens go in by rank: a lower rank is a merge learnt earlier, from a more frequent
        // pair, so the tokens that most pretokens are take their home slots and later ones
        // the slots after them.  In hash-map order, a quarter of cl100k's look-ups on English
        // text went past the home slot, a branch the predictor could not call: by rank,
        // callgrind's branch simulation counts 0.44 mispredicted branches per pretoken
        // instead of 0.78 (matcher and shortcut alone, 866,000 pieces).  (Our own models'
        // shortcut goes in by id, which is the same order.)
        let tokens = by_rank(&model);
        let lookup = ByteMap::new(tokens.iter().copied())?;
        let cache = PieceCache::seeded(tokens.iter().copied(), cache::default_capacity(tokens.len()))?;
        let decoder = TokenBytes::new(model.vocab.iter().map(|(&i, t)| (i, t.as_slice())));
        let specials = Specials::new(model.special.clone());
        let top = (model.vocab.keys())
            .chain(model.special.iter().map(|(_, id)| id))
            .max()
            .copied()
            .unwrap_or(0);
        let mut byte_ids = [u32::MAX; 256];
        for (b, id) in byte_ids.iter_mut().enumerate() {
            *id = model.ranks.get(&[b as u8][..]).copied().unwrap_or(u32::MAX);
        }
        Ok(RankEncoder {
            model,
            matcher,
            lookup,
            cache,
            decoder,
            specials,
            top,
            byte_ids,
        })
    }

    /// The same encoder with `capacity` cache entries per thread (0: no cache); for tests.
    pub fn with_cache_capacity(mut self, capacity: usize) -> Result<RankEncoder> {
        self.cache = PieceCache::seeded(by_rank(&self.model), capacity)?.at_once();
        Ok(self)
    }

    #[inline]
    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        self.lookup.get(bytes)
    }

    /// Load a `.tiktoken` file; `special` gives each special string its id.
    pub fn load(path: &str, pattern: String, special: Vec<(String, u32)>) -> Result<RankEncoder> {
        RankEncoder::of(read(path)?, pattern, special, path)
    }

    /// The same from the file's text; `name` names it in errors.
    pub fn from_text(
        text: &str,
        pattern: String,
        special: Vec<(String, u32)>,
        name: &str,
    ) -> Result<RankEncoder> {
        RankEncoder::of(parse(text, name)?, pattern, special, name)
    }

    fn of(read: Ranks, pattern: String, special: Vec<(String, u32)>, name: &str) -> Result<RankEncoder> {
        check_special(&read, &special, name)?;
        let Ranks { ranks, vocab } = read;
        RankEncoder::new(RankModel {
            vocab,
            ranks,
            pattern,
            special,
        })
    }

    /// One more than the largest id (ranks need not be contiguous).
    pub fn vocab_size(&self) -> usize {
        self.top as usize + 1
    }

    /// The id a special token registered next gets: the one after the largest.
    pub fn next_id(&self) -> Option<u32> {
        self.top.checked_add(1)
    }

    /// Every token with its id, in id order.
    pub fn items(&self) -> Vec<(u32, &[u8])> {
        let mut items: Vec<(u32, &[u8])> = self.model.vocab.iter().map(|(&i, t)| (i, t.as_slice())).collect();
        items.sort_unstable();
        items
    }

    /// The bytes of `ids` (special tokens as their text).
    pub fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>> {
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

    /// tiktoken's byte-pair merge of one piece that is not a token itself: repeatedly join
    /// the two adjacent parts whose joined bytes have the smallest rank (the leftmost of
    /// equals).  See [`byte_pair_parts`]; pieces of up to [`SHORT_PIECE`] bytes take
    /// [`RankEncoder::merge_short`].
    #[inline(never)]
    fn merge_piece(&self, piece: &[u8], out: &mut Vec<u32>) -> Result<()> {
        if piece.len() <= SHORT_PIECE {
            return self.merge_short(piece, out);
        }
        let parts = byte_pair_parts(piece, |bytes| self.rank(bytes));
        for w in parts.windows(2) {
            let id = self
                .rank(&piece[w[0]..w[1]])
                .ok_or_else(|| no_byte(&piece[w[0]..w[1]]))?;
            out.push(id);
        }
        Ok(())
    }

    /// [`byte_pair_parts`]' scan for a short piece, on the stack, with each part's id kept:
    /// a joined part's id is the rank that joined it, a single byte's comes from
    /// `byte_ids`.  (The general scan allocated its parts and then looked every final part up
    /// again by its bytes: those look-ups, a third of a missed piece's, were a first pass's
    /// misses of the table with nothing to prefetch them.)
    fn merge_short(&self, piece: &[u8], out: &mut Vec<u32>) -> Result<()> {
        const NONE: u32 = u32::MAX;
        let n = piece.len();
        // part i is piece[start[i]..start[i + 1]], with the id ids[i]; joined[i]: the rank of
        // part i joined with part i + 1
        let mut start = [0u8; SHORT_PIECE + 1];
        let mut ids = [NONE; SHORT_PIECE];
        let mut joined = [NONE; SHORT_PIECE];
        for (i, &b) in piece.iter().enumerate() {
            start[i] = i as u8;
            ids[i] = self.byte_ids[b as usize];
        }
        start[n] = n as u8;
        let rank = |a: u8, b: u8| self.rank(&piece[a as usize..b as usize]).unwrap_or(NONE);
        for (i, r) in joined[..n.saturating_sub(1)].iter_mut().enumerate() {
            *r = rank(i as u8, i as u8 + 2);
        }
        let mut len = n;
        while len > 1 {
            let (mut best, mut at) = (NONE, 0);
            for (i, &r) in joined[..len - 1].iter().enumerate() {
                if r < best {
                    (best, at) = (r, i);
                }
            }
            if best == NONE {
                break;
            }
            // part at + 1 goes into part at
            start.copy_within(at + 2..=len, at + 1);
            ids.copy_within(at + 2..len, at + 1);
            if at + 2 < len {
                joined.copy_within(at + 2..len - 1, at + 1);
            }
            len -= 1;
            ids[at] = best;
            joined[at] = if at + 1 < len {
                rank(start[at], start[at + 2])
            } else {
                NONE
            };
            if at > 0 {
                joined[at - 1] = rank(start[at - 1], start[at + 1]);
            }
        }
        for (i, &id) in ids[..len].iter().enumerate() {
            if id == NONE {
                return Err(no_byte(&piece[start[i] as usize..start[i + 1] as usize]));
            }
        }
        out.extend_from_slice(&ids[..len]);
        Ok(())
    }

    /// The pieces of `text` go through in blocks, each piece's slot prefetched first (see
    /// `Encoder::encode_pieces`).
    ///
    /// Where the time goes (cl100k, 4 MB of Gutenberg cut into 100,000-character
    /// texts, one pinned core; 866,000 pieces of 4.6 bytes, 93 % of them tokens).  A
    /// throw-away example binary timed each stage alone: the matcher 3.8 ns a piece, with the
    /// prefetched shortcut 14-16 ns, the whole encoding 19-23 ns; fastokens spends about 13 ns
    /// a piece on the same texts (346 against our 216 MB/s then).  On texts of a line each
    /// (~300 characters) what each text costs apart from its pieces narrows the gap.
    /// * The shortcut was not waiting for memory: a table of only the 15,079 tokens that
    ///   occur (512 KB instead of 4 MB) took as long, and its pages are huge pages already.
    /// * It was mispredicted branches.  callgrind with its branch simulation, a warm encoding
    ///   of 2 MB: 171 instructions a piece for us against fastokens' 153, about the same, but
    ///   0.90 mispredicted conditional branches a piece against 0.21, half of ours in the
    ///   shortcut's search (whether a token sat in its home slot).  The tokens now go in by
    ///   rank (`RankEncoder::new`): 0.54 a piece, and lines of cl100k 8-15 % faster.
    /// * What was left, by `perf` (the same texts): the matcher with the shortcut's hashing
    ///   29 %, the shortcut's search 21 %, and the per-thread cache's `ByteMap::get` for
    ///   the 7 % of pieces that are not tokens 16 %, nearly all of it waiting for the
    ///   slot's cache line.  Prefetching those slots a block ahead was slower (see
    ///   `Prefetched`).  It keeps the tokens and the pieces a thread has merged in one
    ///   table per thread, as fastokens does, so every piece's one slot is prefetched alike
    ///   (`PieceCache::seeded`, with its figures).  What is left on these texts (perf):
    ///   the matcher with hashing and prefetching 45 %, the lookups 22 %, and copying a
    ///   cached piece's ids 6 %, waiting for them (they are in a buffer of their own);
    ///   callgrind counts 169 instructions a piece against fastokens' 154, and 0.31
    ///   mispredicted branches against 0.27.
    /// * Dropped: a hash with one multiplication less (no difference), a first look-up in a
    ///   table of the 2,048 to 32,768 lowest ranks (61-87 % of the pieces; 25-30 against 18 ns
    ///   a piece without prefetching).
    fn encode_into(&self, text: &str, out: &mut Vec<u32>) -> Result<()> {
        self.cache.with(text.len(), |table| {
            let mut error = None;
            let mut block = Block::default();
            match table {
                // one table holds the tokens and what this thread's pieces became
                Some(table) => {
                    let mut blocks =
                        Prefetched::new(table, text.as_bytes(), &mut block, |t, raw, value| match value {
                            Some(id) if id & CACHED == 0 => out.push(id),
                            _ => self.merge_cached(raw, value, t, out, &mut error),
                        });
                    self.matcher
                        .for_each_piece(text, &mut |piece: &str| blocks.push(piece.as_bytes()))?;
                    blocks.finish();
                }
                None => {
                    let mut blocks = Prefetched::new(
                        &self.lookup,
                        text.as_bytes(),
                        &mut block,
                        |_, raw, rank| match rank {
                            Some(id) => out.push(id),
                            None => {
                                if let Err(e) = self.merge_piece(raw, out) {
                                    error.get_or_insert(e);
                                }
                            }
                        },
                    );
                    self.matcher
                        .for_each_piece(text, &mut |piece: &str| blocks.push(piece.as_bytes()))?;
                    blocks.finish();
                }
            }
            error.map_or(Ok(()), Err)
        })
    }

    /// A piece that is not a token: its ids from this thread's table (`value` is its cached
    /// entry there), or merged (and cached).  A call of its own, so that the lookup loop
    /// around the common case (a piece that is a token) stays small.
    #[inline(never)]
    fn merge_cached(
        &self,
        raw: &[u8],
        value: Option<u32>,
        table: &mut Table,
        out: &mut Vec<u32>,
        error: &mut Option<Error>,
    ) {
        if let Err(e) = table.ids_or_merge(raw, value, out, |out| self.merge_piece(raw, out)) {
            error.get_or_insert(e);
        }
    }

    pub fn encode_ordinary(&self, text: &str) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(text.len() / 3);
        self.encode_into(text, &mut out)?;
        Ok(out)
    }

    pub fn encode(&self, text: &str, allowed: &[String]) -> Result<Vec<u32>> {
        crate::encode::Encode::encode(self, text, allowed)
    }

    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.model.vocab.get(&id).map(|v| v.as_slice())
    }
}

impl crate::encode::Encode for RankEncoder {
    fn encode_ordinary(&self, text: &str) -> Result<Vec<u32>> {
        RankEncoder::encode_ordinary(self, text)
    }

    fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>> {
        RankEncoder::decode_bytes(self, ids)
    }

    fn token(&self, id: u32) -> &[u8] {
        self.token_bytes(id).unwrap_or_default()
    }

    fn allowed(&self, names: &[String]) -> Result<Allowed> {
        self.specials.allowed(names)
    }

    fn encode_append(&self, text: &str, allowed: &Allowed, out: &mut Vec<u32>) -> Result<()> {
        allowed.split(text, |part| match part {
            crate::encode::Part::Text(t) => self.encode_into(t, out),
            crate::encode::Part::Special(id) => {
                out.push(id);
                Ok(())
            }
        })
    }
}

#[cfg(test)]
mod short_merge_tests {
    use super::*;

    /// A small xorshift generator.
    fn random(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn the_short_merge_gives_the_ids_of_the_general_one() {
        let mut seed = 987654321u64;
        for round in 0..400u64 {
            let alphabet = 1 + round % 4;
            let mut ranks: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
            // single bytes (one of them missing in some rounds), then joined tokens
            for b in 0..alphabet as u8 {
                if round % 7 != 3 || b != 0 {
                    ranks.insert(vec![b'a' + b], 1000 + u32::from(b));
                }
            }
            for _ in 0..random(&mut seed) % 40 {
                let len = 2 + (random(&mut seed) % 5) as usize;
                let token: Vec<u8> = (0..len)
                    .map(|_| b'a' + (random(&mut seed) % alphabet) as u8)
                    .collect();
                let next = ranks.len() as u32;
                ranks.entry(token).or_insert(next);
            }
            let model = RankModel {
                vocab: ranks.iter().map(|(t, &r)| (r, t.clone())).collect(),
                ranks: ranks.clone(),
                pattern: r"\S+".into(),
                special: Vec::new(),
            };
            let encoder = RankEncoder::new(model).unwrap();
            for _ in 0..20 {
                let n = (random(&mut seed) % (SHORT_PIECE as u64 + 1)) as usize;
                let piece: Vec<u8> = (0..n)
                    .map(|_| b'a' + (random(&mut seed) % alphabet) as u8)
                    .collect();
                let parts = byte_pair_parts(&piece, |b| ranks.get(b).copied());
                let general: Option<Vec<u32>> = parts
                    .windows(2)
                    .map(|w| ranks.get(&piece[w[0]..w[1]]).copied())
                    .collect();
                let mut short = Vec::new();
                let made = encoder.merge_short(&piece, &mut short);
                match general {
                    Some(ids) => assert_eq!(short, ids, "{}", String::from_utf8_lossy(&piece)),
                    None => assert!(made.is_err(), "{}", String::from_utf8_lossy(&piece)),
                }
            }
        }
    }
}

/// Pieces longer than this many bytes are merged with a heap; shorter ones with tiktoken's scan.
const LONG_PIECE: usize = 128;

/// The boundaries of the parts of `piece` after tiktoken's byte-pair merge: starting from
/// single bytes, repeatedly join the two adjacent parts whose joined bytes have the smallest
/// rank (`rank(bytes)`; the leftmost of equal ranks), until no joined pair has a rank.
///
/// tiktoken scans all parts for the smallest rank after every join, which is quadratic in the
/// piece's length (100,000 x "東" took 22 s).  Long pieces keep `(rank, start of the left
/// part)` entries in a [`RankQueue`] instead: popping gives the smallest rank and, among equal
/// ranks, the leftmost start, the scan's choice; an entry whose part has since changed (its
/// rank is no longer the part's current one) is skipped.  The parts form a linked list by
/// their starts.  Time O(n log n), memory about 20 bytes per byte of the piece.
pub fn byte_pair_parts(piece: &[u8], rank: impl Fn(&[u8]) -> Option<u32>) -> Vec<usize> {
    let n = piece.len();
    if n <= LONG_PIECE {
        return byte_pair_parts_scan(piece, rank);
    }
    const NONE: u32 = u32::MAX;
    // next[i]: start of the part after the part at i (n at the end); prev[i]: before it
    let mut next: Vec<u32> = (1..=n as u32).collect();
    let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
    // joined[i]: rank of joining the part at i with the next one (NONE: no rank, or absorbed)
    let mut joined: Vec<u32> = vec![NONE; n];
    let join = |next: &[u32], i: usize| -> u32 {
        let j = next[i] as usize;
        if j >= n {
            return NONE;
        }
        rank(&piece[i..next[j] as usize]).unwrap_or(NONE)
    };
    let mut queue = RankQueue::default();
    // (from the right, so that each rank's starts come in descending order: no sort needed)
    for i in (0..n).rev() {
        joined[i] = join(&next, i);
        if joined[i] != NONE {
            queue.push(joined[i], i as u32);
        }
    }
    while let Some((r, i, ahead)) = queue.pop() {
        // (the starts of one rank lie far apart in a long piece: loading the parts of one
        // some way ahead overlaps the waits)
        if let Some(a) = ahead {
            crate::prefetch(joined.as_ptr().wrapping_add(a as usize));
            crate::prefetch(next.as_ptr().wrapping_add(a as usize));
        }
        let i = i as usize;
        if joined[i] != r {
            continue;
        }
        let j = next[i] as usize;
        next[i] = next[j];
        if (next[i] as usize) < n {
            prev[next[i] as usize] = i as u32;
        }
        joined[j] = NONE;
        joined[i] = join(&next, i);
        if joined[i] != NONE {
            queue.push(joined[i], i as u32);
        }
        if prev[i] != NONE {
            let p = prev[i] as usize;
            joined[p] = join(&next, p);
            if joined[p] != NONE {
                queue.push(joined[p], p as u32);
            }
        }
    }
    let mut bounds = Vec::new();
    let mut i = 0;
    while i < n {
        bounds.push(i);
        i = next[i] as usize;
    }
    bounds.push(n);
    bounds
}

/// `(rank, start)` entries, popped smallest rank first and, of one rank, smallest start first:
/// a bucket of starts per rank, and a small heap of the ranks whose bucket may be non-empty.
///
/// A binary heap of all the entries did the same in O(log n) a pop, but on a piece of
/// megabytes each pop walks a heap far larger than the caches (a 10 MB random word took
/// 13 s with it, rising faster than n log n).  Here a pop takes the last start of its
/// rank's bucket, kept in descending order: the starts of one rank come in descending order
/// at first, and the ones pushed later are sorted once when their rank comes up.  A join of
/// rank r makes parts whose joins have other ranks (their bytes are longer), mostly larger,
/// so a bucket is rarely pushed to once it is being popped; when it is, it is sorted again.
#[derive(Default)]
struct RankQueue {
    /// rank -> its bucket in `buckets`
    slot: rustc_hash::FxHashMap<u32, u32>,
    buckets: Vec<Bucket>,
    /// `(rank, bucket)` of every bucket marked `queued`
    ranks: std::collections::BinaryHeap<std::cmp::Reverse<(u32, u32)>>,
}

#[derive(Default)]
struct Bucket {
    starts: Vec<u32>,
    /// are `starts` in descending order?
    sorted: bool,
    /// has the bucket an entry in `ranks`?
    queued: bool,
}

impl RankQueue {
    fn push(&mut self, rank: u32, start: u32) {
        let buckets = &mut self.buckets;
        let s = *self.slot.entry(rank).or_insert_with(|| {
            buckets.push(Bucket {
                sorted: true,
                ..Bucket::default()
            });
            (buckets.len() - 1) as u32
        });
        let b = &mut buckets[s as usize];
        if b.starts.last().is_some_and(|&last| last < start) {
            b.sorted = false;
        }
        b.starts.push(start);
        if !b.queued {
            b.queued = true;
            self.ranks.push(std::cmp::Reverse((rank, s)));
        }
    }

    /// The smallest entry, and a start of its rank to come some pops later (to prefetch).
    fn pop(&mut self) -> Option<(u32, u32, Option<u32>)> {
        loop {
            let std::cmp::Reverse((rank, s)) = *self.ranks.peek()?;
            let b = &mut self.buckets[s as usize];
            if !b.sorted {
                b.starts.sort_unstable_by(|x, y| y.cmp(x));
                b.sorted = true;
            }
            if let Some(start) = b.starts.pop() {
                let ahead = b.starts.len().checked_sub(16).map(|k| b.starts[k]);
                return Some((rank, start, ahead));
            }
            // empty: its memory goes back, and it leaves the heap until pushed to again
            b.starts = Vec::new();
            b.queued = false;
            self.ranks.pop();
        }
    }
}

/// tiktoken's own procedure, for short pieces (and the reference of the heap in the tests).
fn byte_pair_parts_scan(piece: &[u8], rank: impl Fn(&[u8]) -> Option<u32>) -> Vec<usize> {
    let rank_of = |a: usize, b: usize| rank(&piece[a..b]).unwrap_or(u32::MAX);
    // parts[i] = (start of part i, rank of joining part i with part i + 1)
    let mut parts: Vec<(usize, u32)> = (0..=piece.len())
        .map(|i| {
            (
                i,
                if i + 2 <= piece.len() {
                    rank_of(i, i + 2)
                } else {
                    u32::MAX
                },
            )
        })
        .collect();
    loop {
        let mut best = (u32::MAX, 0);
        for (i, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
            if r < best.0 {
                best = (r, i);
            }
        }
        if best.0 == u32::MAX {
            break;
        }
        let i = best.1;
        parts.remove(i + 1);
        parts[i].1 = if i + 2 < parts.len() {
            rank_of(parts[i].0, parts[i + 2].0)
        } else {
            u32::MAX
        };
        if i > 0 {
            parts[i - 1].1 = rank_of(parts[i - 1].0, parts[i + 1].0);
        }
    }
    parts.into_iter().map(|(start, _)| start).collect()
}

#[cfg(test)]
mod long_piece_tests {
    use super::*;
    use rustc_hash::FxHashMap;

    /// A small xorshift generator: the test needs no dependency.
    fn random(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn the_rank_queue_joins_parts_like_tiktokens_scan() {
        let mut seed = 12345u64;
        for round in 0..1500u64 {
            let alphabet = 1 + round % 4;
            let mut ranks: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
            for _ in 0..random(&mut seed) % 60 {
                let len = 2 + (random(&mut seed) % 5) as usize;
                let token: Vec<u8> = (0..len)
                    .map(|_| b'a' + (random(&mut seed) % alphabet) as u8)
                    .collect();
                // every fifth round, ranks shared by several tokens (a ranks file may have them)
                let next = if round % 5 == 4 {
                    (random(&mut seed) % 8) as u32
                } else {
                    ranks.len() as u32
                };
                ranks.entry(token).or_insert(next);
            }
            let n = (random(&mut seed) % 600) as usize;
            let piece: Vec<u8> = (0..n)
                .map(|_| b'a' + (random(&mut seed) % alphabet) as u8)
                .collect();
            let rank = |b: &[u8]| ranks.get(b).copied();
            assert_eq!(
                byte_pair_parts_scan(&piece, rank),
                byte_pair_parts(&piece, rank),
                "{}",
                String::from_utf8_lossy(&piece)
            );
        }
    }
}
