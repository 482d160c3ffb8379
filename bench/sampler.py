"""A wall-clock stack sampler for a whole Python process, every thread (cProfile sees one thread only, and the
language server does its work in worker threads).

    python -m bench.sampler OUT.json [--interval-ms 2] -- -m segue serve
    python -m bench.sampler OUT.json -- -m segue list --json

Runs the module as `__main__` with a daemon thread that records every other thread's stack each interval.
Samples whose innermost frame is a wait (select, lock, queue, sleep) are dropped, so the tables show work.
At exit OUT.json gets the top functions by self samples and by inclusive samples (a function counted once
per stack it appears in).
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
import threading
import time
from collections import Counter
from types import FrameType

_IDLE = {"select", "poll", "wait", "_wait_for_tstate_lock", "sleep", "get", "acquire", "readline", "readinto",
         "_worker", "accept", "recv", "read", "epoll", "run_forever", "_run_once", "_recv_into", "readexactly"}


def _key(f: FrameType) -> str:
    c = f.f_code
    return f"{os.path.basename(c.co_filename)}:{c.co_firstlineno}:{c.co_name}"


class Sampler:
    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.self_: Counter[str] = Counter()  # seconds
        self.incl: Counter[str] = Counter()
        self.samples = 0
        self.idle = 0
        self._stop = threading.Event()
        self.me = 0

    def run(self) -> None:
        self.me = threading.get_ident()
        last = time.perf_counter()
        while not self._stop.wait(self.interval):
            # a busy thread holds the GIL for up to the switch interval, so samples come further apart than
            # asked: each one stands for the time since the last
            now = time.perf_counter()
            dt, last = now - last, now
            for tid, frame in sys._current_frames().items():
                if tid == self.me:
                    continue
                if frame.f_code.co_name in _IDLE:
                    self.idle += 1
                    continue
                self.samples += 1
                self.self_[_key(frame)] += dt
                seen = set()
                f: FrameType | None = frame
                while f is not None:
                    k = _key(f)
                    if k not in seen:
                        seen.add(k)
                        self.incl[k] += dt
                    f = f.f_back

    def dump(self, path: str) -> None:
        self._stop.set()
        out = {"interval_ms": self.interval * 1000, "busy_samples": self.samples, "idle_samples": self.idle,
               "self": [{"function": k, "ms": round(v * 1000, 1)} for k, v in self.self_.most_common(40)],
               "inclusive": [{"function": k, "ms": round(v * 1000, 1)} for k, v in self.incl.most_common(60)]}
        with open(path, "w") as f:
            json.dump(out, f, indent=1)


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv or len(argv) < 4 or argv[argv.index("--") + 1] != "-m":
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    sep = argv.index("--")
    out, opts, target = argv[0], argv[1:sep], argv[sep + 2:]
    interval = float(opts[opts.index("--interval-ms") + 1]) / 1000 if "--interval-ms" in opts else 0.002
    s = Sampler(interval)
    threading.Thread(target=s.run, name="bench-sampler", daemon=True).start()
    atexit.register(s.dump, out)
    time.sleep(0)  # let the sampler start before the module imports
    sys.argv = [target[0], *target[1:]]
    runpy.run_module(target[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
