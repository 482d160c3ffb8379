"""Codex CLI reader: every rollout generation, bad input, read-only access, and the real fixtures."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from segue.model import ReadStats, Session, Step, parse_time
from segue.stores.base import Env
from segue.stores.codex import (
    DEEP_LIMIT,
    CodexReader,
    command_text,
    exit_code_from_output,
    is_context,
    patch_changes,
    shell_writes,
)
from tests.conftest import assert_steps_match_scenario, load_fixture

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "tests" / "fixtures" / "real" / "codex"
MARKER = "[segue-handoff v1 from=claude:0b6f2c1e-1111-4222-8333-944445555666]"

# ---------------------------------------------------------------------------------------------------------
# Builders: small stores made from Python data


def uid(n: int) -> str:
    return f"019ad1a2-0000-7000-8000-{n:012d}"


def env_for(tmp: Path) -> Env:
    """`SEGUE_FAST_PATHS` passes through from the test's environment (tests switch fast paths with setenv)."""
    fast = os.environ.get("SEGUE_FAST_PATHS")
    return Env(home=tmp / "home", environ={"CODEX_HOME": str(tmp / "codex"),
                                           **({"SEGUE_FAST_PATHS": fast} if fast else {})})


def dump(rec: Any) -> str:
    return json.dumps(rec, separators=(",", ":"))


def write(tmp: Path, rel: str, lines: list[Any], *, raw_tail: bytes = b"") -> Path:
    """Write records (dicts or raw str/bytes lines) to `$CODEX_HOME/<rel>`."""
    path = tmp / "codex" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    out = bytearray()
    for ln in lines:
        if isinstance(ln, bytes):
            out += ln + b"\n"
        elif isinstance(ln, str):
            out += ln.encode() + b"\n"
        else:
            out += dump(ln).encode() + b"\n"
    out += raw_tail
    path.write_bytes(bytes(out))
    return path


def rel_for(sid: str, day: str = "2026/11/29", stamp: str = "2026-11-29T10-00-00") -> str:
    return f"sessions/{day}/rollout-{stamp}-{sid}.jsonl"


def env_ctx(cwd: str) -> dict[str, Any]:
    return {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n"
                         "  <approval_policy>never</approval_policy>\n</environment_context>"}]}


def agents_md(cwd: str, body: str = "Be nice.") -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
            f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{body}\n</INSTRUCTIONS>"}]}


class W:
    """A wrapped rollout (X2..X5) under construction."""

    def __init__(self, sid: str, cwd: str = "/w/one", branch: str | None = "feature/one", *,
                 ordinal: bool = False, extra_meta: dict[str, Any] | None = None, big_instructions: int = 0):
        self.n = 0
        self.ordinal = ordinal
        self.recs: list[Any] = []
        meta: dict[str, Any] = {"id": sid, "session_id": sid, "timestamp": "2026-11-29T10:00:00.000Z",
                                "cwd": cwd, "originator": "codex_exec", "cli_version": "0.171.0",
                                "source": "exec", "thread_source": "user", "model_provider": "fake"}
        if big_instructions:
            meta["base_instructions"] = {"text": "You are Codex, \"a\" coding agent.\\n" * big_instructions}
        if branch is not None:
            meta["git"] = {"commit_hash": "abc123", "branch": branch}
        meta.update(extra_meta or {})
        self.add("session_meta", meta)

    def ts(self) -> str:
        return f"2026-11-29T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"

    def add(self, kind: str, payload: dict[str, Any]) -> W:
        rec: dict[str, Any] = {"timestamp": self.ts()}
        if self.ordinal:
            rec["ordinal"] = self.n
        rec.update({"type": kind, "payload": payload})
        self.recs.append(rec)
        self.n += 1
        return self

    def item(self, payload: dict[str, Any]) -> W:
        return self.add("response_item", payload)

    def event(self, payload: dict[str, Any]) -> W:
        return self.add("event_msg", payload)

    def turn(self, cwd: str = "/w/one", model: str = "gpt-5-codex") -> W:
        return self.add("turn_context", {"turn_id": f"t{self.n}", "cwd": cwd, "model": model,
                                         "approval_policy": "never"})

    def user_x5(self, text: str, *, cwd: str = "/w/one", model: str = "gpt-5-codex") -> W:
        self.event({"type": "task_started", "turn_id": f"t{self.n}"})
        self.item(env_ctx(cwd))
        self.turn(cwd, model)
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        return self.event({"type": "item_completed", "item": {"type": "UserMessage", "id": f"u{self.n}",
                                                              "content": [{"type": "text", "text": text}]}})

    def user_x2(self, text: str, *, cwd: str = "/w/one") -> W:
        self.item(env_ctx(cwd))
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        self.event({"type": "user_message", "message": text, "kind": "plain"})
        return self.turn(cwd)

    def agent_x5(self, text: str) -> W:
        self.item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
        return self.event({"type": "item_completed", "item": {"type": "AgentMessage", "id": f"a{self.n}",
                                                              "content": [{"type": "Text", "text": text}]}})

    def agent_x2(self, text: str) -> W:
        self.item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
        return self.event({"type": "agent_message", "message": text})

    def exec(self, cid: str, cmd: str, output: Any, *, name: str = "exec_command",
             args: dict[str, Any] | None = None) -> W:
        a = args if args is not None else {"cmd": cmd}
        self.item({"type": "function_call", "name": name, "arguments": json.dumps(a), "call_id": cid})
        if output is not None:
            self.item({"type": "function_call_output", "call_id": cid, "output": output})
        return self

    def done(self, last: str | None) -> W:
        return self.event({"type": "task_complete", "last_agent_message": last, "duration_ms": 5})

    def save(self, tmp: Path, rel: str) -> Path:
        return write(tmp, rel, self.recs)


def unified(code: int, out: str = "") -> str:
    return (f"Chunk ID: 91b664\nWall time: 0.0000 seconds\nProcess exited with code {code}\n"
            f"Original token count: 5\nOutput:\n{out}")


def sources(reader: CodexReader) -> list[Any]:
    return list(reader.sources())


def listing(reader: CodexReader) -> dict[str, Session]:
    """What the lead's listing does: summarize every source, keep the highest priority per id."""
    best: dict[str, Session] = {}
    for src in reader.sources():
        for s in reader.summarize(src):
            old = best.get(s.id)
            if old is None or s.locator.get("priority", 0) > old.locator.get("priority", 0):
                best[s.id] = s
    return best


def one(tmp: Path) -> Session:
    got = listing(CodexReader(env_for(tmp)))
    assert len(got) == 1, got
    return next(iter(got.values()))


def steps_of(reader: CodexReader, s: Session) -> tuple[list[Step], ReadStats]:
    stats = ReadStats()
    return list(reader.steps(s, stats)), stats


