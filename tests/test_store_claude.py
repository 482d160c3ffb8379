"""Claude Code reader: every store generation (C1 inline sidechains, C2 sibling agent files, C3 subagent
directories), the request/injection rules, exit codes, bad input, read-only behaviour, and the store the
real Claude Code wrote (tests/fixtures/real/claude)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from segue.model import ReadStats, Session, Step
from segue.stores.base import MAX_TEXT, Env
from segue.stores.claude import ClaudeReader, command_exit_code, request_text, subagent_session_id
from segue.stores.text import OUTPUT_KEEP
from tests.conftest import assert_steps_match_scenario, load_fixture, real_fixture

CWD = "/home/me/src/proj"
SID = "11111111-2222-4333-8444-555555555555"
T0 = "2026-11-29T10:00:00.000Z"


# ---------------------------------------------------------------------------------------------------------
# Builders: records shaped like Claude Code's own (compact JSON, its key order)


def dump(rec: dict[str, Any]) -> str:
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False)


def ts(i: int) -> str:
    return f"2026-11-29T10:{i // 60:02d}:{i % 60:02d}.000Z"


class Log:
    """Builds one transcript. `n` advances timestamps and uuids."""

    def __init__(self, sid: str = SID, cwd: str = CWD, branch: str = "main", version: str = "2.1.197",
                 sidechain: bool = False, agent_id: str | None = None) -> None:
        self.sid, self.cwd, self.branch, self.version = sid, cwd, branch, version
        self.sidechain, self.agent_id = sidechain, agent_id
        self.lines: list[str] = []
        self.n = 0
        self.parent: str | None = None

    def env(self, rec: dict[str, Any], **kw: Any) -> dict[str, Any]:
        self.n += 1
        uid = f"u{self.n:04d}-{self.sid[:8]}"
        out = {"parentUuid": self.parent, "isSidechain": kw.pop("sidechain", self.sidechain), **rec,
               "uuid": uid, "timestamp": kw.pop("timestamp", ts(self.n)), "userType": "external",
               "cwd": kw.pop("cwd", self.cwd), "sessionId": self.sid, "version": self.version,
               "gitBranch": kw.pop("branch", self.branch)}
        if self.agent_id:
            out["agentId"] = self.agent_id
        out.update(kw)
        self.parent = uid
        return out

    def raw(self, line: str) -> Log:
        self.lines.append(line)
        return self

    def rec(self, rec: dict[str, Any]) -> Log:
        return self.raw(dump(rec))

    def user(self, content: Any, **kw: Any) -> Log:
        return self.rec(self.env({"type": "user", "message": {"role": "user", "content": content}}, **kw))

    def assistant(self, blocks: list[dict[str, Any]], mid: str = "msg_1", model: str = "claude-x-1",
                  **kw: Any) -> Log:
        msg = {"model": model, "id": mid, "type": "message", "role": "assistant", "content": blocks,
               "stop_reason": None}
        return self.rec(self.env({"message": msg, "requestId": "req_1", "type": "assistant"}, **kw))

    def text(self, text: str, mid: str = "msg_t", **kw: Any) -> Log:
        return self.assistant([{"type": "text", "text": text}], mid=mid, **kw)

    def tool(self, tid: str, name: str, inp: dict[str, Any], mid: str = "msg_2", **kw: Any) -> Log:
        return self.assistant([{"type": "tool_use", "id": tid, "name": name, "input": inp}], mid=mid, **kw)

    def result(self, tid: str, content: Any, tur: Any = None, is_error: bool = False, **kw: Any) -> Log:
        block = {"tool_use_id": tid, "type": "tool_result", "content": content, "is_error": is_error}
        rec = self.env({"type": "user", "message": {"role": "user", "content": [block]}}, **kw)
        if tur is not None:
            rec["toolUseResult"] = tur
        return self.rec(rec)

    def bash(self, tid: str, cmd: str, out: str = "", code: int = 0, **kw: Any) -> Log:
        self.tool(tid, "Bash", {"command": cmd, "description": "run"}, **kw)
        if code:
            content = f"Exit code {code}\n{out}"
            return self.result(tid, content, f"Error: {content}", is_error=True, **kw)
        return self.result(tid, out, {"stdout": out, "stderr": "", "interrupted": False, "isImage": False,
                                      "noOutputExpected": False}, **kw)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(ln + "\n" for ln in self.lines), encoding="utf-8")
        return path


def claude_home(tmp_path: Path) -> tuple[Env, Path]:
    root = tmp_path / "home" / ".claude"
    (root / "projects").mkdir(parents=True)
    return Env(home=tmp_path / "home", environ={}), root


def proj(root: Path, cwd: str = CWD) -> Path:
    d = root / "projects" / "".join(c if c.isalnum() else "-" for c in cwd)
    d.mkdir(parents=True, exist_ok=True)
    return d


def listing(reader: ClaudeReader) -> dict[str, Session]:
    out: dict[str, Session] = {}
    for src in reader.sources():
        for s in reader.summarize(src):
            assert s.id not in out, f"duplicate id {s.id}"
            out[s.id] = s
    return out


def all_steps(reader: ClaudeReader, s: Session) -> tuple[list[Step], ReadStats]:
    stats = ReadStats()
    return list(reader.steps(s, stats)), stats


def of(steps: list[Step], kind: str) -> list[Step]:
    return [st for st in steps if st.kind == kind]


# ---------------------------------------------------------------------------------------------------------
# C3 (2.1.x): a full session with subagents, titles, every exit-code form


def c3_session(root: Path) -> Path:
    d = proj(root)
    log = Log()
    log.raw(dump({"type": "queue-operation", "operation": "enqueue", "timestamp": ts(0), "sessionId": SID,
                  "content": "Fix the build please"}))
    log.user("Fix the build please", branch="main")
    log.rec(log.env({"attachment": {"type": "skill_listing", "content": "- init: …"}, "type": "attachment"}))
    log.text("Looking.", mid="msg_a")
    log.bash("toolu_ok", "echo hello > out.txt && ls", out="out.txt")
    log.bash("toolu_fail", "ls /nonexistent-dir", out="ls: cannot access '/nonexistent-dir'", code=2)
    log.tool("toolu_grep", "Bash", {"command": "grep -r nothing ."})
    log.result("toolu_grep", "", {"stdout": "", "stderr": "", "interrupted": False,
                                  "returnCodeInterpretation": "No matches found"})
    log.tool("toolu_int", "Bash", {"command": "sleep 100"})
    log.result("toolu_int", "[Request interrupted by user for tool use]",
               {"stdout": "", "stderr": "", "interrupted": True}, is_error=True)
    log.tool("toolu_bg", "Bash", {"command": "npm run dev", "run_in_background": True})
    log.result("toolu_bg", "Command running in background with ID: b1",
               {"stdout": "", "stderr": "", "interrupted": False, "backgroundTaskId": "b1"})
    log.tool("toolu_read", "Read", {"file_path": "/home/me/src/proj/a.py"})
    log.result("toolu_read", "1\tprint('x')\n", {"type": "text", "file": {"filePath": "a.py"}})
    log.tool("toolu_w", "Write", {"file_path": f"{CWD}/notes.md", "content": "a\nb\nc\n"})
    log.result("toolu_w", "File created successfully", {"type": "create", "filePath": f"{CWD}/notes.md",
                                                         "content": "a\nb\nc\n", "structuredPatch": []})
    log.tool("toolu_e", "Edit", {"file_path": f"{CWD}/a.py", "old_string": "x", "new_string": "y"})
    log.result("toolu_e", "The file has been updated.", {
        "filePath": f"{CWD}/a.py", "structuredPatch": [
            {"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 3,
             "lines": [" keep", "-print('x')", "+print('y')", "+print('z')"]}]})
    log.tool("toolu_e2", "Edit", {"file_path": f"{CWD}/missing.py", "old_string": "x", "new_string": "y"})
    log.result("toolu_e2", "<tool_use_error>File does not exist.</tool_use_error>",
               "Error: File does not exist.", is_error=True)
    log.tool("toolu_web", "WebFetch", {"url": "http://127.0.0.1/docs", "prompt": "summarise"})
    log.result("toolu_web", "docs", {"bytes": 4})
    log.tool("toolu_ag", "Agent", {"description": "Count files", "prompt": "Count the files here",
                                   "subagent_type": "general-purpose"})
    log.result("toolu_ag", [{"type": "text", "text": "There are 3 files."}],
               {"status": "completed", "agentId": "a0123456789abcdef", "agentType": "general-purpose",
                "totalDurationMs": 10})
    log.rec({"type": "ai-title", "aiTitle": "Fixing the build", "sessionId": SID})
    log.user("<command-name>/compact</command-name>\n<command-message>compact</command-message>\n"
             "<command-args>keep tests</command-args>")
    log.user("<local-command-stdout>Compacted</local-command-stdout>")
    log.user("This session is being continued from a previous conversation…", isCompactSummary=True)
    log.user("Now also run the tests", branch="feature/x")
    log.assistant([{"type": "text", "text": "API Error: 500"}], mid="msg_syn", model="<synthetic>")
    log.text("All done: tests pass.", mid="msg_last", branch="feature/x")
    log.rec({"type": "last-prompt", "lastPrompt": "Now also run the tests", "leafUuid": log.parent,
             "sessionId": SID})
    log.write(d / f"{SID}.jsonl")

    sub = d / SID / "subagents"
    agent = Log(sidechain=True, agent_id="a0123456789abcdef")
    agent.user("Count the files here")
    agent.bash("toolu_s1", "ls | wc -l", out="3")
    agent.text("3 files.", mid="msg_s")
    agent.write(sub / "agent-a0123456789abcdef.jsonl")
    (sub / "agent-a0123456789abcdef.meta.json").write_text(json.dumps(
        {"agentType": "general-purpose", "description": "Count files", "toolUseId": "toolu_ag",
         "spawnDepth": 1}))
    wf = sub / "workflows" / "wf_abc"
    wfa = Log(sidechain=True, agent_id="awf1")
    wfa.user("Workflow step one")
    wfa.write(wf / "agent-awf1.jsonl")
    (wf / "journal.jsonl").write_text('{"type":"phase","name":"one"}\n')
    (d / SID / "tool-results").mkdir()
    (d / SID / "tool-results" / "toolu_big.txt").write_text("big output")
    return d


def test_c3_listing(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    c3_session(root)
    r = ClaudeReader(env)
    got = listing(r)
    assert set(got) == {SID, "a0123456789abcdef", "awf1"}  # journal.jsonl is no session
    s = got[SID]
    assert s.first_request == "Fix the build please"
    assert s.cwd == CWD
    assert s.branch == "feature/x"  # the latest non-empty gitBranch
    assert s.title == "Fixing the build"
    assert s.model == "claude-x-1"  # <synthetic> ignored
    assert s.parent_id is None and s.resumable and s.resume_blocker is None
    assert s.started_at == pytest.approx(1795946400.0)  # the queue-operation at 10:00:00
    assert s.updated_at is not None and s.updated_at > s.started_at
    assert s.problems == []
    assert s.locator["priority"] == 1

    sub = got["a0123456789abcdef"]
    assert sub.parent_id == SID
    assert sub.resumable is False and sub.resume_blocker == "subagent"
    assert sub.first_request == "Count the files here"
    assert sub.title == "Count files"  # .meta.json description
    assert sub.cwd == CWD
    assert sub.locator["agent_type"] == "general-purpose"
    assert got["awf1"].parent_id == SID


def test_c3_steps(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    c3_session(root)
    r = ClaudeReader(env)
    got = listing(r)
    steps, stats = all_steps(r, got[SID])
    assert stats.damaged_lines == 0
    cmds = [(st.text, st.exit_code) for st in of(steps, "command")]
    assert cmds == [("echo hello > out.txt && ls", 0), ("ls /nonexistent-dir", 2),
                    ("grep -r nothing .", 1), ("sleep 100", None), ("npm run dev", None)]
    edits = [(st.path, st.added, st.removed) for st in of(steps, "edit")]
    assert edits == [(f"{CWD}/notes.md", 3, 0), (f"{CWD}/a.py", 2, 1)]  # the failed Edit is left out
    subs = of(steps, "subagent")
    assert [(st.text, st.ref) for st in subs] == [("Count the files here", "a0123456789abcdef")]
    assert subs[0].ref in got  # the ref names a listed session
    tools = [st.text for st in of(steps, "tool")]
    assert "WebFetch: http://127.0.0.1/docs" in tools
    assert "Slash command: /compact keep tests" in tools  # not the first request: not a request
    assert not any(t.startswith("Read") for t in tools)
    assert [st.text for st in of(steps, "request")] == ["Fix the build please", "Now also run the tests"]
    msgs = [st.text for st in of(steps, "message")]
    assert msgs[-1] == "All done: tests pass." and "API Error: 500" not in msgs
    assert steps[-1].kind == "message"
    # order: the first request comes first, the failing command before the edits
    kinds = [st.kind for st in steps]
    assert kinds[0] == "request"
    assert kinds.index("command") < kinds.index("edit") < kinds.index("subagent")

    sub_steps, _ = all_steps(r, got["a0123456789abcdef"])
    assert [(st.kind, st.text) for st in sub_steps][:2] == [("request", "Count the files here"),
                                                          ("command", "ls | wc -l")]
    assert of(sub_steps, "command")[0].exit_code == 0


# ---------------------------------------------------------------------------------------------------------
# C2 (2.0.x) and C1 (1.0.x)


def test_c2_sibling_agent_files(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    d = proj(root)
    parent = Log(version="2.0.30")
    parent.user("Explore the repo")
    parent.tool("toolu_t", "Task", {"description": "Explore", "prompt": "List modules",
                                    "subagent_type": "Explore"})
    parent.result("toolu_t", [{"type": "text", "text": "ok"}], {"status": "completed", "agentId": "3f2a1b0c",
                                                               "content": [], "totalDurationMs": 5})
    parent.write(d / f"{SID}.jsonl")
    # the agent file carries the PARENT's sessionId
    agent = Log(version="2.0.30", sidechain=True, agent_id="3f2a1b0c")
    agent.user("List modules")
    agent.bash("toolu_x", "ls src", out="a b")
    agent.write(d / "agent-3f2a1b0c.jsonl")
    warm = Log(version="2.0.30", sidechain=True, agent_id="0000beef")
    warm.user("Warmup")
    warm.write(d / "agent-0000beef.jsonl")

    r = ClaudeReader(env)
    got = listing(r)
    assert set(got) == {SID, "3f2a1b0c", "0000beef"}
    for aid in ("3f2a1b0c", "0000beef"):
        assert got[aid].parent_id == SID  # never top-level
        assert got[aid].resume_blocker == "subagent" and not got[aid].resumable
    assert got["3f2a1b0c"].first_request == "List modules"
    steps, _ = all_steps(r, got[SID])
    assert [(st.text, st.ref) for st in of(steps, "subagent")] == [("List modules", "3f2a1b0c")]
    assert of(all_steps(r, got["3f2a1b0c"])[0], "command")[0].text == "ls src"


def test_c1_inline_sidechains(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    d = proj(root)
    log = Log(version="1.0.51")
    log.rec({"type": "summary", "summary": "Old summary", "leafUuid": "x"})
    log.rec({"type": "summary", "summary": "Refactor parser", "leafUuid": f"u0001-{SID[:8]}"})  # the user's
    log.rec({"type": "summary", "summary": "Another session", "leafUuid": "u9999-elsewhere"})
    log.user("Refactor the parser")
    log.tool("toolu_task", "Task", {"description": "Find callers", "prompt": "Find all callers of parse()"})
    # the subagent's turns, inline
    log.user("Find all callers of parse()", sidechain=True)
    log.text("Searching", mid="msg_side", sidechain=True)
    log.tool("toolu_sb", "Bash", {"command": "grep -rn parse ."}, mid="msg_side2", sidechain=True)
    log.result("toolu_sb", "Exit code 2\ngrep: bad", is_error=True, sidechain=True)
    log.tool("toolu_sw", "Write", {"file_path": f"{CWD}/callers.txt", "content": "x\n"}, mid="m3",
             sidechain=True)
    log.result("toolu_sw", "ok", {"type": "create", "filePath": f"{CWD}/callers.txt"}, sidechain=True)
    log.tool("toolu_sweb", "WebSearch", {"query": "parse"}, mid="m4", sidechain=True)
    log.result("toolu_task", [{"type": "text", "text": "3 callers"}], {"content": [], "totalTokens": 9})
    log.text("Found 3 callers.", mid="msg_end")
    log.write(d / f"{SID}.jsonl")

    r = ClaudeReader(env)
    got = listing(r)
    assert list(got) == [SID]  # sidechains are not separate sessions
    s = got[SID]
    assert s.title == "Refactor parser"  # the last summary whose leaf is a record of this file
    assert s.first_request == "Refactor the parser"
    steps, _ = all_steps(r, s)
    assert [st.text for st in of(steps, "request")] == ["Refactor the parser"]
    assert "Searching" not in [st.text for st in of(steps, "message")]
    # the subagent's effects on the workspace stay visible in the parent
    assert [(st.text, st.exit_code) for st in of(steps, "command")] == [("grep -rn parse .", 2)]
    assert [st.path for st in of(steps, "edit")] == [f"{CWD}/callers.txt"]
    assert of(steps, "tool") == []
    assert [(st.text, st.ref) for st in of(steps, "subagent")] == [("Find all callers of parse()", None)]


# ---------------------------------------------------------------------------------------------------------
# Request rules, wrappers, caps, titles


def test_injected_records_are_not_requests() -> None:
    def u(content: Any, **kw: Any) -> dict[str, Any]:
        return {"type": "user", "message": {"role": "user", "content": content}, **kw}

    for rec in (
        u("real", isMeta=True),
        u("summary", isCompactSummary=True),
        u("side", isSidechain=True),
        u([{"type": "tool_result", "tool_use_id": "t", "content": "x"}]),
        u("<command-name></command-name>"),
        u("<local-command-stdout></local-command-stdout>"),
        u("<local-command-caveat>Caveat: …</local-command-caveat>"),
        u("Caveat: The messages below were generated by the user while running local commands."),
        u("<bash-input>ls</bash-input>"),
        u("<bash-stdout>a</bash-stdout><bash-stderr></bash-stderr>"),
        u("<system-reminder>x</system-reminder>"),
        u("<task-notification>done</task-notification>"),
        u("<user-memory-input>remember</user-memory-input>"),
        u("[Request interrupted by user]"),
        u("   "),
        {"type": "assistant", "message": {"role": "assistant", "content": "x"}},
        {"type": "attachment", "attachment": {"type": "queued_command", "prompt": "x",
                                              "commandMode": "task-notification"}},
        {"type": "attachment", "attachment": {"type": "queued_command", "prompt": "x", "isMeta": True}},
        {"type": "attachment", "attachment": {"type": "file", "content": "x"}},
        u("from another session", origin={"kind": "peer"}),
        u("a task finished", origin={"kind": "task-notification"}),
        {"type": "attachment", "attachment": {"type": "queued_command", "prompt": "x", "commandMode": "prompt",
                                              "origin": {"kind": "peer"}}},
    ):
        assert request_text(rec) is None, rec
    assert request_text(u("side", isSidechain=True), in_subagent=True) == "side"
    # slash commands are typed: the command and its arguments (issue 11)
    assert request_text(u("<command-name>/clear</command-name>")) == "/clear"
    assert request_text(u("<command-message>init is analyzing</command-message>\n<command-name>/init"
                          "</command-name>\n<command-args>focus on tests</command-args>")) == "/init focus on tests"
    assert request_text(u("typed", origin={"kind": "human"}, promptSource="typed")) == "typed"
    assert request_text({"type": "attachment", "attachment": {"type": "queued_command",
                                                              "prompt": "also fix lint",
                                                              "commandMode": "prompt"}}) == "also fix lint"


def test_wrappers_are_stripped_not_rejected() -> None:
    ide = u_blocks = {"type": "user", "message": {"role": "user", "content": [
        {"type": "text", "text": "<ide_opened_file>The user opened the file /a.py in the IDE. This may or may "
                                 "not be related.</ide_opened_file>"},
        {"type": "text", "text": "Why does a.py fail?"},
        {"type": "image", "source": {"type": "base64", "data": "AAAA"}}]}}
    assert request_text(u_blocks) == "Why does a.py fail?"
    assert ide is u_blocks
    s = {"type": "user", "message": {"role": "user", "content":
         "<ide_selection>The user selected lines 1-2</ide_selection>\n\nExplain this\n  code"}}
    assert request_text(s) == "Explain this\n  code"  # the whole text after the wrapper, inner spacing kept
    only = {"type": "user", "message": {"role": "user", "content": [
        {"type": "text", "text": "<ide_opened_file>x</ide_opened_file>"}]}}
    assert request_text(only) is None


def test_first_request_cap_keeps_handoff_marker(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    marker = "[segue-handoff v1 from=codex:0199aa00-1111-7222-8333-444455556666]"
    prompt = "Continue the work.\n" + ("brief line\n" * 2000) + f"Pick up here. {marker}\n"
    assert len(prompt) > MAX_TEXT
    log = Log()
    log.user(prompt)
    log.write(proj(root) / f"{SID}.jsonl")
    s = listing(ClaudeReader(env))[SID]
    assert s.first_request is not None and len(s.first_request) <= MAX_TEXT
    assert s.first_request.startswith("Continue the work.\nbrief line")
    assert s.first_request.splitlines()[-1] == f"Pick up here. {marker}"
    short = "Please go on.\n" + marker
    log2 = Log(sid="22222222-2222-4333-8444-555555555555")
    log2.user(short)
    log2.write(proj(root) / "22222222-2222-4333-8444-555555555555.jsonl")
    assert listing(ClaudeReader(env))["22222222-2222-4333-8444-555555555555"].first_request == short


def test_title_precedence(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log()
    log.rec({"type": "summary", "summary": "S", "leafUuid": f"u0001-{SID[:8]}"})
    log.user("first prompt\nsecond line")
    log.rec({"type": "custom-title", "customTitle": "Mine", "sessionId": SID})
    log.rec({"type": "ai-title", "aiTitle": "AI", "sessionId": SID})
    log.rec({"type": "custom-title", "customTitle": "Mine later", "sessionId": SID})
    p = log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    assert listing(r)[SID].title == "Mine later"
    p.write_text("".join(ln + "\n" for ln in log.lines if "custom-title" not in ln))
    assert listing(r)[SID].title == "AI"
    p.write_text("".join(ln + "\n" for ln in log.lines if "title" not in ln))
    assert listing(r)[SID].title == "S"
    p.write_text("".join(ln + "\n" for ln in log.lines if "title" not in ln and "summary" not in ln))
    assert listing(r)[SID].title == "first prompt"


def test_queued_and_bang_commands_in_steps(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log()
    log.user("Start")
    log.raw(dump({"type": "queue-operation", "operation": "enqueue", "timestamp": ts(5), "sessionId": SID,
                  "content": "also fix lint"}))
    log.rec(log.env({"attachment": {"type": "queued_command", "prompt": "also fix lint",
                                    "commandMode": "prompt"}, "type": "attachment"}))
    log.user("<bash-input>make test</bash-input>")
    log.user("<bash-stdout>ok</bash-stdout><bash-stderr></bash-stderr>")
    log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    steps, _ = all_steps(r, listing(r)[SID])
    assert [(st.kind, st.text) for st in steps] == [
        ("request", "Start"), ("request", "also fix lint"), ("command", "make test")]
    assert steps[-1].exit_code is None


def test_exit_code_forms() -> None:
    assert command_exit_code("Exit code 2\nls: nope", True, "Error: Exit code 2\nls: nope") == 2
    assert command_exit_code("", True, "Error: Exit code 127\n") == 127
    assert command_exit_code("out", False, {"stdout": "out", "interrupted": False}) == 0
    assert command_exit_code("", False, {"interrupted": True}) is None
    assert command_exit_code("bare stderr", True, None) is None  # old files: failed, code unknown
    assert command_exit_code("", False, {"returnCodeInterpretation": "Files differ"}) == 1
    assert command_exit_code("Exit code 1", True, {"interrupted": False}) == 1


def test_pending_calls_without_results(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log()
    log.user("Go")
    log.tool("toolu_run", "Bash", {"command": "make"})
    log.tool("toolu_ed", "Edit", {"file_path": "/x.py", "old_string": "a", "new_string": "b"}, mid="m3")
    log.user("Stop, do something else")  # a new turn: the calls were interrupted
    log.tool("toolu_live", "Bash", {"command": "sleep 5"}, mid="m4")  # still running
    log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    steps, _ = all_steps(r, listing(r)[SID])
    assert [(st.kind, st.text or st.path, st.exit_code) for st in steps] == [
        ("request", "Go", None), ("command", "make", None), ("edit", "/x.py", None),
        ("request", "Stop, do something else", None), ("command", "sleep 5", None)]


def test_duplicate_lines_yield_once(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log()
    log.user("Go")
    log.bash("toolu_1", "make", out="ok")
    log.lines = log.lines[:2] + log.lines[1:]  # the tool_use line written twice
    log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    steps, _ = all_steps(r, listing(r)[SID])
    assert [(st.kind, st.text) for st in steps] == [("request", "Go"), ("command", "make")]


# ---------------------------------------------------------------------------------------------------------
# Head/tail limits, deep reads, huge records


def test_first_request_deeper_than_head(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log()
    for i in range(60):  # > 32 KiB of injected context before the first typed prompt
        log.user(f"<system-reminder>{'context ' * 100}{i}</system-reminder>", isMeta=True)
    log.user("The real question")
    for i in range(80):
        log.text("filler " * 100, mid=f"m{i}")
    p = log.write(proj(root) / f"{SID}.jsonl")
    at, size = p.read_bytes().index(b"The real question"), p.stat().st_size
    assert 32 * 1024 < at < size - 32 * 1024  # neither in the head nor in the tail
    s = listing(ClaudeReader(env))[SID]
    assert s.first_request == "The real question"
    assert s.locator.get("read_deep") is True and s.problems == []


def test_progress_and_unwanted_results_are_skipped_undecoded(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log()
    log.user("Go")
    log.tool("toolu_r", "Read", {"file_path": "/big"})
    # These lines are deliberately NOT valid JSON after their markers: decoding them would count damage.
    log.raw('{"parentUuid":"x","isSidechain":false,"type":"progress","data":{"message":{"type":"user",'
            '"message":{"role":"user","content":"nested"}}} BROKEN')
    log.raw('{"parentUuid":"x","type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_r",'
            '"type":"tool_result","content":"' + "x" * 100 + '" BROKEN')
    log.raw('{"type":"file-history-snapshot","messageId":"m","snapshot":{} BROKEN')
    log.bash("toolu_b", "make", out="ok")
    log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    steps, stats = all_steps(r, listing(r)[SID])
    assert stats.damaged_lines == 0
    assert [(st.kind, st.text) for st in steps] == [("request", "Go"), ("command", "make")]
    # control: a damaged line that is not skippable by bytes is counted
    log.raw('{"parentUuid":"x","type":"user","message":{"role":"user","content":"half')
    log.user("after")
    log.write(proj(root) / f"{SID}.jsonl")
    steps, stats = all_steps(r, listing(r)[SID])
    assert stats.damaged_lines == 1 and steps[-1].text == "after"


@pytest.mark.slow
def test_huge_lines_and_big_results(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log()
    # a first prompt with a 50 MB image: the line is far past the head
    log.user([{"type": "image", "source": {"type": "base64", "data": "A" * (50 * 1024 * 1024)}},
              {"type": "text", "text": "What is in this picture?"}])
    log.tool("toolu_big", "Bash", {"command": "cat huge.log; exit 3"})
    out = "line\n" * 400_000  # 2 MB of output: read by byte patterns
    log.result("toolu_big", f"Exit code 3\n{out}", f"Error: Exit code 3\n{out}", is_error=True)
    log.tool("toolu_big2", "Bash", {"command": "cat huge.log"}, mid="m9")
    log.result("toolu_big2", out, {"stdout": out, "stderr": "", "interrupted": False})
    log.text("done", mid="m10", branch="feat")
    p = log.write(proj(root) / f"{SID}.jsonl")
    assert p.stat().st_size > 50 * 1024 * 1024
    r = ClaudeReader(env)
    t = time.monotonic()
    s = listing(r)[SID]
    assert s.first_request == "What is in this picture?" and s.locator.get("read_deep") is True
    assert s.cwd == CWD and s.branch == "feat"
    steps, stats = all_steps(r, s)
    assert [(st.text, st.exit_code) for st in of(steps, "command")] == [("cat huge.log; exit 3", 3),
                                                                       ("cat huge.log", 0)]
    assert stats.damaged_lines == 0
    assert time.monotonic() - t < 20


def test_line_over_cap_is_skipped_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import segue.stores.claude.records as mod

    monkeypatch.setattr(mod, "MAX_LINE", 4096)  # same code path as a real 64 MiB line, smaller
    env, root = claude_home(tmp_path)
    log = Log()
    log.user("Go")
    log.text("x" * 10_000, mid="huge")
    log.bash("toolu_1", "make", out="ok")
    log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    steps, stats = all_steps(r, listing(r)[SID])
    assert stats.damaged_lines == 1
    assert [(st.kind, st.text) for st in steps] == [("request", "Go"), ("command", "make")]


# ---------------------------------------------------------------------------------------------------------
# Bad input


def test_truncated_last_line_is_silent(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log()
    log.user("Go")
    log.text("working", mid="m1")
    p = log.write(proj(root) / f"{SID}.jsonl")
    with p.open("a") as f:
        f.write('{"parentUuid":"x","type":"assistant","message":{"role":"assistant","content":[{"ty')
    r = ClaudeReader(env)
    s = listing(r)[SID]
    assert s.problems == [] and s.first_request == "Go"
    steps, stats = all_steps(r, s)
    assert stats.damaged_lines == 0 and [st.text for st in steps] == ["Go", "working"]


def test_corrupt_middle_lines_and_invalid_utf8(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log()
    log.raw('{"cwd":"/x", not json at all')
    log.user("Caf\udce9 order")  # placeholder, replaced below with a raw invalid byte
    log.raw('{"type":"user","message":{"role":"user","content":"cut mid-file')
    log.text("ok", mid="m1")
    p = proj(root) / f"{SID}.jsonl"
    data = "".join(ln + "\n" for ln in log.lines).encode("utf-8", "surrogateescape")
    p.write_bytes(data)
    assert b"Caf\xe9 order" in data
    r = ClaudeReader(env)
    s = listing(r)[SID]
    assert s.first_request == "Caf\ufffd order"
    # a summary decodes only lines whose bytes could add a fact, and reports the damage it met there
    assert "1 damaged line skipped" in s.problems
    assert any("invalid UTF-8" in x for x in s.problems)
    steps, stats = all_steps(r, s)
    # steps() decode every line no positive byte match lets them skip: both damaged lines are counted
    assert stats.damaged_lines == 2
    assert [st.text for st in of(steps, "request")] == ["Caf\ufffd order"]


def test_empty_and_unknown(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    d = proj(root)
    (d / f"{SID}.jsonl").write_bytes(b"")
    other = "33333333-2222-4333-8444-555555555555"
    (d / f"{other}.jsonl").write_text(
        '{"type":"brand-new-kind","weird":[1,2,{"x":null}]}\n'
        '{"type":"user","message":{"role":"user","content":"hi"},"cwd":42,"timestamp":"not a time",'
        '"gitBranch":null}\n'
        '{"type":"user","message":{"role":"user","content":{"unexpected":"object"}},"cwd":"/w"}\n'
        '["timestamp",1]\n"timestamp"\n')
    r = ClaudeReader(env)
    got = listing(r)
    assert got[SID].problems == ["empty file"] and got[SID].first_request is None
    o = got[other]
    assert o.first_request == "hi" and o.cwd == "/w" and o.branch is None
    assert "2 damaged lines skipped" in o.problems  # the array and the bare string
    for s in got.values():
        all_steps(r, s)


def test_unreadable_sources_are_refused_not_hung(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    d = proj(root)
    (d / "44444444-2222-4333-8444-555555555555.jsonl").mkdir()
    (d / "55555555-2222-4333-8444-555555555555.jsonl").symlink_to(tmp_path / "gone.jsonl")
    os.mkfifo(d / "66666666-2222-4333-8444-555555555555.jsonl")
    good = Log()
    good.user("fine")
    good.write(d / f"{SID}.jsonl")
    r = ClaudeReader(env)
    srcs = list(r.sources())
    assert len(srcs) == 4
    errors: dict[str, str] = {}
    sessions = []

    def run() -> None:
        for src in srcs:
            try:
                sessions.extend(r.summarize(src))
            except OSError as e:
                errors[os.path.basename(src.path)] = str(e)
        for s in list(sessions):
            list(r.steps(s, ReadStats()))
        fake = Session(runtime="claude", id="x", store_path=str(d / "66666666-2222-4333-8444-555555555555.jsonl"))
        try:
            list(r.steps(fake, ReadStats()))
        except OSError as e:
            errors["fifo-steps"] = str(e)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(10)
    assert not th.is_alive(), "a FIFO or a directory hung the reader"
    assert [s.id for s in sessions] == [SID]
    assert "directory" in errors["44444444-2222-4333-8444-555555555555.jsonl"]
    assert "55555555-2222-4333-8444-555555555555.jsonl" in errors
    assert "FIFO" in errors["66666666-2222-4333-8444-555555555555.jsonl"]
    assert "FIFO" in errors["fifo-steps"]


def test_missing_store(tmp_path: Path) -> None:
    r = ClaudeReader(Env(home=tmp_path / "nobody", environ={}))
    assert list(r.sources()) == []
    locs = r.locations()
    assert [loc.exists for loc in locs] == [False, False]
    assert locs[0].path == str(tmp_path / "nobody" / ".claude" / "projects")
    assert "CLAUDE_CONFIG_DIR" in locs[0].how_to_override


# ---------------------------------------------------------------------------------------------------------
# Roots, overrides, priorities, fingerprints, live


def test_roots_and_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    xdg = tmp_path / "xdg"
    a = Log(sid="aaaaaaaa-2222-4333-8444-555555555555")
    a.user("in config dir")
    a.write(cfg / "projects" / "-w" / f"{a.sid}.jsonl")
    b = Log(sid="bbbbbbbb-2222-4333-8444-555555555555")
    b.user("in xdg")
    b.write(xdg / "claude" / "projects" / "-w" / f"{b.sid}.jsonl")
    same = Log()
    same.user("copy in xdg")
    same.write(xdg / "claude" / "projects" / "-w" / f"{SID}.jsonl")
    same.write(cfg / "projects" / "-w" / f"{SID}.jsonl")
    home = tmp_path / "home"
    (home / ".claude" / "projects" / "-w").mkdir(parents=True)
    ignored = Log(sid="cccccccc-2222-4333-8444-555555555555")
    ignored.user("default root, overridden")
    ignored.write(home / ".claude" / "projects" / "-w" / f"{ignored.sid}.jsonl")

    r = ClaudeReader(Env(home=home, environ={"CLAUDE_CONFIG_DIR": str(cfg), "XDG_CONFIG_HOME": str(xdg)}))
    assert [loc.path for loc in r.locations()] == [str(cfg / "projects"), str(xdg / "claude" / "projects")]
    found = [s for src in r.sources() for s in r.summarize(src)]
    ids = sorted(s.id for s in found)
    assert ids == sorted([a.sid, b.sid, SID, SID])
    prio = {s.store_path: s.locator["priority"] for s in found if s.id == SID}
    assert prio[str(cfg / "projects" / "-w" / f"{SID}.jsonl")] > prio[str(xdg / "claude" / "projects" / "-w"
                                                                           / f"{SID}.jsonl")]
    # the same directory reached twice (symlink) is read once
    (tmp_path / "home2").mkdir()
    (tmp_path / "home2" / ".config").mkdir()
    os.symlink(cfg, tmp_path / "home2" / ".config" / "claude")
    r2 = ClaudeReader(Env(home=tmp_path / "home2", environ={"CLAUDE_CONFIG_DIR": str(cfg)}))
    assert len(list(r2.sources())) == 2


def test_fingerprints_change_with_content(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    c3_session(root)
    r = ClaudeReader(env)
    before = {s.path: s.fingerprint for s in r.sources()}
    p = proj(root) / f"{SID}.jsonl"
    with p.open("a") as f:
        f.write(dump({"type": "custom-title", "customTitle": "x", "sessionId": SID}) + "\n")
    meta = proj(root) / SID / "subagents" / "agent-a0123456789abcdef.meta.json"
    meta.write_text(json.dumps({"description": "Renamed"}))
    after = {s.path: s.fingerprint for s in r.sources()}
    changed = {k for k in after if after[k] != before[k]}
    assert changed == {str(p), str(meta.with_name("agent-a0123456789abcdef.jsonl"))}
    kinds = {os.path.basename(s.path): s.kind for s in r.sources()}
    assert kinds[f"{SID}.jsonl"] == "session" and kinds["agent-a0123456789abcdef.jsonl"] == "subagent"


def _proc_start(pid: int) -> str:
    s = Path(f"/proc/{pid}/stat").read_text()
    return s[s.rfind(")") + 2:].split(" ")[19]


def test_live_marker(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    d = proj(root)
    ids = [f"{c * 8}-2222-4333-8444-555555555555" for c in "abcde"]
    for sid in ids:
        log = Log(sid=sid)
        log.user("hi")
        log.write(d / f"{sid}.jsonl")
    sessions = root / "sessions"
    sessions.mkdir()
    me = os.getpid()
    # what Claude Code 2.1.197 writes while it runs (also under -p)
    (sessions / f"{me}.json").write_text(json.dumps({
        "pid": me, "sessionId": ids[0], "cwd": CWD, "startedAt": 1, "procStart": _proc_start(me),
        "version": "2.1.197", "kind": "interactive", "entrypoint": "sdk-cli"}))
    dead = 2 ** 22 + 12345  # above the default pid_max: never alive
    (sessions / f"{dead}.json").write_text(json.dumps({"pid": dead, "sessionId": ids[1], "startedAt": 1}))
    (sessions / "1.json").write_text(json.dumps({"pid": 1, "sessionId": ids[2], "procStart": "no-such"}))
    (sessions / "999.json").write_text("{broken")
    (sessions / "notes.txt").write_text(json.dumps({"pid": me, "sessionId": ids[3]}))
    got = listing(ClaudeReader(env))
    assert [got[i].live for i in ids] == [True, False, False, False, False]


# ---------------------------------------------------------------------------------------------------------
# Read-only: nothing under the store changes


def snapshot(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            entry: Any = (st.st_mode, st.st_mtime_ns, st.st_size)
            if p.is_file() and not p.is_symlink():
                entry = (*entry, hashlib.sha256(p.read_bytes()).hexdigest())
            out[str(p.relative_to(root))] = entry
    out["."] = root.stat().st_mtime_ns
    return out


def exercise(reader: ClaudeReader) -> None:
    for src in reader.sources():
        try:
            sessions = reader.summarize(src)
        except OSError:
            continue
        for s in sessions:
            list(reader.steps(s, ReadStats()))
            reader.exists(s)
    reader.locations()
    reader.live_ids()


def test_read_only(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    c3_session(root)
    d = proj(root)
    c1 = Log(sid="77777777-2222-4333-8444-555555555555", version="1.0.51")
    c1.rec({"type": "summary", "summary": "S", "leafUuid": "x"})
    c1.user("c1")
    c1.write(d / f"{c1.sid}.jsonl")
    with (d / f"{c1.sid}.jsonl").open("a") as f:
        f.write('{"cut')
    (d / "agent-3f2a1b0c.jsonl").write_text(dump({"type": "user", "sessionId": SID,
                                                  "message": {"role": "user", "content": "x"}}) + "\n")
    (root / "sessions").mkdir()
    (root / "sessions" / "12.json").write_text('{"pid":12,"sessionId":"x"}')
    os.mkfifo(d / "88888888-2222-4333-8444-555555555555.jsonl")
    (d / "99999999-2222-4333-8444-555555555555.jsonl").symlink_to(tmp_path / "nowhere")
    home = env.home
    before = snapshot(home)
    exercise(ClaudeReader(env))
    assert snapshot(home) == before

    # negative control: the checker sees a touched file, an added file and a changed mtime
    p = d / f"{SID}.jsonl"
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert snapshot(home) != before
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert snapshot(home) == before
    (d / "stray.tmp").write_text("")
    assert snapshot(home) != before


# ---------------------------------------------------------------------------------------------------------
# Budget (loose: the benchmark measures the real figure)


@pytest.mark.slow
def test_summaries_are_cheap(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    c3_session(root)
    base = (proj(root) / f"{SID}.jsonl").read_text()
    d = proj(root, "/w/many")
    n = 2000
    for i in range(n):
        sid = f"{i:08x}-2222-4333-8444-555555555555"
        (d / f"{sid}.jsonl").write_text(base.replace(SID, sid))
    r = ClaudeReader(env)
    t = time.perf_counter()
    count = sum(len(r.summarize(src)) for src in r.sources())
    per = (time.perf_counter() - t) / count
    assert count == n + 3
    assert per < 0.001, f"{per * 1e6:.0f} µs per session"


# ---------------------------------------------------------------------------------------------------------
# The store the real Claude Code wrote


# the pinned version's store, and the newest one's (2.1.3xx: api-request records, ~57 KB prompt snapshots that
# push a one-turn session's reply out of the tail)
REAL_STORES = ("claude", "claude-2.1.332", "claude-2.1.337")


def _real(name: str = "claude") -> tuple[ClaudeReader, dict[str, Any], dict[str, Session]]:
    env, exp, _ = load_fixture(name)
    r = ClaudeReader(env)
    return r, exp, listing(r)


@pytest.mark.parametrize("name", REAL_STORES)
def test_real_fixture_sessions(name: str) -> None:
    _r, exp, got = _real(name)
    assert exp["sessions"], "expected.json lists no sessions"
    for e in exp["sessions"]:
        assert e["id"] in got, f"{e['id']} not listed; got {sorted(got)}"
        s = got[e["id"]]
        assert s.first_request == e["first_request"], e["id"]
        assert s.cwd == e["cwd"], e["id"]
        assert s.branch == e.get("branch"), e["id"]
        assert s.parent_id == e.get("parent_id"), e["id"]
        assert s.problems == [], (e["id"], s.problems)
        assert s.started_at and s.updated_at and s.updated_at >= s.started_at
        if e.get("parent_id"):
            assert s.resume_blocker == "subagent" and not s.resumable
        else:
            assert s.resumable and s.resume_blocker is None
            assert s.model, e["id"]
        # the last activity is the latest timestamp of the whole file (every record decoded)
        assert s.updated_at == _latest_time(s.store_path), e["id"]


def _latest_time(path: str) -> float | None:
    from segue.model import parse_time

    times = [parse_time(json.loads(line).get("timestamp")) for line in Path(path).read_bytes().splitlines()
             if line.strip()]
    return max((t for t in times if t is not None), default=None)


@pytest.mark.parametrize("name", REAL_STORES)
def test_real_fixture_steps(name: str) -> None:
    r, exp, got = _real(name)
    for e in exp["sessions"]:
        s = got[e["id"]]
        steps, stats = all_steps(r, s)
        assert_steps_match_scenario(steps, stats, e)
        for child in e.get("subagent_ids", []):
            assert got[child].parent_id == e["id"]
        if not e.get("parent_id"):
            assert steps[0].kind == "request" and steps[0].text == e["first_request"]


@pytest.mark.parametrize("name", REAL_STORES)
def test_real_fixture_read_only(name: str) -> None:
    r, _exp, _got = _real(name)
    d, _ = real_fixture(name)
    before = snapshot(d)
    exercise(r)
    assert snapshot(d) == before


def test_subagent_id_form() -> None:
    assert subagent_session_id("a0123") == "a0123"
    assert subagent_session_id("agent-a0123") == "a0123"


def test_chunk_lines() -> None:
    from segue.stores.claude import _Chunk

    def fw(c: _Chunk) -> list[bytes]:
        return [c.buf[a:b] for a, b in c.forward()]

    def bw(c: _Chunk) -> list[bytes]:
        return [c.buf[a:b] for a, b in c.backward()]

    whole = _Chunk(b"a\n\nb\nc", is_tail=False, whole=True)
    assert fw(whole) == [b"a", b"b", b"c"] and bw(whole) == [b"c", b"b", b"a"]
    assert whole.maybe_cut(whole.end) and not whole.maybe_cut(1)
    head = _Chunk(b"a\nb\nc", is_tail=False, whole=False)  # "c" was cut by the head limit
    assert fw(head) == [b"a", b"b"] and bw(head) == [b"b", b"a"]
    tail = _Chunk(b"xa\nb\nc\n", is_tail=True, whole=False)  # "xa" is the end of a line cut by the tail
    assert fw(tail) == [b"b", b"c"] and bw(tail) == [b"c", b"b"] and not tail.open_last
    live = _Chunk(b"xa\nb\n{cut", is_tail=True, whole=False)
    assert bw(live) == [b"{cut", b"b"] and live.maybe_cut(live.end)
    assert fw(_Chunk(b"no newline at all", is_tail=True, whole=False)) == []
    assert bw(_Chunk(b"", is_tail=False, whole=True)) == []
    c = _Chunk(b"xa\nbb\ncc\n", is_tail=True, whole=False)
    assert c.line_at(4) == (3, 5) and c.line_at(1) is None


# ---------------------------------------------------------------------------------------------------------
# Long lines read from cut copies (tool results, thinking): the same steps as decoding them whole

_PIECES = ["plain ascii text", "naïve café Größe", "中文输出", "emoji 😀🚀", 'a "quoted" word', "back\\slash",
           "tab\there", "nul\u0000byte", "\x1b[31mred\x1b[0m", "}{\"type\":\"text\",\"text\":\""]


def _text(rng: Any, size: int, shape: int) -> str:
    parts: list[str] = []
    n = 0
    while n < size:
        p = rng.choice(_PIECES) * rng.randint(1, 30)
        parts.append(p)
        n += len(p) + 1
    out = "\n".join(parts)
    if shape & 1:
        out = "\\" * rng.randint(600, 3000) + out  # backslashes where the start is cut
    if shape & 2:
        out = " \n" * rng.randint(400, 2000) + out  # blanks before any exit-code header
    if shape & 4:
        out += "\\" * rng.randint(600, 3000) + "x" * rng.randint(0, 500)  # backslashes where the end is cut
    if shape & 8:
        out = "Exit code " + "7" * rng.randint(500, 3000) + "\n" + out  # a code that runs into the cut
    if shape & 16:
        out += "中文输出" * rng.randint(100, 400)  # 3-byte characters: the kept bytes hold fewer characters
    return out


def _long_lines_log(rng: Any) -> Log:
    log = Log()
    log.user("start")
    for i in range(128):
        shape, size = i % 32, rng.choice([0, 100, 3000, 20_000, 150_000])
        out, tid = _text(rng, size, shape), f"toolu_{i}"
        if rng.random() < 0.5:
            log.assistant([{"type": "thinking", "thinking": _text(rng, size, 0), "signature": "s" * 3000},
                           {"type": "text", "text": f"step {i}"}], mid=f"m{i}")
        log.tool(tid, "Bash", {"command": f"run {i}"}, mid=f"mt{i}")
        form = (i // 32) % 4
        if form == 0:
            log.result(tid, out, {"stdout": out, "stderr": out[:5000], "interrupted": i % 7 == 0})
        elif form == 1:
            content = f"Exit code {i % 5 + 1}\n{out}"
            log.result(tid, content, f"Error: {content}", is_error=True)
        elif form == 2:  # text blocks: the tail may span a short last block
            blocks = [{"type": "text", "text": out}, {"type": "text", "text": _text(rng, rng.choice([10, 300]), 0)}]
            log.result(tid, blocks, {"stdout": out, "returnCodeInterpretation": "No matches found"})
        else:  # no code in the content: the one in a string toolUseResult counts
            log.result(tid, "x" + out, {"stdout": out, "backgroundTaskId": "b1"} if i % 2 else out,
                       is_error=i % 3 == 0)
        if i % 4 == 0:
            big = _text(rng, size, 0)
            log.tool(f"toolu_e{i}", "Edit", {"file_path": f"/f{i}", "old_string": big, "new_string": big + "x"},
                     mid=f"me{i}")
            log.result(f"toolu_e{i}", "The file has been updated.", {
                "filePath": f"/f{i}", "oldString": big, "newString": big + "x", "originalFile": big * 2,
                "structuredPatch": [{"oldStart": 1, "lines": ["-a", "+b", "+c", " d"]}]})
        if i % 8 == 0:  # a tool input shaped like a thinking block: shown, so never cut
            log.tool(f"toolu_w{i}", "WebFetch", {"type": "thinking", "thinking": "fetch " + out}, mid=f"mw{i}")
        if i % 4 == 1:  # a Write: only its line count shows, taken from the bytes when they allow it
            body = rng.choice([out, out + "\n", "\n" * rng.randint(1, 3000), out.replace("\\", "/") + "\r\n"])
            log.tool(f"toolu_f{i}", "Write", {"file_path": f"/w{i}", "content": body}, mid=f"mf{i}")
            log.result(f"toolu_f{i}", "File created", {"type": "create", "filePath": f"/w{i}", "content": body,
                                                      "structuredPatch": []})
        if i % 8 == 3:  # another tool's long `content` is what its step shows: never cut
            log.tool(f"toolu_m{i}", "mcp__notes__save", {"content": "note " + out.replace("\\", "/")}, mid=f"mm{i}")
    log.text("finished", mid="mz")
    return log


@pytest.mark.parametrize("seed", [1, 2])
def test_cut_tool_results_and_thinking_match_whole_decoding(tmp_path: Path, seed: int,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    import segue.stores.claude.triage as mod

    env, root = claude_home(tmp_path)
    _long_lines_log(random.Random(seed)).write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    s = listing(r)[SID]
    cuts: list[Any] = []
    real_cut = mod.cut_strings
    monkeypatch.setattr(mod, "cut_strings", lambda *a: cuts.append(x := real_cut(*a)) or x)
    got, stats = all_steps(r, s)
    # the reference: fast paths off, every line decoded whole
    ref = ClaudeReader(Env(home=env.home, environ={**env.environ, "SEGUE_FAST_PATHS": "0"}))
    want, _ = all_steps(ref, s)
    assert got == want
    assert stats.damaged_lines == 0 and not stats.problems
    assert sum(c is not None for c in cuts) > 40
    assert sum(st.kind == "command" and st.output is not None for st in got) >= 50
    assert any(st.kind == "tool" and st.text.startswith("WebFetch") for st in got)
    assert any(st.kind == "tool" and st.text.startswith("mcp__notes__save: note") for st in got)
    assert len([st for st in got if st.kind == "edit" and st.path and st.path.startswith("/w")]) == 32


def test_write_line_counts_from_bytes_match_decoded_text(tmp_path: Path) -> None:
    """A Write's content is cut and its lines counted from the JSON escapes: `\\u000a` newlines, a last
    line with or without a newline, escaped backslashes before `n` (decoded whole instead)."""
    env, root = claude_home(tmp_path)
    bodies = ["a\n" * 3000, "a\n" * 3000 + "tail", "x" * 9000, "C:\\new\\" * 1500 + "\n", "\n" * 4000,
              "é\n" * 3000 + "😀", "y" * 9000 + "\u2028z"]  # lines over CUT_MIN
    log = Log()
    log.user("go")
    for i, body in enumerate(bodies):
        log.tool(f"toolu_{i}", "Write", {"file_path": f"/f{i}", "content": body}, mid=f"m{i}")
        log.result(f"toolu_{i}", "File created", {"type": "create", "filePath": f"/f{i}", "structuredPatch": []})
    assert '"content":"a\\n' in log.lines[1]
    log.lines[1] = log.lines[1].replace('"content":"a\\n', '"content":"a\\u000a', 1)  # the other newline escape
    log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    steps, stats = all_steps(r, listing(r)[SID])
    want = [b.count("\n") + (0 if b.endswith("\n") else 1) for b in bodies]
    assert [(st.path, st.added) for st in of(steps, "edit")] == [(f"/f{i}", n) for i, n in enumerate(want)]
    assert stats.damaged_lines == 0


def test_long_results_and_thinking_are_not_decoded_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, root = claude_home(tmp_path)
    log = Log()
    log.user("go")
    out = "compilé módulo 中文 ok\n" * 10_000
    for i in range(10):
        log.assistant([{"type": "thinking", "thinking": "hmm " * 20_000, "signature": "S" * 4000}], mid=f"mk{i}")
        log.bash(f"toolu_{i}", f"make {i}", out=out + f"done {i}", code=i % 2)
        log.tool(f"toolu_e{i}", "Edit", {"file_path": f"/f{i}", "old_string": "a", "new_string": "b"}, mid=f"me{i}")
        log.result(f"toolu_e{i}", "updated", {"filePath": f"/f{i}", "originalFile": out, "oldString": "a",
                                              "newString": "b", "structuredPatch": [{"lines": ["-a", "+b"]}]})
    p = log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    s = listing(r)[SID]
    import segue.stores.claude.records as records

    decoded: list[int] = []
    real = records.loads  # orjson or the stdlib: whichever decodes, every decode passes here
    monkeypatch.setattr(records, "loads", lambda t: decoded.append(len(t)) or real(t))
    steps, stats = all_steps(r, s)
    monkeypatch.undo()
    assert [(st.text, st.exit_code, st.output) for st in of(steps, "command")] == [
        (f"make {i}", i % 2, (("Exit code 1\n" if i % 2 else "") + out + f"done {i}")[-OUTPUT_KEEP:])
        for i in range(10)]
    assert [(st.path, st.added, st.removed) for st in of(steps, "edit")] == [(f"/f{i}", 1, 1) for i in range(10)]
    assert stats.damaged_lines == 0
    # each result keeps OUTPUT_KEEP characters of its end (for redaction before the cut), the rest is cut
    assert sum(decoded) < p.stat().st_size // 20, (sum(decoded), p.stat().st_size)


# ---------------------------------------------------------------------------------------------------------
# Real-world shapes (issue 11): each from a file written in that shape


def _brief_of(env: Env, sid: str = SID) -> tuple[str, dict[str, Any]]:
    from segue.brief import build_facts, render
    from segue.redact import Redactor

    r = ClaudeReader(env)
    s = listing(r)[sid]
    stats = ReadStats()
    facts = build_facts(s, r.steps(s, stats), stats, Redactor(environ={}))
    md = re.sub(r"Written by Segue at \S+", "", render(facts, now=1_800_000_000))
    return md, facts.to_json()


def _working_session() -> Log:
    log = Log(version="2.1.197")
    log.user("Fix the failing build, please: «naïve» café")
    log.text("Looking.", mid="m1")
    log.bash("toolu_1", "make", out="error: missing ;", code=2, mid="m2")
    log.tool("toolu_2", "Edit", {"file_path": f"{CWD}/a.c", "old_string": "x", "new_string": "x;"}, mid="m3")
    log.result("toolu_2", "updated", {"filePath": f"{CWD}/a.c", "structuredPatch": [{"lines": ["-x", "+x;"]}]})
    log.bash("toolu_3", "make", out="ok", mid="m4")
    log.user("Now run the tests")
    log.bash("toolu_4", "make test", out="all passed", mid="m5")
    log.text("Build fixed and tests pass.", mid="m6")
    return log


def _rev(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _rev(v[k]) for k in reversed(list(v))}
    return [_rev(x) for x in v] if isinstance(v, list) else v


@pytest.mark.parametrize("shape", ["spaced", "reordered", "sorted", "spaced-reordered"])
def test_spaced_and_reordered_json_gives_the_same_brief(tmp_path: Path, shape: str) -> None:
    log = _working_session()
    env, root = claude_home(tmp_path / "compact")
    p = log.write(proj(root) / f"{SID}.jsonl")
    want_md, want = _brief_of(env)
    assert len(want["commands"]) == 3 and want["latest_request"] == "Now run the tests"

    lines = []
    for ln in log.lines:
        rec = json.loads(ln)
        if "reordered" in shape:
            rec = _rev(rec)
        lines.append(json.dumps(rec, sort_keys=shape == "sorted",
                                **({} if "spaced" in shape else {"separators": (",", ":")})))
    env2, root2 = claude_home(tmp_path / shape)
    q = proj(root2) / f"{SID}.jsonl"
    q.write_text("".join(x + "\n" for x in lines))
    os.utime(q, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns))
    assert q.read_bytes() != p.read_bytes()
    got_md, got = _brief_of(env2)
    assert got == want
    assert got_md == want_md


def test_bom_at_file_start_keeps_the_first_record(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log(version="1.0.51")
    log.user("The first prompt of a 1.0 session")
    log.text("ok", mid="m1")
    p = proj(root) / f"{SID}.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + "".join(ln + "\r\n" for ln in log.lines).encode())
    for fast in ("1", "0"):
        r = ClaudeReader(Env(home=env.home, environ={"SEGUE_FAST_PATHS": fast}))
        s = listing(r)[SID]
        assert s.first_request == "The first prompt of a 1.0 session" and s.problems == []
        assert s.cwd == CWD and s.started_at is not None
        steps, stats = all_steps(r, s)
        assert [(st.kind, st.text) for st in steps] == [("request", "The first prompt of a 1.0 session"),
                                                       ("message", "ok")]
        assert stats.damaged_lines == 0


def test_session_beginning_with_a_slash_command(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log(version="1.0.51")
    log.user("<command-message>init is analyzing your codebase…</command-message>\n"
             "<command-name>/init</command-name>\n<command-args>focus on the parser</command-args>")
    log.user("Please analyze this codebase and create a CLAUDE.md file…", isMeta=True)  # the expansion
    log.text("Created CLAUDE.md", mid="m1")
    log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    s = listing(r)[SID]
    assert s.first_request == "/init focus on the parser"
    assert s.title == "/init focus on the parser"
    md, facts = _brief_of(env)
    assert facts["first_request"] == facts["latest_request"] == "/init focus on the parser"
    assert "Please analyze this codebase" not in md
    # a later slash command (`/exit`) is activity, not the latest request
    log.user("Now add a section on tests")
    log.user("<command-name>/exit</command-name>\n<command-message>exit</command-message>\n"
             "<command-args></command-args>")
    log.write(proj(root) / f"{SID}.jsonl")
    md, facts = _brief_of(env)
    assert facts["first_request"] == "/init focus on the parser"
    assert facts["latest_request"] == "Now add a section on tests"
    assert any(st["text"] == "Slash command: /exit" for st in facts["steps"])


def test_summary_of_another_session_is_never_the_title(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    log = Log(version="1.0.51")
    log.rec({"type": "summary", "summary": "Work on some other thing", "leafUuid": "0b6e7a10-dead-beef"})
    log.user("Refactor the lexer")
    log.text("Done", mid="m1")
    p = log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    assert listing(r)[SID].title == "Refactor the lexer"
    # in a long file, the summary of its leaf (the last message, in the tail) names this session; one of
    # a message in the middle (another conversation's leaf) does not
    big = Log(version="1.0.51")
    big.rec({"type": "summary", "summary": "Lexer refactor", "leafUuid": f"u0301-{SID[:8]}"})
    big.rec({"type": "summary", "summary": "An older branch", "leafUuid": f"u0150-{SID[:8]}"})
    big.user("Refactor the lexer")
    for i in range(300):
        big.text(f"step {i} " + "z" * 400, mid=f"m{i}")
    big.write(p)
    assert p.stat().st_size > 200 * 1024 and f'"uuid":"u0301-{SID[:8]}"' in big.lines[-1]
    for fast in ("1", "0"):
        got = listing(ClaudeReader(Env(home=env.home, environ={"SEGUE_FAST_PATHS": fast})))[SID]
        assert got.title == "Lexer refactor", fast


def test_failed_bash_without_exit_code_is_failed_or_rejected_not_unknown(tmp_path: Path) -> None:
    """Claude Code ≤ 2.0.28 wrote failed Bash results as `is_error: true` with no `Exit code N` text."""
    env, root = claude_home(tmp_path)
    log = Log(version="2.0.20")
    log.user("Clean up and rebuild")
    cases = [
        ("sleep 999", "Command timed out after 2m 0.0s", None, "failed"),
        ("rm -rf build", "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. "
         "if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait "
         "for the user to tell you how to proceed.", None, "rejected"),
        ("cd /etc", "cd to '/etc' was blocked. For security, Claude Code may only change directories to child "
         "directories of the allowed working directories for this session (including '/w').", None, "rejected"),
        ("curl x", "Permission to use Bash with command curl x has been denied.", None, "rejected"),
        ("make", "make: *** No rule to make target 'all'.  Stop.", None, "failed"),  # bare stderr
        ("ls /nope", "Exit code 2\nls: cannot access '/nope'", 2, None),
    ]
    for i, (cmd, text, _code, _status) in enumerate(cases):
        log.tool(f"toolu_{i}", "Bash", {"command": cmd}, mid=f"m{i}")
        log.result(f"toolu_{i}", text, "Error: " + text, is_error=True)
    log.write(proj(root) / f"{SID}.jsonl")
    r = ClaudeReader(env)
    steps, _ = all_steps(r, listing(r)[SID])
    assert [(st.text, st.exit_code, st.status) for st in of(steps, "command")] == [
        (c, code, status) for c, _t, code, status in cases]
    md, facts = _brief_of(env)
    assert [(c["exit_code"], c["status"]) for c in facts["commands"]] == [(c, s) for _, _t, c, s in cases]
    assert "- failed: `sleep 999`" in md and "- rejected: `rm -rf build`" in md and "- exit 2: `ls /nope`" in md
    assert "exit ?" not in md


def test_unrecognised_lines_and_unreadable_arguments_are_reported(tmp_path: Path) -> None:
    env, root = claude_home(tmp_path)
    d = proj(root)
    (d / f"{SID}.jsonl").write_text('{"event": "x", "n": 1}\n[1, 2]\n{"foo": {"bar": null}}\n')
    r = ClaudeReader(env)
    s = listing(r)[SID]
    assert any("none of the 3 non-blank lines read is a Claude Code record" in p for p in s.problems), s.problems
    steps, stats = all_steps(r, s)
    assert steps == [] and stats.unrecognised_lines == 3
    assert stats.problems == ["none of the 3 non-blank lines is a Claude Code record"]
    md, facts = _brief_of(env)
    assert facts["problems"] == stats.problems and "Problem reading the session" in md

    log = Log()
    log.user("go")
    log.assistant([{"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": "not an object"}], mid="m1")
    log.result("toolu_x", "ok")
    log.write(d / f"{SID}.jsonl")
    steps, stats = all_steps(r, listing(r)[SID])
    assert stats.problems == ["1 tool call with arguments that could not be read"]
    # negative control: a well-formed session reports nothing
    _working_session().write(d / f"{SID}.jsonl")
    steps, stats = all_steps(r, listing(r)[SID])
    assert stats.problems == [] and stats.unrecognised_lines == 0 and len(steps) > 5


# ---------------------------------------------------------------------------------------------------------
# Reading back before the tail (summary.Scan.reach): the tail holds no timestamp and no model

def _reach_file(path: Path, rng: Any, line_max: int) -> tuple[float | None, str | None]:
    """A transcript whose head has the request, whose tail (and the line it cuts) has neither a time nor a model,
    and whose middle has records of rising times, some assistant replies and some lines longer than `line_max`
    (skipped when read back). Returns the time and model a backward read of the middle's whole lines gives."""
    from segue.stores.base import HEAD_BYTES, TAIL_BYTES

    t0 = 1_790_000_000.0

    def ts(i: int) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t0 + i)) + ".000Z"

    def rec(i: int, kind: str, size: int) -> bytes:
        d: dict[str, Any] = {"type": kind, "timestamp": ts(i), "cwd": "/w", "sessionId": "s", "gitBranch": f"b{i}"}
        if kind == "assistant":
            d["message"] = {"role": "assistant", "model": f"model-{i}", "content": [{"type": "text", "text": "ok"}]}
        elif kind == "user":
            d["message"] = {"role": "user", "content": "please do the thing"}
        d["pad"] = "x" * size
        return json.dumps(d, separators=(",", ":")).encode() + b"\n"

    lines = [rec(0, "user", 100)]
    while sum(map(len, lines)) < HEAD_BYTES + 5000:
        lines.append(rec(0, "attachment", rng.randrange(50, 4000)))
    head_len = sum(map(len, lines))
    middle: list[bytes] = []
    for i in range(1, rng.randrange(5, 60)):
        kind = rng.choice(["assistant", "attachment", "attachment", "user"])
        size = rng.choice([rng.randrange(10, 3000), rng.randrange(10, 3000), line_max + rng.randrange(1, 5000)])
        middle.append(rec(i, kind, size))
    if rng.random() < 0.5:  # a line without a time or model, as 2.1.3xx's snapshots are not
        middle.append(b'{"type":"api-request-blob","pad":"' + b"y" * rng.randrange(10, 3000) + b'"}\n')
    # the tail: records with no time or model, after a line longer than the tail (the tail starts inside it)
    tail = [json.dumps({"type": "attachment-ish", "pad": "z" * (TAIL_BYTES + rng.randrange(1, 20000))}).encode()
            + b"\n", b'{"type":"last-prompt","lastPrompt":"p"}\n', b'{"type":"cost-state","totalCostUSD":0}\n']
    path.write_bytes(b"".join(lines + middle + tail))
    # every whole line after the head's whole lines and before the tail's first whole line, last first
    del head_len
    seen = [ln for ln in reversed([*middle, tail[0]]) if len(ln) - 1 <= line_max]  # lines longer are skipped
    when = model = None
    for ln in seen:
        d = json.loads(ln)
        if when is None and "timestamp" in d:
            when = d["timestamp"]
        if model is None and d.get("type") == "assistant":
            model = d["message"]["model"]
        if when and model:
            break
    from segue.model import parse_time

    return parse_time(when), model


