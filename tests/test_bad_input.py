"""Bad input gets a clear exception that names what is wrong, and loses nothing."""
from __future__ import annotations

import gzip
import json
import re

import pytest
import superword

DOCS = ["the cat sat on the mat", "the dog sat on the log"] * 5


@pytest.fixture(params=["reference", "rust"])
def backend(request):
    """Every check runs on both backends: they must reject the same input the same way."""
    return request.param


@pytest.fixture
def tok(backend):
    return superword.train(DOCS, 300, "boundless", backend=backend)


def test_vocab_size_below_the_byte_tokens(backend):
    with pytest.raises(ValueError, match="vocab_size must be at least 243"):
        superword.train(DOCS, 242, backend=backend)
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        superword.train(DOCS, 300.0, backend=backend)


def test_unknown_algorithm(backend):
    with pytest.raises(ValueError, match="algorithm must be 'bpe', 'boundless' or 'superbpe'"):
        superword.train(DOCS, 300, algorithm="wordpiece", backend=backend)


def test_superbpe_needs_a_sensible_number_of_supermerges(backend):
    with pytest.raises(ValueError, match="needs supermerges"):
        superword.train(DOCS, 300, algorithm="superbpe", backend=backend)
    with pytest.raises(ValueError, match="supermerges must be between 1 and"):
        superword.train(DOCS, 300, algorithm="superbpe", supermerges=300 - 243, backend=backend)
    with pytest.raises(ValueError, match="supermerges must be between 1 and"):
        superword.train(DOCS, 300, algorithm="superbpe", supermerges=0, backend=backend)
    with pytest.raises(ValueError, match="only for algorithm='superbpe'"):
        superword.train(DOCS, 300, algorithm="boundless", supermerges=5, backend=backend)


def test_a_missing_core_is_reported_not_replaced(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "superword._core", None)  # import now fails
    monkeypatch.delattr(superword, "_core", raising=False)
    with pytest.raises(ImportError, match=r"compiled Rust core \(superword\._core\) is not available"):
        superword.train(DOCS, 300)
    with pytest.raises(ImportError, match="backend='reference'"):
        superword.Tokenizer.load("any.model")
    assert superword.train(DOCS, 300, backend="reference").backend == "reference"
    with pytest.raises(ValueError, match="backend must be one of"):
        superword.train(DOCS, 300, backend="c++")


def test_empty_corpus(tmp_path, backend):
    with pytest.raises(ValueError, match="corpus is empty"):
        superword.train([], 300, backend=backend)
    with pytest.raises(ValueError, match="corpus is empty"):
        superword.train(["", ""], 300, backend=backend)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="corpus is empty"):
        superword.train(empty, 300, backend=backend)


def test_missing_file(tmp_path, backend):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        superword.train(tmp_path / "nope.txt", 300, backend=backend)
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        superword.train([str(tmp_path / "missing.jsonl")], 300, backend=backend)


def test_bad_jsonl_lines_are_named(tmp_path, backend):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "fine"}\n{"text": "also fine"}\nnot json\n')
    with pytest.raises(ValueError, match=r"docs\.jsonl, line 3: not valid JSON"):
        superword.train(path, 300, backend=backend)
    path.write_text('{"text": "fine"}\n{"body": "no text"}\n')
    with pytest.raises(ValueError, match=r"docs\.jsonl, line 2: the record has no 'text' field"):
        superword.train(path, 300, backend=backend)
    path.write_text('{"text": 12}\n')
    with pytest.raises(ValueError, match=r"line 1: field 'text' is int"):
        superword.train(path, 300, backend=backend)


def test_jsonl_records_read_as_pythons_json_reads_them(tmp_path):
    # what the other fields hold is not checked beyond being JSON (a number beyond a double,
    # 1e400, is valid JSON that Python's json reads); a repeated key keeps its last value; the
    # fields an error lists come in the record's order; both backends say the same
    good = ['{"meta": {"score": 1e400, "deep": [[[{"x": -0.0}]]]}, "text": "the cat sat"}',
            '{"text": "first", "id": 7, "text": "second and last"}',
            '{"text": "caf\\u00e9 \\ud83d\\ude00", "n": 12345678901234567890123}']
    path = tmp_path / "good.jsonl"
    path.write_text("\n".join(good) + "\n")
    models = {b: superword.train(path, 300, backend=b).model_text() for b in ("reference", "rust")}
    assert models["reference"] == models["rust"]
    texts = [json.loads(line)["text"] for line in good]
    assert models["rust"] == superword.train(texts, 300, backend="rust").model_text()
    bad = {
        '{"zeta": 1, "alpha": 2, "text2": 3}': "the record has no 'text' field (fields: 'zeta', 'alpha', 'text2')",
        '{"text": 1.5}': "field 'text' is float, not a string",
        '{"text": null}': "field 'text' is NoneType, not a string",
        '{"text": {"a": 1}}': "field 'text' is dict, not a string",
        '{"text": ["a"]}': "field 'text' is list, not a string",
        '{"text": "a", "text": false}': "field 'text' is bool, not a string",
        '["text"]': "expected a JSON object with a 'text' field, found list",
        '"text"': "expected a JSON object with a 'text' field, found str",
        '{"text": "a"} {}': "not valid JSON",
    }
    for line, message in bad.items():
        path.write_text('{"text": "fine"}\n' + line + "\n")
        for backend in ("reference", "rust"):
            with pytest.raises(ValueError, match=re.escape(f"good.jsonl, line 2: {message}")):
                superword.train(path, 300, backend=backend)


