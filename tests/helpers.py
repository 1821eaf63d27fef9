"""Shared test helpers.  The golden fixtures are in ``tests/data/golden`` (always present); the
large corpora live in ``../shared/data`` next to the repository, and tests that need them skip with
a reason when that folder is absent (a fresh clone)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
GOLDEN = ROOT / "tests" / "data" / "golden"
DATA = SHARED / "data"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path.relative_to(ROOT.parent)} is not present (shared folder absent)")
    return path


def read_jsonl_texts(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def read_lines(path: Path, limit: int | None = None) -> list[str]:
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if limit is not None and i >= limit:
                break
            out.append(line.rstrip("\n").removesuffix("\r"))
    return out


def set_hf_pattern(path: Path, pattern: str) -> None:
    """Rewrite a ``tokenizer.json`` so that every ``Split`` pre-tokenizer splits by ``pattern``."""
    data = json.loads(path.read_text(encoding="utf-8"))

    def put(node):
        if isinstance(node, dict):
            if node.get("type") == "Split" and isinstance(node.get("pattern"), dict):
                node["pattern"] = {"Regex": pattern}
            for v in node.values():
                put(v)
        elif isinstance(node, list):
            for v in node:
                put(v)

    put(data)
    path.write_text(json.dumps(data), encoding="utf-8")
