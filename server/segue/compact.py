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
"""

from __future__ import annotations

import marshal
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

    __slots__ = ("_data", "_names", "branch", "continues", "cwd", "handed_off", "id", "linkable", "live",
                 "parent_id", "priority", "runtime", "started_at", "subagent_count", "updated_at")

    def __init__(self, names: tuple[str, ...] | None, row: Any, s: Session | None = None,
                 at: tuple[int, ...] | None = None) -> None:
        """`row`: the session's values in the order of `names` (None: a dict row, kept as it is). The slots come
        from the row by the positions `at` of `_SLOTTED` in it when every one is there, else from `s`, the session
        revived from the row."""
        self._names = names
        self._data = marshal.dumps(row)
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
        data = self._data
        if data is None or _LAST[0] is not data:
            _LAST[:] = [None, None]
            _LAST[1] = self.session()
            _LAST[0] = data
        return getattr(_LAST[1], name)

    def copy(self) -> Session:
        """A Session of its own (Session.copy: for decoration per request)."""
        return self.session()

    def session(self) -> Session:
        """The whole session, revived from its row, with what listing and decoration set laid over it."""
        from segue.listing import revive_rows

        if self._data is None:
            raise RuntimeError(f"{self.ref}: its row was released (Compact.release) and cannot be read")
        s = revive_rows(self._names or (), [marshal.loads(self._data)])[0]
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


def release(sessions: Any) -> None:
    """`Compact.release` on every compact session among `sessions`."""
    for s in sessions:
        if isinstance(s, Compact):
            s.release()


# the row fields `Compact.__init__` reads, in its order
_SLOTTED = ("runtime", "id", "parent_id", "cwd", "started_at", "updated_at", "branch", "live", "handed_off",
            "continues", "subagent_count", "locator", "first_request")


def compact_all(blob: bytes) -> list[Compact]:
    """A source's sessions from its index blob, as compact sessions."""
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
            out.append(Compact(names, r, at=at))
            continue
        if sessions is None:
            sessions = revive_rows(names, rows)
        out.append(Compact(None if isinstance(r, dict) else names, r, sessions[i]))
    return out


_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {}
_LAST: list[Any] = [None, None]  # (a compact session's row, the session revived from it) for `__getattr__`
_AT: dict[tuple[str, ...], tuple[int, ...]] = {}


def may_link(s: Any) -> bool:
    """False only when lineage.find_marker is sure to find nothing in the session's first request (a compact
    session knows without reading it)."""
    return s.linkable if isinstance(s, Compact) else True


def rank_of(s: Any) -> tuple[int, float]:
    """What listing._keep ranks a session found in two sources by."""
    return s.listing_rank if isinstance(s, Compact) else (int(s.locator.get("priority", 0)), s.sort_time)

