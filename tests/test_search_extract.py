"""The search-only extraction (`Reader.search_steps`, e.g. stores/opencode/search.py) gives the search index
exactly what the reference `Reader.steps()` gives it: per session the same steps in `kind`, `text`, `exit_code`
and `path` (all the index hashes and stores), on every store of the reader contract (real fixtures, hand-made
generations, tool-output-heavy and generated corpora) in every serialisation variant (spaces, indent, key
orders, CRLF, BOM, blank lines, a torn last line); and the index built either way is the same row for row.
SEGUE_FAST_PATHS=0 turns the extraction off."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from segue.listing import reader_for
from segue.model import ReadStats
from segue.stores.base import Env
from tests.test_reader_contract import STORES, VARIANTS, Store, _tree
from tests.test_search import copy_stores, service
from tests.test_search_build import dump


def _env(store: Store, fast: bool) -> Env:
    root = store.root
    return Env(home=root / store.home, environ={**{k: str(root / v) for k, v in store.environ.items()},
                                                "SEGUE_FAST_PATHS": "1" if fast else "0"})


def indexed(store: Store, runtimes: tuple[str, ...], extract: bool) -> dict[str, Any]:
    """Per session: what the index takes of its steps, from the extraction or from the reference."""
    env = _env(store, fast=extract)
    out: dict[str, Any] = {}
    for rt in runtimes:
        reader = reader_for(rt, env)
        for src in reader.sources():
            try:
                sessions = reader.summarize(src)
            except OSError:
                continue
            for s in sessions:
                it = reader.search_steps(s, ReadStats()) if extract else reader.steps(s, ReadStats())
                key = f"{rt}:{s.id}:{os.path.relpath(s.store_path, store.root)}"
                out[key] = [(st.kind, st.text, st.exit_code, st.path) for st in it]
    return out


_REF: dict[str, dict[str, Any]] = {}


def _reference(name: str, factory: pytest.TempPathFactory) -> dict[str, Any]:
    if name not in _REF:
        _REF[name] = indexed(_tree(name, "", factory), STORES[name][0], extract=False)
        assert any(_REF[name].values()), f"{name}: no steps at all"
    return _REF[name]


def _first_difference(want: dict[str, Any], got: dict[str, Any]) -> str:
    if set(want) != set(got):
        return f"sessions differ: missing {sorted(set(want) - set(got))}, extra {sorted(set(got) - set(want))}"
    for k in want:
        if want[k] != got[k]:
            for i, (a, b) in enumerate(zip(want[k], got[k], strict=False)):
                if a != b:
                    return f"{k} step {i}:\n  want {str(a)[:800]}\n  got  {str(b)[:800]}"
            return f"{k}: {len(want[k])} steps wanted, {len(got[k])} got"
    return ""


def _params() -> list[Any]:
    return [pytest.param(name, variant, id=f"{name}-{variant or 'as-written'}",
                         marks=[pytest.mark.slow] if name.startswith("generated") else [])
            for name in STORES for variant in ("", *VARIANTS)]


@pytest.mark.parametrize(("name", "variant"), _params())
def test_extraction_gives_the_index_what_steps_gives(name: str, variant: str,
                                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    want = _reference(name, tmp_path_factory)
    got = indexed(_tree(name, variant, tmp_path_factory), STORES[name][0], extract=True)
    problem = _first_difference(want, got)
    if problem:
        pytest.fail(problem, pytrace=False)


def test_the_comparison_catches_a_difference(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Negative control: a store whose command really differs is caught by the same comparison."""
    want = _reference("real-opencode", tmp_path_factory)
    store = _tree("real-opencode", "", tmp_path_factory)
    import shutil
    import sqlite3

    other = tmp_path_factory.mktemp("control")
    shutil.copytree(store.root / store.home, other / store.home, symlinks=True)
    changed = 0
    for p in (other / store.home).rglob("*.db"):
        con = sqlite3.connect(p)
        changed += con.execute("UPDATE part SET data = replace(data, 'nonexistent-dir', 'another-dir')").rowcount
        con.commit()
        con.close()
    assert changed
    got = indexed(Store(other, store.home, store.environ), ("opencode",), extract=True)
    assert "another-dir" in _first_difference(
        {k.replace(str(other), str(store.root)): v for k, v in want.items()}, got)


def test_the_extraction_is_used_and_switched_off_by_fast_paths_0(tmp_path_factory: pytest.TempPathFactory,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenCode's database sessions never reach steps() while fast paths are on; with SEGUE_FAST_PATHS=0 they
    all do."""
    from segue.stores.opencode.reader import OpencodeReader

    store = _tree("real-opencode", "", tmp_path_factory)
    calls: list[str] = []
    real = OpencodeReader.steps

    def counted(self: Any, s: Any, stats: ReadStats) -> Any:
        calls.append(s.id)
        return real(self, s, stats)

    monkeypatch.setattr(OpencodeReader, "steps", counted)
    fast = indexed(store, ("opencode",), extract=True)
    db = [k for k in fast if k.endswith(".db")]
    assert db and not calls
    calls.clear()
    env = _env(store, fast=False)
    reader = reader_for("opencode", env)
    for src in reader.sources():
        for s in reader.summarize(src):
            list(reader.search_steps(s, ReadStats()))
    assert len(calls) >= len(db)


def test_index_built_from_the_extraction_is_the_reference_index_row_for_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole build (serial), once with the extraction and once with SEGUE_FAST_PATHS=0 (steps()): every
    row of `sessions` and `docs` equal (hashes included)."""
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    built = []
    for name, fast in (("a", "1"), ("b", "0")):
        root = tmp_path / name
        root.mkdir()
        environ = {**copy_stores(root), "SEGUE_FAST_PATHS": fast}
        svc = service(root, environ)
        assert svc.search('"write what happened"', limit=100).total > 0
        built.append(json.loads(json.dumps(dump(root)).replace(str(root), "<root>")))
    assert built[0]["docs"] and built[0] == built[1]
