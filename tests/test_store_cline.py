"""Cline reader: hand-made stores of every generation and bad input, the read-only contract, the real fixture.

Stores are built in tmp_path from small Python data (no static files): the SDK store (sessions.db + manifests +
messages files, current and older DB schemas, WAL and pre-release locations), the legacy CLI store under the
data dir, and the VS Code extension's globalStorage (L0 without taskHistory.json, L1 with it).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import sqlite3
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from segue.model import ReadStats, Session, Step
from segue.stores.base import Env, SqliteUnavailable
from segue.stores.cline import ClineReader
from segue.stores.cline.legacy import (
    JsonStream,
    clean_request,
    legacy_exit,
    norm_path,
    patch_files,
    search_replace_counts,
)
from tests.conftest import assert_steps_match_scenario, load_fixture

SID = "1795945918025_mtrtv"
SID2 = "1795946000000_abcde"
DEAD_PID = 2**22 + 12345  # above the default pid_max: never a live process

COLUMNS = """
    session_id TEXT PRIMARY KEY, source TEXT NOT NULL, pid INTEGER NOT NULL, started_at TEXT NOT NULL,
    ended_at TEXT, exit_code INTEGER, status TEXT NOT NULL, status_lock INTEGER NOT NULL DEFAULT 0,
    interactive INTEGER NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, cwd TEXT NOT NULL,
    workspace_root TEXT NOT NULL, team_name TEXT, enable_tools INTEGER NOT NULL, enable_spawn INTEGER NOT NULL,
    enable_teams INTEGER NOT NULL, parent_session_id TEXT, parent_agent_id TEXT, agent_id TEXT,
    conversation_id TEXT, is_subagent INTEGER NOT NULL DEFAULT 0, prompt TEXT, metadata_json TEXT,
    transcript_path TEXT NOT NULL DEFAULT '', hook_path TEXT NOT NULL, messages_path TEXT,
    updated_at TEXT NOT NULL"""
# The first schema, before the ALTER TABLE migrations added workspace_root, parent_*, agent_id,
# conversation_id, is_subagent, messages_path, metadata_json and transcript_path.
OLD_COLUMNS = """
    session_id TEXT PRIMARY KEY, source TEXT NOT NULL, pid INTEGER NOT NULL, started_at TEXT NOT NULL,
    ended_at TEXT, exit_code INTEGER, status TEXT NOT NULL, interactive INTEGER NOT NULL, provider TEXT NOT NULL,
    model TEXT NOT NULL, cwd TEXT NOT NULL, enable_tools INTEGER NOT NULL, enable_spawn INTEGER NOT NULL,
    enable_teams INTEGER NOT NULL, prompt TEXT, hook_path TEXT NOT NULL, updated_at TEXT NOT NULL"""


# ---------------------------------------------------------------------------------------------------------
# builders


def row(sid: str = SID, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {
        "session_id": sid, "source": "cli", "pid": DEAD_PID, "started_at": "2026-11-29T10:00:00.000Z",
        "ended_at": "2026-11-29T10:05:00.000Z", "exit_code": 0, "status": "completed", "interactive": 0,
        "provider": "openai-compatible", "model": "fake-model", "cwd": "/w/one", "workspace_root": "/w/one",
        "enable_tools": 1, "enable_spawn": 1, "enable_teams": 0, "is_subagent": 0,
        "prompt": "Please run `echo hello > out.txt && ls` for me",
        "metadata_json": json.dumps({"title": "Please run it", "git": {"branch": "feature/x"}}),
        "hook_path": "", "messages_path": None, "updated_at": "2026-11-29T10:05:00.000Z"}
    r.update(kw)
    return r


def write_db(path: Path, rows: list[dict[str, Any]], *, columns: str = COLUMNS, wal: bool = False
             ) -> sqlite3.Connection | None:
    """Create a sessions.db. With wal=True the connection stays open (a live writer) and is returned."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute(f"CREATE TABLE IF NOT EXISTS sessions ({columns})")
    names = [c.split()[0] for c in columns.replace("\n", " ").split(",") if c.strip()]
    for r in rows:
        keys = [k for k in r if k in names]
        con.execute(f"INSERT INTO sessions ({','.join(keys)}) VALUES ({','.join('?' * len(keys))})",
                    [r[k] for k in keys])
    con.commit()
    if wal:
        return con
    con.close()
    return None


def user(text: str, ts: int = 1795946532453, **kw: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "ts": ts, **kw}


def wrapped(text: str) -> str:
    return f'<user_input mode="act">{text}</user_input>'


def assistant(*blocks: dict[str, Any], ts: int = 1795946532500) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "ts": ts,
            "modelInfo": {"id": "fake-model", "provider": "openai-compatible"}}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(cid: str, name: str, inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": inp}


def tool_result(cid: str, name: str, content: Any, **kw: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "name": name,
                                         "content": content, **kw}], "ts": 1795946532600}


def messages_doc(sid: str, messages: list[dict[str, Any]], *, agent: str = "lead", parent: str | None = None
                 ) -> dict[str, Any]:
    origin: dict[str, Any] = {"source": "cli", "mode": "act", "sessionId": sid}
    doc: dict[str, Any] = {"version": 1, "updated_at": "2026-11-29T10:05:00.000Z", "agent": agent,
                           "sessionId": sid}
    if parent:
        origin["parentThreadId"] = parent
        doc["taskType"] = "subagent_task"
    doc["origin"] = origin
    doc["messages"] = messages
    doc["system_prompt"] = "You are Cline. " * 200
    return doc


def write_session(sessions: Path, sid: str, messages: list[dict[str, Any]] | None, *,
                  manifest: dict[str, Any] | None = None, with_manifest: bool = True) -> Path:
    d = sessions / sid
    d.mkdir(parents=True, exist_ok=True)
    if with_manifest:
        man = {"version": 1, "session_id": sid, "source": "cli", "pid": DEAD_PID,
               "started_at": "2026-11-29T10:00:00.000Z", "status": "completed", "interactive": False,
               "provider": "openai-compatible", "model": "fake-model", "cwd": "/w/one",
               "workspace_root": "/w/one", "enable_tools": True, "enable_spawn": True, "enable_teams": False,
               "prompt": "Please run it", "metadata": {"title": "Please run it", "git": {"branch": "main"}},
               "messages_path": str(d / f"{sid}.messages.json")}
        man.update(manifest or {})
        (d / f"{sid}.json").write_text(json.dumps(man, indent=2) + "\n")
    if messages is not None:
        (d / f"{sid}.messages.json").write_text(json.dumps(messages_doc(sid, messages), indent=2) + "\n")
    return d


def reader(home: Path, **environ: str) -> ClineReader:
    return ClineReader(Env(home=home, environ=environ))


def listing(r: ClineReader) -> dict[str, Session]:
    """What the lead's listing keeps: per id, the highest priority (then the newest)."""
    out: dict[str, Session] = {}
    for src in r.sources():
        for s in r.summarize(src):
            old = out.get(s.id)
            if old is None or (s.locator.get("priority", 0), s.sort_time) > (old.locator.get("priority", 0),
                                                                             old.sort_time):
                out[s.id] = s
    return out


def all_summaries(r: ClineReader) -> list[Session]:
    return [s for src in r.sources() for s in r.summarize(src)]


def steps_of(r: ClineReader, s: Session) -> tuple[list[Step], ReadStats]:
    st = ReadStats()
    return list(r.steps(s, st)), st


def data_dir(home: Path) -> Path:
    return home / ".cline" / "data"


# ---------------------------------------------------------------------------------------------------------
# locations


