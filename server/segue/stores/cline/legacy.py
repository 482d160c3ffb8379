"""Cline's legacy task store, and the text helpers both Cline stores share (`JsonStream` is in jsonstream.py).

Legacy layout (cline/cline `src/core/storage/disk.ts`), one per root: the legacy CLI 1.x/2.x root is
`~/.cline/data`, the VS Code extension's is `<editor user dir>/globalStorage/saoudrizwan.claude-dev`:
- L1 (VS Code 3.26.7 - 4.x, CLI 1.x/2.x): `state/taskHistory.json` (HistoryItem[]) + `tasks/<taskId>/`.
- L0 (VS Code < 3.26.7): `tasks/<taskId>/` only (the listing lived in the editor's `state.vscdb`).
A task folder holds `api_conversation_history.json` (Anthropic messages), `ui_messages.json` (ClineMessage[];
`claude_messages.json` in the oldest builds) and `task_metadata.json`. Both transcripts are single-line JSON
arrays that reach 1 GB, so nothing here loads one whole: summaries read bounded heads, steps decode one array
element at a time (`JsonStream`).
"""

from __future__ import annotations

import contextlib
import json
import ntpath
import os
import posixpath
import re
import stat
from collections.abc import Iterator
from typing import Any

from segue.model import ReadStats, Session, Step, parse_time
from segue.stores.base import HEAD_BYTES, TAIL_BYTES, Source, fingerprint, read_head_tail
from segue.stores.jsonstream import ITEM_CAP as ITEM_CAP
from segue.stores.jsonstream import JsonStream as JsonStream
from segue.stores.text import BOM, OUTPUT_KEEP, STEP_TEXT, open_regular
from segue.stores.text import cap_bytes as cap_text

RUNTIME = "cline"

API_FILE = "api_conversation_history.json"
UI_FILES = ("ui_messages.json", "claude_messages.json")  # the second is the pre-1.x name
META_FILE = "task_metadata.json"
HISTORY_REL = os.path.join("state", "taskHistory.json")

DEEP_LIMIT = 4 * 1024 * 1024  # how far a summary reads when the first request lies past the head
HISTORY_CAP = 128 * 1024 * 1024
TITLE_MAX = 200


# ---------------------------------------------------------------------------------------------------------
# Files and paths


