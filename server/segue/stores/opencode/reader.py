"""OpenCode reader: `$XDG_DATA_HOME/opencode` (else `~/.local/share/opencode`), read-only.

Generations (runtime-stores.md §3):
- E2 (1.2 - 1.18): SQLite `opencode*.db` (+ `OPENCODE_DB`), tables `session`, `message`, `part`; the
  message/part JSON lives in their `data` column (without the ids).
- E3 (2.x): `session_v2` + `session_message(session_id, type, seq, data)`. Read only when `session_v2`
  exists and `session_message` has rows (1.18 already creates an empty `session_message`); never both.
- E1 (~0.4 - 1.1): JSON files `storage/session/<project>/<ses>.json`, `storage/message/<ses>/<msg>.json`,
  `storage/part/<msg>/<prt>.json`. Left over after the one-time import (which could be skipped), so they
  are merged with the DB; the DB wins on the same id (`locator["priority"]`). 1.18.33 neither imports such
  leftovers into a fresh DB nor reopens them (`run --session` says "Session not found"): JSON-only
  sessions list with resume_blocker "cli_cannot_reopen".
- E0 (early 0.x): `project/<dir>/storage/session/{info/<ses>.json, message/<ses>/<msg>.json,
  part/<ses>/<msg>/<prt>.json}`; the oldest messages carry their parts inline (`parts[]`, `metadata`).

OpenCode does not store the git branch: `branch` is always None here.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from segue.model import ReadStats, Session, Step, parse_time
from segue.replay import blake2b  # (_blake2's: hashlib would load OpenSSL)
from segue.stores.base import (
    Location,
    Reader,
    Source,
    SqliteUnavailable,
    fingerprint,
    open_sqlite_readonly,
    sqlite_fingerprint,
)
from segue.stores.text import OUTPUT_KEEP, STEP_TEXT, fast_paths
from segue.stores.text import cap_bytes as cap_text

RUNTIME = "opencode"
PRIO_DB, PRIO_E1, PRIO_E0 = 30, 20, 10

FIRST_MESSAGES = 4  # a summary looks for the first request among each session's first messages
MAX_JSON_FILE = 64 * 1024 * 1024  # a legacy part/message file larger than this is skipped and counted
BIG_PART = 256 * 1024  # DB parts larger than this are reduced in SQL, never decoded whole in Python

_DEFAULT_TITLE_RE = re.compile(r"^(?:New session|Child session) - \d{4}-\d\d-\d\dT[\d:.]+Z?$")
_BARE_QUOTE_RE = re.compile(r'(?<!\\)"')
_TASK_ID_RE = re.compile(r'(?:<task id="|task_id: )(ses_[0-9A-Za-z]+)')

# Tools that only read or search: a brief leaves them out.
_READ_TOOLS = frozenset({"read", "glob", "grep", "list", "ls", "todoread", "codesearch", "lsp_diagnostics",
                         "lsp_hover", "view"})
_SHELL_TOOLS = frozenset({"bash", "shell"})
_EDIT_TOOLS = frozenset({"write", "edit", "multiedit", "patch", "apply_patch"})
_SKIP_PART_TYPES = frozenset({"reasoning", "step-start", "step-finish", "snapshot", "file", "retry", "agent",
                              "compaction", "source-url"})


class OpencodeReader(Reader):
    runtime = RUNTIME

    # ------------------------------------------------------------------------------------------- places

    def data_dir(self) -> Path:
        xdg = self.env.path("XDG_DATA_HOME")
        return (xdg if xdg is not None else self.env.home / ".local" / "share") / "opencode"

    def _env_db(self) -> Path | None:
        """`OPENCODE_DB`: absolute as-is, relative to the data dir; `:memory:` names no file."""
        v = self.env.get("OPENCODE_DB")
        if not v or v == ":memory:":
            return None
        p = Path(v).expanduser()
        return p if p.is_absolute() else self.data_dir() / p

    def locations(self) -> list[Location]:
        data = self.data_dir()
        out = [Location(str(data), data.is_dir(), "set XDG_DATA_HOME (OpenCode reads $XDG_DATA_HOME/opencode)")]
        dbs = self._db_paths() or [data / "opencode.db"]
        env_db = self._env_db()
        if env_db is not None and env_db not in dbs:
            dbs.append(env_db)  # named but missing: still worth showing where we looked
        out += [Location(str(p), p.exists(), "set OPENCODE_DB (absolute, or relative to the data dir)")
                for p in dbs]
        for sub in ("storage", "project"):
            p = data / sub
            out.append(Location(str(p), p.is_dir(), "legacy JSON store under the data dir (XDG_DATA_HOME)"))
        return out

    def _db_paths(self) -> list[Path]:
        data = self.data_dir()
        found: list[Path] = []
        with contextlib.suppress(OSError), os.scandir(data) as it:
            for e in it:
                # `opencode.db`, `opencode-<channel>.db`; never the `-wal`/`-shm` side files
                if e.name.startswith("opencode") and e.name.endswith(".db"):
                    found.append(Path(e.path))
        env_db = self._env_db()
        if env_db is not None and (env_db.exists() or env_db.is_symlink()):
            found.append(env_db)
        out: list[Path] = []
        seen: set[str] = set()
        for p in sorted(found):
            key = os.path.realpath(p)
            if key not in seen:
                seen.add(key)
                out.append(p)
        return out

    def search_steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        """A database session through the search-only walk (`opencode/search.py`) while fast paths are on."""
        if session.locator.get("kind") == "db" and fast_paths(self.env):
            from segue.stores.opencode.search import db_search_steps

            return db_search_steps(session, stats)
        return self.steps(session, stats)

    # ------------------------------------------------------------------------------------------ sources

    def sources(self) -> Iterator[Source]:
        for db in self._db_paths():
            yield Source(RUNTIME, str(db), sqlite_fingerprint(db), "db")
        storage = self.data_dir() / "storage"
        # E1: storage/session/<project>/<ses>.json (quarantine/ and `.tmp` files are never session files)
        for proj in _subdirs(storage / "session"):
            for f in _json_files(proj):
                path = os.path.join(proj, f)
                yield Source(RUNTIME, path, fingerprint(path, _Layout(path, "e1").message_dir), "e1")
        # E0: project/<dir>/storage/session/info/<ses>.json
        for pdir in _subdirs(self.data_dir() / "project"):
            info = os.path.join(pdir, "storage", "session", "info")
            for f in _json_files(info):
                ses = f[:-5]
                yield Source(RUNTIME, os.path.join(info, f),
                             fingerprint(os.path.join(info, f),
                                         os.path.join(pdir, "storage", "session", "message", ses)), "e0")

    def refingerprint(self, moved: set[str], known: set[str]) -> list[Source] | None:
        # a database (or its -wal, there before and now) that grew: its one source; a session file is left to a
        # discovery
        dbs = {str(db) for db in self._db_paths()}
        out: dict[str, Source] = {}
        for p in sorted(moved):
            db = p[:-4] if p.endswith("-wal") and p[:-4] in dbs else p
            if db not in dbs or db not in known:
                return None
            out.setdefault(db, Source(RUNTIME, db, sqlite_fingerprint(db), "db"))
        return list(out.values())

    # ---------------------------------------------------------------------------------------- summaries

    def summarize_delta(self, source: Source, previous: list[Session] | None, state: Any
                        ) -> tuple[list[Session], list[Session], Any]:
        """The listing's incremental read (`_summarize_db_delta`); other sources are one session each."""
        if source.kind == "db":
            return _summarize_db_delta(source.path, previous, state)
        out = self.summarize(source)
        return out, out, None

    def summarize(self, source: Source) -> list[Session]:
        if source.kind == "db":
            return _summarize_db(source.path)
        if source.kind in ("e1", "e0"):
            return [_summarize_json(source.path, source.kind)]
        raise ValueError(f"unknown OpenCode source kind {source.kind!r}")

    def refresh_live(self, sessions: list[Session]) -> None:
        # Live is always False: nothing in the store ties a session to a process. The state dir's
        # `locks/<hash>.lock/{meta.json,heartbeat}` (1.18.33) are generic file locks: meta.json holds
        # {token, pid, hostname, createdAt} but no session id, and a run left one behind after it exited
        # while a later, running session took none.
        for s in sessions:
            s.live = False

    def exists(self, session: Session) -> bool:
        kind = session.locator.get("kind")
        if kind in ("db", "db3"):
            table = "session_v2" if kind == "db3" else "session"
            try:
                with _open_db(session.store_path) as con:
                    row = con.execute(f"SELECT 1 FROM {table} WHERE id = ?", (session.id,)).fetchone()
                return row is not None
            except (SqliteUnavailable, OSError, sqlite3.Error):
                return os.path.exists(session.store_path)
        return os.path.isfile(session.store_path)

    # -------------------------------------------------------------------------------------------- steps

    def steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        kind = session.locator.get("kind")
        turns = _Turns(session.cwd)
        if kind == "db":
            yield from _db_steps(session, stats, turns)
        elif kind == "db3":
            yield from _db3_steps(session, stats, turns)
        elif kind in ("e1", "e0"):
            yield from _json_steps(session, stats, turns)
        yield from turns.flush()


