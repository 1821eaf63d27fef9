//! Many texts at once on the current rayon pool.
//!
//! The texts are cut into groups of consecutive texts of about the same number of bytes,
//! several per thread, so that work stealing evens out long and short lines.  Each group
//! fills its own buffers (all its ids, and where each text ends), so there is no allocation
//! per text and no shared state.  The groups are *not* joined into one vector afterwards:
//! that copy, and the conversion to little-endian bytes after it, was a serial tail of one
//! pass over all ids per call.  Instead [`Batch::write_ids_le`] writes every group straight
//! into its own slice of the caller's output buffer, in parallel, and Python lists are built
//! from the groups' slices ([`Batch::texts`]).

use std::mem::MaybeUninit;
use std::sync::Mutex;

use rayon::prelude::*;

use super::Encode;
use crate::error::Result;
use crate::tokens::TokenId;

/// Groups per thread: enough for work stealing to even out uneven texts.
const GROUPS_PER_THREAD: usize = 16;

/// A group is at least this many bytes of text (smaller ones cost more to schedule than
/// they take).
const MIN_GROUP_BYTES: usize = 1 << 16;

/// The ids of a batch of texts, group by group, in the texts' order.
pub struct Batch {
    groups: Vec<Group>,
}

/// Id buffers of batches that are done, kept for the next batch, at most [`SPARE_BYTES`] of
/// them.  A fresh buffer of a few hundred kilobytes comes from pages the allocator has
/// handed back to the system, and the kernel zeroes every page on first touch: perf put 9 %
/// of a 32K model's `encode_batch` samples in that zeroing (`clear_page_erms`), each call
/// anew.  A kept buffer's pages are already mapped.
static SPARE: Mutex<Vec<Vec<TokenId>>> = Mutex::new(Vec::new());

/// The most buffer capacity [`SPARE`] keeps, in bytes (so a process that encoded one large
/// batch keeps at most this much after it).
const SPARE_BYTES: usize = 32 << 20;

/// The kept buffers' lock, held across a `fork` (see [`crate::threads::hold_for_fork`]) so
/// that the child never inherits it held by a thread it does not have.
pub fn hold_for_fork() -> std::sync::MutexGuard<'static, Vec<Vec<TokenId>>> {
    SPARE.lock().unwrap_or_else(|e| e.into_inner())
}

/// An empty id buffer for about `want` ids: a kept one when there is one.
fn take_buffer(want: usize) -> Vec<TokenId> {
    let spare = SPARE.lock().unwrap_or_else(|e| e.into_inner()).pop();
    match spare {
        Some(mut v) => {
            v.reserve(want);
            v
        }
        None => Vec::with_capacity(want),
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        keep_buffers(self.groups.drain(..));
    }
}

/// Keep the id buffers of `groups` in [`SPARE`], up to [`SPARE_BYTES`].
fn keep_buffers(groups: impl Iterator<Item = Group>) {
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    let mut kept: usize = spare.iter().map(|v| v.capacity() * 4).sum();
    for g in groups {
        let mut ids = g.ids;
        if kept + ids.capacity() * 4 > SPARE_BYTES {
            break;
        }
        kept += ids.capacity() * 4;
        ids.clear();
        spare.push(ids);
    }
}

struct Group {
    ids: Vec<TokenId>,
    /// end of each text's ids within `ids`
    ends: Vec<u32>,
}

impl Group {
    /// Each of the group's texts' ids, in order.
    fn texts(&self) -> impl Iterator<Item = &[TokenId]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(move |(a, b)| &self.ids[a as usize..b as usize])
    }
}

/// Write `bytes` into `dst` (of the same length), which need not be initialised.
#[inline(always)]
fn put(dst: &mut [MaybeUninit<u8>], bytes: &[u8]) {
    for (d, &b) in dst.iter_mut().zip(bytes) {
        d.write(b);
    }
}

/// Cut `texts` into runs of consecutive texts of about `total / (threads * GROUPS_PER_THREAD)`
/// bytes each; returns the index where each run ends.
fn group_ends(texts: &[&str], threads: usize) -> Vec<usize> {
    let total: usize = texts.iter().map(|t| t.len()).sum();
    let target = (total / (threads * GROUPS_PER_THREAD)).max(MIN_GROUP_BYTES);
    let mut ends = Vec::new();
    let mut bytes = 0;
    for (i, t) in texts.iter().enumerate() {
        bytes += t.len();
        if bytes >= target {
            ends.push(i + 1);
            bytes = 0;
        }
    }
    if ends.last() != Some(&texts.len()) {
        ends.push(texts.len());
    }
    ends
}

