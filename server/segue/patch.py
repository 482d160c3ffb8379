"""The patch path of the warm listing: a kept `segue list` whose probe shows that only some runtimes' discovery
changed is patched, not listed again.

A full listing that is kept (segue.warm) also keeps a patch table: every session of the runtimes it scanned with
what ordering and nesting read of it (runtime, id, parent, times, directory, subagent count) and where its
printed bytes (or its table row) are, and every source with its fingerprint, reader state and sessions. When a
later replay finds only discovery groups of some runtimes changed (`warm.answer`), this module:

1. runs discovery of those runtimes only (their reader alone), recording a new probe group for each;
2. re-summarises only the sources whose fingerprint moved, against the session index (a database store reads
   only its changed rows, `summarize_delta`), and saves them in the index as a full listing would;
3. keeps the printed bytes of every session it did not read again, and decorates and encodes only the ones it
   read (handoff tokens, the checkout's branch, lineage markers and their `events.jsonl` record, live checks);
4. decides again what a change can move across sessions: subagent counts (patched into kept bytes), which
   subagents nest under or hide behind a parent, the order (Listing.groups' order, on the patch table), the
   directory filter, sessions Segue kept facts of.

What a patch costs beyond the warm answer is kept small: the table keeps each runtime's sources apart (only the
changed runtimes' are loaded and written again); kept items are checked by their head and copied in runs, their
subagent count read only when it moved; without `--all` or `--dir` the order is one sort of the top-level sessions
(Listing.groups with SEGUE_FAST_PATHS=0); the redactor's patterns come from segue.recache.

Anything it cannot prove sends the caller to the full path (None, nothing printed): a live-check or checkout
group changed, the same session in two sources, a session whose kept facts would appear or disappear, a tie
in the order, a source that could not be read, a damaged table. SEGUE_WARM_PATCH=0 switches it off.
"""

from __future__ import annotations

import contextlib
import itertools
import marshal
import operator
import os
import sys
import time

from segue import replay, warm

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

# 2: the sources per runtime, each marshalled apart (a patch loads only the changed ones); 3: in frames, the rows in
# chunks (`_frames`: encoded and written a piece at a time)
TABLE_FORMAT = 3
LIVE = "/live"  # listing.LIVE_GROUP (not imported: listing is heavy, and most answers never need it)
_COUNT = b'"subagent_count": '
_COUNT_ROW = warm.ROW_FIELDS.index("subagent_count")
_ID_ROW = warm.ROW_FIELDS.index("id")
_SHOWN_ROW = len(warm.ROW_FIELDS)  # (after the fields: the id as shown)


class _Meta:
    """What ordering reads of a session (Listing.groups, cwd_within), without the session."""

    __slots__ = ("count", "count0", "cwd", "id", "parent_id", "runtime", "session", "slot", "sort_time", "source",
                 "started_at")

    def __init__(self, t: tuple[Any, ...], session: Any = None) -> None:
        (self.runtime, self.id, self.parent_id, self.sort_time, self.started_at, self.cwd, self.count, self.slot,
         self.source) = t
        self.count0 = self.count  # the subagent count in the kept bytes (the table keeps what was printed)
        self.session = session

    def row(self) -> tuple[Any, ...]:
        return (self.runtime, self.id, self.parent_id, self.sort_time, self.started_at, self.cwd, self.count,
                self.slot, self.source)


def _meta_of(s: Any, slot: Any, source: str | None) -> tuple[Any, ...]:
    return (s.runtime, s.id, s.parent_id, s.sort_time, s.started_at, s.cwd, s.subagent_count, slot, source)


