"""Cline reader: the SDK store of CLI 3.x / VS Code 4.1, and the legacy task stores (read-only).

SDK store (cline 3.0.65 `@cline/shared` storage paths): Cline dir `$CLINE_DIR` (default `~/.cline`), data dir
`$CLINE_DATA_DIR` (default `<dir>/data`); `db/sessions.db` (`$CLINE_DB_DATA_DIR`; pre-releases kept it in
`sessions/`) and `sessions/<sid>/` (`$CLINE_SESSION_DATA_DIR`) with the manifest `<sid>.json`, the transcript
`<sid>.messages.json` (one pretty-printed JSON document) and one `<agentId>.messages.json` per subagent (no
manifest; its id is `<sid>__<agentId>`), as the CLI lists them: from the DB (one query; subagents are rows with
`is_subagent=1`), with the manifests and subagent files as the fallback for folders the DB lacks, for a store
without a DB and for an unreadable DB. The same id from several sources is merged by `locator["priority"]`.

Legacy stores (`legacy`): the CLI 1.x/2.x tasks under the same data dir, and the VS Code extension's
`globalStorage/saoudrizwan.claude-dev` under each editor's user dir. Never opened: `secrets.json`,
`settings/providers.json` (credentials).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from segue.model import ReadStats, Session, Step, parse_time
from segue.replay import blake2b  # (_blake2's: hashlib would load OpenSSL)
from segue.stores.base import (
    HEAD_BYTES,
    Location,
    Reader,
    Source,
    SqliteUnavailable,
    fingerprint,
    open_sqlite_readonly,
    pid_alive,
    sqlite_fingerprint,
)
from segue.stores.cline.legacy import (
    DEEP_LIMIT,
    SDK_EXIT_RE,
    TITLE_MAX,
    JsonStream,
    clean_request,
    legacy_sources,
    legacy_steps,
    line_count,
    norm_path,
    note_unrecognised,
    patch_files,
    regular_file,
    resolve_path,
    summarize_history,
    summarize_task,
    title_of,
    tool_text,
)
from segue.stores.gitinfo import current_branch
from segue.stores.text import BOM, OUTPUT_KEEP, STEP_TEXT, fast_paths, open_regular
from segue.stores.text import cap_bytes as cap_text

RUNTIME = "cline"
EXTENSION_ID = "saoudrizwan.claude-dev"
VSCODE_APPS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
# Remote editor servers keep the extension's storage under `<home>/<server>/data/User/` (`.vscode-remote`
# is what GitHub Codespaces uses).
REMOTE_SERVERS = (".vscode-server", ".vscode-server-insiders", ".vscode-remote")
MANIFEST_CAP = 4 * 1024 * 1024
MESSAGES_SUFFIX = ".messages.json"

# Higher wins when one id comes from several sources.
PRIO_DB, PRIO_MANIFEST, PRIO_MESSAGES, PRIO_AGENT_FILE = 40, 30, 25, 20
PRIO_LEGACY = {"cli": 12, "vscode": 10}

# SDK tools that only look (left out of steps, like file reads).
_SDK_READ_TOOLS = frozenset({"read_files", "search_codebase"})


class ClineReader(Reader):
    runtime = RUNTIME

    # ------------------------------------------------------------------------------------------ where

    def cline_dir(self) -> Path:
        return self.env.path("CLINE_DIR") or self.env.home / ".cline"

    def data_dir(self) -> Path:
        return self.env.path("CLINE_DATA_DIR") or self.cline_dir() / "data"

    def sessions_dir(self) -> Path:
        return self.env.path("CLINE_SESSION_DATA_DIR") or self.data_dir() / "sessions"

    def db_paths(self) -> list[Path]:
        db_dir = self.env.path("CLINE_DB_DATA_DIR") or self.data_dir() / "db"
        out = [db_dir / "sessions.db", self.sessions_dir() / "sessions.db", self.data_dir() / "sessions" /
               "sessions.db"]  # the last two: pre-releases before 2026-04-17
        return list(dict.fromkeys(out))

    def vscode_roots(self) -> list[Path]:
        home = self.env.home
        bases = [home / ".config", home / "Library" / "Application Support"]
        xdg = self.env.path("XDG_CONFIG_HOME")
        if xdg:
            bases.insert(0, xdg)
        appdata = self.env.path("APPDATA")
        if appdata:
            bases.append(appdata)
        roots = [b / app / "User" / "globalStorage" / EXTENSION_ID for b in bases for app in VSCODE_APPS]
        roots += [home / srv / "data" / "User" / "globalStorage" / EXTENSION_ID for srv in REMOTE_SERVERS]
        return list(dict.fromkeys(roots))

    def legacy_roots(self) -> list[tuple[Path, str]]:
        return [(self.data_dir(), "cli")] + [(r, "vscode") for r in self.vscode_roots()]

    def locations(self) -> list[Location]:
        data = self.data_dir()
        out = [Location(str(data), data.is_dir(), "set CLINE_DIR or CLINE_DATA_DIR")]
        for db in self.db_paths():
            out.append(Location(str(db), os.path.lexists(db), "set CLINE_DB_DATA_DIR (or CLINE_DATA_DIR)"))
        sd = self.sessions_dir()
        out.append(Location(str(sd), sd.is_dir(), "set CLINE_SESSION_DATA_DIR (or CLINE_DATA_DIR)"))
        tasks = data / "tasks"
        out.append(Location(str(tasks), tasks.is_dir(), "legacy CLI 1.x/2.x tasks: set CLINE_DATA_DIR"))
        for r in self.vscode_roots():
            out.append(Location(str(r), r.is_dir(),
                                "VS Code extension storage: set HOME (or XDG_CONFIG_HOME, APPDATA)"))
        return out

    # ------------------------------------------------------------------------------------------ listing

    def sources(self) -> Iterator[Source]:
        # With a sessions.db, the DB is the one source of the SDK store (one query lists every session); its
        # fingerprint also covers the sessions folder, whose session folders missing from the DB are listed
        # from their manifests. Without a DB every session folder is its own source.
        sd = self.sessions_dir()
        dbs = [db for db in self.db_paths() if os.path.lexists(db)]
        for i, db in enumerate(dbs):
            if i == 0:
                yield Source(RUNTIME, str(db), sqlite_fingerprint(db) + fingerprint(sd), "sdk-db")
            else:
                yield Source(RUNTIME, str(db), sqlite_fingerprint(db), "sdk-db:rows-only")
        if not dbs:
            for e in _scan_dirs(str(sd)):
                # the folder's mtime covers subagent files appearing; the two files cover content changes
                fp = fingerprint(e.path, os.path.join(e.path, e.name + ".json"),
                                 os.path.join(e.path, e.name + MESSAGES_SUFFIX))
                yield Source(RUNTIME, e.path, fp, "sdk-dir")
        for root, flavor in self.legacy_roots():
            yield from legacy_sources(str(root), flavor)

    def refingerprint(self, moved: set[str], known: set[str]) -> list[Source] | None:
        # a database (or its -wal, there before and now) that grew: its source as sources() builds it (the
        # first one's fingerprint holds the sessions folder's too); a session folder's files: a discovery
        dbs = [str(db) for db in self.db_paths() if os.path.lexists(db)]
        out: dict[str, Source] = {}
        for p in sorted(moved):
            db = p[:-4] if p.endswith("-wal") and p[:-4] in dbs else p
            if db not in dbs or db not in known:
                return None
            if db not in out:
                if db == dbs[0]:
                    out[db] = Source(RUNTIME, db, sqlite_fingerprint(db) + fingerprint(self.sessions_dir()), "sdk-db")
                else:
                    out[db] = Source(RUNTIME, db, sqlite_fingerprint(db), "sdk-db:rows-only")
        return list(out.values())

    def summarize(self, source: Source) -> list[Session]:
        return with_branch_now(self._summarize(source))

    def summarize_delta(self, source: Source, previous: list[Session] | None, state: Any
                        ) -> tuple[list[Session], list[Session], Any]:
        """The listing's incremental read of a `sessions.db` (`_Delta`): rows whose key is unchanged keep
        their previous summary; every other source is read whole."""
        kind, _, flavor = source.kind.partition(":")
        if kind != "sdk-db":
            out = self.summarize(source)
            return out, out, None
        delta = _Delta(previous, state)
        sessions = self._summarize_db(source.path, with_folders=flavor != "rows-only", delta=delta)
        fresh = with_branch_now(delta.fresh)
        return delta.branch_now_again(sessions), fresh, delta.state()

    def _summarize(self, source: Source) -> list[Session]:
        kind, _, flavor = source.kind.partition(":")
        if kind == "sdk-db":
            return self._summarize_db(source.path, with_folders=flavor != "rows-only")
        if kind == "sdk-dir":
            return self._summarize_dir(source.path)
        if kind == "legacy-history":
            return summarize_history(source.path, flavor, PRIO_LEGACY.get(flavor, 10))
        if kind == "legacy-task":
            return [summarize_task(source.path, flavor, PRIO_LEGACY.get(flavor, 10) - 1)]
        raise ValueError(f"unknown Cline source kind {source.kind!r}")

    def _sessions_dir_for_db(self, db: str) -> str:
        parent = os.path.dirname(db)
        return parent if os.path.basename(parent) == "sessions" else str(self.sessions_dir())

    def _summarize_db(self, db: str, *, with_folders: bool, delta: _Delta | None = None) -> list[Session]:
        sessions_dir = self._sessions_dir_for_db(db)
        try:
            rows = self._db_sessions(db, sessions_dir, delta)
            problem = None
        except SqliteUnavailable as e:
            if not with_folders:
                raise
            rows, problem = [], f"sessions.db unreadable ({e}); listed from its folder"
        if not with_folders:
            return rows
        known = {s.id for s in rows}
        folders = [e.path for e in _scan_dirs(str(self.sessions_dir())) if e.name not in known]
        if problem and not folders:
            raise SqliteUnavailable(problem)
        out = rows
        for d in folders:
            for s in self._summarize_dir(d):
                if problem:
                    s.problems.append(problem)
                out.append(s)
                if delta is not None:
                    delta.fresh.append(s)
        return out

    def _db_sessions(self, db: str, sessions_dir: str, delta: _Delta | None = None) -> list[Session]:
        if not regular_file(db):
            raise SqliteUnavailable(f"{db}: not a regular file")
        if os.path.getsize(db) == 0 and not os.path.exists(db + "-wal"):
            return []  # SQLite's fresh, still empty database
        rows = _query_sessions(db, db)  # open_sqlite_readonly: no byte of the store changes, -shm included
        prefix = os.path.join(os.path.abspath(sessions_dir), "")
        out = []
        reused: set[int] = set()
        if delta is not None:
            delta.key_rows(rows, db)
        for rec in rows:
            if not isinstance(rec.get("session_id"), str) or not rec["session_id"]:
                continue
            old = delta.reusable(rec) if delta is not None else None
            if old is not None:
                out.append(old)
                reused.add(id(old))
                continue
            s = _record_session(rec, sessions_dir, PRIO_DB, prefix)
            s.locator["db"] = db
            if rec.get("metadata_bad"):
                s.problems.append("metadata_json unreadable")
            if s.first_request is None:
                if delta is not None:
                    delta.doc.add(s.id)
                _first_from_messages(s)
            out.append(s)
            if delta is not None:
                delta.fresh.append(s)
        # A subagent's row has its own cwd but no git metadata (checked on 3.0.65): it works in its
        # parent's checkout, so it takes the parent's branch (the recorded one: a reused parent may carry a
        # branch read from its directory, which `with_branch_now` gives the child the same way).
        by_id = {s.id: s for s in out}
        for s in out:
            parent = by_id.get(s.parent_id or "")
            if parent is not None and id(s) not in reused:
                s.branch = s.branch or (None if parent.branch_is_current else parent.branch)
                s.cwd = s.cwd or parent.cwd
        return out

    def _summarize_dir(self, d: str) -> list[Session]:
        sid = os.path.basename(d)
        sessions_dir = os.path.dirname(d)
        manifest = os.path.join(d, sid + ".json")
        messages = os.path.join(d, sid + MESSAGES_SUFFIX)
        lead: Session | None = None
        problem = None
        if regular_file(manifest):
            try:
                with open_regular(manifest) as f:
                    if os.fstat(f.fileno()).st_size > MANIFEST_CAP:
                        raise ValueError(f"over the {MANIFEST_CAP}-byte cap")
                    rec = json.loads(f.read().removeprefix(BOM))
                if not isinstance(rec, dict):
                    raise ValueError("not a JSON object")
                rec.setdefault("session_id", sid)
                lead = _record_session(_manifest_record(rec), sessions_dir, PRIO_MANIFEST)
                if lead.first_request is None:
                    _first_from_messages(lead)
                m = fingerprint(messages)[0]
                if m and (lead.updated_at or 0) < m[1] / 1e9:
                    lead.updated_at = m[1] / 1e9  # the transcript is rewritten every turn
            except (OSError, ValueError, RecursionError) as e:
                problem = f"manifest unreadable ({type(e).__name__})"
        elif os.path.lexists(manifest):
            problem = "manifest is not a regular file"
        out: list[Session] = []
        if lead is None and regular_file(messages):
            lead = _doc_session(messages, sid, None, None, sessions_dir, PRIO_MESSAGES)
            lead.problems.append(problem or "no manifest (listed from its messages file)")
        if lead is not None:
            out.append(lead)
        try:
            names = sorted(os.listdir(d))
        except OSError:
            names = []
        for name in names:
            if not name.endswith(MESSAGES_SUFFIX) or name == sid + MESSAGES_SUFFIX:
                continue
            stem = name[: -len(MESSAGES_SUFFIX)]
            path = os.path.join(d, name)
            if not regular_file(path):
                continue
            default_id = (f"{sid}__teamtask__{stem}" if "__" in stem else f"{sid}__{stem}")
            out.append(_doc_session(path, default_id, sid, lead, sessions_dir, PRIO_AGENT_FILE))
        return out

    # ------------------------------------------------------------------------------------------ steps

    def steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        if session.locator.get("kind") == "legacy":
            yield from legacy_steps(session, stats)
            return
        path = next((p for p in _message_candidates(session) if regular_file(p)), None)
        if path is None:
            stats.problems.append("messages file not found")
            return
        root = session.id.split("__", 1)[0]
        children = _Children(os.path.dirname(path), root, session.locator.get("db"))
        yield from sdk_steps(path, session.cwd, stats, children.lookup,
                             subagent=session.parent_id is not None)

    def search_steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        """An SDK transcript decoded by orjson (stores/cline/search.py: a small one whole, an indented one
        element by element) while fast paths are on; anything else as `steps()` reads it. A generator: nothing
        is read before the first step is asked for, and what fails fails where `steps()` would."""
        if session.locator.get("kind") == "legacy" or not fast_paths(self.env):
            yield from self.steps(session, stats)
            return
        from segue.stores.cline.search import indented_messages, whole_messages

        path = next((p for p in _message_candidates(session) if regular_file(p)), None)
        decoded: Iterable[Any] | None = None
        if path is not None:
            decoded = whole_messages(path)
            if decoded is None:
                decoded = indented_messages(path)
        if path is None or decoded is None:
            yield from self.steps(session, stats)
            return
        root = session.id.split("__", 1)[0]
        children = _Children(os.path.dirname(path), root, session.locator.get("db"))
        yield from sdk_steps(path, session.cwd, stats, children.lookup, subagent=session.parent_id is not None,
                             decoded=decoded)

    def exists(self, session: Session) -> bool:
        if session.locator.get("kind") == "legacy":
            return os.path.isdir(str(session.locator.get("task_dir") or session.store_path))
        return any(regular_file(p) for p in _message_candidates(session))


# ---------------------------------------------------------------------------------------------------------
# SDK summaries


def _split_id(sid: str) -> tuple[str, str]:
    """(root session id, file stem) as Cline derives a transcript's file from a session id."""
    i = sid.find("__teamtask__")
    if i > 0:
        return sid[:i], sid[i + len("__teamtask__"):]
    i = sid.find("__")
    if i > 0:
        return sid[:i], sid[i + 2:]
    return sid, sid


