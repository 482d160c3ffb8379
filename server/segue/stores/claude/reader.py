"""The Claude Code reader: listing facts per transcript (`summary.py`) and a brief's steps (`steps.py`,
with the fast path of `triage.py` unless SEGUE_FAST_PATHS=0)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from segue.model import ReadStats, Session, Step
from segue.stores.base import Continued, Env, Source, read_head_tail
from segue.stores.claude.discovery import Discovery, parent_from_path, read_meta
from segue.stores.claude.records import (
    KIND_AGENT,
    KIND_SESSION,
    KIND_SUBAGENT,
    RUNTIME,
    bounded_lines,
    plural,
    subagent_session_id,
)
from segue.stores.claude.steps import StepWalker
from segue.stores.claude.summary import Scan
from segue.stores.text import BOM, cap, fast_paths, file_kind, open_regular


class ClaudeReader(Discovery):
    def __init__(self, env: Env) -> None:
        super().__init__(env)
        self.fast = fast_paths(env)

    def summarize(self, source: Source) -> list[Session]:
        path = source.path
        st = os.stat(path)  # a dangling link raises FileNotFoundError: the listing records the skip
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file ({file_kind(st.st_mode)})")
        kind = source.kind or (KIND_AGENT if os.path.basename(path).startswith("agent-") else KIND_SESSION)
        is_sub = kind in (KIND_AGENT, KIND_SUBAGENT)
        stem = os.path.basename(path)[: -len(".jsonl")] if path.endswith(".jsonl") else os.path.basename(path)
        s = Session(runtime=RUNTIME, id=stem, store_path=path)
        s.locator = {"kind": kind, "priority": self._priority(path)}

        head, tail, size = read_head_tail(path)
        scan = Scan(is_sub=is_sub, fast=self.fast)
        if size == 0 or (not tail and not head.removeprefix(BOM).strip()):
            s.problems.append("empty file")  # nothing but a byte-order mark or blank lines counts too
        scan.feed(head, tail, path, size)
        if scan.reached:
            s.locator["read_back"] = scan.reached
        if scan.reach_problem:
            s.problems.append(scan.reach_problem)
        if (scan.first_request is None or scan.cwd is None) and tail:
            scan.deep(path, s)  # the file is larger than head + tail: the fact may lie in between
        scan.check_summary()

        s.first_request = scan.first_request
        s.cwd = scan.cwd
        s.started_at = scan.started_at
        s.updated_at = scan.updated_at or st.st_mtime
        s.branch = scan.branch
        s.model = scan.model
        s.title = scan.title()
        if scan.damaged:
            s.problems.append(plural(scan.damaged, "damaged line") + " skipped")
        if scan.bad_utf8:
            s.problems.append(plural(scan.bad_utf8, "line") + " with invalid UTF-8 read with replacement "
                              "characters")
        if size and scan.first_request is None and scan.started_at is None:
            n = scan.unrecognised()
            if n:
                s.problems.append(f"none of the {plural(n, 'non-blank line')} read is a Claude Code record")
        if is_sub:
            # The file name is what Claude derives from the agentId; the records' agentId is the fallback.
            agent_id = stem[len("agent-"):] if stem.startswith("agent-") else (scan.agent_id or stem)
            s.id = subagent_session_id(agent_id)
            s.locator["agent_id"] = agent_id
            s.parent_id = scan.session_id or parent_from_path(path, kind)
            s.resumable = False
            s.resume_blocker = "subagent"
            if kind == KIND_SUBAGENT:
                meta = read_meta(path)
                if meta.get("description") and not scan.custom_title and not scan.ai_title:
                    s.title = cap(str(meta["description"]))
                if meta.get("agentType"):
                    s.locator["agent_type"] = str(meta["agentType"])
            # A subagent runs inside its parent's process, which is what the live marker names.
            s.live = False
        else:
            s.live = s.id in self.live_ids()
        return [s]

    def _walker(self, session: Session, lean: bool) -> StepWalker:
        kind = session.locator.get("kind") or (
            KIND_AGENT if os.path.basename(session.store_path).startswith("agent-") else KIND_SESSION)
        return StepWalker(is_sub=kind in (KIND_AGENT, KIND_SUBAGENT) or session.parent_id is not None,
                          fast=self.fast, lean=lean)

    def search_steps_from(self, session: Session, stats: ReadStats, mark: bytes | None) -> Continued | None:
        """`search_steps` on from the last quiet point of an earlier read (segue.stores.claude.resume)."""
        from segue.stores import resume_mark
        from segue.stores.claude import resume

        if not (self.fast and resume_mark.enabled(self.env.environ)):
            return None
        try:
            f = open_regular(session.store_path, buffering=256 * 1024)
        except OSError:
            return None  # (search_steps meets it again and says so)
        walker = self._walker(session, lean=True)
        return resume_mark.owning(f, lambda f: resume.read(f, walker, stats, mark))

    def steps(self, session: Session, stats: ReadStats, lean: bool = False) -> Iterator[Step]:
        walker = self._walker(session, lean)
        with open_regular(session.store_path, buffering=256 * 1024) as f:
            for raw, last in bounded_lines(f, stats):
                yield from walker.line(raw, last, stats)
        yield from walker.finish(stats)

    def search_steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        """While fast paths are on, the steps without times and output tails (the index keeps neither)."""
        return self.steps(session, stats, lean=self.fast)
