"""Generate the Gemini CLI fixture (tests/fixtures/real/gemini) with the real CLI, offline.

Gemini CLI 0.61 records each session as JSONL under `~/.gemini/tmp/<project slug>/chats/`
(`session-<YYYY-MM-DDTHH-MM>-<first 8 of the id>.jsonl`); a subagent gets `chats/<parent id>/<agent id>.jsonl`.
`gemini -p PROMPT --output-format json` prints `{"session_id": …, "response": …}`; the second turn is
`gemini --resume <id> -p PROMPT` from the same directory (sessions are looked up per project). The
`continued` session starts from a Claude Code brief: its source is the Claude fixture's `one` session, read
from tests/fixtures/real/claude/expected.json. Run: ``python -m tests.realruntimes.generate gemini``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

from tests.realruntimes import harness as h
from tests.realruntimes.harness import SessionFacts

SUB_TASK = h.scripted("subagent")[0].prompt
SECRET_CMD = h.scripted("database password")[0].command
KEEP_DROP = h.PRUNE_NAMES - {"tmp"}  # the store itself lives under ~/.gemini/tmp/


def generate(out_dir: Path) -> None:
    real = out_dir.resolve()
    if h.isolated():
        _run(real)
        return
    rc = subprocess.call(["unshare", "-n", sys.executable, "-m", "tests.realruntimes.gen_gemini", str(real)],
                         cwd=h.REPO, env={**os.environ, "PYTHONPATH": str(h.REPO)})
    if rc != 0:
        raise RuntimeError(f"Gemini fixture generation failed (rc {rc})")


def claude_source() -> str:
    """The Claude Code `one` session id the `continued` session names in its handoff marker."""
    doc = json.loads((h.FIXTURES / "claude" / "expected.json").read_text())
    return next(s["id"] for s in doc["sessions"] if s["scenario"] == "one")


class GeminiGen(h.Gen):
    runtime = "gemini"
    env_rel: ClassVar[dict[str, str]] = {"GEMINI_CLI_HOME": "home"}  # the home dir; .gemini stays below it
    keep: ClassVar[tuple[str, ...]] = (".gemini/tmp", ".gemini/projects.json")
    drop: ClassVar[frozenset[str]] = KEEP_DROP

    @property
    def gemini_dir(self) -> Path:
        return self.home / ".gemini"

    def gemini(self, prompt: str, cwd: Path, resume: str | None = None) -> dict[str, Any]:
        argv = [str(h.runtime_bin(self.runtime))]
        if resume:
            argv += ["--resume", resume]
        argv += ["-p", prompt, "--output-format", "json"]
        out = self.run(argv, cwd).stdout
        doc = json.loads(out[out.index("{"):])
        if not doc.get("session_id"):
            raise RuntimeError(f"gemini: no session_id in {out[-2000:]}")
        return doc

    def session_files(self) -> dict[str, Path]:
        """session id -> its file, over every main and subagent file under ~/.gemini/tmp/*/chats. A resume in
        a later minute leaves a startup-only twin (metadata and injected context): the largest file wins."""
        out: dict[str, Path] = {}
        for p in sorted((self.gemini_dir / "tmp").glob("*/chats/**/*.jsonl")):
            with p.open() as f:
                first = json.loads(f.readline())
            sid = first["sessionId"]
            if sid not in out or p.stat().st_size > out[sid].stat().st_size:
                out[sid] = p
        return out

    def records(self, sid: str) -> list[dict[str, Any]]:
        path = self.session_files().get(sid)
        if path is None:
            raise RuntimeError(f"gemini: no session file for {sid}")
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def tool_calls(self, sid: str) -> list[dict[str, Any]]:
        """The last version of each tool call (messages are re-appended whenever their calls change)."""
        calls: dict[str, dict[str, Any]] = {}
        for rec in self.records(sid):
            for tc in rec.get("toolCalls") or []:
                calls[tc["id"]] = tc
        return list(calls.values())

    def check_commands(self, sid: str, want: list[dict[str, object]]) -> None:
        got = [tc["args"]["command"] for tc in self.tool_calls(sid) if tc["name"] == "run_shell_command"]
        if got != [c["command"] for c in want]:
            raise RuntimeError(f"gemini ran {got}, the script expects {want}")

    # ---------------------------------------------------------------- scenarios

    def run_one(self) -> None:
        cwd = self.work / "one"
        sid = self.gemini(h.PROMPT_ONE, cwd)["session_id"]
        before = self.session_files()[sid]
        size = before.stat().st_size
        again = self.gemini(h.PROMPT_ONE_2, cwd, resume=sid)["session_id"]
        if again != sid or self.session_files()[sid] != before or before.stat().st_size <= size:
            raise RuntimeError(f"gemini --resume {sid} answered in {again} ({self.session_files().get(sid)})")
        cmds = [self.cmd("echo hello > out.txt && ls"), self.cmd("ls /nonexistent-dir")]
        self.check_commands(sid, cmds)
        notes = cwd / "notes.md"
        writes = [tc["args"]["file_path"] for tc in self.tool_calls(sid) if tc["name"] == "write_file"]
        if writes != [str(notes)] or not notes.is_file() or not (cwd / "out.txt").is_file():
            raise RuntimeError(f"gemini: expected one write of {notes}, got {writes}")
        self.one_id = sid
        self.add(SessionFacts(id=sid, scenario="one", first_request=h.PROMPT_ONE, latest_request=h.PROMPT_ONE_2,
                              cwd=str(cwd), branch=f"feature/{self.runtime}-one", commands=cmds,
                              files_written=[str(notes)]))

    def run_sub(self) -> None:
        cwd = self.work / "sub"
        sid = self.gemini(h.PROMPT_SUB, cwd)["session_id"]
        agents = [tc.get("agentId") for tc in self.tool_calls(sid) if tc["name"] == "invoke_agent"]
        if len(agents) != 1 or not agents[0]:
            raise RuntimeError(f"gemini: expected one invoke_agent call with an agentId, got {agents}")
        child = str(agents[0])
        child_file = self.session_files().get(child)
        if child_file is None or child_file.parent.name != sid:
            raise RuntimeError(f"gemini: subagent {child} is not under chats/{sid}/ ({child_file})")
        self.add(SessionFacts(id=sid, scenario="sub", first_request=h.PROMPT_SUB, latest_request=h.PROMPT_SUB,
                              cwd=str(cwd), branch="feature/gemini-sub", subagent_ids=[child]))
        cmds = [self.cmd("ls | wc -l")]
        self.check_commands(child, cmds)
        self.add(SessionFacts(id=child, parent_id=sid, scenario="sub", first_request=SUB_TASK,
                              latest_request=SUB_TASK, cwd=str(cwd), branch="feature/gemini-sub", commands=cmds))

    def run_secret(self) -> None:
        cwd = self.work / "plain"
        sid = self.gemini(h.PROMPT_SECRET, cwd)["session_id"]
        cmds = [self.cmd(SECRET_CMD)]
        self.check_commands(sid, cmds)
        if "Sup3rS3cret-42" not in (cwd / ".env").read_text():
            raise RuntimeError("gemini: .env was not written")
        self.add(SessionFacts(id=sid, scenario="secret", first_request=h.PROMPT_SECRET,
                              latest_request=h.PROMPT_SECRET, cwd=str(cwd), branch=None, commands=cmds))

    def run_continued(self, src_runtime: str, src_id: str) -> None:
        h.write_brief(self.root, src_runtime, src_id)
        cwd = self.work / "one"
        prompt = h.handoff_prompt(self.root, src_runtime, src_id)
        sid = self.gemini(prompt, cwd)["session_id"]
        self.check_commands(sid, [])
        self.add(SessionFacts(id=sid, scenario="continued", first_request=prompt, latest_request=prompt,
                              cwd=str(cwd), branch="feature/gemini-one",
                              continues={"runtime": src_runtime, "id": src_id}))

    def write_fixture(self, dest: Path) -> None:
        self.notes = [
            "Sessions are JSONL: a metadata line {sessionId, projectHash, startTime, lastUpdated, kind}, then "
            "message records (a message is re-appended whole when its toolCalls or tokens change: the last "
            "copy of an id wins), {\"$set\": {...}} metadata updates ($set.messages replaces the whole list) "
            "and {\"$rewindTo\": id}.",
            "The project directory is not in a main session's file: ~/.gemini/tmp/<slug>/.project_root and "
            "~/.gemini/projects.json name it, and projectHash is sha256(project root). Subagent files carry "
            "`directories`.",
            "Gemini CLI does not store the branch; `branch` is the work dir's branch at generation.",
            "When the `--resume` run starts in another minute than the first run, chats/ also holds a "
            "startup-only twin session-<that minute>-<id8>.jsonl (metadata + injected context, same "
            "sessionId): not a session of its own.",
            "The API key in the run env was a dummy; settings.json and the allow policy are not in home/.",
        ]
        super().write_fixture(dest)
        ids = set(self.session_files())
        missing = [s.id for s in self.sessions if s.id not in ids]
        if missing:
            raise RuntimeError(f"gemini: sessions missing from the store: {missing}")


