"""Whole-process measurements: wall time, CPU time, peak RSS and bytes read of one child process.

The child is reaped in two steps: `waitid(WNOWAIT)` leaves it a zombie whose `/proc/<pid>/io` still holds its
final I/O counters (`rchar`: bytes asked of read(); `read_bytes`: bytes fetched from storage), then `wait4`
returns its rusage (`ru_maxrss` = peak RSS).

Linux carries the parent's memory high-water mark into a child's `ru_maxrss` across fork and exec, so a
child of the (big) benchmark process would report the benchmark's own peak. Children are therefore started
by `Spawner`, a small helper process (`python -m bench.proc`): their peak RSS reads exactly above its
~14 MB.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Run:
    wall: float  # seconds, start of exec to exit
    cpu: float  # user + system seconds
    rss_mb: float  # peak resident set size, MB (10^6 bytes)
    rchar: int
    read_bytes: int
    rc: int
    stdout: bytes = b""
    stderr: str = ""
    # sampled from /proc while they ran (`_Processes`): the child's own peak RSS (MB; `rss_mb` is the highest
    # of it and its children's, as wait4 reports it) and that of every process it started (its workers)
    main_rss_mb: float = float("nan")
    workers_rss_mb: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("stdout")
        d["stderr"] = self.stderr[-400:]
        return d


def _io(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k.strip()] = int(v)
    except (OSError, ValueError):
        pass
    return out


class _Processes:
    """Samples the peak RSS (`VmHWM`) of a process and of every descendant while they run: wait4's
    `ru_maxrss` is the highest of the child's and of the children it reaped (its workers), so it does not say
    which process it was. VmHWM only grows, so the last sample of a process is its peak up to the last few
    milliseconds of its life (in which a pool's worker only waits for its shutdown)."""

    INTERVAL = 0.005

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peaks: dict[int, int] = {}  # pid: kB
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _children(self, pid: int) -> list[int]:
        out: list[int] = []
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            pass
        return out

    def _run(self) -> None:
        while not self._stop.wait(self.INTERVAL):
            todo = [self.pid]
            while todo:
                c = todo.pop()
                kb = status_kb(c)
                if kb is not None and kb > self.peaks.get(c, 0):
                    self.peaks[c] = kb
                todo += self._children(c)

    def stop(self) -> tuple[float, list[float]]:
        """(the process's own peak, its descendants' peaks) in MB."""
        self._stop.set()
        self._thread.join()
        main = self.peaks.pop(self.pid, None)
        return (main * 1024 / 1e6 if main else float("nan"),
                [kb * 1024 / 1e6 for _, kb in sorted(self.peaks.items())])


def run_direct(argv: Sequence[str], env: Mapping[str, str], stdout_path: str, *, cwd: str | None = None,
               timeout: float = 1800) -> Run:
    """Run one process to completion and measure it; its stdout goes to `stdout_path`."""
    with tempfile.TemporaryFile() as err, open(stdout_path, "wb") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        watchdog = threading.Timer(timeout, p.kill)  # a hung child must not hang the benchmark
        watchdog.start()
        sampled = _Processes(p.pid)
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        wall = time.perf_counter() - t0
        watchdog.cancel()
        main_rss, workers = sampled.stop()
        io = _io(p.pid)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read()[-8000:].decode("utf-8", "replace")
    return Run(wall=wall, cpu=ru.ru_utime + ru.ru_stime, rss_mb=ru.ru_maxrss * 1024 / 1e6,
               rchar=io.get("rchar", -1), read_bytes=io.get("read_bytes", -1), rc=p.returncode, stderr=stderr,
               main_rss_mb=main_rss, workers_rss_mb=workers)


class Spawner:
    """Runs measured processes from a small helper process (see the module docstring)."""

    def __init__(self, python: str, repo: str, scratch: str) -> None:
        self.scratch = scratch
        os.makedirs(scratch, exist_ok=True)
        self.p = subprocess.Popen([python, "-m", "bench.proc"], cwd=repo, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env={"PYTHONPATH": repo, "PATH": os.environ.get("PATH", "")})
        self.n = 0

    def run(self, argv: Sequence[str], env: Mapping[str, str], *, cwd: str | None = None,
            keep_stdout: bool = True) -> Run:
        assert self.p.stdin is not None and self.p.stdout is not None
        self.n += 1
        out = os.path.join(self.scratch, f"stdout-{self.n}")
        req = {"argv": list(argv), "env": dict(env), "cwd": cwd, "stdout": out}
        self.p.stdin.write((json.dumps(req) + "\n").encode())
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("the spawner helper exited")
        r = Run(**json.loads(line))
        if keep_stdout:
            with open(out, "rb") as f:
                r.stdout = f.read()
        os.unlink(out)
        return r

    def close(self) -> None:
        if self.p.stdin:
            self.p.stdin.close()
        self.p.wait(timeout=30)
        with contextlib.suppress(OSError):
            os.rmdir(self.scratch)


def _serve() -> None:
    """The helper's loop: one JSON request per line in, one measured Run per line out."""
    for line in sys.stdin:
        req = json.loads(line)
        r = run_direct(req["argv"], req["env"], req["stdout"], cwd=req.get("cwd"))
        d = asdict(r)
        d.pop("stdout")
        sys.stdout.write(json.dumps(d) + "\n")
        sys.stdout.flush()


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def status_kb(pid: int, key: str = "VmHWM") -> int | None:
    """A `/proc/<pid>/status` field in kB (VmHWM: peak RSS so far; VmRSS: now)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


# ---------------------------------------------------------------------------------------------------------
# Page cache control for disk-cold runs


def cold_method(requested: str) -> str:
    """'fadvise' (POSIX_FADV_DONTNEED on the corpus files only; directory metadata stays cached) unless
    drop_caches is asked for by name. `auto` never writes /proc/sys/vm/drop_caches: on a shared machine that
    empties everyone's page cache."""
    if requested != "auto":
        return requested
    return "fadvise" if hasattr(os, "posix_fadvise") else "none"


def evict(method: str, roots: Sequence[str]) -> None:
    if method == "none":
        return
    os.sync()
    if method == "drop_caches":
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                path = os.path.join(dirpath, name)
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                except OSError:
                    continue
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)


if __name__ == "__main__":
    _serve()
