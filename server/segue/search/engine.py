"""Search as the service offers it: keep the index current with the stores, query it, shape the results.

Freshness costs a stat of every source (`Reader.sources()`, no parsing): when every source is the one the
index was last refreshed from, the query runs at once; otherwise the listing (its own cache) says which
sessions exist and the index catches up on the ones that changed, in the runtimes whose sources moved only
(each runtime's digest is kept beside the whole one: SEGUE_SEARCH_SCOPED=0 lists and compares them all).
That pass also records what discovery looked at (segue.search.probe), so the next CLI process can tell in a
few milliseconds, without importing a reader, that nothing changed (segue.search.fast). A long-lived server
with a store watcher trusts a check a few seconds old (the service's `reuse_within`, as for listings).
"""

from __future__ import annotations

import _thread  # threading.Lock itself, without importing threading (~0.6 ms of a CLI query)
import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence

from segue.limits import SEARCH_LIMIT
from segue.quote import mark_invisible
from segue.record import factory, record
from segue.search import probe
from segue.search import query as Q
from segue.search import redaction as R
from segue.search.index import Provenance, RefreshStats, SearchIndex, shown_markers, step_of

TYPE_CHECKING = False
if TYPE_CHECKING:  # a CLI query (segue.search.fast) imports neither the model nor the registry of readers
    from typing import Any

    from segue.model import ReadStats, Session

MARK_START, MARK_END = "\x02", "\x03"  # inside the service; JSON shows « », a terminal shows bold
JSON_START, JSON_END = "«", "»"
DEFAULT_LIMIT = SEARCH_LIMIT.default
MAX_LIMIT = SEARCH_LIMIT.high
# How much recency weighs against relevance: a session active today counts up to twice its bm25 score, one
# active HALF_LIFE days ago 1.5 times.
HALF_LIFE_DAYS = 14.0

Progress = Callable[[int, int], None]


@record
class SearchResult:
    """A session's best matching step. Its JSON `title` is `label`, what names the session everywhere (a reference
    to a session carries its label as its title, segue.results.TitledRef): Gemini CLI records no title."""

    runtime: str
    id: str
    title: str | None
    cwd: str | None
    updated_at: float | None
    where: str  # request | message | command | file
    snippet: str  # one line, redacted, invisible characters shown; matches between MARK_START and MARK_END
    step: int  # 1-based position of the step in the session's activity
    parent_id: str | None = None
    label: str | None = None  # title, else the first request (for tables and pickers)
    exit_code: int | None = None
    parent_label: str | None = None  # the parent's label, when the index holds one

    def to_json(self) -> dict[str, Any]:
        from segue.timefmt import iso

        return {"runtime": self.runtime, "id": self.id, "title": self.label or self.title, "cwd": self.cwd,
                "updated_at": iso(self.updated_at), "where": self.where,
                "snippet": self.snippet.replace(MARK_START, JSON_START).replace(MARK_END, JSON_END),
                "step": self.step, "parent_id": self.parent_id, "parent_title": self.parent_label,
                "exit_code": self.exit_code}


@record
class SearchResults:
    results: list[SearchResult]
    total: int
    refreshed: RefreshStats | None = None
    skipped: list[str] = factory(list)

    def to_json(self) -> dict[str, Any]:
        return {"results": [r.to_json() for r in self.results], "total": self.total}


