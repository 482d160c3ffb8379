"""Gemini CLI reader: hand-made stores of every generation and bad input, the read-only contract, the real
fixture written by Gemini CLI 0.61 offline, and (slow, real runtime) native resume and a new session.

Stores are built in tmp_path from small Python data: JSONL sessions (G2) with re-appended messages, `$set`
and `$rewindTo` records, single-document sessions (G1), slug and hash project dirs, subagent files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from segue.model import ReadStats, Session, Step
from segue.stores.base import Env
from segue.stores.gemini import DESCRIPTOR, GeminiReader, new_session_argv, resume_argv, shell_exit_code, user_request
from segue.stores.gemini import reader as gm
from tests.conftest import assert_steps_match_scenario, load_fixture, real_fixture

SID = "2b9dab38-2b13-436b-b7b4-6a6fd3b5ab1e"
SID2 = "40a256a0-71c4-4436-9739-f15912f5d820"
CWD = "/w/one"
T0 = "2026-12-01T21:44:42.237Z"


# ---------------------------------------------------------------------------------------------------------
# builders


def meta(sid: str = SID, cwd: str = CWD, **kw: Any) -> dict[str, Any]:
    return {"sessionId": sid, "projectHash": sha(cwd), "startTime": T0, "lastUpdated": T0, "kind": "main", **kw}


def sha(p: str) -> str:
    return hashlib.sha256(p.encode()).hexdigest()


def context(cwd: str = CWD) -> dict[str, Any]:
    text = (f"<session_context>\nThis is the Gemini CLI.\n- **Workspace Directories:**\n  - {cwd}\n"
            "- **Directory Structure:**\n</session_context>")
    return {"id": "d04923d38bb0f6017037e74183378ef4", "timestamp": T0, "type": "user", "content": [{"text": text}]}


def user(mid: str, text: str, ts: str = "2026-12-01T21:44:43.000Z", **kw: Any) -> dict[str, Any]:
    return {"id": mid, "timestamp": ts, "type": "user", "content": [{"text": text}], **kw}


def gem(mid: str, text: str = "", calls: list[dict[str, Any]] | None = None, ts: str = "2026-12-01T21:44:44.000Z",
        model: str = "gemini-3.8-flash") -> dict[str, Any]:
    m: dict[str, Any] = {"id": mid, "timestamp": ts, "type": "gemini", "content": text, "thoughts": [],
                         "tokens": {"input": 1, "output": 1, "total": 2}, "model": model}
    if calls is not None:
        m["toolCalls"] = calls
    return m


def shell(cid: str, command: str, output: str, status: str = "success") -> dict[str, Any]:
    resp = {"output": output} if status == "success" else {"error": output}
    return {"id": cid, "name": "run_shell_command", "args": {"command": command}, "status": status,
            "result": [{"functionResponse": {"id": cid, "name": "run_shell_command", "response": resp}}]}


def write(cid: str, path: str, added: int = 1) -> dict[str, Any]:
    return {"id": cid, "name": "write_file", "args": {"file_path": path, "content": "x\n"}, "status": "success",
            "resultDisplay": {"fileDiff": "", "diffStat": {"model_added_lines": added, "model_removed_lines": 0}}}


def out(text: str, code: int | None = None) -> str:
    tail = f"\nExit Code: {code}" if code else ""
    return f"<untrusted_context>\nOutput: {text}{tail}\nProcess Group PGID: 1\n</untrusted_context>"


def jsonl(*records: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def project(home: Path, slug: str = "one", cwd: str | None = CWD) -> Path:
    d = home / ".gemini" / "tmp" / slug / "chats"
    d.mkdir(parents=True, exist_ok=True)
    if cwd is not None:
        (d.parent / ".project_root").write_text(cwd)
    return d


def session_file(chats: Path, text: str, sid: str = SID, minute: str = "2026-12-01T21-44", ext: str = "jsonl") -> Path:
    p = chats / f"session-{minute}-{sid[:8]}.{ext}"
    p.write_text(text)
    return p


def standard(sid: str = SID, cwd: str = CWD) -> str:
    """A two-turn session as 0.61 writes it: context $set, re-appended messages, lastUpdated $sets."""
    calls = [shell("c1", "echo hello > out.txt && ls", out("README.md\nout.txt"))]
    calls2 = [shell("c2", "ls /nonexistent-dir", out("ls: cannot access", 2)), write("c3", f"{cwd}/notes.md")]
    return jsonl(meta(sid, cwd), {"$set": {"messages": [context(cwd)], "lastUpdated": T0}},
                 user("u1", "Please run it"), {"$set": {"lastUpdated": "2026-12-01T21:44:43.000Z"}},
                 gem("g1"), gem("g1", calls=calls), gem("g2", "Done."),
                 user("u2", "Now the second", ts="2026-12-01T21:44:50.000Z"),
                 gem("g3", calls=calls2, ts="2026-12-01T21:44:51.000Z"),
                 gem("g4", "The directory does not exist.", ts="2026-12-01T21:44:52.000Z"),
                 {"$set": {"lastUpdated": "2026-12-01T21:44:52.500Z"}})


def reader(home: Path, **environ: str) -> GeminiReader:
    return GeminiReader(Env(home=home, environ=environ))


def listing(r: GeminiReader) -> dict[str, Session]:
    out_: dict[str, Session] = {}
    for src in r.sources():
        for s in r.summarize(src):
            assert s.id not in out_, f"{s.id} listed twice"
            out_[s.id] = s
    return out_


def steps_of(r: GeminiReader, s: Session) -> tuple[list[Step], ReadStats]:
    stats = ReadStats()
    return list(r.steps(s, stats)), stats


def kinds(steps: list[Step]) -> list[tuple[str, str]]:
    return [(x.kind, x.text) for x in steps]


# ---------------------------------------------------------------------------------------------------------
# places


def test_locations_follow_gemini_cli_home(tmp_path: Path) -> None:
    assert reader(tmp_path).locations()[0].path == str(tmp_path / ".gemini" / "tmp")
    other = tmp_path / "elsewhere"
    loc = reader(tmp_path, GEMINI_CLI_HOME=str(other)).locations()[0]
    assert loc.path == str(other / ".gemini" / "tmp") and not loc.exists and "GEMINI_CLI_HOME" in loc.how_to_override
    session_file(project(other), standard())
    assert list(listing(reader(tmp_path, GEMINI_CLI_HOME=str(other)))) == [SID]
    assert listing(reader(tmp_path)) == {}


def test_missing_store_and_empty_dirs_list_nothing(tmp_path: Path) -> None:
    assert listing(reader(tmp_path)) == {}
    project(tmp_path)  # a project dir without sessions
    (tmp_path / ".gemini" / "tmp" / "bin").mkdir()
    (tmp_path / ".gemini" / "tmp" / "stray-file").write_text("x")
    assert listing(reader(tmp_path)) == {}


# ---------------------------------------------------------------------------------------------------------
# summaries


def test_jsonl_session_lists_with_its_facts(tmp_path: Path) -> None:
    session_file(project(tmp_path), standard())
    s = listing(reader(tmp_path))[SID]
    assert s.first_request == "Please run it" and s.cwd == CWD and s.branch is None
    assert s.model == "gemini-3.8-flash" and s.parent_id is None and s.resumable and s.resume_blocker is None
    assert s.started_at == pytest.approx(1796161482.237) and s.updated_at == pytest.approx(1796161492.5)
    assert s.live is False and s.problems == [] and s.title is None
    assert s.locator["cwd_from"] == "project_root"


def test_summary_is_the_title_and_the_last_one_wins(tmp_path: Path) -> None:
    session_file(project(tmp_path), standard() + jsonl({"$set": {"summary": "First"}},
                                                       {"$set": {"summary": "Fix the tests", "memoryScratchpad": {}}}))
    assert listing(reader(tmp_path))[SID].title == "Fix the tests"


def test_cwd_prefers_the_candidate_that_matches_project_hash(tmp_path: Path) -> None:
    chats = project(tmp_path, cwd="/moved/elsewhere")  # .project_root disagrees with the hash
    session_file(chats, standard())
    s = listing(reader(tmp_path))[SID]
    assert s.cwd == CWD and s.locator["cwd_from"] == "session_context"


def test_cwd_from_projects_map_and_from_a_legacy_hash_dir(tmp_path: Path) -> None:
    chats = project(tmp_path, "one", cwd=None)
    (tmp_path / ".gemini" / "projects.json").write_text(json.dumps({"projects": {CWD: "one", "/w/two": "two"}}))
    session_file(chats, jsonl(meta(), user("u1", "hi"), gem("g1", "ok")))
    hashed = project(tmp_path, sha("/w/two"), cwd=None)
    session_file(hashed, jsonl(meta(SID2, "/w/two"), user("u1", "hi"), gem("g1", "ok")), sid=SID2)
    got = listing(reader(tmp_path))
    assert got[SID].cwd == CWD and got[SID].locator["cwd_from"] == "projects_json"
    assert got[SID2].cwd == "/w/two"


def test_unknown_directory_is_a_problem_not_a_guess(tmp_path: Path) -> None:
    session_file(project(tmp_path, cwd=None), jsonl(meta(), user("u1", "hi"), gem("g1", "ok")))
    s = listing(reader(tmp_path))[SID]
    assert s.cwd is None and any("directory is not recorded" in p for p in s.problems)


def test_legacy_json_document_and_its_jsonl_successor(tmp_path: Path) -> None:
    chats = project(tmp_path)
    doc = {**meta(), "messages": [user("u1", "Old format"), gem("g1", "ok", calls=[shell("c1", "ls", out("a"))])]}
    session_file(chats, json.dumps(doc), ext="json")
    r = reader(tmp_path)
    s = listing(r)[SID]
    assert s.first_request == "Old format" and s.cwd == CWD and s.locator["format"] == "json"
    assert kinds(steps_of(r, s)[0]) == [("request", "Old format"), ("message", "ok"), ("command", "ls")]
    # resuming it in a JSONL version writes `<name>.jsonl` beside it: only the successor is listed
    session_file(chats, standard(), ext="jsonl")
    got = listing(reader(tmp_path))
    assert list(got) == [SID] and got[SID].locator["format"] == "jsonl"


def test_hash_dir_copied_into_a_slug_dir_is_read_once(tmp_path: Path) -> None:
    slug = project(tmp_path, "one")
    old = project(tmp_path, sha(CWD), cwd=None)
    for d in (slug, old):
        session_file(d, standard())
    only_old = session_file(old, jsonl(meta(SID2), user("u1", "only in the old dir"), gem("g1", "ok")), sid=SID2)
    got = listing(reader(tmp_path))
    assert set(got) == {SID, SID2}
    assert "/one/chats/" in got[SID].store_path and got[SID2].store_path == str(only_old)


def test_subagent_file_names_its_parent_and_cannot_be_resumed(tmp_path: Path) -> None:
    chats = project(tmp_path)
    child = "302ed1f1-f422-4e03-a3eb-e3fa434ee59c"
    call = {"id": "i1", "name": "invoke_agent", "args": {"agent_name": "generalist", "prompt": "Count files"},
            "status": "success", "agentId": child}
    session_file(chats, jsonl(meta(), user("u1", "Use a subagent"), gem("g1", calls=[call]), gem("g2", "done")))
    (chats / SID).mkdir()
    (chats / SID / f"{child}.jsonl").write_text(jsonl(
        {**meta(child, "/w/sub-dir"), "kind": "subagent", "directories": ["/w/sub-dir"]},
        user("s1", "Count files"), gem("s2", calls=[shell("c1", "ls | wc -l", out("3"))]),
        gem("s3", calls=[{"id": "c2", "name": "complete_task", "args": {"result": {"response": "3 files"}}}])))
    r = reader(tmp_path)
    got = listing(r)
    sub = got[child]
    assert sub.parent_id == SID and not sub.resumable and sub.resume_blocker == "subagent"
    assert sub.cwd == "/w/sub-dir" and sub.first_request == "Count files"
    steps = steps_of(r, sub)[0]
    assert kinds(steps)[-1] == ("message", "3 files") and steps[1].exit_code == 0
    parent_steps = steps_of(r, got[SID])[0]
    assert [(x.kind, x.ref) for x in parent_steps if x.kind == "subagent"] == [("subagent", child)]


def test_startup_only_twin_of_a_resumed_session_is_not_listed(tmp_path: Path) -> None:
    """`gemini --resume` writes session-<new minute>-<id8>.jsonl with only metadata and the injected
    context, then appends to the session's own file."""
    chats = project(tmp_path)
    session_file(chats, standard())
    session_file(chats, jsonl(meta(), {"$set": {"messages": [context()]}}), minute="2026-12-01T22-09")
    assert list(listing(reader(tmp_path))) == [SID]


