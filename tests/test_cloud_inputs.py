"""Inputs where clusters keep them, and Ray as users run it.

* ``scheme://`` names are read through fsspec (here its in-process ``memory://`` filesystem
  and ``file://``), with the formats, folders, globs and byte ranges of plain paths, and the
  counts are byte for byte those of the same files read as plain paths;
* a streaming ``datasets.IterableDataset`` is counted on Ray a shard per task, as counting its
  documents here;
* a cluster address that answers as something else than Ray, or not at all, or a cluster that
  stops answering while tasks run, is a ``ConnectionError`` within a bounded time.
"""
from __future__ import annotations

import gzip
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import superword
from helpers import GOLDEN, need
from superword import _inputs, _ray

fsspec = pytest.importorskip("fsspec")


@pytest.fixture
def lines() -> list[bytes]:
    return need(GOLDEN / "multi_1230.jsonl").read_bytes().splitlines(keepends=True)


@pytest.fixture
def local_corpus(tmp_path, lines):
    """The same documents as .jsonl, .jsonl.gz, .txt and .parquet files in one folder."""
    folder = tmp_path / "corpus"
    (folder / "deeper").mkdir(parents=True)
    (folder / "a.jsonl").write_bytes(b"".join(lines[:400]))
    (folder / "deeper" / "b.jsonl.gz").write_bytes(gzip.compress(b"".join(lines[400:800])))
    texts = [superword._inputs._jsonl_text(line.decode(), "x", 1, "text") for line in lines[800:]]
    (folder / "c.txt").write_text("".join(t.replace("\n", " ") + "\n" for t in texts), encoding="utf-8")
    (folder / ".hidden.txt").write_text("never read\n", encoding="utf-8")
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa
    pq.write_table(pa.table({"text": texts[:100], "n": list(range(100))}), folder / "d.parquet")
    return folder


@pytest.fixture
def memory_corpus(local_corpus):
    """``local_corpus`` copied byte for byte into fsspec's memory filesystem."""
    fs = fsspec.filesystem("memory")
    root = "/sw-test-corpus"
    for path in sorted(local_corpus.rglob("*")):
        if path.is_file():
            fs.pipe(f"{root}/{path.relative_to(local_corpus).as_posix()}", path.read_bytes())
    yield f"memory://{root}"
    fs.rm(root, recursive=True)


def files_of(folder) -> list[str]:
    return [str(p) for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.startswith(".")]


def test_memory_and_file_urls_count_byte_identically_to_plain_paths(local_corpus, memory_corpus):
    plain = superword.count(files_of(local_corpus))
    assert plain.documents > 1000
    # a folder, a glob, single files, each through fsspec
    assert superword.count(memory_corpus).to_bytes() == plain.to_bytes()
    assert superword.count(local_corpus.as_uri()).to_bytes() == plain.to_bytes()
    assert superword.count(f"{memory_corpus}/*.*").to_bytes() == superword.count(
        f"{local_corpus}/*.*").to_bytes()
    named = [f"{memory_corpus}/{p}" for p in ("a.jsonl", "c.txt", "d.parquet", "deeper/b.jsonl.gz")]
    assert (superword.count(named).to_bytes()
            == superword.count([str(local_corpus / p) for p in ("a.jsonl", "c.txt", "d.parquet",
                                                                  "deeper/b.jsonl.gz")]).to_bytes())
    # and both backends read them alike
    assert (superword.count(memory_corpus, backend="reference").to_bytes()
            == superword.count(files_of(local_corpus), backend="reference").to_bytes())


def test_a_folder_url_stands_for_its_data_files_sorted_hidden_ones_skipped(local_corpus, memory_corpus):
    assert _inputs.expand_paths([memory_corpus]) == [
        f"{memory_corpus}/a.jsonl", f"{memory_corpus}/c.txt", f"{memory_corpus}/d.parquet",
        f"{memory_corpus}/deeper/b.jsonl.gz"]
    assert [p.removeprefix("file://") for p in _inputs.expand_paths([local_corpus.as_uri()])] == \
        files_of(local_corpus)
    # globs match as Python's glob does (hidden names only when spelled out)
    for pattern in ("*", "*.txt", "**", "**/*.gz", ".*", "deeper/*"):
        assert ([p.removeprefix(memory_corpus) for p in _inputs.expand_paths([f"{memory_corpus}/{pattern}"])]
                == [p.removeprefix(str(local_corpus)) for p in _inputs.expand_paths([f"{local_corpus}/{pattern}"])]
                ), pattern


