"""A brief's pass over a big plain rollout in two processes: this one reads the first half, a forked child
(`segue.alongside`) the second.

The builder is deterministic: its steps for the lines that follow depend on its state and those lines alone.
The child starts `WARM` bytes before the split, at a line start, with a fresh builder, and notes its state when
it reaches the split line (`StepBuilder.state_key`). Most state lasts one turn (calls, the turn's call ids, the
last step), so a turn or two of warm-up gives the child the state the whole first half gives this process.
Only when the two keys are equal are the child's steps after the split taken; otherwise (or when the child
failed, died or could not start) this process reads the second half itself, as a one-process pass does. So the
result is the one-process result either way; the split only saves time.

Taken for plain rollouts of `SPLIT_MIN` bytes or more while fast paths are on (`SEGUE_FAST_PATHS=0` reads in
one pass), and never where `segue.alongside` does not fork (`SEGUE_ALONGSIDE=0`, not Linux, threads running:
the language server)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from segue import alongside
from segue.model import ReadStats, Step
from segue.replay import blake2b
from segue.stores.codex.records import open_rollout, step_lines
from segue.stores.codex.steps import StepBuilder, step_values
from segue.stores.text import open_regular

SPLIT_MIN = 32 * 1024 * 1024
WARM = 2 * 1024 * 1024  # bytes the child reads before the split to reach the state: several turns
CONTEXT_BACK = 64 * 1024 * 1024  # how far back the child looks for the context of a turn it starts inside
_COUNTERS = ("lines", "known", "bad_args", "big_skipped")


def line_start(path: str, at: int) -> int:
    """The offset of the first line that starts at or after `at` (the file's size when none does)."""
    if at <= 0:
        return 0
    with open_regular(path) as f:
        f.seek(at - 1)
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                return f.tell()
            i = chunk.find(b"\n")
            if i >= 0:
                return f.tell() - len(chunk) + i + 1


_TURN = b'"type":"turn_context"'


def turn_start(path: str, before: int, lowest: int) -> int | None:
    """The start of the last line starting in [`lowest`, `before`) that is a `turn_context` record as Codex
    writes it (the type within the line's first 96 bytes, the line starting with its timestamp), or None."""
    hi = before
    with open_regular(path) as f:
        while hi > lowest:
            lo = max(lowest, hi - (1 << 20))
            pad = min(lo, 128)  # bytes before the window: a match's line start is within 96 bytes of it
            f.seek(lo - pad)
            buf = f.read(pad + (hi - lo) + 96 + len(_TURN))
            end = len(buf)
            while (k := buf.rfind(_TURN, pad, end)) >= 0:
                end = k
                nl = buf.rfind(b"\n", max(0, k - 96), k)
                if nl < 0 and (lo - pad > 0 or k >= 96):
                    continue  # no line start within 96 bytes before it: not an envelope's type
                ls = nl + 1
                start = lo - pad + ls
                if lowest <= start < before and buf.startswith(b'{"timestamp":"', ls):
                    return start
            hi = lo
    return None


def plan(path: str, size: int) -> tuple[int, int] | None:
    """(child's start, split) for a file of `size` bytes, or None (one pass). The child reads more than this
    process (its warm-up), and this one also folds the steps: the split is a little past the middle. The
    child starts at the last turn's start before the split within `WARM`…`size // 4` bytes of it (a new turn
    clears most state), else `WARM` bytes before it."""
    if size < SPLIT_MIN:
        return None
    split = line_start(path, (size + WARM) // 2)
    if split >= size:
        return None
    start = turn_start(path, split - WARM // 2, max(0, split - size // 4))
    if start is None:
        start = line_start(path, split - WARM)
    if not 0 < start < split:
        return None
    return start, split


def key_note(key: Any) -> bytes:
    """A digest of a state key, sent by the child as soon as it reaches the split: a parent whose own key's
    digest differs stops the child at once instead of waiting for its half (repr: equal keys of these plain
    values give equal text; a collision or a -0.0 only costs the early answer, `agrees` decides)."""
    return blake2b(repr(key).encode("utf-8", "surrogatepass"), digest_size=alongside.NOTE).digest()


def _second_half(path: str, cwd: str | None, recent: int, start: int, split: int,
                 note: Callable[[bytes], None]) -> Any:
    """The child's work: from `start`, the state key at `split` (noted at once), then the steps after it (with
    their outputs decoded as `finish` would), and what the counters and stats gained after it."""
    stats = ReadStats()
    b = StepBuilder(cwd, fast=True, recent=recent)
    # (none needed when the child starts at a turn's context line itself)
    here = turn_start(path, start + 1, start) == start
    ctx = None if here else turn_start(path, start, max(0, start - CONTEXT_BACK))
    with open_rollout(path) as f:
        if ctx is not None:  # the turn's context (its cwd) when the child starts inside a turn
            f.seek(ctx)
            for _ in b.feed_raw(f.readline(1 << 20), True, ReadStats()):
                pass
        f.seek(start)
        for _ in step_lines(f, stats, b.feed_raw, split - start):
            pass  # warm-up: the state changes as lines are fed, the steps are the first half's
        if f.tell() != split:
            return None
        key = b.state_key()
        note(key_note(key))
        done = sorted(b.done)
        b.done = asked = _Asked(b)
        base = [getattr(b, c) for c in _COUNTERS]
        later0, problems0, damaged0, read0 = b.later_added, len(stats.problems), stats.damaged_lines, stats.bytes_read
        steps = list(step_lines(f, stats, b.feed_raw))
        steps.extend(b.end_steps())
        b.decode_later()
        for s in steps[:-recent] if recent else steps:
            s.output = None  # a brief reads outputs on the last `recent` steps only (`Reader.brief_steps`)
        gained = [getattr(b, c) - v for c, v in zip(_COUNTERS, base, strict=True)]
        return (key, done, sorted(asked.asked), [step_values(s) for s in steps], gained,
                b.later_added - later0, stats.problems[problems0:], stats.damaged_lines - damaged0,
                stats.bytes_read - read0)


def steps(path: str, cwd: str | None, stats: ReadStats, recent: int) -> Iterator[Step] | None:
    """The steps of the rollout at `path` read in two processes, or None (read it in one pass: too small, or
    no fork)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    where = plan(path, size)
    if where is None:
        return None
    start, split = where
    child = alongside.start_noted(lambda note: _second_half(path, cwd, recent, start, split, note))
    if child is None:
        return None
    return _joined(path, cwd, stats, recent, split, child)


def _joined(path: str, cwd: str | None, stats: ReadStats, recent: int, split: int, child: alongside.Child
            ) -> Iterator[Step]:
    b = StepBuilder(cwd, fast=True, recent=recent)
    got: Any = None
    try:
        with open_rollout(path) as f:
            yield from step_lines(f, stats, b.feed_raw, split)
            if f.tell() == split and child.note() == key_note(b.state_key()):
                got = child.result()
            else:
                child.stop()  # its state at the split is not this one's: its half would not be taken
            if agrees(got, b):
                _key, _done, _asked, values, counters, later_added, problems, damaged, read = got
                got = None
                for s in values:
                    yield Step(*s)
                for name, n in zip(_COUNTERS, counters, strict=True):
                    setattr(b, name, getattr(b, name) + n)
                stats.problems.extend(problems)
                stats.damaged_lines += damaged
                stats.bytes_read += read
                b.report(stats)
                # the outputs of the last `recent` command items: the child's, then this half's for the rest
                b.decode_later(max(0, recent - later_added))
                return
            got = None
            yield from step_lines(f, stats, b.feed_raw)  # the one-pass read of the second half
        yield from b.finish(stats)
    finally:
        child.stop()  # (when the consumer stopped early or reading failed; else a no-op)


def agrees(got: Any, b: StepBuilder) -> bool:
    """Is the child's result whole, and its builder's state at the split this process's? The settled call ids
    may differ where the second half never asks about them (a turn begun before the child's start: this
    process settled calls the child never saw) up to the first turn start after the split, which clears them."""
    if not (isinstance(got, tuple) and len(got) == 9 and got[0] == b.state_key()):
        return False
    _key, done, asked = got[:3]
    return not (set(done) ^ b.done) & set(asked)


class _Asked(set):  # type: ignore[type-arg]
    """The child's settled call ids after the split, noting which ids the builder asks about until a turn start
    clears them: from then on both processes hold the same, and the builder gets a plain set back."""

    def __init__(self, builder: StepBuilder) -> None:
        super().__init__(builder.done)
        self.builder = builder
        self.asked: set[str] = set()

    def __contains__(self, x: object) -> bool:
        self.asked.add(x)  # type: ignore[arg-type]
        return super().__contains__(x)

    def clear(self) -> None:
        super().clear()
        self.builder.done = set()
