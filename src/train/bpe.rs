//! Phase 1: byte-level BPE on aggregated pretokens, the word model (SPEC section 2), with
//! optional PickyBPE deletions (SPEC 9), as `reference/bpe.py`.

use rustc_hash::FxHashMap;

use super::merging::{MergeState, TrainMerge};
use crate::control::Control;
use crate::error::{try_vec, Result};
use crate::tokens::{byte_id, Pair, TokenId, Vocab, BASE_VOCAB};

/// The trained word model, in the training's token ids.
pub struct WordModel {
    pub merges: Vec<TrainMerge>,
    /// the id of each merge's token (by the merge's index)
    pub made: Vec<TokenId>,
    /// every token training made (one id per byte string, deleted ones included)
    pub vocab: Vocab,
    /// the final vocabulary in id order, as ids of `vocab`: without deletions `0..vocab.len()`
    pub order: Vec<TokenId>,
    /// PickyBPE deletions: (index shared with the merges, token), in index order
    pub deletions: Vec<(usize, TokenId)>,
    /// SPEC 8 `count` of each id of `vocab`, over the final words
    pub counts: Vec<u64>,
    /// each word's token when the merges made it one token, by the index of `words`; only
    /// when asked for and when training's final words are the word model's encoding of them
    /// (see [`train_words`])
    pub single: Option<Vec<Option<TokenId>>>,
}

impl WordModel {
    /// The smallest count of a recorded merge: with deletions counts need not fall
    /// monotonically, so this, not the last merge's count, bounds every regular merge.
    pub fn min_merge_count(&self) -> Option<u64> {
        self.merges.iter().map(|m| m.count).min()
    }
}

/// PickyBPE settings (SPEC 9): `tau > 1` never deletes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Picky {
    pub tau: f64,
    pub blowup: bool,
}

impl Picky {
    pub fn deletes(&self) -> bool {
        self.tau <= 1.0
    }
}

/// The longest of `words`, for a message: "the longest pretoken, 'aaaa…', has 5000 bytes".
pub(crate) fn longest_pretoken(words: &[(Box<str>, u64)]) -> String {
    let Some((w, _)) = words.iter().max_by_key(|(w, _)| w.len()) else {
        return "no pretoken".into();
    };
    let start: String = w.chars().take(16).collect();
    format!("the longest pretoken, {start:?}..., has {} bytes", w.len())
}

/// Train on `words` (distinct pretokens with counts, in any order) up to `vocab_size`:
/// [`start_words`] then [`train_started`].
pub fn train_words(
    words: &[(Box<str>, u64)],
    vocab_size: usize,
    picky: Picky,
    singles: bool,
    control: &dyn Control,
) -> Result<WordModel> {
    train_started(start_words(words)?, vocab_size, picky, singles, control)
}

/// Phase 1 before its first merge: the merge state on the words' bytes, which needs the
/// words no more (a caller that does not either drops them before the merges).
pub struct WordStart {
    state: MergeState,
    vocab: Vocab,
    /// how many byte tokens the words hold
    tokens: usize,
}

/// Each distinct pretoken of `words` as a word of byte tokens, weighted by its count.
pub fn start_words(words: &[(Box<str>, u64)]) -> Result<WordStart> {
    let vocab = Vocab::base();
    // (back to back in one array, not one vector per word: a million small allocations at
    // 100 MB of text; the array becomes the merge state's, without a copy)
    // (fallibly: one pretoken of hundreds of megabytes makes this the first large allocation)
    let total: usize = words.iter().map(|(w, _)| w.len()).sum();
    let what = format!(
        "training on {total} bytes of distinct pretokens ({})",
        longest_pretoken(words)
    );
    let mut flat: Vec<TokenId> = try_vec(total, &what)?;
    let mut ends: Vec<usize> = try_vec(words.len(), &what)?;
    let mut weights: Vec<u64> = try_vec(words.len(), &what)?;
    for (w, count) in words {
        flat.extend(
            w.bytes()
                .map(|b| byte_id(b).expect("UTF-8 text has no 0xC0, 0xC1, 0xF5..0xFF bytes")),
        );
        ends.push(flat.len());
        weights.push(*count);
    }
    let state = MergeState::try_from_arena(flat, &ends, &weights, &vocab)?;
    Ok(WordStart {
        state,
        vocab,
        tokens: total,
    })
}

