"""Progress on the command line: the count stage in bytes of the files on disk, and the
comparison model's training shown too."""
from __future__ import annotations

import gzip
import io

import pytest
from helpers import GOLDEN, read_jsonl_texts
from superword import _counts, _progress
from superword.cli import main

TEXTS = read_jsonl_texts(GOLDEN / "taylorswift_400.jsonl")

needs_proc = pytest.mark.skipif(not _progress.FileReading.available(),
                                reason="read offsets of open files come from /proc (Linux)")


@needs_proc
def test_reading_follows_the_offset_of_the_open_file(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"x" * 1000)
    b.write_bytes(b"y" * 500)
    reading = _progress.FileReading([str(a), str(b)])
    assert reading.total == 1500 and reading.bytes_done() == 0
    with open(a, "rb", buffering=0) as f:
        f.read(300)
        assert reading.bytes_done() == 300
    with open(b, "rb", buffering=0) as f:
        f.read(100)
        assert reading.bytes_done() == 1100  # the first file is done
    assert reading.bytes_done() == 1500  # the last file seen is closed: read to its end


@needs_proc
@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_the_count_stage_shows_megabytes_of_the_files_and_their_rate(tmp_path, suffix):
    path = tmp_path / f"c{suffix}"
    data = ("\n".join(TEXTS * 40) + "\n").encode()
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    stream = io.StringIO()
    progress = _progress.Progress(stream, bar=True, files=[str(path)])
    _counts.count([str(path)], progress=progress, runs=False)
    progress.close()
    frames = stream.getvalue().split("\r")
    size = path.stat().st_size / 1e6
    assert all(f"/{size:,.1f} MB on disk" in f for f in frames[1:-1]), frames
    assert "MB/s" in frames[-2] and "ETA" in frames[-2] and "(100 %)" in frames[-2]
    assert frames[-1].startswith(f"pre-tokenize + count: {len(TEXTS) * 40:,} documents, {size:,.1f} MB")


def test_without_files_the_count_stage_counts_documents():
    stream = io.StringIO()
    progress = _progress.Progress(stream, bar=True)
    _counts.count(TEXTS, progress=progress)
    progress.close()
    assert "MB" not in stream.getvalue() and f"{len(TEXTS):,} documents" in stream.getvalue()


def test_the_comparison_model_reports_its_stages(tmp_path, capfd):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    assert main(["train", str(corpus), "--vocab-size", "600", "--hold-back", "10",
                 "-o", str(tmp_path / "m.model")]) == 0
    err = capfd.readouterr().err
    assert "BPE: pre-tokenize + count:" in err and "BPE: phase 1:" in err
