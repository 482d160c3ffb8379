"""The bundled sample store as one Markdown document, for an editor with no sessions of its own ("Open the
demo sample"): the same listing and brief `segue demo` prints, read from a temporary copy of the sample."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from segue.demo import DATA, runtime_names, sample_env
from segue.paths import StateDir
from segue.quote import fence


def demo_markdown() -> str:
    from segue.service import Service
    from segue.table import render_table

    if not DATA.is_dir():
        return "# Segue sample\n\nThis installation has no bundled sample store.\n"
    with tempfile.TemporaryDirectory(prefix="segue-demo-") as tmp:
        root = Path(tmp)
        svc = Service(StateDir(root / "state"), env=sample_env(root))
        sessions = svc.page().sessions
        table = render_table(sessions, time.time()) if sessions else "(the sample lists no sessions)"
        out = ["# Segue sample (not your sessions)", "",
               f"Sessions written by the real {runtime_names()} (offline, against a "
               "scripted model), read from a temporary copy. Your own sessions appear in the Sessions view once "
               "a runtime has written some.", "", "## Sessions", "", fence(table)]
        first = next((s for s in sessions if s.continues is None), sessions[0] if sessions else None)
        if first is not None:
            brief = svc.brief(first.ref).markdown
            out += [f"## The brief of one sample session ({first.runtime})", "", brief]
    return "\n".join(out)
