"""The patch path (segue/patch.py) before against after, per runtime and mixed, in interleaved runs on one corpus:

    python -m bench.patch_paired CORPUS --before OLD_SERVER_DIR [--runs 5] [--out DIR] [--case mixed --case claude …]

The cases are bench.run's "after 1 % changed" rows: `mixed` changes 1 % of all the corpus' sessions (every runtime,
bench.mutate.choose), a runtime's case 1 % of that runtime's sessions. Each round, for each case and each side (the
order of the sides alternating): two settling `list --json` (the warm entry of the unchanged corpus), the warm
answer measured, the case's sessions changed, the patched `list --json` measured, the change undone byte for byte.
Prints medians of CPU (user+sys), wall and peak RSS, each patch as a ratio to the warm answer of its side in the
same rounds, and whether the first round's patched output equals SEGUE_WARM=0's (each side). CORPUS is changed and
put back: point it at a corpus of your own (`python -m bench.generate DIR …`), never a shared one.
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
CASES = ("mixed", "claude", "codex", "opencode", "cline", "gemini")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--before", required=True, help="the server/ directory of the code to compare against")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default="/tmp/patch-paired")
    ap.add_argument("--case", action="append", choices=CASES, help="(default: every case)")
    a = ap.parse_args(argv)
    corpus = Path(a.corpus).absolute()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sides = {"before": str(Path(a.before).absolute()), "after": str(REPO / "server")}
    cases = a.case or list(CASES)
    sessions = json.loads((corpus / "expected.json").read_text())["sessions"]
    spawner = Spawner(sys.executable, str(REPO), str(out / "spawn"))

    def env(side: str) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(corpus / "home"),
                "SEGUE_HOME": str(out / f"state-{side}"), "LANG": "C.UTF-8", "TZ": "UTC",
                "PYTHONPATH": f"{sides[side]}{os.pathsep}{REPO}", "PYTHONPYCACHEPREFIX": str(out / "pycache")}

    def run(side: str, extra: dict[str, str] | None = None) -> Run:
        r = spawner.run([sys.executable, "-m", "segue", "list", "--json"], {**env(side), **(extra or {})},
                        cwd=str(REPO))
        assert r.rc == 0, r.stderr
        return r

    for side in sides:
        shutil.rmtree(out / f"state-{side}", ignore_errors=True)
        run(side)  # cold: the index, the kept answer, the pattern cache
    rows: dict[tuple[str, str], list[Run]] = {}
    identical: dict[tuple[str, str], bool] = {}
    loads: list[float] = []
    order = list(sides)
    for i in range(a.runs):
        for case in cases:
            k = max(1, round(0.01 * sum(1 for s in sessions if s["runtime"] == case)))
            chosen = (mutate.choose(sessions, 0.01, 5000 + i) if case == "mixed"
                      else mutate.choose_runtime(sessions, case, k, 5000 + i))
            for side in order:
                run(side)
                run(side)
                rows.setdefault(("warm", side), []).append(run(side))
                change = mutate.apply(chosen, corpus / "home", out / "mutate-backup")
                try:
                    r = run(side)
                    rows.setdefault((case, side), []).append(r)
                    if i == 0:
                        identical[(case, side)] = run(side, {"SEGUE_WARM": "0"}).stdout == r.stdout
                finally:
                    change.undo()
            order.reverse()
        loads.append(os.getloadavg()[0])
    lines = [f"patch path, {a.runs} rounds, medians; load (1 min) {min(loads):.1f}-{max(loads):.1f}",
             "| case | before CPU (× warm) / wall / RSS | after CPU (× warm) / wall / RSS | after ÷ before (CPU) "
             "| = SEGUE_WARM=0 |", "|---|---|---|---|---|"]

    def cell(case: str, side: str) -> tuple[str, float]:
        rs = rows[(case, side)]
        cpu, warm = median([r.cpu for r in rs]), median([r.cpu for r in rows[("warm", side)]])
        ratio = "" if case == "warm" else f" ({cpu / warm:.2f} ×)"
        return (f"{cpu:.3f} s{ratio} / {median([r.wall for r in rs]):.3f} s / "
                f"{median([r.rss_mb for r in rs]):.1f} MB"), cpu

    for case in ["warm", *cases]:
        (b, bc), (f, fc) = cell(case, "before"), cell(case, "after")
        same = "" if case == "warm" else f"{identical.get((case, 'before'))} / {identical.get((case, 'after'))}"
        lines.append(f"| {case} | {b} | {f} | {fc / bc:.2f} | {same} |")
    text = "\n".join(lines)
    print(text)
    (out / "results.md").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps(
        {f"{c}/{s}": [[r.cpu, r.wall, r.rss_mb] for r in rs] for (c, s), rs in rows.items()}, indent=1))
    spawner.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
