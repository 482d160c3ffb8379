"""Codex CLI: reading rollout lines (plain or zstd) with bounded memory, and decoding records: the reference decode."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, TypeVar, cast

from segue.model import ReadStats
from segue.stores.base import (
    FAST_JSON,
    loads,
)
from segue.stores.jsoncut import string_end as _string_end
from segue.stores.text import open_regular

T = TypeVar("T")
MAX_LINE = 8 * 1024 * 1024  # longer lines are never JSON-decoded whole (compacted histories, images)





class ZstdMissing(RuntimeError):
    pass




def open_rollout(path: str) -> BinaryIO:
    """A binary stream of the rollout's JSONL, decompressing `.zst` on the fly."""
    f = open_regular(path, 256 * 1024)
    if not path.endswith(".zst"):
        return f
    try:
        import zstandard  # lazily: only compressed rollouts need it
    except ImportError as e:
        f.close()
        raise ZstdMissing("the zstandard package is not installed: cannot read a compressed rollout") from e
    reader = zstandard.ZstdDecompressor().stream_reader(f, closefd=True)
    return io.BufferedReader(reader, buffer_size=256 * 1024)  # type: ignore[arg-type]


def iter_raw_lines(f: BinaryIO, stats: ReadStats | None = None) -> Iterator[tuple[bytes, bool]]:
    """Yield (line, whole) for each line. A line longer than MAX_LINE comes as its first 64 KiB with
    whole=False (the rest is drained, never held). A cut last line without newline is yielded only when it
    still decodes (a live writer mid-append)."""
    while True:
        raw = f.readline(MAX_LINE)
        if not raw:
            return
        if stats is not None:
            stats.bytes_read += len(raw)
        if raw.endswith(b"\n"):
            yield raw, True
            continue
        if len(raw) < MAX_LINE:  # EOF without newline
            if raw.strip() and loads(raw) is not None:
                yield raw, True
            return
        head = raw[: 64 * 1024]
        while True:  # drain the oversized line
            more = f.readline(MAX_LINE)
            if stats is not None:
                stats.bytes_read += len(more)
            if not more or more.endswith(b"\n"):
                break
        yield head, False


def step_lines(f: BinaryIO, stats: ReadStats, feed: Callable[[bytes, bool, ReadStats], Iterable[T]],
               end: int | None = None) -> Iterator[T]:
    """What `feed(line, whole, stats)` gives for each of `iter_raw_lines`' lines, for a brief's pass over a
    whole rollout (or over the next `end` bytes only, which must end at a line's end): the common case (a whole
    line ending in a newline) in a tighter loop, with no tuple per line; anything else is left to
    `iter_raw_lines`."""
    readline = f.readline
    left = (1 << 62) if end is None else end
    while left > 0:
        raw = readline(MAX_LINE if left > MAX_LINE else left)
        if not raw:
            return
        left -= len(raw)
        if raw.endswith(b"\n"):
            stats.bytes_read += len(raw)
            yield from feed(raw, True, stats)
            continue
        # EOF without a newline, or an oversized line: hand this piece and the rest (of the file or the bytes
        # asked for) over
        rest = f if end is None else _Bounded(f, left)
        for piece, whole in iter_raw_lines(cast(BinaryIO, _Prefixed(raw, rest)), stats):
            yield from feed(piece, whole, stats)
        return


