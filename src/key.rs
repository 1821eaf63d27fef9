//! Hash keys for short byte strings (pretokens, tokens).

use crate::error::{Error, Result};

/// A short byte string as a hash key, stored inline when short (nearly all pretokens and
/// tokens are), so that a lookup compares bytes in the table's own cache line instead of
/// following a pointer, and without calling `memcmp`.  Interning pretokens was a quarter of
/// BPE's time on 100 MB, and the vocabulary shortcut a fifth of encoding's.
#[derive(Clone)]
pub enum Key {
    Inline { len: u8, bytes: [u8; 22] },
    Heap(Box<[u8]>),
}

impl Key {
    pub fn new(s: &str) -> Key {
        Key::from_bytes(s.as_bytes())
    }

    pub fn from_bytes(b: &[u8]) -> Key {
        if b.len() <= 22 {
            let mut bytes = [0u8; 22];
            bytes[..b.len()].copy_from_slice(b);
            Key::Inline {
                len: b.len() as u8,
                bytes,
            }
        } else {
            Key::Heap(b.into())
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline { len, bytes } => &bytes[..*len as usize],
            Key::Heap(s) => s,
        }
    }

    /// The text of a key made from a `str`.
    pub fn to_boxed_str(&self) -> Box<str> {
        std::str::from_utf8(self.as_bytes())
            .expect("keys made from text are text")
            .into()
    }
}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(self.as_bytes());
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Key) -> bool {
        same_bytes(self.as_bytes(), other.as_bytes())
    }
}

impl Eq for Key {}

/// A borrowed pretoken for lookups, so they need no allocation; hashes like [`Key`].
pub struct Lookup<'a>(pub &'a [u8]);

impl std::hash::Hash for Lookup<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(self.0);
    }
}

impl hashbrown::Equivalent<Key> for Lookup<'_> {
    #[inline]
    fn equivalent(&self, key: &Key) -> bool {
        same_bytes(self.0, key.as_bytes())
    }
}

#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut ca, mut cb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut ca).zip(&mut cb) {
        if u64::from_ne_bytes(x.try_into().unwrap()) != u64::from_ne_bytes(y.try_into().unwrap()) {
            return false;
        }
    }
    let tail = |r: &[u8]| r.iter().fold(0u64, |acc, &x| acc << 8 | x as u64);
    tail(ca.remainder()) == tail(cb.remainder())
}

/// A map from keys, with the fast hasher.
pub type KeyMap = hashbrown::HashMap<Key, u32, rustc_hash::FxBuildHasher>;

/// A map from byte strings to `u32` of a fixed most number of keys, looked up on encoding's
/// hot path (the vocabulary shortcut, tiktoken ranks, the per-thread pretoken cache).
///
/// Profile (perf, 32K BPE model, 4 MB of Gutenberg, one thread): with a [`KeyMap`] the
/// shortcut's lookup was over half of encoding's samples, nearly all of it waiting for two
/// cache lines per probe (the table's control bytes and its 32-byte bucket, 2 MB for 32K
/// tokens).  Here a slot is 16 bytes and holds the whole key when it has at most
/// [`INLINE`] bytes (most pretokens do), so a probe reads one cache line and compares two
/// integers; a longer key keeps its first bytes in the slot, and the whole key in a side
/// arena, which is only read when those first bytes already match.  Open addressing with
/// linear probing, at most 5/8 full (a power of two of slots: 1 MB for 32K tokens, 4 MB for
/// cl100k's 100,256; a table 2/3 full at 2.4 MB was no faster on cl100k, interleaved in one
/// process).  The hash is seeded per table so that a hostile vocabulary cannot be built to
/// collide (lookups give the same answers for any seed).
#[derive(Clone)]
pub struct ByteMap {
    slots: Box<[Slot]>,
    /// keys longer than [`INLINE`] bytes, one record each, back to back: the value (`u32`,
    /// little-endian), the key's length (`u32`), the key, padded to a multiple of
    /// [`RECORD_ALIGN`] bytes; a long key's slot holds its record's offset / [`RECORD_ALIGN`].
    ///
    /// One buffer instead of a box per key: the per-thread pretoken cache holds many long
    /// pretokens (rare long words miss the shortcut), and a lookup followed two pointers
    /// (list entry, then box) where it now reads one record; a cache emptied when full freed
    /// every box, and the new ones came from pages the allocator had given back (perf, 32K
    /// BPE model, 10 MB of Gutenberg, two threads: `ByteMap::get` 12 % of samples, and 5.6 %
    /// in the kernel zeroing pages for those boxes).  The buffer keeps its memory when cleared.
    long: Vec<u8>,
    seed: u64,
    len: usize,
    /// the most keys it was made for
    keys: usize,
}

