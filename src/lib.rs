//! superword's Rust core.
//!
//! The pipeline, one module per stage, mirrors the pure-Python reference in
//! `python/superword/reference/` (see `../shared/SPEC.md` for the contract both follow):
//!
//! * [`scripts`]: the Unicode 17.0 `Script` table shared with the reference.
//!
//! PyO3 lives only in `src/py/`, behind the `python` feature that maturin turns on, so
//! `cargo test` exercises the algorithms without a Python interpreter.

pub mod scripts;

#[cfg(feature = "python")]
mod py;