@pytest.mark.parametrize("seed", range(16))
def test_reach_back_before_the_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    import random

    from segue.stores.claude import summary as S

    rng = random.Random(seed)
    line_max = rng.choice([2_000, 60_000])
    monkeypatch.setattr(S, "REACH_FIRST", rng.choice([97, 512, 4096, 65536]))
    monkeypatch.setattr(S, "REACH_WINDOW_MAX", rng.choice([1024, 8192, 1 << 20]))
    monkeypatch.setattr(S, "REACH_LINE_MAX", line_max)
    path = tmp_path / "projects" / "-w" / "0f180e77-a094-429d-a461-8915560f2f07.jsonl"
    path.parent.mkdir(parents=True)
    when, model = _reach_file(path, rng, line_max)
    got = {}
    for fast in ("1", "0"):
        r = ClaudeReader(Env(home=tmp_path, environ={"SEGUE_FAST_PATHS": fast}))
        from segue.stores.base import Source

        (s,) = r.summarize(Source(runtime="claude", path=str(path), fingerprint=()))
        got[fast] = (s.updated_at, s.model, s.branch, s.problems)
        assert s.problems == []
        assert s.model == model
        # no time read back: the head's (its records' time is t0), never a later one
        assert s.updated_at == (when if when is not None else 1_790_000_000.0)
    assert got["1"] == got["0"]


