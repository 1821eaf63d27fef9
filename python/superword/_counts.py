"""Count files: :func:`count` a corpus once, :meth:`Counts.save` the counts, :func:`merge_counts`
the counts of parts, and ``superword.train(counts=...)`` as many times as needed.  The model
trained from counts is byte for byte the model trained on the text that was counted.

The file format is ``docs/count-format.md``; both backends read and write the same bytes.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from . import _files
from .reference import count as _ref_count
from .reference import countfile as _ref_countfile
from .reference import pretokenize as _pretok

Progress = Callable[[str, int, int], None]


class ReferenceCounts:
    """The pure-Python twin of the core's ``Counts`` (the same methods)."""

    def __init__(self, settings: _ref_countfile.CountSettings, counts: _ref_count.Counts):
        self.settings, self.counts = settings, counts

    @staticmethod
    def load(path: str) -> ReferenceCounts:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"count file not found: {path}") from None
        except OSError as exc:
            raise OSError(f"{path}: cannot be read ({exc})") from None
        return ReferenceCounts.from_bytes(data, path)

    @staticmethod
    def from_bytes(data: bytes, name: str) -> ReferenceCounts:
        try:
            return ReferenceCounts(*_ref_countfile.from_bytes(data))
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None

    def to_bytes(self) -> bytes:
        return _ref_countfile.to_bytes(self.counts, self.settings)

    pattern = property(lambda self: self.settings.pattern)
    script_pattern = property(lambda self: self.settings.script_pattern)
    scripts = property(lambda self: None if self.settings.scripts is None else list(self.settings.scripts))
    merge_pattern = property(lambda self: self.settings.merge_pattern)
    with_runs = property(lambda self: self.settings.with_runs)
    documents = property(lambda self: self.counts.documents)
    pretokens = property(lambda self: self.counts.pretokens)
    num_words = property(lambda self: len(self.counts.words))
    num_runs = property(lambda self: len(self.counts.runs))

    def most_common(self, n: int | None = None) -> list[tuple[str, int]]:
        order = _ref_countfile.canonical_words(self.counts.words)[:n]
        return [(w, self.counts.words[w]) for w in order]

    def prune(self, min_count: int) -> ReferenceCounts:
        return ReferenceCounts(self.settings, _ref_countfile.prune(self.counts, min_count))


class Counts:
    """Counted pretokens and letter runs of a corpus, with the pre-tokenization settings they
    were made with: everything training needs from the text.  Made by :func:`count`,
    :func:`load_counts` or :func:`merge_counts`; trained on with ``superword.train(counts=...)``.

    >>> c = count(["the cat sat", "the cat"], backend="reference")
    >>> c.documents, c.most_common(2)
    (2, [(' cat', 2), ('the', 2)])
    """

    def __init__(self, impl: Any, backend: str):
        self._impl = impl
        self.backend = backend

    @classmethod
    def load(cls, path: str | os.PathLike[str], backend: str | None = None) -> Counts:
        """Read a count file (made by :meth:`save`); a truncated, corrupted or newer file
        raises ``ValueError`` naming it."""
        from ._api import _core_module, _resolve_backend
        backend = _resolve_backend(backend)
        path = os.fspath(path)
        impl = _core_module().Counts.load(path) if backend == "rust" else ReferenceCounts.load(path)
        return _checked(cls(impl, backend), path)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the count file atomically (a reader sees the old file or the new one)."""
        _files.write_bytes_atomic(path, self.to_bytes())

    def to_bytes(self) -> bytes:
        """The count file's bytes."""
        return bytes(self._impl.to_bytes())

    def to_backend(self, backend: str) -> Counts:
        """The same counts held by ``backend`` ("rust" or "reference")."""
        from ._api import _resolve_backend
        backend = _resolve_backend(backend)
        if backend == self.backend:
            return self
        return Counts(_impl_from_bytes(self.to_bytes(), "counts", backend), backend)

    # -- the header -------------------------------------------------------------------------

    @property
    def pattern(self) -> str:
        return self._impl.pattern

    @property
    def script_pattern(self) -> str | None:
        """``None`` when counted in simple mode (``script_aware=False``)."""
        return self._impl.script_pattern

    @property
    def script_aware(self) -> bool:
        return self._impl.script_pattern is not None

    @property
    def scripts(self) -> list[str] | None:
        return self._impl.scripts

    @property
    def with_runs(self) -> bool:
        """Whether the letter runs were counted (``runs=True``): BoundlessBPE and SuperBPE
        need them, plain BPE does not."""
        return self._impl.with_runs

    # -- the counts -------------------------------------------------------------------------

    @property
    def documents(self) -> int:
        return self._impl.documents

    @property
    def pretokens(self) -> int:
        """Pretokens counted (with repetitions)."""
        return self._impl.pretokens

    @property
    def num_words(self) -> int:
        """Distinct pretokens."""
        return self._impl.num_words

    @property
    def num_runs(self) -> int:
        """Distinct letter runs."""
        return self._impl.num_runs

    def most_common(self, n: int | None = None) -> list[tuple[str, int]]:
        """The ``n`` most frequent pretokens (all when ``None`` or when ``n`` is larger than
        :attr:`num_words`), most frequent first.  A negative ``n`` raises ``ValueError``."""
        if n is not None:
            if isinstance(n, bool) or not isinstance(n, int):
                raise TypeError(f"most_common: n must be an int or None, got {type(n).__name__}")
            if n < 0:
                raise ValueError(f"most_common: n must be at least 0, got {n}")
            if n >= self.num_words:  # the core takes a 64-bit count; all of them is the answer
                n = None
        return self._impl.most_common(n)

    def prune(self, min_count: int) -> Counts:
        """Only the pretokens and runs counted at least ``min_count`` times.  A model trained
        on pruned counts is no longer exactly the model of the text."""
        return Counts(self._impl.prune(_check_min_count(min_count)), self.backend)

    def __repr__(self) -> str:
        return (f"<superword.Counts: {self.documents:,} documents, {self.num_words:,} distinct "
                f"pretokens, {self.num_runs:,} runs, backend={self.backend!r}>")