def regular_file(path: str) -> bool:
    """Only regular files are opened: a FIFO would block, a directory or dangling link cannot be read."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False




_DRIVE_RE = re.compile(r"^[A-Za-z]:[\\/]")


def is_windows_path(p: str) -> bool:
    return bool(_DRIVE_RE.match(p)) or p.startswith("\\\\")


def norm_path(p: Any) -> str | None:
    """Tidy a recorded path; Windows paths (`c:\\x`, `C:/x`) become `C:\\x` so cwd matching works."""
    if not isinstance(p, str):
        return None
    if p[:1] == "/" and p[-1:] != "/" and p.strip() == p:
        return p  # the common case, untouched
    p = p.strip()
    if not p:
        return None
    if _DRIVE_RE.match(p):
        rest = re.sub(r"[\\/]+", r"\\", p[2:])
        p = p[0].upper() + ":" + rest
        return p.rstrip("\\") if len(p) > 3 else p
    if len(p) > 1:
        p = p.rstrip("/")
    return p


def resolve_path(p: Any, cwd: str | None) -> str | None:
    """A tool's path made absolute against the session's cwd (tools record paths relative to it)."""
    if not isinstance(p, str) or not p.strip():
        return None
    p = p.strip()
    if p.startswith("/") or is_windows_path(p) or not cwd:
        return norm_path(p)
    if is_windows_path(cwd):
        return norm_path(ntpath.join(cwd, p))
    return posixpath.normpath(posixpath.join(cwd, p))


# ---------------------------------------------------------------------------------------------------------
# Text: the user's own words out of Cline's wrappers

_USER_INPUT_RE = re.compile(r"<user_input\b[^>]*>([\s\S]*?)</user_input>")
_USER_INPUT_OPEN_RE = re.compile(r"</?user_input\b[^>]*>")
_USER_COMMAND_RE = re.compile(r'^<user_command\b[^>]*?\bslash="([^"]+)"[^>]*>([\s\S]*?)</user_command>$')
# Blocks Cline injects into user turns: environment, mode switches, expanded @-mentions.
_INJECTED_RE = re.compile(
    r"<(environment_details|mode_notice|file_content|folder_content|terminal_output|url_content|"
    r"workspace_diagnostics|git_working_changes|git_commit)\b[^>]*>[\s\S]*?</\1>")
_LEGACY_WRAP_RE = re.compile(r"^<(task|feedback|user_message|answer)>\s*([\s\S]*?)\s*</\1>$")
_FEEDBACK_RE = re.compile(r"<(feedback|user_message|answer)>\s*([\s\S]*?)\s*</\1>")
# Cline's own lead-ins before the user's words in the API history (plan mode, resumed tasks)
_PLAN_LEAD_RE = re.compile(r"^New message to respond to with \w+ tool\b[^\n]*\n")
_CONTINUATION = "New instructions for task continuation:"




def clean_request(text: Any) -> str:
    """The user's words: wrappers (`<user_input mode=…>`, `<user_command>`, legacy `<task>`/`<feedback>`/
    `<user_message>`/`<answer>`) removed with their content kept, injected blocks dropped."""
    if not isinstance(text, str):
        return ""
    t = _INJECTED_RE.sub("", text).strip()
    i = t.find(_CONTINUATION)
    if i >= 0 and (i == 0 or t.startswith("[TASK RESUMPTION]")):
        t = t[i + len(_CONTINUATION):].strip()
    t = _PLAN_LEAD_RE.sub("", t, count=1).strip()
    m = _USER_COMMAND_RE.match(t)
    if m:
        inner = clean_request(m.group(2))
        return f"/{m.group(1)} {inner}".strip()
    if "<user_input" in t:
        t = _USER_INPUT_RE.sub(r"\1", t)
        t = _USER_INPUT_OPEN_RE.sub("", t).strip()
    m = _LEGACY_WRAP_RE.match(t)
    if m:
        t = m.group(2).strip()
    return t


def title_of(text: str | None) -> str | None:
    if not text:
        return None
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:TITLE_MAX]
    return None


def short(v: Any, n: int = 200) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def line_count(s: Any) -> int | None:
    if not isinstance(s, str):
        return None
    if not s:
        return 0
    return s.count("\n") + (0 if s.endswith("\n") else 1)


_SEARCH_RE = re.compile(r"^[-<]{3,} ?SEARCH\s*$")
_SPLIT_RE = re.compile(r"^={3,}\s*$")
_REPLACE_RE = re.compile(r"^[+>]{3,} ?REPLACE\s*$")


def search_replace_counts(diff: Any) -> tuple[int | None, int | None]:
    """(added, removed) lines of Cline's SEARCH/REPLACE blocks (`------- SEARCH`, or `<<<<<<< SEARCH`)."""
    if not isinstance(diff, str):
        return None, None
    added = removed = 0
    state = ""
    seen = False
    for line in diff.splitlines():
        if _SEARCH_RE.match(line):
            state, seen = "search", True
        elif state == "search" and _SPLIT_RE.match(line):
            state = "replace"
        elif state == "replace" and _REPLACE_RE.match(line):
            state = ""
        elif state == "search":
            removed += 1
        elif state == "replace":
            added += 1
    return (added, removed) if seen else (None, None)


_PATCH_FILE_RE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$")


def patch_files(patch: Any) -> list[tuple[str, int | None, int | None]]:
    """Files of an apply_patch payload (`*** Update File: p` …) with their +/- line counts."""
    if not isinstance(patch, str):
        return []
    out: list[list[Any]] = []
    for line in patch.splitlines():
        m = _PATCH_FILE_RE.match(line)
        if m:
            kind = m.group(1)
            out.append([m.group(2), 0, None if kind == "Delete" else 0])
            continue
        if line.startswith("*** Move to: ") and out:
            out[-1][0] = line[len("*** Move to: "):].strip()
            continue
        if not out or line.startswith("***"):
            continue
        if line.startswith("+"):
            out[-1][1] += 1
        elif line.startswith("-") and out[-1][2] is not None:
            out[-1][2] += 1
    return [(p, a, r) for p, a, r in out]


