"""Search figures on the generated corpus: build time against its floor, memory, warm queries, index size.

    python -m bench.bench_search [--cache-dir /tmp/segue-bench] [--sessions-per-runtime 2000] [--runs 7]
    python -m bench.bench_search --corpus /tmp/segue-bench/n1600-s1-b200-c20-v4 [--build-runs 3]
    python -m bench.bench_search --corpus DIR --state STATE   # queries only, on STATE's warm index of DIR
    python -m bench.bench_search --corpus DIR --state STATE --after-change 5 --changed-only

The corpus is bench/generate.py's (generated once into the cache dir and reused; the 8,000-session default is
the 1.98 GB home of issue 16). Each figure runs in its own process, as a person or the editor would meet it:

- floor:  one orjson pass over the same transcripts (every JSONL line, every JSON document, every `data`
          column of the databases), in a fresh process;
- build:  the text index built from nothing in a fresh process (the listing cache already warm: the listing
          is issue 16's figure), with its peak memory (the writer's max RSS and each worker's VmHWM); paired and
          interleaved with the floor and with the serial reference build (SEGUE_SEARCH_WORKERS=0), medians of
          --build-runs rounds; CPU is the whole process tree's (user + system, workers included), split into the
          writer's (the process holding the index: freshness check, listing, writing) and the workers' (reading
          and redacting);
- query:  `segue search QUERY --json` as a whole CLI process on the warm index (median of --runs, per query);
- phases: where a quick CLI query's time goes, in a fresh process per query: importing the quick path, the
          freshness check (the probe's replay: a stat of every store file and directory discovery looked at), the
          query with its snippets (medians of --runs);
- server: `Service.search` in one long-lived process as the language server runs it (watcher-style reuse of a
          freshness check a few seconds old), median of 30 calls per query;
- changed: `segue search cargo --json` as a whole CLI process right after 1 % of the sessions changed as each
          runtime writes them (bench.mutate, undone byte for byte after each round and the index caught up again
          untimed), against the warm query in the same rounds: what finding today's work costs; then right after
          one session of each runtime changed (an agent at work while its user searches); each round makes
          the change twice, the search patch (segue.search.patch) on and off, and the ratio is printed. Off with
          --corpus unless --after-change N is given (it writes into the corpus and puts it back);
- size:   the index files against the transcripts' bytes.
Targets (issue 17): build <= 1.5x the floor and <= 100 MB, query <= 100 ms CLI at 8,000 sessions (<= 200 ms at
32,000) / <= 50 ms server, size <= 25 %.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# a phrase, two words, a common word, a very common one, a rare one, one that matches nothing
QUERIES = ('"the parser"', "migrate middleware", "cargo", "test", "cache18", "xylophonist")

_FLOOR = r"""
import json, os, sqlite3, sys, time
import orjson
paths = [p.strip() for p in open(sys.argv[1]) if p.strip()]
t0 = time.perf_counter(); n = 0; nbytes = 0
for p in paths:
    if p.endswith(".jsonl"):
        with open(p, "rb") as f:
            for line in f:
                nbytes += len(line)
                try: orjson.loads(line); n += 1
                except orjson.JSONDecodeError: pass
    elif p.endswith(".json"):
        data = open(p, "rb").read(); nbytes += len(data)
        try: orjson.loads(data); n += 1
        except orjson.JSONDecodeError: pass
    elif p.endswith((".db", ".sqlite")):
        con = sqlite3.connect(f"file:{p}?mode=ro&immutable=1", uri=True)
        for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
            if "data" in cols:
                for (d,) in con.execute(f'SELECT data FROM "{t}"'):
                    if d:
                        nbytes += len(d)
                        try: orjson.loads(d); n += 1
                        except orjson.JSONDecodeError: pass
    else:  # compressed transcripts: read (their decoding is not a JSON cost)
        nbytes += len(open(p, "rb").read())
