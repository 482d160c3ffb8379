"""The session index survives concurrent processes, a writer killed mid-update, damage and a version change."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from segue import index
from segue.model import Session
from segue.paths import StateDir

CTX = multiprocessing.get_context("fork")


def _entry(tag: str, n: int) -> list[Any]:
    sessions = [Session(runtime="claude", id=f"{tag}-{i}", store_path=f"/s/{tag}", first_request=f"ask {tag} {i}",
                        updated_at=1000.0 + i) for i in range(n)]
    return [((n, int(tag.split("-")[-1]) if tag[-1].isdigit() else 0),), sessions, None]


def _check_consistent(entries: dict[str, list[Any]]) -> None:
    """Every source's sessions are all there: a reader never sees half of a save."""
    for key, (fp, blob, _, _) in entries.items():
        sessions = index.sessions_of(blob)
        assert len(sessions) == fp[0][0], f"{key}: {len(sessions)} sessions for a source that has {fp[0][0]}"


def _writer(home: str, who: int, rounds: int, failures: Any) -> None:
    state = StateDir(Path(home))
    try:
        for r in range(rounds):
            changed = {f"claude\0/w{who}/src{k}": _entry(f"w{who}-{r}", 5 + (r + k) % 7) for k in range(20)}
            removed = [f"claude\0/w{who}/gone{r - 1}"] if r else []
            changed[f"claude\0/w{who}/gone{r}"] = _entry(f"g{who}-{r}", 3)
            while not index.save(state, changed, removed):  # a busy index: try again (tests want every save)
                time.sleep(0.01)
            _check_consistent(index.load(state))
    except Exception as e:  # reported to the parent: an assertion in a child is otherwise invisible
        failures.put(f"writer {who}: {type(e).__name__}: {e}")


def _reader(home: str, until: float, failures: Any) -> None:
    state = StateDir(Path(home))
    try:
        while time.time() < until:
            _check_consistent(index.load(state))
    except Exception as e:
        failures.put(f"reader: {type(e).__name__}: {e}")


