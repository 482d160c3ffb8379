"""OpenCode reader: hand-made stores of every generation (E0/E1 JSON, E2 SQLite, E3 v2 tables) and bad
input, the read-only contract, and the real fixture written by OpenCode 1.18.33."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from segue import listing as listing_mod
from segue.model import ReadStats, Session, Step
from segue.stores import opencode as oc
from segue.stores.base import MAX_TEXT, Env, SqliteUnavailable
from segue.stores.opencode import OpencodeReader, cap_text, unquote_prompt
from segue.stores.text import OUTPUT_KEEP
from tests.conftest import assert_steps_match_scenario, load_fixture

# The 1.18.33 tables a reader touches, with the columns the real CLI creates (sqlite_master of a real DB).
SCHEMA = """
CREATE TABLE `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text,
  `icon_url` text, `icon_url_override` text, `icon_color` text, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `time_initialized` integer, `sandboxes` text NOT NULL, `commands` text);
CREATE TABLE `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL, `version` text NOT NULL,
  `share_url` text, `summary_additions` integer, `summary_deletions` integer, `summary_files` integer,
  `summary_diffs` text, `metadata` text, `cost` real DEFAULT 0 NOT NULL, `tokens_input` integer DEFAULT 0 NOT NULL,
  `tokens_output` integer DEFAULT 0 NOT NULL, `tokens_reasoning` integer DEFAULT 0 NOT NULL,
  `tokens_cache_read` integer DEFAULT 0 NOT NULL, `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text,
  `permission` text, `agent` text, `model` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `session_message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `type` text NOT NULL,
  `seq` integer NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
