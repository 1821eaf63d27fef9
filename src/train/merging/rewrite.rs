//! Rewriting the sequences that hold the merged pair, and the count changes it makes: windows
//! around each occurrence are recounted before and after (SPEC 2.5).

use super::tables::{lose_now, GroupChanges, PairTable};
use super::Seq;
use crate::tokens::pairs::count_pairs;
use crate::tokens::{Pair, TokenId};

/// Replace each occurrence of `pair` in `seq` by `merged`, left to right, in place, from the
/// first occurrence `from`; returns the new length.  (In place, from the first occurrence on:
/// the same left-to-right scan that found the occurrences finds them again from there.
/// Building a copy and copying it back was three calls to `memcpy` per sequence, a twentieth
/// of a small training's phase 1.)
#[inline]
pub(super) fn merge_in_place(seq: &mut [TokenId], from: usize, pair: Pair, merged: TokenId) -> usize {
    let n = seq.len();
    let (mut read, mut write) = (from, from);
    while read < n {
        if read + 1 < n && seq[read] == pair.0 && seq[read + 1] == pair.1 {
            seq[write] = merged;
            read += 2;
        } else {
            seq[write] = seq[read];
            read += 1;
        }
        write += 1;
    }
    write
}

/// Does each occurrence of `pair` (of two different tokens) at `occurrences` in `seq` change
/// only the pairs it makes with its two neighbours?  So it is when no other occurrence
/// touches it and its left neighbour is not the pair's left token (a repeat of it would lose
/// its last token), its right neighbour not the pair's right token, and neither is
/// `merged` (a repeat of it could form).  Then a repeat beside it keeps its tokens and its
/// count, and a pair of different tokens counts once wherever it is (SPEC 2.3).
#[inline]
pub(super) fn stand_alone(seq: &[TokenId], occurrences: &[usize], pair: Pair, merged: TokenId) -> bool {
    let n = seq.len();
    let mut end = usize::MAX; // where the previous occurrence ended
    for (k, &i) in occurrences.iter().enumerate() {
        if i > 0 && (end == i || seq[i - 1] == pair.0 || seq[i - 1] == merged) {
            return false;
        }
        if i + 2 < n {
            let y = seq[i + 2];
            if y == pair.1 || y == merged || occurrences.get(k + 1) == Some(&(i + 2)) {
                return false;
            }
        }
        end = i + 2;
    }
    true
}

/// How many sequences ahead [`rewrite_group`] starts loading a sequence's span.
pub(super) const SPAN_AHEAD: usize = 4;

