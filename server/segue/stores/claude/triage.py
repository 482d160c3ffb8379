"""The Claude Code fast path: which lines a brief can leave undecoded, and cheaper decodes of long lines.

Every rule here fires only on a positive match of the bytes Claude Code itself writes (compact JSON, its
own key order); on anything else it answers "decode this line" and the reference path (`steps.py`) reads
the decoded record. Quotes inside JSON strings are escaped, so a pattern such as `"tool_use_id":"` can only
match a real key. Switched off with SEGUE_FAST_PATHS=0 (`stores.text.fast_paths`).

Long lines are read by their ends: a tool result line holds the output twice (the result's content and
`toolUseResult.stdout`), an Edit's holds the whole file (`originalFile`), thinking blocks run to tens of KiB.
A brief reads none of that but a command's exit-code header and the end of its output (`OUTPUT_KEEP`).
Such lines are decoded from a copy whose long strings keep only their ends (`cut_strings`); whenever the
cut copy could read differently from the whole line, the whole line is decoded.
"""

from __future__ import annotations

import re
from typing import Any

from segue.stores.claude.records import Replaced, decode
from segue.stores.jsoncut import CUT_MARK, cut_strings
from segue.stores.jsoncut import string_end as _string_end
from segue.stores.text import OUTPUT_KEEP

CUT_MIN = 8 * 1024  # shorter lines are decoded whole: cutting costs more than it saves
CUT_HEAD = 1024  # bytes kept at the start of a result text the brief reads (its exit-code header)
CUT_TAIL = 2 * OUTPUT_KEEP + 1024  # bytes kept at its end: at least OUTPUT_KEEP characters, escapes included
_FIRST_TYPE = re.compile(rb'\{"type":"([\w-]+)"')
# An attachment record as Claude Code writes it (its first keys, in its order): the attachment's own type is then
# the first key of the top-level `attachment` object. Only `queued_command` gives a step (a typed request); the
# rest (2.1.3xx's ~57 KB prompt snapshots, skill and tool listings, …) never do.
_ATTACHMENT = re.compile(rb'\{"parentUuid":(?:"[0-9a-f-]{36}"|null),"isSidechain":(?:true|false),'
                         rb'"attachment":\{"type":"([\w-]+)"')
_MESSAGE_TYPES = (b"user", b"assistant", b"attachment")
_RESULT_KEYS = re.compile(rb'"(content|text|stdout|stderr|originalFile|oldString|newString|toolUseResult)":"')
_READ_KEYS = (b"content", b"text", b"toolUseResult")
_ASSISTANT_CUTS = re.compile(rb'"type":"(?:thinking","thinking|redacted_thinking","data)":"'
                             rb'|"(old_string|new_string|content)":"')
_EXIT_TEXT = re.compile(r"\A\s*(?:Error: )?(?:Exit code|Command failed with exit code) (-?\d+)")
EDIT_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit"}