def _local_messages(sessions_dir: str, sid: str) -> str:
    root, stem = _split_id(sid)
    return f"{sessions_dir}{os.sep}{root}{os.sep}{stem}{MESSAGES_SUFFIX}"


def _scan_dirs(d: str) -> list[os.DirEntry[str]]:
    try:
        entries = list(os.scandir(d))
    except OSError:
        return []
    out = []
    for e in entries:
        try:
            if e.is_dir():
                out.append(e)
        except OSError:
            continue
    return out


_DB_PLAIN = ("session_id", "pid", "status", "model", "cwd", "workspace_root", "parent_session_id",
             "is_subagent", "prompt", "messages_path", "started_at", "updated_at", "ended_at")
_DB_TIMES = ("started_at", "updated_at", "ended_at")


def _query_sessions(db: str, path: str) -> list[dict[str, Any]]:
    """Every row of `sessions` in one query. Times and the two metadata fields the listing needs are
    extracted by SQLite (C speed); older schemas lack some columns, which read as NULL."""
    con = open_sqlite_readonly(path)
    try:
        cols = {r[1] for r in con.execute("PRAGMA table_info(sessions)")}
        if not cols:
            return []
        plain = [c if c in cols else f"NULL AS {c}" for c in _DB_PLAIN]
        # julianday floats carry ~50 µs of error: rounded to the stores' milliseconds
        times = [f"CASE WHEN typeof({c}) = 'text' THEN round((julianday({c}) - 2440587.5) * 86400.0, 3) END"
                 if c in cols else "NULL" for c in _DB_TIMES]
        meta = "metadata_json" if "metadata_json" in cols else "NULL"
        json1 = [f"CASE WHEN json_valid({meta}) THEN json_extract({meta}, '$.title') END",
                 f"CASE WHEN json_valid({meta}) THEN json_extract({meta}, '$.git.branch') END",
                 f"{meta} IS NOT NULL AND NOT json_valid({meta})"]
        try:
            rows = con.execute(f"SELECT {', '.join(plain + times + json1)} FROM sessions").fetchall()
            decoded = True
        except sqlite3.OperationalError:  # an SQLite without the JSON functions
            rows = con.execute(f"SELECT {', '.join(plain + times)}, {meta} FROM sessions").fetchall()
            decoded = False
    except sqlite3.Error as e:
        raise SqliteUnavailable(f"{db}: {e}") from e
    finally:
        con.close()
    names = (*_DB_PLAIN, *(t + "_s" for t in _DB_TIMES), "title", "branch", "metadata_bad")
    out = [dict(zip(names, r, strict=False)) for r in rows]
    for rec in out:
        for t in _DB_TIMES:
            if rec[t + "_s"] is None and rec[t] is not None:
                rec[t + "_s"] = parse_time(rec[t])  # not ISO text (e.g. epoch numbers)
        if not decoded:
            raw = rec.pop("title")
            try:
                m = json.loads(raw) if isinstance(raw, str) else {}
            except (ValueError, RecursionError):
                m, rec["metadata_bad"] = {}, True
            m = m if isinstance(m, dict) else {}
            git = m.get("git") if isinstance(m.get("git"), dict) else {}
            rec["title"], rec["branch"] = m.get("title"), git.get("branch")
    return out


