"""The CPU cost per session of a cold listing, before and after a change, paired (issue 16's "no Segue cache"
and "32,000 sessions: cold" rows).

    python -m bench.bench_summary --corpus /tmp/segue-bench/n1600-s1-b200-c20-v4 --base /tmp/old/server \
        [--corpus …] [--runs 5] [--out DIR]

`--base` is the `server/` tree of the code to compare with (`git archive <commit> server | tar -x -C DIR`);
the other side is this checkout's `server/`. Per corpus, in one go:
- in-process, per runtime: µs of CPU per session to summarise every source (`Reader.summarize`) and to
  redact the summaries (`redact_summary`), best of `--runs` passes, base and new alternating;
- `segue list --json` cold (fresh SEGUE_HOME, SEGUE_WARM=0, page cache warm), wall and CPU (workers
  included), base and new interleaved with the head+tail floor (`bench.floor headtail`, 16 KiB) in the
  same round; medians and ratios to the floor's wall;
- whether both sides print byte-identical listings.
Children run with their bytecode in a temporary PYTHONPYCACHEPREFIX (no `__pycache__` left in a checkout) and this
Python.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NEW_SERVER = HERE.parent / "server"

# In a child whose PYTHONPATH is the server tree under test: per runtime, summarise and redact every session.
_INPROC = r"""
import json, sys, time
from pathlib import Path
from segue.listing import reader_for
from segue.redact import redact_summary
from segue.redact.summary import summary_redactor
from segue.stores import RUNTIMES
from segue.stores.base import Env
home, runs = Path(sys.argv[1]), int(sys.argv[2])
env = Env(home=home, environ={"HOME": str(home)})
summary_redactor()
out = {}
for rt in RUNTIMES:
    best_sum = best_red = None
    n = 0
    for _ in range(runs):
        r = reader_for(rt, env)
        srcs = list(r.sources())
        t0 = time.process_time()
        sessions = []
        for src in srcs:
            try:
                sessions += r.summarize(src)
            except Exception:
                pass
        import segue.redact.summary as S
        getattr(S, "_CLEAN", {}).clear()  # each pass redacts as a cold listing does: texts not seen before
        t1 = time.process_time()
        for s in sessions:
            redact_summary(s)
        t2 = time.process_time()
        n = len(sessions)
        best_sum = t1 - t0 if best_sum is None else min(best_sum, t1 - t0)
        best_red = t2 - t1 if best_red is None else min(best_red, t2 - t1)
    out[rt] = {"sessions": n, "summarize_us": 1e6 * best_sum / max(1, n), "redact_us": 1e6 * best_red / max(1, n)}
