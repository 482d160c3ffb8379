"""A caller that waits for a scan already in flight (the server's first page, while the store watcher's first pass
reads the stores) hears that scan's progress while it waits, and nothing once it has its answer."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from segue.model import Session
from segue.paths import StateDir
from segue.service import Service
from segue.stores.base import Env, Source
from tests.test_listing import DirReader, use_reader

N = 6


class GatedReader(DirReader):
    """DirReader whose first summary waits until the test lets it go, so a scan can be held in flight."""
    started = threading.Event()
    go = threading.Event()

    def summarize(self, source: Source) -> list[Session]:
        if not GatedReader.started.is_set():
            GatedReader.started.set()
            assert GatedReader.go.wait(30)
        return super().summarize(source)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    for i in range(N):
        (store / f"{i}.json").write_text(json.dumps({"id": f"s{i}", "t": 1000 + i, "q": f"ask {i}"}))
    use_reader(monkeypatch, "claude", GatedReader)
    monkeypatch.setattr("segue.listing.RUNTIMES", ("claude",))
    GatedReader.started.clear()
    GatedReader.go.clear()
    return tmp_path


def _waiting_page(home: Path) -> tuple[list[tuple[str, int, int, int]], int]:
    svc = Service(StateDir(home / "state"), env=Env(home=home / "home"))
    svc.parallel = False  # the scan runs in the watcher's thread, where the gate holds it
    svc.reuse_within = 60.0  # as the server has it: a request takes the listing the watcher just made
    heard: list[tuple[str, int, int, int]] = []
    watcher = threading.Thread(target=svc.refresh)
    watcher.start()
    assert GatedReader.started.wait(30)  # the watcher's scan holds the listing's lock
    got: list[int] = []
    request = threading.Thread(target=lambda: got.append(len(svc.page(progress=lambda *a: heard.append(a)).sessions)))
    request.start()
    for _ in range(200):  # until the request waits for the scan in flight
        if svc._waiting:
            break
        threading.Event().wait(0.01)
    GatedReader.go.set()
    watcher.join(30)
    request.join(30)
    after = len(heard)
    svc.refresh()  # a later scan: the request has its answer and hears nothing more
    assert len(heard) == after
    return heard, got[0]


def test_a_request_waiting_for_the_watchers_scan_hears_its_progress(home: Path) -> None:
    heard, listed = _waiting_page(home)
    assert listed == N
    assert heard, "the waiting request heard the scan in flight"
    assert all(rt == "claude" for rt, *_ in heard)
    assert heard[-1][2:] == (N, N)  # it heard the scan to its end: every source read


def test_control_a_scan_that_tells_only_its_own_caller(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same wait with a scan that tells only its own caller (no relay): the waiting request hears nothing, so
    the test above tells a relayed scan from none."""
    monkeypatch.setattr(Service, "_told", lambda self, own: own)
    heard, listed = _waiting_page(home)
    assert listed == N and heard == []
