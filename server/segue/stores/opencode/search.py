"""OpenCode's steps as the search index needs them (`OpencodeReader.search_steps`): for a database session,
the reference's walk (`reader._db_rows_steps`) with three costs taken out, every step still built by the
reference's own `_part_steps`:

- one query per session (messages joined with their parts, in the reference's order: messages by
  (time_created, id), then parts by id) instead of one per message;
- part data fetched as bytes (CAST AS BLOB) and decoded with `stores.base.loads` (orjson where installed;
  whatever it refuses, invalid UTF-8 included, goes to the reference's decode: UTF-8 with replacement, then
  `json.loads`), not through the connection's Python text factory and `json`;
- parts of a type that never gives a step skipped on their exact compact prefix (`{"type":"step-start",`);
- no damaged-row count and no message times (the index keeps neither).

Big parts are reduced in SQL by the reference's own query. Legacy JSON stores and the 2.x `session_message`
layout go to `steps()` unchanged.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

from segue.model import ReadStats, Session, Step
from segue.stores.opencode import reader as R

try:  # the same decoder `stores.base.loads` tries first; what it refuses goes to the reference's decode
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - the editor's bundled server ships pure-Python wheels only
    _fast_loads = None

# role as 1 (user), 2 (assistant) or 0: all `_part_steps` tells apart; the diffs only where a turn starts; part
# rowids, not text ids (no Python decode per row), for the few big parts reduced in SQL
_JOINED_SQL = f"""
SELECT m.rowid, CASE json_extract(m.data, '$.role') WHEN 'user' THEN 1 WHEN 'assistant' THEN 2 ELSE 0 END,
       CASE WHEN json_extract(m.data, '$.role') = 'user' THEN
       (SELECT json_group_array(json_array(json_extract(value, '$.file'), json_extract(value, '$.additions'),
                                           json_extract(value, '$.deletions')))
        FROM json_each(m.data, '$.summary.diffs') WHERE type = 'object') END,
       p.rowid, CASE WHEN length(CAST(p.data AS BLOB)) <= {R.BIG_PART} THEN CAST(p.data AS BLOB) END
FROM message m LEFT JOIN part p ON p.message_id = m.id
WHERE m.session_id = ? AND json_valid(m.data) ORDER BY m.time_created, m.id, m.rowid, p.id, p.rowid
"""
# The rowids break ties as the reference's index walks do (a non-unique index ends in the rowid), and make each
# message's key unique: SQLite then takes both orders from the two indexes instead of sorting every session's
# parts in a temporary B-tree (seed-1 corpus: 0.50 -> 0.41 s of the query's CPU).
_BIG_PART_BY_ROWID_SQL = R._BIG_PART_SQL.replace("WHERE id = ?", "WHERE rowid = ?")
assert _BIG_PART_BY_ROWID_SQL != R._BIG_PART_SQL
_ROLES = ("", "user", "assistant")
# Parts that never give a step, on a positive match of how OpenCode writes them (`type` first, compact):
# anything else is decoded and its type read as the reference reads it.
_SKIP_PREFIXES = tuple(b'{"type":"%s",' % t.encode() for t in sorted(R._SKIP_PART_TYPES))


def _decode(data: bytes) -> Any:
    """A part's bytes as the reference decodes its text (`_json_or_none` of UTF-8 decoded with replacement);
    orjson refuses a BOM, lone surrogates, NaN and invalid UTF-8, which all go to the reference."""
    if _fast_loads is not None:
        try:
            return _fast_loads(data)
        except (ValueError, TypeError):
            pass
    return _reference(data)


def _reference(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None


def db_search_steps(session: Session, stats: ReadStats) -> Iterator[Step]:
    turns = R._Turns(session.cwd)
    with R._open_db(session.store_path) as con:
        try:
            last_mid: Any = object()
            role = ""
            for mrow, role_n, diffs, prow, data in con.execute(_JOINED_SQL, (session.id,)):
                if mrow != last_mid:  # a new message (by rowid: a text id may be NULL)
                    last_mid = mrow
                    role = _ROLES[role_n]
                    if role_n == 1:
                        yield from turns.start(R._json_or_none(diffs), None)
                if prow is None:
                    continue  # a message without parts
                if data is None:  # a big part: reduced in SQL as the reference reduces it
                    row = con.execute(_BIG_PART_BY_ROWID_SQL, (prow,)).fetchone()
                    part = R._json_or_none(row[0] if row else None)
                elif isinstance(data, bytes):
                    if data.startswith(_SKIP_PREFIXES):
                        continue
                    part = _decode(data)
                else:
                    part = R._json_or_none(data)
                if not isinstance(part, dict) or part.get("type") in R._SKIP_PART_TYPES:
                    continue
                yield from R._part_steps(part, role, None, turns)
        except sqlite3.Error as e:
            stats.problems.append(f"database read stopped: {e}")
    yield from turns.flush()
