"""Discovery across the four readers, the listing cache, ordering, filters and session references.

The session index (`segue.index`, `cache/index.sqlite` in Segue's state directory) maps each source (a
session file or a database) to its fingerprint (size and mtime of the file and its side files) and the
sessions read from it. A warm listing stats every source and re-reads only those whose fingerprint
changed. A changed database (OpenCode, Cline) is read incrementally where its reader has
`summarize_delta`: against the sessions and per-row keys the index holds, only changed rows are read and
redacted again (fast paths only; `SEGUE_FAST_PATHS=0` reads it whole, the reference). A cold listing of many
sources reads them in parallel worker processes (the CLI; a long-lived server stays single-process): they
start as soon as enough unread sources are known, so they read while discovery goes on, and send back each
source's sessions in the index's own form, which goes into one open write transaction as it arrives
(`index.Stream`) and is revived here as compact sessions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from segue import index, probe
from segue.compact import compact_all, rank_of
from segue.errors import SegueError
from segue.model import Continues, Session
from segue.paths import StateDir
from segue.stores import RUNTIMES, descriptor
from segue.stores.base import Env, Location, Reader, Source
from segue.stores.text import fast_paths
from segue.within import cwd_within as cwd_within


def reader_for(runtime: str, env: Env) -> Reader:
    return descriptor(runtime).reader(env)


@dataclass
class Skipped:
    runtime: str
    path: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"runtime": self.runtime, "path": self.path, "reason": self.reason}


@dataclass
class Listing:
    """Every session found (top-level and subagents, de-duplicated) plus what could not be read."""

    sessions: list[Session]
    skipped: list[Skipped] = field(default_factory=list)
    locations: dict[str, list[Location]] = field(default_factory=dict)
    # which source each session was kept from (its path), and the sessions more than one source yielded: what
    # the search index needs to re-read one moved source without a listing (segue.search.patch)
    origins: dict[tuple[str, str], str] = field(default_factory=dict)
    twice: set[tuple[str, str]] = field(default_factory=set)

    def ordered(self, *, runtimes: Sequence[str] | None = None, directory: str | None = None,
                include_subagents: bool = False, limit: int | None = None) -> list[Session]:
        """Newest first; subagents (with `include_subagents`) right after their parent, recursively.
        `limit` counts top-level sessions. Orphan subagents (parent not found) count as top level."""
        groups = self.groups(runtimes=runtimes, directory=directory, include_subagents=include_subagents)
        if limit is not None:
            groups = groups[:limit]
        return [s for g in groups for s in g]

    def groups(self, *, runtimes: Sequence[str] | None = None, directory: str | None = None,
               include_subagents: bool = False) -> list[list[Session]]:
        """`ordered` as one group per top-level session (the session, then its subagents when asked for):
        the unit a page counts."""
        pool = [s for s in self.sessions if not runtimes or s.runtime in runtimes]
        by_key = {(s.runtime, s.id): s for s in pool}
        children: dict[tuple[str, str], list[Session]] = {}
        tops: list[Session] = []
        for s in pool:
            parent = (s.runtime, s.parent_id) if s.parent_id else None
            if parent and parent in by_key:
                children.setdefault(parent, []).append(s)
            elif not s.parent_id or include_subagents:
                tops.append(s)
        if directory is not None:
            tops = [s for s in tops if cwd_within(s.cwd, directory)]
        tops.sort(key=lambda s: (s.sort_time, s.id), reverse=True)

        def emit(s: Session, seen: set[tuple[str, str]], out: list[Session]) -> None:
            key = (s.runtime, s.id)
            if key in seen:  # a cycle in hostile data must not loop forever
                return
            seen.add(key)
            out.append(s)
            if include_subagents:
                for c in sorted(children.get(key, []), key=lambda c: (c.started_at or 0.0, c.id)):
                    emit(c, seen, out)

        seen: set[tuple[str, str]] = set()
        groups: list[list[Session]] = []
        for s in tops:
            key = (s.runtime, s.id)
            if key in seen:
                continue
            if not include_subagents or key not in children:  # most sessions: a group of one, no sort, no call
                seen.add(key)
                groups.append([s])
                continue
            group: list[Session] = []
            emit(s, seen, group)
            groups.append(group)
        return groups


class ListingCache:
    """The listing's view of the session index (`segue.index`, `cache/index.sqlite`):
    {source key: [fingerprint, sessions, error, reader state]} in memory, loaded once, saved as a delta.

    Sessions stay Session objects in memory (a long-lived language server reuses them) and are decoded from
    the index only when a source is used. Only sources read again (or gone) are written back, in one
    transaction, so a warm listing writes nothing and concurrent processes never lose each other's work.
    """

    def __init__(self, state: StateDir | None, runtimes: Sequence[str] | None = None, eager: bool = False) -> None:
        """`runtimes`: load only those runtimes' rows now; a scan of others loads theirs when it starts
        (`need`), so a `runtime:id` brief never decodes the fingerprints of every other runtime's sources.
        `eager`: revive every source's sessions as its row is loaded (a long-lived process: see `index.load`)."""
        self.state = state
        self._revive = revive_all if eager else None
        self.entries: dict[str, list[Any]] = {}
        self._loaded: set[str] | None = None  # runtimes whose rows are in `entries`; None: all of them
        self._changed: set[str] = set()
        self._removed: set[str] = set()
        # a cold scan's workers' rows, already in an open write transaction (`index.Stream`), committed by save
        self._stream: index.Stream | None = None
        self._streamed: set[str] = set()
        self._no_stream = False
        if state is not None:
            self.entries = index.load(state, runtimes, self._revive)
            self._loaded = None if runtimes is None else set(runtimes)

    def need(self, runtimes: Iterable[str]) -> None:
        """Load the rows of the runtimes not loaded yet (the rows in memory win: they may be newer)."""
        if self._loaded is None or self.state is None:
            return
        missing = [r for r in runtimes if r not in self._loaded]
        if missing:
            for k, e in index.load(self.state, missing, self._revive).items():
                self.entries.setdefault(k, e)
            self._loaded.update(missing)

    @property
    def dirty(self) -> bool:
        return bool(self._changed or self._removed or self._streamed)

    @property
    def path(self) -> Path | None:
        return index.path_of(self.state) if self.state else None

    def _sessions(self, e: list[Any]) -> list[Session] | None:
        if isinstance(e[1], bytes):
            try:
                e[1] = revive_all(e[1])
            except Exception:
                return None
        return e[1]

    def get(self, src: Source, key: str | None = None) -> tuple[list[Session], str | None] | None:
        e = self.entries.get(key or f"{src.runtime}\0{src.path}")
        if e is None or e[0] != src.fingerprint:
            return None
        sessions = self._sessions(e)
        return None if sessions is None else (sessions, e[2])

    def previous(self, src: Source) -> tuple[list[Session], Any] | None:
        """What the source held when its reader last read it with a state (`summarize_delta`), whatever its
        fingerprint is now: the base of an incremental read."""
        e = self.entries.get(f"{src.runtime}\0{src.path}")
        if e is None or e[3] is None or e[2]:
            return None
        sessions = self._sessions(e)
        return None if sessions is None else (sessions, e[3])

    def put(self, src: Source, sessions: list[Session], error: str | None, state: Any = None,
            blob: bytes | None = None) -> None:
        """`blob`: the sessions in the index's form as a worker encoded them (primed): written to the index at
        once, in the scan's open write transaction, instead of being encoded again when the scan saves."""
        key = f"{src.runtime}\0{src.path}"
        self.entries[key] = [src.fingerprint, sessions, error, state]
        self._removed.discard(key)
        if blob is not None and self._streaming():
            assert self._stream is not None
            try:
                self._stream.put(key, src.fingerprint, error, state, blob)
                self._streamed.add(key)
                self._changed.discard(key)
                return
            except sqlite3.Error:
                self._stop_stream()
        for s in sessions:
            s.prime()
        self._changed.add(key)

    def _streaming(self) -> bool:
        if self._stream is None and not self._no_stream and self.state is not None:
            self._stream = index.stream(self.state)
            self._no_stream = self._stream is None
        return self._stream is not None

    def _stop_stream(self) -> None:
        """Give up the open transaction: what it held is written by the next save instead."""
        if self._stream is not None:
            self._stream.abort()
            self._stream = None
        self._no_stream = True
        self._changed |= self._streamed
        self._streamed.clear()

    def abort(self) -> None:
        """A scan that ends without saving (an error, a cancel) leaves the index as it was."""
        if self._stream is not None:
            self._stop_stream()

    def prune(self, runtimes: Iterable[str], seen: set[str]) -> None:
        scanned = tuple(f"{r}\0" for r in runtimes)
        for k in [k for k in self.entries if k.startswith(scanned) and k not in seen]:
            del self.entries[k]
            self._changed.discard(k)
            self._removed.add(k)

    def save(self) -> None:
        if not self.dirty or self.state is None:
            return
        changed = {k: self.entries[k] for k in self._changed if k in self.entries}
        if self._stream is not None:
            stream, self._stream = self._stream, None
            if stream.finish(changed, self._removed):
                self._changed.clear()
                self._removed.clear()
                self._streamed.clear()
            else:  # rolled back: kept dirty, and a later save (a long-lived process) writes everything
                self._changed |= self._streamed
                self._streamed.clear()
            return
        if index.save(self.state, changed, self._removed):
            self._changed.clear()
            self._removed.clear()
        # else: kept dirty; the index is an optimisation, a busy or read-only one must not fail a listing


