//! A per-thread cache of encoded pretokens.
//!
//! Most pretokens of ordinary text are one token and take the vocabulary shortcut (one hash
//! lookup).  The others start from their bytes and go through the merges: a scan with a pair
//! lookup per adjacent pair and per applied merge, plus a buffer.  The same rare words come
//! back again and again in a batch, so each thread remembers what its last pretokens that
//! missed the shortcut became.
//!
//! The encoders' tables are seeded ([`PieceCache::seeded`]): a thread's table starts as a
//! copy of the shortcut's tokens, so that one lookup, prefetched with its block, tells a
//! token from a pretoken seen before from a new one.  (minbpe's encoder has no shortcut; its
//! tables start empty.)
//!
//! Each thread owns its table ([`ThreadLocal`]), so the hot path takes no lock and shares
//! nothing that is written.  Memory is bounded: pretokens longer than [`MAX_PIECE`] bytes are
//! never stored, and a table that reaches its capacity starts again from its seed (simpler
//! and cheaper than least-recently-used bookkeeping; frequent pretokens come back at once).
//! The ids of all entries live in one buffer, so an insertion allocates nothing once the
//! table has grown.  A cached result is the same function of the pretoken's bytes as the
//! merge it replaces, so results are identical with and without the cache, for any capacity,
//! thread count or order of texts (`tests` below force tiny tables).

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use thread_local::ThreadLocal;

use crate::error::Result;
use crate::key::{ByteMap, Holds};
use crate::tokens::TokenId;

/// Pretokens longer than this (bytes) are merged every time: they are rare, and their ids
/// would make an entry large.
pub const MAX_PIECE: usize = 48;

/// Entries per thread by default (besides the seed's tokens), and the ids of its entries.
/// With 32,768 entries, 10 MB of Gutenberg (more distinct pretokens that miss a 32K model's
/// shortcut than that) emptied the table again and again, and a 32K BPE model encoded it at
/// 52 MB per CPU-second against 105 for 4 MB; with 131,072 entries, 86 to 92.  Measured
/// again after the matchers and the shortcut got faster (10 MB of Gutenberg has 140,000
/// pretokens that miss a 32K BPE model's shortcut, 49,000 of them distinct, 7 % of them over
/// 11 bytes): 32,768 entries 76.3 MB per CPU-second, 65,536 135.7, 131,072 136.7.
pub const DEFAULT_CAPACITY: usize = 1 << 17;

/// The capacity of a seeded table of `tokens` tokens by default: [`DEFAULT_CAPACITY`]
/// entries, or more where the slots those need hold more at 5/8 full (cl100k's 100,256
/// tokens and 131,072 entries make a table of 524,288 slots, 8 MB, which holds 227,424
/// entries besides its tokens; a 32K model's table is 4 MB).
pub fn default_capacity(tokens: usize) -> usize {
    ByteMap::slots_for(tokens + DEFAULT_CAPACITY) * 5 / 8 - tokens
}

/// A value of a table's map with this bit set is a cached entry, packed as
/// `CACHED | start << LEN_BITS | length` (its ids are `ids[start..start + length]`); without
/// it, a token id (in a seeded table, see [`PieceCache::seeded`]).
pub const CACHED: u32 = 1 << 31;

/// One thread's table: pretoken bytes -> where its ids are in `ids` (a [`ByteMap`]: one
/// cache line per lookup; with a `hashbrown` map, two, and its lookups were 5 % of a 32K
/// model's encoding samples).  A seeded table also holds the encoder's tokens, so that one
/// lookup answers both "is it a token" and "what did it become".
pub struct Table {
    map: ByteMap,
    ids: Vec<TokenId>,
    /// what `map` starts as and is reset to when full: the tokens, or nothing
    seed: Arc<ByteMap>,
    /// a seeded table's second level: a plain table of up to [`SPILL_CAPACITY`] entries
    /// that takes every pretoken the thread merged, once the table drops it, and is looked
    /// up when `map` lacks one, before it is merged again (see [`Table::recall`]); made when
    /// the table first starts again
    spill: Option<Box<Table>>,
    /// a seeded table's merged entries since it last started again, for the spill: each
    /// one's key (its bytes back to back in `log_keys`, ending at the first number) and its
    /// packed value (see [`Table::spill_log`])
    log: Vec<(u32, u32)>,
    log_keys: Vec<u8>,
}