def test_session_without_a_prompt_cannot_be_reopened(tmp_path: Path) -> None:
    session_file(project(tmp_path), jsonl(meta(), {"$set": {"messages": [context()]}}, user("u1", "/help")))
    s = listing(reader(tmp_path))[SID]
    assert s.first_request is None and not s.resumable and s.resume_blocker == "cli_cannot_reopen"


# ---------------------------------------------------------------------------------------------------------
# steps


def test_steps_follow_the_final_message_list(tmp_path: Path) -> None:
    r = reader(tmp_path)
    session_file(project(tmp_path), standard())
    steps, stats = steps_of(r, listing(r)[SID])
    assert kinds(steps) == [("request", "Please run it"), ("command", "echo hello > out.txt && ls"),
                            ("message", "Done."), ("request", "Now the second"), ("command", "ls /nonexistent-dir"),
                            ("edit", ""), ("message", "The directory does not exist.")]
    assert [x.exit_code for x in steps if x.kind == "command"] == [0, 2]
    assert steps[1].output == "README.md\nout.txt"
    edit = steps[5]
    assert edit.path == f"{CWD}/notes.md" and edit.added == 1 and edit.removed == 0
    assert stats.damaged_lines == 0 and stats.problems == [] and stats.bytes_read > 0


def test_rewind_and_set_messages_replace_what_came_before(tmp_path: Path) -> None:
    text = jsonl(meta(), user("u1", "first"), gem("g1", "a1"), user("u2", "dropped"), gem("g2", "dropped too"),
                 {"$rewindTo": "u2"}, user("u3", "third"), gem("g3", "a3"),
                 {"$set": {"messages": [user("u1", "first"), gem("g1", "a1"), user("u3", "third"),
                                        gem("g3", "a3 rewritten")]}},
                 gem("g3", "a3 final"), user("u4", "fourth"))
    r = reader(tmp_path)
    session_file(project(tmp_path), text)
    s = listing(r)[SID]
    assert s.first_request == "first"
    assert kinds(steps_of(r, s)[0]) == [("request", "first"), ("message", "a1"), ("request", "third"),
                                        ("message", "a3 final"), ("request", "fourth")]
    session_file(project(tmp_path), jsonl(meta(), user("u1", "gone"), {"$rewindTo": "unknown"}, user("u2", "kept")))
    assert kinds(steps_of(r, listing(r)[SID])[0]) == [("request", "kept")]


