"""How a model was made, in a sidecar file beside it: ``MODEL.json`` for ``MODEL``.

The model file itself stays byte-identical to the paper's format (SPEC 8), so everything
else a user wants to know later lives here: superword's version, the algorithm and its
settings, the inputs and the seconds per training stage.  The sidecar stores the SHA-256
of the model text; a sidecar that does not match its model (the model was replaced, the
sidecar was not) is reported and ignored.

An input file is recorded by its file name, its size on disk and the SHA-256 of its bytes,
not by the path it was read from: a published model's sidecar should not carry the
trainer's home directory or folder layout.  The hash identifies the file wherever it is
copied.  The path is recorded too only when asked for (``superword train --record-paths``).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import stat
import warnings
from collections.abc import Callable
from typing import Any

from ._files import write_text_atomic

FORMAT = "superword provenance 1"


def sidecar_path(model_path: str | os.PathLike[str]) -> str:
    """``stdlib.model`` -> ``stdlib.model.json``."""
    return os.fspath(model_path) + ".json"


#: bytes read at a time while hashing an input file
_CHUNK = 1 << 20


def file_sha256(path: str) -> str:
    """The SHA-256 of a file's bytes (as stored: a ``.gz`` file's compressed bytes)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def describe_inputs(records: list[dict[str, Any]], record_paths: bool = False) -> list[dict[str, Any]]:
    """The ``inputs`` of a provenance record: ``records`` (``name``, ``documents``,
    ``bytes`` of text read, as training made them) with every name that is a regular file
    replaced by its base name, plus ``file_bytes`` (its size on disk) and ``sha256``; with
    ``record_paths``, also ``path`` (absolute).  Names that are not files (``<documents>``,
    the description of the standard-library corpus, standard input) are kept as they are."""
    out = []
    for record in records:
        record = dict(record)
        name = record.get("name")
        if isinstance(name, str) and name != "-" and os.path.isfile(name):
            record["name"] = os.path.basename(name)
            record["file_bytes"] = os.path.getsize(name)
            record["sha256"] = file_sha256(name)
            if record_paths:
                record["path"] = os.path.abspath(name)
        out.append(record)
    return out


def make(algorithm: str, settings: dict[str, Any], inputs: list[dict[str, Any]],
         stages: dict[str, float], seconds: float) -> dict[str, Any]:
    from . import __version__
    return {
        "format": FORMAT,
        "superword_version": __version__,
        "python": platform.python_version(),
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "algorithm": algorithm,
        "settings": settings,
        "inputs": describe_inputs(inputs),
        "stages_seconds": {k: round(v, 4) for k, v in stages.items()},
        "total_seconds": round(seconds, 4),
    }


def digest(model_text: str) -> str:
    return hashlib.sha256(model_text.encode("utf-8")).hexdigest()


def write(model_path: str | os.PathLike[str], provenance: dict[str, Any], model_text: str) -> None:
    record = dict(provenance, model_sha256=digest(model_text))
    write_text_atomic(sidecar_path(model_path),
                      json.dumps(record, indent=2, ensure_ascii=False) + "\n")


def read(model_path: str | os.PathLike[str], model_text: Callable[[], str]) -> dict[str, Any] | None:
    """The provenance beside ``model_path``, or ``None`` when there is no sidecar.  An
    unreadable or mismatched sidecar gives a warning (naming it) and ``None``.

    ``model_text`` gives the loaded model's text; it is asked for only when the file's own
    bytes do not have the sidecar's checksum (a file we saved holds exactly that text, and
    making it again doubled the load time of a 105 MB model)."""
    path = sidecar_path(model_path)
    if not os.path.exists(path):
        return None
    try:
        # opening a FIFO waits for a writer and a device may never end: only a regular file
        # is read
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise OSError("not a regular file")
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError, RecursionError) as exc:
        # RecursionError: arrays or objects nested deeper than Python's stack
        warnings.warn(f"{path}: provenance sidecar ignored, it cannot be read ({exc})", stacklevel=3)
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        warnings.warn(f"{path}: provenance sidecar ignored, it is not a superword provenance file",
                      stacklevel=3)
        return None
    wanted = record.get("model_sha256")
    if wanted != file_sha256(os.fspath(model_path)) and wanted != digest(model_text()):
        warnings.warn(f"{path}: provenance sidecar ignored, it describes another version of "
                      f"{os.fspath(model_path)}", stacklevel=3)
        return None
    problem = schema_problem(record)
    if problem is not None:
        warnings.warn(f"{path}: provenance sidecar ignored, {problem}", stacklevel=3)
        return None
    return record


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def schema_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with the fields that ``superword stats``, ``compare`` and ``plot`` read,
    or ``None``.  A sidecar's checksum only says that it was written for this model text, not
    by superword: a 120-byte one with the right ``format`` and ``model_sha256`` and nothing
    else crashed ``superword stats`` with a ``KeyError``.

    >>> schema_problem({"superword_version": "1", "created_utc": "x", "algorithm": "bpe",
    ...                 "settings": {}, "total_seconds": 1.0, "stages_seconds": {},
    ...                 "inputs": [{"name": "a.txt", "bytes": 3, "documents": 1}]}) is None
    True
    >>> schema_problem({"superword_version": "1"})
    "its field 'created_utc' is missing or not a string"
    """
    for key in ("superword_version", "created_utc", "algorithm"):
        if not isinstance(record.get(key), str):
            return f"its field {key!r} is missing or not a string"
    if not isinstance(record.get("settings"), dict):
        return "its field 'settings' is missing or not an object"
    if not _is_number(record.get("total_seconds")):
        return "its field 'total_seconds' is missing or not a number"
    stages = record.get("stages_seconds", {})
    if not isinstance(stages, dict) or not all(_is_number(v) for v in stages.values()):
        return "its field 'stages_seconds' is not an object of numbers"
    inputs = record.get("inputs")
    if not isinstance(inputs, list):
        return "its field 'inputs' is missing or not a list"
    for i, entry in enumerate(inputs):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            return f"input {i} is not an object with a 'name' string"
        if "bytes" not in entry:  # (read as entry["bytes"]; None when not known)
            return f"input {i} has no 'bytes'"
        for key in ("bytes", "documents", "file_bytes"):
            if entry.get(key) is not None and not (isinstance(entry[key], int)
                                                   and not isinstance(entry[key], bool)):
                return f"input {i}'s {key!r} is not a whole number"
    return None
