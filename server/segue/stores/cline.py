"""Cline reader: the SDK store of CLI 3.x / VS Code 4.1, and the legacy task stores (read-only).

SDK store (cline 3.0.65 `@cline/shared` storage paths): Cline dir `$CLINE_DIR` (default `~/.cline`), data dir
`$CLINE_DATA_DIR` (default `<dir>/data`); `db/sessions.db` (`$CLINE_DB_DATA_DIR`; pre-releases kept it in
`sessions/`) and `sessions/<sid>/` (`$CLINE_SESSION_DATA_DIR`) with the manifest `<sid>.json`, the transcript
`<sid>.messages.json` (one pretty-printed JSON document) and one `<agentId>.messages.json` per subagent (no
manifest; its id is `<sid>__<agentId>`). Sessions are listed from the DB, with the manifests and subagent files
as the fallback: the same id from several sources is merged by `locator["priority"]` (DB wins).

Legacy stores (`cline_legacy`): the CLI 1.x/2.x tasks under the same data dir, and the VS Code extension's
`globalStorage/saoudrizwan.claude-dev` under each editor's user dir. Never opened: `secrets.json`,
`settings/providers.json` (credentials).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from segue.model import ReadStats, Session, Step, parse_time
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
from segue.stores.cline_legacy import (
    DEEP_LIMIT,
    OUTPUT_TAIL,
    SDK_EXIT_RE,
    STEP_TEXT,
    JsonStream,
    cap_text,
    clean_request,
    legacy_sources,
    legacy_steps,
    line_count,
    norm_path,
    open_regular,
    patch_files,
    regular_file,
    resolve_path,
    summarize_history,
    summarize_task,
    title_of,
    tool_text,
)

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

_DB_COLUMNS = ("session_id", "pid", "started_at", "ended_at", "status", "model", "cwd", "workspace_root",
               "parent_session_id", "is_subagent", "prompt", "metadata_json", "messages_path", "updated_at")

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
        for db in self.db_paths():
            if os.path.lexists(db):
                yield Source(RUNTIME, str(db), sqlite_fingerprint(db), "sdk-db")
        try:
            entries = list(os.scandir(self.sessions_dir()))
        except OSError:
            entries = []
        for e in entries:
            try:
                if not e.is_dir():
                    continue
            except OSError:
                continue
            # the directory's mtime covers subagent files appearing; the two files cover content changes
            fp = fingerprint(e.path, os.path.join(e.path, e.name + ".json"),
                             os.path.join(e.path, e.name + MESSAGES_SUFFIX))
            yield Source(RUNTIME, e.path, fp, "sdk-dir")
        for root, flavor in self.legacy_roots():
            yield from legacy_sources(str(root), flavor)

    def summarize(self, source: Source) -> list[Session]:
        kind, _, flavor = source.kind.partition(":")
        if kind == "sdk-db":
            return self._summarize_db(source.path)
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

    def _summarize_db(self, db: str) -> list[Session]:
        if not regular_file(db):
            raise SqliteUnavailable(f"{db}: not a regular file")
        if os.path.getsize(db) == 0 and not os.path.exists(db + "-wal"):
            return []  # SQLite's fresh, still empty database
        with _readable_db(db) as path:
            return self._db_rows(db, path)

    def _db_rows(self, db: str, path: str) -> list[Session]:
        con = open_sqlite_readonly(path)
        try:
            cols = {r[1] for r in con.execute("PRAGMA table_info(sessions)")}
            if not cols:
                return []
            select = ", ".join(c if c in cols else f"NULL AS {c}" for c in _DB_COLUMNS)
            rows = con.execute(f"SELECT {select} FROM sessions").fetchall()
        except sqlite3.Error as e:
            raise SqliteUnavailable(f"{db}: {e}") from e
        finally:
            con.close()
        sessions_dir = self._sessions_dir_for_db(db)
        out = []
        for row in rows:
            rec = dict(zip(_DB_COLUMNS, row, strict=True))
            if not isinstance(rec["session_id"], str) or not rec["session_id"]:
                continue
            meta_raw = rec.pop("metadata_json")
            try:
                rec["metadata"] = json.loads(meta_raw) if isinstance(meta_raw, str) else None
            except (ValueError, RecursionError):
                rec["metadata"] = None
            s = _record_session(rec, sessions_dir, PRIO_DB)
            s.locator["db"] = db
            if meta_raw and rec["metadata"] is None:
                s.problems.append("metadata_json unreadable")
            out.append(s)
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
                    rec = json.loads(f.read())
                if not isinstance(rec, dict):
                    raise ValueError("not a JSON object")
                rec.setdefault("session_id", sid)
                lead = _record_session(rec, sessions_dir, PRIO_MANIFEST)
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

    def exists(self, session: Session) -> bool:
        if session.locator.get("kind") == "legacy":
            return os.path.isdir(str(session.locator.get("task_dir") or session.store_path))
        return any(regular_file(p) for p in _message_candidates(session))


# ---------------------------------------------------------------------------------------------------------
# SDK summaries


@contextlib.contextmanager
def _readable_db(db: str) -> Iterator[str]:
    """The path to open. A `-wal` without its `-shm` (a copied or crashed store) would make SQLite create
    the `-shm` next to the database even read-only, so such a pair is read from a private copy instead."""
    if not os.path.exists(db + "-wal") or os.path.exists(db + "-shm"):
        yield db
        return
    with tempfile.TemporaryDirectory(prefix="segue-cline-") as tmp:
        copy = os.path.join(tmp, "sessions.db")
        try:
            shutil.copyfile(db, copy)
            shutil.copyfile(db + "-wal", copy + "-wal")
        except OSError as e:
            raise SqliteUnavailable(f"{db}: {e.strerror or e}") from e
        yield copy


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
    return os.path.join(sessions_dir, root, stem + MESSAGES_SUFFIX)


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == os.path.abspath(root)
    except ValueError:
        return False


def _record_session(rec: dict[str, Any], sessions_dir: str, priority: int) -> Session:
    """A session from a `sessions` row or a manifest (same field names; `metadata` already decoded)."""
    sid = rec["session_id"]
    meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
    first = cap_text(clean_request(rec.get("prompt"))) or None
    title = meta.get("title") if isinstance(meta.get("title"), str) and meta["title"].strip() else None
    git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
    branch = git.get("branch") if isinstance(git.get("branch"), str) and git["branch"].strip() else None
    started = parse_time(rec.get("started_at"))
    times = [t for t in (parse_time(rec.get("updated_at")), parse_time(rec.get("ended_at")), started) if t]
    root, _ = _split_id(sid)
    is_sub = bool(rec.get("is_subagent")) or root != sid
    parent = rec.get("parent_session_id") if isinstance(rec.get("parent_session_id"), str) else None
    if is_sub and not parent:
        parent = root
    # Live: a running status and a process that still exists. Hub-run sessions record the hub daemon's
    # pid, so those count only while the hub lives and the status is still "running"; a crashed run keeps
    # "running" with a dead pid and is not live.
    live = rec.get("status") == "running" and pid_alive(rec.get("pid"))
    local = _local_messages(sessions_dir, sid)
    recorded = rec.get("messages_path") if isinstance(rec.get("messages_path"), str) else None
    # A copied data dir keeps absolute paths into the original: use our own copy then.
    store = recorded if recorded and _inside(recorded, sessions_dir) else local
    s = Session(
        runtime=RUNTIME, id=sid, store_path=store, title=title or title_of(first), first_request=first,
        cwd=norm_path(rec.get("cwd")) or norm_path(rec.get("workspace_root")), branch=branch,
        started_at=started, updated_at=max(times) if times else None,
        model=rec.get("model") if isinstance(rec.get("model"), str) and rec["model"] else None,
        parent_id=parent if is_sub else None, resumable=not is_sub,
        resume_blocker="subagent" if is_sub else None, live=live,
        locator={"kind": "sdk", "priority": priority, "messages": store, "local": local,
                 "recorded": recorded})
    if first is None and not is_sub and rec.get("status") not in ("idle", "pending"):
        s.problems.append("no prompt recorded")
    return s


def _doc_session(path: str, default_id: str, parent: str | None, lead: Session | None, sessions_dir: str,
                 priority: int) -> Session:
    """A session from its messages file alone (subagents have no manifest): the document's head."""
    header: dict[str, Any] = {}
    first = model = None
    problems: list[str] = []
    deep = False
    try:
        with open_regular(path) as f:
            js = JsonStream(f, first_chunk=HEAD_BYTES, limit=DEEP_LIMIT)
            for i, m in enumerate(js.array_at("messages", header)):
                if not isinstance(m, dict) or i > 50:
                    break
                mi = m.get("modelInfo")
                if model is None and isinstance(mi, dict) and isinstance(mi.get("id"), str):
                    model = mi["id"]
                if m.get("role") == "user":
                    first = next((cap_text(clean_request(b["text"])) for b in _blocks(m.get("content"))
                                  if b.get("type") == "text" and isinstance(b.get("text"), str)
                                  and clean_request(b["text"])), None)
                    if first:
                        break
            deep = js.bytes_read > HEAD_BYTES
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
    updated = parse_time(header.get("updated_at")) or (mtime[1] / 1e9 if mtime else None)
    s = Session(
        runtime=RUNTIME, id=sid, store_path=path, title=title_of(first), first_request=first,
        # a subagent works in its parent's cwd and branch (the parent's manifest records them)
        cwd=lead.cwd if lead else None, branch=lead.branch if lead else None,
        started_at=lead.started_at if lead and not is_sub else None, updated_at=updated,
        model=model or (lead.model if lead else None), parent_id=parent if is_sub else None,
        resumable=not is_sub, resume_blocker="subagent" if is_sub else None, problems=problems,
        locator={"kind": "sdk", "priority": priority, "messages": path,
                 "local": _local_messages(sessions_dir, sid), "recorded": None})
    s.started_at = s.started_at or _id_time(sid, is_sub) or updated
    if first is None and not problems:
        s.problems.append("first request not found in the first 4 MiB")
    if deep:
        s.locator["read_deep"] = True
    return s


