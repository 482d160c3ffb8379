"""The one API both surfaces call. The CLI and the language server only translate arguments and output.

Methods return typed results (`segue.results`, `brief.Facts`, `resume.Plan`, `search.engine.SearchResults`),
each with `to_json()`, the one JSON shape of `--json` and the language server. Counts are checked here
against `segue.limits` (the one place their defaults and bounds are written). Errors are
`segue.errors.SegueError`s with a `reason` and `data` (`SessionNotFound`, `AmbiguousSession`, `TokenError`,
`PlanRefused`, `InvalidArgument`, …); each surface maps them to its own form (exit code + message, JSON-RPC
error code).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from segue import lineage, probe
from segue.checkout import git_branch as git_branch  # (its home was here)
from segue.compact import enabled as compact_enabled
from segue.compact import may_link
from segue.limits import CLAIM_TAIL, PAGE_LIMIT, PAGE_OFFSET, SEARCH_LIMIT
from segue.listing import AmbiguousSession, ListingCache, SessionNotFound, reader_for, resolve, scan
from segue.listing import Listing as _Listing
from segue.model import ReadStats, Session, iso
from segue.paths import StateDir
from segue.results import (
    Brief,
    Claim,
    ClaimedSession,
    Emitted,
    Json,
    ListingPage,
    PlanRefusal,
    ResumeCommand,
    Revoked,
    SessionRef,
    StoreLocation,
    TailStep,
    TokenStatus,
    Trace,
    TraceLink,
)
from segue.stores import RUNTIMES, descriptor
from segue.stores.base import Env, Source

if TYPE_CHECKING:
    from segue.brief import Facts
    from segue.redact import Redactor
    from segue.resume import Plan
    from segue.search.engine import SearchResults

__all__ = ["AmbiguousSession", "Service", "SessionNotFound"]

Progress = Callable[[str, int, int, int], None]


class Service:
    def __init__(self, state: StateDir, env: Env | None = None, clock: Callable[[], float] = time.time,
                 environ: dict[str, str] | None = None) -> None:
        self.state = state
        self.env = env or Env.from_os()
        self.clock = clock
        self.environ = environ  # for redaction's exact values; None = this process's environment
        self._cache: ListingCache | None = None  # kept warm in a long-lived process (the language server)
        self._lock = threading.Lock()
        self._redactor: Redactor | None = None
        # A long-lived server with a store watcher reuses its last full listing this long (seconds); the
        # watcher rescans on any change it sees. 0 = always rescan (the CLI runs once anyway).
        self.reuse_within = 0.0
        self.parallel = False  # worker processes for a cold listing: only for single-threaded callers (CLI)
        # A caller that lists once and exits (the CLI): the listing view decorates the scanned sessions in
        # place instead of copies (nothing reuses them after the answer), which saves a copy of every session.
        self.one_shot = False
        self._last: tuple[float, _Listing, int] | None = None
        self._views: _View | None = None
        self._view_lock = threading.Lock()  # one build of a view at a time: a request and the watcher share it
        self._live: tuple[bool, ...] = ()
        self._version = 0  # of the raw listing of everything in `_last`
        # progress(runtime, sessions read, sources read, sources to read) while a scan reads sources
        self.progress: Progress | None = None
        # callers waiting for the scan in flight (a server's first page waits on the watcher's first pass) hear
        # that scan's progress while they wait
        self._waiting: list[Progress] = []

    # -- listing --------------------------------------------------------------------------------------------
    def scan(self, runtimes: Sequence[str] | None = None, cancelled: Callable[[], bool] | None = None,
             fresh: bool = False, progress: Progress | None = None) -> _Listing:
        """Every session of the chosen runtimes, decorated for this moment (handoffs, lineage, kept facts).
        Sessions are per-call copies: the cached objects are never decorated in place."""
        raw = self._raw(runtimes, cancelled, fresh, progress)
        listing = _Listing(sessions=[s.copy() for s in raw.sessions], skipped=list(raw.skipped),
                           locations=raw.locations)
        self._decorate(listing, runtimes)
        return listing

    def _raw(self, runtimes: Sequence[str] | None, cancelled: Callable[[], bool] | None, fresh: bool,
             progress: Progress | None = None, compact: bool = False) -> _Listing:
        """`compact`: sessions a cold scan's workers read may be `segue.compact` ones (the one-shot view)."""
        last = self._last  # read without the lock: a request never waits for a watcher's rescan
        if not fresh and runtimes is None and last is not None and time.monotonic() - last[0] < self.reuse_within:
            return last[1]
        if progress is not None:
            self._waiting.append(progress)
        try:
            self._lock.acquire()
        finally:
            if progress is not None:
                self._waiting.remove(progress)
        try:
            now = time.monotonic()
            last = self._last
            if not fresh and runtimes is None and last is not None and now - last[0] < self.reuse_within:
                return last[1]
            if self._cache is None:
                self._cache = ListingCache(self.state, runtimes, eager=not self.one_shot)
            raw = scan(self.env, self.state, runtimes, cache=self._cache, cancelled=cancelled,
                       parallel=self.parallel, progress=self._told(progress or self.progress) if not self.one_shot
                       else progress or self.progress, compact=compact)
            if runtimes is None:
                # readers refresh `live` in place on cached sessions (a process exited): that is a change too
                live = tuple(s.live for s in raw.sessions)
                if last is not None and _same(last[1], raw) and live == self._live:
                    raw = last[1]  # nothing changed: keep the object, so views built on it stay valid
                self._live = live
                if last is None or raw is not last[1]:
                    self._version += 1  # never an id(): a freed listing's id can come back
                self._last = (now, raw, self._version)  # one tuple: readers see a listing with its version
        finally:
            self._lock.release()
        return raw

    def _told(self, own: Progress | None) -> Progress:
        """A scan's progress for its own caller and for every caller waiting for it (`_waiting`)."""
        waiting = self._waiting

        def report(runtime: str, sessions: int, done: int, total: int) -> None:
            if own is not None:
                own(runtime, sessions, done, total)
            for other in tuple(waiting):
                with contextlib.suppress(Exception):  # a waiter's display never stops the scan
                    other(runtime, sessions, done, total)

        return report

    def refresh(self) -> _Listing:
        """A fresh raw listing of every runtime (the store watcher's pass), and the decorated view rebuilt
        from it when it changed, so the next page request finds it ready."""
        raw = self._raw(None, None, True)
        with contextlib.suppress(Exception):  # a view is rebuilt on demand when this fails
            self._view(None).order(TREE_ORDER)  # what the editor's tree asks for next
        return raw

    # -- pages: both surfaces list through `page` (a page costs the page, not the listing) ------------------
    def page(self, runtimes: Sequence[str] | None = None, directory: str | None = None,
             include_subagents: bool = False, limit: int | None = None, offset: int = PAGE_OFFSET.default,
             cancelled: Callable[[], bool] | None = None, progress: Progress | None = None) -> ListingPage:
        """A page of the listing, newest first, from a memoised, decorated, ordered view: the listing is
        decorated and ordered once per change (of the stores, handoffs, kept facts), and a request only
        slices its page. `limit` (None = all) and `offset` count top-level sessions (each with its subagents
        when asked for)."""
        if limit is not None:
            PAGE_LIMIT.check(limit)
        PAGE_OFFSET.check(offset)
        end = None if limit is None else offset + limit
        last = self._last
        encode: Callable[[Session], Json] = Session.to_json
        if runtimes and (last is None or time.monotonic() - last[0] >= self.reuse_within):
            # no current listing of everything: read only the runtimes asked for
            listing = self.scan(runtimes, cancelled, progress=progress)
            ordered = listing.groups(runtimes=runtimes, directory=directory, include_subagents=include_subagents)
            skipped = listing.skipped
            listed = len(listing.sessions)
            pool = listing.sessions
        else:
            view = self._view(cancelled, progress)
            wanted = tuple(sorted(runtimes)) if runtimes else None
            key = (wanted, directory, include_subagents)
            ordered = view.order(key)
            skipped = [k for k in view.listing.skipped if not runtimes or k.runtime in runtimes]
            listed = view.listed(wanted)
            pool = view.listing.sessions
            # a long-lived server keeps every session's JSON it served; a caller that answers once (the CLI)
            # encodes each as it prints it, and so never holds the JSON of every session at once
            encode = _json_of if self.one_shot else view.encode
        more = end is not None and end < len(ordered)
        return ListingPage(sessions=[s for g in ordered[offset:end] for s in g], skipped=skipped,
                           total=len(ordered), next_offset=end if more else None, listed=listed,
                           session_json=encode, every_id=lambda: (s.id for s in pool))

    def list_page(self, runtimes: Sequence[str] | None = None, directory: str | None = None,
                  include_subagents: bool = False, limit: int | None = None, offset: int = 0,
                  cancelled: Callable[[], bool] | None = None, progress: Progress | None = None) -> Json:
        """`page` as JSON (segue/listSessions' reply)."""
        return self.page(runtimes, directory, include_subagents, limit, offset, cancelled, progress).to_json()

    def _view(self, cancelled: Callable[[], bool] | None, progress: Progress | None = None) -> _View:
        # a one-shot caller (the CLI) holds the listing to its end as compact sessions, revived one at a time as
        # they are printed (segue.compact)
        raw = self._raw(None, cancelled, False, progress, compact=self.one_shot and compact_enabled(self.env.environ))
        last = self._last
        # a watcher's pass may have replaced the listing meanwhile: then this view is built but never reused
        stamp = (last[2] if last is not None and last[1] is raw else None, self._decoration_stamp())
        view = self._views
        if view is not None and stamp[0] is not None and view.stamp == stamp and self.clock() < view.valid_until:
            return view
        with self._view_lock:
            # a server's first request meets the watcher's first pass building the same view: the one that
            # waited takes it (measured: two builds at once cost the first answer ~0.1 s on 8,000 sessions)
            view = self._views
            if view is not None and stamp[0] is not None and view.stamp == stamp and self.clock() < view.valid_until:
                return view
            # the view shares the raw listing's sessions: decoration copies only those it changes (a long-lived
            # server would otherwise hold two of every session; 32,000 sessions: ~20 MB)
            listing = _Listing(sessions=list(raw.sessions), skipped=list(raw.skipped), locations=raw.locations)
            self._decorate(listing, None, shared=not self.one_shot)
            expiries = [time_of(s.handed_off["expires_at"]) for s in listing.sessions if s.handed_off]
            valid = min([self.clock() + VIEW_MAX_AGE, *[t for t in expiries if t is not None]])
            view = self._views = _View(stamp, listing, valid)
            return view

    def _decoration_stamp(self) -> tuple[Any, ...]:
        """What decoration reads besides the sessions: the token registry and the kept facts."""
        from segue.kept import _dir as kept_dir

        paths = [self.state.tokens_file, kept_dir(self.state), kept_dir(self.state) / "index.json"]
        with contextlib.suppress(OSError):
            paths += sorted(Path(e.path) for e in os.scandir(kept_dir(self.state)) if e.is_dir())
        out: list[Any] = []
        for p in paths:
            try:
                st = os.stat(p)
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append(None)
        return tuple(out)

    def _decorate(self, listing: _Listing, runtimes: Sequence[str] | None, shared: bool = False) -> None:
        """Handoffs, the checkout's branch, lineage and kept facts, set on `listing.sessions` in place; with
        `shared`, those sessions belong to another listing too (the raw one): a session is replaced by a copy
        before anything on it changes, so the other listing never sees a decoration."""
        from segue.kept import kept_sessions
        from segue.tokens import Registry

        sessions = listing.sessions
        mine: set[int] = set()  # positions already copied (or added: kept sessions)

        def own(i: int) -> Session:
            if shared and i not in mine:
                sessions[i] = sessions[i].copy()
                mine.add(i)
            return sessions[i]

        present = {(s.runtime, s.id) for s in sessions}
        for s, kept_at in kept_sessions(self.state):
            if (s.runtime, s.id) in present or (runtimes and s.runtime not in runtimes):
                continue
            s.resumable = False
            s.resume_blocker = "not_in_store"
            s.live = False
            s.problems = [*s.problems, f"no longer in the runtime's store; Segue kept its brief facts "
                                       f"({iso(kept_at)})"]
            mine.add(len(sessions))
            sessions.append(s)
        handed = Registry(self.state, clock=self.clock).handed_off()
        heads: dict[str, str | None] = {}
        for i, s in enumerate(sessions):
            h = handed.get((s.runtime, s.id))
            if h:
                own(i).handed_off = {"surface": h["surface"], "since": iso(h["since"]),
                                     "expires_at": iso(h["expires_at"])}
            if s.branch is None and s.cwd and s.runtime in RUNTIMES and descriptor(s.runtime).branch_from_checkout:
                if s.cwd not in heads:
                    with probe.observe():  # a warm replay (segue.warm) re-checks what this read
                        heads[s.cwd] = git_branch(s.cwd)
                if heads[s.cwd] is not None:  # (None: the branch stays as it was)
                    own(i).branch = heads[s.cwd]
        linked = []
        for i, s in enumerate(sessions):  # lineage.link, copying the sessions it fills
            if may_link(s):
                c = lineage.continued(s)
                if c is not None:
                    if s.continues != c:
                        s = own(i)
                        s.continues = c
                    linked.append(s)
        with contextlib.suppress(OSError):  # the events log is a record, not a precondition for listing
            lineage.record_events(self.state, linked, self.clock())

    def printed(self) -> None:
        """A one-shot caller printed its listing and kept what it shows: the compact sessions' rows (segue.compact),
        which only printing reads, go before the patch table (segue.patch.table_of) is built beside the rest."""
        if not self.one_shot or self._cache is None:
            return
        from segue.compact import release

        for e in self._cache.entries.values():
            if isinstance(e[1], list):
                release(e[1])

    def list_sessions(self, runtimes: Sequence[str] | None = None, directory: str | None = None,
                      include_subagents: bool = False, limit: int | None = None,
                      cancelled: Callable[[], bool] | None = None) -> Json:
        """The first `limit` top-level sessions (None = all) as JSON, without the paging keys."""
        out = self.list_page(runtimes, directory, include_subagents, limit, 0, cancelled)
        return {k: out[k] for k in ("sessions", "skipped", "skipped_reasons")}

    def find(self, ref: str, cancelled: Callable[[], bool] | None = None, everything: bool = False
             ) -> tuple[Session, _Listing]:
        """The session a reference names. `runtime:id` reads only that runtime's stores, unless the caller
        needs `everything` (a trace follows links into other runtimes)."""
        from segue.listing import parse_ref

        runtime = None if everything else parse_ref(ref)[0]
        listing = self.scan([runtime] if runtime else None, cancelled=cancelled)
        return resolve(listing.sessions, ref), listing

    # -- search -------------------------------------------------------------------------------------------
    def raw_listing(self, cancelled: Callable[[], bool] | None = None,
                    sources: Mapping[str, Sequence[Source]] | None = None,
                    runtimes: Sequence[str] | None = None) -> _Listing:
        """Every session in the stores (of `runtimes`; None: all), undecorated (no kept facts, no lineage
        events): what search indexes. `sources`: runtimes' sources the caller has just discovered (scan's
        `known`)."""
        with self._lock:
            if self._cache is None:
                self._cache = ListingCache(self.state, eager=not self.one_shot)
            # a one-shot caller (the CLI's search build) holds every session as a compact one (segue.compact)
            listing = scan(self.env, self.state, runtimes, cache=self._cache, cancelled=cancelled,
                           parallel=self.parallel, compact=self.one_shot and compact_enabled(self.env.environ),
                           known=sources)
            if self.one_shot and compact_enabled(self.env.environ):
                # saved to the index by the scan: not held through the build beside its sessions (each source's
                # key, fingerprint and reader state: ~10 MB at 32,000 sessions); a later scan loads it again
                self._cache = None
            return listing

    def search(self, query: str, runtimes: Sequence[str] | None = None, directory: str | None = None,
               since: float | None = None, where: Sequence[str] | None = None,
               limit: int | None = SEARCH_LIMIT.default, progress: Callable[[int, int], None] | None = None,
               cancelled: Callable[[], bool] | None = None, notice: Callable[[str], None] | None = None
               ) -> SearchResults:
        """Sessions whose requests, messages, commands or changed files match (`segue.search.engine`).
        Raises `QueryError` (usage) or `SearchUnavailable` (no FTS5)."""
        from segue.search import engine

        if limit is not None:
            SEARCH_LIMIT.check(limit)
        return engine.search(self, query, runtimes=runtimes, directory=directory, since=since, where=where,
                             limit=limit, progress=progress, cancelled=cancelled, notice=notice)

    def forget_search(self) -> bool:
        """Drop the search index (it holds session text). True when there was one."""
        from segue.search import engine

        return engine.forget(self)

    # -- briefs ---------------------------------------------------------------------------------------------
    def redactor(self) -> Redactor:
        if self._redactor is None:
            from segue.redact import Redactor

            self._redactor = Redactor(environ=self.environ)
        return self._redactor

    def use_kept_patterns(self) -> None:
        """From now on, compile the redactor's fixed patterns from the ones kept in Segue's private cache
        (segue.recache): for a one-shot process (the CLI's brief, resume, handoff, trace), whose listing and
        brief would otherwise compile them with sre's pure-Python compiler every time. The CLI saves what it
        compiled. Only an existing private cache directory is used (nothing is created for it)."""
        from segue import recache
        from segue.warm import is_private_dir

        if is_private_dir(str(self.state.cache)):
            recache.use(str(self.state.cache))

    def facts(self, session: Session) -> Facts:
        """Facts from the runtime's store; from the kept facts when the session has left it."""
        from segue.brief import MAX_STEPS, build_facts, keep_facts, load_kept
        from segue.stores import text

        reader = reader_for(session.runtime, self.env)
        if session.resume_blocker != "not_in_store" and reader.exists(session):
            stats = ReadStats()
            try:
                facts = build_facts(session, reader.brief_steps(session, stats, MAX_STEPS), stats,
                                    self.redactor(), memo=text.fast_paths(self.env))
            except FileNotFoundError:
                facts = None
            if facts is not None:
                keep_facts(self.state, facts, self.clock())
                return facts
        kept = load_kept(self.state, session.runtime, session.id)
        if kept is None:
            raise SessionNotFound(session.ref)
        return kept

    def brief(self, ref: str, cancelled: Callable[[], bool] | None = None) -> Brief:
        from segue.brief import render

        session, _ = self.find(ref, cancelled)
        facts = self.facts(session)
        return Brief(session=session, facts=facts, markdown=render(facts, self.clock()))

    def write_brief(self, session: Session) -> tuple[str, Facts]:
        from segue.brief import render, write_brief

        facts = self.facts(session)
        path = write_brief(self.state, session, render(facts, self.clock()), self.clock())
        return str(path), facts

    # -- resume ---------------------------------------------------------------------------------------------
    def plan_resume(self, ref: str, runtime: str | None = None, new: bool = False, cwd: str | None = None,
                    write: bool = True, path: str | None = None, cancelled: Callable[[], bool] | None = None,
                    require_cli: bool = True) -> Plan:
        """The plan; for a new session the brief is written now (so the plan can name its path) unless
        `write` is False (then brief_path names where it would go, and nothing is written). With `require_cli`
        False a runtime CLI missing here is no refusal (the command may run on another machine, or a dry run
        shows the plan): argv[0] is then its bare name."""
        from segue import resume

        session, _ = self.find(ref, cancelled)
        reader = reader_for(session.runtime, self.env)
        in_store = session.resume_blocker != "not_in_store" and reader.exists(session)
        mode, reason = resume.choose(session, target=runtime, new=new, cwd=cwd, in_store=in_store)
        target = runtime or session.runtime
        directory = resume.check_directory(cwd or session.cwd, session, overridden=cwd is not None)
        try:
            exe = resume.locate_cli(target, path)
        except resume.PlanRefused as e:
            if require_cli or e.reason != "missing_cli":
                raise
            exe = descriptor(target).cli
        brief_path = None
        if mode == "native":
            argv = resume.native_argv(target, session.id)
        else:
            if write:
                brief_path, _ = self.write_brief(session)
            else:
                from segue.brief import next_brief_path

                brief_path = str(next_brief_path(self.state, session, self.clock()))
            argv = resume.new_session_argv(target, resume.first_prompt(brief_path, session))
        argv[0] = exe
        resume.assert_no_bypass(argv)
        handed = session.handed_off
        return resume.Plan(mode=mode, reason=reason, runtime=target, argv=argv, cwd=directory,
                           brief_path=brief_path, session=session, handed_off=handed, live=session.live)

    def resume_command(self, ref: str, runtime: str | None = None, new: bool = False, cwd: str | None = None,
                       shell: str = "posix", cancelled: Callable[[], bool] | None = None) -> ResumeCommand:
        """The plan as one line to paste into a terminal (`cd DIR && claude --resume ID`), for `shell`."""
        from segue import resume

        plan = self.plan_resume(ref, runtime=runtime, new=new, cwd=cwd, cancelled=cancelled, require_cli=False)
        return ResumeCommand(command=resume.command_line(plan, shell), shell=shell, plan=plan)

    # -- handoff tokens -------------------------------------------------------------------------------------
    def emit(self, ref: str, surface: str, cancelled: Callable[[], bool] | None = None) -> Emitted:
        from segue.tokens import Registry

        session, _ = self.find(ref, cancelled)
        brief_path, _ = self.write_brief(session)
        token, entry = Registry(self.state, clock=self.clock).emit(
            runtime=session.runtime, session_id=session.id, surface=surface, cwd=session.cwd,
            title=session.label, brief_path=brief_path)
        return Emitted(token=token, expires_at=iso(entry["expires_at"]), brief_path=brief_path,
                       session=SessionRef.of(session))

    def claim(self, token: str, as_surface: str, tail: int = CLAIM_TAIL.default) -> Claim:
        """Claim a token: the session with its latest `tail` steps, read fresh from the runtime's store."""
        from segue.brief import STEP_CAP
        from segue.quote import clean, mark_invisible
        from segue.resume import PlanRefused
        from segue.tokens import Registry

        CLAIM_TAIL.check(tail)  # before the claim: a bad argument must not use the token up
        entry = Registry(self.state, clock=self.clock).claim(token, as_surface)
        ref = f"{entry['runtime']}:{entry['session_id']}"
        session, _ = self.find(ref)
        facts = self.facts(session)
        steps = facts.steps[-tail:] if tail > 0 else []
        plan: Plan | PlanRefusal
        try:
            plan = self.plan_resume(ref)
        except PlanRefused as e:
            plan = PlanRefusal(e.reason, str(e), dict(e.data))
        red = self.redactor()
        shown = facts.session  # the redacted header of the brief
        return Claim(
            session=ClaimedSession(session.runtime, session.id, shown.label, session.cwd),
            source_surface=entry.get("surface"),
            claimed_as=as_surface,
            active_task=facts.latest_request or facts.first_request,
            tail=[TailStep(s["kind"], mark_invisible(red.excerpt(clean(s["text"]), STEP_CAP)[0])) for s in steps],
            brief_path=entry.get("brief_path"),
            plan=plan,
        )

    def token_status(self) -> list[TokenStatus]:
        from segue.tokens import Registry

        return [TokenStatus(session=SessionRef(r["session"]["runtime"], r["session"]["id"], r["session"]["title"]),
                            surface=r["surface"], issued_at=iso(r["issued_at"]), expires_at=iso(r["expires_at"]),
                            seconds_left=r["seconds_left"], claimed=r["claimed"], claimed_as=r["claimed_as"])
                for r in Registry(self.state, clock=self.clock).status()]

    def revoke(self, ref: str, surface: str, cancelled: Callable[[], bool] | None = None) -> Revoked:
        """Revoke the live, unclaimed tokens a surface emitted for a session (the session is no longer
        handed off). Needs no token: the surface that emitted it asks."""
        from segue.tokens import Registry

        session, _ = self.find(ref, cancelled)
        n = Registry(self.state, clock=self.clock).revoke_session(session.runtime, session.id, surface)
        return Revoked(revoked=n, session=SessionRef.of(session))

    def locations(self, cancelled: Callable[[], bool] | None = None, runtimes: Sequence[str] | None = None
                  ) -> list[StoreLocation]:
        """Where each runtime's store was looked for (for an empty view: "Segue looked in …")."""
        listing = self.scan(runtimes, cancelled)
        return [StoreLocation(rt, loc.path, loc.exists, loc.how_to_override or None)
                for rt, locs in listing.locations.items() for loc in locs]

    # -- lineage --------------------------------------------------------------------------------------------
    def trace(self, ref: str, cancelled: Callable[[], bool] | None = None) -> Trace:
        session, listing = self.find(ref, cancelled, everything=True)
        return Trace([TraceLink(**link) for link in lineage.chain(listing.sessions, session)])