/// Apply `pair` -> `merged` to the sequences `indices` (sorted), whose tokens lie in `data`,
/// a slice of the arena starting at arena offset `base`.
///
/// Pair counts change only near each occurrence: a repeat of k equal tokens counts ⌊k/2⌋
/// whatever surrounds it, and a pair of two different tokens always counts once.  So each
/// occurrence at `i` gets a window from the start of the repeat holding `i - 1` to the end of the
/// repeat holding `i + 2`: its edges are repeat boundaries with unchanged tokens, and recounting the
/// window before and after the merge gives the exact change.  Long candidates in phase 2 then
/// cost per occurrence, not per token.
#[allow(clippy::too_many_arguments)]
pub(super) fn rewrite_group(
    data: &mut [TokenId],
    base: usize,
    seqs: &[Seq],
    indices: &[u32],
    pair: Pair,
    merged: TokenId,
    out: &mut GroupChanges,
    mut table: Option<(&mut [PairTable], u64)>,
) {
    let mut occurrences = std::mem::take(&mut out.occurrences);
    let mut windows = std::mem::take(&mut out.windows);
    // the merged pair's own loss, added up here: it changes in every sequence, and a look-up
    // in the changes' table per occurrence was a fifth of them
    let mut merged_lost = 0i64;
    let distinct = pair.0 != pair.1;
    for (k, &index) in indices.iter().enumerate() {
        // the sequences lie scattered over the arena: start loading the span of one a few
        // places ahead, and the tokens of the next (whose span is loaded by now).  (
        // Without these loads when the arena holds under 2^18 tokens, phase 1 of three small
        // trainings took 1.5% fewer instructions but no less time, 4.63-4.69 ms against
        // 4.58-4.66 for BPE on taylorswift.txt at 5,000; and the scan for occurrences below
        // moved into a function of its own, out of line, cost 1.4% more instructions.)
        if let Some(&ahead) = indices.get(k + SPAN_AHEAD) {
            crate::prefetch(&seqs[ahead as usize]);
        }
        if let Some(&next) = indices.get(k + 1) {
            crate::prefetch(
                data.as_ptr()
                    .wrapping_add(seqs[next as usize].start.wrapping_sub(base)),
            );
        }
        let Seq {
            start,
            len,
            weight,
            whole,
        } = seqs[index as usize];
        let seq = &mut data[start - base..start - base + len as usize];
        // 1. occurrences, left to right, non-overlapping
        occurrences.clear();
        let mut i = 0;
        while i + 1 < seq.len() {
            if seq[i] == pair.0 && seq[i + 1] == pair.1 {
                occurrences.push(i);
                i += 2;
            } else {
                i += 1;
            }
        }
        if occurrences.is_empty() {
            continue; // stale: the pair left this sequence earlier
        }
        let w = weight as i64;
        out.made += occurrences.len() as u64 * w as u64;
        // most occurrences stand alone: no other occurrence beside them, and beside them no
        // token of a repeat the merge changes (the pair's left token before, its right token
        // after) nor the merged token.  Then the pairs with their neighbours are all that
        // changes, with no windows to count.  (taylorswift.txt at 5,000, the three
        // trainings: rewriting the words 59.6 -> 49.0 M instructions, phase 1 130.6 -> 120.6 M.)
        if distinct && stand_alone(seq, &occurrences, pair, merged) {
            let n = seq.len();
            for &i in &occurrences {
                let left = (i > 0).then(|| seq[i - 1]);
                let right = (i + 2 < n).then(|| seq[i + 2]);
                match &mut table {
                    Some((shards, floor)) => {
                        if let Some(x) = left {
                            lose_now(shards, *floor, (x, pair.0), weight);
                        }
                        if let Some(y) = right {
                            lose_now(shards, *floor, (pair.1, y), weight);
                        }
                    }
                    None => {
                        if let Some(x) = left {
                            out.add((x, pair.0), -w);
                        }
                        if let Some(y) = right {
                            out.add((pair.1, y), -w);
                        }
                    }
                }
                if let Some(x) = left {
                    out.add_made((x, merged), w, index);
                }
                if let Some(y) = right {
                    out.add_made((merged, y), w, index);
                }
            }
            merged_lost += occurrences.len() as i64 * w;
            let write = merge_in_place(seq, occurrences[0], pair, merged);
            out.lengths.push((index, write as u32));
            out.became_single |= write == 1 && whole;
            continue;
        }
        // 2. windows around the occurrences, merged when they touch
        windows.clear();
        for &i in &occurrences {
            let mut lo = i;
            if i > 0 {
                lo = i - 1;
                while lo > 0 && seq[lo - 1] == seq[lo] {
                    lo -= 1;
                }
            }
            let mut hi = (i + 2).min(seq.len());
            if hi < seq.len() {
                hi += 1;
                while hi < seq.len() && seq[hi] == seq[hi - 1] {
                    hi += 1;
                }
            }
            match windows.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => windows.push((lo, hi)),
            }
        }
        // 3. the old windows' pairs go, the merged sequence is built
        for &(lo, hi) in &windows {
            count_pairs(&seq[lo..hi], |p| {
                if p == pair {
                    merged_lost += w;
                } else {
                    out.add(p, -w);
                }
            });
        }
        let write = merge_in_place(seq, occurrences[0], pair, merged);
        let new_seq = &seq[..write];
        // 4. the new windows' pairs come (positions shift by one per earlier occurrence)
        let mut before = 0; // occurrences left of the current window
        for &(lo, hi) in &windows {
            while before < occurrences.len() && occurrences[before] < lo {
                before += 1;
            }
            let inside = occurrences[before..].iter().take_while(|&&i| i < hi).count();
            let (nlo, nhi) = (lo - before, hi - before - inside);
            count_pairs(&new_seq[nlo..nhi], |p| {
                if p.0 == merged || p.1 == merged {
                    out.add_made(p, w, index);
                } else {
                    out.add(p, w);
                }
            });
            before += inside;
        }
        out.lengths.push((index, write as u32));
        out.became_single |= write == 1 && whole;
    }
    if merged_lost != 0 {
        out.add(pair, -merged_lost);
    }
    out.occurrences = occurrences;
    out.windows = windows;
}