class _State:
    """Per service: the open index, and when its freshness was last checked (one lock for both)."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index
        self.lock = _thread.allocate_lock()
        self.checked_at = float("-inf")
        self.digest: str | None = None  # this service's redaction (segue.search.redaction), once computed


def index_for(svc: Any, notice: Callable[[str], None] | None = None) -> SearchIndex:
    return _state(svc, notice).index


def _state(svc: Any, notice: Callable[[str], None] | None) -> _State:
    st = svc.__dict__.get("_search_state")
    if st is None:
        st = _State(SearchIndex(svc.state.private(svc.state.cache), notice))
        svc.__dict__["_search_state"] = st
    elif notice is not None:
        st.index.notice = notice
    return st


def current_sources(env: Any, runtimes: Sequence[str] | None = None) -> dict[tuple[str, str], str]:
    return _sources(env, runtimes)[0]


def _sources(env: Any, runtimes: Sequence[str] | None = None, record: bool = False,
             keep: dict[str, list[Any]] | None = None, seeded: tuple[list[str], list[Any]] | None = None
             ) -> tuple[dict[tuple[str, str], str], bytes | None, bytes | None]:
    """Every source's fingerprint (of every runtime unless told), and (record=True) the probe of what that pass
    looked at, merged and with each runtime's observations apart (segue.probe's groups), None when unusable.
    `keep`: filled with each runtime's sources whose discovery succeeded, so that the listing that follows does
    not discover them again. `seeded`: (names, groups) of a kept probe's groups, just replayed and found
    unchanged, that the probe holds beside what this pass observes (the runtimes not discovered again)."""
    from segue.listing import reader_for
    from segue.stores import RUNTIMES
    from segue.stores.base import Env

    if runtimes is None:
        runtimes = RUNTIMES

    out: dict[tuple[str, str], str] = {}
    if not record or not probe.enabled():
        for rt in runtimes:
            _add_sources(out, rt, lambda rt=rt: reader_for(rt, env), keep)
        return out, None, None
    for rt in runtimes:
        reader_for(rt, env)  # imports the reader modules outside the recording (imports open files)
    with probe.recording() as rec:
        if seeded is not None:
            names, groups = seeded
            for g, *parts in groups:
                rec.seed(g, parts, set())
            rec.names.update(names)
        seen = Env(home=env.home, environ=rec.env(env.environ))
        for rt in runtimes:
            rec.select(rt)  # each runtime's discovery in its own group: a later pass can tell which one moved
            if not _add_sources(out, rt, lambda rt=rt: reader_for(rt, seen), keep):
                rec.usable = False
        rec.select("")
    home = str(env.home)
    packed = probe.pack(rec, home, env.environ)
    return out, packed, (rec.dump_groups(home, env.environ) if packed is not None else None)


# (the digest of every source, each runtime's, the probe, its groups): what a freshness check keeps of a pass
Found = tuple[str, dict[str, str], "bytes | None", "bytes | None"]


def _discover(env: Any, idx: SearchIndex, keep: dict[str, list[Any]], force: bool) -> Found:
    """Every runtime's sources digested, and the probe of the pass: the runtimes whose kept probe group still
    holds are not discovered again (`_rediscover`); the fingerprints themselves are let go."""
    if not force and probe.enabled() and _rediscover_enabled():
        got = _rediscover(env, idx, keep)
        if got is not None:
            return got
    from segue.search.index import digests
    from segue.stores import RUNTIMES

    out, packed, groups = _sources(env, record=True, keep=keep)
    whole, by_runtime = digests(out, RUNTIMES)
    return whole, by_runtime, packed, groups


def _rediscover(env: Any, idx: SearchIndex, keep: dict[str, list[Any]]) -> Found | None:
    """Discover again only the runtimes whose observations in the kept probe's groups differ now: for each of the
    others the replay has just shown that its discovery would yield the sources of its kept digest. None (then
    the whole pass): no kept groups or digests, another environment, a change outside a runtime's group, or in
    none or every runtime."""
    from segue import replay
    from segue.search.index import combined, digests
    from segue.stores import RUNTIMES

    kept = idx.probe_groups()
    if kept is None:
        return None
    blob, stored = kept
    if set(stored) != set(RUNTIMES):
        return None
    parsed = replay.groups_of(blob)
    changed = replay.changed_in(parsed, str(env.home), env.environ)
    if not changed or not changed < set(RUNTIMES):
        return None
    _digest, names, groups = parsed
    again = [rt for rt in RUNTIMES if rt in changed]
    out, packed, new_groups = _sources(env, again, record=True, keep=keep,
                                       seeded=(names, [g for g in groups if g[0] not in changed]))
    by_runtime = {**stored, **digests(out, again)[1]}
    return combined(by_runtime), by_runtime, packed, new_groups


def _rediscover_enabled() -> bool:
    """SEGUE_SEARCH_REDISCOVER=0: a freshness check that finds the stores moved discovers every runtime again."""
    return os.environ.get("SEGUE_SEARCH_REDISCOVER", "1") != "0"


def _add_sources(out: dict[tuple[str, str], str], rt: str, reader: Callable[[], Any],
                 keep: dict[str, list[Any]] | None = None) -> bool:
    found = []
    try:
        for src in reader().sources():
            out[(rt, src.path)] = repr(src.fingerprint)
            found.append(src)
    except Exception as e:  # the listing reports it; here it only means "look again next time"
        out[(rt, "")] = f"unreadable: {type(e).__name__}"
        return False
    if keep is not None:
        keep[rt] = found
    return True


def ensure_fresh(svc: Any, progress: Progress | None = None, cancelled: Callable[[], bool] | None = None,
                 notice: Callable[[str], None] | None = None, force: bool = False) -> RefreshStats | None:
    """Bring the index up to the stores; None when it already was."""
    st = _state(svc, notice)
    with st.lock:
        if not force and svc.reuse_within > 0 and time.monotonic() - st.checked_at < svc.reuse_within:
            return None
        idx = st.index
        if not force and idx.probe_matches(str(svc.env.home), svc.env.environ):  # nothing discovery sees changed
            st.checked_at = time.monotonic()
            return None
        if not force:
            patched = _patched(svc, idx)
            if patched is not None:
                st.checked_at = time.monotonic()
                return patched
        # only the digest is kept: at 32k sessions the dict of fingerprints is ~10 MB through the whole build
        found: dict[str, list[Any]] = {}  # the sources of this pass, for the listing below
        sources, by_runtime, seen, groups = _discover(svc.env, idx, found, force)
        if not force and idx.sources_match(sources):
            if seen is not None:
                idx.store_probe(sources, seen, groups)  # kept only while the index's digest is this one
            st.checked_at = time.monotonic()
            return None
        with idx.write_lock():
            # The sources (and the probe) taken before the listing: a write during it shows next time. The pass
            # above was, so it serves unless we waited for another writer (then the stores may have moved on
            # while it caught up: look again, and find it fresh if it caught up with them).
            if idx.waited_for_lock:
                found = {}
                sources, by_runtime, seen, groups = _discover(svc.env, idx, found, force)
            if not force and idx.sources_match(sources):  # another process caught up meanwhile
                if seen is not None:
                    idx.store_probe(sources, seen, groups)
                st.checked_at = time.monotonic()
                return None
            from segue.search import workers

            n = workers.count()
            environ = svc.environ if svc.environ is not None else dict(os.environ)
            with contextlib.ExitStack() as ahead:
                # workers started now start while the listing below runs (a first build's, ~0.1 s)
                pool = (ahead.enter_context(workers.Pool(n, svc.env, environ, str(idx.dir)))
                        if _prestart(idx, found, n, force) else None)
                stats = _build(svc, idx, found, sources, by_runtime, seen, groups, force, progress, cancelled,
                               n, pool)
            st.checked_at = time.monotonic()
            return stats


def _prestart(idx: SearchIndex, found: Mapping[str, list[Any]], n: int, force: bool) -> bool:
    """Start the workers before the listing? Only for a build that will surely use them: a first (or forced)
    one over at least PARALLEL_MIN sources (a refresh after a change mostly reads a few sessions serially)."""
    from segue.search.index import PARALLEL_MIN

    return (n > 1 and _prestart_enabled() and (force or idx.meta("sources") is None)
            and sum(len(v) for v in found.values()) >= PARALLEL_MIN)


def _prestart_enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_PRESTART", "1").strip().lower() not in ("0", "off", "false", "no")


def _build(svc: Any, idx: SearchIndex, found: dict[str, list[Any]], sources: Any, by_runtime: Any, seen: Any,
           groups: Any, force: bool, progress: Progress | None, cancelled: Callable[[], bool] | None, n: int,
           pool: Any) -> RefreshStats:
    """The refresh itself, under the write lock (ensure_fresh's end); `pool`: workers started ahead, or None."""
    from segue import recache
    from segue.search import workers
    from segue.stores.opencode import shared_connections

    recache.use(str(idx.dir))  # the redactor's patterns as kept, not compiled again (saved below)
    # only the runtimes whose sources moved are listed and compared (the others' digests are the ones their
    # indexed sessions were refreshed from): one changed session costs its runtime, not all five
    scope = None if force or not _scoped_enabled() else idx.changed_runtimes(by_runtime)
    # the listing of the very sources fingerprinted above: what is indexed is what the digest says
    listing = svc.raw_listing(cancelled=cancelled, sources=found if _share_enabled() else None, runtimes=scope)
    steps_of, redact, by = _indexing(svc, idx)
    env, environ = svc.env, svc.environ

    def parallel(tasks: Any) -> Any:  # a large build reads and redacts on every core
        return workers.run(tasks, env, environ if environ is not None else dict(os.environ), n, str(idx.dir),
                           pool=pool)

    with shared_connections():  # one connection per database for the whole pass, not one per session
        stats = idx.refresh(listing.sessions, steps_of, redact, sources, progress=progress, cancelled=cancelled,
                            redacted_by=by, parallel=parallel if n > 1 else None, by_runtime=by_runtime,
                            scope=scope, found=Provenance(found, listing.origins, listing.twice))
    if seen is not None:
        idx.store_probe(sources, seen, groups)
    recache.save()
    return stats


def _patched(svc: Any, idx: SearchIndex) -> RefreshStats | None:
    """segue.search.patch under the write lock: the moved transcripts' sessions indexed again, nothing listed;
    None when it cannot prove its answer (or waited for another writer: then the stores may have moved on)."""
    from segue.search import patch

    if not patch.enabled() or idx.probe_groups() is None:  # (nothing to patch from: no wait for the lock)
        return None
    with idx.write_lock():
        if idx.waited_for_lock:
            return None
        from segue import recache

        recache.use(str(idx.dir))
        stats = patch.refresh(svc.env, idx, lambda: _indexing(svc, idx))
        if stats is not None:
            recache.save()
        return stats


def _indexing(svc: Any, idx: SearchIndex) -> tuple[Callable[[Session, ReadStats], Any], Callable[[str, int], str],
                                                    str]:
    """(steps_of, redact, redacted_by) of a refresh: the service's redaction, its digest kept in the index."""
    redactor = svc.redactor()
    by, recipe = R.writer_digest(redactor, svc.environ, idx.meta("salt"))
    if recipe is not None and idx.meta("redact_env") != recipe:
        idx.connection().execute("INSERT OR REPLACE INTO meta VALUES ('redact_env', ?)", (recipe,))

    # one memory of found values per session, as a brief has (Redactor.scoped): a value found in one session
    # is no reason to scan every later one for it
    redact = SessionRedaction(redactor)

    def steps_of(s: Session, rs: ReadStats, mark: bytes | None = None, held: int = 0) -> Any:
        redact.memory = redactor.scoped()
        return _steps(svc.env, s, rs, mark, held)

    return steps_of, redact, by or ""


class SessionRedaction:
    """`redact(text, cap)` of the session being indexed: its Redactor (`memory`, a fresh one per session) is
    what the index asks, once the session is read, for the values it found (index._index_session)."""

    def __init__(self, redactor: Any) -> None:
        self.memory = redactor

    def __call__(self, text: str, cap: int) -> str:
        return self.memory.excerpt(text, cap)[0]  # type: ignore[no-any-return]


def _scoped_enabled() -> bool:
    """SEGUE_SEARCH_SCOPED=0: every refresh lists and compares every runtime (the reference)."""
    return os.environ.get("SEGUE_SEARCH_SCOPED", "1") != "0"


def _share_enabled() -> bool:
    """SEGUE_SEARCH_SHARE_SOURCES=0: the listing of a refresh discovers the sources again itself."""
    return os.environ.get("SEGUE_SEARCH_SHARE_SOURCES", "1") != "0"


_READERS: dict[tuple[int, str], Any] = {}


def _reader(env: Any, s: Session) -> Any:
    from segue.listing import reader_for

    key = (id(env), s.runtime)
    reader = _READERS.get(key)
    if reader is None or reader.env is not env:
        reader = _READERS[key] = reader_for(s.runtime, env)
    return reader


def _steps(env: Any, s: Session, stats: ReadStats, mark: bytes | None = None, held: int = 0) -> Any:
    """The search-only extraction where the reader has one (steps() itself with SEGUE_FAST_PATHS=0); a
    `Continued` (its `start` and, once read, its `mark`) where the reader can go on from a mark. `held`: the
    steps the index holds of the session; a mark past them is not taken."""
    reader = _reader(env, s)
    going_on = reader.search_steps_from(s, stats, mark)
    if going_on is not None and going_on.start > held:
        going_on.close()
        going_on = reader.search_steps_from(s, stats, None)
    if going_on is None:
        return _guarded(reader.search_steps(s, stats), stats)
    going_on.steps = _guarded(going_on.steps, stats)
    return going_on


def _reference_steps(env: Any, s: Session, stats: ReadStats) -> Any:
    """`Reader.steps()`: the reference the extraction must equal (tests, benchmark)."""
    return _guarded(_reader(env, s).steps(s, stats), stats)


def _guarded(steps: Any, stats: ReadStats) -> Any:
    """A reader that fails mid-session leaves that session indexed up to the failure, never the build."""
    try:
        yield from steps
    except FileNotFoundError:
        return
    except Exception as e:
        stats.problems.append(f"{type(e).__name__}: {e}")
        return


def search(svc: Any, text: str, runtimes: Sequence[str] | None = None, directory: str | None = None,
           since: float | None = None, where: Sequence[str] | None = None, limit: int | None = DEFAULT_LIMIT,
           progress: Progress | None = None, cancelled: Callable[[], bool] | None = None,
           notice: Callable[[str], None] | None = None) -> SearchResults:
    parsed = Q.parse(text)  # a usage error before any work
    if where is not None:
        where = Q.parse_where(list(where))
    if limit is not None and not SEARCH_LIMIT.allows(limit):
        raise Q.QueryError(f"the limit must be {SEARCH_LIMIT.describe()}")
    refreshed = ensure_fresh(svc, progress=progress, cancelled=cancelled, notice=notice)
    st = _state(svc, notice)
    with st.lock:
        _stop_if(cancelled)  # typed past while it waited for the query before it: never run
        digest = st.digest
        if digest is None:
            own, _recipe = R.writer_digest(svc.redactor(), svc.environ, st.index.meta("salt"))
            digest = st.digest = own or ""
        with _interruptible(st.index, cancelled):
            res = answer(st.index, parsed, where, runtimes, directory, since, limit, svc.redactor, digest)
    res.refreshed = refreshed
    return res


# SQLite asks `cancelled` every this many virtual-machine instructions of a query (~0.1-0.3 ms of work)
INTERRUPT_EVERY = 20_000


def _stop_if(cancelled: Callable[[], bool] | None) -> None:
    if cancelled is not None and cancelled():
        from segue.listing import Cancelled

        raise Cancelled()


@contextlib.contextmanager
def _interruptible(index: SearchIndex, cancelled: Callable[[], bool] | None) -> Any:
    """A query the caller gives up on stops within a fraction of a millisecond instead of ranking on (a very
    common word is ~50-200 ms on 8,000 sessions): as-you-type search cancels every query it typed past, and the
    next one waits for this one's lock."""
    if cancelled is None:
        yield
        return
    import sqlite3

    con = index.connection()
    con.set_progress_handler(lambda: 1 if cancelled() else 0, INTERRUPT_EVERY)
    try:
        yield
    except sqlite3.OperationalError:
        if con.in_transaction:
            con.rollback()  # an interrupted statement can leave the read transaction of `ranked` open
        _stop_if(cancelled)
        raise
    finally:
        con.set_progress_handler(None, 0)
    _stop_if(cancelled)  # cancelled while the snippets were made: nobody wants the answer


def answer(index: SearchIndex, parsed: Q.Query, where: Sequence[str] | None, runtimes: Sequence[str] | None,
           directory: str | None, since: float | None, limit: int | None, redactor: Callable[[], Any],
           digest: str | None) -> SearchResults:
    """Query the index as it is. Shown text is redacted again unless every shown session's text went through
    the very redaction `digest` names (segue.search.redaction); `redactor()` is called only when needed."""
    match = parsed.fts()
    now = time.time()
    # SQLite ranks, cuts and counts; whether a cwd lies within the directory is Python's (segue.within)
    within = None if directory is None else _within(directory)
    shown, total = index.ranked(match, now, HALF_LIFE_DAYS, where=where, runtimes=runtimes, since=since,
                                limit=limit, phrases=_bounding(parsed), within=within)
    # the parents' names for subagents' hits (shown text too)
    parents = index.labels((h.runtime, h.parent_id) for h in shown if h.parent_id)
    sids = [h.sid for h in shown] + [sid for sid, _label in parents.values()]
    again = bool(shown) and (not digest or index.redacted_by(sids) != {digest})
    red = redactor() if again else None  # building one compiles every rule: only when needed
    results = []
    for h in shown:
        snip = index.snippet(match, h.rowid)
        if snip is None:
            continue
        raw, kind, code = snip
        parent = parents.get((h.runtime, h.parent_id)) if h.parent_id else None
        results.append(SearchResult(
            runtime=h.runtime, id=h.id, title=_shown(h.title, red), cwd=_shown(h.cwd, red),
            updated_at=h.updated_at, where=kind, snippet=_snippet(raw, kind, code, red),
            step=step_of(h.rowid) + 1, parent_id=h.parent_id, label=_shown(h.label, red),
            exit_code=code, parent_label=_shown(parent[1], red) if parent else None))
    return SearchResults(results=results, total=total)


def _within(directory: str) -> Callable[[str | None], bool]:
    from segue.within import within

    return within(directory)


def _bounding(parsed: Q.Query) -> list[str] | None:
    """The phrase a ranking may bound its bm25 with (SearchIndex._bounded): one word only, whose row count costs
    a pass over one doclist (a phrase of several words reads the positions of every one). Not several words: the
    bound is the sum of each word's, and steps matching them all in the thousands (what a bound is tried on) means
    every word is common; measured, the bound then hardly ever proves a page and its sample is spent for nothing
    (bench/search_paired.py "two very common words": 8k sessions 110 ms with it, 99 without)."""
    terms = parsed.terms
    return [terms[0].fts()] if len(terms) == 1 and terms[0].text.isalnum() else None


def _shown(text: str | None, redactor: Any) -> str | None:
    if text is None:
        return None
    return mark_invisible(text if redactor is None else redactor.redact(text)[0])


def _snippet(raw: str, kind: str, code: int | None, redactor: Any) -> str:
    """Redacted again (this process may know secrets the indexing one did not), one line, invisible characters
    shown. Should the second pass find anything, the marks go: no mark may split a redaction."""
    raw = shown_markers(raw)
    if redactor is None:  # redacted by the same redaction when indexed (`answer`)
        text = raw
    else:
        plain = raw.replace(MARK_START, "").replace(MARK_END, "")
        red, n = redactor.redact(plain)
        text = raw if n == 0 else red
    text = mark_invisible(" ".join(text.split()))
    if kind == "command":
        return f"$ {text}  [exit {'?' if code is None else code}]"
    return text


def forget(svc: Any) -> bool:
    st = _state(svc, None)
    with st.lock, st.index.write_lock():
        found = st.index.forget()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(st.index.dir / "search.lock")
        return found


__all__ = ["SearchResult", "SearchResults", "ensure_fresh", "forget", "search"]
