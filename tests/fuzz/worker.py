"""The worker side of the fuzzer: reads cases from standard input, one JSON line each
(``{"format", "backend", "data"}`` with the file's bytes in base64), tries them, and answers
one JSON line each (``{"class", "detail"}``).  Runs under the harness's memory limit."""
from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
import warnings

import regex

TEXT = "The cat's 12 naïve café-tests:\n\tdéjà vu, 東京タワー ไทย! emoji 🙂 x\u0301 " * 3
PATTERN = r"\w+|\s+|[^\w\s]+"
NAMES = {"v2": "m.model", "minbpe": "m.model", "tiktoken": "r.tiktoken", "hf": "tokenizer.json",
         "counts": "c.counts", "sidecar": "m.model.json", "extension": "e.model"}


def round_trip(tok, pattern: str = "") -> str | None:
    ids = tok.encode_ordinary(TEXT)
    back = tok.decode(ids)
    # (a minbpe split pattern may leave characters out of every chunk, and minbpe drops them)
    want = "".join(regex.findall(pattern, TEXT)) if pattern else TEXT
    if back != want:
        return f"decode(encode(text)) differs: {back[:80]!r}"
    # the special tokens a file gave: each one encodes to its id, and decodes back
    specials = tok.special_tokens
    if specials and not pattern:
        text = TEXT[:40].join(specials) + TEXT[:40]
        ids = tok.encode(text, allowed_special="all")
        if tok.decode(ids) != text or not set(specials.values()) <= set(ids):
            return f"special tokens {sorted(specials)[:3]!r} do not encode and decode back"
    return None


def attempt(fmt: str, backend: str, data: bytes, folder: str, model: bytes | None) -> str | None:
    import superword
    from superword import _provenance
    path = os.path.join(folder, NAMES[fmt])
    with open(path, "wb") as f:
        f.write(data)
    if fmt in ("v2", "extension"):
        return round_trip(superword.Tokenizer.load(path, backend=backend))
    if fmt == "minbpe":
        lines = data.decode("utf-8", errors="replace").split("\n")
        return round_trip(superword.open_tokenizer(path, backend=backend), lines[1] if len(lines) > 1 else "")
    if fmt == "tiktoken":
        return round_trip(superword.Tokenizer.from_tiktoken(path, PATTERN, backend=backend))
    if fmt == "hf":
        return round_trip(superword.Tokenizer.from_hf(path, backend=backend))
    if fmt == "counts":
        counts = superword.load_counts(path, backend=backend)
        if counts.to_bytes() != data:
            return "a count file that loads does not write back the same bytes"
        return None
    if fmt == "sidecar":
        assert model is not None
        model_path = os.path.join(folder, "m.model")
        with open(model_path, "wb") as f:
            f.write(model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prov = _provenance.read(model_path, lambda: model.decode("utf-8"))
        if prov:  # what `superword stats` and `plot` read
            ", ".join(i["name"] for i in prov["inputs"][:3])
            sum(i["bytes"] or 0 for i in prov["inputs"])
            f"{prov['superword_version']} {prov['total_seconds']:.1f} {prov['created_utc']}"
            from superword import plot
            plot.training_megabytes(prov)
        return None
    raise AssertionError(fmt)


def serve() -> None:
    folder = tempfile.mkdtemp(prefix="superword-fuzz-")
    for line in sys.stdin:
        case = json.loads(line)
        data = base64.b64decode(case["data"])
        model = base64.b64decode(case["model"]) if case.get("model") else None
        try:
            problem = attempt(case["format"], case["backend"], data, folder, model)
            answer = {"class": "ok"} if problem is None else {"class": "round-trip", "detail": problem}
        except (ValueError, OSError) as exc:
            answer = {"class": "refused", "detail": str(exc)[:200]}
        except MemoryError as exc:
            answer = {"class": "memory", "detail": str(exc)[:200]}
        except Exception as exc:  # anything else is a bug of a reader
            answer = {"class": "crash", "detail": f"{type(exc).__name__}: {str(exc)[:200]}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
