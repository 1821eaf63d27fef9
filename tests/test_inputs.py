"""Inputs as data arrives: every CLI argument is a path (files of any suffix, folders, globs,
stdin, .zst, .parquet), limits, dict rows, and the Python API's rule for lists."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Iterable
from pathlib import Path

import pytest
import superword
from helpers import GOLDEN, read_jsonl_texts
from superword import _inputs
from superword.cli import main

TEXTS = read_jsonl_texts(GOLDEN / "taylorswift_400.jsonl")
A, B = TEXTS[:200], TEXTS[200:]


def expected(docs: Iterable[str]) -> str:
    return superword.train(docs, 300, "bpe").model_text()


def cli_train(tmp_path: Path, *args: str) -> str:
    out = tmp_path / "out.model"
    assert main(["train", *args, "--algorithm", "bpe", "--vocab-size", "300", "-q", "--no-compare",
                 "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def lines(path: Path, docs: list[str]) -> Path:
    path.write_text("".join(d + "\n" for d in docs), encoding="utf-8")
    return path


def test_every_cli_argument_is_a_path_whatever_its_suffix(tmp_path):
    """Issue 14.1: `train corpus.txt notes.csv` used to train on the two file names."""
    txt, csv = lines(tmp_path / "corpus.txt", A), lines(tmp_path / "notes.csv", B)
    assert cli_train(tmp_path, str(txt), str(csv)) == expected(TEXTS)
    plain = lines(tmp_path / "NOTES", B)  # no suffix
    assert cli_train(tmp_path, str(plain)) == expected(B)


def test_a_folder_means_its_data_files_recursively(tmp_path, capsys):
    root = tmp_path / "data"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    lines(root / "a.txt", A)
    with gzip.open(root / "sub" / "b.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": t}) + "\n" for t in B)
    lines(root / ".git" / "hidden.txt", ["never read"] * 50)
    (root / "image.png").write_bytes(b"\x89PNG\xff\xfe")
    assert cli_train(tmp_path, str(root)) == expected(TEXTS)
    assert _inputs.expand_paths([root]) == [str(root / "a.txt"), str(root / "sub" / "b.jsonl.gz")]
    assert cli_train(tmp_path, str(root / "**" / "*.txt")) == expected(A)
    assert main(["train", str(root / "*.csv"), "-q", "-o", str(tmp_path / "x.model")]) == 2
    assert "matches no file" in capsys.readouterr().err


def test_stdin_is_a_dash(tmp_path, monkeypatch):
    data = "".join(d + "\n" for d in A).encode()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert cli_train(tmp_path, "-") == expected(A)


def test_invalid_utf8_on_stdin_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"fine\nbad \xff\n")))
    assert main(["train", "-", "-q", "-o", str(tmp_path / "x.model")]) == 2
    assert "standard input, line 2: invalid UTF-8 (byte 0xff" in capsys.readouterr().err


def test_zstd_files(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    path = tmp_path / "docs.jsonl.zst"
    raw = "".join(json.dumps({"text": t}) + "\n" for t in A).encode()
    path.write_bytes(zstandard.ZstdCompressor().compress(raw))
    assert cli_train(tmp_path, str(path)) == expected(A)
    assert superword.train(path, 300, "bpe").model_text() == expected(A)
    frames = tmp_path / "frames.txt.zst"  # two frames, as `cat a.zst b.zst` makes
    frames.write_bytes(b"".join(zstandard.ZstdCompressor().compress("".join(d + "\n" for d in part).encode())
                                for part in (A, B)))
    assert list(_inputs.read_file(str(frames))) == TEXTS
    broken = tmp_path / "broken.txt.zst"
    broken.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(ValueError, match=r"broken\.txt\.zst: corrupt or truncated zstd"):
        superword.train(broken, 300, "bpe")


def test_parquet_files(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": list(range(len(A))), "content": A}), path)
    assert cli_train(tmp_path, str(path), "--text-field", "content") == expected(A)
    assert main(["train", str(path), "-q", "-o", str(tmp_path / "x.model")]) == 2
    err = capsys.readouterr().err
    assert "docs.parquet: no column 'text' (columns: 'id', 'content')" in err
    with pytest.raises(ValueError, match="column 'id' holds int64, not strings"):
        superword.train(path, 300, text_field="id")


def test_max_docs_and_max_bytes(tmp_path):
    path = lines(tmp_path / "c.txt", TEXTS)
    assert cli_train(tmp_path, str(path), "--max-docs", "150") == expected(TEXTS[:150])
    size, n = 0, 0
    while size < 5000:
        size += len(TEXTS[n].encode())
        n += 1
    assert cli_train(tmp_path, str(path), "--max-bytes", "5000") == expected(TEXTS[:n])
    with pytest.raises(SystemExit):
        main(["train", str(path), "--max-docs", "0", "-o", str(tmp_path / "x.model")])


def test_provenance_counts_documents_read_in_python(tmp_path):
    path = lines(tmp_path / "c.txt", TEXTS)
    out = tmp_path / "m.model"
    assert main(["train", str(path), "--max-docs", "100", "--algorithm", "bpe", "--vocab-size", "300",
                 "-q", "--no-compare", "-o", str(out)]) == 0
    prov = json.loads((tmp_path / "m.model.json").read_text())
    assert prov["inputs"] == [{"name": path.name, "documents": 100,
                               "bytes": sum(len(t.encode()) for t in TEXTS[:100]),
                               "file_bytes": path.stat().st_size,
                               "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}]
    assert prov["settings"]["max_docs"] == 100


def test_rows_of_a_dataset_are_documents():
    rows = [{"text": t, "id": i} for i, t in enumerate(A)]
    assert superword.train(rows, 300, "bpe").model_text() == expected(A)
    assert superword.train(iter(rows), 300, "bpe", backend="reference").model_text() == expected(A)
    with pytest.raises(ValueError, match="row 1 of inputs has no 'body' field"):
        superword.train([{"body": "x"}, {"text": "y"}], 300, text_field="body")


def test_hugging_face_datasets_if_installed():
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": A})
    assert superword.train(ds, 300, "bpe").model_text() == expected(A)
    assert superword.train(ds.to_iterable_dataset(), 300, "bpe").model_text() == expected(A)


def test_the_api_rule_for_lists(tmp_path):
    a = lines(tmp_path / "a.md", A)
    # a list whose first item names an existing file is a list of paths, of any suffix
    assert superword.train([str(a)], 300, "bpe").model_text() == expected(A)
    assert superword.train([a], 300, "bpe").model_text() == expected(A)
    # a first item that looks like a data file but is missing is reported, not trained on
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        superword.train(["missing.txt", str(a)], 300, "bpe")
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        superword.train([str(a), "missing.csv"], 300, "bpe")
    with pytest.raises(TypeError, match="item 1 is int"):
        superword.train([str(a), 3], 300, "bpe")
    # otherwise the items are the documents, "-" included
    assert superword.train(A, 300, "bpe").model_text() == expected(A)
    assert superword.train(["-", *A], 300, "bpe").model_text() == expected(iter(["-", *A]))


def test_a_byte_order_mark_is_not_text(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps({"text": t}) + "\n" for t in A[:5]).encode())
    assert list(_inputs.read_file(str(path))) == A[:5]
