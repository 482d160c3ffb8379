"""A yes/no check run in a forked child while this process goes on (a CLI query's freshness check beside its query).

The freshness check of a warm index is ~30-50 ms of stats, and a common word's query as long: in one process they
add up, on two cores they need not. The child only calls `check` (stats and small reads: never the parent's SQLite
connection, which must not be used across a fork) and writes one byte; any failure in it is a "no". Where a fork
is not safe or possible (not Linux, another thread running, fork or pipe refused) nothing starts and the caller
runs the check itself. SEGUE_SEARCH_ALONGSIDE=0 never forks.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_ALONGSIDE", "1") != "0"


def start(check: Callable[[], bool]) -> Callable[[], bool] | None:
    """check() begun in a child; returns the wait for its verdict (False on any failure), or None (not started)."""
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
    if pid == 0:  # the child: the check, one byte, and out without flushing or running the parent's exit handlers
        ok = False
        try:
            os.close(r)
            ok = check() is True
        except BaseException:  # a child must reach _exit whatever happened
            ok = False
        finally:
            try:
                os.write(w, b"1" if ok else b"0")
            finally:
                os._exit(0)
    os.close(w)

    def wait() -> bool:
        try:
            got = os.read(r, 1)  # b"" when the child died without a word (a signal): a "no"
        finally:
            os.close(r)
            _reap(pid)
        return got == b"1"

    return wait


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):  # reaped already (a SIGCHLD handler of an embedding program)
        os.waitpid(pid, 0)
