"""The version is written once (Cargo.toml) and every place that reports it agrees."""
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest
import superword
from superword import _version

ROOT = Path(__file__).resolve().parents[1]


def cargo_package_version() -> str:
    """Cargo.toml's [package] version, read here independently of superword._version."""
    text = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    package = text.split("[package]", 1)[1].split("\n[", 1)[0]
    found = re.search(r'^version = "([^"]+)"$', package, re.M)
    assert found, "Cargo.toml has no [package] version"
    return found.group(1)


def test_the_version_is_cargo_tomls():
    assert superword.__version__ == cargo_package_version()


def test_pyproject_takes_the_version_from_cargo():
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[project]", 1)[1].split("\n[", 1)[0]
    assert re.search(r'^dynamic = \[.*"version".*\]$', project, re.M)
    assert not re.search(r"^version\s*=", project, re.M)


def test_the_compiled_core_was_built_from_this_version():
    from superword import _core
    assert _core.version() == cargo_package_version()


def test_the_installed_metadata_has_the_same_version():
    try:
        installed = metadata.version("superword")
    except metadata.PackageNotFoundError:
        pytest.skip("superword is not installed (running from a source tree)")
    assert installed == superword.__version__


def test_outside_a_source_tree_the_core_tells_the_version(tmp_path):
    from superword import _core
    assert _version.find_version(tmp_path) == _core.version()


def test_without_the_core_the_metadata_tells_it(tmp_path, monkeypatch):
    try:
        installed = metadata.version("superword")
    except metadata.PackageNotFoundError:
        pytest.skip("superword is not installed (running from a source tree)")
    monkeypatch.setitem(sys.modules, "superword._core", None)  # its import now fails
    assert _version.find_version(tmp_path) == installed


def test_with_nothing_to_ask_importing_fails_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "superword._core", None)

    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    with pytest.raises(ImportError, match="cannot tell its version"):
        _version.find_version(tmp_path)


def test_a_cargo_toml_of_another_package_is_not_taken(tmp_path):
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "other"\nversion = "9.9.9"\n', encoding="utf-8")
    assert _version.cargo_version(tmp_path / "Cargo.toml") is None
    (tmp_path / "Cargo.toml").write_text('[workspace]\nversion = "9.9.9"\n[package]\nname = "superword"\n'
                                         'version = "2.0.0"\n[dependencies]\nversion = "1"\n', encoding="utf-8")
    assert _version.cargo_version(tmp_path / "Cargo.toml") == "2.0.0"
