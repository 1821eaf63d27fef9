//! superword's Rust core.
//!
//! The pipeline, one module per stage, mirrors the pure-Python reference in
//! `python/superword/reference/` (the algorithm contract is the project's SPEC, which the
//! code cites as "SPEC x.y").  In pipeline order:
//!
//! * [`input`]: training documents from files (`.txt`, `.jsonl`, optionally `.gz`) or memory;
//! * [`scripts`]: the Unicode 17.0 `Script` table shared with the reference;
//! * [`pretokenize`]: the GPT-4o matchers, generic regex patterns, script-aware runs;
//! * [`key`]: inline hash keys for short byte strings (pretokens, tokens), and `ByteMap`, the
//!   one-cache-line-per-probe table encoding looks pretokens up in;
//! * [`count`]: stage 1, pretokens and letter runs counted in parallel;
//! * [`countfile`]: stage 1's result as a file, merged and pruned (`docs/count-format.md`);
//! * [`tokens`]: the vocabulary (token ids, pairs, the byte base vocabulary);
//! * [`train`]: the whole training run and its stages (phase 1, candidates, phase 2);
//! * [`model`]: the trained model and its "BoundlessBPE v2" file;
//! * [`encode`]: encoding and decoding with a model;
//! * [`ranks`]: tiktoken rank files and their encoder;
//! * [`minbpe`]: minbpe-compatible training and encoding;
//! * [`extend`]: superwords on top of an existing ranks model (SPEC 10);
//! * [`tokenizer`]: a model ready to encode (superword or ranks), as the seam's one class holds it;
//! * [`threads`]: reusable thread pools, and long work run beside a caller that watches for Ctrl-C;
//! * [`error`]: the one error type, converted to a Python exception at the seam.
//!
//! PyO3 lives only in `src/py/`, behind the `python` feature that maturin turns on, so
//! `cargo test` exercises the algorithms without a Python interpreter.

pub mod control;
pub mod count;
pub mod countfile;
pub mod encode;
pub mod error;
pub mod extend;
pub mod input;
pub mod key;
pub mod minbpe;
pub mod model;
pub mod pretokenize;
pub mod ranks;
pub mod scripts;
pub mod seqs;
pub mod threads;
pub mod tokenizer;
pub mod tokens;
pub mod train;

/// mimalloc: training allocates and frees millions of small tables and keys; the system
/// allocator spent about a tenth of a BoundlessBPE run in malloc/free (perf), mimalloc less.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Give the memory freed so far back to the system now (mimalloc's forced collection, on
/// every thread of the current rayon pool and on this one), when the tables just freed held
/// at least [`RELEASE_MIN_ENTRIES`] entries (`entries`, a rough measure).  Training calls it
/// between stages, where large tables have just been freed and the next stage's are about to
/// be touched: mimalloc 3 keeps freed pages for a second (its purge delay), so they stayed
/// resident while the next stage's pages were added, and the peak RSS of a BoundlessBPE
/// training (100 MB of Gutenberg, 32,768, two threads) varied from 400 to 482 MB from run
/// to run.  A shorter purge delay for the whole run (100 ms) gave 364 MB but looked slower
/// (pages freed and taken again within a stage faulted in anew); collecting only at the
/// stage boundaries leaves the stages as they were.
pub fn release_freed_memory(entries: usize) {
    if entries < RELEASE_MIN_ENTRIES {
        return;
    }
    // SAFETY: mi_collect only walks mimalloc's own structures for the calling thread
    rayon::broadcast(|_| unsafe { libmimalloc_sys::mi_collect(true) });
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// Below this many entries, freed tables are left to mimalloc: a forced collection costs
/// about half a millisecond, and a small training (taylorswift.txt, 5,000) that made four of
/// them lost most of what building its encoder lazily had saved (17 ms against 15).
pub const RELEASE_MIN_ENTRIES: usize = 1 << 16;

/// Ask the CPU to start loading the cache line at `p` (only a hint: nothing is read).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing the program sees, whatever the address
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(feature = "python")]
mod py;

/// A small deterministic generator (xorshift) for the randomized unit tests, so they need no
/// dependency and always draw the same inputs.
#[cfg(test)]
pub(crate) struct XorShift(pub u64);

#[cfg(test)]
impl XorShift {
    /// The next number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[cfg(test)]
mod tests {
    /// Resident memory of this process, in bytes (Linux).
    fn rss() -> Option<usize> {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * 4096)
    }

    #[test]
    fn freed_memory_goes_back_at_once_and_only_for_large_tables() {
        let Some(_) = rss() else {
            return; // not Linux: nothing to read
        };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        const SIZE: usize = 256 << 20;
        let mut big = vec![1u8; SIZE];
        big[SIZE - 1] = 2;
        std::hint::black_box(&big);
        let held = rss().unwrap();
        drop(big);
        // below the threshold nothing is done: mimalloc keeps the pages for its purge delay
        pool.install(|| super::release_freed_memory(super::RELEASE_MIN_ENTRIES - 1));
        let kept = rss().unwrap();
        pool.install(|| super::release_freed_memory(super::RELEASE_MIN_ENTRIES));
        let released = rss().unwrap();
        // (other tests run alongside and allocate too: only a large share is asserted)
        assert!(kept + SIZE / 2 > held, "{held} -> {kept}: released too early");
        assert!(released + SIZE / 2 < kept, "{kept} -> {released}: not released");
    }
}
