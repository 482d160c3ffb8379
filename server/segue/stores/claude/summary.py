"""Claude Code listing facts from a transcript's head and tail: first request, cwd, times, branch, model,
title. With fast paths on, a line is decoded only when it holds a key or value the fact needs (a necessary
condition, whatever the spacing or key order); with them off, every line read is decoded.

When the tail holds no timestamped record or no model (Claude Code 2.1.3xx ends a turn with a prompt snapshot
of ~57 KB, then records without a timestamp), the lines before the tail are read backward until both are found
(`Scan.reach`, at most REACH_LIMIT bytes), the same way in both modes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from segue.model import ReadStats, Session, parse_time
from segue.stores.claude.records import Replaced, bounded_lines, decode, model_of, request_text
from segue.stores.text import BOM, cap, open_regular

DEEP_LIMIT = 64 * 1024 * 1024  # how far a summary may read when the first request lies past the head
REACH_LIMIT = 16 * 1024 * 1024  # how far back before the tail a summary may read for the last time and model
REACH_FIRST = 64 * 1024  # the first window read back; each next one twice as large, up to REACH_WINDOW_MAX
REACH_WINDOW_MAX = 1024 * 1024
REACH_LINE_MAX = 1024 * 1024  # a longer line met reading back is skipped, not held (bounded memory)
# types Claude Code writes (any of them makes a file a Claude Code transcript)
KNOWN_TYPES = frozenset({
    "user", "assistant", "attachment", "system", "progress", "summary", "custom-title", "ai-title",
    "queue-operation", "file-history-snapshot", "last-prompt", "mode", "tag", "agent-name", "pr-link",
    "worktree-state", "content-replacement", "marble-origami-commit", "marble-origami-snapshot",
    # 2.1.3xx
    "atis-latch", "api-request-shape", "api-request-blob", "api-request", "cost-state", "tools-used",
})


class Chunk:
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
class Scan:
    """Facts from a head (read forward) and a tail (read backward); each line is decoded at most once."""

    is_sub: bool
    fast: bool = True
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
    summaries: list[tuple[str, str | None]] = field(default_factory=list)  # (text, leafUuid), in file order
    damaged: int = 0
    bad_utf8: int = 0
    recognised: int = 0
    reached: int = 0  # bytes read back before the tail (`reach`)
    reach_problem: str | None = None
    _branch_done: bool = False
    _memo: dict[tuple[int, int], dict[str, Any] | None] = field(default_factory=dict)
    _chunks: list[Chunk] = field(default_factory=list)

    def _rec(self, ci: int, c: Chunk, start: int, stop: int) -> dict[str, Any] | None:
        key = (ci, start)
        if key in self._memo:
            return self._memo[key]
        line = c.buf[start:stop]
        rec = decode(line)
        if rec is None:
            if not c.maybe_cut(stop) and line.strip():
                self.damaged += 1
        else:
            if isinstance(rec, Replaced):
                self.bad_utf8 += 1
            if rec.get("type") in KNOWN_TYPES:
                self.recognised += 1
        self._memo[key] = rec
        return rec

    def feed(self, head: bytes, tail: bytes, path: str | None = None, size: int | None = None) -> None:
        """`path` and `size` (the file the head and tail were read from) let the scan read back before the
        tail when the tail lacks the last time or model."""
        bom = 3 if head.startswith(BOM) else 0
        if bom:
            head = head[3:]
        chunks = [Chunk(head, is_tail=False, whole=not tail)]
        if tail:
            chunks.append(Chunk(tail, is_tail=True, whole=False))
        self._chunks = chunks
        h = chunks[0]
        fast = self.fast

        # Forward over the head: the first cwd, time, ids and the first real request.
        buf = h.buf
        for start, stop in h.forward():
            if fast and not ((self.started_at is None and buf.find(b'"timestamp"', start, stop) >= 0)
                             or (self.cwd is None and buf.find(b'"cwd"', start, stop) >= 0)
                             or (self.first_request is None and (buf.find(b'"user"', start, stop) >= 0
                                                                 or buf.find(b"queued_command", start, stop) >= 0))
                             or (self.session_id is None and self.is_sub)):
                continue  # e.g. a dequeue or a listing attachment: nothing to add, leave it undecoded
            rec = self._rec(0, h, start, stop)
            if rec is not None:
                self._forward(rec)
                if fast and self.first_request is not None and self.cwd is not None \
                        and self.started_at is not None and (self.session_id is not None or not self.is_sub):
                    break
        # Titles anywhere in what was read, the later record winning (byte search, then decode the line).
        spans: list[tuple[int, int, int]] = []
        if fast:
            for ci, c in enumerate(chunks):
                for needle in (b'-title"', b'"summary"'):  # "custom-title", "ai-title", "summary" records
                    i = c.buf.find(needle, c.first)
                    while i >= 0:
                        span = c.line_at(i)
                        if span:
                            spans.append((ci, *span))
                            i = c.buf.find(needle, span[1])
                        else:
                            break
            spans = sorted(set(spans))
        else:
            spans = [(ci, a, b) for ci, c in enumerate(chunks) for a, b in c.forward()]
        for ci, start, stop in spans:
            rec = self._rec(ci, chunks[ci], start, stop)
            if rec is not None:
                self._title_rec(rec)
        # Backward from the end: last activity, latest non-empty branch, latest model.
        if tail:
            self._backward(1, chunks[1])
            if path is not None and size is not None and (self.updated_at is None or self.model is None):
                # the lines between the head's whole lines and the tail's first whole line
                lo, hi = bom + h.end, size - len(tail) + chunks[1].first
                for ci, c in enumerate(self._reach(path, lo, hi), start=2):
                    if self._backward(ci, c, reach=True):
                        break
        self._backward(0, h)  # at once done when nothing more is needed

    def _done(self, reach: bool = False) -> bool:
        """Nothing more is needed (fast paths only: the reference reads on); `reach`: reading back stops once the
        time and model are known, in both modes (how far back the scan reads must not depend on the mode)."""
        if reach and self.updated_at is not None and self.model is not None:
            return True
        return self.fast and self.updated_at is not None and self._branch_done and self.model is not None

    def _backward(self, ci: int, c: Chunk, reach: bool = False) -> bool:
        """The lines of `c`, last first; True when nothing more is needed (`_done`)."""
        for start, stop in c.backward():
            if self._done(reach):
                return True
            if reach and stop - start > REACH_LINE_MAX:
                continue  # as a line too long to hold while reading back is (whatever the windows)
            if self.fast and not (self.updated_at is None and c.buf.find(b'"timestamp"', start, stop) >= 0) \
                    and not (self.model is None and c.buf.find(b'"model"', start, stop) >= 0) \
                    and (self._branch_done or not _may_name_branch(c.buf, start, stop)):
                continue  # nothing this line could add: leave it undecoded
            rec = self._rec(ci, c, start, stop)
            if rec is None:
                continue
            ts = parse_time(rec.get("timestamp"))
            if ts is not None and (self.updated_at is None or ts > self.updated_at):
                self.updated_at = ts  # records are not strictly time-ordered (attachments): keep the max
            if not self._branch_done:
                b = rec.get("gitBranch")
                if isinstance(b, str) and b:
                    self.branch = None if b == "HEAD" else b  # detached HEAD names no branch
                    self._branch_done = True
            if self.model is None:
                self.model = model_of(rec)
        return self._done(reach)

    def _reach(self, path: str, lo: int, hi: int) -> Iterator[Chunk]:
        """Chunks of the whole lines in [lo, hi) of the file, the last first, read back in growing windows. A
        line cut by REACH_LIMIT is left out, as a head leaves out its cut last line, and so is a line longer
        than REACH_LINE_MAX (its bytes are passed over, never held)."""
        if hi <= lo:
            return
        try:
            with open_regular(path) as f:
                pos, window = hi, REACH_FIRST
                carry: bytes | None = b""  # the later part of a line that began before the window; None: skipped
                while pos > lo and self.reached < REACH_LIMIT:
                    start = max(lo, pos - window, pos - (REACH_LIMIT - self.reached))
                    f.seek(start)
                    data = f.read(pos - start)
                    if len(data) != pos - start:
                        self.reach_problem = "the file shrank while it was read back"
                        return
                    self.reached += len(data)
                    pos, window = start, min(2 * window, REACH_WINDOW_MAX)
                    # before the first newline: the end of a line that began earlier (unless at lo, a line start)
                    cut = 0 if start == lo else data.find(b"\n") + 1
                    if start > lo and cut == 0:  # no line starts here: the long line goes on
                        if carry is not None:
                            carry = data + carry
                            if len(carry) > REACH_LINE_MAX + 1:  # the line and its newline
                                carry = None
                        continue
                    # a skipped line starts after this window's last newline
                    buf = data[cut:data.rfind(b"\n") + 1] if carry is None else data[cut:] + carry
                    carry = data[:cut]
                    if buf:
                        yield Chunk(buf, is_tail=False, whole=False)
        except OSError as e:
            self.reach_problem = f"could not read back before the tail: {e.strerror or e}"

    def unrecognised(self) -> int:
        """Non-blank lines read when none of them is a Claude Code record (0 when one is): decodes the
        lines the fast path left undecoded, so it is only called when the scan found nothing."""
        if self.recognised:
            return 0
        n = 0
        for ci, c in enumerate(self._chunks):
            for start, stop in c.forward():
                if c.buf[start:stop].strip():
                    n += 1
                    self._rec(ci, c, start, stop)
        return 0 if self.recognised else n

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
                self.first_request = cap(text)

    def _title_rec(self, rec: dict[str, Any]) -> None:
        t = rec.get("type")
        if t == "custom-title" and isinstance(rec.get("customTitle"), str) and rec["customTitle"].strip():
            self.custom_title = rec["customTitle"].strip()
        elif t == "ai-title" and isinstance(rec.get("aiTitle"), str) and rec["aiTitle"].strip():
            self.ai_title = rec["aiTitle"].strip()
        elif t == "summary" and isinstance(rec.get("summary"), str) and rec["summary"].strip():
            leaf = rec.get("leafUuid")
            self.summaries.append((rec["summary"].strip(), leaf if isinstance(leaf, str) and leaf else None))

    def check_summary(self) -> None:
        """A `summary` names this session only when its `leafUuid` is a record of this file: files also
        carry summaries of other (continued, compacted) sessions. Claude Code itself titles a conversation
        with the summary of its leaf, the last message, which lies in the tail: so the leaf is looked for in
        what was read (head and tail), never by reading the whole file. The latest such summary wins."""
        for text, leaf in reversed(self.summaries):
            if leaf is not None and self._leaf_read(leaf):
                self.summary = text
                return

    def _leaf_read(self, leaf: str) -> bool:
        needle = ('"' + leaf + '"').encode("utf-8")
        for ci, c in enumerate(self._chunks):
            i = c.buf.find(needle, c.first)
            while i >= 0:
                span = c.line_at(i)
                if span is None:
                    break
                rec = self._rec(ci, c, *span)
                if rec is not None and rec.get("uuid") == leaf and rec.get("type") != "summary":
                    return True
                i = c.buf.find(needle, span[1])
        return False

    def title(self) -> str | None:
        for t in (self.custom_title, self.ai_title, self.summary):
            if t:
                return cap(t)
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
            with open_regular(path) as f:
                for raw, _last in bounded_lines(f, stats):
                    if stats.bytes_read > DEEP_LIMIT:
                        break
                    if self.fast and is_progress(raw):
                        continue
                    rec = decode(raw)
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


def _may_name_branch(buf: bytes, start: int, stop: int) -> bool:
    """Could this line name a branch? Not without a `"gitBranch"` key, nor with Claude Code's own bytes
    for an empty one (`"gitBranch":""`); any other form is decoded."""
    i = buf.find(b'"gitBranch"', start, stop)
    return i >= 0 and buf[i + 11: i + 14] != b':""'


def is_progress(raw: bytes) -> bool:
    """Fast path: `progress` records can be most of a file and embed whole subagent messages: skip them
    undecoded. Claude Code writes their top-level `"type":"progress"` before the nested messages; in
    user/assistant records the message's `"role":"…"` comes first, so the order of the two tells them
    apart. A positive match only: any other layout is decoded."""
    p = raw.find(b'"type":"progress"')
    if p < 0:
        return False
    r = raw.find(b'"role":"')
    return r < 0 or p < r
