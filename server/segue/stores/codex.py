"""Codex CLI reader: rollouts under `$CODEX_HOME/sessions/` and `archived_sessions/` (read-only).

Every generation keeps one JSON object per line:
- X1 bare (until ~Sep 2025): a first line `{id, timestamp, instructions, git}`, then bare response items and
  `{"record_type":"state"}` lines; the cwd only appears inside `<environment_context>`.
- X2..X5 wrapped: envelopes `{timestamp, ordinal?, type, payload}` (`session_meta`, `response_item`,
  `event_msg`, `turn_context`, `compacted`, ...); 0.171 records turns as `event_msg` `item_completed`.
Wrapped files hold most facts twice: a model-facing response item and a UI event. The event form wins;
response items are the fallback (X1, or a file without events).

`state_*.sqlite` is a derived cache that can be stale (`threads.cwd` follows the latest resume), so this
reader uses only the rollout files and `session_index.jsonl` (names).
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from segue.model import ReadStats, Session, Step, parse_time
from segue.stores.base import (
    FAST_JSON,
    HEAD_BYTES,
    MAX_TEXT,
    TAIL_BYTES,
    Location,
    Reader,
    Source,
    fingerprint,
    loads,
    read_head_tail,
)
from segue.stores.jsoncut import CUT_MARK, cut_strings
from segue.stores.jsoncut import string_end as _string_end
from segue.stores.locks import held_inodes

RUNTIME = "codex"
OVERRIDE = "set CODEX_HOME"

DEEP_LIMIT = 4 * 1024 * 1024  # how far a summary reads for a first request hidden behind injected context
MAX_LINE = 8 * 1024 * 1024  # longer lines are never JSON-decoded whole (compacted histories, images)
STEP_TEXT = 16 * 1024  # cap on any one step's text: memory stays flat however big the session
OUTPUT_TAIL = 400

FAST_ENV = "SEGUE_READER_FAST"


def fast_paths() -> bool:
    """Byte-pattern shortcuts on (the default); `SEGUE_READER_FAST=0` reads by the reference decode only."""
    return os.environ.get(FAST_ENV, "1") != "0"


_ROLLOUT_RE = re.compile(r"^rollout-.*\.jsonl(?:\.zst)?$")
_UUID_RE = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
                      r"\.jsonl(?:\.zst)?$")
# `{"timestamp":"…","ordinal":N,"type":"event_msg","payload":{"type":"user_message"` as Codex writes it
_ENVELOPE_RE = re.compile(rb'\{"timestamp":"[^"]{0,40}",(?:"ordinal":\d+,)?"type":"(\w+)","payload":\{'
                          rb'(?:"type":"(\w+)",?)?')
_INDEX_RE = re.compile(rb'\{"id":"([0-9a-fA-F-]{36})","thread_name":("(?:[^"\\]|\\.)*")')
_TS_PREFIX_RE = re.compile(rb'\s*\{\s*"timestamp"\s*:\s*"([^"]{10,40})"')
_EXIT_RE = re.compile(r"^(?:Exit code: |Process exited with code )(-?\d+)\s*$", re.M)
_EXIT_JSON_RE = re.compile(r'"exit_code"\s*:\s*(-?\d+)')
# Codex 0.40 sandbox denials: `failed in sandbox <Sandbox> with execution error: sandbox denied exec error,
# exit code: N, stdout: …, stderr: …` (codex-rs SandboxErr::Denied's message)
_SANDBOX_EXIT_RE = re.compile(r"failed in sandbox [^\n]{0,80}? with execution error: [^\n]{0,200}?"
                              r"exit code: (-?\d+),")
_OUTPUT_LINE_RE = re.compile(r"^Output:", re.M)
_RUNNING_RE = re.compile(r"^Process running with session ID (\d+)", re.M)
_CWD_TAG_RE = re.compile(r"<cwd>\s*(.*?)\s*</cwd>", re.S)
_CWD_LINE_RE = re.compile(r"^\s*Current working directory:\s*(\S.*?)\s*$", re.M)
_SHELL_CMD_RE = re.compile(r"<command>\s*(.*?)\s*</command>", re.S)
_DATA_URL_RE = re.compile(rb'"data:[^"]{256,}"')
_RAW_CALL_ID_RE = re.compile(rb'"call_id"\s*:\s*"([^"]{1,200})"')
_RAW_OUTPUT_RE = re.compile(rb'"output"\s*:\s*"')

USER_MESSAGE_BEGIN = "## My request for Codex:"  # IDE prefix (codex-rs list.rs strip_user_message_prefix)

# Context Codex injects as user-role text: matched on start and end, case-insensitively
# (codex-rs contextual_user_message.rs, plus the older tags).
_CONTEXT_FRAGMENTS: tuple[tuple[str, str], ...] = (
    ("# agents.md instructions for ", "</instructions>"),
    ("<environment_context>", "</environment_context>"),
    ("<skill>", "</skill>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
    ("<additional_context>", "</additional_context>"),
    ("<user_instructions>", "</user_instructions>"),
    ("<apps_instructions>", "</apps_instructions>"),
    ("<skills_instructions>", "</skills_instructions>"),
    ("<plugins_instructions>", "</plugins_instructions>"),
    ("<collaboration_mode>", "</collaboration_mode>"),
    ("<permissions", "</permissions>"),
    ("<hook_prompt", "</hook_prompt>"),
)
_SHELL_FRAGMENT = ("<user_shell_command>", "</user_shell_command>")

# Records a brief never uses, recognised in the first bytes of a line before any decoding.
_SKIP_PREFIX: tuple[bytes, ...] = (
    b'"type":"compacted"', b'"type":"world_state"', b'"type":"token_usage_record"',
    b'"type":"session_meta"', b'"record_type":"state"',
    b'"payload":{"type":"reasoning"', b'{"type":"reasoning"', b'"payload":{"type":"compaction"',
    b'"payload":{"type":"context_compaction"', b'"payload":{"type":"token_count"',
    b'"payload":{"type":"agent_reasoning', b'"payload":{"type":"exec_command_output_delta"',
    b'"payload":{"type":"additional_tools"', b'"payload":{"type":"ghost_snapshot"',
)

_EXEC_TOOLS = {"exec_command", "shell", "shell_command", "container.exec", "local_shell", "unified_exec"}
_PATCH_TOOLS = {"apply_patch"}
_SPAWN_TOOLS = {"spawn_agent"}
_QUIET_TOOLS = {"write_stdin", "wait_agent", "wait", "close_agent", "resume_agent", "view_image",
                "read_file", "list_dir", "grep_files", "list_mcp_resources", "read_mcp_resource"}
_CODE_MODE_TOOLS = {"exec"}  # code mode (0.154): one JavaScript cell that calls the other tools
_SHELLS = {"bash", "sh", "zsh", "dash", "fish", "ksh", "pwsh", "powershell", "powershell.exe", "cmd.exe"}


# ---------------------------------------------------------------------------------------------------------
# Small text helpers


def _cap(text: str, limit: int = MAX_TEXT) -> str:
    """Cap to `limit` UTF-8 bytes without splitting a character."""
    if len(text) * 4 <= limit:
        return text
    b = text.encode("utf-8", "replace")
    return text if len(b) <= limit else b[:limit].decode("utf-8", "ignore")


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _is_fragment(text: str, frag: tuple[str, str]) -> bool:
    t = text.strip()
    start, end = frag
    return t[: len(start)].lower() == start and t[-len(end):].lower() == end


def is_context(text: str) -> bool:
    """Injected context rather than the user's own words."""
    t = text.lstrip()
    if not t.startswith(("<", "#")):
        return False
    return any(_is_fragment(t, f) for f in _CONTEXT_FRAGMENTS)


