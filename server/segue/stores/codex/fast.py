"""Codex CLI fast paths: records decided from their bytes (skipped, or decoded from a copy with the middle
of long strings cut out). Each is taken only on a positive match of Codex's own bytes, falls back to the
reference decode otherwise, and `SEGUE_READER_FAST=0` (`records.fast_paths`) turns them all off."""

from __future__ import annotations

import re
from typing import Any

from segue.stores.base import loads
from segue.stores.codex.records import loads_line
from segue.stores.codex.text import _OUTPUT_LINE_RE
from segue.stores.jsoncut import CUT_MARK, MARK_JSON, cut_strings, string_end
from segue.stores.text import OUTPUT_KEEP

# `{"timestamp":"…","ordinal":N,"type":"event_msg","payload":{"type":"user_message"` as Codex writes it
_ENVELOPE_RE = re.compile(rb'\{"timestamp":"[^"]{0,40}",(?:"ordinal":\d+,)?"type":"(\w+)","payload":\{'
                          rb'(?:"type":"(\w+)",?)?')
_DATA_URL_RE = re.compile(rb'"data:[^"]{256,}"')
_RAW_CALL_ID_RE = re.compile(rb'"call_id"\s*:\s*"([^"]{1,200})"')
_RAW_OUTPUT_RE = re.compile(rb'"output"\s*:\s*"')

# Records a brief never uses, recognised in the first bytes of a line before any decoding.
_SKIP_PREFIX: tuple[bytes, ...] = (
    b'"type":"compacted"', b'"type":"world_state"', b'"type":"token_usage_record"',
    b'"type":"session_meta"', b'"record_type":"state"',
    b'"payload":{"type":"reasoning"', b'{"type":"reasoning"', b'"payload":{"type":"compaction"',
    b'"payload":{"type":"context_compaction"', b'"payload":{"type":"token_count"',
    b'"payload":{"type":"agent_reasoning', b'"payload":{"type":"exec_command_output_delta"',
    b'"payload":{"type":"additional_tools"', b'"payload":{"type":"ghost_snapshot"',
)



# Most of a big rollout is tool output (a command's output is written twice: in the `CommandExecution` item
# or `exec_command_end` event and in the `function_call_output`), reasoning and token counts. A brief needs
# a command's exit code and the last few hundred characters of its output. So records are sorted by the
# envelope's record types before decoding, outputs whose call is already settled are skipped, and a long
# output string is decoded from a copy of the line whose middle is cut out (replaced by `_MARK`). Every
# shortcut falls back to decoding the whole line when its preconditions do not hold.

# Bytes kept at the end of a cut string: OUTPUT_KEEP characters of up to 3-byte UTF-8 (CJK); fewer than
# OUTPUT_KEEP + 16 characters (4-byte text, \u escapes) fail `_ends_kept` and the line is decoded whole.
CUT_TAIL = 3 * OUTPUT_KEEP + 1024
# Lines shorter than this are decoded whole without trying a cut: `cut_strings` cuts only a string longer
# than what it keeps (head + CUT_TAIL) plus 1 KiB, which a shorter line cannot hold.
CUT_MIN = CUT_TAIL + 1024
_MARK = CUT_MARK
_SKIP = object()

_USED_RESPONSE = {b"message", b"function_call", b"custom_tool_call", b"local_shell_call", b"function_call_output",
                  b"custom_tool_call_output", b"local_shell_call_output", b"web_search_call"}
_USED_EVENTS = {b"user_message", b"agent_message", b"item_completed", b"exec_command_end", b"patch_apply_end",
                b"task_complete", b"turn_complete", b"turn_aborted", b"task_started", b"turn_started",
                b"collab_agent_spawn_end"}
_USED_TURN_ITEMS = {b"UserMessage", b"AgentMessage", b"CommandExecution", b"FileChange", b"CollabAgentToolCall"}
_EXEC_END_KEYS = (b'"stdout":"', b'"stderr":"', b'"aggregated_output":"', b'"formatted_output":"')
# Matched right after the envelope's payload type, so they only see the payload's own leading keys.
_ROLE_AT_RE = re.compile(rb'(?:"id":"[^"\\]{0,200}",)?"role":"(\w+)"')
_ITEM_AT_RE = re.compile(rb'(?:"thread_id":"[^"\\]{0,200}",)?(?:"turn_id":"[^"\\]{0,200}",)?"item":\{"type":"(\w+)"')
_BARE_OUTPUT_RE = re.compile(rb'\{"type":"(?:function_call_output|custom_tool_call_output)",')
_CALL_ID_AT_RE = re.compile(rb'(?:"id":"[^"\\]{0,200}",)?"call_id":"([^"\\]{1,200})"(,"output":")?')


def _skip(raw: bytes, at: int, bare: bool = False) -> Any:
    """`_SKIP`, unless a second record starts later in the line (a cut record run into the next one,
    #24425): then None, and the line is decoded record by record."""
    return None if raw.find(b'{"type"' if bare else b'{"timestamp"', at) >= 0 else _SKIP


