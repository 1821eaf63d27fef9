"""Training progress for the command line, on stderr.

In a terminal: one bar per stage, rewritten in place, with the rate and (when the stage
knows its total) the time left.  Piped into a file: one plain line per stage when it ends,
no carriage returns.  No third-party dependency; the library itself stays silent.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

STAGES = {"count": ("pre-tokenize + count", "documents"), "merges": ("phase 1", "merges"),
          "candidates": ("supermerge candidates", "candidates"), "phase2": ("phase 2", "tokens")}
#: the seconds of ``Tokenizer.training_stats``, as the columns of the paper's Table 1
STAGE_COLUMNS = [("pretokenize_count", "pretokenize+count s"), ("phase1", "phase 1 s"),
                 ("candidates", "candidates s"), ("phase2", "phase 2 s")]


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """A ``progress(stage, done, total)`` callable for :func:`superword.train`."""

    def __init__(self, stream: TextIO = sys.stderr, quiet: bool = False, bar: bool | None = None):
        self.stream, self.quiet = stream, quiet
        self.bar = stream.isatty() if bar is None else bar
        self.stage: str | None = None
        # a stage starts when the previous one ends (its first report can come late)
        self.started, self.drawn = time.monotonic(), 0.0
        self.done = self.total = 0

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
        elapsed = now - self.started
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