def fast_record(raw: bytes, pending: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
    """(skip, record): skip the line undecoded, or a record decoded from a cut copy (None: decode whole)."""
    # Records whose first key is their type (queue operations, last-prompt, titles, snapshots, modes).
    first = _FIRST_TYPE.match(raw)
    if first is not None and first.group(1) not in _MESSAGE_TYPES:
        return True, None
    if first is None:
        att = _ATTACHMENT.match(raw)
        if att is not None and att.group(1) != b"queued_command":
            return True, None
    # A `progress` record names its type before any message it quotes; a message's role comes early.
    # Searching near the front first spares a scan of the whole line.
    r = raw.find(b'"role":"', 0, 4096)
    if r >= 0:
        if raw.find(b'"type":"progress"', 0, r) >= 0:
            return True, None
    elif raw.find(b'"type":"progress"', 0, 4096) >= 0 or (len(raw) > 4096 and is_progress(raw)):
        return True, None
    # A record holding tool results is never a request: when none of its results answers a call we wait
    # for (reads, greps, … are left out), it has nothing for a brief.
    ids = tool_use_ids(raw) if b'"tool_result"' in raw else []
    if ids and not any(i.decode("utf-8", "replace") in pending for i in ids):
        return True, None
    if len(raw) < CUT_MIN:
        return False, None
    return False, (cut_results(raw, pending) if ids else cut_assistant(raw))


def is_progress(raw: bytes) -> bool:
    p = raw.find(b'"type":"progress"')
    if p < 0:
        return False
    r = raw.find(b'"role":"')
    return r < 0 or p < r


def tool_use_ids(raw: bytes) -> list[bytes]:
    """Every `"tool_use_id":"…"` value, by `bytes.find` (several times faster than a regex on long lines)."""
    out = []
    i = raw.find(b'"tool_use_id":"')
    while i >= 0:
        j = i + 15
        k = raw.find(b'"', j)
        if k < 0:
            break
        if k > j and raw.find(b"\\", j, k) < 0:
            out.append(raw[j:k])
            i = raw.find(b'"tool_use_id":"', k + 1)
        else:
            i = raw.find(b'"tool_use_id":"', i + 1)
    return out


def cut_kept(text: Any, tail: bool) -> bool:
    """Does a cut text read as the whole one would: its start (exit code, rejection), and with `tail`, its
    last OUTPUT_KEEP characters?"""
    i = text.find(CUT_MARK) if isinstance(text, str) else -1
    if i < 0:
        return True
    m = _EXIT_TEXT.match(text)
    if len(text[:i].lstrip()) < 80 or (m is not None and m.end() >= i):
        return False
    return not tail or len(text) - text.rfind(CUT_MARK) - len(CUT_MARK) >= OUTPUT_KEEP


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def cut_results(raw: bytes, pending: dict[str, Any]) -> dict[str, Any] | None:
    """Tool results decoded from a copy of the line with their long texts cut to the ends a brief reads
    (a command's exit-code header and output end); None when that is not safe."""
    spans = []
    pos = 0
    # Inside the `toolUseResult` object (after the message) strings repeat the output or hold file texts:
    # none is read, so they are cut whole. A string `toolUseResult` keeps its exit-code head.
    tur_at = raw.find(b'"toolUseResult":{')
    tur_at = len(raw) if tur_at < 0 else tur_at
    while (m := _RESULT_KEYS.search(raw, pos)) is not None:
        j = m.end() - 1
        k = _string_end(raw, j, 4096)
        if k < 0:
            return None
        read = j < tur_at and m.group(1) in _READ_KEYS
        spans.append((j, CUT_HEAD if read else 0, CUT_TAIL if read else 0))
        pos = k + 1
    slim = cut_strings(raw, spans)
    rec = decode(slim) if slim is not None else None
    if rec is None or isinstance(rec, Replaced) or rec.get("type") != "user":
        return None
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    tur = rec.get("toolUseResult")
    if not isinstance(content, list) or (isinstance(tur, str) and not cut_kept(tur, False)):
        return None
    for b in content:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            p = pending.get(b.get("tool_use_id"))  # type: ignore[arg-type]
            if p is not None and p.kind == "command" and not cut_kept(_result_text(b.get("content")), True):
                return None
    return rec


def cut_assistant(raw: bytes) -> dict[str, Any] | None:
    """An assistant line decoded without what a brief never reads: thinking text and signatures, an Edit's
    old and new strings, a Write's content (its line count, all a brief shows, is taken from the bytes).
    None when the line has nothing to cut or a cut string belongs to anything else."""
    spans = []
    lines: dict[int, tuple[int, bool]] = {}
    pos = 0
    while (m := _ASSISTANT_CUTS.search(raw, pos)) is not None:
        j = m.end() - 1
        k = _string_end(raw, j, 4096)
        if k < 0:
            return None
        pos = k + 1
        if m.group(1) == b"content":
            if raw.find(b"\\\\", j, k) >= 0:
                continue  # an escaped backslash makes `\n` ambiguous by bytes: decoded whole
            # every backslash starts an escape: the text's newlines are its `\n` and `\u000a` escapes
            newlines = raw.count(b"\\n", j, k) + raw.count(b"\\u000a", j, k) + raw.count(b"\\u000A", j, k)
            lines[j] = (newlines, raw.endswith(b"\\n", j, k) or raw[k - 6:k] in (b"\\u000a", b"\\u000A"))
        spans.append((j, 0, 0))
        if m.group(1) is None and raw.startswith(b',"signature":"', pos):
            spans.append((pos + 13, 0, 0))
    cut: list[int] = []
    slim = cut_strings(raw, spans, cut) if spans else None
    rec = decode(slim) if slim is not None else None
    if rec is None or isinstance(rec, Replaced):
        return None
    contents = [lines[j] for j in cut if j in lines]  # in line order, as the blocks holding them
    msg = rec.get("message")
    for b in msg.get("content", ()) if isinstance(msg, dict) and isinstance(msg.get("content"), list) else ():
        if not isinstance(b, dict):
            continue
        inp = b.get("input")
        for key, v in inp.items() if isinstance(inp, dict) else ():
            if not isinstance(v, str) or CUT_MARK not in v:
                continue
            name = b.get("name")
            if name == "Write" and key == "content" and contents:
                n, ends = contents.pop(0)
                inp[key] = "\n" * n + ("" if ends else "x")  # the same `_line_count`
            elif name not in EDIT_TOOLS or key not in ("old_string", "new_string"):
                return None  # a cut text a step would show: decode the line whole
    return rec if not contents else None
