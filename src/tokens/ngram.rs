//! The n-gram table of the greedy split (SPEC 3.1, paper Appendix B), as `reference/ngram.py`:
//! training cuts its candidates with it, encoding cuts each pretoken's tokens with the table a
//! model file stores, and the file format bounds its n-grams' length.

use rustc_hash::FxHashSet;

use super::TokenId;

/// The longest n-gram the table holds (and a model file may store).
pub const MAX_NGRAM: usize = 30;

/// Every prefix of every n-gram, to stop the longest-match search early.
pub fn prefix_set(table: &FxHashSet<Box<[TokenId]>>) -> FxHashSet<Box<[TokenId]>> {
    let mut out = FxHashSet::default();
    for g in table {
        for k in 1..=g.len() {
            out.insert(g[..k].into());
        }
    }
    out
}

/// Cut one sequence: at each position the longest n-gram (n >= 2) of `table` starting there,
/// else a single token.  Calls `emit` with each piece.
pub fn split_one<'a>(
    tokens: &'a [TokenId],
    table: &FxHashSet<Box<[TokenId]>>,
    prefixes: &FxHashSet<Box<[TokenId]>>,
    mut emit: impl FnMut(&'a [TokenId]),
) {
    let mut pos = 0;
    while pos < tokens.len() {
        let mut best = 1;
        for end in pos + 1..=tokens.len() {
            let g = &tokens[pos..end];
            if !prefixes.contains(g) {
                break;
            }
            if g.len() >= 2 && table.contains(g) {
                best = g.len();
            }
        }
        emit(&tokens[pos..pos + best]);
        pos += best;
    }
}
