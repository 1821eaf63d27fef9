"""The command line keeps the user's files safe and names what is wrong: no command writes over
a file it reads, a missing output folder is named before any work, and odd arguments (a huge
--min-count, an empty --scripts name, a --grep that would not fit in memory) are refused in
one line.  The API checks behind them are tested with both backends."""
from __future__ import annotations

import contextlib
import os
import threading

import pytest
import superword
from superword import _inputs
from superword.cli import main

BACKENDS = ["reference", "rust"]
TEXT = "the cat sat on the mat\none of the best in the world\n" * 20


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


@pytest.fixture
def plain_model(tmp_path):
    """A plain BPE model in simple mode: every export (minbpe included) takes it."""
    path = tmp_path / "m.model"
    superword.train(TEXT.splitlines(), 260, "bpe", script_aware=False).save(path)
    return path


def refused(capsys, argv: list[str], *needles: str) -> str:
    """Run the command, expect the one-line error of a user mistake; return it."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("superword: error:") and err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


# ----------------------------------------------------------------------------------------
# no command writes over its input

def test_export_refuses_to_write_over_the_model_it_exports(tmp_path, plain_model, capsys):
    before = plain_model.read_bytes()
    prefix = str(plain_model)[:-len(".model")]  # minbpe writes PREFIX.model: the model itself
    refused(capsys, ["export", str(plain_model), "--to", "minbpe", prefix], "would replace the input")
    refused(capsys, ["export", str(plain_model), "--to", "tiktoken", str(plain_model)])
    assert plain_model.read_bytes() == before
    assert not (tmp_path / "m.vocab").exists() and not (tmp_path / "m.model.pattern").exists()
    # a sidecar of the model is an input too
    sidecar = tmp_path / "m.model.json"
    sidecar.write_text("{}")
    refused(capsys, ["export", str(plain_model), "--to", "tiktoken", str(sidecar)], "m.model.json")
    assert sidecar.read_text() == "{}"
    # another name is fine
    assert main(["export", str(plain_model), "--to", "minbpe", str(tmp_path / "other")]) == 0
    assert (tmp_path / "other.model").exists() and plain_model.read_bytes() == before


def test_train_and_count_refuse_to_write_over_their_inputs(tmp_path, corpus, capsys):
    refused(capsys, ["train", str(corpus), "-q", "-o", str(corpus)], "c.txt")
    refused(capsys, ["count", str(corpus), "-q", "-o", str(corpus)], "c.txt")
    # a file of a folder input, and a link to the input, are the input
    refused(capsys, ["count", str(tmp_path), "-q", "-o", str(corpus)])
    link = tmp_path / "link.model"
    link.symlink_to(corpus)
    refused(capsys, ["train", str(corpus), "-q", "-o", str(link)], "link.model", "c.txt")
    counted = tmp_path / "c.swc"
    assert main(["count", str(corpus), "-q", "-o", str(counted)]) == 0
    before = counted.read_bytes()
    refused(capsys, ["train", "--from-counts", str(counted), "-q", "-o", str(counted)])
    # and so are the sidecars train writes next to the model: `-o c.swc.model` writes
    # c.swc.model.json, `-o c` writes c.json
    os.rename(counted, tmp_path / "c.json")
    refused(capsys, ["train", "--from-counts", str(tmp_path / "c.json"), "-q", "-o", str(tmp_path / "c")],
            "c.json")
    assert (tmp_path / "c.json").read_bytes() == before and corpus.read_text(encoding="utf-8") == TEXT
    assert sorted(os.listdir(tmp_path)) == ["c.json", "c.txt", "link.model"]


def test_plot_refuses_to_write_over_its_input(tmp_path, plain_model, capsys):
    pytest.importorskip("matplotlib")
    odd = tmp_path / "model.png"  # a model file is read whatever its name
    odd.write_bytes(plain_model.read_bytes())
    refused(capsys, ["plot", str(odd), "-o", str(odd)], "model.png")
    text = tmp_path / "text.png"
    text.write_text(TEXT, encoding="utf-8")
    refused(capsys, ["plot", str(plain_model), "--on", str(text), "-o", str(text)], "text.png")
    assert odd.read_bytes() == plain_model.read_bytes() and text.read_text(encoding="utf-8") == TEXT


def test_merge_counts_may_add_into_one_of_its_inputs(tmp_path, corpus, capsys):
    """Every input is read before the sum is written, so this one is allowed: a running total."""
    total = tmp_path / "total.swc"
    assert main(["count", str(corpus), "-q", "-o", str(total)]) == 0
    once = superword.load_counts(total)
    assert main(["merge-counts", str(total), str(total), "-o", str(total)]) == 0
    twice = superword.load_counts(total)
    assert twice.documents == 2 * once.documents
    assert twice.most_common() == [(w, 2 * c) for w, c in once.most_common()]


# ----------------------------------------------------------------------------------------
# output folders

def test_a_missing_output_folder_is_named_before_training(tmp_path, corpus, capsys):
    err = refused(capsys, ["train", str(corpus), "-o", str(tmp_path / "nodir" / "x.model")],
                  "the folder", "nodir does not exist")
    assert ".tmp" not in err and "training" not in err  # refused before it trained
    refused(capsys, ["count", str(corpus), "-q", "-o", str(tmp_path / "nodir" / "x.swc")], "nodir")
    refused(capsys, ["train", str(corpus), "-q", "-o", str(corpus / "x.model")], "c.txt is not a folder")
    assert sorted(os.listdir(tmp_path)) == ["c.txt"]


def test_saving_into_a_missing_folder_names_the_folder(tmp_path, corpus):
    from superword import minbpe
    tok = superword.train(TEXT.splitlines(), 260, "bpe", script_aware=False)
    missing = tmp_path / "nodir"
    writers = [lambda: tok.save(missing / "x.model"),
               lambda: minbpe.from_superword(tok).save(str(missing / "x")),
               lambda: superword.count(TEXT.splitlines()).save(missing / "x.swc")]
    for write in writers:
        with pytest.raises(FileNotFoundError, match=r"cannot write .*: the folder .*nodir does not exist") as info:
            write()
        assert ".tmp" not in str(info.value)
    with pytest.raises(NotADirectoryError, match="c.txt is not a folder"):
        tok.save(corpus / "x.model")
    assert sorted(os.listdir(tmp_path)) == ["c.txt"]


# ----------------------------------------------------------------------------------------
# arguments

def test_export_checks_its_samples_before_writing(tmp_path, plain_model, capsys):
    out = tmp_path / "hf"
    refused(capsys, ["export", str(plain_model), "--to", "hf", str(out), "--sample",
                     str(tmp_path / "missing.txt")], "--sample", "missing.txt")
    assert not out.exists()
    refused(capsys, ["export", str(plain_model), "--to", "minbpe", str(tmp_path / "mb"), "--sample",
                     str(plain_model)], "--sample")
    assert not (tmp_path / "mb.model").exists()


def test_export_refuses_hf_options_for_other_targets(tmp_path, plain_model, capsys):
    # (they were taken and did nothing)
    refused(capsys, ["export", str(plain_model), "--to", "tiktoken", str(tmp_path / "t.tiktoken"),
                     "--eos-token", "<|end|>"], "--eos-token is an option of --to hf only, not --to tiktoken")
    refused(capsys, ["export", str(plain_model), "--to", "minbpe", str(tmp_path / "mb"), "--overwrite",
                     "--pad-token", "<pad>"], "--overwrite, --pad-token are options of --to hf only")
    assert not (tmp_path / "t.tiktoken").exists() and not (tmp_path / "mb.model").exists()


def test_vocab_grep_has_the_pattern_size_limit(plain_model, capsys):
    for pattern in ("x{999999999}", "(?:(?:a{1000}){1000}){1000}"):
        refused(capsys, ["vocab", str(plain_model), "--grep", pattern], "--grep", "too large")
    assert main(["vocab", str(plain_model), "--grep", "^ th", "--json"]) == 0
    assert '"text": " the"' in capsys.readouterr().out


def test_huge_min_count_is_refused_in_one_line(corpus, capsys):
    for command in ("train", "count"):
        refused(capsys, [command, str(corpus), "-q", "--min-count", str(10**23), "-o", str(corpus) + ".out"],
                "--min-count must be at most 2**64 - 1")


@pytest.mark.parametrize("backend", BACKENDS)
def test_min_count_above_64_bits_is_a_value_error(backend):
    docs = TEXT.splitlines()
    with pytest.raises(ValueError, match=r"min_count must be at most 2\*\*64 - 1"):
        superword.count(docs, min_count=2**64, backend=backend)
    with pytest.raises(ValueError, match=r"min_count must be at most 2\*\*64 - 1"):
        superword.train(docs, 260, "bpe", min_count=2**64, backend=backend)
    with pytest.raises(ValueError, match=r"min_count must be at most 2\*\*64 - 1"):
        superword.count(docs, backend=backend).prune(2**64)
    assert superword.count(docs, backend=backend).prune(2**64 - 1).num_words == 0


def test_empty_script_names_are_refused(corpus, capsys):
    for scripts in (",,,", "Han,", "Han,,Thai"):
        for command in ("train", "count"):
            refused(capsys, [command, str(corpus), "-q", "--scripts", scripts, "-o", str(corpus) + ".out"],
                    "--scripts: an empty script name", repr(scripts))
    for backend in BACKENDS:  # the API agrees
        with pytest.raises(ValueError, match="unknown script name"):
            superword.count(["x"], scripts=["", "Han"], backend=backend)


def test_every_name_of_a_path_list_is_checked_before_a_folder_is_walked(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("text\n")

    def walked(folder, what):
        raise AssertionError(f"{folder} was walked before the missing name was found")
    monkeypatch.setattr(_inputs, "_folder_files", walked)
    with pytest.raises(FileNotFoundError, match="training input not found: some text"):
        superword.train([str(tmp_path), "some text"], 260, "bpe")


@pytest.mark.parametrize("name", ["pattern", "script_pattern"])
def test_a_pattern_that_is_not_a_str_is_a_type_error(name):
    for make in (lambda: superword.train(["the cat"], 260, **{name: 5}),
                 lambda: superword.count(["the cat"], **{name: 5})):
        with pytest.raises(TypeError, match=f"^{name} must be a str"):
            make()


@pytest.mark.parametrize("backend", BACKENDS)
def test_most_common_takes_a_count_of_zero_or_more(backend):
    counts = superword.count(TEXT.splitlines(), backend=backend)
    everything = counts.most_common()
    assert counts.most_common(0) == [] and counts.most_common(2) == everything[:2]
    assert counts.most_common(2**70) == everything  # more than there are: all of them
    with pytest.raises(ValueError, match="most_common: n must be at least 0, got -1"):
        counts.most_common(-1)
    for wrong in (True, 2.0, "3"):
        with pytest.raises(TypeError, match="most_common: n must be an int or None"):
            counts.most_common(wrong)


# ----------------------------------------------------------------------------------------
# inputs that are not regular files, and --ray before the inputs

@contextlib.contextmanager
def fifo(path):
    """A named pipe at ``path``.  A thread opens it for writing and closes it at once, so a
    reader that opens it by mistake reads an empty file (and the test fails) instead of waiting
    for a writer for ever; when nobody opened it, leaving the block lets that thread go."""
    os.mkfifo(path)
    writer = threading.Thread(target=lambda: os.close(os.open(path, os.O_WRONLY)))
    writer.start()
    try:
        yield str(path)
    finally:
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        writer.join()
        os.close(reader)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this system")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_named_pipe_given_as_an_input_is_refused_naming_it(tmp_path, corpus, capsys, backend):
    from superword import _count_table
    with fifo(tmp_path / "pipe.txt") as pipe:
        message = f"{pipe} is not a regular file"
        with pytest.raises(ValueError, match=message):
            superword.count(pipe, backend=backend)
        with pytest.raises(ValueError, match=message):  # matched by a glob too
            superword.train(str(tmp_path / "*.txt"), 300, backend=backend)
        with pytest.raises(ValueError, match=message):  # the readers refuse it themselves
            list(_inputs.read_file(pipe))
        counts = superword.count([str(corpus)], backend=backend)
        with pytest.raises(ValueError, match=message):  # and so does the Rust core's reader
            _count_table.count_local([pipe], None, pattern=counts.pattern, script_pattern=counts.script_pattern,
                                     scripts=counts.scripts, text_field="text", runs=True, threads=1,
                                     backend="rust")
        refused(capsys, ["count", pipe, "-o", str(tmp_path / "c.swc"), "--backend", backend], message)
    # a folder holding one reads its data files and passes the pipe by
    with fifo(tmp_path / "folder.txt") as _:
        (tmp_path / "pipe.txt").unlink()
        assert superword.count(str(tmp_path), backend=backend).documents == 40


@pytest.mark.parametrize("argv, address, inputs", [
    (["--ray", "a.txt", "b.txt"], "", ["a.txt", "b.txt"]),
    (["a.txt", "--ray", "b.txt"], "", ["a.txt", "b.txt"]),
    (["--ray", "head:6379", "a.txt"], "head:6379", ["a.txt"]),
    (["--ray", "ray://head:10001", "a.txt"], "ray://head:10001", ["a.txt"]),
    (["--ray", "auto", "a.txt"], "auto", ["a.txt"]),
    (["--ray", "local", "a.txt"], "local", ["a.txt"]),
    (["--ray", "s3://bucket/corpus", "a.txt"], "", ["s3://bucket/corpus", "a.txt"]),
    (["a.txt", "--ray"], "", ["a.txt"]),
])
def test_ray_takes_an_address_only_when_the_word_after_it_is_one(argv, address, inputs):
    from superword.cli import _parser, _ray_before_inputs
    args = _parser().parse_args(_ray_before_inputs(["count", "-o", "x.swc", *argv]))
    assert (args.ray, args.inputs) == (address, inputs)


def test_ray_with_an_equals_sign_must_be_an_address(tmp_path, corpus, capsys):
    refused(capsys, ["count", f"--ray={corpus}", "-o", str(tmp_path / "c.swc")],
            f"--ray={corpus} is not a cluster address")
