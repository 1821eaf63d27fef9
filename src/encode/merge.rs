//! The merge kernels: a sequence of tokens merged by rank, smallest first and never going
//! back (SPEC 7 step 3 for regular merges, step 4 for supermerges).  Encoding, minbpe and
//! tiktoken's ranks share them; which kernel runs depends only on the length.

use crate::tokens::TokenId;

/// Pieces longer than this (in bytes) are merged with a heap instead of a scan.
pub(super) const LONG_PIECE: usize = 48;

/// Supermerge runs up to this many tokens use [`merge_small`].
pub(super) const SMALL_RUN: usize = 32;

/// Supermerge runs of 4 up to this many tokens use [`merge_tiny`].
pub(super) const TINY_RUN: usize = 8;

/// A packed rank for "no supermerge" (larger than every real one).
pub(super) const NO_PAIR: u64 = u64::MAX;

/// Merge `tokens` by rank: repeatedly take the adjacent pair with the smallest rank (never
/// going back to a smaller rank than the last one applied) and apply it at all its
/// non-overlapping positions, left to right.  `rank(a, b)` gives `(rank, merged id)`.
///
/// Short sequences use a plain scan; long ones a heap, which keeps a megabyte-long pretoken
/// (a run of letters with no space) from taking quadratic time.  Vocab then form a linked
/// list and a min-heap holds `(rank, position)` of adjacent pairs: the smallest rank is applied
/// at all its positions, left to right (a position whose tokens changed is skipped, which is
/// the non-overlap rule), and new neighbours enter the heap only with a larger rank (a smaller
/// one can never apply any more).
pub fn merge_by_rank(
    mut tokens: Vec<TokenId>,
    rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>,
    out: &mut Vec<TokenId>,
) {
    if tokens.len() <= LONG_PIECE {
        let len = merge_scan(&mut tokens, rank, true);
        out.extend_from_slice(&tokens[..len]);
        return;
    }
    merge_heap(&mut tokens, rank, true);
    out.extend_from_slice(&tokens);
}

/// [`merge_scan`] for long sequences, in O(n log n): a min-heap of `(rank, position, left,
/// right)` stands for the scan's search for the smallest rank.  Entries are popped rank by
/// rank; those of one rank, leftmost first, are one pass of the scan.  An entry whose tokens
/// have changed since it was pushed is stale and skipped.  The pairs a merge makes are held
/// back until its pass ends and then pushed, as the scan looks at them only in its next
/// pass; with `ascending` (regular merges) those at or below the current rank are dropped,
/// as the scan's floor would.  Tokens form a linked list by position.  Checked against the
/// scan by `the_heap_merges_long_pieces_like_the_scan` (merges) and
/// `tests/test_supermerge_runs.py` (supermerge runs of up to 300 tokens against the
/// reference).
pub(crate) fn merge_heap(
    tokens: &mut Vec<TokenId>,
    rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>,
    ascending: bool,
) {
    if (BUCKETED..=MAX_BUCKETED).contains(&tokens.len()) {
        return merge_buckets(tokens, rank, ascending);
    }
    merge_heap_entries(tokens, rank, ascending);
}

/// Sequences of at least this many tokens are merged by [`merge_buckets`].
pub(crate) const BUCKETED: usize = 1024;

/// [`merge_buckets`] keeps positions in 31 bits (a dead position's link has the top bit).
const MAX_BUCKETED: usize = (1 << 31) - 1;

/// The flag of a position that a merge has absorbed into the position on its left.
const DEAD: u32 = 1 << 31;

