"""The language server's memory measures (bench/NOTES-warm.md, stop 42): the index's rows revived as they are
loaded (`ListingCache(eager=True)`), freed heap returned (`segue.heap`), and a large reply written without a
second copy of its body. Each must leave what is listed and what is sent exactly as before."""

from __future__ import annotations

import json
import marshal
import platform
import time
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from segue import heap, index
from segue.listing import ListingCache
from segue.model import Session
from segue.paths import StateDir


def _sessions(tag: str, n: int) -> list[Session]:
    out = []
    for i in range(n):
        s = Session(runtime="claude", id=f"{tag}-{i}", store_path=f"/s/{tag}", first_request=f"ask {tag} {i}",
                    cwd=f"/w/{tag}", updated_at=1000.0 + i, problems=["odd line"] if i % 3 == 0 else [])
        s.prime()
        out.append(s)
    return out


def _state(tmp_path: Path) -> StateDir:
    state = StateDir(tmp_path / "state")
    changed = {f"claude\0/s/{t}": [((n, t),), _sessions(t, n), "an error" if t == "c" else None,
                                   {"offset": n} if t == "b" else None]
               for t, n in (("a", 3), ("b", 7), ("c", 1), ("d", 0))}
    assert index.save(state, changed, [])
    return state


class _Src:
    def __init__(self, key: str, fp: Any) -> None:
        self.runtime, self.path = key.split("\0")
        self.fingerprint = fp


def test_an_eager_cache_gives_what_the_lazy_one_gives(tmp_path: Path) -> None:
    """Every source's sessions, error, reader state and fingerprint check are the same whether the blobs are
    revived as the rows load or when a source is used; the eager cache holds no blob after loading."""
    state = _state(tmp_path)
    lazy, eager = ListingCache(state), ListingCache(state, eager=True)
    assert sorted(lazy.entries) == sorted(eager.entries) and len(lazy.entries) == 4
    assert any(isinstance(e[1], bytes) for e in lazy.entries.values())
    assert not any(isinstance(e[1], bytes) for e in eager.entries.values())
    for key, e in lazy.entries.items():
        src = _Src(key, e[0])
        got_lazy, got_eager = lazy.get(src), eager.get(src)
        assert got_lazy is not None and got_eager is not None
        assert [vars(s) for s in got_lazy[0]] == [vars(s) for s in got_eager[0]]
        assert got_lazy[1] == got_eager[1]
        pl, pe = lazy.previous(src), eager.previous(src)
        assert (pl is None) == (pe is None) and (pl is None) == (key != "claude\0/s/b")
        if pl is not None and pe is not None:
            assert [vars(s) for s in pl[0]] == [vars(s) for s in pe[0]] and pl[1] == pe[1] == {"offset": 7}
        assert eager.get(_Src(key, ((99, "other"),))) is None  # a changed source is read again
    # by runtime, loaded later (`need`): eager too
    part = ListingCache(state, ["codex"], eager=True)
    assert part.entries == {}
    part.need(["claude"])
    assert sorted(part.entries) == sorted(lazy.entries)
    assert not any(isinstance(e[1], bytes) for e in part.entries.values())


def test_an_eager_cache_refuses_a_damaged_blob_as_the_lazy_one_does(tmp_path: Path) -> None:
    """A blob that does not revive stays as it was loaded, and the source is read again (get gives None), the
    other sources are unharmed; control: the same source with its good blob is used."""
    state = _state(tmp_path)
    import sqlite3

    with sqlite3.connect(index.path_of(state)) as db:
        db.execute("UPDATE sources SET sessions=? WHERE key=?", (marshal.dumps((("runtime",), [1])), "claude\0/s/b"))
    for eager in (False, True):
        cache = ListingCache(state, eager=eager)
        b = cache.entries["claude\0/s/b"]
        assert isinstance(b[1], bytes)  # kept as loaded, for `get` to refuse
        assert cache.get(_Src("claude\0/s/b", b[0])) is None
        a = cache.entries["claude\0/s/a"]
        got = cache.get(_Src("claude\0/s/a", a[0]))
        assert got is not None and [s.id for s in got[0]] == ["a-0", "a-1", "a-2"]


def test_giving_heap_back_never_fails() -> None:
    """On glibc the C library's trim is found and called; anywhere else it is a no-op. Twice is as good as once."""
    first, second = heap.give_back(), heap.give_back()
    assert first == second
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert first is True
    else:
        assert first is False


