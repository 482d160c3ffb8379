"""Claude Code transcript -> Steps, from decoded records (the reference path). The fast path
(`triage.py`) only decides which lines need no decoding and hands over cheaper decodes of long lines;
every step is built here from a decoded record.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from segue.model import ReadStats, Step, parse_time
from segue.stores.claude import triage
from segue.stores.claude.records import (
    BASH_INPUT,
    Replaced,
    decode,
    plural,
    request_text,
    slash_command,
    subagent_session_id,
)
from segue.stores.claude.summary import KNOWN_TYPES
from segue.stores.text import STEP_TEXT, cap, output_tail

EXIT_TEXT = re.compile(r"\A\s*(?:Error: )?(?:Exit code|Command failed with exit code) (-?\d+)")
# Bash results Claude does not flag as errors although the exit code was 1 (its own per-command rules).
_NONZERO_OK = {"No matches found", "Some directories were inaccessible", "Files differ", "Condition is false"}
# What Claude Code writes when a call never ran: the user said no, a permission rule or hook denied it, a
# `cd` outside the allowed directories was blocked (strings of Claude Code 1.0 to 2.1).
_REJECTED = re.compile(
    r"\A\s*(?:Error: )?(?:The user doesn't want to (?:proceed|take this action)|Permission to use \S+ .{0,4096}?"
    r"has been denied|\[Request interrupted by user for tool use\]|cd to .{0,4096}? was blocked\. For security)",
    re.S)

BASH_TOOLS = {"Bash"}
EDIT_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit"}
AGENT_TOOLS = {"Agent", "Task"}
MAX_EVICTED = 1 << 16  # uuids kept after they left the duplicate window, for `quiet_state`
READ_TOOLS = {"Read", "Glob", "Grep", "LS", "NotebookRead", "TodoRead"}  # left out of briefs


@dataclass
class Pending:
    kind: str  # command | edit | subagent
    text: str
    at: float | None
    side: bool  # C1 inline sidechain (subagent activity inside the parent)
    path: str | None = None
    added: int | None = None


class StepWalker:
    """Turns records into Steps in file order. Tool calls wait for their results (exit codes, patch
    counts, agent ids); the few still waiting are flushed at the next real request or at the end."""

    def __init__(self, is_sub: bool, fast: bool = True, lean: bool = False) -> None:
        self.is_sub = is_sub
        self.fast = fast
        self.lean = lean  # the search index's read: no times, no output tails (it keeps neither)
        self.pending: dict[str, Pending] = {}
        self.msg_id: str | None = None
        self.msg_parts: list[str] = []
        self.msg_at: float | None = None
        self.seen: deque[str] = deque(maxlen=2048)
        self.seen_set: set[str] = set()
        self.lines = 0  # non-blank lines
        self.recognised = 0  # of them, Claude Code records (decoded, or skipped on a positive match)
        self.bad_inputs = 0  # tool calls whose arguments could not be read
        self.requests = 0
        # resume's last quiet point (`note_quiet`): the counters then, the uuids put in the window so far
        # then, and the ones pushed out of it since (None: too many to keep)
        self.appended = 0
        self.q_counters = self.counters()
        self.q_appended = 0
        self.evicted: list[str] | None = None

    def quiet(self) -> bool:
        """Nothing is held (no call waiting, no message part): `state()` is all there is to go on from."""
        return not self.pending and not self.msg_parts

    def counters(self) -> tuple[int, int, int, int]:
        return self.lines, self.recognised, self.bad_inputs, self.requests

    def state(self) -> tuple[Any, ...]:
        """What a later walker needs to go on from here, while quiet (segue.stores.claude.resume): the
        counters and the duplicate window (uuids; no session text)."""
        return (self.is_sub, self.fast, self.lean, *self.counters(), list(self.seen))

    def restore(self, state: tuple[Any, ...]) -> bool:
        """Go on from `state()`; False (nothing changed) when it was another kind of walker's."""
        is_sub, fast, lean, lines, recognised, bad, requests, seen = state
        if (is_sub, fast, lean) != (self.is_sub, self.fast, self.lean) or not self.quiet() or self.lines:
            return False
        self.lines, self.recognised, self.bad_inputs, self.requests = lines, recognised, bad, requests
        self.seen.extend(seen)
        self.appended = len(self.seen)
        self.seen_set.update(self.seen)
        return True

    def note_quiet(self) -> None:
        """Remember this (quiet) point for `quiet_state`, cheaply: no copy of the window."""
        self.q_counters = self.counters()
        self.q_appended = self.appended
        if self.evicted != []:  # (None before the first: nothing kept for a walker that never notes)
            self.evicted = []

    def quiet_state(self) -> tuple[Any, ...] | None:
        """`state()` as it was at the last `note_quiet()`: the window then is the one now without the uuids
        added since, and with the ones they pushed out; None when those were too many to keep."""
        if self.evicted is None:
            return None
        seq = self.evicted + list(self.seen)
        added = self.appended - self.q_appended
        if added > len(seq):
            return None
        return (self.is_sub, self.fast, self.lean, *self.q_counters, seq[:len(seq) - added])

    def _dup(self, key: Any) -> bool:
        if not isinstance(key, str) or not key:
            return False
        if key in self.seen_set:
            return True
        if len(self.seen) == self.seen.maxlen:
            old = self.seen[0]
            self.seen_set.discard(old)
            if self.evicted is not None:
                self.evicted.append(old)
                if len(self.evicted) > MAX_EVICTED:
                    self.evicted = None
        self.seen.append(key)
        self.seen_set.add(key)
        self.appended += 1
        return False

    def line(self, raw: bytes, last: bool, stats: ReadStats) -> Iterator[Step]:
        self.lines += 1
        rec = None
        if self.fast:
            skip, rec = triage.fast_record(raw, self.pending)
            if skip:
                self.recognised += 1
                return
        if rec is None:
            rec = decode(raw)
        if rec is None:
            if not last:
                stats.damaged_lines += 1
            return
        if rec.get("type") in KNOWN_TYPES:
            self.recognised += 1
        if isinstance(rec, Replaced):
            stats.problems.append("a line with invalid UTF-8 was read with replacement characters")
        t = rec.get("type")
        if t == "assistant":
            # every assistant record is decoded on both paths, so both see the same duplicates
            if not self._dup(rec.get("uuid")):
                yield from self._assistant(rec, None if self.lean else parse_time(rec.get("timestamp")),
                                           bool(rec.get("isSidechain")) and not self.is_sub)
        elif t in ("user", "attachment"):
            yield from self._user(rec)

    def _flush_message(self) -> Iterator[Step]:
        if self.msg_parts:
            text = "\n\n".join(self.msg_parts)
            yield Step("message", text=cap(text, STEP_TEXT), at=self.msg_at)
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
        if not isinstance(name, str) or self._dup(tid):
            return
        inp = b.get("input")
        if not isinstance(inp, dict):
            self.bad_inputs += 1  # Claude Code always writes an object: this call's arguments are lost
            inp = {}
        key = tid if isinstance(tid, str) else f"_anon{id(b)}"
        if name in BASH_TOOLS:
            cmd = inp.get("command")
            self._add(key, Pending("command", str(cmd) if cmd is not None else "", at, side))
        elif name in EDIT_TOOLS:
            path = inp.get("file_path") or inp.get("notebook_path") or inp.get("path")
            added = line_count(inp["content"]) if name == "Write" and isinstance(inp.get("content"), str) \
                else None
            self._add(key, Pending("edit", "", at, side, path=str(path) if path else None, added=added))
        elif name in AGENT_TOOLS:
            if side:
                return
            task = inp.get("prompt") or inp.get("description") or ""
            self._add(key, Pending("subagent", cap(str(task), STEP_TEXT), at, side))
        elif name in READ_TOOLS or side:
            return
        else:
            yield Step("tool", text=f"{name}: {short_input(inp)}".rstrip(": "), at=at)

    def _add(self, key: str, p: Pending) -> None:
        if len(self.pending) >= 512:  # results that never came; keep memory flat
            self.pending.pop(next(iter(self.pending)))
        self.pending[key] = p

    def _user(self, rec: dict[str, Any]) -> Iterator[Step]:
        # A record counts toward duplicates only once it is known to matter (a request, a result we wait
        # for, a typed command): the fast path leaves the others undecoded, and the duplicate window must
        # hold the same uuids on both paths.
        at = None if self.lean else parse_time(rec.get("timestamp"))
        text = request_text(rec, in_subagent=self.is_sub, slash=not self.requests)
        if text is not None:
            if self._dup(rec.get("uuid")):
                return
            self.requests += 1
            yield from self._flush_message()
            if rec.get("type") == "user":
                yield from self.finish_pending()
            yield Step("request", text=cap(text, STEP_TEXT), at=at)
            return
        msg = rec.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                       and b.get("tool_use_id") in self.pending]
            if not results or self._dup(rec.get("uuid")):
                return
            yield from self._flush_message()
            tur = rec.get("toolUseResult")
            for b in results:
                yield from self._result(b, tur, at)
            return
        side = bool(rec.get("isSidechain")) and not self.is_sub
        if side or rec.get("type") != "user" or rec.get("isMeta") or not isinstance(content, str):
            return
        # `!` shell commands and later slash commands the user typed.
        m = BASH_INPUT.match(content)
        if m and not self._dup(rec.get("uuid")):
            yield from self._flush_message()
            yield Step("command", text=m.group(1).strip(), at=at, exit_code=None)
            return
        slash = slash_command(content) if content.lstrip().startswith(("<command-name>", "<command-message>")) \
            else None
        if slash and not self._dup(rec.get("uuid")):
            yield from self._flush_message()
            yield Step("tool", text=f"Slash command: {slash}", at=at)

    def _result(self, b: dict[str, Any], tur: Any, at: float | None) -> Iterator[Step]:
        p = self.pending.pop(b.get("tool_use_id"), None) if isinstance(b.get("tool_use_id"), str) else None
        if p is None:
            return
        is_error = b.get("is_error") is True
        if p.kind == "command":
            text = result_text(b.get("content"))
            code, status = command_result(text, is_error, tur)
            yield Step("command", text=p.text, at=p.at, exit_code=code, status=status,
                       output=None if self.lean else output_tail(text))
        elif p.kind == "edit":
            if is_error:
                return  # the file was not changed
            added, removed = patch_counts(tur)
            if added is None and isinstance(tur, dict) and tur.get("type") == "create":
                added, removed = p.added, 0
            yield Step("edit", text=p.path or "", path=p.path, at=p.at, added=added, removed=removed)
        elif p.kind == "subagent":
            agent = tur.get("agentId") if isinstance(tur, dict) else None
            ref = subagent_session_id(agent) if isinstance(agent, str) and agent else None
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

    def finish(self, stats: ReadStats) -> Iterator[Step]:
        yield from self._flush_message()
        yield from self.finish_pending()
        if self.lines and not self.recognised:
            stats.unrecognised_lines += self.lines
            stats.problems.append(f"none of the {plural(self.lines, 'non-blank line')} is a Claude Code record")
        if self.bad_inputs:
            stats.problems.append(f"{plural(self.bad_inputs, 'tool call')} with arguments that could not be read")