/// Entries of a table's spill (8 MB of slots, zeroed memory that costs only as the entries
/// reach it).  On 100 MB of Gutenberg and a 32K BPE model trained on 20 MB, one pinned core,
/// CPU time: no spill 204.5 MB per CPU-second, 262,144 entries 267.9, 524,288 263.7,
/// 1,048,576 258.6.
const SPILL_CAPACITY: usize = 1 << 18;

/// Bits of a packed entry that hold its length (`MAX_PIECE` fits).
const LEN_BITS: u32 = 6;
/// `ids` is emptied with the table before it reaches this many ids (so that a start fits
/// below [`CACHED`]).
const MOST_IDS: usize = 1 << (31 - LEN_BITS);

/// The ids of a cached entry, `value` (which has [`CACHED`] set), in a table's `ids`.
#[inline]
fn entry(ids: &[TokenId], value: u32) -> &[TokenId] {
    debug_assert!(value & CACHED != 0);
    let packed = (value & !CACHED) as usize;
    let start = packed >> LEN_BITS;
    &ids[start..start + (packed & ((1 << LEN_BITS) - 1))]
}

impl Table {
    fn new(seed: &Arc<ByteMap>) -> Table {
        Table {
            // (an empty seed is not copied: a fresh table's pages are zeroed as they are used)
            map: if seed.is_empty() {
                seed.empty_like()
            } else {
                (**seed).clone()
            },
            ids: Vec::new(),
            seed: seed.clone(),
            spill: None,
            log: Vec::new(),
            log_keys: Vec::new(),
        }
    }

    /// The ids of a cached entry, `value` (which has [`CACHED`] set).
    #[inline]
    pub fn ids(&self, value: u32) -> &[TokenId] {
        entry(&self.ids, value)
    }

    /// Append the ids of a cached entry, `value`, to `out`.  Most entries are a few ids, and
    /// `extend_from_slice` copied them with a call of `memcpy`, 3-4 % of cl100k's encoding
    /// samples (perf, texts of 100,000 characters); here eight ids are copied at once, as
    /// two 16-byte moves, whatever the entry's length, and `out` grows by the entry's.  The
    /// time is now spent waiting for the ids (6 % of those samples).  Tried and dropped:
    /// `Prefetched` looking each key up one turn ahead, so that an entry's ids could be
    /// prefetched (the key looked up again when `found` had changed the table in between):
    /// slower, 365.3 against 426.2 MB per CPU-second on those texts and 340.4 against 378.6
    /// on lines (one pinned core, one process, interleaved).
    #[inline]
    pub fn extend(&self, value: u32, out: &mut Vec<TokenId>) {
        debug_assert!(value & CACHED != 0);
        let packed = (value & !CACHED) as usize;
        let (start, len) = (packed >> LEN_BITS, packed & ((1 << LEN_BITS) - 1));
        match self.ids.get(start..start + 8) {
            Some(eight) if len <= 8 => {
                let eight: [TokenId; 8] = eight.try_into().unwrap();
                out.reserve(8);
                // SAFETY: `reserve` made room for eight more ids; the first `len` of them are
                // the entry's (`ids[start..start + len]`), and only those are counted in
                unsafe {
                    let end = out.as_mut_ptr().add(out.len());
                    (end as *mut [TokenId; 8]).write_unaligned(eight);
                    out.set_len(out.len() + len);
                }
            }
            _ => out.extend_from_slice(self.ids(value)),
        }
    }