# Exit codes as the legacy CommandOrchestrator words them (3.57.1+), and the older "Command executed."
_LEGACY_OK_RE = re.compile(r"Command executed successfully \(exit code (-?\d+)\)")
_LEGACY_FAIL_RE = re.compile(r"Command failed with exit code (-?\d+)")
SDK_EXIT_RE = re.compile(r"Command exited with code (-?\d+)")
DENIED = "The user denied this operation"


def legacy_exit(result: str) -> tuple[int | None, bool]:
    """(exit code, denied) from a legacy execute_command result text."""
    head = result[:4096]
    m = _LEGACY_FAIL_RE.search(head) or _LEGACY_OK_RE.search(head) or SDK_EXIT_RE.search(head)
    if m:
        return int(m.group(1)), False
    if DENIED in head:
        return None, True
    if "Command executed." in head:
        return 0, False  # before 3.57.1 a finished command had no code: success is implied
    return None, False  # still running, cancelled, timed out, killed by a signal


def tool_text(name: str, params: Any) -> str:
    """`name: short input` for the tool step, preferring the first meaningful string argument."""
    if isinstance(params, dict):
        for k in ("command", "path", "url", "query", "question", "regex", "server_name", "skill", "task",
                  "prompt", "action", "context"):
            v = params.get(k)
            if isinstance(v, str) and v.strip():
                return f"{name}: {short(v)}"
        rest = {k: v for k, v in params.items() if not isinstance(v, str) or len(v) < 500}
        return f"{name}: {short(rest)}" if rest else name
    return f"{name}: {short(params)}" if params else name


# ---------------------------------------------------------------------------------------------------------
# Legacy store: listing


def legacy_sources(root: str, flavor: str) -> Iterator[Source]:
    """One source for `taskHistory.json` (L1; its fingerprint also covers the tasks folder, so orphaned
    task folders appear), else one per task folder (L0)."""
    tasks = os.path.join(root, "tasks")
    history = os.path.join(root, HISTORY_REL)
    if os.path.lexists(history):
        yield Source(RUNTIME, history, fingerprint(history, tasks), f"legacy-history:{flavor}")
        return
    try:
        entries = list(os.scandir(tasks))
    except OSError:
        return
    for e in entries:
        try:
            if not e.is_dir():
                continue
        except OSError:
            continue
        fp = fingerprint(e.path, os.path.join(e.path, API_FILE), os.path.join(e.path, UI_FILES[0]))
        yield Source(RUNTIME, e.path, fp, f"legacy-task:{flavor}")


def _load_history(path: str) -> tuple[list[Any] | None, str | None]:
    """taskHistory.json, or its newest readable backup (`taskHistory.backup.*.json`) when it is damaged."""
    candidates = [path]
    state = os.path.dirname(path)
    try:
        backups = [os.path.join(state, n) for n in os.listdir(state)
                   if n.startswith("taskHistory.backup") and n.endswith(".json")]
    except OSError:
        backups = []
    candidates += sorted(backups, key=lambda p: fingerprint(p)[0] or (0, 0), reverse=True)
    first_error = None
    for p in candidates:
        try:
            with open_regular(p) as f:
                size = os.fstat(f.fileno()).st_size
                if size > HISTORY_CAP:
                    raise ValueError(f"{size} bytes is over the cap")
                data = json.loads(f.read().removeprefix(BOM))
        except (OSError, ValueError, RecursionError) as e:
            first_error = first_error or f"{os.path.basename(p)} unreadable ({type(e).__name__})"
            continue
        if isinstance(data, list):
            note = None if p == path else f"{first_error}; listed from {os.path.basename(p)}"
            return data, note
        first_error = first_error or f"{os.path.basename(p)} is not a list"
    return None, first_error


