//! The vocabulary, as `reference/tokens.py`: token ids, pairs of them, and the table of token
//! bytes by id.  The base vocabulary is the 243 bytes that can occur in UTF-8 (SPEC 2.2).

use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry, HashTable};
use rustc_hash::FxBuildHasher;

pub mod ngram;
pub mod pairs;

pub type TokenId = u32;
pub type Pair = (TokenId, TokenId);

/// Token bytes by id, and the reverse map.  Byte tokens come first (SPEC 2.2).
///
/// The bytes lie back to back in one array, and the reverse map is a table of ids hashed by
/// their bytes.  (A box of bytes per token, and another as the key of a hash map
/// from bytes to ids, were two allocations and two hashes of the bytes per merge; adding a
/// token was 2.4-2.8 M instructions of a small training's phase 1, taylorswift.txt at 5,000.)
#[derive(Clone)]
pub struct Vocab {
    /// every token's bytes, in id order
    data: Vec<u8>,
    /// token `i`'s bytes are `data[bounds[i]..bounds[i + 1]]`
    bounds: Vec<usize>,
    /// ids, found by the hash of their bytes
    index: HashTable<TokenId>,
    /// each token's [`prefix_key`], by id
    keys: Vec<u64>,
}

/// The first 8 bytes of a token, big-endian and zero-padded: comparing two keys orders two
/// tokens by bytes whenever the keys differ (a zero pad stands where the shorter token ended,
/// and the shorter sorts first).  Equal keys fall back to comparing the bytes.  Kept by
/// [`Vocab`] for every token: the merge loop's heap makes two for each entry it pushes
/// (Made from the bytes each time, they were a third of a push).
#[inline]
pub fn prefix_key(bytes: &[u8]) -> u64 {
    let mut k = [0u8; 8];
    let n = bytes.len().min(8);
    k[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(k)
}

impl Default for Vocab {
    fn default() -> Vocab {
        Vocab {
            data: Vec::new(),
            bounds: vec![0],
            index: HashTable::new(),
            keys: Vec::new(),
        }
    }
}

#[inline]
fn hash_of(bytes: &[u8]) -> u64 {
    FxBuildHasher.hash_one(bytes)
}

/// Token `id`'s bytes in `data` (see [`Vocab`]).
#[inline]
fn slice<'a>(data: &'a [u8], bounds: &[usize], id: TokenId) -> &'a [u8] {
    let i = id as usize;
    &data[bounds[i]..bounds[i + 1]]
}

/// The size of the base vocabulary: the bytes that can occur in UTF-8.
pub const BASE_VOCAB: usize = 243;

/// The 243 bytes that can occur in UTF-8, in id order.
pub fn byte_token_values() -> impl Iterator<Item = u8> {
    (0x00..0xC0u8).chain(0xC2..0xF5u8)
}

/// Id of a byte's token in the base vocabulary (SPEC 2.2); `None` for bytes UTF-8 never uses.
#[inline]
pub fn byte_id(b: u8) -> Option<TokenId> {
    match b {
        0x00..=0xBF => Some(b as TokenId),
        0xC2..=0xF4 => Some(b as TokenId - 2),
        _ => None,
    }
}

impl Vocab {
    /// The base vocabulary of 243 byte tokens.
    pub fn base() -> Vocab {
        let mut t = Vocab::default();
        for b in byte_token_values() {
            t.add(&[b]);
        }
        t
    }

    pub fn from_vocab(vocab: &[Vec<u8>]) -> Vocab {
        let mut t = Vocab::default();
        for v in vocab {
            t.add(v);
        }
        t
    }

    /// The id of `bytes`, adding it if new; `(id, added)`.
    pub fn add(&mut self, bytes: &[u8]) -> (TokenId, bool) {
        let Vocab {
            data,
            bounds,
            index,
            keys,
        } = self;
        let entry = index.entry(
            hash_of(bytes),
            |&id| slice(data, bounds, id) == bytes,
            |&id| hash_of(slice(data, bounds, id)),
        );
        match entry {
            Entry::Occupied(e) => (*e.get(), false),
            Entry::Vacant(e) => {
                let id = (bounds.len() - 1) as TokenId;
                e.insert(id);
                data.extend_from_slice(bytes);
                bounds.push(data.len());
                keys.push(prefix_key(bytes));
                (id, true)
            }
        }
    }

    /// Room for `n` more tokens (growing the table of ids as tokens come was a quarter of the
    /// cost of adding them).
    pub fn reserve(&mut self, n: usize) {
        let Vocab {
            data,
            bounds,
            index,
            keys,
        } = self;
        index.reserve(n, |&id| hash_of(slice(data, bounds, id)));
        bounds.reserve(n);
        keys.reserve(n);
    }

    pub fn id(&self, bytes: &[u8]) -> Option<TokenId> {
        self.index
            .find(hash_of(bytes), |&id| self.bytes(id) == bytes)
            .copied()
    }

    #[inline]
    pub fn bytes(&self, id: TokenId) -> &[u8] {
        slice(&self.data, &self.bounds, id)
    }