def test_training_on_urls_gives_the_model_of_the_plain_paths(local_corpus, memory_corpus):
    plain = superword.train(files_of(local_corpus), 400, "superbpe", supermerges=40)
    assert superword.train(memory_corpus, 400, "superbpe", supermerges=40).model_text() == plain.model_text()
    assert [r["name"] for r in superword.train(memory_corpus, 300).provenance["inputs"]] == \
        _inputs.expand_paths([memory_corpus])


def test_byte_ranges_and_sizes_of_urls_are_those_of_the_plain_file(local_corpus, memory_corpus, monkeypatch):
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 10_000)
    plain, url = str(local_corpus / "a.jsonl"), f"{memory_corpus}/a.jsonl"
    ranges = _ray.plan([plain], 8)
    assert len(ranges) >= 4
    assert [(s, e) for _, s, e in _ray.plan([url], 8)] == [(s, e) for _, s, e in ranges]
    assert _inputs.file_size(url) == _inputs.file_size(plain)
    for _, start, end in ranges:
        assert list(_inputs.read_range(url, start, end)) == list(_inputs.read_range(plain, start, end))


def test_the_command_line_counts_and_trains_urls(local_corpus, memory_corpus, tmp_path):
    from superword.cli import main
    assert main(["count", memory_corpus, "-o", str(tmp_path / "m.swc"), "-q"]) == 0
    assert (tmp_path / "m.swc").read_bytes() == superword.count(files_of(local_corpus)).to_bytes()
    assert main(["train", memory_corpus, "--vocab-size", "300", "-o", str(tmp_path / "m.model"), "-q",
                 "--no-compare"]) == 0
    assert (tmp_path / "m.model").read_text(encoding="utf-8") == \
        superword.train(files_of(local_corpus), 300).model_text()


def test_url_problems_name_the_url(memory_corpus, tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="memory:///nowhere/x.txt"):
        superword.count("memory:///nowhere/x.txt")
    with pytest.raises(FileNotFoundError, match="matches no file"):
        superword.count(f"{memory_corpus}/*.nothing")
    fs = fsspec.filesystem("memory")
    fs.pipe("/sw-test-empty/notes.md", b"x")
    with pytest.raises(FileNotFoundError, match="memory:///sw-test-empty holds no data files"):
        superword.count("memory:///sw-test-empty")
    fs.pipe("/sw-test-bad/a.jsonl", b'{"text": "fine"}\n{"text": 3}\n')
    with pytest.raises(ValueError, match=r"memory:///sw-test-bad/a.jsonl, line 2: field 'text' is int"):
        superword.count("memory:///sw-test-bad/a.jsonl")
    fs.pipe("/sw-test-bad/b.txt.gz", gzip.compress(b"cut off")[:-6])
    with pytest.raises(ValueError, match=r"memory:///sw-test-bad/b.txt.gz: corrupt or truncated gzip"):
        superword.count("memory:///sw-test-bad/b.txt.gz")
    fs.rm("/sw-test-empty", recursive=True)
    fs.rm("/sw-test-bad", recursive=True)
    with pytest.raises(ValueError, match="nosuchproto://x/y.txt"):
        superword.count("nosuchproto://x/y.txt")
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(ImportError, match=r"superword\[cloud\]"):
        superword.count("memory:///x/y.txt")


def test_a_list_starting_with_a_storage_url_is_a_list_of_names_but_a_web_address_is_text():
    assert _inputs._looks_like_a_path("s3://bucket/corpus")
    assert not _inputs._looks_like_a_path("https://example.com says hello")
    assert _inputs._looks_like_a_path("https://example.com/corpus.jsonl")
    assert superword.count(["https://example.com", "is a document"]).documents == 2


# -- cluster addresses that are not Ray --------------------------------------------------------

