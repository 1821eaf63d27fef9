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
only on its part of the input (and the word model), the results stay exact.  Local files must be readable at the
same paths on every node (a shared file system); paths are made absolute on the driver.
Names with a scheme (``s3://``, ``gs://``, ``hf://``, ``file://``) are read by the workers
themselves through fsspec, so the driver needs no shared file system; a streaming Hugging
Face ``datasets.IterableDataset`` is counted a shard per task.

Connecting is bounded in time: an address is first asked for an HTTP/2 handshake (Ray's
control plane speaks gRPC), so a port that answers as something else, or not at all, is an
error within :data:`CONNECT_TIMEOUT_SECONDS`; and while the driver waits for its tasks it
looks at the cluster's control endpoint every :data:`HEARTBEAT_SECONDS`, so a cluster that
stops answering is an error after :data:`STALL_SECONDS` instead of a wait without end.  Ray's
token authentication is Ray's own: the driver's ``RAY_AUTH_MODE=token`` with
``RAY_AUTH_TOKEN`` or ``RAY_AUTH_TOKEN_PATH`` (or ``~/.ray/auth_token``) are passed to Ray as
they are.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn

from . import _count_table, _inputs
from ._backend import _core_module

#: tables merged by one reduce task
FAN_IN = 4
#: byte ranges per CPU of the cluster when splitting large files, and the smallest range
RANGES_PER_CPU = 2
MIN_RANGE_BYTES = 4 << 20
#: how long to wait for a cluster address to answer before giving up
CONNECT_TIMEOUT_SECONDS = 10.0
#: while tasks run: how often the driver looks at the cluster when no task has finished, and
#: how long the cluster may fail to answer before the count is given up
HEARTBEAT_SECONDS = 5.0
STALL_SECONDS = 30.0
#: the first bytes an HTTP/2 client sends (RFC 9113, 3.4), then an empty SETTINGS frame
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
#: times Ray runs a task again when its worker dies
MAX_RETRIES = 3
#: the most partitions (by hash) of the pairs counted to cut pass 2 in the tasks
PAIR_PARTITIONS = 16
#: whether BoundlessBPE without the greedy split cuts its candidates in the tasks (three
#: passes over the text; else two, and the driver gathers the uncut candidates)
CUT_IN_TASKS = True
#: phase 2 of that path in parts (a segment table split by hash over this many holders, Ray
#: actors on a cluster, objects in this process without Ray): ``None`` for as many as the map
#: tasks of pass 2, between 2 and :data:`MAX_PHASE2_PARTS`; ``0`` for the driver holding every
#: segment itself
PHASE2_PARTS: int | None = None
MAX_PHASE2_PARTS = 16


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError("executor='ray' (superword count --ray) needs Ray: "
                          "pip install 'superword[ray]'") from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """The TCP endpoint of a cluster address (``host:port`` or ``ray://host:port``), or
    ``None`` for addresses Ray resolves itself (``auto``).

    >>> _host_port("ray://head:10001"), _host_port("[::1]:6379"), _host_port("auto")
    (('head', 10001), ('::1', 6379), None)
    """
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def is_address(text: str) -> bool:
    """Whether ``text`` reads as a cluster address for ``--ray``: ``auto``, ``local``,
    ``ray://...`` or ``host:port`` (a port of digits), rather than an input file.

    >>> [is_address(t) for t in ("auto", "head:6379", "ray://head:10001", "corpus.txt", "s3://b/c")]
    [True, True, True, False, False]
    """
    return text in ("auto", "local") or text.startswith("ray://") or (
        "://" not in text and _host_port(text) is not None)


def _tls() -> bool:
    """Whether this process talks TLS to Ray (``RAY_USE_TLS``), which the handshake probe
    cannot speak."""
    return os.environ.get("RAY_USE_TLS", "0").strip().lower() in ("1", "true", "yes")


def probe(address: str, endpoint: tuple[str, int], timeout: float) -> None:
    """Raise ``ConnectionError`` unless ``endpoint`` answers an HTTP/2 handshake (as Ray's
    gRPC servers do, the GCS and the Ray Client server alike) within ``timeout`` seconds.
    With TLS, only that the port accepts a connection is checked."""
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection(endpoint, timeout=timeout)
    except OSError as exc:
        raise ConnectionError(f"cannot reach the Ray cluster at {address} within {timeout:g} s "
                              f"({exc}); check the address and that the cluster is running") from None
    with sock:
        if _tls():
            return
        reply = b""
        try:
            sock.sendall(_HTTP2_PREFACE)
            while len(reply) < 9:  # a frame header: length (3), type (1), flags (1), stream (4)
                sock.settimeout(max(deadline - time.monotonic(), 0.01))
                chunk = sock.recv(9 - len(reply))
                if not chunk:
                    break
                reply += chunk
        except OSError:  # a time-out, or the peer reset the connection
            pass
    if len(reply) == 9 and reply[3] == 4 and reply[5:9] == bytes(4):  # a SETTINGS frame
        return
    seen = (f"it replied {reply[:9]!r}, which is not HTTP/2" if reply else
            f"it said nothing within {timeout:g} s" if time.monotonic() >= deadline else
            "it closed the connection")
    raise ConnectionError(
        f"{address} accepts connections but does not answer as a Ray cluster: {seen}.  Give the "
        f"head node's GCS port (host:6379 by default, as `ray start --head` prints it) or "
        f"ray://host:10001 for the Ray Client server; the dashboard port (8265) is not a cluster "
        f"address")


def _explain(address: str, exc: BaseException) -> str:
    """The message of a failed ``ray.init`` at an address that passed :func:`probe`: it speaks
    gRPC, so the likeliest cause is a cluster that refused this driver's token (Ray reports
    that only in its log, as a connection failure), which the message says how to give."""
    mode = os.environ.get("RAY_AUTH_MODE")
    where = ("RAY_AUTH_TOKEN" if os.environ.get("RAY_AUTH_TOKEN") else
             "RAY_AUTH_TOKEN_PATH" if os.environ.get("RAY_AUTH_TOKEN_PATH") else None)
    now = (f"this process has RAY_AUTH_MODE={mode}" if mode is not None else
           "RAY_AUTH_MODE is not set here") + (f" and a token in {where}" if where else "")
    return (f"cannot connect to the Ray cluster at {address}: {exc}.  The address answers as a gRPC "
            f"server; if the cluster was started with token authentication (RAY_AUTH_MODE=token), "
            f"set RAY_AUTH_MODE=token here too, with the cluster's token in RAY_AUTH_TOKEN, in a file "
            f"named by RAY_AUTH_TOKEN_PATH, or in ~/.ray/auth_token ({now}); Ray and Python must "
            f"also be the versions the cluster runs")


def connect(address: str | None, timeout: float | None = None) -> Any:
    """Ray, connected: to ``address``, to the cluster this process already joined, or to a
    new local one (``address=None`` or ``"local"``).  An address that does not answer as a
    Ray cluster within ``timeout`` seconds raises ``ConnectionError`` (Ray itself would wait
    much longer).  Ray's own settings (``RAY_AUTH_MODE``, ``RAY_AUTH_TOKEN``, ...) come from
    the environment, as Ray reads them."""
    ray = import_ray()
    timeout = CONNECT_TIMEOUT_SECONDS if timeout is None else timeout
    if address == "local":
        address = None
    endpoint = None if address is None else _host_port(address)
    if endpoint is not None:
        probe(address, endpoint, timeout)  # type: ignore[arg-type]
    if ray.is_initialized():  # this process already joined a cluster: use it
        return ray
    if address is None:
        ray.init(include_dashboard=False, log_to_driver=False)
        return ray
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, AuthenticationError, ...
        raise ConnectionError(_explain(address, exc)) from None
    return ray


def control_endpoint(ray: Any, address: str | None) -> tuple[str, int] | None:
    """The endpoint the driver watches while its tasks run: the cluster's GCS (or the Ray
    Client server of a ``ray://`` address)."""
    if address is not None and address.startswith("ray://"):
        return _host_port(address)
    try:
        gcs = ray.get_runtime_context().gcs_address
    except Exception:  # a Ray Client session has no GCS address of its own
        gcs = None
    return _host_port(gcs) if isinstance(gcs, str) else None


def wait_one(ray: Any, pending: list[Any], endpoint: tuple[str, int] | None,
             heartbeat: float | None = None, stall: float | None = None) -> tuple[list[Any], list[Any]]:
    """``ray.wait(pending, num_returns=1)``, but while nothing finishes the cluster's
    ``endpoint`` is probed every ``heartbeat`` seconds; when it has not answered for ``stall``
    seconds, ``ConnectionError``.

    ``ray.wait`` runs on a thread of its own: with the cluster's GCS stopped, it does not
    return even with a ``timeout`` (measured: over 120 s with ``timeout=1``), so the waiting
    is watched from here and, on giving up, left to that (daemon) thread."""
    heartbeat = HEARTBEAT_SECONDS if heartbeat is None else heartbeat
    stall = STALL_SECONDS if stall is None else stall
    result: dict[str, Any] = {}
    finished = threading.Event()

    def waiting() -> None:
        try:
            result["value"] = ray.wait(pending, num_returns=1)
        except BaseException as exc:  # handed to the caller's thread
            result["error"] = exc
        finally:
            finished.set()
    threading.Thread(target=waiting, name="superword-ray-wait", daemon=True).start()
    silent_since: float | None = None
    while not finished.wait(heartbeat):
        if endpoint is None:
            continue
        try:
            probe("the Ray cluster", endpoint, min(heartbeat, stall))
            silent_since = None
        except ConnectionError as exc:
            now = time.monotonic()
            silent_since = now if silent_since is None else silent_since
            if now - silent_since >= stall:
                # Ray's exit hook (ray.shutdown) would wait for the lost cluster for ever, so
                # that the process could not end once the error is reported
                atexit.unregister(ray.shutdown)
                global _cluster_lost
                _cluster_lost = True
                raise ConnectionError(
                    f"the Ray cluster at {endpoint[0]}:{endpoint[1]} stopped answering while "
                    f"{len(pending)} tasks were pending (for {stall:g} s; {exc})") from None
    if "error" in result:
        raise result["error"]
    return result["value"]


#: whether a cluster this process waited on stopped answering (see :func:`end`)
_cluster_lost = False


def end(code: int) -> NoReturn:
    """End the process with exit status ``code``.  After a cluster stopped answering
    (:func:`wait_one` gave up), the interpreter's teardown would still destroy Ray's core
    worker while its threads wait for the lost cluster, which crashes the process now and then
    (seen: SIGSEGV after the error was printed), so then the process ends at once, its
    streams flushed; otherwise as ``sys.exit`` does."""
    if _cluster_lost:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):  # closed or replaced
                stream.flush()
        os._exit(code)
    sys.exit(code)


