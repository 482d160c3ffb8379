"""Claude Code reader: `<root>/projects/<encoded-cwd>/<uuid>.jsonl` and its subagent transcripts.

Roots: `$CLAUDE_CONFIG_DIR` (else `~/.claude`), plus `$XDG_CONFIG_HOME/claude` when present.
Generations (runtime-stores.md §1.2):
- C1 (1.0.x): subagent turns sit inline in the parent (`isSidechain:true`); not separate sessions.
- C2 (2.0.x): `projects/<enc>/agent-<agentId>.jsonl` beside the sessions, records carry the PARENT's sessionId.
- C3 (2.1.2+): `projects/<enc>/<uuid>/subagents/[workflows/<wf>/]agent-<agentId>.jsonl` + `.meta.json`.
Subagent files are never top-level sessions: they list as children (parent_id) that cannot be resumed.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from segue.model import ReadStats, Session, Step, parse_time
from segue.stores.base import (
    HEAD_BYTES,
    MAX_TEXT,
    Env,
    Location,
    Reader,
    Source,
    fingerprint,
    loads,
    pid_alive,
    read_head_tail,
)
from segue.stores.jsoncut import CUT_MARK, cut_strings
from segue.stores.jsoncut import string_end as _string_end

RUNTIME = "claude"
KIND_SESSION = "session"  # projects/<enc>/<uuid>.jsonl
KIND_AGENT = "agent"  # C2: projects/<enc>/agent-<id>.jsonl
KIND_SUBAGENT = "subagent"  # C3: projects/<enc>/<uuid>/subagents/**/agent-<id>.jsonl

MAX_LINE = 64 * 1024 * 1024  # a longer line is skipped and counted as damaged (bounded memory)
BIG_LINE = 1024 * 1024  # tool results above this are read by byte patterns instead of decoded
DEEP_LIMIT = 64 * 1024 * 1024  # how far a summary may read when the first request lies past the head
STEP_TEXT = 16 * 1024  # cap on one step's text (keeps memory flat on giant messages)
OUTPUT_TAIL = 400
LIVE_TTL = 2.0  # seconds the live-pid map is reused across summarize() calls of one listing

_HANDOFF_LINE = re.compile(r"^.*\[segue-handoff v1 from=[^\]\s]+\][ \t\r]*$", re.M)
# User text that is injected by Claude Code, not typed (runtime-stores.md §1.5).
_INJECTED_PREFIXES = (
    "<command-name>", "<command-message>", "<command-args>",
    "<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>",
    "Caveat: The messages below were generated",
    "<bash-input>", "<bash-stdout>", "<bash-stderr>",
    "<system-reminder>", "<task-notification>", "<user-memory-input>", "[Request interrupted by user",
)
# Whole blocks the IDE integrations and reminders wrap around the user's words; stripped, not rejected.
_WRAPPER_BLOCK = re.compile(
    r"\A\s*<(ide_opened_file|ide_selection|ide_diagnostics|system-reminder)>.*?</\1>\s*", re.S)
_SLASH = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_SLASH_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_BASH_INPUT = re.compile(r"\A\s*<bash-input>(.*?)</bash-input>", re.S)
_EXIT_TEXT = re.compile(r"\A\s*(?:Error: )?(?:Exit code|Command failed with exit code) (-?\d+)")
# Bash results Claude does not flag as errors although the exit code was 1 (its own per-command rules).
_NONZERO_OK = {"No matches found", "Some directories were inaccessible", "Files differ", "Condition is false"}

_TYPED_ORIGINS = {"human", "channel", "auto-continuation", None}
_TOOL_USE_ID = re.compile(rb'"tool_use_id":"([^"\\]+)"')
_IS_ERROR_TRUE = b'"is_error":true'
_AGENT_ID = re.compile(rb'"agentId":"([^"\\]+)"')

BASH_TOOLS = {"Bash"}
EDIT_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit"}
AGENT_TOOLS = {"Agent", "Task"}
READ_TOOLS = {"Read", "Glob", "Grep", "LS", "NotebookRead", "TodoRead"}  # left out of briefs


def subagent_session_id(agent_id: str) -> str:
    """The id a subagent lists under: its bare agentId (the `Agent` result's `agentId`, the file stem
    without `agent-`), so a parent's subagent step `ref` names the child session directly."""
    return agent_id.removeprefix("agent-")


