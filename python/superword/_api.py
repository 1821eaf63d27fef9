"""The names the front had in one module before it was split, importable from here as before.

The front now imports in one direction, each module from those below it:

    _backend      the backends' interface (``Core``), choosing one, threads, pre-tokenization
    _specials     the special-token policy and the checks of special tokens and texts
    _tokenizer    :class:`Tokenizer`
    _count_table  :class:`Counts`: count files, merging, counting in this process
    _ray          counting on a Ray cluster
    _counts       :func:`count`, here or on Ray
    _train        :func:`train`, on text or on counts

New code imports from those modules (or from :mod:`superword`); this one only keeps older
imports (``from superword._api import Tokenizer``) working.
"""
from __future__ import annotations

from ._backend import (
                       BACKENDS,
                       DEFAULT_BACKEND,
                       THREADS_VARIABLE,
                       Progress,
                       _check_int,
                       _check_pretokenization,
                       _core_module,
                       _requested_threads,
                       _resolve_backend,
                       available_cores,
                       pretokenization,
                       resolve_threads,
)
from ._specials import (
                       _FIXED,
                       _MOST_POLICIES,
                       AllowedSpecial,
                       DisallowedSpecial,
                       _check_special_overlaps,
                       _check_special_text,
                       _check_text,
                       _disallowed,
                       _lone_surrogate,
                       _Refused,
)
from ._tokenizer import (
                       CL100K_PATTERN,
                       CL100K_SPECIAL,
                       IdArrays,
                       Tokenizer,
                       _as_arrays,
                       _from_byte_level,
                       _to_byte_level,
)
from ._train import (
                       MAX_VOCAB_SIZE,
                       MIN_VOCAB_SIZE,
                       TrainingShortfall,
                       _check_counts_settings,
                       _train_via_counts,
                       _warn_if_short,
                       train,
                       train_counts,
)

__all__ = ["BACKENDS", "CL100K_PATTERN", "CL100K_SPECIAL", "DEFAULT_BACKEND", "MAX_VOCAB_SIZE", "MIN_VOCAB_SIZE",
           "THREADS_VARIABLE", "_FIXED", "_MOST_POLICIES", "AllowedSpecial", "DisallowedSpecial", "IdArrays",
           "Progress", "Tokenizer", "TrainingShortfall", "_Refused", "_as_arrays", "_check_counts_settings",
           "_check_int", "_check_pretokenization", "_check_special_overlaps", "_check_special_text", "_check_text",
           "_core_module", "_disallowed", "_from_byte_level", "_lone_surrogate", "_requested_threads",
           "_resolve_backend", "_to_byte_level", "_train_via_counts", "_warn_if_short", "available_cores",
           "pretokenization", "resolve_threads", "train", "train_counts"]