def plan(paths: list[str], parts: int) -> list[tuple[str, int, int | None]]:
    """The map tasks: ``(path, start, end)`` byte ranges cut after a ``\\n`` of large
    uncompressed text files, about ``parts`` ranges in all; ``end=None`` for a whole file."""
    sizes = [_inputs.file_size(p) for p in paths]
    size = max(sum(sizes) // max(parts, 1) + 1, MIN_RANGE_BYTES)
    out: list[tuple[str, int, int | None]] = []
    for path, length in zip(paths, sizes):
        if path.lower().endswith((".gz", ".zst", ".parquet")) or length <= size:
            out.append((path, 0, None))
            continue
        start = 0
        with _inputs.open_binary(path) as f:
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


def _count_shard(dataset: Any, index: int, options: dict[str, Any], threads: int = 1) -> bytes:
    """A map task: the count file of shard ``index`` of a streaming ``datasets`` dataset."""
    settings = dict(options)
    text_field = settings.pop("text_field")
    documents = _shard_documents(dataset, index, text_field)
    return _count_table.count_local(None, documents, text_field=text_field, threads=threads,
                                    **settings).to_bytes()


def _shard_documents(dataset: Any, index: int, text_field: str) -> Any:
    """The documents of shard ``index`` of a streaming ``datasets`` dataset."""
    shard = dataset.shard(num_shards=dataset.num_shards, index=index)
    return _inputs.documents_of(None, shard, text_field)


def _candidates_shard(dataset: Any, index: int, word_model: str, text_field: str, threads: int = 1) -> bytes:
    """A map task of pass 2 over a streaming dataset: the candidates of shard ``index``."""
    documents = _shard_documents(dataset, index, text_field)
    table = _core_module().candidates_iter(documents, word_model, threads=threads, progress=None)
    return bytes(table.to_bytes())


def is_sharded_dataset(inputs: object) -> bool:
    """Whether ``inputs`` is a Hugging Face ``datasets.IterableDataset`` (streaming), which
    Ray counts a shard per task."""
    return (type(inputs).__name__ == "IterableDataset" and hasattr(inputs, "num_shards")
            and hasattr(inputs, "shard"))


def worker_paths(inputs: Any) -> list[str]:
    """The files of ``inputs`` as the workers read them: local paths made absolute (they must
    be on a file system every node shares), ``scheme://`` names as they are (but
    ``memory://``, which lives in this process only)."""
    paths = _inputs.expand_paths(inputs)
    if _inputs.STDIN in paths:
        raise ValueError("executor='ray' cannot read standard input; give files")
    for path in paths:
        if path.lower().startswith("memory://"):
            raise ValueError(f"executor='ray' cannot read {path}: a memory:// file lives in this "
                             f"process only, the Ray workers cannot see it")
    return [p if _inputs.is_url(p) else os.path.abspath(p) for p in paths]


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


def _pairs_part(path: str, start: int, end: int | None, word_model: str, text_field: str, partitions: int,
                threads: int = 1) -> list[bytes]:
    """A map task of step 1 of pass 2 cut in the tasks: the pairs of the candidates of one file
    or byte range, in ``partitions`` pair tables by hash."""
    _core = _core_module()
    paths, documents = _documents_of(path, start, end, text_field)
    if paths is not None:
        tables = _core.pairs_files(paths, text_field, word_model, partitions, threads=threads, progress=None)
    else:
        tables = _core.pairs_iter(documents, word_model, partitions, threads=threads, progress=None)
    return [bytes(t.to_bytes()) for t in tables]


def _pairs_shard(dataset: Any, index: int, word_model: str, text_field: str, partitions: int,
                 threads: int = 1) -> list[bytes]:
    """:func:`_pairs_part` of shard ``index`` of a streaming dataset."""
    documents = _shard_documents(dataset, index, text_field)
    tables = _core_module().pairs_iter(documents, word_model, partitions, threads=threads, progress=None)
    return [bytes(t.to_bytes()) for t in tables]


def _merge_pair_parts(*parts: bytes) -> bytes:
    """A reduce task of step 1: the sum of one partition's pair tables."""
    _core = _core_module()
    names = [f"pair part {i}" for i in range(len(parts))]
    tables = [_core.Pairs.from_bytes(p, n) for p, n in zip(parts, names)]
    return bytes(_core.merge_pairs(tables, names).to_bytes())


def _strong_part(threshold: int, part: bytes) -> bytes:
    """The last task of a partition in step 1: its pairs counted more than ``threshold`` times."""
    return bytes(_core_module().Pairs.from_bytes(part, "a partition's pairs").kept_above(threshold).to_bytes())


def _segments_part(path: str, start: int, end: int | None, word_model: str, text_field: str, strong: bytes,
                   kill_marker: str | None = None, threads: int = 1) -> bytes:
    """A map task of step 2 of pass 2 cut in the tasks: the segments of the candidates of one
    file or byte range, cut where no strong pair stands (a segment table's bytes)."""
    _die_once(kill_marker)
    _core = _core_module()
    pairs = _core.Pairs.from_bytes(strong, "the strong pairs")
    paths, documents = _documents_of(path, start, end, text_field)
    if paths is not None:
        table = _core.segments_files(paths, text_field, word_model, pairs, threads=threads, progress=None)
    else:
        table = _core.segments_iter(documents, word_model, pairs, threads=threads, progress=None)
    return bytes(table.to_bytes())


def _segments_shard(dataset: Any, index: int, word_model: str, text_field: str, strong: bytes,
                    threads: int = 1) -> bytes:
    """:func:`_segments_part` of shard ``index`` of a streaming dataset."""
    _core = _core_module()
    documents = _shard_documents(dataset, index, text_field)
    pairs = _core.Pairs.from_bytes(strong, "the strong pairs")
    return bytes(_core.segments_iter(documents, word_model, pairs, threads=threads, progress=None).to_bytes())


def _merge_segment_parts(*parts: bytes) -> bytes:
    """A reduce task of step 2: the sum of segment tables."""
    return _core_module().merge_segment_bytes(list(parts), [f"segment part {i}" for i in range(len(parts))])


class _Local:
    """Runs the tasks of :func:`_map_reduce` one after another in this process, each on
    ``threads`` threads: the path Ray takes, without Ray (tests, and one machine)."""

    def __init__(self, threads: int):
        self.threads = threads

    def cpus(self) -> int:
        return self.threads

    def task(self, function: Callable[..., Any], threads: bool, returns: int = 1) -> Callable[..., Any]:
        if threads:
            return lambda *args: function(*args, threads=self.threads)
        return function

    def put(self, value: bytes) -> Any:
        return value

    def done(self, pending: list[Any]) -> tuple[list[Any], list[Any]]:
        return pending[:1], pending[1:]

    def get(self, result: Any) -> bytes:
        return result

    def actor(self, cls: type, *args: Any) -> Any:
        return cls(*args)

    def call(self, holders: list[Any], method: str, *args: Any, changes: bool = False) -> list[Any]:
        return [getattr(h, method)(*args) for h in holders]

    def release(self, holders: list[Any]) -> None:
        holders.clear()


class _OnRay:
    """Runs the tasks of :func:`_map_reduce` on a Ray cluster, a CPU each, retried when their
    worker dies; while it waits, the cluster is watched (:func:`wait_one`)."""

    def __init__(self, ray: Any, address: str | None):
        self.ray = ray
        self.endpoint = control_endpoint(ray, address)

    def cpus(self) -> int:
        return int(self.ray.cluster_resources().get("CPU", 1))

    def task(self, function: Callable[..., Any], threads: bool, returns: int = 1) -> Callable[..., Any]:
        # (a task of several results returns a list of them, one object each)
        return self.ray.remote(num_cpus=1, max_retries=MAX_RETRIES, num_returns=returns)(function).remote

    def put(self, value: bytes) -> Any:
        return self.ray.put(value)

    def done(self, pending: list[Any]) -> tuple[list[Any], list[Any]]:
        return wait_one(self.ray, pending, self.endpoint)

    def get(self, ref: Any) -> bytes:
        return self.ray.get(ref)

    def actor(self, cls: type, *args: Any) -> _Actor:
        return _Actor(self._start(cls, args), cls, args)

    def _start(self, cls: type, args: tuple[Any, ...]) -> Any:
        # (no CPU held: an actor waits between merges, and the parts are spread over the nodes,
        # for their memory)
        return self.ray.remote(num_cpus=0, scheduling_strategy="SPREAD")(cls).remote(*args)

    def call(self, holders: list[_Actor], method: str, *args: Any, changes: bool = False) -> list[Any]:
        """``method(*args)`` on every actor of ``holders``, their results in order.  An actor
        whose process died is started again from its arguments and given the calls that
        changed it so far (``changes=True`` records one) before this one, up to
        :data:`MAX_RETRIES` times."""
        refs = [getattr(h.handle, method).remote(*args) for h in holders]
        while True:
            _, pending = self.ray.wait(refs, num_returns=len(refs), timeout=HEARTBEAT_SECONDS)
            if not pending:
                break
            wait_one(self.ray, pending, self.endpoint)
        results = []
        for h, ref in zip(holders, refs):
            try:
                results.append(self.ray.get(ref))
            except self.ray.exceptions.RayActorError:
                results.append(self._restart(h, method, args))
            if changes:
                h.log.append((method, args))
        return results

    def _restart(self, h: _Actor, method: str, args: tuple[Any, ...]) -> Any:
        for attempt in range(MAX_RETRIES):
            try:
                h.handle = self._start(h.cls, h.args)
                self.ray.get(h.handle.replay.remote(h.log))
                return self.ray.get(getattr(h.handle, method).remote(*args))
            except self.ray.exceptions.RayActorError:
                if attempt + 1 == MAX_RETRIES:
                    raise
        raise AssertionError("not reached")

    def release(self, holders: list[_Actor]) -> None:
        for h in holders:
            self.ray.kill(h.handle)
        holders.clear()


class _Actor:
    """A Ray actor with what starting it again takes: its class and arguments (object
    references, kept alive here), and the calls that changed it, in order."""

    def __init__(self, handle: Any, cls: type, args: tuple[Any, ...]):
        self.handle, self.cls, self.args = handle, cls, args
        self.log: list[tuple[str, tuple[Any, ...]]] = []


def _tree(merge_task: Callable[..., Any], merge_args: tuple[Any, ...], refs: list[Any],
          tasks: list[Any]) -> Any:
    """``merge_task(*merge_args, *refs)`` as a tree, :data:`FAN_IN` results at a time (the new
    tasks are added to ``tasks``): the root's result."""
    while len(refs) > 1:
        refs = [merge_task(*merge_args, *refs[i:i + FAN_IN]) if len(refs[i:i + FAN_IN]) > 1 else refs[i]
                for i in range(0, len(refs), FAN_IN)]
        tasks += [r for r in refs if not any(r is t for t in tasks)]
    return refs[0]


def _wait(runner: _Local | _OnRay, tasks: list[Any], stage: str,
          progress: Callable[[str, int, int], object] | None) -> None:
    """Wait for ``tasks``, reporting ``progress(stage, done, planned)``."""
    if progress is not None:  # tasks done of tasks planned (map and merge tasks alike)
        pending, done = tasks, 0
        progress(stage, 0, len(tasks))
        while pending:
            ready, pending = runner.done(pending)
            done += len(ready)
            progress(stage, done, len(tasks))


def _map_reduce(runner: _Local | _OnRay, part: Callable[..., bytes], args: list[tuple[Any, ...]],
                merge: Callable[..., bytes], merge_args: tuple[Any, ...], stage: str,
                progress: Callable[[str, int, int], object] | None) -> bytes:
    """``part(*a)`` for each ``a`` of ``args``, then ``merge(*merge_args, *results)`` as a tree,
    :data:`FAN_IN` results at a time, so that no task holds more than ``FAN_IN`` tables and
    the driver only the final one.  ``progress(stage, done, planned)`` counts finished tasks."""
    return runner.get(_map_reduce_ref(runner, part, args, merge, merge_args, stage, progress))


def _map_reduce_ref(runner: _Local | _OnRay, part: Callable[..., bytes], args: list[tuple[Any, ...]],
                    merge: Callable[..., bytes], merge_args: tuple[Any, ...], stage: str,
                    progress: Callable[[str, int, int], object] | None) -> Any:
    """:func:`_map_reduce`, the final table left where it is (on the cluster, with Ray)."""
    map_task, merge_task = runner.task(part, threads=True), runner.task(merge, threads=False)
    refs = [map_task(*a) for a in args]
    tasks = list(refs)
    root = _tree(merge_task, merge_args, refs, tasks)
    _wait(runner, tasks, stage, progress)
    return root


def _split_segments(source: bytes, parts: int, table: bytes) -> list[bytes]:
    """The task that splits the corpus' segment table into phase 2's parts."""
    return _core_module().split_segments(table, "the segments of pass 2", source, parts)


def _peak_bytes() -> int:
    """This process' peak resident memory (``VmHWM`` in ``/proc/self/status``; 0 where there is
    none)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class _Part:
    """A part of phase 2: some of the corpus' segments with the positions of their pairs (the
    body of a Ray actor, or an object in this process)."""

    #: (tests) the merge at which the part given a kill marker dies, once
    DIE_AT_MERGE = 5

    def __init__(self, data: bytes, name: str, kill_marker: str | None = None):
        self.part = _core_module().Phase2Part(data, name)
        self.kill_marker, self.merges = kill_marker, 0

    def pair_counts(self) -> bytes:
        return bytes(self.part.pair_counts())

    def merge(self, left: int, right: int, merged: int) -> tuple[bool, bytes]:
        self.merges += 1
        if self.merges == self.DIE_AT_MERGE:
            _die_once(self.kill_marker)
        flag, delta = self.part.merge(left, right, merged)
        return flag, bytes(delta)

    def replay(self, calls: list[tuple[str, tuple[Any, ...]]]) -> None:
        """The calls a part that died had been given (its results were had then)."""
        for method, args in calls:
            getattr(self, method)(*args)

    def token_counts(self) -> bytes:
        return bytes(self.part.token_counts())

    def sizes(self) -> tuple[int, int, int, int]:
        """Segments, distinct pairs now, this process' id and its peak memory (benchmarks)."""
        return self.part.num_segments, self.part.distinct_pairs, os.getpid(), _peak_bytes()


