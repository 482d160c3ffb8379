"""The first patched listing after a full one, before against after, in interleaved runs on one corpus:

    python -m bench.first_patch CORPUS --before OLD_SERVER_DIR [--runs 5] [--out DIR] [--runtime claude]

Each round, for each side (the order alternating): the session index, the kept answers and the redactor's
pattern cache (`cache/index.sqlite*`, `cache/warm`, `cache/redact-re-*`) are removed, `segue list --json` runs
the full path cold (every session summarised and redacted), a warm `list --json` is measured, 1 % of the
corpus' sessions of one runtime change (bench.mutate) and the next `list --json` (the patch path) is measured,
then the change is undone byte for byte. That patch is the first after a full listing: whether its regexes come
compiled from the cache is what differs when the full path fills the cache (segue.warm.Keeper). Prints medians
of CPU (user+sys) and each side's first patch as a ratio to its warm answer; the first round checks the patched
output against SEGUE_WARM=0's. The measured processes count the patterns re compiles (`re._compiler.compile`:
what the cache spares) and the CPU they take.
CORPUS is changed and put back: point it at a corpus of your own.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from bench import mutate
from bench.proc import Run, Spawner, median

REPO = Path(__file__).resolve().parent.parent
# `segue`, counting what re compiles (a pattern segue.recache hands over compiled never reaches re._compiler)
_COUNTING = """
import sys, time
from re import _compiler
real, spent = _compiler.compile, [0, 0.0]
def compile(*a, **k):
    t = time.process_time()
    try:
        return real(*a, **k)
    finally:
        spent[0] += 1
        spent[1] += time.process_time() - t
_compiler.compile = compile
from segue.entry import main
try:
    rc = main(sys.argv[1:])
finally:
    sys.stdout.flush()
    print("COMPILES", spent[0], round(spent[1] * 1000, 2), file=sys.stderr)
raise SystemExit(rc)
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--before", required=True, help="the server/ directory of the code to compare against")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default="/tmp/first-patch")
    ap.add_argument("--runtime", default="claude")
    a = ap.parse_args(argv)
    corpus = Path(a.corpus).absolute()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sides = {"before": str(Path(a.before).absolute()), "after": str(REPO / "server")}
    spawner = Spawner(sys.executable, str(REPO), str(out / "spawn"))
    sessions = json.loads((corpus / "expected.json").read_text())["sessions"]
    k = max(1, round(0.01 * len(sessions)))

    def env(side: str) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(corpus / "home"),
                "SEGUE_HOME": str(out / f"state-{side}"), "LANG": "C.UTF-8", "TZ": "UTC",
                "PYTHONPATH": f"{sides[side]}{os.pathsep}{REPO}", "PYTHONPYCACHEPREFIX": str(out / "pycache")}

    def run(side: str, *args: str, extra: dict[str, str] | None = None) -> Run:
        r = spawner.run([sys.executable, "-c", _COUNTING, *args], {**env(side), **(extra or {})}, cwd=str(REPO))
        assert r.rc == 0, r.stderr
        return r

    for side in sides:
        shutil.rmtree(out / f"state-{side}", ignore_errors=True)
        run(side, "list", "--json")  # cold: the index
    rows: dict[str, dict[str, list[float]]] = {"warm": {}, "first patch": {}, "full": {}, "compiles": {},
                                               "compile ms": {}}
    identical: dict[str, bool] = {}
    order = list(sides)
    for i in range(a.runs):
        chosen = mutate.choose_runtime(sessions, a.runtime, k, 3000 + i)
        for side in order:
            cache = out / f"state-{side}" / "cache"
            shutil.rmtree(cache / "warm", ignore_errors=True)
            for p in [*cache.glob("redact-re-*"), *cache.glob("index.sqlite*")]:
                p.unlink()
            rows["full"].setdefault(side, []).append(run(side, "list", "--json").cpu)  # cold, kept
            rows["warm"].setdefault(side, []).append(run(side, "list", "--json").cpu)
            change = mutate.apply(chosen, corpus / "home", out / "mutate-backup")
            try:
                r = run(side, "list", "--json")
                rows["first patch"].setdefault(side, []).append(r.cpu)
                n, ms = r.stderr.rsplit("COMPILES ", 1)[1].split()
                rows["compiles"].setdefault(side, []).append(int(n))
                rows["compile ms"].setdefault(side, []).append(float(ms))
                if i == 0:
                    identical[side] = r.stdout == run(side, "list", "--json", extra={"SEGUE_WARM": "0"}).stdout
            finally:
                change.undo()
        order.reverse()
    lines = [f"first patch after a full listing, 1 % of {a.runtime} changed ({k} sessions), {a.runs} rounds, "
             "medians of CPU (user+sys)",
             "| side | cold list | warm | first patch | × warm | its regex compiles (CPU) | = SEGUE_WARM=0 |",
             "|---|---|---|---|---|---|---|"]
    for side in sides:
        f, w, p, n, ms = (median(rows[r][side]) for r in ("full", "warm", "first patch", "compiles", "compile ms"))
        lines.append(f"| {side} | {f:.3f} s | {w:.3f} s | {p:.3f} s | {p / w:.2f} | {n:.0f} ({ms:.1f} ms) | "
                     f"{identical.get(side)} |")
    text = "\n".join(lines)
    print(text)
    (out / "results.md").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps({"rows": rows, "identical": identical}, indent=1))
    spawner.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
