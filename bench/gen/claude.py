"""Claude Code store: `~/.claude/projects/<encoded cwd>/<uuid>.jsonl` of generations C1 (inline sidechains,
`summary` lines), C2 (sibling `agent-<id>.jsonl`) and C3 (2.1.x: queue operations, attachments, progress,
last-prompt, `<uuid>/subagents/agent-<id>.jsonl` + `.meta.json`). Shapes follow the real 2.1.197 fixture
and runtime-stores.md §1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from bench.gen.common import (
    BLOCK_ID,
    BlockClock,
    Clock,
    Corpus,
    Gen,
    Plan,
    dumps,
    encode_dir,
    rounds,
    set_mtime,
    write_blocks,
)

RUNTIME = "claude"
VERSION = {"C1": "1.0.98", "C2": "2.0.76", "C3": "2.1.197"}
_USAGE = {"input_tokens": 1200, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 48000,
          "output_tokens": 240, "service_tier": "standard"}
_AGENT_LISTING = ("- general-purpose: General-purpose agent for researching complex questions, searching for code, "
                  "and executing multi-step tasks. (Tools: *)\n") * 12
_SKILLS = ("- update-config: Use this skill to configure the Claude Code harness via settings.json. Automated "
           "behaviors require hooks configured in settings.json.\n") * 30


class _Writer:
    """Emits the records of one transcript, as Claude Code orders them."""

    def __init__(self, g: Gen, p: Plan, clock: Clock, out: TextIO, *, agent_id: str | None = None,
                 parent_sid: str | None = None, uid: Any = None) -> None:
        self.g, self.p, self.clock, self.out = g, p, clock, out
        self.gen = p.gen
        self.agent_id = agent_id
        self.sid = parent_sid or p.sid  # subagent records carry the parent's sessionId
        self.last: str | None = None
        self.uid = uid or g.uuid4
        self.n = 0  # bytes written
        self.spawned: list[tuple[str, str, str]] = []  # (agent id, task prompt, description)

    def emit(self, rec: dict[str, Any]) -> None:
        line = dumps(rec) + "\n"
        self.out.write(line)
        self.n += len(line.encode("utf-8"))

    def env(self, type_: str, **kw: Any) -> dict[str, Any]:
        uuid = self.uid()
        rec: dict[str, Any] = {"parentUuid": self.last, "isSidechain": self.agent_id is not None}
        if self.agent_id:
            rec["agentId"] = self.agent_id
        rec["type"] = type_
        rec.update(kw)
        rec.update({"uuid": uuid, "timestamp": self.clock.iso(), "userType": "external", "entrypoint": "cli",
                    "cwd": self.p.cwd, "sessionId": self.sid, "version": VERSION[self.gen],
                    "gitBranch": self.p.branch})
        self.last = uuid
        return rec

    # -- records
    def prompt(self, text: str, first: bool) -> None:
        g, c3 = self.g, self.gen == "C3"
        if c3 and not self.agent_id:
            self.emit({"type": "queue-operation", "operation": "enqueue", "timestamp": self.clock.iso(),
                       "sessionId": self.sid, "content": text})
            self.emit({"type": "queue-operation", "operation": "dequeue", "timestamp": self.clock.iso(),
                       "sessionId": self.sid})
        extra: dict[str, Any] = {"promptId": g.uuid4()} if c3 else {}
        self.emit(self.env("user", message={"role": "user", "content": text}, **extra,
                           **({"permissionMode": "default"} if c3 else {})))
        if first and c3:
            for att in ({"type": "agent_listing_delta", "addedTypes": ["general-purpose", "Explore", "Plan"],
                         "addedLines": _AGENT_LISTING.splitlines()},
                        {"type": "skill_listing", "content": _SKILLS}):
                self.emit(self.env("attachment", attachment=att))
        self.clock.tick(1, 30)

    def assistant(self, blocks: list[dict[str, Any]], stop: str) -> None:
        msg = {"id": f"msg_{self.g.hex(24)}", "type": "message", "role": "assistant",
               "model": self.g.pick(("claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805")),
               "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": _USAGE}
        self.emit(self.env("assistant", message=msg, requestId=f"req_{self.g.hex(24)}"))
        self.clock.tick(0.5, 8)

    def tool_round(self, allow_agent: bool) -> None:
        g = self.g
        if g.chance(0.3):
            self.assistant([{"type": "thinking", "thinking": g.output(g.r.randint(200, 3000)),
                             "signature": g.hex(64) * 4}], "tool_use")
        tid = f"toolu_{g.hex(24)}"
        k = g.r.random()
        if allow_agent and self.gen != "C1":
            name = "Agent" if self.gen == "C3" else "Task"
            task = g.prompt()
            desc = g.title()
            self.assistant([{"type": "tool_use", "id": tid, "name": name,
                             "input": {"description": desc, "prompt": task, "subagent_type": "general-purpose"}}],
                           "tool_use")
            agent = ("a" + g.hex(16)) if self.gen == "C3" else g.hex(8)
            self.spawned.append((agent, task, desc))
            tur = {"status": "completed", "prompt": task, "agentId": agent, "agentType": "general-purpose",
                   "content": [{"type": "text", "text": g.answer()}], "totalDurationMs": 5400}
            self.result(tid, g.answer(), tur)
            return
        if k < 0.45:
            cmd = g.command()
            self.assistant([{"type": "tool_use", "id": tid, "name": "Bash",
                             "input": {"command": cmd, "description": "Run the command"}}], "tool_use")
            out = g.output(g.tool_size())
            if self.gen == "C3" and len(out) > 2000:
                # progress records repeat the growing output: they can be most of a file (#24457)
                for j in range(1, g.r.randint(2, 5)):
                    part = out[: len(out) * j // 4]
                    self.emit(self.env("progress", data={"type": "bash_progress", "output": part[-2000:],
                                                         "fullOutput": part, "elapsedTimeSeconds": j,
                                                         "totalLines": part.count("\n")},
                                       toolUseID=f"bash-progress-{j}", parentToolUseID=tid))
            fail = g.chance(0.12)
            if fail:
                code = g.pick((1, 2, 127))
                self.result(tid, f"Exit code {code}\n{out}", f"Error: Exit code {code}\n{out}", error=True)
            else:
                self.result(tid, out, {"stdout": out, "stderr": "", "interrupted": False, "isImage": False,
                                       "noOutputExpected": False})
        elif k < 0.65:
            path = g.path(self.p.cwd)
            content = g.output(g.tool_size())
            self.assistant([{"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": path}}],
                           "tool_use")
            self.result(tid, content, {"type": "text", "file": {"filePath": path, "content": content,
                                                                "numLines": content.count("\n"), "startLine": 1}})
        elif k < 0.85:
            path = g.path(self.p.cwd)
            old, new = g.output(g.r.randint(40, 600)), g.output(g.r.randint(40, 900))
            self.assistant([{"type": "tool_use", "id": tid, "name": "Edit",
                             "input": {"file_path": path, "old_string": old, "new_string": new}}], "tool_use")
            patch = [{"oldStart": 10, "oldLines": old.count("\n"), "newStart": 10, "newLines": new.count("\n"),
                      "lines": ["-" + ln for ln in old.splitlines()] + ["+" + ln for ln in new.splitlines()]}]
            self.result(tid, f"The file {path} has been updated.",
                        {"filePath": path, "oldString": old, "newString": new, "structuredPatch": patch,
                         "userModified": False})
        else:
            path = g.path(self.p.cwd)
            content = g.output(g.r.randint(100, 6000))
            self.assistant([{"type": "tool_use", "id": tid, "name": "Write",
                             "input": {"file_path": path, "content": content}}], "tool_use")
            self.result(tid, f"File created successfully at: {path}",
                        {"type": "create", "filePath": path, "content": content, "structuredPatch": []})

    def result(self, tid: str, content: str, tur: Any, error: bool = False) -> None:
        block: dict[str, Any] = {"tool_use_id": tid, "type": "tool_result", "content": content}
        if error or self.g.chance(0.5):
            block["is_error"] = error
        self.emit(self.env("user", message={"role": "user", "content": [block]}, toolUseResult=tur))
        self.clock.tick(0.2, 20)

    def turn(self, text: str, first: bool, rounds: int, agent_at: int = -1) -> None:
        self.prompt(text, first)
        if self.gen == "C1" and not first and self.g.chance(0.3):
            self.sidechain()
        for i in range(rounds):
            self.tool_round(allow_agent=i == agent_at)
        self.assistant([{"type": "text", "text": self.g.answer()}], "end_turn")
        if self.gen == "C3" and not self.agent_id:
            self.emit(self.env("system", subtype="turn_duration", durationMs=self.g.r.randint(2000, 90000),
                               isMeta=False))
            self.emit({"type": "last-prompt", "lastPrompt": text, "leafUuid": self.last, "sessionId": self.sid})
            if self.g.chance(0.2):
                self.emit({"type": "file-history-snapshot", "messageId": self.g.uuid4(), "isSnapshotUpdate": False,
                           "snapshot": {"messageId": self.g.uuid4(), "timestamp": self.clock.iso(),
                                        "trackedFileBackups": {self.g.path(self.p.cwd): {
                                            "backupFileName": f"{self.g.hex(16)}@v1", "version": 1,
                                            "backupTime": self.clock.iso()}}}})

    def sidechain(self) -> None:
        """C1: a subagent's turns inline in the parent, flagged isSidechain (never a request)."""
        keep = self.agent_id
        self.agent_id = "inline"
        rec = self.env("user", message={"role": "user", "content": self.g.prompt()})
        rec.pop("agentId", None)
        self.emit(rec)
        rec = self.env("assistant", message={"id": f"msg_{self.g.hex(24)}", "role": "assistant", "type": "message",
                                             "model": "claude-3-7-sonnet-20250219",
                                             "content": [{"type": "text", "text": self.g.answer()}]})
        rec.pop("agentId", None)
        self.emit(rec)
        self.agent_id = keep


