# Stubs for the compiled Rust core (src/py/).  Keep in sync with src/py/mod.rs.

def version() -> str:
    """Version of the compiled core; equals superword.__version__."""

def script_names() -> list[str]:
    """Names of the scripts in the embedded Unicode 17.0 table; index 0 is Common."""