/// [`merge_heap`] for sequences of [`BUCKETED`] tokens or more: the same passes, with 4 bytes
/// of links per token and 4 bytes per pending pair (the heap of `(rank, position, left,
/// right)` entries took 24 bytes per pair and 17 per token, and its pops missed the cache:
/// a 16 MB piece took most of a 26 s model load and 2 GB).
///
/// * The pending pairs are kept by rank: `buckets[rank]` lists the positions where that pair
///   was made, and a small heap holds the ranks that have a list.  A pass takes the smallest
///   rank's list, sorts it (the scan goes left to right, which decides overlapping `(t, t)`
///   pairs) and merges every position that still holds that pair.  A pair is recognised by
///   its rank alone (one rank is one merge), so an entry needs no copy of its tokens: a
///   position whose pair has changed since is skipped.  No merge of a pass makes a pair of
///   the pass's own rank (the new token differs from both of its parts), so a list is
///   complete when its pass starts.
/// * `link[i]` is the next live position after a live `i` (`n` at the end); a position
///   absorbed by a merge holds `DEAD | i` of the position that absorbed it, so the live
///   position before `i` is found by following those links from `i - 1`, shortened as they
///   are followed (each position dies once, so this is near constant time amortised).
///
/// Time O(n log n) (the sorts), memory 4 bytes per token plus the pending pairs.
fn merge_buckets(
    tokens: &mut Vec<TokenId>,
    rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>,
    ascending: bool,
) {
    let n = tokens.len();
    let tok = &mut tokens[..];
    let mut link: Vec<u32> = (1..=n as u32).collect();
    let mut pending = Pending::new(n);
    for i in 0..n - 1 {
        if let Some((r, merged)) = rank(tok[i], tok[i + 1]) {
            pending.push(r, (tok[i], tok[i + 1]), merged, i);
        }
    }
    // the live position at or before `k`, links on the way pointed straight at it
    let find = |link: &mut [u32], k: usize| -> usize {
        let mut root = k;
        while link[root] & DEAD != 0 {
            root = (link[root] & !DEAD) as usize;
        }
        let mut c = k;
        while link[c] & DEAD != 0 {
            let up = (link[c] & !DEAD) as usize;
            link[c] = DEAD | root as u32;
            c = up;
        }
        root
    };
    while let Some((current, (a, b), merged, mut list)) = pending.pop() {
        list.sort_unstable();
        for &at in &list {
            let i = at as usize;
            if link[i] & DEAD != 0 {
                continue; // absorbed, by a merge of this pass on its left among others
            }
            let j = link[i] as usize;
            if j >= n || tok[i] != a || tok[j] != b {
                continue; // the pair here has changed since it was listed
            }
            tok[i] = merged;
            let k = link[j];
            link[j] = DEAD | at;
            link[i] = k;
            if i > 0 {
                let p = find(&mut link, i - 1);
                if let Some((r, m)) = rank(tok[p], merged) {
                    if !ascending || r > current {
                        pending.push(r, (tok[p], merged), m, p);
                    }
                }
            }
            if (k as usize) < n {
                let right = tok[k as usize];
                if let Some((r, m)) = rank(merged, right) {
                    if !ascending || r > current {
                        pending.push(r, (merged, right), m, i);
                    }
                }
            }
        }
        pending.recycle(list);
    }
    let (mut w, mut i) = (0, 0);
    while i < n {
        tok[w] = tok[i];
        w += 1;
        i = link[i] as usize;
    }
    tokens.truncate(w);
}

/// A rank's pending list: the rank, its pair, the pair's result, the positions.
type RankList = (u32, (TokenId, TokenId), TokenId, Vec<u32>);

/// The pending pairs of [`merge_buckets`]: for each rank that has some, its pair, the pair's
/// result and the positions where it was made; and a heap of those ranks.  Ranks below half
/// the sequence's length find their list through a vector (no hashing: ranks of regular
/// merges are merge indices, small beside a long piece), larger ones through a hash map.
struct Pending {
    /// rank -> its list in `lists` + 1 (0: none), for ranks below `dense`
    near: Vec<u32>,
    dense: usize,
    far: rustc_hash::FxHashMap<u32, u32>,
    lists: Vec<RankList>,
    /// slots of `lists` whose pass is over
    free: Vec<u32>,
    /// an emptied list's memory, for the next list
    spare: Vec<Vec<u32>>,
    order: std::collections::BinaryHeap<std::cmp::Reverse<u32>>,
    /// the rank and slot of the last push (runs of one pair push to one list)
    last: (u32, u32),
}

impl Pending {
    fn new(n: usize) -> Pending {
        Pending {
            near: Vec::new(),
            dense: n / 2,
            far: Default::default(),
            lists: Vec::new(),
            free: Vec::new(),
            spare: Vec::new(),
            order: Default::default(),
            last: (u32::MAX, 0),
        }
    }