# ============================================================================================ text helpers


def unquote_prompt(text: str) -> str:
    """Undo `opencode run`'s quoting: an argv word with a space is stored as '"' + word + '"' with its
    inner double quotes escaped as \\". Only a text that is exactly one such word is unwrapped."""
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        inner = text[1:-1]
        if not _BARE_QUOTE_RE.search(inner):
            return inner.replace('\\"', '"')
    return text




def _real_title(title: Any) -> str | None:
    if not isinstance(title, str) or not title.strip() or _DEFAULT_TITLE_RE.match(title.strip()):
        return None
    return cap_text(title.strip())


def _title_from_request(req: str | None) -> str | None:
    if not req:
        return None
    line = next((ln.strip() for ln in req.splitlines() if ln.strip()), "")
    return line[:200] or None


def _model_name(value: Any) -> str | None:
    """`session.model` JSON ({id, providerID, variant}) or a message's {modelID} / model{modelID}."""
    if isinstance(value, str):
        if value.startswith("{"):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        else:
            return value or None
    if isinstance(value, dict):
        for k in ("modelID", "id"):
            if isinstance(value.get(k), str) and value[k]:
                return value[k]
    return None


def _new_session(sid: str, store_path: str, locator: dict[str, Any]) -> Session:
    return Session(runtime=RUNTIME, id=sid, store_path=store_path, locator=locator)


def _finish(s: Session, title: Any, first: str | None, fallback_title: Any = None) -> None:
    """Common tail of every generation: first request, title, subagent blocker."""
    req = cap_text(unquote_prompt(first)) if first else None
    if req is None:
        req = _real_title(fallback_title) or _real_title(title)
    s.first_request = req
    s.title = _real_title(title) or _title_from_request(req)
    s.branch = None  # not stored by OpenCode
    s.live = False  # see OpencodeReader.refresh_live
    if s.parent_id:
        s.resumable, s.resume_blocker = False, "subagent"
    else:
        s.resumable, s.resume_blocker = True, None


# ================================================================================================= SQLite


# Inside `shared_connections()` (search indexing reads every session of a database in turn), `_open_db` opens
# each database once per thread and hands the same connection to every session: one snapshot, not one per
# session (an in-memory copy per session made a build quadratic in the database's size).
_SHARED = threading.local()


@contextlib.contextmanager
def shared_connections() -> Iterator[None]:
    outer = getattr(_SHARED, "scope", None)
    with contextlib.ExitStack() as stack:
        _SHARED.scope = ({}, stack)
        try:
            yield
        finally:
            _SHARED.scope = outer


@contextlib.contextmanager
def _open_db(path: str) -> Iterator[sqlite3.Connection]:
    scope = getattr(_SHARED, "scope", None)
    if scope is None:
        with _open_db_once(path) as con:
            yield con
        return
    cons, stack = scope
    con = cons.get(path)
    if con is None:
        con = cons[path] = stack.enter_context(_open_db_once(path))
    yield con