def _alone(raw: bytes, at: int, m: re.Match[bytes], bare: bool) -> bool:
    """What `_skip` decides for a tool output (`_CALL_ID_AT_RE` match `m`): no second record starts after
    `at`. When the output string is the last member, its end is found by a short walk: nothing but the
    record's closing braces after it means no record start can follow (one would hold an unescaped quote,
    which would have ended the string first). Otherwise, or for escaped JSON, the scan `_skip` makes."""
    if m.group(2) is not None:
        j = m.end() - 1
        if raw.count(b'\\"', j, j + 256) <= 4:
            k = string_end(raw, j, 8)
            if k >= 0 and raw[k + 1:].rstrip() == (b"}" if bare else b"}}"):
                return True
    return _skip(raw, at, bare) is _SKIP


def _cut_record(raw: bytes, start: int, keys: tuple[bytes, ...], head: int, opens: tuple[int, ...] = ()
                ) -> dict[str, Any] | None:
    """Decode `raw` with the long strings opened at `opens`, and the first value of each of `keys` after
    `start`, cut (`cut_strings`). None when nothing was cut or the copy does not decode."""
    starts = list(opens)
    for key in keys:
        i = raw.find(key, start)
        if i >= 0:
            starts.append(i + len(key) - 1)
    slim = cut_strings(raw, [(j, head, CUT_TAIL) for j in sorted(starts)])
    obj = loads_line(slim) if slim is not None else None
    return obj if isinstance(obj, dict) else None


def _dig(obj: dict[str, Any] | None, *keys: str) -> dict[str, Any] | None:
    """`obj["payload"][keys…]` when each level is an object."""
    d: Any = obj.get("payload") if obj is not None else None
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None
    return d if isinstance(d, dict) else None


def _ends_kept(text: Any, header: bool) -> bool:
    """Does a cut output give what the whole one would? `_output_tail` reads the end (after the first
    `Output:` line), `exit_code_from_output` the first 8 KiB or up to an `Output:` line (`header`)."""
    i = text.find(_MARK) if isinstance(text, str) else -1
    if i < 0:
        return True  # not cut
    if header:
        head = text[:i]
        if head.startswith(('{"output"', '{"metadata"')):
            return False  # old shell JSON, decoded whole
        if i < 8192 and not _OUTPUT_LINE_RE.search(head):
            return False
    tail = text[i + len(_MARK):]
    kept = len(tail.rstrip())
    j = tail.find("\nOutput:\n")
    return kept >= OUTPUT_KEEP + 16 and (j < 0 or kept - (j + 9) >= OUTPUT_KEEP)


def _fast_output(raw: bytes) -> dict[str, Any] | None:
    """A huge tool output read from its first bytes only: its call id and exit-code header."""
    if b'"function_call_output"' not in raw[:400] and b'"custom_tool_call_output"' not in raw[:400]:
        return None
    m = _RAW_CALL_ID_RE.search(raw, 0, 64 * 1024)
    if not m:
        return None
    head = ""
    o = _RAW_OUTPUT_RE.search(raw, 0, 64 * 1024)
    if o:
        chunk = raw[o.end(): o.end() + 4096].decode("utf-8", "replace")
        head = chunk.replace("\\n", "\n").replace('\\"', '"')
    return {"type": "function_call_output", "call_id": m.group(1).decode("utf-8", "replace"), "output": head}


_AGGREGATED_KEY = b'"aggregated_output":"'
# An output with more escaped quotes than this is decoded with its line: walking them costs more.
LATER_QUOTES = 16


class LaterOutput:
    """A command's `aggregated_output` left undecoded in its line: decoded only when a consumer that needs
    the outputs of the last steps alone asks for it (`StepBuilder(recent=…)`), as `decode_records` would
    have decoded it with the line."""

    __slots__ = ("end", "raw", "start")

    def __init__(self, raw: bytes, start: int, end: int) -> None:
        self.raw, self.start, self.end = raw, start, end  # the string's opening and closing quotes

    def text(self) -> str | None:
        lit = self.raw[self.start:self.end + 1]
        s = loads_line(lit)
        if not isinstance(s, str):  # invalid UTF-8: `decode_records` decodes the line with replacements
            s = loads(lit.decode("utf-8", "replace"))
        return s if isinstance(s, str) else None


def command_item_later(raw: bytes, at: int) -> dict[str, Any] | None:
    """An `item_completed` `CommandExecution` line decoded without its `aggregated_output`, which becomes a
    `LaterOutput`. None (decode the line whole) unless the copy with that string emptied to the cut mark
    decodes to a record whose item holds exactly the mark there and no `aggregatedOutput`."""
    i = raw.find(_AGGREGATED_KEY, at)
    if i < 0:
        return None
    j = i + len(_AGGREGATED_KEY) - 1
    if raw.count(b'\\"', j, j + 256) > 4:
        return None  # escaped JSON (tool output): walking its quotes costs more than decoding it whole
    k = string_end(raw, j, LATER_QUOTES)
    if k < 0:
        return None
    obj = loads_line(b"".join((raw[:j + 1], MARK_JSON, raw[k:])))
    item = _dig(obj if isinstance(obj, dict) else None, "item")
    if item is None or item.get("aggregated_output") != CUT_MARK or "aggregatedOutput" in item:
        return None
    item["aggregated_output"] = LaterOutput(raw, j, k)
    return obj
