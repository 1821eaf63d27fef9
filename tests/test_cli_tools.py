"""The inspection commands (stats, plot, vocab, encode) run through the console script, their
output parsed; and the training output of `superword train`."""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import superword
from helpers import GOLDEN, read_jsonl_texts
from superword import stats

MODELS = GOLDEN / "taylorswift_400_v600"
TEXT = GOLDEN / "taylorswift_400.jsonl"
KINDS = ["word", "boundless", "super"]


def run(*args: str, stdin: bytes | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    """The installed console script, else the same entry point through ``python -m``."""
    script = shutil.which("superword")
    command = [script] if script else [sys.executable, "-m", "superword"]
    result = subprocess.run([*command, *args], input=stdin, capture_output=True, timeout=600)
    if ok:
        assert result.returncode == 0, result.stderr.decode()
    return result


def table(text: str) -> dict[str, list[str]]:
    """Rows of a printed table, by their first cell (columns split on two or more spaces)."""
    rows = {}
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) > 1:
            rows[cells[0]] = cells[1:]
    return rows


def model(kind: str) -> str:
    return str(MODELS / f"{kind}.model")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return read_jsonl_texts(TEXT)


def test_stats_table_puts_models_side_by_side_and_marks_the_best(texts):
    out = run("stats", *map(model, KINDS), "--on", str(TEXT)).stdout.decode()
    rows = table(out)
    assert rows["metric"] == ["word.model", "boundless.model", "super.model"]
    size = sum(len(t.encode()) for t in texts)
    tokens = [sum(len(superword.Tokenizer.load(model(k)).encode_ordinary(t)) for t in texts) for k in KINDS]
    assert [int(c.rstrip("*").replace(",", "")) for c in rows["tokens"]] == tokens
    per_token = [float(c.rstrip("*")) for c in rows["bytes per token"]]
    assert per_token == pytest.approx([size / n for n in tokens], abs=1e-3)
    best = max(range(3), key=lambda i: per_token[i])
    assert [c.endswith("*") for c in rows["bytes per token"]] == [i == best for i in range(3)]
    assert tokens[1] < tokens[0] and tokens[2] < tokens[0]  # superwords compress this text
    assert float(rows["superwords in vocabulary (%)"][0]) == 0.0
    assert "no provenance sidecar" in out  # the paper's files have none


def test_stats_json_measures_what_it_says(texts):
    data = json.loads(run("stats", model("word"), model("boundless"), "--on", str(TEXT), "--json").stdout)
    assert data["text"]["documents"] == len(texts)
    for entry in data["models"]:
        tok = superword.Tokenizer.load(model(entry["name"].removesuffix(".model")))
        ids = [i for t in texts for i in tok.encode_ordinary(t)]
        assert entry["tokens"] == len(ids)
        assert sum(entry["length_histogram"].values()) == len(ids)
        vocab = [i for i, _, _ in tok]
        p = [ids.count(i) / len(ids) for i in set(ids)]
        renyi = math.log(sum(x ** 2.5 for x in p)) / (1 - 2.5) / math.log(len(vocab))
        assert entry["renyi_efficiency"] == pytest.approx(renyi)
        assert entry["vocab_utilisation"] == pytest.approx(100 * len(set(ids)) / len(vocab))
        superwords = {i for i, _, s in tok if s}
        assert entry["superword_output_share"] == pytest.approx(
            100 * sum(i in superwords for i in ids) / len(ids))
        words = sum(len(t.split()) for t in texts)
        assert entry["tokens_per_word"] == pytest.approx(len(ids) / words)


def test_evaluate_takes_tokenizers_and_paths(texts):
    tok = superword.Tokenizer.load(model("super"))
    a, b = stats.evaluate([tok, model("super")], texts[:50])
    assert a["tokens"] == b["tokens"] and a["name"] == "superbpe" and b["name"].endswith("super.model")
    with pytest.raises(ValueError, match="no text"):
        stats.evaluate([tok], ["", ""])


def test_merge_order_replays_boundless_training():
    """Rebuilt from the file's counts, the order of regular and superword tokens is the order
    of the vocabulary ids (SPEC 4: tokens enter the vocabulary as they win)."""
    path = model("boundless")
    tok = superword.Tokenizer.load(path)
    order = stats.merge_order(stats.read_model_text(tok.model_text()))
    by_id = [sup for _, _, sup in sorted(tok)][243:]
    assert [sup for _, sup in order] == by_id


def test_vocab_lists_readable_tokens_with_counts():
    path = model("boundless")
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    n = int(lines[2])
    counts = {int(f[0]): int(f[2]) for f in (line.split(" ") for line in lines[3:3 + n])}
    tok = superword.Tokenizer.load(path)
    out = run("vocab", path, "--superwords", "--top", "5").stdout.decode()
    rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()[1:]]
    assert len(rows) == 5 and all(r[2] == "yes" for r in rows)
    got = [(int(r[0]), int(r[1].replace(",", ""))) for r in rows]
    supers = sorted(((i, counts[i]) for i, _, s in tok if s), key=lambda x: (-x[1], x[0]))
    assert got == supers[:5]
    for r in rows:  # readable text: visible spaces, no GPT-2 byte symbols
        assert r[3].replace("␣", " ") == tok.token_bytes(int(r[0])).decode()
        assert "Ġ" not in r[3]
    found = run("vocab", path, "--grep", "^ Taylor", "--json").stdout.decode().splitlines()
    assert found and all(json.loads(line)["text"].startswith(" Taylor") for line in found)
    bad = run("vocab", path, "--grep", "(", ok=False)
    assert bad.returncode == 2 and b"--grep" in bad.stderr


