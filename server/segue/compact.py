"""Compact sessions: what a one-shot cold listing (`segue list`) holds of each session instead of a Session.

A cold CLI listing holds every session from the moment its worker's blob arrives until the patch table is kept
(segue.warm): as Session objects that is ≈ 1.6 KB of small objects a session (13 MB at 8,000). A `Compact`
keeps in slots only what ordering, nesting, decoration, live checks and the patch table read (runtime, id,
parent, times, directory, branch, live, rank, the decorations), and the rest as the session's row of the index
blob, marshalled on its own (one allocation). Any other field is read from that row when asked for
(`__getattr__`); `to_json` revives the whole session from it (listing's revive, so the output is the one a
Session gives) with the decorations laid over, one session at a time as it is printed.

Only one-shot callers (the CLI) use it: the `list` view (`Service.page`) and the listing a search build indexes
(`Service.raw_listing`, read field by field); SEGUE_LIST_COMPACT=0 or SEGUE_FAST_PATHS=0 keeps Session objects
(the reference).

The rows themselves (≈ 650 B a session: 5 MB at 8,000 sessions, 21 MB at 32,000) go to a `Spill` when the scan has
a state directory: an unnamed private file in its `cache/`, written in large pieces and read back one row at a
time (`os.pread`) when a row is asked for, so they are not part of the process's memory. A spill that cannot be
created or written keeps the rows in memory, as does SEGUE_LIST_SPILL=0.
"""

from __future__ import annotations

import contextlib
import marshal
import os
from typing import Any

from segue import index
from segue.model import Continues, Session, SessionKeys

# what listing and decoration set on a session in place: laid over the revived session by `session()`
_DECORATED = ("live", "branch", "handed_off", "continues", "subagent_count")
_MARK = "[segue-handoff"  # lineage.find_marker finds nothing in a first request without it


def enabled(environ: Any) -> bool:
    def on(name: str) -> bool:
        return str(environ.get(name, "1")).strip().lower() not in ("0", "off", "false", "no")

    return on("SEGUE_LIST_COMPACT") and on("SEGUE_FAST_PATHS")