def _id_time(sid: str, is_sub: bool) -> float | None:
    """Ids carry their creation time: `<ms>_<5>` for a session, `…__agent_<ms>_<6>` for a subagent."""
    part = _split_id(sid)[1] if is_sub else sid
    for tok in part.split("_"):
        if tok.isdigit() and 12 <= len(tok) <= 14:
            return parse_time(int(tok))
    return None


def _message_candidates(session: Session) -> list[str]:
    loc = session.locator
    out = [loc.get("messages"), loc.get("local"), loc.get("recorded"), session.store_path]
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
                with _readable_db(self.db) as path:
                    con = open_sqlite_readonly(path)
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
                st.output = out[-OUTPUT_TAIL:].strip()
    elif name in ("editor", "apply_patch"):
        failed = block.get("is_error") is True or any(e.get("success") is False for e in entries)
        if failed:
            drop.update(id(s) for s in steps)  # the file was not changed


def sdk_steps(path: str, cwd: str | None, stats: ReadStats, child_for: Callable[[str], str | None],
              *, subagent: bool = False) -> Iterator[Step]:
    """Stream one SDK transcript. A turn's steps are held until the next user message brings the tool
    results (exit codes, failed edits), so memory holds one turn, never the session."""
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

    with open_regular(path) as f:
        js = JsonStream(f)
        for m in js.array_at("messages"):
            if not isinstance(m, dict):
                js.damaged += 1
                continue
            at = parse_time(m.get("ts"))
            role = m.get("role")
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

