"""Superwords on top of a tokenizer people already use: ``train(..., base=BASE)``.

The front of SPEC section 10: the arguments, the base (resolved by :func:`open_tokenizer`
and checked), counting with the base's pattern, and the "superword extension v1" model file
for both backends.  The work is :mod:`superword.reference.extend` (pure Python) or the
core's ``ExtensionTokenizer`` (``src/extend.rs``); both give byte-identical models and ids.

>>> import superword                                     # doctest: +SKIP
>>> tok = superword.train("corpus.txt", algorithm="superbpe", base="cl100k_base",
...                       supermerges=1000)              # doctest: +SKIP
>>> tok.encode("the cat sat on the mat")[:2]             # doctest: +SKIP
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

from . import _count_table, _counts, _provenance, _reference_core
from ._backend import Progress, _check_int, core_of
from ._extend_core import KIND, ReferenceExtensionCore, _rust
from ._open import _from_ranks_text, open_tokenizer, takes_pattern
from ._tokenizer import Tokenizer
from .reference import extend as _ref
from .reference import model as _ref_model
from .reference.pretokenize import MERGE_PATTERN, compile_pattern

#: the share of a base's multi-byte tokens that its pattern must keep whole (see `check_pattern`)
PATTERN_FIT = 0.98


def base_of(tok: Tokenizer) -> Tokenizer:
    """The base tokenizer of an extension model, as the ranks model it was trained on."""
    impl: Any = tok._impl
    return _from_ranks_text(impl.base_ranks(), impl.pattern, impl.base_special_tokens(),
                            "the base of this extension model", tok.backend)


def with_bases(models: list[Tokenizer], names: list[str]) -> tuple[list[Tokenizer], list[str]]:
    """``superword stats``: each extension model preceded by its base, so that the table
    shows the base and its extension side by side."""
    out, out_names = [], []
    for tok, name in zip(models, names):
        if tok.kind == KIND:
            out.append(base_of(tok))
            out_names.append(f"{name} (base)")
        out.append(tok)
        out_names.append(name)
    return out, out_names


# -- the base --------------------------------------------------------------------------------------

def resolve_base(base: Any, pattern: str | None, backend: str) -> Tokenizer:
    """The base tokenizer, checked (SPEC 10.1): a byte-level rank-based BPE whose pattern fits,
    or one of our word models without special tokens (SPEC 10.6)."""
    tok = open_tokenizer(base, pattern=pattern if takes_pattern(base) else None, backend=backend)
    name = base if isinstance(base, str) else type(base).__name__
    if tok.kind == KIND:
        raise ValueError(f"base {name}: this is an extension model already; extend its own base, with "
                         f"more supermerges")
    if tok.kind in ("boundless", "superbpe"):
        raise ValueError(f"base {name}: a {tok.kind} model has supermerges already; a base is a plain "
                         f"byte-level BPE (tiktoken ranks, a tokenizer.json, or a .tiktoken file)")
    if tok.kind == "word":  # one of ours: SuperBPE's phase 2 over it (SPEC 10.6)
        if tok.special_tokens:
            raise ValueError(f"base {name}: a word model with special tokens cannot be a base: in the model "
                             f"file special tokens take the ids after every token, so the superwords would "
                             f"move them; extend the model without them, then register them on the result")
        return tok
    if tok.kind != "tiktoken":
        raise ValueError(f"base {name}: a {tok.kind!r} tokenizer cannot be a base")
    missing = [b for b in (*range(0xC0), *range(0xC2, 0xF5)) if tok.id_of(bytes([b])) is None]
    if missing:
        raise ValueError(f"base {name}: not a byte-level BPE: {len(missing)} of the bytes that UTF-8 text "
                         f"can hold have no token (e.g. byte 0x{missing[0]:02X}), so some texts cannot "
                         f"be encoded")
    check_pattern(tok, name)
    return tok


def check_pattern(tok: Tokenizer, name: str) -> None:
    """Refuse a pattern that does not match the base: a BPE learns each token inside one
    pretoken, so the text of nearly every token is one pretoken of the base's own pattern.
    (cl100k_base keeps all 99,355 of its multi-byte UTF-8 tokens whole with its own pattern,
    94.4 % with GPT-4o's and 78 % with GPT-2's.)"""
    matcher = compile_pattern(tok.pattern, "the base's pattern")
    total = split = 0
    example = None
    for _, raw, _ in tok:
        if len(raw) < 2:
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        total += 1
        if len(matcher.findall(text)) != 1:
            split += 1
            example = example or text
    if total and (total - split) / total < PATTERN_FIT:
        raise ValueError(f"base {name}: its pattern does not match its tokens: {split:,} of its "
                         f"{total:,} multi-byte tokens (e.g. {example!r}) are cut into several "
                         f"pretokens by it (at most {1 - PATTERN_FIT:.0%} may be); give the pattern "
                         f"the base was trained with (pattern= for a .tiktoken file)")


# -- training ---------------------------------------------------------------------------------------

def train(inputs: Any, *, base: Any, supermerges: Any, counts: Any, pattern: str | None,
          script_aware: bool, script_pattern: str | None, scripts: Any, text_field: str,
          threads: int, backend: str, progress: Progress | None, min_count: int | None,
          executor: str | None, ray_address: str | None, greedy_split: bool, tau: float,
          blowup: bool) -> Tokenizer:
    """``superword.train(..., algorithm="superbpe", base=BASE, supermerges=N)`` after the
    general checks; see :func:`superword.train`."""
    start = time.perf_counter()
    if supermerges is None:
        raise ValueError("base= needs supermerges=N: how many superword tokens to add to the base")
    supermerges = _check_int("supermerges", supermerges)
    if supermerges < 1:
        raise ValueError(f"supermerges must be at least 1, got {supermerges}")
    if greedy_split or tau != 1.1 or blowup:
        raise ValueError("greedy_split, tau and blowup shape a word model; with base= the word model "
                         "is the base, as it is")
    del script_aware  # either way: the base's pattern, in simple mode
    if script_pattern is not None or scripts is not None:
        raise ValueError("with base= the pre-tokenization is the base's own pattern (simple mode): "
                         "leave script_pattern and scripts out")
    tok = resolve_base(base, pattern, backend)
    if pattern is not None and not takes_pattern(base) and pattern != tok.pattern:
        raise ValueError("pattern= is for a .tiktoken base only (other bases carry their pattern)")
    first = tok.vocab_size
    if first + supermerges - 1 > _ref.MAX_ID:
        raise ValueError(f"supermerges={supermerges:,} would give ids up to {first + supermerges - 1:,}, "
                         f"past 2**31 - 1 = {_ref.MAX_ID:,} (the base's ids end at {first - 1:,})")
    word = _ref_model.loads(tok.model_text(), "the base") if tok.kind == "word" else None
    wanted = pretokenization_of(tok, word)
    if counts is not None:
        counts, name = _count_table.counts_argument(inputs, counts, executor, ray_address, backend)
        check_counts(counts, wanted, name)
        record = [{"name": name, "documents": counts.documents, "bytes": None}]
    else:
        if inputs is None:
            raise TypeError("train needs inputs (or counts=)")
        counts = _counts.count(inputs, **wanted, text_field=text_field, runs=True, threads=threads,
                               backend=backend, progress=progress, executor=executor, ray_address=ray_address)
        record = [{"name": "<counted>", "documents": counts.documents, "bytes": None}]
    if min_count is not None:
        counts = counts.prune(min_count)
    count_seconds = time.perf_counter() - start
    counts = counts.to_backend(backend)
    if word is not None:
        out, stats = over_word_model(counts, tok, word, supermerges, threads, backend, progress)
        settings = dict(base=name_of(base), supermerges=supermerges, text_field=text_field, backend=backend,
                        min_count=min_count, executor=executor, **wanted)
        provenance = _provenance.make("superbpe", settings, record,
                                      {"pretokenize_count": count_seconds, **stats},
                                      time.perf_counter() - start)
        out.provenance = json.loads(json.dumps(provenance))
        return out
    impl_base: Any = tok._impl
    ranks_text = impl_base.dumps_tiktoken()
    special = sorted(tok.special_tokens.items(), key=lambda kv: kv[1])
    maker: Any = ReferenceExtensionCore if backend == "reference" else _rust().ExtensionTokenizer
    impl = maker.train(counts._impl, ranks_text, tok.pattern, special, supermerges, threads, progress)
    out = Tokenizer(impl, backend)
    stats = dict(out.training_stats)
    stats.setdefault("pretokenize_count", count_seconds)
    settings = dict(base=name_of(base), supermerges=supermerges, text_field=text_field, pattern=tok.pattern,
                    backend=backend, min_count=min_count, executor=executor)
    provenance = _provenance.make("superbpe", settings, record, stats, time.perf_counter() - start)
    # (as JSON data, sharing no object with the tokenizer: a pickle's memo would otherwise tie
    # them, and the same tokenizer would pickle to other bytes after a round trip)
    out.provenance = json.loads(json.dumps(provenance))
    return out


def shortfall(tok: Tokenizer, supermerges: int) -> str | None:
    """What to warn of (``TrainingShortfall``) when training made fewer superwords than asked."""
    made = sum(1 for _, _, sup in tok if sup)
    if made >= supermerges:
        return None
    return (f"extension: made {made:,} of the {supermerges:,} superwords requested: no pair of base "
            f"tokens is left to merge across pretokens in this corpus")


def name_of(base: Any) -> str:
    """How the provenance names the base: its spec, or the name of its file (no folder)."""
    if isinstance(base, (str, os.PathLike)):
        spec = os.fspath(base)
        return os.path.basename(spec) if isinstance(spec, str) and os.path.exists(spec) else str(spec)
    return type(base).__name__


def pretokenization_of(tok: Tokenizer, word: Any) -> dict[str, Any]:
    """The pre-tokenization an extension of ``tok`` counts with: a ranks base's pattern in
    simple mode (SPEC 10.2), or a word model's own settings (SPEC 10.6)."""
    if word is None:
        return dict(pattern=tok.pattern, script_aware=False, scripts=None, script_pattern=None)
    s = word.settings
    return dict(pattern=s.main_regex, script_aware=s.script_specific_regex is not None,
                scripts=s.script_specific_scripts, script_pattern=s.script_specific_regex)