/// Bytes of a key held in its slot: 8 in `head`, 3 in `tail` next to the length byte.
pub(crate) const INLINE: usize = 11;
/// The length byte of a key longer than [`INLINE`] bytes.
const LONG: u32 = 0xFF;
/// Records in [`ByteMap::long`] start at multiples of this, so that a `u32` offset reaches
/// 16 GB of long keys.
const RECORD_ALIGN: usize = 4;
/// Bytes of a record before its key: the value and the length.
const RECORD_HEAD: usize = 8;

#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Slot {
    head: u64,
    /// bytes 8..11 of the key, then its length (or [`LONG`]) in the top byte
    tail: u32,
    /// the value, or for a long key its record's offset in `long` / [`RECORD_ALIGN`]
    value: u32,
}

/// An empty slot: its length byte is 0, which no key's is (see [`is_long`]).
const EMPTY_SLOT: Slot = Slot {
    head: 0,
    tail: 0,
    value: 0,
};

/// `n` empty slots, as zeroed memory: a large block comes from pages the system zeroes on
/// first touch, so a map's slots cost memory only as they are used (`vec![EMPTY_SLOT; n]`
/// wrote every slot).
fn empty_slots(n: usize) -> Box<[Slot]> {
    if n == 0 {
        return Box::new([]);
    }
    let layout = std::alloc::Layout::array::<Slot>(n).expect("a table of slots fits in memory");
    // SAFETY: `layout` has a nonzero size; all zero bits is a valid slot (`EMPTY_SLOT`, three
    // integers); and a boxed slice of `n` slots is freed with this very layout
    unsafe {
        let p = std::alloc::alloc_zeroed(layout) as *mut Slot;
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n))
    }
}

/// The bytes of `p` (at most 8) as a little-endian integer, without reading past its end.
#[inline(always)]
pub(crate) fn load_le(p: &[u8]) -> u64 {
    let n = p.len();
    if n >= 8 {
        u64::from_le_bytes(p[..8].try_into().unwrap())
    } else if n >= 4 {
        let lo = u32::from_le_bytes(p[..4].try_into().unwrap()) as u64;
        let hi = u32::from_le_bytes(p[n - 4..].try_into().unwrap()) as u64;
        lo | hi << ((n - 4) * 8)
    } else if n > 0 {
        p[0] as u64 | (p[n / 2] as u64) << (n / 2 * 8) | (p[n - 1] as u64) << ((n - 1) * 8)
    } else {
        0
    }
}

/// Whether a key lives in the side arena: longer than [`INLINE`] bytes, or empty (so that a
/// real key's length byte is never 0, which marks an empty slot).
#[inline(always)]
fn is_long(p: &[u8]) -> bool {
    p.len() > INLINE || p.is_empty()
}

/// A key's `head` and `tail`.
#[inline(always)]
fn split(p: &[u8]) -> (u64, u32) {
    let n = p.len();
    let head = load_le(p);
    let (rest, len) = if is_long(p) {
        (p.get(8..INLINE).unwrap_or(&[]), LONG)
    } else {
        (p.get(8..).unwrap_or(&[]), n as u32)
    };
    (head, load_le(rest) as u32 | len << 24)
}

