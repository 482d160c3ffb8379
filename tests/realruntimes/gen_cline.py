"""Generate the Cline fixture (tests/fixtures/real/cline) with the real CLI 3.x, offline.

Cline keeps `~/.cline/data/db/sessions.db` (WAL mode) plus `sessions/<sid>/` files. `cline --json`
prints no session id, so a new session is the one new directory under `sessions/`. A resume is
interactive only (`--id` forces the TUI and drops any prompt), so the second turn of `one` is typed
into the TUI under tmux. Runs leave a hub daemon; we stop exactly the pid its lock file records.
Generated together with OpenCode (harness_chat.generate_pair).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, ClassVar

from tests.realruntimes import fake_chat
from tests.realruntimes import harness as h
from tests.realruntimes import harness_chat as hc
from tests.realruntimes.harness import SessionFacts
from tests.realruntimes.scenario import Turn

BIN = h.RUNTIMES / "cline" / "node_modules" / ".bin" / "cline"
DATA = ".cline/data"
DB = f"{DATA}/db/sessions.db"
SUB_TASK = h.scripted("subagent")[0].prompt
SECRET_CMD = h.scripted("database password")[0].command
_EXIT = re.compile(r"Command exited with code (-?\d+)")


def generate(out_dir: Path) -> None:
    hc.generate_pair(out_dir, "cline")


class ClineGen(h.Gen):
    runtime = "cline"
    env_rel: ClassVar[dict[str, str]] = {"CLINE_DIR": "home/.cline"}
    # the session store only: settings/providers.json (the key), cache/, logs/, locks/, the other DBs
    # (hub, tasks, teams, cron, connectors, session-search) and checkpoint-scratch/ stay behind
    keep: ClassVar[tuple[str, ...]] = (DB, f"{DB}-wal", f"{DB}-shm", f"{DATA}/sessions")

    def __init__(self, port: int) -> None:
        super().__init__(port)
        self.live: list[Path] = []
        self.stopped_hubs: list[int] = []

    @property
    def data(self) -> Path:
        return self.home / DATA

    def setup(self) -> None:
        super().setup()
        try:
            self.run([str(BIN), "auth", "-p", "openai-compatible", "-k", "dummy-key", "-m", "fake-model",
                      "-b", f"http://127.0.0.1:{self.port}/v1"], cwd=self.root, timeout=60)
        finally:
            self.stop_hub(wait=3)

    # ---------------------------------------------------------------- the hub daemon

    def stop_hub(self, wait: float = 10) -> None:
        """Stop the hub daemon this HOME's Cline started (pid from its lock file), and only it.

        The CLI spawns the daemon in the background, so the lock file can appear after the CLI exits:
        poll for it a while before concluding there is none.
        """
        lock = self.data / "locks" / "hub" / "production.json"
        marker = f"--cline-hub-daemon --cwd {self.root}"  # its argv names our gen root: no reused pid
        deadline = time.monotonic() + wait
        while True:
            try:
                pid = int(json.loads(lock.read_text())["pid"])
            except (OSError, ValueError, KeyError):
                pid = 0
            if pid and pid not in self.stopped_hubs and hc.stop_pid(pid, marker):
                self.stopped_hubs.append(pid)
                return
            if time.monotonic() > deadline:
                return
            time.sleep(0.25)

    # ---------------------------------------------------------------- running the CLI

    def session_dirs(self) -> set[str]:
        d = self.data / "sessions"
        return {p.name for p in d.iterdir() if p.is_dir()} if d.is_dir() else set()

    def cline_json(self, cwd: Path, prompt: str) -> tuple[str, list[dict[str, Any]]]:
        """`cline --json PROMPT` (in-process: no hub is running): the new session's id and the events."""
        before = self.session_dirs()
        try:
            res = self.run([str(BIN), "--json", prompt], cwd=cwd)
        finally:
            self.stop_hub()
        events = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
        new = self.session_dirs() - before
        if len(new) != 1:
            raise RuntimeError(f"expected one new Cline session directory, got {new}")
        return new.pop(), events

    @staticmethod
    def reported(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """run_commands results as Cline reports them: success, or `Command exited with code N`."""
        out = []
        for r in results:
            m = _EXIT.search(str(r.get("error") or r.get("result") or ""))
            out.append({"command": r.get("query"),
                        "exit_code": 0 if r.get("success") else (int(m.group(1)) if m else None)})
        return out

    def event_commands(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for e in events:
            ev = e.get("event") or {}
            if ev.get("type") == "content_end" and ev.get("toolName") == "run_commands":
                out += self.reported(ev.get("output") or [])
        return out

    def stored_commands(self, sid: str, after_prompt: str) -> list[dict[str, Any]]:
        """Commands in the messages file after `after_prompt` (the TUI prints no JSON events)."""
        out: list[dict[str, Any]] = []
        seen = False
        for m in self.messages(sid)["messages"]:
            for b in m.get("content", []):
                if m.get("role") == "user" and after_prompt in (b.get("text") or ""):
                    seen = True
                if seen and b.get("type") == "tool_result" and b.get("name") == "run_commands":
                    out += self.reported(b.get("content") or [])
        return out

    @staticmethod
    def check(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
        if got != want:
            raise RuntimeError(f"cline ran {got}, the script expects {want}")

    def messages(self, sid: str, name: str | None = None) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((self.data / "sessions" / sid / (name or f"{sid}.messages.json"))
                                         .read_text())
        return doc

    def has_text(self, sid: str, text: str, role: str) -> bool:
        try:
            msgs = self.messages(sid)["messages"]
        except (OSError, ValueError, KeyError):
            return False  # not there yet, or mid-write
        return any(m.get("role") == role and any(text in (b.get("text") or "") for b in m.get("content", []))
                   for m in msgs)

    # ---------------------------------------------------------------- scenarios

    def run_one(self) -> None:
        cwd = self.work / "one"
        first = [self.cmd("echo hello > out.txt && ls")]
        sid, events = self.cline_json(cwd, h.PROMPT_ONE)
        self.check(self.event_commands(events), first)
        second = [self.cmd("ls /nonexistent-dir")]
        final = h.scripted("nonexistent-dir")[-1].text
        self.resume_in_tui(sid, cwd, h.PROMPT_ONE_2, final)
        self.check(self.stored_commands(sid, h.PROMPT_ONE_2), second)
        notes = cwd / "notes.md"
        if not notes.is_file():
            raise RuntimeError("the resumed Cline turn did not write notes.md")
        self.one_id = sid
        self.add(SessionFacts(id=sid, scenario="one", first_request=h.PROMPT_ONE,
                              latest_request=h.PROMPT_ONE_2, cwd=str(cwd), branch="feature/cline-one",
                              commands=first + second, files_written=[str(notes)]))

    def resume_in_tui(self, sid: str, cwd: Path, prompt: str, final_text: str) -> None:
        """`cline --id SID` in tmux: type one prompt, wait for the scripted answer, quit with Ctrl+C."""
        tmux = hc.Tmux(f"segue-fx-cline-{os.getpid()}")
        try:
            tmux.start([str(BIN), "--id", sid], cwd, self.env())
            hc.wait_for(lambda: "Ask anything" in tmux.screen(), 60, "the Cline TUI input box")
            time.sleep(3)  # the box shows before the hub has loaded the session; keys typed earlier are lost
            tmux.type(prompt)
            hc.wait_for(lambda: prompt[:40] in tmux.screen(), 10, "the typed prompt to show")
            time.sleep(0.5)
            tmux.key("Enter")
            try:
                hc.wait_for(lambda: self.has_text(sid, prompt, "user"), 20, "the prompt to be stored")
            except TimeoutError:  # an Enter swallowed while the TUI was busy: once more
                tmux.key("Enter")
            try:
                hc.wait_for(lambda: self.has_text(sid, final_text, "assistant"), 120, "the resumed turn")
            except TimeoutError as exc:
                raise TimeoutError(f"{exc}\n--- screen ---\n{tmux.screen()}") from exc
            tmux.key("C-c")
            hc.wait_for(tmux.dead, 30, "the Cline TUI to exit")
        finally:
            tmux.close(BIN)
            self.stop_hub()

    def run_sub(self) -> None:
        cwd = self.work / "sub"
        fake_chat.observer = self._capture_live
        try:
            sid, events = self.cline_json(cwd, h.PROMPT_SUB)
        finally:
            fake_chat.observer = None
        if not self.live:
            raise RuntimeError("the live capture of sessions.db did not happen")
        agents = sorted(p.name for p in (self.data / "sessions" / sid).glob("agent_*.messages.json"))
        if len(agents) != 1:
            raise RuntimeError(f"expected one subagent messages file, got {agents}")
        child_doc = self.messages(sid, agents[0])
        child = child_doc["sessionId"]
        task = child_doc["messages"][0]["content"][0]["text"]
        if task != SUB_TASK:
            raise RuntimeError(f"the subagent's task is {task!r}")
        cmds = [self.cmd("ls | wc -l")]
        self.check(self.event_commands(events), cmds)  # the subagent's events stream with the parent's
        self.add(SessionFacts(id=sid, scenario="sub", first_request=h.PROMPT_SUB, latest_request=h.PROMPT_SUB,
                              cwd=str(cwd), branch="feature/cline-sub", subagent_ids=[child]))
        self.add(SessionFacts(id=child, parent_id=sid, scenario="sub", first_request=SUB_TASK,
                              latest_request=SUB_TASK, cwd=str(cwd), branch="feature/cline-sub", commands=cmds))

    def _capture_live(self, turn: Turn) -> None:
        """While the subagent waits for its first answer, copy sessions.db with its -wal and -shm."""
        if not self.live and SUB_TASK in turn.prompt and not turn.tool_results_since_prompt:
            self.live = h.snapshot_db(self.home / DB, self.root / "live-capture" / "home" / DATA / "db")

    def run_secret(self) -> None:
        cwd = self.work / "plain"
        cmds = [self.cmd(SECRET_CMD)]
        sid, events = self.cline_json(cwd, h.PROMPT_SECRET)
        self.check(self.event_commands(events), cmds)
        self.add(SessionFacts(id=sid, scenario="secret", first_request=h.PROMPT_SECRET,
                              latest_request=h.PROMPT_SECRET, cwd=str(cwd), branch=None, commands=cmds))

    def run_continued(self, src_runtime: str, src_id: str) -> None:
        h.write_brief(self.root, src_runtime, src_id)
        cwd = self.work / "one"
        prompt = h.handoff_prompt(self.root, src_runtime, src_id)
        sid, events = self.cline_json(cwd, prompt)
        self.check(self.event_commands(events), [])
        self.add(SessionFacts(id=sid, scenario="continued", first_request=prompt, latest_request=prompt,
                              cwd=str(cwd), branch="feature/cline-one",
                              continues={"runtime": src_runtime, "id": src_id}))

    # ---------------------------------------------------------------- the fixture

    def write_fixture(self, dest: Path) -> None:
        self.stop_hub(wait=0)
        live = dict(hc.wal_rows(self.root / "live-capture" / "home" / DB,
                                "SELECT session_id, status FROM sessions"))
        sub = next(s for s in self.sessions if s.scenario == "sub" and s.parent_id is None)
        if live.get(sub.id) != "running":
            raise RuntimeError(f"the live capture should show the `sub` session running: {live}")
        self.notes = [
            "Every `cline --json` run was in-process (the hub daemon was stopped after each run), so "
            "sessions.prompt is bare while messages.json wraps user text in <user_input mode=\"act\">.",
            "The second turn of `one` was typed into `cline --id <sid>` under tmux (3.x has no "
            "non-interactive resume). The TUI uses a hub daemon when one is up; none was, so it ran the "
            "turn in-process and the row keeps the first run's pid.",
            "home/ holds db/sessions.db with its WAL folded in (the header still says WAL) and sessions/. "
            "live-capture/ holds sessions.db, -wal and -shm copied while the subagent of the `sub` run "
            "waited for the model (the `sub` session is `running` there).",
        ]
        super().write_fixture(dest)
        hc.check_ids(dest / "home" / DB, "SELECT session_id, parent_session_id FROM sessions", self.sessions)