def _manifest_record(rec: dict[str, Any]) -> dict[str, Any]:
    """A manifest in the shape of a queried row."""
    meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
    git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
    out = dict(rec)
    out["title"], out["branch"] = meta.get("title"), git.get("branch")
    for name in _DB_TIMES:
        out[name + "_s"] = parse_time(rec.get(name))
    return out


def with_branch_now(sessions: list[Session]) -> list[Session]:
    """Sessions whose store records no branch get their directory's current branch from `.git/HEAD`,
    marked as the branch now (`branch_is_current`): Cline 3 writes none for some sessions."""
    seen: dict[str, str | None] = {}
    for s in sessions:
        if s.branch or not s.cwd:
            continue
        if s.cwd not in seen:
            seen[s.cwd] = current_branch(s.cwd)
        if seen[s.cwd]:
            s.branch, s.branch_is_current = seen[s.cwd], True
    return sessions


def _record_session(rec: dict[str, Any], sessions_dir: str, priority: int, prefix: str | None = None
                    ) -> Session:
    """A session from a `sessions` row or a manifest (see `_query_sessions`, `_manifest_record`)."""
    sid = rec["session_id"]
    first = _prompt_first(rec.get("prompt"))
    title = rec.get("title")
    title = title.strip()[:TITLE_MAX] if isinstance(title, str) and title.strip() else title_of(first)
    branch = rec.get("branch")
    branch = branch if isinstance(branch, str) and branch.strip() else None
    started = rec.get("started_at_s")
    updated = max(rec.get("updated_at_s") or 0, rec.get("ended_at_s") or 0, started or 0) or None
    is_sub, parent = _row_parent(rec)
    # Live: a running status and a process that still exists. Hub-run sessions record the hub daemon's
    # pid, so those count only while the hub lives and the status is still "running"; a crashed run keeps
    # "running" with a dead pid and is not live.
    live = rec.get("status") == "running" and pid_alive(rec.get("pid"))
    recorded = rec.get("messages_path")
    prefix = prefix or os.path.join(os.path.abspath(sessions_dir), "")
    locator: dict[str, Any] = {"kind": "sdk", "priority": priority}
    if live:
        locator["pid"] = rec["pid"]  # Reader.refresh_live re-checks it on cached sessions
    if isinstance(recorded, str) and recorded.startswith(prefix):
        store = recorded
    else:
        # none recorded, or a copied data dir's absolute path into the original: use our own copy
        store = _local_messages(sessions_dir, sid)
        if isinstance(recorded, str) and recorded:
            locator["recorded"] = recorded
    locator["messages"] = store
    model = rec.get("model")
    s = Session(
        runtime=RUNTIME, id=sid, store_path=store, title=title, first_request=first,
        cwd=norm_path(rec.get("cwd")) or norm_path(rec.get("workspace_root")), branch=branch,
        started_at=started, updated_at=updated, model=model if isinstance(model, str) and model else None,
        parent_id=parent if is_sub else None, resumable=not is_sub,
        resume_blocker="subagent" if is_sub else None, live=live, locator=locator)
    if first is None and not is_sub and rec.get("status") not in ("idle", "pending"):
        s.problems.append("no prompt recorded")
    return s