def _dir_for(home: Path, cwd: str) -> Path:
    d = home / ".claude" / "projects" / encode_dir(cwd)
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_session(g: Gen, c: Corpus, p: Plan) -> list[Plan]:
    """One top-level session (and its subagent files); returns nothing left to do (kept for symmetry)."""
    d = _dir_for(c.home, p.cwd)
    path = d / f"{p.sid}.jsonl"
    clock = Clock(g, p.start)
    first = g.prompt()
    deep = p.extra.get("deep_prompt")
    if deep:  # a pasted log: the first request is one huge line that runs past the head
        first = first + "\n\n```\n" + g.output(deep) + "\n```"
    with open(path, "w", encoding="utf-8") as f:
        w = _Writer(g, p, clock, f)
        if p.gen in ("C1", "C2") and g.chance(0.6):
            for _ in range(g.r.randint(1, 3)):
                w.emit({"type": "summary", "summary": g.title(), "leafUuid": g.uuid4()})
        agent_turns = set(g.r.sample(range(max(1, p.children * 2)), p.children)) if p.children else set()
        t = 0
        text = first
        while True:
            w.turn(text, t == 0, g.r.randint(1, rounds(p.size)), agent_at=0 if t in agent_turns else -1)
            t += 1
            if p.big and w.n > min(4_000_000, p.size // 4):
                _big_middle(g, p, w, f)
                w.turn(g.prompt(), False, 2)
                break
            if w.n >= p.size and t > max(agent_turns, default=-1):
                break
            text = g.prompt()
            clock.tick(60, 3600)
        if p.gen == "C3" and g.chance(0.3):
            w.emit({"type": "ai-title", "aiTitle": g.title(), "sessionId": p.sid})
        if p.gen == "C3":
            w.emit({"type": "mode", "mode": "normal", "sessionId": p.sid})
    set_mtime(path, clock.t)
    c.add(RUNTIME, p.sid, first, gen=p.gen, path=path)
    c.file(path)
    if p.target:
        c.targets[RUNTIME] = {"id": p.sid, "path": str(path), "bytes": path.stat().st_size}
    for agent, task, desc in w.spawned:
        _write_subagent(g, c, p, d, agent, task, desc, clock.t)
    return []


def _big_middle(g: Gen, p: Plan, w: _Writer, f: TextIO) -> None:
    """Most of a big transcript: copies of a ~1 MB block of turns, each copy with its own ids and times."""
    import io

    buf = io.StringIO()
    bw = _Writer(g, p, BlockClock(g), buf, uid=lambda: f"{g.hex(8)}-{g.hex(4)}-4{g.hex(3)}-8{g.hex(3)}-"
                                                         f"{BLOCK_ID}{g.hex(4)}")
    bw.last = w.last
    while bw.n < 1_000_000:
        bw.turn(g.prompt(), False, g.r.randint(2, 8))
    f.flush()
    raw = f.buffer if hasattr(f, "buffer") else None
    assert raw is not None
    target = max(0, p.size - w.n - min(200_000, p.size // 10))
    w.n += write_blocks(raw, buf.getvalue().encode("utf-8"), target)
    raw.flush()
    w.last = None  # the block's uuids are templated: the tail starts a new chain, as after a compaction


def _write_subagent(g: Gen, c: Corpus, p: Plan, d: Path, agent: str, task: str, desc: str, t: float) -> None:
    sub = Plan(sid=p.sid, start=t - 300, cwd=p.cwd, branch=p.branch, size=g.session_size(median=12_000),
               gen=p.gen)
    if p.gen == "C3":
        sd = d / p.sid / "subagents"
        sd.mkdir(parents=True, exist_ok=True)
        path = sd / f"agent-{agent}.jsonl"
        (sd / f"agent-{agent}.meta.json").write_text(dumps({"agentType": "general-purpose", "description": desc,
                                                            "toolUseId": f"toolu_{g.hex(24)}", "spawnDepth": 1}))
    else:
        path = d / f"agent-{agent}.jsonl"
    clock = Clock(g, sub.start)
    with open(path, "w", encoding="utf-8") as f:
        w = _Writer(g, sub, clock, f, agent_id=agent, parent_sid=p.sid)
        w.turn(task, True, g.r.randint(1, 4))
        while w.n < sub.size:
            w.tool_round(allow_agent=False)
        w.assistant([{"type": "text", "text": g.answer()}], "end_turn")
    set_mtime(path, clock.t)
    c.add(RUNTIME, agent, task, parent_id=p.sid, gen=p.gen, path=path)
    c.file(path)


def write_huge(g: Gen, home: Path, sid: str, nbytes: int, start: float) -> tuple[Path, str]:
    """A single transcript of `nbytes` (the multi-GB case) in its own HOME: head, block copies, tail."""
    p = Plan(sid=sid, start=start, cwd="/home/me/src/huge-monorepo", branch="main", size=nbytes, gen="C3",
             big=True)
    c = Corpus(root=home, home=home)
    write_session(g, c, p)
    return Path(c.sessions[0]["path"]), c.sessions[0]["first_request"]


def generations(g: Gen) -> str:
    x = g.r.random()
    return "C3" if x < 0.7 else ("C2" if x < 0.9 else "C1")