def unwrap_request(text: str) -> str | None:
    """The user's words: drop an IDE preamble up to `## My request for Codex:`, trim."""
    i = text.find(USER_MESSAGE_BEGIN)
    if i >= 0:
        text = text[i + len(USER_MESSAGE_BEGIN):]
    text = text.strip()
    return text or None


def _content_texts(content: Any, kinds: tuple[str, ...]) -> tuple[list[str], bool]:
    """Texts of `content` items of the given types, and whether an image was there."""
    if isinstance(content, str):
        return [content], False
    texts: list[str] = []
    image = False
    if isinstance(content, list):
        for c in content:
            if not isinstance(c, dict):
                continue
            t = c.get("type")
            if t in kinds and isinstance(c.get("text"), str):
                texts.append(c["text"])
            elif isinstance(t, str) and "image" in t:
                image = True
    return texts, image


def user_item_request(payload: dict[str, Any]) -> str | None:
    """A user-role response item's real request (context items filtered out), or None."""
    texts, image = _content_texts(payload.get("content"), ("input_text", "text"))
    real = [t for t in texts if not is_context(t) and not _is_fragment(t, _SHELL_FRAGMENT)]
    if real:
        return unwrap_request("\n".join(real))
    if image and not texts:
        return "[Image]"
    return None


def event_request(payload: dict[str, Any]) -> str | None:
    """`event_msg` `user_message` (X2..X4): the request, or None for injected context."""
    if payload.get("kind") in ("user_instructions", "environment_context"):
        return None
    msg = payload.get("message")
    if isinstance(msg, str) and msg.strip():
        if is_context(msg):
            return None
        return unwrap_request(msg)
    if payload.get("images") or payload.get("local_images"):
        return "[Image]"
    return None


def item_request(item: dict[str, Any]) -> str | None:
    """`item_completed` `UserMessage` (0.171): text parts joined as Codex joins them."""
    texts, image = _content_texts(item.get("content"), ("text", "input_text"))
    text = "".join(texts)
    if text.strip():
        return None if is_context(text) else unwrap_request(text)
    return "[Image]" if image else None


def output_text(output: Any) -> str:
    """`function_call_output.output` is a string, an array of content items, or an object."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        texts, _ = _content_texts(output, ("input_text", "output_text", "text"))
        return "\n".join(texts)
    if isinstance(output, dict):
        for key in ("content", "output", "text"):
            if isinstance(output.get(key), (str, list)):
                return output_text(output[key])
        return json.dumps(output)
    return ""


def exit_code_from_output(text: str) -> tuple[int | None, int | None]:
    """(exit code, running exec session id) from a tool output's header (§2.4 forms)."""
    m = _OUTPUT_LINE_RE.search(text, 0, 8192)
    head = text[: m.start()] if m else text[:2048]
    m = _EXIT_RE.search(head)
    if m:
        return int(m.group(1)), None
    m = _RUNNING_RE.search(head)
    if m:
        return None, int(m.group(1))
    m = _SANDBOX_EXIT_RE.match(text, 0, 4096)
    if m:
        return int(m.group(1)), None
    if text.startswith('{"output"') or text.startswith('{"metadata"'):
        # old `shell`: a JSON string {"output":…,"metadata":{"exit_code":N,…}}
        obj = loads(text)
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            code = obj["metadata"].get("exit_code")
            if isinstance(code, int) and not isinstance(code, bool):
                return code, None
        m = _EXIT_JSON_RE.search(text[-512:])
        if m:
            return int(m.group(1)), None
    return None, None


def _output_tail(text: str) -> str | None:
    _, sep, body = text.partition("\nOutput:\n")
    body = body if sep else text
    body = body.rstrip()
    return body[-OUTPUT_TAIL:] if body else None


def command_text(cmd: Any) -> str:
    """A command line from a string or an argv (`["/bin/bash", "-lc", "…"]` shows just the script)."""
    if isinstance(cmd, str):
        return cmd
    if isinstance(cmd, list) and all(isinstance(a, str) for a in cmd):
        if len(cmd) >= 3 and os.path.basename(cmd[0]).lower() in _SHELLS and cmd[-2] in (
                "-lc", "-c", "-l", "/c", "-Command", "-command"):
            return cmd[-1]
        return shlex.join(cmd)
    return ""


# ---------------------------------------------------------------------------------------------------------
# Files changed


def patch_changes(patch: str, cwd: str | None) -> list[tuple[str, int | None, int | None]]:
    """(path, added, removed) per file of an `*** Begin Patch` text (Add/Update/Delete/Move to)."""
    out: list[tuple[str, int | None, int | None]] = []
    cur: list[Any] | None = None
    for line in patch.splitlines():
        if line.startswith("*** "):
            for prefix, kind in (("*** Add File: ", "add"), ("*** Update File: ", "update"),
                                 ("*** Delete File: ", "delete")):
                if line.startswith(prefix):
                    if cur:
                        out.append((cur[0], cur[1], cur[2]))
                    path = _abs(line[len(prefix):].strip(), cwd)
                    cur = [path, 0, 0] if kind != "delete" else [path, 0, None]
                    break
            else:
                if line.startswith("*** Move to: ") and cur:
                    cur[0] = _abs(line[len("*** Move to: "):].strip(), cwd)
            continue
        if cur is None:
            continue
        if line.startswith("+"):
            cur[1] += 1
        elif line.startswith("-") and cur[2] is not None:
            cur[2] += 1
    if cur:
        out.append((cur[0], cur[1], cur[2]))
    return out


def _abs(path: str, cwd: str | None) -> str:
    if not path or os.path.isabs(path) or not cwd:
        return path
    return os.path.normpath(os.path.join(cwd, path))


def _diff_counts(diff: str) -> tuple[int, int]:
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def changes_map(changes: Any, cwd: str | None) -> list[tuple[str, int | None, int | None]]:
    """`patch_apply_end.changes` / `FileChange.changes`: {path: {add|update|delete…}}."""
    out: list[tuple[str, int | None, int | None]] = []
    if not isinstance(changes, dict):
        return out
    for path, change in changes.items():
        added: int | None = None
        removed: int | None = None
        new_path = path
        if isinstance(change, dict):
            body = change
            kind = change.get("type")
            if kind is None and len(change) == 1:  # externally tagged: {"add": {...}}
                kind, body = next(iter(change.items()))
                body = body if isinstance(body, dict) else {}
            if kind == "add" and isinstance(body.get("content"), str):
                added, removed = len(body["content"].splitlines()), 0
            elif kind == "update" and isinstance(body.get("unified_diff"), str):
                added, removed = _diff_counts(body["unified_diff"])
            elif kind == "delete":
                added = 0
            if isinstance(body.get("move_path"), str):
                new_path = body["move_path"]
        out.append((_abs(str(new_path), cwd), added, removed))
    return out


