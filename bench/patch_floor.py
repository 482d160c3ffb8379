"""What any one-shot `segue list --json` must spend after 1 % of one runtime's sessions changed, beside the warm answer:

    python -m bench.patch_floor CORPUS [--runs 9] [--runtime R]…

Issue 16 asks for ≤ 1.3 × the warm answer after 1 % changed. Each row here is a lower bound of that answer,
measured as its own process (median CPU, user + system, of --runs; children waited for):
- `bare`: `python -c pass`;
- `warm`: `segue list --json` with nothing changed (the state is prepared first, in a private directory of its own);
- `imports`: importing what reading the runtime needs (`segue.listing`, the runtime's reader as `reader_for` builds
  it, the redactor), nothing read;
- `+ read`: those imports, then the reader's own `refingerprint` of the changed files (the patch's way of finding
  their sources without a discovery) and, for a runtime whose sessions are files, summarising and redacting the
  changed sessions as the listing does (`listing._summarize`). A database runtime's changed rows are not read here
  (that needs the kept state of its last read), so its row is lower still than what the patch must do.
Neither row checks the other 99 % of the sessions (the warm answer's stat pass), loads or writes a table, or prints:
the patch does all of that on top. The corpus is only read; the sessions are chosen as bench.run chooses them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import mutate

REPO = Path(__file__).resolve().parent.parent
RUNTIMES = ("claude", "codex", "opencode", "cline", "gemini")
DATABASES = {"opencode": ".local/share/opencode/opencode.db", "cline": ".cline/data/db/sessions.db"}

_IMPORTS = r"""
import sys
from segue import listing
from segue.stores.base import Env
listing.reader_for(sys.argv[1], Env.from_os())
import segue.redact
"""

_READ = r"""
import json, sys
from segue import listing
from segue.stores.base import Env
runtime = sys.argv[1]
with open(sys.argv[2]) as f:
    args = json.load(f)
changed, known, files = set(args["changed"]), set(args["known"]), args["files"]
reader = listing.reader_for(runtime, Env.from_os())
import segue.redact  # (a summary read again is redacted before it is kept or shown)
found = reader.refingerprint(changed, known)
how = "refingerprint"
if found is None:  # (Cline's documents are replaced, not appended to: the patch discovers again, as here)
    how = "discovery"
    found = [s for s in reader.sources() if s.path in changed]
n = 0
if files:
    for src in found:
        sessions, error, _state = listing._summarize(reader, src, True, None)
        if error:
            raise SystemExit(error)
        n += len(sessions)
print(json.dumps({"sources": len(found), "sessions": n, "how": how}))
"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, str]:
    """(median CPU seconds, the last run's stdout)."""
    times, out = [], ""
    for _ in range(runs):
        c0 = _cpu()
        p = subprocess.run(argv, env=env, capture_output=True, text=True)
        times.append(_cpu() - c0)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(argv[:4])}…: exit {p.returncode}: {p.stderr.strip()[-500:]}")
        out = p.stdout
    return statistics.median(times), out


def _known(runtime: str, env: dict[str, str]) -> list[str]:
    """The paths of the sources the runtime's discovery yields now (what the patch's kept table names)."""
    code = ("import json, sys\nfrom segue import listing\nfrom segue.stores.base import Env\n"
            "print(json.dumps([s.path for s in listing.reader_for(sys.argv[1], Env.from_os()).sources()]))")
    p = subprocess.run([sys.executable, "-c", code, runtime], env=env, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(p.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.patch_floor", description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--runtime", action="append", choices=RUNTIMES)
    ap.add_argument("--seed", type=int, default=1, help="bench.run's --seed (the sessions it changes first)")
    a = ap.parse_args(argv)
    corpus = Path(a.corpus).resolve()
    home = corpus / "home"
    expected = json.loads((corpus / "expected.json").read_text())["sessions"]
    pycache = tempfile.mkdtemp(prefix="segue-floor-pycache-")
    with tempfile.TemporaryDirectory(prefix="segue-floor-state-") as state:
        os.chmod(state, 0o700)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "SEGUE_HOME": state,
               "LANG": "C.UTF-8", "TZ": "UTC", "PYTHONPATH": f"{REPO / 'server'}{os.pathsep}{REPO}",
               "PYTHONPYCACHEPREFIX": pycache}
        py = sys.executable
        for _ in range(2):  # the cold listing, then the one that keeps the warm entry
            measure([py, "-m", "segue", "list", "--json"], env, 1)
        bare, _ = measure([py, "-c", "pass"], env, a.runs)
        warm, _ = measure([py, "-m", "segue", "list", "--json"], env, a.runs)
        print(f"corpus {corpus} ({len(expected)} sessions), {a.runs} runs, median CPU")
        print(f"bare python: {1000 * bare:.0f} ms; warm list --json: {1000 * warm:.0f} ms; "
              f"the target after 1 % changed (1.3 × warm): {1300 * warm:.0f} ms")
        print("runtime | changed | imports | + read | imports ÷ warm | (imports + read) ÷ warm")
        for rt in a.runtime or RUNTIMES:
            pool = [s for s in expected if s["runtime"] == rt]
            chosen = mutate.choose(pool, 0.01, a.seed * 1000)  # bench.run's first round of this runtime
            if not chosen:
                continue
            files = rt not in DATABASES
            # what bench.mutate changes: the transcripts, or the runtime's database (and Cline's documents)
            paths = sorted({s["path"] for s in chosen if s.get("path")} if files else {str(home / DATABASES[rt])})
            args = Path(state) / f"floor-{rt}.json"  # (every source's path: too long for an argv)
            args.write_text(json.dumps({"changed": paths, "known": _known(rt, env), "files": files}))
            imports, _ = measure([py, "-c", _IMPORTS, rt], env, a.runs)
            read, out = measure([py, "-c", _READ, rt, str(args)], env, a.runs)
            got = json.loads(out)
            what = f"{len(chosen)} sessions in {got['sources']} sources by {got['how']}" + (
                f", {got['sessions']} summarised" if files else " (database rows not read)")
            print(f"{rt} | {what} | {1000 * imports:.0f} ms | {1000 * read:.0f} ms | {imports / warm:.2f} | "
                  f"{read / warm:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
