//! A word model of ours as the base (SPEC 10.6), as `extend_word_model` in
//! `reference/extend.py`: SuperBPE's stages 3 and 4 with the word model fixed.
//!
//! Our word models encode by merge order (SPEC 7.3), not by rank, so they are not extended as
//! a ranks base is: the result is a SuperBPE model whose phase 1 is the word model as it is.
//! Its merges, deletions and settings are the word model's; its tokens keep their ids and the
//! superwords follow them.  On the corpus the word model was trained on (with `vocab_size`
//! V), this is the model `train(vocab_size=V + N, algorithm="superbpe", supermerges=N)` makes,
//! byte for byte: that training's phase 1 is the same word model.

use rayon::prelude::*;

use super::SMALL_CANDIDATES;
use crate::control::Control;
use crate::count::Counts;
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::model::{ByteStrings, Kind, Merge, Merges, Model};
use crate::tokens::{TokenId, Vocab};
use crate::train::candidates::{flat_candidates, Threshold};
use crate::train::superbpe::{train_superbpe, SuperCandidates};

/// Learn `n` supermerges over the word model `word`, from counts made with its own
/// pre-tokenization settings, with letter runs (the Python front checks the count file's
/// header against the model's settings).
pub fn extend_word_model(counts: Counts, word: Model, n: usize, control: &dyn Control) -> Result<Model> {
    if word.kind != Kind::Word {
        return Err(Error::Value(
            "only a word model (algorithm='bpe') is extended this way".into(),
        ));
    }
    if !word.special_tokens.is_empty() {
        // (a v2 file numbers special tokens after the whole vocabulary, superwords included,
        // so theirs would move)
        return Err(Error::Value(
            "a word model with special tokens cannot be a base: in the model file special tokens \
             take the ids after every token, so the superwords would move them; extend the model \
             without them, then register them on the result"
                .into(),
        ));
    }
    // 1. eligibility: a counted pretoken stands as one token when it is a reachable token of
    //    the word model, by its own inference (deletions included: SPEC 3.2, 9)
    let encoder = Encoder::new(&word, false)?;
    let token_of: Vec<Option<TokenId>> = counts
        .words
        .par_iter()
        .map(|(w, _)| encoder.single_token(w.as_bytes()))
        .collect();
    drop(encoder);
    // 2. candidates (SPEC 3.3); the training vocabulary is the word model's, ids as its own
    let mut vocab = Vocab::default();
    vocab.reserve(word.vocab.len() + n);
    for i in 0..word.vocab.len() {
        vocab.add(word.vocab.get(i));
    }
    let n_word = vocab.len();
    if n_word != word.vocab.len() {
        return Err(Error::internal(
            "a word model holds two tokens with the same bytes",
        ));
    }
    let candidates = SuperCandidates::Flat(flat_candidates(counts.runs, &token_of));
    drop(token_of);
    control.progress(
        "candidates",
        candidates.tokens() as u64,
        candidates.tokens() as u64,
    )?;
    let first_cut =
        (!word.merges.is_empty() && candidates.tokens() >= SMALL_CANDIDATES).then_some(Threshold::Guess(n));
    // 3. phase 2 (SPEC 5)
    let order: Vec<TokenId> = (0..n_word as TokenId).collect();
    let s = train_superbpe(vocab, &order, candidates, n, first_cut, control)?;
    // 4. the SuperBPE model: the word model's merges and deletions, then the superwords
    let mut tokens = ByteStrings::with_capacity(s.order.len());
    for &t in &s.order {
        tokens.push(s.vocab.bytes(t));
    }
    let mut supermerges = Merges::with_capacity(s.supermerges.len());
    for m in &s.supermerges {
        supermerges.push(Merge {
            left: s.vocab.bytes(m.pair.0),
            right: s.vocab.bytes(m.pair.1),
            count: m.count,
            flag: m.flag,
        });
    }
    Ok(Model {
        kind: Kind::SuperBpe,
        settings: word.settings,
        vocab: tokens,
        counts: s.order.iter().map(|&t| s.counts[t as usize]).collect(),
        is_super: (0..s.order.len()).map(|i| i >= n_word).collect(),
        merges: word.merges,
        supermerges,
        special_tokens: Vec::new(),
        ngrams: None,
        deletions: word.deletions,
    })
}