@contextlib.contextmanager
def _open_db_once(path: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection (`open_sqlite_readonly`: nothing is created next to the DB).

    A `-wal` without its `-shm` (a copied or crashed store) would make SQLite create the `-shm` in the store
    even read-only, so such a pair is read from a private copy in a temporary directory instead.
    """
    try:
        st = os.stat(path)
    except OSError as e:
        raise SqliteUnavailable(f"{path}: {e.strerror or e}") from e
    if not stat.S_ISREG(st.st_mode):
        raise SqliteUnavailable(f"{path}: not a regular file")
    with contextlib.ExitStack() as stack:
        target = path
        if os.path.exists(path + "-wal") and not os.path.exists(path + "-shm"):
            import shutil  # (here: most listings never copy, and these imports cost a patched one milliseconds)
            import tempfile

            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="segue-opencode-"))
            target = os.path.join(tmp, "opencode.db")
            try:
                shutil.copyfile(path, target)
                shutil.copyfile(path + "-wal", target + "-wal")
            except OSError as e:
                raise SqliteUnavailable(f"{path}: {e.strerror or e}") from e
        con = open_sqlite_readonly(target)
        # invalid UTF-8 in a text column must not make a whole query fail
        con.text_factory = lambda b: b.decode("utf-8", "replace")
        try:
            yield con
        finally:
            con.close()


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def _use_v2(con: sqlite3.Connection, tables: set[str]) -> bool:
    if "session_v2" not in tables or "session_message" not in tables:
        return False
    return con.execute("SELECT 1 FROM session_message LIMIT 1").fetchone() is not None


def _summarize_db(path: str) -> list[Session]:
    with _open_db(path) as con:
        try:
            tables = _tables(con)
            if _use_v2(con, tables):
                return _summarize_v2(con, path)
            if "session" not in tables:
                return []  # a DB OpenCode created but never migrated, or another program's file
            return _summarize_v1(con, path, tables)
        except sqlite3.Error as e:
            raise SqliteUnavailable(f"{path}: {e}") from e


def _select_cols(have: set[str], want: Iterable[str]) -> str:
    out = []
    for c in want:
        if c not in have:
            out.append(f"NULL AS {c}")
        elif c == "model":  # JSON {id, providerID, variant}: decoded in SQL, not once per row in Python
            out.append("CASE WHEN json_valid(model) THEN coalesce(json_extract(model, '$.id'), "
                       "json_extract(model, '$.modelID')) WHEN model LIKE '{%' THEN NULL ELSE model END")
        else:
            out.append(c)
    return ", ".join(out)


_SESSION_COLS = ("id", "parent_id", "directory", "title", "model", "agent", "time_created", "time_updated",
                 "time_archived")

# The user messages `u` (a CTE of id, session_id, data) with their text parts, in the row shape below.
_TEXTS_OF_U = """
SELECT u.session_id, json_extract(u.data, '$.summary.title'),
       coalesce(json_extract(u.data, '$.model.modelID'), json_extract(u.data, '$.modelID')),
       json_extract(p.data, '$.text'), json_extract(p.data, '$.synthetic'), json_extract(p.data, '$.ignored')
FROM u LEFT JOIN part p ON p.message_id = u.id AND instr(p.data, '"text"') > 0
     AND CASE WHEN json_valid(p.data) THEN json_extract(p.data, '$.type') END = 'text'
"""

# The first few messages of every session (by time_created, id, through the session/time index), the user
# ones among them, and their text parts: one set-based query for all sessions. Row shape shared with
# _DEEP_TEXT_SQL: (session, summary title, model, text, synthetic, ignored). json_extract raises on damaged
# JSON, so every filter checks json_valid first inside a CASE (AND gives no evaluation order guarantee).
_FIRST_TEXT_SQL = """
WITH r AS (
  SELECT id, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY time_created, id) AS rn
  FROM message{where}
), u AS (
  SELECT m.id, m.session_id, r.rn, m.data FROM r JOIN message m ON m.id = r.id
  WHERE r.rn <= ? AND instr(m.data, '"user"') > 0
    AND CASE WHEN json_valid(m.data) THEN json_extract(m.data, '$.role') END = 'user'
)
""" + _TEXTS_OF_U + "ORDER BY u.session_id, u.rn, p.id\n"

# The same over the session table's sessions (the only ones a summary looks up): each session's first messages
# found by a seek in the session/time index instead of numbering every message of the database, and joined
# by rowid. Used only where `_MSG_KEYS_SQL` ran, which proves the table has rowids; (time_created, id) is the
# order ROW_NUMBER counts in, so the rows come out in the same order.
_FIRST_TEXT_SEEK_SQL = """
WITH u AS (
  SELECT m.id, m.session_id, m.time_created AS t, m.data FROM (SELECT id AS sid FROM session) s
  JOIN message m ON m.rowid IN (SELECT rowid FROM message WHERE session_id = s.sid
                                ORDER BY time_created, id LIMIT ?)
  WHERE instr(m.data, '"user"') > 0
    AND CASE WHEN json_valid(m.data) THEN json_extract(m.data, '$.role') END = 'user'
)
""" + _TEXTS_OF_U + "ORDER BY u.session_id, u.t, u.id, p.id\n"

# The same for chosen sessions over all their user messages (a first request deeper than FIRST_MESSAGES).
_DEEP_TEXT_SQL = """
SELECT m.session_id, json_extract(m.data, '$.summary.title'), json_extract(m.data, '$.model.modelID'),
       json_extract(p.data, '$.text'), json_extract(p.data, '$.synthetic'), json_extract(p.data, '$.ignored')
FROM message m LEFT JOIN part p ON p.message_id = m.id AND instr(p.data, '"text"') > 0
     AND CASE WHEN json_valid(p.data) THEN json_extract(p.data, '$.type') END = 'text'
WHERE m.session_id IN ({ids}) AND instr(m.data, '"user"') > 0
  AND CASE WHEN json_valid(m.data) THEN json_extract(m.data, '$.role') END = 'user'
