"""The redactor's cost per text on the real mix a listing and a first search build redact (issues 16 and 17).

    python -m bench.bench_redact_mix collect CORPUS MIX        # MIX: a pickle of the texts (about 25 MB for 8k)
    python -m bench.bench_redact_mix time MIX --base OLD/server [--runs 5] [--held | --dev]
    python -m bench.bench_redact_mix same MIX --base OLD/server  # byte-identical outputs and spans, all texts

`collect` records, from CORPUS/home, every session's title and first request as the readers summarise them (what a
cold listing redacts) and every `Redactor.excerpt` call of a serial first search build (messages, commands,
requests, file paths, shown titles; the Distinct memo already applied, so only what the build really redacts),
with the session each belongs to. `time` replays them in child processes, this checkout's `server/` and the base
alternating: per kind, µs of CPU per text (best of --runs, after one warm-up pass), one fresh per-session Redactor
as the build and the listing use. Sessions whose number is a multiple of 5 are the held-out part (--held); the
rest (--dev) is what tuning looked at. `same` compares every output (listing redactions, excerpts in order, raw
spans of every distinct text, the redaction corpora of tests/data/redaction) between the two.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NEW_SERVER = HERE.parent / "server"
KINDS = ("title", "first", "request", "command", "message", "shown", "file")

_COLLECT = r"""
import os, pickle, sys
from pathlib import Path
os.environ["SEGUE_SEARCH_WORKERS"] = "0"
from segue.redact import core
from segue.search import index as sindex
from segue.listing import reader_for
from segue.stores import RUNTIMES
from segue.stores.base import Env
from segue.paths import StateDir
from segue.service import Service
from segue.search import engine
home, state, out = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
env = Env(home=home, environ={"HOME": str(home)})
listing = []
for rt in RUNTIMES:
    r = reader_for(rt, env)
    for src in r.sources():
        try:
            listing += [(rt, s.title, s.first_request) for s in r.summarize(src)]
        except Exception:
            pass
calls, kind, n = [], ["shown"], [0]
plain = core.Redactor._excerpt
def rec(self, text, limit, keep, truncated):
    g = self.__dict__.get("_mix_session")
    if g is None:
        g = self.__dict__["_mix_session"] = n[0]; n[0] += 1
    calls.append((g, kind[0], text, limit, keep))
    return plain(self, text, limit, keep, truncated)
core.Redactor._excerpt = rec
indexed = sindex.indexed_text
def it(k, text, redact):
    kind[0] = k
    try:
        return indexed(k, text, redact)
    finally:
        kind[0] = "shown"
sindex.indexed_text = it
svc = Service(StateDir(state), env=Env(home=home, environ={}), environ={})
engine.ensure_fresh(svc, force=True)
with open(out, "wb") as f:
    pickle.dump({"listing": listing, "calls": calls}, f, protocol=5)
print(len(listing), "sessions listed,", len(calls), "build excerpts")
"""

_REPLAY = r"""
import json, pickle, sys, time
from segue.redact import Redactor
mix, mode, part, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
d = pickle.load(open(mix, "rb"))
keep = (lambda i: True) if part == "all" else (lambda i: (i % 5 == 0) == (part == "held"))
listing = [x for i, x in enumerate(d["listing"]) if keep(i)]
calls = [c for c in d["calls"] if keep(c[0])]
base = Redactor(environ={}, remember=False)
def run_listing(which):
    out = []
    for _, title, first in listing:
        t = first if which == "first" else title
        if t:
            out.append(base.scoped().redact(t)[0])
    return out
def run_calls(kind):
    out, last, r = [], None, None
    for g, k, text, lim, kp in calls:
        if kind is not None and k != kind:
            continue
        if g != last:
            r, last = base.scoped(), g
        out.append(r.excerpt(text, lim, kp)[0])
    return out
def one(k):
    return run_listing(k) if k in ("title", "first") else run_calls(k)
