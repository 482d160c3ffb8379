"""Cold `segue list --json` before and after a change, paired: CPU, wall, the main process's and the workers'
peak RSS, with the head+tail floor measured in the same round (issue 16's "no Segue cache" and "32,000
sessions: cold" rows, and their ≤ 50 MB per process).

    python -m bench.cold_paired --corpus /tmp/segue-bench/n1600-s1-b200-c20-v4 --base /work/base/server \
        [--runs 5] [--args "list --json --all"]

Each run gets a fresh SEGUE_HOME (no index, no warm entry: the run keeps one, as a user's first run does);
the page cache is left warm, and both sides' bytecode is compiled once before the rounds (into this run's own
PYTHONPYCACHEPREFIX).
Base and new alternate in each round (what the load does to one it does to the other); medians are printed
beside the floor's, and whether both sides printed the same bytes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.proc import Run, run_direct

HERE = Path(__file__).resolve().parent
NEW_SERVER = HERE.parent / "server"


PYCACHE: list[str] = []  # this run's bytecode directory (set in main)


def _env(extra: dict[str, str]) -> dict[str, str]:
    # Both sides read compiled bytecode, kept outside the trees (none left in a checkout): without it a side whose
    # tree has no `__pycache__` (a `git archive` copy) compiled its modules on every run, ~10 % of a cold listing's
    # CPU, against a checkout that had some (stop 43)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "TZ": "UTC", **extra}
    if PYCACHE:
        env["PYTHONPYCACHEPREFIX"] = PYCACHE[0]
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def cold(server: Path, home: Path, args: list[str], out: Path, extra: dict[str, str]) -> Run:
    state = tempfile.mkdtemp(prefix="bench-cold-state-")
    try:
        r = run_direct([sys.executable, "-m", "segue", *args],
                       _env({"PYTHONPATH": str(server), "HOME": str(home), "SEGUE_HOME": state, **extra}), str(out))
        if r.rc != 0:
            raise SystemExit(f"segue failed ({r.rc}): {r.stderr}")
        return r
    finally:
        shutil.rmtree(state, ignore_errors=True)


def floor(corpus: Path, out: Path) -> Run:
    return run_direct([sys.executable, "-m", "bench.floor", "headtail", str(corpus / "files.txt"), "16384"],
                      _env({"PYTHONPATH": str(HERE.parent)}), str(out), cwd=str(HERE.parent))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--base", required=True, type=Path, help="the server/ tree to compare with")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--args", default="list --json", help="the segue arguments (default: list --json)")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for both sides (e.g. SEGUE_WARM=0)")
    a = ap.parse_args(argv)
    sides = {"base": a.base.resolve(), "new": NEW_SERVER}
    home = a.corpus.resolve() / "home"
    args = a.args.split()
    extra = dict(e.split("=", 1) for e in a.env)
    work = Path(tempfile.mkdtemp(prefix="bench-cold-"))
    empty = work / "empty-home"  # the start-up baseline bench.run subtracts from the bytes read
    empty.mkdir()
    rows: list[dict[str, Any]] = []
    PYCACHE[:] = [str(work / "pycache")]
    try:
        floor(a.corpus, work / "floor.out")  # the page cache filled before the first round
        for side in sides:  # each side's bytecode written once, before anything is measured
            cold(sides[side], empty, args, work / f"{side}-empty.out", extra)
        for i in range(a.runs):
            row: dict[str, Any] = {"floor": floor(a.corpus, work / "floor.out")}
            for side in (["base", "new"] if i % 2 == 0 else ["new", "base"]):
                row[side] = cold(sides[side], home, args, work / f"{side}.out", extra)
                row[f"{side}_empty"] = cold(sides[side], empty, args, work / f"{side}-empty.out", extra)
            row["load"] = os.getloadavg()[0]
            row["same"] = (work / "base.out").read_bytes() == (work / "new.out").read_bytes()
            rows.append(row)
            print(f"round {i + 1}: floor cpu {row['floor'].cpu:.2f} s; "
                  + "; ".join(f"{s} cpu {row[s].cpu:.2f} s wall {row[s].wall:.2f} s main {row[s].main_rss_mb:.1f} MB "
                              f"workers ≤ {max(row[s].workers_rss_mb, default=0):.1f} MB" for s in sides)
                  + f"; same {row['same']}; load {row['load']:.1f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def med(f: Any) -> float:
        return statistics.median(f(r) for r in rows)

    fl_cpu, fl_wall = med(lambda r: r["floor"].cpu), med(lambda r: r["floor"].wall)
    print(f"`segue {a.args}` on {a.corpus.name}, {a.runs} rounds, load {[round(r['load'], 1) for r in rows]}")
    print(f"floor: cpu {fl_cpu:.2f} s, wall {fl_wall:.2f} s")
    for s in sides:
        cpu, wall = med(lambda r, s=s: r[s].cpu), med(lambda r, s=s: r[s].wall)
        print(f"{s}: cpu {cpu:.2f} s ({cpu / fl_cpu:.1f}× floor cpu), wall {wall:.2f} s ({wall / fl_wall:.1f}× floor"
              f" wall), main peak {med(lambda r, s=s: r[s].main_rss_mb):.1f} MB (max "
              f"{max(r[s].main_rss_mb for r in rows):.1f}), workers peak "
              f"{med(lambda r, s=s: max(r[s].workers_rss_mb, default=0)):.1f} MB (max "
              f"{max(max(r[s].workers_rss_mb, default=0) for r in rows):.1f})")
    nfiles = max(1, sum(1 for ln in (a.corpus / "files.txt").read_text().splitlines() if ln.strip()))
    for s in sides:  # as bench.run counts it: rchar of the cold run minus the empty HOME's, over session files
        per = (med(lambda r, s=s: r[s].rchar) - med(lambda r, s=s: r[f"{s}_empty"].rchar)) / nfiles / 1024
        print(f"{s}: {per:.1f} KiB read per session file (rchar − empty HOME's) / {nfiles} files")
    print(f"paired cpu new/base {med(lambda r: r['new'].cpu / r['base'].cpu):.3f}; "
          f"identical output: {all(r['same'] for r in rows)}")
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
