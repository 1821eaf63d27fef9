"""The files kept beside a model, ``MODEL.json`` (provenance) and ``MODEL.ngrams`` (the
greedy split's n-gram table), are as untrusted as the model itself: whatever they hold, or
whatever they are (a FIFO, a folder), loading never hangs, aborts or runs out of memory.  A
provenance sidecar that cannot be read is ignored with a warning; an n-gram table that
``greedy_split=True`` needs and cannot use is an error naming it.  Both backends agree."""
from __future__ import annotations

import contextlib
import os
import threading
import warnings

import pytest
import superword
from superword.cli import main

BACKENDS = ["reference", "rust"]
DOCS = ["the cat sat on the mat", "one of the best in the world"] * 20
DEEP = "[" * 100_000 + "]" * 100_000  # deeper than Python's recursion limit

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")


@pytest.fixture(scope="module")
def greedy(tmp_path_factory):
    """A model trained with greedy_split=True, saved with both sidecars."""
    path = tmp_path_factory.mktemp("greedy") / "g.model"
    superword.train(DOCS, 300, "boundless", greedy_split=True, backend="rust").save(path)
    return path


def copy_model(greedy, tmp_path, sidecars=()):
    path = tmp_path / "g.model"
    path.write_bytes(greedy.read_bytes())
    for suffix in sidecars:
        (tmp_path / ("g.model" + suffix)).write_bytes((greedy.parent / ("g.model" + suffix)).read_bytes())
    return path


@contextlib.contextmanager
def fifo(path):
    """Make a FIFO at ``path``.  A thread opens it for writing and closes it at once, so a
    reader that opens it by mistake reads an empty file (and a test fails) instead of waiting
    for a writer for ever; when nobody opened it, leaving the block lets that thread go."""
    os.mkfifo(path)
    writer = threading.Thread(target=lambda: os.close(os.open(path, os.O_WRONLY)))
    writer.start()
    try:
        yield
    finally:
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        writer.join()
        os.close(reader)


# -- the n-gram table -------------------------------------------------------------------------