    /// The ids of `piece` when this thread has seen it since its table was last emptied.
    #[inline]
    pub fn get(&self, piece: &[u8]) -> Option<&[TokenId]> {
        let value = self.map.get(piece)?;
        (value & CACHED != 0).then(|| self.ids(value))
    }

    /// Forget every entry (the memory stays); a seeded table's merged entries go to its
    /// spill.
    fn restart(&mut self) {
        self.spill_log();
        if self.seed.is_empty() {
            self.map.clear();
        } else {
            self.map.copy_from(&self.seed);
        }
        self.ids.clear();
    }

    /// Append the ids of `piece` to `out` if the spill has it (true), and put it back in the
    /// table, so that its next look-up is prefetched with the others.
    ///
    /// Why a spill: the table is small enough for the caches of two threads
    /// (4 MB for a 32K model), and a text unlike the model's training text refills it again
    /// and again with pretokens that are not tokens; each one dropped is merged again when it
    /// comes back.  A table eight times larger made such a text (100 MB of Gutenberg, a 32K
    /// model trained on 20 MB) 33 % faster on one thread, and cl100k 10 % slower.  The spill
    /// keeps what the table drops, and is read only for the pretokens the table lacks: on
    /// those 100 MB, 200.1 -> 269.5 MB/s on one thread and 359.4 -> 410.5 on two, cl100k
    /// 303.4 against 300.3, and on 10 MB (which never refills the table) the same speed
    /// (32K model 347.4 / 591.0 against 351.7 / 596.3 MB/s on one thread / two).  Peak RSS
    /// of the 100 MB at two threads: 500 -> 534 MB.
    fn recall(&mut self, piece: &[u8], out: &mut Vec<TokenId>) -> bool {
        let Some(ids) = self.spill.as_deref().and_then(|s| s.get(piece)) else {
            return false;
        };
        let start = out.len();
        out.extend_from_slice(ids);
        self.insert_here(piece, &out[start..]);
        true
    }

