//! Which tokens step 3 makes from their own bytes, decided from the merges' structure instead
//! of merging every token's bytes (a model with tokens of megabytes took seconds for that).
//! The proof that both give the same set is in `docs/algorithm.md` (section 3, reachable
//! tokens); `Encoder::reachable_by_encoding` is the definition, kept as the tests' oracle.
//!
//! Step 3 without deletions, on merges that never repeat a pair, is a pass over the merges in
//! index order, each applied at all its non-overlapping places, left to right.  A token's bytes end as that one token exactly
//! when some merge `k = (l, r) -> t` finds the state `[l, r]`, which holds when `l` and `r`
//! are single before stage `k` and no token ever formed across the place where they meet.
//! Before stage `k` the two sides then evolve as they do alone, so that place only sees the
//! last token of `l`'s states and the first of `r`'s: each side's *spine*, the chain of parts
//! down to a byte, read through the merge that made each token single.

use rustc_hash::FxHashMap;

use crate::tokens::TokenId;

/// The stage of the bytes, before merge 0.
const BYTES: i64 = -1;

/// Not (yet) single.
const NEVER: i64 = i64::MAX;

/// Per token id: whether applying the regular merges `ranks` (pair -> index and result, each
/// pair merged once) to its bytes alone ends in that one token.  The work is the sum,
/// over the merges that apply, of the two spines' lengths (at most the parts' lengths, and
/// about their logarithm for the trees training makes).
pub(super) fn single_by_merges(
    vocab_len: usize,
    byte_ids: &[Option<TokenId>; 256],
    ranks: &FxHashMap<(TokenId, TokenId), (u32, TokenId)>,
) -> Vec<bool> {
    // the stage at which each token became its own bytes' only token, and from which parts
    let mut done = vec![NEVER; vocab_len];
    let mut parts = vec![(0 as TokenId, 0 as TokenId); vocab_len];
    for &id in byte_ids.iter().flatten() {
        done[id as usize] = BYTES;
    }
    let mut merges: Vec<(u32, TokenId, TokenId, TokenId)> =
        ranks.iter().map(|(&(l, r), &(k, t))| (k, l, r, t)).collect();
    merges.sort_unstable();
    let (mut tail, mut head) = (Vec::new(), Vec::new());
    for (k, l, r, t) in merges {
        let stage = k as i64;
        // (a part that is not single by now never is before this stage)
        if done[t as usize] != NEVER || done[l as usize] >= stage || done[r as usize] >= stage {
            continue;
        }
        spine(l, &done, &parts, 1, &mut tail);
        spine(r, &done, &parts, 0, &mut head);
        if !crosses(&tail, &head, stage, ranks) {
            done[t as usize] = stage;
            parts[t as usize] = (l, r);
        }
    }
    done.into_iter().map(|d| d != NEVER).collect()
}

/// The last (`side` 1) or first (`side` 0) token of `x`'s states while its bytes are merged
/// alone, as `(stage it appears at, token)`, ascending: a byte at [`BYTES`] up to `x` itself.
fn spine(
    mut x: TokenId,
    done: &[i64],
    parts: &[(TokenId, TokenId)],
    side: usize,
    out: &mut Vec<(i64, TokenId)>,
) {
    out.clear();
    loop {
        let d = done[x as usize];
        out.push((d, x));
        if d == BYTES {
            break;
        }
        let (l, r) = parts[x as usize];
        x = if side == 0 { l } else { r };
    }
    out.reverse();
}

