"""Count files: stage 1's counts on disk, to train many times from one count pass and to sum
the counts of parts of a corpus (the format: ``docs/count-format.md``; the Rust twin is
``src/countfile.rs``, and both write the same bytes).

The bytes depend only on the counts: pretokens are written by count (descending), then by
their UTF-8 bytes, and numbered in that order; runs are written as those numbers, sorted.

>>> from .count import Counts
>>> counts = Counts({"the": 2, " cat": 2, ",": 1}, {("the", " cat"): 2}, documents=2, pretokens=5)
>>> settings = CountSettings("p", None, None, "m", True)
>>> data = to_bytes(counts, settings)
>>> again_settings, again = from_bytes(data)
>>> again == counts and again_settings == settings
True
>>> merged = merge([(settings, counts), (settings, counts)], ["a", "b"])[1]
>>> merged.words[" cat"], merged.runs[("the", " cat")], merged.documents
(4, 4, 4)
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from .count import Counts
from .pretokenize import Pretokenizer

MAGIC = b"SWCOUNTS"
VERSION = 1
PREAMBLE = 8 + 4 + 8   # magic, version, body length
MAX_COUNT = 2**64 - 1
#: The most pretoken ids the runs may hold once written out in full, per byte of the body: a
#: run stores only the ids it does not share with the previous run, so a crafted file of a few
#: hundred KB stood for 16 GB of runs (the same limit in ``src/countfile.rs``).
MAX_RUN_IDS_PER_BYTE = 32


@dataclass(frozen=True)
class CountSettings:
    """The pre-tokenization the counts were made with (the file's header)."""
    pattern: str
    script_pattern: str | None      # None in simple mode
    scripts: tuple[str, ...] | None  # sorted; None in simple mode
    merge_pattern: str               # which pretokens join letter runs (SPEC 1.3)
    with_runs: bool                  # whether the letter runs were counted

    def difference(self, other: CountSettings) -> str | None:
        """How ``self`` differs from ``other``, in words (the Rust twin's wording)."""
        def show(v: str | tuple[str, ...] | None) -> str:
            if v is None:
                return "none (simple mode)"
            if isinstance(v, tuple):
                return "[" + ", ".join(_rust_debug(s) for s in v) + "]"
            return _rust_debug(v)

        def says(r: bool) -> str:
            return "with letter runs" if r else "without letter runs (runs=False)"
        if self.pattern != other.pattern:
            return f"pattern {_rust_debug(self.pattern)} vs {_rust_debug(other.pattern)}"
        if self.script_pattern != other.script_pattern:
            return f"script pattern {show(self.script_pattern)} vs {show(other.script_pattern)}"
        if self.scripts != other.scripts:
            return f"scripts {show(self.scripts)} vs {show(other.scripts)}"
        if self.merge_pattern != other.merge_pattern:
            return f"merge pattern {_rust_debug(self.merge_pattern)} vs {_rust_debug(other.merge_pattern)}"
        if self.with_runs != other.with_runs:
            return f"{says(self.with_runs)} vs {says(other.with_runs)}"
        return None


def _rust_debug(s: str) -> str:
    """A string quoted as Rust's ``{:?}`` shows it (close enough for patterns: quotes and
    backslashes escaped)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def canonical_words(words: dict[str, int]) -> list[str]:
    """Pretokens in file order: by count, descending, then by UTF-8 bytes (which is code
    point order).

    >>> canonical_words({"b": 1, "a": 1, "c": 5})
    ['c', 'a', 'b']
    """
    return sorted(words, key=lambda w: (-words[w], w))


# ----------------------------------------------------------------------------------------
# writing

def _varint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _str(out: bytearray, s: str) -> None:
    raw = s.encode("utf-8")
    _varint(out, len(raw))
    out += raw


def to_bytes(counts: Counts, settings: CountSettings) -> bytes:
    """The count file of ``counts``."""
    body = bytearray()
    _str(body, settings.pattern)
    if settings.script_pattern is not None:
        body.append(1)
        _str(body, settings.script_pattern)
        scripts = settings.scripts or ()
        _varint(body, len(scripts))
        for name in scripts:
            _str(body, name)
    else:
        body.append(0)
    _str(body, settings.merge_pattern)
    body.append(1 if settings.with_runs else 0)
    _varint(body, counts.documents)
    _varint(body, counts.pretokens)
    # pretokens: length, bytes, and the count as the drop from the previous count
    order = canonical_words(counts.words)
    _varint(body, len(order))
    previous = None
    for w in order:
        c = counts.words[w]
        _str(body, w)
        _varint(body, c if previous is None else previous - c)
        previous = c
    # runs as pretoken numbers, sorted; the numbers shared with the previous run are skipped
    number = {w: i for i, w in enumerate(order)}
    runs = sorted((tuple(number[w] for w in run), c) for run, c in counts.runs.items())
    _varint(body, len(runs))
    before: tuple[int, ...] = ()
    for run, c in runs:
        shared = 0
        while shared < min(len(run), len(before)) and run[shared] == before[shared]:
            shared += 1
        _varint(body, shared)
        _varint(body, len(run) - shared)
        for i in run[shared:]:
            _varint(body, i)
        _varint(body, c)
        before = run
    out = bytearray(MAGIC) + struct.pack("<IQ", VERSION, len(body)) + body
    return bytes(out + struct.pack("<I", zlib.crc32(out)))


# ----------------------------------------------------------------------------------------
# reading (untrusted input: every size is checked before use)

class _Reader:
    def __init__(self, body: bytes):
        self.data, self.at = body, 0

    def bad(self, what: str) -> ValueError:
        return ValueError(f"corrupted: {what} (body byte {self.at})")

    def left(self) -> int:
        return len(self.data) - self.at

    def varint(self, what: str) -> int:
        v = 0
        for shift in range(0, 64, 7):
            if self.at >= len(self.data):
                raise self.bad(f"the body ends inside {what}")
            b = self.data[self.at]
            self.at += 1
            if shift == 63 and (b & 0x7F) > 1:
                raise self.bad(f"{what} does not fit in 64 bits")
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
        raise self.bad(f"{what} does not fit in 64 bits")

    def flag(self, what: str) -> bool:
        if self.at >= len(self.data):
            raise self.bad(f"the body ends inside {what}")
        b = self.data[self.at]
        self.at += 1
        if b > 1:
            raise self.bad(f"{what} is {b}, not 0 or 1")
        return b == 1

    def length(self, what: str, min_bytes: int) -> int:
        n = self.varint(what)
        if n > self.left() // min_bytes:
            raise self.bad(f"{what} ({n}) is more than the bytes left can hold")
        return n

    def str(self, what: str) -> str:
        n = self.length(f"the length of {what}", 1)
        try:
            s = self.data[self.at:self.at + n].decode("utf-8")
        except UnicodeDecodeError:
            raise self.bad(f"{what} is not UTF-8") from None
        self.at += n
        return s


def from_bytes(data: bytes) -> tuple[CountSettings, Counts]:
    """Parse a count file; a ``ValueError`` says what is wrong (the caller names the file)."""
    if data[:8] != MAGIC:
        raise ValueError("not a superword count file (it does not start with SWCOUNTS)")
    if len(data) < PREAMBLE + 4:
        raise ValueError(f"truncated: {len(data)} bytes, shorter than a count file's fixed header")
    version, body_len = struct.unpack_from("<IQ", data, 8)
    if version > VERSION:
        raise ValueError(f"written in count-file format version {version}, newer than this superword "
                         f"reads (version {VERSION}); upgrade superword")
    if version == 0:
        raise ValueError("corrupted: format version 0 does not exist")
    expected = PREAMBLE + 4 + body_len
    if expected != len(data):
        what = "truncated" if expected > len(data) else "corrupted"
        shown = str(expected) if expected <= MAX_COUNT else "more than 2^64"
        raise ValueError(f"{what}: the file is {len(data)} bytes, its header says {shown}")
    content, (stored,) = data[:-4], struct.unpack("<I", data[-4:])
    crc = zlib.crc32(content)
    if crc != stored:
        raise ValueError(f"corrupted: checksum mismatch (CRC-32 {crc:08x}, the file says {stored:08x})")
    r = _Reader(content[PREAMBLE:])

    pattern = r.str("the pattern")
    script_pattern, scripts = None, None
    if r.flag("the script-aware flag"):
        script_pattern = r.str("the script pattern")
        scripts = tuple(r.str("a script name") for _ in range(r.length("the number of scripts", 1)))
    merge_pattern = r.str("the merge pattern")
    with_runs = r.flag("the runs flag")
    counts = Counts(documents=r.varint("the document count"), pretokens=r.varint("the pretoken count"))
    settings = CountSettings(pattern, script_pattern, scripts, merge_pattern, with_runs)
    # the patterns pass the checks of every other door (``train(pattern=...)``, model files),
    # although training on counts never pre-tokenizes with them
    Pretokenizer(pattern, script_pattern, scripts)

    n = r.length("the number of pretokens", 3)
    if n > 2**32 - 1:
        raise r.bad("more pretokens than 32-bit ids can number")
    order: list[str] = []
    previous: tuple[str, int] | None = None
    for i in range(n):
        w = r.str("a pretoken")
        if not w:
            raise r.bad("an empty pretoken")
        drop = r.varint("a pretoken count")
        if previous is None:
            c = drop
        else:
            c = previous[1] - drop
            if c < 0:
                raise r.bad("a pretoken count below zero")
            if c == previous[1] and previous[0].encode() >= w.encode():
                raise r.bad(f"pretoken {i} is out of order or repeated")
        if c == 0:
            raise r.bad("a pretoken counted 0 times")
        order.append(w)
        counts.words[w] = c
        previous = (w, c)

    n = r.length("the number of runs", 4)
    if n and not with_runs:
        raise r.bad("runs in a file whose header says it has none")
    run: list[int] = []
    last: list[int] | None = None
    most, expanded = MAX_RUN_IDS_PER_BYTE * len(r.data), 0
    for i in range(n):
        shared = r.varint("a run's shared length")
        if shared > len(run):
            raise r.bad(f"run {i} shares more than the previous run has")
        rest = r.length("a run's length", 1)
        expanded += shared + rest  # checked before the run is written out
        if expanded > most:
            raise r.bad(f"the runs, written out in full, hold more than {MAX_RUN_IDS_PER_BYTE} "
                        f"pretoken ids per byte of the file (at run {i}); runs never share that much")
        del run[shared:]
        for _ in range(rest):
            pid = r.varint("a run's pretoken id")
            if pid >= len(order):
                raise r.bad(f"run {i} names pretoken {pid} of {len(order)}")
            run.append(pid)
        if len(run) < 2:
            raise r.bad(f"run {i} has fewer than 2 pretokens")
        if last is not None and last >= run:
            raise r.bad(f"run {i} is out of order or repeated")
        c = r.varint("a run count")
        if c == 0:
            raise r.bad("a run counted 0 times")
        counts.runs[tuple(order[j] for j in run)] = c
        last = list(run)
    if r.left():
        raise r.bad("bytes after the last section")
    _check_runs(order, counts)
    _check_total(counts)
    return settings, counts


# ----------------------------------------------------------------------------------------
# merging and pruning

def _overflow(what: str) -> ValueError:
    return ValueError(f"the {what} overflow 64 bits when summed (over 18,446,744,073,709,551,615); "
                      f"refusing to wrap them")


def _check_runs(order: list[str], counts: Counts) -> None:
    """Refuse runs that hold a pretoken more often than it was counted (each occurrence of a
    pretoken lies in at most one run; training on such a file made superwords of parts that
    were never tokens).  Only a file read can break the rule: sums and prunings keep it."""
    held = {w: 0 for w in order}
    for run, c in counts.runs.items():
        for w in run:
            held[w] += c
    for i, w in enumerate(order):
        if held[w] > counts.words[w]:
            raise ValueError(f"corrupted: pretoken {i} ({_rust_debug(w)}) is counted {counts.words[w]} "
                             f"times, but the runs hold it {held[w]} times")


def _check_total(counts: Counts) -> None:
    """Refuse counts whose sums in training could pass 64 bits (the Rust core adds them up in
    64 bits): every pair, token or candidate count is at most the pretokens' bytes and the
    runs' pretokens, each times its count, all added up.  A real corpus's size in bytes; only a
    crafted file comes near 2^64."""
    total = sum(len(w.encode()) * c for w, c in counts.words.items())
    total += sum(len(r) * c for r, c in counts.runs.items())
    if total > MAX_COUNT:
        raise ValueError("the counts are too large to train on: the pretokens' bytes and the "
                         "runs' pretokens, each times its count, add up to over "
                         "18,446,744,073,709,551,615, so pair counts could overflow 64 bits")


def merge(tables: Sequence[tuple[CountSettings, Counts]], names: Sequence[str]
          ) -> tuple[CountSettings, Counts]:
    """The sum of count tables counted with the same settings (``names`` name them in errors)."""
    if not tables:
        raise ValueError("merging needs at least one count table")
    first = tables[0][0]
    for i, (s, _) in enumerate(tables[1:], start=1):
        d = first.difference(s)
        if d is not None:
            raise ValueError(f"cannot merge {names[0]} and {names[i]}: they were counted with "
                             f"different settings ({d})")
    out = Counts()
    for _, c in tables:
        out.documents += c.documents
        out.pretokens += c.pretokens
        if out.documents > MAX_COUNT:
            raise _overflow("document counts")
        if out.pretokens > MAX_COUNT:
            raise _overflow("pretoken counts")
        for w, n in c.words.items():
            out.words[w] = total = out.words.get(w, 0) + n
            if total > MAX_COUNT:
                raise _overflow("pretoken counts")
        for run, n in c.runs.items():
            out.runs[run] = total = out.runs.get(run, 0) + n
            if total > MAX_COUNT:
                raise _overflow("run counts")
    _check_total(out)
    return first, out


def prune(counts: Counts, min_count: int) -> Counts:
    """Only the pretokens and runs counted at least ``min_count`` times."""
    words = {w: c for w, c in counts.words.items() if c >= min_count}
    runs = {r: c for r, c in counts.runs.items() if c >= min_count and all(w in words for w in r)}
    return Counts(words, runs, counts.documents, counts.pretokens)
