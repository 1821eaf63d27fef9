//! The optional greedy n-gram split of candidates (SPEC 3.1, paper Appendix B), as
//! `reference/ngram.py`.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::tokens::ngram::{prefix_set, split_one};
use crate::tokens::TokenId;

pub const MIN_COUNT_FLOOR: u64 = 15;

/// All n-grams (2 <= n <= max_len) with count >= `min_count`, Apriori style.
pub fn frequent_ngrams(
    candidates: &[(Box<[TokenId]>, u64)],
    min_count: u64,
    max_len: usize,
) -> FxHashMap<Box<[TokenId]>, u64> {
    let mut table: FxHashMap<Box<[TokenId]>, u64> = FxHashMap::default();
    for n in 1..=max_len {
        let before = table.len();
        let mut added: FxHashMap<Box<[TokenId]>, u64> = FxHashMap::default();
        for (tokens, count) in candidates {
            if tokens.len() < n {
                continue;
            }
            for i in 0..=tokens.len() - n {
                if n > 1 {
                    let frequent = |g: &[TokenId]| table.get(g).is_some_and(|&c| c >= min_count);
                    if !frequent(&tokens[i..i + n - 1]) || !frequent(&tokens[i + 1..i + n]) {
                        continue;
                    }
                }
                *added.entry(tokens[i..i + n].into()).or_insert(0) += count;
            }
        }
        // unigrams are kept whatever their count: the pruning of size 2 reads them
        table.extend(added.into_iter().filter(|(g, c)| g.len() == 1 || *c >= min_count));
        if table.len() == before {
            break;
        }
    }
    table.retain(|g, c| g.len() >= 2 && *c >= min_count);
    table
}

/// Cut every candidate and re-aggregate the pieces (single tokens included: they carry no
/// pairs but count in the vocabulary counts).
pub fn greedy_split(
    candidates: Vec<(Box<[TokenId]>, u64)>,
    table: &FxHashSet<Box<[TokenId]>>,
) -> Vec<(Box<[TokenId]>, u64)> {
    if table.is_empty() {
        return candidates;
    }
    let prefixes = prefix_set(table);
    let mut out: FxHashMap<Box<[TokenId]>, u64> = FxHashMap::default();
    for (tokens, count) in &candidates {
        split_one(tokens, table, &prefixes, |piece| {
            *out.entry(piece.into()).or_insert(0) += count
        });
    }
    out.into_iter().collect()
}
