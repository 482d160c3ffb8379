"""Reading a runtime's SQLite database without changing a byte of it, `-shm` included.

Whatever SQLite opens in WAL mode it may write: a `mode=ro` open creates `-wal`/`-shm` when they are absent,
and rebuilds the `-shm` (WAL recovery) when no connection holds it. The one change the store contract allows
is the `-shm` read marks while a live writer holds the database. So:
- no `-wal`: the database bytes are read and deserialized into a private in-memory connection (a big one is
  opened `immutable=1`, which creates nothing either);
- a `-wal` and a live writer (some process holds a lock on the `-shm`, see `wal_writer_live`): `mode=ro`, so
  SQLite reads the WAL through the writer's shared memory;
- a `-wal` and no live writer (leftovers of a crash, a copied store), or liveness unknown: the database and
  its `-wal` are copied to a private directory outside the store and read from there.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import stat
import struct
from pathlib import Path
from typing import Any

from segue.stores.locks import held_inodes

# Databases up to this size are copied into memory (nothing on disk is touched). Larger ones would cost
# twice their size in memory (the bytes read, then SQLite's copy) and a read of every page on each listing,
# where an incremental read needs a few index pages: they are opened `immutable=1`, which creates no side
# file either. Both read a file no connection holds (no `-wal`); a writer that starts meanwhile changes the
# fingerprint, and the next listing reads again.
IN_MEMORY_MAX = 8 * 1024 * 1024
# A database with a `-wal` nobody holds is read from a private copy: held in memory up to this size, else
# read from the copied file (`_open_private_copy`).
PRIVATE_IN_MEMORY_MAX = 8 * 1024 * 1024

_FLOCK = "hhqqi4x"  # struct flock on Linux (l_type, l_whence, l_start, l_len, l_pid)


class SqliteUnavailable(Exception):
    """The database could not be read (locked, corrupt, not a database)."""


def wal_writer_live(path: str | os.PathLike[str]) -> bool | None:
    """Does a live connection hold the WAL database at `path` right now? Every SQLite connection in WAL mode
    holds a shared lock on a byte of the `-shm` for as long as it is open; a crashed process leaves none.

    Asked without writing anything, and first without opening the `-shm` at all: /proc/locks lists every
    process's locks by inode (this process's own included). Closing any descriptor of a file drops all of
    this process's POSIX locks on it, so a descriptor is opened only where /proc/locks cannot be read: then
    an open-file-description lock query (F_OFD_GETLK) for a write lock on the `-shm` opened read-only.
    None when neither can tell."""
    shm = os.fspath(path) + "-shm"
    try:
        st = os.stat(shm)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    held = held_inodes()
    if held is not None:
        return st.st_ino in held
    cmd = getattr(fcntl, "F_OFD_GETLK", None)
    if cmd is None:
        return None
    try:
        fd = os.open(shm, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        res = fcntl.fcntl(fd, cmd, struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        return struct.unpack(_FLOCK, res)[0] != fcntl.F_UNLCK
    except OSError:
        return None
    finally:
        os.close(fd)


def open_sqlite_readonly(path: str | os.PathLike[str], *, max_bytes: int = 2 * 1024 ** 3
                         ) -> sqlite3.Connection:
    """Open a runtime's SQLite database without creating or changing anything next to it (module doc)."""
    p = os.fspath(path)
    wal = p + "-wal"
    if not os.path.exists(wal):
        if _size(p) > IN_MEMORY_MAX:
            return _open_immutable(p)
        data = _read_db_bytes(p, max_bytes)
        con = sqlite3.connect(":memory:", check_same_thread=False)
        if not data:  # SQLite treats an empty file as an empty database
            return con
        # A WAL-mode header (bytes 18/19 == 2) makes the in-memory copy try to use a WAL; reset it to
        # rollback journal in our private copy only (in place: no third copy of the database).
        if len(data) > 19 and data[18] == 2:
            data[18:20] = b"\x01\x01"
        try:
            con.deserialize(data)  # type: ignore[attr-defined]
            con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except (sqlite3.DatabaseError, AttributeError) as e:
            con.close()
            raise SqliteUnavailable(f"{p}: {e}") from e
        return con
    if not wal_writer_live(p):
        return _open_private_copy(p, max_bytes)
    try:
        uri = Path(p).absolute().as_uri() + "?mode=ro"
        con = sqlite3.connect(uri, uri=True, timeout=2.0, check_same_thread=False)
        con.execute("PRAGMA query_only=1")
        con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return con
    except sqlite3.Error as e:
        raise SqliteUnavailable(f"{p}: {e}") from e


