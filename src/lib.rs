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