#: what the last partitioned phase 2 measured, for benchmarks: parts, the driver's distinct pairs at
#: the start, the round trips to the parts (one per supermerge), and each part's (segments,
#: distinct pairs at the start, pid, peak bytes at the end)
LAST_PHASE2: dict[str, Any] = {}


def _phase_two_in_parts(runner: _Local | _OnRay, one: Any, table: Any, parts: int,
                        progress: Callable[[str, int, int], object] | None, kill_marker: str | None = None) -> Any:
    """Phase 2 with the segments split over ``parts`` holders (see :data:`PHASE2_PARTS`): the
    driver holds the word model, the vocabulary and the count of each distinct pair, and each
    supermerge it chooses is one round trip to every part, which return their pair-count
    changes.  The model is the one of phase 2 on the driver, byte for byte.  On Ray, a part
    whose actor dies is started again from its segments (kept in the object store until phase
    2 ends) and replays the supermerges so far; ``kill_marker`` (tests) kills part 0 once."""
    _core = _core_module()
    driver = _core.Phase2Driver(one)
    split = runner.task(_split_segments, threads=False, returns=parts)(driver.source, parts, table)
    refs = split if parts > 1 or not isinstance(runner, _OnRay) else [split]
    marker = kill_marker if isinstance(runner, _OnRay) else None  # (never this process)
    holders = [runner.actor(_Part, ref, f"phase-2 part {k}", marker if k == 0 else None)
               for k, ref in enumerate(refs)]
    del split, refs
    driver.start(runner.call(holders, "pair_counts"))
    start = [(n, d) for n, d, _, _ in runner.call(holders, "sizes")]
    if progress is not None:  # (as phase 2 on the driver reports the segments it read)
        segments = sum(n for n, _ in start)
        progress("candidates", segments, segments)
    LAST_PHASE2.clear()
    LAST_PHASE2.update(parts=parts, driver_pairs=driver.distinct_pairs)
    trips = 0
    while (step := driver.next()) is not None:
        driver.merged(runner.call(holders, "merge", *step, changes=True))
        trips += 1
    LAST_PHASE2["round_trips"] = trips
    end = runner.call(holders, "sizes")
    LAST_PHASE2["parts_sizes"] = [(n, d, pid, peak) for (n, d), (_, _, pid, peak) in zip(start, end)]
    tok = driver.finish(runner.call(holders, "token_counts"))
    runner.release(holders)
    return tok