ORDER BY m.session_id, m.time_created, m.id, p.id
"""


def _session_rows(con: sqlite3.Connection) -> list[tuple[Any, ...]]:
    cols = _columns(con, "session")
    return con.execute(f"SELECT {_select_cols(cols, _SESSION_COLS)} FROM session").fetchall()


def _summarize_v1(con: sqlite3.Connection, path: str, tables: set[str], rows: list[tuple[Any, ...]] | None = None,
                  only: list[str] | None = None, msg_keys: dict[str, tuple[Any, ...]] | None = None
                  ) -> list[Session]:
    """Sessions of `rows` (default: every session row). `only`: the ids whose messages to read (an incremental
    read of a few sessions); None reads every session's messages in set-based queries. A session's summary
    depends on its own row, messages and parts only, so both give the same summary of the same session.
    `msg_keys`: `_MSG_KEYS_SQL`'s rows of this connection by session (count and newest time first), when the
    caller has them (and `rows` are all the session rows): the same figures the per-session count query gives,
    not scanned for again, and the first messages sought per session (`_FIRST_TEXT_SEEK_SQL`)."""
    rows = _session_rows(con) if rows is None else rows
    firsts: dict[str, str] = {}
    summary_titles: dict[str, str] = {}
    models: dict[str, str] = {}
    last: dict[str, int] = {}
    counts: dict[str, int] = {}
    has_msgs = "message" in tables and "part" in tables
    if has_msgs:
        if only is None and msg_keys is not None:
            for sid, (n, t, *_rest) in msg_keys.items():
                counts[sid], last[sid] = n, t
            _collect_first(con.execute(_FIRST_TEXT_SEEK_SQL, (FIRST_MESSAGES,)), firsts,
                           summary_titles, models)
        elif only is None:
            for sid, n, t in con.execute(
                    "SELECT session_id, count(*), max(time_created) FROM message GROUP BY session_id"):
                counts[sid], last[sid] = n, t
            _collect_first(con.execute(_FIRST_TEXT_SQL.format(where=""), (FIRST_MESSAGES,)), firsts,
                           summary_titles, models)
        else:
            for i in range(0, len(only), 500):
                chunk = only[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for sid, n, t in con.execute("SELECT session_id, count(*), max(time_created) FROM message "
                                             f"WHERE session_id IN ({marks}) GROUP BY session_id", chunk):
                    counts[sid], last[sid] = n, t
                sql = _FIRST_TEXT_SQL.format(where=f" WHERE session_id IN ({marks})")
                _collect_first(con.execute(sql, (*chunk, FIRST_MESSAGES)), firsts, summary_titles, models)
        deep = [r[0] for r in rows if r[0] not in firsts and counts.get(r[0], 0) > FIRST_MESSAGES]
        for i in range(0, len(deep), 500):
            chunk = deep[i:i + 500]
            sql = _DEEP_TEXT_SQL.format(ids=",".join("?" * len(chunk)))
            _collect_first(con.execute(sql, chunk), firsts, summary_titles, models)
    else:
        deep = []
    deep_set = set(deep)
    out: list[Session] = []
    for sid, parent, directory, title, model, _agent, created, updated, _archived in rows:
        if not isinstance(sid, str) or not sid:
            continue
        s = _new_session(sid, path, {"kind": "db", "priority": PRIO_DB, "db": path})
        s.parent_id = parent or None
        s.cwd = directory or None
        s.started_at = parse_time(created)
        s.updated_at = max((t for t in (parse_time(updated), parse_time(last.get(sid))) if t), default=None)
        s.model = model if isinstance(model, str) and model else models.get(sid)
        first = firsts.get(sid)
        if sid in deep_set and first is not None:
            s.locator["read_deep"] = True
        if first is None and counts.get(sid):
            s.problems.append("no user request found in its messages")
        _finish(s, title, first, summary_titles.get(sid))
        out.append(s)
    if has_msgs:
        _fill_missing_models(con, out)
    return out


# --- the incremental read: a key per session row, from indexed columns only

DELTA_VERSION = 2  # 2: the per-session message/part figures and the tables' watermarks kept in the state
# Per session: how many messages/parts, the newest message time, the highest rowid (a row replaced by a new one
# moves it: SQLite gives a new row the table's highest rowid + 1).
_MSG_KEYS_SQL = "SELECT session_id, count(*), max(time_created), max(rowid) FROM message GROUP BY session_id"
_PART_KEYS_SQL = "SELECT session_id, count(*), max(rowid) FROM part GROUP BY session_id"
# The same figures of the rows added since a watermark (a rowid range of the table itself: what was added, not
# the table), and the watermark: the row count and the highest row (rowid, id).
# NOT INDEXED: else SQLite serves the GROUP BY from the (session_id, ...) index and scans all of it.
_MSG_NEW_SQL = ("SELECT session_id, count(*), max(time_created), max(rowid) FROM message NOT INDEXED "
                "WHERE rowid > ? GROUP BY session_id")
_PART_NEW_SQL = "SELECT session_id, count(*), max(rowid) FROM part NOT INDEXED WHERE rowid > ? GROUP BY session_id"
_TOP_SQL = "SELECT rowid, id FROM {t} ORDER BY rowid DESC LIMIT 1"
_AT_SQL = "SELECT id FROM {t} WHERE rowid = ?"
# The per-session figures from the previous read plus the rows added since (`_grown`) instead of a scan of the
# message and part indexes; False (or SEGUE_FAST_PATHS=0, which reads a changed database whole) always scans.
WATERMARKS = True


def _summarize_db_delta(path: str, previous: list[Session] | None, state: Any
                        ) -> tuple[list[Session], list[Session], Any]:
    """`_summarize_db`, re-reading only the sessions whose key changed since `previous` was read (state:
    {"v", "shape", "keys": {session id: key}}). A session's key digests its whole row (title, directory,
    model, `time_updated`, ...) with its message count, newest message time and highest message rowid (the
    `message(session_id, time_created, id)` index) and its part count and highest part rowid (the
    `part(session_id)` index): a message or part appended, deleted or replaced changes it even where OpenCode
    leaves `time_updated` alone (a child session's messages are updated after its row on 1.18.33). Not seen:
    a part edited in place and nothing else (summaries read user text parts, written once as far as seen;
    streaming edits go to assistant parts). Sessions without a first request are always read again (their
    fallbacks come from message fields that change in place). Returns (sessions,
    the freshly read ones, state)."""
    with _open_db(path) as con, _snapshot(con):
        try:
            tables = _tables(con)
            if _use_v2(con, tables) or "session" not in tables:  # as _summarize_db: no incremental key here
                out = _summarize_v2(con, path) if _use_v2(con, tables) else []
                return out, out, None
            has_msgs = "message" in tables and "part" in tables
            if has_msgs and "session_id" not in _columns(con, "part"):
                out = _summarize_v1(con, path, tables)  # an old schema: no cheap per-session key
                return out, out, None
            rows = _session_rows(con)
            msgs: dict[str, tuple[Any, ...]] = {}
            parts: dict[str, tuple[Any, ...]] = {}
            shape = [sorted(_columns(con, "session")), has_msgs]
            usable = previous is not None and isinstance(state, dict) and state.get("v") == DELTA_VERSION \
                and state.get("shape") == shape and isinstance(state.get("keys"), dict)
            marks: list[Any] = []
            if has_msgs:
                try:  # both scan only their (session_id, ...) index, which carries the rowid
                    marks = [_mark(con, "message"), _mark(con, "part")]
                    grown = _grown(con, state, marks) if usable and WATERMARKS else None
                    if grown is not None:
                        msgs, parts = grown
                    else:
                        for sid, *k in con.execute(_MSG_KEYS_SQL):
                            msgs[sid] = tuple(k)
                        for sid, *k in con.execute(_PART_KEYS_SQL):
                            parts[sid] = tuple(k)
                except sqlite3.OperationalError:  # no rowid (another program's table): no keys, a full read
                    out = _summarize_v1(con, path, tables, rows)
                    return out, out, None
            keys = {r[0]: _digest((r, msgs.get(r[0]), parts.get(r[0]))) for r in rows if isinstance(r[0], str)}
            reuse: dict[str, Session] = {}
            if usable:
                old = state["keys"]
                for s in previous:
                    if s.locator.get("kind") == "db" and s.first_request is not None and s.id in keys \
                            and old.get(s.id) == keys[s.id]:
                        reuse[s.id] = s
            todo = [r for r in rows if r[0] not in reuse]
            fresh = (_summarize_v1(con, path, tables, todo, [r[0] for r in todo] if reuse else None,
                                   msgs if has_msgs else None) if todo else [])
        except sqlite3.Error as e:
            raise SqliteUnavailable(f"{path}: {e}") from e
    by_id = {s.id: s for s in fresh}
    out = []
    for r in rows:
        s = reuse.get(r[0]) or by_id.get(r[0])
        if s is not None:
            out.append(s)
    return out, fresh, {"v": DELTA_VERSION, "shape": shape, "keys": keys, "marks": marks, "msgs": msgs,
                        "parts": parts}


@contextlib.contextmanager
def _snapshot(con: sqlite3.Connection) -> Iterator[None]:
    """One read transaction for the incremental read: the rows, their keys and the watermarks of one state of a
    database that a running OpenCode writes meanwhile (its WAL commits land between statements otherwise)."""
    if con.in_transaction:
        yield
        return
    con.execute("BEGIN")
    try:
        yield
    finally:
        if con.in_transaction:
            con.rollback()  # nothing was written: this ends the read


def _mark(con: sqlite3.Connection, table: str) -> list[Any]:
    """A table's watermark: [row count, highest rowid, that row's id] ([0, None, None] when empty). SQLite counts
    a table's rows from its smallest b-tree's pages without decoding them; the top row is one seek."""
    n = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    top = con.execute(_TOP_SQL.format(t=table)).fetchone()
    return [n, top[0], top[1]] if top else [n, None, None]


def _top_in_place(con: sqlite3.Connection, table: str, rowid: int, row_id: Any) -> bool:
    """Whether the row at `rowid` is still the one of id `row_id` (the previous read's top row)."""
    at = con.execute(_AT_SQL.format(t=table), (rowid,)).fetchone()
    return at is not None and at[0] == row_id


def _grown(con: sqlite3.Connection, state: dict[str, Any], marks: list[Any]
           ) -> tuple[dict[str, tuple[Any, ...]], dict[str, tuple[Any, ...]]] | None:
    """The per-session figures of `_MSG_KEYS_SQL` and `_PART_KEYS_SQL` without scanning either index, or None
    (then the caller scans): the previous read's figures plus those of the rows added since, taken only when
    the tables provably only grew. Proof, per table: every row present then had a rowid <= the old top, so
    the rows above it are added ones (A of them). A row deleted since makes count != old count + A unless as
    many rows were added at or below the old top, which SQLite does only after the old top row was deleted
    (a new rowid is the highest + 1), and then the old top's rowid holds no row or a row of another id (ids
    are never reused). So count == old count + A with the old top row in place means nothing was deleted, and
    the sums and maxima below are what the scans would give. (A row edited in place is missed by both.)"""
    old_marks, old_msgs, old_parts = state.get("marks"), state.get("msgs"), state.get("parts")
    if not (isinstance(old_marks, list) and len(old_marks) == 2 and isinstance(old_msgs, dict)
            and isinstance(old_parts, dict)):
        return None
    figures = []
    for table, new_sql, old_mark, mark, old in (("message", _MSG_NEW_SQL, old_marks[0], marks[0], old_msgs),
                                                  ("part", _PART_NEW_SQL, old_marks[1], marks[1], old_parts)):
        if not (isinstance(old_mark, list) and len(old_mark) == 3 and type(old_mark[0]) is int):
            return None
        old_n, old_top, old_id = old_mark
        if old_top is None:
            if old_n != 0:
                return None
            old_top = -(2 ** 63)
        elif not _top_in_place(con, table, old_top, old_id):
            return None
        out = dict(old)
        added = 0
        for sid, n, *rest in con.execute(new_sql, (old_top,)):
            if not all(type(v) is int for v in (n, *rest)):
                return None  # a value Python's max would order unlike SQLite's: scan
            added += n
            prev = out.get(sid)
            if prev is None:
                out[sid] = (n, *rest)
            elif len(prev) != len(rest) + 1 or not all(type(v) is int for v in prev):
                return None
            else:
                out[sid] = (prev[0] + n, *(max(a, b) for a, b in zip(prev[1:], rest, strict=True)))
        if mark[0] != old_n + added:
            return None
        figures.append(out)
    return figures[0], figures[1]


def _digest(value: Any) -> bytes:
    return blake2b(repr(value).encode("utf-8", "surrogatepass"), digest_size=12).digest()


def _collect_first(rows: Iterable[tuple[Any, ...]], firsts: dict[str, str], summary_titles: dict[str, str],
                   models: dict[str, str]) -> None:
    """Rows (session, summary title, model, text, synthetic, ignored) ordered by session, then message:
    the first real (not synthetic, not ignored) text of a session wins."""
    for sid, summary_title, model, text, synthetic, ignored in rows:
        if not isinstance(sid, str):
            continue
        if isinstance(summary_title, str) and summary_title and sid not in summary_titles:
            summary_titles[sid] = summary_title
        if isinstance(model, str) and model and sid not in models:
            models[sid] = model
        if sid in firsts or not isinstance(text, str) or not text.strip():
            continue
        if not _truthy(synthetic) and not _truthy(ignored):
            firsts[sid] = text


def _truthy(v: Any) -> bool:
    return v not in (None, 0, False, "", "0", "false")


def _fill_missing_models(con: sqlite3.Connection, sessions: list[Session]) -> None:
    """Older rows have no `session.model`: take the latest assistant message's modelID, one query."""
    missing = [s for s in sessions if s.model is None]
    by_id = {s.id: s for s in missing}
    for i in range(0, len(missing), 500):
        chunk = [s.id for s in missing[i:i + 500]]
        sql = ("SELECT session_id, max(time_created), json_extract(data, '$.modelID') FROM message "
               f"WHERE session_id IN ({','.join('?' * len(chunk))}) AND instr(data, '\"modelID\"') > 0 "
               "AND json_valid(data) GROUP BY session_id")
        for sid, _t, model in con.execute(sql, chunk):
            if sid in by_id and isinstance(model, str) and model:
                by_id[sid].model = model


# --- E3 (2.x): session_v2 + session_message (unverified against a real 2.x store)

_V2_FIRST_SQL = """
WITH r AS (
  SELECT id, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY seq) AS rn
  FROM session_message WHERE type = 'user'
)
SELECT m.session_id, json_extract(m.data, '$.text')
FROM r JOIN session_message m ON m.id = r.id
WHERE r.rn <= 3 AND json_valid(m.data)
ORDER BY m.session_id, r.rn
"""


def _summarize_v2(con: sqlite3.Connection, path: str) -> list[Session]:
    cols = _columns(con, "session_v2")
    rows = con.execute(f"SELECT {_select_cols(cols, _SESSION_COLS)} FROM session_v2").fetchall()
    firsts: dict[str, str] = {}
    for sid, text in con.execute(_V2_FIRST_SQL):
        if isinstance(sid, str) and sid not in firsts and isinstance(text, str) and text.strip():
            firsts[sid] = text
    last = dict(con.execute("SELECT session_id, max(time_created) FROM session_message GROUP BY session_id"))
    out: list[Session] = []
    for sid, parent, directory, title, model, _agent, created, updated, _archived in rows:
        if not isinstance(sid, str) or not sid:
            continue
        s = _new_session(sid, path, {"kind": "db3", "priority": PRIO_DB, "db": path})
        s.parent_id = parent or None
        s.cwd = directory or None
        s.started_at = parse_time(created)
        s.updated_at = max((t for t in (parse_time(updated), parse_time(last.get(sid))) if t), default=None)
        s.model = model if isinstance(model, str) and model else None
        _finish(s, title, firsts.get(sid))
        out.append(s)
    return out


# ============================================================================================ legacy JSON


def _subdirs(path: str | os.PathLike[str]) -> list[str]:
    out: list[str] = []
    with contextlib.suppress(OSError), os.scandir(path) as it:
        for e in it:
            with contextlib.suppress(OSError):
                if e.is_dir():
                    out.append(e.path)
    return sorted(out)


def _json_files(path: str | os.PathLike[str]) -> list[str]:
    """Names of `*.json` entries (OpenCode's atomic writes leave `.oc-….tmp`, never `.json`)."""
    out: list[str] = []
    with contextlib.suppress(OSError), os.scandir(path) as it:
        for e in it:
            if e.name.endswith(".json") and not e.name.startswith("."):
                out.append(e.name)
    return sorted(out)


def _load_record(path: str, stats: ReadStats) -> dict[str, Any] | None:
    """One legacy JSON record (message or part) for steps; damage is counted, never raised."""
    try:
        rec = _load_json(path)
    except (OSError, ValueError):
        stats.damaged_lines += 1
        return None
    if not isinstance(rec, dict):
        stats.damaged_lines += 1
        return None
    with contextlib.suppress(OSError):
        stats.bytes_read += os.path.getsize(path)
    return rec


def _load_json(path: str, max_bytes: int = MAX_JSON_FILE) -> Any:
    """One legacy JSON document; only regular files are opened (a FIFO must not block us). Invalid UTF-8
    is replaced rather than fatal. Raises OSError / ValueError for what cannot be read."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("not a regular file")
    if st.st_size > max_bytes:
        raise ValueError(f"{st.st_size} bytes is over the {max_bytes}-byte cap")
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    return json.loads(data.decode("utf-8-sig", "replace"))  # a UTF-8 BOM is no JSON


class _Layout:
    """Where a legacy session's messages and parts are (E1 global tree, E0 per-project tree)."""

    def __init__(self, session_file: str, kind: str) -> None:
        self.kind = kind
        self.sid = os.path.basename(session_file)[:-5]
        parent = os.path.dirname(session_file)
        sdir = os.path.dirname(parent)
        # <data>/project/<dir>/storage/session/info/<ses>.json, or the same info/message/part trio found
        # directly under storage/session/ (then "info" is not a project id)
        if kind == "e0" or (os.path.basename(parent) == "info" and os.path.isdir(os.path.join(sdir, "message"))):
            self.message_dir = os.path.join(sdir, "message", self.sid)
            self.part_root = os.path.join(sdir, "part", self.sid)
        else:  # E1: <data>/storage/session/<project>/<ses>.json
            storage = os.path.dirname(sdir)
            self.message_dir = os.path.join(storage, "message", self.sid)
            self.part_root = os.path.join(storage, "part")

    def messages(self) -> list[str]:
        # message ids ascend with time (runtime-stores.md §3.2), so names give the order
        return [os.path.join(self.message_dir, n) for n in _json_files(self.message_dir)]

    def parts(self, msg_id: str) -> list[str]:
        d = os.path.join(self.part_root, msg_id)
        return [os.path.join(d, n) for n in _json_files(d)]


def _summarize_json(path: str, kind: str) -> Session:
    lay = _Layout(path, kind)
    s = _new_session(lay.sid, path, {"kind": kind, "priority": PRIO_E1 if kind == "e1" else PRIO_E0,
                                     "message_dir": lay.message_dir, "part_root": lay.part_root})
    info: dict[str, Any] = {}
    try:
        loaded = _load_json(path)
        if isinstance(loaded, dict):
            info = loaded
        else:
            s.problems.append("session file is not a JSON object")
    except (OSError, ValueError) as e:
        s.problems.append(f"session file unreadable: {e}")
    if isinstance(info.get("id"), str) and info["id"] and info["id"] != lay.sid:
        s.problems.append(f"session file names id {info['id']!r}; the file name wins")
    times = info.get("time") if isinstance(info.get("time"), dict) else {}
    s.parent_id = info.get("parentID") if isinstance(info.get("parentID"), str) and info["parentID"] else None
    s.cwd = info.get("directory") if isinstance(info.get("directory"), str) and info["directory"] else None
    s.started_at = parse_time(times.get("created"))
    s.updated_at = parse_time(times.get("updated"))
    first, summary_title, model, cwd, damaged, scanned = _scan_legacy_messages(lay, need_cwd=s.cwd is None)
    if s.cwd is None:
        s.cwd = cwd
    s.model = _model_name(info.get("model")) or model
    if damaged:
        s.problems.append(f"{damaged} damaged message/part files skipped")
    if first is None and scanned:
        s.problems.append("no user request found in its messages")
    if scanned > FIRST_MESSAGES and first is not None:
        s.locator["read_deep"] = True
    if s.started_at is None or s.updated_at is None:
        with contextlib.suppress(OSError):
            mt = os.stat(path).st_mtime
            s.started_at = s.started_at or mt
            s.updated_at = s.updated_at or mt
    _finish(s, info.get("title"), first, summary_title)
    if s.resumable:
        # 1.18.33 reads only its database: `opencode run --session <id>` answers "Session not found" for
        # a session left in JSON (a fresh DB does not import leftover storage/ either)
        s.resumable, s.resume_blocker = False, "cli_cannot_reopen"
    return s


def _scan_legacy_messages(lay: _Layout, need_cwd: bool
                          ) -> tuple[str | None, str | None, str | None, str | None, int, int]:
    """Read messages in order until the first real request (and, when the session lacks `directory`, the
    first assistant `path.cwd`) is known. Returns (first, summary title, model, cwd, damaged, scanned)."""
    first = summary_title = model = cwd = None
    damaged = scanned = 0
    for mpath in lay.messages():
        if first is not None and (cwd is not None or not need_cwd):
            break
        if first is not None and scanned > FIRST_MESSAGES + 20:
            break  # the cwd fallback does not justify reading a whole long session
        scanned += 1
        try:
            msg = _load_json(mpath)
        except (OSError, ValueError):
            damaged += 1
            continue
        if not isinstance(msg, dict):
            damaged += 1
            continue
        role = msg.get("role")
        meta = msg.get("metadata") if isinstance(msg.get("metadata"), dict) else {}
        if role == "assistant":
            path_info = msg.get("path") if isinstance(msg.get("path"), dict) else (
                (meta.get("assistant") or {}).get("path") if isinstance(meta.get("assistant"), dict) else None)
            if cwd is None and isinstance(path_info, dict) and isinstance(path_info.get("cwd"), str):
                cwd = path_info["cwd"] or None
            if model is None:  # a message's own "id" is not a model: read modelID only
                mid_model = msg.get("modelID")
                model = mid_model if isinstance(mid_model, str) and mid_model else _model_name(
                    meta.get("assistant"))
            continue
        if role != "user" or first is not None:
            continue
        summ = msg.get("summary")
        if summary_title is None and isinstance(summ, dict) and isinstance(summ.get("title"), str):
            summary_title = summ["title"]
        if model is None:
            model = _model_name(msg.get("model"))
        mid = msg.get("id") if isinstance(msg.get("id"), str) else os.path.basename(mpath)[:-5]
        parts: Iterable[Any] = msg["parts"] if isinstance(msg.get("parts"), list) else ()
        if not parts:
            loaded: list[Any] = []
            for ppath in lay.parts(mid):
                try:
                    loaded.append(_load_json(ppath))
                except (OSError, ValueError):
                    damaged += 1
            parts = loaded
        for p in parts:
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) \
                    and p["text"].strip() and not p.get("synthetic") and not p.get("ignored"):
                first = p["text"]
                break
    return first, summary_title, model, cwd, damaged, scanned