class ClaudeReader(Reader):
    runtime = RUNTIME

    def __init__(self, env: Env) -> None:
        super().__init__(env)
        self._live: tuple[float, dict[str, int]] | None = None
        self._root_list = self._compute_roots()
        self._prefixes = [(str(root) + os.sep, prio) for root, _how, prio in self._root_list]

    # ---- discovery --------------------------------------------------------------------------------------

    def _roots(self) -> list[tuple[Path, str, int]]:
        return self._root_list

    def _compute_roots(self) -> list[tuple[Path, str, int]]:
        """(root, how to override, priority). The primary root wins over the XDG one for the same id."""
        primary = self.env.path("CLAUDE_CONFIG_DIR") or self.env.home / ".claude"
        xdg = (self.env.path("XDG_CONFIG_HOME") or self.env.home / ".config") / "claude"
        return [(primary, "set CLAUDE_CONFIG_DIR", 1),
                (xdg, "set XDG_CONFIG_HOME (older Claude Code builds kept sessions in $XDG_CONFIG_HOME/claude)", 0)]

    def _existing_roots(self) -> list[tuple[Path, int]]:
        seen: set[str] = set()
        out = []
        for root, _how, prio in self._roots():
            if not (root / "projects").is_dir():
                continue
            real = os.path.realpath(root)
            if real in seen:
                continue
            seen.add(real)
            out.append((root, prio))
        return out

    def locations(self) -> list[Location]:
        return [Location(str(root / "projects"), (root / "projects").is_dir(), how)
                for root, how, _prio in self._roots()]

    def sources(self) -> Iterator[Source]:
        for root, _prio in self._existing_roots():
            for proj in _scandir(root / "projects"):
                if not _is_dir(proj):
                    continue
                for e in _scandir(proj.path):
                    name = e.name
                    if name.endswith(".jsonl"):
                        # Non-regular *.jsonl entries (dangling links, FIFOs, directories) still yield a
                        # source: summarize() refuses them with a reason instead of losing them silently.
                        kind = KIND_AGENT if name.startswith("agent-") else KIND_SESSION
                        yield Source(RUNTIME, e.path, fingerprint(e.path), kind)
                    elif not name.startswith(".") and _is_dir(e):
                        yield from self._subagent_sources(os.path.join(e.path, "subagents"))

    def _subagent_sources(self, sub: str, depth: int = 0) -> Iterator[Source]:
        # subagents/agent-*.jsonl and subagents/workflows/<wf>/agent-*.jsonl (workflow dirs may be
        # symlinks; the depth cap stops link loops). Workflow dirs also hold journal.jsonl: not a transcript.
        if depth > 3:
            return
        for e in _scandir(sub):
            if e.name.endswith(".jsonl"):
                if e.name.startswith("agent-"):
                    meta = e.path[: -len(".jsonl")] + ".meta.json"
                    yield Source(RUNTIME, e.path, fingerprint(e.path, meta), KIND_SUBAGENT)
            elif _is_dir(e):
                yield from self._subagent_sources(e.path, depth + 1)

    # ---- summaries --------------------------------------------------------------------------------------

    def summarize(self, source: Source) -> list[Session]:
        path = source.path
        st = os.stat(path)  # a dangling link raises FileNotFoundError: the listing records the skip
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file ({_file_kind(st.st_mode)})")
        kind = source.kind or (KIND_AGENT if os.path.basename(path).startswith("agent-") else KIND_SESSION)
        is_sub = kind in (KIND_AGENT, KIND_SUBAGENT)
        stem = os.path.basename(path)[: -len(".jsonl")] if path.endswith(".jsonl") else os.path.basename(path)
        s = Session(runtime=RUNTIME, id=stem, store_path=path)
        s.locator = {"kind": kind, "priority": self._priority(path)}

        head, tail, size = read_head_tail(path)
        scan = _Scan(is_sub=is_sub)
        if size == 0:
            s.problems.append("empty file")
        scan.feed(head, tail)
        if (scan.first_request is None or scan.cwd is None) and tail:
            scan.deep(path, s)  # the file is larger than head + tail: the fact may lie in between

        s.first_request = scan.first_request
        s.cwd = scan.cwd
        s.started_at = scan.started_at
        s.updated_at = scan.updated_at or st.st_mtime
        s.branch = scan.branch
        s.model = scan.model
        s.title = scan.title()
        if scan.damaged:
            s.problems.append(_plural(scan.damaged, "damaged line") + " skipped")
        if scan.bad_utf8:
            s.problems.append(_plural(scan.bad_utf8, "line") + " with invalid UTF-8 read with replacement "
                              "characters")
        if is_sub:
            # The file name is what Claude derives from the agentId; the records' agentId is the fallback.
            agent_id = stem[len("agent-"):] if stem.startswith("agent-") else (scan.agent_id or stem)
            s.id = subagent_session_id(agent_id)
            s.locator["agent_id"] = agent_id
            s.parent_id = scan.session_id or _parent_from_path(path, kind)
            s.resumable = False
            s.resume_blocker = "subagent"
            if kind == KIND_SUBAGENT:
                meta = _read_meta(path)
                if meta.get("description") and not scan.custom_title and not scan.ai_title:
                    s.title = _cap(str(meta["description"]))
                if meta.get("agentType"):
                    s.locator["agent_type"] = str(meta["agentType"])
            # A subagent runs inside its parent's process, which is what the live marker names.
            s.live = False
        else:
            s.live = s.id in self.live_ids()
        return [s]

    def _priority(self, path: str) -> int:
        for prefix, prio in self._prefixes:
            if path.startswith(prefix):
                return prio
        return 0

    def refresh_live(self, sessions: list[Session]) -> None:
        live = self.live_ids()
        for s in sessions:
            s.live = s.id in live

    def live_ids(self) -> dict[str, int]:
        """Session ids a running Claude Code process holds -> its pid.

        Claude Code (2.1.x, also under `-p`) writes `<root>/sessions/<pid>.json` =
        `{pid, sessionId, cwd, startedAt, procStart, kind, …}` while it runs and deletes it on exit. A
        crashed process leaves it behind, so a session counts as live only if that pid is alive and, where
        /proc tells, is still the same process (`procStart` = field 22 of /proc/<pid>/stat, the check Claude
        itself makes against pid reuse). Older versions keep no such file: their sessions are never live.
        The map is cached briefly because the listing calls summarize() once per source.
        """
        now = time.monotonic()
        if self._live and now - self._live[0] < LIVE_TTL:
            return self._live[1]
        live: dict[str, int] = {}
        for root, _how, _prio in self._roots():
            for e in _scandir(root / "sessions"):
                if not (e.name.endswith(".json") and e.name[:-5].isdigit()):
                    continue
                rec = _read_small_json(e.path)
                if not isinstance(rec, dict):
                    continue
                pid, sid = rec.get("pid"), rec.get("sessionId")
                if isinstance(sid, str) and pid_alive(pid) and _same_process(pid, rec.get("procStart")):
                    live[sid] = pid
        self._live = (now, live)
        return live

    # ---- steps ------------------------------------------------------------------------------------------

    def steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        kind = session.locator.get("kind") or (
            KIND_AGENT if os.path.basename(session.store_path).startswith("agent-") else KIND_SESSION)
        walker = _StepWalker(is_sub=kind in (KIND_AGENT, KIND_SUBAGENT) or session.parent_id is not None)
        with _open_regular(session.store_path, buffering=256 * 1024) as f:
            for raw, last in _bounded_lines(f, stats):
                yield from walker.line(raw, last, stats)
        yield from walker.finish()


