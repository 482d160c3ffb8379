"""Claude Code records: decoding one line, and what in a record counts as the user's own words
(runtime-stores.md §1.5). The reference every other part of the reader builds on: no byte patterns here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from segue.model import ReadStats
from segue.stores.base import loads
from segue.stores.text import BOM

RUNTIME = "claude"
KIND_SESSION = "session"  # projects/<enc>/<uuid>.jsonl
KIND_AGENT = "agent"  # C2: projects/<enc>/agent-<id>.jsonl
KIND_SUBAGENT = "subagent"  # C3: projects/<enc>/<uuid>/subagents/**/agent-<id>.jsonl

MAX_LINE = 64 * 1024 * 1024  # a longer line is skipped and counted as damaged (bounded memory)

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

BASH_INPUT = _BASH_INPUT
_TYPED_ORIGINS = {"human", "channel", "auto-continuation", None}


def subagent_session_id(agent_id: str) -> str:
    """The id a subagent lists under: its bare agentId (the `Agent` result's `agentId`, the file stem
    without `agent-`), so a parent's subagent step `ref` names the child session directly."""
    return agent_id.removeprefix("agent-")


class Replaced(dict):  # type: ignore[type-arg]
    """A record decoded after replacing invalid UTF-8 (kept, but reported)."""


def decode(raw: bytes) -> dict[str, Any] | None:
    """One record, or None for damage (or a JSON value that is not an object). Invalid UTF-8 is replaced
    rather than losing the record."""
    rec = loads(raw)
    if isinstance(rec, dict):
        return rec
    if rec is not None:
        return None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        again = loads(raw.decode("utf-8", "replace"))
        return Replaced(again) if isinstance(again, dict) else None
    return None




def bounded_lines(f: BinaryIO, stats: ReadStats, at_start: bool = True) -> Iterator[tuple[bytes, bool]]:
    """(line, is_last_without_newline), blank lines left out. A UTF-8 BOM at the file's start is dropped
    (JSON does not allow one inside a record; `at_start` False: `f` is read on from inside the file). Lines
    over MAX_LINE are drained without being held, and counted. Every byte read is added to `stats.bytes_read`
    before its line is yielded (a reader on from inside the file derives the line's end from it)."""
    first = at_start
    while True:
        raw = f.readline(MAX_LINE + 1)
        if not raw:
            return
        stats.bytes_read += len(raw)
        if first:
            first = False
            if raw.startswith(BOM):
                raw = raw[3:]
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


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def model_of(rec: dict[str, Any]) -> str | None:
    """The model a reply came from, or (2.1.3xx) the one an attachment of type `model` announces to the agent
    ("You are powered by the model …": at the start, before any reply)."""
    t = rec.get("type")
    if t == "attachment":
        att = rec.get("attachment")
        ident = att.get("identity") if isinstance(att, dict) and att.get("type") == "model" else None
        m = ident.get("modelId") if isinstance(ident, dict) else None
        return m if isinstance(m, str) and m else None
    if t != "assistant":
        return None
    msg = rec.get("message")
    m = msg.get("model") if isinstance(msg, dict) else None
    return m if isinstance(m, str) and m and m != "<synthetic>" else None


# ---------------------------------------------------------------------------------------------------------
# What counts as the user's own words (runtime-stores.md §1.5)


def _unwrap(text: str, slash: bool = True) -> str | None:
    """Strip IDE/reminder wrapper blocks in front of the user's words; None when nothing real is left or
    the text is one of Claude Code's injected forms."""
    while True:
        m = _WRAPPER_BLOCK.match(text)
        if not m:
            break
        text = text[m.end():]
    text = text.strip()
    if text.startswith(("<command-name>", "<command-message>")):
        return slash_command(text) if slash else None
    if not text or text.startswith(_INJECTED_PREFIXES):
        return None
    return text


def slash_command(text: str) -> str | None:
    """A slash command the user typed (`<command-message>…</command-message><command-name>/init
    </command-name><command-args>…</command-args>`), as typed: `/init ARGS`. None when the name is missing."""
    m = _SLASH.search(text)
    if not m or not m.group(1).strip():
        return None
    name = m.group(1).strip()
    name = name if name.startswith("/") else "/" + name
    args = _SLASH_ARGS.search(text)
    arg = args.group(1).strip() if args else ""
    return f"{name} {arg}" if arg else name


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


def request_text(rec: dict[str, Any], *, in_subagent: bool = False, slash: bool = True) -> str | None:
    """The user's own words in a record, unwrapped, or None when the record is not a real request.

    A slash command (`/init ARGS`) is a request only with `slash`: readers pass it while no request has
    been seen, so a session that begins with one shows it as its request and title, while later commands
    (`/exit`, `/model`, …, which are not words for the agent) stay out of the latest request."""
    t = rec.get("type")
    if t == "attachment":
        att = rec.get("attachment")
        if not isinstance(att, dict) or att.get("type") != "queued_command" or att.get("isMeta"):
            return None
        if att.get("commandMode") not in (None, "prompt") or not _typed_origin(att.get("origin")):
            return None
        prompt = att.get("prompt")
        text = _blocks_text(prompt)
        return _unwrap(text, slash) if text else None
    if t != "user" or rec.get("isMeta") or rec.get("isCompactSummary") \
            or not _typed_origin(rec.get("origin")):
        return None
    if rec.get("isSidechain") and not in_subagent:
        return None
    msg = rec.get("message")
    if not isinstance(msg, dict):
        return None
    text = _blocks_text(msg.get("content"))
    return _unwrap(text, slash) if text is not None else None
