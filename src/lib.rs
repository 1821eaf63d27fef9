//! superword's Rust core.
//!
//! The pipeline, one module per stage, mirrors the pure-Python reference in
//! `python/superword/reference/` (see `../shared/SPEC.md` for the contract both follow):
//!
//! * [`scripts`]: the Unicode 17.0 `Script` table shared with the reference;
//! * [`pretokenize`]: the GPT-4o matchers, generic regex patterns, script-aware runs;
//! * [`error`]: the one error type, converted to a Python exception at the seam.
//!
//! PyO3 lives only in `src/py/`, behind the `python` feature that maturin turns on, so
//! `cargo test` exercises the algorithms without a Python interpreter.

pub mod count;
pub mod encode;
pub mod error;

/// mimalloc: training allocates and frees millions of small tables and keys; the system
/// allocator spent about a tenth of a BoundlessBPE run in malloc/free (perf), mimalloc less.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod input;
pub mod minbpe;
pub mod model;
pub mod piece;
pub mod pipeline;
pub mod pretokenize;
pub mod ranks;
pub mod scripts;
pub mod train;

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