def shell_writes(cmd: str, cwd: str | None) -> list[tuple[str, int | None, int | None]]:
    """Files a shell command writes through `>`/`>>` redirections or `tee` (best effort).

    Codex 0.171 writes files through the shell when `apply_patch` is not offered, so these are often the
    only trace of a file change. A heredoc feeding `cat > f` gives the added line count.
    """
    if ">" not in cmd and "tee " not in cmd:
        return []
    first, _, rest = cmd.partition("\n")
    heredoc_lines: int | None = None
    m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", first)
    if m and rest:
        body = rest.split("\n")
        heredoc_lines = next((i for i, ln in enumerate(body) if ln.strip() == m.group(1)), None)
    try:
        lex = shlex.shlex(first, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        tokens = list(lex)
    except ValueError:
        return []
    out: list[tuple[str, int | None, int | None]] = []
    for i, tok in enumerate(tokens):
        target = None
        if tok in (">", ">>", ">|", "&>", "&>>") and i + 1 < len(tokens):
            # a file descriptor written just before (2>) is glued into the previous token as a digit
            if tok in (">", ">>") and i > 0 and tokens[i - 1].isdigit() and tokens[i - 1] != "1":
                continue
            target = tokens[i + 1]
        elif tok == "tee":
            j = i + 1
            while j < len(tokens) and tokens[j].startswith("-"):
                j += 1
            if j < len(tokens) and tokens[j] not in ("|", "&&", ";", "||", ">"):
                target = tokens[j]
        if not target or target.startswith(("&", "/dev/", "$")) or target in ("|", ";", "&&"):
            continue
        added = heredoc_lines if tokens and tokens[0] == "cat" and heredoc_lines is not None else None
        out.append((_abs(target, cwd), added, None))
    return out


# ---------------------------------------------------------------------------------------------------------
# Reading lines (plain or zstd), with bounded memory


class ZstdMissing(RuntimeError):
    pass


def _open_regular(path: str) -> BinaryIO:
    """Open for reading only if it is a regular file (a FIFO or device must never block us)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(f"{path}: not a regular file")
        return os.fdopen(fd, "rb", buffering=256 * 1024)
    except BaseException:
        os.close(fd)
        raise


def open_rollout(path: str) -> BinaryIO:
    """A binary stream of the rollout's JSONL, decompressing `.zst` on the fly."""
    f = _open_regular(path)
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


def _decode_slim(raw: bytes) -> tuple[list[dict[str, Any]], int]:
    """Decode a line the summary needs, skipping its big instruction strings when that parses."""
    slim = _slim(raw) if fast_paths() else raw
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


# ---------------------------------------------------------------------------------------------------------
# Summaries


def uuid_from_name(name: str) -> str | None:
    m = _UUID_RE.search(name)
    return m.group(1).lower() if m else None


class _Facts:
    """What a summary gathers from the head of one rollout.

    Only the session_meta and the event-form request are decoded on the way; response-item user
    messages and turn contexts are kept raw and decoded only when a fact is still missing at the end
    (X1 files, a missing header, no event form): most summaries decode two head lines."""

    def __init__(self) -> None:
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
        # a turn context (or 0.171 thread settings): kept raw from an envelope, decoded otherwise
        self.first_tc: bytes | dict[str, Any] | None = None
        self.last_tc: bytes | dict[str, Any] | None = None

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
        m = _ENVELOPE_RE.match(raw) if fast_paths() else None
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
                    self.first_tc = self.first_tc or raw
                    self.last_tc = raw
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
        recs, bad = _decode_slim(raw)
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
            if self.request is None:
                if t == "user_message":
                    self.request = event_request(p)
                elif t == "item_completed" and isinstance(p.get("item"), dict) \
                        and p["item"].get("type") == "UserMessage":
                    self.request = item_request(p["item"])
        elif kind == "turn_context" or (kind == "event_msg" and p.get("type") == "thread_settings_applied"):
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
        if which is None or isinstance(which, dict):
            return which
        recs, _ = _decode_slim(which)
        for obj in recs:
            kind, p, _ts = normalize(obj)
            if kind == "turn_context" or (kind == "event_msg" and p.get("type") == "thread_settings_applied"):
                return p
        return None


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
        self.model: str | None = None


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


def _find_last(chunk: bytes, needle: bytes, whole: bool, kind: str, types: tuple[str, ...]
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
            recs, _ = _decode_slim(line)
            for obj in reversed(recs):
                k, p, _ts = normalize(obj)
                if k == kind and (not types or p.get("type") in types):
                    return p
        if start == 0:
            return None
    return None


def _last_timestamp(chunk: bytes, whole: bool) -> Any:
    """The timestamp of the last complete record in the tail. Fast path: a line that starts with Codex's
    `{"timestamp":"…"` prefix gives it without decoding; any other line is decoded (the reference)."""
    fast = fast_paths()
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


def _scan_tail(chunk: bytes, whole: bool) -> _Tail:
    """From the tail bytes: the last timestamp and the last model. Finds the record with `rfind` and
    decodes only its line."""
    t = _Tail()
    t.last_ts = _last_timestamp(chunk, whole)
    tc = _find_last(chunk, b"turn_context", whole, "turn_context", ())
    if tc is not None:
        t.model = _str(tc.get("model"))
    else:
        st = _find_last(chunk, b"thread_settings_applied", whole, "event_msg", ("thread_settings_applied",))
        t.model = _model_of_settings(st) if st is not None else None
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


# ---------------------------------------------------------------------------------------------------------
# Live detection


def open_rollouts(prefixes: tuple[str, ...], proc: str = "/proc") -> set[str]:
    """Rollout paths some process holds open (Linux /proc/<pid>/fd). Codex keeps its rollout open for
    appending while the session runs, so a holder means a live session; empty when /proc is absent."""
    held: set[str] = set()
    try:
        pids = [e.name for e in os.scandir(proc) if e.name.isdigit()]
    except OSError:
        return held
    for pid in pids:
        fd_dir = f"{proc}/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if target.startswith(prefixes) and ".jsonl" in target:
                held.add(target)
    return held


# ---------------------------------------------------------------------------------------------------------
# The reader


class CodexReader(Reader):
    """Codex CLI sessions.

    Live: the rollouts carry no pid or running marker, and "no task_complete yet" fits a crash as well as
    a running turn. Codex itself holds `thread-writer-locks/<thread id>.lock` locked while a process
    writes the thread (see `is_live`), which is read by default (one directory listing and one read of
    /proc/locks per second). `probe_live=True` adds the older check of /proc/*/fd for a process holding
    the rollout open (walks every process's fds, hence only on request)."""

    runtime = RUNTIME

    def __init__(self, env: Any, *, probe_live: bool = False) -> None:
        super().__init__(env)
        self.probe_live = probe_live
        self._names: dict[str, str] = {}
        self._names_fp: tuple[Any, ...] | None = None
        self._names_checked = -1.0
        self._root = env.path("CODEX_HOME") or (env.home / ".codex")
        self._live: set[str] | None = None
        self._locks: tuple[dict[str, int], set[int]] | None = None
        self._locks_at = -10.0
        self._live_at = 0.0

    # -- where

    @property
    def root(self) -> Path:
        return self._root

    def _dirs(self) -> list[tuple[Path, bool]]:
        return [(self.root / "sessions", False), (self.root / "archived_sessions", True)]

    def locations(self) -> list[Location]:
        out = [Location(str(d), d.is_dir(), OVERRIDE) for d, _ in self._dirs()]
        idx = self.root / "session_index.jsonl"
        out.append(Location(str(idx), idx.is_file(), OVERRIDE))
        return out

    # -- discovery

    def sources(self) -> Iterator[Source]:
        # Titles come from session_index.jsonl, so a rename there must re-summarize: its fingerprint is
        # part of every source's (renames are rare; the cost is one re-read of heads and tails).
        index_fp = fingerprint(self.root / "session_index.jsonl")
        for top, archived in self._dirs():
            for path in _walk(str(top)):
                kind = ("archived-" if archived else "") + ("rollout-zst" if path.endswith(".zst") else "rollout")
                yield Source(RUNTIME, path, fingerprint(path) + index_fp, kind)

    # -- names

    def names(self) -> dict[str, str]:
        """`session_index.jsonl` names: the last entry per id wins (an empty name clears it). Parsed once
        per change of the file."""
        now = time.monotonic()
        if now - self._names_checked < 0.5:  # one stat per listing, not one per session
            return self._names
        self._names_checked = now
        path = self.root / "session_index.jsonl"
        fp = fingerprint(path)
        if fp == self._names_fp:
            return self._names
        names: dict[str, str] = {}
        try:
            with _open_regular(str(path)) as f:
                for raw, whole in iter_raw_lines(f):
                    if not whole or b"thread_name" not in raw:
                        continue
                    m = _INDEX_RE.match(raw)  # Codex's own field order: no full decode per line
                    obj = {"id": m.group(1).decode(), "thread_name": loads(m.group(2))} if m else loads(raw)
                    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
                        continue
                    name = obj.get("thread_name")
                    if isinstance(name, str) and name.strip():
                        names[obj["id"].lower()] = _cap(name.strip())
                    else:
                        names.pop(obj["id"].lower(), None)
        except OSError:
            names = {}
        self._names, self._names_fp = names, fp
        return names

    # -- live

    def live_paths(self) -> set[str]:
        """Rollouts some process holds open right now (cached for two seconds)."""
        now = time.monotonic()
        if self._live is None or now - self._live_at > 2.0:
            prefixes: tuple[str, ...] = ()
            for d, _ in self._dirs():
                prefixes += (str(d) + os.sep, os.path.realpath(d) + os.sep)
            self._live, self._live_at = open_rollouts(prefixes), now
        return self._live

    # -- summaries

    def summarize(self, source: Source) -> list[Session]:
        path = source.path
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file")
        archived = source.kind.startswith("archived") or f"{os.sep}archived_sessions{os.sep}" in path
        compressed = path.endswith(".zst")
        name = os.path.basename(path)
        sess = Session(runtime=RUNTIME, id=uuid_from_name(name) or name.split(".")[0], store_path=path,
                       updated_at=st.st_mtime)
        # sessions/ beats archived_sessions/, a plain file beats its .zst
        sess.locator = {"path": path, "priority": (0 if archived else 2) + (0 if compressed else 1),
                        "compressed": compressed, "archived": archived}
        try:
            facts, tail, deep = self._read(path, compressed)
        except ZstdMissing as e:
            sess.problems.append(str(e))
            return [sess]
        except Exception as e:
            if not compressed:
                raise
            # zstandard raises its own ZstdError on a damaged frame: keep the session, say why
            sess.problems.append(f"compressed rollout could not be read: {e}")
            return [sess]
        self._fill(sess, facts, tail, deep, st.st_size)
        if sess.locator.get("review") and sess.parent_id is None and sess.started_at is not None:
            sess.parent_id = self._review_parent(path, sess.started_at)
        sess.live = self.is_live(sess.id) or (self.probe_live and path in self.live_paths())
        return [sess]

    def _review_parent(self, child: str, at: float) -> str | None:
        """The thread that entered review mode at `at` (Codex 0.77 review subagents record no parent):
        its rollout was written at or after `at` and holds an `entered_review_mode` event within a second
        of it. Reads only rollouts modified since, and only the lines holding that event."""
        best: tuple[float, str] | None = None
        for top, _ in self._dirs():
            for path in _walk(str(top)):
                if path == child or path.endswith(".zst"):
                    continue
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if st.st_mtime < at - 1 or st.st_size > REVIEW_SCAN_MAX:
                    continue
                gap = _review_gap(path, at)
                sid = uuid_from_name(os.path.basename(path))
                if gap is not None and sid and (best is None or gap < best[0]):
                    best = (gap, sid)
        return best[1] if best else None

    def refresh_live(self, sessions: list[Session]) -> None:
        # cached summaries go stale when a process exits without touching the rollout
        for s in sessions:
            s.live = self.is_live(s.id) or (self.probe_live and s.store_path in self.live_paths())

    def is_live(self, session_id: str) -> bool:
        """Codex (0.171) holds `thread-writer-locks/<thread id>.lock` locked while a process writes the
        thread; a clean exit deletes the file and a killed process leaves it unlocked. So live = the
        file exists and /proc/locks shows a lock on its inode. Without /proc/locks: unknown, False."""
        locks = self._lock_state()
        if not locks:
            return False
        inode = locks[0].get(session_id.lower())
        return inode is not None and inode in locks[1]

    def _lock_state(self) -> tuple[dict[str, int], set[int]] | None:
        """(thread id -> lock file inode, locked inodes), read at most once a second."""
        now = time.monotonic()
        if now - self._locks_at < 1.0:
            return self._locks
        self._locks_at = now
        self._locks = None
        files: dict[str, int] = {}
        try:
            with os.scandir(self.root / "thread-writer-locks") as it:
                for e in it:
                    if e.name.endswith(".lock") and _UUID_ONLY_RE.match(e.name[:-5]):
                        try:
                            files[e.name[:-5].lower()] = e.inode()
                        except OSError:
                            continue
        except OSError:
            return None
        if files:
            held = held_inodes()
            if held is not None:
                self._locks = (files, held)
        return self._locks

    def _read(self, path: str, compressed: bool) -> tuple[_Facts, _Tail, bool]:
        facts = _Facts()
        if compressed:
            head, tail_bytes = _zst_head_tail(path)
        else:
            head, tail_bytes, _ = read_head_tail(path)
        whole = not tail_bytes  # the head holds the whole file
        done = False
        first = True
        for raw in _all_lines(head) if whole else _lines(head):
            if facts.line(raw, first):
                done = True
                break
            first = False
        deep = False
        if not done and not whole:
            deep = True
            consumed = head.rfind(b"\n") + 1  # the deep scan goes on after the head's last whole line
            self._deep_scan(path, facts, consumed)
        tail = _scan_tail(head if whole else tail_bytes, whole)
        return facts, tail, deep

    @staticmethod
    def _deep_scan(path: str, facts: _Facts, consumed: int) -> None:
        """The first request lies past the head (long injected context): read on, up to DEEP_LIMIT."""
        with open_rollout(path) as f:
            if consumed:
                f.read(consumed)
            read = consumed
            first = consumed == 0
            for raw, whole in iter_raw_lines(f):
                read += len(raw)
                if whole and facts.line(raw, first):
                    return
                first = False
                if read > DEEP_LIMIT:
                    facts.capped = True
                    return

    def _fill(self, sess: Session, facts: _Facts, tail: _Tail, deep: bool, size: int) -> None:
        if deep:
            sess.locator["read_deep"] = True
        meta = facts.meta
        if meta is None:
            sess.problems.append("no session_meta record (id from the file name)" if size else "empty rollout")
            # the CLI cannot load a rollout whose first record is not its session_meta
            sess.resumable, sess.resume_blocker = False, "cli_cannot_reopen"
        else:
            sess.id = _str(meta.get("id")) or sess.id
            git = meta.get("git")
            sess.branch = _str(git.get("branch")) if isinstance(git, dict) else None
            sess.started_at = parse_time(meta.get("timestamp")) or parse_time(facts.meta_ts)
            sess.cwd = _str(meta.get("cwd"))
            sub, sess.parent_id = _subagent_parent(meta)
            if sub:
                sess.resumable, sess.resume_blocker = False, "subagent"
                src = meta.get("source")
                if sess.parent_id is None and isinstance(src, dict) and src.get("subagent") == "review":
                    sess.locator["review"] = True
            elif facts.bare:
                # The current CLI reopens a rollout only when its first line is a wrapped session_meta
                # (codex-rs list.rs read_session_meta_line); X1 files were resumed by path before 0.39.
                sess.resumable, sess.resume_blocker = False, "cli_cannot_reopen"
            sess.locator["format"] = "bare" if facts.bare else "wrapped"
            for key in ("forked_from_id", "cli_version", "originator"):
                if _str(meta.get(key)):
                    sess.locator[key] = meta[key]
        if facts.request is None or not sess.cwd:
            facts.user_fallback()
        if not sess.cwd:
            # X1 keeps the cwd only in <environment_context>; the first turn_context is the last resort
            tc = facts.turn(facts.first_tc)
            sess.cwd = facts.env_cwd or (_str(tc.get("cwd")) if tc else None)
        sess.started_at = sess.started_at or parse_time(facts.first_ts)
        request = (facts.item_request if facts.bare else facts.request) or facts.item_request
        sess.first_request = _cap(request) if request else None
        if request is None and facts.capped:
            sess.problems.append(f"first request not found in the first {DEEP_LIMIT >> 20} MiB")
        if tail.model is None:
            tc = facts.turn(facts.last_tc)
            sess.model = (_str(tc.get("model")) or _model_of_settings(tc)) if tc else None
        else:
            sess.model = tail.model
        last = parse_time(tail.last_ts)
        if last is not None and not facts.bare:
            sess.updated_at = last  # else the file mtime: bare records carry no timestamps
        sess.title = self.names().get(sess.id.lower()) or _first_line(sess.first_request)
        if facts.damaged:
            sess.problems.append(f"{facts.damaged} damaged lines skipped")

    # -- steps

    def exists(self, session: Session) -> bool:
        return self._resolve(session) is not None

    def _resolve(self, session: Session) -> str | None:
        """The rollout's current path: Codex may switch a rollout between `.jsonl` and `.jsonl.zst`."""
        p = session.locator.get("path") or session.store_path
        plain = p[:-4] if p.endswith(".zst") else p
        for cand in (plain, plain + ".zst"):
            if os.path.isfile(cand):
                return cand
        return None

    def steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        path = self._resolve(session)
        if path is None:
            stats.problems.append(f"{session.store_path}: rollout no longer exists")
            return
        try:
            f = open_rollout(path)
        except ZstdMissing as e:
            stats.problems.append(str(e))
            return
        b = StepBuilder(session.cwd)
        with f:
            try:
                for raw, whole in iter_raw_lines(f, stats):
                    yield from b.feed_raw(raw, whole, stats)
            except Exception as e:  # zstandard.ZstdError: a corrupt frame mid-stream
                if not path.endswith(".zst"):
                    raise
                stats.problems.append(f"rollout could not be read to the end: {e}")
        yield from b.finish(stats)


REVIEW_SCAN_MAX = 512 * 1024 * 1024  # rollouts bigger than this are not searched for a review's parent


def _review_gap(path: str, at: float) -> float | None:
    """Seconds between `at` and the nearest `entered_review_mode` event in the rollout (at most 1 s), or
    None. The event name is located by bytes, then its line is decoded (the reference decides)."""
    import mmap

    try:
        with _open_regular(path) as f:
            if os.fstat(f.fileno()).st_size == 0:
                return None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                best: float | None = None
                pos = mm.find(b"entered_review_mode")
                while pos >= 0:
                    start = mm.rfind(b"\n", 0, pos) + 1
                    end = mm.find(b"\n", pos)
                    end = len(mm) if end < 0 else end
                    for obj in decode_records(mm[start:end])[0]:
                        kind, p, ts = normalize(obj)
                        when = parse_time(ts) if kind == "event_msg" and p.get("type") == "entered_review_mode" \
                            else None
                        if when is not None and abs(when - at) <= 1.0 and (best is None or abs(when - at) < best):
                            best = abs(when - at)
                    pos = mm.find(b"entered_review_mode", end)
                return best
    except (OSError, ValueError):
        return None


def _walk(top: str) -> Iterator[str]:
    """Rollout files under `top`, any depth (YYYY/MM/DD and the legacy flat layout). Stat only."""
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        names = {e.name for e in entries}
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                    continue
                if not _ROLLOUT_RE.match(e.name) or not e.is_file():
                    continue  # dangling links, FIFOs and directories named like rollouts
            except OSError:
                continue
            if e.name.endswith(".zst") and e.name[:-4] in names:
                continue  # a plain sibling wins (Codex keeps both for a moment while switching)
            yield e.path


# ---------------------------------------------------------------------------------------------------------
# Steps


class _Call:
    """A tool call waiting for its output (exit code, child id, patch result)."""

    __slots__ = ("at", "cwd", "kind", "mark", "output", "text", "writes")

    def __init__(self, kind: str, text: str, at: float | None, cwd: str | None = None) -> None:
        self.kind = kind  # command | patch | spawn | tool | stdin
        self.text = text
        self.at = at
        self.cwd = cwd
        self.output: str | None = None
        self.writes: list[tuple[str, int | None, int | None]] = []
        self.mark: int | None = None  # steps emitted when a code-mode cell began


class StepBuilder:
    """Turns records, in file order, into Steps.

    Calls wait for their outputs (exit codes, child ids) and are settled at the latest at the turn's end,
    so what is held stays within one turn. Response-item requests and messages are held until it is clear
    whether the file records them as UI events (which then win); bare X1 files have no events."""

    def __init__(self, cwd: str | None) -> None:
        self.cwd = cwd
        self.bare = False
        self.events_form = False
        self.held: list[Step] = []
        self.pending: dict[str, _Call] = {}
        self.running: dict[int, str] = {}  # unified exec session id -> call id of the command
        self.done: set[str] = set()
        self.prev: Step | None = None
        self.last_message: str | None = None
        self.big_skipped = 0
        self._ts: Any = None
        self._at: float | None = None
        self.fast = fast_paths()
        self.lines = 0  # non-blank lines seen
        self.known = 0  # records recognised (decoded, or skipped on a positive match of their type)
        self.bad_args = 0  # function calls whose `arguments` string is not JSON
        self.emitted = 0  # non-message steps so far

    # -- raw lines

    def feed_raw(self, raw: bytes, whole: bool, stats: ReadStats) -> Iterator[Step]:
        if not whole or raw.strip():
            self.lines += 1
        if whole and not self.fast:
            yield from self._decode_whole(raw, stats)
            return
        m = _ENVELOPE_RE.match(raw) if whole else None
        plan = None
        if m is not None:  # Codex's own compact envelope: most records are decided from their bytes
            plan = self._plan(raw, m)
        elif whole and (b := _BARE_OUTPUT_RE.match(raw)) is not None:
            plan = self._plan_output(raw, b.end(), bare=True)
        if plan is _SKIP:
            self.known += 1
            return
        if plan is not None:
            kind, payload, ts = normalize(plan)
            yield from self.feed(kind, payload, ts)
            return
        if m is None:
            head = raw[:320]
            if any(s in head for s in _SKIP_PREFIX):
                self.known += 1
                return
        if not whole:  # only the first 64 KiB of the line are here
            fast = _fast_output(raw)
            if fast is not None:  # a huge tool output: its call id and exit-code header
                self.known += 1
                yield from self._output(fast, None)
                return
            if not self.big_skipped:
                stats.problems.append(f"records over {MAX_LINE >> 20} MiB skipped")
            self.big_skipped += 1
            return
        if len(raw) > 256 * 1024 and b'"data:' in raw:
            raw = _DATA_URL_RE.sub(b'"data:"', raw)  # inline base64 images
        if b'"turn_context"' in raw[:320]:
            raw = _slim(raw)
        yield from self._decode_whole(raw, stats)

    def _decode_whole(self, raw: bytes, stats: ReadStats) -> Iterator[Step]:
        """The reference path: decode the line and feed every record it holds."""
        recs, bad = decode_records(raw)
        stats.damaged_lines += bad
        for obj in recs:
            kind, payload, ts = normalize(obj)
            yield from self.feed(kind, payload, ts)

    def _plan(self, raw: bytes, m: re.Match[bytes]) -> Any:
        """Decide an envelope line from its bytes: `_SKIP` (nothing a brief uses), a record decoded from a
        copy with the middle of its big output strings cut out, or None (decode the line whole)."""
        kind, sub = m.group(1), m.group(2)
        if kind == b"turn_context" or sub is None:
            return None
        at = m.end()
        if kind == b"response_item":
            if sub not in _USED_RESPONSE:
                return _skip(raw, at)
            if sub == b"message":
                role = _ROLE_AT_RE.match(raw, at)
                if role is not None and (role.group(1) in (b"developer", b"system") or (
                        role.group(1) == b"assistant" and self.events_form)):
                    return _skip(raw, at)  # instructions, or the response-item copy of an event message
            elif sub in (b"function_call_output", b"custom_tool_call_output"):
                return self._plan_output(raw, at)
            return None
        if kind == b"event_msg":
            if sub not in _USED_EVENTS:
                return _skip(raw, at)
            if sub == b"item_completed":
                it = _ITEM_AT_RE.match(raw, at)
                if it is None:
                    return None
                if it.group(1) not in _USED_TURN_ITEMS:
                    return _skip(raw, at)
                if it.group(1) == b"CommandExecution" and len(raw) >= CUT_MIN:
                    obj = _cut_record(raw, at, (b'"aggregated_output":"',), 0)
                    item = _dig(obj, "item")
                    return obj if item is not None and _ends_kept(item.get("aggregated_output"), False) else None
            elif sub == b"exec_command_end" and len(raw) >= CUT_MIN:
                obj = _cut_record(raw, at, _EXEC_END_KEYS, 0)
                p = _dig(obj)
                if p is not None and _ends_kept(_str(p.get("aggregated_output")) or p.get("stdout"), False):
                    return obj
            return None
        return _skip(raw, at)  # session_meta, compacted, world_state, token records, …

    def _plan_output(self, raw: bytes, at: int, bare: bool = False) -> Any:
        """A tool output (wrapped, or a bare X1 item): skipped unless its call waits for it; a command's
        output is read from its ends."""
        m = _CALL_ID_AT_RE.match(raw, at)
        if m is None:
            return None
        try:
            cid = m.group(1).decode("utf-8")
        except UnicodeDecodeError:
            return None
        c = self.pending.get(cid)
        if c is None or c.kind == "tool":
            # A second record can only start where the output string ends (its `{` then reads as the
            # string's last character): scanning from there is cheaper than scanning the whole output.
            k = _string_end(raw, m.end() - 1) if m.group(2) is not None else -1
            if _skip(raw, k - 1 if k > 0 else at, bare) is None:
                return None
        if c is None:
            return _SKIP
        if c.kind == "tool":  # a tool step shows the call, never its output
            out = {"type": "function_call_output", "call_id": cid}
            return out if bare else {"type": "response_item", "payload": out}
        if c.kind not in ("command", "stdin") or m.group(2) is None or len(raw) < CUT_MIN:
            return None
        for head in (1024, 12 * 1024):  # the exit-code header, usually in the first lines
            obj = _cut_record(raw, at, (), head, (m.end() - 1,))
            p = obj if bare else _dig(obj)
            if p is None:
                return None
            if _ends_kept(p.get("output"), True):
                return obj
        return None

    def feed(self, kind: str, p: dict[str, Any], ts: Any) -> Iterator[Step]:
        if ts != self._ts:  # records come in bursts with one timestamp: parse each once
            self._ts, self._at = ts, (parse_time(ts) if ts is not None else None)
        at = self._at
        if kind != "unknown":
            self.known += 1
        if kind == "response_item":
            yield from self._response_item(p, at)
        elif kind == "event_msg":
            yield from self._event(p, at)
        elif kind == "turn_context":
            self.cwd = _str(p.get("cwd")) or self.cwd
        elif kind == "bare_meta":
            self.bare = True

    def finish(self, stats: ReadStats | None = None) -> Iterator[Step]:
        yield from self._settle()
        yield from self._flush_held()
        if stats is not None and self.lines and not self.known:
            stats.problems.append(f"no Codex records recognised in {self.lines} non-blank lines")
        if stats is not None and self.bad_args:
            stats.problems.append(f"{self.bad_args} tool calls whose arguments could not be decoded")

    # -- emitting

    def _out(self, step: Step) -> Iterator[Step]:
        self.prev = step
        yield step

    def _emit(self, step: Step) -> Iterator[Step]:
        """A non-message step; held response-item messages before it come out first."""
        self.emitted += 1
        yield from self._flush_held()
        yield from self._out(step)

    def _flush_held(self) -> Iterator[Step]:
        held, self.held = self.held, []
        if not self.events_form:
            for s in held:
                yield from self._say(s)

    def _say(self, s: Step) -> Iterator[Step]:
        """A request or message, without the duplicates the store's two forms produce."""
        if s.kind == "request":
            if self.prev is not None and self.prev.kind == "request" and self.prev.text == s.text:
                return
            self.last_message = None
        else:
            if s.text == self.last_message:
                return  # e.g. task_complete.last_agent_message repeating the final AgentMessage
            self.last_message = s.text
        yield from self._out(s)

    def _say_event(self, s: Step) -> Iterator[Step]:
        self.events_form = True
        self.held = []
        yield from self._say(s)

    def _hold(self, s: Step) -> Iterator[Step]:
        if self.bare:
            yield from self._say(s)
            return
        self.held.append(s)
        if len(self.held) > 64:  # a wrapped file without events: do not hold a whole session
            yield from self._say(self.held.pop(0))

    # -- response items

    def _response_item(self, p: dict[str, Any], at: float | None) -> Iterator[Step]:
        t = p.get("type")
        if t == "message":
            role = p.get("role")
            if role == "user":
                yield from self._user_shell(p, at)
                text = None if self.events_form else user_item_request(p)
                if text:
                    yield from self._hold(Step("request", _cap(text, STEP_TEXT), at))
            elif role == "assistant" and not self.events_form:
                texts, _ = _content_texts(p.get("content"), ("output_text", "text"))
                text = "\n".join(x for x in texts if x.strip()).strip()
                if text:
                    yield from self._hold(Step("message", _cap(text, STEP_TEXT), at))
        elif t in ("function_call", "custom_tool_call", "local_shell_call"):
            self._call(p, at)
        elif t in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            yield from self._output(p, at)
        elif t == "web_search_call":
            action = p.get("action") if isinstance(p.get("action"), dict) else {}
            q = _str(action.get("query")) or _str(p.get("query"))
            yield from self._emit(Step("tool", _cap(f"web_search: {q}" if q else "web_search", STEP_TEXT), at))

    def _user_shell(self, p: dict[str, Any], at: float | None) -> Iterator[Step]:
        """`<user_shell_command>`: the user's own `!cmd`, with its result."""
        texts, _ = _content_texts(p.get("content"), ("input_text", "text"))
        for t in texts:
            if _is_fragment(t, _SHELL_FRAGMENT):
                m = _SHELL_CMD_RE.search(t)
                code, _ = exit_code_from_output(t.split("<result>", 1)[-1].strip())
                if m:
                    yield from self._emit(Step("command", _cap(m.group(1), STEP_TEXT), at, exit_code=code))

    def _call(self, p: dict[str, Any], at: float | None) -> None:
        t = p.get("type")
        name = str(p.get("name") or "")
        short = name if name in _EXEC_TOOLS else name.rsplit(".", 1)[-1]
        call_id = _str(p.get("call_id")) or _str(p.get("id"))
        if call_id is None or call_id in self.done:
            return
        if t == "local_shell_call":
            action = p.get("action") if isinstance(p.get("action"), dict) else {}
            cmd = command_text(action.get("command"))
            if cmd:
                self.pending[call_id] = _Call("command", _cap(cmd, STEP_TEXT), at,
                                              _str(action.get("working_directory")) or self.cwd)
            return
        if t == "custom_tool_call":
            inp = p.get("input")
            args: dict[str, Any] = inp if isinstance(inp, dict) else {"input": inp}
        else:
            raw_args = p.get("arguments")
            parsed = loads(raw_args) if isinstance(raw_args, str) else raw_args
            if isinstance(raw_args, str) and raw_args.strip() and parsed is None:
                self.bad_args += 1
            args = parsed if isinstance(parsed, dict) else {"input": raw_args}
        workdir = _abs(_str(args.get("workdir")) or "", self.cwd) or self.cwd
        if short in _EXEC_TOOLS:
            cmd = command_text(args.get("cmd") if "cmd" in args else args.get("command"))
            if "*** Begin Patch" in cmd[:4096] and re.match(r"\s*apply_patch\b", cmd):
                self._patch_call(call_id, cmd, at, workdir)  # apply_patch run through the shell
            elif cmd:
                self.pending[call_id] = _Call("command", _cap(cmd, STEP_TEXT), at, workdir)
        elif short in _PATCH_TOOLS:
            patch = args.get("input") or args.get("patch")
            self._patch_call(call_id, patch if isinstance(patch, str) else "", at, workdir)
        elif short in _SPAWN_TOOLS:
            self.pending[call_id] = _Call("spawn", _cap(_spawn_task(args), STEP_TEXT), at)
        elif short == "write_stdin":
            sid = args.get("session_id")
            if isinstance(sid, int):
                self.pending[call_id] = _Call("stdin", str(sid), at)
        elif short not in _QUIET_TOOLS:
            c = _Call("tool", _cap(f"{name}: {_short_args(args)}", STEP_TEXT), at)
            if name in _CODE_MODE_TOOLS:
                c.mark = self.emitted  # a code-mode cell: its nested calls come as their own items
            self.pending[call_id] = c

    def _patch_call(self, call_id: str, patch: str, at: float | None, cwd: str | None) -> None:
        c = _Call("patch", "", at, cwd)
        c.writes = patch_changes(patch, cwd)
        self.pending[call_id] = c

    def _output(self, p: dict[str, Any], at: float | None) -> Iterator[Step]:
        call_id = _str(p.get("call_id")) or ""
        c = self.pending.get(call_id)
        if c is None:
            return
        raw_out = p.get("output")
        text = output_text(raw_out)
        if c.kind == "command":
            code, running = exit_code_from_output(text)
            if running is not None:
                self.running[running] = call_id  # a later write_stdin output carries the code
                c.output = _output_tail(text)
                return
            if code is None and isinstance(raw_out, dict) and raw_out.get("success") is True:
                code = 0
            if code is None:
                c.output = _output_tail(text)
                return  # wait for an item/event with the code, else settle at the turn's end
            yield from self._command_done(call_id, c, code, text)
            return
        del self.pending[call_id]
        self.done.add(call_id)
        if c.kind == "stdin":
            code, still = exit_code_from_output(text)
            cid = self.running.pop(int(c.text), None) if still is None else None
            rc = self.pending.get(cid or "")
            if rc is not None and cid is not None and code is not None:
                yield from self._command_done(cid, rc, code, text)
        elif c.kind == "patch":
            code, _ = exit_code_from_output(text)
            low = text.lstrip().lower()
            failed = (code is not None and code != 0) or low.startswith(
                ("apply_patch verification failed", "error", "failed", "invalid patch"))
            if not failed:
                for path, added, removed in c.writes:
                    yield from self._emit(Step("edit", path, c.at, path=path, added=added, removed=removed))
        elif c.kind == "spawn":
            yield from self._emit(Step("subagent", c.text, c.at, ref=_child_id(text)))
        elif not self._wrapped_others(c):
            yield from self._emit(Step("tool", c.text, c.at))

    def _wrapped_others(self, c: _Call) -> bool:
        """A code-mode `exec` cell whose nested tool calls produced steps of their own since it began: the
        cell is only their wrapper (Codex 0.154)."""
        return c.mark is not None and self.emitted > c.mark

    def _command_done(self, call_id: str, c: _Call, code: int | None, text: str | None) -> Iterator[Step]:
        self.pending.pop(call_id, None)
        self.done.add(call_id)
        out = _output_tail(text) if text else c.output
        yield from self._emit(Step("command", c.text, c.at, exit_code=code, output=out))
        if code == 0:
            for path, added, removed in shell_writes(c.text, c.cwd or self.cwd):
                yield from self._emit(Step("edit", path, c.at, path=path, added=added, removed=removed))

    # -- events

    def _event(self, p: dict[str, Any], at: float | None) -> Iterator[Step]:
        t = p.get("type")
        if t == "user_message":
            yield from self._turn_start()
            text = event_request(p)
            if text:
                yield from self._say_event(Step("request", _cap(text, STEP_TEXT), at))
        elif t == "agent_message":
            msg = p.get("message")
            if isinstance(msg, str) and msg.strip():
                yield from self._say_event(Step("message", _cap(msg.strip(), STEP_TEXT), at))
        elif t == "item_completed" and isinstance(p.get("item"), dict):
            yield from self._item(p["item"], at)
        elif t == "exec_command_end":
            if str(p.get("source") or "").lower().replace("_", "") == "usershell":
                return  # the <user_shell_command> item carries it
            yield from self._ended_command(_str(p.get("call_id")) or "", p.get("command"),
                                           p.get("exit_code"), at,
                                           _str(p.get("aggregated_output")) or _str(p.get("stdout")))
        elif t == "patch_apply_end":
            yield from self._changes(_str(p.get("call_id")) or "", p.get("changes"),
                                     p.get("success") is False, at)
        elif t in ("task_complete", "turn_complete"):
            yield from self._settle()
            yield from self._flush_held()
            last = p.get("last_agent_message")
            if isinstance(last, str) and last.strip():
                yield from self._say(Step("message", _cap(last.strip(), STEP_TEXT), at))
        elif t == "turn_aborted":
            yield from self._settle()
            yield from self._flush_held()
        elif t in ("task_started", "turn_started"):
            yield from self._turn_start()
        elif t == "collab_agent_spawn_end":
            yield from self._spawned(_str(p.get("call_id")) or "", _str(p.get("prompt")),
                                     _str(p.get("new_thread_id")), at)

    def _item(self, item: dict[str, Any], at: float | None) -> Iterator[Step]:
        it = item.get("type")
        if it == "UserMessage":
            yield from self._turn_start()
            text = item_request(item)
            if text:
                yield from self._say_event(Step("request", _cap(text, STEP_TEXT), at))
        elif it == "AgentMessage":
            texts, _ = _content_texts(item.get("content"), ("Text", "text", "output_text"))
            text = "".join(texts).strip()
            if text:
                yield from self._say_event(Step("message", _cap(text, STEP_TEXT), at))
        elif it == "CommandExecution":
            if str(item.get("source") or "").lower().replace("_", "") == "usershell":
                return
            code = item.get("exit_code", item.get("exitCode"))
            if str(item.get("status") or "").lower().replace("_", "") == "inprogress":
                code = None
            yield from self._ended_command(_str(item.get("id")) or "", item.get("command"), code, at,
                                           _str(item.get("aggregated_output"))
                                           or _str(item.get("aggregatedOutput")))
        elif it == "FileChange":
            failed = str(item.get("status") or "").lower() in ("failed", "declined")
            yield from self._changes(_str(item.get("id")) or "", item.get("changes"), failed, at)
        elif it == "CollabAgentToolCall" and str(item.get("tool")) in ("spawnAgent", "spawn_agent"):
            receivers = item.get("receiver_thread_ids") or item.get("receiverThreadIds") or []
            ref = receivers[0] if receivers and isinstance(receivers[0], str) else None
            yield from self._spawned(_str(item.get("id")) or "", _str(item.get("prompt")), ref, at)

    def _ended_command(self, cid: str, command: Any, code: Any, at: float | None,
                       out: str | None) -> Iterator[Step]:
        if cid and cid in self.done:
            return
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        c = self.pending.get(cid)
        if c is None:
            text = command_text(command)
            if not text:
                return
            c = _Call("command", _cap(text, STEP_TEXT), at, self.cwd)
        elif c.kind != "command":
            return
        for sid, rcid in list(self.running.items()):
            if rcid == cid:
                del self.running[sid]
        yield from self._command_done(cid, c, code, out)

    def _changes(self, cid: str, changes: Any, failed: bool, at: float | None) -> Iterator[Step]:
        if cid and cid in self.done:
            return
        c = self.pending.pop(cid, None)
        self.done.add(cid)
        if failed:
            return
        found = changes_map(changes, c.cwd if c else self.cwd) or (c.writes if c else [])
        for path, added, removed in found:
            yield from self._emit(Step("edit", path, at, path=path, added=added, removed=removed))

    def _spawned(self, cid: str, task: str | None, ref: str | None, at: float | None) -> Iterator[Step]:
        if cid and cid in self.done:
            return
        c = self.pending.pop(cid, None)
        self.done.add(cid)
        text = task or (c.text if c else "")
        yield from self._emit(Step("subagent", _cap(text, STEP_TEXT), c.at if c else at, ref=ref))

    def _turn_start(self) -> Iterator[Step]:
        yield from self._settle()
        self.done.clear()  # call ids only dedupe forms within a turn: keep memory flat

    def _settle(self) -> Iterator[Step]:
        """At a turn's edge, calls still without a usable output end with what is known."""
        pending, self.pending = self.pending, {}
        self.running.clear()
        for cid, c in pending.items():
            self.done.add(cid)
            if c.kind == "command":  # interrupted or still running: exit code unknown
                yield from self._emit(Step("command", c.text, c.at, exit_code=None, output=c.output))
            elif c.kind == "patch":
                # no output recorded (a crash, or a resume): the change may well have happened
                for path, added, removed in c.writes:
                    yield from self._emit(Step("edit", path, c.at, path=path, added=added, removed=removed))
            elif c.kind == "spawn":
                yield from self._emit(Step("subagent", c.text, c.at))
            elif c.kind == "tool" and not self._wrapped_others(c):
                yield from self._emit(Step("tool", c.text, c.at))


def _spawn_task(args: dict[str, Any]) -> str:
    for key in ("message", "task", "prompt", "instructions", "description"):
        if isinstance(args.get(key), str) and args[key].strip():
            return args[key].strip()
    items = args.get("items")
    if isinstance(items, list):
        texts, _ = _content_texts(items, ("text", "input_text"))
        if texts:
            return "\n".join(texts).strip()
    return ""


_UUID_ONLY_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_ANY_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _child_id(text: str) -> str | None:
    """The child thread id in a spawn_agent output (`{"agent_id": …}`), else the first UUID in it."""
    obj = loads(text) if text.lstrip().startswith("{") else None
    if isinstance(obj, dict):
        for key in ("agent_id", "thread_id", "new_thread_id", "id"):
            if isinstance(obj.get(key), str):
                return obj[key]
    m = _ANY_UUID_RE.search(text)
    return m.group(0) if m else None


def _short_args(args: dict[str, Any]) -> str:
    for key in ("query", "path", "url", "q", "file", "explanation"):
        if isinstance(args.get(key), str) and args[key]:
            return args[key][:200]
    try:
        s = json.dumps(args, ensure_ascii=False)
    except (TypeError, ValueError):
        s = ""
    return s if len(s) <= 200 else s[:199] + "…"


# ---------------------------------------------------------------------------------------------------------
# Steps without decoding what a brief does not read
#
# Most of a big rollout is tool output (a command's output is written twice: in the `CommandExecution` item
# or `exec_command_end` event and in the `function_call_output`), reasoning and token counts. A brief needs
# a command's exit code and the last few hundred characters of its output. So records are sorted by the
# envelope's record types before decoding, outputs whose call is already settled are skipped, and a long
# output string is decoded from a copy of the line whose middle is cut out (replaced by `_MARK`). Every
# shortcut falls back to decoding the whole line when its preconditions do not hold.

CUT_MIN = 4 * 1024  # lines shorter than this are decoded whole
CUT_TAIL = 1024  # bytes kept at the end of a cut string (the output tail is its last OUTPUT_TAIL characters)
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
    return kept >= OUTPUT_TAIL + 16 and (j < 0 or kept - (j + 9) >= OUTPUT_TAIL)


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