def _strong_pairs(runner: _Local | _OnRay, one: Any, part: Callable[..., list[bytes]],
                  args: list[tuple[Any, ...]], stage: str,
                  progress: Callable[[str, int, int], object] | None) -> bytes:
    """Step 1 of pass 2 cut in the tasks: ``part(*a, partitions)`` for each ``a`` of ``args``
    gives a shard's pair tables, one per partition by hash; each partition is summed over the
    shards as a tree of tasks and kept above phase 1's threshold by one more task, so that no
    task holds more than a partition's pairs.  The driver gathers only the strong pairs, their
    union (a pair table's bytes)."""
    partitions = max(2, min(PAIR_PARTITIONS, len(args)))
    map_task = runner.task(part, threads=True, returns=partitions)
    merge_task, keep_task = runner.task(_merge_pair_parts, threads=False), runner.task(_strong_part, threads=False)
    outs = [map_task(*a, partitions) for a in args]
    tasks = [r for out in outs for r in out]
    roots = [keep_task(one.threshold, _tree(merge_task, (), [out[k] for out in outs], tasks))
             for k in range(partitions)]
    tasks += roots
    _wait(runner, tasks, stage, progress)
    _core = _core_module()
    names = [f"pair partition {k}" for k in range(partitions)]
    tables = [_core.Pairs.from_bytes(runner.get(r), n) for r, n in zip(roots, names)]
    return bytes(one.strong_pairs(tables, names).to_bytes())