def test_function_calls_in_history_without_tool_call_records(tmp_path: Path) -> None:
    """`$set.messages` rebuilt from the client history holds functionCall parts and functionResponse turns."""
    hist = [user("u1", "go"), {"id": "g1", "type": "gemini", "content": [
        {"text": "thinking", "thought": True}, {"functionCall": {"id": "f1", "name": "run_shell_command",
                                                                 "args": {"command": "false"}}}]},
        {"id": "u2", "type": "user", "content": [{"functionResponse": {"id": "f1", "name": "run_shell_command",
                                                                      "response": {"output": out("", 1)}}}]},
        {"id": "g2", "type": "gemini", "content": [{"functionCall": {"id": "f2", "name": "replace",
                                                                     "args": {"file_path": "/w/a.py"}}}]}]
    r = reader(tmp_path)
    session_file(project(tmp_path), jsonl(meta(), {"$set": {"messages": hist}}))
    steps = steps_of(r, listing(r)[SID])[0]
    assert [(x.kind, x.text, x.exit_code, x.path) for x in steps] == [
        ("request", "go", None, None), ("command", "false", 1, None), ("edit", "", None, "/w/a.py")]


def test_user_words_vs_injected_context() -> None:
    assert user_request(context()) is None
    assert user_request(user("u", "/resume list")) is None and user_request(user("u", "?")) is None
    ide = "Here is the user's editor context as a JSON object. This is for your information only.\n{}"
    assert user_request(user("u", ide)) is None
    hooked = {"id": "u", "type": "user", "content": [{"text": "fix it"}, {"text": "<hook_context>x</hook_context>"}]}
    assert user_request(hooked) == "fix it"
    typed = {"id": "u", "type": "user", "content": [{"text": "explain @a.py\n--- a.py ---\nprint(1)"}],
             "displayContent": [{"text": "explain @a.py"}]}
    assert user_request(typed) == "explain @a.py"
    assert user_request({"id": "u", "type": "user", "content": "plain string"}) == "plain string"


def test_shell_exit_codes() -> None:
    assert shell_exit_code("success", out("ok")) == 0
    assert shell_exit_code("success", out("ls: x", 2)) == 2
    assert shell_exit_code("success", "Output: (empty)\nSignal: 9\nProcess Group PGID: 3") is None
    assert shell_exit_code("error", "Error: Tool execution for \"Shell\" requires user confirmation") is None
    assert shell_exit_code("cancelled", None) is None
    assert shell_exit_code("success", "no recognisable shape") is None


# ---------------------------------------------------------------------------------------------------------
# bad input never crashes; damage is counted or reported


