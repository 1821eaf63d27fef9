"""Smoke-test a superword wheel the way a user without Rust would meet it.

    python tools/wheel_smoke.py dist/superword-0.1.0-cp310-abi3-manylinux_2_17_x86_64.whl
    python tools/wheel_smoke.py --build                  # maturin build --release first (needs Rust)
    python tools/wheel_smoke.py WHEEL --python python3.13 --find-links DIR --no-index

What it does, in order, printing one line per check and stopping at the first failure:

1. reads the wheel: its tags (``cp310-abi3-<platform>``: one wheel for every CPython from
   3.10 on), its size, and that it holds the compiled core, the data tables, the stubs and
   the ``superword`` entry point;
2. makes a fresh virtual environment (``python -m venv``, no system site-packages) in a
   temporary folder, and an environment for it whose ``PATH`` has no folder holding
   ``cargo``, ``rustc`` or ``rustup`` (and no ``CARGO*``/``RUST*``/``PYTHON*`` variables);
   it shows that ``which cargo`` fails there;
3. installs the wheel with pip, binaries only (``--only-binary :all:``: nothing may compile),
   which brings exactly one dependency, ``regex``, from PyPI (or from ``--find-links``);
4. runs this same file inside that environment (``--inside``, isolated mode, from the
   temporary folder, so the checkout's sources cannot be imported by mistake): import, the
   compiled core, training BPE / BoundlessBPE / SuperBPE on a small generated corpus, the same
   models from the pure-Python reference, the same for 1 and 2 threads, encode/decode round
   trips, save/load, pickling, ``superword --version`` and ``superword train``.

Exit status 0 when every check passed.  Standard library only, so it runs on any Python that
can make a venv, on Linux, macOS and Windows (the release workflow runs it on each).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUST_TOOLS = ("cargo", "rustc", "rustup")
# variables that would let the venv see a toolchain or another superword
DROPPED_PREFIXES = ("CARGO", "RUSTUP", "RUSTC", "RUSTFLAGS", "PYTHON", "VIRTUAL_ENV")


class SmokeFailure(Exception):
    """A check failed; the message says which and what was seen."""


def check(condition: bool, what: str, seen: object = None) -> None:
    if not condition:
        raise SmokeFailure(what if seen is None else f"{what} (seen: {seen!r})")
    print(f"ok  {what}", flush=True)


# -- 1. the wheel ------------------------------------------------------------------------------

def wheel_tags(name: str) -> tuple[str, str, str, str]:
    """Distribution version and the python / abi / platform tags of a wheel file name.

    >>> wheel_tags("superword-0.1.0-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
    ('0.1.0', 'cp310', 'abi3', 'manylinux_2_17_x86_64.manylinux2014_x86_64')
    """
    if not name.endswith(".whl"):
        raise SmokeFailure(f"{name}: not a wheel file name (expected NAME-VERSION-PY-ABI-PLATFORM.whl)")
    parts = name[:-4].split("-")
    if len(parts) not in (5, 6):  # an optional build tag sits between version and python tag
        raise SmokeFailure(f"{name}: expected 5 or 6 dash-separated fields, found {len(parts)}")
    return parts[1], parts[-3], parts[-2], parts[-1]


def platform_is_uploadable(platform: str) -> bool:
    """PyPI takes manylinux/musllinux Linux wheels, not plain ``linux_*`` ones; macOS and
    Windows tags are always fine.

    >>> platform_is_uploadable("linux_x86_64"), platform_is_uploadable("manylinux_2_28_aarch64")
    (False, True)
    >>> platform_is_uploadable("macosx_11_0_arm64"), platform_is_uploadable("win_amd64")
    (True, True)
    """
    return all(not tag.startswith("linux_") for tag in platform.split("."))


def inspect_wheel(wheel: Path, allow_local_tag: bool = False) -> str:
    """Check the wheel's name, tags and contents; return its version.  ``allow_local_tag``
    accepts a plain ``linux_*`` platform tag (a wheel pip built for this machine only)."""
    version, py_tag, abi_tag, platform = wheel_tags(wheel.name)
    print(f"wheel {wheel.name}: {wheel.stat().st_size / 1e6:.2f} MB", flush=True)
    check(py_tag == "cp310" and abi_tag == "abi3", "tags cp310-abi3: one wheel for CPython 3.10 and newer",
          f"{py_tag}-{abi_tag}")
    if allow_local_tag and not platform_is_uploadable(platform):
        print(f"--  platform tag {platform}: for this machine only (--allow-local-tag)", flush=True)
    else:
        check(platform_is_uploadable(platform), f"platform tag {platform} is one PyPI accepts")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = f"superword-{version}.dist-info"
        meta = zf.read(f"{info}/WHEEL").decode()
        entry_points = zf.read(f"{info}/entry_points.txt").decode()
        requires = [line.split(":", 1)[1].strip() for line in zf.read(f"{info}/METADATA").decode().splitlines()
                    if line.startswith("Requires-Dist:") and "extra ==" not in line]
    cores = [n for n in names if n.startswith("superword/_core") and n.endswith((".so", ".pyd"))]
    # the stable-ABI core is _core.abi3.so on Linux and macOS, _core.pyd on Windows
    check(cores in (["superword/_core.abi3.so"], ["superword/_core.pyd"]),
          "one compiled core built for the stable ABI", cores)
    check(f"Tag: {py_tag}-{abi_tag}-" in meta and "Root-Is-Purelib: false" in meta,
          "WHEEL metadata agrees with the file name", meta)
    for wanted in ("superword/_data/scripts.txt", "superword/_data/classes.txt", "superword/py.typed",
                   "superword/_core.pyi", "superword/reference/train.py"):
        check(wanted in names, f"holds {wanted}")
    check("superword=superword.cli:main" in entry_points.replace(" ", ""),
          "declares the superword command", entry_points)
    check(len(requires) == 1 and requires[0].startswith("regex"), "one runtime dependency: regex", requires)
    return version


def build_wheel(out: Path) -> Path:
    """``maturin build --release`` into ``out`` (the one step that needs Rust)."""
    start = time.perf_counter()
    subprocess.run(["maturin", "build", "--release", "--out", str(out)], cwd=ROOT, check=True)
    print(f"built in {time.perf_counter() - start:.0f} s", flush=True)
    (wheel,) = out.glob("superword-*.whl")
    return wheel


# -- 2. an environment without Rust ------------------------------------------------------------

def path_without_rust(path: str) -> str:
    """``path`` (a ``PATH`` value) without the folders that hold a Rust tool.

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     rust = pathlib.Path(d, "rust"); rust.mkdir()
    ...     exe = rust / ("cargo.exe" if os.name == "nt" else "cargo")
    ...     _ = exe.write_text(""); exe.chmod(0o755)
    ...     other = pathlib.Path(d, "other"); other.mkdir()
    ...     path_without_rust(os.pathsep.join([str(rust), str(other)])) == str(other)
    True
    """
    kept = [entry for entry in path.split(os.pathsep)
            if entry and not any(shutil.which(tool, path=entry) for tool in RUST_TOOLS)]
    return os.pathsep.join(kept)


def clean_environment(venv_bin: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.upper().startswith(DROPPED_PREFIXES)}
    env["PATH"] = os.pathsep.join([str(venv_bin), path_without_rust(os.environ.get("PATH", ""))])
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def make_venv(python: str, where: Path) -> tuple[Path, Path]:
    """A fresh venv at ``where``; its scripts folder and interpreter."""
    subprocess.run([python, "-m", "venv", str(where)], check=True)
    scripts = where / ("Scripts" if os.name == "nt" else "bin")
    interpreter = scripts / ("python.exe" if os.name == "nt" else "python")
    cfg = (where / "pyvenv.cfg").read_text()
    check("include-system-site-packages = false" in cfg, f"fresh venv at {where.name}/, no system site-packages")
    return scripts, interpreter


def show_no_rust(env: dict[str, str]) -> None:
    for tool in RUST_TOOLS:
        check(shutil.which(tool, path=env["PATH"]) is None, f"{tool} is not on the venv's PATH")
    which = shutil.which("which", path=env["PATH"])
    if which is not None:  # the shell's own word for it, where there is a `which`
        run = subprocess.run([which, "cargo"], env=env, capture_output=True, text=True)
        check(run.returncode != 0, "`which cargo` fails in that environment", run.stdout + run.stderr)


# -- 3. install --------------------------------------------------------------------------------

def install(interpreter: Path, wheel: Path, env: dict[str, str], pip_args: list[str]) -> None:
    start = time.perf_counter()
    subprocess.run([str(interpreter), "-m", "pip", "install", "--quiet", "--only-binary", ":all:",
                    *pip_args, str(wheel)], env=env, check=True)
    print(f"installed in {time.perf_counter() - start:.1f} s", flush=True)
    listed = subprocess.run([str(interpreter), "-m", "pip", "list", "--format", "freeze"], env=env,
                            check=True, capture_output=True, text=True).stdout.split()
    names = sorted(line.split("==")[0].lower() for line in listed)
    check(set(names) - {"pip", "setuptools"} == {"regex", "superword"},
          "the venv holds superword and regex, nothing else", listed)


# -- 4. inside the venv ------------------------------------------------------------------------

WORDS = ("the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
         "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "they", "you",
         "were", "her", "she", "there", "one", "all", "we", "their", "been", "has", "would", "when", "who",
         "will", "more", "if", "no", "out", "so", "said", "what", "up", "its", "about", "into", "than", "them",
         "can", "only", "other", "new", "some", "time", "could", "these", "two", "may", "first", "then", "do",
         "any", "like", "my", "now", "over", "such", "our", "man", "me", "even", "most", "made", "after",
         "also", "did")


def corpus_lines(n: int) -> list[str]:
    """``n`` documents of repeated word patterns (so that superwords exist to find), with a
    little French, Japanese and emoji so that script-aware pre-tokenization has work.  Made
    with a fixed LCG, so the same under any hash seed."""
    state, lines = 12345, []
    for i in range(n):
        words = []
        for _ in range(8 + i % 9):
            state = (state * 1103515245 + 12345) % 2**31
            words.append(WORDS[state % len(WORDS)])
        phrase = ["in order to", "one of the", "as well as", "at the end of the"][i % 4]
        extra = ["", " café déjà vu.", " 東京で日本語を話す。", " 🙂 ok!"][i % 4]
        lines.append(f"{' '.join(words[:4])} {phrase} {' '.join(words[4:])}.{extra}")
    return lines


SAMPLES = ("It is one of the best in the world.", "in order to see, as well as hear",
           "crème brûlée 日本語 🙂\n\ttabs  and   spaces", "unseen: zyxwvut 12345 !!!", "")


def inside(work: Path, expected_version: str) -> None:
    """The checks that run in the fresh venv (this file run with ``--inside``)."""
    import pickle

    import superword
    import superword._core as core

    check(Path(superword.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()),
          f"superword imports from the venv ({Path(superword.__file__).parent.name}/ in site-packages)",
          superword.__file__)
    check(Path(core.__file__).name.startswith("_core.") and Path(core.__file__).suffix in (".so", ".pyd"),
          f"compiled core present: {Path(core.__file__).name}", core.__file__)
    check(superword.__version__ == expected_version == core.version(),
          f"version {expected_version} (package and core)", (superword.__version__, core.version()))
    for tool in RUST_TOOLS:
        check(shutil.which(tool) is None, f"no {tool} seen from inside")

    corpus = work / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(600)) + "\n", encoding="utf-8")
    models = {}
    runs: tuple[tuple[str, dict[str, Any]], ...] = (("bpe", {}), ("boundless", {}), ("superbpe", {"supermerges": 30}))
    for algorithm, extra in runs:
        start = time.perf_counter()
        tok = superword.train(str(corpus), vocab_size=420, algorithm=algorithm, **extra)
        seconds = time.perf_counter() - start
        check(tok.backend != "reference" and tok.vocab_size == 420,
              f"{algorithm}: trained with the Rust core, {tok.vocab_size} tokens, "
              f"{tok.num_supermerges} supermerges, {seconds:.2f} s", (tok.backend, tok.vocab_size))
        if algorithm != "bpe":
            check(tok.num_supermerges > 0, f"{algorithm}: made superwords", tok.num_supermerges)
        wrong = [(text, tok.decode(tok.encode(text))) for text in SAMPLES if tok.decode(tok.encode(text)) != text]
        check(not wrong, f"{algorithm}: decode(encode(s)) == s on {len(SAMPLES)} texts", wrong)
        reference = superword.train(str(corpus), vocab_size=420, algorithm=algorithm, backend="reference", **extra)
        check(reference.model_text() == tok.model_text(),
              f"{algorithm}: the pure-Python reference makes the same model")
        one = superword.train(str(corpus), vocab_size=420, algorithm=algorithm, threads=1, **extra)
        two = superword.train(str(corpus), vocab_size=420, algorithm=algorithm, threads=2, **extra)
        check(one.model_text() == two.model_text() == tok.model_text(), f"{algorithm}: same model on 1 and 2 threads")
        path = work / f"{algorithm}.model"
        tok.save(path)
        loaded = superword.Tokenizer.load(path)
        check(loaded.model_text() == tok.model_text()
              and all(loaded.encode(t) == tok.encode(t) for t in SAMPLES),
              f"{algorithm}: save/load keeps model and ids")
        copy = pickle.loads(pickle.dumps(tok))
        check(copy.model_text() == tok.model_text()
              and all(copy.encode(t) == tok.encode(t) for t in SAMPLES), f"{algorithm}: pickle round trip")
        models[algorithm] = tok

    command = shutil.which("superword")
    check(command is not None and Path(command).resolve().is_relative_to(Path(sys.prefix).resolve()),
          "the superword command is the venv's", command)
    assert command is not None
    shown = subprocess.run([command, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    check(shown == f"superword {expected_version}", f"`superword --version` prints {shown!r}", shown)
    out = work / "cli.model"
    run = subprocess.run([command, "train", str(corpus), "--vocab-size", "420", "-o", str(out), "-q"],
                         capture_output=True, text=True)
    check(run.returncode == 0 and out.is_file(), "`superword train corpus.txt --vocab-size 420 -o cli.model`",
          run.stderr[-2000:])
    check(superword.Tokenizer.load(out).model_text() == models["boundless"].model_text(),
          "the command line trains the same BoundlessBPE model as superword.train")
    encoded = subprocess.run([command, "encode", str(out), SAMPLES[0]], capture_output=True, text=True, check=True)
    check("tokens" in encoded.stdout, "`superword encode cli.model TEXT` prints the tokens",
          encoded.stdout.splitlines()[-1:])


# -- the outside driver ------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", nargs="?", type=Path, help="the wheel to test (default: build one, see --build)")
    parser.add_argument("--build", action="store_true", help="build the wheel with maturin first (needs Rust)")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter that makes the venv (default: this one); any CPython >= 3.10")
    parser.add_argument("--find-links", metavar="DIR", help="look for regex in DIR too (passed to pip)")
    parser.add_argument("--no-index", action="store_true", help="do not ask PyPI (with --find-links: offline)")
    parser.add_argument("--allow-local-tag", action="store_true",
                        help="accept a linux_* platform tag (a wheel pip built from the sdist for this machine)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print where it is")
    parser.add_argument("--inside", metavar="WORK", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--expect-version", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.inside is not None:
            inside(args.inside, args.expect_version)
            return 0
        if (args.wheel is None) == (not args.build):
            parser.error("give a WHEEL or --build (not both)")
        temp = Path(tempfile.mkdtemp(prefix="superword-wheel-"))
        try:
            wheel = build_wheel(temp / "dist") if args.build else args.wheel.resolve()
            if not wheel.is_file():
                raise SmokeFailure(f"{wheel}: no such wheel")
            version = inspect_wheel(wheel, args.allow_local_tag)
            scripts, interpreter = make_venv(args.python, temp / "venv")
            env = clean_environment(scripts)
            show_no_rust(env)
            pip_args = (["--find-links", args.find_links] if args.find_links else []) + (
                ["--no-index"] if args.no_index else [])
            install(interpreter, wheel, env, pip_args)
            python_version = subprocess.run([str(interpreter), "-c", "import sys; print(sys.version.split()[0])"],
                                            env=env, capture_output=True, text=True, check=True).stdout.strip()
            print(f"running the checks inside the venv (Python {python_version})", flush=True)
            work = temp / "work"
            work.mkdir()
            # -I: isolated mode (no PYTHON* variables, no user site, not this file's folder on sys.path)
            subprocess.run([str(interpreter), "-I", str(Path(__file__).resolve()), "--inside", str(work),
                            "--expect-version", version], cwd=work, env=env, check=True)
        finally:
            if args.keep:
                print(f"kept {temp}")
            else:
                shutil.rmtree(temp, ignore_errors=True)
    except SmokeFailure as failure:
        print(f"FAIL {failure}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as failure:
        print(f"FAIL {' '.join(map(str, failure.cmd))} exited with {failure.returncode}", file=sys.stderr)
        return 1
    print("wheel smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