def _size(p: str) -> int:
    try:
        return os.stat(p).st_size
    except OSError:
        return 0


def _open_immutable(p: str) -> sqlite3.Connection:
    if not stat.S_ISREG(os.stat(p).st_mode):
        raise SqliteUnavailable(f"{p}: not a regular file")
    try:
        uri = Path(p).absolute().as_uri() + "?mode=ro&immutable=1"
        con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        con.execute("PRAGMA query_only=1")
        con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return con
    except sqlite3.Error as e:
        raise SqliteUnavailable(f"{p}: {e}") from e


def _read_db_bytes(p: str, max_bytes: int) -> bytearray:
    try:
        with open(p, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise SqliteUnavailable(f"{p}: not a regular file")
            if st.st_size > max_bytes:
                raise SqliteUnavailable(f"{p}: {st.st_size} bytes is over the in-memory read cap")
            data = bytearray(st.st_size)
            n = f.readinto(data)
            del data[n:]
    except OSError as e:
        raise SqliteUnavailable(f"{p}: {e.strerror or e}") from e
    if data and not data.startswith(b"SQLite format 3\x00"):
        raise SqliteUnavailable(f"{p}: not a SQLite database")
    return data


def _open_private_copy(p: str, max_bytes: int) -> sqlite3.Connection:
    """Read a database and its `-wal` from a private copy (never the store's `-shm`: SQLite rebuilds its
    own from the WAL). A small one is then held in memory; a large one stays a file: the copy's WAL is
    checkpointed into it, it is opened `immutable=1` and unlinked at once (the open descriptor keeps it
    readable and nothing is left behind), so memory stays what the queries need, not the database's size
    (a 420 MB OpenCode database with a `-wal` cost 470 MB held in memory)."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="segue-sqlite-") as tmp:
        os.chmod(tmp, 0o700)  # the copy holds session text
        copy = os.path.join(tmp, "db")
        try:
            for src, dst in ((p, copy), (p + "-wal", copy + "-wal")):
                if not stat.S_ISREG(os.stat(src).st_mode):
                    raise SqliteUnavailable(f"{src}: not a regular file")
                shutil.copyfile(src, dst)
            size = os.path.getsize(copy) + os.path.getsize(copy + "-wal")
            if size > max_bytes:
                raise SqliteUnavailable(f"{p}: over the read cap")
            src_con = sqlite3.connect(copy, timeout=2.0)
            try:
                if size > PRIVATE_IN_MEMORY_MAX:
                    src_con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                    src_con.execute("PRAGMA journal_mode=DELETE").fetchall()
                    src_con.close()
                    con = _open_immutable(copy)
                    con.execute("SELECT count(*) FROM sqlite_master").fetchall()  # the schema is read now
                    return con  # leaving the block unlinks the copy; the connection keeps its descriptor
                mem = sqlite3.connect(":memory:", check_same_thread=False)
                src_con.backup(mem)
                return mem
            finally:
                src_con.close()
        except (OSError, sqlite3.Error) as e:
            raise SqliteUnavailable(f"{p}: {e}") from e


def sqlite_fingerprint(path: str | os.PathLike[str]) -> tuple[Any, ...]:
    p = os.fspath(path)
    from segue.stores.base import fingerprint  # here: base imports this module at its top

    return fingerprint(p, p + "-wal")