def test_reach_back_stops_at_its_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from segue.stores.claude import summary as S

    path = tmp_path / "t.jsonl"
    _reach_file(path, random.Random(5), 1 << 20)
    monkeypatch.setattr(S, "REACH_LIMIT", 1000)  # less than the line the tail cuts: nothing whole read back
    from segue.stores.base import Source

    source = Source(runtime="claude", path=str(path), fingerprint=())
    (s,) = ClaudeReader(Env(home=tmp_path, environ={})).summarize(source)
    assert s.model is None and s.updated_at == 1_790_000_000.0 and s.locator["read_back"] == 1000


@pytest.mark.parametrize("fast", ["1", "0"])
def test_model_announced_before_any_reply(tmp_path: Path, fast: str) -> None:
    """2.1.3xx tells the agent its model in an attachment before the first reply: a session stopped before any
    reply still names its model; a later reply's model wins over an earlier announcement."""
    from segue.stores.base import Source

    def att(model: str) -> dict[str, Any]:
        return {"type": "attachment", "timestamp": "2026-12-03T10:00:01.000Z", "cwd": "/w", "sessionId": "s",
                "attachment": {"type": "model", "identity": {"modelId": model, "marketingName": None},
                               "text": f"You are powered by the model {model}."}}

    user = {"type": "user", "timestamp": "2026-12-03T10:00:00.000Z", "cwd": "/w", "sessionId": "s",
            "message": {"role": "user", "content": "fix the build"}}
    reply = {"type": "assistant", "timestamp": "2026-12-03T10:00:02.000Z", "cwd": "/w", "sessionId": "s",
             "message": {"role": "assistant", "model": "model-b", "content": [{"type": "text", "text": "ok"}]}}
    for records, want in (([user, att("model-a")], "model-a"), ([user, att("model-a"), reply], "model-b"),
                          ([user, reply, att("model-c")], "model-c")):
        path = tmp_path / "0f180e77-a094-429d-a461-8915560f2f07.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        reader = ClaudeReader(Env(home=tmp_path, environ={"SEGUE_FAST_PATHS": fast}))
        (s,) = reader.summarize(Source(runtime="claude", path=str(path), fingerprint=()))
        assert s.model == want


