"""Cline's SDK transcripts as the search index reads them (`ClineReader.search_steps`): a transcript of at
most WHOLE_MAX bytes is decoded whole by orjson and its `messages` array walked by the reference's own
`sdk_steps`, instead of the chunked cursor (`stores/jsonstream.py`, which decodes each message with `json`).

Only on a positive match of a document the stream would read the same way: orjson accepts it (valid UTF-8,
no NaN, no lone surrogate, nothing after the document), its top level is an object whose `messages` is an
array, and the bytes hold `"messages"` exactly once (so no second `messages` member the stream, which takes
the first, and a whole decode, which takes the last, could disagree on). Anything else returns None and the
reference reads it. A bigger transcript written the way Cline writes it (indented by two spaces) is read one
element at a time (`indented_messages`). What is left as a known difference is orjson's: integers past 64 bits
decode as floats.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from segue.stores.jsonstream import ITEM_CAP, JsonStream
from segue.stores.text import BOM, open_regular

try:
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - the editor's bundled server ships pure-Python wheels only
    _fast_loads = None

# Bigger transcripts stay on the stream: a whole decode holds every message at once (memory ~5x the bytes).
WHOLE_MAX = 4 * 1024 * 1024


def whole_messages(path: str) -> list[Any] | None:
    if _fast_loads is None:
        return None
    try:
        with open_regular(path) as f:
            raw = f.read(WHOLE_MAX + 1)
    except OSError:
        return None
    if len(raw) > WHOLE_MAX:
        return None
    raw = raw.removeprefix(BOM)  # the stream decodes as utf-8-sig: one leading BOM is no JSON
    if raw.count(b'"messages"') != 1:
        return None
    try:
        doc = _fast_loads(raw)
    except (ValueError, TypeError):
        return None
    messages = doc.get("messages") if isinstance(doc, dict) else None
    return messages if isinstance(messages, list) else None


# -- an indented transcript (as Cline writes it: JSON.stringify with two spaces), element by element

_MESSAGES_LINE = b'  "messages": ['
_OPEN, _CLOSE, _LAST = b"    {", b"    },", b"    }"
_ENDS = (b"  ]", b"  ],")
HEADER_MAX = 1024 * 1024


class _Prefixed:
    """A binary file read from its current offset with `prefix` in front (JsonStream's `read` only)."""

    def __init__(self, prefix: bytes, f: BinaryIO) -> None:
        self.prefix, self.f = prefix, f

    def read(self, n: int = -1) -> bytes:
        if self.prefix:
            head, self.prefix = self.prefix, b""
            return head + self.f.read(max(n - len(head), 0) if n >= 0 else -1)
        return self.f.read(n)


def indented_messages(path: str) -> Iterator[Any] | None:
    """The `messages` array of an indented transcript, one element decoded by orjson at a time; None when the
    file does not start the way Cline writes one (then the stream reads it all). An element is taken only
    from its own lines (`    {` … `    },`), which orjson must accept as one value no bigger than the
    stream's cap: lines that balance as a JSON value can only be a whole element. From the first element that
    is anything else (damage, invalid UTF-8, an oversized one, a torn end) the stream itself reads the rest,
    from that element on, exactly as it would have."""
    if _fast_loads is None:
        return None
    try:
        f = open_regular(path)
    except OSError:
        return None
    header: list[bytes] = []
    size = 0
    line = b""
    while size <= HEADER_MAX:  # bounded reads: a compact document is one huge line
        line = f.readline(HEADER_MAX + 1)
        if not line:
            break
        header.append(line)
        size += len(line)
        if line.rstrip(b"\r\n") == _MESSAGES_LINE:
            break
    head = b"".join(header).removeprefix(BOM)
    if line.rstrip(b"\r\n") != _MESSAGES_LINE or head.count(b'"messages"') != 1:
        f.close()
        return None
    try:
        doc = _fast_loads(head + b"]}")
    except (ValueError, TypeError):
        doc = None
    if not isinstance(doc, dict) or doc.get("messages") != []:
        f.close()
        return None
    return _elements(f, size)


def _elements(f: BinaryIO, offset: int) -> Iterator[Any]:
    with f:
        while True:
            start = offset
            line = f.readline(ITEM_CAP + 2)  # bounded: a longer line is an element over the cap anyway
            offset += len(line)
            bare = line.rstrip(b"\r\n")
            if bare in _ENDS:
                return  # the array's end: members after it are never read (as the stream)
            obj: Any = None
            if bare == _OPEN:
                lines = [line]
                while True:
                    nxt = f.readline(ITEM_CAP + 2)
                    offset += len(nxt)
                    lines.append(nxt)
                    end = nxt.rstrip(b"\r\n")
                    if not nxt or end in (_CLOSE, _LAST) or offset - start > ITEM_CAP:
                        break
                if end in (_CLOSE, _LAST) and offset - start <= ITEM_CAP:
                    lines[-1] = _LAST
                    try:
                        obj = _fast_loads(b"".join(lines))
                    except (ValueError, TypeError):
                        obj = None
            if obj is None:  # not one clean element: the stream reads on from this element's first line
                f.seek(start)
                js = JsonStream(_Prefixed(b"[", f))  # type: ignore[arg-type]
                yield from js.items()
                return
            yield obj
