"""Warm answers of the CLI, before against after, in interleaved runs on one corpus (a shared machine's load hits
both alike), each beside the head+tail floor measured in the same round:

    python -m bench.warm_paired CORPUS [--before OLD_SERVER_DIR] [--runs 5] [--out DIR] [--query Q]… [--no-patch-rows]

CORPUS is a bench.generate output (its `home`, `files.txt`, `expected.json`); it is changed and put back byte for
byte by the "1 % changed" rows (bench.mutate), so point it at a corpus of your own, never a shared one. OLD_SERVER_DIR
is another checkout's `server/` (e.g. `git archive BASE server | tar -x -C /tmp/base`). Rows: `list --json` warm,
`list` (the table, piped) warm, `list --json` after 1 % of the sessions changed (the same sessions for both, the
order of the two alternating), and `search QUERY --json` on a warm index when --query is given (the index is
built once per side first). Figures are medians of wall and CPU time and the peak RSS (bench.proc).

The patch rows (this branch, "after" side; without --before only that side runs): `list --json` right after 1 % of
the corpus' sessions changed in one runtime alone (one row per runtime), and the issue's mixed case (20 Claude files
appended + 20 OpenCode sessions updated), each as a ratio to the warm answer of the same round ("after 1 % changed,
<runtime>: X × warm"), with SEGUE_WARM_PATCH=0 (the full path) beside it. The first round checks each patched output
byte for byte against the full path's (SEGUE_WARM=0).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from bench import mutate
from bench.proc import Run, Spawner, median

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--before", help="the server/ directory of the code to compare against")
    ap.add_argument("--no-patch-rows", action="store_true", help="skip the per-runtime patch rows")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default="/tmp/warm-paired")
    ap.add_argument("--query", action="append", default=[])
    a = ap.parse_args(argv)
    corpus = Path(a.corpus).absolute()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sides = {"before": str(Path(a.before).absolute())} if a.before else {}
    sides["after"] = str(REPO / "server")
    spawner = Spawner(sys.executable, str(REPO), str(out / "spawn"))
    expected = json.loads((corpus / "expected.json").read_text())
    tops = sum(1 for s in expected["sessions"] if not s["parent_id"])

    def env(side: str) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(corpus / "home"),
                "SEGUE_HOME": str(out / f"state-{side}"), "LANG": "C.UTF-8", "TZ": "UTC",
                "PYTHONPATH": f"{sides[side]}{os.pathsep}{REPO}", "PYTHONPYCACHEPREFIX": str(out / "pycache")}

    def run(side: str, *args: str, extra: dict[str, str] | None = None) -> Run:
        return spawner.run([sys.executable, "-m", "segue", *args], {**env(side), **(extra or {})}, cwd=str(REPO))

    rows: dict[str, dict[str, list[Run]]] = {}
    identical: dict[str, bool] = {}

    def note(row: str, side: str, r: Run) -> None:
        rows.setdefault(row, {}).setdefault(side, []).append(r)

    for side in sides:
        shutil.rmtree(out / f"state-{side}", ignore_errors=True)
        r = run(side, "list", "--json")  # cold: the index
        assert r.rc == 0, r.stderr
        for q in a.query:
            run(side, "search", q, "--json")  # the search index
    floor = [sys.executable, "-m", "bench.floor", "headtail", str(corpus / "files.txt"), "16384"]
    spawner.run(floor, env("after"), cwd=str(REPO))
    order = list(sides)
    outputs: dict[str, set[bytes]] = {}
    for i in range(a.runs):
        note("floor: head+tail 16 KiB of every session file", "floor", spawner.run(floor, env("after"), cwd=str(REPO)))
        for side in order:
            run(side, "list", "--json")  # settle (the previous round's undo changed inodes and mtimes back)
            r = run(side, "list", "--json")
            note("segue list --json, warm", side, r)
            outputs.setdefault(side, set()).add(r.stdout)
            assert len(json.loads(r.stdout)) == tops, "listed another number of sessions"
            run(side, "list")
            note("segue list (table, piped), warm", side, run(side, "list"))
            for q in a.query:
                note(f"segue search {q} --json, warm index", side, run(side, "search", q, "--json"))
        chosen = mutate.choose(expected["sessions"], 0.01, 1000 + i)
        for side in order:
            run(side, "list", "--json")
        change = mutate.apply(chosen, corpus / "home", out / "mutate-backup")
        try:
            for side in order:
                r = run(side, "list", "--json")
                note("segue list --json, after 1 % of sessions changed", side, r)
                assert r.rc == 0 and len(json.loads(r.stdout)) == tops
        finally:
            change.undo()
        if not a.no_patch_rows:
            patch_rows(i, expected["sessions"], corpus, out, run, note, tops, identical)
        order.reverse()
    same = len(outputs.get("before", set()) | outputs.get("after", set())) == 1
    lines = ["| row | before wall / CPU / RSS | after wall / CPU / RSS | after ÷ floor (wall) |", "|---|---|---|---|"]
    fl = median([r.wall for r in rows["floor: head+tail 16 KiB of every session file"]["floor"]])
    flc = median([r.cpu for r in rows["floor: head+tail 16 KiB of every session file"]["floor"]])
    result: dict[str, Any] = {"floor_wall": fl, "floor_cpu": flc, "identical_warm_output": same, "rows": {}}
    for row, by in rows.items():
        if "floor" in by:
            lines.append(f"| {row} | | {fl:.3f} s / {flc:.3f} s | |")
            continue
        cells = [""] if "before" not in sides else []
        for side in sides:
            rs = by.get(side, [])
            if not rs:
                cells.append("")
                continue
            w, c, m = median([r.wall for r in rs]), median([r.cpu for r in rs]), max(r.rss_mb for r in rs)
            cells.append(f"{w:.3f} s / {c:.3f} s / {m:.1f} MB")
            result["rows"].setdefault(row, {})[side] = {"wall": w, "cpu": c, "rss_mb": m,
                                                        "walls": [r.wall for r in rs], "cpus": [r.cpu for r in rs]}
        after_wall = result["rows"][row]["after"]["wall"]
        lines.append(f"| {row} | {cells[0]} | {cells[1]} | {after_wall / fl:.2f} |")
    lines.append(f"\nwarm --json output identical before and after: {same}")
    warm_row = rows.get("segue list --json, warm", {}).get("after", [])
    if warm_row and not a.no_patch_rows:
        wc, ww = median([r.cpu for r in warm_row]), median([r.wall for r in warm_row])
        lines.append("")
        for case in CASES:
            p = rows.get(f"after 1 % changed, {case} (patch)", {}).get("after", [])
            fp = rows.get(f"after 1 % changed, {case} (SEGUE_WARM_PATCH=0)", {}).get("after", [])
            if not p:
                continue
            pc, pw = median([r.cpu for r in p]), median([r.wall for r in p])
            line = (f"after 1 % changed, {case}: {pc / wc:.2f} × warm (CPU {pc:.3f} s vs {wc:.3f} s; wall "
                    f"{pw / ww:.2f} ×, {pw:.3f} s vs {ww:.3f} s; {pc / flc:.2f} × floor CPU)")
            if fp:
                line += f"; patch off: {median([r.cpu for r in fp]) / wc:.2f} × warm"
            line += f"; byte-identical to SEGUE_WARM=0: {identical.get(case)}"
            lines.append(line)
            result.setdefault("patch", {})[case] = {"cpu_ratio": pc / wc, "wall_ratio": pw / ww,
                                                    "identical": identical.get(case)}
    text = "\n".join(lines)
    print(text)
    (out / "results.md").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps(result, indent=1))
    spawner.close()
    return 0


CASES: dict[str, dict[str, int] | str] = {rt: rt for rt in ("claude", "codex", "opencode", "cline", "gemini")}
CASES["mixed (20 Claude + 20 OpenCode)"] = {"claude": 20, "opencode": 20}


def patch_rows(i: int, sessions: list[dict[str, Any]], corpus: Path, out: Path, run: Any, note: Any, tops: int,
               identical: dict[str, bool]) -> None:
    """One round of the patch rows: each case changed, listed (patched), the full path beside it, put back."""
    k = max(1, round(0.01 * len(sessions)))
    for case, what in CASES.items():
        chosen = (mutate.choose_runtime(sessions, what, k, 2000 + i) if isinstance(what, str)
                  else mutate.choose_mixed(sessions, what, 2000 + i))
        run("after", "list", "--json")  # the warm entry of the unchanged corpus
        change = mutate.apply(chosen, corpus / "home", out / "mutate-backup")
        try:
            r = run("after", "list", "--json")
            note(f"after 1 % changed, {case} (patch)", "after", r)
            assert r.rc == 0 and len(json.loads(r.stdout)) == tops, r.stderr
            if i == 0:
                ref = run("after", "list", "--json", extra={"SEGUE_WARM": "0"})
                identical[case] = ref.stdout == r.stdout
        finally:
            change.undo()
        run("after", "list", "--json")  # (patched back)
        change = mutate.apply(chosen, corpus / "home", out / "mutate-backup")
        try:
            note(f"after 1 % changed, {case} (SEGUE_WARM_PATCH=0)", "after",
                 run("after", "list", "--json", extra={"SEGUE_WARM_PATCH": "0"}))
        finally:
            change.undo()


if __name__ == "__main__":
    raise SystemExit(main())
