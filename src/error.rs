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
    /// Ctrl-C (or another signal) reached Python while we worked: `KeyboardInterrupt`.
    #[error("interrupted")]
    Interrupted,
}

pub type Result<T> = std::result::Result<T, Error>;