def summarize_history(path: str, flavor: str, priority: int) -> list[Session]:
    root = os.path.dirname(os.path.dirname(path))
    tasks = os.path.join(root, "tasks")
    items, note = _load_history(path)
    try:
        on_disk = {n for n in os.listdir(tasks)}
    except OSError:
        on_disk = set()
    out: list[Session] = []
    listed: set[str] = set()
    for item in items or []:
        if not isinstance(item, dict):
            continue
        tid = item.get("id")
        if isinstance(tid, int) and not isinstance(tid, bool):
            tid = str(tid)
        if not isinstance(tid, str) or not tid or tid in listed or "/" in tid or "\\" in tid:
            continue
        listed.add(tid)
        s = _from_history_item(item, tid, tasks, flavor, priority)
        if note:
            s.problems.append(note)
        if tid not in on_disk:
            s.problems.append("task folder missing")
        out.append(s)
    for tid in sorted(on_disk - listed):
        tdir = os.path.join(tasks, tid)
        if not os.path.isdir(tdir):
            continue
        s = summarize_task(tdir, flavor, priority - 1)
        s.problems.append(note or "not in taskHistory.json (listed from its task folder)")
        out.append(s)
    return out


def _legacy_session(tid: str, task_dir: str, flavor: str, priority: int) -> Session:
    # The 3.x CLI has no reader for this store (no taskHistory/ui_messages code in cline 3.0.65), and the
    # extension reopens tasks only from its History view. Live stays False: the legacy store records no
    # pid, lock or running state to tell an open task from a finished one.
    return Session(runtime=RUNTIME, id=tid, store_path=task_dir, resumable=False,
                   resume_blocker="cli_cannot_reopen", locator={
                       "kind": "legacy", "flavor": flavor, "task_dir": task_dir, "priority": priority})


def _started_from_id(tid: str) -> float | None:
    return parse_time(int(tid)) if tid.isdigit() and 12 <= len(tid) <= 14 else None


def _from_history_item(item: dict[str, Any], tid: str, tasks: str, flavor: str, priority: int) -> Session:
    s = _legacy_session(tid, os.path.join(tasks, tid), flavor, priority)
    first = cap_text(clean_request(item.get("task")))
    s.first_request = first or None
    s.title = title_of(first)
    s.cwd = norm_path(item.get("cwdOnTaskInitialization")) or norm_path(item.get("shadowGitConfigWorkTree"))
    s.model = item.get("modelId") if isinstance(item.get("modelId"), str) and item["modelId"] else None
    s.updated_at = parse_time(item.get("ts"))
    s.started_at = _started_from_id(tid) or s.updated_at
    if s.cwd is None or s.model is None:  # before ~3.15 no cwd: the first turn's environment details have it
        api = os.path.join(s.store_path, API_FILE)
        if regular_file(api):
            with contextlib.suppress(OSError):
                _, cwd, model, _ = _api_head(api, limit=HEAD_BYTES)
                s.cwd, s.model = s.cwd or cwd, s.model or model
    if s.first_request is None:
        s.problems.append("no task text in taskHistory.json")
    return s


_CWD_RE = re.compile(r"# Current Working Directory \(([^\n]+?)\) Files")
_TS_RE = re.compile(rb'"ts"\s*:\s*(\d{10,16})')