def test_a_training_document_with_a_lone_surrogate_is_named(backend):
    # (the reference said "position 0" of a pretoken, the Rust core Python's bare
    # UnicodeEncodeError; neither named the document)
    big = ["x" * 1000] * 9000  # more than one batch of the core's reading, 8 MB
    cases = [(["ok", "x\ud800"], 1, "D800", 1), (iter(["ok", "ok", "\udfffx"]), 2, "DFFF", 0),
             ([{"text": "ab\ud801"}], 0, "D801", 2), (big + ["ab\ud801"], 9000, "D801", 2)]
    for docs, index, code, at in cases:
        with pytest.raises(ValueError, match=rf"document {index} of inputs holds a lone surrogate "
                                             rf"U\+{code} at index {at}; it cannot be encoded as UTF-8"):
            superword.train(docs, 300, backend=backend)


def test_invalid_utf8_is_named_not_replaced(tmp_path, backend):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good line\nanother\nbad \xff byte\n")
    with pytest.raises(ValueError, match=r"bad\.txt, line 3: invalid UTF-8 \(byte 0xff"):
        superword.train(path, 300, backend=backend)
    gz = tmp_path / "bad.txt.gz"
    gz.write_bytes(gzip.compress(b"ok\n\xc3(\n"))
    with pytest.raises(ValueError, match=r"bad\.txt\.gz, line 2: invalid UTF-8"):
        superword.train(gz, 300, backend=backend)


def test_corrupt_gzip_is_named(tmp_path, backend):
    path = tmp_path / "docs.txt.gz"
    path.write_bytes(gzip.compress(b"hello world\n" * 1000)[:-30])
    with pytest.raises(ValueError, match=r"docs\.txt\.gz: corrupt or truncated gzip"):
        superword.train(path, 300, backend=backend)


def test_documents_must_be_strings(backend):
    with pytest.raises(TypeError, match="document 1 of inputs is bytes"):
        superword.train(iter(["ok", b"bytes"]), 300, backend=backend)


def test_decode_rejects_ids_out_of_range(tok):
    with pytest.raises(ValueError, match=rf"token id {tok.vocab_size} at position 1 is out of range"):
        tok.decode([5, tok.vocab_size])
    with pytest.raises(ValueError, match=r"token id -1 at position 0"):
        tok.decode([-1])
    with pytest.raises(TypeError, match="not int"):
        tok.decode(["a"])
    with pytest.raises(TypeError, match="token id at position 1 is bool, not int"):
        tok.decode([5, True])
    with pytest.raises(TypeError, match="token id at position 0 is float, not int"):
        tok.decode([5.0])
    with pytest.raises(ValueError, match=rf"token id {2**64} at position 2 is out of range"):
        tok.decode([5, 6, 2**64])


def test_decode_takes_any_iterable_of_integers(tok):
    """Lists, tuples, generators and numpy's integers (what ``return_array=True`` gives back)
    decode alike; both backends check the ids the same way."""
    np = pytest.importorskip("numpy")
    ids = tok.encode("The quick brown fox.")
    text = tok.decode(ids)
    assert text == "The quick brown fox."
    assert tok.decode(tuple(ids)) == tok.decode(iter(ids)) == tok.decode(np.array(ids, dtype=np.uint32)) == text
    with pytest.raises(ValueError, match=r"token id 18446744073709551615 at position 0 is out of range"):
        tok.decode([np.uint64(2**64 - 1)])


def test_special_tokens(backend):
    tok = superword.train(DOCS, 300, "boundless", backend=backend)
    size = tok.vocab_size
    tok.register_special_tokens(["<|end|>"])
    end = tok.special_tokens["<|end|>"]
    assert end == size and tok.vocab_size == size + 1
    with pytest.raises(ValueError, match=r"special token '<\|end\|>'"):
        tok.encode("a<|end|>")
    assert tok.encode("a<|end|>", allowed_special="all")[-1] == end
    assert end not in tok.encode("a<|end|>", allowed_special="none")
    assert tok.decode(tok.encode("a<|end|>b", allowed_special={"<|end|>"})) == "a<|end|>b"
    with pytest.raises(ValueError, match="allowed_special must be"):
        tok.encode("a", allowed_special="some")
    with pytest.raises(TypeError, match="allowed_special must be"):
        tok.encode("a", allowed_special=3)
    with pytest.raises(ValueError, match="empty"):
        tok.register_special_tokens([""])
    with pytest.raises(ValueError, match="already registered"):
        tok.register_special_tokens(["<|end|>"])


