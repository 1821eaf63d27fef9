"""The compiled core is present, matches the package version and embeds the same table."""
from __future__ import annotations

import superword
from superword import _core
from superword.reference.scripts import script_names


def test_core_version_matches_the_package():
    assert _core.version() == superword.__version__


def test_core_embeds_the_same_script_table():
    assert _core.script_names() == list(script_names())


def test_the_stub_matches_the_extension():
    """`_core.pyi` does not lie (mypy's stubtest), when mypy is installed."""
    import subprocess
    import sys

    import pytest
    pytest.importorskip("mypy")
    out = subprocess.run([sys.executable, "-m", "mypy.stubtest", "superword._core"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
