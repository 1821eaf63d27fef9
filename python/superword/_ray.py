"""Counting and training on a Ray cluster: ``superword.count(..., executor="ray")``,
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

BoundlessBPE and SuperBPE train in two such passes instead (:func:`train_two_pass`), because
their counts would hold every distinct letter run of the corpus, a table that grows with the
text itself: pass 1 counts the pretokens only and phase 1 runs on the driver; pass 2 sends the
word model to the tasks, which turn their part of the text into supermerge candidates (the
letter runs cut with the word model, added up); those tables are summed as a tree too, and
phase 2 runs on the driver.  The model is the one trained in one process, byte for byte.

A task whose worker dies is run again by Ray (``max_retries``); since a task's result depends
only on its part of the input (and the word model), the results stay exact.  The files must
be readable at the same paths on every node (a shared file system); paths are made absolute
on the driver.
"""
from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable
from typing import Any

from . import _count_table, _inputs
from ._backend import _core_module

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


def _documents_of(path: str, start: int, end: int | None, text_field: str) -> tuple[list[str] | None, Any]:
    """A map task's input: ``([path], None)`` for a whole file the Rust core reads, else
    ``(None, documents)``."""
    if end is not None:
        return None, _inputs.read_range(path, start, end, text_field)
    if _inputs.read_in_rust(path):
        return [path], None
    return None, _inputs.read_file(path, text_field)


def _die_once(kill_marker: str | None) -> None:
    """Tests: the first attempt's worker dies mid-task, as a crashed node would."""
    if kill_marker is not None and not os.path.exists(kill_marker):
        with open(kill_marker, "w"):
            pass
        os.kill(os.getpid(), signal.SIGKILL)


def _count_part(path: str, start: int, end: int | None, options: dict[str, Any],
                kill_marker: str | None = None, threads: int = 1) -> bytes:
    """A map task: the count file of one file or byte range."""
    _die_once(kill_marker)
    settings = dict(options)
    text_field = settings.pop("text_field")
    paths, documents = _documents_of(path, start, end, text_field)
    counts = _count_table.count_local(paths, documents, text_field=text_field, threads=threads, **settings)
    return counts.to_bytes()


def _merge_parts(backend: str, *parts: bytes) -> bytes:
    """A reduce task: the sum of count files."""
    tables = [_count_table.Counts(_count_table._impl_from_bytes(p, f"part {i}", backend), backend)
              for i, p in enumerate(parts)]
    return _count_table.merge_counts(tables, backend=backend).to_bytes()


def _candidates_part(path: str, start: int, end: int | None, word_model: str, text_field: str,
                     kill_marker: str | None = None, threads: int = 1) -> bytes:
    """A map task of pass 2: the supermerge candidates of one file or byte range, cut with the
    word model (a candidate table's bytes)."""
    _die_once(kill_marker)
    _core = _core_module()  # (the two-pass path is the Rust backend's)
    paths, documents = _documents_of(path, start, end, text_field)
    if paths is not None:
        table = _core.candidates_files(paths, text_field, word_model, threads=threads, progress=None)
    else:
        table = _core.candidates_iter(documents, word_model, threads=threads, progress=None)
    return bytes(table.to_bytes())


def _merge_candidate_parts(*parts: bytes) -> bytes:
    """A reduce task of pass 2: the sum of candidate tables."""
    _core = _core_module()
    tables = [_core.Candidates.from_bytes(p, f"candidate part {i}") for i, p in enumerate(parts)]
    return bytes(_core.merge_candidates(tables, [f"candidate part {i}" for i in range(len(parts))]).to_bytes())


class _Local:
    """Runs the tasks of :func:`_map_reduce` one after another in this process, each on
    ``threads`` threads: the path Ray takes, without Ray (tests, and one machine)."""

    def __init__(self, threads: int):
        self.threads = threads

    def cpus(self) -> int:
        return self.threads

    def task(self, function: Callable[..., bytes], threads: bool) -> Callable[..., Any]:
        if threads:
            return lambda *args: function(*args, threads=self.threads)
        return function

    def done(self, pending: list[Any]) -> tuple[list[Any], list[Any]]:
        return pending[:1], pending[1:]

    def get(self, result: Any) -> bytes:
        return result


class _OnRay:
    """Runs the tasks of :func:`_map_reduce` on a Ray cluster, a CPU each, retried when their
    worker dies."""

    def __init__(self, ray: Any):
        self.ray = ray

    def cpus(self) -> int:
        return int(self.ray.cluster_resources().get("CPU", 1))

    def task(self, function: Callable[..., bytes], threads: bool) -> Callable[..., Any]:
        return self.ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(function).remote

    def done(self, pending: list[Any]) -> tuple[list[Any], list[Any]]:
        ready, rest = self.ray.wait(pending, num_returns=1)
        return ready, rest

    def get(self, ref: Any) -> bytes:
        return self.ray.get(ref)


