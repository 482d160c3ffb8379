"""The benchmark's correctness half at a tiny size: the generator's stores are complete and found by Segue.

`bench.generate` writes every registered runtime's stores (every generation, subagents, a big transcript by block
copies); `segue list --json --all` must list every generated session with its first request. Timing is
`python -m bench.run`'s job, not this test's.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.check import check, first_request_matches
from bench.generate import generate
from segue.stores import RUNTIMES

ROOT = Path(__file__).resolve().parent.parent


def _tiny(out: Path, seed: int = 3) -> dict[str, Any]:
    return generate(out, n=12, seed=seed, big_mb=0.4, big_count=6, log=lambda _msg: None)


def _listed(home: Path, state: Path) -> list[dict[str, Any]]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "SEGUE_HOME": str(state), "LANG": "C.UTF-8",
           "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT / "server"))}
    r = subprocess.run([sys.executable, "-m", "segue", "list", "--json", "--all"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.slow
def test_every_generated_session_and_first_request_is_listed(tmp_path: Path) -> None:
    exp = _tiny(tmp_path / "corpus")
    counts = exp["counts"]
    assert set(counts) == set(RUNTIMES) and all(n == 12 for n in counts.values())
    gens = {s["gen"] for s in exp["sessions"]}
    # the mix the benchmark relies on is really there: several generations, subagents, a big transcript
    assert {"C3", "X5", "E2", "S1", "G1", "G2"} <= gens, gens
    assert any(s["parent_id"] for s in exp["sessions"])
    assert exp["targets"]["claude"]["bytes"] > 300_000 and exp["targets"]["codex"]["bytes"] > 300_000

    res = check(exp["sessions"], _listed(tmp_path / "corpus" / "home", tmp_path / "state"))
    assert res["per_runtime"].keys() == counts.keys()
    for rt, c in res["per_runtime"].items():
        assert c.get("found") == counts[rt], (rt, res["missing_examples"])
        assert c.get("first_request_ok") == counts[rt], (rt, res["wrong_examples"])
        assert not c.get("parent_wrong"), rt
    assert res["ok"] and res["extra"] == 0, res


def _digests(root: Path) -> dict[str, str]:
    """Every file's hash with the corpus root taken out (stores embed absolute paths)."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath, f)
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes().replace(str(root).encode(), b"@")).hexdigest()
    return out


@pytest.mark.slow
def test_generator_is_deterministic(tmp_path: Path) -> None:
    _tiny(tmp_path / "a")
    _tiny(tmp_path / "b")
    _tiny(tmp_path / "c", seed=4)
    a, b, c = _digests(tmp_path / "a"), _digests(tmp_path / "b"), _digests(tmp_path / "c")
    assert a == b
    assert a != c  # the seed matters


def test_check_fails_on_a_missing_session_or_a_wrong_first_request() -> None:
    expected = [{"runtime": "codex", "id": "x1", "parent_id": None, "first_request": "Fix the parser.", "gen": "X5"},
                {"runtime": "claude", "id": "y2", "parent_id": "y1", "first_request": "Count files.", "gen": "C3"}]
    listed = [{"runtime": "codex", "id": "x1", "parent_id": None, "first_request": "Fix the parser."},
              {"runtime": "claude", "id": "y2", "parent_id": "y1", "first_request": "Count files."}]
    assert check(expected, listed)["ok"]
    assert not check(expected, listed[:1])["ok"]
    wrong = [listed[0], dict(listed[1], first_request="Count files")]
    r = check(expected, wrong)
    assert not r["ok"] and r["wrong_examples"][0]["ref"] == "claude:y2"
    assert check(expected, [*listed, {"runtime": "cline", "id": "z", "parent_id": None}])["extra"] == 1


def test_capped_first_request_matches_only_its_own_start() -> None:
    long = "Fix it. " + "x" * 20_000
    assert first_request_matches(long, long[:8191] + "…")
    assert first_request_matches(long, long[:8192])  # Codex cuts by bytes, without an ellipsis
    assert not first_request_matches(long, "Fix it.")  # too short to be a cap
    assert not first_request_matches(long, "Fix that. " + "x" * 2000 + "…")
    assert not first_request_matches("short", None)


@pytest.mark.slow
def test_opencode_rows_floor_reads_every_database_session_and_its_first_message(tmp_path: Path) -> None:
    from bench.floor import opencode_rows

    exp = _tiny(tmp_path / "corpus")
    in_db = [s for s in exp["sessions"] if s["runtime"] == "opencode" and s["gen"] == "E2"]
    db = tmp_path / "corpus" / "home" / ".local" / "share" / "opencode" / "opencode.db"
    got = opencode_rows(str(db))
    assert in_db and got["sessions"] == len(in_db)
    assert got["decoded"] == 2 * len(in_db)  # a first message and its first part for every session


@pytest.mark.slow
def test_cold_paired_compiles_each_side_once_outside_the_trees(tmp_path: Path) -> None:
    """`bench.cold_paired` against a copy of `server/` without bytecode: both sides print the same listing, and
    their bytecode goes to the run's own directory, none into either tree (a side that compiled on every run
    measured ~10 % more CPU than a checkout holding `__pycache__`: stop 43)."""
    import shutil

    from bench import cold_paired

    corpus = tmp_path / "corpus"
    _tiny(corpus)
    base = tmp_path / "base" / "server"
    shutil.copytree(ROOT / "server", base, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONPYCACHEPREFIX", None)
    r = subprocess.run([sys.executable, "-m", "bench.cold_paired", "--corpus", str(corpus), "--base", str(base),
                        "--runs", "1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "identical output: True" in r.stdout
    assert not list(base.rglob("__pycache__")) and not list(base.rglob("*.pyc"))
    cold_paired.PYCACHE[:] = ["/x/pyc"]
    try:
        got = cold_paired._env({})
    finally:
        cold_paired.PYCACHE.clear()
    assert got["PYTHONPYCACHEPREFIX"] == "/x/pyc" and "PYTHONDONTWRITEBYTECODE" not in got
