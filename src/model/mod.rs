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

pub use crate::tokens::ByteStrings;

/// A recorded merge: the pair, its count when selected, and whether it turned at least one
/// whole word (or candidate) into a single token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Merge<'a> {
    pub left: &'a [u8],
    pub right: &'a [u8],
    pub count: u64,
    pub flag: bool,
}

/// A model's merges in index order, their halves back to back (see [`ByteStrings`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Merges {
    /// merge `i`'s left half at `2 i`, its right half at `2 i + 1`
    halves: ByteStrings,
    counts: Vec<u64>,
    flags: Vec<bool>,
}

impl Merges {
    /// Room for `n` merges.
    pub fn with_capacity(n: usize) -> Merges {
        Merges {
            halves: ByteStrings::with_capacity(2 * n),
            counts: Vec::with_capacity(n),
            flags: Vec::with_capacity(n),
        }
    }

    pub fn push(&mut self, m: Merge) {
        self.halves.push(m.left);
        self.halves.push(m.right);
        self.counts.push(m.count);
        self.flags.push(m.flag);
    }

    /// Merge `i` (panics out of range).
    pub fn get(&self, i: usize) -> Merge<'_> {
        Merge {
            left: self.halves.get(2 * i),
            right: self.halves.get(2 * i + 1),
            count: self.counts[i],
            flag: self.flags[i],
        }
    }

    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    pub fn last(&self) -> Option<Merge<'_>> {
        self.len().checked_sub(1).map(|i| self.get(i))
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = Merge<'_>> + DoubleEndedIterator + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Keep the first `n` merges.
    pub fn truncate(&mut self, n: usize) {
        self.halves.truncate(2 * n);
        self.counts.truncate(n);
        self.flags.truncate(n);
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub kind: Kind,
    pub settings: Settings,
    /// token bytes by id
    pub vocab: ByteStrings,
    /// SPEC 8 `count`, by id
    pub counts: Vec<u64>,
    /// superword token?, by id
    pub is_super: Vec<bool>,
    /// regular merges in index order
    pub merges: Merges,
    pub supermerges: Merges,
    /// special tokens with their ids, in id order
    pub special_tokens: Vec<(String, u32)>,
    /// the greedy-split n-gram table (SPEC 3.1), when trained with it; never written into
    /// the v2 file (see [`v2::dumps_ngrams`] for its sidecar)
    pub ngrams: Option<Vec<Vec<Vec<u8>>>>,
    /// PickyBPE deletions of the word model (SPEC 9), in index order
    pub deletions: Vec<Deletion>,
}

/// A recorded PickyBPE deletion (SPEC 9): its index in the sequence merges and deletions
/// share, and the deleted token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    pub index: usize,
    pub token: Vec<u8>,
}

/// The index of each of `n_merges` merges in the sequence they share with `deletions`
/// (sorted by index): the indices the deletions leave free, in order.
pub fn merge_indices(n_merges: usize, deletions: &[Deletion]) -> Vec<usize> {
    let mut out = Vec::with_capacity(n_merges);
    let mut taken = deletions.iter().map(|d| d.index).peekable();
    let mut i = 0;
    while out.len() < n_merges {
        while taken.peek().is_some_and(|&t| t < i) {
            taken.next();
        }
        if taken.peek() != Some(&i) {
            out.push(i);
        }
        i += 1;
    }
    out
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
    pub fn add_special_tokens(&mut self, tokens: Vec<String>) -> crate::error::Result<()> {
        for t in tokens {
            let id = u32::try_from(self.vocab_size()).map_err(|_| no_id_left(&t))?;
            self.special_tokens.push((t, id));
        }
        Ok(())
    }

    /// Number of ids: regular and superword tokens plus special tokens.
    pub fn vocab_size(&self) -> usize {
        self.vocab.len() + self.special_tokens.len()
    }
}

/// The error for a special token that would need an id beyond 32 bits.
pub fn no_id_left(token: &str) -> crate::error::Error {
    crate::error::Error::Value(format!(
        "no id is left for the special token {}: token ids are 32-bit",
        crate::input::py_repr(token)
    ))
}