/// [`split`] of the `n` bytes at the start of `window` (its other bytes are ignored), with no
/// branch on `n`.  `load_le`'s branches on the length were about 140,000 mispredicted
/// branches per MB of Gutenberg in the shortcut's lookups (callgrind, 32K models), where
/// every pretoken's length is as good as random to the predictor; [`Prefetched`] calls this
/// for every pretoken that has 12 bytes of its text from its start on.
#[inline(always)]
fn split_in(window: &[u8; 12], n: usize) -> (u64, u32) {
    /// per length 0..=8: the low bytes it keeps
    const KEEP: [u64; 9] = {
        let mut t = [u64::MAX; 9];
        let mut i = 0;
        while i < 8 {
            t[i] = (1 << (8 * i)) - 1;
            i += 1;
        }
        t
    };
    /// per length 0..=12 (12: longer too): the top byte of `tail`
    const LEN: [u32; 13] = {
        let mut t = [LONG << 24; 13];
        let mut i = 1;
        while i <= INLINE {
            t[i] = (i as u32) << 24;
            i += 1;
        }
        t
    };
    let head = u64::from_le_bytes(window[..8].try_into().unwrap()) & KEEP[n.min(8)];
    let rest =
        u32::from_le_bytes(window[8..].try_into().unwrap()) & KEEP[n.min(INLINE).saturating_sub(8)] as u32;
    (head, rest | LEN[n.min(12)])
}

