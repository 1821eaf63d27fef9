"""Reading training documents: files, folders, globs, standard input, or documents in memory.

File formats, by suffix (case-insensitive):

* ``.txt``: one document per line, without its ``\\n`` or ``\\r\\n``;
* ``.jsonl``: one JSON object per line, the document is its ``text_field``; blank lines are
  skipped;
* ``.gz`` or ``.zst`` on top of either is decompressed on the fly;
* ``.parquet``: the column ``text_field`` (needs ``pyarrow``: ``pip install superword[parquet]``);
* any other suffix is read as ``.txt``; ``-`` is standard input, read as ``.txt``.

A folder stands for the files under it (recursively, sorted) whose suffix is one of the
above data suffixes; a name with ``*``, ``?`` or ``[`` that is not an existing file is a glob
(``**`` included).  Files the Rust core reads (every regular file except ``.zst`` and
``.parquet``) go to it as paths; the others are read here and passed on as documents.

A name with a scheme (``s3://``, ``gs://``, ``hf://``, ``file://``, ``memory://``, any
protocol ``fsspec`` knows) is read here through ``fsspec`` (``pip install
'superword[cloud]'``, plus the protocol's own package, such as ``s3fs`` or ``gcsfs``), with the
same formats, folders and globs: such a file gives the same documents, and so the same
counts, as the same bytes read from a local path.

Only regular files are read: a named pipe, a device or a socket given as a path is refused
(opening a named pipe waits for a writer, possibly forever); a stream goes in as ``-``.

Every problem raises an exception that names the file and the line, before or while the
documents are produced; nothing is silently replaced or skipped.
"""
from __future__ import annotations

import contextlib
import glob
import gzip
import json
import os
import re
import stat
import sys
import sysconfig
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PathLike = str | os.PathLike

#: suffixes that make a file of a folder count as data (compression suffixes on top allowed)
DATA_SUFFIXES = (".txt", ".jsonl", ".parquet")
COMPRESSION_SUFFIXES = (".gz", ".zst")
STDIN = "-"
#: ``scheme://``: a name read through fsspec
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


# ----------------------------------------------------------------------------------------
# names with a scheme, read through fsspec

def is_url(name: object) -> bool:
    """Whether ``name`` is a ``scheme://...`` name, read through fsspec.

    >>> is_url("s3://bucket/corpus.jsonl"), is_url("corpus.jsonl")
    (True, False)
    """
    return isinstance(name, str) and _URL.match(name) is not None