@pytest.mark.parametrize("parent", ["0a1b2c3d-0000-4000-8000-00000000000a", None])
def test_attachments_skipped_undecoded_give_the_reference_steps(tmp_path: Path, parent: str | None) -> None:
    """The fast path leaves an attachment undecoded on an exact match of how Claude Code writes one (its first
    keys) unless it is a `queued_command` (a typed request): the steps equal the reference path's, and the
    queued request is there on both."""
    import uuid as uuidlib

    env, root = claude_home(tmp_path)

    def rec(**fields: Any) -> str:
        out = {"parentUuid": parent, "isSidechain": False, **fields, "uuid": str(uuidlib.uuid4()),
               "timestamp": "2026-12-03T10:00:00.000Z", "cwd": "/w", "sessionId": SID, "version": "2.1.332",
               "gitBranch": "main"}
        return json.dumps(out, separators=(",", ":"))

    lines = [
        rec(type="user", message={"role": "user", "content": "Start"}),
        rec(attachment={"type": "prompt_snapshot", "systemPrompt": ["x" * 60_000]}, type="attachment"),
        rec(attachment={"type": "skill_listing", "content": "s" * 9000}, type="attachment"),
        rec(attachment={"type": "queued_command", "prompt": "also fix lint", "commandMode": "prompt"},
            type="attachment"),
        rec(attachment={"type": "model", "identity": {"modelId": "m"}}, type="attachment"),
        rec(type="assistant", message={"id": "msg1", "role": "assistant", "model": "m",
                                       "content": [{"type": "text", "text": "Done."}]}),
    ]
    (proj(root) / f"{SID}.jsonl").write_text("\n".join(lines) + "\n")
    got = {}
    for fast in ("1", "0"):
        r = ClaudeReader(Env(home=env.home, environ={**env.environ, "SEGUE_FAST_PATHS": fast}))
        steps, _ = all_steps(r, listing(r)[SID])
        got[fast] = [(st.kind, st.text) for st in steps]
    assert got["1"] == got["0"] == [("request", "Start"), ("request", "also fix lint"), ("message", "Done.")]
    from segue.stores.claude import triage

    skipped = [triage.fast_record(ln.encode(), {})[0] for ln in lines]
    assert skipped == [False, True, True, False, True, False]
