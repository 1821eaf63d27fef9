"""The compiled core is present, matches the package version and embeds the same table."""
from __future__ import annotations

import superword
from superword import _core
from superword.reference.scripts import script_names


def test_core_version_matches_the_package():
    assert _core.version() == superword.__version__


def test_core_embeds_the_same_script_table():
    assert _core.script_names() == list(script_names())