# ================================================================================================== steps


class _Turns:
    """Per user turn: the files its `summary.diffs` name, and which ones a step already reported, so a
    `patch` part gets line counts and files changed only by shell commands still appear once."""

    def __init__(self, cwd: str | None) -> None:
        self.cwd = cwd
        self.diffs: dict[str, tuple[int | None, int | None]] = {}
        self.seen: set[str] = set()
        self.at: float | None = None

    def abspath(self, p: str) -> str:
        return p if os.path.isabs(p) or not self.cwd else os.path.join(self.cwd, p)

    def start(self, diffs: Any, at: float | None) -> Iterator[Step]:
        yield from self.flush()
        self.at = at
        if isinstance(diffs, list):
            for d in diffs:
                if isinstance(d, dict) and isinstance(d.get("file"), str) and d["file"]:
                    self.diffs[self.abspath(d["file"])] = (_int(d.get("additions")), _int(d.get("deletions")))
                elif isinstance(d, (list, tuple)) and d and isinstance(d[0], str) and d[0]:
                    self.diffs[self.abspath(d[0])] = (_int(d[1]) if len(d) > 1 else None,
                                                      _int(d[2]) if len(d) > 2 else None)

    def edit(self, path: str, added: int | None, removed: int | None, at: float | None) -> Step | None:
        path = self.abspath(path)
        if path in self.seen:
            return None
        self.seen.add(path)
        if (added is None or removed is None) and path in self.diffs:
            da, dr = self.diffs[path]
            added = added if added is not None else da
            removed = removed if removed is not None else dr
        return Step("edit", text=path, path=path, added=added, removed=removed, at=at)

    def flush(self) -> Iterator[Step]:
        for path, (a, r) in self.diffs.items():
            if path not in self.seen:
                yield Step("edit", text=path, path=path, added=a, removed=r, at=self.at)
        self.diffs, self.seen = {}, set()


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _short(v: Any, n: int = 160) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str) if v is not None else ""
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _step_text(t: str) -> str:
    return cap_text(t, STEP_TEXT)


