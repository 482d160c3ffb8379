"""The language server's view shares the raw listing's sessions and copies only those decoration changes.

The reference is the view built from a copy of every session (what the service did before); the shared view
must serve the same JSON, and the raw listing (which the next watcher pass reuses) must never see a decoration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from segue import listing, service
from segue.lineage import marker
from segue.model import Session
from segue.paths import StateDir
from segue.service import Service
from segue.stores.base import Env, Source
from segue.tokens import Registry
from tests.conftest import use_reader
from tests.test_listing import DirReader


class CheckoutReader(DirReader):
    """OpenCode-like sessions (no branch of their own: the checkout's is shown) from `{"id", "t", …}` files."""

    runtime = "opencode"

    def summarize(self, source: Source) -> list[Session]:
        d = json.loads(Path(source.path).read_text())
        return [Session(runtime="opencode", id=d["id"], store_path=source.path, updated_at=d["t"], started_at=d["t"],
                        cwd=d.get("cwd"), branch=d.get("branch"), first_request=d.get("q"),
                        parent_id=d.get("parent"))]


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    store = home / "store"
    store.mkdir(parents=True)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/feature-x\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    for i in range(30):
        d: dict[str, Any] = {"id": f"s{i:02d}", "t": 1000 + i, "q": f"request {i}"}
        d["cwd"] = str(repo / "sub") if i % 3 == 0 else str(plain) if i % 3 == 1 else None
        if i % 7 == 0:
            d["branch"] = "its-own"  # a branch the runtime recorded: never replaced
        if i % 5 == 4:
            d["q"] = f"continue this\n{marker('opencode', f's{i - 1:02d}')}"
        if i % 11 == 10:
            d["q"] = marker("opencode", f"s{i:02d}")  # a marker naming itself links nothing
        if i % 9 == 8:
            d["parent"] = f"s{i - 1:02d}"
        (store / f"{i:02d}.json").write_text(json.dumps(d))
    return home


@pytest.fixture
def svc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Service:
    use_reader(monkeypatch, "opencode", CheckoutReader)
    monkeypatch.setattr(listing, "RUNTIMES", ("opencode",))
    state = StateDir(tmp_path / "state")
    reg = Registry(state)
    for sid in ("s03", "s12", "s13"):
        reg.emit(runtime="opencode", session_id=sid, surface="editor", cwd=None, title=None, brief_path=None)
    s = Service(state, env=Env(home=_home(tmp_path)))
    s.reuse_within = 60.0  # as the language server with a watcher
    return s


def _served(svc: Service) -> list[dict[str, Any]]:
    return svc.list_page(include_subagents=True)["sessions"]


def test_the_shared_view_serves_what_a_view_of_copies_serves(svc: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = svc._raw(None, None, False)
    before = [s.to_json() for s in raw.sessions]
    got = _served(svc)
    assert [s.to_json() for s in raw.sessions] == before  # the raw listing saw no decoration
    view = svc._views
    assert view is not None
    shared = sum(1 for a, b in zip(raw.sessions, view.listing.sessions, strict=False) if a is b)
    assert 0 < shared < len(raw.sessions)  # undecorated sessions are shared, decorated ones copied

    real = Service._decorate

    def copying(self: Service, lst: Any, runtimes: Any, shared: bool = False) -> None:  # the reference
        lst.sessions[:] = [s.copy() for s in lst.sessions]
        real(self, lst, runtimes)

    monkeypatch.setattr(Service, "_decorate", copying)
    svc._views = None
    want = _served(svc)
    assert got == want
    by_id = {s["id"]: s for s in want}
    assert by_id["s03"]["handed_off"] and by_id["s03"]["branch"] == "feature-x"
    assert by_id["s00"]["branch"] == "its-own" and by_id["s01"]["branch"] is None
    assert by_id["s04"]["continues"] == {"runtime": "opencode", "id": "s03"} and by_id["s10"]["continues"] is None


def test_a_decoration_on_a_shared_session_is_caught(svc: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    """Control: decorating the shared sessions in place changes the raw listing, and the check above sees it."""
    real = Service._decorate
    monkeypatch.setattr(Service, "_decorate", lambda self, lst, runtimes, shared=False: real(self, lst, runtimes))
    raw = svc._raw(None, None, False)
    before = [s.to_json() for s in raw.sessions]
    _served(svc)
    assert [s.to_json() for s in raw.sessions] != before


def test_a_rescan_after_a_handoff_shows_it_and_the_raw_listing_stays_clean(svc: Service) -> None:
    first = {s["id"]: s for s in _served(svc)}
    assert first["s20"]["handed_off"] is None
    Registry(svc.state).emit(runtime="opencode", session_id="s20", surface="terminal", cwd=None, title=None,
                             brief_path=None)
    again = {s["id"]: s for s in _served(svc)}  # a new token: a new decoration stamp, a new view
    assert again["s20"]["handed_off"]["surface"] == "terminal"
    raw = svc._raw(None, None, False)
    assert all(s.handed_off is None and s.continues is None for s in raw.sessions)
    assert service._View is type(svc._views)
