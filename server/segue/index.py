"""The session index: every source's fingerprint and the (redacted) summaries read from it, in SQLite.

`cache/index.sqlite` in Segue's private state directory, shared by every Segue process (CLI runs and the
language server) of the same user:

- WAL mode: readers never wait for a writer, and a writer never waits for readers.
- One writer at a time: each update is one `BEGIN IMMEDIATE` transaction (SQLite's own write lock, waited
  for up to `BUSY_MS`); a process that cannot get it in time keeps its results in memory and skips saving
  (the index is an optimisation, never a precondition).
- A crash mid-update leaves the last committed state (SQLite's journal rolls the rest back). A file that is
  not a database, a damaged one, or one written by another schema is never trusted: it is rebuilt.
- Connections live only for a load or a save, so no connection crosses a fork into the listing's workers.
  A cold parallel scan opens its save early (`stream`, after its workers have started, never waiting for
  the lock): the rows its workers encoded go in as they arrive and commit with the rest of the save.

Schema (version `SCHEMA` in `meta`; any other version rebuilds every table, including tables other
modules added, see below):
  meta(key PRIMARY KEY, value)                      schema version and the Python version (marshal format)
  sources(key PRIMARY KEY, runtime, path, fingerprint BLOB, error, state BLOB, sessions BLOB)
      one row per source; `sessions` is its sessions' `Session.to_cache()` dicts in one marshal blob (a warm
      listing reads one row per source, and a database source of thousands of sessions is rewritten as one
      value when a few of them changed), as (field names, rows): each session the tuple of its values in
      the order of those names, or its dict when its fields differ. A listing revives a session from its
      tuple without building a dict of it first, so a database's thousands of sessions never exist twice
      (dicts and sessions) while they are revived. `state` is the reader's own record of what it read
      (`summarize_delta`: e.g. a key per database row), NULL for readers without one.
A module may add its own tables to this file, guarded by its own `meta` key; it hooks `on_replace` (called
inside the write transaction with the source keys being replaced or pruned) to change them atomically with
the summaries.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from segue.model import Session
from segue.paths import StateDir

# 2: titles and first requests are stored redacted; 3: one sessions blob and a reader state per source;
# 4: the sessions blob as (field names, rows of values)
SCHEMA = 4
VERSION = f"{SCHEMA}/py{sys.version_info[0]}.{sys.version_info[1]}"  # and the code's stamp (`version()`)
BUSY_MS = 2000
FILE = "index.sqlite"

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sources(key TEXT PRIMARY KEY, runtime TEXT NOT NULL, path TEXT NOT NULL,"
    " fingerprint BLOB NOT NULL, error TEXT, state BLOB, sessions BLOB NOT NULL)",
)

# Hooks of modules that keep their own tables in the index (full-text search): called inside the write
# transaction with the connection and the source keys whose sessions are about to be replaced or dropped.
on_replace: list[Callable[[sqlite3.Connection, list[str]], None]] = []


class IndexUnavailable(Exception):
    """The index could not be opened or written; the caller carries on without it."""


def version(cache_dir: Path | None = None) -> str:
    """The index's version: its schema, the Python (marshal format) and Segue's code (segue.codestamp), so that
    what an older reader made of an unchanged file is read again by the new one."""
    from segue import codestamp

    return f"{VERSION}/{codestamp.stamp(cache_dir)}"


def path_of(state: StateDir) -> Path:
    return state.cache / FILE


def connect(state: StateDir, create: bool = True) -> sqlite3.Connection:
    """A connection to a current, valid index (rebuilt when it is damaged or of another version)."""
    cache_dir = state.private(state.cache) if create else state.cache
    p = cache_dir / FILE
    if not create and not p.exists():
        raise IndexUnavailable("no index yet")
    for attempt in range(2):
        try:
            if create and not p.exists():
                # created private before SQLite opens it (0600; its -wal/-shm follow the main file's mode)
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
                os.close(fd)
            conn = sqlite3.connect(p, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
            try:
                _prepare(conn, version(cache_dir))
            except BaseException:
                conn.close()
                raise
            return conn
        except sqlite3.DatabaseError as e:  # not a database, damaged: start again from the stores
            if attempt or not create or (isinstance(e, sqlite3.OperationalError) and "locked" in str(e)):
                raise IndexUnavailable(str(e)) from e
            _discard(p)
        except OSError as e:
            raise IndexUnavailable(str(e)) from e
    raise IndexUnavailable("unreachable")


def _prepare(conn: sqlite3.Connection, current: str) -> None:
    conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable up to the last checkpoint, never corrupt
    version = None
    with contextlib.suppress(sqlite3.OperationalError):  # no meta table yet
        row = conn.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        version = row[0] if row else None
    if version == current:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = None
        with contextlib.suppress(sqlite3.OperationalError):
            row = conn.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        if not row or row[0] != current:  # another process may have rebuilt it while we waited
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                        "AND name NOT LIKE 'sqlite_%'").fetchall():
                with contextlib.suppress(sqlite3.OperationalError):  # FTS shadow tables go with their parent
                    conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            for sql in _TABLES:
                conn.execute(sql)
            conn.execute("INSERT OR REPLACE INTO meta VALUES('version', ?)", (current,))
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


def _discard(p: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            os.unlink(f"{p}{suffix}")


def load(state: StateDir, runtimes: Iterable[str] | None = None,
         revive: Callable[[bytes], Any] | None = None) -> dict[str, list[Any]]:
    """{source key: [fingerprint, sessions blob, error, reader state]} of every indexed source (of `runtimes`
    only, when given: keys `runtime\0path`). The blob is decoded by `sessions_of` only when the source is
    used (a `--runtime` listing decodes only its own). `revive`: decode each blob as its row is read instead
    (a long-lived process that uses every source: the blobs never exist all at once, so the heap they would
    take is never grown); a blob it fails on stays bytes, for the caller's own lazy path to refuse."""
    try:
        conn = connect(state, create=False)
    except IndexUnavailable:
        return {}
    try:
        entries: dict[str, list[Any]] = {}
        sql = "SELECT key, fingerprint, error, state, sessions FROM sources"
        queries = [(sql, ())] if runtimes is None else [
            (sql + " WHERE key >= ? AND key < ?", (f"{rt}\0", f"{rt}\1")) for rt in runtimes]
        for q, args in queries:
            for key, fp, error, st, blob in conn.execute(q, args):
                sessions: Any = blob
                if revive is not None:
                    try:
                        sessions = revive(blob)
                    except Exception:
                        sessions = blob
                entries[key] = [marshal.loads(fp), sessions, error, marshal.loads(st) if st is not None else None]
        return entries
    except sqlite3.OperationalError:
        return {}  # busy or unreadable now: this run reads the stores
    except (sqlite3.DatabaseError, ValueError, EOFError, TypeError):
        _discard(path_of(state))  # damaged: never trusted, rebuilt by this run's save
        return {}
    finally:
        conn.close()


