"""Refresh the sample store `segue demo` ships: `python -m tests.realruntimes.make_demo`.

It copies the real-runtime fixtures (tests/fixtures/real/<runtime>/home) into the package's `demo_data/`,
without databases that are only caches (Codex `state_*.sqlite`, logs) and without the live captures.
Wheels leave out dot-directories (`.claude`, `.codex`, …), so a leading dot becomes `_dot_` here and the
sample's `env` points at the renamed directories.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real"
DEMO = ROOT / "server" / "segue" / "demo_data"
SKIP = ("state_*.sqlite*", "logs_*.sqlite*", "*.log")


def undot_name(name: str) -> str:
    return "_dot_" + name[1:] if name.startswith(".") and name not in (".", "..") else name


def undot(root: Path) -> None:
    for path in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):  # deepest first
        if path.name.startswith("."):
            path.rename(path.with_name(undot_name(path.name)))


def main() -> None:
    if DEMO.exists():
        shutil.rmtree(DEMO)
    for fixture in sorted(p for p in REAL.iterdir() if (p / "expected.json").is_file()):
        exp = json.loads((fixture / "expected.json").read_text(encoding="utf-8"))
        dest = DEMO / fixture.name
        shutil.copytree(fixture / "home", dest / "home", ignore=shutil.ignore_patterns(*SKIP))
        undot(dest / "home")
        env = {k: "/".join(undot_name(part) for part in v.split("/")) for k, v in exp["env"].items()}
        meta = {"runtime": exp["runtime"], "version": exp["version"], "generated_at": exp["generated_at"],
                "env": env, "note": "written by the real runtime offline against a scripted fake model"}
        (dest / "sample.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        print(f"{fixture.name}: {sum(f.stat().st_size for f in dest.rglob('*') if f.is_file())} bytes")


if __name__ == "__main__":
    main()