def summarize_task(task_dir: str, flavor: str, priority: int) -> Session:
    """A task from its own folder (L0, or an orphan of L1): bounded reads of the transcripts' heads."""
    tid = os.path.basename(task_dir)
    s = _legacy_session(tid, task_dir, flavor, priority)
    s.started_at = _started_from_id(tid)
    deep = False
    ui = next((os.path.join(task_dir, n) for n in UI_FILES if regular_file(os.path.join(task_dir, n))), None)
    api = os.path.join(task_dir, API_FILE)
    has_api = regular_file(api)
    if ui is None and not has_api:
        s.problems.append("no transcript in task folder")
    if ui:
        try:
            first, first_ts, model, deep = _ui_head(ui)
            s.first_request = first
            s.started_at = s.started_at or first_ts
            s.model = model
            head, tail, _ = read_head_tail(ui, 0, TAIL_BYTES)
            hits = _TS_RE.findall(tail or head)  # the last message's ts: last activity
            s.updated_at = parse_time(int(hits[-1])) if hits else None
        except OSError as e:
            s.problems.append(f"ui_messages.json unreadable: {e.strerror or e}")
    if has_api and (s.first_request is None or s.cwd is None or s.model is None):
        try:
            first, cwd, model, deep2 = _api_head(api)
            s.first_request = s.first_request or first
            s.cwd = cwd
            s.model = s.model or model
            deep = deep or deep2
        except OSError as e:
            s.problems.append(f"{API_FILE} unreadable: {e.strerror or e}")
    if s.updated_at is None:
        fp = fingerprint(*(p for p in (ui, api) if p))
        times = [t[1] / 1e9 for t in fp if t]
        s.updated_at = max(times) if times else None
    s.started_at = s.started_at or s.updated_at
    s.title = title_of(s.first_request)
    if s.first_request is None and (ui or has_api):
        s.problems.append("first request not found in the first 4 MiB")
    if deep:
        s.locator["read_deep"] = True
    return s


def _ui_head(path: str) -> tuple[str | None, float | None, str | None, bool]:
    """(first request, first ts, model, read past the head) from ui_messages.json."""
    first = model = None
    first_ts = None
    with open_regular(path) as f:
        js = JsonStream(f, first_chunk=HEAD_BYTES, limit=DEEP_LIMIT)
        api_seen = False
        for i, m in enumerate(js.items()):
            if not isinstance(m, dict):
                continue
            if first_ts is None:
                first_ts = parse_time(m.get("ts"))
            mi = m.get("modelInfo")
            if model is None and isinstance(mi, dict) and isinstance(mi.get("modelId"), str):
                model = mi["modelId"]
            say = m.get("say")
            api_seen = api_seen or say == "api_req_started"
            if say == "task" or (say == "text" and not api_seen and m.get("partial") is not True):
                first = cap_text(clean_request(m.get("text"))) or None  # ≤3.56: the task is a `text`
                break
            if i > 50:
                break
        return first, first_ts, model, js.bytes_read > HEAD_BYTES


def _api_head(path: str, limit: int = DEEP_LIMIT) -> tuple[str | None, str | None, str | None, bool]:
    """(first request, cwd, model, read past the head) from the first user turn of api_conversation_history
    (the model from the first `modelInfo.modelId`, which 2026 histories carry on their messages; the reply
    right after the first turn is read for it too)."""
    model = None
    found: tuple[str | None, str | None] | None = None
    with open_regular(path) as f:
        js = JsonStream(f, first_chunk=HEAD_BYTES, limit=limit)
        for m in js.items():
            if not isinstance(m, dict):
                continue
            mi = m.get("modelInfo")
            if model is None and isinstance(mi, dict) and isinstance(mi.get("modelId"), str) and mi["modelId"]:
                model = mi["modelId"]
            if found is not None:
                break  # the message after the first user turn: read for its model only
            if m.get("role") != "user":
                continue
            first = cwd = None
            for text in _texts(m.get("content")):
                c = _CWD_RE.search(text)
                if c and cwd is None and not c.group(1).startswith("Primary:"):
                    cwd = norm_path(c.group(1))
                if first is None and "<task>" in text:
                    first = cap_text(clean_request(text)) or None
            found = (first, cwd)
            if model is not None:
                break
        deep = js.bytes_read > HEAD_BYTES
    return (found[0], found[1], model, deep) if found else (None, None, model, False)


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and isinstance(b.get("text"), str):
                yield b["text"]


# ---------------------------------------------------------------------------------------------------------
# Legacy store: steps

_READ_TOOLS = frozenset({"read_file", "list_files", "search_files", "list_code_definition_names",
                         "access_mcp_resource", "load_mcp_documentation"})
_QUIET_TOOLS = frozenset({"focus_chain", "task_progress", "condense", "summarize_task",
                          "generate_explanation"})