@contextmanager
def fake_server(reply: bytes | None) -> Iterator[int]:
    """A local TCP server that accepts every connection and sends ``reply`` (``None``: says
    nothing and keeps the connection open; ``b""``: closes it at once).  Yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop, held = threading.Event(), []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            if reply is None:
                held.append(conn)
            else:
                conn.sendall(reply)
                conn.close()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()
        for conn in held:
            conn.close()


@pytest.mark.parametrize("reply, said", [(None, "said nothing within 1 s"),
                                         (b"HTTP/1.1 200 OK\r\n\r\nhello", "which is not HTTP/2"),
                                         (b"", "closed the connection")])
def test_a_port_that_answers_but_not_as_ray_fails_fast_and_says_so(reply, said):
    pytest.importorskip("ray")
    with fake_server(reply) as port:
        start = time.monotonic()
        with pytest.raises(ConnectionError, match="does not answer as a Ray cluster") as info:
            _ray.connect(f"127.0.0.1:{port}", timeout=1.0)
        assert time.monotonic() - start < 5
        assert said in str(info.value)
        assert f"127.0.0.1:{port}" in str(info.value)


def test_the_command_line_gives_up_on_a_silent_port_within_the_connect_timeout(tmp_path, monkeypatch, capsys):
    pytest.importorskip("ray")
    from superword.cli import main
    monkeypatch.setattr(_ray, "CONNECT_TIMEOUT_SECONDS", 1.0)
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat\n", encoding="utf-8")
    with fake_server(None) as port:
        start = time.monotonic()
        assert main(["count", "--ray", f"127.0.0.1:{port}", str(corpus), "-o", str(tmp_path / "c.swc"),
                     "-q"]) == 2
        assert time.monotonic() - start < 10
    assert "does not answer as a Ray cluster" in capsys.readouterr().err
    assert not (tmp_path / "c.swc").exists()


@contextmanager
def head_node(token: str) -> Iterator[tuple[str, str]]:
    """A one-node Ray cluster with token authentication, started as users start one
    (``ray start --head --block``) in a folder of its own; yields its address and folder."""
    pytest.importorskip("ray")
    ray_cli = shutil.which("ray")
    if ray_cli is None:
        pytest.skip("no ray command")
    folder = tempfile.mkdtemp(prefix="swray-", dir="/tmp")  # Ray's socket paths must stay short
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    head = subprocess.Popen([ray_cli, "start", "--head", "--block", f"--port={port}", "--num-cpus=1",
                             "--include-dashboard=false", f"--temp-dir={folder}/t", "--disable-usage-stats"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                _ray.probe("the test cluster", ("127.0.0.1", port), 1.0)
                break
            except ConnectionError:
                if time.monotonic() > deadline or head.poll() is not None:
                    pytest.skip("the Ray head did not start")
                time.sleep(1)
        yield f"127.0.0.1:{port}", folder
    finally:
        head.terminate()  # `ray start --block` stops what it started
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            head.kill()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def token_cluster():
    token = secrets.token_hex(16)
    with head_node(token) as (address, _):
        yield address, token


def superword_command(argv: list[str], **env: str | None) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for name, value in env.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    return subprocess.run([sys.executable, "-m", "superword", *argv], env=environment, capture_output=True,
                          text=True, timeout=180)


def test_a_cluster_with_token_authentication_takes_the_token_from_the_environment(token_cluster, tmp_path):
    address, token = token_cluster
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat\n" * 50, encoding="utf-8")
    out = tmp_path / "c.swc"
    done = superword_command(["count", "--ray", address, str(corpus), "-o", str(out), "-q"],
                             RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == superword.count(str(corpus)).to_bytes()
    out.unlink()
    start = time.monotonic()
    refused = superword_command(["count", "--ray", address, str(corpus), "-o", str(out), "-q"],
                                RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 32)
    assert time.monotonic() - start < 120
    assert refused.returncode == 2
    error = refused.stderr.strip().splitlines()[-1]
    assert error.startswith("superword: error: cannot connect to the Ray cluster at " + address), error
    assert "RAY_AUTH_MODE=token" in error and "a token in RAY_AUTH_TOKEN" in error
    assert token not in refused.stderr and "0" * 32 not in error  # a token is never shown
    assert not out.exists()


# -- on a local Ray cluster --------------------------------------------------------------------

@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_workers_read_file_urls_and_refuse_memory_ones(ray_cluster, local_corpus, memory_corpus, monkeypatch):
    monkeypatch.setattr(_ray, "MIN_RANGE_BYTES", 20_000)
    url = local_corpus.as_uri()
    assert len(_ray.plan(_ray.worker_paths([url]), 8)) > 4  # the .jsonl is cut into ranges
    plain = superword.count(files_of(local_corpus))
    assert superword.count(url, executor="ray").to_bytes() == plain.to_bytes()
    with pytest.raises(ValueError, match="memory:// file lives in this process only"):
        superword.count(memory_corpus, executor="ray")


def test_a_streaming_dataset_is_counted_on_ray_by_shards(ray_cluster, local_corpus, lines, tmp_path):
    datasets = pytest.importorskip("datasets")
    files = []
    for i in range(3):
        path = tmp_path / f"shard{i}.jsonl"
        path.write_bytes(b"".join(lines[i * 300:(i + 1) * 300]))
        files.append(str(path))
    stream = datasets.load_dataset("json", data_files=files, split="train", streaming=True)
    assert _ray.is_sharded_dataset(stream) and stream.num_shards == 3
    local = superword.count(files)
    assert superword.count(stream, executor="ray").to_bytes() == local.to_bytes()
    # and the same documents counted here, row by row
    assert superword.count([row["text"] for row in stream]).to_bytes() == local.to_bytes()
    assert (superword.train(stream, 400, "boundless", executor="ray").model_text()
            == superword.train(files, 400, "boundless").model_text())


def test_the_gcs_of_a_real_cluster_passes_the_handshake_probe(ray_cluster):
    endpoint = _ray.control_endpoint(ray_cluster, None)
    assert endpoint is not None
    _ray.probe("the local cluster", endpoint, 5.0)


def test_a_cluster_that_stops_answering_while_tasks_run_is_an_error_in_bounded_time(ray_cluster):
    @ray_cluster.remote
    def slow() -> int:
        time.sleep(30)
        return 1
    ref = slow.remote()
    try:
        with fake_server(None) as port:  # stands for a control endpoint that went silent
            start = time.monotonic()
            with pytest.raises(ConnectionError, match="stopped answering while 1 tasks were pending"):
                _ray.wait_one(ray_cluster, [ref], ("127.0.0.1", port), heartbeat=0.5, stall=2.0)
            assert time.monotonic() - start < 8
        # a cluster that answers is waited for
        assert _ray.wait_one(ray_cluster, [ray_cluster.put(1)], _ray.control_endpoint(ray_cluster, None),
                             heartbeat=0.5, stall=2.0)[1] == []
    finally:
        ray_cluster.cancel(ref, force=True)


DRIVER = """
import sys, time
from superword import _ray
ray = _ray.connect(sys.argv[1])
endpoint = _ray.control_endpoint(ray, sys.argv[1])
def nap():
    time.sleep(300)