# the ordering the extension's session tree pages through (every runtime and directory, subagents included)
TREE_ORDER: tuple[Any, ...] = (None, None, True)
VIEW_MAX_AGE = 30.0  # seconds a decorated view is reused at most (OpenCode branches come from `.git/HEAD`)


class _View:
    """A decorated listing and its orderings per filter, with the JSON of every session already served."""

    def __init__(self, stamp: tuple[Any, ...], listing: _Listing, valid_until: float) -> None:
        self.stamp = stamp
        self.listing = listing
        self.valid_until = valid_until
        self.orders: dict[tuple[Any, ...], list[list[Session]]] = {}
        self.json: dict[int, Json] = {}
        self._listed: dict[tuple[str, ...] | None, int] = {}
        self._lock = threading.Lock()

    def order(self, key: tuple[Any, ...]) -> list[list[Session]]:
        """The groups for (runtimes sorted or None, directory, include_subagents), ordered once per view."""
        ordered = self.orders.get(key)
        if ordered is None:
            with self._lock:
                ordered = self.orders.get(key)
                if ordered is None:
                    wanted, directory, include_subagents = key
                    ordered = self.orders[key] = self.listing.groups(
                        runtimes=list(wanted) if wanted else None, directory=directory,
                        include_subagents=include_subagents)
        return ordered

    def encode(self, s: Session) -> Json:
        j = self.json.get(id(s))
        if j is None:
            j = self.json[id(s)] = s.to_json()
        return j

    def listed(self, runtimes: tuple[str, ...] | None) -> int:
        """Sessions of these runtimes (None: all) before any other filter."""
        n = self._listed.get(runtimes)
        if n is None:
            n = self._listed[runtimes] = sum(1 for s in self.listing.sessions if not runtimes or s.runtime in runtimes)
        return n


def _json_of(s: Session) -> Json:
    """A session's JSON, a compact one's too (`Session.to_json` takes only Session objects)."""
    return s.to_json()


def _same(a: _Listing, b: _Listing) -> bool:
    """Two raw listings of the same sessions (the cache hands back the very same objects when no source
    changed) and the same skipped sources."""
    return (len(a.sessions) == len(b.sessions) and all(x is y for x, y in zip(a.sessions, b.sessions, strict=True))
            and [(k.runtime, k.path, k.reason) for k in a.skipped] == [(k.runtime, k.path, k.reason)
                                                                       for k in b.skipped])


def time_of(text: str | None) -> float | None:
    from segue.model import parse_time

    return parse_time(text)
