//! A tokenizer ready to encode, of either kind the Python API offers: a superword model (BPE,
//! BoundlessBPE, SuperBPE) with its encoder, or a tiktoken ranks model.  Every question the
//! seam's one `Tokenizer` class asks is answered here, once for both kinds.

use std::sync::{Arc, OnceLock};

use crate::encode::{Encode, Encoder};
use crate::error::{Error, Result};
use crate::model::{no_id_left, v2, Model};
use crate::ranks::{self, RankEncoder};

// one value per Python tokenizer, kept behind an `Arc`: the size of the variants does not matter
#[allow(clippy::large_enum_variant)]
pub enum Tokenizer {
    /// a trained or loaded model; `greedy_split`: encoding cuts runs into the n-grams of
    /// training (SPEC 3.1), else the paper's encoding.  The encoder of a loaded model is built
    /// at once (a bad file is refused on loading); a trained model's on first use (see
    /// [`Tokenizer::trained`]).
    Superword {
        model: Model,
        encoder: OnceLock<std::result::Result<Encoder, Unbuilt>>,
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
            encoder: OnceLock::from(Ok(encoder)),
            greedy_split,
        })
    }

    /// A model training just made, with the paper's encoding; its encoder is built when it
    /// is first needed.  (Building it, the reachable set above all, was 4-6 ms of a 30 ms
    /// training on taylorswift.txt, paid even when the model is only saved.)
    pub fn trained(model: Model) -> Tokenizer {
        Tokenizer::Superword {
            model,
            encoder: OnceLock::new(),
            greedy_split: false,
        }
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

    /// A model from the text of a model file and, for the greedy split, of its n-gram
    /// sidecar (what a pickle carries); `name` names them in errors.
    pub fn loads(text: &str, ngrams: Option<&str>, greedy_split: bool, name: &str) -> Result<Tokenizer> {
        let mut model = v2::loads(text, name)?;
        if let Some(table) = ngrams {
            model.ngrams = Some(v2::loads_ngrams(table, name)?);
        }
        Tokenizer::new(model, greedy_split)
    }

    /// A ranks model from the text of a `.tiktoken` file.
    pub fn loads_tiktoken(
        text: &str,
        pattern: String,
        special: Vec<(String, u32)>,
        name: &str,
    ) -> Result<Tokenizer> {
        Ok(Tokenizer::Ranks(RankEncoder::from_text(
            text, pattern, special, name,
        )?))
    }

    /// Does encoding cut runs into the n-grams of training (SPEC 3.1)?
    pub fn greedy_split(&self) -> bool {
        matches!(
            self,
            Tokenizer::Superword {
                greedy_split: true,
                ..
            }
        )
    }

    /// Read a `.tiktoken` file; `special` gives each special string its id.
    pub fn load_tiktoken(path: &str, pattern: String, special: Vec<(String, u32)>) -> Result<Tokenizer> {
        Ok(Tokenizer::Ranks(RankEncoder::load(path, pattern, special)?))
    }

    pub fn encoder(&self) -> &dyn Encode {
        match self {
            Tokenizer::Superword {
                model,
                encoder,
                greedy_split,
            } => match built(model, encoder, *greedy_split) {
                Ok(encoder) => encoder,
                Err(unbuilt) => unbuilt,
            },
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
            Tokenizer::Superword {
                model,
                encoder,
                greedy_split,
            } => match built(model, encoder, *greedy_split) {
                Ok(encoder) => encoder.id_of(token),
                Err(_) => model.vocab.iter().position(|t| t == token).map(|i| i as u32),
            },
            Tokenizer::Ranks(r) => r.model.ranks.get(token).copied(),
        }
    }

    /// (id, bytes, is a superword) for every regular and superword token, in id order.
    pub fn vocab_items(&self) -> Vec<(u32, &[u8], bool)> {
        match self {
            Tokenizer::Superword { model, .. } => (model.vocab.iter().zip(&model.is_super).enumerate())
                .map(|(i, (t, &s))| (i as u32, t, s))
                .collect(),
            Tokenizer::Ranks(r) => r.items().into_iter().map(|(i, t)| (i, t, false)).collect(),
        }
    }

    /// This tokenizer with `tokens` added as special tokens with the next free ids; a token
    /// that is already registered (or named twice) is an error.
    pub fn with_special_tokens(&self, tokens: Vec<String>) -> Result<Tokenizer> {
        let mut seen: rustc_hash::FxHashSet<&str> =
            self.special_tokens().iter().map(|(s, _)| s.as_str()).collect();
        for t in &tokens {
            if !seen.insert(t) {
                return Err(Error::Value(format!("special token {t:?} is already registered")));
            }
        }
        match self {
            Tokenizer::Superword {
                model, greedy_split, ..
            } => {
                let mut model = model.clone();
                model.add_special_tokens(tokens)?;
                Tokenizer::new(model, *greedy_split)
            }
            Tokenizer::Ranks(r) => {
                let mut model = r.model.clone();
                let mut next = r.next_id();
                for t in tokens {
                    let id = next.ok_or_else(|| no_id_left(&t))?;
                    model.special.push((t, id));
                    next = id.checked_add(1);
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

/// The encoder of a superword model, built now if it was not yet.
fn built<'a>(
    model: &Model,
    encoder: &'a OnceLock<std::result::Result<Encoder, Unbuilt>>,
    greedy_split: bool,
) -> &'a std::result::Result<Encoder, Unbuilt> {
    if let Some(built) = encoder.get() {
        return built;
    }
    // Built outside the cell's lock, which is held only to store the result: a process
    // forked while another thread builds would otherwise wait in the child for a builder
    // that does not exist there.  Two threads that race both build, and one result is kept.
    let made = Encoder::new(model, greedy_split).map_err(|e| Unbuilt(e.to_string()));
    let _ = encoder.set(made);
    encoder.get().expect("the encoder was just stored")
}

/// The encoder of a trained model that could not be built (a bug of ours: training makes
/// consistent models): every call that encodes or decodes gives the error.
pub struct Unbuilt(String);

impl Unbuilt {
    fn error(&self) -> Error {
        Error::internal(&format!(
            "cannot build the encoder of the trained model: {}",
            self.0
        ))
    }
}

impl Encode for Unbuilt {
    fn encode_ordinary(&self, _: &str) -> Result<Vec<u32>> {
        Err(self.error())
    }

    fn decode_bytes(&self, _: &[i64]) -> Result<Vec<u8>> {
        Err(self.error())
    }

    /// (no id reaches here: encoding fails first)
    fn token(&self, _: u32) -> &[u8] {
        &[]
    }

    fn allowed(&self, _: &[String]) -> Result<crate::encode::Allowed> {
        Err(self.error())
    }

    fn encode_append(&self, _: &str, _: &crate::encode::Allowed, _: &mut Vec<u32>) -> Result<()> {
        Err(self.error())
    }
}

/// A tokenizer's state, shared by the calls that use it.  Registering special tokens builds a
/// new state and swaps it in; calls already running (on any thread) finish with the state they
/// started with, so registering never waits for them nor fails because of them.
///
/// No lock is held at any point (the swap is an atomic compare-and-swap): a process forked
/// while another thread registers or reads could otherwise inherit a lock held by a thread
/// that does not exist in the child, and wait for it forever.
pub struct Shared<T>(arc_swap::ArcSwap<T>);

impl<T> Shared<T> {
    pub fn new(value: T) -> Shared<T> {
        Shared(arc_swap::ArcSwap::from_pointee(value))
    }

    pub fn get(&self) -> Arc<T> {
        self.0.load_full()
    }

    /// Replace the state by `f(current)`.  The new state is swapped in only if no other
    /// update came first, else `f` runs again on the newer state, so concurrent updates all
    /// take effect, one after another.
    pub fn update(&self, f: impl Fn(&T) -> Result<T>) -> Result<()> {
        loop {
            let current = self.get();
            let next = Arc::new(f(&current)?);
            let previous = self.0.compare_and_swap(&current, next);
            if Arc::ptr_eq(&previous, &current) {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranks::RankModel;

    fn golden(name: &str) -> String {
        format!("{}/tests/data/golden/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// Tokens "a", "b", "ab" with ranks 0, 1, 5 and one special token with id 9.
    fn ranks() -> Tokenizer {
        let tokens: [(&[u8], u32); 3] = [(b"a", 0), (b"b", 1), (b"ab", 5)];
        let model = RankModel {
            vocab: tokens.iter().map(|&(t, i)| (i, t.to_vec())).collect(),
            ranks: tokens.iter().map(|&(t, i)| (t.to_vec(), i)).collect(),
            pattern: r"\w+|\s+".into(),
            special: vec![("<|end|>".into(), 9)],
        };
        Tokenizer::Ranks(RankEncoder::new(model).unwrap())
    }

    #[test]
    fn no_special_token_gets_an_id_beyond_32_bits() {
        // (a ranks model read from a file cannot get here: its ids stay near its size)
        let model = RankModel {
            vocab: [(u32::MAX - 1, b"a".to_vec())].into_iter().collect(),
            ranks: [(b"a".to_vec(), u32::MAX - 1)].into_iter().collect(),
            pattern: r"\w+".into(),
            special: Vec::new(),
        };
        let t = Tokenizer::Ranks(RankEncoder::new(model).unwrap());
        let t = t.with_special_tokens(vec!["<x>".into()]).unwrap();
        assert_eq!(t.special_tokens(), [("<x>".to_string(), u32::MAX)]);
        // the id after u32::MAX was 0, a rank's id
        let refused = t.with_special_tokens(vec!["<y>".into()]);
        assert!(
            matches!(refused, Err(Error::Value(m)) if m.contains("no id is left for the special token '<y>'"))
        );
    }

    #[test]
    fn special_tokens_of_a_model_take_the_next_ids_and_are_encoded() {
        let t = Tokenizer::load(&golden("taylorswift_400_v600/boundless.model"), false).unwrap();
        assert_eq!(t.kind(), "boundless");
        let n = t.vocab_size();
        assert_eq!(t.vocab_items().len(), n - t.special_tokens().len());
        let t = t
            .with_special_tokens(vec!["<|a|>".into(), "<|b|>".into()])
            .unwrap();
        assert_eq!(
            t.special_tokens()[t.special_tokens().len() - 2..],
            [
                ("<|a|>".to_string(), n as u32),
                ("<|b|>".to_string(), n as u32 + 1)
            ]
        );
        assert_eq!(t.vocab_size(), n + 2);
        let ids = t.encoder().encode("x<|b|>", &["<|b|>".to_string()]).unwrap();
        assert_eq!(ids.last(), Some(&(n as u32 + 1)));
        assert!(
            matches!(t.with_special_tokens(vec!["<|a|>".into()]), Err(Error::Value(m)) if m.contains("already"))
        );
    }

    #[test]
    fn superwords_are_told_apart_and_ids_beyond_the_vocabulary_refused() {
        let t = Tokenizer::load(&golden("taylorswift_400_v600/boundless.model"), false).unwrap();
        let items = t.vocab_items();
        assert!(items.iter().any(|&(_, _, s)| s) && items.iter().any(|&(_, _, s)| !s));
        for &(id, bytes, is_super) in &items {
            assert_eq!(t.is_superword(id as i64).unwrap(), is_super);
            assert_eq!(t.id_of(bytes), Some(id));
        }
        assert!(t.is_superword(items.len() as i64).is_err());
        assert!(t.is_superword(-1).is_err());
    }

    #[test]
    fn a_trained_model_builds_its_encoder_on_first_use_and_encodes_alike() {
        let path = golden("taylorswift_400_v600/boundless.model");
        let model = v2::read(&path).unwrap();
        let eager = Tokenizer::new(model.clone(), false).unwrap();
        let lazy = Tokenizer::trained(model.clone());
        let Tokenizer::Superword { encoder, .. } = &lazy else {
            panic!("a superword model")
        };
        assert!(encoder.get().is_none(), "nothing built before use");
        let text = "Taylor Swift's songs, again and again: the shortest and the longest. ".repeat(20);
        let ids = eager.encoder().encode_ordinary(&text).unwrap();
        assert_eq!(lazy.encoder().encode_ordinary(&text).unwrap(), ids);
        for (id, bytes, _) in eager.vocab_items() {
            assert_eq!(lazy.id_of(bytes), Some(id));
        }
        // a model no encoder can be built for (never made by training) fails when used, and
        // still answers what needs no encoder
        let mut broken = model;
        broken.vocab = (broken.vocab.iter())
            .map(|t| if t == b"a" { b"\xff\xfe" } else { t })
            .collect();
        let broken = Tokenizer::trained(broken);
        let err = broken.encoder().encode_ordinary("a").unwrap_err();
        assert!(matches!(err, Error::Runtime(m) if m.contains("internal error") && m.contains("missing")));
        assert!(broken.encoder().decode_bytes(&[1]).is_err());
        assert_eq!(broken.id_of(b"b"), eager.id_of(b"b"));
    }

    #[test]
    fn the_greedy_split_needs_the_sidecar() {
        let path = golden("multi_1230_v1500_greedy/boundless.model");
        assert!(Tokenizer::load(&path, false).is_ok());
        let err = Tokenizer::load(&path, true).err().unwrap();
        assert!(matches!(err, Error::Value(m) if m.contains(".ngrams")));
    }

    #[test]
    fn a_ranks_model_answers_like_tiktoken() {
        let t = ranks();
        assert_eq!(
            (t.kind(), t.pattern(), t.vocab_size(), t.num_supermerges()),
            ("tiktoken", r"\w+|\s+", 10, 0)
        );
        assert_eq!(t.id_of(b"ab"), Some(5));
        assert_eq!(t.encoder().encode_ordinary("abba").unwrap(), [5, 1, 0]);
        assert!(!t.is_superword(5).unwrap());
        assert!(t.is_superword(3).is_err());
        assert!(t.dumps().is_err());
        assert_eq!(t.dumps_ngrams(), None);
        // (written as it is; reading it back is refused, for it lacks most byte tokens)
        let text = t.dumps_tiktoken().unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.lines().any(|line| line == "YWI= 5"));
        assert!(crate::ranks::parse(&text, "x").is_err());
        let t = t.with_special_tokens(vec!["<|x|>".into()]).unwrap();
        assert_eq!(t.special_tokens()[1], ("<|x|>".to_string(), 10));
        assert!(t
            .with_special_tokens(vec!["<|y|>".into(), "<|y|>".into()])
            .is_err());
    }

    #[test]
    fn a_swapped_state_leaves_earlier_readers_with_theirs() {
        let shared = Shared::new(1);
        let before = shared.get();
        shared.update(|v| Ok(v + 1)).unwrap();
        assert!(shared.update(|_| Err(Error::Value("no".into()))).is_err());
        assert_eq!((*before, *shared.get()), (1, 2));
    }
}
