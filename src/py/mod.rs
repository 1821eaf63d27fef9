//! The Python seam: everything PyO3 lives here.
//!
//! For now the extension only reports its version and the script table it was built with;
//! training and encoding arrive with the Rust-core issue.

use pyo3::prelude::*;

/// Version of the compiled core (must equal the Python package's `__version__`).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Names of the scripts in the embedded Unicode table (index 0 is Common).
#[pyfunction]
fn script_names() -> Vec<String> {
    crate::scripts::ScriptTable::get().names().to_vec()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(script_names, m)?)?;
    Ok(())
}