    /// Append the ids of `piece`, a pretoken that is not a token, to `out`: from its entry
    /// in this table (`value`, as the look-up found it), from the spill, or made by `merge`
    /// (which appends them to the buffer it is given) and then remembered.
    pub fn ids_or_merge<E>(
        &mut self,
        piece: &[u8],
        value: Option<u32>,
        out: &mut Vec<TokenId>,
        merge: impl FnOnce(&mut Vec<TokenId>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        if let Some(value) = value {
            self.extend(value, out);
        } else if !self.recall(piece, out) {
            let start = out.len();
            merge(out)?;
            self.insert(piece, &out[start..]);
        }
        Ok(())
    }

    /// Remember that `piece`, which is not in the table, encodes to `ids` (ignored for a
    /// piece over [`MAX_PIECE`] bytes); a seeded table logs it for its spill.
    #[inline]
    pub fn insert(&mut self, piece: &[u8], ids: &[TokenId]) {
        if piece.len() > MAX_PIECE {
            return;
        }
        let value = self.insert_here(piece, ids);
        if !self.seed.is_empty() {
            self.log_keys.extend_from_slice(piece);
            self.log.push((self.log_keys.len() as u32, value));
        }
    }

    /// Put the logged entries in the spill (made now if need be) and empty the log; called
    /// when the table is about to drop them.
    ///
    /// The spill used to take every entry at once, as the table did.  On a first pass over
    /// text that never fills the table (10 MB of Gutenberg), that was memory written for
    /// nothing: its 8 MB of slots and its own ids, fresh pages, which the kernel zeroes on
    /// first touch (perf, cl100k, one core, a fresh process: a third of the first pass's
    /// samples were `clear_page_erms`, most of them under `Table::insert`).  The log is
    /// written in order and is a fraction of that; the spill ends up with the same entries
    /// before it is first read (it is read only for pieces the table lacks, and the table
    /// lacks a logged piece only once it has started again).
    fn spill_log(&mut self) {
        if self.log.is_empty() {
            return;
        }
        let spill = self
            .spill
            .get_or_insert_with(|| Box::new(Table::new(&Arc::new(ByteMap::with_capacity(SPILL_CAPACITY)))));
        let mut start = 0;
        for &(end, value) in &self.log {
            spill.insert_here(&self.log_keys[start..end as usize], entry(&self.ids, value));
            start = end as usize;
        }
        self.log.clear();
        self.log_keys.clear();
    }

    /// [`Table::insert`] in this table only, without the log; returns the entry's packed
    /// value (0 for a piece that is not kept).
    fn insert_here(&mut self, piece: &[u8], ids: &[TokenId]) -> u32 {
        if piece.len() > MAX_PIECE {
            return 0;
        }
        if self.map.len() >= self.map.room() || self.ids.len() + ids.len() > MOST_IDS {
            self.restart();
        }
        debug_assert!(ids.len() <= MAX_PIECE, "every id stands for at least one byte");
        let packed = |start: usize| CACHED | (start << LEN_BITS | ids.len()) as u32;
        let mut value = packed(self.ids.len());
        if !self.map.insert(piece, value) {
            // its long pieces reached `ByteMap::MOST_LONG`: start again (the seed had room)
            self.restart();
            value = packed(0);
            let fits = self.map.insert(piece, value);
            debug_assert!(
                fits,
                "the seed leaves room for a piece of at most MAX_PIECE bytes"
            );
        }
        self.ids.extend_from_slice(ids);
        value
    }
}

// SAFETY: `Table` only inserts into its map and resets it from its seed, which has its shape
unsafe impl Holds for &mut Table {
    #[inline(always)]
    fn map(&self) -> &ByteMap {
        &self.map
    }
}

/// The tables of all threads that used one encoder.
pub struct PieceCache {
    /// every thread's table starts as a copy of this; `None`: the cache is off
    seed: Option<Arc<ByteMap>>,
    /// bytes of text a thread encodes without a table before it makes one
    table_after: usize,
    per_thread: ThreadLocal<RefCell<PerThread>>,
}

/// A thread's part of a [`PieceCache`].
enum PerThread {
    /// no table yet; the bytes of text encoded so far
    Waiting(usize),
    Ready(Table),
}

/// A vocabulary whose long tokens (over 11 bytes, kept apart from the slots) take more bytes
/// than this gets no cache: every thread would copy them.  Real vocabularies are far below
/// (cl100k's take 133 KB); a hand-made ranks file of huge tokens must not multiply its
/// memory by the number of threads.
const SEED_MOST_LONG: usize = 32 << 20;

/// Bytes of text a thread encodes before it makes a seeded table (see [`PieceCache::with`]).
pub const TABLE_AFTER: usize = 1 << 20;

thread_local! {
    /// Bytes of text the call running on this thread is about to encode here (see [`ahead`]).
    static AHEAD: Cell<usize> = const { Cell::new(0) };
}

/// Run `f`, which encodes about `bytes` bytes of text on this thread, with the caches told
/// so: a thread that is about to encode [`TABLE_AFTER`] bytes or more makes its table at
/// once instead of after its first megabyte.  (A batch's first megabyte without a table
/// merged every pretoken that was not a token, each time it came: on 10 MB of Gutenberg,
/// a tenth of a first pass that was slow for want of the table.)
pub fn ahead<R>(bytes: usize, f: impl FnOnce() -> R) -> R {
    let before = AHEAD.with(|a| a.replace(bytes));
    let out = f();
    AHEAD.with(|a| a.set(before));
    out
}

impl PieceCache {
    /// A cache of `capacity` entries per thread (0 turns it off).
    pub fn new(capacity: usize) -> PieceCache {
        PieceCache {
            seed: (capacity > 0).then(|| Arc::new(ByteMap::with_capacity(capacity))),
            table_after: 0,
            per_thread: ThreadLocal::new(),
        }
    }

