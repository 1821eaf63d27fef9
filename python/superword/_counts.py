"""Count files: :func:`count` a corpus once, :meth:`Counts.save` the counts, :func:`merge_counts`
the counts of parts, and ``superword.train(counts=...)`` as many times as needed.  The model
trained from counts is byte for byte the model trained on the text that was counted.

:func:`count` counts in this process or on a Ray cluster (:mod:`superword._ray`); the counts
themselves are :mod:`superword._count_table`'s.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import _inputs, _ray
from ._backend import Progress, _resolve_backend, pretokenization, resolve_threads
from ._count_table import Counts, _check_min_count, _checked, _impl_from_bytes, count_local, load_counts, merge_counts
from ._reference_core import ReferenceCounts

__all__ = ["Counts", "ReferenceCounts", "_check_min_count", "_checked", "_impl_from_bytes", "count",
           "count_local", "load_counts", "merge_counts"]


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
    if not isinstance(runs, bool):
        raise TypeError(f"runs must be True or False, got {type(runs).__name__}")
    main, script, names = pretokenization(script_aware, scripts, pattern, script_pattern)
    threads = resolve_threads(threads)
    if min_count is not None:
        _check_min_count(min_count)
    if not isinstance(text_field, str):
        raise TypeError(f"text_field must be a str, got {type(text_field).__name__}")
    if executor is not None:
        if executor != "ray":
            raise ValueError(f"executor must be None (this process) or 'ray', got {executor!r}")
        result = _ray.count(inputs, pattern=main, script_pattern=script, scripts=names,
                            text_field=text_field, runs=runs, address=ray_address,
                            backend=_resolve_backend(backend), progress=progress)
    elif ray_address is not None:
        raise ValueError("ray_address only applies with executor='ray'")
    else:
        backend = _resolve_backend(backend)
        paths, documents = _inputs.resolve_inputs(inputs, text_field)
        result = count_local(paths, documents, pattern=main, script_pattern=script, scripts=names,
                             text_field=text_field, runs=runs, threads=threads, backend=backend,
                             progress=progress)
    return result if min_count is None else result.prune(min_count)