impl ByteMap {
    /// A map of `pairs`; a key given twice keeps its last value (as collecting into a
    /// `HashMap` does).
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a [u8], u32)>) -> Result<ByteMap> {
        ByteMap::with_room(pairs, 0)
    }

    /// [`ByteMap::new`] with room for `room` more keys.
    pub fn with_room<'a>(pairs: impl IntoIterator<Item = (&'a [u8], u32)>, room: usize) -> Result<ByteMap> {
        let pairs: Vec<(&[u8], u32)> = pairs.into_iter().collect();
        let mut map = ByteMap::with_capacity(pairs.len() + room);
        for (key, value) in pairs {
            if !map.insert(key, value) {
                return Err(Error::Value(format!(
                    "the long keys of a table of {} keys take more than {} GB",
                    map.keys,
                    Self::MOST_LONG >> 30
                )));
            }
        }
        Ok(map)
    }

    /// Make this map hold what `other` holds, which is a clone of it or of a map it was
    /// cloned from (same slots and seed), reusing its memory.
    pub fn copy_from(&mut self, other: &ByteMap) {
        assert!(
            self.slots.len() == other.slots.len() && self.seed == other.seed,
            "ByteMap::copy_from a map of another shape"
        );
        self.slots.copy_from_slice(&other.slots);
        self.long.clone_from(&other.long);
        self.len = other.len;
        self.keys = other.keys;
    }

    /// An empty map of the same shape (slots and seed) as this one, so that it can be
    /// [`ByteMap::copy_from`] it; its slots' pages are left to be zeroed on first touch.
    pub fn empty_like(&self) -> ByteMap {
        ByteMap {
            slots: empty_slots(self.slots.len()),
            long: Vec::new(),
            seed: self.seed,
            len: 0,
            keys: self.keys,
        }
    }

    /// The most keys this map holds.
    pub fn room(&self) -> usize {
        self.keys
    }

    /// An empty map with room for `keys` keys (it must never hold more: a full table would
    /// probe forever).
    pub fn with_capacity(keys: usize) -> ByteMap {
        let seed = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(keys);
            h.finish() | 1
        };
        let slots = ByteMap::slots_for(keys);
        // (slot indices are kept as `u32` in probes; 2**32 slots would be 64 GB)
        assert!(slots as u64 <= 1 << 32, "a ByteMap for {keys} keys");
        ByteMap {
            slots: empty_slots(slots),
            long: Vec::new(),
            seed,
            len: 0,
            keys,
        }
    }

    /// The slots of a map for `keys` keys: a power of two, at most 5/8 of them full (so one
    /// at least is always empty, where a search for a missing key ends).
    pub fn slots_for(keys: usize) -> usize {
        (keys * 8 / 5).next_power_of_two().max(8)
    }

    /// Remove every key (the memory stays).
    pub fn clear(&mut self) {
        self.slots.fill(EMPTY_SLOT);
        self.long.clear();
        self.len = 0;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot where the search for a key starts: always below `slots.len()` (the high half
    /// of a product with it), which [`ByteMap::slot`] relies on.
    #[inline(always)]
    fn home(&self, head: u64, tail: u32) -> usize {
        let x = (head ^ self.seed).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (tail as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        let x = (x ^ x >> 29).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        ((x as u128 * self.slots.len() as u128) >> 64) as usize
    }

    /// The most bytes of long-key records a map holds (offsets are `u32` in units of
    /// [`RECORD_ALIGN`]).
    /// (As a `u64`, so that it compiles where `usize` is 32 bits.)
    pub const MOST_LONG: u64 = (u32::MAX as u64 + 1) * RECORD_ALIGN as u64;

    /// Bytes of long-key records so far (see [`ByteMap::MOST_LONG`]).
    pub fn long_bytes(&self) -> usize {
        self.long.len()
    }

    /// The record of the long key whose slot holds `at`: its value and its key.
    #[inline(always)]
    fn record(&self, at: u32) -> (u32, &[u8]) {
        let start = at as usize * RECORD_ALIGN;
        let word = |i: usize| u32::from_le_bytes(self.long[i..i + 4].try_into().unwrap());
        let len = word(start + 4) as usize;
        let key = start + RECORD_HEAD;
        (word(start), &self.long[key..key + len])
    }

    /// Set the value of `key`; false (and nothing changed) when `key` is new and long and its
    /// record would take the long keys past [`ByteMap::MOST_LONG`] (or it is 4 GB long).
    /// Panics when the map already holds as many keys as it was made for and `key` is new.
    #[must_use]
    pub fn insert(&mut self, key: &[u8], value: u32) -> bool {
        let (head, tail) = split(key);
        let long = is_long(key);
        let mut i = self.home(head, tail);
        loop {
            let s = self.slots[i];
            if s.tail == 0 {
                break;
            }
            if s.head == head && s.tail == tail {
                if !long {
                    self.slots[i].value = value;
                    return true;
                }
                if self.record(s.value).1 == key {
                    let start = s.value as usize * RECORD_ALIGN;
                    self.long[start..start + 4].copy_from_slice(&value.to_le_bytes());
                    return true;
                }
            }
            i = if i + 1 == self.slots.len() { 0 } else { i + 1 };
        }
        assert!(
            self.len < self.keys,
            "a ByteMap made for {} keys is full",
            self.keys
        );
        let stored = if long {
            let start = self.long.len();
            let end = (start + RECORD_HEAD + key.len()).next_multiple_of(RECORD_ALIGN);
            if end as u64 > Self::MOST_LONG || u32::try_from(key.len()).is_err() {
                return false;
            }
            self.long.extend_from_slice(&value.to_le_bytes());
            self.long.extend_from_slice(&(key.len() as u32).to_le_bytes());
            self.long.extend_from_slice(key);
            self.long.resize(end, 0);
            (start / RECORD_ALIGN) as u32
        } else {
            value
        };
        self.slots[i] = Slot {
            head,
            tail,
            value: stored,
        };
        self.len += 1;
        true
    }

    /// The value of `key`, if it is in the map.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<u32> {
        self.find(key, self.probe(key))
    }

    /// Where the search for `key` starts; [`ByteMap::prefetch`] it, then
    /// [`ByteMap::find`] it, so that lookups of several keys overlap their cache misses.
    #[inline(always)]
    pub(crate) fn probe(&self, key: &[u8]) -> Probe {
        let (head, tail) = split(key);
        Probe {
            head,
            tail,
            home: self.home(head, tail) as u32,
        }
    }

    /// [`ByteMap::probe`] of the `n` bytes at the start of `window`.
    #[inline(always)]
    pub(crate) fn probe_in(&self, window: &[u8; 12], n: usize) -> Probe {
        let (head, tail) = split_in(window, n);
        Probe {
            head,
            tail,
            home: self.home(head, tail) as u32,
        }
    }

    /// Slot `i`, which the caller keeps below `slots.len()`: a home, or a successor of one that
    /// wraps to 0 at the end.  Unchecked, because the bounds checks of the lookup's two
    /// loops were a tenth of their instructions (callgrind, 32K model).
    #[inline(always)]
    fn slot(&self, i: usize) -> &Slot {
        debug_assert!(i < self.slots.len());
        // SAFETY: every caller passes a home (below the length, see `home`) or a successor
        // of a slot index that wraps to 0 at the length
        unsafe { self.slots.get_unchecked(i) }
    }

    /// Ask the CPU to start loading the slot where `probe`'s search starts.
    #[inline(always)]
    pub(crate) fn prefetch(&self, probe: &Probe) {
        crate::prefetch(self.slot(probe.home as usize));
    }

    /// The value of `key`, whose probe is `probe`.  (Inlined by force: the release build
    /// left it a call, 7 % of a 32K model's encoding samples.)
    #[inline(always)]
    pub(crate) fn find(&self, key: &[u8], probe: Probe) -> Option<u32> {
        let Probe { head, tail, home } = probe;
        let mut i = home as usize;
        loop {
            let s = self.slot(i);
            if s.head == head && s.tail == tail {
                if !is_long(key) {
                    return Some(s.value);
                }
                let (v, k) = self.record(s.value);
                if k == key {
                    return Some(v);
                }
            } else if s.tail == 0 {
                return None;
            }
            i = if i + 1 == self.slots.len() { 0 } else { i + 1 };
        }
    }
}

/// Keys looked up in a [`ByteMap`] a block at a time: [`Prefetched::push`] hashes each key
/// and starts loading its slot, and each block of [`BLOCK`] keys (the rest at
/// [`Prefetched::finish`]) is then handed to `found` key by key, in order, with the keys'
/// values.  Encoding looks every pretoken up this way (the profile is at
/// `Encoder::encode_pieces`).  (The hash was computed in a loop over the block before its
/// lookups, from an array of the keys: storing the keys, then reading them back and storing
/// and reloading their probes, were about 19 instructions per key, callgrind, 32K BPE model;
/// now a key and its probe are stored once, side by side.)  Tried and dropped: handing each
/// key that is not in the map to the caller once more before the block's lookups, so that
/// encoding could prefetch its slot in the per-thread pretoken cache (`ByteMap::get` there is
/// a tenth of a 32K BPE model's samples on 10 MB): 131.9 against 140.1 MB per CPU-second.
/// Tried again without the second search (the block's answers kept, the keys not
/// in the map told to the caller first, then every key handed over with its answer; cl100k,
/// where that cache's `ByteMap::get` is 16 % of the samples on 100,000-character texts,
/// nearly all of it waiting for the slot): slower again, 137.2 against 156.2 MB per
/// CPU-second on those texts and 150.5 against 162.9 on lines (interleaved in one process).
/// Also dropped: buckets of four slots compared at once with SSE2, which halved
/// the shortcut's mispredicted branches (callgrind) but added 20-25 instructions a pretoken,
/// for no gain in time; putting a vocabulary's tokens in by rank did most of that for free
/// (see `RankEncoder::new`).  The encoders look their pretokens up in a
/// per-thread table that holds the tokens and the cache's entries alike (see
/// `PieceCache::seeded`), which `found` adds to as it goes ([`Holds`]).
pub struct Prefetched<'a, 'w, H: Holds, F: FnMut(&mut H, &'a [u8], Option<u32>)> {
    /// the map, or what holds it
    held: H,
    /// the text all keys are slices of
    text: &'a [u8],
    /// the block's keys so far (the first `n` are written)
    waiting: &'w mut Block<'a>,
    n: usize,
    found: F,
}

/// What [`Prefetched`] looks its keys up in: a map, or a table that holds one and that
/// `found` may change between look-ups (the per-thread table of `encode/cache.rs`, which
/// learns what the pretokens that are not tokens became).
///
/// # Safety
/// Every map that `map` returns during one [`Prefetched`]'s life has the same slots and
/// seed (it may gain keys, or be reset with [`ByteMap::copy_from`]): the probes of the keys
/// still waiting were made with the first, and their slots are read unchecked.
pub unsafe trait Holds {
    fn map(&self) -> &ByteMap;
}

// SAFETY: a shared map cannot change
unsafe impl Holds for &ByteMap {
    #[inline(always)]
    fn map(&self) -> &ByteMap {
        self
    }
}

/// Room for a block of keys of [`Prefetched`], made by the caller: inside `Prefetched` its
/// half kilobyte was zeroed and copied once per text, about 140 instructions (callgrind,
/// texts of a few words), though nothing reads it before writing it.
pub struct Block<'a>([std::mem::MaybeUninit<(&'a [u8], Probe)>; BLOCK]);

