"""A short slice of the reader fuzzer (``python -m tests.fuzz``) in every test run: mutated
files of every format, in worker processes under a memory limit, must load or be refused;
no crash, hang or memory blow-up."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_twenty_seconds_of_fuzzing_find_no_crash_hang_or_blow_up():
    out = subprocess.run([sys.executable, "-m", "tests.fuzz", "--minutes", "0.33", "--seed", "1"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    rows = [line.split() for line in out.stdout.splitlines()[1:8]]
    assert [r[0] for r in rows] == ["v2", "minbpe", "tiktoken", "hf", "counts", "sidecar", "extension"]
    assert all(int(r[1]) + int(r[2]) > 0 for r in rows), out.stdout  # every format was tried
    print(out.stdout)