_FIELDS = frozenset(f.name for f in dataclasses.fields(Session))


def revive_all(blob: bytes) -> list[Session]:
    """A source's sessions from its index blob (`index.rows_of`): each straight from its row of values (no
    dict of it built first: a database's thousands of sessions would otherwise exist twice at once)."""
    return revive_rows(*index.rows_of(blob))


def revive_rows(names: tuple[str, ...], rows: list[Any]) -> list[Session]:
    """`revive_all` of a blob's (field names, rows)."""
    problems = _FAST.get(names)
    if problems is None:  # (once per form: a compact session is revived alone, thousands of times)
        fast = names[:1] == ("runtime",) and set(names) >= _FIELDS
        problems = _FAST[names] = names.index("problems") if fast else -1
        if len(_FAST) > 64:
            _FAST.clear()
    fast = problems >= 0
    out: list[Session] = []
    for r in rows:
        if isinstance(r, dict):
            out.append(_revive(r))
            continue
        if not isinstance(r, tuple) or len(r) != len(names):
            raise TypeError("not a session")
        if not fast or not isinstance(r[problems], list):
            out.append(Session.from_cache(dict(zip(names, r, strict=True))))
            continue
        s = object.__new__(Session)
        s.runtime = r[0]  # the first attribute set makes the instance dict a key-sharing one
        vars(s).update(zip(names, r, strict=True))
        cont = s.continues
        s.continues = Continues(**cont) if cont else None
        out.append(s)
    return out


