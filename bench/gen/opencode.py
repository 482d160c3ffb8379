"""OpenCode store: `~/.local/share/opencode/opencode.db` (E2, the 1.18.33 schema: session, message, part,
project, …) in WAL mode with no `-wal` left, child sessions for subagents, and leftover E1 JSON under
`storage/` (some sessions only there, some also in the DB: a listing must merge and dedupe by id).
Shapes follow the real 1.18.33 store and runtime-stores.md §3.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from bench.gen.common import Corpus, Gen, Plan, dumps, rounds, set_mtime

RUNTIME = "opencode"
VERSION = "1.18.33"

# The tables the 1.18.33 CLI creates that a reader may touch (columns as the real database has them).
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
  `time_compacting` integer, `time_archived` integer,
  CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`)
  ON DELETE CASCADE);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`)
  ON DELETE CASCADE);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`)
  ON DELETE CASCADE);
CREATE TABLE `session_message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `type` text NOT NULL,
  `seq` integer NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `todo` (`session_id` text NOT NULL, `content` text NOT NULL, `status` text NOT NULL,
  `priority` text NOT NULL, `position` integer NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, CONSTRAINT `todo_pk` PRIMARY KEY(`session_id`, `position`));
CREATE TABLE "migration" (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_workspace_idx` ON `session` (`workspace_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
"""
_PERMISSION = json.dumps([{"permission": "question", "pattern": "*", "action": "deny"}], separators=(",", ":"))


class Ids:
    """OpenCode ids: prefix + 12 hex of (ms·4096 + counter) + 14 base62; session ids invert the bits so they
    sort newest first (runtime-stores.md §3.2)."""

    def __init__(self, g: Gen) -> None:
        self.g = g
        self.counter = 0

    def make(self, prefix: str, t_ms: int, descending: bool = False) -> str:
        self.counter = (self.counter + 1) % 4096
        v = (t_ms * 4096 + self.counter) % (1 << 48)
        if descending:
            v = (1 << 48) - 1 - v
        return f"{prefix}_{v:012x}{self.g.b62(14)}"


