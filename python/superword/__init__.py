"""superword: fast, exact BPE, BoundlessBPE and SuperBPE tokenizers.

Superword tokenizers can make tokens that span several words (" of the"), which compress
text better than plain BPE.  Train one with :func:`train`, load one with
:meth:`Tokenizer.load` (any other tokenizer, such as ``"cl100k_base"`` or a ``tokenizer.json``,
with :func:`open_tokenizer`), compare models with :func:`evaluate`; count a large corpus once with
:func:`count` and train from the counts (``train(counts=...)``).  The pure-Python reference implementation is
:mod:`superword.reference`; the compiled Rust core is ``superword._core``.
"""
from ._count_table import Counts, load_counts, merge_counts
from ._counts import count
from ._open import open_tokenizer
from ._tokenizer import CL100K_PATTERN, CL100K_SPECIAL, Tokenizer
from ._train import TrainingShortfall, train
from ._version import __version__
from .stats import evaluate

__all__ = ["CL100K_PATTERN", "CL100K_SPECIAL", "Counts", "Tokenizer", "TrainingShortfall", "count", "evaluate",
           "load_counts", "merge_counts", "open_tokenizer", "train", "__version__"]
