"""Work run in a forked child while this process goes on: a CLI quick answer's replay of its probe, shared.

A quick answer's freshness check is a stat of every file the last full pass saw (~30-50 ms on 8,000 sessions,
~100-150 ms on 32,000), and a query's ranking can take as long: in one process they add up, on two cores they
need not; nor need the two halves of a big Codex rollout's brief (`stores.codex.halves`). The child only runs
`work` (stats and reads of files it opens itself: never the parent's SQLite connection, which must not be used
across a fork) and writes its marshalled result; any failure in it is no result. Where a fork is
not safe or possible (not Linux, another thread running, fork or pipe refused) nothing starts and the caller does
the work itself. SEGUE_ALONGSIDE=0 never forks.
"""

from __future__ import annotations

import _thread
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def enabled() -> bool:
    return os.environ.get("SEGUE_ALONGSIDE", "1") != "0"


def start(check: Callable[[], bool]) -> Callable[[], bool] | None:
    """check() begun in a child; returns the wait for its verdict (False on any failure), or None (not started)."""
    wait = start_value(lambda: check() is True)
    return None if wait is None else (lambda: wait() is True)


def start_value(work: Callable[[], Any]) -> Callable[[], Any] | None:
    """work() begun in a child; returns the wait for its result (a value marshal can carry; None when the child
    failed or died), or None when nothing was started."""
    child = start_noted(lambda _note: work())
    return None if child is None else child.result


NOTE = 32  # bytes of a child's note: far below a pipe's buffer, so writing it never waits for the parent


class Child:
    """A forked child at work: what it noted early (`note`), its result (`result`), or stopped (`stop`)."""

    def __init__(self, pid: int, r: int) -> None:
        self.pid, self.r = pid, r
        self.done = False

    def note(self) -> bytes | None:
        """The NOTE bytes the child sent with `note(…)` before its result, or None (it died or failed first)."""
        got = b""
        while len(got) < NOTE:
            chunk = os.read(self.r, NOTE - len(got))
            if not chunk:
                break
            got += chunk
        return got if len(got) == NOTE else None

    def result(self) -> Any:
        if self.done:
            return None
        got = bytearray()  # one buffer: a big result is not held twice (chunks, then their join)
        try:
            while chunk := os.read(self.r, 1 << 16):
                got += chunk
        finally:
            self._end()
        if got[:1] != b"1":  # empty when the child died without a word (a signal)
            return None
        try:
            return marshal.loads(memoryview(got)[1:])
        except (ValueError, EOFError, TypeError):
            return None

    def stop(self) -> None:
        """Its result is not wanted: end it now."""
        if not self.done:
            try:  # (no contextlib here, as in `_reap`)  # noqa: SIM105
                os.kill(self.pid, 9)
            except OSError:
                pass
            self._end()

    def _end(self) -> None:
        self.done = True
        os.close(self.r)
        _reap(self.pid)


def start_noted(work: Callable[[Callable[[bytes], None]], Any]) -> Child | None:
    """work(note) begun in a child, where `note(data)` sends NOTE bytes that `Child.note` reads while the work
    goes on: a child that is told to stop early need not be waited for. A
    work that notes nothing is a plain `start_value` (then call `result` only). None when nothing was started."""
    # a fork copies only the calling thread: another one's locks could be held forever in the child
    if not enabled() or sys.platform != "linux" or _thread._count() > 0:
        return None
    try:
        r, w = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the child: the work, its result, and out without flushing or running the parent's exit handlers
        out = b"0"
        try:
            os.close(r)

            def note(data: bytes) -> None:
                if len(data) != NOTE:
                    raise ValueError("a note is NOTE bytes")
                _write_all(w, data)

            out = b"1" + marshal.dumps(work(note))
        except BaseException:  # a child must reach _exit whatever happened
            out = b"0"
        finally:
            try:
                _write_all(w, out)
            finally:
                os._exit(0)
    os.close(w)
    return Child(pid, r)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _reap(pid: int) -> None:
    try:  # (not contextlib.suppress: a warm listing's quick answer does not import contextlib)  # noqa: SIM105
        os.waitpid(pid, 0)
    except ChildProcessError:  # reaped already (a SIGCHLD handler of an embedding program)
        pass
