"""Codex CLI store: `~/.codex/sessions/YYYY/MM/DD/rollout-<local time>-<uuid>.jsonl` of every generation
(X1 bare, X2 wrapped, X3/X4 with base_instructions and ordinals, X5 = 0.171 items), some `.jsonl.zst`,
`archived_sessions/`, the legacy flat layout, subagent rollouts and `session_index.jsonl` names. Shapes follow
the real 0.171.0 fixture and runtime-stores.md §2.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.gen.common import (
    BLOCK_ID,
    BlockClock,
    Clock,
    Corpus,
    Gen,
    Plan,
    dumps,
    iso,
    rounds,
    set_mtime,
    write_blocks,
)

RUNTIME = "codex"
CLI = {"X1": "0.21.0", "X2": "0.39.0", "X3": "0.98.0", "X4": "0.146.0", "X5": "0.171.0"}


def _filler(g: Gen, n: int) -> str:
    return g.output(n)


class _Writer:
    def __init__(self, g: Gen, p: Plan, clock: Clock, out: Any, uid: Any = None) -> None:
        self.g, self.p, self.clock, self.out = g, p, clock, out
        self.gen = p.gen
        self.ordinal = 0
        self.n = 0
        self.uid = uid or (lambda: g.hex(24))
        self.spawned: list[str] = []  # task prompts of subagents this session starts

    def line(self, obj: dict[str, Any]) -> None:
        s = dumps(obj) + "\n"
        self.out.write(s)
        self.n += len(s.encode("utf-8"))

    def rec(self, type_: str, payload: dict[str, Any]) -> None:
        if self.gen == "X1":
            self.line(payload)  # bare items, no envelope
            return
        obj: dict[str, Any] = {"timestamp": self.clock.iso()}
        if self.gen in ("X4", "X5"):
            obj["ordinal"] = self.ordinal
            self.ordinal += 1
        obj["type"] = type_
        obj["payload"] = payload
        self.line(obj)

    # -- head
    def head(self, parent: str | None = None, agents_md: int = 0) -> None:
        g, p = self.g, self.p
        git = {"commit_hash": g.hex(40), "branch": p.branch} if p.branch else {"commit_hash": g.hex(40)}
        if self.gen == "X1":
            self.line({"id": p.sid, "timestamp": iso(p.start), "instructions": None, "git": git})
            self.line({"record_type": "state"})
        else:
            meta: dict[str, Any] = {}
            if self.gen in ("X3", "X4", "X5"):
                meta["session_id"] = parent or p.sid
            meta.update({"id": p.sid, "timestamp": iso(p.start), "cwd": p.cwd,
                         "originator": g.pick(("codex_exec", "codex_cli_rs", "codex_vscode")),
                         "cli_version": CLI[self.gen]})
            if parent:
                meta["parent_thread_id"] = parent
                meta["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1,
                                                                "agent_path": None, "agent_nickname": "Turing",
                                                                "agent_role": None}}}
                meta["thread_source"] = "subagent"
                meta["agent_nickname"] = "Turing"
            else:
                meta["source"] = g.pick(("exec", "cli", "vscode"))
                if self.gen != "X2":
                    meta["thread_source"] = "user"
            if self.gen == "X2":
                meta["instructions"] = None
            else:
                meta["model_provider"] = "openai"
                meta["base_instructions"] = {"text": _filler(g, 21_500)}
                meta["history_mode"] = "paginated" if self.gen in ("X4", "X5") else "full"
            meta["git"] = git
            self.rec("session_meta", meta)
        if self.gen == "X5":
            self.rec("event_msg", {"type": "task_started", "turn_id": g.uuid7(p.start), "started_at": int(p.start),
                                   "model_context_window": 258400})
        if self.gen in ("X3", "X4", "X5"):
            self.rec("response_item", {"type": "message", "id": f"msg_{g.hex(24)}", "role": "developer",
                                       "content": [{"type": "input_text",
                                                    "text": "<skills_instructions>\n" + _filler(g, 3100)
                                                    + "</skills_instructions>"}]})
        if agents_md:
            self.rec("response_item", {"type": "message", "role": "user", "content": [{
                "type": "input_text", "text": f"# AGENTS.md instructions for {p.cwd}\n\n<INSTRUCTIONS>\n"
                                              f"{_filler(g, agents_md)}\n</INSTRUCTIONS>"}]})
        env = (f"<environment_context>\n  <cwd>{p.cwd}</cwd>\n  <shell>bash</shell>\n  <current_date>"
               f"{iso(p.start)[:10]}</current_date>\n  <timezone>Etc/UTC</timezone>\n</environment_context>")
        self.rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text",
                                                                                   "text": env}]})
        if self.gen in ("X4", "X5"):
            self.rec("world_state", {"full": True, "state": {"environments": {"local": {
                "cwd": p.cwd, "status": "available", "shell": "bash"}}, "current_date": iso(p.start)[:10],
                "guidance": _filler(g, 2800)}})

    # -- turns
    def turn(self, text: str, rounds: int, spawn: bool = False) -> None:
        g, p = self.g, self.p
        tid = g.uuid7(self.clock.t)
        if self.gen != "X1":
            self.rec("turn_context", {"turn_id": tid, "cwd": p.cwd, "approval_policy": "on-request",
                                      "sandbox_policy": {"type": "workspace-write"},
                                      "model": g.pick(("gpt-5-codex", "gpt-5.1-codex-max", "gpt-5")),
                                      "effort": "medium", "summary": "auto"})
        if self.gen == "X5":
            self.rec("event_msg", {"type": "thread_settings_applied", "thread_id": p.sid,
                                   "thread_settings": {"model": "gpt-5.1-codex-max", "cwd": p.cwd}})
        self.rec("response_item", {"type": "message", "id": f"msg_{self.uid()}", "role": "user",
                                   "content": [{"type": "input_text", "text": text}]})
        self.clock.tick(0.01, 0.05)
        if self.gen == "X5":
            self.rec("event_msg", {"type": "item_completed", "thread_id": p.sid, "turn_id": tid, "item": {
                "type": "UserMessage", "id": g.uuid7(self.clock.t),
                "content": [{"type": "text", "text": text, "text_elements": []}]}})
        elif self.gen != "X1":
            self.rec("event_msg", {"type": "user_message", "message": text, "images": []})
        for i in range(rounds):
            self.round(tid, spawn and i == 0)
        answer = g.answer()
        if self.gen == "X5":
            self.rec("event_msg", {"type": "item_completed", "thread_id": p.sid, "turn_id": tid, "item": {
                "type": "AgentMessage", "id": f"msg_{self.uid()}", "content": [{"type": "Text", "text": answer}]}})
        elif self.gen != "X1":
            self.rec("event_msg", {"type": "agent_message", "message": answer})
        self.rec("response_item", {"type": "message", "role": "assistant", "id": f"msg_{self.uid()}",
                                   "content": [{"type": "output_text", "text": answer}]})
        if self.gen != "X1":
            self.tokens()
            self.rec("event_msg", {"type": "task_complete", "turn_id": tid, "last_agent_message": answer,
                                   "duration_ms": g.r.randint(900, 90000)})
        self.clock.tick(1, 20)

    def tokens(self) -> None:
        self.rec("event_msg", {"type": "token_count", "info": {"total_token_usage": {
            "input_tokens": 12000, "cached_input_tokens": 9000, "output_tokens": 700, "reasoning_output_tokens": 300,
            "total_tokens": 12700}, "model_context_window": 258400}, "rate_limits": None})

    def round(self, tid: str, spawn: bool) -> None:
        g = self.g
        cid = f"call_{self.uid()}"
        if g.chance(0.4):
            self.rec("response_item", {"type": "reasoning", "summary": [],
                                       "encrypted_content": "gAAAAA" + g.hex(g.r.randint(300, 2500))})
        if spawn:
            task = g.prompt()
            self.spawned.append(task)
            self.rec("response_item", {"type": "function_call", "name": "spawn_agent",
                                       "namespace": "multi_agent_v1", "arguments": json.dumps({"message": task}),
                                       "call_id": cid})
            self.rec("response_item", {"type": "function_call_output", "call_id": cid,
                                       "output": json.dumps({"agent_id": "pending", "nickname": "Turing"})})
            return
        cmd = g.command()
        out = g.output(g.tool_size())
        code = g.pick((1, 2, 127)) if g.chance(0.12) else 0
        if self.gen in ("X1", "X2"):
            self.rec("response_item", {"type": "function_call", "name": "shell", "call_id": cid, "arguments":
                                       json.dumps({"command": ["bash", "-lc", cmd], "workdir": self.p.cwd})})
            self.clock.tick(0.1, 6)
            self.rec("response_item", {"type": "function_call_output", "call_id": cid, "output": json.dumps(
                {"output": out, "metadata": {"exit_code": code, "duration_seconds": 0.4}})})
        else:
            self.rec("response_item", {"type": "function_call", "name": "exec_command", "call_id": cid,
                                       "arguments": json.dumps({"cmd": cmd})})
            self.clock.tick(0.1, 6)
            if self.gen == "X5":
                self.rec("event_msg", {"type": "item_completed", "thread_id": self.p.sid, "turn_id": tid, "item": {
                    "type": "CommandExecution", "id": cid, "command": ["/bin/bash", "-lc", cmd],
                    "cwd": "file://" + self.p.cwd, "status": "completed", "aggregated_output": out,
                    "exit_code": code, "duration": {"secs": 0, "nanos": 7090}}})
            elif self.gen == "X4" and g.chance(0.5):
                self.rec("event_msg", {"type": "exec_command_end", "call_id": cid, "exit_code": code,
                                       "aggregated_output": out[-2000:]})
            self.rec("response_item", {"type": "function_call_output", "call_id": cid, "output":
                                       f"Chunk ID: {g.hex(6)}\nWall time: 0.0100 seconds\nProcess exited with code "
                                       f"{code}\nOriginal token count: {len(out) // 4}\nOutput:\n{out}"})
            if self.gen != "X3":
                self.rec("token_usage_record" if self.gen == "X5" else "event_msg",
                         {"type": "token_usage", "usage": {"input_tokens": 100, "output_tokens": 20}})


def _rel_dir(t: float) -> tuple[str, str]:
    d = datetime.fromtimestamp(t, tz=timezone.utc)  # Codex uses local time; the corpus's zone is UTC
    return d.strftime("%Y/%m/%d"), d.strftime("%Y-%m-%dT%H-%M-%S")


def _path(root: Path, p: Plan) -> Path:
    day, stamp = _rel_dir(p.start)
    where = p.extra.get("where", "dated")
    if where == "archived":
        d = root / "archived_sessions"
    elif where == "flat":
        d = root / "sessions"
    else:
        d = root / "sessions" / day
    d.mkdir(parents=True, exist_ok=True)
    return d / f"rollout-{stamp}-{p.sid}.jsonl"


def write_session(g: Gen, c: Corpus, p: Plan, parent: str | None = None, task: str | None = None) -> None:
    root = c.home / ".codex"
    path = _path(root, p)
    clock = Clock(g, p.start)
    first = task or g.prompt()
    buf = io.StringIO() if p.extra.get("zst") else None
    with open(path, "w", encoding="utf-8") as f:
        w = _Writer(g, p, clock, buf if buf is not None else f)
        w.head(parent=parent, agents_md=p.extra.get("agents_md", 0))
        text, t = first, 0
        spawn_turns = set(range(p.children))
        while True:
            w.turn(text, g.r.randint(1, rounds(p.size)), spawn=t in spawn_turns)
            t += 1
            if p.big and w.n > min(4_000_000, p.size // 4):
                _big_middle(g, p, w, f)
                w.turn(g.prompt(), 2)
                break
            if w.n >= p.size and t >= p.children:
                break
            text = g.prompt()
            clock.tick(60, 3600)
    if buf is not None:
        import zstandard

        zpath = path.with_name(path.name + ".zst")
        zpath.write_bytes(zstandard.ZstdCompressor(level=3).compress(buf.getvalue().encode("utf-8")))
        path.unlink()
        path = zpath
    set_mtime(path, clock.t)
    c.add(RUNTIME, p.sid, first, parent_id=parent, gen=p.gen + ("-zst" if buf is not None else ""), path=path)
    c.file(path)
    if p.target:
        c.targets[RUNTIME] = {"id": p.sid, "path": str(path), "bytes": path.stat().st_size}
    for task_text in w.spawned:
        t0 = clock.t - g.r.uniform(100, 1000)
        child = Plan(sid=g.uuid7(t0), start=t0, cwd=p.cwd, branch=p.branch, size=g.session_size(median=15_000),
                     gen="X5")
        write_session(g, c, child, parent=p.sid, task=task_text)


def _big_middle(g: Gen, p: Plan, w: _Writer, f: Any) -> None:
    buf = io.StringIO()
    bw = _Writer(g, p, BlockClock(g), buf, uid=lambda: f"{BLOCK_ID}{g.hex(16)}")
    bw.ordinal = w.ordinal
    while bw.n < 1_000_000:
        bw.turn(g.prompt(), g.r.randint(2, 8))
    f.flush()
    target = max(0, p.size - w.n - min(200_000, p.size // 10))
    w.n += write_blocks(f.buffer, buf.getvalue().encode("utf-8"), target)
    f.buffer.flush()


def write_index(g: Gen, c: Corpus, named: list[tuple[str, str, float]]) -> None:
    """`session_index.jsonl`: renames, append-only; the last entry per id wins."""
    path = c.home / ".codex" / "session_index.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for sid, name, t in named:
            f.write(dumps({"id": sid, "thread_name": name, "updated_at": iso(t)}) + "\n")


# Generation boundaries by date (runtime-stores.md §2.2): bare until ~Sep 2025, wrapped after, 2026 metadata,
# paginated ~0.146, items in 0.171.
_ERAS = ((1756684800, "X1"), (1767225600, "X2"), (1772323200, "X3"), (1788220800, "X4"))


def plan_gen(start: float) -> str:
    for until, gen in _ERAS:
        if start < until:
            return gen
    return "X5"