def url_fs(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` and the path inside it."""
    try:
        import fsspec
    except ImportError:
        raise ImportError(f"{url}: reading paths with a scheme needs fsspec: "
                          f"pip install 'superword[cloud]'") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as exc:  # the protocol's own package (s3fs, gcsfs, ...) is missing
        raise ImportError(f"{url}: {exc}") from None
    except ValueError as exc:  # a protocol fsspec does not know
        raise ValueError(f"{url}: {exc}") from None


def _not_regular(path: str) -> ValueError:
    # worded as the Rust core's reader words it (src/input.rs)
    return ValueError(f"{path} is not a regular file (a named pipe, device or socket): a training "
                      f"input must be a file that can be read to its end; give a stream as standard "
                      f"input (-) instead")


def _open_local(path: str) -> Any:
    """``open(path, "rb")`` of a regular file; anything else is refused without waiting (a
    named pipe is opened non-blocking, seen to be a pipe, and closed)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_regular(path)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_binary(path: str) -> Any:
    """A binary file object of a local path or a ``scheme://`` name (seekable)."""
    if is_url(path):
        fs, inner = url_fs(path)
        return fs.open(inner, "rb")
    return _open_local(path)


def file_size(path: str) -> int:
    """The size in bytes of a local path or a ``scheme://`` name."""
    if is_url(path):
        fs, inner = url_fs(path)
        return int(fs.size(inner))
    return os.path.getsize(path)


def _expand_url(url: str, what: str) -> list[str]:
    """The files a ``scheme://`` name stands for (as :func:`expand_paths`)."""
    fs, inner = url_fs(url)
    if fs.isdir(inner):
        return _url_folder_files(fs, inner, url, what)
    if fs.exists(inner):
        _check_url_file(fs, inner, url)
        return [url]
    if glob.has_magic(inner):
        matches = [m for m in sorted(fs.glob(inner)) if _shown_by_glob(m, inner)]
        if not matches:
            raise FileNotFoundError(f"{what}: the pattern {url!r} matches no file")
        out: list[str] = []
        for m in matches:
            if fs.isdir(m):
                out.extend(_url_folder_files(fs, m, fs.unstrip_protocol(m), what))
            else:
                _check_url_file(fs, m, fs.unstrip_protocol(m))
                out.append(fs.unstrip_protocol(m))
        return out
    raise FileNotFoundError(f"{what} not found: {url}")


def _shown_by_glob(match: str, pattern: str) -> bool:
    """Whether Python's ``glob`` would give ``match`` for ``pattern``: a hidden name (``.x``)
    only where the pattern's own part at that place starts with a dot, never under ``**``
    (fsspec's glob gives hidden names too)."""
    prefix = pattern.split("/")
    while prefix and glob.has_magic(prefix[-1]):
        prefix.pop()
    wanted = pattern.split("/")[len(prefix):]
    for i, part in enumerate(match.split("/")[len(prefix):]):
        if part.startswith(".") and not (i < len(wanted) and wanted[i].startswith(".")
                                         and "**" not in wanted[:i + 1]):
            return False
    return True


def _check_url_file(fs: Any, inner: str, url: str) -> None:
    if fs.info(inner).get("type", "file") not in ("file", "link"):  # fsspec's local "other"
        raise _not_regular(url)


def _url_folder_files(fs: Any, folder: str, url: str, what: str) -> list[str]:
    root = folder.rstrip("/")
    files = []
    for inner, info in sorted(fs.find(folder, detail=True).items()):
        relative = inner[len(root):].lstrip("/").split("/") if inner.startswith(root) else [inner]
        if (info.get("type", "file") == "file" and is_data_file(relative[-1])
                and not any(part.startswith(".") for part in relative)):
            files.append(fs.unstrip_protocol(inner))
    if not files:
        raise FileNotFoundError(
            f"{what}: the folder {url} holds no data files (.txt, .jsonl or .parquet, "
            f"optionally .gz or .zst; hidden files and folders are skipped)")
    return files


# ----------------------------------------------------------------------------------------
# which inputs are paths, and which paths they stand for

def expand_paths(names: Iterable[PathLike], what: str = "training input") -> list[str]:
    """The files that ``names`` stand for: files as given, folders as their data files, globs
    as their matches, ``-`` as standard input.  Every name must stand for at least one file.

    >>> expand_paths(["-"])
    ['-']
    """
    paths = [os.fspath(name) for name in names]
    # a cheap look at every name first, so that a missing name is reported before a folder
    # given earlier is walked (which may take long: a list of paths may start with "/")
    for path in paths:
        if not isinstance(path, str):
            raise TypeError(f"{what} {path!r} is not a file name (bytes paths are not supported)")
        if (path != STDIN and not is_url(path) and not os.path.exists(path)
                and not glob.has_magic(path)):
            raise FileNotFoundError(f"{what} not found: {path}")
    out: list[str] = []
    for path in paths:
        if path == STDIN:
            out.append(path)
        elif is_url(path):
            out.extend(_expand_url(path, what))
        elif os.path.isdir(path):
            out.extend(_folder_files(path, what))
        elif os.path.exists(path):
            out.append(_regular(path))
        elif glob.has_magic(path):
            matches = sorted(glob.glob(path, recursive=True))
            if not matches:
                raise FileNotFoundError(f"{what}: the pattern {path!r} matches no file")
            for m in matches:
                out.extend(_folder_files(m, what) if os.path.isdir(m) else [_regular(m)])
        else:
            raise FileNotFoundError(f"{what} not found: {path}")
    return out


def _regular(path: str) -> str:
    """``path``, when it is a regular file (links followed); else the refusal."""
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return path  # the reader names the problem
    if not regular:
        raise _not_regular(path)
    return path


def is_data_file(name: str) -> bool:
    lower = name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        lower = lower.removesuffix(suffix)
    return lower.endswith(DATA_SUFFIXES)


def _folder_files(folder: str, what: str) -> list[str]:
    files = sorted(str(p) for p in Path(folder).rglob("*")
                   if p.is_file() and is_data_file(p.name)
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    if not files:
        raise FileNotFoundError(
            f"{what}: the folder {folder} holds no data files (.txt, .jsonl or .parquet, "
            f"optionally .gz or .zst; hidden files and folders are skipped)")
    return files


def read_in_rust(path: str) -> bool:
    """Whether the Rust core reads this file itself (regular local files but .zst and
    .parquet)."""
    if path == STDIN or is_url(path) or path.lower().endswith((".zst", ".parquet")):
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # let the core name the problem


def _looks_like_a_path(item: object) -> bool:
    if isinstance(item, os.PathLike):
        return True
    if not isinstance(item, str) or "\n" in item or not item or len(item) > 4096:
        return False
    if is_data_file(item) or item.lower().endswith(COMPRESSION_SUFFIXES):
        return True
    if is_url(item):  # a web address may well be a document, a storage URL is not
        return not item.lower().startswith(("http://", "https://"))
    try:
        return os.path.exists(item)
    except (OSError, ValueError):
        return False


def resolve_inputs(inputs: object, text_field: str = "text", tally: Tally | None = None
                   ) -> tuple[list[str] | None, Iterable[Any] | None]:
    """Split ``inputs`` into (paths for the Rust core, None) or (None, documents).

    * a ``str`` or path object is a file, a folder, a glob or ``-`` (standard input);
    * a list or tuple is a list of such names when its **first** item is a path object, a
      string naming an existing file or folder, a one-line string ending in a data suffix
      (``.txt``, ``.jsonl``, ``.parquet``, ``.gz``, ``.zst``) or a one-line ``scheme://`` name
      (but ``http://`` and ``https://``, which need a data suffix); then every item must be one
      (a first item ``"-"`` is a document: only a single ``"-"`` means standard input);
    * anything else iterable holds the documents: ``str``, or dict-like rows (a Hugging Face
      ``datasets.Dataset``) with the text in ``text_field``.

    With a ``tally``, the documents come out as ``str``, counted per input as they pass.
    """
    if isinstance(inputs, (bytes, bytearray)):
        raise TypeError("inputs must be a path, a list of paths or an iterable of str, not bytes")
    if isinstance(inputs, (str, os.PathLike)):
        names: list[Any] = [inputs]
    elif isinstance(inputs, (list, tuple)) and inputs and _looks_like_a_path(inputs[0]):
        names = list(inputs)
        for i, item in enumerate(names):
            if not isinstance(item, (str, os.PathLike)):
                raise TypeError(f"inputs: item 0 is a file name, so every item must be one; "
                                f"item {i} is {type(item).__name__}")
    else:
        try:
            iter(inputs)  # type: ignore[call-overload]
        except TypeError:
            raise TypeError(f"inputs must be a path, a list of paths or an iterable of str, "
                            f"not {type(inputs).__name__}") from None
        if tally is None:
            return None, inputs  # type: ignore[return-value]
        return None, tally.count("<documents>", documents_of(None, inputs, text_field))  # type: ignore[arg-type]
    paths = expand_paths(names)
    if all(read_in_rust(p) for p in paths):
        return paths, None
    return None, documents_of(paths, None, text_field, tally)


def is_document_list(inputs: object) -> bool:
    """Is ``inputs`` a list or tuple of ``str`` documents, not of file names (the rule of
    :func:`resolve_inputs`)?"""
    return (isinstance(inputs, (list, tuple)) and type(inputs) in (list, tuple)
            and set(map(type, inputs)) == {str} and not _looks_like_a_path(inputs[0]))


def iter_documents(inputs: object, text_field: str = "text") -> Iterator[str]:
    """All documents of ``inputs`` in order (see :func:`resolve_inputs`)."""
    return documents_of(*resolve_inputs(inputs, text_field), text_field)


def documents_of(paths: list[str] | None, documents: Iterable[Any] | None,
                 text_field: str = "text", tally: Tally | None = None) -> Iterator[str]:
    """The documents of inputs already split by :func:`resolve_inputs`."""
    if paths is not None:
        for path in paths:
            docs = read_file(path, text_field)
            yield from docs if tally is None else tally.count(path, docs)
        return
    assert documents is not None
    for i, doc in enumerate(documents):
        if isinstance(doc, str):
            yield doc
        elif isinstance(doc, Mapping):
            if text_field not in doc:
                raise ValueError(f"row {i} of inputs has no {text_field!r} field "
                                 f"(fields: {', '.join(map(repr, list(doc)[:8]))})")
            text = doc[text_field]
            if not isinstance(text, str):
                raise TypeError(f"row {i} of inputs: field {text_field!r} is "
                                f"{type(text).__name__}, not str")
            yield text
        else:
            raise TypeError(f"document {i} of inputs is {type(doc).__name__}, not str")


# ----------------------------------------------------------------------------------------
# reading one file

def _zstd_lines(f: Any, path: str) -> Iterator[bytes]:
    """The lines of a zstd stream of one or more frames; a cut-off last frame is an error
    (zstandard's stream reader would end quietly)."""
    try:
        import zstandard
    except ImportError:
        raise ImportError(f"{path}: reading .zst files needs the zstandard package: "
                          f"pip install 'superword[zst]'") from None
    decompressor = zstandard.ZstdDecompressor()
    frame, pending, in_frame = decompressor.decompressobj(), b"", False
    while chunk := f.read(1 << 20):
        while chunk:
            in_frame = True
            pending += frame.decompress(chunk)
            chunk = b""
            if frame.eof:
                chunk, in_frame = frame.unused_data, False
                frame = decompressor.decompressobj()
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line + b"\n"
    if in_frame:
        raise ValueError(f"{path}: corrupt or truncated zstd data (the last frame is cut off)")
    if pending:
        yield pending


def _raw_lines(path: str) -> Iterator[bytes]:
    if path == STDIN:
        yield from sys.stdin.buffer
        return
    lower = path.lower()
    try:
        with open_binary(path) as raw:
            if lower.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw, mode="rb") as f:
                    yield from f
            elif lower.endswith(".zst"):
                yield from _zstd_lines(raw, path)
            else:
                yield from raw
    except (OSError, EOFError, zlib.error) as exc:
        if isinstance(exc, FileNotFoundError):
            raise FileNotFoundError(f"training input vanished while reading: {path}") from None
        if isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)):
            raise ValueError(f"{path}: corrupt or truncated gzip data ({exc})") from None
        raise OSError(f"{path}: cannot be read ({exc})") from None
    except Exception as exc:
        if type(exc).__name__ == "ZstdError":
            raise ValueError(f"{path}: corrupt or truncated zstd data ({exc})") from None
        raise


def _is_jsonl(path: str) -> bool:
    base = path.lower()
    for suffix in COMPRESSION_SUFFIXES:
        base = base.removesuffix(suffix)
    return base.endswith(".jsonl")


def read_file(path: str, text_field: str = "text") -> Iterator[str]:
    """The documents of one file (see the module docstring); ``-`` is standard input."""
    if path.lower().endswith(".parquet"):
        yield from read_parquet(path, text_field)
        return
    name = "standard input" if path == STDIN else path
    yield from _documents_of_lines(_raw_lines(path), name, _is_jsonl(path), text_field)


def read_range(path: str, start: int, end: int, text_field: str = "text") -> Iterator[str]:
    """The documents of the bytes ``start:end`` of an uncompressed ``.txt`` or ``.jsonl`` file,
    cut at line boundaries (``start`` is 0 or follows a ``\n``): the documents :func:`read_file`
    gives for those lines.  Errors name the range; line numbers count from its start."""
    try:
        with open_binary(path) as f:
            f.seek(start)
            data = f.read(end - start)
    except OSError as exc:
        raise OSError(f"{path}: cannot be read ({exc})") from None
    if len(data) != end - start:
        raise ValueError(f"{path} changed while being read: bytes {start}-{end} are no longer there")
    name = f"{path} (bytes {start}-{end})"
    pieces = data.split(b"\n")  # as reading the file line by line: a last line may lack its \n
    lines = [line + b"\n" for line in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    yield from _documents_of_lines(lines, name, _is_jsonl(path), text_field, bom=start == 0)


def _documents_of_lines(lines: Iterable[bytes], name: str, is_jsonl: bool, text_field: str,
                        bom: bool = True) -> Iterator[str]:
    """The documents of raw lines (each with its ``\n``, but perhaps the last)."""
    for number, raw in enumerate(lines, start=1):
        if raw.endswith(b"\n"):
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        if number == 1 and bom and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]  # a UTF-8 byte order mark is not text
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{name}, line {number}: invalid UTF-8 (byte 0x{raw[exc.start]:02x} "
                             f"at byte offset {exc.start} of the line)") from None
        if not is_jsonl:
            yield line
            continue
        if not line.strip():
            continue
        yield _jsonl_text(line, name, number, text_field)


def _jsonl_text(line: str, name: str, number: int, text_field: str) -> str:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name}, line {number}: not valid JSON ({exc.msg} at column "
                         f"{exc.colno})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{name}, line {number}: expected a JSON object with a "
                         f"{text_field!r} field, found {type(record).__name__}")
    if text_field not in record:
        raise ValueError(f"{name}, line {number}: the record has no {text_field!r} field "
                         f"(fields: {', '.join(map(repr, list(record)[:8]))})")
    text = record[text_field]
    if not isinstance(text, str):
        raise ValueError(f"{name}, line {number}: field {text_field!r} is "
                         f"{type(text).__name__}, not a string")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{name}, line {number}: the record holds a lone surrogate escape "
                         f"(\\ud800-\\udfff); it cannot be encoded as UTF-8") from None
    return text


def read_parquet(path: str, text_field: str = "text") -> Iterator[str]:
    """The ``text_field`` column of a Parquet file, row by row (nulls are refused)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"{path}: reading .parquet files needs pyarrow: "
                          f"pip install 'superword[parquet]'") from None
    with contextlib.ExitStack() as stack:
        try:
            source = stack.enter_context(open_binary(path))
        except FileNotFoundError:
            raise FileNotFoundError(f"training input vanished while reading: {path}") from None
        except OSError as exc:
            raise OSError(f"{path}: cannot be read ({exc})") from None
        try:
            pf = stack.enter_context(pq.ParquetFile(source))
        except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError variety
            raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None
        yield from _parquet_column(pf, path, text_field)


def _parquet_column(pf: Any, path: str, text_field: str) -> Iterator[str]:
    columns = pf.schema_arrow.names
    if text_field not in columns:
        raise ValueError(f"{path}: no column {text_field!r} (columns: "
                         f"{', '.join(map(repr, columns[:12]))}); choose one with --text-field")
    kind = pf.schema_arrow.field(text_field).type
    if str(kind) not in ("string", "large_string", "string_view"):
        raise ValueError(f"{path}: column {text_field!r} holds {kind}, not strings")
    row = 0
    for batch in pf.iter_batches(columns=[text_field], batch_size=8192):
        for text in batch.column(0).to_pylist():
            if text is None:
                raise ValueError(f"{path}, row {row}: column {text_field!r} is null")
            yield text
            row += 1


# ----------------------------------------------------------------------------------------
# limits and tallies (the command line's --max-bytes / --max-docs, and provenance)

@dataclass
class Tally:
    """Documents and UTF-8 bytes seen, per input name, as the documents stream past."""
    inputs: dict[str, list[int]] = field(default_factory=dict)

    def count(self, name: str, documents: Iterable[str]) -> Iterator[str]:
        entry = self.inputs.setdefault(name, [0, 0])
        for doc in documents:
            entry[0] += 1
            entry[1] += len(doc.encode("utf-8", "surrogatepass"))
            yield doc

    def records(self) -> list[dict[str, Any]]:
        return [{"name": n, "documents": d, "bytes": b} for n, (d, b) in self.inputs.items()]


def limited(documents: Iterable[str], max_bytes: int | None = None,
            max_docs: int | None = None) -> Iterator[str]:
    """The first documents of ``documents``: at most ``max_docs``, and stopping once
    ``max_bytes`` UTF-8 bytes have been yielded (the document that reaches it included).

    >>> list(limited(["ab", "cd", "ef"], max_bytes=3))
    ['ab', 'cd']
    """
    size, n = 0, 0
    it = iter(documents)
    while (max_docs is None or n < max_docs) and (max_bytes is None or size < max_bytes):
        doc = next(it, None)
        if doc is None:
            return
        size += len(doc.encode("utf-8", "surrogatepass"))
        n += 1
        yield doc


# ----------------------------------------------------------------------------------------
# the default corpus of the command line: this Python's own standard library

#: every HELD_BACK-th standard-library file is held back from training, for measurements
HELD_BACK = 25


def stdlib_sources() -> list[Path]:
    """The ``.py`` files of the running interpreter's standard library (no site-packages),
    sorted, so every machine with the same Python version gets the same corpus."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in root.rglob("*.py")
             if not {"site-packages", "dist-packages", "__pycache__"} & set(p.parts)]
    return sorted(files)


def stdlib_split() -> tuple[list[Path], list[Path]]:
    """(training files, held-back files) of :func:`stdlib_sources`: every 25th file, counting
    from the 13th, is held back and never trained on by the command line."""
    files = stdlib_sources()
    held = [f for i, f in enumerate(files) if i % HELD_BACK == HELD_BACK // 2]
    kept = [f for i, f in enumerate(files) if i % HELD_BACK != HELD_BACK // 2]
    return kept, held


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