slow = ray.remote(num_cpus=1, max_retries=0)(nap).remote()
print("waiting", flush=True)
try:
    _ray.wait_one(ray, [slow], endpoint, heartbeat=1.0, stall=5.0)
except ConnectionError as exc:
    print("ConnectionError:", exc, flush=True)
    _ray.end(3)
"""


def processes_of(folder: str, name: str) -> list[int]:
    """The ids of this machine's processes named ``name`` whose command line mentions ``folder``
    (the test cluster's own)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    words = f.read().split(b"\0")
            except OSError:
                continue
            if words and name.encode() in words[0] and any(folder.encode() in w for w in words):
                found.append(int(entry))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the cluster's processes in /proc")
def test_a_driver_whose_cluster_stops_answering_mid_task_gives_up_in_bounded_time():
    token = secrets.token_hex(16)
    with head_node(token) as (address, folder):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), RAY_AUTH_MODE="token",
                   RAY_AUTH_TOKEN=token)
        driver = subprocess.Popen([sys.executable, "-c", DRIVER, address], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        gcs = processes_of(folder, "gcs_server")
        try:
            assert len(gcs) == 1
            assert driver.stdout is not None
            assert driver.stdout.readline().strip() == "waiting", driver.communicate(timeout=60)
            time.sleep(2)
            os.kill(gcs[0], signal.SIGSTOP)  # the cluster's control plane stops answering
            start = time.monotonic()
            out, err = driver.communicate(timeout=120)
            assert time.monotonic() - start < 45
        finally:
            if driver.poll() is None:
                driver.kill()
            for pid in gcs:
                os.kill(pid, signal.SIGCONT)
    assert driver.returncode == 3, (out, err[-2000:])
    assert "stopped answering while 1 tasks were pending" in out