# ---------------------------------------------------------------------------------------------------------
# Summary scanning


class _Chunk:
    """Whole lines of a head or tail chunk, found by offset so that only the lines a summary needs are
    sliced and decoded (splitting every line costs more than the few decodes)."""

    __slots__ = ("buf", "end", "first", "open_last")

    def __init__(self, buf: bytes, *, is_tail: bool, whole: bool) -> None:
        self.buf = buf
        # a tail starts inside a line: skip to the first newline
        self.first = buf.find(b"\n") + 1 if is_tail else 0
        if is_tail and self.first == 0:
            self.first = len(buf)
        last_nl = buf.rfind(b"\n")
        # The text after the last newline is the file's end only for a tail or a whole file (then it may
        # be a live writer's cut line); in a head that is not the whole file it is cut by us: dropped.
        self.open_last = (is_tail or whole) and last_nl + 1 < len(buf) and last_nl + 1 >= self.first
        self.end = len(buf) if self.open_last else last_nl + 1

    def forward(self) -> Iterator[tuple[int, int]]:
        pos, end, buf = self.first, self.end, self.buf
        while pos < end:
            nl = buf.find(b"\n", pos, end)
            stop = end if nl < 0 else nl
            if stop > pos:
                yield pos, stop
            pos = stop + 1

    def backward(self) -> Iterator[tuple[int, int]]:
        stop, buf = self.end, self.buf
        if stop > self.first and buf[stop - 1: stop] == b"\n":
            stop -= 1
        while stop > self.first:
            nl = buf.rfind(b"\n", self.first, stop)
            start = nl + 1 if nl >= 0 else self.first
            if stop > start:
                yield start, stop
            stop = start - 1

    def line_at(self, i: int) -> tuple[int, int] | None:
        if i < self.first or i >= self.end:
            return None
        start = self.buf.rfind(b"\n", self.first, i) + 1 or self.first
        nl = self.buf.find(b"\n", i, self.end)
        return start, (self.end if nl < 0 else nl)

    def maybe_cut(self, stop: int) -> bool:
        return self.open_last and stop == self.end


