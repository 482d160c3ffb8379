"""Codex CLI: a session's summary from the head and tail of its rollout."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from segue.model import parse_time
from segue.stores.base import (
    HEAD_BYTES,
    TAIL_BYTES,
    loads,
)
from segue.stores.codex.fast import _ENVELOPE_RE, _ROLE_AT_RE
from segue.stores.codex.records import _decode_slim, _lines, decode_records, normalize, open_rollout
from segue.stores.codex.text import (
    _CWD_LINE_RE,
    _CWD_TAG_RE,
    _UUID_RE,
    _content_texts,
    _str,
    event_request,
    item_request,
    user_item_request,
)

_TS_PREFIX_RE = re.compile(rb'\s*\{\s*"timestamp"\s*:\s*"([^"]{10,40})"')




def uuid_from_name(name: str) -> str | None:
    m = _UUID_RE.search(name)
    return m.group(1).lower() if m else None


class _Facts:
    """What a summary gathers from the head of one rollout.

    Only the session_meta and the event-form request are decoded on the way; response-item user
    messages and turn contexts are kept raw and decoded only when a fact is still missing at the end
    (X1 files, a missing header, no event form): most summaries decode two head lines."""

    def __init__(self, fast: bool = True) -> None:
        self.fast = fast  # byte triage of Codex's own envelopes (else every line is decoded)
        self.bare = False
        self.meta: dict[str, Any] | None = None
        self.meta_ts: Any = None
        self.first_ts: Any = None
        self.request: str | None = None  # from the UI event / item form
        self.item_request: str | None = None  # from a response item (X1, or the fallback)
        self.env_cwd: str | None = None
        self.damaged = 0
        self.capped = False  # the deep scan gave up at DEEP_LIMIT
        self.user_raws: list[bytes] = []
        self.user_bytes = 0
        # turn contexts (the model a turn ran with) and 0.171 thread settings (the model set for the next
        # turn) apart: the model is the last turn context's, the settings' only when no turn context was
        # read (both paths must keep them apart, or a settings record after a turn context wins in one).
        # Kept raw from an envelope, decoded otherwise.
        self.first_tc: bytes | dict[str, Any] | None = None
        self.last_tc: bytes | dict[str, Any] | None = None
        self.last_settings: bytes | dict[str, Any] | None = None

    def done(self) -> bool:
        if self.meta is None:
            return False
        return self.item_request is not None if self.bare else self.request is not None

    def line(self, raw: bytes, first: bool) -> bool:
        """Take one head line; True once the summary has what it needs from the head."""
        if first:
            m = _TS_PREFIX_RE.match(raw)
            self.first_ts = m.group(1).decode("ascii", "replace") if m else None
            self._decode(raw)
            return self.done()
        m = _ENVELOPE_RE.match(raw) if self.fast else None
        if m is not None and m.group(2) is None and m.group(1) in (b"event_msg", b"response_item"):
            m = None  # the payload's type is not its first key: no positive match, decode below
        if m:  # Codex's own compact envelope: decide from the record type alone
            kind, sub = m.group(1), m.group(2)
            if kind == b"session_meta":
                if self.meta is None:
                    self._decode(raw)
            elif kind == b"event_msg":
                if self.request is None and (sub == b"user_message" or (
                        sub == b"item_completed" and b'"UserMessage"' in raw[:600])):
                    self._decode(raw)
                elif sub == b"thread_settings_applied":
                    self.last_settings = raw
            elif kind == b"response_item":
                if sub == b"message":
                    role = _ROLE_AT_RE.match(raw, m.end())
                    if role is None or role.group(1) == b"user":  # only another role is a positive skip
                        self._keep_user(raw)
            elif kind == b"turn_context":
                self.first_tc = self.first_tc or raw
                self.last_tc = raw
            return self.done()
        # Not Codex's own envelope (X1 bare items, another writer's spacing or key order): the reference
        # path, decode the line and take what it holds.
        self._decode(raw)
        return self.done()

    def _keep_user(self, raw: bytes) -> None:
        if self.bare:
            self._decode(raw)
        elif len(self.user_raws) < 16 and self.user_bytes < 1024 * 1024:
            self.user_raws.append(raw)
            self.user_bytes += len(raw)

    def _decode(self, raw: bytes) -> None:
        recs, bad = _decode_slim(raw, self.fast)
        self.damaged += bad
        for obj in recs:
            self.feed(obj)

    def feed(self, obj: dict[str, Any]) -> None:
        kind, p, ts = normalize(obj)
        if self.first_ts is None and ts is not None:
            self.first_ts = ts
        if kind == "session_meta":
            if self.meta is None:  # a fork repeats its parent's meta after its own: the first wins
                self.meta, self.meta_ts = p, ts
        elif kind == "bare_meta":
            if self.meta is None:
                self.meta, self.meta_ts, self.bare = p, p.get("timestamp"), True
        elif kind == "event_msg":
            t = p.get("type")
            if t == "thread_settings_applied":
                self.last_settings = p
            elif self.request is None:
                if t == "user_message":
                    self.request = event_request(p)
                elif t == "item_completed" and isinstance(p.get("item"), dict) \
                        and p["item"].get("type") == "UserMessage":
                    self.request = item_request(p["item"])
        elif kind == "turn_context":
            self.first_tc = self.first_tc or p
            self.last_tc = p
        elif kind == "response_item" and p.get("type") == "message" and p.get("role") == "user":
            if self.env_cwd is None:
                self.env_cwd = _env_cwd(p)
            if self.item_request is None:
                self.item_request = user_item_request(p)

    def user_fallback(self) -> None:
        """Decode the kept response-item user lines (X1 cwd, or no event-form request)."""
        raws, self.user_raws = self.user_raws, []
        for raw in raws:
            self._decode(raw)

    def turn(self, which: bytes | dict[str, Any] | None) -> dict[str, Any] | None:
        """A kept turn context or thread settings record, decoded (raw when kept from an envelope)."""
        if which is None or isinstance(which, dict):
            return which
        recs, _ = _decode_slim(which, self.fast)
        for obj in recs:
            kind, p, _ts = normalize(obj)
            if kind == "turn_context" or (kind == "event_msg" and p.get("type") == "thread_settings_applied"):
                return p
        return None

    def model(self, tail: _Tail) -> str | None:
        """The last turn context's model (the tail's, else the head's); a thread settings record's only
        when neither holds a turn context (a thread that has not run a turn yet, or a context that does
        not name its model)."""
        if tail.model is not None:
            return tail.model
        tc = self.turn(self.last_tc)
        model = _str(tc.get("model")) if tc else None
        if model is None:
            model = tail.settings_model
        if model is None:
            st = self.turn(self.last_settings)
            model = _model_of_settings(st) if st else None
        return model


def _model_of_settings(p: dict[str, Any]) -> str | None:
    s = p.get("thread_settings")
    if isinstance(s, dict):
        return _str(s.get("model"))
    return _str(p.get("model"))


def _env_cwd(p: dict[str, Any]) -> str | None:
    texts, _ = _content_texts(p.get("content"), ("input_text", "text"))
    for t in texts:
        low = t.lower()
        if "<environment_context>" in low or "current working directory:" in low:
            m = _CWD_TAG_RE.search(t) or _CWD_LINE_RE.search(t)
            if m:
                return m.group(1).strip()
    return None


class _Tail:
    def __init__(self) -> None:
        self.last_ts: Any = None
        self.model: str | None = None  # the last turn context's
        self.settings_model: str | None = None  # the last thread settings', looked for only without the above


def _line_at(chunk: bytes, pos: int, lo: int, whole: bool) -> tuple[bytes | None, int]:
    """The complete line holding `pos`, and its start. None when cut: the chunk's first line (a tail
    starts mid-line) or a last line without newline (unless the chunk is the whole file)."""
    start = chunk.rfind(b"\n", 0, pos) + 1
    end = chunk.find(b"\n", pos)
    if start == 0 and lo == 0 and not whole:
        return None, start
    if end < 0:
        line = chunk[start:]
        return (line if whole and loads(line) is not None else None), start
    return chunk[start:end], start


def _find_last(chunk: bytes, needle: bytes, whole: bool, kind: str, types: tuple[str, ...], fast: bool = True
               ) -> dict[str, Any] | None:
    """The payload of the last record of `kind`/`types` whose line holds `needle` (rfind, then decode
    only that line; earlier occurrences when the needle sat inside some text). Needles carry no quotes:
    CPython's substring search is several times slower on needles made of common JSON bytes."""
    hi = len(chunk)
    for _ in range(8):
        pos = chunk.rfind(needle, 0, hi)
        if pos < 0:
            return None
        line, start = _line_at(chunk, pos, 0, whole)
        hi = start
        if line is not None:
            recs, _ = _decode_slim(line, fast)
            for obj in reversed(recs):
                k, p, _ts = normalize(obj)
                if k == kind and (not types or p.get("type") in types):
                    return p
        if start == 0:
            return None
    return None