Rows = tuple[tuple[str, ...], list[Any]]  # (field names, [a tuple of values in their order, or a dict])


def rows_of(blob: bytes) -> Rows:
    """A source's sessions blob as stored (field names, rows); ValueError/EOFError/TypeError if damaged."""
    out = marshal.loads(blob)
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], tuple) and isinstance(out[1], list)):
        raise TypeError("not a sessions blob")
    return out


def sessions_of(blob: bytes) -> list[dict[str, Any]]:
    """A source's sessions as stored (`Session.to_cache()` dicts); ValueError/EOFError/TypeError if damaged."""
    names, rows = rows_of(blob)
    out: list[dict[str, Any]] = []
    for r in rows:
        if isinstance(r, tuple):
            out.append(dict(zip(names, r, strict=True)))
        elif isinstance(r, dict):
            out.append(r)
        else:
            raise TypeError("not a session")
    return out


# Values many sessions share (a project's directory, a model, a branch): interned before encoding, so each is
# one string in the blob and, as marshal interns it again on loading, one string in a listing of every source.
_SHARED = ("cwd", "model", "branch")


def encode_sessions(sessions: Iterable[Session | dict[str, Any]]) -> bytes:
    """A source's sessions blob (the inverse of `sessions_of`): rows under the first session's field names."""
    names: tuple[str, ...] | None = None
    rows: list[Any] = []
    intern = sys.intern
    for s in sessions:
        d = dict(s) if isinstance(s, dict) else s.to_cache()  # (a Session, or a listing's compact session)
        for k in _SHARED:
            v = d.get(k)
            if type(v) is str:
                d[k] = intern(v)
        if names is None:
            names = tuple(d)
        rows.append(tuple(d.values()) if tuple(d) == names else d)
    return marshal.dumps((names or (), rows))


