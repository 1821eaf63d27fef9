//! A small read-only table of the most frequent tokens, in front of the shortcut's table.
//!
//! Most pretokens of ordinary text are one of a few thousand tokens.  The shortcut's table of
//! a 32K vocabulary is about 1 MB: more than this machine's L2 cache (512 KB per core), so a
//! lookup took two cache misses, its control bytes and its bucket (perf annotate: 60 % of the
//! lookup's samples on those two loads, and the lookup was a quarter of all samples).  This
//! table holds the tokens with the smallest ids (BPE makes the most frequent pairs first, so
//! small ids are frequent tokens), one per slot chosen by the hash, in 128 KB: a hit costs one
//! load that usually stays in L2; a miss falls through to the full table.  It only answers for
//! tokens the full table holds with the same id, so results cannot change.

use std::hash::BuildHasher;

use crate::key::{Key, Lookup};
use crate::tokens::TokenId;

/// Slots (a power of two): 4096 slots of 32 bytes.
const SLOTS: usize = 1 << 12;

/// Empty slot marker.
const EMPTY: TokenId = TokenId::MAX;

pub struct Hot {
    slots: Box<[(Key, TokenId)]>,
}

#[inline]
fn slot_of(bytes: &[u8]) -> usize {
    rustc_hash::FxBuildHasher.hash_one(Lookup(bytes)) as usize & (SLOTS - 1)
}

impl Hot {
    /// `tokens` in order of preference (smallest id first); each goes to its slot unless an
    /// earlier one took it.  Tokens too long for an inline key are left out.
    pub fn new<'a>(tokens: impl IntoIterator<Item = (&'a [u8], TokenId)>) -> Hot {
        let mut slots: Vec<(Key, TokenId)> = vec![(Key::from_bytes(b""), EMPTY); SLOTS];
        for (bytes, id) in tokens {
            if bytes.is_empty() || bytes.len() > 22 {
                continue;
            }
            let slot = &mut slots[slot_of(bytes)];
            if slot.1 == EMPTY {
                *slot = (Key::from_bytes(bytes), id);
            }
        }
        Hot {
            slots: slots.into_boxed_slice(),
        }
    }

    /// The id of `bytes` if this table holds it.
    #[inline]
    pub fn get(&self, bytes: &[u8]) -> Option<TokenId> {
        let (key, id) = &self.slots[slot_of(bytes)];
        (*id != EMPTY && hashbrown::Equivalent::equivalent(&Lookup(bytes), key)).then_some(*id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_token_of_a_slot_wins_and_others_miss() {
        let words: Vec<Vec<u8>> = (0..20_000u32).map(|i| format!("w{i}").into_bytes()).collect();
        let hot = Hot::new(
            words
                .iter()
                .enumerate()
                .map(|(i, w)| (w.as_slice(), i as TokenId)),
        );
        let mut held = 0;
        for (i, w) in words.iter().enumerate() {
            match hot.get(w) {
                Some(id) => {
                    assert_eq!(id, i as TokenId);
                    held += 1;
                }
                None => {
                    // its slot went to a smaller id
                    let (_, owner) = &hot.slots[slot_of(w)];
                    assert!(*owner < i as TokenId);
                }
            }
        }
        assert!(held > SLOTS / 2 && held <= SLOTS, "{held}");
        assert_eq!(hot.get(b"not a word"), None);
        assert_eq!(hot.get(b""), None);
    }
}