_LEGACY_TOOLS = ("execute_command", "write_to_file", "replace_in_file", "apply_patch", "new_rule",
                 "attempt_completion", "ask_followup_question", "plan_mode_respond", "act_mode_respond",
                 "use_subagents", "new_task", "use_mcp_tool", "browser_action", "web_fetch", "web_search",
                 "use_skill", "report_bug", *_READ_TOOLS, *_QUIET_TOOLS)
_XML_TOOL_RE = re.compile(r"<(" + "|".join(_LEGACY_TOOLS) + r")>([\s\S]*?)(?:</\1>|$)")
_XML_PARAM_RE = re.compile(r"<([a-z_0-9]+)>([\s\S]*?)</\1>")
_THINKING_RE = re.compile(r"<thinking>[\s\S]*?</thinking>")
_RESULT_RE = re.compile(r"^\[([a-z_]+)\b[^\n]*?\] Result:")


def legacy_tool_steps(name: str, params: Any, cwd: str | None, at: float | None) -> list[Step]:
    p = params if isinstance(params, dict) else {}
    if name in _READ_TOOLS or name in _QUIET_TOOLS:
        return []
    if name == "execute_command":
        cmd = p.get("command")
        return [Step("command", text=cap_text(cmd, STEP_TEXT), at=at)] if isinstance(cmd, str) else []
    if name in ("write_to_file", "new_rule"):
        path = resolve_path(p.get("path") or p.get("absolutePath"), cwd)
        return [Step("edit", text=path or "", path=path, added=line_count(p.get("content")), at=at)]
    if name == "replace_in_file":
        path = resolve_path(p.get("path") or p.get("absolutePath"), cwd)
        added, removed = search_replace_counts(p.get("diff"))
        return [Step("edit", text=path or "", path=path, added=added, removed=removed, at=at)]
    if name == "apply_patch":
        return [Step("edit", text=fp or "", path=fp, added=a, removed=r, at=at)
                for fp, a, r in ((resolve_path(x, cwd), a, r) for x, a, r in patch_files(p.get("input")))]
    if name == "attempt_completion":
        r = p.get("result")
        return [Step("message", text=cap_text(r.strip(), STEP_TEXT), at=at)] if isinstance(r, str) else []
    if name in ("plan_mode_respond", "act_mode_respond", "ask_followup_question"):
        r = p.get("response") or p.get("question")
        return [Step("message", text=cap_text(r.strip(), STEP_TEXT), at=at)] if isinstance(r, str) else []
    if name == "use_subagents":
        prompts = [p[k] for k in ("prompt", "prompt_1", "prompt_2", "prompt_3", "prompt_4", "prompt_5")
                   if isinstance(p.get(k), str) and p[k].strip()]
        return [Step("subagent", text=cap_text(t.strip(), STEP_TEXT), at=at) for t in prompts]
    return [Step("tool", text=tool_text(name, p), at=at)]


def _xml_calls(text: str) -> tuple[str, list[tuple[str, dict[str, str]]]]:
    """Older tasks embed tool calls as XML in the assistant's text: (the prose, the calls)."""
    calls: list[tuple[str, dict[str, str]]] = []
    first = None
    for m in _XML_TOOL_RE.finditer(text):
        first = m.start() if first is None else first
        params = {k: v.strip("\n") for k, v in _XML_PARAM_RE.findall(m.group(2))}
        calls.append((m.group(1), params))
    prose = text if first is None else text[:first]
    return _THINKING_RE.sub("", prose).strip(), calls


