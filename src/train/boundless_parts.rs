//! Phase 2 of BoundlessBPE with its segments split over `k` parts, so that no process holds
//! every segment (docs/large-corpora.md, "Phase 2 partitioned").
//!
//! [`Phase2Steps`] is the driver's side of [`super::boundless::train_boundless`]: the loop of
//! regular merges and supermerges, the deletions replayed, the vocabulary, and the count of
//! each distinct pair with the heap ([`PairCounts`]).  It holds no segment.  Each supermerge it
//! chooses is handed to the parts ([`SegmentShard`]s, in this process or in Ray actors), whose
//! pair-count changes it adds up before choosing again; a regular merge touches no part (the
//! word model's token is only added to the vocabulary, as in `train_boundless`).  The model is
//! the one `train_boundless` makes, for any number of parts and any split (tested).

use rustc_hash::FxHashMap;

use super::boundless::Boundless;
use super::bpe::WordModel;
use super::candidates::CutCandidates;
use super::merging::partitioned::{part_of, PairCounts, SegmentShard};
use super::merging::TrainMerge;
use crate::control::Control;
use crate::error::Result;
use crate::tokens::{Pair, TokenId, Vocab, BASE_VOCAB};

/// What phase 2 replays of the word model.
struct Replay {
    /// each regular merge's count and token
    counts: Vec<u64>,
    made: Vec<TokenId>,
    deletions: Vec<(usize, TokenId)>,
    /// the vocabulary's final size
    target: usize,
}

/// The driver of a partitioned phase 2 (see the module notes).
pub struct Phase2Steps {
    replay: Replay,
    vocab: Vocab,
    counts: PairCounts,
    order: Vec<TokenId>,
    is_super: Vec<bool>,
    known: Vec<bool>,
    supermerges: Vec<TrainMerge>,
    used: usize,
    deleted: usize,
    /// the supermerge handed to the parts, waiting for their changes
    pending: Option<(Pair, u64, TokenId)>,
    done: bool,
}

impl Phase2Steps {
    /// `vocab`: the word model's (moved out of it or cloned); `pairs`: the count of each
    /// pair of the segments, summed over the parts.
    pub fn new(word: &WordModel, vocab: Vocab, pairs: FxHashMap<Pair, u64>) -> Result<Phase2Steps> {
        // (a pair counted `T` times or fewer never wins a step: see `train_boundless`)
        let floor = word.min_merge_count().unwrap_or(0);
        let counts = PairCounts::new(pairs, floor, &vocab)?;
        let mut known = vec![false; vocab.len()];
        known[..BASE_VOCAB].fill(true);
        Ok(Phase2Steps {
            replay: Replay {
                counts: word.merges.iter().map(|m| m.count).collect(),
                made: word.made.clone(),
                deletions: word.deletions.clone(),
                target: word.order.len(),
            },
            vocab,
            counts,
            order: (0..BASE_VOCAB as TokenId).collect(),
            is_super: vec![false; BASE_VOCAB],
            known,
            supermerges: Vec::new(),
            used: 0,
            deleted: 0,
            pending: None,
            done: false,
        })
    }

    /// How many distinct pairs the driver counts now.
    pub fn distinct_pairs(&self) -> usize {
        self.counts.len()
    }

    fn add(&mut self, id: TokenId, sup: bool) {
        let i = id as usize;
        if i >= self.known.len() {
            self.known.resize(i + 1, false);
        }
        if !self.known[i] {
            self.known[i] = true;
            self.order.push(id);
            self.is_super.push(sup);
        }
    }

    /// The word model's deletions that come right after the merges replayed so far.
    fn replay_deletions(&mut self) {
        while let Some(&(index, t)) = self.replay.deletions.get(self.deleted) {
            if index != self.used + self.deleted {
                break;
            }
            if std::mem::replace(&mut self.known[t as usize], false) {
                let k = self
                    .order
                    .iter()
                    .position(|&x| x == t)
                    .expect("known tokens are in the vocabulary");
                self.order.remove(k);
                self.is_super.remove(k);
            }
            self.deleted += 1;
        }
    }

    fn report(&self, control: &dyn Control, always: bool) -> Result<()> {
        if always || self.order.len() % 256 == 0 {
            control.progress(
                "phase2",
                (self.order.len() - BASE_VOCAB) as u64,
                (self.replay.target - BASE_VOCAB) as u64,
            )?;
        }
        Ok(())
    }

    /// Replay regular merges until the next supermerge: `Some((pair, merged))` for the parts to
    /// apply (then [`Self::merged`]), `None` when the vocabulary is full.
    pub fn next(&mut self, control: &dyn Control) -> Result<Option<(Pair, TokenId)>> {
        assert!(
            self.pending.is_none(),
            "a supermerge waits for the parts' changes"
        );
        if self.done {
            return Ok(None);
        }
        while self.order.len() < self.replay.target {
            self.replay_deletions();
            let regular_count = self.replay.counts.get(self.used).map_or(-1, |&c| c as i128);
            match self.counts.best(&self.vocab) {
                // strictly: ties go to the regular merge
                Some((pair, count)) if count as i128 > regular_count => {
                    let mut bytes = self.vocab.bytes(pair.0).to_vec();
                    bytes.extend_from_slice(self.vocab.bytes(pair.1));
                    let (id, _) = self.vocab.add(&bytes);
                    self.pending = Some((pair, count, id));
                    return Ok(Some((pair, id)));
                }
                _ if self.used < self.replay.counts.len() => {
                    self.add(self.replay.made[self.used], false);
                    self.used += 1;
                    self.replay_deletions();
                }
                _ => break, // unreachable with target = the word model's size
            }
            self.report(control, false)?;
        }
        self.report(control, true)?;
        self.done = true;
        Ok(None)
    }