def test_encode_from_argument_file_and_stdin(tmp_path):
    path = model("boundless")
    tok = superword.Tokenizer.load(path)
    text = "Taylor Swift is one of the best in the world.\n"
    ids = tok.encode(text)
    src = tmp_path / "t.txt"
    src.write_text(text, encoding="utf-8")
    assert run("encode", path, text, "--ids").stdout.split() == [str(i).encode() for i in ids]
    assert json.loads(run("encode", path, "--file", str(src), "--json").stdout)["ids"] == ids
    data = json.loads(run("encode", path, "--json", stdin=text.encode()).stdout)
    assert data["ids"] == ids and "".join(data["tokens"]) == text
    assert data["superword"] == [tok.is_superword(i) for i in ids]
    shown = run("encode", path, text).stdout.decode().splitlines()  # piped: no colour codes
    assert "\x1b" not in shown[0]
    pieces = [p[1:-1] if p.startswith("[") else p for p in shown[0].split("|")]
    assert [p.replace("␣", " ").replace("↵", "\n") for p in pieces] == [tok.token_bytes(i).decode() for i in ids]
    assert shown[1].startswith(f"{len(ids)} tokens")


def test_encode_reports_invalid_utf8_on_stdin():
    result = run("encode", model("word"), stdin=b"ok \xff bad", ok=False)
    assert result.returncode == 2
    assert b"standard input is not valid UTF-8 (byte 0xff at byte offset 3)" in result.stderr


