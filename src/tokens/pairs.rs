//! Pairs in a token sequence, as training and encoding both see them (SPEC 2.3, 2.5): which
//! occurrences count, and how a merge rewrites a sequence.

use super::{Pair, TokenId};

/// Call `f` for every counted pair occurrence of a sequence (SPEC 2.3): a pair `(x, x)` equal
/// to the previous counted pair is skipped, and resets "previous".
#[inline]
pub fn count_pairs(tokens: &[TokenId], mut f: impl FnMut(Pair)) {
    let mut previous: Option<Pair> = None;
    for w in tokens.windows(2) {
        let pair = (w[0], w[1]);
        if pair.0 == pair.1 && previous == Some(pair) {
            previous = None;
            continue;
        }
        f(pair);
        previous = Some(pair);
    }
}

/// Replace each non-overlapping occurrence of `pair` by `merged`, left to right, in place;
/// returns whether anything changed.
pub fn apply_merge(tokens: &mut Vec<TokenId>, pair: Pair, merged: TokenId) -> bool {
    let n = tokens.len();
    let (mut read, mut write) = (0, 0);
    let mut changed = false;
    while read < n {
        if read + 1 < n && tokens[read] == pair.0 && tokens[read + 1] == pair.1 {
            tokens[write] = merged;
            read += 2;
            changed = true;
        } else {
            tokens[write] = tokens[read];
            read += 1;
        }
        write += 1;
    }
    tokens.truncate(write);
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::byte_id;
    use rustc_hash::FxHashMap;

    fn ids(s: &[u8]) -> Vec<TokenId> {
        s.iter().map(|&b| byte_id(b).unwrap()).collect()
    }

    #[test]
    fn pair_counting_rule() {
        let mut c = FxHashMap::default();
        count_pairs(&ids(b"aaaaa"), |p| *c.entry(p).or_insert(0) += 1);
        assert_eq!(c.len(), 1);
        assert_eq!(c[&(97, 97)], 2);
    }

    #[test]
    fn merge_is_left_to_right_non_overlapping() {
        let mut t = ids(b"aaa");
        assert!(apply_merge(&mut t, (97, 97), 300));
        assert_eq!(t, vec![300, 97]);
    }
}
