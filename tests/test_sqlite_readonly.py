"""Reading a runtime's SQLite database creates nothing beside it (the `-shm` read marks of a live WAL excepted)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from segue.stores import base
from segue.stores.base import open_sqlite_readonly


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
    monkeypatch.setattr(base, "IN_MEMORY_MAX", 1024)
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


@pytest.mark.parametrize("content", [b"not a database at all", b"SQLite format 3\x00" + b"\xff" * 200])
def test_garbage_is_a_clear_error(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "x.db").write_bytes(content)
    with pytest.raises(base.SqliteUnavailable):
        con = open_sqlite_readonly(tmp_path / "x.db")
        con.execute("SELECT * FROM sqlite_master").fetchall()
    assert sorted(os.listdir(tmp_path)) == ["x.db"]
