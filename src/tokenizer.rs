//! A tokenizer ready to encode, of either kind the Python API offers: a superword model (BPE,
//! BoundlessBPE, SuperBPE) with its encoder, or a tiktoken ranks model.  Every question the
//! seam's one `Tokenizer` class asks is answered here, once for both kinds.

use std::sync::{Arc, RwLock};

use crate::encode::{Encode, Encoder};
use crate::error::{Error, Result};
use crate::model::{v2, Model};
use crate::ranks::{self, RankEncoder};

// one value per Python tokenizer, kept behind an `Arc`: the size of the variants does not matter
#[allow(clippy::large_enum_variant)]
pub enum Tokenizer {
    /// a trained or loaded model; `greedy_split`: encoding cuts runs into the n-grams of
    /// training (SPEC 3.1), else the paper's encoding
    Superword {
        model: Model,
        encoder: Encoder,
        greedy_split: bool,
    },
    /// a `.tiktoken` ranks model, encoding exactly as tiktoken does
    Ranks(RankEncoder),
}

impl Tokenizer {
    pub fn new(model: Model, greedy_split: bool) -> Result<Tokenizer> {
        let encoder = Encoder::new(&model, greedy_split)?;
        Ok(Tokenizer::Superword {
            model,
            encoder,
            greedy_split,
        })
    }

    /// Load a "BoundlessBPE v2" model file.  With `greedy_split` the n-gram table comes from
    /// the sidecar (SPEC 3.1); a table inside a model file of an earlier version is used only
    /// when there is no sidecar.
    pub fn load(path: &str, greedy_split: bool) -> Result<Tokenizer> {
        let mut model = v2::read(path)?;
        let sidecar = std::path::Path::new(&v2::ngrams_path(path)).exists();
        if greedy_split && (model.ngrams.is_none() || sidecar) {
            model.ngrams = Some(v2::read_ngrams(path)?);
        }
        Tokenizer::new(model, greedy_split)
    }

    /// Read a `.tiktoken` file; `special` gives each special string its id.
    pub fn load_tiktoken(path: &str, pattern: String, special: Vec<(String, u32)>) -> Result<Tokenizer> {
        Ok(Tokenizer::Ranks(RankEncoder::load(path, pattern, special)?))
    }

    pub fn encoder(&self) -> &dyn Encode {
        match self {
            Tokenizer::Superword { encoder, .. } => encoder,
            Tokenizer::Ranks(r) => r,
        }
    }

