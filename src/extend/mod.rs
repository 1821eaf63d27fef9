//! Superwords on top of an existing byte-level BPE (SPEC section 10), as
//! `reference/extend.py`.
//!
//! The base (a tiktoken ranks model: cl100k_base, a Llama-3 `tokenizer.json` read as ranks,
//! any `.tiktoken` file) keeps its pattern, tokens and ids.  Training is SuperBPE's phase 2
//! on the letter runs counted with the base's pattern, cut at every pretoken the base does not
//! encode as one token; superwords take the ids after the base's largest id (special tokens
//! included).  Encoding is the base's encoding of every pretoken, then the supermerges over
//! each run of single-token pretokens that occur in some supermerge (SPEC 7.4).
//!
//! The model file ("superword extension v1", SPEC 10.5) holds the base whole, so it is all a
//! tokenizer needs; the reader checks every line of it.
//!
//! Stages, as in the reference: [`train`] (here), the model file ([`file`]), encoding
//! ([`encode`]); a word model of ours as the base is [`word`] (SPEC 10.6).

use rayon::prelude::*;

use crate::control::Control;
use crate::count::Counts;
use crate::error::{Error, Result};
use crate::tokens::{TokenId, Vocab};
use crate::train::candidates::{flat_candidates, Threshold};
use crate::train::superbpe::{train_superbpe, SuperCandidates};

pub mod encode;
pub mod file;
pub mod word;

pub use encode::ExtensionEncoder;
pub use file::{dumps, loads};
pub use word::extend_word_model;

/// The first line of an extension model file; the number is the format's version.
pub const HEADER: &str = "superword extension v1";
/// The largest id a superword may take: ids are 32-bit, and the upper half is left for
/// special tokens registered later.
pub const MAX_ID: u64 = (1 << 31) - 1;

/// Candidates holding fewer tokens than this are not cut before phase 2 (as for SuperBPE in
/// `train/mod.rs`: the cut pays on large corpora only; any cut gives the same model).
const SMALL_CANDIDATES: usize = 1 << 16;

/// One supermerge, in the model's ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuperMerge {
    pub left: TokenId,
    pub right: TokenId,
    pub count: u64,
    pub flag: bool,
}

/// A base ranks model with supermerges on top.
#[derive(Clone, Debug, PartialEq)]
pub struct Extension {
    /// the base's tokens, ids ascending
    pub base: Vec<(TokenId, Vec<u8>)>,
    pub pattern: String,
    /// special tokens (the base's, and any registered later), ids ascending
    pub special: Vec<(String, TokenId)>,
    /// `(id, bytes, count)` of each superword, ids ascending from the first free one
    pub superwords: Vec<(TokenId, Vec<u8>, u64)>,
    pub supermerges: Vec<SuperMerge>,
}

impl Extension {
    /// One after every base id and special id: where the superwords start.
    pub fn first_free_id(&self) -> u64 {
        let base = self.base.iter().map(|(i, _)| *i);
        let special = self.special.iter().map(|(_, i)| *i);
        base.chain(special).max().map_or(0, |m| u64::from(m) + 1)
    }

    /// The first superword's id, or where it would be.
    pub fn base_end(&self) -> u64 {
        match self.superwords.first() {
            Some((i, _, _)) => u64::from(*i),
            None => self.first_free_id(),
        }
    }
}

// ------------------------------------------------------------------------------------------
// training (SPEC 10.2-10.3)

/// Learn `n` supermerges on top of the base.  `counts` must have been made with the base's
/// pattern in simple mode, with letter runs (the Python front checks the count file's header).
pub fn train(
    counts: Counts,
    base: Vec<(TokenId, Vec<u8>)>,
    pattern: String,
    special: Vec<(String, TokenId)>,
    n: usize,
    control: &dyn Control,
) -> Result<Extension> {
    let mut base = base;
    base.sort_unstable_by_key(|(i, _)| *i);
    let mut special = special;
    special.sort_unstable_by_key(|(_, i)| *i);
    let mut ext = Extension {
        base,
        pattern,
        special,
        superwords: Vec::new(),
        supermerges: Vec::new(),
    };
    let first = ext.first_free_id();
    if n == 0 || first + n as u64 - 1 > MAX_ID {
        return Err(Error::Value(format!(
            "supermerges={n} would give ids up to {}, past 2**31 - 1 = {MAX_ID} (the base's ids end at {})",
            first + n as u64 - 1,
            first as i64 - 1
        )));
    }
    // 1. the base as training's vocabulary: its tokens in id order (the merge loop's ids are
    //    positions; ties are broken by bytes, SPEC 2.4, so the ids themselves do not matter)
    let mut vocab = Vocab::default();
    vocab.reserve(ext.base.len() + n);
    for (_, t) in &ext.base {
        vocab.add(t);
    }
    let n_base = vocab.len();
    // 2. candidates: letter runs cut at pretokens that are not one base token (SPEC 10.2)
    let token_of: Vec<Option<TokenId>> = counts
        .words
        .par_iter()
        .map(|(w, _)| vocab.id(w.as_bytes()))
        .collect();
    let flat = flat_candidates(counts.runs, &token_of);
    drop(token_of);
    let candidates = SuperCandidates::Flat(flat);
    control.progress(
        "candidates",
        candidates.tokens() as u64,
        candidates.tokens() as u64,
    )?;
    let first_cut = (candidates.tokens() >= SMALL_CANDIDATES).then_some(Threshold::Guess(n));
    // 3. phase 2 (SPEC 5): exactly as SuperBPE's, the base standing for the word model
    let order: Vec<TokenId> = (0..n_base as TokenId).collect();
    let s = train_superbpe(vocab, &order, candidates, n, first_cut, control)?;
    // 4. the model's ids: the base's own, then the superwords from the first free id
    let mut id_of: Vec<TokenId> = ext.base.iter().map(|(i, _)| *i).collect();
    id_of.resize(s.vocab.len(), TokenId::MAX);
    for (k, &t) in s.order[n_base..].iter().enumerate() {
        let id = (first + k as u64) as TokenId;
        id_of[t as usize] = id;
        ext.superwords
            .push((id, s.vocab.bytes(t).to_vec(), s.counts[t as usize]));
    }
    ext.supermerges = (s.supermerges.iter())
        .map(|m| SuperMerge {
            left: id_of[m.pair.0 as usize],
            right: id_of[m.pair.1 as usize],
            count: m.count,
            flag: m.flag,
        })
        .collect();
    Ok(ext)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small model: the 256 bytes and a few words, one superword, one special token.
    pub(crate) fn small() -> Extension {
        let mut base: Vec<(TokenId, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        for (i, t) in [
            (256, " c"),
            (257, "at"),
            (258, " cat"),
            (259, " sat"),
            (260, " s"),
        ] {
            base.push((i, t.as_bytes().to_vec()));
        }
        Extension {
            base,
            pattern: r" ?\p{L}+| ?[^\s\p{L}]+|\s+".into(),
            special: vec![("<|end|>".into(), 300)],
            superwords: vec![(301, b" cat sat".to_vec(), 3)],
            supermerges: vec![SuperMerge {
                left: 258,
                right: 259,
                count: 3,
                flag: true,
            }],
        }
    }
}
