"""What each reader costs in a cold listing, before and after a change, paired: per runtime, the CPU of
`Reader.summarize` (`summarize_delta` with no previous summaries where the reader has one, as the listing
calls it) over every source (best of `--runs` passes) and the bytes it reads (`rchar`) per session
file of that runtime (as `bench.run` counts them: `files.txt` lines per runtime).

    python -m bench.readers_paired --corpus /tmp/segue-bench/n1600-s1-b200-c20-v4 --base /work/base15/server \
        [--runs 5] [--runtime gemini]

Base and new alternate pass by pass in separate child processes (`PYTHONPATH` = the server tree), so what the
machine's load does to one side it does to the other. Also reports whether both sides gave the same summaries.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.run import _files_per_runtime

HERE = Path(__file__).resolve().parent
NEW_SERVER = HERE.parent / "server"

_CHILD = r"""
import hashlib, json, sys, time
from pathlib import Path
from segue.listing import reader_for
from segue.stores import RUNTIMES
from segue.stores.base import Env
def rchar():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
home, only = Path(sys.argv[1]), sys.argv[2:]
env = Env(home=home, environ={"HOME": str(home)})
out = {}
for rt in RUNTIMES:
    if only and rt not in only:
        continue
    r = reader_for(rt, env)
    srcs = list(r.sources())
    sessions, errors = [], 0
    c0, t0 = rchar(), time.process_time()
    for src in srcs:
        try:  # as the listing reads a source it has no previous summaries of
            delta = getattr(r, "summarize_delta", None)
            sessions += delta(src, None, None)[0] if delta else r.summarize(src)
        except Exception:
            errors += 1
    cpu, read = time.process_time() - t0, rchar() - c0
    digest = hashlib.sha256(json.dumps([s.to_cache() if hasattr(s, "to_cache") else repr(s) for s in sessions],
                                       sort_keys=True, default=repr).encode()).hexdigest()
    out[rt] = {"sessions": len(sessions), "sources": len(srcs), "cpu": cpu, "rchar": read, "errors": errors,
               "digest": digest}
print(json.dumps(out))
"""


# the children's bytecode, outside the trees they run (a tree without `__pycache__` would compile every run)
_PYCACHE = tempfile.mkdtemp(prefix="segue-bench-pyc-")
atexit.register(shutil.rmtree, _PYCACHE, True)


def _child(server: Path, home: Path, only: list[str]) -> dict[str, Any]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "TZ": "UTC",
           "PYTHONPYCACHEPREFIX": _PYCACHE, "PYTHONPATH": str(server), "HOME": str(home)}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(home), *only], check=True, capture_output=True,
                         env=env).stdout
    return json.loads(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--base", required=True, type=Path, help="the server/ tree to compare with")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--runtime", action="append", default=[])
    a = ap.parse_args(argv)
    home = a.corpus / "home"
    files = _files_per_runtime(a.corpus / "files.txt")
    sides = {"base": a.base.resolve(), "new": NEW_SERVER}
    got: dict[str, list[dict[str, Any]]] = {"base": [], "new": []}
    for i in range(a.runs):
        for side in (["base", "new"] if i % 2 == 0 else ["new", "base"]):
            got[side].append(_child(sides[side], home, a.runtime))
    print(f"load {os.getloadavg()[0]:.1f}; {a.runs} passes per side; CPU = best pass")
    print("| runtime | sessions | summarize ms base → new | KiB read per session file base → new | same |")
    print("|---|---|---|---|---|")
    same_all = True
    for rt in got["new"][0]:
        b, n = got["base"], got["new"]
        nf = max(1, files.get(rt, 0) or n[0][rt]["sources"])
        same = b[0][rt]["digest"] == n[0][rt]["digest"]
        same_all &= same
        print(f"| {rt} | {n[0][rt]['sessions']} | {1e3 * min(p[rt]['cpu'] for p in b):.0f} → "
              f"{1e3 * min(p[rt]['cpu'] for p in n):.0f} | {b[0][rt]['rchar'] / nf / 1024:.1f} → "
              f"{n[0][rt]['rchar'] / nf / 1024:.1f} | {same} |")
    tot_files = max(1, sum(files.values()))
    for side in ("base", "new"):
        total = sum(v["rchar"] for v in got[side][0].values())
        print(f"{side}: {total / tot_files / 1024:.1f} KiB per session file over the runtimes measured")
    return 0 if same_all else 1


if __name__ == "__main__":
    sys.exit(main())