def _paths(inputs: Any) -> list[str]:
    """The files of ``inputs`` for map tasks, as the workers read them (:func:`worker_paths`);
    documents in memory and standard input are refused."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if (not isinstance(inputs, (list, tuple)) or not inputs or not _inputs._looks_like_a_path(inputs[0])
            or not all(isinstance(i, (str, os.PathLike)) for i in inputs)):
        raise TypeError("executor='ray' needs file paths that the Ray workers can read, or a streaming "
                        "datasets.IterableDataset, not documents in memory")
    return worker_paths(inputs)


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
    sharded = is_sharded_dataset(inputs)
    paths = [] if sharded else _paths(inputs)
    ray = connect(address)
    runner = _OnRay(ray, address)
    options = dict(pattern=pattern, script_pattern=script_pattern, scripts=scripts, text_field=text_field,
                   runs=runs, backend=backend)
    if sharded:  # a task per shard of the streaming dataset, which goes to the cluster once
        dataset = ray.put(inputs)
        args = [(dataset, i, options) for i in range(inputs.num_shards)]
        data = _map_reduce(runner, _count_shard, args, _merge_parts, (backend,), "ray_tasks", progress)
    else:
        data = _count(runner, paths, options, backend, kill_marker, progress)
    return _count_table.Counts(_count_table._impl_from_bytes(data, "the counts from Ray", backend), backend)


def train_two_pass(inputs: Any, *, pattern: str, script_pattern: str | None, scripts: list[str] | None,
                   text_field: str, vocab_size: int, algorithm: str, supermerges: int | None,
                   greedy_split: bool, tau: float, blowup: bool, threads: int,
                   progress: Callable[[str, int, int], object] | None, address: str | None,
                   local: bool = False, kill_marker: str | None = None) -> tuple[Any, _count_table.Counts, int, int]:
    """BoundlessBPE or SuperBPE in two passes over the files (checked arguments), on Ray, or
    with ``local=True`` shard by shard in this process: the model of training on the text
    here, byte for byte.  Returns the Rust core's tokenizer, the counts of pass 1, how many
    times the text was read (2 or 3) and how many parts phase 2's segments were split into
    (0: phase 2 on the driver, see :data:`PHASE2_PARTS`).

    1. Pass 1 counts the pretokens only (no letter runs) and phase 1 trains the word model on
       the driver.
    2. Pass 2 reads the files again, shard by shard: each task counts its shard's letter runs
       and cuts them with the word model into supermerge candidates, added up; the candidate
       tables are summed as a tree of tasks, and stage 3 and phase 2 run on the driver on the
       sum.  No task and not the driver ever holds the runs of more than one shard.

    BoundlessBPE without the greedy split cuts the candidates in the tasks instead, in two
    steps (a third pass over the text): each task counts the pairs of its candidates, the pairs
    are summed by hash partition and kept above phase 1's threshold (the strong pairs), then
    each task cuts its candidates where no strong pair stands and returns the segments phase 2
    trains on, summed as a tree.  No process then holds the uncut candidates of the corpus.
    Phase 2 then runs in parts (:func:`_phase_two_in_parts`): the summed segments are split by
    hash over actors, and the driver holds only the pair counts.
    """
    _core = _core_module()
    sharded = is_sharded_dataset(inputs)
    paths = [] if sharded else _paths(inputs)
    ray = None if local else connect(address)
    runner: _Local | _OnRay = _Local(threads) if ray is None else _OnRay(ray, address)
    options = dict(pattern=pattern, script_pattern=script_pattern, scripts=scripts, text_field=text_field,
                   runs=False, backend="rust")
    dataset = (inputs if ray is None else ray.put(inputs)) if sharded else None
    if sharded:
        shards: list[tuple[Any, ...]] = [(dataset, i, options) for i in range(inputs.num_shards)]
        data = _map_reduce(runner, _count_shard, shards, _merge_parts, ("rust",), "ray_tasks", progress)
    else:
        data = _count(runner, paths, options, "rust", None, progress)
    counts = _count_table.Counts(_count_table._impl_from_bytes(data, "the counts of pass 1", "rust"), "rust")
    one = _core.train_phase_one(counts._impl, vocab_size=vocab_size, algorithm=algorithm,
                                supermerges=supermerges, greedy_split=greedy_split, tau=tau, blowup=blowup,
                                threads=threads, progress=progress)
    if CUT_IN_TASKS and one.cuts_in_tasks:  # pass 2 in two steps, three passes over the text
        if sharded:
            shards = [(dataset, i, one.word_model, text_field) for i in range(inputs.num_shards)]
            strong = runner.put(_strong_pairs(runner, one, _pairs_shard, shards, "ray_candidate_tasks", progress))
            shards = [(dataset, i, one.word_model, text_field, strong) for i in range(inputs.num_shards)]
            table = _map_reduce_ref(runner, _segments_shard, shards, _merge_segment_parts, (),
                                    "ray_candidate_tasks", progress)
            maps = len(shards)
        else:
            ranges = plan(paths, RANGES_PER_CPU * runner.cpus())
            step1: list[tuple[Any, ...]] = [(path, start, end, one.word_model, text_field)
                                            for path, start, end in ranges]
            strong = runner.put(_strong_pairs(runner, one, _pairs_part, step1, "ray_candidate_tasks", progress))
            step2: list[tuple[Any, ...]] = [
                (path, start, end, one.word_model, text_field, strong, kill_marker if i == 0 else None)
                for i, (path, start, end) in enumerate(ranges)]
            table = _map_reduce_ref(runner, _segments_part, step2, _merge_segment_parts, (), "ray_candidate_tasks",
                                    progress)
            maps = len(step2)
        parts = PHASE2_PARTS if PHASE2_PARTS is not None else max(2, min(MAX_PHASE2_PARTS, maps))
        if parts > 0:
            part_marker = None if kill_marker is None else kill_marker + ".part"
            return _phase_two_in_parts(runner, one, table, parts, progress, part_marker), counts, 3, parts
        table = runner.get(table)
        return one.finish_segments(table, "the segments of pass 2", threads=threads, progress=progress), counts, 3, 0
    if sharded:  # the dataset's shards again
        shards = [(dataset, i, one.word_model, text_field) for i in range(inputs.num_shards)]
        table = _map_reduce(runner, _candidates_shard, shards, _merge_candidate_parts, (),
                            "ray_candidate_tasks", progress)
    else:  # the shards of pass 2 are planned again: the same files, maybe another cluster size
        args: list[tuple[Any, ...]] = [(path, start, end, one.word_model, text_field, kill_marker if i == 0 else None)
                for i, (path, start, end) in enumerate(plan(paths, RANGES_PER_CPU * runner.cpus()))]
        table = _map_reduce(runner, _candidates_part, args, _merge_candidate_parts, (), "ray_candidate_tasks",
                            progress)
    return one.finish(table, "the candidates of pass 2", threads=threads, progress=progress), counts, 2, 0
