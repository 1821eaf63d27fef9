//! The trained model (plain data) and its "BoundlessBPE v2" file format (SPEC section 8).
//! Same structure and messages as `reference/model.py`.

pub mod bytemap;
pub mod v2;

/// Which kind of model: the phase-1 word model, BoundlessBPE or SuperBPE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Word,
    Boundless,
    SuperBpe,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Word => "word",
            Kind::Boundless => "boundless",
            Kind::SuperBpe => "superbpe",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        match name {
            "word" => Some(Kind::Word),
            "boundless" => Some(Kind::Boundless),
            "superbpe" => Some(Kind::SuperBpe),
            _ => None,
        }
    }
}

/// Pre-tokenization and training settings stored in each section's config JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub main_regex: String,
    pub script_specific_regex: Option<String>,
    pub script_specific_scripts: Option<Vec<String>>,
    pub merge_pattern: String,
    /// > 1 means PickyBPE deletions are off (SPEC 9); only 1.1 is produced here
    pub tau: f64,
    pub blowup: bool,
}

/// A recorded merge: the pair, its count when selected, and whether it turned at least one
/// whole word (or candidate) into a single token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merge {
    pub left: Vec<u8>,
    pub right: Vec<u8>,
    pub count: u64,
    pub flag: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub kind: Kind,
    pub settings: Settings,
    /// token bytes by id
    pub vocab: Vec<Vec<u8>>,
    /// SPEC 8 `count`, by id
    pub counts: Vec<u64>,
    /// superword token?, by id
    pub is_super: Vec<bool>,
    /// regular merges in index order
    pub merges: Vec<Merge>,
    pub supermerges: Vec<Merge>,
    /// special tokens with their ids, in id order
    pub special_tokens: Vec<(String, u32)>,
    /// the greedy-split n-gram table (SPEC 3.1), when trained with it
    pub ngrams: Option<Vec<Vec<Vec<u8>>>>,
}

impl Model {
    /// Is the token `id` a superword?  An id that is not a regular or superword token is an
    /// error.
    pub fn is_superword(&self, id: i64) -> crate::error::Result<bool> {
        if id < 0 || id as usize >= self.vocab.len() {
            return Err(crate::error::Error::Value(format!(
                "token id {id} is out of range 0..{}",
                self.vocab.len() as i64 - 1
            )));
        }
        Ok(self.is_super[id as usize])
    }

    /// Add special tokens with the next free ids.
    pub fn add_special_tokens(&mut self, tokens: Vec<String>) {
        for t in tokens {
            let id = self.vocab_size() as u32;
            self.special_tokens.push((t, id));
        }
    }

    /// Number of ids: regular and superword tokens plus special tokens.
    pub fn vocab_size(&self) -> usize {
        self.vocab.len() + self.special_tokens.len()
    }
}