print(json.dumps({"seconds": time.perf_counter() - t0, "records": n, "bytes": nbytes,
                  "max_rss_mb": int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024}))
"""

_BUILD = r"""
import json, sys, time
from pathlib import Path
from segue.paths import StateDir
from segue.service import Service
from segue.stores.base import Env
from segue.search import engine, workers
svc = Service(StateDir(Path(sys.argv[1])), env=Env(home=Path(sys.argv[2]), environ={}), environ={})
t0 = time.perf_counter(); svc.raw_listing(); listing = time.perf_counter() - t0
c0 = time.process_time()
t0 = time.perf_counter(); st = engine.ensure_fresh(svc, force=True); build = time.perf_counter() - t0
print(json.dumps({"listing_s": listing, "build_s": build, "sessions": st.sessions, "steps": st.steps_written,
                  "writer_cpu_s": time.process_time() - c0, "workers": len(workers.PEAKS_MB),
                  # VmHWM, not ru_maxrss: Linux carries this bench's own high-water mark into a child's ru_maxrss
                  "max_rss_mb": int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024,
                  "workers_max_rss_mb": max(workers.PEAKS_MB, default=0.0),
                  "workers_cpu_s": sum(getattr(workers, "CPU_S", []))}))
"""

_PHASES = r"""
import json, os, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
from segue.cli_search import quick_main  # what `segue search` imports before it answers
from segue.search import fast, query as Q, redaction as R
from segue.search.engine import answer
from segue.search.index import SearchIndex
t1 = time.perf_counter(); c1 = time.process_time()
idx = SearchIndex(__import__("pathlib").Path(os.environ["SEGUE_HOME"]) / "cache"); idx.existing()
environ = dict(os.environ)
fresh = idx.probe_matches(os.path.expanduser("~"), environ)
t2 = time.perf_counter(); c2 = time.process_time()
digest = R.reader_digest(idx.meta("redact_env"), idx.meta("salt"), environ)
res = answer(idx, Q.parse(sys.argv[1]), None, None, None, None, 20, fast._redactor, digest)
t3 = time.perf_counter(); c3 = time.process_time()
print(json.dumps({"fresh": fresh, "import_ms": 1000 * (t1 - t0), "fresh_ms": 1000 * (t2 - t1),
                  "query_ms": 1000 * (t3 - t2), "import_cpu": 1000 * (c1 - c0), "fresh_cpu": 1000 * (c2 - c1),
                  "query_cpu": 1000 * (c3 - c2), "total": res.total}))
"""

_SERVER = r"""
import json, statistics, sys, time
from pathlib import Path
from segue.paths import StateDir
from segue.service import Service
from segue.stores.base import Env
svc = Service(StateDir(Path(sys.argv[1])), env=Env(home=Path(sys.argv[2]), environ={}), environ={})
svc.reuse_within = 3.0  # as the server sets it when its watcher runs
out = {}
for q in json.loads(sys.argv[3]):
    svc.search(q)
    times, cpus = [], []
    for _ in range(30):
        t0 = time.perf_counter(); c0 = time.process_time(); r = svc.search(q)
        times.append(time.perf_counter() - t0); cpus.append(time.process_time() - c0)
    out[q] = {"median_ms": 1000 * statistics.median(times), "cpu_ms": 1000 * statistics.median(cpus),
              "total": r.total}
svc.reuse_within = 0.0
times = []
for _ in range(10):
    t0 = time.perf_counter(); svc.search(json.loads(sys.argv[3])[0]); times.append(time.perf_counter() - t0)
out["with freshness check (no watcher)"] = {"median_ms": 1000 * statistics.median(times)}
print(json.dumps(out))
"""


PYCACHE = Path(tempfile.gettempdir()) / "segue-bench-pycache"  # bytecode outside the checkout, kept between runs


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_cpu(cmd: list[str], **kw: Any) -> tuple[subprocess.CompletedProcess[Any], float, float]:
    """(process, wall seconds, CPU seconds: user + system of that child). On a shared machine the CPU time
    moves far less with other people's load than the wall time does."""
    c0, t0 = _children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, **kw)
    return p, time.perf_counter() - t0, _children_cpu() - c0


