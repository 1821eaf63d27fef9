//! Plain rank-based BPE models, as tiktoken's `.tiktoken` files define them.
//!
//! A ranks file lists every token (base64) with its rank, which is also its id.  Encoding
//! follows tiktoken exactly: pre-tokenize with the model's pattern; a piece that is a token is
//! that token; otherwise start from its bytes and repeatedly join the adjacent two parts whose
//! concatenation has the lowest rank (the leftmost on ties), until no concatenation is a token.

use base64::Engine as _;
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::pretokenize::Matcher;

pub struct RankModel {
    /// token bytes by rank (id); ranks need not be contiguous
    pub vocab: FxHashMap<u32, Vec<u8>>,
    pub ranks: FxHashMap<Vec<u8>, u32>,
    pub pattern: String,
    pub special: Vec<(String, u32)>,
}

/// Parse a `.tiktoken` file's text: one `<base64 token> <rank>` per line.
pub fn parse(text: &str, name: &str) -> Result<(FxHashMap<Vec<u8>, u32>, FxHashMap<u32, Vec<u8>>)> {
    let mut ranks = FxHashMap::default();
    let mut vocab = FxHashMap::default();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let bad = |why: &str| Error::Value(format!("{name}, line {}: {why}", i + 1));
        let (token, rank) = line
            .split_once(' ')
            .ok_or_else(|| bad("expected '<base64 token> <rank>'"))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(token)
            .map_err(|_| bad("the token is not valid base64"))?;
        let rank: u32 = rank
            .parse()
            .map_err(|_| bad("the rank is not a non-negative integer"))?;
        if bytes.is_empty() {
            return Err(bad("empty token"));
        }
        if ranks.insert(bytes.clone(), rank).is_some() {
            return Err(bad("the token appears twice"));
        }
        if vocab.insert(rank, bytes).is_some() {
            return Err(bad(&format!("rank {rank} appears twice")));
        }
    }
    if ranks.is_empty() {
        return Err(Error::Value(format!("{name}: no tokens (an empty ranks file)")));
    }
    Ok((ranks, vocab))
}

/// The `.tiktoken` text of a vocabulary whose ranks are its ids.
pub fn dumps(vocab: &[Vec<u8>]) -> String {
    let mut out = String::with_capacity(vocab.len() * 16);
    for (i, t) in vocab.iter().enumerate() {
        out.push_str(&base64::engine::general_purpose::STANDARD.encode(t));
        out.push(' ');
        out.push_str(&i.to_string());
        out.push('\n');
    }
    out
}

pub struct RankEncoder {
    pub model: RankModel,
    matcher: Matcher,
}

impl RankEncoder {
    pub fn new(model: RankModel) -> Result<RankEncoder> {
        let matcher = Matcher::new(&model.pattern, "pattern")?;
        Ok(RankEncoder { model, matcher })
    }

    /// tiktoken's byte-pair merge of one piece that is not a token itself.
    fn merge_piece(&self, piece: &[u8], out: &mut Vec<u32>) -> Result<()> {
        let ranks = &self.model.ranks;
        let rank_of = |a: usize, b: usize| ranks.get(&piece[a..b]).copied().unwrap_or(u32::MAX);
        // parts[i] = (start of part i, rank of joining part i with part i + 1)
        let mut parts: Vec<(usize, u32)> = (0..=piece.len()).map(|i| (i, u32::MAX)).collect();
        for i in 0..piece.len().saturating_sub(1) {
            parts[i].1 = rank_of(i, i + 2);
        }
        loop {
            let mut best = (u32::MAX, 0);
            for (i, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
                if r < best.0 {
                    best = (r, i);
                }
            }
            if best.0 == u32::MAX {
                break;
            }
            let i = best.1;
            parts.remove(i + 1);
            parts[i].1 = if i + 2 < parts.len() {
                rank_of(parts[i].0, parts[i + 2].0)
            } else {
                u32::MAX
            };
            if i > 0 {
                parts[i - 1].1 = rank_of(parts[i - 1].0, parts[i + 1].0);
            }
        }
        for w in parts.windows(2) {
            let bytes = &piece[w[0].0..w[1].0];
            let id = ranks.get(bytes).copied().ok_or_else(|| {
                Error::Value(format!(
                    "the ranks file has no token for the bytes {bytes:?}: it lacks single bytes"
                ))
            })?;
            out.push(id);
        }
        Ok(())
    }

    fn encode_into(&self, text: &str, out: &mut Vec<u32>) -> Result<()> {
        let mut error = None;
        self.matcher.for_each_piece(
            text,
            &mut |piece: &str| match self.model.ranks.get(piece.as_bytes()) {
                Some(&id) => out.push(id),
                None => {
                    if let Err(e) = self.merge_piece(piece.as_bytes(), out) {
                        error.get_or_insert(e);
                    }
                }
            },
        )?;
        error.map_or(Ok(()), Err)
    }

    pub fn encode_ordinary(&self, text: &str) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(text.len() / 3);
        self.encode_into(text, &mut out)?;
        Ok(out)
    }

    pub fn encode(&self, text: &str, allowed: &[String]) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        crate::encode::Encode::encode_append(self, text, allowed, &mut out)?;
        Ok(out)
    }

    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.model.vocab.get(&id).map(|v| v.as_slice())
    }
}

impl crate::encode::Encode for RankEncoder {
    fn encode_append(&self, text: &str, allowed: &[String], out: &mut Vec<u32>) -> Result<()> {
        crate::encode::split_specials(text, &self.model.special, allowed, |part| match part {
            crate::encode::Part::Text(t) => self.encode_into(t, out),
            crate::encode::Part::Special(id) => {
                out.push(id);
                Ok(())
            }
        })
    }
}