def test_giving_heap_back_survives_a_missing_function(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_trim", False)
    assert heap.give_back() is False

    def broken(n: int) -> int:
        raise OSError("no")

    monkeypatch.setattr(heap, "_trim", broken)
    assert heap.give_back() is False


@pytest.mark.parametrize("size", [10, 5_000_000])
def test_a_reply_on_a_stream_is_framed_and_sent_whole(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a stdio stream the header and the body go out as two writes: together they are one well-framed
    message with the whole result. A reply past the give-back size returns the heap after it is sent."""
    from pygls.io_ import StdoutWriter
    from pygls.protocol.json_rpc import JsonRPCResponseMessage

    from segue.lsp import rpc
    from segue.lsp.server import server

    gave: list[int] = []
    monkeypatch.setattr(rpc, "give_back", lambda: gave.append(1) or True)
    out = BytesIO()
    writes: list[int] = []

    class Stream(StdoutWriter):
        def write(self, data: bytes) -> None:
            writes.append(len(data))
            super().write(data)

    result = {"sessions": [{"title": "é ☃ " + "x" * 90, "n": i} for i in range(size // 100)], "total": 1}
    proto = server.protocol
    old, old_headers = proto.writer, getattr(proto, "_include_headers", True)
    proto.writer, proto._include_headers = Stream(out), True  # type: ignore[arg-type]
    try:
        proto._send_data(JsonRPCResponseMessage(id=3, jsonrpc="2.0", result=result))
    finally:
        proto.writer, proto._include_headers = old, old_headers
    head, sep, body = out.getvalue().partition(b"\r\n\r\n")
    assert sep and head.startswith(b"Content-Length: ")
    assert int(head.split(b"\r\n")[0].split(b": ")[1]) == len(body)
    assert json.loads(body) == {"id": 3, "jsonrpc": "2.0", "result": result}
    assert writes == [len(head) + len(sep), len(body)]  # the body was never joined to its header
    assert gave == ([1] if len(body) >= rpc.GIVE_BACK_AT else [])
    assert (size > 1_000_000) == bool(gave)


def test_the_watcher_gives_heap_back_after_each_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """After its first pass and after each later one (a change seen, or the periodic full pass) the watcher
    returns freed heap; a first pass that failed returns nothing and stops watching."""
    from segue.lsp import watch

    gave: list[int] = []
    monkeypatch.setattr(watch, "give_back", lambda: gave.append(len(svc.passes)) or True)

    class FakeService:
        reuse_within = 0.0

        def __init__(self, passes: int, fail: bool = False) -> None:
            self.passes: list[int] = []
            self.limit, self.fail = passes, fail
            self.state = StateDir.resolve(str(tmp_path / "state"))  # (the watcher looks at its token registry)
            self.clock = time.time

        def refresh(self) -> Any:
            self.passes.append(1)
            if self.fail:
                raise OSError("unreadable")
            if len(self.passes) >= self.limit:
                watcher._stop.set()
            return type("L", (), {"sessions": [], "skipped": [], "locations": {}})()

    signatures = iter(range(100))
    for passes, fail, want in ((1, False, [1]), (3, False, [1, 2, 3]), (1, True, [])):
        gave.clear()
        svc = FakeService(passes, fail)
        watcher = watch.Watcher(svc, notify=lambda rts: None, interval=0.001)  # type: ignore[arg-type]
        watcher._remember = lambda listing: set()  # type: ignore[method-assign]
        watcher._signature = lambda: next(signatures)  # type: ignore[method-assign]  # always "changed"
        monkeypatch.setattr(watch, "SETTLE", 0.0)
        watcher._run()
        assert gave == want, (passes, fail, gave)


def test_replies_sent_from_several_threads_stay_whole_messages() -> None:
    """Sends normally all run on the event loop's thread; even from several threads at once, each reply's header
    and body stay together on the stream (the framing parses back into every reply sent)."""
    import threading

    from pygls.io_ import StdoutWriter
    from pygls.protocol.json_rpc import JsonRPCResponseMessage

    from segue.lsp.server import server

    class Slow(BytesIO):
        def write(self, data: Any) -> int:  # a pipe that takes its time: the other threads get to run meanwhile
            n = super().write(data)
            import time

            time.sleep(0.0005)
            return n

    out = Slow()
    proto = server.protocol
    old, old_headers = proto.writer, getattr(proto, "_include_headers", True)
    proto.writer, proto._include_headers = StdoutWriter(out), True  # type: ignore[arg-type]

    def send(t: int) -> None:
        for i in range(40):
            result = {"sessions": [{"t": t, "i": i, "x": "y" * (i * 37 % 500)}], "bad": "\ud800" if i % 7 == 0 else ""}
            proto._send_data(JsonRPCResponseMessage(id=t * 1000 + i, jsonrpc="2.0", result=result))

    try:
        threads = [threading.Thread(target=send, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        proto.writer, proto._include_headers = old, old_headers
    data, got = out.getvalue(), []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep and head.startswith(b"Content-Length: "), data[:80]
        n = int(head.split(b"\r\n")[0].split(b": ")[1])
        got.append(json.loads(rest[:n])["id"])
        data = rest[n:]
    assert sorted(got) == sorted(t * 1000 + i for t in range(4) for i in range(40))
