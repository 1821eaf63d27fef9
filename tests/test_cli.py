"""The command line: train then encode, on a small file and on the default corpus."""
from __future__ import annotations

import subprocess
import sys

import superword
from superword import _inputs
from superword.cli import main


def test_train_and_encode(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("one of the best\nin the world, one of the best\n" * 50, encoding="utf-8")
    out = tmp_path / "t.model"
    assert main(["train", str(corpus), "--vocab-size", "270", "-q", "-o", str(out)]) == 0
    tok = superword.Tokenizer.load(out)
    assert tok.kind == "boundless" and tok.vocab_size <= 270
    capsys.readouterr()
    assert main(["encode", str(out), "one of the best", "--ids"]) == 0
    ids_line = capsys.readouterr().out.strip()
    assert [int(i) for i in ids_line.split()] == tok.encode("one of the best")


def test_errors_are_one_line_without_traceback(tmp_path, capsys):
    assert main(["train", str(tmp_path / "missing.txt"), "-o", str(tmp_path / "x.model")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("superword: error:") and "missing.txt" in err and "Traceback" not in err
    assert not (tmp_path / "x.model").exists()
    assert main(["train", "--vocab-size", "10", "-q", "-o", str(tmp_path / "x.model")]) == 2
    assert "vocab_size must be at least 243" in capsys.readouterr().err


def test_default_corpus_is_this_pythons_standard_library():
    files = _inputs.stdlib_sources()
    assert len(files) > 500
    assert not any("site-packages" in f.parts for f in files)
    first = next(_inputs.stdlib_documents())
    assert isinstance(first, str) and first


def test_main_job_runs_as_a_console_command(tmp_path):
    """`python -m superword train` with no inputs trains on the default corpus."""
    out = tmp_path / "stdlib.model"
    result = subprocess.run(
        [sys.executable, "-m", "superword", "train", "--algorithm", "bpe", "--vocab-size", "300",
         "-q", "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    tok = superword.Tokenizer.load(out)
    assert tok.vocab_size == 300
    assert tok.decode(tok.encode("def main():\n    return 0\n")) == "def main():\n    return 0\n"
