"""Cline's SDK transcripts as the search index reads them (`ClineReader.search_steps`): a transcript of at
most WHOLE_MAX bytes is decoded whole by orjson and its `messages` array walked by the reference's own
`sdk_steps`, instead of the chunked cursor (`stores/jsonstream.py`, which decodes each message with `json`).

Only on a positive match of a document the stream would read the same way: orjson accepts it (valid UTF-8,
no NaN, no lone surrogate, nothing after the document), its top level is an object whose `messages` is an
array, and the bytes hold `"messages"` exactly once (so no second `messages` member the stream, which takes
the first, and a whole decode, which takes the last, could disagree on). Anything else returns None and the
reference reads it. What is left as a known difference is orjson's: integers past 64 bits decode as floats.
"""

from __future__ import annotations

from typing import Any

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
