"""Workers started before a first build's listing (segue.search.workers.Pool): the build takes them instead of
starting its own, builds the index it builds without them, and leaves no process behind when it takes none (the
work too small for workers, or workers started for other arguments)."""

from __future__ import annotations

from typing import Any

import pytest

from segue.search import index as I
from segue.search import workers
from tests import test_search_build
from tests.test_search_build import build

two = test_search_build.two  # the fixture, shared (a plain name, so its parameters do not shadow an import)


class Spawns:
    """Every worker process started, and where: in a Pool (ahead) or in run (late)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ahead: list[Any] = []
        self.late: list[Any] = []
        self.in_pool = False
        real_init = workers._Worker.__init__
        real_pool = workers.Pool.__init__
        spawns = self

        def init(w: Any, wid: int, init: Any) -> None:
            real_init(w, wid, init)
            (spawns.ahead if spawns.in_pool else spawns.late).append(w)

        def pool(p: Any, *a: Any, **kw: Any) -> None:
            spawns.in_pool = True
            try:
                real_pool(p, *a, **kw)
            finally:
                spawns.in_pool = False

        monkeypatch.setattr(workers._Worker, "__init__", init)
        monkeypatch.setattr(workers.Pool, "__init__", pool)

    def all_ended(self) -> bool:
        return all(w.proc.poll() is not None for w in self.ahead + self.late)


def test_a_first_build_takes_the_workers_started_ahead(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, env_a, env_b = two
    monkeypatch.setenv("SEGUE_SEARCH_PRESTART", "0")
    off = Spawns(monkeypatch)
    without = build(a, env_a, monkeypatch, 2)
    assert len(off.late) == 2 and not off.ahead  # (the control: no pool, run starts its own)
    monkeypatch.setenv("SEGUE_SEARCH_PRESTART", "1")
    on = Spawns(monkeypatch)
    assert build(b, env_b, monkeypatch, 2) == without
    assert len(on.ahead) == 2 and not on.late
    assert on.all_ended() and off.all_ended()


def test_workers_started_for_other_arguments_are_stopped_not_used(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _a, b, _env_a, env_b = two
    spawns = Spawns(monkeypatch)
    real_run = workers.run
    # the build asks for workers without the cache directory the pool's were started with
    monkeypatch.setattr(workers, "run", lambda tasks, env, environ, n, cache_dir=None, **kw:
                        real_run(tasks, env, environ, n, None, **kw))
    build(b, env_b, monkeypatch, 2)
    assert len(spawns.ahead) == 2 and len(spawns.late) == 2
    assert spawns.all_ended()


def test_a_build_too_small_for_workers_stops_the_ones_started_ahead(two: Any, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    a, b, env_a, env_b = two
    serial = build(a, env_a, monkeypatch, 0)
    monkeypatch.setattr(I, "PARALLEL_WORK_MS", 1e12)  # never worth the workers: the writer reads every session
    spawns = Spawns(monkeypatch)
    assert build(b, env_b, monkeypatch, 2) == serial
    assert len(spawns.ahead) == 2 and not spawns.late
    assert spawns.all_ended()


def test_no_workers_start_ahead_of_a_refresh(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a first (or forced) build starts them ahead: a later refresh mostly reads a few sessions itself."""
    _a, b, _env_a, env_b = two
    build(b, env_b, monkeypatch, 2)
    from tests.test_search_build import _grow_claude

    _grow_claude(b)
    spawns = Spawns(monkeypatch)
    monkeypatch.setenv("SEGUE_SEARCH_PATCH", "0")  # (through the listing, where a pool could start)
    build(b, env_b, monkeypatch, 2)
    assert not spawns.ahead
