//! Step 3 with PickyBPE deletions (SPEC 9 "Inference"): merges and deletions replayed in index
//! order, as `reference/encode.py`.

use rustc_hash::{FxHashMap, FxHashSet};

use super::py_bytes;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::tokens::pairs::apply_merge;
use crate::tokens::TokenId;

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
}

/// What [`Picky::apply`] does next: a merge (the pair and its result), or a deletion.
pub(super) type Operation = Option<((TokenId, TokenId), TokenId)>;

/// The first of the ascending `indices` above `last`.
pub(super) fn first_above<T: Copy>(list: &[(u32, T)], last: i64) -> Option<(u32, T)> {
    let k = list.partition_point(|&(i, _)| i as i64 <= last);
    list.get(k).copied()
}

impl Picky {
    pub(super) fn new(model: &Model, ids: &FxHashMap<Vec<u8>, TokenId>) -> Result<Picky> {
        use crate::model::merge_indices;
        let n = model.vocab.len();
        let mut extended: FxHashMap<Vec<u8>, TokenId> = ids.clone();
        let mut extra: Vec<Vec<u8>> = Vec::new();
        let mut id_of = |t: &[u8]| -> TokenId {
            if let Some(&id) = extended.get(t) {
                return id;
            }
            let id = (n + extra.len()) as TokenId;
            extra.push(t.to_vec());
            extended.insert(t.to_vec(), id);
            id
        };
        let deleted_bytes: FxHashSet<&[u8]> = model.deletions.iter().map(|d| d.token.as_slice()).collect();
        let mut ranks: FxHashMap<(TokenId, TokenId), Vec<(u32, TokenId)>> = FxHashMap::default();
        let mut makers: FxHashMap<Vec<u8>, (Vec<u8>, Vec<u8>)> = FxHashMap::default();
        let indices = merge_indices(model.merges.len(), &model.deletions);
        for (i, m) in indices.into_iter().zip(model.merges.iter()) {
            let merged = [m.left, m.right].concat();
            if !ids.contains_key(&merged) && !deleted_bytes.contains(merged.as_slice()) {
                return Err(Error::Value(format!(
                    "model is inconsistent: merge result {} is neither in the vocabulary nor deleted",
                    py_bytes(&merged)
                )));
            }
            let index = u32::try_from(i).map_err(|_| Error::Value("too many merges".into()))?;
            let (l, r, id) = (id_of(m.left), id_of(m.right), id_of(&merged));
            ranks.entry((l, r)).or_default().push((index, id));
            makers
                .entry(merged)
                .or_insert_with(|| (m.left.to_vec(), m.right.to_vec()));
        }
        let mut deleted: FxHashMap<TokenId, Vec<u32>> = FxHashMap::default();
        for d in &model.deletions {
            let index = u32::try_from(d.index).map_err(|_| Error::Value("too many deletions".into()))?;
            deleted.entry(id_of(&d.token)).or_default().push(index);
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
            if ids.contains_key(*token) {
                out.push(token.to_vec());
            } else {
                for part in parts {
                    if ids.contains_key(part) {
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
                    ids.get(p).copied().ok_or_else(|| {
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
        })
    }

    /// Apply merges and deletions to one pretoken's byte tokens: repeatedly the operation
    /// with the smallest index above the last one applied.
    pub(super) fn apply(&self, tokens: &mut Vec<TokenId>) {
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
}