class _Pending:
    """Steps of one assistant turn, held until the next user turn brings their results."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.steps: list[Step] = []
        self.by_id: dict[str, list[Step]] = {}
        self.by_name: list[tuple[str, list[Step]]] = []
        self.drop: set[int] = set()

    def add(self, steps: list[Step], call_id: str | None, name: str) -> None:
        self.steps.extend(steps)
        if call_id:
            self.by_id[call_id] = steps
        self.by_name.append((name, steps))

    def result(self, steps: list[Step], text: str) -> None:
        code, denied = legacy_exit(text)
        for st in steps:
            if denied:
                self.drop.add(id(st))
            elif st.kind == "command":
                st.exit_code = code
                out = text.split("Output:\n", 1)[1] if "Output:\n" in text else ""
                st.output = out[-OUTPUT_KEEP:].strip() or None

    def match_name(self, name: str) -> list[Step] | None:
        for i, (n, steps) in enumerate(self.by_name):
            if n == name:
                del self.by_name[i]
                return steps
        return None

    def flush(self) -> Iterator[Step]:
        steps, drop = self.steps, self.drop
        self.reset()
        for st in steps:
            if id(st) not in drop:
                yield st


def _requests_in(text: str, at: float | None) -> list[Step]:
    """User words inside a user turn's text: `<task>`, `<feedback>`, `<user_message>`, `<answer>`."""
    if "[TASK RESUMPTION]" in text or "] Result:" in text[:2000] or "<feedback>" in text:
        return [Step("request", text=cap_text(m.group(2).strip(), STEP_TEXT), at=at)
                for m in _FEEDBACK_RE.finditer(text) if m.group(2).strip()]
    if "<task>" in text or "<answer>" in text or "<user_message>" in text:
        t = cap_text(clean_request(text), STEP_TEXT)
        return [Step("request", text=t, at=at)] if t else []
    return []  # environment details, error nudges and other injected text


def note_unrecognised(stats: ReadStats, items: int, known: int, what: str, bad_args: int = 0) -> None:
    """What could not be read is a problem, never silence: a transcript whose elements are none of the
    records this reader knows, and tool calls whose arguments do not decode."""
    if items and not known:
        stats.problems.append(f"no {what} records recognised in {items} elements")
    if bad_args:
        stats.problems.append(f"{bad_args} tool calls whose arguments could not be decoded")


def legacy_steps(session: Session, stats: ReadStats) -> Iterator[Step]:
    task_dir = str(session.locator.get("task_dir") or session.store_path)
    api = os.path.join(task_dir, API_FILE)
    if regular_file(api):
        yield from _api_steps(api, session.cwd, stats)
        return
    for n in UI_FILES:
        ui = os.path.join(task_dir, n)
        if regular_file(ui):
            yield from _ui_steps(ui, session.cwd, stats)
            return
    stats.problems.append("no transcript in task folder")


def _api_steps(path: str, cwd: str | None, stats: ReadStats) -> Iterator[Step]:
    pending = _Pending()
    items = known = 0
    with open_regular(path) as f:
        js = JsonStream(f)
        for m in js.items():
            items += 1
            if not isinstance(m, dict):
                js.damaged += 1
                continue
            known += m.get("role") in ("user", "assistant")
            at = parse_time(m.get("ts"))
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            if not isinstance(blocks, list):
                continue
            if m.get("role") == "assistant":
                yield from pending.flush()
                for b in blocks:
                    if not isinstance(b, dict):
                        continue
                    if b.get("type") == "text" and isinstance(b.get("text"), str):
                        prose, calls = _xml_calls(b["text"])
                        if prose:
                            pending.steps.append(Step("message", text=cap_text(prose, STEP_TEXT), at=at))
                        for name, params in calls:
                            pending.add(legacy_tool_steps(name, params, cwd, at), None, name)
                    elif b.get("type") == "tool_use" and isinstance(b.get("name"), str):
                        pending.add(legacy_tool_steps(b["name"], b.get("input"), cwd, at),
                                    b.get("id") if isinstance(b.get("id"), str) else None, b["name"])
                continue
            requests: list[Step] = []
            awaiting: list[Step] | None = None  # a bare "[tool] Result:" block: the next block is the body
            for b in blocks:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_result":
                    text = "\n".join(_texts(b.get("content")))
                    steps = pending.by_id.get(str(b.get("tool_use_id")))
                    if steps is not None:
                        pending.result(steps, _after_result_head(text))
                    requests += _requests_in(text, at)
                elif b.get("type") == "text" and isinstance(b.get("text"), str):
                    text = b["text"]
                    if awaiting is not None:
                        pending.result(awaiting, text)
                        awaiting = None
                    r = _RESULT_RE.match(text)
                    if r:
                        steps = pending.match_name(r.group(1))
                        body = _after_result_head(text)
                        if steps is not None and body.strip():
                            pending.result(steps, body)
                        elif steps is not None:
                            awaiting = steps
                    requests += _requests_in(text, at)
            yield from pending.flush()
            yield from requests
        yield from pending.flush()
    js.account(stats)
    note_unrecognised(stats, items, known, "Cline API history")