def _prompt_first(prompt: Any) -> str | None:
    if isinstance(prompt, str) and "<" not in prompt:
        return cap_text(prompt.strip()) or None  # in-process runs store the bare prompt
    return cap_text(clean_request(prompt)) or None


def _row_parent(rec: dict[str, Any]) -> tuple[bool, str | None]:
    """(is a subagent, its parent's id) of a `sessions` row or manifest."""
    sid = rec["session_id"]
    root, _ = _split_id(sid)
    is_sub = bool(rec.get("is_subagent")) or root != sid
    parent = rec.get("parent_session_id")
    if is_sub and not (isinstance(parent, str) and parent):
        parent = root
    return is_sub, parent if is_sub else None


DELTA_VERSION = 2


class _Delta:
    """An incremental read of a `sessions.db` against the summaries of the last read (`previous`) and their
    keys (`state`: {"v", "keys": {session id: key}}). A row's key digests the whole row as queried (prompt,
    status, pid, times, title, branch, paths, ...) and, for a subagent, its parent row (whose cwd and branch
    it inherits). A row is always read again when its summary depends on more than the rows: a first
    request taken from the messages file (no usable prompt in the row) or a running status (liveness).
    Reused summaries whose branch was read from their directory are checked against the directory again
    (`branch_now_again`), as a full read would; a changed one is a copy, never edited in place."""

    def __init__(self, previous: list[Session] | None, state: Any) -> None:
        ok = isinstance(state, dict) and state.get("v") == DELTA_VERSION and isinstance(state.get("keys"), dict) \
            and isinstance(state.get("doc"), list) and previous is not None
        self.old: dict[str, Any] = state["keys"] if ok else {}
        self.old_doc: set[str] = set(state["doc"]) if ok else set()
        self.prev = {s.id: s for s in previous or () if s.locator.get("kind") == "sdk" and "db" in s.locator}
        self.keys: dict[str, bytes] = {}
        self.doc: set[str] = set()  # rows whose first request came from the messages file (no usable prompt)
        self.fresh: list[Session] = []
        self.reused: set[int] = set()
        self.db = ""

    def key_rows(self, rows: list[dict[str, Any]], db: str) -> None:
        self.db = db
        own = {r["session_id"]: _digest(tuple(r.values())) for r in rows
               if isinstance(r.get("session_id"), str) and r["session_id"]}
        for r in rows:
            sid = r.get("session_id")
            if isinstance(sid, str) and sid:
                _, parent = _row_parent(r)
                self.keys[sid] = own[sid] + (own.get(parent, b"-") if parent else b"")

    def reusable(self, rec: dict[str, Any]) -> Session | None:
        sid = rec["session_id"]
        old = self.prev.get(sid)
        if old is None or self.old.get(sid) != self.keys.get(sid) or old.locator.get("db") != self.db:
            return None
        # the same key is the same prompt, so the same need of the messages file as when last read
        if rec.get("status") == "running" or sid in self.old_doc:
            return None
        self.reused.add(id(old))
        return old

    def branch_now_again(self, sessions: list[Session]) -> list[Session]:
        seen: dict[str, str | None] = {}
        out = []
        for s in sessions:
            if id(s) in self.reused and s.cwd and (s.branch_is_current or not s.branch):
                if s.cwd not in seen:
                    seen[s.cwd] = current_branch(s.cwd)
                now = seen[s.cwd]
                if now != (s.branch if s.branch_is_current else None):
                    s = s.copy()
                    s.branch, s.branch_is_current = (now, True) if now else (None, False)
            out.append(s)
        return out

    def state(self) -> dict[str, Any]:
        return {"v": DELTA_VERSION, "keys": self.keys, "doc": sorted(self.doc)}


