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
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from segue.model import ReadStats, Session, Step
from segue.stores.base import Env, SqliteUnavailable
from segue.stores.cline import ClineReader
from segue.stores.cline_legacy import (
    JsonStream,
    clean_request,
    legacy_exit,
    norm_path,
    patch_files,
    search_replace_counts,
)
from tests.conftest import real_fixture

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
        row("1795945918004_ddddd", status="running", pid="12"),
    ])
    live = {sid: s.live for sid, s in listing(reader(home)).items()}
    assert live == {"1795945918001_aaaaa": False, "1795945918002_bbbbb": False,
                    "1795945918003_ccccc": True, "1795945918004_ddddd": False}


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
    # both sources produced SID: the listing merges them by id
    assert sum(1 for s in all_summaries(reader(home)) if s.id == SID) == 2


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
    src = next(s for s in r.sources() if s.kind == "sdk-db")
    with pytest.raises(SqliteUnavailable, match="not a SQLite database"):
        r.summarize(src)
    db.unlink()
    db.mkdir()  # a directory where the DB should be
    src = next(s for s in r.sources() if s.kind == "sdk-db")
    with pytest.raises(SqliteUnavailable, match="not a regular file"):
        r.summarize(src)
    manifests = [s for src in r.sources() if src.kind == "sdk-dir" for s in r.summarize(src)]
    assert [s.first_request for s in manifests] == ["Please run it"]


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
