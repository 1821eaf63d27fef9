"""The figures of `superword plot`: what each panel computes, tested as functions, and real
image files written and read back."""
from __future__ import annotations

import pytest
import superword
from helpers import GOLDEN, read_jsonl_texts
from superword import plot, stats
from superword.cli import main

MODELS = GOLDEN / "taylorswift_400_v600"
TEXT = GOLDEN / "taylorswift_400.jsonl"


def result(name: str, kind: str, tokens: int, vocab: int = 600) -> dict:
    return {"name": name, "kind": kind, "tokens": tokens, "vocab_size": vocab}


def test_the_baseline_is_the_first_word_model_or_the_one_named():
    results = [result("b.model", "boundless", 80), result("w.model", "word", 100),
               result("w2.model", "word", 90)]
    assert plot.choose_baseline(results) == 1
    assert plot.choose_baseline(results, "w2.model") == 2
    assert plot.choose_baseline(results[:1]) is None  # no word model: no baseline
    with pytest.raises(ValueError, match="--baseline 'x.model' is none of the models"):
        plot.choose_baseline(results, "x.model")
    assert plot.token_change(results, 1) == pytest.approx([-20.0, 0.0, -10.0])


def test_labels_tell_two_models_of_one_kind_apart():
    a, b = result("a.model", "boundless", 1, 4096), result("b.model", "boundless", 1, 8192)
    assert plot.model_label(a) != plot.model_label(b)
    assert plot.model_label(a) == "a.model\nBoundlessBPE, 4,096 tokens"


def test_every_token_length_lands_in_a_bin():
    histogram = {"1": 5, "2": 7, "15": 1, "16": 2, "40": 3, "75": 1}
    labels, counts = plot.length_bins(histogram, cap=16)
    assert labels[:2] == ["1", "2"] and labels[-1] == "16-75" and len(labels) == 16
    assert sum(counts) == sum(histogram.values())
    assert counts[-1] == 6 and counts[14] == 1
    short_labels, short = plot.length_bins({"1": 2, "3": 1}, cap=16)
    assert short_labels == ["1", "2", "3"] and short == [2, 0, 1]


def test_supermerge_share_per_window():
    order = [(10, False)] * 20 + [(5, True)] * 10 + [(4, False)] * 10 + [(3, True)] * 3
    starts, shares = plot.supermerge_share(order, 10)
    # the last 3 merges (under half a window) join the window before them
    assert starts == [0, 10, 20, 30] and shares == pytest.approx([0, 0, 100, 300 / 13])
    assert plot.supermerge_share(order[:40], 20) == ([0, 20], [0.0, 50.0])
    assert plot.takeover(order, 10) == 20
    assert plot.takeover([(9, False)] * 30 + [(1, True)] * 5, 10) is None  # no full window


def test_training_megabytes_from_provenance():
    assert plot.training_megabytes(None) is None
    text = {"inputs": [{"name": "a.txt", "documents": 3, "bytes": 2_000_000}]}
    assert plot.training_megabytes(text) == 2.0
    on_disk = {"inputs": [{"name": "a.txt", "documents": None, "bytes": 1_500_000}]}
    assert plot.training_megabytes(on_disk) == 1.5
    compressed = {"inputs": [{"name": "a.txt.gz", "documents": None, "bytes": 1_500_000}]}
    assert plot.training_megabytes(compressed) is None  # its size on disk is not its text
    counted = {"inputs": [{"name": "c.swc", "documents": 10, "bytes": None}]}
    assert plot.training_megabytes(counted) is None


def test_the_output_share_of_superwords_matches_the_lengths_split():
    tok = superword.Tokenizer.load(MODELS / "boundless.model")
    texts = read_jsonl_texts(TEXT)[:200]
    regular, supers = plot.superword_lengths(tok, texts)
    r = stats.evaluate([tok], texts)[0]
    assert sum(supers.values()) > 0
    assert 100 * sum(supers.values()) / (sum(regular.values()) + sum(supers.values())) == pytest.approx(
        r["superword_output_share"])


def _png(path) -> tuple[int, int, int]:
    image = pytest.importorskip("matplotlib.image")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = image.imread(str(path))
    colours = {tuple(p) for p in pixels[::5, ::5, :3].reshape(-1, 3).round(2).tolist()}
    return pixels.shape[1], pixels.shape[0], len(colours)


def test_cli_plot_writes_a_figure_of_all_panels_one_per_panel_and_one_for_one_model(tmp_path):
    pytest.importorskip("matplotlib")
    models = [str(MODELS / f"{k}.model") for k in ("word", "boundless", "super")]
    out = tmp_path / "all.png"
    assert main(["plot", *models, "--on", str(TEXT), "-o", str(out)]) == 0
    width, height, colours = _png(out)
    assert width > height > 1000 and colours > 20
    assert main(["plot", *models, "--on", str(TEXT), "--panels", "compression,merges",
                 "-o", str(tmp_path / "col.png")]) == 0
    for panel in ("compression", "merges"):
        width, height, colours = _png(tmp_path / f"col-{panel}.png")
        assert width <= 3.4 * 150 + 1 and colours > 5  # a column's width at 150 dpi
    assert not (tmp_path / "col.png").exists()
    assert main(["plot", models[1], "--on", str(TEXT), "-o", str(tmp_path / "one.png")]) == 0
    width, height, colours = _png(tmp_path / "one.png")
    assert width > 2 * height and colours > 5
    assert not list(tmp_path.glob(".*tmp*"))


def test_cli_plot_refuses_an_unknown_panel_or_baseline(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    model = str(MODELS / "word.model")
    assert main(["plot", model, "--on", str(TEXT), "--panels", "colours", "-o", str(tmp_path / "x.png")]) == 2
    assert "--panels: unknown panel 'colours'" in capsys.readouterr().err
    assert main(["plot", model, "--on", str(TEXT), "--baseline", "nope", "-o", str(tmp_path / "x.png")]) == 2
    assert "--baseline 'nope' is none of the models" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