def kinds(steps: list[Step]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for st in steps:
        if st.kind == "command":
            out.append(("command", (st.text, st.exit_code)))
        elif st.kind == "edit":
            out.append(("edit", (st.path, st.added, st.removed)))
        elif st.kind == "subagent":
            out.append(("subagent", (st.text, st.ref)))
        else:
            out.append((st.kind, st.text))
    return out


# ---------------------------------------------------------------------------------------------------------
# Locations and discovery


def test_locations_follow_codex_home_and_default(tmp_path: Path) -> None:
    r = CodexReader(env_for(tmp_path))
    locs = r.locations()
    assert {loc.path for loc in locs} >= {str(tmp_path / "codex" / "sessions"),
                                          str(tmp_path / "codex" / "archived_sessions")}
    assert all("CODEX_HOME" in loc.how_to_override for loc in locs)
    assert not any(loc.exists for loc in locs)
    (tmp_path / "codex" / "sessions").mkdir(parents=True)
    assert any(loc.exists for loc in r.locations())
    d = CodexReader(Env(home=tmp_path / "h", environ={}))
    assert str(tmp_path / "h" / ".codex" / "sessions") in {loc.path for loc in d.locations()}
    # the process environment is never consulted
    os.environ["CODEX_HOME"] = str(tmp_path / "elsewhere")
    try:
        assert str(tmp_path / "h" / ".codex" / "sessions") in {loc.path for loc in d.locations()}
    finally:
        del os.environ["CODEX_HOME"]


def test_sources_walk_every_layout_and_skip_non_rollouts(tmp_path: Path) -> None:
    a, b, c, d, e = (uid(i) for i in range(1, 6))
    W(a).user_x5("nested").save(tmp_path, rel_for(a))
    W(b).user_x5("flat legacy").save(tmp_path, f"sessions/rollout-2025-05-07T17-24-21-{b}.jsonl")
    W(c).user_x5("archived").save(tmp_path, f"archived_sessions/rollout-2026-01-01T00-00-00-{c}.jsonl")
    W(d).user_x5("deep archive").save(tmp_path, f"archived_sessions/2026/01/02/rollout-2026-01-02T00-00-00-{d}.jsonl")
    plain = W(e).user_x5("both forms").save(tmp_path, rel_for(e))
    zstandard = pytest.importorskip("zstandard")
    Path(str(plain) + ".zst").write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    sd = tmp_path / "codex" / "sessions" / "2026" / "11" / "29"
    (sd / "notes.txt").write_text("not a rollout")
    (sd / "history.jsonl").write_text("{}\n")
    (sd / f"rollout-2026-11-29T10-00-00-{uid(7)}.jsonl").mkdir()  # a directory named like a rollout
    (sd / f"rollout-2026-11-29T10-00-00-{uid(8)}.jsonl").symlink_to(sd / "missing.jsonl")  # dangling
    os.mkfifo(sd / f"rollout-2026-11-29T10-00-00-{uid(9)}.jsonl")  # must never be opened
    (tmp_path / "codex" / "session_index.jsonl").write_text("")
    (tmp_path / "codex" / "history.jsonl").write_text('{"session_id":"x","text":"hi"}\n')
    srcs = sources(CodexReader(env_for(tmp_path)))
    names = sorted(os.path.basename(s.path) for s in srcs)
    assert len(srcs) == 5, names
    assert not any(n.endswith(".zst") for n in names)  # the plain sibling wins
    got = listing(CodexReader(env_for(tmp_path)))
    assert set(got) == {a, b, c, d, e}
    assert got[c].locator["archived"] and not got[a].locator["archived"]


def test_fingerprint_changes_on_append_and_on_rename_index(tmp_path: Path) -> None:
    sid = uid(1)
    p = W(sid).user_x5("hello").save(tmp_path, rel_for(sid))
    r = CodexReader(env_for(tmp_path))
    fp1 = sources(r)[0].fingerprint
    with open(p, "a") as f:
        f.write(dump({"timestamp": "2026-11-29T11:00:00.000Z", "type": "event_msg",
                      "payload": {"type": "task_complete", "last_agent_message": "x"}}) + "\n")
    fp2 = sources(r)[0].fingerprint
    assert fp1 != fp2
    (tmp_path / "codex" / "session_index.jsonl").write_text(
        dump({"id": sid, "thread_name": "Renamed", "updated_at": "2026-11-29T11:00:00Z"}) + "\n")
    fp3 = sources(r)[0].fingerprint
    assert fp3 != fp2
    assert one(tmp_path).title == "Renamed"


def test_missing_store_lists_nothing(tmp_path: Path) -> None:
    r = CodexReader(env_for(tmp_path))
    assert sources(r) == []
    (tmp_path / "codex").mkdir()
    (tmp_path / "codex" / "sessions").write_text("a file where a directory is expected")
    assert sources(r) == []


# ---------------------------------------------------------------------------------------------------------
# Generations


def test_x5_items_summary(tmp_path: Path) -> None:
    sid = uid(1)
    w = W(sid, "/w/one", "feature/one", ordinal=True)
    w.item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox rules"}]})
    w.item(agents_md("/w/one"))
    w.user_x5("Please run `echo hello > out.txt && ls` for me")
    w.exec("call_1", "echo hello > out.txt && ls", unified(0, "README.md\nout.txt\n"))
    w.agent_x5("Done.")
    w.done("Done.")
    w.user_x5("second", cwd="/w/other", model="gpt-5.1-codex")  # cwd stays where it started
    w.save(tmp_path, rel_for(sid))
    s = one(tmp_path)
    assert s.runtime == "codex" and s.id == sid
    assert s.first_request == "Please run `echo hello > out.txt && ls` for me"
    assert s.title == s.first_request
    assert s.cwd == "/w/one"
    assert s.branch == "feature/one"
    assert s.model == "gpt-5.1-codex"
    assert s.started_at == pytest.approx(1795946400.0)
    assert s.updated_at == parse_time(w.recs[-1]["timestamp"])  # the last record, not the file's mtime
    assert s.parent_id is None and s.resumable and s.resume_blocker is None
    assert s.live is False and s.problems == []
    assert s.store_path.endswith(f"{sid}.jsonl")
    json.dumps(s.locator)


def test_x5_steps_commands_messages_and_last_message_last(tmp_path: Path) -> None:
    sid = uid(1)
    w = W(sid)
    w.user_x5("do things")
    w.exec("c1", "ls /nonexistent-dir", unified(2, "ls: cannot access"))
    w.event({"type": "item_completed", "item": {"type": "CommandExecution", "id": "c1",
             "command": ["/bin/bash", "-lc", "ls /nonexistent-dir"], "status": "failed", "exit_code": 2}})
    w.exec("c2", "true", None)  # its CommandExecution item carries the code (camelCase variant)
    w.event({"type": "item_completed", "item": {"type": "CommandExecution", "id": "c2",
             "command": ["/bin/bash", "-lc", "true"], "status": "completed", "exitCode": 0}})
    w.exec("c3", "sleep 100", None)  # interrupted: no output ever
    w.agent_x5("Working on it.")
    w.agent_x5("All done.")
    w.done("All done, really.")
    p = w.save(tmp_path, rel_for(sid))
    r = CodexReader(env_for(tmp_path))
    s = one(tmp_path)
    got = kinds(steps_of(r, s)[0])
    assert got == [
        ("request", "do things"),
        ("command", ("ls /nonexistent-dir", 2)),
        ("command", ("true", 0)),
        ("message", "Working on it."),
        ("message", "All done."),
        ("command", ("sleep 100", None)),
        ("message", "All done, really."),
    ]
    assert p.exists()


def test_x5_real_layout_and_fallback_when_the_event_form_is_missing(tmp_path: Path) -> None:
    """0.171 puts `id` between `type` and `role`, and `metadata` after the payload; when the
    UserMessage item is lost, the response item is the fallback."""
    sid = uid(3)
    w = W(sid, extra_meta={"account_scoped": True, "history_mode": "paginated",
                           "runtime_workspace_roots": ["/w/one"]}, ordinal=True, big_instructions=600)
    w.event({"type": "task_started", "turn_id": "t1"})
    w.item({"type": "message", "id": "msg_1", "role": "developer", "content": [
        {"type": "input_text", "text": "<skills_instructions>\n## Skills\n</skills_instructions>"}]})
    w.item({"type": "message", "id": "msg_2", "role": "user", "content": [
        {"type": "input_text", "text": "<environment_context>\n  <cwd>/w/one</cwd>\n</environment_context>"}]})
    w.add("world_state", {"full": True, "state": {"agents_md": {}}})
    w.turn(model="fake-model")
    w.event({"type": "thread_settings_applied", "thread_settings": {"model": "fake-model"}})
    w.item({"type": "message", "id": "msg_3", "role": "user", "content": [
        {"type": "input_text", "text": "the prompt"}]})
    for r in w.recs:
        r["metadata"] = {"history_sequence": 1}
    w.save(tmp_path, rel_for(sid))
    s = one(tmp_path)
    assert s.first_request == "the prompt"
    assert s.model == "fake-model"
    assert s.problems == []
    got = kinds(steps_of(CodexReader(env_for(tmp_path)), s)[0])
    assert got == [("request", "the prompt")]


def test_x2_wrapped_events_win_over_response_items(tmp_path: Path) -> None:
    sid = uid(2)
    w = W(sid, extra_meta={"cli_version": "0.46.0", "originator": "codex_cli_rs", "source": "cli"})
    w.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text":
            "<user_instructions>\nfollow the rules\n</user_instructions>"}]})
    w.event({"type": "user_message", "message": "<user_instructions>\nrules\n</user_instructions>",
             "kind": "user_instructions"})
    w.user_x2("## My request for Codex:\nfix the bug\n" + MARKER)
    w.exec("c1", "", "Exit code: 1\nWall time: 0.1 seconds\nOutput:\nboom", name="shell_command",
           args={"command": "make test"})
    w.agent_x2("Tests fail.")
    w.done("Tests fail.")
    w.user_x2("again")
    w.exec("c2", "", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok", name="shell_command",
           args={"command": "make test"})
    w.agent_x2("Now they pass.")
    w.done(None)  # aborted-style: no last message
    w.save(tmp_path, rel_for(sid))
    s = one(tmp_path)
    assert s.first_request == "fix the bug\n" + MARKER
    assert s.first_request.splitlines()[-1].endswith(MARKER)
    got = kinds(steps_of(CodexReader(env_for(tmp_path)), s)[0])
    assert got == [
        ("request", "fix the bug\n" + MARKER),
        ("command", ("make test", 1)),
        ("message", "Tests fail."),
        ("request", "again"),
        ("command", ("make test", 0)),
        ("message", "Now they pass."),
    ]


