"""The package's version.  It is written in one place, the ``[package]`` table of Cargo.toml:
maturin copies it into the distribution's metadata (``dynamic = ["version"]`` in
pyproject.toml) and the compiled core carries it (``_core.version()``, Cargo's
``CARGO_PKG_VERSION``).

Where the package runs from decides which of those is at hand, so they are asked in this order:

1. a source tree (``<root>/python/superword/`` next to ``<root>/Cargo.toml``): Cargo.toml
   itself, so that a checkout reports its own version even with a stale or missing build (a
   test compares the core's version with it);
2. an installed package: the compiled core beside this file;
3. an installation without the core (only ``backend="reference"`` then works): the
   distribution's metadata.

If none of them answers, importing superword fails and says so.
"""
from __future__ import annotations

import re
from pathlib import Path

_PACKAGE = re.compile(r"^\[package\][ \t]*$(.*?)(?=^\[|\Z)", re.M | re.S)


def cargo_version(cargo_toml: Path) -> str | None:
    """The ``version`` of the ``[package]`` table of ``cargo_toml`` if that package is named
    superword, else ``None``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = Path(d) / "Cargo.toml"
    ...     _ = path.write_text('[package]\\nname = "superword"\\nversion = "1.2.3"\\n\\n[dependencies]\\n')
    ...     cargo_version(path)
    '1.2.3'
    """
    try:
        text = cargo_toml.read_text(encoding="utf-8")
    except OSError:
        return None
    table = _PACKAGE.search(text)
    if table is None:
        return None
    name = re.search(r'^name\s*=\s*"([^"]*)"', table.group(1), re.M)
    version = re.search(r'^version\s*=\s*"([^"]*)"', table.group(1), re.M)
    if name is None or name.group(1) != "superword" or version is None:
        return None
    return version.group(1)


def find_version(source_root: Path | None = None) -> str:
    """The version, from the first source in the module's order that answers."""
    root = Path(__file__).resolve().parents[2] if source_root is None else source_root
    found = cargo_version(root / "Cargo.toml")
    if found is not None:
        return found
    try:
        from ._core import version
    except ImportError:
        pass
    else:
        return version()
    from importlib import metadata
    try:
        return metadata.version("superword")
    except metadata.PackageNotFoundError:
        raise ImportError("superword cannot tell its version: no Cargo.toml of a source tree, no compiled core "
                          "(superword._core) and no installed distribution metadata") from None


__version__ = find_version()
