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
//! * [`tokenizer`]: a model ready to encode (superword or ranks), as the seam's one class holds it;
//! * [`threads`]: reusable thread pools, and long work run beside a caller that watches for Ctrl-C;
//! * [`error`]: the one error type, converted to a Python exception at the seam.
//!
//! PyO3 lives only in `src/py/`, behind the `python` feature that maturin turns on, so
//! `cargo test` exercises the algorithms without a Python interpreter.

pub mod count;
pub mod countfile;
pub mod encode;
pub mod error;
pub mod input;
pub mod key;
pub mod minbpe;
pub mod model;
pub mod pretokenize;
pub mod ranks;
pub mod scripts;
pub mod threads;
pub mod tokenizer;
pub mod tokens;
pub mod train;

/// mimalloc: training allocates and frees millions of small tables and keys; the system
/// allocator spent about a tenth of a BoundlessBPE run in malloc/free (perf), mimalloc less.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_e` of `mimalloc.h`, the same in
/// mimalloc 2 and 3; the `-sys` crate names no constant for it).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// How long freed memory stays with the process before mimalloc gives it back, in ms.
pub const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// Give freed memory back to the system after [`PURGE_DELAY_MS`] instead of mimalloc 3's
/// default of a second, unless the environment variable `MIMALLOC_PURGE_DELAY` says
/// otherwise.  Training frees large tables between stages (the counting tables, the letter
/// runs, stage 3's flat candidates) and allocates the next stage's at once: kept for a second,
/// the freed pages stayed resident while the new ones were touched, and the peak RSS of a
/// BoundlessBPE training (100 MB of Gutenberg, 32,768, two threads) varied from 400 to 476 MB
/// from run to run; after 100 ms it was 364 MB (after 10 ms 343 MB, but small trainings,
/// which free and allocate again within milliseconds, looked slower with that, though
/// within the noise of a shared machine).
pub fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's global options, which it reads atomically
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
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
    use super::*;

    #[test]
    fn the_allocator_option_set_is_the_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return; // the environment decides, and tune_allocator leaves it alone
        }
        // SAFETY: reads mimalloc's options
        let get = || unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        // mimalloc 3's default purge delay, a value no neighbouring option has by default
        assert_eq!(
            get(),
            1000,
            "option {MI_OPTION_PURGE_DELAY} is not the purge delay"
        );
        tune_allocator();
        assert_eq!(get(), PURGE_DELAY_MS);
    }
}