def test_locations_follow_the_override_variables(tmp_path: Path) -> None:
    home = tmp_path / "home"
    r = reader(home)
    paths = {loc.path for loc in r.locations()}
    assert str(home / ".cline" / "data") in paths
    assert str(home / ".cline" / "data" / "db" / "sessions.db") in paths
    assert str(home / ".cline" / "data" / "sessions" / "sessions.db") in paths  # pre-release DB
    assert str(home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev") in paths
    assert str(home / "Library" / "Application Support" / "Cursor" / "User" / "globalStorage" /
               "saoudrizwan.claude-dev") in paths
    assert str(home / ".vscode-server" / "data" / "User" / "globalStorage" / "saoudrizwan.claude-dev") in paths
    assert all(loc.how_to_override for loc in r.locations())
    assert not any("APPDATA-X" in p for p in paths)

    r = reader(home, CLINE_DIR=str(tmp_path / "cd"))
    assert str(tmp_path / "cd" / "data" / "db" / "sessions.db") in {loc.path for loc in r.locations()}
    r = reader(home, CLINE_DIR=str(tmp_path / "cd"), CLINE_DATA_DIR=str(tmp_path / "dd"),
               CLINE_DB_DATA_DIR=str(tmp_path / "db"), CLINE_SESSION_DATA_DIR=str(tmp_path / "ss"),
               APPDATA=str(tmp_path / "APPDATA-X"), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    paths = {loc.path for loc in r.locations()}
    assert str(tmp_path / "dd") in paths
    assert str(tmp_path / "db" / "sessions.db") in paths
    assert str(tmp_path / "ss") in paths
    assert str(tmp_path / "dd" / "tasks") in paths
    assert str(tmp_path / "APPDATA-X" / "VSCodium" / "User" / "globalStorage" / "saoudrizwan.claude-dev") in paths
    assert str(tmp_path / "xdg" / "Windsurf" / "User" / "globalStorage" / "saoudrizwan.claude-dev") in paths
    assert not any(str(home / ".cline") in p for p in paths if "globalStorage" not in p)


def test_missing_stores_list_nothing(tmp_path: Path) -> None:
    r = reader(tmp_path / "nohome")
    assert list(r.sources()) == []
    assert all(not loc.exists for loc in r.locations())


# ---------------------------------------------------------------------------------------------------------
# SDK store: sessions.db, manifests, messages files


def test_db_rows_list_with_their_facts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = data_dir(home) / "db" / "sessions.db"
    child = f"{SID}__agent_1795946100000_abcdef"
    write_db(db, [
        row(SID, prompt=wrapped("Please run it\n[segue-handoff v1 from=codex:0199]"),
            metadata_json=json.dumps({"title": "Please run it", "git": {"branch": "feature/x"}})),
        row(child, is_subagent=1, parent_session_id=SID, prompt="Count the files here",
            metadata_json=None, started_at="2026-11-29T10:01:00.000Z", updated_at="2026-11-29T10:02:00Z"),
        row(SID2, status="running", pid=os.getpid(), cwd="c:/Users/me/src/app", metadata_json=json.dumps(
            {"git": {"branch": ""}}), prompt=None),
    ])
    sessions = listing(reader(home))
    s = sessions[SID]
    assert s.first_request == "Please run it\n[segue-handoff v1 from=codex:0199]"
    assert s.title == "Please run it"
    assert s.cwd == "/w/one"
    assert s.branch == "feature/x"
    assert s.model == "fake-model"
    assert s.started_at == pytest.approx(time.mktime((2026, 11, 29, 10, 0, 0, 0, 0, 0)) - time.timezone)
    assert s.updated_at is not None and s.updated_at - s.started_at == pytest.approx(300)
    assert (s.parent_id, s.resumable, s.resume_blocker, s.live) == (None, True, None, False)
    assert s.store_path == str(data_dir(home) / "sessions" / SID / f"{SID}.messages.json")
    assert s.locator["priority"] > 30

    c = sessions[child]
    assert (c.parent_id, c.resumable, c.resume_blocker) == (SID, False, "subagent")
    assert c.first_request == "Count the files here"
    assert c.branch == "feature/x"  # a subagent row has no git metadata: the parent's checkout
    assert c.store_path == str(data_dir(home) / "sessions" / SID / "agent_1795946100000_abcdef.messages.json")

    live = sessions[SID2]
    assert live.live is True  # running, and the pid is this test process
    assert live.branch is None
    assert live.cwd == "C:\\Users\\me\\src\\app"


def test_live_needs_a_running_status_and_a_live_pid(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_db(data_dir(home) / "db" / "sessions.db", [
        row("1795945918001_aaaaa", status="running", pid=DEAD_PID),
        row("1795945918002_bbbbb", status="completed", pid=os.getpid()),
        row("1795945918003_ccccc", status="running", pid=os.getpid()),
        # a pid that is not an integer never counts (not 12, which the column's INTEGER affinity would make of
        # "12", and which may be a live process on the machine running the tests)
        row("1795945918004_ddddd", status="running", pid="12abc"),
    ])
    r = reader(home)
    got = listing(r)
    live = {sid: s.live for sid, s in got.items()}
    assert live == {"1795945918001_aaaaa": False, "1795945918002_bbbbb": False,
                    "1795945918003_ccccc": True, "1795945918004_ddddd": False}
    # a cached live session stops being live when its process is gone
    cached = Session.from_cache(got["1795945918003_ccccc"].to_cache())
    r.refresh_live([cached])
    assert cached.live is True
    cached.locator["pid"] = DEAD_PID
    r.refresh_live([cached])
    assert cached.live is False


def test_db_wins_over_manifest_and_manifest_is_the_fallback(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sessions = data_dir(home) / "sessions"
    write_session(sessions, SID, [user(wrapped("from messages"))], manifest={"prompt": "from manifest"})
    write_session(sessions, SID2, [user(wrapped("second"))], manifest={
        "prompt": wrapped("only in a manifest"), "cwd": "/w/two", "metadata": {"git": {"branch": "dev"}},
        "status": "running", "pid": os.getpid()})
    write_db(data_dir(home) / "db" / "sessions.db", [row(SID, prompt="from the db")])
    got = listing(reader(home))
    assert got[SID].first_request == "from the db"
    assert got[SID].locator.get("db")
    m = got[SID2]
    assert m.first_request == "only in a manifest"
    assert (m.cwd, m.branch, m.live) == ("/w/two", "dev", True)
    assert m.title == "only in a manifest"
    # the DB source lists SID from its row and reads only the folders the DB lacks
    assert sum(1 for s in all_summaries(reader(home)) if s.id == SID) == 1
    assert [s.kind for s in reader(home).sources()] == ["sdk-db"]


def test_subagent_files_without_manifest_or_db(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sessions = data_dir(home) / "sessions"
    d = write_session(sessions, SID, [user(wrapped("Use a subagent to count files"))],
                      manifest={"cwd": "/w/sub", "metadata": {"git": {"branch": "feature/sub"}}})
    agent = "agent_1795946100000_x1y2z3"
    child_id = f"{SID}__{agent}"
    doc = messages_doc(child_id, [user("Count the files here with `ls | wc -l`."),
                                  assistant(text("3"))], agent="subagent", parent=SID)
    (d / f"{agent}.messages.json").write_text(json.dumps(doc, indent=2))
    (d / f"{agent}.messages.json.tmp").write_text("{")  # an atomic write in progress: ignored
    (d / f"{SID}.compaction.json").write_text("{}")
    got = listing(reader(home))
    assert set(got) == {SID, child_id}
    c = got[child_id]
    assert (c.parent_id, c.resumable, c.resume_blocker) == (SID, False, "subagent")
    assert c.first_request == "Count the files here with `ls | wc -l`."
    assert (c.cwd, c.branch) == ("/w/sub", "feature/sub")  # inherited from the parent's manifest
    assert c.started_at is not None and c.updated_at is not None
    assert not c.problems


def test_foreign_messages_path_resolves_to_our_copy(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sessions = data_dir(home) / "sessions"
    write_session(sessions, SID, [user(wrapped("copied")), assistant(text("hi"))],
                  manifest={"messages_path": f"/elsewhere/.cline/data/sessions/{SID}/{SID}.messages.json"})
    write_db(data_dir(home) / "db" / "sessions.db",
             [row(SID, messages_path=f"/elsewhere/.cline/data/sessions/{SID}/{SID}.messages.json")])
    r = reader(home)
    s = listing(r)[SID]
    assert s.store_path == str(sessions / SID / f"{SID}.messages.json")
    assert r.exists(s)
    steps, _ = steps_of(r, s)
    assert [x.kind for x in steps] == ["request", "message"]


def test_relocated_dirs_and_prerelease_db(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ss = tmp_path / "ss"
    write_session(ss, SID, [user(wrapped("relocated"))])
    write_db(tmp_path / "dbdir" / "sessions.db", [row(SID2, prompt="in the relocated db")])
    r = reader(home, CLINE_SESSION_DATA_DIR=str(ss), CLINE_DB_DATA_DIR=str(tmp_path / "dbdir"))
    got = listing(r)
    assert got[SID2].first_request == "in the relocated db"
    assert got[SID2].store_path == str(ss / SID2 / f"{SID2}.messages.json")
    assert got[SID].store_path == str(ss / SID / f"{SID}.messages.json")

    home2 = tmp_path / "home2"
    pre = data_dir(home2) / "sessions" / "sessions.db"  # pre-releases before 2026-04-17
    write_db(pre, [row(SID, prompt="pre-release")])
    got = listing(reader(home2))
    assert got[SID].first_request == "pre-release"


def test_oldest_db_schema_without_migrated_columns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_db(data_dir(home) / "db" / "sessions.db",
             [row(SID, prompt="old schema"), row(f"{SID}__agent_1795946100000_abcdef", prompt="sub")],
             columns=OLD_COLUMNS)
    got = listing(reader(home))
    assert got[SID].first_request == "old schema"
    assert got[SID].branch is None and got[SID].cwd == "/w/one"
    # no is_subagent column: the id's `__agent_` part still marks a subagent
    assert got[f"{SID}__agent_1795946100000_abcdef"].parent_id == SID


def test_db_without_sessions_table_and_unknown_values(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = data_dir(home) / "db" / "sessions.db"
    db.parent.mkdir(parents=True)
    sqlite3.connect(db).close()
    assert all_summaries(reader(home)) == []
    db.unlink()
    write_db(db, [row(SID, status="weird-new-status", pid=-1, started_at="not a time", metadata_json="{bad",
                      model="", cwd="")])
    s = listing(reader(home))[SID]
    assert s.started_at is None and s.model is None and s.cwd == "/w/one"  # workspace_root
    assert s.problems == ["metadata_json unreadable"]
    assert s.live is False


def test_db_without_sqlite_json_functions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import segue.stores.cline.reader as cline_mod

    real_open = cline_mod.open_sqlite_readonly

    class NoJson:
        def __init__(self, con: sqlite3.Connection) -> None:
            self.con = con

        def execute(self, sql: str, *a: Any) -> Any:
            if "json_" in sql:
                raise sqlite3.OperationalError("no such function: json_valid")
            return self.con.execute(sql, *a)

        def close(self) -> None:
            self.con.close()

    monkeypatch.setattr(cline_mod, "open_sqlite_readonly", lambda p: NoJson(real_open(p)))
    home = tmp_path / "home"
    write_db(data_dir(home) / "db" / "sessions.db", [row(SID), row(SID2, metadata_json="{bad")])
    got = listing(reader(home))
    assert (got[SID].title, got[SID].branch) == ("Please run it", "feature/x")
    assert got[SID2].problems == ["metadata_json unreadable"]


def test_wal_db_reads_rows_still_in_the_wal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = data_dir(home) / "db" / "sessions.db"
    con = write_db(db, [row(SID)], wal=True)
    assert con is not None
    try:
        con.execute("INSERT INTO sessions (session_id, source, pid, started_at, status, interactive, provider, "
                    "model, cwd, workspace_root, enable_tools, enable_spawn, enable_teams, prompt, hook_path, "
                    "updated_at) VALUES (?, 'cli', 1, '2026-11-29T11:00:00Z', 'running', 0, 'p', 'm', '/w', '/w',"
                    " 1, 1, 0, 'fresh', '', '2026-11-29T11:00:00Z')", (SID2,))
        con.commit()
        assert Path(str(db) + "-wal").stat().st_size > 0
        r = reader(home)
        src = next(s for s in r.sources() if s.kind == "sdk-db")
        assert src.fingerprint[1] is not None  # the -wal is part of the fingerprint
        got = {s.id: s for s in r.summarize(src)}
        assert got[SID2].first_request == "fresh"
        # a writer holding a write transaction does not block a WAL reader
        con.execute("BEGIN IMMEDIATE")
        con.execute("UPDATE sessions SET prompt = 'uncommitted' WHERE session_id = ?", (SID,))
        got = {s.id: s for s in r.summarize(src)}
        assert got[SID].first_request != "uncommitted"
        con.rollback()
    finally:
        con.close()


def test_unreadable_db_raises_a_clear_error_and_manifests_still_list(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_session(data_dir(home) / "sessions", SID, [user(wrapped("still here"))])
    db = data_dir(home) / "db" / "sessions.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not sqlite" * 100)
    r = reader(home)
    got = all_summaries(r)
    assert [s.first_request for s in got] == ["Please run it"]  # from the manifest
    assert "not a SQLite database" in got[0].problems[0]
    db.unlink()
    db.mkdir()  # a directory where the DB should be
    got = all_summaries(r)
    assert [s.first_request for s in got] == ["Please run it"]
    assert "not a regular file" in got[0].problems[0]
    shutil.rmtree(data_dir(home) / "sessions")  # nothing to fall back on: the source is skipped, with why
    src = next(s for s in r.sources() if s.kind == "sdk-db")
    with pytest.raises(SqliteUnavailable, match="not a regular file"):
        r.summarize(src)


def test_fingerprints_change_with_content(tmp_path: Path) -> None:
    home = tmp_path / "home"
    d = write_session(data_dir(home) / "sessions", SID, [user(wrapped("a"))])
    r = reader(home)
    before = {s.path: s.fingerprint for s in r.sources()}
    time.sleep(0.01)
    msgs = d / f"{SID}.messages.json"
    msgs.write_text(msgs.read_text().replace("a</user_input>", "ab</user_input>"))
    mid = {s.path: s.fingerprint for s in r.sources()}
    assert mid[str(d)] != before[str(d)]
    (d / "agent_1795946100000_abcdef.messages.json").write_text("{}")
    after = {s.path: s.fingerprint for s in r.sources()}
    assert after[str(d)] != mid[str(d)]


# ---------------------------------------------------------------------------------------------------------
# SDK steps


def sdk_transcript() -> list[dict[str, Any]]:
    agent_task = "Count the files here with `ls | wc -l` and report the number."
    return [
        user(wrapped("Please run `echo hello > out.txt && ls` for me"), ts=1795946532453),
        assistant({"type": "thinking", "thinking": "secret reasoning"}, text("Running it."),
                  tool_use("t1", "run_commands", {"commands": ["echo hello > out.txt && ls",
                                                               "ls /nonexistent-dir", "sleep 999"]})),
        tool_result("t1", "run_commands", [
            {"query": "echo hello > out.txt && ls", "result": "out.txt\n", "success": True},
            {"query": "ls /nonexistent-dir", "result": "[Command exited with code 2]\n\n[stderr]\nno such dir",
             "error": "Command exited with code 2", "success": False},
            {"query": "sleep 999", "result": "", "error": "Command failed: Command timed out after 30000ms",
             "success": False}]),
        assistant(tool_use("t2", "read_files", {"files": [{"path": "/w/one/out.txt"}]}),
                  tool_use("t3", "editor", {"path": "notes.md", "new_text": "a\nb\nc\n"}),
                  tool_use("t4", "editor", {"path": "/w/one/x.py", "old_text": "1\n2\n", "new_text": "3\n"}),
                  tool_use("t5", "editor", {"path": "/w/one/bad.py", "old_text": "zz", "new_text": "y"}),
                  tool_use("t6", "fetch_web_content", {"requests": [{"url": "http://127.0.0.1/x"}]})),
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "name": "read_files", "content": "1 | out"},
            {"type": "tool_result", "tool_use_id": "t3", "name": "editor",
             "content": {"query": "edit:/w/one/notes.md", "result": "ok", "success": True}},
            {"type": "tool_result", "tool_use_id": "t4", "name": "editor",
             "content": [{"query": "edit:/w/one/x.py", "result": "ok", "success": True}]},
            {"type": "tool_result", "tool_use_id": "t5", "name": "editor", "is_error": True,
             "content": [{"query": "edit:/w/one/bad.py", "result": "", "error": "Editor operation failed",
                          "success": False}]},
            {"type": "tool_result", "tool_use_id": "t6", "name": "fetch_web_content", "content": "page"}],
         "ts": 1795946532700},
        user("You seem to be repeating the same tool call.", ts=1795946532710),  # runtime's own notice
        assistant(tool_use("t7", "spawn_agent", {"systemPrompt": "You count.", "task": agent_task}),
                  tool_use("t8", "apply_patch", {"input": "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y"
                                                          "\n+z\n*** Add File: /w/one/new.txt\n+hello\n"
                                                          "*** End Patch"}),
                  tool_use("t9", "run_commands", {"commands": [{"command": "git", "args": ["commit", "-m",
                                                                                             "two words"]}]})),
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t7", "name": "spawn_agent", "content": {"text": "3"}},
            {"type": "tool_result", "tool_use_id": "t9", "name": "run_commands",
             "content": [{"type": "text", "text": json.dumps([{"query": 'git commit -m "two words"',
                                                                "result": "[main 1] two words",
                                                                "success": True}])}]}],
         "ts": 1795946532800},
        {"role": "user", "content": [{"type": "text", "text": "Context summary: earlier work"}],
         "metadata": {"kind": "compaction_summary", "displayRole": "system"}},
        user(f'<user_command slash="review">{wrapped("the diff")}</user_command>', ts=1795946532900),
        user(wrapped("Now write notes.md\n<mode_notice>switched</mode_notice>"), ts=1795946533000),
        assistant(text("All done: notes.md written.")),
    ]


def test_sdk_steps_commands_edits_subagents_requests(tmp_path: Path) -> None:
    home = tmp_path / "home"
    d = write_session(data_dir(home) / "sessions", SID, sdk_transcript())
    agent = "agent_1795946100000_x1y2z3"
    (d / f"{agent}.messages.json").write_text(json.dumps(messages_doc(
        f"{SID}__{agent}", [user("Count the files here with `ls | wc -l` and report the number.")],
        agent="subagent", parent=SID)))
    r = reader(home)
    s = listing(r)[SID]
    steps, stats = steps_of(r, s)
    kinds = [(x.kind, x.text) for x in steps]
    assert kinds[0] == ("request", "Please run `echo hello > out.txt && ls` for me")
    assert ("message", "Running it.") in kinds
    assert not any("secret reasoning" in t for _, t in kinds)
    cmds = [(x.text, x.exit_code) for x in steps if x.kind == "command"]
    assert cmds == [("echo hello > out.txt && ls", 0), ("ls /nonexistent-dir", 2), ("sleep 999", None),
                    ('git commit -m "two words"', 0)]
    assert next(x for x in steps if x.text == "ls /nonexistent-dir").output.endswith("no such dir")
    edits = [(x.path, x.added, x.removed) for x in steps if x.kind == "edit"]
    assert edits == [("/w/one/notes.md", 3, 0), ("/w/one/x.py", 1, 2), ("/w/one/src/a.py", 2, 1),
                     ("/w/one/new.txt", 1, 0)]  # the failed edit of bad.py is left out
    assert not any(x.kind == "tool" and "read_files" in x.text for x in steps)
    assert ("tool", "fetch_web_content: " + json.dumps({"requests": [{"url": "http://127.0.0.1/x"}]})) in kinds
    sub = next(x for x in steps if x.kind == "subagent")
    assert sub.text.startswith("Count the files here") and sub.ref == f"{SID}__{agent}"
    requests = [x.text for x in steps if x.kind == "request"]
    assert requests == ["Please run `echo hello > out.txt && ls` for me", "/review the diff",
                        "Now write notes.md"]
    assert steps[-1] == Step("message", text="All done: notes.md written.", at=steps[-1].at)
    assert stats.damaged_lines == 0 and not stats.problems


def test_sdk_subagent_steps_and_unwrapped_transcripts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    d = write_session(data_dir(home) / "sessions", SID, [
        user("an older transcript: bare prompt"), assistant(text("ok")), user("a bare follow-up"),
        assistant(text("ok again"))])
    agent = "agent_1795946100000_x1y2z3"
    (d / f"{agent}.messages.json").write_text(json.dumps(messages_doc(f"{SID}__{agent}", [
        user("Count the files"), assistant(tool_use("c1", "run_commands", {"commands": ["ls | wc -l"]})),
        tool_result("c1", "run_commands", [{"query": "ls | wc -l", "result": "3", "success": True}]),
        user("Stop repeating yourself."), assistant(text("There are 3 files."))],
        agent="subagent", parent=SID)))
    r = reader(home)
    got = listing(r)
    lead_steps, _ = steps_of(r, got[SID])
    assert [x.text for x in lead_steps if x.kind == "request"] == ["an older transcript: bare prompt",
                                                                   "a bare follow-up"]
    sub_steps, _ = steps_of(r, got[f"{SID}__{agent}"])
    assert [(x.kind, x.text, x.exit_code) for x in sub_steps] == [
        ("request", "Count the files", None), ("command", "ls | wc -l", 0),
        ("message", "There are 3 files.", None)]


def test_sdk_interrupted_turn_has_unknown_exit_code(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_session(data_dir(home) / "sessions", SID, [
        user(wrapped("go")), assistant(tool_use("t1", "run_commands", {"commands": ["make test"]}))])
    r = reader(home)
    steps, _ = steps_of(r, listing(r)[SID])
    assert [(x.kind, x.exit_code) for x in steps] == [("request", None), ("command", None)]


def test_steps_when_the_messages_file_is_gone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_db(data_dir(home) / "db" / "sessions.db", [row(SID)])
    r = reader(home)
    s = listing(r)[SID]
    assert not r.exists(s)
    steps, stats = steps_of(r, s)
    assert steps == [] and stats.problems == ["messages file not found"]


# ---------------------------------------------------------------------------------------------------------
# Legacy stores (CLI 1.x/2.x under the data dir; VS Code globalStorage L0 and L1)


def legacy_task(root: Path, tid: str, *, ui: list[Any] | None = None, api: list[Any] | None = None,
                meta: dict[str, Any] | None = None) -> Path:
    d = root / "tasks" / tid
    d.mkdir(parents=True, exist_ok=True)
    if ui is not None:
        (d / "ui_messages.json").write_text(json.dumps(ui))  # single-line, as Cline writes it
    if api is not None:
        (d / "api_conversation_history.json").write_text(json.dumps(api))
    if meta is not None:
        (d / "task_metadata.json").write_text(json.dumps(meta))
    return d


def env_details(cwd: str) -> str:
    return (f"<environment_details>\n# VSCode Visible Files\nx.py\n\n# Current Time\nnow\n\n"
            f"# Current Working Directory ({cwd}) Files\nx.py\n</environment_details>")


def vscode_root(home: Path, app: str = "Code") -> Path:
    return home / ".config" / app / "User" / "globalStorage" / "saoudrizwan.claude-dev"


def test_legacy_l1_history_lists_tasks_and_orphans(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = vscode_root(home)
    (root / "state").mkdir(parents=True)
    (root / "state" / "taskHistory.json").write_text(json.dumps([
        {"id": "1733000000000", "ts": 1733000900000, "task": "Fix the login bug\nin auth.py",
         "tokensIn": 1, "tokensOut": 2, "totalCost": 0, "cwdOnTaskInitialization": "c:\\Users\\me\\app",
         "modelId": "claude-sonnet-4"},
        {"id": "1733000001000", "ts": 1733000950000, "task": "Gone task", "tokensIn": 0, "tokensOut": 0,
         "totalCost": 0},
        "junk", {"no": "id"}]))
    legacy_task(root, "1733000000000", ui=[{"ts": 1733000000001, "type": "say", "say": "task",
                                            "text": "Fix the login bug\nin auth.py"}])
    legacy_task(root, "1733000002000", ui=[
        {"ts": 1733000002001, "type": "say", "say": "task", "text": "An orphan task"},
        {"ts": 1733000003000, "type": "say", "say": "text", "text": "working"}],
        api=[{"role": "user", "content": [{"type": "text", "text": "<task>\nAn orphan task\n</task>"},
                                          {"type": "text", "text": env_details("/w/orphan")}]}])
    got = listing(reader(home))
    assert set(got) == {"1733000000000", "1733000001000", "1733000002000"}
    a = got["1733000000000"]
    assert a.first_request == "Fix the login bug\nin auth.py" and a.title == "Fix the login bug"
    assert a.cwd == "C:\\Users\\me\\app" and a.model == "claude-sonnet-4" and a.branch is None
    assert a.started_at == pytest.approx(1733000000.0) and a.updated_at == pytest.approx(1733000900.0)
    assert (a.resumable, a.resume_blocker, a.live) == (False, "cli_cannot_reopen", False)
    assert a.store_path == str(root / "tasks" / "1733000000000") and not a.problems
    assert got["1733000001000"].problems == ["task folder missing"]
    o = got["1733000002000"]
    assert o.first_request == "An orphan task" and o.cwd == "/w/orphan"
    assert o.updated_at == pytest.approx(1733000003.0)
    assert o.problems and "taskHistory.json" in o.problems[0]


def test_legacy_history_without_cwd_reads_the_first_turn(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = vscode_root(home, "Code - Insiders")
    (root / "state").mkdir(parents=True)
    (root / "state" / "taskHistory.json").write_text(json.dumps(
        [{"id": "1712000000000", "ts": 1712000500000, "task": "pre-3.15 task"}]))
    legacy_task(root, "1712000000000", api=[{"role": "user", "content": [
        {"type": "text", "text": "<task>\npre-3.15 task\n</task>"}, {"type": "text", "text": env_details("/w/old")}]}])
    s = listing(reader(home))["1712000000000"]
    assert (s.first_request, s.cwd) == ("pre-3.15 task", "/w/old")


def test_sdk_session_without_prompt_takes_the_first_typed_message(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_session(data_dir(home) / "sessions", SID, [user(wrapped("typed in the TUI")), assistant(text("ok"))])
    write_db(data_dir(home) / "db" / "sessions.db", [row(SID, prompt=None, metadata_json=None, interactive=1)])
    s = listing(reader(home))[SID]
    assert (s.first_request, s.title, s.problems) == ("typed in the TUI", "typed in the TUI", [])


def test_legacy_history_damaged_falls_back_to_backup_then_folders(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = data_dir(home)  # the legacy CLI store shares the SDK data dir
    (root / "state").mkdir(parents=True)
    (root / "state" / "taskHistory.json").write_text('[{"id": "1733000000000", "ts": 17')
    (root / "state" / "taskHistory.backup.1733.json").write_text(json.dumps(
        [{"id": "1733000000000", "ts": 1733000900000, "task": "from the backup"}]))
    legacy_task(root, "1733000000000", ui=[])
    got = listing(reader(home))
    s = got["1733000000000"]
    assert s.first_request == "from the backup"
    assert s.locator["flavor"] == "cli" and s.resume_blocker == "cli_cannot_reopen"
    assert "taskHistory.json unreadable" in s.problems[0]
    (root / "state" / "taskHistory.backup.1733.json").unlink()
    s = listing(reader(home))["1733000000000"]
    assert s.first_request is None and any("taskHistory.json unreadable" in p for p in s.problems)


def test_legacy_l0_rebuilds_from_task_folders(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / "Library" / "Application Support" / "Cursor" / "User" / "globalStorage" / \
        "saoudrizwan.claude-dev"
    # <= 3.56: the first request is the first say:"text" (conversationHistoryIndex -1)
    legacy_task(root, "1720000000000", ui=[
        {"ts": 1720000000001, "type": "say", "say": "text", "text": "Old style first request",
         "conversationHistoryIndex": -1},
        {"ts": 1720000000500, "type": "say", "say": "api_req_started", "text": "{}"},
        {"ts": 1720000009000, "type": "say", "say": "completion_result", "text": "done"}],
        api=[{"role": "user", "content": [{"type": "text", "text": "<task>\nOld style first request\n</task>"},
                                          {"type": "text", "text": env_details("/w/old")}]}])
    # only an API history (ui_messages lost)
    legacy_task(root, "1720000100000", api=[{"role": "user", "content": [
        {"type": "text", "text": "<task>\nOnly api history\n</task>\n" + env_details("/w/api")}]}])
    # nothing readable at all
    legacy_task(root, "1720000200000")
    r = reader(home)
    assert {s.kind for s in r.sources()} == {"legacy-task:vscode"}
    got = listing(r)
    a = got["1720000000000"]
    assert (a.first_request, a.cwd) == ("Old style first request", "/w/old")
    assert a.started_at == pytest.approx(1720000000.0) and a.updated_at == pytest.approx(1720000009.0)
    assert a.resume_blocker == "cli_cannot_reopen"
    b = got["1720000100000"]
    assert (b.first_request, b.cwd) == ("Only api history", "/w/api")
    c = got["1720000200000"]
    assert c.first_request is None and c.problems == ["no transcript in task folder"]


def test_legacy_first_request_past_the_head_reads_deeper(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = vscode_root(home, "VSCodium")
    big = "x" * (HEAD := 40 * 1024)
    legacy_task(root, "1720000000000", ui=[
        {"ts": 1720000000000, "type": "say", "say": "api_req_started", "text": big},
        {"ts": 1720000000001, "type": "say", "say": "task", "text": "found deeper"}])
    s = listing(reader(home))["1720000000000"]
    assert s.first_request == "found deeper" and s.locator.get("read_deep") is True and not s.problems
    assert HEAD > 32 * 1024


def legacy_api_transcript(cwd: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nRun the tests\n</task>"},
                                     {"type": "text", "text": env_details(cwd)}], "ts": 1733000000100},
        # native tool calls (3.3x+), results as tool_result blocks
        {"role": "assistant", "content": [
            {"type": "text", "text": "<thinking>plan</thinking>I will run them."},
            {"type": "tool_use", "id": "a1", "name": "execute_command",
             "input": {"command": "npm test", "requires_approval": "false"}},
        ], "ts": 1733000000200},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a1",
             "content": "[execute_command for 'npm test'] Result:\nCommand failed with exit code 1.\nOutput:\n"
                        "1 failing"},
            {"type": "text", "text": env_details(cwd)}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a2", "name": "write_to_file",
             "input": {"path": "src/fix.ts", "content": "a\nb"}},
            {"type": "tool_use", "id": "a3", "name": "replace_in_file",
             "input": {"path": "src/b.ts", "diff": "------- SEARCH\nold1\nold2\n=======\nnew1\n+++++++ REPLACE"}},
            {"type": "tool_use", "id": "a4", "name": "read_file", "input": {"path": "README.md"}},
            {"type": "tool_use", "id": "a5", "name": "execute_command", "input": {"command": "rm -rf /"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a2", "content": [
                {"type": "text", "text": "[write_to_file for 'src/fix.ts'] Result:\nThe content was saved."}]},
            {"type": "tool_result", "tool_use_id": "a3", "content": "[replace_in_file for 'src/b.ts'] Result:\nok"},
            {"type": "tool_result", "tool_use_id": "a4", "content": "[read_file for 'README.md'] Result:\n..."},
            {"type": "tool_result", "tool_use_id": "a5",
             "content": "[execute_command for 'rm -rf /'] Result:\nThe user denied this operation.\n"
                        "The user provided the following feedback:\n<feedback>\nDo not delete things\n</feedback>"},
        ]},
        # older tasks: XML tool calls in the text, results as text blocks
        {"role": "assistant", "content": [{"type": "text", "text":
            "Trying again.\n<execute_command>\n<command>npm test -- --fix</command>\n"
            "<requires_approval>false</requires_approval>\n</execute_command>"}]},
        {"role": "user", "content": [
            {"type": "text", "text": "[execute_command for 'npm test -- --fix'] Result:"},
            {"type": "text", "text": "Command executed.\nOutput:\nall passed"}]},
        {"role": "assistant", "content": [{"type": "text", "text":
            "<execute_command>\n<command>npm run build</command>\n</execute_command>"}]},
        {"role": "user", "content": "[execute_command for 'npm run build'] Result:\n"
                                    "Command executed successfully (exit code 0).\nOutput:\nok"},
        {"role": "assistant", "content": [{"type": "text", "text":
            "<execute_command>\n<command>npm start</command>\n</execute_command>"}]},
        {"role": "user", "content": [{"type": "text", "text":
            "[execute_command for 'npm start'] Result:\nCommand is still running in the user's terminal."}]},
        {"role": "user", "content": [{"type": "text", "text":
            "[TASK RESUMPTION] This task was interrupted 5 minutes ago.\n\nNew instructions for task "
            "continuation:\n<user_message>\nAlso update the changelog\n</user_message>"},
            {"type": "text", "text": env_details(cwd)}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a9", "name": "use_subagents", "input": {"prompt_1": "Find usages"}},
            {"type": "tool_use", "id": "a10", "name": "attempt_completion",
             "input": {"result": "Tests pass and the changelog is updated."}}]},
    ]


def test_legacy_steps_from_api_history(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = vscode_root(home)
    (root / "state").mkdir(parents=True)
    (root / "state" / "taskHistory.json").write_text(json.dumps(
        [{"id": "1733000000000", "ts": 1733000900000, "task": "Run the tests", "cwdOnTaskInitialization": "/w/t"}]))
    legacy_task(root, "1733000000000", api=legacy_api_transcript("/w/t"), ui=[])
    r = reader(home)
    s = listing(r)["1733000000000"]
    steps, stats = steps_of(r, s)
    assert [(x.text, x.exit_code) for x in steps if x.kind == "command"] == [
        ("npm test", 1), ("npm test -- --fix", 0), ("npm run build", 0), ("npm start", None)]
    assert [(x.path, x.added, x.removed) for x in steps if x.kind == "edit"] == [
        ("/w/t/src/fix.ts", 2, None), ("/w/t/src/b.ts", 1, 2)]
    assert [x.text for x in steps if x.kind == "request"] == [
        "Run the tests", "Do not delete things", "Also update the changelog"]
    assert [x.text for x in steps if x.kind == "subagent"] == ["Find usages"]
    assert ("message", "I will run them.") in [(x.kind, x.text) for x in steps]
    assert ("message", "Trying again.") in [(x.kind, x.text) for x in steps]
    assert not any(x.text == "plan" or "README" in x.text for x in steps)
    assert steps[-1].kind == "message" and steps[-1].text == "Tests pass and the changelog is updated."
    assert next(x for x in steps if x.text == "npm test").output == "1 failing"
    assert stats.damaged_lines == 0


def test_legacy_steps_fall_back_to_ui_messages(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / ".vscode-server" / "data" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
    legacy_task(root, "1720000000000", ui=[
        {"ts": 1, "type": "say", "say": "task", "text": "Do the thing"},
        {"ts": 2, "type": "say", "say": "reasoning", "text": "hmm"},
        {"ts": 3, "type": "say", "say": "text", "text": "partial", "partial": True},
        {"ts": 4, "type": "ask", "ask": "command", "text": "make build"},
        {"ts": 5, "type": "say", "say": "command_output", "text": "built"},
        {"ts": 6, "type": "say", "say": "tool", "text": json.dumps(
            {"tool": "newFileCreated", "path": "a.txt", "content": "1\n2\n"})},
        {"ts": 7, "type": "say", "say": "tool", "text": json.dumps({"tool": "readFile", "path": "b.txt"})},
        {"ts": 8, "type": "say", "say": "user_feedback", "text": "looks good"},
        {"ts": 9, "type": "say", "say": "brand_new_kind", "text": "?"},
        {"ts": 10, "type": "say", "say": "completion_result", "text": "Finished."}])
    r = reader(home)
    s = listing(r)["1720000000000"]
    steps, _ = steps_of(r, s)
    assert [(x.kind, x.text) for x in steps] == [
        ("request", "Do the thing"), ("command", "make build"), ("edit", "a.txt"),
        ("request", "looks good"), ("message", "Finished.")]
    assert steps[1].exit_code is None and steps[1].output == "built"
    assert steps[2].added == 2


def test_legacy_duplicate_ids_prefer_the_cli_data_dir(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for root, task in ((data_dir(home), "cli copy"), (vscode_root(home), "editor copy")):
        (root / "state").mkdir(parents=True)
        (root / "state" / "taskHistory.json").write_text(json.dumps([{"id": "1733", "ts": 1, "task": task}]))
    assert listing(reader(home))["1733"].first_request == "cli copy"


# ---------------------------------------------------------------------------------------------------------
# Incremental JSON and text helpers


class Dribble(io.RawIOBase):
    """A file that returns at most `n` bytes per read: every chunk boundary gets exercised."""

    def __init__(self, data: bytes, n: int) -> None:
        self.data, self.n, self.pos = data, n, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = self.n if size < 0 else min(size, self.n)
        out = self.data[self.pos:self.pos + size]
        self.pos += len(out)
        return out


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
def test_json_stream_survives_every_chunk_boundary(chunk: int) -> None:
    items = [{"t": 'quote " back \\ slash \\\\" é中😀', "n": 12345, "x": [1.5e3, None, True]},
             "a string ] with } brackets", 42, -7.25, {"nested": {"deep": [[], {}]}}]
    data = json.dumps({"version": 1, "updated_at": "x", "messages": items, "system_prompt": "tail"},
                      ensure_ascii=False, indent=2).encode()
    header: dict[str, Any] = {}
    js = JsonStream(Dribble(data, chunk), first_chunk=chunk)  # type: ignore[arg-type]
    assert list(js.array_at("messages", header)) == items
    assert header == {"version": 1, "updated_at": "x"} and js.damaged == 0 and not js.truncated


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_json_stream_skips_damage_and_oversized_items(chunk: int) -> None:
    big = "z" * 300 + '\\"' + "z" * 300
    data = ('[{"a":1}, {"b": tru}, garbage, {"c":"' + big + '"}, {"d":[1,2]}, {"e": "cut').encode()
    js = JsonStream(Dribble(data, chunk), first_chunk=chunk)  # type: ignore[arg-type]
    got = list(js.items(cap=256))
    assert got == [{"a": 1}, {"d": [1, 2]}]
    assert (js.damaged, js.oversized, js.truncated) == (2, 1, True)
    stats = ReadStats()
    js.account(stats)
    assert stats.damaged_lines == 2 and len(stats.problems) == 2


def test_json_stream_invalid_utf8_and_dangling_bracket() -> None:
    data = b'[{"t":"ok \xff\xfe bad"}, {"u":2}]\n]'  # bytes that are not UTF-8; a non-atomic write's `]`
    js = JsonStream(io.BytesIO(data))
    got = list(js.items())
    assert got == [{"t": "ok \ufffd\ufffd bad"}, {"u": 2}] and js.damaged == 0


def test_json_stream_head_limit_is_not_truncation() -> None:
    data = json.dumps([{"i": i, "pad": "p" * 100} for i in range(1000)]).encode()
    js = JsonStream(io.BytesIO(data), first_chunk=4096, limit=4096)
    got = list(js.items())
    assert 0 < len(got) < 1000 and js.cut and not js.truncated and js.bytes_read == 4096


def test_clean_request_unwraps_and_drops_injected_context() -> None:
    assert clean_request('<user_input mode="plan">Hi there</user_input>') == "Hi there"
    assert clean_request("<task>\nFix it\n</task>") == "Fix it"
    assert clean_request("<feedback>\nmore\n</feedback>") == "more"
    assert clean_request('<user_command slash="team">Build it</user_command>') == "/team Build it"
    assert clean_request("<task>\nLook at 'a.py' (see below for file content)\n</task>\n"
                         '<file_content path="a.py">\nSECRET\n</file_content>\n'
                         + env_details("/w")) == "Look at 'a.py' (see below for file content)"
    marker = "Continue\n\n[segue-handoff v1 from=claude:1234]"
    assert clean_request(wrapped(marker)) == marker
    assert clean_request("I typed <task> literally") == "I typed <task> literally"
    assert clean_request(None) == ""


def test_path_and_count_helpers() -> None:
    assert norm_path("c:\\\\Users\\\\me\\\\app\\\\") == "C:\\Users\\me\\app"
    assert norm_path("C:/Users/me/app") == "C:\\Users\\me\\app"
    assert norm_path("/home/me/") == "/home/me" and norm_path("/") == "/" and norm_path("") is None
    assert search_replace_counts("<<<<<<< SEARCH\na\n=======\nb\nc\n>>>>>>> REPLACE") == (2, 1)
    assert search_replace_counts("no blocks") == (None, None)
    assert patch_files("*** Delete File: x\n*** Update File: y\n*** Move to: z\n-a\n+b\n+c") == [
        ("x", 0, None), ("z", 2, 1)]
    assert legacy_exit("Command terminated by signal SIGKILL.") == (None, False)
    assert legacy_exit("The user denied this operation.") == (None, True)


# ---------------------------------------------------------------------------------------------------------
# Bad input never crashes and never loses a session


def test_damaged_sdk_files_still_list(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sessions = data_dir(home) / "sessions"
    # 1: manifest damaged -> listed from its messages file
    d1 = write_session(sessions, "1795945918001_aaaaa", [user(wrapped("messages only"))])
    (d1 / "1795945918001_aaaaa.json").write_text('{"session_id": "1795945918001_aaaaa", "prom')
    # 2: messages file truncated mid-write, corrupt element and invalid UTF-8 in the middle
    d2 = write_session(sessions, "1795945918002_bbbbb", None)
    doc = json.dumps(messages_doc("1795945918002_bbbbb", [
        user(wrapped("two")), assistant(text("first")), {"role": "assistant", "content": [text("zz")]},
        assistant(text("second")), assistant(text("third"))]), indent=2).encode()
    doc = doc.replace(b'"zz"', b'"\xff\xfe"').replace(b'"first"', b'"first" ,, "x": }')
    (d2 / "1795945918002_bbbbb.messages.json").write_bytes(doc[: doc.index(b'"third"') + 3])
    # 3: empty files everywhere
    d3 = sessions / "1795945918003_ccccc"
    d3.mkdir()
    (d3 / "1795945918003_ccccc.json").write_text("")
    (d3 / "1795945918003_ccccc.messages.json").write_text("")
    (d3 / "agent_1_x.messages.json").write_text("")
    # 4: directories and dangling links where files belong
    d4 = sessions / "1795945918004_ddddd"
    (d4 / "1795945918004_ddddd.json").mkdir(parents=True)
    (d4 / "1795945918004_ddddd.messages.json").symlink_to(tmp_path / "nowhere")
    (d4 / "agent_2_y.messages.json").mkdir()
    # 5: a stray file in sessions/
    (sessions / "notes.txt").write_text("x")
    r = reader(home)
    got = listing(r)
    assert got["1795945918001_aaaaa"].first_request == "messages only"
    assert "manifest unreadable" in got["1795945918001_aaaaa"].problems[0]
    assert got["1795945918002_bbbbb"].first_request == "Please run it"
    assert "1795945918003_ccccc" not in got or got["1795945918003_ccccc"].problems
    steps, stats = steps_of(r, got["1795945918002_bbbbb"])
    assert [x.text for x in steps] == ["two", "\ufffd\ufffd", "second"]
    assert stats.damaged_lines >= 1  # an unbalanced record resyncs in pieces; each piece counts
    assert "ends mid-record" in " ".join(stats.problems)
    for s in got.values():
        steps_of(r, s)  # never raises


def test_fifo_is_never_opened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sessions = data_dir(home) / "sessions"
    d = write_session(sessions, SID, None)
    os.mkfifo(d / f"{SID}.messages.json")
    os.mkfifo(d / "agent_1795946100000_abcdef.messages.json")
    root = vscode_root(home)
    (root / "state").mkdir(parents=True)
    os.mkfifo(root / "state" / "taskHistory.json")
    (data_dir(home) / "db").mkdir()
    os.mkfifo(data_dir(home) / "db" / "sessions.db")
    t = legacy_task(root, "1733")
    os.mkfifo(t / "ui_messages.json")
    os.mkfifo(t / "api_conversation_history.json")

    def boom(*_: Any) -> None:
        raise TimeoutError("the reader blocked on a FIFO")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(10)
    try:
        r = reader(home)
        found: list[Session] = []
        for src in r.sources():
            try:
                found += r.summarize(src)
            except SqliteUnavailable:
                assert src.kind == "sdk-db"
        for s in found:
            steps_of(r, s)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert {s.id for s in found} >= {SID, "1733"}


@pytest.mark.slow
def test_huge_single_line_transcripts_stream_in_flat_memory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = vscode_root(home)
    output = "o" * (50 * 1024 * 1024)  # one 50 MB element, over the per-record cap
    api = [{"role": "user", "content": [{"type": "text", "text": "<task>\nBig\n</task>"}]}]
    for i in range(3000):
        api.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"c{i}", "name": "execute_command",
                                                      "input": {"command": f"echo {i}"}}]})
        api.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{i}", "content":
                    f"[execute_command for 'echo {i}'] Result:\nCommand executed.\nOutput:\n" + "x" * 8000}]})
    api.insert(3, {"role": "user", "content": [{"type": "text", "text": output}]})
    t = legacy_task(root, "1733000000000", api=api)
    del api, output
    size = (t / "api_conversation_history.json").stat().st_size
    assert size > 70 * 1024 * 1024
    r = reader(home)
    s = listing(r)["1733000000000"]
    tracemalloc.start()
    codes = 0
    st = ReadStats()
    for step in r.steps(s, st):
        codes += step.exit_code == 0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert codes == 3000
    assert peak < 40 * 1024 * 1024, f"peak {peak} bytes for a {size}-byte transcript"
    assert any("over 8 MiB" in p for p in st.problems)


