//! Step 3 with PickyBPE deletions (SPEC 9 "Inference"): merges and deletions replayed in index
//! order, as `reference/encode.py`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::{FxHashMap, FxHashSet};

use super::py_bytes;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::tokens::pairs::apply_merge;
use crate::tokens::{Pair, TokenId};

/// Step 3 for a model with PickyBPE deletions (SPEC 9 "Inference"), as `reference/encode.py`.
///
/// Ids below the vocabulary size are the model's; deleted tokens that are not in the final
/// vocabulary (they can stand in a pretoken between a merge and a deletion) get the ids
/// after them.  A pair or a token can have several operations, so each keeps its indices.
pub(super) struct Picky {
    /// pair -> (index, result) of each merge of that pair, indices ascending
    ranks: FxHashMap<(TokenId, TokenId), Vec<(u32, TokenId)>>,
    /// token -> indices of its deletions, ascending
    deleted: FxHashMap<TokenId, Vec<u32>>,
    /// token -> its resolved parts (all in the final vocabulary)
    parts: FxHashMap<TokenId, Vec<TokenId>>,
    /// bytes of the ids after the vocabulary
    pub(super) extra: Vec<Vec<u8>>,
    /// index -> the merge or deletion that has it
    by_index: FxHashMap<u32, Step>,
}

/// The operation of one index: a merge (the pair and its result) or a deletion of a token.
#[derive(Clone, Copy)]
enum Step {
    Merge(Pair, TokenId),
    Delete(TokenId),
}

/// Pretokens of more than this many bytes go through [`Picky::apply_indexed`].
const LONG_PIECE: usize = 256;

/// What [`Picky::apply`] does next: a merge (the pair and its result), or a deletion.
pub(super) type Operation = Option<((TokenId, TokenId), TokenId)>;

/// The first of the ascending `indices` above `last`.
pub(super) fn first_above<T: Copy>(list: &[(u32, T)], last: i64) -> Option<(u32, T)> {
    let k = list.partition_point(|&(i, _)| i as i64 <= last);
    list.get(k).copied()
}

impl Picky {
    /// `ids` finds a token of the model's vocabulary by its bytes.
    pub(super) fn new(model: &Model, ids: &dyn Fn(&[u8]) -> Option<TokenId>) -> Result<Picky> {
        use crate::model::merge_indices;
        let n = model.vocab.len();
        // ids past the vocabulary for the deleted tokens it no longer holds
        let mut extended: FxHashMap<Vec<u8>, TokenId> = FxHashMap::default();
        let mut extra: Vec<Vec<u8>> = Vec::new();
        let mut id_of = |t: &[u8]| -> TokenId {
            if let Some(id) = ids(t).or_else(|| extended.get(t).copied()) {
                return id;
            }
            let id = (n + extra.len()) as TokenId;
            extra.push(t.to_vec());
            extended.insert(t.to_vec(), id);
            id
        };
        let deleted_bytes: FxHashSet<&[u8]> = model.deletions.iter().map(|d| d.token.as_slice()).collect();
        let mut ranks: FxHashMap<(TokenId, TokenId), Vec<(u32, TokenId)>> = FxHashMap::default();
        let mut by_index: FxHashMap<u32, Step> = FxHashMap::default();
        let mut makers: FxHashMap<Vec<u8>, (Vec<u8>, Vec<u8>)> = FxHashMap::default();
        let indices = merge_indices(model.merges.len(), &model.deletions);
        for (i, m) in indices.into_iter().zip(model.merges.iter()) {
            let merged = [m.left, m.right].concat();
            if ids(&merged).is_none() && !deleted_bytes.contains(merged.as_slice()) {
                return Err(Error::Value(format!(
                    "model is inconsistent: merge result {} is neither in the vocabulary nor deleted",
                    py_bytes(&merged)
                )));
            }
            let index = u32::try_from(i).map_err(|_| Error::Value("too many merges".into()))?;
            let (l, r, id) = (id_of(m.left), id_of(m.right), id_of(&merged));
            ranks.entry((l, r)).or_default().push((index, id));
            by_index.insert(index, Step::Merge((l, r), id));
            makers
                .entry(merged)
                .or_insert_with(|| (m.left.to_vec(), m.right.to_vec()));
        }
        let mut deleted: FxHashMap<TokenId, Vec<u32>> = FxHashMap::default();
        for d in &model.deletions {
            let index = u32::try_from(d.index).map_err(|_| Error::Value("too many deletions".into()))?;
            let id = id_of(&d.token);
            deleted.entry(id).or_default().push(index);
            by_index.insert(index, Step::Delete(id));
        }
        // recorded parts, fixed at a token's first deletion: its bytes with blowup, else the
        // halves of the earliest merge that makes it (both strictly shorter than the token)
        let mut recorded: Vec<(&[u8], Vec<Vec<u8>>)> = Vec::new();
        let mut seen: FxHashSet<&[u8]> = FxHashSet::default();
        for d in &model.deletions {
            if !seen.insert(&d.token) {
                continue;
            }
            let parts = if model.settings.blowup {
                d.token.iter().map(|&b| vec![b]).collect()
            } else {
                let (l, r) = makers.get(&d.token).ok_or_else(|| {
                    Error::Value(format!(
                        "model is inconsistent: no merge makes the deleted token {}",
                        py_bytes(&d.token)
                    ))
                })?;
                vec![l.clone(), r.clone()]
            };
            recorded.push((&d.token, parts));
        }
        // resolution (SPEC 9): a part not in the final vocabulary is replaced by its own
        // resolved parts (a deleted token's) or its bytes.  Parts are shorter than their
        // token, so resolving in order of length needs no recursion.  A deleted token that
        // is in the final vocabulary resolves to itself (what the paper's encoder does).
        recorded.sort_by_key(|(t, _)| t.len());
        let mut resolved: FxHashMap<&[u8], Vec<Vec<u8>>> = FxHashMap::default();
        for (token, parts) in &recorded {
            let mut out: Vec<Vec<u8>> = Vec::new();
            if ids(token).is_some() {
                out.push(token.to_vec());
            } else {
                for part in parts {
                    if ids(part).is_some() {
                        out.push(part.clone());
                    } else if let Some(r) = resolved.get(part.as_slice()) {
                        out.extend(r.iter().cloned());
                    } else {
                        out.extend(part.iter().map(|&b| vec![b]));
                    }
                }
            }
            resolved.insert(token, out);
        }
        let mut parts: FxHashMap<TokenId, Vec<TokenId>> = FxHashMap::default();
        for (token, pieces) in resolved {
            let pieces = pieces
                .iter()
                .map(|p| {
                    ids(p).ok_or_else(|| {
                        Error::Value(format!(
                            "model is inconsistent: the byte {} is not in the vocabulary",
                            py_bytes(p)
                        ))
                    })
                })
                .collect::<Result<Vec<TokenId>>>()?;
            parts.insert(id_of(token), pieces);
        }
        Ok(Picky {
            ranks,
            deleted,
            parts,
            extra,
            by_index,
        })
    }