def _impl_from_bytes(data: bytes, name: str, backend: str) -> Any:
    """A backend's counts from a count file's bytes (errors name ``name``)."""
    from ._api import _core_module
    read = _core_module().Counts.from_bytes if backend == "rust" else ReferenceCounts.from_bytes
    impl = read(data, name)
    return _checked(Counts(impl, backend), name)._impl


def _checked(counts: Counts, name: str) -> Counts:
    """``counts`` read from ``name``, once its pre-tokenization compiles in its backend: a bad
    pattern in a count file was found only by training, in words that did not name the file."""
    from ._api import _core_module
    try:
        if counts.backend == "rust":
            _core_module().pretokenize("", counts.pattern, counts.script_pattern, counts.scripts)
        else:
            _pretok.Pretokenizer(counts.pattern, counts.script_pattern, counts.scripts)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    return counts


def _check_min_count(min_count: object) -> int:
    if isinstance(min_count, bool) or not isinstance(min_count, int):
        raise TypeError(f"min_count must be an int, got {type(min_count).__name__}")
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count}")
    if min_count > 2**64 - 1:  # counts are 64-bit: a larger threshold is a mistake
        raise ValueError(f"min_count must be at most 2**64 - 1 (counts are 64-bit), got {min_count}")
    return min_count


def count(inputs: Any, *, script_aware: bool = True, scripts: Iterable[str] | None = None,
          pattern: str | None = None, script_pattern: str | None = None, text_field: str = "text",
          runs: bool = True, min_count: int | None = None, threads: int | None = None,
          backend: str | None = None, progress: Progress | None = None,
          executor: str | None = None, ray_address: str | None = None) -> Counts:
    """Count a corpus: every distinct pretoken and every letter run, with their counts.

    ``inputs``, ``text_field``, ``script_aware``, ``scripts``, ``pattern``,
    ``script_pattern``, ``threads`` and ``backend`` are as for :func:`superword.train`.
    ``runs=False`` skips the letter runs (smaller and faster, but only plain BPE can be
    trained from the result).  ``min_count`` drops what was counted fewer times (see
    :meth:`Counts.prune`).  ``executor="ray"`` counts on a Ray cluster (``ray_address``,
    default: a local one); see :mod:`superword._ray`.

    >>> c = count(["the cat sat on the mat"] * 3, backend="reference")
    >>> c.documents, c.num_runs
    (3, 1)
    """
    from . import _api, _inputs
    if not isinstance(runs, bool):
        raise TypeError(f"runs must be True or False, got {type(runs).__name__}")
    main, script, names = _api.pretokenization(script_aware, scripts, pattern, script_pattern)
    threads = _api.resolve_threads(threads)
    if min_count is not None:
        _check_min_count(min_count)
    if not isinstance(text_field, str):
        raise TypeError(f"text_field must be a str, got {type(text_field).__name__}")
    if executor is not None:
        if executor != "ray":
            raise ValueError(f"executor must be None (this process) or 'ray', got {executor!r}")
        from . import _ray
        result = _ray.count(inputs, pattern=main, script_pattern=script, scripts=names,
                            text_field=text_field, runs=runs, address=ray_address,
                            backend=_api._resolve_backend(backend))
    elif ray_address is not None:
        raise ValueError("ray_address only applies with executor='ray'")
    else:
        backend = _api._resolve_backend(backend)
        paths, documents = _inputs.resolve_inputs(inputs, text_field)
        result = count_local(paths, documents, pattern=main, script_pattern=script, scripts=names,
                             text_field=text_field, runs=runs, threads=threads, backend=backend,
                             progress=progress)
    return result if min_count is None else result.prune(min_count)


