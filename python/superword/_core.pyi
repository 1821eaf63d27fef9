# Stubs for the compiled Rust core (src/py/); keep them in sync with it.
from collections.abc import Callable, Iterable
from typing import TypedDict, final

__all__ = ["MinbpeEncoder", "Tokenizer", "_panic_for_test", "minbpe_train", "char_class_table",
           "pretokenize", "script_names", "script_table", "train_docs", "train_files", "train_iter", "version"]

def version() -> str:
    """Version of the compiled core; equals superword.__version__."""

def script_names() -> list[str]:
    """Names of the scripts in the embedded Unicode 17.0 table; index 0 is Common."""

def script_table() -> bytes:
    """The script index of every code point (0x110000 bytes; surrogates: Common)."""

def char_class_table() -> bytes:
    """The GPT-4o class bits (classes.txt) of every code point (0x110000 bytes)."""

def pretokenize(text: str, pattern: str, script_pattern: str | None = None,
                scripts: list[str] | None = None) -> list[str]:
    """The pretokens of `text` with the given pre-tokenization settings."""

class _TrainOptions(TypedDict):
    """The options of `superword.train` after its checks."""
    vocab_size: int
    algorithm: str
    supermerges: int | None
    pattern: str
    script_pattern: str | None
    scripts: list[str] | None
    greedy_split: bool
    tau: float
    blowup: bool
    threads: int | None
    progress: Callable[[str, int, int], object] | None

def train_files(paths: list[str], text_field: str, options: _TrainOptions) -> Tokenizer:
    """Train on .txt / .jsonl (optionally .gz) files read by the core."""

def train_iter(documents: Iterable[str], options: _TrainOptions) -> Tokenizer:
    """Train on an iterable of documents, read in batches."""

def train_docs(documents: list[str] | tuple[str, ...], options: _TrainOptions) -> tuple[Tokenizer, int, int]:
    """train_iter on a list of str, with the documents and UTF-8 bytes it read."""

def minbpe_train(text: str, num_merges: int, pattern: str | None, batch_size: int,
                 on_merge: Callable[[int, int, int, int], object] | None = None,
                 ) -> list[tuple[int, int, int, int, int]]:
    """minbpe training (SPEC 6): (left, right, id, count, round) per merge."""

def _panic_for_test() -> None:
    """Panics inside the core (the panic becomes RuntimeError)."""

@final
class Tokenizer:
    """A superword model or a plain rank-based BPE model from a `.tiktoken` file."""
    @staticmethod
    def load(path: str, greedy_split: bool = False) -> Tokenizer: ...
    @staticmethod
    def from_tiktoken(path: str, pattern: str, special_tokens: list[tuple[str, int]]) -> Tokenizer: ...
    @staticmethod
    def loads(text: str, ngrams: str | None = None, greedy_split: bool = False,
              name: str = ...) -> Tokenizer: ...
    @staticmethod
    def loads_tiktoken(text: str, pattern: str, special_tokens: list[tuple[str, int]],
                       name: str = ...) -> Tokenizer: ...
    def dumps_tiktoken(self) -> str: ...
    @property
    def greedy_split(self) -> bool: ...
    def encode_ordinary(self, text: str) -> list[int]: ...
    def encode(self, text: str, allowed: list[str]) -> list[int]: ...
    def encode_batch(self, texts: list[str], allowed: list[str],
                     threads: int | None = None) -> list[list[int]]: ...
    def encode_batch_flat(self, texts: list[str], allowed: list[str],
                          threads: int | None = None) -> tuple[bytes, bytes]: ...
    def encode_to_tokens(self, text: str) -> list[bytes]: ...
    def decode_bytes(self, ids: list[int]) -> bytes: ...
    def token_bytes(self, id: int) -> bytes: ...
    def dumps(self) -> str: ...
    def dumps_ngrams(self) -> str | None: ...
    def save_tiktoken(self, path: str) -> None: ...
    @property
    def kind(self) -> str: ...
    @property
    def pattern(self) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def num_supermerges(self) -> int: ...
    @property
    def special_tokens(self) -> dict[str, int]: ...
    @property
    def training_stats(self) -> dict[str, float]: ...
    def is_superword(self, id: int) -> bool: ...
    def id_of(self, token: bytes) -> int | None: ...
    def vocab_items(self) -> list[tuple[int, bytes, bool]]: ...
    def register_special_tokens(self, tokens: list[str]) -> None: ...

@final
class MinbpeEncoder:
    """minbpe's encoder: merges by smallest id within each chunk."""
    def __new__(cls, merges: list[tuple[tuple[int, int], int]], pattern: str | None = None) -> MinbpeEncoder: ...
    def encode_ordinary(self, text: str) -> list[int]: ...

# -- count files (src/py/counts.rs) ---------------------------------------------------------

__all__ += ["Counts", "count_files", "count_iter", "merge_counts", "train_counts"]

@final
class Counts:
    """Counted pretokens and letter runs with their pre-tokenization settings (immutable)."""
    @staticmethod
    def load(path: str) -> Counts: ...
    @staticmethod
    def from_bytes(data: bytes, name: str) -> Counts: ...
    def to_bytes(self) -> bytes: ...
    @property
    def pattern(self) -> str: ...
    @property
    def script_pattern(self) -> str | None: ...
    @property
    def scripts(self) -> list[str] | None: ...
    @property
    def merge_pattern(self) -> str: ...
    @property
    def with_runs(self) -> bool: ...
    @property
    def documents(self) -> int: ...
    @property
    def pretokens(self) -> int: ...
    @property
    def num_words(self) -> int: ...
    @property
    def num_runs(self) -> int: ...
    def most_common(self, n: int | None = None) -> list[tuple[str, int]]: ...
    def runs(self) -> list[tuple[list[str], int]]: ...
    def prune(self, min_count: int) -> Counts: ...

def merge_counts(tables: list[Counts], names: list[str]) -> Counts:
    """The sum of count tables (`names` name them in errors)."""

class _CountOptions(TypedDict):
    """The options of `superword.count` after its checks."""
    pattern: str
    script_pattern: str | None
    scripts: list[str] | None
    runs: bool
    threads: int | None
    progress: Callable[[str, int, int], object] | None

def count_files(paths: list[str], text_field: str, options: _CountOptions) -> Counts:
    """Count .txt / .jsonl (optionally .gz) files read by the core."""

def count_iter(documents: Iterable[str], options: _CountOptions) -> Counts:
    """Count an iterable of documents, read in batches."""

def train_counts(counts: Counts, *, vocab_size: int, algorithm: str, supermerges: int | None,
                 greedy_split: bool, tau: float, blowup: bool, threads: int | None,
                 progress: Callable[[str, int, int], object] | None) -> Tokenizer:
    """Train on counts (stages 2 to 4) with the counts' pre-tokenization settings."""

# the fork handlers the module registers with os.register_at_fork when it loads
__all__ += ["_after_fork_in_child", "_after_fork_in_parent", "_before_fork"]

def _before_fork() -> None: ...
def _after_fork_in_parent() -> None: ...
def _after_fork_in_child() -> None: ...