/// Whether a token forms across the place where a left part with last tokens `tail` meets a
/// right part with first tokens `head` (both from [`spine`]) at some stage before `stage`.
///
/// Before stage `s` the tokens on both sides of it are `u`, the last entry of `tail` that
/// appeared before `s`, and `v`, likewise in `head`.  Stage `s` joins them when it is the
/// merge of `(u, v)` and the left side's own pass does not take `u` (that happens only when
/// `u == v` and `u` joins its left neighbour, which is when `tail` has an entry at `s`).
fn crosses(
    tail: &[(i64, TokenId)],
    head: &[(i64, TokenId)],
    stage: i64,
    ranks: &FxHashMap<(TokenId, TokenId), (u32, TokenId)>,
) -> bool {
    let (mut a, mut b, mut from) = (0, 0, 0i64);
    loop {
        // the stages `from..to` all see the same `(u, v)`
        let next_a = tail.get(a + 1).map_or(stage, |&(d, _)| d + 1);
        let next_b = head.get(b + 1).map_or(stage, |&(d, _)| d + 1);
        let to = next_a.min(next_b);
        if let Some(&(k, _)) = ranks.get(&(tail[a].1, head[b].1)) {
            let k = k as i64;
            let taken_on_the_left = tail.get(a + 1).is_some_and(|&(d, _)| d == k);
            if (from..to).contains(&k) && !taken_on_the_left {
                return true;
            }
        }
        if to >= stage {
            return false;
        }
        if next_a == to {
            a += 1;
        }
        if next_b == to {
            b += 1;
        }
        from = to;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::model;
    use super::super::Encoder;
    use crate::model::{Kind, Merge, Merges, Model};
    use crate::XorShift;

    fn check(m: &Model, what: &str) {
        let enc = Encoder::new(m, false).unwrap();
        let oracle = enc.reachable_by_encoding(&m.is_super).unwrap();
        for (id, (&want, &got)) in oracle.iter().zip(enc.reachable()).enumerate() {
            assert_eq!(
                got,
                want,
                "{what}: token {id} {}",
                super::super::py_bytes(&m.vocab[id])
            );
        }
    }

    /// A model of random merges over the bytes of `letters`: parts are often equal (runs of one token, where
    /// the left-to-right rule decides), some merges come before those that make their parts,
    /// some pairs and some results repeat, and with `supers` a few supermerges are added (their
    /// results that are word tokens stay word tokens).
    fn random_model(rng: &mut XorShift, letters: &[&str], supers: bool) -> Model {
        let mut m = model();
        let mut vocab: Vec<Vec<u8>> = m.vocab.iter().map(|t| t.to_vec()).collect();
        let mut pool: Vec<Vec<u8>> = letters.iter().flat_map(|l| l.bytes().map(|b| vec![b])).collect();
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for _ in 0..1 + rng.below(60) {
            let l = pool[rng.below(pool.len() as u64) as usize].clone();
            let r = if rng.below(3) == 0 {
                l.clone()
            } else {
                pool[rng.below(pool.len() as u64) as usize].clone()
            };
            let t = [&l[..], &r[..]].concat();
            if t.len() > 64 {
                continue;
            }
            pairs.push((l, r));
            pool.push(t);
        }
        for _ in 0..rng.below(4) {
            let (i, j) = (
                rng.below(pairs.len() as u64) as usize,
                rng.below(pairs.len() as u64) as usize,
            );
            pairs.swap(i, j);
        }
        let mut merges = Merges::default();
        for (l, r) in &pairs {
            merges.push(Merge {
                left: l,
                right: r,
                count: 1,
                flag: false,
            });
            let t = [&l[..], &r[..]].concat();
            if !vocab.contains(&t) {
                vocab.push(t);
            }
        }
        let mut is_super = vec![false; vocab.len()];
        let mut supermerges = Merges::default();
        let mut super_pairs = Vec::new();
        if supers {
            for _ in 0..rng.below(8) {
                let l = pool[rng.below(pool.len() as u64) as usize].clone();
                let r = pool[rng.below(pool.len() as u64) as usize].clone();
                super_pairs.push((l, r));
            }
        }
        for (l, r) in &super_pairs {
            supermerges.push(Merge {
                left: l,
                right: r,
                count: 1,
                flag: false,
            });
            let t = [&l[..], &r[..]].concat();
            if !vocab.contains(&t) {
                vocab.push(t);
                is_super.push(true);
            }
        }
        m.kind = if supers { Kind::Boundless } else { Kind::Word };
        m.counts = vec![0; vocab.len()];
        m.vocab = vocab.into();
        m.is_super = is_super;
        m.merges = merges;
        m.supermerges = supermerges;
        m
    }

    #[test]
    fn the_structure_gives_the_tokens_that_encode_to_themselves() {
        check(&model(), "the test model");
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for case in 0..3000 {
            let letters: &[&str] = match case % 4 {
                0 => &["a"],
                1 => &["a", "b"],
                2 => &["a", "b", "c"],
                // the two bytes of "é", alone or together (tokens of invalid UTF-8 included)
                _ => &["a", "b", " ", "\u{e9}"],
            };
            let m = random_model(&mut rng, letters, case % 3 == 0);
            check(&m, &format!("case {case}"));
        }
    }

    #[test]
    fn a_doubling_chain_of_megabyte_tokens_is_decided_without_encoding_them() {
        // merges k = (k-1, k-1) from "a": 21 tokens, the last of 1 MB, all reachable
        let mut m = model();
        let mut vocab: Vec<Vec<u8>> = m.vocab.iter().map(|t| t.to_vec()).collect();
        let halves: Vec<Vec<u8>> = (0..20).map(|k| vec![b'a'; 1 << k]).collect();
        let mut merges = Merges::default();
        for h in &halves {
            merges.push(Merge {
                left: h,
                right: h,
                count: 1,
                flag: false,
            });
            vocab.push([&h[..], &h[..]].concat());
        }
        m.counts = vec![0; vocab.len()];
        m.is_super = vec![false; vocab.len()];
        m.vocab = vocab.into();
        m.merges = merges;
        let enc = Encoder::new(&m, false).unwrap();
        let n = m.vocab.len();
        assert!(enc.reachable()[n - 20..].iter().all(|&r| r));
        check(&m, "the doubling chain");
    }

    #[test]
    fn a_pair_merged_twice_applies_again_at_its_later_index() {
        // (aa, a) first comes before (a, a) makes "aa", then again after: "aaa" is one token
        let mut m = model();
        let mut vocab: Vec<Vec<u8>> = crate::tokens::byte_token_values().map(|b| vec![b]).collect();
        vocab.extend([b"aaa".to_vec(), b"aa".to_vec()]);
        let mut merges = Merges::default();
        for (l, r) in [("aa", "a"), ("a", "a"), ("aa", "a")] {
            merges.push(Merge {
                left: l.as_bytes(),
                right: r.as_bytes(),
                count: 1,
                flag: false,
            });
        }
        m.counts = vec![0; vocab.len()];
        m.is_super = vec![false; vocab.len()];
        let aaa = crate::tokens::byte_token_values().count() as u32;
        m.vocab = vocab.into();
        m.merges = merges;
        let enc = Encoder::new(&m, false).unwrap();
        assert_eq!(enc.encode_ordinary("aaa").unwrap(), vec![aaa]);
        assert!(enc.reachable()[aaa as usize]);
        check(&m, "a pair merged twice");
    }
}