kinds = ("title", "first", "request", "command", "message", "shown", "file")
if mode == "time":
    count = {k: len(one(k)) for k in kinds}  # warm-up: the keyword searches and patterns built
    best = {}
    for _ in range(runs):
        for k in kinds:
            t0 = time.process_time(); one(k); best[k] = min(best.get(k, 1e9), time.process_time() - t0)
    print(json.dumps({k: {"n": count[k], "s": best[k]} for k in kinds}))
else:
    import glob, hashlib
    res = {"title": run_listing("title"), "first": run_listing("first"), "calls": run_calls(None)}
    seen = dict.fromkeys(t for x in listing for t in x[1:] if t)
    seen.update(dict.fromkeys(c[2] for c in calls))
    res["spans"] = [base._spans(t) for t in seen]
    corpus = [json.loads(line)["text"] for f in sorted(glob.glob(sys.argv[5] + "/*.jsonl"))
              for line in open(f, encoding="utf-8") if line.strip()]
    b2 = Redactor(environ={})
    res["corpus"] = [(b2.scoped().redact(t), b2.scoped().excerpt(t, 300, "head"), b2.scoped().excerpt(t, 300, "tail"))
                     for t in corpus]
    print(json.dumps({"digest": hashlib.sha256(pickle.dumps(res)).hexdigest(), "texts": len(seen) + len(corpus),
                      "redacted": sum(o[1] > 0 for o, _, _ in res["corpus"])}))
"""


def _child(server: Path, script: str, *args: str) -> dict:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "TZ": "UTC", "PYTHONPATH": str(server)}
    out = subprocess.run([sys.executable, "-c", script, *args], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1]) if script is _REPLAY else {"out": out.stdout}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=("collect", "time", "same"))
    ap.add_argument("args", nargs="+")
    ap.add_argument("--base", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--held", action="store_true")
    g.add_argument("--dev", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "collect":
        corpus, mix = Path(a.args[0]), a.args[1]
        import tempfile

        with tempfile.TemporaryDirectory(prefix="redact-mix-state-") as state:
            print(_child(NEW_SERVER, _COLLECT, str(corpus / "home"), state, mix)["out"].strip())
        return 0
    if a.base is None:
        ap.error("--base is needed")
    mix = a.args[0]
    part = "held" if a.held else "dev" if a.dev else "all"
    if a.cmd == "same":
        data = str(HERE.parent / "tests" / "data" / "redaction")
        new, old = (_child(s, _REPLAY, mix, "same", "all", "1", data) for s in (NEW_SERVER, a.base))
        print(f"{new['texts']} texts ({new['redacted']} corpus texts redacted): "
              + ("identical" if new["digest"] == old["digest"] else "DIFFERENT"))
        return 0 if new["digest"] == old["digest"] else 1
    rows: dict[str, list[dict]] = {"new": [], "base": []}
    for i in range(2):  # alternating: what the machine's load does to one side it does to the other
        for side in (("base", "new") if i % 2 == 0 else ("new", "base")):
            rows[side].append(_child(NEW_SERVER if side == "new" else a.base, _REPLAY, mix, "time", part, str(a.runs)))
    print(f"{'kind':8s} {'texts':>7s} {'base µs':>9s} {'new µs':>9s} {'ratio':>6s}   ({part}, CPU, best of "
          f"{a.runs} x 2 processes, load {os.getloadavg()[0]:.1f})")
    tb = tn = 0.0
    for k in KINDS:
        n = rows["new"][0][k]["n"]
        b = min(r[k]["s"] for r in rows["base"])
        x = min(r[k]["s"] for r in rows["new"])
        tb, tn = tb + b, tn + x
        print(f"{k:8s} {n:7d} {1e6 * b / max(1, n):9.2f} {1e6 * x / max(1, n):9.2f} {x / b:6.2f}")
    print(f"{'total':8s} {'':7s} {tb * 1e3:7.0f}ms {tn * 1e3:7.0f}ms {tn / tb:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