def command_result(text: str, is_error: bool, tur: Any) -> tuple[int | None, str | None]:
    """(exit code, status). Claude stores no exit code: failures are `is_error` with content
    `Exit code N…`; success is 0. Without a code, status says what is known: `failed` (ran and failed:
    a timeout, or a file from Claude Code ≤ 2.0.28 with bare stderr), `rejected` (never ran: refused by
    the user, a permission rule, a hook or the directory sandbox), `interrupted` (killed) or `running`
    (sent to the background)."""
    if isinstance(tur, dict):
        if tur.get("interrupted") is True:
            return None, "interrupted"
        if tur.get("backgroundTaskId"):
            return None, "running"
    m = EXIT_TEXT.match(text or "")
    if m is None and isinstance(tur, str):
        m = EXIT_TEXT.match(tur)
    if m:
        return int(m.group(1)), None
    if is_error:
        rejected = _REJECTED.search(text or "") or (isinstance(tur, str) and _REJECTED.search(tur))
        return None, "rejected" if rejected else "failed"
    if isinstance(tur, dict) and tur.get("returnCodeInterpretation") in _NONZERO_OK:
        return 1, None  # grep/find/diff/test exit 1, which Claude does not count as an error
    return 0, None


def command_exit_code(text: str, is_error: bool, tur: Any) -> int | None:
    return command_result(text, is_error, tur)[0]


def result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def patch_counts(tur: Any) -> tuple[int | None, int | None]:
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


def line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def short_input(inp: dict[str, Any]) -> str:
    for k in ("url", "query", "pattern", "description", "command", "file_path", "path", "prompt",
              "skill", "name"):
        v = inp.get(k)
        if isinstance(v, str) and v.strip():
            return oneline(v)
    for v in inp.values():
        if isinstance(v, str) and v.strip():
            return oneline(v)
    return ""


def oneline(s: str, n: int = 120) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