impl Default for Block<'_> {
    #[inline(always)]
    fn default() -> Self {
        Block([std::mem::MaybeUninit::uninit(); BLOCK])
    }
}

/// Keys per block of [`Prefetched`].
const BLOCK: usize = 16;

impl<'a, 'w, H: Holds, F: FnMut(&mut H, &'a [u8], Option<u32>)> Prefetched<'a, 'w, H, F> {
    /// Lookups of slices of `text` (a key from elsewhere is looked up all the same, only
    /// without [`split_in`]) in what `held` holds, in `block`; `found` is given `held` too.
    #[inline(always)]
    pub fn new(held: H, text: &'a [u8], block: &'w mut Block<'a>, found: F) -> Self {
        Prefetched {
            held,
            text,
            waiting: block,
            n: 0,
            found,
        }
    }

    #[inline]
    pub fn push(&mut self, key: &'a [u8]) {
        let map = self.held.map();
        // where the key starts in the text, if it is in the text
        let at = (key.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize);
        let probe = match self.text.get(at..at.wrapping_add(12)) {
            Some(window) if at + key.len() <= self.text.len() => {
                map.probe_in(window.try_into().unwrap(), key.len())
            }
            _ => map.probe(key),
        };
        map.prefetch(&probe);
        debug_assert!(self.n < BLOCK);
        // SAFETY: `n` is below `BLOCK`: it is reset to 0 whenever it reaches it
        unsafe { self.waiting.0.get_unchecked_mut(self.n) }.write((key, probe));
        self.n += 1;
        if self.n == BLOCK {
            self.look_up();
        }
    }

    /// Look up the keys still waiting.
    pub fn finish(mut self) {
        self.look_up();
    }

    #[inline]
    fn look_up(&mut self) {
        // (emptied before the keys are handed over: a `found` that panics must not leave `n`
        // at `BLOCK` for a later `push`)
        let n = std::mem::take(&mut self.n);
        for entry in &self.waiting.0[..n] {
            // SAFETY: `push` wrote the first `n` entries of this block
            let (key, probe) = unsafe { entry.assume_init() };
            // (the map again for each key: `found` may have added keys; see `Holds`)
            let value = self.held.map().find(key, probe);
            (self.found)(&mut self.held, key, value);
        }
    }
}

