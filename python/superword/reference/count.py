"""Stage 1: pre-tokenize every document and aggregate (SPEC 2.1 and 3.3).

One pass over the documents collects two tables, so an iterator of documents is read once:

* ``words``: every distinct pretoken with its count (the input of phase 1);
* ``runs``: every maximal run of two or more consecutive pretokens that contain a letter
  (SPEC 1.3), with its count.  Supermerge candidates (SPEC 3.3) are these runs cut at the
  pretokens that the finished word model cannot produce as a single token, so phase 2 never
  has to look at the text again.

>>> from .pretokenize import Pretokenizer
>>> c = count_documents(["the cat, the cat"], Pretokenizer(), with_runs=True)
>>> c.words == {"the": 1, " cat": 2, ",": 1, " the": 1}
True
>>> c.runs
{('the', ' cat'): 1, (' the', ' cat'): 1}
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .pretokenize import MERGE_PATTERN, Pretokenizer, compile_pattern


@dataclass
class Counts:
    words: dict[str, int] = field(default_factory=dict)
    runs: dict[tuple[str, ...], int] = field(default_factory=dict)
    documents: int = 0
    pretokens: int = 0


def count_documents(documents: Iterable[str], pretokenizer: Pretokenizer, with_runs: bool,
                    merge_pattern: str = MERGE_PATTERN,
                    progress: Callable[[int], None] | None = None) -> Counts:
    counts = Counts()
    words, runs = counts.words, counts.runs
    has_letter = compile_pattern(merge_pattern, "merge pattern").search
    mergeable: dict[str, bool] = {}   # pretoken -> matches the merge pattern (memo)
    for index, text in enumerate(documents):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"document {index} of inputs holds a lone surrogate "
                             f"U+{ord(text[exc.start]):04X} at index {exc.start}; it cannot be "
                             f"encoded as UTF-8") from None
        pieces = pretokenizer.pretokenize(text)
        counts.documents += 1
        counts.pretokens += len(pieces)
        for piece in pieces:
            words[piece] = words.get(piece, 0) + 1
        if with_runs:
            run: list[str] = []
            for piece in pieces:
                ok = mergeable.get(piece)
                if ok is None:
                    ok = mergeable[piece] = has_letter(piece) is not None
                if ok:
                    run.append(piece)
                    continue
                if len(run) >= 2:
                    key = tuple(run)
                    runs[key] = runs.get(key, 0) + 1
                run = []
            if len(run) >= 2:
                key = tuple(run)
                runs[key] = runs.get(key, 0) + 1
        if progress is not None and counts.documents % 10000 == 0:
            progress(counts.documents)
    return counts