def test_damaged_truncated_and_wrong_typed_records(tmp_path: Path) -> None:
    calls_as_dict = {**gem("g2"), "toolCalls": {"not": "a list"}}
    weird = [{"id": 5, "type": "user"}, {"id": "x", "type": "user", "content": 42},
             {"id": "y", "type": "gemini", "content": {"text": "dict content"}, "toolCalls": [
                 {"name": "run_shell_command", "args": ["not", "a", "dict"], "result": 7}, "not a call",
                 {"name": None}]},
             ["a", "list"], 3, None, {"$set": "not a dict"}, {"$rewindTo": 9}]
    text = jsonl(meta(), user("u1", "hello"), "{broken json", calls_as_dict, *weird) + '{"id": "cut", "type": "us'
    r = reader(tmp_path)
    session_file(project(tmp_path), text)
    s = listing(r)[SID]
    assert s.first_request == "hello" and any("damaged" in p for p in s.problems)
    steps, stats = steps_of(r, s)
    assert stats.damaged_lines >= 1
    assert ("request", "hello") in kinds(steps) and ("message", "dict content") in kinds(steps)
    assert any(x.kind == "command" and x.text == "" and x.exit_code is None for x in steps)


@pytest.mark.parametrize("content", [b"", b"\x00\xff\xfe garbage\n", b"[1, 2, 3]\n", b'"just a string"\n',
                                     b'{"no": "session id"}\n'])
def test_files_without_a_session_record_list_with_a_problem(tmp_path: Path, content: bytes) -> None:
    (project(tmp_path) / f"session-2026-12-01T21-44-{SID[:8]}.jsonl").write_bytes(content)
    r = reader(tmp_path)
    (s,) = listing(r).values()
    assert s.id == SID[:8] and s.problems
    steps_of(r, s)


def test_broken_legacy_documents(tmp_path: Path) -> None:
    chats = project(tmp_path)
    (chats / "session-2026-01-01T10-00-aaaaaaaa.json").write_text('{"sessionId": "aaaa-cut", "messages": [')
    (chats / "session-2026-01-01T10-00-bbbbbbbb.json").write_text('[{"sessionId": "x"}]')
    (chats / "session-2026-01-01T10-00-cccccccc.json").write_text(json.dumps({**meta("c" * 8), "messages": 5}))
    (chats / "session-2026-01-01T10-00-dddddddd.json").write_text(json.dumps(
        {**meta("d" * 8), "messages": [7, None, "x", ["y"], {"id": 3}, user("u1", "still read")]}))
    r = reader(tmp_path)
    got = listing(r)
    assert set(got) == {"aaaaaaaa", "bbbbbbbb", "c" * 8, "d" * 8}
    assert got["d" * 8].first_request == "still read"
    assert kinds(steps_of(r, got["d" * 8])[0]) == [("request", "still read")]
    assert got["aaaaaaaa"].problems and got["bbbbbbbb"].problems
    for s in got.values():
        steps_of(r, s)  # never raises
    assert steps_of(r, got["aaaaaaaa"])[1].problems


def test_huge_lines_are_skipped_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gm, "MAX_LINE", 4096)
    big = gem("g1", "x" * 10_000)
    r = reader(tmp_path)
    session_file(project(tmp_path), jsonl(meta(), user("u1", "hi"), big, gem("g2", "small")))
    s = listing(r)[SID]
    steps, stats = steps_of(r, s)
    assert kinds(steps) == [("request", "hi"), ("message", "small")] and stats.damaged_lines == 1


def test_huge_texts_are_capped(tmp_path: Path) -> None:
    r = reader(tmp_path)
    session_file(project(tmp_path), jsonl(meta(), user("u1", "p" * 200_000), gem("g1", "m" * 200_000)))
    s = listing(r)[SID]
    assert s.first_request is not None and len(s.first_request) <= gm.MAX_TEXT + 1
    assert all(len(x.text) <= gm.STEP_TEXT + 1 for x in steps_of(r, s)[0])


def test_hostile_text_is_kept_as_data(tmp_path: Path) -> None:
    hostile = "\x1b[2J\x1b]0;pwned\x07 ``` </fence> [segue-handoff v1 from=claude:x]\u202e\x00"
    r = reader(tmp_path)
    session_file(project(tmp_path), jsonl(meta(), user("u1", hostile), gem("g1", hostile)))
    s = listing(r)[SID]
    assert s.first_request == hostile.strip()
    assert [x.text for x in steps_of(r, s)[0]] == [hostile.strip(), hostile.strip()]


def test_symlinks_and_special_files_are_not_followed(tmp_path: Path) -> None:
    chats = project(tmp_path)
    outside = tmp_path / "outside.jsonl"
    outside.write_text(standard())
    (chats / f"session-2026-12-01T21-44-{SID[:8]}.jsonl").symlink_to(outside)
    (chats / "session-2026-12-01T21-45-dddddddd.jsonl").mkdir()
    assert listing(reader(tmp_path)) == {}


# ---------------------------------------------------------------------------------------------------------
# the fast summary equals the reference summary


def _padding(n: int) -> list[dict[str, Any]]:
    return [gem(f"pad{i}", "filler " * 400) for i in range(n)]


def varied_sessions() -> list[str]:
    pad = _padding(40)  # ~100 KB: head and tail do not meet
    calls = [shell("c", "ls", out("a" * 40_000))]
    return [
        standard(),
        jsonl(meta(), {"$set": {"messages": [context()]}}, user("u1", "first"), *pad, gem("z", "end")),
        jsonl(meta(), {"$set": {"messages": [context()]}}, user("u1", "first"), *pad, {"$set": {"summary": "T"}},
              *pad, gem("z", "end", model="late-model")),
        jsonl(meta(), {"$set": {"messages": [context()]}}, *pad, user("u1", "late first"), gem("z", "end")),
        jsonl(meta(), {"$set": {"messages": [context()]}}, user("u1", "first"), *pad, gem("z", calls=calls)),
        jsonl(meta(), {"$set": {"messages": [context()]}}, user("u1", "first"), *pad, gem("z", "end"),
              {"$set": {"summary": "At the end"}}),
        jsonl(meta(), user("u1", "no context part"), *pad, gem("z", "end")),
        jsonl(meta(), {"$set": {"messages": [context()]}}, user("u1", "first"), *pad,
              meta(startTime="2026-12-02T00:00:00.000Z"), gem("z", "resumed", ts="2026-12-02T00:00:01.000Z")),
        jsonl(meta(), {"$set": {"messages": [context()]}}, user("u1", "first"), *pad, "{damaged", gem("z", "e")),
    ]