def _last_timestamp(chunk: bytes, whole: bool, fast: bool = True) -> Any:
    """The timestamp of the last complete record in the tail. Fast path: a line that starts with Codex's
    `{"timestamp":"…"` prefix gives it without decoding; any other line is decoded (the reference)."""
    hi = len(chunk)
    if not chunk.endswith(b"\n"):  # a torn last line counts only when it decodes (a live writer mid-append)
        start = chunk.rfind(b"\n") + 1
        last = chunk[start:]
        if not ((whole or start > 0) and last.strip() and loads(last) is not None):
            hi = start
    pos = hi
    for _ in range(64):  # the last lines, backwards
        if pos > 0 and chunk[pos - 1] == 0x0A:
            pos -= 1
        if pos <= 0:
            return None
        start = chunk.rfind(b"\n", 0, pos) + 1
        if start == 0 and not whole:
            return None  # the tail's first line is cut
        line, pos = chunk[start:pos], start
        if not line.strip():
            continue
        m = _TS_PREFIX_RE.match(line) if fast else None
        if m:
            return m.group(1).decode("ascii", "replace")
        recs, _ = decode_records(line)
        for obj in reversed(recs):
            ts = obj.get("timestamp")
            if isinstance(ts, str) and parse_time(ts) is not None:
                return ts
    return None