/// Whether `texts` make a single group, which [`encode`] then encodes on the calling thread:
/// a caller can skip handing such a batch to a pool.  (Handing over and waiting cost a small
/// batch far more than its encoding: 8 texts of 38 characters took 59 µs through a pool of
/// one thread, 5 µs on the caller's.)
pub fn is_one_group(texts: &[&str]) -> bool {
    // (`group_ends` cuts a group only once it has `MIN_GROUP_BYTES` or more)
    texts.iter().map(|t| t.len()).sum::<usize>() < MIN_GROUP_BYTES
}

/// Encode `texts` in parallel on the current pool (one group on the calling thread); see the
/// module's notes.
pub fn encode<E: Encode + ?Sized>(encoder: &E, texts: &[&str], allowed: &super::Allowed) -> Result<Batch> {
    // outside a pool (a batch of one group, run on the caller's thread) nothing runs in
    // parallel: rayon's global pool is never started (see `crate::threads::parallel`)
    let in_pool = rayon::current_thread_index().is_some();
    let threads = if in_pool { rayon::current_num_threads() } else { 1 };
    let ends = group_ends(texts, threads);
    let per_thread = bytes_per_thread(texts, threads);
    let one = |g: usize| encode_group(encoder, texts, allowed, &ends, g, per_thread);
    let groups = if ends.len() == 1 || !in_pool {
        (0..ends.len()).map(one).collect::<Result<Vec<Group>>>()?
    } else {
        (0..ends.len())
            .into_par_iter()
            .map(one)
            .collect::<Result<Vec<Group>>>()?
    };
    Ok(Batch { groups })
}

/// About how many bytes of `texts` each of `threads` threads encodes.
fn bytes_per_thread(texts: &[&str], threads: usize) -> usize {
    texts.iter().map(|t| t.len()).sum::<usize>() / threads.max(1)
}

/// Group `g` of `texts` (its texts end at `ends[g]`, start at `ends[g - 1]`), encoded; each
/// thread encodes about `per_thread` bytes of the batch (the caches' hint, see
/// [`super::cache::ahead`]).
fn encode_group<E: Encode + ?Sized>(
    encoder: &E,
    texts: &[&str],
    allowed: &super::Allowed,
    ends: &[usize],
    g: usize,
    per_thread: usize,
) -> Result<Group> {
    super::cache::ahead(per_thread, || encode_texts(encoder, texts, allowed, ends, g))
}

fn encode_texts<E: Encode + ?Sized>(
    encoder: &E,
    texts: &[&str],
    allowed: &super::Allowed,
    ends: &[usize],
    g: usize,
) -> Result<Group> {
    let start = if g == 0 { 0 } else { ends[g - 1] };
    let chunk = &texts[start..ends[g]];
    let bytes: usize = chunk.iter().map(|t| t.len()).sum();
    let mut group = Group {
        ids: take_buffer(bytes / 4 + 16),
        ends: Vec::with_capacity(chunk.len()),
    };
    for t in chunk {
        encoder.encode_append(t, allowed, &mut group.ids)?;
        let end = u32::try_from(group.ids.len())
            .map_err(|_| crate::error::Error::Value("a batch group holds more than 2**32 ids".into()))?;
        group.ends.push(end);
    }
    Ok(group)
}

/// Encode `texts` on `pool`'s threads and hand each text's ids to `take`, in order, on the
/// calling thread, while the pool goes on with the groups after it: what `take` does (such
/// as making one Python list per text, which needs the GIL and so one thread) overlaps the
/// encoding instead of following it.  `wait(f)` runs `f`, which blocks until the next group
/// is done (a caller can let go of a lock meanwhile: Python's `encode_batch` releases the
/// GIL).  The first error, of encoding or of `take`, in the texts' order, ends the call; the
/// groups not yet started are then skipped.
///
/// Encoding all groups first and then making the lists took the lists' whole time on top of
/// half the encoding's; here they overlap, with three threads on two cores (the pool's two
/// and the caller).  Measured on 10 MB of Gutenberg, one list per text, two threads, 15 and
/// 11 interleaved calls in one process: 32K BPE median 59.3 -> 54.8 ms (best 45.0 -> 39.3),
/// 32K BoundlessBPE 74.1 -> 73.7 ms (best 67.4 -> 60.6).  (A pool of one thread less, so
/// that the caller had a core of its own, would lose where encoding is the larger part.)
pub fn encode_pipelined<E, X>(
    pool: &rayon::ThreadPool,
    encoder: &E,
    texts: &[&str],
    allowed: &super::Allowed,
    mut take: impl FnMut(&[TokenId]) -> std::result::Result<(), X>,
    mut wait: impl FnMut(&mut (dyn FnMut() + Send)),
) -> std::result::Result<(), X>
where
    E: Encode + ?Sized,
    X: From<crate::error::Error>,
{
    use std::sync::atomic::{AtomicBool, Ordering};
    let ends = group_ends(texts, pool.current_num_threads());
    let per_thread = bytes_per_thread(texts, pool.current_num_threads());
    let stop = AtomicBool::new(false);
    let (sender, mut receiver) = std::sync::mpsc::channel::<(usize, Result<Group>)>();
    pool.in_place_scope(|scope| {
        scope.spawn(|_| {
            (0..ends.len())
                .into_par_iter()
                .for_each_with(sender, |sender, g| {
                    if !stop.load(Ordering::Relaxed) {
                        let group = crate::error::catch(|| {
                            encode_group(encoder, texts, allowed, &ends, g, per_thread)
                        });
                        // (cannot fail: the receiver outlives the scope)
                        let _ = sender.send((g, group));
                    }
                });
        });
        let mut done: Vec<Option<Result<Group>>> = (0..ends.len()).map(|_| None).collect();
        let outcome = (|| {
            for g in 0..ends.len() {
                while done[g].is_none() {
                    let mut got = None;
                    let (slot, receiver) = (&mut got, &mut receiver);
                    wait(&mut move || *slot = receiver.recv().ok());
                    let (at, group) =
                        got.ok_or_else(|| crate::error::Error::internal("a batch group went missing"))?;
                    done[at] = Some(group);
                }
                let group = done[g].take().expect("just received")?;
                group.texts().try_for_each(&mut take)?;
                keep_buffers(std::iter::once(group));
            }
            Ok(())
        })();
        if outcome.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        outcome
    })
}