@pytest.mark.slow
def test_summaries_stay_cheap_for_many_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rows = [row(f"17959459{i:05d}_abcde", prompt=wrapped(f"task {i}")) for i in range(4000)]
    write_db(data_dir(home) / "db" / "sessions.db", rows)
    r = reader(home)
    t0 = time.perf_counter()
    got = all_summaries(r)
    dt = time.perf_counter() - t0
    assert len(got) == 4000
    assert dt < 1.0, f"{dt:.3f}s for 4000 DB rows"


# ---------------------------------------------------------------------------------------------------------
# Read-only: nothing under a store is created, changed or removed


def snapshot(root: Path, allow_shm: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            if p.is_symlink() or not p.is_file():
                out[str(p)] = ("node", st.st_mode, st.st_mtime_ns)
                continue
            if p.is_fifo():
                out[str(p)] = ("fifo", st.st_mtime_ns)
                continue
            if allow_shm and name.endswith("-shm"):
                out[str(p)] = ("shm",)  # SQLite may update its read marks: the one allowed change
                continue
            out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns)
    return out


def exercise(r: ClineReader) -> int:
    n = 0
    for src in r.sources():
        try:
            sessions = r.summarize(src)
        except SqliteUnavailable:
            continue
        for s in sessions:
            r.exists(s)
            n += len(steps_of(r, s)[0])
    return n


