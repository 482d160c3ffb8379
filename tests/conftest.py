"""Shared test setup: the network guard, Segue's state dir per test, and the real-runtime fixtures."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NETGUARD = Path(__file__).resolve().parent / "netguard"
REAL = Path(__file__).resolve().parent / "fixtures" / "real"
# stores other versions of a runtime wrote (newer than its pin in tests/realruntimes/install.sh), same layout
REAL_VERSIONS = REAL.parent / "real-versions"

# In this process and every Python child the tests start: loopback-only networking.
sys.path.insert(0, str(NETGUARD))
import sitecustomize  # noqa: E402,F401  (installs the guard)

from segue.stores import RUNTIMES  # noqa: E402  (the registry: every runtime Segue reads)

os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(NETGUARD), str(ROOT / "server"), *filter(None, [os.environ.get("PYTHONPATH")])])


@pytest.fixture(autouse=True)
def _segue_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own Segue state dir, so nothing reads or writes the real one."""
    home = tmp_path / "segue-home"
    monkeypatch.setenv("SEGUE_HOME", str(home))
    return home


def real_fixture(runtime: str) -> tuple[Path, dict[str, Any]]:
    """(fixture dir, expected.json) of a store written by the real runtime. Fails when missing. `runtime` may
    name another version's store kept beside the pinned one (REAL_VERSIONS, e.g. "claude-2.1.332")."""
    d = REAL_VERSIONS / runtime if (REAL_VERSIONS / runtime).is_dir() else REAL / runtime
    exp = d / "expected.json"
    if not exp.is_file():
        pytest.fail(f"real-runtime fixture missing: {exp} "
                    f"(regenerate: python -m tests.realruntimes.generate {runtime})")
    return d, json.loads(exp.read_text(encoding="utf-8"))


def make_session_dirs(exp: dict[str, Any]) -> None:
    """The directories a real fixture's sessions ran in (resume plans need them). A runtime that stores no branch
    is read live from the directory, so the directory gets the repo it had."""
    import subprocess

    from segue.stores import descriptor

    for s in exp["sessions"]:
        cwd = Path(s["cwd"])
        cwd.mkdir(parents=True, exist_ok=True)
        if descriptor(exp["runtime"]).branch_from_checkout and s["branch"] and not (cwd / ".git").exists():
            subprocess.run(["git", "init", "-q", "-b", s["branch"], str(cwd)], check=True)


def load_fixture(runtime: str, copy_to: Path | None = None, sub: str = "", **environ: str
                 ) -> tuple[Any, dict[str, Any], Path]:
    """The one loader of a real-runtime fixture: (Env pointing at its store, expected.json, its root).

    With `copy_to`, the fixture is copied there first (SQLite stores: a reader may be allowed to touch a
    `-shm`, never in the repository). `sub` picks a sub-fixture (`live-capture`); `environ` adds variables
    (e.g. SEGUE_FAST_PATHS="0")."""
    from segue.stores.base import Env

    d, exp = real_fixture(runtime)
    if copy_to is not None:
        shutil.copytree(d, copy_to, symlinks=True)
        d = copy_to
    base = d / sub if sub else d
    env_map = exp.get("env", {})
    variables = {k: str((base / v).absolute()) for k, v in env_map.items() if k != "HOME"}
    home = base / env_map.get("HOME", "home")
    return Env(home=home, environ={**variables, **environ}), exp, d


def use_reader(monkeypatch: pytest.MonkeyPatch, runtime: str, reader: Any) -> None:
    """Make a registered runtime read through `reader` (a Reader class, or any callable of an Env) for one
    test: its descriptor is replaced in the registry, everything else about the runtime stays."""
    import dataclasses

    from segue import stores

    monkeypatch.setitem(stores._BY_ID, runtime, dataclasses.replace(stores.descriptor(runtime), reader=reader))


def real_environ(runtimes: tuple[str, ...] = RUNTIMES, base: Path | None = None
                 ) -> dict[str, str]:
    """Environment variables that point Segue at the real fixtures' stores (copied under `base` if given)."""
    out: dict[str, str] = {}
    for rt in runtimes:
        d, exp = real_fixture(rt)
        for var, rel in exp.get("env", {}).items():
            if var == "HOME":
                continue
            out[var] = str((base / rt if base else d) / rel)
    return out


def assert_steps_match_scenario(steps: list[Any], stats: Any, want: dict[str, Any]) -> None:
    """A reader's steps of one real-fixture session against what its scripted scenario made the agent do."""
    name = want["scenario"]
    cmds = [{"command": x.text, "exit_code": x.exit_code} for x in steps if x.kind == "command"]
    assert cmds == want["commands"], name
    edited = {x.path for x in steps if x.kind == "edit"}
    assert set(want["files_written"]) <= edited, (name, edited)
    refs = [x.ref for x in steps if x.kind == "subagent"]
    assert refs == want.get("subagent_ids", []), name
    requests = [x.text for x in steps if x.kind == "request"]
    assert requests and requests[0] == want["first_request"], name
    assert requests[-1] == want["latest_request"], name
    assert stats.damaged_lines == 0 and not stats.problems, (name, stats)
    if want["parent_id"] is None:
        assert steps[-1].kind == "message", name


def record_forks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each time segue.alongside is asked for a child from now on: whether one started (True) or not."""
    from segue import alongside

    started: list[bool] = []
    real = alongside.start_value

    def start_value(work: Any) -> Any:
        wait = real(work)
        started.append(wait is not None)
        return wait

    monkeypatch.setattr(alongside, "start_value", start_value)
    return started