/// Phase 1's merges from `start` up to `vocab_size`.
///
/// `singles`: also give each word's token when it ended as one token ([`WordModel::single`]),
/// which stage 3 needs (SPEC 3.1-3.2: a pretoken is eligible when encoding it alone with the
/// word model gives one token).  Training's final words are that encoding when there were no
/// deletions and every merge made a token with new bytes: then a merged pair never comes back
/// (its tokens' new neighbours are new tokens), so after merge k no pair of an index up to k
/// is left in any word, the encoder's "smallest index present" is the next merge that
/// training applies to the word, and both apply it the same way.  Otherwise (a merge whose
/// bytes were a token already, SPEC 2.6, or PickyBPE deletions) `single` is `None`, and stage
/// 3 encodes.
pub fn train_started(
    start: WordStart,
    vocab_size: usize,
    picky: Picky,
    singles: bool,
    control: &dyn Control,
) -> Result<WordModel> {
    let WordStart {
        mut state,
        mut vocab,
        tokens,
    } = start;
    // (each merge shortens a word, so there are fewer merges than tokens)
    let room = vocab_size.saturating_sub(vocab.len()).min(tokens);
    vocab.reserve(room);
    let deletes = picky.deletes();
    if deletes {
        state.track_tokens(vocab.len());
    } else {
        // pairs counted once stay out of the table and the heap until the best pair counts
        // once (then every pair is counted again, below): most pairs a merge makes are made
        // once, and a training that stops above that count never needs them.  A merge that
        // makes bytes known already counts its token's pairs again (see `with_floor`); none
        // did in BPE on 5 MB of Gutenberg at 8,192 and 32,768, nor on the multilingual
        // samples at 8,000.  (Three trainings of taylorswift.txt at 5,000, whose
        // last merges count 2: phase 1 113.8 -> 112.5 M instructions; BPE's phase 1
        // 4.69-4.73 -> 4.55-4.63 ms, medians of 21, three interleaved runs.)
        state = state.with_floor(1, &vocab);
    }
    // (the vectors that grow by one per merge get their room first: growing them was 1% of a
    // small training's phase 1; three trainings of taylorswift.txt at 5,000, 115.1 -> 113.8 M
    // instructions)
    let mut order: Vec<TokenId> = Vec::with_capacity(vocab.len() + room);
    order.extend(0..vocab.len() as TokenId);
    let mut present: Vec<bool> = vec![false; vocab.len() + room];
    present[..vocab.len()].fill(true);
    let mut deletions: Vec<(usize, TokenId)> = Vec::new();
    let mut parts: FxHashMap<TokenId, Vec<TokenId>> = FxHashMap::default();
    let mut makers: FxHashMap<TokenId, Pair> = FxHashMap::default();
    // 2. merge the best pair until the vocabulary is full or no pair is left
    let mut merges = Vec::with_capacity(room);
    let mut made = Vec::with_capacity(room);
    let total = vocab_size.saturating_sub(BASE_VOCAB) as u64;
    while order.len() < vocab_size {
        let (pair, count) = match state.best(&vocab) {
            Some(best) => best,
            None if state.floor() > 0 => {
                state = state.without_floor(&vocab)?;
                continue;
            }
            None => break,
        };
        // SPEC 9.1: "intersection over self", before the merge changes the counts
        let ios = if deletes {
            let ratio = |t| count as f64 / state.token_count(t) as f64;
            [(pair.0, ratio(pair.0)), (pair.1, ratio(pair.1))]
        } else {
            [(pair.0, 0.0), (pair.1, 0.0)]
        };
        let (merge, id) = state.merge_pair(&mut vocab, pair, count);
        if let Some(e) = state.take_failure() {
            return Err(e);
        }
        merges.push(merge);
        made.push(id);
        if present.len() < vocab.len() {
            present.resize(vocab.len(), false);
        }
        if !present[id as usize] {
            // new bytes, or a deleted token made again (it comes back with a new id)
            present[id as usize] = true;
            order.push(id);
        }
        if deletes {
            makers.entry(id).or_insert(pair);
            // SPEC 9.3: delete a (then b; twice when a == b) when the merge used most of it
            for (t, ratio) in ios {
                if vocab.bytes(t).len() == 1 || ratio < picky.tau {
                    continue;
                }
                let replacement = parts.entry(t).or_insert_with(|| {
                    if picky.blowup {
                        vocab
                            .bytes(t)
                            .iter()
                            .map(|&b| byte_id(b).expect("token bytes come from UTF-8 text"))
                            .collect()
                    } else {
                        let (l, r) = makers[&t];
                        vec![l, r]
                    }
                });
                state.delete(t, replacement, &vocab);
                deletions.push((merges.len() + deletions.len(), t));
                if present[t as usize] {
                    // not when a == b and the first deletion removed it; later ids shift down
                    present[t as usize] = false;
                    order.retain(|&x| x != t);
                }
            }
        }
        if merges.len() % 256 == 0 {
            control.progress("merges", (order.len() - BASE_VOCAB) as u64, total)?;
        }
    }
    control.progress("merges", (order.len() - BASE_VOCAB) as u64, total)?;
    let counts = state.token_counts(vocab.len());
    let every_merge_new = vocab.len() == BASE_VOCAB + merges.len();
    let single = (singles && deletions.is_empty() && every_merge_new).then(|| state.single_tokens());
    Ok(WordModel {
        merges,
        made,
        vocab,
        order,
        deletions,
        counts,
        single,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Silent;

    type Trained = (Vec<TrainMerge>, Vec<(usize, TokenId)>, Vec<Vec<u8>>, Vec<u64>);

    fn run(words: &[(Box<str>, u64)], threads: usize, picky: Picky) -> Trained {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let w = pool
            .install(|| train_words(words, 330, picky, false, &Silent))
            .unwrap();
        let order = w.order.iter().map(|&t| w.vocab.bytes(t).to_vec()).collect();
        let counts = w.order.iter().map(|&t| w.counts[t as usize]).collect();
        (w.merges, w.deletions, order, counts)
    }

    #[test]
    fn merges_below_the_floor_are_the_unfloored_ones() {
        // phase 1 keeps pairs counted once out of its tables until the best pair counts once,
        // then counts every pair again: the merges, down to the last pair, are those of a
        // state that never left any pair out
        let mut rng = crate::XorShift(0x2545_F491_4F6C_DD1D);
        for round in 0..40 {
            let letters = &b"aabcdefghij"[..3 + round % 8];
            let mut words: FxHashMap<String, u64> = FxHashMap::default();
            for _ in 0..20 + rng.below(300) {
                let len = 1 + rng.below(12) as usize;
                let w: String = (0..len)
                    .map(|_| letters[rng.below(letters.len() as u64) as usize] as char)
                    .collect();
                *words.entry(w).or_insert(0) += if rng.below(3) == 0 { 1 + rng.below(9) } else { 1 };
            }
            let mut words: Vec<(Box<str>, u64)> = words.into_iter().map(|(w, c)| (w.into(), c)).collect();
            words.sort();
            let picky = Picky {
                tau: 1.1,
                blowup: false,
            };
            let trained = train_words(&words, 100_000, picky, false, &Silent).unwrap();
            let mut vocab = Vocab::base();
            let seqs: Vec<Vec<TokenId>> = words
                .iter()
                .map(|(w, _)| w.bytes().map(|b| byte_id(b).unwrap()).collect())
                .collect();
            let mut state = MergeState::new(seqs.iter().zip(&words).map(|(s, w)| (&s[..], w.1)), &vocab);
            let mut expected = Vec::new();
            while let Some((pair, count)) = state.best(&vocab) {
                expected.push(state.merge_pair(&mut vocab, pair, count).0);
            }
            assert!(expected.last().is_some_and(|m| m.count == 1), "round {round}");
            assert!(trained.merges == expected, "round {round}");
        }
    }

    #[test]
    fn deletions_do_not_depend_on_the_thread_count() {
        // thousands of distinct words over four letters: most merges touch more than
        // PARALLEL_MERGE words, so deleted tokens' words (moved in the arena) are rewritten
        // by parallel groups
        // (syllables such as "ing" and "tion" make tokens that later merges use up: deletions)
        // ("in" alone takes a quarter of the "in"s: deleting it after (in, g) rewrites words)
        let syllables = ["ing", "ing", "ing", "in", "tion", "a", "e"];
        let mut rng = crate::XorShift(0x1234_5678_9ABC_DEF1);
        let mut words: FxHashMap<String, u64> = FxHashMap::default();
        while words.len() < 20000 {
            let len = 3 + rng.below(8) as usize;
            let w: String = (0..len).map(|_| syllables[rng.below(7) as usize]).collect();
            *words.entry(w).or_insert(0) += 1 + rng.below(20);
        }
        let mut words: Vec<(Box<str>, u64)> = words.into_iter().map(|(w, c)| (w.into(), c)).collect();
        words.sort();
        for picky in [
            Picky {
                tau: 0.6,
                blowup: false,
            },
            Picky {
                tau: 0.8,
                blowup: true,
            },
        ] {
            let one = run(&words, 1, picky);
            assert!(!one.1.is_empty(), "this corpus makes deletions");
            for threads in [2, 3] {
                assert!(run(&words, threads, picky) == one, "{picky:?}, {threads} threads");
            }
        }
    }
}
