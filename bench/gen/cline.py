"""Cline store: the SDK store of CLI 3.x (`~/.cline/data/db/sessions.db` in WAL mode with no `-wal` left,
`sessions/<sid>/<sid>.json` manifests, pretty-printed `<sid>.messages.json`, subagent
`agent_<id>.messages.json` with a DB row `<sid>__agent_<id>`), plus a few legacy VS Code tasks
(`globalStorage/saoudrizwan.claude-dev/state/taskHistory.json` + `tasks/<ms>/`). Shapes follow the reader's
tests, the real 3.0.65 columns and runtime-stores.md §4.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from bench.gen.common import BLOCK_ID, Corpus, Gen, Plan, dumps, iso, rounds, set_mtime, write_blocks

RUNTIME = "cline"
COLUMNS = """
    session_id TEXT PRIMARY KEY, source TEXT NOT NULL, pid INTEGER NOT NULL, started_at TEXT NOT NULL,
    ended_at TEXT, exit_code INTEGER, status TEXT NOT NULL, status_lock INTEGER NOT NULL DEFAULT 0,
    interactive INTEGER NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, cwd TEXT NOT NULL,
    workspace_root TEXT NOT NULL, team_name TEXT, enable_tools INTEGER NOT NULL, enable_spawn INTEGER NOT NULL,
    enable_teams INTEGER NOT NULL, parent_session_id TEXT, parent_agent_id TEXT, agent_id TEXT,
    conversation_id TEXT, is_subagent INTEGER NOT NULL DEFAULT 0, prompt TEXT, metadata_json TEXT,
    transcript_path TEXT NOT NULL DEFAULT '', hook_path TEXT NOT NULL, messages_path TEXT,
    updated_at TEXT NOT NULL"""
DEAD_PID = 2**22 + 4242  # above the default pid_max: never a live process
EXTENSION = "saoudrizwan.claude-dev"


def new_id(g: Gen, t: float) -> str:
    return f"{int(t * 1000)}_{''.join(g.pick('abcdefghijklmnopqrstuvwxyz0123456789') for _ in range(5))}"


def _wrap(text: str) -> str:
    return f'<user_input mode="act">{text}</user_input>'


class _Messages:
    """The messages of one transcript, written as Cline writes the document (indent 2)."""

    def __init__(self, g: Gen, p: Plan, uid: Any = None) -> None:
        self.g, self.p = g, p
        self.items: list[str] = []
        self.n = 0
        self.t = p.start
        self.uid = uid or (lambda: g.hex(12))

    def add(self, msg: dict[str, Any]) -> None:
        s = "\n".join("    " + ln for ln in json.dumps(msg, ensure_ascii=False, indent=2).splitlines())
        self.items.append(s)
        self.n += len(s) + 2

    def turn(self, text: str, rounds: int, wrap: bool = True, spawn: str | None = None) -> None:
        g = self.g
        self.t += g.r.uniform(1, 30)
        self.add({"id": f"msg_{self.uid()}", "role": "user", "content": [
            {"type": "text", "text": _wrap(text) if wrap else text}], "ts": int(self.t * 1000)})
        for i in range(rounds):
            self.t += g.r.uniform(1, 20)
            cid = f"toolu_{self.uid()}"
            info = {"id": "claude-sonnet-4-5", "provider": "anthropic"}
            if spawn and i == 0:
                self.add({"id": f"msg_{self.uid()}", "role": "assistant", "content": [
                    {"type": "tool_use", "id": cid, "name": "spawn_agent",
                     "input": {"systemPrompt": "You are a focused helper.", "task": spawn}}],
                    "ts": int(self.t * 1000), "modelInfo": info})
                self.add({"id": f"msg_{self.uid()}", "role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": cid, "name": "spawn_agent",
                     "content": {"text": g.answer()}}], "ts": int(self.t * 1000) + 500})
                continue
            cmd, out = g.command(), g.output(g.tool_size())
            ok = not g.chance(0.12)
            res: dict[str, Any] = {"query": cmd, "result": out if ok else f"[Command exited with code 2]\n\n"
                                                                          f"[stderr]\n{out}", "success": ok}
            if not ok:
                res["error"] = "Command exited with code 2"
            self.add({"id": f"msg_{self.uid()}", "role": "assistant", "content": [
                {"type": "text", "text": g.answer()},
                {"type": "tool_use", "id": cid, "name": "run_commands", "input": {"commands": [cmd]}}],
                "ts": int(self.t * 1000), "modelInfo": info})
            self.add({"id": f"msg_{self.uid()}", "role": "user", "content": [
                {"type": "tool_result", "tool_use_id": cid, "name": "run_commands", "content": [res]}],
                "ts": int(self.t * 1000) + 700})
        self.t += g.r.uniform(1, 10)
        self.add({"id": f"msg_{self.uid()}", "role": "assistant", "content": [{"type": "text", "text": g.answer()}],
                  "ts": int(self.t * 1000)})

    def body(self) -> str:
        return ",\n".join(self.items)


def _doc_head(sid: str, p: Plan, agent: str, parent: str | None) -> str:
    head: dict[str, Any] = {"version": 1, "updated_at": iso(p.start), "agent": agent, "sessionId": sid}
    origin: dict[str, Any] = {"source": "cli", "mode": "act", "version": "3.0.65"}
    if parent:
        head["taskType"] = "subagent_task"
        origin["parentThreadId"] = parent
    head["origin"] = origin
    s = json.dumps(head, indent=2)
    return s[: s.rstrip().rfind("}")].rstrip() + ',\n  "messages": [\n'


def _doc_tail(g: Gen) -> str:
    return "\n  ],\n  \"system_prompt\": " + json.dumps("You are Cline, a coding agent. " * 60) + "\n}\n"


class Store:
    def __init__(self, g: Gen, c: Corpus) -> None:
        self.g, self.c = g, c
        self.data = c.home / ".cline" / "data"
        self.sessions = self.data / "sessions"
        self.sessions.mkdir(parents=True, exist_ok=True)
        (self.data / "db").mkdir(parents=True, exist_ok=True)
        self.db = self.data / "db" / "sessions.db"
        self.con = sqlite3.connect(self.db)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute(f"CREATE TABLE sessions ({COLUMNS})")
        self.names = [c.split()[0] for c in COLUMNS.replace("\n", " ").split(",") if c.strip()]
        self.last_t = 0.0
        self.legacy: list[dict[str, Any]] = []

    def session(self, p: Plan, parent: str | None = None, task: str | None = None) -> None:
        g = self.g
        sid = p.sid
        root = parent or sid
        d = self.sessions / root
        d.mkdir(parents=True, exist_ok=True)
        stem = sid.split("__", 1)[1] if parent else sid
        mpath = d / f"{stem}.messages.json"
        first = task or g.prompt()
        hub = g.chance(0.3) and not parent  # hub-run sessions store the prompt wrapped
        m = _Messages(g, p)
        spawns = [g.prompt() for _ in range(p.children)]
        text, t = first, 0
        with open(mpath, "w", encoding="utf-8") as f:
            f.write(_doc_head(sid, p, "subagent" if parent else "lead", parent))
            while True:
                spawn = spawns[t] if t < len(spawns) else None
                m.turn(text, g.r.randint(1, rounds(p.size)), wrap=not parent, spawn=spawn)
                t += 1
                if p.big and m.n > min(2_000_000, p.size // 4):
                    f.write(m.body())
                    _big_middle(g, p, m, f)
                    m.items = []
                    m.turn(g.prompt(), 2)
                    f.write(",\n" + m.body())
                    break
                if m.n >= p.size and t >= len(spawns):
                    f.write(m.body())
                    break
                text = g.prompt()
                m.t += g.r.uniform(60, 3600)
            f.write(_doc_tail(g))
        end = m.t
        set_mtime(mpath, end)
        self.c.file(mpath)
        meta = {"title": g.title() if not parent else None, "git": {"branch": p.branch} if p.branch else {}}
        row = {"session_id": sid, "source": "cli", "pid": DEAD_PID, "started_at": iso(p.start),
               "ended_at": iso(end), "exit_code": 0, "status": "completed", "interactive": 0,
               "provider": "anthropic", "model": "claude-sonnet-4-5", "cwd": p.cwd, "workspace_root": p.cwd,
               "enable_tools": 1, "enable_spawn": 1, "enable_teams": 0, "is_subagent": 1 if parent else 0,
               "parent_session_id": parent, "agent_id": stem if parent else None,
               "prompt": _wrap(first) if hub else first, "metadata_json": json.dumps(meta), "hook_path": "",
               "messages_path": str(mpath), "updated_at": iso(end)}
        keys = [k for k in row if k in self.names]
        self.con.execute(f"INSERT INTO sessions ({','.join(keys)}) VALUES ({','.join('?' * len(keys))})",
                         [row[k] for k in keys])
        if not parent:
            man = {"version": 1, "session_id": sid, "source": "cli", "pid": DEAD_PID, "started_at": iso(p.start),
                   "ended_at": iso(end), "exit_code": 0, "status": "completed", "interactive": False,
                   "provider": "anthropic", "model": "claude-sonnet-4-5", "cwd": p.cwd, "workspace_root": p.cwd,
                   "prompt": row["prompt"], "metadata": meta, "messages_path": str(mpath)}
            mf = d / f"{sid}.json"
            mf.write_text(json.dumps(man, indent=2) + "\n")
            set_mtime(mf, end)
        self.last_t = max(self.last_t, end)
        self.c.add(RUNTIME, sid, first, parent_id=parent, gen="S1", path=mpath)
        if p.target:
            self.c.targets[RUNTIME] = {"id": sid, "path": str(mpath), "bytes": mpath.stat().st_size}
        for task_text in spawns:
            ct = p.start + g.r.uniform(10, 300)
            child_id = f"{sid}__agent_{int(ct * 1000)}_{g.hex(6)}"
            child = Plan(sid=child_id, start=ct, cwd=p.cwd, branch=p.branch, size=g.session_size(median=10_000),
                         gen="S1")
            self.session(child, parent=sid, task=task_text)

    def legacy_task(self, p: Plan) -> None:
        """A VS Code task (L1): history item + task folder with single-line JSON arrays."""
        g = self.g
        root = self.c.home / ".config" / "Code" / "User" / "globalStorage" / EXTENSION
        tid = str(int(p.start * 1000))
        tdir = root / "tasks" / tid
        tdir.mkdir(parents=True, exist_ok=True)
        task = g.prompt()
        ts = int(p.start * 1000)
        ui = [{"ts": ts, "type": "say", "say": "task", "text": task}]
        api: list[dict[str, Any]] = [{"role": "user", "content": [
            {"type": "text", "text": f"<task>\n{task}\n</task>"},
            {"type": "text", "text": f"<environment_details>\n# Current Working Directory ({p.cwd}) Files\n"
                                     f"{g.output(600)}</environment_details>"}]}]
        size = 0
        while size < p.size:
            ts += g.r.randint(1000, 20000)
            cmd, out = g.command(), g.output(g.tool_size())
            ui.append({"ts": ts, "type": "say", "say": "api_req_started",
                       "text": json.dumps({"request": g.output(400), "tokensIn": 900, "tokensOut": 200})})
            ui.append({"ts": ts + 1, "type": "ask", "ask": "command", "text": cmd})
            ui.append({"ts": ts + 2, "type": "say", "say": "command_output", "text": out})
            api.append({"role": "assistant", "content": [{"type": "text", "text": g.answer()}, {
                "type": "tool_use", "id": f"toolu_{g.hex(24)}", "name": "execute_command",
                "input": {"command": cmd, "requires_approval": False}}]})
            api.append({"role": "user", "content": [{"type": "text", "text": f"[execute_command for '{cmd}'] "
                                                                              f"Result:\n{out}"}]})
            size += 2 * len(out) + 1200
        ui.append({"ts": ts + 10, "type": "say", "say": "completion_result", "text": g.answer()})
        (tdir / "ui_messages.json").write_text(dumps(ui))
        (tdir / "api_conversation_history.json").write_text(dumps(api))
        (tdir / "task_metadata.json").write_text(dumps({"files_in_context": [], "model_usage": [],
                                                        "environment_history": [{"cline_version": "3.38.1"}]}))
        for f in tdir.iterdir():
            set_mtime(f, ts / 1000)
        self.legacy.append({"id": tid, "ts": ts, "task": task, "tokensIn": 9000, "tokensOut": 1200,
                            "totalCost": 0.04, "cwdOnTaskInitialization": p.cwd,
                            "modelId": "claude-3-7-sonnet-20250219"})
        self.c.add(RUNTIME, tid, task, gen="L1", path=tdir)
        self.c.file(tdir / "api_conversation_history.json")

    def close(self) -> None:
        self.con.commit()
        self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.con.close()
        for side in ("-wal", "-shm"):
            if os.path.exists(str(self.db) + side):
                os.unlink(str(self.db) + side)
        set_mtime(self.db, self.last_t or 0)
        if self.legacy:
            root = self.c.home / ".config" / "Code" / "User" / "globalStorage" / EXTENSION / "state"
            root.mkdir(parents=True, exist_ok=True)
            (root / "taskHistory.json").write_text(dumps(self.legacy))


def _big_middle(g: Gen, p: Plan, m: _Messages, f: Any) -> None:
    bm = _Messages(g, p, uid=lambda: f"{BLOCK_ID}{g.hex(8)}")
    while bm.n < 1_000_000:
        bm.turn(g.prompt(), g.r.randint(2, 8))
    block = (",\n" + bm.body()).encode("utf-8")
    f.flush()
    m.n += write_blocks(f.buffer, block, max(0, p.size - m.n - min(200_000, p.size // 10)))
    f.buffer.flush()


def write_all(g: Gen, c: Corpus, plans: list[Plan]) -> None:
    store = Store(g, c)
    for p in plans:
        if p.extra.get("legacy"):
            store.legacy_task(p)
        else:
            store.session(p)
    store.close()


def db_path(home: Path) -> Path:
    return home / ".cline" / "data" / "db" / "sessions.db"

