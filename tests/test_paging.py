"""Pages of the listing (the language server's `listSessions` with limit/offset) from the service's view."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from segue import listing
from segue.lsp import protocol as P
from segue.model import Session
from segue.paths import StateDir
from segue.service import Service
from segue.stores.base import Env, Source
from tests.conftest import use_reader
from tests.test_listing import DirReader


class TreeReader(DirReader):
    """DirReader plus parents: `{"id", "t", "parent"}` files."""

    def summarize(self, source: Source) -> list[Session]:
        data = json.loads(Path(source.path).read_text())
        return [Session(runtime="claude", id=data["id"], store_path=source.path, updated_at=data["t"],
                        started_at=data["t"], parent_id=data.get("parent"), cwd=data.get("cwd", "/w/a"))]


@pytest.fixture
def svc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Service:
    use_reader(monkeypatch, "claude", TreeReader)
    monkeypatch.setattr(listing, "RUNTIMES", ("claude",))  # only the test's runtime is scanned
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    for i in range(37):
        (store / f"{i:03d}.json").write_text(json.dumps({"id": f"s{i:03d}", "t": 1000 + i,
                                                          "cwd": "/w/a" if i % 3 else "/w/b"}))
    for i in range(0, 37, 5):  # subagents of every fifth session
        (store / f"k{i:03d}.json").write_text(json.dumps({"id": f"k{i:03d}", "t": 1000 + i, "parent": f"s{i:03d}"}))
    s = Service(StateDir(tmp_path / "state"), env=Env(home=tmp_path / "home"))
    s.reuse_within = 60.0  # as the language server with a watcher
    return s


def _claude_only(svc: Service, **kw: object) -> dict:
    return svc.list_page(runtimes=["claude"], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("subagents", [False, True])
@pytest.mark.parametrize("directory", [None, "/w/b"])
def test_pages_put_together_are_the_whole_listing(svc: Service, subagents: bool, directory: str | None) -> None:
    svc.scan()  # the view's listing of everything exists (the watcher's first pass)
    whole = svc.list_sessions(include_subagents=subagents, directory=directory)
    assert _claude_only(svc, include_subagents=subagents, directory=directory)["sessions"] == whole["sessions"]
    got: list[dict] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = svc.list_page(include_subagents=subagents, directory=directory, limit=7, offset=offset)
        assert page["total"] == len([s for s in whole["sessions"] if not s["parent_id"]]) or subagents
        assert len([s for s in page["sessions"] if not s["parent_id"]]) <= 7
        got += page["sessions"]
        offset = page["next_offset"]
        pages += 1
    assert got == whole["sessions"] and pages == -(-page["total"] // 7)
    if subagents:  # a page never splits a session from its subagents
        first = svc.list_page(include_subagents=True, limit=2)["sessions"]
        assert [s["id"] for s in first] == ["s036", "s035", "k035"]
        assert svc.list_page(include_subagents=True, limit=1, offset=2)["sessions"][0]["id"] == "s034"


def test_a_page_is_the_same_objects_as_the_cli_json_and_past_the_end_is_empty(svc: Service) -> None:
    full = svc.list_page()
    assert set(full) == {"sessions", "skipped", "skipped_reasons", "total", "next_offset"}
    assert full["next_offset"] is None and full["total"] == 37
    assert [s.to_json() for s in svc.scan().ordered()] == full["sessions"]
    assert svc.list_page(limit=5, offset=100) == {"sessions": [], "skipped": 0, "skipped_reasons": [],
                                                   "total": 37, "next_offset": None}


def test_a_page_reflects_a_new_handoff_and_a_rescan(svc: Service, tmp_path: Path) -> None:
    from segue.tokens import Registry

    assert svc.list_page(limit=1)["sessions"][0]["handed_off"] is None
    Registry(svc.state).emit(runtime="claude", session_id="s036", surface="terminal", cwd="/w/a", title=None,
                             brief_path=str(tmp_path / "b.md"))
    assert svc.list_page(limit=1)["sessions"][0]["handed_off"]["surface"] == "terminal"
    (tmp_path / "home" / "store" / "new.json").write_text(json.dumps({"id": "s999", "t": 5000}))
    assert svc.list_page(limit=1)["sessions"][0]["id"] == "s036"  # within reuse: the watcher's pass is due
    svc.refresh()
    assert svc.list_page(limit=1)["sessions"][0]["id"] == "s999"


def test_a_warm_page_does_not_redecorate_or_rescan(svc: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    svc.list_page(limit=50)
    calls: list[str] = []
    monkeypatch.setattr(svc, "_decorate", lambda *a, **k: calls.append("decorate"))
    monkeypatch.setattr(listing, "scan", lambda *a, **k: calls.append("scan"))
    monkeypatch.setattr("segue.service.scan", lambda *a, **k: calls.append("scan"))
    t0 = time.perf_counter()
    for off in range(0, 37, 5):
        svc.list_page(limit=5, offset=off)
    assert calls == [] and time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("bad", [{"offset": -1}, {"offset": "3"}, {"offset": True}, {"limit": 0}])
def test_page_params_are_checked(bad: dict) -> None:
    with pytest.raises(P.InvalidParams):
        P.parse(bad, P.ListSessionsParams)


def test_page_params_parse() -> None:
    p, _ = P.parse({"limit": 50, "offset": 100}, P.ListSessionsParams)
    assert (p.limit, p.offset) == (50, 100)
    assert P.parse({}, P.ListSessionsParams)[0].offset == 0


@pytest.mark.parametrize("result", [{"sessions": [{"title": "é ☃ \u202e", "n": None, "b": True, "x": 1.5}]},
                                    {"bad": "\ud800"}, {"big": 2**70}])
def test_a_reply_encodes_as_the_reference_does(result: dict) -> None:
    """The fast encoder of large replies (orjson) and pygls' json path give the same JSON, and what orjson
    refuses takes the reference path."""
    from pygls.protocol.json_rpc import JsonRPCResponseMessage

    from segue.lsp.server import server

    proto = server.protocol
    out: list[bytes] = []

    class Writer:
        def write(self, data: bytes | str) -> None:
            out.append(data if isinstance(data, bytes) else data.encode("utf-8"))

    old, old_headers = proto.writer, getattr(proto, "_include_headers", True)
    proto.writer, proto._include_headers = Writer(), True
    try:
        proto._send_data(JsonRPCResponseMessage(id=7, jsonrpc="2.0", result=result))
    finally:
        proto.writer, proto._include_headers = old, old_headers
    head, _, body = b"".join(out).partition(b"\r\n\r\n")
    assert int(head.split(b"\r\n")[0].split(b": ")[1]) == len(body)
    assert json.loads(body) == {"id": 7, "jsonrpc": "2.0", "result": result}


def test_a_request_and_the_watchers_pass_build_one_view_between_them(svc: Service,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's first request meets the watcher's first pass: both want the decorated view of the same listing.
    The one that comes second waits for the first one's view and takes it, and the tree's ordering is built once."""
    import threading

    svc.scan()
    builds: list[int] = []
    decorate = Service._decorate

    def slow(self: Service, listing: object, runtimes: object, shared: bool = False) -> None:
        builds.append(1)
        time.sleep(0.3)  # long enough that the second caller arrives while the first one builds
        decorate(self, listing, runtimes, shared)  # type: ignore[arg-type]

    monkeypatch.setattr(Service, "_decorate", slow)
    groups = listing.Listing.groups
    orders: list[int] = []

    def counted(self: listing.Listing, **kw: object) -> list[list[Session]]:
        orders.append(1)
        return groups(self, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(listing.Listing, "groups", counted)
    pages: list[dict] = []
    watcher = threading.Thread(target=svc.refresh)
    watcher.start()
    time.sleep(0.05)
    pages.append(svc.list_page(include_subagents=True, limit=10))
    watcher.join()
    assert builds == [1]
    assert orders == [1]  # the watcher's pass ordered the tree's view; the request found it
    assert len(pages[0]["sessions"]) > 10  # subagents come with their parents
    assert svc.list_page(include_subagents=True, limit=10) == pages[0]