    /// Apply merges and deletions to one pretoken's byte tokens: repeatedly the operation
    /// with the smallest index above the last one applied.
    pub(super) fn apply(&self, tokens: &mut Vec<TokenId>) {
        if tokens.len() > LONG_PIECE && tokens.len() < (u32::MAX / 2) as usize {
            self.apply_indexed(tokens)
        } else {
            self.apply_scan(tokens)
        }
    }

    /// [`Self::apply`] by scanning the whole pretoken for each operation: quadratic, the
    /// fastest for short pretokens.
    fn apply_scan(&self, tokens: &mut Vec<TokenId>) {
        let mut last: i64 = -1;
        let mut replaced: Vec<TokenId> = Vec::new();
        loop {
            let mut best: Option<(u32, Operation, TokenId)> = None;
            for w in tokens.windows(2) {
                if let Some(list) = self.ranks.get(&(w[0], w[1])) {
                    if let Some((i, merged)) = first_above(list, last) {
                        if best.is_none_or(|b| i < b.0) {
                            best = Some((i, Some(((w[0], w[1]), merged)), 0));
                        }
                    }
                }
            }
            for &t in tokens.iter() {
                if let Some(list) = self.deleted.get(&t) {
                    let k = list.partition_point(|&i| i as i64 <= last);
                    if let Some(&i) = list.get(k) {
                        if best.is_none_or(|b| i < b.0) {
                            best = Some((i, None, t));
                        }
                    }
                }
            }
            let Some((index, op, token)) = best else { return };
            match op {
                Some((pair, merged)) => {
                    apply_merge(tokens, pair, merged);
                }
                None => {
                    let parts = &self.parts[&token];
                    replaced.clear();
                    for &t in tokens.iter() {
                        if t == token {
                            replaced.extend_from_slice(parts);
                        } else {
                            replaced.push(t);
                        }
                    }
                    std::mem::swap(tokens, &mut replaced);
                }
            }
            last = index as i64;
        }
    }

