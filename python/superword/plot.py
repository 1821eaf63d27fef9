"""Figures of what tokenizers do (needs matplotlib: ``pip install 'superword[plot]'``).

Five panels, measured on the same text for every model, except the last two, which come
from the model files themselves (training, not the measured text):

* **compression**: bytes per token from zero, each bar labelled with the model's name, kind
  and vocabulary size, and the change in token count against a stated baseline;
* **lengths**: the share of output tokens of each length in bytes, the last bin holding every
  longer token (its label says up to which length);
* **superwords**: the share of output tokens that are superwords;
* **training**: the share of supermerges in each window of merges, in training order;
* **merges**: each merge's count when it was made, per MB of training text when the
  provenance sidecar says how much text that was, with the point where supermerges take over.

One model gets a figure of its own: no comparison panels, the token lengths split into
superwords and regular tokens, and its figures in a box.  ``panels`` writes one figure per
panel, sized for a column of a two-column paper.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

from . import stats
from ._api import Tokenizer

NAMES = {"word": "BPE", "boundless": "BoundlessBPE", "superbpe": "SuperBPE"}
PANELS = ("compression", "lengths", "superwords", "training", "merges")
#: token lengths at and past this many bytes share the last bin of the length panel
LENGTH_CAP = 16
#: merges per window of the training panel, as a share of the model's merges (at least 20)
WINDOW_SHARE = 0.02


def require_matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'superword[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


# ----------------------------------------------------------------------------------------
# what the panels show, as plain computations (tested without drawing)

def kind_name(kind: str) -> str:
    return NAMES.get(kind, kind)


def model_label(result: dict[str, Any]) -> str:
    """Two lines naming one model: its name, then its kind and vocabulary size."""
    return f"{result['name']}\n{kind_name(result['kind'])}, {result['vocab_size']:,} tokens"


def choose_baseline(results: Sequence[dict[str, Any]], baseline: str | None = None) -> int | None:
    """The index of the model the others are compared with: the one named ``baseline`` (its
    name as shown, or its file name), else the first word model (BPE); ``None`` when there
    is no word model and none is named.  An unknown name raises ``ValueError``."""
    if baseline is not None:
        for i, r in enumerate(results):
            if baseline in (r["name"], os.path.basename(str(r["name"]))):
                return i
        raise ValueError(f"--baseline {baseline!r} is none of the models "
                         f"({', '.join(str(r['name']) for r in results)})")
    return next((i for i, r in enumerate(results) if r["kind"] == "word"), None)


def token_change(results: Sequence[dict[str, Any]], base: int) -> list[float]:
    """Per model, the change of its token count against model ``base``, in percent (negative:
    fewer tokens)."""
    reference = results[base]["tokens"]
    return [100 * (r["tokens"] / reference - 1) for r in results]


def length_bins(histogram: dict[str, int], cap: int = LENGTH_CAP) -> tuple[list[str], list[int]]:
    """Bin labels and token counts for lengths 1 to ``cap - 1``, and one last bin for every
    token of ``cap`` bytes or more, labelled with the longest length it holds (``"16-75"``);
    every token is in some bin.  Lengths beyond ``cap`` only widen the last bin."""
    lengths = {int(k): n for k, n in histogram.items()}
    longest = max(lengths, default=1)
    top = min(cap, longest)
    labels = [str(x) for x in range(1, top)]
    counts = [lengths.get(x, 0) for x in range(1, top)]
    rest = sum(n for x, n in lengths.items() if x >= top)
    labels.append(str(top) if longest == top else f"{top}-{longest}")
    counts.append(rest)
    # a 0-byte length (a token missing from the vocabulary list) cannot happen for a loaded
    # model; it would be lost here, so it is refused rather than dropped
    if any(x < 1 for x in lengths):
        raise ValueError("token lengths must be at least 1 byte")
    return labels, counts


def window_size(merges: int) -> int:
    return max(20, int(merges * WINDOW_SHARE))


def supermerge_share(order: Sequence[tuple[int, bool]], window: int) -> tuple[list[int], list[float]]:
    """The share of supermerges (in percent) in consecutive windows of ``window`` merges in
    training order: (the index of each window's first merge, its share).  A last part shorter
    than half a window joins the window before it, so that a handful of merges at the end do
    not make a spike."""
    bounds = list(range(0, len(order), window))
    if len(bounds) > 1 and len(order) - bounds[-1] < window / 2:
        bounds.pop()
    starts, shares = [], []
    for n, start in enumerate(bounds):
        part = order[start:bounds[n + 1] if n + 1 < len(bounds) else len(order)]
        starts.append(start)
        shares.append(100 * sum(1 for _, sup in part if sup) / len(part))
    return starts, shares


def takeover(order: Sequence[tuple[int, bool]], window: int) -> int | None:
    """The first supermerge that starts a full window of ``window`` merges more than half of
    which are supermerges; ``None`` when there is none (a window that would run past the last
    merge does not count: three supermerges at the very end are not a take-over).

    >>> takeover([(9, False), (8, True), (7, False), (6, True), (5, True)], window=3)
    1
    >>> takeover([(9, False), (8, True), (7, False), (6, False), (5, True), (4, True), (3, True)], window=3)
    4
    >>> takeover([(9, False), (8, False), (7, False), (6, True), (5, True)], window=3) is None
    True
    """
    supers = [int(sup) for _, sup in order]
    running = sum(supers[:window])  # supermerges in order[step:step + window]
    for step in range(len(order) - window + 1):
        if supers[step] and 2 * running > window:
            return step
        running += (supers[step + window] if step + window < len(order) else 0) - supers[step]
    return None


def training_megabytes(provenance: dict[str, Any] | None) -> float | None:
    """MB of text the model was trained on, from its provenance, or ``None`` when it is not
    known: a count file's bytes are not recorded, and a compressed file's size on disk is
    not its text."""
    if not provenance or not provenance.get("inputs"):
        return None
    total = 0
    for entry in provenance["inputs"]:
        size = entry.get("bytes")
        if size is None:
            return None
        if entry.get("documents") is None:
            # the size of a file the Rust core read: its text only when it is not compressed
            name = str(entry.get("name", "")).lower()
            if name.endswith((".gz", ".zst", ".parquet")):
                return None
        total += size
    return total / 1e6 if total else None


def superword_lengths(tok: Tokenizer, texts: Sequence[str]) -> tuple[Counter[int], Counter[int]]:
    """Output tokens per length in bytes, (regular tokens, superwords)."""
    regular: Counter[int] = Counter()
    supers: Counter[int] = Counter()
    for ids in tok.encode_batch(list(texts), allowed_special="none"):
        for i in ids:
            (supers if tok.is_superword(i) else regular)[len(tok.token_bytes(i))] += 1
    return regular, supers


# ----------------------------------------------------------------------------------------
# drawing

class _Style:
    """Sizes of one layout: the whole figure, or one panel at a column's width."""

    def __init__(self, column: bool, legends: bool = True):
        self.column, self.legends = column, legends
        self.font = 8 if column else 11
        self.small = 7 if column else 9.5
        self.panel_size = (3.4, 2.6) if column else (4.6, 3.6)


def _bars(ax: Any, results: list[dict[str, Any]], values: list[float], notes: list[str],
          style: _Style) -> None:
    """Horizontal bars, one per model, the first at the top, labelled with the model."""
    ys = list(range(len(results)))[::-1]
    bars = ax.barh(ys, values, color=[f"C{n}" for n in range(len(results))], height=0.7)
    ax.bar_label(bars, notes, fontsize=style.small, padding=3)
    ax.set_yticks(ys, [model_label(r) for r in results], fontsize=style.small)
    ax.set_xlim(0, (1.7 if style.column else 1.45) * max(max(values), 1e-9))


def _compression(ax: Any, results: list[dict[str, Any]], base: int | None, style: _Style) -> None:
    values = [r["bytes_per_token"] for r in results]
    if base is None:
        notes = [f"{v:.2f}" for v in values]
        ax.set_title("Compression (no BPE model, so no baseline)", fontsize=style.font)
    else:
        change = token_change(results, base)
        sep = "\n" if style.column else "  "
        notes = [f"{v:.2f}{sep}" + ("(baseline)" if n == base else f"({c:+.1f} % tokens)")
                 for n, (v, c) in enumerate(zip(values, change))]
        ax.set_title(f"Compression\n(token change vs {results[base]['name']})" if style.column else
                     f"Compression; token change relative to {results[base]['name']}", fontsize=style.font)
    _bars(ax, results, values, notes, style)
    ax.set_xlabel("bytes per token" if style.column else "bytes per token (higher: fewer tokens)",
                  fontsize=style.font)


def _lengths(ax: Any, results: list[dict[str, Any]], style: _Style) -> None:
    labels: list[str] = []
    for n, r in enumerate(results):
        labels, counts = length_bins(r["length_histogram"])
        share = [100 * c / r["tokens"] for c in counts]
        ax.plot(range(len(labels)), share, marker="o", markersize=3, color=f"C{n}",
                label=f"{r['name']} ({kind_name(r['kind'])})")
    ax.set_xticks(range(len(labels)), labels, fontsize=style.small, rotation=90 if style.column else 0)
    ax.set_xlabel(f"token bytes (last bin: {LENGTH_CAP} and longer)" if style.column else
                  f"token length in bytes (last bin: {LENGTH_CAP} and longer)", fontsize=style.font)
    ax.set_ylabel("% of output tokens", fontsize=style.font)
    ax.set_title("Token lengths of the output", fontsize=style.font)
    if style.legends:
        ax.legend(fontsize=style.small, loc="upper right")


def _superwords(ax: Any, results: list[dict[str, Any]], style: _Style) -> None:
    shares = [r["superword_output_share"] for r in results]
    _bars(ax, results, shares, [f"{v:.1f} %" for v in shares], style)
    ax.set_xlim(0, max(10.0, (1.6 if style.column else 1.3) * max(shares)))
    ax.set_xlabel("% of output tokens" if style.column else "% of output tokens that are superwords",
                  fontsize=style.font)
    ax.set_title("Superwords in the output", fontsize=style.font)


def _training(ax: Any, results: list[dict[str, Any]], orders: list[list[tuple[int, bool]]],
              style: _Style) -> None:
    drawn = False
    for n, (r, order) in enumerate(zip(results, orders)):
        if not any(sup for _, sup in order):
            continue
        window = window_size(len(order))
        starts, shares = supermerge_share(order, window)
        # the last window's level drawn to the last merge
        ax.step([*starts, len(order)], [*shares, shares[-1]], where="post", color=f"C{n}",
                label=f"{r['name']} ({kind_name(r['kind'])}, windows of {window:,})")
        drawn = True
    ax.axhline(50, color="0.6", linewidth=0.8, linestyle=":")
    ax.set_ylim(-2, 102)
    ax.set_xlabel("merge, in training order", fontsize=style.font)
    ax.set_ylabel("% supermerges per window", fontsize=style.font)
    ax.set_title("Supermerges over training (dotted: half)", fontsize=style.font)
    if drawn and style.legends:
        ax.legend(fontsize=style.small)
    elif not drawn:
        ax.text(0.5, 0.5, "no model has supermerges", ha="center", va="center",
                transform=ax.transAxes, fontsize=style.font)


def _merges(ax: Any, results: list[dict[str, Any]], orders: list[list[tuple[int, bool]]],
            style: _Style) -> None:
    sizes = [training_megabytes(r["provenance"]) for r in results]
    per_mb = all(s is not None for s in sizes)
    for n, (r, order, mb) in enumerate(zip(results, orders, sizes)):
        if not order:
            continue
        scale = 1 / mb if per_mb and mb else 1.0
        trained = f", {mb:,.1f} MB" if mb is not None else ""
        ax.plot(range(len(order)), [c * scale for c, _ in order], color=f"C{n}", linewidth=1,
                label=f"{r['name']} ({kind_name(r['kind'])}{trained})")
        step = takeover(order, window_size(len(order)))
        if step is not None:
            ax.axvline(step, color=f"C{n}", linestyle="--", linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("merge, in training order", fontsize=style.font)
    ax.set_ylabel(("count per MB of training text" if per_mb else "count (training size unknown)")
                  if style.column else ("count when merged, per MB of training text" if per_mb
                                        else "count when merged (training size not known)"),
                  fontsize=style.font)
    ax.set_title("Merge counts (dashed: supermerges take over)" if style.column else
                 "Merge counts in training (dashed: supermerges take over)", fontsize=style.font)
    if style.legends:
        ax.legend(fontsize=style.small)


def _definitions() -> str:
    return ("Window: 2 % of a model's merges (at least 20). Supermerges take over (dashed line) at the "
            "first supermerge that starts a window more than half of which are supermerges; a model "
            "without a dashed line never gets there.\nThe training and merge panels come from the model "
            "files, not from the measured text. Superword: a token that spans more than one pretoken.")


def _single(plt: Any, tok: Tokenizer, result: dict[str, Any], texts: Sequence[str],
            order: list[tuple[int, bool]], source: str, style: _Style) -> Any:
    """The figure of one model: its output lengths split into superwords and regular tokens,
    its supermerges over training, its merge counts, and its numbers."""
    fig, (lengths, training, merges) = plt.subplots(1, 3, figsize=(15, 4.8))
    regular, supers = superword_lengths(tok, texts)
    total = sum(regular.values()) + sum(supers.values())
    every = {str(k): 0 for k in set(regular) | set(supers)}
    all_labels, reg = length_bins({**every, **{str(k): v for k, v in regular.items()}})
    _, sup = length_bins({**every, **{str(k): v for k, v in supers.items()}})
    xs = range(len(all_labels))
    lengths.bar(xs, [100 * v / total for v in reg], color="C0", label="regular tokens")
    lengths.bar(xs, [100 * v / total for v in sup], bottom=[100 * v / total for v in reg], color="C1",
                label="superwords")
    lengths.set_xticks(xs, all_labels, fontsize=style.small)
    lengths.set_xlabel(f"token length in bytes (last bin: {LENGTH_CAP} and longer)", fontsize=style.font)
    lengths.set_ylabel("% of output tokens", fontsize=style.font)
    lengths.set_title("Token lengths of the output", fontsize=style.font)
    lengths.legend(fontsize=style.small)
    lengths.set_ylim(0, 1.15 * max(100 * (a + b) / total for a, b in zip(reg, sup)))
    _training(training, [result], [order], style)
    _merges(merges, [result], [order], style)
    fig.suptitle(f"{model_label(result).replace(chr(10), ', ')}: {_numbers(result)}"
                 + (f"\nmeasured on {source}" if source else ""), fontsize=style.font)
    return fig


def _legend_entry(r: dict[str, Any]) -> str:
    mb = training_megabytes(r["provenance"])
    trained = f", trained on {mb:,.1f} MB" if mb is not None else ""
    return f"{r['name']} ({kind_name(r['kind'])}, {r['vocab_size']:,} tokens{trained})"


def _numbers(r: dict[str, Any]) -> str:
    return (f"{r['bytes_per_token']:.2f} bytes per token, {r['superword_output_share']:.1f} % of output "
            f"tokens are superwords, {r['supermerges']:,} of its {r['vocab_size']:,} tokens are superwords")


def plot(models: Sequence[Tokenizer], texts: Sequence[str], path: str | os.PathLike[str],
         names: Sequence[str] | None = None, source: str = "", baseline: str | None = None,
         panels: Sequence[str] | None = None) -> list[str]:
    """Draw ``models`` measured on ``texts`` into ``path`` (PNG, or any format matplotlib
    infers from the suffix) and return the files written.  ``source`` describes the text in
    the title.  ``baseline``: the name of the model the token changes are relative to
    (default: the first BPE model).  ``panels``: names from :data:`PANELS`, each drawn as a
    figure of its own at a column's width, to ``STEM-PANEL.EXT``.  Every file is written to a
    temporary file, then renamed."""
    plt = require_matplotlib()
    path = os.fspath(path)
    stem, suffix = os.path.splitext(path)
    ext = suffix.lstrip(".").lower() or "png"
    supported = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if ext not in supported:
        raise ValueError(f"{path}: matplotlib cannot write .{ext} files (use one of "
                         f"{', '.join(sorted(supported))})")
    if panels is not None:
        unknown = [p for p in panels if p not in PANELS]
        if unknown or not panels:
            raise ValueError(f"--panels: unknown panel {', '.join(map(repr, unknown)) or '(none given)'}; "
                             f"choose from {', '.join(PANELS)}")
    results = stats.evaluate(models, texts, names=names)
    base = choose_baseline(results, baseline)
    # an imported ranks model records no merges or their counts
    orders = [[] if tok.kind == "tiktoken" else stats.merge_order(stats.read_model_text(tok.model_text()))
              for tok in models]
    figures: list[tuple[str, Any]] = []
    if panels is not None:
        column = _Style(column=True, legends=False)
        for panel in panels:
            bars = panel in ("compression", "superwords")
            height = 0.9 + 0.45 * len(results) if bars else 2.4 + 0.16 * len(results)
            fig, ax = plt.subplots(figsize=(3.4, height), layout="constrained")
            _draw(panel, ax, results, orders, base, column)
            handles, labels = ax.get_legend_handles_labels()
            if handles and not bars:  # below the axes, where it hides no data
                fig.legend(handles, labels, loc="outside lower center", fontsize=column.small)
            figures.append((f"{stem}-{panel}{suffix or '.png'}", fig))
    elif len(results) == 1:
        fig = _single(plt, models[0], results[0], texts, orders[0], source, _Style(column=False))
        fig.text(0.5, 0.005, _definitions(), ha="center", va="bottom", fontsize=9, wrap=True)
        fig.tight_layout(rect=(0, 0.06, 1, 1))
        figures.append((path, fig))
    else:
        style = _Style(column=False, legends=False)
        fig = plt.figure(figsize=(15, 9 + 0.5 * len(results)), layout="constrained")
        top, bottom = fig.subfigures(2, 1, height_ratios=(0.55 * len(results) + 1.2, 5.0))
        axes = dict(zip(("compression", "superwords"), top.subplots(1, 2)))
        axes.update(zip(("lengths", "training", "merges"), bottom.subplots(1, 3)))
        for panel, ax in axes.items():
            _draw(panel, ax, results, orders, base, style)
        # one legend for the colours of every panel: the models, with their training text
        handles = axes["lengths"].get_lines()
        bottom.legend(handles, [_legend_entry(r) for r in results], loc="outside lower center",
                      ncols=len(results) if len(results) <= 3 else 2, fontsize=style.small)
        fig.suptitle(f"measured on {source}" if source else "", fontsize=style.font)
        fig.supxlabel(_definitions(), fontsize=style.small)
        figures.append((path, fig))
    written = []
    try:
        for target, fig in figures:
            _save(fig, target, ext)
            written.append(target)
    finally:
        plt.close("all")
    return written


def _draw(panel: str, ax: Any, results: list[dict[str, Any]], orders: list[list[tuple[int, bool]]],
          base: int | None, style: _Style) -> None:
    if panel == "compression":
        _compression(ax, results, base, style)
    elif panel == "lengths":
        _lengths(ax, results, style)
    elif panel == "superwords":
        _superwords(ax, results, style)
    elif panel == "training":
        _training(ax, results, orders, style)
    else:
        _merges(ax, results, orders, style)
    ax.tick_params(labelsize=style.small)


def _save(fig: Any, path: str, ext: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.tmp{os.getpid()}")
    try:
        fig.savefig(tmp, dpi=150, format=ext)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