def count_local(paths: list[str] | None, documents: Iterable[Any] | None, *, pattern: str,
                script_pattern: str | None, scripts: list[str] | None, text_field: str, runs: bool,
                threads: int, backend: str, progress: Progress | None = None) -> Counts:
    """:func:`count` in this process, on inputs split by ``_inputs.resolve_inputs``."""
    from . import _api, _inputs
    if backend == "rust":
        core = _api._core_module()
        options = dict(pattern=pattern, script_pattern=script_pattern, scripts=scripts, runs=runs,
                       threads=threads, progress=progress)
        if paths is not None:
            return Counts(core.count_files(paths, text_field, options), backend)
        return Counts(core.count_iter(documents, options), backend)
    pretokenizer = _pretok.Pretokenizer(pattern, script_pattern, scripts)
    report = progress or (lambda stage, done, total: None)
    counts = _ref_count.count_documents(_inputs.documents_of(paths, documents, text_field), pretokenizer,
                                        with_runs=runs, progress=lambda n: report("count", n, 0))
    report("count", counts.documents, counts.documents)
    settings = _ref_countfile.CountSettings(pattern, script_pattern,
                                            None if scripts is None else tuple(scripts),
                                            _pretok.MERGE_PATTERN, runs)
    return Counts(ReferenceCounts(settings, counts), backend)


def load_counts(path: str | os.PathLike[str], backend: str | None = None) -> Counts:
    """Read a count file: :meth:`Counts.load`."""
    return Counts.load(path, backend)


def merge_counts(items: Sequence[Counts | str | os.PathLike[str]], backend: str | None = None) -> Counts:
    """The sum of several counts (:class:`Counts` or count-file paths), as if their corpora had
    been counted together.  The result does not depend on the order or on how merges are
    grouped.  Counts made with different settings are refused, naming the difference; a sum
    over 2**64 - 1 is refused, not wrapped.

    >>> a = count(["the cat"], backend="reference"); b = count(["the dog"], backend="reference")
    >>> merge_counts([a, b]).most_common(1)
    [('the', 2)]
    """
    from ._api import _core_module, _resolve_backend
    if isinstance(items, (str, os.PathLike, Counts)):
        raise TypeError("merge_counts takes a list of Counts or count-file paths")
    items = list(items)
    if not items:
        raise ValueError("merge_counts needs at least one Counts or count file")
    if backend is None:
        backend = next((c.backend for c in items if isinstance(c, Counts)), None)
    backend = _resolve_backend(backend)
    tables, names = [], []
    for i, item in enumerate(items):
        if isinstance(item, Counts):
            tables.append(item.to_backend(backend))
            names.append(f"counts {i}")
        elif isinstance(item, (str, os.PathLike)):
            tables.append(Counts.load(item, backend))
            names.append(os.fspath(item))
        else:
            raise TypeError(f"item {i} of merge_counts is {type(item).__name__}, not Counts or a path")
    if backend == "rust":
        return Counts(_core_module().merge_counts([t._impl for t in tables], names), backend)
    settings, merged = _ref_countfile.merge([(t._impl.settings, t._impl.counts) for t in tables], names)
    return Counts(ReferenceCounts(settings, merged), backend)