    /// A cache whose tables also hold `tokens` (bytes -> id, put in in this order), with room
    /// for `capacity` entries besides; off when `capacity` is 0, when an id has the bit
    /// [`CACHED`] (a ranks file may give any rank up to 2**32 - 1), or when the long tokens
    /// take more than [`SEED_MOST_LONG`] bytes.
    ///
    /// Why seeded tables: the encoders looked every pretoken up in the
    /// vocabulary's table, a block at a time with each slot prefetched, and a pretoken that
    /// was not a token a second time, in this cache, one at a time.  On cl100k and texts of
    /// 100,000 characters that second look-up was 16 % of the samples, nearly all of it
    /// waiting for its slot.  In one table, every pretoken's one slot is prefetched with its
    /// block.  In one process on one pinned core, CPU time, 10 MB of Gutenberg, seven
    /// interleaved rounds: cl100k lines 290.5 -> 338.4 MB per CPU-second and 100,000-character
    /// texts 340.7 -> 401.4 (fastokens 254.0 and 453.4), a 32K BPE model's lines 290.5 ->
    /// 361.5 (fastokens 268.1).  The price is memory: each thread's table is a copy of the
    /// seed (8 MB for cl100k, 4 MB for a 32K model, see [`default_capacity`]; made on the thread's
    /// first use and copied back when the table is full), and the seed is kept; peak RSS of
    /// a two-thread encoding of cl100k went from 158 to 170 MB.
    ///
    /// The size is a compromise, and the next lever.  On 10 MB of Gutenberg repeated, a table
    /// of 2 MB (32K model) or 4 MB (cl100k) instead of 4 and 8 MB encoded as fast on one
    /// thread and 17-20 % faster on two (the tables of two threads compete for the caches),
    /// but on 100 MB, whose pretokens that are not tokens of a 32K model trained on 20 MB
    /// fill any such table again and again, the small table was 12-37 % slower.  A table of
    /// 1,048,576 entries (32 MB for the 32K model) encoded those 100 MB 33 % faster on one
    /// thread (274.5 against 206.9 MB per CPU-second) and cl100k's 10 % slower (270.2
    /// against 300.8: its pretokens rarely miss, and its tokens spread over more memory).
    /// Keeping, when the table is full, the entries that were looked up since they were put
    /// in (half the capacity at most) gained nothing (209.2 against 206.9).  What serves both
    /// is a second level, the spill (see [`Table::recall`]).
    /// (A 32K model's table was
    /// 8 MB at first, for want of one slot, see [`ByteMap::slots_for`]; at 4 MB, with 65,536
    /// entries, it encoded as fast: 367.0 against 365.3 MB per CPU-second.)
    pub fn seeded<'a>(
        tokens: impl IntoIterator<Item = (&'a [u8], TokenId)>,
        capacity: usize,
    ) -> Result<PieceCache> {
        let tokens: Vec<(&[u8], TokenId)> = tokens.into_iter().collect();
        if capacity == 0 || tokens.iter().any(|&(_, id)| id & CACHED != 0) {
            return Ok(PieceCache::new(0));
        }
        // the long keys' bytes alone over the limit: no table, and none built to find out
        let long_keys: usize = tokens
            .iter()
            .map(|(t, _)| t.len())
            .filter(|&n| n > crate::key::INLINE)
            .sum();
        if long_keys > SEED_MOST_LONG {
            return Ok(PieceCache::new(0));
        }
        let seed = ByteMap::with_room(tokens, capacity)?;
        if seed.long_bytes() > SEED_MOST_LONG {
            return Ok(PieceCache::new(0));
        }
        Ok(PieceCache {
            seed: Some(Arc::new(seed)),
            table_after: TABLE_AFTER,
            per_thread: ThreadLocal::new(),
        })
    }

    /// The same cache, but a thread makes its table on its first text (for tests).
    pub fn at_once(mut self) -> PieceCache {
        self.table_after = 0;
        self
    }

