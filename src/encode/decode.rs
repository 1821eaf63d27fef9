//! Decoding: token ids back to their bytes.
//!
//! Profile (perf, a 32K model, 22,915 ids decoded over and over): with a `Vec<u8>` per token,
//! `memmove` was a fifth of all samples, one library call per id for a few bytes, and the
//! loop around it another sixth.  Here every token's bytes lie back to back in one buffer;
//! a first pass over the ids checks them and adds up the length, and the second copies each
//! token of at most [`BLOCK`] bytes as one fixed-width block into the output (which has that
//! much room past its end), then moves on by the token's real length.  Ids are dense (a
//! superword model's are `0..n`; a tiktoken ranks file's nearly so), so a token is found by
//! indexing; ids far past the number of tokens (a hand-made ranks file) are kept in a map,
//! so that no table is sized by an id read from a file.

use rustc_hash::FxHashMap;

use crate::error::Error;

/// Tokens up to this many bytes are copied as one block of this size.
const BLOCK: usize = 16;

pub struct TokenBytes {
    /// every token's bytes, then [`BLOCK`] zero bytes
    bytes: Vec<u8>,
    /// token `id`'s bytes are `bytes[starts[id]..starts[id + 1]]`; an empty range is an id
    /// without a token (no token is empty)
    starts: Vec<usize>,
    /// where the tokens with ids at or past `starts.len() - 1` are
    far: FxHashMap<u32, (usize, usize)>,
}

impl TokenBytes {
    /// The tokens `(id, bytes)`, in any order; an id given twice keeps its first token.
    pub fn new<'a>(tokens: impl IntoIterator<Item = (u32, &'a [u8])>) -> TokenBytes {
        let tokens: Vec<(u32, &[u8])> = tokens.into_iter().collect();
        let top = tokens.iter().map(|&(id, _)| id as usize + 1).max().unwrap_or(0);
        // dense up to the ids a vocabulary of this size could use, with room for gaps
        let mut by_id: Vec<Option<&[u8]>> = vec![None; top.min(2 * tokens.len() + 1024)];
        let mut far_tokens = Vec::new();
        for &(id, token) in &tokens {
            match by_id.get_mut(id as usize) {
                Some(slot) => {
                    slot.get_or_insert(token);
                }
                None => far_tokens.push((id, token)),
            }
        }
        let mut bytes = Vec::new();
        let mut starts = Vec::with_capacity(by_id.len() + 1);
        for token in &by_id {
            starts.push(bytes.len());
            bytes.extend_from_slice(token.unwrap_or_default());
        }
        starts.push(bytes.len());
        let mut far = FxHashMap::default();
        for (id, token) in far_tokens {
            far.entry(id).or_insert_with(|| {
                bytes.extend_from_slice(token);
                (bytes.len() - token.len(), bytes.len())
            });
        }
        bytes.extend_from_slice(&[0; BLOCK]);
        TokenBytes { bytes, starts, far }
    }

    /// Where the bytes of token `id` are, if it has a token.
    #[inline(always)]
    fn span(&self, id: i64) -> Option<(usize, usize)> {
        let i = usize::try_from(id).ok()?;
        let (s, e) = match (self.starts.get(i), self.starts.get(i.wrapping_add(1))) {
            (Some(&s), Some(&e)) => (s, e),
            _ => *self.far.get(&u32::try_from(id).ok()?)?,
        };
        (e > s).then_some((s, e))
    }

    /// The bytes of `ids`: a token's bytes, or `special(id)` for an id without a token; an id
    /// that is neither is the error `missing(id, position)`.
    pub fn decode<'s>(
        &self,
        ids: &[i64],
        special: impl Fn(i64) -> Option<&'s [u8]>,
        missing: impl Fn(i64, usize) -> Error,
    ) -> Result<Vec<u8>, Error> {
        let mut total = 0;
        for (position, &id) in ids.iter().enumerate() {
            total += match self.span(id) {
                Some((s, e)) => e - s,
                None => special(id).ok_or_else(|| missing(id, position))?.len(),
            };
        }
        let mut out = vec![0u8; total + BLOCK];
        let mut at = 0;
        for &id in ids {
            match self.span(id) {
                Some((s, e)) if e - s <= BLOCK => {
                    // the block may run past the token (into the next ones or the zeros at
                    // the end) and past its place in `out` (the next token overwrites it)
                    let block: &[u8; BLOCK] = self.bytes[s..s + BLOCK].try_into().expect("BLOCK bytes");
                    let place: &mut [u8; BLOCK] = (&mut out[at..at + BLOCK]).try_into().expect("BLOCK bytes");
                    *place = *block; // one 16-byte move, not a call of `memcpy`
                    at += e - s;
                }
                Some((s, e)) => {
                    out[at..at + e - s].copy_from_slice(&self.bytes[s..e]);
                    at += e - s;
                }
                None => {
                    let b = special(id).expect("checked in the first pass");
                    out[at..at + b.len()].copy_from_slice(b);
                    at += b.len();
                }
            }
        }
        out.truncate(total);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_of_every_length_and_far_ids_come_back_whole() {
        // lengths around the block's width, an id far past the others, and a gap
        let tokens: Vec<(u32, Vec<u8>)> = vec![
            (0, b"a".to_vec()),
            (1, vec![b'x'; BLOCK - 1]),
            (2, vec![b'y'; BLOCK]),
            (3, vec![b'z'; BLOCK + 1]),
            (5, vec![b'w'; 3 * BLOCK]),
            (4_000_000_000, b"far".to_vec()),
        ];
        let t = TokenBytes::new(tokens.iter().map(|(i, b)| (*i, b.as_slice())));
        let none = |_: i64| -> Option<&'static [u8]> { None };
        let missing = |id: i64, at: usize| Error::Value(format!("{id} at {at}"));
        let ids: Vec<i64> = vec![3, 0, 1, 4_000_000_000, 2, 5, 0, 2, 1];
        let want: Vec<u8> = ids
            .iter()
            .flat_map(|&i| tokens.iter().find(|(id, _)| *id as i64 == i).unwrap().1.clone())
            .collect();
        assert_eq!(t.decode(&ids, none, missing).unwrap(), want);
        assert_eq!(t.decode(&[], none, missing).unwrap(), b"");
        for bad in [4, 6, -1, 4_000_000_001, i64::MAX] {
            let e = t.decode(&[0, bad], none, missing).unwrap_err();
            assert_eq!(e.to_string(), format!("{bad} at 1"));
        }
        let special = |id: i64| (id == 4).then_some(&b"<s>"[..]);
        assert_eq!(t.decode(&[0, 4, 0], special, missing).unwrap(), b"a<s>a");
    }
}