    #[inline]
    fn push(&mut self, r: u32, pair: (TokenId, TokenId), merged: TokenId, at: usize) {
        if self.last.0 == r {
            self.lists[self.last.1 as usize].3.push(at as u32);
            return;
        }
        let slot = if (r as usize) < self.dense {
            if self.near.len() <= r as usize {
                self.near.resize(r as usize + 1, 0);
            }
            self.near[r as usize]
        } else {
            self.far.get(&r).copied().unwrap_or(0)
        };
        let slot = if slot != 0 {
            slot - 1
        } else {
            let list = (r, pair, merged, self.spare.pop().unwrap_or_default());
            let slot = match self.free.pop() {
                Some(s) => {
                    self.lists[s as usize] = list;
                    s
                }
                None => {
                    self.lists.push(list);
                    (self.lists.len() - 1) as u32
                }
            };
            if (r as usize) < self.dense {
                self.near[r as usize] = slot + 1;
            } else {
                self.far.insert(r, slot + 1);
            }
            self.order.push(std::cmp::Reverse(r));
            slot
        };
        self.lists[slot as usize].3.push(at as u32);
        self.last = (r, slot);
    }

    /// The smallest rank that has a list, with its pair, result and positions.
    fn pop(&mut self) -> Option<RankList> {
        let std::cmp::Reverse(r) = self.order.pop()?;
        let slot = if (r as usize) < self.dense {
            std::mem::take(&mut self.near[r as usize])
        } else {
            self.far.remove(&r).expect("a rank in the heap has a list")
        } - 1;
        self.free.push(slot);
        if self.last.0 == r {
            self.last = (u32::MAX, 0);
        }
        let (r, pair, merged, list) = std::mem::take(&mut self.lists[slot as usize]);
        Some((r, pair, merged, list))
    }

    fn recycle(&mut self, mut list: Vec<u32>) {
        list.clear();
        if self.spare.len() < 8 {
            self.spare.push(list);
        }
    }
}

/// [`merge_heap`] with a heap of `(rank, position, left, right)` entries, for sequences
/// shorter than [`BUCKETED`] (or too long for its 31-bit positions).
fn merge_heap_entries(
    tokens: &mut Vec<TokenId>,
    rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>,
    ascending: bool,
) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let n = tokens.len();
    if n < 2 {
        return;
    }
    const NONE: usize = usize::MAX;
    let token = tokens;
    let mut next: Vec<usize> = (1..=n).collect(); // n = end
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect(); // NONE = start
    let mut alive = vec![true; n];
    let mut heap: BinaryHeap<Reverse<(u32, usize, TokenId, TokenId)>> = (0..n - 1)
        .filter_map(|i| rank(token[i], token[i + 1]).map(|(r, _)| Reverse((r, i, token[i], token[i + 1]))))
        .collect();
    let mut made = Vec::new();
    while let Some(&Reverse((current, _, _, _))) = heap.peek() {
        while let Some(&Reverse((r, i, a, b))) = heap.peek() {
            if r != current {
                break;
            }
            heap.pop();
            let j = next[i];
            if !alive[i] || j >= n || token[i] != a || token[j] != b {
                continue; // stale, or overlapping an occurrence just merged
            }
            let merged = rank(a, b).expect("a pair in the heap has a rank").1;
            token[i] = merged;
            alive[j] = false;
            next[i] = next[j];
            if next[i] < n {
                prev[next[i]] = i;
            }
            if prev[i] != NONE {
                made.push((prev[i], i));
            }
            if next[i] < n {
                made.push((i, next[i]));
            }
        }
        for (p, q) in made.drain(..) {
            // a pair noted by a merge may have changed since, by a later merge of the pass
            if !alive[p] || !alive[q] || next[p] != q {
                continue;
            }
            if let Some((r, _)) = rank(token[p], token[q]) {
                if !ascending || r > current {
                    heap.push(Reverse((r, p, token[p], token[q])));
                }
            }
        }
    }
    let mut w = 0;
    let mut i = 0;
    while i < n {
        token[w] = token[i];
        w += 1;
        i = next[i];
    }
    token.truncate(w);
}