_FAST: dict[tuple[str, ...], int] = {}  # field names -> where `problems` is, -1: not every field (from_cache)


def _revive(d: dict[str, Any]) -> Session:
    """`Session.from_cache` for a dict fresh from the index that has every field: its items become the
    session's attributes (memoised ISO times included) in a key-sharing instance dict (a third of a plain
    dict's size: a listing holds every session). Anything else goes through `from_cache`."""
    if d.keys() >= _FIELDS and isinstance(d["problems"], list):
        s = object.__new__(Session)
        s.runtime = d["runtime"]  # the first attribute set makes the instance dict a key-sharing one
        vars(s).update(d)
        cont = d["continues"]
        s.continues = Continues(**cont) if cont else None
        return s
    return Session.from_cache(d)


LIVE_GROUP = "/live"  # the probe group of a runtime's live checks: `<runtime>/live`
PARALLEL_MIN = 200  # uncached sources before a cold listing is worth worker processes


def scan(env: Env, state: StateDir | None, runtimes: Sequence[str] | None = None,
         cache: ListingCache | None = None, cancelled: Any = None, parallel: bool = False,
         progress: Any = None, compact: bool = False, known: Mapping[str, Sequence[Source]] | None = None
         ) -> Listing:
    """Read every source of the chosen runtimes, using and refreshing the cache. `progress(runtime, sessions
    read, sources read, sources to read)` is called as sources are read (not for cached ones). `compact`: what
    the workers read comes back as `segue.compact` sessions (a one-shot listing that holds them to its end).
    `known`: a runtime's sources as the caller's discovery just found them (taken instead of discovering
    them again: readers keep no state from `sources()`)."""
    runtimes = [r for r in (runtimes or RUNTIMES) if r in RUNTIMES]
    cache = cache if cache is not None else ListingCache(state)
    fast = fast_paths(env)
    # A cold scan starts its worker processes as soon as enough sources are known, so the workers read one
    # runtime's sessions while this process is still discovering the next runtime's sources.
    pool = (_Workers(env, fast, compact, None if state is None else state.cache)
            if parallel and _Workers.usable() else None)
    try:
        return _scan(env, runtimes, cache, cancelled, progress, fast, pool, known or {})
    finally:
        if pool is not None:
            pool.close()
        cache.abort()  # a scan that did not reach its save leaves the index as it was