@dataclass
class _Scan:
    """Facts from a head (read forward) and a tail (read backward); each line is decoded at most once."""

    is_sub: bool
    first_request: str | None = None
    cwd: str | None = None
    started_at: float | None = None
    updated_at: float | None = None
    branch: str | None = None
    model: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    custom_title: str | None = None
    ai_title: str | None = None
    summary: str | None = None
    damaged: int = 0
    bad_utf8: int = 0
    _memo: dict[tuple[int, int], dict[str, Any] | None] = field(default_factory=dict)

    def _rec(self, ci: int, c: _Chunk, start: int, stop: int) -> dict[str, Any] | None:
        key = (ci, start)
        if key in self._memo:
            return self._memo[key]
        rec = _decode(c.buf[start:stop])
        if rec is None and not c.maybe_cut(stop):
            self.damaged += 1
        elif isinstance(rec, _Replaced):
            self.bad_utf8 += 1
        self._memo[key] = rec
        return rec

    def feed(self, head: bytes, tail: bytes) -> None:
        chunks = [_Chunk(head, is_tail=False, whole=not tail)]
        if tail:
            chunks.append(_Chunk(tail, is_tail=True, whole=False))
        h = chunks[0]

        # Forward over the head: the first cwd, time, ids and the first real request.
        buf = h.buf
        for start, stop in h.forward():
            if not ((self.started_at is None and buf.find(b'"timestamp"', start, stop) >= 0)
                    or (self.cwd is None and buf.find(b'"cwd"', start, stop) >= 0)
                    or (self.first_request is None and (buf.find(b'"user"', start, stop) >= 0
                                                        or buf.find(b"queued_command", start, stop) >= 0))
                    or (self.session_id is None and self.is_sub)):
                continue  # e.g. a dequeue or a listing attachment: nothing to add, leave it undecoded
            rec = self._rec(0, h, start, stop)
            if rec is not None:
                self._forward(rec)
                if self.first_request is not None and self.cwd is not None and self.started_at is not None \
                        and (self.session_id is not None or not self.is_sub):
                    break
        # Titles anywhere in what was read, the later record winning (byte search, then decode the line).
        hits: list[tuple[int, int, int]] = []
        for ci, c in enumerate(chunks):
            for needle in (b'-title"', b'"summary"'):  # "custom-title", "ai-title", "summary" records
                i = c.buf.find(needle, c.first)
                while i >= 0:
                    span = c.line_at(i)
                    if span:
                        hits.append((ci, *span))
                        i = c.buf.find(needle, span[1])
                    else:
                        break
        for ci, start, stop in sorted(set(hits)):
            rec = self._rec(ci, chunks[ci], start, stop)
            if rec is not None:
                self._title_rec(rec)
        # Backward from the end: last activity, latest non-empty branch, latest model.
        branch_done = False
        for ci in range(len(chunks) - 1, -1, -1):
            c = chunks[ci]
            for start, stop in c.backward():
                if self.updated_at is not None and branch_done and self.model is not None:
                    return
                if not (self.updated_at is None and c.buf.find(b'"timestamp"', start, stop) >= 0) \
                        and not (self.model is None and c.buf.find(b'"model"', start, stop) >= 0) \
                        and (branch_done or not _names_branch(c.buf, start, stop)):
                    continue  # nothing this line could add: leave it undecoded
                rec = self._rec(ci, c, start, stop)
                if rec is None:
                    continue
                ts = parse_time(rec.get("timestamp"))
                if ts is not None and (self.updated_at is None or ts > self.updated_at):
                    self.updated_at = ts  # records are not strictly time-ordered (attachments): keep the max
                if not branch_done:
                    b = rec.get("gitBranch")
                    if isinstance(b, str) and b:
                        self.branch = None if b == "HEAD" else b  # detached HEAD names no branch
                        branch_done = True
                if self.model is None:
                    self.model = _model_of(rec)

    def _forward(self, rec: dict[str, Any]) -> None:
        if self.cwd is None and isinstance(rec.get("cwd"), str) and rec["cwd"]:
            self.cwd = rec["cwd"]
        if self.started_at is None:
            self.started_at = parse_time(rec.get("timestamp"))
        if self.session_id is None and isinstance(rec.get("sessionId"), str) and rec["sessionId"]:
            self.session_id = rec["sessionId"]
        if self.agent_id is None and isinstance(rec.get("agentId"), str) and rec["agentId"]:
            self.agent_id = rec["agentId"]
        if self.first_request is None:
            text = request_text(rec, in_subagent=self.is_sub)
            if text is not None:
                self.first_request = _cap(text)

    def _title_rec(self, rec: dict[str, Any]) -> None:
        t = rec.get("type")
        if t == "custom-title" and isinstance(rec.get("customTitle"), str) and rec["customTitle"].strip():
            self.custom_title = rec["customTitle"].strip()
        elif t == "ai-title" and isinstance(rec.get("aiTitle"), str) and rec["aiTitle"].strip():
            self.ai_title = rec["aiTitle"].strip()
        elif t == "summary" and isinstance(rec.get("summary"), str) and rec["summary"].strip():
            self.summary = rec["summary"].strip()

    def title(self) -> str | None:
        for t in (self.custom_title, self.ai_title, self.summary):
            if t:
                return _cap(t)
        if self.first_request:
            for line in self.first_request.splitlines():
                if line.strip():
                    return line.strip()[:200]
        return None

    def deep(self, path: str, s: Session) -> None:
        """Read past the head for a first request or cwd that lies deeper (long injected context, a giant
        first line). Stops as soon as both are known, or at DEEP_LIMIT."""
        stats = ReadStats()
        try:
            with _open_regular(path) as f:
                for raw, _last in _bounded_lines(f, stats):
                    if stats.bytes_read > DEEP_LIMIT:
                        break
                    if _is_progress(raw):
                        continue
                    rec = _decode(raw)
                    if isinstance(rec, dict):
                        self._forward(rec)
                    if self.first_request is not None and self.cwd is not None:
                        break
        except OSError as e:
            s.problems.append(f"could not read past the head: {e.strerror or e}")
            return
        s.locator["read_deep"] = True
        if stats.bytes_read > DEEP_LIMIT and self.first_request is None:
            s.problems.append(f"first request not found in the first {DEEP_LIMIT // (1024 * 1024)} MiB")


class _Replaced(dict):  # type: ignore[type-arg]
    """A record decoded after replacing invalid UTF-8 (kept, but reported)."""


def _decode(raw: bytes) -> dict[str, Any] | None:
    """One record, or None for damage. Invalid UTF-8 is replaced rather than losing the record."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        again = loads(raw.decode("utf-8", "replace"))
        return _Replaced(again) if isinstance(again, dict) else None
    rec = loads(text)
    return rec if isinstance(rec, dict) else None


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _names_branch(buf: bytes, start: int, stop: int) -> bool:
    i = buf.find(b'"gitBranch":"', start, stop)
    return i >= 0 and buf[i + 13: i + 14] != b'"'


def _model_of(rec: dict[str, Any]) -> str | None:
    if rec.get("type") != "assistant":
        return None
    msg = rec.get("message")
    m = msg.get("model") if isinstance(msg, dict) else None
    return m if isinstance(m, str) and m and m != "<synthetic>" else None


# ---------------------------------------------------------------------------------------------------------
# What counts as the user's own words (runtime-stores.md §1.5)


def _unwrap(text: str) -> str | None:
    """Strip IDE/reminder wrapper blocks in front of the user's words; None when nothing real is left or
    the text is one of Claude Code's injected forms."""
    while True:
        m = _WRAPPER_BLOCK.match(text)
        if not m:
            break
        text = text[m.end():]
    text = text.strip()
    if not text or text.startswith(_INJECTED_PREFIXES):
        return None
    return text