class Compact(SessionKeys):
    """One session of a cold listing: the fields listing reads in slots, the rest in its marshalled row."""

    __slots__ = ("_data", "_names", "_spill", "branch", "continues", "cwd", "handed_off", "id", "linkable", "live",
                 "parent_id", "priority", "runtime", "started_at", "subagent_count", "updated_at")

    def __init__(self, names: tuple[str, ...] | None, row: Any, s: Session | None = None,
                 at: tuple[int, ...] | None = None, spill: Spill | None = None) -> None:
        """`row`: the session's values in the order of `names` (None: a dict row, kept as it is). The slots come
        from the row by the positions `at` of `_SLOTTED` in it when every one is there, else from `s`, the session
        revived from the row. `spill`: where the marshalled row is kept (None: in `_data` itself)."""
        self._names = names
        data = marshal.dumps(row)
        # the row's bytes, or where the spill holds them (offset << 32 | length)
        self._data: bytes | int | None = data if spill is None else spill.put(data)
        self._spill = spill
        if at is not None:
            (self.runtime, self.id, self.parent_id, self.cwd, self.started_at, self.updated_at, self.branch,
             self.live, self.handed_off, cont, self.subagent_count, loc, fr) = [row[i] for i in at]
            self.continues = Continues(**cont) if cont else None
            self.priority = int(loc.get("priority", 0))
        else:
            assert s is not None
            self.runtime, self.id, self.parent_id, self.cwd = s.runtime, s.id, s.parent_id, s.cwd
            self.started_at, self.updated_at, self.branch, self.live = s.started_at, s.updated_at, s.branch, s.live
            self.handed_off, self.continues, self.subagent_count = s.handed_off, s.continues, s.subagent_count
            self.priority = int(s.locator.get("priority", 0))
            fr = s.first_request
        self.linkable = bool(fr) and _MARK in fr

    # -- as a Session reads ---------------------------------------------------------------------------------
    @property
    def listing_rank(self) -> tuple[int, float]:
        """listing._keep's rank (the locator's priority, then the time) without reading the locator."""
        return (self.priority, self.sort_time)

    def __getattr__(self, name: str) -> Any:
        """A field kept only in the row (title, store path, locator…): read from it, not kept. The session last
        revived for this is kept (one, for every compact session): a search build reads several fields of one
        session in a row. Those fields are never set on a compact session, so its row alone gives them."""
        if name.startswith("__") or name in Compact.__slots__:
            raise AttributeError(name)
        if self._data is None or _LAST[0] is not self:
            _LAST[:] = [None, None]
            _LAST[1] = self.session()
            _LAST[0] = self
        return getattr(_LAST[1], name)

    def _row(self) -> bytes:
        data = self._data
        if data is None:
            raise RuntimeError(f"{self.ref}: its row was released (Compact.release) and cannot be read")
        if type(data) is int:
            assert self._spill is not None
            return self._spill.get(data >> 32, data & 0xFFFFFFFF)
        return data  # type: ignore[return-value]

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its row's bytes (a search build's worker has no access to this process's spill)."""
        return (_rebuilt, (self._names, self._row(), tuple(getattr(self, n) for n in _OWN)))

    def copy(self) -> Session:
        """A Session of its own (Session.copy: for decoration per request)."""
        return self.session()

    def session(self) -> Session:
        """The whole session, revived from its row, with what listing and decoration set laid over it."""
        from segue.listing import revive_rows

        s = revive_rows(self._names or (), [marshal.loads(self._row())])[0]
        for name in _DECORATED:
            setattr(s, name, getattr(self, name))
        return s

    def to_json(self) -> dict[str, Any]:
        return self.session().to_json()

    def to_cache(self) -> dict[str, Any]:
        """The index's form (a save that could not take the worker's blob as it was)."""
        return self.session().to_cache()

    def prime(self) -> None:
        """(The worker primed the row's ISO times.)"""

    def release(self) -> None:
        """Drop the row once the listing is printed (the patch table is built beside what is left): only the
        slots can be read after this, and a first request that may carry a handoff marker (lineage)."""
        if not self.linkable:
            self._data = None


_OWN = tuple(n for n in Compact.__slots__ if n not in ("_data", "_names", "_spill"))


def _rebuilt(names: tuple[str, ...] | None, data: bytes, own: tuple[Any, ...]) -> Compact:
    c = Compact.__new__(Compact)
    c._names, c._data, c._spill = names, data, None
    for n, v in zip(_OWN, own, strict=True):
        setattr(c, n, v)
    return c