def _scan_tail(chunk: bytes, whole: bool, fast: bool = True) -> _Tail:
    """From the tail bytes: the last timestamp and the last model. Finds the record with `rfind` and
    decodes only its line."""
    t = _Tail()
    t.last_ts = _last_timestamp(chunk, whole, fast)
    tc = _find_last(chunk, b"turn_context", whole, "turn_context", (), fast)
    if tc is not None:
        t.model = _str(tc.get("model"))
    if t.model is None:
        st = _find_last(chunk, b"thread_settings_applied", whole, "event_msg", ("thread_settings_applied",), fast)
        t.settings_model = _model_of_settings(st) if st is not None else None
    return t


def _subagent_parent(meta: dict[str, Any]) -> tuple[bool, str | None]:
    """(is a subagent, parent thread id) from `parent_thread_id`, `source.subagent`, `thread_source`."""
    parent = _str(meta.get("parent_thread_id"))
    sub = bool(parent) or meta.get("thread_source") == "subagent"
    src = meta.get("source")
    if isinstance(src, dict) and "subagent" in src:
        sub = True
        spec = src["subagent"]
        spawn = spec.get("thread_spawn") if isinstance(spec, dict) else None
        if isinstance(spawn, dict):
            parent = parent or _str(spawn.get("parent_thread_id"))
    return sub, parent


def _first_line(text: str | None, limit: int = 200) -> str | None:
    if not text:
        return None
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return None


def _all_lines(chunk: bytes) -> Iterator[bytes]:
    """Every line of a whole small file, lazily; a last line without newline is kept when it decodes (a
    live writer may be mid-append)."""
    yield from _lines(chunk)
    last = chunk[chunk.rfind(b"\n") + 1:]
    if last.strip() and loads(last) is not None:
        yield last


def _zst_head_tail(path: str) -> tuple[bytes, bytes]:
    """Head and tail of a compressed rollout, like `read_head_tail`: stream-decompress, keep the ends."""
    with open_rollout(path) as f:
        head = f.read(HEAD_BYTES)
        buf = bytearray()
        after = 0
        while True:
            chunk = f.read(256 * 1024)
            if not chunk:
                break
            after += len(chunk)
            buf += chunk
            if len(buf) > 4 * TAIL_BYTES:
                del buf[:-TAIL_BYTES]
    if after <= TAIL_BYTES:
        return head + bytes(buf), b""
    return head, bytes(buf[-TAIL_BYTES:])