def _digest(value: Any) -> bytes:
    return blake2b(repr(value).encode("utf-8", "surrogatepass"), digest_size=12).digest()


def _doc_session(path: str, default_id: str, parent: str | None, lead: Session | None, sessions_dir: str,
                 priority: int) -> Session:
    """A session from its messages file alone (subagents have no manifest): the document's head."""
    header: dict[str, Any] = {}
    problems: list[str] = []
    first = model = None
    deep = False
    try:
        first, model, deep = _messages_head(path, header)
    except OSError as e:
        problems.append(f"messages file unreadable: {e.strerror or e}")
    sid = header.get("sessionId") if isinstance(header.get("sessionId"), str) and header["sessionId"] \
        else default_id
    origin = header.get("origin") if isinstance(header.get("origin"), dict) else {}
    if isinstance(origin.get("parentThreadId"), str) and origin["parentThreadId"]:
        parent = origin["parentThreadId"]
    is_sub = parent is not None or header.get("agent") in ("subagent", "teammate")
    if is_sub and parent is None:
        parent = _split_id(sid)[0]
    mtime = fingerprint(path)[0]
    if "updated_at" not in header and not problems:
        _late_header(path, header)
        sid = header.get("sessionId") if isinstance(header.get("sessionId"), str) and header["sessionId"] \
            else default_id
        origin = header.get("origin") if isinstance(header.get("origin"), dict) else {}
        if isinstance(origin.get("parentThreadId"), str) and origin["parentThreadId"]:
            parent = origin["parentThreadId"]
        is_sub = parent is not None or header.get("agent") in ("subagent", "teammate")
        if is_sub and parent is None:
            parent = _split_id(sid)[0]
    updated = parse_time(header.get("updated_at")) or (mtime[1] / 1e9 if mtime else None)
    s = Session(
        runtime=RUNTIME, id=sid, store_path=path, title=title_of(first), first_request=first,
        # a subagent works in its parent's cwd and branch (the parent's manifest records them)
        cwd=lead.cwd if lead else None, branch=lead.branch if lead else None,
        started_at=lead.started_at if lead and not is_sub else None, updated_at=updated,
        model=model or (lead.model if lead else None), parent_id=parent if is_sub else None,
        resumable=not is_sub, resume_blocker="subagent" if is_sub else None, problems=problems,
        locator={"kind": "sdk", "priority": priority, "messages": path})
    s.started_at = s.started_at or _id_time(sid, is_sub) or updated
    if first is None and not problems:
        s.problems.append("first request not found in the first 4 MiB")
    if deep:
        s.locator["read_deep"] = True
    return s