    /// The parts applied the supermerge [`Self::next`] gave: whether one of their whole
    /// segments became one token (any part), and their pair-count changes, added up.
    pub fn merged(&mut self, flag: bool, delta: &FxHashMap<Pair, i64>, control: &dyn Control) -> Result<()> {
        let (pair, count, id) = self.pending.take().expect("a supermerge handed to the parts");
        self.counts.apply(pair, delta, &self.vocab);
        self.supermerges.push(TrainMerge { pair, count, flag });
        self.add(id, true);
        self.report(control, false)
    }

    /// The result, from the token counts of the segments (summed over the parts) and of the
    /// tokens left alone.
    pub fn finish(self, mut token_counts: Vec<u64>, alone: &[u64]) -> Boundless {
        assert!(self.done, "phase 2 is not finished");
        token_counts.resize(token_counts.len().max(self.vocab.len()), 0);
        token_counts.truncate(self.vocab.len());
        for (t, &w) in alone.iter().enumerate() {
            token_counts[t] += w;
        }
        Boundless {
            used: self.used,
            deletions_used: self.deleted,
            supermerges: self.supermerges,
            phase2_vocab: self.vocab,
            order: self.order,
            is_super: self.is_super,
            counts: token_counts,
        }
    }
}

/// Add a part's pair-count changes to `into`.
pub fn add_delta(into: &mut FxHashMap<Pair, i64>, part: &[(Pair, i64)]) {
    for &(p, d) in part {
        *into.entry(p).or_insert(0) += d;
    }
}

/// The driver's loop over parts held in this process: [`Phase2Steps`] on `shards`.
pub fn run_parts(
    word: &WordModel,
    vocab: Vocab,
    mut shards: Vec<SegmentShard>,
    alone: &[u64],
    control: &dyn Control,
) -> Result<Boundless> {
    use rayon::prelude::*;
    let mut pairs: FxHashMap<Pair, u64> = FxHashMap::default();
    for shard in &shards {
        for (p, c) in shard.pair_counts() {
            *pairs.entry(p).or_insert(0) += c;
        }
    }
    let mut steps = Phase2Steps::new(word, vocab, pairs)?;
    let mut delta: FxHashMap<Pair, i64> = FxHashMap::default();
    while let Some((pair, merged)) = steps.next(control)? {
        let results: Vec<(bool, Vec<(Pair, i64)>)> = if shards.len() > 1 {
            shards.par_iter_mut().map(|s| s.merge(pair, merged)).collect()
        } else {
            shards.iter_mut().map(|s| s.merge(pair, merged)).collect()
        };
        delta.clear();
        let mut flag = false;
        for (f, d) in &results {
            flag |= f;
            add_delta(&mut delta, d);
        }
        steps.merged(flag, &delta, control)?;
    }
    let mut counts = Vec::new();
    for shard in &shards {
        shard.add_token_counts(&mut counts);
    }
    drop(shards);
    Ok(steps.finish(counts, alone))
}

/// [`super::boundless::train_boundless`] with the segments split by hash into `parts` parts
/// held in this process (the same model for any `parts`).
pub fn train_boundless_parts(
    word: &WordModel,
    vocab: Vocab,
    candidates: CutCandidates,
    parts: usize,
    control: &dyn Control,
) -> Result<Boundless> {
    let parts = parts.max(1);
    let shards = (0..parts)
        .map(|k| SegmentShard::new(candidates.iter().filter(|(t, _, _)| part_of(t, parts) == k)))
        .collect::<Result<Vec<_>>>()?;
    let CutCandidates { segments, alone, .. } = candidates;
    drop(segments);
    run_parts(word, vocab, shards, &alone, control)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Silent;
    use crate::train::boundless::tests::{random_candidates, random_word_model};
    use crate::train::boundless::train_boundless;
    use crate::train::candidates::{cut, Cutting, Threshold};

    fn same(a: &Boundless, b: &Boundless) -> bool {
        a.used == b.used
            && a.deletions_used == b.deletions_used
            && a.supermerges == b.supermerges
            && a.order == b.order
            && a.is_super == b.is_super
            && a.phase2_vocab.len() == b.phase2_vocab.len()
            && a.counts == b.counts
    }

    #[test]
    fn any_number_of_parts_trains_the_same_phase_2() {
        let mut rng = crate::XorShift(0x0DDB_A11C_0FFE_E123);
        let mut supermerges = 0;
        for round in 0..400 {
            let (word, letters) = random_word_model(&mut rng, round % 2 == 1);
            let candidates = random_candidates(&mut rng, &letters, 60, 9, 3 + round % 7, 30);
            let n = word.vocab.len();
            let threshold = word.min_merge_count().unwrap();
            let segments = || cut(&candidates, Threshold::At(threshold), n, Cutting::Exact).unwrap();
            let expected = train_boundless(&word, word.vocab.clone(), segments(), &Silent).unwrap();
            supermerges += expected.supermerges.len();
            for parts in [1, 2, 3, 7] {
                let got =
                    train_boundless_parts(&word, word.vocab.clone(), segments(), parts, &Silent).unwrap();
                assert!(same(&got, &expected), "round {round}, {parts} parts");
            }
        }
        assert!(supermerges > 200, "{supermerges} supermerges");
    }
}