@pytest.mark.slow
def test_concurrent_writer_and_reader_processes_never_lose_or_tear_a_save(tmp_path: Path) -> None:
    home = str(tmp_path / "state")
    failures = CTX.Queue()
    rounds = 15
    procs = [CTX.Process(target=_writer, args=(home, w, rounds, failures)) for w in range(4)]
    procs += [CTX.Process(target=_reader, args=(home, time.time() + 4, failures)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    errors = []
    while not failures.empty():
        errors.append(failures.get())
    assert errors == []
    entries = index.load(StateDir(Path(home)))
    _check_consistent(entries)
    # each writer's last round is what is indexed, and each only removed its own previous "gone" source
    for w in range(4):
        for k in range(20):
            sessions = index.sessions_of(entries[f"claude\0/w{w}/src{k}"][1])
            assert sessions and all(d["id"].startswith(f"w{w}-{rounds - 1}-") for d in sessions)
        assert f"claude\0/w{w}/gone{rounds - 1}" in entries
        assert f"claude\0/w{w}/gone{rounds - 2}" not in entries


def _crashing_writer(home: str, ready: str) -> None:
    state = StateDir(Path(home))

    def stall(conn: sqlite3.Connection, keys: list[str]) -> None:
        # half the update is done inside the transaction: the old rows deleted, the new ones not written
        conn.execute("DELETE FROM sources")
        Path(ready).write_text("x")
        time.sleep(60)

    index.on_replace.append(stall)
    index.save(state, {"claude\0/new": _entry("new", 4)}, ["claude\0/a"])


def test_a_writer_killed_mid_update_leaves_the_last_committed_index(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    assert index.save(state, {"claude\0/a": _entry("a", 3), "claude\0/b": _entry("b", 2)}, [])
    ready = tmp_path / "ready"
    p = CTX.Process(target=_crashing_writer, args=(str(state.root), str(ready)))
    p.start()
    deadline = time.time() + 30
    while not ready.exists() and time.time() < deadline:
        time.sleep(0.01)
    assert ready.exists(), "the writer never reached the middle of its update"
    os.kill(p.pid or 0, signal.SIGKILL)
    p.join(10)
    assert p.exitcode == -signal.SIGKILL
    entries = index.load(state)  # neither torn nor lost: exactly what was committed before
    assert sorted(entries) == ["claude\0/a", "claude\0/b"]
    _check_consistent(entries)
    # and the index still takes writes
    assert index.save(state, {"claude\0/c": _entry("c", 1)}, ["claude\0/a"])
    assert sorted(index.load(state)) == ["claude\0/b", "claude\0/c"]


def test_a_writer_killed_at_random_moments_never_leaves_a_torn_index(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    big = {f"claude\0/s{k}": _entry(f"s-{k}", 1 + k % 9) for k in range(400)}
    assert index.save(state, big, [])
    for delay in (0.005, 0.02, 0.05, 0.1, 0.2):
        p = CTX.Process(target=index.save, args=(state, {k: _entry(f"t-{i}", 1 + i % 5) for i, k in
                                                         enumerate(big)}, []))
        p.start()
        time.sleep(delay)
        if p.pid:
            os.kill(p.pid, signal.SIGKILL)
        p.join(10)
        entries = index.load(state)
        assert len(entries) == 400
        _check_consistent(entries)


def test_a_version_change_rebuilds_the_index_with_every_table(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    state = StateDir(tmp_path / "state")
    assert index.save(state, {"claude\0/a": _entry("a", 3)}, [])
    with sqlite3.connect(index.path_of(state)) as db:  # a table another module added (search)
        db.execute("CREATE TABLE extra(x)")
    assert len(index.sessions_of(index.load(state)["claude\0/a"][1])) == 3
    monkeypatch.setattr(index, "VERSION", index.VERSION + "-next")
    assert index.load(state) == {}  # never trusted
    with sqlite3.connect(index.path_of(state)) as db:
        tables = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert db.execute("SELECT value FROM meta WHERE key='version'").fetchone()[0] == index.version(state.cache)
        assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 0
    assert tables == {"meta", "sources"}
    assert index.save(state, {"claude\0/b": _entry("b", 1)}, [])
    assert sorted(index.load(state)) == ["claude\0/b"]


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_index_is_discarded_and_rebuilt(tmp_path: Path, damage: str) -> None:
    state = StateDir(tmp_path / "state")
    assert index.save(state, {f"claude\0/s{k}": _entry(f"s-{k}", 3) for k in range(300)}, [])
    p = index.path_of(state)
    for side in ("-wal", "-shm"):
        Path(f"{p}{side}").unlink(missing_ok=True)
    if damage == "garbage":
        p.write_bytes(b"not a database at all" * 100)
    else:
        data = p.read_bytes()
        p.write_bytes(data[: len(data) // 2] + b"\xff" * 4096)
    loaded = index.load(state)
    _check_consistent(loaded)  # either nothing or whole sources, never a crash
    assert index.save(state, {"claude\0/new": _entry("new", 2)}, [])
    assert "claude\0/new" in index.load(state)


def test_the_index_is_private(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    assert index.save(state, {"claude\0/a": _entry("a", 1)}, [])
    assert os.stat(state.cache).st_mode & 0o777 == 0o700
    assert os.stat(index.path_of(state)).st_mode & 0o777 == 0o600


def test_sessions_blob_rows_revive_the_sessions_they_were_encoded_from() -> None:
    """A source's sessions are stored as rows of values under one tuple of field names; a session with other
    fields (an attribute a reader added, one missing) keeps its own dict. Reviving the rows gives back every
    session as `Session.from_cache` of its dict would, and a blob of another form is refused (rebuilt)."""
    import marshal

    from segue.listing import revive_all
    from segue.model import Continues

    a = Session(runtime="claude", id="a", store_path="/s/a", first_request="ask", cwd="/w/p", model="m",
                updated_at=1000.5, problems=["odd line"], continues=Continues("codex", "x1"))
    a.prime()
    b = Session(runtime="claude", id="b", store_path="/s/b", cwd="/w/p", model="m", locator={"priority": 2})
    b.prime()
    c = Session(runtime="claude", id="c", store_path="/s/c")
    c.__dict__["extra"] = 1  # fields of its own: stored as its dict
    d = Session(runtime="claude", id="d", store_path="/s/d")
    del d.__dict__["model"]  # one missing: its dict too
    sessions = [a, b, c, d]
    blob = index.encode_sessions(sessions)
    names, rows = index.rows_of(blob)
    assert names[0] == "runtime" and [type(r) for r in rows] == [tuple, tuple, dict, dict]
    assert index.sessions_of(blob) == [s.to_cache() for s in sessions]
    revived = revive_all(blob)
    assert [vars(s) for s in revived] == [vars(Session.from_cache(s.to_cache())) for s in sessions]
    assert [s.to_json() for s in revived] == [Session.from_cache(s.to_cache()).to_json() for s in sessions]
    assert revived[0].cwd is revived[1].cwd  # shared values are one string
    assert index.encode_sessions([]) and revive_all(index.encode_sessions([])) == []
    for bad in (marshal.dumps([a.to_cache()]), marshal.dumps((("runtime",), [1])),
                marshal.dumps((("runtime", "id"), [("claude",)]))):
        with pytest.raises((TypeError, ValueError)):
            revive_all(bad)
        with pytest.raises((TypeError, ValueError)):
            index.sessions_of(bad)


def test_stream_writes_batched_rows_all_at_once_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """A stream's rows go to SQLite in batches inside its one transaction: `finish` commits every row put
    (the last, partial batch included), `abort` leaves none of them, not even batches already written."""
    monkeypatch.setattr(index.Stream, "BATCH", 2)
    blob = index.encode_sessions(_entry("s-1", 1)[1])
    state = StateDir(tmp_path / "a")
    st = index.stream(state)
    assert st is not None
    for k in range(5):
        st.put(f"claude\0/src{k}", ((1, k),), None, None, blob)
    assert st.finish({}, [])
    assert sorted(index.load(state)) == [f"claude\0/src{k}" for k in range(5)]
    st = index.stream(state)
    assert st is not None
    for k in range(5, 10):
        st.put(f"claude\0/src{k}", ((1, k),), None, None, blob)
    st.abort()
    assert sorted(index.load(state)) == [f"claude\0/src{k}" for k in range(5)]


def test_new_code_reads_every_source_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What an older Segue's readers made of a file that did not change is not trusted by a newer one (its
    `__version__` may be the same): the index is keyed to the code's stamp."""
    from segue import codestamp

    state = StateDir(tmp_path / "state")
    assert index.save(state, {"claude\0/a": _entry("a", 3)}, [])
    assert "claude\0/a" in index.load(state)
    monkeypatch.setitem(codestamp._memo, "stamp", "0123456789abcdef")  # another build of Segue
    assert index.load(state) == {}
    with sqlite3.connect(index.path_of(state)) as db:
        assert db.execute("SELECT value FROM meta WHERE key='version'").fetchone()[0].endswith("/0123456789abcdef")


def test_code_stamp_is_of_contents_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from segue import codestamp

    mods = tmp_path / "pkg"
    (mods / "sub").mkdir(parents=True)
    (mods / "a.py").write_text("A = 1\n")
    (mods / "sub" / "b.py").write_text("B = 2\n")
    (mods / "notes.txt").write_text("not code\n")
    monkeypatch.setattr(codestamp, "_ROOT", str(mods))
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)

    def fresh(kept: Path | None = cache) -> str:
        codestamp._memo.clear()
        return codestamp.stamp(kept)

    first = fresh()
    assert (cache / codestamp.FILE_NAME).stat().st_mode & 0o777 == 0o600
    assert fresh() == first and fresh(None) == first
    (mods / "notes.txt").write_text("changed, still not code\n")
    assert fresh() == first
    (mods / "sub" / "b.py").write_text("B = 3\n")  # same size, other bytes
    assert fresh() != first
    (mods / "sub" / "b.py").write_text("B = 2\n")
    assert fresh() == first  # the same code installed again (other times): the same stamp
    # a kept stamp is taken only when every module's signature matches
    (cache / codestamp.FILE_NAME).write_text("ffffffffffffffff\nnot the signatures")
    assert fresh() == first
    codestamp._memo.clear()