impl Batch {
    /// All ids of all texts.
    pub fn total_ids(&self) -> usize {
        self.groups.iter().map(|g| g.ids.len()).sum()
    }

    /// How many texts.
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.ends.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest id, if there is one.
    pub fn max_id(&self) -> Option<TokenId> {
        self.groups
            .iter()
            .filter_map(|g| g.ids.iter().copied().max())
            .max()
    }

    /// Each text's ids, in order.
    pub fn texts(&self) -> impl Iterator<Item = &[TokenId]> {
        self.groups.iter().flat_map(Group::texts)
    }

    /// Write all ids as little-endian u32 into `out` (exactly `4 * total_ids()` bytes, which
    /// need not be initialised: every byte is written), each group into its own slice, in
    /// parallel on the current pool (one group on the calling thread).  (The caller's buffer is not zeroed first: for 10 MB of
    /// text that was a serial pass over fresh pages, which the kernel zeroes on first touch
    /// anyway; now the first touch is here, shared by the threads.)
    pub fn write_ids_le(&self, out: &mut [MaybeUninit<u8>]) {
        assert_eq!(out.len(), 4 * self.total_ids(), "the buffer holds every id");
        let mut slices = Vec::with_capacity(self.groups.len());
        let mut rest = out;
        for g in &self.groups {
            let (mine, tail) = rest.split_at_mut(4 * g.ids.len());
            slices.push((g, mine));
            rest = tail;
        }
        let write = |(g, mine): (&Group, &mut [MaybeUninit<u8>])| {
            for (dst, id) in mine.chunks_exact_mut(4).zip(&g.ids) {
                put(dst, &id.to_le_bytes());
            }
        };
        if slices.len() == 1 {
            slices.into_iter().for_each(write);
        } else {
            slices.into_par_iter().for_each(write);
        }
    }

    /// The `len() + 1` offsets of the texts' ids (0 first, then each text's end), as
    /// little-endian u64 into `out` (exactly `8 * (len() + 1)` bytes, written whole, so they
    /// need not be initialised).
    pub fn write_offsets_le(&self, out: &mut [MaybeUninit<u8>]) {
        assert_eq!(out.len(), 8 * (self.len() + 1), "the buffer holds every offset");
        let mut slots = out.chunks_exact_mut(8);
        put(
            slots.next().expect("room for the first offset"),
            &0u64.to_le_bytes(),
        );
        let mut base = 0u64;
        for g in &self.groups {
            for (&end, dst) in g.ends.iter().zip(&mut slots) {
                put(dst, &(base + end as u64).to_le_bytes());
            }
            base += g.ids.len() as u64;
        }
    }

    /// All ids in one vector, and the `len() + 1` offsets (for callers in Rust).
    pub fn into_flat(self) -> (Vec<TokenId>, Vec<u64>) {
        let mut ids = Vec::with_capacity(self.total_ids());
        let mut offsets = Vec::with_capacity(self.len() + 1);
        offsets.push(0);
        for g in &self.groups {
            let base = ids.len() as u64;
            offsets.extend(g.ends.iter().map(|&e| base + e as u64));
            ids.extend_from_slice(&g.ids);
        }
        (ids, offsets)
    }
}
