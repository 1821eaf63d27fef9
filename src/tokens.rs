//! The vocabulary, as `reference/tokens.py`: token ids, pairs of them, and the table of token
//! bytes by id.  The base vocabulary is the 243 bytes that can occur in UTF-8 (SPEC 2.2).

use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry, HashTable};
use rustc_hash::FxBuildHasher;

use crate::model::ByteStrings;

pub type TokenId = u32;
pub type Pair = (TokenId, TokenId);

/// Token bytes by id, and the reverse map.  Byte tokens come first (SPEC 2.2).
///
/// The bytes lie back to back in one array, and the reverse map is a table of ids hashed by
/// their bytes.  (Round 10: a box of bytes per token, and another as the key of a hash map
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
/// (Round 10: made from the bytes each time, they were a third of a push).
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