def _blocks_text(content: Any) -> str | None:
    """Text of a user message: a string, or text blocks (None if it carries tool results)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = []
    for b in content:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "tool_result":
            return None
        if b.get("type") == "text" and isinstance(b.get("text"), str):
            # Whole wrapper blocks (IDE context, reminders) beside the typed text are dropped.
            stripped = _WRAPPER_BLOCK.sub("", b["text"], count=1) if _WRAPPER_BLOCK.match(b["text"]) \
                else b["text"]
            if stripped.strip():
                parts.append(stripped)
    return "\n\n".join(parts) if parts else None


def _typed_origin(origin: Any) -> bool:
    """2.1.x tags prompts with `origin.kind`; like Claude Code itself, count a human, a channel and an
    auto-continuation as typed input, not a peer session, a task notification or a scheduled loop."""
    if not isinstance(origin, dict):
        return True
    return origin.get("kind") in _TYPED_ORIGINS


def request_text(rec: dict[str, Any], *, in_subagent: bool = False) -> str | None:
    """The user's own words in a record, unwrapped, or None when the record is not a real request."""
    t = rec.get("type")
    if t == "attachment":
        att = rec.get("attachment")
        if not isinstance(att, dict) or att.get("type") != "queued_command" or att.get("isMeta"):
            return None
        if att.get("commandMode") not in (None, "prompt") or not _typed_origin(att.get("origin")):
            return None
        prompt = att.get("prompt")
        text = _blocks_text(prompt)
        return _unwrap(text) if text else None
    if t != "user" or rec.get("isMeta") or rec.get("isCompactSummary") \
            or not _typed_origin(rec.get("origin")):
        return None
    if rec.get("isSidechain") and not in_subagent:
        return None
    msg = rec.get("message")
    if not isinstance(msg, dict):
        return None
    text = _blocks_text(msg.get("content"))
    return _unwrap(text) if text is not None else None


def _cap(text: str, limit: int = MAX_TEXT) -> str:
    """Cap a text, keeping Segue's handoff marker line intact even when it lies past the cut."""
    if len(text) <= limit:
        return text
    for m in _HANDOFF_LINE.finditer(text):
        if m.end() > limit - 1:
            marker = m.group(0)
            keep = limit - len(marker) - 2
            if keep > 0:
                return text[:keep] + "…\n" + marker
    return text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------------------
# Steps


@dataclass
class _Pending:
    kind: str  # command | edit | subagent
    text: str
    at: float | None
    side: bool  # C1 inline sidechain (subagent activity inside the parent)
    path: str | None = None
    added: int | None = None


