"""Counting on a Ray cluster: ``superword.count(..., executor="ray")``,
``superword.train(..., executor="ray")`` and ``superword count --ray [ADDRESS]``.

Counting is a map-reduce, so it spreads:

1. **Map**: one Ray task per input file, or per byte range of a large uncompressed ``.txt`` /
   ``.jsonl`` file (cut at line boundaries, so one big file spreads too; compressed and
   Parquet files are one task each).  Each task counts its part with the Rust core (one
   thread: Ray runs as many tasks as the cluster has CPUs) and returns the count file's bytes.
2. **Reduce**: the tables are merged as a tree of Ray tasks, :data:`FAN_IN` at a time, so the
   driver never holds more than the final table.  Merging is summing, and count files are
   canonical, so the result is the same bytes as counting everything in one process.
3. Training runs on the driver, from the final counts.

A task whose worker dies is run again by Ray (``max_retries``); since a task's result depends
only on its part of the input, the counts stay exact.  The files must be readable at the same
paths on every node (a shared file system); paths are made absolute on the driver.
"""
from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable
from typing import Any

from . import _count_table, _inputs

#: tables merged by one reduce task
FAN_IN = 4
#: byte ranges per CPU of the cluster when splitting large files, and the smallest range
RANGES_PER_CPU = 2
MIN_RANGE_BYTES = 4 << 20
#: how long to wait for a cluster address to answer before giving up
CONNECT_TIMEOUT_SECONDS = 10.0
#: times Ray runs a task again when its worker dies
MAX_RETRIES = 3


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError("executor='ray' (superword count --ray) needs Ray: "
                          "pip install 'superword[ray]'") from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """The TCP endpoint of a cluster address (``host:port`` or ``ray://host:port``), or
    ``None`` for addresses Ray resolves itself (``auto``)."""
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def connect(address: str | None, timeout: float = CONNECT_TIMEOUT_SECONDS) -> Any:
    """Ray, connected: to ``address``, to the cluster this process already joined, or to a
    new local one (``address=None``).  An address that does not answer within ``timeout``
    seconds raises ``ConnectionError`` (Ray itself would wait much longer)."""
    ray = import_ray()
    endpoint = None if address is None else _host_port(address)
    if endpoint is not None:
        try:
            socket.create_connection(endpoint, timeout=timeout).close()
        except OSError as exc:
            raise ConnectionError(f"cannot reach the Ray cluster at {address} within {timeout:g} s "
                                  f"({exc}); check the address and that the cluster is running") from None
    if ray.is_initialized():  # this process already joined a cluster: use it
        return ray
    if address is None:
        ray.init(include_dashboard=False, log_to_driver=False)
        return ray
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ... by version
        raise ConnectionError(f"cannot connect to the Ray cluster at {address}: {exc}") from None
    return ray


def plan(paths: list[str], parts: int) -> list[tuple[str, int, int | None]]:
    """The map tasks: ``(path, start, end)`` byte ranges cut after a ``\\n`` of large
    uncompressed text files, about ``parts`` ranges in all; ``end=None`` for a whole file."""
    total = sum(os.path.getsize(p) for p in paths)
    size = max(total // max(parts, 1) + 1, MIN_RANGE_BYTES)
    out: list[tuple[str, int, int | None]] = []
    for path in paths:
        length = os.path.getsize(path)
        if path.lower().endswith((".gz", ".zst", ".parquet")) or length <= size:
            out.append((path, 0, None))
            continue
        start = 0
        with open(path, "rb") as f:
            while start < length:
                f.seek(min(start + size, length))
                f.readline()  # to the end of the line the cut falls in
                end = min(f.tell(), length)
                out.append((path, start, end))
                start = end
    return out


def _count_part(path: str, start: int, end: int | None, options: dict[str, Any],
                kill_marker: str | None = None) -> bytes:
    """A map task: the count file of one file or byte range."""
    if kill_marker is not None and not os.path.exists(kill_marker):
        # tests: the first attempt's worker dies mid-task, as a crashed node would
        with open(kill_marker, "w"):
            pass
        os.kill(os.getpid(), signal.SIGKILL)
    settings = dict(options)
    text_field = settings.pop("text_field")
    if end is not None:
        documents = _inputs.read_range(path, start, end, text_field)
        counts = _count_table.count_local(None, documents, text_field=text_field, threads=1, **settings)
    elif _inputs.read_in_rust(path):
        counts = _count_table.count_local([path], None, text_field=text_field, threads=1, **settings)
    else:
        counts = _count_table.count_local(None, _inputs.read_file(path, text_field), text_field=text_field,
                                     threads=1, **settings)
    return counts.to_bytes()


def _merge_parts(backend: str, *parts: bytes) -> bytes:
    """A reduce task: the sum of count files."""
    tables = [_count_table.Counts(_count_table._impl_from_bytes(p, f"part {i}", backend), backend)
              for i, p in enumerate(parts)]
    return _count_table.merge_counts(tables, backend=backend).to_bytes()


def count(inputs: Any, *, pattern: str, script_pattern: str | None, scripts: list[str] | None,
          text_field: str, runs: bool, address: str | None, backend: str,
          kill_marker: str | None = None,
          progress: Callable[[str, int, int], object] | None = None) -> _count_table.Counts:
    """:func:`superword.count` on Ray (checked arguments)."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if (not isinstance(inputs, (list, tuple)) or not inputs or not _inputs._looks_like_a_path(inputs[0])
            or not all(isinstance(i, (str, os.PathLike)) for i in inputs)):
        raise TypeError("executor='ray' needs file paths that the Ray workers can read, not documents "
                        "in memory")
    paths = _inputs.expand_paths(inputs)
    if _inputs.STDIN in paths:
        raise ValueError("executor='ray' cannot read standard input; give files")
    paths = [os.path.abspath(p) for p in paths]
    ray = connect(address)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    options = dict(pattern=pattern, script_pattern=script_pattern, scripts=scripts, text_field=text_field,
                   runs=runs, backend=backend)
    count_task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(_count_part)
    merge_task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(_merge_parts)
    # the first task of the plan dies once when a kill marker is given (tests)
    refs = [count_task.remote(path, start, end, options, kill_marker if i == 0 else None)
            for i, (path, start, end) in enumerate(plan(paths, RANGES_PER_CPU * cpus))]
    tasks = list(refs)
    while len(refs) > 1:  # merge as a tree, FAN_IN tables per task
        refs = [merge_task.remote(backend, *refs[i:i + FAN_IN]) if len(refs[i:i + FAN_IN]) > 1 else refs[i]
                for i in range(0, len(refs), FAN_IN)]
        tasks += [r for r in refs if r not in tasks]
    if progress is not None:  # tasks done of tasks planned (count and merge tasks alike)
        pending, done = tasks, 0
        progress("ray_tasks", 0, len(tasks))
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            done += len(ready)
            progress("ray_tasks", done, len(tasks))
    data = ray.get(refs[0])
    return _count_table.Counts(_count_table._impl_from_bytes(data, "the counts from Ray", backend), backend)