/// [`merge_small`] for a run of `n` tokens (4 to [`TINY_RUN`]) at the start of `w`, whose
/// other entries are an id that is in no supermerge; returns the run's new length.
///
/// Every step works on the whole fixed width, with selects instead of loops whose length is
/// the run's: where the smallest rank is, whether it occurs again, closing the gap.  With
/// `merge_small`'s loops, their exits were about 40 % of a BoundlessBPE model's mispredicted
/// branches in supermerges (callgrind, 32K model, 1 MB of Gutenberg).  The padding makes the
/// pairs past the run's end look up as "no supermerge", so no step needs the length.
pub(super) fn merge_tiny(
    w: &mut [TokenId; TINY_RUN + 1],
    n: usize,
    rank: impl Fn(TokenId, TokenId) -> u64,
) -> usize {
    debug_assert!((2..=TINY_RUN).contains(&n));
    // r[i]: the pair (w[i], w[i + 1]); NO_PAIR from the run's last token on
    let mut r = [NO_PAIR; TINY_RUN + 1];
    for i in 0..n - 1 {
        r[i] = rank(w[i], w[i + 1]);
    }
    let mut len = n;
    loop {
        let (mut best, mut at) = (r[0], 0);
        for (i, &x) in r.iter().enumerate().take(TINY_RUN).skip(1) {
            let smaller = x < best;
            best = if smaller { x } else { best };
            at = if smaller { i } else { at };
        }
        if best == NO_PAIR {
            return len;
        }
        let mut again = false; // a second occurrence that does not overlap the first
        for (i, &x) in r.iter().enumerate().take(TINY_RUN) {
            again |= (i >= at + 2) & (x == best);
        }
        if again {
            // rare: the general pass, then the padding put back
            let mut run = w[..len].to_vec();
            len = merge_small(&mut run, &rank);
            let pad = w[TINY_RUN];
            w[..len].copy_from_slice(&run[..len]);
            w[len..].fill(pad);
            return len;
        }
        w[at] = best as TokenId; // the low half
        for i in 0..TINY_RUN {
            // masks, not `if`: the compiler made the selects branches
            let keep = ((i <= at) as u64).wrapping_neg();
            w[i] = (w[i] & keep as u32) | (w[i + 1] & !keep as u32);
            r[i] = (r[i] & keep) | (r[i + 1] & !keep);
        }
        len -= 1;
        // the new token's two pairs (at the start, the right one twice)
        let left = at.saturating_sub(1);
        r[left] = rank(w[left], w[left + 1]);
        r[at] = rank(w[at], w[at + 1]);
    }
}

