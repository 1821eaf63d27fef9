"""superword: fast, exact BPE, BoundlessBPE and SuperBPE tokenizers.

Superword tokenizers can make tokens that span several words (" of the"), which compress
text better than plain BPE.  Train one with :func:`train`, load one with
:meth:`Tokenizer.load`, compare models with :func:`evaluate`; count a large corpus once with
:func:`count` and train from the counts (``train(counts=...)``).  The pure-Python reference implementation is
:mod:`superword.reference`; the compiled Rust core is ``superword._core``.
"""
from ._count_table import Counts, load_counts, merge_counts
from ._counts import count
from ._tokenizer import CL100K_PATTERN, CL100K_SPECIAL, Tokenizer
from ._train import TrainingShortfall, train
from ._version import __version__
from .stats import evaluate

__all__ = ["CL100K_PATTERN", "CL100K_SPECIAL", "Counts", "Tokenizer", "TrainingShortfall", "count", "evaluate",
           "load_counts", "merge_counts", "train", "__version__"]
