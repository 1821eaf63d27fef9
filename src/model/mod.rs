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

/// Byte strings back to back in one vector, by index: a model's tokens, its merges' halves.
///
/// (Round 12: a `Vec<u8>` per token and two per merge were ~14,500 allocations for a model
/// of 5,000 tokens, made after training and freed with the tokenizer.  Taylorswift.txt at
/// 5,000, a whole `superword.train` call and the drop: BPE 51.8 -> 50.1 M instructions,
/// BoundlessBPE 62.4 -> 60.9 M, SuperBPE 59.4 -> 57.9 M.  Tried and dropped: `Vocab` keeping
/// its bytes in a `ByteStrings` too, so that the word model's vocabulary is a clone of it:
/// 50.14 -> 50.40 M for BPE, the merge loop's code laid out and inlined differently, where a
/// copy made from `Vocab`'s own vectors, `Vocab::strings`, gives 50.14 -> 49.99 M.)
#[derive(Clone, PartialEq, Eq)]
pub struct ByteStrings {
    data: Vec<u8>,
    /// string `i` is `data[bounds[i]..bounds[i + 1]]`
    bounds: Vec<usize>,
}

impl Default for ByteStrings {
    fn default() -> ByteStrings {
        ByteStrings::with_capacity(0)
    }
}

impl ByteStrings {
    /// Room for `n` strings.
    pub fn with_capacity(n: usize) -> ByteStrings {
        let mut bounds = Vec::with_capacity(n + 1);
        bounds.push(0);
        ByteStrings {
            data: Vec::new(),
            bounds,
        }
    }

    /// The strings of `data` between consecutive `bounds` (increasing, from 0 to its length).
    pub fn from_parts(data: Vec<u8>, bounds: Vec<usize>) -> ByteStrings {
        assert!(bounds.first() == Some(&0) && bounds.last() == Some(&data.len()));
        debug_assert!(bounds.windows(2).all(|b| b[0] <= b[1]));
        ByteStrings { data, bounds }
    }

    #[inline]
    pub fn push(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
        self.bounds.push(self.data.len());
    }

    /// String `i` (panics out of range, as indexing a slice).
    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        &self.data[self.bounds[i]..self.bounds[i + 1]]
    }

    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + DoubleEndedIterator + '_ {
        self.bounds.windows(2).map(|b| &self.data[b[0]..b[1]])
    }

    /// Keep the first `n` strings.
    pub fn truncate(&mut self, n: usize) {
        if n < self.len() {
            self.bounds.truncate(n + 1);
            self.data.truncate(self.bounds[n]);
        }
    }
}

impl std::ops::Index<usize> for ByteStrings {
    type Output = [u8];

    fn index(&self, i: usize) -> &[u8] {
        self.get(i)
    }
}

impl<'a> FromIterator<&'a [u8]> for ByteStrings {
    fn from_iter<I: IntoIterator<Item = &'a [u8]>>(iter: I) -> ByteStrings {
        let iter = iter.into_iter();
        let mut out = ByteStrings::with_capacity(iter.size_hint().0);
        for s in iter {
            out.push(s);
        }
        out
    }
}

impl From<Vec<Vec<u8>>> for ByteStrings {
    fn from(strings: Vec<Vec<u8>>) -> ByteStrings {
        strings.iter().map(Vec::as_slice).collect()
    }
}

impl std::fmt::Debug for ByteStrings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

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
            let id = u32::try_from(self.vocab_size()).map_err(|_| crate::tokenizer::no_id_left(&t))?;
            self.special_tokens.push((t, id));
        }
        Ok(())
    }

    /// Number of ids: regular and superword tokens plus special tokens.
    pub fn vocab_size(&self) -> usize {
        self.vocab.len() + self.special_tokens.len()
    }
}
