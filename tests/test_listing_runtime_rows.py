"""A `runtime:id` lookup loads only that runtime's index rows (`ListingCache(state, runtimes)`); a later scan
of every runtime in the same process loads the others' rows then (`ListingCache.need`): the same listing as a
fresh process's, and no source read again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from segue import listing
from segue.paths import StateDir
from segue.service import Service
from segue.stores.base import Env
from tests.test_reader_contract import _tree


def _listed(svc: Service) -> list[Any]:
    return sorted((s.runtime, s.id, str(s.to_json())) for s in svc.scan().sessions)


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    seen = {"reads": 0}
    real = listing._summarize

    def counting(*a: Any, **k: Any) -> Any:
        seen["reads"] += 1
        return real(*a, **k)

    monkeypatch.setattr(listing, "_summarize", counting)
    return seen


@pytest.fixture
def warm(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> tuple[Env, StateDir, list[Any]]:
    store = _tree("generated-codex", "", tmp_path_factory)
    env = Env(home=store.root / store.home, environ={})
    state = StateDir(tmp_path / "state")
    want = _listed(Service(state, env))  # cold: writes the index
    assert {rt for rt, _, _ in want} >= {"claude", "codex", "opencode"}
    return env, state, want


def test_a_runtime_lookup_loads_its_rows_and_a_later_scan_the_rest(
        warm: tuple[Env, StateDir, list[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    env, state, want = warm
    svc = Service(state, env)
    codex = next(sid for rt, sid, _ in want if rt == "codex")
    reads = _count_reads(monkeypatch)
    session, _ = svc.find(f"codex:{codex}")
    assert session.id == codex
    assert svc._cache is not None and {k.partition("\0")[0] for k in svc._cache.entries} == {"codex"}
    assert _listed(svc) == want
    assert reads["reads"] == 0  # every other runtime's rows came from the index, not their stores


def test_without_loading_the_rest_the_scan_reads_them_again(
        warm: tuple[Env, StateDir, list[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: the counter sees a scan that had no rows for the other runtimes."""
    env, state, want = warm
    svc = Service(state, env)
    codex = next(sid for rt, sid, _ in want if rt == "codex")
    svc.find(f"codex:{codex}")
    monkeypatch.setattr(listing.ListingCache, "need", lambda self, runtimes: None)
    reads = _count_reads(monkeypatch)
    assert _listed(svc) == want
    assert reads["reads"] > 0