def child(code: str, *args: str, env: dict[str, str] | None = None, server: Path | None = None) -> dict[str, Any]:
    e = dict(os.environ if env is None else env, PYTHONPATH=str(server or REPO / "server"),
             PYTHONPYCACHEPREFIX=str(PYCACHE))
    e.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed Segue has its bytecode; so does the bench's copy
    p, _wall, cpu = run_cpu([sys.executable, "-c", code, *args], env=e, capture_output=True, text=True, check=True)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["cpu_s"] = cpu
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_search", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache-dir", default="/tmp/segue-bench")
    ap.add_argument("--sessions-per-runtime", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--big-mb", type=float, default=200)
    ap.add_argument("--big-count", type=int, default=20)
    ap.add_argument("--corpus", help="an existing corpus directory, used read-only (instead of --cache-dir & co.)")
    ap.add_argument("--build-runs", type=int, default=3, help="paired floor/serial/parallel build rounds")
    ap.add_argument("--before", type=Path, help="another Segue's server/ (e.g. /work/base/server): its build on every "
                    "core joins each round, and the figures compare the two")
    ap.add_argument("--no-serial", action="store_true", help="leave the serial reference build out of the rounds")
    ap.add_argument("--no-queries", action="store_true", help="the builds only")
    ap.add_argument("--changed-only", action="store_true", help="of the queries, only the rows right after a change")
    ap.add_argument("--after-change", type=int, help="rounds of the query right after 1 %% of the sessions changed "
                    "(default 3; 0 with --corpus: it writes into the corpus and undoes it)")
    ap.add_argument("--state", help="a Segue state directory whose index of --corpus is warm (built once and kept): "
                    "measure only the queries (CLI and server), no floor, builds or size")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from bench import generate

    if a.corpus:  # used as it is, never generated or written into (a shared corpus)
        corpus = Path(a.corpus)
        for name in ("expected.json", "files.txt", "home"):
            if not (corpus / name).exists():
                ap.error(f"--corpus {corpus}: no {name} (not a bench.generate corpus)")
    else:
        corpus = generate.ensure(Path(a.cache_dir), a.sessions_per_runtime, a.seed, a.big_mb, a.big_count, log=print)
    exp = json.loads((corpus / "expected.json").read_text())
    home = corpus / "home"
    state = Path(a.state) if a.state else Path(tempfile.mkdtemp(prefix="segue-bench-search-"))
    if a.state and not (state / "cache" / "search.sqlite").is_file():
        ap.error(f"--state {state}: no search index there (build it once, e.g. with `segue search` on that home)")
    try:
        print(f"corpus: {sum(exp['counts'].values())} sessions, {exp['bytes'] / 1e9:.2f} GB ({corpus})")
        if not a.state:
            _builds(a, corpus, exp, home, state)
        if not a.no_queries:
            if not a.changed_only:
                _queries(a, home, state, sum(exp["counts"].values()))
            rounds = a.after_change if a.after_change is not None else (0 if a.corpus else 3)
            if rounds:
                _after_change(rounds, exp, home, state, Path(tempfile.mkdtemp(prefix="segue-bench-mutate-")))
    finally:
        if not a.state:
            shutil.rmtree(state, ignore_errors=True)
    return 0


def _builds(a: argparse.Namespace, corpus: Path, exp: dict[str, Any], home: Path, state: Path) -> None:
    floor = child(_FLOOR, str(corpus / "files.txt"))
    print(f"floor (one orjson pass): {floor['seconds']:.2f} s ({floor['cpu_s']:.2f} s CPU), {floor['records']} "
          f"records, {floor['bytes'] / 1e9:.2f} GB, {floor['max_rss_mb']:.0f} MB")
    cold = child(_BUILD, str(state), str(home))  # cold listing and build; warms the page cache
    print(f"first build with a cold listing (fresh state dir): listing {cold['listing_s']:.2f} s + index "
          f"{cold['build_s']:.2f} s; max RSS {cold['max_rss_mb']:.0f} MB")
    # paired and interleaved in one go: floor, serial build (SEGUE_SEARCH_WORKERS=0, the reference), the
    # build on every core; the medians of each, so other people's load on a shared machine hits all three
    floors: list[dict[str, Any]] = []
    serials: list[dict[str, Any]] = []
    builds: list[dict[str, Any]] = []
    befores: list[dict[str, Any]] = []
    kinds: list[tuple[str, list[dict[str, Any]], Path | None, Path]] = [] if a.no_serial else [
        ("0", serials, None, state)]
    kinds.append(("", builds, None, state))
    if a.before:
        # its own state dir: the two Segues' listing caches carry different code stamps, so in one dir each
        # would find the other's stale and list cold (in its CPU figure) every time it followed the other
        other = Path(tempfile.mkdtemp(prefix="segue-bench-search-before-"))
        child(_BUILD, str(other), str(home), server=a.before)  # its listing cache warmed, untimed
        kinds.append(("", befores, a.before, other))
    for r in range(a.build_runs):
        floors.append(child(_FLOOR, str(corpus / "files.txt")))
        for kind, out, server, where in (kinds if r % 2 == 0 else kinds[::-1]):  # alternate the order too
            for p in (where / "cache").glob("search.sqlite*"):
                p.unlink()
            env = dict(os.environ)
            env.pop("SEGUE_SEARCH_WORKERS", None)
            if kind:
                env["SEGUE_SEARCH_WORKERS"] = kind
            out.append(child(_BUILD, str(where), str(home), env=env, server=server))
    if a.before:
        shutil.rmtree(kinds[-1][3], ignore_errors=True)

    def med(rows: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    fw, fc = med(floors, "seconds"), med(floors, "cpu_s")
    print(f"floor (one orjson pass, page cache warm), median of {a.build_runs}: {fw:.2f} s wall, {fc:.2f} s CPU")
    build = builds[-1]
    for name, rows in (("serial build (SEGUE_SEARCH_WORKERS=0)", serials),
                       (f"build on every core ({build['workers']} workers)", builds),
                       (f"before ({a.before}), on every core", befores)):
        if not rows:
            continue
        w, c = med(rows, "build_s"), med(rows, "cpu_s")
        print(f"{name}: {w:.2f} s = {w / fw:.2f}x the floor (target <= 1.5x); CPU {c:.2f} s = {c / fc:.2f}x "
              f"(the writer {med(rows, 'writer_cpu_s'):.2f} s of it, the workers {med(rows, 'workers_cpu_s'):.2f} s; "
              "the whole process: start-up and warm listing included); writer max RSS "
              f"{max(r['max_rss_mb'] for r in rows):.0f} MB, each worker's at most "
              f"{max(r['workers_max_rss_mb'] for r in rows):.0f} MB (target <= 100 MB)")
    print(f"  runs (wall s): floor {[round(f['seconds'], 2) for f in floors]}, serial "
          f"{[round(r['build_s'], 2) for r in serials]}, every core {[round(r['build_s'], 2) for r in builds]}"
          + (f", before {[round(r['build_s'], 2) for r in befores]}" if befores else ""))
    if befores:
        pairs = [(b["cpu_s"], x["cpu_s"]) for b, x in zip(befores, builds, strict=True)]
        print(f"  paired CPU after/before per round: {[round(x / b, 3) for b, x in pairs]}, median "
              f"{statistics.median(x / b for b, x in pairs):.3f}; writer CPU after {med(builds, 'writer_cpu_s'):.2f} "
              f"s vs before {med(befores, 'writer_cpu_s'):.2f} s")
    print(f"  {build['sessions']} sessions, {build['steps']} steps indexed")
    size = sum(p.stat().st_size for p in (state / "cache").glob("search.sqlite*"))
    print(f"index size: {size / 1e6:.1f} MB = {100 * size / exp['bytes']:.1f} % of the transcripts "
          "(target <= 25 %)")


def cli_target_ms(sessions: int) -> int:
    """Issue 17: a warm query's whole CLI process <= 100 ms at 8,000 sessions, <= 200 ms at 32,000."""
    return 100 if sessions <= 10_000 else 200


def _query_env(home: Path, state: Path) -> dict[str, str]:
    env = dict(os.environ, HOME=str(home), SEGUE_HOME=str(state), PYTHONPATH=str(REPO / "server"),
               PYTHONPYCACHEPREFIX=str(PYCACHE))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for k in [k for k in env if k.startswith(("CLAUDE_", "CODEX_", "OPENCODE_", "CLINE_", "XDG_"))]:
        del env[k]
    return env


def _after_change(rounds: int, exp: dict[str, Any], home: Path, state: Path, backup: Path) -> None:
    """The query right after 1 % of the sessions changed (in every runtime), then right after one session of
    each runtime changed (an agent at work while its user searches)."""
    from bench import mutate

    _changed_row(rounds, home, state, backup, "80 sessions (1 %) changed",
                 lambda i: mutate.choose(exp["sessions"], 0.01, 7000 + i))
    for rt in sorted({s["runtime"] for s in exp["sessions"]}):
        _changed_row(rounds, home, state, backup, f"one {rt} session changed",
                     lambda i, rt=rt: mutate.choose_runtime(exp["sessions"], rt, 1, 9000 + i))
    # An agent at work in a long session: its transcript grows while its user searches. Read on from where
    # the last read ended, against the whole file read again (SEGUE_SEARCH_RESUME=0).
    for rt in ("claude", "codex"):
        files = [s for s in exp["sessions"] if s["runtime"] == rt and str(s.get("path", "")).endswith(".jsonl")]
        if not files:
            continue
        big = max(files, key=lambda s: os.path.getsize(s["path"]))
        mb = os.path.getsize(big["path"]) / 1e6
        _changed_row(rounds, home, state, backup, f"the biggest {rt} transcript ({mb:.0f} MB) grew",
                     lambda i, big=big: [big], {"resume": {}, "SEGUE_SEARCH_RESUME=0": {"SEGUE_SEARCH_RESUME": "0"}})


PATCH_SIDES = {"patch": {}, "SEGUE_SEARCH_PATCH=0": {"SEGUE_SEARCH_PATCH": "0"}}


def _changed_row(rounds: int, home: Path, state: Path, backup: Path, what: str,
                 chooser: Callable[[int], list[dict[str, Any]]],
                 compared: dict[str, dict[str, str]] = PATCH_SIDES) -> None:
    """Each round: the warm query, then the same change made once per side (`compared`: name -> environment;
    by default the search patch on, and off: SEGUE_SEARCH_PATCH=0, a refresh from a listing), the sides' order
    alternating, each change undone."""
    from bench import mutate

    base = _query_env(home, state)
    sides = {name: dict(base, **extra) for name, extra in compared.items()}
    first, second = list(sides)
    argv = [sys.executable, "-m", "segue", "search", "cargo", "--json"]
    changed: dict[str, list[tuple[float, float]]] = {k: [] for k in sides}
    warm, sizes = [], []
    try:
        for i in range(rounds):
            chosen = chooser(i)
            if not chosen:
                return
            sizes.append(len(chosen))
            order = list(sides) if i % 2 == 0 else list(sides)[::-1]
            for name in order:
                env = sides[name]
                run_cpu(argv, env=env, capture_output=True)  # settle: the index matches the stores
                if name == first:
                    warm.append(run_cpu(argv, env=env, capture_output=True)[1:])
                change = mutate.apply(chosen, home, backup)
                try:
                    p, wall, cpu = run_cpu(argv, env=env, capture_output=True)
                    changed[name].append((wall, cpu))
                    if p.returncode not in (0, 1):
                        raise RuntimeError(f"segue search failed after the change: {p.stderr[-500:]!r}")
                finally:
                    change.undo()
        run_cpu(argv, env=base, capture_output=True)  # leave the index caught up with the corpus as it is
    finally:
        shutil.rmtree(backup, ignore_errors=True)
    ww = statistics.median(w for w, _ in warm)
    cw = {k: statistics.median(w for w, _ in v) for k, v in changed.items()}
    for name, got in changed.items():
        cc = statistics.median(c for _, c in got)
        print(f"query 'cargo' right after {what} ({statistics.median(sizes):.0f}), {name}, whole CLI process: "
              f"median {1000 * cw[name]:.0f} ms (CPU {1000 * cc:.0f} ms; {rounds} rounds: "
              f"{', '.join(f'{1000 * w:.0f}' for w, _ in got)}); {cw[name] / ww:.1f}x the warm query's "
              f"{1000 * ww:.0f} ms")
    print(f"  {first} / {second}: {cw[first] / cw[second]:.2f}")


def _queries(a: argparse.Namespace, home: Path, state: Path, sessions: int) -> None:
    env = _query_env(home, state)
    for q in QUERIES:
        times, cpus = [], []
        for _ in range(a.runs + 1):
            p, wall, cpu = run_cpu([sys.executable, "-m", "segue", "search", q, "--json"], env=env,
                                   capture_output=True)
            times.append(wall)
            cpus.append(cpu)
        total = json.loads(p.stdout)["total"] if p.stdout else 0
        print(f"query {q!r} whole CLI process: median {1000 * statistics.median(times[1:]):.0f} ms "
              f"(min {1000 * min(times[1:]):.0f}; CPU median {1000 * statistics.median(cpus[1:]):.0f} ms; "
              f"{total} sessions match; target <= {cli_target_ms(sessions)} ms)")
    for q in QUERIES:
        rows = []
        for _ in range(a.runs):
            p, _w, _c = run_cpu([sys.executable, "-c", _PHASES, q], env=env, capture_output=True, text=True, check=True)
            rows.append(json.loads(p.stdout.strip().splitlines()[-1]))

        def med(key: str, rows: list[dict[str, Any]] = rows) -> float:
            return statistics.median(r[key] for r in rows)

        print(f"  phases of {q!r} (medians, wall / CPU ms): imports {med('import_ms'):.0f} / {med('import_cpu'):.0f}, "
              f"freshness check {med('fresh_ms'):.0f} / {med('fresh_cpu'):.0f}"
              f"{'' if all(r['fresh'] for r in rows) else ' (NOT fresh: the CLI takes the full path)'}, "
              f"query and snippets {med('query_ms'):.0f} / {med('query_cpu'):.0f}")
    bare = [run_cpu([sys.executable, "-c", "pass"], env=env, check=True) for _ in range(3)]
    print(f"  (bare Python start on this machine: {1000 * min(b[1] for b in bare):.0f} ms, "
          f"{1000 * min(b[2] for b in bare):.0f} ms CPU)")
    server = child(_SERVER, str(state), str(home), json.dumps(QUERIES))
    server.pop("cpu_s")  # the whole child's: not a per-query figure
    for q, r in server.items():
        print(f"server {q}: median {r['median_ms']:.1f} ms"
              + (f" (CPU {r['cpu_ms']:.1f} ms; {r['total']} match)" if "total" in r else "")
              + " (target <= 50 ms)")


if __name__ == "__main__":
    raise SystemExit(main())