    /// "word", "boundless", "superbpe" or "tiktoken".
    pub fn kind(&self) -> &'static str {
        match self {
            Tokenizer::Superword { model, .. } => model.kind.name(),
            Tokenizer::Ranks(_) => "tiktoken",
        }
    }

    /// The pre-tokenization pattern (the main one).
    pub fn pattern(&self) -> &str {
        match self {
            Tokenizer::Superword { model, .. } => &model.settings.main_regex,
            Tokenizer::Ranks(r) => &r.model.pattern,
        }
    }

    /// One more than the largest id, special tokens included.
    pub fn vocab_size(&self) -> usize {
        match self {
            Tokenizer::Superword { model, .. } => model.vocab_size(),
            Tokenizer::Ranks(r) => r.vocab_size(),
        }
    }

    pub fn num_supermerges(&self) -> usize {
        match self {
            Tokenizer::Superword { model, .. } => model.supermerges.len(),
            Tokenizer::Ranks(_) => 0,
        }
    }

    pub fn special_tokens(&self) -> &[(String, u32)] {
        match self {
            Tokenizer::Superword { model, .. } => &model.special_tokens,
            Tokenizer::Ranks(r) => &r.model.special,
        }
    }

    /// Is `id` a superword?  An id that is no token is an error.
    pub fn is_superword(&self, id: i64) -> Result<bool> {
        match self {
            Tokenizer::Superword { model, .. } => model.is_superword(id),
            Tokenizer::Ranks(r) => r.decode_bytes(&[id]).map(|_| false),
        }
    }

    /// The id of a regular or superword token given by its bytes.
    pub fn id_of(&self, token: &[u8]) -> Option<u32> {
        match self {
            Tokenizer::Superword { encoder, .. } => encoder.id_of(token),
            Tokenizer::Ranks(r) => r.model.ranks.get(token).copied(),
        }
    }

    /// (id, bytes, is a superword) for every regular and superword token, in id order.
    pub fn vocab_items(&self) -> Vec<(u32, &[u8], bool)> {
        match self {
            Tokenizer::Superword { model, .. } => (model.vocab.iter().zip(&model.is_super).enumerate())
                .map(|(i, (t, &s))| (i as u32, t.as_slice(), s))
                .collect(),
            Tokenizer::Ranks(r) => r.items().into_iter().map(|(i, t)| (i, t, false)).collect(),
        }
    }

    /// This tokenizer with `tokens` added as special tokens with the next free ids; a token
    /// that is already registered (or named twice) is an error.
    pub fn with_special_tokens(&self, tokens: Vec<String>) -> Result<Tokenizer> {
        for (i, t) in tokens.iter().enumerate() {
            if self.special_tokens().iter().any(|(s, _)| s == t) || tokens[..i].contains(t) {
                return Err(Error::Value(format!("special token {t:?} is already registered")));
            }
        }
        match self {
            Tokenizer::Superword {
                model, greedy_split, ..
            } => {
                let mut model = model.clone();
                model.add_special_tokens(tokens);
                Tokenizer::new(model, *greedy_split)
            }
            Tokenizer::Ranks(r) => {
                let mut model = r.model.clone();
                for t in tokens {
                    let ids = model.vocab.keys().chain(model.special.iter().map(|(_, i)| i));
                    let id = ids.max().map_or(1, |m| m + 1);
                    model.special.push((t, id));
                }
                Ok(Tokenizer::Ranks(RankEncoder::new(model)?))
            }
        }
    }

    /// The model file's text ("BoundlessBPE v2").
    pub fn dumps(&self) -> Result<String> {
        match self {
            Tokenizer::Superword { model, .. } => Ok(v2::dumps(model)),
            Tokenizer::Ranks(_) => Err(Error::Value(
                "a tiktoken ranks model has no BoundlessBPE v2 form".into(),
            )),
        }
    }

    /// The n-gram sidecar's text of a model trained with the greedy split, if any.
    pub fn dumps_ngrams(&self) -> Option<String> {
        match self {
            Tokenizer::Superword { model, .. } => model.ngrams.as_deref().map(v2::dumps_ngrams),
            Tokenizer::Ranks(_) => None,
        }
    }

    /// The `.tiktoken` ranks file's text (plain BPE models in simple mode only).
    pub fn dumps_tiktoken(&self) -> Result<String> {
        match self {
            Tokenizer::Superword { model, .. } => ranks::dumps_model(model),
            Tokenizer::Ranks(r) => Ok(ranks::dumps(r.items())),
        }
    }
}

/// A tokenizer's state, shared by the calls that use it.  Registering special tokens builds a
/// new state and swaps it in; calls already running (on any thread) finish with the state they
/// started with, so registering never waits for them nor fails because of them.
pub struct Shared<T>(RwLock<Arc<T>>);

impl<T> Shared<T> {
    pub fn new(value: T) -> Shared<T> {
        Shared(RwLock::new(Arc::new(value)))
    }

    pub fn get(&self) -> Arc<T> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replace the state by `f(current)`; one update at a time.
    pub fn update(&self, f: impl FnOnce(&T) -> Result<T>) -> Result<()> {
        let mut slot = self.0.write().unwrap_or_else(|e| e.into_inner());
        let next = f(&slot)?;
        *slot = Arc::new(next);
        Ok(())
    }
}