def _after_result_head(text: str) -> str:
    i = text.find("] Result:")
    return text[i + 9:].lstrip("\n") if 0 <= i < 2000 else text


def _ui_steps(path: str, cwd: str | None, stats: ReadStats) -> Iterator[Step]:
    """Fallback when a task has no API history: ui_messages.json holds no exit codes."""
    with open_regular(path) as f:
        js = JsonStream(f)
        last_cmd: Step | None = None
        api_seen = asked = False  # before the first API request a `text` is the task (≤3.56)
        items = known = 0
        bad = [0]
        for m in js.items():
            items += 1
            if not isinstance(m, dict):
                js.damaged += 1
                continue
            known += isinstance(m.get("say") or m.get("ask"), str)
            if m.get("partial") is True:
                continue
            at = parse_time(m.get("ts"))
            kind = m.get("say") or m.get("ask")
            text = m.get("text") if isinstance(m.get("text"), str) else ""
            api_seen = api_seen or kind == "api_req_started"
            if kind in ("task", "user_feedback") or (kind == "text" and not api_seen and not asked):
                asked = True
                t = cap_text(clean_request(text), STEP_TEXT)
                if t:
                    yield Step("request", text=t, at=at)
            elif kind in ("text", "completion_result") and text.strip():
                yield Step("message", text=cap_text(text.strip(), STEP_TEXT), at=at)
            elif kind == "followup" and text.strip():
                q = _json_obj(text)  # plain text in older builds
                yield Step("message", text=cap_text(str(q.get("question") or text).strip(), STEP_TEXT), at=at)
            elif kind == "command" and text.strip():
                cmd = text[:-len("REQ_APP")] if text.endswith("REQ_APP") else text
                last_cmd = Step("command", text=cap_text(cmd.strip(), STEP_TEXT), at=at)
                yield last_cmd
            elif kind == "command_output" and last_cmd is not None and text:
                last_cmd.output = ((last_cmd.output or "") + text)[-OUTPUT_KEEP:]
            elif kind == "tool":
                yield from _ui_tool(_json_obj(text, bad), cwd, at)
            elif kind == "use_subagents":
                q = _json_obj(text, bad)
                for t in q.get("prompts") or []:
                    if isinstance(t, str) and t.strip():
                        yield Step("subagent", text=cap_text(t.strip(), STEP_TEXT), at=at)
    js.account(stats)
    note_unrecognised(stats, items, known, "Cline UI message", bad[0])


def _ui_tool(t: dict[str, Any], cwd: str | None, at: float | None) -> Iterator[Step]:
    name = t.get("tool")
    path = resolve_path(t.get("path"), cwd)
    if name == "newFileCreated":
        yield Step("edit", text=path or "", path=path, added=line_count(t.get("content")), removed=0, at=at)
    elif name == "editedExistingFile":
        added, removed = search_replace_counts(t.get("diff"))
        yield Step("edit", text=path or "", path=path, added=added, removed=removed, at=at)
    elif name == "fileDeleted":
        yield Step("edit", text=path or "", path=path, at=at)
    elif isinstance(name, str) and name not in ("readFile", "listFilesTopLevel", "listFilesRecursive",
                                                "listCodeDefinitionNames", "searchFiles"):
        yield Step("tool", text=tool_text(name, {k: v for k, v in t.items() if k != "tool"}), at=at)


def _json_obj(text: str, bad: list[int] | None = None) -> dict[str, Any]:
    """A UI record's JSON text; an undecodable one counts in `bad[0]`."""
    try:
        v = json.loads(text)
    except (ValueError, RecursionError):
        if bad is not None:
            bad[0] += 1
        return {}
    return v if isinstance(v, dict) else {}