LATE_HEADER_CAP = 64 * 1024 * 1024  # a document this big is not scanned for header members after `messages`
_HEADER_KEYS = {"updated_at", "sessionId", "origin", "agent"}


def _late_header(path: str, header: dict[str, Any]) -> None:
    """Cline writes `updated_at`, `sessionId`, `origin` and `agent` before `messages`; another writer's key
    order may put them after it, where the head never reaches: then the document is read on (structurally,
    decoding only those members). Members found before `messages` win."""
    try:
        with open_regular(path) as f:
            if os.fstat(f.fileno()).st_size > LATE_HEADER_CAP:
                return
            late: dict[str, Any] = {}
            JsonStream(f).members(_HEADER_KEYS - set(header), late)
    except OSError:
        return
    for k, v in late.items():
        header.setdefault(k, v)


def _first_from_messages(s: Session) -> None:
    """No prompt in the row or manifest (a TUI session opened without one): the transcript's first user
    message, read from its head."""
    try:
        first, model, deep = _messages_head(s.store_path, {})
    except OSError:
        return
    s.problems = [p for p in s.problems if p != "no prompt recorded"]
    s.first_request = first
    s.title = s.title or title_of(first)
    s.model = s.model or model
    if deep:
        s.locator["read_deep"] = True


def _messages_head(path: str, header: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    """(first request, model, read past the head) from a messages file; its top-level fields go into
    `header`. Reads 32 KiB, more only while the first user message is still incomplete."""
    first = model = None
    with open_regular(path) as f:
        js = JsonStream(f, first_chunk=HEAD_BYTES, limit=DEEP_LIMIT)
        for i, m in enumerate(js.array_at("messages", header)):
            if not isinstance(m, dict) or i > 50:
                break
            mi = m.get("modelInfo")
            if model is None and isinstance(mi, dict) and isinstance(mi.get("id"), str):
                model = mi["id"]
            if m.get("role") == "user":
                first = next((t for t in (cap_text(clean_request(b["text"])) for b in _blocks(m.get("content"))
                                          if b.get("type") == "text" and isinstance(b.get("text"), str)) if t),
                             None)
                if first:
                    break
        return first, model, js.bytes_read > HEAD_BYTES


def _id_time(sid: str, is_sub: bool) -> float | None:
    """Ids carry their creation time: `<ms>_<5>` for a session, `…__agent_<ms>_<6>` for a subagent."""
    part = _split_id(sid)[1] if is_sub else sid
    for tok in part.split("_"):
        if tok.isdigit() and 12 <= len(tok) <= 14:
            return parse_time(int(tok))
    return None


def _message_candidates(session: Session) -> list[str]:
    loc = session.locator
    out = [loc.get("messages"), session.store_path, loc.get("recorded")]
    return list(dict.fromkeys(p for p in out if isinstance(p, str) and p))


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


# ---------------------------------------------------------------------------------------------------------
# SDK steps


class _Children:
    """Finds the subagent session a `spawn_agent` call started: the agent file whose task matches."""

    def __init__(self, d: str, root: str, db: Any) -> None:
        self.d, self.root, self.db = d, root, db
        self.known: list[tuple[str, str]] | None = None
        self.used: set[str] = set()

    def _load(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        try:
            names = sorted(n for n in os.listdir(self.d)
                           if n.endswith(MESSAGES_SUFFIX) and n != self.root + MESSAGES_SUFFIX)
        except OSError:
            names = []
        for n in names:
            s = _doc_session(os.path.join(self.d, n), f"{self.root}__{n[: -len(MESSAGES_SUFFIX)]}",
                             self.root, None, os.path.dirname(self.d), 0)
            out.append((s.id, s.first_request or ""))
        if not out and isinstance(self.db, str) and regular_file(self.db):
            try:
                con = open_sqlite_readonly(self.db)
                try:
                    rows = con.execute("SELECT session_id, prompt FROM sessions WHERE parent_session_id = ?"
                                       " ORDER BY started_at", (self.root,)).fetchall()
                finally:
                    con.close()
                out = [(r[0], clean_request(r[1])) for r in rows if isinstance(r[0], str)]
            except (SqliteUnavailable, sqlite3.Error):
                pass
        return out

    def lookup(self, task: str) -> str | None:
        if self.known is None:
            self.known = self._load()
        want = clean_request(task)
        for sid, t in self.known:
            if sid not in self.used and t and t == cap_text(want):
                self.used.add(sid)
                return sid
        return None


def _commands_of(inp: Any) -> list[str]:
    """run_commands input as the tool accepts it: a string, a list, `{commands}`, `{command, args}`, `{cmd}`."""
    if isinstance(inp, dict):
        if "commands" in inp:
            raw = inp["commands"]
            items = raw if isinstance(raw, list) else [raw]
        elif "command" in inp:
            items = [inp] if "args" in inp else [inp["command"]]
        elif "cmd" in inp:
            items = [inp["cmd"]]
        else:
            items = []
    elif isinstance(inp, list):
        items = inp
    else:
        items = [inp]
    out = []
    for c in items:
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, dict) and isinstance(c.get("command"), str):
            args = [a if not any(ch in a for ch in ' \t"') else json.dumps(a)
                    for a in c.get("args") or [] if isinstance(a, str)]
            out.append(" ".join([c["command"], *args]))
    return out


def _sdk_tool(name: str, inp: Any, cwd: str | None, at: float | None,
              child_for: Callable[[str], str | None]) -> list[Step]:
    p = inp if isinstance(inp, dict) else {}
    if name in _SDK_READ_TOOLS:
        return []
    if name == "run_commands":
        return [Step("command", text=cap_text(c, STEP_TEXT), at=at) for c in _commands_of(inp)]
    if name == "editor":
        path = resolve_path(p.get("path"), cwd)
        new, old = p.get("new_text"), p.get("old_text")
        if p.get("insert_line") is not None or not isinstance(old, str):
            added, removed = line_count(new), 0  # an insert, or a new file
        else:
            added, removed = line_count(new), line_count(old)
        return [Step("edit", text=path or "", path=path, added=added, removed=removed, at=at)]
    if name == "apply_patch":
        return [Step("edit", text=fp or "", path=fp, added=a, removed=r, at=at)
                for fp, a, r in ((resolve_path(x, cwd), a, r) for x, a, r in patch_files(p.get("input")))]
    if name == "spawn_agent":
        task = p.get("task") if isinstance(p.get("task"), str) else ""
        return [Step("subagent", text=cap_text(task.strip(), STEP_TEXT), ref=child_for(task) if task else None,
                     at=at)]
    if name == "submit_and_exit":
        for k in ("summary", "result", "answer", "message"):
            if isinstance(p.get(k), str) and p[k].strip():
                return [Step("message", text=cap_text(p[k].strip(), STEP_TEXT), at=at)]
    return [Step("tool", text=tool_text(name, inp), at=at)]


def _result_entries(content: Any) -> list[dict[str, Any]]:
    """Tool results as `{query, result, success, error?}` entries, however the block carries them."""
    if isinstance(content, dict):
        return [content]
    if isinstance(content, str):
        try:
            return _result_entries(json.loads(content)) if content[:1] in "[{" else []
        except (ValueError, RecursionError):
            return []
    out: list[dict[str, Any]] = []
    if isinstance(content, list):
        for c in content:
            if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str):
                out += _result_entries(c["text"])
            elif isinstance(c, dict):
                out.append(c)
    return out


