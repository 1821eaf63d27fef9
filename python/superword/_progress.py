"""Training progress for the command line, on stderr.

In a terminal: one bar per stage, rewritten in place, with the rate and (when the stage
knows its total) the time left.  Piped into a file: one plain line per stage when it ends,
no carriage returns.  No third-party dependency; the library itself stays silent.

The count stage is the one that grows with the corpus, and its callback counts documents,
which say nothing about how much is left.  Given the input files, the count stage instead
shows bytes read of the bytes on disk (compressed bytes for ``.gz`` and ``.zst`` files), in
MB/s, with the time left.  Where the reading happens (in the Rust core or in Python), the
position is the read offset of the open input file, which Linux shows in ``/proc/self``;
on other systems, or for standard input, the count stage shows documents as before.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import TextIO

STAGES = {"count": ("pre-tokenize + count", "documents"), "merges": ("phase 1", "merges"),
          "candidates": ("supermerge candidates", "candidates"), "phase2": ("phase 2", "tokens"),
          "ray_tasks": ("Ray count and merge tasks", "tasks"),
          "ray_candidate_tasks": ("Ray candidate tasks (pass 2)", "tasks")}
#: the seconds of ``Tokenizer.training_stats``, as the columns of the paper's Table 1
STAGE_COLUMNS = [("pretokenize_count", "pretokenize+count s"), ("phase1", "phase 1 s"),
                 ("candidates", "candidates s"), ("phase2", "phase 2 s")]


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class FileReading:
    """How far the reading of ``files`` (read one after the other, in order) has got, from
    the read offsets of the open input files (Linux only: :meth:`available`)."""

    PROC = "/proc/self"

    def __init__(self, files: Sequence[str]):
        self.sizes = [os.path.getsize(f) for f in files]
        self.total = sum(self.sizes)
        self.before = [sum(self.sizes[:i]) for i in range(len(self.sizes))]
        self.where: dict[str, list[int]] = {}
        for i, f in enumerate(files):
            self.where.setdefault(os.path.realpath(f), []).append(i)
        self.current = -1  # the last file seen open
        self.done = 0

    @classmethod
    def available(cls) -> bool:
        return os.path.isdir(os.path.join(cls.PROC, "fdinfo"))

    def bytes_done(self) -> int:
        """Bytes read so far (never less than at the last call)."""
        seen: tuple[int, int] | None = None  # (file index, offset)
        fd_folder = os.path.join(self.PROC, "fd")
        try:
            fds = os.listdir(fd_folder)
        except OSError:
            return self.done
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_folder, fd))
            except OSError:  # closed since the listing
                continue
            indices = self.where.get(target)
            if indices is None:
                continue
            index = next((i for i in indices if i >= self.current), indices[-1])
            offset = self._offset(fd)
            if offset is not None and (seen is None or index > seen[0]):
                seen = (index, offset)
        if seen is not None:
            index, offset = seen
            self.current = max(self.current, index)
            if index == self.current:
                self.done = max(self.done, self.before[index] + min(offset, self.sizes[index]))
        elif self.current >= 0:  # the last file seen is closed: read to its end
            self.done = max(self.done, self.before[self.current] + self.sizes[self.current])
        return self.done

    def _offset(self, fd: str) -> int | None:
        try:
            with open(os.path.join(self.PROC, "fdinfo", fd)) as f:
                for line in f:
                    if line.startswith("pos:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return None


class Progress:
    """A ``progress(stage, done, total)`` callable for :func:`superword.train`.

    ``files``: the input files, read in this order, when their sizes tell how much the count
    stage has to read; ``prefix`` goes before every stage's name."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False, bar: bool | None = None,
                 files: Sequence[str] | None = None, prefix: str = ""):
        # standard error as it is now (not as it was at import: tests and callers redirect it)
        stream = sys.stderr if stream is None else stream
        self.stream, self.quiet, self.prefix = stream, quiet, prefix
        self.bar = stream.isatty() if bar is None else bar
        self.stage: str | None = None
        # a stage starts when the previous one ends (its first report can come late)
        self.started, self.drawn = time.monotonic(), 0.0
        self.done = self.total = 0
        self.reading = (FileReading(files) if files and not quiet and FileReading.available()
                        else None)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        if stage != self.stage:
            if self.stage is not None:
                self._finish(now)
                self.started = now
            self.stage, self.drawn = stage, 0.0
        self.done, self.total = done, total
        if self.bar and (now - self.drawn >= 0.1 or (total and done >= total)):
            self.drawn = now
            self.stream.write("\r" + self._line(now, final=False) + "\x1b[K")
            self.stream.flush()

    def _line(self, now: float, final: bool) -> str:
        label, unit = STAGES.get(self.stage or "", (self.stage, "items"))
        label = self.prefix + str(label)
        elapsed = now - self.started
        if self.stage == "count" and self.reading is not None:
            return self._reading_line(label, now, elapsed, final)
        rate = self.done / elapsed if elapsed > 0.25 else 0.0  # no rate from a first glimpse
        speed = f"{rate:,.0f}/s" if rate else "-/s"
        if final:  # stage times come from training_stats at the end; callbacks only bound them
            return f"{label}: {self.done:,} {unit}"
        if self.total:
            width = 28
            filled = min(width, int(width * self.done / self.total))
            eta = _clock((self.total - self.done) / rate) if rate else "-:--"
            return (f"{label:<22} |{'█' * filled}{' ' * (width - filled)}| {self.done:,}/{self.total:,} "
                    f"{unit}  {speed}  ETA {eta}")
        return f"{label:<22} {self.done:,} {unit}  {speed}  {_clock(elapsed)}"

    def _reading_line(self, label: str, now: float, elapsed: float, final: bool) -> str:
        """The count stage as MB read of MB on disk."""
        assert self.reading is not None
        total = self.reading.total
        done = total if final or (self.total and self.done >= self.total) else self.reading.bytes_done()
        mb, total_mb = done / 1e6, total / 1e6
        if final:
            return f"{label}: {self.done:,} documents, {total_mb:,.1f} MB on disk"
        rate = mb / elapsed if elapsed > 0.25 else 0.0
        speed = f"{rate:,.1f} MB/s" if rate else "- MB/s"
        width = 28
        filled = min(width, int(width * done / total)) if total else width
        eta = _clock((total - done) / 1e6 / rate) if rate else "-:--"
        share = 100 * done / total if total else 100.0
        return (f"{label:<22} |{'█' * filled}{' ' * (width - filled)}| {mb:,.1f}/{total_mb:,.1f} MB on disk "
                f"({share:.0f} %)  {speed}  ETA {eta}  {self.done:,} documents")

    def _finish(self, now: float) -> None:
        if self.stage is None:
            return
        line = self._line(now, final=True)
        self.stream.write(("\r" + line + "\x1b[K\n") if self.bar else line + "\n")
        self.stream.flush()
        self.stage = None
        self.started = now

    def close(self) -> None:
        if not self.quiet:
            self._finish(time.monotonic())