def ngram_table(*ngrams: list[str]) -> str:
    return "superword ngrams v1\n" + f"{len(ngrams)}\n" + "".join(" ".join(g) + "\n" for g in ngrams)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_ngram_longer_than_thirty_pretokens_is_refused(greedy, tmp_path, backend):
    # the greedy split keeps every prefix of every n-gram: 30,000 pretokens on one line (a
    # 180 KB file) took 2 GB in Rust and 3.5 GB in the reference, 100,000 aborted Rust
    path = copy_model(greedy, tmp_path)
    sidecar = tmp_path / "g.model.ngrams"
    sidecar.write_text(ngram_table(["Ġthe", "Ġcat"], ["Ġthe"] * 31), encoding="utf-8")
    with pytest.raises(ValueError, match=r"g\.model\.ngrams, line 4: an n-gram of 31 pretokens; "
                                         r"n-grams have at most 30"):
        superword.Tokenizer.load(path, backend=backend, greedy_split=True)
    sidecar.write_text(ngram_table(["Ġthe"] * 1_000), encoding="utf-8")
    with pytest.raises(ValueError, match="an n-gram of 1000 pretokens"):
        superword.Tokenizer.load(path, backend=backend, greedy_split=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_ngram_of_thirty_pretokens_is_read(greedy, tmp_path, backend):
    path = copy_model(greedy, tmp_path)
    (tmp_path / "g.model.ngrams").write_text(ngram_table(["Ġthe", "Ġcat"], ["Ġthe"] * 30),
                                             encoding="utf-8")
    tok = superword.Tokenizer.load(path, backend=backend, greedy_split=True)
    assert tok.decode(tok.encode(" the cat sat")) == " the cat sat"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_long_ngram_in_an_old_model_files_table_is_refused(greedy, tmp_path, backend):
    # earlier versions kept the table at the end of the model file: the same reader, the same rule
    path = tmp_path / "old.model"
    path.write_text(greedy.read_text(encoding="utf-8") + "ngrams\n" + ngram_table(["Ġthe"] * 31)
                    .removeprefix("superword ngrams v1\n"), encoding="utf-8")
    with pytest.raises(ValueError, match=r"old\.model, line \d+: an n-gram of 31 pretokens"):
        superword.Tokenizer.load(path, backend=backend, greedy_split=True)


@needs_fifo
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_ngram_sidecar_that_is_a_fifo_is_refused_without_opening_it(greedy, tmp_path, backend):
    # reading it waited for ever for something to write
    path = copy_model(greedy, tmp_path)
    with fifo(tmp_path / "g.model.ngrams"):
        with pytest.raises(ValueError, match=r"g\.model\.ngrams: not a regular file"):
            superword.Tokenizer.load(path, backend=backend, greedy_split=True)
        # without greedy_split the table is not needed, so not looked at
        tok = superword.Tokenizer.load(path, backend=backend)
    assert tok.model_text() == greedy.read_text(encoding="utf-8")


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_ngram_sidecar_that_is_a_folder_is_refused_alike(greedy, tmp_path, backend):
    # it was an IsADirectoryError in the reference and an OSError in Rust
    path = copy_model(greedy, tmp_path)
    (tmp_path / "g.model.ngrams").mkdir()
    with pytest.raises(ValueError, match=r"g\.model\.ngrams: not a regular file"):
        superword.Tokenizer.load(path, backend=backend, greedy_split=True)


# -- the provenance sidecar -------------------------------------------------------------------

@needs_fifo
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_provenance_sidecar_that_is_a_fifo_is_ignored_without_opening_it(greedy, tmp_path, backend):
    path = copy_model(greedy, tmp_path)
    refused = r"g\.model\.json: provenance sidecar ignored, it cannot be read \(not a regular file\)"
    with fifo(tmp_path / "g.model.json"), pytest.warns(UserWarning, match=refused):
        tok = superword.Tokenizer.load(path, backend=backend)
    assert tok.provenance is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_deeply_nested_provenance_sidecar_is_ignored(greedy, tmp_path, backend):
    # json.load raised RecursionError out of Tokenizer.load
    path = copy_model(greedy, tmp_path)
    (tmp_path / "g.model.json").write_text(DEEP, encoding="utf-8")
    with pytest.warns(UserWarning, match=r"g\.model\.json: provenance sidecar ignored, it cannot be read"):
        tok = superword.Tokenizer.load(path, backend=backend)
    assert tok.provenance is None


def test_the_cli_warns_about_a_deeply_nested_sidecar_and_goes_on(greedy, tmp_path, capsys):
    # `superword stats/vocab/encode` printed a RecursionError traceback and exited with 1
    path = copy_model(greedy, tmp_path)
    (tmp_path / "g.model.json").write_text(DEEP, encoding="utf-8")
    for args in (["stats", str(path)], ["vocab", str(path)], ["encode", str(path), "the cat"]):
        assert main(args) == 0
        err = capsys.readouterr().err
        assert "superword: warning: " in err and "g.model.json: provenance sidecar ignored" in err
        assert "Traceback" not in err


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_good_provenance_sidecar_is_still_read(greedy, tmp_path, backend):
    path = copy_model(greedy, tmp_path, [".json"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok = superword.Tokenizer.load(path, backend=backend)
    assert tok.provenance is not None and tok.provenance["algorithm"] == "boundless"


# -- the model file's config line -------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_a_deeply_nested_config_line_is_named(greedy, tmp_path, backend):
    # the reference raised RecursionError; Rust named the line
    lines = greedy.read_text(encoding="utf-8").split("\n")
    words = lines.index("words") + 1
    lines[words] = DEEP
    path = tmp_path / "nested.model"
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"nested\.model, line {words + 1}: bad config JSON"):
        superword.Tokenizer.load(path, backend=backend)
