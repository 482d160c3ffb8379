"""Codex CLI: what a record's text means (requests vs injected context, tool output, exit codes, file changes)."""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any

from segue.stores.base import (
    loads,
)
from segue.stores.text import OUTPUT_KEEP, cap_bytes

RUNTIME = "codex"
OVERRIDE = "set CODEX_HOME"

DEEP_LIMIT = 4 * 1024 * 1024  # how far a summary reads for a first request hidden behind injected context
_UUID_RE = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
                      r"\.jsonl(?:\.zst)?$")
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
_SHELLS = {"bash", "sh", "zsh", "dash", "fish", "ksh", "pwsh", "powershell", "powershell.exe", "cmd.exe"}






_cap = cap_bytes  # the shared marker-keeping byte cap, under the name this package uses


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
    """The end of a command's output (after Codex's `Output:` header line), trailing blanks dropped, at most
    OUTPUT_KEEP characters: the brief redacts all of it, then shows the last OUTPUT_TAIL. Read from the end,
    never copying a multi-MB output whole."""
    i = text.find("\nOutput:\n")
    start = i + 9 if i >= 0 else 0
    n, k = len(text), OUTPUT_KEEP + 64
    while True:
        lo = max(start, n - k)
        kept = text[lo:].rstrip()
        if kept or lo == start:
            break
        k *= 4
    if not kept:
        return None
    end = lo + len(kept)
    return text[max(start, end - OUTPUT_KEEP):end]


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
