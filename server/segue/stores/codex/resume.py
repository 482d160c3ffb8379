"""The search index's read of a Codex rollout that grew, on from the last point the previous read was quiet at
(segue.stores.resume_mark). Codex appends to a rollout and never rewrites it in place (a resumed session
appends to the same file). The mark is taken at the end of the last line after which the step builder held
nothing (no call waiting or running, no message held: `StepBuilder.quiet`, the end of every turn at least), so
what it knew there is `StepBuilder.state`. Plain rollouts only: a `.zst` one is read from the start.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO, cast

from segue.model import ReadStats, Step
from segue.stores import resume_mark
from segue.stores.base import Continued
from segue.stores.codex.records import MAX_LINE, _Prefixed, iter_raw_lines, step_lines
from segue.stores.codex.steps import StepBuilder


def read(f: BinaryIO, b: StepBuilder, stats: ReadStats, mark: bytes | None) -> Continued:
    """The builder's steps of `f`, from `mark` where it matches; the new mark once read."""
    offset, start = resume_mark.going_on(f, mark, "codex", b.restore)
    out = Continued(iter(()), start)

    def plain() -> Iterator[Step]:  # a file too small to keep a mark for: nothing noted
        yield from step_lines(f, stats, b.feed_raw)
        yield from b.finish(stats)

    def steps() -> Iterator[Step]:
        # `step_lines`' loop, noting the last quiet line end (offset, steps, the builder's line count: its
        # state at the end is the state there when no line came after), and a full copy every SNAPSHOT bytes.
        # (A copy: `step_lines` with a noting `feed` costs a call per line, 14 % of a 200 MB rollout's read.)
        n = start
        before = stats.bytes_read - offset  # every byte read is counted: the offset without `f.tell()`
        at = at_n = at_lines = -1
        full: tuple[int, int, Any] | None = None
        readline, feed = f.readline, b.feed_raw
        while True:
            raw = readline(MAX_LINE)
            if not raw:
                break
            if not raw.endswith(b"\n"):  # EOF without a newline or an oversized line: `step_lines`' own way
                for piece, whole in iter_raw_lines(cast(BinaryIO, _Prefixed(raw, f)), stats):
                    for step in feed(piece, whole, stats):
                        n += 1
                        yield step
                break
            stats.bytes_read += len(raw)
            got = feed(raw, True, stats)
            if got:  # (most lines give `()`: no loop for them)
                for step in got:
                    n += 1
                    yield step
            if b.quiet():
                at, at_n, at_lines = stats.bytes_read - before, n, b.lines
                if full is None or at - full[0] >= resume_mark.SNAPSHOT:
                    full = (at, n, b.state())
        if at >= 0 and at_lines == b.lines and (full is None or full[0] != at):
            full = (at, at_n, b.state())
        yield from b.finish(stats)
        if full is not None:
            out.mark = resume_mark.make(f, "codex", *full)

    out.steps = plain() if offset == 0 and resume_mark.small(f) else steps()
    return out
