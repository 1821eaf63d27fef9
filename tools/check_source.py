"""Source checks that `make lint` runs beside the linters.

1. The Rust crate's top-level modules import in layers: a module may use only modules of lower
   layers (`use crate::x` or a `crate::x::...` path anywhere outside a comment), never one of
   its own layer or above.  The order is LAYERS below, the one place it is written down.
2. No comment or string in `src/` or `python/` cites a work round or an issue number
   ("Round 7", "issue 12"): code says what it does today and why; the history of how it got
   there is in `docs/performance.md` and in git.

Exits 1 with one line per finding (file, line, what is wrong), 0 when clean.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Bottom first.  Training and encoding both stand on the second layer (tokens and pairs, the
# n-gram table, progress and cancel); the pipeline then reads upwards: documents are read
# (input), pre-tokenized, counted (count, countfile); a model is plain data (model) that
# encoding reads (encode) and training produces (train, which encodes in stage 3); tiktoken
# ranks and minbpe are encoders of their own; an extension (superwords over a ranks base) uses
# ranks and training; the tokenizer holds any of them; the Python seam (py) sits on top.
LAYERS: list[list[str]] = [
    ["error"],
    ["control", "key", "scripts", "seqs", "threads", "tokens"],
    ["input"],
    ["pretokenize"],
    ["count"],
    ["countfile"],
    ["model"],
    ["encode"],
    ["minbpe", "ranks", "train"],
    ["extend", "tokenizer"],
    ["py"],
]

HISTORY = re.compile(r"\b(?:[Rr]ound|[Ii]ssues?) #?[0-9]+\b")
CRATE_PATH = re.compile(r"\bcrate::(\w+)")
CRATE_GROUP = re.compile(r"\bcrate::\{([^}]*)\}?")


def code_part(line: str) -> str:
    """The line without its `//` comment (a `//` inside a string literal is rare enough in
    `use` lines and paths not to matter here)."""
    at = line.find("//")
    return line if at < 0 else line[:at]


def top_level_modules(src: Path) -> list[str]:
    lib = (src / "lib.rs").read_text(encoding="utf-8")
    return re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", lib, re.M)


def module_files(src: Path, name: str) -> list[Path]:
    files = []
    if (src / f"{name}.rs").is_file():
        files.append(src / f"{name}.rs")
    if (src / name).is_dir():
        files.extend(sorted((src / name).rglob("*.rs")))
    return files


def check_layers(src: Path) -> list[str]:
    layer_of = {m: i for i, layer in enumerate(LAYERS) for m in layer}
    problems = []
    modules = top_level_modules(src)
    for name in modules:
        if name not in layer_of:
            problems.append(f"src/lib.rs: module `{name}` has no layer in tools/check_source.py LAYERS")
    for name in sorted(set(layer_of) - set(modules)):
        problems.append(f"tools/check_source.py: LAYERS names `{name}`, which src/lib.rs does not declare")
    for name in modules:
        if name not in layer_of:
            continue
        for path in module_files(src, name):
            rel = path.relative_to(src.parent)
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = code_part(line)
                used = set(CRATE_PATH.findall(code))
                for group in CRATE_GROUP.findall(code):
                    used.update(re.findall(r"(?:^|,)\s*(\w+)", group))
                for other in sorted(used):
                    if other == name or other not in layer_of:
                        continue  # itself, or an item of the crate root (lib.rs)
                    if layer_of[other] >= layer_of[name]:
                        problems.append(
                            f"{rel}:{number}: `{name}` uses `{other}`, which is not below it "
                            f"(layers in tools/check_source.py)"
                        )
    return problems


def check_history(root: Path) -> list[str]:
    problems = []
    for folder, suffix in (("src", ".rs"), ("python", ".py")):
        for path in sorted((root / folder).rglob(f"*{suffix}")):
            text = path.read_text(encoding="utf-8")
            for number, line in enumerate(text.splitlines(), 1):
                found = HISTORY.search(line)
                if found:
                    problems.append(
                        f"{path.relative_to(root)}:{number}: cites {found.group(0)!r}; say what "
                        f"the code does and why (history goes to docs/performance.md)"
                    )
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else ROOT
    problems = check_layers(root / "src") + check_history(root)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
