"""Reading training documents: paths (``.txt``, ``.jsonl``, optionally ``.gz``) or strings.

* ``.txt``: one document per line, without its ``\\n`` or ``\\r\\n``;
* ``.jsonl``: one JSON object per line, the document is its ``text_field``; blank lines are
  skipped;
* ``.gz`` on top of either is decompressed on the fly;
* any other suffix is read as ``.txt``.

Every problem raises an exception that names the file and the line, before or while the
documents are produced; nothing is silently replaced or skipped.
"""
from __future__ import annotations

import gzip
import json
import os
import sys
import sysconfig
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

PathLike = str | os.PathLike

_FILE_SUFFIXES = (".txt", ".jsonl", ".txt.gz", ".jsonl.gz", ".gz")


def resolve_inputs(inputs: object) -> tuple[list[str] | None, Iterable[str] | None]:
    """Split ``inputs`` into (paths, None) or (None, documents).

    A single ``str`` or path object is a path.  A list or tuple is a list of paths when all
    its items are path objects, or all are strings ending in ``.txt``, ``.jsonl`` or ``.gz``
    without a line break; any other iterable is taken as the documents themselves.
    """
    if isinstance(inputs, (str, os.PathLike)):
        paths = [os.fspath(inputs)]
    elif isinstance(inputs, (list, tuple)) and inputs and _all_paths(inputs):
        paths = [os.fspath(p) for p in inputs]
    elif isinstance(inputs, (bytes, bytearray)):
        raise TypeError("inputs must be a path, a list of paths or an iterable of str, not bytes")
    else:
        try:
            iter(inputs)  # type: ignore[call-overload]
        except TypeError:
            raise TypeError(f"inputs must be a path, a list of paths or an iterable of str, "
                            f"not {type(inputs).__name__}") from None
        return None, inputs  # type: ignore[return-value]
    for p in paths:
        if not os.path.exists(p):
            raise FileNotFoundError(f"training input not found: {p}")
        if os.path.isdir(p):
            raise IsADirectoryError(f"training input is a folder, not a file: {p}")
    return paths, None


def _all_paths(items: Iterable[object]) -> bool:
    items = list(items)
    if all(isinstance(p, os.PathLike) for p in items):
        return True
    return all(isinstance(p, str) and "\n" not in p and p.lower().endswith(_FILE_SUFFIXES)
               for p in items)


def iter_documents(inputs: object, text_field: str = "text") -> Iterator[str]:
    """All documents of ``inputs`` in order (see :func:`resolve_inputs`)."""
    return documents_of(*resolve_inputs(inputs), text_field)


def documents_of(paths: list[str] | None, documents: Iterable[str] | None,
                 text_field: str = "text") -> Iterator[str]:
    """The documents of inputs already split by :func:`resolve_inputs`."""
    if paths is not None:
        for path in paths:
            yield from read_file(path, text_field)
        return
    assert documents is not None
    for i, doc in enumerate(documents):
        if not isinstance(doc, str):
            raise TypeError(f"document {i} of inputs is {type(doc).__name__}, not str")
        yield doc


def _raw_lines(path: str) -> Iterator[bytes]:
    opener = gzip.open if path.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            yield from f
    except (OSError, EOFError, zlib.error) as exc:
        if isinstance(exc, FileNotFoundError):
            raise FileNotFoundError(f"training input vanished while reading: {path}") from None
        if isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)):
            raise ValueError(f"{path}: corrupt or truncated gzip data ({exc})") from None
        raise OSError(f"{path}: cannot be read ({exc})") from None


def read_file(path: str, text_field: str = "text") -> Iterator[str]:
    is_jsonl = path.lower().removesuffix(".gz").endswith(".jsonl")
    for number, raw in enumerate(_raw_lines(path), start=1):
        if raw.endswith(b"\n"):
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}, line {number}: invalid UTF-8 (byte 0x{raw[exc.start]:02x} "
                             f"at byte offset {exc.start} of the line)") from None
        if not is_jsonl:
            yield line
            continue
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}, line {number}: not valid JSON ({exc.msg} at column "
                             f"{exc.colno})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}, line {number}: expected a JSON object with a "
                             f"{text_field!r} field, found {type(record).__name__}")
        if text_field not in record:
            raise ValueError(f"{path}, line {number}: the record has no {text_field!r} field "
                             f"(fields: {', '.join(map(repr, list(record)[:8]))})")
        text = record[text_field]
        if not isinstance(text, str):
            raise ValueError(f"{path}, line {number}: field {text_field!r} is "
                             f"{type(text).__name__}, not a string")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{path}, line {number}: the record holds a lone surrogate escape "
                             f"(\\ud800-\\udfff); it cannot be encoded as UTF-8") from None
        yield text


# ----------------------------------------------------------------------------------------
# the default corpus of the command line: this Python's own standard library

def stdlib_sources() -> list[Path]:
    """The ``.py`` files of the running interpreter's standard library (no site-packages),
    sorted, so every machine with the same Python version gets the same corpus."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in root.rglob("*.py")
             if not {"site-packages", "dist-packages", "__pycache__"} & set(p.parts)]
    return sorted(files)


def stdlib_documents(files: list[Path] | None = None) -> Iterator[str]:
    """One document per standard-library source file (``files``: :func:`stdlib_sources`).
    A handful of files in Python's own test suite are deliberately not UTF-8; those are
    skipped (they are not user input)."""
    for path in stdlib_sources() if files is None else files:
        try:
            yield path.read_bytes().decode("utf-8")
        except (UnicodeDecodeError, OSError):
            continue


def describe_stdlib(files: list[Path]) -> str:
    return f"the standard library of Python {sys.version.split()[0]} ({len(files)} .py files)"