    /// Run `f`, which encodes `bytes` bytes of text, with this thread's table (`None` when
    /// the cache is off).  Not re-entrant: `f` must not encode with the same encoder
    /// (encoding never does).
    ///
    /// A seeded table is a copy of the seed, 4-8 MB, which this machine takes several
    /// milliseconds to make (fresh pages), and which the thread keeps as long as the
    /// encoder lives.  So a thread makes it only once it has encoded [`TABLE_AFTER`] bytes:
    /// a server's threads that encode a message now and then hold no table, and a thread
    /// that encodes much pays for it with its first megabyte.  Until then the thread
    /// encodes without a cache (the same results).
    pub fn with<R>(&self, bytes: usize, f: impl FnOnce(Option<&mut Table>) -> R) -> R {
        let Some(seed) = &self.seed else {
            return f(None);
        };
        let cell = self.per_thread.get_or(|| RefCell::new(PerThread::Waiting(0)));
        let Ok(mut mine) = cell.try_borrow_mut() else {
            return f(None); // re-entered: go without (same results, only slower)
        };
        if let PerThread::Waiting(seen) = &mut *mine {
            *seen = seen.saturating_add(bytes);
            if *seen <= self.table_after && AHEAD.with(Cell::get) < self.table_after {
                drop(mine);
                return f(None);
            }
            *mine = PerThread::Ready(Table::new(seed));
        }
        match &mut *mine {
            PerThread::Ready(table) => f(Some(table)),
            PerThread::Waiting(_) => unreachable!("a table was just made"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_starts_again_and_long_pieces_are_not_kept() {
        let cache = PieceCache::new(2);
        cache.with(1, |t| {
            let t = t.unwrap();
            t.insert(b"ab", &[1, 2]);
            t.insert(b"cd", &[3]);
            assert_eq!(t.get(b"ab"), Some(&[1, 2][..]));
            t.insert(b"ef", &[4, 5, 6]); // full: emptied first
            assert_eq!(t.get(b"ab"), None);
            assert_eq!(t.get(b"ef"), Some(&[4, 5, 6][..]));
            t.insert(&[b'x'; MAX_PIECE + 1], &[7]);
            assert_eq!(t.get(&[b'x'; MAX_PIECE + 1]), None);
        });
        PieceCache::new(0).with(1, |t| assert!(t.is_none()));
    }

    #[test]
    fn a_seeded_table_keeps_its_tokens_when_it_starts_again() {
        let long = [b'y'; 20];
        let tokens: [(&[u8], TokenId); 3] = [(b"a", 7), (b"bc", 8), (&long, 9)];
        let cache = PieceCache::seeded(tokens, 2).unwrap().at_once();
        cache.with(1, |t| {
            let t = t.unwrap();
            let value = |t: &Table, k: &[u8]| t.map.get(k);
            t.insert(b"ab", &[7, 1]);
            t.insert(&[b'z'; 30], &[2, 3]);
            assert_eq!(t.get(b"ab"), Some(&[7, 1][..]));
            assert_eq!(t.get(b"a"), None, "a token is not a cached entry");
            t.insert(b"cd", &[4]); // full: back to the tokens
            assert_eq!(t.get(b"ab"), None);
            assert_eq!(t.get(&[b'z'; 30]), None);
            assert_eq!(t.get(b"cd"), Some(&[4][..]));
            for (k, id) in tokens {
                assert_eq!(value(t, k), Some(id));
            }
            let v = value(t, b"cd").unwrap();
            assert_eq!((v & CACHED != 0, t.ids(v)), (true, &[4][..]));
        });
        // an id with the flag bit cannot be told from an entry: no cache then
        let high: [(&[u8], TokenId); 1] = [(b"a", CACHED)];
        PieceCache::seeded(high, 2)
            .unwrap()
            .with(1, |t| assert!(t.is_none()));
        PieceCache::seeded(tokens, 0)
            .unwrap()
            .with(1, |t| assert!(t.is_none()));
    }

    #[test]
    fn what_a_full_seeded_table_drops_is_recalled_from_its_spill() {
        let tokens: [(&[u8], TokenId); 1] = [(b"a", 7)];
        let cache = PieceCache::seeded(tokens, 1).unwrap().at_once();
        cache.with(1, |t| {
            let t = t.unwrap();
            t.insert(b"ab", &[7, 1]);
            t.insert(b"cd", &[2, 3, 4]); // full: the table drops "ab", the spill keeps it
            assert_eq!(t.get(b"ab"), None);
            let mut out = vec![9];
            assert!(t.recall(b"ab", &mut out));
            assert_eq!(out, [9, 7, 1]);
            assert_eq!(t.get(b"ab"), Some(&[7, 1][..]), "recalled into the table");
            assert!(!t.recall(b"zz", &mut out));
            assert_eq!(out, [9, 7, 1]);
        });
        // a plain table has no spill
        PieceCache::new(1).with(1, |t| {
            let t = t.unwrap();
            t.insert(b"ab", &[1, 2]);
            t.insert(b"cd", &[3]);
            assert!(!t.recall(b"ab", &mut Vec::new()));
        });
    }

    #[test]
    fn a_thread_makes_its_seeded_table_once_it_has_encoded_enough() {
        let tokens: [(&[u8], TokenId); 1] = [(b"a", 7)];
        let cache = PieceCache::seeded(tokens, 4).unwrap();
        let half = TABLE_AFTER / 2;
        cache.with(half, |t| assert!(t.is_none()));
        cache.with(half, |t| assert!(t.is_none()));
        cache.with(1, |t| t.unwrap().insert(b"ab", &[7, 1]));
        cache.with(0, |t| assert_eq!(t.unwrap().get(b"ab"), Some(&[7, 1][..])));
        // another thread starts from nothing
        std::thread::scope(|s| {
            s.spawn(|| cache.with(TABLE_AFTER, |t| assert!(t.is_none())));
        });
        // a plain cache (minbpe's) makes its table on the first text
        PieceCache::new(4).with(1, |t| assert!(t.is_some()));
        // told that a megabyte or more is coming, a thread makes its table at once
        let fresh = PieceCache::seeded(tokens, 4).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                ahead(TABLE_AFTER - 1, || fresh.with(1, |t| assert!(t.is_none())));
                ahead(TABLE_AFTER, || fresh.with(1, |t| assert!(t.is_some())));
                assert_eq!(AHEAD.with(Cell::get), 0, "the hint ends with its call");
            });
        });
    }

