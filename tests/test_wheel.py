"""Installing without Rust: the wheel's promises, and the smoke test that checks them.

The full check (build a wheel, install it into a fresh venv with no Rust on PATH, use it) is
``tools/wheel_smoke.py``; the release workflow runs it on every platform's wheel.  Here it runs
only on a wheel named by ``SUPERWORD_WHEEL``: the test run does not build one, because the
install step before it has already compiled the core once (a second fat-LTO build costs about
2.5 minutes on two cores) and the smoke test fetches ``regex`` from PyPI into its venv.  The
rest of this file is quick and always runs.
"""
from __future__ import annotations

import doctest
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tools" / "wheel_smoke.py"


def load_smoke():
    spec = importlib.util.spec_from_file_location("wheel_smoke", SMOKE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stable_abi_floor_is_the_supported_python_floor():
    # one abi3 wheel serves every CPython from the floor on; a floor below requires-python
    # would make wheels for Pythons we do not test, a floor above would leave 3.10 without one
    cargo = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    abi3 = re.findall(r'"abi3-py3(\d+)"', cargo)
    requires = re.search(r'^requires-python\s*=\s*">=3\.(\d+)"', pyproject, re.M)
    assert len(abi3) == 1, f"Cargo.toml should name one abi3-py3X feature of pyo3, found {abi3}"
    assert requires, "pyproject.toml has no requires-python = \">=3.X\""
    assert abi3[0] == requires.group(1)


def test_the_smoke_scripts_helpers_do_what_their_examples_say():
    # wheel-name parsing, the PyPI platform rule and the PATH without Rust (their doctests)
    results = doctest.testmod(load_smoke(), optionflags=doctest.ELLIPSIS)
    assert results.attempted >= 4 and results.failed == 0


def test_the_path_without_rust_drops_only_the_folders_that_hold_a_rust_tool(tmp_path):
    smoke = load_smoke()
    folders = {}
    for name, tools in (("rustup-bin", ["rustup"]), ("rustc-only", ["rustc"]), ("plain", ["python3"]),
                        ("cargo-and-more", ["cargo", "ls"])):
        folder = tmp_path / name
        folder.mkdir()
        for tool in tools:
            exe = folder / (tool + ".exe" if os.name == "nt" else tool)
            exe.write_text("")
            exe.chmod(0o755)
        folders[name] = str(folder)
    path = os.pathsep.join(folders.values())
    assert smoke.path_without_rust(path) == folders["plain"]
    env = smoke.clean_environment(tmp_path / "venv-bin")
    assert env["PATH"].split(os.pathsep)[0] == str(tmp_path / "venv-bin")
    assert not [key for key in env if key.upper().startswith(("CARGO", "RUSTUP", "PYTHONPATH"))]


def test_the_release_workflow_uses_only_documented_maturin_action_inputs():
    # the inputs PyO3/maturin-action's README and action.yml document (and maturin's
    # `generate-ci github` writes); an unknown input is ignored by Actions with a warning only,
    # so a misspelt one would silently build the wrong wheel
    documented = {"token", "command", "args", "maturin-version", "manylinux", "target", "container",
                  "rust-toolchain", "rustup-components", "sccache"}
    lines = (ROOT / ".github" / "workflows" / "wheels.yml").read_text(encoding="utf-8").splitlines()
    used: list[str] = []
    for i, line in enumerate(lines):
        if "uses: PyO3/maturin-action@" not in line:
            continue
        indent = len(line) - len(line.lstrip(" -"))
        assert lines[i + 1].strip() == "with:", f"line {i + 2} of wheels.yml: expected 'with:'"
        for item in lines[i + 2:]:
            if not item.strip() or item.strip().startswith("#"):
                continue
            if len(item) - len(item.lstrip(" ")) <= indent:
                break
            used.append(item.strip().split(":", 1)[0])
    assert used, "wheels.yml builds with PyO3/maturin-action"
    assert set(used) <= documented, sorted(set(used) - documented)


@pytest.mark.skipif(not os.environ.get("SUPERWORD_WHEEL"),
                    reason="set SUPERWORD_WHEEL to a built wheel to smoke-test it here (wheels.yml runs "
                           "tools/wheel_smoke.py on every platform's wheel; the test run builds none)")
def test_a_built_wheel_installs_and_works_without_rust():
    wheel = Path(os.environ["SUPERWORD_WHEEL"])
    run = subprocess.run([sys.executable, str(SMOKE), str(wheel)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "wheel smoke test passed" in run.stdout