def check_counts(counts: _count_table.Counts, wanted: dict[str, Any], name: str) -> None:
    """Counts for an extension must be made with the base's pre-tokenization, with runs."""
    same = (counts.pattern == wanted["pattern"] and counts.script_aware == wanted["script_aware"]
            and (not wanted["script_aware"] or (counts.script_pattern == wanted["script_pattern"]
                                                 and list(counts.scripts or []) == list(wanted["scripts"] or []))))
    if not same:
        how = ("--pattern BASE_PATTERN --no-script-aware, or count(..., pattern=base.pattern, script_aware=False)"
               if not wanted["script_aware"] else
               "count(..., pattern=..., script_pattern=..., scripts=...) with the word model's settings")
        raise ValueError(f"{name} was counted with the pattern {counts.pattern!r}"
                         f"{' (script-aware)' if counts.script_aware else ''}; an extension of this base "
                         f"needs counts made with its own "
                         f"{'pre-tokenization, script-aware' if wanted['script_aware'] else 'pattern in simple mode'}"
                         f": superword count {how}")
    if not counts.with_runs:
        raise ValueError(f"{name} was counted without letter runs (runs=False); the supermerges need them")
    if counts._impl.merge_pattern != MERGE_PATTERN:
        raise ValueError(f"{name} cuts letter runs with the merge pattern {counts._impl.merge_pattern!r}; "
                         f"this superword trains with {MERGE_PATTERN!r}")


def over_word_model(counts: _count_table.Counts, tok: Tokenizer, word: Any, supermerges: int, threads: int,
                    backend: str, progress: Progress | None) -> tuple[Tokenizer, dict[str, float]]:
    """SPEC 10.6: a SuperBPE model whose phase 1 is our word model ``tok`` (``word``: its
    parsed model), from counts made with its settings, and the seconds of phase 2."""
    if backend == "reference":
        clock = time.perf_counter()
        impl: Any = counts._impl  # (the reference backend's: its table is `counts`)
        model = _ref.extend_word_model(impl.counts, word, supermerges)
        if progress is not None:
            progress("phase2", sum(model.is_super), supermerges)
        stats = {"phase2": time.perf_counter() - clock}
        return Tokenizer(_reference_core.ReferenceCore(model, training_stats=stats), backend), stats
    text, seconds = _rust().ExtensionTokenizer.extend_word_model(counts._impl, tok.model_text(), supermerges,
                                                                 threads, progress)
    return Tokenizer(core_of(backend).Tokenizer.loads(text, None, False, "the extended model"), backend), \
        {"phase2": seconds}
