"""Count tables: :class:`Counts` (counted pretokens and letter runs with their pre-tokenization
settings), read from and written to count files, merged, and counted in this process.  The model
trained from counts is byte for byte the model trained on the text that was counted.

The file format is ``docs/count-format.md``; both backends read and write the same bytes.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from . import _files, _inputs
from ._backend import CountOptions, CountsCore, Progress, _resolve_backend, core_of


class Counts:
    """Counted pretokens and letter runs of a corpus, with the pre-tokenization settings they
    were made with: everything training needs from the text.  Made by :func:`count`,
    :func:`load_counts` or :func:`merge_counts`; trained on with ``superword.train(counts=...)``.

    >>> from superword import count
    >>> c = count(["the cat sat", "the cat"], backend="reference")
    >>> c.documents, c.most_common(2)
    (2, [(' cat', 2), ('the', 2)])
    """

    def __init__(self, impl: CountsCore, backend: str):
        self._impl = impl
        self.backend = backend

    @classmethod
    def load(cls, path: str | os.PathLike[str], backend: str | None = None) -> Counts:
        """Read a count file (made by :meth:`save`); a truncated, corrupted or newer file
        raises ``ValueError`` naming it."""
        backend = _resolve_backend(backend)
        path = os.fspath(path)
        impl = core_of(backend).Counts.load(path)
        return _checked(cls(impl, backend), path)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the count file atomically (a reader sees the old file or the new one)."""
        _files.write_bytes_atomic(path, self.to_bytes())

    def to_bytes(self) -> bytes:
        """The count file's bytes."""
        return bytes(self._impl.to_bytes())

    def to_backend(self, backend: str) -> Counts:
        """The same counts held by ``backend`` ("rust" or "reference")."""
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
    impl = core_of(backend).Counts.from_bytes(data, name)
    return _checked(Counts(impl, backend), name)._impl


def _checked(counts: Counts, name: str) -> Counts:
    """``counts`` read from ``name``, once its pre-tokenization compiles in its backend: a bad
    pattern in a count file was found only by training, in words that did not name the file."""
    try:
        core_of(counts.backend).pretokenize("", counts.pattern, counts.script_pattern, counts.scripts)
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


def count_local(paths: list[str] | None, documents: Iterable[Any] | None, *, pattern: str,
                script_pattern: str | None, scripts: list[str] | None, text_field: str, runs: bool,
                threads: int, backend: str, progress: Progress | None = None) -> Counts:
    """:func:`count` in this process, on inputs split by ``_inputs.resolve_inputs``."""
    core = core_of(backend)
    options = CountOptions(pattern=pattern, script_pattern=script_pattern, scripts=scripts, runs=runs,
                           threads=threads, progress=progress)
    if paths is not None:
        return Counts(core.count_files(paths, text_field, options), backend)
    assert documents is not None
    if backend == "reference" or not (isinstance(documents, (list, tuple))
                                      and all(type(d) is str for d in documents)):
        # rows that are dicts (a `datasets` dataset: the text in `text_field`) become their
        # text here; a list of str goes to the Rust core as it is, which reads it fastest
        documents = _inputs.documents_of(None, documents, text_field)
    return Counts(core.count_iter(documents, options), backend)


def load_counts(path: str | os.PathLike[str], backend: str | None = None) -> Counts:
    """Read a count file: :meth:`Counts.load`."""
    return Counts.load(path, backend)


def merge_counts(items: Sequence[Counts | str | os.PathLike[str]], backend: str | None = None) -> Counts:
    """The sum of several counts (:class:`Counts` or count-file paths), as if their corpora had
    been counted together.  The result does not depend on the order or on how merges are
    grouped.  Counts made with different settings are refused, naming the difference; a sum
    over 2**64 - 1 is refused, not wrapped.

    >>> from superword import count
    >>> a = count(["the cat"], backend="reference"); b = count(["the dog"], backend="reference")
    >>> merge_counts([a, b]).most_common(1)
    [('the', 2)]
    """
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
    return Counts(core_of(backend).merge_counts([t._impl for t in tables], names), backend)


def counts_argument(inputs: Any, counts: Any, executor: str | None, ray_address: str | None,
                    backend: str) -> tuple[Counts, str]:
    """``train(counts=...)``'s counts (a :class:`Counts` or a count file's path, then loaded)
    and the name to record for them; what may not come with counts is refused."""
    if inputs is not None:
        raise ValueError("give inputs or counts, not both")
    if executor is not None or ray_address is not None:
        raise ValueError("executor and ray_address are for counting inputs; counts are already counted")
    if isinstance(counts, (str, os.PathLike)):
        return Counts.load(counts, backend), os.fspath(counts)
    if not isinstance(counts, Counts):
        raise TypeError(f"counts must be a superword.Counts or a count file's path, not "
                        f"{type(counts).__name__}")
    return counts, "<counts>"
