"""`segue demo` works on a fresh machine: it lists and briefs the bundled sample, and touches nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from segue.demo import DATA
from segue.stores import RUNTIMES


def test_demo_lists_and_briefs_the_bundled_sample(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "CODEX_", "XDG_", "CLINE_", "OPENCODE"))}
    env.update(HOME=str(tmp_path / "home"), SEGUE_HOME=str(tmp_path / "state"))
    (tmp_path / "home").mkdir()
    p = subprocess.run([sys.executable, "-m", "segue", "demo"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("SAMPLE:")
    bundled = sorted(d.name for d in DATA.iterdir() if d.is_dir())
    assert set(bundled) == set(RUNTIMES)  # one sample per registered runtime
    table = p.stdout.split("SAMPLE brief")[0]
    for rt in bundled:
        assert any(line.split()[1:2] == [rt] for line in table.splitlines()[1:]), f"no {rt} session listed"
        meta = json.loads((DATA / rt / "sample.json").read_text())
        assert meta["runtime"] == rt and meta["version"]
    assert "# Segue handoff brief:" in p.stdout and "Confirm the task with the user" in p.stdout
    assert "Sup3rS3cret-42" not in p.stdout.split("SAMPLE brief")[1]  # briefs redact
    assert list((tmp_path / "home").iterdir()) == [] and not (tmp_path / "state").exists()


def test_sample_has_no_dot_names_that_a_wheel_would_drop() -> None:
    dotted = [p for p in DATA.rglob("*") if any(part.startswith(".") for part in p.relative_to(DATA).parts)]
    assert dotted == []