/// A key's hashed form and home slot in one [`ByteMap`].
#[derive(Clone, Copy, Default)]
pub(crate) struct Probe {
    head: u64,
    tail: u32,
    /// (a `u32`, so that a probe and its key fit half a cache line: maps have far fewer than
    /// 2**32 slots, see `ByteMap::with_capacity`)
    home: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random byte strings of every length class, with many shared prefixes and zero bytes.
    fn keys(n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..n)
            .map(|_| {
                let len = (next() % 30) as usize;
                (0..len).map(|_| b"ab\0\xff"[(next() % 4) as usize]).collect()
            })
            .collect()
    }

    #[test]
    fn the_frozen_map_answers_like_a_hash_map() {
        let all = keys(6000, 7);
        let (inside, outside) = all.split_at(3000);
        let mut expected = std::collections::HashMap::new();
        for (i, k) in inside.iter().enumerate() {
            expected.insert(k.clone(), i as u32); // a repeated key keeps its last value
        }
        let map = ByteMap::new(inside.iter().enumerate().map(|(i, k)| (k.as_slice(), i as u32))).unwrap();
        assert_eq!(map.len(), expected.len());
        for k in all.iter().chain([&Vec::new()]) {
            assert_eq!(map.get(k), expected.get(k).copied(), "{k:?}");
        }
        for k in outside {
            for cut in 0..k.len() {
                assert_eq!(map.get(&k[..cut]), expected.get(&k[..cut]).copied());
            }
        }
        let with_empty = ByteMap::new([(&b""[..], 5), (&b"a"[..], 6)]).unwrap();
        assert_eq!(
            (with_empty.get(b""), with_empty.get(b"a"), with_empty.get(b"b")),
            (Some(5), Some(6), None)
        );
        assert_eq!(ByteMap::new([]).unwrap().get(b""), None);
    }

    #[test]
    fn long_keys_are_updated_in_place_and_cleared_with_the_map() {
        let mut map = ByteMap::with_capacity(4);
        let long = b"a long key of many bytes";
        assert!(map.insert(long, 1));
        assert!(map.insert(&long[..13], 2)); // the same first 11 bytes, another length
        assert!(map.insert(long, 3));
        assert_eq!(
            (
                map.len(),
                map.get(long),
                map.get(&long[..13]),
                map.get(&long[..12])
            ),
            (2, Some(3), Some(2), None)
        );
        let before = map.long_bytes();
        assert_eq!(before % RECORD_ALIGN, 0);
        map.clear();
        assert_eq!((map.len(), map.long_bytes(), map.get(long)), (0, 0, None));
        assert!(map.insert(&long[..12], 4));
        assert_eq!((map.get(&long[..12]), map.get(&long[..13])), (Some(4), None));
    }

    #[test]
    fn partial_loads_read_exactly_the_bytes() {
        let bytes: Vec<u8> = (1..=8).collect();
        for n in 0..=8 {
            let mut want = [0u8; 8];
            want[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(load_le(&bytes[..n]), u64::from_le_bytes(want), "{n}");
        }
    }

    #[test]
    fn a_key_split_in_its_text_is_split_as_alone() {
        let text: Vec<u8> = keys(400, 11).concat();
        for at in 0..text.len().saturating_sub(12) {
            let window: &[u8; 12] = text[at..at + 12].try_into().unwrap();
            for n in 0..=(text.len() - at).min(40) {
                assert_eq!(split_in(window, n), split(&text[at..at + n]), "{at} {n}");
            }
        }
        // the blocks find keys in their text, out of it, and at its very end alike
        let words: Vec<&[u8]> = vec![b"", b"a", b"ab\0", b"abcdefghijkl", b"abcdefghijklmnop", b"xyz"];
        let map = ByteMap::new(words.iter().enumerate().map(|(i, w)| (*w, i as u32))).unwrap();
        let text = b"abcdefghijklmnopab\0xyz";
        let pieces: Vec<&[u8]> = vec![
            &text[..16],
            &text[..12],
            &text[16..19],
            &text[19..],
            &text[22..],
            &text[..1],
            b"ab\0",
            b"q",
        ];
        let mut found = Vec::new();
        let mut block = Block::default();
        let mut blocks = Prefetched::new(&map, text, &mut block, |_, k, v| found.push((k, v)));
        for p in &pieces {
            blocks.push(p);
        }
        blocks.finish();
        let expected: Vec<_> = pieces.iter().map(|p| (*p, map.get(p))).collect();
        assert_eq!(found, expected);
        assert_eq!(found.iter().filter(|f| f.1.is_some()).count(), 7);
    }
}