class _Bounded:
    """At most `left` more bytes of `f`, read by lines."""

    def __init__(self, f: BinaryIO, left: int) -> None:
        self.f, self.left = f, left  # (used by `step_lines` with an end)

    def readline(self, limit: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        raw = self.f.readline(self.left if limit < 0 else min(limit, self.left))
        self.left -= len(raw)
        return raw


class _Prefixed:
    """A stream that returns `first` before reading on from `f` (for `iter_raw_lines`' `readline`)."""

    def __init__(self, first: bytes, f: BinaryIO) -> None:
        self.first: bytes | None = first
        self.f = f

    def readline(self, limit: int = -1) -> bytes:
        if self.first is not None:
            raw, self.first = self.first, None
            return raw
        return self.f.readline(limit)


def loads_line(raw: bytes) -> Any | None:
    """`loads` of one line. With orjson, `loads` itself (orjson, the stdlib for what it refuses). Without,
    as strict UTF-8 text first: `json.loads(bytes)` decodes with `surrogatepass`, several times slower than
    the strict codec's fast path; whatever the text form refuses is retried as bytes, so results are the
    same."""
    if FAST_JSON:
        return loads(raw)
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return loads(raw)


def decode_records(raw: bytes) -> tuple[list[dict[str, Any]], int]:
    """Decode one line into records, salvaging a BOM, run-together records and invalid UTF-8.

    Returns (records, damaged count)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    obj = loads_line(raw)
    if isinstance(obj, dict):
        return [obj], 0
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        obj = loads(text)
        if isinstance(obj, dict):
            return [obj], 0
    text = text.strip()
    if not text:
        return [], 0
    # Records written into each other (#24425): decode objects one after another; where one is cut,
    # resume at the next record start.
    dec = json.JSONDecoder()
    out: list[dict[str, Any]] = []
    damaged = 0
    i = 0
    while i < len(text):
        j = text.find("{", i)
        if j < 0:
            break
        try:
            obj, end = dec.raw_decode(text, j)
        except ValueError:
            damaged = 1  # one damaged line, however many pieces it breaks into
            k = text.find('{"timestamp"', j + 1)
            if k < 0:
                k = text.find('{"type"', j + 1)
            if k < 0:
                break
            i = k
            continue
        if isinstance(obj, dict):
            out.append(obj)
        i = end
    if not out and not damaged:
        damaged = 1
    return out, damaged


def normalize(obj: dict[str, Any]) -> tuple[str, dict[str, Any], Any]:
    """(kind, payload, timestamp) for a wrapped or bare record."""
    kind = obj.get("type")
    payload = obj.get("payload")
    if isinstance(kind, str) and isinstance(payload, dict):
        return kind, payload, obj.get("timestamp")
    if "record_type" in obj:
        return "state", obj, None
    if isinstance(kind, str):
        return "response_item", obj, obj.get("timestamp")  # X1 bare item
    if isinstance(obj.get("id"), str) and ("timestamp" in obj or "instructions" in obj):
        return "bare_meta", obj, obj.get("timestamp")
    return "unknown", obj, obj.get("timestamp")


def _blank_string(raw: bytes, key: bytes) -> bytes:
    """Empty the string value of `"key":"…"` or `"key":{"text":"…", …}` without decoding the line:
    instructions are tens of KiB that a summary never needs. The caller falls back to decoding the
    original line should the result not parse."""
    i = raw.find(b'"' + key + b'":')
    if i < 0:
        return raw
    j = i + len(key) + 3
    if raw.startswith(b'{"text":"', j):
        j += 8
    elif not raw.startswith(b'"', j):
        return raw
    k = _string_end(raw, j)
    return raw if k < 0 else raw[: j + 1] + raw[k:]


def _slim(raw: bytes) -> bytes:
    if len(raw) <= 4096:
        return raw
    head = raw[:200]
    if b'"session_meta"' in head:
        return _blank_string(raw, b"base_instructions")
    if b'"turn_context"' in head:
        return _blank_string(_blank_string(raw, b"user_instructions"), b"developer_instructions")
    if b'"payload"' not in head:  # an X1 bare first line
        return _blank_string(raw, b"instructions")
    return raw


def _decode_slim(raw: bytes, fast: bool = True) -> tuple[list[dict[str, Any]], int]:
    """Decode a line the summary needs, skipping its big instruction strings when that parses (fast path)."""
    slim = _slim(raw) if fast else raw
    if slim is not raw:
        obj = loads(slim)
        if isinstance(obj, dict):
            return [obj], 0
    return decode_records(raw)


def _lines(chunk: bytes, start: int = 0) -> Iterator[bytes]:
    """Complete lines of a chunk, lazily (a summary usually stops after a few)."""
    n = len(chunk)
    while start < n:
        end = chunk.find(b"\n", start)
        if end < 0:
            return
        if end > start:
            yield chunk[start:end]
        start = end + 1