def x1_records(sid: str) -> list[Any]:
    patch = ("*** Begin Patch\n*** Add File: notes.md\n+line one\n+line two\n*** Update File: src/a.py\n"
             "@@\n-old\n+new\n+newer\n*** Delete File: gone.txt\n*** End Patch")
    return [
        {"id": sid, "timestamp": "2025-06-01T12:00:00.000Z", "instructions": "Long instructions " * 300,
         "git": {"commit_hash": "abc", "branch": "main", "repository_url": "git@x:y.git"}},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<user_instructions>\nfrom AGENTS.md\n</user_instructions>"}]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/home/me/src/old</cwd>\n"
             "  <sandbox_mode>workspace-write</sandbox_mode>\n</environment_context>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "add notes please"}]},
        {"record_type": "state"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"},
        {"type": "function_call", "name": "shell", "call_id": "call_a",
         "arguments": json.dumps({"command": ["bash", "-lc", "ls -la"], "workdir": "/home/me/src/old"})},
        {"type": "function_call_output", "call_id": "call_a",
         "output": json.dumps({"output": "total 0\n", "metadata": {"exit_code": 0, "duration_seconds": 0.1}})},
        {"type": "function_call", "name": "shell", "call_id": "call_b",
         "arguments": json.dumps({"command": ["apply_patch", patch]})},
        {"type": "function_call_output", "call_id": "call_b",
         "output": json.dumps({"output": "Done!", "metadata": {"exit_code": 0, "duration_seconds": 0}})},
        {"type": "function_call", "name": "shell", "call_id": "call_c",
         "arguments": json.dumps({"command": ["bash", "-lc", "cat missing"]})},
        {"type": "function_call_output", "call_id": "call_c",
         "output": json.dumps({"output": "cat: missing", "metadata": {"exit_code": 1, "duration_seconds": 0}})},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Added notes."}]},
    ]


def test_x1_bare_generation(tmp_path: Path) -> None:
    sid = "3f2e1d0c-1111-4222-8333-944445555666"  # v4 ids in old files
    p = write(tmp_path, f"sessions/rollout-2025-06-01T14-00-00-{sid}.jsonl", x1_records(sid))
    os.utime(p, (1748786400.0, 1748786400.0))
    s = one(tmp_path)
    assert s.id == sid
    assert s.cwd == "/home/me/src/old"
    assert s.branch == "main"
    assert s.first_request == "add notes please"
    assert s.started_at == pytest.approx(1748779200.0)
    assert s.updated_at == pytest.approx(1748786400.0)  # no record timestamps: the file's mtime
    assert s.model is None
    assert not s.resumable and s.resume_blocker == "cli_cannot_reopen"
    assert s.locator["format"] == "bare"
    got = kinds(steps_of(CodexReader(env_for(tmp_path)), s)[0])
    assert got == [
        ("request", "add notes please"),
        ("command", ("ls -la", 0)),
        ("edit", ("/home/me/src/old/notes.md", 2, 0)),
        ("edit", ("/home/me/src/old/src/a.py", 2, 1)),
        ("edit", ("/home/me/src/old/gone.txt", 0, None)),
        ("command", ("cat missing", 1)),
        ("message", "Added notes."),
    ]


def test_x4_paginated_with_world_state_and_persisted_end_events(tmp_path: Path) -> None:
    sid = uid(4)
    w = W(sid, ordinal=True, extra_meta={"history_mode": "paginated", "cli_version": "0.150.0"})
    w.add("world_state", {"files": ["x" * 200_000]})
    w.user_x2("paginate")
    w.item({"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": "make"}),
            "call_id": "c1"})
    w.event({"type": "exec_command_end", "call_id": "c1", "command": ["bash", "-lc", "make"], "exit_code": 7,
             "aggregated_output": "error"})
    w.item({"type": "function_call_output", "call_id": "c1", "output": unified(7)})
    w.item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "p1", "input":
            "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y\n*** End Patch"})
    w.event({"type": "patch_apply_end", "call_id": "p1", "success": True,
             "changes": {"/w/one/a.txt": {"update": {"unified_diff": "@@\n-x\n+y\n", "move_path": "/w/one/b.txt"}}}})
    w.item({"type": "custom_tool_call_output", "call_id": "p1", "output": "Success. Updated the following files"})
    w.add("token_usage_record", {"input": 1})
    w.agent_x2("done")
    w.done("done")
    # ordinals repeat after a resume (#35746): file order counts
    w.recs.append({"timestamp": "2026-11-29T10:59:00.000Z", "ordinal": 3, "type": "event_msg",
                   "payload": {"type": "user_message", "message": "after resume", "kind": "plain"}})
    w.save(tmp_path, rel_for(sid))
    s = one(tmp_path)
    assert s.first_request == "paginate"
    got = kinds(steps_of(CodexReader(env_for(tmp_path)), s)[0])
    assert got == [("request", "paginate"), ("command", ("make", 7)), ("edit", ("/w/one/b.txt", 1, 1)),
                   ("message", "done"), ("request", "after resume")]


def test_fork_keeps_its_own_meta(tmp_path: Path) -> None:
    sid, parent = uid(5), uid(6)
    w = W(sid, "/w/fork", extra_meta={"forked_from_id": parent})
    w.add("session_meta", {"id": parent, "session_id": parent, "timestamp": "2026-11-01T00:00:00Z",
                           "cwd": "/w/parent", "git": {"branch": "main"}})
    w.user_x5("forked work", cwd="/w/fork")
    w.save(tmp_path, rel_for(sid))
    s = one(tmp_path)
    assert (s.id, s.cwd, s.branch, s.parent_id) == (sid, "/w/fork", "feature/one", None)
    assert s.resumable and s.locator["forked_from_id"] == parent


def test_subagents_link_to_parent_and_never_merge_on_session_id(tmp_path: Path) -> None:
    parent, child, child2 = uid(10), uid(11), uid(12)
    w = W(parent)
    w.user_x5("use a subagent")
    w.item({"type": "function_call", "name": "spawn_agent", "namespace": "multi_agent_v1", "call_id": "s1",
            "arguments": json.dumps({"message": "Count the files here"})})
    w.item({"type": "function_call_output", "call_id": "s1",
            "output": json.dumps({"agent_id": child, "nickname": "Robie"})})
    w.item({"type": "function_call", "name": "wait_agent", "namespace": "multi_agent_v1", "call_id": "w1",
            "arguments": json.dumps({"targets": [child]})})
    w.item({"type": "function_call_output", "call_id": "w1", "output": "{}"})
    w.agent_x5("The subagent counted the files.")
    w.done("The subagent counted the files.")
    w.save(tmp_path, rel_for(parent, stamp="2026-11-29T10-00-00"))
    c = W(child, extra_meta={"session_id": parent, "parent_thread_id": parent, "agent_nickname": "Robie",
                             "thread_source": "subagent",
                             "source": {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1}}}})
    c.user_x5("Count the files here")
    c.save(tmp_path, rel_for(child, stamp="2026-11-29T10-00-05"))
    # only source.subagent (no top-level parent_thread_id)
    c2 = W(child2, extra_meta={"session_id": parent,
                               "source": {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1}}}})
    c2.user_x5("another task")
    c2.save(tmp_path, rel_for(child2, stamp="2026-11-29T10-00-06"))
    got = listing(CodexReader(env_for(tmp_path)))
    assert set(got) == {parent, child, child2}
    for cid in (child, child2):
        assert got[cid].parent_id == parent
        assert not got[cid].resumable and got[cid].resume_blocker == "subagent"
    assert got[parent].parent_id is None and got[parent].resumable
    steps = steps_of(CodexReader(env_for(tmp_path)), got[parent])[0]
    assert ("subagent", ("Count the files here", child)) in kinds(steps)
    assert not any(st.kind == "tool" and "wait_agent" in st.text for st in steps)


def test_review_subagent_without_parent_id(tmp_path: Path) -> None:
    sid = uid(13)
    W(sid, extra_meta={"source": {"subagent": "review"}}).user_x5("review this").save(tmp_path, rel_for(sid))
    s = one(tmp_path)
    assert s.resume_blocker == "subagent" and s.parent_id is None


# ---------------------------------------------------------------------------------------------------------
# Titles, requests, context


def test_session_index_last_entry_wins(tmp_path: Path) -> None:
    a, b, c = uid(1), uid(2), uid(3)
    for sid in (a, b, c):
        W(sid).user_x5(f"prompt {sid[-1]}").save(tmp_path, rel_for(sid))
    idx = [
        {"id": a, "thread_name": "first name", "updated_at": "2026-11-29T10:00:00Z"},
        "not json at all",
        {"id": a, "thread_name": "second \"name\" ✓", "updated_at": "2026-11-29T10:01:00Z"},
        {"id": b, "thread_name": "b name", "updated_at": "2026-11-29T10:01:00Z"},
        {"id": b, "thread_name": "", "updated_at": "2026-11-29T10:02:00Z"},  # cleared
    ]
    write(tmp_path, "session_index.jsonl", idx)
    got = listing(CodexReader(env_for(tmp_path)))
    assert got[a].title == "second \"name\" ✓"
    assert got[b].title == "prompt 2"
    assert got[c].title == "prompt 3"


@pytest.mark.parametrize("text", [
    "<environment_context>\n<cwd>/tmp</cwd>\n</environment_context>",
    "# AGENTS.md instructions for /tmp\n\n<INSTRUCTIONS>\nbody\n</INSTRUCTIONS>",
    "<user_instructions>\nx\n</user_instructions>",
    "<SUBAGENT_NOTIFICATION>{}</subagent_notification>",
    "<skill>\nname\n</skill>",
    "<turn_aborted>\nx\n</turn_aborted>",
    "  <additional_context>\n<title>editor</title>\n</additional_context>  ",
])
def test_context_fragments_are_not_requests(text: str) -> None:
    assert is_context(text)