def build_everything(home: Path) -> None:
    d = write_session(data_dir(home) / "sessions", SID, sdk_transcript())
    (d / "agent_1795946100000_x1y2z3.messages.json").write_text(json.dumps(messages_doc(
        f"{SID}__agent_1795946100000_x1y2z3", [user("Count the files here with `ls | wc -l` and report the "
                                                    "number.")], agent="subagent", parent=SID)))
    root = vscode_root(home)
    (root / "state").mkdir(parents=True)
    (root / "state" / "taskHistory.json").write_text(json.dumps([{"id": "1733000000000", "ts": 1, "task": "t"}]))
    legacy_task(root, "1733000000000", api=legacy_api_transcript("/w"), ui=[{"ts": 1, "say": "task", "text": "t"}])
    legacy_task(vscode_root(home, "Cursor"), "1720000000000", ui=[{"ts": 1, "say": "text", "text": "l0"}])
    (data_dir(home) / "secrets.json").write_text('{"apiKey": "never read"}')


def test_reader_never_writes_rollback_db(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_everything(home)
    write_db(data_dir(home) / "db" / "sessions.db", [row(SID)])
    before = snapshot(home)
    assert exercise(reader(home)) > 10
    assert snapshot(home) == before


def test_reader_never_writes_wal_db_without_wal_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_everything(home)
    db = data_dir(home) / "db" / "sessions.db"
    con = write_db(db, [row(SID)], wal=True)
    assert con is not None
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()  # the last connection removes -wal and -shm; the header still says WAL
    assert not Path(str(db) + "-wal").exists() and sqlite3.connect(db).execute(
        "PRAGMA journal_mode").fetchone()[0] == "wal"
    before = snapshot(home, allow_shm=False)
    assert exercise(reader(home)) > 10
    assert snapshot(home, allow_shm=False) == before


def test_reader_never_writes_wal_db_with_live_writer(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_everything(home)
    db = data_dir(home) / "db" / "sessions.db"
    con = write_db(db, [row(SID), row(SID2)], wal=True)
    assert con is not None
    try:
        assert Path(str(db) + "-wal").stat().st_size > 0
        before = snapshot(home)
        r = reader(home)
        assert exercise(r) > 10
        assert SID2 in listing(r)
        assert snapshot(home) == before
    finally:
        con.close()


def test_reader_never_writes_wal_without_shm(tmp_path: Path) -> None:
    """A copied store with `-wal` but no `-shm`: a read-only open would create the `-shm` in the store."""
    home = tmp_path / "home"
    build_everything(home)
    live = tmp_path / "live"
    con = write_db(live / "sessions.db", [row(SID), row(SID2, prompt="only in the wal")], wal=True)
    assert con is not None
    try:
        db = data_dir(home) / "db" / "sessions.db"
        db.parent.mkdir(parents=True)
        shutil.copyfile(live / "sessions.db", db)
        shutil.copyfile(live / "sessions.db-wal", str(db) + "-wal")
    finally:
        con.close()
    before = snapshot(home, allow_shm=False)
    r = reader(home)
    assert exercise(r) > 10
    assert listing(r)[SID2].first_request == "only in the wal"
    assert snapshot(home, allow_shm=False) == before


def test_read_only_checker_detects_a_touched_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_everything(home)
    before = snapshot(home)
    target = data_dir(home) / "sessions" / SID / f"{SID}.json"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    assert snapshot(home) != before
    before = snapshot(home)
    (data_dir(home) / "sessions" / SID / "stray.tmp").write_text("")
    assert snapshot(home) != before


# ---------------------------------------------------------------------------------------------------------
# The real store written by Cline CLI 3.x (tests/fixtures/real/cline): fails, never skips, when missing


def real_store(tmp_path: Path, sub: str = "") -> tuple[ClineReader, dict[str, Any], Path]:
    # a copy: SQLite may touch a -shm, never in the repository
    env, exp, copy = load_fixture("cline", copy_to=tmp_path / "fx", sub=sub)
    return ClineReader(env), exp, copy


def test_real_fixture_lists_every_session(tmp_path: Path) -> None:
    r, exp, _ = real_store(tmp_path)
    got = listing(r)
    assert exp["sessions"], "expected.json lists no sessions"
    for want in exp["sessions"]:
        s = got.get(want["id"])
        assert s is not None, f"{want['id']} ({want.get('scenario')}) not listed; got {sorted(got)}"
        assert s.first_request == want["first_request"], want["scenario"]
        assert s.cwd == want["cwd"], want["scenario"]
        assert s.branch == want["branch"], want["scenario"]
        assert s.parent_id == want["parent_id"], want["scenario"]
        assert s.resumable is (want["parent_id"] is None)
        assert s.resume_blocker == (None if want["parent_id"] is None else "subagent")
        assert s.started_at and s.updated_at and s.updated_at >= s.started_at
        assert s.model, want["scenario"]
        assert r.exists(s)
        assert not s.problems, (want["scenario"], s.problems)
    for s in got.values():
        assert s.live is False  # every run has ended


def test_real_fixture_steps_match_what_the_agent_did(tmp_path: Path) -> None:
    r, exp, _ = real_store(tmp_path)
    got = listing(r)
    for want in exp["sessions"]:
        steps, stats = steps_of(r, got[want["id"]])
        assert_steps_match_scenario(steps, stats, want)


def test_real_fixture_live_capture_reads_the_wal(tmp_path: Path) -> None:
    r, exp, copy = real_store(tmp_path, "live-capture")
    wal = copy / "live-capture" / "home" / ".cline" / "data" / "db" / "sessions.db-wal"
    assert wal.is_file() and wal.stat().st_size > 0
    sub = next(w for w in exp["sessions"] if w["scenario"] == "sub" and w["parent_id"] is None)
    rows = {s.id: s for src in r.sources() if src.kind == "sdk-db" for s in r.summarize(src)}
    assert sub["id"] in rows, sorted(rows)
    assert rows[sub["id"]].first_request == sub["first_request"]


def test_real_fixture_is_read_only(tmp_path: Path) -> None:
    r, _, copy = real_store(tmp_path)
    before = snapshot(copy)
    assert exercise(r) > 0
    assert snapshot(copy) == before
    r2, _, _ = real_store(tmp_path / "live", "live-capture")
    live = tmp_path / "live" / "fx"
    before = snapshot(live)
    exercise(r2)
    assert snapshot(live) == before


def test_legacy_task_resumed_in_vscode_41_is_listed_once_as_sdk(tmp_path: Path) -> None:
    """VS Code 4.1 migrates a legacy task on resume into an SDK session with the same id."""
    home = tmp_path / "home"
    root = vscode_root(home)
    (root / "state").mkdir(parents=True)
    (root / "state" / "taskHistory.json").write_text(json.dumps([{"id": "1733000000000", "ts": 1, "task": "old"}]))
    legacy_task(root, "1733000000000", ui=[{"ts": 1, "say": "task", "text": "old"}])
    write_db(data_dir(home) / "db" / "sessions.db", [row("1733000000000", source="vscode", prompt="old",
                                                         metadata_json=json.dumps({"legacyTask": True}))])
    s = listing(reader(home))["1733000000000"]
    assert s.locator["kind"] == "sdk" and s.resumable and s.resume_blocker is None


# ---------------------------------------------------------------------------------------------------------
# Real-world shapes: the task as a `text` record, Cline's wrappers, the model in modelInfo, the branch now


def _brief(s: Session, steps: list[Step]) -> Any:
    from segue.brief import build_facts
    from segue.redact import Redactor

    return build_facts(s, iter(steps), ReadStats(), Redactor(environ={}))


def test_task_text_before_the_first_api_request_is_the_first_request(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = vscode_root(home)
    legacy_task(root, "1720000000000", ui=[
        {"ts": 1720000000000, "type": "say", "say": "text", "text": "Add a README", "images": []},
        {"ts": 1720000000100, "type": "say", "say": "api_req_started",
         "text": json.dumps({"request": "<task>\nAdd a README\n</task>\n\n<environment_details>x"})},
        {"ts": 1720000000200, "type": "say", "say": "text", "text": "I'll write it."},
        {"ts": 1720000000300, "type": "say", "say": "user_feedback", "text": "shorter please"},
        {"ts": 1720000000400, "type": "say", "say": "completion_result", "text": "Done."}])
    r = reader(home)
    s = listing(r)["1720000000000"]
    steps, stats = steps_of(r, s)
    assert [(x.kind, x.text) for x in steps] == [
        ("request", "Add a README"), ("message", "I'll write it."), ("request", "shorter please"),
        ("message", "Done.")]
    facts = _brief(s, steps)
    assert s.first_request == facts.first_request == "Add a README" and s.title == "Add a README"
    assert not stats.problems


@pytest.mark.parametrize(("raw", "want"), [
    ("New message to respond to with plan_mode_respond tool (be sure to provide your response in the "
     "<response> parameter):\n<user_message>\nmake it faster\n</user_message>", "make it faster"),
    ("[TASK RESUMPTION] This task was interrupted 3 minutes ago. It may or may not be complete.\n\n"
     "New instructions for task continuation:\n<user_message>\ncarry on with the tests\n</user_message>\n\n"
     + env_details("/w"), "carry on with the tests"),
    ("New instructions for task continuation:\n<user_message>\nand the docs\n</user_message>", "and the docs"),
    ("<task>\nRun the tests\n</task>", "Run the tests"),
    ("plain words", "plain words"),
    *[(t, t) for t in ["I said: New instructions for task continuation: are mine"]],
])
def test_cline_wrappers_are_stripped_to_the_users_words(raw: str, want: str) -> None:
    assert clean_request(raw) == want


def test_api_history_wrappers_and_model_when_the_task_has_only_an_api_history(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = vscode_root(home)
    mi = {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "plan"}
    legacy_task(root, "1720000000001", api=[
        {"role": "user", "content": [{"type": "text", "text": "<task>\nPlan the refactor\n</task>"},
                                     {"type": "text", "text": env_details("/w/p")}], "ts": 1720000000001},
        {"role": "assistant", "content": [{"type": "text", "text": "Here is a plan."}], "ts": 1720000000002,
         "modelInfo": mi},
        {"role": "user", "content": [{"type": "text", "text":
            "New message to respond to with plan_mode_respond tool (be sure to provide your response in the "
            "<response> parameter):\n<user_message>\nsplit step two\n</user_message>"},
            {"type": "text", "text": env_details("/w/p")}], "ts": 1720000000003},
        {"role": "assistant", "content": [{"type": "text", "text": "Split."}], "ts": 1720000000004,
         "modelInfo": mi}])
    r = reader(home)
    s = listing(r)["1720000000001"]
    assert s.model == "claude-sonnet-4-5" and s.cwd == "/w/p" and s.first_request == "Plan the refactor"
    steps, _ = steps_of(r, s)
    assert [x.text for x in steps if x.kind == "request"] == ["Plan the refactor", "split step two"]


def _repo(d: Path, head: str) -> Path:
    (d / ".git").mkdir(parents=True)
    (d / ".git" / "HEAD").write_text(head)
    return d


def test_current_branch_reads_head_worktrees_and_detached(tmp_path: Path) -> None:
    from segue.stores.gitinfo import current_branch

    main = _repo(tmp_path / "main", "ref: refs/heads/feature/x\n")
    (main / "src" / "deep").mkdir(parents=True)
    assert current_branch(str(main)) == "feature/x"
    assert current_branch(str(main / "src" / "deep")) == "feature/x"  # from a subdirectory
    wt_git = main / ".git" / "worktrees" / "wt"
    wt_git.mkdir(parents=True)
    (wt_git / "HEAD").write_text("ref: refs/heads/topic\n")
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {wt_git}\n")
    assert current_branch(str(wt)) == "topic"
    rel = tmp_path / "rel"
    rel.mkdir()
    (rel / ".git").write_text("gitdir: ../main/.git/worktrees/wt\n")
    assert current_branch(str(rel)) == "topic"
    detached = _repo(tmp_path / "det", "3f2a9c0d1e2b3a4c5d6e7f8091a2b3c4d5e6f708\n")
    assert current_branch(str(detached)) is None
    assert current_branch(str(tmp_path / "nowhere")) is None and current_branch(None) is None
    assert current_branch("relative/path") is None
    fifo = _repo(tmp_path / "fifo", "x")
    (fifo / ".git" / "HEAD").unlink()
    os.mkfifo(fifo / ".git" / "HEAD")
    assert current_branch(str(fifo)) is None  # never blocks on a FIFO
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    current_branch(str(main))
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before


def test_no_recorded_branch_takes_the_directorys_branch_now_and_says_so(tmp_path: Path) -> None:
    from segue.brief import render

    home = tmp_path / "home"
    work = _repo(tmp_path / "work", "ref: refs/heads/main\n")
    sessions = data_dir(home) / "sessions"
    write_session(sessions, SID, [user(wrapped("hi"))],
                  manifest={"cwd": str(work), "workspace_root": str(work), "metadata": {"title": "hi"}})
    write_session(sessions, SID2, [user(wrapped("there"))], manifest={"cwd": str(work)})  # records "main"
    r = reader(home)
    got = listing(r)
    s, recorded = got[SID], got[SID2]
    assert s.branch == "main" and s.branch_is_current
    assert recorded.branch == "main" and not recorded.branch_is_current
    (work / ".git" / "HEAD").write_text("ref: refs/heads/later\n")
    text = render(_brief(s, steps_of(r, s)[0]))
    assert "| Branch | `later` (the directory's branch now; the session recorded none) |" in text
    assert "the session recorded none" not in render(_brief(recorded, steps_of(r, recorded)[0]))


def test_unrecognised_elements_and_undecodable_tool_text_are_problems(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = vscode_root(home)
    legacy_task(root, "1720000000002", api=[{"foo": 1}, {"bar": 2}])
    legacy_task(root, "1720000000003", ui=[
        {"ts": 1, "type": "say", "say": "task", "text": "go"},
        {"ts": 2, "type": "say", "say": "tool", "text": '{"tool": "editedExistingFile", "path": '}])
    sessions = data_dir(home) / "sessions"
    d = write_session(sessions, SID, [])
    doc = messages_doc(SID, [])
    doc["messages"] = [{"who": "x"}, {"what": "y"}]
    (d / f"{SID}.messages.json").write_text(json.dumps(doc))
    r = reader(home)
    got = listing(r)
    assert steps_of(r, got["1720000000002"])[1].problems == ["no Cline API history records recognised in 2 elements"]
    assert steps_of(r, got["1720000000003"])[1].problems == ["1 tool calls whose arguments could not be decoded"]
    assert steps_of(r, got[SID])[1].problems == ["no Cline message records recognised in 2 elements"]