    /// [`Self::apply`] in O(n log n) for a long pretoken.  The tokens form a linked list; an
    /// index lists where each pair that has merges may start and where each token that has
    /// deletions may stand (entries can be stale: they are checked when used), and a heap
    /// holds the indices of the operations that may come next.  A pair or token that appears
    /// while the index of the last operation is `last` queues its first operation above
    /// `last`; an operation popped with nothing left to act on is skipped.  When a merge is
    /// applied its pair is gone everywhere (a repeat of equal tokens is paired from its
    /// start, as the scan does), and so is a deleted token unless it resolves to itself.
    fn apply_indexed(&self, tokens: &mut Vec<TokenId>) {
        let n = tokens.len() as u32;
        if n == 0 {
            return;
        }
        let mut chain = Chain {
            picky: self,
            token: std::mem::take(tokens),
            next: (1..=n).map(|i| if i == n { END } else { i }).collect(),
            prev: (0..n).map(|i| i.wrapping_sub(1)).collect(),
            free: Vec::new(),
            pairs: FxHashMap::default(),
            copies: FxHashMap::default(),
            queue: BinaryHeap::new(),
            queued: FxHashSet::default(),
            last: -1,
        };
        for i in 0..n {
            chain.note_token(i);
            chain.note_pair(i);
        }
        while let Some(Reverse(index)) = chain.queue.pop() {
            match self.by_index[&index] {
                Step::Merge(pair, merged) => chain.merge(index, pair, merged),
                Step::Delete(token) => chain.delete(index, token),
            }
        }
        let mut k = 0;
        while k != END {
            tokens.push(chain.token[k as usize]);
            k = chain.next[k as usize];
        }
    }
}

/// No node: the end of the list (and the `prev` of its first node, node 0, which stays first).
const END: u32 = u32::MAX;

/// The token of a node that a merge joined into its left neighbour (the node is then free).
const GONE: TokenId = TokenId::MAX;

/// A long pretoken being merged by [`Picky::apply_indexed`].
struct Chain<'a> {
    picky: &'a Picky,
    token: Vec<TokenId>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// nodes freed by merges, for deletions to reuse
    free: Vec<u32>,
    /// pair -> nodes where it may start (only pairs that have merges)
    pairs: FxHashMap<Pair, Vec<u32>>,
    /// token -> nodes where it may stand (only tokens that have deletions)
    copies: FxHashMap<TokenId, Vec<u32>>,
    /// indices of the operations that may come next, each queued once
    queue: BinaryHeap<Reverse<u32>>,
    queued: FxHashSet<u32>,
    /// the index of the last operation applied, -1 before the first
    last: i64,
}

