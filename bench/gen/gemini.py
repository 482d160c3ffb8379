"""Gemini CLI store: `~/.gemini/tmp/<project>/chats/` of both generations, shapes from the real fixtures
(tests/fixtures/real/gemini: 0.61 JSONL, legacy-0.24: single JSON documents) and FINDINGS-gemini.md.

- G2 (from ~2026-03-25): `session-<minute>-<id8>.jsonl` under a slug dir (`.project_root`, `projects.json`):
  metadata line, the injected `<session_context>` as `$set.messages`, user/gemini records (a gemini message
  re-appended whole once its toolCalls are known), `$set.lastUpdated` after each, sometimes a resume (a second
  metadata line and a startup-only twin file), a `$set.summary` title; subagents in `chats/<id>/<agent>.jsonl`.
- G1 (before): `session-<minute>-<id8>.json` documents under `tmp/<sha256 of the root>/`; some of them also
  copied into the slug dir by the CLI's migration (the same session twice on disk, listed once).

`plans()` and `write_all()` are what the corpus generator (bench/generate.py) calls.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from bench.gen.common import BLOCK_ID, BlockClock, Clock, Corpus, Gen, Plan, dumps, iso, rounds, set_mtime, write_blocks

RUNTIME = "gemini"
CLI = {"G1": "0.24.0", "G2": "0.61.0"}
G2_FROM = 1774396800.0  # 2026-03-25: JSONL recording (gemini-cli PR 23749)
MODEL = ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-3.1-pro-preview", "gemini-3.8-flash")


def plan_gen(start: float) -> str:
    return "G2" if start >= G2_FROM else "G1"


def new_id(g: Gen) -> str:
    return g.uuid4()


def plans(g: Gen, n: int, bigs: list[int], places: list[tuple[str, str]], start_of: Any) -> list[Plan]:
    """Top-level plans whose sessions (subagents included) add up to n. `start_of(g, recent)` picks a start."""
    out: list[Plan] = []
    total = 0
    for size in bigs:
        if total >= n:
            break
        cwd, branch = g.pick(places)
        out.append(Plan(sid=new_id(g), start=start_of(g, True), cwd=cwd, branch=branch, size=size, gen="G2",
                        big=True))
        total += 1
    while total < n:
        cwd, branch = g.pick(places)
        start = start_of(g, False)
        p = Plan(sid=new_id(g), start=start, cwd=cwd, branch=branch, size=g.session_size(), gen=plan_gen(start))
        left = n - total - 1
        if p.gen == "G2" and left > 0 and g.chance(0.07):
            p.children = min(left, g.r.randint(1, 2))
        if p.gen == "G2" and g.chance(0.06):
            p.extra["resumed"] = True
        if p.gen == "G1" and g.chance(0.2):
            p.extra["migrated"] = True
        out.append(p)
        total += 1 + p.children
    return out


def _sha(p: str) -> str:
    return hashlib.sha256(p.encode()).hexdigest()


class _Store:
    def __init__(self, g: Gen, c: Corpus) -> None:
        self.g, self.c = g, c
        self.gem = c.home / ".gemini"
        self.slugs: dict[str, str] = {}  # project root -> slug

    def slug_dir(self, cwd: str) -> Path:
        slug = self.slugs.get(cwd)
        if slug is None:
            base = "".join(ch if ch.isalnum() else "-" for ch in Path(cwd).name.lower()).strip("-") or "project"
            slug, i = base, 1
            while slug in self.slugs.values():
                slug, i = f"{base}-{i}", i + 1
            self.slugs[cwd] = slug
            d = self.gem / "tmp" / slug
            d.mkdir(parents=True, exist_ok=True)
            (d / ".project_root").write_text(cwd)
        return self.gem / "tmp" / slug

    def close(self) -> None:
        self.gem.mkdir(parents=True, exist_ok=True)
        (self.gem / "projects.json").write_text(json.dumps({"projects": {p: s for p, s in self.slugs.items()}},
                                                           indent=2))


def _context(cwd: str, tmp: Path, t: float) -> dict[str, Any]:
    text = (f"<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
            f"Today's date is Monday, November 2, 2026 (formatted according to the user's locale).\n"
            f"My operating system is: linux\nThe project's temporary directory is: {tmp}\n"
            f"- **Workspace Directories:**\n  - {cwd}\n- **Directory Structure:**\n\n{cwd}/\n</session_context>")
    return {"id": "d04923d38bb0f6017037e74183378ef4", "timestamp": iso(t), "type": "user", "content": [{"text": text}]}


class _Turns:
    """Messages of one session: (message, its first copy without toolCalls) in time order."""

    def __init__(self, g: Gen, p: Plan, clock: Clock, model: str) -> None:
        self.g, self.p, self.clock, self.model = g, p, clock, model
        self.spawned: list[tuple[str, str]] = []  # (child id, task)

    def mid(self) -> str:
        return self.g.uuid4()

    def user(self, text: str) -> dict[str, Any]:
        return {"id": self.mid(), "timestamp": self.clock.iso(), "type": "user", "content": [{"text": text}]}

    def gemini(self, text: str = "", calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        m: dict[str, Any] = {"id": self.mid(), "timestamp": self.clock.iso(), "type": "gemini", "content": text,
                             "thoughts": [], "tokens": {"input": 12000, "output": 300, "cached": 8000, "thoughts": 90,
                                                       "tool": 0, "total": 12390}, "model": self.model}
        if calls is not None:
            m["toolCalls"] = calls
        return m

    def call(self, can_spawn: bool) -> dict[str, Any]:
        g, clock = self.g, self.clock
        cid = f"run_shell_command__run_shell_command_{clock.ms()}_0"
        k = g.r.random()
        if can_spawn:  # every planned subagent is spawned, by the first calls (the corpus counts are exact)
            child, task = g.uuid4(), g.prompt()
            self.spawned.append((child, task))
            return {"id": f"invoke_agent__invoke_agent_{clock.ms()}_0", "name": "invoke_agent",
                    "args": {"agent_name": "generalist", "prompt": task}, "status": "success", "agentId": child,
                    "result": [{"functionResponse": {"id": cid, "name": "invoke_agent", "response": {"output": (
                        f"Subagent 'generalist' finished.\nTermination Reason: GOAL\nResult:\n{g.answer()}")}}}],
                    "timestamp": clock.iso()}
        if k < 0.55:
            cmd = g.command()
            code = 2 if "nonexistent" in cmd else (1 if g.chance(0.15) else 0)
            body = f"<untrusted_context>\nOutput: {g.output(g.tool_size()).rstrip()}" + \
                   (f"\nExit Code: {code}" if code else "") + f"\nProcess Group PGID: {g.r.randint(100, 99999)}\n" \
                   "</untrusted_context>"
            return {"id": cid, "name": "run_shell_command", "args": {"command": cmd, "description": g.words(4)},
                    "result": [{"functionResponse": {"id": cid, "name": "run_shell_command",
                                                     "response": {"output": body}}}],
                    "status": "success", "timestamp": clock.iso(), "resultDisplay": body[:200],
                    "displayName": "Shell", "description": cmd, "renderOutputAsMarkdown": False}
        path = g.path(self.p.cwd)
        if k < 0.8:
            content = g.output(g.r.randint(100, 6000))
            wid = f"write_file__write_file_{clock.ms()}_0"
            return {"id": wid, "name": "write_file", "args": {"file_path": path, "content": content},
                    "result": [{"functionResponse": {"id": wid, "name": "write_file", "response": {
                        "output": f"Successfully created and wrote to new file: {path}."}}}],
                    "status": "success", "timestamp": clock.iso(),
                    "resultDisplay": {"fileName": Path(path).name, "filePath": path, "fileDiff": content[:400],
                                      "diffStat": {"model_added_lines": content.count("\n"), "model_removed_lines": 0}},
                    "displayName": "WriteFile", "renderOutputAsMarkdown": True}
        rid = f"read_file__read_file_{clock.ms()}_0"
        return {"id": rid, "name": "read_file", "args": {"file_path": path},
                "result": [{"functionResponse": {"id": rid, "name": "read_file",
                                                 "response": {"output": g.output(g.tool_size())}}}],
                "status": "success", "timestamp": clock.iso(), "displayName": "ReadFile"}


def _g2_records(g: Gen, p: Plan, t: _Turns, first: str, tmp: Path, kind: str, written: int) -> list[Any]:
    """The JSONL records of one G2 session until about p.size bytes."""
    clock = t.clock
    meta: dict[str, Any] = {"sessionId": p.sid, "projectHash": _sha(p.cwd), "startTime": iso(p.start),
                            "lastUpdated": iso(p.start), "kind": kind}
    recs: list[Any] = [meta]
    if kind == "subagent":
        meta["directories"] = [p.cwd]
    else:
        recs.append({"$set": {"messages": [_context(p.cwd, tmp, p.start)], "lastUpdated": iso(p.start)}})
    prompt = first
    size = written + len(dumps(meta))
    while size < p.size:
        clock.tick(5, 120)
        u = t.user(prompt)
        recs += [u, {"$set": {"lastUpdated": clock.iso()}}]
        calls = g.r.randint(1, rounds(p.size))
        if kind == "main":
            calls = max(calls, p.children - len(t.spawned))
        for _ in range(calls):
            clock.tick()
            m = t.gemini()
            recs.append(dict(m))
            m["toolCalls"] = [t.call(kind == "main" and p.children > len(t.spawned))]
            recs += [m, {"$set": {"lastUpdated": clock.iso()}}]
            size += len(dumps(m)) * 2
        clock.tick()
        recs += [t.gemini(g.answer()), {"$set": {"lastUpdated": clock.iso()}}]
        size += 600 + len(prompt)
        prompt = g.prompt()
    return recs


def _write_jsonl(path: Path, recs: list[Any]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(dumps(r) + "\n" for r in recs).encode()
    path.write_bytes(data)
    return len(data)


def _name(p: Plan, t: float, ext: str) -> str:
    return f"session-{iso(t)[:16].replace(':', '-')}-{p.sid[:8]}.{ext}"


def write_session(g: Gen, c: Corpus, s: _Store, p: Plan) -> None:
    first = g.prompt()
    model = g.pick(MODEL)
    if p.gen == "G1":
        d = s.gem / "tmp" / _sha(p.cwd) / "chats"
        t = _Turns(g, p, Clock(g, p.start), model)
        recs = [r for r in _g2_records(g, p, t, first, d.parent, "main", 0)
                if isinstance(r, dict) and isinstance(r.get("id"), str)]
        msgs: dict[str, Any] = {}
        for r in recs:
            msgs[r["id"]] = r  # the last copy of a message wins
        doc = {"sessionId": p.sid, "projectHash": _sha(p.cwd), "startTime": iso(p.start),
               "lastUpdated": t.clock.iso(), "messages": list(msgs.values())}
        path = d / _name(p, p.start, "json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps(doc, indent=2))
        set_mtime(path, t.clock.t)
        c.file(path)
        if p.extra.get("migrated"):  # the slug migration copies the hash dir and leaves it
            copy = s.slug_dir(p.cwd) / "chats" / path.name
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(path.read_bytes())
            set_mtime(copy, t.clock.t)
            c.file(copy)
            path = copy
        c.add(RUNTIME, p.sid, first, gen="G1", path=path)
        return
    pdir = s.slug_dir(p.cwd)
    t = _Turns(g, p, Clock(g, p.start), model)
    path = pdir / "chats" / _name(p, p.start, "jsonl")
    if p.big:
        _write_big(g, p, t, first, path)
    else:
        recs = _g2_records(g, p, t, first, pdir, "main", 0)
        if p.extra.get("resumed"):
            t.clock.tick(3600, 86400)
            twin = pdir / "chats" / _name(p, t.clock.t, "jsonl")
            again = {"sessionId": p.sid, "projectHash": _sha(p.cwd), "startTime": t.clock.iso(),
                     "lastUpdated": t.clock.iso(), "kind": "main"}
            if twin != path:  # the startup-only twin a resume in another minute leaves
                _write_jsonl(twin, [again, {"$set": {"messages": [_context(p.cwd, pdir, t.clock.t)]}}])
                set_mtime(twin, t.clock.t)
                c.file(twin)
            recs += [{"$set": {"sessionId": p.sid}}, t.user(g.prompt()), t.gemini(g.answer())]
        if g.chance(0.4):
            recs.append({"$set": {"summary": g.title(), "memoryScratchpad": {"version": 1}}})
        _write_jsonl(path, recs)
    set_mtime(path, t.clock.t)
    c.file(path)
    c.add(RUNTIME, p.sid, first, gen="G2", path=path)
    for child, task in t.spawned:
        ct = p.start + g.r.uniform(10, 300)
        cp = Plan(sid=child, start=ct, cwd=p.cwd, branch="", size=g.session_size(median=8_000), gen="G2")
        ctt = _Turns(g, cp, Clock(g, ct), model)
        cpath = pdir / "chats" / p.sid / f"{child}.jsonl"
        recs = _g2_records(g, cp, ctt, task, pdir, "subagent", 0)
        recs.append(ctt.gemini(calls=[{"id": f"{child}#9-0", "name": "complete_task",
                                       "args": {"result": {"response": g.answer()}}, "status": "success"}]))
        _write_jsonl(cpath, recs)
        set_mtime(cpath, ctt.clock.t)
        c.file(cpath)
        c.add(RUNTIME, child, task, parent_id=p.sid, gen="G2", path=cpath)


def _write_big(g: Gen, p: Plan, t: _Turns, first: str, path: Path) -> None:
    """A big G2 transcript: a real head, ~1 MB block copies for the middle, a real tail."""
    head = _g2_records(g, Plan(p.sid, p.start, p.cwd, p.branch, 20_000, "G2"), t, first, path.parent.parent,
                       "main", 0)
    bt = _Turns(g, p, BlockClock(g), t.model)
    block: list[Any] = []
    while len("".join(dumps(r) for r in block)) < 1_000_000:
        m = bt.gemini()
        m["id"] = f"{BLOCK_ID}-{len(block):04d}"
        m["toolCalls"] = [bt.call(False)]
        block += [m, {"$set": {"lastUpdated": bt.clock.iso()}}]
    template = "".join(dumps(r) + "\n" for r in block).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        n = f.write("".join(dumps(r) + "\n" for r in head).encode())
        n += write_blocks(f, template, max(0, p.size - n - 4096))
        t.clock.t = max(t.clock.t, p.start + 3600)
        f.write("".join(dumps(r) + "\n" for r in [t.user(g.prompt()), t.gemini(g.answer()),
                                                   {"$set": {"lastUpdated": t.clock.iso()}}]).encode())


def write_all(g: Gen, c: Corpus, plans_: list[Plan]) -> None:
    s = _Store(g, c)
    for p in plans_:
        write_session(g, c, s, p)
    s.close()


def store_dir(home: Path) -> Path:
    return home / ".gemini" / "tmp"