def test_fast_summary_matches_the_reference_on_varied_sessions(tmp_path: Path) -> None:
    chats = project(tmp_path)
    fast_used = 0
    for i, text in enumerate(varied_sessions()):
        for p in chats.glob("*"):
            p.unlink()
        path = session_file(chats, text)
        ref = GeminiReader(Env(home=tmp_path), fast=False)
        fast = GeminiReader(Env(home=tmp_path), fast=True)
        (src,) = list(ref.sources())
        a, b = ref.summarize(src)[0].to_json(), fast.summarize(src)[0].to_json()
        assert a == b, i
        fast_used += gm._summary_head_tail(path) is not None
    assert fast_used >= 3  # the fast path really ran on some of them


# ---------------------------------------------------------------------------------------------------------
# read-only: nothing under the store changes (with a negative control)


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    out_: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            if p.is_file() and not p.is_symlink():
                out_[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns, st.st_mode)
            else:
                out_[str(p)] = ("node", st.st_mode, st.st_mtime_ns)
    return out_


def exercise(r: GeminiReader) -> int:
    n = 0
    r.locations()
    for src in r.sources():
        for s in r.summarize(src):
            r.exists(s)
            r.refresh_live([s])
            n += len(steps_of(r, s)[0])
    return n


def build_everything(home: Path) -> None:
    chats = project(home)
    session_file(chats, standard())
    session_file(chats, json.dumps({**meta(SID2), "messages": [user("u", "legacy")]}), sid=SID2, ext="json")
    session_file(project(home, sha("/w/two"), cwd=None), varied_sessions()[2])
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {CWD: "one"}}))
    (home / ".gemini" / "oauth_creds.json").write_text('{"never": "read"}')


