"""The interface every runtime reader implements, and the read-only I/O helpers they share.

A reader turns one runtime's own store into `Session`s (cheaply: heads and tails) and, for briefs, into a
stream of `Step`s. Readers never write anything inside a store: no temp files, no locks, no SQLite
`-wal`/`-shm` side files (see `open_sqlite_readonly`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from segue.model import ReadStats, Session, Step

try:  # orjson decodes 2-3x faster; the stdlib stays the reference (and the fallback on anything orjson refuses)
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - the editor's bundled server ships pure-Python wheels only
    _fast_loads = None

HEAD_BYTES = 32 * 1024
TAIL_BYTES = 32 * 1024
MAX_TEXT = 8 * 1024  # cap on any single text a summary keeps (titles, first requests)


@dataclass(frozen=True)
class Env:
    """Where to look: HOME and the environment variables that relocate stores.

    Readers take this instead of reading `os.environ`, so tests point them anywhere.
    """

    home: Path
    environ: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_os(cls) -> Env:
        return cls(home=Path(os.path.expanduser("~")), environ=dict(os.environ))

    def get(self, name: str) -> str | None:
        v = self.environ.get(name)
        return v if v else None

    def path(self, name: str) -> Path | None:
        v = self.get(name)
        return Path(v).expanduser().absolute() if v else None


@dataclass(frozen=True)
class Source:
    """A unit the listing cache tracks: one file (or DB) that yields one or more sessions.

    `fingerprint` changes whenever the content may have changed (size and mtime of the file and of any
    side file such as a SQLite `-wal`).
    """

    runtime: str
    path: str
    fingerprint: tuple[Any, ...]
    kind: str = ""


@dataclass(frozen=True)
class Location:
    """A place a reader looked for a store (for the "nothing found" message)."""

    path: str
    exists: bool
    how_to_override: str = ""


class Reader(ABC):
    """One runtime's store. Subclasses live one per module in `segue.stores`."""

    runtime: str = ""

    def __init__(self, env: Env) -> None:
        self.env = env

    @abstractmethod
    def locations(self) -> list[Location]:
        """Every directory or file this reader looks in, whether or not it exists."""

    @abstractmethod
    def sources(self) -> Iterator[Source]:
        """Cheap discovery: stat only, no parsing. Each source yields sessions via `summarize`."""

    @abstractmethod
    def summarize(self, source: Source) -> list[Session]:
        """Read one source's sessions from heads and tails (never whole transcripts).

        Problems reading one session go into its `problems`; an unreadable source may raise, and the
        listing records it as skipped with the reason.
        """

    @abstractmethod
    def steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        """Stream a session's activity in order, for briefs. Memory must not grow with the session:
        parse line by line, skip records the brief does not use before decoding them where possible,
        count damaged records in `stats.damaged_lines`."""

    def refresh_live(self, sessions: list[Session]) -> None:
        """Re-decide `live` on sessions that may come from the listing cache: a process can exit without
        changing the store. Default: a session marked live stays live only while `locator["pid"]` (when
        the reader recorded one) is alive. Readers with their own live markers override this."""
        for s in sessions:
            if s.live and "pid" in s.locator:
                s.live = pid_alive(s.locator["pid"])

    def exists(self, session: Session) -> bool:
        """Is the session still in its store (for resume: `not_in_store`)."""
        return os.path.exists(session.store_path)


# ---------------------------------------------------------------------------------------------------------
# Read-only file helpers


def fingerprint(*paths: str | os.PathLike[str]) -> tuple[Any, ...]:
    out: list[Any] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns))
    return tuple(out)


def read_head_tail(path: str | os.PathLike[str], head: int = HEAD_BYTES, tail: int = TAIL_BYTES
                   ) -> tuple[bytes, bytes, int]:
    """Return (head bytes, tail bytes, file size). When the file is small, tail is b"" and head is all."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= head + tail:
            return f.read(), b"", size
        h = f.read(head)
        f.seek(size - tail)
        return h, f.read(), size


def complete_lines(chunk: bytes, *, from_start: bool) -> list[bytes]:
    """Split a head or tail chunk into whole lines: a head drops its cut last line, a tail its cut first."""
    lines = chunk.split(b"\n")
    # a head keeps its lines up to the last newline; a tail drops its first (cut) line
    lines = (lines[:-1] if not chunk.endswith(b"\n") else lines) if from_start else lines[1:]
    return [ln for ln in lines if ln.strip()]


def loads(line: bytes | str) -> Any | None:
    """Decode one JSON record; None for damage (invalid JSON or UTF-8).

    orjson first; whatever it refuses (lone surrogates, NaN, a BOM) goes to `json.loads`, so a record decodes
    as the stdlib decodes it (one known difference: orjson gives integers past 64 bits as floats)."""
    if _fast_loads is not None:
        try:
            return _fast_loads(line)
        except (ValueError, TypeError):
            pass
    try:
        return json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def iter_jsonl(path: str | os.PathLike[str], stats: ReadStats, *, skip: tuple[bytes, ...] = (),
               max_line: int = 64 * 1024 * 1024) -> Iterator[dict[str, Any]]:
    """Stream JSON objects from a JSONL file.

    `skip`: byte substrings that mark records the caller does not need; such lines are dropped before
    decoding (the cheap path for huge tool outputs). Damaged lines are counted; a cut last line (a live
    writer) is dropped silently. Lines longer than `max_line` are skipped and counted.
    """
    with open(path, "rb") as f:
        for raw in f:
            stats.bytes_read += len(raw)
            if not raw.endswith(b"\n"):
                # last line without newline: maybe still being written
                obj = loads(raw) if raw.strip() else None
                if isinstance(obj, dict):
                    yield obj
                return
            if len(raw) > max_line:
                stats.damaged_lines += 1
                continue
            if skip and any(s in raw for s in skip):
                continue
            if not raw.strip():
                continue
            obj = loads(raw)
            if isinstance(obj, dict):
                yield obj
            else:
                stats.damaged_lines += 1


def read_json_file(path: str | os.PathLike[str], max_bytes: int = 256 * 1024 * 1024) -> Any:
    """Load a whole JSON file (Cline and OpenCode legacy stores keep single-document files)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise ValueError(f"{size} bytes is over the {max_bytes}-byte cap for a single JSON document")
        return json.loads(f.read())


def pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


# ---------------------------------------------------------------------------------------------------------
# SQLite, read-only without side files


class SqliteUnavailable(Exception):
    """The database could not be read (locked, corrupt, not a database)."""


def open_sqlite_readonly(path: str | os.PathLike[str], *, max_bytes: int = 2 * 1024 ** 3
                         ) -> sqlite3.Connection:
    """Open a runtime's SQLite database without creating anything next to it.

    A plain `mode=ro` open creates `-wal`/`-shm` when the database is in WAL mode and they are absent.
    So: when no `-wal` exists, read the database bytes and deserialize them into an in-memory
    connection (nothing on disk is touched). When a `-wal` and its `-shm` exist a writer is live (or
    crashed): open `mode=ro` so SQLite reads the WAL; SQLite may then update the existing `-shm` read
    marks, the one change the contract allows. A `-wal` without a `-shm` (a copied store, a crash) would
    make SQLite create the `-shm`: then both files are copied to a private temporary directory and read
    from there.
    """
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
        # rollback journal in our private copy only.
        if len(data) > 19 and data[18] == 2:
            data = data[:18] + b"\x01\x01" + data[20:]
        try:
            con.deserialize(data)  # type: ignore[attr-defined]
            con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except (sqlite3.DatabaseError, AttributeError) as e:
            con.close()
            raise SqliteUnavailable(f"{p}: {e}") from e
        return con
    if not os.path.exists(p + "-shm"):
        return _open_private_copy(p, max_bytes)
    try:
        uri = Path(p).absolute().as_uri() + "?mode=ro"
        con = sqlite3.connect(uri, uri=True, timeout=2.0, check_same_thread=False)
        con.execute("PRAGMA query_only=1")
        con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return con
    except sqlite3.Error as e:
        raise SqliteUnavailable(f"{p}: {e}") from e


# Databases up to this size are copied into memory (the contract's way: nothing on disk is touched). Larger
# ones would cost their whole size in memory on every cold listing, so they are opened `immutable=1`, which
# also creates no side file; a writer that starts meanwhile changes the fingerprint, and the next listing
# reads again.
IN_MEMORY_MAX = 48 * 1024 * 1024


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


def _read_db_bytes(p: str, max_bytes: int) -> bytes:
    try:
        with open(p, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise SqliteUnavailable(f"{p}: not a regular file")
            if st.st_size > max_bytes:
                raise SqliteUnavailable(f"{p}: {st.st_size} bytes is over the in-memory read cap")
            data = f.read()
    except OSError as e:
        raise SqliteUnavailable(f"{p}: {e.strerror or e}") from e
    if data and not data.startswith(b"SQLite format 3\x00"):
        raise SqliteUnavailable(f"{p}: not a SQLite database")
    return data


def _open_private_copy(p: str, max_bytes: int) -> sqlite3.Connection:
    """Read a database and its `-wal` from a private copy, then hold the result in memory."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="segue-sqlite-") as tmp:
        copy = os.path.join(tmp, "db")
        try:
            shutil.copyfile(p, copy)
            shutil.copyfile(p + "-wal", copy + "-wal")
            if os.path.getsize(copy) + os.path.getsize(copy + "-wal") > max_bytes:
                raise SqliteUnavailable(f"{p}: over the in-memory read cap")
            src = sqlite3.connect(copy, timeout=2.0)
            mem = sqlite3.connect(":memory:", check_same_thread=False)
            try:
                src.backup(mem)
            finally:
                src.close()
            return mem
        except (OSError, sqlite3.Error) as e:
            raise SqliteUnavailable(f"{p}: {e}") from e


def sqlite_fingerprint(path: str | os.PathLike[str]) -> tuple[Any, ...]:
    p = os.fspath(path)
    return fingerprint(p, p + "-wal")