@pytest.mark.parametrize("text", ["hello", "<environment_context> but then my own words",
                                  "# AGENTS.md is what I want you to edit"])
def test_plain_words_are_requests(text: str) -> None:
    assert not is_context(text)


def test_deep_first_request_behind_long_context(tmp_path: Path) -> None:
    sid = uid(1)
    w = W(sid, big_instructions=2000)  # session_meta alone is ~70 KiB
    w.item(agents_md("/w/one", "rule\n" * 20000))  # ~100 KiB of injected instructions
    w.user_x5("the real request")
    for i in range(50):
        w.exec(f"c{i}", "echo x", unified(0, "x" * 2000))
    w.save(tmp_path, rel_for(sid))
    s = one(tmp_path)
    assert s.first_request == "the real request"
    assert s.locator.get("read_deep") is True
    assert s.problems == []
    assert s.model == "gpt-5-codex"


@pytest.mark.slow
def test_first_request_beyond_deep_limit_is_a_problem_not_a_loss(tmp_path: Path) -> None:
    sid = uid(1)
    w = W(sid)
    for i in range(DEEP_LIMIT // 60_000 + 5):
        w.item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "d" * 60_000}]})
        w.event({"type": "token_count", "n": i})
    w.user_x5("very late request")
    w.save(tmp_path, rel_for(sid))
    s = one(tmp_path)
    assert s.id == sid and s.first_request is None
    assert any("first request not found" in p for p in s.problems)


def test_image_only_request_and_cap(tmp_path: Path) -> None:
    sid = uid(1)
    w = W(sid)
    w.event({"type": "user_message", "message": "", "images": ["data:image/png;base64,AAAA"]})
    w.save(tmp_path, rel_for(sid))
    assert one(tmp_path).first_request == "[Image]"
    sid2 = uid(2)
    big = "é" * 10_000 + "\n" + MARKER
    W(sid2).user_x5(big).save(tmp_path, rel_for(sid2))
    s = listing(CodexReader(env_for(tmp_path)))[sid2]
    assert s.first_request is not None and len(s.first_request.encode()) <= 8 * 1024
    # the shared cap keeps the handoff marker line past the cut (lineage reads it from the first request)
    assert s.first_request.endswith("\n" + MARKER)
    assert big.startswith(s.first_request[: -len(MARKER) - 1])


# ---------------------------------------------------------------------------------------------------------
# Exit codes, edits, tools


@pytest.mark.parametrize(("text", "code"), [
    (unified(0), 0), (unified(127), 127),
    ("Exit code: 2\nWall time: 0.1 seconds\nOutput:\nls: cannot access", 2),
    ("command timed out after 10000 milliseconds\nExit code: 124\nWall time: 10 seconds\nOutput:\n", 124),
    (json.dumps({"output": "x", "metadata": {"exit_code": 3, "duration_seconds": 0.5}}), 3),
    ("Exit code: -1\nOutput:\n", -1),
    ("plain text without a code", None),
    ("Output:\nProcess exited with code 5\n", None),  # a code inside the output is not the header
])
def test_exit_code_forms(text: str, code: int | None) -> None:
    assert exit_code_from_output(text)[0] == code


def test_running_process_gets_its_code_from_write_stdin(tmp_path: Path) -> None:
    sid = uid(1)
    w = W(sid)
    w.user_x5("long job")
    w.exec("c1", "npm test", "Chunk ID: 1\nWall time: 10 seconds\nProcess running with session ID 42\n"
           "Original token count: 1\nOutput:\n...")
    w.exec("c2", "", "Chunk ID: 2\nWall time: 3 seconds\nProcess exited with code 1\nOutput:\nFAIL",
           name="write_stdin", args={"session_id": 42, "chars": ""})
    w.exec("c3", "sleep 1000", "Chunk ID: 3\nWall time: 10 seconds\nProcess running with session ID 43\n"
           "Output:\n")
    w.done("x")
    w.save(tmp_path, rel_for(sid))
    r = CodexReader(env_for(tmp_path))
    got = [k for k in kinds(steps_of(r, one(tmp_path))[0]) if k[0] == "command"]
    assert got == [("command", ("npm test", 1)), ("command", ("sleep 1000", None))]


def test_user_shell_command_and_local_shell_call(tmp_path: Path) -> None:
    sid = uid(1)
    w = W(sid)
    w.user_x5("hi")
    w.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text":
            "<user_shell_command>\n<command>\ngit status\n</command>\n<result>\nExit code: 0\n"
            "Duration: 0.01 seconds\nOutput:\nclean\n</result>\n</user_shell_command>"}]})
    w.item({"type": "local_shell_call", "call_id": "l1", "status": "completed",
            "action": {"type": "exec", "command": ["bash", "-lc", "pwd"]}})
    w.item({"type": "function_call_output", "call_id": "l1",
            "output": json.dumps({"output": "/w", "metadata": {"exit_code": 0}})})
    w.save(tmp_path, rel_for(sid))
    got = kinds(steps_of(CodexReader(env_for(tmp_path)), one(tmp_path))[0])
    assert got == [("request", "hi"), ("command", ("git status", 0)), ("command", ("pwd", 0))]
    assert one(tmp_path).first_request == "hi"


def test_patch_parsing_and_failed_patch_is_no_edit(tmp_path: Path) -> None:
    assert patch_changes("*** Begin Patch\n*** Add File: /abs/x\n+a\n*** End Patch", "/w") == [("/abs/x", 1, 0)]
    sid = uid(1)
    w = W(sid)
    w.user_x5("patch")
    w.item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "p1",
            "input": "*** Begin Patch\n*** Add File: ok.txt\n+fine\n*** End Patch"})
    w.item({"type": "custom_tool_call_output", "call_id": "p1",
            "output": json.dumps({"output": "Success. Updated the following files:\nA ok.txt\n",
                                  "metadata": {"exit_code": 0, "duration_seconds": 0}})})
    w.item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "p2",
            "input": "*** Begin Patch\n*** Update File: nope.txt\n@@\n-a\n+b\n*** End Patch"})
    w.item({"type": "custom_tool_call_output", "call_id": "p2",
            "output": "apply_patch verification failed: Failed to find expected lines in nope.txt"})
    w.exec("c1", "", unified(0), args={"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: h.txt\n+x\n"
                                           "*** End Patch\nEOF"})
    w.item({"type": "function_call", "name": "update_plan", "call_id": "u1",
            "arguments": json.dumps({"explanation": "plan it", "plan": [{"step": "a", "status": "pending"}]})})
    w.item({"type": "function_call_output", "call_id": "u1", "output": "Plan updated"})
    w.item({"type": "function_call", "name": "mcp__docs__search", "call_id": "m1",
            "arguments": json.dumps({"query": "zstd streaming"})})
    w.item({"type": "function_call_output", "call_id": "m1", "output": "[]"})
    w.item({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "codex"}})
    w.item({"type": "function_call", "name": "view_image", "call_id": "v1", "arguments": json.dumps({"path": "a.png"})})
    w.item({"type": "function_call_output", "call_id": "v1", "output": "ok"})
    w.save(tmp_path, rel_for(sid))
    got = kinds(steps_of(CodexReader(env_for(tmp_path)), one(tmp_path))[0])
    assert got == [
        ("request", "patch"),
        ("edit", ("/w/one/ok.txt", 1, 0)),
        ("edit", ("/w/one/h.txt", 1, 0)),
        ("tool", "update_plan: plan it"),
        ("tool", "mcp__docs__search: zstd streaming"),
        ("tool", "web_search: codex"),
    ]


def test_shell_writes() -> None:
    heredoc = "cat > notes.md <<'SEGUE_EOF'\nline 1\nline 2\nSEGUE_EOF"
    assert shell_writes(heredoc, "/w") == [("/w/notes.md", 2, None)]
    assert shell_writes("echo hi >> log.txt && ls 2> /dev/null", "/w") == [("/w/log.txt", None, None)]
    assert shell_writes("ls | tee -a /tmp/out.txt", "/w") == [("/tmp/out.txt", None, None)]
    assert shell_writes("ls 2>err.txt", "/w") == []
    assert shell_writes("ls /nonexistent-dir", "/w") == []
    assert shell_writes("echo 'unbalanced", "/w") == []
    assert command_text(["/bin/bash", "-lc", "echo hi"]) == "echo hi"
    assert command_text(["git", "commit", "-m", "a b"]) == "git commit -m 'a b'"


# ---------------------------------------------------------------------------------------------------------
# Bad input


