"""What a tokenizer does with text: :func:`evaluate` measures models side by side.

>>> import superword
>>> tok = superword.train(["one of the best, one of the best"] * 20, 270, "boundless")
>>> [r["bytes_per_token"] > 1 for r in evaluate([tok], ["one of the best"])]
[True]
"""
from __future__ import annotations

import io
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ._open import open_tokenizer
from ._tokenizer import Tokenizer
from .reference import model as _model

#: Rényi entropy order of the efficiency measure (Zouhar et al., 2023, "Tokenization and the
#: noiseless channel": alpha = 2.5 correlated best with downstream scores)
RENYI_ALPHA = 2.5

#: (key, row label, better: "max" | "min" | None) in table order
METRICS: list[tuple[str, str, str | None]] = [
    ("tokens", "tokens", "min"),
    ("bytes_per_token", "bytes per token", "max"),
    ("chars_per_token", "characters per token", "max"),
    ("tokens_per_word", "tokens per whitespace word", "min"),
    ("renyi_efficiency", "Renyi efficiency (alpha 2.5)", "max"),
    ("vocab_utilisation", "vocabulary used (%)", "max"),
    ("superword_vocab_share", "superwords in vocabulary (%)", None),
    ("superword_output_share", "superwords in output (%)", None),
    ("mean_vocab_token_bytes", "mean token length, vocabulary (bytes)", None),
    ("median_output_token_bytes", "median token length, output (bytes)", None),
    ("p90_output_token_bytes", "90th pct token length, output (bytes)", None),
]


def _as_tokenizer(model: Any) -> tuple[str, Tokenizer]:
    if isinstance(model, Tokenizer):
        return model.kind, model
    return os.fspath(model), open_tokenizer(model)


def evaluate(models: Sequence[Any], texts: Iterable[str],
             names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Encode the same ``texts`` with each model (a :class:`Tokenizer`, or any spec that
    :func:`superword.open_tokenizer` takes, such as ``"cl100k_base"``) and measure the result;
    one dict per model (JSON-ready): the keys of :data:`METRICS`, plus ``name``, ``kind``, ``vocab_size``,
    ``supermerges``, ``documents``, ``bytes``, ``characters``, ``words`` and
    ``length_histogram`` (output token length in bytes -> number of tokens).

    Special-token strings in the texts are encoded as ordinary text."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of texts, not one str")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"text {i} is {type(t).__name__}, not str")
    size = sum(len(t.encode("utf-8")) for t in texts)
    if size == 0:
        raise ValueError("no text to measure on (the texts are empty)")
    characters = sum(len(t) for t in texts)
    words = sum(len(t.split()) for t in texts)
    loaded = [_as_tokenizer(m) for m in models]
    if not loaded:
        raise ValueError("evaluate needs at least one model")
    if names is None:
        names = [name for name, _ in loaded]
    results = []
    for name, (_, tok) in zip(names, loaded):
        ids_per_text = tok.encode_batch(texts, allowed_special="none")
        results.append(_measure(name, tok, ids_per_text, len(texts), size, characters, words))
    return results


def _measure(name: str, tok: Tokenizer, ids_per_text: list[list[int]], documents: int,
             size: int, characters: int, words: int) -> dict[str, Any]:
    counts: Counter[int] = Counter()
    for ids in ids_per_text:
        counts.update(ids)
    tokens = sum(counts.values())
    vocab = list(tok)  # (id, bytes, is_superword), special tokens excluded
    length = {i: len(raw) for i, raw, _ in vocab}
    superword = {i for i, _, sup in vocab if sup}
    histogram: Counter[int] = Counter()
    for i, n in counts.items():
        histogram[length.get(i, 0)] += n
    probabilities = [n / tokens for n in counts.values()]
    power = sum(p ** RENYI_ALPHA for p in probabilities)
    renyi = math.log(power) / (1 - RENYI_ALPHA) / math.log(len(vocab))
    return {
        "name": name, "kind": tok.kind, "vocab_size": len(vocab),
        "supermerges": tok.num_supermerges, "documents": documents, "bytes": size,
        "characters": characters, "words": words, "tokens": tokens,
        "bytes_per_token": size / tokens, "chars_per_token": characters / tokens,
        "tokens_per_word": tokens / words if words else float("nan"),
        "renyi_efficiency": renyi,
        "vocab_utilisation": 100 * len(counts) / len(vocab),
        "superword_vocab_share": 100 * len(superword) / len(vocab),
        "superword_output_share": 100 * sum(counts[i] for i in superword) / tokens,
        "mean_vocab_token_bytes": sum(length.values()) / len(vocab),
        "median_output_token_bytes": _quantile(histogram, 0.5),
        "p90_output_token_bytes": _quantile(histogram, 0.9),
        "length_histogram": {str(k): histogram[k] for k in sorted(histogram)},
        "provenance": tok.provenance,
    }


