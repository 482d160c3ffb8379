"""Paired CLI and server search figures: another checkout's `server/` against this one on a warm index.

    python -m bench.search_paired --home CORPUS/home --state STATE --before /work/base/server [--runs 5]

Per query kind (rare word, two words, phrase, common, very common, filters), each round runs `python -c pass`
(the floor), the old and the new `segue search … --json` (and the table), alternating which goes first, and
compares their stdout byte for byte. Prints median CPU (user + system) and wall per kind, and the load.
Nothing is written but the pycache under --pycache (the index is warm: both sides answer from it).
With --server, the same cases as `segue/search` requests on two live language servers (old, new), alternating,
median round trip of --server-runs each, results compared.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES: list[tuple[str, list[str]]] = [
    ("rare word", ["cache18"]),
    ("two words", ["migrate", "middleware"]),
    ("phrase", ['"the parser"']),
    ("common word", ["cargo"]),
    ("very common word", ["test"]),
    ("two very common words", ["the", "parser"]),
    ("no match", ["xylophonist"]),
    ("--runtime", ["cargo", "--runtime", "claude"]),
    ("--in commands", ["test", "--in", "commands"]),
    ("--since", ["the", "parser", "--since", "2026-06-01"]),
    ("--dir", ["cargo", "--dir", "/home/me/src"]),
    ("--dir, very common word", ["test", "--dir", "/home/me/work"]),
    ("table (common)", ["test", "!table"]),
]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd: list[str], env: dict[str, str]) -> tuple[bytes, float, float]:
    c0, t0 = _cpu(), time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, check=False)
    return p.stdout + b"\0rc=%d" % p.returncode, time.perf_counter() - t0, _cpu() - c0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.search_paired", description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--before", required=True, help="the other checkout's server/ directory")
    ap.add_argument("--before-state", help="its own state directory (an index of another schema), else --state")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pycache", default="/tmp/segue-bench-pycache-paired")
    ap.add_argument("--only", help="run only the cases whose name contains this")
    ap.add_argument("--server", action="store_true", help="segue/search round trips on live servers instead")
    ap.add_argument("--server-runs", type=int, default=15)
    a = ap.parse_args(argv)
    sides = {"before": str(Path(a.before).resolve()), "after": str(REPO / "server")}
    envs = {}
    for side, path in sides.items():
        state = a.before_state if side == "before" and a.before_state else a.state
        e = dict(os.environ, HOME=a.home, SEGUE_HOME=state, PYTHONPATH=path,
                 PYTHONPYCACHEPREFIX=str(Path(a.pycache) / side))
        e.pop("PYTHONDONTWRITEBYTECODE", None)
        envs[side] = e
    py = sys.executable
    cases = [c for c in CASES if not a.only or a.only in c[0]]
    if a.server:
        return _server(a, envs, cases)
    rows: dict[str, dict[str, list[tuple[float, float]]]] = {n: {"floor": [], "before": [], "after": []}
                                                            for n, _ in cases}
    diffs: list[str] = []
    loads = [os.getloadavg()[0]]
    for _name, words in cases:  # one warm-up each (bytecode, page cache)
        for side in sides:
            run(_cmd(py, words), envs[side])
    for r in range(a.runs):
        for name, words in cases:
            out: dict[str, bytes] = {}
            order = ("before", "after") if r % 2 == 0 else ("after", "before")
            _o, w, c = run([py, "-c", "pass"], envs["after"])
            rows[name]["floor"].append((c, w))
            for side in order:
                out[side], w, c = run(_cmd(py, words), envs[side])
                rows[name][side].append((c, w))
            if out["before"] != out["after"]:
                diffs.append(f"{name} (round {r})")
        loads.append(os.getloadavg()[0])
    print(f"{a.runs} rounds, load {min(loads):.1f}-{max(loads):.1f}; CPU / wall ms, medians")
    print(f"{'case':24} {'floor':>11} {'before':>11} {'after':>11}  after/before CPU")
    for name, _w in cases:
        med = {k: (1000 * statistics.median(x[0] for x in v), 1000 * statistics.median(x[1] for x in v))
               for k, v in rows[name].items()}
        print(f"{name:24} " + " ".join(f"{med[k][0]:4.0f} /{med[k][1]:4.0f}" for k in ("floor", "before", "after"))
              + f"  {med['after'][0] / max(med['before'][0], 1e-9):.2f}")
    print("byte-identical: " + ("all" if not diffs else "NO: " + ", ".join(diffs)))
    return 1 if diffs else 0


def _params(words: list[str]) -> dict[str, object]:
    """The CLI words as segue/search params."""
    p: dict[str, object] = {}
    q: list[str] = []
    it = iter(w for w in words if w != "!table")
    for w in it:
        if w in ("--runtime", "--in"):
            p.setdefault(w[2:], []).append(next(it))  # type: ignore[union-attr]
        elif w in ("--dir", "--since"):
            p[w[2:]] = next(it)
        else:
            q.append(w)
    p["query"] = " ".join(q)
    return p


def _server(a: argparse.Namespace, envs: dict[str, dict[str, str]], cases: list[tuple[str, list[str]]]) -> int:
    sys.path.insert(0, str(REPO))
    from bench.lsp_client import Client

    clients = {side: Client([sys.executable, "-m", "segue", "serve"], env) for side, env in envs.items()}
    try:
        for c in clients.values():
            c.initialize(a.state)
        times: dict[str, dict[str, list[float]]] = {n: {s: [] for s in clients} for n, _ in cases}
        diffs = []
        loads = [os.getloadavg()[0]]
        for name, words in cases:
            params = _params(words)
            got = {side: c.request("segue/search", params)[0] for side, c in clients.items()}  # warm-up
            if got["before"] != got["after"]:
                diffs.append(name)
            for r in range(a.server_runs):
                for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
                    times[name][side].append(clients[side].request("segue/search", params)[1])
            loads.append(os.getloadavg()[0])
    finally:
        for c in clients.values():
            c.close()
    print(f"segue/search round trips, {a.server_runs} each, load {min(loads):.1f}-{max(loads):.1f}; medians ms")
    for name, _w in cases:
        b, f = (1000 * statistics.median(times[name][s]) for s in ("before", "after"))
        print(f"{name:24} before {b:6.1f}  after {f:6.1f}  ({f / b:.2f})")
    print("same results: " + ("all" if not diffs else "NO: " + ", ".join(diffs)))
    return 1 if diffs else 0


def _cmd(py: str, words: list[str]) -> list[str]:
    table = "!table" in words
    words = [w for w in words if w != "!table"]
    return [py, "-m", "segue", "search", *words, *([] if table else ["--json"])]


if __name__ == "__main__":
    raise SystemExit(main())