def test_damage_bom_run_together_corrupt_invalid_utf8_and_cut_tail(tmp_path: Path) -> None:
    sid = uid(1)
    w = W(sid)
    w.user_x5("first")
    w.exec("c1", "echo a", unified(0))
    lines: list[Any] = [dump(r) for r in w.recs]
    lines[0] = "\ufeff" + lines[0]  # BOM (#28139)
    # two records written into each other (#24425)
    lines.append(dump({"timestamp": "2026-11-29T10:30:00.000Z", "type": "event_msg",
                       "payload": {"type": "agent_message", "message": "glued one"}})
                 + dump({"timestamp": "2026-11-29T10:30:01.000Z", "type": "event_msg",
                         "payload": {"type": "agent_message", "message": "glued two"}}))
    lines.append('{"timestamp":"2026-11-29T10:30:02.000Z","type":"event_msg","payload":{"type":"agent_mess')
    lines.append(b'{"timestamp":"2026-11-29T10:30:03.000Z","type":"event_msg","payload":{"type":"agent_message",'
                 b'"message":"bad \xff\xfe bytes"}}')
    lines.append(b"\x00\x01garbage")
    lines.append({"timestamp": "2026-11-29T10:30:04.000Z", "type": "brand_new_type", "payload": {"x": 1}})
    lines.append({"timestamp": "2026-11-29T10:30:05.000Z", "type": "event_msg",
                  "payload": {"type": "future_event", "weird": [1, 2]}})
    lines.append({"timestamp": "2026-11-29T10:30:06.000Z", "type": "event_msg",
                  "payload": {"type": "agent_message", "message": "after the damage"}})
    write(tmp_path, rel_for(sid), lines,
          raw_tail=b'{"timestamp":"2026-11-29T10:31:00.000Z","type":"event_msg","payload":{"type":"agent_mes')
    s = one(tmp_path)
    assert s.id == sid and s.first_request == "first" and s.cwd == "/w/one"
    got, stats = steps_of(CodexReader(env_for(tmp_path)), s)
    msgs = [st.text for st in got if st.kind == "message"]
    assert msgs[:2] == ["glued one", "glued two"]
    assert msgs[2].startswith("bad ") and msgs[3] == "after the damage"
    assert stats.damaged_lines == 2  # the cut middle line and the garbage; the cut last line is silent
    assert ("command", ("echo a", 0)) in kinds(got)


def test_missing_session_meta_still_lists(tmp_path: Path) -> None:
    sid = uid(1)
    w = W(sid)
    w.user_x5("headless")
    write(tmp_path, rel_for(sid), w.recs[1:])  # no header (#38341)
    s = one(tmp_path)
    assert s.id == sid and s.first_request == "headless"
    assert s.cwd == "/w/one"  # from the first turn_context
    assert any("session_meta" in p for p in s.problems)
    assert s.resume_blocker == "cli_cannot_reopen"


def test_empty_and_garbage_files_still_list(tmp_path: Path) -> None:
    a, b = uid(1), uid(2)
    write(tmp_path, rel_for(a), [])
    write(tmp_path, rel_for(b), [b"\xff\xfe\x00 not json", "{}", "[1,2,3]"])
    got = listing(CodexReader(env_for(tmp_path)))
    assert set(got) == {a, b}
    assert got[a].problems and got[b].problems


@pytest.mark.slow
def test_fifty_megabyte_lines_are_skipped_cheaply(tmp_path: Path) -> None:
    sid = uid(1)
    w = W(sid)
    w.user_x5("big outputs")
    huge = "y" * (50 * 1024 * 1024)
    w.exec("c1", "cat big.log", unified(0, huge))  # fast path: header read from the first bytes only
    w.add("compacted", {"message": "summary", "replacement_history": [{"type": "message", "role": "user",
          "content": [{"type": "input_text", "text": "replayed request " + huge[:9_000_000]}]}]})
    w.item({"type": "message", "role": "user", "content": [
        {"type": "input_image", "image_url": "data:image/png;base64," + "A" * 9_000_000}]})
    w.agent_x5("still here")
    w.save(tmp_path, rel_for(sid))
    s = one(tmp_path)
    assert s.first_request == "big outputs"
    got, stats = steps_of(CodexReader(env_for(tmp_path)), s)
    assert ("command", ("cat big.log", 0)) in kinds(got)
    assert not any("replayed request" in st.text for st in got)
    assert [st.text for st in got if st.kind == "message"] == ["still here"]
    assert stats.damaged_lines == 0


def test_zst_rollouts_and_priorities(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    a, b = uid(1), uid(2)
    pa = W(a).user_x5("compressed only").exec("c1", "ls", unified(0)).save(tmp_path, rel_for(a))
    pa.with_name(pa.name + ".zst").write_bytes(zstandard.ZstdCompressor().compress(pa.read_bytes()))
    pa.unlink()
    # the same session both active and archived: sessions/ wins
    pb = W(b).user_x5("active copy").save(tmp_path, rel_for(b))
    arch = tmp_path / "codex" / "archived_sessions" / pb.name
    arch.parent.mkdir(parents=True)
    arch.with_name(arch.name + ".zst").write_bytes(zstandard.ZstdCompressor().compress(
        W(b).user_x5("archived copy").save(tmp_path, "tmp.jsonl").read_bytes()))
    (tmp_path / "codex" / "tmp.jsonl").unlink()
    r = CodexReader(env_for(tmp_path))
    got = listing(r)
    assert got[a].first_request == "compressed only" and got[a].locator["compressed"]
    assert got[b].first_request == "active copy" and not got[b].locator["archived"]
    assert ("command", ("ls", 0)) in kinds(steps_of(r, got[a])[0])
    # Codex switches a rollout back to plain: the session is still found
    pa.write_bytes(zstandard.ZstdDecompressor().decompress(Path(str(pa) + ".zst").read_bytes()))
    Path(str(pa) + ".zst").unlink()
    assert r.exists(got[a])
    assert ("command", ("ls", 0)) in kinds(steps_of(r, got[a])[0])


def test_zst_without_zstandard_package_lists_with_problem(tmp_path: Path, monkeypatch: Any) -> None:
    a = uid(1)
    p = write(tmp_path, rel_for(a) + ".zst", [])
    p.write_bytes(b"\x28\xb5\x2f\xfd not really")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import now fails
    r = CodexReader(env_for(tmp_path))
    s = one(tmp_path)
    assert s.id == a and any("zstandard" in pr for pr in s.problems)
    st, stats = steps_of(r, s)
    assert st == [] and any("zstandard" in pr for pr in stats.problems)


def test_corrupt_zst_lists_with_problem(tmp_path: Path) -> None:
    pytest.importorskip("zstandard")
    a = uid(1)
    p = write(tmp_path, rel_for(a) + ".zst", [])
    p.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(200))
    s = one(tmp_path)
    assert s.id == a and any("compressed rollout" in pr for pr in s.problems)


def test_unreadable_source_raises_clearly(tmp_path: Path) -> None:
    sid = uid(1)
    p = W(sid).user_x5("x").save(tmp_path, rel_for(sid))
    r = CodexReader(env_for(tmp_path))
    src = sources(r)[0]
    p.unlink()
    p.mkdir()  # replaced by a directory between discovery and summary
    with pytest.raises(OSError):
        r.summarize(src)
    p.rmdir()
    os.mkfifo(p)  # a FIFO must not hang us
    with pytest.raises(OSError):
        r.summarize(src)


# ---------------------------------------------------------------------------------------------------------
# Live