class Spill:
    """Compact rows in an unnamed private file (mode 0600 in Segue's private `cache/`, never linked, or unlinked at
    once where the file system cannot make it unnamed: gone with the process) instead of memory. Rows are appended
    to a buffer written out BUFFER bytes at a time and read back with one `os.pread` each. If a write fails (a full
    disk), the rows not written stay in memory and so does every later one: nothing put is ever lost."""

    BUFFER = 256 * 1024

    def __init__(self, fd: int) -> None:
        self._fd = fd  # a bare descriptor, closed with the spill (no file object to finalise in a cycle's order)
        self._buf = bytearray()
        self._written = 0  # bytes in the file; the buffer holds what comes after
        self._stuck = False  # a write failed: everything from `_written` on stays in the buffer

    def __del__(self) -> None:
        fd = getattr(self, "_fd", -1)
        if fd >= 0:
            self._fd = -1
            with contextlib.suppress(OSError):
                os.close(fd)

    @classmethod
    def open(cls, directory: str | os.PathLike[str] | None, environ: Any = None) -> Spill | None:
        """A spill in `directory`, or None (no directory, SEGUE_LIST_SPILL=0, or no file could be made)."""
        env = os.environ if environ is None else environ
        if directory is None or str(env.get("SEGUE_LIST_SPILL", "1")).strip().lower() in ("0", "off", "false", "no"):
            return None
        try:
            return cls(os.open(directory, getattr(os, "O_TMPFILE", 0) | os.O_RDWR | os.O_CLOEXEC, 0o600)
                       if hasattr(os, "O_TMPFILE") else cls._named(directory))
        except OSError:
            try:
                return cls(cls._named(directory))  # (a file system without unnamed files)
            except OSError:
                return None

    @staticmethod
    def _named(directory: str | os.PathLike[str]) -> int:
        import tempfile

        fd, path = tempfile.mkstemp(dir=directory, prefix="spill-")  # 0600, O_EXCL
        try:
            os.unlink(path)
        except OSError:
            os.close(fd)
            raise
        return fd

    def put(self, data: bytes) -> int:
        """Keep `data`; what `get` takes to read it back (its offset << 32 | its length)."""
        at = self._written + len(self._buf)
        self._buf += data
        if len(self._buf) >= self.BUFFER and not self._stuck:
            self._flush()
        return (at << 32) | len(data)

    def get(self, at: int, n: int) -> bytes:
        """The `n` bytes put at `at`: from the file, the buffer, or both (a write that failed midway)."""
        w = self._written
        if at >= w:  # still in the buffer
            return bytes(self._buf[at - w : at - w + n])
        head = os.pread(self._fd, min(n, w - at), at)
        if len(head) != min(n, w - at):
            raise RuntimeError(f"a spilled row read short ({len(head)} of {min(n, w - at)} bytes)")
        return head if len(head) == n else head + bytes(self._buf[: n - len(head)])

    def _flush(self) -> None:
        view = memoryview(self._buf)
        done = 0
        try:
            while done < len(view):
                done += os.write(self._fd, view[done:])
        except OSError:
            self._stuck = True  # what was not written stays in the buffer, and every later row with it
        finally:
            view.release()
            self._written += done
            del self._buf[:done]


def release(sessions: Any) -> None:
    """`Compact.release` on every compact session among `sessions`."""
    for s in sessions:
        if isinstance(s, Compact):
            s.release()


# the row fields `Compact.__init__` reads, in its order
_SLOTTED = ("runtime", "id", "parent_id", "cwd", "started_at", "updated_at", "branch", "live", "handed_off",
            "continues", "subagent_count", "locator", "first_request")


def compact_all(blob: bytes, spill: Spill | None = None) -> list[Compact]:
    """A source's sessions from its index blob, as compact sessions (their rows in `spill` when given)."""
    from segue.listing import revive_rows

    names, rows = index.rows_of(blob)
    names = _NAMES.setdefault(names, names)  # one tuple for every source of the same form
    at = _AT.get(names)
    if at is None:
        at = _AT[names] = tuple(names.index(n) for n in _SLOTTED) if set(names) >= set(_SLOTTED) else ()
    sessions = None
    out: list[Compact] = []
    for i, r in enumerate(rows):
        # straight from the row when it is one of the blob's form whose locator is the dict readers give, and its
        # first request text or nothing (what the Session revived from it would hold); else from that Session
        if (at and type(r) is tuple and len(r) == len(names) and type(r[at[-2]]) is dict
                and (r[at[-1]] is None or type(r[at[-1]]) is str)):
            out.append(Compact(names, r, at=at, spill=spill))
            continue
        if sessions is None:
            sessions = revive_rows(names, rows)
        out.append(Compact(None if isinstance(r, dict) else names, r, sessions[i], spill=spill))
    return out


_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {}
_LAST: list[Any] = [None, None]  # (a compact session, the session revived from its row) for `__getattr__`
_AT: dict[tuple[str, ...], tuple[int, ...]] = {}


def may_link(s: Any) -> bool:
    """False only when lineage.find_marker is sure to find nothing in the session's first request (a compact
    session knows without reading it)."""
    return s.linkable if isinstance(s, Compact) else True


def rank_of(s: Any) -> tuple[int, float]:
    """What listing._keep ranks a session found in two sources by."""
    return s.listing_rank if isinstance(s, Compact) else (int(s.locator.get("priority", 0)), s.sort_time)