/// Supermerges on a run of at most [`SMALL_RUN`] tokens, in place; returns its new length.
/// `rank(a, b)` is the packed `index << 32 | result` of the pair or [`NO_PAIR`].  The same
/// steps as [`merge_scan`] without a floor: repeatedly the smallest index, at all its
/// non-overlapping positions left to right, and only pairs next to a new token looked up
/// again.
pub(super) fn merge_small(run: &mut [TokenId], rank: impl Fn(TokenId, TokenId) -> u64) -> usize {
    let n = run.len();
    debug_assert!(n <= SMALL_RUN);
    if n < 2 {
        return n;
    }
    if n == 2 {
        // the most common run: one lookup
        let r = rank(run[0], run[1]);
        if r == NO_PAIR {
            return 2;
        }
        run[0] = r as TokenId;
        return 1;
    }
    if n == 3 {
        // the next most common run, without the scan's loops (same steps)
        let (r0, r1) = (rank(run[0], run[1]), rank(run[1], run[2]));
        if r0 == NO_PAIR && r1 == NO_PAIR {
            return 3;
        }
        // a tie is the pair twice, `(t, t), (t, t)`: the leftmost goes first
        let (left, right) = if r0 <= r1 {
            (r0 as TokenId, run[2])
        } else {
            (run[0], r1 as TokenId)
        };
        let r = rank(left, right);
        if r == NO_PAIR {
            run[0] = left;
            run[1] = right;
            return 2;
        }
        run[0] = r as TokenId;
        return 1;
    }
    // ranks[i]: the pair (run[i], run[i + 1])
    let mut ranks = [NO_PAIR; SMALL_RUN];
    for i in 0..n - 1 {
        ranks[i] = rank(run[i], run[i + 1]);
    }
    let mut len = n;
    loop {
        // the smallest rank and where it first occurs
        let (mut best, mut at) = (ranks[0], 0);
        for (i, &r) in ranks[..len - 1].iter().enumerate().skip(1) {
            if r < best {
                (best, at) = (r, i);
            }
        }
        if best == NO_PAIR {
            return len;
        }
        let merged = best as TokenId; // the low half
        if !ranks[(at + 2).min(len - 1)..len - 1].contains(&best) {
            // the pair occurs once (apart from an overlapping `(t, t)` that this merge uses
            // up): merge it, close the gap, look up its two new neighbours
            run[at] = merged;
            for i in at + 1..len - 1 {
                run[i] = run[i + 1];
            }
            for i in at + 1..len - 2 {
                ranks[i] = ranks[i + 1];
            }
            len -= 1;
            if len < 2 {
                return len;
            }
            if at > 0 {
                ranks[at - 1] = rank(run[at - 1], merged);
            }
            if at + 1 < len {
                ranks[at] = rank(merged, run[at + 1]);
            }
            continue;
        }
        // several occurrences: all of them, left to right, before any new pair counts
        let mut fresh: u64 = 0; // bit j: run[j] was just made
        let (mut read, mut write) = (0, 0);
        while read < len {
            if read + 1 < len && ranks[read] == best {
                run[write] = merged;
                fresh |= 1 << write;
                read += 2;
            } else {
                run[write] = run[read];
                if read + 1 < len {
                    ranks[write] = ranks[read]; // still right unless the next token is new
                }
                read += 1;
            }
            write += 1;
        }
        len = write;
        if len < 2 {
            return len;
        }
        for j in 0..len - 1 {
            if fresh >> j & 3 != 0 {
                ranks[j] = rank(run[j], run[j + 1]);
            }
        }
    }
}