print(json.dumps(out))
"""


# the children's bytecode, outside the trees they run (a tree without `__pycache__` would compile every run)
_PYCACHE = tempfile.mkdtemp(prefix="segue-bench-pyc-")
atexit.register(shutil.rmtree, _PYCACHE, True)


def _env(extra: dict[str, str]) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "TZ": "UTC",
            "PYTHONPYCACHEPREFIX": _PYCACHE, **extra}


def _timed(argv: list[str], env: dict[str, str], stdout: Any, cwd: str | None = None) -> tuple[float, float]:
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=stdout, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                         cwd=cwd)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv} failed")
    return wall, ru.ru_utime + ru.ru_stime


def inproc(server: Path, home: Path, runs: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _INPROC, str(home), str(runs)], check=True, capture_output=True,
                         env=_env({"PYTHONPATH": str(server), "HOME": str(home)})).stdout
    return json.loads(out)


def cold_list(server: Path, home: Path, out_path: Path) -> tuple[float, float]:
    state = tempfile.mkdtemp(prefix="bench-summary-state-")
    try:
        with open(out_path, "wb") as f:
            return _timed([sys.executable, "-m", "segue", "list", "--json"],
                          _env({"PYTHONPATH": str(server), "HOME": str(home), "SEGUE_HOME": state,
                                "SEGUE_WARM": "0"}), f)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def floor(corpus: Path) -> tuple[float, float]:
    return _timed([sys.executable, "-m", "bench.floor", "headtail", str(corpus / "files.txt"), "16384"],
                  _env({"PYTHONPATH": str(HERE.parent)}), subprocess.DEVNULL, cwd=str(HERE.parent))


def bench_corpus(corpus: Path, base: Path, runs: int, work: Path) -> dict[str, Any]:
    home = corpus / "home"
    sides = {"base": base, "new": NEW_SERVER}
    per: dict[str, list[dict[str, Any]]] = {"base": [], "new": []}
    for _ in range(2):  # alternating: what the machine's load does to one side it does to the other
        for side, server in sides.items():
            per[side].append(inproc(server, home, runs))
    runtime = {}
    for rt in per["new"][0]:
        row: dict[str, Any] = {"sessions": per["new"][0][rt]["sessions"]}
        for side in sides:
            for k in ("summarize_us", "redact_us"):
                row[f"{side}_{k}"] = round(min(p[rt][k] for p in per[side]), 1)
        runtime[rt] = row
    rounds = []
    floor(corpus)  # the page cache filled before the first round
    for i in range(runs):
        order = ["base", "new"] if i % 2 == 0 else ["new", "base"]
        r: dict[str, Any] = {"floor": floor(corpus)}
        for side in order:
            r[side] = cold_list(sides[side], home, work / f"{corpus.name}-{side}.json")
        r["load"] = os.getloadavg()[0]
        rounds.append(r)
        print(f"  {corpus.name} round {i + 1}: floor {r['floor'][0]:.2f} s; "
              + "; ".join(f"{s} wall {r[s][0]:.2f} s cpu {r[s][1]:.2f} s" for s in sides)
              + f"; load {r['load']:.1f}", file=sys.stderr, flush=True)
    same = (work / f"{corpus.name}-base.json").read_bytes() == (work / f"{corpus.name}-new.json").read_bytes()

    def med(side: str, k: int) -> float:
        return round(statistics.median(r[side][k] for r in rounds), 3)

    fl = med("floor", 0)
    cold = {side: {"wall": med(side, 0), "cpu": med(side, 1), "wall_vs_floor": round(med(side, 0) / fl, 2),
                   "cpu_us_per_session": round(1e6 * med(side, 1) / sum(v["sessions"] for v in runtime.values()), 1)}
            for side in sides}
    paired_cpu = statistics.median(r["new"][1] / r["base"][1] for r in rounds)
    return {"corpus": str(corpus), "runtime": runtime, "floor_wall": fl, "floor_cpu": med("floor", 1),
            "cold_list": cold, "paired_cpu_new_over_base": round(paired_cpu, 3), "identical_output": same,
            "load": [round(r["load"], 1) for r in rounds]}


def report(results: list[dict[str, Any]]) -> str:
    lines = []
    for res in results:
        lines.append(f"## {Path(res['corpus']).name}  (load {res['load']})")
        lines.append("| runtime | sessions | summarize µs base → new | redact µs base → new |")
        lines.append("|---|---|---|---|")
        for rt, row in res["runtime"].items():
            lines.append(f"| {rt} | {row['sessions']} | {row['base_summarize_us']} → {row['new_summarize_us']} | "
                         f"{row['base_redact_us']} → {row['new_redact_us']} |")
        c = res["cold_list"]
        lines.append("")
        lines.append(f"cold `segue list --json`: floor {res['floor_wall']} s wall / {res['floor_cpu']} s cpu; "
                     f"base {c['base']['wall']} s wall ({c['base']['wall_vs_floor']}× floor), {c['base']['cpu']} s cpu "
                     f"({c['base']['cpu_us_per_session']} µs/session); new {c['new']['wall']} s wall "
                     f"({c['new']['wall_vs_floor']}× floor), {c['new']['cpu']} s cpu ({c['new']['cpu_us_per_session']} "
                     f"µs/session); paired cpu new/base {res['paired_cpu_new_over_base']}; "
                     f"identical output: {res['identical_output']}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", required=True, type=Path)
    ap.add_argument("--base", required=True, type=Path, help="the server/ tree to compare with")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="write results.json and results.md here")
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-summary-"))
    try:
        results = [bench_corpus(c.resolve(), a.base.resolve(), a.runs, work) for c in a.corpus]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = report(results)
    print(text)
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "results.json").write_text(json.dumps(results, indent=1))
        (a.out / "results.md").write_text(text + "\n")
    return 0 if all(r["identical_output"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
