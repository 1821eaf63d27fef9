"""The whole training pipeline, stage by stage (paper Figure 1, SPEC sections 1-5).

    pretokenize + count  ->  phase 1 (word model)  ->  candidates  ->  [greedy split]
                         ->  phase 2 (BoundlessBPE or SuperBPE)  ->  Model

>>> model = train(["the cat sat on the mat"] * 3, vocab_size=250)
>>> model.kind, len(model.vocab)
('boundless', 250)
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from .boundless import train_boundless
from .bpe import NO_DELETIONS_TAU, train_words
from .candidates import supermerge_candidates
from .count import Counts, count_documents
from .encode import Encoder, eligible_tokens
from .model import Model, Settings
from .ngram import MIN_COUNT_FLOOR, frequent_ngrams
from .ngram import greedy_split as split_candidates
from .pretokenize import DEFAULT_SCRIPTS, GPT4O, MERGE_PATTERN, SCRIPT_SPECIFIC_GPT4O, Pretokenizer
from .superbpe import train_superbpe

ALGORITHMS = {"bpe": "word", "boundless": "boundless", "superbpe": "superbpe"}
BASE_VOCAB = 243

Progress = Callable[[str, int, int], None]   # (stage, done, total); total 0 when unknown


def train(documents: Iterable[str], vocab_size: int, algorithm: str = "boundless",
          supermerges: int | None = None, *, pattern: str = GPT4O,
          script_pattern: str | None = SCRIPT_SPECIFIC_GPT4O,
          scripts: Iterable[str] | None = DEFAULT_SCRIPTS, greedy_split: bool = False,
          tau: float = NO_DELETIONS_TAU, blowup: bool = False,
          progress: Progress | None = None, stats: dict[str, float] | None = None) -> Model:
    """Train a model on an iterable of documents.  Arguments are checked by the caller
    (:func:`superword.train`); ``stats`` receives the seconds spent in each stage."""
    stats = {} if stats is None else stats
    report = progress or (lambda stage, done, total: None)
    kind = ALGORITHMS[algorithm]
    supermerges = supermerges or 0  # only SuperBPE uses it; the caller checked it is given
    settings = Settings(pattern, script_pattern,
                        sorted(set(scripts)) if script_pattern is not None and scripts is not None
                        else None, MERGE_PATTERN, float(tau), blowup)
    # tau is stored as a float, so the config JSON says 1.0 (not 1) for tau=1: one spelling
    # per value whatever number type the caller used (SPEC 8 leaves this open)
    pretokenizer = Pretokenizer(pattern, script_pattern,
                                settings.script_specific_scripts if script_pattern else None)

    # 1. pre-tokenize and count pretokens (and letter runs, for phase 2)
    clock = time.perf_counter()
    counts = count_documents(documents, pretokenizer, with_runs=kind != "word",
                             progress=lambda n: report("count", n, 0))
    stats["pretokenize_count"] = time.perf_counter() - clock
    report("count", counts.documents, counts.documents)
    return train_counted(counts, settings, vocab_size, algorithm, supermerges,
                         greedy_split=greedy_split, progress=progress, stats=stats)


def train_counted(counts: Counts, settings: Settings, vocab_size: int, algorithm: str = "boundless",
                  supermerges: int | None = None, *, greedy_split: bool = False,
                  progress: Progress | None = None, stats: dict[str, float] | None = None) -> Model:
    """Stages 2 to 4 on counts made earlier (a count file): the same model as :func:`train`
    on the text that was counted.  ``settings`` are the model's (its patterns must be the
    ones the counts were made with)."""
    stats = {} if stats is None else stats
    report = progress or (lambda stage, done, total: None)
    kind = ALGORITHMS[algorithm]
    supermerges = supermerges or 0
    tau, blowup = settings.tau, settings.blowup
    if not any(w and c for w, c in counts.words.items()):
        raise ValueError("the corpus is empty: no document contains any text")

    # 2. phase 1: BPE on the aggregated pretokens
    clock = time.perf_counter()
    phase1_size = vocab_size - supermerges if kind == "superbpe" else vocab_size
    total = phase1_size - BASE_VOCAB
    merges, deletions, vocab, token_counts = train_words(
        counts.words, phase1_size, tau, blowup,
        progress=lambda done, size: report("merges", size - BASE_VOCAB, total))
    word = Model("word", settings, vocab, [token_counts.get(t, 0) for t in vocab],
                 [False] * len(vocab), merges, deletions=deletions)
    stats["phase1"] = time.perf_counter() - clock
    if kind == "word":
        return word

    # 3. supermerge candidates: letter runs cut at pretokens that are not single tokens
    #    (reachable with the word model's own inference, deletions included: SPEC 3.1, 9)
    clock = time.perf_counter()
    candidates = supermerge_candidates(counts.runs, eligible_tokens(Encoder(word)))
    ngrams = None
    if greedy_split:
        min_count = max(merges[-1].count if merges else 0, MIN_COUNT_FLOOR)
        table = frequent_ngrams(candidates, min_count)
        candidates = split_candidates(candidates, table)
        ngrams = sorted(table)
    stats["candidates"] = time.perf_counter() - clock
    report("candidates", len(candidates), len(candidates))

    # 4. phase 2
    clock = time.perf_counter()
    if kind == "boundless":
        used, supers, vocab2, is_super, counts2 = train_boundless(
            merges, deletions, len(vocab), candidates,
            progress=lambda done, size: report("phase2", size - BASE_VOCAB, len(vocab) - BASE_VOCAB))
        kept = [d for d in deletions if d.index < used]   # the replayed prefix
        model = Model("boundless", settings, vocab2, [counts2.get(t, 0) for t in vocab2],
                      is_super, merges[:used - len(kept)], supers, ngrams=ngrams, deletions=kept)
    else:
        supers, vocab2, is_super, counts2 = train_superbpe(
            vocab, candidates, supermerges,
            progress=lambda done, size: report("phase2", done, supermerges))
        model = Model("superbpe", settings, vocab2, [counts2.get(t, 0) for t in vocab2],
                      is_super, merges, supers, ngrams=ngrams, deletions=deletions)
    stats["phase2"] = time.perf_counter() - clock
    return model
