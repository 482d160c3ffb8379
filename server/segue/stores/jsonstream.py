"""A cursor over one JSON document read in chunks: one element of a (possibly 1 GB, single-line) array at a
time. Cline keeps its transcripts as single-line JSON documents, so line streaming does not help."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from segue.model import ReadStats

ITEM_CAP = 8 * 1024 * 1024  # one array element bigger than this is skipped (memory peaks near 5x this)


_DECODER = json.JSONDecoder()
_NONWS = re.compile(r"[^ \t\r\n]")
_TOKEN = re.compile(r'["{}\[\]]')
_STR_BODY = re.compile(r'[^"\\]*(?:\\[\s\S][^"\\]*)*')  # unrolled: linear, stops before `"` or a cut escape
_SCALAR_END = re.compile(r"[,\]}]")
CHUNK = 1024 * 1024

OK, BAD, BIG, END, BIG_PAST = 0, 1, 2, 3, 4


class JsonStream:
    """A cursor over one JSON document read in chunks.

    `value()` decodes the value at the cursor with the C decoder, reading more only while the value is
    incomplete (the buffer doubles, so a big value costs linear time); a value over the cap or a damaged one
    is skipped by a structural scan that keeps no more than a chunk in memory. `limit` bounds how many bytes
    may be read at all (summaries); `cut` tells that the limit, not the end of the file, stopped it.
    """

    def __init__(self, f: BinaryIO, *, first_chunk: int = CHUNK, limit: int | None = None) -> None:
        self._f = f
        self._dec = codecs.getincrementaldecoder("utf-8-sig")("replace")  # a UTF-8 BOM is no JSON
        self._next = first_chunk
        self.limit = limit
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.cut = False
        self.bytes_read = 0
        self.damaged = 0
        self.oversized = 0
        self.truncated = False

    def _more(self, want: int = 0) -> bool:
        if self.eof:
            return False
        n = max(self._next, want)
        self._next = CHUNK
        if self.limit is not None:
            n = min(n, self.limit - self.bytes_read)
            if n <= 0:
                self.eof = self.cut = True
                return False
        data = self._f.read(n)
        self.bytes_read += len(data)
        if self.pos and self.pos >= len(self.buf) // 2:
            self.buf = self.buf[self.pos:]
            self.pos = 0
        if not data:
            self.eof = True
            tail = self._dec.decode(b"", final=True)
            self.buf += tail
            return bool(tail)
        self.buf += self._dec.decode(data)
        return True

    def peek(self) -> str | None:
        """The next non-blank character (the cursor moves onto it), or None at the end."""
        while True:
            m = _NONWS.search(self.buf, self.pos)
            if m:
                self.pos = m.start()
                return self.buf[self.pos]
            self.pos = len(self.buf)
            if not self._more():
                return None

    def value(self, cap: int = ITEM_CAP) -> tuple[int, Any]:
        """(OK, obj); (BIG, None) / (BAD, None) with the cursor still on the value; (BIG_PAST, None) past
        it; (END, None) when the document ends inside it."""
        if self.peek() is None:
            return END, None
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                # Damage, or just the end of what has been read so far? An error close to the end of the
                # buffer (or an open string) may be cured by more data; at the end of the file only an error
                # at the very end means the document was cut.
                unterminated = e.msg.startswith("Unterminated string")
                if self.eof:
                    cut = unterminated or not self.buf[e.pos:].strip()
                    return (END if cut else BAD), None
                if not unterminated and e.pos < len(self.buf) - 32:
                    return BAD, None
                avail = len(self.buf) - self.pos
                if avail > cap:
                    return BIG, None
                self._more(avail)
                continue
            except (ValueError, RecursionError):
                return BAD, None
            # a number near the end of the buffer may continue in the next chunk (`-7` of `-7.25`)
            if isinstance(obj, (int, float)) and len(self.buf) - end < 32 and not self.eof and self._more():
                continue
            big = end - self.pos > cap  # decoded only because it arrived within one chunk
            self.pos = end
            return (BIG_PAST, None) if big else (OK, obj)

    def skip(self) -> bool:
        """Move past the value at the cursor without decoding it; False when the document ends first."""
        c = self.peek()
        if c is None:
            return False
        if c not in '{["':
            while True:
                m = _SCALAR_END.search(self.buf, self.pos + 1)
                if m:
                    self.pos = m.start()
                    return True
                self.pos = len(self.buf)
                if not self._more():
                    return False
        depth = 0
        in_str = False
        while True:
            buf = self.buf
            if in_str:
                e = _STR_BODY.match(buf, self.pos).end()  # type: ignore[union-attr]
                if e < len(buf) and buf[e] == '"':
                    in_str = False
                    self.pos = e + 1
                    if depth == 0:
                        return True
                    continue
                self.pos = e  # out of data (maybe on a cut escape, which the next chunk completes)
                if not self._more():
                    return False
                continue
            m = _TOKEN.search(buf, self.pos)
            if m is None:
                self.pos = len(buf)
                if not self._more():
                    return False
                continue
            ch = m.group()
            self.pos = m.end()
            if ch == '"':
                in_str = True
            elif ch in "{[":
                depth += 1
            else:
                depth -= 1
                if depth <= 0:
                    return True

    def items(self, cap: int = ITEM_CAP) -> Iterator[Any]:
        """The elements of the array at the cursor. Damaged elements are skipped and counted; a document
        that ends early (a live writer) ends the iteration."""
        c = self.peek()
        if c != "[":
            if c is None:
                self.truncated = not self.cut  # empty: created, not yet written
            else:
                self.damaged += 1
            return
        self.pos += 1
        while True:
            c = self.peek()
            if c is None:
                self.truncated = not self.cut
                return
            if c == "]":
                self.pos += 1
                return
            if c == ",":
                self.pos += 1
                continue
            status, obj = self.value(cap)
            if status == OK:
                yield obj
                continue
            if status == END:
                self.truncated = not self.cut
                return
            if status == BIG_PAST:
                self.oversized += 1
                continue
            if status == BIG:
                self.oversized += 1
            else:
                self.damaged += 1
            if not self.skip():
                self.truncated = not self.cut
                return

    def array_at(self, key: str | None, header: dict[str, Any] | None = None, cap: int = ITEM_CAP
                 ) -> Iterator[Any]:
        """Elements of the top-level array (key None) or of the top-level object's `key` array. Members
        before it go into `header` (members after it are never read)."""
        if key is None:
            yield from self.items(cap)
            return
        c = self.peek()
        if c != "{":
            if c is None:
                self.truncated = not self.cut
            else:
                self.damaged += 1
            return
        self.pos += 1
        while True:
            c = self.peek()
            if c is None:
                self.truncated = not self.cut
                return
            if c == "}":
                return
            if c == ",":
                self.pos += 1
                continue
            status, name = self.value(4096)
            if status != OK or not isinstance(name, str) or self.peek() != ":":
                self.damaged += 1
                return
            self.pos += 1
            if name == key:
                if self.peek() == "[":
                    yield from self.items(cap)
                return
            status, v = self.value(1024 * 1024)
            if status == OK:
                if header is not None:
                    header[name] = v
            elif status == BIG_PAST:
                continue
            elif status == END or not self.skip():
                self.truncated = not self.cut
                return

    def members(self, wanted: set[str], out: dict[str, Any]) -> None:
        """The top-level object's members named in `wanted`, decoded into `out` wherever they sit (another
        writer's key order may put them after a huge array); every other member is skipped structurally."""
        if self.peek() != "{":
            return
        self.pos += 1
        while True:
            c = self.peek()
            if c is None or c == "}":
                return
            if c == ",":
                self.pos += 1
                continue
            status, name = self.value(4096)
            if status != OK or not isinstance(name, str) or self.peek() != ":":
                return
            self.pos += 1
            if name not in wanted:
                if not self.skip():
                    return
                continue
            status, v = self.value(1024 * 1024)
            if status == OK:
                out[name] = v
            elif status != BIG_PAST and (status == END or not self.skip()):
                return

    def account(self, stats: ReadStats) -> None:
        """Fold this stream's counters into a step reader's stats."""
        stats.bytes_read += self.bytes_read
        stats.damaged_lines += self.damaged
        if self.oversized:
            stats.problems.append(f"{self.oversized} records over {ITEM_CAP // (1024 * 1024)} MiB skipped")
        if self.truncated:
            stats.problems.append("the transcript ends mid-record (still being written?)")