/// The scan for short sequences: repeatedly apply the pair with the smallest rank at all its
/// non-overlapping positions, left to right (as [`apply_merge`]); with `ascending`, only ranks
/// above the last one applied count (regular merges), else any (supermerges).  The result is
/// the first of the returned number of tokens.
///
/// Each adjacent pair's `(rank, merged)` is looked up once and kept; after a merge, only the
/// pairs next to a new token are looked up again.  The plain scan looked up every pair after
/// every merge: on a BoundlessBPE model that was 16 % of encoding (perf, 4 MB of Gutenberg,
/// mostly supermerge runs of common words).  A rank is one merge, so the positions holding
/// the smallest rank are exactly the occurrences of its pair.
pub(crate) fn merge_scan(
    tokens: &mut [TokenId],
    rank: impl Fn(TokenId, TokenId) -> Option<(u32, TokenId)>,
    ascending: bool,
) -> usize {
    const NONE: (u32, TokenId) = (u32::MAX, 0);
    let n = tokens.len();
    if n < 2 {
        return n;
    }
    // ranks[i]: the pair (tokens[i], tokens[i + 1]); fresh[i]: tokens[i] was just made
    let mut ranks: smallvec::SmallVec<[(u32, TokenId); 32]> = tokens
        .windows(2)
        .map(|w| rank(w[0], w[1]).unwrap_or(NONE))
        .collect();
    let mut fresh: smallvec::SmallVec<[bool; 32]> = smallvec::smallvec![false; n];
    let mut floor = 0u32; // ranks below this can no longer apply
    let mut len = n; // the tokens left, at the front of `tokens`
    loop {
        let mut best = NONE;
        for &r in &ranks[..len - 1] {
            if r.0 >= floor && r.0 < best.0 {
                best = r;
            }
        }
        if best.0 == u32::MAX {
            return len;
        }
        let (mut read, mut write) = (0, 0);
        while read < len {
            if read + 1 < len && ranks[read].0 == best.0 {
                tokens[write] = best.1;
                fresh[write] = true;
                read += 2;
            } else {
                tokens[write] = tokens[read];
                fresh[write] = false;
                if read + 1 < len {
                    ranks[write] = ranks[read]; // still right unless the next token is new
                }
                read += 1;
            }
            write += 1;
        }
        len = write;
        if write < 2 {
            return write;
        }
        for j in 0..write - 1 {
            if fresh[j] || fresh[j + 1] {
                ranks[j] = rank(tokens[j], tokens[j + 1]).unwrap_or(NONE);
            }
        }
        if ascending {
            floor = best.0 + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::pairs::apply_merge;
    use rustc_hash::FxHashMap;

    type Pairs = FxHashMap<(TokenId, TokenId), (u32, TokenId)>;

    /// The plain scan: every pair looked up after every merge, the smallest rank applied (with
    /// `ascending`, only ranks above the last one applied).
    fn plain_scan(start: &[TokenId], table: &Pairs, ascending: bool) -> Vec<TokenId> {
        let mut plain = start.to_vec();
        let mut last: i64 = -1;
        loop {
            let mut best: Option<(u32, (TokenId, TokenId), TokenId)> = None;
            for w in plain.windows(2) {
                if let Some(&(r, merged)) = table.get(&(w[0], w[1])) {
                    if (!ascending || r as i64 > last) && best.is_none_or(|b| r < b.0) {
                        best = Some((r, (w[0], w[1]), merged));
                    }
                }
            }
            let Some((r, pair, merged)) = best else { break };
            apply_merge(&mut plain, pair, merged);
            last = r as i64;
        }
        plain
    }

    /// `table` as the packed ranks of the supermerge scans.
    fn packed(table: &Pairs) -> impl Fn(TokenId, TokenId) -> u64 + Copy + '_ {
        |a, b| {
            table
                .get(&(a, b))
                .map_or(NO_PAIR, |&(r, m)| (r as u64) << 32 | m as u64)
        }
    }

    /// [`merge_tiny`] on `start` padded with an id in no pair (as `supermerge` pads), the
    /// padding checked to be left as it was.
    fn tiny_merged(start: &[TokenId], table: &Pairs) -> Vec<TokenId> {
        let mut w = [TokenId::MAX; TINY_RUN + 1];
        w[..start.len()].copy_from_slice(start);
        let n = merge_tiny(&mut w, start.len(), packed(table));
        assert!(w[n..].iter().all(|&t| t == TokenId::MAX), "{w:?}");
        w[..n].to_vec()
    }

    /// [`merge_scan`], [`merge_heap`] and [`merge_small`] (the supermerges' scan) against the
    /// plain scan (every pair looked up after every merge).
    #[test]
    fn the_kept_ranks_scan_merges_like_the_plain_scan() {
        let mut rng = crate::XorShift(0x0BAD_5EED_1234_5678);
        for round in 0..6000 {
            let alphabet = 2 + rng.below(3) as TokenId;
            // random pairs with distinct ranks; results above the alphabet
            let mut table = Pairs::default();
            let tokens_made = 2 + rng.below(12) as TokenId;
            for k in 0..tokens_made {
                // half of the tables use made tokens in pairs of smaller ranks than their own
                // (as a hand-made model file may), which the ascending order never meets
                let top = alphabet + if round % 3 == 0 { tokens_made } else { k };
                let pair = (rng.below(top as u64) as TokenId, rng.below(top as u64) as TokenId);
                let r = table.len() as u32 * 3 + rng.below(3) as u32;
                table.entry(pair).or_insert((r, alphabet + k));
            }
            let len = 1 + rng.below(if round % 4 < 2 { 40 } else { 200 }) as usize;
            let start: Vec<TokenId> = (0..len).map(|_| rng.below(alphabet as u64) as TokenId).collect();
            let ascending = round % 2 == 0;
            let plain = plain_scan(&start, &table, ascending);
            let mut kept = start.clone();
            let left = merge_scan(&mut kept, |a, b| table.get(&(a, b)).copied(), ascending);
            kept.truncate(left);
            assert_eq!(plain, kept, "{start:?} {table:?}");
            let mut heaped = start.clone();
            merge_heap_entries(&mut heaped, |a, b| table.get(&(a, b)).copied(), ascending);
            assert_eq!(plain, heaped, "heap: {start:?} {table:?}");
            let mut bucketed = start.clone();
            merge_buckets(&mut bucketed, |a, b| table.get(&(a, b)).copied(), ascending);
            assert_eq!(plain, bucketed, "buckets: {start:?} {table:?}");
            if !ascending && len <= SMALL_RUN {
                let mut small = start.clone();
                let n = merge_small(&mut small, packed(&table));
                assert_eq!(plain, small[..n], "{start:?} {table:?}");
                if (2..=TINY_RUN).contains(&len) {
                    assert_eq!(plain, tiny_merged(&start, &table), "tiny: {start:?} {table:?}");
                }
            }
        }
    }

    /// [`merge_buckets`] against the entries heap on sequences of thousands of tokens:
    /// random tables, repeated patterns (long runs of one pair, `(t, t)` runs of every
    /// parity) and tables trained-like (each token made from earlier ones).
    #[test]
    fn the_bucketed_merge_merges_long_sequences_like_the_heap() {
        let mut rng = crate::XorShift(0x5EED_0FB0_C4E7_5A11);
        for round in 0..300 {
            let alphabet = 1 + rng.below(4) as TokenId;
            let mut table = Pairs::default();
            let tokens_made = 1 + rng.below(40) as TokenId;
            for k in 0..tokens_made {
                let top = alphabet + if round % 3 == 0 { tokens_made } else { k };
                let pair = (rng.below(top as u64) as TokenId, rng.below(top as u64) as TokenId);
                let r = table.len() as u32 * 2 + rng.below(2) as u32;
                table.entry(pair).or_insert((r, alphabet + k));
            }
            let len = BUCKETED + rng.below(6000) as usize;
            let period = 1 + rng.below(5) as usize;
            let motif: Vec<TokenId> = (0..period)
                .map(|_| rng.below(alphabet as u64) as TokenId)
                .collect();
            let start: Vec<TokenId> = (0..len)
                .map(|i| {
                    if round % 2 == 0 || rng.below(50) == 0 {
                        rng.below(alphabet as u64) as TokenId
                    } else {
                        motif[i % period]
                    }
                })
                .collect();
            for ascending in [true, false] {
                let mut heaped = start.clone();
                merge_heap_entries(&mut heaped, |a, b| table.get(&(a, b)).copied(), ascending);
                let mut bucketed = start.clone();
                merge_buckets(&mut bucketed, |a, b| table.get(&(a, b)).copied(), ascending);
                assert_eq!(heaped, bucketed, "round {round}, ascending {ascending}");
                if round % 30 == 0 {
                    assert_eq!(plain_scan(&start, &table, ascending), heaped);
                }
            }
        }
    }

    /// [`merge_tiny`] on every short run over a tiny alphabet, against the plain scan, with
    /// tables where made tokens form pairs of smaller index (so that merging a pair's
    /// occurrences one at a time, instead of all of them before any new pair counts, fails).
    #[test]
    fn the_tiny_merge_merges_like_the_plain_scan() {
        let mut rng = crate::XorShift(0x7777_1234_0BAD_F00D);
        for _ in 0..250 {
            let alphabet = 2 + rng.below(2) as TokenId;
            let mut table = Pairs::default();
            let tokens_made = 1 + rng.below(8) as TokenId;
            for k in 0..tokens_made {
                let top = (alphabet + tokens_made) as u64;
                let pair = (rng.below(top) as TokenId, rng.below(top) as TokenId);
                let r = table.len() as u32;
                table.entry(pair).or_insert((r, alphabet + k));
            }
            for len in 2..=TINY_RUN {
                // every run of this length over the alphabet
                for code in 0..(alphabet as u64).pow(len as u32) {
                    let start: Vec<TokenId> = (0..len)
                        .map(|i| (code / (alphabet as u64).pow(i as u32) % alphabet as u64) as TokenId)
                        .collect();
                    let plain = plain_scan(&start, &table, false);
                    assert_eq!(plain, tiny_merged(&start, &table), "{start:?} {table:?}");
                }
            }
        }
    }
}
