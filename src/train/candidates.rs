//! Supermerge candidates (SPEC section 3): the letter runs collected while counting, cut at
//! pretokens that are not eligible (not a reachable word token), as `reference/candidates.py`.

use rustc_hash::FxHashMap;

use super::TokenId;

/// `runs`: per counting table, its pretoken id -> word index map and its runs with counts;
/// `token_of[word index]`: the word-model token the pretoken is, when it is eligible.
/// Returns candidates as token sequences.
pub fn supermerge_candidates(
    runs: &[(Vec<u32>, FxHashMap<Box<[u32]>, u64>)],
    token_of: &[Option<TokenId>],
) -> FxHashMap<Box<[TokenId]>, u64> {
    let mut out: FxHashMap<Box<[TokenId]>, u64> = FxHashMap::default();
    let mut piece: Vec<TokenId> = Vec::new();
    let mut flush = |piece: &mut Vec<TokenId>, count: u64| {
        if piece.len() >= 2 {
            *out.entry(piece.as_slice().into()).or_insert(0) += count;
        }
        piece.clear();
    };
    for (remap, table) in runs {
        for (run, count) in table {
            for &pretoken in run.iter() {
                match token_of[remap[pretoken as usize] as usize] {
                    Some(t) => piece.push(t),
                    None => flush(&mut piece, *count),
                }
            }
            flush(&mut piece, *count);
        }
    }
    out
}
