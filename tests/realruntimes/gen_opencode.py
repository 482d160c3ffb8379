"""Generate the OpenCode fixture (tests/fixtures/real/opencode) with the real CLI, offline.

OpenCode 1.18 keeps everything in `$XDG_DATA_HOME/opencode/opencode.db` (WAL mode). `opencode run
--format json` prints one JSON event per line, each carrying `sessionID`; a `task` tool event names the
child session in `state.metadata.sessionId`. Generated together with Cline (harness_chat.generate_pair).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from tests.realruntimes import fake_chat
from tests.realruntimes import harness as h
from tests.realruntimes import harness_chat as hc
from tests.realruntimes.harness import SessionFacts
from tests.realruntimes.scenario import Turn

BIN = h.RUNTIMES / "opencode" / "node_modules" / ".bin" / "opencode"
DATA = ".local/share/opencode"
DB = f"{DATA}/opencode.db"
SUB_TASK = h.scripted("subagent")[0].prompt
SECRET_CMD = h.scripted("database password")[0].command


def generate(out_dir: Path) -> None:
    hc.generate_pair(out_dir, "opencode")


class OpenCodeGen(h.Gen):
    runtime = "opencode"
    env_rel: ClassVar[dict[str, str]] = {"XDG_DATA_HOME": "home/.local/share"}
    keep: ClassVar[tuple[str, ...]] = (DB, f"{DB}-wal", f"{DB}-shm")  # storage/ is not written by 1.18

    def __init__(self, port: int) -> None:
        super().__init__(port)
        self.live: list[Path] = []

    def opencode_run(self, cwd: Path, prompt: str, *extra: str) -> list[dict[str, Any]]:
        """`opencode run --format json` and its events (the prompt as ONE argv word, as Segue passes it)."""
        res = self.run([str(BIN), "run", "--format", "json", *extra, prompt], cwd=cwd)
        events = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
        if not events:
            raise RuntimeError(f"opencode run printed no events\n{res.stderr[-2000:]}")
        return events

    @staticmethod
    def session_id(events: list[dict[str, Any]]) -> str:
        ids = {e["sessionID"] for e in events if e.get("sessionID")}
        if len(ids) != 1:
            raise RuntimeError(f"expected one sessionID in the events, got {ids}")
        return ids.pop()

    @staticmethod
    def tool_parts(events: list[dict[str, Any]], tool: str) -> list[dict[str, Any]]:
        return [e["part"] for e in events if e.get("type") == "tool_use" and e["part"].get("tool") == tool]

    def check_commands(self, events: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
        """OpenCode's own report of each command (`state.metadata.exit`) must match the script."""
        got = [{"command": p["state"]["input"]["command"], "exit_code": p["state"]["metadata"].get("exit")}
               for p in self.tool_parts(events, "bash")]
        if got != want:
            raise RuntimeError(f"opencode ran {got}, the script expects {want}")

    # ---------------------------------------------------------------- scenarios

    def run_one(self) -> None:
        cwd = self.work / "one"
        first = [self.cmd("echo hello > out.txt && ls")]
        fake_chat.observer = self._capture_live
        try:
            events = self.opencode_run(cwd, h.PROMPT_ONE)
        finally:
            fake_chat.observer = None
        if not self.live:
            raise RuntimeError("the live capture of opencode.db did not happen")
        self.check_commands(events, first)
        sid = self.session_id(events)
        # the resume runs from session.directory: from elsewhere the CLI never exits
        second = [self.cmd("ls /nonexistent-dir")]
        events2 = self.opencode_run(cwd, h.PROMPT_ONE_2, "--session", sid)
        self.check_commands(events2, second)
        if self.session_id(events2) != sid:
            raise RuntimeError("opencode run --session answered in another session")
        notes = cwd / "notes.md"
        writes = [p["state"]["input"]["filePath"] for p in self.tool_parts(events2, "write")]
        if writes != [str(notes)] or not notes.is_file():
            raise RuntimeError(f"expected one write of {notes}, got {writes}")
        self.one_id = sid
        self.add(SessionFacts(id=sid, scenario="one", first_request=h.PROMPT_ONE,
                              latest_request=h.PROMPT_ONE_2, cwd=str(cwd), branch="feature/opencode-one",
                              commands=first + second, files_written=[str(notes)]))

    def _capture_live(self, turn: Turn) -> None:
        """At the first model request of the first run, copy the DB with its -wal and -shm.

        The smallest live state: the main file is still almost empty and the new session exists only in
        the -wal (a capture during a later run carries a WAL of over 1 MB).
        """
        if not self.live:
            db = self.home / DB
            self.live = h.snapshot_db(db, self.root / "live-capture" / "home" / DATA)

    def run_sub(self) -> None:
        cwd = self.work / "sub"
        events = self.opencode_run(cwd, h.PROMPT_SUB)
        sid = self.session_id(events)
        tasks = self.tool_parts(events, "task")
        if len(tasks) != 1 or tasks[0]["state"]["input"]["prompt"] != SUB_TASK:
            raise RuntimeError(f"expected one task call with the scripted prompt, got {tasks}")
        child = tasks[0]["state"]["metadata"]["sessionId"]
        self.add(SessionFacts(id=sid, scenario="sub", first_request=h.PROMPT_SUB, latest_request=h.PROMPT_SUB,
                              cwd=str(cwd), branch="feature/opencode-sub", subagent_ids=[child]))
        self.add(SessionFacts(id=child, parent_id=sid, scenario="sub", first_request=SUB_TASK,
                              latest_request=SUB_TASK, cwd=str(cwd), branch="feature/opencode-sub",
                              commands=[self.cmd("ls | wc -l")]))

    def run_secret(self) -> None:
        cwd = self.work / "plain"
        cmds = [self.cmd(SECRET_CMD)]
        events = self.opencode_run(cwd, h.PROMPT_SECRET)
        self.check_commands(events, cmds)
        self.add(SessionFacts(id=self.session_id(events), scenario="secret", first_request=h.PROMPT_SECRET,
                              latest_request=h.PROMPT_SECRET, cwd=str(cwd), branch=None, commands=cmds))

    def run_continued(self, src_runtime: str, src_id: str) -> None:
        h.write_brief(self.root, src_runtime, src_id)
        cwd = self.work / "one"
        prompt = h.handoff_prompt(self.root, src_runtime, src_id)
        events = self.opencode_run(cwd, prompt)
        self.check_commands(events, [])
        self.add(SessionFacts(id=self.session_id(events), scenario="continued", first_request=prompt,
                              latest_request=prompt, cwd=str(cwd), branch="feature/opencode-one",
                              continues={"runtime": src_runtime, "id": src_id}))

    # ---------------------------------------------------------------- the fixture

    def write_fixture(self, dest: Path) -> None:
        live_db = self.root / "live-capture" / "home" / DB
        if [r[0] for r in hc.wal_rows(live_db, "SELECT id FROM session")] != [self.one_id]:
            raise RuntimeError("the live capture should hold exactly the `one` session")
        self.notes = [
            "`opencode run` wraps every argv word that contains a space in double quotes (inner quotes "
            "escaped) before storing it: the stored first text part is '\"' + prompt + '\"'. "
            "first_request/latest_request here are the prompts as sent.",
            "OpenCode does not store the branch; `branch` is the work dir's branch at generation.",
            "home/ holds opencode.db with its WAL folded in (the header still says WAL). live-capture/ "
            "holds opencode.db, -wal and -shm copied while OpenCode waited for its first model answer "
            "in the `one` run: the `one` session exists only in the -wal.",
        ]
        super().write_fixture(dest)
        hc.check_ids(dest / "home" / DB, "SELECT id, parent_id FROM session", self.sessions)