def _scan(env: Env, runtimes: list[str], cache: ListingCache, cancelled: Any, progress: Any, fast: bool,
          pool: _Workers | None, known: Mapping[str, Sequence[Source]]) -> Listing:
    cache.need(runtimes)
    found: dict[tuple[str, str], Session] = {}
    origins: dict[tuple[str, str], str] = {}
    twice: set[tuple[str, str]] = set()
    skipped: list[Skipped] = []
    locations: dict[str, list[Location]] = {}
    seen_keys: set[str] = set()
    readers: dict[str, Reader] = {}
    pending: dict[str, list[Source]] = {}
    for runtime in runtimes:
        try:
            with probe.observe(runtime):  # what discovery looks at, for a later warm replay (segue.warm)
                reader = readers[runtime] = reader_for(runtime, env)
                locations[runtime] = reader.locations()
                sources = list(known[runtime]) if runtime in known else list(reader.sources())
        except Exception as e:  # a reader bug or an unreadable root must not hide other runtimes
            skipped.append(Skipped(runtime, "", f"could not look for sessions: {type(e).__name__}: {e}"))
            continue
        for src in sources:
            key = f"{src.runtime}\0{src.path}"
            if key in cache.entries:  # only what the index holds can be pruned: a cold scan keeps no set
                seen_keys.add(key)
            entry = cache.get(src, key)
            if entry is None:
                pending.setdefault(runtime, []).append(src)
                continue
            sessions, error = entry
            if error:
                skipped.append(Skipped(runtime, src.path, error))
            for s in sessions:
                _keep(found, s, src.path, origins, twice)
        if pool is not None and runtime in pending:
            pool.offer(runtime, [src for src in pending[runtime] if not fast or cache.previous(src) is None])
    # before any source is read, so what this scan puts is never taken for a source that went away
    cache.prune(runtimes, seen_keys)
    seen_keys.clear()
    to_read = {rt: len(v) for rt, v in pending.items()}
    if progress is not None:
        for rt in readers:
            progress(rt, 0, 0, to_read.get(rt, 0))
    done_sources: dict[str, int] = dict.fromkeys(to_read, 0)  # progress per runtime
    done_sessions: dict[str, int] = dict.fromkeys(to_read, 0)
    for src, sessions, error, state, blob in _summarize_all(readers, pending, cache, cancelled, fast, pool):
        if progress is not None:
            done_sources[src.runtime] += 1
            done_sessions[src.runtime] += len(sessions)
            progress(src.runtime, done_sessions[src.runtime], done_sources[src.runtime], to_read[src.runtime])
        cache.put(src, sessions, error, state, blob)
        if error:
            skipped.append(Skipped(src.runtime, src.path, error))
        for s in sessions:
            _keep(found, s, src.path, origins, twice)
    pending.clear()  # every source read: not held while the index is saved (32,000 sources: several MB)
    for runtime, reader in readers.items():
        # live is a hint: a failure must not fail listing (observed apart from discovery: segue.patch)
        with contextlib.suppress(Exception), probe.observe(runtime + LIVE_GROUP):
            if probe.active():  # a fresh reader: what a summary memoised of live processes was not observed
                reader = reader_for(runtime, env)
            reader.refresh_live([s for (rt, _), s in found.items() if rt == runtime])
    cache.save()
    listing = Listing(sessions=list(found.values()), skipped=skipped, locations=locations, origins=origins,
                      twice=twice)
    _count_subagents(listing.sessions)
    return listing