    /// Token `id`'s [`prefix_key`].
    #[inline]
    pub fn key(&self, id: TokenId) -> u64 {
        self.keys[id as usize]
    }

    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every token's bytes, by id.
    pub fn strings(&self) -> ByteStrings {
        ByteStrings::from_parts(self.data.clone(), self.bounds.clone())
    }

    pub fn to_vec(&self) -> Vec<Vec<u8>> {
        (0..self.len() as TokenId)
            .map(|id| self.bytes(id).to_vec())
            .collect()
    }
}

/// Byte strings back to back in one vector, by index: a model's tokens, its merges' halves.
///
/// (A `Vec<u8>` per token and two per merge were ~14,500 allocations for a model
/// of 5,000 tokens, made after training and freed with the tokenizer.  Taylorswift.txt at
/// 5,000, a whole `superword.train` call and the drop: BPE 51.8 -> 50.1 M instructions,
/// BoundlessBPE 62.4 -> 60.9 M, SuperBPE 59.4 -> 57.9 M.  Tried and dropped: `Vocab` keeping
/// its bytes in a `ByteStrings` too, so that the word model's vocabulary is a clone of it:
/// 50.14 -> 50.40 M for BPE, the merge loop's code laid out and inlined differently, where a
/// copy made from `Vocab`'s own vectors, `Vocab::strings`, gives 50.14 -> 49.99 M.)
#[derive(Clone, PartialEq, Eq)]
pub struct ByteStrings {
    data: Vec<u8>,
    /// string `i` is `data[bounds[i]..bounds[i + 1]]`
    bounds: Vec<usize>,
}

impl Default for ByteStrings {
    fn default() -> ByteStrings {
        ByteStrings::with_capacity(0)
    }
}

impl ByteStrings {
    /// Room for `n` strings.
    pub fn with_capacity(n: usize) -> ByteStrings {
        let mut bounds = Vec::with_capacity(n + 1);
        bounds.push(0);
        ByteStrings {
            data: Vec::new(),
            bounds,
        }
    }

    /// The strings of `data` between consecutive `bounds` (increasing, from 0 to its length).
    pub fn from_parts(data: Vec<u8>, bounds: Vec<usize>) -> ByteStrings {
        assert!(bounds.first() == Some(&0) && bounds.last() == Some(&data.len()));
        debug_assert!(bounds.windows(2).all(|b| b[0] <= b[1]));
        ByteStrings { data, bounds }
    }

    #[inline]
    pub fn push(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
        self.bounds.push(self.data.len());
    }

    /// String `i` (panics out of range, as indexing a slice).
    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        &self.data[self.bounds[i]..self.bounds[i + 1]]
    }

    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + DoubleEndedIterator + '_ {
        self.bounds.windows(2).map(|b| &self.data[b[0]..b[1]])
    }

    /// Keep the first `n` strings.
    pub fn truncate(&mut self, n: usize) {
        if n < self.len() {
            self.bounds.truncate(n + 1);
            self.data.truncate(self.bounds[n]);
        }
    }
}

/// The ids of a [`ByteStrings`] found by their bytes, without a copy of the bytes: the table
/// holds ids and a lookup compares the key with the strings the index was made from (pass the
/// same ones).  A string held twice finds its last id, as collecting into a map would.  (A map
/// keyed by copies doubled a model's token bytes at load: 53 MB more for a model trained on
/// 20 MB of one repeated pair, whose tokens are megabytes long.)
pub struct StringIndex {
    table: HashTable<TokenId>,
}

impl StringIndex {
    pub fn new(strings: &ByteStrings) -> StringIndex {
        let hash = |b: &[u8]| FxBuildHasher.hash_one(b);
        let mut table = HashTable::with_capacity(strings.len());
        for (i, s) in strings.iter().enumerate() {
            let entry = table.entry(
                hash(s),
                |&id: &TokenId| &strings[id as usize] == s,
                |&id| hash(&strings[id as usize]),
            );
            match entry {
                Entry::Occupied(mut e) => *e.get_mut() = i as TokenId,
                Entry::Vacant(e) => {
                    e.insert(i as TokenId);
                }
            }
        }
        StringIndex { table }
    }

    #[inline]
    pub fn get(&self, strings: &ByteStrings, key: &[u8]) -> Option<TokenId> {
        self.table
            .find(FxBuildHasher.hash_one(key), |&id| &strings[id as usize] == key)
            .copied()
    }
}

impl std::ops::Index<usize> for ByteStrings {
    type Output = [u8];

    fn index(&self, i: usize) -> &[u8] {
        self.get(i)
    }
}

impl<'a> FromIterator<&'a [u8]> for ByteStrings {
    fn from_iter<I: IntoIterator<Item = &'a [u8]>>(iter: I) -> ByteStrings {
        let iter = iter.into_iter();
        let mut out = ByteStrings::with_capacity(iter.size_hint().0);
        for s in iter {
            out.push(s);
        }
        out
    }
}

impl From<Vec<Vec<u8>>> for ByteStrings {
    fn from(strings: Vec<Vec<u8>>) -> ByteStrings {
        strings.iter().map(Vec::as_slice).collect()
    }
}

impl std::fmt::Debug for ByteStrings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
