"""A search refresh discovers each runtime's sources once: the listing it indexes takes the sources that the
freshness check has just fingerprinted (scan's `known`) instead of walking the stores again. What it indexes
is what an own-discovery listing indexes, row for row; a runtime whose discovery failed in the check is
discovered by the listing itself; SEGUE_SEARCH_SHARE_SOURCES=0 switches the sharing off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from segue.listing import reader_for
from segue.stores import RUNTIMES
from segue.stores.base import Env
from tests.test_search import copy_stores, service
from tests.test_search_build import _grow_claude, dump


def _count_discovery(monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], fail: str | None = None
                     ) -> dict[str, int]:
    """Counts each runtime's `sources()` calls; `fail`: that runtime's first call raises."""
    calls: dict[str, int] = {}
    env = Env(home=Path("/nonexistent"), environ=environ)
    for cls in {type(reader_for(rt, env)) for rt in RUNTIMES}:
        real = cls.sources

        def counted(self: Any, real: Any = real) -> Any:
            rt = self.runtime
            calls[rt] = calls.get(rt, 0) + 1
            if rt == fail and calls[rt] == 1:
                raise OSError("the store was away for a moment")
            return real(self)

        monkeypatch.setattr(cls, "sources", counted)
    return calls


def _rooted(root: Path, value: Any) -> Any:
    import json

    return json.loads(json.dumps(value).replace(str(root), "<root>"))


def _build_and_grow(root: Path, environ: dict[str, str], queries: tuple[str, ...] = ("zebrafish", "files")
                    ) -> list[Any]:
    out = []
    svc = service(root, environ)
    out.append({q: svc.search(q, limit=100).to_json() for q in queries})
    out.append(dump(root))
    _grow_claude(root)
    svc = service(root, environ)
    out.append({q: svc.search(q, limit=100).to_json() for q in queries})
    out.append(dump(root))
    return _rooted(root, out)


def test_a_refresh_indexes_what_an_own_discovery_listing_indexes(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env_a, env_b = copy_stores(a), copy_stores(b)

    monkeypatch.setenv("SEGUE_SEARCH_SHARE_SOURCES", "0")
    # (every runtime discovered and listed at the update: the partial passes are tests/test_search_scoped.py's,
    # the patch of moved transcripts tests/test_search_patch.py's)
    monkeypatch.setenv("SEGUE_SEARCH_PATCH", "0")
    monkeypatch.setenv("SEGUE_SEARCH_SCOPED", "0")
    monkeypatch.setenv("SEGUE_SEARCH_REDISCOVER", "0")
    calls = _count_discovery(monkeypatch, env_a)
    own = _build_and_grow(a, env_a)
    assert calls == {rt: 4 for rt in RUNTIMES}  # the check and the listing, at the build and at the update

    monkeypatch.undo()
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    monkeypatch.setenv("SEGUE_SEARCH_PATCH", "0")
    monkeypatch.setenv("SEGUE_SEARCH_SCOPED", "0")
    monkeypatch.setenv("SEGUE_SEARCH_REDISCOVER", "0")
    calls = _count_discovery(monkeypatch, env_b)
    shared = _build_and_grow(b, env_b)
    assert calls == {rt: 2 for rt in RUNTIMES}  # the check alone
    assert shared == own
    assert own[2]["zebrafish"]["total"] > 0 and own[1]["sessions"] and own[1]["docs"]


def test_a_runtime_whose_discovery_failed_in_the_check_is_discovered_by_the_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env_a, env_b = copy_stores(a), copy_stores(b)
    svc = service(a, env_a)
    svc.search("files")
    reference = _rooted(a, dump(a))

    calls = _count_discovery(monkeypatch, env_b, fail="codex")
    svc = service(b, env_b)
    svc.search("files")
    assert calls["codex"] == 2 and all(calls[rt] == 1 for rt in RUNTIMES if rt != "codex")
    got = _rooted(b, dump(b))
    assert any(row[1] == "codex" for row in got["sessions"])  # the listing found them itself
    assert got == reference
