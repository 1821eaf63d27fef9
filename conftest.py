"""Doctest collection imports every module of the package; the ones built on an optional extra
are left out when that extra is not installed (their tests skip on their own)."""
from __future__ import annotations

import importlib.util

collect_ignore = []
if importlib.util.find_spec("transformers") is None:
    collect_ignore += ["python/superword/hf.py", "python/superword/_hf_remote.py"]
