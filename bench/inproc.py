"""In-process figures: where a listing or a brief spends its time, per reader and per phase.

Run by `bench.run` as its own process (so its memory and I/O counters are its own):

    python -m bench.inproc list  HOME STATE [--profile DIR]
    python -m bench.inproc brief HOME STATE REF [--profile DIR]

`list` times, per runtime: discovery (`Reader.sources`, stat only) and summarize (heads and tails) with the
bytes read (`/proc/self/io` rchar) and how many sessions needed a deep read (`locator["read_deep"]`), and the
redaction of the fresh summaries; then the cold scan with worker processes (the CLI's: wall, this process's
and the workers' CPU); then
the cache save, the cache load (SQLite + reviving sessions), a warm stat pass, the `list --json` dump, and
`Service.list_sessions` cold-from-disk-cache and warm-in-memory (the language server's case).
`brief` times `Service.find` (a warm listing), one bare pass of `Reader.steps`, the facts (steps again +
clipping + redaction) and the Markdown render. `--profile` writes cProfile tables per phase into DIR.
Prints one JSON object.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from segue import index
from segue.listing import ListingCache, _summarized, reader_for, scan
from segue.model import ReadStats
from segue.paths import StateDir
from segue.service import Service
from segue.stores import RUNTIMES
from segue.stores.base import Env


def rchar() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return -1


def vmhwm_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e6
    return -1.0


class Profiler:
    def __init__(self, out: str | None) -> None:
        self.out = Path(out) if out else None
        self.tops: dict[str, list[dict[str, Any]]] = {}

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        if self.out is None:
            return fn()
        prof = cProfile.Profile()
        result = prof.runcall(fn)
        self.out.mkdir(parents=True, exist_ok=True)
        buf = io.StringIO()
        st = pstats.Stats(prof, stream=buf)
        st.sort_stats("tottime").print_stats(30)
        st.sort_stats("cumulative").print_stats(30)
        (self.out / f"profile-{name}.txt").write_text(buf.getvalue())
        rows = []
        for (file, line, func), (_cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
            rows.append({"function": f"{os.path.basename(file)}:{line}:{func}", "calls": nc,
                         "tottime": round(tt, 4), "cumtime": round(ct, 4)})
        rows.sort(key=lambda r: r["tottime"], reverse=True)
        self.tops[name] = rows[:8]
        return result


def list_phases(home: str, state_dir: str, prof: Profiler) -> dict[str, Any]:
    env = Env(home=Path(home), environ={})
    state = StateDir(Path(state_dir))
    out: dict[str, Any] = {"runtimes": {}}
    cache = ListingCache(None)
    for rt in RUNTIMES:
        r: dict[str, Any] = {}
        t0 = time.perf_counter()
        try:
            reader = reader_for(rt, env)
        except Exception as e:
            r["error"] = f"{type(e).__name__}: {e}"
            out["runtimes"][rt] = r
            continue
        r["import_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        sources = prof.run(f"discovery-{rt}", lambda reader=reader: list(reader.sources()))
        r["discovery_s"] = time.perf_counter() - t0
        r["sources"] = len(sources)
        slow: list[tuple[float, str, int]] = []
        sessions: list[Any] = []
        acc = {"errors": 0, "deep": 0, "put": 0.0}

        def summarize_all(reader: Any = reader, sources: list[Any] = sources, slow: list[Any] = slow,
                          sessions: list[Any] = sessions, acc: dict[str, Any] = acc) -> None:
            for src in sources:
                s0 = time.perf_counter()
                try:
                    got = reader.summarize(src)
                except Exception:
                    got = []
                    acc["errors"] += 1
                s1 = time.perf_counter()
                cache.put(src, got, None)  # what the listing does next: Session.to_cache for the cache file
                acc["put"] += time.perf_counter() - s1
                slow.append((s1 - s0, src.path, len(got)))
                acc["deep"] += sum(1 for s in got if s.locator.get("read_deep"))
                sessions.extend(got)

        c0, t0 = rchar(), time.perf_counter()
        prof.run(f"summarize-{rt}", summarize_all)
        r["summarize_s"] = time.perf_counter() - t0 - acc["put"]
        r["to_cache_s"] = acc["put"]
        r["rchar"] = rchar() - c0
        r["sessions"] = len(sessions)
        r["errors"] = acc["errors"]
        r["read_deep"] = acc["deep"]
        r["rchar_per_source"] = r["rchar"] / len(sources) if sources else None
        # what the listing does to every fresh summary next (in its workers on a cold CLI run): redaction
        t0 = time.perf_counter()
        prof.run(f"redact-{rt}", lambda sessions=sessions: [_summarized(s) for s in sessions])
        r["redact_s"] = time.perf_counter() - t0
        slow.sort(reverse=True)
        r["slowest_sources"] = [{"s": round(dt, 4), "path": p, "sessions": n} for dt, p, n in slow[:5]]
        r["vmhwm_mb_after"] = vmhwm_mb()
        out["runtimes"][rt] = r

    # cache save and load (the warm path's fixed cost)
    cache.state = state  # every source was put, so all of them are saved
    t0 = time.perf_counter()
    prof.run("cache-save", cache.save)
    out["cache_save_s"] = time.perf_counter() - t0
    cpath = index.path_of(state)
    out["cache_bytes"] = cpath.stat().st_size if cpath.exists() else None
    t0 = time.perf_counter()
    loaded = prof.run("cache-load", lambda: ListingCache(state))
    out["cache_load_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    n = sum(len(loaded._sessions(e) or []) for e in loaded.entries.values())  # decode + revive, as get() does
    out["cache_from_cache_s"] = time.perf_counter() - t0
    out["cache_sessions"] = n
    t0 = time.perf_counter()
    stat_sources = 0
    for rt in RUNTIMES:
        try:
            stat_sources += sum(1 for _ in reader_for(rt, env).sources())
        except Exception:
            continue
    out["warm_stat_pass_s"] = time.perf_counter() - t0
    out["warm_stat_sources"] = stat_sources

    # the cold scan as the CLI runs it (worker processes): wall, this process's CPU and the workers'
    par_state = StateDir(Path(state_dir + "-parallel"))
    t0, c0 = time.perf_counter(), os.times()
    par = scan(env, par_state, parallel=True)
    c1 = os.times()
    out["parallel_scan_s"] = time.perf_counter() - t0
    out["parallel_scan_main_cpu_s"] = (c1.user - c0.user) + (c1.system - c0.system)
    out["parallel_scan_workers_cpu_s"] = ((c1.children_user - c0.children_user)
                                          + (c1.children_system - c0.children_system))
    out["parallel_scan_sessions"] = len(par.sessions)
    del par
    import shutil

    shutil.rmtree(par_state.root, ignore_errors=True)

    # the service end to end: first call loads the disk cache (a warm CLI run), the second reuses memory
    svc = Service(state, env)
    t0 = time.perf_counter()
    res = prof.run("service-list-disk-cache", svc.list_sessions)
    out["service_list_disk_cache_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = prof.run("service-list-in-memory", svc.list_sessions)
    out["service_list_in_memory_s"] = time.perf_counter() - t0
    # the in-memory list split up (private names on purpose: this attributes time, it is not an API)
    t0 = time.perf_counter()
    listing = scan(env, state, cache=svc._cache)
    out["in_memory_scan_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    svc._decorate(listing, None)
    out["in_memory_decorate_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _ = [s.to_json() for s in listing.ordered()]
    out["in_memory_order_to_json_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    text = json.dumps(res["sessions"], ensure_ascii=False, indent=2)
    out["json_dump_s"] = time.perf_counter() - t0
    out["json_bytes"] = len(text.encode("utf-8"))
    out["listed_top_level"] = len(res["sessions"])
    out["vmhwm_mb"] = vmhwm_mb()
    out["profiles"] = prof.tops
    return out


def brief_phases(home: str, state_dir: str, ref: str, prof: Profiler) -> dict[str, Any]:
    from segue.brief import build_facts, render

    env = Env(home=Path(home), environ={})
    svc = Service(StateDir(Path(state_dir)), env)
    out: dict[str, Any] = {"ref": ref}
    t0 = time.perf_counter()
    session, _ = prof.run("brief-find", lambda: svc.find(ref))
    out["find_s"] = time.perf_counter() - t0
    out["vmhwm_mb_after_find"] = vmhwm_mb()
    reader = reader_for(session.runtime, env)
    size = os.path.getsize(session.store_path) if os.path.isfile(session.store_path) else None
    out["bytes"] = size

    def steps_only() -> int:
        stats = ReadStats()
        return sum(1 for _ in reader.steps(session, stats))

    c0, t0 = rchar(), time.perf_counter()
    out["steps"] = prof.run("brief-steps", steps_only)
    out["steps_s"] = time.perf_counter() - t0
    out["steps_rchar"] = rchar() - c0
    out["vmhwm_mb_after_steps"] = vmhwm_mb()
    t0 = time.perf_counter()
    stats = ReadStats()
    facts = prof.run("brief-facts", lambda: build_facts(session, reader.steps(session, stats), stats,
                                                          svc.redactor()))
    out["facts_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    md = prof.run("brief-render", lambda: render(facts, time.time()))
    out["render_s"] = time.perf_counter() - t0
    out["markdown_bytes"] = len(md.encode("utf-8"))
    out["damaged_lines"] = stats.damaged_lines
    out["vmhwm_mb"] = vmhwm_mb()
    if size:
        out["steps_mb_s"] = size / 1e6 / out["steps_s"] if out["steps_s"] else None
    out["profiles"] = prof.tops
    return out


def main(argv: list[str]) -> int:
    prof_dir = None
    if "--profile" in argv:
        i = argv.index("--profile")
        prof_dir = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    prof = Profiler(prof_dir)
    if argv and argv[0] == "list" and len(argv) == 3:
        out = list_phases(argv[1], argv[2], prof)
    elif argv and argv[0] == "brief" and len(argv) == 4:
        out = brief_phases(argv[1], argv[2], argv[3], prof)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
