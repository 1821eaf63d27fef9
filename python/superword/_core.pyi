# Stubs for the compiled Rust core (src/py/).  Keep in sync with src/py/mod.rs.
from typing import Callable, Iterable, final

__all__ = ["Tokenizer", "_panic_for_test", "char_class_table", "pretokenize", "script_names",
           "script_table", "train_files", "train_iter", "version"]

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

def train_files(paths: list[str], *, text_field: str, vocab_size: int, algorithm: str,
                supermerges: int | None, pattern: str, script_pattern: str | None,
                scripts: list[str] | None, greedy_split: bool, threads: int | None,
                progress: Callable[[str, int, int], object] | None) -> Tokenizer:
    """Train on .txt / .jsonl (optionally .gz) files read by the core."""

def train_iter(documents: Iterable[str], *, vocab_size: int, algorithm: str,
               supermerges: int | None, pattern: str, script_pattern: str | None,
               scripts: list[str] | None, greedy_split: bool, threads: int | None,
               progress: Callable[[str, int, int], object] | None) -> Tokenizer:
    """Train on an iterable of documents, read in batches."""

def _panic_for_test() -> None:
    """Panics inside the core (the panic becomes RuntimeError)."""

@final
class Tokenizer:
    @staticmethod
    def load(path: str, greedy_split: bool | None = None) -> Tokenizer: ...
    def save(self, path: str) -> None: ...
    def dumps(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def num_supermerges(self) -> int: ...
    @property
    def num_merges(self) -> int: ...
    @property
    def special_tokens(self) -> dict[str, int]: ...
    @property
    def training_stats(self) -> dict[str, float]: ...
    def token_bytes(self, id: int) -> bytes: ...
    def is_superword(self, id: int) -> bool: ...
    def vocab_items(self) -> list[tuple[int, bytes, bool]]: ...
    def register_special_tokens(self, tokens: list[str]) -> None: ...
    def encode_ordinary(self, text: str) -> list[int]: ...
    def encode(self, text: str, allowed: list[str]) -> list[int]: ...
    def encode_to_tokens(self, text: str) -> list[bytes]: ...
    def decode_bytes(self, ids: list[int]) -> bytes: ...
