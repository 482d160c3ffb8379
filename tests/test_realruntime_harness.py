"""The real-runtime harness itself: the fake model's streams, and the committed fixtures vs expected.json.

These check the test infrastructure (not Segue): that each API dialect answers with a well-formed stream
playing the scenario, and that every session expected.json names really is in the committed store.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.realruntimes import fakemodel
from tests.realruntimes import harness as h

SESSION_KEYS = {"id", "parent_id", "scenario", "first_request", "latest_request", "cwd", "branch",
                "commands", "files_written", "subagent_ids", "continues"}
CREDENTIALS = {"auth.json", ".credentials.json", "providers.json", "secrets.json"}
PARTNER = {"claude": "codex", "codex": "claude", "opencode": "cline", "cline": "opencode",
           "gemini": "claude"}  # Gemini continues the Claude fixture's `one` session (no pair)


# ---------------------------------------------------------------- fake model

@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    srv, port = fakemodel.start(0)
    yield f"http://127.0.0.1:{port}"
    srv.shutdown()


def post(base: str, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def sse(raw: bytes) -> list[tuple[str | None, Any]]:
    """(event, data) per SSE frame; data is parsed JSON unless it is [DONE]."""
    frames = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        event, data = None, []
        for line in block.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        text = "\n".join(data)
        frames.append((event, text if text == "[DONE]" else json.loads(text)))
    return frames


CLAUDE_TOOLS = [{"name": n, "input_schema": {}} for n in ("Agent", "Bash", "Read", "Write")]


def claude_req(*messages: dict[str, Any], tools: list[dict[str, Any]] = CLAUDE_TOOLS) -> dict[str, Any]:
    return {"model": "fake-model", "stream": True, "tools": tools,
            "system": [{"type": "text", "text": "You are Claude Code.\n - Primary working directory: /w/one"}],
            "messages": [*messages, {"role": "system", "content": "Available agent types for the Agent tool"}]}


def prompt_msg(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nsubagent context, ignore\n</system-reminder>\n"},
        {"type": "text", "text": text}]}


def tool_turn(tid: str, result: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": result}]}]


def anthropic_blocks(raw: bytes) -> tuple[list[dict[str, Any]], str]:
    """Rebuild the content blocks and stop_reason from an Anthropic stream, checking its grammar."""
    frames = sse(raw)
    assert frames[0][0] == "message_start" and frames[-1][0] == "message_stop"
    assert all(isinstance(d, dict) and d["type"] == e for e, d in frames)
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    stop = ""
    for event, d in frames:
        if event == "content_block_start":
            blocks[d["index"]] = dict(d["content_block"])
        elif event == "content_block_delta":
            delta = d["delta"]
            if delta["type"] == "text_delta":
                blocks[d["index"]]["text"] += delta["text"]
            else:
                partial[d["index"]] = partial.get(d["index"], "") + delta["partial_json"]
        elif event == "content_block_stop":
            if d["index"] in partial:
                blocks[d["index"]]["input"] = json.loads(partial[d["index"]])
        elif event == "message_delta":
            stop = d["delta"]["stop_reason"]
    return [blocks[i] for i in sorted(blocks)], stop


def test_anthropic_plays_the_one_scenario(server: str) -> None:
    status, ctype, raw = post(server, "/v1/messages?beta=true",
                              claude_req(prompt_msg("Please run `echo hello > out.txt && ls` for me")))
    assert status == 200 and ctype == "text/event-stream"
    blocks, stop = anthropic_blocks(raw)
    assert stop == "tool_use" and len(blocks) == 1
    assert blocks[0]["type"] == "tool_use" and blocks[0]["name"] == "Bash"
    assert blocks[0]["input"]["command"] == "echo hello > out.txt && ls"
    assert blocks[0]["id"].startswith("toolu_")

    _, _, raw = post(server, "/v1/messages", claude_req(
        prompt_msg("Please run `echo hello > out.txt && ls` for me"), *tool_turn("toolu_1", "README.md")))
    blocks, stop = anthropic_blocks(raw)
    assert stop == "end_turn"
    assert blocks == [{"type": "text", "text": "Done. I created out.txt and listed the directory."}]


def test_anthropic_write_is_absolute_and_latest_prompt_wins(server: str) -> None:
    first = [prompt_msg("Please run `echo hello > out.txt && ls` for me"), *tool_turn("toolu_1", "ok"),
             {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}]
    _, _, raw = post(server, "/v1/messages", claude_req(
        *first, prompt_msg("Now list /nonexistent-dir and write what happened to notes.md"),
        *tool_turn("toolu_2", "Exit code 2")))
    blocks, _ = anthropic_blocks(raw)
    assert blocks[0]["name"] == "Write"
    assert blocks[0]["input"]["file_path"] == "/w/one/notes.md"
    assert "does not exist" in blocks[0]["input"]["content"]


def test_anthropic_agent_json_title_and_non_stream(server: str) -> None:
    _, _, raw = post(server, "/v1/messages", claude_req(prompt_msg("Use a subagent to count the files")))
    blocks, _ = anthropic_blocks(raw)
    assert blocks[0]["name"] == "Agent" and blocks[0]["input"]["subagent_type"] == "general-purpose"
    assert "Count the files here" in blocks[0]["input"]["prompt"]

    title = claude_req(prompt_msg("<session>hi</session>"), tools=[])
    title["output_config"] = {"format": {"type": "json_schema", "schema": {
        "type": "object", "properties": {"title": {"type": "string"}}}}}
    blocks, _ = anthropic_blocks(post(server, "/v1/messages", title)[2])
    assert json.loads(blocks[0]["text"]) == {"title": "Fake title"}

    plain = {**claude_req(prompt_msg("hello there")), "stream": False}
    status, ctype, raw = post(server, "/v1/messages", plain)
    msg = json.loads(raw)
    assert status == 200 and ctype == "application/json"
    assert msg["type"] == "message" and msg["content"] == [{"type": "text", "text": "OK."}]

    status, _, raw = post(server, "/v1/messages/count_tokens", plain)
    assert status == 200 and json.loads(raw)["input_tokens"] > 0


CODEX_TOOLS = [{"type": "function", "name": "exec_command"}, {"type": "function", "name": "write_stdin"},
               {"type": "namespace", "name": "multi_agent_v1",
                "tools": [{"type": "function", "name": "spawn_agent"}, {"type": "function", "name": "wait_agent"}]}]


def codex_req(prompt: str, *items: dict[str, Any]) -> dict[str, Any]:
    def msg(role: str, text: str) -> dict[str, Any]:
        return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}
    return {"model": "fake-model", "stream": True, "tools": CODEX_TOOLS, "input": [
        msg("developer", "You are a coding agent running in the Codex CLI."),
        msg("user", "<environment_context>\n  <cwd>/w/sub</cwd>\n</environment_context>"),
        msg("user", prompt), *items]}


def responses_item(raw: bytes) -> dict[str, Any]:
    frames = sse(raw)
    events = [e for e, _ in frames]
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert "response.output_item.done" in events
    assert all(isinstance(d, dict) and d["type"] == e for e, d in frames)
    done = [d["item"] for e, d in frames if e == "response.output_item.done"]
    assert frames[-1][1]["response"]["output"] == done and frames[-1][1]["response"]["usage"]["total_tokens"] > 0
    return done[0]


def call_output(call_id: str, name: str, output: str) -> list[dict[str, Any]]:
    return [{"type": "function_call", "name": name, "call_id": call_id, "arguments": "{}"},
            {"type": "function_call_output", "call_id": call_id, "output": output}]


def test_responses_plays_the_sub_scenario(server: str) -> None:
    prompt = "Use a subagent to count the files in this directory"
    status, ctype, raw = post(server, "/v1/responses", codex_req(prompt))
    assert status == 200 and ctype == "text/event-stream"
    item = responses_item(raw)
    assert item["type"] == "function_call" and item["name"] == "spawn_agent"
    assert item["namespace"] == "multi_agent_v1" and "Count the files here" in json.loads(item["arguments"])["message"]

    spawned = call_output("c1", "spawn_agent", '{"agent_id":"child-1","nickname":"Ada"}')
    item = responses_item(post(server, "/v1/responses", codex_req(prompt, *spawned))[2])
    assert item["name"] == "wait_agent" and json.loads(item["arguments"])["targets"] == ["child-1"]

    waited = call_output("c2", "wait_agent", '{"status":{"child-1":{"completed":"1"}}}')
    item = responses_item(post(server, "/v1/responses", codex_req(prompt, *spawned, *waited))[2])
    assert item["type"] == "message" and item["content"][0]["text"] == "The subagent counted the files."


def test_responses_commands_and_heredoc_write(server: str) -> None:
    item = responses_item(post(server, "/v1/responses", codex_req("Count the files here with ls"))[2])
    assert json.loads(item["arguments"]) == {"cmd": "ls | wc -l"}
    prompt = "Now list /nonexistent-dir and write what happened to notes.md"
    failed = call_output("c1", "exec_command", "Process exited with code 2\nOutput:\n")
    item = responses_item(post(server, "/v1/responses", codex_req(prompt, *failed))[2])
    cmd = json.loads(item["arguments"])["cmd"]
    assert item["name"] == "exec_command" and cmd.startswith("cat > notes.md <<'SEGUE_EOF'\n")
    assert cmd.endswith("\nSEGUE_EOF")


def test_chat_completions_is_delegated(server: str) -> None:
    body = {"model": "fake-model", "stream": True,
            "tools": [{"type": "function", "function": {"name": n}} for n in ("bash", "write", "task")],
            "messages": [{"role": "user", "content": "Please run `echo hello > out.txt && ls` for me"}]}
    status, _, raw = post(server, "/v1/chat/completions", body)
    assert status == 200, raw[:500]
    frames = sse(raw)
    assert frames[-1][1] == "[DONE]"
    calls = [tc for _, d in frames[:-1] for c in d.get("choices", [])
             for tc in (c.get("delta") or {}).get("tool_calls") or []]
    names = [tc["function"]["name"] for tc in calls if (tc.get("function") or {}).get("name")]
    assert names == ["bash"]
    args = "".join((tc.get("function") or {}).get("arguments") or "" for tc in calls)
    assert "echo hello > out.txt" in json.loads(args)["command"]


def test_other_routes_are_harmless(server: str) -> None:
    with urllib.request.urlopen(server + "/v1/models", timeout=5) as r:
        assert r.status == 200 and isinstance(json.loads(r.read()), dict)
    assert post(server, "/v1/unknown", {})[0] == 404


# ---------------------------------------------------------------- committed fixtures

def fixture_runtimes() -> list[str]:
    return sorted(p.name for p in h.FIXTURES.iterdir() if (p / "expected.json").is_file()) \
        if h.FIXTURES.is_dir() else []


def load(rt: str) -> dict[str, Any]:
    return json.loads((h.FIXTURES / rt / "expected.json").read_text())


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("rt", ["claude", "codex"])
def test_my_fixtures_exist(rt: str) -> None:
    assert rt in fixture_runtimes(), f"tests/fixtures/real/{rt} missing: python -m tests.realruntimes.generate {rt}"


@pytest.mark.parametrize("rt", fixture_runtimes())
def test_expected_json_shape(rt: str) -> None:
    doc = load(rt)
    fx = h.FIXTURES / rt
    assert doc["runtime"] == rt and doc["version"] and doc["gen_root"] == f"/tmp/segue-fx/{rt}"
    assert doc["env"].get("HOME") == "home"
    for rel in doc["env"].values():
        assert (fx / rel).is_dir(), rel
    ids = [s["id"] for s in doc["sessions"]]
    assert len(ids) == len(set(ids))
    by_id = {s["id"]: s for s in doc["sessions"]}
    assert {s["scenario"] for s in doc["sessions"]} >= {"one", "sub", "secret", "continued"}
    for s in doc["sessions"]:
        assert set(s) >= SESSION_KEYS, s["id"]
        assert s["cwd"].startswith(doc["gen_root"] + "/work/")
        assert all(set(c) == {"command", "exit_code"} for c in s["commands"])
        assert all(p.startswith("/") for p in s["files_written"])
        for child in s["subagent_ids"]:
            assert by_id[child]["parent_id"] == s["id"]
        if s["parent_id"]:
            assert s["id"] in by_id[s["parent_id"]]["subagent_ids"]
    one = next(s for s in doc["sessions"] if s["scenario"] == "one")
    assert {"command": "ls /nonexistent-dir", "exit_code": 2} in one["commands"]
    assert one["branch"] == f"feature/{rt}-one" and one["latest_request"] != one["first_request"]
    secret = next(s for s in doc["sessions"] if s["scenario"] == "secret")
    assert secret["branch"] is None


@pytest.mark.parametrize("rt", fixture_runtimes())
def test_fixture_is_pruned(rt: str) -> None:
    files = [p for p in (h.FIXTURES / rt).rglob("*") if p.is_file()]
    assert not [p for p in files if p.name in CREDENTIALS]
    assert not [p for p in files if "node_modules" in p.parts]
    assert sum(p.stat().st_size for p in files) < 1_500_000


@pytest.mark.parametrize("rt", fixture_runtimes())
def test_continued_names_the_partners_one_session(rt: str) -> None:
    doc = load(rt)
    cont = next(s for s in doc["sessions"] if s["scenario"] == "continued")
    partner = PARTNER[rt]
    assert cont["continues"]["runtime"] == partner
    assert cont["first_request"].endswith(f"\n[segue-handoff v1 from={partner}:{cont['continues']['id']}]")
    if partner in fixture_runtimes():
        partner_one = next(s for s in load(partner)["sessions"] if s["scenario"] == "one")
        assert cont["continues"]["id"] == partner_one["id"]


def test_claude_fixture_sessions_are_in_the_store() -> None:
    doc = load("claude")
    projects = h.FIXTURES / "claude" / doc["env"]["CLAUDE_CONFIG_DIR"] / "projects"
    for s in doc["sessions"]:
        if s["parent_id"]:
            found = list(projects.glob(f"*/{s['parent_id']}/subagents/agent-{s['id']}.jsonl"))
        else:
            found = list(projects.glob(f"*/{s['id']}.jsonl"))
        assert len(found) == 1, s["id"]
        records = jsonl(found[0])
        prompts = [r for r in records if r.get("type") == "user" and isinstance(r["message"]["content"], str)]
        assert prompts[0]["message"]["content"] == s["first_request"]
        assert prompts[-1]["message"]["content"] == s["latest_request"]
        assert prompts[0]["cwd"] == s["cwd"]
        # outside a repo Claude 2.1.197 records "HEAD" (as for a detached HEAD), not ""
        assert prompts[0]["gitBranch"] == s["branch"] if s["branch"] else prompts[0]["gitBranch"] in ("", "HEAD")
        assert prompts[0]["sessionId"] == (s["parent_id"] or s["id"])  # subagents carry the parent's id
        ran = [b["input"]["command"] for r in records if r.get("type") == "assistant"
               for b in r["message"]["content"] if b.get("type") == "tool_use" and b["name"] == "Bash"]
        assert ran == [c["command"] for c in s["commands"]]


def test_codex_fixture_sessions_are_in_the_store() -> None:
    doc = load("codex")
    sessions = h.FIXTURES / "codex" / doc["env"]["CODEX_HOME"] / "sessions"
    for s in doc["sessions"]:
        found = list(sessions.rglob(f"rollout-*-{s['id']}.jsonl"))
        assert len(found) == 1, s["id"]
        records = jsonl(found[0])
        meta = records[0]["payload"]
        assert records[0]["type"] == "session_meta" and meta["id"] == s["id"]
        assert meta["cwd"] == s["cwd"]
        assert (meta.get("git") or {}).get("branch") == s["branch"]
        assert meta.get("parent_thread_id") == s["parent_id"]
        asked = [i["item"]["content"][0]["text"] for i in (r["payload"] for r in records)
                 if i.get("type") == "item_completed" and i["item"]["type"] == "UserMessage"]
        assert asked[0] == s["first_request"] and asked[-1] == s["latest_request"]
        ran = [(i["item"]["command"][-1], i["item"]["exit_code"]) for i in (r["payload"] for r in records)
               if i.get("type") == "item_completed" and i["item"]["type"] == "CommandExecution"]
        assert ran == [(c["command"], c["exit_code"]) for c in s["commands"]]


def _threads(db_dir: Path, with_wal: bool) -> set[str]:
    if not with_wal:  # the main file alone, as a rollback-journal database
        data = bytearray((db_dir / "state_5.sqlite").read_bytes())
        data[18:20] = b"\x01\x01"
        (db_dir / "state_5.sqlite").write_bytes(bytes(data))
        for side in ("-wal", "-shm"):
            (db_dir / f"state_5.sqlite{side}").unlink()
    con = sqlite3.connect(db_dir / "state_5.sqlite")
    try:
        return {r[0] for r in con.execute("SELECT id FROM threads")}
    finally:
        con.close()


def test_codex_live_capture_has_rows_only_in_its_wal(tmp_path: Path) -> None:
    live = h.FIXTURES / "codex" / "live-capture" / "home" / ".codex"
    assert (live / "state_5.sqlite-wal").stat().st_size > 0 and (live / "state_5.sqlite-shm").is_file()
    for name in ("full", "main"):
        shutil.copytree(live, tmp_path / name)
    full, main = _threads(tmp_path / "full", True), _threads(tmp_path / "main", False)
    secret = next(s["id"] for s in load("codex")["sessions"] if s["scenario"] == "secret")
    assert secret in full and secret not in main and main < full


# ---------------------------------------------------------------- interactive resume (real runtimes)

def _tty_ready(rt: str) -> str | None:
    if h.runtime_bin(rt) is None:
        return f"{rt} not installed (tests/realruntimes/install.sh {rt})"
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("tmux"):
        return "needs root, unshare and tmux for a loopback-only namespace and a pseudo-terminal"
    return None


@pytest.mark.slow
@pytest.mark.realruntime
@pytest.mark.parametrize("rt", ["claude", "codex"])
def test_tui_resume_appends_to_the_same_session(rt: str, tmp_path: Path) -> None:
    if (why := _tty_ready(rt)) is not None:
        pytest.skip(why)
    one = next(s for s in load(rt)["sessions"] if s["scenario"] == "one")
    cwd = Path(one["cwd"])
    if not cwd.is_dir():  # Claude finds a session only from its recorded cwd
        h.make_git_repo(cwd, one["branch"])
    home = h.scratch_home(rt, h.FIXTURES / rt / "home", tmp_path / "home", trusted=[cwd])
    argv = ["--resume", one["id"]] if rt == "claude" else ["resume", one["id"]]
    prompt = f"Say OK to the {rt} resume test"
    result = h.run_tty([str(h.runtime_bin(rt)), *argv], cwd, h.runtime_env(rt, home),
                       h.tui_turn(rt, prompt, "OK."), timeout=60)
    assert result.exited, result.final[-2000:]
    pattern = f"*{one['id']}.jsonl" if rt == "claude" else f"rollout-*-{one['id']}.jsonl"
    files = list(home.rglob(pattern))
    assert len(files) == 1 and prompt in files[0].read_text()
    before = next((h.FIXTURES / rt / "home").rglob(pattern)).read_text()
    assert files[0].read_text().startswith(before)  # appended, the old records untouched
    assert prompt not in before


PROBE = """
import json, socket, sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%d/v1/models", timeout=5) as r:
    assert r.status == 200
try:
    socket.create_connection(("192.0.2.1", 80), timeout=3)
    sys.exit("reached a non-loopback address")
except OSError as e:
    print("blocked:", e.errno)
print(json.dumps(sorted(l.split(":")[0].strip() for l in open("/proc/self/net/dev").readlines()[2:])))
"""


@pytest.mark.slow
@pytest.mark.realruntime
def test_run_offline_reaches_only_the_fake_model(tmp_path: Path) -> None:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare for a loopback-only namespace")
    port = 18099
    r = h.run_offline([sys.executable, "-c", PROBE % port], tmp_path, h.minimal_env(tmp_path), timeout=60,
                      port=port)
    assert r.returncode == 0, r.stderr
    assert "blocked:" in r.stdout and r.stdout.strip().endswith('["lo"]')