"""
# 1.2.0-era session table: no workspace/agent/model columns yet.
OLD_SESSION = """
CREATE TABLE `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL, `parent_id` text, `slug` text NOT NULL,
  `directory` text NOT NULL, `title` text NOT NULL, `version` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
"""
V2_SCHEMA = """
CREATE TABLE `session_v2` (`id` text PRIMARY KEY, `parent_id` text, `directory` text NOT NULL,
  `title` text NOT NULL, `model` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL);
"""

T0 = 1795900000000  # ms
SID = "ses_dd94048eaffeOWoPAGiNBuwKme"
SID2 = "ses_dd94048eaffdAAAAAAAAAAAAAA"
CHILD = "ses_dd93f00000ffChildChildChil"
MARKER = "[segue-handoff v1 from=codex:0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b]"


def data_dir(home: Path) -> Path:
    return home / ".local" / "share" / "opencode"


def reader(home: Path, **environ: str) -> OpencodeReader:
    return OpencodeReader(Env(home=home, environ=environ))


def all_summaries(r: OpencodeReader) -> list[Session]:
    out: list[Session] = []
    for src in r.sources():
        out += r.summarize(src)
    return out


def listing(r: OpencodeReader) -> dict[str, Session]:
    """Sessions by id, de-duplicated as the listing does (higher locator priority wins)."""
    found: dict[tuple[str, str], Session] = {}
    for s in all_summaries(r):
        listing_mod._keep(found, s)
    return {k[1]: v for k, v in found.items()}


def steps_of(r: OpencodeReader, s: Session) -> tuple[list[Step], ReadStats]:
    stats = ReadStats()
    return list(r.steps(s, stats)), stats


class Db:
    """A hand-made E2 database (the real 1.18.33 schema); `wal=True` leaves the writer connection open."""

    def __init__(self, path: Path, schema: str = SCHEMA, wal: bool = False) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.con = sqlite3.connect(path)
        if wal:
            self.con.execute("PRAGMA journal_mode=WAL")
        self.con.executescript(schema)
        self.n = 0
        self.t = T0

    def tick(self) -> int:
        self.t += 1000
        self.n += 1
        return self.t

    def session(self, sid: str, directory: str = "/w/one", title: str = "New session - 2026-11-29T10:00:00.000Z",
                parent: str | None = None, model: str | None = '{"id":"fake-model","providerID":"fake"}',
                created: int | None = None, updated: int | None = None) -> None:
        cols = {r[1] for r in self.con.execute("PRAGMA table_info(session)")}
        row: dict[str, Any] = {"id": sid, "project_id": "global", "parent_id": parent, "slug": "calm-sailor",
                               "directory": directory, "title": title, "version": "1.18.33",
                               "time_created": created or T0, "time_updated": updated or T0}
        if "model" in cols:
            row["model"] = model
        self.con.execute(f"INSERT INTO session ({','.join(row)}) VALUES ({','.join('?' * len(row))})",
                         list(row.values()))

    def message(self, sid: str, data: dict[str, Any] | str, t: int | None = None) -> str:
        t = t or self.tick()
        mid = f"msg_{t:012x}{self.n:04d}aaaaaaaaaa"
        raw = data if isinstance(data, str) else json.dumps(data)
        self.con.execute("INSERT INTO message VALUES (?,?,?,?,?)", (mid, sid, t, t, raw))
        return mid

    def part(self, sid: str, mid: str, data: dict[str, Any] | str | bytes) -> str:
        t = self.tick()
        pid = f"prt_{t:012x}{self.n:04d}bbbbbbbbbb"
        raw = data if isinstance(data, (str, bytes)) else json.dumps(data)
        self.con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (pid, mid, sid, t, t, raw))
        return pid

    def user(self, sid: str, *texts: str | dict[str, Any], diffs: list[dict[str, Any]] | None = None,
             extra: dict[str, Any] | None = None) -> str:
        data: dict[str, Any] = {"role": "user", "time": {"created": self.t}, "agent": "build",
                                "model": {"providerID": "fake", "modelID": "fake-model"}, **(extra or {})}
        if diffs is not None:
            data["summary"] = {"diffs": diffs}
        mid = self.message(sid, data)
        for t in texts:
            self.part(sid, mid, t if isinstance(t, dict) else {"type": "text", "text": t})
        return mid

    def assistant(self, sid: str, *parts: dict[str, Any], cwd: str = "/w/one", model: str = "fake-model",
                  finish: str = "stop") -> str:
        mid = self.message(sid, {"parentID": "msg_x", "role": "assistant", "mode": "build", "agent": "build",
                                 "path": {"cwd": cwd, "root": cwd}, "modelID": model, "providerID": "fake",
                                 "time": {"created": self.t}, "finish": finish})
        self.part(sid, mid, {"type": "step-start", "snapshot": "abc"})
        for p in parts:
            self.part(sid, mid, p)
        return mid

    def close(self) -> None:
        self.con.commit()
        self.con.close()


def bash(cmd: str, exit: int | None = 0, status: str = "completed", output: str = "ok\n") -> dict[str, Any]:
    state: dict[str, Any] = {"status": status, "input": {"command": cmd, "description": "run"}}
    if status == "completed":
        state.update(output=output, metadata={"output": output, "exit": exit, "truncated": False},
                     title=cmd, time={"start": T0 + 5, "end": T0 + 9})
    elif status == "running":
        state.update(metadata={"output": ""}, time={"start": T0 + 5})
    elif status == "error":
        state.update(error="Command timed out", time={"start": T0 + 5, "end": T0 + 9})
    return {"type": "tool", "tool": "bash", "callID": "call_1", "state": state}


def tool(name: str, inp: dict[str, Any], metadata: dict[str, Any] | None = None, output: str = "",
         status: str = "completed") -> dict[str, Any]:
    return {"type": "tool", "tool": name, "callID": f"call_{name}",
            "state": {"status": status, "input": inp, "output": output, "metadata": metadata or {},
                      "title": name, "time": {"start": T0, "end": T0 + 1}}}


def text(t: str, **kw: Any) -> dict[str, Any]:
    return {"type": "text", "text": t, **kw}


def standard_db(home: Path, wal: bool = False) -> Db:
    """A root session with a quoted prompt, commands, edits and a subagent, plus its child session."""
    db = Db(data_dir(home) / "opencode.db", wal=wal)
    db.session(SID, title="Fake title", updated=T0 + 1000)
    db.user(SID, '"Please run `echo hello > out.txt && ls` for me"',
            diffs=[{"file": "out.txt", "patch": "@@ …", "additions": 1, "deletions": 0, "status": "added"}])
    db.assistant(SID, bash("echo hello > out.txt && ls", 0),
                 {"type": "patch", "hash": "abc", "files": ["/w/one/out.txt"]},
                 {"type": "step-finish", "reason": "tool-calls"}, finish="tool-calls")
    db.assistant(SID, text("Done. I created out.txt."))
    db.user(SID, text("Called the Read tool with …", synthetic=True), '"Now list /nonexistent-dir"')
    db.assistant(SID, bash("ls /nonexistent-dir", 2, output="ls: cannot access\n"),
                 tool("write", {"filePath": "/w/one/notes.md", "content": "a\nb\nc\n"},
                      {"diagnostics": {}, "filepath": "/w/one/notes.md", "exists": False}),
                 tool("edit", {"filePath": "/w/one/app.py", "oldString": "x", "newString": "y"},
                      {"filediff": {"file": "/w/one/app.py", "additions": 3, "deletions": 1}}),
                 tool("read", {"filePath": "/w/one/app.py"}),
                 {"type": "reasoning", "text": "thinking hard"},
                 tool("todowrite", {"todos": [{"content": "x"}]}),
                 finish="tool-calls")
    db.assistant(SID, tool("task", {"description": "Count files", "prompt": "Count the files here",
                                    "subagent_type": "general"},
                           {"sessionId": CHILD, "parentSessionId": SID},
                           output=f'<task id="{CHILD}" state="completed">'), finish="tool-calls")
    db.assistant(SID, bash("sleep 300", status="running"), finish="tool-calls")
    db.assistant(SID, text("All done; notes.md explains the failure."))
    db.session(CHILD, title="Count files (@general subagent)", parent=SID, created=T0 + 500)
    db.user(CHILD, "Count the files here")
    db.assistant(CHILD, bash("ls | wc -l", 0))
    return db


# ---------------------------------------------------------------------------------------------------------
# Places


def test_locations_follow_the_override_variables(tmp_path: Path) -> None:
    home = tmp_path / "home"
    r = reader(home)
    paths = [loc.path for loc in r.locations()]
    assert paths[0] == str(data_dir(home))
    assert str(data_dir(home) / "opencode.db") in paths
    xdg = tmp_path / "xdg"
    r = reader(home, XDG_DATA_HOME=str(xdg), OPENCODE_DB="custom/my.db")
    assert r.data_dir() == xdg / "opencode"
    assert r._env_db() == xdg / "opencode" / "custom" / "my.db"
    assert all("XDG_DATA_HOME" in loc.how_to_override or "OPENCODE_DB" in loc.how_to_override
               or "legacy" in loc.how_to_override for loc in r.locations())
    assert reader(home, OPENCODE_DB="/abs/x.db")._env_db() == Path("/abs/x.db")
    assert reader(home, OPENCODE_DB=":memory:")._env_db() is None
    missing = [loc for loc in reader(home, OPENCODE_DB="/abs/x.db").locations() if loc.path == "/abs/x.db"]
    assert [loc.exists for loc in missing] == [False]


def test_missing_stores_list_nothing(tmp_path: Path) -> None:
    r = reader(tmp_path / "nohome")
    assert list(r.sources()) == []
    assert not any(loc.exists for loc in r.locations())


def test_channel_dbs_and_opencode_db_variable_are_sources(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for name in ("opencode.db", "opencode-dev.db"):
        db = Db(data_dir(home) / name)
        db.session(f"ses_{name[:12].replace('.', '_').replace('-', '_')}aaaaaaaaaaaaaa")
        db.close()
    (data_dir(home) / "opencode.db-wal").write_bytes(b"")  # a side file is never a source
    (data_dir(home) / "other.db").write_bytes(b"")
    elsewhere = tmp_path / "elsewhere.db"
    Db(elsewhere).close()
    r = reader(home, OPENCODE_DB=str(elsewhere))
    assert sorted(Path(s.path).name for s in r.sources()) == ["elsewhere.db", "opencode-dev.db", "opencode.db"]
    # the same file named twice is one source
    r = reader(home, OPENCODE_DB="opencode.db")
    assert sorted(Path(s.path).name for s in r.sources()) == ["opencode-dev.db", "opencode.db"]
    assert len(all_summaries(r)) == 2


# ---------------------------------------------------------------------------------------------------------
# E2: SQLite


def test_db_sessions_list_with_their_facts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    standard_db(home).close()
    got = listing(reader(home))
    s = got[SID]
    assert s.first_request == "Please run `echo hello > out.txt && ls` for me"  # one pair of quotes stripped
    assert s.title == "Fake title"
    assert s.cwd == "/w/one" and s.branch is None and s.model == "fake-model"
    assert s.started_at == T0 / 1000
    assert s.updated_at is not None and s.updated_at > (T0 + 1000) / 1000  # later messages count
    assert (s.parent_id, s.resumable, s.resume_blocker, s.live) == (None, True, None, False)
    assert s.store_path == str(data_dir(home) / "opencode.db")
    assert s.locator["priority"] == oc.PRIO_DB and not s.problems
    c = got[CHILD]
    assert c.parent_id == SID and c.resumable is False and c.resume_blocker == "subagent"
    assert c.first_request == "Count the files here"
    assert c.title == "Count files (@general subagent)"
    assert json.loads(json.dumps(s.locator)) == s.locator


def test_default_titles_give_way_to_the_first_request(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = Db(data_dir(home) / "opencode.db")
    db.session(SID)  # "New session - <ISO>"
    db.user(SID, "Fix the parser\nand add a test")
    db.session(SID2, title="Child session - 2026-11-29T10:00:00.000Z", parent=SID)
    db.user(SID2, '"Count files"')
    db.close()
    got = listing(reader(home))
    assert got[SID].title == "Fix the parser" and got[SID].first_request == "Fix the parser\nand add a test"
    assert got[SID2].title == "Count files"


def test_first_request_skips_synthetic_and_ignored_parts_and_reads_deeper(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = Db(data_dir(home) / "opencode.db")
    db.session(SID)
    db.user(SID, text("<file>contents</file>", synthetic=True), text("ignored", ignored=True),
            {"type": "file", "mime": "text/plain", "url": "file:///x"}, "the real words")
    db.session(SID2, title="Kept title")
    for _ in range(oc.FIRST_MESSAGES + 2):  # only synthetic user turns first: the request lies deeper
        db.user(SID2, text("system reminder", synthetic=True))
    db.user(SID2, "finally, my request")
    db.session("ses_nomessages0000aaaaaaaaaaaa", title="Empty")
    db.session("ses_onlyassistant0aaaaaaaaaaa", title="Only replies")
    db.assistant("ses_onlyassistant0aaaaaaaaaaa", text("hello"))
    db.session("ses_summarytitle00aaaaaaaaaaa")
    db.user("ses_summarytitle00aaaaaaaaaaa", text("x", synthetic=True), extra={"summary": {"title": "Summed up"}})
    db.close()
    got = listing(reader(home))
    assert got[SID].first_request == "the real words" and "read_deep" not in got[SID].locator
    assert got[SID2].first_request == "finally, my request" and got[SID2].locator["read_deep"] is True
    assert not got[SID2].problems
    empty = got["ses_nomessages0000aaaaaaaaaaaa"]
    assert (empty.first_request, empty.title, empty.problems) == ("Empty", "Empty", [])  # session.title
    only = got["ses_onlyassistant0aaaaaaaaaaa"]
    assert only.first_request == "Only replies"  # falls back to session.title
    assert only.problems == ["no user request found in its messages"]
    assert got["ses_summarytitle00aaaaaaaaaaa"].first_request == "Summed up"


def test_marker_line_survives_unquoting_and_the_cap(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = Db(data_dir(home) / "opencode.db")
    db.session(SID)
    db.user(SID, json.dumps(f"Continue the work.\n{MARKER}")[:-1].replace("\\n", "\n") + '"')
    long = "Brief line with \"quotes\".\n" * 800 + MARKER
    db.session(SID2)
    db.user(SID2, '"' + long.replace('"', '\\"') + '"')
    db.close()
    got = listing(reader(home))
    assert got[SID].first_request == f"Continue the work.\n{MARKER}"
    fr = got[SID2].first_request
    assert fr is not None and len(fr.encode()) <= MAX_TEXT
    assert fr.startswith('Brief line with "quotes".') and fr.endswith("\n" + MARKER)


def test_oldest_db_schema_without_model_columns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = Db(data_dir(home) / "opencode.db", schema=OLD_SESSION)
    db.session(SID, title="Old one")
    db.message(SID, {"role": "user", "time": {"created": T0}})  # no model on the user message
    mid = db.message(SID, {"role": "user", "time": {"created": T0}})
    db.part(SID, mid, text("hello from 1.2"))
    db.assistant(SID, text("hi"), model="claude-sonnet-4-5")
    db.close()
    s = listing(reader(home))[SID]
    assert (s.first_request, s.model, s.title) == ("hello from 1.2", "claude-sonnet-4-5", "Old one")


def test_db_with_unknown_values_and_damaged_rows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = Db(data_dir(home) / "opencode.db")
    db.session(SID, directory="", model="{not json", title="")
    db.message(SID, "{not json")
    db.message(SID, '{"role":"user","time":{"created":')  # cut: holds the substrings the filters test
    mid = db.message(SID, {"role": "user", "time": "yesterday", "weird": [1, 2],
                           "summary": {"diffs": {"odd": "shape"}}})
    db.part(SID, mid, "{broken")
    db.part(SID, mid, '{"type":"text","text":"cut mid-wr')
    db.part(SID, mid, {"type": "text", "text": 42})
    db.part(SID, mid, {"type": "hologram", "text": "x"})
    db.part(SID, mid, text("valid after damage"))
    amid = db.assistant(SID, {"type": "tool", "tool": "bash", "state": "not a dict"},
                        {"type": "tool", "tool": "bash", "state": {"status": "pending", "input": {}}},
                        {"type": "tool", "tool": "mystery", "state": {"status": "completed", "input": {"q": "z"}}})
    db.part(SID, amid, b"\xff\xfe invalid utf-8 \x80")  # stored as a BLOB
    db.con.execute("INSERT INTO part VALUES ('prt_zz', ?, ?, 1, 1, CAST(? AS TEXT))",
                   (amid, SID, b'{"type":"text","text":"b\xffad"}'))  # TEXT with invalid UTF-8
    db.close()
    r = reader(home)
    s = listing(r)[SID]
    assert s.first_request == "valid after damage" and s.cwd is None and s.model == "fake-model"
    assert s.title == "valid after damage"
    steps, stats = steps_of(r, s)
    assert [(x.kind, x.text) for x in steps] == [("request", "valid after damage"), ("tool", "mystery: z"),
                                                 ("message", "b\ufffdad")]
    assert stats.damaged_lines == 5 and not stats.problems  # two messages, two broken parts, the BLOB part


def test_steps_commands_edits_subagents_and_messages(tmp_path: Path) -> None:
    home = tmp_path / "home"
    standard_db(home).close()
    r = reader(home)
    got = listing(r)
    steps, stats = steps_of(r, got[SID])
    assert stats.damaged_lines == 0 and not stats.problems
    kinds = [(x.kind, x.text) for x in steps]
    assert kinds == [
        ("request", "Please run `echo hello > out.txt && ls` for me"),
        ("command", "echo hello > out.txt && ls"),
        ("edit", "/w/one/out.txt"),
        ("message", "Done. I created out.txt."),
        ("request", "Now list /nonexistent-dir"),
        ("command", "ls /nonexistent-dir"),
        ("edit", "/w/one/notes.md"),
        ("edit", "/w/one/app.py"),
        ("tool", 'todowrite: {"todos": [{"content": "x"}]}'),
        ("subagent", "Count files"),
        ("command", "sleep 300"),
        ("message", "All done; notes.md explains the failure."),
    ]
    cmds = [(x.text, x.exit_code) for x in steps if x.kind == "command"]
    assert cmds == [("echo hello > out.txt && ls", 0), ("ls /nonexistent-dir", 2), ("sleep 300", None)]
    edits = {x.path: (x.added, x.removed) for x in steps if x.kind == "edit"}
    assert edits == {"/w/one/out.txt": (1, 0), "/w/one/notes.md": (3, 0), "/w/one/app.py": (3, 1)}
    assert next(x.ref for x in steps if x.kind == "subagent") == CHILD
    assert steps[1].output == "ok\n"
    child_steps, _ = steps_of(r, got[CHILD])
    assert [(x.kind, x.text, x.exit_code) for x in child_steps] == [
        ("request", "Count the files here", None), ("command", "ls | wc -l", 0)]


def test_steps_exit_codes_of_every_tool_state(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = Db(data_dir(home) / "opencode.db")
    db.session(SID)
    db.user(SID, "go")
    killed = bash("yes", None)
    db.assistant(SID, bash("true", 0), bash("false", 1), killed, bash("timeout", status="error"),
                 bash("pending", status="pending"), bash("running", status="running"))
    db.close()
    r = reader(home)
    steps, _ = steps_of(r, listing(r)[SID])
    assert [(x.text, x.exit_code) for x in steps if x.kind == "command"] == [
        ("true", 0), ("false", 1), ("yes", None), ("timeout", None), ("pending", None), ("running", None)]


def test_leftover_diffs_and_task_ids_from_output(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = Db(data_dir(home) / "opencode.db")
    db.session(SID, directory="/w/two")
    db.user(SID, "change things", diffs=[{"file": "src/a.py", "additions": 4, "deletions": 2},
                                          {"file": "/abs/b.py", "additions": 1, "deletions": 0}])
    db.assistant(SID, tool("task", {"prompt": "Do the sub thing"}, output=f"task_id: {CHILD}\n\n<task_result>"),
                 tool("apply_patch", {"patchText": "*** Begin Patch"},
                      {"files": [{"filePath": "/w/two/c.py", "additions": 7, "deletions": 0}]}))
    db.user(SID, "next turn")
    db.close()
    r = reader(home)
    steps, _ = steps_of(r, listing(r)[SID])
    assert [(x.kind, x.text, x.ref) for x in steps if x.kind == "subagent"] == [
        ("subagent", "Do the sub thing", CHILD)]
    edits = [(x.path, x.added, x.removed) for x in steps if x.kind == "edit"]
    assert edits == [("/w/two/c.py", 7, 0), ("/w/two/src/a.py", 4, 2), ("/abs/b.py", 1, 0)]
    assert [x.kind for x in steps][-1] == "request"  # leftovers come out before the next turn


@pytest.mark.slow
def test_huge_tool_output_is_reduced_in_sql(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = Db(data_dir(home) / "opencode.db")
    db.session(SID)
    db.user(SID, "make noise")
    big = "x" * (50 * 1024 * 1024) + "\nTHE END\n"
    db.assistant(SID, bash("cat big.log", 0, output=big), text("y" * (oc.BIG_PART * 2)))
    db.close()
    r = reader(home)
    s = listing(r)[SID]
    assert s.first_request == "make noise"
    steps, stats = steps_of(r, s)
    cmd = next(x for x in steps if x.kind == "command")
    assert (cmd.text, cmd.exit_code) == ("cat big.log", 0)
    assert cmd.output is not None and cmd.output.endswith("THE END\n") and len(cmd.output) <= OUTPUT_KEEP
    msg = next(x for x in steps if x.kind == "message")
    assert len(msg.text.encode()) <= oc.STEP_TEXT
    assert stats.bytes_read > 50 * 1024 * 1024


# ---------------------------------------------------------------------------------------------------------
# E3: session_v2 + session_message, read only when session_message has rows


def test_v2_tables_are_read_only_when_session_message_has_rows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = Db(data_dir(home) / "opencode.db", schema=SCHEMA + V2_SCHEMA)
    db.session(SID, title="v1 row")
    db.user(SID, "from v1")
    db.close()
    r = reader(home)
    got = listing(r)
    assert got[SID].first_request == "from v1" and got[SID].locator["kind"] == "db"
    con = sqlite3.connect(data_dir(home) / "opencode.db")
    con.execute("INSERT INTO session_v2 VALUES (?,?,?,?,?,?,?)",
                (SID2, None, "/w/v2", "V2 title", '{"id":"m2"}', T0, T0 + 5000))
    con.execute("INSERT INTO session_v2 VALUES (?,?,?,?,?,?,?)",
                (CHILD, SID2, "/w/v2", "Child session - 2026-11-29T10:00:00.000Z", None, T0, T0))
    rows = [
        (SID2, "system", {"text": "context"}),
        (SID2, "user", {"text": '"first v2 words"', "files": [], "agents": [], "references": []}),
        (SID2, "assistant", {"agent": "build", "model": {"id": "m2"}, "content": [
            {"type": "reasoning", "id": "r", "text": "hm"},
            {"type": "tool", "id": "t1", "name": "bash", "state": {
                "status": "completed", "input": {"command": "ls"}, "content": [],
                "structured": {"exit": 0}, "result": {}}, "time": {"created": T0}},
            {"type": "tool", "id": "t2", "name": "write", "state": {
                "status": "completed", "input": {"filePath": "/w/v2/n.md", "content": "x"}, "content": [],
                "structured": {}}, "time": {"created": T0}},
            {"type": "text", "id": "x", "text": "v2 reply"}]}),
        (SID2, "shell", {"command": "make", "output": "done"}),
        (SID2, "user", {"text": "second"}),
        (CHILD, "user", {"text": "child task"}),
    ]
    for i, (sid, typ, data) in enumerate(rows):
        con.execute("INSERT INTO session_message VALUES (?,?,?,?,?,?,?)",
                    (f"smg_{i:04d}", sid, typ, i, T0 + i, T0 + i, json.dumps(data)))
    con.commit()
    con.close()
    got = listing(r)
    assert set(got) == {SID2, CHILD}  # never both: the v1 row is not read any more
    s = got[SID2]
    assert (s.first_request, s.title, s.cwd, s.model, s.locator["kind"]) == (
        "first v2 words", "V2 title", "/w/v2", "m2", "db3")
    assert got[CHILD].resume_blocker == "subagent" and got[CHILD].title == "child task"
    steps, stats = steps_of(r, s)
    assert stats.damaged_lines == 0
    assert [(x.kind, x.text, x.exit_code) for x in steps] == [
        ("request", "first v2 words", None), ("command", "ls", 0), ("edit", "/w/v2/n.md", None),
        ("message", "v2 reply", None), ("command", "make", None), ("request", "second", None)]
    assert r.exists(s) and not r.exists(Session("opencode", SID, s.store_path, locator=dict(s.locator)))


# ---------------------------------------------------------------------------------------------------------
# E1 / E0: legacy JSON trees, merged with the DB


def wjson(path: Path, obj: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2))
    return path


def e1_session(home: Path, sid: str, first: str, directory: str = "/w/legacy", project: str = "abc123",
               parent: str | None = None, title: str = "Legacy title") -> Path:
    st = data_dir(home) / "storage"
    info: dict[str, Any] = {"id": sid, "projectID": project, "directory": directory, "title": title,
                            "version": "0.15.31", "time": {"created": T0, "updated": T0 + 9000}}
    if parent:
        info["parentID"] = parent
    f = wjson(st / "session" / project / f"{sid}.json", info)
    um, am = f"msg_{sid[-6:]}0001", f"msg_{sid[-6:]}0002"
    wjson(st / "message" / sid / f"{um}.json", {"id": um, "sessionID": sid, "role": "user",
                                                 "time": {"created": T0 + 1},
                                                 "model": {"providerID": "p", "modelID": "old-model"},
                                                 "summary": {"diffs": [{"file": "x.txt", "additions": 2,
                                                                        "deletions": 0}]}})
    wjson(st / "part" / um / "prt_0001.json", {"id": "prt_0001", "messageID": um, "sessionID": sid,
                                                "type": "text", "text": first})
    wjson(st / "message" / sid / f"{am}.json", {"id": am, "sessionID": sid, "role": "assistant",
                                                 "modelID": "old-model", "path": {"cwd": directory, "root": "/"},
                                                 "time": {"created": T0 + 2}})
    wjson(st / "part" / am / "prt_0002.json", {"id": "prt_0002", "type": "tool", "tool": "bash", "state": {
        "status": "completed", "input": {"command": "make"}, "output": "",
        "metadata": {"exit": 3, "output": "boom"}}})
    wjson(st / "part" / am / "prt_0003.json", {"id": "prt_0003", "type": "text", "text": "legacy reply"})
    return f


def test_e1_json_store_lists_and_the_db_wins_on_the_same_id(tmp_path: Path) -> None:
    home = tmp_path / "home"
    e1_session(home, SID, '"left over in JSON"')
    e1_session(home, SID2, "only in JSON", project="global")
    e1_session(home, CHILD, "legacy child", parent=SID2)
    db = Db(data_dir(home) / "opencode.db")
    db.session(SID, title="DB copy")
    db.user(SID, "from the DB")
    db.close()
    r = reader(home)
    kinds = sorted(s.kind for s in r.sources())
    assert kinds == ["db", "e1", "e1", "e1"]
    got = listing(r)
    assert got[SID].first_request == "from the DB" and got[SID].locator["kind"] == "db"
    s = got[SID2]
    assert (s.first_request, s.title, s.cwd, s.model, s.locator["kind"]) == (
        "only in JSON", "Legacy title", "/w/legacy", "old-model", "e1")
    assert s.started_at == T0 / 1000 and s.updated_at == (T0 + 9000) / 1000 and not s.problems
    assert (s.resumable, s.resume_blocker) == (False, "cli_cannot_reopen")  # the CLI reads only its DB
    assert (got[SID].resumable, got[SID].resume_blocker) == (True, None)
    assert got[CHILD].parent_id == SID2 and got[CHILD].resume_blocker == "subagent"
    steps, stats = steps_of(r, s)
    assert [(x.kind, x.text, x.exit_code) for x in steps] == [
        ("request", "only in JSON", None), ("command", "make", 3), ("message", "legacy reply", None),
        ("edit", "/w/legacy/x.txt", None)]
    assert next(x for x in steps if x.kind == "edit").added == 2
    assert stats.damaged_lines == 0
    # the same through the listing itself
    full = listing_mod.scan(Env(home=home, environ={}), None, ["opencode"])
    by_id = {x.id: x for x in full.sessions}
    assert by_id[SID].locator["kind"] == "db" and len(full.sessions) == 3 and not full.skipped


def test_e1_skips_tmp_quarantine_and_counts_damage(tmp_path: Path) -> None:
    home = tmp_path / "home"
    f = e1_session(home, SID, "hello")
    st = data_dir(home) / "storage"
    (f.parent / f".oc-{SID}.json.123.456.tmp").write_text("{half")
    wjson(st / "quarantine" / "1795900000000" / "session" / "abc123" / f"{SID2}.json", {"id": SID2})
    part_dir = next((st / "part").iterdir())
    (part_dir / "prt_0000.json").write_text("{not json")
    (part_dir / "prt_0000b.json").write_bytes(b'{"type":"text","text":"bad \xff utf8"}')
    r = reader(home)
    assert [Path(s.path).name for s in r.sources()] == [f"{SID}.json"]
    s = listing(r)[SID]
    assert s.first_request == "bad \ufffd utf8"  # invalid UTF-8 replaced; the damaged file is skipped
    assert s.problems == ["1 damaged message/part files skipped"]
    steps, stats = steps_of(r, s)
    assert stats.damaged_lines == 1 and steps[0].text == "bad \ufffd utf8"


def test_e1_damaged_or_odd_session_files_still_list(tmp_path: Path) -> None:
    home = tmp_path / "home"
    f = e1_session(home, SID, "words survive")
    f.write_text('{"id": "ses_')  # cut by a crash mid-write
    g = e1_session(home, SID2, "second")
    g.unlink()
    os.mkfifo(g)  # a FIFO where a file should be: never opened
    d = e1_session(home, CHILD, "third")
    d.unlink()
    d.mkdir()
    t0 = time.monotonic()
    got = listing(reader(home))
    assert time.monotonic() - t0 < 5
    assert got[SID].first_request == "words survive" and got[SID].cwd == "/w/legacy"  # cwd from the reply
    assert got[SID].problems[0].startswith("session file unreadable")
    assert got[SID2].problems == ["session file unreadable: not a regular file"]
    assert got[CHILD].first_request == "third"


def e0_tree(home: Path) -> Path:
    sdir = data_dir(home) / "project" / "-home-me-src-repo" / "storage" / "session"
    info = wjson(sdir / "info" / f"{SID}.json", {"id": SID, "title": "New session - 2025-06-20T10:00:00.000Z",
                                                 "version": "0.1.130", "time": {"created": T0, "updated": T0}})
    # V2-era messages with separate part files
    wjson(sdir / "message" / SID / "msg_0001.json", {"id": "msg_0001", "role": "user",
                                                     "time": {"created": T0}})
    wjson(sdir / "part" / SID / "msg_0001" / "prt_0001.json", {"type": "text", "text": "e0 first words"})
    # the oldest shape: parts inline, tool results in metadata.tool
    wjson(sdir / "message" / SID / "msg_0002.json", {
        "id": "msg_0002", "role": "assistant",
        "parts": [{"type": "step-start"},
                  {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "t1",
                                                                 "toolName": "bash",
                                                                 "args": {"command": "ls"}, "result": "a"}},
                  {"type": "tool-invocation", "toolInvocation": {"state": "call", "toolCallId": "t2",
                                                                 "toolName": "bash", "args": {"command": "sleep"}}},
                  {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "t3",
                                                                 "toolName": "write",
                                                                 "args": {"filePath": "/home/me/src/repo/w.md",
                                                                          "content": "1\n2\n"},
                                                                 "result": "ok"}},
                  {"type": "text", "text": "old reply"}],
        "metadata": {"time": {"created": T0 + 5}, "sessionID": SID,
                     "tool": {"t1": {"title": "ls", "exit": 0, "time": {"start": T0, "end": T0}}},
                     "assistant": {"modelID": "claude-3-7", "providerID": "anthropic",
                                   "path": {"cwd": "/home/me/src/repo", "root": "/home/me/src/repo"}}}})
    return info


def test_e0_project_tree_with_inline_parts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    info = e0_tree(home)
    r = reader(home)
    srcs = list(r.sources())
    assert [(s.kind, s.path) for s in srcs] == [("e0", str(info))]
    s = listing(r)[SID]
    assert (s.first_request, s.title, s.model) == ("e0 first words", "e0 first words", "claude-3-7")
    assert s.cwd == "/home/me/src/repo"  # from the first reply's path, never from the folder name
    assert s.locator["priority"] == oc.PRIO_E0 and not s.problems
    assert (s.resumable, s.resume_blocker) == (False, "cli_cannot_reopen")
    steps, stats = steps_of(r, s)
    assert [(x.kind, x.text, x.exit_code) for x in steps] == [
        ("request", "e0 first words", None), ("command", "ls", 0), ("command", "sleep", None),
        ("edit", "/home/me/src/repo/w.md", None), ("message", "old reply", None)]
    assert stats.damaged_lines == 0


def test_info_message_part_trio_directly_under_storage_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sdir = data_dir(home) / "storage" / "session"
    wjson(sdir / "info" / f"{SID}.json", {"id": SID, "directory": "/w/mid", "title": "Mid-era",
                                          "time": {"created": T0, "updated": T0}})
    wjson(sdir / "message" / SID / "msg_0001.json", {"id": "msg_0001", "role": "user", "time": {"created": T0}})
    wjson(sdir / "part" / SID / "msg_0001" / "prt_0001.json", {"type": "text", "text": "mid words"})
    r = reader(home)
    assert [Path(s.path).name for s in r.sources()] == [f"{SID}.json"]  # message/ and part/ hold no sessions
    s = listing(r)[SID]
    assert (s.first_request, s.cwd, s.problems) == ("mid words", "/w/mid", [])
    assert [x.text for x in steps_of(r, s)[0]] == ["mid words"]


def test_fingerprints_change_with_content(tmp_path: Path) -> None:
    home = tmp_path / "home"
    e1_session(home, SID, "hello")
    db = Db(data_dir(home) / "opencode.db", wal=True)
    db.session(SID2)
    db.con.commit()
    r = reader(home)
    before = {s.path: s.fingerprint for s in r.sources()}
    assert before[str(data_dir(home) / "opencode.db")][1] is not None  # the -wal is part of it
    db.user(SID2, "more")
    db.con.commit()
    msg_dir = data_dir(home) / "storage" / "message" / SID
    time.sleep(0.01)
    wjson(msg_dir / "msg_zzzz.json", {"role": "user"})
    after = {s.path: s.fingerprint for s in r.sources()}
    assert all(before[k] != after[k] for k in before)
    db.close()


# ---------------------------------------------------------------------------------------------------------
# Bad databases: the source raises a clear error (the listing records it as skipped)


def test_bad_db_files_raise_clear_errors_and_never_hang(tmp_path: Path) -> None:
    home = tmp_path / "home"
    d = data_dir(home)
    d.mkdir(parents=True)
    (d / "opencode.db").write_bytes(b"this is not sqlite" * 100)
    (d / "opencode-empty.db").write_bytes(b"")
    (d / "opencode-dir.db").mkdir()
    os.mkfifo(d / "opencode-fifo.db")
    os.symlink(d / "gone.db", d / "opencode-dangling.db")
    good = standard_db(tmp_path / "h2")
    good.close()
    half = good.path.read_bytes()
    (d / "opencode-cut.db").write_bytes(half[: len(half) // 2])
    trashed = bytearray(half)
    for off in range(4096, len(trashed), 4096):  # every page after the first overwritten
        trashed[off:off + 200] = b"\xde\xad" * 100
    (d / "opencode-trashed.db").write_bytes(bytes(trashed))
    e1_session(home, SID2, "JSON still lists")
    r = reader(home)
    t0 = time.monotonic()
    errors: dict[str, str] = {}
    ok: list[Session] = []
    for src in r.sources():
        try:
            ok += r.summarize(src)
        except SqliteUnavailable as e:
            errors[Path(src.path).name] = str(e)
    assert time.monotonic() - t0 < 10
    assert "not a SQLite database" in errors["opencode.db"]
    assert "opencode-empty.db" not in errors  # SQLite reads an empty file as an empty database: no sessions
    assert "not a regular file" in errors["opencode-dir.db"]
    assert "not a regular file" in errors["opencode-fifo.db"]
    assert "No such file" in errors["opencode-dangling.db"]
    assert {"opencode-cut.db", "opencode-trashed.db"} <= set(errors)
    assert [s.first_request for s in ok] == ["JSON still lists"]
    full = listing_mod.scan(Env(home=home, environ={}), None, ["opencode"])
    assert len(full.skipped) == 6 and [s.id for s in full.sessions] == [SID2]  # all but the empty one


def test_db_without_session_table_lists_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    con = sqlite3.connect(data_dir(home).mkdir(parents=True) or data_dir(home) / "opencode.db")
    con.execute("CREATE TABLE other (x)")
    con.commit()
    con.close()
    assert all_summaries(reader(home)) == []


def test_wal_db_reads_rows_still_in_the_wal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = standard_db(home, wal=True)
    try:
        db.con.commit()
        db.session("ses_fresh00000000aaaaaaaaaaaa", title="Fresh")
        db.user("ses_fresh00000000aaaaaaaaaaaa", "only in the wal")
        db.con.commit()
        wal = Path(str(db.path) + "-wal")
        assert wal.stat().st_size > 0
        r = reader(home)
        got = listing(r)
        assert got["ses_fresh00000000aaaaaaaaaaaa"].first_request == "only in the wal"
        # a writer in the middle of a write transaction blocks neither summaries nor steps
        db.con.execute("BEGIN IMMEDIATE")
        db.con.execute("UPDATE session SET title = 'uncommitted' WHERE id = ?", (SID,))
        got = listing(r)
        assert got[SID].title == "Fake title"
        assert len(steps_of(r, got[SID])[0]) > 5
        db.con.rollback()
    finally:
        db.close()


def test_wal_without_shm_is_read_from_a_private_copy(tmp_path: Path) -> None:
    live = tmp_path / "live"
    db = standard_db(live, wal=True)
    db.con.commit()
    home = tmp_path / "home"
    d = data_dir(home)
    d.mkdir(parents=True)
    shutil.copyfile(db.path, d / "opencode.db")
    shutil.copyfile(str(db.path) + "-wal", d / "opencode.db-wal")
    db.close()
    before = snapshot(home, allow_shm=False)
    r = reader(home)
    got = listing(r)
    assert got[SID].first_request.startswith("Please run")
    assert len(steps_of(r, got[SID])[0]) > 5 and r.exists(got[SID])
    assert snapshot(home, allow_shm=False) == before


# ---------------------------------------------------------------------------------------------------------
# Helpers


def test_unquote_prompt() -> None:
    assert unquote_prompt('"hello world"') == "hello world"
    assert unquote_prompt('"say \\"hi\\" now"') == 'say "hi" now'
    assert unquote_prompt('"back\\slash and \\\\"q\\\\" x"') == 'back\\slash and \\"q\\" x'
    assert unquote_prompt('two words "and more"') == 'two words "and more"'
    assert unquote_prompt('"a" or "b"') == '"a" or "b"'  # two quoted words, not one wrapped argument
    assert unquote_prompt('"') == '"' and unquote_prompt("") == ""


def test_cap_text_keeps_the_marker_line() -> None:
    assert cap_text("short") == "short"
    body = "é" * 10000
    capped = cap_text(body)
    assert len(capped.encode()) <= MAX_TEXT and capped == "é" * (MAX_TEXT // 2)
    with_marker = body + "\nfrom earlier " + MARKER + "\n"
    capped = cap_text(with_marker)
    assert len(capped.encode()) <= MAX_TEXT and capped.endswith("\nfrom earlier " + MARKER)
    early = "first " + MARKER + "\n" + body
    assert cap_text(early).startswith("first " + MARKER + "\n")


@pytest.mark.slow
def test_summaries_stay_cheap_for_many_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = Db(data_dir(home) / "opencode.db", wal=True)
    n = 8000
    for i in range(n):
        sid = f"ses_{i:012x}aaaaaaaaaaaaaa"
        db.session(sid, title=f"Session {i}", parent=f"ses_{i - 1:012x}aaaaaaaaaaaaaa" if i % 5 == 4 else None)
        db.user(sid, f'"prompt number {i} with some words"')
        db.assistant(sid, bash("make test", i % 3), text("reply " * 30))
        db.assistant(sid, text("final"))
    db.con.commit()
    db.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    r = reader(home)
    src = next(iter(r.sources()))
    r.summarize(src)  # warm the page cache
    t0 = time.perf_counter()
    got = r.summarize(src)
    dt = time.perf_counter() - t0
    assert len(got) == n and got[123].first_request == "prompt number 123 with some words"
    assert dt < 2.0, f"{dt:.3f}s for {n} sessions"  # one query per session would take seconds


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
            if allow_shm and name.endswith("-shm"):
                out[str(p)] = ("shm",)  # SQLite may update its read marks: the one allowed change
                continue
            out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns)
    return out


def exercise(r: OpencodeReader) -> int:
    n = 0
    for src in r.sources():
        try:
            sessions = r.summarize(src)
        except SqliteUnavailable:
            continue
        r.refresh_live(sessions)
        for s in sessions:
            r.exists(s)
            n += len(steps_of(r, s)[0])
    return n


def build_everything(home: Path) -> None:
    e1_session(home, SID2, "legacy")
    e0_tree(home)
    (data_dir(home) / "auth.json").write_text('{"fake": {"key": "never read"}}')
    locks = home / ".local" / "state" / "opencode" / "locks" / "abc.lock"
    locks.mkdir(parents=True)
    (locks / "meta.json").write_text('{"pid": 1}')


def test_reader_never_writes_rollback_db(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_everything(home)
    standard_db(home).close()
    before = snapshot(home)
    assert exercise(reader(home)) > 10
    assert snapshot(home) == before


def test_reader_never_writes_wal_db_without_wal_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_everything(home)
    db = standard_db(home, wal=True)
    db.con.commit()
    db.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()  # the last connection removes -wal and -shm; the header still says WAL
    path = data_dir(home) / "opencode.db"
    assert not Path(str(path) + "-wal").exists()
    assert path.read_bytes()[18] == 2  # WAL mode in the header
    before = snapshot(home, allow_shm=False)
    assert exercise(reader(home)) > 10
    assert snapshot(home, allow_shm=False) == before


def test_reader_never_writes_wal_db_with_live_writer(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_everything(home)
    db = standard_db(home, wal=True)
    try:
        db.con.commit()
        assert Path(str(db.path) + "-wal").stat().st_size > 0
        before = snapshot(home)
        assert exercise(reader(home)) > 10
        assert snapshot(home) == before
    finally:
        db.close()


def test_read_only_checker_detects_a_touched_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_everything(home)
    standard_db(home).close()
    before = snapshot(home)
    target = data_dir(home) / "opencode.db"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    assert snapshot(home) != before
    before = snapshot(home)
    (data_dir(home) / "opencode.db-wal").write_bytes(b"")
    assert snapshot(home) != before


def test_abandoned_steps_remove_their_private_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    live = tmp_path / "live"
    db = standard_db(live, wal=True)
    db.con.commit()
    home = tmp_path / "home"
    data_dir(home).mkdir(parents=True)
    shutil.copyfile(db.path, data_dir(home) / "opencode.db")
    shutil.copyfile(str(db.path) + "-wal", data_dir(home) / "opencode.db-wal")  # no -shm: a private copy
    db.close()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    r = reader(home)
    s = listing(r)[SID]
    assert list(scratch.iterdir()) == []
    it = r.steps(s, ReadStats())
    assert next(it).kind == "request"
    assert [p.name[:15] for p in scratch.iterdir()] == ["segue-opencode-"]
    it.close()  # a brief that stops early must not leave the copy (or the connection) behind
    assert list(scratch.iterdir()) == []


# ---------------------------------------------------------------------------------------------------------
# The real store written by OpenCode 1.18.33 (tests/fixtures/real/opencode): fails, never skips, when missing


def real_store(tmp_path: Path, sub: str = "") -> tuple[OpencodeReader, dict[str, Any], Path]:
    # a copy: SQLite may touch a -shm, never in the repository
    env, exp, copy = load_fixture("opencode", copy_to=tmp_path / "fx", sub=sub)
    return OpencodeReader(env), exp, copy


def test_real_fixture_lists_every_session(tmp_path: Path) -> None:
    r, exp, _ = real_store(tmp_path)
    got = listing(r)
    assert exp["sessions"], "expected.json lists no sessions"
    for want in exp["sessions"]:
        s = got.get(want["id"])
        name = want["scenario"]
        assert s is not None, f"{want['id']} ({name}) not listed; got {sorted(got)}"
        assert s.first_request == want["first_request"], name
        assert s.cwd == want["cwd"], name
        assert s.branch is None, name  # OpenCode does not store the branch (expected.json has the work dir's)
        assert s.parent_id == want["parent_id"], name
        assert s.resumable is (want["parent_id"] is None)
        assert s.resume_blocker == (None if want["parent_id"] is None else "subagent")
        assert s.started_at and s.updated_at and s.updated_at >= s.started_at
        assert s.model == "fake-model", name
        assert s.title, name
        assert r.exists(s)
        assert not s.problems, (name, s.problems)
    for s in got.values():
        assert s.live is False


def test_real_fixture_steps_match_what_the_agent_did(tmp_path: Path) -> None:
    r, exp, _ = real_store(tmp_path)
    got = listing(r)
    for want in exp["sessions"]:
        steps, stats = steps_of(r, got[want["id"]])
        assert_steps_match_scenario(steps, stats, want)


def test_real_fixture_live_capture_reads_the_wal(tmp_path: Path) -> None:
    r, exp, copy = real_store(tmp_path, "live-capture")
    db = copy / "live-capture" / "home" / ".local" / "share" / "opencode" / "opencode.db"
    assert Path(str(db) + "-wal").stat().st_size > 0
    one = next(w for w in exp["sessions"] if w["scenario"] == "one")
    got = listing(r)
    assert one["id"] in got, sorted(got)
    assert got[one["id"]].first_request == one["first_request"]


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


def test_message_files_that_are_no_messages_are_a_problem_not_silence(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sdir = data_dir(home) / "storage" / "session"
    wjson(sdir / "info" / f"{SID}.json", {"id": SID, "directory": "/w/odd", "title": "Odd",
                                          "time": {"created": T0, "updated": T0}})
    for i in range(3):
        wjson(sdir / "message" / SID / f"msg_000{i}.json", {"id": f"msg_000{i}", "who": "someone"})
    r = reader(home)
    steps, stats = steps_of(r, listing(r)[SID])
    assert steps == [] and stats.problems == ["no OpenCode message records recognised in 3 message files"]
    wjson(sdir / "message" / SID / "msg_0009.json", {"id": "msg_0009", "role": "user", "time": {"created": T0}})
    assert steps_of(r, listing(r)[SID])[1].problems == []  # one real message: nothing to report