def _count_lines(text: Any) -> int | None:
    if not isinstance(text, str):
        return None
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _part_steps(part: dict[str, Any], role: str, at: float | None, turns: _Turns,
                tool_meta: dict[str, Any] | None = None) -> Iterator[Step]:
    """Steps of one part (E1/E2 shape, or the oldest inline `tool-invocation` shape)."""
    ptype = part.get("type")
    if ptype == "text":
        text = part.get("text")
        if not isinstance(text, str) or not text.strip() or part.get("synthetic") or part.get("ignored"):
            return
        if role == "user":
            yield Step("request", text=_step_text(unquote_prompt(text)), at=at)
        elif role == "assistant":
            yield Step("message", text=_step_text(text.strip()), at=at)
    elif ptype == "tool":
        state = part.get("state") if isinstance(part.get("state"), dict) else {}
        yield from _tool_steps(str(part.get("tool") or ""), state, at, turns)
    elif ptype == "tool-invocation":
        inv = part.get("toolInvocation") if isinstance(part.get("toolInvocation"), dict) else {}
        meta = (tool_meta or {}).get(inv.get("toolCallId")) if tool_meta else None
        status = {"result": "completed", "call": "running", "partial-call": "pending"}.get(
            str(inv.get("state")), "")
        state = {"status": status, "input": inv.get("args"), "output": inv.get("result"),
                 "metadata": meta if isinstance(meta, dict) else {}}
        yield from _tool_steps(str(inv.get("toolName") or ""), state, at, turns)
    elif ptype == "patch":
        files = part.get("files")
        if isinstance(files, list):
            for f in files:
                if isinstance(f, str) and f:
                    st = turns.edit(f, None, None, at)
                    if st:
                        yield st
    elif ptype == "subtask":
        task = part.get("description") or part.get("prompt")
        if isinstance(task, str) and task.strip():
            yield Step("subagent", text=_step_text(task.strip()), at=at)