def _digest(state: Any) -> str:
    if state is None:  # most sources (files) have no reader state: one string shared by all of their rows
        return _NONE_DIGEST
    return replay.blake2b(repr(state).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _head(runtime: str, sid: str, enc: str, errors: str) -> bytes:
    """How a session's printed JSON begins (`{"runtime": …, "id": …, `): json.dumps' own spelling, built
    directly when neither value holds a character JSON escapes or that is not printable ASCII."""
    if _plain(runtime) and _plain(sid):
        return f'{{"runtime": "{runtime}", "id": "{sid}", '.encode("ascii")
    import json

    return json.dumps({"runtime": runtime, "id": sid}, ensure_ascii=False)[:-1].encode(enc, errors) + b", "


def _plain(s: str) -> bool:
    return s.isascii() and s.isprintable() and '"' not in s and "\\" not in s


_NONE_DIGEST = replay.blake2b(b"None", digest_size=16).hexdigest()


# -- the table, kept by the full path -------------------------------------------------------------------------

def table_of(args: Any, svc: Any, printed: list[Any], items: Any
             ) -> Iterator[bytes] | None:
    """The patch table of a full `segue list` (None when this listing cannot be patched later), as the pieces to
    write one after another (`_frames`): `printed` are the sessions it printed, `items` where each one's JSON is
    in the kept body (None: a table's rows). Every check is made here; the pieces are encoded as they are taken
    (a cold listing's peak is its end: no session's table row is held beside every other one's)."""
    from segue.stores import RUNTIMES

    if args.limit not in (None, 0) or (not args.json and sys.stdout.isatty()):
        return None  # a page (or a screenful) is cut from an order the table does not hold whole
    cache = svc._cache
    if cache is None or not printed or (items is not None and len(items) != len(printed)):
        return None
    runtimes = tuple(args.runtime) if args.runtime else None
    scanned = sorted(r for r in RUNTIMES if not runtimes or r in runtimes)
    # Held beside the whole listing at its end (the peak of a cold run): one entry per session in each map, no
    # list per session where one candidate is the rule, and no throw-away set or list of every session's key.
    by_key: dict[str, dict[str, int]] = {}  # runtime -> id -> printed position (no tuple of every key)
    for i, s in enumerate(printed):
        ids = by_key.get(s.runtime)
        if ids is None:
            ids = by_key[s.runtime] = {}
        elif s.id in ids:
            return None
        ids[s.id] = i

    def shown_of(k: tuple[str, str], other: Any) -> tuple[Any, Any]:
        ids = by_key.get(k[0])
        i = None if ids is None else ids.get(k[1])
        if i is None:
            return other, None
        return printed[i], (items[i] if items is not None else i)

    # The best candidate of each session key: runtime -> id -> the session (the rule: found in one source, the
    # one being read when its key first appears), or (source key, session) once another source holds it too;
    # and the keys whose best rank is shared (listing._keep would keep the first found: the table cannot say
    # which). No tuple per session: the ids are the sessions' own strings, ranks are compared when a key repeats.
    best: dict[str, dict[str, Any]] = {}
    tied: set[tuple[str, str]] = set()
    for key, e in cache.entries.items():
        if key.partition("\0")[0] not in scanned:
            continue
        if not isinstance(e[1], list) or e[2]:
            return None
        for s in e[1]:
            ids = best.get(s.runtime)
            if ids is None:
                ids = best[s.runtime] = {}
            old = ids.get(s.id)
            if old is None:
                ids[s.id] = s
                continue
            was = old[1] if type(old) is tuple else old
            rank, old_rank = _rank(s), _rank(was)
            k = (s.runtime, s.id)
            if rank > old_rank:
                ids[s.id] = (key, s)
                tied.discard(k)
            elif rank == old_rank:
                tied.add(k)
    if tied:
        return None

    def has(k: tuple[str, str]) -> bool:
        ids = best.get(k[0])
        return ids is not None and k[1] in ids

    kept: list[tuple[str, str]] = []
    extra: dict[tuple[str, str], Any] = {}  # kept sessions no source holds
    kept_dir = svc.state.cache / "briefs"
    if os.path.isdir(kept_dir):
        from segue.kept import kept_sessions

        for s, _at in kept_sessions(svc.state):
            k = (s.runtime, s.id)
            if s.runtime not in scanned:
                continue
            kept.append(k)
            if not has(k) and k not in extra:
                extra[k] = s
    if not all(has((r, sid)) or (r, sid) in extra for r, ids in by_key.items() for sid in ids):
        return None
    args_t = (runtimes, args.dir, bool(args.all))

    def winners() -> Iterator[tuple[tuple[str, str], str | None, Any]]:
        """(key, source key, session) of every row, in order of the key's first appearance (the plain
        algorithm's), then the kept sessions no source holds. Once: each key is marked as it is given."""
        done = _DONE
        for key, e in cache.entries.items():
            if key.partition("\0")[0] in scanned:
                for s in e[1]:
                    ids = best[s.runtime]
                    w = ids[s.id]
                    if w is done:
                        continue
                    ids[s.id] = done
                    if type(w) is tuple:
                        yield (s.runtime, s.id), w[0], w[1]
                    else:
                        yield (s.runtime, s.id), key, w
        for k, s in extra.items():
            yield k, None, s

    # the table must give back what was printed, or it is not kept: the order of what its rows say (each row is
    # the shown session's fields, `_meta_of`: ordered here from the sessions themselves, no row built yet; the
    # keys are unique, so the order does not depend on the order of the rows)
    shown = [shown_of((r, sid), w[1] if type(w) is tuple else w)[0] for r, ids in best.items()
             for sid, w in ids.items()]
    shown += [shown_of(k, s)[0] for k, s in extra.items()]
    order = _order(shown, args_t, unique=True)
    if order is None or len(order) != len(printed) or not all(
            m.runtime == s.runtime and m.id == s.id for m, s in zip(order, printed, strict=True)):
        return None
    del order, shown
    from segue.compact import may_link
    from segue.lineage import find_marker

    links = []
    for key, e in cache.entries.items():
        if key.partition("\0")[0] in scanned:
            for s in e[1]:
                c = find_marker(s.first_request) if may_link(s) else None
                if c and (c.runtime, c.id) != (s.runtime, s.id):
                    links.append((s.runtime, s.id, c.runtime, c.id))
    kind = "bytes" if items is not None else "rows"

    def sources_of(runtime: str) -> dict[str, tuple[Any, ...]]:
        out: dict[str, tuple[Any, ...]] = {}
        for key, e in cache.entries.items():
            if key.partition("\0")[0] == runtime:
                ss = e[1]
                out[key] = (e[0], _digest(e[3]), [(s.runtime, s.id) for s in ss], [_rank(s) for s in ss])
        return out

    def metas() -> Iterator[tuple[Any, ...]]:
        for k, src_key, s in winners():
            shown_s, slot = shown_of(k, s)
            yield _meta_of(shown_s, slot, src_key)

    return _frames(kind, args_t, scanned, (sources_of(r) for r in scanned), metas(), kept, links)


_META_CHUNK = 1024  # table rows a frame holds


def _frames(kind: str, args_t: Any, scanned: list[str], sources: Iterable[Any], metas: Iterable[tuple[Any, ...]],
            kept: list[Any], links: list[Any]) -> Iterator[bytes]:
    """The table as frames (a 4-byte length, then one marshalled value), taken one after another: its head, each
    scanned runtime's sources (a dict, or the bytes of one marshalled already), then the rows in chunks. Each
    value is encoded alone, its source let go once written (no whole table, nor marshal's note of every object
    in it, is ever held)."""

    def frame(b: bytes) -> Iterator[bytes]:
        yield len(b).to_bytes(4, "little")
        yield b

    yield from frame(marshal.dumps((TABLE_FORMAT, kind, args_t, scanned, kept, links)))
    n = 0
    for src in sources:
        n += 1
        yield from frame(src if isinstance(src, bytes) else marshal.dumps(src))
    if n != len(scanned):
        raise ValueError("a table's sources are one per scanned runtime")
    chunk: list[tuple[Any, ...]] = []
    for m in metas:
        chunk.append(m)
        if len(chunk) == _META_CHUNK:
            yield from frame(marshal.dumps(chunk))
            chunk = []
    if chunk:
        yield from frame(marshal.dumps(chunk))


def load_table(data: bytes) -> tuple[Any, ...]:
    """A table as its values: (format, kind, args, scanned, {runtime: its sources, marshalled}, rows, kept,
    links). ValueError on a table of another format or cut short."""
    view = memoryview(data)
    frames: list[memoryview] = []
    at, end = 0, len(view)
    while at < end:
        if at + 4 > end:
            raise ValueError("a table cut short")
        n = int.from_bytes(view[at:at + 4], "little")
        at += 4
        if at + n > end:
            raise ValueError("a table cut short")  # (a table of format 2 and before: one marshalled tuple)
        frames.append(view[at:at + n])
        at += n
    if not frames:
        raise ValueError("an empty table")
    head = marshal.loads(frames[0])
    if not isinstance(head, tuple) or len(head) != 6 or head[0] != TABLE_FORMAT:
        raise ValueError("a table of another format")
    fmt, kind, args_t, scanned, kept, links = head
    if not isinstance(scanned, list) or len(frames) < 1 + len(scanned):
        raise ValueError("a table cut short")
    sources = {r: bytes(frames[1 + i]) for i, r in enumerate(scanned)}
    metas: list[Any] = []
    for fr in frames[1 + len(scanned):]:
        metas += marshal.loads(fr)
    return fmt, kind, args_t, scanned, sources, metas, kept, links


def _links_of(sessions: list[Any]) -> list[tuple[str, str, str, str]]:
    return [(s.runtime, s.id, s.continues.runtime, s.continues.id) for s in sessions if s.continues]


def _rank(s: Any) -> tuple[int, float]:
    """What listing._keep ranks a session found in two sources by (the higher one is listed)."""
    rank = getattr(s, "listing_rank", None)  # a compact session (segue.compact) has it without its locator
    return rank if rank is not None else (int(s.locator.get("priority", 0)), s.sort_time)


def _winner(found: list[Any]) -> Any:
    """The candidate (rank, …) listing._keep keeps; None on a tie (then discovery order decides)."""
    best = max(found, key=lambda c: c[0])
    return None if sum(1 for c in found if c[0] == best[0]) > 1 else best


class _Link:
    """What lineage.record_events reads of a linked session."""

    def __init__(self, t: tuple[str, str, str, str]) -> None:
        from segue.model import Continues

        self.runtime, self.id = t[0], t[1]
        self.continues = Continues(runtime=t[2], id=t[3])


def _order(metas: list[Any], args_t: tuple[Any, ...], unique: bool = False) -> list[Any] | None:
    """What the listing prints, in its order (Listing.groups' order); None on a tie of two top-level sessions
    (their order would be the full path's discovery order, which the table does not hold). `unique`: the caller
    knows no two of `metas` share a key (not checked again)."""
    runtimes, directory, include_subagents = args_t
    tops = out = None if include_subagents or directory is not None or not _fast() else _tops(metas, runtimes,
                                                                                             unique)
    if tops is None:
        from segue.listing import Listing

        groups = Listing(sessions=metas).groups(runtimes=runtimes, directory=directory,  # type: ignore[arg-type]
                                                include_subagents=include_subagents)
        tops = [g[0] for g in groups]
        out = [m for g in groups for m in g]
    # each neighbour pair's keys compared, in C, a key at a time (no list of every session's key)
    if any(map(operator.eq, map(_TOP_KEY, tops), map(_TOP_KEY, itertools.islice(tops, 1, None)))):
        return None
    return out


def _tops(metas: list[Any], runtimes: Any, unique: bool = False) -> list[Any] | None:
    """Listing.groups without subagents or a directory, in one sort: the sessions without a parent, newest first
    (a subagent is nested, or left out with its parent gone, and never printed). None when two sessions share a
    key (Listing.groups prints the first only: left to it)."""
    if not unique and len(set(map(_KEY, metas))) != len(metas):
        return None
    tops = [m for m in metas if not m.parent_id and (not runtimes or m.runtime in runtimes)]
    tops.sort(key=_TOP_KEY, reverse=True)
    return tops


_TOP_KEY = operator.attrgetter("sort_time", "id")
_DONE = object()  # table_of: a row given already
_KEY = operator.attrgetter("runtime", "id")


def refound_enabled() -> bool:
    """SEGUE_WARM_REFOUND=0: a changed runtime is always discovered again (Patch._refound off)."""
    return os.environ.get("SEGUE_WARM_REFOUND", "1").strip().lower() not in ("0", "off", "false", "no")


def _fast() -> bool:
    """SEGUE_FAST_PATHS=0 orders the patch through the reference code (Listing.groups) in every case."""
    return os.environ.get("SEGUE_FAST_PATHS", "1").strip().lower() not in ("0", "off", "false", "no")


# -- the patch --------------------------------------------------------------------------------------------------

class _Refused(Exception):
    """The patch cannot prove its answer: the full path answers."""


def answer(root: str, entry: tuple[Any, ...], f: Any, body_end: int, changed: set[str], now_inputs: list[Any],
           groups: Any = None) -> int | None:
    """Print the patched listing and keep it (warm.answer found `changed` probe groups, in the probe it parsed:
    `groups`, replay.groups_of); None, having printed nothing, when the full path must answer."""
    try:
        built = _patch(root, entry, f, body_end, changed, now_inputs, groups)
    except _Refused:
        return None
    except Exception:  # an optimisation never fails a listing: the full path reads it all and says what broke
        return None
    out, rc, keep = built
    try:
        if isinstance(out, str):
            sys.stdout.write(out)
            sys.stdout.flush()
        else:  # the pieces of the printed bytes (never joined: a listing of 8,000 sessions is 6 MB)
            sys.stdout.flush()
            w = sys.stdout.buffer.write
            for piece in out:
                w(piece)
            sys.stdout.buffer.flush()
    except BrokenPipeError:
        return 0
    if keep is not None:
        keep()
    return rc


def _patch(root: str, entry: tuple[Any, ...], f: Any, body_end: int, changed: set[str], now_inputs: list[Any],
           groups: Any = None) -> tuple[Any, int, Any]:
    _fmt, key, blob, _seen, valid_until, payload, span, base = entry
    kind, out0, err, rc = payload
    if err or kind not in ("bytes", "rows") or not isinstance(span, tuple) or len(span) != 2:
        raise _Refused()
    off, length = span
    if not (isinstance(off, int) and isinstance(length, int) and off >= 0 and off + length <= body_end):
        raise _Refused()
    f.seek(off)
    try:
        table = load_table(f.read(length))
    except ValueError:
        raise _Refused() from None  # a table of another format (an older Segue's): the full path keeps a new one
    fmt, tkind, args_t, scanned, sources, metas, kept, links = table
    if fmt != TABLE_FORMAT or tkind != kind or not changed <= set(scanned) or not isinstance(sources, dict) \
            or sorted(sources) != sorted(scanned):
        raise _Refused()  # a live check, a checkout, a `--dir` symlink changed (or another group): not patched
    old_groups = replay.groups_of(blob) if groups is None else groups
    if old_groups is None:
        raise _Refused()
    if kind == "bytes":
        if not isinstance(out0, int) or not isinstance(base, int) or not 0 <= base <= base + out0 <= off:
            raise _Refused()
        f.seek(base)
        old_body = f.read(out0)
        if len(old_body) != out0:
            raise _Refused()
    else:
        old_body = b""
    events = f"{root}/events.jsonl"
    events_moved = [x for x in now_inputs if x[0] == events] != [x for x in _seen if x[0] == events]
    p = _Patch(root, key, blob, old_groups, valid_until, kind, out0, rc, args_t, scanned, sources, metas,
               kept, old_body, now_inputs)
    p.links, p.events_moved = [tuple(x) for x in links], events_moved
    del table, metas  # (the rows of every session: the patch holds them as _Meta from here on)
    return p.run(sorted(changed))


class _Patch:
    def __init__(self, root: str, key: Any, blob: bytes, old_groups: Any, valid_until: float, kind: str, rows: Any,
                 rc: int, args_t: Any, scanned: list[str], sources: dict[str, Any], metas: list[Any],
                 kept: list[Any], old_body: bytes, now_inputs: list[Any]) -> None:
        self.root, self.key, self.blob, self.old_groups = root, key, blob, old_groups
        self.valid_until, self.kind, self.rows, self.rc = valid_until, kind, rows, rc
        self.args_t, self.scanned, self.sources, self.metas = args_t, scanned, sources, metas
        self.kept = {tuple(k) for k in kept}
        self.old_body, self.now_inputs = old_body, now_inputs
        self.links: list[Any] = []
        self.new_links: list[Any] = []
        self.events_moved = False  # another process changed `events.jsonl`: every link is recorded again

    def run(self, changed: list[str]) -> tuple[Any, int, Any]:
        from pathlib import Path

        from segue import listing, probe
        from segue.paths import StateDir
        from segue.stores.base import Env
        from segue.stores.text import fast_paths

        state = StateDir(Path(self.root))
        home = os.path.expanduser("~")
        with probe.recording(paused=True) as rec:
            env = Env(home=Path(home), environ=rec.env(dict(os.environ)))
            fast = fast_paths(env)
            cache = _KeyedCache(state)
            keep: list[_Meta] = []
            by_rt: dict[str, dict[tuple[str, str], _Meta]] = {r: {} for r in changed}  # their sessions by key
            for t in self.metas:
                m = _Meta(t)
                mine_m = by_rt.get(m.runtime)
                if mine_m is None:
                    keep.append(m)
                else:
                    mine_m[(m.runtime, m.id)] = m
            self.metas = []  # (their tuples are garbage now: freed before the patch's peak, the new entry)
            sources = dict(self.sources)  # runtime -> its sources, marshalled
            fresh_all: list[Any] = []
            for runtime in changed:
                kept_r, fresh, srcs = self._runtime(runtime, env, fast, cache, by_rt[runtime], listing, probe)
                keep += kept_r
                fresh_all += fresh
                sources[runtime] = marshal.dumps(srcs)
            cache.save()
            sessions = [s for _k, s in fresh_all]
            # the kept links of the sessions kept (no set of every kept session's key: links are few)
            linked_keys = {(t[0], t[1]) for t in self.links}
            kept_keys = linked_keys.intersection(map(_KEY, keep)) if linked_keys else linked_keys
            old_links = [t for t in self.links if (t[0], t[1]) in kept_keys]
            self._decorate(sessions, state, changed, env, listing, probe, old_links)
            pool = keep + [_Meta(_meta_of(s, None, k), s) for k, s in fresh_all]
            self._recount(pool, changed)
            order = _order(pool, self.args_t)  # (`--dir`: cwd_within observes what it resolves)
        recache = sys.modules.get("segue.recache")
        if recache is not None:
            recache.save()  # (outside the recording: Segue's own cache is no observation)
        if order is None:
            raise _Refused()
        out, rows, slots = self._render(order)
        if self.kind == "rows":  # the ids shown: unambiguous among every session now listed, as a full list's
            from segue.table import short_ids

            shown = short_ids((m.id for m in pool), (r[_ID_ROW] for r in rows))
            rows = [(*r[:_SHOWN_ROW], shown[r[_ID_ROW]]) for r in rows]
        for m in pool:
            m.slot = None
        for m, slot in zip(order, slots, strict=True):
            m.slot = slot
        table = [m.row() for m in pool]
        live = any(s.live for s in sessions)
        blob = None if live else self._probe(rec, home)
        self.old_groups = None  # (merged into `blob`)
        if self.kind == "rows":
            text = warm.render_rows(rows)
        keep_fn = None
        if blob is not None:
            tbytes = list(_frames(self.kind, self.args_t, self.scanned, (sources[r] for r in self.scanned), table,
                                  sorted(self.kept), self.new_links))
            keep_fn = lambda: self._keep(blob, out, rows, tbytes)  # noqa: E731
        return (out if self.kind == "bytes" else text), self.rc, keep_fn

    # -- one runtime read again ---------------------------------------------------------------------------
    def _runtime(self, runtime: str, env: Any, fast: bool, cache: _KeyedCache, by_key: dict[tuple[str, str], _Meta],
                 listing: Any, probe: Any) -> tuple[list[_Meta], list[tuple[str, Any]], dict[str, Any]]:
        """The runtime's sessions now: the kept ones (their metas, `by_key`: the table's sessions of this
        runtime) and the ones read again (source key, a copy to decorate), with the runtime's sources."""
        mine = marshal.loads(self.sources[runtime])
        if not isinstance(mine, dict) or any(k.partition("\0")[0] != runtime for k in mine):
            raise _Refused()
        refound = self._refound(runtime, env, mine, listing, probe)
        if refound is not None:
            reader, same, moved = refound
            gone: list[str] = []
        else:
            with probe.observe(runtime):
                reader = listing.reader_for(runtime, env)
                reader.locations()
                found = list(reader.sources())
            seen: set[str] = set()
            same = []
            moved = []
            for src in found:
                k = f"{src.runtime}\0{src.path}"
                if k in seen:
                    raise _Refused()  # a source discovered twice: the full path's de-duplication decides it
                seen.add(k)
                old = mine.get(k)
                (same if old is not None and old[0] == src.fingerprint else moved).append((k, src))
            gone = [k for k in mine if k not in seen]
        if moved:
            from segue import recache

            recache.use(f"{self.root}/cache")  # the patterns earlier patches compiled (saved after the pass)
        cache.load([k for k, _ in moved] + gone)
        keep: list[_Meta] = []
        out_sources: dict[str, Any] = {}
        # Each session key's candidates (rank, "old" and its source, or "new" and (source, session)), in two
        # maps: `single`, a key whose one candidate so far is as kept (the rule: it is decided without a list
        # or a ranking), and `cands`, every other key (a session read again, or found in two sources).
        single: dict[tuple[str, str], tuple[str, Any]] = {}
        cands: dict[tuple[str, str], list[tuple[Any, str, Any]]] = {}

        def another(sk: tuple[str, str], c: tuple[Any, str, Any]) -> None:
            found_c = cands.get(sk)
            if found_c is None:
                one = single.pop(sk, None)
                found_c = cands[sk] = [] if one is None else [(one[1], "old", one[0])]
            found_c.append(c)

        for k, _src in same:
            _fp, _dg, keys, ranks = mine[k]
            for sk, rk in zip(keys, ranks, strict=True):
                if sk in single or sk in cands:
                    another(sk, (rk, "old", k))
                else:
                    single[sk] = (k, rk)
            out_sources[k] = mine[k]
        for k, src in moved:
            got = cache.get(src)
            reused: set[int] = set()
            if got is not None:  # another process read it already
                sessions, error = got
                st = cache.entries[k][3]
            else:
                previous = cache.previous(src) if fast else None
                sessions, error, st = listing._summarize(reader, src, fast, previous)
                old = mine.get(k)
                base = cache.entries.get(k)
                if previous is not None and old is not None and base is not None and _digest(base[3]) == old[1] \
                        and base[0] == old[0]:
                    reused = {id(s) for s in previous[0]}  # what the index held is what the kept output shows
                if not error:
                    cache.put(src, sessions, error, st)
            if error:
                raise _Refused()  # a skipped source: the full path says so
            keys, ranks = [], []
            for s in sessions:
                sk = (s.runtime, s.id)
                keys.append(sk)
                ranks.append(_rank(s))
                m = by_key.get(sk)
                if id(s) in reused and m is not None and m.source == k:
                    if sk in single or sk in cands:
                        another(sk, (ranks[-1], "old", k))
                    else:
                        single[sk] = (k, ranks[-1])
                else:
                    another(sk, (ranks[-1], "new", (k, s)))
            out_sources[k] = (src.fingerprint, _digest(st), keys, ranks)
        cache.drop(gone)
        fresh: list[tuple[str, Any]] = []  # (source key, a copy of the session to decorate)
        for sk, (k, _rk) in single.items():  # its one candidate is as kept: it is printed as it was
            m = by_key.get(sk)
            if m is None or m.source != k:
                raise _Refused()  # a session shown from another source now, whose output was never kept
            keep.append(m)
        for sk, found_c in cands.items():
            best = _winner(found_c)
            if best is None:
                raise _Refused()  # two sources rank it the same: the full path's discovery order decides
            if best[1] == "old":
                m = by_key.get(sk)
                if m is None or m.source != best[2]:
                    raise _Refused()  # a session shown from another source now, whose output was never kept
                keep.append(m)
            else:
                fresh.append((best[2][0], best[2][1].copy()))  # decorated below; the index's object stays
        # sessions Segue kept facts of show while their runtime's store lacks them: a change there is not patched
        kept_r = {k for k in self.kept if k[0] == runtime}
        if kept_r:
            before = {sk for sk, m in by_key.items() if m.source is not None}
            if {k for k in kept_r if k in before} != {k for k in kept_r if k in single or k in cands}:
                raise _Refused()
        keep += [m for sk, m in by_key.items() if m.source is None and sk not in single and sk not in cands]
        return keep, fresh, out_sources

    def _refound(self, runtime: str, env: Any, mine: dict[str, Any], listing: Any, probe: Any
                 ) -> tuple[Any, list[Any], list[Any]] | None:
        """The runtime's sources without a discovery, when its kept probe group shows only regular files
        that moved in place (replay.moved_files) and its reader can say which sources those fingerprint
        (Reader.refingerprint): (reader, unchanged sources as (key, None), moved ones as (key, source)). The
        new probe group is the kept one with those files' stats taken again. None: discover again (no group,
        anything else changed, a reader without the hook, SEGUE_WARM_REFOUND=0)."""
        if not refound_enabled():
            return None
        parts = next((p for g, *p in self.old_groups[2] if g == runtime), None)
        if parts is None:
            return None
        files = replay.moved_files(parts)
        if files is None:
            return None
        known = {k.partition("\0")[2] for k in mine}
        rec = probe._ACTIVE[0] if probe._ACTIVE else None
        if rec is None:
            return None
        left_out = rec.seed(runtime, parts, files)
        with probe.observe(runtime):
            reader = listing.reader_for(runtime, env)
            found = reader.refingerprint(files, known)
        if found is None:
            rec._groups.pop(runtime, None)  # (seeded: the discovery below notes its own, from nothing)
            return None
        stats = rec._groups[runtime][0]
        if not all(k in stats for k in left_out):
            raise _Refused()  # a moved file the hook did not stat again: the new probe would not watch it
        moved: dict[str, Any] = {}
        for src in found:
            k = f"{src.runtime}\0{src.path}"
            old = mine.get(k)
            if old is None or k in moved:
                raise _Refused()  # (the hook names only sources the last discovery yielded, each once)
            if old[0] != src.fingerprint:
                moved[k] = src
        same = [(k, None) for k in mine if k not in moved]
        return reader, same, list(moved.items())

    def _decorate(self, fresh: list[Any], state: Any, changed: list[str], env: Any, listing: Any, probe: Any,
                  old_links: list[Any]) -> None:
        """service._decorate for the sessions read again: handoffs, the checkout's branch, lineage, live."""
        from segue import lineage
        from segue.model import iso
        from segue.stores import descriptor

        if os.path.exists(state.tokens_file):
            from segue.tokens import Registry

            handed = Registry(state).handed_off()
            for s in fresh:
                h = handed.get((s.runtime, s.id))
                if h:
                    s.handed_off = {"surface": h["surface"], "since": iso(h["since"]),
                                    "expires_at": iso(h["expires_at"])}
        heads: dict[str, Any] = {}
        for s in fresh:
            if s.branch is None and s.cwd and descriptor(s.runtime).branch_from_checkout:
                if s.cwd not in heads:
                    from segue.checkout import git_branch

                    with probe.observe():
                        heads[s.cwd] = git_branch(s.cwd)
                s.branch = heads[s.cwd]
        linked = lineage.link(fresh)
        self.new_links = old_links + _links_of(linked)
        if self.events_moved:  # (else the kept links are in it already)
            linked = [_Link(t) for t in old_links] + linked  # type: ignore[list-item]
        with contextlib.suppress(OSError):  # the events log is a record (as in service._decorate)
            lineage.record_events(state, linked, time.time())
        for runtime in changed:
            mine = [s for s in fresh if s.runtime == runtime]
            try:
                with probe.observe(runtime + LIVE):  # a fresh reader, as the full path's recording takes
                    listing.reader_for(runtime, env).refresh_live(mine)
            except Exception:  # live is a hint (as in listing._scan)
                pass

    def _recount(self, pool: list[_Meta], changed: list[str]) -> None:
        """listing._count_subagents over the runtimes read again (sessions of kept facts keep theirs)."""
        counts: dict[tuple[str, str], int] = {}
        for m in pool:
            if m.parent_id and m.runtime in changed and m.source is not None:
                counts[(m.runtime, m.parent_id)] = counts.get((m.runtime, m.parent_id), 0) + 1
        for m in pool:
            if m.runtime in changed and m.source is not None:
                m.count = counts.get((m.runtime, m.id), 0)
                if m.session is not None:
                    m.session.subagent_count = m.count

    # -- output -------------------------------------------------------------------------------------------
    def _render(self, order: list[_Meta]) -> tuple[list[Any], list[Any], list[Any]]:
        """The printed bytes in pieces (bytes, and memoryviews of the kept body), the rows of a table, and each
        session's slot in them."""
        import json

        parts: list[Any] = [b"["]
        rows: list[Any] = []
        slots: list[Any] = []
        size = 1
        enc, errors = sys.stdout.encoding, sys.stdout.errors or "strict"
        body = self.old_body
        view = memoryview(body)
        run_start = run_end = -1  # kept items that follow each other in the old body are copied as one piece
        heads: dict[str, bytes] = {}  # each runtime's `{"runtime": …, "id": "` (plain values: the rule)
        blen = len(body)
        for i, m in enumerate(order):
            if self.kind == "bytes":
                if i:
                    size += 1
                slot, sid = m.slot, m.id
                pre = heads.get(m.runtime)
                # the rule, decided here in place (`_kept_item` does the same for every other case): a kept item
                # whose count did not move, with a plain id, as printed at its slot
                kept = False
                if (pre is not None and m.session is None and m.count == m.count0 and type(slot) is tuple
                        and len(slot) == 2 and sid.isascii() and sid.isprintable() and '"' not in sid
                        and "\\" not in sid):
                    start, n = slot
                    kept = (type(start) is int and type(n) is int and start >= 0 and start + n <= blen
                            and body.startswith(b'%s%s", ' % (pre, sid.encode("ascii")), start, start + n))
                if not kept:
                    if m.session is not None:
                        item: Any = json.dumps(m.session.to_json(), ensure_ascii=False).encode(enc, errors)
                        n = len(item)
                    else:
                        start, n, item = self._kept_item(m, enc, errors, heads)
                        kept = item is None
                if kept:  # as printed before: copied with its neighbours when they follow it there
                    if run_start >= 0 and start == run_end + 1 and body[run_end] == 0x2C:  # b","
                        run_end = start + n
                    else:
                        if run_start >= 0:
                            parts.append(view[run_start:run_end])
                        if i:
                            parts.append(b",")
                        run_start, run_end = start, start + n
                    slots.append((size, n))
                    size += n
                    continue
                if run_start >= 0:
                    parts.append(view[run_start:run_end])
                    run_start = -1
                if i:
                    parts.append(b",")
                slots.append((size, n))
                parts.append(item)
                size += n
            else:
                if m.session is not None:
                    row = warm.row_of(m.session, m.session.id)
                else:
                    if not isinstance(m.slot, int) or not 0 <= m.slot < len(self.rows):
                        raise _Refused()
                    row = tuple(self.rows[m.slot])
                    if row[0] != m.runtime or not isinstance(m.count, int):
                        raise _Refused()
                    if row[_COUNT_ROW] != m.count:
                        row = (*row[:_COUNT_ROW], m.count, *row[_COUNT_ROW + 1:])
                slots.append(len(rows))
                rows.append(row)
        if run_start >= 0:
            parts.append(view[run_start:run_end])
        parts.append(b"]\n")
        if self.kind == "bytes" and sum(map(len, parts)) != size + 2:
            raise _Refused()  # (the pieces are not what the slots say)
        return parts, rows, slots

    def _kept_item(self, m: _Meta, enc: str, errors: str, heads: dict[str, bytes] | None = None
                   ) -> tuple[int, int, bytes | None]:
        """Where a kept session's printed JSON is in the old body (start, length), with None when those bytes are
        printed as they are, or the item with its subagent count put right when it moved. `heads`: each plain
        runtime's `{"runtime": "…", "id": "` as `_head` spells it, kept across calls."""
        slot = m.slot
        if not (isinstance(slot, tuple) and len(slot) == 2):
            raise _Refused()  # never printed (a hidden subagent shown now): not kept, so not patched
        start, n = slot
        body = self.old_body
        end = start + n
        if not (isinstance(start, int) and isinstance(n, int) and start >= 0 and end <= len(body)):
            raise _Refused()
        rt, sid = m.runtime, m.id
        pre = None if heads is None else heads.get(rt)
        if pre is None and heads is not None and _plain(rt):
            pre = heads[rt] = _head(rt, "", enc, errors)[:-3]  # (the head of an empty id, without `", `)
        if pre is not None and _plain(sid):  # _head(rt, sid) in two pieces, compared in place
            if not (body.startswith(pre, start, end) and
                    body.startswith(sid.encode("ascii") + b'", ', start + len(pre), end)):
                raise _Refused()
        elif not body.startswith(_head(rt, sid, enc, errors), start, end):
            raise _Refused()
        if m.count == m.count0:  # the count the table holds is the one printed in these bytes (one writer)
            return start, n, None
        at = body.find(_COUNT, start, end)
        # the key is unique: inside a JSON string every quote is escaped, so `"subagent_count": ` with its own
        # quotes occurs only as the key
        if at < 0 or body.find(_COUNT, at + 1, end) >= 0:
            raise _Refused()
        v = at + len(_COUNT)
        stop = body.find(b",", v, end)
        value = body[v:stop] if stop >= 0 else b""
        if not value.isdigit() or int(value) != m.count0:
            raise _Refused()
        item = body[start:v] + str(int(m.count)).encode() + body[stop:end]
        return start, n, item

    # -- the new entry --------------------------------------------------------------------------------------
    def _probe(self, rec: Any, home: str) -> bytes | None:
        """The kept probe with the runtimes read again replaced and the rest merged with what was seen now."""
        if not rec.usable:
            return None
        _digest_was, names, groups = self.old_groups
        # a kept group's parts are sorted item lists already (dump_groups' and this method's form): a group seen
        # now is the only one taken apart and sorted again
        merged: dict[str, list[Any]] = {g: parts for g, *parts in groups}
        for g, sets in rec._groups.items():
            if g in self.scanned:  # discovery of a runtime read again: what it saw now, whole
                merged[g] = [sorted(d.items()) for d in sets]
            elif any(sets):
                into = merged.get(g) or [[], [], [], [], []]
                merged[g] = [sorted({**dict(p), **d}.items()) if d else p for p, d in zip(into, sets, strict=True)]
        all_names = sorted(set(names) | rec.names)
        out = sorted((g, *parts) for g, parts in merged.items())
        return marshal.dumps((replay.env_digest(home, os.environ, all_names), all_names, out))

    def _keep(self, blob: bytes, out: list[Any], rows: list[Any], tbytes: list[bytes]) -> None:
        after = warm.inputs(self.root)
        if not warm.same_but(after, self.now_inputs, {f"{self.root}/events.jsonl"} | warm.index_files(self.root)):
            return  # another process changed a decoration input meanwhile
        path = warm._entry_path(self.root, self.key)
        tmp = f"{path}.{os.getpid()}.tmp"
        if self.kind == "bytes":
            body, size = out, sum(map(len, out))
            payload: tuple[Any, ...] = ("bytes", size, "", self.rc)
        else:
            body, size, payload = [], 0, ("rows", rows, "", self.rc)
        span = (size, sum(map(len, tbytes)))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as w:
                for piece in body:
                    w.write(piece)
                for piece in tbytes:
                    w.write(piece)
                warm.write_tail(w, span[0] + span[1], self.key, blob, after, self.valid_until, payload, span)
            os.replace(tmp, path)
        except Exception:
            warm._unlink(tmp)


class _KeyedCache:
    """listing.ListingCache holding only the index rows of the sources read again (loading every row is what
    the patch saves). Built on first use so that importing this module imports no listing."""

    def __new__(cls, state: Any) -> Any:
        from segue import index
        from segue.listing import ListingCache

        class Keyed(ListingCache):
            def __init__(self, state: Any) -> None:
                super().__init__(None)
                self.state = state

            def load(self, keys: list[str]) -> None:
                if not keys:
                    return
                try:
                    conn = index.connect(self.state, create=False)
                except index.IndexUnavailable:
                    return
                try:
                    for i in range(0, len(keys), 500):
                        part = keys[i:i + 500]
                        sql = ("SELECT key, fingerprint, error, state, sessions FROM sources WHERE key IN (" +
                               ",".join("?" * len(part)) + ")")
                        for k, fp, error, st, blob in conn.execute(sql, part):
                            self.entries[k] = [marshal.loads(fp), blob, error,
                                               marshal.loads(st) if st is not None else None]
                except Exception:
                    self.entries.clear()  # unreadable now: those sources are read from their stores
                finally:
                    conn.close()

            def drop(self, keys: list[str]) -> None:
                for k in keys:
                    self.entries.pop(k, None)
                    self._changed.discard(k)
                    self._removed.add(k)

        return Keyed(state)