def _exit_of(entry: dict[str, Any]) -> int | None:
    if entry.get("success") is True:
        return 0  # Cline records no code on success; "success" is its verdict on exit code 0
    for k in ("error", "result"):
        v = entry.get(k)
        if isinstance(v, str):
            m = SDK_EXIT_RE.search(v[:4096])
            if m:
                return int(m.group(1))
    return None  # timed out, failed to start, cancelled


def _apply_result(name: str, steps: list[Step], block: dict[str, Any], drop: set[int]) -> None:
    entries = _result_entries(block.get("content"))
    if name == "run_commands":
        cmds = [s for s in steps if s.kind == "command"]
        pairs: list[tuple[Step, dict[str, Any]]] = []
        if len(entries) == len(cmds):
            pairs = list(zip(cmds, entries, strict=True))
        else:  # the tool may merge heredoc lines: pair by the query it echoes
            free = list(cmds)
            for e in entries:
                q = e.get("query")
                hit = next((s for s in free if isinstance(q, str) and (s.text == q or q.startswith(s.text[:200])
                                                                       or s.text.startswith(q[:200]))), None)
                if hit:
                    free.remove(hit)
                    pairs.append((hit, e))
        for st, e in pairs:
            st.exit_code = _exit_of(e)
            out = e.get("result")
            if isinstance(out, str) and out.strip():
                st.output = out[-OUTPUT_KEEP:].strip()
    elif name in ("editor", "apply_patch"):
        failed = block.get("is_error") is True or any(e.get("success") is False for e in entries)
        if failed:
            drop.update(id(s) for s in steps)  # the file was not changed


