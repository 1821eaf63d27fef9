//! The vocabulary, as `reference/tokens.py`: token ids, pairs of them, and the table of token
//! bytes by id.  The base vocabulary is the 243 bytes that can occur in UTF-8 (SPEC 2.2).

use rustc_hash::FxHashMap;

pub type TokenId = u32;
pub type Pair = (TokenId, TokenId);

/// Token bytes by id, and the reverse map.  Byte tokens come first (SPEC 2.2).
#[derive(Clone, Default)]
pub struct Vocab {
    bytes: Vec<Box<[u8]>>,
    index: FxHashMap<Box<[u8]>, TokenId>,
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
        if let Some(&id) = self.index.get(bytes) {
            return (id, false);
        }
        let id = self.bytes.len() as TokenId;
        self.bytes.push(bytes.into());
        self.index.insert(bytes.into(), id);
        (id, true)
    }

    pub fn id(&self, bytes: &[u8]) -> Option<TokenId> {
        self.index.get(bytes).copied()
    }

    #[inline]
    pub fn bytes(&self, id: TokenId) -> &[u8] {
        &self.bytes[id as usize]
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn to_vec(&self) -> Vec<Vec<u8>> {
        self.bytes.iter().map(|b| b.to_vec()).collect()
    }
}