# (source, sessions, error, reader state, the sessions' index blob when a worker encoded them)
Summary = tuple[Source, list[Session], "str | None", Any, "bytes | None"]


def _summarize(reader: Reader, src: Source, fast: bool, previous: tuple[list[Session], Any] | None = None
               ) -> tuple[list[Session], str | None, Any]:
    """One source's sessions as the index stores them: every summary passes `_summarized` first, so the
    index (and every listing, page and search built on it) holds only what may be shown.

    A reader with `summarize_delta(src, previous sessions, previous state) -> (sessions, fresh, state)`
    (database stores) re-reads only what changed since `previous` and hands back the rest as it was; `fresh`
    are the summaries it read now. With fast paths off (`SEGUE_FAST_PATHS=0`) every change is a full
    `summarize`, the reference the incremental path is tested against."""
    delta = getattr(reader, "summarize_delta", None) if fast else None
    try:
        if delta is not None:
            sessions, fresh, state = delta(src, *(previous or (None, None)))
        else:
            sessions = fresh = reader.summarize(src)
            state = None
    except Exception as e:
        return [], f"{type(e).__name__}: {e}", None
    for s in fresh:
        _summarized(s)
    return sessions, None, state


def _summarized(session: Session) -> None:
    """Make a freshly read summary fit to be stored and shown (runs in the listing's workers too)."""
    from segue.lineage import continuation_title

    # A title that says what the session is: a transcript that could not be read says why (not "(untitled)"),
    # and a session started from a brief names what it continues, not the instruction to read the brief
    # (from the prompt as written: redaction may hide the brief's name). Redacted with the rest, below.
    if not session.title and not session.first_request and session.problems:
        session.title = f"(unreadable: {session.problems[0]})"
    else:
        session.title = continuation_title(session) or session.title
    # Titles and first requests are shown by every listing surface: redacted once, here, so the index keeps
    # only redacted text. Imported lazily: a warm listing never needs the redactor.
    from segue.redact import redact_summary

    redact_summary(session)
    # Segue launches a runtime only in a directory: without a recorded one, every surface says so up front
    # instead of offering a resume that `segue resume` refuses (a directory deleted since is checked then)
    if session.resumable and not session.cwd:
        session.resumable, session.resume_blocker = False, "no_directory"


def _summarize_all(readers: dict[str, Reader], pending: dict[str, list[Source]], cache: ListingCache,
                   cancelled: Any, fast: bool, pool: _Workers | None) -> Iterable[Summary]:
    # A source with an incremental base is read here, in this process, against that base (few: databases).
    rest: dict[str, list[Source]] = {}
    for runtime, sources in pending.items():
        for src in sources:
            previous = cache.previous(src) if fast else None
            if previous is None:
                rest.setdefault(runtime, []).append(src)
                continue
            if cancelled is not None and cancelled():
                raise Cancelled()
            yield (src, *_summarize(readers[runtime], src, fast, previous), None)
    if pool is not None and pool.started:
        pending.clear()  # the pool holds them now, and lets each task's go once its results are in
        rest.clear()
        yield from pool.results()  # every source in `rest`: the pool was offered each runtime's
        pool.close()
        return
    for runtime, sources in rest.items():
        for src in sources:
            if cancelled is not None and cancelled():
                raise Cancelled()
            yield (src, *_summarize(readers[runtime], src, fast), None)


CHUNK = 64  # sources per worker task: progress as tasks finish, and no task holds a big share of the results
BIG_SOURCE = 4 * 1024 * 1024  # a source this large (a database) is a task of its own, handed out first