def sdk_steps(path: str, cwd: str | None, stats: ReadStats, child_for: Callable[[str], str | None],
              *, subagent: bool = False, decoded: Iterable[Any] | None = None) -> Iterator[Step]:
    """Stream one SDK transcript. A turn's steps are held until the next user message brings the tool
    results (exit codes, failed edits), so memory holds one turn, never the session. `decoded`: the
    `messages` array's elements as the search extraction decodes them (stores/cline/search.py), walked
    instead of the stream."""
    held: list[Step] = []
    drop: set[int] = set()
    calls: dict[str, tuple[str, list[Step]]] = {}
    seen_wrapped = False
    user_texts = 0

    def flush() -> Iterator[Step]:
        for st in held:
            if id(st) not in drop:
                yield st
        held.clear()
        drop.clear()

    items = known = 0
    with open_regular(path) as f:
        js = JsonStream(f)
        for m in js.array_at("messages") if decoded is None else decoded:
            items += 1
            if not isinstance(m, dict):
                js.damaged += 1
                continue
            at = parse_time(m.get("ts"))
            role = m.get("role")
            known += role in ("user", "assistant")
            if role == "assistant":
                yield from flush()
                calls.clear()
                for b in _blocks(m.get("content")):
                    t = b.get("type")
                    if t == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                        held.append(Step("message", text=cap_text(b["text"].strip(), STEP_TEXT), at=at))
                    elif t == "tool_use" and isinstance(b.get("name"), str):
                        steps = _sdk_tool(b["name"], b.get("input"), cwd, at, child_for)
                        held.extend(steps)
                        if isinstance(b.get("id"), str):
                            calls[b["id"]] = (b["name"], steps)
                continue
            if role != "user":
                continue
            meta = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
            system = meta.get("displayRole") == "system" or bool(meta.get("kind"))  # compaction summaries
            requests: list[Step] = []
            for b in _blocks(m.get("content")):
                t = b.get("type")
                if t == "tool_result":
                    call = calls.get(str(b.get("tool_use_id")))
                    if call:
                        _apply_result(call[0], call[1], b, drop)
                elif t == "text" and isinstance(b.get("text"), str) and not system:
                    raw = b["text"]
                    wrapped = "<user_input" in raw or "<user_command" in raw
                    seen_wrapped = seen_wrapped or wrapped
                    # Cline 3.x wraps every typed prompt; bare user text next to wrapped prompts is the
                    # runtime's own (loop and mistake notices). Older transcripts are bare throughout; a
                    # subagent's only request is its task.
                    if wrapped or (not seen_wrapped and not (subagent and user_texts)):
                        text = cap_text(clean_request(raw), STEP_TEXT)
                        if text:
                            requests.append(Step("request", text=text, at=at))
                    user_texts += 1
            yield from flush()
            yield from requests
        yield from flush()
    js.account(stats)
    note_unrecognised(stats, items, known, "Cline message")

