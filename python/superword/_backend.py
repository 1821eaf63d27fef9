"""The two backends behind one interface, and the checked settings every entry point gives them.

A backend is a module: ``superword._core`` (the compiled Rust core, the default) or
:mod:`superword._reference_core` (pure Python over :mod:`superword.reference`).  Both satisfy
:class:`Core`, which mypy checks in :func:`core_of`; the Python front calls the backend only
through it, so that it says ``core_of(backend).train_files(...)`` once instead of testing the
backend's name at every step.

This module is the bottom of the front: it imports the reference twin and nothing else of the
front, and every other front module may import it.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar

from . import _reference_core
from .reference import pretokenize as _pretok

if TYPE_CHECKING:
    from . import _core

BACKENDS = ("rust", "reference")
DEFAULT_BACKEND = "rust"
#: the environment variable that sets the default number of threads (as for rayon itself)
THREADS_VARIABLE = "RAYON_NUM_THREADS"

Progress = Callable[[str, int, int], None]


# -- what a backend offers -------------------------------------------------------------------

class TrainOptions(TypedDict):
    """The options of :func:`superword.train` after its checks, as a backend takes them."""
    vocab_size: int
    algorithm: str
    supermerges: int | None
    pattern: str
    script_pattern: str | None
    scripts: list[str] | None
    greedy_split: bool
    tau: float
    blowup: bool
    threads: int | None
    progress: Callable[[str, int, int], object] | None


class CountOptions(TypedDict):
    """The options of :func:`superword.count` after its checks, as a backend takes them."""
    pattern: str
    script_pattern: str | None
    scripts: list[str] | None
    runs: bool
    threads: int | None
    progress: Callable[[str, int, int], object] | None


class TokenizerCore(Protocol):
    """A trained model that encodes and decodes: what :class:`superword.Tokenizer` holds."""

    @property
    def kind(self) -> str: ...
    @property
    def pattern(self) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def num_supermerges(self) -> int: ...
    @property
    def special_tokens(self) -> dict[str, int]: ...
    @property
    def training_stats(self) -> dict[str, float]: ...
    def encode_ordinary(self, text: str) -> list[int]: ...
    def encode(self, text: str, allowed: list[str]) -> list[int]: ...
    def encode_batch(self, texts: list[str], allowed: list[str],
                     threads: int | None = None) -> list[list[int]]: ...
    def encode_to_tokens(self, text: str) -> list[bytes]: ...
    def decode_bytes(self, ids: list[int]) -> bytes: ...
    def token_bytes(self, id: int) -> bytes: ...
    def is_superword(self, id: int) -> bool: ...
    def id_of(self, token: bytes) -> int | None: ...
    def vocab_items(self) -> list[tuple[int, bytes, bool]]: ...
    def register_special_tokens(self, tokens: list[str]) -> None: ...
    def dumps(self) -> str: ...
    def dumps_ngrams(self) -> str | None: ...
    def dumps_tiktoken(self) -> str: ...
    def save_tiktoken(self, path: str) -> None: ...
    @property
    def greedy_split(self) -> bool: ...


class TokenizerMaker(Protocol):
    """How a backend makes a :class:`TokenizerCore` from a file (its ``Tokenizer`` class)."""

    def load(self, path: str, greedy_split: bool = False) -> TokenizerCore: ...
    def from_tiktoken(self, path: str, pattern: str,
                      special_tokens: list[tuple[str, int]]) -> TokenizerCore: ...
    def loads(self, text: str, ngrams: str | None = None, greedy_split: bool = False,
              name: str = ...) -> TokenizerCore: ...
    def loads_tiktoken(self, text: str, pattern: str, special_tokens: list[tuple[str, int]],
                       name: str = ...) -> TokenizerCore: ...


class CountsCore(Protocol):
    """Counted pretokens and letter runs: what :class:`superword.Counts` holds."""

    @property
    def pattern(self) -> str: ...
    @property
    def script_pattern(self) -> str | None: ...
    @property
    def scripts(self) -> list[str] | None: ...
    @property
    def merge_pattern(self) -> str: ...
    @property
    def with_runs(self) -> bool: ...
    @property
    def documents(self) -> int: ...
    @property
    def pretokens(self) -> int: ...
    @property
    def num_words(self) -> int: ...
    @property
    def num_runs(self) -> int: ...
    def to_bytes(self) -> bytes: ...
    def most_common(self, n: int | None = None) -> list[tuple[str, int]]: ...
    def prune(self, min_count: int) -> CountsCore: ...


class CountsMaker(Protocol):
    """How a backend reads counts (its ``Counts`` class)."""

    def load(self, path: str) -> CountsCore: ...
    def from_bytes(self, data: bytes, name: str) -> CountsCore: ...


#: a backend's own counts: the only ones it trains on or merges (the front converts others)
CountsT = TypeVar("CountsT", bound=CountsCore)


class Core(Protocol[CountsT]):
    """A backend: the entry points of training, counting and loading."""

    @property
    def Tokenizer(self) -> TokenizerMaker: ...
    @property
    def Counts(self) -> CountsMaker: ...
    def pretokenize(self, text: str, pattern: str, script_pattern: str | None = None,
                    scripts: list[str] | None = None) -> list[str]: ...
    def train_docs(self, documents: list[str] | tuple[str, ...],
                   options: TrainOptions) -> tuple[TokenizerCore, int, int]: ...
    def train_files(self, paths: list[str], text_field: str, options: TrainOptions) -> TokenizerCore: ...
    def train_iter(self, documents: Iterable[str], options: TrainOptions) -> TokenizerCore: ...
    def train_counts(self, counts: CountsT, *, vocab_size: int, algorithm: str,
                     supermerges: int | None, greedy_split: bool, tau: float, blowup: bool,
                     threads: int | None,
                     progress: Callable[[str, int, int], object] | None) -> TokenizerCore: ...
    def count_files(self, paths: list[str], text_field: str, options: CountOptions) -> CountsCore: ...
    def count_iter(self, documents: Iterable[str], options: CountOptions) -> CountsCore: ...
    def merge_counts(self, tables: list[CountsT], names: list[str]) -> CountsCore: ...


# -- choosing one ----------------------------------------------------------------------------

def _core_module() -> ModuleType:
    """The compiled core.  Never replaced silently by the reference: if it is missing, say so.
    (Imported here, on first use, so that ``backend="reference"`` works without it.)"""
    try:
        from . import _core
    except ImportError as exc:
        raise ImportError(
            "superword's compiled Rust core (superword._core) is not available: "
            f"{exc}. Install superword with `pip install .` (it builds the core with maturin), "
            "or pass backend='reference' to use the pure-Python implementation explicitly."
        ) from exc
    return _core


def _rust() -> Core[_core.Counts]:
    _core_module()  # a missing core is named
    from . import _core  # the same module, typed by its stubs: mypy checks here that it is a `Core`
    return _core


def _reference() -> Core[_reference_core.ReferenceCounts]:
    return _reference_core  # (and here that the reference twin is one)


def _resolve_backend(backend: str | None) -> str:
    if backend is None:
        backend = DEFAULT_BACKEND
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    if backend == "rust":
        _core_module()
    return backend


def core_of(backend: str) -> Core[Any]:
    """The backend named ``backend`` (a name :func:`_resolve_backend` has checked)."""
    return _rust() if backend == "rust" else _reference()


# -- settings every entry point checks the same way ------------------------------------------

def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def resolve_threads(threads: int | None) -> int:
    """The number of worker threads for ``threads``.

    ``None`` means the environment variable ``RAYON_NUM_THREADS`` when it is set to a positive
    number, else all available cores.  A number above the available cores is reduced to them:
    more workers than cores only add overhead, and results never depend on the count.  So a
    process never starts more workers than it has cores, whatever it is asked.

    >>> resolve_threads(1)
    1
    """
    requested = _requested_threads(threads)
    cores = available_cores()
    return cores if requested is None else min(requested, cores)


def _requested_threads(threads: int | None) -> int | None:
    """:func:`resolve_threads` for ``encode_batch``: ``None`` for all cores, which the core
    counts once (counting them here on every call was half of the Python time of
    ``encode_batch`` on a few short texts).  A count given as an argument is still
    reduced to the cores here, so that asking for many different counts reuses one pool."""
    if threads is None:
        text = os.environ.get(THREADS_VARIABLE, "").strip()
        if not text or text == "0":  # rayon's own rule: unset or 0 means all cores
            return None
        try:
            threads = int(text)
        except ValueError:
            raise ValueError(f"the environment variable {THREADS_VARIABLE} must be a whole number "
                             f"of threads, got {text!r}") from None
        if threads < 1:
            raise ValueError(f"the environment variable {THREADS_VARIABLE} must be at least 1 "
                             f"(or 0 for all cores), got {threads}")
        return threads
    threads = _check_int("threads", threads)
    if threads < 1:
        raise ValueError(f"threads must be at least 1 (or None for all cores), got {threads}")
    return min(threads, available_cores())


def pretokenization(script_aware: bool, scripts: Iterable[str] | None, pattern: str | None,
                    script_pattern: str | None) -> tuple[str, str | None, list[str] | None]:
    """Checked pre-tokenization arguments of :func:`train` and :func:`superword.count`:
    (main pattern, script pattern or ``None``, sorted script names or ``None``)."""
    if not isinstance(script_aware, bool):
        raise TypeError(f"script_aware must be True or False, got {type(script_aware).__name__}")
    if scripts is not None:
        if not script_aware:
            raise ValueError("scripts only applies with script_aware=True")
        if isinstance(scripts, str):
            raise TypeError("scripts must be a list of script names, e.g. ['Han', 'Thai']")
        scripts = list(scripts)
    for name, value in (("pattern", pattern), ("script_pattern", script_pattern)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str (a regular expression), got {type(value).__name__}")
    if script_pattern is not None and not script_aware:
        raise ValueError("script_pattern only applies with script_aware=True")
    main = _pretok.GPT4O if pattern is None else pattern
    if script_aware:
        script = _pretok.SCRIPT_SPECIFIC_GPT4O if script_pattern is None else script_pattern
        names = sorted(set(scripts if scripts is not None else _pretok.DEFAULT_SCRIPTS))
    else:
        script, names = None, None
    _check_pretokenization(main, script, None if names is None else tuple(names))
    return main, script, names


@functools.lru_cache(maxsize=16)
def _check_pretokenization(main: str, script: str | None, names: tuple[str, ...] | None) -> None:
    """One place for pattern and script checks (a valid combination is remembered: building the
    reference pre-tokenizer to check it was 0.4 ms of a 25 ms training on taylorswift.txt)."""
    _pretok.Pretokenizer(main, script, names)