class LegacyGen(GeminiGen):
    """Gemini CLI 0.24: one JSON document per session under ~/.gemini/tmp/<sha256 of the project root>/chats/,
    rewritten whole on every change; no subagent recording, no projects map, no `.project_root`."""

    runtime = "gemini-legacy"
    keep: ClassVar[tuple[str, ...]] = (".gemini/tmp",)

    def session_files(self) -> dict[str, Path]:
        out: dict[str, Path] = {}
        for p in sorted((self.gemini_dir / "tmp").glob("*/chats/*.json")):
            out[json.loads(p.read_text())["sessionId"]] = p
        return out

    def records(self, sid: str) -> list[dict[str, Any]]:
        path = self.session_files().get(sid)
        if path is None:
            raise RuntimeError(f"gemini 0.24: no session file for {sid}")
        return list(json.loads(path.read_text())["messages"])

    def write_fixture(self, dest: Path) -> None:
        h.Gen.write_fixture(self, dest)  # not GeminiGen's: its notes describe the JSONL format
        doc = json.loads((dest / "expected.json").read_text())
        doc["notes"] = ["Generation G1: session-<minute>-<id8>.json documents {sessionId, projectHash, startTime, "
                        "lastUpdated, messages}; the project dir is named by sha256(project root) and nothing in "
                        "the home names the root: cwd is found by hashing the ancestors of absolute paths in "
                        "tool results.",
                        "Gemini CLI does not store the branch; `branch` is the work dir's branch at generation."]
        h.write_json(dest / "expected.json", doc)


def _run(real: Path) -> None:
    h._lo_up()
    server, port = h.serve_fake_model(h.DEFAULT_PORT)
    try:
        g = GeminiGen(port)
        g.setup()
        g.run_one()
        g.run_sub()
        g.run_secret()
        g.run_continued("claude", claude_source())
        g.write_fixture(real)
        if h.runtime_bin("gemini-legacy") is None:
            raise RuntimeError("gemini 0.24 is not installed: run tests/realruntimes/install.sh gemini-legacy")
        old = LegacyGen(port)
        old.setup()
        old.run_one()
        old.run_secret()
        old.write_fixture(real / "legacy-0.24")
    finally:
        server.shutdown()


if __name__ == "__main__":
    if not h.isolated():
        raise SystemExit("run through `python -m tests.realruntimes.generate gemini` (needs `unshare -n`)")
    _run(Path(sys.argv[1]))
