"""`segue demo`: list and brief a small sample store written by the real runtimes.

The sample ships inside the package (`demo_data/<runtime>/home`, copied from the test fixtures that the real
runtimes wrote offline). It is copied to a temporary HOME, so nothing of the person's own is read or
written, and everything printed is labelled as a sample.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from segue.paths import StateDir
from segue.stores.base import Env

DATA = Path(__file__).with_name("demo_data")


def runtime_names() -> str:
    """The registered runtimes' names as a sentence: "A, B and C"."""
    from segue.stores import REGISTRY

    names = [d.name for d in REGISTRY]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def _redot(part: str) -> str:
    return "." + part[len("_dot_"):] if part.startswith("_dot_") else part


def sample_env(root: Path) -> Env:
    """Copy every bundled runtime store under `root` and return an Env pointing at the copies.

    Wheels leave out dot-directories, so the sample ships `.claude` as `_dot_claude`; the copy gets the real
    names back, which a store found only below HOME or a home override (`$GEMINI_CLI_HOME/.gemini`) needs."""
    environ: dict[str, str] = {}
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    for rt_dir in sorted(p for p in DATA.iterdir() if p.is_dir()):
        meta = json.loads((rt_dir / "sample.json").read_text(encoding="utf-8"))
        dest = root / rt_dir.name
        shutil.copytree(rt_dir / "home", dest / "home", symlinks=True)
        for path in sorted((dest / "home").rglob("_dot_*"), key=lambda p: len(p.parts), reverse=True):
            path.rename(path.with_name(_redot(path.name)))  # deepest first
        for var, rel in meta.get("env", {}).items():
            if var != "HOME":
                environ[var] = str(dest / "/".join(_redot(part) for part in rel.split("/")))
    return Env(home=home, environ=environ)


def run_demo() -> int:
    from segue.service import Service
    from segue.table import render_table

    if not DATA.is_dir():
        print("segue: this installation has no bundled sample store", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="segue-demo-") as tmp:
        root = Path(tmp)
        svc = Service(StateDir(root / "state"), env=sample_env(root))
        sessions = svc.page().sessions
        print(f"SAMPLE: sessions written by the real {runtime_names()} (offline, against a "
              "scripted model), copied to a temporary HOME. Your own sessions: `segue list`.\n")
        print(render_table(sessions, time.time()))
        if not sessions:
            return 1
        # brief a session that did something (not one that merely continues another)
        first = next((s for s in sessions if s.continues is None), sessions[0])
        brief = svc.brief(first.ref)
        print(f"\nSAMPLE brief of {first.ref} (what `segue brief {first.ref}` writes):\n")
        print(brief.markdown)
    return 0