class _Workers:
    """Worker processes for a cold scan (the CLI), offered each runtime's unread sources as discovery finds
    them; started once `PARALLEL_MIN` sources are known (fewer are not worth the processes).

    Tasks are handed out largest first within what is known (a database of thousands of sessions would
    otherwise start last and leave one core idle at the end), and results are taken in source order, so the
    listing is the same as a serial one. A worker sends back each source's sessions in the index's own form
    (marshal: far cheaper to send and receive than pickled Session objects), revived here as compact
    sessions. If worker processes cannot be had, or die, the sources left are read in this process."""

    def __init__(self, env: Env, fast: bool, compact: bool = False, spill_dir: Any = None) -> None:
        self.env, self.fast, self.compact = env, fast, compact
        self.spill_dir = spill_dir  # where compact sessions' rows are spilled (segue.compact.Spill), made on first use
        self.spill: Any = None
        self.tasks: list[tuple[str, list[Source]]] = []  # in source order
        self.futures: dict[int, Any] = {}
        self.held: list[tuple[str, list[Source]]] = []  # offered before the pool was worth starting
        self.pool: Any = None
        self.broken = False

    @staticmethod
    def usable() -> bool:
        return sys.platform == "linux" and WORKERS > 1

    @property
    def started(self) -> bool:
        return self.pool is not None or self.broken

    def offer(self, runtime: str, sources: list[Source]) -> None:
        if not sources:
            return
        self.held.append((runtime, sources))
        if self.pool is None and not self.broken and sum(len(x) for _, x in self.held) < PARALLEL_MIN:
            return
        for rt, srcs in self.held:
            start = len(self.tasks)
            self.tasks += _tasks(rt, srcs)
            self._submit(sorted(range(start, len(self.tasks)), key=lambda i: -_task_size(self.tasks[i])))
        self.held = []

    def _submit(self, order: list[int]) -> None:
        if self.broken:
            return
        try:
            if self.pool is None:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                # fork: workers inherit the imported readers, so they start in milliseconds. Only the CLI asks
                # for this; it has no other threads, which is what makes fork safe.
                from segue.redact.summary import prepare_for_workers

                prepare_for_workers()  # the redactor, imported and warmed once, is inherited too
                # The env goes to each worker once (it holds the whole environment: a copy in every task
                # would be pickled and queued hundreds of times), the tasks carry only their sources.
                self.pool = ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("fork"),
                                                initializer=_worker_init, initargs=(self.env, self.fast))
            for i in order:
                runtime, sources = self.tasks[i]
                self.futures[i] = self.pool.submit(_summarize_chunk, runtime, sources)
        except (OSError, RuntimeError, ImportError):
            self.broken = True  # no worker processes here: what is not submitted is read in this process

    def results(self) -> Iterator[Summary]:
        readers: dict[str, Reader] = {}
        for i, (runtime, sources) in enumerate(self.tasks):
            self.tasks[i] = (runtime, [])  # nothing keeps a task's sources once its results are taken
            future = self.futures.pop(i, None)
            try:
                if future is None:
                    raise RuntimeError("not submitted")
                results = future.result()
            except (OSError, RuntimeError, ImportError, EOFError):  # a worker died (BrokenProcessPool): read here
                self.broken = True
                reader = readers.get(runtime) or readers.setdefault(runtime, reader_for(runtime, self.env))
                for src in sources:
                    yield (src, *_summarize(reader, src, self.fast), None)
                continue
            for src, (blob, error, state) in zip(sources, results, strict=True):
                yield src, (self._compact(blob) if self.compact else revive_all(blob)), error, state, blob

    def _compact(self, blob: bytes) -> list[Any]:
        if self.spill is None and self.spill_dir is not None:
            from segue.compact import Spill
            from segue.paths import ensure_private_dir

            try:
                ensure_private_dir(self.spill_dir)  # (the index's own directory: private, made if missing)
                self.spill = Spill.open(self.spill_dir, self.env.environ)
            except Exception:
                self.spill = None
            self.spill_dir = None  # asked once: without a spill the rows stay in memory
        return compact_all(blob, self.spill)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


WORKERS = min(4, os.cpu_count() or 1)


def _tasks(runtime: str, sources: list[Source]) -> list[tuple[str, list[Source]]]:
    """Worker tasks in source order: runs of up to `CHUNK` sources, a big source (a database) alone."""
    tasks: list[tuple[str, list[Source]]] = []
    run: list[Source] = []
    for src in sources:
        big = _size_of(src) >= BIG_SOURCE
        if run and (big or len(run) == CHUNK):
            tasks.append((runtime, run))
            run = []
        if big:
            tasks.append((runtime, [src]))
        else:
            run.append(src)
    if run:
        tasks.append((runtime, run))
    return tasks