    #[test]
    fn the_spill_gets_every_merged_entry_a_table_drops_and_nothing_before() {
        let tokens: [(&[u8], TokenId); 1] = [(b"a", 7)];
        let cache = PieceCache::seeded(tokens, 3).unwrap().at_once();
        cache.with(1, |t| {
            let t = t.unwrap();
            let long = [b'q'; 30]; // a key kept apart from the slots
            t.insert(b"ab", &[7, 1]);
            t.insert(&long, &[5, 6, 7]);
            assert!(t.spill.is_none(), "no spill before the table first starts again");
            let mut out = Vec::new();
            t.ids_or_merge(b"zz", None, &mut out, |b| {
                b.push(3);
                Ok::<(), ()>(())
            })
            .unwrap();
            t.insert(b"cd", &[4]); // full: all three go to the spill, "cd" to the new log
            assert_eq!(t.log.len(), 1);
            let spill = t.spill.as_deref().expect("made when the table started again");
            for (k, ids) in [
                (&b"ab"[..], &[7, 1][..]),
                (&long[..], &[5, 6, 7][..]),
                (&b"zz"[..], &[3][..]),
            ] {
                assert_eq!(t.get(k), None);
                assert_eq!(spill.get(k), Some(ids));
            }
            assert_eq!(spill.get(b"cd"), None);
            // a recalled entry is not logged again
            let mut out = Vec::new();
            assert!(t.recall(b"ab", &mut out));
            assert_eq!((out, t.log.len()), (vec![7, 1], 1));
        });
    }
}
