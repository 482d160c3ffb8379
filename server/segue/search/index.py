"""The search index: `cache/search.sqlite` in Segue's private state directory (SQLite FTS5, WAL).

What goes in is what a brief shows of a session, through the brief's own pipeline (clean, then redact with
the brief's caps): the user's requests, the agents' messages, the commands run (with their exit codes) and the
paths of the files changed. Never reasoning, file contents or tool output: readers leave the first two out of
`Reader.steps()`, and the index skips `tool` and `subagent` steps and a command's output. The text is
redacted *before* it is stored, so the index never holds a secret a brief would hide; snippets are redacted
again on the way out (the environment's exact secrets may have changed since).

Layout:
  meta(key, value)                      schema version and the Segue version that built it; `salt` (random,
                                        for `redacted_by`); `sources`, a digest of the readers' sources when
                                        the index was last refreshed, and `sources:<runtime>` each runtime's
                                        (`sources` is the digest of theirs); `redact_env` (segue.search.redaction)
  sessions(sid, runtime, id, ...)       one row per session: what a result shows, plus `key` (what the
                                        session looked like when indexed), `hashes` (8 bytes per step) and
                                        `redacted_by` (which redaction its text went through, '' = unknown)
  probe(sources, data, groups)          what discovery looked at for that digest (segue.search.probe), and the
                                        same apart per runtime (segue.probe's groups: which runtime moved)
  recency(sid, updated_at)              sessions' (sid, updated_at), inserted with a batch of new sessions
                                        (`_new_sessions`), else by the triggers on update and delete: what a
                                        ranking joins every
                                        matching step to, in a table of 9 bytes a row (sessions' rows hold the
                                        hashes: the join costs twice as much there)
  docs (FTS5: text, kind, code)         one row per indexed step; rowid = sid << 24 | step index << 2 | kind's
                                        code (KIND_CODE): a --in filter is a test of the rowid FTS5 gives

Incremental: a session whose key (its file's size and mtime, or for a database store its row's update time)
is unchanged is not read at all. A changed one is streamed again and compared step by step with the stored
hashes; only the steps from the first difference on are redacted and written again. An appended transcript
therefore costs its new steps (plus the reader's pass over the file), a rewritten head or a shrunk file
re-indexes the session whole, and a database session costs its own rows only.

Parallel: a build of at least PARALLEL_MIN changed sessions is read and redacted by worker processes
(segue.search.workers, one per core) and only written here; ids are handed out in the serial order, so the index
is the same row for row (tests/test_search_build.py).

Concurrency: any number of readers (WAL); one writer at a time under `search.lock` (flock). Every session is
updated in a transaction with its key, so a crash leaves an index that is merely behind. A missing, damaged or
older index is rebuilt, with a message.
"""

from __future__ import annotations

import _thread  # threading's own RLock, without importing threading (~0.6 ms of a CLI query)
import contextlib
import fcntl
import math
import operator
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from segue import __version__
from segue.errors import SegueError
from segue.quote import clean
from segue.record import record
from segue.search.build import Prepared, shown_fields

try:  # hashlib's own blake2b, without hashlib loading OpenSSL (~4 ms of a CLI query)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

TYPE_CHECKING = False  # not typing's (nor pathlib, nor dataclasses): a CLI query imports this module
if TYPE_CHECKING:  # the query path never imports the listing or the readers
    from pathlib import Path
    from typing import Any

    from segue.model import ReadStats, Session, Step

SCHEMA_VERSION = 11  # 5: the step's kind in the rowid's low bits; the recency table. 6: the probe's groups.
# 7: each session's listing source, every source's fingerprint, the sessions found twice (segue.search.patch)
# 8: sessions.learned_at (the step after which its redaction had found a value: index._index_session)
# 9: sessions.mark (where a grown transcript's read may go on from: Reader.search_steps_from); the index on
# (runtime, store_path) that the patch's `sharing` asks (instead of a scan of the sessions and their hashes)
# 10: a new session's `recency` row is inserted with it, not by a trigger (a trigger's run per row cost a first
# build of 8,000 sessions ~0.15 s of the writer's CPU); updates and deletes keep theirs
# 11: a redaction marker keeps its rule id (`hide_markers`), so a snippet shows the marker a brief does
FILE_NAME = "search.sqlite"
LOCK_NAME = "search.lock"
STEP_BITS = 24  # rowid = sid << 24 | step index << 2 | kind: a session's rows are one rowid range, in step order
KIND_BITS = 2
STEP_MASK = (1 << STEP_BITS) - 1
MAX_STEPS = (1 << (STEP_BITS - KIND_BITS)) - 1
KIND_CODE = {"request": 0, "message": 1, "command": 2, "file": 3}  # the indexed kinds (`_source`)
# Caps as a brief uses them (segue.brief): requests and messages 8 KiB, commands 2000 characters, paths 1000.
CAPS = {"request": 8 * 1024, "message": 8 * 1024, "command": 2000, "file": 1000}
PARALLEL_MIN = 64  # changed sessions: fewer are indexed in this process (starting workers costs ~0.3 s)
# ... and only when their reading is estimated to cost more than starting the workers (`_work_ms`): 80 appended
# transcripts of the 8,000-session bench took 0.95 s serially against 1.1 s with two workers started for them.
PARALLEL_WORK_MS = 1000.0
_KEPT = object()  # a session row's `source` as it is (`_index_session`, `_write_prepared`)
WORK_MS_PER_SESSION = 1.0  # a session's fixed cost (its reader's set-up, a database session's own rows)
WORK_MS_PER_MB = 5.0  # a transcript file's read (about twice one orjson pass over it)
COMMIT_EVERY = 0.5  # seconds: a build commits its progress this often (readers see it; a crash keeps it)
ROWS_PER_FLUSH = 2000  # a session's rows written in one statement (the serial path)
BATCH_ROWS = 4000  # new sessions' rows a `_Batch` holds at most before it writes them
BATCH_CHARS = 400_000  # and their text (what is left at the end is written after the last answer)

_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE sessions(
  sid INTEGER PRIMARY KEY,
  runtime TEXT NOT NULL, id TEXT NOT NULL, parent_id TEXT,
  title TEXT, label TEXT, cwd TEXT, updated_at REAL,
  store_path TEXT NOT NULL, key TEXT NOT NULL, hashes BLOB NOT NULL, redacted_by TEXT NOT NULL DEFAULT '',
  source TEXT, learned_at INTEGER, mark BLOB, UNIQUE(runtime, id));
CREATE INDEX sessions_source ON sessions(runtime, source);
CREATE INDEX sessions_store ON sessions(runtime, store_path);
CREATE TABLE sources(runtime TEXT NOT NULL, path TEXT NOT NULL, fingerprint TEXT NOT NULL,
  PRIMARY KEY(runtime, path)) WITHOUT ROWID;
CREATE TABLE twice(runtime TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY(runtime, id)) WITHOUT ROWID;
CREATE TABLE probe(id INTEGER PRIMARY KEY CHECK (id = 0), sources TEXT NOT NULL, data BLOB NOT NULL, groups BLOB);
CREATE TABLE recency(sid INTEGER PRIMARY KEY, updated_at REAL);
CREATE TRIGGER recency_update AFTER UPDATE OF sid, updated_at ON sessions BEGIN
  DELETE FROM recency WHERE sid = old.sid; INSERT INTO recency VALUES (new.sid, new.updated_at); END;
CREATE TRIGGER recency_delete AFTER DELETE ON sessions BEGIN DELETE FROM recency WHERE sid = old.sid; END;
CREATE VIRTUAL TABLE docs USING fts5(text, kind UNINDEXED, code UNINDEXED,
  tokenize="unicode61 remove_diacritics 2");
INSERT INTO meta VALUES ('schema', '{SCHEMA_VERSION}');
"""


Sources = dict[tuple[str, str], str] | str  # every source's fingerprint, or their `sources_digest`
# (tasks: (position in the build, session, stored hashes)) -> (position, Prepared or None), as they finish
Parallel = Callable[[Iterator[tuple[int, "Session", bytes, bytes | None]]], Iterator[tuple[int, "Prepared | None"]]]


class SearchUnavailable(SegueError):
    """This Python's SQLite has no FTS5 (full-text search)."""

    reason = "search_unavailable"


def check_fts5() -> None:
    con = sqlite3.connect(":memory:")
    try:
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    except sqlite3.OperationalError as e:
        raise SearchUnavailable(
            f"search needs SQLite with FTS5, and this Python's SQLite {sqlite3.sqlite_version} has none ({e}); "
            "use a Python built with a standard SQLite") from None
    finally:
        con.close()


def _built_by(cache_dir: Path | str | None = None) -> str:
    """The schema and the code that built an index (segue.codestamp): a reader's fix reaches every session."""
    from segue import codestamp

    return f"{SCHEMA_VERSION}/{__version__}/{codestamp.stamp(cache_dir)}"