class _StepWalker:
    """Turns records into Steps in file order. Tool calls wait for their results (exit codes, patch
    counts, agent ids); the few still waiting are flushed at the next real request or at the end."""

    def __init__(self, is_sub: bool) -> None:
        self.is_sub = is_sub
        self.pending: dict[str, _Pending] = {}
        self.msg_id: str | None = None
        self.msg_parts: list[str] = []
        self.msg_at: float | None = None
        self.seen: deque[str] = deque(maxlen=2048)
        self.seen_set: set[str] = set()

    def _dup(self, key: Any) -> bool:
        if not isinstance(key, str) or not key:
            return False
        if key in self.seen_set:
            return True
        if len(self.seen) == self.seen.maxlen:
            self.seen_set.discard(self.seen[0])
        self.seen.append(key)
        self.seen_set.add(key)
        return False

    def line(self, raw: bytes, last: bool, stats: ReadStats) -> Iterator[Step]:
        # Cheap byte checks first: only user/assistant messages and queued prompts matter.
        first = _FIRST_TYPE.match(raw)
        if first is not None and first.group(1) not in _MESSAGE_TYPES:
            return  # queue operations, last-prompt, titles, snapshots: their first key says what they are
        # A message's role comes early; a progress record names its type before any message it quotes.
        # Searching near the front first spares a scan of the whole line (`_is_progress`).
        r = raw.find(b'"role":"', 0, 4096)
        if r >= 0:
            if raw.find(b'"type":"progress"', 0, r) >= 0:
                return
        elif raw.find(b'"type":"progress"', 0, 4096) >= 0:
            return
        elif len(raw) <= 4096:  # searched whole: no role, no progress
            if b"queued_command" not in raw:
                return
        elif _is_progress(raw) or (b'"role":"' not in raw and b"queued_command" not in raw):
            return
        # A record holding tool results is never a request: when none of its results answers a call we
        # wait for (reads, greps, … are left out), skip it undecoded. Quotes inside JSON strings are
        # escaped, so these byte patterns only match real keys.
        ids = _tool_use_ids(raw) if b'"tool_result"' in raw else []
        if ids and not any(i.decode("utf-8", "replace") in self.pending for i in ids):
            return
        rec = None
        if len(raw) >= CUT_MIN:
            rec = self._cut_results(raw) if ids else _cut_assistant(raw)
        if rec is None and ids and len(raw) > BIG_LINE and len(ids) == 1:
            yield from self._light_result(raw, ids[0].decode("utf-8", "replace"))
            return
        if rec is None:
            rec = _decode(raw)
        if rec is None:
            if not last:
                stats.damaged_lines += 1
            return
        if isinstance(rec, _Replaced):
            stats.problems.append("a line with invalid UTF-8 was read with replacement characters")
        if self._dup(rec.get("uuid")):
            return
        t = rec.get("type")
        at = parse_time(rec.get("timestamp"))
        side = bool(rec.get("isSidechain")) and not self.is_sub
        if t == "assistant":
            yield from self._assistant(rec, at, side)
        elif t in ("user", "attachment"):
            yield from self._flush_message()
            yield from self._user(rec, at, side)

    def _cut_results(self, raw: bytes) -> dict[str, Any] | None:
        """Tool results decoded from a copy of the line with their long texts cut to the ends a brief
        reads (a command's exit-code header and output tail); None when that is not safe."""
        spans = []
        pos = 0
        # Inside the `toolUseResult` object (after the message) strings repeat the output or hold file
        # texts: none is read, so they are cut whole. A string `toolUseResult` keeps its exit-code head.
        tur_at = raw.find(b'"toolUseResult":{')
        tur_at = len(raw) if tur_at < 0 else tur_at
        while (m := _RESULT_KEYS.search(raw, pos)) is not None:
            j = m.end() - 1
            k = _string_end(raw, j, 4096)
            if k < 0:
                return None
            keep = CUT_KEEP if j < tur_at and m.group(1) in _READ_KEYS else 0
            spans.append((j, keep, keep))
            pos = k + 1
        slim = cut_strings(raw, spans)
        rec = _decode(slim) if slim is not None else None
        if rec is None or isinstance(rec, _Replaced) or rec.get("type") != "user":
            return None
        msg = rec.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        tur = rec.get("toolUseResult")
        if not isinstance(content, list) or (isinstance(tur, str) and not _cut_kept(tur, False)):
            return None
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                p = self.pending.get(b.get("tool_use_id"))  # type: ignore[arg-type]
                if p is not None and p.kind == "command" and not _cut_kept(_result_text(b.get("content")), True):
                    return None
        return rec

    def _flush_message(self) -> Iterator[Step]:
        if self.msg_parts:
            text = "\n\n".join(self.msg_parts)
            yield Step("message", text=_cap(text, STEP_TEXT), at=self.msg_at)
        self.msg_parts, self.msg_id, self.msg_at = [], None, None

    def _assistant(self, rec: dict[str, Any], at: float | None, side: bool) -> Iterator[Step]:
        msg = rec.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), list):
            return
        if msg.get("model") == "<synthetic>":  # Claude's own stand-ins (API errors, "No response requested.")
            return
        mid = msg.get("id") if isinstance(msg.get("id"), str) else None
        if mid != self.msg_id:
            yield from self._flush_message()
        for b in msg["content"]:
            if not isinstance(b, dict):
                continue
            bt = b.get("type")
            if bt == "text" and isinstance(b.get("text"), str) and b["text"].strip() and not side:
                if not self.msg_parts:
                    self.msg_at = at
                self.msg_id = mid
                if sum(len(p) for p in self.msg_parts) < STEP_TEXT:
                    self.msg_parts.append(b["text"].strip())
            elif bt == "tool_use":
                yield from self._flush_message()
                yield from self._tool_use(b, at, side)

    def _tool_use(self, b: dict[str, Any], at: float | None, side: bool) -> Iterator[Step]:
        tid, name = b.get("id"), b.get("name")
        inp = b.get("input") if isinstance(b.get("input"), dict) else {}
        if not isinstance(name, str) or self._dup(tid):
            return
        key = tid if isinstance(tid, str) else f"_anon{id(b)}"
        if name in BASH_TOOLS:
            cmd = inp.get("command")
            self._add(key, _Pending("command", str(cmd) if cmd is not None else "", at, side))
        elif name in EDIT_TOOLS:
            path = inp.get("file_path") or inp.get("notebook_path") or inp.get("path")
            added = _line_count(inp["content"]) if name == "Write" and isinstance(inp.get("content"), str) \
                else None
            self._add(key, _Pending("edit", "", at, side, path=str(path) if path else None, added=added))
        elif name in AGENT_TOOLS:
            if side:
                return
            task = inp.get("prompt") or inp.get("description") or ""
            self._add(key, _Pending("subagent", _cap(str(task), STEP_TEXT), at, side))
        elif name in READ_TOOLS or side:
            return
        else:
            yield Step("tool", text=f"{name}: {_short_input(inp)}".rstrip(": "), at=at)

    def _add(self, key: str, p: _Pending) -> None:
        if len(self.pending) >= 512:  # results that never came; keep memory flat
            self.pending.pop(next(iter(self.pending)))
        self.pending[key] = p

    def _user(self, rec: dict[str, Any], at: float | None, side: bool) -> Iterator[Step]:
        text = request_text(rec, in_subagent=self.is_sub)
        if text is not None:
            if rec.get("type") == "user":
                yield from self.finish_pending()
            yield Step("request", text=_cap(text, STEP_TEXT), at=at)
            return
        msg = rec.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            tur = rec.get("toolUseResult")
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    yield from self._result(b, tur, at)
            return
        if side or rec.get("type") != "user" or rec.get("isMeta") or not isinstance(content, str):
            return
        # Slash commands and `!` shell commands the user typed.
        m = _BASH_INPUT.match(content)
        if m:
            yield Step("command", text=m.group(1).strip(), at=at, exit_code=None)
            return
        m = _SLASH.search(content)
        if m and content.lstrip().startswith(("<command-name>", "<command-message>")):
            args = _SLASH_ARGS.search(content)
            arg = args.group(1).strip() if args else ""
            yield Step("tool", text=f"Slash command: {m.group(1)} {arg}".rstrip(), at=at)

    def _result(self, b: dict[str, Any], tur: Any, at: float | None) -> Iterator[Step]:
        p = self.pending.pop(b.get("tool_use_id"), None) if isinstance(b.get("tool_use_id"), str) else None
        if p is None:
            return
        is_error = b.get("is_error") is True
        if p.kind == "command":
            text = _result_text(b.get("content"))
            code = command_exit_code(text, is_error, tur)
            yield Step("command", text=p.text, at=p.at, exit_code=code,
                       output=text[-OUTPUT_TAIL:] if text else None)
        elif p.kind == "edit":
            if is_error:
                return  # the file was not changed
            added, removed = _patch_counts(tur)
            if added is None and isinstance(tur, dict) and tur.get("type") == "create":
                added, removed = p.added, 0
            yield Step("edit", text=p.path or "", path=p.path, at=p.at, added=added, removed=removed)
        elif p.kind == "subagent":
            agent = tur.get("agentId") if isinstance(tur, dict) else None
            ref = subagent_session_id(agent) if isinstance(agent, str) and agent else None
            yield Step("subagent", text=p.text, at=p.at, ref=ref)

    def _light_result(self, raw: bytes, tid: str) -> Iterator[Step]:
        """A giant tool result (tens of MB of output): take the facts from byte patterns, skip decoding."""
        p = self.pending.pop(tid, None)
        if p is None:
            return
        if p.kind == "command":
            start = raw.find(b'"content":"')
            head = raw[start + 11: start + 200].decode("utf-8", "replace") if start >= 0 else ""
            is_error = _IS_ERROR_TRUE in raw
            interrupted = b'"interrupted":true' in raw
            code = command_exit_code(head, is_error, {"interrupted": True} if interrupted else None)
            yield Step("command", text=p.text, at=p.at, exit_code=code)
        elif p.kind == "edit":
            rec = _decode(raw)  # rare (a multi-MB Write): decode for the patch counts
            added, removed = _patch_counts(rec.get("toolUseResult") if rec else None)
            yield Step("edit", text=p.path or "", path=p.path, at=p.at, added=added, removed=removed)
        else:
            ids = _AGENT_ID.findall(raw)
            ref = subagent_session_id(ids[-1].decode()) if ids else None
            yield Step("subagent", text=p.text, at=p.at, ref=ref)

    def finish_pending(self) -> Iterator[Step]:
        """Calls whose results never came (interrupted, killed, still running): exit code unknown."""
        for p in self.pending.values():
            if p.kind == "command":
                yield Step("command", text=p.text, at=p.at, exit_code=None)
            elif p.kind == "edit":
                yield Step("edit", text=p.path or "", path=p.path, at=p.at)
            elif p.kind == "subagent":
                yield Step("subagent", text=p.text, at=p.at)
        self.pending.clear()

    def finish(self) -> Iterator[Step]:
        yield from self._flush_message()
        yield from self.finish_pending()


