//! One error type for the core, converted to a Python exception once, at the seam (src/py/).

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// Bad input or arguments: Python `ValueError`.
    #[error("{0}")]
    Value(String),
    /// A file that does not exist: Python `FileNotFoundError`.
    #[error("{0}")]
    NotFound(String),
    /// Other I/O failures: Python `OSError`.
    #[error("{0}")]
    Io(String),
    /// An allocation whose size came from the input could not be made: Python `MemoryError`
    /// (checked before allocating, so that running out is an exception, not an abort).
    #[error("{0}")]
    Memory(String),
    /// The core could not start its threads, or failed inside: Python `RuntimeError`.
    #[error("{0}")]
    Runtime(String),
    /// Ctrl-C (or another signal) reached Python while we worked: `KeyboardInterrupt`.
    #[error("interrupted")]
    Interrupted,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A failure that is a bug of ours, not of the input.
    pub fn internal(what: &str) -> Error {
        Error::Runtime(format!(
            "internal error in superword's Rust core (please report it): {what}"
        ))
    }
}

/// A vector of `n` items, or [`Error::Memory`] saying what it was for when the allocator
/// refuses (`what` names the input: "count file x.counts: the runs").
pub fn try_vec<T>(n: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        Error::Memory(format!(
            "{what}: out of memory ({n} items of {} bytes could not be allocated)",
            std::mem::size_of::<T>()
        ))
    })?;
    Ok(v)
}

/// Run `f`, turning a panic into [`Error::internal`], so that a bug reaches Python as an
/// exception instead of aborting the interpreter.
pub fn catch<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = (panic.downcast_ref::<String>().map(String::as_str))
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        Err(Error::internal(message))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_error_with_its_message() {
        let out: Result<()> = catch(|| panic!("deliberate {}", 1));
        assert!(matches!(out, Err(Error::Runtime(m)) if m.ends_with("(please report it): deliberate 1")));
        assert!(
            matches!(catch(|| -> Result<()> { panic!("static") }), Err(Error::Runtime(m)) if m.ends_with("static"))
        );
        assert_eq!(catch(|| Ok(3)).unwrap(), 3);
    }
}