class Store:
    def __init__(self, g: Gen, c: Corpus) -> None:
        self.g, self.c = g, c
        self.data = c.home / ".local" / "share" / "opencode"
        self.data.mkdir(parents=True, exist_ok=True)
        self.db_path = self.data / "opencode.db"
        self.con = sqlite3.connect(self.db_path)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.executescript(SCHEMA)
        self.ids = Ids(g)
        self.projects: dict[str, str] = {}
        self.last_t = 0.0
        self.legacy_written = 0

    def project(self, cwd: str, t: float) -> str:
        pid = self.projects.get(cwd)
        if pid is None:
            pid = self.g.hex(40)
            self.projects[cwd] = pid
            self.con.execute("INSERT INTO project VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                             (pid, cwd, "git", None, None, None, None, int(t * 1000), int(t * 1000), None, "[]", None))
        return pid

    def session(self, p: Plan, parent: str | None = None, task: str | None = None, legacy: str = "") -> None:
        """One session's rows (and its children's). legacy: "" = DB only, "json" = E1 JSON only,
        "both" = in the DB and left over as JSON."""
        g = self.g
        t = p.start
        quoted = g.chance(0.5) and parent is None  # `opencode run` stores the prompt inside literal quotes
        first = task or g.prompt()
        stored_first = f'"{first}"' if quoted else first
        title = f"{g.title()} (@general subagent)" if parent else g.title()
        msgs: list[tuple[str, int, int, dict[str, Any]]] = []
        parts: list[tuple[str, str, int, int, dict[str, Any]]] = []
        size, turn = 0, 0
        children: list[str] = []
        text = stored_first
        while True:
            t += g.r.uniform(1, 30)
            umid = self.ids.make("msg", int(t * 1000))
            msgs.append((umid, int(t * 1000), int(t * 1000) + 50, {
                "role": "user", "time": {"created": int(t * 1000)}, "agent": "build",
                "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}))
            parts.append((self.ids.make("prt", int(t * 1000)), umid, int(t * 1000), int(t * 1000),
                          {"type": "text", "text": text}))
            size += len(text) + 300
            for _ in range(g.r.randint(1, rounds(p.size))):
                t += g.r.uniform(1, 20)
                amid = self.ids.make("msg", int(t * 1000))
                finish = "tool-calls"
                msgs.append((amid, int(t * 1000), int(t * 1000) + 900, {
                    "parentID": umid, "role": "assistant", "mode": "build", "agent": "build",
                    "path": {"cwd": p.cwd, "root": p.cwd}, "cost": 0.01,
                    "tokens": {"total": 1500, "input": 1200, "output": 300, "reasoning": 0,
                               "cache": {"write": 0, "read": 900}},
                    "modelID": "claude-sonnet-4-5", "providerID": "anthropic",
                    "time": {"created": int(t * 1000), "completed": int(t * 1000) + 900}, "finish": finish}))
                ms = int(t * 1000)
                parts.append((self.ids.make("prt", ms), amid, ms, ms, {"type": "step-start", "snapshot": g.hex(40)}))
                if len(children) < p.children:
                    ctask = g.prompt()
                    children.append(ctask)
                    parts.append((self.ids.make("prt", ms + 1), amid, ms + 1, ms + 1, {
                        "type": "tool", "tool": "task", "callID": f"call_{g.hex(24)}", "state": {
                            "status": "completed", "input": {"description": g.title(), "prompt": ctask,
                                                             "subagent_type": "general"},
                            "output": g.answer(), "title": g.title(), "metadata": {}}}))
                else:
                    cmd, out = g.command(), g.output(g.tool_size())
                    code = g.pick((1, 2)) if g.chance(0.12) else 0
                    parts.append((self.ids.make("prt", ms + 1), amid, ms + 1, ms + 1, {
                        "type": "tool", "tool": "bash", "callID": f"call_{g.hex(24)}", "state": {
                            "status": "completed", "input": {"command": cmd, "description": "Run a command"},
                            "output": out, "metadata": {"output": out[-2000:], "exit": code, "truncated": False},
                            "title": cmd, "time": {"start": ms + 10, "end": ms + 400}}}))
                    size += len(out) + 1500  # with the message and step rows around it
                parts.append((self.ids.make("prt", ms + 2), amid, ms + 2, ms + 2, {
                    "type": "step-finish", "reason": finish, "snapshot": g.hex(40),
                    "tokens": {"total": 1500, "input": 1200, "output": 300}, "cost": 0.01}))
            t += g.r.uniform(1, 10)
            amid = self.ids.make("msg", int(t * 1000))
            msgs.append((amid, int(t * 1000), int(t * 1000) + 500, {
                "parentID": umid, "role": "assistant", "mode": "build", "agent": "build",
                "path": {"cwd": p.cwd, "root": p.cwd}, "modelID": "claude-sonnet-4-5", "providerID": "anthropic",
                "time": {"created": int(t * 1000), "completed": int(t * 1000) + 500}, "finish": "stop"}))
            parts.append((self.ids.make("prt", int(t * 1000)), amid, int(t * 1000), int(t * 1000),
                          {"type": "text", "text": g.answer()}))
            turn += 1
            if size >= p.size and len(children) >= p.children:
                break
            if len(parts) > 5000 and legacy == "":  # big sessions go out as they grow: memory stays flat
                self._insert(p.sid, msgs, parts)
                msgs, parts = [], []
            text = g.prompt()
            t += g.r.uniform(60, 3600)
        sid = p.sid
        if legacy != "json":
            pid = self.project(p.cwd, p.start)
            self.con.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, path, title, version, "
                "summary_additions, summary_deletions, summary_files, cost, tokens_input, tokens_output, permission, "
                "agent, model, time_created, time_updated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (sid, pid, parent, f"{g.pick(('calm', 'brave', 'shiny'))}-{g.pick(('sailor', 'falcon', 'orchid'))}",
                 p.cwd, "", title, VERSION, 0, 0, 0, 0.1, 1500, 300, _PERMISSION,
                 "general" if parent else "build", json.dumps({"id": "claude-sonnet-4-5", "providerID": "anthropic"}),
                 int(p.start * 1000), int(t * 1000)))
            self._insert(sid, msgs, parts)
        if legacy in ("json", "both"):
            self._legacy_json(p, parent, title, msgs, parts, t)
        self.last_t = max(self.last_t, t)
        self.c.add(RUNTIME, sid, first, parent_id=parent, gen="E1" if legacy == "json" else "E2",
                   path=self.db_path if legacy != "json" else None)
        for ctask in children:
            ct = p.start + g.r.uniform(10, 300)
            child = Plan(sid=self.ids.make("ses", int(ct * 1000), descending=True), start=ct, cwd=p.cwd,
                         branch="", size=self.g.session_size(median=10_000), gen="E2")
            self.session(child, parent=sid, task=ctask, legacy="json" if legacy == "json" else "")

    def _insert(self, sid: str, msgs: list[Any], parts: list[Any]) -> None:
        self.con.executemany("INSERT INTO message VALUES (?,?,?,?,?)",
                             [(m[0], sid, m[1], m[2], dumps(m[3])) for m in msgs])
        self.con.executemany("INSERT INTO part VALUES (?,?,?,?,?,?)",
                             [(pt[0], pt[1], sid, pt[2], pt[3], dumps(pt[4])) for pt in parts])

    def _legacy_json(self, p: Plan, parent: str | None, title: str, msgs: list[Any], parts: list[Any],
                     t_end: float) -> None:
        """E1: storage/{project,session/<pid>,message/<ses>,part/<msg>}/….json with camelCase ids."""
        st = self.data / "storage"
        pid = self.projects.get(p.cwd) or self.g.hex(40)
        sdir = st / "session" / pid
        sdir.mkdir(parents=True, exist_ok=True)
        info: dict[str, Any] = {"id": p.sid, "projectID": pid, "directory": p.cwd, "title": title,
                                "version": "0.15.31", "time": {"created": int(p.start * 1000),
                                                               "updated": int(t_end * 1000)}}
        if parent:
            info["parentID"] = parent
        path = sdir / f"{p.sid}.json"
        path.write_text(dumps(info, indent=2))
        self.c.file(path)
        mdir = st / "message" / p.sid
        mdir.mkdir(parents=True, exist_ok=True)
        for m in msgs[:40]:  # enough of the session for a listing; E1 sessions were short-lived
            d = dict(m[3], id=m[0], sessionID=p.sid)
            (mdir / f"{m[0]}.json").write_text(dumps(d, indent=2))
        for pt in parts[:120]:
            pdir = st / "part" / pt[1]
            pdir.mkdir(parents=True, exist_ok=True)
            (pdir / f"{pt[0]}.json").write_text(dumps(dict(pt[4], id=pt[0], messageID=pt[1], sessionID=p.sid),
                                                      indent=2))
        proj = st / "project" / f"{pid}.json"
        if not proj.exists():
            proj.parent.mkdir(parents=True, exist_ok=True)
            proj.write_text(dumps({"id": pid, "worktree": p.cwd, "vcs": "git",
                                   "time": {"created": int(p.start * 1000)}}, indent=2))
        self.legacy_written += 1

    def close(self) -> None:
        self.con.commit()
        self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.con.close()  # the last connection removes the -wal: the store at rest, WAL mode in the header
        for side in ("-wal", "-shm"):
            if os.path.exists(str(self.db_path) + side):
                os.unlink(str(self.db_path) + side)
        set_mtime(self.db_path, self.last_t or 0)
        self.c.file(self.db_path)


def new_id(store: Store, t: float) -> str:
    return store.ids.make("ses", int(t * 1000), descending=True)


def write_all(g: Gen, c: Corpus, plans: list[Plan]) -> None:
    store = Store(g, c)
    for p in plans:
        store.session(p, legacy=p.extra.get("legacy", ""))
    store.close()


def db_path(home: Path) -> Path:
    return home / ".local" / "share" / "opencode" / "opencode.db"
