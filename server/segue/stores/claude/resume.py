"""The search index's read of a Claude Code transcript that grew, on from the last point the previous read was
quiet at (segue.stores.resume_mark). Claude Code appends to a transcript and never rewrites it in place. The
mark is taken at the end of the last line after which the step walker held nothing (no call waiting for its
result, no message part: `StepWalker.quiet`), so what the walker knew there is its counters and its duplicate
window (`StepWalker.state`: uuids, no session text).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from segue.model import ReadStats, Step
from segue.stores import resume_mark
from segue.stores.base import Continued
from segue.stores.claude.records import bounded_lines
from segue.stores.claude.steps import StepWalker


def read(f: BinaryIO, walker: StepWalker, stats: ReadStats, mark: bytes | None) -> Continued:
    """The walker's steps of `f`, from `mark` where it matches; the new mark once read."""
    offset, start = resume_mark.going_on(f, mark, "claude", lambda state: walker.restore(tuple(state)))
    out = Continued(iter(()), start)

    def plain() -> Iterator[Step]:  # a file too small to keep a mark for: nothing noted
        for raw, last in bounded_lines(f, stats):
            yield from walker.line(raw, last, stats)
        yield from walker.finish(stats)

    def steps() -> Iterator[Step]:
        n = start
        w = walker
        # The last quiet line end (offset, steps; the walker notes its own state there cheaply: a copy of
        # the window per line would cost a 200 MB transcript's read 70 % more). A full copy every SNAPSHOT
        # bytes as well, for when the walker could not keep what it needs.
        at = at_n = -1
        full: tuple[int, int, Any] | None = None
        # `bounded_lines` counts every byte it reads, so this gives the offset of its last line's end without
        # `f.tell()` (which asks the kernel each time)
        before = stats.bytes_read - offset
        for raw, last in bounded_lines(f, stats, at_start=offset == 0):
            for step in w.line(raw, last, stats):
                n += 1
                yield step
            if not last and w.quiet():
                at, at_n = stats.bytes_read - before, n
                w.note_quiet()
                if full is None or at - full[0] >= resume_mark.SNAPSHOT:
                    full = (at, n, w.state())
        then = w.quiet_state() if at >= 0 else None
        if then is not None:
            full = (at, at_n, then)
        yield from w.finish(stats)
        if full is not None:
            out.mark = resume_mark.make(f, "claude", *full)

    out.steps = plain() if offset == 0 and resume_mark.small(f) else steps()
    return out
