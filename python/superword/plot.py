"""One figure of what tokenizers do (needs matplotlib: ``pip install 'superword[plot]'``).

Three panels: the length of the tokens each model makes of the same text, the compression
(bytes per token) per model, and the count of every merge in training order, regular merges
and supermerges marked, with the point where supermerges take over.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from . import stats
from ._api import Tokenizer

NAMES = {"word": "BPE", "boundless": "BoundlessBPE", "superbpe": "SuperBPE"}


def require_matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'superword[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot(models: Sequence[Tokenizer], texts: Sequence[str], path: str | os.PathLike[str],
         names: Sequence[str] | None = None, source: str = "") -> None:
    """Draw the three panels for ``models`` measured on ``texts`` into ``path`` (PNG, or any
    format matplotlib infers from the suffix); written to a temporary file, then renamed."""
    plt = require_matplotlib()
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lstrip(".").lower() or "png"
    supported = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if ext not in supported:
        raise ValueError(f"{path}: matplotlib cannot write .{ext} files (use one of "
                         f"{', '.join(sorted(supported))})")
    results = stats.evaluate(models, texts, names=names)
    labels = [f"{r['name']} ({NAMES.get(r['kind'], r['kind'])})" for r in results]
    fig, (lengths, compression, merges) = plt.subplots(1, 3, figsize=(16, 4.8))

    longest = max(int(k) for r in results for k in r["length_histogram"])
    width = 0.8 / len(results)
    for n, (r, label) in enumerate(zip(results, labels)):
        hist = r["length_histogram"]
        xs = list(range(1, min(longest, 24) + 1))
        share = [100 * hist.get(str(x), 0) / r["tokens"] for x in xs]
        lengths.bar([x + (n - (len(results) - 1) / 2) * width for x in xs], share, width=width, label=label)
    lengths.set_xlabel("token length (bytes)")
    lengths.set_ylabel("% of output tokens")
    lengths.set_title("Token lengths")
    lengths.legend(fontsize=8)

    bars = compression.bar(range(len(results)), [r["bytes_per_token"] for r in results],
                           color=[f"C{n}" for n in range(len(results))])
    first = results[0]["tokens"]
    compression.bar_label(bars, [f"{r['bytes_per_token']:.2f}" + ("" if n == 0 else
                                 f"\n{100 * (r['tokens'] / first - 1):+.1f} % tokens")
                                 for n, r in enumerate(results)], fontsize=9)
    low = min(r["bytes_per_token"] for r in results)
    compression.set_ylim(0.8 * low, 1.12 * max(r["bytes_per_token"] for r in results))
    compression.set_xticks(range(len(results)), [NAMES.get(r["kind"], r["kind"]) for r in results])
    compression.set_ylabel("bytes per token (higher is better)")
    compression.set_title("Compression" + (f"\n{source}" if source else ""), fontsize=10)

    for n, (tok, label) in enumerate(zip(models, labels)):
        if tok.kind == "tiktoken":  # an imported ranks model records no merge counts
            continue
        order = stats.merge_order(stats.read_model_text(tok.model_text()))
        if not order:
            continue
        steps = range(len(order))
        counts = [c for c, _ in order]
        merges.plot(steps, counts, color=f"C{n}", linewidth=0.8, alpha=0.6, label=label)
        sup = [(s, c) for s, (c, is_super) in enumerate(order) if is_super]
        if sup:
            step = stats.transition(order)
            where = f"supermerges take over at {step:,}" if step is not None else "never the majority"
            merges.scatter([s for s, _ in sup], [c for _, c in sup], s=5, color=f"C{n}", marker="o",
                           label=f"{len(sup):,} supermerges ({where})")
            if step is not None:
                merges.axvline(step, color=f"C{n}", linestyle="--", linewidth=1)
    merges.set_yscale("log")
    merges.set_xlabel("merge, in training order")
    merges.set_ylabel("count when merged")
    merges.set_title("Merge counts (dots: supermerges; dashed: transition)")
    merges.legend(fontsize=7)

    fig.tight_layout()
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.tmp{os.getpid()}")
    try:
        fig.savefig(tmp, dpi=110, format=ext)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.remove(tmp)