def _tool_steps(tool: str, state: dict[str, Any], at: float | None, turns: _Turns) -> Iterator[Step]:
    name = tool.lower()
    if name in _READ_TOOLS:
        return
    inp = state.get("input") if isinstance(state.get("input"), dict) else {}
    meta = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
    times = state.get("time") if isinstance(state.get("time"), dict) else {}
    at = parse_time(times.get("start")) or at
    status = state.get("status")
    if name in _SHELL_TOOLS:
        cmd = inp.get("command")
        if not isinstance(cmd, str) or not cmd.strip():
            return  # a call cut off before its input streamed in ran nothing
        # the exit code is `metadata.exit` (null when killed); a pending/running call was interrupted
        code = _int(meta.get("exit")) if status in ("completed", "error") else None
        if code is None and status in ("completed", "error"):
            code = _int(meta.get("exitCode"))
        out = meta.get("output") if isinstance(meta.get("output"), str) else state.get("output")
        yield Step("command", text=_step_text(cmd), exit_code=code, at=at,
                   output=out[-OUTPUT_KEEP:] if isinstance(out, str) and out else None)
    elif name in _EDIT_TOOLS:
        yield from _edit_steps(name, inp, meta, status, at, turns)
    elif name == "task":
        task = inp.get("description") or inp.get("prompt")
        ref = meta.get("sessionId") or meta.get("sessionID")
        if not isinstance(ref, str):
            m = _TASK_ID_RE.search(state["output"]) if isinstance(state.get("output"), str) else None
            ref = m.group(1) if m else None
        yield Step("subagent", text=_step_text(task.strip()) if isinstance(task, str) else "", ref=ref, at=at)
    elif name:
        first = next((v for v in inp.values() if isinstance(v, str) and v.strip()), None)
        yield Step("tool", text=f"{tool}: {_short(first if first is not None else inp)}".rstrip(": "), at=at)


def _edit_steps(name: str, inp: dict[str, Any], meta: dict[str, Any], status: Any, at: float | None,
                turns: _Turns) -> Iterator[Step]:
    if status not in ("completed", None, ""):
        return  # a failed or interrupted write changed nothing we can vouch for
    files = meta.get("files")
    if isinstance(files, list) and files:  # apply_patch: metadata.files[{filePath, additions, deletions}]
        for f in files:
            if isinstance(f, dict):
                p = f.get("filePath") or f.get("file") or f.get("path")
                if isinstance(p, str) and p:
                    st = turns.edit(p, _int(f.get("additions")), _int(f.get("deletions")), at)
                    if st:
                        yield st
        return
    path = inp.get("filePath") or meta.get("filepath") or meta.get("filePath") or inp.get("path")
    if not isinstance(path, str) or not path:
        yield Step("tool", text=f"{name}: {_short(inp)}", at=at)
        return
    added = removed = None
    fd = meta.get("filediff")
    if isinstance(fd, dict):
        added, removed = _int(fd.get("additions")), _int(fd.get("deletions"))
    elif name == "write" and meta.get("exists") is False:
        added, removed = _count_lines(inp.get("content")), 0
    st = turns.edit(path, added, removed, at)
    if st:
        yield st


# --- E2 steps: one message cursor; per message one parts query (big parts reduced in SQL)