def test_lone_surrogates_are_rejected(tok):
    with pytest.raises(ValueError, match=r"lone surrogate U\+D800 at index 1"):
        tok.encode("a\ud800b")


def test_model_file_errors_name_the_line(tmp_path, tok, backend):
    good = tmp_path / "good.model"
    tok.save(good)
    lines = good.read_text(encoding="utf-8").split("\n")
    cut = tmp_path / "cut.model"
    cut.write_text("\n".join(lines[:100]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"cut\.model, line 100: file ends in the middle"):
        superword.Tokenizer.load(cut, backend=backend)
    cut.write_text("\n".join(lines[:100]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"cut\.model, line 101: file ends early"):
        superword.Tokenizer.load(cut, backend=backend)
    broken = list(lines)
    broken[10] = "7 ! notacount 0"
    bad = tmp_path / "bad.model"
    bad.write_text("\n".join(broken), encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.model, line 11: bad vocabulary entry"):
        superword.Tokenizer.load(bad, backend=backend)
    bad.write_text("hello\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 1: not a BoundlessBPE v2 model"):
        superword.Tokenizer.load(bad, backend=backend)
    with pytest.raises(FileNotFoundError):
        superword.Tokenizer.load(tmp_path / "absent.model", backend=backend)


def test_save_is_atomic(tmp_path, tok):
    """A failed save leaves what was there untouched and no temporary file behind."""
    target = tmp_path / "tok.model"
    target.mkdir()  # renaming a file over a folder fails
    (target / "keep.txt").write_text("previous contents")
    with pytest.raises(OSError):
        tok.save(target)
    assert (target / "keep.txt").read_text() == "previous contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tok.model"]
    tok.save(tmp_path / "ok.model")
    assert superword.Tokenizer.load(tmp_path / "ok.model").vocab_size == tok.vocab_size


# -- the Rust core's own edge cases -------------------------------------------------------------

def test_threads_must_be_positive():
    for bad in (0, -1):
        with pytest.raises(ValueError, match="threads must be at least 1"):
            superword.train(DOCS, 300, threads=bad)
    with pytest.raises(TypeError, match="threads must be an int"):
        superword.train(DOCS, 300, threads=1.5)


def test_nul_bytes_and_a_huge_single_line(tmp_path, backend):
    # NUL is ordinary text; a 100 MB line with no newline at all is one document
    line = ("the cat\x00sat on the mat, " * 4_500_000)[:100_000_000]
    path = tmp_path / "one_line.txt"
    path.write_text(line, encoding="utf-8")
    if backend == "reference":
        line = line[:200_000]  # the reference is slow; the point here is the Rust reader
        path.write_text(line, encoding="utf-8")
    tok = superword.train(path, 300, "bpe", backend=backend)
    assert tok.decode(tok.encode(line[:1000])) == line[:1000]


def test_a_file_that_vanishes_before_it_is_read(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("hello world\n" * 10)
    second.write_text("more text\n")
    calls = []

    def progress(stage, done, total):
        if stage == "count" and not calls and second.exists():
            calls.append(stage)
            second.unlink()  # gone after the inputs were checked, before it is opened
    with pytest.raises(FileNotFoundError, match=r"vanished while reading: .*b\.txt"):
        superword.train([first, second], 300, backend="rust", progress=progress, threads=1)


def test_a_panic_in_the_core_is_a_python_exception():
    from superword import _core
    with pytest.raises(RuntimeError, match="internal error in superword's Rust core"):
        _core._panic_for_test()


def test_ctrl_c_stops_a_training_from_inside_the_rust_core():
    import signal
    seen = []

    def progress(stage, done, total):
        if stage == "merges" and not seen:
            seen.append(done)
            signal.raise_signal(signal.SIGINT)  # as if the user pressed Ctrl-C now
    docs = [f"document {i} with words like alpha{i % 97} beta{i % 89}" for i in range(20000)]
    with pytest.raises(KeyboardInterrupt):
        superword.train(docs, 20000, "bpe", backend="rust", progress=progress)
    assert seen


def test_ctrl_c_stops_a_long_training_promptly(tmp_path):
    """A real SIGINT from outside, while the core works through an endless stream."""
    import signal
    import subprocess
    import sys
    import time
    script = (
        "import itertools, signal, superword\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with it ignored\n"
        "docs = itertools.cycle(['the quick brown fox %d jumps over the lazy dog' % i for i in range(1000)])\n"
        "print('started', flush=True)\n"
        "superword.train(docs, 5000, 'boundless')\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "started"
    time.sleep(1.5)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert time.monotonic() - sent < 10
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