impl Chain<'_> {
    fn schedule(&mut self, index: Option<u32>) {
        if let Some(i) = index {
            if self.queued.insert(i) {
                self.queue.push(Reverse(i));
            }
        }
    }

    /// The pair that starts at node `at`, if it has a next node, is new there.
    fn note_pair(&mut self, at: u32) {
        let j = self.next[at as usize];
        if j == END {
            return;
        }
        let pair = (self.token[at as usize], self.token[j as usize]);
        if let Some(list) = self.picky.ranks.get(&pair) {
            self.pairs.entry(pair).or_default().push(at);
            self.schedule(first_above(list, self.last).map(|(i, _)| i));
        }
    }

    /// The token at node `at` is new there.
    fn note_token(&mut self, at: u32) {
        let t = self.token[at as usize];
        if let Some(list) = self.picky.deleted.get(&t) {
            self.copies.entry(t).or_default().push(at);
            let k = list.partition_point(|&i| i as i64 <= self.last);
            self.schedule(list.get(k).copied());
        }
    }

    fn holds(&self, i: u32, pair: Pair) -> bool {
        let j = self.next[i as usize];
        self.token[i as usize] == pair.0 && j != END && self.token[j as usize] == pair.1
    }

    /// Join node `i` and the next one into `merged`.
    fn join(&mut self, i: u32, merged: TokenId) {
        let j = self.next[i as usize];
        let after = self.next[j as usize];
        self.token[i as usize] = merged;
        self.token[j as usize] = GONE;
        self.next[i as usize] = after;
        if after != END {
            self.prev[after as usize] = i;
        }
        self.free.push(j);
        let before = self.prev[i as usize];
        if before != END {
            self.note_pair(before);
        }
        self.note_pair(i);
        self.note_token(i);
    }

    /// The merge at `index` of `pair`, at all its non-overlapping places, left to right.
    fn merge(&mut self, index: u32, pair: Pair, merged: TokenId) {
        let Some(list) = self.pairs.remove(&pair) else {
            return;
        };
        for i in list {
            if !self.holds(i, pair) {
                continue;
            }
            self.last = index as i64;
            if pair.0 != pair.1 {
                self.join(i, merged);
                continue;
            }
            // a repeat of pair.0: paired from its start (it holds no pair once done)
            let mut k = i;
            while self.prev[k as usize] != END && self.token[self.prev[k as usize] as usize] == pair.0 {
                k = self.prev[k as usize];
            }
            while self.holds(k, pair) {
                self.join(k, merged);
                k = self.next[k as usize];
                if k == END {
                    break;
                }
            }
        }
    }

    /// The deletion at `index` of `token`: each copy replaced by its resolved parts.
    fn delete(&mut self, index: u32, token: TokenId) {
        let Some(mut list) = self.copies.remove(&token) else {
            return;
        };
        list.sort_unstable();
        list.dedup();
        list.retain(|&i| self.token[i as usize] == token);
        if list.is_empty() {
            return;
        }
        self.last = index as i64;
        let parts: &[TokenId] = &self.picky.parts[&token];
        if parts == [token] {
            // it stays (a deleted token in the final vocabulary): its later deletions
            let later = self.picky.deleted[&token].iter().copied().find(|&i| i > index);
            self.copies.insert(token, list);
            self.schedule(later);
            return;
        }
        for i in list {
            let after = self.next[i as usize];
            self.token[i as usize] = parts[0];
            let mut k = i;
            for &p in &parts[1..] {
                let new = match self.free.pop() {
                    Some(f) => {
                        self.token[f as usize] = p;
                        f
                    }
                    None => {
                        self.token.push(p);
                        self.next.push(END);
                        self.prev.push(END);
                        (self.token.len() - 1) as u32
                    }
                };
                self.next[k as usize] = new;
                self.prev[new as usize] = k;
                k = new;
            }
            self.next[k as usize] = after;
            if after != END {
                self.prev[after as usize] = k;
            }
            let before = self.prev[i as usize];
            if before != END {
                self.note_pair(before);
            }
            let mut m = i;
            loop {
                self.note_token(m);
                self.note_pair(m);
                if m == k {
                    break;
                }
                m = self.next[m as usize];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small xorshift generator: the test needs no dependency.
    fn random(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// Random tables of merges and deletions (not a trained model: any tables will do for
    /// comparing the two procedures): pairs merged again under their old result, deleted
    /// tokens that resolve to themselves or to one to three other tokens.
    fn tables(seed: &mut u64, alphabet: u32) -> Picky {
        let mut p = Picky {
            ranks: FxHashMap::default(),
            deleted: FxHashMap::default(),
            parts: FxHashMap::default(),
            extra: Vec::new(),
            by_index: FxHashMap::default(),
        };
        let mut tokens: Vec<TokenId> = (0..alphabet).collect();
        let mut made: Vec<(Pair, TokenId)> = Vec::new();
        for index in 0..(10 + random(seed) % 80) as u32 {
            let choice = random(seed) % 10;
            if choice < 2 && !made.is_empty() {
                let t = made[(random(seed) % made.len() as u64) as usize].1;
                let parts: Vec<TokenId> = if random(seed) % 4 == 0 {
                    vec![t]
                } else {
                    let others: Vec<TokenId> = tokens.iter().copied().filter(|&u| u != t).collect();
                    (0..1 + random(seed) % 3)
                        .map(|_| others[(random(seed) % others.len() as u64) as usize])
                        .collect()
                };
                p.deleted.entry(t).or_default().push(index);
                p.parts.entry(t).or_insert(parts);
                p.by_index.insert(index, Step::Delete(t));
                continue;
            }
            let (pair, id) = if choice < 4 && !made.is_empty() {
                made[(random(seed) % made.len() as u64) as usize]
            } else {
                let mut pick = || tokens[(random(seed) % tokens.len() as u64) as usize];
                let pair = (pick(), pick());
                let id = 1000 + index;
                tokens.push(id);
                made.push((pair, id));
                (pair, id)
            };
            p.ranks.entry(pair).or_default().push((index, id));
            p.by_index.insert(index, Step::Merge(pair, id));
        }
        p
    }

    #[test]
    fn the_index_applies_operations_like_the_scan() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for round in 0..3000u64 {
            let alphabet = 1 + (round % 4) as u32;
            let picky = tables(&mut seed, alphabet);
            let n = 1 + (random(&mut seed) % 400) as usize;
            let piece: Vec<TokenId> = if round % 3 == 0 {
                // a short pattern repeated
                let unit: Vec<TokenId> = (0..1 + random(&mut seed) % 4)
                    .map(|_| (random(&mut seed) % alphabet as u64) as TokenId)
                    .collect();
                unit.iter().copied().cycle().take(n).collect()
            } else {
                (0..n)
                    .map(|_| (random(&mut seed) % alphabet as u64) as TokenId)
                    .collect()
            };
            let (mut scanned, mut indexed) = (piece.clone(), piece.clone());
            picky.apply_scan(&mut scanned);
            picky.apply_indexed(&mut indexed);
            assert_eq!(indexed, scanned, "round {round}, piece {piece:?}");
        }
    }
}