def _task_size(task: tuple[str, list[Source]]) -> int:
    """A lone source's size (big sources go first); 0 for runs of small ones (they keep their order)."""
    return _size_of(task[1][0]) if len(task[1]) == 1 else 0


def _size_of(src: Source) -> int:
    """The size of a source's main file from its fingerprint ((size, mtime) first), 0 when unknown."""
    fp = src.fingerprint[0] if src.fingerprint else None
    return fp[0] if isinstance(fp, tuple) and fp and isinstance(fp[0], int) else 0


_worker: dict[str, Any] = {}  # in a worker process: its env and fast-path switch (`_worker_init`)


def _worker_init(env: Env, fast: bool) -> None:
    _worker["env"], _worker["fast"] = env, fast


def _summarize_chunk(runtime: str, sources: list[Source]) -> list[tuple[bytes, str | None, Any]]:
    """In a worker: each source's (sessions blob, error, reader state), summaries primed and redacted."""
    env, fast = _worker["env"], _worker["fast"]
    reader = reader_for(runtime, env)
    out = []
    for src in sources:
        sessions, error, state = _summarize(reader, src, fast)
        for s in sessions:
            s.prime()
        out.append((index.encode_sessions(sessions), error, state))
    recache = sys.modules.get("segue.recache")
    if recache is not None:
        recache.save()  # the patterns this worker compiled (a no-op unless the listing called use(): warm.Keeper)
    return out


class Cancelled(Exception):
    """The caller gave up (a cancelled language-server request)."""


def _keep(found: dict[tuple[str, str], Session], s: Session, path: str = "",
          origins: dict[tuple[str, str], str] | None = None, twice: set[tuple[str, str]] | None = None) -> None:
    """Keep the better-ranked of two copies of a session; with `origins`/`twice`, note where it came from."""
    key = (s.runtime, s.id)
    old = found.get(key)
    if old is not None:
        if twice is not None:
            twice.add(key)
        if rank_of(s) <= rank_of(old):
            return
    found[key] = s
    if origins is not None:
        origins[key] = path


def _count_subagents(sessions: list[Session]) -> None:
    counts: dict[tuple[str, str], int] = {}
    for s in sessions:
        if s.parent_id:
            counts[(s.runtime, s.parent_id)] = counts.get((s.runtime, s.parent_id), 0) + 1
    for s in sessions:
        s.subagent_count = counts.get((s.runtime, s.id), 0)


# ---------------------------------------------------------------------------------------------------------
# References: `runtime:id`, `runtime:prefix`, or an unambiguous id prefix.


class SessionNotFound(SegueError):
    reason = "unknown_session"

    def __init__(self, ref: str) -> None:
        super().__init__(f"no session matches {ref!r}; run `segue list` to see session ids", data={"ref": ref})
        self.ref = ref


class AmbiguousSession(SegueError):
    reason = "ambiguous_session"

    def __init__(self, ref: str, candidates: list[Session]) -> None:
        names = ", ".join(s.ref for s in candidates[:8])
        more = f" and {len(candidates) - 8} more" if len(candidates) > 8 else ""
        super().__init__(f"{ref!r} matches {len(candidates)} sessions ({names}{more}); give more of the id "
                         "or prefix it with the runtime, e.g. codex:<id>",
                         data={"candidates": [s.ref for s in candidates[:20]]})
        self.ref = ref
        self.candidates = candidates


def parse_ref(ref: str) -> tuple[str | None, str]:
    ref = ref.strip()
    if ":" in ref:
        head, _, tail = ref.partition(":")
        if head in RUNTIMES:
            return head, tail
    return None, ref


def resolve(sessions: Iterable[Session], ref: str) -> Session:
    runtime, needle = parse_ref(ref)
    if not needle:
        raise SessionNotFound(ref)
    pool = [s for s in sessions if runtime is None or s.runtime == runtime]
    exact = [s for s in pool if s.id == needle]
    if len(exact) == 1:
        return exact[0]
    matches = exact or [s for s in pool if s.id.startswith(needle)]
    if not matches:
        raise SessionNotFound(ref)
    if len(matches) > 1:
        raise AmbiguousSession(ref, sorted(matches, key=lambda s: s.sort_time, reverse=True))
    return matches[0]