def test_live_from_codex_thread_writer_lock(tmp_path: Path) -> None:
    import fcntl

    sid = uid(1)
    W(sid).user_x5("running").save(tmp_path, rel_for(sid))
    assert one(tmp_path).live is False
    locks = tmp_path / "codex" / "thread-writer-locks"
    locks.mkdir()
    (locks / ".coordination.lock").write_text("")
    lock = locks / f"{sid}.lock"
    lock.write_text("")
    assert one(tmp_path).live is False  # left behind by a killed process: nobody holds it
    with open(lock, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # what a running Codex does
        assert one(tmp_path).live is True
        fcntl.flock(f, fcntl.LOCK_UN)
    assert one(tmp_path).live is False


def test_live_by_open_rollout_only_when_asked(tmp_path: Path) -> None:
    sid = uid(1)
    p = W(sid).user_x5("running").save(tmp_path, rel_for(sid))
    if not Path("/proc/self/fd").is_dir():
        pytest.fail("needs Linux /proc to test live detection")
    with open(p, "a"):  # this process holds the rollout open, as a running Codex does
        r = CodexReader(env_for(tmp_path), probe_live=True)
        assert r.summarize(sources(r)[0])[0].live is True
        assert CodexReader(env_for(tmp_path)).summarize(sources(r)[0])[0].live is False
    r2 = CodexReader(env_for(tmp_path), probe_live=True)
    assert r2.summarize(sources(r2)[0])[0].live is False


# ---------------------------------------------------------------------------------------------------------
# Read-only


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    out: dict[str, tuple[str, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            st = p.lstat()
            digest = ""
            if p.is_file() and not p.is_symlink():
                digest = hashlib.sha256(p.read_bytes()).hexdigest()
            out[str(p)] = (digest, st.st_mtime_ns, st.st_size)
    return out


def exercise(root_tmp: Path) -> None:
    r = CodexReader(env_for(root_tmp), probe_live=True)
    r.locations()
    for src in r.sources():
        for s in r.summarize(src):
            list(r.steps(s, ReadStats()))
            r.exists(s)


def build_store_for_read_only(tmp: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    a, b = uid(1), uid(2)
    W(a).user_x5("hi").exec("c1", "ls", unified(0)).save(tmp, rel_for(a))
    pb = W(b).user_x5("zipped").save(tmp, rel_for(b))
    pb.with_name(pb.name + ".zst").write_bytes(zstandard.ZstdCompressor().compress(pb.read_bytes()))
    pb.unlink()
    write(tmp, "sessions/rollout-2025-06-01T14-00-00-3f2e1d0c-1111-4222-8333-944445555666.jsonl",
          x1_records("3f2e1d0c-1111-4222-8333-944445555666"))
    write(tmp, "session_index.jsonl", [{"id": a, "thread_name": "n", "updated_at": "x"}])


@pytest.mark.parametrize("with_wal", [False, True])
def test_reader_never_writes_to_the_store(tmp_path: Path, with_wal: bool) -> None:
    build_store_for_read_only(tmp_path)
    db = tmp_path / "codex" / "state_5.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE threads(id TEXT, rollout_path TEXT)")
    con.execute("INSERT INTO threads VALUES ('x', '/nope')")
    con.commit()
    if not with_wal:
        con.close()
    try:
        if with_wal:
            assert Path(str(db) + "-wal").exists()
        else:
            assert not Path(str(db) + "-wal").exists()
        before = snapshot(tmp_path / "codex")
        exercise(tmp_path)
        after = snapshot(tmp_path / "codex")
        assert after == before
    finally:
        if with_wal:
            con.close()


def test_read_only_checker_detects_a_touched_file(tmp_path: Path) -> None:
    build_store_for_read_only(tmp_path)
    before = snapshot(tmp_path / "codex")
    exercise(tmp_path)
    victim = next(p for p in (tmp_path / "codex").rglob("*.jsonl"))
    os.utime(victim, ns=(victim.stat().st_atime_ns, victim.stat().st_mtime_ns + 1))
    assert snapshot(tmp_path / "codex") != before
    (tmp_path / "codex" / "stray.tmp").write_text("")
    assert set(snapshot(tmp_path / "codex")) - set(before) == {str(tmp_path / "codex" / "stray.tmp")}


# ---------------------------------------------------------------------------------------------------------
# Streaming stays flat


@pytest.mark.slow
def test_steps_stream_a_long_session(tmp_path: Path) -> None:
    import tracemalloc

    sid = uid(1)
    p = tmp_path / "codex" / rel_for(sid)
    p.parent.mkdir(parents=True)
    with open(p, "w") as f:
        w = W(sid)
        for rec in w.recs:
            f.write(dump(rec) + "\n")
        for t in range(3000):
            w.recs = []
            w.user_x5(f"turn {t}")
            w.exec(f"c{t}", f"echo {t}", unified(t % 3, "out\n" * 200))
            w.agent_x5(f"answer {t}")
            w.done(f"answer {t}")
            for rec in w.recs:
                f.write(dump(rec) + "\n")
    assert p.stat().st_size > 5 * 1024 * 1024
    r = CodexReader(env_for(tmp_path))
    s = one(tmp_path)
    tracemalloc.start()
    n = 0
    stats = ReadStats()
    for st in r.steps(s, stats):
        n += 1
        if st.kind == "command":
            t = int(st.text.split()[1])
            assert st.exit_code == t % 3
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert n == 3000 * 3
    assert peak < 4 * 1024 * 1024, peak


# ---------------------------------------------------------------------------------------------------------
# The real store written by Codex 0.171 (tests/fixtures/real/codex)


def real_fixture() -> tuple[dict[str, Any], Env]:
    env, exp, _ = load_fixture("codex")
    return exp, env


def test_real_fixture_lists_every_session() -> None:
    exp, env = real_fixture()
    r = CodexReader(env)
    got = listing(r)
    assert exp["sessions"], "expected.json lists no sessions"
    for e in exp["sessions"]:
        s = got.get(e["id"])
        assert s is not None, f"{e['id']} ({e.get('scenario')}) not listed; have {sorted(got)}"
        assert s.first_request == e["first_request"], e["scenario"]
        assert s.cwd == e["cwd"], e["scenario"]
        assert s.branch == e["branch"], e["scenario"]
        assert s.parent_id == e["parent_id"], e["scenario"]
        if e["parent_id"]:
            assert s.resume_blocker == "subagent"
        else:
            assert s.resumable and s.resume_blocker is None
        assert s.problems == [], (e["scenario"], s.problems)
        assert s.model, e["scenario"]
        assert s.started_at and s.updated_at and s.updated_at >= s.started_at


def test_real_fixture_steps_hold_commands_files_and_subagents() -> None:
    exp, env = real_fixture()
    r = CodexReader(env)
    got = listing(r)
    for e in exp["sessions"]:
        s = got[e["id"]]
        steps, stats = steps_of(r, s)
        assert_steps_match_scenario(steps, stats, e)


def test_real_fixture_is_read_only() -> None:
    _, env = real_fixture()
    root = Path(env.environ["CODEX_HOME"])
    before = snapshot(root)
    r = CodexReader(env, probe_live=True)
    for src in r.sources():
        for s in r.summarize(src):
            list(r.steps(s, ReadStats()))
    assert snapshot(root) == before


def test_real_session_meta_lines_slim_without_a_full_decode() -> None:
    """The summary skips base_instructions by bytes; on Codex's own lines the slim form must parse and
    keep every other field (else every summary pays a full decode of ~20 KiB)."""
    from segue.stores.codex.records import _slim

    _, env = real_fixture()
    for p in sorted(Path(env.environ["CODEX_HOME"]).rglob("rollout-*.jsonl")):
        first = p.read_bytes().split(b"\n", 1)[0]
        full = json.loads(first)
        slim = _slim(first)
        assert len(slim) < len(first) // 4, p.name
        got = json.loads(slim)
        assert got["payload"]["base_instructions"]["text"] == ""
        del got["payload"]["base_instructions"]["text"], full["payload"]["base_instructions"]["text"]
        assert got == full


def test_held_inodes_reads_holders_not_waiters(tmp_path: Path) -> None:
    from segue.stores.codex import held_inodes

    f = tmp_path / "locks"
    f.write_text("1: FLOCK  ADVISORY  WRITE 4156 fe:00:2146328 0 EOF\n"
                 "1: -> FLOCK  ADVISORY  WRITE 4157 fe:00:999 0 EOF\n"
                 "2: POSIX  ADVISORY  READ 31924 fe:00:2197258 128 128\n"
                 "3: OFDLCK ADVISORY  READ -1 00:2a:77 0 EOF\n")
    assert held_inodes(str(f)) == {2146328, 2197258, 77}
    assert held_inodes(str(tmp_path / "missing")) is None


# ---------------------------------------------------------------------------------------------------------
# Steps read by bytes: skipped records, settled outputs, outputs read from their ends


def _whole_steps(path: Path, cwd: str | None) -> list[Step]:
    """The reference: every line decoded whole and fed to the step builder, no byte shortcut."""
    from segue.stores.codex import StepBuilder, decode_records, normalize

    b = StepBuilder(cwd)
    out: list[Step] = []
    for line in path.read_bytes().split(b"\n"):
        if line.strip():
            for obj in decode_records(line)[0]:
                out += b.feed(*normalize(obj))
    return out + list(b.finish())


_PIECES = ["plain ascii text", "naïve café Größe", "中文输出", "emoji 😀🚀", 'a "quoted" word', "back\\slash",
           "C:\\new\\table", "tab\there", "nul\u0000byte", "\x1b[31mred\x1b[0m", "\\u0041 literally",
           "}{\"timestamp\":"]


def _output(rng: Any, size: int, shape: int) -> str:
    """A command output of about `size` characters; `shape` bits add what could trip a cut copy."""
    parts: list[str] = []
    n = 0
    while n < size:
        p = rng.choice(_PIECES) * rng.randint(1, 40)
        parts.append(p)
        n += len(p) + 1
    out = "\n".join(parts)
    if shape & 1:  # backslashes where the start is cut
        out = "\\" * rng.randint(600, 9000) + out
    if shape & 2:  # the exit-code header late, after KiBs of noise
        out = "warming up\n" * rng.randint(100, 600) + f"Exit code: {rng.randint(1, 9)}\nOutput:\n" + out
    if shape & 4:  # backslashes where the end is cut
        out += "\\" * rng.randint(600, 3000) + "x" * rng.randint(0, 500)
    if shape & 8:  # trailing blanks: the tail that counts lies before them
        out += " " * rng.randint(500, 3000) + "\n" * rng.randint(0, 2000)
    if shape & 16:  # an `Output:` line near the end
        out = out[: len(out) - rng.randint(0, 600)] + "\nOutput:\n" + "end " * rng.randint(0, 150)
    return out


def _rollout_lines(sid: str, rng: Any) -> list[dict[str, Any]]:
    w = W(sid)
    w.user_x5("do many things")
    for i in range(5 * 32):
        form, shape = i % 5, (i // 5) % 32
        size = rng.choice([0, 50, 3000, 9000, 40_000, 200_000])
        out, code, cid = _output(rng, size, shape), rng.choice([0, 0, 1, 2, 127]), f"c{i}"
        if form == 0:  # 0.171: the item carries the output and code, the function output repeats them
            w.item({"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": f"run {i}"}),
                    "call_id": cid})
            w.event({"type": "item_completed", "thread_id": sid, "turn_id": "t1", "item": {
                "type": "CommandExecution", "id": cid, "command": ["/bin/bash", "-lc", f"run {i}"], "cwd": "/w",
                "status": "completed", "aggregated_output": out, "exit_code": code}})
            w.item({"type": "function_call_output", "call_id": cid, "output": unified(code, out)})
        elif form == 1:  # X3: the function output alone, with or without Codex's header
            w.exec(cid, f"run {i}", unified(code, out) if i % 2 else out)
        elif form == 2:  # X4: an exec_command_end event with three copies of the output
            w.item({"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": f"run {i}"}),
                    "call_id": cid})
            w.event({"type": "exec_command_end", "call_id": cid, "stdout": out, "stderr": "",
                     "aggregated_output": out if rng.random() < 0.8 else "", "exit_code": code,
                     "formatted_output": out})
            w.item({"type": "function_call_output", "call_id": cid, "output": unified(code, out)})
        elif form == 3:  # the old shell tool: the output is itself JSON
            w.exec(cid, f"run {i}", json.dumps({"output": out, "metadata": {"exit_code": code}}), name="shell",
                   args={"command": ["bash", "-lc", f"run {i}"]})
        else:  # any other tool: its output never shows
            w.exec(cid, "", out, name="mcp__docs__search", args={"query": f"q{i}"})
        if rng.random() < 0.3:
            w.item({"type": "reasoning", "summary": [], "encrypted_content": "gAAA" + "x" * rng.randint(10, 5000)})
            w.add("token_usage_record", {"type": "token_usage", "usage": {"input_tokens": 1}})
    w.agent_x5("all done")
    w.done("all done")
    return w.recs


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("quotes", [64, 4096])
def test_outputs_read_from_their_ends_match_whole_decoding(tmp_path: Path, seed: int, ascii_only: bool,
                                                            quotes: int, monkeypatch: Any) -> None:
    import random

    import segue.stores.codex.fast as mod  # where records are cut
    import segue.stores.jsoncut as jc

    monkeypatch.setattr(jc, "CUT_QUOTES", quotes)  # both the orjson and the stdlib setting
    cuts = []
    real_cut = mod.cut_strings
    monkeypatch.setattr(mod, "cut_strings", lambda *a: cuts.append(r := real_cut(*a)) or r)
    sid = uid(seed)
    recs = _rollout_lines(sid, random.Random(seed))
    path = write(tmp_path, rel_for(sid), [json.dumps(r, separators=(",", ":"), ensure_ascii=ascii_only)
                                          for r in recs])
    s = one(tmp_path)
    got, stats = steps_of(CodexReader(env_for(tmp_path)), s)
    want = _whole_steps(path, s.cwd)
    assert [st.kind for st in got] == [st.kind for st in want]
    assert got == want
    assert stats.damaged_lines == 0 and not stats.problems
    if quotes > 64:  # the stdlib setting steps over every quote: the shortcut was taken, not only the fallback
        assert sum(c is not None for c in cuts) > 10
    assert sum(st.kind == "command" and st.output is not None for st in got) >= 80


