"""Reading CPU of the search build per runtime: `Reader.steps()` (the reference the index is built from) against
the search-only extraction (`segue.search.extract`), over every session of a corpus, in one process.

    python -m bench.bench_search_read --corpus /tmp/segue-bench/n1600-s1-b200-c20-v4 --state STATE [--profile RT]

STATE is a state directory whose listing cache of the corpus is warm (a copy: the listing may write into it).
Prints per runtime: sessions, MB of store files, CPU seconds and µs per MB of each path (each path run twice,
interleaved A B B A, the smaller CPU time of the two).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_search_read")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--profile", help="cProfile the extraction's reading of this runtime (top 25 by tottime)")
    ap.add_argument("--reference", action="store_true", help="with --profile: steps(), not the extraction")
    ap.add_argument("--paths", default="steps,search", help="which paths to time: steps, search")
    a = ap.parse_args(argv)
    from segue.model import ReadStats
    from segue.paths import StateDir
    from segue.search import engine
    from segue.service import Service
    from segue.stores.base import Env

    env = Env(home=Path(a.corpus) / "home", environ={})
    svc = Service(StateDir(Path(a.state)), env=env, environ={})
    sessions = list(svc.raw_listing().sessions)
    by_rt: dict[str, list] = defaultdict(list)
    for s in sessions:
        by_rt[s.runtime].append(s)
    paths = a.paths.split(",")
    from segue.stores.opencode import shared_connections

    scope = shared_connections()  # as the build reads: one connection per database
    scope.__enter__()
    if a.profile:
        import cProfile
        import pstats

        pr = cProfile.Profile()
        pr.enable()
        for s in by_rt[a.profile]:
            for _ in (engine._reference_steps if a.reference else engine._steps)(env, s, ReadStats()):
                pass
        pr.disable()
        pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(25)
        return 0
    print(f"{'runtime':10} {'sessions':>8} {'MB':>8} " + " ".join(f"{p + ' s':>9} {p + ' µs/MB':>12}" for p in paths))
    for rt, ss in sorted(by_rt.items()):
        seen: set[str] = set()
        mb = 0.0
        for s in ss:
            if s.store_path not in seen and os.path.isfile(s.store_path):
                seen.add(s.store_path)
                mb += os.path.getsize(s.store_path) / 1e6
        cpu: dict[str, list[float]] = {p: [] for p in paths}
        for p in [*paths, *reversed(paths)]:  # A B B A: page cache and load hit both alike; the min of each
            c0 = time.process_time()
            for s in ss:
                it = (engine._reference_steps if p == "steps" else engine._steps)(env, s, ReadStats())
                for _ in it:
                    pass
            cpu[p].append(time.process_time() - c0)
        cells = [f"{min(cpu[p]):9.2f} {1e6 * min(cpu[p]) / max(mb, 1e-9):12.0f}" for p in paths]
        print(f"{rt:10} {len(ss):8} {mb:8.1f} " + " ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
