"""Reading a runtime's SQLite database creates nothing beside it (the `-shm` read marks of a live WAL excepted)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from segue.stores import base, sqlite
from segue.stores.sqlite import open_sqlite_readonly, wal_writer_live


def wal_db(path: Path, rows: int = 3, keep_open: bool = False) -> sqlite3.Connection | None:
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE t (x)")
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(rows)])
    con.commit()
    if keep_open:
        return con  # the -wal and -shm stay, as while a runtime is writing
    con.close()
    return None


def listing(d: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in d.iterdir()}


def test_negative_control_a_plain_read_only_open_creates_side_files(tmp_path: Path) -> None:
    wal_db(tmp_path / "x.db")
    assert sorted(os.listdir(tmp_path)) == ["x.db"]
    con = sqlite3.connect(f"file:{tmp_path / 'x.db'}?mode=ro", uri=True)
    con.execute("SELECT count(*) FROM t").fetchall()
    assert sorted(os.listdir(tmp_path)) != ["x.db"]  # the hazard Segue avoids is real
    con.close()


def test_wal_database_without_wal_file_is_read_in_memory(tmp_path: Path) -> None:
    wal_db(tmp_path / "x.db")
    before = listing(tmp_path)
    con = open_sqlite_readonly(tmp_path / "x.db")
    assert con.execute("SELECT count(*) FROM t").fetchone() == (3,)
    con.close()
    assert listing(tmp_path) == before


def test_big_database_is_opened_immutable_without_side_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wal_db(tmp_path / "x.db", rows=2000)
    monkeypatch.setattr(sqlite, "IN_MEMORY_MAX", 1024)
    before = listing(tmp_path)
    con = open_sqlite_readonly(tmp_path / "x.db")
    assert con.execute("SELECT count(*) FROM t").fetchone() == (2000,)
    con.close()
    assert listing(tmp_path) == before


def test_live_writer_only_shm_may_change(tmp_path: Path) -> None:
    writer = wal_db(tmp_path / "x.db", keep_open=True)
    assert writer is not None and (tmp_path / "x.db-wal").exists() and (tmp_path / "x.db-shm").exists()
    before = listing(tmp_path)
    con = open_sqlite_readonly(tmp_path / "x.db")
    assert con.execute("SELECT count(*) FROM t").fetchone() == (3,)
    con.close()
    after = listing(tmp_path)
    assert set(after) == set(before)
    assert {k: v for k, v in after.items() if k != "x.db-shm"} == {k: v for k, v in before.items() if k != "x.db-shm"}
    writer.close()


def test_wal_without_shm_is_read_from_a_private_copy(tmp_path: Path) -> None:
    writer = wal_db(tmp_path / "x.db", keep_open=True)
    assert writer is not None
    saved = {n: (tmp_path / n).read_bytes() for n in ("x.db", "x.db-wal")}
    writer.close()  # a copied store: the database and its -wal, no -shm
    store = tmp_path / "store"
    store.mkdir()
    for n, data in saved.items():
        (store / n).write_bytes(data)
    before = listing(store)
    con = open_sqlite_readonly(store / "x.db")
    assert con.execute("SELECT count(*) FROM t").fetchone() == (3,)  # the rows that live only in the -wal
    con.close()
    assert listing(store) == before


@pytest.mark.parametrize("in_memory_max", [0, 1 << 30])
def test_a_large_private_copy_is_read_from_disk_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   in_memory_max: int) -> None:
    """Over PRIVATE_IN_MEMORY_MAX the copy is checkpointed, opened immutable and unlinked at once: the rows of
    the -wal are there, no temporary file stays, the store is unchanged (and below it, the same in memory)."""
    import tempfile

    writer = wal_db(tmp_path / "x.db", keep_open=True)
    assert writer is not None
    saved = {n: (tmp_path / n).read_bytes() for n in ("x.db", "x.db-wal")}
    writer.close()
    store = tmp_path / "store"
    store.mkdir()
    for n, data in saved.items():
        (store / n).write_bytes(data)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(sqlite, "PRIVATE_IN_MEMORY_MAX", in_memory_max)
    before = listing(store)
    con = open_sqlite_readonly(store / "x.db")
    assert list(scratch.iterdir()) == []  # unlinked while open: nothing to clean up later
    assert con.execute("SELECT count(*) FROM t").fetchone() == (3,)
    main_file = con.execute("PRAGMA database_list").fetchall()[0][2]  # "" for an in-memory database
    if in_memory_max:
        assert main_file == ""
    else:
        assert os.path.realpath(main_file).startswith(os.path.realpath(scratch) + os.sep)
    con.close()
    assert listing(store) == before and list(scratch.iterdir()) == []


@pytest.mark.parametrize("content", [b"not a database at all", b"SQLite format 3\x00" + b"\xff" * 200])
def test_garbage_is_a_clear_error(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "x.db").write_bytes(content)
    with pytest.raises(base.SqliteUnavailable):
        con = open_sqlite_readonly(tmp_path / "x.db")
        con.execute("SELECT * FROM sqlite_master").fetchall()
    assert sorted(os.listdir(tmp_path)) == ["x.db"]


def test_old_names_stay_importable_from_base() -> None:
    assert base.open_sqlite_readonly is open_sqlite_readonly and base.SqliteUnavailable is sqlite.SqliteUnavailable
    assert base.sqlite_fingerprint is sqlite.sqlite_fingerprint


_CRASH = """
import os, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA journal_mode=WAL")
con.execute("PRAGMA wal_autocheckpoint=0")
con.execute("CREATE TABLE t (x)")
con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(5)])
con.commit()
os._exit(0)  # a crash: no checkpoint, the -wal and -shm stay behind with nobody holding them
"""


def crashed_store(d: Path) -> Path:
    import subprocess
    import sys

    d.mkdir(parents=True, exist_ok=True)
    db = d / "x.db"
    subprocess.run([sys.executable, "-c", _CRASH, str(db)], check=True)
    assert (d / "x.db-wal").stat().st_size > 0 and (d / "x.db-shm").exists()
    return db


def contents(d: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(d.iterdir())}


def test_negative_control_sqlite_rewrites_a_left_behind_shm(tmp_path: Path) -> None:
    db = crashed_store(tmp_path)
    before = contents(tmp_path)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    assert con.execute("SELECT count(*) FROM t").fetchone() == (5,)
    con.close()
    after = contents(tmp_path)
    assert after["x.db-shm"] != before["x.db-shm"]  # the hazard is real: recovery rewrote the -shm


def test_left_behind_wal_and_shm_without_a_live_writer_change_no_byte(tmp_path: Path) -> None:
    db = crashed_store(tmp_path)
    before = contents(tmp_path)
    assert wal_writer_live(db) is False
    con = open_sqlite_readonly(db)
    assert con.execute("SELECT count(*) FROM t").fetchone() == (5,)  # rows that live only in the -wal
    con.close()
    assert contents(tmp_path) == before


def test_a_live_writer_is_seen_without_writing(tmp_path: Path) -> None:
    writer = wal_db(tmp_path / "x.db", keep_open=True)
    assert writer is not None
    before = listing(tmp_path)  # stat only: reading the -shm here would drop the writer's own lock
    assert wal_writer_live(tmp_path / "x.db") is True
    assert listing(tmp_path) == before
    writer.close()
    assert wal_writer_live(tmp_path / "x.db") is False  # a clean close removes the -shm
    assert wal_writer_live(tmp_path / "none.db") is False


def test_a_live_writer_in_another_process_is_seen(tmp_path: Path) -> None:
    import subprocess
    import sys

    db = tmp_path / "x.db"
    code = ("import sqlite3, sys, time\ncon = sqlite3.connect(sys.argv[1])\ncon.execute('PRAGMA journal_mode=WAL')\n"
            "con.execute('CREATE TABLE t (x)'); con.execute('INSERT INTO t VALUES (1)'); con.commit()\n"
            "print('ready', flush=True); sys.stdin.readline()\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        assert wal_writer_live(db) is True
        con = open_sqlite_readonly(db)
        assert con.execute("SELECT count(*) FROM t").fetchone() == (1,)
        con.close()
    finally:
        assert p.stdin is not None
        p.stdin.close()
        p.wait(timeout=30)


def test_the_lock_query_sees_a_writer_when_proc_locks_cannot_be_read(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    monkeypatch.setattr(sqlite, "held_inodes", lambda: None)
    db = crashed_store(tmp_path / "dead")
    assert wal_writer_live(db) is False
    code = ("import sqlite3, sys\ncon = sqlite3.connect(sys.argv[1])\ncon.execute('PRAGMA journal_mode=WAL')\n"
            "con.execute('CREATE TABLE t (x)'); con.commit()\nprint('ready', flush=True); sys.stdin.readline()\n")
    live = tmp_path / "live.db"
    p = subprocess.Popen([sys.executable, "-c", code, str(live)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        assert wal_writer_live(live) is True
    finally:
        assert p.stdin is not None
        p.stdin.close()
        p.wait(timeout=30)