def test_settled_outputs_reasoning_and_counts_are_not_decoded(tmp_path: Path, monkeypatch: Any) -> None:
    sid = uid(7)
    w = W(sid)
    w.user_x5("build it")
    big = "compilé módulo 中文 ok\n" * 10_000  # ~200 KB, written twice per command
    for i in range(20):
        w.item({"type": "reasoning", "summary": [], "encrypted_content": "gAAA" + "z" * 30_000})
        w.item({"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": f"make {i}"}),
                "call_id": f"c{i}"})
        w.event({"type": "item_completed", "thread_id": sid, "turn_id": "t", "item": {
            "type": "CommandExecution", "id": f"c{i}", "command": ["bash", "-lc", f"make {i}"],
            "status": "completed", "aggregated_output": big + f"done {i}", "exit_code": i % 3}})
        w.item({"type": "function_call_output", "call_id": f"c{i}", "output": unified(i % 3, big + f"done {i}")})
        w.add("token_usage_record", {"type": "token_usage", "usage": {"input_tokens": 100}})
        w.event({"type": "token_count", "info": {"total_token_usage": {"input_tokens": 1}}})
    w.agent_x5("built")
    path = write(tmp_path, rel_for(sid), [json.dumps(r, separators=(",", ":"), ensure_ascii=False) for r in w.recs])
    s = one(tmp_path)
    import segue.stores.codex.records as mod  # where lines are decoded

    decoded = []
    real, real_fast = json.loads, mod.loads  # the stdlib decoder, and orjson's when it is installed
    monkeypatch.setattr(json, "loads", lambda t, *a, **k: decoded.append(len(t)) or real(t, *a, **k))
    monkeypatch.setattr(mod, "loads", lambda t: decoded.append(len(t)) or real_fast(t))
    got, stats = steps_of(CodexReader(env_for(tmp_path)), s)
    monkeypatch.undo()
    assert stats.damaged_lines == 0
    cmds = [(st.text, st.exit_code, st.output) for st in got if st.kind == "command"]
    assert cmds == [(f"make {i}", i % 3, (big + f"done {i}")[-8192:]) for i in range(20)]  # OUTPUT_KEEP
    assert got == _whole_steps(path, s.cwd)
    # each cut output keeps its last OUTPUT_KEEP characters (up to 32 KiB of bytes): about 6 % of this file
    assert sum(decoded) < path.stat().st_size // 12, (sum(decoded), path.stat().st_size)


def test_a_record_run_into_a_skipped_one_is_still_read(tmp_path: Path) -> None:
    sid = uid(8)
    w = W(sid).user_x2("hello")
    w.exec("c1", "ls", unified(0, "a\nb"))
    w.agent_x2("first")
    lines = [dump(r) for r in w.recs]
    nxt = W(sid)
    nxt.n = 50
    later = [dump(nxt.event({"type": "agent_message", "message": f"second {i}"}).recs[-1]) for i in range(3)]
    # #24425: a record cut short, the next one written on the same line
    lines.append(dump({"timestamp": "2026-11-29T10:00:40.000Z", "type": "event_msg",
                       "payload": {"type": "token_count", "info": {"x": 1}}})[:-8] + later[0])
    settled = dump({"timestamp": "2026-11-29T10:00:41.000Z", "type": "response_item",
                    "payload": {"type": "function_call_output", "call_id": "c1", "output": "late copy " * 50}})
    lines.append(settled[: len(settled) // 2] + later[1])  # cut inside the output string
    lines.append(settled[:60] + later[2])  # cut before the output
    write(tmp_path, rel_for(sid), lines)
    got, stats = steps_of(CodexReader(env_for(tmp_path)), one(tmp_path))
    assert [st.text for st in got if st.kind == "message"] == ["first", "second 0", "second 1", "second 2"]
    assert stats.damaged_lines == 3


# ---------------------------------------------------------------------------------------------------------
# Records as other writers serialise them: the reference decode decides, fast paths only skip on a match


def _reverse_keys(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _reverse_keys(v[k]) for k in reversed(list(v))}
    if isinstance(v, list):
        return [_reverse_keys(x) for x in v]
    return v


_SHAPES = {
    "compact": lambda r: json.dumps(r, separators=(",", ":")),
    "spaced": lambda r: json.dumps(r),
    "reversed": lambda r: json.dumps(_reverse_keys(r), separators=(",", ":")),
    "reversed_spaced": lambda r: json.dumps(_reverse_keys(r)),
    "sorted": lambda r: json.dumps(r, sort_keys=True),
}


def _summary_facts(s: Session) -> tuple[Any, ...]:
    return (s.id, s.title, s.first_request, s.cwd, s.branch, s.model, s.started_at, s.updated_at, s.parent_id,
            s.resumable, s.resume_blocker, s.problems)


def _varied_rollout(sid: str) -> W:
    w = W(sid, "/w/one", "feature/one", big_instructions=300)
    w.item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]})
    w.item(agents_md("/w/one", "x" * 5000))
    w.user_x5("Please run the tests")
    w.exec("c1", "make test", unified(1, "FAIL " * 2000))
    w.event({"type": "item_completed", "item": {"type": "CommandExecution", "id": "c1",
             "command": ["/bin/bash", "-lc", "make test"], "status": "failed", "exit_code": 1,
             "aggregated_output": "FAIL " * 2000}})
    w.item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "p1",
            "input": "*** Begin Patch\n*** Add File: notes.md\n+hello\n*** End Patch"})
    w.item({"type": "custom_tool_call_output", "call_id": "p1", "output": "Success. Updated the following files"})
    w.item({"type": "reasoning", "summary": [], "encrypted_content": "gAAA" + "z" * 9000})
    w.agent_x5("Tests fail.")
    w.done("Tests fail.")
    w.user_x2("now fix them", cwd="/w/one")
    w.exec("c2", "make fix", "Exit code: 0\nWall time: 1 s\nOutput:\nfixed\n", name="shell_command",
           args={"command": "make fix"})
    w.agent_x2("Fixed.")
    w.done("Fixed.")
    return w