_MSG_SQL = """
SELECT id, time_created, json_extract(data, '$.role'),
       (SELECT json_group_array(json_array(json_extract(value, '$.file'), json_extract(value, '$.additions'),
                                           json_extract(value, '$.deletions')))
        FROM json_each(data, '$.summary.diffs') WHERE type = 'object')
FROM message WHERE session_id = ? AND json_valid(data) ORDER BY time_created, id
"""
_BAD_MSG_SQL = "SELECT count(*) FROM message WHERE session_id = ? AND NOT json_valid(data)"
_PART_SQL = f"""
SELECT id, length(CAST(data AS BLOB)) AS n,
       CASE WHEN length(CAST(data AS BLOB)) <= {BIG_PART} THEN data END
FROM part WHERE message_id = ? ORDER BY id
"""
# A big part reduced to what a step needs (json_extract runs in C; Python never holds the whole output).
_BIG_PART_SQL = f"""
SELECT json_object(
  'type', json_extract(data, '$.type'),
  'text', substr(json_extract(data, '$.text'), 1, {STEP_TEXT}),
  'synthetic', json_extract(data, '$.synthetic'), 'ignored', json_extract(data, '$.ignored'),
  'tool', json_extract(data, '$.tool'), 'files', json_extract(data, '$.files'),
  'state', json_object(
    'status', json_extract(data, '$.state.status'),
    'input', json_object('command', substr(json_extract(data, '$.state.input.command'), 1, {STEP_TEXT}),
                         'filePath', json_extract(data, '$.state.input.filePath'),
                         'description', json_extract(data, '$.state.input.description'),
                         'prompt', substr(json_extract(data, '$.state.input.prompt'), 1, {STEP_TEXT})),
    'metadata', json_object('exit', json_extract(data, '$.state.metadata.exit'),
                            'sessionId', json_extract(data, '$.state.metadata.sessionId'),
                            'exists', json_extract(data, '$.state.metadata.exists'),
                            'filepath', json_extract(data, '$.state.metadata.filepath'),
                            'filediff', json_object(
                               'additions', json_extract(data, '$.state.metadata.filediff.additions'),
                               'deletions', json_extract(data, '$.state.metadata.filediff.deletions')),
                            'output', substr(json_extract(data, '$.state.metadata.output'), -{OUTPUT_KEEP})),
    'time', json_object('start', json_extract(data, '$.state.time.start'))))
FROM part WHERE id = ? AND json_valid(data)
"""


def _db_steps(session: Session, stats: ReadStats, turns: _Turns) -> Iterator[Step]:
    with _open_db(session.store_path) as con:
        yield from _db_rows_steps(con, session, stats, turns)


def _db_rows_steps(con: sqlite3.Connection, session: Session, stats: ReadStats, turns: _Turns
                   ) -> Iterator[Step]:
    try:
        bad = con.execute(_BAD_MSG_SQL, (session.id,)).fetchone()[0]
        stats.damaged_lines += int(bad or 0)
        parts_cur = con.cursor()
        for mid, created, role, diffs in con.execute(_MSG_SQL, (session.id,)):
            at = parse_time(created)
            if role == "user":
                yield from turns.start(_json_or_none(diffs), at)
            for pid, size, data in parts_cur.execute(_PART_SQL, (mid,)).fetchall():
                stats.bytes_read += int(size or 0)
                if data is None:
                    row = con.execute(_BIG_PART_SQL, (pid,)).fetchone()
                    data = row[0] if row else None
                part = _json_or_none(data)
                if not isinstance(part, dict):
                    stats.damaged_lines += 1
                    continue
                if part.get("type") in _SKIP_PART_TYPES:
                    continue
                yield from _part_steps(part, str(role or ""), at, turns)
    except sqlite3.Error as e:
        stats.problems.append(f"database read stopped: {e}")


def _json_or_none(v: Any) -> Any:
    if not isinstance(v, (str, bytes)):
        return None
    try:
        return json.loads(v)
    except (ValueError, RecursionError):
        return None


def _db3_steps(session: Session, stats: ReadStats, turns: _Turns) -> Iterator[Step]:
    with _open_db(session.store_path) as con:
        yield from _db3_rows_steps(con, session, stats, turns)


def _db3_rows_steps(con: sqlite3.Connection, session: Session, stats: ReadStats, turns: _Turns
                    ) -> Iterator[Step]:
    """E3 `session_message` rows by seq (shapes from the 2.x schema; not yet seen in a real store)."""
    try:
        cur = con.execute("SELECT type, time_created, length(CAST(data AS BLOB)), "
                          f"CASE WHEN length(CAST(data AS BLOB)) <= {MAX_JSON_FILE} THEN data END "
                          "FROM session_message WHERE session_id = ? ORDER BY seq", (session.id,))
        for mtype, created, size, data in cur:
            stats.bytes_read += int(size or 0)
            msg = _json_or_none(data)
            if not isinstance(msg, dict):
                stats.damaged_lines += 1
                continue
            at = parse_time(created)
            if mtype == "user":
                yield from turns.start(None, at)
                text = msg.get("text")
                if isinstance(text, str) and text.strip():
                    yield Step("request", text=_step_text(unquote_prompt(text)), at=at)
            elif mtype == "shell":
                cmd = msg.get("command")
                if isinstance(cmd, str):
                    out = msg.get("output")
                    yield Step("command", text=_step_text(cmd), exit_code=None, at=at,
                               output=out[-OUTPUT_KEEP:] if isinstance(out, str) and out else None)
            elif mtype == "assistant" and isinstance(msg.get("content"), list):
                for c in msg["content"]:
                    if not isinstance(c, dict):
                        continue
                    if c.get("type") == "text":
                        yield from _part_steps(c, "assistant", at, turns)
                    elif c.get("type") == "tool":
                        yield from _tool_steps(str(c.get("name") or ""), _v2_state(c.get("state")), at, turns)
    except sqlite3.Error as e:
        stats.problems.append(f"database read stopped: {e}")


def _v2_state(state: Any) -> dict[str, Any]:
    """2.x tool state {status, input, structured, result} in the 1.x shape `_tool_steps` reads."""
    if not isinstance(state, dict):
        return {}
    meta: dict[str, Any] = {}
    for k in ("structured", "result", "metadata"):
        if isinstance(state.get(k), dict):
            meta = {**state[k], **meta}
    inp = state.get("input")
    if isinstance(inp, str):
        inp = _json_or_none(inp) or {}
    return {"status": state.get("status"), "input": inp, "metadata": meta}


# --- legacy JSON steps


def _json_steps(session: Session, stats: ReadStats, turns: _Turns) -> Iterator[Step]:
    loc = session.locator
    lay = _Layout(session.store_path, str(loc.get("kind")))
    if isinstance(loc.get("message_dir"), str):
        lay.message_dir = loc["message_dir"]
    if isinstance(loc.get("part_root"), str):
        lay.part_root = loc["part_root"]
    records = known = 0  # what could not be read is a problem, never silence
    for mpath in lay.messages():
        msg = _load_record(mpath, stats)
        if msg is None:
            continue
        records += 1
        role = str(msg.get("role") or "")
        known += role in ("user", "assistant")
        meta = msg.get("metadata") if isinstance(msg.get("metadata"), dict) else {}
        times = msg.get("time") if isinstance(msg.get("time"), dict) else (
            meta.get("time") if isinstance(meta.get("time"), dict) else {})
        at = parse_time(times.get("created"))
        if role == "user":
            summ = msg.get("summary")
            yield from turns.start(summ.get("diffs") if isinstance(summ, dict) else None, at)
        if isinstance(msg.get("parts"), list):  # the oldest messages keep their parts inline
            tool_meta = meta.get("tool") if isinstance(meta.get("tool"), dict) else None
            for p in msg["parts"]:
                if isinstance(p, dict) and p.get("type") not in _SKIP_PART_TYPES:
                    yield from _part_steps(p, role, at, turns, tool_meta)
            continue
        mid = msg.get("id") if isinstance(msg.get("id"), str) else os.path.basename(mpath)[:-5]
        for ppath in lay.parts(mid):
            part = _load_record(ppath, stats)
            if part is None:
                continue
            if part.get("type") not in _SKIP_PART_TYPES:
                yield from _part_steps(part, role, at, turns)
    if records and not known:
        stats.problems.append(f"no OpenCode message records recognised in {records} message files")
