"""Handoff markers, `events.jsonl`, and the chain of sessions a task went through.

A session Segue starts from a brief gets a first prompt whose last line is exactly
`[segue-handoff v1 from=RUNTIME:ID]`. Readers unwrap what runtimes put around prompts; this module finds
the marker and links the sessions. The marker is not a verified identity: anyone can type it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

from segue.model import Continues, Session, iso
from segue.paths import StateDir
from segue.stores import RUNTIMES

MARKER_FORMAT = "[segue-handoff v1 from={runtime}:{id}]"
MARKER_PREFIX = "[segue-handoff v1 from="
# A whole line that ends in a marker (readers' caps keep this line when they cut a first prompt). Looser than
# `_MARKER` on purpose: a cap must not drop a line `find_marker` might still accept after unwrapping.
HANDOFF_LINE = re.compile(r"^.*\[segue-handoff v1 from=[^\]\s]+\][ \t\r]*$", re.M)
_MARKER = re.compile(
    r"\[segue-handoff v1 from=(?P<rt>" + "|".join(RUNTIMES) + r"):(?P<id>[A-Za-z0-9_.-]{1,200})\]")
# what runtimes leave after the prompt: closing quotes (OpenCode), closing tags (Cline's </user_input>)
_TRAILING_WRAPPER = re.compile(r"""(?:\s|["'`]|</[A-Za-z_][\w-]*>)+\Z""")


def marker(runtime: str, session_id: str) -> str:
    return MARKER_FORMAT.format(runtime=runtime, id=session_id)


def find_marker(first_request: str | None) -> Continues | None:
    """The session a first prompt says it continues: its last line, once wrappers are removed, must be
    exactly a Segue marker."""
    if not first_request or "[segue-handoff" not in first_request:
        return None
    text = _TRAILING_WRAPPER.sub("", first_request[-1000:])
    last = text.rsplit("\n", 1)[-1].strip()
    m = _MARKER.fullmatch(last)
    if not m:
        return None
    return Continues(runtime=m.group("rt"), id=m.group("id"))


def link(sessions: Iterable[Session]) -> list[Session]:
    """Fill `continues` on every session whose first prompt carries a marker; return those."""
    linked = []
    for s in sessions:
        c = continued(s)
        if c is not None:
            s.continues = c
            linked.append(s)
    return linked


def continued(s: Session) -> Continues | None:
    """The session `s` continues by its first prompt's marker (None: none, or itself)."""
    c = find_marker(s.first_request)
    return c if c and (c.runtime, c.id) != (s.runtime, s.id) else None


# resume.first_prompt's opening: the brief's path, as a new session from a brief was told it
_BRIEF_AT = re.compile(r"^Read the handoff brief at (?P<path>.+?\.md) \(a Markdown file written by Segue\)")
_BRIEF_HEADING = re.compile(r"# Segue handoff brief: (?P<bar>`+) ?(?P<title>.+?) ?(?P=bar)[ \t\r]*(?:\n|$)")
CONTINUES = "↪ "  # a title that names what a session continues


def continuation_title(s: Session) -> str | None:
    """The listing title of a session started from a Segue brief and titled by that first prompt (the
    instruction to read the brief says nothing of the task): "↪ " and the continued session's title as its
    brief's heading gives it, else "↪ continues <runtime> session <id's head>". None for any other session.

    The brief is read only when the prompt names one a Segue state directory holds for exactly the session
    its marker names (handoffs/<runtime>-<id>-…md, a regular file), and only its first line. Briefs are never
    rewritten, so the title is as stable as the session's own summary."""
    first = s.first_request
    # only Segue's own instruction: a prompt of one's own words with a marker typed after them names its task
    if not first or not _BRIEF_AT.match(first) or not _titled_by(s.title, first):
        return None
    c = continued(s)
    if c is None:
        return None
    source = _brief_title(s.first_request, c)
    if source and source != c.id:  # (a brief of a session with no title nor request is headed by its id)
        return source if source.startswith(CONTINUES) else CONTINUES + source
    from segue.stores import display_name

    return f"{CONTINUES}continues {display_name(c.runtime)} session {id_head(c.id)}"


# An id's first part when it ends at a separator within 8 to 16 characters: a UUID's first group, a Cline id's
# millisecond time (a cut inside it names no part of the id)
_ID_HEAD = re.compile(r"[^-_]{8,16}(?=[-_])")


def id_head(sid: str) -> str:
    """A prefix of `sid` that names it in prose: its first part (`_ID_HEAD`), else its first 8 characters (as
    the list table's shortest ids, segue.table.SHORT_ID), else all of it when that is at most 16."""
    m = _ID_HEAD.match(sid)
    if m:
        return m.group()
    return sid if len(sid) <= 16 else sid[:8]


def _titled_by(title: str | None, first_request: str) -> bool:
    """Whether a title is (a cut of) the first request: the runtime's default, not a title of its own."""
    if not title:
        return True
    t = " ".join(title.split()).rstrip("…. ")
    return bool(t) and " ".join(first_request.split()).startswith(t)


def _brief_title(first_request: str, c: Continues) -> str | None:
    from segue.kept import safe_name
    from segue.stores.text import open_regular

    m = _BRIEF_AT.match(first_request)
    if not m:
        return None
    path = m["path"]
    name = os.path.basename(path)
    if (os.path.basename(os.path.dirname(path)) != "handoffs" or not name.endswith(".md")
            or not name.startswith(f"{c.runtime}-{safe_name(c.id, 80)}-")):
        return None
    try:
        with open_regular(path) as f:
            head = f.read(2048).decode("utf-8", "replace")
    except OSError:
        return None
    h = _BRIEF_HEADING.match(head)
    return _whole_markers(h["title"].strip()) or None if h else None


# The end of a heading the brief cut ("…") inside a redaction marker: `[REDACTED:passw…`, `[REDAC…`
_CUT_MARKER = re.compile(r"\[(?:R(?:E(?:D(?:A(?:C(?:T(?:E(?:D(?::[a-z0-9-]*)?)?)?)?)?)?)?)?)?…\Z")


def _whole_markers(title: str) -> str:
    """A title without the piece of a redaction marker its cut left (the brief cuts its heading at 120)."""
    m = _CUT_MARKER.search(title)
    return title[:m.start()].rstrip() + "…" if m else title


def record_events(state: StateDir, linked: list[Session], now: float) -> int:
    """Append one `session.handoff` event per linked session not yet recorded. Returns how many.

    Read-check-append happens under an exclusive lock on the events file itself, so two processes (the
    CLI and the language server) listing at once never record a link twice."""
    if not linked:
        return 0
    state.ensure()
    fd = os.open(state.events, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        _lock(fd)
        known = _recorded(fd)
        fresh = [s for s in linked if (s.runtime, s.id) not in known]
        lines = []
        for s in fresh:
            assert s.continues is not None
            lines.append(json.dumps({
                "event": "session.handoff",
                "handoff": {"source_harness": s.continues.runtime, "source_session_id": s.continues.id},
                "session": {"runtime": s.runtime, "id": s.id},
                "fidelity": "observed",
                "at": iso(now),
            }, ensure_ascii=False) + "\n")
        if lines:
            os.write(fd, "".join(lines).encode("utf-8"))
        return len(fresh)
    finally:
        os.close(fd)  # closing releases the lock


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: appends are still atomic per write
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def _recorded(fd: int) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    with os.fdopen(os.dup(fd), "rb") as f:
        f.seek(0)
        for line in f:
            if b"session.handoff" not in line:
                continue
            try:
                ev = json.loads(line)
                out.add((ev["session"]["runtime"], ev["session"]["id"]))
            except (ValueError, KeyError, TypeError):
                continue
    return out


def chain(sessions: list[Session], start: Session) -> list[dict[str, Any]]:
    """The sessions a task went through, oldest first: ancestors via `continues`, then `start`, then every
    session that continues it (breadth first, by start time). An ancestor Segue cannot find (in no store it
    reads, and no kept facts) appears with `found` false and null title and times."""
    by_key = {(s.runtime, s.id): s for s in sessions}
    successors: dict[tuple[str, str], list[Session]] = {}
    for s in sessions:
        if s.continues:
            successors.setdefault((s.continues.runtime, s.continues.id), []).append(s)

    back: list[dict[str, Any]] = []
    seen = {(start.runtime, start.id)}
    cur = start.continues
    while cur is not None and (cur.runtime, cur.id) not in seen:
        seen.add((cur.runtime, cur.id))
        s = by_key.get((cur.runtime, cur.id))
        if s is None:
            back.append({"runtime": cur.runtime, "id": cur.id, "title": None, "started_at": None,
                         "continues": None, "found": False})
            break
        back.append(_entry(s))
        cur = s.continues
    back.reverse()

    forward: list[dict[str, Any]] = [_entry(start)]
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(successors.get((node.runtime, node.id), []), key=lambda s: (s.started_at or 0, s.id)):
            if (nxt.runtime, nxt.id) in seen:
                continue
            seen.add((nxt.runtime, nxt.id))
            forward.append(_entry(nxt))
            queue.append(nxt)
    return back + forward


def _entry(s: Session) -> dict[str, Any]:
    return {"runtime": s.runtime, "id": s.id, "title": s.label, "started_at": iso(s.started_at),
            "continues": s.continues.to_json() if s.continues else None, "found": True}
