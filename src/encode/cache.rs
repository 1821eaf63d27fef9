//! A per-thread cache of encoded pretokens (issue 15, item 2).
//!
//! Most pretokens of ordinary text are one token and take the vocabulary shortcut (one hash
//! lookup).  The others start from their bytes and go through the merges: a scan with a pair
//! lookup per adjacent pair and per applied merge, plus a buffer.  The same rare words come
//! back again and again in a batch, so each thread remembers what its last pretokens that
//! missed the shortcut became.
//!
//! Each thread owns its table ([`ThreadLocal`]), so the hot path takes no lock and shares
//! nothing that is written.  Memory is bounded: pretokens longer than [`MAX_PIECE`] bytes are
//! never stored, and a table that reaches its capacity is emptied and starts again (simpler
//! and cheaper than least-recently-used bookkeeping; frequent pretokens come back at once).
//! The ids of all entries live in one buffer, so an insertion allocates nothing once the
//! table has grown.  A cached result is the same function of the pretoken's bytes as the
//! merge it replaces, so results are identical with and without the cache, for any capacity,
//! thread count or order of texts (`tests` below force tiny tables).

use std::cell::RefCell;

use thread_local::ThreadLocal;

use crate::key::ByteMap;
use crate::tokens::TokenId;

/// Pretokens longer than this (bytes) are merged every time: they are rare, and their ids
/// would make an entry large.
pub const MAX_PIECE: usize = 48;

/// Entries per thread by default: 4 MB of table per thread, and the ids of its entries.
/// With 32,768 entries, 10 MB of Gutenberg (more distinct pretokens that miss a 32K model's
/// shortcut than that) emptied the table again and again, and a 32K BPE model encoded it at
/// 52 MB per CPU-second against 105 for 4 MB; with 131,072 entries, 86 to 92.  Measured
/// again after the matchers and the shortcut got faster (10 MB of Gutenberg has 140,000
/// pretokens that miss a 32K BPE model's shortcut, 49,000 of them distinct, 7 % of them over
/// 11 bytes): 32,768 entries 76.3 MB per CPU-second, 65,536 135.7, 131,072 136.7.
pub const DEFAULT_CAPACITY: usize = 1 << 17;

/// One thread's table: pretoken bytes -> where its ids are in `ids`, packed as
/// `start << LEN_BITS | length` (a [`ByteMap`]: one cache line per lookup; with a `hashbrown`
/// map, two, and its lookups were 5 % of a 32K model's encoding samples).
pub struct Table {
    map: ByteMap,
    ids: Vec<TokenId>,
    capacity: usize,
}

/// Bits of a packed entry that hold its length (`MAX_PIECE` fits).
const LEN_BITS: u32 = 6;
/// `ids` is emptied with the table before it reaches this many ids (so starts fit a `u32`).
const MOST_IDS: usize = 1 << (32 - LEN_BITS);

impl Table {
    fn new(capacity: usize) -> Table {
        Table {
            map: ByteMap::with_capacity(capacity),
            ids: Vec::new(),
            capacity,
        }
    }

    /// The ids of `piece` when this thread has seen it since its table was last emptied.
    #[inline]
    pub fn get(&self, piece: &[u8]) -> Option<&[TokenId]> {
        let packed = self.map.get(piece)? as usize;
        let start = packed >> LEN_BITS;
        Some(&self.ids[start..start + (packed & ((1 << LEN_BITS) - 1))])
    }

    /// Forget every entry (the memory stays).
    fn restart(&mut self) {
        self.map.clear();
        self.ids.clear();
    }

    /// Remember that `piece` encodes to `ids` (ignored for a piece over [`MAX_PIECE`] bytes).
    #[inline]
    pub fn insert(&mut self, piece: &[u8], ids: &[TokenId]) {
        if piece.len() > MAX_PIECE {
            return;
        }
        if self.map.len() >= self.capacity || self.ids.len() + ids.len() > MOST_IDS {
            self.restart();
        }
        debug_assert!(ids.len() <= MAX_PIECE, "every id stands for at least one byte");
        if !self
            .map
            .insert(piece, (self.ids.len() << LEN_BITS | ids.len()) as u32)
        {
            // its long pieces reached `ByteMap::MOST_LONG`: start again (an empty map has room)
            self.restart();
            let fits = self.map.insert(piece, ids.len() as u32);
            debug_assert!(fits, "an empty map takes a piece of at most MAX_PIECE bytes");
        }
        self.ids.extend_from_slice(ids);
    }
}

/// The tables of all threads that used one encoder.
pub struct PieceCache {
    /// entries per thread; 0 turns the cache off
    capacity: usize,
    per_thread: ThreadLocal<RefCell<Table>>,
}

impl PieceCache {
    pub fn new(capacity: usize) -> PieceCache {
        PieceCache {
            capacity,
            per_thread: ThreadLocal::new(),
        }
    }

    /// Run `f` with this thread's table (`None` when the cache is off).  Not re-entrant: `f`
    /// must not encode with the same encoder (encoding never does).
    pub fn with<R>(&self, f: impl FnOnce(Option<&mut Table>) -> R) -> R {
        if self.capacity == 0 {
            return f(None);
        }
        let cell = self.per_thread.get_or(|| RefCell::new(Table::new(self.capacity)));
        match cell.try_borrow_mut() {
            Ok(mut table) => f(Some(&mut table)),
            Err(_) => f(None), // re-entered: go without (same results, only slower)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_starts_again_and_long_pieces_are_not_kept() {
        let cache = PieceCache::new(2);
        cache.with(|t| {
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
        PieceCache::new(0).with(|t| assert!(t.is_none()));
    }
}