def _quantile(histogram: Counter[int], q: float) -> int:
    """The smallest length with at least ``q`` of the tokens at or below it."""
    total, seen = sum(histogram.values()), 0
    for value in sorted(histogram):
        seen += histogram[value]
        if seen >= q * total:
            return value
    return 0


def best(results: list[dict[str, Any]], key: str, better: str | None) -> set[int]:
    """Indices of the models with the best value of ``key`` (all of them on a tie)."""
    values = [r[key] for r in results]
    if better is None or len(results) < 2 or any(math.isnan(v) for v in values):
        return set()
    target = max(values) if better == "max" else min(values)
    return {i for i, v in enumerate(values) if v == target}


# ----------------------------------------------------------------------------------------
# the training order of a model's merges (for the merge-count plot)

def read_model_text(text: str, name: str = "<model>") -> _model.Model:
    """Parse a model file's text (SPEC 8) with the reference reader."""
    return _model._read(_model._Lines(io.StringIO(text), name))


def merge_order(model: _model.Model) -> list[tuple[int, bool]]:
    """``(count, is_supermerge)`` of every merge in the order training made it.

    BoundlessBPE interleaves the two lists by its own rule (SPEC 4: a supermerge wins only
    with a strictly higher count than the next regular merge), so the recorded counts
    are enough to rebuild the order exactly; SuperBPE makes all regular merges first.

    >>> from superword.reference.merging import Merge
    >>> m = _model.Model("boundless", None, [], [], [],   # type: ignore[arg-type]
    ...                  [Merge(b"a", b"b", 9, False), Merge(b"c", b"d", 4, False)],
    ...                  [Merge(b"x", b"y", 5, False)])
    >>> merge_order(m)
    [(9, False), (5, True), (4, False)]
    """
    regular = [m.count for m in model.merges]
    supers = [m.count for m in model.supermerges]
    if model.kind != "boundless":
        return [(c, False) for c in regular] + [(c, True) for c in supers]
    order, r, s = [], 0, 0
    while r < len(regular) or s < len(supers):
        if s < len(supers) and (r == len(regular) or supers[s] > regular[r]):
            order.append((supers[s], True))
            s += 1
        else:
            order.append((regular[r], False))
            r += 1
    return order


def transition(order: list[tuple[int, bool]], window: int | None = None) -> int | None:
    """The first step where supermerges take over: a supermerge followed by a ``window`` of
    merges (default: 2 % of them, at least 20) that are mostly supermerges.  ``None`` when
    supermerges never outnumber regular merges (BoundlessBPE on a small vocabulary).

    >>> transition([(9, False), (8, False), (7, True), (6, False), (5, True), (4, True)], window=3)
    2
    >>> transition([(9, False), (7, True), (6, False), (5, False)], window=3) is None
    True
    """
    if window is None:
        window = max(20, len(order) // 50)
    supers = [int(sup) for _, sup in order]
    running = sum(supers[:window])  # supermerges in order[step:step + window]
    for step in range(len(order)):
        if supers[step] and 2 * running > min(window, len(order) - step):
            return step
        running += (supers[step + window] if step + window < len(order) else 0) - supers[step]
    return None