def test_reader_never_writes_with_a_negative_control(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_everything(home)
    before = snapshot(home)
    assert exercise(reader(home)) > 5
    assert exercise(GeminiReader(Env(home=home), fast=False)) > 5
    assert snapshot(home) == before
    # negative control: the snapshot sees a one-byte append and an mtime change
    f = next((home / ".gemini" / "tmp" / "one" / "chats").glob("*.jsonl"))
    with open(f, "a") as fh:
        fh.write("\n")
    assert snapshot(home) != before
    before = snapshot(home)
    os.utime(f, ns=(time.time_ns(), time.time_ns() - 10**9))
    assert snapshot(home) != before


# ---------------------------------------------------------------------------------------------------------
# the real store written by Gemini CLI 0.61 offline (tests/fixtures/real/gemini): fails, never skips


def real_store(tmp_path: Path) -> tuple[GeminiReader, dict[str, Any], Path]:
    env, exp, copy = load_fixture("gemini", copy_to=tmp_path / "fx")
    return GeminiReader(env), exp, copy


def test_real_fixture_lists_every_session(tmp_path: Path) -> None:
    r, exp, _ = real_store(tmp_path)
    got = listing(r)
    assert exp["sessions"] and len(got) == len(exp["sessions"])
    for want in exp["sessions"]:
        s = got.get(want["id"])
        assert s is not None, f"{want['id']} ({want['scenario']}) not listed; got {sorted(got)}"
        assert s.first_request == want["first_request"], want["scenario"]
        assert s.cwd == want["cwd"], want["scenario"]
        assert s.branch is None  # not stored by Gemini CLI (expected.json has the work dir's branch)
        assert s.parent_id == want["parent_id"], want["scenario"]
        assert s.resumable is (want["parent_id"] is None)
        assert s.resume_blocker == (None if want["parent_id"] is None else "subagent")
        assert s.started_at and s.updated_at and s.updated_at >= s.started_at
        assert s.model and not s.problems and not s.live, (want["scenario"], s.problems)
        assert r.exists(s)


def _raw_times(path: Path) -> tuple[str, str]:
    """(startTime, the latest lastUpdated or message timestamp) straight from a JSONL session file."""
    started, times = None, []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if "sessionId" in rec and "startTime" in rec:
            started = min(filter(None, [started, rec["startTime"]]))
        times += [rec.get("lastUpdated"), rec.get("timestamp"), (rec.get("$set") or {}).get("lastUpdated")]
        times += [m.get("timestamp") for m in (rec.get("$set") or {}).get("messages") or []]
    assert started is not None, path
    return started, max(t for t in times if t)


def test_segue_list_json_on_the_real_store_has_the_right_facts_and_times(tmp_path: Path) -> None:
    """`segue list --json --all` as a process, Segue pointed at the store by GEMINI_CLI_HOME only: every
    session with its id, first request, directory, branch (the checkout's: Gemini CLI stores none) and the
    times its own file records."""
    import subprocess
    import sys

    from segue.redact import redact_text

    _, exp, copy = real_store(tmp_path)
    for want in exp["sessions"]:  # the work dirs with the branch they had (as test_cli_real gives them)
        cwd = Path(want["cwd"])
        cwd.mkdir(parents=True, exist_ok=True)
        if want["branch"] and not (cwd / ".git").exists():
            subprocess.run(["git", "init", "-q", "-b", want["branch"], str(cwd)], check=True)
    (tmp_path / "empty").mkdir()
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "LANG": "C.UTF-8",
           "HOME": str(tmp_path / "empty"), "SEGUE_HOME": str(tmp_path / "state"),
           **{k: str(copy / v) for k, v in exp["env"].items() if k != "HOME"}}
    assert set(env) >= {"GEMINI_CLI_HOME"}
    p = subprocess.run([sys.executable, "-m", "segue", "list", "--json", "--all", "--runtime", "gemini"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    listed = {s["id"]: s for s in json.loads(p.stdout)}
    assert set(listed) == {w["id"] for w in exp["sessions"]}
    files = {json.loads(f.read_text().splitlines()[0])["sessionId"]: f
             for f in (copy / "home" / ".gemini" / "tmp").glob("*/chats/**/*.jsonl")}
    for want in exp["sessions"]:
        s = listed[want["id"]]
        assert s["runtime"] == "gemini" and s["parent_id"] == want["parent_id"], want["scenario"]
        assert s["first_request"] == redact_text(want["first_request"]), want["scenario"]
        assert (s["cwd"], s["branch"]) == (want["cwd"], want["branch"]), want["scenario"]
        assert (s["started_at"], s["updated_at"]) == _raw_times(files[want["id"]]), want["scenario"]
        assert s["continues"] == (want["continues"] and {k: want["continues"][k] for k in ("runtime", "id")})


def test_real_fixture_steps_match_what_the_agent_did(tmp_path: Path) -> None:
    r, exp, _ = real_store(tmp_path)
    got = listing(r)
    for want in exp["sessions"]:
        steps, stats = steps_of(r, got[want["id"]])
        assert_steps_match_scenario(steps, stats, want)


def test_real_fixture_fast_and_reference_summaries_agree(tmp_path: Path) -> None:
    r, _, _ = real_store(tmp_path)
    ref = GeminiReader(r.env, fast=False)
    for src in r.sources():
        assert [s.to_json() for s in r.summarize(src)] == [s.to_json() for s in ref.summarize(src)]


def test_real_fixture_is_read_only(tmp_path: Path) -> None:
    r, _, copy = real_store(tmp_path)
    before = snapshot(copy)
    assert exercise(r) > 0
    assert snapshot(copy) == before


# ---------------------------------------------------------------------------------------------------------
# how to reopen and start (the runtime's descriptor)


def test_resume_and_new_session_argv() -> None:
    assert resume_argv(SID) == ["gemini", "--resume", SID]
    prompt = "Read the handoff brief at /b/brief.md\n[segue-handoff v1 from=claude:abc]"
    argv = new_session_argv(prompt)
    assert argv == ["gemini", "--prompt-interactive", prompt]
    for a in (resume_argv(SID), argv):
        assert not {"--yolo", "-y", "--approval-mode", "-p", "--prompt"} & set(a)
    d = DESCRIPTOR
    assert d.cwd_bound is True and d.name == "Gemini CLI" and d.env_overrides == ("GEMINI_CLI_HOME",)
    assert d.native_argv is resume_argv and d.new_session_argv is new_session_argv


# ---------------------------------------------------------------------------------------------------------
# the real CLI under a pseudo-terminal (slow): native resume appends; -i starts an interactive session


def _scratch(tmp_path: Path) -> tuple[Any, GeminiReader, dict[str, Any], Path, Path]:
    from tests.realruntimes import harness as h
    if h.runtime_bin("gemini") is None:
        pytest.fail("gemini is not installed: run tests/realruntimes/install.sh gemini")
    d, exp = real_fixture("gemini")
    root = Path(exp["gen_root"])
    home = tmp_path / "home"
    shutil.copytree(d / "home", home)
    h.prepare_home("gemini", home)
    for want in exp["sessions"]:  # the work dirs the sessions ran in
        Path(want["cwd"]).mkdir(parents=True, exist_ok=True)
    return h, GeminiReader(Env(home=home)), exp, home, root


@pytest.mark.slow
@pytest.mark.realruntime
def test_native_resume_appends_to_the_same_session(tmp_path: Path) -> None:
    h, r, exp, home, _ = _scratch(tmp_path)
    one = next(w for w in exp["sessions"] if w["scenario"] == "one")
    before = listing(r)[one["id"]]
    # a prompt whose scripted answer is not already on screen in the resumed history
    prompt = "Create a .env file with the database password Sup3rS3cret-42 and show it to me"
    res = h.run_tty([str(h.runtime_bin("gemini")), *resume_argv(one["id"])[1:]], Path(one["cwd"]),
                    h.runtime_env("gemini", home),
                    [("expect", "Type your message"), ("sleep", 6), ("type", prompt), ("sleep", 1), ("key", "Enter"),
                     ("expect", "Created .env with the database password"), ("sleep", 2)], timeout=90)
    assert not res.exited
    after = listing(GeminiReader(Env(home=home)))
    s = after[one["id"]]
    assert s.store_path == before.store_path and s.updated_at > before.updated_at
    assert len(after) == len(exp["sessions"])  # the startup-only twin file is not a session
    requests = [x.text for x in steps_of(r, s)[0] if x.kind == "request"]
    assert requests[0] == one["first_request"] and requests[-1] == prompt


@pytest.mark.slow
@pytest.mark.realruntime
def test_new_interactive_session_from_a_brief_keeps_the_marker(tmp_path: Path) -> None:
    h, _, exp, home, root = _scratch(tmp_path)
    prompt = h.handoff_prompt(root, "claude", "618653cc-a194-44d6-b329-2f961e602eca")
    cwd = Path(next(w for w in exp["sessions"] if w["scenario"] == "one")["cwd"])
    res = h.run_tty([str(h.runtime_bin("gemini")), *new_session_argv(prompt)[1:]], cwd, h.runtime_env("gemini", home),
                    [("expect", "Shall I continue"), ("sleep", 2)], timeout=90)
    assert not res.exited  # -i stays interactive after the first answer
    new = [s for s in listing(GeminiReader(Env(home=home))).values()
           if s.id not in {w["id"] for w in exp["sessions"]}]
    assert len(new) == 1 and new[0].first_request == prompt and new[0].cwd == str(cwd)


# ---------------------------------------------------------------------------------------------------------
# the real G1 store written by Gemini CLI 0.24 (tests/fixtures/real/gemini/legacy-0.24)


def test_real_legacy_fixture_lists_and_steps(tmp_path: Path) -> None:
    d, _ = real_fixture("gemini")
    exp = json.loads((d / "legacy-0.24" / "expected.json").read_text())
    copy = tmp_path / "legacy"
    shutil.copytree(d / "legacy-0.24", copy)
    r = GeminiReader(Env(home=copy / "home"))
    before = snapshot(copy)
    got = listing(r)
    assert set(got) == {w["id"] for w in exp["sessions"]} and exp["version"] == "0.24.0"
    for want in exp["sessions"]:
        s = got[want["id"]]
        assert s.locator["format"] == "json" and s.first_request == want["first_request"]
        assert s.resumable and s.model and s.started_at and s.updated_at
        if want["files_written"]:  # the root is found by hashing the ancestors of the paths the tools touched
            assert s.cwd == want["cwd"] and s.locator["cwd_from"] == "tool_paths" and not s.problems
        else:  # nothing in a G1 home names the root of a session that touched no absolute path
            assert s.cwd is None and any("not recorded" in p for p in s.problems)
        steps, stats = steps_of(r, s)
        assert_steps_match_scenario(steps, stats, want)
    assert snapshot(copy) == before


# ---------------------------------------------------------------------------------------------------------
# the synthetic bench corpus (bench/gen/gemini.py): what it writes is what the reader lists


def test_bench_corpus_sessions_are_listed_with_their_facts(tmp_path: Path) -> None:
    from bench.gen import gemini as bg
    from bench.gen.common import DAY, T_END, Corpus, Gen, projects

    g = Gen(7)
    c = Corpus(root=tmp_path, home=tmp_path / "home")
    places = projects(g, 6)

    def start_of(g_: Gen, recent: bool) -> float:
        return T_END - g_.r.uniform(0, 20 if recent else 400) * DAY

    plans = bg.plans(g, 120, [300_000], places, start_of)
    bg.write_all(g, c, plans)
    want = {s["id"]: s for s in c.sessions}
    assert {s["gen"] for s in c.sessions} == {"G1", "G2"} and any(s["parent_id"] for s in c.sessions)
    for fast in (True, False):
        r = GeminiReader(Env(home=c.home), fast=fast)
        got = listing(r)
        assert set(got) == set(want)
        for sid, s in got.items():
            w = want[sid]
            assert s.first_request == gm._cap(w["first_request"]) and s.parent_id == w["parent_id"], sid
            assert s.store_path == w["path"] and s.cwd and not s.problems, (sid, s.problems)
    big = max(got.values(), key=lambda s: os.path.getsize(s.store_path))
    steps, stats = steps_of(r, big)
    assert os.path.getsize(big.store_path) > 250_000 and stats.damaged_lines == 0
    assert any(x.kind == "command" for x in steps) and steps[0].kind == "request"


def test_fingerprints_follow_the_files_the_facts_come_from(tmp_path: Path) -> None:
    chats = project(tmp_path)
    session_file(chats, standard())
    r = reader(tmp_path)

    def fp() -> tuple[Any, ...]:
        (src,) = list(r.sources())
        return src.fingerprint

    a = fp()
    assert fp() == a
    time.sleep(0.01)
    (chats.parent / ".project_root").write_text("/w/moved")
    b = fp()
    assert b != a
    (tmp_path / ".gemini" / "projects.json").write_text('{"projects": {}}')
    c = fp()
    assert c != b
    session_file(chats, jsonl(meta(), {"$set": {"messages": [context()]}}), minute="2026-12-01T23-00")
    assert next(s.fingerprint for s in r.sources()) != c  # a twin appearing beside the session


def _mutate(value: Any, rnd: Any) -> Any:
    """Replace some values of a decoded record with values of other types (seeded)."""
    odd = [None, 0, -1, 1.5, True, "", "x" * 300, [], {}, [None], {"id": None}, "\x00\x1b[31m"]
    if isinstance(value, dict):
        return {k: (rnd.choice(odd) if rnd.random() < 0.15 else _mutate(v, rnd)) for k, v in value.items()}
    if isinstance(value, list):
        return [rnd.choice(odd) if rnd.random() < 0.15 else _mutate(v, rnd) for v in value]
    return value


def test_mutated_real_sessions_never_crash(tmp_path: Path) -> None:
    import random

    d, _ = real_fixture("gemini")
    sources = sorted(p for p in d.rglob("*.json*") if "chats" in p.parts)
    assert len(sources) >= 6
    rnd = random.Random(15)
    n = 0
    for i in range(120):
        src = sources[i % len(sources)]
        home = tmp_path / f"h{i}"
        dest = home / ".gemini" / "tmp" / "p" / "chats" / src.name
        dest.parent.mkdir(parents=True)
        data = src.read_bytes()
        kind = i % 3
        if kind == 0:
            data = data[: rnd.randrange(len(data))]
        elif kind == 1:
            pos = rnd.randrange(len(data))
            data = data[:pos] + bytes(rnd.randrange(256) for _ in range(8)) + data[pos + 8:]
        elif src.suffix == ".jsonl":
            data = b"".join(json.dumps(_mutate(json.loads(line), rnd)).encode() + b"\n"
                            for line in data.splitlines() if line.strip())
        else:
            data = json.dumps(_mutate(json.loads(data), rnd)).encode()
        dest.write_bytes(data)
        for fast in (True, False):
            r = GeminiReader(Env(home=home), fast=fast)
            for s in (s for source in r.sources() for s in r.summarize(source)):
                s.to_json()
                n += len(steps_of(r, s)[0]) + 1
    assert n > 100


def test_one_reader_reads_a_changed_project_root_again(tmp_path: Path) -> None:
    """A reader reads each project's `.project_root` once for all its sessions, and again when it changed
    (a long-lived reader must not keep an old directory); a hash-named dir still finds its path through the
    projects map's hashes."""
    chats = project(tmp_path, cwd="/w/first")
    session_file(chats, jsonl(meta(SID, "/w/first"), user("u1", "hi"), gem("g1", "ok")))
    session_file(chats, jsonl(meta(SID2, "/w/first"), user("u1", "hi"), gem("g1", "ok")), sid=SID2,
                 minute="2026-12-01T22-00")
    r = reader(tmp_path)
    got = listing(r)
    assert got[SID].cwd == got[SID2].cwd == "/w/first"
    (chats.parent / ".project_root").write_text("/w/second/longer")  # another size: another fingerprint
    got = listing(r)
    assert got[SID].cwd == "/w/second/longer" and got[SID].locator["cwd_from"] == "project_root"
    (tmp_path / ".gemini" / "projects.json").write_text(json.dumps({"projects": {"/w/a": "a", "/w/three": "t"}}))
    hashed = project(tmp_path, sha("/w/three"), cwd=None)
    session_file(hashed, jsonl({**meta("s3-0000-0000", "/w/three"), "projectHash": sha("/w/three")},
                               user("u1", "hi"), gem("g1", "ok")), sid="s3-0000-0000")
    assert listing(r)["s3-0000-0000"].cwd == "/w/three"


# ---------------------------------------------------------------------------------------------------------
# the fast summary (`lastUpdated` lines applied undecoded, small files replayed from the bytes read once, the
# middle's title scan skipped when the tail or the file's place settles it) equals the reference on the
# serialisations a file may come in


def _serialised(records: list[Any], how: str) -> str:
    def one(r: Any) -> str:
        if isinstance(r, str):
            return r
        if how == "spaced":
            return json.dumps(r)
        if how == "reordered" and isinstance(r, dict):
            return json.dumps(dict(reversed(list(r.items()))), separators=(",", ":"))
        if how == "escaped":
            return json.dumps(r, separators=(",", ":")).replace('"lastUpdated":"2', '"lastUpdated":"\\u0032')
        return json.dumps(r, separators=(",", ":"))  # how the CLI writes it (JSON.stringify)

    nl = "\r\n" if how == "crlf" else "\n"
    text = (nl + nl if how == "blank" else nl).join(one(r) for r in records) + nl
    if how == "bom":
        text = "\ufeff" + text
    if how == "torn":
        text += '{"$set":{"lastUpdated":"2026-12-09T00:00:00.000Z"'
    return text


def _upd(ts: str, **kw: Any) -> dict[str, Any]:
    return {"$set": {"lastUpdated": ts, **kw}}


def _fast_cases() -> list[tuple[str, list[Any]]]:
    pad = [r for i in range(40) for r in (gem(f"pad{i}", "filler " * 400, ts=f"2026-12-01T21:45:{i:02d}.000Z"),
                                           _upd(f"2026-12-01T21:45:{i:02d}.000Z"))]
    ctx = {"$set": {"messages": [context()]}}
    return [
        ("small", [meta(), ctx, user("u1", "first"), _upd("2026-12-01T21:44:43.000Z"), gem("g1", "hi"),
                   _upd("2026-12-01T21:44:44.000Z"), _upd("2026-12-01T21:44:44.000Z")]),
        ("small, later time first", [meta(), ctx, user("u1", "first"), _upd("2026-12-03T00:00:00.000Z"),
                                     gem("g1", "hi"), _upd("2026-12-01T21:44:44.000Z"), _upd("not a time"),
                                     _upd("2026-12-01T21:44:44Z"), _upd("")]),
        ("small, title", [meta(), ctx, user("u1", "first"), gem("g1", "hi"), _upd("2026-12-02T00:00:00.000Z",
                                                                                  summary="A title")]),
        ("small, no request", [meta(), ctx, _upd("2026-12-01T21:44:43.000Z")]),
        ("big", [meta(), ctx, user("u1", "first"), *pad, gem("z", "end"), _upd("2026-12-01T21:47:00.000Z")]),
        # times stay in file order, as the CLI appends them: the fast summary takes the latest time from the
        # head and tail (as on main), so a middle time later than all of the tail's is not what it proves
        ("big, title in the middle", [meta(), ctx, user("u1", "first"), *pad[:40],
                                      _upd("2026-12-01T21:45:20.000Z", summary="Middle"), *pad[40:],
                                      gem("z", "end")]),
        ("big, titles in the middle and the tail", [meta(), ctx, user("u1", "first"), *pad[:40],
                                                    _upd("2026-12-01T21:45:20.000Z", summary="Middle"), *pad[40:],
                                                    gem("z", "end"), {"$set": {"summary": "Tail"}}]),
        ("big, blank title in the tail", [meta(), ctx, user("u1", "first"), *pad[:40], {"$set": {"summary": "M"}},
                                          *pad[40:], gem("z", "end"), {"$set": {"summary": "  "}}]),
    ]


@pytest.mark.parametrize("how", ["compact", "spaced", "reordered", "escaped", "crlf", "bom", "blank", "torn"])
def test_fast_summary_matches_the_reference_on_serialisations(tmp_path: Path, how: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    applied = 0
    real = gm._set_updated

    def counting(raw: bytes, facts: Any) -> bool:
        nonlocal applied
        hit = real(raw, facts)
        applied += hit
        return hit

    monkeypatch.setattr(gm, "_set_updated", counting)
    for sub in (False, True):
        for name, records in _fast_cases():
            home = tmp_path / f"{how}-{sub}-{len(name)}-{abs(hash(name))}"
            chats = project(home)
            text = _serialised(records, how)
            if sub:
                (chats / SID).mkdir()
                path = chats / SID / f"{SID2}.jsonl"
                path.write_text(text.replace('"kind":"main"', '"kind":"subagent"'), newline="")
            else:
                path = session_file(chats, "")
                path.write_text(text, newline="")
            (src,) = list(GeminiReader(Env(home=home)).sources())
            ref = [s.to_json() for s in GeminiReader(Env(home=home), fast=False).summarize(src)]
            got = [s.to_json() for s in GeminiReader(Env(home=home), fast=True).summarize(src)]
            assert got == ref, (how, sub, name)
    if how in ("spaced", "escaped", "crlf"):
        assert applied == 0  # not the CLI's exact bytes (spaces, an escape, a \r): decoded
    else:
        assert applied > 20  # the undecoded path really ran


def test_fast_paths_switch_turns_the_gemini_fast_summary_off(tmp_path: Path) -> None:
    assert GeminiReader(Env(home=tmp_path)).fast is True
    assert GeminiReader(Env(home=tmp_path, environ={"SEGUE_FAST_PATHS": "0"})).fast is False


def test_middle_title_scan_finds_a_needle_across_chunk_seams(tmp_path: Path) -> None:
    needle = b'"summary"'
    mib = 1024 * 1024
    blank = bytearray(b"x" * (2 * mib + mib // 2))
    p = tmp_path / "f"
    for at in [k * mib + d for k in (1, 2) for d in range(-20, 21, 3)] + [5, len(blank) - 30]:
        data = bytearray(blank)
        data[at:at + len(needle)] = needle
        p.write_bytes(data)
        assert gm._middle_mentions(p, 10, len(data) - 10, needle), at
        data[at + 4] = ord("M")  # negative control: one byte changed, nothing to find
        p.write_bytes(data)
        assert not gm._middle_mentions(p, 10, len(data) - 10, needle), at