# ---------------------------------------------------------------------------------------------------------
# Reading long lines by their ends
#
# A tool result line holds the output twice (the result's content and `toolUseResult.stdout`), an Edit's
# holds the whole file (`originalFile`), thinking blocks run to tens of KiB. A brief reads none of that but
# a command's exit-code header and last OUTPUT_TAIL characters. Such lines are decoded from a copy whose
# long strings keep only their ends (`cut_strings`); whenever the cut copy could read differently from the
# whole line, the whole line is decoded.

CUT_MIN = 8 * 1024  # shorter lines are decoded whole: cutting costs more than it saves
CUT_KEEP = 1024  # bytes kept at each end of a result text the brief reads
_FIRST_TYPE = re.compile(rb'\{"type":"([\w-]+)"')
_MESSAGE_TYPES = (b"user", b"assistant", b"attachment")
_RESULT_KEYS = re.compile(rb'"(content|text|stdout|stderr|originalFile|oldString|newString|toolUseResult)":"')
_READ_KEYS = (b"content", b"text", b"toolUseResult")
_ASSISTANT_CUTS = re.compile(rb'"type":"(?:thinking","thinking|redacted_thinking","data)":"'
                             rb'|"(old_string|new_string|content)":"')


def _tool_use_ids(raw: bytes) -> list[bytes]:
    """`_TOOL_USE_ID.findall(raw)` by `bytes.find`, several times faster than the regex on long lines."""
    out = []
    i = raw.find(b'"tool_use_id":"')
    while i >= 0:
        j = i + 15
        k = raw.find(b'"', j)
        if k < 0:
            break
        if k > j and raw.find(b"\\", j, k) < 0:
            out.append(raw[j:k])
            i = raw.find(b'"tool_use_id":"', k + 1)
        else:
            i = raw.find(b'"tool_use_id":"', i + 1)
    return out


def _cut_kept(text: Any, tail: bool) -> bool:
    """Does a cut text read as the whole one would: the exit code at its start (`command_exit_code`),
    and with `tail`, its last OUTPUT_TAIL characters?"""
    i = text.find(CUT_MARK) if isinstance(text, str) else -1
    if i < 0:
        return True
    m = _EXIT_TEXT.match(text)
    if len(text[:i].lstrip()) < 80 or (m is not None and m.end() >= i):
        return False
    return not tail or len(text) - text.rfind(CUT_MARK) - len(CUT_MARK) >= OUTPUT_TAIL


def _cut_assistant(raw: bytes) -> dict[str, Any] | None:
    """An assistant line decoded without what a brief never reads: thinking text and signatures, an Edit's
    old and new strings, a Write's content (its line count, all a brief shows, is taken from the bytes).
    None when the line has nothing to cut or a cut string belongs to anything else."""
    spans = []
    lines: dict[int, tuple[int, bool]] = {}
    pos = 0
    while (m := _ASSISTANT_CUTS.search(raw, pos)) is not None:
        j = m.end() - 1
        k = _string_end(raw, j, 4096)
        if k < 0:
            return None
        pos = k + 1
        if m.group(1) == b"content":
            if raw.find(b"\\\\", j, k) >= 0:
                continue  # an escaped backslash makes `\n` ambiguous by bytes: decoded whole
            # every backslash starts an escape: the text's newlines are its `\n` and `\u000a` escapes
            newlines = raw.count(b"\\n", j, k) + raw.count(b"\\u000a", j, k) + raw.count(b"\\u000A", j, k)
            lines[j] = (newlines, raw.endswith(b"\\n", j, k) or raw[k - 6:k] in (b"\\u000a", b"\\u000A"))
        spans.append((j, 0, 0))
        if m.group(1) is None and raw.startswith(b',"signature":"', pos):
            spans.append((pos + 13, 0, 0))
    cut: list[int] = []
    slim = cut_strings(raw, spans, cut) if spans else None
    rec = _decode(slim) if slim is not None else None
    if rec is None or isinstance(rec, _Replaced):
        return None
    contents = [lines[j] for j in cut if j in lines]  # in line order, as the blocks holding them
    msg = rec.get("message")
    for b in msg.get("content", ()) if isinstance(msg, dict) and isinstance(msg.get("content"), list) else ():
        if not isinstance(b, dict):
            continue
        inp = b.get("input")
        for key, v in inp.items() if isinstance(inp, dict) else ():
            if not isinstance(v, str) or CUT_MARK not in v:
                continue
            name = b.get("name")
            if name == "Write" and key == "content" and contents:
                n, ends = contents.pop(0)
                inp[key] = "\n" * n + ("" if ends else "x")  # the same `_line_count`
            elif name not in EDIT_TOOLS or key not in ("old_string", "new_string"):
                return None  # a cut text a step would show: decode the line whole
    return rec if not contents else None


