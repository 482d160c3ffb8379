"""bench.proc measures each process of a run: the child's own peak RSS and that of every worker it starts
(wait4's `ru_maxrss` is only the highest of them, so a big worker would pass for a big main process)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bench.proc import run_direct

_CHILD = """
import os, time
pid = os.fork()
if pid == 0:
    data = bytearray(60 * 1000 * 1000)  # the worker: 60 MB touched
    for i in range(0, len(data), 4096):
        data[i] = 1
    time.sleep(0.3)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_run_direct_reports_the_main_process_and_each_worker_apart(tmp_path: Path) -> None:
    r = run_direct([sys.executable, "-c", _CHILD], {"PATH": os.environ.get("PATH", "")}, str(tmp_path / "out"))
    assert r.rc == 0
    assert len(r.workers_rss_mb) == 1 and r.workers_rss_mb[0] > 55
    assert r.main_rss_mb < 40  # the parent never touched the 60 MB
    assert r.rss_mb >= r.workers_rss_mb[0] - 1  # what wait4 says: the highest of both