@record
class Hit:
    """One matching session: its best step."""

    sid: int
    rowid: int
    score: float
    runtime: str
    id: str
    parent_id: str | None
    title: str | None
    label: str | None
    cwd: str | None
    updated_at: float | None


@record
class RefreshStats:
    sessions: int = 0  # sessions in the listing
    indexed: int = 0  # sessions read again
    steps_written: int = 0
    steps_kept: int = 0  # unchanged steps of changed sessions, not written again
    removed: int = 0
    rebuilt: bool = False


class SearchIndex:
    def __init__(self, cache_dir: Path | str, notice: Callable[[str], None] | None = None) -> None:
        # a CLI query (segue.search.fast) gives a str: it never imports pathlib (~4 ms)
        self.dir = cache_dir
        self.path = os.path.join(cache_dir, FILE_NAME) if isinstance(cache_dir, str) else cache_dir / FILE_NAME
        self.notice = notice or (lambda _msg: None)
        self._con: sqlite3.Connection | None = None
        self._thread_lock = _thread.RLock()
        self._held = 0
        self.waited_for_lock = False  # whether taking `write_lock` last had to wait for another process
        self._sids = _Sids(0)  # a parallel build's session ids by position (negative: new)
        self._batch = _Batch()  # a build's new sessions not written yet

    # -- opening ------------------------------------------------------------------------------------------------
    def connection(self) -> sqlite3.Connection:
        """An open, valid index; rebuilt (empty) when missing, damaged or from another version."""
        if self._con is not None:
            return self._con
        check_fts5()
        problem = self._problem()
        if problem is not None:
            with self.write_lock():
                problem = self._problem()  # another process may have fixed it meanwhile
                if problem is not None:
                    self._reset(problem)
        self._con = self._open()
        return self._con

    def existing(self) -> sqlite3.Connection | None:
        """The index when it is there and valid, else None: never builds, rebuilds or creates anything. (Without
        FTS5 its docs table cannot be read: `_problem` finds it damaged, and the caller's full path says why.)"""
        if self._con is None:
            if self._problem() is not None:
                return None
            self._con = self._open()
        return self._con

    def _open(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        self._tighten()
        return con

    def _problem(self) -> str | None:
        if not os.path.exists(self.path):
            return "missing"
        try:
            con = sqlite3.connect(f"{file_uri(self.path)}?mode=ro", uri=True, timeout=30.0)
            try:
                row = con.execute("SELECT value FROM meta WHERE key='built_by'").fetchone()
                con.execute("SELECT 1 FROM docs LIMIT 1").fetchall()
            finally:
                con.close()
        except sqlite3.DatabaseError as e:
            return f"damaged ({e})"
        if row is None or row[0] != _built_by(self.dir):
            return "from another version of Segue"
        return None

    def _reset(self, problem: str) -> None:
        if problem != "missing":
            self.notice(f"the search index is {problem}; rebuilding it")
        self.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        con = sqlite3.connect(self.path, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript("BEGIN;" + _SCHEMA + "COMMIT;")
            con.execute("INSERT INTO meta VALUES ('built_by', ?)", (_built_by(self.dir),))
            con.execute("INSERT INTO meta VALUES ('salt', ?)", (os.urandom(16).hex(),))
        finally:
            con.close()
        self._tighten()

    def _tighten(self) -> None:
        for suffix in ("", "-wal", "-shm"):  # SQLite makes side files with the umask's mode
            with contextlib.suppress(OSError):
                os.chmod(str(self.path) + suffix, 0o600)

    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        """One writer at a time across processes (readers are never blocked: WAL). Re-entrant in a thread (a
        second flock on a new descriptor would wait for ourselves)."""
        with self._thread_lock:
            if self._held:
                self._held += 1
                try:
                    yield
                finally:
                    self._held -= 1
                return
            self._held = 1
            try:
                with self._flock():
                    yield
            finally:
                self._held = 0

    @contextlib.contextmanager
    def _flock(self) -> Iterator[None]:
        fd = os.open(os.path.join(self.dir, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            self.waited_for_lock = False
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.waited_for_lock = True
                self.notice("waiting for another Segue process that is updating the search index")
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def forget(self) -> bool:
        """Delete the index (`segue search --forget`). True when there was one."""
        self.close()
        found = False
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(str(self.path) + suffix)
                found = True
            except FileNotFoundError:
                pass
        return found

    # -- freshness ----------------------------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self.connection().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def has_runtime(self, runtime: str) -> bool:
        """Does the index hold a session of this runtime (a lookup in the (runtime, id) unique index)?"""
        row = self.connection().execute("SELECT 1 FROM sessions WHERE runtime = ? LIMIT 1", (runtime,)).fetchone()
        return row is not None

    def sources_match(self, sources: Sources) -> bool:
        """Is every source the readers see now the one the index was refreshed from (no more, no fewer)?"""
        return self.meta("sources") == sources_digest(sources)

    def changed_runtimes(self, by_runtime: Mapping[str, str]) -> list[str] | None:
        """The runtimes whose sources are not the ones the index was last refreshed from (each runtime's digest
        is written with the whole one, in the same transaction), or None when that cannot be told (an index
        without them) or when it is every runtime or none: then the whole refresh, the reference."""
        stored = dict(self.connection().execute("SELECT key, value FROM meta WHERE key LIKE 'sources:%'"))
        changed = []
        for rt, digest in by_runtime.items():
            old = stored.get(f"sources:{rt}")
            if old is None:
                return None
            if old != digest:
                changed.append(rt)
        return changed if 0 < len(changed) < len(by_runtime) else None

    def store_probe(self, sources: Sources, blob: bytes, groups: bytes | None = None) -> None:
        """Remember what discovery looked at when it saw these sources (segue.search.probe), and the same with
        each runtime's observations apart (`groups`, segue.probe.Recording.dump_groups; None: not kept). Caller
        holds `write_lock`; the probe counts only while the index's own digest is the same (`probe_matches`)."""
        from segue.search import probe

        probe.forget_marks()
        con = self.connection()
        digest = sources_digest(sources)
        row = con.execute("SELECT sources, data, groups FROM probe WHERE id = 0").fetchone()
        if (row is not None and row[0] == digest and bytes(row[1]) == blob
                and (None if row[2] is None else bytes(row[2])) == groups):
            return
        con.execute("INSERT OR REPLACE INTO probe VALUES (0, ?, ?, ?)", (digest, blob, groups))

    def probe_groups(self) -> tuple[bytes, dict[str, str]] | None:
        """(the probe's groups, each runtime's digest) for the sources the index was refreshed from, read in one
        snapshot; None when either is not kept."""
        con = self.connection()
        own = not con.in_transaction
        if own:
            con.execute("BEGIN")
        try:
            row = con.execute("SELECT p.groups FROM probe p JOIN meta m ON m.key = 'sources' AND m.value = p.sources "
                              "WHERE p.id = 0").fetchone()
            by_runtime = dict(con.execute("SELECT substr(key, 9), value FROM meta WHERE key LIKE 'sources:%'"))
        finally:
            if own:
                con.execute("COMMIT")
        if row is None or row[0] is None or not by_runtime:
            return None
        return bytes(row[0]), by_runtime

    def probe_matches(self, home: str, environ: Mapping[str, str]) -> bool:
        """Fresh without asking a reader: the probe belongs to the sources the index was refreshed from, and
        every observation it holds gives the same answer now."""
        from segue.search import probe

        blob = self.probe_blob()
        if blob is None or probe.known_stale(blob):
            return False
        if probe.fresh(blob, home, environ):
            return True
        probe.mark_stale(blob)
        return False

    def probe_blob(self) -> bytes | None:
        """The probe of the sources the index was refreshed from (None: none, or probes are off)."""
        from segue.search import probe

        if not probe.enabled():
            return None
        con = self.connection()
        con.execute("BEGIN")  # one snapshot of the digest and the probe
        try:
            row = con.execute("SELECT p.data FROM probe p JOIN meta m ON m.key = 'sources' AND m.value = p.sources "
                              "WHERE p.id = 0").fetchone()
        finally:
            con.execute("COMMIT")
        return None if row is None else bytes(row[0])

    # -- building -----------------------------------------------------------------------------------------------
    def refresh(self, sessions: Sequence[Session], steps_of: Callable[[Session, ReadStats], Iterable[Step]],
                redact: Callable[[str, int], str], sources: Sources | None = None,
                progress: Callable[[int, int], None] | None = None,
                cancelled: Callable[[], bool] | None = None, redacted_by: str = "",
                parallel: Parallel | None = None, by_runtime: Mapping[str, str] | None = None,
                scope: Sequence[str] | None = None, found: Provenance | None = None) -> RefreshStats:
        """Bring the index up to these sessions (all of them: what is not listed is dropped). Caller holds
        `write_lock`. `redacted_by` names the redaction `redact` applies ('' when unknown).

        `scope`: the sessions are those of these runtimes only (`changed_runtimes`), and only those runtimes'
        indexed sessions are compared with them (kept, updated or dropped); the others stay as they are.
        `by_runtime`: each runtime's digest of `sources`, written with it.

        `parallel` (segue.search.workers.run, bound to the readers' environment) does the reading and redacting
        of at least PARALLEL_MIN changed sessions elsewhere and gives back `build.Prepared`s to write; a session
        it gives back None for is indexed here with `steps_of` and `redact`, as without it. Session ids are
        handed out in the same order either way, so the index is the same row for row.

        `found`: where the listing found them (`Provenance`), kept so that a later change to a few sources can be
        indexed without a listing (segue.search.patch); without it that route is closed until a refresh with it."""
        from segue.listing import Cancelled

        con = self.connection()
        stats = RefreshStats(sessions=len(sessions))
        if scope is not None:
            inside = set(scope)
            sessions = [s for s in sessions if s.runtime in inside]
            stats.sessions = len(sessions)
        shared: dict[str, int] = {}
        for s in sessions:
            shared[s.store_path] = shared.get(s.store_path, 0) + 1
        scoped = "" if scope is None else f" WHERE runtime IN ({','.join('?' * len(scope))})"
        known = {(rt, i): (sid, key, src) for sid, rt, i, key, src in con.execute(
            f"SELECT sid, runtime, id, key, source FROM sessions{scoped}", list(scope or ()))}
        # (a first build knows no session: nothing can be gone, and no set of every listed key is held)
        listed: set[tuple[str, str]] = set()
        todo: list[tuple[Session, str]] = []
        origins = found.origins if found is not None else {}
        moved_from: list[tuple[str | None, str, str]] = []  # (source, runtime, id) where the kept one differs
        for s in sessions:
            if known:
                listed.add((s.runtime, s.id))
            key = _key(s, shared[s.store_path] > 1)
            old = known.get((s.runtime, s.id))
            if old is None or old[1] != key:
                todo.append((s, key))
            # a new session's source is written with its row; a kept one's is updated where it moved (8,000
            # updates at the end of a first build were ~50 ms with every worker done)
            if old is not None:
                origin = origins.get((s.runtime, s.id))
                if old[2] != origin:
                    moved_from.append((origin, s.runtime, s.id))
        todo.sort(key=lambda t: t[0].sort_time, reverse=True)  # newest first: searchable soonest
        gone = [old[0] for k, old in known.items() if k not in listed]
        con.execute("BEGIN IMMEDIATE")
        # A session is written whole or not at all by the transaction, not by a savepoint per session: FTS5
        # flushes its pending terms to a new segment at every savepoint (8,000 tiny segments merged again and
        # again cost the 8k build ~0.8 s of the writer's CPU). A failure in the middle of a session rolls back
        # to the last commit instead (at most COMMIT_EVERY of work); one between sessions keeps it all.
        self._batch = _Batch()
        midway = False
        try:
            for sid in gone:
                con.execute("DELETE FROM docs WHERE rowid BETWEEN ? AND ?", (sid << STEP_BITS, _last(sid)))
                con.execute("DELETE FROM sessions WHERE sid = ?", (sid,))
            stats.removed = len(gone)
            last_commit = time.monotonic()
            if parallel is not None and len(todo) >= PARALLEL_MIN and _work_ms(todo, shared) >= PARALLEL_WORK_MS:
                work: Iterator[tuple[int, Prepared | None]] = self._parallel(con, todo, parallel, known, redacted_by)
            else:
                self._sids = _Sids(0)
                work = ((n, None) for n in range(len(todo)))
            with contextlib.closing(work):  # stops the workers on any way out
                for n, (pos, prepared) in enumerate(work):
                    if cancelled is not None and cancelled():
                        raise Cancelled()
                    if progress is not None:
                        progress(n, len(todo))
                    s, key = todo[pos]
                    source = origins.get((s.runtime, s.id)) if (s.runtime, s.id) not in known else _KEPT
                    midway = True
                    if prepared is None:
                        self._batch.flush(con)
                        self._index_session(con, s, key, steps_of, redact, stats, redacted_by,
                                            self._sids.get(pos), source)
                    else:
                        self._write_prepared(con, s, key, self._sids[pos], prepared, stats, redacted_by, source)
                    midway = False
                    stats.indexed += 1
                    if time.monotonic() - last_commit > COMMIT_EVERY:
                        midway = True
                        self._batch.flush(con)
                        con.execute("COMMIT")
                        midway = False
                        con.execute("BEGIN IMMEDIATE")
                        last_commit = time.monotonic()
            midway = True
            self._batch.flush(con)
            con.executemany("UPDATE sessions SET source = ? WHERE runtime = ? AND id = ?", moved_from)
            _keep_found(con, found, scope)
            if sources is not None:
                con.execute("INSERT OR REPLACE INTO meta VALUES ('sources', ?)", (sources_digest(sources),))
                # each runtime's with it, or none: a stale one must never let a scoped refresh skip a runtime
                con.execute("DELETE FROM meta WHERE key LIKE 'sources:%'")
                con.executemany("INSERT INTO meta VALUES (?, ?)",
                                [(f"sources:{rt}", d) for rt, d in (by_runtime or {}).items()])
            con.execute("COMMIT")
            midway = False
        except BaseException:
            if con.in_transaction:
                if midway:  # a session half written: back to the last commit (the index is merely behind)
                    con.execute("ROLLBACK")
                else:  # what was indexed so far is consistent: keep it (sources stay old: not fresh)
                    try:
                        self._batch.flush(con)
                        con.execute("COMMIT")
                    except BaseException:
                        if con.in_transaction:
                            con.execute("ROLLBACK")
                        raise
            raise
        finally:
            self._batch = _Batch()
        if progress is not None:
            progress(len(todo), len(todo))
        self._tighten()
        return stats

    # -- the patch: a few moved sources indexed without a listing (segue.search.patch) -----------------------------
    def source_rows(self, runtime: str) -> dict[str, str]:
        """{path: fingerprint} of the runtime's sources as the last refresh found them."""
        return dict(self.connection().execute("SELECT path, fingerprint FROM sources WHERE runtime = ?", (runtime,)))

    def from_source(self, runtime: str, path: str) -> dict[str, str]:
        """{id: store_path} of the indexed sessions the listing kept from this source."""
        return dict(self.connection().execute("SELECT id, store_path FROM sessions WHERE runtime = ? AND source = ?",
                                              (runtime, path)))

    def found_twice(self, runtime: str, ids: Iterable[str]) -> bool:
        """Did the last listing find any of these sessions in more than one source?"""
        con = self.connection()
        return any(con.execute("SELECT 1 FROM twice WHERE runtime = ? AND id = ?", (runtime, i)).fetchone()
                   for i in ids)

    def sharing(self, runtime: str, store_path: str) -> int:
        """How many of the runtime's indexed sessions live in this file (`_key`'s shared store)."""
        row = self.connection().execute("SELECT count(*) FROM sessions WHERE runtime = ? AND store_path = ?",
                                        (runtime, store_path)).fetchone()
        return int(row[0])

    def patch(self, todo: Sequence[tuple[Session, str]], steps_of: Callable[[Session, ReadStats], Iterable[Step]],
              redact: Callable[[str, int], str], redacted_by: str, rows: Mapping[str, Mapping[str, str]],
              by_runtime: Mapping[str, str]) -> RefreshStats:
        """Index these sessions again (each with its key, as `refresh` computes it) and keep the moved sources'
        fingerprints (`rows`: runtime -> {path: fingerprint}) with the digests they give (`by_runtime`: every
        runtime's), in one transaction. Caller holds `write_lock`; every session is already in the index, kept
        from the same source (segue.search.patch proves it)."""
        con = self.connection()
        stats = RefreshStats(sessions=len(todo))
        con.execute("BEGIN IMMEDIATE")
        try:
            for s, key in todo:
                self._index_session(con, s, key, steps_of, redact, stats, redacted_by)
                stats.indexed += 1
            for rt, changed in rows.items():
                con.executemany("INSERT OR REPLACE INTO sources VALUES (?, ?, ?)",
                                [(rt, p, fp) for p, fp in changed.items()])
            con.execute("INSERT OR REPLACE INTO meta VALUES ('sources', ?)", (combined(by_runtime),))
            con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                            [(f"sources:{rt}", d) for rt, d in by_runtime.items()])
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        self._tighten()
        return stats

    def _parallel(self, con: sqlite3.Connection, todo: list[tuple[Session, str]], parallel: Parallel,
                  known: Mapping[tuple[str, str], object], redacted_by: str) -> Iterator[tuple[int, Prepared | None]]:
        """Hand `todo` to `parallel` with each session's stored hashes and the mark its read may go on from
        (`_may_go_on`); new sessions get their ids here, in `todo` order (as the serial build's inserts would),
        in `self._sids`. `known`: the sessions the index held when the refresh began (a session not in it has
        no row to look up: a first build asks nothing)."""
        self._sids = _Sids(len(todo))
        nxt = (con.execute("SELECT max(sid) FROM sessions").fetchone()[0] or 0) + 1

        def tasks() -> Iterator[tuple[int, Session, bytes, bytes | None]]:
            nonlocal nxt
            for pos, (s, _key) in enumerate(todo):
                row = (con.execute("SELECT sid, hashes, redacted_by, learned_at, mark FROM sessions "
                                   "WHERE runtime = ? AND id = ?", (s.runtime, s.id)).fetchone()
                       if (s.runtime, s.id) in known else None)
                if row is None:
                    self._sids[pos] = -nxt  # negative: not in the table yet
                    nxt += 1
                    yield pos, s, b"", None
                else:
                    self._sids[pos] = row[0]
                    yield pos, s, bytes(row[1]), row[4] if _may_go_on(row[4], row[3], row[2], redacted_by) else None

        # drawn from the workers' threads as well (workers.run): every lookup on `con` is done here, first
        return parallel(iter(list(tasks())))

    def _write_prepared(self, con: sqlite3.Connection, s: Session, key: str, sid: int, p: Prepared,
                        stats: RefreshStats, redacted_by: str, source: object = _KEPT) -> None:
        """Write what `build.prepare` computed, as `_index_session` would have written it. `source`: a new
        session's (see `_index_session`); a session already in the table is one the refresh knew, whose source
        the refresh updates with the others that moved."""
        if sid < 0:  # a new session: its rows join the batch (written before the next commit)
            sid = -sid
            base = sid << STEP_BITS
            codes = KIND_CODE  # _rowid, inlined (a call per row was a tenth of the writer's Python)
            self._batch.add(con, [(base + (i << KIND_BITS) + codes[kind], text, kind, code)
                                  for i, text, kind, code in p.rows],
                            (sid, s.runtime, s.id, s.parent_id, p.title, p.label, p.cwd, s.updated_at, s.store_path,
                             key, p.hashes, redacted_by, p.learned_at, p.mark,
                             None if source is _KEPT else source), p.chars)
            stats.steps_written += len(p.rows)
            return
        self._batch.flush(con)  # an existing session's rows are deleted and rewritten in order
        old_by, old = con.execute("SELECT redacted_by, hashes FROM sessions WHERE sid = ?", (sid,)).fetchone()
        n_old = len(old) // 8
        base = sid << STEP_BITS
        if p.diverged is not None and n_old:
            con.execute("DELETE FROM docs WHERE rowid BETWEEN ? AND ?", (base + (p.diverged << KIND_BITS), _last(sid)))
        elif p.diverged is None and p.steps < n_old:
            con.execute("DELETE FROM docs WHERE rowid BETWEEN ? AND ?", (base + (p.steps << KIND_BITS), _last(sid)))
        _insert(con, [(_rowid(base, i, kind), text, kind, code) for i, text, kind, code in p.rows])
        stats.steps_written += len(p.rows)
        stats.steps_kept += p.kept
        kept_by = redacted_by if p.kept == 0 or old_by == redacted_by else ""
        con.execute("UPDATE sessions SET parent_id=?, title=?, label=?, cwd=?, updated_at=?, store_path=?, key=?, "
                    "hashes=?, redacted_by=?, learned_at=?, mark=? WHERE sid=?",
                    (s.parent_id, p.title, p.label, p.cwd, s.updated_at, s.store_path, key, p.hashes, kept_by,
                     p.learned_at, p.mark, sid))

    def _index_session(self, con: sqlite3.Connection, s: Session, key: str,
                       steps_of: Callable[[Session, ReadStats], Iterable[Step]], redact: Callable[[str, int], str],
                       stats: RefreshStats, redacted_by: str, sid_hint: int | None = None,
                       source: object = _KEPT) -> None:
        """`source`: where the listing found the session, for a session the refresh did not know (a known one's
        is updated with the others that moved); _KEPT leaves the row's as it is."""
        from segue.model import ReadStats

        row = con.execute("SELECT sid, hashes, redacted_by, learned_at, mark FROM sessions "
                          "WHERE runtime = ? AND id = ?", (s.runtime, s.id)).fetchone()
        if row is None:
            # a parallel build hands out new ids itself (negative until written): this one keeps its own
            sid = con.execute("INSERT INTO sessions(sid, runtime, id, store_path, key, hashes) "
                              "VALUES (?, ?, ?, ?, '', x'')",
                              (-sid_hint if sid_hint is not None and sid_hint < 0 else None, s.runtime, s.id,
                               s.store_path)).lastrowid
            # (its recency row comes from the update trigger: the UPDATE at the end always sets updated_at)
            old, old_by, old_learned, mark = b"", redacted_by, None, None
        else:
            sid, old, old_by, old_learned, mark = row[0], bytes(row[1]), row[2], row[3], row[4]
        assert sid is not None
        base = sid << STEP_BITS
        n_old = len(old) // 8
        # the kept steps before `quiet` taught the pass that wrote them nothing (the same redaction, and its
        # session's Redactor had found no value yet): they need not be redacted again to learn
        quiet = (n_old if old_learned is None else old_learned) if redacted_by and old_by == redacted_by else 0
        learned_at = None
        hashes = bytearray()
        rows: list[tuple[int, str, str, int | None]] = []
        diverged = False
        memory = None
        n = kept = 0
        read = ReadStats()
        steps: Any = ()
        try:
            # on from the previous read's mark only where the steps before it taught nothing: the session's
            # Redactor then knows at the mark what a read from the start would
            going_on = _may_go_on(mark, old_learned, old_by, redacted_by)
            steps = steps_of(s, read, mark, n_old) if going_on else steps_of(s, read)
            start = getattr(steps, "start", 0)  # (never past the `n_old` steps held)
            hashes += old[:8 * start]
            n = kept = start
            stats.steps_kept += start
            # the session's Redactor behind `redact` (engine._indexing's SessionRedaction), set by steps_of
            memory = getattr(redact, "memory", None)
            for i, step in enumerate(steps, start):
                if i >= MAX_STEPS:
                    break
                n = i + 1
                h = _hash(step)
                hashes += h
                if not diverged:
                    if i < n_old and old[8 * i:8 * i + 8] == h:
                        stats.steps_kept += 1
                        kept += 1
                        if memory is not None and i >= quiet:  # what it taught the pass that wrote it
                            _doc(step, redact)
                            if learned_at is None and memory.learned_count():
                                learned_at = i
                        continue
                    diverged = True
                    if n_old:  # a new session has no rows to drop (an FTS5 delete is not free)
                        con.execute("DELETE FROM docs WHERE rowid BETWEEN ? AND ?",
                                    (base + (i << KIND_BITS), _last(sid)))
                doc = _doc(step, redact)
                if learned_at is None and memory is not None and memory.learned_count():
                    learned_at = i
                if doc is not None:
                    rows.append((_rowid(base, i, doc[1]), *doc))
                    if len(rows) >= ROWS_PER_FLUSH:
                        _insert(con, rows)
                        stats.steps_written += len(rows)
                        rows.clear()
        except FileNotFoundError:
            pass  # gone between listing and reading: indexed as far as it could be read
        if not diverged and n < n_old:  # fewer steps than before and the rest unchanged
            con.execute("DELETE FROM docs WHERE rowid BETWEEN ? AND ?", (base + (n << KIND_BITS), _last(sid)))
        _insert(con, rows)
        stats.steps_written += len(rows)
        if memory is not None and memory.learned_count():  # every row with what the whole session taught
            from segue.search.build import recheck

            for rowid, text in con.execute("SELECT rowid, text FROM docs WHERE rowid BETWEEN ? AND ?",
                                           (base, _last(sid))).fetchall():
                again = recheck(text, memory)
                if again != text:
                    con.execute("UPDATE docs SET text = ? WHERE rowid = ?", (again, rowid))
        title, label, cwd = shown_fields(s, redact)
        # steps kept from an earlier pass went through that pass's redaction: the same one, or unknown
        kept_by = redacted_by if kept == 0 or old_by == redacted_by else ""
        con.execute("UPDATE sessions SET parent_id=?, title=?, label=?, cwd=?, updated_at=?, store_path=?, key=?, "
                    "hashes=?, redacted_by=?, learned_at=?, mark=?, source=CASE WHEN ? THEN source ELSE ? END "
                    "WHERE sid=?",
                    (s.parent_id, title, label, cwd, s.updated_at, s.store_path, key, bytes(hashes), kept_by,
                     learned_at, getattr(steps, "mark", None) if learned_at is None else None, source is _KEPT,
                     None if source is _KEPT else source, sid))

    # -- querying -----------------------------------------------------------------------------------------------
    def redacted_by(self, sids: Iterable[int]) -> set[str]:
        con = self.connection()
        return {r[0] for sid in sids for r in con.execute("SELECT redacted_by FROM sessions WHERE sid = ?", (sid,))}

    def labels(self, refs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], tuple[int, str]]:
        """(sid, stored label) of each (runtime, id) the index holds a label for: a page's parents, a few lookups."""
        con = self.connection()
        out = {}
        for ref in set(refs):
            row = con.execute("SELECT sid, label FROM sessions WHERE runtime = ? AND id = ?", ref).fetchone()
            if row and row[1]:
                out[ref] = (row[0], row[1])
        return out

    def hits(self, match: str, where: Sequence[str] | None = None, runtimes: Sequence[str] | None = None,
             since: float | None = None) -> list[Hit]:
        """Every matching session with its best step (lowest bm25), unordered."""
        con = self.connection()
        args: list[Any] = [match]
        inner = "SELECT rowid >> 24 AS sid, rowid AS rid, bm25(docs) AS score FROM docs WHERE docs MATCH ?"
        if where:
            inner += f" AND kind IN ({','.join('?' * len(where))})"
            args += list(where)
        outer = ("SELECT h.sid, h.rid, min(h.score), s.runtime, s.id, s.parent_id, s.title, s.label, s.cwd, "
                 "s.updated_at FROM h JOIN sessions s ON s.sid = h.sid")
        conds = []
        if runtimes:
            conds.append(f"s.runtime IN ({','.join('?' * len(runtimes))})")
            args += list(runtimes)
        if since is not None:
            conds.append("s.updated_at >= ?")
            args.append(since)
        sql = f"WITH h AS MATERIALIZED ({inner}) {outer}"
        if conds:
            sql += " WHERE " + " AND ".join(conds)
        sql += " GROUP BY h.sid"
        return [Hit(*r) for r in con.execute(sql, args)]

    def ranked(self, match: str, now: float, half_life_days: float, where: Sequence[str] | None = None,
               runtimes: Sequence[str] | None = None, since: float | None = None, limit: int | None = None,
               phrases: Sequence[str] | None = None, within: Callable[[str | None], bool] | None = None,
               cwds: Sequence[str] | None = None) -> tuple[list[Hit], int]:
        """The best `limit` matching sessions (None: all), best first, and how many match in all; ranked, cut
        and counted by SQLite, so a query costs its page of results, not a Python object per matching session.

        A session's score is its best step's bm25 (lower is better) times 1 + 0.5 ** (age in days / half
        life): a session active now weighs twice its relevance, one a half life old 1.5 times. Ties go to
        the more recent session, then to the older sid; a session's best step is its lowest bm25, the first
        such step on a tie (as `hits` picks it). The factor is the session's, and positive: a session ranks
        where its best step ranks among all matching steps, so SQLite sorts steps (a top-N sort, no grouping)
        and the first step of each session met in that order is its best.

        `phrases` (the MATCH's phrases, each as FTS5 syntax) let a common word's page skip the bm25 of sessions
        too old to reach it (`_bounded`): the same page, proven, or the full ranking.

        `within(cwd)` keeps the sessions whose directory it accepts (`--dir`: segue.within.cwd_within, False for
        None). It is asked once per distinct directory of the index, and SQLite ranks only the sessions in the
        ones kept (`cwds`), with the same snapshot; past CWDS_MAX directories (or SEGUE_SEARCH_DIR_SQL=0) every
        match is ranked and then kept or not, the reference."""
        con = self.connection()
        if within is not None:
            own = not con.in_transaction
            if own:
                con.execute("BEGIN")
            try:
                kept = self._within_cwds(con, within, match) if _dir_sql_enabled() else None
                if kept is not None:
                    return self.ranked(match, now, half_life_days, where, runtimes, since, limit, phrases,
                                       cwds=kept)
                hits = _keep(self.ranked(match, now, half_life_days, where, runtimes, since)[0], within)
                return (hits if limit is None else hits[:limit]), len(hits)
            finally:
                if own:
                    con.execute("COMMIT")
        _math(con)
        args: list[Any] = [match]
        # docs first (CROSS JOIN): the MATCH drives, sessions is one primary-key lookup per matching step
        join, kind, kind_args, by_rowid = _kind_filter(con, where)
        # a step needs only its session's updated_at unless it is filtered by the session's runtime or directory
        table = "sessions" if runtimes or cwds is not None or not _recency_enabled() else "recency"
        src = f"FROM docs CROSS JOIN {table} s ON s.sid = docs.rowid >> 24{join} WHERE docs MATCH ?{kind}"
        args += kind_args
        if runtimes:
            src += f" AND s.runtime IN ({','.join('?' * len(runtimes))})"
            args += list(runtimes)
        if since is not None:
            src += " AND s.updated_at >= ?"
            args.append(since)
        if cwds is not None:
            src += f" AND s.cwd IN ({','.join('?' * len(cwds))})"
            args += list(cwds)
        inner = f"SELECT docs.rowid AS rid, bm25(docs) AS score, s.updated_at AS u {src}"
        own = not con.in_transaction
        if own:
            con.execute("BEGIN")  # one snapshot for the steps and their sessions
        try:
            if limit is not None and phrases and _prune_enabled():
                # kinds tested on the rowid alone: FTS5 counts the sessions without a session or kind read
                on_session = bool(runtimes or since is not None or cwds is not None)
                got = self._bounded(con, src, args, list(phrases), now, half_life_days, limit,
                                    filtered=on_session or bool(where and not by_rowid),
                                    counted=(kind, kind_args) if by_rowid else ("", []))
                if got is not None:
                    return got
            # the same arithmetic, in the same order, as the Python float expression of the rule (IEEE doubles)
            sql = (f"WITH d AS MATERIALIZED ({inner}) SELECT rid, score, (SELECT count(DISTINCT rid >> 24) FROM d) "
                   f"FROM d ORDER BY {_KEY}, -coalesce(u, 0.0), rid >> 24, score, rid")
            return self._ranked(con, sql, [*args, now, half_life_days], limit)
        finally:
            if own:
                con.execute("COMMIT")

    def _bounded(self, con: sqlite3.Connection, src: str, args: list[Any], phrases: list[str], now: float,
                 hl: float, limit: int, filtered: bool, counted: tuple[str, list[Any]] = ("", [])
                 ) -> tuple[list[Hit], int] | None:
        """The page of `ranked` without the bm25 of every matching step, or None (then rank them all).

        FTS5's bm25 of a step is minus the sum over the query's phrases of idf × f(tf) × (k1 + 1) / (f(tf) + k1 ×
        (1 - b + b × length / average)), each term below idf × (k1 + 1) (k1 = 1.2; idf as FTS5 computes it from
        the row count and the phrase's number of matching rows): so no step scores below -BOUND, and a session
        whose recency factor is r scores above -BOUND × r. Any `limit` sessions' scores are at least as good as
        the page's last (`worst`): a sample of recent sessions' steps gives one, and every session old enough
        that -BOUND × r > worst cannot reach the page. The page is ranked exactly among the others, and kept
        only when its own last score proves it: every excluded session scores above it. Else None.

        `filtered` (by kind or session): the count of matching sessions comes from the same pass (every matching
        step is read, the bm25 only of those recent enough), as a separate count would read each step's kind or
        session a second time; unfiltered, FTS5 counts them alone, cheaper than keeping every step, with
        `counted` (condition, arguments) on the rowid alone: the kinds' filter."""
        inner = f"SELECT docs.rowid AS rid, bm25(docs) AS score, s.updated_at AS u {src}"
        match = args[0]
        rows = con.execute("SELECT count(*) FROM docs WHERE docs MATCH ?", (match,)).fetchone()[0]
        if rows < PRUNE_MIN_ROWS:
            return None  # ranking them all costs a few milliseconds
        bound = _bm25_bound(con, phrases, rows if len(phrases) == 1 else None)
        if bound is None:
            return None
        # the sample: matching steps among the first few of sessions active within a half life; a session's best
        # sampled step is no better than its best step, so the sample's limit-th score is no better than the
        # page's last
        sample = con.execute(f"WITH d AS MATERIALIZED ({inner} AND coalesce(s.updated_at, 0.0) >= ? AND "
                             f"(docs.rowid & {STEP_MASK}) < {PRUNE_SAMPLE_STEPS << KIND_BITS} "
                             f"LIMIT {PRUNE_SAMPLE_ROWS}) "
                             f"SELECT min({_KEY}) FROM d GROUP BY rid >> 24",
                             [*args, now - hl * 86400.0, now, hl]).fetchall()
        worst = sorted(r[0] for r in sample)[limit - 1] if len(sample) >= limit else None
        if worst is None or not worst < 0.0 or not -worst / bound > 1.0:
            return None
        ratio = -worst / bound  # a session whose factor is below it cannot reach the page
        if ratio >= 2.0:
            return None  # (cannot happen: the sample's own steps score above -BOUND × 2)
        age_days = hl * math.log2(1.0 / (ratio - 1.0))
        oldest = now - age_days * 86400.0 - 1.0  # a second earlier: when in doubt, rank it
        if not filtered and _group_enabled():
            # measured: Python's one pass beats SQLite's sort of the recent steps here (8k sessions, a very common
            # word: 20k steps, -5 ms), not where every matching step is read (filtered, or no bound): there the
            # per-row Python costs more than the sort saves
            rows = con.execute(f"{inner} AND coalesce(s.updated_at, 0.0) >= ?", [*args, oldest])
            ordered, total = _best_steps(rows, now, hl, limit)
            best = {sid: (rid, score) for sid, rid, score, _k in ordered}
            last = ordered[-1][3] if ordered else 0.0
        else:
            best, last, total = self._bounded_sql(con, src, inner, args, oldest, now, hl, limit, filtered)
        factor = 1.0 + 0.5 ** ((max(0.0, now - oldest) / 86400.0) / hl)  # the factor of every excluded session
        if len(best) < limit or not bound * factor < -last:
            return None
        if not filtered:
            total = con.execute(f"SELECT count(DISTINCT rowid >> 24) FROM docs WHERE docs MATCH ?{counted[0]}",
                                [match, *counted[1]]).fetchone()[0]
        return self._page(con, best), total

    @staticmethod
    def _bounded_sql(con: sqlite3.Connection, src: str, inner: str, args: list[Any], oldest: float, now: float,
                     hl: float, limit: int, filtered: bool) -> tuple[dict[int, tuple[int, float]], float, int]:
        """_bounded's pass with SQLite sorting every step scored (SEGUE_SEARCH_GROUP=0: the reference)."""
        key = f"{_KEY}, -coalesce(u, 0.0), rid >> 24, score, rid"
        if filtered:
            cur = con.execute(f"WITH d AS MATERIALIZED (SELECT docs.rowid AS rid, CASE WHEN coalesce(s.updated_at, "
                              f"0.0) >= ? THEN bm25(docs) END AS score, s.updated_at AS u {src}) SELECT rid, score, "
                              f"{_KEY}, (SELECT count(DISTINCT rid >> 24) FROM d) FROM d WHERE score IS NOT NULL "
                              f"ORDER BY {key}", [oldest, *args, now, hl, now, hl])
        else:
            cur = con.execute(f"WITH d AS MATERIALIZED ({inner} AND coalesce(s.updated_at, 0.0) >= ?) "
                              f"SELECT rid, score, {_KEY}, NULL FROM d ORDER BY {key}",
                              [*args, oldest, now, hl, now, hl])
        best: dict[int, tuple[int, float]] = {}
        last, total = 0.0, 0
        for rid, score, k, n in cur:
            total = n
            sid = rid >> STEP_BITS
            if sid not in best:
                best[sid] = (rid, score)
                last = k
                if len(best) == limit:
                    break
        cur.close()
        return best, last, total

    @staticmethod
    def _within_cwds(con: sqlite3.Connection, within: Callable[[str | None], bool], match: str) -> list[str] | None:
        """The distinct directories of the sessions this matches that `within` accepts, or None when there are too
        many to pass. Fewer matching steps than sessions: through the matching steps (a lookup each), else every
        session's (one pass over the table); either holds every matching session's directory."""
        rows = con.execute("SELECT count(*) FROM docs WHERE docs MATCH ?", (match,)).fetchone()[0]
        sessions = con.execute("SELECT coalesce(max(sid), 0) FROM sessions").fetchone()[0]  # sids count up
        if rows < sessions:
            cur = con.execute("SELECT DISTINCT s.cwd FROM docs CROSS JOIN sessions s ON s.sid = docs.rowid >> 24 "
                              "WHERE docs MATCH ? AND s.cwd IS NOT NULL", (match,))
        else:
            cur = con.execute("SELECT DISTINCT cwd FROM sessions WHERE cwd IS NOT NULL")
        cwds = [r[0] for r in cur]
        if len(cwds) > CWDS_MAX:
            return None
        kept = [c for c in cwds if within(c)]
        return kept if len(kept) <= VARS_MAX else None

    @classmethod
    def _ranked(cls, con: sqlite3.Connection, sql: str, args: list[Any], limit: int | None) -> tuple[list[Hit], int]:
        # no LIMIT: the sort is SQLite's either way, and the cursor is read only until the page is full (a LIMIT
        # too small for sessions with many matching steps would mean running the whole match again)
        cur = con.execute(sql, args)
        best: dict[int, tuple[int, float]] = {}
        total = 0
        for rid, score, n in cur:
            total = n
            sid = rid >> STEP_BITS
            if sid not in best:
                best[sid] = (rid, score)
                if limit is not None and len(best) == limit:
                    break
        cur.close()
        if not best:
            return [], 0
        return cls._page(con, best), total

    @staticmethod
    def _page(con: sqlite3.Connection, best: dict[int, tuple[int, float]]) -> list[Hit]:
        cols = "SELECT sid, runtime, id, parent_id, title, label, cwd, updated_at FROM sessions"
        cur = (con.execute(f"{cols} WHERE sid IN ({','.join('?' * len(best))})", list(best)) if len(best) <= 900
               else con.execute(cols))  # past SQLite's bound on variables: one pass over the table
        fields = {r[0]: r[1:] for r in cur}
        return [Hit(sid, rid, score, *fields[sid]) for sid, (rid, score) in best.items()]

    def snippet(self, match: str, rowid: int, tokens: int = 20) -> tuple[str, str, int | None] | None:
        """(text around the match with \\x02 … \\x03 around each matched word, kind, exit code)."""
        row = self._con_or_open().execute(
            "SELECT snippet(docs, 0, char(2), char(3), '…', ?), kind, code FROM docs WHERE docs MATCH ? AND rowid = ?",
            (tokens, match, rowid)).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def _con_or_open(self) -> sqlite3.Connection:
        return self.connection()

    def size(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += os.path.getsize(str(self.path) + suffix)
        return total


_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")


def file_uri(path: str | os.PathLike[str]) -> str:
    """Path(path).as_uri() of an absolute path, without pathlib: every byte but the unreserved ones and '/'
    percent-encoded (tests/test_search_fast.py compares them)."""
    raw = os.fspath(path)
    if not os.path.isabs(raw):
        raise ValueError("relative path can't be expressed as a file URI")
    return "file://" + "".join(chr(c) if c in _URI_SAFE else f"%{c:02X}" for c in os.fsencode(raw))


def sources_digest(sources: Sources) -> str:
    """The digest of every source's fingerprint; a str is such a digest already."""
    if isinstance(sources, str):
        return sources
    return digests(sources, ())[0]


def digests(sources: dict[tuple[str, str], str], runtimes: Iterable[str]) -> tuple[str, dict[str, str]]:
    """(`sources_digest`, each runtime's own digest): one sorted pass. Every runtime in `runtimes` gets one, a
    runtime without a source too (its digest says it had none)."""
    per = {rt: blake2b(digest_size=16) for rt in runtimes}
    for (rt, p), fp in sorted(sources.items()):
        own = per.get(rt)
        if own is None:
            own = per[rt] = blake2b(digest_size=16)
        own.update(f"{rt}\0{p}\0{fp}\n".encode("utf-8", "surrogatepass"))
    by_runtime = {rt: d.hexdigest() for rt, d in per.items()}
    return combined(by_runtime), by_runtime


EMPTY_DIGEST = blake2b(digest_size=16).hexdigest()  # a runtime without a source


def combined(by_runtime: Mapping[str, str]) -> str:
    """The whole digest from the runtimes' (one with no source left out: listing it or not is the same), so that
    a pass that discovered only the runtimes that moved gives the whole digest too (segue.search.engine)."""
    h = blake2b(digest_size=16)
    for rt, d in sorted(by_runtime.items()):
        if d != EMPTY_DIGEST:
            h.update(f"{rt}\0{d}\n".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


# The ranking key of a step (d: rid, score = bm25, u = its session's updated_at); bound to (now, half life)
_KEY = "score * (1.0 + pow(0.5, (max(0.0, ? - coalesce(u, 0.0)) / 86400.0) / ?))"
# Bounded ranking (SearchIndex._bounded): from how many matching steps, the sample's size (sessions per result,
# steps), and FTS5's bm25 constant k1. SEGUE_SEARCH_PRUNE=0 always ranks every matching step.
PRUNE_MIN_ROWS = 4000
PRUNE_SAMPLE_STEPS = 8
PRUNE_SAMPLE_ROWS = 2000
BM25_K1 = 1.2
# A --dir query decides each distinct directory of the index in Python, then lets SQLite rank only the sessions
# in the ones kept (as `s.cwd IN (...)`: at most VARS_MAX of them). Past CWDS_MAX directories, or with
# SEGUE_SEARCH_DIR_SQL=0, every match is ranked and then kept or not (segue.search.engine.answer).
CWDS_MAX = 5000
VARS_MAX = 900


def _kind_filter(con: sqlite3.Connection, where: Sequence[str] | None) -> tuple[str, str, list[Any], bool]:
    """(join, condition, its arguments, whether the condition is on the rowid alone) keeping the steps of these
    kinds. The rowid carries the kind's code (KIND_CODE): testing it reads nothing more than FTS5 gives.
    SEGUE_SEARCH_KIND_ROWID=0 reads the kind column instead: FTS5 reads an UNINDEXED column of a matching row
    through its own statement on the content table (every column of the row); reading `docs_content.c1` by its
    primary key costs half that. Only when the content table is FTS5's as this schema creates it (id, then c0 =
    text, c1 = kind, c2 = code); SEGUE_SEARCH_KIND_JOIN=0 always asks FTS5 (the reference)."""
    if not where:
        return "", "", [], False
    marks = ",".join("?" * len(where))
    if os.environ.get("SEGUE_SEARCH_KIND_ROWID", "1") != "0" and all(k in KIND_CODE for k in where):
        return "", f" AND (docs.rowid & {(1 << KIND_BITS) - 1}) IN ({marks})", [KIND_CODE[k] for k in where], True
    if os.environ.get("SEGUE_SEARCH_KIND_JOIN", "1") != "0" and [
            r[1] for r in con.execute("PRAGMA table_info(docs_content)")] == ["id", "c0", "c1", "c2"]:
        return " CROSS JOIN docs_content c ON c.id = docs.rowid", f" AND c.c1 IN ({marks})", list(where), False
    return "", f" AND docs.kind IN ({marks})", list(where), False


def _recency_enabled() -> bool:
    """SEGUE_SEARCH_RECENCY=0 joins the steps to `sessions` itself (the reference)."""
    return os.environ.get("SEGUE_SEARCH_RECENCY", "1") != "0"


def _dir_sql_enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_DIR_SQL", "1") != "0"


def _keep(hits: list[Hit], within: Callable[[str | None], bool]) -> list[Hit]:
    """The hits whose directory `within` accepts, in order; asked once per directory."""
    seen: dict[str | None, bool] = {}
    kept = []
    for h in hits:
        if h.cwd not in seen:
            seen[h.cwd] = within(h.cwd)
        if seen[h.cwd]:
            kept.append(h)
    return kept


def _group_enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_GROUP", "1") != "0"


def _best_steps(rows: Iterable[tuple[int, float | None, float | None]], now: float, hl: float, limit: int | None
                ) -> tuple[list[tuple[int, int, float, float]], int]:
    """What `ORDER BY _KEY, -coalesce(u, 0.0), rid >> 24, score, rid`, keeping each session's first step, gives
    (ranked's rule), without SQLite sorting every matching step: ([(sid, rid, score, key)…] best first, at most
    `limit`; how many sessions the rows hold). rows: (rowid, bm25 or None, the session's updated_at); a None score
    is counted, never ranked. The key is positive per session and monotonic in the score, so a session's first
    step is its lowest score (then rowid), and sessions rank by that step's key, computed as _KEY computes it:
    the same IEEE double operations in the same order, with libm's pow as SQLite's (or `_math`'s) pow. Ties go as
    in SQL: the more recent, then the lower sid (unique). SEGUE_SEARCH_GROUP=0 lets SQLite sort (the reference;
    tests/test_search_rank.py compares them)."""
    best: dict[int, tuple[int, float, float | None]] = {}
    seen: set[int] = set()
    get = best.get
    for rid, score, u in rows:
        sid = rid >> STEP_BITS
        if score is None:
            seen.add(sid)
            continue
        b = get(sid)
        if b is None or score < b[1] or (score == b[1] and rid < b[0]):
            best[sid] = (rid, score, u)
    pw = math.pow
    keyed = []
    for sid, (rid, score, u) in best.items():
        v = 0.0 if u is None else u
        keyed.append((score * (1.0 + pw(0.5, (max(0.0, now - v) / 86400.0) / hl)), -v, sid, rid, score))
    if limit is not None and limit < len(keyed):
        import heapq

        keyed = heapq.nsmallest(limit, keyed)
    else:
        keyed.sort()
    seen.update(best)
    return [(sid, rid, score, k) for k, _v, sid, rid, score in keyed], len(seen)


def _work_ms(todo: Sequence[tuple[Session, str]], shared: Mapping[str, int]) -> float:
    """A rough cost of reading `todo` (counted only until it reaches PARALLEL_WORK_MS): a fixed cost per session
    and, for a session with its own file, that file's size (a database holds many sessions: its size is not
    theirs)."""
    total = 0.0
    for s, _key in todo:
        total += WORK_MS_PER_SESSION
        if shared.get(s.store_path, 0) <= 1:
            with contextlib.suppress(OSError, ValueError):
                total += WORK_MS_PER_MB * os.stat(s.store_path).st_size / 1e6
        if total >= PARALLEL_WORK_MS:
            break
    return total


def _prune_enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_PRUNE", "1") != "0"


def _bm25_bound(con: sqlite3.Connection, phrases: list[str], hits: int | None) -> float | None:
    """Above minus any step's bm25 for these phrases (each phrase adds less than idf × (k1 + 1)), with FTS5's
    own row count (its averages record) and each phrase's matching rows; None when either cannot be read."""
    n_rows = _fts_row_count(con)
    if n_rows is None:
        return None
    total = 0.0
    for ph in phrases:
        n = hits if hits is not None else con.execute("SELECT count(*) FROM docs WHERE docs MATCH ?",
                                                      (ph,)).fetchone()[0]
        if n > n_rows:
            return None
        idf = math.log((n_rows - n + 0.5) / (n + 0.5))
        total += max(idf, 1e-6)  # as FTS5 floors it
    return total * (BM25_K1 + 1.0) * (1.0 + 1e-9)  # and a margin for rounding


def _fts_row_count(con: sqlite3.Connection) -> int | None:
    """The row count FTS5's bm25 uses: the first varint of the table's averages record (docs_data, id 1)."""
    row = con.execute("SELECT block FROM docs_data WHERE id = 1").fetchone()
    if row is None or not isinstance(row[0], bytes) or not row[0]:
        return None
    b, v = row[0], 0
    for i in range(min(len(b), 9)):  # SQLite's varint: 7 bits a byte, big-endian; a 9th byte gives all 8
        if i == 8:
            return (v << 8) | b[i]
        v = (v << 7) | (b[i] & 0x7F)
        if not b[i] & 0x80:
            return v if v > 0 else None
    return None


def _math(con: sqlite3.Connection) -> None:
    """`pow` for the ranking: SQLite's own when built with its math functions (3.35+), else Python's."""
    try:
        con.execute("SELECT pow(0.5, 1.0)").fetchone()
    except sqlite3.OperationalError:
        con.create_function("pow", 2, math.pow, deterministic=True)


def _last(sid: int) -> int:
    return (sid << STEP_BITS) | STEP_MASK


def _rowid(base: int, i: int, kind: str) -> int:
    return base + (i << KIND_BITS) + KIND_CODE[kind]


def step_of(rowid: int) -> int:
    """The step index (0-based) a docs rowid names."""
    return (rowid & STEP_MASK) >> KIND_BITS


def _insert(con: sqlite3.Connection, rows: list[tuple[int, str, str, int | None]]) -> None:
    if rows:
        con.executemany("INSERT INTO docs(rowid, text, kind, code) VALUES (?, ?, ?, ?)", rows)


class Provenance:
    """Where a refresh's listing found its sessions: each runtime's sources (those whose discovery ran and
    succeeded in this pass), the source each session was kept from, the sessions found in two sources."""

    __slots__ = ("origins", "sources", "twice")

    def __init__(self, sources: Mapping[str, Sequence[Any]], origins: Mapping[tuple[str, str], str],
                 twice: Iterable[tuple[str, str]]) -> None:
        self.sources, self.origins, self.twice = sources, origins, set(twice)


def _keep_found(con: sqlite3.Connection, found: Provenance | None, scope: Sequence[str] | None) -> None:
    """The sources table and the sessions found twice, as this refresh found them. Without `found` every kept
    source goes (a refresh that cannot say where its sessions came from leaves nothing a patch could trust)."""
    if found is None:
        con.execute("DELETE FROM sources")
        return
    inside = None if scope is None else set(scope)
    for rt, srcs in found.sources.items():
        if inside is not None and rt not in inside:
            continue
        con.execute("DELETE FROM sources WHERE runtime = ?", (rt,))
        con.executemany("INSERT OR REPLACE INTO sources VALUES (?, ?, ?)",
                        [(rt, src.path, repr(src.fingerprint)) for src in srcs])
    if inside is None:
        con.execute("DELETE FROM twice")
    else:
        con.executemany("DELETE FROM twice WHERE runtime = ?", [(rt,) for rt in inside])
    con.executemany("INSERT OR IGNORE INTO twice VALUES (?, ?)",
                    [k for k in found.twice if inside is None or k[0] in inside])


def _may_go_on(mark: bytes | None, learned_at: int | None, old_by: str, redacted_by: str) -> bool:
    """A session's read may go on from its stored mark only where the steps before it taught its redaction
    nothing, by the same redaction: its Redactor then knows at the mark what a read from the start would."""
    return mark is not None and learned_at is None and bool(redacted_by) and old_by == redacted_by


_INSERT_SESSION = ("INSERT INTO sessions(sid, runtime, id, parent_id, title, label, cwd, updated_at, store_path, key, "
                   f"hashes, redacted_by, learned_at, mark, source) VALUES ({', '.join('?' * 15)})")


_INSERT_RECENCY = "INSERT INTO recency VALUES (?, ?)"
_SID, _UPDATED_AT = 0, 7  # in _INSERT_SESSION's values


def _new_sessions(con: sqlite3.Connection, sessions: list[tuple[Any, ...]]) -> None:
    """New sessions' rows (`_INSERT_SESSION`'s values) and their `recency` rows: two statements for the lot."""
    con.executemany(_INSERT_SESSION, sessions)
    con.executemany(_INSERT_RECENCY, [(s[_SID], s[_UPDATED_AT]) for s in sessions])


class _Sids:
    """Session ids by position in a build's work, in one array (a dict of 32,000 int pairs is ~3 MB held through
    the build); 0 is no id (ids start at 1; a new session's is negative)."""

    __slots__ = ("ids",)

    def __init__(self, n: int) -> None:
        from array import array

        self.ids = array("q", bytes(8 * n))

    def __setitem__(self, pos: int, sid: int) -> None:
        self.ids[pos] = sid

    def __getitem__(self, pos: int) -> int:
        sid = self.ids[pos]
        if not sid:
            raise KeyError(pos)
        return sid

    def get(self, pos: int) -> int | None:
        return (self.ids[pos] or None) if 0 <= pos < len(self.ids) else None


class _Batch:
    """New sessions' rows, written many thousand at a time (one statement per table, not two per session), in
    rowid order. Always flushed before a commit, so a session and its rows are committed together.

    In rowid order because FTS5 writes its pending terms out as a new segment whenever a rowid is lower than
    the one before it: workers answer out of order (ids are handed out in the build's order), and the 8k
    build's 265 steps back made as many small segments to merge again."""

    def __init__(self) -> None:
        self.docs: list[tuple[int, str, str, int | None]] = []
        self.sessions: list[tuple[Any, ...]] = []
        self.chars = 0

    def add(self, con: sqlite3.Connection, docs: list[tuple[int, str, str, int | None]], session: tuple[Any, ...],
            chars: int | None = None) -> None:
        """`chars`: the docs' characters of text, when the caller has counted them (Prepared.chars)."""
        self.docs += docs
        self.sessions.append(session)
        self.chars += chars if chars is not None else sum(len(d[1]) for d in docs)
        if len(self.docs) >= BATCH_ROWS or self.chars >= BATCH_CHARS:
            self.flush(con)

    def flush(self, con: sqlite3.Connection) -> None:
        docs, sessions = self.docs, self.sessions
        self.docs, self.sessions, self.chars = [], [], 0
        docs.sort(key=_FIRST)
        _insert(con, docs)
        if sessions:
            _new_sessions(con, sessions)


_FIRST = operator.itemgetter(0)  # a docs row's rowid


def _key(s: Session, shared_store: bool) -> str:
    """What the session looked like: unchanged key = nothing to read. A store shared by many sessions (a
    database) changes whenever any of them does, so those are keyed on the session's own update time."""
    if shared_store:
        stamp: Any = None
    else:
        try:
            st = os.stat(s.store_path)
            stamp = (st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
    # hashed: the title is session text, and the index holds only redacted text
    raw = repr((stamp, s.updated_at, s.title, s.parent_id, s.cwd, s.first_request is not None))
    return blake2b(raw.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


# A redaction marker is stored as characters that are no word, otherwise "password" would find every
# `[REDACTED:password-prose]`: HIDDEN, the rule id with each character moved to the Braille block (symbols, which
# FTS5's unicode61 separates words at), HIDDEN. Snippets show it back as briefs and listings do (`shown_markers`).
HIDDEN = "\u2591"
_TO_BRAILLE = {c: 0x2800 + c for c in b"-0123456789abcdefghijklmnopqrstuvwxyz"}  # what MARKER_RE's ids hold
_FROM_BRAILLE = {v: k for k, v in _TO_BRAILLE.items()}
_HIDDEN_RE = re.compile(f"{HIDDEN}([{''.join(map(chr, _FROM_BRAILLE))}]{{1,64}}){HIDDEN}")


def hide_markers(text: str) -> str:
    if "[REDACTED:" not in text:
        return text
    from segue.redact import MARKER_RE

    return MARKER_RE.sub(lambda m: HIDDEN + m.group()[10:-1].translate(_TO_BRAILLE) + HIDDEN, text)


def shown_markers(text: str) -> str:
    """The stored text's markers as `[REDACTED:<rule-id>]` again; a lone HIDDEN (a shade in a progress bar) stays."""
    if HIDDEN not in text:
        return text
    return _HIDDEN_RE.sub(lambda m: "[REDACTED:" + m.group(1).translate(_FROM_BRAILLE) + "]", text)


def safe_text(text: str) -> str:
    """Lone surrogates (JSON allows them; SQLite cannot store them) become U+FFFD."""
    if text.isascii():  # no surrogate is ASCII: nothing to replace, without encoding a copy
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _hash(step: Step) -> bytes:
    # one encode of the joined text: the same bytes as encoding both parts (the "\0" ends the first, so no
    # surrogate pair spans them; surrogatepass encodes each code point on its own anyway)
    return blake2b(f"{step.kind}\0{step.exit_code}\0{step.path}\0{step.text}".encode("utf-8", "surrogatepass"),
                   digest_size=8).digest()


# Every character quote.clean changes or removes: \r, NUL, the control characters it strips, and every escape
# sequence begins with one of them (ESC, CSI and the 8-bit introducers are all in \x01-\x1f or \x7f-\x9f)
_UNCLEAN_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def cleaned(text: str) -> str:
    """quote.clean(text), skipped when the text holds none of the characters it acts on (an exact gate:
    SEGUE_FAST_PATHS=0 or tests/test_search_write.py compare it with clean() itself)."""
    return clean(text) if _UNCLEAN_RE.search(text) is not None or not _FAST_CLEAN else text


_FAST_CLEAN = os.environ.get("SEGUE_FAST_PATHS", "1").strip().lower() not in ("0", "off", "false", "no")


def _source(step: Step) -> tuple[str, str] | None:
    """(kind as indexed, its raw text) of a step a brief shows, or None for what search never holds."""
    kind = step.kind
    if kind in ("request", "message", "command"):
        return kind, step.text
    if kind == "edit":
        return "file", step.path or step.text
    return None  # tool calls and subagent tasks: not requests, messages, commands or files


def indexed_text(kind: str, text: str, redact: Callable[[str, int], str]) -> str | None:
    """The text as the index stores it (cleaned, redacted with the brief's cap, markers hidden), None if blank."""
    if not text or not text.strip():
        return None
    red = hide_markers(redact(safe_text(cleaned(text)), CAPS[kind]))
    return red if red.strip() else None


def _doc(step: Step, redact: Callable[[str, int], str],
         text_of: Callable[[str, str], str | None] | None = None) -> tuple[str, str, int | None] | None:
    """(indexed text, kind, exit code) of a step a brief shows, or None for what search never holds.
    `text_of(kind, text)` is `indexed_text` with `redact` (build.Distinct: each distinct text once)."""
    src = _source(step)
    if src is None:
        return None
    kind, text = src
    red = indexed_text(kind, text, redact) if text_of is None else text_of(kind, text)
    if red is None:
        return None
    return red, kind, step.exit_code if kind == "command" else None
