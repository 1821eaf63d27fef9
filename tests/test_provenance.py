"""Provenance sidecars name input files without the path they were read from, unless asked."""
from __future__ import annotations

import gzip
import hashlib
import json
import os

import superword
from helpers import GOLDEN, read_jsonl_texts
from superword import _provenance
from superword.cli import main

TEXTS = read_jsonl_texts(GOLDEN / "taylorswift_400.jsonl")


def corpus(folder, name="corpus.txt"):
    path = folder / "private" / "home" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(TEXTS) + "\n").encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def no_folder_in(record: dict, folder) -> None:
    text = json.dumps(record)
    assert str(folder) not in text and "private" not in text


def test_the_library_records_file_names_sizes_and_hashes(tmp_path):
    path = corpus(tmp_path)
    tok = superword.train(str(path), 400, "bpe")
    assert tok.provenance["inputs"] == [{"name": "corpus.txt", "documents": None,
                                         "bytes": path.stat().st_size, "file_bytes": path.stat().st_size,
                                         "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}]
    tok.save(tmp_path / "m.model")
    no_folder_in(json.loads((tmp_path / "m.model.json").read_text()), tmp_path)


def test_the_cli_records_paths_only_when_asked(tmp_path):
    for name in ("corpus.txt", "corpus.txt.gz"):
        path = corpus(tmp_path, name)
        out = tmp_path / "m.model"
        assert main(["train", str(path), "--algorithm", "bpe", "--vocab-size", "400", "-q",
                     "--no-compare", "-o", str(out)]) == 0
        record = json.loads((tmp_path / "m.model.json").read_text())
        no_folder_in(record, tmp_path)
        (entry,) = record["inputs"]
        assert entry["name"] == name and entry["file_bytes"] == path.stat().st_size
        assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert main(["train", str(path), "--algorithm", "bpe", "--vocab-size", "400", "-q",
                     "--no-compare", "--record-paths", "-o", str(out)]) == 0
        (entry,) = json.loads((tmp_path / "m.model.json").read_text())["inputs"]
        assert entry["path"] == os.path.abspath(path) and entry["name"] == name


def test_names_that_are_not_files_are_kept():
    records = [{"name": "<documents>", "documents": 3, "bytes": 9}, {"name": "-", "documents": 1, "bytes": 2}]
    assert _provenance.describe_inputs(records, record_paths=True) == records