@pytest.mark.parametrize("fast", ["1", "0"])
@pytest.mark.parametrize("shape", list(_SHAPES))
def test_any_serialisation_lists_and_briefs_like_codex_own(tmp_path: Path, shape: str, fast: str,
                                                           monkeypatch: Any) -> None:
    sid = uid(21)
    w = _varied_rollout(sid)
    ref_dir, var_dir = tmp_path / "ref", tmp_path / "var"
    write(ref_dir, rel_for(sid), [_SHAPES["compact"](r) for r in w.recs])
    write(var_dir, rel_for(sid), [_SHAPES[shape](r) for r in w.recs])
    monkeypatch.setenv("SEGUE_FAST_PATHS", "0")
    want = one(ref_dir)
    want_steps = steps_of(CodexReader(env_for(ref_dir)), want)[0]
    monkeypatch.setenv("SEGUE_FAST_PATHS", fast)
    got = one(var_dir)
    assert want.title == "Please run the tests" and want.updated_at == parse_time(w.recs[-1]["timestamp"])
    assert _summary_facts(got) == _summary_facts(want)
    got_steps, stats = steps_of(CodexReader(env_for(var_dir)), got)
    assert got_steps == want_steps
    assert ("command", ("make test", 1)) in kinds(got_steps) and not stats.problems


@pytest.mark.parametrize("seed", [4, 5])
def test_fast_paths_equal_the_reference_decode(tmp_path: Path, seed: int, monkeypatch: Any) -> None:
    import random

    sid = uid(seed)
    recs = _rollout_lines(sid, random.Random(seed))
    write(tmp_path, rel_for(sid), [json.dumps(r, separators=(",", ":"), ensure_ascii=seed % 2 == 0)
                                   for r in recs])
    monkeypatch.setenv("SEGUE_FAST_PATHS", "1")
    fast_s = one(tmp_path)
    fast_steps = steps_of(CodexReader(env_for(tmp_path)), fast_s)
    monkeypatch.setenv("SEGUE_FAST_PATHS", "0")
    ref_s = one(tmp_path)
    ref_steps = steps_of(CodexReader(env_for(tmp_path)), ref_s)
    assert _summary_facts(fast_s) == _summary_facts(ref_s)
    assert fast_steps[0] == ref_steps[0] and len(ref_steps[0]) > 100
    assert fast_steps[1].problems == ref_steps[1].problems == []


def test_crlf_bom_blank_lines_and_torn_tail_read_like_the_original(tmp_path: Path, monkeypatch: Any) -> None:
    sid = uid(22)
    w = _varied_rollout(sid)
    lines = [_SHAPES["compact"](r) for r in w.recs]
    write(tmp_path / "ref", rel_for(sid), lines)
    torn = _SHAPES["compact"](w.recs[-1])
    body = "\ufeff" + "\r\n\r\n".join(lines) + "\r\n" + torn[: len(torn) // 2]
    var = tmp_path / "var" / "codex" / rel_for(sid)
    var.parent.mkdir(parents=True)
    var.write_bytes(body.encode())
    for fast in ("1", "0"):
        monkeypatch.setenv("SEGUE_FAST_PATHS", fast)
        want, got = one(tmp_path / "ref"), one(tmp_path / "var")
        assert _summary_facts(got) == _summary_facts(want)
        assert steps_of(CodexReader(env_for(tmp_path / "var")), got)[0] == \
            steps_of(CodexReader(env_for(tmp_path / "ref")), want)[0]


def test_sandbox_denied_output_gives_its_exit_code(tmp_path: Path) -> None:
    denied = ("failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error, exit code: 126, "
              "stdout: , stderr: open /home/u/.cache/x: permission denied")
    assert exit_code_from_output(denied) == (126, None)
    assert exit_code_from_output("the words failed in sandbox appear, exit code: 3, later") == (None, None)
    sid = uid(23)
    w = W(sid)
    w.user_x2("build")
    w.exec("c1", "go build ./...", denied, name="shell", args={"command": ["bash", "-lc", "go build ./..."]})
    w.done(None)
    w.save(tmp_path, rel_for(sid))
    got = [k for k in kinds(steps_of(CodexReader(env_for(tmp_path)), one(tmp_path))[0]) if k[0] == "command"]
    assert got == [("command", ("go build ./...", 126))]


def test_review_subagent_attaches_to_the_thread_that_entered_review_mode(tmp_path: Path) -> None:
    parent, other, child = uid(31), uid(32), uid(33)
    p = W(parent).user_x2("review my change")
    p.n = 90
    at = p.ts()
    p.event({"type": "entered_review_mode", "prompt": "review", "user_facing_hint": "current changes"})
    p.event({"type": "exited_review_mode", "review_output": None})
    p.save(tmp_path, rel_for(parent))
    o = W(other).user_x2("unrelated")
    o.n = 300  # entered review mode too, but minutes later
    o.event({"type": "entered_review_mode", "prompt": "review"})
    o.save(tmp_path, rel_for(other, stamp="2026-11-29T10-00-01"))
    c = W(child, extra_meta={"source": {"subagent": "review"}, "timestamp": at})
    c.recs[0]["timestamp"] = at
    c.user_x5("review the current changes")
    c.save(tmp_path, rel_for(child, stamp="2026-11-29T10-01-30"))
    got = listing(CodexReader(env_for(tmp_path)))
    assert got[child].parent_id == parent and got[child].resume_blocker == "subagent"
    assert got[parent].parent_id is None and got[other].parent_id is None


def test_code_mode_exec_cell_is_not_a_step_when_its_nested_calls_are(tmp_path: Path) -> None:
    sid = uid(34)
    w = W(sid)
    w.user_x5("count lines")
    w.item({"type": "custom_tool_call", "name": "exec", "call_id": "cell1",
            "input": "const r = await tools.exec_command({cmd: 'wc -l a.txt'}); text(r)"})
    w.event({"type": "item_completed", "item": {"type": "CommandExecution", "id": "nested1",
             "command": ["/bin/bash", "-lc", "wc -l a.txt"], "status": "completed", "exit_code": 0}})
    w.item({"type": "custom_tool_call_output", "call_id": "cell1", "output": "3 a.txt"})
    w.item({"type": "custom_tool_call", "name": "exec", "call_id": "cell2", "input": "text(1 + 1)"})
    w.item({"type": "custom_tool_call_output", "call_id": "cell2", "output": "2"})  # nothing nested: a step
    w.done("3 lines")
    w.save(tmp_path, rel_for(sid))
    got = kinds(steps_of(CodexReader(env_for(tmp_path)), one(tmp_path))[0])
    assert got == [("request", "count lines"), ("command", ("wc -l a.txt", 0)),
                   ("tool", 'exec: {"input": "text(1 + 1)"}'), ("message", "3 lines")]


def test_unrecognised_lines_and_undecodable_arguments_are_problems(tmp_path: Path) -> None:
    sid = uid(35)
    write(tmp_path, rel_for(sid), [{"hello": "world"}, {"n": 1}, [1, 2]])
    s = one(tmp_path)
    _, stats = steps_of(CodexReader(env_for(tmp_path)), s)
    assert any("no Codex records recognised in 3 non-blank lines" in p for p in stats.problems)
    sid2 = uid(36)
    w = W(sid2).user_x2("go")
    w.item({"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "ls', "call_id": "c1"})
    w.done(None)
    w.save(tmp_path / "b", rel_for(sid2))
    _, stats = steps_of(CodexReader(env_for(tmp_path / "b")), one(tmp_path / "b"))
    assert stats.problems == ["1 tool calls whose arguments could not be decoded"]


def test_commands_without_a_code_say_why(tmp_path: Path) -> None:
    sid = uid(37)
    w = W(sid)
    w.user_x5("start")
    w.exec("c1", "sleep 100", None)  # a new turn begins before any output: interrupted
    w.user_x5("never mind")
    w.exec("c2", "npm run dev", "Chunk ID: 1\nWall time: 10 seconds\nProcess running with session ID 7\n"
           "Output:\nlistening")  # still running when the file ends
    w.exec("c3", "cat big", None)  # no output, no turn edge: unknown
    w.save(tmp_path, rel_for(sid))
    got = [(st.text, st.exit_code, st.status) for st in steps_of(CodexReader(env_for(tmp_path)), one(tmp_path))[0]
           if st.kind == "command"]
    assert got == [("sleep 100", None, "interrupted"), ("npm run dev", None, "running"), ("cat big", None, None)]