def save(state: StateDir, changed: dict[str, list[Any]], removed: Iterable[str]) -> bool:
    """Replace the changed sources' rows and drop the removed ones, in one transaction. False when the index
    could not be written (locked by a slow writer, read-only disk): the caller keeps its results in memory."""
    removed = list(removed)
    if not changed and not removed:
        return True
    for attempt in range(2):
        try:
            _write(connect(state), changed, removed)
            return True
        except IndexUnavailable:
            return False
        except sqlite3.OperationalError:  # locked by another writer too long, disk full: skip this save
            return False
        except sqlite3.DatabaseError:  # damaged past what opening it showed: rebuild from the stores
            if attempt:
                return False
            _discard(path_of(state))
    return False


def _write(conn: sqlite3.Connection, changed: dict[str, list[Any]], removed: list[str]) -> None:
    try:
        conn.execute("BEGIN IMMEDIATE")
        _finish(conn, [], changed, removed)
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()


def _finish(conn: sqlite3.Connection, streamed: list[str], changed: dict[str, list[Any]], removed: list[str]
            ) -> None:
    """The end of a write transaction: hooks, deletions, the changed rows, COMMIT."""
    keys = streamed + list(changed) + removed
    for hook in on_replace:
        hook(conn, keys)
    conn.executemany("DELETE FROM sources WHERE key=?", ((k,) for k in removed))
    # one source's blob at a time (a generator): a cold save of thousands never holds them all at once
    conn.executemany(_INSERT, _rows(changed))
    conn.execute("COMMIT")


_INSERT = "INSERT OR REPLACE INTO sources VALUES(?,?,?,?,?,?,?)"


class Stream:
    """A save written while a cold scan is still reading: rows a worker already encoded go into one open
    write transaction as they arrive (no second encoding, no copy held until the end), and `finish` writes
    the rest of the save and commits, so the index changes all at once or not at all, as with `save`.
    Readers are never blocked (WAL); another writer waits for the commit (up to `BUSY_MS`, then it keeps
    its results in memory, as always)."""

    BATCH = 64  # rows per executemany: one statement step per row, not one Python call into SQLite per row

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn: sqlite3.Connection | None = conn
        self.keys: list[str] = []
        self._rows: list[tuple[Any, ...]] = []

    def put(self, key: str, fp: Any, error: str | None, st: Any, blob: bytes) -> None:
        assert self.conn is not None
        runtime, _, path = key.partition("\0")
        self._rows.append((key, runtime, path, marshal.dumps(fp), error,
                           marshal.dumps(st) if st is not None else None, blob))
        self.keys.append(key)
        if len(self._rows) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        """Write the rows put so far (still inside the open transaction)."""
        rows, self._rows = self._rows, []
        if rows and self.conn is not None:
            self.conn.executemany(_INSERT, rows)

    def finish(self, changed: dict[str, list[Any]], removed: Iterable[str]) -> bool:
        """Commit everything; False (rolled back) when that failed."""
        if self.conn is None:
            return False
        try:
            self.flush()
        except sqlite3.Error:
            self.abort()
            return False
        conn, self.conn = self.conn, None
        assert conn is not None
        try:
            _finish(conn, self.keys, changed, list(removed))
            return True
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            return False
        finally:
            conn.close()

    def abort(self) -> None:
        self._rows = []
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            conn.close()


def stream(state: StateDir) -> Stream | None:
    """An open write transaction for a `Stream`, or None when the index is busy or unusable right now
    (never waited for: the scan then saves at its end as usual)."""
    try:
        conn = connect(state)
    except IndexUnavailable:
        return None
    try:
        # a cold scan writes every source in this one transaction: a small page cache spills its pages to the
        # WAL as it goes (written there anyway) instead of holding megabytes of them until the commit
        conn.execute("PRAGMA cache_size=-512")
        conn.execute("PRAGMA busy_timeout=0")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
    except sqlite3.Error:
        conn.close()
        return None
    return Stream(conn)


def _rows(changed: dict[str, list[Any]]) -> Iterator[tuple[Any, ...]]:
    for key, entry in changed.items():
        fp, sessions, error = entry[0], entry[1], entry[2]
        st = entry[3] if len(entry) > 3 else None
        runtime, _, path = key.partition("\0")
        blob = sessions if isinstance(sessions, bytes) else encode_sessions(sessions)  # bytes: stored as they were
        yield key, runtime, path, marshal.dumps(fp), error, marshal.dumps(st) if st is not None else None, blob