def _map_reduce(runner: _Local | _OnRay, part: Callable[..., bytes], args: list[tuple[Any, ...]],
                merge: Callable[..., bytes], merge_args: tuple[Any, ...], stage: str,
                progress: Callable[[str, int, int], object] | None) -> bytes:
    """``part(*a)`` for each ``a`` of ``args``, then ``merge(*merge_args, *results)`` as a tree,
    :data:`FAN_IN` results at a time, so that no task holds more than ``FAN_IN`` tables and
    the driver only the final one.  ``progress(stage, done, planned)`` counts finished tasks."""
    map_task, merge_task = runner.task(part, threads=True), runner.task(merge, threads=False)
    refs = [map_task(*a) for a in args]
    tasks = list(refs)
    while len(refs) > 1:  # merge as a tree, FAN_IN tables per task
        refs = [merge_task(*merge_args, *refs[i:i + FAN_IN]) if len(refs[i:i + FAN_IN]) > 1 else refs[i]
                for i in range(0, len(refs), FAN_IN)]
        tasks += [r for r in refs if not any(r is t for t in tasks)]
    if progress is not None:  # tasks done of tasks planned (map and merge tasks alike)
        pending, done = tasks, 0
        progress(stage, 0, len(tasks))
        while pending:
            ready, pending = runner.done(pending)
            done += len(ready)
            progress(stage, done, len(tasks))
    return runner.get(refs[0])


def _paths(inputs: Any) -> list[str]:
    """The files of ``inputs`` for map tasks, as absolute paths; documents in memory and
    standard input are refused."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if (not isinstance(inputs, (list, tuple)) or not inputs or not _inputs._looks_like_a_path(inputs[0])
            or not all(isinstance(i, (str, os.PathLike)) for i in inputs)):
        raise TypeError("executor='ray' needs file paths that the Ray workers can read, not documents "
                        "in memory")
    paths = _inputs.expand_paths(inputs)
    if _inputs.STDIN in paths:
        raise ValueError("executor='ray' cannot read standard input; give files")
    return [os.path.abspath(p) for p in paths]


def _count(runner: _Local | _OnRay, paths: list[str], options: dict[str, Any], backend: str,
           kill_marker: str | None, progress: Callable[[str, int, int], object] | None) -> bytes:
    """The count file of ``paths``, counted by ``runner``'s tasks."""
    # the first task of the plan dies once when a kill marker is given (tests)
    args = [(path, start, end, options, kill_marker if i == 0 else None)
            for i, (path, start, end) in enumerate(plan(paths, RANGES_PER_CPU * runner.cpus()))]
    return _map_reduce(runner, _count_part, args, _merge_parts, (backend,), "ray_tasks", progress)


def count(inputs: Any, *, pattern: str, script_pattern: str | None, scripts: list[str] | None,
          text_field: str, runs: bool, address: str | None, backend: str,
          kill_marker: str | None = None,
          progress: Callable[[str, int, int], object] | None = None) -> _count_table.Counts:
    """:func:`superword.count` on Ray (checked arguments)."""
    paths = _paths(inputs)
    ray = connect(address)
    options = dict(pattern=pattern, script_pattern=script_pattern, scripts=scripts, text_field=text_field,
                   runs=runs, backend=backend)
    data = _count(_OnRay(ray), paths, options, backend, kill_marker, progress)
    return _count_table.Counts(_count_table._impl_from_bytes(data, "the counts from Ray", backend), backend)


def train_two_pass(inputs: Any, *, pattern: str, script_pattern: str | None, scripts: list[str] | None,
                   text_field: str, vocab_size: int, algorithm: str, supermerges: int | None,
                   greedy_split: bool, tau: float, blowup: bool, threads: int,
                   progress: Callable[[str, int, int], object] | None, address: str | None,
                   local: bool = False, kill_marker: str | None = None) -> tuple[Any, _count_table.Counts]:
    """BoundlessBPE or SuperBPE in two passes over the files (checked arguments), on Ray, or
    with ``local=True`` shard by shard in this process: the model of training on the text
    here, byte for byte.  Returns the Rust core's tokenizer and the counts of pass 1.

    1. Pass 1 counts the pretokens only (no letter runs) and phase 1 trains the word model on
       the driver.
    2. Pass 2 reads the files again, shard by shard: each task counts its shard's letter runs
       and cuts them with the word model into supermerge candidates, added up; the candidate
       tables are summed as a tree of tasks, and stage 3 and phase 2 run on the driver on the
       sum.  No task and not the driver ever holds the runs of more than one shard.
    """
    _core = _core_module()
    paths = _paths(inputs)
    runner: _Local | _OnRay = _Local(threads) if local else _OnRay(connect(address))
    options = dict(pattern=pattern, script_pattern=script_pattern, scripts=scripts, text_field=text_field,
                   runs=False, backend="rust")
    data = _count(runner, paths, options, "rust", None, progress)
    counts = _count_table.Counts(_count_table._impl_from_bytes(data, "the counts of pass 1", "rust"), "rust")
    one = _core.train_phase_one(counts._impl, vocab_size=vocab_size, algorithm=algorithm,
                                supermerges=supermerges, greedy_split=greedy_split, tau=tau, blowup=blowup,
                                threads=threads, progress=progress)
    # the shards of pass 2 are planned again: the same files, maybe another cluster size
    args = [(path, start, end, one.word_model, text_field, kill_marker if i == 0 else None)
            for i, (path, start, end) in enumerate(plan(paths, RANGES_PER_CPU * runner.cpus()))]
    table = _map_reduce(runner, _candidates_part, args, _merge_candidate_parts, (), "ray_candidate_tasks",
                        progress)
    return one.finish(table, "the candidates of pass 2", threads=threads, progress=progress), counts
