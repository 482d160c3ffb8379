"""Generate the Claude Code fixture (tests/fixtures/real/claude) with the real CLI, offline.

`claude -p … --output-format json` prints one JSON result carrying `session_id`; a second turn uses
`--resume <id>` from the same cwd. Subagents live in `projects/<enc>/<sid>/subagents/agent-<agentId>.jsonl`;
their id here is that `agentId`. Generated together with Codex (harness.generate_pair).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.realruntimes import harness as h

ALLOWED = "Bash,Write,Agent,Read"


def generate(out_dir: Path) -> None:
    h.generate_pair(out_dir, "claude")


class ClaudeGen(h.Gen):
    runtime = "claude"
    env_rel = {"CLAUDE_CONFIG_DIR": "home/.claude"}  # noqa: RUF012 (ClassVar in the base)
    keep = (".claude/projects", ".claude/history.jsonl", ".claude/sessions")

    @property
    def store(self) -> Path:
        return self.home / ".claude" / "projects"

    def claude(self, prompt: str, cwd: Path, resume: str | None = None) -> dict[str, Any]:
        # the prompt goes before the variadic --allowedTools, which would swallow it
        argv = [str(h.runtime_bin("claude")), "-p", prompt, "--model", "fake-model",
                "--output-format", "json"]
        if resume:
            argv += ["--resume", resume]
        argv += ["--allowedTools", ALLOWED]
        doc = json.loads(self.run(argv, cwd).stdout)
        if doc.get("is_error") or doc.get("subtype") != "success":
            raise RuntimeError(f"claude reported an error: {doc}")
        return doc

    def transcript(self, sid: str) -> Path:
        found = list(self.store.glob(f"*/{sid}.jsonl"))
        if len(found) != 1:
            raise RuntimeError(f"claude: expected one transcript for {sid}, found {found}")
        return found[0]

    def run_one(self) -> None:
        one = self.work / "one"
        sid = self.claude(h.PROMPT_ONE, one)["session_id"]
        again = self.claude(h.PROMPT_ONE_2, one, resume=sid)["session_id"]
        if again != sid:
            raise RuntimeError(f"claude --resume made a new session {again} instead of {sid}")
        self.transcript(sid)
        for f in ("out.txt", "notes.md"):
            if not (one / f).is_file():
                raise RuntimeError(f"claude: {one / f} was not written")
        self.one_id = sid
        self.add(h.SessionFacts(
            id=sid, scenario="one", first_request=h.PROMPT_ONE, latest_request=h.PROMPT_ONE_2,
            cwd=str(one), branch="feature/claude-one",
            commands=[self.cmd("echo hello > out.txt && ls"), self.cmd("ls /nonexistent-dir")],
            files_written=[str(one / "notes.md")]))

    def run_sub(self) -> None:
        sub = self.work / "sub"
        sid = self.claude(h.PROMPT_SUB, sub)["session_id"]
        agents = sorted(self.transcript(sid).parent.glob(f"{sid}/subagents/agent-*.jsonl"))
        if len(agents) != 1:
            raise RuntimeError(f"claude: expected one subagent transcript, found {agents}")
        agent_id = agents[0].stem.removeprefix("agent-")
        task = next(a.prompt for a in h.scripted(h.PROMPT_SUB) if a.kind == "agent")
        self.add(h.SessionFacts(id=sid, scenario="sub", first_request=h.PROMPT_SUB,
                                latest_request=h.PROMPT_SUB, cwd=str(sub), branch="feature/claude-sub",
                                subagent_ids=[agent_id]))
        self.add(h.SessionFacts(id=agent_id, parent_id=sid, scenario="sub", first_request=task,
                                latest_request=task, cwd=str(sub), branch="feature/claude-sub",
                                commands=[self.cmd("ls | wc -l")]))

    def run_secret(self) -> None:
        plain = self.work / "plain"
        sid = self.claude(h.PROMPT_SECRET, plain)["session_id"]
        self.transcript(sid)
        command = next(a.command for a in h.scripted(h.PROMPT_SECRET) if a.kind == "bash")
        if "Sup3rS3cret-42" not in (plain / ".env").read_text():
            raise RuntimeError("claude: .env was not written")
        self.add(h.SessionFacts(id=sid, scenario="secret", first_request=h.PROMPT_SECRET,
                                latest_request=h.PROMPT_SECRET, cwd=str(plain), branch=None,
                                commands=[self.cmd(command)]))

    def run_continued(self, partner: str, partner_id: str) -> None:
        one = self.work / "one"
        h.write_brief(self.root, partner, partner_id)
        prompt = h.handoff_prompt(self.root, partner, partner_id)
        sid = self.claude(prompt, one)["session_id"]
        self.transcript(sid)
        self.add(h.SessionFacts(id=sid, scenario="continued", first_request=prompt, latest_request=prompt,
                                cwd=str(one), branch="feature/claude-one",
                                continues={"runtime": partner, "id": partner_id}))