def command_exit_code(text: str, is_error: bool, tur: Any) -> int | None:
    """Claude stores no exit code: failures are `is_error` with content `Exit code N…`; success is 0."""
    if isinstance(tur, dict) and (tur.get("interrupted") is True or tur.get("backgroundTaskId")):
        return None  # killed, or still running in the background
    m = _EXIT_TEXT.match(text or "")
    if m is None and isinstance(tur, str):
        m = _EXIT_TEXT.match(tur)
    if m:
        return int(m.group(1))
    if is_error:
        return None  # failed without a code: denied, timed out, or an old file with bare stderr
    if isinstance(tur, dict) and tur.get("returnCodeInterpretation") in _NONZERO_OK:
        return 1  # grep/find/diff/test exit 1, which Claude does not count as an error
    return 0


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def _patch_counts(tur: Any) -> tuple[int | None, int | None]:
    if not isinstance(tur, dict) or not isinstance(tur.get("structuredPatch"), list):
        return None, None
    hunks = tur["structuredPatch"]
    if not hunks:
        return (None, None) if tur.get("type") == "create" else (0, 0)
    added = removed = 0
    for h in hunks:
        for ln in h.get("lines", []) if isinstance(h, dict) else []:
            if isinstance(ln, str) and ln.startswith("+"):
                added += 1
            elif isinstance(ln, str) and ln.startswith("-"):
                removed += 1
    return added, removed


def _line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _short_input(inp: dict[str, Any]) -> str:
    for k in ("url", "query", "pattern", "description", "command", "file_path", "path", "prompt",
              "skill", "name"):
        v = inp.get(k)
        if isinstance(v, str) and v.strip():
            return _oneline(v)
    for v in inp.values():
        if isinstance(v, str) and v.strip():
            return _oneline(v)
    return ""


def _oneline(s: str, n: int = 120) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


# ---------------------------------------------------------------------------------------------------------
# Small I/O helpers


def _is_progress(raw: bytes) -> bool:
    """`progress` records can be most of a file and embed whole subagent messages: skip them undecoded.
    Their top-level `"type":"progress"` precedes the nested messages; in user/assistant records the
    message's `"role":"…"` comes first, so the order of the two markers tells them apart."""
    p = raw.find(b'"type":"progress"')
    if p < 0:
        return False
    r = raw.find(b'"role":"')
    return r < 0 or p < r


def _scandir(path: str | os.PathLike[str]) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _is_dir(e: os.DirEntry[str]) -> bool:
    try:
        return e.is_dir()
    except OSError:
        return False


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _open_regular(path: str, buffering: int = -1) -> BinaryIO:
    """Open only regular files: O_NONBLOCK keeps a FIFO from hanging the open, fstat then refuses it."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file ({_file_kind(st.st_mode)})")
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def _bounded_lines(f: BinaryIO, stats: ReadStats) -> Iterator[tuple[bytes, bool]]:
    """(line, is_last_without_newline). Lines over MAX_LINE are drained without being held, and counted."""
    while True:
        raw = f.readline(MAX_LINE + 1)
        if not raw:
            return
        stats.bytes_read += len(raw)
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            while True:
                more = f.readline(1024 * 1024)
                stats.bytes_read += len(more)
                if not more or more.endswith(b"\n"):
                    break
            stats.damaged_lines += 1
            continue
        if not raw.strip():
            continue
        yield raw, not raw.endswith(b"\n")


def _read_small_json(path: str, cap: int = 256 * 1024) -> Any:
    try:
        with _open_regular(path) as f:
            data = f.read(cap + 1)
    except OSError:
        return None
    return loads(data) if len(data) <= cap else None


def _read_meta(path: str) -> dict[str, Any]:
    meta = _read_small_json(path[: -len(".jsonl")] + ".meta.json")
    return meta if isinstance(meta, dict) else {}


def _parent_from_path(path: str, kind: str) -> str | None:
    if kind != KIND_SUBAGENT:
        return None
    parts = Path(path).parts
    if "subagents" in parts:
        i = len(parts) - 1 - parts[::-1].index("subagents")
        return parts[i - 1] if i >= 1 else None
    return None


def _same_process(pid: int, proc_start: Any) -> bool:
    if not isinstance(proc_start, str) or not proc_start:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read().decode("ascii", "replace")
    except OSError:
        return True  # no /proc (macOS): trust the live pid, as Claude Code does
    fields = s[s.rfind(")") + 2:].split(" ")
    return len(fields) <= 19 or fields[19] == proc_start


__all__ = ["HEAD_BYTES", "ClaudeReader", "command_exit_code", "request_text", "subagent_session_id"]
