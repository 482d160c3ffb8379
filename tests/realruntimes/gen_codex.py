"""Generate the Codex CLI fixture (tests/fixtures/real/codex) with the real CLI, offline.

`codex exec --json` prints JSONL events; `thread.started.thread_id` is the session id. The second turn
is `codex exec resume <id>`. A subagent gets its own rollout whose `session_meta` names the parent in
`parent_thread_id`. While the `secret` run waits for its first model answer, `state_5.sqlite` is copied
with its `-wal`/`-shm` into live-capture/. Generated together with Claude (harness.generate_pair).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.realruntimes import fakemodel
from tests.realruntimes import harness as h

# What the fake model renders a write action as (fakemodel.responses_item): a quoted heredoc.
NOTES = "ls /nonexistent-dir failed: the directory does not exist."


def generate(out_dir: Path) -> None:
    h.generate_pair(out_dir, "codex")


def heredoc(path: str, content: str) -> str:
    return f"cat > {path} <<'SEGUE_EOF'\n{content.rstrip(chr(10))}\nSEGUE_EOF"


class CodexGen(h.Gen):
    runtime = "codex"
    env_rel = {"CODEX_HOME": "home/.codex"}  # noqa: RUF012 (ClassVar in the base)
    keep = (".codex/sessions", ".codex/archived_sessions", ".codex/session_index.jsonl",
            ".codex/history.jsonl", ".codex/config.toml", ".codex/state_5.sqlite")

    def __init__(self, port: int) -> None:
        super().__init__(port)
        self.live: list[Path] = []

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    def codex(self, prompt: str, cwd: Path, resume: str | None = None) -> str:
        argv = [str(h.runtime_bin("codex")), "exec", "--json", "--skip-git-repo-check"]
        if resume:
            argv += ["resume", resume]
        argv.append(prompt)
        events = [json.loads(line) for line in self.run(argv, cwd).stdout.splitlines()
                  if line.startswith("{")]
        ids = [e["thread_id"] for e in events if e.get("type") == "thread.started"]
        if len(ids) != 1 or not any(e.get("type") == "turn.completed" for e in events):
            raise RuntimeError(f"codex: unexpected events {events}")
        return ids[0]

    def rollouts(self) -> dict[str, tuple[Path, dict[str, Any]]]:
        """thread id -> (rollout path, session_meta payload) over every rollout file."""
        out = {}
        for p in sorted((self.codex_home / "sessions").rglob("rollout-*.jsonl")):
            with p.open() as f:
                first = json.loads(f.readline())
            if first.get("type") == "session_meta":
                out[first["payload"]["id"]] = (p, first["payload"])
        return out

    def check_rollout(self, tid: str) -> dict[str, Any]:
        found = self.rollouts().get(tid)
        if not found:
            raise RuntimeError(f"codex: no rollout for {tid}")
        return found[1]

    def run_one(self) -> None:
        one = self.work / "one"
        tid = self.codex(h.PROMPT_ONE, one)
        again = self.codex(h.PROMPT_ONE_2, one, resume=tid)
        if again != tid:
            raise RuntimeError(f"codex exec resume made a new thread {again} instead of {tid}")
        self.check_rollout(tid)
        for f in ("out.txt", "notes.md"):
            if not (one / f).is_file():
                raise RuntimeError(f"codex: {one / f} was not written")
        self.one_id = tid
        write = next(a for a in h.scripted(h.PROMPT_ONE_2) if a.kind == "write")
        self.add(h.SessionFacts(
            id=tid, scenario="one", first_request=h.PROMPT_ONE, latest_request=h.PROMPT_ONE_2,
            cwd=str(one), branch="feature/codex-one",
            commands=[self.cmd("echo hello > out.txt && ls"), self.cmd("ls /nonexistent-dir"),
                      self.cmd(heredoc(write.path, write.content))],
            files_written=[str(one / "notes.md")]))
        self.notes.append("Codex gets no apply_patch for an unknown model: notes.md is written by an "
                          "exec_command heredoc, listed in commands; files_written is the scenario's fact.")

    def run_sub(self) -> None:
        sub = self.work / "sub"
        tid = self.codex(h.PROMPT_SUB, sub)
        children = [(cid, meta) for cid, (_, meta) in self.rollouts().items()
                    if _parent_of(meta) == tid]
        if len(children) != 1:
            raise RuntimeError(f"codex: expected one subagent of {tid}, found {children}")
        child_id = children[0][0]
        task = next(a.prompt for a in h.scripted(h.PROMPT_SUB) if a.kind == "agent")
        self.add(h.SessionFacts(id=tid, scenario="sub", first_request=h.PROMPT_SUB,
                                latest_request=h.PROMPT_SUB, cwd=str(sub), branch="feature/codex-sub",
                                subagent_ids=[child_id]))
        self.add(h.SessionFacts(id=child_id, parent_id=tid, scenario="sub", first_request=task,
                                latest_request=task, cwd=str(sub), branch="feature/codex-sub",
                                commands=[self.cmd("ls | wc -l")]))

    def run_secret(self) -> None:
        plain = self.work / "plain"
        # Codex has exited: fold its WAL now, so the live copy's -wal holds just this run's writes
        # (the thread row exists only there) instead of every migration since the first start.
        for db in self.codex_home.glob("state_*.sqlite"):
            h.checkpoint(db)
        fakemodel.observer = self._capture_live
        try:
            tid = self.codex(h.PROMPT_SECRET, plain)
        finally:
            fakemodel.observer = None
        if not self.live:
            raise RuntimeError("codex: the live capture of state_5.sqlite did not happen")
        self.check_rollout(tid)
        if "Sup3rS3cret-42" not in (plain / ".env").read_text():
            raise RuntimeError("codex: .env was not written")
        command = next(a.command for a in h.scripted(h.PROMPT_SECRET) if a.kind == "bash")
        self.add(h.SessionFacts(id=tid, scenario="secret", first_request=h.PROMPT_SECRET,
                                latest_request=h.PROMPT_SECRET, cwd=str(plain), branch=None,
                                commands=[self.cmd(command)]))

    def _capture_live(self, path: str, req: dict[str, Any]) -> None:
        # first model request of the secret run: Codex has recorded the thread and now waits on us
        if self.live or not path.endswith("/responses"):
            return
        turn = fakemodel.responses_turn(req)
        if "database password" not in turn.prompt or turn.tool_results_since_prompt:
            return
        dbs = sorted(self.codex_home.glob("state_*.sqlite"))
        dst = self.root / "live-capture" / "home" / ".codex"
        self.live = [p for db in dbs for p in h.snapshot_db(db, dst)]

    def run_continued(self, partner: str, partner_id: str) -> None:
        one = self.work / "one"
        h.write_brief(self.root, partner, partner_id)
        prompt = h.handoff_prompt(self.root, partner, partner_id)
        tid = self.codex(prompt, one)
        self.check_rollout(tid)
        self.add(h.SessionFacts(id=tid, scenario="continued", first_request=prompt, latest_request=prompt,
                                cwd=str(one), branch="feature/codex-one",
                                continues={"runtime": partner, "id": partner_id}))


def _parent_of(meta: dict[str, Any]) -> str | None:
    if meta.get("parent_thread_id"):
        return str(meta["parent_thread_id"])
    src = meta.get("source")
    if isinstance(src, dict):
        spawn = (src.get("subagent") or {}).get("thread_spawn") or {}
        return spawn.get("parent_thread_id")
    return None