def test_plot_writes_a_png_with_content(tmp_path):
    pytest.importorskip("matplotlib")
    image = pytest.importorskip("matplotlib.image")
    out = tmp_path / "stats.png"
    run("plot", *map(model, KINDS), "--on", str(TEXT), "-o", str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 30_000
    pixels = image.imread(str(out))
    height, width = pixels.shape[:2]
    assert width > height > 600
    colours = {tuple(p) for p in pixels[::7, ::7, :3].reshape(-1, 3).round(2).tolist()}
    assert len(colours) > 20  # bars, curves and text, not a blank canvas
    assert not list(tmp_path.glob(".*tmp*"))


def test_plot_without_matplotlib_names_the_extra(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from superword.cli import main\n"
            f"sys.exit(main(['plot', {model('word')!r}, '--on', {str(TEXT)!r}, '-o', {str(tmp_path / 'x.png')!r}]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "pip install 'superword[plot]'" in result.stderr
    assert not (tmp_path / "x.png").exists()


def test_bad_inputs_are_named(tmp_path):
    junk = tmp_path / "junk.model"
    junk.write_text("hello\n")
    result = run("stats", str(junk), ok=False)
    assert result.returncode == 2 and b"junk.model" in result.stderr and b"Traceback" not in result.stderr
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    result = run("stats", model("word"), "--on", str(empty), ok=False)
    assert result.returncode == 2 and b"empty.txt" in result.stderr and b"no text" in result.stderr
    result = run("stats", model("word"), "--on", str(tmp_path / "*.nothing"), ok=False)
    assert b"matches no file" in result.stderr and b"*.nothing" in result.stderr
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "image.bin").write_bytes(b"\x00\x01")
    result = run("stats", model("word"), "--on", str(tmp_path / "folder"), ok=False)
    assert b"holds no data files" in result.stderr and b"folder" in result.stderr


def test_version_and_help():
    assert run("--version").stdout.decode().strip() == f"superword {superword.__version__}"
    for command in ([], ["train"], ["stats"], ["encode"]):
        helptext = run(*command, "--help").stdout.decode()
        assert "``" not in helptext and "usage:" in helptext


def test_train_prints_stages_summary_and_writes_provenance(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(read_jsonl_texts(TEXT)) + "\n", encoding="utf-8")
    out = tmp_path / "m.model"
    result = run("train", str(corpus), "--algorithm", "superbpe", "--vocab-size", "600",
                 "--supermerges", "60", "--hold-back", "10", "-o", str(out))
    err, stdout = result.stderr.decode(), result.stdout.decode()
    assert "\r" not in err  # piped: plain lines
    assert [line.split(":")[0] for line in err.splitlines()[1:]] == [
        "pre-tokenize + count", "phase 1", "supermerge candidates", "phase 2"]
    row = table(stdout)["SuperBPE"]
    tok = superword.Tokenizer.load(out)
    stages = tok.provenance["stages_seconds"]
    assert [float(x) for x in row[:4]] == pytest.approx(
        [stages[k] for k in ("pretokenize_count", "phase1", "candidates", "phase2")], abs=0.006)
    summary = re.search(r"SuperBPE: ([\d.]+) bytes/token, ([\d.-]+) % fewer tokens than BPE", stdout)
    assert summary, stdout
    assert "in-domain" in stdout and "1 document in 10" in stdout
    # the summary's word model: the model without its supermerges, measured on the held-back
    # documents (the 10th, 20th, ...), which were not trained on
    all_texts = read_jsonl_texts(TEXT)
    texts = all_texts[9::10]
    kept = [t for n, t in enumerate(all_texts, start=1) if n % 10]
    assert tok.model_text() == superword.train(kept, 600, "superbpe", supermerges=60).model_text()
    word = superword.train(kept, 600 - 60, "bpe")
    ours = sum(len(tok.encode_ordinary(t)) for t in texts)
    base = sum(len(word.encode_ordinary(t)) for t in texts)
    assert float(summary.group(2)) == pytest.approx(100 * (1 - ours / base), abs=0.06)
    prov = json.loads((tmp_path / "m.model.json").read_text())
    assert prov["algorithm"] == "superbpe" and prov["settings"]["supermerges"] == 60
    assert prov["inputs"] == [{"name": "corpus.txt", "documents": len(all_texts),
                               "bytes": sum(len(t.encode()) for t in all_texts),
                               "file_bytes": corpus.stat().st_size,
                               "sha256": hashlib.sha256(corpus.read_bytes()).hexdigest()}]
    assert prov["settings"]["hold_back"] == {"every": 10, "documents": len(texts),
                                             "bytes": sum(len(t.encode()) for t in texts)}
    assert prov["superword_version"] == superword.__version__
    shown = run("stats", str(out), "--on", str(TEXT)).stdout.decode()
    assert f"trained by superword {superword.__version__} on corpus.txt" in shown


def test_empty_scripts_means_no_scripts(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("你好世界 hello world\n" * 30, encoding="utf-8")
    out = tmp_path / "m.model"
    run("train", str(corpus), "--algorithm", "bpe", "--vocab-size", "260", "--scripts", "", "-q",
        "--no-compare", "-o", str(out))
    assert '"script_specific_scripts": []' in out.read_text(encoding="utf-8")
    assert superword.Tokenizer.load(out).model_text() == superword.train(
        corpus, 260, "bpe", scripts=[]).model_text()


def test_progress_is_a_bar_in_a_terminal_and_plain_lines_in_a_pipe():
    from superword._progress import Progress

    class Stream(io.StringIO):
        def __init__(self, tty: bool):
            super().__init__()
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    for tty in (True, False):
        stream = Stream(tty)
        progress = Progress(stream)
        for stage, total in (("count", 0), ("merges", 40), ("phase2", 10)):
            for done in range(0, total + 1, 5):
                progress(stage, done, total)
        progress.close()
        text = stream.getvalue()
        assert ("\r" in text) == tty and ("|" in text) == tty
        ends = [line.rsplit("\r", 1)[-1].replace("\x1b[K", "") for line in text.split("\n")[:-1]]
        assert ends == ["pre-tokenize + count: 0 documents", "phase 1: 40 merges", "phase 2: 10 tokens"]


def test_terminal_view_colours_tokens_and_highlights_superwords():
    from superword._display import show_tokens
    coloured = show_tokens([(b"for", False), (b" in range", True), (b"(", False)], color=True)
    assert coloured.count("\x1b[0m") == 3 and "\x1b[1;33;44m␣in␣range\x1b[0m" in coloured
    assert show_tokens([(b"for", False), (b" in range", True)], color=False) == "for|[␣in␣range]"


def test_plot_refuses_a_format_it_cannot_write(tmp_path):
    pytest.importorskip("matplotlib")
    result = run("plot", model("word"), "--on", str(TEXT), "-o", str(tmp_path / "fig.xyz"), ok=False)
    assert result.returncode == 2 and b"fig.xyz: matplotlib cannot write .xyz files" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_terminal_without_utf8_gets_escapes_not_an_error(tmp_path):
    # Windows pipes are cp1252 unless Python runs in UTF-8 mode; the visible space is not in it
    model = tmp_path / "m.model"
    superword.train(["the cat sat on the mat"] * 50, 260, "bpe").save(model)
    env = {**os.environ, "PYTHONIOENCODING": "cp1252", "PYTHONUTF8": "0"}
    done = subprocess.run([sys.executable, "-m", "superword", "encode", str(model), "the cat"],
                          capture_output=True, env=env)
    assert done.returncode == 0, done.stderr
    assert b"\\u2423" in done.stdout  # the visible space, escaped


def test_export_to_hf_names_every_file_it_wrote(tmp_path, capsys):
    from superword.cli import main
    model = tmp_path / "b.model"
    superword.train(["the cat sat on the mat and the dog sat on the log"] * 100, 300, "boundless").save(model)
    assert main(["export", str(model), "--to", "hf", str(tmp_path / "hf")]) == 0
    said = capsys.readouterr().out
    assert sorted(os.listdir(tmp_path / "hf")) == sorted(said.split(": ", 1)[1].strip().split(", "))
